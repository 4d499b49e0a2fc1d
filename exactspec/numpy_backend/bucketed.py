"""``alpha*`` and ``a*`` by buckets and a partial sort (:func:`optimum_bucketed`, NumPy only):
the ratios ``q/p`` bucketed by their leading bits, and only the tokens whose ``a*`` can differ
from ``p`` sorted; the walk along that run in chunks, and numba's loops when loaded.  The
formulas and the tolerances: :mod:`exactspec.numpy_backend.optimum`.

>>> import numpy as np
>>> opt = optimum_bucketed(np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.2, 0.6]), 2)
>>> round(float(opt.alpha_star[0]), 12), np.round(opt.a_star[0], 12).tolist()
(0.84, [0.36, 0.28, 0.2])
"""

from __future__ import annotations

import math
import numbers
import os

import numpy as np

from ..core.errors import InvalidInput
from . import _kernels
from ._arrays import (EPS, INT_PREFIX_MAX, SCRATCH, fix_ties, g_float, power_by_squaring,
                      prefix_sum, prefix_sums_into)
from .float_optimum import FloatOptimum, accepted_from_prefixes, check_k, pair_rows

__all__ = ["COMPILED_MIN_TOKENS", "optimum_bucketed"]

def optimum_bucketed(p, q, k: int, *, bits: int = 4,
                     compiled: bool | None = None) -> FloatOptimum:
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

    Why nothing else can change the answer (docs/math.md#the-optimum: ``alpha* = 1 + min_j h_j``
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

    Most of a run is usually one chain of records: from a state where ``h`` equals its running
    minimum, a token whose step ``g_k(Q_j) - g_k(Q_{j-1})`` is below its ``p_j`` lowers ``h``,
    so it is a record and its ``a*`` is that step, and the next state is again such a state.
    Along a chain only ``Q_j`` is needed (no ``P_j``, no running minimum): :func:`_walk_run`
    takes the buckets that a test per bucket proves (:func:`_sure_chain`), then tests token
    by token (:func:`_chain_length`), and where the chain breaks follows ``h`` and its running
    minimum as above, a window at a time, until a clear record starts a chain again.  A chain
    token's ``a*`` is a difference of two powers, each within ``(k + 2) eps + k 3 eps``:
    within ``(8k + 5) eps``, inside the same bound.

    The working arrays (a few rows of ``|V|`` floats) are kept between calls, per thread
    (:class:`._arrays._Scratch`): fresh arrays of that size cost page faults on every call.

    With numba installed (``pip install 'exactspec[fast]'``) and ``k <= 8``, the passes over
    the row and the walk along the run are compiled loops (:mod:`._kernels`): the same
    buckets and run, the run followed whole (no chains needed: a loop costs little per
    token), ``P_j`` and ``Q_j`` as the split running sums of :func:`prefix_sum` (within one
    rounding of the exact sums, as above), so the same bounds hold; the two paths agree
    within a few roundings.  ``compiled=None`` (default) takes the loops when numba is
    importable and either they are already loaded in this process or the call has at least
    :data:`COMPILED_MIN_TOKENS` tokens in all (loading numba takes about half a second, which
    a small call would not earn back); ``False`` never; ``True`` insists (an error without
    numba or for ``k > 8``).  The first call on a machine compiles them (a few seconds;
    cached on disk after that).

    Same result as :func:`optimum_sorted` within its tolerance (and the same tolerance
    against the exact twin); ``order`` and ``tight`` are not computed.  ``sorted_tokens``
    says how many tokens were sorted per row.

    >>> import numpy as np
    >>> opt = optimum_bucketed(np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.2, 0.6]), 2)
    >>> round(float(opt.alpha_star[0]), 12), np.round(opt.a_star[0], 12).tolist()
    (0.84, [0.36, 0.28, 0.2])
    """
    k = check_k(k)
    if not isinstance(bits, numbers.Integral) or not 0 <= bits <= 20:
        raise InvalidInput(f"bits={bits!r}: choose an integer from 0 to 20")
    if compiled not in (None, True, False):
        raise InvalidInput(f"compiled={compiled!r}: choose None (numba when installed), "
                           "True or False")
    P, Q, sums_p, sums_q = pair_rows(p, q, np, sums=True)
    kernels = None
    if compiled is not False and k <= _DIFF_K and (
            compiled or _kernels.loaded() or P.size >= COMPILED_MIN_TOKENS):
        kernels = _kernels.load()
    if compiled and kernels is None:
        raise InvalidInput("compiled=True needs numba (pip install 'exactspec[fast]') and "
                           f"k <= {_DIFF_K}" + (" (EXACTSPEC_NO_NUMBA is set)"
                                               if os.environ.get("EXACTSPEC_NO_NUMBA") else ""))
    batch, n = P.shape
    alpha = np.empty(batch)
    a = np.empty((batch, n))
    counts = np.empty(batch, dtype=np.intp)
    for b in range(batch):                               # a loop over the batch only
        alpha[b], counts[b] = _bucketed_row(np.ascontiguousarray(P[b]),
                                            np.ascontiguousarray(Q[b]), k, int(bits), a[b],
                                            float(sums_p[b]), float(sums_q[b]), kernels)
    return FloatOptimum(alpha_star=alpha, a_star=a, order=None, tight=None, k=k,
                        method="bucketed", sorted_tokens=counts)


#: With ``compiled=None``, numba's loops are loaded (about half a second, once per process)
#: for a call with at least this many tokens in all, and used by every call once loaded.
COMPILED_MIN_TOKENS = 1_000_000
_INF_BITS = 0x7FF0000000000000
#: Up to this many drafts the bucketed ``a*`` is a difference of ``F_j = P_j + M_j``.
_DIFF_K = 8


def _power_into(base, k: int, result):
    """``base ** k`` (``k >= 1``) into ``result`` by the repeated squaring of
    :func:`._arrays.power_by_squaring` (same products, same rounding); ``base`` is
    overwritten."""
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
_ROW_SCRATCH = 13


def _bucketed_row(p, q, k, bits, out, sp, sq, kernels=None):
    """One row of :func:`optimum_bucketed` (``sp``, ``sq``: the sums of ``p`` and ``q``):
    writes ``a*`` into ``out``, returns ``(alpha*, tokens sorted)``.  Working arrays are
    scratch rows kept between calls."""
    n = p.shape[0]
    work = SCRATCH.rows(_ROW_SCRATCH, n + 1)
    if kernels is not None:
        return _compiled_row(p, q, k, bits, out, sp, sq, work, kernels)
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
    kmin, kmax, has_zero, has_inf = _key_range(ids, kmin, kmax, inf_key)
    nb = kmax - kmin + 3                                 # bucket 0: q/p = 0; nb - 1: p = 0
    ids -= kmin - 1
    if has_zero:
        np.maximum(ids, 0, out=ids)
    if has_inf:
        np.minimum(ids, nb - 1, out=ids)
    p_zero = _ratio_zero(p, sp, ids, out) if has_zero else 0.0
    if nb == 3 and not np.any(ids == 1):                 # every ratio is 0 or infinite
        return 1.0 - p_zero, 0

    # the bucket masses: four interleaved tables (token j adds into lane j mod 4), so that
    # neighbouring tokens in one bucket do not wait on each other's additions
    ids <<= 2
    ids |= SCRATCH.lanes(n)
    ends = np.zeros((2, nb + 1))                         # P and Q at the end of each bucket
    np.add.reduce(np.bincount(ids, p, 4 * nb).reshape(nb, 4), axis=1, out=ends[0, 1:])
    np.add.reduce(np.bincount(ids, q, 4 * nb).reshape(nb, 4), axis=1, out=ends[1, 1:])
    active_buckets, hi = _active_buckets(ends, kmin, kmax, nb, shift, sp, sq, k, n)
    if not active_buckets.size:
        return 1.0 + min(0.0, -p_zero), 0

    # one run from the first active bucket to the last: the buckets in between are sorted
    # too (a value sort of a few more tokens costs less than a pass per run), so the masses
    # before the run are one pairwise sum over the earlier tokens
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
    M0 = min(0.0, -p_zero)                               # M before the run
    tokens = chosen.nonzero()[0]                         # token order
    m = tokens.size
    run, ps, qs = _sort_run(p, q, out, sq, ratio_bits, tokens, work)
    # the walk by record chains needs state 0 to be a record (first_b = 1: h = -p(q = 0) =
    # M_0) and k <= 8; short runs take fewer array calls followed whole
    if m <= _SHORT_RUN or first_b != 1 or k > _DIFF_K:
        return _follow_whole_run(run, ps, qs, k, P_start, Q_start, M0, out, work), m
    bucket_keys = np.arange(kmin, last + kmin, dtype=np.int64) << shift
    starts = work[2, :m].view(np.int64).searchsorted(bucket_keys)   # each bucket's start

    # Q_j (integer running sums, exact to one rounding) and g_k along the run; state j is
    # "the first j tokens of the run taken", state 0 the masses before the run
    Q_state = work[8, :m + 1]
    Q_state[0] = Q_start
    if m <= INT_PREFIX_MAX:
        prefix_sums_into(qs, Q_state[1:], work[0, :m], work[2, :m])
    else:                                                # the integer sums could overflow
        Q_state[1:] = prefix_sum(qs)
    if Q_start:
        Q_state[1:] += Q_start
    rest = work[9, :m + 1]                               # 1 - Q_j, clipped at 0
    np.subtract(1.0, Q_state, out=rest)
    np.maximum(rest, 0.0, out=rest)
    slope, power = _powers_into(rest, k, work[10, :m + 1], work[11, :m + 1], work[0, :m + 1])
    step = work[4, :m]                                   # g_k(Q_j) - g_k(Q_{j-1})
    np.subtract(power[:-1], power[1:], out=step)

    a_run = work[5, :m]                                  # a* in run order
    sure = _sure_chain(starts, Q_state, hi[:last], k, n)
    alpha = _walk_run(ps, qs, step, slope, power, Q_state, a_run, k, n, P_start, M0, sure,
                      work)
    out[run] = a_run
    return alpha, m


def _key_range(keys, kmin, kmax, inf_key):
    """The smallest and largest key of a finite positive ratio (from the smallest and largest
    of all), and whether some ratio is 0 (or below ``2^-1022``: ``a* = 0``) or infinite
    (``p = 0``: last, ``a* = 0 = p``)."""
    has_zero, has_inf = kmin == 0, kmax == inf_key
    if has_zero:
        positive_keys = keys[keys > 0]
        kmin = int(positive_keys.min()) if positive_keys.size else inf_key
    if has_inf:
        finite = keys[(keys > 0) & (keys < inf_key)]
        if finite.size == 0:
            kmin = kmax = 1
        else:
            kmax = int(finite.max())
    return kmin, kmax, has_zero, has_inf


def _ratio_zero(p, sp, buckets, out):
    """``a* = 0`` for the tokens of bucket 0 (``q/p = 0``); returns their mass of ``p``."""
    zero = buckets == 0
    out[zero] = 0.0
    return float(p[zero].sum()) / sp


def _active_buckets(ends, kmin, kmax, nb, shift, sp, sq, k, n):
    """The buckets that can hold a new running minimum (numbered from 1), and the upper ends
    of the buckets' normalised ratio intervals, from the buckets' masses (``ends[0, 1:]``:
    ``p``, ``ends[1, 1:]``: ``q``; turned into running sums of the normalised rows in
    place)."""
    occupied = ends[0, 2:nb] > 0                         # an empty bucket changes nothing
    np.add.accumulate(ends, axis=1, out=ends)
    ends[0] /= sp
    ends[1] /= sq
    PB, QB = ends

    # bucket b = 1..nb-2 holds raw ratios in [lo, hi); normalised ratio = raw * sp / sq
    edges = (np.arange(kmin, kmax + 2, dtype=np.int64) << shift).view(np.float64)
    edges *= sp / sq
    lo = edges[:-1] * (1 - 1e-12)
    hi = edges[1:] * (1 + 1e-12)
    Q0, P0 = QB[1:nb - 1], PB[1:nb - 1]
    dP, dQ = np.subtract(ends[:, 2:nb], ends[:, 1:nb - 1])
    # the path inside the bucket: Q >= Q0 + lo (P - P0) and Q >= Q1 - hi (P1 - P); with g
    # increasing and concave, h >= g(max of the two) - P, concave on each side of the kink;
    # g at the bucket ends and at the kinks in one evaluation
    dA = hi * dP                                         # P-increment at the kink
    dA -= dQ
    dA /= hi - lo
    np.maximum(dA, 0.0, out=dA)
    np.minimum(dA, dP, out=dA)
    at = np.empty(2 * nb - 1)
    at[:nb + 1] = QB
    kink_q = at[nb + 1:]
    np.multiply(lo, dA, out=kink_q)
    np.maximum(kink_q, 0.0, out=kink_q)
    np.minimum(kink_q, dQ, out=kink_q)
    kink_q += Q0
    g = g_float(k, at)
    hB = g[:nb + 1] - PB
    bound = g[nb + 1:] - P0
    bound -= dA
    np.minimum(bound, hB[1:nb - 1], out=bound)
    np.minimum(bound, hB[2:nb], out=bound)
    M_upper = np.minimum.accumulate(np.minimum(hB[1:nb - 1], 0.0))  # running min of end points
    M_upper += 1e-12 + 8 * n * EPS                       # margin
    candidates = ~(bound >= M_upper)                     # NaN counts as active
    candidates &= occupied
    active_buckets = candidates.nonzero()[0] + 1
    return active_buckets, hi


def _compiled_row(p, q, k, bits, out, sp, sq, work, kernels):
    """:func:`_bucketed_row` with numba's compiled loops (:mod:`._kernels`, ``k <= 8``): the
    same buckets (masses to the bit), bounds and run; the run followed whole in one loop, as
    :func:`_follow_whole_run` does, with the running sums of :func:`prefix_sum`."""
    n = p.shape[0]
    shift = 52 - bits
    inf_key = _INF_BITS >> shift
    ratio = work[0, :n]
    ratio_bits = ratio.view(np.int64)
    buckets = work[1, :n].view(np.int64)
    kmin, kmax = kernels.ratio_keys(p, q, sp, shift, ratio, ratio_bits, buckets, out)
    kmin, kmax, has_zero, has_inf = _key_range(buckets, kmin, kmax, inf_key)
    nb = kmax - kmin + 3                                 # bucket 0: q/p = 0; nb - 1: p = 0
    ends = np.zeros((2, nb + 1))
    kernels.bucket_masses(buckets, p, q, kmin - 1, nb, ends)
    p_zero = _ratio_zero(p, sp, buckets, out) if has_zero else 0.0
    if nb == 3 and not np.any(buckets == 1):             # every ratio is 0 or infinite
        return 1.0 - p_zero, 0
    active_buckets, hi = _active_buckets(ends, kmin, kmax, nb, shift, sp, sq, k, n)
    if not active_buckets.size:
        return 1.0 + min(0.0, -p_zero), 0
    first_b, last = int(active_buckets[0]), int(active_buckets[-1])
    if first_b == 1:
        P_start, Q_start = p_zero, 0.0
    else:
        before = buckets < first_b
        P_start = float(p[before].sum()) / sp
        Q_start = float(q[before].sum()) / sq
    low_bits = max(1, (n - 1).bit_length())
    low_mask = (1 << low_bits) - 1
    keys = work[2, :n].view(np.int64)
    m = kernels.run_keys(buckets, ratio_bits, first_b, last, low_mask, keys)
    keys = keys[:m]
    keys.view(np.float64).sort()                         # finite positive floats: same order
    run = work[3, :m].view(np.int64)
    if kernels.run_order(keys, low_mask, run):          # equal truncated ratios: exact order
        ties = np.equal(keys[1:], keys[:-1])             # by the exact ratio, then the token
        fix_ties(run[None, :], 0, ties, p[None, :], q[None, :], np)
    alpha = kernels.follow_run(run, out, q, sq, P_start, Q_start, min(0.0, -p_zero), k,
                                *work[4:7, :m])
    return alpha, m


#: Runs up to this many tokens are followed whole (:func:`_follow_whole_run`): the record
#: chain saves per token but costs more array calls.
_SHORT_RUN = 4096


def _follow_whole_run(run, ps, qs, k, P_start, Q_start, M0, out, work):
    """``a*`` of the run's tokens into ``out`` by following ``h`` and its running minimum over
    the whole run (``P_j`` and ``Q_j`` as integer running sums of both rows at once);
    returns ``alpha*``."""
    m = run.shape[0]
    masses = work[6:8, :m]                               # ps and qs, one above the other
    if m <= INT_PREFIX_MAX:
        PQ = prefix_sums_into(masses, work[8:10, :m], work[10:12, :m], work[0:2, :m])
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
    M = work[12, :m + 1]
    M[0] = M0
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
        out[run] = accepted_from_prefixes(k, ps, qs, h, h_prev, M[:-1], Q_prev, np)
    return alpha


def _sort_run(p, q, out, sq, ratio_bits, tokens, work):
    """The run's tokens in ``q/p`` order (scratch row 3), and their normalised masses
    ``ps``, ``qs`` in that order (rows 6 and 7)."""
    m = tokens.size
    # sort the ratios as values: the float bits with the token index in the low bits (a
    # non-negative float64 read as an int64 orders like the float)
    low_bits = max(1, (p.shape[0] - 1).bit_length())
    low_mask = (1 << low_bits) - 1
    keys = work[2, :m].view(np.int64)
    ratio_bits.take(tokens, out=keys, mode="clip")       # in range: no check
    keys &= ~low_mask
    keys |= tokens
    keys.view(np.float64).sort()                         # finite positive floats: same order
    run = work[3, :m].view(np.int64)
    np.bitwise_and(keys, low_mask, out=run)
    keys ^= run                                          # the truncated ratios
    ties = work[1].view(np.bool_)[:m - 1]
    np.equal(keys[1:], keys[:-1], out=ties)              # equal truncated ratios: exact order
    if ties.any():                                       # by the exact ratio, then the token
        fix_ties(run[None, :], 0, ties, p[None, :], q[None, :], np)
    ps, qs = work[6, :m], work[7, :m]
    out.take(run, out=ps, mode="clip")                   # p / sp
    q.take(run, out=qs, mode="clip")
    qs /= sq
    return run, ps, qs


#: The record chain restarts at most this many times in a row (after which the rest of the
#: run is followed token by token, as a whole).
_MAX_RESTARTS = 8
#: Tokens looked at per step when following ``h`` between chains (grows 4x each time).
_WINDOW = 1024


def _walk_run(ps, qs, step, slope, power, Q_state, a_run, k, n, P_start, M0, sure, work):
    """``a*`` along the sorted run into ``a_run`` (``k <= 8``, state 0 a record, the first
    ``sure`` tokens records); returns ``alpha*``.

    Two ways to walk, alternating, starting with a chain.  *Chain*: from a state where ``h``
    equals its running
    minimum, tokens whose step of ``g_k`` provably stays below their ``p`` are records with
    ``a* =`` the step (:func:`_chain_length`); only the masses' total is needed.  *Follow*:
    ``h_j = g_k(Q_j) - P_j`` with ``P_j`` as integer running sums and its running minimum,
    ``a*_j = p_j + (M_j - M_{j-1})`` (as :func:`optimum_sorted`), a window at a time; a token
    that takes ``h`` clearly below the minimum (by more than the rounding of two ``h``) is a
    record again and the chain restarts after it.
    """
    m = ps.shape[0]
    pos, P_now, M_now = 0, P_start, M0
    chain, restarts, window = True, 0, _WINDOW
    # h within (4k + 6) eps of exact (see optimum_bucketed): a drop larger than twice that is
    # a record in exact arithmetic too
    clear_drop = 2 * (4 * k + 6) * EPS
    while pos < m:
        if chain:
            length, sure = sure, 0                       # the first chain: known records
            if m - pos - length > _WINDOW:               # else following the rest is cheaper
                length += _chain_length(ps[pos + length:], qs[pos + length:],
                                        step[pos + length:],
                                        None if slope is None else slope[pos + length:],
                                        Q_state[pos + length:], k, n, work)
            if length:
                end = pos + length
                a_run[pos:end] = step[pos:end]
                P_now += float(np.add.reduce(ps[pos:end]))
                pos = end
            M_now = min(M_now, (1.0 - float(power[pos])) - P_now)
            if pos == m:
                break
            chain = False
            restarts += 1
        follow_all = restarts > _MAX_RESTARTS or m - pos <= 2 * _WINDOW
        size = m - pos if follow_all else min(m - pos, window)
        window *= 4
        end = pos + size
        P_run = work[2, :size]
        if size <= INT_PREFIX_MAX:
            prefix_sums_into(ps[pos:end], P_run, work[0, :size], work[1, :size])
        else:
            P_run[:] = prefix_sum(ps[pos:end])
        if P_now:
            P_run += P_now
        M = work[12, :size + 1]
        M[0] = M_now
        h = M[1:]
        np.subtract(1.0, power[pos + 1:end + 1], out=h)
        h -= P_run
        np.minimum.accumulate(M, out=M)
        drop = a_run[pos:end]
        np.subtract(M[1:], M[:-1], out=drop)
        # a*_j = p_j + (M_j - M_{j-1}): exactly p_j where the minimum does not move; each M
        # within (4k + 6) 2^-53 of exact, so a* within (8k + 15) 2^-53 < 1e-14 for k <= 8
        if not follow_all:
            records = (drop < -clear_drop).nonzero()[0]
            if records.size:                             # restart after the first clear record
                end = pos + int(records[0]) + 1
                drop = drop[:end - pos]
                chain = True
        drop += ps[pos:end]
        np.maximum(drop, 0.0, out=drop)
        P_now, M_now = float(P_run[end - pos - 1]), float(M[end - pos])
        pos = end
    return 1.0 + M_now


def _powers_into(rest, k: int, slope, power, spare):
    """``rest^(k-1)`` and ``rest^k`` (``k >= 1``), products of ``k - 1`` roundings at most;
    returns the two arrays (views of ``rest`` where no product is needed)."""
    if k == 1:
        return None, rest
    if k == 2:
        np.multiply(rest, rest, out=power)
        return rest, power
    if k == 4:
        np.multiply(rest, rest, out=spare)
        np.multiply(spare, rest, out=slope)
        np.multiply(spare, spare, out=power)
        return slope, power
    np.copyto(spare, rest)
    _power_into(spare, k - 1, slope)
    np.multiply(slope, rest, out=power)
    return slope, power


def _sure_chain(starts, Q_state, upper, k, n):
    """How many tokens from the start of the run are records by a test per bucket.

    A bucket of the run whose ratios lie below ``upper`` and that starts at ``Q``
    (``starts``: its first position in the run) passes the tangent test of
    :func:`_chain_length` for every token in it when ``k (1 - Q + e)^(k-1) upper (1 +
    2^-30) < 1`` (the step of a token is at most ``k (1 - Q_{j-1})^(k-1) q_j`` and ``q_j <
    upper p_j``; ``e = (log2 |V| + 22) eps`` bounds the error of the float ``Q``, so ``1 - Q +
    e`` is at least the exact ``1 - Q``).  The buckets before the first that fails hold only
    records; :func:`_chain_length` tests the rest token by token.
    """
    m = Q_state.shape[0] - 1
    bound = upper * (k * (1.0 + _TANGENT_SLACK))
    if k > 1:
        rest = 1.0 + (math.log2(max(n, 2)) + 22) * EPS - Q_state.take(starts, mode="clip")
        bound *= power_by_squaring(np.maximum(rest, 0.0), k - 1)
    failing = (~(bound < 1.0)).nonzero()[0]              # NaN fails
    return int(starts[failing[0]]) if failing.size else m


#: Relative slack of the tangent test in :func:`_chain_length` (far above the rounding it
#: must cover, about ``400 k 2^-53`` for ``k <= 8``).
_TANGENT_SLACK = 2.0 ** -30
#: The tangent test is used while ``1 - Q`` stays at or above this (so that its rounding
#: stays small relative to it).
_REST_FLOOR = 2.0 ** -10


def _chain_length(ps, qs, step, slope, Q_state, k, n, work):
    """How many tokens from the start of the run provably make ``h`` decrease.

    Token ``j`` (from a state that is a record) is a record with ``a*_j = g_k(Q_j) -
    g_k(Q_{j-1})`` exactly when that step is below ``p_j`` (docs/math.md#the-optimal-accepted-token-law:
    ``a*_j = p_j + min(0, h_j - M_{j-1})`` and ``h_j - h_{j-1} = step - p_j``).  Either of two
    float tests proves it:

    * the step itself: ``step < p (1 - 2^-39) - c eps``, where ``c eps`` bounds the error of
      the float step against the exact one (``(6k + 2) eps`` from the roundings of ``Q``, ``1 -
      Q`` and the powers, and ``k^2 (log2 |V| + 21) eps`` from the rounded row sums the rows were
      normalised by) and the relative ``2^-39`` the same for ``p``; good for large tokens;
    * the tangent: ``g_k`` is concave, so the step is at most ``g_k'(Q_{j-1}) q_j =
      k (1 - Q_{j-1})^(k-1) q_j``; the test ``q_j (1 - Q_{j-1})^(k-1) < p_j / (k (1 + 2^-30))``
      has relative rounding far below ``2^-30`` while ``1 - Q_{j-1} >= 2^-10``; good for small
      tokens, whose float step is all cancellation.

    The chain ends at the first token that passes neither (from there :func:`_walk_run`
    follows ``h`` and its running minimum).
    """
    m = ps.shape[0]
    if not m:
        return 0
    lim = work[2, :m]
    flags = work[1].view(np.bool_)
    passed = flags[:m]
    tangent = flags[m:2 * m]
    gamma = math.log2(max(n, 2)) + 21
    np.multiply(ps, 1.0 - 2.0 ** -39, out=lim)
    lim -= (6 * k + 2 + k * k * gamma) * EPS
    np.less(step, lim, out=passed)
    product = work[0, :m]
    if slope is None:
        product = qs
    else:
        np.multiply(qs, slope[:-1], out=product)
    np.multiply(ps, 1.0 / (k * (1.0 + _TANGENT_SLACK)), out=lim)
    np.less(product, lim, out=tangent)
    floor = int(Q_state[:m].searchsorted(1.0 - _REST_FLOOR, side="right"))
    tangent[floor:] = False
    passed |= tangent
    first_failure = int(passed.argmin())
    return m if passed[first_failure] else first_failure
