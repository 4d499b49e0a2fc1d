"""Rows of a dump as float64 probabilities: logits through a tempered softmax, probabilities
checked and normalised, an optional top-p cut; bad rows found and named.

>>> import numpy as np
>>> P, bad = probabilities(np.array([[0.0, np.log(3.0)]]), logits=True)
>>> np.round(P, 12).tolist(), bad
([[0.25, 0.75]], [])
>>> P, bad = probabilities(np.array([[0.5, 0.5], [np.nan, 1.0]]), logits=False, name="draft")
>>> bad
[(1, 'draft row holds NaN')]
"""

from __future__ import annotations

import numpy as np

from ..core.errors import InvalidInput

__all__ = ["probabilities", "top_p_cut", "sum_tolerance"]


def sum_tolerance(dtype: str) -> float:
    """How far from 1 a stored probability row may sum: ``1e-2`` for 16-bit types (a rounding
    of ``2^-9`` relative per entry), ``1e-4`` for float32, ``1e-8`` for float64."""
    return {"float16": 1e-2, "bfloat16": 1e-2, "float32": 1e-4}.get(dtype, 1e-8)


def probabilities(rows, *, logits: bool, temperature: float = 1.0, top_p: float | None = None,
                  tolerance: float = 1e-8, name: str = "target", out=None):
    """Rows as float64 probability rows, and the bad rows as ``(row index, reason)``.

    Logits: ``softmax(x / T)`` in float64 (``-inf`` is a token of probability 0; NaN, ``+inf``
    or a row with no finite logit is bad).  Probabilities: each row must be finite,
    non-negative and sum to 1 within ``tolerance``; it is then divided by its sum.  With
    ``top_p``, each row keeps its most likely tokens up to mass ``top_p`` (the token that
    reaches it included) and is renormalised.  Bad rows come back as zeros.  ``out``: a
    float64 array of the rows' shape to work in (else a new one).
    """
    if out is not None and np.shape(rows) == out.shape and np.ndim(rows) == 2:
        x = out
        np.copyto(x, rows)                               # a private copy, worked in place
    else:
        x = np.array(rows, dtype=np.float64)
    if x.ndim != 2:
        raise InvalidInput(f"{name}: need rows of shape (positions, vocab), got {x.shape}")
    bad: dict[int, str] = {}
    if logits:
        if temperature <= 0 or not np.isfinite(temperature):
            raise InvalidInput(f"temperature={temperature}: need a positive finite number")
        top = x.max(axis=-1)                              # NaN and +inf show here
        for i in np.flatnonzero(~np.isfinite(top)):
            row = x[i]
            if np.isnan(row).any():
                bad[int(i)] = f"{name} row holds NaN"
            elif (row == np.inf).any():
                bad[int(i)] = f"{name} row holds +inf"
            else:
                bad[int(i)] = f"{name} row has no finite logit"
        if bad:
            rows_bad = list(bad)
            x[rows_bad] = 0.0
            top[rows_bad] = 0.0
        with np.errstate(over="ignore"):                 # a spread past the largest float
            x -= top[:, None]                            # is -inf: probability 0, as exp
            if temperature != 1:                         # of it is in float64 anyway
                x /= temperature
        np.exp(x, out=x)
        total = x.sum(axis=-1)
        if bad:
            x[list(bad)] = 0.0
            total[list(bad)] = 1.0
        x /= total[:, None]
        P = x
    else:
        with np.errstate(over="ignore"):                 # a sum past the largest float:
            total = x.sum(axis=-1)                       # inf, told apart below
        low = x.min(axis=-1)
        for i in np.flatnonzero(~np.isfinite(total) | np.isnan(low)):
            bad[int(i)] = (f"{name} row holds NaN" if np.isnan(x[i]).any()
                           else f"{name} row holds an infinite value" if np.isinf(x[i]).any()
                           else f"{name} row sums past the largest float64, not to 1 (give "
                                "--logits for logits)")
        for i in np.flatnonzero(low < 0):
            bad.setdefault(int(i), f"{name} row holds a negative probability")
        with np.errstate(invalid="ignore"):
            off = np.abs(total - 1.0) > tolerance
        for i in np.flatnonzero(off):
            bad.setdefault(int(i), f"{name} row sums to {total[i]:.6g}, not 1 "
                                   f"(tolerance {tolerance:g}; give --logits for logits)")
        if bad:
            x[list(bad)] = 0.0
            total[list(bad)] = 1.0
        x /= total[:, None]
        P = x
    if top_p is not None:
        P = top_p_cut(P, top_p)
    return P, sorted(bad.items())


def top_p_cut(P, top_p: float):
    """Keep each row's most likely tokens whose mass before them is below ``top_p``
    (ties in probability by token index), zero the rest, renormalise.

    >>> top_p_cut(np.array([[0.5, 0.25, 0.25]]), 0.75).tolist()
    [[0.6666666666666666, 0.3333333333333333, 0.0]]
    """
    if not 0 < top_p <= 1:
        raise InvalidInput(f"top_p={top_p}: need a number in (0, 1]")
    if top_p == 1:
        return P
    order = np.argsort(-P, axis=-1, kind="stable")
    sorted_p = np.take_along_axis(P, order, axis=-1)
    before = np.cumsum(sorted_p, axis=-1) - sorted_p
    keep_sorted = before < top_p
    keep = np.zeros_like(keep_sorted)
    np.put_along_axis(keep, order, keep_sorted, axis=-1)
    cut = np.where(keep, P, 0.0)
    s = cut.sum(axis=-1, keepdims=True)
    return cut / np.where(s > 0, s, 1.0)
