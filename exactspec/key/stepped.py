"""KEY one random choice per step, for the merged-state interpreter.

:func:`exactspec.methods.key.key` draws the count of every draftable token first
(:func:`.selection.draw_drafts`), then the slot of every draft's key in draft order
(:func:`.selection.smallest_key`), then the tie-break, the acceptance coin and the residual.
Its plain enumeration lists every path, and the paths multiply: ``k = 10`` drafts over four
tokens give 49,306 of them.  Most of that history is forgotten by the end: what the rest of
the run reads is

* how many drafts are not yet given a token, and which token is next;
* how many keys of the current token are still to draw;
* the lowest slot so far and how many keys of each token share it.

:data:`KEY_STEPS` is the same verifier as a :class:`~exactspec.engine.merged.Stepped` method
over that state, so :func:`~exactspec.engine.merged.enumerate_merged` adds up the paths that
reach the same state instead of running each one.

**Why it has the same law, acceptances and number of paths.**  It makes the same random
choices from the same laws as ``key``, in another order: the count of token ``i`` (a binomial
given the drafts left, :func:`.selection.count_laws`), then the slots of that token's keys,
then the count of token ``i + 1``, ...; ``key`` draws every count before any slot.  The
count of token ``i + 1`` depends only on the drafts left, never on a slot, and the slot law
of a key depends only on its token.  So each path of ``key`` is a path here with the same
choices in another order: the same probability (the product is the same), the same drafts,
the same explicit accept and the same output; the map is one to one, so the output law,
``P(Y in X)``, the explicit acceptance and the number of paths are equal.  The lowest slot and
the tied counts are updated exactly as :func:`.selection.smallest_key` does, and tokens are
met in the same order, so the tie-break law is the same law over the same labels.  The tests
compare the two enumerations (``tests/test_key.py``).

:func:`exactspec.bounds.compare.exact_verification` (``verify key`` on the command line,
``compare``) lists the paths up to 250 of them (below about 150 the plain enumeration is the
faster one) and merges states above; it still refuses an instance whose estimated number of
paths is over its budget, as before (``paths_budget``): the number of merged states is not
bounded in advance, so only the work is smaller, never what is accepted.

>>> from exactspec.core.dist import Dist
>>> from exactspec.engine.merged import enumerate_merged
>>> p, q = Dist.parse("3/5,2/5"), Dist.parse("1/2,1/2")
>>> merged = enumerate_merged(KEY_STEPS, p, q, 8)     # docs/math.md#the-two-counterexamples, 1
>>> merged.law == dict(p), merged.acceptance, merged.paths, merged.transitions < merged.paths
(True, Fraction(1, 1), 3602, True)
"""

from __future__ import annotations

from ..engine.merged import Done, Stepped
from .min_slot import KEY_MIN_SLOT_STEPS
from .placement import key_placement
from .selection import count_laws, lowest_update, tie_break

__all__ = ["KEY_STEPS", "least_steps", "count_next", "verify_selected"]


def _start(p, q, k):
    # (next token to count, drafts not yet given a token, keys of the current token to draw,
    #  lowest slot so far, ((token, keys in the lowest slot), ...) in the order met)
    return (0, k, 0, None, ())


def _step(s, p, q, k, state):
    nxt, left, pending, lowest, tied = state
    plan = key_placement(p, q, k)
    chain = count_laws(q, k)
    if pending:                                  # one key of the current token: its slot
        t = chain["support"][nxt - 1]
        drawn = k - left - pending
        j = s.draw(plan.slot_law(t), f"key{drawn + 1} slot")
        return (nxt, left, pending - 1, *lowest_update(lowest, tied, t, j))
    if left:                                     # how many drafts the next token gets
        return count_next(s, chain, chain["support"], state)
    return verify_selected(s, plan, tied)


def count_next(s, chain, order, state):
    """The step that draws how many of the drafts left the next token of ``order`` gets
    (from the chain of binomials :func:`.selection.count_chain`; the last takes the rest)."""
    nxt, left, _, lowest, tied = state
    t = order[nxt]
    law = chain.get((nxt, left))
    count = left if law is None else s.draw(law, f"drafts of {t}")
    s.drafted.extend([t] * count)
    return (nxt + 1, left - count, count, lowest, tied)


def least_steps(p, q, k) -> int:
    """The steps KEY's run takes at least: one count per token of ``q``'s support (the run
    that gives every draft to the last token reaches it), for a seconds budget's projection
    (:attr:`~exactspec.engine.merged.Stepped.least_steps`)."""
    return len(count_laws(q, k)["support"])


def verify_selected(s, plan, tied):
    """The last step: the selected draft (ties in the lowest slot broken uniformly) is
    accepted with probability ``beta``, else the residual is drawn."""
    x = tie_break(s, dict(tied), "smallest key in its slot", False)
    if s.coin(plan.beta[x], "accept"):
        return Done(s.accept(x))
    return Done(s.draw(plan.residual, "residual"))


#: ``key`` for :func:`exactspec.engine.merged.enumerate_merged` (module docstring).
KEY_STEPS = Stepped(_start, _step, name="key", plain_paths=250, paths_budget=True,
                    least_steps=least_steps, shortcut=KEY_MIN_SLOT_STEPS)
