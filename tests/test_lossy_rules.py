"""Rules that are lossy by design: typical acceptance (with exactly decided irrational
thresholds), greedy multi-draft verification, top-k and top-p truncated verification; their
exact bias and acceptance, each two ways, and their own group in ``compare``."""

import json
import math
import random
from fractions import Fraction

import mpmath
import pytest

from exactspec import Dist, verify
from exactspec.bounds.closed_forms import rrs_acceptance
from exactspec.bounds.compare import compare
from exactspec.cli import main
from exactspec.core.dist import total_variation
from exactspec.core.errors import Undecided
from exactspec.core.random_dists import random_dist
from exactspec.methods import METHODS
from exactspec.methods.truncated import top_k, top_p, truncate_top_k, truncate_top_p
from exactspec.methods.typical import EXACT_POWER_LIMIT, MEDUSA_DELTA, MEDUSA_EPS, \
    accepted_tokens, exceeds_entropy_threshold, typical_acceptance, typical_law

P = Dist.parse("1/2,3/10,1/5", labels="abc")
Q = Dist.parse("1/5,1/5,3/5", labels="abc")
F = Fraction


def test_registered_as_lossy_by_design():
    for name in ("typical", "greedy", "top-k", "top-p"):
        assert METHODS[name].claimed_lossless is False
    assert (MEDUSA_EPS, MEDUSA_DELTA) == (F(9, 100), F(3, 10))


# -- typical acceptance on the seed example --------------------------------------------------

def test_typical_seed_medusa_defaults():
    # eps = 9/100, delta = 3/10: the threshold is min(9/100, 0.107..) = 9/100, every token passes
    assert accepted_tokens(P) == ("a", "b", "c")
    one = verify("typical", P, Q, 1)
    assert one.law_dist() == Q and one.bias == F(2, 5) and one.acceptance == 1
    two = verify("typical", P, Q, 2)
    assert two.law_dist() == Dist([F(9, 25), F(7, 25), F(9, 25)], "abc")
    assert two.bias == F(4, 25) and two.acceptance == 1


def test_typical_seed_where_it_bites():
    # eps = 3/10, delta = 3/5: threshold = 3/5 exp(-H(p)) ~ 0.2142, c (1/5) fails, b (3/10) passes
    eps, delta = F(3, 10), F(3, 5)
    assert accepted_tokens(P, eps, delta) == ("a", "b")
    rule = typical_acceptance(eps, delta)
    one = verify(rule, P, Q, 1)
    assert one.law_dist() == Dist([F(4, 5), F(1, 5), 0], "abc")
    assert one.bias == F(3, 10) and one.acceptance == F(2, 5)
    two = verify(rule, P, Q, 2)
    assert two.law_dist() == Dist([F(18, 25), F(7, 25), 0], "abc")
    assert two.bias == F(11, 50) and two.acceptance == F(16, 25)
    # the threshold, by floats (tolerance 1e-12): 0.6 * exp(-H) lies between 1/5 and 3/10
    h = -sum(float(v) * math.log(float(v)) for v in P.probs)
    assert 0.2 + 1e-12 < 0.6 * math.exp(-h) < 0.3 - 1e-12


def test_typical_engine_equals_closed_form_on_random_instances():
    rng = random.Random(17)
    settings = [(MEDUSA_EPS, MEDUSA_DELTA), (F(3, 10), F(3, 5)), (F(1, 4), F(1)), (F(1), F(1, 2))]
    for _ in range(40):
        n = rng.randint(2, 4)
        p = random_dist(rng, n, denominator=6)
        q = random_dist(rng, n, denominator=6)
        k = rng.randint(1, 3)
        eps, delta = settings[rng.randrange(len(settings))]
        r = verify(typical_acceptance(eps, delta), p, q, k)
        law = typical_law(p, q, k, eps, delta)
        assert r.law_dist() == law
        assert r.bias == total_variation(law, p)


def _exact_power_decision(value, p, delta):
    probs = [F(v) for v in p.probs]
    d = math.lcm(*(v.denominator for v in probs))
    right = math.prod((v ** int(v * d) for v in probs if v), start=F(1))
    return (F(value) / delta) ** d > right


def test_threshold_intervals_agree_with_exact_powers_and_floats():
    rng = random.Random(5)
    for _ in range(200):
        n = rng.randint(2, 5)
        p = random_dist(rng, n, denominator=rng.choice([4, 6, 10]))
        delta = F(rng.randint(1, 10), 10)
        value = F(rng.randint(1, 20), 20)
        decided = exceeds_entropy_threshold(value, p, delta)
        assert decided == _exact_power_decision(value, p, delta)
        with mpmath.workdps(60):
            e = mpmath.exp(sum(mpmath.mpf(v.numerator) / v.denominator
                               * mpmath.log(mpmath.mpf(v.numerator) / v.denominator)
                               for v in map(F, p.probs) if v))
            gap = mpmath.mpf(value.numerator) / value.denominator \
                - mpmath.mpf(delta.numerator) / delta.denominator * e
        if abs(gap) > mpmath.mpf(10) ** -40:          # not a tie: floats agree
            assert decided == (gap > 0)


def test_exact_ties():
    half = Dist.parse("1/2,1/2")
    assert exceeds_entropy_threshold(F(1, 2), half, 1) is False     # exp(-H) = 1/2 exactly
    third = Dist.parse("1/3,1/3,1/3")
    assert exceeds_entropy_threshold(F(1, 6), third, F(1, 2)) is False
    assert exceeds_entropy_threshold(F(1, 6) + F(1, 10**30), third, F(1, 2)) is True
    # a tie at eps is decided by rationals: p(x) > eps is strict
    assert accepted_tokens(Dist.parse("1/2,1/4,1/4"), F(1, 4), 1) == (0,)   # thr = 1/4
    assert accepted_tokens(Dist.parse("1/2,1/4,1/4"), F(1, 4), 0) == (0, 1, 2)  # thr = 0


def test_tie_beyond_exact_powers_is_undecided(monkeypatch):
    import exactspec.methods.typical as typical

    assert EXACT_POWER_LIMIT >= 1000
    monkeypatch.setattr(typical, "EXACT_POWER_LIMIT", 2)
    third = Dist.parse("1/3,1/3,1/3")          # exp(-H) = 1/3: a tie, denominator 3 > 2
    with pytest.raises(Undecided, match="not separated"):
        exceeds_entropy_threshold(F(1, 3), third, 1)
    assert exceeds_entropy_threshold(F(1, 2), third, 1) is True   # separated: no powers needed


# -- greedy, top-k, top-p --------------------------------------------------------------------

def test_greedy_closed_forms():
    rng = random.Random(3)
    for _ in range(30):
        n = rng.randint(2, 4)
        p, q = random_dist(rng, n), random_dist(rng, n)
        k = rng.randint(1, 3)
        r = verify("greedy", p, q, k)
        g = max(p.labels, key=lambda t: (p[t], -p.labels.index(t)))
        assert r.law_dist() == Dist([F(int(t == g)) for t in p.labels], p.labels)
        assert r.bias == 1 - p[g]
        assert r.acceptance == 1 - (1 - q[g]) ** k
    top1 = verify("top1", P, Q, 1)
    assert verify("greedy", P, Q, 1).law_dist() == top1.law_dist()


def test_truncated_closed_forms():
    rng = random.Random(4)
    for _ in range(30):
        n = rng.randint(2, 5)
        p, q = random_dist(rng, n), random_dist(rng, n)
        k = rng.randint(1, 3)
        for method, cut in ((top_k(2), truncate_top_k(p, 2)),
                            (top_p(F(4, 5)), truncate_top_p(p, F(4, 5)))):
            r = verify(method, p, q, k)
            assert r.law_dist() == cut
            kept = sum((p[t] for t in p.labels if cut[t]), F(0))
            assert r.bias == 1 - kept == total_variation(cut, p)
            assert r.acceptance == rrs_acceptance(cut, q, k)


def test_truncation_rules():
    p = Dist.parse("1/4,1/4,1/4,1/4")
    assert truncate_top_k(p, 2) == Dist.parse("1/2,1/2,0,0")       # ties by token order
    assert truncate_top_p(p, F(1, 2)) == Dist.parse("1/2,1/2,0,0")  # mass reached exactly
    assert truncate_top_p(p, F(3, 5)) == Dist.parse("1/3,1/3,1/3,0")


# -- compare ---------------------------------------------------------------------------------

def test_compare_groups_and_bias():
    out = compare(P, Q, 1)
    rows = {m["method"]: m for m in out["methods"]}
    assert rows["rrs"]["group"] == "lossless" and "bias" not in rows["rrs"]
    for name in ("typical", "greedy", "top-k", "top-p", "naive", "top1"):
        assert rows[name]["group"] == "lossy-by-design"
    assert rows["typical"]["bias"] == "2/5" and rows["typical"]["acceptance"] == "1"
    assert rows["greedy"]["bias"] == "1/2" and rows["greedy"]["acceptance"] == "1/5"
    assert rows["top-k"]["bias"] == "1/5" and rows["top-k"]["acceptance"] == "2/5"


def test_compare_cli_lossy_group(capsys):
    code = main(["compare", "--p", "1/2,3/10,1/5", "--q", "1/5,1/5,3/5", "--labels", "abc",
                 "--k", "2"])
    out = capsys.readouterr().out
    assert code == 0
    head, _, lossy = out.partition("lossy by design")
    assert "typical" in lossy and "greedy" in lossy and "typical" not in head
    assert "4/25" in lossy
    code = main(["compare", "--p", "1/2,3/10,1/5", "--q", "1/5,1/5,3/5", "--k", "2", "--json"])
    obj = json.loads(capsys.readouterr().out)
    typical = next(m for m in obj["methods"] if m["method"] == "typical")
    assert code == 0 and typical["bias"] == "4/25" and typical["group"] == "lossy-by-design"


def test_bad_parameters_and_claim_registered():
    from exactspec.claims import get_claim
    from exactspec.core.errors import InvalidInput

    with pytest.raises(InvalidInput, match="eps"):
        typical_acceptance(F(-1, 10), F(3, 10))
    with pytest.raises(InvalidInput, match="K="):
        top_k(0)
    with pytest.raises(InvalidInput, match="P="):
        top_p(F(3, 2))
    assert get_claim("lossy-rules").issue == "17"


def test_the_entropy_threshold_is_enclosed_once_per_target():
    """Every token of p is compared with one threshold: its enclosure (O(|V|) logarithms) is
    computed once per precision, not once per token (compare at 10,000 tokens took minutes),
    and the passing tokens are those of float64 arithmetic, well away from the threshold."""
    from exactspec.methods import typical as typical_module

    rng = random.Random(2)
    weights = [rng.randint(1, 1000) for _ in range(2000)]
    p = Dist([Fraction(w, sum(weights)) for w in weights])
    before = typical_module._threshold_interval.cache_info()
    passing = typical_module.accepted_tokens(p)
    after = typical_module._threshold_interval.cache_info()
    assert after.misses - before.misses <= len(typical_module._PRECISIONS)
    assert after.hits - before.hits >= len(p.labels) - len(typical_module._PRECISIONS)
    floats = [float(v) for v in p.probs]
    threshold = 0.3 * math.exp(sum(v * math.log(v) for v in floats))
    clear = [t for t, v in enumerate(floats) if abs(v - threshold) > 1e-9 * threshold]
    assert [t for t in clear if t in passing] == [t for t in clear if floats[t] > threshold]


def test_lossy_rules_have_linear_routes_equal_to_their_plain_enumeration():
    """greedy (one draft per step), top-k and top-p (RRS's stepped form on the truncated
    target) through merged states, typical through its sorted sums: the plain enumeration's
    law, P(Y in X) and explicit acceptance on random pairs at k = 1..3 (greedy's and
    typical's paths too); at 3,000 tokens and k = 4 the planner takes them, with the closed
    forms' laws and acceptances."""
    from exactspec.bounds.compare import exact_verification
    from exactspec.engine.merged import enumerate_merged
    from exactspec.claims.base import random_pair
    from exactspec.methods.top1 import argmax
    from exactspec.methods.typical import typical_acceptance, typical_law

    rng = random.Random(11)
    lossy = [METHODS["typical"], typical_acceptance("1/10", 5)]
    for i in range(30):
        p, q = random_pair(rng, 2 + i % 5)
        k = 1 + i % 3
        for name in ("greedy", "top-k", "top-p"):
            plain = verify(name, p, q, k, max_paths=None).enumeration
            merged = enumerate_merged(METHODS[name].steps, p, q, k)
            assert (merged.law, merged.acceptance, merged.explicit_acceptance) == \
                (plain.law, plain.acceptance, plain.explicit_acceptance)
            assert name != "greedy" or merged.paths == plain.paths
        for m in lossy:
            plain = verify(m, p, q, k, max_paths=None).enumeration
            sums = m.sorted_sums(p, q, k)
            assert (sums.law, sums.acceptance, sums.explicit_acceptance, sums.paths) == \
                (plain.law, plain.acceptance, plain.explicit_acceptance, plain.paths)
    weights = [rng.randint(1, 1000) for _ in range(3_000)]
    p = Dist([Fraction(w, sum(weights)) for w in weights])
    weights = [rng.randint(1, 1000) for _ in range(3_000)]
    q = Dist([Fraction(w, sum(weights)) for w in weights])
    g = argmax(p)
    r = exact_verification("greedy", p, q, 4)
    assert r.route == "merged-states" and r.law[g] == 1 and r.acceptance == 1 - (1 - q[g]) ** 4
    r = exact_verification("top-k", p, q, 4)
    assert r.route == "merged-states" and r.law_dist() == truncate_top_k(p, 2)
    r = exact_verification("top-p", p, q, 4)
    assert r.route == "merged-states" and r.law_dist() == truncate_top_p(p, Fraction(4, 5))
    r = exact_verification("typical", p, q, 4)
    assert r.route == "sorted-sums" and r.law_dist() == typical_law(p, q, 4)
    assert r.paths == 3_000 ** 4
