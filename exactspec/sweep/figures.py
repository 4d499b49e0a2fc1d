"""Per-position figures of a sweep, in float64, for a block of probability rows.

For each row and each ``k``: ``alpha*``, each method's acceptance, the one-draft acceptance,
RRS's gap ``alpha* - alpha_RRS`` and its rejection ratio ``(1 - alpha_RRS) / (1 - alpha*)``
(NaN where ``alpha* = 1``), and the expected tokens per target call of a chain of ``gamma``
drafting steps, ``(1 - a^(gamma+1)) / (1 - a)`` for an acceptance ``a`` per step.

Every figure but ``rrs-wor``'s comes from one sort of each row for every ``k``
(:func:`shared_figures`); the per-``k`` routines of :mod:`exactspec.numpy_backend` are the
reference it is tested against (``block_figures(..., shared=False)``).  Every one but
``rrs-wor`` is a formula, exact up to float rounding, with an exact twin in
:mod:`exactspec.sweep.exact_check`:

=========== =====================================================================================
method      float computation (shared pass; per-``k`` reference)
=========== =====================================================================================
``rrs``     ``1 - Z_k``, ``Z_k = prod_i TV(r_{i-1}, q)`` by residual thresholds
            (:func:`~exactspec.numpy_backend.rrs_acceptance`)
``optimal`` ``alpha*`` itself (the optimal verifier attains it;
            :func:`~exactspec.numpy_backend.optimum_bucketed`)
``key``     ``alpha*``, which KEY attains (the reference: ``sum_t min(w_t, a*_t)`` from KEY's
            float placement, :func:`~exactspec.numpy_backend.key_placement`, the chance that
            the selected draft is accepted, ``alpha*`` up to the placement's rounding)
``kseq``    ``1 - (1 - beta(rho*))^k`` at K-SEQ's ``rho*`` (:func:`kseq_float`)
``rrs-wor`` a Monte Carlo estimate from the NumPy sampler (``samples`` draws per row; its
            standard error is the ``_se`` column)
=========== =====================================================================================

>>> import numpy as np
>>> P, Q = np.array([[0.5, 0.3, 0.2]]), np.array([[0.2, 0.2, 0.6]])
>>> cols = block_figures(P, Q, [2], ["rrs", "optimal", "kseq"], gamma=3)
>>> [round(float(cols[c][0]), 12) for c in ("alpha_star", "acc_rrs", "gap_rrs")]
[0.84, 0.76, 0.08]
"""

from __future__ import annotations

import numpy as np

from ..core.errors import InvalidInput, did_you_mean
from ..numpy_backend import (key_placement, one_draft_acceptance, optimum_bucketed,
                             rrs_acceptance, sample)
from ..numpy_backend._arrays import power_by_squaring

__all__ = ["METHODS", "column", "block_figures", "kseq_float", "tokens_per_call",
           "shared_figures", "chunk_rows", "Workspace", "CHUNK_VALUES"]

#: The methods a sweep knows, in report order.
METHODS = ("rrs", "rrs-wor", "kseq", "key", "optimal")


def column(method: str) -> str:
    """The table column of a method's acceptance: ``acc_rrs_wor`` for ``rrs-wor``."""
    return "acc_" + method.replace("-", "_")


#: Chains shorter than this are summed term by term; longer ones by doubling.
_LOOP_GAMMA = 64


def tokens_per_call(a, gamma: int):
    """``(1 - a^(gamma+1)) / (1 - a)``: expected tokens per target call of a chain of
    ``gamma`` drafts accepted each with probability ``a`` (``gamma + 1`` at ``a = 1``).

    >>> tokens_per_call(np.array([0.5, 1.0]), 2).tolist()
    [1.75, 3.0]
    """
    a = np.asarray(a, dtype=np.float64)
    total = np.zeros_like(a)
    power = np.ones_like(a)
    if gamma < _LOOP_GAMMA:
        for _ in range(gamma + 1):                       # 1 + a + ... + a^gamma
            total += power
            power = power * a
        return total
    # long chains: by doubling, S(2n) = S(n) (1 + a^n) and S(n + 1) = S(n) + a^n, with
    # S(n) = 1 + a + ... + a^(n-1) and power = a^n (a pass per bit of gamma + 1)
    for bit in bin(gamma + 1)[2:]:
        total *= 1.0 + power
        power = power * power
        if bit == "1":
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
                  seed: int = 0, shared: bool = True, workspace=None) -> dict:
    """The per-(row, k) figures of a block of normalised float64 rows, as columns.

    Rows come out in the order ``(row 0, k_1), (row 0, k_2), ..., (row 1, k_1), ...``.
    Columns: ``k``, ``alpha_one``, ``alpha_star``, one ``acc_<method>`` per method
    (``acc_rrs_wor_se`` beside ``rrs-wor``), ``gap_rrs`` and ``rejection_ratio_rrs`` when
    ``rrs`` is asked for, and ``tokens_per_call_<method>`` (and ``tokens_per_call_one``).

    ``shared=True`` (the default) computes every figure but ``rrs-wor`` from one sort per row
    (:func:`shared_figures`); ``shared=False`` calls the per-``k`` routines of
    :mod:`exactspec.numpy_backend` (``alpha*`` bucketed and KEY's float placement for each
    ``k``), the reference the shared pass is tested against.  ``workspace``: a
    :class:`Workspace` whose arrays the shared pass reuses (one per task, for all its chunks).
    """
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise InvalidInput(f"--methods: unknown {', '.join(unknown)}"
                           f"{did_you_mean(unknown[0], METHODS)} "
                           f"(choose from {', '.join(METHODS)})")
    P = np.asarray(P, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    n, nk = P.shape[0], len(ks)
    cols: dict[str, np.ndarray] = {"k": np.tile(np.asarray(ks, dtype=np.int64), n)}
    per_k: dict[str, np.ndarray] = {}
    if shared:
        figures = shared_figures(P, Q, ks, methods, workspace=workspace)
        cols["alpha_one"] = np.repeat(figures.pop("alpha_one"), nk)
        per_k["alpha_star"] = figures["alpha_star"]
        for m in methods:
            per_k[column(m)] = figures.get(column(m), np.empty((n, nk)))
    else:
        cols["alpha_one"] = np.repeat(one_draft_acceptance(P, Q), nk)
        per_k["alpha_star"] = np.empty((n, nk))
        for m in methods:
            per_k[column(m)] = np.empty((n, nk))
    if "rrs-wor" in methods:
        per_k["acc_rrs_wor_se"] = np.empty((n, nk))
    rng = np.random.default_rng(seed)
    for j, k in enumerate(ks):                           # a loop over k only
        if not shared:
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


# -- the shared pass: one sort per row for every k and method -------------------------------

#: Float64 values per working array of the shared pass (2 MiB): a chunk holds
#: ``max(1, CHUNK_VALUES // |V|)`` rows, so its working memory is bounded whatever the block.
CHUNK_VALUES = 1 << 18

#: The methods the shared pass computes (``rrs-wor`` is a Monte Carlo estimate per ``k``).
SHARED_METHODS = ("rrs", "kseq", "key", "optimal")


class Workspace:
    """Working arrays kept by name and handed out again, so that the chunks of a task reuse
    the same memory: allocating and freeing a dozen arrays of megabytes per chunk makes the C
    allocator return the pages to the system and fault them back in: system time up to half
    the time of the arithmetic.

    >>> ws = Workspace()
    >>> a = ws.get("x", (2, 3))
    >>> b = ws.get("x", (1, 3))
    >>> a.shape, b.shape, np.shares_memory(a, b)
    ((2, 3), (1, 3), True)
    """

    def __init__(self):
        self.arrays: dict[str, np.ndarray] = {}

    def get(self, name: str, shape: tuple, dtype=np.float64) -> np.ndarray:
        """An uninitialised C-contiguous array of ``shape`` on the memory kept as ``name``."""
        size = int(np.prod(shape, dtype=np.int64))
        held = self.arrays.get(name)
        if held is None or held.dtype != np.dtype(dtype) or held.size < size:
            held = self.arrays[name] = np.empty(max(size, 1), dtype=dtype)
        return held[:size].reshape(shape)


def chunk_rows(vocab: int) -> int:
    """Rows per chunk of the shared pass at this vocabulary size.

    >>> chunk_rows(32_000), chunk_rows(152_064)
    (8, 1)
    """
    return max(1, CHUNK_VALUES // max(1, int(vocab)))


def shared_figures(P, Q, ks, methods, *, workspace: Workspace | None = None) -> dict:
    """``alpha_one`` per row and, per ``(row, k)``, ``alpha_star`` and the acceptance of each
    method of :data:`SHARED_METHODS` asked for, from one sort of each row for every ``k``.

    Each row's tokens are sorted once by ``q/p`` (``p = 0`` last); with the prefix sums
    ``P_j``, ``Q_j`` along that order (within about one rounding of the exact sums: each
    term split so that most of the running sum is exact), every figure is read off the same arrays:

    * ``alpha* = 1 + min(0, min_j g_k(Q_j) - P_j)`` for each ``k`` (one pass per ``k``);
    * RRS: the residual after ``i`` rejections is ``(p - c_i q)_+ / Z_i`` with ``c_0 = 0``,
      ``Z_0 = 1``, ``c_i = c_{i-1} + Z_{i-1}`` and ``Z_i = sum (p - c_i q)_+ = P_j - c_i Q_j``
      over the tokens with ``q/p < 1/c_i`` (a prefix of the order), so ``Z_i`` is the chance
      that all of ``i`` drafts are rejected, ``prod TV(r_{j-1}, q)``: one search per draft,
      for every ``k`` at once;
    * K-SEQ: ``beta(rho) = Q_j + (1 - P_j) / rho`` over the prefix with ``q/p <= 1/rho``, at
      every breakpoint of ``(1, k)`` in one pass, then the same bisection as
      :func:`kseq_float` on the piece that holds ``rho*``, for all rows together;
    * KEY: ``alpha*`` (KEY attains the optimum; its exact twin in
      :mod:`exactspec.sweep.exact_check` is ``alpha*`` too).

    The order of tokens with equal ratios changes none of these figures (``h`` is concave
    along a run of equal ratios, and RRS's and K-SEQ's sums split at a ratio threshold), so
    ties, frequent on float16 rows, need no second sort.  Work is done ``chunk_rows(|V|)``
    rows at a time: about fourteen float64 arrays of :data:`CHUNK_VALUES` values (28 MiB)
    whatever the number of rows, held in ``workspace`` (a :class:`Workspace`, by default a
    new one) from chunk to chunk and, given by the caller, from call to call.  Tolerances
    against the per-``k`` routines (and their exact twins): ``alpha*`` and RRS within
    ``1e-13``, K-SEQ within ``1e-12``.

    >>> P, Q = np.array([[0.5, 0.3, 0.2]]), np.array([[0.2, 0.2, 0.6]])
    >>> out = shared_figures(P, Q, [1, 2], ["rrs", "optimal", "kseq"])
    >>> [round(float(x), 12) for x in out["alpha_star"][0]], round(float(out["acc_rrs"][0, 1]), 12)
    ([0.6, 0.84], 0.76)
    """
    P = np.asarray(P, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    ks = [int(k) for k in ks]
    n, vocab = P.shape
    nk = len(ks)
    out = {"alpha_one": np.empty(n), "alpha_star": np.empty((n, nk))}
    if "rrs" in methods:
        out["acc_rrs"] = np.empty((n, nk))
    want_kseq = "kseq" in methods
    brackets = np.empty((5, n, nk)) if want_kseq else None   # lo, hi, A, B, done (as 0/1)
    step = chunk_rows(vocab)
    ws = workspace if workspace is not None else Workspace()
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        _shared_chunk(P[lo:hi], Q[lo:hi], ks, lo, out, brackets, ws)
    if want_kseq:
        out["acc_kseq"] = _kseq_finish(brackets, ks)
    if "optimal" in methods:
        out["acc_optimal"] = out["alpha_star"]
    if "key" in methods:
        out["acc_key"] = out["alpha_star"]
    return out


def _prefix(x, out):
    """Running sums along the last axis within about one rounding of the exact ones (rows of
    ``[0, 2)`` summing below 2): each term split into a multiple of ``2^-51`` (whose running
    sums are exact) and a remainder below ``2^-52``, as the float path of the NumPy
    backend's ``prefix_sum``, into ``out`` (``x`` is overwritten by the remainders); the sum
    of the two running sums is one rounding, the remainders' running sum at most
    ``|V|^2 2^-105`` off."""
    hi = np.add(x, 2.0, out=out)
    hi -= 2.0
    lo = np.subtract(x, hi, out=x)
    np.cumsum(hi, axis=-1, out=hi)
    np.cumsum(lo, axis=-1, out=lo)
    hi += lo
    return hi


def _shared_chunk(P, Q, ks, lo, out, brackets, ws):
    c, n = P.shape
    rows = []
    for X in (P, Q):                                     # rows off 1 by more than 2^-40:
        s = X.sum(axis=-1, keepdims=True)                # normalised here
        if np.any(np.abs(s - 1.0) > 2.0 ** -40):
            X = X / np.where(s > 0, s, 1.0)
        rows.append(X)
    p, q = rows
    ratio = ws.get("ratio", (c, n))
    out["alpha_one"][lo:lo + c] = np.minimum(p, q, out=ratio).sum(axis=-1)
    mask = ws.get("mask", (c, n), np.bool_)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(q, p, out=ratio)
        np.copyto(ratio, np.inf, where=np.equal(p, 0.0, out=mask))   # p = 0 last (q = 0 too)
        order = np.argsort(ratio, axis=-1)
        ps, qs = ws.get("ps", (c, n)), ws.get("qs", (c, n))
        for b in range(c):                               # a loop over the rows of a chunk
            p[b].take(order[b], out=ps[b], mode="clip")  # (in range: no buffered copy)
            q[b].take(order[b], out=qs[b], mode="clip")
        del order, p, q, rows
        rs = np.divide(qs, ps, out=ratio)                # the same ratios, now in order
        np.copyto(rs, np.inf, where=np.equal(ps, 0.0, out=mask))
    Pc = _prefix(ps, ws.get("Pc", (c, n)))
    Qc = _prefix(qs, ws.get("Qc", (c, n)))
    # alpha* = 1 + min(0, min_j h_j), h_j = 1 - (1 - Q_j)^k - P_j before the last state
    # (h_n = 0: the whole vocabulary); powers by repeated squaring, as power_by_squaring
    rest = np.subtract(1.0, Qc[:, :-1], out=ws.get("rest", (c, n - 1)))
    np.maximum(rest, 0.0, out=rest)
    top = ws.get("top", (c, n - 1))
    powers: dict[int, np.ndarray] = {1: rest}
    for j, k in enumerate(ks):
        if k not in powers:
            half = powers.get(k // 2) if k % 2 == 0 else None
            powers[k] = (np.multiply(half, half, out=ws.get(f"power{k}", (c, n - 1)))
                         if half is not None else power_by_squaring(rest, k))
        np.subtract(1.0, powers[k], out=top)             # rounded as optimum_sorted does
        top -= Pc[:, :-1]
        low = top.min(axis=-1) if top.shape[-1] else np.zeros(c)
        out["alpha_star"][lo:lo + c, j] = 1.0 + np.minimum(low, 0.0)
    del rest, top, powers
    if "acc_rrs" in out:
        _rrs_rows(rs, Pc, Qc, ks, out["acc_rrs"][lo:lo + c])
    if brackets is not None:
        _kseq_brackets(rs, Pc, Qc, ks, brackets[:, lo:lo + c, :], ws)


def _rrs_rows(rs, Pc, Qc, ks, acc):
    """RRS's acceptance ``1 - Z_k`` per row and ``k`` from the sorted ratios and prefix sums."""
    kmax = max(ks)
    for b in range(rs.shape[0]):                         # a loop over the rows of a chunk
        c, Z = 0.0, 1.0
        rejected = np.zeros(kmax + 1)
        rejected[0] = 1.0
        for i in range(1, kmax + 1):                     # and over the drafts
            if Z <= 0.0:
                break
            c += Z
            j = int(np.searchsorted(rs[b], 1.0 / c, side="left"))
            Z = max(0.0, float(Pc[b, j - 1]) - c * float(Qc[b, j - 1])) if j else 0.0
            rejected[i] = Z
        acc[b] = [1.0 - rejected[k] for k in ks]


def _kseq_brackets(rs, Pc, Qc, ks, br, ws):
    """K-SEQ per row and ``k``: the bracket ``[lo, hi]`` of ``rho*`` and the piece
    ``beta = A/rho + B`` (as :func:`_kseq_row` finds them), or the answer directly
    (``done = 1``, in ``B``); ``br`` has shape ``(5, rows, len(ks))``.  ``beta`` at the
    breakpoints of ``(1, max k)`` is computed once per row, for every ``k``."""
    kmax = max(ks)
    for b in range(rs.shape[0]):                         # a loop over the rows of a chunk
        r = rs[b]
        P_tot = float(Pc[b, -1])

        def before(t):                                   # prefix sums of the first t tokens
            return (float(Pc[b, t - 1]), float(Qc[b, t - 1])) if t else (0.0, 0.0)

        t1 = int(np.searchsorted(r, 1.0, side="left"))  # q/p < 1: these contribute q at rho=1
        P1, Q1 = before(t1)
        beta1 = min(1.0, (P_tot - P1) + Q1)
        t_wide = int(np.searchsorted(r, 1.0 / kmax, side="right"))
        if t_wide < t1:                                  # beta at every breakpoint in (1, kmax)
            m = t1 - t_wide
            band_all = r[t_wide:t1]
            first = before(t_wide)
            beta_all = ws.get("k_beta", (m,))            # (P_tot - P before) band + Q before
            beta_all[0] = first[0]
            beta_all[1:] = Pc[b, t_wide:t1 - 1]
            np.subtract(P_tot, beta_all, out=beta_all)
            beta_all *= band_all
            beta_all[0] += first[1]
            beta_all[1:] += Qc[b, t_wide:t1 - 1]
            np.minimum(beta_all, 1.0, out=beta_all)
            rest_all = np.subtract(1.0, beta_all, out=ws.get("k_rest", (m,)))
            rho_beta_all = np.divide(beta_all, band_all, out=ws.get("k_rho_beta", (m,)))
            powers = {1: rest_all}                       # (1 - beta)^k by squaring, as above
            gap_all = ws.get("k_gap", (m,))
            below_all = ws.get("k_below", (m,), np.bool_)
        for j, k in enumerate(ks):
            if k == 1 or 1 - (1 - beta1) ** k - beta1 <= 0:
                br[:, b, j] = (1.0, 1.0, 0.0, beta1, 1.0)
                continue
            t_lo = int(np.searchsorted(r, 1.0 / k, side="right"))   # breakpoints in (1, k)
            t_hi = t1
            last = -1                                    # the last breakpoint with gap <= 0
            if t_lo < t_hi:
                at = slice(t_lo - t_wide, t1 - t_wide)
                if k not in powers:
                    half = powers.get(k // 2) if k % 2 == 0 else None
                    powers[k] = (np.multiply(half, half, out=ws.get(f"k_power{k}", (m,)))
                                 if half is not None else None)
                power = (powers[k][at] if powers[k] is not None
                         else power_by_squaring(rest_all[at], k))
                gap = np.subtract(1.0, power, out=gap_all[at])
                gap -= rho_beta_all[at]
                below = np.less_equal(gap, 0.0, out=below_all[at])
                if below.any():
                    last = below.size - 1 - int(np.argmax(below[::-1]))
            if last >= 0:                                # the smallest such rho: largest t
                t_star = t_lo + last
                hi_rho = 1.0 / float(r[t_star])
                t_prev = t_star + 1
            else:
                hi_rho = float(k)
                t_prev = t_lo
            if t_prev < t_hi:                            # the breakpoint below, with its ties
                lo_rho = 1.0 / float(r[t_prev])
                g = int(np.searchsorted(r, r[t_prev], side="left"))
            else:
                lo_rho, g = 1.0, t1
            Pg, Qg = before(g)
            br[:, b, j] = (lo_rho, hi_rho, P_tot - Pg, Qg, 0.0)


def _kseq_finish(brackets, ks):
    """Bisection on each row's piece for every row and ``k`` at once (as :func:`_kseq_row`)."""
    lo, hi, A, B, done = (x.copy() for x in brackets)
    kk = np.asarray(ks, dtype=np.float64)[None, :] * np.ones_like(lo)
    active = done == 0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        active &= (mid > lo) & (mid < hi)
        if not active.any():
            break
        beta = np.minimum(1.0, A / mid + B)
        below = (1 - (1 - beta) ** kk - mid * beta) <= 0
        hi = np.where(active & below, mid, hi)
        lo = np.where(active & ~below, mid, lo)
    beta_star = np.where(done == 1, B, np.minimum(1.0, A / hi + B))
    return 1 - (1 - beta_star) ** kk
