"""A generic proof's closed forms on a concrete instance, from the proof or its certificate.

The splits that led to a case (its ``path``: aggregate facts, emptiness of a class, a class
split on the sign of a per-token form) are replayed on the tokens of a concrete vocabulary
(:func:`_replay`); the first case whose splits hold gives ``law(t)`` and the acceptance, its
closed forms evaluated at the instance's aggregates.  :func:`certificate_law_at` reads the
cases from a certificate's JSON alone; :meth:`GenericProof.law_at
<exactspec.engine.generic.interpreter.GenericProof.law_at>` reads them from the proof.
"""

from __future__ import annotations

from fractions import Fraction

import sympy

from ...core.errors import InvalidInput
from ..symbolic import num_sign
from .cases import MARK, agg_symbols
from .values import KAPPA, PI

__all__ = ["certificate_law_at", "evaluate"]


def evaluate(proof, p, q, t):
    """Find the case of ``proof`` (a :class:`~.interpreter.GenericProof`) holding the
    instance ``(p, q)`` with ``t`` distinguished and evaluate its closed forms there."""
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
            P, Q = agg_symbols(cname)
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
    ``Fraction`` values; the same values as :meth:`~.interpreter.GenericProof.law_at` on the
    proof it was written from, read from the file alone.

    >>> from exactspec import Dist
    >>> from exactspec.claims.generic import generic_certificate
    >>> from exactspec.methods.naive import naive
    >>> from exactspec.engine.generic import prove_generic
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
                swap[symbol] = agg_symbols(label[2:])[label[0] == "Q"]
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
            P, Q = agg_symbols(cname)
            values[P] = sympy.Rational(str(sum((p[x] for x in tokens), Fraction(0))))
            values[Q] = sympy.Rational(str(sum((q[x] for x in tokens), Fraction(0))))
        if kind == "aggregate":
            atom = step[1]
            if num_sign(atom.xreplace(values)) != step[2]:
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
                by_sign.setdefault(num_sign(v), []).append(x)
            if not set(by_sign) <= set(signs):
                return None
            del groups[cname]
            for s in signs:
                groups[f"{cname}{MARK[s]}"] = by_sign.get(s, [])
    return groups
