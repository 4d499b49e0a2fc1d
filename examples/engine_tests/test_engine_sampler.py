"""An engine's sampler tests, rewritten with exactspec's exact assertions.

Engines test their rejection samplers two ways: "deterministic" unit tests that draw a few
samples and assert something of each, and statistical tests that draw many samples and compare
a histogram with the target.  Here the first kind becomes an exact probability
(``exactspec.testing.probability``: the exact chance that the assertion holds on one draw, in
float32 arithmetic with ``torch.rand``'s grid of ``2**24`` uniforms), and the second an exact
law (``assert_lossless``: the output law equals the target exactly, or misses it by a stated
rounding-only tolerance).  Every probability is also counted a second way: the grid points
where a comparison goes one way, counted with NumPy's own float32 arithmetic.
"""

import os
from fractions import Fraction

import numpy as np
import pytest

from exactspec import Dist
from exactspec.testing import (assert_acceptance, assert_lossless, assert_lossless_family,
                               probability, probability_report)

import engine_samplers as samplers

GRID = 2**24                                   # torch.rand's float32 values: j / 2**24
P, Q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")


@pytest.fixture(scope="module")
def uniforms():
    """Every float32 uniform a generator can return, j / 2**24 (exact in float32)."""
    return np.arange(GRID, dtype=np.float32) / np.float32(GRID)


def f32(x):
    return np.float32(float(x))


def grid_points(mask) -> int:
    return int(np.count_nonzero(mask))


@pytest.fixture
def sampler():
    """The sampler under test: :func:`engine_samplers.rejection_sample`, or the function of
    ``engine_samplers`` that the environment variable ``ENGINE_SAMPLER`` names
    (``ENGINE_SAMPLER=resample_from_target python -m pytest examples/engine_tests`` shows the
    assertions failing on a broken sampler)."""
    return getattr(samplers, os.environ.get("ENGINE_SAMPLER", "rejection_sample"))


# -- the output law: what a histogram test tries to see ----------------------------------

def test_sampler_is_lossless_in_exact_arithmetic(sampler):
    assert_lossless(sampler, P, Q)
    assert_lossless(sampler, Dist.parse("0,1"), Dist.parse("1,0"))


def test_sampler_on_small_instances(sampler):
    """Zeros, point masses and ties first, every pair of rows up to thirds."""
    assert_lossless_family(sampler, max_denominator=3)


def test_float32_sampler_within_rounding_tolerance(sampler):
    """The float32 kernel misses the target by rounding only, below 2**-20 in TV."""
    assert_lossless(sampler, P, Q, arith="float32", tolerance=Fraction(1, 2**20))


def test_float32_sampler_is_not_exactly_lossless(sampler):
    with pytest.raises(AssertionError, match="lossy by rounding only"):
        assert_lossless(sampler, P, Q, arith="float32")


def test_acceptance_is_the_overlap(sampler):
    overlap = sum(min(a, b) for a, b in zip(P.probs, Q.probs))
    assert overlap == Fraction(3, 5)
    assert_acceptance(sampler, P, Q, overlap)


def test_broken_sampler_fails_with_its_exact_tv():
    """Resampling from the target instead of the residual: one message with the instance and
    the exact TV, which is also derived here by its closed form."""
    with pytest.raises(AssertionError) as info:
        assert_lossless(samplers.resample_from_target, P, Q)
    accept = sum(min(a, b) for a, b in zip(P.probs, Q.probs))
    law = [min(a, b) + (1 - accept) * a for a, b in zip(P.probs, Q.probs)]
    tv = sum(abs(x - a) for x, a in zip(law, P.probs)) / 2
    assert tv == Fraction(1, 10)
    message = str(info.value)
    assert f"p = {P!r}, q = {Q!r}" in message
    assert "TV(output law, target) = 1/10" in message


def test_broken_sampler_smallest_counterexample():
    with pytest.raises(AssertionError) as info:
        assert_lossless_family(samplers.resample_from_target)
    err = info.value
    assert "Smallest counterexample" in str(err)
    accept = sum(min(a, b) for a, b in zip(err.p.probs, err.q.probs))
    law = [min(a, b) + (1 - accept) * a for a, b in zip(err.p.probs, err.q.probs)]
    assert err.bias == sum(abs(x - a) for x, a in zip(law, err.p.probs)) / 2 > 0
    assert f"TV(output law, target) = {err.bias}" in str(err)


# -- "deterministic" tests: the exact probability that they pass -------------------------

TOP_K_MISS = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")    # draft mass outside
TOP_K_INSIDE = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/2,1/2,0")    # drafts inside top-2


def test_top_k_below_one_by_a_grid_point(uniforms):
    p, q = TOP_K_MISS
    report = probability_report(samplers.emitted_in_top_k_le, p, q, arith="float32")
    outside = [t for t in p.labels if t not in samplers.top_k_labels(p)]
    assert outside == [2]
    # independently: the draft 2 (target 0 after top-k) is accepted where u <= 0 / q(2)
    count = Fraction(sum(q[t] * grid_points(uniforms <= f32(0) / f32(q[t])) for t in outside),
                     GRID)
    assert report.probability == 1 - count == 1 - Fraction(3, 5) / GRID
    assert report.failing_paths == 1 and report.failing[0].probability == count


def test_top_k_exactly_one():
    assert probability(samplers.emitted_in_top_k_le, *TOP_K_INSIDE, arith="float32") == 1
    assert probability(samplers.emitted_in_top_k, *TOP_K_MISS, arith="float32") == 1


COUNT_MISS = Dist.parse("2/3,1/3"), Dist.parse("5/6,1/6")
COUNT_EXACT = Dist.parse("1/4,3/4"), Dist.parse("1/2,1/2")


def _disagreements(uniforms, p, q):
    """Grid points where ``u < p/q`` and ``u * q < p`` differ, per draft, in NumPy float32."""
    out = {}
    for t in p.labels:
        pt, qt = f32(p[t]), f32(q[t])
        out[t] = grid_points((uniforms < pt / qt) != (uniforms * qt < pt))
    return out


def test_accepted_count_below_one_by_a_grid_point(uniforms):
    p, q = COUNT_MISS
    counts = _disagreements(uniforms, p, q)
    assert counts == {0: 1, 1: 0}
    fails = sum((q[t] * Fraction(counts[t], GRID) for t in p.labels), Fraction(0))
    got = probability(samplers.accepted_count_matches_reference, p, q, arith="float32")
    assert got == 1 - fails == 1 - Fraction(5, 6) / GRID


def test_accepted_count_exactly_one(uniforms):
    p, q = COUNT_EXACT
    assert _disagreements(uniforms, p, q) == {0: 0, 1: 0}
    assert probability(samplers.accepted_count_matches_reference, p, q, arith="float32") == 1


ONE_HOT = Dist.parse("0,1,0"), Dist.parse("1/4,1/2,1/4")


def test_greedy_when_one_hot_below_one(uniforms):
    p, q = ONE_HOT
    zero = [t for t in p.labels if p[t] == 0]
    count = Fraction(sum(q[t] * grid_points(uniforms <= f32(0) / f32(q[t])) for t in zero),
                     GRID)
    got = probability(samplers.greedy_when_one_hot_le, p, q, arith="float32")
    assert got == 1 - count == 1 - Fraction(1, 2 * GRID)


def test_greedy_when_one_hot_exactly_one():
    assert probability(samplers.greedy_when_one_hot, *ONE_HOT, arith="float32") == 1
    assert probability(samplers.greedy_when_one_hot_le, Dist.parse("0,1,0"),
                       Dist.parse("0,1,0"), arith="float32") == 1


# -- the expected failure: a "deterministic" test that a zero uniform breaks ---------------

ZERO_TARGET = Dist.parse("0,1"), Dist.parse("1,0")
FAILS = 1 - probability(samplers.zero_target_never_emitted_le, *ZERO_TARGET, arith="float32")


def test_the_expected_failure_is_one_grid_point(uniforms):
    assert FAILS == Fraction(grid_points(uniforms <= f32(0)), GRID) == Fraction(1, 2**24)


@pytest.mark.xfail(strict=True, reason=f"the '<=' kernel emits the token of target probability "
                   f"0 when u = 0: this test fails with probability exactly {FAILS} (2**-24)")
def test_zero_target_token_is_never_emitted():
    """As engines write it: sample and assert the zero-probability token never comes out.
    On a float32 grid it fails on one uniform in 2**24."""
    assert probability(samplers.zero_target_never_emitted_le, *ZERO_TARGET,
                       arith="float32") == 1
