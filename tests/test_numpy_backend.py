"""The NumPy float backend against its exact twins, on the same inputs converted exactly.

Every float routine is run on float64 rows and its exact twin on ``Dist(row, normalize=True)``
(each float is its exact binary value); they must agree within the stated tolerances:
``alpha*`` within ``ALPHA_STAR_ATOL`` (1e-13), ``a*`` per token within ``A_STAR_ATOL +
A_STAR_RTOL * a*``, one-draft acceptance within ``ONE_DRAFT_ATOL``, RRS within ``RRS_ATOL``.
Expected values are Fractions; floats appear only as the subject.
"""

from __future__ import annotations

import json
from fractions import Fraction as F

import numpy as np
import pytest

from exactspec.core.dist import Dist
from exactspec.core.errors import InvalidInput, NotExact
from exactspec.numpy_backend.models import model_pair
from exactspec.numpy_backend import (A_STAR_ATOL, A_STAR_RTOL, ALPHA_STAR_ATOL, ONE_DRAFT_ATOL,
                                     RRS_ATOL, a_star, alpha_star, compare_float, draft_iid,
                                     draft_wor, one_draft_acceptance, optimal_float,
                                     optimum_bucketed, optimum_sorted, rrs_acceptance,
                                     rrs_rejection, rrs_rejection_factors, sample,
                                     simulate_float, verify_float, verify_rrs)
from exactspec.numpy_backend._arrays import cumulative_min, prefix_sum, ratio_order
from exactspec.numpy_backend.twins import (agrees, exact_pair, one_draft_acceptance_exact,
                                           optimum_exact, rrs_acceptance_exact)

from exactspec.numpy_backend import _kernels


@pytest.fixture(params=["numpy", "compiled"])
def path(request, monkeypatch):
    """Run a test on each path of :func:`optimum_bucketed`: the NumPy passes, and numba's
    compiled loops (skipped where numba is not installed)."""
    if request.param == "numpy":
        monkeypatch.setattr(_kernels, "_LOADED", [None])
    elif not _kernels.available():
        pytest.skip("numba's compiled loops are not available (pip install 'exactspec[fast]'; "
                    "EXACTSPEC_NO_NUMBA unset)")
    return request.param


def numpy_path_only(monkeypatch):
    """The NumPy passes, whatever is installed (for tests of their record chains)."""
    monkeypatch.setattr(_kernels, "_LOADED", [None])


SEED_P = np.array([0.5, 0.3, 0.2])
SEED_Q = np.array([0.2, 0.2, 0.6])
# docs/math.md#worked-values: k -> (alpha*, a*, RRS acceptance), for the decimal seed example
SEED_TABLE = {
    1: (F(3, 5), (F(1, 5), F(1, 5), F(1, 5)), F(3, 5)),
    2: (F(21, 25), (F(9, 25), F(7, 25), F(1, 5)), F(19, 25)),
    3: (F(123, 125), (F(61, 125), F(37, 125), F(1, 5)), F(207, 250)),
    4: (F(1), (F(1, 2), F(3, 10), F(1, 5)), F(539, 625)),
}


def tiny_rrs_rejection(p: Dist, q: Dist, k: int) -> F:
    """The RRS rejection product, written out here independently of the package."""
    r = list(p.probs)
    rejection = F(1)
    for _ in range(k):
        pos = [max(a - b, F(0)) for a, b in zip(r, q.probs)]
        tv = sum(pos, F(0))
        rejection *= tv
        if tv == 0:
            return F(0)
        r = [x / tv for x in pos]
    return rejection


def assert_optimum_matches(fl, b, P: Dist, Q: Dist, k: int):
    ex = optimum_exact(P, Q, k)
    assert agrees(fl.alpha_star[b], ex.alpha_star, ALPHA_STAR_ATOL), (
        float(fl.alpha_star[b]), float(ex.alpha_star))
    for t, v in enumerate(ex.a_star.probs):
        assert agrees(fl.a_star[b, t], v, A_STAR_ATOL, A_STAR_RTOL), (t, fl.a_star[b, t], v)
    return ex


def random_instance(rng, n):
    """Float rows with the awkward cases: zeros in p or q, exact ratio ties, p = q blocks,
    heavy tails, point masses."""
    kind = rng.integers(0, 7)
    p = rng.random(n) ** rng.uniform(0.3, 8)
    q = rng.random(n) ** rng.uniform(0.3, 8)
    if kind == 1:
        p[rng.random(n) < 0.4] = 0
    elif kind == 2:
        q[rng.random(n) < 0.4] = 0
    elif kind == 3:                                  # ties: q proportional to p on half
        half = n // 2
        q[:half] = p[:half] * rng.choice([0.25, 0.5, 1.0, 2.0])
    elif kind == 4:                                  # a block with p = q exactly
        q[: n // 3] = p[: n // 3]
    elif kind == 5:                                  # counts: many exactly equal values
        p = rng.integers(0, 4, n).astype(float)
        q = rng.integers(0, 4, n).astype(float)
    elif kind == 6:                                  # a point mass
        p = np.zeros(n)
        p[rng.integers(n)] = 1.0
    if p.sum() == 0:
        p[0] = 1.0
    if q.sum() == 0:
        q[-1] = 1.0
    return p, q


# -- worked values ------------------------------------------------------------------------

@pytest.mark.parametrize("k", [1, 2, 3, 4])
@pytest.mark.usefixtures("path")
def test_seed_example_matches_the_exact_table(k):
    alpha, a, rrs = SEED_TABLE[k]
    for fl in (optimum_sorted(SEED_P, SEED_Q, k), optimum_bucketed(SEED_P, SEED_Q, k)):
        assert agrees(fl.alpha_star[0], alpha, 1e-15)
        assert all(agrees(x, v, 1e-15) for x, v in zip(fl.a_star[0], a))
    assert agrees(rrs_acceptance(SEED_P, SEED_Q, k)[0], rrs, 1e-15)
    assert agrees(one_draft_acceptance(SEED_P, SEED_Q)[0], F(3, 5), 1e-15)


def test_tight_instance_gives_rho_2():
    p, q = np.array([5 / 9, 4 / 9]), np.array([1 / 3, 2 / 3])
    assert agrees(rrs_acceptance(p, q, 2)[0], F(23, 27), 1e-15)
    assert agrees(alpha_star(p, q, 2), 1, 1e-15)


def test_order_and_tight_prefixes_on_the_seed_example():
    opt = optimum_sorted(SEED_P, SEED_Q, 2)
    assert opt.order.tolist() == [[0, 1, 2]]
    assert opt.tight.tolist() == [[True, True, False]]


# -- cross-checks against the exact twins ---------------------------------------------------

@pytest.mark.usefixtures("path")
def test_optimum_order_and_acceptance_agree_with_exact_twins_on_awkward_instances():
    rng = np.random.default_rng(2024)
    for _ in range(150):
        n = int(rng.integers(1, 40))
        k = int(rng.integers(1, 7))
        p, q = random_instance(rng, n)
        P, Q = exact_pair(p, q)
        sorted_ = optimum_sorted(p, q, k)
        ex = assert_optimum_matches(sorted_, 0, P, Q, k)
        assert_optimum_matches(optimum_bucketed(p, q, k, bits=int(rng.integers(0, 8))), 0,
                               P, Q, k)
        assert tuple(sorted_.order[0].tolist()) == ex.order
        assert agrees(rrs_acceptance(p, q, k)[0], 1 - tiny_rrs_rejection(P, Q, k), RRS_ATOL)
        assert agrees(one_draft_acceptance(p, q)[0], one_draft_acceptance_exact(P, Q),
                      ONE_DRAFT_ATOL)


def test_tight_prefixes_agree_on_generic_instances():
    rng = np.random.default_rng(7)
    for _ in range(60):
        n, k = int(rng.integers(2, 30)), int(rng.integers(1, 6))
        p, q = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n) * 0.5)
        P, Q = exact_pair(p, q)
        ex = optimum_exact(P, Q, k)
        fl = optimum_sorted(p, q, k)
        tight = {int(fl.order[0, j]) for j in np.flatnonzero(fl.tight[0])}
        assert tight == set(ex.tight)


@pytest.mark.parametrize("name,size,k", [("docs", 2000, 4), ("code", 2000, 2),
                                         ("docs", 2000, 8)])
@pytest.mark.usefixtures("path")
def test_model_rows_agree_with_exact_twins_at_medium_size(name, size, k):
    p, q = model_pair(name, size).rows(2, seed=11)
    for fl in (optimum_sorted(p, q, k), optimum_bucketed(p, q, k)):
        for b in range(2):
            P, Q = exact_pair(p[b], q[b])
            assert_optimum_matches(fl, b, P, Q, k)
    for b in range(2):
        P, Q = exact_pair(p[b], q[b])
        assert agrees(rrs_acceptance(p[b], q[b], k)[0], rrs_acceptance_exact(P, Q, k), RRS_ATOL)


@pytest.mark.usefixtures("path")
def test_alpha_star_to_1e_13_at_ten_thousand_tokens():
    p, q = model_pair("code", 10_000).rows(1, seed=5)
    P, Q = exact_pair(p, q)
    ex = optimum_exact(P, Q, 4)
    for fl in (optimum_sorted(p, q, 4), optimum_bucketed(p, q, 4)):
        assert agrees(fl.alpha_star[0], ex.alpha_star, 0, 1e-13)
        assert all(agrees(fl.a_star[0, t], v, A_STAR_ATOL, A_STAR_RTOL)
                   for t, v in enumerate(ex.a_star.probs))


def test_rrs_matches_the_packages_closed_form_and_engine_when_present():
    closed_forms = pytest.importorskip("exactspec.bounds.closed_forms")
    rng = np.random.default_rng(3)
    for _ in range(20):
        p, q = random_instance(rng, int(rng.integers(2, 12)))
        P, Q = exact_pair(p, q)
        for k in (1, 2, 4):
            exact = closed_forms.rrs_acceptance(P, Q, k)
            assert exact == rrs_acceptance_exact(P, Q, k) == 1 - tiny_rrs_rejection(P, Q, k)
            assert agrees(rrs_acceptance(p, q, k)[0], exact, RRS_ATOL)


def test_rrs_rejection_factors_and_sure_acceptance():
    p = q = np.array([0.25, 0.75])
    assert rrs_rejection_factors(p, q, 3).tolist() == [[0.0, 0.0, 0.0]]
    assert rrs_acceptance(p, q, 3).tolist() == [1.0]
    disjoint = rrs_rejection(np.array([1.0, 0.0]), np.array([0.0, 1.0]), 2)
    assert disjoint.tolist() == [1.0]                  # TV stays 1: every draft rejected


# -- the bucketed version against the sorted reference --------------------------------------

@pytest.mark.parametrize("name,k,options", [
    ("docs", 4, {}), ("code", 4, {}), ("code", 2, {"temperature": 0.7}),
    ("docs", 4, {"top_k": 50}), ("code", 8, {"top_p": 0.9}), ("docs", 1, {})])
@pytest.mark.usefixtures("path")
def test_bucketed_agrees_with_sorted_on_model_batches(name, k, options):
    p, q = model_pair(name).rows(48, seed=2, **options)
    ref, fast = optimum_sorted(p, q, k), optimum_bucketed(p, q, k)
    np.testing.assert_allclose(fast.alpha_star, ref.alpha_star, rtol=0, atol=2 * 1e-15)
    np.testing.assert_allclose(fast.a_star, ref.a_star, rtol=A_STAR_RTOL, atol=A_STAR_ATOL)
    assert np.all(fast.sorted_tokens <= p.shape[1])
    # the tokens left unsorted have a* = p exactly
    pn = p / p.sum(axis=1, keepdims=True)
    moved = np.abs(ref.a_star - pn) > 1e-15
    assert np.all(moved.sum(axis=1) <= fast.sorted_tokens + (pn == 0).sum(axis=1) +
                  ((q == 0) & (p > 0)).sum(axis=1))


@pytest.mark.usefixtures("path")
def test_batch_rows_equal_single_rows():
    p, q = model_pair("docs", 1000).rows(5, seed=4)
    batch = optimum_bucketed(p, q, 3)
    for b in range(5):
        one = optimum_bucketed(p[b], q[b], 3)
        assert one.alpha_star[0] == batch.alpha_star[b]
        np.testing.assert_array_equal(one.a_star[0], batch.a_star[b])
    np.testing.assert_array_equal(rrs_acceptance(p, q, 3),
                                  [rrs_acceptance(p[b], q[b], 3)[0] for b in range(5)])


def test_conveniences_return_floats_for_one_row():
    assert isinstance(alpha_star(SEED_P, SEED_Q, 2), float)
    assert a_star(SEED_P, SEED_Q, 2, method="sorted").shape == (3,)
    assert alpha_star(np.stack([SEED_P, SEED_Q]), np.stack([SEED_Q, SEED_P]), 2).shape == (2,)
    p = Dist.parse("1/2,3/10,1/5")
    assert agrees(alpha_star(p, Dist.parse("1/5,1/5,3/5"), 3), F(123, 125), 1e-15)


# -- helpers: compensated sums, cumulative minimum, order, array-API namespaces --------------

def test_prefix_sum_is_within_one_rounding_of_exact():
    rng = np.random.default_rng(0)
    x = rng.dirichlet(np.ones(20_000) * 0.1)[None, :]
    got = prefix_sum(x)[0]
    exact = np.cumsum([F(v) for v in x[0][:3000]])        # spot-check the first 3000
    for j in range(0, 3000, 97):
        assert abs(F(got[j]) - exact[j]) <= F(2) ** -53 * exact[j] + F(2) ** -1074


def test_ratio_order_breaks_rounding_ties_exactly_and_exact_ties_by_index():
    p = np.array([3.0, 1.0, 0.1, 0.3, 0.0, 0.0])
    q = np.array([0.3, 0.1, 0.01, 0.03 * (1 + 2 ** -52), 1.0, 0.0])
    P, Q = exact_pair(p, q)
    assert tuple(ratio_order(p[None], q[None])[0].tolist()) == optimum_exact(P, Q, 1).order


class _ArrayApiLike:
    """NumPy without ``minimum.accumulate``, ``put_along_axis`` and fancy fast paths: the
    generic array-API branches must give the same results."""

    def __getattr__(self, name):
        if name == "minimum":
            return lambda a, b: np.minimum(a, b)
        return getattr(np, name)


def test_generic_namespace_branches_agree():
    xp = _ArrayApiLike()
    x = np.random.default_rng(1).random((3, 37))
    np.testing.assert_array_equal(cumulative_min(x, xp), np.minimum.accumulate(x, axis=-1))
    p, q = model_pair("docs", 500).rows(3, seed=9)
    q[:, :40] = p[:, :40]                                  # force exact-tie runs
    ref = optimum_sorted(p, q, 3)
    gen = optimum_sorted(p, q, 3, xp=xp)
    np.testing.assert_array_equal(gen.order, ref.order)
    np.testing.assert_allclose(gen.a_star, ref.a_star, rtol=0, atol=1e-16)
    np.testing.assert_array_equal(rrs_acceptance(p, q, 3, xp=xp), rrs_acceptance(p, q, 3))


# -- samplers -------------------------------------------------------------------------------

def test_samplers_follow_p_and_the_exact_acceptance():
    from exactspec.numpy_backend.harness import goodness_of_fit

    rng = np.random.default_rng(12)
    n = 60_000
    P, Q = exact_pair(SEED_P, SEED_Q)
    wor_acceptance = {2: F(9, 10)}                        # enumerated by hand in the docs
    for method, k in (("sps", 1), ("rrs", 2), ("rrs", 4), ("rrs-wor", 2)):
        out = sample(method, SEED_P, SEED_Q, k, rng, n=n)
        counts = np.bincount(out.tokens, minlength=3)
        assert goodness_of_fit(counts, SEED_P).consistent, method
        exact = wor_acceptance[k] if method == "rrs-wor" else rrs_acceptance_exact(P, Q, k)
        sigma = float(np.sqrt(float(exact) * (1 - float(exact)) / n))
        assert abs(out.accepted.mean() - float(exact)) < 5 * sigma, method


def test_rrs_wor_sampler_matches_the_exact_engine_when_registered():
    from exactspec import METHODS, verify

    if "rrs-wor" not in METHODS:
        pytest.skip("rrs-wor is not registered in this checkout")
    p, q = np.array([0.5, 0.25, 0.125, 0.125]), np.array([0.125, 0.25, 0.5, 0.125])
    P, Q = exact_pair(p, q)
    exact = verify("rrs-wor", P, Q, 3)
    out = sample("rrs-wor", p, q, 3, np.random.default_rng(5), n=50_000)
    sigma = float(np.sqrt(float(exact.acceptance) * (1 - float(exact.acceptance)) / 50_000))
    assert abs(out.accepted.mean() - float(exact.acceptance)) < 5 * sigma


def test_batched_samplers_shapes_and_draft_laws():
    rng = np.random.default_rng(3)
    p, q = model_pair("docs", 300).rows(7, seed=1)
    out = sample("rrs", p, q, 4, rng)
    assert out.tokens.shape == (7,) and out.drafts.shape == (7, 4)
    out = sample("rrs-wor", p, q, 3, rng, n=5)
    assert out.tokens.shape == (7, 5) and out.drafts.shape == (7, 5, 3)
    assert all(len(set(d)) == 3 for d in out.drafts.reshape(-1, 3).tolist())
    assert draft_iid([0.0, 1.0], 2, rng, n=3).tolist() == [[1, 1]] * 3
    # without replacement: ordered pairs follow q(x1) q(x2) / (1 - q(x1))
    d = draft_wor([0.25, 0.25, 0.5], 2, rng, n=80_000)
    pairs = np.bincount(d[:, 0] * 3 + d[:, 1], minlength=9) / 80_000
    expected = np.array([0, 1 / 12, 1 / 6, 1 / 12, 0, 1 / 6, 1 / 4, 1 / 4, 0])
    assert np.max(np.abs(pairs - expected)) < 0.01
    with pytest.raises(InvalidInput, match="k <= 2"):
        draft_wor([0.5, 0.5, 0.0], 3, rng)


def test_rrs_kernel_on_without_replacement_drafts_is_biased():
    """docs/methods.md#known-lossy-mismatches: rrs on without-replacement drafts is lossy."""
    from exactspec.numpy_backend.harness import goodness_of_fit

    rng = np.random.default_rng(8)
    # exact law of this mismatch here: (10/19, 4/19, 5/19) instead of (6/19, 4/19, 9/19)
    p, q = np.array([6, 4, 9]) / 19, np.array([2, 9, 1]) / 12
    drafts = draft_wor(q, 2, rng, n=20_000)
    tokens, _ = verify_rrs(p, q, drafts, rng)
    assert not goodness_of_fit(np.bincount(tokens, minlength=3), p).consistent


# -- the command-line functions ---------------------------------------------------------------

def _float_keys_only(obj):
    for key, value in obj.items():
        if isinstance(value, float):
            assert key.endswith("_float"), key
    assert "lossless" not in obj


def test_optimal_float_is_json_ready_and_matches_exact():
    p, q = Dist.parse("1/2,3/10,1/5", labels="abc"), Dist.parse("1/5,1/5,3/5", labels="abc")
    out = optimal_float(p, q, 2)
    json.dumps(out)
    _float_keys_only(out)
    assert out["exact"] is False and out["backend"] == "numpy"
    assert set(out["a_star_float"]) == {"a", "b", "c"}
    assert agrees(out["alpha_star_float"], F(21, 25), 1e-15)
    assert agrees(out["rrs_acceptance_float"], F(19, 25), 1e-15)
    assert optimal_float(p, q, 2, method="sorted")["alpha_star_float"] == out["alpha_star_float"]


def test_optimal_float_at_fifty_thousand_tokens():
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(50_000) * 0.3), rng.dirichlet(np.ones(50_000) * 0.3)
    out = optimal_float(p.tolist(), q.tolist(), 4)
    assert len(out["a_star_float"]) == 50_000
    assert abs(sum(out["a_star_float"].values()) - out["alpha_star_float"]) < 1e-12
    with pytest.raises(InvalidInput, match="not 1"):
        optimal_float(p * 2, q, 4, normalize=False)


@pytest.mark.parametrize("method,k", [("sps", 1), ("rrs", 3), ("rrs-wor", 2), ("naive", 1),
                                      ("top1", 1)])
def test_verify_float_methods(method, k):
    out = verify_float(method, SEED_P, SEED_Q, k, samples=20_000)
    json.dumps(out)
    _float_keys_only(out)
    exact = {("sps", 1): F(3, 5), ("rrs", 3): F(207, 250), ("naive", 1): F(1),
             ("top1", 1): F(1, 5)}
    if method == "rrs-wor":
        assert abs(out["acceptance_float"] - 0.9) < 5 * out["acceptance_stderr_float"]
    else:
        assert agrees(out["acceptance_float"], exact[method, k], 1e-15)
    if method in ("naive", "top1"):
        assert out["bias_float"] > 0


def test_simulate_and_compare_float():
    sim = simulate_float("rrs", SEED_P, SEED_Q, 2, n=20_000, seed=1)
    json.dumps(sim)
    _float_keys_only(sim)
    lo, hi = sim["acceptance_interval_float"]
    assert lo < 0.76 < hi and sum(sim["counts"].values()) == 20_000
    cmp = compare_float(SEED_P, SEED_Q, 2)
    assert agrees(cmp["alpha_star_float"], F(21, 25), 1e-15)
    assert agrees(cmp["methods"][0]["ratio_to_optimal_float"], F(19, 21), 1e-15)


# -- invalid input ----------------------------------------------------------------------------

@pytest.mark.parametrize("call,error,match", [
    (lambda: optimum_sorted([0.5, -0.1], [0.5, 0.5], 2), InvalidInput, "negative"),
    (lambda: optimum_bucketed([0.5, np.nan], [0.5, 0.5], 2), NotExact, "finite"),
    (lambda: rrs_acceptance([0.5, 0.5], [0.2, 0.3, 0.5], 2), InvalidInput, "3 entries"),
    (lambda: optimum_sorted([0.5, 0.5], [0.5, 0.5], 0), InvalidInput, "k=0"),
    (lambda: optimum_bucketed([0.0, 0.0], [0.5, 0.5], 1), InvalidInput, "sums to 0"),
    (lambda: one_draft_acceptance([], []), InvalidInput, "empty"),
    (lambda: optimum_bucketed([0.5, 0.5], [0.5, 0.5], 2, bits=40), InvalidInput, "bits"),
    (lambda: sample("nope", SEED_P, SEED_Q, 2, np.random.default_rng()), InvalidInput, "nope"),
    (lambda: sample("sps", SEED_P, SEED_Q, 2, np.random.default_rng()), InvalidInput, "k = 1"),
    (lambda: verify_float("kseq", SEED_P, SEED_Q, 2), InvalidInput, "exact engine"),
    (lambda: optimal_float(np.ones((2, 3)), np.ones((2, 3)), 2), InvalidInput, "one row"),
])
def test_invalid_inputs_name_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("method", ["key", "key-lazy"])
def test_key_sampler_through_the_common_sampler_contract(method):
    """KEY's float sampler: output law p and acceptance alpha* (exact values from the engine),
    within sampling error (n = 200,000: 4 standard errors is below 0.005)."""
    from fractions import Fraction as F

    from exactspec import Dist, verify
    from exactspec.numpy_backend import sample

    p = Dist([F(1, 2), F(1, 5), F(3, 10), F(0)])
    q = Dist([F(1, 20), F(1, 20), F(1, 10), F(4, 5)])
    exact = verify("key", p, q, 3)
    n = 200_000
    s = sample(method, np.array([float(v) for v in p.probs]),
               np.array([float(v) for v in q.probs]), 3, np.random.default_rng(7), n)
    tokens = np.asarray(s.tokens).ravel()
    counts = np.bincount(tokens, minlength=4) / n
    assert np.max(np.abs(counts - [float(v) for v in p.probs])) < 0.005
    assert abs(np.mean(s.accepted) - float(exact.acceptance)) < 0.005


# -- realistic rows: softmax of Gaussian logits, the draft's logits with noise ---------------

def gaussian_pair(n, temperature, seed, noise=1.0):
    """Softmax rows of Gaussian logits with a lifted head; the draft is the target's logits
    plus Gaussian noise (every value distinct)."""
    rng = np.random.default_rng(seed)
    logits = 2.0 * rng.standard_normal(n)
    logits[:16] += 8.0 * rng.random(16)
    draft = logits + noise * rng.standard_normal(n)

    def softmax(z):
        e = np.exp((z - z.max()) / temperature)
        return e / e.sum()
    return softmax(logits), softmax(draft)


@pytest.mark.parametrize("temperature,k", [(0.5, 4), (1.0, 1), (1.0, 4), (2.0, 4),
                                           (0.7, 8), (1.0, 12)])
@pytest.mark.usefixtures("path")
def test_realistic_rows_agree_with_exact_twins(temperature, k):
    p, q = gaussian_pair(3000, temperature, seed=int(temperature * 10) + k)
    assert np.unique(p).size == p.size and np.unique(q / p).size == p.size
    P, Q = exact_pair(p, q)
    for fl in (optimum_sorted(p, q, k), optimum_bucketed(p, q, k)):
        assert_optimum_matches(fl, 0, P, Q, k)


@pytest.mark.usefixtures("path")
def test_realistic_rows_with_ties_and_zeros_agree_with_exact_twins():
    p, q = gaussian_pair(2500, 0.8, seed=3)
    p[100:130] = 0.0                                      # p = 0: last, a* = 0
    q[200:260] = 0.0                                      # q = 0: a* = 0
    p[300:400], q[300:400] = p[300], q[300]               # one exact tie block
    q[400:500] = p[400:500] * 0.25                        # a tie block at ratio 1/4
    q[500:520] = p[500:520] * 0.25 * (1 + 2.0 ** -40)     # same truncated key, larger ratio
    q[520:540] = p[520:540] * 0.25 * (1 - 2.0 ** -52)     # one ulp below
    for k in (2, 4, 10):
        P, Q = exact_pair(p, q)
        for fl in (optimum_sorted(p, q, k), optimum_bucketed(p, q, k)):
            assert_optimum_matches(fl, 0, P, Q, k)
        assert tuple(optimum_sorted(p, q, k).order[0].tolist()) == optimum_exact(P, Q, k).order


def test_packed_order_is_the_exact_ratio_order_on_realistic_rows():
    rows_p, rows_q = zip(*(gaussian_pair(5000, t, seed=s) for s, t in enumerate((0.5, 1, 2))))
    p, q = np.stack(rows_p), np.stack(rows_q)
    q[1, :50] = p[1, :50]                                 # ties at ratio 1 in one row
    order = ratio_order(p, q)
    for b in range(3):
        P, Q = exact_pair(p[b], q[b])
        assert tuple(order[b].tolist()) == optimum_exact(P, Q, 1).order


@pytest.mark.usefixtures("path")
def test_bucketed_scratch_rows_reused_across_sizes_and_threads_give_identical_results():
    """The bucketed routine keeps its working rows between calls (per thread): results do not
    depend on what ran before, on the row size of the previous call, or on another thread
    running at the same time (bit for bit)."""
    import threading

    rows = [gaussian_pair(n, t, seed=s) for s, (n, t) in
            enumerate([(3000, 0.5), (700, 1.0), (5000, 0.7), (64, 2.0)])]
    first = [optimum_bucketed(p, q, 4) for p, q in rows]
    for order in ([3, 2, 1, 0], [2, 0, 3, 1]):
        for i in order:
            again = optimum_bucketed(*rows[i], 4)
            assert np.array_equal(again.a_star, first[i].a_star)
            assert np.array_equal(again.alpha_star, first[i].alpha_star)
    results = {}

    def work(i):
        for _ in range(5):
            results[i] = optimum_bucketed(*rows[i], 4)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(rows))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(len(rows)):
        assert np.array_equal(results[i].a_star, first[i].a_star)
    P, Q = exact_pair(*rows[0])
    assert_optimum_matches(first[0], 0, P, Q, 4)


@pytest.mark.parametrize("k", [1, 12])
@pytest.mark.usefixtures("path")
def test_bucketed_ties_zeros_and_near_ties_at_k_1_and_12(k):
    p, q = gaussian_pair(2500, 0.8, seed=5)
    p[100:130] = 0.0
    q[200:260] = 0.0
    p[300:400], q[300:400] = p[300], q[300]
    q[500:520] = p[500:520] * 0.25 * (1 + 2.0 ** -40)
    q[520:540] = p[520:540] * 0.25 * (1 - 2.0 ** -52)
    P, Q = exact_pair(p, q)
    assert_optimum_matches(optimum_bucketed(p, q, k), 0, P, Q, k)



@pytest.mark.usefixtures("path")
def test_bucketed_run_longer_than_the_integer_prefix_sums_take(monkeypatch):
    """A run longer than the integer running sums allow falls back to float running sums
    (same tolerance against the exact twin)."""
    import exactspec.numpy_backend.bucketed as optimum_module

    p, q = gaussian_pair(3000, 0.5, seed=8)
    before = optimum_bucketed(p, q, 4)
    monkeypatch.setattr(optimum_module, "INT_PREFIX_MAX", 16)
    after = optimum_bucketed(p, q, 4)
    assert int(after.sorted_tokens[0]) > 16
    P, Q = exact_pair(p, q)
    assert_optimum_matches(after, 0, P, Q, 4)
    assert np.allclose(after.a_star, before.a_star, rtol=0, atol=1e-15)


# -- the walk along the sorted run: record chains, windows, restarts ----------------------

def _watch_the_walk(monkeypatch):
    """Wrap the bucketed walk's chain tests to record the lengths they return."""
    import exactspec.numpy_backend.bucketed as optimum_module

    numpy_path_only(monkeypatch)
    log = {"per_bucket": [], "per_token": []}
    per_bucket, per_token = optimum_module._sure_chain, optimum_module._chain_length

    def per_bucket_logged(*args):
        log["per_bucket"].append(per_bucket(*args))
        return log["per_bucket"][-1]

    def per_token_logged(*args):
        log["per_token"].append(per_token(*args))
        return log["per_token"][-1]

    monkeypatch.setattr(optimum_module, "_sure_chain", per_bucket_logged)
    monkeypatch.setattr(optimum_module, "_chain_length", per_token_logged)
    return optimum_module, log


@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_bucketed_record_chain_on_peaked_rows_agrees_with_the_exact_twin(monkeypatch, k):
    """Softmax rows at temperature 0.5: the sorted run is mostly one chain of records (its
    ``a*`` the steps of ``g_k``), most of it proved per bucket; far-tail tokens have steps
    that are all cancellation and are proved by the tangent test."""
    optimum_module, log = _watch_the_walk(monkeypatch)
    monkeypatch.setattr(optimum_module, "_SHORT_RUN", 16)   # a long run at a test's size
    p, q = gaussian_pair(6000, 0.5, seed=21)
    fl = optimum_bucketed(p, q, k)
    P, Q = exact_pair(p, q)
    assert_optimum_matches(fl, 0, P, Q, k)
    assert log["per_bucket"] and 2 * log["per_bucket"][0] > int(fl.sorted_tokens[0])


def test_bucketed_walk_restarts_its_chain_after_a_token_that_is_not_a_record(monkeypatch):
    """Heavy draft tokens inside the run break the chain (``h`` rises) and the walk follows
    ``h`` until a clear record, then chains again; small windows make it happen at 300
    tokens.  Same values as the exact twin either way."""
    optimum_module, log = _watch_the_walk(monkeypatch)
    monkeypatch.setattr(optimum_module, "_WINDOW", 4)
    monkeypatch.setattr(optimum_module, "_SHORT_RUN", 16)
    restarted = 0
    for seed in (71, 161, 167):
        p, q = gaussian_pair(300, 1.0 if seed == 71 else 0.7, seed=seed)
        heavy = np.random.default_rng(seed).choice(300, 3, replace=False)
        q[heavy] *= 200
        p[heavy] *= 100
        log["per_token"].clear()
        fl = optimum_bucketed(p, q, 4)
        restarted += len(log["per_token"]) >= 3
        P, Q = exact_pair(p, q)
        assert_optimum_matches(fl, 0, P, Q, 4)
    assert restarted >= 2


def test_a_chain_test_without_its_slack_is_caught(monkeypatch):
    """The tests above can fail: a tangent test that lets through tokens up to 1.5 times over
    the line (slack -1/3) takes non-records into the chain, and ``a*`` then differs from the
    exact twin's."""
    import exactspec.numpy_backend.bucketed as optimum_module

    numpy_path_only(monkeypatch)
    p, q = gaussian_pair(6000, 0.5, seed=21)
    P, Q = exact_pair(p, q)
    monkeypatch.setattr(optimum_module, "_TANGENT_SLACK", -1 / 3)
    monkeypatch.setattr(optimum_module, "_SHORT_RUN", 16)
    with pytest.raises(AssertionError):
        assert_optimum_matches(optimum_bucketed(p, q, 4), 0, P, Q, 4)


def test_bucketed_walks_long_runs_by_chains_and_follows_short_runs_whole(monkeypatch):
    """By default a run of more than ``_SHORT_RUN`` tokens is walked by record chains, a
    shorter one followed whole; both agree with the exact twin."""
    optimum_module, log = _watch_the_walk(monkeypatch)
    for n, chained in ((40_000, True), (3000, False)):
        log["per_bucket"].clear()
        p, q = gaussian_pair(n, 0.5, seed=3)
        fl = optimum_bucketed(p, q, 4)
        assert (int(fl.sorted_tokens[0]) > optimum_module._SHORT_RUN) == chained
        assert bool(log["per_bucket"]) == chained
        P, Q = exact_pair(p, q)
        assert_optimum_matches(fl, 0, P, Q, 4)


# -- numba's compiled loops -----------------------------------------------------------------

@pytest.mark.parametrize("k", [1, 2, 3, 4, 8])
def test_compiled_loops_agree_with_the_numpy_passes_on_realistic_rows(k):
    """The compiled path sorts the same tokens (the buckets' masses are the same bits) and
    agrees with the NumPy passes within a few roundings, on rows whose run is mostly one
    chain of records (T = 0.5) and on rows with ties, zeros and near ties."""
    if not _kernels.available():
        pytest.skip("numba's compiled loops are not available (pip install 'exactspec[fast]'; "
                    "EXACTSPEC_NO_NUMBA unset)")
    p, q = gaussian_pair(20_000, 0.5, seed=k)
    p2, q2 = gaussian_pair(20_000, 0.8, seed=5)
    p2[100:130] = 0.0
    q2[200:260] = 0.0
    p2[300:400], q2[300:400] = p2[300], q2[300]
    q2[500:520] = p2[500:520] * 0.25 * (1 + 2.0 ** -40)
    p, q = np.stack([p, p2]), np.stack([q, q2])
    fast = optimum_bucketed(p, q, k, compiled=True)
    slow = optimum_bucketed(p, q, k, compiled=False)
    np.testing.assert_array_equal(fast.sorted_tokens, slow.sorted_tokens)
    assert int(fast.sorted_tokens[0]) > 5000
    np.testing.assert_allclose(fast.alpha_star, slow.alpha_star, rtol=0, atol=8 * 2.0 ** -53)
    np.testing.assert_allclose(fast.a_star, slow.a_star, rtol=0, atol=(16 * k + 30) * 2.0 ** -53)
    P, Q = exact_pair(p2, q2)
    assert_optimum_matches(fast, 1, P, Q, k)


def test_compiled_loops_are_switched_by_the_argument_and_the_environment(monkeypatch):
    p, q = gaussian_pair(500, 1.0, seed=2)
    with pytest.raises(InvalidInput, match="compiled"):
        optimum_bucketed(p, q, 4, compiled="yes")
    with pytest.raises(InvalidInput, match="k <= 8"):
        optimum_bucketed(p, q, 9, compiled=True)
    monkeypatch.setattr(_kernels, "_LOADED", [])
    monkeypatch.setenv("EXACTSPEC_NO_NUMBA", "1")
    assert not _kernels.available()
    with pytest.raises(InvalidInput, match="EXACTSPEC_NO_NUMBA"):
        optimum_bucketed(p, q, 4, compiled=True)
    off = optimum_bucketed(p, q, 4)                      # the NumPy passes
    P, Q = exact_pair(p, q)
    assert_optimum_matches(off, 0, P, Q, 4)


def test_a_small_call_does_not_load_numba_and_a_large_one_does():
    """Loading numba costs about half a second per process: by default only a call with at
    least ``COMPILED_MIN_TOKENS`` tokens loads it (and later calls then use it)."""
    import subprocess
    import sys

    script = ("import sys, numpy as np\n"
              "from exactspec.numpy_backend import optimum_bucketed\n"
              "from exactspec.numpy_backend.optimum import COMPILED_MIN_TOKENS\n"
              "from exactspec.numpy_backend import _kernels\n"
              "rng = np.random.default_rng(0)\n"
              "optimum_bucketed(rng.random(1000), rng.random(1000), 4)\n"
              "print('numba' in sys.modules, _kernels.loaded())\n"
              "n = COMPILED_MIN_TOKENS // 4\n"
              "optimum_bucketed(rng.random((4, n)), rng.random((4, n)), 4)\n"
              "print(_kernels.loaded() == _kernels.available())\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False", "True"]


# -- rows at any scale, and k without bound ---------------------------------------------------
SCALES = [1e-300, 1e-200, 2.0 ** -1000, 1.0, 1e200, 1e300]


@pytest.mark.usefixtures("path")
@pytest.mark.parametrize("k", [1, 2, 5])
def test_optimum_of_rows_at_extreme_scales_equals_the_exact_optimum(k):
    """``p * 1e-300`` against ``q * 1e300`` (and every other pair of scales): the rows are
    rescaled by powers of two before ``q/p``, so the optimum is that of the same rows
    converted exactly, never ``alpha* = 1`` with ``a* = p`` or a NumPy error."""
    rng = np.random.default_rng(99)
    p0, q0 = rng.random(25), rng.random(25)
    p0[3], q0[7] = 0.0, 0.0
    for sp in SCALES:
        for sq in SCALES:
            p, q = p0 * sp, q0 * sq
            P, Q = exact_pair(p, q)
            assert_optimum_matches(optimum_sorted(p, q, k), 0, P, Q, k)
            assert_optimum_matches(optimum_bucketed(p, q, k), 0, P, Q, k)
    # the failing cases of before, by their exact values: not 1
    ex = optimum_exact(*exact_pair(p0, q0), k)
    assert ex.alpha_star < 1
    for sp, sq in ((1e-300, 1e300), (1e300, 1e-300)):
        assert agrees(alpha_star(p0 * sp, q0 * sq, k), ex.alpha_star, ALPHA_STAR_ATOL)


def test_rows_whose_sum_overflows_or_is_subnormal():
    """A row of finite entries whose float sum overflows is rescaled, not called infinite; a
    subnormal row is rescaled exactly; an all-zero row is refused in one line."""
    p = np.array([1e308, 1e308, 5e307])
    q = np.array([1.0, 2.0, 3.0])
    P, Q = exact_pair(p / 4, q)                          # the same row, exactly, / 4
    assert_optimum_matches(optimum_bucketed(p, q, 2), 0, P, Q, 2)
    tiny = np.array([3.0, 1.0, 0.0]) * 2.0 ** -1070    # subnormal entries, exact multiples
    P, Q = exact_pair(np.array([3.0, 1.0, 0.0]), q)
    assert_optimum_matches(optimum_sorted(tiny, q, 3), 0, P, Q, 3)
    with pytest.raises(InvalidInput, match="sums to 0"):
        optimum_bucketed(np.zeros(3), q, 2)
    with pytest.raises(NotExact, match="not a finite number"):
        optimum_bucketed(np.array([np.inf, 1.0, 1.0]), q, 2)


def test_normalize_false_reads_the_sum_of_the_row_as_given():
    """A row at 2^-1001 rescales to sum 1 inside; without --normalize it is still refused by
    its own sum."""
    with pytest.raises(InvalidInput, match="e-30"):
        optimal_float(np.array([2.0 ** -1001] * 2), np.array([0.5, 0.5]), 1, normalize=False)
    assert optimal_float(np.array([2.0 ** -1001] * 2), np.array([0.5, 0.5]), 1)[
        "alpha_star_float"] == 1.0


def test_k_of_a_billion_finishes_or_is_refused_up_front():
    """k = 10^9: the optimum (g_k increments in closed form), RRS's acceptance (the residual
    stops changing, its factor raised to the drafts left) finish at once; the listing of the
    factors and sampling are refused with their estimates."""
    from exactspec.core.errors import TooLarge
    from exactspec.numpy_backend._arrays import g_increment

    p, q = np.array([0.5, 0.5]), np.array([0.25, 0.75])
    # exactly: TV(p, q) = 1/4, then r_1 = (1, 0) and TV = 3/4 for every later draft, so RRS
    # accepts with probability 1 - (1/4)(3/4)^(k-1) -> 1 (and the exact recursion agrees)
    assert float(rrs_acceptance(p, q, 10**9)[0]) == 1.0
    closed = 1 - F(1, 4) * F(3, 4) ** 39
    assert closed == 1 - tiny_rrs_rejection(*exact_pair(p, q), 40)
    assert agrees(rrs_acceptance(p, q, 40)[0], closed, RRS_ATOL)
    assert float(optimum_bucketed(p, q, 10**9).alpha_star[0]) == 1.0
    assert verify_float("rrs", p, q, 10**9)["acceptance_float"] == 1.0
    assert optimal_float(p, q, 10**9)["alpha_star_float"] == 1.0
    with pytest.raises(TooLarge, match="1,000,000,000 numbers"):
        rrs_rejection_factors(p, q, 10**9)
    with pytest.raises(TooLarge, match="draft tokens"):
        simulate_float("rrs", p, q, 10**9, n=100)
    # residuals that keep changing: refused once past the budget, with the estimate
    rng = np.random.default_rng(0)
    with pytest.raises(TooLarge, match="row-token steps"):
        rrs_acceptance(rng.random(3000), rng.random(3000), 10**9)
    # the closed form of the increments against Horner's scheme, past k = 64
    before, step = np.array([0.0, 0.1, 0.5, 0.999]), np.array([1e-12, 0.2, 0.3, 0.001])
    for k in (65, 200):
        exact = [(1 - F(b)) ** k - (1 - F(b) - F(s)) ** k for b, s in zip(before, step)]
        for got, want in zip(g_increment(k, before, step), exact):
            assert agrees(got, want, 1e-300, 1e-12)


@pytest.mark.slow
def test_optimal_text_at_full_vocabulary(tmp_path):
    """``exactspec optimal --backend numpy`` on one 152,064-token row prints its text, the
    row elided.  (The table once took minutes: that its cost is linear in the vocabulary is
    counted, not timed, by test_optimal_text_table_is_linear_in_the_vocabulary in
    test_hostile.py.)"""
    import subprocess
    import sys
    from pathlib import Path

    rng = np.random.default_rng(0)
    n = 152_064
    p, q = rng.dirichlet(np.full(n, 0.1)), rng.dirichlet(np.full(n, 0.1))
    (tmp_path / "p.json").write_text(json.dumps(p.tolist()))
    (tmp_path / "q.json").write_text(json.dumps(q.tolist()))
    done = subprocess.run([sys.executable, "-m", "exactspec", "optimal", "--backend", "numpy",
                           "--p", f"@{tmp_path / 'p.json'}", "--q", f"@{tmp_path / 'q.json'}",
                           "--k", "4"], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0 and "alpha_star_float" in done.stdout, done.stderr
    assert f"{{... {n} tokens}}" in done.stdout
