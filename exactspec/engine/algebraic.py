"""Exact arithmetic in ``Q(theta)`` for one real algebraic number ``theta``.

The exact engine needs numbers that add, multiply, divide, compare and test equality exactly.
sympy's algebraic numbers (``CRootOf``) compare fine but decide equality structurally, so a
law made of them cannot be proved equal to ``p``.  :class:`Algebraic` represents an element of
``Q(theta)`` as a polynomial in ``theta`` of degree below ``d``, reduced modulo ``theta``'s
minimal polynomial ``m`` (irreducible over ``Q``, degree ``d``): the representation is unique,
so equality is equality of coefficients.  ``theta`` itself is pinned by an isolating interval
with rational ends, halved on demand: the sign of a non-zero element is read from an interval
evaluation once the interval is narrow enough, which always happens because ``theta`` is a
simple root.

Used to run K-SEQ at its algebraic ``rho*`` exactly.

>>> import sympy
>>> x = sympy.Symbol("x")
>>> root2 = exact_root(sympy.Poly(x**2 - 2, x).real_roots()[1])
>>> root2 * root2 == 2, root2 > Fraction(1414, 1000), 1 / root2 == root2 / 2
(True, True, True)
>>> float(root2 - 1)
0.41421356237309503
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from functools import lru_cache

from ..core.integer_rows import fraction_of

__all__ = ["NumberField", "Algebraic", "exact_root", "poly_mul"]

_CACHE_SIZE = 1 << 16          # entries of a field's product and sign caches
_ZEROS = [(Fraction(0),) * n for n in range(64)]


def _zeros(n: int) -> tuple:
    return _ZEROS[n] if n < len(_ZEROS) else (Fraction(0),) * n


def _poly_eval(coeffs, x):
    total = Fraction(0)
    for c in reversed(coeffs):
        total = total * x + c
    return total


def _trim(c: list) -> list:
    while c and c[-1] == 0:
        c.pop()
    return c


def _poly_divmod(a: list, b: list):
    a = list(a)
    quotient = [Fraction(0)] * max(len(a) - len(b) + 1, 1)
    lead = b[-1]
    while len(_trim(a)) >= len(b):
        shift = len(a) - len(b)
        factor = a[-1] / lead
        quotient[shift] = factor
        for i, coef in enumerate(b):
            a[shift + i] -= factor * coef
        a.pop()
    return _trim(quotient), _trim(a)


def _poly_sub(a, b):
    n = max(len(a), len(b))
    return _trim([(a[i] if i < len(a) else 0) - (b[i] if i < len(b) else 0) for i in range(n)])


def _over_common_denominator(coeffs) -> tuple[list, int]:
    """``([n_0, n_1, ...], D)`` with ``coeffs[i] = n_i / D``, ``D`` the lcm of the
    denominators."""
    den = 1
    for c in coeffs:
        if c.denominator != 1:
            den = math.lcm(den, c.denominator)
    return [c.numerator * (den // c.denominator) for c in coeffs], den


def poly_mul(a, b):
    """The product of two polynomials given as coefficient lists, lowest degree first."""
    if not a or not b:
        return []
    out = [Fraction(0)] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        if x:
            for j, y in enumerate(b):
                out[i + j] += x * y
    return out


class NumberField:
    """``Q(theta)``: ``theta`` the root of the monic irreducible ``m`` in ``(lo, hi)``.

    ``minpoly`` lists the coefficients of ``m`` from the constant term up (monic).  The
    field remembers signs, products and inverses of its elements: the exact walk re-runs a
    method from the start for every path and meets the same ones again.
    """

    def __init__(self, minpoly, lo, hi, expr=None):
        self.minpoly = [Fraction(c) for c in minpoly]
        lead = self.minpoly[-1]
        self.minpoly = [c / lead for c in self.minpoly]
        self.degree = len(self.minpoly) - 1
        self.lo, self.hi = Fraction(lo), Fraction(hi)
        self.expr = expr
        self._sign_lo = self._m_sign(self.lo)
        if self.degree >= 2 and (self._sign_lo == 0 or self._sign_lo == self._m_sign(self.hi)):
            raise ValueError("the interval does not isolate a simple root")
        self._inverses: dict = {}
        self._products: dict = {}     # (id a, id b) -> (a, b, product): a walk repeats its
        self._by_value: dict = {}     # prefixes; (a, b) -> product when the tuples are new
        self._signs: dict = {}        # coefficients -> exact sign: a walk repeats its tests
        # m's lower coefficients as integers over one denominator, for products on integers
        self._m_integers, self._m_denominator = _over_common_denominator(self.minpoly[:-1])

    def _m_sign(self, x) -> int:
        v = _poly_eval(self.minpoly, x)
        return (v > 0) - (v < 0)

    def refine(self) -> None:
        """Halve the isolating interval."""
        mid = (self.lo + self.hi) / 2
        s = self._m_sign(mid)
        if s == self._sign_lo:
            self.lo = mid
        else:
            self.hi = mid

    def reduce(self, coeffs) -> tuple:
        """Coefficients reduced modulo the minimal polynomial, length ``degree``."""
        c = list(coeffs)
        d, m = self.degree, self.minpoly
        for j in range(len(c) - 1, d - 1, -1):
            top = c[j]
            if top:
                for i in range(d):
                    c[j - d + i] -= top * m[i]
            c.pop()
        c += [Fraction(0)] * (d - len(c))
        return tuple(c)

    def multiply(self, a: tuple, b: tuple) -> tuple:
        """The reduced product of two elements, equal to ``reduce(a * b)``: computed on
        integers over one common denominator (each coefficient built by one gcd at the end),
        which is several times faster than adding up ``Fraction`` products.

        >>> field = NumberField([-2, 0, 1], 1, 2)                 # Q(sqrt 2)
        >>> a, b = (Fraction(1, 2), Fraction(1, 3)), (Fraction(-3, 4), Fraction(5, 6))
        >>> field.multiply(a, b) == field.reduce(poly_mul(list(a), list(b)))
        True
        >>> field.multiply(a, b)            # (1/2 + r/3)(-3/4 + 5r/6), r*r = 2
        (Fraction(13, 72), Fraction(1, 6))
        """
        key = (id(a), id(b))         # the same tuples recur (a cached product is reused)
        seen = self._products.get(key)
        if seen is not None and seen[0] is a and seen[1] is b:
            return seen[2]
        found = self._by_value.get((a, b))
        if found is None:
            found = self._multiply(a, b)
            if len(self._by_value) >= _CACHE_SIZE:
                self._by_value.clear()
            self._by_value[(a, b)] = found
        if len(self._products) >= _CACHE_SIZE:
            self._products.clear()
        self._products[key] = (a, b, found)   # holding a and b keeps their ids unique
        return found

    def _multiply(self, a: tuple, b: tuple) -> tuple:
        an, ad = _over_common_denominator(a)
        bn, bd = _over_common_denominator(b)
        c = [0] * (len(an) + len(bn) - 1)
        for i, x in enumerate(an):
            if x:
                for j, y in enumerate(bn):
                    c[i + j] += x * y
        den = ad * bd
        d, m, scale = self.degree, self._m_integers, self._m_denominator
        for j in range(len(c) - 1, d - 1, -1):      # theta^j -> -sum_i m_i theta^(j-d+i)
            top = c.pop()
            if top:
                if scale != 1:                       # keep integers: the rest times scale
                    c = [x * scale for x in c]
                    den *= scale
                for i in range(d):
                    c[j - d + i] -= top * m[i]
        c += [0] * (d - len(c))
        return tuple(fraction_of(x, den) for x in c)

    def sign(self, coeffs: tuple) -> int:
        """The exact sign of a non-rational element (``coeffs[1:]`` not all zero), refining
        the interval until an interval evaluation excludes 0; remembered per element (the
        interval only narrows, so a second evaluation would refine nothing)."""
        found = self._signs.get(coeffs)
        if found is not None:
            return found
        while True:
            lo, hi = self.bounds(coeffs)
            if lo > 0:
                found = 1
                break
            if hi < 0:
                found = -1
                break
            self.refine()
        if len(self._signs) >= _CACHE_SIZE:
            self._signs.clear()
        self._signs[coeffs] = found
        return found

    def bounds(self, coeffs: tuple) -> tuple:
        """Rational bounds ``(lo, hi)`` of the element over the isolating interval (Horner
        in interval arithmetic)."""
        a, b = self.lo, self.hi
        lo = hi = coeffs[-1]
        for c in reversed(coeffs[:-1]):
            if lo >= 0:                      # [lo, hi] * [a, b] by the signs of the ends
                if a >= 0:
                    lo, hi = lo * a, hi * b
                elif b <= 0:
                    lo, hi = hi * a, lo * b
                else:
                    lo, hi = hi * a, hi * b
            elif hi <= 0:
                if a >= 0:
                    lo, hi = lo * b, hi * a
                elif b <= 0:
                    lo, hi = hi * b, lo * a
                else:
                    lo, hi = lo * b, lo * a
            else:
                products = (lo * a, lo * b, hi * a, hi * b)
                lo, hi = min(products), max(products)
            lo, hi = lo + c, hi + c
        return lo, hi

    def inverse(self, coeffs: tuple) -> tuple:
        """The inverse of a non-zero element (extended Euclid against ``m``)."""
        found = self._inverses.get(coeffs)
        if found is not None:
            return found
        r0, r1 = list(self.minpoly), _trim(list(coeffs))
        s0, s1 = [], [Fraction(1)]
        while len(r1) > 1:
            quotient, rem = _poly_divmod(r0, r1)
            r0, r1 = r1, rem
            s0, s1 = s1, _poly_sub(s0, poly_mul(quotient, s1))
        if not r1:
            raise ZeroDivisionError("division by zero in Q(theta)")
        result = self.reduce([c / r1[0] for c in s1])
        self._inverses[coeffs] = result
        return result


class Algebraic:
    """An element of a :class:`NumberField`, with exact arithmetic and comparisons."""

    __slots__ = ("field", "coeffs")
    is_algebraic_value = True

    def __init__(self, field: NumberField, coeffs):
        self.field = field
        self.coeffs = tuple(coeffs)

    # -- conversions -------------------------------------------------------------------
    def _lift(self, other):
        if type(other) is Fraction or type(other) is int:
            return (Fraction(other),) + _zeros(self.field.degree - 1)
        if isinstance(other, Algebraic):
            if other.field is not self.field:
                raise ValueError("elements of different number fields")
            return other.coeffs
        if isinstance(other, numbers.Rational):
            return (Fraction(other),) + (Fraction(0),) * (self.field.degree - 1)
        return None

    @property
    def is_rational(self) -> bool:
        return not any(self.coeffs[1:])

    @property
    def expr(self):
        """The value as a sympy expression (``theta`` as its ``CRootOf``)."""
        import sympy

        if self.is_rational:
            c = self.coeffs[0]
            return sympy.Rational(c.numerator, c.denominator)
        theta = self.field.expr
        return sympy.Add(*[sympy.Rational(c.numerator, c.denominator) * theta ** i
                           for i, c in enumerate(self.coeffs) if c])

    # -- arithmetic --------------------------------------------------------------------
    def __add__(self, o):
        c = self._lift(o)
        if c is None:
            return NotImplemented
        return Algebraic(self.field, [a + b for a, b in zip(self.coeffs, c)])

    __radd__ = __add__

    def __neg__(self):
        return Algebraic(self.field, [-a for a in self.coeffs])

    def __pos__(self):
        return self

    def __sub__(self, o):
        c = self._lift(o)
        if c is None:
            return NotImplemented
        return Algebraic(self.field, [a - b for a, b in zip(self.coeffs, c)])

    def __rsub__(self, o):
        c = self._lift(o)
        if c is None:
            return NotImplemented
        return Algebraic(self.field, [b - a for a, b in zip(self.coeffs, c)])

    def __mul__(self, o):
        if isinstance(o, numbers.Rational):
            f = Fraction(o)
            return Algebraic(self.field, [a * f for a in self.coeffs])
        c = self._lift(o)
        if c is None:
            return NotImplemented
        return Algebraic(self.field, self.field.multiply(self.coeffs, c))

    __rmul__ = __mul__

    def _inverse(self):
        if self.is_rational:
            return Algebraic(self.field, (1 / self.coeffs[0],) + self.coeffs[1:])
        return Algebraic(self.field, self.field.inverse(self.coeffs))

    def __truediv__(self, o):
        if isinstance(o, numbers.Rational):
            f = Fraction(o)
            return Algebraic(self.field, [a / f for a in self.coeffs])
        if isinstance(o, Algebraic):
            return self * o._inverse()
        return NotImplemented

    def __rtruediv__(self, o):
        if isinstance(o, numbers.Rational):
            return self._inverse() * o
        return NotImplemented

    def __pow__(self, n):
        if not isinstance(n, int):
            return NotImplemented
        if n < 0:
            return self._inverse() ** (-n)
        result = Algebraic(self.field, self._lift(1))
        base = self
        while n:
            if n & 1:
                result = result * base
            base = base * base
            n >>= 1
        return result

    # -- comparisons -------------------------------------------------------------------
    def sign(self) -> int:
        """The exact sign: ``-1``, ``0`` or ``1``."""
        if self.is_rational:
            c = self.coeffs[0]
            return (c > 0) - (c < 0)
        return self.field.sign(self.coeffs)

    def _bounds(self):
        return self.field.bounds(self.coeffs)

    def _cmp(self, o):
        if type(o) is Fraction or type(o) is int:        # only the constant term moves
            first = self.coeffs[0] - o
            if not any(self.coeffs[1:]):
                return (first > 0) - (first < 0)
            return self.field.sign((first,) + self.coeffs[1:])
        c = self._lift(o)
        if c is None:
            return None
        return Algebraic(self.field, [a - b for a, b in zip(self.coeffs, c)]).sign()

    def __eq__(self, o):
        if type(o) is Fraction or type(o) is int:
            return self.coeffs[0] == o and not any(self.coeffs[1:])
        c = self._lift(o)
        if c is None:
            return NotImplemented
        return self.coeffs == c

    def __ne__(self, o):
        result = self.__eq__(o)
        return result if result is NotImplemented else not result

    def __lt__(self, o):
        s = self._cmp(o)
        return NotImplemented if s is None else s < 0

    def __le__(self, o):
        s = self._cmp(o)
        return NotImplemented if s is None else s <= 0

    def __gt__(self, o):
        s = self._cmp(o)
        return NotImplemented if s is None else s > 0

    def __ge__(self, o):
        s = self._cmp(o)
        return NotImplemented if s is None else s >= 0

    def __bool__(self):
        return any(self.coeffs)

    def __hash__(self):
        if self.is_rational:
            return hash(self.coeffs[0])
        return hash((id(self.field), self.coeffs))

    def __float__(self):
        if self.is_rational:
            return float(self.coeffs[0])
        while True:
            lo, hi = self._bounds()
            if hi - lo <= abs(lo + hi) * Fraction(1, 10**20) or hi - lo < Fraction(1, 10**40):
                return float((lo + hi) / 2)
            self.field.refine()

    def __repr__(self):
        return f"Algebraic({self.expr})"

    def __str__(self):
        return str(self.expr)


@lru_cache(maxsize=64)
def exact_root(root):
    """``root`` (a sympy ``CRootOf`` of a real root, a real radical, or a rational) as an
    exact number: a ``Fraction`` when rational, else the generator of its
    :class:`NumberField` (the same field object for the same ``root``, so that values built
    from it in separate runs can be added)."""
    import sympy

    if getattr(root, "is_Rational", False):
        return Fraction(int(root.p), int(root.q))
    x = sympy.Dummy("x")
    if isinstance(root, sympy.CRootOf):
        m = sympy.Poly(root.poly.as_expr(), root.poly.gens[0])   # irreducible by construction
        interval = root._get_interval()
        lo, hi = interval.a, interval.b
    else:                      # a radical expression, e.g. from a quadratic factor
        m = sympy.minimal_polynomial(root, x, polys=True)
        candidates = [(a, b) for (a, b), _ in m.intervals() if a <= root <= b]
        if len(candidates) != 1:
            raise ValueError(f"cannot isolate {root}")
        lo, hi = candidates[0]
    coeffs = [Fraction(str(c)) for c in reversed(m.all_coeffs())]
    if len(coeffs) == 2:
        return -coeffs[0] / coeffs[1]
    field = NumberField(coeffs, Fraction(str(lo)), Fraction(str(hi)), expr=root)
    return Algebraic(field, (Fraction(0), Fraction(1)) + (Fraction(0),) * (field.degree - 2))
