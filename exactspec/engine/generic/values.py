"""The values a method sees in a vocabulary-generic run.

The labels of a vector (a distinguished :class:`Token`, the slot of a class of the rest,
:class:`ClassLabel`, a token drawn from a class, :class:`DrawnToken`), the entries under them
(a distinguished token's symbol, :class:`DistinguishedEntry`; a class's per-token expression,
:class:`ClassEntry`) and sums over tokens (:class:`PartialSum`), with the checks that keep
them inside the abstraction: every refusal is a :class:`NotGeneric`.  A value decides nothing
itself: it asks the case the run is in (:class:`RestCase`) for signs and aggregates, and a
sign that differs between the tokens of a class is a :class:`NeedClassSplit`.  Why the
aggregates suffice is argued in :mod:`exactspec.engine.generic`.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import sympy

from ...core.errors import InvalidInput
from ...core.signals import EngineSignal
from ..symbolic import CURRENT, NeedCase, SymbolicValue, InfeasibleCase, as_sympy

__all__ = ["NotGeneric", "NeedClassSplit", "RestCase", "Token", "ClassLabel", "DrawnToken",
           "ClassEntry", "DistinguishedEntry", "PartialSum", "PI", "KAPPA", "DRAWN", "TOKEN",
           "draw_index", "draw_symbols", "is_zero_constant", "plain"]

#: The per-token symbols of a class's entries: ``p_x`` and ``q_x`` of a generic token ``x``.
PI, KAPPA = sympy.symbols("pi_x kappa_x", nonnegative=True)
TOKEN = {PI, KAPPA}


class NotGeneric(InvalidInput):
    """The method did something the vocabulary-generic abstraction cannot follow soundly."""


class NeedClassSplit(EngineSignal):
    """Raised inside a run when a class must be split on the sign of a per-token form
    (:meth:`~.cases.GenericCase.class_sign`)."""

    def __init__(self, cls: ClassLabel, atom):
        super().__init__(f"need the sign of {atom} on class {cls.name}")
        self.cls = cls
        self.atom = atom


class RestCase:
    """What the values of a run consult: the case the run is in.

    Entries, drawn tokens and partial sums ask the current case (the one the context variable
    ``CURRENT`` of :mod:`exactspec.engine.symbolic` holds) for signs (``sign``,
    ``class_sign``), aggregates (``aggregates``), names of complete sums (``abbreviate``,
    ``full``) and records of signs against 0 (``zero_signs``).  The case is a
    :class:`~.cases.GenericCase`, the one subclass, declared here so that the values need not
    import the cases; outside such a case a class entry is refused (:class:`NotGeneric`).
    """

    __slots__ = ()


# -- tokens ---------------------------------------------------------------------------------
class Token(str):
    """A distinguished token's label; ``d[t]`` is its value as a plain symbolic number."""

    def value_at(self, dist):
        value = dist.probs[dist.index(self)]
        if isinstance(value, ClassEntry):
            raise NotGeneric(f"the entry of token {self} is a class entry")
        return SymbolicValue(as_sympy(value)) if not isinstance(value, (int, Fraction)) else value


class ClassLabel:
    """The slot of one class of the rest in a vector; ``d[c]`` is the class's entry."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def value_at(self, dist):
        return dist.probs[dist.index(self)]

    def __eq__(self, other):
        if isinstance(other, DrawnToken):
            raise NotGeneric(f"compares a token drawn from the rest with the whole class "
                             f"{self.name}")
        return isinstance(other, ClassLabel) and other.name == self.name

    def __hash__(self):
        return hash(("class", self.name))

    def __repr__(self):
        return f"rest[{self.name}]"

    __str__ = __repr__


class DrawnToken:
    """A token drawn from a class of the rest, with its own symbols ``p_x_i``, ``q_x_i``."""

    __slots__ = ("cls", "ident", "p_sym", "q_sym", "excluded")

    def __init__(self, cls: ClassLabel, ident: int):
        self.cls = cls
        self.ident = ident
        self.p_sym, self.q_sym = draw_symbols(ident)
        self.excluded: set = set()

    def value_at(self, dist):
        value = dist.probs[dist.index(self.cls)]
        if is_zero_constant(value):
            return Fraction(0)
        if not isinstance(value, ClassEntry) or value.owner != self.cls:
            raise NotGeneric(f"the entry of class {self.cls.name} is not a per-token expression "
                             f"({value!r}): the vector was not built elementwise")
        return SymbolicValue(value.expr.xreplace({PI: self.p_sym, KAPPA: self.q_sym}))

    def __eq__(self, other):
        if other is self:
            return True
        if isinstance(other, (DrawnToken, ClassLabel)):
            raise NotGeneric("tests whether two tokens drawn from the rest are the same token: "
                             "no aggregate of the rest decides that")
        return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        raise NotGeneric("uses a token drawn from the rest as a key (a set or a dict): "
                         "multiplicities of rest tokens are not determined by aggregates")

    def __repr__(self):
        return f"x{self.ident}[{self.cls.name}]"

    __str__ = __repr__


_DRAW_SYMBOLS: dict = {}


DRAWN: set = set()
_DRAW_INDEX: dict = {}


def draw_symbols(i: int):
    """The nonnegative symbols ``(p_xi, q_xi)`` of the ``i``-th drawn token, made once."""
    if i not in _DRAW_SYMBOLS:
        _DRAW_SYMBOLS[i] = sympy.symbols(f"p_x{i} q_x{i}", nonnegative=True)
        DRAWN.update(_DRAW_SYMBOLS[i])
        _DRAW_INDEX.update({sym: i for sym in _DRAW_SYMBOLS[i]})
    return _DRAW_SYMBOLS[i]


def is_zero_constant(value) -> bool:
    """Whether a class slot holds the constant 0 (every token of the class has value 0)."""
    if isinstance(value, (ClassEntry, PartialSum)):
        return False
    if isinstance(value, (int, Fraction)):
        return value == 0
    expr = getattr(value, "expr", value)
    return isinstance(expr, sympy.Basic) and expr.is_Number and expr == 0


def _known_nonneg(entry, sign) -> bool:
    """Whether ``sign * entry`` is already known to be >= 0 in the current case (no split)."""
    if sign < 0:
        return False
    case = _case()
    try:
        if isinstance(entry, ClassEntry):
            return case.class_sign(entry.owner, entry.expr) >= 0
        return case.sign(entry.expr) >= 0
    except (NeedCase, NeedClassSplit):
        return False


def _record_zero_sign(owner, value, sign: int, strict: bool):
    """Remember the last sign a token's (or a class's) entry was found to have against 0.

    ``value()`` is the entry summed over the owner (a class's aggregate, or the token's own
    value); ``strict`` says the sign is that of the value itself (a class entry's sign is the
    sign of every token of the class, so its aggregate has that sign or is 0 when the class is
    empty).  The records feed :meth:`~.cases.GenericCase.note_balance`; a record is a fact of
    the case whatever vector it came from, so a stale record can make the balance fail, never
    lie."""
    try:
        case = _case()
        case.zero_signs[owner] = (case.full(as_sympy(value())), sign, strict)
    except (NotGeneric, NeedCase, NeedClassSplit, InfeasibleCase):
        pass


def draw_index() -> dict:
    """The map from each drawn token's symbols to the index of its draw."""
    return _DRAW_INDEX


# -- values -----------------------------------------------------------------------------------
def _case() -> RestCase:
    case = CURRENT.get()
    if not isinstance(case, RestCase):
        raise NotGeneric("a class entry was used outside a vocabulary-generic run")
    return case


def plain(value):
    """A value used as a number: class entries refused, partial sums checked complete."""
    if isinstance(value, ClassEntry):
        raise NotGeneric(f"uses the entry of class {value.owner.name} (a vector of per-token "
                         "values) as a single number")
    if isinstance(value, PartialSum):
        return value.scalar()
    if isinstance(value, SymbolicValue):
        return SymbolicValue(value.expr)
    return value


@functools.lru_cache(maxsize=65536)
def _homogeneous_degree(expr):
    """The degree of ``expr`` in ``(pi_x, kappa_x)`` if it is homogeneous, else ``None``."""
    num, den = sympy.fraction(sympy.cancel(sympy.together(expr)))
    if num == 0:
        return None
    degrees = []
    for part in (num, den):
        poly = sympy.Poly(part, PI, KAPPA)
        total = {sum(m) for m in poly.monoms()}
        if len(total) != 1:
            return None
        degrees.append(total.pop())
    return degrees[0] - degrees[1]


def _aggregate(entry: "ClassEntry"):
    """``sum_{x in c} f(p_x, q_x)`` for a linear homogeneous ``f``: ``f(P_c, Q_c)``."""
    case = _case()
    key = (entry.owner.name, entry.expr)
    known = case._aggregates.get(key)
    if known is None:
        known = case._aggregates[key] = _aggregate_of(entry)
    return known


def _aggregate_of(entry: "ClassEntry"):
    expr = sympy.cancel(sympy.together(entry.expr))
    num, den = sympy.fraction(expr)
    if den.free_symbols & TOKEN:
        raise NotGeneric(f"sums {entry.expr} over the rest: not linear in the token's p and q, "
                         "so no aggregate of the rest determines the sum")
    if num != 0:
        poly = sympy.Poly(num, PI, KAPPA)
        if any(sum(m) != 1 for m in poly.monoms()):
            raise NotGeneric(f"sums {entry.expr} over the rest: not linear in the token's p "
                             "and q, so no aggregate of the rest determines the sum")
    P, Q = _case().aggregates(entry.owner)
    return expr.xreplace({PI: P, KAPPA: Q})


class ClassEntry(SymbolicValue):
    """The entry of a class in a vector: a per-token expression in ``pi_x``, ``kappa_x``."""

    __slots__ = ("owner",)
    is_generic_entry = True

    def __init__(self, owner: ClassLabel, expr):
        self.owner = owner
        self.expr = sympy.sympify(expr)

    def _same(self, other):
        return isinstance(other, ClassEntry) and other.owner == self.owner

    def _entry(self, expr):
        return ClassEntry(self.owner, expr)

    def _add(self, other, sign):
        if self._same(other):
            return self._entry(self.expr + sign * other.expr)
        if isinstance(other, (ClassEntry, DistinguishedEntry, PartialSum)):
            return PartialSum.of(self, 1).combine(other, sign)
        value = as_sympy(other)
        if value == 0:
            # ``0 + entry`` starts a sum (``sum()`` starts from 0, and ``max(., 0)`` leaves
            # plain zeros in vectors): read as a sum over tokens, never as an entry
            return PartialSum.of(self, 1)
        if _homogeneous_degree(self.expr) == 0:
            return self._entry(self.expr + sign * value)
        raise NotGeneric(f"adds the number {value} to the per-token value {self.expr} of the "
                         "rest: neither a sum over tokens nor a scale-free per-token rule")

    def __add__(self, o): return self._add(o, 1)
    def __radd__(self, o): return self._add(o, 1)
    def __sub__(self, o): return self._add(o, -1)
    def __rsub__(self, o):
        if not isinstance(o, (ClassEntry, DistinguishedEntry, PartialSum)) and as_sympy(o) == 0:
            # ``0 - entry`` is elementwise (``r - q`` where ``max(., 0)`` left a plain 0 in
            # ``r``); a running sum ``0 - a - b`` still becomes a sum at its second term
            return -self
        return (-self)._add(o, 1)

    def __neg__(self): return self._entry(-self.expr)
    def __pos__(self): return self

    def _factor(self, other, what):
        if self._same(other):
            return other.expr
        if isinstance(other, (ClassEntry, DistinguishedEntry)):
            raise NotGeneric(f"{what} the per-token values of two different tokens")
        return as_sympy(plain(other))

    def __mul__(self, o): return self._entry(self.expr * self._factor(o, "multiplies"))
    def __rmul__(self, o): return self.__mul__(o)

    def __truediv__(self, o):
        d = self._factor(o, "divides")
        if (_case().class_sign(self.owner, d) if d.free_symbols & TOKEN else
                _case().sign(d)) == 0:
            raise ZeroDivisionError(f"division by {d}, which is 0 in this case")
        return self._entry(self.expr / d)

    def __rtruediv__(self, o):
        if _case().class_sign(self.owner, self.expr) == 0:
            raise ZeroDivisionError(f"division by {self.expr}, which is 0 in this case")
        return self._entry(self._factor(o, "divides") / self.expr)

    def __pow__(self, n): return self._entry(self.expr ** as_sympy(n))

    def __abs__(self):
        return self if self._cmp(0) >= 0 else -self

    def _cmp(self, other) -> int:
        if self._same(other):
            diff = self.expr - other.expr
        elif isinstance(other, (ClassEntry, DistinguishedEntry, PartialSum)):
            raise NotGeneric(f"compares the per-token value {self.expr} of the rest with "
                             "another token's value")
        else:
            diff = self.expr - as_sympy(plain(other))
        sign = _case().class_sign(self.owner, diff)
        if diff is self.expr or diff == self.expr:
            _record_zero_sign(self.owner, lambda: _aggregate(self), sign, strict=False)
        return sign

    def __lt__(self, o): return self._cmp(o) < 0
    def __le__(self, o): return self._cmp(o) <= 0
    def __gt__(self, o): return self._cmp(o) > 0
    def __ge__(self, o): return self._cmp(o) >= 0

    def __eq__(self, o):
        if not isinstance(o, (SymbolicValue, int, Fraction, sympy.Basic)):
            return NotImplemented
        return self._cmp(o) == 0

    def __ne__(self, o):
        result = self.__eq__(o)
        return result if result is NotImplemented else not result

    def __bool__(self):
        return self._cmp(0) != 0

    def __hash__(self):
        return hash(("entry", self.owner, self.expr))

    def __float__(self):
        raise NotGeneric("converts a class entry of the rest to a float")

    def __repr__(self):
        return f"ClassEntry({self.owner.name}: {self.expr})"


class DistinguishedEntry(SymbolicValue):
    """A distinguished token's entry in a vector: a number, tagged with its token so that
    adding it to other tokens' entries is recognised as a sum over tokens."""

    __slots__ = ("owner",)

    def __init__(self, owner: Token, expr):
        self.owner = owner
        self.expr = as_sympy(expr)

    def _add(self, other, sign):
        if isinstance(other, DistinguishedEntry) and other.owner == self.owner:
            return DistinguishedEntry(self.owner, self.expr + sign * other.expr)
        if isinstance(other, (ClassEntry, DistinguishedEntry, PartialSum)):
            return PartialSum.of(self, 1).combine(other, sign)
        value = as_sympy(plain(other))
        if value == 0:
            return PartialSum.of(self, 1)          # the start of a sum (see ClassEntry)
        return DistinguishedEntry(self.owner, self.expr + sign * value)

    def __add__(self, o): return self._add(o, 1)
    def __radd__(self, o): return self._add(o, 1)
    def __sub__(self, o): return self._add(o, -1)
    def __rsub__(self, o): return (-self)._add(o, 1)
    def __neg__(self): return DistinguishedEntry(self.owner, -self.expr)

    def __abs__(self):
        return self if SymbolicValue(self.expr) >= 0 else -self

    def _factor(self, other):
        if isinstance(other, ClassEntry):
            raise NotGeneric("multiplies a distinguished token's value by a class entry")
        if isinstance(other, DistinguishedEntry) and other.owner != self.owner:
            return None
        return as_sympy(plain(other)) if not isinstance(other, DistinguishedEntry) else other.expr

    def __mul__(self, o):
        f = self._factor(o)
        return SymbolicValue(self.expr * o.expr) if f is None else \
            DistinguishedEntry(self.owner, self.expr * f)

    def __rmul__(self, o): return self.__mul__(o)

    def __truediv__(self, o):
        f = self._factor(o)
        if f is None:
            return SymbolicValue(self.expr) / SymbolicValue(o.expr)
        if _case().sign(f) == 0:
            raise ZeroDivisionError(f"division by {f}, which is 0 in this case")
        return DistinguishedEntry(self.owner, self.expr / f)

    def __rtruediv__(self, o):
        if isinstance(o, ClassEntry):
            return o.__truediv__(self)
        return plain(o) / SymbolicValue(self.expr)

    def _check(self, o):
        if isinstance(o, ClassEntry):
            raise NotGeneric("compares a distinguished token's value with a class entry")
        return plain(o)

    def _zero(self, o, result):
        if as_sympy(plain(o)) == 0 if not isinstance(o, ClassEntry) else False:
            _record_zero_sign(self.owner, lambda: self.expr, _case().sign(self.expr), True)
        return result

    def __lt__(self, o): return self._zero(o, SymbolicValue(self.expr) < self._check(o))
    def __le__(self, o): return self._zero(o, SymbolicValue(self.expr) <= self._check(o))
    def __gt__(self, o): return self._zero(o, SymbolicValue(self.expr) > self._check(o))
    def __ge__(self, o): return self._zero(o, SymbolicValue(self.expr) >= self._check(o))

    def __eq__(self, o):
        if not isinstance(o, (SymbolicValue, int, Fraction, sympy.Basic)):
            return NotImplemented
        return SymbolicValue(self.expr) == self._check(o)

    def __ne__(self, o):
        result = self.__eq__(o)
        return result if result is NotImplemented else not result

    def __hash__(self):
        return hash(self.expr)


class PartialSum(SymbolicValue):
    """A sum of entries of several tokens; usable as a number once it covers every class of
    the rest (or none)."""

    __slots__ = ("owners", "nonneg")

    def __init__(self, owners: frozenset, expr, nonneg: bool = False):
        self.owners = owners
        self.expr = expr
        self.nonneg = nonneg

    @classmethod
    def of(cls, entry, sign):
        value = _aggregate(entry) if isinstance(entry, ClassEntry) else entry.expr
        return cls(frozenset([entry.owner]), sign * value, _known_nonneg(entry, sign))

    def combine(self, other, sign):
        if isinstance(other, PartialSum):
            owners, value = other.owners, other.expr
        elif isinstance(other, (ClassEntry, DistinguishedEntry)):
            owners = frozenset([other.owner])
            value = _aggregate(other) if isinstance(other, ClassEntry) else other.expr
        elif isinstance(other, (int, Fraction)) and other == 0:
            return self          # a zero entry (max(., 0) gave the number 0): nothing to add
        else:
            return self.scalar() + sign * plain(other)
        if owners & self.owners:
            raise NotGeneric("adds a token's entry to a sum that already holds it")
        nonneg = self.nonneg and (other.nonneg if isinstance(other, PartialSum) else
                                  _known_nonneg(other, sign))
        return PartialSum(self.owners | owners, self.expr + sign * value, nonneg)

    def scalar(self) -> SymbolicValue:
        # A sum that skips some classes is either one whose skipped entries were the number 0
        # (max(., 0) returns the method's own 0) or a sum over part of the rest (a prefix in
        # token order).  The second kind is caught by the order check in prove_generic: the
        # case is run again with its classes in reverse order and must give the same laws.
        return SymbolicValue(_case().abbreviate(self))

    def __add__(self, o): return self.combine(o, 1)
    def __radd__(self, o): return self.combine(o, 1)
    def __sub__(self, o): return self.combine(o, -1)

    def __rsub__(self, o):
        return PartialSum(self.owners, -self.expr).combine(o, 1)

    def __neg__(self): return PartialSum(self.owners, -self.expr)
    def __mul__(self, o): return self.scalar() * plain(o) if not isinstance(o, ClassEntry) \
        else o * self.scalar()
    def __rmul__(self, o): return self.__mul__(o)
    def __truediv__(self, o): return self.scalar() / plain(o)

    def __rtruediv__(self, o):
        if isinstance(o, (ClassEntry, DistinguishedEntry)):
            return o / self.scalar()
        return plain(o) / self.scalar()

    def __pow__(self, n): return self.scalar() ** n

    def _zero(self, o, result):
        if len(self.owners) == 1 and not isinstance(o, ClassEntry) and as_sympy(plain(o)) == 0:
            (owner,) = self.owners
            _record_zero_sign(owner, lambda: self.expr, _case().sign(self.expr), True)
        return result

    def __lt__(self, o): return self._zero(o, self.scalar() < plain(o))
    def __le__(self, o): return self._zero(o, self.scalar() <= plain(o))
    def __gt__(self, o): return self._zero(o, self.scalar() > plain(o))
    def __ge__(self, o): return self._zero(o, self.scalar() >= plain(o))

    def __eq__(self, o):
        if not isinstance(o, (SymbolicValue, int, Fraction, sympy.Basic)):
            return NotImplemented
        return self.scalar() == plain(o)

    def __ne__(self, o):
        result = self.__eq__(o)
        return result if result is NotImplemented else not result

    def __bool__(self):
        return bool(self.scalar())

    def __hash__(self):
        return hash(self.expr)

