"""Compiled loops for :func:`.optimum.optimum_bucketed`, when numba is installed.

``pip install 'exactspec[fast]'`` installs numba.  Without it, with ``compiled=False``, for
``k > 8``, or with the environment variable ``EXACTSPEC_NO_NUMBA`` set (to anything but
empty or ``0``), the NumPy code runs instead.  The loops compute what the NumPy passes they
replace compute (the buckets' masses as ``bincount`` with four lanes does, in the same order;
the run followed whole, as :func:`.optimum._follow_whole_run` does), one pass where NumPy
makes a dozen: on long rows the arithmetic is no longer spread over passes that each read
the row from memory.  The running sums are those of :func:`._arrays.prefix_sum` (split
terms, summed as floats) rather than its integer form, so the two paths agree to a few
roundings, not to the bit (``tests/test_numpy_backend.py`` checks both against the exact
twin and against each other).

numba is imported and the loops compiled on the first call of :func:`load`, not on import;
compiled code is cached beside this file (numba's ``cache=True``; in numba's user cache
folder where this one is read-only), so only the first call on a machine pays for compiling.
"""

from __future__ import annotations

import os
import threading
import types

import numpy as np

__all__ = ["load", "loaded", "available"]

_LOADED: list = []                                       # [namespace or None], once loaded
_LOADING = threading.Lock()                              # one thread compiles; others wait


def loaded() -> bool:
    """Whether the compiled loops are loaded in this process already (no import here)."""
    return bool(_LOADED) and _LOADED[0] is not None


def available() -> bool:
    """Whether the compiled loops can run here (numba importable, not switched off)."""
    return load() is not None


def load():
    """The compiled loops as a namespace (``ratio_keys``, ``bucket_masses``, ``run_keys``,
    ``run_order``, ``follow_run``), or None without numba or when switched off."""
    if _LOADED:
        return _LOADED[0]
    with _LOADING:
        if not _LOADED:
            _LOADED.append(_compile())
    return _LOADED[0]


def _compile():
    kernels = None
    if os.environ.get("EXACTSPEC_NO_NUMBA", "") in ("", "0"):
        try:
            import numba
        except ImportError:
            pass
        else:
            for cache in (True, False):                  # no writable cache folder: no cache
                try:
                    jit = numba.njit(cache=cache, nogil=True, error_model="numpy")
                    kernels = types.SimpleNamespace(**{name: jit(globals()[name])
                                                       for name in _NAMES})
                    _warm_up(kernels)
                    break
                except Exception:                        # noqa: BLE001 - fall back to NumPy
                    kernels = None
    return kernels


_NAMES = ("ratio_keys", "bucket_masses", "run_keys", "run_order", "follow_run")


def _warm_up(kernels):
    """Compile (or load from the cache) every loop for the argument types the row routine
    passes, on a three-token row, and check one result: a loop that does not compile or
    computes nonsense here leaves the NumPy passes in charge."""
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.2, 0.6])
    work = np.zeros((8, 3))
    ratio, out = work[0], work[1]
    keys = work[2].view(np.int64)
    kmin, kmax = kernels.ratio_keys(p, q, 1.0, 48, ratio, ratio.view(np.int64), keys, out)
    nb = int(kmax - kmin + 3)
    ends = np.zeros((2, nb + 1))
    kernels.bucket_masses(keys, p, q, int(kmin - 1), nb, ends)
    sort_keys = work[3].view(np.int64)
    m = kernels.run_keys(keys, ratio.view(np.int64), 1, nb - 2, 3, sort_keys)
    sort_keys[:m].view(np.float64).sort()
    run = work[4].view(np.int64)
    kernels.run_order(sort_keys[:m], 3, run[:m])
    alpha = kernels.follow_run(run[:m], out, q, 1.0, 0.0, 0.0, 0.0, 2, *np.zeros((3, 3)))
    if m != 3 or abs(alpha - 0.84) > 1e-12:              # docs/math.md#worked-values, k = 2
        raise ArithmeticError(f"compiled loops: alpha* = {alpha}, expected 0.84")


# -- the loops (plain Python here; load() compiles them) --------------------------------

def ratio_keys(p, q, sp, shift, ratio, ratio_bits, keys, out):
    """``out = p / sp``; ``ratio = q / p`` (``inf`` where ``p = 0``); ``keys`` the ratio's
    float bits shifted right by ``shift``.  Returns the smallest and the largest key."""
    n = p.shape[0]
    for j in range(n):
        out[j] = p[j] / sp
    for j in range(n):
        pj = p[j]
        ratio[j] = q[j] / pj if pj > 0.0 else np.inf
    kmin = np.int64(1) << 62
    kmax = np.int64(-1)
    for j in range(n):
        key = ratio_bits[j] >> shift
        keys[j] = key
        kmin = min(kmin, key)
        kmax = max(kmax, key)
    return kmin, kmax

def bucket_masses(keys, p, q, offset, nb, ends):
    """Bucket of each token (``key - offset`` clipped to ``[0, nb - 1]``, written back into
    ``keys``) and the masses of ``p`` and ``q`` per bucket into ``ends[0, 1:]`` and
    ``ends[1, 1:]``: four lanes (token ``j`` into lane ``j mod 4``, so that neighbours in one
    bucket do not wait on each other's additions) added up in order, as ``bincount`` on
    ``4 bucket + lane`` and a sum over the lanes do; a bucket's two masses side by side."""
    table = np.zeros((nb, 4, 2))
    last = nb - 1
    for j in range(keys.shape[0]):
        b = min(max(keys[j] - offset, 0), last)
        keys[j] = b
        lane = j & 3
        table[b, lane, 0] += p[j]
        table[b, lane, 1] += q[j]
    for r in range(2):
        for b in range(nb):
            ends[r, b + 1] = ((table[b, 0, r] + table[b, 1, r]) + table[b, 2, r]) \
                + table[b, 3, r]


def run_keys(buckets, ratio_bits, first, last, low_mask, keys):
    """The sort keys of the tokens in buckets ``first..last`` in token order (the ratio's
    float bits with the token index in the low ``low_mask`` bits); returns how many."""
    m = 0
    high = ~low_mask
    for j in range(buckets.shape[0]):
        b = buckets[j]
        if first <= b <= last:
            keys[m] = (ratio_bits[j] & high) | j
            m += 1
    return m

def run_order(keys, low_mask, run):
    """Token of each sorted key into ``run``; the keys keep only their ratio bits.
    Returns whether two neighbours have the same truncated ratio."""
    m = keys.shape[0]
    ties = False
    previous = np.int64(-1)
    high = ~low_mask
    for i in range(m):
        key = keys[i]
        run[i] = key & low_mask
        key &= high
        keys[i] = key
        if key == previous:
            ties = True
        previous = key
    return ties

def follow_run(run, out, q, sq, P_start, Q_start, M0, k, P, rest, power):
    """``a*`` of the sorted run into ``out`` (which holds ``p / sp``) by following
    ``h_j = g_k(Q_j) - P_j`` and its running minimum; returns ``alpha*`` (``k <= 8``).
    ``P``, ``rest``, ``power``: scratch, at least as long as ``run``.

    ``P_j`` and ``Q_j`` are the running sums of :func:`._arrays.prefix_sum`: each term
    split into a multiple of ``2^-51`` (``(x + 2) - 2``), whose running sum below 2 is
    exact in a float, and a remainder below ``2^-52`` summed apart (its rounding at most
    ``m^2 2^-105`` in all), added at the end: within one rounding of the exact sums.
    ``a*_j = max(0, p_j + (M_j - M_{j-1}))``, as in :func:`.optimum._follow_whole_run`."""
    m = run.shape[0]
    high_p = 0.0
    low_p = 0.0
    high_q = 0.0
    low_q = 0.0
    for i in range(m):
        t = run[i]
        pj = out[t]
        qj = q[t] / sq
        hi = (pj + 2.0) - 2.0
        high_p += hi
        low_p += pj - hi
        hi = (qj + 2.0) - 2.0
        high_q += hi
        low_q += qj - hi
        P[i] = (high_p + low_p) + P_start
        r = 1.0 - ((high_q + low_q) + Q_start)
        rest[i] = r if r > 0.0 else 0.0
    # rest ** k by repeated squaring, a pass per step, in the order of _power_into
    first = True
    while k:
        if k & 1:
            if first:
                for i in range(m):
                    power[i] = rest[i]
                first = False
            else:
                for i in range(m):
                    power[i] *= rest[i]
        k >>= 1
        if k:
            for i in range(m):
                rest[i] *= rest[i]
    M = M0
    for i in range(m):
        h = (1.0 - power[i]) - P[i]
        previous = M
        if h < M:
            M = h
        t = run[i]                      # out[t] still holds p_t: each token once
        a = (M - previous) + out[t]
        out[t] = a if a > 0.0 else 0.0
    return 1.0 + M
