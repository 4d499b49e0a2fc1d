"""A case's closed forms: the law, acceptance and path total a run built, judged exactly.

:func:`zero_on_case` tests ``law - target`` (and the acceptance, and the total) for zero on
the case (abbreviations eliminated in a polynomial ring, linear equalities substituted,
nonlinear ones reduced by a Groebner basis, :func:`_vanishes`); :func:`judge` writes the
case's :class:`GenericCaseResult` with its verdict, after checking the closed forms against
exact enumeration of the method's paths on concrete vocabularies at the case's witnesses
(:func:`_check_witness`: one token per class, then two proportional tokens per class).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import sympy

from ..exact import enumerate_paths
from ..symbolic import equality_solution, simplified_under, as_sympy
from .values import NotGeneric

__all__ = ["GenericCaseResult", "judge", "ring_fraction", "zero_on_case"]


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



def _explicit_solution(inner):
    eqs = list(inner.base_equalities) + [a for a, s in inner.facts.items()
                                         if s == 0 and inner._is_linear(a)]
    solved = sympy.solve(eqs, list(reversed(inner.variables)), dict=True)
    return solved[0] if solved else {}


def judge(case, result, target, want, run, k, count) -> GenericCaseResult:
    """A case's closed forms judged against the target: lossless, lossy or undecided on it."""
    solution = _explicit_solution(case.inner)

    def zero(value):
        return zero_on_case(case, value, solution)

    if any(not zero(result.law[t] - target[t]) for t in case.names) or \
            (want is not None and not zero(result.explicit - want)):
        solution = equality_solution(case.inner)     # adds zeros implied by non-negativity

    def closed(value, expected):
        # a value equal to its expectation on the case *is* the (small) expectation: the
        # large quotient itself is only tested for zero, never cancelled
        if expected is not None and zero(value - expected):
            return simplified_under(case.full(expected), solution)
        return simplified_under(case.full(value), solution)

    law = {t: closed(v, target.get(t)) for t, v in result.law.items()}
    acceptance = closed(result.explicit, want)
    in_drafts = None if result.in_drafts is None or not zero(result.in_drafts - result.explicit) \
        else acceptance
    total = closed(result.total, sympy.Integer(1))
    target = {t: simplified_under(case.full(v), solution) for t, v in target.items()}
    want = None if want is None else simplified_under(case.full(want), solution)
    diffs = {t: simplified_under(law[t] - target[t], solution) for t in case.names}
    if want is not None:
        diffs["acceptance"] = simplified_under(acceptance - want, solution)
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


def zero_on_case(case, expr, solution) -> bool:
    """Whether ``expr``, written with the case's abbreviations, is 0 on the case.

    ``expr = num / den`` in a polynomial ring whose variables include the abbreviations
    ``S_i`` (``den`` is a product of quantities the method divided by, non-zero in the case).
    Each ``S_i`` is then eliminated, last first: with ``S_i = a / b`` (``b != 0``) and
    ``num = sum_j c_j S_i^j`` of degree ``d``, ``b^d num = sum_j c_j a^j b^(d - j)``, which is
    0 exactly when ``num`` is.  What is left is a polynomial in the aggregates; the case's
    linear equalities (``solution``) are substituted and the result is tested for zero, then
    reduced by the case's nonlinear equalities (:func:`_vanishes`).  Every step multiplies by
    a non-zero quantity or uses an identity of the case, so a True answer is a proof."""
    expr = as_sympy(expr).xreplace(solution)
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
    num, _ = ring_fraction(expr, ring, memo)
    for name in reversed(list(definitions)):
        if num == 0:
            return True
        i = gens.index(name)
        if num.degree(i) <= 0:
            continue
        a, b = ring_fraction(definitions[name], ring, memo)
        num = _eliminate(num, i, a, b, ring)
    if num == 0:
        return True
    # the nonlinear equalities of the case (a class where r = q): ideal membership
    equalities = [g for g in (ring_fraction(a, ring, {})[0] for a in nonlinear) if g != 0]
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


def ring_fraction(expr, ring, memo):
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
            a, b = ring_fraction(arg, ring, memo)
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
            a, b = ring_fraction(arg, ring, memo)
            num, den = num * a, den * b
        out = num, den
    elif expr.is_Pow and expr.exp.is_Integer:
        a, b = ring_fraction(expr.base, ring, memo)
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
    from ...core.dist import Dist

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

