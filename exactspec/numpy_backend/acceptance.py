"""Acceptance in float64 over batches of rows: one draft, and RRS by its O(k |V|) recursion.

Float twins of :func:`exactspec.core.dist.overlap` (one draft) and of the RRS rejection product
(docs/math.md#rrs-and-the-tight-ratio; :func:`exactspec.numpy_backend.twins.rrs_acceptance_exact` is the exact
recursion).  Rows are normalised like ``Dist(..., normalize=True)``.

>>> import numpy as np
>>> p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.2, 0.6])
>>> round(float(one_draft_acceptance(p, q)[0]), 12), round(float(rrs_acceptance(p, q, 2)[0]), 12)
(0.6, 0.76)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._arrays import namespace, normalized, power_by_squaring
from .optimum import check_k, pair_rows

__all__ = ["one_draft_acceptance", "rrs_acceptance", "rrs_rejection", "rrs_rejection_factors",
           "ONE_DRAFT_ATOL", "RRS_ATOL"]

#: Stated absolute tolerances against the exact twins (|V| up to a few hundred thousand).
ONE_DRAFT_ATOL = 1e-14
RRS_ATOL = 1e-13


def one_draft_acceptance(p, q, xp: Any = None):
    """``sum_t min(p(t), q(t))`` per row: the one-draft rule's acceptance ``1 - TV(p, q)``.

    Float twin of :func:`exactspec.core.dist.overlap`; within ``1e-14`` absolute of it on the same
    inputs (each ``min`` is exact, the normalisations and the pairwise sum add a few
    roundings of ``2^-53`` each, times ``log2 |V|``).

    >>> import numpy as np
    >>> p = np.array([[0.5, 0.5], [1.0, 0.0]])
    >>> one_draft_acceptance(p, np.array([[0.25, 0.75], [0.5, 0.5]]))
    array([0.75, 0.5 ])
    """
    xp = namespace(xp)
    P, Q, _ = pair_rows(p, q, xp)
    return xp.sum(xp.minimum(normalized(P, xp), normalized(Q, xp)), axis=-1)


#: Largest ``k |V| batch`` (row passes times tokens) the RRS recursion takes before the
#: residuals stop changing; past it a call is refused with that estimate.
MAX_RRS_WORK = 10**8
#: Largest ``k batch`` that :func:`rrs_rejection_factors` writes out.
MAX_RRS_FACTORS = 10**7


def _rrs_steps(p, q, k: int, xp):
    """The RRS recursion as ``(factors, repeat)`` steps: ``factors`` (shape ``(batch,)``)
    holds for ``repeat`` drafts in a row.  Once every row's residual stops changing (a
    residual on the tokens where ``q = 0``, a single token, or one that is used up: factor 0),
    the factor stays the same for the drafts left, so the steps end after at most a few
    passes per token rather than ``k``; work past :data:`MAX_RRS_WORK` before that is
    refused."""
    from ..core.errors import TooLarge

    P, Q, _ = pair_rows(p, q, xp)
    Q = normalized(Q, xp)
    r = normalized(P, xp)
    alive = xp.ones(r.shape[:-1], dtype=xp.bool)
    done = 0
    size = r.shape[0] * r.shape[-1]
    while done < k:                                       # a loop over k only
        if done * size > MAX_RRS_WORK:
            raise TooLarge(f"RRS at k = {k:,}: about {k * size:,} row-token steps "
                           f"({k:,} drafts x {r.shape[-1]:,} tokens x {r.shape[0]:,} rows), "
                           f"over the budget of {MAX_RRS_WORK:,}, and the residuals still "
                           "change: use a smaller k", estimate=k * size, budget=MAX_RRS_WORK)
        d = xp.maximum(r - Q, 0.0)
        tv = xp.sum(d, axis=-1)
        tv = xp.where(alive, tv, 0.0)
        alive = alive & (tv > 0)
        r_next = d / xp.where(tv > 0, tv, 1.0)[..., None]
        done += 1
        if xp is np and not np.any(np.abs(r_next[alive] - r[alive]) > 4 * 2.0 ** -53):
            yield tv, 1                                   # the residual stays: so does tv
            if done < k:
                yield xp.where(alive, tv, 0.0), k - done
            return
        yield tv, 1
        r = r_next


def rrs_rejection_factors(p, q, k: int, xp: Any = None):
    """``TV(r_{i-1}, q)`` for ``i = 1..k``, shape ``(batch, k)``: the chance that RRS rejects
    draft ``i`` given that it rejected the earlier ones.

    ``r_0 = p``, ``r_i = norm((r_{i-1} - q)_+)``.  A step with ``TV = 0`` accepts surely; the
    factors after it are reported as 0 (the residual is never formed).  Once the residuals
    stop changing the last factor repeats (no more passes over the rows); more than
    :data:`MAX_RRS_FACTORS` factors in all are refused.
    """
    from ..core.errors import TooLarge

    xp = namespace(xp)
    k = check_k(k)
    batch = pair_rows(p, q, xp)[0].shape[0]
    if k * batch > MAX_RRS_FACTORS:
        raise TooLarge(f"RRS rejection factors at k = {k:,}: {k * batch:,} numbers, over the "
                       f"budget of {MAX_RRS_FACTORS:,}: use a smaller k (the acceptance alone "
                       "takes any k)", estimate=k * batch, budget=MAX_RRS_FACTORS)
    factors = []
    for tv, repeat in _rrs_steps(p, q, k, xp):
        factors.extend([tv] * repeat)
    return xp.stack(factors, axis=-1)


def rrs_rejection(p, q, k: int, xp: Any = None):
    """``P(RRS rejects all k drafts) = prod_i TV(r_{i-1}, q)`` per row.

    Within ``1e-13`` absolute of the exact product on the same inputs: each factor is a sum
    of positive parts (no cancellation in the sum), and an error ``d`` in ``r_{i-1}``
    changes ``TV(r_{i-1}, q)`` by at most ``|d|_1``.  A factor that repeats for the drafts
    left is raised to that power (any ``k``).
    """
    xp = namespace(xp)
    k = check_k(k)
    product = None
    for tv, repeat in _rrs_steps(p, q, k, xp):
        term = tv if repeat == 1 else power_by_squaring(tv, repeat)
        product = term if product is None else product * term
        if xp is np and not product.any():               # 0 stays 0: every row is done
            break
    return product


def rrs_acceptance(p, q, k: int, xp: Any = None):
    """RRS acceptance ``1 - prod_{i=1..k} TV(r_{i-1}, q)`` per row, in ``O(k |V|)``.

    Float twin of :func:`exactspec.numpy_backend.twins.rrs_acceptance_exact` (and of
    ``verify("rrs", ...)``'s acceptance); tolerance ``1e-13`` absolute.

    >>> import numpy as np
    >>> float(rrs_acceptance(np.array([5/9, 4/9]), np.array([1/3, 2/3]), 2)[0]) * 27
    23.0
    """
    xp = namespace(xp)
    return 1.0 - rrs_rejection(p, q, k, xp)
