"""One element of a tensor: casts into a dtype and the arithmetic of two elements.

In the exact run a float element is an exact number (division by zero gives ``inf`` or ``nan``
as IEEE does, other arithmetic stays exact); under ``--arith`` it is a
:class:`~exactspec.engine.floats.FloatValue` of its dtype's format and each operation is
rounded once.  A Python float met in user code is taken at its exact binary value in the exact
run (counted on the sampler's ``floats``) and rounded into the dtype under ``--arith``.

>>> from .dtypes import float32, int64
>>> cast(0.5, float32), cast(Fraction(-7, 2), int64)
(Fraction(1, 2), -3)
>>> divide(Fraction(1), Fraction(0)), divide(Fraction(0), Fraction(0))
(inf, nan)
"""

from __future__ import annotations

import math
import operator
from fractions import Fraction

from ..engine.floats import FORMATS, FloatValue, exact_value
from . import float_rows
from .branched import Branched, Fallback, LawIndex, Mixture, Split, SplitFallback, axis_of
from .context import CURRENT, current, refuse, undecided

__all__ = ["UNSET", "cast", "cast_row", "divide", "is_random", "is_nan", "exact_number", "arith"]


class _Unset:
    """The content of ``torch.empty`` memory never written."""

    __slots__ = ()

    def __repr__(self):
        return "<uninitialised>"


UNSET = _Unset()


def is_random(v) -> bool:
    """An engine object standing for a random value (a uniform, an expression of one, noise)."""
    if isinstance(v, (bool, int, Fraction, float, FloatValue)):
        return False
    return (hasattr(v, "base") and hasattr(v, "scale")) or hasattr(v, "_float_threshold") \
        or type(v).__name__ in ("Linear", "Product", "LogValue") or hasattr(v, "noise_index")


def is_nan(v) -> bool:
    if type(v) is Branched or type(v) is LawIndex:
        raise Fallback("a value of the draft's branches tested for nan")
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
        sampler.floats += 1
    return Fraction(v)


def cast(v, dtype):
    """``v`` held as a value of ``dtype`` in the current run."""
    t = type(v)
    if t is Split:                                 # ``u < c[draft]`` kept as a value
        if v.decided is None and dtype.kind == "bool":
            return v
        v = bool(v)                                # read as a bool: the engine branches
        t = bool
    elif t is Mixture:                             # a token selected by a split
        if dtype.kind == "int":
            return v
        raise SplitFallback("a token selected by a split converted to a non-integer dtype")
    if t is Branched:                              # a value on every draft branch
        if dtype.kind == "float" and CURRENT[-1].fmt is None and \
                all(type(x) is Fraction for x in v.values):
            return v                               # exact rationals stay as they are
        if dtype.kind == "float" and CURRENT[-1].fmt is not None:
            fmt = FORMATS[dtype.name]
            if all(type(x) is FloatValue and x.fmt is fmt for x in v.values):
                return v                           # values of the dtype stay as they are
        return v.map(lambda x: cast(x, dtype))
    if t is LawIndex or (t is not Fraction and t is not FloatValue and
                         getattr(t, "lazy_count", False)):  # a drawn token, a lazy count
        if dtype.kind == "int" or (dtype.kind == "bool" and t is not LawIndex):
            return v
        raise Fallback("a drawn token converted to a non-integer dtype")
    if dtype.kind == "float":                      # the common cases first
        t = type(v)
        fmt = CURRENT[-1].fmt
        if t is Fraction and fmt is None:
            return v
        if t is FloatValue and fmt is not None and v.fmt.name == dtype.name:
            return v
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
            return v
        if is_random(v):
            raise undecided("an integer of a random value is beyond the exact method: "
                            "compare the value with a threshold instead")
        x = exact_number(v)
        if isinstance(x, float):
            raise refuse(f"converting {x} to {dtype.name}: not a finite number")
        if isinstance(x, Fraction):
            return int(x)                    # truncation toward zero, as .to(int64) does
        return int(x)
    fmt = None if current().exact else FORMATS[dtype.name]
    if is_random(v):
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
        return FloatValue(fmt.round(exact_value(v)), fmt)
    if isinstance(v, bool):
        v = int(v)
    if isinstance(v, (int, Fraction, float)):
        return FloatValue(fmt.round(v), fmt)
    raise refuse(f"a {type(v).__name__} value in a {dtype.name} tensor under --arith "
                 f"{fmt.name}: not a number of the format")


#: Types of random values (race scores, noise) that a cast into a float dtype leaves as they
#: are (:func:`cast` returns them unchanged); registered by :mod:`.random`.
KEPT_BY_FLOAT_CAST: set = set()


def cast_row(values, dtype) -> list:
    """``[cast(v, dtype) for v in values]``: a row that a float cast leaves as it is (exact
    rationals in the exact run, race scores, noise) is copied without a cast per element.

    >>> from .dtypes import float64, int64
    >>> cast_row([Fraction(1, 2), Fraction(3)], float64), cast_row([Fraction(7, 2)], int64)
    ([Fraction(1, 2), Fraction(3, 1)], [3])
    """
    if dtype.kind == "float":
        if CURRENT[-1].fmt is None:
            keep = KEPT_BY_FLOAT_CAST | {Fraction}
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
    if type(a) is LawIndex or type(b) is LawIndex:                 # a token kept as its law
        return _law_token_arith(op, a, b)
    if type(a) is Branched or type(b) is Branched:                 # per draft branch
        return _branched_arith(op, a, b)
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


_REFLECTED = {operator.add: "__radd__", operator.mul: "__rmul__", operator.sub: "__rsub__",
              operator.truediv: "__rtruediv__"}


def _law_token_arith(op, a, b):
    """A token kept as its law (:class:`LawIndex`) times a mask element 0 or 1, or plus 0: the
    token or 0 (``out.mul_(~mask).add_(tokens.mul(mask))`` writes a token where the mask
    holds); any other arithmetic on it is not tracked (:class:`Fallback`)."""
    t, other = (a, b) if type(a) is LawIndex else (b, a)
    if type(other) is int:
        if op is operator.mul and other in (0, 1):
            return t if other else 0
        if other == 0 and (op is operator.add or (op is operator.sub and t is a)):
            return t
    raise Fallback(f"the {t.what} token used in a computation")


def _branched_arith(op, a, b):
    """``arith`` on every draft branch: the path run's scalar operation, branch by branch."""
    if isinstance(a, LawIndex) or isinstance(b, LawIndex):
        raise Fallback("a branched value in arithmetic with a random value")
    if is_random(a) or is_random(b):
        hook = getattr(current().sampler, "branched_product", None)   # u * c[x] (factored)
        if hook is None:
            raise Fallback("a branched value in arithmetic with a random value")
        return hook(op, a, b)
    xs = a.values if type(a) is Branched else None
    ys = b.values if type(b) is Branched else None
    first = (xs or ys)[0] if (xs or ys) else None
    if type(first) is FloatValue:              # a row of one format: by NumPy where it can
        n = len(xs or ys)
        fast = float_rows.binary(op, xs or [a] * n, ys or [b] * n, first.fmt)
        if fast is not None:
            return Branched(fast, axis_of(a, b))
    if type(a) is Branched and type(b) is Branched:
        return Branched([arith(op, x, y) for x, y in zip(a.values, b.values)], axis_of(a, b))
    if type(a) is Branched:
        return Branched([arith(op, x, b) for x in a.values], a.axis)
    return Branched([arith(op, a, y) for y in b.values], b.axis)


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
