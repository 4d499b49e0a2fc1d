"""The NumPy float backend: batched float64 routines at real vocabulary sizes, each with an
exact twin it is cross-checked against (docs/math.md#float-backends-and-their-exact-twins).

Arrays have shape ``(batch, |V|)`` (a single row ``(|V|,)`` is one batch of 1); rows are
normalised like ``Dist(..., normalize=True)``.  No routine loops over the vocabulary in
Python (loops over ``k``, the batch, or chunks of samples only).  Float results are never
proofs.

================================  ===========================================  ======================
routine                           exact twin                                   stated tolerance
================================  ===========================================  ======================
``one_draft_acceptance``          ``exactspec.core.dist.overlap``              ``1e-14`` absolute
``rrs_acceptance``                ``twins.rrs_acceptance_exact``               ``1e-13`` absolute
``optimum_sorted``                ``exactspec.optimum.alpha_star.optimum``     ``alpha*``: ``1e-13``;
``optimum_bucketed``              (same)                                       ``a*``: ``1e-14 + 1e-12 a*``
``sample`` (sps, rrs, rrs-wor)    ``verify(method, ...)``                      chi-square test in
                                                                               :mod:`.harness`
================================  ===========================================  ======================

The command line's ``--backend numpy`` calls :func:`optimal_float`, :func:`verify_float`,
:func:`simulate_float` and :func:`compare_float`.

>>> import numpy as np
>>> p, q = np.array([[0.5, 0.3, 0.2]]), np.array([[0.2, 0.2, 0.6]])
>>> [round(float(x), 12) for x in (one_draft_acceptance(p, q)[0], rrs_acceptance(p, q, 2)[0],
...                               optimum_bucketed(p, q, 2).alpha_star[0])]
[0.6, 0.76, 0.84]
"""

from .acceptance import (ONE_DRAFT_ATOL, RRS_ATOL, one_draft_acceptance, rrs_acceptance,
                         rrs_rejection, rrs_rejection_factors)
from .commands import compare_float, optimal_float, simulate_float, verify_float
from .optimum import (A_STAR_ATOL, A_STAR_RTOL, ALPHA_STAR_ATOL, FloatOptimum, a_star,
                      alpha_star, optimum_bucketed, optimum_sorted)
from .samplers import (SAMPLERS, Samples, draft_iid, draft_wor, sample, verify_rrs,
                       verify_rrs_wor, verify_sps)
from .key import FloatKeyPlacement, KeySamples, key_placement, sample_key, verify_key


def _verify_key_lazy(p, q, drafts, rng):
    return verify_key(p, q, drafts, rng, lazy=True)


SAMPLERS["key"] = (draft_iid, verify_key)
SAMPLERS["key-lazy"] = (draft_iid, _verify_key_lazy)

__all__ = [
    "ALPHA_STAR_ATOL", "A_STAR_ATOL", "A_STAR_RTOL", "ONE_DRAFT_ATOL", "RRS_ATOL",
    "FloatKeyPlacement", "FloatOptimum", "KeySamples", "SAMPLERS", "Samples",
    "a_star", "alpha_star", "compare_float", "draft_iid", "draft_wor",
    "one_draft_acceptance", "optimal_float", "optimum_bucketed", "optimum_sorted",
    "rrs_acceptance", "rrs_rejection", "rrs_rejection_factors", "sample", "simulate_float",
    "key_placement", "sample_key", "verify_float", "verify_key", "verify_rrs",
    "verify_rrs_wor", "verify_sps",
]
