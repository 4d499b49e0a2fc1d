"""The sweep's shared pass (one sort per row for every ``k`` and method) against the per-``k``
routines of the NumPy backend and against the exact engine on the same float rows.

Floats are the subject: the stated tolerances are ``1e-13`` for ``alpha*``, RRS and one draft
(both ways), ``1e-12`` for K-SEQ against the per-``k`` bisection, ``1e-11`` for K-SEQ against
its exact twin (a ``rho`` within ``1e-12`` of ``rho*``), and ``1e-13`` for KEY's figure
(``alpha*``) against the float placement's ``sum min(w, a*)``.
"""

from __future__ import annotations

import numpy as np
import pytest

from exactspec.sweep.exact_check import exact_figures
from exactspec.sweep.figures import block_figures, chunk_rows, shared_figures

METHODS = ["rrs", "kseq", "key", "optimal"]
KS = [1, 2, 3, 4, 8]
TOL = {"alpha_one": 1e-13, "alpha_star": 1e-13, "acc_optimal": 1e-13, "acc_rrs": 1e-13,
       "acc_kseq": 1e-12, "acc_key": 1e-13}


def _softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def _rows(rng, n, vocab, kind):
    """Target and draft rows: Gaussian logits; float16 logits (many equal ratios); rows with
    zeros in p, in q and in both."""
    t = rng.normal(0, rng.uniform(0.5, 4), (n, vocab))
    d = 0.8 * t + rng.normal(0, rng.uniform(0.2, 2), (n, vocab))
    if kind == "float16":
        t = t.astype(np.float16).astype(np.float64)
        d = np.round(d).astype(np.float16).astype(np.float64)
    P, Q = _softmax(t), _softmax(d)
    if kind == "zeros":
        P[:, : vocab // 3] = 0.0
        Q[:, vocab // 4: vocab // 2] = 0.0
        P /= P.sum(axis=-1, keepdims=True)
        Q /= Q.sum(axis=-1, keepdims=True)
    return P, Q


@pytest.mark.parametrize("kind", ["gauss", "float16", "zeros"])
@pytest.mark.parametrize("vocab", [3, 40, 2000])
def test_shared_pass_matches_the_per_k_routines(kind, vocab):
    rng = np.random.default_rng(vocab * 7 + len(kind))
    P, Q = _rows(rng, 5, vocab, kind)
    fast = block_figures(P, Q, KS, METHODS, shared=True)
    slow = block_figures(P, Q, KS, METHODS, shared=False)
    assert fast.keys() == slow.keys()
    for name, tol in TOL.items():
        diff = np.max(np.abs(fast[name] - slow[name]))
        assert diff <= tol, (name, diff)
    assert np.array_equal(fast["k"], slow["k"])


def test_shared_pass_against_the_exact_engine():
    rng = np.random.default_rng(3)
    for kind in ("gauss", "float16", "zeros"):
        P, Q = _rows(rng, 1, 12, kind)
        ks = [1, 4]
        got = shared_figures(P, Q, ks, METHODS)
        for b in range(P.shape[0]):
            exact = exact_figures(P[b], Q[b], ks, METHODS)
            assert abs(got["alpha_one"][b] - float(exact[0]["alpha_one"])) <= 1e-13
            for j in range(len(ks)):
                for name in ("alpha_star", "acc_rrs", "acc_key", "acc_optimal"):
                    assert abs(got[name][b, j] - float(exact[j][name])) <= 1e-13, name
                assert abs(got["acc_kseq"][b, j] - float(exact[j]["acc_kseq"])) <= 1e-11


def test_chunks_do_not_change_the_figures():
    """Rows cut into chunks give the same figures, to the bit, as each row alone."""
    rng = np.random.default_rng(5)
    P, Q = _rows(rng, 2 * chunk_rows(40_000) + 3, 40_000, "float16")
    whole = shared_figures(P, Q, [1, 4], METHODS)
    for b in (0, P.shape[0] - 1):
        alone = shared_figures(P[b:b + 1], Q[b:b + 1], [1, 4], METHODS)
        for name, values in alone.items():
            assert np.array_equal(values[0], whole[name][b]), name


def test_exact_checks_for_every_k_match_the_per_k_twins():
    """The spot checks' one-sort ``alpha*`` and one-recursion RRS for every ``k`` against
    :func:`optimum_common_denominator` and :func:`rrs_acceptance_integer` per ``k``."""
    from exactspec.bounds.closed_forms import optimum_common_denominator
    from exactspec.sweep.exact_check import (_as_dist, alpha_star_integer, integer_row,
                                             rrs_acceptance_integer, rrs_acceptances_integer)

    rng = np.random.default_rng(11)
    for kind in ("gauss", "float16", "zeros"):
        P, Q = _rows(rng, 2, 30, kind)
        for b in range(2):
            Np, Sp = integer_row(P[b])
            Nq, Sq = integer_row(Q[b])
            alphas = alpha_star_integer(Np, Sp, Nq, Sq, KS)
            rrs = rrs_acceptances_integer(Np, Sp, Nq, Sq, KS)
            for j, k in enumerate(KS):
                opt = optimum_common_denominator(_as_dist(Np, Sp), _as_dist(Nq, Sq), k)
                assert alphas[j] == opt.alpha_star
                assert rrs[j] == rrs_acceptance_integer(Np, Sp, Nq, Sq, k)
    # RRS that accepts surely after one draft (q = p): every later k accepts too
    assert rrs_acceptances_integer([1, 1], 2, [1, 1], 2, [1, 3]) == [1, 1]


def test_exact_checks_at_candidate_states_and_thresholds():
    """The spot checks' shortcuts, exactly: ``alpha*`` at the candidate states equals ``alpha*``
    over every state, RRS by residual thresholds equals the recursion, and the NumPy-sorted
    exact order equals the all-``Fraction`` one."""
    from exactspec.bounds.closed_forms import exact_ratio_order
    from exactspec.sweep.exact_check import (alpha_star_integer, candidate_states,
                                             exact_order, integer_row,
                                             rrs_acceptances_integer, rrs_thresholds_integer)

    rng = np.random.default_rng(13)
    for kind in ("gauss", "float16", "zeros"):
        P, Q = _rows(rng, 2, 300, kind)
        for b in range(2):
            Np, Sp = integer_row(P[b])
            Nq, Sq = integer_row(Q[b])
            order = exact_order(P[b], Q[b], Np, Nq)
            assert order == exact_ratio_order(Np, Nq)
            states = candidate_states(P[b], Q[b], KS, order)
            assert sum(map(len, states)) < 300 * len(KS) // 4    # a shortcut indeed
            assert (alpha_star_integer(Np, Sp, Nq, Sq, KS, order, states)
                    == alpha_star_integer(Np, Sp, Nq, Sq, KS, order))
            assert (rrs_thresholds_integer(Np, Sp, Nq, Sq, KS, order)
                    == rrs_acceptances_integer(Np, Sp, Nq, Sq, KS))


def _near_tie_rows(rng, vocab):
    """Rows where many tokens share a float ratio ``q/p`` without sharing the exact one: ``q``
    a rounded multiple of ``p`` (the float quotient then equals the multiplier)."""
    p = rng.uniform(0.5, 1.5, vocab)
    q = p * rng.choice([0.5, 0.75, 1.25, 3.0], vocab) * (1 + rng.integers(-2, 3, vocab) * 2e-16)
    return p / p.sum(), q / q.sum()


def test_numpy_exact_route_equals_the_python_integer_route():
    """The spot checks' NumPy route (:class:`DyadicRow`, :func:`dyadic_order`,
    :func:`overlap_split`) gives the same integers, the same exact order and the same exact
    figures as one Python integer per token (``python=True``), on Gaussian and float16 rows,
    rows with zeros, rows of near ties (equal float ratios, unequal exact ones) and a row with
    values too small for the float products (the Python order as a fallback)."""
    from fractions import Fraction

    from exactspec.sweep.exact_check import (DyadicRow, dyadic_order, exact_order,
                                             integer_row, overlap_integer, overlap_split)

    rng = np.random.default_rng(17)
    cases = [_rows(rng, 2, 2000, kind) for kind in ("gauss", "float16", "zeros")]
    cases.append(_near_tie_rows(rng, 3000))
    tiny_p, tiny_q = _rows(rng, 1, 500, "gauss")
    tiny_p[0, :3] = [2.0 ** -600, 2.0 ** -1074, 2.0 ** -1000]        # subnormal included
    cases.append((tiny_p, tiny_q))
    doubted = 0
    for P, Q in cases:
        for p, q in zip(np.atleast_2d(P), np.atleast_2d(Q)):
            Np, Sp = integer_row(p)
            Nq, Sq = integer_row(q)
            dp, dq = DyadicRow(p), DyadicRow(q)
            assert [dp[i] for i in range(p.size)] == Np and dp.total == Sp
            order = dyadic_order(p, q, dp, dq)
            assert order.tolist() == exact_order(p, q, Np, Nq)
            A, B = dp.prefix(order), dq.prefix(order)
            for t in (0, 1, p.size // 3, p.size - 1, p.size):
                assert A[t] == sum(Np[i] for i in order[:t])
                assert B[t] == sum(Nq[i] for i in order[:t])
            assert overlap_split(dp, Sp, dq, Sq, order, A, B) == overlap_integer(Np, Sp, Nq, Sq)
            assert (exact_figures(p, q, KS, ["rrs", "key", "optimal"])
                    == exact_figures(p, q, KS, ["rrs", "key", "optimal"], python=True))
            # pairs the float keys leave equal that are not exact ties: the exact fallback ran
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                r = np.where(p > 0, q / np.where(p > 0, p, 1), np.inf)
            a, b = order[:-1], order[1:]
            doubted += sum(1 for i, j in zip(a.tolist(), b.tolist())
                           if p[i] > 0 and r[i] == r[j]
                           and Fraction(Nq[i], Np[i]) != Fraction(Nq[j], Np[j]))
    assert doubted > 0
