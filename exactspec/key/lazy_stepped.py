"""KEY-lazy one random choice per step, for the merged-state interpreter.

:func:`exactspec.methods.key_lazy.key_lazy` draws the count of every draftable token first, in
token order (:func:`.selection.draw_drafts`), then visits the drafted tokens in the order their
key supports start (:func:`.selection.smallest_key_lazy`): one draw per visited token for the
slot of its smallest key and how many of its keys share it, the visit stopping at the first
token whose support starts after the lowest slot so far.  Its plain enumeration lists every
path: on 11 tokens, ``k = 6`` gives 213,773 of them (about 30 s), ``k = 8`` 1,901,119
(merged here: about 3 s and 16 s).  What the
rest of a run reads is small:

* the next token in visit order and how many drafts are not yet given a token;
* how many keys of the token just counted are still to resolve;
* the lowest slot so far and how many keys of each visited token share it.

:data:`KEY_LAZY_STEPS` is the same verifier as a :class:`~exactspec.engine.merged.Stepped`
method over that state: the count of each draftable token is drawn *in visit order*, and the
keys of a token right after its count.

**Why it has the same law, acceptances and number of paths.**  The counts of the draftable
tokens are multinomial; drawing them as a chain of binomials in any fixed token order gives
the same law of the multiset, and every option of every binomial in the chain has positive
probability, so in either order each multiset is exactly one sequence of count choices (a
chain stops when no draft is left; the last token of the order takes the rest without a
choice).  Given the multiset, the key draws are those of :func:`.selection.smallest_key_lazy`
made in the same order from the same laws (a token with no draft is skipped; the stop rule
is the same because supports start in visit order and the lowest slot only falls), and the
tie-break, the acceptance coin and the residual are the same calls.  So the map from the
paths of ``key-lazy`` to the histories here (the same choices, the count choices in another
order) is one to one and keeps each path's probability (a product over the same multiset's
multinomial weight and the same key, coin and residual factors), drafts, explicit accept and
output: the output law, ``P(Y in X)``, the explicit acceptance and the number of paths are
equal.  The tests compare the two enumerations (``tests/test_key_lazy_merged.py``).

>>> from exactspec.core.dist import Dist
>>> from exactspec.engine.merged import enumerate_merged
>>> p, q = Dist.parse("1/2,1/5,3/10,0"), Dist.parse("1/20,1/20,1/10,4/5")
>>> merged = enumerate_merged(KEY_LAZY_STEPS, p, q, 10)   # docs/math.md#the-two-counterexamples, 2
>>> merged.law == dict(p), merged.acceptance == merged.explicit_acceptance, merged.paths
(True, True, 1762)
"""

from __future__ import annotations

from ..engine.merged import Stepped
from .min_slot import KEY_MIN_SLOT_STEPS
from .placement import LATER, KeyPlacement, key_placement
from .selection import count_chain
from .stepped import count_next, verify_selected

__all__ = ["KEY_LAZY_STEPS", "visit_chain"]


def visit_chain(plan: KeyPlacement, k: int) -> dict:
    """The draftable tokens in visit order (``"order"``: by where their key support starts,
    then by slot, as :func:`.selection.smallest_key_lazy` visits them) and ``(i, n) -> law of
    the count of the i-th of them given n drafts left`` (a binomial with the token's share of
    the draft mass not yet counted; none for the last token, which takes the rest).

    >>> from exactspec.core.dist import Dist
    >>> plan = key_placement(Dist.parse("1/2,1/5,3/10"), Dist.parse("1/10,3/5,3/10"), 2)
    >>> chain = visit_chain(plan, 2)
    >>> chain["order"], chain[(0, 2)]
    ((0, 2, 1), Dist({0: 81/100, 1: 9/50, 2: 1/100}))
    """
    cache = plan._cache.setdefault("visit_chain", {})
    if k in cache:
        return cache[k]
    q = plan.q
    order = tuple(sorted((t for t in q.labels if q[t] != 0),
                         key=lambda t: (plan.first_slot(t), plan.slot_of(t))))
    chain = count_chain(q, order, k)
    chain["order"] = order
    cache[k] = chain
    return chain


def _start(p, q, k):
    # (next token to count in visit order, drafts not yet given a token, keys of the token
    #  just counted still to resolve, lowest slot so far, ((token, keys there), ...) in the
    #  order visited)
    return (0, k, 0, None, ())


def _step(s, p, q, k, state):
    nxt, left, pending, lowest, tied = state
    plan = key_placement(p, q, k)
    chain = visit_chain(plan, k)
    if pending:                         # the keys of the token just counted, if they can matter
        t = chain["order"][nxt - 1]
        if lowest is not None and plan.first_slot(t) > lowest:
            return (nxt, left, 0, lowest, tied)
        outcome = s.draw(plan.min_slot_law(t, pending, lowest), f"keys of {t}")
        if outcome == LATER:
            return (nxt, left, 0, lowest, tied)
        j, n = outcome
        if lowest is None or j < lowest:
            return (nxt, left, 0, j, ((t, n),))
        return (nxt, left, 0, lowest, tied + ((t, n),))
    if left:                            # how many drafts the next token in visit order gets
        return count_next(s, chain, chain["order"], state)
    return verify_selected(s, plan, tied)


#: ``key-lazy`` for :func:`exactspec.engine.merged.enumerate_merged` (module docstring).
#: Listed path by path up to ``compare``'s default number of plain paths; like ``key``,
#: refused above the budget of paths (the number of merged states is not bounded in advance),
#: unless KEY's lowest key slot applies: ``key-lazy`` selects the draft of the smallest key of
#: the same keys (drawing only those that can be it), so the selected token has ``key``'s law.
KEY_LAZY_STEPS = Stepped(_start, _step, name="key-lazy", paths_budget=True,
                         shortcut=KEY_MIN_SLOT_STEPS)
