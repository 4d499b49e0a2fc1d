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
from exactspec.core.errors import InvalidInput, TooLarge
from exactspec.engine.runs import enumerate_runs
from exactspec.sequences.chains import Chain, chain_tokens_per_call
from exactspec.sequences.context import ContextPair
from exactspec.sequences.multitoken import prove_sequence
from exactspec.sequences.user import (HiddenState, UserVerifier, _generate, _load_pair,
                                      user_report, user_text)
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


# -- one route: verify F --tokens M and tree SPEC --verifier F -------------------------------------
ROUTE_RULES = '''
from fractions import Fraction
from exactspec import residual

calls = 0


def le_call(s, pair, ctx):
    """The one-draft rule with u <= p/q (a kernel's test), one token per call."""
    p, q = pair.target(ctx), pair.draft(ctx)
    x = s.draft(q)
    if s.uniform() <= p[x] / q[x]:
        return (x,)
    return (s.draw(residual(p, q)),)


def le_single(s, p, q):
    x = s.draft(q)
    if s.uniform() <= p[x] / q[x]:
        return s.accept(x)
    return s.draw(residual(p, q))


def counted(s, pair, ctx):
    """Emits one token per call, and counts its calls in a module global."""
    global calls
    calls += 1
    return (s.draw(pair.target(ctx)),)


def tiny_logic(s, pair, ctx):
    """Accepts a little too rarely: 1 - 2**-100 of min(1, p/q); the float format rounds the
    factor to 1, exact arithmetic keeps it."""
    p, q = pair.target(ctx), pair.draft(ctx)
    x = s.draft(q)
    if s.uniform() < min(1, p[x] / q[x]) * (1 - Fraction(1, 2**100)):
        return (x,)
    return (s.draw(residual(p, q)),)


def greedy_rows(s, drafts, p, q):
    """On a rejection, the residual's most likely token instead of a draw from it (the same as a
    draw while the residual is one token, which it always is on two tokens)."""
    x = drafts[0]
    if s.coin(min(1, p[0][x] / q[0][x])):
        return (x, s.draw(p[1]))
    r = residual(p[0], q[0])
    return (max(r.labels, key=lambda t: r[t]),)


def greedy_call(s, pair, ctx):
    p, q = pair.target(ctx), pair.draft(ctx)
    x = s.draft(q)
    if s.coin(min(1, p[x] / q[x])):
        return (x,)
    r = residual(p, q)
    return (max(r.labels, key=lambda t: r[t]),)


def greedy_single(s, p, q):
    x = s.draft(q)
    if s.coin(min(1, p[x] / q[x])):
        return s.accept(x)
    r = residual(p, q)
    return max(r.labels, key=lambda t: r[t])
'''
P3, Q3 = "1/2,3/10,1/5", "1/5,1/5,3/5"


@pytest.fixture
def route(tmp_path):
    """The rules file, and a tree spec of the pair that verify --tokens builds from --p/--q."""
    rules = tmp_path / "route_rules.py"
    rules.write_text(ROUTE_RULES)

    def spec(p=P3, q=Q3, m=2, **extra):
        path = tmp_path / f"spec_{len(list(tmp_path.iterdir()))}.json"
        path.write_text(json.dumps({"target": {"": p}, "draft": {"": q}, "m": m, **extra}))
        return path

    return types.SimpleNamespace(rules=str(rules), spec=spec)


def both_routes(capsys, route, name, options, p=P3, q=Q3, m=2):
    """The same rule and options through verify --tokens and through tree."""
    spec = route.spec(p, q, m)
    a = run_cli(capsys, "verify", f"{route.rules}:{name}", "--tokens", m, "--p", p, "--q", q,
                *options)
    b = run_cli(capsys, "tree", spec, "--verifier", f"{route.rules}:{name}", *options)
    return a, b


def test_verify_tokens_arith_is_lossy_by_rounding_as_tree(capsys, route):
    """verify --tokens --arith float32 runs the float run (it was dropped: PROVED, exit 0): the
    u <= p/q rule is lossy by rounding, with the tree route's report, and its law is the
    product of the one-position float32 law (calls from a context-free pair are independent)."""
    from exactspec import Dist, verify

    (ca, oa, _), (cb, ob, _) = both_routes(capsys, route, "le_call", ["--arith", "float32",
                                                                      "--json"])
    a, b = json.loads(oa), json.loads(ob)
    assert ca == cb == 1 and a == b
    assert a["verdict"] == "lossy-rounding" and a["arith"] == "float32"
    assert a["bias_exact_arith"] == "0"
    assert 0 < Fraction(a["bias_grid_only"]) < Fraction(a["bias"]) < Fraction(1, 10**7)
    one = verify(f"{route.rules}:le_single", Dist.parse(P3), Dist.parse(Q3), arith="float32")
    law = {f"{x},{y}": one.law[x] * one.law[y] for x in range(3) for y in range(3)}
    assert {k: Fraction(v) for k, v in a["law"].items()} == law
    target = {f"{x},{y}": Fraction(p) * Fraction(r) for x, p in enumerate(P3.split(","))
              for y, r in enumerate(P3.split(","))}
    assert Fraction(a["bias"]) == sum(max(law[k] - target[k], 0) for k in law)


def test_counter_in_a_module_global_refused_on_both_routes(capsys, route):
    for code, out, err in both_routes(capsys, route, "counted", []):
        assert code == 2 and out == "" and err.count("\n") == 1
        assert "hidden state" in err and "'calls'" in err


def test_pure_grid_bias_is_lossy_grid_on_every_route(capsys, route):
    """u <= p/q with p(0) = 0: on a grid of 8, u = 0 accepts token 0 (target 0) with
    probability q(0) / 8 = 1/16 per call; ideal uniforms never do."""
    code, out, _ = run_cli(capsys, "verify", f"{route.rules}:le_single", "--p", "0,1", "--q",
                           "1/2,1/2", "--grid", 8, "--json")
    one = json.loads(out)
    assert code == 1 and one["verdict"] == "lossy-grid" and one["lossless"] is False
    assert one["bias"] == one["bias_grid_only"] == "1/16" and one["bias_exact_arith"] == "0"
    code, out, _ = run_cli(capsys, "verify", f"{route.rules}:le_single", "--p", "0,1", "--q",
                           "1/2,1/2", "--grid", 8)
    assert code == 1 and "LOSSY BY THE GRID ONLY" in out and "ideal uniforms 0" in out
    code, _, _ = run_cli(capsys, "verify", f"{route.rules}:le_single", "--p", "0,1", "--q",
                         "1/2,1/2", "--grid", 8, "--tolerance", "1/16")
    assert code == 0
    (ca, oa, _), (cb, ob, _) = both_routes(capsys, route, "le_call", ["--grid", 8, "--json"],
                                           p="0,1", q="1/2,1/2")
    a, b = json.loads(oa), json.loads(ob)
    assert ca == cb == 1 and a == b and a["verdict"] == "lossy-grid"
    # two independent calls: TV = 1 - (1 - 1/16)**2
    assert Fraction(a["bias"]) == 1 - (1 - Fraction(1, 16)) ** 2 == Fraction(a["bias_grid_only"])
    assert a["bias_exact_arith"] == "0"


def test_split_shown_in_tree_text_and_json(capsys, route):
    """A logic bias of 2**-100 scale beside a rounding bias of 1e-8 scale: the label comes from
    the exact comparison (lossy-logic), and the three TVs are shown side by side."""
    spec = route.spec()
    code, out, _ = run_cli(capsys, "tree", spec, "--verifier", f"{route.rules}:tiny_logic",
                           "--arith", "float32", "--json")
    obj = json.loads(out)
    assert code == 1 and obj["verdict"] == "lossy-logic"
    assert 0 < Fraction(obj["bias_exact_arith"]) < Fraction(1, 2**90)
    assert Fraction(1, 10**9) < Fraction(obj["bias"]) < Fraction(1, 10**7)
    assert obj["bias_grid_only"] is not None
    code, out, _ = run_cli(capsys, "tree", spec, "--verifier", f"{route.rules}:tiny_logic",
                           "--arith", "float32")
    assert code == 1 and "REFUTED (lossy by logic)" in out
    split = [line for line in out.splitlines() if line.startswith("TV to the target")]
    assert len(split) == 1 and "float32 run" in split[0] and "ideal uniforms" in split[0]
    assert "on the grid of 2**24" in split[0]
    # a built-in spec under --arith shows the split too
    code, out, _ = run_cli(capsys, "tree", ROOT / "examples" / "chain.json", "--arith",
                           "float32")
    assert "TV to the target: float32 run" in out


@pytest.mark.parametrize("name, gamma", [
    ("greedy_call", None),
    pytest.param("greedy_rows", 1, marks=pytest.mark.slow),   # 3 rows a side: ~700 instances
])
def test_three_token_counterexample_found_by_tree_search(capsys, route, name, gamma):
    """A residual replaced by its most likely token is exact on two tokens (the residual is one
    token there): the search reaches three tokens, in verify --search's order, and finds it;
    --search-tokens 2 stops before."""
    spec = route.spec("1/2,1/2", "1/2,1/2", m=1, **({"gamma": gamma} if gamma else {}))
    name = f"{route.rules}:{name}"
    code, out, _ = run_cli(capsys, "tree", spec, "--verifier", name, "--search",
                           "--search-tokens", 2, "--json")
    obj = json.loads(out)
    assert code == 0 and obj["counterexample"] is None and obj["search_tokens"] == 2
    two = obj["instances"]
    code, out, _ = run_cli(capsys, "tree", spec, "--verifier", name, "--search", "--json")
    obj = json.loads(out)
    assert code == 1 and obj["verdict"] == "lossy-logic" and obj["instances"] > two
    assert obj["search_tokens"] == 3
    assert all(len(row.split(",")) == 3 for side in obj["counterexample"].values()
               for row in side)
    pair = _load_pair({"target": obj["counterexample"]["target"],
                       "draft": obj["counterexample"]["draft"]}, None)
    direct = user_report({"gamma": gamma, "m": 1}, name, pair=pair)
    assert direct["law"] == obj["law"] and direct["tv"] == obj["tv"] != "0"


def test_search_order_shared_with_verify_search(capsys, route):
    """One-token calls of the same rule: verify --tokens 1 --search tries the pairs of verify
    --search in the same order, so both stop at the same instance."""
    code, out, _ = run_cli(capsys, "verify", f"{route.rules}:greedy_single", "--search",
                           "--json")
    single = json.loads(out)
    code2, out, _ = run_cli(capsys, "verify", f"{route.rules}:greedy_call", "--tokens", 1,
                            "--search", "--json")
    seq = json.loads(out)
    assert code == code2 == 1 and single["instances"] == seq["instances"]
    p = ",".join(single["counterexample"]["p"].values())
    q = ",".join(single["counterexample"]["q"].values())
    assert seq["counterexample"] == {"p": p, "q": q} and len(p.split(",")) == 3
    assert Fraction(seq["bias"]) == Fraction(single["bias"])


@pytest.mark.parametrize("options", [
    [], ["--arith", "bfloat16"], ["--grid", "8"], ["--grid", "8", "--tolerance", "1/10"],
    ["--arith", "float16", "--tolerance", "1"], ["--max-paths", "100000"],
])
def test_every_option_means_the_same_on_both_routes(capsys, route, options):
    (ca, oa, ea), (cb, ob, eb) = both_routes(capsys, route, "le_call", options + ["--json"])
    assert (ca, json.loads(oa), ea) == (cb, json.loads(ob), eb)


def test_certificate_and_budget_the_same_on_both_routes(capsys, route, tmp_path):
    spec = route.spec()
    certs = [tmp_path / "a.json", tmp_path / "b.json"]
    code, _, _ = run_cli(capsys, "verify", f"{route.rules}:le_call", "--tokens", 2, "--p", P3,
                         "--q", Q3, "--certificate", certs[0])
    code2, _, _ = run_cli(capsys, "tree", spec, "--verifier", f"{route.rules}:le_call",
                          "--certificate", certs[1])
    assert code == code2 == 0
    assert json.loads(certs[0].read_text()) == json.loads(certs[1].read_text())
    assert check_certificate(str(certs[0])) == []
    (ca, oa, ea), (cb, ob, eb) = both_routes(capsys, route, "le_call", ["--max-paths", "3"])
    assert ca == cb == 2 and oa == ob == "" and ea == eb and ea.count("\n") == 1
    assert "budget of 3" in ea


@pytest.mark.parametrize("argv, words", [
    (["--k", "2"], ["--k", "multi-position"]),
    (["--backend", "numpy"], ["--backend numpy"]),
    (["--logits-p", "1,2,3"], ["--logits-p"]),
    (["--search-tokens", "2"], ["--search-tokens", "--search"]),
    (["--search", "--certificate", "c.json"], ["--certificate", "--search"]),
])
def test_options_a_route_cannot_honour_are_refused_in_one_line(capsys, route, argv, words):
    pq = [] if "--search" in argv else ["--p", P3, "--q", Q3]
    code, out, err = run_cli(capsys, "verify", f"{route.rules}:le_call", "--tokens", 2, *pq,
                             *argv)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert all(w in err for w in words), err


def _textbook_chain(s, drafts, p, q):
    """The chain of the one-draft rule, as engines write it (rows of every position)."""
    out = ()
    for i, x in enumerate(drafts):
        if not s.coin(min(1, p[i][x] / q[i][x])):
            return out + (s.draw(residual(p[i], q[i])),)
        out += (x,)
    return out + (s.draw(p[len(drafts)]),)


def test_a_call_over_the_seconds_budget_is_refused_up_front():
    """The path budget alone would let a slow rule run for hours: its estimated paths times
    the measured seconds of one path are checked too, before the enumeration."""
    pair = ContextPair.context_free("1/3,1/3,1/3", "1/2,1/4,1/4")

    with pytest.raises(TooLarge, match=r"paths at about .* s each: about .* s of exact work, "
                                       r"over the budget of 0 s"):
        user_report({"gamma": 2, "m": 3}, _textbook_chain, pair=pair, max_seconds=1e-9)
    report = user_report({"gamma": 2, "m": 3}, _textbook_chain, pair=pair, max_seconds=None)
    assert report["verdict"] == "lossless"


def test_the_text_says_how_many_sequences_it_leaves_out():
    """The text lists at most 24 sequences (the differing ones first) and says how many more
    there are; the JSON report has every one."""
    pair = ContextPair.context_free("1/2,1/4,1/8,1/16,1/16", "1/5,1/5,1/5,1/5,1/5")

    report = user_report({"gamma": 1, "m": 2}, _textbook_chain, pair=pair)
    assert len(report["law"]) == 25 and report["verdict"] == "lossless"
    text = user_text(report)
    assert "... 1 more sequence (the differing ones first; --json lists every one)" in text
    assert "more sequence" not in user_text(report, max_rows=25)


# -- a PyTorch rule as a tree spec's verifier ----------------------------------------------------
def test_a_pytorch_rule_through_a_tree_spec_as_verify_tokens_gives(capsys, tmp_path):
    """``tree --verifier FILE:fn`` (and a spec's "verifier") takes a PyTorch rule ``fn(p, q)``
    as ``verify FILE:fn --tokens M`` does: the whole call of ``gamma + 1`` target rows (``m``
    without ``gamma``); transformers' chain proved with its tokens per call 19/9."""
    hf = ROOT / "examples" / "engines" / "hf_speculative_sampling.py"
    rule = f"{hf}:speculative_sampling"
    pq = ["--p", "1/2,1/3,1/6", "--q", "1/4,1/4,1/2"]
    assert main(["verify", rule, *pq, "--tokens", "3", "--json"]) == 0
    tokens = json.loads(capsys.readouterr().out)
    pair = {"target": {"": "1/2,1/3,1/6"}, "draft": {"": "1/4,1/4,1/2"}, "m": 3}
    for extra, argv in (({"gamma": 2}, ["--verifier", rule]), ({}, ["--verifier", rule]),
                        ({"verifier": rule}, [])):
        spec = tmp_path / "spec.json"
        spec.write_text(json.dumps({**pair, **extra}))
        assert main(["tree", str(spec), *argv, "--json"]) == 0
        tree = json.loads(capsys.readouterr().out)
        assert tree["lossless"] is True and tokens["lossless"] is True
        assert Fraction(tree["tokens_per_call"]) == Fraction(tokens["tokens_per_call"]) \
            == Fraction(19, 9)
        assert tree["law"] == tokens["law"]
    spec = tmp_path / "no_positions.json"
    spec.write_text(json.dumps({k: v for k, v in pair.items() if k != "m"}))
    assert main(["tree", str(spec), "--verifier", rule]) == 2
    err = capsys.readouterr().err
    assert "needs the number of draft positions" in err and len(err.splitlines()) == 1


def test_a_pytorch_rule_in_a_tree_spec_gets_the_report_of_verify_tokens(capsys, tmp_path):
    """The same text as ``verify --tokens 3`` (the factored route on the context-free pair);
    a pair that depends on the context is refused in one line, and ``tree --search`` tries
    context-free pairs only (the rule is handed one row at every position)."""
    hf = ROOT / "examples" / "engines" / "hf_speculative_sampling.py"
    rule = f"{hf}:speculative_sampling"
    assert main(["verify", rule, "--p", "1/2,1/3,1/6", "--q", "1/4,1/4,1/2", "--tokens",
                 "3"]) == 0
    tokens = capsys.readouterr().out.splitlines()
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"target": {"": "1/2,1/3,1/6"}, "draft": {"": "1/4,1/4,1/2"},
                                "m": 3}))
    assert main(["tree", str(spec), "--verifier", rule]) == 0
    tree = capsys.readouterr().out.splitlines()
    strip = [line for line in tokens if "factored route" not in line]
    assert [line for line in tree if "factored route" not in line] == strip
    assert "tokens per call = 19/9 (2.11111)" in tree
    assert main(["tree", str(spec), "--verifier", rule, "--search"]) == 0
    assert "no counterexample" in capsys.readouterr().out
    spec.write_text(json.dumps({"target": {"": "1/2,1/3,1/6", "0": "1/3,1/3,1/3"},
                                "draft": {"": "1/4,1/4,1/2"}, "m": 3}))
    assert main(["tree", str(spec), "--verifier", rule]) == 2
    err = capsys.readouterr().err
    assert "must be context-free" in err and len(err.splitlines()) == 1
