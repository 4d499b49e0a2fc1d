"""``alpha*`` and ``a*`` in float64 over batches of rows: one sort, or buckets and a partial sort.

The float twins of :func:`exactspec.optimum.alpha_star.optimum` (docs/math.md#the-optimum).  With the tokens
sorted by ``q/p`` ascending (``p = 0`` last, ties by index) and prefix sums ``P_j``, ``Q_j``::

    h_j = g_k(Q_j) - P_j,   M_j = min(0, h_1, ..., h_j),   alpha* = 1 + M_n,
    a*_j = p_j + min(0, h_j - M_{j-1})

(the cumulative minimum ``F_j = P_j + M_j``).  :func:`optimum_sorted` is the straightforward
version (one ``argsort``, compensated prefix sums, a cumulative minimum) and the reference;
:func:`optimum_bucketed` sorts only the tokens whose ``a*`` can differ from ``p``.  They are
defined in :mod:`exactspec.numpy_backend.float_optimum` (with the result, the tolerances and
the inputs read) and :mod:`exactspec.numpy_backend.bucketed`; this module gathers them and
adds the conveniences :func:`alpha_star` and :func:`a_star`.

Tolerance against the exact twin on the same float inputs converted exactly (rows normalised
exactly by the twin, in floats here): ``|alpha*_float - alpha*| <= 1e-13`` and, per token,
``|a*_float - a*| <= 1e-14 + 1e-12 a*`` for ``|V|`` up to a few hundred thousand (the terms
are each a few roundings of ``2^-53``; the bounds leave room).  Exceptions: two tokens whose
ratios ``q/p`` differ by less than about ``2^-105`` relative are ordered by index, which can
move ``a*`` between them (``alpha*`` is unaffected to first order).

>>> import numpy as np
>>> opt = optimum_sorted(np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.2, 0.6]), 2)
>>> round(float(opt.alpha_star[0]), 12), np.round(opt.a_star[0], 12).tolist()
(0.84, [0.36, 0.28, 0.2])
"""

from __future__ import annotations

import numpy as np  # noqa: F401  (the examples' namespace)

from ..core.errors import InvalidInput
from ._arrays import as_rows
from .bucketed import COMPILED_MIN_TOKENS, optimum_bucketed
from .float_optimum import (A_STAR_ATOL, A_STAR_RTOL, ALPHA_STAR_ATOL, FloatOptimum, check_k,
                            optimum_sorted, pair_rows)

__all__ = ["FloatOptimum", "optimum_sorted", "optimum_bucketed", "alpha_star", "a_star",
           "ALPHA_STAR_ATOL", "A_STAR_ATOL", "A_STAR_RTOL", "check_k", "pair_rows",
           "COMPILED_MIN_TOKENS"]


# -- conveniences -----------------------------------------------------------------------

def alpha_star(p, q, k: int, *, method: str = "bucketed"):
    """``alpha*`` per row (float64 array, or a float for one row); ``method`` is
    ``"bucketed"`` (default) or ``"sorted"``.  Tolerance ``1e-13`` against
    :func:`exactspec.optimum.alpha_star.optimal_acceptance`.

    >>> round(alpha_star([0.5, 0.3, 0.2], [0.2, 0.2, 0.6], 3), 12)
    0.984
    """
    opt, one_row = _run(p, q, k, method)
    return float(opt.alpha_star[0]) if one_row else opt.alpha_star


def a_star(p, q, k: int, *, method: str = "bucketed"):
    """``a*`` per row (same shape as ``p``).  Tolerance ``1e-14 + 1e-12 a*`` per token
    against :func:`exactspec.optimum.alpha_star.accepted_law`.

    >>> np.round(a_star([0.5, 0.3, 0.2], [0.2, 0.2, 0.6], 3), 12).tolist()
    [0.488, 0.296, 0.2]
    """
    opt, one_row = _run(p, q, k, method)
    return opt.a_star[0] if one_row else opt.a_star


def _run(p, q, k, method):
    one_row = as_rows(p, "p")[1] and as_rows(q, "q")[1]
    if method == "bucketed":
        return optimum_bucketed(p, q, k), one_row
    if method == "sorted":
        return optimum_sorted(p, q, k), one_row
    raise InvalidInput(f"method={method!r}: choose bucketed or sorted")
