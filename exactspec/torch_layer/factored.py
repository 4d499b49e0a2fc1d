"""Multi-position PyTorch rules with every draft position as its own tensor axis.

A multi-position PyTorch rule (``verify FILE:fn --tokens M``) draws ``M - 1`` drafts
``x_1 .. x_{M-1}``, one per draft row, with ``torch.multinomial(q, 1)``.  Path enumeration runs
the body once per combination of drafts (about ``|V|^(M-1)`` runs).  Here the body runs once
per path of the *other* random choices, with draft ``x_i`` kept as its own axis ``i``: a
:class:`~exactspec.torch_layer.branched.Branched` value of axis ``i`` (its value on every
branch of ``x_i``), computed branch by branch by the same scalar operation the path run applies.

- A comparison of a fresh uniform with a threshold of axis ``i`` (``u < c[x_i]``, and
  ``u * a[x_i] < c[x_i]`` as kernels write it without a division) is one branch point of the
  engine whose outcomes carry a weight vector on axis ``i``: ``P(u < c[x])`` per branch ``x``
  and its complement.  The uniform may be read again only by an inverse-CDF lookup (below);
  any other reuse falls back.
- An inverse-CDF lookup of a fresh uniform against plain thresholds (``(cdf <= u * total)
  .sum()``) is kept as the law of its count (:class:`LazyCount`), not split into ``|V|``
  paths.  Looked up after a comparison on axis ``i`` (the recovered token drawn with the
  uniform that rejected), the count's law depends on ``x_i``: its vector is summed over axis
  ``i`` exactly (:func:`_split_count_factor`), the axis then used by that token.
- A weight of the path is therefore a number times one weight vector per axis, and the
  control state (which positions were accepted, what was written where) is a plain value.
- Each emitted token is a plain index, a value of one axis (the draft itself or a function of
  it), or a token drawn once with a known law (:class:`~exactspec.torch_layer.branched.
  LawIndex`: ``torch.multinomial`` of plain weights, an exponential race on fresh noise).  When
  no two emitted tokens come from the same axis or the same draw, the path's law of the emitted
  tokens is a product measure, one vector per token: a *rank-one* term ``(coef, (f_1, ..,
  f_j))`` (:mod:`exactspec.core.rank_one`), and the call's law is the sum of its paths' terms.

An operation that mixes two axes, a branched value deciding Python control flow, a uniform
compared on two axes (one uniform shared by every position), two emitted tokens of one axis: :class:`~exactspec.
core.signals.CannotProceed`, and the caller enumerates paths instead.

Each of the three runs of ``--arith`` takes this route: exact arithmetic with ideal uniforms
(above), exact arithmetic on a grid (a comparison on axis ``i`` holds with the grid count
below the threshold on each branch, the path run's rule; a lazy count's comparisons are cut
at grid points of the uniform itself), and the float run (:class:`FactoredFloatSampler`: the
rows and every operation in the format, the format's generator grid, the comparisons cut
where the path run's rounded comparisons flip).

>>> from exactspec.core.dist import Dist
>>> from exactspec.torch_layer.rule import load_pytorch_rule
>>> rule = load_pytorch_rule("examples/engines/flashinfer_chain.py:chain")
>>> law = factored_call_law(rule, Dist("1/2,1/2"), Dist("1/4,3/4"), 2)
>>> law.paths, law.axes, sorted(len(f) for _, f in law.terms)
(4, 2, [1, 1, 2, 3])
"""

from __future__ import annotations

import math
import operator
import time
from fractions import Fraction

from ..core.errors import ExactspecError, TooLarge
from ..engine.driver import depth_first
from ..core.integer_rows import exact_sum
from ..core.rank_one import mass
from ..engine.float_sampler import Expr
from ..engine.floats import FloatValue, get_format
from ..engine.uniform import UniformView
from . import dtypes as D
from ..core.signals import CannotProceed
from .branched import Branched, LawIndex, VectorSampler, axis_of, below_on_grid
from .branched_float import VectorFloatSampler
from .context import Run
from .module import installed
from .tensor import Tensor

__all__ = ["FactoredSampler", "FactoredFloatSampler", "CallLaw", "factored_call_law",
           "AxisUniform"]


class _AxisVector:
    """A weight per branch of draft axis ``axis``."""

    __slots__ = ("axis", "values")

    def __init__(self, axis: int, values: list):
        self.axis = axis
        self.values = values

    def __ne__(self, other):
        return True

    def __eq__(self, other):
        return False

    __hash__ = None


class _FactorWeight:
    """A path's weight: a number times one weight vector per draft axis."""

    __slots__ = ("scalar", "axes")

    def __init__(self, scalar=Fraction(1), axes=None):
        self.scalar = scalar
        self.axes = axes or {}

    def __mul__(self, other):
        if isinstance(other, _AxisVector):
            axes = dict(self.axes)
            old = axes.get(other.axis)
            axes[other.axis] = other.values if old is None else \
                [a * b for a, b in zip(old, other.values)]
            return _FactorWeight(self.scalar, axes)
        if isinstance(other, _FactorWeight):
            raise CannotProceed("two path weights multiplied")
        return _FactorWeight(self.scalar * other, self.axes)

    __rmul__ = __mul__


class AxisUniform(UniformView):
    """``u * a[x]`` for a fresh uniform ``u`` and a value ``a`` of one draft axis (``a >= 0``
    on every branch): compared with a threshold ``c`` it is the comparison ``u < c[x] / a[x]``
    branch by branch (``0 < c[x]`` where ``a[x] = 0``)."""

    __slots__ = ("axis_scale",)

    def __init__(self, base, axis_scale: Branched):
        super().__init__(base, 1, 0)
        self.axis_scale = axis_scale

    def _thresholds(self, c, strict: bool) -> Branched:
        scale = self.axis_scale
        cs = c.values if isinstance(c, Branched) else [c] * len(scale.values)
        if isinstance(c, Branched) and c.axis != scale.axis:
            raise CannotProceed("an operation mixing two draft axes")
        out = []
        for a, b in zip(scale.values, cs):
            if type(a) is not Fraction and type(a) is not int or \
                    type(b) is not Fraction and type(b) is not int:
                raise CannotProceed("a branched threshold that is not an exact number")
            if a < 0:
                raise CannotProceed("a uniform times a negative branched value")
            if a == 0:                       # u * 0 < c: no uniform left in it
                holds = 0 < b if strict else 0 <= b
                out.append(Fraction(1) if holds else Fraction(-1))
            else:
                out.append(Fraction(b) / a)
        return Branched(out, scale.axis)

    def __lt__(self, c):
        if self.base.linked or self.base.spent or not isinstance(self.base.sampler,
                                                                 FactoredSampler):
            raise CannotProceed("a branched product of a uniform outside the factored run")
        return self.base.sampler._split_uniform(self.base, self._thresholds(c, True), True)

    def __le__(self, c):
        if self.base.linked or self.base.spent or not isinstance(self.base.sampler,
                                                                 FactoredSampler):
            raise CannotProceed("a branched product of a uniform outside the factored run")
        return self.base.sampler._split_uniform(self.base, self._thresholds(c, False), False)

    def _refuse(self, *args):
        raise CannotProceed("arithmetic on a uniform times a branched value")

    __mul__ = __rmul__ = __truediv__ = __add__ = __radd__ = __sub__ = __rsub__ = _refuse
    __neg__ = _refuse

    def __repr__(self):
        return f"AxisUniform(u{self.base.ident} * axis{self.axis_scale.axis})"


class LazyCount:
    """``shift + sum_k [v >= c_k] + sum_k [v < d_k]`` for one view ``v = a * u + b`` of a
    fresh uniform ``u`` read nowhere else: the count of an inverse-CDF lookup
    (``(cdf <= u * total).sum()``), kept as its law rather than split into ``|V|`` paths.  A
    single comparison (:class:`LazyIndicator`) is a count of one term; a Python-level use of a
    single comparison splits the uniform as usual, anything else falls back."""

    lazy_count = True
    __slots__ = ("sampler", "view", "above", "below", "shift", "_law")

    def __init__(self, sampler, view, above, below, shift=0):
        self.sampler, self.view = sampler, view
        self.above, self.below, self.shift = above, below, shift
        self._law = None

    def __add__(self, other):
        if type(other) is int or type(other) is bool:
            return LazyCount(self.sampler, self.view, self.above, self.below,
                             self.shift + int(other))
        if isinstance(other, LazyCount) and other.view.base is self.view.base and \
                (other.view.scale, other.view.shift) == (self.view.scale, self.view.shift):
            return LazyCount(self.sampler, self.view, self.above + other.above,
                             self.below + other.below, self.shift + other.shift)
        raise CannotProceed("a lazy comparison of a uniform added to another value")

    __radd__ = __add__

    def intervals(self) -> list:
        """``[(lo, hi, count), ...]``: the pieces of ``[0, 1)`` where ``u`` gives each count."""
        v = self.view
        events = []                       # (u threshold, +1 above / -1 below)
        for c in self.above:
            events.append(((c - v.shift) / v.scale, 1))
        for d in self.below:
            events.append(((d - v.shift) / v.scale, -1))
        events.sort(key=lambda e: e[0])
        count = self.shift + len(self.below)
        out: list = []
        prev = Fraction(0)
        for t, delta in events:
            t = min(max(t, Fraction(0)), Fraction(1))
            if t > prev:
                out.append((prev, t, count))
                prev = t
            count += delta
        if prev < 1:
            out.append((prev, Fraction(1), count))
        return out

    def law(self) -> dict:
        """``{value: probability}`` of the count, exact (``u`` uniform on ``[0, 1)``)."""
        if self._law is None:
            out: dict = {}
            for lo, hi, k in self.intervals():
                out[k] = out.get(k, Fraction(0)) + (hi - lo)
            self._law = out
        return self._law

    def _decide(self, op, c):
        if type(c) not in (int, Fraction):
            raise CannotProceed("a lazy count compared with a value that is not a number")
        split = self.sampler._axis_split.get(self.view.base.ident)
        if split is None:
            counts = self.law()
        else:               # the pieces of [0, 1) some branch of the axis split left
            _, below, outcome = split
            edge = max(below) if outcome else min(below)
            counts = {k for lo, hi, k in self.intervals()
                      if (edge > lo if outcome else edge < hi)}
        outcomes = {op(k, c) for k in counts}
        if len(outcomes) != 1:
            raise CannotProceed("a lazy count compared where the answer is random")
        return outcomes.pop()

    def __lt__(self, c):
        return self._decide(operator.lt, c)

    def __le__(self, c):
        return self._decide(operator.le, c)

    def __gt__(self, c):
        return self._decide(operator.gt, c)

    def __ge__(self, c):
        return self._decide(operator.ge, c)

    def __bool__(self):
        raise CannotProceed("a lazy count read into Python")

    def _refuse(self, *args):
        raise CannotProceed("a lazy count used in a computation")

    __index__ = __int__ = __float__ = __hash__ = _refuse
    __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __neg__ = _refuse

    def __eq__(self, c):
        return self._decide(operator.eq, c)

    def __ne__(self, c):
        return self._decide(operator.ne, c)

    def __repr__(self):
        return f"<lazy count of u{self.view.base.ident}>"


class LazyIndicator(LazyCount):
    """One lazy comparison ``v >= c`` (``above``) or ``v < c`` of a fresh uniform's view."""

    __slots__ = ("cut", "strict", "truth")

    def __init__(self, sampler, view, c, above: bool, cut, strict: bool, truth: bool):
        super().__init__(sampler, view, (c,) if above else (), () if above else (c,))
        self.cut, self.strict, self.truth = cut, strict, truth

    def __bool__(self):
        """The comparison decided in Python: the uniform splits as usual (only while this
        is its one lazy comparison)."""
        return self.sampler._force(self)



def _cut_side(op, flipped: bool):
    """How ``v op c`` cuts a uniform view ``v`` (``c op v`` when ``flipped``): ``(above,
    strict, truth)``, the outcome kept being ``v`` below the cut (``v < c``, ``v <= c``) or
    above it (``v > c``, ``v >= c``, stored as the complement of ``v < c`` or ``v <= c``);
    ``None`` for any other comparison."""
    if flipped:
        op = {operator.lt: operator.gt, operator.le: operator.ge, operator.gt: operator.lt,
              operator.ge: operator.le}.get(op, op)
    if op in (operator.lt, operator.le):
        return False, op is operator.lt, True
    if op in (operator.gt, operator.ge):
        return True, op is operator.ge, False
    return None

class FactoredSampler(VectorSampler):
    """The exact interpreter with each draft as its own branch axis (see the module's text);
    its uniforms ideal, or on ``{0, 1/N, ..., (N-1)/N}`` with ``grid`` ``N``."""

    def __init__(self, size: int, grid: int | None = None):
        super().__init__(size, grid)

    def _reset(self):
        super()._reset()
        self.weight = _FactorWeight()
        self.axes: list = []             # (Branched identity, q Dist) per draft axis
        self._lazy: dict = {}            # uniforms compared lazily: ident -> view
        self._axis_split: dict = {}      # ident -> (axis, P(u < c[x]) per x, outcome)
        self._lazy_uses: dict = {}

    def draft(self, q, what: str = "draft"):
        axis = len(self.axes)
        b = Branched(list(range(self.size)), axis)
        self.axes.append((b, q))
        self.drafted.append(b)
        return b

    def branched_product(self, op, a, b):
        """``u * c`` of a fresh uniform and a branched value (the hook of the tensor layer's
        arithmetic): an :class:`AxisUniform`; any other mix of a random and a branched value
        falls back."""
        import operator

        from ..engine.uniform import Uniform

        u, c = (a, b) if isinstance(b, Branched) else (b, a)
        if op is not operator.mul or not isinstance(u, Uniform) or u.sampler is not self or \
                not isinstance(c, Branched):
            raise CannotProceed("a branched value in arithmetic with a random value")
        self._check_fresh(u)
        return AxisUniform(u, c)

    def _check_fresh(self, u):
        if u is not None and getattr(u, "ident", None) in self._lazy:
            raise CannotProceed("a uniform read again after a lazy comparison")
        super()._check_fresh(u)

    def lazy_compare(self, op, a, b):
        """``op(a, b)`` of a view of a fresh uniform and a plain exact number, kept lazy (a
        :class:`LazyIndicator`, the hook of the tensor layer's comparisons); ``None`` for any
        other comparison (decided as usual)."""
        from ..engine.uniform import Uniform

        if isinstance(a, UniformView) and not isinstance(a, AxisUniform):
            view, c, flipped = a, b, False
        elif isinstance(b, UniformView) and not isinstance(b, AxisUniform):
            view, c, flipped = b, a, True
        else:
            return None
        base = view.base
        if type(c) not in (int, Fraction) or not isinstance(base, Uniform) or \
                base.sampler is not self or base.linked or base.spent:
            return None
        known = self._lazy.get(base.ident)
        if known is None:
            if (base.ident in self._spent and base.ident not in self._axis_split) or \
                    base.lo != 0 or base.hi != 1:
                return None
        elif self.grid is None and (known.scale, known.shift) != (view.scale, view.shift):
            raise CannotProceed("two views of one uniform compared lazily")
        if not view.scale > 0:
            return None
        c = Fraction(c)
        # v op c with the view on the left: v < c, v <= c (below), v > c, v >= c (above)
        side = _cut_side(op, flipped)
        if side is None:
            return None
        above, strict, truth = side
        if self.grid is not None:        # on the grid: the cut a grid point, in u itself
            t = (c - view.shift) / view.scale
            return self._lazy_cut(base, below_on_grid(t, self.grid, strict), above, truth)
        self._lazy[base.ident] = view
        self._spent.add(base.ident)
        self._lazy_uses[base.ident] = self._lazy_uses.get(base.ident, 0) + 1
        cut = (c - view.shift) / view.scale
        return LazyIndicator(self, view, c, above, cut, strict, truth)

    def _lazy_cut(self, base, cut: Fraction, above: bool, truth: bool) -> "LazyIndicator":
        """A lazy comparison that holds for the grid points ``u < cut`` (``above``: ``u >=
        cut``), ``cut`` a grid point: kept on the uniform itself (a unit view), so that every
        comparison of one uniform, whatever expression of it was compared, is one count."""
        known = self._lazy.get(base.ident)
        if known is None:
            known = UniformView(base, Fraction(1), Fraction(0))
            self._lazy[base.ident] = known
        elif (known.scale, known.shift) != (1, 0):
            raise CannotProceed("two views of one uniform compared lazily")
        self._spent.add(base.ident)
        self._lazy_uses[base.ident] = self._lazy_uses.get(base.ident, 0) + 1
        return LazyIndicator(self, known, cut, above, cut, True, truth)

    def _force(self, ind: LazyIndicator) -> bool:
        """A lazy comparison decided in Python: ``v < c`` (or ``<=``) splits the uniform."""
        base = ind.view.base
        if self._lazy_uses.get(base.ident) != 1 or base.ident in self._axis_split:
            raise CannotProceed("a lazy comparison decided in Python after others of its uniform")
        del self._lazy[base.ident]
        del self._lazy_uses[base.ident]
        self._spent.discard(base.ident)
        below = super(VectorSampler, self)._split_uniform(base, ind.cut, ind.strict)
        return below if ind.truth else not below

    def _split_uniform(self, u, c, strict: bool) -> bool:
        self._check_fresh(u)
        if not isinstance(c, Branched):
            return super(VectorSampler, self)._split_uniform(u, c, strict)
        if u.linked or u.spent or u.lo != 0 or u.hi != 1:
            raise CannotProceed("a branched comparison of a uniform already split")
        below = self._below_row(c.values, strict, self._never_of(c.axis))
        return self._axis_choose(u, c.axis, below, f"u{u.ident} {'<' if strict else '<='} "
                                                   f"c[x{c.axis}]")

    def _never_of(self, axis: int) -> list:
        """The branches of draft axis ``axis`` of probability 0 (their weight is 0 anyway)."""
        return [pr == 0 for pr in self.axes[axis][1].probs]

    def _axis_choose(self, u, axis: int, below: list, what: str) -> bool:
        """One branch point on the fresh uniform ``u``: ``True`` with probability
        ``below[x]`` on branch ``x`` of draft axis ``axis`` (``u`` below a grid point or an
        exact cut per branch); ``u`` may be read again only by a lazy count."""
        never = self._never_of(axis)
        self._spent.add(u.ident)
        self._spent_uniforms.append(u)
        above = [(0 if nev else 1) - b for b, nev in zip(below, never)]
        options = []
        if any(b != 0 for b in below):
            options.append((True, _AxisVector(axis, below), what))
        if any(a != 0 for a in above):
            options.append((False, _AxisVector(axis, above), f"not {what}"))
        result = self._choose("uniform", options)
        self._axis_split[u.ident] = (axis, below, result)
        return result


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
        side = _cut_side(op, flipped)
        if side is None:
            return None
        above, strict, truth = side
        k = self._cut(e.f, self._value(c), strict, self._guesses.get(base.ident, 0))
        self._guesses[base.ident] = k
        return self._lazy_cut(base, Fraction(k, self.grid), above, truth)


class CallLaw:
    """The law of one call of a multi-position rule as a sum of rank-one terms.

    Attributes
    ----------
    terms : list
        ``(coef, factors)`` per engine path (zero terms left out), one factor per emitted
        token (:mod:`exactspec.core.rank_one`).
    paths : int
        Engine paths run (the draft axes vectorised, not counted as paths).
    axes : int
        Draft axes of the call.
    seconds : float
        CPU seconds.
    """

    def __init__(self, terms, paths, axes, seconds, n):
        self.terms, self.paths, self.axes, self.seconds, self.n = terms, paths, axes, seconds, n


def _as_vector(values) -> list:
    return [Fraction(v) if type(v) is not Fraction else v for v in values]


def factored_call_law(rule, target, draft, gamma: int, *, max_paths: int | None = None,
                      arith=None, grid: int | None = None, sum_order: str | None = None
                      ) -> CallLaw:
    """The law of one call of the PyTorch ``rule`` handed ``gamma + 1`` target rows
    ``target`` and ``gamma`` draft rows ``draft`` (exact :class:`~exactspec.core.dist.Dist`
    rows, the same at every position), every draft an axis; a rule that does something this
    route does not track raises :class:`~exactspec.core.signals.CannotProceed` (a refusal
    met here is raised as it is; the planner then takes the path route, which gives the
    refusal its words).  More than
    ``max_paths`` engine paths is refused (:class:`TooLarge`).

    In exact arithmetic the uniforms are ideal, or on ``grid``; with ``arith`` (a float
    format) the float run (:class:`FactoredFloatSampler`): the rows rounded into the format
    and held in a tensor of its dtype, every operation rounded, the uniforms on the format's
    generator grid unless ``grid`` says otherwise, long float sums in ``sum_order``; the
    drafts follow the exact draft row."""
    start = time.process_time()
    if any(type(v) is not Fraction for v in list(target.probs) + list(draft.probs)):
        if any(not isinstance(v, (int, Fraction)) for v in list(target.probs) +
               list(draft.probs)):
            raise CannotProceed("rows that are not exact rationals")
    p = _as_vector(target.probs)
    q = _as_vector(draft.probs)
    n = len(p)
    if arith is None:
        s, fmt, dtype = FactoredSampler(n, grid), None, D.float64
        p_held, q_held = p, q
    else:
        fmt = get_format(arith)
        s, dtype = FactoredFloatSampler(n, fmt, grid, sum_order), D.DTYPES[fmt.name]
        p_held = [FloatValue(fmt.round(v), fmt) for v in p]
        q_held = [FloatValue(fmt.round(v), fmt) for v in q]
    terms: list = []

    def body(s):
        run = Run(s, fmt)
        with installed(run):
            p_rows = Tensor.new(p_held * (gamma + 1), (gamma + 1, n), dtype)
            q_rows = Tensor.new(q_held * gamma, (gamma, n), dtype)
            run.draft = (q_rows, q_rows._st.version, draft)
            try:
                result = rule.function(p_rows, q_rows)
            except (CannotProceed, ExactspecError):
                raise
            except Exception as err:
                raise CannotProceed(f"{type(err).__name__}: {err}") from None
            return _emitted(result, n, gamma)

    def leaf(s, tokens):
        axes[0] = max(axes[0], len(s.axes))
        term = _term(s, tokens, n)
        if term is not None:
            terms.append(term)

    def every(paths):
        if max_paths is not None and paths > max_paths:
            raise TooLarge(f"the factored run of {rule.spec} passed {max_paths:,} engine "
                           "paths (its draft axes vectorised): over the budget; "
                           "--max-paths N to insist", estimate=paths, budget=max_paths)

    axes = [0]
    paths = depth_first(s, body, leaf, finish=lambda s: s.finish(),
                        differs=lambda s: CannotProceed("a replay that differs"), every=every)
    axes = axes[0]
    total = exact_sum([mass(t) for t in terms])
    if total != 1:
        raise CannotProceed(f"a call law whose mass is {total}, not 1")
    return CallLaw(terms, paths, axes, time.process_time() - start, n)


def _emitted(result, n: int, gamma: int) -> list:
    """The emitted tokens of one path: plain indices, axis values, law tokens."""
    if isinstance(result, Tensor):
        if result.ndim > 1 or result.dtype.kind != "int":
            raise CannotProceed("a result that is not a 1-D integer tensor")
        result = result._values()
    if not isinstance(result, (list, tuple)):
        raise CannotProceed("a result that is not a list of tokens")
    out = []
    counted: set = set()
    for t in result:
        if isinstance(t, Tensor):
            if t.numel() != 1 or t.dtype.kind != "int":
                raise CannotProceed("a token that is not one integer")
            t = t._values()[0]
        if type(t) is int:
            if not 0 <= t < n:
                raise CannotProceed("a token out of range")
        elif type(t) is Branched:
            if any(type(v) is not int or not 0 <= v < n for v in t.values):
                raise CannotProceed("a branched token that is not an index on every branch")
        elif isinstance(t, LazyCount):
            if t.view.base.ident in counted:
                raise CannotProceed("one lazy count emitted twice")
            counted.add(t.view.base.ident)
            if t.view.base.ident in t.sampler._axis_split:    # depends on the split's axis
                out.append(t)
                continue
            law = t.law()
            if any(type(k) is not int or not 0 <= k < n for k in law):
                raise CannotProceed("a lazy count that is not an index")
            probs = [Fraction(0)] * n
            for k, w in law.items():
                probs[k] = w
            t = LawIndex(probs, f"inverse-CDF u{t.view.base.ident}")
        elif type(t) is not LawIndex:
            raise CannotProceed("a result that is not a token")
        out.append(t)
    if not out or len(out) > gamma + 1:
        raise CannotProceed("a number of tokens outside 1..gamma + 1")
    return out


def _term(s: FactoredSampler, tokens: list, n: int):
    """The path's law of its emitted tokens, one vector per token (``None``: weight 0)."""
    weight = s.weight
    coef = weight.scalar
    masses = {}
    for axis, (_, q) in enumerate(s.axes):
        w = weight.axes.get(axis)
        qs = _as_vector(q.probs)
        masses[axis] = qs if w is None else [a * b for a, b in zip(qs, w)]
    for axis in weight.axes:
        if axis not in masses:
            raise CannotProceed("a weight on an axis that was not drafted")
    used_axes: set = set()
    used_laws: list = []
    factors = []
    for t in tokens:
        if type(t) is int:
            f = [Fraction(0)] * n
            f[t] = Fraction(1)
        elif isinstance(t, LazyCount):          # a count of a uniform split on an axis
            axis, below, outcome = s._axis_split[t.view.base.ident]
            if axis in used_axes:
                raise CannotProceed("two emitted tokens of one draft axis")
            used_axes.add(axis)
            f = _split_count_factor(t.intervals(), masses[axis], below, outcome, n)
        elif type(t) is LawIndex:
            if any(t is other for other in used_laws):
                raise CannotProceed("one drawn token emitted twice")
            used_laws.append(t)
            f = _as_vector(t.probs)
        else:
            if t.axis in used_axes:
                raise CannotProceed("two emitted tokens of one draft axis")
            used_axes.add(t.axis)
            m = masses[t.axis]
            if t.values == list(range(n)):
                f = m
            else:
                f = [Fraction(0)] * n
                for x, v in enumerate(t.values):
                    f[v] += m[x]
        factors.append(tuple(f))
    for axis, m in masses.items():
        if axis not in used_axes:
            coef *= exact_sum(m)
    if coef == 0 or any(not any(f) for f in factors):
        return None
    return coef, tuple(factors)


def _split_count_factor(pieces, m, below, outcome: bool, n: int) -> list:
    """The law of a lazy count of a uniform ``u`` split on an axis, the axis summed out:
    ``f[k] = sum_x c_x |I_x  n  J_k|``, ``J_k`` the pieces of ``[0, 1)`` giving count ``k``,
    ``I_x = [0, b_x)`` (``u < c[x]`` held) or ``[b_x, 1)`` (it did not), ``b_x = P(u < c[x])``,
    ``c_x = m[x] / |I_x|`` (``m`` the axis's mass, which holds ``|I_x|`` as a factor), by
    prefix sums over the ``b_x`` sorted."""
    import bisect

    pts = []
    for mx, b in zip(m, below):
        size = b if outcome else 1 - b
        if mx and size:
            pts.append((b, mx / size))
    pts.sort(key=lambda e: e[0])
    ts = [b for b, _ in pts]
    s0 = [Fraction(0)]
    s1 = [Fraction(0)]
    for b, c in pts:
        s0.append(s0[-1] + c)
        s1.append(s1[-1] + c * b)
    total0 = s0[-1]
    f = [Fraction(0)] * n
    for lo, hi, k in pieces:
        i_lo = bisect.bisect_right(ts, lo)       # b_x <= lo
        i_hi = bisect.bisect_left(ts, hi)        # b_x < hi
        mid0, mid1 = s0[i_hi] - s0[i_lo], s1[i_hi] - s1[i_lo]
        if outcome:      # I_x = [0, b_x): all of J_k when b_x >= hi, [lo, b_x) when inside
            v = (total0 - s0[i_hi]) * (hi - lo) + (mid1 - mid0 * lo)
        else:            # I_x = [b_x, 1): all of J_k when b_x <= lo, [b_x, hi) when inside
            v = s0[i_lo] * (hi - lo) + (mid0 * hi - mid1)
        if v:
            if type(k) is not int or not 0 <= k < n:
                raise CannotProceed("a lazy count that is not an index")
            f[k] += v
    return f
