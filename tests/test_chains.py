"""Context-dependent model pairs, gamma-token chains and block verification.

Every expected value is exact.  Joint laws are checked two ways (composed one-call laws against
the whole generation enumerated in one run), tokens per call three ways (every path, the
``1 + sum prod min(p, q)`` formula, the constant-acceptance closed form).
"""

from __future__ import annotations

import json
import random
from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exactspec.sequences.block import BLOCK_CHECK_PAIR, BLOCK_CHECK_VALUES, Block, accepted_per_call, \
    block_weights, ideal_accepted
from exactspec.sequences.chains import Chain, chain_tokens_per_call, constant_acceptance_pair, \
    first_row_bonus_chain_call, kept_rejected_chain_call, leviathan_table, \
    random_constant_acceptance_pair, tokens_per_call_closed_form
from exactspec.checker import check_certificate
from exactspec.sequences.context import ContextPair, context_key, parse_context, random_model_pair
from exactspec.core.dist import Dist
from exactspec.core.errors import InvalidInput, NotExact
from exactspec.sequences.multitoken import call_law, generate, joint_law, prove_sequence, \
    simulate_calls, tokens_per_call

SEED = ContextPair.context_free("1/2,3/10,1/5", "1/5,1/5,3/5")


def pairs(seed, count, n, depth, zeros=True):
    rng = random.Random(seed)
    return [random_model_pair(rng, n, depth, zeros=zeros) for _ in range(count)]


# -- model pairs ---------------------------------------------------------------------------

def test_table_backs_off_to_the_longest_suffix():
    pair = ContextPair.from_table({"labels": ["a", "b"],
                                 "target": {"": "1/2,1/2", "a": "1/4,3/4", "b,a": "1,0"},
                                 "draft": {"": [F(2, 3), F(1, 3)]}})
    assert pair.target(()) == Dist.parse("1/2,1/2", labels="ab")
    assert pair.target(("a",)) == Dist.parse("1/4,3/4", labels="ab")
    assert pair.target(("a", "a")) == Dist.parse("1/4,3/4", labels="ab")
    assert pair.target(("b", "a")) == Dist.parse("1,0", labels="ab")
    assert pair.target(("a", "b", "a")) == Dist.parse("1,0", labels="ab")
    assert pair.target(("a", "b")) == Dist.parse("1/2,1/2", labels="ab")
    assert pair.draft(("b", "b")) == Dist.parse("2/3,1/3", labels="ab")


def test_functions_and_context_free_pairs():
    pair = ContextPair.from_functions(lambda c: [F(1, 2 + len(c)), 1 - F(1, 2 + len(c))],
                                    lambda c: {"0": 1, "1": 0} if c else "1/2,1/2", (0, 1))
    assert pair.target((1, 1)) == Dist([F(1, 4), F(3, 4)])
    assert pair.draft((0,)) == Dist([1, 0])
    assert pair.acceptance(()) == F(1)
    assert SEED.target((2, 1, 0)) == SEED.target(())


def test_joint_law_is_the_product_of_conditionals():
    pair = pairs(1, 1, 3, 2)[0]
    law = pair.joint(3, ctx=(1,))
    assert len(law) == 27 and sum(law.values()) == 1
    x = (2, 0, 1)
    assert law[x] == pair.target((1,))[2] * pair.target((1, 2))[0] * pair.target((1, 2, 0))[1]


def test_table_round_trip_and_json_file(tmp_path):
    pair = pairs(2, 1, 2, 2)[0]
    table = pair.to_table()
    path = tmp_path / "pair.json"
    path.write_text(json.dumps(table))
    again = ContextPair.from_json(path)
    assert again.labels == pair.labels == (0, 1)
    for ctx in pair.contexts(3):
        assert again.target(ctx) == pair.target(ctx) and again.draft(ctx) == pair.draft(ctx)
    funcs = ContextPair.from_functions(pair.target, pair.draft, pair.labels)
    assert ContextPair.from_table(funcs.to_table(depth=2)).target((1, 0)) == pair.target((1, 0))


def test_json_decimals_are_exact(tmp_path):
    path = tmp_path / "pair.json"
    path.write_text('{"target": {"": [0.1, 0.9]}, "draft": {"": "0.3,0.7"}}')
    pair = ContextPair.from_json(path)
    assert pair.target(()).probs == (F(1, 10), F(9, 10))
    assert pair.draft(()).probs == (F(3, 10), F(7, 10))


def test_context_keys():
    assert context_key(()) == "" and context_key(("a", "b")) == "a,b"
    assert parse_context("b, a", "ab") == ("b", "a")
    assert parse_context([1, 0], (0, 1)) == (1, 0)


@pytest.mark.parametrize("table, error, message", [
    ({"target": {"": "1/2,1/2"}}, InvalidInput, "missing 'draft'"),
    ({"target": {"a": "1/2,1/2"}, "draft": {"": "1/2,1/2"}}, InvalidInput, "no root"),
    ({"target": {"": "1/2,1/2"}, "draft": {"": "1/2,1/4,1/4"}}, InvalidInput, "3 entries"),
    ({"target": {"": "1/2,1/3"}, "draft": {"": "1/2,1/2"}}, InvalidInput, "sums to 5/6"),
    ({"target": {"": "1/2,1/2", "2": "1,0"}, "draft": {"": "1/2,1/2"}}, InvalidInput,
     "'2' is not a label"),
    ({"labels": "ab", "target": {"": {"a": 1, "z": 0}}, "draft": {"": "1,0"}}, InvalidInput,
     "unknown token 'z'"),
    ({"target": {"": [float("nan"), 1]}, "draft": {"": "1/2,1/2"}}, NotExact, "finite"),
    ({"target": "1/2,1/2", "draft": {"": "1/2,1/2"}}, InvalidInput, "map contexts"),
    ([1, 2], InvalidInput, "JSON object"),
])
def test_invalid_tables(table, error, message):
    with pytest.raises(error, match=message):
        ContextPair.from_table(table)


def test_a_function_returning_a_bad_distribution_is_named():
    pair = ContextPair.from_functions(lambda c: [1, 1], lambda c: [1, 0], (0, 1))
    with pytest.raises(InvalidInput, match="target at context '0,1'.*sums to 2"):
        pair.target((0, 1))
    with pytest.raises(InvalidInput, match="labels"):
        ContextPair.from_functions(lambda c: Dist([1, 0], "ab"), lambda c: [1, 0],
                                 (0, 1)).target(())


# -- chains --------------------------------------------------------------------------------

@pytest.mark.parametrize("gamma", [0, 1, 2, 3])
def test_chain_generates_the_target_joint_law(gamma):
    for pair in pairs(10 + gamma, 2, 3, gamma + 1):
        proof = prove_sequence(Chain(gamma), pair, gamma + 1)
        assert proof.lossless, proof.differs
        assert proof.tv == 0 and sum(proof.law.values()) == 1
    for pair in pairs(20 + gamma, 2, 2, 3):
        assert prove_sequence(Chain(gamma, lazy=True), pair, 2 * gamma + 2).lossless


def test_lazy_drafting_has_the_same_call_law():
    for pair in pairs(3, 3, 3, 3):
        eager = call_law(Chain(3), pair).law
        lazy = call_law(Chain(3, lazy=True), pair).law
        assert {t: w for t, w in eager.items() if w} == {t: w for t, w in lazy.items() if w}


def test_composed_law_equals_the_whole_generation_enumerated():
    for pair in pairs(4, 3, 2, 3):
        for gamma, m in ((1, 3), (2, 4)):
            full = prove_sequence(Chain(gamma), pair, m, full_paths=True)
            composed = joint_law(Chain(gamma), pair, m)
            assert full.law == {t: composed.get(t, 0) for t in full.law}


def test_chain_certificate_rechecks_and_tampering_is_caught():
    pair = pairs(5, 1, 2, 2)[0]
    proof = prove_sequence(Chain(2), pair, 3, full_paths=True, keep_paths=True)
    cert = proof.certificate()
    assert cert["claim"] == "lossless" and check_certificate(cert) == []
    assert all("," in path["output"] for path in cert["paths"])
    bad = json.loads(json.dumps(cert))
    bad["paths"][0]["output"] = "1,1,1" if bad["paths"][0]["output"] != "1,1,1" else "0,0,0"
    assert check_certificate(bad)
    with pytest.raises(InvalidInput, match="full_paths=True"):
        prove_sequence(Chain(1), pair, 2).certificate()


def test_tokens_per_call_three_ways():
    for pair in pairs(6, 4, 3, 3):
        for gamma in (1, 2, 3):
            assert tokens_per_call(Chain(gamma), pair) == chain_tokens_per_call(pair, gamma)
    rng = random.Random(7)
    for alpha in ("0", "1/3", "3/4", "1"):
        for gamma in (0, 1, 2, 3):
            closed = tokens_per_call_closed_form(alpha, gamma)
            assert tokens_per_call(Chain(gamma), constant_acceptance_pair(alpha)) == closed
            varying = random_constant_acceptance_pair(rng, alpha, 3, gamma)
            assert {varying.acceptance(c) for c in varying.contexts(gamma)} == {F(alpha)}
            assert tokens_per_call(Chain(gamma, lazy=True), varying) == closed


def test_leviathan_table_1():
    rows = leviathan_table()
    assert [r["closed_form"] for r in rows] == [F(49, 25), F(11529, 3125),
                                                 F(68618940391, 10**10)]
    for row in rows:
        assert row["closed_form"] == row["formula"] == row["enumerated"]
        assert f"{float(row['closed_form']):.2f}" == row["printed"]


def test_the_two_token_check_pair():
    pair = ContextPair.context_free("1/3,2/3", "2/3,1/3")
    proof = prove_sequence(Chain(2), pair, 3)
    assert proof.tokens_per_call == F(19, 9) == tokens_per_call_closed_form(F(2, 3), 2)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.lists(st.integers(0, 4), min_size=3, max_size=3).filter(any),
                min_size=8, max_size=8))
def test_chain_is_lossless_on_random_rational_pairs(weights):
    # contexts "", "0", "1", "2" for the target and the draft
    keys = ["", "0", "1", "2"]
    dists = [[F(w, sum(ws)) for w in ws] for ws in weights]
    pair = ContextPair.from_table({"target": dict(zip(keys, dists[:4])),
                                 "draft": dict(zip(keys, dists[4:]))})
    assert prove_sequence(Chain(2, lazy=True), pair, 3).lossless


def test_generate_runs_by_sampling_too():
    from exactspec.engine.sampling import RandomSampler
    import numpy as np

    s = RandomSampler(np.random.default_rng(0))
    seq = generate(s, Chain(2), SEED, 7)
    assert len(seq) == 7 and set(seq) <= {0, 1, 2}
    calls = simulate_calls(Chain(2), SEED, 4000, seed=1)
    mean = sum(map(len, calls)) / len(calls)
    exact = float(tokens_per_call(Chain(2), SEED))      # 49/25
    assert abs(mean - exact) < 0.05                      # ~5 standard errors


def test_a_call_must_produce_a_token():
    with pytest.raises(InvalidInput, match="non-empty tuple"):
        prove_sequence(lambda s, pair, ctx: (), SEED, 1)
    with pytest.raises(InvalidInput, match="gamma"):
        Chain(-1)
    with pytest.raises(InvalidInput, match="m=0"):
        prove_sequence(Chain(1), SEED, 0)


def test_path_tree_of_one_call_is_inspectable():
    result = call_law(Chain(1), ContextPair.context_free("1/3,2/3", "2/3,1/3"), keep_paths=True)
    tree = result.path_tree()
    leaves = [n for n in tree if tree.out_degree(n) == 0]
    assert len(leaves) == result.paths
    assert sum(tree.nodes[n]["weight"] for n in leaves) == 1


# -- sequence-level bugs in chains ---------------------------------------------------------

def test_first_row_bonus_is_refuted_exactly():
    pair = ContextPair.from_table({"target": {"": "1,0", "0": "0,1"},
                                 "draft": {"": "1,0", "0": "1/2,1/2"}})
    bug = prove_sequence(lambda s, pr, c: first_row_bonus_chain_call(s, pr, c, 1), pair, 2)
    assert bug.nonzero_law() == {(0, 0): 1} and bug.tv == 1
    assert prove_sequence(Chain(1), pair, 2).nonzero_law() == {(0, 1): 1}


def test_kept_rejected_draft_is_refuted_exactly():
    bug = prove_sequence(lambda s, pr, c: kept_rejected_chain_call(s, pr, c, 1), SEED, 2)
    assert not bug.lossless and bug.tv == F(2, 5)
    # the rejected draft is always c (the only token with p < q): c first, then the residual
    assert bug.law[(2, 0)] == F(1, 5) * F(1, 2) + F(2, 5) * F(3, 4)
    assert bug.law[(2, 2)] == F(1, 5) * F(1, 5)


# -- block verification --------------------------------------------------------------------

def test_block_check_values():
    pair = ContextPair.context_free(*BLOCK_CHECK_PAIR)
    values = {"token": accepted_per_call(Chain(2), pair),
              "block": accepted_per_call(Block(2), pair), "ideal": ideal_accepted(pair, 2)}
    assert values == BLOCK_CHECK_VALUES == {"token": F(10, 9), "block": F(11, 9),
                                            "ideal": F(12, 9)}
    assert prove_sequence(Block(2), pair, 3).lossless


def test_block_weights():
    pair = ContextPair.context_free(*BLOCK_CHECK_PAIR)
    w, h = block_weights(pair, (), (0, 0))
    assert w == [1, F(1, 2), F(1, 4)]
    # w_1 = 1/2; s_1 = (1/6 - 2/3)_+ + (1/3 - 1/3)_+ = 0, so h_1 = 0; h_2 = w_2 = 1/4
    assert h == [1, 0, F(1, 4)]


@pytest.mark.parametrize("gamma", [1, 2, 3])
def test_block_verification_is_lossless_and_between_token_and_ideal(gamma):
    for pair in pairs(40 + gamma, 2, 3 if gamma < 3 else 2, gamma + 1):
        assert prove_sequence(Block(gamma), pair, gamma + 1).lossless
        tok = accepted_per_call(Chain(gamma), pair)
        blk = accepted_per_call(Block(gamma), pair)
        assert tok <= blk <= ideal_accepted(pair, gamma)


def test_block_with_one_draft_is_the_token_rule():
    for pair in pairs(50, 3, 3, 2):
        assert tokens_per_call(Block(1), pair) == tokens_per_call(Chain(1), pair)


@pytest.mark.slow
def test_two_drafts_chain_over_three_calls_on_three_tokens():
    # The claims chain-lossless (chains on 3 tokens: gamma = 1 to m = 4, gamma = 2 and 3 over
    # one call) and block-verification (blocks on 3 tokens, gamma = 1, 2, 3) make the rest of
    # the exhaustive three-token check; gamma = 2 to m = 6 on 3 tokens is made only here.
    for pair in pairs(62, 2, 3, 3):
        assert prove_sequence(Chain(2), pair, 6).lossless
