"""One symbol on an interval: run exact code over ``x`` in ``(lo, hi)``, splitting at roots.

The symbolic interpreter (:mod:`.symbolic`) handles symbols ``p_i``, ``q_i`` whose signs it
splits on by linear programming.  Families of instances with *one* parameter (``q = (1-a, a)``,
``p = (1-a^k, a^k)``; Khisti et al.'s target ``(1/3, x, 2/3-x)``) need something simpler and
stronger: every comparison the code makes is the sign of a rational function of ``x`` with
rational coefficients, and that sign is decided exactly on an open interval by its real roots.

:func:`piecewise` calls ``fn(x)`` with ``x`` a :class:`~.symbolic.SymbolicValue` of the
symbol, under a case that decides every sign on the open interval ``(lo, hi)``:

- the numerator and denominator (polynomials in ``x``) have no real root strictly inside the
  interval (sympy's exact ``real_roots``): the sign is the sign at the rational midpoint;
- a root inside is rational: the run stops and restarts on ``(lo, r)``, at the point ``r``
  (``fn`` called with the ``Fraction`` ``r``: plain exact arithmetic) and on ``(r, hi)``;
- a root inside is irrational: :class:`~exactspec.core.errors.Undecided` (never a guess).

So a method written for the exact engine (``verify("rrs", ...)``) runs unchanged over the whole
family, and the result is a list of :class:`Piece`: each an open interval or a point, with
``fn``'s outputs as sympy expressions in ``x`` valid on all of it.

>>> import sympy
>>> x = sympy.Symbol("x")
>>> pieces = piecewise(lambda v: {"m": min(v, 1 - v)}, x, 0, 1)
>>> [(str(pc.lo), str(pc.hi), pc.values["m"]) for pc in pieces]
[('0', '1/2', x), ('1/2', '1/2', 1/2), ('1/2', '1', 1 - x)]
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

import sympy

from ..core.errors import InvalidInput, Undecided
from ..core.signals import EngineSignal
from . import symbolic as _symbolic
from .symbolic import SymbolicValue

__all__ = ["IntervalCase", "Split", "Piece", "piecewise", "to_sympy"]


def _rational(value) -> sympy.Rational:
    value = Fraction(value) if not isinstance(value, sympy.Basic) else value
    if isinstance(value, Fraction):
        return sympy.Rational(value.numerator, value.denominator)
    if not value.is_Rational:
        raise InvalidInput(f"interval end {value}: must be rational")
    return value


class Split(EngineSignal):
    """Raised inside a run when a sign changes at the rational point ``at`` of the interval."""

    def __init__(self, at: sympy.Rational):
        super().__init__(f"split at {at}")
        self.at = at


class IntervalCase:
    """Decides the sign of any rational function of ``x`` with rational coefficients for
    every ``x`` in the open interval ``(lo, hi)`` at once (the case object of
    :mod:`.symbolic`'s comparisons)."""

    def __init__(self, x: sympy.Symbol, lo, hi):
        self.x = x
        self.lo, self.hi = _rational(lo), _rational(hi)
        if not self.lo < self.hi:
            raise InvalidInput(f"interval ({self.lo}, {self.hi}) is empty")
        self.mid = (self.lo + self.hi) / 2
        self._cache: dict = {}
        #: every sign decided, as ``(expression, sign)``: the piece's conditions
        self.decided: list = []

    def sign(self, expr) -> int:
        expr = sympy.sympify(expr)
        if expr.free_symbols - {self.x}:
            extra = sorted(map(str, expr.free_symbols - {self.x}))
            raise InvalidInput(f"{expr}: only {self.x} may be free, not {extra}")
        found = self._cache.get(expr)
        if found is None:
            num, den = sympy.fraction(sympy.together(expr))
            found = self._poly_sign(num) * self._poly_sign(den)
            self._cache[expr] = found
            self.decided.append((expr, found))
        return found

    def _poly_sign(self, expr) -> int:
        poly = sympy.Poly(sympy.expand(expr), self.x)
        if poly.is_zero:
            return 0
        inside = [r for r in poly.real_roots() if self.lo < r < self.hi]
        if inside:
            rational = [r for r in inside if r.is_Rational]
            if rational:
                raise Split(min(rational))
            raise Undecided(f"{poly.as_expr()} changes sign at the irrational {inside[0]} "
                            f"inside ({self.lo}, {self.hi})")
        value = poly.eval(self.mid)
        return 1 if value > 0 else -1


@dataclass(frozen=True)
class Piece:
    """``fn``'s values on an open interval ``(lo, hi)``, or at the point ``lo == hi``.

    ``values`` maps each key of ``fn``'s result to a sympy expression in the symbol (a number
    on a point); ``conditions`` lists the signs decided on the piece, as text.
    """

    x: sympy.Symbol
    lo: sympy.Rational
    hi: sympy.Rational
    values: dict
    conditions: tuple

    @property
    def is_point(self) -> bool:
        return self.lo == self.hi

    def contains(self, value) -> bool:
        """Whether the rational ``value`` lies in the piece."""
        v = _rational(value)
        return v == self.lo if self.is_point else self.lo < v < self.hi

    def at(self, value) -> dict:
        """The values at a rational point of the piece."""
        if not self.contains(value):
            raise InvalidInput(f"{value} is not in the piece ({self.lo}, {self.hi})")
        v = _rational(value)
        return {key: (expr if isinstance(expr, bool) else sympy.sympify(expr).subs(self.x, v))
                for key, expr in self.values.items()}


def to_sympy(value) -> Any:
    """An exact value (``SymbolicValue``, ``Fraction``, int, bool, sympy) as sympy; a bool
    stays a bool, containers are converted element-wise."""
    if isinstance(value, bool):
        return value
    if isinstance(value, SymbolicValue):
        return sympy.cancel(sympy.together(value.expr))
    if isinstance(value, Fraction):
        return sympy.Rational(value.numerator, value.denominator)
    if isinstance(value, (list, tuple)):
        return type(value)(to_sympy(v) for v in value)
    if isinstance(value, dict):
        return {k: to_sympy(v) for k, v in value.items()}
    return sympy.sympify(value)


def piecewise(fn: Callable[[Any], dict], x: sympy.Symbol, lo, hi, *,
              max_pieces: int = 200) -> list[Piece]:
    """Run ``fn`` for every ``x`` in ``(lo, hi)``, exactly, one piece at a time.

    Parameters
    ----------
    fn : callable
        ``fn(v) -> dict``; ``v`` is a :class:`~.symbolic.SymbolicValue` of ``x`` on an open
        piece and a ``Fraction`` at a split point.  Its values (exact numbers, symbolic
        values, bools, or lists/dicts of them) are returned as sympy.  Everything that needs
        a sign must be computed inside ``fn`` (lazily evaluated properties included).
    x : sympy.Symbol
        The parameter.
    lo, hi : rational
        The open interval; its ends are not visited (call ``fn`` there yourself).
    max_pieces : int
        Refuse a run that splits into more pieces.

    Returns
    -------
    list of Piece
        In increasing order of ``x``: open intervals alternating with their split points.

    Raises
    ------
    Undecided
        A sign changes at an irrational point.
    """
    pending = [(_rational(lo), _rational(hi))]
    pieces: list[Piece] = []
    while pending:
        a, b = pending.pop()
        case = IntervalCase(x, a, b)
        split = None
        token = _symbolic.CURRENT.set(case)
        try:
            values = to_sympy(fn(SymbolicValue(x)))
        except Split as found:
            split = found.at
        finally:
            _symbolic.CURRENT.reset(token)
        if split is None:
            conditions = tuple(f"{e} {'<' if s < 0 else ('=' if s == 0 else '>')} 0"
                               for e, s in case.decided)
            pieces.append(Piece(x, a, b, values, conditions))
        else:
            pending += [(split, b), (a, split)]
            point = Fraction(int(split.p), int(split.q))
            pieces.append(Piece(x, split, split, to_sympy(fn(point)), ()))
        if len(pieces) > max_pieces:
            raise InvalidInput(f"more than {max_pieces} pieces: too many to list")
    pieces.sort(key=lambda pc: (pc.lo, pc.hi))
    return pieces
