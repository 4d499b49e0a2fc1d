"""One element of a tensor in the tensor's operations: reads, comparisons, powers, checks.

The element-level rules the tensor's methods apply (:mod:`.tensor_core` and the modules of
its methods): a comparison as the engine decides it (:func:`decide`: exact rationals, exact
sympy numbers remembered, a uniform against a threshold as the engine's branch point), a read
of storage (:func:`read`), integer powers exactly and as torch's CPU kernel computes them.
A value of a type with rules of its own (the draft axis's values, :mod:`.axis_values`) is
handed to its rule (:mod:`.dispatch`), looked up by its type.

>>> decide(operator.lt, Fraction(1, 3), Fraction(1, 2)), read([7, 8, 9], 2)
(True, 9)
"""

from __future__ import annotations

import math
import operator
from fractions import Fraction

from ..engine.floats import FORMATS, FloatValue
from .context import current, refuse, undecided
from .dispatch import (DECIDE, INDEX, NUMBER_TEST, OPS, POWER, PYTHON, READ_AT, TRUTH,
                       binary_rule)
from .values import arith, exact_number, is_nan, is_random

__all__ = ["read", "decide", "cast_format", "all_rationals", "python_value", "checked_index",
           "multi_indices", "index_tuples", "DECIDED_SIGNS", "same_value", "is_sympy", "truth",
           "is_inf", "element_extreme", "unpacked_double", "exact_element_power",
           "settled_float", "float_element_power", "check_int_range", "truncated_division"]


def read(data: list, position):
    """``data[position]``; a position of a value type with a rule of its own (on every draft
    branch) is read by that rule (:data:`~.dispatch.READ_AT`)."""
    if type(position) is int:
        return data[position]
    if type(position) in READ_AT:
        return READ_AT[type(position)](data, position)
    return data[position]


def all_rationals(values) -> bool:
    """Every value a plain ``Fraction``."""
    return all(type(v) is Fraction for v in values)


def python_value(v):
    """``v`` as one Python value (a value of the draft's branches has none: its type's rule,
    :data:`~.dispatch.PYTHON`, refuses it)."""
    if type(v) in PYTHON:
        return PYTHON[type(v)](v, "read into Python")
    return v


def checked_index(i, n, d):
    """The index ``i`` into dimension ``d`` of size ``n`` in ``range(n)``, refused when out of
    bounds."""
    if type(i) in INDEX:                      # an index on every draft branch
        return INDEX[type(i)](i, n, "")
    if not -n <= i < n:
        raise refuse(f"index {i} is out of bounds for dimension {d} of size {n}")
    return i % n


def multi_indices(shape):
    """Every index tuple of a tensor of ``shape``, in row-major order."""
    return list(index_tuples([range(n) for n in shape]))


def index_tuples(ranges):
    """Every tuple of one element of each range, the last varying fastest."""
    out = [()]
    for r in ranges:
        out = [c + (i,) for c in out for i in r]
    return out


#: Comparisons of exact sympy numbers already decided: ``(op, a, b) -> bool``.
DECIDED_SIGNS: dict = {}


def decide(op, a, b) -> bool:
    """``op(a, b)`` for two elements, as a bool; a comparison with a random element is a branch
    of the engine; one of exact sympy numbers (an exact softmax) is remembered."""
    if type(a) is Fraction and type(b) is Fraction:          # the common case first
        return op(a, b)
    if is_sympy(a) or is_sympy(b):
        try:
            key = (op, a, b)
            hit = DECIDED_SIGNS.get(key)
        except TypeError:
            key, hit = None, None
        if hit is not None:
            return hit
        out = truth(op(a, b))
        if key is not None and len(DECIDED_SIGNS) < 1 << 16:
            DECIDED_SIGNS[key] = out
        return out
    if type(a) in DECIDE or type(b) in DECIDE:     # a value type's own (a draft axis)
        return binary_rule(DECIDE, a, b)(op, a, b, decide, truth)
    run = current()
    if "uniform_noise" in run.__dict__:          # a uniform whose log is noise: not again
        OPS["check_not_noise"](a, b)
    lazy = getattr(run.sampler, "lazy_compare", None)            # a factored run's hook
    if lazy is not None:
        r = lazy(op, a, b)
        if r is not None:
            return r
    return truth(op(a, b))


def same_value(a, b) -> bool:
    """``a`` and ``b`` the same value: one random value, or equal numbers (NaN is no value's
    equal)."""
    if is_random(a) or is_random(b):
        return a is b
    return not is_nan(a) and decide(operator.eq, exact_number(a), exact_number(b))


def is_sympy(x) -> bool:
    """``x`` a sympy object (an exact irrational number)."""
    return type(x).__module__.startswith("sympy")


def truth(r) -> bool:
    """The result of a comparison as a bool (a split stays a value until read); one the exact
    method cannot decide is refused."""
    if isinstance(r, bool):
        return r
    if type(r) in TRUTH:                          # a split stays a value until read
        return TRUTH[type(r)](r)
    try:
        return bool(r)
    except TypeError as err:
        raise undecided(f"a comparison the exact method cannot decide ({err})") from None


def is_inf(v) -> bool:
    """``v`` an infinite float."""
    t = type(v)
    if t is Fraction:                          # the common case first
        return False
    if t in NUMBER_TEST:
        v = NUMBER_TEST[t](v, "tested for inf")
    x = v.value if isinstance(v, FloatValue) else v
    return isinstance(x, float) and math.isinf(x)


def element_extreme(x, y, maximum: bool):
    """The larger (``maximum``) or smaller of two elements; a NaN propagates."""
    if type(x) is Fraction and type(y) is Fraction:          # the common case first
        return (y if x < y else x) if maximum else (y if y < x else x)
    if is_nan(x) or is_nan(y):
        return x if is_nan(x) else y
    if maximum:
        return y if decide(operator.lt, x, y) else x
    return y if decide(operator.lt, y, x) else x


def unpacked_double(v: int) -> float:
    """A Python int in ``torch.tensor(data, dtype=<a float dtype>)``: read as a double first,
    as torch unpacks it (``2**60 + 2**36 + 1`` is ``2**60`` in ``float32``)."""
    try:
        return float(v)
    except OverflowError:
        raise refuse(f"the int {v} in a float tensor: too large to convert to float (torch "
                     "refuses it too)") from None


def exact_element_power(x, n: int):
    """``x ** n`` of one exact element (``n`` an integer): IEEE's ``inf`` for ``0 ** -k``."""
    if type(x) in POWER:                       # on every draft branch (a drawn token: refused)
        return POWER[type(x)](x, lambda v: exact_element_power(v, n))
    if is_random(x):
        raise undecided("pow of a random value is beyond the exact method")
    if isinstance(x, float):                   # inf, nan (nan ** 0 is 1, as in torch)
        return settled_float(x ** n)
    if n < 0 and x == 0:
        return math.inf
    return x ** n


def settled_float(r):
    """A float result as an exact ``Fraction`` when finite (``inf`` and ``nan`` kept)."""
    return Fraction(r) if math.isfinite(r) else r


def float_element_power(x, n: int, fmt):
    """``x ** n`` of one element under ``--arith`` as torch's CPU kernel computes it (see
    :meth:`Tensor.pow`)."""
    if type(x) in POWER:                       # on every draft branch
        return POWER[type(x)](x, lambda v: float_element_power(v, n, fmt))
    if n == 0:
        return FloatValue(1.0, fmt)
    if n == 1:
        return x
    if fmt.name == "float16" and n in (3, -2) and type(x) is FloatValue:
        f32 = FORMATS["float32"]
        w = FloatValue(x.value, f32)
        r = w * w * w if n == 3 else FloatValue(1.0, f32) / (w * w)
        return FloatValue(fmt.round(r.value), fmt)
    if n == -1:
        return arith(operator.truediv, FloatValue(1.0, fmt), x)
    square = arith(operator.mul, x, x)
    if n == 2:
        return square
    if n == 3:
        return arith(operator.mul, square, x)
    return arith(operator.truediv, FloatValue(1.0, fmt), square)


def check_int_range(values, dtype) -> None:
    """Integer results outside the dtype's range are refused: torch wraps them around."""
    bound = 2 ** (dtype.bits - 1)
    for v in values:
        if type(v) is int and not -bound <= v < bound:
            raise refuse(f"an {dtype.name} result {v} outside the dtype's range: torch wraps "
                         "it around (an overflow), exactspec does not model that")


def truncated_division(a, b):
    """Integer division rounded toward zero (``div(..., rounding_mode="trunc")``)."""
    if b == 0:
        raise refuse("integer division by zero (torch raises ZeroDivisionError)")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def cast_format(v: FloatValue, fmt) -> FloatValue:
    """The float value ``v`` rounded into the format ``fmt``."""
    x = v.value
    return FloatValue(fmt.round(Fraction(x)) if math.isfinite(x) else x, fmt)
