"""Every cross-check of the closed-form optimum that fits its budget: the closed form's own
invariants, brute force over subsets and the exact max flow (``exactspec optimal --json``).

>>> check_optimum(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 2)
{'closed_form': True, 'brute_force': True, 'max_flow': True}
"""

from __future__ import annotations

import math
import operator
from fractions import Fraction
from typing import Any

from ..core.dist import Dist, integer_row_of
from ..core.errors import TooLarge
from .closed_form import Optimum, check_k, law_pair, optimum
from .max_flow import alpha_star_max_flow, realisable_by_flow
from .multisets import draft_multiset_count
from .subsets import MAX_SUBSET_TOKENS, alpha_star_brute_force, is_feasible

__all__ = ["CHECK_FLOW_MULTISETS", "check_optimum", "checks_and_skips", "closed_form_holds",
           "optimal_report", "optimum_check_skips"]

#: Largest number of i.i.d. draft multisets for the max-flow cross-check of
#: :func:`check_optimum` (two exact max flows; about 1 s at 2,000 multisets on one core).
CHECK_FLOW_MULTISETS = 5_000


def check_optimum(p: Any, q: Any, k: int) -> dict:
    """Cross-check the closed-form optimum every independent way that fits its budget.

    Returns the ``checks`` object of ``exactspec optimal --json``:

    - ``"closed_form"``: ``0 <= a* <= p`` and ``sum a* = alpha*`` (always ``True``);
    - ``"brute_force"``: ``alpha*`` equals the minimum over all subsets
      (:func:`alpha_star_brute_force`) and ``a*`` is feasible (:func:`is_feasible`);
    - ``"max_flow"``: ``alpha*`` equals the exact max flow over i.i.d. draft multisets, and the
      flow with sink capacities ``a*`` saturates them (``a*`` is realisable).

    A value is ``None`` when that check was skipped as too large (:class:`TooLarge`): the
    brute force above :data:`MAX_SUBSET_TOKENS` tokens, the max flow above
    :data:`CHECK_FLOW_MULTISETS` draft multisets (:func:`optimum_check_skips` says why).

    >>> check_optimum(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 3)
    {'closed_form': True, 'brute_force': True, 'max_flow': True}
    """
    return checks_and_skips(p, q, k)[0]


def optimum_check_skips(p: Any, q: Any, k: int) -> dict:
    """Why each skipped check of :func:`check_optimum` was skipped: ``{name: reason}``.

    >>> optimum_check_skips(Dist.parse("1/2,1/2"), Dist.parse("1/2,1/2"), 2)
    {}
    """
    p, q = law_pair(p, q)
    k = check_k(k)
    skips = {}
    if len(p) > MAX_SUBSET_TOKENS:
        skips["brute_force"] = (f"2^{len(p)} subsets of {len(p)} tokens, over the budget of "
                                f"{MAX_SUBSET_TOKENS} tokens")
    count = draft_multiset_count(q, k)
    if count > CHECK_FLOW_MULTISETS:
        skips["max_flow"] = (f"{count} draft multisets, over the budget of "
                             f"{CHECK_FLOW_MULTISETS} for the max-flow cross-check")
    return skips


def closed_form_holds(a: Dist, p: Dist, alpha_star) -> bool:
    """The closed form's own check: ``0 <= a*(t) <= p(t)`` for every token and ``sum a* =
    alpha*``; over integer rows (one common denominator each) when both laws have them, so
    that a full vocabulary costs integer comparisons, not ``Fraction`` ones.

    >>> from exactspec.core.dist import Dist
    >>> closed_form_holds(Dist.parse("1/4,1/4,0,1/2", normalize=False),
    ...                   Dist.parse("1/2,1/4,1/8,1/8"), Fraction(1))
    False
    """
    rows = integer_row_of(a), integer_row_of(p)
    if rows[0] is None or rows[1] is None:
        return bool(all(0 <= a[t] <= p[t] for t in p.labels)
                    and sum(a.probs, Fraction(0)) == alpha_star)
    (a_ints, a_den), (p_ints, p_den) = rows
    # a_i / a_den <= p_i / p_den  <=>  a_i (p_den / g) <= p_i (a_den / g), g their gcd; the
    # comparisons run in C over the two rows (one multiplication a side, 1 where it divides)
    g = math.gcd(a_den, p_den)
    a_scale, p_scale = p_den // g, a_den // g
    scaled_a = a_ints if a_scale == 1 else map(a_scale.__mul__, a_ints)
    scaled_p = p_ints if p_scale == 1 else map(p_scale.__mul__, p_ints)
    return bool((not a_ints or min(a_ints) >= 0)
                and all(map(operator.le, scaled_a, scaled_p))
                and Fraction(sum(a_ints), a_den) == alpha_star)


def checks_and_skips(p: Any, q: Any, k: int, opt: Optimum | None = None
                      ) -> tuple[dict, dict]:
    """:func:`check_optimum` and :func:`optimum_check_skips` together, of ``opt`` when the
    caller has computed the optimum already (it is not computed twice)."""
    p, q = law_pair(p, q)
    k = check_k(k)
    if opt is None:
        opt = optimum(p, q, k)
    a = opt.a_star
    checks: dict[str, bool | None] = {
        "closed_form": closed_form_holds(a, p, opt.alpha_star),
        "brute_force": None,
        "max_flow": None,
    }
    skips = optimum_check_skips(p, q, k)     # a check over its budget is not started
    if "brute_force" not in skips:
        try:
            checks["brute_force"] = bool(
                alpha_star_brute_force(p, q, k) == opt.alpha_star and is_feasible(a, q, k))
        except TooLarge as err:
            skips["brute_force"] = str(err)
    if "max_flow" not in skips:
        try:
            budget = CHECK_FLOW_MULTISETS
            checks["max_flow"] = bool(
                alpha_star_max_flow(p, q, k, budget=budget) == opt.alpha_star
                and realisable_by_flow(a, q, k, budget=budget))
        except TooLarge as err:
            skips["max_flow"] = str(err)
    return checks, skips


def optimal_report(p, q, k: int, opt: Optimum | None = None) -> dict:
    """The ``exactspec optimal --json`` object: ``alpha*``, ``a*``, the sorted order, the tight
    prefixes and the cross-checks (``checks``: closed form, brute force, max flow; ``None``
    where skipped as too large, with the reason in ``checks_skipped``); of ``opt`` when the
    caller has computed the optimum already (it is not computed twice).

    >>> from exactspec.core.dist import Dist
    >>> r = optimal_report(Dist.parse("1/2,3/10,1/5", labels="abc"),
    ...                    Dist.parse("1/5,1/5,3/5", labels="abc"), 2)
    >>> r["alpha_star"], r["a_star"], r["order"], r["tight"], r["checks"]
    ('21/25', {'a': '9/25', 'b': '7/25', 'c': '1/5'}, ['a', 'b', 'c'], ['a', 'b'], \
{'closed_form': True, 'brute_force': True, 'max_flow': True})
    """
    p, q = law_pair(p, q)
    if opt is None:
        opt = optimum(p, q, k)
    out = opt.to_json()
    out["alpha_star_float"] = float(opt.alpha_star)
    out["labels"] = list(map(str, p.labels))
    out["checks"], out["checks_skipped"] = checks_and_skips(p, q, k, opt)
    return out
