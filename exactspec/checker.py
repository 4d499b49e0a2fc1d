"""An independent checker for exactspec certificates.

It shares no code with the engine and uses only the standard library (``fractions``, ``json``):
a certificate lists every path with its branch probabilities and its output; the checker
recomputes each path's probability as the product of its branches, checks that every
branching point's alternatives sum to 1, that the paths sum to 1, and recomputes the law and
``P(Y in X)``, comparing them with every recorded field (``law``, ``acceptance``, ``claim``).

Binding the paths to the method is a *replay*: every path is run again through the method,
feeding back the recorded choices (the replay sampler below is written here, sharing no code
with the engine); the method must meet the recorded alternatives at every branching point
and end with the recorded output and drafts.  This module never looks a method up itself: the
caller hands it a ``resolve`` function (:mod:`exactspec.replay` gives the registry's methods,
and a user's method only when the person checking names it).

What a path certificate records is bound one way or another: the arithmetic binds
``probability``, ``claim``, ``law`` and ``acceptance`` to the paths, and each branch's
probability to the alternative its choice takes; the replay binds ``method``, ``k`` (the
method's contract first: ``sps`` takes ``k = 1`` alone), ``grid``, ``labels``, ``target``,
``draft``, ``arith`` and ``sum_order`` (they are what it runs on) and each path's choices,
output, drafts and ``accepted``; anything else (a value off the schema, ``sum_order`` or a
non-default ``elementwise`` of an exact run) is bad input.  An edit that still checks is the
certificate of the run it now describes (a grid for a method that draws no uniform changes
none of its paths).  A branch's kind and description are words for a reader.  A symbolic
certificate's cases (conditions, laws, acceptances, verdicts, witness points, the count of
infeasible cases) are derived again through its method on its ``n``, ``k`` and
``positive_entries_assumed`` by the replay (:func:`examine`'s ``symbolic``); its statement
and notes are words.

Trust model.  A certificate is data from someone else.  Checking it never imports a module,
calls a function or evaluates text that the certificate names: exact values are read by a
small grammar (:func:`exact_number`: an integer or a fraction ``-3/5``, at most
:data:`MAX_DIGITS` digits each), keys are checked against a fixed schema (an unknown key, a
missing one or a part of unknown kind is an error), and the work is bounded (file size, JSON
nesting, number of paths, seconds).

Verdicts and exit codes of ``python -m exactspec.checker CERT.json``:

- ``CERTIFICATE OK`` (0): every part checked, every path certificate replayed;
- ``CERTIFICATE REJECTED`` (1): something is wrong (each problem on its own line);
- bad input (2): unreadable, too large, too deeply nested, not JSON, off the schema; one line;
- ``CERTIFICATE NOT CHECKED`` (4): nothing wrong was found, but some part could not be
  replayed (a method outside the registry that the command line does not name with
  ``--trust``, a user's sequence verifier not named so, a sequence certificate of version 1,
  which records no models) or the time budget ran out:
  never reported as OK.  ``--no-replay`` asks for the method-free check only (then OK means:
  the paths' arithmetic holds, not that a method produced them).
"""

import json
import re
import sys
import time
from fractions import Fraction

__all__ = ["check_certificate", "examine", "Report", "CertificateError", "load_certificate",
           "exact_number", "replay_paths", "EXIT_OK", "EXIT_REJECTED", "EXIT_BAD_INPUT",
           "EXIT_NOT_CHECKED"]

EXIT_OK, EXIT_REJECTED, EXIT_BAD_INPUT, EXIT_NOT_CHECKED = 0, 1, 2, 4

#: Budgets of one check (the command line's options change them).
MAX_BYTES = 256 * 2**20
MAX_DEPTH = 64
MAX_PATHS = 10**6
MAX_SECONDS = 600.0
#: Digits of one integer in an exact value (numerator or denominator).
MAX_DIGITS = 2000

KIND_PATHS = "exactspec-certificate"
KIND_CLAIM = "exactspec-claim-certificate"
KIND_SYMBOLIC = "exactspec-symbolic-certificate"
KIND_GENERIC = "exactspec-generic-certificate"


class CertificateError(ValueError):
    """A certificate that cannot be read or is off the schema (bad input, exit 2)."""


#: The replay's own exceptions raised during the current path (a method that catches one
#: and goes on is found out: :func:`replay_paths` reads this list after each path).
_RAISED: list = []


class _Replays(Exception):
    """An exception of the replay raised through the method's code: noted when made."""

    def __init__(self, *args):
        super().__init__(*args)
        _RAISED.append(self)


class OutOfTime(_Replays):
    """The check's time budget ran out (the certificate is then not checked)."""


class Unreplayable(_Replays):
    """The method refuses the replay's work as too large: the part is not checked."""


#: The clock of :class:`Deadline` (a test puts a fake one here).
_clock = time.monotonic


class Deadline:
    """A wall-clock budget, checked between steps of the work."""

    def __init__(self, seconds=None):
        self.seconds = seconds
        self.end = None if seconds is None else _clock() + seconds

    def check(self):
        if self.end is not None and _clock() > self.end:
            raise OutOfTime(f"the check ran past its budget of {self.seconds:g} s")


class Report:
    """What a check found: ``problems`` (the certificate is wrong) and ``unchecked`` (parts
    that could not be checked in full).  :attr:`verdict` is ``OK``, ``REJECTED`` or
    ``NOT CHECKED``."""

    def __init__(self):
        self.problems = []
        self.unchecked = []
        self.notes = []

    @property
    def verdict(self) -> str:
        if self.problems:
            return "REJECTED"
        return "NOT CHECKED" if self.unchecked else "OK"

    @property
    def exit_code(self) -> int:
        return {"OK": EXIT_OK, "REJECTED": EXIT_REJECTED,
                "NOT CHECKED": EXIT_NOT_CHECKED}[self.verdict]


# -- reading, bounded ---------------------------------------------------------------------
def load_certificate(path, max_bytes=MAX_BYTES, max_depth=MAX_DEPTH):
    """Read a certificate file: at most ``max_bytes`` (one more byte read tells a larger
    file, ``/dev/zero`` included, without reading it all), nested at most ``max_depth``
    deep, JSON.  Raises :class:`CertificateError` with a one-line reason.

    >>> import os, tempfile
    >>> name = os.path.join(tempfile.mkdtemp(), "deep.json")
    >>> _ = open(name, "w").write("[" * 100000 + "]" * 100000)
    >>> load_certificate(name)
    Traceback (most recent call last):
    ...
    exactspec.checker.CertificateError: nested more than 64 deep
    """
    import os
    import stat

    try:                                 # opened without blocking: a FIFO is refused, not read
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode):
                kind = "a FIFO (named pipe)" if stat.S_ISFIFO(info.st_mode) else "a socket"
                raise CertificateError(f"it is {kind}, not a file: save the certificate to a "
                                       "file first")
            too_large = stat.S_ISREG(info.st_mode) and info.st_size > max_bytes
            data = b"" if too_large else handle.read(max_bytes + 1)   # its size says so
            data = data if data is not None else b""
    except OSError as err:
        raise CertificateError(f"cannot read it: {err.strerror or err}") from None
    if too_large or len(data) > max_bytes:
        raise CertificateError(f"larger than {max_bytes} bytes (--max-bytes to allow more)")
    return parse_certificate(data, max_depth)


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def parse_certificate(data: bytes, max_depth=MAX_DEPTH):
    """JSON from bytes, its nesting measured before parsing (strings left out)."""
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKET)
    depth = deepest = 0
    for byte in brackets:
        depth += 1 if byte in (91, 123) else -1
        if depth > deepest:
            deepest = depth
            if deepest > max_depth:
                raise CertificateError(f"nested more than {max_depth} deep")
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise CertificateError("not UTF-8 text") from None
    except RecursionError:
        raise CertificateError(f"nested more than {max_depth} deep") from None
    except ValueError as err:            # JSON errors, integers of over 4300 digits
        raise CertificateError(f"not JSON: {str(err)[:120]}") from None


# -- exact values -------------------------------------------------------------------------
_NUMBER = re.compile(r"-?[0-9]+(?:/[0-9]+)?")


def exact_number(value, what="a value"):
    """An exact value of a certificate: a JSON integer, or a string ``-?N`` or ``-?N/D``
    (at most :data:`MAX_DIGITS` digits each, ``D`` not 0).  Nothing else is read: no
    exponents, no decimals, no expressions.

    >>> exact_number("-3/5"), exact_number(2)
    (Fraction(-3, 5), Fraction(2, 1))
    >>> exact_number("1e999999999")
    Traceback (most recent call last):
    ...
    exactspec.checker.CertificateError: a value: '1e999999999' is not an integer or a fraction N/D
    """
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() > MAX_DIGITS * 4:
            raise CertificateError(f"{what}: an integer of more than {MAX_DIGITS} digits")
        return Fraction(value)
    if not isinstance(value, str):
        raise CertificateError(f"{what}: {_short(value)} is not an exact value (a string N/D)")
    if len(value) > 2 * MAX_DIGITS + 2:
        raise CertificateError(f"{what}: more than {MAX_DIGITS} digits")
    if not _NUMBER.fullmatch(value):
        raise CertificateError(f"{what}: {_short(value)} is not an integer or a fraction N/D")
    numerator, _, denominator = value.partition("/")
    if len(numerator.lstrip("-")) > MAX_DIGITS or len(denominator) > MAX_DIGITS:
        raise CertificateError(f"{what}: more than {MAX_DIGITS} digits")
    if denominator and int(denominator) == 0:
        raise CertificateError(f"{what}: {value!r} divides by 0")
    return Fraction(int(numerator), int(denominator or 1))


def _short(value, width=60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


# -- the schema ---------------------------------------------------------------------------
def _keys(obj, what, required, optional=()):
    if not isinstance(obj, dict):
        raise CertificateError(f"{what}: a JSON object expected, got {type(obj).__name__}")
    missing = [key for key in required if key not in obj]
    if missing:
        raise CertificateError(f"{what}: missing key {missing[0]!r}")
    unknown = sorted(set(obj) - set(required) - set(optional))
    if unknown:
        raise CertificateError(f"{what}: unknown key {_short(unknown[0])}")


def _kind(obj, what):
    if not isinstance(obj, dict):
        raise CertificateError(f"{what}: a JSON object expected, got {type(obj).__name__}")
    return obj.get("kind")


def _list(value, what):
    if not isinstance(value, list):
        raise CertificateError(f"{what}: a list expected")
    return value


def _text(value, what):
    if not isinstance(value, str):
        raise CertificateError(f"{what}: a string expected")
    return value


def _integer(value, what, low=None, high=None):
    if not isinstance(value, int) or isinstance(value, bool):
        raise CertificateError(f"{what}: an integer expected")
    if (low is not None and value < low) or (high is not None and value > high):
        raise CertificateError(f"{what}: {value} is out of range")
    return value


_ONE = ("kind", "version", "method", "k", "grid", "labels", "target", "draft", "claim",
        "law", "acceptance", "paths")
_SEQUENCE = ("kind", "version", "method", "m", "context", "claim", "target", "law", "paths")
#: What a sequence certificate records beside (version 2): the verifier's identity and the
#: model pair, so that the replay can enumerate the generation again.
_SEQUENCE_REPLAY = ("user", "gamma", "parameters", "model", "arith", "grid", "elementwise")
#: Recorded only by a float run that declared the order of its long sums (``--sum-order``).
_SEQUENCE_OPTIONAL = ("sum_order",)
#: The declared orders of long float sums (``torch-avx2:T`` names ``T`` threads too).
SUM_ORDERS = ("sequential", "correctly-rounded", "torch-avx2")
_MODEL = ("labels", "target", "draft")
#: Where a float run's ``exp`` and ``log`` come from (``elementwise``).
ELEMENTWISE = ("correct", "numpy", "torch")
_PATH_ONE = ("branches", "probability", "output", "drafts", "accepted", "choices")
_PATH_SEQUENCE = ("branches", "probability", "output", "drafts")
#: The exact formats a float run (``arith``) may name.
ARITH_FORMATS = ("float32", "bfloat16", "float16", "float64")
#: The most drafts, grid points and tokens a replay takes (beyond: bad input).
MAX_K, MAX_GRID, MAX_M = 64, 2**64, 64


def is_sequence(cert) -> bool:
    """A certificate of a whole generation (tokens are ``m``-tuples): it records ``m`` and
    ``context`` and no draft law."""
    return isinstance(cert, dict) and "m" in cert


def _path_schema(cert, what):
    """Check a path certificate's keys and value types; returns its parsed numbers."""
    sequence = is_sequence(cert)
    if sequence:
        _keys(cert, what, ("version",), set(cert))
        version = _integer(cert["version"], f"{what}: version", 1, 2)
        _keys(cert, what, _SEQUENCE + (_SEQUENCE_REPLAY if version == 2 else ()),
              _SEQUENCE_OPTIONAL if version == 2 else ())
        _integer(cert["m"], f"{what}: m", 1, MAX_M)
        _text(cert["context"], f"{what}: context")
        if version == 2:
            _replay_schema(cert, what)
    else:
        _keys(cert, what, _ONE, ("arith", "sum_order"))
        _integer(cert["version"], f"{what}: version", 2, 2)
        _integer(cert["k"], f"{what}: k", 1, MAX_K)
        if cert["grid"] is not None:
            _integer(cert["grid"], f"{what}: grid", 1, MAX_GRID)
        if "arith" in cert and cert["arith"] not in ARITH_FORMATS:
            raise CertificateError(f"{what}: arith {_short(cert['arith'])} is not one of "
                                   f"{', '.join(ARITH_FORMATS)}")
        _sum_order_schema(cert, cert.get("arith"), what)
        labels = _list(cert["labels"], f"{what}: labels")
        if not all(isinstance(lab, (int, str)) and not isinstance(lab, bool)
                   for lab in labels):
            raise CertificateError(f"{what}: labels are integers or strings")
    _text(cert["method"], f"{what}: method")
    if cert["claim"] not in ("lossless", "law"):
        raise CertificateError(f"{what}: claim {_short(cert['claim'])}: 'lossless' or 'law'")
    tables = {}
    for field in ("target", "law") + (() if sequence else ("draft",)):
        table = cert[field]
        if not isinstance(table, dict):
            raise CertificateError(f"{what}: {field}: an object token -> exact value expected")
        tables[field] = {lab: exact_number(v, f"{what}: {field}[{_short(lab)}]")
                         for lab, v in table.items()}
    if not sequence:
        tables["acceptance"] = exact_number(cert["acceptance"], f"{what}: acceptance")
        if [str(lab) for lab in cert["labels"]] != list(tables["target"]):
            raise CertificateError(f"{what}: the labels are not the target's tokens")
        if list(tables["draft"]) != list(tables["target"]):
            raise CertificateError(f"{what}: the draft names other tokens than the target")
    paths = _list(cert["paths"], f"{what}: paths")
    return tables, paths


def _replay_schema(cert, what):
    """The types of what a sequence certificate records for its replay (the replay itself
    reads the values)."""
    if not isinstance(cert["user"], bool):
        raise CertificateError(f"{what}: user: true or false")
    if cert["gamma"] is not None:
        _integer(cert["gamma"], f"{what}: gamma", 0, MAX_M)
    if not isinstance(cert["parameters"], dict):
        raise CertificateError(f"{what}: parameters: an object expected")
    if cert["arith"] is not None and cert["arith"] not in ARITH_FORMATS:
        raise CertificateError(f"{what}: arith {_short(cert['arith'])} is not one of "
                               f"{', '.join(ARITH_FORMATS)}")
    if cert["grid"] is not None:
        _integer(cert["grid"], f"{what}: grid", 1, MAX_GRID)
    if cert["elementwise"] not in ELEMENTWISE:
        raise CertificateError(f"{what}: elementwise {_short(cert['elementwise'])} is not one "
                               f"of {', '.join(ELEMENTWISE)}")
    if cert["elementwise"] != "correct" and cert["arith"] is None:
        raise CertificateError(f"{what}: elementwise {cert['elementwise']!r} of an exact run "
                               "(it names the exp and log of a float run, arith)")
    _sum_order_schema(cert, cert["arith"], what)
    model = cert["model"]
    _keys(model, f"{what}: model", _MODEL)
    labels = model["labels"]
    if labels is not None and not (isinstance(labels, list) and labels and all(
            isinstance(lab, str) for lab in labels)):
        raise CertificateError(f"{what}: model: labels: null or a list of strings")
    width = None if labels is None else len(labels)
    shapes = set()
    for side in ("target", "draft"):
        table = model[side]
        where = f"{what}: model: {side}"
        if isinstance(table, list):
            rows, shapes = table, shapes | {"rows"}
        elif isinstance(table, dict):
            if "" not in table:
                raise CertificateError(f"{where}: no root context \"\"")
            rows, shapes = list(table.values()), shapes | {"table"}
            for key in table:
                _text(key, f"{where}: a context")
        else:
            raise CertificateError(f"{where}: a table context -> row or a list of rows")
        if not rows:
            raise CertificateError(f"{where}: no rows")
        for row in rows:
            values = [exact_number(v, f"{where}: a probability") for v in _list(row, where)]
            width = len(values) if width is None else width
            if len(values) != width:
                raise CertificateError(f"{where}: a row of {len(values)} values, the "
                                       f"vocabulary has {width}")
    if len(shapes) != 1:
        raise CertificateError(f"{what}: model: the target and the draft are both tables or "
                               "both lists of per-position rows")


def _sum_order_schema(cert, arith, what):
    """``sum_order``, where recorded: a declared order of a float run's long sums."""
    if "sum_order" not in cert:
        return
    order = cert["sum_order"]
    head, sep, threads = order.partition(":") if isinstance(order, str) else (None, "", "")
    if arith is None or head not in SUM_ORDERS or (sep and not (
            head == "torch-avx2" and threads.isdigit() and 1 <= int(threads) <= 1024)):
        raise CertificateError(f"{what}: sum_order {_short(order)} is not one of "
                               f"{', '.join(SUM_ORDERS)} (torch-avx2:T) of a float run")


def _path_numbers(path, number, sequence, what):
    where = f"{what}: path {number}"
    if sequence:
        _keys(path, where, _PATH_SEQUENCE)
    else:
        _keys(path, where, _PATH_ONE)
        if not isinstance(path["accepted"], bool):
            raise CertificateError(f"{where}: accepted: true or false")
    branches = []
    for branch in _list(path["branches"], f"{where}: branches"):
        if not isinstance(branch, list) or len(branch) != 3:
            raise CertificateError(f"{where}: a branch is [kind, what, probability]")
        _text(branch[0], f"{where}: a branch's kind")
        branches.append(exact_number(branch[2], f"{where}: a branch probability"))
    probability = exact_number(path["probability"], f"{where}: probability")
    _text(path["output"], f"{where}: output")
    drafts = _list(path["drafts"], f"{where}: drafts")
    if not all(isinstance(x, str) for x in drafts):
        raise CertificateError(f"{where}: drafts are strings")
    choices = None
    if not sequence:
        choices = []
        for choice in _list(path["choices"], f"{where}: choices"):
            if not isinstance(choice, list) or len(choice) != 2:
                raise CertificateError(f"{where}: a choice is [index, alternatives]")
            index = _integer(choice[0], f"{where}: a choice's index")
            alternatives = [exact_number(a, f"{where}: an alternative")
                            for a in _list(choice[1], f"{where}: alternatives")]
            choices.append((index, alternatives))
    return branches, probability, choices


# -- the method-free check ----------------------------------------------------------------
def check_paths(cert, what="certificate", max_paths=MAX_PATHS, deadline=None):
    """The method-free check of one path certificate: schema, products, sums, law,
    acceptance, claim.  Returns a list of problems; raises :class:`CertificateError` off the
    schema."""
    deadline = deadline or Deadline()
    tables, paths = _path_schema(cert, what)
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
        branches, recorded, choices = _path_numbers(path, number, sequence, what)
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
            problems.append(f"path {number}: output {_short(output)} is not a token of the "
                            "target")
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
        kind = _kind(obj, what)
        if kind == KIND_PATHS:
            one(obj, what, prefix)
        elif kind == KIND_CLAIM and top:
            _keys(obj, what, _CLAIM_REQUIRED, set(obj) - {"kind", "parts"})
            data = sorted(set(obj) - set(_CLAIM_REQUIRED) - set(_CLAIM_OPTIONAL))
            if data:
                report.notes.append("the claim's own data (" + ", ".join(
                    _short(k) for k in data[:8]) + ") are not part of the check: only its "
                    "parts are")
            report.notes.append("a claim certificate: its parts are checked, not that they "
                                "make the claim's statement")
            parts = _list(obj["parts"], f"{what}: parts")
            if not parts:
                name, statement = obj.get("claim"), obj.get("statement")
                named = f"the claim {_short(name)}" if isinstance(name, str) else "the claim"
                said = (f": nothing here checks its statement ({_short(statement, 200)})"
                        if isinstance(statement, str) else "")
                rerun = (f"; exactspec prove {name} derives it again"
                         if isinstance(name, str) and name.replace("-", "").isalnum() else "")
                report.unchecked.append(f"{named} records no path certificate, no paths to "
                                        f"check{said}; its derivations are data, not a "
                                        f"certificate{rerun}")
            for number, part in enumerate(parts):
                walk(part, f"part {number}", f"part {number}: ", False)
        elif kind == KIND_SYMBOLIC:
            _keys(obj, what, _SYMBOLIC, ("target_law",))
            method = _text(obj["method"], f"{what}: method")
            k = _integer(obj["k"], f"{what}: k", 1, MAX_K)
            for number, case in enumerate(_list(obj["cases"], f"{what}: cases")):
                _keys(case, f"{what}: case {number}", _SYMBOLIC_CASE)
                for w, point in enumerate(_list(case["witnesses"], f"{what}: witnesses")):
                    _keys(point, f"{what}: case {number} witness {w}", ("point",
                                                                      "certificate"))
                    inner = point["certificate"]
                    if _kind(inner, what) != KIND_PATHS or is_sequence(inner):
                        raise CertificateError(f"{what}: case {number}: a witness is a path "
                                               "certificate")
                    # the witness's own method and k, or (as writers before version 2 of
                    # this check wrote them) none and 1: the certificate's method and k
                    legacy = inner["method"] == "" and inner["k"] == 1
                    if not legacy and (inner["method"] != method or inner["k"] != k):
                        report.problems.append(
                            f"{prefix}case {number}: a witness names method "
                            f"{_short(inner['method'])}, k = {inner['k']}; the certificate "
                            f"{_short(method)}, k = {k}")
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
            raise CertificateError(f"{what}: unknown certificate kind {_short(kind)}")

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


# -- replay through the method ------------------------------------------------------------
class _Mismatch(_Replays):
    pass


class _Interval:
    """An explicit uniform: the values still possible, ``[lo, hi)``."""

    def __init__(self, sampler, number):
        self.sampler, self.number = sampler, number
        self.lo, self.hi = Fraction(0), Fraction(1)

    def view(self):
        return _View(self, Fraction(1), Fraction(0))


class _View:
    """``scale * u + shift`` (``scale > 0``), compared with thresholds."""

    def __init__(self, base, scale, shift):
        self.base, self.scale, self.shift = base, scale, shift

    def _cut(self, c):
        return (_exact(c) - self.shift) / self.scale

    def __lt__(self, c):
        return self.base.sampler._below(self.base, self._cut(c), True)

    def __le__(self, c):
        return self.base.sampler._below(self.base, self._cut(c), False)

    def __gt__(self, c):
        return not self.__le__(c)

    def __ge__(self, c):
        return not self.__lt__(c)

    def __mul__(self, a):
        a = _exact(a)
        if a <= 0:
            raise _Mismatch("a uniform scaled by a non-positive number")
        return _View(self.base, self.scale * a, self.shift * a)

    __rmul__ = __mul__

    def __truediv__(self, a):
        return self.__mul__(1 / _exact(a))

    def __add__(self, b):
        return _View(self.base, self.scale, self.shift + _exact(b))

    __radd__ = __add__

    def __sub__(self, b):
        return _View(self.base, self.scale, self.shift - _exact(b))


def _exact(x):
    if isinstance(x, Fraction):
        return x
    if isinstance(x, int):
        return Fraction(x)
    ratio = getattr(x, "as_integer_ratio", None)
    if ratio is not None:
        return Fraction(*ratio())
    raise _Mismatch(f"the method computed {_short(x)}, not an exact rational")


def _grid_points(lo, hi, grid):
    def ceil_times(x):
        n = x * grid
        c = n.numerator // n.denominator + (n.numerator % n.denominator != 0)
        return min(grid, max(0, c))
    return max(0, ceil_times(hi) - ceil_times(lo))


class _ReplaySampler:
    """Follows one path's recorded choices; at every branching point it works out the
    alternatives itself and insists they are the recorded ones."""

    exact = True
    symbolic = False
    replays_exact_engine = True   # methods that draw differently on the exact engine do so here

    def __init__(self, choices, grid, deadline):
        self._choices = list(choices)
        self._next = 0
        self.grid = grid
        self.weight = Fraction(1)
        self.drafted = []
        self.accepted_token = None
        self.did_accept = False
        self._uniforms = 0
        self._deadline = deadline

    def _take(self, kind, options):
        self._deadline.check()
        options = [(value, prob) for value, prob in options if prob != 0]
        if not options:
            raise _Mismatch(f"{kind}: no alternative has positive probability")
        if len(options) == 1:
            self.weight *= options[0][1]
            return options[0][0]
        if self._next >= len(self._choices):
            raise _Mismatch(f"{kind}: the method branches here, the path records no choice")
        index, recorded = self._choices[self._next]
        self._next += 1
        mine = [prob for _, prob in options]
        if list(recorded) != mine:
            raise _Mismatch(f"{kind}: the method's alternatives {[str(m) for m in mine]} are "
                            f"not the recorded {[str(r) for r in recorded]}")
        value, prob = options[index]
        self.weight *= prob
        return value

    def _probs(self, dist, kind):
        probs = [_exact(v) for v in dist.probs]
        if sum(probs) != 1 or any(v < 0 for v in probs):
            raise _Mismatch(f"{kind}: a law that does not sum to 1")
        return probs

    def draw(self, dist, what="draw"):
        return self._take(what, list(zip(dist.labels, self._probs(dist, what))))

    def coin(self, prob, what="coin"):
        prob = _exact(prob)
        return self._take(what, [(True, prob), (False, 1 - prob)])

    def draft(self, q, what="draft"):
        x = self.draw(q, what)
        self.drafted.append(x)
        return x

    def drafts(self, q, k, replace=True):
        if replace:
            return tuple(self.draft(q) for _ in range(k))
        chosen = []
        probs = self._probs(q, "drafts")
        for i in range(k):
            rest = [0 if lab in chosen else v for lab, v in zip(q.labels, probs)]
            total = sum(rest)
            x = self._take("draft", [(lab, v / total) for lab, v in zip(q.labels, rest)])
            self.drafted.append(x)
            chosen.append(x)
        return tuple(chosen)

    def accept(self, x):
        self.did_accept, self.accepted_token = True, x
        return x

    def uniform(self):
        self._uniforms += 1
        return _Interval(self, self._uniforms).view()

    def _length(self, u, lo, hi):
        if not lo < hi:
            return Fraction(0)
        if self.grid is None:
            return (hi - lo) / (u.hi - u.lo)
        return Fraction(_grid_points(lo, hi, self.grid), _grid_points(u.lo, u.hi, self.grid))

    def _below(self, u, c, strict):
        cut = c
        if self.grid is not None:
            n = c * self.grid
            floor = n.numerator // n.denominator
            ceil = floor + (n.numerator % n.denominator != 0)
            cut = Fraction(ceil if strict else floor + 1, self.grid)
        if not u.lo < cut:
            return False
        if not cut < u.hi:
            return True
        below = self._length(u, u.lo, cut)
        above = self._length(u, cut, u.hi)
        if self._take("uniform", [(True, below), (False, above)]):
            u.hi = cut
            return True
        u.lo = cut
        return False

    def pick(self, dist, u, what="pick"):
        base = u.base
        options = []
        cum = Fraction(0)
        for lab, pr in zip(dist.labels, self._probs(dist, what)):
            a, b = cum, cum + pr
            cum = b
            if pr == 0:
                continue
            lo = max(base.lo, (a - u.shift) / u.scale)
            hi = min(base.hi, (b - u.shift) / u.scale)
            options.append(((lab, lo, hi), self._length(base, lo, hi)))
        lab, lo, hi = self._take(what, options)
        base.lo, base.hi = lo, hi
        return lab


def replay_paths(cert, run, dist_class, deadline=None, name=None):
    """Run every path of the path certificate ``cert`` again through ``run(s, p, q, k)``
    (``p``, ``q`` built with ``dist_class(probs, labels)``), feeding back the recorded
    choices.  Each path must make the same branching points with the same alternatives, end
    with the recorded output and drafts, and nothing may be left over.  Returns a list of
    problems.  The caller chose ``run``; this function never looks a method up."""
    deadline = deadline if isinstance(deadline, Deadline) else Deadline(deadline)
    name = name or cert["method"]
    labels = cert["labels"]
    names = [str(lab) for lab in labels]
    try:
        p = dist_class([exact_number(cert["target"][n]) for n in names], labels)
        q = dist_class([exact_number(cert["draft"][n]) for n in names], labels)
    except (OutOfTime, CertificateError):
        raise
    except Exception as err:  # noqa: BLE001 - the method's distributions refuse these rows
        return [f"the target and draft are not distributions the method takes: "
                f"{str(err)[:200]}"]
    k, grid = cert["k"], cert["grid"]
    problems = []
    for number, path in enumerate(cert["paths"]):
        choices = [(index, [exact_number(a) for a in alternatives])
                   for index, alternatives in path["choices"]]
        sampler = _ReplaySampler(choices, grid, deadline)
        del _RAISED[:]
        try:
            output = run(sampler, p, q, k)
        except (OutOfTime, Unreplayable):
            raise
        except _Mismatch as err:
            problems.append(f"path {number}: replay through {name}: {err}")
            continue
        except Exception as err:  # noqa: BLE001 - a method failing on the replay is a finding
            problems.append(f"path {number}: replay through {name} raised "
                            f"{type(err).__name__}: {str(err)[:200]}")
            continue
        if _RAISED:              # the method caught the replay's signal and went on
            caught = _RAISED[0]
            if isinstance(caught, (OutOfTime, Unreplayable)):
                raise type(caught)(f"{caught} (caught by {name}, which went on)")
            problems.append(f"path {number}: replay through {name}: {caught} (the method "
                            "caught the replay's signal and went on)")
            continue
        if sampler._next != len(choices):
            problems.append(f"path {number}: replay through {name} ended after "
                            f"{sampler._next} of {len(choices)} recorded choices")
        if str(output) != path["output"]:
            problems.append(f"path {number}: replay through {name} outputs {output}, "
                            f"recorded {path['output']}")
        if [str(x) for x in sampler.drafted] != list(path["drafts"]):
            problems.append(f"path {number}: replay drafts {sampler.drafted}, recorded "
                            f"{path['drafts']}")
        accepted = bool(sampler.did_accept and sampler.accepted_token == output)
        if accepted != path["accepted"]:
            problems.append(f"path {number}: replay through {name} "
                            f"{'accepts' if accepted else 'does not accept'} its output, "
                            f"recorded accepted = {str(path['accepted']).lower()}")
        if sampler.weight != exact_number(path["probability"]):
            problems.append(f"path {number}: replay gives probability {sampler.weight}, "
                            f"recorded {path['probability']}")
        if len(problems) > 20:
            problems.append("... (stopped after 20 problems)")
            break
    return problems


# -- the command line ---------------------------------------------------------------------
USAGE = ("usage: python -m exactspec.checker [--no-replay] [--trust FILE.py:FUNCTION|"
         "MODULE:FUNCTION]... [--max-bytes N] [--max-paths N] [--max-seconds S] "
         "CERTIFICATE.json")


class UsageError(ValueError):
    pass


def parse_arguments(argv, usage=USAGE):
    """The checkers' options: ``(path, options)``; :class:`UsageError` on bad usage."""
    options = {"replay": True, "trust": [], "max_bytes": MAX_BYTES, "max_paths": MAX_PATHS,
               "max_seconds": MAX_SECONDS}
    numbers = {"--max-bytes": ("max_bytes", int), "--max-paths": ("max_paths", int),
               "--max-seconds": ("max_seconds", float)}
    paths = []
    argv = list(argv)
    while argv:
        arg = argv.pop(0)
        if arg == "--no-replay":
            options["replay"] = False
        elif arg == "--trust" or arg in numbers:
            if not argv:
                raise UsageError(f"{arg} needs a value")
            value = argv.pop(0)
            if arg == "--trust":
                options["trust"].append(value)
                continue
            key, kind = numbers[arg]
            try:
                number = kind(value)
            except ValueError:
                raise UsageError(f"{arg} {value!r}: a number expected") from None
            if not 0 < number < float("inf"):
                raise UsageError(f"{arg} {value!r}: a positive finite number expected")
            options[key] = number
        elif arg.startswith("-") and arg != "-":
            raise UsageError(f"unknown option {arg}")
        else:
            paths.append(arg)
    if len(paths) != 1:
        raise UsageError(usage)
    return paths[0], options


def run_command(argv, check, usage=USAGE) -> int:
    """The checkers' command line around ``check(cert, options, deadline) -> Report``: one
    line on stderr and exit 2 for bad input, the problems and the verdict on stdout."""
    try:
        path, options = parse_arguments(argv, usage)
    except UsageError as err:
        print(f"error: {err}" if not str(err).startswith("usage") else str(err),
              file=sys.stderr)
        return EXIT_BAD_INPUT
    deadline = Deadline(options["max_seconds"])
    restore = _hard_limit(options["max_seconds"] + 5)
    try:
        cert = load_certificate(path, options["max_bytes"])
        report = check(cert, options, deadline)
    except CertificateError as err:
        where = "" if str(err).startswith("--trust") else f"certificate {path}: "
        print(f"error: {where}{err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OutOfTime as err:
        report = Report()
        report.unchecked.append(str(err))
    except RecursionError:
        print(f"error: certificate {path}: an expression nested too deep", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        restore()
    for note in report.notes:
        print(f"note: {note}")
    for problem in report.problems:
        print(problem)
    for reason in report.unchecked:
        print(f"not checked: {reason}")
    if report.verdict == "OK" and not options["replay"]:
        print("CERTIFICATE OK (method-free check: the paths were not replayed)")
    else:
        print(f"CERTIFICATE {report.verdict}")
    return report.exit_code


def _hard_limit(seconds):
    """A wall-clock alarm behind the cooperative :class:`Deadline` (work inside one long
    library call, such as a Groebner basis, is interrupted too); returns its undoing."""
    import signal
    import threading

    if not hasattr(signal, "setitimer") or \
            threading.current_thread() is not threading.main_thread():
        return lambda: None

    def ring(signum, frame):
        raise OutOfTime(f"the check ran past its budget of {seconds - 5:g} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)

    def restore():
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)

    return restore


def main(argv=None, resolve=None) -> int:
    """``python -m exactspec.checker``; ``resolve`` as in :func:`examine` (the command line
    passes :mod:`exactspec.replay`'s)."""
    argv = sys.argv[1:] if argv is None else argv

    def check(cert, options, deadline):
        return examine(cert, resolve, options["replay"], options["max_paths"], deadline)

    return run_command(argv, check)


if __name__ == "__main__":   # the command line: replays through exactspec's registry
    from exactspec.replay import main as _main

    sys.exit(_main())
