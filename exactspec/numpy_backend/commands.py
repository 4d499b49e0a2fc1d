"""What the command line's ``--backend numpy`` calls: JSON-ready dicts with ``_float`` keys.

Float results are never proofs: these dicts carry no ``lossless`` key, every float value's key
ends in ``_float``, and ``"exact": false`` says so.  Inputs may be Dists (rounded to the
nearest floats), mappings, lists or 1-D arrays; rows are normalised unless ``normalize=False``,
in which case a row must sum to 1 within ``1e-9``.

>>> out = optimal_float([0.5, 0.3, 0.2], [0.2, 0.2, 0.6], 2)
>>> round(out["alpha_star_float"], 12), {t: round(v, 12) for t, v in out["a_star_float"].items()}
(0.84, {'0': 0.36, '1': 0.28, '2': 0.2})
>>> round(verify_float("rrs", [0.5, 0.3, 0.2], [0.2, 0.2, 0.6], 2)["acceptance_float"], 12)
0.76
"""

from __future__ import annotations

import math

import numpy as np

from ..core.errors import InvalidInput, TooLarge
from ._arrays import as_labels, as_rows, float64_values
from .acceptance import (ONE_DRAFT_ATOL, RRS_ATOL, one_draft_acceptance, rrs_acceptance,
                         rrs_rejection_factors)
from .optimum import (A_STAR_ATOL, A_STAR_RTOL, ALPHA_STAR_ATOL, check_k, optimum_bucketed,
                      optimum_sorted)
from .samplers import SAMPLERS, sample

__all__ = ["optimal_float", "verify_float", "simulate_float", "compare_float",
           "VERIFY_METHODS"]

#: Methods ``verify_float`` handles, and how.
VERIFY_METHODS = {
    "sps": "closed form: sum min(p, q)",
    "rrs": "closed form: 1 - prod TV(r_{i-1}, q)",
    "rrs-wor": "sampled estimate with a standard error",
    "naive": "closed form: output law q",
    "top1": "closed form: output argmax p",
}


#: ``verify --backend numpy rrs`` lists RRS's rejection factors up to this ``k``.
_LISTED_FACTORS = 10_000


def _instance(p, q, normalize: bool):
    P, _ = as_rows(p, "p")
    Q, _ = as_rows(q, "q")
    if P.shape[0] != 1 or Q.shape[0] != 1:
        raise InvalidInput("p and q must be single distributions (one row each) here")
    if P.shape[1] != Q.shape[1]:
        raise InvalidInput(f"q has {Q.shape[1]} entries but p has {P.shape[1]}")
    if not normalize:                                    # the rows as given (as_rows may
        for name, row in (("p", p), ("q", q)):           # have rescaled them)
            try:
                total = math.fsum(
                    np.asarray(float64_values(row), dtype=np.float64).ravel().tolist())
            except OverflowError:                        # entries near the largest float
                total = math.inf
            if abs(total - 1) > 1e-9:
                raise InvalidInput(f"{name} sums to {total!r}, not 1 (use --normalize to "
                                   "rescale)")
    labels = as_labels(p, P.shape[1])
    return P[0] / P[0].sum(), Q[0] / Q[0].sum(), [str(t) for t in labels]


def _header(kind: str, k: int, n: int) -> dict:
    return {"backend": "numpy", "exact": False, "kind": kind, "k": k, "tokens": n}


def optimal_float(p, q, k: int, *, normalize: bool = True, method: str = "bucketed") -> dict:
    """``alpha*`` and ``a*`` in float64 (``exactspec optimal --backend numpy``).

    Keys: ``alpha_star_float``, ``a_star_float`` (``{label: float}``), the tolerances
    against the exact engine (``alpha_star_tolerance_float``, ``a_star_atol_float``,
    ``a_star_rtol_float``), ``rrs_acceptance_float`` for comparison, ``sorted_tokens`` and
    the bookkeeping keys ``backend``, ``exact`` (false), ``kind``, ``k``, ``tokens``.
    """
    k = check_k(k)
    P, Q, labels = _instance(p, q, normalize)
    if method == "bucketed":
        opt = optimum_bucketed(P, Q, k)
    elif method == "sorted":
        opt = optimum_sorted(P, Q, k)
    else:
        raise InvalidInput(f"method={method!r}: choose bucketed or sorted")
    out = _header("optimal", k, P.size)
    try:                                                 # for comparison only: a k too large
        rrs = float(rrs_acceptance(P, Q, k)[0])          # for the recursion is said, not fatal
    except TooLarge as err:
        rrs, out["rrs_acceptance_skipped"] = None, str(err)
    out.update({
        "method": opt.method,
        "alpha_star_float": float(opt.alpha_star[0]),
        "a_star_float": dict(zip(labels, opt.a_star[0].tolist())),
        "rrs_acceptance_float": rrs,
        "alpha_star_tolerance_float": ALPHA_STAR_ATOL,
        "a_star_atol_float": A_STAR_ATOL,
        "a_star_rtol_float": A_STAR_RTOL,
        "sorted_tokens": int(opt.sorted_tokens[0]),
    })
    return out


def verify_float(method, p, q, k: int = 1, *, normalize: bool = True,
                 samples: int = 20_000, seed: int = 0) -> dict:
    """Acceptance (``P(Y in X)``) of a method in floats (``exactspec verify --backend numpy``).

    Closed forms for ``sps``, ``rrs``, ``naive`` and ``top1``; a seeded sampled estimate with
    its standard error for ``rrs-wor``.  Never says ``lossless``: only the exact engine proves
    that.  Keys: ``acceptance_float`` and, as they apply, ``rejection_factors_float``,
    ``optimal_acceptance_float``, ``output_float``, ``bias_float``,
    ``acceptance_stderr_float``, ``samples``, ``estimate`` (``"closed form"`` or
    ``"sampled"``), ``tolerance_float``.
    """
    name = getattr(method, "name", method)
    k = check_k(k)
    if name not in VERIFY_METHODS:
        raise InvalidInput(f"method {name!r}: the NumPy backend verifies "
                           f"{', '.join(VERIFY_METHODS)}; use the exact engine for others")
    if name in ("sps", "naive", "top1") and k != 1:
        raise InvalidInput(f"{name} takes only k = 1, not k = {k}")
    P, Q, labels = _instance(p, q, normalize)
    out = _header("verify", k, P.size)
    out["method"] = name
    out["estimate"] = "closed form"
    if name == "sps":
        out["acceptance_float"] = float(one_draft_acceptance(P, Q)[0])
        out["tolerance_float"] = ONE_DRAFT_ATOL
    elif name == "rrs":
        if k <= _LISTED_FACTORS:
            factors = rrs_rejection_factors(P, Q, k)[0]
            out["acceptance_float"] = float(1.0 - np.prod(factors))
            out["rejection_factors_float"] = factors.tolist()
        else:                                            # the product alone, any k
            out["acceptance_float"] = float(rrs_acceptance(P, Q, k)[0])
        out["tolerance_float"] = RRS_ATOL
    elif name == "naive":
        out["acceptance_float"] = 1.0
        out["output_float"] = dict(zip(labels, Q.tolist()))
        out["bias_float"] = float(1.0 - one_draft_acceptance(P, Q)[0])
    elif name == "top1":
        top = int(np.argmax(P))
        law = np.zeros_like(P)
        law[top] = 1.0
        out["acceptance_float"] = float(Q[top])
        out["output_float"] = dict(zip(labels, law.tolist()))
        out["bias_float"] = float(1.0 - P[top])
    else:                                                   # rrs-wor: sampled
        if not isinstance(samples, int) or samples < 2:
            raise InvalidInput(f"samples={samples!r}: need at least 2")
        res = sample(name, P, Q, k, np.random.default_rng(seed), n=samples)
        rate = float(res.accepted.mean())
        out.update({"estimate": "sampled", "samples": samples, "seed": seed,
                    "acceptance_float": rate,
                    "acceptance_stderr_float": math.sqrt(max(rate * (1 - rate), 0.0)
                                                         / samples)})
    if name in ("sps", "rrs"):
        out["optimal_acceptance_float"] = float(optimum_bucketed(P, Q, k).alpha_star[0])
    return out


def simulate_float(method, p, q, k: int = 1, n: int = 10_000, *, seed: int = 0,
                   normalize: bool = True) -> dict:
    """Sample a method ``n`` times with the batched NumPy samplers
    (``exactspec simulate --backend numpy``): counts, empirical law, acceptance with its 95%
    Wilson interval, and the empirical law's total variation to ``p``."""
    name = getattr(method, "name", method)
    k = check_k(k)
    if name not in SAMPLERS:
        raise InvalidInput(f"method {name!r}: the NumPy samplers are {', '.join(SAMPLERS)}")
    if not isinstance(n, int) or n < 1:
        raise InvalidInput(f"n={n!r}: need a positive number of samples")
    P, Q, labels = _instance(p, q, normalize)
    res = sample(name, P, Q, k, np.random.default_rng(seed), n=n)
    counts = np.bincount(res.tokens, minlength=P.size)
    rate = float(res.accepted.mean())
    z = 1.959963984540054
    denom = 1 + z * z / n
    centre = (rate + z * z / (2 * n)) / denom
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / denom
    out = _header("simulate", k, P.size)
    out.update({
        "method": name, "n": n, "seed": seed,
        "counts": dict(zip(labels, counts.tolist())),
        "empirical_float": dict(zip(labels, (counts / n).tolist())),
        "acceptance_float": rate,
        "acceptance_interval_float": [max(0.0, centre - half), min(1.0, centre + half)],
        "tv_to_target_float": float(0.5 * np.abs(counts / n - P).sum()),
    })
    return out


def compare_float(p, q, k: int, methods=("rrs",), *, normalize: bool = True) -> dict:
    """Acceptance of i.i.d.-draft methods against ``alpha*`` in floats
    (``exactspec compare --backend numpy``): rows of ``method``, ``acceptance_float`` and
    ``ratio_to_optimal_float``."""
    k = check_k(k)
    P, Q, _ = _instance(p, q, normalize)
    alpha = float(optimum_bucketed(P, Q, k).alpha_star[0])
    rows = []
    for m in methods:
        name = getattr(m, "name", m)
        if name == "rrs":
            acc = float(rrs_acceptance(P, Q, k)[0])
        elif name == "sps" and k == 1:
            acc = float(one_draft_acceptance(P, Q)[0])
        else:
            raise InvalidInput(f"method {name!r}: compare --backend numpy handles rrs (and sps "
                               "at k = 1)")
        rows.append({"method": name, "acceptance_float": acc,
                     "ratio_to_optimal_float": acc / alpha if alpha > 0 else None})
    out = _header("compare", k, P.size)
    out.update({"alpha_star_float": alpha, "methods": rows})
    return out
