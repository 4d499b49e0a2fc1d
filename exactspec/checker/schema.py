"""The schema of a path certificate (one call's, or a whole generation's): the keys it must
and may have, the types and ranges of its values, read into exact numbers; anything off the
schema is a :class:`~.report.CertificateError` (bad input).
"""

from .reading import exact_number, short_repr
from .report import CertificateError

__all__ = ["expect_keys", "kind_of", "expect_list", "expect_text", "expect_integer",
           "is_sequence", "SUM_ORDERS", "ELEMENTWISE", "ARITH_FORMATS", "MAX_K", "MAX_GRID",
           "MAX_M", "path_numbers", "path_schema"]

def expect_keys(obj, what, required, optional=()):
    if not isinstance(obj, dict):
        raise CertificateError(f"{what}: a JSON object expected, got {type(obj).__name__}")
    missing = [key for key in required if key not in obj]
    if missing:
        raise CertificateError(f"{what}: missing key {missing[0]!r}")
    unknown = sorted(set(obj) - set(required) - set(optional))
    if unknown:
        raise CertificateError(f"{what}: unknown key {short_repr(unknown[0])}")


def kind_of(obj, what):
    if not isinstance(obj, dict):
        raise CertificateError(f"{what}: a JSON object expected, got {type(obj).__name__}")
    return obj.get("kind")


def expect_list(value, what):
    if not isinstance(value, list):
        raise CertificateError(f"{what}: a list expected")
    return value


def expect_text(value, what):
    if not isinstance(value, str):
        raise CertificateError(f"{what}: a string expected")
    return value


def expect_integer(value, what, low=None, high=None):
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


def path_schema(cert, what):
    """Check a path certificate's keys and value types; returns its parsed numbers."""
    sequence = is_sequence(cert)
    if sequence:
        expect_keys(cert, what, ("version",), set(cert))
        version = expect_integer(cert["version"], f"{what}: version", 1, 2)
        expect_keys(cert, what, _SEQUENCE + (_SEQUENCE_REPLAY if version == 2 else ()),
              _SEQUENCE_OPTIONAL if version == 2 else ())
        expect_integer(cert["m"], f"{what}: m", 1, MAX_M)
        expect_text(cert["context"], f"{what}: context")
        if version == 2:
            _replay_schema(cert, what)
    else:
        expect_keys(cert, what, _ONE, ("arith", "sum_order"))
        expect_integer(cert["version"], f"{what}: version", 2, 2)
        expect_integer(cert["k"], f"{what}: k", 1, MAX_K)
        if cert["grid"] is not None:
            expect_integer(cert["grid"], f"{what}: grid", 1, MAX_GRID)
        if "arith" in cert and cert["arith"] not in ARITH_FORMATS:
            raise CertificateError(f"{what}: arith {short_repr(cert['arith'])} is not one of "
                                   f"{', '.join(ARITH_FORMATS)}")
        _sum_order_schema(cert, cert.get("arith"), what)
        labels = expect_list(cert["labels"], f"{what}: labels")
        if not all(isinstance(lab, (int, str)) and not isinstance(lab, bool)
                   for lab in labels):
            raise CertificateError(f"{what}: labels are integers or strings")
    expect_text(cert["method"], f"{what}: method")
    if cert["claim"] not in ("lossless", "law"):
        raise CertificateError(f"{what}: claim {short_repr(cert['claim'])}: "
                               "'lossless' or 'law'")
    tables = {}
    for field in ("target", "law") + (() if sequence else ("draft",)):
        table = cert[field]
        if not isinstance(table, dict):
            raise CertificateError(f"{what}: {field}: an object token -> exact value expected")
        tables[field] = {lab: exact_number(v, f"{what}: {field}[{short_repr(lab)}]")
                         for lab, v in table.items()}
    if not sequence:
        tables["acceptance"] = exact_number(cert["acceptance"], f"{what}: acceptance")
        if [str(lab) for lab in cert["labels"]] != list(tables["target"]):
            raise CertificateError(f"{what}: the labels are not the target's tokens")
        if list(tables["draft"]) != list(tables["target"]):
            raise CertificateError(f"{what}: the draft names other tokens than the target")
    paths = expect_list(cert["paths"], f"{what}: paths")
    return tables, paths


def _replay_schema(cert, what):
    """The types of what a sequence certificate records for its replay (the replay itself
    reads the values)."""
    if not isinstance(cert["user"], bool):
        raise CertificateError(f"{what}: user: true or false")
    if cert["gamma"] is not None:
        expect_integer(cert["gamma"], f"{what}: gamma", 0, MAX_M)
    if not isinstance(cert["parameters"], dict):
        raise CertificateError(f"{what}: parameters: an object expected")
    if cert["arith"] is not None and cert["arith"] not in ARITH_FORMATS:
        raise CertificateError(f"{what}: arith {short_repr(cert['arith'])} is not one of "
                               f"{', '.join(ARITH_FORMATS)}")
    if cert["grid"] is not None:
        expect_integer(cert["grid"], f"{what}: grid", 1, MAX_GRID)
    if cert["elementwise"] not in ELEMENTWISE:
        raise CertificateError(f"{what}: elementwise {short_repr(cert['elementwise'])} is "
                               f"not one of {', '.join(ELEMENTWISE)}")
    if cert["elementwise"] != "correct" and cert["arith"] is None:
        raise CertificateError(f"{what}: elementwise {cert['elementwise']!r} of an exact run "
                               "(it names the exp and log of a float run, arith)")
    _sum_order_schema(cert, cert["arith"], what)
    model = cert["model"]
    expect_keys(model, f"{what}: model", _MODEL)
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
                expect_text(key, f"{where}: a context")
        else:
            raise CertificateError(f"{where}: a table context -> row or a list of rows")
        if not rows:
            raise CertificateError(f"{where}: no rows")
        for row in rows:
            values = [exact_number(v, f"{where}: a probability") for v in expect_list(row, where)]
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
        raise CertificateError(f"{what}: sum_order {short_repr(order)} is not one of "
                               f"{', '.join(SUM_ORDERS)} (torch-avx2:T) of a float run")


def path_numbers(path, number, sequence, what):
    """Check one path's keys and value types; returns its branches, choices and probability
    parsed."""
    where = f"{what}: path {number}"
    if sequence:
        expect_keys(path, where, _PATH_SEQUENCE)
    else:
        expect_keys(path, where, _PATH_ONE)
        if not isinstance(path["accepted"], bool):
            raise CertificateError(f"{where}: accepted: true or false")
    branches = []
    for branch in expect_list(path["branches"], f"{where}: branches"):
        if not isinstance(branch, list) or len(branch) != 3:
            raise CertificateError(f"{where}: a branch is [kind, what, probability]")
        expect_text(branch[0], f"{where}: a branch's kind")
        branches.append(exact_number(branch[2], f"{where}: a branch probability"))
    probability = exact_number(path["probability"], f"{where}: probability")
    expect_text(path["output"], f"{where}: output")
    drafts = expect_list(path["drafts"], f"{where}: drafts")
    if not all(isinstance(x, str) for x in drafts):
        raise CertificateError(f"{where}: drafts are strings")
    choices = None
    if not sequence:
        choices = []
        for choice in expect_list(path["choices"], f"{where}: choices"):
            if not isinstance(choice, list) or len(choice) != 2:
                raise CertificateError(f"{where}: a choice is [index, alternatives]")
            index = expect_integer(choice[0], f"{where}: a choice's index")
            alternatives = [exact_number(a, f"{where}: an alternative")
                            for a in expect_list(choice[1], f"{where}: alternatives")]
            choices.append((index, alternatives))
    return branches, probability, choices

