"""Traversal Verification: lossless on chains and trees (exact), equal to block verification on
chains, RRS without replacement on one level, and two wrong variants refuted."""

import random
from fractions import Fraction

import pytest

from exactspec.core.errors import InvalidInput
from exactspec.sequences import traversal as tv_module
from exactspec.sequences.block import Block, accepted_per_call
from exactspec.sequences.chains import Chain
from exactspec.sequences.context import ContextPair, random_model_pair
from exactspec.sequences.multitoken import call_law, prove_sequence, simulate_calls, \
    tokens_per_call
from exactspec.sequences.traversal import Traversal, chain_comparison, traversal_update
from exactspec.sequences.tree_compare import tree_comparison
from exactspec.sequences.trees import Tree

SEED = ContextPair.context_free("1/2,3/10,1/5", "1/5,1/5,3/5", name="seed")


def pairs(seed, count, zeros=True, n=3):
    rng = random.Random(seed)
    return [random_model_pair(rng, n, 2, zeros=zeros) for _ in range(count)]


def nonzero(law):
    return {t: w for t, w in law.items() if w}


@pytest.mark.parametrize("branching", [(1,), (1, 1), (2,), (3,), (2, 1), (1, 2), (2, 2)])
def test_lossless_on_random_context_dependent_pairs(branching):
    for pair in pairs(11 + len(branching), 2):
        proof = prove_sequence(Traversal(branching), pair, len(branching) + 1)
        assert proof.lossless, pair.to_table()
        assert 1 <= proof.tokens_per_call <= len(branching) + 1


@pytest.mark.slow
def test_three_levels_lossless_and_composed_equals_full():
    pair = pairs(5, 1)[0]
    proof = prove_sequence(Traversal((2, 1, 1)), pair, 4)
    assert proof.lossless
    full = prove_sequence(Traversal((2, 1)), pair, 3, full_paths=True)
    assert full.law == prove_sequence(Traversal((2, 1)), pair, 3).law and full.lossless


def test_seed_pair_exact_tokens_per_call():
    assert tokens_per_call(Traversal((2, 1)), SEED) == Fraction(51, 20)
    # one level: traversal is RRS without replacement (law and tokens per call)
    for k in (1, 2, 3):
        tv = call_law(Traversal((k,)), SEED).law
        rrs_wor = call_law(Tree((k,), "rrs-wor"), SEED).law
        assert nonzero(tv) == nonzero(rrs_wor)


def test_chain_is_block_verification_exactly():
    toy = ContextPair.context_free("1/3,2/3", "2/3,1/3")
    assert accepted_per_call(Traversal((1, 1)), toy) == Fraction(11, 9)
    assert accepted_per_call(Chain(2), toy) == Fraction(10, 9)
    rows = chain_comparison(pairs(3, 25), 2)
    assert all(r["same_law"] and r["traversal"] == r["block"] for r in rows)
    assert all(r["traversal"] >= r["token"] for r in rows)
    assert any(r["traversal"] > r["token"] for r in rows)
    # gamma = 1: block verification, traversal and the token-by-token chain all coincide
    for pair in pairs(4, 5):
        laws = [nonzero(call_law(v, pair).law) for v in (Traversal((1,)), Block(1), Chain(1))]
        assert laws[0] == laws[1] == laws[2]


def test_tree_comparison_keys_and_order():
    rows = tree_comparison(pairs(8, 2, zeros=False), (2, 1))
    for r in rows:
        assert set(r) >= {"traversal", "rrs", "rrs-wor", "optimal", "optimal-wor"}
        assert r["traversal"] >= r["rrs-wor"]


def test_update_identity():
    # S + 1 - p = sum (Q - p P)_+ ; the update keeps p P(y) = min(pP, Q) + (S+1-p) p' P'(y)
    p_u = Fraction(3, 4)
    target = [Fraction(1, 2), Fraction(3, 10), Fraction(1, 5)]
    draft = [Fraction(1, 5), Fraction(1, 5), Fraction(3, 5)]
    new_p, new_target, new_draft = traversal_update(p_u, target, draft, 2)
    s = sum(max(p_u * a - b, 0) for a, b in zip(target, draft))
    assert s + 1 - p_u == sum(max(b - p_u * a, 0) for a, b in zip(target, draft))
    for a, b, r in zip(target, draft, new_target):
        assert p_u * a == min(p_u * a, b) + (s + 1 - p_u) * new_p * r
    assert new_draft == [Fraction(1, 2), Fraction(1, 2), Fraction(0)]


def test_sampling_agrees_with_exact_tokens_per_call():
    pair = pairs(9, 1, zeros=False)[0]
    exact = tokens_per_call(Traversal((2, 2)), pair)
    calls = simulate_calls(Traversal((2, 2)), pair, 3000, seed=1)
    mean = sum(len(c) for c in calls) / len(calls)
    assert abs(mean - float(exact)) < 0.08      # float: ~5 standard errors


def test_wrong_parent_update_is_refuted(monkeypatch):
    # a published third-party variant: p' = min(S / (1 - Q(t)), 1)
    def wrong(accept, target, draft, index):
        over = [max(accept * a - b, 0) for a, b in zip(target, draft)]
        s = sum(over, Fraction(0))
        rest = 1 - draft[index]
        new_draft = [Fraction(0) if i == index else b / rest for i, b in enumerate(draft)]
        if s == 0:
            return Fraction(0), None, new_draft
        return min(Fraction(1), s / rest), [v / s for v in over], new_draft

    monkeypatch.setattr(tv_module, "traversal_update", wrong)
    bad = [prove_sequence(Traversal((1, 1)), pair, 3) for pair in pairs(21, 3)]
    assert any(not proof.lossless for proof in bad)


def test_stale_target_after_rejection_is_refuted(monkeypatch):
    right = tv_module.traversal_update

    def stale(accept, target, draft, index):
        new_p, _, new_draft = right(accept, target, draft, index)
        return new_p, list(target), new_draft       # the residual never replaces the target

    monkeypatch.setattr(tv_module, "traversal_update", stale)
    assert not prove_sequence(Traversal((2,)), SEED, 2).lossless


def test_bad_branching():
    with pytest.raises(InvalidInput, match="branching"):
        Traversal((2, 0))
    with pytest.raises(InvalidInput, match="branching"):
        Traversal(3)


def test_claims_registered():
    from exactspec.claims import get_claim

    assert get_claim("traversal-lossless").issue == "17"
    assert get_claim("traversal-chain-block").check is not None


# -- exactspec compare --tree ----------------------------------------------------------------

def _cli(capsys, *argv):
    import json

    from exactspec.cli import main

    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err, json


@pytest.mark.slow
def test_compare_tree_json(capsys):
    code, out, err, json = _cli(capsys, "compare", "--tree", "examples/tree.json", "--json")
    assert code == 0 and not err
    obj = json.loads(out)
    rows = {e["method"]: e for e in obj["methods"]}
    assert obj["kind"] == "exactspec-tree-compare" and obj["branching"] == [2, 2]
    # tree RRS and the node-wise optimum: the values tree_report gives (docs and tests/test_trees)
    assert rows["tree-rrs"]["tokens_per_call"] == "1461/625"
    assert rows["tree-optimal"]["tokens_per_call"] == "1591/625"
    assert rows["traversal"]["tokens_per_call"] == "137/50"
    assert rows["block"]["tokens_per_call"] == rows["traversal-chain"]["tokens_per_call"]
    assert obj["best_lossless"] == ["tree-optimal-wor"] and obj["best_tokens_per_call"] == "3"
    assert rows["traversal"]["ratio_to_best"] == "137/150"
    assert all(e["verdict"] == "lossless" for e in obj["methods"] if e["group"] == "lossless")
    lossy = [e for e in obj["methods"] if e["group"] == "lossy-by-design"]
    assert lossy and all(e["verdict"] == "lossy-logic" and e["tv"] != "0" for e in lossy)
    assert isinstance(rows["traversal"]["tokens_per_call_float"], float)


def test_compare_tree_text_and_chain(capsys):
    code, out, _, _ = _cli(capsys, "compare", "--tree", "examples/chain.json")
    assert code == 0
    assert "best lossless: block, traversal-chain" in out and "lossy by design" in out
    # the text keeps the multi-position words; the JSON's verdict is lossless / lossy-logic
    assert "PROVED" in out and "REFUTED" in out and "lossy-logic" not in out


@pytest.mark.parametrize("argv", [
    ["compare", "--tree", "examples/tree.json", "--p", "1/2,1/2"],
    ["compare", "--tree", "no/such/spec.json"],
    ["compare", "--k", "2"],
])
def test_compare_tree_bad_input(capsys, argv):
    code, out, err, _ = _cli(capsys, *argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1


def test_tree_spec_with_traversal_verifier(tmp_path, capsys):
    spec = {"labels": ["a", "b", "c"], "target": {"": "1/2,3/10,1/5"},
            "draft": {"": "1/5,1/5,3/5"}, "verifier": "traversal", "branching": [2, 1]}
    from exactspec.sequences.trees import tree_report

    report = tree_report(spec)
    assert report["lossless"] and report["tokens_per_call"] == "51/20"
    chain = tree_report({**{k: spec[k] for k in ("labels", "target", "draft")},
                         "verifier": "traversal", "gamma": 2})
    block = tree_report({**{k: spec[k] for k in ("labels", "target", "draft")},
                         "verifier": "block", "gamma": 2})
    assert chain["tokens_per_call"] == block["tokens_per_call"] == "51/25"
    path = tmp_path / "spec.json"
    import json

    path.write_text(json.dumps(spec))
    code, out, _, _ = _cli(capsys, "tree", str(path))
    assert code == 0 and out.startswith("traversal verification, branching [2, 1]")
