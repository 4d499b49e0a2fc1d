"""The summary of a sweep's table: means with 95% confidence intervals, and the gap and
rejection-ratio statistics of RRS against the optimum.

Confidence intervals are the normal approximation ``mean +- 1.96 sd / sqrt(n)`` over
positions (positions are treated as independent draws; for ``rrs-wor`` the per-position
sampling noise is inside ``sd``).  The gap statistics: mean, median, 90th percentile and
maximum of ``alpha* - alpha_RRS``; the pooled rejection ratio
``sum(1 - alpha_RRS) / sum(1 - alpha*)``; the smallest ``alpha_RRS / alpha*`` beside the tight
bound ``rho_k`` (docs/math.md#the-bound-rho_k).

>>> import numpy as np
>>> mean, (low, high) = mean_ci(np.array([1.0, 2.0, 3.0]))
>>> mean, round(low, 6), round(high, 6)
(2.0, 0.868414, 3.131586)
"""

from __future__ import annotations

import math

import numpy as np

from .figures import column

__all__ = ["mean_ci", "rho_float", "summarize"]

Z95 = 1.959963984540054


def mean_ci(values) -> tuple[float, list[float]]:
    """``(mean, [low, high])`` with the normal-approximation 95% interval; NaNs ignored."""
    x = np.asarray(values, dtype=np.float64)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return math.nan, [math.nan, math.nan]
    mean = float(x.mean())
    half = Z95 * float(x.std(ddof=1)) / math.sqrt(x.size) if x.size > 1 else 0.0
    return mean, [mean - half, mean + half]


def rho_float(k: int) -> float:
    """``rho_k = 1 - ((k-1)/(2k-1)) (k/(2k-1))^(k/(k-1))`` in floats (1 at ``k = 1``); the
    exact derivation is :func:`exactspec.bounds.rho.rho`."""
    if k == 1:
        return 1.0
    return 1 - (k - 1) / (2 * k - 1) * (k / (2 * k - 1)) ** (k / (k - 1))


def summarize(table: dict, ks, methods, gamma: int) -> dict:
    """The summary as a JSON-ready dict (floats under keys ending ``_float``)."""
    k_col = table["k"]
    out: dict = {"methods": [], "alpha_star_mean_float": [], "alpha_star_ci95_float": [],
                 "gap_mean_float": [], "gap_ci95_float": [], "gap_median_float": [],
                 "gap_p90_float": [], "gap_max_float": [],
                 "pooled_rejection_ratio_float": [], "min_ratio_rrs_float": [],
                 "rho_k_float": [rho_float(k) for k in ks]}
    if k_col.size:
        out["one_draft_mean_float"], out["one_draft_ci95_float"] = mean_ci(
            table["alpha_one"][k_col == ks[0]])
    for k in ks:
        at = k_col == k
        mean, ci = mean_ci(table["alpha_star"][at])
        out["alpha_star_mean_float"].append(mean)
        out["alpha_star_ci95_float"].append(ci)
        for m in methods:
            acc = table[column(m)][at]
            mean, ci = mean_ci(acc)
            tpc, tpc_ci = mean_ci(table["tokens_per_call_" + m.replace("-", "_")][at])
            out["methods"].append({"method": m, "k": int(k), "acceptance_mean_float": mean,
                                   "acceptance_ci95_float": ci,
                                   "tokens_per_call_mean_float": tpc,
                                   "tokens_per_call_ci95_float": tpc_ci,
                                   "positions": int(np.count_nonzero(~np.isnan(acc)))})
        if "rrs" in methods and np.any(at):
            gap = table["gap_rrs"][at]
            rrs, opt = table["acc_rrs"][at], table["alpha_star"][at]
            mean, ci = mean_ci(gap)
            out["gap_mean_float"].append(mean)
            out["gap_ci95_float"].append(ci)
            out["gap_median_float"].append(float(np.median(gap)))
            out["gap_p90_float"].append(float(np.quantile(gap, 0.9)))
            out["gap_max_float"].append(float(gap.max()))
            rejected_opt = float((1 - opt).sum())
            out["pooled_rejection_ratio_float"].append(
                float((1 - rrs).sum()) / rejected_opt if rejected_opt > 0 else math.nan)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(opt > 0, rrs / opt, 1.0)
            out["min_ratio_rrs_float"].append(float(ratio.min()))
    out["gamma"] = gamma
    return out
