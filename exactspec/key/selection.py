"""The selection law of KEY in closed form, and the key mechanism on the sampling interface.

Given the drafts ``X`` (a multiset with ``c_t`` copies of token ``t``), the draft with the
smallest key has token ``t`` with probability

    sel(t | X) = integral_0^1 c_t rho_t(u) (1 - R_t(u))^(c_t - 1)
                             prod_{s != t} (1 - R_s(u))^(c_s) du,

``rho_t`` the key density of ``t`` (constant on each slot, :mod:`.placement`) and ``R_t`` its
CDF (linear on each slot).  On a slot ``[lo, hi)`` write ``u = lo + z (hi - lo)``; then
``1 - R_s = T_s - pi_s z`` with ``pi_s`` the probability that a key of ``s`` falls in the
slot and ``T_s`` that it falls in this slot or a later one, and the slot contributes

    c_t pi_t * integral_0^1 (T_t - pi_t z)^(c_t - 1) prod_{s != t} (T_s - pi_s z)^(c_s) dz,

a polynomial integral with rational coefficients: exact.  The verifier accepts the selected
draft with probability ``beta_t = a*(t) / w(t)``, so the probability of *accepting* token ``t``
given ``X`` is

    r*(t | X) = beta_t * sel(t | X),

and ``sum_X P(X) r*(t | X) = a*(t)`` (:func:`check_selection_law` proves it on an instance).

:func:`smallest_key` and :func:`smallest_key_lazy` are the key mechanism written on the
sampling interface: each draft's key is its slot (``s.draw``, or inverse CDF from an explicit
uniform), and among drafts whose keys share the lowest slot the smallest is a uniform choice,
since i.i.d. uniform positions inside one slot are equally likely to be the smallest.

>>> from exactspec.core.dist import Dist
>>> from exactspec.key.placement import key_placement
>>> plan = key_placement(Dist.parse("1/10,9/10"), Dist.parse("1/10,9/10"), 2)
>>> plan.key_density(0) == plan.key_density(1)      # p = q: both keys uniform on [0, 1]
True
>>> selection_law(plan, (0, 1))
Dist({0: 1/2, 1: 1/2})
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction
from typing import Any

from ..core.dist import Dist
from ..core.errors import InvalidInput
from .placement import LATER, KeyPlacement, key_placement

__all__ = ["draw_drafts", "selection_law", "acceptance_law", "key_law", "smallest_key",
           "smallest_key_lazy", "smallest_key_steps", "expected_key_draws",
           "check_selection_law", "MECHANISM_PLAIN_PATHS", "count_laws", "lowest_update",
           "tie_break"]


# -- polynomials in z with Fraction coefficients ---------------------------------------------

def _mul(a: list, b: list) -> list:
    out = [Fraction(0)] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        if x:
            for j, y in enumerate(b):
                out[i + j] += x * y
    return out


def _power(base: list, n: int) -> list:
    out = [Fraction(1)]
    for _ in range(n):
        out = _mul(out, base)
    return out


def _integral_01(poly: list) -> Fraction:
    return sum((c / (i + 1) for i, c in enumerate(poly)), Fraction(0))


def _counts(plan: KeyPlacement, drafts) -> Counter:
    counts = Counter(drafts)
    if not counts:
        raise InvalidInput("drafts is empty: need at least one draft")
    for t in counts:
        plan._check_token(t)
    return counts


def selection_law(plan: KeyPlacement, drafts) -> Dist:
    """``sel(t | X)``: the law of the token of the smallest-key draft, in closed form.

    Parameters
    ----------
    plan : KeyPlacement
    drafts : sequence of labels
        The drafts ``X`` (order irrelevant), each a token ``q`` can draft.

    Returns
    -------
    Dist
        Over ``plan.p.labels``; sums to exactly 1.
    """
    counts = _counts(plan, drafts)
    cache = plan._cache.setdefault("selection_law", {})
    key = tuple(sorted(counts.items(), key=lambda item: plan.slot_of(item[0])))
    if key not in cache:                       # KEY drawing from r* asks once per path
        if len(cache) > 100_000:
            cache.clear()
        cache[key] = _selection_law(plan, counts)
    return cache[key]


def _selection_law(plan: KeyPlacement, counts: Counter) -> Dist:
    laws = {t: dict(zip(plan.slot_law(t).labels, plan.slot_law(t).probs)) for t in counts}
    slots = sorted({j for law in laws.values() for j in law})
    after = {t: Fraction(1) for t in counts}            # T_s: this slot or later
    sel = {t: Fraction(0) for t in counts}
    for j in slots:
        pi = {t: laws[t].get(j, Fraction(0)) for t in counts}
        factors = {t: _power([after[t], -pi[t]], c) for t, c in counts.items()}
        for t, c in counts.items():
            if pi[t] == 0:
                continue
            poly = _power([after[t], -pi[t]], c - 1)
            for s in counts:
                if s != t:
                    poly = _mul(poly, factors[s])
            sel[t] += c * pi[t] * _integral_01(poly)
        for t in counts:
            after[t] -= pi[t]
        if any(v == 0 for v in after.values()):        # some key is surely below: done
            break
    return Dist([sel.get(t, Fraction(0)) for t in plan.p.labels], plan.p.labels, check=False)


def acceptance_law(plan: KeyPlacement, drafts) -> Dist:
    """``r*(t | X) = beta_t sel(t | X)``: the probability of accepting token ``t`` given the
    drafts; sums to ``P(accept | X)``.

    >>> from exactspec.core.dist import Dist
    >>> plan = key_placement(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 2)
    >>> acceptance_law(plan, (2, 2))
    Dist({0: 0, 1: 0, 2: 5/9})
    """
    sel = selection_law(plan, drafts)
    return Dist([plan.beta[t] * sel[t] for t in plan.p.labels], plan.p.labels, check=False)


def _choose(s, law: Dist, what: str, uniforms: bool):
    """One draw from ``law``: by inverse CDF from a fresh explicit uniform, or ``s.draw``."""
    if uniforms:
        return s.pick(law, s.uniform(), what)
    return s.draw(law, what)


def tie_break(s, tied: dict, what: str, uniforms: bool):
    """The smallest key among drafts sharing the lowest slot: each draft equally likely."""
    if len(tied) == 1:
        return next(iter(tied))
    total = sum(tied.values())
    law = Dist([Fraction(n, total) for n in tied.values()], tuple(tied), check=False)
    return _choose(s, law, what, uniforms)


def smallest_key(s, plan: KeyPlacement, drafts, *, uniforms: bool = False) -> Any:
    """The token of the smallest-key draft.

    Every draft draws the slot of its key from the slot law of its token (``s.draw``, or
    ``uniforms=True``: inverse CDF from an explicit uniform, as a kernel does); among the
    drafts whose keys share the lowest slot, the smallest is one of them uniformly (their
    positions are i.i.d. uniform inside the slot).
    """
    lowest, tied = None, {}
    for i, x in enumerate(drafts):
        j = _choose(s, plan.slot_law(x), f"key{i + 1} slot", uniforms)
        if lowest is None or j < lowest:
            lowest, tied = j, {x: 1}
        elif j == lowest:
            tied[x] = tied.get(x, 0) + 1
    return tie_break(s, tied, "smallest key in its slot", uniforms)


def lowest_update(lowest, tied: tuple, x, j) -> tuple:
    """:func:`smallest_key`'s update of ``(lowest slot, tied counts)`` after a key of ``x``
    falls in slot ``j``, with the counts as a tuple ``((token, n), ...)`` in the order the
    tokens were met (a dict's order), so that the pair can be a merged state."""
    if lowest is None or j < lowest:
        return j, ((x, 1),)
    if j > lowest:
        return lowest, tied
    for i, (t, n) in enumerate(tied):
        if t == x:
            return lowest, tied[:i] + ((t, n + 1),) + tied[i + 1:]
    return lowest, tied + ((x, 1),)


def smallest_key_steps(plan: KeyPlacement, drafts):
    """:func:`smallest_key` on fixed drafts as a :class:`~exactspec.engine.merged.Stepped`
    method, one key per step over the state ``(keys drawn, lowest slot, tied counts)``.

    The same choices from the same laws in the same order, and the same tie-break law over
    the same labels, so :func:`~exactspec.engine.merged.enumerate_merged` gives the plain
    enumeration's law and number of paths, adding up the paths that reach one state.

    >>> from exactspec.core.dist import Dist
    >>> from exactspec.engine.merged import enumerate_merged
    >>> p, q = Dist.parse("3/5,2/5"), Dist.parse("1/2,1/2")
    >>> plan, drafts = key_placement(p, q, 8), (0, 0, 0, 1, 1, 1, 1, 1)
    >>> merged = enumerate_merged(smallest_key_steps(plan, drafts), p, q, 8)
    >>> merged.law == dict(selection_law(plan, drafts)), merged.paths, merged.transitions
    (True, 474, 172)
    """
    from ..engine.merged import Done, Stepped

    drafts = tuple(drafts)

    def start(p, q, k):
        return (0, None, ())

    def step(s, p, q, k, state):
        i, lowest, tied = state
        if i == len(drafts):
            return Done(tie_break(s, dict(tied), "smallest key in its slot", False))
        j = s.draw(plan.slot_law(drafts[i]), f"key{i + 1} slot")
        return (i + 1, *lowest_update(lowest, tied, drafts[i], j))

    return Stepped(start, step, name="smallest key")


def smallest_key_lazy(s, plan: KeyPlacement, drafts, *, uniforms: bool = False) -> Any:
    """The same selection, drawing only keys that can matter.

    Distinct tokens are visited by where their key support starts; each visited token draws
    once for all its copies (the slot of its smallest key and how many of its keys are
    there, :meth:`KeyPlacement.min_slot_law`), and only as finely as the current smallest key
    needs (every slot after it is one outcome).  The visit stops at the first token whose
    support starts after the current smallest key: no key of it, or of any later token, can
    be smaller.
    """
    counts = Counter(drafts)
    order = sorted(counts, key=lambda t: (plan.first_slot(t), plan.slot_of(t)))
    lowest, tied = None, {}
    for t in order:
        if lowest is not None and plan.first_slot(t) > lowest:
            break
        outcome = _choose(s, plan.min_slot_law(t, counts[t], lowest), f"keys of {t}",
                          uniforms)
        if outcome == LATER:
            continue
        j, n = outcome
        if lowest is None or j < lowest:
            lowest, tied = j, {t: n}
        else:
            tied[t] = n
    return tie_break(s, tied, "smallest key in its slot", uniforms)


def draw_drafts(s, q: Dist, k: int) -> tuple:
    """The multiset of ``k`` i.i.d. drafts from ``q`` (labels in token order), remembered as
    drafts by ``s``.

    On the exact engine the counts are drawn token by token, each a binomial given the drafts
    left (``c_t ~ Bin(n, q_t / q(rest))``): the multinomial law of the multiset with one
    small choice per token instead of one choice among all multisets.  Other samplers draw
    the ordered drafts (:meth:`exactspec.optimum.draft_laws.DraftLaw.draw_multiset`).  Only sound for a
    verifier that ignores the order of its drafts, as KEY does.
    """
    from ..optimum.draft_laws import draft_law, is_exact_dist
    from ..engine.exact import ExactSampler

    exact_walk = isinstance(s, ExactSampler) or getattr(s, "replays_exact_engine", False)
    if not (exact_walk and is_exact_dist(q)):
        return draft_law("iid").draw_multiset(s, q, k)
    chain = count_laws(q, k)
    drafted: list = []
    left = k
    for i, t in enumerate(chain["support"]):
        if left == 0:
            break
        law = chain.get((i, left))
        count = left if law is None else s.draw(law, f"drafts of {t}")
        drafted += [t] * count
        left -= count
    s.drafted.extend(drafted)
    return tuple(drafted)


_COUNT_LAWS: list = [None, None, None]
MAX_COUNT_TERMS = 200_000


def count_laws(q: Dist, k: int) -> dict:
    """``(i, n) -> law of the count of the i-th draftable token given n drafts left``."""
    if _COUNT_LAWS[0] is q and _COUNT_LAWS[1] == k:
        return _COUNT_LAWS[2]
    support = [t for t in q.labels if q[t] != 0]
    chain = count_chain(q, support, k)
    chain["support"] = support
    _COUNT_LAWS[:] = [q, k, chain]
    return chain


def count_chain(q: Dist, order, k: int) -> dict:
    """The draft counts of ``k`` i.i.d. drafts from ``q`` as a chain of binomials over the
    tokens in ``order`` (every token with ``q > 0``): ``(i, n) ->`` the law of how many of
    ``n`` drafts left the ``i``-th token gets (its share of the mass not yet counted); none
    for the last token, which takes the rest.  Refused above :data:`MAX_COUNT_TERMS` exact
    binomial terms."""
    terms = (len(order) - 1) * k * (k + 3) // 2
    if terms > MAX_COUNT_TERMS:
        from ..core.errors import TooLarge

        raise TooLarge(f"KEY at k = {k}: the draft-count laws hold about {terms:,} exact "
                       f"binomial terms, over the budget of {MAX_COUNT_TERMS:,}: use a smaller "
                       "k, or --backend numpy (float64 estimates)", estimate=terms,
                       budget=MAX_COUNT_TERMS)
    chain: dict = {}
    mass = Fraction(1)
    for i, t in enumerate(order[:-1]):
        share = q[t] / mass
        for left in range(1, k + 1):
            counts = list(range(left + 1))
            chain[(i, left)] = Dist([math.comb(left, c) * share ** c * (1 - share) ** (left - c)
                                     for c in counts], counts, check=False)
        mass -= q[t]
    return chain


def key_law(s, p, q, k):
    """KEY with the selection drawn from its closed-form law: draw the drafts, accept token
    ``t`` with probability ``r*(t | X)``, else draw the residual.  The engine's enumeration of
    this method proves ``sum_X P(X) r*(t | X) = a*(t)`` (its accepted-token law)."""
    plan = key_placement(p, q, k)
    drafts = draw_drafts(s, q, k)
    accept = acceptance_law(plan, drafts)
    total = sum(accept.probs, Fraction(0))
    if total != 0 and s.coin(total, "accept"):
        return s.accept(s.draw(Dist([v / total for v in accept.probs], p.labels, check=False),
                               "accepted token"))
    return s.draw(plan.residual, "residual")


def expected_key_draws(plan: KeyPlacement, drafts) -> Fraction:
    """The expected number of key draws :func:`smallest_key_lazy` makes for the drafts ``X``.

    A distinct token ``t`` (visited by support start ``f_t``) is drawn exactly when every
    token visited before it has all its keys in slot ``f_t`` or later:
    ``sum_t prod_{s before t} T_s(f_t)^(c_s)``.  The non-lazy mechanism draws ``k`` keys.
    """
    counts = _counts(plan, drafts)
    order = sorted(counts, key=lambda t: (plan.first_slot(t), plan.slot_of(t)))
    total = Fraction(0)
    for i, t in enumerate(order):
        f = plan.first_slot(t)
        chance = Fraction(1)
        for sbefore in order[:i]:
            law = plan.slot_law(sbefore)
            at_or_after = sum((pr for j, pr in zip(law.labels, law.probs) if j >= f),
                              Fraction(0))
            chance *= at_or_after ** counts[sbefore]
        total += chance
    return total


#: :func:`check_selection_law` enumerates :func:`smallest_key` path by path up to this many
#: slot choices (the product of the drafts' numbers of slots), and through its merged states
#: (:func:`smallest_key_steps`, the same law and paths) above.
MECHANISM_PLAIN_PATHS = 64


def _slot_paths(plan: KeyPlacement, drafts) -> int:
    return math.prod(len(plan.slot_law(x).labels) for x in drafts)


def check_selection_law(p, q, k: int, *, lazy_too: bool = True) -> dict:
    """Prove on one instance that the key mechanism has the closed-form law and that it
    realises ``a*``.

    For every draft multiset ``X``: the engine's exact enumeration of :func:`smallest_key`
    (and of :func:`smallest_key_lazy`) with ``X`` fixed equals :func:`selection_law`; and
    ``sum_X P(X) r*(t | X) = a*(t)`` and ``sum_X P(X) sel(t | X) = w(t)`` exactly.  Above
    :data:`MECHANISM_PLAIN_PATHS` slot choices the enumeration of :func:`smallest_key` runs
    through its merged states (:func:`smallest_key_steps`); ``"paths"`` counts the same paths.

    Returns a dict of booleans and counts (``"ok"`` is their conjunction).
    """
    from ..engine.exact import enumerate_paths
    from ..engine.merged import enumerate_merged
    from ..optimum.alpha_star import draft_multisets

    plan = key_placement(p, q, k)
    p, q = plan.p, plan.q
    accepted = {t: Fraction(0) for t in p.labels}
    selected = {t: Fraction(0) for t in p.labels}
    mechanism = lazy_mechanism = True
    multisets = paths = 0
    lazy_draws = Fraction(0)
    for drafts, weight in draft_multisets(q, k):
        multisets += 1
        sel = selection_law(plan, drafts)
        for t in p.labels:
            selected[t] += weight * sel[t]
            accepted[t] += weight * plan.beta[t] * sel[t]
        lazy_draws += weight * expected_key_draws(plan, drafts)
        runs = [smallest_key] + ([smallest_key_lazy] if lazy_too else [])
        for run in runs:
            if run is smallest_key and _slot_paths(plan, drafts) > MECHANISM_PLAIN_PATHS:
                enum = enumerate_merged(smallest_key_steps(plan, drafts), p, q, k)
            else:
                enum = enumerate_paths(lambda s, p_, q_, k_, run=run: run(s, plan, drafts), p,
                                       q, k, max_paths=None)
            paths += enum.paths
            same = all(enum.law[t] == sel[t] for t in p.labels) and enum.total == 1
            if run is smallest_key:
                mechanism &= same
            else:
                lazy_mechanism &= same
    out = {
        "mechanism_equals_closed_form": mechanism,
        "lazy_equals_closed_form": lazy_mechanism if lazy_too else None,
        "selection_integrates_to_w": all(selected[t] == plan.winner[t] for t in p.labels),
        "acceptance_integrates_to_a_star": all(accepted[t] == plan.a_star[t]
                                               for t in p.labels),
        "multisets": multisets,
        "paths": paths,
        "expected_lazy_key_draws": lazy_draws,
    }
    out["ok"] = all(v for key, v in out.items() if isinstance(v, bool))
    return out
