"""The symbolic interpreter: run a method over sympy symbols ``p_i``, ``q_i``, case by case.

sympy cannot decide ``p_0 < q_0`` for symbols, so the engine keeps its own bookkeeping.  Values
are wrapped in :class:`SymbolicValue`, whose comparisons ask the current :class:`Case` for the
sign of the difference.  The case factors the difference (numerator and denominator) and looks
each irreducible factor (an *atom*, up to sign) up among its recorded facts.  An atom it does
not know is first tested against the facts by exact linear programming (which of ``< 0``,
``= 0``, ``> 0`` are still feasible); if more than one remains, the run stops with
:class:`NeedCase` and the driver splits the case three ways (or two, for a symbol that is only
known to be non-negative) and reruns each.  Each finished case is then a full exact enumeration
over the symbols; its law is simplified modulo the case's equalities and compared with ``p``.

Verdicts: a case is *proved* when ``law - p`` cancels to 0; *refuted* when it does not and a
rational point of the case (a witness) makes the exact law differ from ``p``; *undecided*
otherwise (for instance a nonlinear case with no witness found).  Undecided is never reported
as refuted.
"""

from __future__ import annotations

import contextvars
import functools
import itertools
import random
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable

import sympy

from ..core.errors import InvalidInput, Undecided
from ..core.signals import EngineSignal
from ..core.lp import Infeasible, Unbounded, linprog_max

__all__ = ["SymbolicValue", "Case", "NeedCase", "CaseResult", "SymbolicProof",
           "symbolic_dists", "prove_symbolic", "CURRENT", "InfeasibleCase", "canonical",
           "equality_solution", "factor_list", "linear_row", "num_sign", "simplified_under",
           "as_sympy"]

CURRENT: contextvars.ContextVar = contextvars.ContextVar("exactspec_case", default=None)

#: Linear feasibility answers, by (variables, base, positive, linear facts, atom, sign).
_FEASIBLE: dict = {}


def as_sympy(x) -> sympy.Expr:
    """A symbolic value, Fraction or number as a sympy expression."""
    if isinstance(x, SymbolicValue):
        return x.expr
    if isinstance(x, Fraction):
        return sympy.Rational(x.numerator, x.denominator)
    return sympy.sympify(x)


class SymbolicValue:
    """A sympy expression whose comparisons are decided by the current case."""

    __slots__ = ("expr",)
    is_symbolic_value = True

    def __init__(self, expr):
        self.expr = as_sympy(expr)

    # arithmetic
    def __add__(self, o): return SymbolicValue(self.expr + as_sympy(o))
    def __radd__(self, o): return SymbolicValue(as_sympy(o) + self.expr)
    def __sub__(self, o): return SymbolicValue(self.expr - as_sympy(o))
    def __rsub__(self, o): return SymbolicValue(as_sympy(o) - self.expr)
    def __mul__(self, o): return SymbolicValue(self.expr * as_sympy(o))
    def __rmul__(self, o): return SymbolicValue(as_sympy(o) * self.expr)
    def __neg__(self): return SymbolicValue(-self.expr)
    def __pos__(self): return self
    def __pow__(self, n): return SymbolicValue(self.expr ** as_sympy(n))

    def __truediv__(self, o):
        if _sign(as_sympy(o)) == 0:
            raise ZeroDivisionError(f"division by {o}, which is 0 in this case")
        return SymbolicValue(self.expr / as_sympy(o))

    def __rtruediv__(self, o):
        if _sign(self.expr) == 0:
            raise ZeroDivisionError(f"division by {self}, which is 0 in this case")
        return SymbolicValue(as_sympy(o) / self.expr)

    # comparisons: decided by the current case
    def __lt__(self, o): return _sign(self.expr - as_sympy(o)) < 0
    def __le__(self, o): return _sign(self.expr - as_sympy(o)) <= 0
    def __gt__(self, o): return _sign(self.expr - as_sympy(o)) > 0
    def __ge__(self, o): return _sign(self.expr - as_sympy(o)) >= 0

    def __eq__(self, o):
        if not isinstance(o, (SymbolicValue, int, Fraction, sympy.Basic)):
            return NotImplemented
        return _sign(self.expr - as_sympy(o)) == 0

    def __ne__(self, o):
        result = self.__eq__(o)
        return result if result is NotImplemented else not result

    def __bool__(self):
        return _sign(self.expr) != 0

    def __hash__(self):
        return hash(self.expr)

    def __float__(self):
        return float(self.expr)

    def __repr__(self):
        return f"SymbolicValue({self.expr})"

    def __str__(self):
        return str(self.expr)


def num_sign(x) -> int:
    """The sign (``-1``, ``0`` or ``1``) of a number."""
    return 1 if bool(x > 0) else (-1 if bool(x < 0) else 0)


def _sign(expr) -> int:
    if expr.is_Number:
        return num_sign(expr)
    case = CURRENT.get()
    if case is None:
        raise Undecided(f"the sign of {expr} is needed outside a symbolic run")
    return case.sign(expr)


class NeedCase(EngineSignal):
    """Raised inside a run when the sign of ``atom`` must be split on."""

    def __init__(self, atom, signs):
        super().__init__(f"need the sign of {atom}")
        self.atom = atom
        self.signs = signs


@functools.lru_cache(maxsize=65536)
def linear_row(expr, variables):
    """Coefficients (Fractions, one per variable) and constant term of a linear ``expr``.

    Cached: a run asks for the same atoms' rows in every case.
    """
    terms = sympy.Poly(expr, *variables).as_dict()
    n = len(variables)
    coeffs = [Fraction(0)] * n
    const = Fraction(0)
    for monomial, c in terms.items():
        value = Fraction(int(c.p), int(c.q))
        if sum(monomial) == 0:
            const = value
        else:
            coeffs[monomial.index(1)] = value
    return tuple(coeffs), const


@functools.lru_cache(maxsize=65536)
def _is_linear_in(expr, variables) -> bool:
    try:
        return sympy.Poly(expr, *variables).total_degree() <= 1
    except sympy.PolynomialError:
        return False


@functools.lru_cache(maxsize=65536)
def _sign_atoms(expr):
    """The numerator and denominator of ``expr``, each as ``(sign of its constant factor,
    [(atom, s, m)])`` with ``poly = c * prod((s * atom) ** m)`` and every atom canonical.

    Cached: the factorisation does not depend on the case, only the atoms' signs do.
    """
    parts = []
    for poly in sympy.fraction(sympy.together(expr)):
        poly = sympy.expand(poly)
        if poly.is_Number:
            parts.append((num_sign(poly), ()))
            continue
        coeff, factors = sympy.factor_list(poly)
        parts.append((num_sign(coeff),
                      tuple((*canonical(factor), mult) for factor, mult in factors)))
    return tuple(parts)


@functools.lru_cache(maxsize=100_000)
def factor_list(poly):
    """``sympy.factor_list``, remembered (the same polynomials recur in every rerun)."""
    return sympy.factor_list(poly)


@functools.lru_cache(maxsize=100_000)
def canonical(factor):
    """``(atom, s)`` with ``factor = s * atom`` and the atom's leading coefficient positive."""
    expanded = sympy.expand(factor)
    coeff = sympy.Poly(expanded, *sorted(expanded.free_symbols, key=str)).LC()
    if coeff < 0:
        return sympy.expand(-expanded), -1
    return expanded, 1


@dataclass
class Case:
    """A set of sign facts about atoms, over variables that are all non-negative.

    ``facts`` maps an atom (a canonical polynomial) to ``-1``, ``0`` or ``1``.  ``base``
    holds the constraints that are always true (non-negativity, positivity when assumed, sums).
    """

    variables: tuple
    base_equalities: tuple
    positive: frozenset
    facts: dict = field(default_factory=dict)
    deduced: dict = field(default_factory=dict)

    def key(self):
        return tuple(sorted((str(a), s) for a, s in self.facts.items()))

    def with_fact(self, atom, s) -> "Case":
        facts = dict(self.facts)
        facts[atom] = s
        return Case(self.variables, self.base_equalities, self.positive, facts)

    def conditions(self) -> list[str]:
        rel = {-1: "<", 0: "=", 1: ">"}
        return [f"{a} {rel[s]} 0" for a, s in sorted(self.facts.items(), key=lambda t: str(t[0]))]

    # -- sign decisions ------------------------------------------------------------------
    def sign(self, expr) -> int:
        num, den = _sign_atoms(expr)
        return self._factored_sign(*num) * self._factored_sign(*den)

    def _factored_sign(self, result, atoms) -> int:
        for atom, s, mult in atoms:
            s_atom = self._atom_sign(atom)
            if s_atom == 0:
                return 0
            result *= (s * s_atom) ** mult
        return result

    def _poly_sign(self, poly) -> int:
        poly = sympy.expand(poly)
        if poly.is_Number:
            return num_sign(poly)
        coeff, factors = factor_list(poly)
        result = num_sign(coeff)
        for factor, mult in factors:
            atom, s = canonical(factor)
            s_atom = self._atom_sign(atom)
            if s_atom == 0:
                return 0
            result *= (s * s_atom) ** mult
        return result

    def _atom_sign(self, atom) -> int:
        if atom in self.facts:
            return self.facts[atom]
        if atom in self.deduced:
            return self.deduced[atom]
        if atom.is_Symbol and atom in self.positive:
            return 1
        signs = [-1, 0, 1] if not atom.is_Symbol else [0, 1]
        if self._is_linear(atom):
            signs = [s for s in signs if self.feasible_with(atom, s)]
        if not signs:
            raise InfeasibleCase()
        if len(signs) == 1:
            self.deduced[atom] = signs[0]
            return signs[0]
        raise NeedCase(atom, signs)

    def _is_linear(self, expr) -> bool:
        return _is_linear_in(expr, tuple(self.variables))

    # -- linear feasibility (exact LP) ---------------------------------------------------
    def _rows(self, extra=()):
        """LP rows over ``(variables..., t)``: equalities and ``expr >= t`` for strict facts."""
        eq, lb = [], []
        variables = tuple(self.variables)
        def row(expr, t_coeff):
            coeffs, const = linear_row(expr, variables)
            return list(coeffs) + [Fraction(t_coeff)], -const
        for e in self.base_equalities:
            eq.append(row(e, 0))
        for v in self.variables:
            if v in self.positive:
                lb.append(row(v, -1))
        facts = [(a, s) for a, s in self.facts.items() if self._is_linear(a)] + list(extra)
        for atom, s in facts:
            if s == 0:
                eq.append(row(atom, 0))
            else:
                lb.append(row(s * atom, -1))
        return eq, lb

    def _max_slack(self, extra=(), objective=None, slack=None):
        n = len(self.variables)
        eq, lb = self._rows(extra)
        ub = [([Fraction(0)] * n + [Fraction(1)], Fraction(1))]
        if slack is not None:
            eq.append(([Fraction(0)] * n + [Fraction(1)], slack))
        c = ([Fraction(v) for v in objective] + [Fraction(0)]) if objective is not None \
            else [Fraction(0)] * n + [Fraction(1)]
        try:
            _, x = linprog_max(c, eq=eq, ub=ub, lb=lb)
        except Infeasible:
            return None, None
        except Unbounded:
            return Fraction(1), None
        return x[-1], dict(zip(self.variables, x[:-1]))

    def feasible_with(self, atom=None, s=None) -> bool:
        """Is there a point where every linear fact (and ``sign(atom) = s``) holds strictly?

        Answers are cached by the linear facts: a run asks the same questions in every case
        that shares them.
        """
        key = (tuple(self.variables), self.base_equalities, self.positive,
               frozenset((a, v) for a, v in self.facts.items() if self._is_linear(a)),
               atom, s)
        known = _FEASIBLE.get(key)
        if known is None:
            extra = [] if atom is None else [(atom, s)]
            best, _ = self._max_slack(extra)
            known = _FEASIBLE[key] = best is not None and best > 0
            if len(_FEASIBLE) > 200_000:
                _FEASIBLE.clear()
        return known

    def witnesses(self, count: int = 2, seed: int = 0) -> list[dict]:
        """Rational points satisfying every fact of the case strictly (may be fewer)."""
        rng = random.Random(seed)
        best, centre = self._max_slack()
        if best is None or best <= 0 or centre is None:
            return []
        candidates = [centre]
        for _ in range(4 * count):
            objective = [rng.randint(-5, 5) for _ in self.variables]
            _, corner = self._max_slack(objective=objective, slack=best / 2)
            if corner is None:
                continue
            w = Fraction(rng.randint(1, 9), 10)
            candidates.append({v: w * corner[v] + (1 - w) * centre[v] for v in self.variables})
        points = []
        for point in candidates:
            values = {v: sympy.Rational(point[v].numerator, point[v].denominator)
                      for v in self.variables}
            if self._holds_at(values) and values not in points:
                points.append(values)
            if len(points) >= count:
                break
        return points

    def _holds_at(self, values) -> bool:
        for atom, s in self.facts.items():
            if num_sign(atom.xreplace(values)) != s:
                return False
        for v in self.variables:
            if values[v] < 0 or (v in self.positive and values[v] == 0):
                return False
        return all(e.xreplace(values) == 0 for e in self.base_equalities)


class InfeasibleCase(EngineSignal):
    """The signal that a case's facts have no solution: the branch is dropped."""


def symbolic_dists(n: int, *, labels=None, positive: bool = True):
    """Symbolic ``p`` and ``q`` on ``n`` tokens, with their variables and sum constraints."""
    from ..core.dist import Dist

    ps = sympy.symbols(f"p0:{n}", nonnegative=True)
    qs = sympy.symbols(f"q0:{n}", nonnegative=True)
    labs = tuple(range(n)) if labels is None else tuple(labels)
    p = Dist([SymbolicValue(v) for v in ps], labs, check=False, name="p")
    q = Dist([SymbolicValue(v) for v in qs], labs, check=False, name="q")
    equalities = (sum(ps) - 1, sum(qs) - 1)
    positives = frozenset(ps + qs) if positive else frozenset()
    return p, q, ps + qs, equalities, positives


@dataclass
class CaseResult:
    """One case: its conditions, law, verdict (``proved``/``refuted``/``undecided``) and
    the witness points used to re-check it exactly."""

    conditions: list
    law: dict
    verdict: str
    acceptance: Any
    witnesses: list
    note: str = ""


@dataclass
class SymbolicProof:
    """The verdict over every case: ``proved`` only when every feasible case is proved."""

    method: str
    n: int
    k: int
    positive: bool
    cases: list
    infeasible: int
    #: The law each case is compared with, by token (``None``: ``p``).
    target: dict | None = None

    @property
    def verdict(self) -> str:
        return overall_verdict(self.cases)


def overall_verdict(cases) -> str:
    """``refuted`` if a case is refuted, else ``undecided`` if one is, else ``proved``."""
    verdicts = {c.verdict for c in cases}
    if "refuted" in verdicts:
        return "refuted"
    if "undecided" in verdicts:
        return "undecided"
    return "proved"


def simplified_under(expr, solution):
    """``expr`` with ``solution`` substituted, as one cancelled fraction."""
    return sympy.cancel(sympy.together(expr.xreplace(solution)))


def equality_solution(case: Case):
    """A solution of the case's equalities (its own and those implied by non-negativity)."""
    eqs = list(case.base_equalities) + [a for a, s in case.facts.items()
                                        if s == 0 and case._is_linear(a)]
    # equalities implied by non-negativity (e.g. p1 + p2 = 0 forces p1 = p2 = 0)
    eqs += [v for v in case.variables
            if v not in case.positive and case.facts.get(v) != 0 and not case.feasible_with(v, 1)]
    if not eqs:
        return {}
    solved = sympy.solve(eqs, list(reversed(case.variables)), dict=True)
    return solved[0] if solved else {}


def prove_symbolic(method: Callable, n: int, k: int = 1, *, positive: bool = True,
                   witnesses: int = 2, max_cases: int = 5000, name: str = "method",
                   labels=None, expected_law: Callable | None = None,
                   expected_acceptance: Callable | None = None) -> SymbolicProof:
    """Prove ``method`` lossless for every ``p``, ``q`` on ``n`` tokens, case by case.

    ``positive=True`` assumes every ``p_i, q_i > 0``; ``False`` also splits on zero entries.
    ``expected_law(p, q, k)`` (default ``p``) and ``expected_acceptance(p, q, k)`` are
    evaluated inside each case, so they may compare values (``min``, ``max``).
    Each case's law is re-checked at rational witness points by the exact engine.

    >>> from exactspec.methods.sps import sps
    >>> proof = prove_symbolic(sps, 2)
    >>> proof.verdict, len(proof.cases)
    ('proved', 3)
    """
    from ..core.dist import Dist
    from .exact import enumerate_paths

    p, q, variables, equalities, positives = symbolic_dists(n, labels=labels, positive=positive)
    pending = [Case(variables, equalities, positives)]
    done: list[CaseResult] = []
    infeasible = 0
    seen = set()
    while pending:
        case = pending.pop()
        if case.key() in seen:
            continue
        seen.add(case.key())
        if len(seen) > max_cases:
            raise InvalidInput(f"more than {max_cases} symbolic cases: too large to prove")
        token = CURRENT.set(case)
        failed = None
        try:
            result = enumerate_paths(method, p, q, k, max_paths=None)
            target = expected_law(p, q, k) if expected_law else p
            want = expected_acceptance(p, q, k) if expected_acceptance else None
        except NeedCase as need:
            pending.extend(case.with_fact(need.atom, s) for s in need.signs)
            continue
        except InfeasibleCase:
            infeasible += 1
            continue
        except (InvalidInput, ZeroDivisionError) as error:
            failed = error
        finally:
            CURRENT.reset(token)
        if not case.feasible_with():
            infeasible += 1
            continue
        if failed is not None:
            # the method stopped in a case the linear pruning cannot rule out (RRS's residual
            # is empty after a rejection where r(x) < q(x): infeasible, but only through the
            # nonlinear normaliser): not a proof, and not a crash.  If it also fails on the
            # case's rational witnesses, the error is the method's own: raised as it is.
            for point in case.witnesses(witnesses):
                pd, qd = _point_dists(point, p, q)
                enumerate_paths(method, pd, qd, k, max_paths=None)
            done.append(CaseResult(case.conditions(), {}, "undecided", None, [],
                                   "a case the linear pruning cannot rule out ends in an "
                                   f"error of the method: {failed}"))
            continue
        done.append(_judge(case, result, p, q, k, method, witnesses, target, want))
    shown = None
    if expected_law is not None:                 # the law the cases are compared with
        try:
            target = expected_law(p, q, k)
            shown = {lab: sympy.sympify(as_sympy(target[lab])) for lab in p.labels}
        except (Undecided, NeedCase, InfeasibleCase, InvalidInput, TypeError):
            shown = None                         # one law per case only: not recorded
    return SymbolicProof(getattr(method, "__name__", name), n, k, positive, done, infeasible,
                         shown)


def _point_dists(point, p, q):
    """The exact ``Dist``\\ s of the symbolic ``p``, ``q`` at a rational point."""
    from ..core.dist import Dist

    pv = [Fraction(str(as_sympy(v).xreplace(point))) for v in p.probs]
    qv = [Fraction(str(as_sympy(v).xreplace(point))) for v in q.probs]
    return Dist(pv, p.labels), Dist(qv, q.labels)


def _judge(case, result, p, q, k, method, count, target, want):
    from .exact import enumerate_paths

    solution = equality_solution(case)
    law = {lab: simplified_under(as_sympy(v), solution) for lab, v in result.law.items()}
    acceptance = simplified_under(as_sympy(result.acceptance), solution)
    diffs = [simplified_under(law[lab] - as_sympy(target[lab]), solution) for lab in p.labels]
    if want is not None:
        diffs.append(simplified_under(acceptance - as_sympy(want), solution))
    points = case.witnesses(count)
    checked = []
    exact_ok = True
    for point in points:
        pd, qd = _point_dists(point, p, q)
        exact = enumerate_paths(method, pd, qd, k, keep_paths=True, max_paths=None)
        symbolic_at = {lab: law[lab].xreplace(point) for lab in p.labels}
        agree = all(sympy.Rational(str(exact.law[lab])) == symbolic_at[lab] for lab in p.labels)
        agree = agree and sympy.Rational(str(exact.acceptance)) == acceptance.xreplace(point)
        expected_at = [as_sympy(target[lab]).xreplace(point) for lab in p.labels]
        if not agree:
            exact_ok = False
        differs = any(sympy.Rational(str(exact.law[lab])) != e
                      for lab, e in zip(p.labels, expected_at))
        checked.append({"point": {str(v): str(val) for v, val in point.items()},
                        "p": pd, "q": qd, "enumeration": exact, "agrees": agree,
                        "differs": differs})
    if not exact_ok:
        verdict, note = "undecided", "the symbolic law disagrees with the exact engine at a witness"
    elif all(d == 0 for d in diffs):
        verdict, note = "proved", ""
    elif any(c["differs"] for c in checked):
        verdict, note = "refuted", "the law differs from p at a witness point"
    else:
        verdict, note = "undecided", "law - p did not cancel and no witness shows a difference"
    return CaseResult(case.conditions(), law, verdict, acceptance, checked, note)
