"""A second, small checker for the certificates of proofs for every vocabulary size.

It uses sympy, the exact rational simplex (:mod:`exactspec.core.lp`) and the path checker
(:mod:`exactspec.checker`) only, never the engine.  A
certificate (``kind: exactspec-generic-certificate``) lists every case of the proof as the
sequence of splits that leads to it, the case's conditions, its closed-form law at the
distinguished token, its target, and witness points with path certificates.  The checker
verifies, independently of how the engine found them:

1. the case tree is complete: at every split every outcome is present (the three signs of an
   aggregate quantity; a class empty or not), as a judged case or as an infeasible leaf, and a
   class split into sub-classes leaves out only signs no token of the class can have;
2. every infeasible leaf is infeasible: its linear conditions (with the sums of ``p`` and of
   ``q`` equal to 1, every variable non-negative, and the class facts summed over each class,
   ``s * form(P_c, Q_c) >= 0``) have no point where the strict ones hold strictly (sympy's
   exact simplex);
3. every proved case's ``law - target`` (and acceptance, when stated) is 0 after substituting
   the case's equalities, solved here by sympy;
4. every witness's path certificate checks, and the path law at the distinguished token equals
   the case's closed form at the witness point (which ties the formula to exact enumeration);
   in a refuted case, a witness's path law differs from the target;
5. each proved case's path sums, as the run built them (named sums ``_S1``, ``_S2`` with their
   definitions), equal the target on the whole case: the names are substituted back, the
   case's linear equalities too, and the numerator over a common denominator is the zero
   polynomial or lies in the ideal of the case's nonlinear equalities (the engine decides the
   same question another way, by eliminating the names one at a time).

Not re-derived here: the signs of the individual entries a balance identity sums (facts of the
parent case), and that the path sums were built from the method's paths (tied to the method
only at the witnesses, by exact enumeration).

``python -m exactspec.generic_checker CERT.json`` prints ``CERTIFICATE OK`` or the problems.
"""

import json
import sys
from fractions import Fraction

import sympy

from .checker import check_certificate
from .core.lp import Infeasible, linprog_max

__all__ = ["check_generic_certificate"]


def _parse(text, symbols):
    return sympy.sympify(text, locals=symbols)


def _symbols(cert, case):
    names = list(case["variables"]) + ["pi_x", "kappa_x"]
    return {name: sympy.Symbol(name) for name in names}   # no assumptions: lpmax needs
    # its constraints x >= 0 kept, which a nonnegative symbol would turn into True


def _strictly_feasible(variables, equalities, facts, nonnegative=()) -> bool:
    """Is there a point, all variables >= 0, equalities = 0, each fact ``(expr, s)`` with
    ``sign(expr) = s`` strictly, each ``nonnegative`` expression >= 0?  Only linear
    conditions are used (so False is a proof).  The LP is the project's exact rational
    simplex (``core.lp``; sympy 1.14's ``lpmax`` returned points violating constraints)."""
    n = len(variables)

    def row(expr, slack_coeff=0):
        poly = sympy.Poly(sympy.expand(expr), *variables)
        coeffs = [Fraction(str(poly.coeff_monomial(v))) for v in variables]
        return coeffs + [Fraction(slack_coeff)], -Fraction(str(poly.coeff_monomial(1)))

    def linear(expr):
        return sympy.Poly(sympy.expand(expr), *variables).total_degree() <= 1

    # a variable fixed to 0 by a fact is substituted into the others (a nonlinear fact may
    # become linear: q_t (...) - p_t with q_t = 0 is -p_t)
    zeros = {e: 0 for e, s in facts if s == 0 and e.is_Symbol}
    if zeros:
        facts = [(sympy.expand(e.xreplace(zeros)), s) for e, s in facts]
        nonnegative = [sympy.expand(e.xreplace(zeros)) for e in nonnegative]
        for e, s in facts:
            if e.is_Number and int(bool(e > 0)) - int(bool(e < 0)) != s:
                return False
        facts = [(e, s) for e, s in facts if not e.is_Number] + [(v, 0) for v in zeros]
    eq = [row(e) for e in equalities if linear(e)]
    lb = [row(e) for e in nonnegative if linear(e)]
    for expr, s in facts:
        if not linear(expr):
            continue
        if s == 0:
            eq.append(row(expr))
        else:
            lb.append(row(s * expr, -1))
    ub = [([Fraction(0)] * n + [Fraction(1)], Fraction(1))]
    try:
        best, _ = linprog_max([Fraction(0)] * n + [Fraction(1)], eq=eq, ub=ub, lb=lb)
    except Infeasible:
        return False
    return best > 0


_MARKS = {"m": -1, "z": 0, "p": 1}


def _class_facts(path, name):
    """The facts of class ``name`` at the end of ``path``: a sub-class's name is its parent's
    name followed by one mark per split (``m``, ``z``, ``p`` for ``<``, ``=``, ``>``)."""
    facts = []
    for step in path:
        if step[0] == "class" and name.startswith(step[1]) and len(name) > len(step[1]):
            facts.append((step[2], _MARKS[name[len(step[1])]]))
    return facts


def _token_can(facts, atom, sign) -> bool:
    """Can a token (pi_x, kappa_x) >= 0, not both 0, meet the numeric facts and
    ``sign(atom) = sign``?  Facts with symbolic coefficients are left out (so False is a
    proof)."""
    pi, kappa = sympy.Symbol("pi_x"), sympy.Symbol("kappa_x")
    table = {"pi_x": pi, "kappa_x": kappa}
    usable = []
    for text, s in list(facts) + [(atom, sign)]:
        expr = sympy.sympify(text, locals=table)
        if expr.free_symbols <= {pi, kappa}:
            usable.append((expr, s))
        elif (text, s) == (atom, sign):
            return True           # a symbolic form: every sign is possible as far as we know
    return _strictly_feasible([pi, kappa], [pi + kappa - 1], usable)


def _tree_problems(cert):
    leaves = [c["path"] for c in cert["cases"]] + [c["path"] for c in cert["infeasible"]]
    children = {}
    for path in leaves:
        for i in range(len(path)):
            children.setdefault(json.dumps(path[:i]), set()).add(json.dumps(path[i]))
    problems = []
    for prefix, steps in children.items():
        steps = [json.loads(s) for s in steps]
        kinds = {s[0] for s in steps}
        if len(kinds) != 1:
            problems.append(f"mixed splits after {prefix}")
            continue
        kind = kinds.pop()
        if kind == "aggregate":
            atoms = {s[1] for s in steps}
            if len(atoms) != 1 or sorted(s[2] for s in steps) != [-1, 0, 1]:
                problems.append(f"an aggregate split after {prefix} misses a sign")
        elif kind == "empty":
            if len({s[1] for s in steps}) != 1 or sorted(s[2] for s in steps) != [False, True]:
                problems.append(f"an emptiness split after {prefix} misses an outcome")
        elif kind == "class":
            if len(steps) != 1:
                problems.append(f"a class split after {prefix} has several children")
                continue
            _, name, atom, signs = steps[0]
            facts = _class_facts(json.loads(prefix), name)
            for sign in {-1, 0, 1} - set(signs):
                if _token_can(facts, atom, sign):
                    problems.append(f"a class split after {prefix} leaves out sign {sign} of "
                                    f"{atom}, which a token of {name} can have")
        else:
            problems.append(f"unknown split {kind!r} after {prefix}")
    return problems


def _equality_substitution(equalities, variables, symbols):
    """The linear equalities solved for some variables (nonlinear ones are used through
    :func:`_in_ideal`, never solved: sympy's polynomial solver can take minutes on them)."""
    linear = [e for e in equalities
              if sympy.Poly(sympy.expand(e), *variables).total_degree() <= 1]
    solved = sympy.solve(linear, list(reversed(variables)), dict=True)
    return solved[0] if solved else {}


def _in_ideal(expr, equalities, solution) -> bool:
    """Whether the numerator of ``expr`` lies in the ideal of the (nonlinear) equalities left
    after ``solution``: then ``expr`` is 0 wherever they hold (a Groebner basis decides)."""
    eqs = [sympy.expand(sympy.fraction(sympy.together(e.xreplace(solution)))[0])
           for e in equalities]
    eqs = [e for e in eqs if e != 0]
    if not eqs:
        return False
    num = sympy.expand(sympy.fraction(sympy.together(expr))[0])
    gens = sorted(set().union(*(e.free_symbols for e in eqs)) | num.free_symbols, key=str)
    return sympy.groebner(eqs, *gens, order="grevlex").reduce(num)[1] == 0


def _balance_problems(leaf, symbols, variables, equalities):
    """Re-check the balance identity that pruned a leaf: the recorded entries sum to 0 over
    the vocabulary once ``sum p = sum q = 1`` are used, the sum is the total of the entries
    of its owners, its numerator is a constant times the split atom, and the leaf's sign of
    that atom (its last split, or one of its facts) is one the identity excludes.  The signs of the individual entries (and of the
    sum's denominator) are facts of the parent case and are not re-derived here."""
    problems = []
    solution = _equality_substitution(equalities, variables, symbols)
    step = leaf["path"][-1]
    for b in leaf["balances"]:
        terms = {owner: (_parse(v, symbols), s) for owner, v, s, _ in b["terms"]}
        total = _parse(b["sum"], symbols)
        if sympy.cancel(sympy.together(sum(v for v, _ in terms.values()).xreplace(solution))):
            problems.append(f"the entries of {b['sum']} do not sum to 0")
        if any(terms[o][1] < 0 for o in b["owners"]) or \
                any(s > 0 and o not in b["owners"] for o, (_, s) in terms.items()):
            problems.append(f"the owners of {b['sum']} are not its non-negative entries")
        if sympy.cancel(sympy.together(total - sum(terms[o][0] for o in b["owners"]))):
            problems.append(f"{b['sum']} is not the sum of its owners' entries")
        if b["strict"] and terms.get(b["strictly_negative"], (0, 0))[1] >= 0:
            problems.append(f"{b['sum']}: no strictly negative entry")
        atom = _parse(b["atom"], symbols)
        ratio = sympy.cancel(sympy.expand(sympy.fraction(sympy.together(total))[0]) / atom)
        if not ratio.is_Number or ratio == 0:
            problems.append(f"the numerator of {b['sum']} is not a multiple of {b['atom']}")
        sign = b["atom_sign"]

        def excludes(s):
            return s != sign if b["strict"] else s * sign < 0

        # the leaf's own split, or a sign of the sum fixed earlier among the leaf's facts
        excluded = (step[0] == "aggregate" and _parse(step[1], symbols) == atom and
                    excludes(step[2])) or \
            any(_parse(a, symbols) == atom and excludes(s) for a, s in leaf.get("facts", []))
        if not excluded:
            problems.append(f"the balance of {b['sum']} does not exclude the split {step}")
    return problems


def _path_sum_problems(case, symbols, variables, solution, equalities):
    """Re-derive a proved case's identities from the path sums as the run built them: each
    named sum (``_S1``, ...) is replaced by its definition, the case's linear equalities are
    substituted, and the numerator over a common denominator (never cancelled) must be the
    zero polynomial, or lie in the ideal of the case's nonlinear equalities."""
    sums = case.get("sums")
    if not sums or not sums.get("law"):
        return ["no path sums recorded"]
    local = dict(symbols)
    for name, _ in sums["names"]:
        local[name] = sympy.Symbol(name)
    names = [(local[n], sympy.sympify(d, locals=local)) for n, d in sums["names"]]
    checks = [(sums["law"][t], case["target"][t], f"law({t})") for t in sums["law"]]
    checks.append((sums["total"], "1", "the path total"))
    if case.get("expected_acceptance") is not None:
        checks.append((sums["acceptance"], case["expected_acceptance"], "the acceptance"))
    problems = []
    for value, target, what in checks:
        expr = sympy.sympify(value, locals=local) - _parse(target, symbols)
        for name, definition in reversed(names):
            expr = expr.xreplace({name: definition})
        num = sympy.fraction(sympy.together(expr.xreplace(solution)))[0]
        gens = sorted(num.free_symbols, key=str)
        if gens and sympy.polys.rings.ring(gens, sympy.QQ)[0](num) == 0:
            continue
        if not gens and num == 0:
            continue
        if not _in_ideal(num, equalities, solution):
            problems.append(f"case {case['path']}: {what} - target does not vanish on the case")
    return problems


def check_generic_certificate(cert, path_sums: bool = True):
    """Re-check a generic certificate (a dict or a JSON file); returns a list of problems.

    ``path_sums=False`` skips re-deriving each proved case's identities from its recorded
    path sums (:func:`_path_sum_problems`, the slow part: about a minute and a half for RRS
    with two drafts); the tree, the leaves and the witnesses are still checked."""
    if isinstance(cert, str):
        with open(cert) as handle:
            cert = json.load(handle)
    if cert.get("kind") == "exactspec-claim-certificate":
        # a claim's certificate (exactspec prove, proofs/*.py): its generic parts
        parts = [part for part in cert.get("parts", [])
                 if isinstance(part, dict) and part.get("kind") == "exactspec-generic-certificate"]
        if not parts:
            return ["a claim certificate without a generic part"]
        return [problem for part in parts
                for problem in check_generic_certificate(part, path_sums)]
    if cert.get("kind") != "exactspec-generic-certificate":
        return [f"unknown certificate kind {cert.get('kind')!r}"]
    if cert.get("outside"):
        return []                 # nothing was claimed for every vocabulary size
    problems = _tree_problems(cert)
    for leaf in cert["infeasible"]:
        symbols = _symbols(cert, leaf)
        variables = [symbols[v] for v in leaf["variables"]]
        equalities = [_parse(e, symbols) for e in leaf["equalities"]]
        facts = [(_parse(e, symbols), s) for e, s in leaf["facts"]]
        if leaf.get("token_facts") is not None:
            pi, kappa = symbols["pi_x"], symbols["kappa_x"]
            token = [(_parse(e, symbols), s) for e, s in leaf["token_facts"]]
            if _strictly_feasible([pi, kappa], [pi + kappa - 1], token):
                problems.append(f"leaf {leaf['path']}: a token can satisfy {leaf['token_facts']}")
            continue
        nonnegative = [_parse(e, symbols) for e in leaf.get("nonnegative", [])]
        if leaf.get("balances"):
            problems += [f"leaf {leaf['path']}: {m}" for m in
                         _balance_problems(leaf, symbols, variables, equalities)]
            continue
        if _strictly_feasible(variables, equalities, facts, nonnegative):
            problems.append(f"leaf {leaf['path']}: marked infeasible but its linear conditions "
                            "hold at some point")
    for case in cert["cases"]:
        symbols = _symbols(cert, case)
        variables = [symbols[v] for v in case["variables"]]
        equalities = [_parse(e, symbols) for e in case["equalities"]]
        solution = _equality_substitution(equalities, variables, symbols)
        for t, law_text in case["law"].items():
            law = _parse(law_text, symbols)
            target = _parse(case["target"][t], symbols)
            diff = sympy.cancel(sympy.together((law - target).xreplace(solution)))
            if diff != 0 and _in_ideal(diff, equalities, solution):
                diff = 0
            if case["verdict"] == "proved" and diff != 0:
                problems.append(f"case {case['path']}: law - target = {diff}, not 0")
            for w in case["witnesses"]:
                point = {symbols[k]: sympy.Rational(v) for k, v in w["point"].items()
                         if k in symbols}
                path_cert = w["certificate"]
                problems += [f"case {case['path']} witness: {m}"
                             for m in check_certificate(path_cert)]
                at_t = sum((Fraction(path["probability"]) for path in path_cert["paths"]
                            if path["output"] == t), Fraction(0))
                if sympy.Rational(str(at_t)) != law.xreplace(point):
                    problems.append(f"case {case['path']}: the closed form gives "
                                    f"{law.xreplace(point)} at a witness, the paths {at_t}")
            if case["verdict"] == "refuted":
                if not any(Fraction(w["certificate"]["law"][t]) !=
                           Fraction(w["certificate"]["target"][t])
                           for w in case["witnesses"]):
                    problems.append(f"case {case['path']}: refuted without a witness")
        if path_sums and case["verdict"] == "proved" and case.get("sums") is not None:
            problems += _path_sum_problems(case, symbols, variables, solution, equalities)
        if case["verdict"] == "proved" and case.get("expected_acceptance") is not None:
            diff = sympy.cancel(sympy.together(
                (_parse(case["acceptance"], symbols) -
                 _parse(case["expected_acceptance"], symbols)).xreplace(solution)))
            if diff != 0 and not _in_ideal(diff, equalities, solution):
                problems.append(f"case {case['path']}: acceptance - expected = {diff}")
    return problems


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m exactspec.generic_checker CERTIFICATE.json", file=sys.stderr)
        return 2
    try:
        problems = check_generic_certificate(argv[0])
    except (OSError, ValueError, KeyError, TypeError) as err:
        print(f"error: cannot read certificate {argv[0]}: {err}", file=sys.stderr)
        return 2
    for problem in problems:
        print(problem)
    print("CERTIFICATE OK" if not problems else "CERTIFICATE REJECTED")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
