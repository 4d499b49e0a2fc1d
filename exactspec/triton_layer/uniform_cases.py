"""A kernel's ``if`` on a comparison of a fresh uniform, run both ways on the factored route.

SGLang's chain sampler draws its final token by the inverse CDF over the vocabulary in tiles,
tile by tile: ``if found == 0:`` the tile's running sums are compared with ``u * total``,
``if has_match:`` (some lane passes) the first lane that passes is the token and ``found =
1``.  On the factored route a comparison of a fresh uniform ``u`` with plain numbers is kept
lazy (:class:`~exactspec.torch_layer.factored_sampler.LazyIndicator`), and such a condition
holds on an interval of ``u``.  Where both branches are pure (:mod:`.branches`: they bind
local names and call only the Triton language), the ``if`` runs both, each on its part of
``u``: the names it reads restricted to that part (:func:`restricted`, a name whose value
is the same on the whole part becomes that value), and the names either assigns become
:class:`Cases`, a value per interval of ``u``.  While a branch runs, its interval is the
uniform's *context*: the lazy lane reductions (the first lane that passes, their maximum)
are taken within it (:func:`context_of`).  A vocabulary of ``T`` tiles is then one path, not
``T``.

A :class:`Cases` used outside such a branch (stored, added, compared) becomes one value:
integers, 0-d integer blocks and the lazy counts of the same uniform over the intervals are
one lazy count (an integer step function of ``u`` is a count of ``u``'s comparisons, up to a
shift), and a plain number compared with a :class:`Cases` of plain numbers is a
:class:`Cases` of bools (``found == 0``), whose true part must be one interval to be a
condition.  Anything else, a name bound on one side only and read after the ``if``, a
condition on two uniforms, or a part of ``u`` that is not one interval, is a
:class:`~exactspec.core.signals.CannotProceed`: the rule goes to the path enumeration.

>>> from fractions import Fraction as F
>>> c = Cases(None, [(F(0), F(1, 2), 1), (F(1, 2), F(1), 0)])
>>> (c == 0).pieces
((Fraction(0, 1), Fraction(1, 2), False), (Fraction(1, 2), Fraction(1, 1), True))
>>> restricted(c, F(1, 2), F(1))
0
>>> from exactspec.torch_layer.factored_sampler import FactoredSampler
>>> s = FactoredSampler(4)
>>> s._reset()
>>> token = Cases(s.uniform(), [(F(0), F(1, 4), 3), (F(1, 4), F(1, 2), 1), (F(1, 2), F(1), 2)])
>>> sorted(token.value().law().items())      # down two, then up one: one lazy count
[(1, Fraction(1, 4)), (2, Fraction(1, 2)), (3, Fraction(1, 4))]
"""

from __future__ import annotations

import operator
from fractions import Fraction

from ..core.signals import CannotProceed
from ..engine.uniform import UniformView
from ..torch_layer.factored_sampler import (FactoredSampler, LazyCount, LazyIndicator,
                                              context_of)
from ..torch_layer.tensor import Tensor
from .blocks import block, tensor
from .state import UNBOUND

__all__ = ["Cases", "restricted", "lazy_condition", "cases_if"]

_ZERO, _ONE = Fraction(0), Fraction(1)


class Cases:
    """A kernel name's value on each of disjoint intervals ``[lo, hi)`` of the fresh uniform
    ``base`` (``pieces``: ``(lo, hi, value)`` in order); see the module's text."""

    __slots__ = ("base", "pieces")
    uniform_cases = True               # (how the block operations know one, by its type)

    def __init__(self, base, pieces):
        self.base = base
        self.pieces = tuple(pieces)

    def _compare(self, op, other):
        if isinstance(other, Cases) or not _plain(other) or \
                not all(_plain(v) for _, _, v in self.pieces):
            return op(self.value(), other)
        return _joined(self.base, [(lo, hi, bool(op(v, other))) for lo, hi, v in self.pieces])

    def __eq__(self, other):
        return self._compare(operator.eq, other)

    def __ne__(self, other):
        return self._compare(operator.ne, other)

    def __lt__(self, other):
        return self._compare(operator.lt, other)

    def __le__(self, other):
        return self._compare(operator.le, other)

    def __gt__(self, other):
        return self._compare(operator.gt, other)

    def __ge__(self, other):
        return self._compare(operator.ge, other)

    __hash__ = None

    def __bool__(self):
        values = {v for _, _, v in self.pieces if _plain(v)}
        if len(values) == 1 and all(_plain(v) for _, _, v in self.pieces):
            return bool(values.pop())
        raise CannotProceed("a value of a kernel's if on a uniform read into Python")

    def _arith(op, swapped=False):
        def apply(self, other):
            return op(other, self.value()) if swapped else op(self.value(), other)
        return apply

    __add__, __radd__ = _arith(operator.add), _arith(operator.add, True)
    __sub__, __rsub__ = _arith(operator.sub), _arith(operator.sub, True)
    __mul__, __rmul__ = _arith(operator.mul), _arith(operator.mul, True)
    del _arith

    def value(self):
        """The one value standing for every piece: a lazy count of the uniform (a 0-d block of
        one where the pieces are blocks), or the pieces' one value."""
        values = [v for _, _, v in self.pieces]
        if all(v is values[0] for v in values):
            return values[0]
        dtypes = {v.dtype for v in values if isinstance(v, tensor)}
        steps = []
        for lo, hi, v in self.pieces:
            if isinstance(v, tensor):
                if v.numel != 1 or v.dtype.is_ptr():
                    raise CannotProceed("a block of several lanes chosen by a uniform")
                v = v.t._values()[0]
            steps.extend(_steps(v, lo, hi))
        count = _count_of(self.base, steps)
        if not dtypes:
            return count
        if len(dtypes) != 1:
            raise CannotProceed("blocks of two dtypes chosen by a uniform")
        dt = dtypes.pop()
        if dt.is_floating():
            raise CannotProceed("a float chosen by a uniform")
        return block(Tensor.new([count], (), dt.torch), dt)

    def __repr__(self):
        return "Cases(" + ", ".join(f"[{lo}, {hi}): {v!r}" for lo, hi, v in self.pieces) + ")"


def _plain(v) -> bool:
    return type(v) in (int, bool, Fraction)


def _joined(base, pieces: list):
    """``pieces`` with equal neighbours joined; their one value where it is one piece."""
    out: list = []
    for lo, hi, v in pieces:
        if hi <= lo:
            continue
        if out and (out[-1][2] is v or (_plain(v) and _plain(out[-1][2]) and
                                        type(v) is type(out[-1][2]) and out[-1][2] == v)):
            out[-1] = (out[-1][0], hi, v)
        else:
            out.append((lo, hi, v))
    if len(out) == 1:
        return out[0][2]
    return Cases(base, out)


def _steps(v, lo, hi) -> list:
    """``[(lo, hi, integer)]``: the integer value ``v`` (an int, or a lazy count of the
    uniform) on each piece of ``[lo, hi)``."""
    if type(v) in (int, bool):
        return [(lo, hi, int(v))]
    if isinstance(v, LazyCount):
        out = []
        for a, b, k in v.intervals():
            a, b = max(a, lo), min(b, hi)
            if a < b:
                out.append((a, b, k))
        return out
    if v is UNBOUND:
        raise CannotProceed("a name a kernel's if on a uniform binds on one side only, read "
                            "after it")
    raise CannotProceed(f"a {type(v).__name__} chosen by a uniform")


def _count_of(base, steps: list) -> LazyCount:
    """The integer step function ``steps`` (pieces covering ``[lo, hi)``) of the uniform as
    one lazy count: its first value plus a comparison ``u >= b`` per unit step up and ``u <
    b`` per unit step down (each of those is 1 below ``b``, so the shift takes one off)."""
    sampler = base.sampler
    if not isinstance(sampler, FactoredSampler) or base.ident in sampler._axis_split:
        raise CannotProceed("a token chosen by a uniform outside the factored run")
    steps.sort(key=lambda s: s[0])
    shift = steps[0][2]
    above: list = []
    below: list = []
    for (_, _, k0), (b, _, k1) in zip(steps, steps[1:]):
        if k1 > k0:
            above.extend([b] * (k1 - k0))
        elif k1 < k0:
            below.extend([b] * (k0 - k1))
            shift -= k0 - k1
    unit = UniformView(base, Fraction(1), Fraction(0))
    return LazyCount(sampler, unit, tuple(above), tuple(below), shift)


def restricted(value, lo, hi):
    """``value`` on ``[lo, hi)`` only: a :class:`Cases` keeps the pieces there, and is their
    value where one piece covers it."""
    if type(value) is not Cases:
        return value
    pieces = [(max(a, lo), min(b, hi), v) for a, b, v in value.pieces if a < hi and b > lo]
    if not pieces:
        raise CannotProceed("a kernel's if on a uniform outside the part it was defined on")
    return _joined(value.base, pieces)


def lazy_condition(c):
    """``(uniform, lo, hi)``: the interval of a fresh uniform where the condition ``c`` holds
    (a lazy comparison ``v < c``, in a 0-d block or not, or a :class:`Cases` of bools whose
    true part is one interval); ``None`` for any other condition."""
    t = getattr(c, "t", None)
    if t is not None and getattr(t, "numel", None) is not None and t.numel() == 1:
        c = t._values()[0]
    if type(c) is LazyIndicator:
        base = c.view.base
        if not isinstance(c.sampler, FactoredSampler) or base.ident in c.sampler._axis_split:
            return None
        cut = min(max(c.cut, _ZERO), _ONE)
        return (base, _ZERO, cut) if c.truth else (base, cut, _ONE)
    if type(c) is Cases and all(type(v) is bool for _, _, v in c.pieces):
        true = [(lo, hi) for lo, hi, v in c.pieces if v]
        if any(a[1] != b[0] for a, b in zip(true, true[1:])):
            raise CannotProceed("a kernel's if on a uniform that holds on two intervals")
        return c.base, true[0][0], true[-1][1]
    return None


def cases_if(condition, then, orelse, values: tuple, marks) -> tuple:
    """Both branches of an ``if`` whose condition holds on the interval ``condition = (base,
    lo, hi)`` of a fresh uniform, each on its part of the current context, and the names
    they assign as :class:`Cases` (``marks()``: what a branch must leave as it found)."""
    base, lo, hi = condition
    sampler = base.sampler
    c_lo, c_hi = context_of(sampler, base)
    lo, hi = max(lo, c_lo), min(hi, c_hi)
    if hi <= lo:
        return orelse(tuple(restricted(v, c_lo, c_hi) for v in values))
    if lo == c_lo and hi == c_hi:
        return then(tuple(restricted(v, c_lo, c_hi) for v in values))
    if lo != c_lo and hi != c_hi:
        raise CannotProceed("a kernel's if on a uniform that splits its part in three")
    rest = (c_lo, lo) if hi == c_hi else (hi, c_hi)
    before = marks()
    stack = sampler.__dict__.setdefault("cases_context", [])
    results = []
    for (a, b), branch in (((lo, hi), then), (rest, orelse)):
        stack.append((base, a, b))
        try:
            results.append(branch(tuple(restricted(v, a, b) for v in values)))
        finally:
            stack.pop()
    if marks() != before:
        raise CannotProceed("a branch of a kernel's if on a uniform that stores or draws")
    first, second = results
    out = []
    for t, e in zip(first, second):
        if t is e:
            out.append(t)
            continue
        pieces = _pieces(t, lo, hi) + _pieces(e, *rest)
        out.append(_joined(base, sorted(pieces, key=lambda s: s[0])))
    return tuple(out)


def _pieces(value, lo, hi) -> list:
    if type(value) is Cases:
        return [(max(a, lo), min(b, hi), v) for a, b, v in value.pieces if a < hi and b > lo]
    return [(lo, hi, value)]
