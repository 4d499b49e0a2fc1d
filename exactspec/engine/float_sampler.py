"""The exact interpreter with float semantics: a float kernel's law, computed exactly.

:class:`FloatSampler` is the exact interpreter (:class:`~exactspec.engine.exact.ExactSampler`,
every path enumerated, exact path weights) with the method's *arithmetic* modelled as a
floating-point format does it (:mod:`.floats`):

- ``p`` and ``q`` reach the method as :func:`float_dist` views: each probability rounded into
  the format, as a kernel receives them in a tensor of that dtype (:class:`FloatDist` keeps the
  exact distribution it came from);
- explicit uniforms come from the format's generator grid (``torch.rand``: ``j / 2**24`` for
  ``float32``), and arithmetic on a uniform (``u * q``, ``u + b``, ``1 - u``) is rounded too:
  a comparison of a monotone expression of ``u`` with a threshold cuts the grid at the first
  point where it flips, found by bisection on exact values;
- ``s.coin(c)`` is ``s.uniform() < c`` (a kernel flips coins with uniforms);
- ``s.draw(dist)`` and ``s.pick(dist, u)`` are the inverse-CDF lookup a kernel does: the
  cumulative sums ``((w0 + w1) + w2) + ...`` rounded in the format, token ``t`` where
  ``cum_{t-1} <= u < cum_t``; when rounding leaves ``u`` at or beyond the last sum, the last
  token of positive weight (a clamped ``searchsorted``);
- drafts (``s.draft``, ``s.drafts``) come from the draft model's exact law: the draft tokens are
  the kernel's input, not its arithmetic;
- ``s.exp``, ``s.log``, ``s.softmax``: correctly rounded in the format, or taken from the
  library the kernel calls (``elementwise="numpy"`` or ``"torch"``,
  :func:`~exactspec.engine.floats.elementwise`); an ``exp`` that overflows to infinity on a
  finite input stops the run there (:class:`~exactspec.engine.floats.FloatOverflow`, with the
  operation and its input), rather than surfacing later as an infinity or a NaN in a sum or a
  draw;
- races (``w / E``, ``log(w) + G``, ``logits + G``, ``s.race``): the weights (or logits) are
  the format's values, rounded into it as a tensor of that dtype holds them, and the race over
  them is decided exactly with *continuous* noise (:mod:`~exactspec.engine.races`: fresh or
  shared noise, exact cone volumes; Gumbel-max over logits ``l`` is the race over
  ``exp(l - max l)``).

**Why continuous noise.**  The rounding that belongs to the kernel is that of the values it
races: the weights (a residual ``max(p - q, 0)`` computed in the format, a target row as the
kernel holds it) and their logits; that part is modelled exactly.  The noise itself is not the
kernel's arithmetic but its generator's, and no single rounded transform is *the* generator's:
``-log(u)``, ``-log1p(-u)``, ``-log(-log(u))`` are computed differently by different libraries,
devices and versions (fast approximate logarithms on GPUs among them).  A discrete model of one
of them would also have ``2**24`` values per token for ``float32``, and the joint law over noise
shared between races could no longer be the exact polytope volume of
:mod:`~exactspec.engine.races`.  What this model leaves out is the noise's own discretisation:
ties between two scores (probability about ``2**-24`` per pair for ``float32`` noise) and the
grid of the noise's values.

>>> from exactspec.core.dist import Dist
>>> from exactspec.engine.exact import enumerate_paths
>>> from exactspec.engine.floats import FORMATS
>>> p, q = Dist.parse("1/2,1/2"), Dist.parse("1/3,2/3")
>>> def rule(s, p, q, k):
...     return 0 if s.uniform() < p[0] else 1
>>> f16 = FORMATS["float16"]
>>> enumerate_paths(rule, float_dist(p, f16), float_dist(q, f16),
...                 sampler_factory=lambda: FloatSampler(f16)).law
{0: Fraction(1, 2), 1: Fraction(1, 2)}
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..core.dist import Dist
from ..core.errors import InvalidInput
from .exact import ExactSampler, pick_weights
from .floats import (FloatFormat, FloatOverflow, FloatValue, check_elementwise, elementwise,
                     get_format, softmax)
from .uniform import Uniform

__all__ = ["FloatSampler", "FloatDist", "float_dist", "FloatUniform", "Expr"]


class FloatDist(Dist):
    """A distribution whose probabilities are :class:`~exactspec.engine.floats.FloatValue`\\ s
    of one format; ``exact_dist`` is the exact distribution it was rounded from."""

    __slots__ = ("exact_dist", "fmt")


def float_dist(d: Dist, fmt) -> FloatDist:
    """``d`` with each probability rounded into ``fmt`` (the values a kernel receives).

    >>> from exactspec.engine.floats import FORMATS
    >>> float_dist(Dist.parse("1/3,2/3"), FORMATS["bfloat16"])
    Dist({0: 171/512, 1: 171/256})
    """
    fmt = get_format(fmt)
    if isinstance(d, FloatDist) and d.fmt is fmt:
        return d
    out = FloatDist.__new__(FloatDist)
    Dist.__init__(out, [FloatValue.of(_exact_number(v), fmt) for v in d.probs], d.labels,
                  check=False)
    object.__setattr__(out, "exact_dist", getattr(d, "exact_dist", d))  # Dist is read-only
    object.__setattr__(out, "fmt", fmt)
    return out


def _exact_number(v):
    if isinstance(v, (int, Fraction, float)):
        return v
    raise InvalidInput(f"{v!r}: float arithmetic needs rational inputs (got "
                       f"{type(v).__name__}); give logits for a softmax computed in the format")


class FloatUniform(Uniform):
    """An explicit uniform on the format's generator grid, and rounded expressions of it.

    ``view(expr)`` is a monotone expression ``f(u)`` of the uniform, evaluated exactly and
    rounded at each step; comparing it with a threshold cuts the uniform's grid.
    """

    __slots__ = ("fmt",)

    def __init__(self, sampler, ident: int, fmt: FloatFormat):
        super().__init__(sampler, ident)
        self.fmt = fmt

    def _float_threshold(self):  # marks uniforms for FloatValue's error message
        return None


class Expr:
    """``f(u)`` for the uniform ``base``: ``f`` maps a grid value (a FloatValue) to a
    FloatValue; ``increasing`` says its direction (non-strict: rounding flattens)."""

    __slots__ = ("base", "f", "increasing")

    def __init__(self, base: FloatUniform, f, increasing: bool = True):
        self.base = base
        self.f = f
        self.increasing = increasing

    def _float_threshold(self):
        return None

    def _map(self, g, direction: bool) -> "_Expr":
        f = self.f
        return Expr(self.base, lambda u: g(f(u)), self.increasing == direction)

    def _scalar(self, a) -> FloatValue:
        if isinstance(a, (Expr, FloatUniform)):
            raise InvalidInput("arithmetic between two explicit uniforms is not supported: "
                               "compare each uniform with its own threshold")
        return FloatValue.of(a, self.base.fmt)

    def __mul__(self, a):
        a = self._scalar(a)
        if not a > 0:
            raise InvalidInput("an explicit uniform may only be scaled by a positive factor")
        return self._map(lambda v: v * a, True)

    __rmul__ = __mul__

    def __truediv__(self, a):
        a = self._scalar(a)
        if not a > 0:
            raise InvalidInput("an explicit uniform may only be divided by a positive number")
        return self._map(lambda v: v / a, True)

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

    def __lt__(self, c):
        return self.base.sampler._compare(self, c, strict=True)

    def __le__(self, c):
        return self.base.sampler._compare(self, c, strict=False)

    def __gt__(self, c):
        return not self.__le__(c)

    def __ge__(self, c):
        return not self.__lt__(c)

    def __bool__(self):
        raise TypeError("an explicit uniform has no truth value; compare it with a threshold")

    def __float__(self):
        raise TypeError("float() of an explicit uniform: compare it with a threshold "
                        "(u < c) or pass it to s.pick(dist, u)")

    def __repr__(self):
        return f"f(u{self.base.ident}) in {self.base.fmt.name}"


class FloatSampler(ExactSampler):
    """The exact interpreter with the method's arithmetic in the format ``arith``.

    Parameters
    ----------
    arith : str or FloatFormat
        ``"float32"``, ``"bfloat16"``, ``"float16"`` or ``"float64"``.
    grid : int, optional
        The uniform generator's grid (default: the format's, ``2**24`` for ``float32``).
    elementwise : str
        Where ``s.exp``, ``s.log`` and the ``exp`` of ``s.softmax`` come from: ``"correct"``
        (correctly rounded, the default), ``"numpy"`` (NumPy's ufunc of the dtype) or
        ``"torch"`` (PyTorch's CPU function), evaluated on the exact float input.
    sum_order : str, optional
        The declared order of a tensor layer's float sums of more than a few terms
        (:mod:`~exactspec.engine.float_sums`); ``None``: such sums are refused.

    Examples
    --------
    >>> from fractions import Fraction
    >>> s = FloatSampler("float32", elementwise="numpy")
    >>> Fraction(s.exp(-61 / 16).value) - Fraction(FloatSampler("float32").exp(-61 / 16).value)
    Fraction(1, 536870912)
    """

    def __init__(self, arith, grid: int | None = None, elementwise: str = "correct",
                 sum_order: str | None = None):
        from .float_sums import check_sum_order

        self.fmt = get_format(arith)
        self.elementwise = check_elementwise(elementwise, self.fmt)
        self.sum_order = check_sum_order(sum_order)
        super().__init__(grid=grid if grid is not None else self.fmt.grid)

    # -- values ----------------------------------------------------------------------------
    def _value(self, x) -> FloatValue:
        return FloatValue.of(x, self.fmt)

    def exp(self, x) -> FloatValue:
        """``exp(x)`` in the format (correctly rounded, or the library's); an overflow to
        infinity is reported here."""
        v = self._value(x)
        out = elementwise("exp", v, self.elementwise)
        if out.value == math.inf and math.isfinite(v.value):
            how = "" if self.elementwise == "correct" else f" ({self.elementwise})"
            raise FloatOverflow(
                f"{self.fmt.name} overflow: s.exp({v}){how} is above the largest "
                f"{self.fmt.name} value ({self.fmt.max_value:.9g}) and rounds to inf; the "
                f"{self.fmt.name} kernel overflows at this exp (subtract the maximum first, as "
                "softmax does)")
        return out

    def log(self, x) -> FloatValue:
        """``log(x)`` in the format (correctly rounded, or the library's)."""
        return elementwise("log", self._value(x), self.elementwise)

    def softmax(self, logits) -> list:
        """The softmax of ``logits`` as :func:`~exactspec.engine.floats.softmax` computes it
        (its ``exp`` from ``elementwise``)."""
        return softmax([self._value(x) for x in logits], library=self.elementwise)

    # -- the sampling interface --------------------------------------------------------------
    def uniform(self):
        self._uniforms += 1
        base = FloatUniform(self, self._uniforms, self.fmt)
        return Expr(base, lambda v: v, True)

    def coin(self, prob, what: str = "coin") -> bool:
        c = self._value(prob)
        if not (c >= 0 and c <= 1):
            raise InvalidInput(f"{what}: probability {c} is outside [0, 1]")
        return self.uniform() < c

    def draw(self, dist, what: str = "draw"):
        return self.pick(dist, self.uniform(), what)

    def draft(self, q, what: str = "draft"):
        exact_q = _exact_law(q)
        x = ExactSampler.draw(self, exact_q, what)
        self.drafted.append(x)
        return x

    def drafts(self, q, k: int, replace: bool = True) -> tuple:
        return ExactSampler.drafts(self, _exact_law(q), k, replace)

    def pick(self, dist, u, what: str = "pick"):
        dist = pick_weights(dist, what)
        if isinstance(u, FloatUniform):
            u = Expr(u, lambda v: v, True)
        if not isinstance(u, Expr):
            raise InvalidInput("pick needs an explicit uniform from s.uniform()")
        if not u.increasing:
            raise InvalidInput("pick needs an increasing expression of the uniform (u, a * u "
                               "+ b with a > 0), not 1 - u")
        base = u.base
        weights = [self._value(w) for w in dist.probs]
        if any(w < 0 or math.isnan(w.value) for w in weights):
            bad = next(lab for lab, w in zip(dist.labels, weights) if not w >= 0)
            raise InvalidInput(f"{what}: the weight of {bad!r} is {weights[dist.labels.index(bad)]}"
                               ", not a non-negative number")
        positive = [i for i, w in enumerate(weights) if w > 0]
        if not positive:
            raise InvalidInput(f"{what}: every weight is 0 (the distribution the method built "
                               "is empty)")
        last = positive[-1]
        options = []
        cum = self._value(0)
        lo = base.lo
        for i, (lab, w) in enumerate(zip(dist.labels, weights)):
            if w == 0:
                continue
            cum = cum + w
            hi = base.hi if i == last else max(lo, min(base.hi, self._cut_point(u, cum)))
            weight = self._interval_weight(base, lo, hi)
            if weight != 0:
                options.append(((lab, lo, hi), weight, f"{what} {lab} (u{base.ident})"))
            lo = hi
        lab, lo, hi = self._choose(what, options)
        base.lo, base.hi = lo, hi
        return lab

    def race(self, weights, noise, *, first: bool = True, what: str = "race"):
        """The race over ``weights`` as the format holds them (each rounded into it), with
        continuous noise (module docstring: why)."""
        from .races import Logits

        if isinstance(weights, Logits):
            weights = Logits(self._in_format(weights.values, "logit"))
        else:
            weights = self._in_format(weights, "race weight")
        return ExactSampler.race(self, weights, noise, first=first, what=what)

    def _in_format(self, values, what: str):
        """A Dist, mapping or sequence with each number rounded into the format."""
        from ..core.dist import exact
        from ..core.errors import NotExact

        def one(lab, v):
            if isinstance(v, FloatValue):
                return v
            try:
                if isinstance(v, bool) or not isinstance(v, (int, Fraction, float)):
                    v = exact(v, f"{what} of {lab!r}")   # a NumPy scalar: its exact value
                return FloatValue.of(v, self.fmt)
            except (TypeError, NotExact):
                raise InvalidInput(f"{what} of {lab!r} is {v!r}, not a number the "
                                   f"{self.fmt.name} arithmetic can hold") from None

        if isinstance(values, Dist):
            return {lab: one(lab, v) for lab, v in zip(values.labels, values.probs)}
        if hasattr(values, "keys") and hasattr(values, "values"):
            return {lab: one(lab, v) for lab, v in values.items()}
        try:
            items = list(values)
        except TypeError:
            raise InvalidInput(f"{what}s {values!r}: give a Dist, a mapping or a sequence of "
                               "numbers") from None
        return [one(i, v) for i, v in enumerate(items)]

    # -- cutting the grid --------------------------------------------------------------------
    def _cut_point(self, expr: Expr, c) -> Fraction:
        """The grid point ``t`` with ``f(u) < c`` exactly for the grid values ``u < t`` (``f``
        increasing) or ``u >= t`` (decreasing), within the uniform's current range."""
        base = expr.base
        n = self.grid
        lo = math.ceil(base.lo * n)
        hi = math.ceil(base.hi * n)  # grid indices lo..hi-1 are still possible

        if n == self.fmt.grid:          # the format's own generator: j / n is a value of it
            def below(j):
                return expr.f(FloatValue(j / n, self.fmt)) < c
        else:
            def below(j):
                return expr.f(FloatValue(self.fmt.round(Fraction(j, n)), self.fmt)) < c

        # the first index in [lo, hi] at which `below` flips
        a, b = lo, hi
        while a < b:
            mid = (a + b) // 2
            if below(mid) == expr.increasing:
                a = mid + 1
            else:
                b = mid
        return Fraction(a, n)

    def _compare(self, expr: Expr, c, strict: bool) -> bool:
        c = self._value(c)
        if not strict:  # f(u) <= c  iff  not (c < f(u)), that is not (-f(u) < -c)
            negated = Expr(expr.base, lambda v, f=expr.f: -f(v), not expr.increasing)
            return not self._compare(negated, -c, strict=True)
        cut = self._cut_point(expr, c)
        below_cut = self._split_uniform(expr.base, cut, strict=True)
        return below_cut if expr.increasing else not below_cut


def _exact_law(q) -> Dist:
    """The exact law a draft follows: the exact distribution a float view came from, or the
    float weights normalised exactly."""
    source = getattr(q, "exact_dist", None)
    if source is not None:
        return source
    probs = [v.value if isinstance(v, FloatValue) else v for v in q.probs]
    if all(isinstance(v, FloatValue) for v in q.probs) or any(isinstance(v, float) for v in probs):
        probs = [Fraction(v) for v in probs]
        total = sum(probs, Fraction(0))
        if total <= 0:
            raise InvalidInput("a draft distribution built by the method has no mass")
        return Dist([v / total for v in probs], q.labels, check=False)
    return q
