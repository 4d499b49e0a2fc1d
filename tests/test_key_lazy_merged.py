"""key-lazy through merged states (:mod:`exactspec.key.lazy_stepped`) against its plain
enumeration: the same output law, ``P(Y in X)``, explicit acceptance and number of paths."""

from fractions import Fraction as F

import pytest

from exactspec.bounds.compare import exact_verification
from exactspec.core.dist import Dist
from exactspec.core.random_dists import random_pair
from exactspec.engine.exact import enumerate_paths
from exactspec.engine.merged import enumerate_merged
from exactspec.key.lazy_stepped import KEY_LAZY_STEPS, visit_chain
from exactspec.key.placement import key_placement
from exactspec.methods.key_lazy import key_lazy
from exactspec.optimum.alpha_star import optimum

P = Dist([F(v, 44) for v in (3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5)])
Q = Dist([F(v, 51) for v in (2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4)])

CASES = [
    (Dist.parse("1/2,1/5,3/10,0"), Dist.parse("1/20,1/20,1/10,4/5"), 10),   # docs/math.md counterexample 2
    (Dist.parse("3/5,2/5"), Dist.parse("1/2,1/2"), 8),
    (Dist.parse("1/2,1/5,3/10"), Dist.parse("1/10,3/5,3/10"), 2),
    (Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 4),
    (Dist.parse("0,1/2,1/2"), Dist.parse("1/3,1/3,1/3"), 3),                 # a zero of p
    (P, Q, 3),
]


def same(plain, merged):
    return (plain.law == merged.law and plain.acceptance == merged.acceptance
            and plain.explicit_acceptance == merged.explicit_acceptance
            and plain.paths == merged.paths and merged.total == 1)


@pytest.mark.parametrize("p, q, k", CASES)
def test_merged_key_lazy_equals_the_plain_enumeration(p, q, k):
    plain = enumerate_paths(key_lazy, p, q, k, max_paths=None)
    merged = enumerate_merged(KEY_LAZY_STEPS, p, q, k)
    assert same(plain, merged)
    assert merged.law == dict(p) and merged.acceptance == optimum(p, q, k).alpha_star


def test_merged_key_lazy_on_random_instances():
    import random

    rng = random.Random(7)
    for _ in range(12):
        n, k = rng.randint(2, 5), rng.randint(1, 4)
        p, q = random_pair(rng, n)
        assert same(enumerate_paths(key_lazy, p, q, k, max_paths=None),
                    enumerate_merged(KEY_LAZY_STEPS, p, q, k))


def test_visit_chain_is_the_multinomial_in_visit_order():
    plan = key_placement(P, Q, 3)
    chain = visit_chain(plan, 3)
    order = chain["order"]
    assert sorted(order) == list(range(11))
    assert [plan.first_slot(t) for t in order] == sorted(plan.first_slot(t) for t in order)
    # the chance that every draft goes to the first token in visit order: q_t^k, two ways
    assert chain[(0, 3)][3] == Q[order[0]] ** 3


def _without_shortcut():
    """key-lazy with KEY's lowest key slot declined: merged states run KEY_LAZY_STEPS."""
    import dataclasses

    from exactspec.methods import METHODS
    from exactspec.methods.base import Method

    steps = dataclasses.replace(KEY_LAZY_STEPS, shortcut=dataclasses.replace(
        KEY_LAZY_STEPS.shortcut, condition=lambda p, q, k: "declined in this test"))
    return Method("key-lazy", METHODS["key-lazy"].run, steps=steps)


def test_exact_verification_counts_key_lazy_through_merged_states_when_large():
    """Above plain_paths: merged states by KEY's lowest key slot (a handful of states), or
    by KEY_LAZY_STEPS where that declines (its paths are the plain enumeration's)."""
    r = exact_verification("key-lazy", P, Q, 4, plain_paths=1_000)
    assert type(r.enumeration).__name__ == "MergedEnumeration"
    assert r.enumeration.form == "key-min-slot"
    assert r.lossless and r.acceptance == optimum(P, Q, 4).alpha_star
    r = exact_verification(_without_shortcut(), P, Q, 4, plain_paths=1_000)
    assert r.enumeration.form == "key-lazy"
    assert r.lossless and r.paths == 9490 and r.acceptance == optimum(P, Q, 4).alpha_star


@pytest.mark.slow
def test_key_lazy_k6_counted_through_merged_states():
    # 213,773 paths (the plain walk takes about 30 s; merged states about 3 s)
    merged = enumerate_merged(KEY_LAZY_STEPS, P, Q, 6)
    assert merged.paths == 213_773 and merged.law == dict(P) and merged.acceptance == 1


@pytest.mark.slow
def test_a_plain_walk_refused_for_its_seconds_goes_to_merged_states():
    # k = 7 on 11 tokens: Knuth's probes say about 16,000 paths (plain), the walk's own
    # estimate near its 60 s budget about 670,000 (refused); merged states count all 656,815
    # in about 9 s (`exactspec verify key-lazy ... --k 7`)
    r = exact_verification(_without_shortcut(), P, Q, 7)
    assert type(r.enumeration).__name__ == "MergedEnumeration"
    assert r.lossless and r.paths == 656_815 and r.acceptance == optimum(P, Q, 7).alpha_star


def test_a_long_merged_run_shows_its_progress_and_a_short_quiet_one_does_not(capsys,
                                                                             monkeypatch):
    """A merged run prints its step, states and finished paths on stderr once it has taken
    ``PROGRESS_AFTER`` seconds (0 here), ending the line when done; asked for no progress (or
    on a stderr that is not a terminal, by default) it prints nothing."""
    import exactspec.engine.merged as merged

    p, q = Dist.parse("1/2,1/4,1/4"), Dist.parse("1/4,1/4,1/2")
    quiet = enumerate_merged(KEY_LAZY_STEPS, p, q, 3)
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(merged, "PROGRESS_AFTER", 0.0)
    shown = enumerate_merged(KEY_LAZY_STEPS, p, q, 3, progress=True)
    err = capsys.readouterr().err
    last = f"  merged states: {shown.steps} steps, {shown.states:,} states, {shown.paths:,} paths"
    assert "merged states: step 1," in err and err.endswith("\r" + last.ljust(78) + "\n")
    assert (shown.law, shown.paths) == (quiet.law, quiet.paths)
