"""Per-position figures of a sweep, in float64, for a block of probability rows.

For each row and each ``k``: ``alpha*`` (:func:`~exactspec.numpy_backend.optimum_bucketed`),
each method's acceptance, the one-draft acceptance, RRS's gap ``alpha* - alpha_RRS`` and its
rejection ratio ``(1 - alpha_RRS) / (1 - alpha*)`` (NaN where ``alpha* = 1``), and the
expected tokens per target call of a chain of ``gamma`` drafting steps,
``(1 - a^(gamma+1)) / (1 - a)`` for an acceptance ``a`` per step.

How each acceptance is computed (every one but ``rrs-wor`` is a formula, exact up to float
rounding; each has an exact twin in :mod:`exactspec.sweep.exact_check`):

=========== =================================================================================
method      float computation
=========== =================================================================================
``rrs``     ``1 - prod_i TV(r_{i-1}, q)`` (:func:`~exactspec.numpy_backend.rrs_acceptance`)
``optimal`` ``alpha*`` itself (the optimal verifier attains it)
``key``     ``sum_t min(w_t, a*_t)`` from KEY's float placement
            (:func:`~exactspec.numpy_backend.key_placement`): the chance that the selected
            draft is accepted; ``alpha*`` in exact arithmetic
``kseq``    ``1 - (1 - beta(rho*))^k`` at K-SEQ's ``rho*`` (:func:`kseq_float`)
``rrs-wor`` a Monte Carlo estimate from the NumPy sampler (``samples`` draws per row; its
            standard error is the ``_se`` column)
=========== =================================================================================

>>> import numpy as np
>>> P, Q = np.array([[0.5, 0.3, 0.2]]), np.array([[0.2, 0.2, 0.6]])
>>> cols = block_figures(P, Q, [2], ["rrs", "optimal", "kseq"], gamma=3)
>>> [round(float(cols[c][0]), 12) for c in ("alpha_star", "acc_rrs", "gap_rrs")]
[0.84, 0.76, 0.08]
"""

from __future__ import annotations

import numpy as np

from ..core.errors import InvalidInput
from ..numpy_backend import (key_placement, one_draft_acceptance, optimum_bucketed,
                             rrs_acceptance, sample)

__all__ = ["METHODS", "column", "block_figures", "kseq_float", "tokens_per_call"]

#: The methods a sweep knows, in report order.
METHODS = ("rrs", "rrs-wor", "kseq", "key", "optimal")


def column(method: str) -> str:
    """The table column of a method's acceptance: ``acc_rrs_wor`` for ``rrs-wor``."""
    return "acc_" + method.replace("-", "_")


def tokens_per_call(a, gamma: int):
    """``(1 - a^(gamma+1)) / (1 - a)``: expected tokens per target call of a chain of
    ``gamma`` drafts accepted each with probability ``a`` (``gamma + 1`` at ``a = 1``).

    >>> tokens_per_call(np.array([0.5, 1.0]), 2).tolist()
    [1.75, 3.0]
    """
    a = np.asarray(a, dtype=np.float64)
    total = np.zeros_like(a)
    power = np.ones_like(a)
    for _ in range(gamma + 1):                           # 1 + a + ... + a^gamma
        total += power
        power = power * a
    return total


def kseq_float(P, Q, k: int):
    """K-SEQ's acceptance ``1 - (1 - beta(rho*))^k`` per row, ``beta(rho) = sum min(p/rho, q)``,
    ``rho*`` the smallest ``rho`` in ``[1, k]`` with ``1 - (1 - beta)^k <= rho beta``.

    One sort of ``p/q`` per row gives ``beta`` at every breakpoint; on the linear piece of
    ``beta`` (in ``1/rho``) that holds ``rho*`` the root is found by bisection.  The float
    twin of :func:`exactspec.methods.kseq.rho_star` with
    :func:`exactspec.bounds.closed_forms.kseq_acceptance`.

    >>> from fractions import Fraction
    >>> round(float(kseq_float(np.array([[0.5, 0.3, 0.2]]), np.array([[0.2, 0.2, 0.6]]), 2)[0]), 9)
    0.785329983
    """
    P = np.asarray(P, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    out = np.empty(P.shape[0])
    for b in range(P.shape[0]):                          # a loop over the batch only
        out[b] = _kseq_row(P[b], Q[b], k)
    return out


def _kseq_row(p, q, k):
    def gap(rho, beta):
        return 1 - (1 - beta) ** k - rho * beta

    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(q > 0, p / np.where(q > 0, q, 1.0), np.inf)
    order = np.argsort(ratio, kind="stable")
    rs = ratio[order]
    cp = np.cumsum(p[order])
    cq = np.cumsum(q[order])
    q_total = cq[-1]

    def pieces(rho):
        idx = np.searchsorted(rs, rho, side="right")
        a = np.where(idx > 0, cp[np.maximum(idx - 1, 0)], 0.0)
        bq = q_total - np.where(idx > 0, cq[np.maximum(idx - 1, 0)], 0.0)
        return a, np.maximum(bq, 0.0)

    a1, b1 = pieces(np.array([1.0]))
    beta1 = min(1.0, a1[0] + b1[0])
    if k == 1 or gap(1.0, beta1) <= 0:
        return 1 - (1 - beta1) ** k
    inner = rs[(rs > 1) & (rs < k)]
    cand = np.concatenate([inner, [float(k)]])
    a, bq = pieces(cand)
    beta = np.minimum(a / cand + bq, 1.0)
    j = int(np.argmax(gap(cand, beta) <= 0))             # g(k) <= 0 always (Bernoulli)
    lo = float(cand[j - 1]) if j > 0 else 1.0
    hi = float(cand[j])
    A, B = (x[0] for x in pieces(np.array([lo])))
    for _ in range(200):                                 # bisection on the linear piece
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if gap(mid, min(1.0, A / mid + B)) <= 0:
            hi = mid
        else:
            lo = mid
    beta_star = min(1.0, A / hi + B)
    return 1 - (1 - beta_star) ** k


def block_figures(P, Q, ks, methods, *, gamma: int = 4, samples: int = 1000,
                  seed: int = 0) -> dict:
    """The per-(row, k) figures of a block of normalised float64 rows, as columns.

    Rows come out in the order ``(row 0, k_1), (row 0, k_2), ..., (row 1, k_1), ...``.
    Columns: ``k``, ``alpha_one``, ``alpha_star``, one ``acc_<method>`` per method
    (``acc_rrs_wor_se`` beside ``rrs-wor``), ``gap_rrs`` and ``rejection_ratio_rrs`` when
    ``rrs`` is asked for, and ``tokens_per_call_<method>`` (and ``tokens_per_call_one``).
    """
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise InvalidInput(f"--methods: unknown {', '.join(unknown)} "
                           f"(choose from {', '.join(METHODS)})")
    P = np.asarray(P, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    n, nk = P.shape[0], len(ks)
    cols: dict[str, np.ndarray] = {"k": np.tile(np.asarray(ks, dtype=np.int64), n)}
    one = one_draft_acceptance(P, Q)
    cols["alpha_one"] = np.repeat(one, nk)
    per_k: dict[str, np.ndarray] = {"alpha_star": np.empty((n, nk))}
    for m in methods:
        per_k[column(m)] = np.empty((n, nk))
    if "rrs-wor" in methods:
        per_k["acc_rrs_wor_se"] = np.empty((n, nk))
    rng = np.random.default_rng(seed)
    for j, k in enumerate(ks):                           # a loop over k only
        alpha = optimum_bucketed(P, Q, k).alpha_star
        per_k["alpha_star"][:, j] = alpha
        if "optimal" in methods:
            per_k["acc_optimal"][:, j] = alpha
        if "rrs" in methods:
            per_k["acc_rrs"][:, j] = rrs_acceptance(P, Q, k)
        if "kseq" in methods:
            per_k["acc_kseq"][:, j] = kseq_float(P, Q, k)
        if "key" in methods:
            plan = key_placement(P, Q, k)
            per_k["acc_key"][:, j] = np.minimum(plan.w, plan.a_star).sum(axis=-1)
        if "rrs-wor" in methods:
            est, se = _rrs_wor_estimate(P, Q, k, samples, rng)
            per_k["acc_rrs_wor"][:, j], per_k["acc_rrs_wor_se"][:, j] = est, se
    for name, values in per_k.items():
        cols[name] = values.reshape(-1)
    if "rrs" in methods:
        cols["gap_rrs"] = cols["alpha_star"] - cols["acc_rrs"]
        with np.errstate(divide="ignore", invalid="ignore"):
            cols["rejection_ratio_rrs"] = np.where(
                cols["alpha_star"] < 1, (1 - cols["acc_rrs"]) / (1 - cols["alpha_star"]),
                np.nan)
    cols["tokens_per_call_one"] = tokens_per_call(cols["alpha_one"], gamma)
    for m in methods:
        cols["tokens_per_call_" + m.replace("-", "_")] = tokens_per_call(cols[column(m)], gamma)
    return cols


def _rrs_wor_estimate(P, Q, k, samples, rng):
    """Per row: the share of ``samples`` RRS-without-replacement runs that accept a draft, and
    its standard error.  A row whose draft can propose fewer than ``k`` tokens gets NaN."""
    est = np.full(P.shape[0], np.nan)
    support = (Q > 0).sum(axis=-1)
    for b in np.flatnonzero(support >= k):               # a loop over the batch only
        acc = sample("rrs-wor", P[b], Q[b], k, rng, n=samples).accepted
        est[b] = acc.mean()
    se = np.sqrt(np.maximum(est * (1 - est), 0.0) / samples)
    return est, se
