"""KEY in float64 at full vocabulary size: the placement in ``O(|V| log |V|)`` per position and
batched sampling of the smallest-key verifier.

Float twin of :mod:`exactspec.key` (the same construction, docs/math.md#key and docs/key.md):
sort by ``q/p`` (:func:`~exactspec.numpy_backend.optimum.optimum_sorted`), lay the tokens out
consecutively, and match each slot's surplus ``v - a*`` to later deficits first-in first-out
inside each block between tight prefixes; a matched pair swaps key mass
``delta = tau / (d_donor - d_receiver)``.  The matching is the overlap of two cumulative sums
(one merge of sorted breakpoints per row), so no step loops over the vocabulary in Python.
There is no fallback: the construction covers every instance.

Float safeguards (never needed in exact arithmetic): surpluses within a few ulps of 0 count
as 0; a swap is clipped to the slot masses; ``w`` is recomputed from the key masses actually
placed, and the acceptance probability is ``min(1, a*/w)``, so the sampler is always a valid
sampler whose law is within :attr:`FloatKeyPlacement.law_error` (total variation, computed) of
``p``.  Tolerance against the exact twin on the same inputs converted exactly:
``|w - w_exact| <= 1e-12 + 1e-10 w`` per token (:data:`W_ATOL`, :data:`W_RTOL`), away from ties
of ``q/p`` that float cannot order.

>>> import numpy as np
>>> plan = key_placement(np.array([0.6, 0.4]), np.array([0.5, 0.5]), 8)
>>> np.round(plan.w[0], 12).tolist(), float(plan.law_error[0]) < 1e-15
([0.6, 0.4], True)
>>> out = sample_key([0.6, 0.4], [0.5, 0.5], 8, np.random.default_rng(0), n=100_000)
>>> np.round(np.bincount(out.tokens, minlength=2) / 100_000, 2).tolist()
[0.6, 0.4]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.errors import InvalidInput
from ._arrays import as_rows, g_increment, prefix_sum
from .optimum import check_k, optimum_sorted
from .samplers import normalised_rows

__all__ = ["FloatKeyPlacement", "key_placement", "verify_key", "sample_key", "KeySamples",
           "W_ATOL", "W_RTOL"]

#: Stated tolerance of ``w`` against the exact twin: ``W_ATOL + W_RTOL * w``.
W_ATOL = 1e-12
W_RTOL = 1e-10

_EPS = 2.0 ** -52


@dataclass
class _RowPairs:
    """One row's swaps, in first-in first-out order (both columns non-decreasing)."""

    donor: np.ndarray        # sorted positions
    receiver: np.ndarray
    mass: np.ndarray         # delta
    cum: np.ndarray          # running sum of mass


@dataclass
class FloatKeyPlacement:
    """The KEY placement of a batch of rows, in floats (never a proof).

    Arrays of shape ``(batch, |V|)`` are in token order unless said otherwise.

    Attributes
    ----------
    k : int
    alpha_star, a_star : arrays
        From :func:`optimum_sorted`.
    w : array
        The probability that the smallest key is a draft of each token, recomputed from the
        key masses placed.
    beta : array
        ``min(1, a*/w)`` (0 where ``w = 0``).
    residual_cdf : array
        Cumulative ``(p - a*)_+``, unnormalised (token order).
    order : array
        Token indices in ``q/p`` order (slot ``j`` belongs to ``order[b, j]``).
    lo, width : arrays, sorted order
        Slot ``j`` is ``[lo[b, j], lo[b, j] + width[b, j])``.
    own : array, sorted order
        The key mass each token keeps in its own slot.
    pairs : list of _RowPairs
    law_error : array, shape (batch,)
        ``sum_t (a* - min(w, a*))``: the total-variation bound of the sampler's deviation
        from ``p`` caused by float rounding (0 in exact arithmetic).
    swaps : array of int, shape (batch,)
        The number of swaps per row.
    """

    k: int
    alpha_star: Any
    a_star: Any
    w: Any
    beta: Any
    residual_cdf: Any
    order: Any
    position: Any
    lo: Any
    width: Any
    own: Any
    q: Any
    pairs: list = field(repr=False)
    law_error: Any = None
    swaps: Any = None

    def key_start(self):
        """Where each token's key support starts (token order; ``inf`` where ``q = 0``)."""
        batch, n = self.order.shape
        start = np.full((batch, n), np.inf)
        for b in range(batch):                               # a loop over the batch only
            first = np.arange(n)
            pr = self.pairs[b]
            if pr.mass.size:
                # a receiver's key starts in its first donor's slot (pairs are sorted)
                recv, idx = np.unique(pr.receiver, return_index=True)
                first[recv] = np.minimum(first[recv], pr.donor[idx])
            s = self.lo[b, first]
            s[self.width[b] <= 0] = np.inf
            start[b, self.order[b]] = s
        return start


def key_placement(p, q, k: int) -> FloatKeyPlacement:
    """The KEY placement of each row of ``(p, q)``: one sort and a first-in first-out merge.

    Parameters
    ----------
    p, q : array-like, shape (|V|,) or (batch, |V|)
        Target and draft rows (normalised here).
    k : int
        The number of i.i.d. drafts.

    Returns
    -------
    FloatKeyPlacement
    """
    k = check_k(k)
    P, Q, _ = normalised_rows(p, q)
    opt = optimum_sorted(P, Q, k)
    order = opt.order
    batch, n = order.shape
    qs = np.take_along_axis(Q, order, axis=-1)
    a_s = np.take_along_axis(opt.a_star, order, axis=-1)
    Qc = prefix_sum(qs)
    lo = np.concatenate([np.zeros((batch, 1)), Qc[:, :-1]], axis=-1)
    v = g_increment(k, lo, qs)
    density = np.divide(v, qs, out=np.zeros_like(v), where=qs > 0)
    e = v - a_s
    e[np.abs(e) <= 8 * _EPS * (v + a_s)] = 0.0
    # blocks: a block ends at every tight prefix
    tight = np.asarray(opt.tight)
    block = np.concatenate([np.zeros((batch, 1), dtype=np.int64),
                            np.cumsum(tight[:, :-1], axis=-1)], axis=-1)
    own = qs.copy()
    pairs = []
    for b in range(batch):                                   # a loop over the batch only
        rp = _row_pairs(e[b], density[b], block[b])
        pairs.append(rp)
        if rp.mass.size:
            own[b] -= (np.bincount(rp.donor, rp.mass, minlength=n)
                       + np.bincount(rp.receiver, rp.mass, minlength=n))
    own = np.maximum(own, 0.0)
    w_sorted = own * density
    for b in range(batch):
        rp = pairs[b]
        if rp.mass.size:
            w_sorted[b] += (np.bincount(rp.donor, rp.mass * density[b, rp.receiver], minlength=n)
                            + np.bincount(rp.receiver, rp.mass * density[b, rp.donor],
                                          minlength=n))
    w = np.empty_like(w_sorted)
    np.put_along_axis(w, order, w_sorted, axis=-1)
    a = opt.a_star
    beta = np.divide(a, w, out=np.zeros_like(a), where=w > 0)
    beta = np.minimum(beta, 1.0)
    position = np.empty_like(order)
    np.put_along_axis(position, order, np.broadcast_to(np.arange(n), order.shape).copy(),
                      axis=-1)
    residual_cdf = np.cumsum(np.maximum(P - a, 0.0), axis=-1)
    law_error = np.sum(np.maximum(a - w, 0.0), axis=-1)
    return FloatKeyPlacement(k=k, alpha_star=opt.alpha_star, a_star=a, w=w, beta=beta,
                             residual_cdf=residual_cdf, order=order, position=position, lo=lo,
                             width=qs, own=own, q=Q, pairs=pairs, law_error=law_error,
                             swaps=np.array([rp.mass.size for rp in pairs]))


def _row_pairs(e: np.ndarray, density: np.ndarray, block: np.ndarray) -> _RowPairs:
    """First-in first-out matching of surplus to deficit inside each block of one row."""
    surplus = np.maximum(e, 0.0)
    deficit = np.maximum(-e, 0.0)
    if not (surplus.any() and deficit.any()):
        empty = np.zeros(0)
        return _RowPairs(empty.astype(np.intp), empty.astype(np.intp), empty, empty)
    D = np.cumsum(surplus)
    R = np.cumsum(deficit)
    starts = np.flatnonzero(np.diff(block, prepend=-1))      # first position of each block
    ends = np.append(starts[1:], e.size) - 1
    blk = block
    D0 = np.where(starts > 0, D[starts - 1], 0.0)[blk]          # cumulative before the block
    R0 = np.where(starts > 0, R[starts - 1], 0.0)[blk]
    Dw, Rw = D - D0, R - R0
    Rtot = (R[ends] - np.where(starts > 0, R[starts - 1], 0.0))
    offset = np.concatenate([[0.0], np.cumsum(Rtot)[:-1]])[blk]
    Dg = offset + np.minimum(Dw, Rtot[blk])                      # donors beyond: unmatched
    Rg = offset + Rw
    breaks = np.unique(np.concatenate([Dg, Rg]))
    lo, hi = breaks[:-1], breaks[1:]
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    d = np.searchsorted(Dg, lo, side="right")
    r = np.searchsorted(Rg, lo, side="right")
    n = e.size
    ok = (d < n) & (r < n)
    d, r, lo, hi = d[ok], r[ok], lo[ok], hi[ok]
    ok = (blk[d] == blk[r]) & (d < r) & (e[d] > 0) & (e[r] < 0)
    d, r, tau = d[ok], r[ok], (hi - lo)[ok]
    gap = density[d] - density[r]
    mass = np.divide(tau, gap, out=np.zeros_like(tau), where=gap > 0)
    return _RowPairs(d.astype(np.intp), r.astype(np.intp), mass, np.cumsum(mass))


# -- sampling ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class KeySamples:
    """Sampled KEY outputs: ``tokens``, ``accepted`` (a draft was accepted), ``drafts``,
    ``selected`` (the smallest-key draft's token) and ``key_draws`` (keys drawn per sample:
    ``k`` for the plain sampler, fewer for the lazy one)."""

    tokens: np.ndarray
    accepted: np.ndarray
    drafts: np.ndarray
    selected: np.ndarray
    key_draws: np.ndarray


def _pieces(plan: FloatKeyPlacement, b: int, j: np.ndarray):
    """For tokens at sorted positions ``j`` of row ``b``: whether each is a donor, and the
    range ``[start, stop)`` of its swaps in row ``b``'s swap list."""
    rp = plan.pairs[b]
    d_lo = np.searchsorted(rp.donor, j, side="left")
    d_hi = np.searchsorted(rp.donor, j, side="right")
    r_lo = np.searchsorted(rp.receiver, j, side="left")
    r_hi = np.searchsorted(rp.receiver, j, side="right")
    donor = d_hi > d_lo
    return donor, np.where(donor, d_lo, r_lo), np.where(donor, d_hi, r_hi)


def _quantile_keys(plan: FloatKeyPlacement, b: int, tokens: np.ndarray,
                   level: np.ndarray) -> np.ndarray:
    """The key at CDF level ``level`` of each token in row ``b`` (inverse CDF of its key law,
    slots in key order: a donor's own slot comes before its receivers' slots, a receiver's
    donors' slots before its own; linear inside a slot)."""
    j = plan.position[b, tokens]
    rp = plan.pairs[b]
    own = plan.own[b, j]
    target = level * plan.width[b, j]
    slot = j.copy()
    frac = np.divide(target, own, out=np.zeros_like(target), where=own > 0)
    if rp.mass.size:
        donor, start, stop = _pieces(plan, b, j)
        has = stop > start
        shared = np.where(has, plan.width[b, j] - own, 0.0)
        # mass to find among the partner slots (donor: after its own slot; receiver: before)
        inside = np.where(donor, target - own, target)
        use = has & (inside >= 0) & np.where(donor, True, inside < shared)
        before = np.where(start > 0, rp.cum[np.maximum(start - 1, 0)], 0.0)
        idx = np.searchsorted(rp.cum, before + inside, side="right")
        idx = np.clip(idx, start, np.maximum(stop - 1, start))
        idx = np.minimum(idx, rp.cum.size - 1)
        partner = np.where(donor, rp.receiver[idx], rp.donor[idx])
        prior = np.where(idx > 0, rp.cum[np.maximum(idx - 1, 0)], 0.0) - before
        pfrac = np.divide(inside - prior, rp.mass[idx], out=np.zeros_like(inside),
                          where=rp.mass[idx] > 0)
        slot = np.where(use, partner, slot)
        frac = np.where(use, pfrac, frac)
        rest = has & ~donor & ~use                      # a receiver's key in its own slot
        frac = np.where(rest, np.divide(target - shared, own, out=np.zeros_like(target),
                                        where=own > 0), frac)
    frac = np.clip(frac, 0.0, 1.0)
    return plan.lo[b, slot] + frac * plan.width[b, slot]


def _keys_in_row(plan: FloatKeyPlacement, b: int, tokens: np.ndarray, u_slot: np.ndarray,
                 u_pos: np.ndarray) -> np.ndarray:
    """Keys of drafts of ``tokens`` in row ``b`` from two uniforms each: ``u_slot`` picks the
    slot by key mass, ``u_pos`` the position inside it (the kernel's way)."""
    j = plan.position[b, tokens]
    mass = u_slot * plan.width[b, j]
    slot = j.copy()
    rp = plan.pairs[b]
    beyond = mass >= plan.own[b, j]
    if beyond.any() and rp.mass.size:
        jb = j[beyond]
        donor, start, stop = _pieces(plan, b, jb)
        extra = mass[beyond] - plan.own[b, jb]
        before = np.where(start > 0, rp.cum[np.maximum(start - 1, 0)], 0.0)
        idx = np.searchsorted(rp.cum, before + extra, side="right")
        idx = np.minimum(np.clip(idx, start, np.maximum(stop - 1, start)), rp.cum.size - 1)
        partner = np.where(donor, rp.receiver[idx], rp.donor[idx])
        slot[beyond] = np.where(stop > start, partner, jb)
    return plan.lo[b, slot] + u_pos * plan.width[b, slot]


def verify_key(p, q, drafts, rng, *, lazy: bool = False,
               placement: FloatKeyPlacement | None = None, details: bool = False):
    """The KEY verify kernel on given drafts (shape ``(n, k)`` for one row, or
    ``(rows, k)`` / ``(rows, n, k)``): each draft's key from two uniforms (slot, position),
    the smallest key selected, accepted iff a fresh uniform is below ``min(1, a*/w)``, else a
    residual draw by inverse CDF from a fresh uniform.

    ``lazy=True`` draws one key per distinct token (the smallest of its copies, by inverse
    CDF of the minimum) and only for tokens whose key support starts before the current
    smallest key; the law is the same.  Returns ``(tokens, accepted)`` (the contract of
    :data:`exactspec.numpy_backend.samplers.SAMPLERS`), or with ``details=True``
    ``(tokens, accepted, selected, key_draws)``.
    """
    P, Q, one_row = normalised_rows(p, q)
    d = np.asarray(drafts)
    k = d.shape[-1]
    plan = placement if placement is not None else key_placement(P, Q, k)
    if plan.k != k:
        raise InvalidInput(f"the placement is for k={plan.k} but the drafts have k={k}")
    if d.ndim == 2 and one_row:
        d = d[None]
    elif d.ndim == 2:
        d = d[:, None, :]
    if d.ndim != 3 or d.shape[0] != P.shape[0]:
        raise InvalidInput(f"drafts must have shape (n, k) for one row or (rows[, n], k), "
                           f"got {np.asarray(drafts).shape}")
    rows, n, _ = d.shape
    tokens = np.empty((rows, n), dtype=np.intp)
    accepted = np.empty((rows, n), dtype=bool)
    selected = np.empty((rows, n), dtype=np.intp)
    draws = np.empty((rows, n), dtype=np.intp)
    start = plan.key_start() if lazy else None
    for b in range(rows):                                    # a loop over the batch only
        db = d[b]
        if lazy:
            sel, cnt = _select_lazy(plan, b, db, rng, start[b])
        else:
            keys = _keys_in_row(plan, b, db.ravel(), rng.random(db.size),
                                rng.random(db.size)).reshape(db.shape)
            sel = db[np.arange(n), np.argmin(keys, axis=1)]
            cnt = np.full(n, k)
        acc = rng.random(n) < plan.beta[b, sel]
        cdf = plan.residual_cdf[b]
        if cdf[-1] > 0:
            res = np.searchsorted(cdf, rng.random(n) * cdf[-1], side="right")
            res = np.minimum(res, cdf.size - 1)
        else:
            res = sel
        tokens[b] = np.where(acc, sel, res)
        accepted[b] = acc
        selected[b] = sel
        draws[b] = cnt
    shape = (n,) if one_row else ((rows,) if np.asarray(drafts).ndim == 2 else (rows, n))
    if not details:
        return tokens.reshape(shape), accepted.reshape(shape)
    return (tokens.reshape(shape), accepted.reshape(shape), selected.reshape(shape),
            draws.reshape(shape))


def _select_lazy(plan, b, db, rng, start):
    """Lazy selection for the samples ``db`` (shape ``(n, k)``) of row ``b``: distinct tokens
    in order of key start, one key each (the smallest of its copies), stopping at the first
    token whose key support starts after the current smallest key."""
    n, k = db.shape
    st = start[db]                                         # key start of each draft
    order = np.lexsort((db, st), axis=1)
    toks = np.take_along_axis(db, order, axis=1)
    starts = np.take_along_axis(st, order, axis=1)
    first = np.ones((n, k), dtype=bool)
    first[:, 1:] = toks[:, 1:] != toks[:, :-1]             # first copy of each token
    copies = np.zeros((n, k), dtype=np.intp)
    for r in range(k):                                     # a loop over k only
        copies[:, r] = np.sum(toks == toks[:, r:r + 1], axis=1)
    best = np.full(n, np.inf)
    who = toks[:, 0].copy()
    draws = np.zeros(n, dtype=np.intp)
    for r in range(k):                                     # a loop over k only
        active = first[:, r] & (starts[:, r] <= best)
        if not active.any():
            continue
        c = copies[active, r]
        level = -np.expm1(np.log1p(-rng.random(int(active.sum()))) / c)   # 1 - (1-u)^(1/c)
        key = _quantile_keys(plan, b, toks[active, r], level)
        draws[active] += 1
        better = key < best[active]
        idx = np.flatnonzero(active)[better]
        best[idx] = key[better]
        who[idx] = toks[active, r][better]
    return who, draws


def _draft_iid(Q, k: int, rng, n: int) -> np.ndarray:
    """``k`` i.i.d. drafts per sample, ``n`` samples per row: shape ``(rows, n, k)``, by
    inverse CDF with a binary search per draw (``O(log |V|)``)."""
    if n < 1:
        raise InvalidInput(f"n={n!r}: need a positive number of samples")
    rows, size = Q.shape
    out = np.empty((rows, n, k), dtype=np.intp)
    for b in range(rows):                                    # a loop over the batch only
        cdf = prefix_sum(Q[b])
        last = int(np.flatnonzero(Q[b] > 0)[-1])
        x = np.searchsorted(cdf, rng.random((n, k)) * cdf[-1], side="right")
        out[b] = np.minimum(x, last)
    return out


def sample_key(p, q, k: int, rng, n=None, *, lazy: bool = False,
               placement: FloatKeyPlacement | None = None) -> KeySamples:
    """Draft ``k`` i.i.d. tokens per sample and verify them with KEY.

    ``p``, ``q``: one row (``n`` samples, default 1) or ``(rows, |V|)`` (one sample per row,
    or ``n`` per row).  ``rng`` is a ``numpy.random.Generator``.  ``placement``: reuse a
    :func:`key_placement` of the same rows (computed here otherwise).
    """
    k = check_k(k)
    if not isinstance(rng, np.random.Generator):
        raise InvalidInput("rng must be a numpy.random.Generator, e.g. "
                           "numpy.random.default_rng(0)")
    P, Q, one_row = normalised_rows(p, q)
    plan = key_placement(P, Q, k) if placement is None else placement
    if one_row and n is None:
        n = 1
    drafts = _draft_iid(Q, k, rng, 1 if n is None else int(n))
    if one_row:
        drafts = drafts[0]
    elif n is None:
        drafts = drafts[:, 0]
    tokens, accepted, selected, draws = verify_key(P if not one_row else P[0],
                                                   Q if not one_row else Q[0], drafts, rng,
                                                   lazy=lazy, placement=plan, details=True)
    return KeySamples(tokens=tokens, accepted=accepted, drafts=drafts, selected=selected,
                      key_draws=draws)
