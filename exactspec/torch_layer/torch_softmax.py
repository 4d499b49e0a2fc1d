"""``float32`` softmax as PyTorch's CPU kernel computes it on AVX2, bit for bit.

Under ``--arith float32`` with ``--sum-order torch-avx2`` (the AVX2 kernels), a softmax over
the last dimension of a contiguous ``float32`` row is computed as torch 2.14's AVX2 kernel
computes it (checked bit for bit against ``torch.softmax`` run with
``ATEN_CPU_CAPABILITY=avx2``, one thread, on random rows of 1 to 400 and 152,064 logits:
``tests/test_torch_softmax_kernel.py``, where torch is installed):

1. the maximum ``m`` of the row;
2. ``e_i = exp(x_i - m)``, the difference rounded to ``float32``, then the vectorised ``exp``
   of SLEEF that the AVX2 build links (``expf`` at 1 ulp, 8 lanes, every element the same
   function, the tail too): ``q = rint(d * (1/ln 2))``; ``s = d - q ln2_hi - q ln2_lo`` (two
   fused multiply-adds, the constant split in two ``float32`` parts); a degree-5 polynomial
   ``P`` in ``s`` by Horner's rule in fused multiply-adds; ``1 + (s s P + s)``; times
   ``2**(q >> 1)`` and ``2**(q - (q >> 1))``, two rounded multiplications (the subnormal
   results round twice); 0 below ``-104``.  Not correctly rounded: it differs from the
   correctly rounded ``exp`` on about 8% of ``float32`` inputs in ``[-110, 0]``;
3. the sum ``S`` of the ``e_i`` as the kernel's ``reduce_all`` adds them: 8 lane
   accumulators (the first vector, then each further whole vector added lane by lane, the
   tail added into its first lanes), then the lanes folded as ``((a0 + a4) + (a2 + a6)) +
   ((a1 + a5) + (a3 + a7))``; a row shorter than 8 left to right;
4. ``r = 1 / S`` rounded, and each output ``e_i * r`` rounded.

Each fused multiply-add is rounded once, as the hardware does: the exact product of two
``float32`` values plus a third is computed in ``float64`` and rounded to ``float32``, and
where the ``float64`` value is a ``float32`` midpoint (the one case where rounding twice can
differ from rounding once) it is recomputed on Fractions.

Not modelled (refused by the caller): other capabilities (AVX512's 16 lanes sum in another
order; the scalar build calls libm's ``expf``), ``float16``, ``bfloat16`` (whose tail calls
libm's ``expf``) and ``float64`` softmax, ``log_softmax`` (SLEEF's ``logf`` of the sum), a
softmax over a dimension other than the last of a contiguous tensor (another kernel).

>>> [float(v) for v in softmax_avx2([0.0, -1.0])]
[0.7310585975646973, 0.2689414322376251]
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

__all__ = ["softmax_avx2", "exp_avx2", "reduce_sum_avx2"]

_F = np.float32
_LOG2E = _F(1.442695040888963407359924681001892137426645954152985934135449406931)
_LN2_HI = _F(-0.693145751953125)
_LN2_LO = _F(-1.428606765330187045e-06)
#: the polynomial's coefficients, highest degree first (float32 values)
_POLY = [_F(c) for c in (0.000198527617612853646278381, 0.00139304355252534151077271,
                         0.00833336077630519866943359, 0.0416664853692054748535156,
                         0.166666671633720397949219, 0.5)]


def _round32(x: Fraction) -> np.float32:
    """A Fraction rounded to nearest ``float32``, ties to even (finite, below overflow)."""
    if x == 0:
        return _F(0)
    sign = -1 if x < 0 else 1
    x = abs(x)
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > x:
        e -= 1
    q = max(e - 23, -149)
    scaled = x / Fraction(2) ** q
    n, rest = divmod(scaled.numerator, scaled.denominator)
    twice = 2 * rest
    if twice > scaled.denominator or (twice == scaled.denominator and n % 2):
        n += 1
    return _F(sign * float(Fraction(n) * Fraction(2) ** q))


def _fma(a, b, c) -> np.ndarray:
    """``a * b + c`` rounded once to ``float32``, elementwise."""
    a, b, c = np.broadcast_arrays(*(np.asarray(v, _F) for v in (a, b, c)))
    wide = a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)
    out = wide.astype(_F)
    with np.errstate(invalid="ignore"):
        down = np.nextafter(out, _F(-np.inf)).astype(np.float64)
        up = np.nextafter(out, _F(np.inf)).astype(np.float64)
        here = out.astype(np.float64)
        tie = (wide == (here + down) / 2) | (wide == (here + up) / 2)
    for i in np.flatnonzero(tie & np.isfinite(wide)):
        out.flat[i] = _round32(Fraction(float(a.flat[i])) * Fraction(float(b.flat[i])) +
                               Fraction(float(c.flat[i])))
    return out


def _pow2(k) -> np.ndarray:
    return ((np.asarray(k, np.int64) + 127) << 23).astype(np.uint32).view(_F)


def exp_avx2(d) -> np.ndarray:
    """SLEEF's vectorised ``float32`` ``exp`` (1 ulp) as torch's AVX2 build computes it, of
    inputs ``d <= 0`` (a softmax's differences; ``-inf`` gives 0)."""
    d = np.asarray(d, _F)
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.where(np.isfinite(d), d, _F(-200))
        q = np.rint(finite * _LOG2E).astype(np.int32)
        qf = q.astype(_F)
        s = _fma(qf, _LN2_HI, finite)
        s = _fma(qf, _LN2_LO, s)
        u = np.full(d.shape, _POLY[0], _F)
        for c in _POLY[1:]:
            u = _fma(u, s, c)
        u = (_F(1) + _fma((s * s).astype(_F), u, s)).astype(_F)
        half = q >> 1
        u = (u * _pow2(np.maximum(half, -126))).astype(_F)
        u = (u * _pow2(np.maximum(q - half, -126))).astype(_F)
    return np.where(finite < _F(-104), _F(0), u).astype(_F)


def reduce_sum_avx2(v) -> np.float32:
    """The ``float32`` sum of ``v`` in the order of the kernel's ``reduce_all`` on AVX2."""
    v = np.asarray(v, _F)
    n = len(v)
    if n < 8:
        acc = v[0]
        for x in v[1:]:
            acc = _F(acc + x)
        return _F(acc)
    whole = n - n % 8
    acc = v[:8].copy()
    for k in range(8, whole, 8):        # lane j: left to right over v[j], v[j + 8], ...
        acc = (acc + v[k:k + 8]).astype(_F)
    tail = n - whole
    if tail:
        acc[:tail] = (acc[:tail] + v[whole:]).astype(_F)
    a = (acc[:4] + acc[4:]).astype(_F)
    return _F(_F(a[0] + a[2]) + _F(a[1] + a[3]))


def softmax_avx2(row) -> list:
    """The ``float32`` softmax of ``row`` (finite values and ``-inf``, at least one finite) as
    torch's AVX2 CPU kernel computes it; ``float32`` NumPy scalars."""
    x = np.asarray(row, _F)
    top = x.max()
    with np.errstate(invalid="ignore"):
        d = (x - top).astype(_F)
    e = exp_avx2(d)
    r = _F(_F(1) / reduce_sum_avx2(e))
    return list((e * r).astype(_F))
