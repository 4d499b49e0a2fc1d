"""Batched samplers for ``sps``, ``rrs`` and ``rrs-wor``, driven by a seeded NumPy generator.

Each method is split the way inference engines split it: a *draft* step
(:func:`draft_iid`, :func:`draft_wor`) and a *verify* kernel that receives the drafts
(:func:`verify_sps`, :func:`verify_rrs`, :func:`verify_rrs_wor`) and uses explicit uniforms:
accept draft ``x`` iff ``u < r(x)/q(x)``, and draw a resample by inverse CDF from a fresh
uniform.  :func:`sample` runs both.  Rows are normalised; draws loop over nothing longer than
``k`` (and over chunks of samples to bound memory).

Exact twins: ``verify(method, p, q, k)`` in :mod:`exactspec` gives the exact output law (``p``
for these lossless methods) and acceptance; the samplers agree with them *statistically*
(:mod:`exactspec.numpy_backend.harness`), and deterministically up to float rounding of the thresholds and
cumulative sums (a bias of at most about ``|V| 2^-53`` per draw in total variation).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> out = sample("rrs", [0.5, 0.3, 0.2], [0.2, 0.2, 0.6], 2, rng, n=100_000)
>>> np.round(np.bincount(out.tokens, minlength=3) / 100_000, 2).tolist()
[0.5, 0.3, 0.2]
>>> round(float(out.accepted.mean()), 2)      # exact acceptance 19/25
0.76
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import InvalidInput
from ._arrays import as_rows
from .optimum import check_k, pair_rows

__all__ = ["Samples", "SAMPLERS", "draft_iid", "draft_wor", "verify_sps", "verify_rrs",
           "verify_rrs_wor", "sample", "normalised_rows"]

#: Largest number of floats a per-sample work array may hold (memory bound, ~128 MB).
_CHUNK_FLOATS = 16_000_000


@dataclass(frozen=True)
class Samples:
    """Sampled outputs.

    Attributes
    ----------
    tokens : array of int
        Output token indices; shape ``(n,)`` for one row, ``(rows,)`` for one sample per row,
        ``(rows, n)`` for ``n`` per row.
    accepted : array of bool
        Whether a draft was explicitly accepted (for these methods, ``Y in X``).
    drafts : array of int
        The drafts, with a trailing axis of length ``k``.
    """

    tokens: np.ndarray
    accepted: np.ndarray
    drafts: np.ndarray


def normalised_rows(p, q):
    """Paired, normalised rows of ``p`` and ``q`` and whether both came as one row."""
    P, Q, one_row = pair_rows(p, q, np)
    return P / P.sum(axis=-1, keepdims=True), Q / Q.sum(axis=-1, keepdims=True), one_row


def _layout(n_rows: int, n, one_row: bool):
    """``(row of each sample, output shape)``."""
    if n is None:
        return np.arange(n_rows), ((n_rows,) if not one_row else (1,))
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise InvalidInput(f"n={n!r}: need a positive number of samples")
    if one_row:
        return np.zeros(int(n), dtype=np.intp), (int(n),)
    return np.repeat(np.arange(n_rows), int(n)), (n_rows, int(n))


def _pick(cdf, rows, u):
    """Inverse-CDF draws: for each sample ``s``, the first token whose cumulative weight in row
    ``rows[s]`` exceeds ``u[s]`` times the row total (never a zero-weight token)."""
    n = cdf.shape[-1]
    total = cdf[:, -1]
    if cdf.shape[0] == 1:
        out = np.searchsorted(cdf[0], u * total[0], side="right")
    else:
        out = np.empty(rows.shape[0], dtype=np.intp)
        step = max(1, _CHUNK_FLOATS // n)
        for start in range(0, rows.shape[0], step):           # chunks of samples
            r = rows[start:start + step]
            target = (u[start:start + step] * total[r])[:, None]
            out[start:start + step] = np.sum(cdf[r] <= target, axis=-1)
    return np.minimum(out, _last_positive(cdf)[rows])


def _last_positive(cdf):
    """Index of each row's last token of positive weight (guards ``u * total == total``)."""
    n = cdf.shape[-1]
    grows = np.concatenate([cdf[:, :1] > 0, cdf[:, 1:] > cdf[:, :-1]], axis=-1)
    return n - 1 - np.argmax(grows[:, ::-1], axis=-1)


def draft_iid(q, k: int, rng, n=None) -> np.ndarray:
    """``k`` i.i.d. drafts from each row of ``q``: shape ``(..., k)``.

    >>> draft_iid([0.0, 1.0], 3, np.random.default_rng(0)).tolist()
    [[1, 1, 1]]
    """
    k = check_k(k)
    Q, one_row = as_rows(q, "q")
    rows, shape = _layout(Q.shape[0], n, one_row)
    cdf = np.cumsum(Q, axis=-1)
    drafts = np.empty((rows.shape[0], k), dtype=np.intp)
    for i in range(k):                                          # a loop over k only
        drafts[:, i] = _pick(cdf, rows, rng.random(rows.shape[0]))
    return drafts.reshape(shape + (k,))


def draft_wor(q, k: int, rng, n=None) -> np.ndarray:
    """``k`` drafts without replacement from each row of ``q`` (``X_i ~ q`` restricted to the
    tokens not yet drawn, renormalised): shape ``(..., k)``.  Needs ``k <= |supp q|``.

    Draws by inverse CDF on the original cumulative sums, stepping over the drawn tokens.

    >>> sorted(draft_wor([0.5, 0.5, 0.0], 2, np.random.default_rng(1))[0].tolist())
    [0, 1]
    """
    k = check_k(k)
    Q, one_row = as_rows(q, "q")
    support = int(np.min(np.sum(Q > 0, axis=-1)))
    if k > support:
        raise InvalidInput(f"k={k}: drafting without replacement needs k <= {support}, the "
                           "number of tokens q can draft")
    Q = Q / Q.sum(axis=-1, keepdims=True)
    rows, shape = _layout(Q.shape[0], n, one_row)
    cdf = np.cumsum(Q, axis=-1)
    start = cdf - Q                                              # cumulative mass before t
    m = rows.shape[0]
    drafts = np.empty((m, k), dtype=np.intp)
    last = _last_positive(cdf)[rows]
    for i in range(k):                                           # a loop over k only
        taken = np.sort(drafts[:, :i], axis=-1)
        removed = Q[rows[:, None], taken].sum(axis=-1) if i else np.zeros(m)
        v = rng.random(m) * (cdf[rows, -1] - removed)
        for j in range(i):                                       # step over drawn tokens
            t = taken[:, j]
            v = np.where(start[rows, t] <= v, v + Q[rows, t], v)
        x = _pick(cdf, rows, v / cdf[rows, -1])
        x = np.minimum(x, last)
        drafts[:, i] = x
    return drafts.reshape(shape + (k,))


def _flat_drafts(drafts, n_rows, one_row, name="drafts"):
    d = np.asarray(drafts)
    if d.ndim == 1:
        d = d[:, None] if not one_row else d[None, :]
    if d.ndim == 3:                                              # (rows, n, k)
        rows = np.repeat(np.arange(d.shape[0]), d.shape[1])
        return d.reshape(-1, d.shape[-1]).astype(np.intp), rows, d.shape[:2]
    if d.ndim != 2:
        raise InvalidInput(f"{name} must have shape (n, k) or (rows, n, k), got {d.shape}")
    if one_row:
        return d.astype(np.intp), np.zeros(d.shape[0], dtype=np.intp), (d.shape[0],)
    if d.shape[0] != n_rows:
        raise InvalidInput(f"{name} has {d.shape[0]} rows but p has {n_rows}")
    return d.astype(np.intp), np.arange(n_rows), (n_rows,)


def verify_sps(p, q, drafts, rng) -> tuple[np.ndarray, np.ndarray]:
    """The one-draft rule on given drafts: accept ``x`` iff ``u1 < p(x)/q(x)``, else draw
    from ``norm((p - q)_+)`` with a fresh ``u2``.  Returns ``(tokens, accepted)``."""
    P, Q, one_row = normalised_rows(p, q)
    d, rows, shape = _flat_drafts(drafts, P.shape[0], one_row)
    if d.shape[1] != 1:
        raise InvalidInput(f"sps takes one draft per sample, got {d.shape[1]}")
    return _verify_recursive(P, Q, d, rows, rng, shape)


def verify_rrs(p, q, drafts, rng) -> tuple[np.ndarray, np.ndarray]:
    """Recursive rejection sampling on given i.i.d. drafts: ``r = p``; accept ``X_i`` iff
    ``u_i < r(X_i)/q(X_i)``, else ``r <- norm((r - q)_+)``; if all are rejected, draw from
    ``r`` with a fresh uniform.  Returns ``(tokens, accepted)``."""
    P, Q, one_row = normalised_rows(p, q)
    d, rows, shape = _flat_drafts(drafts, P.shape[0], one_row)
    return _verify_recursive(P, Q, d, rows, rng, shape)


def _verify_recursive(P, Q, d, rows, rng, shape):
    m, k = d.shape
    tokens = np.full(m, -1, dtype=np.intp)
    accepted = np.zeros(m, dtype=bool)
    r = P.copy()
    for i in range(k):                                           # a loop over k only
        x = d[:, i]
        qx = Q[rows, x]
        ratio = np.divide(r[rows, x], qx, out=np.zeros(m), where=qx > 0)
        take = (~accepted) & (rng.random(m) < ratio)
        tokens[take] = x[take]
        accepted |= take
        diff = np.maximum(r - Q, 0.0)
        tv = diff.sum(axis=-1, keepdims=True)
        r = np.where(tv > 0, diff / np.where(tv > 0, tv, 1.0), r)   # TV = 0: never rejects
    rest = ~accepted
    u = rng.random(m)
    if rest.any():
        tokens[rest] = _pick(np.cumsum(r, axis=-1), rows[rest], u[rest])
    return tokens.reshape(shape), accepted.reshape(shape)


def verify_rrs_wor(p, q, drafts, rng) -> tuple[np.ndarray, np.ndarray]:
    """RRS without replacement on given distinct drafts: ``r_1 = p``, ``q_1 = q``; accept
    ``X_i`` iff ``u_i < r_i(X_i)/q_i(X_i)``, else ``r_{i+1} = norm((r_i - q_i)_+)`` and
    ``q_{i+1}`` is ``q_i`` without ``X_i``, renormalised; if all are rejected, draw from
    ``r_{k+1}``.  Returns ``(tokens, accepted)``.  Works per sample (``O(k |V|)`` each)."""
    P, Q, one_row = normalised_rows(p, q)
    d, rows, shape = _flat_drafts(drafts, P.shape[0], one_row)
    m, k = d.shape
    n = P.shape[-1]
    tokens = np.full(m, -1, dtype=np.intp)
    accepted = np.zeros(m, dtype=bool)
    step = max(1, _CHUNK_FLOATS // (3 * n))
    for start in range(0, m, step):                              # chunks of samples
        sl = slice(start, start + step)
        rr, dd = rows[sl], d[sl]
        c = rr.shape[0]
        r = P[rr].copy()
        qi = Q[rr].copy()
        took = np.full(c, -1, dtype=np.intp)
        done = np.zeros(c, dtype=bool)
        every = np.arange(c)
        for i in range(k):                                       # a loop over k only
            x = dd[:, i]
            qx = qi[every, x]
            ratio = np.divide(r[every, x], qx, out=np.zeros(c), where=qx > 0)
            take = (~done) & (rng.random(c) < ratio)
            took[take] = x[take]
            done |= take
            diff = np.maximum(r - qi, 0.0)
            tv = diff.sum(axis=-1, keepdims=True)
            r = np.where(tv > 0, diff / np.where(tv > 0, tv, 1.0), r)
            qi[every, x] = 0.0
            left = qi.sum(axis=-1, keepdims=True)
            qi = np.where(left > 0, qi / np.where(left > 0, left, 1.0), qi)
        rest = ~done
        u = rng.random(c)
        if rest.any():
            idx = np.flatnonzero(rest)
            took[idx] = _pick(np.cumsum(r[idx], axis=-1), np.arange(idx.size), u[idx])
        tokens[sl], accepted[sl] = took, done
    return tokens.reshape(shape), accepted.reshape(shape)


#: method name -> (draft step, verify kernel)
SAMPLERS = {
    "sps": (draft_iid, verify_sps),
    "rrs": (draft_iid, verify_rrs),
    "rrs-wor": (draft_wor, verify_rrs_wor),
}


#: Largest number of draft tokens (samples times ``k``) one call of :func:`sample` draws.
MAX_DRAFT_DRAWS = 5 * 10**7


def sample(method: str, p, q, k: int, rng, n=None) -> Samples:
    """Draft and verify with ``method`` (``sps``, ``rrs`` or ``rrs-wor``).

    ``p``, ``q``: one row (``n`` samples, default 1) or ``(rows, |V|)`` (one sample per row,
    or ``n`` per row).  ``rng`` is a ``numpy.random.Generator``.
    """
    if method not in SAMPLERS:
        raise InvalidInput(f"method {method!r}: the NumPy samplers are "
                           f"{', '.join(SAMPLERS)}")
    k = check_k(k)
    if method == "sps" and k != 1:
        raise InvalidInput(f"sps takes only k = 1, not k = {k}")
    if not isinstance(rng, np.random.Generator):
        raise InvalidInput("rng must be a numpy.random.Generator, e.g. "
                           "numpy.random.default_rng(0)")
    draft, verify_kernel = SAMPLERS[method]
    P, Q, one_row = normalised_rows(p, q)
    if one_row and n is None:
        n = 1
    draws = (n or 1) * (1 if one_row else P.shape[0]) * k
    if draws > MAX_DRAFT_DRAWS:                          # the drafts are one (samples, k) array
        from ..core.errors import TooLarge

        raise TooLarge(f"{method} sampling at k = {k:,}: {draws:,} draft tokens "
                       f"({draws * 8 / 2**30:,.1f} GiB), over the budget of "
                       f"{MAX_DRAFT_DRAWS:,}: use fewer samples or a smaller k",
                       estimate=draws, budget=MAX_DRAFT_DRAWS)
    drafts = draft(Q if not one_row else Q[0], k, rng, n=n)
    tokens, accepted = verify_kernel(P if not one_row else P[0], Q if not one_row else Q[0],
                                     drafts, rng)
    return Samples(tokens=tokens, accepted=accepted, drafts=drafts)
