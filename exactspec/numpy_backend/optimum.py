"""``alpha*`` and ``a*`` in float64 over batches of rows: one sort, or buckets and a partial sort.

The float twins of :func:`exactspec.optimum.alpha_star.optimum` (MATH.md section 3).  With the tokens
sorted by ``q/p`` ascending (``p = 0`` last, ties by index) and prefix sums ``P_j``, ``Q_j``::

    h_j = g_k(Q_j) - P_j,   M_j = min(0, h_1, ..., h_j),   alpha* = 1 + M_n,
    a*_j = p_j + min(0, h_j - M_{j-1})

(the cumulative minimum ``F_j = P_j + M_j``).  :func:`optimum_sorted` is the straightforward
version (one ``argsort``, compensated prefix sums, a cumulative minimum) and the reference;
:func:`optimum_bucketed` sorts only the tokens whose ``a*`` can differ from ``p``.

Tolerance against the exact twin on the same float inputs converted exactly (rows normalised
exactly by the twin, in floats here): ``|alpha*_float - alpha*| <= 1e-13`` and, per token,
``|a*_float - a*| <= 1e-14 + 1e-12 a*`` for ``|V|`` up to a few hundred thousand (the terms
are each a few roundings of ``2^-53``; the bounds leave room).  Exceptions: two tokens whose
ratios ``q/p`` differ by less than about ``2^-105`` relative are ordered by index, which can
move ``a*`` between them (``alpha*`` is unaffected to first order).

>>> import numpy as np
>>> opt = optimum_sorted(np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.2, 0.6]), 2)
>>> round(float(opt.alpha_star[0]), 12), np.round(opt.a_star[0], 12).tolist()
(0.84, [0.36, 0.28, 0.2])
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.errors import InvalidInput
from ._arrays import (EPS, as_rows, cumulative_min, g_float, g_increment, namespace,
                      normalized, prefix_sum, ratio_order,
                      _fix_ties, _prefix_sums_into, _rows_and_sums, _INT_PREFIX_MAX, _SCRATCH)

__all__ = ["FloatOptimum", "optimum_sorted", "optimum_bucketed", "alpha_star", "a_star",
           "ALPHA_STAR_ATOL", "A_STAR_ATOL", "A_STAR_RTOL"]

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


def _check_k(k) -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise InvalidInput(f"k={k!r}: the number of drafts must be an integer")
    if k < 1:
        raise InvalidInput(f"k={k}: need at least one draft")
    return int(k)


def _pair_rows(p, q, xp, sums=False):
    P, p_1d, sums_p = _rows_and_sums(p, "p", xp)
    Q, q_1d, sums_q = _rows_and_sums(q, "q", xp)
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

    >>> import numpy as np
    >>> opt = optimum_sorted(np.array([[0.5, 0.3, 0.2]]), np.array([[0.2, 0.2, 0.6]]), 4)
    >>> float(opt.alpha_star[0]), opt.order.tolist(), opt.tight.tolist()
    (1.0, [[0, 1, 2]], [[False, False, True]])
    """
    xp = namespace(xp)
    k = _check_k(k)
    P, Q, _ = _pair_rows(p, q, xp)
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
    a_sorted = _accepted(k, ps, qs, h, h_prev, M_prev, Q_prev, xp)
    a = _unsort(a_sorted, order, xp)
    return FloatOptimum(alpha_star=1.0 + M[..., -1], a_star=a, order=order,
                        tight=h <= M_prev, k=k, method="sorted",
                        sorted_tokens=xp.full(h.shape[:-1], h.shape[-1]))


def _accepted(k, ps, qs, h, h_prev, M_prev, Q_prev, xp):
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


# -- the bucketed version ---------------------------------------------------------------

def optimum_bucketed(p, q, k: int, *, bits: int = 4) -> FloatOptimum:
    """``alpha*`` and ``a*`` sorting only the tokens that can change the answer (NumPy only).

    The ratios ``q/p`` go into buckets by the leading bits of their float representation
    (exponent and ``bits`` mantissa bits: ratio intervals ``2^(1/2^bits)`` wide, no sort:
    ``bincount`` gives each bucket's masses).  Inside a bucket with ratios in ``[lo, hi)``
    and end points ``(Q0, P0)``, ``(Q1, P1)``, every prefix has ``g_k(Q) >=`` the chord of
    ``g_k`` and ``P <= min(P0 + (Q - Q0)/lo, P1 - (Q1 - Q)/hi)``, so ``h`` is at least a convex
    piecewise-linear bound whose minimum is at an end or the kink.  A bucket whose bound stays
    at or above the running minimum of the bucket end points so far cannot hold a new
    minimum: there ``a* = p`` whatever the order inside.  Only the tokens from the first
    bucket that can hold a new minimum to the last are sorted, as one run (the buckets
    between are sorted too, which only costs time); tokens with ``q = 0`` get ``a* = 0`` and
    tokens with ``p = 0`` get 0, unsorted; so do ratios ``q/p`` below ``2^-1022`` or above the
    largest float, off by under ``k 2^-1022``.

    Why nothing else can change the answer (MATH.md section 3: ``alpha* = 1 + min_j h_j``
    over the prefixes of the ``q/p`` order, and ``a*_j = p_j`` wherever ``h_j`` is at or
    above the running minimum ``M_{j-1}``): a token after the run has ``h_j >= M_{j-1}``
    because its bucket's lower bound is at or above the running minimum of the bucket end
    points, which is ``>= M_{j-1}``; so ``a*_j = p_j`` and ``M_j = M_{j-1}``.  Before the run
    the same holds, and the run starts from the exact masses of the tokens before it (one
    pairwise sum) with ``M`` at ``min(0, -p(q = 0))``.  Inside the run the order is exact:
    the ratios are sorted as values (the float bits with the token index in the low bits: a
    non-negative float read as an integer orders like the float), and runs of equal
    truncated keys are re-sorted by the double-double ratio and the index.

    Accuracy inside the run (``eps = 2^-53``; rows normalised by their float sums, as in
    :func:`optimum_sorted`).  Each ``P_j`` and ``Q_j`` is within ``3 eps`` of the exact
    prefix sum of the row divided by that sum: ``eps`` relative for the division of each
    term, one rounding for the running sum (integer running sums, as in
    :func:`._arrays.prefix_sum`) and one for adding the start masses.  ``g_k`` is
    ``k``-Lipschitz on ``[0, 1]`` and evaluated within ``(k + 2) eps``, so each
    ``h_j = g_k(Q_j) - P_j`` is within ``(4k + 6) eps``, and so is each running minimum
    ``M_j`` (a minimum is 1-Lipschitz in its arguments); ``alpha* = 1 + M_n`` too.  For
    ``k <= 8``, ``a*_j = p_j + (M_j - M_{j-1})``: exactly the normalised ``p_j`` where the
    minimum does not move, elsewhere within ``2 (4k + 6) eps`` for the two minima plus three
    roundings, ``(8k + 15) eps <= 8.8e-15``, inside the stated ``1e-14``; larger ``k`` uses
    the cancellation-free increments of :func:`optimum_sorted`.

    The working arrays (a few rows of ``|V|`` floats) are kept between calls, per thread
    (:class:`._arrays._Scratch`): fresh arrays of that size cost page faults on every call.

    Same result as :func:`optimum_sorted` within its tolerance (and the same tolerance
    against the exact twin); ``order`` and ``tight`` are not computed.  ``sorted_tokens``
    says how many tokens were sorted per row.

    >>> import numpy as np
    >>> opt = optimum_bucketed(np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.2, 0.6]), 2)
    >>> round(float(opt.alpha_star[0]), 12), np.round(opt.a_star[0], 12).tolist()
    (0.84, [0.36, 0.28, 0.2])
    """
    k = _check_k(k)
    if not isinstance(bits, numbers.Integral) or not 0 <= bits <= 20:
        raise InvalidInput(f"bits={bits!r}: choose an integer from 0 to 20")
    P, Q, sums_p, sums_q = _pair_rows(p, q, np, sums=True)
    batch, n = P.shape
    alpha = np.empty(batch)
    a = np.empty((batch, n))
    counts = np.empty(batch, dtype=np.intp)
    for b in range(batch):                               # a loop over the batch only
        alpha[b], counts[b] = _bucketed_row(np.ascontiguousarray(P[b]),
                                            np.ascontiguousarray(Q[b]), k, int(bits), a[b],
                                            float(sums_p[b]), float(sums_q[b]))
    return FloatOptimum(alpha_star=alpha, a_star=a, order=None, tight=None, k=k,
                        method="bucketed", sorted_tokens=counts)


_INF_BITS = 0x7FF0000000000000
#: Up to this many drafts the bucketed ``a*`` is a difference of ``F_j = P_j + M_j``.
_DIFF_K = 8


def _power_into(base, k: int, result):
    """``base ** k`` (``k >= 1``) into ``result`` by the repeated squaring of
    :func:`._arrays._power` (same products, same rounding); ``base`` is overwritten."""
    first = True
    while k:
        if k & 1:
            if first:
                np.copyto(result, base)
                first = False
            else:
                result *= base
        k >>= 1
        if k:
            base *= base
    return result


#: Scratch rows one bucketed row uses (see :class:`._arrays._Scratch`).
_ROW_SCRATCH = 10


def _bucketed_row(p, q, k, bits, out, sp, sq):
    """One row of :func:`optimum_bucketed` (``sp``, ``sq``: the sums of ``p`` and ``q``):
    writes ``a*`` into ``out``, returns ``(alpha*, tokens sorted)``.  Working arrays are
    scratch rows kept between calls."""
    n = p.shape[0]
    work = _SCRATCH.rows(_ROW_SCRATCH, n + 1)
    shift = 52 - bits
    np.divide(p, sp, out=out)                            # a* = p outside the sorted buckets
    inf_key = _INF_BITS >> shift
    ratio = work[0, :n]
    ratio_bits = ratio.view(np.int64)
    ids = work[1, :n].view(np.int64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        np.divide(q, p, out=ratio)
    np.right_shift(ratio_bits, shift, out=ids)           # non-negative floats sort as integers:
    #                                                      exponent and `bits` mantissa bits
    kmin, kmax = int(np.minimum.reduce(ids)), int(np.maximum.reduce(ids))
    if kmin < 0 or kmax > inf_key:                       # 0/0 somewhere: p = q = 0 goes last
        ratio.fill(np.inf)
        with np.errstate(over="ignore"):
            np.divide(q, p, out=ratio, where=p > 0)
        np.right_shift(ratio_bits, shift, out=ids)
        kmin, kmax = int(np.minimum.reduce(ids)), int(np.maximum.reduce(ids))
    has_zero = kmin == 0                                 # q/p = 0 (or below 2^-1022): a* = 0
    has_inf = kmax == inf_key                            # p = 0: last, a* = 0 = p
    if has_zero:
        positive_keys = ids[ids > 0]
        kmin = int(positive_keys.min()) if positive_keys.size else inf_key
    if has_inf:
        finite = ids[(ids > 0) & (ids < inf_key)]
        if finite.size == 0:
            kmin = kmax = 1
        else:
            kmax = int(finite.max())
    nb = kmax - kmin + 3                                 # bucket 0: q/p = 0; nb - 1: p = 0
    ids -= kmin - 1
    if has_zero:
        np.maximum(ids, 0, out=ids)
    if has_inf:
        np.minimum(ids, nb - 1, out=ids)
    p_zero = 0.0
    if has_zero:
        zero = ids == 0
        p_zero = float(p[zero].sum()) / sp
        out[zero] = 0.0
    if nb == 3 and not np.any(ids == 1):                 # every ratio is 0 or infinite
        return 1.0 - p_zero, 0

    # the bucket masses: four interleaved tables (token j adds into lane j mod 4), so that
    # neighbouring tokens in one bucket do not wait on each other's additions
    ids <<= 2
    ids |= _SCRATCH.lanes(n)
    mass_p = np.add.reduce(np.bincount(ids, p, 4 * nb).reshape(nb, 4), axis=1)
    mass_q = np.add.reduce(np.bincount(ids, q, 4 * nb).reshape(nb, 4), axis=1)
    PB = np.zeros(nb + 1)
    QB = np.zeros(nb + 1)
    np.add.accumulate(mass_p, out=PB[1:])
    np.add.accumulate(mass_q, out=QB[1:])
    PB /= sp
    QB /= sq
    gB = g_float(k, QB)
    hB = gB - PB
    M_upper = np.minimum.accumulate(np.minimum(hB, 0.0))  # running min of end points <= b

    # bucket b = 1..nb-2 holds raw ratios in [lo, hi); normalised ratio = raw * sp / sq
    scale = sp / sq
    edges = (np.arange(kmin, kmax + 2, dtype=np.int64) << shift).view(np.float64) * scale
    lo = edges[:-1] * (1 - 1e-12)
    hi = edges[1:] * (1 + 1e-12)
    Q0, Q1, P0, P1 = QB[1:nb - 1], QB[2:nb], PB[1:nb - 1], PB[2:nb]
    dQ, dP = Q1 - Q0, P1 - P0
    # the path inside the bucket: Q >= Q0 + lo (P - P0) and Q >= Q1 - hi (P1 - P); with g
    # increasing and concave, h >= g(max of the two) - P, concave on each side of the kink
    dA = np.minimum(np.maximum((hi * dP - dQ) / (hi - lo), 0.0), dP)   # P-increment at the kink
    kink = g_float(k, Q0 + np.minimum(np.maximum(lo * dA, 0.0), dQ)) - (P0 + dA)
    bound = np.minimum(np.minimum(hB[1:nb - 1], hB[2:nb]), kink)
    margin = 1e-12 + 8 * n * EPS
    active = np.zeros(nb, dtype=bool)
    active[1:nb - 1] = ~(bound >= M_upper[1:nb - 1] + margin)   # NaN counts as active
    active[1:nb - 1] &= mass_p[1:nb - 1] > 0             # an empty bucket changes nothing
    if not active.any():
        return 1.0 + min(0.0, -p_zero), 0

    # one run from the first active bucket to the last: the buckets in between are sorted
    # too (a value sort of a few more tokens costs less than a pass per run), so the masses
    # before the run are one pairwise sum over the earlier tokens
    active_buckets = np.flatnonzero(active)
    first_b, last = int(active_buckets[0]), int(active_buckets[-1])
    chosen = work[2, :n].view(np.bool_)[:n]
    np.less_equal(ids, 4 * last + 3, out=chosen)         # bucket ids >> 2 <= last
    if first_b == 1:
        if has_zero:
            chosen &= ids >= 4
        P_start, Q_start = p_zero, 0.0
    else:
        before = ids < 4 * first_b
        P_start = float(p[before].sum()) / sp
        Q_start = float(q[before].sum()) / sq
        chosen &= ~before
    tokens = np.flatnonzero(chosen)                      # token order
    m = tokens.size
    # sort the run's ratios as values: the float bits with the token index in the low bits
    # (a non-negative float64 read as an int64 orders like the float)
    low_bits = max(1, (n - 1).bit_length())
    keys = work[2, :m].view(np.int64)
    ratio_bits.take(tokens, out=keys, mode="clip")       # in range: no check
    keys >>= low_bits
    keys <<= low_bits
    keys |= tokens
    keys.view(np.float64).sort()                         # finite positive floats: same order
    run = work[3, :m].view(np.int64)                     # the run's tokens in q/p order
    np.bitwise_and(keys, (1 << low_bits) - 1, out=run)
    keys >>= low_bits
    ties = keys[1:] == keys[:-1]                         # equal truncated ratios: exact order
    if ties.any():
        _fix_ties(run[None, :], 0, ties, p[None, :], q[None, :], np)

    # prefix sums of the normalised masses in that order (integer running sums)
    ps = work[2, :m]                                     # (the keys are spent)
    out.take(run, out=ps, mode="clip")                   # p / sp
    masses = work[4:6, :m]
    np.copyto(masses[0], ps)
    q.take(run, out=masses[1], mode="clip")
    masses[1] /= sq
    if m <= _INT_PREFIX_MAX:
        PQ = _prefix_sums_into(masses, work[6:8, :m], work[8:10, :m])
    else:                                                # the integer sums could overflow
        PQ = prefix_sum(masses)
    Pj, Qj = PQ[0], PQ[1]
    if P_start:
        Pj += P_start
    if Q_start:
        Qj += Q_start
    # h_j = g_k(Q_j) - P_j, then M_j = min(M_0, h_1, ..., h_j)
    rest = work[4, :m]
    np.subtract(1.0, Qj, out=rest)
    np.maximum(rest, 0.0, out=rest)
    power = _power_into(rest, k, work[5, :m])
    M = work[6, :m + 1]
    M0 = M[0] = min(0.0, -p_zero)
    h = M[1:]
    np.subtract(1.0, power, out=h)
    h -= Pj
    if k > _DIFF_K:
        h = h.copy()
    np.minimum.accumulate(M, out=M)
    alpha = 1.0 + float(M[-1])
    if k <= _DIFF_K:
        # a*_j = p_j + (M_j - M_{j-1}): exactly p_j where the minimum does not move; each M
        # within (4k + 6) 2^-53 of exact, so a* within (8k + 15) 2^-53 < 1e-14 for k <= 8
        drop = work[4, :m]
        np.subtract(M[1:], M[:-1], out=drop)
        drop += ps
        np.maximum(drop, 0.0, out=drop)
        out[run] = drop
    else:
        h_prev = np.empty_like(h)
        h_prev[1:] = h[:-1]
        h_prev[0] = float(g_float(k, np.array([Q_start]))[0]) - P_start
        Q_prev = np.empty_like(h)
        Q_prev[1:] = Qj[:-1]
        Q_prev[0] = Q_start
        out[run] = _accepted(k, ps, q[run] / sq, h, h_prev, M[:-1], Q_prev, np)
    return alpha, m


# -- conveniences -----------------------------------------------------------------------

def alpha_star(p, q, k: int, *, method: str = "bucketed"):
    """``alpha*`` per row (float64 array, or a float for one row); ``method`` is
    ``"bucketed"`` (default) or ``"sorted"``.  Tolerance ``1e-13`` against
    :func:`exactspec.optimum.alpha_star.optimal_acceptance`.

    >>> round(alpha_star([0.5, 0.3, 0.2], [0.2, 0.2, 0.6], 3), 12)
    0.984
    """
    opt, one_row = _run(p, q, k, method)
    return float(opt.alpha_star[0]) if one_row else opt.alpha_star


def a_star(p, q, k: int, *, method: str = "bucketed"):
    """``a*`` per row (same shape as ``p``).  Tolerance ``1e-14 + 1e-12 a*`` per token
    against :func:`exactspec.optimum.alpha_star.accepted_law`.

    >>> np.round(a_star([0.5, 0.3, 0.2], [0.2, 0.2, 0.6], 3), 12).tolist()
    [0.488, 0.296, 0.2]
    """
    opt, one_row = _run(p, q, k, method)
    return opt.a_star[0] if one_row else opt.a_star


def _run(p, q, k, method):
    one_row = as_rows(p, "p")[1] and as_rows(q, "q")[1]
    if method == "bucketed":
        return optimum_bucketed(p, q, k), one_row
    if method == "sorted":
        return optimum_sorted(p, q, k), one_row
    raise InvalidInput(f"method={method!r}: choose bucketed or sorted")
