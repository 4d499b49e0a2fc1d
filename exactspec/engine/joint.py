"""Explicit uniforms combined: ``1 - u``, ``u < v``, ``a*u < b*v``, ``min``/``max``, ``u * v``.

:mod:`.uniform` follows one uniform at a time, as an interval.  Kernels also compare two
uniforms, use ``1 - u``, take a ``min``, or multiply uniforms.  Here:

- a :class:`Linear` is ``sum_i a_i u_i + b`` over explicit uniforms.  A comparison that
  involves one uniform not linked to any other stays an interval split.  A comparison that
  links several uniforms is a branch whose probability is a ratio of volumes of polytopes
  (the uniforms' remaining boxes cut by every linear comparison made so far that links them),
  exact rationals from :func:`.polytope.volume`; on a grid ``{0, 1/N, ..., (N-1)/N}`` the
  same region is *counted* (every point of all but the last uniform, the last one's points
  solved as an interval), so strict and non-strict comparisons differ as they do in a kernel.
  ``min(u, v)`` and ``max(u, v)`` need nothing more: Python computes them by comparing.
- a :class:`Product` ``c * u_1 ... u_k`` of fresh uniforms compared with a constant ``t``:
  ``P(u_1 ... u_k < t) = t sum_{j<k} (-ln t)^j / j!`` for ``0 < t < 1`` (``-ln u_i`` are
  i.i.d. ``Exp(1)``; their sum is Gamma(k, 1), whose tail at ``-ln t`` is that sum), an exact
  sympy value with logarithms; on a grid the tuples are counted, a rational.  A factor already
  cut by thresholds (``u < a`` before ``u * v < t``: a prefix product) is uniform on its
  interval ``[lo, hi)``: the volume of ``{prod u < t}`` in the box of intervals is a signed sum
  over the box's corners of the same closed form (inclusion-exclusion), and on a grid the
  tuples of the remaining points are counted.  A *running product* (``u_1 < t_1``, then
  ``u_1 u_2 < t_2``, then ``u_1 u_2 u_3 < t_3``, as a Poisson sampler multiplies uniforms) is
  exact too: the law of ``-log`` of the product so far, given what its comparisons said, is
  carried forward as a piecewise density ``e^-x P(x)`` (:class:`_Chain`).  Reusing only some
  of a product's factors (``u_1 u_2``, then ``u_1 u_3``) is beyond this method
  (``Undecided``), as is a product of uniforms linked to others by linear comparisons.

The sampling interpreter needs none of this: its uniforms are numbers.

>>> from exactspec.engine.runs import enumerate_runs
>>> enumerate_runs(lambda s: s.uniform() < s.uniform()).law[True]
Fraction(1, 2)
>>> enumerate_runs(lambda s: 2 * s.uniform() < s.uniform()).law[True]
Fraction(1, 4)
>>> enumerate_runs(lambda s: s.uniform() * s.uniform() < Fraction(1, 2)).law[True]
log(2)/2 + 1/2
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

from ..core.errors import InvalidInput, TooLarge, Undecided
from ..core.exact_values import exact_operand
from .polytope import volume

__all__ = ["Linear", "Product", "as_linear", "compare", "compare_product", "MAX_GRID_POINTS",
           "cut", "extend", "is_view", "product_below_in_box"]

#: Most grid points of all but one linked uniform counted for one comparison.
MAX_GRID_POINTS = 10**6


def is_view(x) -> bool:
    """A uniform or an affine view ``a*u + b`` of one (:mod:`.uniform`, read by its fields so
    that this module does not import that one)."""
    return hasattr(x, "base") and hasattr(x, "scale") and hasattr(x, "shift")


def as_linear(x) -> "Linear":
    """A :class:`Linear` from a uniform, a view ``a*u + b``, a Linear or a number."""
    if isinstance(x, Linear):
        return x
    if is_view(x):
        return Linear({x.base: Fraction(x.scale)}, x.shift)
    return Linear({}, exact_operand(x))


class Linear:
    """``sum_i a_i u_i + b`` over explicit uniforms of one exact run."""

    __slots__ = ("terms", "const")

    def __init__(self, terms: dict, const=0):
        self.terms = {u: a for u, a in terms.items() if a != 0}
        self.const = const

    def _combine(self, other, sign):
        other = as_linear(other)
        terms = dict(self.terms)
        for u, a in other.terms.items():
            terms[u] = terms.get(u, 0) + sign * a
        return Linear(terms, self.const + sign * other.const)

    def __add__(self, o): return self._combine(o, 1)
    __radd__ = __add__
    def __sub__(self, o): return self._combine(o, -1)
    def __rsub__(self, o): return as_linear(o)._combine(self, -1)
    def __neg__(self): return Linear({u: -a for u, a in self.terms.items()}, -self.const)

    def __mul__(self, a):
        if isinstance(a, Linear) or is_view(a):
            return Product.of(self, a)
        a = exact_operand(a)
        return Linear({u: c * a for u, c in self.terms.items()}, self.const * a)

    __rmul__ = __mul__

    def __truediv__(self, a):
        a = exact_operand(a)
        return self * (1 / Fraction(a) if isinstance(a, int) else 1 / a)

    def _sampler(self):
        if not self.terms:
            return None
        return next(iter(self.terms)).sampler

    def _decide(self, diff: "Linear", strict: bool) -> bool:
        sampler = diff._sampler()
        if sampler is None:
            return diff.const < 0 if strict else diff.const <= 0
        return compare(sampler, diff, strict)

    def __lt__(self, o): return self._decide(self - o, True)
    def __le__(self, o): return self._decide(self - o, False)
    def __gt__(self, o): return self._decide(as_linear(o) - self, True)
    def __ge__(self, o): return self._decide(as_linear(o) - self, False)

    def __bool__(self):
        raise TypeError("a random quantity has no truth value; compare it with a threshold")

    def __repr__(self):
        parts = [f"{a} * u{u.ident}" for u, a in self.terms.items()]
        return " + ".join(parts + [str(self.const)])


class Product:
    """``scale * u_1 * ... * u_k`` for distinct explicit uniforms; compared with constants."""

    __slots__ = ("factors", "scale")

    def __init__(self, factors: tuple, scale=1):
        self.factors = factors
        self.scale = scale

    @staticmethod
    def of(a, b) -> "Product":
        factors, scale = [], Fraction(1)
        for x in (a, b):
            if isinstance(x, Product):
                factors.extend(x.factors)
                scale *= x.scale
                continue
            lin = as_linear(x)
            if len(lin.terms) != 1 or lin.const != 0:
                raise Undecided("a product of random quantities other than scaled uniforms "
                                "is beyond the exact method")
            ((u, a_),) = lin.terms.items()
            if not a_ > 0:
                raise Undecided("a product with a non-positive factor is beyond the exact "
                                "method")
            factors.append(u)
            scale *= a_
        if len({id(u) for u in factors}) != len(factors):
            raise Undecided("a product with a repeated uniform (u * u) is beyond the exact "
                            "method")
        return Product(tuple(factors), scale)

    def __mul__(self, o):
        if isinstance(o, (Product, Linear)) or is_view(o):
            return Product.of(self, o)
        o = exact_operand(o)
        if not o > 0:
            raise Undecided("a product of uniforms scaled by a non-positive factor is beyond "
                            "the exact method")
        return Product(self.factors, self.scale * o)

    __rmul__ = __mul__

    def _threshold(self, c):
        if isinstance(c, (Product, Linear)) or is_view(c):
            raise Undecided("comparing a product of uniforms with another random quantity is "
                            "beyond the exact method; compare it with a constant")
        c = exact_operand(c)
        return Fraction(c) / self.scale if isinstance(c, int) else c / self.scale

    def __lt__(self, c): return compare_product(self.factors, self._threshold(c), True)
    def __le__(self, c): return compare_product(self.factors, self._threshold(c), False)
    def __gt__(self, c): return not self.__le__(c)
    def __ge__(self, c): return not self.__lt__(c)

    def __bool__(self):
        raise TypeError("a random quantity has no truth value; compare it with a threshold")


# -- deciding comparisons --------------------------------------------------------------------

def compare(sampler, diff: Linear, strict: bool) -> bool:
    """Decide ``diff < 0`` (``strict``) or ``diff <= 0`` on the current path: an interval
    split for one unlinked uniform, else a branch over the linked region."""
    terms = diff.terms
    for u in terms:
        if getattr(u, "spent", False):
            raise Undecided(f"u{u.ident} was used in a product of uniforms; using it again is "
                            "beyond the exact method")
    if len(terms) == 1:
        ((u, a),) = terms.items()
        if not u.linked:
            t = -diff.const / a
            if a > 0:
                return u._below(t, strict=strict)
            return not u._below(t, strict=not strict)
    if any(not isinstance(a, (int, Fraction)) for a in terms.values()) or \
            not isinstance(diff.const, (int, Fraction)):
        raise Undecided("a comparison linking uniforms with symbolic coefficients is beyond the "
                        "exact method")
    region = sampler._region
    for u in terms:
        u.linked = True
    yes = ({u.ident: Fraction(a) for u, a in terms.items()}, Fraction(-diff.const), strict)
    no = ({i: -a for i, a in yes[0].items()}, -yes[1], not strict)
    group = _component(region, set(yes[0]))
    uniforms = {u.ident: u for u in terms}
    for c in group:
        for i in c[0]:
            uniforms.setdefault(i, sampler._uniform_by_id[i])
    ids = sorted(uniforms)
    base = _measure(ids, uniforms, group, sampler.grid)
    if base == 0:
        raise InvalidInput("a comparison of uniforms on a path of probability 0")
    p_yes = Fraction(_measure(ids, uniforms, group + [yes], sampler.grid)) / base
    sign = "<" if strict else "<="
    text = " + ".join(f"{a}*u{i}" for i, a in sorted(yes[0].items()))
    options = []
    if p_yes != 0:
        options.append((True, p_yes, f"{text} {sign} {yes[1]}"))
    if p_yes != 1:
        options.append((False, 1 - p_yes, f"not {text} {sign} {yes[1]}"))
    result = sampler._choose("uniforms", options)
    region.append(yes if result else no)
    return result


def _component(region: list, ids: set) -> list:
    """The constraints of ``region`` linked (transitively) to the uniforms ``ids``."""
    ids = set(ids)
    chosen: list = []
    rest = list(region)
    changed = True
    while changed:
        changed = False
        for c in list(rest):
            if ids & set(c[0]):
                ids |= set(c[0])
                chosen.append(c)
                rest.remove(c)
                changed = True
    return chosen


_MEASURED: dict = {}


def _measure(ids, uniforms, constraints, grid):
    key = (grid, tuple((uniforms[i].lo, uniforms[i].hi) for i in ids),
           frozenset((tuple(sorted((ids.index(i), a) for i, a in c.items())), rhs, strict)
                     for c, rhs, strict in constraints))
    if key not in _MEASURED:
        if len(_MEASURED) > 100_000:
            _MEASURED.clear()
        _MEASURED[key] = _measure_now(ids, uniforms, constraints, grid)
    return _MEASURED[key]


def _measure_now(ids, uniforms, constraints, grid):
    if grid is None:
        k = len(ids)
        rows = []
        for pos, i in enumerate(ids):
            unit = tuple(1 if j == pos else 0 for j in range(k))
            rows.append((tuple(-v for v in unit), -uniforms[i].lo))
            rows.append((unit, uniforms[i].hi))
        for coeffs, rhs, _ in constraints:
            rows.append((tuple(coeffs.get(i, 0) for i in ids), rhs))
        return volume(rows, k)
    return _grid_count(ids, uniforms, constraints, grid)


def _grid_range(u, grid):
    return range(math.ceil(u.lo * grid), math.ceil(u.hi * grid))


def _grid_count(ids, uniforms, constraints, grid) -> int:
    first, last = ids[:-1], ids[-1]
    points = 1
    for i in first:
        points *= len(_grid_range(uniforms[i], grid))
    if points > MAX_GRID_POINTS:
        raise TooLarge(f"counting linked uniforms on the grid visits about {points:,} points, "
                       f"over the budget of {MAX_GRID_POINTS:,}: use a smaller --grid",
                       estimate=points, budget=MAX_GRID_POINTS)
    last_range = _grid_range(uniforms[last], grid)
    total = 0
    for js in itertools.product(*(_grid_range(uniforms[i], grid) for i in first)):
        lo, hi = last_range.start, last_range.stop      # j in [lo, hi)
        for coeffs, rhs, strict in constraints:
            rest = sum((coeffs.get(i, 0) * Fraction(j, grid) for i, j in zip(first, js)),
                       Fraction(0))
            a = coeffs.get(last, 0)
            bound = (rhs - rest) * grid                  # a * j (<|<=) bound
            if a == 0:
                if (rest < rhs) if strict else (rest <= rhs):
                    continue
                lo, hi = 0, 0
                break
            t = bound / a
            if a > 0:       # j < t  or  j <= t
                hi = min(hi, math.ceil(t) if strict else math.floor(t) + 1)
            else:           # j > t  or  j >= t
                lo = max(lo, math.floor(t) + 1 if strict else math.ceil(t))
        total += max(0, hi - lo)
    return total


def compare_product(factors: tuple, t, strict: bool) -> bool:
    """Decide ``u_1 ... u_k < t`` (or ``<=``) exactly, for uniforms that are fresh or cut by
    thresholds only, or that extend a product compared before (a running product
    ``u_1``, ``u_1 u_2``, ``u_1 u_2 u_3``, ...: :class:`_Chain`)."""
    sampler = factors[0].sampler
    for u in factors:
        if u.linked:
            raise Undecided(f"a product of uniforms where u{u.ident} was compared jointly with "
                            "another uniform is beyond the exact method (products are exact "
                            "for uniforms cut by thresholds, and for running products)")
    if not isinstance(t, (int, Fraction)):
        raise Undecided("a product of uniforms compared with a symbolic threshold is beyond "
                        "the exact method")
    t = Fraction(t)
    spent = [u for u in factors if getattr(u, "spent", False)]
    fresh = [u for u in factors if not getattr(u, "spent", False)]
    chain = None
    if spent:
        chain = spent[0].spent
        if not isinstance(chain, _Chain) or any(u.spent is not chain for u in spent) or \
                {u.ident for u in spent} != chain.idents:
            raise Undecided("a product of uniforms that reuses some, but not all, of the "
                            "factors of an earlier product is beyond the exact method (a "
                            "running product u1, u1*u2, u1*u2*u3 is exact)")
    boxes = [(Fraction(u.lo), Fraction(u.hi)) for u in fresh]
    step = (tuple(u.ident for u in fresh), tuple(boxes), t, strict)
    if chain is not None:
        p_yes = chain.probability(step, sampler.grid)
    elif sampler.grid is None:
        if all(box == (0, 1) for box in boxes):
            p_yes = _product_below(t, len(fresh))
        else:
            p_yes = product_below_in_box(t, boxes)
    else:
        grid = sampler.grid
        ranges = [range(math.ceil(lo * grid), math.ceil(hi * grid)) for lo, hi in boxes]
        p_yes = Fraction(_product_grid_count(t, len(fresh), grid, strict, ranges),
                         math.prod(len(r) for r in ranges))
    names = " * ".join(f"u{u.ident}" for u in factors)
    sign = "<" if strict else "<="
    options = []
    if p_yes != 0:
        options.append((True, p_yes, f"{names} {sign} {t}"))
    if p_yes != 1:
        options.append((False, 1 - p_yes, f"not {names} {sign} {t}"))
    below = sampler._choose("product", options)
    extended = (chain.steps if chain is not None else ()) + ((step, below),)
    new_chain = _Chain(extended, (chain.idents if chain is not None else frozenset())
                       | {u.ident for u in fresh})
    for u in factors:
        u.spent = new_chain
    return below


class _Chain:
    """A running product of uniforms and what its comparisons so far said: ``steps`` is
    ``((new factors, their intervals, threshold, strict), below), ...``; ``idents`` the
    uniforms of the product so far.

    In ideal arithmetic ``X = -log(u_1 ... u_j)`` is a sum of independent variables, each
    ``-log u`` of a uniform on ``[lo, hi)`` (density ``e^-x / (hi - lo)`` on
    ``(-log hi, -log lo]``), and each comparison ``u_1 ... u_j < t`` is ``X > -log t``.  The law
    of the running sum given the comparisons so far is therefore carried forward: a density
    ``e^-x P(x)`` with ``P`` a polynomial on each piece (:func:`_convolve`, :func:`cut`), whose
    breakpoints are ``-log r`` for rationals ``r`` (products of thresholds and interval ends),
    so that ``e^-x`` at a breakpoint is the rational ``r``: the probabilities are polynomials
    in logarithms of rationals, exact.  On a grid the tuples of grid points are counted.
    """

    __slots__ = ("steps", "idents")

    def __init__(self, steps: tuple, idents: frozenset):
        self.steps = steps
        self.idents = idents

    def probability(self, step, grid):
        """``P(the product extended by step's factors < t | the steps so far)``."""
        if grid is not None:
            return _chain_grid_probability(self.steps, step, grid)
        density = None
        for (idents, boxes, t, _), below in self.steps:
            density = extend(density, boxes)
            density, _ = cut(density, t, below)
        density = extend(density, step[1])
        _, p_yes = cut(density, step[2], True)
        return _exact(p_yes)


def _exact(value):
    import sympy

    value = sympy.expand(value)
    if value.is_Rational:
        return Fraction(int(value.p), int(value.q))
    return value


def _x_at(r):
    """The point ``x = -log r`` (``r > 0``) as a sympy number."""
    import sympy

    return sympy.log(sympy.Rational(1 / r if isinstance(r, Fraction) else Fraction(1, r)))


def extend(density, boxes):
    """The density of ``X + sum_i -log u_i`` for new factors uniform on ``boxes``."""
    import sympy

    for lo, hi in boxes:
        if not lo < hi:
            raise InvalidInput("a product of uniforms on a path of probability 0")
        factor = [(Fraction(hi), Fraction(lo), sympy.Integer(1) / sympy.Rational(
            (hi - lo).numerator, (hi - lo).denominator))]
        density = factor if density is None else _convolve(density, factor)
    return density


_X = None


def _symbol():
    global _X
    if _X is None:
        import sympy

        _X = sympy.Symbol("x", real=True)
    return _X


def _convolve(density, factor):
    """``h(t) = int f(s) g(t - s) ds`` for ``f = e^-s P(s)`` on pieces and ``g = e^-x k`` on
    one piece: ``h(t) = e^-t k int_{[a, b) and [t - d, t - c)} P``.  Pieces are ``(ra, rb, P)``
    for ``x`` in ``[-log ra, -log rb)`` (``rb = 0``: to infinity)."""
    import sympy

    x = _symbol()
    ((rc, rd, k),) = factor
    parts = []
    for ra, rb, poly in density:
        Q = sympy.integrate(poly, x)

        def at(expr, point):
            return expr.subs(x, point)

        c = _x_at(rc)
        pieces = []
        m1, m2 = (ra * rd, rb * rc) if ra * rd >= rb * rc else (rb * rc, ra * rd)
        # x ascending is r descending: [a+c, min(a+d, b+c)), the middle, [max(...), b+d)
        pieces.append((ra * rc, m1, sympy.expand(at(Q, x - c) - at(Q, _x_at(ra)))))
        if ra * rd >= rb * rc:          # a + d <= b + c: the window [t - d, t - c) inside
            if ra * rd > rb * rc:
                d = _x_at(rd)
                pieces.append((ra * rd, rb * rc, sympy.expand(at(Q, x - c) - at(Q, x - d))))
        else:                           # the whole piece [a, b) inside the window
            pieces.append((rb * rc, ra * rd, sympy.expand(at(Q, _x_at(rb)) - at(Q, _x_at(ra)))))
        if m2 > rb * rd:
            d = _x_at(rd)
            pieces.append((m2, rb * rd, sympy.expand(at(Q, _x_at(rb)) - at(Q, x - d))))
        parts.extend((s, e, sympy.expand(k * p)) for s, e, p in pieces if s > e)
    points = sorted({r for s, e, _ in parts for r in (s, e)}, reverse=True)
    out = []
    for s, e in zip(points, points[1:]):
        poly = sum((p for ps, pe, p in parts if ps >= s and e >= pe), sympy.Integer(0))
        poly = sympy.expand(poly)
        if poly != 0:
            out.append((s, e, poly))
    return out


def _integral(ra, rb, poly):
    """``int e^-x P(x) dx`` over ``[-log ra, -log rb)``: ``-e^-x (P + P' + P'' + ...)``."""
    import sympy

    x = _symbol()
    series = sympy.Integer(0)
    term = poly
    while term != 0:
        series += term
        term = sympy.diff(term, x)

    def G(r):
        if r == 0:
            return sympy.Integer(0)
        return -sympy.Rational(r.numerator, r.denominator) * series.subs(x, _x_at(r))

    return G(rb) - G(ra)


def cut(density, t: Fraction, below: bool):
    """The density kept on the side of ``u_1 ... u_j < t`` (``X > -log t``: ``r < t``) given
    by ``below``, renormalised, and the probability of that side."""
    import sympy

    kept = []
    for ra, rb, poly in density:
        if below:
            s, e = min(ra, t), rb
        else:
            s, e = ra, max(rb, t)
        if s > e:
            kept.append((s, e, poly))
    mass = sympy.expand(sum((_integral(s, e, p) for s, e, p in kept), sympy.Integer(0)))
    if mass == 0:
        return [], mass
    return [(s, e, sympy.expand(p / mass)) for s, e, p in kept], mass


def _chain_grid_probability(steps, step, grid):
    """The running product on a grid: tuples of grid points counted (every factor's points
    but the last new one visited, within :data:`MAX_GRID_POINTS`)."""
    factors = [f for (idents, boxes, _, _), _ in steps for f in zip(idents, boxes)]
    factors += list(zip(step[0], step[1]))
    ranges = [range(math.ceil(lo * grid), math.ceil(hi * grid)) for _, (lo, hi) in factors]
    points = math.prod(len(r) for r in ranges[:-1])
    if points > MAX_GRID_POINTS:
        raise TooLarge(f"counting a running product of {len(factors)} uniforms on the grid "
                       f"visits {points:,} points, over the budget of {MAX_GRID_POINTS:,}: use "
                       "a smaller --grid", estimate=points, budget=MAX_GRID_POINTS)
    sizes = []
    n = 0
    for (idents, _, t, strict), below in steps:
        n += len(idents)
        sizes.append((n, t, strict, below))
    t, strict = step[2], step[3]
    base = yes = 0
    last = ranges[-1]
    for js in itertools.product(*ranges[:-1]):
        full = js + (None,)
        ok = True
        for n, t_j, strict_j, below in sizes:
            value = Fraction(math.prod(full[:n]), grid ** n)
            if ((value < t_j) if strict_j else (value <= t_j)) != below:
                ok = False
                break
        if not ok:
            continue
        base += len(last)
        prod = math.prod(js)
        bound = t * grid ** len(full)
        if prod == 0:
            yes += len(last) if (0 < bound if strict else 0 <= bound) else 0
            continue
        limit = bound / prod
        top = math.ceil(limit) if strict else math.floor(limit) + 1
        yes += max(0, min(last.stop, top) - last.start)
    if base == 0:
        raise InvalidInput("a product of uniforms on a path of probability 0")
    return Fraction(yes, base)


def _product_below(t: Fraction, k: int):
    """``P(u_1 ... u_k < t)`` for i.i.d. uniforms on ``[0, 1)``: exact, sympy when irrational.

    >>> _product_below(Fraction(1, 2), 2)
    log(2)/2 + 1/2
    """
    import sympy

    if t <= 0:
        return Fraction(0)
    if t >= 1:
        return Fraction(1)
    c = sympy.Rational(t.numerator, t.denominator)
    minus_log = -sympy.log(c)
    value = sum((c * minus_log ** j / sympy.factorial(j) for j in range(k)), sympy.Integer(0))
    return sympy.nsimplify(sympy.expand(value)) if value.is_Rational else sympy.expand(value)


def product_below_in_box(t: Fraction, boxes: list):
    """``P(u_1 ... u_k < t)`` for independent ``u_i`` uniform on ``[lo_i, hi_i)`` (uniforms
    already cut by thresholds): by inclusion-exclusion over the box's corners,
    ``vol = sum_corners (-1)^(number of lo_i) V(x)``, where ``V(x) = X P(U_1 ... U_k < t / X)``
    (``X = prod x_i``) is the volume of ``{prod u < t}`` in the box ``[0, x)``; divided by the
    box's volume.  Exact, sympy when irrational.

    >>> product_below_in_box(Fraction(1, 4), [(Fraction(1, 2), Fraction(1)), (0, 1)])
    log(2)/2
    """
    import sympy

    k = len(boxes)
    size = math.prod(hi - lo for lo, hi in boxes)
    if size == 0:
        raise InvalidInput("a product of uniforms on a path of probability 0")
    total = sympy.Integer(0)
    for corner in itertools.product((0, 1), repeat=k):
        x = math.prod(boxes[i][1] if c == 0 else boxes[i][0] for i, c in enumerate(corner))
        if x == 0:
            continue
        below = _product_below(t / x, k)
        term = sympy.Rational(x.numerator, x.denominator) * sympy.sympify(
            below if not isinstance(below, Fraction) else
            sympy.Rational(below.numerator, below.denominator))
        total += (-1) ** sum(corner) * term
    value = sympy.expand(total / sympy.Rational(size.numerator, size.denominator))
    if value.is_Rational:
        return Fraction(int(value.p), int(value.q))
    return value


def _product_grid_count(t: Fraction, k: int, grid: int, strict: bool, ranges=None) -> int:
    """Tuples ``(j_1..j_k)`` in ``[0, N)^k`` (or in ``ranges``, the grid indices still
    possible for each factor) with ``prod j_i / N^k < t`` (or ``<=``)."""
    if ranges is None:
        ranges = [range(grid)] * k
    points = math.prod(len(r) for r in ranges[:-1])
    if points > MAX_GRID_POINTS:
        raise TooLarge(f"counting a product of {k} uniforms on the grid visits {points:,}"
                       f" points, over the budget of {MAX_GRID_POINTS:,}: use a smaller --grid",
                       estimate=points, budget=MAX_GRID_POINTS)
    bound = t * grid ** k
    last = ranges[-1]
    total = 0
    for js in itertools.product(*ranges[:-1]):
        prod = math.prod(js)
        if prod == 0:
            total += len(last) if (0 < bound if strict else 0 <= bound) else 0
            continue
        limit = bound / prod                              # j_k < limit  or  <= limit
        top = math.ceil(limit) if strict else math.floor(limit) + 1
        total += max(0, min(last.stop, top) - last.start)
    return total
