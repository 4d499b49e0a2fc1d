"""The vocabulary-generic interpreter: one run of a method decides ``law(t) = p(t)`` for every
vocabulary size at once.

The vocabulary is a few *distinguished* tokens ``t`` (symbols ``p_t``, ``q_t``) and *the
rest*, an unknown number of further tokens.  The rest is never listed: it is cut into
*classes*, and a class is seen only through its aggregates ``P_c = sum_{x in c} p_x`` and
``Q_c = sum_{x in c} q_x``.  A class is defined by *class facts*: signs of forms
``a p_x + b q_x`` that hold for every token ``x`` of the class, where ``a``, ``b`` may involve
the aggregates (for example ``p_x - q_x > 0``, or ``p_x - q_x - S q_x < 0`` with ``S`` the
residual normaliser).  A case of the proof fixes the classes (each non-empty), their facts, and
the signs of the aggregate quantities the method compared.  When the method needs the sign of a
new form on a class, the class is split into the sub-classes where it is ``<``, ``=``, ``>``
(each of the seven non-empty combinations is a case) and the method is run again from the
start, as in :mod:`.symbolic`.

**Why the aggregates suffice (the soundness argument).**  Inside a class every per-token
comparison has the same outcome for every token, so the method takes the same branches for all
of them.  A path's weight is a product of branch probabilities; for each token ``x`` drawn from
the rest on that path, the engine requires the weight to be *linear and homogeneous* in
``(p_x, q_x)`` (``a p_x + b q_x``, with ``a``, ``b`` free of ``x``).  Then the sum of the weight
over all tokens of the class is the same expression at ``(P_c, Q_c)``, and over several draws
the sums factor because the weight is multilinear.  A class fact ``a p_x + b q_x > 0`` for every
token gives ``a P_c + b Q_c > 0`` for the class, and conversely any aggregates satisfying the
facts are realised by a single token (or by any number of proportional tokens), so every point
of a case is a real vocabulary: a refutation at a case's witness is a real counterexample, and
a case's closed form is exact for every vocabulary that falls in it.  Tokens with
``p_x = q_x = 0`` contribute nothing to any homogeneous quantity and are ignored.

**What the method may do, and what the engine checks.**  The method runs unchanged, against
the sampler ``s`` and :class:`~exactspec.core.dist.Dist` objects, but the values it sees are
instrumented:

- a distinguished token's entry is a symbol; any arithmetic and comparison on it is allowed;
- a class's entry in a vector (``p.probs``) is a :class:`ClassEntry`: the per-token expression
  of that class.  Entries of the same class combine elementwise; multiplying or dividing by a
  number is elementwise; adding entries of *different* tokens is a sum over tokens
  (:class:`PartialSum`), which needs the per-token expression to be linear and homogeneous;
  a partial sum is usable as a number only once it covers every class of the rest (sums over
  a subset of the rest, such as prefix sums in token order, are refused); comparing a class
  entry with another token's value, with a number when the entry is not scale-free, or using
  it as a number is refused;
- ``x[d]`` for a token ``d`` drawn from the rest (a :class:`DrawnToken`) is that token's own
  value, a symbol pair per draw; a comparison that mixes two drawn tokens, a comparison whose
  sign is not decided by linear homogeneous forms in the token's ``(p_x, q_x)``, a path weight
  that is not multilinear in the drawn tokens, testing two drawn tokens for equality, hashing a
  drawn token, drafting without replacement, explicit uniforms and inverse-CDF picks (which
  depend on the token order), and a method that returns a whole class are all refused with
  :class:`NotGeneric`;
- each case checks that its paths' weights add up to exactly 1.

**Identities used beyond the linear programme.**  A normaliser built after two rejections,
``sum_x (r_x - q_x)^+``, is a nonlinear expression of the aggregates, so the exact LP alone
cannot exclude its sign 0.  The *balance identity* does: when every token's entry ``d_x`` was
compared with 0 (as ``max(d, 0)`` does) and the entries sum to 0 over the vocabulary (checked
symbolically; true whenever ``d = a - b`` for two distributions), the positive-part sum equals
``sum_x (-d_x)^+``, so it is ``>= 0``, and ``> 0`` when some entry is strictly negative
(:meth:`GenericCase.note_balance`).  Leaves pruned this way carry the identity in the
certificate, and :mod:`exactspec.generic_checker` re-checks its algebra.  Equalities that are
nonlinear in the aggregates (a class where ``r_x = q_x``) reduce a case's law and path total
through a Groebner basis (:func:`_vanishes`): a numerator in the ideal of the case's
equalities is 0 in the case.  When a case has already fixed the sign of such a sum (an earlier
split) and the balance excludes it, the case is empty (an infeasible leaf carrying the
balance).  A variable the case fixes to 0 (``q_t = 0``) is substituted into the nonlinear
facts and atoms, which may then be linear and decided by the LP (the checker does the same).

**Keeping the algebra small (and what that changes in the certificate).**  A complete sum used
as a number (a normaliser ``S = sum_x (r_x - q_x)^+``) is named by a case-local symbol
(:meth:`GenericCase.abbreviate`), so the method's later arithmetic stays in terms of ``S``
rather than an expanded quotient of the aggregates.  A name never decides anything: every sign
is taken, and every record, fact and certificate entry written, after :meth:`GenericCase.full`
has put the sums back.  A case's ``law - target`` (and acceptance, and path total) is tested
for zero by :func:`_zero_on_case`: in a polynomial ring, the names are eliminated one by one
(``b^d num`` with ``S = a / b``, ``b != 0``), the case's linear equalities substituted and the
nonlinear ones reduced away; a zero answer is a proof.  A value shown equal to its target is
then *reported as* the target (``law(t) = p_t``); the certificate also records the path sums
as the run built them, with the named sums' definitions, and the sympy checker re-derives each
identity from those by plain substitution and a common denominator (slower, independent of the
elimination), besides checking the case tree, the infeasible leaves and, at each witness, that
exact enumeration of the method's paths equals the closed form.  RRS with ``k = 2`` (12 cases,
27 infeasible leaves) is proved this way in under a minute.

Sums over part of the rest (a prefix in slot order) are caught by an order check: every case
with several classes is run a second time with its classes in reverse order and must give the
same law.  Not intercepted, and therefore covered by the cross-checks instead: a method that
uses the number of slots (``len(p)``) or a label's position as a number.  The cross-checks evaluate the
generic closed form on concrete instances of several sizes (with the distinguished token at
different positions) and compare with exact enumeration (:meth:`GenericProof.law_at`).

With one distinguished token ``t`` and the rest being every other token, ``law(t) = p(t)`` in
every case proves the method lossless for every vocabulary size and every ``p``, ``q`` (zeros
allowed): any token of any vocabulary can play ``t``.

>>> from exactspec.methods.naive import naive
>>> proof = prove_generic(naive)        # keeps the draft: law q_t at every token
>>> proof.verdict, proof.outside
('refuted', None)

(The one-draft rule's proof, ``prove_generic(sps)``, takes a few seconds; it runs in
``exactspec prove lossless-rule``; RRS with two drafts, ``prove_generic(rrs, 2)``, about 35 s
of CPU, in ``exactspec prove rrs-every-size``; both in ``tests/test_generic.py``.)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable

import sympy

from ..core.errors import InvalidInput, NotExact
from ..core.signals import EngineSignal
from .driver import depth_first
from .exact import ExactSampler, enumerate_paths
from .symbolic import (_CURRENT, Case, NeedCase, SymbolicValue, _Infeasible, _canonical,
                       _factor_list,
                       _equality_solution, _num_sign, _reduce, _sym, overall_verdict)

__all__ = ["NotGeneric", "Token", "ClassLabel", "DrawnToken", "ClassEntry", "DistinguishedEntry",
           "PartialSum", "GenericCase", "GenericCaseResult", "GenericProof", "prove_generic",
           "PI", "KAPPA", "certificate_law_at"]

#: The per-token symbols of a class's entries: ``p_x`` and ``q_x`` of a generic token ``x``.
PI, KAPPA = sympy.symbols("pi_x kappa_x", nonnegative=True)
_TOKEN = {PI, KAPPA}
_MARK = {-1: "m", 0: "z", 1: "p"}


class NotGeneric(InvalidInput):
    """The method did something the vocabulary-generic abstraction cannot follow soundly."""


# -- tokens ---------------------------------------------------------------------------------
class Token(str):
    """A distinguished token's label; ``d[t]`` is its value as a plain symbolic number."""

    def value_at(self, dist):
        value = dist.probs[dist.index(self)]
        if isinstance(value, ClassEntry):
            raise NotGeneric(f"the entry of token {self} is a class entry")
        return SymbolicValue(_sym(value)) if not isinstance(value, (int, Fraction)) else value


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
        self.p_sym, self.q_sym = _draw_symbols(ident)
        self.excluded: set = set()

    def value_at(self, dist):
        value = dist.probs[dist.index(self.cls)]
        if _is_zero_constant(value):
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


_DRAWN: set = set()
_DRAW_INDEX: dict = {}


def _draw_symbols(i: int):
    if i not in _DRAW_SYMBOLS:
        _DRAW_SYMBOLS[i] = sympy.symbols(f"p_x{i} q_x{i}", nonnegative=True)
        _DRAWN.update(_DRAW_SYMBOLS[i])
        _DRAW_INDEX.update({sym: i for sym in _DRAW_SYMBOLS[i]})
    return _DRAW_SYMBOLS[i]


def _is_zero_constant(value) -> bool:
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
    empty).  The records feed :meth:`GenericCase.note_balance`; a record is a fact of the case
    whatever vector it came from, so a stale record can make the balance fail, never lie."""
    try:
        case = _case()
        case.zero_signs[owner] = (case.full(_sym(value())), sign, strict)
    except (NotGeneric, NeedCase, NeedClassSplit, _Infeasible):
        pass


def _draw_index() -> dict:
    return _DRAW_INDEX


# -- values -----------------------------------------------------------------------------------
def _case() -> "GenericCase":
    case = _CURRENT.get()
    if not isinstance(case, GenericCase):
        raise NotGeneric("a class entry was used outside a vocabulary-generic run")
    return case


def _plain(value):
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
    if den.free_symbols & _TOKEN:
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
        value = _sym(other)
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
        if not isinstance(o, (ClassEntry, DistinguishedEntry, PartialSum)) and _sym(o) == 0:
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
        return _sym(_plain(other))

    def __mul__(self, o): return self._entry(self.expr * self._factor(o, "multiplies"))
    def __rmul__(self, o): return self.__mul__(o)

    def __truediv__(self, o):
        d = self._factor(o, "divides")
        if (_case().class_sign(self.owner, d) if d.free_symbols & _TOKEN else
                _case().sign(d)) == 0:
            raise ZeroDivisionError(f"division by {d}, which is 0 in this case")
        return self._entry(self.expr / d)

    def __rtruediv__(self, o):
        if _case().class_sign(self.owner, self.expr) == 0:
            raise ZeroDivisionError(f"division by {self.expr}, which is 0 in this case")
        return self._entry(self._factor(o, "divides") / self.expr)

    def __pow__(self, n): return self._entry(self.expr ** _sym(n))

    def __abs__(self):
        return self if self._cmp(0) >= 0 else -self

    def _cmp(self, other) -> int:
        if self._same(other):
            diff = self.expr - other.expr
        elif isinstance(other, (ClassEntry, DistinguishedEntry, PartialSum)):
            raise NotGeneric(f"compares the per-token value {self.expr} of the rest with "
                             "another token's value")
        else:
            diff = self.expr - _sym(_plain(other))
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
        self.expr = _sym(expr)

    def _add(self, other, sign):
        if isinstance(other, DistinguishedEntry) and other.owner == self.owner:
            return DistinguishedEntry(self.owner, self.expr + sign * other.expr)
        if isinstance(other, (ClassEntry, DistinguishedEntry, PartialSum)):
            return PartialSum.of(self, 1).combine(other, sign)
        value = _sym(_plain(other))
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
        return _sym(_plain(other)) if not isinstance(other, DistinguishedEntry) else other.expr

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
        return _plain(o) / SymbolicValue(self.expr)

    def _check(self, o):
        if isinstance(o, ClassEntry):
            raise NotGeneric("compares a distinguished token's value with a class entry")
        return _plain(o)

    def _zero(self, o, result):
        if _sym(_plain(o)) == 0 if not isinstance(o, ClassEntry) else False:
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
            return self.scalar() + sign * _plain(other)
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
    def __mul__(self, o): return self.scalar() * _plain(o) if not isinstance(o, ClassEntry) \
        else o * self.scalar()
    def __rmul__(self, o): return self.__mul__(o)
    def __truediv__(self, o): return self.scalar() / _plain(o)

    def __rtruediv__(self, o):
        if isinstance(o, (ClassEntry, DistinguishedEntry)):
            return o / self.scalar()
        return _plain(o) / self.scalar()

    def __pow__(self, n): return self.scalar() ** n

    def _zero(self, o, result):
        if len(self.owners) == 1 and not isinstance(o, ClassEntry) and _sym(_plain(o)) == 0:
            (owner,) = self.owners
            _record_zero_sign(owner, lambda: self.expr, _case().sign(self.expr), True)
        return result

    def __lt__(self, o): return self._zero(o, self.scalar() < _plain(o))
    def __le__(self, o): return self._zero(o, self.scalar() <= _plain(o))
    def __gt__(self, o): return self._zero(o, self.scalar() > _plain(o))
    def __ge__(self, o): return self._zero(o, self.scalar() >= _plain(o))

    def __eq__(self, o):
        if not isinstance(o, (SymbolicValue, int, Fraction, sympy.Basic)):
            return NotImplemented
        return self.scalar() == _plain(o)

    def __ne__(self, o):
        result = self.__eq__(o)
        return result if result is NotImplemented else not result

    def __bool__(self):
        return bool(self.scalar())

    def __hash__(self):
        return hash(self.expr)


# -- cases ------------------------------------------------------------------------------------
class NeedClassSplit(EngineSignal):
    """Raised inside a run when a class must be split on the sign of a per-token form."""

    def __init__(self, cls: ClassLabel, atom):
        super().__init__(f"need the sign of {atom} on class {cls.name}")
        self.cls = cls
        self.atom = atom


def _agg_symbols(name: str):
    return sympy.symbols(f"P_{name} Q_{name}", nonnegative=True)


_FEASIBLE: dict = {}


class _CachedCase(Case):
    """A :class:`~.symbolic.Case` with non-strict facts ``expr >= 0`` (``nonstrict``) and
    exact LP answers remembered across reruns.  ``known`` maps atoms to a sign they cannot
    have the opposite of: sums of terms each known >= 0 (a residual's normaliser)."""

    nonstrict: tuple = ()
    known: dict = None
    strict_known: dict = None

    def _zeros(self) -> dict:
        """The variables the case fixes to 0 (``q_t = 0``): substituted into nonlinear facts
        and atoms, which may then be linear (``q_t (..) - p_t`` becomes ``-p_t``)."""
        return {a: 0 for a, s in self.facts.items() if s == 0 and a.is_Symbol}

    def _reduced(self, expr):
        zeros = self._zeros()
        if not zeros or self._is_linear(expr) or not expr.free_symbols & zeros.keys():
            return None
        return sympy.expand(expr.xreplace(zeros))

    def _atom_sign(self, atom) -> int:
        if atom not in self.facts and atom not in self.deduced:
            reduced = self._reduced(atom)
            if reduced is not None and (reduced.is_Number or self._is_linear(reduced)):
                if reduced.is_Number:
                    sign = _num_sign(reduced)
                else:
                    inner, t = _canonical(reduced)
                    sign = t * self._atom_sign(inner)
                self.deduced[atom] = sign
                return sign
        try:
            return super()._atom_sign(atom)
        except NeedCase as need:
            exact = (self.strict_known or {}).get(atom)
            if exact is not None:
                if exact not in need.signs:
                    raise _Infeasible() from None
                self.deduced[atom] = exact
                return exact
            bound = (self.known or {}).get(atom)
            if bound is None:
                raise
            signs = [x for x in need.signs if x * bound >= 0]
            if not signs:
                raise _Infeasible() from None
            if len(signs) == 1:
                self.deduced[atom] = signs[0]
                return signs[0]
            raise NeedCase(atom, signs) from None

    def _key(self, extra):
        linear = tuple(sorted((str(a), s) for a, s in self.facts.items()))
        return (self.variables, self.base_equalities, linear, tuple(map(str, self.nonstrict)),
                extra)

    def _rows(self, extra=()):
        eq, lb = super()._rows(extra)
        from .symbolic import _linear_row
        for expr in self.nonstrict:
            if self._is_linear(expr):
                coeffs, const = _linear_row(expr, self.variables)
                lb.append((list(coeffs) + [Fraction(0)], -const))
        for atom, s in self.facts.items():
            reduced = self._reduced(atom)
            if reduced is None:
                continue
            if reduced.is_Number:
                if _num_sign(reduced) != s:          # a contradiction: 0 = 1
                    eq.append(([Fraction(0)] * (len(self.variables) + 1), Fraction(1)))
                continue
            if self._is_linear(reduced):
                coeffs, const = _linear_row(reduced, self.variables)
                if s == 0:
                    eq.append((list(coeffs) + [Fraction(0)], -const))
                else:
                    coeffs, const = _linear_row(sympy.expand(s * reduced), self.variables)
                    lb.append((list(coeffs) + [Fraction(-1)], -const))
        return eq, lb

    def _holds_at(self, values) -> bool:
        return super()._holds_at(values) and all(
            e.xreplace(values) >= 0 for e in self.nonstrict)

    def feasible_with(self, atom=None, s=None) -> bool:
        key = self._key(None if atom is None else (str(atom), s))
        if key not in _FEASIBLE:
            _FEASIBLE[key] = super().feasible_with(atom, s)
        return _FEASIBLE[key]


@dataclass
class GenericCase:
    """Distinguished tokens, classes of the rest with their facts, and aggregate facts.

    ``classes`` is a tuple of ``(name, ((atom, sign), ...))``: every token of the class has
    ``sign(atom(p_x, q_x)) = sign``.  ``agg_facts`` maps aggregate atoms to signs.  ``path``
    records the splits that led here (for the certificate and :meth:`GenericProof.law_at`).
    """

    names: tuple
    classes: tuple
    agg_facts: dict = field(default_factory=dict)
    path: tuple = ()
    nonempty: frozenset = frozenset()

    def __post_init__(self):
        self.class_labels = tuple(ClassLabel(name) for name, _ in self.classes)
        self._facts = {name: dict(facts) for name, facts in self.classes}
        ps = [sympy.Symbol(f"p_{t}", nonnegative=True) for t in self.names]
        qs = [sympy.Symbol(f"q_{t}", nonnegative=True) for t in self.names]
        self.token_symbols = {t: (a, b) for t, a, b in zip(self.names, ps, qs)}
        self.class_symbols = {name: _agg_symbols(name) for name, _ in self.classes}
        variables = tuple(ps + qs) + tuple(s for name, _ in self.classes
                                           for s in self.class_symbols[name])
        all_p = ps + [self.class_symbols[n][0] for n, _ in self.classes]
        all_q = qs + [self.class_symbols[n][1] for n, _ in self.classes]
        equalities = (sum(all_p) - 1, sum(all_q) - 1)
        self.inner = _CachedCase(variables, equalities, frozenset())
        derived, nonstrict = self.derived_facts()
        for atom, s in derived.items():
            self.inner.facts[atom] = s
        self.inner.nonstrict = tuple(nonstrict)
        self.inner.known = {}
        self.inner.strict_known = {}
        self.zero_signs: dict = {}
        self.abbreviations: dict = {}     # symbol -> the complete sum it names (no symbols)
        self.definitions: dict = {}       # symbol -> the sum as built (earlier symbols kept)
        self._named: dict = {}            # the complete sum -> its symbol
        self._noted: set = set()
        self._signs: dict = {}
        self._class_signs: dict = {}
        self._aggregates: dict = {}
        self._weights: dict = {}
        self.balances: list = []
        self._balance_seen: set = set()
        for atom, s in self.agg_facts.items():
            self.inner.facts[atom] = s
        self.draw_class: dict = {}

    # -- facts -----------------------------------------------------------------------------
    def aggregates(self, cls: ClassLabel):
        return self.class_symbols[cls.name]

    def derived_facts(self):
        """Each class fact summed over the class (which may be empty): an equality stays an
        equality, a strict sign becomes a non-strict one (``s * form(P_c, Q_c) >= 0``)."""
        facts, nonstrict = {}, []
        for name, class_facts in self.classes:
            P, Q = self.class_symbols[name]
            strict = name in self.nonempty
            if strict:
                facts[_canonical(P + Q)[0]] = 1
            for form, sign in class_facts:
                value = sympy.expand(form.xreplace({PI: P, KAPPA: Q}))
                if value.is_Number:
                    continue
                if sign == 0 or strict:
                    atom, t = _canonical(value)
                    facts[atom] = t * sign
                elif sign == 0:
                    atom, _ = _canonical(value)
                    facts[atom] = 0
                else:
                    nonstrict.append(sympy.expand(sign * value))
        return facts, nonstrict

    def realised(self, point) -> bool:
        """Whether a point of the aggregates is a real vocabulary: each class empty
        (``P_c = Q_c = 0``) or holding every class fact strictly at ``(P_c, Q_c)``."""
        for name, class_facts in self.classes:
            P, Q = self.class_symbols[name]
            values = (point[P], point[Q])
            if values == (0, 0):
                if name in self.nonempty:
                    return False
                continue
            for form, sign in class_facts:
                v = form.xreplace({PI: values[0], KAPPA: values[1]}).xreplace(point)
                if _num_sign(v) != sign:
                    return False
        return True

    def conditions(self) -> list[str]:
        rel = {-1: "<", 0: "=", 1: ">"}
        lines = [f"{a} {rel[s]} 0" for a, s in sorted(self.agg_facts.items(),
                                                      key=lambda t: str(t[0]))]
        for name, facts in self.classes:
            body = ", ".join(f"{f} {rel[s]} 0" for f, s in facts) or "no condition"
            lines.append(f"class {name}: every x has {body} (x = (pi_x, kappa_x))")
        return lines

    def with_fact(self, atom, s) -> "GenericCase":
        facts = dict(self.agg_facts)
        facts[atom] = s
        return GenericCase(self.names, self.classes, facts,
                           self.path + (("aggregate", atom, s),), self.nonempty)

    def with_emptiness(self, name: str, empty: bool) -> "GenericCase":
        """Class ``name`` declared empty (and dropped) or non-empty."""
        step = self.path + (("empty", name, empty),)
        if not empty:
            return GenericCase(self.names, self.classes, dict(self.agg_facts), step,
                               self.nonempty | {name})
        P, Q = self.class_symbols[name]
        classes = self._rewrite_classes(tuple(c for c in self.classes if c[0] != name),
                                        {P: 0, Q: 0})
        return GenericCase(self.names, classes, self._rewrite_agg_facts({P: 0, Q: 0}), step,
                           self.nonempty)

    def _rewrite_agg_facts(self, substitution) -> dict:
        """Aggregate facts with the aggregates of a replaced class substituted (a fact that
        becomes a number must keep its sign, or the case is infeasible)."""
        facts = {}
        for a, s in self.agg_facts.items():
            value = sympy.expand(a.xreplace(substitution))
            if value.is_Number:
                if _num_sign(value) != s:
                    raise _Infeasible()
                continue
            b, t = _canonical(value)
            facts[b] = s * t
        return facts

    def _rewrite_classes(self, classes, substitution):
        """Class facts with the aggregates of a replaced class substituted."""
        out = []
        for cname, facts in classes:
            new = []
            for form, s in facts:
                value = sympy.expand(form.xreplace(substitution))
                if not value.free_symbols & _TOKEN:
                    if value.is_Number and _num_sign(value) != s:
                        raise _Infeasible()
                    if not value.is_Number:
                        raise NotGeneric(f"a class fact lost its token: {value}")
                    continue
                b, t = _canonical(value)
                new.append((b, s * t))
            out.append((cname, tuple(new)))
        return tuple(out)

    def split(self, name: str, atom, signs) -> "GenericCase":
        """Class ``name`` replaced by one sub-class per sign in ``signs`` (each possibly
        empty; ``signs`` are all the signs a token of the class can give ``atom``)."""
        classes = []
        new = []
        for cname, facts in self.classes:
            if cname != name:
                classes.append((cname, facts))
                continue
            for s in signs:
                sub = f"{name}{_MARK[s]}"
                classes.append((sub, facts + ((atom, s),)))
                new.append(sub)
        P, Q = self.class_symbols[name]
        sums = {P: sum(_agg_symbols(n)[0] for n in new), Q: sum(_agg_symbols(n)[1] for n in new)}
        classes = self._rewrite_classes(classes, sums)
        return GenericCase(self.names, tuple(classes), self._rewrite_agg_facts(sums),
                           self.path + (("class", name, atom, tuple(signs)),),
                           self.nonempty - {name})

    def abbreviate(self, total: "PartialSum"):
        """A symbol standing for the sum ``total`` used as a number.

        Names keep the method's later arithmetic small (a residual after two rejections is
        ``(r - q) / S2`` with ``S2`` one symbol, not a quotient of expanded polynomials).  A
        name never leaves the case: every sign is decided, and every law, record and
        certificate entry is written, after :meth:`full` has put the sums back."""
        expr = self.full(total.expr)
        if total.nonneg and (expr, "nonneg") not in self._noted:
            self._noted.add((expr, "nonneg"))
            self.note_nonnegative(expr)
        self.note_balance(total, expr)
        if expr.is_Number:
            return expr
        name = self._named.get(expr)
        if name is None:
            name = sympy.Dummy(f"S{len(self.abbreviations) + 1}")
            self.abbreviations[name] = expr
            self.definitions[name] = _sym(total.expr)
            self._named[expr] = name
        return name

    def full(self, expr):
        """``expr`` with every abbreviation replaced by the sum it names."""
        expr = _sym(expr)
        if self.abbreviations and expr.free_symbols & self.abbreviations.keys():
            return expr.xreplace(self.abbreviations)
        return expr

    def note_nonnegative(self, expr):
        """Record that ``expr`` (a sum of terms each known >= 0) is >= 0."""
        num, den = sympy.fraction(sympy.together(_sym(expr)))
        num = sympy.expand(num)
        if num.is_Number or num.free_symbols & _TOKEN:
            return
        try:
            den_sign = self.sign(den)
        except (NeedCase, NeedClassSplit):
            return
        coeff, factors = _factor_list(num)
        if len(factors) != 1 or factors[0][1] != 1 or den_sign == 0:
            return
        atom, s = _canonical(factors[0][0])
        self.inner.known[atom] = s * _num_sign(coeff) * den_sign

    def note_balance(self, total: "PartialSum", expr=None):
        """The balance identity of a positive-part sum.

        If every token and class of the case has a recorded sign against 0 (an entry ``d``
        compared with 0, as ``max(d, 0)`` does), the entries of ``total`` are those with sign
        ``> 0`` and possibly some with sign 0 (whose entries are 0), and the recorded entries
        sum to 0 over the whole vocabulary (checked symbolically with ``sum p = sum q = 1``:
        ``d = a - b`` with ``a``, ``b`` both distributions), then
        ``total = sum (d)^+ = sum (-d)^+ >= 0``.  When some entry with sign ``< 0`` is
        strictly negative (a token's own value, or the aggregate of a class whose sign is
        decided ``< 0``), ``total > 0``.  The identity is recorded (for the certificate) and
        bounds (or fixes) the sign of ``total``'s numerator in this case."""
        owners = [Token(t) for t in self.names] + list(self.class_labels)
        if any(o not in self.zero_signs for o in owners):
            return
        key = (total.expr, tuple(self.zero_signs[o][:2] for o in owners))
        if key in self._balance_seen:
            return
        self._balance_seen.add(key)
        records = [(o, *self.zero_signs[o]) for o in owners]
        positive = {o for o, _, s, _ in records if s > 0}
        zero = {o for o, _, s, _ in records if s == 0}
        if not positive <= set(total.owners) <= positive | zero:
            return
        expr = self.full(total.expr) if expr is None else expr
        summed = sum(v for o, v, _, _ in records if o in total.owners)
        if sympy.cancel(sympy.together(expr - summed)) != 0:
            return
        balance = sum(v for _, v, _, _ in records)
        if sympy.cancel(sympy.together(balance.xreplace(self.unit_sums()))) != 0:
            return
        strict = None        # None: total >= 0 only (every entry with sign < 0 may be 0)
        for o, v, s, is_strict in records:
            if s >= 0:
                continue
            if is_strict:
                strict = o
                break
            try:
                if self.sign(v) < 0:
                    strict = o
                    break
            except (NeedCase, NeedClassSplit, _Infeasible):
                continue
        num, den = sympy.fraction(sympy.together(expr))
        num = sympy.expand(num)
        if num.is_Number or num.free_symbols & _TOKEN:
            return
        try:
            den_sign = self.sign(den)
        except (NeedCase, NeedClassSplit, _Infeasible):
            return
        coeff, factors = _factor_list(num)
        if len(factors) != 1 or factors[0][1] != 1 or den_sign == 0:
            return
        atom, s = _canonical(factors[0][0])
        sign = s * _num_sign(coeff) * den_sign
        record = {
            "sum": str(expr), "atom": str(atom), "atom_sign": sign,
            "owners": sorted(str(o) for o in total.owners),
            "strict": strict is not None,
            "strictly_negative": None if strict is None else str(strict),
            "terms": [[str(o), str(v), s, is_strict] for o, v, s, is_strict in records]}
        fact = self.inner.facts.get(atom)
        if fact is not None and (fact != sign if strict is not None else fact * sign < 0):
            # the case already fixed a sign of the sum that the identity excludes
            self.pruned_by = [record]
            raise _Infeasible()
        if strict is None:
            if atom not in self.inner.strict_known:
                self.inner.known[atom] = sign
        else:
            self.inner.strict_known[atom] = sign
        if not any(b["atom"] == record["atom"] and b["strict"] >= record["strict"]
                   for b in self.balances):
            self.balances.append(record)    # for the certificate of the leaves it prunes

    def unit_sums(self) -> dict:
        """``p_t``, ``q_t`` of the first distinguished token solved from ``sum p = sum q = 1``."""
        t = self.names[0]
        p_t, q_t = self.token_symbols[t]
        others_p = [self.token_symbols[u][0] for u in self.names[1:]] + \
            [self.class_symbols[n][0] for n, _ in self.classes]
        others_q = [self.token_symbols[u][1] for u in self.names[1:]] + \
            [self.class_symbols[n][1] for n, _ in self.classes]
        return {p_t: 1 - sum(others_p), q_t: 1 - sum(others_q)}

    # -- sign decisions --------------------------------------------------------------------
    def sign(self, expr) -> int:
        expr = _sym(expr)
        if expr.is_Number:
            return _num_sign(expr)
        drawn = expr.free_symbols & _DRAWN
        if drawn:
            # a drawn token's symbols name another token on every path: the sign depends on
            # the class it was drawn from
            index = _draw_index()
            classes = self.draw_class
            if any(index[d] not in classes for d in drawn):
                return self._sign(expr)
            key = (expr, tuple(sorted((index[d], classes[index[d]].name) for d in drawn)))
        else:
            key = expr
        known = self._signs.get(key)
        if known is not None:
            return known
        sign = self._signs[key] = self._sign(expr)
        return sign

    def _sign(self, expr) -> int:
        expr = self.full(expr)
        if expr.free_symbols & _TOKEN:
            raise NotGeneric(f"a class entry's per-token expression {expr} leaked into a number")
        num, den = sympy.fraction(sympy.together(expr))
        return self._poly_sign(num) * self._poly_sign(den)

    def _poly_sign(self, poly) -> int:
        poly = sympy.expand(poly)
        if poly.is_Number:
            return _num_sign(poly)
        index = _draw_index()
        coeff, factors = _factor_list(poly)
        result = _num_sign(coeff)
        for factor, mult in factors:
            draws = {index[s] for s in factor.free_symbols if s in index}
            if not draws:
                s_atom = self.inner._poly_sign(factor)
            elif len(draws) > 1:
                raise NotGeneric(f"compares the values of two tokens drawn from the rest "
                                 f"({factor})")
            else:
                i = draws.pop()
                if i not in self.draw_class:
                    raise NotGeneric(f"uses the value of a rest token from another path: {factor}")
                p_sym, q_sym = _draw_symbols(i)
                form = factor.xreplace({p_sym: PI, q_sym: KAPPA})
                s_atom = self.class_sign(self.draw_class[i], form)
            if s_atom == 0:
                return 0
            result *= s_atom ** mult
        return result

    def class_sign(self, cls: ClassLabel, expr) -> int:
        """The sign of a per-token expression, the same for every token of ``cls``."""
        expr = _sym(expr)
        key = (cls.name, expr)
        known = self._class_signs.get(key)
        if known is not None:
            return known
        num, den = sympy.fraction(sympy.together(self.full(expr)))
        sign = self._class_poly_sign(cls, num) * self._class_poly_sign(cls, den)
        if not expr.free_symbols & _DRAWN:
            self._class_signs[key] = sign
        return sign

    def _class_poly_sign(self, cls, poly) -> int:
        poly = sympy.expand(poly)
        if poly.is_Number:
            return _num_sign(poly)
        if not poly.free_symbols & _TOKEN:
            return self.sign(poly)
        coeff, factors = _factor_list(poly)
        result = _num_sign(coeff)
        for factor, mult in factors:
            if not factor.free_symbols & _TOKEN:
                s_atom = self.sign(factor)
            else:
                monoms = sympy.Poly(factor, PI, KAPPA).monoms()
                if any(sum(m) != 1 for m in monoms):
                    raise NotGeneric(
                        f"needs the sign of {factor} for a token x of the rest: not a linear "
                        "homogeneous form in (p_x, q_x), so tokens of one class may disagree")
                atom, s = _canonical(factor)
                facts = self._facts[cls.name]
                if atom not in facts:
                    ray = _ray(facts)
                    if ray is not None:
                        # every token of the class is lam * ray with lam > 0
                        s_atom = s * self.sign(atom.xreplace({PI: ray[0], KAPPA: ray[1]}))
                        if s_atom == 0:
                            return 0
                        result *= s_atom ** mult
                        continue
                    feasible = _cone_signs(facts, atom)
                    if feasible is not None and len(feasible) == 1:
                        facts[atom] = feasible[0]      # implied by the class's facts
                    else:
                        raise NeedClassSplit(cls, atom)
                s_atom = s * facts[atom]
            if s_atom == 0:
                return 0
            result *= s_atom ** mult
        return result


def _numeric_form(form):
    """``(a, b)`` as Fractions for ``form = a pi_x + b kappa_x``, or None if symbolic."""
    poly = sympy.Poly(form, PI, KAPPA)
    a, b = poly.coeff_monomial(PI), poly.coeff_monomial(KAPPA)
    if not (a.is_Number and b.is_Number):
        return None
    return Fraction(str(a)), Fraction(str(b))


def _ray(facts: dict):
    """``(pi, kappa)`` spanning the ray of a class pinned by a numeric equality fact."""
    for form, sign in facts.items():
        if sign != 0:
            continue
        numeric = _numeric_form(form)
        if numeric is None:
            continue
        a, b = numeric              # a pi + b kappa = 0: the ray (-b, a) or (b, -a)
        ray = (-b, a) if (-b >= 0 and a >= 0) else (b, -a)
        if ray[0] >= 0 and ray[1] >= 0 and ray != (0, 0):
            return sympy.Rational(ray[0].numerator, ray[0].denominator), \
                sympy.Rational(ray[1].numerator, ray[1].denominator)
    return None


def _cone_signs(facts: dict, form):
    """The signs ``form`` can take on a token ``(pi_x, kappa_x) >= 0``, not both 0, that
    satisfies ``facts``; None when a coefficient is symbolic.

    On the segment ``pi_x = l``, ``kappa_x = 1 - l`` (``0 <= l <= 1``, enough by homogeneity)
    each form is affine in ``l``, so each fact keeps an interval and the question is exact.
    """
    numeric = [(_numeric_form(f), s) for f, s in facts.items()]
    target = _numeric_form(form)
    if target is None or any(n is None for n, _ in numeric):
        return None
    # interval [lo, hi] with open flags
    lo, lo_open, hi, hi_open = Fraction(0), False, Fraction(1), False

    def restrict(coeffs, sign, lo, lo_open, hi, hi_open):
        a, b = coeffs              # f(l) = a l + b (1 - l) = b + (a - b) l
        slope, const = a - b, b
        if slope == 0:
            value = _num_sign(const)
            return (lo, lo_open, hi, hi_open) if value == sign else None
        root = -const / slope
        if sign == 0:
            if lo < root < hi or (root == lo and not lo_open) or (root == hi and not hi_open):
                return root, False, root, False
            return None
        if (slope > 0) == (sign > 0):          # f has the sign above the root
            if root > lo or (root == lo and not lo_open):
                lo, lo_open = root, True
        else:
            if root < hi or (root == hi and not hi_open):
                hi, hi_open = root, True
        if lo > hi or (lo == hi and (lo_open or hi_open)):
            return None
        return lo, lo_open, hi, hi_open

    box = (lo, lo_open, hi, hi_open)
    for coeffs, sign in numeric:
        box = restrict(coeffs, sign, *box)
        if box is None:
            return []
    return [sign for sign in (-1, 0, 1) if restrict(target, sign, *box) is not None]


# -- the sampler ------------------------------------------------------------------------------
class GenericSampler(ExactSampler):
    """The exact sampler over a generic vocabulary: a draw from the rest is one branch per
    class, whose token is a :class:`DrawnToken` with its own symbols."""

    def __init__(self, case: GenericCase):
        super().__init__()
        self.case = case

    def _reset(self):
        super()._reset()
        self._draws = 0
        if hasattr(self, "case"):
            self.case.draw_class = {}

    def draw(self, dist, what: str = "draw"):
        case = self.case
        options = []
        for lab, pr in zip(dist.labels, dist.probs):
            if isinstance(lab, ClassLabel):
                if _is_zero_constant(pr):
                    continue
                if not isinstance(pr, ClassEntry) or pr.owner != lab:
                    raise NotGeneric(f"{what}: the entry of class {lab.name} is not a per-token "
                                     "expression")
                s = case.class_sign(lab, pr.expr)
                if s < 0:
                    raise InvalidInput(f"{what}: negative probability {pr.expr} on class "
                                       f"{lab.name}")
                if s == 0:
                    continue
                token = DrawnToken(lab, self._draws)
                weight = SymbolicValue(pr.expr.xreplace({PI: token.p_sym, KAPPA: token.q_sym}))
                options.append((token, weight, f"{what} {token}"))
            elif isinstance(lab, DrawnToken):
                raise NotGeneric("a vector indexed by a drawn rest token")
            else:
                value = _plain(pr)
                if value < 0:
                    raise InvalidInput(f"{what}: negative probability {value} on token {lab}")
                if value != 0:
                    options.append((lab, value, f"{what} {lab}"))
        token = self._choose(what, options)
        if isinstance(token, DrawnToken):
            case.draw_class[self._draws] = token.cls
            for z in self.drafted:
                if isinstance(z, DrawnToken) and z.cls == token.cls and dist[z] == 0:
                    token.excluded.add(z.ident)
        self._draws += 1
        return token

    def drafts(self, q, k: int, replace: bool = True) -> tuple:
        if not replace:
            raise NotGeneric("drafts without replacement: the law of a later draft depends on "
                             "which rest token was drawn before (q(x) / (1 - q(x_1))), which no "
                             "aggregate of the rest determines")
        return tuple(self.draft(q, f"draft{i + 1}") for i in range(k))

    def coin(self, prob, what: str = "coin") -> bool:
        return super().coin(_plain(prob), what)

    def uniform(self):
        raise NotGeneric("explicit uniforms and inverse-CDF picks depend on the order of the "
                         "tokens of the rest")

    def pick(self, dist, u, what: str = "pick"):
        raise NotGeneric("inverse-CDF picks depend on the order of the tokens of the rest")


def _aggregate_weight(weight, draw_class: dict, case: GenericCase):
    """The path weight summed over the rest tokens drawn on the path (multilinear check)."""
    weight = _sym(weight)
    key = (weight, tuple(sorted((i, c.name) for i, c in draw_class.items())))
    known = case._weights.get(key)
    if known is None:
        known = case._weights[key] = _aggregate_weight_of(weight, draw_class, case)
    return known


def _aggregate_weight_of(weight, draw_class: dict, case: GenericCase):
    if weight.is_Number:
        return weight
    gens = sorted(weight.free_symbols, key=str)
    ring = sympy.polys.rings.ring(gens, sympy.QQ)[0]
    num, den = _ring_fraction(weight, ring, {})
    num, den = num.cancel(den)
    for i, cls in draw_class.items():
        p_sym, q_sym = _draw_symbols(i)
        for sym in (p_sym, q_sym):
            if sym in weight.free_symbols and den.degree(gens.index(sym)) > 0:
                raise NotGeneric(f"a path weight {weight} is not linear in the drawn rest "
                                 f"token x{i}: the sum over the rest is not an aggregate")
        indices = [gens.index(sym) for sym in (p_sym, q_sym) if sym in weight.free_symbols]
        if any(sum(m[j] for j in indices) != 1 for m in num.monoms()):
            raise NotGeneric(f"a path weight {weight} is not linear in the drawn rest token "
                             f"x{i}: the sum over the rest is not an aggregate")
    expr = num.as_expr() / den.as_expr()
    if expr.free_symbols & _TOKEN:
        raise NotGeneric(f"a class entry's expression reached a path weight: {expr}")
    substitution = {}
    for i, cls in draw_class.items():
        p_sym, q_sym = _draw_symbols(i)
        P, Q = case.aggregates(cls)
        substitution.update({p_sym: P, q_sym: Q})
    return expr.xreplace(substitution)


@dataclass
class _Run:
    law: dict
    rest: Any
    explicit: Any
    total: Any
    in_drafts: Any        # P(Y in X), or None when the engine cannot tell
    paths: int


def _run(method, case: GenericCase, k: int, reverse: bool = False) -> _Run:
    p, q = _vectors(case, reverse)
    s = GenericSampler(case)
    law = {t: sympy.Integer(0) for t in case.names}
    sums = {"rest": sympy.Integer(0), "explicit": sympy.Integer(0),
            "total": sympy.Integer(0), "in_drafts": sympy.Integer(0)}

    def leaf(s, y):
        w = _aggregate_weight(s.weight, s.case.draw_class, case)
        sums["total"] += w
        if isinstance(y, DrawnToken):
            sums["rest"] += w
        elif isinstance(y, str) and y in case.names:
            law[str(y)] += w
        else:
            raise NotGeneric(f"the method returned {y!r}, which is neither a distinguished "
                             "token nor a token drawn from the rest")
        if s.did_accept and s.accepted_token is y:
            sums["explicit"] += w
        if sums["in_drafts"] is not None:
            hit = _in_drafts(y, s.drafted)
            if hit is None:
                sums["in_drafts"] = None
            elif hit:
                sums["in_drafts"] += w

    count = depth_first(s, lambda s: method(s, p, q, k), leaf, differs=_replay_differs)
    rest, explicit, total, in_drafts = (sums[key] for key in
                                        ("rest", "explicit", "total", "in_drafts"))
    return _Run(law, rest, explicit, total, in_drafts, count)


def _replay_differs(s) -> InvalidInput:
    return InvalidInput("the method made different random choices on a replay")


def _in_drafts(y, drafted):
    """Whether ``y`` is one of the drafts: True, False, or None (undetermined)."""
    for z in drafted:
        if z is y:
            return True
    for z in drafted:
        if isinstance(y, DrawnToken) and isinstance(z, DrawnToken) and z.cls == y.cls \
                and z.ident not in y.excluded:
            return None
        if not isinstance(y, DrawnToken) and not isinstance(z, DrawnToken) and str(z) == str(y):
            return True
    return False


# -- the driver -------------------------------------------------------------------------------
@dataclass
class _Stub:
    """A combination of sub-classes contradicted outright by an earlier numeric fact."""

    path: tuple
    parent: Any

    def conditions(self):
        return self.parent.conditions() + ["a sub-class combination contradicting a fact"]


@dataclass
class GenericCaseResult:
    """One case: its classes and conditions, the closed forms, the verdict, the witnesses."""

    conditions: list
    classes: list
    path: tuple
    law: dict
    acceptance: Any
    in_drafts: Any
    total: Any
    differences: dict
    solution: dict
    verdict: str
    witnesses: list
    note: str = ""
    case: Any = None
    targets: dict = field(default_factory=dict)
    expected_acceptance: Any = None
    raw: dict = field(default_factory=dict)     # the sums as the run built them, named


@dataclass
class GenericProof:
    """The verdict for every vocabulary size.

    ``outside`` is the reason the method left the abstraction (:class:`NotGeneric`), or None.
    ``proved`` means ``law(t) = target(t)`` (and the acceptance, when asked) in every case.
    """

    method: str
    k: int
    names: tuple
    cases: list
    infeasible: list
    outside: str | None = None
    runs: int = 0
    seconds: float = 0.0
    stuck: str | None = None
    reference: str | None = None    # ``module:function``, for the checker's replay

    @property
    def verdict(self) -> str:
        if self.outside is not None:
            return "outside"
        if self.stuck is not None:
            return "undecided"
        return overall_verdict(self.cases)

    def law_at(self, p, q, t, positions=None):
        """The generic closed form of ``law(t)`` evaluated on a concrete instance.

        The rest (every token but ``t``) is classified by replaying the splits of the proof;
        returns ``(case_result, law_value, acceptance_value)`` with exact ``Fraction`` values.
        """
        return _evaluate(self, p, q, t)


def prove_generic(method, k: int = 1, *, names=("t",), expected_law: Callable | None = None,
                  expected_acceptance: Callable | None = None, witnesses: int = 2,
                  max_cases: int = 4000, name: str | None = None) -> GenericProof:
    """Prove ``law(t) = p(t)`` for every vocabulary size, or refute it, case by case.

    ``expected_law(p, q, k)`` (default ``p``) and ``expected_acceptance(p, q, k)`` run inside
    each case over the same instrumented vectors.  A method that leaves the abstraction gives
    a proof with ``verdict == "outside"`` and the reason in ``outside``.

    >>> from exactspec.methods.naive import naive
    >>> proof = prove_generic(naive)
    >>> proof.verdict, sorted({str(c.law["t"]) for c in proof.cases})
    ('refuted', ['0', 'q_t'])
    """
    import time

    run = getattr(method, "run", method)
    label = name or getattr(method, "name", None) or getattr(method, "__name__", "method")
    names = tuple(str(t) for t in names)
    start = time.perf_counter()
    pending = [GenericCase(names, (("R", ()),), {}, ())]
    done, infeasible = [], []
    runs = 0
    while pending:
        case = pending.pop()
        runs += 1
        if runs > max_cases:
            raise InvalidInput(f"more than {max_cases} generic cases: too large to prove")
        if not case.inner.feasible_with():
            infeasible.append(case)
            continue
        token = _CURRENT.set(case)
        try:
            result = _run(run, case, k)
            if len(case.classes) > 1:
                # the order check: the classes in reverse order must give the same laws (a
                # sum over part of the rest, a prefix in slot order, would not)
                again = _run(run, case, k, reverse=True)
                for t in names:
                    if not _zero_on_case(case, again.law[t] - result.law[t], {}):
                        raise NotGeneric("the law changes with the order of the classes of "
                                         "the rest: the method depends on token order (for "
                                         "example a sum over part of the rest)")
            target = _target(expected_law, case, k)
            want = _expected_acceptance(expected_acceptance, case, k)
        except NeedCase as need:
            for s in (-1, 0, 1):
                child = case.with_fact(need.atom, s)
                if s in need.signs:
                    pending.append(child)
                else:
                    child.pruned_by = [b for b in case.balances if b["atom"] == str(need.atom)]
                    infeasible.append(child)
            continue
        except NeedClassSplit as need:
            feasible = _cone_signs(dict(need_facts(case, need.cls)), need.atom)
            signs = (-1, 0, 1) if feasible is None else tuple(feasible)
            pending.append(case.split(need.cls.name, need.atom, signs))
            continue
        except _Infeasible:
            infeasible.append(case)
            continue
        except (NotGeneric, NotExact) as err:
            return GenericProof(label, k, names, [], [], outside=str(err), runs=runs,
                                seconds=time.perf_counter() - start)
        except (InvalidInput, ZeroDivisionError):
            # The path may exist only for tokens of a class that is empty here: split on
            # the emptiness of the classes drawn on it; a real error recurs when all are
            # non-empty.
            maybe_empty = [c.name for c in case.draw_class.values()
                           if c.name not in case.nonempty]
            if not maybe_empty:
                import sys as _sys
                err = _sys.exc_info()[1]
                return GenericProof(label, k, names, done, infeasible, runs=runs,
                                    seconds=time.perf_counter() - start,
                                    stuck=f"a case the linear pruning cannot rule out ends in "
                                          f"an error of the method ({err}); conditions: "
                                          f"{case.conditions()}")
            for empty in (True, False):
                try:
                    pending.append(case.with_emptiness(maybe_empty[0], empty))
                except _Infeasible:
                    infeasible.append(_Stub(case.path + (("empty", maybe_empty[0], empty),),
                                            case))
            continue
        finally:
            _CURRENT.reset(token)
        done.append(_judge(case, result, target, want, run, k, witnesses))
    return GenericProof(label, k, names, done, infeasible, runs=runs,
                        seconds=time.perf_counter() - start, reference=_reference(method))


def _reference(method) -> str | None:
    """``module:qualname`` of a module-level function (a registered method is named by its
    registry name instead), so that the checker can import it to replay the witnesses."""
    if hasattr(method, "name") or not callable(method):
        return None
    module, qualname = getattr(method, "__module__", None), getattr(method, "__qualname__", "")
    if module and qualname and "<" not in qualname and module != "__main__":
        return f"{module}:{qualname}"
    return None


def need_facts(case, cls):
    return dict(case.classes)[cls.name]


def _vectors(case, reverse: bool = False):
    from ..core.dist import Dist

    classes = case.class_labels[::-1] if reverse else case.class_labels
    labels = tuple(Token(t) for t in case.names) + classes
    pv = [DistinguishedEntry(labels[i], case.token_symbols[t][0])
          for i, t in enumerate(case.names)] + [ClassEntry(c, PI) for c in classes]
    qv = [DistinguishedEntry(labels[i], case.token_symbols[t][1])
          for i, t in enumerate(case.names)] + [ClassEntry(c, KAPPA) for c in classes]
    return Dist(pv, labels, check=False, name="p"), Dist(qv, labels, check=False, name="q")


def _target(expected_law, case, k):
    p, q = _vectors(case)
    dist = expected_law(p, q, k) if expected_law else p
    return {t: _sym(_plain(dist[Token(t)])) for t in case.names}


def _expected_acceptance(expected_acceptance, case, k):
    if expected_acceptance is None:
        return None
    p, q = _vectors(case)
    return _sym(_plain(expected_acceptance(p, q, k)))


def _explicit_solution(inner):
    eqs = list(inner.base_equalities) + [a for a, s in inner.facts.items()
                                         if s == 0 and inner._is_linear(a)]
    solved = sympy.solve(eqs, list(reversed(inner.variables)), dict=True)
    return solved[0] if solved else {}


def _judge(case, result, target, want, run, k, count) -> GenericCaseResult:
    solution = _explicit_solution(case.inner)

    def zero(value):
        return _zero_on_case(case, value, solution)

    if any(not zero(result.law[t] - target[t]) for t in case.names) or \
            (want is not None and not zero(result.explicit - want)):
        solution = _equality_solution(case.inner)     # adds zeros implied by non-negativity

    def closed(value, expected):
        # a value equal to its expectation on the case *is* the (small) expectation: the
        # large quotient itself is only tested for zero, never cancelled
        if expected is not None and zero(value - expected):
            return _reduce(case.full(expected), solution)
        return _reduce(case.full(value), solution)

    law = {t: closed(v, target.get(t)) for t, v in result.law.items()}
    acceptance = closed(result.explicit, want)
    in_drafts = None if result.in_drafts is None or not zero(result.in_drafts - result.explicit) \
        else acceptance
    total = closed(result.total, sympy.Integer(1))
    target = {t: _reduce(case.full(v), solution) for t, v in target.items()}
    want = None if want is None else _reduce(case.full(want), solution)
    diffs = {t: _reduce(law[t] - target[t], solution) for t in case.names}
    if want is not None:
        diffs["acceptance"] = _reduce(acceptance - want, solution)
    if total != 1 and _vanishes(total - 1, case.inner, solution):
        total = sympy.Integer(1)
    diffs = {t: (0 if d != 0 and _vanishes(d, case.inner, solution) else d)
             for t, d in diffs.items()}
    points = _witnesses(case, count)
    checked, agree_all, differs_any = [], True, False
    for point in points:
        w = _check_witness(case, point, law, acceptance, run, k)
        checked.append(w)
        agree_all = agree_all and w["agrees"]
        differs_any = differs_any or w["differs"]
    if not differs_any and any(d != 0 for d in diffs.values()):
        # look further for a point where the law differs from the target
        for point in case.inner.witnesses(6, seed=1):
            if not case.realised(point) or point in points:
                continue
            if all(d.xreplace(point) == 0 for d in diffs.values()):
                continue
            w = _check_witness(case, point, law, acceptance, run, k)
            checked.append(w)
            agree_all = agree_all and w["agrees"]
            differs_any = differs_any or w["differs"]
            if differs_any:
                break
    classes = [{"name": name, "facts": [[str(f), s] for f, s in facts]}
               for name, facts in case.classes]
    if total != 1:
        verdict, note = "undecided", f"the paths add up to {total}, not 1"
    elif not agree_all:
        verdict, note = "undecided", "the closed form disagrees with exact enumeration"
    elif all(d == 0 for d in diffs.values()):
        verdict, note = "proved", ""
    elif differs_any:
        verdict, note = "refuted", "the law differs from the target at a witness"
    else:
        verdict, note = "undecided", "law - target did not cancel and no witness shows it"
    raw = {"law": dict(result.law), "acceptance": result.explicit, "total": result.total,
           "names": list(case.definitions.items())}
    return GenericCaseResult(case.conditions(), classes, case.path, law, acceptance, in_drafts,
                             total, diffs, {str(a): str(b) for a, b in solution.items()},
                             verdict, checked, note, case, dict(target), want, raw)


def _zero_on_case(case, expr, solution) -> bool:
    """Whether ``expr``, written with the case's abbreviations, is 0 on the case.

    ``expr = num / den`` in a polynomial ring whose variables include the abbreviations
    ``S_i`` (``den`` is a product of quantities the method divided by, non-zero in the case).
    Each ``S_i`` is then eliminated, last first: with ``S_i = a / b`` (``b != 0``) and
    ``num = sum_j c_j S_i^j`` of degree ``d``, ``b^d num = sum_j c_j a^j b^(d - j)``, which is
    0 exactly when ``num`` is.  What is left is a polynomial in the aggregates; the case's
    linear equalities (``solution``) are substituted and the result is tested for zero, then
    reduced by the case's nonlinear equalities (:func:`_vanishes`).  Every step multiplies by
    a non-zero quantity or uses an identity of the case, so a True answer is a proof."""
    expr = _sym(expr).xreplace(solution)
    if expr.is_Number:
        return expr == 0
    definitions = {name: d.xreplace(solution) for name, d in case.definitions.items()}
    nonlinear = [sympy.expand(a.xreplace(solution)) for a, s in case.inner.facts.items()
                 if s == 0 and not case.inner._is_linear(a)]
    symbols = set(expr.free_symbols) | set(definitions)
    for d in list(definitions.values()) + nonlinear:
        symbols |= d.free_symbols
    gens = sorted(symbols, key=str)
    ring = sympy.polys.rings.ring(gens, sympy.QQ, order="grevlex")[0]
    memo: dict = {}
    num, _ = _ring_fraction(expr, ring, memo)
    for name in reversed(list(definitions)):
        if num == 0:
            return True
        i = gens.index(name)
        if num.degree(i) <= 0:
            continue
        a, b = _ring_fraction(definitions[name], ring, memo)
        num = _eliminate(num, i, a, b, ring)
    if num == 0:
        return True
    # the nonlinear equalities of the case (a class where r = q): ideal membership
    equalities = [g for g in (_ring_fraction(a, ring, {})[0] for a in nonlinear) if g != 0]
    if not equalities or any(g.is_ground for g in equalities):
        return False
    if len(equalities) > 1:
        from sympy.polys.groebnertools import groebner
        equalities = groebner(equalities, ring)
    return num.rem(equalities) == 0


def _eliminate(num, i, a, b, ring):
    """``b^d num`` with the variable ``i`` replaced by ``a / b`` (``d``: degree of ``num``)."""
    groups: dict = {}
    for monom, coeff in num.terms():
        rest = monom[:i] + (0,) + monom[i + 1:]
        groups.setdefault(monom[i], {})[rest] = coeff
    d = max(groups)
    out = ring.zero
    for e, terms in groups.items():
        out += ring.from_dict(terms) * (a ** e if e else ring.one) * \
            (b ** (d - e) if d - e else ring.one)
    return out


def _ring_fraction(expr, ring, memo):
    """``expr`` as ``(numerator, denominator)`` in ``ring``, without gcds (a denominator is a
    product of the expression's own denominators, each non-zero where the method divided)."""
    known = memo.get(expr)
    if known is not None:
        return known
    if expr.is_Symbol:
        out = ring.gens[ring.symbols.index(expr)], ring.one
    elif expr.is_Rational:
        out = ring(int(expr.p)), ring(int(expr.q))
    elif expr.is_Add:
        num, den = ring.zero, ring.one
        for arg in expr.args:
            a, b = _ring_fraction(arg, ring, memo)
            if b == den:
                num = num + a
            elif len(b) == 1 and len(den) == 1:
                # monomial denominators (products of abbreviations): their lcm
                (m1, c1), = den.terms()
                (m2, c2), = b.terms()
                lcm = ring.from_dict({tuple(map(max, m1, m2)): ring.domain.one})
                num = num * lcm.exquo(den) + a * lcm.exquo(b)
                den = lcm
            else:
                num, den = num * b + a * den, den * b
        out = num, den
    elif expr.is_Mul:
        num, den = ring.one, ring.one
        for arg in expr.args:
            a, b = _ring_fraction(arg, ring, memo)
            num, den = num * a, den * b
        out = num, den
    elif expr.is_Pow and expr.exp.is_Integer:
        a, b = _ring_fraction(expr.base, ring, memo)
        e = int(expr.exp)
        out = (a ** e, b ** e) if e >= 0 else (b ** -e, a ** -e)
    else:
        raise NotGeneric(f"a closed form that is not a rational function: {expr}")
    memo[expr] = out
    return out


def _vanishes(expr, inner, solution) -> bool:
    """Whether ``expr`` is 0 on the case because of its nonlinear equalities: its numerator
    lies in the ideal they generate (a Groebner basis reduces it to 0).  Every equality holds
    in the case and the denominator is not 0 there, so this is a proof."""
    eqs = []
    for atom, s in inner.facts.items():
        if s == 0 and not inner._is_linear(atom):
            num = sympy.expand(sympy.fraction(sympy.together(atom.xreplace(solution)))[0])
            if num != 0:
                eqs.append(num)
    if not eqs:
        return False
    num = sympy.expand(sympy.fraction(sympy.together(expr))[0])
    gens = sorted(set().union(*(e.free_symbols for e in eqs)) | num.free_symbols, key=str)
    basis = sympy.groebner(eqs, *gens, order="grevlex")
    return basis.reduce(num)[1] == 0


def _witnesses(case, count):
    """Rational points of the case: the LP centre first, then a few more if asked."""
    inner = case.inner
    best, centre = inner._max_slack()
    if best is None or best <= 0 or centre is None:
        return []
    point = {v: sympy.Rational(centre[v].numerator, centre[v].denominator)
             for v in inner.variables}
    if inner._holds_at(point) and case.realised(point) and count <= 1:
        return [point]
    return [w for w in inner.witnesses(max(count, 2)) if case.realised(w)][:count]


def _concrete(case, point, split: int = 1):
    """A concrete vocabulary for a witness point: one token per class (``split`` proportional
    tokens per class), distinguished tokens first."""
    from ..core.dist import Dist

    labels, pv, qv = [], [], []
    for t in case.names:
        a, b = case.token_symbols[t]
        labels.append(t)
        pv.append(Fraction(str(point[a])))
        qv.append(Fraction(str(point[b])))
    for name, _ in case.classes:
        P, Q = case.class_symbols[name]
        if point[P] == 0 and point[Q] == 0:
            continue                       # an empty class: no token
        for j in range(split):
            share = Fraction(j + 1, split * (split + 1) // 2)
            labels.append(f"{name}.{j}" if split > 1 else name)
            pv.append(Fraction(str(point[P])) * share)
            qv.append(Fraction(str(point[Q])) * share)
    return Dist(pv, labels), Dist(qv, labels)


def _check_witness(case, point, law, acceptance, run, k):
    from ..core.dist import exact_str

    record = {"point": {str(v): str(val) for v, val in point.items()}, "sizes": []}
    agrees, differs = True, False
    for split in (1, 2):
        p, q = _concrete(case, point, split)
        exact = enumerate_paths(run, p, q, k, keep_paths=(split == 1), max_paths=None)
        for t in case.names:
            generic = law[t].xreplace(point)
            if sympy.Rational(str(exact.law[t])) != generic:
                agrees = False
            if exact.law[t] != p[t]:
                differs = True
        if sympy.Rational(str(exact.explicit_acceptance)) != acceptance.xreplace(point):
            agrees = False
        record["sizes"].append({"n": len(p), "p": p, "q": q, "enumeration": exact})
    record["agrees"], record["differs"] = agrees, differs
    return record


def _evaluate(proof: GenericProof, p, q, t):
    """Find the case of ``proof`` holding the instance ``(p, q)`` with ``t`` distinguished and
    evaluate its closed forms there."""
    if len(proof.names) != 1:
        raise InvalidInput("law_at needs a proof with one distinguished token")
    name = proof.names[0]
    return _evaluate_cases(((r.path, r.law[name], r.acceptance, r) for r in proof.cases),
                           name, p, q, t)


def _evaluate_cases(cases, name, p, q, t):
    """The first of ``cases`` (``(path, law, acceptance, result)``) whose path of splits holds
    the instance: ``(result, law, acceptance)``, the two closed forms evaluated there."""
    rest = [lab for lab in p.labels if lab != t]
    rest = [x for x in rest if p[x] != 0 or q[x] != 0]
    pt, qt = sympy.Symbol(f"p_{name}", nonnegative=True), sympy.Symbol(f"q_{name}",
                                                                       nonnegative=True)
    for path, law, acceptance, result in cases:
        groups = _replay(path, rest, p, q, p[t], q[t], pt, qt)
        if groups is None:
            continue
        values = {pt: sympy.Rational(str(p[t])), qt: sympy.Rational(str(q[t]))}
        for cname, tokens in groups.items():
            P, Q = _agg_symbols(cname)
            values[P] = sympy.Rational(str(sum((p[x] for x in tokens), Fraction(0))))
            values[Q] = sympy.Rational(str(sum((q[x] for x in tokens), Fraction(0))))
        return (result, Fraction(str(law.xreplace(values))),
                Fraction(str(acceptance.xreplace(values))))
    raise InvalidInput("no case of the generic proof holds this instance (infeasible case?)")


def certificate_law_at(certificate: dict, p, q, t):
    """``law(t)`` and the acceptance that a generic certificate (the JSON of
    :func:`exactspec.claims.generic.generic_certificate`, as ``exactspec prove
    --certificate-dir`` writes it, alone or as a part of a claim's) states for a concrete
    instance: the case whose recorded splits hold ``(p, q)`` with ``t`` distinguished, its
    closed forms evaluated there.  Returns ``(case index, law, acceptance)``, exact
    ``Fraction`` values; the same values as :meth:`GenericProof.law_at` on the proof it was written
    from, read from the file alone.

    >>> from exactspec import Dist
    >>> from exactspec.claims.generic import generic_certificate
    >>> from exactspec.methods.naive import naive
    >>> cert = generic_certificate(prove_generic(naive), "naive")
    >>> p, q = Dist.parse("1/2,1/4,1/4"), Dist.parse("1/4,1/4,1/2")
    >>> case, law, acceptance = certificate_law_at(cert, p, q, p.labels[0])
    >>> str(law), str(acceptance)                       # naive outputs q: lossy
    ('1/4', '1')
    """
    parts = [certificate] if "cases" in certificate else [
        part for part in certificate.get("parts", []) if "cases" in part]
    if len(parts) != 1:
        raise InvalidInput(f"expected one generic certificate, found {len(parts)}")
    cert = parts[0]
    names = cert.get("distinguished", ["t"])
    if len(names) != 1:
        raise InvalidInput("certificate_law_at needs one distinguished token")
    name = str(names[0])
    known = {f"p_{name}": sympy.Symbol(f"p_{name}", nonnegative=True),
             f"q_{name}": sympy.Symbol(f"q_{name}", nonnegative=True),
             str(PI): PI, str(KAPPA): KAPPA}

    def parse(text):
        expr = sympy.sympify(text)
        swap = {}
        for symbol in expr.free_symbols:
            label = symbol.name
            if label in known:
                swap[symbol] = known[label]
            elif label[:2] in ("P_", "Q_"):
                swap[symbol] = _agg_symbols(label[2:])[label[0] == "Q"]
            else:
                raise InvalidInput(f"certificate: unknown symbol {label!r}")
        return expr.xreplace(swap)

    def step(entry):
        kind = entry[0]
        if kind == "aggregate":
            return ("aggregate", parse(entry[1]), int(entry[2]))
        if kind == "empty":
            return ("empty", entry[1], bool(entry[2]))
        return ("class", entry[1], parse(entry[2]), tuple(int(s) for s in entry[3]))

    cases = ((tuple(step(e) for e in case["path"]), parse(case["law"][name]),
              parse(case["acceptance"]), index) for index, case in enumerate(cert["cases"]))
    return _evaluate_cases(cases, name, p, q, t)


def _replay(path, rest, p, q, pt_value, qt_value, pt, qt):
    groups = {"R": list(rest)}
    for step in path:
        kind = step[0]
        values = {pt: sympy.Rational(str(pt_value)), qt: sympy.Rational(str(qt_value))}
        for cname, tokens in groups.items():
            P, Q = _agg_symbols(cname)
            values[P] = sympy.Rational(str(sum((p[x] for x in tokens), Fraction(0))))
            values[Q] = sympy.Rational(str(sum((q[x] for x in tokens), Fraction(0))))
        if kind == "aggregate":
            atom = step[1]
            if _num_sign(atom.xreplace(values)) != step[2]:
                return None
        elif kind == "empty":
            _, cname, empty = step
            if empty != (not groups[cname]):
                return None
            if empty:
                del groups[cname]
        else:
            _, cname, atom, signs = step
            by_sign = {}
            for x in groups[cname]:
                v = atom.xreplace(values).xreplace({PI: sympy.Rational(str(p[x])),
                                                    KAPPA: sympy.Rational(str(q[x]))})
                by_sign.setdefault(_num_sign(v), []).append(x)
            if not set(by_sign) <= set(signs):
                return None
            del groups[cname]
            for s in signs:
                groups[f"{cname}{_MARK[s]}"] = by_sign.get(s, [])
    return groups
