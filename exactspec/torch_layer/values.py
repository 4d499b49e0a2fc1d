"""One element of a tensor: casts into a dtype and the arithmetic of two elements.

In the exact run a float element is an exact number (division by zero gives ``inf`` or ``nan``
as IEEE does, other arithmetic stays exact); under ``--arith`` it is a
:class:`~exactspec.engine.floats.FloatValue` of its dtype's format and each operation is
rounded once.  A Python float met in user code is taken at its exact binary value in the exact
run (counted on the sampler's ``floats``) and rounded into the dtype under ``--arith`` as torch
converts it: a Python number (a double or an int64), an ``int64`` value or a ``float64`` value
goes into ``float16``/``bfloat16`` through ``float32`` (c10's ``Half(float)`` and
``BFloat16(float)``: two roundings, ``1 + 2**-11 + 2**-40`` is ``1.0`` in ``float16``, checked
against torch 2.14).  A ``float16``/``bfloat16`` multiplication or division by a Python number
(or a one-element tensor of another dtype) computes in ``float32``, torch's "opmath", with the
number rounded to ``float32`` (:func:`opmath_scalar`, :func:`opmath_arith`).

>>> from .dtypes import float32, int64
>>> cast(0.5, float32), cast(Fraction(-7, 2), int64)
(Fraction(1, 2), -3)
>>> divide(Fraction(1), Fraction(0)), divide(Fraction(0), Fraction(0))
(inf, nan)
"""

from __future__ import annotations

import math
import operator
import os
import sys
from fractions import Fraction

from ..engine.floats import FORMATS, FloatValue, exact_value
from ..core.signals import CannotProceed
from .context import CURRENT, current, refuse, undecided
from .dispatch import (ARITH, CAST, NUMBER_TEST, OPMATH, OPMATH_SCALAR, UNSET, binary_rule,
                       is_random)
from .log_rationals import LogRational

__all__ = ["UNSET", "cast", "cast_row", "divide", "is_random", "is_nan", "exact_number", "arith",
           "HALF_FORMATS", "opmath_scalar", "opmath_arith", "scalar_to", "check_python_int",
           "count_literal"]

#: exactspec's own code (frames in it are not the user's place of a float literal)
_PACKAGE = os.path.realpath(os.path.join(os.path.dirname(__file__), os.pardir)) + os.sep

#: The formats torch's CPU kernels compute in ``float32`` ("opmath") and round into.
HALF_FORMATS = ("float16", "bfloat16")

_F32 = FORMATS["float32"]
_F64 = FORMATS["float64"]


def is_nan(v) -> bool:
    """Whether the element ``v`` is a NaN (a value without one number, a value of the draft's
    branches, is refused by its type's rule, :data:`~.dispatch.NUMBER_TEST`)."""
    t = type(v)
    if t is Fraction:                              # the common case first
        return False
    if t in NUMBER_TEST:
        v = NUMBER_TEST[t](v, "tested for nan")
    if isinstance(v, float):
        return v != v
    if isinstance(v, FloatValue):
        return v.value != v.value
    return False


def exact_number(v):
    """The exact value of a non-random element: a Fraction (``inf``/``nan`` stay floats), an
    exact sympy number, or a Python int/bool unchanged."""
    if isinstance(v, FloatValue):
        return exact_value(v)
    if isinstance(v, float):
        if math.isfinite(v):
            return Fraction(v)
        return v
    return v


def _from_python_float(v: float):
    if not math.isfinite(v):
        return v
    sampler = current().sampler
    if sampler is not None and hasattr(sampler, "floats"):
        count_literal(sampler, v)
    return Fraction(v)


_OURS: dict = {}          # code file name -> whether it is exactspec's own


def _ours(name: str) -> bool:
    hit = _OURS.get(name)
    if hit is None:
        hit = _OURS[name] = os.path.realpath(name).startswith(_PACKAGE)
    return hit


def count_literal(sampler, v: float) -> None:
    """Count the Python float ``v`` taken at its exact value on ``sampler.floats`` once per
    place of the user's code that hands it over (a file, a line and the value) for the whole
    enumeration: a literal (``clamp(min=1e-9)``, ``torch.finfo(...).tiny``) is one float
    however many paths, elements or calls read it."""
    frame = sys._getframe(1)
    while frame is not None and _ours(frame.f_code.co_filename):
        frame = frame.f_back
    site = (frame.f_code.co_filename, frame.f_lineno, v) if frame is not None else ("?", 0, v)
    seen = getattr(sampler, "_float_literals", None)
    if seen is None:
        seen = set()
        try:
            sampler._float_literals = seen
        except AttributeError:           # a sampler without room for it: every float counted
            sampler.floats += 1
            return
    if site not in seen:
        seen.add(site)
        sampler.floats += 1


def cast(v, dtype):
    """``v`` held as a value of ``dtype`` in the current run."""
    t = type(v)
    if dtype.kind == "float":                      # the common cases first (no value type's)
        fmt = CURRENT[-1].fmt
        if t is Fraction and fmt is None:
            return v
        if t is FloatValue and fmt is not None and v.fmt.name == dtype.name:
            return v
    if t in CAST:                                  # a value type's own cast (a draft axis)
        return CAST[t](v, dtype, cast)
    if t is not Fraction and t is not FloatValue and getattr(t, "lazy_count", False):
        if dtype.kind == "int" or dtype.kind == "bool":   # a lazy count (factored route)
            return v
        raise CannotProceed("a drawn token converted to a non-integer dtype")
    if v is UNSET:
        raise refuse("read of torch.empty memory that was never written")
    kind = dtype.kind
    if kind == "bool":
        if is_random(v):
            raise undecided("bool of a random value: compare it with a threshold first")
        return bool(exact_number(v) != 0) if not isinstance(v, bool) else v
    if kind == "int":
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, int):
            return _in_int_range(v, dtype)
        if is_random(v):
            raise undecided("an integer of a random value is beyond the exact method: "
                            "compare the value with a threshold instead")
        x = exact_number(v)
        if isinstance(x, float):
            raise refuse(f"converting {x} to {dtype.name}: not a finite number")
        return _in_int_range(int(x), dtype)   # truncation toward zero, as .to(int64) does
    fmt = None if current().exact else FORMATS[dtype.name]
    if is_random(v):
        widen = getattr(v, "widen", None)
        if widen is not None and fmt is not None:     # a uniform of another dtype's grid
            return widen(fmt)
        base = getattr(v, "base", None)
        vfmt = getattr(base, "fmt", None)
        if fmt is not None and vfmt is not None and vfmt is not fmt:
            raise refuse(f"a uniform of the {vfmt.name} generator used as {dtype.name}: under "
                         f"--arith the random constructors draw {vfmt.name} values")
        return v
    if fmt is None:
        if isinstance(v, bool):
            return Fraction(int(v))
        if isinstance(v, int):
            return Fraction(v)
        if isinstance(v, float):
            return _from_python_float(v)
        if isinstance(v, FloatValue):
            return exact_value(v)
        return v
    if isinstance(v, FloatValue):
        if v.fmt is fmt:
            return v
        x = v.value
        if fmt.name in HALF_FORMATS and v.fmt is _F64 and x == x:
            x = _F32.round(x)                  # float64 to a half format through float32
        return FloatValue(fmt.round(x), fmt)
    if isinstance(v, bool):
        v = int(v)
    if isinstance(v, (int, float)):
        if fmt.name in HALF_FORMATS:           # a double or an int64 through float32, as c10
            return FloatValue(fmt.round(_F32.round(v)), fmt)
        return FloatValue(fmt.round(v), fmt)
    if isinstance(v, Fraction):                # exactspec's exact numbers: rounded once
        return FloatValue(fmt.round(v), fmt)
    raise refuse(f"a {type(v).__name__} value in a {dtype.name} tensor under --arith "
                 f"{fmt.name}: not a number of the format")


def _in_int_range(v: int, dtype) -> int:
    """``v`` when ``dtype`` holds it; refused otherwise, as torch refuses it (``torch.tensor(
    [2**63])``: "Overflow when unpacking long long"; ``torch.full((2,), 2**63)``: "value
    cannot be converted to type int64_t without overflow")."""
    bound = 1 << (dtype.bits - 1)
    if -bound <= v < bound:
        return v
    raise refuse(f"value {v} cannot be converted to type {dtype.name} without overflow (its "
                 f"range is -2**{dtype.bits - 1} to 2**{dtype.bits - 1} - 1; torch refuses it "
                 "too)")


def check_python_int(v) -> None:
    """A Python int operand torch cannot hold as a scalar (outside ``[-2**63, 2**64)``:
    "int too big to convert") is refused."""
    if type(v) is int and not -(1 << 63) <= v < (1 << 64):
        raise refuse(f"the Python int {v} as a tensor operand: torch holds a number as a "
                     "64-bit scalar and refuses it (OverflowError: int too big to convert)")


def scalar_to(value, dtype):
    """A Python number given as a value to fill with (``full``, ``fill_``, ``masked_fill``,
    ``new_full``) or as a ``clamp`` bound, converted into ``dtype`` as torch's
    ``Scalar::to`` converts it: a finite number beyond the dtype's largest value is refused
    (``torch.full((2,), 1e5, dtype=torch.float16)``: "value cannot be converted to type
    c10::Half without overflow"; infinities pass), an int outside the integer dtype's range
    too; otherwise the value :func:`cast` gives."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction, FloatValue)):
        return cast(value, dtype)
    check_python_int(value)
    if dtype.kind == "float":
        x = exact_number(value)
        if not isinstance(x, float) and abs(x) > Fraction(FORMATS[dtype.name].max_value):
            raise refuse(f"value {_text(value)} cannot be converted to type {dtype.name} "
                         f"without overflow (its largest value is "
                         f"{FORMATS[dtype.name].max_value:g}; torch refuses it too)")
    elif dtype.kind == "int":
        x = exact_number(value)                # a float truncated toward zero, as torch does
        if isinstance(x, float):
            raise refuse(f"value {x} cannot be converted to type {dtype.name} without "
                         "overflow (torch refuses it too)")
        _in_int_range(int(x), dtype)
    return cast(value, dtype)


def _text(v) -> str:
    if isinstance(v, FloatValue):
        return repr(v.value)
    return repr(v) if not isinstance(v, Fraction) else str(v)


def opmath_scalar(v):
    """The ``float32`` value torch's CPU kernel multiplies or divides a ``float16`` or
    ``bfloat16`` tensor by, for a scalar operand ``v`` (a Python number, or the one element of
    a tensor of another dtype): ``v`` rounded to ``float32`` (a double, an int64, a
    ``float64`` value; a ``float32`` or half value is exact); on every draft branch for a
    branched ``v``; ``None`` for anything else (a random value), which takes the usual route.

    >>> opmath_scalar(0.1).value == float(Fraction(13421773, 2**27)), opmath_scalar(True)
    (True, float32(1.0))
    """
    t = type(v)
    if t is bool:
        return FloatValue(float(v), _F32)
    if t is int or t is float or t is Fraction:
        return FloatValue(_F32.round(v), _F32)
    if t is FloatValue:
        x = v.value
        return FloatValue(_F32.round(x) if v.fmt is _F64 else x, _F32)
    if t in OPMATH_SCALAR:                          # on every draft branch
        return OPMATH_SCALAR[t](v, opmath_scalar)
    return None


def opmath_arith(op, x, s, fmt):
    """``x op s`` as torch's CPU kernel computes a ``float16``/``bfloat16`` multiplication or
    division by a scalar: ``x`` (a value of ``fmt``) widened to ``float32``, the operation
    rounded to ``float32``, the result rounded into ``fmt`` (``s`` from :func:`opmath_scalar`);
    on every draft branch for branched values; an increasing rounded expression of a uniform
    (``u * 0.1``) maps each grid value so.  ``None`` where ``x`` is none of these (the caller
    takes the usual route).

    >>> f16 = FORMATS["float16"]
    >>> opmath_arith(operator.mul, FloatValue(3.0, f16), opmath_scalar(0.1), f16).value * 4096
    1229.0
    """
    if type(x) is FloatValue and type(s) is FloatValue:
        return FloatValue(fmt.round(op(FloatValue(x.value, _F32), s).value), fmt)
    if type(x) in OPMATH or type(s) in OPMATH:     # a value type's own (on every branch)
        return binary_rule(OPMATH, x, s)(op, x, s, fmt, opmath_arith)
    if type(s) is FloatValue and s.value > 0 and math.isfinite(s.value) and \
            callable(getattr(x, "_map", None)) and getattr(x, "base", None) is not None and \
            getattr(x.base, "fmt", None) is fmt:
        # an increasing rounded expression of a uniform times (over) a positive number
        return x._map(lambda v: opmath_arith(op, v, s, fmt), True)
    return None


#: Types of random values (race scores, noise) that a cast into a float dtype leaves as they
#: are (:func:`cast` returns them unchanged); registered by :mod:`.random`.
KEPT_BY_FLOAT_CAST: set = set()


def cast_row(values, dtype) -> list:
    """``[cast(v, dtype) for v in values]``: a row that a float cast leaves as it is (exact
    rationals in the exact run, race scores, noise), or plain ints within an integer dtype's
    range, is copied without a cast per element.

    >>> from .dtypes import float64, int64
    >>> cast_row([Fraction(1, 2), Fraction(3)], float64), cast_row([Fraction(7, 2)], int64)
    ([Fraction(1, 2), Fraction(3, 1)], [3])
    """
    if dtype.kind == "float":
        if CURRENT[-1].fmt is None:
            keep = KEPT_BY_FLOAT_CAST | {Fraction, LogRational}
            name = None
        else:                       # under --arith: values of the dtype's format too
            keep = KEPT_BY_FLOAT_CAST
            name = dtype.name
        for v in values:
            t = type(v)
            if t is FloatValue:
                if v.fmt.name != name:
                    break
            elif t not in keep:
                break
        else:
            return list(values)
    elif dtype.kind == "int" and values and all(type(v) is int for v in values):
        bound = 1 << (dtype.bits - 1)                      # plain ints: one range check
        if -bound <= min(values) and max(values) < bound:
            return list(values)
    return [cast(v, dtype) for v in values]


def divide(a, b):
    """``a / b`` in the exact run: IEEE's ``inf``/``nan`` on a zero divisor."""
    if isinstance(b, (Fraction, int)) and not is_random(a) and b == 0:
        a = exact_number(a)
        if is_nan(a) or a == 0:
            return math.nan
        return math.inf if a > 0 else -math.inf
    return _settle(operator.truediv(a, b))


def _settle(r):
    """A float produced by exact arithmetic with an infinity: finite ones are exact."""
    if isinstance(r, float) and math.isfinite(r):
        return Fraction(r)
    return r


def arith(op, a, b):
    """``op(a, b)`` for two elements already cast to the dtype of the operation."""
    if type(a) is Fraction and type(b) is Fraction and (op is not operator.truediv or b):
        return op(a, b)
    if op in _RING and type(a) in _EXACT and type(b) in _EXACT:     # integers, rationals
        return op(a, b)
    if type(a) in ARITH or type(b) in ARITH:       # a value type's own (a draft axis)
        return binary_rule(ARITH, a, b)(op, a, b, arith)
    if hasattr(a, "noise_index") or hasattr(b, "noise_index"):     # exponential noise
        return _noise_arith(op, a, b)
    if op is operator.truediv and current().exact:
        return divide(a, b)
    if op in _REFLECTED and is_random(b) and not is_random(a):
        # a number op a uniform (``q[x] * u``): the uniform's own reflected operation, as for
        # ``u * q[x]`` (a float of the format does not combine with a uniform itself)
        reflected = getattr(b, _REFLECTED[op], None)
        r = reflected(a) if reflected is not None else NotImplemented
        if r is not NotImplemented:
            return r
    try:
        r = op(a, b)
    except TypeError as err:
        if is_random(a) or is_random(b):
            raise undecided(f"this arithmetic on a random value is beyond the exact method "
                            f"({err})") from None
        raise
    return _settle(r) if current().exact else r


#: The operations whose result on ints and Fractions is exact as Python computes it (an int
#: or a Fraction; no division, no power with a negative exponent).
_RING = frozenset((operator.add, operator.sub, operator.mul))
_EXACT = frozenset((int, Fraction))

_REFLECTED = {operator.add: "__radd__", operator.mul: "__rmul__", operator.sub: "__rsub__",
              operator.truediv: "__rtruediv__"}


def _noise_arith(op, a, b):
    names = {operator.truediv: ("__truediv__", "__rtruediv__"),
             operator.mul: ("__mul__", "__rmul__"),
             operator.add: ("__add__", "__radd__"),       # the log of noise (Gumbel-max)
             operator.sub: ("__sub__", "__rsub__")}
    if op not in names:
        raise undecided("this arithmetic on exponential noise is beyond the exact method: "
                        "use it in a race (w / E, then argmax)")
    if hasattr(a, "noise_index"):
        return getattr(a, names[op][0])(b)
    return getattr(b, names[op][1])(a)
