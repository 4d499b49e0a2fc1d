"""The optimum of the other draft laws: any law of draft multisets by brute force over cuts
(:func:`law_optimum`), SpecHub's hub law in closed form (:func:`hub_optimum`).

>>> hub_optimum(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/10,3/10,3/5"))
Fraction(3, 4)
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..core.dist import Dist  # noqa: F401  (the examples' namespace)
from .closed_form import check_draft_law_name, check_k, law_pair
from .multisets import draft_multisets, draft_support, hub_index
from .subsets import gray_subsets, refuse_subsets

__all__ = ["hub_optimum", "law_optimum"]

def law_optimum(p: Any, q: Any, k: int, law: str = "iid") -> Fraction:
    """The optimal acceptance for a draft law, by brute force over cuts.

    Equivalent to ``1 + min(p(H) - P(all drafts in H) for H in subsets(V))``, with
    ``P(all drafts in H)`` summed over :func:`draft_multisets`.  Only subsets of ``q``'s
    support need checking (a token ``q`` never drafts only adds ``p``); refuses supports above
    :data:`MAX_SUBSET_TOKENS` tokens.  For ``"iid"`` this is ``alpha*``; for ``"hub"`` it
    equals :func:`hub_optimum`.

    >>> p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/10,3/10,3/5")
    >>> law_optimum(p, q, 2, "iid"), law_optimum(p, q, 2, "wor"), law_optimum(p, q, 2, "hub")
    (Fraction(69, 100), Fraction(111, 140), Fraction(3, 4))
    """
    p, q = law_pair(p, q)
    k = check_k(k)
    law = check_draft_law_name(law)
    support = draft_support(q, k, law)
    m = len(support)
    refuse_subsets(m, f"the {law!r} optimum")
    bit = {p.labels[i]: j for j, i in enumerate(support)}
    inside = [Fraction(0)] * (1 << m)           # inside[H] = P(the set of drafts is H)
    for drafts, weight in draft_multisets(q, k, law):
        mask = 0
        for t in drafts:
            mask |= 1 << bit[t]
        inside[mask] += weight
    for j in range(m):                          # now inside[H] = P(all drafts in H)
        step = 1 << j
        for mask in range(1 << m):
            if mask & step:
                inside[mask] += inside[mask ^ step]
    p_support = [p.probs[i] for i in support]
    best = Fraction(0)                          # H empty
    for mask, p_h in gray_subsets(m, p_support):
        best = min(best, p_h - inside[mask])
    return 1 + best


def hub_optimum(p: Any, q: Any) -> Fraction:
    """The optimal acceptance under SpecHub's hub draft law (``k = 2``), in closed form.

    Equivalent to ``p(a) + sum(min(p(i), q(i) / (1 - q(a))) for i != a)`` with
    ``a = argmax q`` (:func:`hub_token`); refuses a point-mass ``q``.

    >>> hub_optimum(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/10,3/10,3/5"))
    Fraction(3, 4)
    """
    p, q = law_pair(p, q)
    draft_support(q, 2, "hub")
    hub = hub_index(q)
    rest = 1 - q.probs[hub]
    total = p.probs[hub]
    for i in range(len(p)):
        if i != hub:
            total += min(p.probs[i], q.probs[i] / rest)
    return total
