"""A user's multi-position verifier from a JSON spec: the stale-residual bug refuted with the
exact joint law, the fixed chain proved with its exact tokens per call, declared state threaded,
hidden state refused, float arithmetic paired with exact arithmetic."""

import json
import types
from fractions import Fraction
from pathlib import Path

import pytest

from exactspec.checker import check_certificate
from exactspec.cli import main
from exactspec.core.errors import InvalidInput
from exactspec.engine.runs import enumerate_runs
from exactspec.sequences.chains import Chain, chain_tokens_per_call
from exactspec.sequences.context import ContextPair
from exactspec.sequences.multitoken import prove_sequence
from exactspec.sequences.user import (HiddenState, UserVerifier, _generate, _load_pair,
                                      user_report)
from exactspec import residual

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "examples" / "chain_user.json"
USER = str(ROOT / "examples" / "chain_user.py")
SPEC_DICT = json.loads(SPEC.read_text())
PAIR = _load_pair(SPEC_DICT, SPEC.parent)


def full_generation_law(function, m=2, gamma=3, pair=PAIR):
    """The second way: every path of the whole generation in one run (state threaded along
    the run), against the composition of one-call laws that the report uses."""
    verifier = UserVerifier(function, gamma)
    law = enumerate_runs(lambda s: _generate(s, verifier, pair, m, ()), max_paths=None).law
    return {",".join(t): w for t, w in law.items() if w != 0}


def load(name):
    from exactspec.sequences.user import load_user_function

    return load_user_function(f"{USER}:{name}")


def test_stale_residual_refuted_with_exact_joint_law():
    report = user_report(SPEC)
    assert report["verdict"] == "lossy-logic" and not report["ok"]
    assert report["tv"] == "3/25" and report["m"] == 2
    law = {k: Fraction(v) for k, v in report["law"].items()}
    assert law == full_generation_law(load("stale_residual_chain"))
    assert law["a,a"] == Fraction(29, 200) and Fraction(report["target"]["a,a"]) == Fraction(1, 10)
    assert sum(law.values()) == 1 and len(report["differs"]) == 9


@pytest.mark.slow
def test_fixed_chain_proved_with_exact_tokens_per_call():
    report = user_report(SPEC, f"{USER}:chain")
    assert report["verdict"] == "lossless" and report["ok"] and "differs" not in report
    tpc = Fraction(report["tokens_per_call"])
    assert tpc == chain_tokens_per_call(PAIR, 3) == Fraction(3569, 1500)
    builtin = prove_sequence(Chain(3), PAIR, m=4)
    assert builtin.tokens_per_call == tpc
    deeper = user_report(SPEC, f"{USER}:chain", m=4)
    assert deeper["verdict"] == "lossless"
    assert {k: Fraction(v) for k, v in deeper["law"].items()} == \
        {",".join(t): w for t, w in builtin.law.items() if w != 0}


def test_hidden_global_cache_refused():
    with pytest.raises(HiddenState, match="_residuals"):
        user_report(SPEC, f"{USER}:cached_residual_chain")


def test_hidden_closure_counter_refused():
    calls = [0]

    def counting(s, drafts, p, q):
        calls[0] += 1
        return (s.draw(p[0]),)

    with pytest.raises(HiddenState, match="calls"):
        user_report(SPEC_DICT, counting, pair=PAIR)


def test_hidden_state_outside_the_function_caught_by_replay():
    """State in another module's object escapes the fingerprint; the first call's seeded
    random paths, replayed after the enumeration, answer differently, and the report is
    refused."""
    store = types.ModuleType("store")
    store.calls = 0

    def drifting(s, drafts, p, q):
        store.calls += 1
        row = p[0] if store.calls < 20 else q[0]  # drifts after 20 calls
        return (s.draw(row),)

    with pytest.raises(HiddenState, match="replayed"):
        user_report({"gamma": 1, "m": 1}, drifting, pair=PAIR)


def test_declared_state_is_threaded():
    report = user_report(SPEC, f"{USER}:alternating_chain", gamma=2, m=3)
    assert report["verdict"] == "lossless" and report["verifier"]["stateful"]

    def stale_on_odd_calls(s, drafts, p, q, state):
        odd = state == 1
        out = ()
        for i, x in enumerate(drafts):
            if s.uniform() < p[i][x] / q[i][x]:
                out += (x,)
                continue
            row = residual(p[0], q[0]) if odd else residual(p[i], q[i])
            return out + (s.pick(row, s.uniform()),), 0 if odd else 1
        return out + (s.pick(p[len(drafts)], s.uniform()),), 0 if odd else 1

    report = user_report({"gamma": 2, "m": 3}, stale_on_odd_calls, pair=PAIR)
    assert report["verdict"] == "lossy-logic"
    law = {k: Fraction(v) for k, v in report["law"].items()}
    assert law == full_generation_law(stale_on_odd_calls, m=3, gamma=2)


@pytest.mark.slow
def test_float_sequences_split_rounding_from_logic():
    fixed = user_report(SPEC, f"{USER}:chain", arith="float32", tolerance=Fraction(1, 10**8))
    assert fixed["verdict"] == "lossy-rounding" and fixed["bias_exact_arith"] == "0"
    assert Fraction(1, 10**8) < Fraction(fixed["bias"]) < Fraction(1, 10**7)
    assert not fixed["ok"] and not fixed["within_tolerance"]
    stale = user_report(SPEC, arith="float32")
    assert stale["verdict"] == "lossy-logic" and stale["bias_exact_arith"] == "3/25"


def test_per_position_rows_and_whole_call_functions():
    spec = {"labels": "ab", "target": ["1/2,1/2", "1/3,2/3", "1/4,3/4"],
            "draft": ["1/4,3/4", "1/2,1/2", "1/2,1/2"], "gamma": 2}
    pair = _load_pair(spec, None)
    assert pair.target(("a",)).probs == (Fraction(1, 3), Fraction(2, 3))
    assert pair.target(("a", "b", "a")).probs == (Fraction(1, 4), Fraction(3, 4))
    report = user_report(spec, load("chain"))
    assert report["verdict"] == "lossless"
    assert Fraction(report["tokens_per_call"]) == chain_tokens_per_call(pair, 2)

    def whole_call(s, pair, ctx):
        from exactspec.sequences.chains import chain_call

        return chain_call(s, pair, ctx, 2)

    assert user_report({"m": 3}, whole_call, pair=pair)["verdict"] == "lossless"


def test_bad_verifiers_named_clearly(tmp_path):
    with pytest.raises(InvalidInput, match="gamma"):
        user_report({"m": 2}, load("chain"), pair=PAIR)
    with pytest.raises(InvalidInput, match=r"\(s, drafts, p, q\)"):
        user_report({"m": 2}, lambda s, a: (), pair=PAIR)
    user_file = tmp_path / "bad.py"
    user_file.write_text("from exactspec import residual\n\n"
                         "def same_rows(s, drafts, p, q):\n"
                         "    return (s.draw(residual(p[0], p[0])),)\n")
    with pytest.raises(InvalidInput, match=r"bad\.py line 4"):
        user_report({"gamma": 1}, f"{user_file}:same_rows", pair=PAIR)


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_tree_with_a_user_verifier(capsys, tmp_path):
    code, out, err = run_cli(capsys, "tree", SPEC, "--json")
    obj = json.loads(out)
    assert code == 1 and err == "" and obj["verdict"] == "lossy-logic" and obj["tv"] == "3/25"
    assert obj["law"]["a,a"] == "29/200" and obj["target"]["a,a"] == "1/10"
    cert = tmp_path / "chain.json"
    code, out, _ = run_cli(capsys, "tree", SPEC, "--verifier", f"{USER}:chain",
                           "--certificate", cert)
    assert code == 0 and "PROVED" in out and "3569/1500" in out
    assert check_certificate(str(cert)) == []
    code, out, err = run_cli(capsys, "tree", SPEC, "--verifier",
                             f"{USER}:cached_residual_chain")
    assert code == 2 and out == "" and "hidden state" in err and err.count("\n") == 1
    code, out, err = run_cli(capsys, "tree", ROOT / "examples" / "chain.json", "--gamma", "2")
    assert code == 2 and "user's verifier" in err


@pytest.mark.slow
def test_cli_tree_arith(capsys):
    code, out, _ = run_cli(capsys, "tree", SPEC, "--verifier", f"{USER}:chain", "--arith",
                           "float32", "--tolerance", "1e-6", "--json")
    obj = json.loads(out)
    assert code == 0 and obj["verdict"] == "lossy-rounding" and obj["arith"] == "float32"


def test_one_position_verifier_with_hidden_state_refused(capsys, tmp_path):
    """``verify`` on a user's one-position rule that remembers its last draft between paths:
    refused, never a law."""
    from exactspec import Dist, verify

    user_file = tmp_path / "remember.py"
    user_file.write_text(
        "from exactspec import residual\n\n"
        "last = {}\n\n"
        "def sticky(s, p, q):\n"
        "    x = last.get('x') or s.draft(q)\n"
        "    last['x'] = x\n"
        "    if s.coin(min(1, p[x] / q[x])):\n"
        "        return s.accept(x)\n"
        "    return s.draw(residual(p, q))\n")
    with pytest.raises(HiddenState, match="'last'"):
        verify(f"{user_file}:sticky", Dist.parse("1/2,1/2"), Dist.parse("1/3,2/3"))
    code, out, err = run_cli(capsys, "verify", f"{user_file}:sticky", "--p", "1/2,1/2", "--q",
                             "1/3,2/3")
    assert code == 2 and out == "" and "hidden state" in err


def test_one_position_errors_and_irrational_values(capsys, tmp_path):
    """A distribution the user's code builds that does not sum to 1 is named at the user's
    line, not blamed on --p; irrational (sympy) probabilities are compared exactly."""
    user_file = tmp_path / "rules.py"
    user_file.write_text(
        "import sympy\n"
        "from fractions import Fraction\n"
        "from exactspec import Dist\n\n"
        "def lopsided(s, p, q):\n"
        "    return s.draw(Dist([Fraction(1, 3)] * 2))\n\n"
        "def exp_halves(s, p, q):\n"
        "    e = sympy.exp(1)\n"
        "    w = [(e + 1) / (2 * e + 2), 1 - (e + 1) / (2 * e + 2)]  # 1/2, unsimplified\n"
        "    return s.draw(Dist(w, check=False))\n\n"
        "def exp_weights(s, p, q):\n"
        "    e = sympy.exp(1)\n"
        "    return s.draw(Dist([e / (1 + e), 1 / (1 + e)], check=False))\n")
    code, out, err = run_cli(capsys, "verify", f"{user_file}:lopsided", "--p", "1/2,1/2",
                             "--q", "1/3,2/3")
    assert code == 2 and "rules.py line 6" in err and "the distribution sums to 2/3" in err
    assert not err.startswith("error: p ")
    code, out, _ = run_cli(capsys, "verify", f"{user_file}:exp_halves", "--p", "1/2,1/2",
                           "--q", "1/3,2/3", "--json")
    assert code == 0 and json.loads(out)["verdict"] == "lossless"
    code, out, _ = run_cli(capsys, "verify", f"{user_file}:exp_weights", "--p", "1/2,1/2",
                           "--q", "1/3,2/3", "--json")
    obj = json.loads(out)
    assert code == 1 and obj["verdict"] == "lossy-logic" and obj["differs"] == ["0", "1"]


def test_search_finds_the_smallest_sequence_counterexample(capsys):
    """The stale residual needs an acceptance then a rejection at a position whose residual
    differs from the first: the search finds one on two tokens and reports its exact law."""
    code, out, _ = run_cli(capsys, "tree", SPEC, "--search", "--json")
    obj = json.loads(out)
    assert code == 1 and obj["verdict"] == "lossy-logic" and obj["tv"] == "1/2"
    assert obj["counterexample"] == {"target": ["0,1", "1,0", "0,1", "0,1"],
                                     "draft": ["1/2,1/2", "0,1", "0,1"]}
    assert obj["law"] == {"1,0": "1/2", "1,1": "1/2"} and obj["target"] == {"1,0": "1"}
    # the same instance, proved directly, gives the same law
    pair = _load_pair({"target": [[0, 1], [1, 0], [0, 1], [0, 1]],
                       "draft": [["1/2", "1/2"], [0, 1], [0, 1]]}, None)
    direct = user_report({"gamma": 3, "m": 2}, load("stale_residual_chain"), pair=pair)
    assert direct["law"] == obj["law"]


def test_grid_is_honoured_for_user_sequences():
    """Uniforms on a grid of 8: the composed law equals the full-generation law on the same
    grid, and differs from the target (1/3, 3/10 are not multiples of 1/8)."""
    from exactspec.engine.exact import ExactSampler

    report = user_report(SPEC, f"{USER}:chain", grid=8, gamma=1)
    # the chain is lossless with ideal uniforms: the whole bias is the grid's
    assert report["verdict"] == "lossy-grid" and report["bias_exact_arith"] == "0"
    assert report["bias"] == report["bias_grid_only"] == report["tv"] != "0"
    verifier = UserVerifier(load("chain"), 1)
    full = enumerate_runs(lambda s: _generate(s, verifier, PAIR, 2, ()), max_paths=None,
                          sampler_factory=lambda: ExactSampler(grid=8)).law
    assert {k: Fraction(v) for k, v in report["law"].items()} == \
        {",".join(t): w for t, w in full.items() if w != 0}


def test_builtin_chain_in_float32(capsys):
    """A built-in spec under --arith: the one-position chain's bias by hand is
    q(1) * (float32(2/3) - 2/3) = 3/4 * 1/(3 * 2**24) = 2**-26."""
    from exactspec.sequences.user import builtin_report

    r = builtin_report({"target": {"": "1/2,1/2"}, "draft": {"": "1/4,3/4"}, "gamma": 1},
                       arith="float32")
    assert r["verdict"] == "lossy-rounding" and Fraction(r["bias"]) == Fraction(1, 2**26)
    assert r["bias_exact_arith"] == "0"
    code, out, _ = run_cli(capsys, "tree", ROOT / "examples" / "chain.json", "--arith",
                           "float32", "--json")
    obj = json.loads(out)
    assert code == 1 and obj["verdict"] == "lossy-rounding" and obj["bias_exact_arith"] == "0"


def test_exactspec_functions_with_memo_caches_are_not_hidden_state():
    """KEY's closed-form selection keeps a module-level memo of count laws; a function of
    exactspec itself is not a user's verifier, so the hidden-state check leaves it alone,
    while the same memo in a user's function is refused."""
    from exactspec import Dist, verify
    from exactspec.key.selection import key_law
    from exactspec.optimum import optimum

    p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
    verify(key_law, p, q, 2)                       # warms the memo
    other = Dist.parse("1/3,1/3,1/3")
    r = verify(key_law, p, other, 2)               # the memo changes during this run
    assert r.lossless
    assert r.acceptance == optimum(p, other, 2).alpha_star
