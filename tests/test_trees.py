"""Token trees on networkx, node rules, idealised (positional) trees, sequence-level bug
classes, and the ``exactspec tree`` report.

The family of node rules is listed once (``RULES``) and every member runs through the same
checks: the joint law of the generated tokens equals the target's, exactly.
"""

from __future__ import annotations

import json
import random
from fractions import Fraction as F

import networkx as nx
import numpy as np
import pytest

from exactspec.sequences.chains import Chain
from exactspec.checker import check_certificate
from exactspec.claims.trees import tree_rules
from exactspec.sequences.context import ContextPair, random_model_pair
from exactspec.core.dist import Dist
from exactspec.engine.sampling import RandomSampler
from exactspec.core.errors import InvalidInput
from exactspec.sequences.multitoken import call_law, prove_sequence, tokens_per_call
from exactspec.optimum.alpha_star import law_optimum, optimal_acceptance
from exactspec.sequences.trees import Tree, branching_patterns, chain_vs_tree_table, draft_tree, \
    drafted_tokens, node_rule, positional_tokens_per_call, reach_probabilities, \
    rrs_positional_probabilities, rule_from_method, run_sequence_bugs, \
    stale_residual_tree_call, tree_layout, tree_report, tree_text, verification_law

P_SEED, Q_SEED = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
SEED = ContextPair.context_free(P_SEED, Q_SEED)
RULES = tree_rules()          # rrs, rrs-wor, optimal (iid), optimal (wor), key when registered


def pairs(seed, count, n, depth, drafts="iid"):
    rng = random.Random(seed)
    return [random_model_pair(rng, n, depth, zeros=(drafts == "iid")) for _ in range(count)]


def rule_id(rule):
    name, drafts = rule
    return name if drafts is None else f"{name}-{drafts}"


# -- drafting ------------------------------------------------------------------------------

def test_draft_tree_shape_and_attributes():
    s = RandomSampler(np.random.default_rng(3))
    tree = draft_tree(s, SEED, (1,), (2, 3), "iid")
    assert tree.number_of_nodes() == 1 + drafted_tokens((2, 3)) == 9
    assert nx.is_arborescence(tree)
    assert tree.nodes[()]["context"] == (1,) and tree.nodes[()]["token"] is None
    for node in tree.nodes:
        data = tree.nodes[node]
        assert data["depth"] == len(node)
        if node:
            assert data["context"] == tree.nodes[node[:-1]]["context"] + (data["token"],)
    wor = draft_tree(s, SEED, (), (3,), "wor")
    assert sorted(wor.nodes[n]["token"] for n in wor.successors(())) == [0, 1, 2]


def test_drafted_tokens_and_branching_patterns():
    assert drafted_tokens((2, 2)) == 6 and drafted_tokens((3, 1, 2)) == 3 + 3 + 6
    for n in range(1, 8):
        patterns = branching_patterns(n)
        assert all(drafted_tokens(b) == n for b in patterns)
        assert len(set(patterns)) == len(patterns)
    assert branching_patterns(4) == [(1, 1, 1, 1), (1, 1, 2), (1, 3), (2, 1), (4,)]


# -- every node rule is lossless on two-level trees (vocabulary 3) --------------------------

@pytest.mark.parametrize("rule", RULES, ids=rule_id)
def test_two_level_tree_generates_the_target_joint_law(rule):
    name, drafts = rule
    verifier = Tree((2, 2), name, drafts)
    for pair in pairs(100 + len(rule_id(rule)), 2, 3, 3, verifier.rule.draft_law):
        proof = prove_sequence(verifier, pair, 3)
        assert proof.lossless, proof.differs
        assert 1 <= proof.tokens_per_call <= 3


@pytest.mark.parametrize("rule", RULES, ids=rule_id)
def test_eager_and_lazy_drafting_agree(rule):
    name, drafts = rule
    lazy = Tree((2, 1), name, drafts)
    eager = Tree((2, 1), name, drafts, lazy=False)
    for pair in pairs(200, 1, 2, 2, lazy.rule.draft_law):
        a, b = call_law(eager, pair).law, call_law(lazy, pair).law
        assert {t: w for t, w in a.items() if w} == {t: w for t, w in b.items() if w}


# Two-level trees on three tokens with m = 3 and 5, and the whole (2, 2) tree drafted first
# against lazily, for every rule: the claim tree-lossless (run once in the suite through
# exactspec prove --full, tests/test_claims.py); the tests above do m = 3 and (2, 1).


def test_registered_methods_plug_in_as_node_rules():
    from exactspec.methods import METHODS

    for name in ("rrs", "rrs-wor", "kseq", "spechub", "optimal"):
        if name not in METHODS:
            continue
        rule = rule_from_method(METHODS[name])
        assert rule.draft_law == METHODS[name].draft_law
        proof = prove_sequence(Tree((2, 2), rule), SEED, 2)
        assert proof.lossless, name
    if "optimal" in METHODS:        # the registered optimal method and ours reach the same
        ours = tokens_per_call(Tree((2, 2), "optimal"), SEED)
        assert tokens_per_call(Tree((2, 2), rule_from_method(METHODS["optimal"])), SEED) == ours


def test_a_chain_is_a_tree_with_one_child_per_node():
    for pair in pairs(7, 3, 3, 3):
        chain = call_law(Chain(3, lazy=True), pair).law
        tree = call_law(Tree((1, 1, 1), "rrs"), pair).law
        assert {t: w for t, w in chain.items() if w} == {t: w for t, w in tree.items() if w}


def test_tokens_per_call_on_the_seed_pair():
    a = optimal_acceptance(P_SEED, Q_SEED, 2)
    b = law_optimum(P_SEED, Q_SEED, 2, "wor")
    assert (a, b) == (F(21, 25), 1)
    assert tokens_per_call(Tree((2, 2), "rrs"), SEED) == F(1461, 625)
    assert tokens_per_call(Tree((2, 2), "optimal"), SEED) == 1 + a + a * a == F(1591, 625)
    assert tokens_per_call(Tree((2, 2), "optimal", "wor"), SEED) == 3
    assert tokens_per_call(Tree((2, 2), "rrs-wor"), SEED) == F(271, 100)
    if ("key", None) in RULES:          # KEY realises a*: the same as the optimal rule
        assert tokens_per_call(Tree((2, 2), "key"), SEED) == F(1591, 625)


def test_rrs_on_children_without_replacement_is_lossy():
    proof = prove_sequence(Tree((2, 2), "rrs", "wor"), SEED, 3)
    assert not proof.lossless and proof.tv == F(13, 100)


@pytest.mark.parametrize("spec, drafts, message", [
    ("rrs-wor", "iid", "distinct children"),
    ("nonsense", None, "choose one of"),
    (3, None, "give a rule name"),
    ("rrs", "bag", "draft_law='bag'"),
])
def test_invalid_rules(spec, drafts, message):
    with pytest.raises(InvalidInput, match=message):
        node_rule(spec, drafts)


@pytest.mark.parametrize("branching", [(0,), (2, -1), "22", (1.5,), 5, (True,)])
def test_invalid_branchings(branching):
    with pytest.raises(InvalidInput, match="branching"):
        Tree(branching)


def test_a_user_rule_function():
    def first_child_or_p(s, p, q, children):
        """Lossy on purpose: always accepts the first child."""
        return s.accept(children[0])

    proof = prove_sequence(Tree((1,), first_child_or_p), SEED, 1)
    assert proof.nonzero_law() == {(t,): Q_SEED[t] for t in Q_SEED.labels}


# -- a given drafted tree: verification law and reach probabilities ---------------------------

def _fixed_tree():
    tree = nx.DiGraph()
    tree.add_node((), token=None, context=(), depth=0)
    for node, token in (((0,), 2), ((1,), 0), ((0, 0), 0), ((1, 0), 1), ((1, 1), 0)):
        parent = node[:-1]
        tree.add_node(node, token=token, context=tree.nodes[parent]["context"] + (token,),
                      depth=len(node))
        tree.add_edge(parent, node)
    return tree


def test_verification_of_a_given_tree():
    tree = _fixed_tree()
    law = verification_law(SEED, tree, "rrs").law
    assert sum(law.values()) == 1
    reach = reach_probabilities(SEED, tree, "rrs")
    assert reach[()] == 1
    # root: c (token 2) first, accepted w.p. 1/3; else residual (3/4, 1/4, 0), then a with 1
    assert reach[(0,)] == F(1, 3) and reach[(1,)] == F(2, 3)
    assert reach[(0,)] + reach[(1,)] <= 1
    assert reach[(0, 0)] == F(1, 3) * 1                  # a is always accepted
    pos = tree_layout(tree)
    assert set(pos) == set(tree.nodes) and pos[()][1] == 0 and pos[(1, 1)][1] == -2


# -- idealised trees: Sequoia's positional model ---------------------------------------------

def test_positional_model_is_exact_for_context_free_rrs_trees():
    P = rrs_positional_probabilities(P_SEED, Q_SEED, 4)
    assert P == [F(3, 5), F(4, 25), F(17, 250), F(43, 1250)]
    for n in (1, 2, 3, 4):
        for branching in branching_patterns(n):
            assert tokens_per_call(Tree(branching, "rrs"), SEED) == \
                positional_tokens_per_call(branching, P), branching


def test_positional_model_on_a_drawn_tree_and_the_chain():
    P = [F(1, 2), F(1, 4), F(1, 8)]
    assert positional_tokens_per_call(_fixed_tree(), P) == 1 + F(1, 2) + F(1, 4) + \
        F(1, 2) * F(1, 2) + F(1, 4) * F(1, 2) + F(1, 4) * F(1, 4)
    assert positional_tokens_per_call((1, 1, 1), P) == (1 - F(1, 2) ** 4) / (1 - F(1, 2))
    with pytest.raises(InvalidInput, match="sum to at most 1"):
        positional_tokens_per_call((1,), [F(2, 3), F(2, 3)])
    with pytest.raises(InvalidInput, match="only 3 positions"):
        positional_tokens_per_call((4,), P)


def test_chain_vs_tree_table():
    seed = chain_vs_tree_table(rrs_positional_probabilities(P_SEED, Q_SEED, 8), (2, 6, 8))
    assert [(r["drafted"], r["chain"], r["best_tree"], r["best_tree_tokens"]) for r in seed] == [
        (2, F(49, 25), (1, 1), F(49, 25)),
        (6, F(37969, 15625), (2, 1, 1), F(1556, 625)),
        (8, F(966721, 390625), (2, 1, 1, 1), F(8293, 3125))]
    half = chain_vs_tree_table([F(1, 2 ** j) for j in range(1, 9)], (4, 6))
    assert [(r["chain"], r["best_tree"], r["best_tree_tokens"]) for r in half] == [
        (F(31, 16), (2, 1), F(17, 8)), (F(127, 64), (2, 1, 1), F(37, 16))]


# -- sequence-level bug classes --------------------------------------------------------------

def test_sequence_bugs_are_refuted_with_their_exact_laws():
    rows = {row["name"]: row for row in run_sequence_bugs()}
    assert set(rows) == {"first-row-bonus", "stale-residual-bonus", "rejected-draft-kept"}
    for row in rows.values():
        assert not row["buggy_lossless"] and row["correct_lossless"]
    assert rows["first-row-bonus"]["law"] == {(0, 0): 1}
    assert rows["first-row-bonus"]["target"] == {(0, 1): 1}
    stale = rows["stale-residual-bonus"]
    assert stale["tv"] == F(1, 25)
    assert stale["law"][(0, 0)] == F(27, 100) and stale["target"][(0, 0)] == F(1, 4)
    assert stale["law"][(1, 0)] == F(17, 100) and stale["law"][(2, 2)] == F(1, 25)
    assert rows["rejected-draft-kept"]["tv"] == F(2, 5)


def test_stale_residual_only_matters_after_a_rejected_sibling():
    # with one child per node there is never a rejected-then-accepted sibling: exact
    def one_child(s, pair, ctx):
        return stale_residual_tree_call(s, pair, ctx, (1, 1))

    assert prove_sequence(one_child, SEED, 3).lossless
    fixed = prove_sequence(lambda s, pr, c: stale_residual_tree_call(s, pr, c, (2, 2),
                                                                      fixed=True), SEED, 3)
    assert fixed.lossless
    assert fixed.tokens_per_call == tokens_per_call(Tree((2, 2), "rrs"), SEED)


def test_bug_certificates_recheck():
    row = run_sequence_bugs()[1]
    bad = prove_sequence(row["buggy"].verifier, SEED, 2, full_paths=True, keep_paths=True)
    cert = bad.certificate()
    assert cert["claim"] == "law" and check_certificate(cert) == []
    cert["law"]["0,0"] = "1/4"          # claim the target's value: the paths disagree
    assert check_certificate(cert)


# -- the report behind `exactspec tree` --------------------------------------------------------

def _floats_only_under_float_keys(obj, key=""):
    if isinstance(obj, float):
        assert key.endswith("_float"), key
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _floats_only_under_float_keys(v, k)
    elif isinstance(obj, list):
        for v in obj:
            _floats_only_under_float_keys(v, key)


def test_tree_report_chain_with_closed_form():
    report = tree_report({"target": {"": "3/5,2/5"}, "draft": {"": "1,0"}, "gamma": 2})
    assert report["lossless"] and report["verdict"] == "lossless" and report["bias"] == "0"
    assert report["tokens_per_call"] == report["closed_form"] == "49/25"
    assert report["constant_acceptance"] == "3/5"
    json.dumps(report)
    _floats_only_under_float_keys(report)
    assert "LOSSLESS" in tree_text(report) and "49/25" in tree_text(report)


def test_tree_report_tree_from_files(tmp_path):
    (tmp_path / "pair.json").write_text(json.dumps(
        {"labels": ["a", "b", "c"], "target": {"": "1/2,3/10,1/5", "a": "0,1/2,1/2"},
         "draft": {"": "1/5,1/5,3/5"}}))
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"model": "pair.json", "branching": [2, 2], "rule": "optimal",
                                "drafts": "wor", "m": 4, "context": "b"}))
    report = tree_report(str(spec))
    assert report["lossless"] and report["m"] == 4 and report["context"] == "b"
    assert report["verifier"]["rule"] == "optimal-wor" and report["drafted"] == 6
    assert sum(F(v) for v in report["law"].values()) == 1
    _floats_only_under_float_keys(report)
    assert "tree, branching [2, 2]" in tree_text(report)


def test_tree_report_refutes_a_lossy_tree():
    report = tree_report({"target": {"": "1/2,3/10,1/5"}, "draft": {"": "1/5,1/5,3/5"},
                          "branching": [2, 2], "rule": "rrs", "drafts": "wor"})
    assert not report["lossless"] and report["tv"] == "13/100"
    assert "LOSSY" in tree_text(report)
    _floats_only_under_float_keys(report)


def test_tree_report_block():
    report = tree_report({"target": {"": "1/3,2/3"}, "draft": {"": "2/3,1/3"},
                          "verifier": "block", "gamma": 2})
    assert report["accepted_per_call"] == "11/9" and report["ideal_accepted"] == "4/3"


@pytest.mark.parametrize("spec, message", [
    ({"target": {"": "1/2,1/2"}, "draft": {"": "1/2,1/2"}}, "needs 'gamma'"),
    ({"target": {"": "1/2,1/2"}, "draft": {"": "1/2,1/2"}, "gamma": -1}, "gamma=-1"),
    ({"target": {"": "1/2,1/2"}, "draft": {"": "1/2,1/2"}, "gamma": 1, "colour": 1},
     "unknown key 'colour'"),
    ({"target": {"": "1/2,1/2"}, "draft": {"": "1/2,1/2"}, "verifier": "forest"},
     "verifier='forest'"),
    ({"target": {"": "1/2,1/2"}, "draft": {"": "1/2,1/2"}, "verifier": "tree"},
     "needs 'branching'"),
    ({"target": {"": "1/2,1/2"}, "draft": {"": "1/2,1/2"}, "branching": [2, 0]},
     "integer >= 1"),
    ({"target": {"": "1/2,1/2"}, "draft": {"": "1/2,1/2"}, "gamma": 1, "context": "7"},
     "not a label"),
    ({"draft": {"": "1/2,1/2"}, "gamma": 1}, "missing 'target'"),
    ({"model": 3, "gamma": 1}, "'model' must be"),
])
def test_invalid_tree_specs(spec, message):
    with pytest.raises(InvalidInput, match=message):
        tree_report(spec)


def test_a_missing_spec_file_is_reported(tmp_path):
    with pytest.raises(InvalidInput, match="cannot read"):
        tree_report(str(tmp_path / "nope.json"))


# -- tree --search: per-position rows reach verify --search's pairs ------------------------
NODE_RULES = '''
from exactspec.core.dist import residual


def reused_uniform_chain(s, drafts, p, q):
    """Every node verifies as the gallery's reused_uniform: one uniform for the accept test
    and for the residual's inverse CDF (exact while the residual is one token)."""
    out = ()
    for i, x in enumerate(drafts):
        u = s.uniform()
        if u < p[i][x] / q[i][x]:
            out += (x,)
            continue
        return out + (s.pick(residual(p[i], q[i]), u, "residual"),)
    return out + (s.draw(p[len(drafts)]),)
'''


@pytest.fixture
def node_rules(tmp_path):
    path = tmp_path / "node_rules.py"
    path.write_text(NODE_RULES)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"target": ["1/2,1/2"] * 3, "draft": ["1/2,1/2"] * 2,
                                "gamma": 2, "m": 1,
                                "verifier": f"{path}:reused_uniform_chain"}))
    return path, spec


def test_the_tree_search_tries_verify_searchs_pairs_in_its_order():
    """Every pair of verify --search, in its order, comes as per-position rows (p at every
    target row, q at every draft row); rows that differ by position are merged in by level."""
    from exactspec.gallery.search import position_instances, small_instances

    def probs(rows):
        return [r.probs for r in rows]

    same = [(n, t[0].probs, d[0].probs) for n, t, d in position_instances(3, 2)
            if len(set(map(tuple, probs(t)))) == 1 and len(set(map(tuple, probs(d)))) == 1]
    assert same == [(n, p.probs, q.probs) for n, (p, q) in small_instances(2)]
    # one pair per position (a whole call of one token): exactly verify --search's pairs
    assert [(n, probs(t + d)) for n, t, d in position_instances(1, 1)] == \
        [(n, probs(rows)) for n, rows in small_instances(2)]


def test_tree_search_finds_a_node_bug_that_needs_three_token_residuals(node_rules):
    """The gallery's reused_uniform, lossy only where the residual spreads over two tokens
    (three tokens of vocabulary), at every node of a chain of two drafts: verify --search
    finds its pair (1/3,1/3,1/3), (0,0,1); the per-position search, whose rows differing by
    position alone stopped at the first four ranks of three tokens (a tuple of 5 rows per
    instance), found nothing; now it finds that pair at the first node."""
    from itertools import islice

    from exactspec.gallery.one_draft import reused_uniform
    from exactspec.gallery.search import by_size, row_pool, search_counterexample
    from exactspec.gallery.search_sequences import search_sequence_counterexample

    one = search_counterexample(reused_uniform)
    p, q = one.counterexample.p, one.counterexample.q
    assert (p.probs, q.probs) == ((F(1, 3),) * 3, (0, 0, 1)) and one.instances == 133
    assert one.counterexample.law == {0: F(1, 6), 1: F(1, 2), 2: F(1, 3)}
    pool = [d.probs for d in row_pool(3, 4)]
    assert pool.index(p.probs) == 9
    assert max(max(r) for r in islice(by_size(len(pool), 5), 1000)) == 3     # the old order
    rules, _ = node_rules
    found = search_sequence_counterexample(f"{rules}:reused_uniform_chain", gamma=2, m=1,
                                           per_size=100)
    assert found.rows == {"target": ["1/3,1/3,1/3"] * 3, "draft": ["0,0,1"] * 2}
    report = found.report
    assert report["verdict"] == "lossy-logic" and report["tv"] == "1/6"
    assert report["law"] == {"0": "1/6", "1": "1/2", "2": "1/3"}


@pytest.mark.slow
def test_tree_search_command_finds_the_three_token_node_bug(node_rules, capsys):
    """``exactspec tree SPEC --search`` (1000 instances a size, about 2,100 tried)."""
    from exactspec.cli import main as cli_main

    _, spec = node_rules
    assert cli_main(["tree", str(spec), "--search", "--json"]) == 1
    obj = json.loads(capsys.readouterr().out)
    assert obj["counterexample"] == {"target": ["1/3,1/3,1/3"] * 3, "draft": ["0,0,1"] * 2}
    assert obj["verdict"] == "lossy-logic" and obj["tv"] == "1/6"
