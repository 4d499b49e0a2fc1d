"""The statistical harness: chi-square tails without SciPy, the detectable bias, verdicts.

Correct samplers must pass and deliberately biased ones must fail, at fixed seeds; the
stated power of ``detectable_tv`` is checked by simulation in its worst direction.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from exactspec.core.errors import InvalidInput
from exactspec.numpy_backend.harness import (check_sampler, chi2_isf, chi2_sf, detectable_tv,
                               goodness_of_fit, ncx2_sf, noncentrality_for_power,
                               rrs_fixed_residual, rrs_kernel, sps_kernel, sps_reused_uniform)
from exactspec.numpy_backend import sample, verify_rrs, verify_rrs_wor

P = np.array([0.5, 0.3, 0.2])
Q = np.array([0.2, 0.2, 0.6])


# -- distributions ------------------------------------------------------------------------------

@pytest.mark.parametrize("x,df,expected", [
    (3.841458820694124, 1, 0.05), (6.634896601021214, 1, 0.01), (23.209251158954356, 10, 0.01),
    (124.34211340400407, 100, 0.05)])
def test_chi2_sf_known_quantiles(x, df, expected):
    assert chi2_sf(x, df) == pytest.approx(expected, rel=1e-9)
    assert chi2_isf(expected, df) == pytest.approx(x, rel=1e-7)


def test_chi2_sf_closed_form_for_two_degrees_of_freedom():
    for x in (0.1, 1.0, 7.5, 40.0):
        assert chi2_sf(x, 2) == pytest.approx(math.exp(-x / 2), rel=1e-12)
    assert chi2_sf(0.0, 3) == 1.0


def test_noncentral_tail_matches_numpy_sampling():
    rng = np.random.default_rng(0)
    for df, lam, x in ((1, 5.0, 6.6), (4, 12.0, 13.3), (30, 40.0, 70.0)):
        draws = rng.noncentral_chisquare(df, lam, size=200_000)
        sim = float(np.mean(draws > x))
        assert abs(ncx2_sf(x, df, lam) - sim) < 5 * math.sqrt(sim * (1 - sim) / 200_000)
    assert ncx2_sf(5.0, 3, 0.0) == pytest.approx(chi2_sf(5.0, 3), rel=1e-12)


def test_power_at_lambda_star():
    lam = noncentrality_for_power(5, 0.01, 0.8)
    assert ncx2_sf(chi2_isf(0.01, 5), 5, lam) == pytest.approx(0.8, abs=1e-6)


@pytest.mark.parametrize("bins", [2, 10])
def test_detectable_tv_has_its_power_in_the_worst_direction(bins):
    """A bias proportional to pi on two halves of the mass meets Cauchy-Schwarz with
    equality: the least detectable bias of a given TV.  Power there should be about 80%."""
    rng = np.random.default_rng(bins)
    n = 20_000
    law = np.full(bins, 1 / bins)
    delta = detectable_tv(n, bins - 1)
    alt = law.copy()
    alt[: bins // 2] *= 1 + 2 * delta
    alt[bins // 2:] *= 1 - 2 * delta
    assert 0.5 * np.abs(alt - law).sum() == pytest.approx(delta)
    rejected = np.mean([not goodness_of_fit(rng.multinomial(n, alt), law).consistent
                        for _ in range(400)])
    assert 0.72 <= rejected <= 0.88


def test_level_is_respected_under_the_null():
    rng = np.random.default_rng(1)
    law = np.array([0.4, 0.3, 0.2, 0.05, 0.05])
    rejected = np.mean([not goodness_of_fit(rng.multinomial(5_000, law), law).consistent
                        for _ in range(500)])
    assert rejected <= 0.03


def test_bins_group_thin_tokens_and_zero_probability_is_impossible():
    law = np.array([0.5, 0.49] + [0.01 / 100] * 100 + [0.0])
    counts = np.zeros(law.size, dtype=int)
    counts[0], counts[1], counts[2:102] = 500, 490, 0
    counts[2] = 10
    report = goodness_of_fit(counts, law)
    assert report.bins <= 4 and report.n == 1000
    counts[-1] = 1
    bad = goodness_of_fit(counts, law)
    assert bad.impossible == 1 and bad.p_value == 0.0 and bad.verdict == "inconsistent"
    assert "probability 0" in str(bad)


def test_g_test_agrees_with_chi_square_verdicts():
    assert goodness_of_fit([5000, 5000], [0.5, 0.5], test="g").consistent
    assert not goodness_of_fit([5300, 4700], [0.5, 0.5], test="g").consistent


# -- samplers --------------------------------------------------------------------------------------

def test_correct_kernels_pass():
    for kernel, k in ((sps_kernel, 1), (rrs_kernel, 3)):
        report = check_sampler(kernel, P, 20_000, p=P, q=Q, k=k, drafts="iid", seed=3)
        assert report.consistent, str(report)


def test_biased_kernels_fail():
    reused = check_sampler(sps_reused_uniform, P, 20_000, p=P, q=Q, drafts="iid", seed=3)
    assert not reused.consistent and reused.p_value < 1e-6
    fixed = check_sampler(rrs_fixed_residual, P, 20_000, p=P, q=Q, k=3, drafts="iid", seed=3)
    assert not fixed.consistent
    assert fixed.detectable_tv < fixed.empirical_tv


def test_batched_numpy_samplers_pass_at_a_large_budget():
    def rrs_batched(p, q, drafts, rng, n):
        return verify_rrs(p, q, drafts, rng)[0]

    def wor_batched(p, q, drafts, rng, n):
        return verify_rrs_wor(p, q, drafts, rng)[0]

    def whole(p, q, k, rng, n):
        return sample("rrs", p, q, k, rng, n=n).tokens

    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(40)), rng.dirichlet(np.ones(40) * 0.3)
    for sampler, drafts in ((rrs_batched, "iid"), (wor_batched, "wor"), (whole, None)):
        report = check_sampler(sampler, p, 120_000, p=p, q=q, k=4, drafts=drafts,
                               batched=True, seed=9)
        assert report.consistent, str(report)
        assert report.detectable_tv < 0.02


def test_report_text_and_json():
    report = check_sampler(sps_kernel, P, 2_000, p=P, q=Q, drafts="iid", seed=0)
    text = str(report)
    assert text.startswith("consistent") and "80% power" in text
    js = report.to_json()
    assert js["verdict"] == "consistent"
    assert all(key.endswith("_float") for key, v in js.items() if isinstance(v, float))


@pytest.mark.parametrize("call,match", [
    (lambda: check_sampler(sps_kernel, P, 0, p=P, q=Q, drafts="iid"), "budget"),
    (lambda: check_sampler(sps_kernel, P, 10, p=P[:2], q=Q, drafts="iid"), "same length"),
    (lambda: check_sampler(lambda p, q, k, rng: 7, P, 10), "token indices"),
    (lambda: check_sampler(sps_kernel, P, 10, p=P, q=Q, drafts="hub"), "iid, wor"),
    (lambda: goodness_of_fit([1, 2], [0.5, 0.5], test="ks"), "chi2 or g"),
    (lambda: goodness_of_fit([1, 2, 3], [0.5, 0.5]), "3 entries"),
    (lambda: chi2_isf(1.5, 2), "level"),
    (lambda: ncx2_sf(1.0, 2, -1.0), "non-centrality"),
])
def test_invalid_inputs(call, match):
    with pytest.raises(InvalidInput, match=match):
        call()
