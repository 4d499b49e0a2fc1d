"""The method-free check of a certificate's arithmetic, and the walk over a whole certificate.

:func:`check_paths` recomputes one path certificate's products, sums, law, acceptance and
claim from its recorded branches; :func:`examine` walks a certificate of any kind (paths, a
claim's parts, a symbolic certificate's witnesses, a generic part), handing each path
certificate to the replay its caller gave and each part it cannot check itself to the
checker its caller gave.
"""

from fractions import Fraction

from .reading import load_certificate, short_repr
from .report import (KIND_CLAIM, KIND_GENERIC, KIND_PATHS, KIND_SYMBOLIC, MAX_PATHS,
                     CertificateError, Deadline, OutOfTime, Report, Unreplayable)
from .schema import (MAX_K, expect_integer, expect_keys, expect_list, expect_text,
                     is_sequence, kind_of, path_numbers, path_schema)

__all__ = ["check_paths", "examine", "check_certificate"]

# -- the method-free check ----------------------------------------------------------------
def check_paths(cert, what="certificate", max_paths=MAX_PATHS, deadline=None):
    """The method-free check of one path certificate: schema, products, sums, law,
    acceptance, claim.  Returns a list of problems; raises :class:`CertificateError` off the
    schema."""
    deadline = deadline or Deadline()
    tables, paths = path_schema(cert, what)
    if len(paths) > max_paths:
        raise CertificateError(f"{what}: {len(paths)} paths, more than the budget of "
                               f"{max_paths} (--max-paths to allow more)")
    sequence = is_sequence(cert)
    target = tables["target"]
    law = {lab: Fraction(0) for lab in target}
    problems = []
    total = in_drafts = accepted = Fraction(0)
    any_drafts = False
    seen = set()
    for number, path in enumerate(paths):
        deadline.check()
        branches, recorded, choices = path_numbers(path, number, sequence, what)
        product = Fraction(1)
        for prob in branches:
            if not 0 < prob <= 1:
                problems.append(f"path {number}: branch probability {prob} is not in (0, 1]")
            product *= prob
        if product != recorded:
            problems.append(f"path {number}: branches multiply to {product}, "
                            f"recorded {recorded}")
        if choices is not None:
            chosen = Fraction(1)
            for index, alternatives in choices:
                if sum(alternatives) != 1:
                    problems.append(f"path {number}: a branching point's alternatives sum to "
                                    f"{sum(alternatives)}, not 1")
                if any(a < 0 for a in alternatives):
                    problems.append(f"path {number}: a negative alternative")
                if not 0 <= index < len(alternatives):
                    problems.append(f"path {number}: choice {index} is not an alternative")
                    continue
                chosen *= alternatives[index]
            if chosen != recorded:
                problems.append(f"path {number}: the chosen alternatives multiply to {chosen}, "
                                f"recorded {recorded}")
            # a branch is the record of one choice (the steps with one alternative are
            # neither): the same number, each the probability of the alternative taken
            taken = [alternatives[index] if 0 <= index < len(alternatives) else None
                     for index, alternatives in choices]
            if taken != branches:
                problems.append(f"path {number}: its {len(branches)} branches are not its "
                                f"{len(choices)} choices' alternatives taken, in order")
            key = tuple(index for index, _ in choices)
            if key in seen:
                problems.append(f"path {number}: the same choices as an earlier path")
            seen.add(key)
        output = path["output"]
        if output not in law:
            problems.append(f"path {number}: output {short_repr(output)} is not a token of "
                            "the target")
            continue
        law[output] += product
        total += product
        if path["drafts"]:
            any_drafts = True
            if output in path["drafts"]:
                in_drafts += product
        if path.get("accepted"):
            accepted += product
        if len(problems) > 20:
            problems.append("... (stopped after 20 problems)")
            return problems
    if total != 1:
        problems.append(f"the paths sum to {total}, not 1")
    lossless = all(law[lab] == target[lab] for lab in target)
    if cert["claim"] == "lossless" and not lossless:
        for lab in target:
            if law[lab] != target[lab]:
                problems.append(f"token {lab}: paths give {law[lab]}, target {target[lab]}")
    elif cert["claim"] == "law" and lossless:
        problems.append("claim 'law' (lossy) but the paths give the target law exactly")
    if set(tables["law"]) != set(law):
        problems.append("the certificate's law names other tokens than the target")
    else:
        for lab, value in tables["law"].items():
            if law[lab] != value:
                problems.append(f"token {lab}: paths give {law[lab]}, certificate says {value}")
    for field in ("target",) + (() if sequence else ("draft",)):
        values = tables[field].values()
        if any(v < 0 for v in values) or sum(values) != 1:
            problems.append(f"the {field} is not a distribution (sums to {sum(values)})")
    if not sequence:
        acceptance = in_drafts if any_drafts else accepted
        if tables["acceptance"] != acceptance:
            problems.append(f"acceptance: paths give {acceptance}, certificate says "
                            f"{tables['acceptance']}")
    return problems


# -- whole certificates -------------------------------------------------------------------
_CLAIM_REQUIRED = ("kind", "parts")
#: What every claim certificate records beside its parts; a claim may record more data (its
#: derivations, figures): those are listed as not part of the check.
_CLAIM_OPTIONAL = ("claim", "statement", "corpus_run", "verdict")
_SYMBOLIC = ("kind", "version", "statement", "method", "n", "k", "positive_entries_assumed",
             "infeasible_cases", "cases")
_SYMBOLIC_CASE = ("conditions", "verdict", "law", "acceptance", "witnesses", "note")


def examine(cert, resolve=None, replay=True, max_paths=MAX_PATHS, deadline=None,
            generic=None, symbolic=None) -> Report:
    """Check a certificate (a dict, or the path of a JSON file) and say what was found.

    ``resolve(cert)`` returns, for one path certificate, a function ``replay(deadline)`` that
    replays its paths (a list of problems), or a string saying why it cannot; ``None``: no
    replay at all.  ``replay=False`` asks for the method-free check only.  ``generic(part,
    deadline)`` checks a part of kind ``exactspec-generic-certificate`` (a :class:`Report`);
    without it such a part is not checked.  ``symbolic(part, deadline)`` derives a symbolic
    certificate's cases again through its method and compares them (a :class:`Report`);
    without it its witnesses are checked, its cases not (not checked).  Raises
    :class:`CertificateError` for input off the schema.
    """
    deadline = deadline if isinstance(deadline, Deadline) else Deadline(deadline)
    if isinstance(cert, str):
        cert = load_certificate(cert)
    report = Report()
    state = {"paths": 0}

    def one(part, what, prefix):
        found = check_paths(part, what, max_paths - state["paths"], deadline)
        state["paths"] += len(part["paths"])
        report.problems += [prefix + p for p in found]
        if found or not replay:
            return
        if is_sequence(part) and part["version"] == 1:
            report.unchecked.append(prefix + "a sequence certificate of version 1 records no "
                                    "models to replay its verifier with (--no-replay: the "
                                    "paths only)")
            return
        how = resolve(part) if resolve is not None else "no replay available"
        if isinstance(how, str):
            report.unchecked.append(f"{prefix}not replayed: {how}")
            return
        try:
            report.problems += [prefix + p for p in how(deadline)]
        except Unreplayable as err:
            report.unchecked.append(f"{prefix}not replayed: {err}")

    def walk(obj, what, prefix, top):
        kind = kind_of(obj, what)
        if kind == KIND_PATHS:
            one(obj, what, prefix)
        elif kind == KIND_CLAIM and top:
            expect_keys(obj, what, _CLAIM_REQUIRED, set(obj) - {"kind", "parts"})
            data = sorted(set(obj) - set(_CLAIM_REQUIRED) - set(_CLAIM_OPTIONAL))
            if data:
                report.notes.append("the claim's own data (" + ", ".join(
                    short_repr(k) for k in data[:8]) + ") are not part of the check: only its "
                    "parts are")
            report.notes.append("a claim certificate: its parts are checked, not that they "
                                "make the claim's statement")
            parts = expect_list(obj["parts"], f"{what}: parts")
            if not parts:
                name, statement = obj.get("claim"), obj.get("statement")
                named = (f"the claim {short_repr(name)}" if isinstance(name, str)
                         else "the claim")
                said = (f": nothing here checks its statement ({short_repr(statement, 200)})"
                        if isinstance(statement, str) else "")
                rerun = (f"; exactspec prove {name} derives it again"
                         if isinstance(name, str) and name.replace("-", "").isalnum() else "")
                report.unchecked.append(f"{named} records no path certificate, no paths to "
                                        f"check{said}; its derivations are data, not a "
                                        f"certificate{rerun}")
            for number, part in enumerate(parts):
                walk(part, f"part {number}", f"part {number}: ", False)
        elif kind == KIND_SYMBOLIC:
            expect_keys(obj, what, _SYMBOLIC, ("target_law",))
            method = expect_text(obj["method"], f"{what}: method")
            k = expect_integer(obj["k"], f"{what}: k", 1, MAX_K)
            for number, case in enumerate(expect_list(obj["cases"], f"{what}: cases")):
                expect_keys(case, f"{what}: case {number}", _SYMBOLIC_CASE)
                for w, point in enumerate(expect_list(case["witnesses"], f"{what}: witnesses")):
                    expect_keys(point, f"{what}: case {number} witness {w}", ("point",
                                                                      "certificate"))
                    inner = point["certificate"]
                    if kind_of(inner, what) != KIND_PATHS or is_sequence(inner):
                        raise CertificateError(f"{what}: case {number}: a witness is a path "
                                               "certificate")
                    # the witness's own method and k, or (as writers before version 2 of
                    # this check wrote them) none and 1: the certificate's method and k
                    legacy = inner["method"] == "" and inner["k"] == 1
                    if not legacy and (inner["method"] != method or inner["k"] != k):
                        report.problems.append(
                            f"{prefix}case {number}: a witness names method "
                            f"{short_repr(inner['method'])}, k = {inner['k']}; "
                            "the certificate "
                            f"{short_repr(method)}, k = {k}")
                        continue
                    one(dict(inner, method=method, k=k), what, f"{prefix}case {number}: ")
            if not obj["cases"]:
                report.unchecked.append(f"{prefix}a symbolic certificate without cases")
            elif replay and symbolic is None:
                report.unchecked.append(f"{prefix}the symbolic cases (conditions, laws, "
                                        "verdicts) are not derived again here: only their "
                                        "witnesses are checked")
            elif replay:
                inner = symbolic(obj, deadline)
                report.problems += [prefix + p for p in inner.problems]
                report.unchecked += [prefix + p for p in inner.unchecked]
        elif kind == KIND_GENERIC:
            if generic is None:
                report.unchecked.append(f"{prefix}a proof for every vocabulary size: check "
                                        "it with python -m exactspec.generic_checker")
                return
            inner = generic(obj, deadline)
            report.problems += [prefix + p for p in inner.problems]
            report.unchecked += [prefix + p for p in inner.unchecked]
        else:
            raise CertificateError(f"{what}: unknown certificate kind {short_repr(kind)}")

    try:
        walk(cert, "certificate", "", True)
    except OutOfTime as err:
        report.unchecked.append(str(err))
    return report


def check_certificate(cert, replay=True, resolve=None, **budgets):
    """Re-verify a certificate (a dict, or the path of a JSON file); a list of problems, the
    empty list when nothing is wrong.

    Parts that could not be checked (not replayed, out of time) are not problems: they are
    in :func:`examine`'s ``unchecked`` (use it, or :mod:`exactspec.replay`, to tell OK from
    not checked).  ``resolve`` as in :func:`examine`; without it no path is replayed.
    Input off the schema is one problem (``bad input: ...``).
    """
    try:
        return examine(cert, resolve, replay, **budgets).problems
    except CertificateError as err:
        return [f"bad input: {err}"]

