"""Logits whose exponentials are rational up to a shared factor: ``log(r) / n + c``.

An engine function takes logits; an adapter builds them from probability rows
(``torch.log(p)``, ``log_softmax``), maybe shifted by a constant, times an integer or divided
by one (a temperature).  The exact value of such an element is ``log(r) / n + c`` for a
positive rational ``r``, a positive integer ``n`` and a rational ``c``: a
:class:`LogRational`.  It stays one through addition and subtraction of another one or of a
rational, multiplication by a rational with a small numerator (``log(r) * a / b`` is
``log(r**a) / b``), division by a small integer, and negation; every other operation (a
product of two, ``exp`` of a non-rational value) gives the exact sympy number, as before.

:func:`softmax_row` takes a row of such elements (``-inf`` too) that share their ``c`` and
whose ``r`` are ``n``-th powers up to one common factor, for one common ``n``: the softmax
is then ``r_i**(1/n) / sum_j r_j**(1/n)``, rational, computed on integers over a common
denominator without sympy; for ``n = 1`` (no temperature, or a temperature ``1/k``, which
makes the row ``log(r**k)``) always.  ``None`` for any other row (the caller computes it with sympy).

The representation is canonical: ``r != 1`` (``log(1) / n + c`` is the rational ``c``) and
``r`` is not a ``d``-th power for a prime ``d`` dividing ``n`` (``log(4) / 2`` is
``log(2)``), so two elements are equal exactly when their ``(r, n, c)`` are, and an element
is never equal to a rational (``log r`` is irrational for a rational ``r != 1``).

>>> x = LogRational.log(Fraction(1, 2))
>>> x - LogRational.log(Fraction(1, 4))
LogRational(2, 1, 0)
>>> (x * 2) / 3, x + 1 < 1, float(x)
(LogRational(1/4, 3, 0), True, -0.6931471805599453)
>>> softmax_row([x, LogRational.log(Fraction(1, 6)), -math.inf])
[Fraction(3, 4), Fraction(1, 4), Fraction(0, 1)]
"""

from __future__ import annotations

import math
from fractions import Fraction

__all__ = ["LogRational", "softmax_row", "MAX_POWER", "rational_root"]

#: The largest exponent a rescaling raises ``r`` to (``log(r) * a / b`` is ``log(r**a) / b``);
#: beyond it the element becomes the sympy number (``r**a`` would be too large to be useful).
MAX_POWER = 64


def _iroot(x: int, d: int):
    """The integer ``d``-th root of ``x >= 0`` when ``x`` is a ``d``-th power, else ``None``."""
    if x < 2:
        return x
    y = round(x ** (1.0 / d)) if x.bit_length() < 1000 else _iroot_big(x, d)
    for z in (y - 1, y, y + 1):
        if z >= 0 and z ** d == x:
            return z
    return None


def _iroot_big(x: int, d: int) -> int:
    lo, hi = 0, 1 << (x.bit_length() // d + 1)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if mid ** d <= x:
            lo = mid
        else:
            hi = mid - 1
    return lo


def rational_root(r: Fraction, d: int):
    """``r**(1/d)`` when it is rational, else ``None``."""
    a, b = _iroot(r.numerator, d), _iroot(r.denominator, d)
    return None if a is None or b is None else Fraction(a, b)


def _primes(n: int) -> list:
    out, d = [], 2
    while d * d <= n:
        if n % d == 0:
            out.append(d)
            while n % d == 0:
                n //= d
        d += 1
    if n > 1:
        out.append(n)
    return out


_ZERO = Fraction(0)      # a Fraction is immutable: one zero for every log's constant


class LogRational:
    """The exact number ``log(r) / n + c`` (``r`` a positive rational other than 1, ``n`` a
    positive integer, ``c`` a rational), in canonical form; build one with :meth:`make` or
    :meth:`log`."""

    __slots__ = ("r", "n", "c", "_hash")

    def __init__(self, r: Fraction, n: int, c: Fraction):
        self.r, self.n, self.c = r, n, c
        self._hash = None

    @staticmethod
    def make(r, n: int = 1, c=Fraction(0)):
        """``log(r) / n + c`` in canonical form: the rational ``c`` where ``r == 1``."""
        if r == 1:
            return c
        if n > 1:
            for d in _primes(n):
                while n % d == 0:
                    root = rational_root(r, d)
                    if root is None:
                        break
                    r, n = root, n // d
        return LogRational(r, n, c)

    @staticmethod
    def log(r: Fraction):
        """``log(r)`` of a positive rational."""
        return _ZERO if r.numerator == r.denominator else LogRational(r, 1, _ZERO)

    # -- the exact value ---------------------------------------------------------------------
    def _sympy_(self):
        import sympy

        r = sympy.Rational(self.r.numerator, self.r.denominator)
        c = sympy.Rational(self.c.numerator, self.c.denominator)
        return sympy.log(r) / self.n + c

    def __float__(self):
        return (math.log(self.r.numerator) - math.log(self.r.denominator)) / self.n + \
            float(self.c)

    def __repr__(self):
        return f"LogRational({self.r}, {self.n}, {self.c})"

    def __hash__(self):
        if self._hash is None:
            # by the integers (a Fraction's own hash takes a modular inverse); equal
            # LogRationals have equal parts, so equal hashes
            r, c = self.r, self.c
            self._hash = hash((r.numerator, r.denominator, self.n, c.numerator, c.denominator))
        return self._hash

    def __eq__(self, other):
        if type(other) is LogRational:          # canonical forms: equal parts, compared
            if other is self:                     # as integers
                return True
            r, s = self.r, other.r
            return (r.numerator == s.numerator and r.denominator == s.denominator
                    and self.n == other.n and self.c == other.c)
        if isinstance(other, (int, Fraction)):
            return False
        if isinstance(other, float):
            return False
        return self._sympy_() == other

    def __ne__(self, other):
        return not self.__eq__(other)

    # -- arithmetic --------------------------------------------------------------------------
    def _scaled(self, s: Fraction):
        """``self * s`` for a rational ``s``."""
        if s == 0:
            return Fraction(0)
        a, b = s.numerator, s.denominator
        if abs(a) > MAX_POWER or b * self.n > MAX_POWER * MAX_POWER:
            return self._sympy_() * _sym(s)
        return LogRational.make(self.r ** a, self.n * b, self.c * s)

    def __add__(self, other):
        t = type(other)
        if t is Fraction or t is int:
            return LogRational(self.r, self.n, self.c + other)
        if t is LogRational:
            n = self.n * other.n // math.gcd(self.n, other.n)
            r = self.r ** (n // self.n) * other.r ** (n // other.n)
            return LogRational.make(r, n, self.c + other.c)
        if t is float:
            return other if not math.isfinite(other) else self + Fraction(other)
        return _generic(self, other, lambda a, b: a + b)

    __radd__ = __add__

    def __neg__(self):
        return LogRational(1 / self.r, self.n, -self.c)

    def __sub__(self, other):
        t = type(other)
        if t is Fraction or t is int or t is LogRational:
            return self + (-other)
        if t is float:
            return -other if not math.isfinite(other) else self - Fraction(other)
        return _generic(self, other, lambda a, b: a - b)

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, other):
        t = type(other)
        if t is Fraction or t is int:
            return self._scaled(Fraction(other))
        if t is float and math.isfinite(other):
            return self._scaled(Fraction(other))
        return _generic(self, other, lambda a, b: a * b)

    __rmul__ = __mul__

    def __truediv__(self, other):
        t = type(other)
        if (t is Fraction or t is int) and other != 0:
            return self._scaled(1 / Fraction(other))
        if t is float and math.isfinite(other) and other != 0:
            return self._scaled(1 / Fraction(other))
        return _generic(self, other, lambda a, b: a / b)

    def __rtruediv__(self, other):
        return _generic(other, self, lambda a, b: a / b)

    def __pow__(self, other):
        return _generic(self, other, lambda a, b: a ** b)

    def __rpow__(self, other):
        return _generic(other, self, lambda a, b: a ** b)

    def __abs__(self):
        return -self if self < 0 else self

    def __pos__(self):
        return self

    # -- comparisons -------------------------------------------------------------------------
    def _sign_minus(self, other):
        """The sign of ``self - other`` for a rational or a :class:`LogRational` ``other``;
        ``None`` for anything else."""
        t = type(other)
        if t is Fraction or t is int:
            d = self.c - other
            r, n = self.r, self.n
        elif t is LogRational:
            if self.c == other.c:          # a shared shift: compare the powers exactly
                n = self.n * other.n // math.gcd(self.n, other.n)
                a, b = self.r ** (n // self.n), other.r ** (n // other.n)
                return (a > b) - (a < b)
            diff = self - other
            if type(diff) is not LogRational:
                return (diff > 0) - (diff < 0)
            return diff._sign_minus(Fraction(0))
        else:
            return None
        # sign of log(r) / n + d
        s = (r > 1) - (r < 1)
        if d == 0 or (d > 0) == (s > 0):
            return s if d == 0 else (1 if d > 0 else -1)
        return _sign_log_plus(r, n * d)

    def _compare(self, other, op):
        s = self._sign_minus(other)
        if s is None:
            if isinstance(other, float):            # an infinity or nan: self - other
                return op(-other, 0)                # is -other
            return bool(op(self._sympy_(), other))
        return op(s, 0)

    def __lt__(self, other):
        return self._compare(other, lambda a, b: a < b)

    def __le__(self, other):
        return self._compare(other, lambda a, b: a <= b)

    def __gt__(self, other):
        return self._compare(other, lambda a, b: a > b)

    def __ge__(self, other):
        return self._compare(other, lambda a, b: a >= b)


def _sym(x):
    import sympy

    if isinstance(x, Fraction):
        return sympy.Rational(x.numerator, x.denominator)
    return sympy.sympify(x)


def _generic(a, b, op):
    """``op`` on the exact sympy values (a rational result as a :class:`Fraction`)."""
    if isinstance(a, float) or isinstance(b, float):
        for x in (a, b):
            if isinstance(x, float) and not math.isfinite(x):
                return op(float(a), float(b))
    r = op(_sym(a), _sym(b))
    if getattr(r, "is_Rational", False):
        return Fraction(int(r.p), int(r.q))
    return r


def _sign_log_plus(r: Fraction, d: Fraction) -> int:
    """The sign of ``log(r) + d`` (``r != 1``, ``d != 0`` of the other sign): of ``r - e**-d``,
    decided at increasing precision, else by sympy."""
    import mpmath

    for digits in (30, 120):
        with mpmath.workdps(digits):
            v = mpmath.log(mpmath.mpf(r.numerator) / r.denominator) + \
                mpmath.mpf(d.numerator) / d.denominator
            if abs(v) > mpmath.mpf(10) ** (10 - digits) * (1 + abs(v)):
                return 1 if v > 0 else -1
    import sympy

    v = sympy.log(_sym(r)) + _sym(d)
    return 1 if bool(v > 0) else -1


def _split(v):
    """``(r, n, c)`` of an element of a softmax row, ``(None, .., ..)`` for ``-inf``; ``False``
    for anything else."""
    t = type(v)
    if t is LogRational:
        return v.r, v.n, v.c
    if t is Fraction or t is int:
        return Fraction(1), 1, Fraction(v)
    if t is float and v == -math.inf:
        return None, 1, None
    return False


def softmax_row(lane):
    """The exact softmax of a row of :class:`LogRational` elements, rationals and ``-inf``
    sharing one shift ``c``, whose ``r_i / r_0`` are ``n``-th powers of rationals for the
    common ``n`` (always for ``n = 1``); ``None`` for any other row (or a row with no finite
    element)."""
    parts = [_split(v) for v in lane]
    if any(p is False for p in parts):
        return None
    finite = [p for p in parts if p[0] is not None]
    if not finite:
        return None
    shift = finite[0][2]
    if any(c != shift for _, _, c in finite):
        return None
    n = 1
    for _, m, _ in finite:
        n = n * m // math.gcd(n, m)
    weights = []
    base = None
    for r, m, _ in parts:
        if r is None:
            weights.append(None)
            continue
        if m != n:
            r = r ** (n // m)
        if n > 1:                  # (r / r_0)**(1/n): the common factor r_0**(1/n) cancels
            if base is None:
                base = r
            r = rational_root(r / base, n)
            if r is None:
                return None
        weights.append(r)
    denominator = 1
    for w in weights:
        if w is not None and w.denominator != 1:
            denominator = denominator * w.denominator // math.gcd(denominator, w.denominator)
    ints = [0 if w is None else w.numerator * (denominator // w.denominator) for w in weights]
    total = sum(ints)
    return [Fraction(x, total) for x in ints]
