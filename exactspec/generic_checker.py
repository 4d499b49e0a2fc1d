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

6. the recorded verdict is the one the cases make (refuted over undecided over proved;
   ``outside`` claims nothing and has no case).

Every expression is read by :func:`parse_expression` (integers, names, ``+ - * /``,
parentheses, ``**`` with a small integer exponent) into sympy objects: certificate text is
never evaluated.  Keys follow a fixed schema; witnesses are replayed through the method only
when the caller hands a ``resolve`` (:mod:`exactspec.replay` does, for exactspec's methods).

``python -m exactspec.generic_checker CERT.json`` checks the whole certificate, every part of
a claim's certificate included, exactly as ``python -m exactspec.checker`` does (same options,
same exit codes: 0 OK, 1 rejected, 2 bad input, 4 not checked; see :mod:`exactspec.checker`).
"""

import json
import re
import sys
from fractions import Fraction

import sympy

from .checker import (KIND_CLAIM, KIND_GENERIC, KIND_PATHS, MAX_DIGITS, MAX_K, CertificateError,
                      Deadline, OutOfTime, Report, examine, exact_number, load_certificate,
                      run_command)
from .checker import expect_integer as _integer, expect_keys as _keys, expect_list as _list
from .core.lp import Infeasible, linprog_max

__all__ = ["check_generic_certificate", "examine_generic", "parse_expression"]

_GENERIC = ("kind", "version", "statement", "method", "k", "distinguished", "verdict",
            "outside", "stuck", "cases", "infeasible")
_CASE = ("path", "conditions", "variables", "equalities", "law", "target", "acceptance",
         "expected_acceptance", "identities_used", "verdict", "note", "sums", "witnesses")
_LEAF = ("path", "conditions", "variables", "equalities", "facts", "nonnegative", "balances")
_BALANCE = ("sum", "atom", "atom_sign", "owners", "strict", "strictly_negative", "terms")

#: Limits of one expression: characters, nesting of parentheses, size of an exponent.
MAX_TEXT, MAX_NESTING, MAX_EXPONENT = 200_000, 100, 64
_TOKEN = re.compile(r"\s*(?:(?P<int>[0-9]+)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|"
                    r"(?P<op>\*\*|[-+*/()]))")


def parse_expression(text, symbols=None):
    """A symbolic value of a certificate, built as sympy objects by a small grammar::

        expr   := term (("+" | "-") term)*
        term   := factor (("*" | "/") factor)*
        factor := ("-" | "+") factor | atom ("**" factor)?
        atom   := INTEGER | NAME | "(" expr ")"

    A name is a symbol (the one in ``symbols`` when it is there), an exponent an integer
    of at most :data:`MAX_EXPONENT`; at most :data:`MAX_TEXT` characters, parentheses
    nested :data:`MAX_NESTING` deep, integers of :data:`~exactspec.checker.MAX_DIGITS`
    digits.  Nothing else is read: no function calls, no attributes, no floats; the text
    is never evaluated (sympify is not used).

    >>> parse_expression("-(p_t - q_t)**2/(1 + q_t)")
    -(p_t - q_t)**2/(q_t + 1)
    >>> parse_expression("exec(1)")
    Traceback (most recent call last):
    ...
    exactspec.checker.CertificateError: expression 'exec(1)': unexpected '('
    """
    symbols = symbols or {}
    if not isinstance(text, str):
        raise CertificateError(f"an expression is a string, not {type(text).__name__}")
    shown = repr(text[:12] + "..." if len(text) > 15 else text)
    if len(text) > MAX_TEXT:
        raise CertificateError(f"expression {shown}: longer than {MAX_TEXT} characters")
    tokens = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            if text[position:].strip() == "":
                break
            raise CertificateError(f"expression {shown}: unexpected "
                                   f"{text[position:].lstrip()[:1]!r}")
        position = match.end()
        kind = match.lastgroup
        tokens.append((kind, match.group(kind)))
    tokens.append(("end", ""))
    at = [0]

    def peek():
        return tokens[at[0]]

    def take(expected=None):
        kind, value = tokens[at[0]]
        if expected is not None and value != expected:
            raise CertificateError(f"expression {shown}: unexpected {value or 'end'!r}")
        at[0] += 1
        return kind, value

    def expr(depth):
        if depth > MAX_NESTING:
            raise CertificateError(f"expression {shown}: nested more than {MAX_NESTING} deep")
        terms = [term(depth)]
        while peek()[1] in ("+", "-"):
            _, op = take()
            value = term(depth)
            terms.append(value if op == "+" else -value)
        return sympy.Add(*terms)

    def term(depth):
        value = factor(depth)
        while peek()[1] in ("*", "/"):
            _, op = take()
            other = factor(depth)
            if op == "/":
                if other == 0:
                    raise CertificateError(f"expression {shown}: division by 0")
                other = sympy.Pow(other, -1)
            value = sympy.Mul(value, other)
        return value

    def factor(depth):
        if depth > MAX_NESTING:
            raise CertificateError(f"expression {shown}: nested more than {MAX_NESTING} deep")
        if peek()[1] in ("-", "+"):
            _, op = take()
            value = factor(depth + 1)
            return -value if op == "-" else value
        base = atom(depth)
        if peek()[1] == "**":
            take()
            exponent = factor(depth + 1)
            if not exponent.is_Integer or abs(int(exponent)) > MAX_EXPONENT:
                raise CertificateError(f"expression {shown}: an exponent is an integer of at "
                                       f"most {MAX_EXPONENT}")
            if base == 0 and exponent < 0:
                raise CertificateError(f"expression {shown}: division by 0")
            return sympy.Pow(base, exponent)
        return base

    def atom(depth):
        kind, value = take()
        if kind == "int":
            if len(value) > MAX_DIGITS:
                raise CertificateError(f"expression {shown}: an integer of more than "
                                       f"{MAX_DIGITS} digits")
            return sympy.Integer(int(value))
        if kind == "name":
            if peek()[1] == "(":
                raise CertificateError(f"expression {shown}: unexpected '('")
            found = symbols.get(value)
            return found if found is not None else sympy.Symbol(value)
        if value == "(":
            inner = expr(depth + 1)
            take(")")
            return inner
        raise CertificateError(f"expression {shown}: unexpected {value or 'end'!r}")

    result = expr(0)
    if peek()[0] != "end":
        raise CertificateError(f"expression {shown}: unexpected {peek()[1]!r}")
    return result


def _parse(text, symbols):
    """An expression of the certificate, read by :func:`parse_expression` (never sympify)."""
    return parse_expression(text, symbols)


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
        expr = parse_expression(text, table)
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
    names = [(local[n], parse_expression(d, local)) for n, d in sums["names"]]
    checks = [(sums["law"][t], case["target"][t], f"law({t})") for t in sums["law"]]
    checks.append((sums["total"], "1", "the path total"))
    if case.get("expected_acceptance") is not None:
        checks.append((sums["acceptance"], case["expected_acceptance"], "the acceptance"))
    problems = []
    for value, target, what in checks:
        expr = parse_expression(value, local) - _parse(target, symbols)
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


def _generic_schema(cert, what="generic certificate"):
    """The keys of a proof for every vocabulary size (:class:`CertificateError` off it)."""
    _keys(cert, what, _GENERIC)
    _integer(cert["version"], f"{what}: version", 1, 1)
    _integer(cert["k"], f"{what}: k", 1, MAX_K)
    if cert["verdict"] not in ("proved", "refuted", "undecided", "outside"):
        raise CertificateError(f"{what}: verdict {cert['verdict']!r} is not proved, refuted, "
                               "undecided or outside")
    for number, case in enumerate(_list(cert["cases"], f"{what}: cases")):
        where = f"{what}: case {number}"
        _keys(case, where, _CASE)
        if case["verdict"] not in ("proved", "refuted", "undecided"):
            raise CertificateError(f"{where}: verdict {case['verdict']!r}")
        for field in ("path", "variables", "equalities", "witnesses"):
            _list(case[field], f"{where}: {field}")
        if not all(isinstance(v, str) and v.isidentifier() for v in case["variables"]):
            raise CertificateError(f"{where}: variables are names")
        for field in ("law", "target"):
            if not isinstance(case[field], dict):
                raise CertificateError(f"{where}: {field}: an object expected")
        if case["sums"] is not None:
            _keys(case["sums"], f"{where}: sums", ("law", "acceptance", "total", "names"))
        for w in case["witnesses"]:
            _keys(w, f"{where}: witness", ("point", "certificate"))
            if not isinstance(w["point"], dict):
                raise CertificateError(f"{where}: a witness point: an object expected")
            inner = w["certificate"]
            if not isinstance(inner, dict) or inner.get("kind") != KIND_PATHS or "m" in inner:
                raise CertificateError(f"{where}: a witness's certificate is a path certificate")
            _integer(inner.get("k"), f"{where}: a witness's k", 1, MAX_K)
            if not isinstance(inner.get("method"), str):
                raise CertificateError(f"{where}: a witness's method: a string expected")
    for number, leaf in enumerate(_list(cert["infeasible"], f"{what}: infeasible")):
        where = f"{what}: infeasible leaf {number}"
        _keys(leaf, where, _LEAF, ("token_facts",))
        if not all(isinstance(v, str) and v.isidentifier() for v in leaf["variables"]):
            raise CertificateError(f"{where}: variables are names")
        for b in _list(leaf["balances"], f"{where}: balances"):
            _keys(b, f"{where}: a balance", _BALANCE)


def _verdict_problems(cert):
    """The recorded verdict against the cases: ``outside`` claims nothing (no cases),
    ``undecided`` when stuck, else refuted > undecided > proved over the cases."""
    cases = cert["cases"]
    if cert["outside"] is not None:
        if cert["verdict"] != "outside" or cases or cert["infeasible"]:
            return ["'outside' (nothing claimed) with a verdict or cases"]
        return []
    if cert["verdict"] == "outside":
        return ["verdict 'outside' without the reason"]
    if not cases:
        return ["no case: nothing is proved"]
    verdicts = {c["verdict"] for c in cases}
    expected = "refuted" if "refuted" in verdicts else \
        "undecided" if "undecided" in verdicts or cert["stuck"] is not None else "proved"
    if cert["verdict"] != expected:
        return [f"verdict {cert['verdict']!r}, but the cases make it {expected!r}"]
    return []


def examine_generic(cert, resolve=None, replay=True, path_sums: bool = True,
                    deadline=None) -> Report:
    """Re-check a proof for every vocabulary size: a :class:`~exactspec.checker.Report`.

    ``resolve`` replays the witnesses' path certificates (as in
    :func:`exactspec.checker.examine`; :mod:`exactspec.replay` gives the registry's);
    without it they are checked method-free and reported not checked.  ``path_sums=False``
    skips re-deriving each proved case's identities from its recorded path sums
    (:func:`_path_sum_problems`, the slow part: about a minute and a half for RRS with two
    drafts; the command lines always take it).  Raises
    :class:`~exactspec.checker.CertificateError` off the schema."""
    deadline = deadline if isinstance(deadline, Deadline) else Deadline(deadline)
    report = Report()
    _generic_schema(cert)
    report.problems += _verdict_problems(cert)
    if cert["outside"] is not None or report.problems:
        return report
    methods = {(w["certificate"].get("method"), w["certificate"].get("k"))
               for c in cert["cases"] for w in c["witnesses"]
               if isinstance(w["certificate"], dict)}
    if len(methods) > 1 or any(k != cert["k"] for _, k in methods):
        report.problems.append(f"the witnesses name other methods or k: {sorted(methods)}")
        return report
    try:
        _generic_problems(cert, report, resolve, replay, path_sums, deadline)
    except OutOfTime as err:
        report.unchecked.append(str(err))
    except CertificateError:
        raise
    except Exception as err:  # noqa: BLE001 - a shape or an algebra the writers never make
        raise CertificateError(f"generic certificate: its content cannot be checked "
                               f"({type(err).__name__}: {str(err)[:80]})") from None
    return report


def _generic_problems(cert, report, resolve, replay, path_sums, deadline):
    problems = report.problems
    problems += _tree_problems(cert)
    for leaf in cert["infeasible"]:
        deadline.check()
        symbols = _symbols(cert, leaf)
        variables = [symbols[v] for v in leaf["variables"]]
        equalities = [_parse(e, symbols) for e in leaf["equalities"]]
        facts = [(_parse(e, symbols), _sign(s)) for e, s in leaf["facts"]]
        if leaf.get("token_facts") is not None:
            pi, kappa = symbols["pi_x"], symbols["kappa_x"]
            token = [(_parse(e, symbols), _sign(s)) for e, s in leaf["token_facts"]]
            if _strictly_feasible([pi, kappa], [pi + kappa - 1], token):
                problems.append(f"leaf {leaf['path']}: a token can satisfy {leaf['token_facts']}")
            continue
        nonnegative = [_parse(e, symbols) for e in leaf["nonnegative"]]
        if leaf["balances"]:
            problems += [f"leaf {leaf['path']}: {m}" for m in
                         _balance_problems(leaf, symbols, variables, equalities)]
            continue
        if _strictly_feasible(variables, equalities, facts, nonnegative):
            problems.append(f"leaf {leaf['path']}: marked infeasible but its linear conditions "
                            "hold at some point")
    for case in cert["cases"]:
        deadline.check()
        symbols = _symbols(cert, case)
        variables = [symbols[v] for v in case["variables"]]
        equalities = [_parse(e, symbols) for e in case["equalities"]]
        solution = _equality_substitution(equalities, variables, symbols)
        if set(case["law"]) != set(case["target"]) or not case["law"]:
            problems.append(f"case {case['path']}: the law and the target name other tokens")
            continue
        for w in case["witnesses"]:
            path_cert = w["certificate"]
            inner = examine(path_cert, resolve, replay, deadline=deadline)
            problems += [f"case {case['path']} witness: {m}" for m in inner.problems]
            report.unchecked += [f"case {case['path']} witness: {m}" for m in inner.unchecked]
        for t, law_text in case["law"].items():
            deadline.check()
            law = _parse(law_text, symbols)
            target = _parse(case["target"][t], symbols)
            diff = sympy.cancel(sympy.together((law - target).xreplace(solution)))
            if diff != 0 and _in_ideal(diff, equalities, solution):
                diff = 0
            if case["verdict"] == "proved" and diff != 0:
                problems.append(f"case {case['path']}: law - target = {diff}, not 0")
            for w in case["witnesses"]:
                point = {symbols[k]: _rational(v) for k, v in w["point"].items()
                         if k in symbols}
                path_cert = w["certificate"]
                at_t = sum((exact_number(path["probability"]) for path in path_cert["paths"]
                            if path["output"] == t), Fraction(0))
                if sympy.Rational(at_t.numerator, at_t.denominator) != law.xreplace(point):
                    problems.append(f"case {case['path']}: the closed form gives "
                                    f"{law.xreplace(point)} at a witness, the paths {at_t}")
                # the witness point is the witness's rows at t, the case's target its target
                given = {"p_t": path_cert["target"].get(t), "q_t": path_cert["draft"].get(t)}
                for name, value in given.items():
                    if name in w["point"] and (value is None or
                                               _rational(value) != point[symbols[name]]):
                        problems.append(f"case {case['path']}: a witness point's {name} is "
                                        f"not the witness's row at {t}")
                wanted = path_cert["target"].get(t)
                if wanted is None or target.xreplace(point) != _rational(wanted):
                    problems.append(f"case {case['path']}: the target at a witness is not the "
                                    f"witness's target at {t}")
            if case["verdict"] == "refuted":
                if not any(exact_number(w["certificate"]["law"][t]) !=
                           exact_number(w["certificate"]["target"][t])
                           for w in case["witnesses"]):
                    problems.append(f"case {case['path']}: refuted without a witness")
        if case["verdict"] == "proved" and case["sums"] is None:
            report.unchecked.append(f"case {case['path']}: no path sums recorded")
        if path_sums and case["verdict"] == "proved" and case["sums"] is not None:
            problems += _path_sum_problems(case, symbols, variables, solution, equalities)
        if case["verdict"] == "proved" and case["expected_acceptance"] is not None:
            diff = sympy.cancel(sympy.together(
                (_parse(case["acceptance"], symbols) -
                 _parse(case["expected_acceptance"], symbols)).xreplace(solution)))
            if diff != 0 and not _in_ideal(diff, equalities, solution):
                problems.append(f"case {case['path']}: acceptance - expected = {diff}")


def _sign(value):
    if value not in (-1, 0, 1) or isinstance(value, bool):
        raise CertificateError(f"a sign is -1, 0 or 1, not {value!r}")
    return value


def _rational(value):
    number = exact_number(value, "a witness point")
    return sympy.Rational(number.numerator, number.denominator)


def check_generic_certificate(cert, path_sums: bool = True, resolve=None):
    """Re-check a generic certificate (a dict or a JSON file); returns a list of problems.

    A claim's certificate: its generic parts.  ``resolve`` as in :func:`examine_generic`
    (without it the witnesses are checked method-free).  Unchecked parts are not problems
    here: :func:`examine_generic` (or :mod:`exactspec.replay`) tells them apart."""
    try:
        if isinstance(cert, str):
            cert = load_certificate(cert)
        if isinstance(cert, dict) and cert.get("kind") == KIND_CLAIM:
            parts = [part for part in cert.get("parts", [])
                     if isinstance(part, dict) and part.get("kind") == KIND_GENERIC]
            if not parts:
                return ["a claim certificate without a generic part"]
            return [problem for part in parts
                    for problem in check_generic_certificate(part, path_sums, resolve)]
        if not isinstance(cert, dict) or cert.get("kind") != KIND_GENERIC:
            kind = cert.get("kind") if isinstance(cert, dict) else None
            return [f"unknown certificate kind {kind!r}"]
        return examine_generic(cert, resolve, resolve is not None, path_sums).problems
    except CertificateError as err:
        return [f"bad input: {err}"]


def main(argv=None) -> int:
    """``python -m exactspec.generic_checker``: the whole certificate is checked, every
    part (the command line of :mod:`exactspec.replay`, the same as the path checker's)."""
    argv = sys.argv[1:] if argv is None else argv

    def check(cert, options, deadline):
        def generic(part, deadline):
            return examine_generic(part, None, options["replay"], True, deadline)

        return examine(cert, None, options["replay"], options["max_paths"], deadline,
                       generic=generic)

    return run_command(argv, check)


if __name__ == "__main__":   # the command line: replays through exactspec's registry
    from exactspec.replay import main as _main

    sys.exit(_main())
