"""The cases of a vocabulary-generic proof and the splitting of the rest into classes.

A :class:`GenericCase` fixes the distinguished tokens, the classes of the rest (each a set
of class facts: signs of linear homogeneous forms in ``(p_x, q_x)`` that every token of the
class has) and the signs of aggregate quantities; it decides every sign a run asks for, by
the exact linear programme of :class:`~exactspec.engine.symbolic.Case` over the aggregates
(:class:`_CachedCase`) or, for a per-token form, by the class's facts.  A sign it cannot
decide is a new case: an aggregate fact (:class:`~exactspec.engine.symbolic.NeedCase`) or a
class split into the sub-classes where the form is ``<``, ``=``, ``>``
(:class:`~.values.NeedClassSplit`, :meth:`GenericCase.split`).  The
balance identity of a positive-part sum (:meth:`GenericCase.note_balance`) and the names of
complete sums (:meth:`GenericCase.abbreviate`) live here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import sympy

from ..symbolic import (Case, NeedCase, canonical, factor_list, InfeasibleCase, linear_row,
                        num_sign, as_sympy)
from .values import (DRAWN, TOKEN, KAPPA, PI, ClassLabel, NeedClassSplit, NotGeneric,
                     PartialSum, RestCase, Token, draw_index, draw_symbols)

__all__ = ["GenericCase", "MARK", "agg_symbols", "cone_signs"]


#: The suffix of a sub-class by the sign its tokens give the atom split on (``R`` into
#: ``Rm``, ``Rz``, ``Rp``).
MARK = {-1: "m", 0: "z", 1: "p"}


def agg_symbols(name: str):
    """The nonnegative symbols ``P_name`` and ``Q_name`` of an aggregated class of tokens."""
    return sympy.symbols(f"P_{name} Q_{name}", nonnegative=True)


_FEASIBLE: dict = {}


class _CachedCase(Case):
    """A :class:`~exactspec.engine.symbolic.Case` with non-strict facts ``expr >= 0``
    (``nonstrict``) and exact LP answers remembered across reruns.  ``known`` maps atoms to a
    sign they cannot have the opposite of: sums of terms each known >= 0 (a residual's
    normaliser)."""

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
                    sign = num_sign(reduced)
                else:
                    inner, t = canonical(reduced)
                    sign = t * self._atom_sign(inner)
                self.deduced[atom] = sign
                return sign
        try:
            return super()._atom_sign(atom)
        except NeedCase as need:
            exact = (self.strict_known or {}).get(atom)
            if exact is not None:
                if exact not in need.signs:
                    raise InfeasibleCase() from None
                self.deduced[atom] = exact
                return exact
            bound = (self.known or {}).get(atom)
            if bound is None:
                raise
            signs = [x for x in need.signs if x * bound >= 0]
            if not signs:
                raise InfeasibleCase() from None
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
        for expr in self.nonstrict:
            if self._is_linear(expr):
                coeffs, const = linear_row(expr, self.variables)
                lb.append((list(coeffs) + [Fraction(0)], -const))
        for atom, s in self.facts.items():
            reduced = self._reduced(atom)
            if reduced is None:
                continue
            if reduced.is_Number:
                if num_sign(reduced) != s:          # a contradiction: 0 = 1
                    eq.append(([Fraction(0)] * (len(self.variables) + 1), Fraction(1)))
                continue
            if self._is_linear(reduced):
                coeffs, const = linear_row(reduced, self.variables)
                if s == 0:
                    eq.append((list(coeffs) + [Fraction(0)], -const))
                else:
                    coeffs, const = linear_row(sympy.expand(s * reduced), self.variables)
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
class GenericCase(RestCase):
    """Distinguished tokens, classes of the rest with their facts, and aggregate facts.

    ``classes`` is a tuple of ``(name, ((atom, sign), ...))``: every token of the class has
    ``sign(atom(p_x, q_x)) = sign``.  ``agg_facts`` maps aggregate atoms to signs.  ``path``
    records the splits that led here (for the certificate and
    :meth:`~.interpreter.GenericProof.law_at`).
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
        self.class_symbols = {name: agg_symbols(name) for name, _ in self.classes}
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
                facts[canonical(P + Q)[0]] = 1
            for form, sign in class_facts:
                value = sympy.expand(form.xreplace({PI: P, KAPPA: Q}))
                if value.is_Number:
                    continue
                if sign == 0 or strict:
                    atom, t = canonical(value)
                    facts[atom] = t * sign
                elif sign == 0:
                    atom, _ = canonical(value)
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
                if num_sign(v) != sign:
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
                if num_sign(value) != s:
                    raise InfeasibleCase()
                continue
            b, t = canonical(value)
            facts[b] = s * t
        return facts

    def _rewrite_classes(self, classes, substitution):
        """Class facts with the aggregates of a replaced class substituted."""
        out = []
        for cname, facts in classes:
            new = []
            for form, s in facts:
                value = sympy.expand(form.xreplace(substitution))
                if not value.free_symbols & TOKEN:
                    if value.is_Number and num_sign(value) != s:
                        raise InfeasibleCase()
                    if not value.is_Number:
                        raise NotGeneric(f"a class fact lost its token: {value}")
                    continue
                b, t = canonical(value)
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
                sub = f"{name}{MARK[s]}"
                classes.append((sub, facts + ((atom, s),)))
                new.append(sub)
        P, Q = self.class_symbols[name]
        sums = {P: sum(agg_symbols(n)[0] for n in new), Q: sum(agg_symbols(n)[1] for n in new)}
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
            self.definitions[name] = as_sympy(total.expr)
            self._named[expr] = name
        return name

    def full(self, expr):
        """``expr`` with every abbreviation replaced by the sum it names."""
        expr = as_sympy(expr)
        if self.abbreviations and expr.free_symbols & self.abbreviations.keys():
            return expr.xreplace(self.abbreviations)
        return expr

    def note_nonnegative(self, expr):
        """Record that ``expr`` (a sum of terms each known >= 0) is >= 0."""
        num, den = sympy.fraction(sympy.together(as_sympy(expr)))
        num = sympy.expand(num)
        if num.is_Number or num.free_symbols & TOKEN:
            return
        try:
            den_sign = self.sign(den)
        except (NeedCase, NeedClassSplit):
            return
        coeff, factors = factor_list(num)
        if len(factors) != 1 or factors[0][1] != 1 or den_sign == 0:
            return
        atom, s = canonical(factors[0][0])
        self.inner.known[atom] = s * num_sign(coeff) * den_sign

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
            except (NeedCase, NeedClassSplit, InfeasibleCase):
                continue
        num, den = sympy.fraction(sympy.together(expr))
        num = sympy.expand(num)
        if num.is_Number or num.free_symbols & TOKEN:
            return
        try:
            den_sign = self.sign(den)
        except (NeedCase, NeedClassSplit, InfeasibleCase):
            return
        coeff, factors = factor_list(num)
        if len(factors) != 1 or factors[0][1] != 1 or den_sign == 0:
            return
        atom, s = canonical(factors[0][0])
        sign = s * num_sign(coeff) * den_sign
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
            raise InfeasibleCase()
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
        expr = as_sympy(expr)
        if expr.is_Number:
            return num_sign(expr)
        drawn = expr.free_symbols & DRAWN
        if drawn:
            # a drawn token's symbols name another token on every path: the sign depends on
            # the class it was drawn from
            index = draw_index()
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
        if expr.free_symbols & TOKEN:
            raise NotGeneric(f"a class entry's per-token expression {expr} leaked into a number")
        num, den = sympy.fraction(sympy.together(expr))
        return self._poly_sign(num) * self._poly_sign(den)

    def _poly_sign(self, poly) -> int:
        poly = sympy.expand(poly)
        if poly.is_Number:
            return num_sign(poly)
        index = draw_index()
        coeff, factors = factor_list(poly)
        result = num_sign(coeff)
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
                p_sym, q_sym = draw_symbols(i)
                form = factor.xreplace({p_sym: PI, q_sym: KAPPA})
                s_atom = self.class_sign(self.draw_class[i], form)
            if s_atom == 0:
                return 0
            result *= s_atom ** mult
        return result

    def class_sign(self, cls: ClassLabel, expr) -> int:
        """The sign of a per-token expression, the same for every token of ``cls``."""
        expr = as_sympy(expr)
        key = (cls.name, expr)
        known = self._class_signs.get(key)
        if known is not None:
            return known
        num, den = sympy.fraction(sympy.together(self.full(expr)))
        sign = self._class_poly_sign(cls, num) * self._class_poly_sign(cls, den)
        if not expr.free_symbols & DRAWN:
            self._class_signs[key] = sign
        return sign

    def _class_poly_sign(self, cls, poly) -> int:
        poly = sympy.expand(poly)
        if poly.is_Number:
            return num_sign(poly)
        if not poly.free_symbols & TOKEN:
            return self.sign(poly)
        coeff, factors = factor_list(poly)
        result = num_sign(coeff)
        for factor, mult in factors:
            if not factor.free_symbols & TOKEN:
                s_atom = self.sign(factor)
            else:
                monoms = sympy.Poly(factor, PI, KAPPA).monoms()
                if any(sum(m) != 1 for m in monoms):
                    raise NotGeneric(
                        f"needs the sign of {factor} for a token x of the rest: not a linear "
                        "homogeneous form in (p_x, q_x), so tokens of one class may disagree")
                atom, s = canonical(factor)
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
                    feasible = cone_signs(facts, atom)
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


def cone_signs(facts: dict, form):
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
            value = num_sign(const)
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

