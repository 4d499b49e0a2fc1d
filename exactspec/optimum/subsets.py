"""The optimum by brute force over every subset of the vocabulary, and feasibility of a law.

:func:`alpha_star_brute_force` takes the minimum cut over all subsets, independent of the
sorted order of :func:`~exactspec.optimum.closed_form.optimum`; :func:`infeasible_set` and
:func:`is_feasible` check an accepted-token law against every subset.  Each refuses
vocabularies above :data:`MAX_SUBSET_TOKENS` tokens.

>>> alpha_star_brute_force(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 2)
Fraction(21, 25)
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from ..core.dist import Dist  # noqa: F401  (the examples' namespace)
from ..core.errors import TooLarge
from .closed_form import check_k, check_same_labels, exact_law, exact_masses, g, law_pair

__all__ = ["MAX_SUBSET_TOKENS", "alpha_star_brute_force", "gray_subsets", "infeasible_set",
           "is_feasible", "refuse_subsets"]

#: Largest vocabulary that the subset enumerations (``2^n`` subsets) accept.
MAX_SUBSET_TOKENS = 20


def refuse_subsets(n: int, what: str) -> None:
    """Raise :class:`TooLarge` when ``n`` tokens have more subsets than ``what`` may enumerate."""
    if n > MAX_SUBSET_TOKENS:
        count = f"2^{n} = {2 ** n}" if n <= 64 else f"2^{n:,}"   # its digits, when few
        raise TooLarge(
            f"{what} enumerates all {count} subsets of {n:,} tokens; the budget is "
            f"{MAX_SUBSET_TOKENS} tokens (2^{MAX_SUBSET_TOKENS} subsets)",
            estimate=2 ** n, budget=2 ** MAX_SUBSET_TOKENS)


def gray_subsets(n: int, *vectors) -> Iterator[tuple]:
    """Yield ``(mask, sum of each vector over the subset)`` for every subset, in Gray order."""
    sums = [Fraction(0) for _ in vectors]
    mask = 0
    yield (mask, *sums)
    for step in range(1, 1 << n):
        bit = (step & -step).bit_length() - 1
        mask ^= 1 << bit
        sign = 1 if mask >> bit & 1 else -1
        for s, vec in enumerate(vectors):
            sums[s] += sign * vec[bit]
        yield (mask, *sums)


def alpha_star_brute_force(p: Any, q: Any, k: int) -> Fraction:
    """``alpha*`` as the minimum cut over every subset of the vocabulary.

    Equivalent to ``min(p(A) + 1 - q(A)**k for A in subsets(V))`` (``A`` empty gives 1).
    Independent of the sorted order; refuses vocabularies above :data:`MAX_SUBSET_TOKENS`.

    >>> alpha_star_brute_force(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 2)
    Fraction(21, 25)
    """
    p, q = law_pair(p, q)
    k = check_k(k)
    refuse_subsets(len(p), "the brute-force optimum")
    return min(pa + 1 - qa ** k for _, pa, qa in gray_subsets(len(p), p.probs, q.probs))


def infeasible_set(a: Any, q: Any, k: int) -> tuple | None:
    """A set ``A`` with ``a(A) > g_k(q(A))``, or ``None`` when ``a`` is feasible.

    ``a`` is a non-negative mass vector (an accepted-token law, summing to at most 1) over
    ``q``'s labels.  It is realisable as ``P(Y = t and Y in X)`` by ``k`` i.i.d. drafts exactly
    when no such set exists and ``a <= 1``; this checks every subset (small vocabularies).

    >>> infeasible_set(Dist([Fraction(1, 2), 0], check=False), Dist.parse("1/5,4/5"), 2)
    (0,)
    """
    q = exact_law(q, "q")
    a = exact_masses(a, "a", labels=q.labels)
    check_same_labels(q, a, "a")
    k = check_k(k)
    refuse_subsets(len(q), "the feasibility check")
    for mask, aa, qa in gray_subsets(len(q), a.probs, q.probs):
        if aa > g(k, qa):
            return tuple(lab for i, lab in enumerate(q.labels) if mask >> i & 1)
    return None


def is_feasible(a: Any, q: Any, k: int) -> bool:
    """Whether ``a(A) <= g_k(q(A))`` for every subset ``A`` (brute force over subsets).

    Equivalent to ``all(a(A) <= 1 - (1 - q(A))**k for A in subsets(V))``: ``a`` lies in the
    polymatroid of ``A -> g_k(q(A))``.

    >>> from exactspec.optimum.closed_form import accepted_law
    >>> p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
    >>> is_feasible(accepted_law(p, q, 2), q, 2), is_feasible(p, q, 2)
    (True, False)
    """
    return infeasible_set(a, q, k) is None
