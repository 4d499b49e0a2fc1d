"""Exact numbers for user code: float literals are absorbed at their exact binary value.

A user's rule reads probabilities (``p[x]``, ``q[x]``, a residual) and writes ordinary Python
around them: ``0.0 + p[x] / q[x]``, ``max(p[t] - q[t], 0.0)``, ``x * 1e-9``.  With plain
``Fraction``\\ s, the first float in such an expression turns the whole value into a float64,
and the exact run becomes a run of a float program nobody wrote.  While a user's rule runs in
exact arithmetic (:func:`exact_values`, entered by the watch on user code), the values a
:class:`~exactspec.core.dist.Dist` hands out are :class:`ExactFraction`\\ s: ``Fraction``\\ s
whose arithmetic and comparisons with a float take the float at its exact binary value
(``Fraction(0.1)``, not ``1/10``) and stay exact.  Each float taken so is counted
(:func:`floats_converted`); a ``nan`` or an infinity in arithmetic (a ``nan`` in a comparison)
is refused, since it has no exact value.

>>> x = ExactFraction(1, 3)
>>> y = 0.0 + x
>>> y, type(y).__name__
(ExactFraction(1, 3), 'ExactFraction')
>>> x * 1e-9 == Fraction(1, 3) * Fraction(1e-9)
True
>>> max(x - ExactFraction(1, 2), 0.0)
0.0
>>> before = floats_converted()
>>> x + 0.5, floats_converted() - before
(ExactFraction(5, 6), 1)
"""

from __future__ import annotations

import math
import operator
from contextlib import contextmanager
from math import gcd
from fractions import Fraction

from .errors import InvalidInput

__all__ = ["ExactFraction", "exact_fraction", "exact_operand", "floats_converted",
           "exact_values", "plain_fraction", "stored_probs"]

_COUNT = [0]          # floats taken at their exact value, since the process started


def floats_converted() -> int:
    """How many floats exact arithmetic has taken at their exact binary value so far (a
    running total: a run reads it before and after)."""
    return _COUNT[0]


def count_float(n: int = 1) -> None:
    """Add ``n`` to :func:`floats_converted` (a float an interpreter took exactly)."""
    _COUNT[0] += n


_new = object.__new__


def _wrap(r):
    """``r`` as an :class:`ExactFraction` when it is a plain ``Fraction``."""
    if type(r) is Fraction:
        e = _new(ExactFraction)
        e._numerator = r._numerator
        e._denominator = r._denominator
        return e
    return r


def _refuse(value) -> InvalidInput:
    return InvalidInput(
        f"the value {value!r} met exact arithmetic: not a finite number, so it has no exact "
        "value (a division by a float 0.0, an overflow, a nan?)")


def _from_float(value) -> Fraction:
    """A float (Python or NumPy, any width) at its exact binary value, counted."""
    try:
        num, den = value.as_integer_ratio()
    except (OverflowError, ValueError):
        raise _refuse(value) from None
    _COUNT[0] += 1
    f = _new(Fraction)
    f._numerator = int(num)
    f._denominator = int(den)
    return f


def exact_operand(b):
    """``b`` ready for exact arithmetic: a float (Python or NumPy) at its exact binary value
    (counted; ``nan`` and infinities refused), a NumPy integer as a Python int, anything else
    (ints, Fractions, sympy values, uniforms) unchanged.

    >>> exact_operand(0.5), exact_operand(3)
    (Fraction(1, 2), 3)
    """
    t = type(b)
    if t is float:
        return _from_float(b)
    if t is int or t is Fraction or t is ExactFraction:
        return b
    if isinstance(b, float):
        return _from_float(b)                         # float subclasses (NumPy's float64)
    if t.__module__ == "numpy":
        if hasattr(b, "__index__"):
            return int(b)                             # NumPy integers
        if hasattr(b, "as_integer_ratio"):
            return _from_float(b)                     # NumPy floats of every width
    return b


def _make(n: int, d: int) -> "ExactFraction":
    e = _new(ExactFraction)
    e._numerator = n
    e._denominator = d
    return e


def _parts(b):
    """``(numerator, denominator)`` of an int or a ``Fraction``, else ``None``."""
    t = type(b)
    if t is ExactFraction or t is Fraction:
        return b._numerator, b._denominator
    if t is int:
        return b, 1
    if isinstance(b, Fraction):
        return b.numerator, b.denominator
    if isinstance(b, int) and t is not bool:
        return int(b), 1
    return None


# The rational operations of ``fractions.Fraction`` (same algorithms), building the result
# as an ExactFraction directly: user code's arithmetic costs what Fraction's does.
def _add(na, da, nb, db):
    g = gcd(da, db)
    if g == 1:
        return _make(na * db + da * nb, da * db)
    s = da // g
    t = na * (db // g) + nb * s
    g2 = gcd(t, g)
    if g2 == 1:
        return _make(t, s * db)
    return _make(t // g2, s * (db // g2))


def _mul(na, da, nb, db):
    g1 = gcd(na, db)
    if g1 > 1:
        na //= g1
        db //= g1
    g2 = gcd(nb, da)
    if g2 > 1:
        nb //= g2
        da //= g2
    return _make(na * nb, db * da)


def _div(na, da, nb, db):
    if nb == 0:
        raise ZeroDivisionError(f"Fraction({na * db}, 0)")
    g1 = gcd(na, nb)
    if g1 > 1:
        na //= g1
        nb //= g1
    g2 = gcd(db, da)
    if g2 > 1:
        da //= g2
        db //= g2
    n, d = na * db, nb * da
    if d < 0:
        n, d = -n, -d
    return _make(n, d)


def _arith(rational, name: str, reverse: bool):
    """The operator ``name``: ``rational(na, da, nb, db)`` for ints and fractions; floats
    taken exactly; anything else as ``Fraction`` does it."""
    base = getattr(Fraction, name)

    def op(a, b):
        other = _parts(b)
        if other is None:
            b = exact_operand(b)
            other = _parts(b)
            if other is None:
                r = base(a, b)
                return _wrap(r) if type(r) is Fraction else r
        if reverse:
            return rational(other[0], other[1], a._numerator, a._denominator)
        return rational(a._numerator, a._denominator, other[0], other[1])

    op.__name__ = name
    return op


def _binary(name: str):
    base = getattr(Fraction, name)

    def op(a, b):
        r = base(a, exact_operand(b))
        return _wrap(r) if type(r) is Fraction else r

    op.__name__ = name
    return op


def _compare(name: str):
    base = getattr(Fraction, name)
    test = getattr(operator, name.strip("_"))

    def cmp(a, b):
        other = _parts(b)
        if other is not None:
            return test(a._numerator * other[1], a._denominator * other[0])
        if type(b) is float or isinstance(b, float) or (
                type(b).__module__ == "numpy" and hasattr(b, "as_integer_ratio")):
            if math.isnan(b):
                raise _refuse(b)
            if math.isinf(b):
                return base(a, float(b))
            n, d = _from_float(b).as_integer_ratio()
            return test(a._numerator * d, a._denominator * n)
        return base(a, b)

    cmp.__name__ = name
    return cmp


def _sub(na, da, nb, db):
    return _add(na, da, -nb, db)


class ExactFraction(Fraction):
    """A ``Fraction`` that stays exact with floats: ``x + 0.1`` is ``x + Fraction(0.1)``, an
    ``ExactFraction`` (plain ``Fraction`` would give a float).  Results of arithmetic with
    ints, fractions and floats are ``ExactFraction``\\ s; comparisons with a float are exact;
    a power with a non-integer exponent is an exact sympy number.

    >>> ExactFraction(1, 2) ** 0.5
    sqrt(2)/2
    >>> 1 / ExactFraction(3) - 1e-9 < ExactFraction(1, 3)
    True
    """

    __slots__ = ()

    __add__, __radd__ = _arith(_add, "__add__", False), _arith(_add, "__radd__", True)
    __sub__, __rsub__ = _arith(_sub, "__sub__", False), _arith(_sub, "__rsub__", True)
    __mul__, __rmul__ = _arith(_mul, "__mul__", False), _arith(_mul, "__rmul__", True)
    __truediv__ = _arith(_div, "__truediv__", False)
    __rtruediv__ = _arith(_div, "__rtruediv__", True)
    __floordiv__, __rfloordiv__ = _binary("__floordiv__"), _binary("__rfloordiv__")
    __mod__, __rmod__ = _binary("__mod__"), _binary("__rmod__")
    __lt__, __le__ = _compare("__lt__"), _compare("__le__")
    __gt__, __ge__ = _compare("__gt__"), _compare("__ge__")
    __eq__ = _compare("__eq__")
    __hash__ = Fraction.__hash__

    def __divmod__(a, b):
        r = Fraction.__divmod__(a, exact_operand(b))
        return r if r is NotImplemented else (r[0], _wrap(r[1]))

    def __rdivmod__(b, a):
        r = Fraction.__rdivmod__(b, exact_operand(a))
        return r if r is NotImplemented else (r[0], _wrap(r[1]))

    def __pow__(a, b, modulo=None):
        if modulo is not None:
            return NotImplemented
        b = exact_operand(b)
        if isinstance(b, Fraction) and b.denominator != 1:
            return _sympy_power(a, b)
        return _wrap(Fraction.__pow__(a, b))

    def __rpow__(b, a, modulo=None):
        if modulo is not None:
            return NotImplemented
        a = exact_operand(a)
        if isinstance(a, (int, Fraction)):
            if b.denominator != 1:
                return _sympy_power(a, b)
            return _wrap(Fraction(a) ** b)
        return NotImplemented

    def __pos__(a):
        return a

    def __neg__(a):
        return _wrap(Fraction.__neg__(a))

    def __abs__(a):
        return _wrap(Fraction.__abs__(a))

    def __reduce__(self):       # pickles (and fingerprints) as the plain Fraction it equals
        return (Fraction, (self._numerator, self._denominator))


def _sympy_power(a, b):
    """``a ** b`` for a non-integer rational ``b``: the exact (irrational) sympy number."""
    import sympy

    return sympy.Pow(sympy.Rational(Fraction(a).numerator, Fraction(a).denominator),
                     sympy.Rational(b.numerator, b.denominator))


def exact_fraction(value: Fraction) -> ExactFraction:
    """``value`` (a ``Fraction``) as an :class:`ExactFraction`; other values unchanged."""
    return _wrap(value) if type(value) is Fraction else value


def plain_fraction(value):
    """An :class:`ExactFraction` as the plain ``Fraction`` it equals (the engine's own
    arithmetic stays on plain ``Fraction``\\ s); other values unchanged."""
    if type(value) is ExactFraction:
        f = _new(Fraction)
        f._numerator = value._numerator
        f._denominator = value._denominator
        return f
    return value


# -- handing exact values out of every Dist while user code runs -------------------------------
_ORIGINAL: dict = {}
_DEPTH = [0]


def _exact_probs(d) -> tuple:
    """``d``'s probabilities with every plain ``Fraction`` as an :class:`ExactFraction`
    (remembered with ``d``)."""
    cached = getattr(d, "_exact", None)
    if cached is not None:
        return cached
    probs = _ORIGINAL["probs"].__get__(d)
    out = tuple([_wrap(v) if type(v) is Fraction else v for v in probs])
    try:
        object.__setattr__(d, "_exact", out)
    except AttributeError:          # a subclass without the slot: not remembered
        pass
    return out


def stored_probs(d) -> tuple:
    """``d.probs`` as stored (plain ``Fraction`` values), inside :func:`exact_values` too: the
    engine's own reading of a law it draws from."""
    original = _ORIGINAL.get("probs") if _DEPTH[0] else None
    return d.probs if original is None else original.__get__(d)


def _exact_getitem(self, label):
    value_at = getattr(label, "value_at", None)
    if value_at is not None:
        return value_at(self)
    try:
        return _exact_probs(self)[self._index[label]]
    except KeyError:
        raise KeyError(f"unknown token {label!r}; labels are {list(self.labels)}") from None


@contextmanager
def exact_values():
    """While the block runs, every :class:`~exactspec.core.dist.Dist` hands out
    :class:`ExactFraction`\\ s (``d[t]``, ``d.probs``, ``d.values()``) instead of plain
    ``Fraction``\\ s: user code that mixes them with float literals stays exact.  Re-entrant;
    restored after.  Other values (sympy numbers, a float run's rounded values) pass unchanged.

    >>> from exactspec.core.dist import Dist
    >>> p = Dist.parse("1/2,1/2")
    >>> with exact_values():
    ...     print(repr(p[0] + 0.25))
    ExactFraction(3, 4)
    >>> p[0] + 0.25
    0.75
    """
    from .dist import Dist

    if _DEPTH[0]:
        _DEPTH[0] += 1
        try:
            yield
        finally:
            _DEPTH[0] -= 1
        return
    _ORIGINAL["getitem"] = Dist.__dict__["__getitem__"]
    _ORIGINAL["probs"] = Dist.__dict__["probs"]
    Dist.__getitem__ = _exact_getitem
    Dist.probs = property(_exact_probs, doc=_ORIGINAL["probs"].__doc__)
    _DEPTH[0] = 1
    try:
        yield
    finally:
        _DEPTH[0] = 0
        Dist.__getitem__ = _ORIGINAL["getitem"]
        Dist.probs = _ORIGINAL["probs"]

