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

Each value type takes part in the tensor layer's operations by rules it registers beside its
definition (:mod:`.dispatch`, looked up by the element's type): :class:`Branched`'s here
(arithmetic, comparisons, casts, ``maximum``, powers, reads and indices branch by branch, no
one Python value), the others' in :mod:`.axis_values`.

>>> b = Branched([1, 2, 3])
>>> b * 2 + 1
Branched([3, 5, 7])
>>> bool(b < 5)
Traceback (most recent call last):
...
exactspec.core.signals.CannotProceed: a branched value decided a Python-level condition
"""

from __future__ import annotations

import operator
from fractions import Fraction

from ..core.integer_rows import exact_sum, fractions_over, integer_row, scaled_rows_sum
from ..core.signals import CannotProceed
from ..engine.exact import ExactSampler
from ..engine.floats import FORMATS, FloatValue
from ..engine.uniform import Uniform, UniformView, below_ideal, below_on_grid
from . import float_rows
from .axis_values import LawIndex, Mixture, Pair, Split, no_one_value
from .context import CURRENT, current
from .dispatch import OPS, UNSET, is_random, register
from .rational_rows import rational_extreme, rational_row

__all__ = ["Branched", "LawIndex", "Split",
           "Mixture", "Pair", "VectorSampler", "PairSampler", "is_branched", "axis_of",
           "select", "combine", "dot", "rational_row", "rational_extreme", "below_on_grid"]


def _random(v) -> bool:
    """Anything but a plain number (int, rational, float, a float format's value, a sympy
    number): a random value, a drawn token, noise (refused in branch-wise arithmetic)."""
    if isinstance(v, (int, Fraction, float, FloatValue)):
        return False
    return not getattr(v, "is_number", False)


#: Rows of at least this many rationals are computed by :func:`rational_row`.
_FAST_ROW = 64

#: The operations whose result on two ints is the int Python computes (the scalar rule's).
_INTEGER_RING = frozenset((operator.add, operator.sub, operator.mul))

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


# -- the rules of a value on every draft branch --------------------------------------------

def _branched_cast(v: Branched, dtype, cast):
    """A branched value held as ``dtype``: exact rationals (values of the dtype's format under
    ``--arith``) stay as they are, other values are cast branch by branch."""
    if dtype.kind == "float" and CURRENT[-1].fmt is None and \
            all(type(x) is Fraction for x in v.values):
        return v                               # exact rationals stay as they are
    if dtype.kind == "float" and CURRENT[-1].fmt is not None:
        fmt = FORMATS[dtype.name]
        if all(type(x) is FloatValue and x.fmt is fmt for x in v.values):
            return v                           # values of the dtype stay as they are
    if dtype.kind == "int" and all(type(x) is int for x in v.values):
        bound = 1 << (dtype.bits - 1)
        if -bound <= min(v.values) and max(v.values) < bound:
            return v                           # integers the dtype holds stay as they are
    return v.map(lambda x: cast(x, dtype))


def _branched_arith(op, a, b, arith):
    """``arith`` on every draft branch: the path run's scalar operation, branch by branch."""
    if isinstance(a, LawIndex) or isinstance(b, LawIndex):
        raise CannotProceed("a branched value in arithmetic with a random value")
    if is_random(a) or is_random(b):
        hook = getattr(current().sampler, "branched_product", None)   # u * c[x] (factored)
        if hook is None:
            raise CannotProceed("a branched value in arithmetic with a random value")
        return hook(op, a, b)
    xs = a.values if type(a) is Branched else None
    ys = b.values if type(b) is Branched else None
    first = (xs or ys)[0] if (xs or ys) else None
    if type(first) is FloatValue:              # a row of one format: by NumPy where it can
        n = len(xs or ys)
        fast = float_rows.binary(op, xs or [a] * n, ys or [b] * n, first.fmt)
        if fast is not None:
            return Branched(fast, axis_of(a, b))
    n = len(xs or ys)
    if n >= _FAST_ROW and type(first) is Fraction and \
            (xs is not None or type(a) in (int, Fraction)) and \
            (ys is not None or type(b) in (int, Fraction)):
        # rows of rationals (``p[x] / q[x]`` on a draft axis): ``arith`` of two Fractions is
        # the operator, which the integers give at once (None: a zero divisor or another type)
        fast = rational_row(op, xs or [Fraction(a)] * n, ys or [Fraction(b)] * n)
        if fast is not None:
            return Branched(fast, axis_of(a, b))
    if n >= _FAST_ROW and type(first) is int and op in _INTEGER_RING and \
            all(type(v) is int for v in (xs or ())) and \
            all(type(v) is int for v in (ys or ())) and \
            (xs is not None or type(a) is int) and (ys is not None or type(b) is int):
        # rows of integers (a pointer's offsets at the draft tokens): ``arith`` of two ints
        # is the operator (the dtype's range is checked by the caller, as element by element)
        return Branched([op(x, y) for x, y in zip(xs or [a] * n, ys or [b] * n)],
                        axis_of(a, b))
    if type(a) is Branched and type(b) is Branched:
        return Branched([arith(op, x, y) for x, y in zip(a.values, b.values)], axis_of(a, b))
    if type(a) is Branched:
        return Branched([arith(op, x, b) for x in a.values], a.axis)
    return Branched([arith(op, a, y) for y in b.values], b.axis)


def _branched_decide(op, a, b, decide, truth):
    """A comparison on every draft branch (a plain bool when it is the same on all of them);
    against a fresh uniform, the engine's split of that uniform by the branched threshold."""
    if is_random(a) or is_random(b):          # a uniform against a threshold per branch
        if "uniform_noise" in current().__dict__:
            OPS["check_not_noise"](a, b)
        u = a if is_random(a) else b
        if not isinstance(getattr(u, "base", None), Uniform) or \
                not (isinstance(u, UniformView) or hasattr(u, "increasing")) or \
                u.base.linked or u.base.spent or is_random(b if u is a else a):
            raise CannotProceed("a branched value compared with a random value other than a "
                                "fresh uniform")
        return truth(op(a, b))
    av = a.values if type(a) is Branched else None
    bv = b.values if type(b) is Branched else None
    plain = b if av is not None and bv is None else a if av is None else None
    row = av if av is not None else bv
    if type(plain) in (int, Fraction) and all(type(x) is Fraction or type(x) is int
                                              for x in row):
        out = [op(x, plain) for x in row] if plain is b else [op(plain, x) for x in row]
    else:                                     # (exact numbers: the comparison as it is)
        out = [decide(op, av[i] if av is not None else a, bv[i] if bv is not None else b)
               for i in range(len(av if av is not None else bv))]
    if out and all(v is out[0] for v in out):
        return out[0]            # the same on every branch (a token != -1): a plain bool
    axis = axis_of(a, b)
    never = getattr(current().sampler, "never_branches", None)
    never = never(axis) if never is not None else None
    if never is not None and len(never) == len(out) and not all(never):
        drawn = [v for v, nev in zip(out, never) if not nev]
        if all(v is drawn[0] for v in drawn) and type(drawn[0]) is bool:
            return drawn[0]      # the same on every branch the draft can take (q > 0)
    return Branched(out, axis)


def _branched_extreme(x, y, maximum: bool, dtype, extreme):
    """``torch.maximum``/``minimum`` of two elements, one of them branched: branch by branch
    (whole rows of rationals by integers, of a float format by NumPy)."""
    n = len((x if type(x) is Branched else y).values)
    xs = x.values if type(x) is Branched else [x] * n
    ys = y.values if type(y) is Branched else [y] * n
    fast = (rational_extreme(xs, ys, maximum) if len(xs) >= float_rows.MIN_ROW
            else None) if current().exact else \
        float_rows.extreme(xs, ys, FORMATS[dtype.name], maximum)
    return Branched(fast if fast is not None else
                    [extreme(a, b, maximum) for a, b in zip(xs, ys)], axis_of(x, y))


def _branched_opmath_scalar(v: Branched, opmath_scalar):
    """Half precision's ``float32`` scalar on every branch (``None`` where one is random)."""
    out = [opmath_scalar(x) for x in v.values]
    return None if any(x is None for x in out) else Branched(out, v.axis)


def _branched_opmath(op, x, s, fmt, opmath_arith):
    """Half precision's ``float32`` operation on every branch (by NumPy where it can)."""
    n = len((x if type(x) is Branched else s).values)
    xs = x.values if type(x) is Branched else [x] * n
    ss = s.values if type(s) is Branched else [s] * n
    fast = float_rows.opmath(op, xs, ss, fmt)
    if fast is None:
        fast = [opmath_arith(op, a, b, fmt) for a, b in zip(xs, ss)]
        if any(v is None for v in fast):
            return None
    return Branched(fast, axis_of(x, s))


def _branched_read(data: list, position: Branched):
    """``data[position]`` on every branch: plain numbers only."""
    values = [data[i] for i in position.values]
    if any(v is UNSET for v in values):
        raise CannotProceed("a branched read of unwritten memory")
    if all(type(v) is Fraction for v in values):
        return Branched(values, position.axis)
    if any(isinstance(v, (Branched, LawIndex)) or is_random(v) for v in values):
        raise CannotProceed("a branched read of a random or branched value")
    return Branched(values, position.axis)


def _branched_index(i: Branched, n: int, where: str):
    """A branched index checked on every branch against a dimension of size ``n``."""
    if not all(-n <= j < n for j in i.values):
        raise CannotProceed(f"{where}a branched index out of bounds on some branch")
    return i.map(lambda j: j % n)


register(Branched, rank=1, arith=_branched_arith, decide=_branched_decide,
         cast=_branched_cast, extreme=_branched_extreme,
         power=lambda x, power: x.map(power), opmath_scalar=_branched_opmath_scalar,
         opmath=_branched_opmath, read_at=_branched_read, index=_branched_index,
         python=no_one_value, number_test=no_one_value)


def _split_select(condition: Split, a, b, dtype, cast):
    """``torch.where`` of one element by a split not yet decided: both sides cast, then a
    :class:`Mixture` of tokens (:func:`select`); ``None`` for a split already decided (the
    usual choice)."""
    if condition.decided is not None:
        return None
    return select(condition, cast(a, dtype), cast(b, dtype))

register(Split, rank=0, select=_split_select)   # its other rules: .axis_values


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
    out = scaled_rows_sum(terms, n)
    if out is not None:
        return out
    out = [Fraction(0)] * n
    for sc, rw in terms:
        if type(rw) is tuple:
            rw = fractions_over(*rw)
        out = [a + sc * b for a, b in zip(out, rw)]
    return out


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

    def never_branches(self, axis) -> list | None:
        """The branches of the draft (``axis``) of probability 0, or ``None`` before a draft."""
        return self._never if self.axis is not None else None

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
        # a noise vector raced again (one noise row shared by several positions' races) is
        # allowed: each winner kept as its law has its own law; the factored route refuses to
        # emit two winners of one noise vector, and race maxima over shared noise are never
        # decided (noise._alone)
        if not first or noise.rows or noise.kind != "exponential":
            raise CannotProceed("a race other than the first arrival on exponential noise")
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
                below_on_grid(x, n, strict) if n is not None else below_ideal(x)
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
        return Pair([_ZERO if x is None else below_ideal(x) for x in xs],
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
