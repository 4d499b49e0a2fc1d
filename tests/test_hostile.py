"""Hostile input: user code that cheats, work without bounds, inputs refused or accepted
correctly, and certificates bound to their method.

Every case asserts the exit code, a one-line message on stderr that names the user's input or
code, and that no verdict was printed for input that was refused.
"""

import itertools
import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from exactspec import Dist, verify
from exactspec.replay import check_certificate, main as checker_main
from exactspec.cli import main

ROOT = Path(__file__).resolve().parent.parent
PQ = ["--p", "1/2,3/10,1/5", "--q", "1/5,1/5,3/5"]


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, argv, *words, code=2):
    """Exit ``code``, one line on stderr holding every word, and on stdout nothing, or under
    ``--json`` the one object that says so (docs/json.md#exit-status)."""
    got, out, err = run(capsys, *argv)
    lines = err.strip().splitlines()
    assert got == code, (got, out, err)
    as_json = "--json" in map(str, argv)
    assert out == (json_failure(lines[0], code) if as_json else ""), out
    assert len(lines) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def json_failure(line: str, code: int = 2) -> str:
    """The stdout of a command refused under ``--json``: one object naming the error line
    (``{"undecided": ..., "exit": 3}`` for an undecided result)."""
    key, _, text = line.partition(": ")
    return json.dumps({"undecided" if code == 3 else "error": text, "exit": code}) + "\n"


def user_file(tmp_path, name, body):
    path = tmp_path / f"{name}.py"
    path.write_text(body)
    return f"{path}:rule"


# -- 1. user code under watch ---------------------------------------------------------------
HIDDEN = {
    "python_random": ("import random\n", "random.random() < 0.5", "random.random"),
    "random_instance": ("import random\nR = random.Random(1)\n", "R.random() < 0.5",
                        "random.Random.random"),
    "numpy_module": ("import numpy as np\n", "np.random.rand() < 0.5", "numpy.random.rand"),
    "numpy_default_rng": ("import numpy as np\n", "np.random.default_rng().random() < 0.5",
                          "numpy.random.default_rng"),
    "numpy_generator_made_at_import": ("import numpy as np\nG = np.random.default_rng(0)\n",
                                       "G.random() < 0.5", "hidden"),
    "os_urandom": ("import os\n", "os.urandom(1)[0] < 128", "os.urandom"),
    "secrets": ("import secrets\n", "secrets.randbelow(2) == 0", "secrets.randbelow"),
    "clock": ("import time\n", "int(time.time() * 1e6) % 2 == 0", "time.time"),
    "counter": ("N = [0]\n", "N.__setitem__(0, N[0] + 1) or N[0] % 2 == 0", "hidden"),
}


@pytest.mark.parametrize("case", sorted(HIDDEN))
def test_hidden_randomness_is_refused_naming_the_file(capsys, tmp_path, case):
    header, test, word = HIDDEN[case]
    spec = user_file(tmp_path, case, header + f"""
def rule(s, p, q):
    x = s.draft(q)
    if {test}:
        return x
    return s.draw(p)
""")
    line = refused(capsys, ["verify", spec, *PQ, "--json"], word)
    if word != "hidden":
        assert f"{case}.py line" in line


def test_a_verifier_that_mutates_p_is_refused(capsys, tmp_path):
    spec = user_file(tmp_path, "mutate", "def rule(s, p, q):\n    p.probs = q.probs\n"
                     "    return s.draw(p)\n")
    refused(capsys, ["verify", spec, *PQ], "read-only", "mutate.py line 2")
    deep = user_file(tmp_path, "mutate_value", "def rule(s, p, q):\n"
                     "    p.probs[0]._numerator = 7\n    return s.draw(q)\n")
    refused(capsys, ["verify", deep, *PQ], "changed its input p")


def test_float_arithmetic_is_taken_exactly_and_said(capsys, tmp_path):
    spec = user_file(tmp_path, "floats", """
def rule(s, p, q):
    x = s.draft(q)
    if s.coin(float(min(1, p[x] / q[x]))):
        return x
    return s.draw(p)
""")
    code, out, err = run(capsys, "verify", spec, *PQ, "--json")
    obj = json.loads(out)
    assert code == 1 and obj["floats_converted"] > 0 and err == ""
    output = {t: Fraction(v) for t, v in obj["output"].items()}
    assert sum(output.values()) == 1                      # exact: sums to 1
    assert all("." not in v and "e" not in v for v in obj["output"].values())
    # only token 2 has p/q < 1: it is kept with f = float(1/3) taken at its exact binary value
    # 6004799503160661/18014398509481984, and a rejection resamples from p
    f = Fraction(6004799503160661, 18014398509481984)
    assert f == Fraction(1 / 3)
    reject = Fraction(3, 5) * (1 - f)
    assert output["2"] == Fraction(3, 5) * f + reject * Fraction(1, 5) != Fraction(1, 5)
    assert output["0"] == Fraction(1, 5) + reject * Fraction(1, 2)
    code, out, _ = run(capsys, "verify", spec, *PQ)
    assert "exact binary value" in out


def test_a_float_law_that_does_not_sum_to_1_is_refused(capsys, tmp_path):
    spec = user_file(tmp_path, "floatlaw", """
from exactspec import Dist
def rule(s, p, q):
    return s.draw(Dist([0.1, 0.2, 0.7], p.labels, check=False))
""")
    refused(capsys, ["verify", spec, *PQ], "sum to", "floatlaw.py line 4")


def test_user_print_goes_to_stderr_under_json(capsys, tmp_path):
    spec = user_file(tmp_path, "chatty", 'print("at import")\n'
                     'def rule(s, p, q):\n    print("inside")\n    return s.draw(p)\n')
    code, out, err = run(capsys, "verify", spec, *PQ, "--json")
    assert code == 0 and json.loads(out)["lossless"] is True
    assert "at import" in err and "inside" in err


@pytest.mark.parametrize("body, words", [
    ("import sys\ndef rule(s, p, q):\n    sys.exit(0)\n", ["sys.exit(0)", "exiting.py line 3"]),
    ("import sys\ndef rule(s, p, q):\n    sys.exit(3)\n", ["sys.exit(3)", "exiting.py line 3"]),
    ("def rule(s, p, q):\n    return 1 / 0\n", ["ZeroDivisionError", "exiting.py line 2"]),
    ("import sys\nsys.exit(0)\ndef rule(s, p, q):\n    return s.draw(p)\n", ["sys.exit(0)"]),
])
def test_exits_and_exceptions_in_user_code_are_the_users(capsys, tmp_path, body, words):
    spec = user_file(tmp_path, "exiting", body)
    refused(capsys, ["verify", spec, *PQ, "--json"], *words)


def test_a_clean_user_verifier_still_proves(capsys):
    code, out, _ = run(capsys, "verify", f"{ROOT / 'examples' / 'my_rule.py'}:my_rule", *PQ,
                       "--json")
    assert code == 0 and json.loads(out)["lossless"] is True


# -- 1b. hidden randomness through names bound before the run, on every route ----------------
#: Each rule draws hidden randomness so rarely (probability ~1e-12) that the verdict on this
#: instance does not change: every call must be refused anyway.
BOUND = {
    "from_random": ("from random import random", "random() < 1e-12", "random.random"),
    "from_time": ("from time import time", "time() < 0", "time.time"),
    "from_os": ("from os import urandom", "urandom(8) == bytes(8)", "os.urandom"),
    "from_numpy": ("from numpy.random import random", "random() < 1e-12",
                   "numpy.random.random"),
    "module_alias": ("import random as r", "r.random() < 1e-12", "random.random"),
    "secrets": ("from secrets import token_hex", "token_hex(8) == '0' * 16",
                "secrets.token_hex"),
    "uuid4": ("import uuid", "uuid.uuid4().int == 0", "uuid.uuid4"),
    "default_rng": ("import numpy as np", "np.random.default_rng().random() < 1e-12",
                    "numpy.random.default_rng"),
    "perf_counter_ns": ("from time import perf_counter_ns", "perf_counter_ns() < 0",
                        "time.perf_counter_ns"),
    "datetime_now": ("from datetime import datetime", "datetime.now().year < 0",
                     "datetime.datetime.now"),
    "helper_in_the_module": ("from random import random as _r\ndef rare():\n    return _r()",
                             "rare() < 1e-12", "random.random"),
    "dict_of_sources": ("import time\nCLOCKS = {'now': time.time}", "CLOCKS['now']() < 0",
                        "time.time"),
}


def bound_rules(tmp_path, case: str) -> Path:
    """One file with the same rare hidden call in the three shapes: one position
    ``rule(s, p, q)``, a whole call ``whole(s, pair, ctx)``, and the rows of every position
    ``rows(s, drafts, p, q)``; and a tree spec for the rows."""
    header, test, _ = BOUND[case]
    path = tmp_path / f"{case}.py"
    path.write_text(f"""{header}

def rule(s, p, q):
    x = s.draft(q)
    if {test}:
        return x
    return s.draw(p)


def whole(s, pair, ctx):
    p, q = pair.target(ctx), pair.draft(ctx)
    x = s.draft(q)
    if {test}:
        return (x,)
    return (s.draw(p),)


def rows(s, drafts, p, q):
    if {test}:
        return drafts
    return (s.draw(p[0]),)
""")
    (tmp_path / "spec.json").write_text(json.dumps(
        {"target": {"": "1/2,3/10,1/5"}, "draft": {"": "1/5,1/5,3/5"}, "gamma": 1, "m": 1}))
    return path


@pytest.mark.parametrize("case", sorted(BOUND))
def test_hidden_randomness_bound_before_the_run_is_refused_on_every_route(capsys, tmp_path,
                                                                          case):
    path = bound_rules(tmp_path, case)
    called = BOUND[case][2]
    ifs = [i + 1 for i, text in enumerate(path.read_text().splitlines())
           if text.strip().startswith("if ")]
    lines = dict(zip(("rule", "whole", "rows"), ifs))
    if "def rare" in BOUND[case][0]:              # the innermost line of the user's: the call
        lines = dict.fromkeys(lines, 3)
    for argv, function in (
            (["verify", f"{path}:rule", *PQ], "rule"),
            (["verify", f"{path}:rule", *PQ, "--arith", "float32"], "rule"),
            (["verify", f"{path}:whole", "--tokens", "1", *PQ], "whole"),
            (["tree", tmp_path / "spec.json", "--verifier", f"{path}:rows"], "rows"),
            (["tree", tmp_path / "spec.json", "--verifier", f"{path}:whole"], "whole")):
        line = refused(capsys, argv, f"called {called} ",
                       f"{case}.py line {lines[function]}")
        assert "a value the verifier built" not in line


def test_the_verdict_does_not_depend_on_the_clock(capsys, tmp_path, monkeypatch):
    """``if time() > t: return a wrong token``: the same refusal whatever the clock reads."""
    import time as clock

    path = tmp_path / "clocked.py"
    path.write_text("""from time import time

def rows(s, drafts, p, q):
    if time() > 1e9:
        return (2,)
    return (s.draw(p[0]),)


def rule(s, p, q):
    return 2 if time() > 1e9 else s.draw(p)
""")
    (tmp_path / "spec.json").write_text(json.dumps(
        {"target": {"": "1/2,3/10,1/5"}, "draft": {"": "1/5,1/5,3/5"}, "gamma": 1, "m": 1}))
    seen = set()
    for now in (0.0, 2e9):
        monkeypatch.setattr(clock, "time", lambda now=now: now)
        for argv in (["tree", tmp_path / "spec.json", "--verifier", f"{path}:rows"],
                     ["verify", f"{path}:rule", *PQ]):
            seen.add(refused(capsys, argv, "called time.time", "clocked.py line"))
    assert len(seen) == 2                                # one message per route, both clocks
    assert clock.time() == 2e9                           # the watch put the name back


def test_bound_names_are_put_back_after_the_run(capsys, tmp_path):
    import importlib.util
    import random as python_random

    from exactspec.engine.watch import HiddenRandomness, watched

    path = bound_rules(tmp_path, "from_random")
    spec = importlib.util.spec_from_file_location("bound_from_random", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    original = module.random
    with watched(module.rule):
        assert module.random is not original
        with pytest.raises(HiddenRandomness, match="random.random"):
            module.random()
    assert module.random is original is python_random.random
    assert 0 <= module.random() < 1


# -- 1c. float literals in exact arithmetic stay exact ----------------------------------------
TEXTBOOK_WITH_FLOATS = """from exactspec import Dist


def rule(s, p, q):
    x = s.draft(q)
    if s.coin(min(1.0, 0.0 + p[x] / q[x])):
        return x
    r = {t: max(p[t] - q[t], 0.0) for t in p}
    total = sum(r.values())
    return s.draw(Dist([r[t] / total for t in p], p.labels))


def whole(s, pair, ctx):
    return (rule(s, pair.target(ctx), pair.draft(ctx)),)


def rows(s, drafts, p, q):
    x = drafts[0]
    if s.coin(min(1.0, 0.0 + p[0][x] / q[0][x])):
        return (x, s.draw(p[1]))
    r = [max(p[0][t] - q[0][t], 0.0) for t in p[0]]
    total = sum(r)
    return (s.draw(Dist([v / total for v in r], p[0].labels)),)
"""


def test_the_textbook_rule_with_float_literals_is_lossless_in_exact_arithmetic(capsys,
                                                                               tmp_path):
    path = tmp_path / "textbook.py"
    path.write_text(TEXTBOOK_WITH_FLOATS)
    code, out, err = run(capsys, "verify", f"{path}:rule", *PQ, "--json")
    obj = json.loads(out)
    assert (code, err, obj["verdict"]) == (0, "", "lossless")
    assert obj["output"] == obj["target"] and obj["acceptance"] == "3/5"   # sum min(p, q)
    assert obj["floats_converted"] > 0
    code, out, _ = run(capsys, "verify", f"{path}:rule", *PQ)
    assert code == 0 and "float values met in the method" in out and "LOSSLESS" in out
    # in float32 the rounding is the whole bias: not a logic bug
    code, out, err = run(capsys, "verify", f"{path}:rule", *PQ, "--arith", "float32", "--json")
    obj = json.loads(out)
    assert (code, err, obj["verdict"], obj["bias_exact_arith"]) == (1, "", "lossy-rounding",
                                                                    "0")
    assert obj["floats_converted"] > 0
    # the same rule written as a whole call and over the rows of two positions
    code, out, _ = run(capsys, "verify", f"{path}:whole", "--tokens", "2", *PQ, "--json")
    assert code == 0 and json.loads(out)["lossless"] is True
    (tmp_path / "spec.json").write_text(json.dumps(
        {"target": {"": "1/2,3/10,1/5"}, "draft": {"": "1/5,1/5,3/5"}, "gamma": 1, "m": 2}))
    code, out, _ = run(capsys, "tree", tmp_path / "spec.json", "--verifier", f"{path}:rows",
                       "--json")
    assert code == 0 and json.loads(out)["verdict"] == "lossless"
    code, out, _ = run(capsys, "tree", tmp_path / "spec.json", "--verifier", f"{path}:rows",
                       "--arith", "float32", "--json")
    obj = json.loads(out)
    assert obj["verdict"] == "lossy-rounding" and obj["bias_exact_arith"] == "0"


def test_a_tiny_float_factor_keeps_its_exact_binary_value():
    """``x * 1e-9`` and ``1e-9 < u``: the branch probabilities hold ``Fraction(1e-9)``
    exactly (which is not ``1/10**9``)."""
    tiny = Fraction(1e-9)
    assert tiny != Fraction(1, 10**9)

    def scaled(s, p, q):
        x = s.draft(q)
        if s.coin(p[x] / q[x] * 1e-9):
            return x
        return s.draw(p)

    def threshold(s, p, q):
        u = s.uniform()
        return s.draw(p) if 1e-9 < u else s.draw(p)

    p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
    r = verify(scaled, p, q, keep_paths=True)
    heads = {prob for path in r.enumeration.path_list for kind, what, prob in path.branches
             if what == "coin heads"}
    assert heads == {p[t] / q[t] * tiny for t in p}
    assert r.lossless and r.floats_converted == r.paths == 12   # one 1e-9 on every path
    r = verify(threshold, p, q, keep_paths=True)
    cuts = sorted(prob for path in r.enumeration.path_list for kind, what, prob in path.branches
                  if kind == "uniform")
    assert set(cuts) == {tiny, 1 - tiny} and r.lossless


@pytest.mark.parametrize("expression", ["p[x] * float('inf')", "p[x] + float('nan')",
                                        "min(1, p[x] / 0.0)", "p[x] < float('nan')"])
def test_a_non_finite_float_in_exact_arithmetic_is_refused_naming_the_line(capsys, tmp_path,
                                                                           expression):
    spec = user_file(tmp_path, "nonfinite", f"""
def rule(s, p, q):
    x = s.draft(q)
    if s.coin(min(1, {expression})):
        return x
    return s.draw(p)
""")
    refused(capsys, ["verify", spec, *PQ], "nonfinite.py line 4")


# -- 2. work estimated before it is done ----------------------------------------------------
@pytest.mark.parametrize("argv, words", [
    (["verify", "kseq", *PQ, "--k", "1000000000"], ["k = 1000000000"]),
    (["verify", "key", *PQ, "--k", "1000000000"], ["k = 1000000000", "digits"]),
    (["verify", "key-lazy", *PQ, "--k", "1000000000"], ["digits"]),
    (["verify", "optimal", *PQ, "--k", "1000000000"], ["over the budget"]),
    (["optimal", *PQ, "--k", "1000000000"], ["digits", "--backend numpy"]),
    (["compare", *PQ, "--k", "1000000000"], ["digits"]),
    (["verify", "kseq", *PQ, "--k", "50"], ["degree-50", "k <= 32"]),
    (["verify", "rrs", *PQ, "--k", "1000000000"], ["k = 1000000000", "--backend numpy"]),
    (["verify", "key", *PQ, "--k", "3000"], ["k = 3000", "2,000 drafts"]),
    (["verify", "sps", "--p", "1e-100000000,1", "--q", "1/2,1/2"], ["exponent"]),
    (["verify", "sps", "--p", "@/dev/zero", "--q", "1/2,1/2"], ["/dev/zero", "MiB"]),
])
def test_too_much_work_is_refused_up_front(capsys, argv, words):
    refused(capsys, argv, *words)


def test_trees_too_large_are_refused(capsys, tmp_path):
    specs = {
        "gamma50": {"target": {"": "1/2,1/2"}, "draft": {"": "1/3,2/3"}, "gamma": 50},
        "vocab300": {"target": {"": ",".join(["1/300"] * 300)},
                     "draft": {"": ",".join(["1/300"] * 300)}, "gamma": 2},
        "wide": {"target": {"": "1/2,1/2"}, "draft": {"": "1/3,2/3"}, "branching": [300, 300]},
    }
    for name, spec in specs.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(spec))
        refused(capsys, ["tree", path], "tree spec", "budget")


def test_rho_large_k_from_the_closed_form(capsys):
    import sympy as sp

    from exactspec.bounds.rho.closed_form import rho
    from exactspec.bounds.rho.large import rho_large_report

    code, out, _ = run(capsys, "rho", "1000", "--json")
    obj = json.loads(out)
    assert code == 0 and obj["source"] == "closed form" and obj["k"] == 1000
    assert 0.75 < obj["rho_float"] < 0.7502
    # two ways: the closed form at K = 24 equals the per-K derivation
    derived, closed = rho(24).rho, sp.sympify(rho_large_report(24)["rho"])
    assert sp.N(derived - closed, 60) == 0 or abs(sp.N(derived - closed, 60)) < 1e-55


def test_large_exact_values_print(capsys):
    code, out, _ = run(capsys, "optimal", "--k", "5000", "--p", "1/2,1/2",
                       "--q", "1/100000,99999/100000", "--json")
    obj = json.loads(out)
    value = Fraction(obj["alpha_star"])
    assert code == 0 and len(obj["alpha_star"]) > 4300
    # token 0 (q/p smallest) is tight at g_k(1/100000); token 1 adds its whole p
    assert value == Fraction(1, 2) + 1 - Fraction(99999, 100000) ** 5000


def test_certificate_streams_and_matches_the_in_memory_one(tmp_path):
    from exactspec.verify import verify_to_certificate

    p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
    name = tmp_path / "c.json"
    streamed = verify_to_certificate("rrs", p, q, 3, str(name))
    in_memory = verify("rrs", p, q, 3, keep_paths=True).certificate()
    written = json.loads(name.read_text())
    assert streamed.enumeration.path_list is None
    assert written == in_memory and check_certificate(written) == []


# -- 3. inputs refused or accepted correctly ------------------------------------------------
def test_minus_zero_is_accepted(capsys):
    code, out, _ = run(capsys, "verify", "sps", "--p", "-0,1", "--q", "1/2,1/2", "--json")
    assert code == 0 and json.loads(out)["target"] == {"0": "0", "1": "1"}


@pytest.mark.parametrize("argv, words", [
    (["verify", "sps", *PQ, "--grid", "0"], ["--grid=0"]),
    (["verify", "sps", *PQ, "--max-paths", "0"], ["--max-paths=0"]),
    (["simulate", "sps", *PQ, "--seed", "-1"], ["--seed=-1"]),
    (["verify", "sps", *PQ, "--certificate", ""], ["--certificate ''"]),
    (["verify", "sps", "--search", "--k", "2"], ["--search", "k = 2"]),
    (["verify", "sps", "--p", "@{deep}", "--q", "1/2,1/2"], ["nests JSON too deeply"]),
    (["verify", "sps", "--p", "@{dup}", "--q", "1/2,1/2"], ["duplicate key 'a'"]),
    (["verify", "sps", "--p", "@{binary}", "--q", "1/2,1/2"], ["not UTF-8"]),
])
def test_bad_cli_input(capsys, tmp_path, argv, words):
    files = {"deep": "[" * 100_000, "dup": '{"a": 0.5, "a": 0.5}'}
    for name, text in files.items():
        (tmp_path / f"{name}.json").write_text(text)
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe[0.5, 0.5]")
    argv = [a.format(**{n: tmp_path / f"{n}.json" for n in ("deep", "dup", "binary")})
            for a in argv]
    refused(capsys, argv, *words)


def test_bare_exactspec_says_usage_on_stderr(capsys):
    code, out, err = run(capsys)
    assert code == 2 and out == "" and "usage" in err and "name a command" in err


def test_numpy_and_sympy_scalars():
    import numpy as np
    import sympy as sp

    for half in (np.float32(0.5), np.float16(0.5), np.longdouble(0.5), sp.Float(0.5)):
        assert Dist([half, half]).probs == (Fraction(1, 2), Fraction(1, 2))
    r = verify("rrs", Dist.parse("1/2,1/2"), Dist.parse("1/3,2/3"), np.int64(2))
    assert r.k == 2 and r.acceptance == Fraction(8, 9)
    from exactspec.core.errors import InvalidInput, NotExact

    for bad in ([sp.oo, 0], [sp.nan, 1], [sp.zoo, 1], [sp.I, 1]):
        with pytest.raises(NotExact):
            Dist(bad)
    with pytest.raises(InvalidInput, match="sums to sqrt"):
        Dist([sp.sqrt(2) / 2, sp.sqrt(2) / 2])
    assert Dist([sp.sqrt(2) / 2, 1 - sp.sqrt(2) / 2]).probs[0] == sp.sqrt(2) / 2
    with pytest.raises(InvalidInput, match="is a list"):
        Dist([Fraction(1, 2)] * 2, labels=[[1], [2]])


# -- 4. certificates bound to the method ----------------------------------------------------
def _certificate(method="rrs", k=2, p="1/2,3/10,1/5", q="1/5,1/5,3/5"):
    return verify(method, Dist.parse(p), Dist.parse(q), k, keep_paths=True).certificate()


def _equal_probability_paths(cert, same_output):
    paths = cert["paths"]
    for i, a in enumerate(paths):
        for j in range(i + 1, len(paths)):
            b = paths[j]
            if (a["probability"] == b["probability"]
                    and (a["output"] == b["output"]) == same_output):
                return i, j
    raise AssertionError("no such pair")


def _tamperings():
    def law_removed(c):
        del c["law"]

    def target_changed(c):
        c["target"] = {"0": "1/5", "1": "1/2", "2": "3/10"}

    def swap_outputs(c):
        i, j = _equal_probability_paths(c, same_output=False)
        c["paths"][i]["output"], c["paths"][j]["output"] = \
            c["paths"][j]["output"], c["paths"][i]["output"]

    def move_mass(c):
        outputs = {}
        for i, path in enumerate(c["paths"]):
            outputs.setdefault(path["output"], []).append(i)
        i, j = next(v for v in outputs.values() if len(v) >= 2)[:2]
        a, b = c["paths"][i], c["paths"][j]
        delta = min(Fraction(a["probability"]), Fraction(b["probability"])) / 2
        for path, sign in ((a, 1), (b, -1)):
            new = Fraction(path["probability"]) + sign * delta
            path["branches"][-1][2] = str(Fraction(path["branches"][-1][2]) * new
                                          / Fraction(path["probability"]))
            path["probability"] = str(new)

    def method_changed(c):
        c["method"] = "rrs-wor"

    def draft_changed(c):
        c["draft"] = {"0": "1/5", "1": "3/5", "2": "1/5"}

    def acceptance_changed(c):
        c["acceptance"] = "1"

    def claim_flipped(c):
        c["claim"] = "law"

    def k_changed(c):
        c["k"] = 3

    return [law_removed, target_changed, swap_outputs, move_mass, method_changed,
            draft_changed, acceptance_changed, claim_flipped, k_changed]


def test_an_honest_certificate_checks_with_and_without_replay():
    for method, k in (("sps", 1), ("naive", 1), ("rrs", 2), ("rrs-wor", 2), ("kseq", 2),
                      ("optimal", 2), ("key", 2), ("spechub", 2)):
        cert = _certificate(method, k)
        assert check_certificate(cert) == [], method
        assert check_certificate(cert, replay=False) == [], method


@pytest.mark.parametrize("tamper", _tamperings(), ids=lambda f: f.__name__)
def test_tampered_certificates_are_rejected(tamper):
    cert = _certificate()
    tamper(cert)
    assert check_certificate(cert), tamper.__name__


def test_a_tampered_lossy_certificate_is_rejected():
    cert = _certificate("naive", 1, "1/2,1/2", "3/4,1/4")
    assert cert["claim"] == "law" and check_certificate(cert) == []
    for field, value in (("target", {"0": "3/4", "1": "1/4"}), ("acceptance", "0")):
        bad = json.loads(json.dumps(cert))
        bad[field] = value
        assert check_certificate(bad), field
    bad = json.loads(json.dumps(cert))
    del bad["law"]
    assert check_certificate(bad) and check_certificate(bad, replay=False)


def test_replay_catches_what_the_method_free_check_cannot():
    """Outputs swapped between two paths of equal probability leave every sum unchanged when
    the two outputs' laws allow it; only the replay sees that the method outputs otherwise."""
    cert = _certificate("sps", 1, "1/3,1/3,1/3", "1/3,1/3,1/3")
    i, j = _equal_probability_paths(cert, same_output=False)
    paths = cert["paths"]
    paths[i]["output"], paths[j]["output"] = paths[j]["output"], paths[i]["output"]
    for path in (paths[i], paths[j]):
        path["drafts"] = [path["output"]]
    assert check_certificate(cert, replay=False) == []
    assert any("replay" in msg for msg in check_certificate(cert))


def test_checker_cli_no_replay_and_unknown_method(tmp_path, capsys):
    cert = _certificate()
    cert["method"] = "no_such_module:rule"
    name = tmp_path / "c.json"
    name.write_text(json.dumps(cert))
    assert checker_main([str(name)]) == 4              # not checked, never imported
    assert "not replayed" in capsys.readouterr().out
    assert checker_main(["--no-replay", str(name)]) == 0


@pytest.mark.slow
def test_the_cli_end_to_end_in_a_subprocess(tmp_path):
    """A handful through a real process: stdout stays one JSON object, exit codes hold."""
    chatty = tmp_path / "chatty.py"
    chatty.write_text('print("noise")\ndef rule(s, p, q):\n    print("more")\n'
                      "    return s.draw(p)\n")
    exe = [sys.executable, "-m", "exactspec"]
    done = subprocess.run(exe + ["verify", f"{chatty}:rule", *PQ, "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and json.loads(done.stdout)["lossless"] is True
    assert "noise" in done.stderr
    done = subprocess.run(exe, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "usage" in done.stderr
    cert = tmp_path / "c.json"
    done = subprocess.run(exe + ["verify", "rrs", *PQ, "--k", "2", "--certificate", str(cert)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    done = subprocess.run([sys.executable, "-m", "exactspec.checker", str(cert)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "CERTIFICATE OK" in done.stdout


# -- 5. multi-position rules: one route, every option honoured or refused ----------------------
ONE_ROUTE = """
from exactspec import residual

calls = 0


def rule(s, pair, ctx):
    p, q = pair.target(ctx), pair.draft(ctx)
    x = s.draft(q)
    if s.uniform() <= p[x] / q[x]:
        return (x,)
    return (s.draw(residual(p, q)),)


def counted(s, pair, ctx):
    global calls
    calls += 1
    return (s.draw(pair.target(ctx)),)


def single(s, p, q):
    x = s.draft(q)
    if s.uniform() <= p[x] / q[x]:
        return s.accept(x)
    return s.draw(residual(p, q))
"""


def test_tokens_with_arith_is_never_dropped(capsys, tmp_path):
    """verify --tokens --arith float32 once printed PROVED and exit 0 without the float run."""
    spec = user_file(tmp_path, "oneroute", ONE_ROUTE)
    code, out, _ = run(capsys, "verify", spec, "--tokens", "2", *PQ, "--arith", "float32",
                       "--json")
    obj = json.loads(out)
    assert code == 1 and obj["verdict"] == "lossy-rounding" and obj["arith"] == "float32"
    assert obj["bias_exact_arith"] == "0" and Fraction(obj["bias"]) > 0


def test_tokens_refuses_a_call_counter(capsys, tmp_path):
    """A module-global call counter once gave a 'law' of total mass 9/4 through --tokens."""
    spec = user_file(tmp_path, "oneroute", ONE_ROUTE).replace(":rule", ":counted")
    refused(capsys, ["verify", spec, "--tokens", "3", *PQ], "hidden state", "'calls'")


def test_pure_grid_bias_is_not_called_logic(capsys, tmp_path):
    spec = user_file(tmp_path, "oneroute", ONE_ROUTE).replace(":rule", ":single")
    code, out, _ = run(capsys, "verify", spec, "--p", "0,1", "--q", "1/2,1/2", "--grid", "4",
                       "--json")
    obj = json.loads(out)
    assert code == 1 and obj["verdict"] == "lossy-grid" and obj["bias"] == "1/8"


@pytest.mark.parametrize("argv, words", [
    (["verify", "{rule}", "--tokens", "2", *PQ, "--k", "2"], ["--k", "multi-position"]),
    (["verify", "{rule}", "--tokens", "2", *PQ, "--backend", "numpy"], ["--backend numpy"]),
    (["verify", "{rule}", "--tokens", "2", "--logits-p", "1,2", "--logits-q", "2,1"],
     ["--logits-p"]),
    (["verify", "{rule}", "--tokens", "2", "--search", *PQ], ["--search", "--p"]),
    (["verify", "sps", *PQ, "--gamma", "2"], ["--gamma", "--tokens"]),
    (["verify", "sps", *PQ, "--search-tokens", "2"], ["--search-tokens", "--search"]),
    (["verify", "sps", "--search", "--search-tokens", "0"], ["--search-tokens 0"]),
    (["verify", "sps", "--search", "--search-tokens", "100"], ["--search-tokens 100"]),
    (["tree", str(ROOT / "examples" / "chain.json"), "--search-tokens", "2"],
     ["--search-tokens", "user's verifier"]),
    (["verify", "sps", "--search", *PQ], ["--p", "--search"]),
    (["verify", "sps", "--search", "--certificate", "c.json"], ["--certificate", "--search"]),
    (["verify", "sps", "--search", "--backend", "numpy"], ["--backend numpy", "--search"]),
])
def test_options_a_route_cannot_honour_are_refused(capsys, tmp_path, argv, words):
    spec = user_file(tmp_path, "oneroute", ONE_ROUTE)
    refused(capsys, [a.format(rule=spec) for a in argv], *words)


@pytest.mark.parametrize("case", sorted(HIDDEN))
@pytest.mark.parametrize("route", ["tokens", "tree"])
def test_hidden_randomness_refused_on_the_multi_position_route(capsys, tmp_path, case, route):
    """The watch and the replay of the one-position route also guard verify --tokens and
    tree --verifier (one route): no law is printed for a rule that draws outside s."""
    header, test, word = HIDDEN[case]
    spec = user_file(tmp_path, case, header + f"""
def rule(s, pair, ctx):
    x = s.draft(pair.draft(ctx))
    if {test}:
        return (x,)
    return (s.draw(pair.target(ctx)),)
""")
    if route == "tokens":
        argv = ["verify", spec, "--tokens", "2", *PQ]
    else:
        tree = tmp_path / "spec.json"
        tree.write_text(json.dumps({"target": {"": PQ[1]}, "draft": {"": PQ[3]}, "m": 2}))
        argv = ["tree", tree, "--verifier", spec]
    line = refused(capsys, argv, "hidden" if word == "hidden" else word)
    if word != "hidden":
        assert f"{case}.py line" in line


# -- every option composes: races and noise under --arith, logits, products, lookups -------------
COMPOSE_PQ = ["--p", "1/2,1/3,1/6", "--q", "1/6,1/6,2/3"]
COMPOSE = {
    # name: (body of rule(s, p, q), extra arguments, exit code, word in the verdict or message)
    "race_float32": ("E = s.exponentials(3)\n    return p.labels[(list(p.probs) / E).argmax()]",
                     ["--arith", "float32"], 1, "lossy-rounding"),
    "gumbel_float32": ("from exactspec.engine.races import log\n"
                       "    return p.labels[(log(list(p.probs)) + s.gumbels(3)).argmax()]",
                       ["--arith", "float32"], 1, "lossy-rounding"),
    "gumbel_logits": ("return p.labels[([s.log(v) for v in p.probs] + s.gumbels(3)).argmax()]",
                      [], 0, "lossless"),
    "gumbel_nan_logit": ("return p.labels[([float('nan'), 0, 0] + s.gumbels(3)).argmax()]",
                         [], 2, "not a finite"),
    "prefix_product": ("u, v = s.uniform(), s.uniform()\n"
                       "    if u < p[0]:\n        return p.labels[0]\n"
                       "    return p.labels[1] if u * v < p[1] else p.labels[2]",
                       [], 1, "lossy-logic"),
    "running_product": ("u1, u2, u3 = s.uniform(), s.uniform(), s.uniform()\n"
                        "    if u1 < p[0]:\n        return p.labels[0]\n"
                        "    if u1 * u2 < p[0]:\n        return p.labels[1]\n"
                        "    return p.labels[2] if u1 * u2 * u3 < p[0] else p.labels[0]",
                        [], 1, "lossy-logic"),
    "product_under_arith": ("u, v = s.uniform(), s.uniform()\n"
                            "    return p.labels[0] if u * v < p[0] else p.labels[1]",
                            ["--arith", "float32"], 2, "two explicit uniforms"),
    "unnormalised_pick": ("from exactspec import Dist\n    w = [3 * v for v in p.probs]\n"
                          "    return s.pick(Dist(w, p.labels, check=False), "
                          "s.uniform() * sum(w))", [], 0, "lossless"),
    "unnormalised_pick_float32": ("from exactspec import Dist\n    w = [3 * v for v in p.probs]\n"
                                  "    return s.pick(Dist(w, p.labels, check=False), "
                                  "s.uniform() * sum(w))", ["--arith", "float32"], 1,
                                  "lossy-rounding"),
    "pick_over_a_list_float32": ("w = [3 * v for v in p.probs]\n"
                                 "    return p.labels[s.pick(w, s.uniform() * sum(w))]",
                                 ["--arith", "float32"], 1, "lossy-rounding"),
    "pick_over_a_string": ("return s.pick('abc', s.uniform())", [], 2, "give a Dist"),
    "lookup_past_total": ("from exactspec import Dist\n"
                          "    return s.pick(Dist([v / 2 for v in p.probs], p.labels, "
                          "check=False), s.uniform())", [], 2, "past the cumulative sums"),
    "exp_overflow": ("from exactspec import Dist\n    w = [s.exp(1000 * v) for v in p.probs]\n"
                     "    return s.pick(Dist(w, p.labels, check=False), s.uniform())",
                     ["--arith", "float32"], 2, "float32 overflow: s.exp(500)"),
    "elementwise_numpy": ("w = s.softmax([s.log(v) for v in p.probs])\n"
                          "    from exactspec import Dist\n"
                          "    return s.pick(Dist(w, p.labels, check=False), s.uniform())",
                          ["--arith", "float32", "--elementwise", "numpy"], 1, "numpy"),
    "elementwise_without_arith": ("return s.draw(p)", ["--elementwise", "numpy"], 2, "arith"),
}


@pytest.mark.parametrize("case", sorted(COMPOSE))
def test_every_option_composes(capsys, tmp_path, case):
    body, extra, want, word = COMPOSE[case]
    spec = user_file(tmp_path, case, f"def rule(s, p, q):\n    {body}\n")
    if want == 2:
        refused(capsys, ["verify", spec, *COMPOSE_PQ, *extra, "--json"], word)
        return
    code, out, err = run(capsys, "verify", spec, *COMPOSE_PQ, *extra, "--json")
    obj = json.loads(out)
    assert code == want and "Traceback" not in err, err
    assert word in (obj["verdict"], obj.get("elementwise")), obj


# -- budgets on every surface: estimated and refused up front, or fast ---------------------------
RULE = ("def rule(s, pair, ctx):\n"
        "    p, q = pair.target(ctx), pair.draft(ctx)\n"
        "    x = s.draft(q)\n"
        "    return (x,) if s.coin(min(1, p[x] / q[x])) else (s.draw(p),)\n")


@pytest.mark.parametrize("tokens,estimate", [(40, "1,099,511,627,776"),
                                             (10**6, "2^1,000,000")])
def test_verify_tokens_refused_up_front_with_the_estimate(tmp_path, capsys, tokens, estimate):
    rule = user_file(tmp_path, "chain", RULE)
    refused(capsys, ["verify", rule, "--p", "1/2,1/2", "--q", "1/4,3/4", "--tokens", tokens],
            f"m = {tokens}", estimate, "1,000,000")     # the one route's budget
    code, out, _ = run(capsys, "verify", rule, "--p", "1/2,1/2", "--q", "1/4,3/4",
                       "--tokens", 2, "--json")
    assert code == 1 and json.loads(out)["m"] == 2    # small m still runs (lossy rule)


def test_sequence_count_two_ways():
    """The estimate is vocab^max(m, gamma), exactly while it is small, capped past 2^64."""
    from exactspec.core.budget import sequence_count

    for vocab in (1, 2, 3, 5):
        for m in range(1, 6):
            for gamma in range(0, 5):
                assert sequence_count(vocab, m, gamma) == len(
                    list(itertools.product(range(vocab), repeat=max(m, gamma))))
    assert sequence_count(2, 64) == 2**64 and sequence_count(2, 65) == 2**64 + 1


def test_tree_spec_with_a_huge_m_or_gamma_is_refused_up_front(tmp_path, capsys):
    model = {"labels": ["a", "b"], "target": {"": "1/2,1/2"}, "draft": {"": "1/4,3/4"}}
    spec = tmp_path / "chain.json"
    spec.write_text(json.dumps({**model, "verifier": "chain", "gamma": 2, "m": 10**9}))
    refused(capsys, ["tree", spec], "2^1,000,000,000", "1,000,000")
    rule = user_file(tmp_path, "whole", RULE)
    user = tmp_path / "user.json"
    user.write_text(json.dumps({**model, "m": 2}))
    refused(capsys, ["tree", user, "--verifier", rule, "--m", 10**9], "2^1,000,000,000")
    refused(capsys, ["tree", user, "--verifier", rule, "--m", 40], "1,099,511,627,776")


@pytest.mark.parametrize("text,words", [
    ("2**-100000000", ["60,206,000 digits", "1,000,000"]),
    ("1e-100000000", ["-100,000,000", "10,000"]),
    ("2**-12345678901234", ["over the budget"]),
    ("-2**-20", ["at least 0"]),
    ("-1e-6", ["at least 0"]),
    ("0**-1", ["not a number"]),
])
def test_tolerance_bounded_and_signed(capsys, text, words):
    refused(capsys, ["verify", "sps", *PQ, "--arith", "float32", f"--tolerance={text}"],
            "--tolerance", *words)


def test_exact_number_reads_the_sign_of_a_power():
    from exactspec.cli import read_exact_number

    assert read_exact_number("-2**-20", "t") == -Fraction(1, 2**20)
    assert read_exact_number("2**(-20)", "t") == Fraction(1, 2**20) == 2 ** Fraction(-20)
    assert read_exact_number("1e-6", "t") == Fraction(1, 10**6)
    assert read_exact_number("3/4**2", "t") == Fraction(3, 16) == Fraction(3) / 4 ** 2
    assert read_exact_number("1/2**-3", "t") == 8


def test_logits_bounded_inline_in_a_file_and_by_size(tmp_path, capsys):
    refused(capsys, ["verify", "sps", "--logits-p", "1e9999,0", "--logits-q", "0,0",
                     "--arith", "float32"], "logits-p[0]", "10,000")
    big = tmp_path / "big.json"
    big.write_text("[1e9999, 0]")
    refused(capsys, ["verify", "sps", "--logits-p", f"@{big}", "--logits-q", "0,0",
                     "--arith", "float32"], "logits-p[0]", "10,000")
    long = tmp_path / "long.json"
    long.write_text("[" + "1" * 100_000 + ", 0]")
    refused(capsys, ["verify", "sps", "--logits-p", f"@{long}", "--logits-q", "0,0",
                     "--arith", "float32"], "100,000 characters")
    nan = tmp_path / "nan.json"
    nan.write_text("[1, NaN]")
    refused(capsys, ["verify", "sps", "--logits-p", f"@{nan}", "--logits-q", "0,0",
                     "--arith", "float32"], "NaN", "finite")
    refused(capsys, ["verify", "sps", "--logits-p", "@/dev/zero", "--logits-q", "0,0",
                     "--arith", "float32"], "/dev/zero", "64 MiB")


def test_exact_optimal_on_a_million_tokens_refused_before_parsing(tmp_path, capsys):
    onehot = tmp_path / "onehot.json"
    onehot.write_text("[1" + ", 0" * (10**6 - 1) + "]")
    refused(capsys, ["optimal", "--p", f"@{onehot}", "--q", f"@{onehot}"],
            "1,000,000 entries", "250,000", "--backend numpy")


def test_optimal_text_table_is_linear_in_the_vocabulary(monkeypatch, capsys):
    """Each token of the table costs a bounded number of label comparisons (a list of tight
    labels searched per token made it quadratic: minutes at 152,064 tokens): the optimum's
    order and tight prefix are handed to the table as labels that count their comparisons."""
    import dataclasses

    import exactspec.optimum.closed_form as closed_form_module

    comparisons = [0]

    class Label(str):
        __hash__ = str.__hash__

        def __eq__(self, other):
            comparisons[0] += 1
            return str.__eq__(self, other)

    real = closed_form_module.optimum

    def counting_optimum(p, q, k):
        opt = real(p, q, k)
        return dataclasses.replace(opt, order=tuple(map(Label, opt.order)),
                                   tight=tuple(map(Label, opt.tight)))

    monkeypatch.setattr(closed_form_module, "optimum", counting_optimum)
    n = 3000
    p = ",".join(["1"] * n)                           # every ratio ties: all prefixes tight
    q = ",".join(["1"] * n)
    labels = ",".join(f"t{i}" for i in range(n))     # text labels, as Label's are
    code, out, _ = run(capsys, "optimal", "--p", p, "--q", q, "--normalize",
                       "--labels", labels)
    assert code == 0 and out.count("tight") >= n
    assert n <= comparisons[0] <= 4 * n, comparisons[0]   # a list search: about n^2 / 2


def test_prove_refuses_empty_and_unknown_names_and_caps_jobs(monkeypatch, capsys):
    import os

    import exactspec.claims.runner as runner

    seen = []

    def fake_run_claims(names, *, jobs=None, full=False, on_event=None):
        seen.append((names, jobs))
        return iter(())

    monkeypatch.setattr(runner, "run_claims", fake_run_claims)
    refused(capsys, ["prove", ""], "unknown claim ''")
    refused(capsys, ["prove", "no-such-claim"], "unknown claim 'no-such-claim'")
    assert seen == []                                 # refused before any work
    code, _, err = run(capsys, "prove", "top1-lossy", "--jobs", 100000)
    cores = len(os.sched_getaffinity(0))
    assert code == 0 and seen == [(["top1-lossy"], cores)]
    assert f"capped at the {cores} cores" in err


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_scheduler_timeout_must_be_finite_and_positive(capsys, value):
    refused(capsys, ["prove", "top1-lossy", "--scheduler", "tcp://127.0.0.1:1",
                     f"--scheduler-timeout={value}"], "--scheduler-timeout", "finite")


def test_certificate_dir_that_is_not_a_folder(monkeypatch, capsys, tmp_path):
    import exactspec.claims.runner as runner

    monkeypatch.setattr(runner, "run_claims", lambda *a, **k: pytest.fail("ran the claims"))
    refused(capsys, ["prove", "top1-lossy", "--certificate-dir", "/dev/null"],
            "/dev/null", "not a folder")
    refused(capsys, ["prove", "top1-lossy", "--certificate-dir", "/dev/null/sub"],
            "/dev/null/sub", "cannot create")


@pytest.mark.parametrize("call", ["os._exit(0)", "sys.exit(0)", "os._exit(3)"])
def test_user_code_that_ends_the_process_is_refused(tmp_path, call):
    """os._exit in user code used to end the command with exit 0 and an empty stdout under
    --json; now it is refused in one line, exit 2 (in a subprocess: the test's own process
    must survive a trap that fails)."""
    rule = user_file(tmp_path, "exiter", f"import os, sys\ndef rule(s, p, q):\n    {call}\n")
    done = subprocess.run([sys.executable, "-m", "exactspec", "verify", rule, *PQ, "--json"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and done.stdout == json_failure(lines[0]), done
    assert len(lines) == 1 and call.split("(")[0] in lines[0] and "exiter.py" in lines[0]


def test_last_arrival_race_over_24_tokens_refused_up_front(tmp_path, capsys):
    """A race whose outcome is the last arrival over 24 tokens of distinct weights: about
    2^23 inclusion-exclusion subsets per token before; now the distinct subset sums are
    estimated and the race refused in one line."""
    import random

    rng = random.Random(4)
    weights = [rng.randint(1, 1000) for _ in range(24)]
    total = sum(weights)
    p = ",".join(f"{w}/{total}" for w in weights)
    q = ",".join(["1/24"] * 24)
    rule = user_file(tmp_path, "last", "def rule(s, p, q):\n"
                     "    E = s.exponentials(len(p))\n"
                     "    return list(p.labels)[(p / E).argmin()]\n")
    refused(capsys, ["verify", rule, "--p", p, "--q", q], "24 tokens", "226,920",
            "100,000")
    code, out, _ = run(capsys, "verify", rule, "--p", q, "--q", q, "--json")
    assert code == 0 and json.loads(out)["lossless"] is True    # equal weights: 24 sums


def test_last_arrival_law_by_subset_sums_equals_the_enumeration():
    """The grouped inclusion-exclusion against the plain one over every subset, and both
    against the closed form for two tokens, w_j / ... : P(last = 0) = w_1 / (w_0 + w_1)."""
    import random

    from exactspec.engine.races import last_arrival_law

    def by_subsets(weights):
        out = []
        for j, wj in enumerate(weights):
            others = weights[:j] + weights[j + 1:]
            out.append(sum(((-1) ** len(a) * wj / (wj + sum(a, Fraction(0)))
                            for size in range(len(others) + 1)
                            for a in itertools.combinations(others, size)), Fraction(0)))
        return out

    rng = random.Random(7)
    for _ in range(30):
        n = rng.randint(2, 7)
        weights = [Fraction(rng.randint(1, 9), rng.randint(1, 4)) for _ in range(n)]
        law = last_arrival_law(weights)
        assert law == by_subsets(weights) and sum(law) == 1
    assert last_arrival_law([Fraction(1), Fraction(3)]) == [Fraction(3, 4), Fraction(1, 4)]


# -- files read and written: inputs never overwritten, outputs whole, nothing that blocks -----
def small_dump(tmp_path, name="d.npz"):
    """A dump as tests/test_sweep.py makes one: float32 logits, 6 positions of 8 tokens."""
    import numpy as np

    rng = np.random.default_rng(0)
    target = (2.0 * rng.normal(size=(6, 8))).astype(np.float32)
    draft = (target + rng.normal(size=(6, 8))).astype(np.float32)
    path = tmp_path / name
    np.savez(path, target=target, draft=draft)
    return path


def chain_spec(tmp_path):
    """A chain spec whose model and verifier are files of their own."""
    (tmp_path / "model.json").write_text(json.dumps(
        {"labels": "ab", "target": {"": "1/2,1/2"}, "draft": {"": "1/3,2/3"}}))
    (tmp_path / "rows.py").write_text(
        "def rows(s, drafts, p, q):\n    return (s.draw(p[0]),)\n")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"model": "model.json", "verifier": "rows.py:rows",
                                "gamma": 1, "m": 1}))
    return spec


def test_an_output_that_names_an_input_is_refused_before_any_work(capsys, tmp_path):
    """``sweep d.npz --html d.npz`` once exited 0 and wrote the report over the dump; every
    output option naming an input (by name, through a symbolic or a hard link, or inside an
    input folder) is refused in one line, the input's bytes untouched."""
    import os

    dump = small_dump(tmp_path)
    os.symlink(dump, tmp_path / "link.html")
    os.link(dump, tmp_path / "hard.csv")
    (tmp_path / "p.json").write_text("[0.5, 0.5]")
    spec = chain_spec(tmp_path)
    npy = tmp_path / "npy"
    npy.mkdir()
    import numpy as np

    np.save(npy / "target.npy", np.full((2, 3), 1 / 3))
    np.save(npy / "draft.npy", np.full((2, 3), 1 / 3))
    before = {f: f.read_bytes() for f in tmp_path.rglob("*") if f.is_file()}
    cases = [
        (["sweep", dump, "--logits", "--html", dump], ["--html", "is the dump"]),
        (["sweep", dump, "--logits", "--html", tmp_path / "link.html"], ["is the dump"]),
        (["sweep", dump, "--logits", "--out", tmp_path / "hard.csv"], ["is the dump"]),
        (["sweep", dump, "--logits", "--summary-json", dump], ["--summary-json"]),
        (["sweep", dump, "--logits", "--plot", dump], ["--plot"]),
        (["sweep", npy, "--out", npy / "results.csv"], ["inside the dump"]),
        (["sweep", dump, "--logits", "--out", tmp_path / "x.csv", "--summary-json",
          tmp_path / "x.csv"], ["the same file"]),
        (["verify", "sps", "--p", f"@{tmp_path / 'p.json'}", "--q", "1/2,1/2",
          "--certificate", tmp_path / "p.json"], ["is the --p file"]),
        (["tree", spec, "--certificate", spec], ["is the spec"]),
        (["tree", spec, "--certificate", tmp_path / "model.json"], ["the spec's model file"]),
        (["tree", spec, "--certificate", tmp_path / "rows.py"], ["the spec's verifier file"]),
        (["verify", f"{tmp_path / 'rows.py'}:rows", "--tokens", "1", "--p", "1/2,1/2",
          "--q", "1/2,1/2", "--certificate", tmp_path / "rows.py"], ["is the rule file"]),
    ]
    for argv, words in cases:
        line = refused(capsys, argv, *words)
        assert "an output never" in line or "give each output its own" in line
    assert {f: f.read_bytes() for f in tmp_path.rglob("*") if f.is_file()} == before


def test_outputs_are_written_whole_or_not_at_all(capsys, tmp_path):
    """An output goes to a temporary file in its folder, renamed into place once whole: a
    write that fails half-way leaves the old file as it was and no temporary behind; a new
    file gets the usual permissions; a device such as ``/dev/null`` is written in place."""
    import os

    from exactspec.core.errors import InvalidInput
    from exactspec.core.files import output_file

    target = tmp_path / "out.json"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with output_file(target, "--out") as handle:
            handle.write("half")
            raise RuntimeError("the writer failed")
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["out.json"]
    # a user's rule that fails on its second path: the certificate streamed so far is dropped
    rule = user_file(tmp_path, "fails", "def rule(s, p, q):\n    x = s.draft(q)\n"
                     "    if x == 1:\n        raise ValueError('no')\n    return x\n")
    cert = tmp_path / "c.json"
    cert.write_text("the old certificate")
    code, _, err = run(capsys, "verify", rule, *PQ, "--certificate", cert)
    assert code == 2 and "ValueError" in err
    assert cert.read_text() == "the old certificate"
    assert sorted(os.listdir(tmp_path)) == ["c.json", "fails.py", "out.json"]
    new = tmp_path / "new.json"
    assert run(capsys, "verify", "sps", *PQ, "--certificate", new)[0] == 0
    mask = os.umask(0)
    os.umask(mask)
    assert os.stat(new).st_mode & 0o777 == 0o666 & ~mask
    assert json.loads(new.read_text())["acceptance"] == "3/5"
    assert run(capsys, "verify", "sps", *PQ, "--certificate", "/dev/null")[0] == 0
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")
    with pytest.raises(InvalidInput, match="cannot write"):
        with output_file(tmp_path / "no" / "such" / "folder.json", "--out") as handle:
            handle.write("x")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_is_one_line_naming_the_file(capsys, tmp_path):
    """``--certificate /dev/full`` was 'OSError ... inside exactspec: please report this as a
    bug'; every writer now names the file and the reason."""
    dump = small_dump(tmp_path)
    for argv, flag in (
            (["verify", "sps", *PQ, "--certificate", "/dev/full"], "--certificate"),
            (["verify", "sps", *PQ, "--arith", "float32", "--certificate", "/dev/full"],
             "--certificate"),
            (["sweep", dump, "--logits", "--summary-json", "/dev/full"], "--summary-json"),
            (["sweep", dump, "--logits", "--html", "/dev/full"], "--html")):
        refused(capsys, argv, f"{flag} /dev/full: cannot write", "No space left on device")


# -- work without bounds, refused up front or done in seconds -----------------------------------
def test_a_long_exact_row_is_refused_before_the_path_estimate(capsys, tmp_path):
    """A rule on the paths with ``--normalize`` on 200,000 entries: reading takes 2 s, but the
    path estimate then runs the method over every entry at least 40 times (about a second a
    run: minutes, then refused as millions of paths); refused up front with that estimate.
    (The one-draft rule itself is no longer refused there: law leaves prove it, about
    ``2 V`` leaves; this rule adds to its resampled token, which law leaves do not follow.)
    ``simulate --n 10**29`` likewise (it ran forever)."""
    import random

    rng = random.Random(0)
    for name in ("p", "q"):
        (tmp_path / f"{name}.json").write_text(
            json.dumps([rng.randint(1, 1000) for _ in range(200_000)]))
    rule = tmp_path / "rule.py"
    rule.write_text("def f(s, p, q):\n    return s.draw(p) + 0\n")
    rows = ["--p", f"@{tmp_path / 'p.json'}", "--q", f"@{tmp_path / 'q.json'}", "--normalize"]
    refused(capsys, ["verify", f"{rule}:f", *rows], "200,000 entries", "40 runs", "24 s",
            "--backend numpy")
    refused(capsys, ["verify", f"{rule}:f", *rows, "--json"], "200,000 entries")
    refused(capsys, ["simulate", "sps", "--p", "1/2,1/2", "--q", "1/2,1/2", "--n", 10**29],
            "samples", "1.1e+24 s", "600 s")


def test_numbers_and_counts_without_bound_are_refused(capsys, tmp_path):
    """A tree spec holding ``1e999999999`` (building it never ended), ``rho`` of a 5,000-digit
    k (16 s of sympy and 95 KB of digits), ``--tokens 10**29`` on a one-token pair (one
    sequence, but 10**29 tokens to generate), ``--block-mb inf``: each one line."""
    spec = tmp_path / "big.json"
    spec.write_text('{"labels": "ab", "target": {"": [1e999999999, 0]}, '
                    '"draft": {"": [0.5, 0.5]}, "gamma": 1}')
    refused(capsys, ["tree", spec], "big.json", "999,999,999", "10,000")
    long = tmp_path / "long.json"
    long.write_text('{"labels": "ab", "target": {"": [0.5, 0.5]}, "draft": {"": [0.5, 0.5]}, '
                    '"gamma": 1' + "0" * 20_000 + "}")
    refused(capsys, ["tree", long], "20,001 characters", "10,000")
    refused(capsys, ["rho", "1" + "0" * 5000], "5,001 digits", "1,000")
    rule = user_file(tmp_path, "whole", "def rule(s, pair, ctx):\n"
                     "    return (s.draw(pair.target(ctx)),)\n")
    for extra in ([], ["--max-paths", 10**40]):
        refused(capsys, ["verify", rule, "--tokens", 10**29, "--p", "1", "--q", "1", *extra],
                "tokens", "to generate", "1,000,000")
    dump = small_dump(tmp_path)
    for size in ("inf", "nan", "-1"):
        refused(capsys, ["sweep", dump, "--logits", "--block-mb", size], "--block-mb",
                "finite positive")


def test_a_zarr_store_that_declares_rows_it_does_not_hold(capsys, tmp_path):
    """10**12 rows declared and no chunk written: zarr's own count of the chunks stored
    visits every key of the grid (10**9 of them: it never ended); the store's files are
    counted instead.  A corrupt chunk is one line naming the dump, not 'please report'."""
    zarr = pytest.importorskip("zarr")
    import numpy as np

    group = zarr.open_group(str(tmp_path / "big.zarr"), mode="w")
    for name in ("target", "draft"):
        group.create_array(name, shape=(10**12, 8), chunks=(1000, 8), dtype="float32")
    refused(capsys, ["sweep", tmp_path / "big.zarr", "--logits"], "1,000,000,000 chunks",
            "holds 0")
    group = zarr.open_group(str(tmp_path / "bad.zarr"), mode="w")
    rng = np.random.default_rng(0)
    for name in ("target", "draft"):
        group.create_array(name, shape=(20, 8), chunks=(10, 8), dtype="float32")[:] = \
            rng.normal(size=(20, 8)).astype(np.float32)
    chunk = next(f for f in (tmp_path / "bad.zarr" / "target").rglob("*")
                 if f.is_file() and f.name != "zarr.json")
    chunk.write_bytes(b"garbage")
    refused(capsys, ["sweep", tmp_path / "bad.zarr", "--logits"], "bad.zarr", "'target'",
            "corrupt")


def test_fifos_and_devices_are_refused_without_blocking(capsys, tmp_path):
    """A FIFO with no writer blocked every reader for ever (a dump, ``--p @fifo``, a tree spec,
    its model file, a member of a folder dump); ``"model": "/dev/zero"`` read 64 MiB of
    zeros before failing.  Each is refused in one line by its type, before it is opened for
    reading (the alarm only stops a regression)."""
    import os
    import signal

    zarr = pytest.importorskip("zarr")
    import numpy as np

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    os.mkfifo(tmp_path / "f.npz")
    folder = tmp_path / "npy"
    folder.mkdir()
    np.save(folder / "target.npy", np.full((2, 3), 1 / 3))
    os.mkfifo(folder / "draft.npy")
    group = zarr.open_group(str(tmp_path / "z.zarr"), mode="w")
    for name in ("target", "draft"):
        group.create_array(name, shape=(2, 3), chunks=(1, 3), dtype="float32")[:] = 1 / 3
    chunk = next(f for f in (tmp_path / "z.zarr" / "draft").rglob("*")
                 if f.is_file() and f.name != "zarr.json")
    chunk.unlink()
    os.mkfifo(chunk)
    (tmp_path / "model.json").write_text(json.dumps({"model": str(fifo), "gamma": 1}))
    (tmp_path / "zero.json").write_text(json.dumps({"model": "/dev/zero", "gamma": 1}))

    def stop(*_):
        raise TimeoutError("a reader blocked")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(60)
    try:
        for argv, words in (
                (["sweep", tmp_path / "f.npz"], ["f.npz", "FIFO"]),
                (["sweep", folder], ["draft.npy", "FIFO"]),
                (["sweep", tmp_path / "z.zarr"], ["z.zarr", "FIFO"]),
                (["verify", "sps", "--p", f"@{fifo}", "--q", "1/2,1/2"], ["p:", "FIFO"]),
                (["verify", "sps", "--p", f"@{fifo}.npy", "--q", "1/2,1/2"], ["cannot read"]),
                (["verify", "sps", "--logits-p", f"@{fifo}", "--logits-q", "0,0"], ["FIFO"]),
                (["tree", fifo], ["tree spec", "FIFO"]),
                (["compare", "--tree", fifo], ["FIFO"]),
                (["tree", tmp_path / "model.json"], ["model table", "FIFO"]),
                (["tree", tmp_path / "zero.json"], ["/dev/zero", "a device",
                                                    "not a regular file"])):
            refused(capsys, argv, *words)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_a_scheduler_port_that_answers_garbage_is_refused(capsys, tmp_path):
    """A local port that writes random bytes: the Dask client read its first 8 bytes as a
    length and tried to allocate exabytes ('MemoryError ... please report'); the probe now
    reads the first message itself, every length checked before it is read."""
    import os
    import socket
    import threading

    dump = small_dump(tmp_path)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    port = server.getsockname()[1]
    done = threading.Event()

    def serve():
        while not done.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                try:
                    conn.sendall(b"\xff" * 8 + os.urandom(4096))
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        for argv in (["sweep", dump, "--logits"], ["prove", "top1-lossy"]):
            refused(capsys, [*argv, "--scheduler", f"tcp://127.0.0.1:{port}",
                             "--scheduler-timeout", "5"], f"127.0.0.1:{port}",
                    "not a Dask message", "1,048,576", "not a Dask scheduler")
    finally:
        done.set()
        server.close()
        thread.join(10)


# -- messages: the user's mistake in the user's words -------------------------------------------
def test_bad_input_is_never_blamed_on_exactspec(capsys, tmp_path):
    """Each of these was a traceback's last line 'inside exactspec: please report this as a
    bug': now one line about the input."""
    (tmp_path / "labels.json").write_text(json.dumps(
        {"labels": 5, "target": {"": [0.5, 0.5]}, "draft": {"": [0.5, 0.5]}, "gamma": 1}))
    latin1 = (b'{"labels": "ab", "target": {"": [0.5, 0.5]}, "draft": {"": [0.5, 0.5]}, '
              b'"gamma": 1, "note": "\xe9"}')
    (tmp_path / "latin1.json").write_bytes(latin1)
    (tmp_path / "inf.json").write_text("[1e400, 1]")
    for argv, words in (
            (["verify", "sps", "--p", "1e400,1", "--q", "1/2,1/2", "--backend", "numpy"],
             ["p[0]='1e400'", "float64 range"]),
            (["verify", "sps", "--p", f"@{tmp_path / 'inf.json'}", "--q", "1/2,1/2",
              "--backend", "numpy"], ["entry 0", "float64 range"]),
            (["optimal", "--p", "1e308,1e308", "--q", "1/2,1/2", "--backend", "numpy"],
             ["p sums to inf"]),
            (["tree", tmp_path / "labels.json"], ["labels=5", "a list of labels"]),
            (["tree", tmp_path / "latin1.json"], ["latin1.json", "not UTF-8",
                                                f"byte {latin1.index(0xe9)}"])):
        line = refused(capsys, argv, *words)
        assert "report this as a bug" not in line


def test_numpy_overflow_in_a_sweep_is_handled_silently(capsys, tmp_path):
    """float64 logits 2e308 apart overflowed in the softmax's subtraction (a RuntimeWarning
    on stderr; the token's probability is 0 either way), and probabilities summing past the
    largest float were 'a row that holds an infinite value': no warning now, and the row's
    own reason."""
    import warnings

    import numpy as np

    rows = np.array([[1e308, -1e308, 0.0], [0.0, 1.0, 2.0]])
    np.savez(tmp_path / "logits.npz", target=rows, draft=rows[::-1].copy())
    big = np.array([[1e308, 1e308, 0.0], [0.5, 0.5, 0.0]])
    np.savez(tmp_path / "probs.npz", target=big, draft=big[::-1].copy())
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        code, out, err = run(capsys, "sweep", tmp_path / "logits.npz", "--logits", "--k", "1",
                             "--temperature", "1e-300", "--json")
        assert code == 0 and err == "" and json.loads(out)["positions_swept"] == 2
        refused(capsys, ["sweep", tmp_path / "probs.npz", "--k", "1"],
                "sums past the largest float64")


def test_under_json_a_refusal_or_an_undecided_result_still_writes_one_object(capsys,
                                                                               tmp_path):
    """``--json`` promises one object on stdout: a refusal (exit 2, from argparse too) writes
    ``{"error": ..., "exit": 2}``, an undecided result ``{"undecided": ..., "exit": 3}``."""
    line = refused(capsys, ["verify", "sps", "--p", "1/2", "--q", "1", "--json"],
                   "p sums to 1/2")
    assert line.startswith("error: ")
    refused(capsys, ["verify", "sps", "--k", "x", "--json"], "invalid int value")
    rule = tmp_path / "rule.py"
    rule.write_text("import torch\n"
                    "def overlap(p, q):\n"
                    "    w = torch.cat((p, q)).reshape(2, -1)\n"
                    "    noise = torch.empty_like(w).exponential_()\n"
                    "    picks = (w / noise).argmax(dim=1)\n"
                    "    return (w / noise)[:, :2].reshape(-1).argmax() % 3 "
                    "if picks[0] == 0 else picks[0]\n")
    line = refused(capsys, ["verify", f"{rule}:overlap", "--p", "1/2,1/3,1/6", "--q",
                            "1/3,1/3,1/3", "--json"], "overlapping parts", code=3)
    assert line.startswith("undecided: ")


def test_bare_exactspec_prints_the_short_usage_and_a_hint(capsys):
    """Bare ``exactspec`` printed argparse's usage wrapped over three lines; now the short
    usage and one line naming the commands, exit 2."""
    code, out, err = run(capsys)
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 2, err
    assert lines[0] == "usage: exactspec [-h] [--version] COMMAND [options]"
    assert lines[1].startswith("error: exactspec: name a command (example, verify, ")
