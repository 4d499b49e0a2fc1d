"""Uniforms of another float dtype than the run's format under ``--arith``, on their own grid.

Under ``--arith`` a uniform of a float dtype other than the format's (``torch.rand(...,
dtype=torch.float64)`` beside ``float32`` rows, as vLLM's second engine draws them) is on its
own dtype's generator grid (``j / 2**53`` for ``float64``): a :class:`GridUniform`, which keeps
the grid indices still possible.  A monotone rounded expression of it (:class:`GridExpr`: ``u``,
``u * c``, ``1 - u``, ...) takes part in torch's promotion (compared with a ``float32`` ratio in
``float64``), and its comparison with a number is an exact branch of the engine on the grid
(:mod:`.random` draws it).

>>> grid_text(2**24), grid_power(2**24, 3), grid_power(7, 2)
('2**24', '(2**24)**3', '7**2')
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..engine.exact import ExactSampler
from ..engine.floats import FloatValue, exact_value
from . import dtypes as D
from .context import refuse, undecided
from .values import cast, exact_number, is_nan, is_random

__all__ = ["GridExpr", "GridUniform", "grid_text", "grid_power"]


def grid_text(n: int) -> str:
    """The size ``n`` of a grid as text: ``2**24`` for a power of two, else ``1,000``."""
    return f"2**{n.bit_length() - 1}" if n & (n - 1) == 0 else f"{n:,}"


def grid_power(n: int, m: int) -> str:
    """``n**m`` as text: ``(2**24)**3``, ``7**3``."""
    text = grid_text(n)
    return f"({text})**{m}" if "**" in text else f"{text}**{m}"


class GridExpr:
    """``f(u)`` for a :class:`GridUniform` ``u``: ``f`` maps a grid value to a value of the
    format ``fmt`` (``None``: the value itself, in the uniform's own format); ``increasing``
    says its direction.  It widens exactly into a format that holds every value of its own
    (``float16`` into ``float32``, ``float32`` into ``float64``), as torch's promotion does
    before comparing it with a wider tensor; its arithmetic then rounds in the wider format."""

    __slots__ = ("u", "f", "increasing", "_efmt")

    def __init__(self, u, f, increasing: bool, fmt=None):
        self.u = u
        self.f = f
        self.increasing = increasing
        self._efmt = fmt

    @property
    def base(self):
        return self.u

    @property
    def fmt(self):
        return self._efmt if self._efmt is not None else self.u.fmt

    def _float_threshold(self):
        return None

    def widen(self, fmt) -> "GridExpr":
        """This value held in ``fmt``: itself in its own format, exactly in a wider one, and
        refused in one that would round it (torch rounds; the layer does not model that)."""
        own = self.fmt
        if fmt is own:
            return self
        if fmt.precision < own.precision or fmt.emin > own.emin or fmt.emax < own.emax:
            raise refuse(f"a {own.name} uniform used as {fmt.name}: the conversion rounds it, "
                         "which exactspec does not model for a uniform; draw the uniform in "
                         f"{fmt.name}, or compare it in {own.name} or a wider dtype")
        f = self.f
        return GridExpr(self.u, (lambda v: FloatValue(v.value, fmt)) if f is None else
                        (lambda v: FloatValue(f(v).value, fmt)), self.increasing, fmt)

    def _map(self, g, increasing: bool) -> "GridExpr":
        f = self.f
        return GridExpr(self.u, g if f is None else (lambda v: g(f(v))),
                        self.increasing == increasing, self._efmt)

    def _scalar(self, a) -> FloatValue:
        if is_random(a):
            raise undecided(f"a {self.u.fmt.name} uniform in arithmetic with another random "
                            "value is beyond the exact method")
        fmt = self.fmt
        if isinstance(a, FloatValue) and a.fmt is fmt:
            return a
        return cast(a, D.DTYPES[fmt.name])

    def __mul__(self, a):
        a = self._scalar(a)
        if not a.value > 0:
            raise undecided(f"a {self.u.fmt.name} uniform times a number that is not positive")
        return self._map(lambda v: v * a, True)

    __rmul__ = __mul__

    def __truediv__(self, a):
        a = self._scalar(a)
        if not a.value > 0:
            raise undecided(f"a {self.u.fmt.name} uniform divided by a number that is not "
                            "positive")
        return self._map(lambda v: v / a, True)

    def __rtruediv__(self, a):
        a = self._scalar(a)
        if not a.value > 0:
            raise undecided(f"a number that is not positive divided by a {self.u.fmt.name} "
                            "uniform")
        return self._map(lambda v: a / v, False)

    def __add__(self, b):
        b = self._scalar(b)
        return self._map(lambda v: v + b, True)

    __radd__ = __add__

    def __sub__(self, b):
        b = self._scalar(b)
        return self._map(lambda v: v - b, True)

    def __rsub__(self, b):
        b = self._scalar(b)
        return self._map(lambda v: b - v, False)

    def __neg__(self):
        return self._map(lambda v: -v, False)

    def _value(self, j: int):
        v = self.u.value_at(j)
        return exact_value(v if self.f is None else self.f(v))

    def _compare(self, c, strict: bool) -> bool:
        """``f(u) < c`` (``strict``) or ``f(u) <= c``, as a branch on the grid."""
        if is_random(c):
            raise undecided(f"a {self.u.fmt.name} uniform compared with another random value "
                            "is beyond the exact method")
        c = exact_number(c)
        if is_nan(c):
            return False
        u = self.u
        lo, hi = u.lo, u.hi

        def holds(j):
            x = self._value(j)
            if isinstance(x, float) and x != x:
                return False
            return x < c if strict else x <= c

        if self.f is None and not isinstance(c, float):      # u itself: the cut directly
            k = math.ceil(c * u.n) if strict else math.floor(c * u.n) + 1
            cut = min(max(k, lo), hi)
        else:                  # the first index in [lo, hi] at which ``holds`` flips
            a, b = lo, hi
            while a < b:
                mid = (a + b) // 2
                if holds(mid) == self.increasing:
                    a = mid + 1
                else:
                    b = mid
            cut = a
        return u.split(cut, self.increasing, f"{'<' if strict else '<='} {c}")

    def __lt__(self, c):
        return self._compare(c, True)

    def __le__(self, c):
        return self._compare(c, False)

    def __gt__(self, c):
        return not self._compare(c, False)

    def __ge__(self, c):
        return not self._compare(c, True)

    def __bool__(self):
        raise undecided(f"the truth value of a {self.u.fmt.name} uniform: compare it with a "
                        "threshold")

    def __float__(self):
        raise undecided(f"float() of a {self.u.fmt.name} uniform: compare it with a threshold")

    def __repr__(self):
        return f"f(u{self.u.ident}) in {self.u.fmt.name}"


class GridUniform(GridExpr):
    """A uniform of dtype ``fmt`` drawn in a float run of another format: ``torch.rand(...,
    dtype=torch.float64)`` beside ``float32`` rows under ``--arith float32`` (vLLM's second
    engine draws its uniforms so).  It is uniform on its own dtype's generator grid ``{j / N}``
    (``N = 2**53`` for ``float64``, ``2**24`` for ``float32``, as torch draws them; ``2**11``
    for ``float16`` and ``2**8`` for ``bfloat16``, the grids the engine takes for those formats
    under ``--arith``), whose points are values of ``fmt``.  The layer keeps the grid indices
    still possible, ``lo <= j < hi``; comparing a monotone rounded expression of it
    (:class:`GridExpr`: ``u``, ``u * c``, ``1 - u``, ... each operation rounded in ``fmt``) with
    a number is an exact branch of the engine whose weight is the share of those indices where
    the comparison holds (the cut found by bisection).  Any other use (it against another
    random value, its log) is refused."""

    __slots__ = ("run", "_fmt", "n", "lo", "hi", "ident")

    def __init__(self, run, fmt):
        super().__init__(self, None, True)
        self.run = run
        self._fmt = fmt
        self.n = fmt.grid
        self.lo, self.hi = 0, fmt.grid
        count = run.__dict__.get("grid_uniforms", 0) + 1
        run.grid_uniforms = count
        self.ident = count

    @property
    def fmt(self):
        return self._fmt

    def value_at(self, j: int) -> FloatValue:
        return FloatValue(float(Fraction(j, self.n)), self._fmt)

    def split(self, cut: int, increasing: bool, what: str) -> bool:
        """``True`` for the indices below ``cut`` (``increasing``) or from it on: an exact
        branch of the engine on the indices still possible."""
        lo, hi = self.lo, self.hi
        cut = min(max(cut, lo), hi)
        held = cut - lo if increasing else hi - cut
        if held == hi - lo:
            return True
        if held == 0:
            return False
        outcome = ExactSampler.coin(self.run.sampler, Fraction(held, hi - lo),
                                    f"u{self.ident} ({self._fmt.name}) {what}")
        if outcome == increasing:
            self.hi = cut
        else:
            self.lo = cut
        return outcome

    def __repr__(self):
        return (f"u{self.ident} ({self._fmt.name}) in [{self.lo}, {self.hi}) / "
                f"{grid_text(self.n)}")
