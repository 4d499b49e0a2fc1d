"""The command line: outputs, JSON keys, exit codes, and a fuzz that never sees a traceback."""

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from exactspec.cli import main

ROOT = Path(__file__).resolve().parent.parent
USER = str(ROOT / "examples" / "my_rule.py")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_example(capsys):
    code, out, err = run(capsys, "example")
    assert code == 0 and "3/5" in out and "PROVED" in out and err == ""
    code, out, _ = run(capsys, "example", "--json")
    obj = json.loads(out)
    assert obj["acceptance"] == "3/5" and obj["lossless"] is True
    assert obj["residual"] == {"a": "3/4", "b": "1/4", "c": "0"}
    assert obj["output"] == obj["target"]


def test_verify_json_keys(capsys):
    code, out, _ = run(capsys, "verify", "sps", "--p", "1/2,3/10,1/5", "--q", "0.2,0.2,0.6",
                       "--labels", "abc", "--json")
    obj = json.loads(out)
    assert code == 0
    assert obj["method"] == "sps" and obj["k"] == 1 and obj["labels"] == ["a", "b", "c"]
    assert obj["target"] == obj["output"] == {"a": "1/2", "b": "3/10", "c": "1/5"}
    assert obj["lossless"] is True and obj["acceptance"] == "3/5"
    assert obj["acceptance_float"] == 0.6 and obj["paths"] == 5
    assert "differs" not in obj


def test_verify_lossy_exits_1_with_differs(capsys):
    code, out, _ = run(capsys, "verify", "naive", "--p", "1/2,1/2", "--q", "3/4,1/4", "--json")
    obj = json.loads(out)
    assert code == 1 and obj["lossless"] is False and obj["differs"] == ["0", "1"]
    assert obj["output"] == {"0": "3/4", "1": "1/4"} and obj["bias"] == "1/4"


def test_user_verifier_from_a_file(capsys):
    code, out, _ = run(capsys, "verify", f"{USER}:my_rule", "--p", "1/2,3/10,1/5",
                       "--q", "1/5,1/5,3/5")
    assert code == 0 and "LOSSLESS" in out
    code, out, _ = run(capsys, "verify", f"{USER}:shortcut", "--p", "1/2,1/4,1/4",
                       "--q", "1,0,0", "--json")
    assert code == 1 and json.loads(out)["output"] == {"0": "1/2", "1": "0", "2": "1/2"}


def test_search_finds_a_small_counterexample(capsys):
    code, out, _ = run(capsys, "verify", f"{USER}:shortcut", "--search", "--json")
    obj = json.loads(out)
    assert code == 1 and obj["lossless"] is False and obj["counterexample"]["p"]
    code, out, _ = run(capsys, "verify", f"{USER}:my_rule", "--search", "--json")
    assert code == 0 and json.loads(out)["counterexample"] is None


def test_grid_option(capsys):
    code, out, _ = run(capsys, "verify", f"{USER}:my_rule", "--p", "1/2,3/10,1/5",
                       "--q", "1/5,1/5,3/5", "--grid", "10", "--json")
    assert code == 1 and json.loads(out)["lossless"] is False


def test_certificate_file_is_checked_independently(capsys, tmp_path):
    cert = tmp_path / "c.json"
    code, _, _ = run(capsys, "verify", "sps", "--p", "1/2,1/2", "--q", "1/3,2/3",
                     "--certificate", str(cert))
    assert code == 0
    out = subprocess.run([sys.executable, "-m", "exactspec.checker", str(cert)],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "CERTIFICATE OK" in out.stdout
    data = json.loads(cert.read_text())
    data["paths"][0]["probability"] = "1/7"
    cert.write_text(json.dumps(data))
    out = subprocess.run([sys.executable, "-m", "exactspec.checker", str(cert)],
                         capture_output=True, text=True)
    assert out.returncode == 1 and "REJECTED" in out.stdout


def test_simulate_json(capsys):
    code, out, _ = run(capsys, "simulate", "sps", "--p", "1/2,1/2", "--q", "1/3,2/3",
                       "--n", "1000", "--seed", "5", "--json")
    obj = json.loads(out)
    assert code == 0 and sum(obj["counts"].values()) == 1000
    lo, hi = obj["acceptance_ci95_float"]
    assert lo <= obj["acceptance_float"] <= hi
    assert all(key.endswith("_float") for key in obj if isinstance(obj[key], float))


def test_prove_one_claim(capsys, tmp_path):
    code, out, _ = run(capsys, "prove", "top1-lossy", "--certificate-dir", str(tmp_path),
                       "--json")
    obj = json.loads(out)
    assert code == 0 and obj["claims"][0]["verdict"] == "PROVED"
    assert (tmp_path / "top1-lossy.json").exists()
    # a claim (here: that a rule is lossy) keeps its own verdict words, the one documented
    # exception to the rule verdicts (docs/json.md#verdicts), and only at claims[i].verdict
    assert list(_verdicts(obj)) == [(("claims", 0, "verdict"), "PROVED")]
    assert not CLAIM_VERDICTS & RULE_VERDICTS


@pytest.mark.parametrize("argv, message", [
    (["verify", "sps", "--p", "1/2,1/3", "--q", "1/2,1/2"], "p sums to 5/6, not 1"),
    (["verify", "sps", "--p", "1/2,1/2", "--q", "1/2,1/4,1/4"], "q has 3 entries but p has 2"),
    (["verify", "sps", "--p", "1/2,1/2", "--q", "1/2,1/2", "--k", "0"], "k=0"),
    (["verify", "sps", "--p", "1/2,1/2", "--q", "1/2,1/2", "--k", "2"], "only k = 1"),
    (["verify", "nope", "--p", "1/2,1/2", "--q", "1/2,1/2"], "unknown method"),
    (["verify", "missing.py:f", "--p", "1", "--q", "1"], "no such file"),
    (["verify", "sps", "--p", "1/2,1/2"], "--q"),
    (["verify", "sps", "--p", "a,b", "--q", "1"], "not a number"),
    (["verify", "sps", "--p", "1/2,1/2", "--q", "1/2,1/2", "--labels", "aa"], "duplicate"),
    (["verify", "sps", "--p", "@/no/such.json", "--q", "1"], "cannot read"),
    (["simulate", "sps", "--p", "1", "--q", "1", "--n", "0"], "n=0"),
    (["prove", "no-such-claim"], "unknown claim"),
    (["frobnicate"], "invalid choice"),
    ([], ""),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert "Traceback" not in err and message in err + out


def test_a_user_verifier_that_crashes_is_reported_in_one_line(capsys, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(s, p, q):\n    return 1 / 0\n")
    code, _, err = run(capsys, "verify", f"{bad}:f", "--p", "1", "--q", "1")
    assert code == 2 and "ZeroDivisionError" in err and "line 2" in err
    assert len(err.strip().splitlines()) == 1


TOKENS = ["verify", "simulate", "example", "optimal", "compare", "rho", "rrs", "--backend", "numpy", "sps", "naive", "top1", "--p", "--q",
          "--k", "--labels", "--json", "--normalize", "--grid", "--n", "--seed", "--search",
          "1/2,1/2", "1/3,2/3", "0.5,0.5", "1,0", "-1,2", "nan", "1/0", "", ",", "abc", "2",
          "0", "-3", "99", "@", "@x.json", "1e400,0", "a,b", "x:y", "--max-paths", "1"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=9))
def test_fuzz_the_command_line_never_shows_a_traceback(argv):
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:      # argparse --help
            code = exc.code
    assert code in (0, 1, 2, 3)
    assert "Traceback" not in err.getvalue()
    if code == 2 and argv:
        assert err.getvalue().strip() or out.getvalue().strip()


def test_console_script_json_is_the_only_stdout():
    out = subprocess.run([sys.executable, "-m", "exactspec", "verify", "sps", "--p", "1/2,1/2",
                          "--q", "1/3,2/3", "--json"], capture_output=True, text=True)
    assert out.returncode == 0
    json.loads(out.stdout)


SEED = ["--p", "1/2,3/10,1/5", "--q", "1/5,1/5,3/5", "--labels", "abc"]


def test_optimal_json(capsys):
    code, out, _ = run(capsys, "optimal", *SEED, "--k", "2", "--json")
    obj = json.loads(out)
    assert code == 0 and obj["alpha_star"] == "21/25"
    assert obj["a_star"] == {"a": "9/25", "b": "7/25", "c": "1/5"}
    assert obj["order"] == ["a", "b", "c"] and obj["tight"] == ["a", "b"]
    assert obj["checks"] == {"closed_form": True, "brute_force": True, "max_flow": True}


def test_compare_seed_example(capsys):
    code, out, _ = run(capsys, "compare", *SEED, "--k", "2", "--json")
    obj = json.loads(out)
    assert code == 0 and obj["alpha_star"] == "21/25"
    rows = {m["method"]: m for m in obj["methods"]}
    assert rows["rrs"]["acceptance"] == "19/25" and rows["rrs"]["optimum"] == "21/25"
    assert rows["rrs"]["ratio_to_optimal"] == "19/21"
    assert rows["optimal"]["acceptance"] == "21/25"
    assert "skipped" in rows["sps"]
    assert all(m["lossless"] for m in obj["methods"]
               if "skipped" not in m and m["group"] == "lossless")


def test_rho_json(capsys):
    import sympy

    code, out, _ = run(capsys, "rho", "2", "--json")
    obj = json.loads(out)
    assert code == 0 and obj["rho"] == "23/27" and obj["argmax"] == "2/3"
    assert obj["tight_instance"]["alpha_rrs"] == "23/27"
    assert obj["tight_instance"]["alpha_star"] == "1"
    code, out, _ = run(capsys, "rho", "3", "--json")
    rho3 = sympy.sympify(json.loads(out)["rho"])
    assert sympy.simplify(rho3 - (1 - 6 * sympy.sqrt(15) / 125)) == 0
    code, out, _ = run(capsys, "rho", "1", "--json")
    assert json.loads(out)["argmax"] is None and json.loads(out)["tight_instance"] is None


def test_numpy_backend_reports_only_float_keys(capsys, tmp_path):
    import numpy as np

    rng = np.random.default_rng(0)
    n = 2000
    p_file, q_file = tmp_path / "p.json", tmp_path / "q.json"
    p_file.write_text(json.dumps(rng.dirichlet(np.ones(n)).tolist()))
    q_file.write_text(json.dumps(rng.dirichlet(np.ones(n)).tolist()))
    code, out, _ = run(capsys, "optimal", "--backend", "numpy", "--p", f"@{p_file}",
                       "--q", f"@{q_file}", "--k", "4", "--normalize", "--json")
    obj = json.loads(out)
    assert code == 0 and "lossless" not in obj
    assert all(key.endswith("_float") for key, v in obj.items() if isinstance(v, float))
    # the exact engine on the same floats, converted exactly
    from exactspec import Dist
    from exactspec.optimum.alpha_star import optimum

    exact = optimum(Dist(json.loads(p_file.read_text()), normalize=True),
                    Dist(json.loads(q_file.read_text()), normalize=True), 4).alpha_star
    assert abs(obj["alpha_star_float"] - float(exact)) < 1e-12


def test_numpy_backend_reads_the_exact_engines_files_of_texts(capsys, tmp_path):
    """A JSON row of ``"a/b"`` texts (as the exact engine's long rows are written) is read by
    --backend numpy too, each text as its nearest float64; the float optimum agrees with the
    exact one on the same file.  Any other entry is refused in one line."""
    import random
    from fractions import Fraction

    rng = random.Random(3)
    files = {}
    for name in ("p", "q"):
        weights = [rng.randint(1, 12) for _ in range(300)]
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(json.dumps([str(Fraction(w, sum(weights))) for w in weights]))
    argv = ["optimal", "--p", f"@{files['p']}", "--q", f"@{files['q']}", "--k", "3", "--json"]
    code, out, _ = run(capsys, *argv)
    exact = json.loads(out)
    code_f, out_f, _ = run(capsys, *argv, "--backend", "numpy")
    floats = json.loads(out_f)
    assert code == code_f == 0 and floats["exact"] is False
    assert abs(floats["alpha_star_float"] - float(Fraction(exact["alpha_star"]))) < 1e-12
    for entries, message in (('["1/2", true]', "numbers or texts of numbers only (entry 1 is "
                                               "bool)"),
                             ('["1/2", "x"]', "entry 1 ('x'): not a number"),
                             ('["1/2", "1e999"]', "outside the float64 range")):
        files["p"].write_text(entries)
        code, _, err = run(capsys, "optimal", "--backend", "numpy", "--p", f"@{files['p']}",
                           "--q", "1/2,1/2")
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("argv, message", [
    (["optimal", "--p", "1/2,1/2", "--q", "1/2,1/2", "--k", "0"], "k=0"),
    (["compare", "--p", "1/2,1/2", "--q", "1/2,1/2", "--methods", "nope"], "nope"),
    (["rho", "0"], "k=0"),
    (["optimal", "--backend", "numpy", "--p", "a,b", "--q", "1,0"], "not a number"),
    (["verify", "spechub", "--p", "1/2,1/2", "--q", "1/2,1/2", "--k", "3"], "k = 2"),
    (["verify", "rrs-wor", "--p", "1/2,1/2", "--q", "1/2,1/2", "--k", "3"], "without replacement"),
])
def test_bad_multi_draft_input_is_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and message in err and "Traceback" not in err


def test_tree_command(capsys, tmp_path):
    code, out, _ = run(capsys, "tree", str(ROOT / "examples" / "tree.json"), "--json")
    obj = json.loads(out)
    assert code == 0 and obj["lossless"] is True and obj["tokens_per_call"] == "1461/625"
    spec = tmp_path / "chain.json"
    spec.write_text(json.dumps({"target": {"": "1/3,2/3"}, "draft": {"": "2/3,1/3"},
                                "gamma": 2}))
    code, out, _ = run(capsys, "tree", str(spec), "--json")
    obj = json.loads(out)
    assert code == 0 and obj["tokens_per_call"] == "19/9" and obj["accepted_per_call"] == "10/9"
    spec.write_text(json.dumps({"target": {"": "1/3,2/3"}, "gamma": 2}))
    code, _, err = run(capsys, "tree", str(spec))
    assert code == 2 and "draft" in err


def test_version_prints_the_package_version(capsys):
    from exactspec import __version__

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"exactspec {__version__}"


@pytest.mark.parametrize("argv, suggestion", [
    (["verfy", "sps"], "did you mean 'verify'?"),
    (["verify", "rss", "--p", "1/2,1/2", "--q", "1/2,1/2"], "'rrs'"),
    (["compare", "--p", "1/2,1/2", "--q", "1/2,1/2", "--methods", "kseqq"],
     "did you mean 'kseq'?"),
    (["verify", "sps", "--p", "1/2,1/2", "--q", "1/2,1/2", "--arith", "float23"],
     "'float32'"),
])
def test_a_mistyped_command_or_method_gets_a_suggestion(capsys, argv, suggestion):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert suggestion in err and len(err.strip().splitlines()) == 1


def test_nothing_close_gets_no_suggestion(capsys):
    assert main(["frobnicate"]) == 2
    assert "did you mean" not in capsys.readouterr().err


# -- one verdict vocabulary on every route --------------------------------------------------

#: The four words of a rule's verdict, written out here (not imported: the test checks them).
RULE_VERDICTS = {"lossless", "lossy-grid", "lossy-rounding", "lossy-logic"}
#: A claim's verdict under ``prove`` (a statement judged, not one rule's output law).
CLAIM_VERDICTS = {"PROVED", "REFUTED", "UNDECIDED"}

CHAIN_USER = ROOT / "examples" / "chain_user"
CHECK = """
def accepted(s, p, q):
    x = s.draft(q)
    return s.uniform() < p[x] / q[x]
"""


def _verdicts(obj, path=()):
    """Every ``(path, value)`` of a ``verdict`` key anywhere in a JSON object."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "verdict":
                yield path + (key,), value
            yield from _verdicts(value, path + (key,))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from _verdicts(value, path + (i,))


def test_the_verdict_walk_finds_nested_keys():
    obj = {"verdict": "lossless", "methods": [{"a": 1}, {"verdict": "x", "in": {"verdict": 0}}]}
    assert list(_verdicts(obj)) == [(("verdict",), "lossless"),
                                    (("methods", 1, "verdict"), "x"),
                                    (("methods", 1, "in", "verdict"), 0)]


@pytest.mark.parametrize("argv, found, words", [
    (["verify", "sps", "--p", "1/2,1/2", "--q", "1/3,2/3"], {"lossless"}, ()),
    (["verify", "naive", "--p", "1/2,1/2", "--q", "1/3,2/3"], {"lossy-logic"}, ()),
    (["verify", f"{USER}:my_rule", "--p", "1/2,3/10,1/5", "--q", "1/5,1/5,3/5",
      "--arith", "float32"], {"lossy-rounding"}, ()),
    (["verify", f"{USER}:my_rule", "--p", "1/2,3/10,1/5", "--q", "1/5,1/5,3/5", "--grid", "4"],
     {"lossy-grid"}, ()),
    (["verify", f"{CHAIN_USER}.py:chain", "--tokens", "2", "--gamma", "2", "--p", "1/2,1/2",
      "--q", "1/3,2/3"], {"lossless"}, ("PROVED",)),
    (["tree", "SPEC"], {"lossless"}, ()),
    (["tree", f"{CHAIN_USER}.json"], {"lossy-logic"}, ("REFUTED",)),
    (["tree", f"{CHAIN_USER}.json", "--verifier", f"{CHAIN_USER}.py:chain"], {"lossless"},
     ("PROVED",)),
    (["compare", "--p", "1/2,1/2", "--q", "1/3,2/3", "--methods", "sps,rrs,naive"],
     {"lossless", "lossy-logic"}, ()),
    (["compare", "--tree", "SPEC"], {"lossless", "lossy-logic"}, ("PROVED", "REFUTED")),
    (["simulate", "sps", "--p", "1/2,1/2", "--q", "1/3,2/3", "--n", "50"], set(), ()),
    (["probability", "CHECK:accepted", "--p", "1/2,1/2", "--q", "1/3,2/3"], set(), ()),
])
def test_every_verdict_in_the_json_is_one_of_the_four_words(capsys, tmp_path, argv, found,
                                                              words):
    """Every ``verdict`` key of every route that judges a rule's output law, wherever it sits
    in the JSON (top level, or a method entry of compare and compare --tree), is one of the
    four words; the multi-position texts keep PROVED / REFUTED; simulate and probability
    give no verdict."""
    spec = tmp_path / "chain.json"
    spec.write_text(json.dumps({"target": {"": "1/3,2/3"}, "draft": {"": "2/3,1/3"},
                                "gamma": 2}))
    (tmp_path / "check.py").write_text(CHECK)
    argv = [str(spec) if a == "SPEC" else a.replace("CHECK", str(tmp_path / "check.py"))
            for a in argv]
    code, out, err = run(capsys, *argv, "--json")
    assert code in (0, 1) and "Traceback" not in err, err
    values = [v for _, v in _verdicts(json.loads(out))]
    assert set(values) == found and set(values) <= RULE_VERDICTS
    if words:
        _, text, _ = run(capsys, *argv)
        lossy_words = RULE_VERDICTS - {"lossless"}
        assert all(w in text for w in words) and not lossy_words & set(text.split())


@pytest.mark.parametrize("extra", [[], ["--arith", "float32", "--sum-order", "sequential"]])
def test_a_long_row_prints_a_short_table(capsys, extra):
    """At 40 tokens the text shows 24 rows, those that differ first, and says how many it
    leaves out; the line of differing tokens names 8 and counts the rest; --json keeps all."""
    n = 40
    p = ",".join(f"{k + 1}/{n * (n + 1) // 2}" for k in range(n))
    q = ",".join([f"1/{n}"] * n)
    rule = str(ROOT / "examples" / "engines" / "vllm_rejection_sampler.py") + \
        ":sample_target_recovery"
    code, out, _ = run(capsys, "verify", rule, "--p", p, "--q", q, *extra)
    assert code == 1
    lines = out.splitlines()
    table = [line for line in lines if line.split(" ", 1)[0].isdigit()]
    assert len(table) == 24
    assert f"... {n - 24} more tokens (the differing ones first; --json lists every one)" in out
    assert " and " in next(line for line in lines if "LOSSY" in line)
    code, out, _ = run(capsys, "verify", rule, "--p", p, "--q", q, *extra, "--json")
    data = json.loads(out)
    assert len(data["differs"]) > 8 and len(data["target"]) == n


# -- the verdict line: its decimal figure first, a short exact form, the grid's note ---------
HF = str(ROOT / "examples" / "engines" / "hf_speculative_sampling.py")


def test_verdict_line_leads_with_the_decimal_then_the_exact_value(capsys):
    code, out, _ = run(capsys, "verify", f"{USER}:shortcut", "--p", "1/2,1/4,1/4", "--q",
                       "1,0,0")
    verdict = out.strip().splitlines()[-1]
    assert code == 1
    assert verdict == ("LOSSY: TV(output, p) 0.25 (exactly 1/4); the output law differs from "
                       "p at 1, 2")
    assert "1      1/4       0        0       differs by -1/4" in out
    code, out, _ = run(capsys, "verify", f"{HF}:sample", "--p", "1/2,1/3,1/6", "--q",
                       "1/3,1/3,1/3", "--arith", "float32")
    verdict = [line for line in out.splitlines() if line.startswith("LOSSY")]
    assert code == 1 and verdict == [
        "LOSSY BY THE GRID ONLY: TV(output on the grid of 2**24, p) ~1.99e-08 (exactly "
        "1/50331648); the same rule with ideal uniforms is lossless; at 0 (-1/50331648), "
        "2 (+1/50331648)"]


def test_a_long_exact_value_is_its_decimal_and_digits_unless_exact(capsys):
    from fractions import Fraction

    from exactspec.core.text import figure

    assert figure(Fraction(3, 2**140)) == "~2.15e-42 (exactly 3 * 2**-140)"
    long = Fraction(10**30 + 1, 3 * 10**40)
    assert figure(long) == "~3.33e-11 (exact: 31 and 41 digits, --exact)"
    assert figure(long, exact=True) == f"~3.33e-11 (exactly {long.numerator}/{long.denominator})"
    argv = ["verify", "kseq", "--p", "1/2,3/10,1/5", "--q", "1/5,1/5,3/5", "--k", "2"]
    code, out, _ = run(capsys, *argv, "--json")
    explicit = json.loads(out)["explicit_acceptance"]
    assert len(explicit) > 20                  # too long for a table cell, short for a line
    code, out, _ = run(capsys, *argv, "--exact")
    assert f"explicit acceptance = ~0.785 (exactly {explicit})" in out


def test_grid_note_appears_exactly_when_the_grid_alone_is_further_than_the_run():
    from fractions import Fraction

    from exactspec.rounding import GRID_ABOVE_TOTAL, split_line

    note = GRID_ABOVE_TOTAL.format(run="float32 run")
    for grid_tv, total, shown in ((Fraction(3, 2**26), Fraction(1, 2**26), True),
                                  (Fraction(1, 2**26), Fraction(1, 2**26), False),
                                  (Fraction(1, 2**26), Fraction(3, 2**26), False),
                                  (Fraction(0), Fraction(3, 70), False)):
        text = split_line("float32", 2**24, total, Fraction(0), grid_tv)
        assert (note in text) is shown, text
        assert text.splitlines()[0].startswith("TV to the target: float32 run ")
    assert "cancels part of the grid's bias" in note


def test_grid_note_absent_from_a_run_whose_grid_is_its_whole_bias(capsys):
    code, out, _ = run(capsys, "verify", f"{HF}:sample", "--p", "1/2,1/3,1/6", "--q",
                       "1/3,1/3,1/3", "--arith", "float32")
    assert code == 1 and "the grid alone gives a larger TV" not in out


def test_progress_line_rewritten_in_place_and_cleared_before_the_report():
    """verify's progress line (written only when stderr is a terminal: here into a buffer):
    each update rewrites the line, the command's first write to stdout clears it and stops
    it, and the streams come back as they were."""
    import io
    import sys
    import time

    from exactspec.cli import Ticker

    before = sys.stdout, sys.stderr
    line = io.StringIO()
    ticker = Ticker.start("exactspec verify", 600.0, stream=line, after=0, every=0.01)
    try:
        for _ in range(1000):                     # until the thread has drawn its line
            if "working" in line.getvalue():
                break
            time.sleep(0.01)
        assert line.getvalue().startswith("\rexactspec verify: working, ")
        assert "(budget 600 s; Ctrl-C stops it)\x1b[K" in line.getvalue()
        print("the report")
        assert line.getvalue().endswith("\r\x1b[K") and ticker.done.is_set()
        drawn = line.getvalue()
        ticker.thread.join(5)
        assert line.getvalue() == drawn           # stopped: nothing drawn after the report
    finally:
        ticker.stop()
    assert (sys.stdout, sys.stderr) == before


def test_lossy_logic_under_arith_leads_with_the_float_runs_tv(capsys):
    code, out, _ = run(capsys, "verify", "naive", "--p", "1/2,3/10,1/5", "--q", "1/5,1/5,3/5",
                       "--arith", "float32")
    verdict = [line for line in out.splitlines() if line.startswith("LOSSY")]
    assert code == 1 and verdict == [
        "LOSSY BY LOGIC: TV(float32 output, p) 0.4 (exactly 2/5); the rule is lossy in exact "
        "arithmetic too, TV(exact-arithmetic output, p) 0.4 (exactly 2/5), at 0, 1, 2"]


@pytest.mark.parametrize("extra", [["--grid", "5"], ["--certificate", "c.json"],
                                   ["--arith", "float32"], ["--tolerance", "1e-6"],
                                   ["--max-paths", "10"], ["--exact"]])
def test_numpy_backend_refuses_a_proofs_options_up_front(capsys, tmp_path, extra):
    """Options --backend numpy used to ignore (a certificate never written) are refused in one
    line before the rows are read (a missing @file is never opened)."""
    code, out, err = run(capsys, "verify", "sps", "--backend", "numpy", "--p",
                         f"@{tmp_path / 'missing.json'}", "--q", "0.5,0.5", *extra, "--json")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"{extra[0]} does not apply to --backend numpy" in err
    assert json.loads(out)["exit"] == 2 and not (tmp_path / "c.json").exists()


def test_elementwise_without_arith_refused_before_the_rows_are_read(capsys, tmp_path):
    code, _, err = run(capsys, "verify", "sps", "--elementwise", "numpy", "--p",
                       f"@{tmp_path / 'missing.json'}", "--q", "1/2,1/2")
    assert code == 2 and err.strip() == ("error: --elementwise numpy applies to a float run: "
                                         "give --arith FORMAT (float32, ...)")


def test_tree_search_refuses_its_options_before_the_verifier_is_imported(capsys, tmp_path):
    """``tree --verifier F --search --certificate`` is refused from the arguments: F's module
    is never imported (a marker file it would write stays absent)."""
    marker = tmp_path / "imported"
    rule = tmp_path / "rule.py"
    rule.write_text(f"open({str(marker)!r}, 'w').close()\n\n"
                    "def f(s, drafts, p, q):\n    return drafts\n")
    for extra, words in ((["--certificate", tmp_path / "c.json"], "--certificate with --search"),
                         (["--arith", "float32", "--elementwise", "numpy"],
                          "--elementwise does not apply to --search")):
        code, _, err = run(capsys, "tree", str(ROOT / "examples" / "chain.json"), "--verifier",
                           f"{rule}:f", "--search", *map(str, extra))
        assert code == 2 and words in err and not marker.exists(), err


def test_search_tokens_without_search_refused_before_the_rows_are_read(capsys, tmp_path):
    code, _, err = run(capsys, "verify", f"{USER}:my_rule", "--tokens", "2", "--search-tokens",
                       "2", "--p", f"@{tmp_path / 'missing.json'}", "--q", "1/2,1/2")
    assert code == 2 and err.strip() == "error: --search-tokens applies to --search"


def test_exact_refused_on_a_multi_position_rule(capsys):
    code, _, err = run(capsys, "verify", f"{USER}:my_rule", "--tokens", "2", "--p", "1/2,1/2",
                       "--q", "1/2,1/2", "--exact")
    assert code == 2 and err.startswith("error: --exact applies to a one-position verify")
