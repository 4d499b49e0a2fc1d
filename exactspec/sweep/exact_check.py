"""Exact spot checks of a sweep: the float rows of a position converted exactly (every float
is its binary value) and each figure recomputed exactly.

At vocabulary scale, ``Fraction`` arithmetic token by token is slow (a binary denominator can
reach ``2^1074``), so a row becomes integers over one common power of two
(:func:`integer_row`: ``p = N / S`` with ``S = sum N``), and the figures are computed on
integers without a gcd:

==================  ===================================================================
column              exact twin
==================  ===================================================================
``alpha_one``       ``sum_t min(Np_t Sq, Nq_t Sp) / (Sp Sq)`` (:func:`overlap_integer`)
``alpha_star``      ``1 + min(0, min_j g_k(Q_j) - P_j)`` on integers along one exact sort
                    for every ``k`` (:func:`alpha_star_integer`; tested against
                    :func:`exactspec.bounds.closed_forms.optimum_common_denominator`)
``acc_optimal``     the same ``alpha*``
``acc_key``         the same ``alpha*`` (KEY attains the optimum)
``acc_rrs``         the RRS recursion on integers, once up to the largest ``k``
                    (:func:`rrs_acceptances_integer`)
``acc_kseq``        :func:`exactspec.bounds.closed_forms.kseq_acceptance` at the rational
                    ``rho`` within ``10^-12`` above ``rho*`` (:func:`~exactspec.methods.kseq.rho_star`);
                    only for ``|V| <=`` :data:`KSEQ_EXACT_MAX_VOCAB`
==================  ===================================================================

``acc_rrs_wor`` is a Monte Carlo estimate, not a formula, so it has no exact twin here.
The tests set the integer routines against :mod:`exactspec.numpy_backend.twins` (Fractions).

>>> import numpy as np
>>> exact = exact_figures(np.array([0.5, 0.25, 0.25]), np.array([0.25, 0.25, 0.5]), [2],
...                       ["rrs", "optimal"])
>>> exact[0]["alpha_star"], exact[0]["acc_rrs"], exact[0]["alpha_one"]
(Fraction(15, 16), Fraction(13, 16), Fraction(3, 4))
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..bounds.closed_forms import _ratio_order, kseq_acceptance
from ..core.dist import Dist
from ..core.errors import InvalidInput
from ..methods.kseq import rho_star

__all__ = ["exact_figures", "integer_row", "overlap_integer", "rrs_acceptance_integer",
           "rrs_acceptances_integer", "alpha_star_integer",
           "KSEQ_EXACT_MAX_VOCAB", "EXACT_COLUMNS"]

#: Largest vocabulary at which K-SEQ's ``rho*`` is recomputed exactly (its exact bisection
#: costs about 40 passes over the vocabulary in ``Fraction``\ s).
KSEQ_EXACT_MAX_VOCAB = 4096

#: The columns an exact spot check recomputes.
EXACT_COLUMNS = ("alpha_one", "alpha_star", "acc_optimal", "acc_key", "acc_rrs", "acc_kseq")


def integer_row(row) -> tuple[list[int], int]:
    """A non-negative float64 row as integers ``N`` with ``row = N / 2^e`` exactly; returns
    ``(N, sum N)``, so the normalised row is ``N / sum N``.

    >>> N, S = integer_row(np.array([0.5, 0.25, 0.0]))
    >>> [Fraction(a, S) for a in N]
    [Fraction(2, 3), Fraction(1, 3), Fraction(0, 1)]
    """
    x = np.asarray(row, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(x)) or np.any(x < 0):
        raise InvalidInput("an exact check needs finite non-negative values")
    mant, expo = np.frexp(x)                              # x = mant * 2^expo, 0.5 <= mant < 1
    m = (mant * 2.0 ** 53).astype(np.int64)               # exact: 53-bit integers
    e = expo.astype(np.int64) - 53
    nz = m != 0
    if not nz.any():
        raise InvalidInput("an exact check needs a row with a positive value")
    low = int(e[nz].min())
    shifts = (e - low).tolist()
    N = [int(a) << s if a else 0 for a, s in zip(m.tolist(), shifts)]
    return N, sum(N)


def overlap_integer(Np, Sp, Nq, Sq) -> Fraction:
    """``sum_t min(p_t, q_t)`` for ``p = Np / Sp``, ``q = Nq / Sq``."""
    return Fraction(sum(min(a * Sq, b * Sp) for a, b in zip(Np, Nq)), Sp * Sq)


def rrs_acceptance_integer(Np, Sp, Nq, Sq, k: int) -> Fraction:
    """RRS acceptance ``1 - prod_{i=1..k} TV(r_{i-1}, q)`` with each residual kept as integers
    over one denominator: ``r = R / D``, ``(r - q)_+ = E / (D Sq)`` with
    ``E = max(R Sq - Nq D, 0)``, ``TV = sum E / (D Sq)``, and the next residual ``E / sum E``.

    >>> rrs_acceptance_integer([5, 4], 9, [1, 2], 3, 2)
    Fraction(23, 27)
    """
    R, D = list(Np), Sp
    rejection = Fraction(1)
    for _ in range(k):
        E = [max(r * Sq - b * D, 0) for r, b in zip(R, Nq)]
        S = sum(E)
        if S == 0:
            return Fraction(1)
        rejection *= Fraction(S, D * Sq)
        R, D = E, S
    return 1 - rejection


def rrs_acceptances_integer(Np, Sp, Nq, Sq, ks) -> list[Fraction]:
    """:func:`rrs_acceptance_integer` for each ``k`` of ``ks``, from one recursion up to the
    largest (the chance of rejecting ``i`` drafts is the product of the first ``i`` factors).

    >>> rrs_acceptances_integer([5, 4], 9, [1, 2], 3, [2, 1])
    [Fraction(23, 27), Fraction(7, 9)]
    """
    R, D = list(Np), Sp
    rejected = [Fraction(1)]
    for _ in range(max(ks)):
        E = [max(r * Sq - b * D, 0) for r, b in zip(R, Nq)]
        S = sum(E)
        if S == 0:
            rejected.append(Fraction(0))
            R = [0] * len(R)
            continue
        rejected.append(rejected[-1] * Fraction(S, D * Sq))
        R, D = E, S
    return [1 - rejected[k] for k in ks]


def alpha_star_integer(Np, Sp, Nq, Sq, ks) -> list[Fraction]:
    """``alpha* = 1 + min(0, min_j g_k(Q_j) - P_j)`` for each ``k`` of ``ks``, along one exact
    sort of the tokens by ``q/p`` (``p = 0`` last), on integers: with ``P_j = A_j / Sp`` and
    ``Q_j = B_j / Sq``, ``h_j Sp Sq^k = Sp (Sq^k - (Sq - B_j)^k) - A_j Sq^k``.

    >>> alpha_star_integer([5, 3, 2], 10, [2, 2, 6], 10, [1, 2, 4])
    [Fraction(3, 5), Fraction(21, 25), Fraction(1, 1)]
    """
    order = _ratio_order(list(Np), list(Nq))
    powers = [Sq ** k for k in ks]
    best = [0] * len(ks)
    A = B = 0
    for i in order:
        A += Np[i]
        B += Nq[i]
        rest = Sq - B
        for j, k in enumerate(ks):
            h = Sp * (powers[j] - rest ** k) - A * powers[j]
            if h < best[j]:
                best[j] = h
    return [1 + Fraction(m, Sp * powers[j]) for j, m in enumerate(best)]


def _as_dist(N, S) -> Dist:
    return Dist([Fraction(a, S) for a in N], check=False)


def exact_figures(p_row, q_row, ks, methods) -> list[dict]:
    """For one position (float64 rows as the sweep used them, normalised exactly here), one
    dict per ``k`` mapping each checkable column to its exact value."""
    Np, Sp = integer_row(p_row)
    Nq, Sq = integer_row(q_row)
    one = overlap_integer(Np, Sp, Nq, Sq)
    small = "kseq" in methods and len(Np) <= KSEQ_EXACT_MAX_VOCAB
    p, q = (_as_dist(Np, Sp), _as_dist(Nq, Sq)) if small else (None, None)
    alphas = alpha_star_integer(Np, Sp, Nq, Sq, ks)
    rrs = rrs_acceptances_integer(Np, Sp, Nq, Sq, ks) if "rrs" in methods else None
    out = []
    for j, k in enumerate(ks):
        values: dict[str, Fraction] = {"alpha_one": one}
        alpha = alphas[j]
        values["alpha_star"] = alpha
        if "optimal" in methods:
            values["acc_optimal"] = alpha
        if "key" in methods:
            values["acc_key"] = alpha
        if "rrs" in methods:
            values["acc_rrs"] = rrs[j]
        if small:
            values["acc_kseq"] = kseq_acceptance(p, q, k, rho_star(p, q, k).rho)
        out.append(values)
    return out
