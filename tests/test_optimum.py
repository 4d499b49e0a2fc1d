"""The optimum alpha*, a* and tight prefixes: closed form vs brute force vs exact max flow.

Every expected value is a Fraction.  The property tests draw rational distributions from
integer weights (zeros allowed in both p and q) over at most 5 tokens and k <= 4.
"""

from fractions import Fraction as F
from itertools import permutations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from networkx.algorithms import flow

from exactspec.core.dist import Dist, overlap
from exactspec.core.errors import InvalidInput, NotExact, TooLarge
from exactspec.optimum.alpha_star import (
    MAX_SUBSET_TOKENS,
    Optimum,
    accepted_law,
    alpha_star_brute_force,
    alpha_star_max_flow,
    check_optimum,
    draft_multiset_count,
    draft_multisets,
    g,
    hub_optimum,
    hub_token,
    infeasible_set,
    is_feasible,
    law_optimum,
    optimal_acceptance,
    optimal_order,
    optimum,
)

SEED_P = Dist([F(1, 2), F(3, 10), F(1, 5)], "abc")
SEED_Q = Dist([F(1, 5), F(1, 5), F(3, 5)], "abc")


def law(*values, labels=None):
    return Dist([F(v) for v in values], labels)


def subsets(labels):
    labels = list(labels)
    for mask in range(1 << len(labels)):
        yield [t for i, t in enumerate(labels) if mask >> i & 1]


def mass(d, subset):
    return sum((d[t] for t in subset), F(0))


# -- worked values -----------------------------------------------------------------------

SEED_TABLE = [
    (1, F(3, 5), (F(1, 5), F(1, 5), F(1, 5)), ("a", "b")),
    (2, F(21, 25), (F(9, 25), F(7, 25), F(1, 5)), ("a", "b")),
    (3, F(123, 125), (F(61, 125), F(37, 125), F(1, 5)), ("a", "b")),
    (4, F(1), (F(1, 2), F(3, 10), F(1, 5)), ("c",)),
]


@pytest.mark.parametrize("k, alpha, a, tight", SEED_TABLE)
def test_seed_example(k, alpha, a, tight):
    opt = optimum(SEED_P, SEED_Q, k)
    assert isinstance(opt, Optimum) and opt.k == k
    assert opt.alpha_star == alpha and isinstance(opt.alpha_star, F)
    assert opt.a_star == Dist(list(a), "abc", check=False)
    assert all(isinstance(v, F) for v in opt.a_star.probs)
    assert opt.order == ("a", "b", "c")
    assert opt.tight == tight
    assert optimal_acceptance(SEED_P, SEED_Q, k) == alpha
    assert accepted_law(SEED_P, SEED_Q, k) == opt.a_star
    assert alpha_star_brute_force(SEED_P, SEED_Q, k) == alpha
    assert alpha_star_max_flow(SEED_P, SEED_Q, k) == alpha
    assert law_optimum(SEED_P, SEED_Q, k, "iid") == alpha
    assert check_optimum(SEED_P, SEED_Q, k) == {
        "closed_form": True, "brute_force": True, "max_flow": True}


def test_seed_example_to_json():
    assert optimum(SEED_P, SEED_Q, 2).to_json() == {
        "k": 2, "alpha_star": "21/25", "a_star": {"a": "9/25", "b": "7/25", "c": "1/5"},
        "order": ["a", "b", "c"], "tight": ["a", "b"]}


def test_prefixes_of_the_wrong_order_give_a_wrong_answer():
    # docs/math.md#the-optimum: B must be a prefix of the q/p-ascending order; the descending order
    # would give 1 instead of 21/25 on the seed example at k = 2.
    descending = tuple(reversed(optimal_order(SEED_P, SEED_Q)))
    wrong = min(g(2, mass(SEED_Q, descending[:j])) + 1 - mass(SEED_P, descending[:j])
                for j in range(4))
    assert wrong == 1 != optimal_acceptance(SEED_P, SEED_Q, 2)


def test_another_optimal_law():
    p = law(F(4, 11), F(2, 11), F(9, 22), F(1, 22))
    q = law(F(1, 4), F(2, 7), F(3, 14), F(1, 4))
    opt = optimum(p, q, 2)
    assert opt.alpha_star == F(8109, 8624)
    assert alpha_star_brute_force(p, q, 2) == alpha_star_max_flow(p, q, 2) == F(8109, 8624)
    other = Dist([F(4, 11), F(2, 11), F(3013, 8624), F(1, 22)], check=False)
    assert sum(other.probs) == opt.alpha_star
    assert all(other[t] <= p[t] for t in p)
    assert is_feasible(other, q, 2) and is_feasible(opt.a_star, q, 2)
    assert other != opt.a_star


@pytest.mark.parametrize("x, alpha", [
    (F(0), F(8, 9)), (F(1, 12), F(35, 36)), (F(1, 6), F(1)), (F(1, 4), F(1))])
def test_khisti_figure_2(x, alpha):
    p = law(F(1, 3), x, F(2, 3) - x)
    q = law(F(1, 3), F(1, 3), F(1, 3))
    assert alpha == 1 - max(F(0), F(1, 9) - x, x - F(5, 9))
    assert optimal_acceptance(p, q, 2) == alpha
    assert alpha_star_brute_force(p, q, 2) == alpha
    assert alpha_star_max_flow(p, q, 2) == alpha


def test_khisti_second_target():
    p, q = law(F(1, 6), 0, F(5, 6)), law(F(1, 3), F(1, 3), F(1, 3))
    assert optimal_acceptance(p, q, 2) == F(13, 18)
    assert alpha_star_brute_force(p, q, 2) == alpha_star_max_flow(p, q, 2) == F(13, 18)


def test_g():
    assert g(2, F(1, 5)) == F(9, 25)
    assert g(1, F(2, 7)) == F(2, 7)
    assert g(3, 0) == 0 and g(3, 1) == 1
    assert g(2, "0.2") == F(9, 25)


# -- orders, edge cases, tight prefixes --------------------------------------------------

def test_order_puts_p_zero_last_and_breaks_ties_by_index():
    p = law(0, F(1, 4), 0, F(1, 4), F(1, 2))
    q = law(F(1, 5), F(1, 5), 0, F(1, 5), F(2, 5))
    # ratios q/p: 1 -> 4/5, 3 -> 4/5, 4 -> 4/5 (ties by index); 0 and 2 have p = 0
    assert optimal_order(p, q) == (1, 3, 4, 0, 2)
    p = law(F(1, 2), F(1, 2), 0)
    q = law(0, F(1, 2), F(1, 2))
    assert optimal_order(p, q) == (0, 1, 2)


@pytest.mark.parametrize("k", [1, 2, 5])
def test_p_equals_q(k):
    p = law(F(1, 6), F(1, 3), F(1, 2))
    opt = optimum(p, p, k)
    assert opt.alpha_star == 1 and opt.a_star == p
    assert opt.tight[-1] == opt.order[-1]


@pytest.mark.parametrize("k", [1, 3])
def test_disjoint_supports(k):
    p, q = law(F(1, 2), F(1, 2), 0), law(0, 0, 1)
    opt = optimum(p, q, k)
    assert opt.alpha_star == 0 and all(v == 0 for v in opt.a_star.probs)
    # q = 0 on the first two tokens: the prefixes of q-mass 0 are tight vacuously
    assert opt.order == (0, 1, 2) and opt.tight == (0, 1)
    assert alpha_star_brute_force(p, q, k) == alpha_star_max_flow(p, q, k) == 0


def test_single_token():
    p = law(1, labels=["only"])
    opt = optimum(p, p, 3)
    assert opt.alpha_star == 1 and opt.tight == ("only",)
    assert check_optimum(p, p, 3) == {"closed_form": True, "brute_force": True,
                                      "max_flow": True}


def test_point_mass_draft():
    p, q = law(F(1, 3), F(2, 3)), law(0, 1)
    assert optimal_acceptance(p, q, 4) == F(2, 3)
    assert alpha_star_max_flow(p, q, 4) == F(2, 3)


def test_null_token_after_a_tight_prefix_is_tight():
    p, q = law(F(1, 2), F(1, 2), 0), law(F(1, 2), F(1, 2), 0)
    # prefix {0}: F_1 = 1/2 < g_2(1/2) = 3/4; prefix {0, 1} is all of q, and so is {0, 1, 2}
    assert optimum(p, q, 2).tight == (1, 2)


def test_alpha_star_one_needs_every_drafted_token_to_have_target_mass():
    p, q = law(F(1, 2), F(1, 2), 0), law(F(1, 3), F(1, 3), F(1, 3))
    for k in range(1, 8):
        opt = optimum(p, q, k)
        assert opt.alpha_star == 1 - F(1, 3) ** k
        assert opt.order[-1] not in opt.tight


def test_labels_other_than_indices():
    p = Dist([F(1, 2), F(3, 10), F(1, 5)], ["x", ("t", 1), 7])
    q = Dist([F(1, 5), F(1, 5), F(3, 5)], ["x", ("t", 1), 7])
    assert optimal_order(p, q) == ("x", ("t", 1), 7)
    assert alpha_star_max_flow(p, q, 2) == F(21, 25)
    assert list(draft_multisets(q, 1)) == [(("x",), F(1, 5)), ((("t", 1),), F(1, 5)),
                                           ((7,), F(3, 5))]


def test_inputs_as_strings_and_lists():
    assert optimal_acceptance("1/2,3/10,1/5", "0.2,0.2,0.6", 2) == F(21, 25)
    assert optimal_acceptance([F(1, 2), F(1, 2)], [1, 0], 1) == F(1, 2)


# -- feasibility -------------------------------------------------------------------------

def test_infeasible_set_names_the_violated_set():
    a = Dist([F(9, 25) + F(1, 100), F(7, 25) - F(1, 100), F(1, 5)], "abc", check=False)
    assert infeasible_set(a, SEED_Q, 2) == ("a",)
    assert not is_feasible(a, SEED_Q, 2)
    assert infeasible_set(accepted_law(SEED_P, SEED_Q, 2), SEED_Q, 2) is None


# -- draft multisets ---------------------------------------------------------------------

def test_iid_multisets():
    q = law(F(1, 2), F(1, 3), F(1, 6), 0)
    sets = dict(draft_multisets(q, 3))
    assert len(sets) == draft_multiset_count(q, 3) == 10
    assert sum(sets.values()) == 1
    assert sets[(0, 0, 0)] == F(1, 8)
    assert sets[(0, 1, 2)] == 6 * F(1, 2) * F(1, 3) * F(1, 6)
    assert sets[(1, 1, 2)] == 3 * F(1, 3) ** 2 * F(1, 6)
    assert all(3 not in ms for ms in sets)


def _ordered_wor(q, k):
    """Reference: every ordered tuple of distinct tokens with its sequential probability."""
    support = [t for t in q if q[t] != 0]
    totals = {}
    for tup in permutations(support, k):
        prob, left = F(1), F(1)
        for t in tup:
            prob *= q[t] / left
            left -= q[t]
        key = tuple(sorted(tup, key=q.index))
        totals[key] = totals.get(key, F(0)) + prob
    return totals


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_wor_sets_match_ordered_tuples(k):
    q = law(F(1, 10), F(2, 5), 0, F(1, 4), F(1, 4))
    sets = dict(draft_multisets(q, k, "wor"))
    assert sets == _ordered_wor(q, k)
    assert sum(sets.values()) == 1 and len(sets) == draft_multiset_count(q, k, "wor")


def test_hub_pairs():
    q = law(F(1, 4), F(3, 8), F(3, 8), 0)
    assert hub_token(q) == 1
    pairs = dict(draft_multisets(q, 2, "hub"))
    # reference: X_1 ~ q; X_2 = hub if X_1 != hub, else X_2 ~ q restricted to V \ {hub}
    ref = {}
    for x1 in q:
        if q[x1] == 0:
            continue
        if x1 != 1:
            seconds = {1: F(1)}
        else:
            seconds = {t: q[t] / (1 - q[1]) for t in q if t != 1 and q[t] != 0}
        for x2, w in seconds.items():
            key = tuple(sorted((x1, x2)))
            ref[key] = ref.get(key, F(0)) + q[x1] * w
    assert pairs == ref == {(0, 1): F(2, 5), (1, 2): F(3, 5)}


@pytest.mark.parametrize("bad, message", [
    (dict(k=0), "k=0: need at least one draft"),
    (dict(k=True), "must be an integer"),
    (dict(k=F(3, 2)), "must be an integer"),
    (dict(k=-1), "need at least one draft"),
    (dict(p=law(F(1, 2), F(1, 2))), "q has 3 entries but p has 2"),
    (dict(q=Dist([F(1, 5), F(1, 5), F(3, 5)], "xyz")), "different labels"),
    (dict(q=Dist([F(1, 5), F(1, 5), F(1, 5)], "abc", check=False)), "q sums to 3/5, not 1"),
    (dict(p=Dist([F(1, 2), F(3, 5), F(-1, 10)], "abc", check=False)), "is negative"),
    (dict(p="1/2,1/2,1/2"), "sums to 3/2"),
])
def test_invalid_inputs(bad, message):
    args = dict(p=SEED_P, q=SEED_Q, k=2) | bad
    for func in (optimum, alpha_star_brute_force, alpha_star_max_flow, law_optimum,
                 check_optimum):
        with pytest.raises(InvalidInput, match=message):
            func(args["p"], args["q"], args["k"])


def test_symbolic_values_are_refused():
    import sympy

    x = sympy.Symbol("x")
    p = Dist([x, 1 - x], check=False)
    with pytest.raises(NotExact, match="exact rational"):
        optimum(p, law(F(1, 2), F(1, 2)), 2)


@pytest.mark.parametrize("q, k, draft_law, message", [
    (SEED_Q, 2, "greedy", "draft_law='greedy'"),
    (law(F(1, 2), F(1, 2), 0), 3, "wor", "k=3: drafting without replacement needs k <= 2"),
    (SEED_Q, 3, "hub", "k=3: the hub draft law has exactly 2 drafts"),
    (law(0, 1, 0), 2, "hub", "q is a point mass on 1"),
])
def test_invalid_draft_laws(q, k, draft_law, message):
    with pytest.raises(InvalidInput, match=message):
        draft_multisets(q, k, draft_law)
    p = Dist([F(1, 3)] * 3)
    with pytest.raises(InvalidInput, match=message):
        alpha_star_max_flow(p, Dist(q.probs), k, draft_law)
    with pytest.raises(InvalidInput, match=message):
        law_optimum(p, Dist(q.probs), k, draft_law)


def test_hub_optimum_refuses_a_point_mass():
    with pytest.raises(InvalidInput, match="point mass"):
        hub_optimum(law(F(1, 2), F(1, 2)), law(1, 0))


def test_too_large():
    n = MAX_SUBSET_TOKENS + 1
    p = Dist([F(1, n)] * n)
    with pytest.raises(TooLarge, match=r"2\^21") as err:
        alpha_star_brute_force(p, p, 2)
    assert err.value.estimate == 2 ** n and err.value.budget == 2 ** MAX_SUBSET_TOKENS
    with pytest.raises(TooLarge):
        is_feasible(p, p, 2)
    with pytest.raises(TooLarge):
        law_optimum(p, p, 2, "wor")
    with pytest.raises(TooLarge, match="1771 draft multisets.*budget of 1000") as err:
        alpha_star_max_flow(p, p, 3, budget=1000)
    assert err.value.estimate == 1771 and err.value.budget == 1000
    # the multisets themselves are enumerated lazily, the refusal is immediate
    with pytest.raises(TooLarge):
        draft_multisets(Dist([F(1, 60)] * 60), 6)
    # check_optimum skips what is too large instead of failing
    assert check_optimum(p, p, 2) == {"closed_form": True, "brute_force": None,
                                      "max_flow": True}
    big = Dist([F(1, 60)] * 60)
    assert check_optimum(big, big, 4) == {"closed_form": True, "brute_force": None,
                                          "max_flow": None}


@pytest.mark.parametrize("flow_func", [
    flow.edmonds_karp, flow.shortest_augmenting_path, flow.preflow_push, flow.dinitz,
    flow.boykov_kolmogorov])
@pytest.mark.parametrize("draft_law", ["iid", "wor", "hub"])
def test_every_networkx_flow_algorithm_is_exact(flow_func, draft_law):
    p = law(F(4, 11), F(2, 11), F(9, 22), F(1, 22))
    q = law(F(1, 4), F(2, 7), F(3, 14), F(1, 4))
    value = alpha_star_max_flow(p, q, 2, draft_law, flow_func=flow_func)
    assert isinstance(value, F)
    assert value == law_optimum(p, q, 2, draft_law)


# -- properties --------------------------------------------------------------------------

@st.composite
def pairs(draw, max_tokens=5):
    n = draw(st.integers(1, max_tokens))
    weights = st.lists(st.integers(0, 20), min_size=n, max_size=n).filter(any)
    p = Dist(draw(weights), normalize=True, name="p")
    q = Dist(draw(weights), normalize=True, name="q")
    return p, q


# The claims alpha-star-three-ways (1,200 instances) and a-star-feasible-optimal (800) run
# the same comparisons on corpora in the suite, so these stay small.
FAST = settings(max_examples=100, deadline=None)


@FAST
@given(pairs(), st.integers(1, 4))
def test_three_ways_agree(pq, k):
    p, q = pq
    opt = optimum(p, q, k)
    assert opt.alpha_star == alpha_star_brute_force(p, q, k) == alpha_star_max_flow(p, q, k)
    a = opt.a_star
    assert all(isinstance(v, F) and 0 <= v <= p[t] for t, v in a.items())
    assert sum(a.probs) == opt.alpha_star
    assert is_feasible(a, q, k)


@FAST
@given(pairs(), st.integers(1, 4))
def test_tight_prefixes(pq, k):
    p, q = pq
    opt = optimum(p, q, k)
    order = opt.order
    assert sorted(order, key=p.index) == list(p.labels)
    for j in range(1, len(order) + 1):
        prefix = order[:j]
        is_tight = mass(opt.a_star, prefix) == g(k, mass(q, prefix))
        assert is_tight == (order[j - 1] in opt.tight)
        assert mass(opt.a_star, prefix) <= g(k, mass(q, prefix))
    assert (order[-1] in opt.tight) == (opt.alpha_star == 1)


@FAST
@given(pairs())
def test_monotone_in_k_and_one_draft_is_the_overlap(pq):
    p, q = pq
    values = [optimal_acceptance(p, q, k) for k in range(1, 6)]
    assert values[0] == overlap(p, q)
    assert all(x <= y for x, y in zip(values, values[1:]))


@FAST
@given(pairs(), st.integers(1, 4))
def test_acceptance_one_iff_every_set_gets_enough_target_mass(pq, k):
    # Khisti et al. (k = 2), in general: alpha* = 1 iff p(S) >= q(S)^k for every S
    p, q = pq
    condition = all(mass(p, s) >= mass(q, s) ** k for s in subsets(p.labels))
    assert (optimal_acceptance(p, q, k) == 1) == condition


@settings(max_examples=150, deadline=None)
@given(pairs(), st.integers(1, 4), st.sampled_from(["iid", "wor", "hub"]))
def test_draft_laws(pq, k, draft_law):
    p, q = pq
    m = len(q.support)
    if draft_law == "hub":
        k = 2
        if m < 2:
            return
    if draft_law == "wor" and k > m:
        return
    sets = list(draft_multisets(q, k, draft_law))
    assert sum(w for _, w in sets) == 1
    assert len(sets) == len({ms for ms, _ in sets}) == draft_multiset_count(q, k, draft_law)
    best = law_optimum(p, q, k, draft_law)
    assert best == alpha_star_max_flow(p, q, k, draft_law)
    if draft_law == "iid":
        assert best == optimal_acceptance(p, q, k)
    elif draft_law == "hub":
        assert best == hub_optimum(p, q)
    else:
        # Conjecture (docs/methods.md#optimum-per-draft-law): a minimising cut H is a prefix of the q/p-descending
        # order, the reverse of optimal_order.
        descending = tuple(reversed(optimal_order(p, q)))
        cuts = []
        for j in range(len(descending) + 1):
            h = set(descending[:j])
            inside = sum((w for ms, w in sets if set(ms) <= h), F(0))
            cuts.append(mass(p, h) - inside)
        assert best == 1 + min(cuts)
        # dropping the replacement can only help: wor is at least as good as iid
        assert best >= optimal_acceptance(p, q, k)


def _cross_multiplied_order(pp, qq):
    """Token indices by ``q/p`` compared by cross-multiplication, ties by index, ``p = 0``
    last: the order the closed form sorts by."""
    from functools import cmp_to_key

    def compare(s, t):
        if (pp[s] == 0) != (pp[t] == 0):
            return 1 if pp[s] == 0 else -1
        if pp[s] != 0 and qq[s] * pp[t] != qq[t] * pp[s]:
            return -1 if qq[s] * pp[t] < qq[t] * pp[s] else 1
        return (s > t) - (s < t)

    return sorted(range(len(pp)), key=cmp_to_key(compare))


def test_order_is_exact_beyond_float_resolution_and_matches_cross_multiplication():
    """The sort by rounded ratios then exact ties equals the cross-multiplied comparison."""
    import random

    from exactspec.optimum.closed_form import _order_indices

    eps = F(1, 10**30)
    p = Dist([F(1, 3) + eps, F(1, 3), F(1, 3) - eps])
    assert _order_indices(p, Dist([F(1, 3)] * 3)) == [0, 1, 2]
    rng = random.Random(1)
    for _ in range(200):
        n = rng.randint(1, 8)
        wp = [rng.choice([0, 1, 2, 3, 6]) for _ in range(n)]
        wq = [rng.choice([0, 1, 2, 3, 6]) for _ in range(n)]
        if not sum(wp) or not sum(wq):
            continue
        p = Dist([F(w, sum(wp)) for w in wp])
        q = Dist([F(w, sum(wq)) for w in wq])
        assert _order_indices(p, q) == _cross_multiplied_order(p.probs, q.probs)


def test_the_max_flow_cross_check_is_sized_to_its_budget():
    """Above CHECK_FLOW_MULTISETS draft multisets the flow is skipped with its reason; the
    closed form and the brute force still run and alpha* is the same."""
    from exactspec.bounds.compare import optimal_report
    from exactspec.optimum.alpha_star import (CHECK_FLOW_MULTISETS, draft_multiset_count,
                                              optimum_check_skips)

    p = Dist([F(w, 66) for w in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)])
    q = Dist([F(w, 66) for w in (11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)])
    assert draft_multiset_count(q, 8) > CHECK_FLOW_MULTISETS
    report = optimal_report(p, q, 8)
    assert report["checks"] == {"closed_form": True, "brute_force": True, "max_flow": None}
    assert "43758 draft multisets" in report["checks_skipped"]["max_flow"]
    assert report["alpha_star"] == str(alpha_star_brute_force(p, q, 8))
    small = optimal_report(p, q, 2)
    assert small["checks"]["max_flow"] is True and small["checks_skipped"] == {}
    assert optimum_check_skips(p, q, 2) == {}


def test_the_subset_refusal_at_full_vocabulary_writes_no_huge_number():
    """The brute force's refusal at 152,064 tokens names ``2^152,064`` without its 45,776
    digits (whose text Python refuses past 4,300 digits in a library call)."""
    from exactspec.core.errors import TooLarge
    from exactspec.optimum.subsets import refuse_subsets

    with pytest.raises(TooLarge, match=r"2\^152,064 subsets of 152,064 tokens"):
        refuse_subsets(152_064, "the brute-force optimum")


def test_order_of_integer_rows_at_the_edge_of_float_resolution():
    """On integer rows whose products stay within 2^51, one sort of the rounded ratios is the
    exact order (two distinct ratios never round to one float); beyond it, and with zeros of
    ``p``, runs of equal floats are sorted exactly.  Both against cross-multiplication."""
    import random

    from exactspec.optimum.closed_form import _order_of_integers

    # entries near 2^25, products just under 2^51: the one sort of rounded ratios decides
    b = (1 << 25) + 1
    rows = [([b, b - 1, b], [b - 2, b - 2, b - 2]), ([b - 1, b], [b - 2, b - 2])]
    # n/(n+1) > (n-1)/n, 2^-58 apart: one float, so past 2^51 only the exact sort orders them
    n = 1 << 29
    rows += [([n + 1, n], [n, n - 1]), ([n + 1, n, 7], [n, n - 1, 0])]
    # the same ratios scaled past 2^51 (the exact sort inside equal floats decides)
    big = 1 << 40
    rows += [([b * big, (b - 1) * big, 3], [(b - 2) * big, (b - 2) * big, 0])]
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(1, 7)
        scale = rng.choice([1, 1 << 20, 1 << 30, 1 << 60])
        pp = [rng.choice([0, 1, 2, 3, 5]) * scale + rng.choice([0, 1]) for _ in range(n)]
        qq = [rng.choice([0, 1, 2, 3, 5]) * scale + rng.choice([0, 1]) for _ in range(n)]
        rows.append((pp, qq))
    for pp, qq in rows:
        if not any(pp):
            continue
        assert _order_of_integers(pp, qq) == _cross_multiplied_order(pp, qq), (pp, qq)


def test_the_closed_form_check_on_integer_rows_finds_each_violation():
    """On rows long enough for integer rows (64 tokens and more), the check of ``0 <= a* <=
    p`` and ``sum a* = alpha*`` by scaled integer comparisons agrees with the same check in
    ``Fraction``s: it holds for the optimum and fails for an entry over ``p``, a negative
    entry and a wrong sum, on rows whose denominators differ (both sides scaled)."""
    from exactspec.core.dist import integer_row_of
    from exactspec.optimum.checks import closed_form_holds

    n = 80
    p = Dist([F(i + 1, n * (n + 1) // 2) for i in range(n)])
    q = Dist([F(n - i, n * (n + 1) // 2) for i in range(n)])
    opt = optimum(p, q, 3)
    assert integer_row_of(opt.a_star) is not None and integer_row_of(p) is not None
    assert closed_form_holds(opt.a_star, p, opt.alpha_star) is True

    def law(values):
        d = Dist(values, check=False)
        assert integer_row_of(d) is not None
        return d

    def by_fractions(a, total):
        return all(0 <= a[t] <= p[t] for t in p.labels) and sum(a.probs) == total

    a = list(opt.a_star.probs)
    over = a[:]                                   # one entry past p by the smallest step
    over[5] = p.probs[5] + F(1, 7 * 10**9)
    over[6] -= F(1, 7 * 10**9)
    negative = a[:]
    negative[0], negative[1] = F(-1, 3 * 10**9), negative[1] + F(1, 3 * 10**9)
    for values in (over, negative):
        d = law(values)
        assert closed_form_holds(d, p, opt.alpha_star) is False
        assert by_fractions(d, opt.alpha_star) is False
    assert closed_form_holds(law(a), p, opt.alpha_star + F(1, 10**30)) is False


def test_a_table_written_by_columns_is_the_table_written_by_rows():
    """``aligned_columns`` (the optimal command's 152,064-row table) writes what
    ``aligned_table`` writes from the same cells: padding, trailing spaces stripped, an
    empty table as its header."""
    from exactspec.cli.output import aligned_columns, aligned_table

    rows = [["a", "1/2", 3, ""], ["bbbb", "1", 10, "tight"], ["c", "12/25", 0, ""]]
    header = ["token", "a*", "n", "prefix"]
    text = aligned_table(rows, header)
    assert text.splitlines() == ["token  a*     n   prefix", "a      1/2    3",
                                 "bbbb   1      10  tight", "c      12/25  0"]
    assert aligned_columns(list(zip(*rows)), header) == text
    assert aligned_table([], header) == "token  a*  n  prefix"
