"""Floating-point formats, rounded exactly: what a float kernel computes, on its binary values.

A float kernel computes its ratios, residuals and normalisations in ``float32`` (or
``bfloat16``, ``float16``, ``float64``) and draws its uniforms from the dtype's generator.  To
check such a kernel exactly, its arithmetic is modelled as IEEE 754 does it: every operation is
carried out *exactly* on the binary values of its operands (every value of these four formats is
a Python float, so a :class:`fractions.Fraction` of it is exact) and the exact result is rounded
once, to nearest with ties to even, into the format (subnormals, overflow to infinity, signed
zero).  ``exp`` and ``log`` are *correctly rounded*: the exact result is enclosed in a certified
:mod:`mpmath` interval, refined until both ends round to the same value.

- :class:`FloatFormat` and :data:`FORMATS`: the four formats, each with its generator grid
  (``torch.rand`` draws ``j / 2**d`` with ``d`` the significand bits: ``2**24`` for
  ``float32``, ``2**53`` for ``float64``, ``2**11`` for ``float16``, ``2**8`` for
  ``bfloat16``);
- :meth:`FloatFormat.round`: an exact number rounded into the format;
- :class:`FloatValue`: a value of a format; ``+ - * /``, comparisons, ``abs``, ``min``/``max``
  and Python's ``sum`` (left to right, rounded at each step) behave as the dtype does;
- :func:`exp`, :func:`log`, :func:`fsum` (left to right) and :func:`softmax`
  (``exp(x - max x)``, summed left to right, then divided), all rounded as the dtype rounds;
- :func:`elementwise`: ``exp`` and ``log`` taken from the library a kernel calls instead of
  correctly rounded (:data:`ELEMENTWISE`: ``"correct"``, ``"numpy"``, ``"torch"``).

**The platform's elementwise functions.**  IEEE 754 prescribes correct rounding for ``+ - * /``
but not for ``exp`` and ``log``: NumPy's ``float32`` ``exp`` differs from the correctly rounded
value on a large share of inputs (by one unit in the last place), so a float32 softmax row
computed with it differs from the correctly rounded row in some entry most of the time.
``elementwise="numpy"`` calls NumPy's ufunc of the format's dtype (``np.exp(np.float32(x))``)
on the exact input (every value of the format is exactly a NumPy scalar of its dtype) and reads
the result back at its exact binary value; ``"torch"`` calls PyTorch's CPU function on a tensor
of the dtype.  Only these functions change: ``+ - * /``, the sums and comparisons stay IEEE's.

>>> f32 = FORMATS["float32"]
>>> third = f32.round(Fraction(1, 3))
>>> Fraction(third)
Fraction(11184811, 33554432)
>>> x = FloatValue(third, f32)
>>> Fraction((x + x + x).value)
Fraction(1, 1)
>>> Fraction(softmax([FloatValue(0.0, f32), FloatValue(0.0, f32)])[0].value)
Fraction(1, 2)
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from fractions import Fraction

from ..core.errors import InvalidInput, Undecided

__all__ = ["FloatFormat", "FORMATS", "FloatValue", "get_format", "exp", "log", "fsum",
           "softmax", "exact_value", "ELEMENTWISE", "elementwise", "check_elementwise",
           "FloatOverflow", "ROUNDED", "ROUNDED_MAX"]

#: Where ``exp`` and ``log`` come from: correctly rounded, NumPy's ufuncs, PyTorch's CPU
#: functions.
ELEMENTWISE = ("correct", "numpy", "torch")


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format: ``precision`` significand bits (the hidden bit
    included), normal exponents ``emin..emax``, and the grid of its uniform generator.

    >>> FORMATS["float16"].max_value, FORMATS["float16"].min_subnormal
    (65504.0, 5.960464477539063e-08)
    """

    name: str
    precision: int
    emin: int
    emax: int
    grid: int

    @property
    def max_value(self) -> float:
        """The largest finite value."""
        return math.ldexp(2 ** self.precision - 1, self.emax - self.precision + 1)

    @property
    def min_subnormal(self) -> float:
        """The smallest positive value."""
        return math.ldexp(1, self.emin - self.precision + 1)

    def round(self, x) -> float:
        """``x`` (an int, Fraction or float) rounded to nearest, ties to even, into the format;
        returned as the Python float of the same value (``inf`` on overflow, ``-0.0`` for a
        negative value that rounds to zero).

        >>> f16 = FORMATS["float16"]
        >>> f16.round(Fraction(65520)), f16.round(Fraction(65519)), f16.round(Fraction(-1, 2**30))
        (inf, 65504.0, -0.0)
        """
        if isinstance(x, float):
            if not math.isfinite(x) or x == 0:
                return x
            if self.precision <= 24:
                return self._round_double(x)
            if self.precision == 53 and self.emin == -1022:
                return x                           # a Python float is already a float64
        elif self.precision <= 24 and type(x) in (int, Fraction):
            fast = self._round_rational(x)
            if fast is not None:
                return fast
        x = Fraction(x)
        if x == 0:
            return 0.0
        negative = x < 0
        a = -x if negative else x
        num, den = a.numerator, a.denominator
        e = num.bit_length() - den.bit_length()  # floor(log2 a) is e or e - 1
        if (num if e >= 0 else num << -e) < (den << e if e >= 0 else den):
            e -= 1
        e = max(e, self.emin)
        shift = e - self.precision + 1  # the spacing of the format around a is 2**shift
        if shift >= 0:
            q, r = divmod(num, den << shift)
            half = den << shift
        else:
            q, r = divmod(num << -shift, den)
            half = den
        if 2 * r > half or (2 * r == half and q & 1):
            q += 1
        if shift > self.emax + 1 or q >= (1 << (self.emax + 1 - shift)):
            out = math.inf
        else:
            out = math.ldexp(q, shift)
        return -out if negative else out

    def _round_double(self, x: float) -> float:
        """A finite non-zero Python float rounded into a format of at most 24 significand
        bits, without leaving floats: ``x`` scaled by a power of two onto the format's integer
        grid (exact), rounded half to even by ``round`` (exact on floats), scaled back."""
        e = math.frexp(x)[1] - 1                   # floor(log2 |x|)
        if e > self.emax:
            return math.copysign(math.inf, x)
        shift = (e if e > self.emin else self.emin) - self.precision + 1
        q = round(math.ldexp(x, -shift))
        if q == 0:
            return math.copysign(0.0, x)
        if abs(q) >= 1 << (self.emax + 1 - shift):
            return math.copysign(math.inf, x)
        return math.ldexp(q, shift)

    def _round_rational(self, x) -> float | None:
        """``x`` rounded through its correctly rounded binary64 value ``d``: the same result
        as rounding ``x`` itself unless ``d`` is a midpoint between two values of the format
        (every midpoint is a binary64 value and rounding is monotone, so ``x`` and ``d`` lie
        between the same two midpoints); ``None`` then, or when ``d`` is 0 or infinite."""
        try:
            d = x.numerator / x.denominator if type(x) is Fraction else float(x)
        except OverflowError:
            return None
        if d == 0 or d in (math.inf, -math.inf):
            return None
        e = math.frexp(d)[1] - 1
        if e > self.emax + 1:
            return math.copysign(math.inf, d)
        shift = (e if e > self.emin else self.emin) - self.precision + 1
        y = abs(math.ldexp(d, -shift))
        if y - math.floor(y) == 0.5:
            return None
        return self._round_double(d)

    @property
    def fast(self) -> bool:
        """Whether ``+ - * /`` may be computed in Python floats and rounded once: exact for
        ``float64`` (IEEE double itself) and for formats of at most 24 significand bits (the
        double rounding through binary64 is innocuous when ``53 >= 2 p + 2``, and no operation
        on their values overflows or underflows binary64)."""
        return (self.precision <= 24 and self.emax <= 127 and self.emin >= -126) or \
            (self.precision == 53 and self.emin == -1022 and self.emax == 1023)

    def __repr__(self):
        return f"FloatFormat({self.name})"


FORMATS = {
    "float32": FloatFormat("float32", 24, -126, 127, 2**24),
    "bfloat16": FloatFormat("bfloat16", 8, -126, 127, 2**8),
    "float16": FloatFormat("float16", 11, -14, 15, 2**11),
    "float64": FloatFormat("float64", 53, -1022, 1023, 2**53),
}


def get_format(name) -> FloatFormat:
    """The format called ``name`` (``"float32"``, ``"bfloat16"``, ``"float16"``, ``"float64"``).

    >>> get_format("float32").grid
    16777216
    """
    if isinstance(name, FloatFormat):
        return name
    if name not in FORMATS:
        raise InvalidInput(f"arith={name!r}: choose one of {', '.join(FORMATS)}")
    return FORMATS[name]


def exact_value(x):
    """The exact value of ``x``: a :class:`FloatValue`'s binary value as a Fraction (``inf``
    and ``nan`` stay floats), anything else unchanged."""
    if isinstance(x, FloatValue):
        v = x.value
        return Fraction(v) if math.isfinite(v) else v
    return x


def _ieee_special(op, a: float, b: float) -> float:
    """The IEEE result of ``op`` when an operand is infinite or NaN, the exact result is zero,
    or a division is by zero: computed in float64, which holds every value of the formats and
    whose result here (a signed zero, an infinity or NaN) needs no rounding."""
    import numpy as np

    with np.errstate(all="ignore"):
        return float(op(np.float64(a), np.float64(b)))


class FloatValue:
    """A value of a floating-point format; arithmetic rounds as the format does.

    ``value`` is the Python float with the same (exact binary) value.  Mixing with Python
    ints, Fractions or floats first rounds the constant into the format (as a tensor of that
    dtype does with a Python scalar).  ``float(x)`` is refused, so that ``math.exp`` and friends
    cannot leave the modelled arithmetic silently: use :func:`exp`, :func:`log`, :func:`softmax`
    (or ``s.exp``, ``s.log``, ``s.softmax``), and ``x.value`` for the binary value.

    >>> f16 = FORMATS["float16"]
    >>> one, tiny = FloatValue(1.0, f16), FloatValue(2.0 ** -11, f16)
    >>> (one + tiny).value, (one + tiny + tiny).value, (one + (tiny + tiny)).value
    (1.0, 1.0, 1.0009765625)
    """

    __slots__ = ("value", "fmt")
    is_format_value = True      # exact in its format: a Dist built from such values keeps them

    def __init__(self, value: float, fmt: FloatFormat):
        self.value = value
        self.fmt = fmt

    @classmethod
    def of(cls, x, fmt: FloatFormat) -> "FloatValue":
        """``x`` rounded into ``fmt`` (a FloatValue of another format is refused)."""
        if isinstance(x, FloatValue):
            if x.fmt is not fmt:
                raise InvalidInput(f"mixing a {x.fmt.name} value with a {fmt.name} value: "
                                   "convert one of them explicitly (FloatValue.of(x, fmt))")
            return x
        if isinstance(x, bool) or not isinstance(x, (int, Fraction, float)):
            raise TypeError(f"cannot combine a {fmt.name} value with {type(x).__name__} {x!r}")
        return cls(fmt.round(x), fmt)

    def _other(self, x) -> float:
        return FloatValue.of(x, self.fmt).value

    def _arith(self, a: float, b: float, op) -> "FloatValue":
        fmt = self.fmt
        if fmt.fast and not (op is operator.truediv and b == 0):
            r = op(a, b)                           # binary64, then rounded once (FloatFormat.fast)
            if fmt.precision <= 24 and r == r and r not in (math.inf, -math.inf) and r != 0:
                r = fmt._round_double(r)
            return FloatValue(r, fmt)
        return self._arith_exact(a, b, op)

    def _arith_exact(self, a: float, b: float, op) -> "FloatValue":
        """The same result through exact rationals (the reference for :meth:`_arith`)."""
        if math.isfinite(a) and math.isfinite(b) and not (op is operator.truediv and b == 0):
            result = op(Fraction(a), Fraction(b))
            if result != 0:
                return FloatValue(self.fmt.round(result), self.fmt)
        return FloatValue(self.fmt.round(_ieee_special(op, a, b)), self.fmt)

    def __add__(self, x):
        return self._arith(self.value, self._other(x), operator.add)

    def __radd__(self, x):
        return self._arith(self._other(x), self.value, operator.add)

    def __sub__(self, x):
        return self._arith(self.value, self._other(x), operator.sub)

    def __rsub__(self, x):
        return self._arith(self._other(x), self.value, operator.sub)

    def __mul__(self, x):
        return self._arith(self.value, self._other(x), operator.mul)

    def __rmul__(self, x):
        return self._arith(self._other(x), self.value, operator.mul)

    def __truediv__(self, x):
        return self._arith(self.value, self._other(x), operator.truediv)

    def __rtruediv__(self, x):
        return self._arith(self._other(x), self.value, operator.truediv)

    def __neg__(self):
        return FloatValue(-self.value, self.fmt)

    def __pos__(self):
        return self

    def __abs__(self):
        return FloatValue(abs(self.value), self.fmt)

    # comparisons are exact, as IEEE comparisons are (NaN compares false)
    def __lt__(self, x):
        return NotImplemented if _is_uniform(x) else self.value < self._other(x)

    def __le__(self, x):
        return NotImplemented if _is_uniform(x) else self.value <= self._other(x)

    def __gt__(self, x):
        return NotImplemented if _is_uniform(x) else self.value > self._other(x)

    def __ge__(self, x):
        return NotImplemented if _is_uniform(x) else self.value >= self._other(x)

    def __eq__(self, x):
        try:
            return self.value == self._other(x)
        except (TypeError, InvalidInput):
            return NotImplemented

    def __ne__(self, x):
        result = self.__eq__(x)
        return result if result is NotImplemented else not result

    def __hash__(self):
        return hash(self.value)

    def __bool__(self):
        return self.value != 0

    def __float__(self):
        raise TypeError(
            f"float() of a {self.fmt.name} value (math.exp, math.log, numpy, float(...)) would "
            f"leave the {self.fmt.name} arithmetic being checked: use s.exp(x), s.log(x) or "
            "s.softmax(xs), or x.value for its exact binary value")

    def __repr__(self):
        return f"{self.fmt.name}({self.value!r})"

    def __str__(self):
        v = self.value
        return str(Fraction(v)) if math.isfinite(v) else str(v)


def _is_uniform(x) -> bool:
    return hasattr(x, "_float_threshold")


def _as_value(x, fmt: FloatFormat | None) -> FloatValue:
    if isinstance(x, FloatValue):
        return x
    if fmt is None:
        raise InvalidInput(f"{x!r}: need a FloatValue (or give fmt=)")
    return FloatValue.of(x, fmt)


def _raw_fraction(raw) -> Fraction:
    sign, man, exp_, _ = raw
    if man == 0 and exp_ != 0:  # an infinity or NaN endpoint
        raise Undecided("interval arithmetic met an infinite endpoint")
    value = man * (Fraction(2) ** exp_)
    return -value if sign else value


#: results of :func:`_correctly_rounded` already computed, by ``(name, x, format)``: a kernel
#: takes the log of one row twice (``torch.stack([p.log(), p.log()])``), a row repeats values
ROUNDED: dict = {}
ROUNDED_MAX = 1 << 19


def _correctly_rounded(name: str, fn, x: float, fmt: FloatFormat) -> float:
    """``fn(x)`` rounded into ``fmt``: a certified interval around the exact result, refined
    until both ends round to the same value of the format (remembered)."""
    key = (name, x, fmt.name)
    hit = ROUNDED.get(key)
    if hit is None:
        hit = _certified(name, fn, x, fmt)
        if len(ROUNDED) < ROUNDED_MAX:
            ROUNDED[key] = hit
    return hit


def _certified(name: str, fn, x: float, fmt: FloatFormat) -> float:
    from mpmath import iv

    saved = iv.prec
    prec = 2 * fmt.precision + 20
    try:
        while prec <= 20_000:
            iv.prec = prec
            y = fn(iv.mpf(x))
            lo, hi = (_raw_fraction(r) for r in y._mpi_)
            a, b = fmt.round(lo), fmt.round(hi)
            if a == b and math.copysign(1, a) == math.copysign(1, b):
                return a
            prec *= 2
    finally:
        iv.prec = saved
    raise Undecided(f"{name}({x!r}) in {fmt.name}: could not decide the rounding")


def exp(x, fmt: FloatFormat | None = None) -> FloatValue:
    """``exp(x)``, correctly rounded into the format of ``x``.

    >>> f32 = FORMATS["float32"]
    >>> exp(FloatValue(1.0, f32)).value, exp(FloatValue(-200.0, f32)).value
    (2.7182817459106445, 0.0)
    """
    from mpmath import iv

    v = _as_value(x, fmt)
    f, a = v.fmt, v.value
    if math.isnan(a) or a == math.inf:
        return FloatValue(a, f)
    if a == -math.inf or a <= -746:
        return FloatValue(0.0, f)
    if a >= 710:
        return FloatValue(math.inf, f)
    if a == 0:
        return FloatValue(1.0, f)
    return FloatValue(_correctly_rounded("exp", iv.exp, a, f), f)


def log(x, fmt: FloatFormat | None = None) -> FloatValue:
    """The natural logarithm, correctly rounded (``log(0) = -inf``, ``log(x < 0)`` is NaN).

    >>> log(FloatValue(1.0, FORMATS["float32"])).value
    0.0
    """
    from mpmath import iv

    v = _as_value(x, fmt)
    f, a = v.fmt, v.value
    if math.isnan(a) or a < 0:
        return FloatValue(math.nan, f)
    if a == 0:
        return FloatValue(-math.inf, f)
    if a == math.inf or a == 1:
        return FloatValue(a if a == math.inf else 0.0, f)
    return FloatValue(_correctly_rounded("log", iv.log, a, f), f)


class FloatOverflow(InvalidInput):
    """A float run overflowed to infinity at an operation of the kernel (reported there)."""


def check_elementwise(library: str, fmt: FloatFormat | None = None) -> str:
    """``library`` checked: one of :data:`ELEMENTWISE`, and able to compute in ``fmt``
    (NumPy has no ``bfloat16``; PyTorch must be importable).

    >>> check_elementwise("numpy", FORMATS["float32"])
    'numpy'
    >>> check_elementwise("numpy", FORMATS["bfloat16"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    exactspec.core.errors.InvalidInput: elementwise='numpy': NumPy has no bfloat16 dtype ...
    """
    if library not in ELEMENTWISE:
        raise InvalidInput(f"elementwise={library!r}: choose one of {', '.join(ELEMENTWISE)}")
    if library == "numpy" and fmt is not None and fmt.name == "bfloat16":
        raise InvalidInput("elementwise='numpy': NumPy has no bfloat16 dtype (use float32, "
                           "float16 or float64, or --elementwise torch)")
    if library == "torch":
        try:
            import torch
        except ImportError:
            raise InvalidInput("elementwise='torch': PyTorch is not installed here (import "
                               "torch failed); use --elementwise numpy or correct") from None
        if not all(hasattr(torch, name) for name in ("tensor", "exp", "log", "float32")):
            raise InvalidInput(f"elementwise='torch': the module torch imported from "
                               f"{getattr(torch, '__file__', '?')} is not PyTorch")
    return library


def _library_call(library: str, name: str, a: float, fmt: FloatFormat) -> float:
    """``name`` (``exp``, ``log``) of the library, on the exact value ``a`` in ``fmt``'s dtype;
    the result at its exact binary value (a Python float)."""
    if library == "numpy":
        import numpy as np

        dtype = {"float32": np.float32, "float16": np.float16, "float64": np.float64}[fmt.name]
        with np.errstate(all="ignore"):
            out = getattr(np, name)(dtype(a))
        if out.dtype != np.dtype(dtype):
            raise AssertionError(f"internal: np.{name} on {fmt.name} gave {out.dtype}")
        return float(out)
    import torch

    dtype = {"float32": torch.float32, "float16": torch.float16, "float64": torch.float64,
             "bfloat16": torch.bfloat16}[fmt.name]
    out = getattr(torch, name)(torch.tensor(a, dtype=dtype, device="cpu"))
    if out.dtype != dtype:
        raise AssertionError(f"internal: torch.{name} on {fmt.name} gave {out.dtype}")
    return float(out.item())


def elementwise(name: str, x, library: str = "correct", fmt: FloatFormat | None = None
                ) -> FloatValue:
    """``exp`` or ``log`` of ``x`` as ``library`` computes it in ``x``'s format: correctly
    rounded (:func:`exp`, :func:`log`), or NumPy's / PyTorch's function evaluated on the exact
    input and read back exactly.

    >>> f32 = FORMATS["float32"]   # NumPy's float32 exp is one unit in the last place off here
    >>> x = FloatValue(-61 / 16, f32)
    >>> elementwise("exp", x, "correct").value, elementwise("exp", x, "numpy").value
    (0.022092876955866814, 0.022092878818511963)
    """
    if name not in ("exp", "log"):
        raise InvalidInput(f"elementwise function {name!r}: exp or log")
    v = _as_value(x, fmt)
    if library == "correct":
        return exp(v) if name == "exp" else log(v)
    check_elementwise(library, v.fmt)
    out = _library_call(library, name, v.value, v.fmt)
    return FloatValue(v.fmt.round(out) if math.isfinite(out) else out, v.fmt)


def fsum(values, fmt: FloatFormat | None = None) -> FloatValue:
    """``((v0 + v1) + v2) + ...``, each addition rounded (the order a sequential loop has).

    >>> f16 = FORMATS["float16"]
    >>> fsum([FloatValue(1.0, f16)] + [FloatValue(2.0 ** -11, f16)] * 4).value
    1.0
    """
    values = list(values)
    if not values:
        raise InvalidInput("fsum of nothing: give at least one value")
    total = _as_value(values[0], fmt)
    for v in values[1:]:
        total = total + v
    return total


def softmax(logits, fmt: FloatFormat | None = None, library: str = "correct") -> list:
    """``exp(x_i - max x) / sum_j exp(x_j - max x)`` as a kernel computes it in the format:
    the differences, each ``exp`` (correctly rounded, or ``library``'s: :func:`elementwise`),
    the sum (left to right) and each quotient rounded.

    >>> f32 = FORMATS["float32"]  # log(3) is not a float: the two do not even sum to 1
    >>> [str(v) for v in softmax([0.0, math.log(3.0)], f32)]
    ['1/4', '12582913/16777216']
    """
    values = [_as_value(x, fmt) for x in logits]
    if not values:
        raise InvalidInput("softmax of nothing: give at least one logit")
    top = values[0]
    for v in values[1:]:
        if v > top:
            top = v
    weights = [elementwise("exp", v - top, library) for v in values]
    total = fsum(weights)
    return [w / total for w in weights]
