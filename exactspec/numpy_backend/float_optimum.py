"""The float optimum's result (:class:`FloatOptimum`), its stated tolerances, the inputs every
routine of the optimum reads (:func:`check_k`, :func:`pair_rows`), and :func:`optimum_sorted`,
the straightforward version and the reference: one ``argsort``, compensated prefix sums, a
cumulative minimum (the formulas: :mod:`exactspec.numpy_backend.optimum`).

>>> import numpy as np
>>> opt = optimum_sorted(np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.2, 0.6]), 2)
>>> opt.order.tolist(), opt.tight.tolist()
([[0, 1, 2]], [[True, True, False]])
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.errors import InvalidInput
from ._arrays import (cumulative_min, g_float, g_increment, namespace, normalized, prefix_sum,
                      ratio_order, rows_and_sums)

__all__ = ["ALPHA_STAR_ATOL", "A_STAR_ATOL", "A_STAR_RTOL", "FloatOptimum",
           "accepted_from_prefixes", "check_k", "optimum_sorted", "pair_rows"]

#: Stated absolute tolerance of ``alpha*`` against its exact twin.
ALPHA_STAR_ATOL = 1e-13
#: Stated per-token tolerance of ``a*``: ``atol + rtol * |a*|``.
A_STAR_ATOL = 1e-14
A_STAR_RTOL = 1e-12


@dataclass(frozen=True)
class FloatOptimum:
    """``alpha*`` and ``a*`` for a batch of rows, in floats (never a proof).

    Attributes
    ----------
    alpha_star : array, shape (batch,)
    a_star : array, shape (batch, |V|)
        One optimal accepted-token law per row, in token order; sums to ``alpha_star``.
    order : array or None
        Token indices in ``q/p`` order (:func:`optimum_sorted` only).
    tight : array or None
        ``tight[b, j]``: the prefix ending at ``order[b, j]`` is tight (sorted version only).
    k : int
    method : str
        ``"sorted"`` or ``"bucketed"``.
    sorted_tokens : array, shape (batch,)
        How many tokens of each row were sorted.
    """

    alpha_star: Any
    a_star: Any
    order: Any
    tight: Any
    k: int
    method: str
    sorted_tokens: Any = field(default=None, repr=False)


def check_k(k) -> int:
    """The number of drafts ``k`` as an int, checked: an integer of at least 1."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise InvalidInput(f"k={k!r}: the number of drafts must be an integer")
    if k < 1:
        raise InvalidInput(f"k={k}: need at least one draft")
    return int(k)


def pair_rows(p, q, xp, sums=False):
    """``p`` and ``q`` as rows of equal shape (one row broadcast to the other's count), and
    whether both came as one row (or, with ``sums``, the rows' sums)."""
    P, p_1d, sums_p = rows_and_sums(p, "p", xp)
    Q, q_1d, sums_q = rows_and_sums(q, "q", xp)
    if P.shape[-1] != Q.shape[-1]:
        raise InvalidInput(f"q has {Q.shape[-1]} entries but p has {P.shape[-1]}")
    if P.shape[0] != Q.shape[0]:
        if P.shape[0] == 1:
            P = xp.broadcast_to(P, Q.shape)
            sums_p = xp.broadcast_to(sums_p, sums_q.shape)
        elif Q.shape[0] == 1:
            Q = xp.broadcast_to(Q, P.shape)
            sums_q = xp.broadcast_to(sums_q, sums_p.shape)
        else:
            raise InvalidInput(f"p has {P.shape[0]} rows but q has {Q.shape[0]}")
    if sums:
        return P, Q, sums_p, sums_q
    return P, Q, p_1d and q_1d


def optimum_sorted(p, q, k: int, xp: Any = None) -> FloatOptimum:
    """``alpha*``, ``a*``, the order and the tight prefixes by one sort per row (the reference).

    Float twin of :func:`exactspec.optimum.alpha_star.optimum` (exact ``Fraction``\\ s, same formulas),
    to within ``1e-13`` for ``alpha*`` and ``1e-14 + 1e-12 a*`` per token (module docstring).
    Works in any array-API namespace ``xp`` that has ``take_along_axis``; rows are
    normalised like ``Dist(..., normalize=True)``.

    Parameters
    ----------
    p, q : array-like, shape (|V|,) or (batch, |V|), or Dist
    k : int
        The number of i.i.d. drafts.

    Examples
    --------
    >>> import numpy as np
    >>> opt = optimum_sorted(np.array([[0.5, 0.3, 0.2]]), np.array([[0.2, 0.2, 0.6]]), 4)
    >>> float(opt.alpha_star[0]), opt.order.tolist(), opt.tight.tolist()
    (1.0, [[0, 1, 2]], [[False, False, True]])
    """
    xp = namespace(xp)
    k = check_k(k)
    P, Q, _ = pair_rows(p, q, xp)
    order = ratio_order(P, Q, xp)
    ps = xp.take_along_axis(normalized(P, xp), order, axis=-1)
    qs = xp.take_along_axis(normalized(Q, xp), order, axis=-1)
    Pc = prefix_sum(ps, xp)
    Qc = prefix_sum(qs, xp)
    zero = xp.zeros(Pc.shape[:-1] + (1,), dtype=Pc.dtype)
    # h_n = g_k(1) - 1 = 0 exactly: the whole vocabulary (float prefix sums end within ulps)
    h = xp.concat([(g_float(k, Qc, xp) - Pc)[..., :-1], zero], axis=-1)
    M = xp.minimum(cumulative_min(h, xp), 0.0)
    M_prev = xp.concat([zero, M[..., :-1]], axis=-1)
    h_prev = xp.concat([zero, h[..., :-1]], axis=-1)
    Q_prev = xp.concat([zero, Qc[..., :-1]], axis=-1)
    a_sorted = accepted_from_prefixes(k, ps, qs, h, h_prev, M_prev, Q_prev, xp)
    a = _unsort(a_sorted, order, xp)
    return FloatOptimum(alpha_star=1.0 + M[..., -1], a_star=a, order=order,
                        tight=h <= M_prev, k=k, method="sorted",
                        sorted_tokens=xp.full(h.shape[:-1], h.shape[-1]))


def accepted_from_prefixes(k, ps, qs, h, h_prev, M_prev, Q_prev, xp):
    """``a*_j = p_j + min(0, h_j - M_{j-1})``, or ``g_k(Q_j) - g_k(Q_{j-1})`` without
    cancellation when the previous prefix was tight too."""
    drop = xp.minimum(h - M_prev, 0.0)
    a = ps + drop
    chain = (h_prev <= M_prev) & (drop < 0)
    if xp is np:
        where = np.nonzero(chain)
        a[where] = g_increment(k, Q_prev[where], qs[where])
    else:                                                 # pragma: no cover - other libraries
        a = xp.where(chain, g_increment(k, Q_prev, qs, xp), a)
    return xp.minimum(xp.maximum(a, 0.0), ps)


def _unsort(values, order, xp):
    if xp is np:
        out = np.empty_like(values)
        np.put_along_axis(out, order, values, axis=-1)
        return out
    inverse = xp.argsort(order, axis=-1)                 # pragma: no cover - other libraries
    return xp.take_along_axis(values, inverse, axis=-1)
