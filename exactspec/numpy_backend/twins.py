"""The exact twins of the float routines, on the same inputs converted exactly.

A float converts to a ``Fraction`` without loss, so each float routine can be set against an
exact computation on the very same numbers (docs/math.md#float-backends-and-their-exact-twins):

=============================  ================================================
float routine                  exact twin
=============================  ================================================
``one_draft_acceptance``       :func:`one_draft_acceptance_exact` (``overlap``)
``rrs_acceptance``             :func:`rrs_acceptance_exact` (the recursion)
``optimum_sorted/_bucketed``   :func:`optimum_exact` (:func:`exactspec.optimum.alpha_star.optimum`)
samplers                       ``verify(method, ...)``; statistically, :mod:`exactspec.numpy_backend.harness`
=============================  ================================================

>>> p, q = exact_pair([0.5, 0.25, 0.25], [0.25, 0.25, 0.5])
>>> rrs_acceptance_exact(p, q, 2), optimum_exact(p, q, 2).alpha_star
(Fraction(13, 16), Fraction(15, 16))
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..core.dist import Dist, overlap, total_variation
from ..optimum.alpha_star import Optimum, optimum

__all__ = ["exact_pair", "one_draft_acceptance_exact", "rrs_rejection_exact",
           "rrs_acceptance_exact", "optimum_exact", "agrees"]


def exact_pair(p, q) -> tuple[Dist, Dist]:
    """One float row each of ``p`` and ``q`` as exact Dists, normalised exactly
    (``Dist(row, normalize=True)``: every float is its exact binary value)."""
    p_row = np.asarray(p, dtype=np.float64).reshape(-1)
    q_row = np.asarray(q, dtype=np.float64).reshape(-1)
    return Dist(p_row, normalize=True, name="p"), Dist(q_row, normalize=True, name="q")


def one_draft_acceptance_exact(p: Dist, q: Dist) -> Fraction:
    """``sum_t min(p(t), q(t))`` exactly (:func:`exactspec.core.dist.overlap`)."""
    return overlap(p, q)


def rrs_rejection_exact(p: Dist, q: Dist, k: int) -> Fraction:
    """``prod_{i=1..k} TV(r_{i-1}, q)`` exactly: ``r_0 = p``, ``r_i = norm((r_{i-1} - q)_+)``;
    a step with ``TV = 0`` accepts surely (the product is then 0)."""
    rejection = Fraction(1)
    r = p
    for _ in range(k):
        tv = total_variation(r, q)
        rejection *= tv
        if tv == 0:
            return Fraction(0)
        r = Dist([max(a - b, 0) / tv for a, b in zip(r.probs, q.probs)], p.labels, check=False)
    return rejection


def rrs_acceptance_exact(p: Dist, q: Dist, k: int) -> Fraction:
    """RRS acceptance ``1 - prod_i TV(r_{i-1}, q)`` exactly."""
    return 1 - rrs_rejection_exact(p, q, k)


def optimum_exact(p: Dist, q: Dist, k: int) -> Optimum:
    """``alpha*``, ``a*``, order and tight prefixes exactly (:func:`exactspec.optimum.alpha_star.optimum`)."""
    return optimum(p, q, k)


def agrees(value: float, exact_value, atol: float, rtol: float = 0.0) -> bool:
    """``|value - exact| <= atol + rtol |exact|``, the difference taken exactly.

    >>> agrees(0.1, Fraction(1, 10), 1e-16), agrees(0.1, Fraction(1, 10), 0.0)
    (True, False)
    """
    diff = abs(Fraction(float(value)) - Fraction(exact_value))
    return diff <= Fraction(atol) + Fraction(rtol) * abs(Fraction(exact_value))
