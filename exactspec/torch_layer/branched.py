"""Vectorised exact enumeration of a PyTorch rule's draft: the draft index as a tensor axis.

A one-position PyTorch rule draws its draft ``x ~ q`` with ``torch.multinomial(q, 1)``; path
enumeration runs the rule's body once per draft token, about ``|V|`` runs of ``|V|`` element
operations each.  Here the body runs once with the draft as a :class:`Branched` element: the
list of its values on every branch (``[0, 1, ..., V - 1]``), and every value computed from it is
again a :class:`Branched` element holding its value on each branch, each computed by the same
scalar operation the path run would apply (``p[x]``, ``p[x] / q[x]``, ``min(r, 1)``, ...).

- A comparison of a fresh uniform ``u`` with a branched threshold ``c`` (``u < c``) is a
  :class:`Split`: a boolean holding, per draft branch, ``P(u < c[x])`` on the run's grid or
  ideal (:meth:`VectorSampler._split_uniform`).  The uniform may not be read again.
  ``torch.where(split, a, b)`` of tokens (the draft, a token per branch, a drawn token) is a
  :class:`Mixture`: ``a`` with weight ``P(u < c[x])`` and ``b`` with the complement, so a rule
  that selects its emitted token this way (vLLM's) runs its body once.  Any other use of the
  split (``if``, ``bool``, ``.item()``, a conversion, arithmetic, a reduction) reads it as a
  Python bool: the engine's branch point is made there, with the same two outcomes and
  weights, and later uses on that path see its outcome; a body that tests it in ``if``
  (Hugging Face's) runs once per outcome.  A mixture used otherwise than passed around and
  returned raises :class:`~exactspec.core.signals.CannotProceed` (``retry="splits"``), and the caller runs this route again with every
  split a branch point at once (``split_values=False``).
- A token drawn with ``torch.multinomial(w, 1)`` from weights that are the same on every
  branch, or the winner of an exponential race ``argmax(w / E)`` on fresh noise, is a
  :class:`LawIndex`: a token with a known law, drawn once (``w / sum(w)``, the race's first
  arrival), kept as a law rather than enumerated.  It may be passed around (``reshape``,
  ``torch.where``, indexing a view) and returned, not computed with.
- The output law is ``sum over paths, over x of q[x] * weight_path[x] * delta(token_path[x])``,
  a law ``L`` spread by its probabilities, a mixture spread over its two tokens; the rows are
  summed and multiplied as integer rows over one common denominator where they allow it.

The fast path is sound only where the body's control flow does not depend on the branch: any
use of a branched value that would need one value for all branches (``if``, ``bool``, ``int``,
an index of a Python list, a hash, a comparison with a random value other than the sanctioned
one, a second draft, a race or multinomial over branched weights, a law token used in
arithmetic) raises :class:`~exactspec.core.signals.CannotProceed`, and the caller runs the path enumeration instead.
Every branched operation is the scalar operation of the path run applied branch by branch, so
the law is the path enumeration's law whenever the fast path completes.

The float run (``--arith``) takes the fast path too, with the format's values on every branch
and its generator grid for the uniforms (:mod:`.branched_float`); its whole-row operations
run through NumPy (:mod:`.float_rows`).  Whole rows of exact rationals are computed on their
numerators and denominators (:func:`rational_row`, :func:`rational_extreme`): the same
reduced fractions as the operators, one gcd each.

Exact arithmetic with ideal uniforms and on a grid (``verify --arith``'s second and third
runs) compute the same values: draws, races and the draft do not read a uniform, so the laws
differ only where a uniform is compared.  :class:`PairSampler` runs the body once for both,
each comparison ``u < c[draft]`` of a fresh uniform carrying the pair of weights
(``P(u < c[x])`` ideal and on the grid, a :class:`Pair`); any other read of the grid (a
comparison with a constant, an inverse CDF, uniforms compared jointly) raises
:class:`~exactspec.core.signals.CannotProceed` (``retry="apart"``), and the caller makes the two runs apart.

>>> b = Branched([1, 2, 3])
>>> b * 2 + 1
Branched([3, 5, 7])
>>> bool(b < 5)
Traceback (most recent call last):
...
exactspec.core.signals.CannotProceed: a branched value decided a Python-level condition
"""

from __future__ import annotations

import math
import operator
from fractions import Fraction

from ..core.integer_rows import (exact_sum, fraction_of, fractions_over, integer_row,
                                 reduced_fraction)
from ..core.signals import CannotProceed
from ..engine.exact import ExactSampler
from ..engine.floats import FloatValue

__all__ = ["Branched", "LawIndex", "Split",
           "Mixture", "Pair", "VectorSampler", "PairSampler", "is_branched", "axis_of",
           "combine", "dot", "rational_row", "rational_extreme", "below_on_grid"]


def _random(v) -> bool:
    """Anything but a plain number (int, rational, float, a float format's value, a sympy
    number): a random value, a drawn token, noise (refused in branch-wise arithmetic)."""
    if isinstance(v, (int, Fraction, float, FloatValue)):
        return False
    return not getattr(v, "is_number", False)


#: Rows of at least this many rationals are computed by :func:`rational_row`.
_FAST_ROW = 64

_ZERO_IDENTITY = (operator.add, operator.sub)
_ONE_IDENTITY = (operator.mul, operator.truediv)


class Branched:
    """One element's value on every draft branch (a list indexed by the draft token) of one
    draft axis ``axis`` (0 for the one draft of a one-position rule; draft position ``i`` of a
    multi-position rule in :mod:`exactspec.torch_layer.factored`)."""

    __slots__ = ("values", "axis")

    def __init__(self, values, axis: int = 0):
        self.values = values
        self.axis = axis

    def __repr__(self):
        return f"Branched({self.values!r})"

    def map(self, f) -> "Branched":
        """``f`` applied on every branch."""
        return Branched([f(v) for v in self.values], self.axis)

    def _binary(self, other, op, reverse=False):
        if _random(other):
            raise CannotProceed("a branched value in arithmetic with a random value")
        if isinstance(other, Branched):
            axis = axis_of(self, other)
            xs, ys = (other.values, self.values) if reverse else (self.values, other.values)
            fast = rational_row(op, xs, ys) if len(xs) >= _FAST_ROW else None
            if fast is not None:
                return Branched(fast, axis)
            return Branched([op(a, b) for a, b in zip(xs, ys)], axis)
        if type(other) is int and ((other == 0 and op in _ZERO_IDENTITY and not reverse) or
                                   (other == 1 and op in _ONE_IDENTITY and not reverse)) and \
                all(type(a) is Fraction for a in self.values):
            return self                # x - 0, x + 0, x * 1, x / 1 of rationals: x itself
        n = len(self.values)
        if n >= _FAST_ROW and type(other) in (int, Fraction):
            o = [Fraction(other)] * n
            fast = rational_row(op, o, self.values) if reverse else \
                rational_row(op, self.values, o)
            if fast is not None:
                return Branched(fast, self.axis)
        if reverse:
            return Branched([op(other, a) for a in self.values], self.axis)
        return Branched([op(a, other) for a in self.values], self.axis)

    def _compare(self, other, op):
        if _random(other):
            return NotImplemented      # ``c > u``: Python asks ``u < c`` (the engine's split)
        return self._binary(other, op)

    def __add__(self, o):
        return self._binary(o, operator.add)

    def __radd__(self, o):
        return self._binary(o, operator.add, True)

    def __sub__(self, o):
        return self._binary(o, operator.sub)

    def __rsub__(self, o):
        return self._binary(o, operator.sub, True)

    def __mul__(self, o):
        return self._binary(o, operator.mul)

    def __rmul__(self, o):
        return self._binary(o, operator.mul, True)

    def __truediv__(self, o):
        return self._binary(o, operator.truediv)

    def __rtruediv__(self, o):
        return self._binary(o, operator.truediv, True)

    def __floordiv__(self, o):
        return self._binary(o, operator.floordiv)

    def __mod__(self, o):
        return self._binary(o, operator.mod)

    def __neg__(self):
        return self.map(operator.neg)

    def __lt__(self, o):
        return self._compare(o, operator.lt)

    def __le__(self, o):
        return self._compare(o, operator.le)

    def __gt__(self, o):
        return self._compare(o, operator.gt)

    def __ge__(self, o):
        return self._compare(o, operator.ge)

    def __eq__(self, o):
        return self._compare(o, operator.eq)

    def __ne__(self, o):
        return self._compare(o, operator.ne)

    def _one_value(self, *args):
        raise CannotProceed("a branched value decided a Python-level condition")

    __bool__ = __index__ = __int__ = __float__ = __hash__ = _one_value


def axis_of(*values) -> int:
    """The one draft axis of the branched ``values`` (plain values have none); an operation
    mixing two draft axes is not tracked (:class:`~exactspec.core.signals.CannotProceed`).

    >>> axis_of(Branched([1, 2], 1), 3, Branched([0, 0], 1))
    1
    """
    axes = {v.axis for v in values if isinstance(v, Branched)}
    if len(axes) != 1:
        raise CannotProceed("an operation mixing two draft axes")
    return axes.pop()


def is_branched(v) -> bool:
    return isinstance(v, Branched)


class LawIndex:
    """A token drawn once with a known law ``probs`` (exact, summing to 1), not enumerated;
    ``row``, when given, is the law as an integer row ``(numerators, denominator)`` and
    ``probs`` is then made from it when first read."""

    __slots__ = ("_probs", "row", "what")

    def __init__(self, probs, what: str, row=None):
        self._probs = probs
        self.row = row
        self.what = what

    @property
    def probs(self) -> list:
        if self._probs is None:
            self._probs = fractions_over(*self.row)
        return self._probs

    def __repr__(self):
        return f"<{self.what} token>"

    def _refuse(self, *args):
        raise CannotProceed(f"the {self.what} token used in a computation")

    __bool__ = __index__ = __int__ = __float__ = __hash__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __truediv__ = __rtruediv__ = __floordiv__ = __mod__ = __neg__ = _refuse


class Split:
    """The outcome of ``u < c[draft]`` on a fresh uniform, kept as a value: ``True`` with
    probability ``below[x]`` on draft branch ``x``.

    Selecting a token with it (``torch.where``, ``masked_fill``) gives a :class:`Mixture`, and
    the engine does not branch.  Any other use reads it as a Python ``bool`` (a condition, a
    conversion, arithmetic, a reduction): the engine's branch point is made then, with the
    same two outcomes and weights the comparison would have made at once, and the split keeps
    the outcome of this path (:attr:`decided`) for every later use.
    """

    __slots__ = ("sampler", "below", "what", "decided")

    def __init__(self, sampler, below: list, what: str):
        self.sampler = sampler
        self.below = below
        self.what = what
        self.decided = None

    def __repr__(self):
        return f"<split {self.what}>" if self.decided is None else repr(self.decided)

    def __bool__(self):
        if self.decided is None:
            self.decided = self.sampler._choose_split(self.below, self.what)
        return self.decided

    def __index__(self):
        return int(bool(self))

    __int__ = __index__

    def __float__(self):
        return float(bool(self))

    def __hash__(self):
        return hash(bool(self))


def _as_bool(op, reverse=False):
    if reverse:
        return lambda self, o: op(o, bool(self))
    return lambda self, o: op(bool(self), o)


for _name, _op in (("eq", operator.eq), ("ne", operator.ne), ("lt", operator.lt),
                   ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge),
                   ("and", operator.and_), ("or", operator.or_), ("xor", operator.xor),
                   ("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv),
                   ("mod", operator.mod)):
    setattr(Split, f"__{_name}__", _as_bool(_op))
    if _name not in ("eq", "ne", "lt", "le", "gt", "ge"):
        setattr(Split, f"__r{_name}__", _as_bool(_op, True))
Split.__neg__ = lambda self: -bool(self)
Split.__invert__ = lambda self: ~bool(self)


class Mixture:
    """A token selected by a :class:`Split`: ``a`` where it holds, else ``b`` (each a plain
    token, a :class:`Branched` one or a :class:`LawIndex`, or a mixture again).  It may be
    passed around and returned; any other use raises :class:`~exactspec.core.signals.CannotProceed` (``retry="splits"``)."""

    __slots__ = ("split", "a", "b")

    def __init__(self, split: Split, a, b):
        self.split = split
        self.a = a
        self.b = b

    def __repr__(self):
        return f"<{self.a!r} if {self.split!r} else {self.b!r}>"

    def _refuse(self, *args):
        raise CannotProceed("a token selected by a split used in a computation", retry="splits")

    __bool__ = __index__ = __int__ = __float__ = __hash__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __truediv__ = __rtruediv__ = __floordiv__ = __mod__ = __neg__ = _refuse
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = __invert__ = _refuse


def select(condition, a, b):
    """``a if condition else b`` for one element: a :class:`Mixture` when the condition is a
    split not yet decided and ``a``, ``b`` are tokens (the engine does not branch), the plain
    choice otherwise (a split then decided as a ``bool``)."""
    if type(condition) is Split and condition.decided is None:
        if all(type(t) in (int, Branched, LawIndex, Mixture) and type(t) is not bool
               for t in (a, b)) and all(type(v) is int for t in (a, b)
                                         if type(t) is Branched for v in t.values):
            return Mixture(condition, a, b)
    return a if condition else b


def _law_index(weights, total, what: str) -> LawIndex:
    """The token of law ``[w / total for w in weights]``, exactly: by integers over a common
    denominator (kept as its integer row) when the weights allow it."""
    row = integer_row(weights)
    if row is None:
        return LawIndex([Fraction(w) / total for w in weights], what)
    ints, d = row
    whole = sum(ints)                  # total = whole / d, so w / total = (w d) / whole
    return LawIndex(None, what, (ints, whole))


def combine(terms, n: int) -> list:
    """``sum_k scale_k * row_k`` for ``terms = [(scale_k, row_k), ...]`` of exact rows of
    length ``n`` (a list, or an integer row ``(numerators, denominator)``), by integers over
    one common denominator when the rows allow it.

    >>> combine([(Fraction(1, 2), [Fraction(1, 3), Fraction(2, 3)]), (1, ([2, 0], 2))], 2)
    [Fraction(7, 6), Fraction(1, 3)]
    """
    ints_rows = []
    for scale, row in terms:
        r = row if type(row) is tuple else integer_row(row)
        if r is None or type(scale) not in (int, Fraction):
            out = [Fraction(0)] * n
            for sc, rw in terms:
                if type(rw) is tuple:
                    rw = fractions_over(*rw)
                out = [a + sc * b for a, b in zip(out, rw)]
            return out
        ints, d = r
        scale = Fraction(scale)
        ints_rows.append((ints, scale.numerator, d * scale.denominator))
    common = 1
    for _, _, d in ints_rows:
        common = math.lcm(common, d)
    total = [0] * n
    for ints, a, d in ints_rows:
        f = a * (common // d)
        if f:
            total = [t + i * f for t, i in zip(total, ints)]
    return fractions_over(total, common)


def dot(a, b):
    """``sum_i a_i b_i`` of two exact rows, by integers when both are rows of rationals
    (either may be given as its integer row ``(numerators, denominator)``).

    >>> dot([Fraction(1, 2), Fraction(1, 4)], [Fraction(1, 3), 1])
    Fraction(5, 12)
    >>> dot(([2, 1], 4), [Fraction(1, 3), 1])
    Fraction(5, 12)
    """
    ra = a if type(a) is tuple else integer_row(a)
    rb = b if type(b) is tuple else integer_row(b)
    if ra is None or rb is None:
        a = fractions_over(*a) if type(a) is tuple else a
        b = fractions_over(*b) if type(b) is tuple else b
    if ra is None or rb is None:
        return exact_sum([x * y for x, y in zip(a, b)])
    return Fraction(sum(x * y for x, y in zip(ra[0], rb[0])), ra[1] * rb[1])


def _add(xn, xd, yn, yd):
    return fraction_of(xn * yd + yn * xd, xd * yd)


def _sub(xn, xd, yn, yd):
    return fraction_of(xn * yd - yn * xd, xd * yd)


def _mul(xn, xd, yn, yd):
    """The product reduced as ``Fraction`` reduces it: by the gcds across the two operands."""
    g1 = math.gcd(xn, yd)
    if g1 > 1:
        xn //= g1
        yd //= g1
    g2 = math.gcd(yn, xd)
    if g2 > 1:
        yn //= g2
        xd //= g2
    return reduced_fraction(xn * yn, xd * yd)


def _div(xn, xd, yn, yd):
    """The quotient reduced as ``Fraction`` reduces it (``yn != 0``)."""
    g1 = math.gcd(xn, yn)
    if g1 > 1:
        xn //= g1
        yn //= g1
    g2 = math.gcd(yd, xd)
    if g2 > 1:
        xd //= g2
        yd //= g2
    n, d = xn * yd, yn * xd
    return reduced_fraction(-n, -d) if d < 0 else reduced_fraction(n, d)


_ROW_OPS = {operator.add: _add, operator.sub: _sub, operator.mul: _mul,
            operator.truediv: _div,
            operator.lt: lambda xn, xd, yn, yd: xn * yd < yn * xd,
            operator.le: lambda xn, xd, yn, yd: xn * yd <= yn * xd,
            operator.gt: lambda xn, xd, yn, yd: xn * yd > yn * xd,
            operator.ge: lambda xn, xd, yn, yd: xn * yd >= yn * xd,
            operator.eq: lambda xn, xd, yn, yd: xn == yn and xd == yd,
            operator.ne: lambda xn, xd, yn, yd: xn != yn or xd != yd}


def rational_row(op, xs, ys):
    """``[op(x, y) for x, y in zip(xs, ys)]`` for two rows of ``Fraction``\\ s, by integers on
    their numerators and denominators (the same reduced fractions, the same bools, without
    the operators' type dispatch); ``None`` for another operation, a value that is not a
    ``Fraction`` or a division by zero (the caller computes element by element).

    >>> rational_row(operator.truediv, [Fraction(1, 2), Fraction(-3, 4)], [Fraction(3), Fraction(-1, 2)])
    [Fraction(1, 6), Fraction(3, 2)]
    >>> rational_row(operator.lt, [Fraction(1, 3)], [Fraction(1, 2)])
    [True]
    """
    f = _ROW_OPS.get(op)
    if f is None:
        return None
    for row in (xs, ys):
        for v in row:
            if type(v) is not Fraction:
                return None
    if op is operator.truediv and not all(ys):
        return None
    return [f(x._numerator, x._denominator, y._numerator, y._denominator)
            for x, y in zip(xs, ys)]


def rational_extreme(xs, ys, maximum: bool):
    """``max`` (``maximum``) or ``min`` of two rows of ``Fraction``\\ s, element by element,
    taking the second value only when it is strictly larger (smaller), as ``torch.maximum``
    and ``minimum`` take it in the layer; ``None`` where a value is not a ``Fraction``.

    >>> rational_extreme([Fraction(1, 2), Fraction(2)], [Fraction(1), Fraction(1)], False)
    [Fraction(1, 2), Fraction(1, 1)]
    """
    for row in (xs, ys):
        for v in row:
            if type(v) is not Fraction:
                return None
    if maximum:
        return [y if x._numerator * y._denominator < y._numerator * x._denominator else x
                for x, y in zip(xs, ys)]
    return [y if y._numerator * x._denominator < x._numerator * y._denominator else x
            for x, y in zip(xs, ys)]


def _complement(row: list) -> list:
    """``[1 - b for b in row]``: for a ``Fraction`` ``n / d``, ``(d - n) / d``, already in
    lowest terms (``gcd(d - n, d) = gcd(n, d)``).

    >>> _complement([Fraction(1, 3), Fraction(1), 0])
    [Fraction(2, 3), Fraction(0, 1), 1]
    """
    out = []
    append = out.append
    new = object.__new__
    for b in row:
        if type(b) is Fraction:
            f = new(Fraction)
            f._numerator = b._denominator - b._numerator
            f._denominator = b._denominator
            append(f)
        else:
            append(1 - b)
    return out


def _below_ideal(x):
    """``P(u < x) = P(u <= x)`` for an ideal uniform on ``[0, 1)``: ``x`` clipped to [0, 1].

    >>> _below_ideal(Fraction(1, 3)), _below_ideal(-1), _below_ideal(2)
    (Fraction(1, 3), Fraction(0, 1), Fraction(1, 1))
    """
    num, den = x.numerator, x.denominator
    return _ZERO if num <= 0 else _ONE if num >= den else \
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
    return _ZERO if k <= 0 else _ONE if k >= n else fraction_of(k, n)


_ZERO, _ONE = Fraction(0), Fraction(1)


class _Vector:
    """A path weight per draft branch."""

    __slots__ = ("values",)

    def __init__(self, values):
        self.values = values

    def __mul__(self, o):
        if isinstance(o, _Vector):
            return _Vector([a * b for a, b in zip(self.values, o.values)])
        if type(o) in (int, Fraction) and o == 1:       # the weight of a path's first split
            return _Vector(self.values)
        return _Vector([a * o for a in self.values])

    __rmul__ = __mul__

    def __ne__(self, o):
        return any(v != o for v in self.values) if not isinstance(o, _Vector) else \
            self.values != o.values


class VectorSampler(ExactSampler):
    """The exact interpreter with the draft kept as a branch axis (see the module's text)."""

    vectorised = True
    split_values = False      # comparisons ``u < c[draft]`` kept as :class:`Split` values

    def __init__(self, size: int, grid: int | None = None, split_values: bool = False):
        super().__init__(grid=grid)
        self.size = size
        self.split_values = split_values

    def _reset(self):
        super()._reset()
        self.axis = None                # the Branched draft of this path, once drawn
        self._spent: set = set()       # uniforms split against a branched threshold
        self._spent_uniforms: list = []
        self._raced: set = set()       # noise vectors a race has read

    def draft(self, q, what: str = "draft"):
        if self.axis is not None:
            raise CannotProceed("a second draft (one branch axis only)")
        self.axis = Branched(list(range(self.size)))
        self._never = [pr == 0 for pr in q.probs]    # draft branches of weight 0
        self.drafted.append(self.axis)
        return self.axis

    def lazy_draw(self, weights, what: str) -> LawIndex:
        """A token drawn with probabilities ``weights / sum(weights)`` kept as its law
        (``torch.multinomial(w, 1)``; the weights are exact and not negative)."""
        if any(not isinstance(w, (int, Fraction)) for w in weights):
            raise CannotProceed("a multinomial over weights that are not exact rationals")
        total = exact_sum(weights)
        if total == 0:
            raise CannotProceed("a multinomial over weights that are all 0")
        return _law_index(weights, total, what)

    def race(self, weights, noise, *, first: bool = True, what: str = "race"):
        if not first or noise.rows or noise.ident in self._raced or noise.kind != "exponential":
            raise CannotProceed("a race other than the first arrival on fresh exponential noise")
        if any(not isinstance(w, (int, Fraction)) for w in weights) or any(w < 0 for w in weights):
            raise CannotProceed("a race over weights that are not exact numbers")
        self._raced.add(noise.ident)
        total = exact_sum(weights)
        if total == 0:
            raise CannotProceed("a race over weights that are all 0")
        return _law_index(weights, total, what)

    def _choose(self, kind: str, options: list):
        if self._spent and kind in ("uniforms", "product"):   # a joint region of uniforms
            raise CannotProceed("uniforms compared jointly after a branched comparison")
        return super()._choose(kind, options)

    def finish(self):
        """At the end of a path: a uniform split per branch must not have been read since."""
        for u in self._spent_uniforms:
            if u.linked or u.spent:
                raise CannotProceed("a uniform read jointly after a branched comparison")

    def pick(self, dist, u, what: str = "pick"):
        self._check_fresh(getattr(u, "base", None))
        return super().pick(dist, u, what)

    def _check_fresh(self, u):
        if u is not None and getattr(u, "ident", None) in self._spent:
            raise CannotProceed("a uniform read again after a branched comparison")

    def _split_uniform(self, u, c, strict: bool) -> bool:
        self._check_fresh(u)
        if not isinstance(c, Branched):
            return super()._split_uniform(u, c, strict)
        if u.linked or u.spent or u.lo != 0 or u.hi != 1:
            raise CannotProceed("a branched comparison of a uniform already split")
        return self._branched_split(u, self._below_row(c.values, strict),
                                    f"u{u.ident} {'<' if strict else '<='} c[draft]")

    def _thresholds(self, values, never=None) -> list:
        """The thresholds ``c[x]`` of a branched comparison, checked to be exact numbers;
        ``None`` on a draft of probability 0 (its weight is 0 anyway; ``never`` marks those
        branches, by default the draft's)."""
        out = []
        for x, never in zip(values, self._never if never is None else never):
            if never:
                out.append(None)
                continue
            if _random(x) or isinstance(x, float) or not isinstance(x, (int, Fraction)):
                raise CannotProceed("a branched threshold that is not an exact number")
            out.append(x)
        return out

    def _below_row(self, values, strict: bool, never=None) -> list:
        """``P(u < c[x])`` (``strict``) or ``P(u <= c[x])`` per draft branch, on the run's grid
        or ideal."""
        n = self.grid
        return [_ZERO if x is None else
                below_on_grid(x, n, strict) if n is not None else _below_ideal(x)
                for x in self._thresholds(values, never)]

    def _branched_split(self, u, below: list, what: str):
        """One branch point on the fresh uniform ``u``: ``True`` with probability ``below[x]``
        on draft branch ``x``; ``u`` may not be read again.  With :attr:`split_values` a
        :class:`Split` holding ``below``, the branch point made only where it is read as a
        ``bool``."""
        self._spent.add(u.ident)
        self._spent_uniforms.append(u)
        if self.split_values:
            return Split(self, below, what)
        return self._choose_split(below, what)

    def _choose_split(self, below: list, what: str) -> bool:
        """The branch point of a split: ``True`` with weight ``below[x]`` on branch ``x``."""
        above = _complement(below)
        options = []
        if any(b != 0 for b in below):
            options.append((True, _Vector(below), what))
        if any(a != 0 for a in above):
            options.append((False, _Vector(above), f"not {what}"))
        return self._choose("uniform", options)


class Pair(tuple):
    """A quantity of the pair run: its value with ideal uniforms and on the grid."""

    __slots__ = ()

    def __new__(cls, ideal, on_grid):
        return tuple.__new__(cls, (ideal, on_grid))


class _PairVector:
    """A path weight per draft branch, with ideal uniforms and on the grid (two lists)."""

    __slots__ = ("values",)

    def __init__(self, ideal, on_grid):
        self.values = Pair(ideal, on_grid)

    def __mul__(self, o):
        if isinstance(o, _PairVector):
            return _PairVector(*([a * b for a, b in zip(x, y)]
                                 for x, y in zip(self.values, o.values)))
        if isinstance(o, (int, Fraction)):
            if o == 1:                                  # the weight of a path's first split
                return _PairVector(*self.values)
            return _PairVector(*([a * o for a in x] for x in self.values))
        return NotImplemented

    __rmul__ = __mul__


class PairSampler(VectorSampler):
    """The vectorised exact interpreter run once for two laws: ideal uniforms and uniforms on
    the grid ``{0, 1/N, ..., (N-1)/N}``.

    Exact arithmetic is the same in both runs and draws, races and the draft do not read a
    uniform (their laws are the same on a grid), so the body computes the same values on both;
    the runs differ only in the weight of a comparison ``u < c[draft]`` of a fresh uniform,
    which is kept as a :class:`Pair` (``P(u < c[x])`` ideal and on the grid) in the split and
    in the path weight.  Any other use of a uniform's law reads the sampler's grid and raises
    :class:`~exactspec.core.signals.CannotProceed` (``retry="apart"``).  An outcome whose weight is 0 on every branch in one of the runs is
    not a path of that run: :attr:`alive` says, per run, whether the present path is one.

    >>> s = PairSampler(2, 4)
    >>> s._reset()
    >>> s._choose_split(Pair([Fraction(1, 3), Fraction(1)], [Fraction(1, 2), Fraction(1)]), "u")
    True
    >>> s.weight.values, s.alive
    (([Fraction(1, 3), Fraction(1, 1)], [Fraction(1, 2), Fraction(1, 1)]), [True, True])
    """

    def __init__(self, size: int, grid: int, split_values: bool = False):
        super().__init__(size, None, split_values)
        self.pair_grid = grid

    @property
    def grid(self):
        raise CannotProceed("a uniform's law on the grid outside a comparison with c[draft]", retry="apart")

    @grid.setter
    def grid(self, value):
        if value is not None:
            raise ValueError("the pair run is built without a grid: give pair_grid")

    def _reset(self):
        super()._reset()
        self.alive = [True, True]

    def _below_row(self, values, strict: bool, never=None) -> Pair:
        """The weights of a branched comparison with ideal uniforms and on the grid (a scalar
        comparison reads :attr:`grid`: :class:`~exactspec.core.signals.CannotProceed` (``retry="apart"``))."""
        xs, n = self._thresholds(values, never), self.pair_grid
        return Pair([_ZERO if x is None else _below_ideal(x) for x in xs],
                    [_ZERO if x is None else below_on_grid(x, n, strict) for x in xs])

    def _choose_split(self, below, what: str) -> bool:
        if type(below) is not Pair:
            raise CannotProceed("a split without its weights on the grid", retry="apart")
        above = [_complement(run) for run in below]
        holds = [any(b != 0 for b in run) for run in below]
        fails = [any(a != 0 for a in run) for run in above]
        options = []
        if holds[0] or holds[1]:
            options.append((True, _PairVector(*below), what))
        if fails[0] or fails[1]:
            options.append((False, _PairVector(*above), f"not {what}"))
        value = self._choose("uniform", options)
        self.alive = [a and b for a, b in zip(self.alive, holds if value else fails)]
        return value
