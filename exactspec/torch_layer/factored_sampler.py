"""The exact interpreter of the factored route: every draft position its own tensor axis.

:class:`FactoredSampler` runs a multi-position PyTorch rule's body once per path of the random
choices other than the drafts (:mod:`exactspec.torch_layer.factored` states the route and sums
the call's law).
Draft ``x_i`` is a :class:`~exactspec.torch_layer.branched.Branched` value of axis ``i``; a
path's weight is a number times one weight vector per axis (a comparison of a fresh uniform
with a threshold of axis ``i`` is one branch point whose outcomes carry a vector on axis
``i``); ``u * a[x_i]`` is an :class:`AxisUniform`; an inverse-CDF lookup of a fresh uniform is
kept as the law of its count (:class:`LazyCount`, one comparison a :class:`LazyIndicator`),
written as a sum of comparisons or as a kernel writes it, ``argmax(cumsum(w) > u * total)``:
the first lane a lane of comparisons ``v < c_k`` holds (:func:`lazy_lane_first`, a count
again) and their maximum (:func:`lazy_lane_extreme`, one comparison).  The float run of the
same route is :mod:`.factored_float`.

>>> import operator
>>> cut_side(operator.lt, False), cut_side(operator.lt, True), cut_side(operator.eq, False)
((False, True, True), (True, False, False), None)
"""

from __future__ import annotations

import operator
from fractions import Fraction

from ..core.integer_rows import fraction_of, reduced_fraction
from ..core.signals import CannotProceed
from ..engine.uniform import UniformView
from .branched import Branched, VectorSampler, below_on_grid
from .dispatch import OPS

_ZERO, _ONE = Fraction(0), Fraction(1)


def _first(event):
    return event[0]

__all__ = ["FactoredSampler", "AxisUniform", "LazyCount", "LazyIndicator", "cut_side",
           "lazy_lane_extreme", "lazy_lane_first", "context_of"]


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
        append = out.append
        for a, b in zip(scale.values, cs):
            ta, tb = type(a), type(b)
            if ta is Fraction and tb is Fraction and a._numerator > 0:
                # b / a of two rationals, a > 0: one gcd, no constructor's dispatch
                append(fraction_of(b._numerator * a._denominator,
                                   b._denominator * a._numerator))
                continue
            if ta is not Fraction and ta is not int or tb is not Fraction and tb is not int:
                raise CannotProceed("a branched threshold that is not an exact number")
            if a < 0:
                raise CannotProceed("a uniform times a negative branched value")
            if a == 0:                       # u * 0 < c: no uniform left in it
                holds = 0 < b if strict else 0 <= b
                append(Fraction(1) if holds else Fraction(-1))
            else:
                append(Fraction(b) / a)
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

    @staticmethod
    def summed(values: list) -> "LazyCount":
        """``sum(values)`` of integers and lazy counts of one view, as :meth:`__add__` would
        add them in turn, with their comparisons gathered at once (a row's ``.sum()``)."""
        first = next(v for v in values if isinstance(v, LazyCount))
        view = first.view
        above: list = []
        below: list = []
        shift = 0
        for v in values:
            if type(v) is int or type(v) is bool:
                shift += int(v)
            elif isinstance(v, LazyCount) and v.view.base is view.base and \
                    (v.view.scale, v.view.shift) == (view.scale, view.shift):
                above.extend(v.above)
                below.extend(v.below)
                shift += v.shift
            else:
                raise CannotProceed("a lazy comparison of a uniform added to another value")
        return LazyCount(first.sampler, view, tuple(above), tuple(below), shift)

    def intervals(self) -> list:
        """``[(lo, hi, count), ...]``: the pieces of ``[0, 1)`` where ``u`` gives each count."""
        v = self.view
        scale = v.scale
        if not v.shift and type(scale) is Fraction and \
                all(type(c) is Fraction for c in self.above) and \
                all(type(d) is Fraction for d in self.below):
            sn, sd = scale._numerator, scale._denominator      # c / scale: one gcd each
            events = [(fraction_of(c._numerator * sd, c._denominator * sn), 1)
                      for c in self.above]
            events += [(fraction_of(d._numerator * sd, d._denominator * sn), -1)
                       for d in self.below]
        else:                             # (u threshold, +1 above / -1 below)
            events = [((c - v.shift) / scale, 1) for c in self.above]
            events += [((d - v.shift) / scale, -1) for d in self.below]
        events.sort(key=_first)
        count = self.shift + len(self.below)
        out: list = []
        prev = _ZERO
        for t, delta in events:
            t = _ZERO if t < 0 else _ONE if t > 1 else t
            if t > prev:
                out.append((prev, t, count))
                prev = t
            count += delta
        if prev < 1:
            out.append((prev, _ONE, count))
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


def context_of(sampler, base) -> tuple:
    """The interval ``[lo, hi)`` of the fresh uniform ``base`` that the kernel's branch
    running now is on (a Triton ``if`` on a comparison of it run both ways,
    :mod:`exactspec.triton_layer.uniform_cases`); ``[0, 1)`` outside every such branch."""
    ctx = getattr(sampler, "cases_context", None)
    if not ctx or ctx[-1][0] is not base:
        return _ZERO, _ONE
    return ctx[-1][1], ctx[-1][2]


def _lane_cuts(values: list):
    """A lane of lazy comparisons ``v < c_k`` of one uniform's view, beside plain bools:
    ``(first indicator, [c_k, or None for a plain False, or True for a plain True])``;
    ``None`` for any other lane."""
    first = None
    cuts: list = []
    for v in values:
        if type(v) is LazyIndicator and not v.above and v.truth and \
                (first is None or (v.view.base is first.view.base and
                                   (v.view.scale, v.view.shift) ==
                                   (first.view.scale, first.view.shift))):
            first = v if first is None else first
            cuts.append(v.below[0])
        elif type(v) in (bool, int) and v in (0, 1):
            cuts.append(True if v else None)
        else:
            return None
    return (first, cuts) if first is not None else None


def lazy_lane_extreme(values: list, largest: bool, boolean: bool):
    """``max`` (``largest``) or ``min`` of a lane of lazy comparisons ``v < c_k`` of one
    fresh uniform's view: ``v < max c_k`` (some holds) or ``v < min c_k`` (all hold), a
    lazy comparison again, or a plain value where it holds for every or no value of the
    uniform in its current part (:func:`context_of`; ``boolean``: a bool, else ``0``/``1``)."""
    lane = _lane_cuts(values)
    if lane is None:
        raise CannotProceed("the maximum of lazy comparisons of a uniform that are not all "
                            "of the form v < c")
    first, cuts = lane
    # (by identity: a threshold Fraction(1) equals True)
    if any(c is True for c in cuts) if largest else any(c is None for c in cuts):
        return bool(largest) if boolean else int(largest)
    numbers = [c for c in cuts if c is not None and c is not True]
    if not numbers:                   # every lane plain: all False (max), all True (min)
        return (not largest) if boolean else int(not largest)
    c = max(numbers) if largest else min(numbers)
    view = first.view
    cut = (c - view.shift) / view.scale
    lo, hi = context_of(first.sampler, view.base)
    if cut >= hi or cut <= lo:        # holds on the whole part of the uniform, or nowhere
        holds = cut >= hi
        return holds if boolean else int(holds)
    s = first.sampler
    s._lazy_uses[view.base.ident] = s._lazy_uses.get(view.base.ident, 0) + 1
    return LazyIndicator(s, view, c, False, cut, first.strict, True)


def lazy_lane_first(values: list, largest: bool) -> "LazyCount":
    """The first index of the largest element of a lane of lazy comparisons ``v < c_k`` of
    one fresh uniform's view (a kernel's ``argmax(cumsum > u)``, the inverse-CDF lookup):
    the number of leading lanes that do not hold, ``sum_k [v >= max(c_0..c_k)]``, a lazy
    count.  Only where some lane holds for every value of the uniform in its current part
    (:func:`context_of`; else the index is 0 where none holds, which a count is not)."""
    lane = _lane_cuts(values) if largest else None
    if lane is None:
        raise CannotProceed("the first index of lazy comparisons of a uniform other than "
                            "argmax over v < c")
    first, cuts = lane
    view = first.view
    above: list = []
    shift = 0
    top = None
    for c in cuts:
        if c is True:
            break
        if c is None:
            if top is None:
                shift += 1
            else:
                above.append(top)
            continue
        top = c if top is None or c > top else top
        above.append(top)
    else:
        if top is None or (top - view.shift) / view.scale < context_of(first.sampler,
                                                                      view.base)[1]:
            raise CannotProceed("the first lane whose running sum passes a uniform, over "
                                "lanes it may pass nowhere (an inverse CDF over several "
                                "tiles, or a running sum short of the total)")
    return LazyCount(first.sampler, view, tuple(above), (), shift)


def cut_side(op, flipped: bool):
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
        if type(c) is not Fraction:
            c = Fraction(c)
        # v op c with the view on the left: v < c, v <= c (below), v > c, v >= c (above)
        side = cut_side(op, flipped)
        if side is None:
            return None
        above, strict, truth = side
        if self.grid is not None:        # on the grid: the cut a grid point, in u itself
            t = (c - view.shift) / view.scale
            return self._lazy_cut(base, below_on_grid(t, self.grid, strict), above, truth)
        self._lazy[base.ident] = view
        self._spent.add(base.ident)
        self._lazy_uses[base.ident] = self._lazy_uses.get(base.ident, 0) + 1
        scale = view.scale
        if not view.shift and type(scale) is Fraction:     # c / scale, scale > 0: one gcd
            cut = fraction_of(c._numerator * scale._denominator,
                              c._denominator * scale._numerator)
        else:
            cut = (c - view.shift) / scale
        return LazyIndicator(self, view, c, above, cut, strict, truth)

    def lazy_compare_row(self, op, xs: list, ys: list) -> list | None:
        """:meth:`lazy_compare` of a row of plain exact numbers with one view of a fresh
        uniform (the same object on every lane: ``cumsum(w) > u * total``), at once; ``None``
        for any other pair of rows, and on a grid (each lane compared as usual)."""
        if self.grid is not None or not xs:
            return None
        view, flipped, row = ys[0], True, xs
        if not isinstance(view, UniformView):
            view, flipped, row = xs[0], False, ys
        if not isinstance(view, UniformView) or isinstance(view, AxisUniform) or \
                view.shift or type(view.scale) is not Fraction or \
                not all(v is view for v in (xs if row is ys else ys)) or \
                not all(type(c) is Fraction for c in row):
            return None
        first = self.lazy_compare(op, view, row[0]) if not flipped else \
            self.lazy_compare(op, row[0], view)
        if first is None:                      # not lazy (nothing noted): lane by lane
            return None
        base = view.base
        self._lazy_uses[base.ident] += len(row) - 1
        sn, sd = view.scale._numerator, view.scale._denominator
        above, strict, truth = first.above, first.strict, first.truth
        out = [first]
        for c in row[1:]:
            cut = fraction_of(c._numerator * sd, c._denominator * sn)
            out.append(LazyIndicator(self, view, c, above, cut, strict, truth))
        return out

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

    def never_branches(self, axis) -> list | None:
        """The branches of draft axis ``axis`` of probability 0."""
        return self._never_of(axis) if isinstance(axis, int) and axis < len(self.axes) else None

    def _never_of(self, axis: int) -> list:
        """The branches of draft axis ``axis`` of probability 0 (their weight is 0 anyway),
        listed once per draft row."""
        q = self.axes[axis][1]
        nevers = self.__dict__.setdefault("_nevers", {})    # id(q) -> (q, its zeros)
        hit = nevers.get(id(q))
        if hit is None or hit[0] is not q:
            hit = nevers[id(q)] = (q, [pr == 0 for pr in q.probs])
        return hit[1]

    def _axis_choose(self, u, axis: int, below: list, what: str) -> bool:
        """One branch point on the fresh uniform ``u``: ``True`` with probability
        ``below[x]`` on branch ``x`` of draft axis ``axis`` (``u`` below a grid point or an
        exact cut per branch); ``u`` may be read again only by a lazy count."""
        never = self._never_of(axis)
        self._spent.add(u.ident)
        self._spent_uniforms.append(u)
        above = [_ZERO if nev else
                 reduced_fraction(b._denominator - b._numerator, b._denominator)
                 if type(b) is Fraction else 1 - b for b, nev in zip(below, never)]
        options = []
        if any(b != 0 for b in below):
            options.append((True, _AxisVector(axis, below), what))
        if any(a != 0 for a in above):
            options.append((False, _AxisVector(axis, above), f"not {what}"))
        result = self._choose("uniform", options)
        self._axis_split[u.ident] = (axis, below, result)
        return result


OPS.update(lazy_lane_extreme=lazy_lane_extreme, lazy_lane_first=lazy_lane_first)
