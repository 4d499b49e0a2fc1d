"""Multi-draft methods (rrs, rrs-wor, kseq, spechub, optimal), draft laws, the merged-state
interpreter, closed forms against enumeration, compare and the optimum report.

Every expected value is a Fraction (or an exact algebraic number); property tests draw
rational distributions from integer weights, zeros allowed, on at most 4 tokens.
"""

from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exactspec.bounds.closed_forms import (KHISTI_FIGURE_2, SEED_P, SEED_Q, SEED_TABLE, acceptance_of,
                                    explicit_acceptance_of, khisti_alpha_star, kseq_acceptance,
                                    rrs_acceptance, same, spechub_acceptance)
from exactspec.bounds.compare import compare, draft_law_optimum, exact_verification, optimal_report
from exactspec.core.dist import Dist
from exactspec.optimum.draft_laws import DRAFT_LAWS, draft_law
from exactspec.engine.algebraic import Algebraic, exact_root
from exactspec.engine.exact import enumerate_paths
from exactspec.engine.merged import Done, Stepped, enumerate_merged
from exactspec.core.errors import InvalidInput, NotExact, TooLarge
from exactspec.gallery.multi_draft import (GALLERY_MULTI, rrs_on_wor_drafts, rrs_skipping_duplicates,
                                     run_gallery_multi)
from exactspec.methods import METHODS
from exactspec.methods.kseq import KSEQ_STEPS, kseq_method, rho_star, simplest_between
from exactspec.methods.optimal import transport_plan
from exactspec.methods.rrs import RRS_STEPS, rrs
from exactspec.methods.rrs_wor import RRS_WOR_STEPS
from exactspec.methods.spechub import SPECHUB_STEPS
from exactspec.optimum.alpha_star import hub_optimum, law_optimum, optimal_acceptance, optimum
from exactspec.verify import simulate, verify

MULTI = ("rrs", "rrs-wor", "kseq", "spechub", "optimal")


def law(*values, labels=None):
    return Dist([F(v) for v in values], labels)


# -- worked values -----------------------------------------------------------------------

@pytest.mark.parametrize("k, alpha, a, rrs_value", SEED_TABLE)
def test_seed_table(k, alpha, a, rrs_value):
    r = verify("rrs", SEED_P, SEED_Q, k)
    assert r.lossless and r.acceptance == r.explicit_acceptance == rrs_value
    assert rrs_acceptance(SEED_P, SEED_Q, k) == rrs_value
    assert enumerate_merged(RRS_STEPS, SEED_P, SEED_Q, k).acceptance == rrs_value
    opt = verify("optimal", SEED_P, SEED_Q, k)
    assert opt.lossless and opt.acceptance == alpha == optimal_acceptance(SEED_P, SEED_Q, k)


@pytest.mark.parametrize("target, alpha, rrs_value", KHISTI_FIGURE_2)
def test_khisti_figure_2(target, alpha, rrs_value):
    p, q = Dist(list(target)), law(F(1, 3), F(1, 3), F(1, 3))
    if target[0] == F(1, 3):
        assert khisti_alpha_star(target[1]) == alpha
    assert optimal_acceptance(p, q, 2) == alpha
    assert rrs_acceptance(p, q, 2) == rrs_value
    r = verify("rrs", p, q, 2)
    assert r.lossless and r.acceptance == rrs_value
    assert verify("optimal", p, q, 2).acceptance == alpha


def test_kseq_at_rho_2_on_the_seed():
    r = verify(kseq_method(2), SEED_P, SEED_Q, 2)
    assert r.lossless
    assert r.explicit_acceptance == F(279, 400) == kseq_acceptance(SEED_P, SEED_Q, 2, 2)
    assert r.acceptance == F(18243, 24200)
    assert r.to_json()["explicit_acceptance"] == "279/400"


def test_compare_on_the_seed_example():
    out = compare(SEED_P, SEED_Q, 2)
    assert out["alpha_star"] == "21/25"
    assert out["a_star"] == {"a": "9/25", "b": "7/25", "c": "1/5"}
    rows = {row["method"]: row for row in out["methods"]}
    assert rows["rrs"]["acceptance"] == "19/25" and rows["rrs"]["optimum"] == "21/25"
    assert rows["rrs"]["ratio_to_optimal"] == "19/21" and rows["rrs"]["lossless"] is True
    assert rows["optimal"]["acceptance"] == "21/25" and rows["optimal"]["ratio_to_optimal"] == "1"
    assert rows["spechub"]["draft_law"] == "hub" and rows["spechub"]["optimum"] == "1"
    assert rows["rrs-wor"]["optimum"] == "1"
    assert "k = 1" in rows["sps"]["skipped"]
    kseq_row = rows["kseq"]
    assert F(kseq_row["explicit_acceptance"]) < F(kseq_row["acceptance"])
    assert kseq_row["rho"]["rho_star"] == "sqrt(11)/5 + 4/5"
    for row in out["methods"]:
        assert set(row) >= {"method", "draft_law"}
        assert ("skipped" in row) == (row.get("acceptance") is None)
        for key, value in row.items():
            if key.endswith("_float"):
                assert value is None or isinstance(value, float)
            elif key in ("acceptance", "optimum", "ratio_to_optimal"):
                assert value is None or isinstance(value, str)


def test_compare_skips_with_reasons():
    p, q = law(F(1, 2), F(1, 2), 0), law(0, 0, 1)
    rows = {row["method"]: row for row in compare(p, q, 2)["methods"]}
    assert "point mass" in rows["spechub"]["skipped"]
    assert "without replacement" in rows["rrs-wor"]["skipped"]
    assert rows["rrs"]["acceptance"] == "0" and rows["rrs"]["ratio_to_optimal"] is None


def test_optimal_report():
    r = optimal_report(SEED_P, SEED_Q, 2)
    assert r["alpha_star"] == "21/25" and r["a_star"] == {"a": "9/25", "b": "7/25", "c": "1/5"}
    assert r["order"] == ["a", "b", "c"] and r["tight"] == ["a", "b"]
    assert r["checks"] == {"closed_form": True, "brute_force": True, "max_flow": True}


# -- closed forms against enumeration ----------------------------------------------------

CASES = [(SEED_P, SEED_Q, k) for k in (1, 2, 3)] + [
    (law(F(5, 9), F(4, 9)), law(F(1, 3), F(2, 3)), 2),
    (law(F(1, 2), F(1, 2), 0), law(F(1, 3), F(1, 3), F(1, 3)), 3),
    (law(F(1, 10), F(2, 5), F(1, 4), F(1, 4)), law(F(3, 10), F(1, 5), F(1, 2), 0), 2),
    (law(1, 0), law(0, 1), 2),
    (law(F(1, 3), F(2, 3)), law(F(1, 3), F(2, 3)), 3),
]


def test_rrs_product_formula():
    assert same(rrs_acceptance, lambda p, q, k: acceptance_of("rrs", p, q, k), CASES) == []
    assert rrs_acceptance(law(F(5, 9), F(4, 9)), law(F(1, 3), F(2, 3)), 2) == F(23, 27)


def test_kseq_p_acc_is_the_explicit_acceptance():
    def closed(p, q, k):
        return kseq_acceptance(p, q, k, rho_star(p, q, k).rho)

    assert same(closed, lambda p, q, k: explicit_acceptance_of("kseq", p, q, k), CASES) == []
    for rho in (F(3, 2), F(2)):
        assert same(lambda p, q, k: kseq_acceptance(p, q, k, rho),
                    lambda p, q, k: explicit_acceptance_of(kseq_method(rho), p, q, k),
                    [c for c in CASES if c[2] == 2]) == []


def test_spechub_formula():
    cases = [(p, q) for p, q, _ in CASES if max(q.probs) < 1]
    assert same(spechub_acceptance, lambda p, q: acceptance_of("spechub", p, q, 2), cases) == []
    assert same(spechub_acceptance, hub_optimum, cases) == []


# -- K-SEQ's rho* ------------------------------------------------------------------------

def _gap(p, q, k, rho):
    return kseq_acceptance(p, q, k, rho) - rho * sum(min(a / rho, b) for a, b in zip(p.probs,
                                                                                   q.probs))


@pytest.mark.parametrize("p, q, k", CASES)
def test_rho_star_brackets_the_root(p, q, k):
    r = rho_star(p, q, k)
    assert 1 <= r.lower <= r.rho <= k
    assert 0 <= r.gap_bound <= F(1, 10**12)
    assert _gap(p, q, k, r.rho) <= 0
    if not r.is_exact:
        assert _gap(p, q, k, r.lower) > 0
        assert r.lower < r.exact < r.rho and 0 < r.gap_float < 1e-12


@pytest.mark.parametrize("p, q, k, expected", [
    (SEED_P, SEED_P, 3, 1),                                    # p = q
    (law(1, 0), law(0, 1), 2, 1),                              # disjoint supports
    (SEED_P, SEED_Q, 1, 1),                                    # one draft
])
def test_rho_star_is_one(p, q, k, expected):
    r = rho_star(p, q, k)
    assert r.exact == r.rho == expected and r.is_exact


def test_kseq_below_rho_star_is_lossy():
    r = rho_star(SEED_P, SEED_Q, 2)
    below = simplest_between(r.lower - F(1, 100), r.lower)
    assert not verify(kseq_method(below), SEED_P, SEED_Q, 2).lossless
    assert verify(kseq_method(r.rho), SEED_P, SEED_Q, 2).lossless
    assert verify(kseq_method(2), SEED_P, SEED_Q, 2).lossless


@pytest.mark.parametrize("k", [2, 3])
def test_kseq_at_the_exact_algebraic_rho_star(k):
    r = verify(kseq_method("exact"), SEED_P, SEED_Q, k)
    assert r.lossless
    assert isinstance(r.acceptance, Algebraic)
    assert r.acceptance == r.explicit_acceptance
    rho = exact_root(rho_star(SEED_P, SEED_Q, k).exact)
    assert r.acceptance == kseq_acceptance(SEED_P, SEED_Q, k, rho)
    rational = verify("kseq", SEED_P, SEED_Q, k)
    assert 0 < rational.acceptance - rational.explicit_acceptance < F(1, 10**11)
    assert abs(float(r.acceptance) - float(rational.explicit_acceptance)) < 1e-11
    assert r.to_json()["acceptance"] == str(r.acceptance.expr)


def test_algebraic_arithmetic():
    import sympy

    x = sympy.Symbol("x")
    t = exact_root(sympy.Poly(x**3 - 2, x).real_roots()[0])
    assert t ** 3 == 2 and t * t * t - 2 == 0
    assert F(5, 4) < t < F(6, 4) and (t - 1) * (1 / (t - 1)) == 1
    assert (t + 1) ** 2 == t * t + 2 * t + 1 and t != 1 and bool(t - t) is False
    assert exact_root(sympy.Rational(3, 7)) == F(3, 7)
    assert abs(float(t) - 2 ** (1 / 3)) < 1e-15


def test_simplest_between():
    assert simplest_between(F(3), F(7, 2)) == 3
    assert simplest_between(F(1, 3), F(1, 3)) == F(1, 3)
    assert simplest_between(F(2, 7), F(3, 10)) == F(2, 7)


# -- draft laws --------------------------------------------------------------------------

def _drafts_method(name):
    def run(s, p, q, k):
        draft_law(name).draw(s, q, k)
        return p.labels[0]
    return run


@pytest.mark.parametrize("name, k", [("iid", 3), ("wor", 2), ("wor", 3), ("hub", 2)])
def test_draft_laws_match_their_multisets(name, k):
    q = law(F(1, 2), F(1, 4), F(1, 8), F(1, 8), 0)
    e = enumerate_paths(_drafts_method(name), q, q, k, keep_paths=True, max_paths=None)
    totals = {}
    for path in e.path_list:
        key = tuple(sorted(path.drafts, key=q.index))
        totals[key] = totals.get(key, 0) + path.weight
    assert totals == dict(DRAFT_LAWS[name].multisets(q, k))
    assert dict(DRAFT_LAWS[name].multiset_law(q, k).items()) == totals


@pytest.mark.parametrize("name, k", [("iid", 1), ("iid", 3), ("iid", 4), ("wor", 2),
                                     ("hub", 2)])
def test_draw_multiset_has_the_multiset_law(name, k):
    q = law(F(1, 2), 0, F(1, 4), F(1, 8), F(1, 8))

    def run(s, p, q, k):
        s.path_multiset = DRAFT_LAWS[name].draw_multiset(s, q, k)
        return p.labels[0]

    e = enumerate_paths(run, q, q, k, keep_paths=True, max_paths=None)
    totals = {}
    for path in e.path_list:
        key = tuple(sorted(path.drafts, key=q.index))
        totals[key] = totals.get(key, 0) + path.weight
    assert totals == dict(DRAFT_LAWS[name].multisets(q, k))
    assert e.paths == DRAFT_LAWS[name].multiset_count(q, k)


def test_draft_law_refusals():
    with pytest.raises(InvalidInput, match="k=3: the hub draft law"):
        draft_law("hub").check(SEED_Q, 3)
    with pytest.raises(InvalidInput, match="point mass"):
        draft_law("hub").check(law(0, 1), 2)
    with pytest.raises(InvalidInput, match="needs k <= 2"):
        draft_law("wor").check(law(F(1, 2), F(1, 2), 0), 3)
    with pytest.raises(InvalidInput, match="draft_law='tree'"):
        draft_law("tree")


@pytest.mark.parametrize("name, p, q, k, message", [
    ("spechub", SEED_P, SEED_Q, 3, "spechub takes only k = 2"),
    ("spechub", law(F(1, 2), F(1, 2)), law(1, 0), 2, "point mass on 0"),
    ("rrs-wor", law(F(1, 2), F(1, 2), 0), law(F(1, 2), F(1, 2), 0), 3, "exceeds the 2 tokens"),
    ("rrs", SEED_P, SEED_Q, 0, "k=0"),
])
def test_methods_refuse_what_they_cannot_take(name, p, q, k, message):
    with pytest.raises(InvalidInput, match=message):
        verify(name, p, q, k)


def test_optimal_refuses_too_large_with_the_estimate():
    n = 40
    p = Dist([F(1, n)] * n)
    with pytest.raises(TooLarge, match="123,410 draft multisets") as err:
        verify("optimal", p, p, 4)
    assert err.value.estimate == 123410 and err.value.budget == 50_000
    row = {r["method"]: r for r in compare(p, p, 4, methods=["optimal"])["methods"]}
    assert "123,410" in row["optimal"]["skipped"]


def test_kseq_needs_exact_inputs_unless_rho_is_fixed():
    from exactspec.engine.symbolic import prove_symbolic

    with pytest.raises(NotExact, match="kseq at rho"):
        prove_symbolic(METHODS["kseq"].run, 2, 2)
    # at a fixed rho = k >= rho*, K-SEQ is lossless for every p and q: proved symbolically
    # for one draft (for k = 2 the residual's emptiness is a nonlinear sign that the
    # symbolic engine's linear case analysis cannot rule out)
    assert prove_symbolic(kseq_method(1).run, 2, 1).verdict == "proved"


# -- the merged-state interpreter --------------------------------------------------------

@pytest.mark.parametrize("steps, name", [(RRS_STEPS, "rrs"), (RRS_WOR_STEPS, "rrs-wor"),
                                         (KSEQ_STEPS, "kseq"), (SPECHUB_STEPS, "spechub")])
@pytest.mark.parametrize("p, q, k", CASES)
def test_merged_agrees_with_plain(steps, name, p, q, k):
    try:
        METHODS[name].check(p, q, k)
    except InvalidInput:
        return
    plain = verify(name, p, q, k)
    merged = enumerate_merged(steps, p, q, k)
    assert merged.law == plain.law and merged.total == 1
    assert merged.acceptance == plain.acceptance
    assert merged.explicit_acceptance == plain.explicit_acceptance


def test_merged_counts_what_it_does_not_list():
    p = Dist([F(1, 32)] * 16 + [F(1, 16)] * 8)
    q = Dist([F(1, 24)] * 24)
    r = exact_verification("rrs", p, q, 6)
    assert r.lossless and r.acceptance == rrs_acceptance(p, q, 6)
    assert r.enumeration.paths > 10**8 and r.enumeration.states == 7


def test_merged_tracks_p_y_in_x_across_steps():
    # a lossy two-step rule that outputs the first draft's token only after a second step:
    # Y = X_1 always, so P(Y in X) = 1 even though the output happens in a later step
    def start(p, q, k):
        return ("first",)

    def step(s, p, q, k, state):
        if state[0] == "first":
            return ("second", s.draft(q))
        s.draft(q)
        return Done(state[1])

    r = enumerate_merged(Stepped(start, step), SEED_P, SEED_Q, 2)
    assert r.acceptance == 1 and r.explicit_acceptance == 0 and r.law == dict(SEED_Q)


def test_merged_refuses_too_many_states():
    def step(s, p, q, k, state):
        return state + (s.draw(q),) if len(state) < 6 else Done(state[0])

    with pytest.raises(TooLarge, match="distinct states"):
        enumerate_merged(Stepped(lambda p, q, k: (), step), SEED_P, SEED_Q, 1, max_states=100)


# -- negative controls -------------------------------------------------------------------

def test_gallery_multi():
    rows = run_gallery_multi()
    for entry, row in zip(GALLERY_MULTI, rows):
        assert row.verdict == "lossy-logic" and row.correct == "lossless"
        assert row.law == entry.expected_law and row.tv > 0


@pytest.mark.parametrize("bad", [rrs_on_wor_drafts, rrs_skipping_duplicates])
def test_negative_controls_are_refuted_on_a_corpus(bad):
    import random

    from exactspec.claims.base import random_pair

    rng = random.Random(3)
    refuted = 0
    for i in range(60):
        p, q = random_pair(rng, 2 + i % 3, zeros=False)
        refuted += not verify(bad, p, q, 2).lossless
    assert refuted >= 10


# -- properties --------------------------------------------------------------------------

@st.composite
def pairs(draw, max_tokens=4):
    n = draw(st.integers(1, max_tokens))
    weights = st.lists(st.integers(0, 12), min_size=n, max_size=n).filter(any)
    return (Dist(draw(weights), normalize=True, name="p"),
            Dist(draw(weights), normalize=True, name="q"))


# Random pairs of up to a few tokens: the claims rrs-lossless and multi-draft-lossless run
# 400-instance corpora of the same kind in the suite, so these stay small.
PROPS = settings(max_examples=60, deadline=None)


def _runnable(name, p, q, k):
    try:
        METHODS[name].check(p, q, k)
    except InvalidInput:
        return False
    return True


@PROPS
@given(pairs(), st.integers(1, 3))
def test_every_method_is_lossless_and_below_its_optimum(pq, k):
    p, q = pq
    for name in MULTI:
        if not _runnable(name, p, q, k):
            continue
        r = verify(name, p, q, k)
        assert r.lossless, name
        best = draft_law_optimum(p, q, k, METHODS[name].draft_law)
        assert r.acceptance <= best, name
        if k > 1 and METHODS[name].draft_law != "iid":
            assert best == law_optimum(p, q, k, METHODS[name].draft_law)
        if name in ("optimal", "spechub"):
            assert r.acceptance == r.explicit_acceptance == best, name
        if name in ("rrs", "rrs-wor", "spechub"):
            assert r.acceptance == r.explicit_acceptance, name


@PROPS
@given(pairs())
def test_one_draft_methods_coincide_with_sps(pq):
    p, q = pq
    sps = verify("sps", p, q, 1)
    for name in ("rrs", "rrs-wor", "kseq", "optimal"):
        if not _runnable(name, p, q, 1):
            continue
        r = verify(name, p, q, 1)
        assert r.law == sps.law and r.acceptance == sps.acceptance, name
        assert r.explicit_acceptance == sps.explicit_acceptance, name


@PROPS
@given(pairs())
def test_alpha_star_non_decreasing_and_optimal_attains_it(pq):
    p, q = pq
    values = [optimal_acceptance(p, q, k) for k in range(1, 6)]
    assert all(a <= b for a, b in zip(values, values[1:]))
    for k in (1, 2, 3):
        r = verify("optimal", p, q, k)
        assert r.lossless and r.acceptance == values[k - 1]
        plan = transport_plan(p, q, k)
        assert plan.alpha == values[k - 1] and sum(plan.accepted.probs) == plan.alpha


@PROPS
@given(pairs(), st.integers(1, 3))
def test_closed_forms_match_enumeration(pq, k):
    p, q = pq
    assert verify("rrs", p, q, k).acceptance == rrs_acceptance(p, q, k)
    kseq = verify("kseq", p, q, k)
    assert kseq.explicit_acceptance == kseq_acceptance(p, q, k, rho_star(p, q, k).rho)
    assert kseq.acceptance >= kseq.explicit_acceptance
    if _runnable("spechub", p, q, 2):
        assert verify("spechub", p, q, 2).acceptance == spechub_acceptance(p, q)


@PROPS
@given(pairs(), st.integers(1, 3))
def test_merged_equals_plain(pq, k):
    p, q = pq
    for name, steps in (("rrs", RRS_STEPS), ("kseq", KSEQ_STEPS), ("rrs-wor", RRS_WOR_STEPS),
                        ("spechub", SPECHUB_STEPS)):
        if not _runnable(name, p, q, k):
            continue
        plain, merged = verify(name, p, q, k), enumerate_merged(steps, p, q, k)
        assert (merged.law, merged.acceptance, merged.explicit_acceptance) == (
            plain.law, plain.acceptance, plain.explicit_acceptance), name


# -- sampling and symbolic runs of the same code -----------------------------------------

@pytest.mark.parametrize("name, k", [("rrs", 3), ("rrs-wor", 2), ("kseq", 2), ("spechub", 2),
                                     ("optimal", 2)])
def test_the_same_code_samples(name, k):
    sim = simulate(name, SEED_P, SEED_Q, k, n=4000, seed=1)
    assert sim.total_variation_to(SEED_P) < 0.05
    exact = verify(name, SEED_P, SEED_Q, k)
    assert abs(sim.acceptance - float(exact.acceptance)) < 0.05


def test_rrs_symbolic_two_tokens():
    from exactspec.engine.symbolic import prove_symbolic

    proof = prove_symbolic(rrs, 2, 2, expected_acceptance=rrs_acceptance)
    assert proof.verdict == "proved"


def test_rrs_wor_symbolic_two_tokens():
    from exactspec.engine.symbolic import prove_symbolic
    from exactspec.methods.rrs_wor import rrs_wor

    assert prove_symbolic(rrs_wor, 2, 2).verdict == "proved"
