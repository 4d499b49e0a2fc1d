"""The float run of the factored route (``verify --tokens M --arith``).

:class:`FactoredFloatSampler`: the factored interpreter (:mod:`.factored_sampler`) with the
rule's arithmetic in a float format: each branched value is the format's value the path run
computes on that branch, the uniforms are on the format's generator grid, and a comparison of
a uniform with a threshold of draft axis ``i`` holds, branch by branch, on the grid points
where the path run's rounded comparison holds (the cut found as the path run's bisection
finds it).
"""

from __future__ import annotations

import math
import operator
from fractions import Fraction

from ..core.signals import CannotProceed
from ..engine.float_sampler import Expr
from ..engine.floats import FloatValue
from .branched import Branched, axis_of
from .branched_float import VectorFloatSampler
from .factored_sampler import FactoredSampler, cut_side

__all__ = ["FactoredFloatSampler"]


class _FloatAxisExpr:
    """``f(u) * a[x]`` under ``--arith``: an increasing rounded expression ``f(u)`` of a fresh
    uniform on the format's grid times a value ``a`` of one draft axis, each product rounded
    as the path run rounds it.  Compared with a threshold ``c`` (plain, or of the same axis)
    it is one branch point whose outcome holds on branch ``x`` at the grid points where the
    path run's comparison holds (a prefix of the grid: :meth:`FactoredFloatSampler.
    _axis_expr_split`)."""

    __slots__ = ("expr", "scale")
    increasing = True

    def __init__(self, expr, scale: Branched):
        self.expr = expr
        self.scale = scale

    @property
    def base(self):
        return self.expr.base

    def _float_threshold(self):        # a random value to the tensor layer
        return None

    def __lt__(self, c):
        return self.expr.base.sampler._axis_expr_split(self, c, True)

    def __le__(self, c):
        return self.expr.base.sampler._axis_expr_split(self, c, False)

    def __gt__(self, c):
        return not self.__le__(c)

    def __ge__(self, c):
        return not self.__lt__(c)

    def _refuse(self, *args):
        raise CannotProceed("arithmetic on a uniform times a branched value")

    __mul__ = __rmul__ = __truediv__ = __add__ = __radd__ = __sub__ = __rsub__ = _refuse
    __neg__ = __bool__ = _refuse

    def __repr__(self):
        return f"f(u{self.expr.base.ident}) * axis{self.scale.axis}"


def _first_true(holds, lo: int, hi: int, guess: int) -> int:
    """The first ``j`` in ``[lo, hi)`` where the monotone predicate ``holds`` (false, then
    true) is true, ``hi`` when none: the index the path run's bisection finds, searched by
    galloping from ``guess`` (a few evaluations when the guess is close).

    >>> _first_true(lambda j: j * j >= 50, 0, 100, 3), _first_true(lambda j: False, 0, 9, 4)
    (8, 9)
    >>> _first_true(lambda j: j >= 3, 0, 9, 9), _first_true(lambda j: True, 0, 9, 9)
    (3, 0)
    """
    g = min(max(guess, lo), hi)
    if g == hi or holds(g):
        b, step = g, 1                   # the first true index is at most b; look below
        while True:
            a = b - step
            if a < lo:
                a = lo - 1
                break
            if not holds(a):
                break
            b, step = a, step * 2
    else:
        a, step = g, 1                   # not holds(a); look above
        while True:
            b = a + step
            if b >= hi:
                b = hi
                break
            if holds(b):
                break
            a, step = b, step * 2
    lo, hi = a + 1, b                    # the first true index is in [a + 1, b]
    while lo < hi:
        mid = (lo + hi) // 2
        if holds(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


class FactoredFloatSampler(FactoredSampler, VectorFloatSampler):
    """The factored interpreter with the rule's arithmetic in the format ``arith`` (the float
    run of ``verify --tokens M --arith``): every branched value is the format's value the path
    run computes on that branch, the uniforms are the format's generator grid, and each
    comparison of a uniform with a threshold of axis ``i`` holds, per branch, on the grid
    points where the path run's comparison holds (:mod:`.branched_float`'s rule for ``u <
    c[x]``; for ``f(u) * a[x] < c[x]`` the cut the path run finds by bisection, branch by
    branch).  An inverse-CDF lookup of a grid uniform (``(cdf <= u * total).sum()``) is a lazy
    count whose every comparison is cut at a grid point as the path run cuts it.  Long float
    sums in ``sum_order``."""

    def __init__(self, size: int, arith, grid: int | None = None,
                 sum_order: str | None = None):
        VectorFloatSampler.__init__(self, size, arith, grid, sum_order)
        self._split_axis = None

    def _reset(self):
        super()._reset()
        self._guesses: dict = {}         # uniform ident -> its last lazy cut (the next guess)

    def _compare(self, expr, c, strict: bool) -> bool:
        if isinstance(c, Branched):      # branched_float's rule on the axis of c
            self._never = self._never_of(c.axis)
            self._split_axis = c.axis
        return VectorFloatSampler._compare(self, expr, c, strict)

    def _branched_split(self, u, below: list, what: str):
        axis = self._split_axis
        return self._axis_choose(u, axis, below, what.replace("[draft]", f"[x{axis}]"))

    def branched_product(self, op, a, b):
        """``f(u) * c`` of a fresh uniform's increasing expression and a branched value: a
        :class:`_FloatAxisExpr`; any other mix of a random and a branched value falls back."""
        u, c = (a, b) if isinstance(b, Branched) else (b, a)
        if op is not operator.mul or not isinstance(u, Expr) or not isinstance(c, Branched) \
                or u.base.sampler is not self or not u.increasing:
            raise CannotProceed("a branched value in arithmetic with a random value")
        self._check_fresh(u.base)
        return _FloatAxisExpr(u, c)

    def _grid_value(self, j: int) -> FloatValue:
        return FloatValue(self.fmt.round(Fraction(j, self.grid)), self.fmt)

    def _cut(self, f, c, strict: bool, guess: int) -> int:
        """The grid index ``k``: the path run's comparison ``f(u) < c`` (``<=``) holds
        exactly for ``u = j / N`` with ``j < k`` (``f`` increasing, ``u`` fresh), found as
        :meth:`~exactspec.engine.float_sampler.FloatSampler._cut_point` finds it."""
        n = self.grid
        if strict:
            def holds(j):
                return not f(self._grid_value(j)) < c
        else:                            # f(u) <= c iff not (-f(u) < -c): the path run's form
            minus = -c

            def holds(j):
                return -f(self._grid_value(j)) < minus
        return _first_true(holds, 0, n, guess)

    def _axis_expr_split(self, e: _FloatAxisExpr, c, strict: bool) -> bool:
        from ..core.errors import InvalidInput

        base = e.expr.base
        self._check_fresh(base)
        if base.linked or base.spent or base.lo != 0 or base.hi != 1:
            raise CannotProceed("a branched comparison of a uniform already split")
        axis = axis_of(e.scale, c)
        never = self._never_of(axis)
        cs = c.values if isinstance(c, Branched) else [c] * len(never)
        f, n = e.expr.f, self.grid
        identity = getattr(e.expr, "identity", False)
        holds, guess = [], 0
        for a, cx, nev in zip(e.scale.values, cs, never):
            if nev:
                holds.append(Fraction(0))
                continue
            try:
                a = e.expr._scalar(a)                # as the path run's f(u) * a takes it
                cv = self._value(cx)
            except (InvalidInput, TypeError):
                raise CannotProceed("a branched value the format cannot hold") from None
            if not a > 0:
                raise CannotProceed("a uniform times a branched value that is not positive")
            if identity and math.isfinite(cv.value) and math.isfinite(a.value):
                guess = math.ceil(Fraction(cv.value) / Fraction(a.value) * n)
            k = self._cut(lambda v, a=a: f(v) * a, cv, strict, guess)
            guess = k
            holds.append(Fraction(k, n))
        sign = "<" if strict else "<="
        return self._axis_choose(base, axis, holds, f"f(u{base.ident}) * a[x{axis}] {sign} c")

    def lazy_compare(self, op, a, b):
        """``op(a, b)`` of an increasing expression of a fresh grid uniform and a plain number,
        kept lazy (the comparison cut at the grid point where the path run cuts it); ``None``
        for any other comparison (decided as usual)."""
        if isinstance(a, Expr):
            e, c, flipped = a, b, False
        elif isinstance(b, Expr):
            e, c, flipped = b, a, True
        else:
            return None
        if isinstance(c, bool) or not isinstance(c, (FloatValue, int, Fraction)):
            return None
        base = e.base
        if base.sampler is not self or base.linked or base.spent or not e.increasing:
            return None
        if base.ident not in self._lazy and (
                (base.ident in self._spent and base.ident not in self._axis_split) or
                base.lo != 0 or base.hi != 1):
            return None
        side = cut_side(op, flipped)
        if side is None:
            return None
        above, strict, truth = side
        k = self._cut(e.f, self._value(c), strict, self._guesses.get(base.ident, 0))
        self._guesses[base.ident] = k
        return self._lazy_cut(base, Fraction(k, self.grid), above, truth)
