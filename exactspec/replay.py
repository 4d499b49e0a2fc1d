"""Certificates replayed through exactspec's methods: the checkers' command lines.

:mod:`exactspec.checker` checks a certificate's arithmetic with its own small code and
replays each path through a method it is *handed*; this module hands it one:

- a method of the registry (:data:`exactspec.methods.METHODS`), named in the certificate by
  its registry name or by its function's ``module:qualname``;
- one of exactspec's own rules that its claims certify (a function ``f(s, p, q[, k])`` of a
  module under :data:`OWN_RULES`: only a module exactspec ships is imported, and only a
  function whose parameters are named ``s, p, q[, k]`` is called);
- a user's method only when the person checking names it on the command line
  (``--trust FILE.py:FUNCTION`` or ``--trust MODULE:FUNCTION``), never because the
  certificate names it.

Anything else is *not checked* (exit 4), never imported.  A float run (``arith``) is
replayed by running the method again in that format with the engine's float emulation and
comparing every path.

A sequence certificate (a whole generation, tokens are ``m``-tuples) records its model pair
and its verifier: one of exactspec's own, rebuilt by name from
:data:`exactspec.gallery.sequence_verifiers.SEQUENCE_VERIFIERS`, or a user's
``file.py:function``, a label that is replayed only with ``--trust``.  The generation is
enumerated again on the recorded model (in its ``arith``, on its ``grid``) and every path,
the target and the law compared with the certificate.

``python -m exactspec.checker CERT.json`` and ``python -m exactspec.generic_checker
CERT.json`` both end here (:func:`main`): exit 0 ``CERTIFICATE OK``, 1 ``CERTIFICATE
REJECTED``, 2 bad input (one line on stderr), 4 ``CERTIFICATE NOT CHECKED``.
"""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path

from .checker import (CertificateError, Deadline, Report, Unreplayable, examine,
                      exact_number, is_sequence, replay_paths, run_command)
from .core.dist import Dist
from .core.errors import InvalidInput, TooLarge
from .core.user_code import import_user_module
from .generic_checker import examine_generic
from .methods import METHODS, load_user_method
from .methods.base import Method

__all__ = ["resolver", "check_certificate", "check", "check_generic_certificate",
           "check_command", "restated_verdict", "main"]

#: Packages whose module-level rules ``f(s, p, q[, k])`` the checkers replay by name (the
#: rules exactspec's claims certify: methods, KEY's selection law, bounds' tight rules,
#: the gallery's bug classes, the claims' own).
OWN_RULES = ("exactspec.methods.", "exactspec.key.", "exactspec.bounds.", "exactspec.gallery.",
             "exactspec.claims.")
_PACKAGE = Path(__file__).resolve().parent


def _function_of(run):
    """The function behind a registered method's ``run`` (the 3-argument wrapper unwrapped)."""
    return getattr(run, "__wrapped__", run)


def _registry_table() -> dict:
    """Reference -> the registered :class:`~exactspec.methods.base.Method` (its contract, its
    ``k`` included, is checked against what a certificate records)."""
    table = {}
    for name, method in METHODS.items():
        table[name] = method
        function = _function_of(method.run)
        module, qualname = getattr(function, "__module__", ""), getattr(function,
                                                                         "__qualname__", "")
        if module and qualname and "<" not in qualname:
            table.setdefault(f"{module}:{qualname}", method)
    return table


def _own_rule(reference: str):
    """One of exactspec's own rules named ``exactspec.x.y:function``: the module must be a
    file exactspec ships under :data:`OWN_RULES`, the object a module-level function whose
    parameters are ``(s, p, q)`` or ``(s, p, q, k)``.  ``None`` otherwise (nothing is
    imported then)."""
    module_name, _, name = reference.partition(":")
    if not module_name.startswith(OWN_RULES) or not name.isidentifier():
        return None
    parts = module_name.split(".")
    if not all(part.isidentifier() for part in parts):
        return None
    relative = Path(*parts[1:])
    if not ((_PACKAGE / relative).with_suffix(".py").is_file()
            or (_PACKAGE / relative / "__init__.py").is_file()):
        return None
    module = import_user_module(reference, module_name)
    function = module.__dict__.get(name)
    if not inspect.isfunction(function) or function.__module__ != module_name:
        return None
    parameters = list(inspect.signature(function).parameters)
    if parameters == ["s", "p", "q"]:            # one draft: k = 1 only
        return Method(reference, lambda s, p, q, k, _f=function: _f(s, p, q), k_values=(1,))
    if parameters == ["s", "p", "q", "k"]:
        return Method(reference, function)
    return None


def _trusted_table(trust) -> dict:
    table = {}
    for reference in trust:
        try:
            method = load_user_method(reference)
        except InvalidInput as err:
            raise CertificateError(f"--trust {reference}: {err}") from None
        table[reference] = method
        where, _, name = reference.rpartition(":")
        if where.endswith(".py") or "/" in where:
            table[f"{os.path.abspath(where)}:{name}"] = method
    return table


def resolver(trust=()):
    """``resolve(cert)`` for :func:`exactspec.checker.examine`: a replay function for the
    registry's methods, exactspec's own rules and the methods in ``trust`` (references the
    person checking gave), else the reason why the certificate's method is not replayed."""
    registry = _registry_table()
    trusted = _trusted_table(trust)

    def lookup(reference):
        if reference in registry:
            return registry[reference], "registry"
        if reference in trusted:
            return trusted[reference], "trusted"
        where, _, name = reference.rpartition(":")
        if where and (where.endswith(".py") or "/" in where):
            method = trusted.get(f"{os.path.abspath(where)}:{name}")
            if method is not None:
                return method, "trusted"
        method = _own_rule(reference) if ":" in reference else None
        return (method, "own") if method is not None else (None, None)

    def resolve(cert):
        if cert.get("kind") == "exactspec-symbolic-certificate":
            return _symbolic_replay(cert, lookup)
        if is_sequence(cert):
            return _sequence_replay(cert, trust)
        reference = cert["method"]
        method, _ = lookup(reference)
        if method is None:
            if not reference:
                return "the certificate names no method"
            if ":" not in reference:
                return (f"method {reference[:120]!r} is not one of exactspec's registered "
                        "methods and names no function to trust (a rule built from data, such "
                        "as an LP's solution, that only the claim itself rebuilds)")
            return (f"method {reference[:120]!r} is not one of exactspec's registered methods "
                    f"(a user's method is replayed only with --trust {reference[:120]})")
        if "arith" in cert:
            return lambda deadline: (_contract_problems(cert, method)
                                     or _float_replay(cert, method, deadline))
        return lambda deadline: (_contract_problems(cert, method)
                                 or replay_paths(cert, _bounded(method.run), _dist, deadline))

    return resolve


def _symbolic_replay(cert, lookup):
    """A symbolic certificate's cases derived again (:func:`exactspec.engine.symbolic.
    prove_symbolic` through the method its ``method`` names, on ``n`` tokens, its ``k``,
    ``positive_entries_assumed``), or why not: ``replay(deadline)`` gives a
    :class:`~exactspec.checker.Report`."""
    reference = cert["method"]
    method, _ = lookup(reference)
    if method is None:
        why = (f"the symbolic cases are not derived again: method {reference[:120]!r} is not "
               "one of exactspec's registered methods"
               + (f" (a user's method only with --trust {reference[:120]})"
                  if ":" in reference else ""))
        return lambda deadline: _report(unchecked=[why])
    return lambda deadline: _derive_cases(cert, method, deadline)


def _report(problems=(), unchecked=()) -> Report:
    report = Report()
    report.problems += list(problems)
    report.unchecked += list(unchecked)
    return report


def _derive_cases(cert, method, deadline) -> Report:
    """Compare every case's conditions, law, acceptance, verdict and witness points with
    the cases derived again.  A recorded ``undecided`` that derives as ``proved`` stands: the
    writer may have asked for an acceptance too (``expected_acceptance``, not recorded), and an
    undecided case claims nothing; every other verdict must be the derived one."""
    import sympy

    from .core.errors import ExactspecError
    from .engine.symbolic import prove_symbolic

    n, k = cert["n"], cert["k"]
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 8:
        raise CertificateError(f"symbolic certificate: n {_short(n)}: 1 to 8 tokens")
    if not isinstance(cert["positive_entries_assumed"], bool):
        raise CertificateError("symbolic certificate: positive_entries_assumed: true or false")
    if method.k_values is not None and k not in method.k_values:
        allowed = ", ".join(str(v) for v in method.k_values)
        return _report([f"k = {k}: the recorded proof is outside the method's contract: "
                        f"{method.name} takes only k = {allowed}, not k = {k}"])
    recorded = cert["cases"]
    count = max((len(_witness_list(case)) for case in recorded), default=0) or 2
    deadline.check()
    expected = _target_law(cert, n)      # the claim's law, when it is not p
    try:
        proof = prove_symbolic(method.run, n, k, positive=cert["positive_entries_assumed"],
                               witnesses=count, name=cert["method"], expected_law=expected)
    except TooLarge as err:
        raise Unreplayable(f"the symbolic cases: {str(err)[:200]}") from None
    except ExactspecError as err:
        return _report([f"the symbolic cases cannot be derived again through "
                        f"{cert['method']}: {str(err)[:200]}"])
    deadline.check()
    problems = []
    if proof.infeasible != cert["infeasible_cases"]:
        problems.append(f"infeasible_cases: {proof.infeasible} derived, recorded "
                        f"{_short(cert['infeasible_cases'])}")
    if len(proof.cases) != len(recorded):
        problems.append(f"cases: {len(proof.cases)} derived, {len(recorded)} recorded")
    for number, (mine, theirs) in enumerate(zip(proof.cases, recorded)):
        where = f"case {number}"
        if list(mine.conditions) != theirs["conditions"]:
            problems.append(f"{where}: conditions {_short(theirs['conditions'])} recorded, "
                            f"{_short(mine.conditions)} derived")
            continue
        symbols = {}
        for value in list(mine.law.values()) + [mine.acceptance]:
            for symbol in getattr(sympy.sympify(value), "free_symbols", ()):
                symbols[str(symbol)] = symbol
        law = {str(lab): value for lab, value in mine.law.items()}
        if not isinstance(theirs["law"], dict) or set(theirs["law"]) != set(law):
            problems.append(f"{where}: the law names other tokens than the derived one")
        else:
            for lab, value in law.items():
                if not _same_expression(theirs["law"][lab], value, symbols):
                    problems.append(f"{where}: law[{lab}] = {_short(theirs['law'][lab])} "
                                    f"recorded, {value} derived")
        if mine.acceptance is not None and not _same_expression(theirs["acceptance"],
                                                                 mine.acceptance, symbols):
            problems.append(f"{where}: acceptance {_short(theirs['acceptance'])} recorded, "
                            f"{mine.acceptance} derived")
        verdict = theirs["verdict"]
        derived = mine.verdict
        if verdict != derived and not (verdict == "undecided" and derived == "proved"):
            problems.append(f"{where}: verdict {_short(verdict)} recorded, {derived} "
                            "derived")
        points = [w["point"] for w in mine.witnesses]
        if [w.get("point") for w in _witness_list(theirs)] != points:
            problems.append(f"{where}: witness points {_short(points)} derived, recorded "
                            f"{_short([w.get('point') for w in _witness_list(theirs)])}")
        if len(problems) > 20:
            problems.append("... (stopped after 20 problems)")
            break
    return _report(problems)


def _target_law(cert, n):
    """``expected_law(p, q, k)`` for a certificate that records the law its cases are
    compared with (``target_law``, read by the checker's grammar over the symbols of ``p`` and
    ``q``), else ``None`` (the law is ``p``)."""
    target = cert.get("target_law")
    if target is None:
        return None
    from .engine.symbolic import symbolic_dists
    from .generic_checker import parse_expression

    p, q, variables, _, _ = symbolic_dists(n, positive=cert["positive_entries_assumed"])
    if not isinstance(target, dict) or set(target) != {str(lab) for lab in p.labels}:
        raise CertificateError("symbolic certificate: target_law must name every token once")
    symbols = {str(v): v for v in variables}
    law = {lab: parse_expression(target[str(lab)], symbols) for lab in p.labels}
    return lambda p, q, k: law


def _witness_list(case) -> list:
    witnesses = case.get("witnesses") if isinstance(case, dict) else None
    return [w for w in witnesses if isinstance(w, dict)] if isinstance(witnesses, list) else []


def _same_expression(text, value, symbols) -> bool:
    """``text`` (a recorded expression, read by the checker's grammar) equals ``value``."""
    import sympy

    from .generic_checker import parse_expression

    if text == str(value):
        return True
    try:
        parsed = parse_expression(text, symbols)
    except CertificateError:
        return False
    return sympy.cancel(sympy.together(parsed - sympy.sympify(value))) == 0


def _contract_problems(cert, method) -> list:
    """What the certificate records against the method's contract (:meth:`Method.check`):
    its ``k`` (``sps`` takes only ``k = 1``; a rule of ``(s, p, q)`` too), the draws
    without replacement its rows allow, a method's own requirements.  A certificate outside
    the contract records a run the method never makes: one problem, the replay not tried."""
    labels = cert["labels"]
    names = [str(lab) for lab in labels]
    try:
        p = Dist([exact_number(cert["target"][n]) for n in names], labels)
        q = Dist([exact_number(cert["draft"][n]) for n in names], labels)
    except InvalidInput:
        return []             # the replay reports rows the method's distributions refuse
    try:
        method.check(p, q, cert["k"])
    except InvalidInput as err:
        return [f"k = {cert['k']}: the recorded run is outside the method's contract: "
                f"{str(err)[:200]}"]
    return []


def _sequence_replay(cert, trust):
    """A sequence certificate's replay, or why there is none: exactspec's own verifier
    rebuilt from the registry (:mod:`exactspec.gallery.sequence_verifiers`), a user's only
    through a function the person checking named with ``--trust``."""
    from .gallery.sequence_verifiers import build_verifier

    name = cert["method"]
    if not cert["user"]:
        try:
            verifier = build_verifier(name, cert["gamma"], cert["parameters"])
        except InvalidInput as err:
            raise CertificateError(str(err)) from None
        return lambda deadline: _replay_generation(cert, verifier, None, deadline)
    reference = _trusted_sequence_reference(name, trust)
    if reference is None:
        return (f"the sequence verifier {name[:120]!r} is a user's, not one of exactspec's: "
                f"it is replayed only when the person checking trusts it "
                f"(--trust {name[:120]})")
    from .sequences.user import trusted_function

    try:
        function = trusted_function(reference, cert["m"])
    except InvalidInput as err:
        raise CertificateError(f"--trust {reference}: {err}") from None
    return lambda deadline: _replay_generation(cert, None, function, deadline)


def _trusted_sequence_reference(name: str, trust):
    """The ``--trust`` reference that names the certificate's user verifier: the same text,
    the same file (as a path from here) and function, or the same file name and function."""
    where, _, function = name.rpartition(":")
    for reference in trust:
        place, _, given = reference.rpartition(":")
        if reference == name:
            return reference
        if given != function or not place.endswith(".py") or not where.endswith(".py"):
            continue
        if os.path.abspath(place) == os.path.abspath(where) or \
                os.path.basename(place) == os.path.basename(where):
            return reference
    return None


def _replay_generation(cert, verifier, function, deadline) -> list:
    """Enumerate the certificate's generation again through exactspec's own code (the
    registered ``verifier``, or the trusted user ``function``) on its recorded model, and
    compare every path, the target and the law with the certificate."""
    from .core.errors import ExactspecError
    from .sequences.user import replay_certificate

    deadline.check()
    try:
        mine = replay_certificate(cert, verifier=verifier, function=function,
                                  max_paths=4 * len(cert["paths"]) + 64)
    except TooLarge as err:      # the replay is refused beyond the certificate's own size
        raise Unreplayable(f"the replay through {cert['method']}: {str(err)[:200]}") from None
    except ExactspecError as err:
        return [f"the replay through {cert['method']} fails: {str(err)[:200]}"]
    deadline.check()
    problems = []
    for field in ("target", "law", "claim"):
        if mine[field] != cert[field]:
            what = {"target": "the recorded model's joint law of the first m tokens",
                    "law": "the replayed law", "claim": "the replayed claim"}[field]
            problems.append(f"{field}: {what} is not the recorded one: "
                            f"{_first_difference(mine[field], cert[field])}")
    for field in sorted(set(mine) | set(cert)):    # what the replay wrote from the record
        if field not in ("target", "law", "claim", "paths") and \
                mine.get(field) != cert.get(field):
            problems.append(f"{field}: the replay records {_short(mine.get(field))}, the "
                            f"certificate {_short(cert.get(field))}")
    if len(mine["paths"]) != len(cert["paths"]):
        problems.append(f"the verifier makes {len(mine['paths'])} paths, the certificate "
                        f"records {len(cert['paths'])}")
    for number, (a, b) in enumerate(zip(mine["paths"], cert["paths"])):
        if a != b:
            field = next(f for f in ("branches", "probability", "output", "drafts")
                         if a[f] != b[f])
            problems.append(f"path {number}: the replay through {cert['method']} gives "
                            f"{field} {_short(a[field])}, recorded {_short(b[field])}")
            if len(problems) > 20:
                problems.append("... (stopped after 20 problems)")
                break
    return problems


def _first_difference(mine, recorded) -> str:
    if isinstance(mine, dict) and isinstance(recorded, dict):
        for key in list(mine) + [k for k in recorded if k not in mine]:
            if mine.get(key) != recorded.get(key):
                return f"at {key!r}: {mine.get(key)}, recorded {recorded.get(key)}"
    return f"{_short(mine)}, recorded {_short(recorded)}"


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _bounded(run):
    """``run`` whose refusal of too large work (:class:`TooLarge`) leaves the part not
    checked instead of counting as a wrong certificate."""
    def replayed(s, p, q, k):
        try:
            return run(s, p, q, k)
        except TooLarge as err:
            raise Unreplayable(str(err)[:200]) from None
    return replayed


def _dist(probs, labels):
    return Dist(probs, labels)


def _float_replay(cert, method, deadline) -> list:
    """A float run's paths, enumerated again in its format (the engine's float emulation)
    and compared path by path; the run is refused beyond the certificate's own number of
    paths.  ``method`` keeps its contract (its ``k``); it runs unwatched, as the registry's
    methods do."""
    from dataclasses import replace

    from .verify import certificate_of, verify

    labels = cert["labels"]
    names = [str(lab) for lab in labels]
    try:
        p = Dist([exact_number(cert["target"][n]) for n in names], labels)
        q = Dist([exact_number(cert["draft"][n]) for n in names], labels)
        seconds = None if deadline.end is None else max(1.0, deadline.seconds)
        result = verify(replace(method, name=cert["method"], user=False), p, q, cert["k"],
                        grid=cert["grid"], arith=cert["arith"], keep_paths=True,
                        sum_order=cert.get("sum_order"),
                        max_paths=4 * len(cert["paths"]) + 16, max_seconds=seconds)
    except TooLarge as err:
        raise Unreplayable(f"the float run in {cert['arith']}: {str(err)[:200]}") from None
    except InvalidInput as err:
        return [f"the float run in {cert['arith']} cannot be replayed: {err}"]
    mine = certificate_of(result)
    problems = []
    if len(mine["paths"]) != len(cert["paths"]):
        problems.append(f"the method in {cert['arith']} makes {len(mine['paths'])} paths, "
                        f"the certificate records {len(cert['paths'])}")
    for number, (a, b) in enumerate(zip(mine["paths"], cert["paths"])):
        deadline.check()
        if a != b:
            problems.append(f"path {number}: the method in {cert['arith']} goes another way "
                            f"than the recorded path")
            if len(problems) > 20:
                break
    for field in ("claim", "law", "acceptance"):
        if mine[field] != cert[field]:
            problems.append(f"{field}: the method in {cert['arith']} gives {mine[field]}, "
                            f"recorded {cert[field]}")
    return problems


def check(cert, *, replay=True, trust=(), path_sums=True, max_paths=None,
          deadline=None) -> Report:
    """:func:`exactspec.checker.examine` with the registry's replay and the sympy checker of
    proofs for every vocabulary size: a :class:`~exactspec.checker.Report`."""
    from .checker import MAX_PATHS

    resolve = resolver(trust)
    deadline = deadline if isinstance(deadline, Deadline) else Deadline(deadline)

    def generic(part, deadline):
        return examine_generic(part, resolve if replay else None, replay=replay,
                               path_sums=path_sums, deadline=deadline)

    def symbolic(part, deadline):
        return resolve(part)(deadline)

    return examine(cert, resolve, replay, max_paths or MAX_PATHS, deadline, generic=generic,
                   symbolic=symbolic)


def check_certificate(cert, replay=True, trust=(), unchecked_ok=False) -> list:
    """The problems of a certificate (a dict or a JSON file), replayed through the registry:
    the empty list when nothing is wrong.  A part that could not be replayed is a problem
    here too (``not checked: ...``), except with ``replay=False`` or ``unchecked_ok=True``
    (a claim whose parts include rules built from data, such as an LP's solution, that only
    the claim itself can rebuild).

    >>> from exactspec import Dist, verify
    >>> cert = verify("sps", Dist.parse("1/2,1/2"), Dist.parse("1/3,2/3"),
    ...               keep_paths=True).certificate()
    >>> check_certificate(cert)
    []
    >>> check_certificate(dict(cert, method="no_such_module:rule"))[0][:40]
    "not checked: not replayed: method 'no_su"
    """
    try:
        report = check(cert, replay=replay, trust=trust)
    except CertificateError as err:
        return [f"bad input: {err}"]
    if unchecked_ok or not replay:
        return report.problems
    return report.problems + [f"not checked: {u}" for u in report.unchecked]


def check_generic_certificate(cert, path_sums=True, trust=()) -> list:
    """A proof for every vocabulary size re-checked by the sympy checker, its witnesses
    replayed through the registry; the list of problems (unchecked parts included)."""
    try:
        if isinstance(cert, str):
            from .checker import load_certificate

            cert = load_certificate(cert)
        parts = [cert]
        if isinstance(cert, dict) and cert.get("kind") == "exactspec-claim-certificate":
            parts = [part for part in cert.get("parts", []) if isinstance(part, dict)
                     and part.get("kind") == "exactspec-generic-certificate"]
            if not parts:
                return ["a claim certificate without a generic part"]
        resolve = resolver(trust)
        problems = []
        for part in parts:
            report = examine_generic(part, resolve, replay=True, path_sums=path_sums)
            problems += report.problems + [f"not checked: {u}" for u in report.unchecked]
    except CertificateError as err:
        return [f"bad input: {err}"]
    return problems


def restated_verdict(cert) -> str:
    """The verdict a certificate records, in a few words for its ``CERTIFICATE OK`` line:
    ``LOSSLESS``, or ``LOSSY (TV 1/4)`` from its ``law`` and ``target``; a certificate that
    records its ``verdict`` or ``lossless`` says that; ``""`` when it records neither.

    >>> restated_verdict({"law": {"0": "1/2", "1": "1/2"}, "target": {"0": "3/4", "1": "1/4"}})
    'LOSSY (TV 1/4)'
    >>> restated_verdict({"law": {"a": "1"}, "target": {"a": "1"}})
    'LOSSLESS'
    """
    from fractions import Fraction

    from .core.dist import exact_str
    from .core.text import figure

    if not isinstance(cert, dict):
        return ""
    law, target = cert.get("law"), cert.get("target")
    if isinstance(law, dict) and isinstance(target, dict) and law and \
            all(isinstance(v, str) for v in (*law.values(), *target.values())):
        try:
            tv = sum((abs(exact_number(law.get(t, "0")) - exact_number(target.get(t, "0")))
                      for t in law.keys() | target.keys()), Fraction(0)) / 2
        except CertificateError:
            return ""
        if tv == 0:
            return "LOSSLESS"
        text = exact_str(tv)
        return f"LOSSY (TV {text if len(text) <= 40 else figure(tv).partition(' (')[0]})"
    verdict = cert.get("verdict")
    if isinstance(verdict, str) and len(verdict) <= 40:
        return verdict.upper()
    if isinstance(cert.get("lossless"), bool):
        return "LOSSLESS" if cert["lossless"] else "LOSSY"
    return ""


def _trust_names(report, cert) -> list:
    """The ``--trust`` names that would let the not-checked parts be replayed: those the
    reasons name (``... only with --trust NAME``)."""
    import re

    found = []
    for reason in report.unchecked:
        for name in re.findall(r"--trust ([^\s)]+)", reason):
            if name not in found:
                found.append(name.rstrip(".,;"))
    return found


def check_command(path: str, *, trust=(), replay: bool = True, max_bytes=None,
                  max_paths=None, max_seconds=None, command: str = "exactspec check") -> dict:
    """Check the certificate in the file ``path`` (``exactspec check``): the object of its
    ``--json``, ``verdict`` (``OK``, ``REJECTED``, ``NOT CHECKED``), ``exit`` (0, 1, 4),
    ``problems``, ``not_checked``, ``notes``, ``certificate_verdict`` (what the certificate
    records, :func:`restated_verdict`) and ``lines`` (its text).  A ``NOT CHECKED`` result
    whose parts a ``--trust`` would replay names the command that would check it
    (``trust_command``).  Bad input raises
    :class:`~exactspec.core.errors.InvalidInput` (one line).

    Parameters
    ----------
    path : str
        The certificate file.
    trust : sequence of str
        ``FILE.py:FUNCTION`` or ``MODULE:FUNCTION``: a user's rule to replay the paths
        through.
    replay : bool
        ``False``: the method-free check only (``--no-replay``).
    max_bytes, max_paths, max_seconds : optional
        The checker's budgets (its defaults when ``None``).
    command : str
        The command the ``trust_command`` line is written for.

    Returns
    -------
    dict
        The result described above.
    """
    import shlex

    from .checker import (MAX_BYTES, MAX_PATHS, MAX_SECONDS, OutOfTime, load_certificate)
    from .checker import hard_limit as _hard_limit

    seconds = MAX_SECONDS if max_seconds is None else max_seconds
    deadline = Deadline(seconds)
    restore = _hard_limit(seconds + 5)
    cert = None
    try:
        cert = load_certificate(path, MAX_BYTES if max_bytes is None else max_bytes)
        report = check(cert, replay=replay, trust=list(trust),
                       max_paths=MAX_PATHS if max_paths is None else max_paths,
                       deadline=deadline)
    except CertificateError as err:
        where = "" if str(err).startswith("--trust") else f"certificate {path}: "
        raise InvalidInput(f"{where}{err}") from None
    except OutOfTime as err:
        report = Report()
        report.unchecked.append(str(err))
    except RecursionError:
        raise InvalidInput(f"certificate {path}: an expression nested too deep") from None
    finally:
        restore()
    lines = [f"note: {note}" for note in report.notes] + list(report.problems)
    lines += [f"not checked: {reason}" for reason in report.unchecked]
    restated = restated_verdict(cert) if report.verdict == "OK" else ""
    out = {"certificate": str(path), "verdict": report.verdict, "exit": report.exit_code,
           "problems": list(report.problems), "not_checked": list(report.unchecked),
           "notes": list(report.notes), "certificate_verdict": restated or None,
           "replayed": replay}
    if report.verdict == "OK":
        what = f": {restated}" if restated else ""
        how = (" (method-free check: the paths were not replayed)" if not replay else "")
        lines.append(f"CERTIFICATE OK{what}{how}")
    elif report.verdict == "REJECTED":
        lines.append("CERTIFICATE REJECTED")
    else:
        names = [n for n in _trust_names(report, cert) if n not in trust]
        lines.append("CERTIFICATE NOT CHECKED")
        if names:
            again = [command, shlex.quote(str(path)), *(f"--trust {shlex.quote(n)}"
                                                         for n in [*trust, *names])]
            out["trust_command"] = " ".join(again)
            lines.append(f"to check it, trusting that code to run: {out['trust_command']}")
            missing = [n.rpartition(":")[0] for n in names
                       if n.rpartition(":")[0].endswith(".py")
                       and not os.path.isfile(n.rpartition(":")[0])]
            if missing:                          # named as recorded, from another folder
                lines.append(f"  ({', '.join(missing)} as a path from here: the certificate "
                             "names the file as it was given; the same file name matches)")
    out["lines"] = lines
    return out


def main(argv=None) -> int:
    """The command line of both checkers (``python -m exactspec.checker`` and
    ``python -m exactspec.generic_checker``): the lines of :func:`check_command`; bad input
    in one line on stderr (exit 2)."""
    from .checker import UsageError, parse_arguments

    argv = sys.argv[1:] if argv is None else argv
    try:
        path, options = parse_arguments(argv)
    except UsageError as err:
        print(f"error: {err}" if not str(err).startswith("usage") else str(err),
              file=sys.stderr)
        return 2
    try:
        out = check_command(path, trust=options["trust"], replay=options["replay"],
                            max_bytes=options["max_bytes"], max_paths=options["max_paths"],
                            max_seconds=options["max_seconds"],
                            command="python -m exactspec.checker")
    except InvalidInput as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print("\n".join(out["lines"]))
    return out["exit"]


if __name__ == "__main__":
    sys.exit(main())
