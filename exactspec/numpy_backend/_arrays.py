"""Array helpers for the float routines: namespaces, rows, compensated prefix sums, the
cumulative minimum and the ``q/p`` order.

Everything here works along the last axis of a ``(batch, |V|)`` array and loops over nothing
longer than a batch.  The functions take an array namespace ``xp`` (NumPy by default) and use
only array-API operations, except where a NumPy fast path is marked.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from ..core.errors import InvalidInput, NotExact

__all__ = ["EPS", "namespace", "as_rows", "as_labels", "normalized", "prefix_sum",
           "cumulative_min", "ratio_key", "ratio_order", "g_float", "g_increment",
           "INT_PREFIX_MAX", "SCRATCH", "fix_ties", "float64_values", "power_by_squaring",
           "prefix_sums_into", "rows_and_sums"]

#: The unit roundoff of float64 (half an ulp of 1).
EPS = 2.0 ** -53

#: Adding and subtracting 2 rounds a value in ``[0, 2]`` to a multiple of ``2^-51`` exactly.
_SPLIT = 2.0


def namespace(xp: Any = None):
    """The array namespace to use: ``xp``, or NumPy when ``None``."""
    return np if xp is None else xp


def float64_values(x: Any) -> Any:
    """Dists and sequences of exact numbers as float64 values (correctly rounded)."""
    probs = getattr(x, "probs", None)
    if probs is not None and hasattr(x, "labels"):        # a Dist
        return [float(getattr(v, "expr", v)) for v in probs]
    if isinstance(x, Mapping):
        return [float(v) for v in x.values()]
    if isinstance(x, (list, tuple)) and x and isinstance(x[0], (Fraction, str)):
        return [float(Fraction(v)) for v in x]
    return x


def as_labels(x: Any, n: int) -> tuple:
    """The token labels of ``x`` (a Dist or mapping), else ``0..n-1``."""
    if hasattr(x, "labels") and hasattr(x, "probs"):
        return tuple(x.labels)
    if isinstance(x, Mapping):
        return tuple(x.keys())
    return tuple(range(n))


def as_rows(x: Any, name: str = "p", xp: Any = None):
    """``x`` as a 2-D float64 array of non-negative rows; also says whether it was 1-D.

    Accepts a Dist (exact values rounded to the nearest float), a mapping, a list or an
    array of shape ``(|V|,)`` or ``(batch, |V|)``.  Rows need not sum to 1: every routine
    normalises them, like ``Dist(..., normalize=True)``.

    >>> rows, was_1d = as_rows([0.5, 0.25, 0.25])
    >>> rows.shape, was_1d
    ((1, 3), True)
    """
    arr, was_1d, _ = rows_and_sums(x, name, xp)
    return arr, was_1d


#: Rows whose sums lie outside ``[2^-32, 2^32]`` are rescaled by a power of two (exact).
_SCALE_LIMIT = 2.0 ** 32


def rows_and_sums(x: Any, name: str = "p", xp: Any = None):
    """:func:`as_rows`, and the sums of the rows (shape ``(batch,)``).

    A row whose sum is far from 1 (outside ``[2^-32, 2^32]``, an overflowing sum included) is
    multiplied by a power of two that brings its largest entry into ``[1/2, 1)``: exact, except
    for entries that fall below ``2^-1022`` of that largest one, which then lose low bits (an
    absolute change under ``2^-1074`` of the row's largest entry).  The routines divide rows by
    their sums, so nothing else changes; ratios ``q/p`` between two rows given at very
    different scales (``p * 1e-300`` against ``q * 1e300``) stay finite.

    >>> rows, _, sums = rows_and_sums(np.array([3 * 2.0 ** -1000, 2.0 ** -1000]))
    >>> rows.tolist(), sums.tolist()
    ([[0.75, 0.25]], [1.0])
    """
    xp = namespace(xp)
    if xp is np and type(x) is np.ndarray and x.dtype == np.float64 and x.ndim in (1, 2) \
            and x.size:                                  # the common case, without wrappers
        arr = x.reshape(1, -1) if x.ndim == 1 else x
        with np.errstate(over="ignore"):
            sums = np.add.reduce(arr, axis=-1)           # inf or nan here iff in the row,
        if not np.isfinite(sums).all() and not np.isfinite(arr).all():  # or an overflow
            raise NotExact(f"{name} holds a value that is not a finite number")
        if np.minimum.reduce(arr, axis=None) < 0:
            raise InvalidInput(f"{name} holds a negative value")
        arr, sums = _rescaled(arr, sums)
        if (sums <= 0).any():
            raise InvalidInput(f"{name} has a row that sums to 0: nothing to normalize")
        return arr, x.ndim == 1, sums
    try:
        arr = xp.asarray(float64_values(x), dtype=xp.float64)
    except (TypeError, ValueError) as err:
        raise InvalidInput(f"{name}: cannot read as an array of probabilities ({err})") from None
    if arr.ndim not in (1, 2):
        raise InvalidInput(f"{name} must have shape (|V|,) or (batch, |V|), got {arr.shape}")
    was_1d = arr.ndim == 1
    if was_1d:
        arr = xp.reshape(arr, (1, arr.shape[0]))
    if arr.shape[-1] == 0:
        raise InvalidInput(f"{name} is empty: a distribution needs at least one token")
    if arr.shape[0] == 0:
        raise InvalidInput(f"{name} has no rows")
    with np.errstate(over="ignore"):
        sums = xp.sum(arr, axis=-1)                       # inf or nan here iff in the row,
    if not bool(xp.all(xp.isfinite(sums))) and not bool(xp.all(xp.isfinite(arr))):
        raise NotExact(f"{name} holds a value that is not a finite number")  # or an overflow
    if bool(xp.min(arr) < 0):
        raise InvalidInput(f"{name} holds a negative value")
    if xp is np:
        arr, sums = _rescaled(arr, sums)
    elif not bool(xp.all((sums >= 1 / _SCALE_LIMIT) & (sums <= _SCALE_LIMIT))):
        raise InvalidInput(f"{name} has a row whose sum is outside [2^-32, 2^32]: "  # pragma: no cover
                           "normalise it first (or pass a NumPy array)")
    if bool(xp.any(sums <= 0)):
        raise InvalidInput(f"{name} has a row that sums to 0: nothing to normalize")
    return arr, was_1d, sums


def _rescaled(arr, sums):
    """Rows whose sums lie outside ``[2^-32, 2^32]`` (or overflow) times a power of two that
    brings their largest entry into ``[1/2, 1)``, and the new sums (NumPy arrays)."""
    far = ~((sums >= 1 / _SCALE_LIMIT) & (sums <= _SCALE_LIMIT))
    if not far.any():
        return arr, sums
    arr = np.array(arr, dtype=np.float64)                # a copy: the caller's rows stay
    rows = far.nonzero()[0]
    top = np.maximum.reduce(arr[rows], axis=-1)
    _, exponent = np.frexp(top)                          # top = m 2^e with m in [1/2, 1)
    exponent[top == 0] = 0                               # an all-zero row stays (refused)
    arr[rows] = np.ldexp(arr[rows], -exponent[:, None])
    sums = np.array(sums, dtype=np.float64)
    sums[rows] = np.add.reduce(arr[rows], axis=-1)
    return arr, sums


def normalized(x, xp: Any = None):
    """Rows divided by their sums (NumPy sums pairwise: relative error about
    ``(log2 |V| + 16) * 2^-53`` for non-negative terms)."""
    xp = namespace(xp)
    return x / xp.sum(x, axis=-1, keepdims=True)


def prefix_sum(x, xp: Any = None):
    """Running sums along the last axis, to within one rounding of the exact prefix sums.

    For non-negative rows summing to about 1 (at most 2).  Each term is split into a multiple
    of ``2^-51`` (``(x + 2) - 2``, exact) and a remainder below ``2^-52``; running sums of the
    first parts stay below 2 on that grid, so they are exact, and the remainders are too small
    for their own rounding to matter (at most ``|V|^2 2^-105`` in all).  Equivalent to
    ``[math.fsum(row[:j + 1]) for j in range(len(row))]``; a plain ``cumsum`` can be off by
    ``|V| 2^-53``.

    >>> float(prefix_sum(np.array([[0.1] * 10]))[0, -1]) == math.fsum([0.1] * 10)
    True
    """
    xp = namespace(xp)
    if xp is np and x.dtype == np.float64 and x.size and x.shape[-1] <= INT_PREFIX_MAX:
        shifted = x + _SPLIT
        if shifted.min() >= _SPLIT and shifted.max() < 2 * _SPLIT:
            return _integer_prefix_sum(x, shifted)
    hi = (x + _SPLIT) - _SPLIT
    lo = x - hi
    return _cumsum(hi, xp) + _cumsum(lo, xp)


#: Integer prefix sums up to this many terms per row (the remainders' sums fit in an int64).
INT_PREFIX_MAX = 1 << 20
_SPLIT_BITS = np.float64(_SPLIT).view(np.int64)
_ROUNDER = 1.5 * 2.0 ** 52                               # adding it rounds |y| < 2^51 to an int
_ROUNDER_BITS = np.float64(_ROUNDER).view(np.int64)


def _integer_prefix_sum(x, shifted):
    """:func:`prefix_sum` on integers (NumPy): running integer sums are several times faster
    than running float sums here, and exact.

    ``shifted = x + 2`` lies in ``[2, 4)``, where floats are spaced ``2^-51``, so its bits
    minus those of 2 are ``hi / 2^-51`` exactly, with ``hi = shifted - 2`` the split of
    :func:`prefix_sum`.  The remainder ``lo = x - hi`` (exact, ``|lo| <= 2^-52``) is rounded to
    a multiple of ``2^-94`` (``|lo| 2^94 <= 2^42``, so ``2^20`` of them sum within int64).  Both
    running sums are exact integers; the result is ``H 2^-51 + L 2^-94`` with one rounding
    each for the conversion of ``L`` and the final addition, and at most ``|V| 2^-95`` from
    rounding the remainders: within one rounding of the exact prefix sums, as before.
    """
    high = shifted.view(np.int64) - _SPLIT_BITS
    low = x - (shifted - _SPLIT)
    low *= 2.0 ** 94
    low += _ROUNDER
    low_int = low.view(np.int64)
    low_int -= _ROUNDER_BITS
    np.cumsum(high, axis=-1, out=high)
    np.cumsum(low_int, axis=-1, out=low_int)
    total = high.astype(np.float64)
    total *= 2.0 ** -51
    total += low_int.astype(np.float64) * 2.0 ** -94
    return total


def prefix_sums_into(x, result, spare, spare2):
    """:func:`_integer_prefix_sum` in caller-owned buffers (NumPy, float64, no temporaries):
    running sums along the last axis of ``x``, whose entries must lie in ``[0, 2)`` with
    sums below 2 and at most :data:`INT_PREFIX_MAX` per row.  ``x`` is kept; ``result``
    receives the sums (and is returned); ``spare`` and ``spare2`` (same shape) are
    overwritten.  The same values, to the bit, as :func:`prefix_sum` on those rows.
    """
    np.add(x, _SPLIT, out=spare)                         # x + 2 in [2, 4): spacing 2^-51
    np.subtract(spare, _SPLIT, out=result)               # hi, exact
    np.subtract(x, result, out=spare2)                   # lo = x - hi, exact
    high = spare.view(np.int64)
    high -= _SPLIT_BITS                                  # hi / 2^-51
    spare2 *= 2.0 ** 94
    spare2 += _ROUNDER
    low = spare2.view(np.int64)
    low -= _ROUNDER_BITS                                 # lo / 2^-94, rounded
    np.add.accumulate(high, axis=-1, out=high)
    np.add.accumulate(low, axis=-1, out=low)
    np.multiply(high, 2.0 ** -51, out=result)
    np.multiply(low, 2.0 ** -94, out=spare)              # high is spent: reuse its memory
    result += spare
    return result


class _Scratch(threading.local):
    """Scratch rows kept between calls, one set per thread.

    Fresh temporaries the size of a vocabulary row (hundreds of kilobytes) are handed back to
    the operating system when freed and fault their pages in again on the next call: on long
    rows that costs as much as the arithmetic.  The row routines take their working arrays
    from here instead; nothing returned to a caller is a view of them.  Only rows up to
    :data:`SCRATCH_MAX_TOKENS` tokens are kept (longer rows get fresh arrays each call).
    """

    block = None
    lane_pattern = None

    def rows(self, count: int, size: int):
        """A ``(count, size)`` float64 array of scratch (uninitialised) rows."""
        block = self.block
        if block is None or block.shape[0] < count or block.shape[1] < size:
            if size > SCRATCH_MAX_TOKENS:
                return np.empty((count, size))
            cap = size if block is None else max(size, block.shape[1])
            # rows 8 * (cap mod 512) = 376 bytes apart modulo a page: copies between two
            # rows a near-multiple of 4 KiB apart run several times slower on x86
            cap = -(-cap // 512) * 512 + 47
            block = np.empty((max(count, 0 if block is None else block.shape[0]), cap))
            self.block = block
        return block[:count, :size]

    def lanes(self, size: int):
        """``0, 1, 2, 3, 0, 1, ...`` (int64), ``size`` entries."""
        pattern = self.lane_pattern
        if pattern is None or pattern.shape[0] < size:
            pattern = np.arange(max(size, 1024), dtype=np.int64) & 3
            if size <= SCRATCH_MAX_TOKENS:
                self.lane_pattern = pattern
        return pattern[:size]


#: The longest row whose scratch arrays are kept between calls (at most thirteen rows of
#: float64 per thread: about 26 MiB at this size).
SCRATCH_MAX_TOKENS = 1 << 18

SCRATCH = _Scratch()


def _cumsum(x, xp):
    if hasattr(xp, "cumulative_sum"):
        return xp.cumulative_sum(x, axis=-1)
    return xp.cumsum(x, axis=-1)                         # pragma: no cover - older NumPy


def cumulative_min(x, xp: Any = None):
    """Running minimum along the last axis.

    NumPy's ``minimum.accumulate`` when the namespace has it, else a log-step doubling scan
    (``ceil(log2 |V|)`` array operations) that any array-API library can run.

    >>> cumulative_min(np.array([[3.0, 1.0, 2.0, 0.5]]))
    array([[3. , 1. , 1. , 0.5]])
    """
    xp = namespace(xp)
    minimum = getattr(xp, "minimum", None)
    if minimum is not None and hasattr(minimum, "accumulate"):
        return minimum.accumulate(x, axis=-1)
    n = x.shape[-1]
    shift = 1
    while shift < n:
        pad = xp.full(x.shape[:-1] + (shift,), math.inf, dtype=x.dtype)
        x = xp.minimum(x, xp.concat([pad, x[..., :-shift]], axis=-1))
        shift *= 2
    return x


def _two_product(a, b):
    """``a * b = hi + lo`` exactly (Dekker's product with Veltkamp splitting)."""
    hi = a * b
    a_hi, a_lo = _split(a)
    b_hi, b_lo = _split(b)
    lo = ((a_hi * b_hi - hi) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    return hi, lo


def _split(a):
    c = 134217729.0 * a                                  # 2^27 + 1
    hi = c - (c - a)
    return hi, a - hi


def ratio_key(p, q, xp: Any = None):
    """The ratio ``q/p`` as a double-double ``(hi, lo)``; ``(inf, 0)`` where ``p = 0``.

    ``hi`` is the rounded quotient and ``lo`` the rounded ``(q - hi p) / p`` (the remainder
    ``q - hi p`` is exact: Dekker's product, then Sterbenz), so sorting by ``(hi, lo)`` orders
    tokens by their exact ratio unless two ratios differ by less than about ``2^-105``
    relative; exactly equal ratios give equal keys.  A ratio above the largest float
    (``p`` subnormal) becomes ``(inf, 0)`` and ties with ``p = 0``; such a token has
    ``a* <= p < 2^-1022``, so the order among them cannot matter beyond that.
    """
    xp = namespace(xp)
    positive = p > 0
    safe_p = xp.where(positive, p, 1.0)
    with np.errstate(over="ignore", invalid="ignore"):   # q/p above 1.8e308: see docstring
        hi = xp.where(positive, q / safe_p, math.inf)
        h, l = _two_product(xp.where(positive & xp.isfinite(hi), hi, 0.0), safe_p)
        rem = (q - h) - l
        lo = xp.where(positive & xp.isfinite(hi), rem / safe_p, 0.0)
    return hi, lo


def _ratio_hi(p, q, xp):
    positive = p > 0
    with np.errstate(over="ignore"):
        return xp.where(positive, q / xp.where(positive, p, 1.0), math.inf)


def ratio_order(p, q, xp: Any = None):
    """Token indices sorted by ``q/p`` ascending, ``p = 0`` last, ties by token index.

    The float twin of :func:`exactspec.optimum.alpha_star.optimal_order`: one sort of the rounded
    ratios, then the runs of equal rounded ratios are re-sorted by the double-double key of
    :func:`ratio_key` and the token index (in NumPy the sort is of packed integer keys,
    :func:`_packed_order`, whose runs of equal truncated keys are re-sorted the same way).  Agrees with the exact order except between two
    ratios closer than about ``2^-105`` relative (ties there go by index).

    >>> ratio_order(np.array([[0.5, 0.3, 0.2]]), np.array([[0.2, 0.2, 0.6]]))
    array([[0, 1, 2]])
    """
    xp = namespace(xp)
    hi = _ratio_hi(p, q, xp)
    if xp is np:
        order, ties = _packed_order(hi)
    else:
        order = xp.argsort(hi, axis=-1)
        sorted_hi = xp.take_along_axis(hi, order, axis=-1)
        ties = sorted_hi[..., 1:] == sorted_hi[..., :-1]
    if not bool(xp.any(ties)):
        return order
    for b in range(order.shape[0]):                      # a loop over the batch only
        tie_row = ties[b]
        if not bool(xp.any(tie_row)):
            continue
        order = fix_ties(order, b, tie_row, p, q, xp)
    return order


def _packed_order(hi):
    """The order of non-negative ratios ``hi`` (no NaN) by one sort of values, not indices.

    A non-negative float64 read as an int64 orders like the float (``+inf`` included).  Its
    low ``s = bit_length(|V| - 1)`` bits are replaced by the token index and the keys are
    sorted as plain integers (``numpy.sort`` of values runs about three times faster than
    ``numpy.argsort`` on this kind of CPU); the order is the low bits of the sorted keys.
    Truncating the ratios keeps their order weakly, so the result is the exact order of the
    rounded ratios except inside runs of equal truncated keys, where it is by index: those
    runs are returned in ``ties`` (``ties[..., j]``: positions ``j`` and ``j + 1`` share a
    truncated key) for :func:`ratio_order` to re-sort by the exact ratio, as it does for equal
    rounded ratios.
    """
    n = hi.shape[-1]
    shift = max(1, (n - 1).bit_length())
    keys = hi.view(np.int64) >> shift
    keys <<= shift
    keys |= np.arange(n, dtype=np.int64)
    keys.sort(axis=-1)
    order = keys & ((1 << shift) - 1)
    keys >>= shift
    return order, keys[..., 1:] == keys[..., :-1]


def fix_ties(order, b, tie_row, p, q, xp):
    """Re-sort the runs of equal rounded ratios in row ``b`` by the exact ratio, then index."""
    false = xp.zeros((1,), dtype=xp.bool)
    in_run = xp.concat([tie_row, false]) | xp.concat([false, tie_row])
    positions = xp.nonzero(in_run)[0]
    tokens = xp.take(order[b], positions)
    pp, qq = xp.take(p[b], tokens), xp.take(q[b], tokens)
    hi, lo = ratio_key(pp, qq, xp)
    # lexicographic (hi, lo, token): stable sorts from the last key to the first
    perm = xp.argsort(tokens, stable=True)
    perm = xp.take(perm, xp.argsort(xp.take(lo, perm), stable=True))
    perm = xp.take(perm, xp.argsort(xp.take(hi, perm), stable=True))
    if xp is np:
        order[b, positions] = tokens[perm]
        return order
    row = xp.asarray(order[b], copy=True)                 # pragma: no cover - other libraries
    row[positions] = xp.take(tokens, perm)
    return xp.concat([order[:b], row[None, :], order[b + 1:]], axis=0)


def power_by_squaring(x, k: int):
    """``x ** k`` for an integer ``k >= 0`` by repeated squaring (much faster than ``pow``)."""
    result = None
    base = x
    while k:
        if k & 1:
            result = base if result is None else result * base
        k >>= 1
        if k:
            base = base * base
    return result if result is not None else x * 0.0 + 1.0


def g_float(k: int, x, xp: Any = None):
    """``g_k(x) = 1 - (1 - x)^k`` in floats, with ``1 - x`` clipped at 0 (absolute error
    within ``(k + 2) 2^-53`` of the exact value at the same ``x``)."""
    xp = namespace(xp)
    return 1.0 - power_by_squaring(xp.maximum(1.0 - x, 0.0), k)


#: Up to this many drafts :func:`g_increment` runs Horner's scheme (``k`` steps).
_HORNER_MAX_K = 64


def g_increment(k: int, before, step, xp: Any = None):
    """``g_k(before + step) - g_k(before)`` to a few ulps *relative*, even for tiny ``step``.

    With ``a = 1 - before`` and ``b = a - step`` it is ``a^k - b^k = step * sum_i a^i
    b^(k-1-i)``, so nothing cancels (Horner's scheme over ``k`` terms).  Above
    :data:`_HORNER_MAX_K` drafts it is ``a^k (1 - (b/a)^k) = -a^k expm1(k log1p(-step/a))``
    instead (NumPy), nothing cancelling either and a few operations whatever ``k``.
    """
    xp = namespace(xp)
    a = xp.maximum(1.0 - before, 0.0)
    if k > _HORNER_MAX_K and xp is np:
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.minimum(np.where(a > 0, step / np.where(a > 0, a, 1.0), 1.0), 1.0)
            rest = -np.expm1(k * np.log1p(-ratio))           # 1 - (b/a)^k, b/a = 1 - ratio
        return power_by_squaring(a, k) * rest
    b = xp.maximum(a - step, 0.0)
    total = xp.ones_like(a)
    b_power = xp.ones_like(a)
    for _ in range(k - 1):                                # a loop over k only
        b_power = b_power * b
        total = total * a + b_power
    return xp.minimum(a, step) * total
