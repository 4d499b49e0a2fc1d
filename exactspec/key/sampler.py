"""The key sampler with real-valued keys, and a goodness-of-fit test of it with stated power.

:func:`sample_selection` runs the mechanism literally: every draft of token ``t`` picks a slot
from ``t``'s slot law and a uniform position inside it (a float in ``[0, 1)``); the draft with
the smallest key is selected.  Nothing here is a proof: :func:`selection_test` sets the
empirical law against the exact closed form (:func:`exactspec.key.selection_law`) with a
chi-square test, and states the test's power against every alternative at total-variation
distance ``epsilon`` or more.

Power: for sample size ``n``, cells with expected probabilities ``p0`` and a true law ``p1``,
the statistic is asymptotically non-central chi-square with ``df = cells - 1`` and
non-centrality ``lambda = n sum (p1 - p0)^2 / p0 >= 4 n TV(p1, p0)^2`` (Cauchy-Schwarz), so
``power >= P(chi2(df, 4 n eps^2) > critical value)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import InvalidInput
from ..numpy_backend.harness import chi2_isf, chi2_sf, ncx2_sf
from .placement import KeyPlacement
from .selection import selection_law

__all__ = ["sample_selection", "sample_verifier", "selection_test", "verifier_test",
           "chi2_power", "chi2_critical", "SamplingTest"]


def _key_tables(plan: KeyPlacement, token):
    law = plan.slot_law(token)
    slots = np.array(law.labels, dtype=np.int64)
    cdf = np.cumsum([float(v) for v in law.probs])
    cdf[-1] = 1.0
    lo = np.array([float(plan.cuts[j]) for j in law.labels])
    width = np.array([float(plan.cuts[j + 1] - plan.cuts[j]) for j in law.labels])
    return slots, cdf, lo, width


def sample_keys(plan: KeyPlacement, token, size: int, rng) -> np.ndarray:
    """``size`` keys of ``token`` as floats in ``[0, 1)``: a slot, then a uniform position."""
    slots, cdf, lo, width = _key_tables(plan, token)
    piece = np.minimum(np.searchsorted(cdf, rng.random(size), side="right"), len(cdf) - 1)
    return lo[piece] + width[piece] * rng.random(size)


def sample_selection(plan: KeyPlacement, drafts, n: int, rng=None, seed: int = 0) -> np.ndarray:
    """``n`` runs of the key mechanism on the drafts ``X``: the index (into ``drafts``) of the
    draft with the smallest real-valued key, shape ``(n,)``."""
    rng = np.random.default_rng(seed) if rng is None else rng
    drafts = tuple(drafts)
    if not drafts:
        raise InvalidInput("drafts is empty: need at least one draft")
    keys = np.stack([sample_keys(plan, x, n, rng) for x in drafts], axis=1)
    return np.argmin(keys, axis=1)


def sample_verifier(plan: KeyPlacement, n: int, rng=None, seed: int = 0):
    """``n`` runs of the whole KEY verifier with real-valued keys.

    Returns ``(outcome, output)``: ``outcome[i]`` is the index of the accepted token, or
    ``len(labels)`` for a rejection; ``output[i]`` the index of the output token.
    """
    rng = np.random.default_rng(seed) if rng is None else rng
    labels = plan.p.labels
    m = len(labels)
    k = plan.k
    qf = np.array([float(plan.q[t]) for t in labels])
    drafts = np.searchsorted(np.cumsum(qf) / qf.sum(), rng.random((n, k)), side="right")
    drafts = np.minimum(drafts, m - 1)
    keys = np.empty((n, k))
    for i, t in enumerate(labels):
        if plan.q[t] == 0:
            continue
        where = drafts == i
        keys[where] = sample_keys(plan, t, int(where.sum()), rng)
    selected = drafts[np.arange(n), np.argmin(keys, axis=1)]
    beta = np.array([float(plan.beta[t]) for t in labels])
    accept = rng.random(n) < beta[selected]
    outcome = np.where(accept, selected, m)
    output = selected.copy()
    if plan.residual is not None:
        rcdf = np.cumsum([float(v) for v in plan.residual.probs])
        resid = np.minimum(np.searchsorted(rcdf / rcdf[-1], rng.random(n), side="right"), m - 1)
        output = np.where(accept, selected, resid)
    return outcome, output


# -- chi-square critical values and power (mpmath, no scipy) ------------------------------

def _chi2_sf(x: float, df: int):
    return chi2_sf(x, df)


def chi2_critical(df: int, level: float) -> float:
    """The ``1 - level`` quantile of the central chi-square with ``df`` degrees of freedom.

    >>> round(chi2_critical(1, 0.05), 4), round(chi2_critical(4, 0.001), 3)
    (3.8415, 18.467)
    """
    return chi2_isf(level, df)


def chi2_power(df: int, noncentrality: float, level: float) -> float:
    """``P(chi2(df, lambda) > critical value at level)``: the test's power.

    >>> round(chi2_power(1, 0.0, 0.05), 6)
    0.05
    """
    return ncx2_sf(chi2_critical(df, level), df, noncentrality)


@dataclass
class SamplingTest:
    """A chi-square goodness-of-fit test of sampled outcomes against an exact law.

    ``passed`` is ``p_value >= level``; ``power`` is the power against every alternative at
    total-variation distance at least ``epsilon`` (a lower bound, asymptotic).
    """

    n: int
    cells: int
    statistic: float
    p_value: float
    level: float
    epsilon: float
    power: float
    max_abs_error: float

    @property
    def passed(self) -> bool:
        return self.p_value >= self.level

    def describe(self) -> str:
        return (f"n = {self.n:,} samples, {self.cells} cells: chi2 = {self.statistic:.2f}, "
                f"p-value {self.p_value:.3g} (level {self.level:g}); power >= "
                f"{self.power:.4f} against any law at TV >= {self.epsilon:g}")


def _chi2_test(counts: np.ndarray, expected: list, n: int, level: float,
               epsilon: float) -> SamplingTest:
    p0 = np.array([float(v) for v in expected])
    keep = p0 > 0
    if np.any(counts[~keep] > 0):               # an impossible outcome happened: reject
        return SamplingTest(n, int(keep.sum()), float("inf"), 0.0, level, epsilon, 1.0, 1.0)
    observed, probs = counts[keep], p0[keep]
    stat = float(((observed - n * probs) ** 2 / (n * probs)).sum())
    df = max(int(keep.sum()) - 1, 1)
    p_value = float(_chi2_sf(stat, df)) if keep.sum() > 1 else 1.0
    power = chi2_power(df, 4 * n * epsilon ** 2, level) if keep.sum() > 1 else 1.0
    err = float(np.abs(counts / n - p0).max())
    return SamplingTest(n, int(keep.sum()), stat, p_value, level, epsilon, power, err)


def selection_test(plan: KeyPlacement, drafts, n: int = 200_000, *, seed: int = 0,
                   level: float = 1e-3, epsilon: float = 0.01) -> SamplingTest:
    """Test the sampled smallest-key token against ``selection_law(plan, drafts)``.

    >>> from exactspec.core.dist import Dist
    >>> from exactspec.key.placement import key_placement
    >>> plan = key_placement(Dist.parse("3/5,2/5"), Dist.parse("1/2,1/2"), 8)
    >>> test = selection_test(plan, (0, 0, 0, 1, 1, 1, 1, 1), n=100_000, epsilon=0.02)
    >>> test.passed, test.power > 0.99
    (True, True)
    """
    drafts = tuple(drafts)
    labels = plan.p.labels
    exact = selection_law(plan, drafts)
    index = np.array([labels.index(x) for x in drafts])
    chosen = index[sample_selection(plan, drafts, n, seed=seed)]
    counts = np.bincount(chosen, minlength=len(labels)).astype(float)
    return _chi2_test(counts, list(exact.probs), n, level, epsilon)


def verifier_test(plan: KeyPlacement, n: int = 200_000, *, seed: int = 0,
                  level: float = 1e-3, epsilon: float = 0.01) -> SamplingTest:
    """Test the whole sampled verifier's (accepted token | rejected) outcome against the exact
    law ``(a*(t) for t) + (1 - alpha*)``: ``sum_X P(X) r*(t | X) = a*(t)``."""
    outcome, _ = sample_verifier(plan, n, seed=seed)
    m = len(plan.p.labels)
    counts = np.bincount(outcome, minlength=m + 1).astype(float)
    expected = list(plan.a_star.probs) + [1 - plan.alpha_star]
    return _chi2_test(counts, expected, n, level, epsilon)
