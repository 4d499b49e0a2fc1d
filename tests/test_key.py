"""KEY: the placement, the verifier, the closed-form selection law, the lazy variant,
the float sampler and the NumPy backend, each against an independent computation."""

import json
import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from exactspec import Dist, verify
from exactspec.claims.base import random_pair
from exactspec.claims.key import COUNTEREXAMPLES, corpus
from exactspec.cli import main
from exactspec.core.errors import InvalidInput, NotExact, TooLarge
from exactspec.key import (LATER, acceptance_law, check_selection_law, expected_key_draws,
                           key_placement, selection_law)
from exactspec.key.sampler import chi2_critical, chi2_power, selection_test, verifier_test
from exactspec.methods import METHODS
from exactspec.methods.key import key_uniforms
from exactspec.methods.key_lazy import key_lazy_uniforms
from exactspec.optimum.alpha_star import alpha_star_max_flow, draft_multisets, is_feasible, optimum

SEED_P = Dist.parse("1/2,3/10,1/5", labels="abc")
SEED_Q = Dist.parse("1/5,1/5,3/5", labels="abc")
F = Fraction


def weights(n):
    return st.lists(st.integers(0, 9), min_size=n, max_size=n).filter(lambda w: sum(w) > 0)


@st.composite
def instances(draw, max_tokens=6, max_k=6):
    n = draw(st.integers(1, max_tokens))
    p = draw(weights(n))
    q = draw(weights(n))
    k = draw(st.integers(1, max_k))
    return (Dist([F(w, sum(p)) for w in p]), Dist([F(w, sum(q)) for w in q]), k)


# -- the placement ---------------------------------------------------------------------------

def test_seed_example_needs_no_swap():
    plan = key_placement(SEED_P, SEED_Q, 2)
    assert plan.path == "consecutive" and plan.swaps == ()
    assert plan.alpha_star == F(21, 25)
    assert plan.winner == Dist([F(9, 25), F(7, 25), F(9, 25)], "abc")
    assert plan.beta == Dist([1, 1, F(5, 9)], "abc", check=False)
    assert plan.residual == Dist([F(7, 8), F(1, 8), 0], "abc")
    assert [b.kind for b in plan.blocks] == ["tight", "tight", "tail"]


def test_first_counterexample_one_swap_by_hand():
    """k = 8, p = (3/5, 2/5), q = (1/2, 1/2): slot densities 255/128 and 1/128, surplus
    255/256 - 3/5 = 507/1280, swap 507/1280 / (254/128) = 507/2540."""
    p, q, k = COUNTEREXAMPLES[0]
    plan = key_placement(p, q, k)
    assert plan.density == (F(255, 128), F(1, 128))
    (swap,) = plan.swaps
    assert (swap.donor, swap.receiver, swap.value, swap.mass) == (0, 1, F(507, 1280),
                                                                 F(507, 2540))
    assert plan.winner == p and plan.beta == Dist([1, 1], check=False)
    assert plan.residual is None
    assert plan.key_cdf(0, F(1, 2)) == F(763, 1270) and plan.key_cdf(1, 1) == 1


def test_second_counterexample_tight_block_of_two():
    p, q, k = COUNTEREXAMPLES[1]
    plan = key_placement(p, q, k)
    opt = optimum(p, q, k)
    assert [b.tokens for b in plan.blocks] == [(0,), (1, 2), (3,)]
    assert [b.kind for b in plan.blocks] == ["tight", "tight", "tail"]
    assert all(plan.winner[t] == opt.a_star[t] for t in (0, 1, 2))
    assert plan.winner[3] == F(4, 5) ** 10 and plan.beta[3] == 0
    (swap,) = plan.swaps
    assert (swap.donor, swap.receiver) == (1, 2)
    assert plan.first_slot(2) == 1 and plan.first_slot(1) == 1 and plan.check() == []


@settings(max_examples=150, deadline=None)
@given(instances(max_tokens=7, max_k=8))
def test_placement_properties(inst):
    """The proof's invariants, re-derived by KeyPlacement.check and checked again here:
    w >= a*, with equality on tight blocks; beta in [0, 1]; keys inside their blocks."""
    p, q, k = inst
    plan = key_placement(p, q, k)
    assert plan.check() == []
    assert all(0 <= plan.beta[t] <= 1 for t in p.labels)
    tail = {t for b in plan.blocks if b.kind == "tail" for t in b.tokens}
    for t in p.labels:
        if q[t] == 0:
            assert plan.winner[t] == 0 and plan.a_star[t] == 0
        elif t in tail:
            assert plan.winner[t] >= plan.a_star[t] == p[t]
        else:
            assert plan.winner[t] == plan.a_star[t]
    # the residual lives on tokens that no draft can be when a rejection happens
    if plan.residual is not None:
        for t in p.labels:
            if plan.residual[t] != 0:
                assert q[t] == 0 or t not in tail
    # swaps: donors before receivers in one block, positive masses
    index = {t: j for j, t in enumerate(plan.slot_tokens)}
    for s in plan.swaps:
        assert index[s.donor] < index[s.receiver] and s.mass > 0 and s.value > 0
        assert s.value == s.mass * (plan.density[index[s.donor]] - plan.density[index[s.receiver]])


def test_a_star_law_is_feasible_and_w_is_a_base_point():
    """Independent of the placement: w sums to 1 and lies in the polymatroid of g_k(q(A))."""
    rng = random.Random(4)
    for _ in range(100):
        p, q = random_pair(rng, rng.randint(1, 6))
        k = rng.randint(1, 5)
        plan = key_placement(p, q, k)
        if all(v == 0 for v in q.probs):
            continue
        assert sum(plan.winner.probs) == 1
        assert is_feasible(plan.winner, q, k)


def test_key_laws_are_laws():
    p, q, k = COUNTEREXAMPLES[1]
    plan = key_placement(p, q, k)
    for t in (0, 1, 2, 3):
        assert sum(plan.slot_law(t).probs) == 1
        assert plan.key_cdf(t, 1) == 1 and plan.key_cdf(t, 0) == 0
        for c in (1, 2, 3):
            assert sum(plan.min_slot_law(t, c).probs) == 1
            assert sum(plan.min_slot_law(t, c, before=plan.first_slot(t)).probs) == 1
    law = plan.min_slot_law(3, 2, before=0)
    assert law.labels == (LATER,) and law[LATER] == 1


def test_invalid_inputs():
    plan = key_placement(Dist.parse("1/2,1/2"), Dist.parse("1,0"), 2)
    with pytest.raises(InvalidInput, match="q = 0"):
        plan.slot_law(1)
    with pytest.raises(InvalidInput, match="unknown token"):
        plan.slot_law(7)
    with pytest.raises(InvalidInput, match="at least one draft"):
        selection_law(plan, ())
    with pytest.raises(InvalidInput, match="k=0"):
        key_placement(Dist.parse("1/2,1/2"), Dist.parse("1/2,1/2"), 0)
    with pytest.raises(InvalidInput, match="sums to"):
        key_placement(Dist([F(1, 2), F(1, 3)], check=False), Dist.parse("1/2,1/2"), 2)
    import sympy

    x = sympy.Symbol("x")
    with pytest.raises(NotExact):
        key_placement(Dist([x, 1 - x], check=False), Dist.parse("1/2,1/2"), 2)


# -- the verifier on the engine --------------------------------------------------------------

@pytest.mark.parametrize("inst", COUNTEREXAMPLES, ids=["k8-two-tokens", "k10-tight-block"])
def test_counterexamples_are_exactly_optimal(inst):
    p, q, k = inst
    alpha = optimum(p, q, k).alpha_star
    assert alpha == alpha_star_max_flow(p, q, k)
    reference = verify("optimal", p, q, k)
    assert reference.lossless and reference.acceptance == alpha
    for method in ("key-lazy",) + (("key",) if k == 8 else ()):
        r = verify(method, p, q, k)
        assert r.lossless and r.acceptance == r.explicit_acceptance == alpha


def test_key_and_key_lazy_on_small_random_instances():
    rng = random.Random(11)
    for i in range(30):
        p, q = random_pair(rng, 1 + i % 4)
        k = 1 + i % 3
        alpha = optimum(p, q, k).alpha_star
        assert verify("optimal", p, q, k).acceptance == alpha
        for method in ("key", "key-lazy"):
            r = verify(method, p, q, k)
            assert r.lossless and r.acceptance == r.explicit_acceptance == alpha, (p, q, k)


def test_explicit_uniform_formulations_agree():
    for p, q, k in [(SEED_P, SEED_Q, 2), (Dist.parse("1/2,1/2"), Dist.parse("2/5,3/5"), 3),
                    (Dist.parse("1/10,9/10"), Dist.parse("1/10,9/10"), 3)]:
        assert key_placement(p, q, k).swaps or p == SEED_P
        for method in (key_uniforms, key_lazy_uniforms):
            r = verify(method, p, q, k)
            assert r.lossless and r.acceptance == optimum(p, q, k).alpha_star


def test_certificate_rechecks():
    from exactspec.replay import check_certificate

    r = verify("key-lazy", *COUNTEREXAMPLES[0], keep_paths=True)
    cert = r.certificate()
    assert check_certificate(cert) == []
    cert["paths"][0]["probability"] = "1/3"
    assert check_certificate(cert)


def test_registry_cli_and_compare(capsys):
    assert {"key", "key-lazy"} <= set(METHODS)
    assert METHODS["key"].draft_law == METHODS["key-lazy"].draft_law == "iid"
    code = main(["verify", "key", "--p", "3/5,2/5", "--q", "1/2,1/2", "--k", "8", "--json"])
    obj = json.loads(capsys.readouterr().out)
    assert code == 0 and obj["lossless"] is True and obj["acceptance"] == "1"
    from exactspec.bounds.compare import compare

    out = compare(SEED_P, SEED_Q, 2, methods=["key", "key-lazy", "optimal"])
    assert {m["method"]: m["ratio_to_optimal"] for m in out["methods"]} == \
        {"key": "1", "key-lazy": "1", "optimal": "1"}


# -- the selection law -----------------------------------------------------------------------

def test_p_equals_q_accepts_always():
    """p = q: alpha* = 1, the whole vocabulary is one tight block, w = q and every selected
    draft is accepted; with two tokens the swap makes both keys uniform on [0, 1]."""
    p = q = Dist.parse("1/10,3/10,3/5")
    plan = key_placement(p, q, 3)
    assert plan.alpha_star == 1 and plan.winner == q and set(plan.beta.probs) == {1}
    assert [b.kind for b in plan.blocks] == ["tight"]
    two = key_placement(Dist.parse("1/10,9/10"), Dist.parse("1/10,9/10"), 2)
    assert two.key_density(0) == two.key_density(1) == [(0, F(1, 10), 1), (F(1, 10), 1, 1)]
    assert selection_law(two, (0, 1)) == Dist([F(1, 2), F(1, 2)])


def test_selection_law_integrates_to_w_and_a_star():
    rng = random.Random(3)
    for _ in range(40):
        p, q = random_pair(rng, rng.randint(1, 5))
        k = rng.randint(1, 4)
        plan = key_placement(p, q, k)
        sel_total = {t: F(0) for t in p.labels}
        acc_total = {t: F(0) for t in p.labels}
        for drafts, w in draft_multisets(q, k):
            sel = selection_law(plan, drafts)
            assert sum(sel.probs) == 1
            acc = acceptance_law(plan, drafts)
            for t in p.labels:
                sel_total[t] += w * sel[t]
                acc_total[t] += w * acc[t]
        assert all(sel_total[t] == plan.winner[t] for t in p.labels)
        assert all(acc_total[t] == plan.a_star[t] for t in p.labels)


def test_mechanism_equals_closed_form_on_the_engine():
    for p, q, k in [(SEED_P, SEED_Q, 3), COUNTEREXAMPLES[0],
                    (Dist.parse("1/3,1/6,1/2,0"), Dist.parse("1/4,1/4,1/4,1/4"), 3)]:
        out = check_selection_law(p, q, k)
        assert out["ok"], out


def test_expected_lazy_key_draws():
    plan = key_placement(*COUNTEREXAMPLES[0])
    total = sum((w * expected_key_draws(plan, x) for x, w in draft_multisets(plan.q, 8)), F(0))
    assert total == F(255, 128)
    out = check_selection_law(*COUNTEREXAMPLES[0])
    assert out["expected_lazy_key_draws"] == F(255, 128)


# -- sampling with real-valued keys ----------------------------------------------------------

def test_chi2_helpers():
    assert abs(chi2_critical(1, 0.05) - 3.841458820694124) < 1e-9
    assert abs(chi2_power(1, 0.0, 0.05) - 0.05) < 1e-9
    assert chi2_power(3, 40.0, 1e-3) > 0.99


def test_sampled_keys_match_the_closed_form_with_stated_power():
    """With n = 200,000 the test at level 1e-3 detects any law at TV >= 0.01 with power
    at least 0.999 (non-centrality 4 n eps^2 = 80)."""
    p, q, k = COUNTEREXAMPLES[1]
    plan = key_placement(p, q, k)
    for drafts in [(1, 2, 2, 3, 3, 3, 3, 3, 3, 3), (0, 1, 2, 3, 3, 3, 3, 3, 3, 3)]:
        test = selection_test(plan, drafts, n=200_000, seed=1, level=1e-3, epsilon=0.01)
        assert test.passed and test.power >= 0.999, test.describe()
    test = verifier_test(plan, n=200_000, seed=2, level=1e-3, epsilon=0.01)
    assert test.passed and test.power >= 0.999, test.describe()


def test_sampling_test_detects_a_wrong_law():
    """The test rejects keys from the consecutive layout (no swaps): given X = (0, 1, 1) its
    selection law is the point mass on 0, at total variation 0.52 from the exact one."""
    p, q, k = Dist.parse("1/2,1/2"), Dist.parse("2/5,3/5"), 3
    plan = key_placement(p, q, k)
    assert plan.swaps
    from dataclasses import replace

    from exactspec.key.sampler import _chi2_test, sample_selection

    consecutive = replace(plan, pieces={t: ((plan.slot_of(t), q[t]),) for t in p.labels},
                          _cache={})
    drafts = (0, 1, 1)
    exact = selection_law(plan, drafts)
    wrong = selection_law(consecutive, drafts)
    assert sum(abs(a - b) for a, b in zip(exact.probs, wrong.probs)) / 2 > F(1, 100)
    assert selection_test(consecutive, drafts, n=100_000, seed=0).passed   # its own law
    idx = np.array(drafts)[sample_selection(consecutive, drafts, 100_000, seed=0)]
    counts = np.bincount(idx, minlength=2).astype(float)
    assert not _chi2_test(counts, list(exact.probs), 100_000, 1e-3, 0.01).passed


# -- NumPy ---------------------------------------------------------------------------------

def test_numpy_placement_matches_exact_twin():
    from exactspec.numpy_backend.key import W_ATOL, W_RTOL, key_placement as float_placement

    rng = np.random.default_rng(0)
    for it in range(60):
        n = int(rng.integers(2, 9))
        k = int(rng.integers(1, 7))
        p = rng.dirichlet(np.ones(n) * 0.7)
        q = rng.dirichlet(np.ones(n) * 0.7)
        if it % 5 == 0:
            p[rng.integers(n)] = 0
        if it % 7 == 0:
            q[rng.integers(n)] = 0
        fp = float_placement(p, q, k)
        exact = key_placement(Dist([F(x) for x in p], normalize=True),
                              Dist([F(x) for x in q], normalize=True), k)
        w = np.array([float(v) for v in exact.winner.probs])
        assert np.all(np.abs(fp.w[0] - w) <= W_ATOL + W_RTOL * w)
        assert np.allclose(fp.beta[0], [float(v) for v in exact.beta.probs], atol=1e-10)
        assert fp.swaps[0] == len(exact.swaps)
        assert fp.law_error[0] < 1e-13


def test_numpy_placement_matches_exact_twin_on_ngram_rows():
    """Hundreds of swaps per row: n-gram pairs over 400 tokens, each row also recomputed in
    exact rationals from the same floats."""
    from exactspec.numpy_backend.models import model_pair
    from exactspec.numpy_backend.key import W_ATOL, W_RTOL, key_placement as float_placement

    P, Q = model_pair("docs", vocab_size=400).rows(3, seed=2)
    plan = float_placement(P, Q, 4)
    for b in range(3):
        exact = key_placement(Dist([F(float(x)) for x in P[b]], normalize=True),
                              Dist([F(float(x)) for x in Q[b]], normalize=True), 4)
        w = np.array([float(v) for v in exact.winner.probs])
        assert plan.swaps[b] == len(exact.swaps) > 0
        assert np.all(np.abs(plan.w[b] - w) <= W_ATOL + W_RTOL * w)
        assert abs(plan.alpha_star[b] - float(exact.alpha_star)) < 1e-13


def test_numpy_sampler_law_and_acceptance():
    from exactspec.numpy_backend.key import sample_key

    p, q = np.array([0.5, 0.2, 0.3, 0.0]), np.array([0.05, 0.05, 0.1, 0.8])
    exact = key_placement(Dist.parse("1/2,1/5,3/10,0"), Dist.parse("1/20,1/20,1/10,4/5"), 10)
    n = 200_000
    for lazy in (False, True):
        out = sample_key(p, q, 10, np.random.default_rng(5), n=n, lazy=lazy)
        law = np.bincount(out.tokens, minlength=4) / n
        # 5 standard errors: sqrt(p(1-p)/n) <= 0.0012
        assert np.all(np.abs(law - p) < 0.006), law
        assert abs(out.accepted.mean() - float(exact.alpha_star)) < 0.006
        sel = np.bincount(out.selected, minlength=4) / n
        assert np.all(np.abs(sel - [float(v) for v in exact.winner.probs]) < 0.006)
        if lazy:
            # exact expected number of lazy key draws, against the sample mean
            draws = sum(float(w * expected_key_draws(exact, x))
                        for x, w in draft_multisets(exact.q, 10))
            assert abs(out.key_draws.mean() - draws) < 0.01
        else:
            assert np.all(out.key_draws == 10)


def test_numpy_batch_of_rows():
    from exactspec.numpy_backend.key import key_placement as float_placement, sample_key

    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.ones(50), size=6)
    Q = rng.dirichlet(np.ones(50), size=6)
    plan = float_placement(P, Q, 4)
    assert plan.w.shape == (6, 50) and np.allclose(plan.w.sum(axis=1), 1)
    assert np.all(plan.w >= plan.a_star - 1e-15)
    out = sample_key(P, Q, 4, rng)
    assert out.tokens.shape == (6,) and out.drafts.shape == (6, 4)
    out = sample_key(P, Q, 4, rng, n=3, lazy=True)
    assert out.tokens.shape == (6, 3) and np.all(out.key_draws <= 4)
    with pytest.raises(InvalidInput):
        sample_key(P, Q, 4, "not a generator")


# -- a slice of the corpus (the claims key-lossless-optimal and key-selection-law run the
# -- full one in the suite, through exactspec prove --full in tests/test_claims.py) ----------

def test_corpus_lossless_optimal_and_selection_law():
    """Vocabularies 1 to 6, k = 1..5 on a dozen instances (different seed from the claims);
    key through exact_verification (merged states above 250 paths: the 49,306-path case
    takes a fraction of a second)."""
    from exactspec.bounds.compare import exact_verification

    for number, (p, q, k) in enumerate(corpus(seed=77, size=12)):
        alpha = optimum(p, q, k).alpha_star
        for method in ("key", "key-lazy"):
            if method == "key":
                r = exact_verification(method, p, q, k, max_paths=None)
            else:
                r = verify(method, p, q, k, max_paths=None)
            assert r.lossless and r.acceptance == r.explicit_acceptance == alpha
        if number % 3 == 0:
            assert check_selection_law(p, q, k)["ok"]


# -- the stepped form on the merged-state interpreter (exactspec.key.stepped) ---------------

def _merged_equals_plain(p, q, k):
    from exactspec.engine.merged import enumerate_merged
    from exactspec.key.stepped import KEY_STEPS

    plain = verify("key", p, q, k, max_paths=None).enumeration
    merged = enumerate_merged(KEY_STEPS, p, q, k)
    assert type(plain).__name__ in ("Enumeration", "LawLeafEnumeration")  # not merged
    for t in p.labels:
        assert isinstance(merged.law[t], (int, Fraction)) and merged.law[t] == plain.law[t]
    assert merged.acceptance == plain.acceptance
    assert merged.explicit_acceptance == plain.explicit_acceptance
    assert merged.paths == plain.paths and merged.total == plain.total == 1
    assert (merged.used_drafts, merged.used_accept) == (plain.used_drafts, plain.used_accept)
    return plain, merged


def test_stepped_key_equals_the_plain_enumeration():
    """The merged states give the plain enumeration's law, P(Y in X), explicit acceptance and
    number of paths exactly: the first counterexample, the seed example at k = 1..5, q with
    zeros, a single draftable token, and random rationals on 1-5 tokens."""
    cases = [COUNTEREXAMPLES[0], *[(SEED_P, SEED_Q, k) for k in range(1, 6)],
             (Dist.parse("1/3,1/6,1/2,0"), Dist.parse("1/4,0,1/2,1/4"), 4),
             (Dist.parse("1/2,1/2"), Dist.parse("0,1"), 3),
             (Dist.parse("1/10,9/10"), Dist.parse("1/10,9/10"), 5)]
    rng = random.Random(41)
    cases += [(*random_pair(rng, 1 + i % 5), 1 + i % 4) for i in range(12)]
    merged_any = False
    for p, q, k in cases:
        plain, merged = _merged_equals_plain(p, q, k)
        merged_any |= merged.transitions < plain.paths
    assert merged_any


def test_stepped_key_merges_paths():
    """The merge is exercised: far fewer one-step runs than paths; exact_verification picks
    merged states above KEY's plain_paths with the law p and acceptance alpha* exactly, by
    KEY's lowest key slot (tests/test_key_min_slot.py), or by KEY_STEPS where that shortcut
    does not apply, refused up front over a budget of paths as the plain enumeration is."""
    import dataclasses

    from exactspec.bounds.compare import exact_verification
    from exactspec.key.stepped import KEY_STEPS
    from exactspec.methods.base import Method

    p, q, k = COUNTEREXAMPLES[0]
    plain, merged = _merged_equals_plain(p, q, k)
    assert (merged.paths, merged.states, merged.transitions) == (3602, 365, 676)
    assert plain.paths > KEY_STEPS.plain_paths
    r = exact_verification("key", p, q, k)
    assert type(r.enumeration).__name__ == "MergedEnumeration"
    assert r.enumeration.form == "key-min-slot" and r.to_json()["stepped_form"] == "key-min-slot"
    assert r.lossless and r.acceptance == 1
    small = exact_verification("key", SEED_P, SEED_Q, 2)
    assert type(small.enumeration).__name__ in ("Enumeration", "LawLeafEnumeration")  # plain
    # 293,305 paths (too many to list in a unit test): law p, acceptance alpha* (closed form)
    big = exact_verification("key", SEED_P, SEED_Q, 9)
    assert big.lossless and big.acceptance == big.explicit_acceptance
    assert big.acceptance == optimum(SEED_P, SEED_Q, 9).alpha_star
    # the shortcut declined: KEY_STEPS, the same paths as the plain enumeration, and the
    # budget of paths of merged states not bounded in advance
    declined = dataclasses.replace(KEY_STEPS, shortcut=dataclasses.replace(
        KEY_STEPS.shortcut, condition=lambda p, q, k: "declined in this test"))
    keyed = Method("key", METHODS["key"].run, steps=declined)
    big = exact_verification(keyed, SEED_P, SEED_Q, 9)
    assert big.enumeration.form == "key" and big.lossless
    assert big.acceptance == optimum(SEED_P, SEED_Q, 9).alpha_star
    assert big.paths == 293305 and big.enumeration.transitions < big.paths // 20
    with pytest.raises(TooLarge, match="about .* paths, over the budget of 100,000"):
        exact_verification(keyed, SEED_P, SEED_Q, 9, max_paths=100_000)


def test_smallest_key_steps_equal_the_plain_mechanism():
    """The mechanism on fixed drafts, merged (what check_selection_law runs above
    MECHANISM_PLAIN_PATHS) against plain: the same law and number of paths on every draft
    multiset, drafts given in any order."""
    from exactspec.engine.exact import enumerate_paths
    from exactspec.engine.merged import enumerate_merged
    from exactspec.key.selection import smallest_key, smallest_key_steps

    merged_any = False
    for p, q, k in [(SEED_P, SEED_Q, 4), (*COUNTEREXAMPLES[0][:2], 5),
                    (Dist.parse("1/3,1/6,1/2,0"), Dist.parse("1/4,1/4,1/4,1/4"), 3)]:
        plan = key_placement(p, q, k)
        for drafts, _ in draft_multisets(plan.q, k):
            for order in (drafts, tuple(reversed(drafts))):
                plain = enumerate_paths(lambda s, *_: smallest_key(s, plan, order), p, q, k,
                                        max_paths=None)
                merged = enumerate_merged(smallest_key_steps(plan, order), p, q, k)
                assert merged.law == plain.law and merged.paths == plain.paths
                assert merged.law == dict(selection_law(plan, order))
                merged_any |= merged.transitions < plain.paths
    assert merged_any


@pytest.mark.slow
def test_stepped_key_equals_plain_on_the_second_counterexample():
    """k = 10 on four tokens, 49,306 paths: the case `verify key` took tens of seconds on."""
    plain, merged = _merged_equals_plain(*COUNTEREXAMPLES[1])
    assert plain.paths == 49306
