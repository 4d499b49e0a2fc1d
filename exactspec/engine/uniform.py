"""Explicit uniform random numbers, enumerated exactly.

A method may take ``u = s.uniform()`` and compare it with thresholds (``u < c``) or feed it
to an inverse-CDF lookup (``s.pick(dist, u)``).  The exact engine never samples ``u``: it
keeps the set of values still possible, an interval ``[lo, hi)`` of ``[0, 1)``, and each
comparison that cuts the interval is a branch whose probability is the length of the piece
(or, on a grid ``{0, 1/N, ..., (N-1)/N}``, its number of grid points).  A method that reuses
one ``u`` for two decisions is therefore modelled exactly as it behaves.

Conventions (docs/math.md#uniform-conventions): a coin of probability ``c`` is heads iff ``u < c``; an inverse-CDF
draw picks token ``t`` iff ``sum_{s<t} r(s) <= u < sum_{s<=t} r(s)``.

Affine views (``a * u + b`` with ``a > 0``) compare by mapping the threshold back to ``u``.
Float constants (``u * 0.5``, ``1e-9 < u``) are taken at their exact binary value.
``1 - u``, comparisons between uniforms (``u < v``, ``a*u < b*v``), ``min``/``max`` and
products of uniforms are handled by :mod:`.joint`.
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..core.exact_values import exact_operand
from ..core.integer_rows import fraction_of

__all__ = ["Uniform", "UniformView", "grid_count", "below_ideal", "below_on_grid"]


def grid_count(lo, hi, grid: int) -> int:
    """Number of grid points ``j / grid`` with ``lo <= j / grid < hi``, for ``0 <= lo <= hi``.

    Equivalent to ``sum(1 for j in range(grid) if lo <= Fraction(j, grid) < hi)``, in O(1).

    >>> grid_count(Fraction(0), Fraction(1, 3), 10)
    4
    """
    return max(0, _ceil_times(hi, grid) - _ceil_times(lo, grid))


def _ceil_times(x, grid: int) -> int:
    return min(grid, max(0, math.ceil(Fraction(x) * grid)))


class UniformView:
    """``scale * u + shift`` for an explicit uniform ``u`` (``scale > 0``)."""

    __slots__ = ("base", "scale", "shift")

    def __init__(self, base: "Uniform", scale=1, shift=0):
        self.base = base
        self.scale = scale
        self.shift = shift

    def _threshold(self, c):
        return (exact_operand(c) - self.shift) / self.scale

    def _joint(self, c) -> bool:
        """True when the comparison with ``c`` needs the joint treatment (:mod:`.joint`)."""
        from .joint import Linear, Product

        return isinstance(c, (UniformView, Linear, Product)) or self.base.linked or \
            self.base.spent

    def __lt__(self, c):
        if self._joint(c):
            from .joint import as_linear
            return as_linear(self) < c
        return self.base._below(self._threshold(c), strict=True)

    def __le__(self, c):
        if self._joint(c):
            from .joint import as_linear
            return as_linear(self) <= c
        return self.base._below(self._threshold(c), strict=False)

    def __gt__(self, c):
        return not self.__le__(c)

    def __ge__(self, c):
        return not self.__lt__(c)

    def __mul__(self, a):
        from .joint import Linear, Product, as_linear

        if isinstance(a, (UniformView, Linear, Product)):
            return Product.of(self, a)
        a = exact_operand(a)
        if not a > 0:
            return as_linear(self) * a
        return UniformView(self.base, self.scale * a, self.shift * a)

    __rmul__ = __mul__

    def __truediv__(self, a):
        a = exact_operand(a)
        return self.__mul__(1 / Fraction(a) if isinstance(a, int) else 1 / a)

    def __add__(self, b):
        from .joint import Linear, as_linear

        if isinstance(b, (UniformView, Linear)):
            return as_linear(self) + b
        return UniformView(self.base, self.scale, self.shift + exact_operand(b))

    __radd__ = __add__

    def __sub__(self, b):
        from .joint import Linear, as_linear

        if isinstance(b, (UniformView, Linear)):
            return as_linear(self) - b
        return UniformView(self.base, self.scale, self.shift - exact_operand(b))

    def __rsub__(self, b):                       # b - u, for instance 1 - u
        from .joint import as_linear
        return exact_operand(b) - as_linear(self)

    def __neg__(self):
        from .joint import as_linear
        return -as_linear(self)

    def __bool__(self):
        raise TypeError("an explicit uniform has no truth value; compare it with a threshold")

    def __repr__(self):
        return f"UniformView({self.scale} * u{self.base.ident} + {self.shift})"


class Uniform(UniformView):
    """An explicit uniform on ``[0, 1)`` (or a grid of it), enumerated by interval splitting.

    The owning sampler performs the splits; the uniform only remembers which values of ``u``
    are still possible: ``[lo, hi)``.
    """

    __slots__ = ("sampler", "ident", "lo", "hi", "linked", "spent")

    def __init__(self, sampler, ident: int):
        super().__init__(self)
        self.sampler = sampler
        self.ident = ident
        self.lo = Fraction(0)
        self.hi = Fraction(1)
        self.linked = False      # compared jointly with another uniform (:mod:`.joint`)
        self.spent = False       # used in a product of uniforms

    def _below(self, c, strict: bool) -> bool:
        return self.sampler._split_uniform(self, c, strict)

    def __repr__(self):
        return f"u{self.ident} in [{self.lo}, {self.hi})"


def below_ideal(x):
    """``P(u < x) = P(u <= x)`` for an ideal uniform on ``[0, 1)``: ``x`` clipped to [0, 1].

    >>> below_ideal(Fraction(1, 3)), below_ideal(-1), below_ideal(2)
    (Fraction(1, 3), Fraction(0, 1), Fraction(1, 1))
    """
    num, den = x.numerator, x.denominator
    return Fraction(0) if num <= 0 else Fraction(1) if num >= den else \
        (x if type(x) is Fraction else Fraction(x))


def below_on_grid(x, n: int, strict: bool):
    """``P(u < x)`` (``strict``) or ``P(u <= x)`` for a fresh uniform on the grid
    ``{0, 1/n, ..., (n-1)/n}``: the grid points below the cut, ``ceil(x n)`` for ``u < x`` and
    ``floor(x n) + 1`` for ``u <= x``, clipped to ``0..n``, over ``n``.

    >>> below_on_grid(Fraction(1, 4), 8, True), below_on_grid(Fraction(1, 4), 8, False)
    (Fraction(1, 4), Fraction(3, 8))
    """
    a, b = x.numerator * n, x.denominator
    k = -(-a // b) if strict else a // b + 1
    return Fraction(0) if k <= 0 else Fraction(1) if k >= n else fraction_of(k, n)
