"""A statistical harness for external samplers: does a sampler follow the exact law?

Give it a sampler (for instance a port of an inference engine's verify kernel), the exact
output law of the correct method (``p`` for a lossless verifier; ``verify(...).law_dist()``
for any method), and a sample budget.  It draws the samples, bins them, runs Pearson's
chi-square goodness-of-fit test (or the G-test) against the exact law, and reports:

- the p-value (chi-square survival function from ``mpmath.gammainc``; no SciPy);
- ``detectable_tv``: the smallest total-variation bias (between binned laws) that this budget
  detects with the stated power (default 80%) at the stated level (default 0.01);
- a verdict: ``"inconsistent"`` when the p-value is below the level or a sample lands on a
  token of exact probability 0, else ``"consistent"``.

**How** ``detectable_tv`` **is derived.**  Under an alternative law ``pi'`` the statistic is
approximately non-central chi-square with ``df = bins - 1`` and non-centrality
``lambda = n * sum_i (pi'_i - pi_i)^2 / pi_i`` (the usual local-alternative approximation,
the same for the G-test).  By Cauchy-Schwarz, ``(sum_i |pi'_i - pi_i|)^2 <= sum_i
(pi'_i - pi_i)^2 / pi_i``, so a binned TV of ``delta`` forces ``lambda >= 4 n delta^2``;
since power grows with ``lambda``, every bias of at least
``delta* = sqrt(lambda* / (4 n))`` is detected with at least the stated power, where
``lambda*`` solves ``P(chi2'(df, lambda*) > c_alpha) = power``.  The bound is tight for a
bias proportional to ``pi`` on two halves of the mass; the tests check it by simulation.

>>> import numpy as np
>>> p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.2, 0.6])
>>> good = check_sampler(sps_kernel, p, 20_000, p=p, q=q, drafts="iid", seed=1)
>>> bad = check_sampler(sps_reused_uniform, p, 20_000, p=p, q=q, drafts="iid", seed=1)
>>> good.verdict, bad.verdict, round(good.detectable_tv, 3)
('consistent', 'inconsistent', 0.013)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import mpmath
import numpy as np

from ..core.errors import InvalidInput

__all__ = [
    "HarnessReport",
    "check_sampler",
    "goodness_of_fit",
    "chi2_sf",
    "chi2_isf",
    "ncx2_sf",
    "noncentrality_for_power",
    "detectable_tv",
    "sps_kernel",
    "sps_reused_uniform",
    "rrs_kernel",
    "rrs_fixed_residual",
]


# -- chi-square distributions without SciPy -------------------------------------------------

def chi2_sf(x: float, df: int) -> float:
    """``P(chi2(df) > x)``: the regularised upper incomplete gamma ``Q(df/2, x/2)``.

    >>> round(chi2_sf(3.841458820694124, 1), 6)
    0.05
    """
    if df < 1:
        raise InvalidInput(f"df={df}: need at least 1 degree of freedom")
    if x <= 0:
        return 1.0
    return float(mpmath.gammainc(df / 2, x / 2, mpmath.inf, regularized=True))


@functools.lru_cache(maxsize=256)
def chi2_isf(alpha: float, df: int) -> float:
    """The critical value ``c`` with ``P(chi2(df) > c) = alpha`` (bisection on
    :func:`chi2_sf`).

    >>> round(chi2_isf(0.01, 1), 4)
    6.6349
    """
    if not 0 < alpha < 1:
        raise InvalidInput(f"alpha={alpha}: the level must lie in (0, 1)")
    lo, hi = 0.0, df + 10.0 * math.sqrt(2 * df) + 50.0
    while chi2_sf(hi, df) > alpha:
        hi *= 2
    for _ in range(80):
        mid = (lo + hi) / 2
        if chi2_sf(mid, df) > alpha:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def ncx2_sf(x: float, df: int, lam: float) -> float:
    """``P(chi2'(df, lam) > x)`` for the non-central chi-square, as the Poisson mixture
    ``sum_j Pois(j; lam/2) Q(df/2 + j, x/2)``, with ``Q(a + 1, y) = Q(a, y) + y^a e^-y /
    Gamma(a + 1)`` after one ``mpmath.gammainc``.

    >>> round(ncx2_sf(6.634896601021214, 1, 0.0), 6)
    0.01
    """
    if lam < 0:
        raise InvalidInput(f"lam={lam}: the non-centrality cannot be negative")
    if x <= 0:
        return 1.0
    y, a = x / 2, df / 2
    half = lam / 2
    j_max = int(half + 12 * math.sqrt(half + 1) + 30)
    q = chi2_sf(x, df)                                   # Q(a, y)
    total = 0.0
    log_y = math.log(y)
    for j in range(j_max + 1):
        log_w = -half + (j * math.log(half) if half > 0 else (0.0 if j == 0 else -math.inf)) \
            - math.lgamma(j + 1)
        if log_w > -745:
            total += math.exp(log_w) * q
        q = min(1.0, q + math.exp((a + j) * log_y - y - math.lgamma(a + j + 1)))
    return min(1.0, total)


@functools.lru_cache(maxsize=256)
def noncentrality_for_power(df: int, alpha: float = 0.01, power: float = 0.8) -> float:
    """``lambda*``: the non-centrality at which the level-``alpha`` chi-square test with ``df``
    degrees of freedom has the given power (bisection; power grows with ``lambda``).

    >>> round(noncentrality_for_power(1, 0.01, 0.8), 3)
    11.679
    """
    if not 0 < power < 1:
        raise InvalidInput(f"power={power}: must lie in (0, 1)")
    c = chi2_isf(alpha, df)
    lo, hi = 0.0, 10.0 + c
    while ncx2_sf(c, df, hi) < power:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        if ncx2_sf(c, df, mid) < power:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def detectable_tv(n: int, df: int, alpha: float = 0.01, power: float = 0.8) -> float:
    """Every binned total-variation bias of at least this is detected with probability at
    least ``power`` by ``n`` samples at level ``alpha``: ``sqrt(lambda* / (4 n))``.

    >>> round(detectable_tv(10_000, 1), 4)
    0.0171
    """
    return math.sqrt(noncentrality_for_power(df, alpha, power) / (4 * n))


# -- the test -------------------------------------------------------------------------------

@dataclass
class HarnessReport:
    """The outcome of :func:`check_sampler` / :func:`goodness_of_fit`.

    Attributes
    ----------
    n : int
        Samples drawn.
    test : str
        ``"chi2"`` (Pearson) or ``"g"`` (likelihood ratio).
    statistic, df, p_value : float, int, float
    alpha, power : float
        The level and the power used for ``detectable_tv``.
    detectable_tv : float
        Smallest binned TV bias detected with probability ``>= power`` at level ``alpha``.
    verdict : str
        ``"consistent"`` or ``"inconsistent"``.
    bins : int
        Bins after grouping tokens so each expects at least ``min_expected`` samples.
    impossible : int
        Samples on tokens whose exact probability is 0 (any makes the verdict inconsistent).
    empirical_tv : float
        TV between the empirical and the exact law over tokens (noisy; for orientation).
    counts, law : arrays
        Per-token counts and the exact law as floats.
    """

    n: int
    test: str
    statistic: float
    df: int
    p_value: float
    alpha: float
    power: float
    detectable_tv: float
    verdict: str
    bins: int
    impossible: int
    empirical_tv: float
    counts: np.ndarray = field(repr=False)
    law: np.ndarray = field(repr=False)

    @property
    def consistent(self) -> bool:
        return self.verdict == "consistent"

    def to_json(self) -> dict:
        """JSON-ready fields (floats under ``_float`` keys)."""
        return {"n": self.n, "test": self.test, "statistic_float": self.statistic,
                "df": self.df, "p_value_float": self.p_value, "alpha_float": self.alpha,
                "power_float": self.power, "detectable_tv_float": self.detectable_tv,
                "verdict": self.verdict, "bins": self.bins, "impossible": self.impossible,
                "empirical_tv_float": self.empirical_tv}

    def __str__(self) -> str:
        name = "chi-square" if self.test == "chi2" else "G"
        why = (f"{self.impossible} samples on tokens of probability 0; "
               if self.impossible else "")
        return (f"{self.verdict} with the exact law at level {self.alpha:g}: {why}{name} "
                f"{self.statistic:.4g} on {self.df} df, p = {self.p_value:.3g} "
                f"({self.n} samples, {self.bins} bins); a total-variation bias of "
                f"{self.detectable_tv:.3g} or more would be detected with "
                f"{self.power:.0%} power")


def _law_array(law: Any) -> np.ndarray:
    probs = getattr(law, "probs", None)
    if probs is not None and hasattr(law, "labels"):
        values = [float(getattr(v, "expr", v)) for v in probs]
    elif isinstance(law, dict):
        values = [float(v) for v in law.values()]
    else:
        values = [float(v) for v in np.asarray(law, dtype=object).reshape(-1)]
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr < 0) or arr.sum() <= 0:
        raise InvalidInput("law must be a non-empty list of non-negative probabilities")
    return arr / arr.sum()


def _bins(law: np.ndarray, n: int, min_expected: float) -> np.ndarray:
    """A bin id per token (``-1`` for tokens of probability 0): tokens sorted by probability,
    consecutive ones grouped until each bin expects at least ``min_expected`` samples."""
    support = np.flatnonzero(law > 0)
    order = support[np.argsort(-law[support], kind="stable")]
    expected = law[order] * n
    before = np.cumsum(expected) - expected
    group = np.floor(before / min_expected).astype(np.int64)
    _, group = np.unique(group, return_inverse=True)
    n_groups = int(group.max()) + 1
    totals = np.bincount(group, weights=expected, minlength=n_groups)
    if n_groups > 1 and totals[-1] < min_expected:             # a thin last bin: merge it
        group[group == n_groups - 1] = n_groups - 2
    ids = np.full(law.size, -1, dtype=np.int64)
    ids[order] = group
    return ids


def goodness_of_fit(counts, law, *, alpha: float = 0.01, power: float = 0.8,
                    min_expected: float = 5.0, test: str = "chi2") -> HarnessReport:
    """Test per-token ``counts`` against the exact ``law`` (see the module docstring).

    >>> goodness_of_fit([5000, 5000], [0.5, 0.5]).verdict
    'consistent'
    >>> goodness_of_fit([5300, 4700], [0.5, 0.5]).verdict
    'inconsistent'
    """
    if test not in ("chi2", "g"):
        raise InvalidInput(f"test={test!r}: choose chi2 or g")
    if not 0 < alpha < 1:
        raise InvalidInput(f"alpha={alpha}: the level must lie in (0, 1)")
    pi = _law_array(law)
    counts = np.asarray(counts, dtype=np.int64).reshape(-1)
    if counts.size != pi.size:
        raise InvalidInput(f"counts has {counts.size} entries but the law has {pi.size}")
    n = int(counts.sum())
    if n < 1:
        raise InvalidInput("no samples to test")
    ids = _bins(pi, n, min_expected)
    impossible = int(counts[ids < 0].sum())
    n_bins = int(ids.max()) + 1
    observed = np.bincount(ids[ids >= 0], weights=counts[ids >= 0], minlength=n_bins)
    expected = np.bincount(ids[ids >= 0], weights=pi[ids >= 0], minlength=n_bins) * n
    df = max(n_bins - 1, 1)
    if test == "chi2":
        statistic = float(np.sum((observed - expected) ** 2 / expected))
    else:
        nz = observed > 0
        statistic = float(2 * np.sum(observed[nz] * np.log(observed[nz] / expected[nz])))
    p_value = 0.0 if impossible else (chi2_sf(statistic, df) if n_bins > 1 else 1.0)
    verdict = "inconsistent" if (impossible or p_value < alpha) else "consistent"
    return HarnessReport(
        n=n, test=test, statistic=statistic, df=df, p_value=p_value, alpha=alpha,
        power=power, detectable_tv=detectable_tv(n, df, alpha, power), verdict=verdict,
        bins=n_bins, impossible=impossible,
        empirical_tv=float(0.5 * np.abs(counts / n - pi).sum()), counts=counts, law=pi)


def _draft_rows(q: np.ndarray, k: int, rng, n: int, law: str) -> np.ndarray:
    from .samplers import draft_iid, draft_wor

    if law == "iid":
        return draft_iid(q, k, rng, n=n)
    if law == "wor":
        return draft_wor(q, k, rng, n=n)
    raise InvalidInput(f"drafts={law!r}: choose iid, wor or None")


def check_sampler(sampler: Callable, law, n: int, *, p=None, q=None, k: int = 1,
                  drafts: str | None = None, batched: bool = False, seed: int | None = 0,
                  alpha: float = 0.01, power: float = 0.8, min_expected: float = 5.0,
                  test: str = "chi2") -> HarnessReport:
    """Draw ``n`` samples from ``sampler`` and test them against the exact ``law``.

    Parameters
    ----------
    sampler : callable
        With ``drafts=None``: ``sampler(p, q, k, rng) -> token``.  With ``drafts="iid"`` or
        ``"wor"`` the harness drafts (``k`` per sample, from ``q``) and calls
        ``sampler(p, q, drafts, rng) -> token`` with ``drafts`` a tuple of token indices, as an
        engine's verify kernel receives them.  With ``batched=True`` the sampler gets one more
        argument ``n`` (and ``drafts`` as an ``(n, k)`` array) and returns ``n`` tokens.
        ``p``, ``q`` arrive as normalised float64 arrays; ``rng`` is a
        ``numpy.random.Generator``; tokens are indices ``0..|V|-1``.
    law : Dist, mapping or sequence
        The exact output law of the correct method (``p`` for a lossless verifier).
    n : int
        The sample budget.
    p, q : array-like, optional
        Target and draft (``p`` defaults to ``law``).
    seed : int
        Seeds ``numpy.random.default_rng``.
    alpha, power, min_expected, test
        As in :func:`goodness_of_fit`.
    """
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise InvalidInput(f"n={n!r}: need a positive sample budget")
    pi = _law_array(law)
    P = pi if p is None else _law_array(p)
    Q = P if q is None else _law_array(q)
    if not (P.size == Q.size == pi.size):
        raise InvalidInput(f"law, p and q must have the same length: {pi.size}, {P.size}, "
                           f"{Q.size}")
    rng = np.random.default_rng(seed)
    drawn = None if drafts is None else _draft_rows(Q, k, rng, int(n), drafts)
    if batched:
        arg = k if drawn is None else drawn
        tokens = np.asarray(sampler(P, Q, arg, rng, int(n))).reshape(-1)
    else:
        tokens = np.empty(int(n), dtype=np.int64)
        for i in range(int(n)):                               # the sampler is a black box
            arg = k if drawn is None else tuple(int(x) for x in drawn[i])
            tokens[i] = int(sampler(P, Q, arg, rng))
    if tokens.size != n or tokens.min() < 0 or tokens.max() >= pi.size:
        raise InvalidInput(f"the sampler must return {n} token indices in 0..{pi.size - 1}")
    counts = np.bincount(tokens, minlength=pi.size)
    return goodness_of_fit(counts, pi, alpha=alpha, power=power, min_expected=min_expected,
                           test=test)


# -- example kernels: correct ones and two classic bugs ------------------------------------------

def _inverse_cdf(weights: np.ndarray, u: float) -> int:
    cdf = np.cumsum(weights)
    i = int(np.searchsorted(cdf, u * cdf[-1], side="right"))
    return min(i, int(np.flatnonzero(weights > 0)[-1]))


def sps_kernel(p, q, drafts, rng) -> int:
    """The one-draft rule as a kernel writes it: ``u1 < p(x)/q(x)`` accepts, else resample
    the residual with a fresh ``u2``."""
    x = drafts[0]
    if rng.random() < p[x] / q[x]:
        return x
    return _inverse_cdf(np.maximum(p - q, 0.0), rng.random())


def sps_reused_uniform(p, q, drafts, rng) -> int:
    """A real bug: the resample reuses the acceptance uniform ``u1`` (which, given a
    rejection, is not uniform), so the output law is not ``p``."""
    x = drafts[0]
    u = rng.random()
    if u < p[x] / q[x]:
        return x
    return _inverse_cdf(np.maximum(p - q, 0.0), u)


def rrs_kernel(p, q, drafts, rng) -> int:
    """Recursive rejection sampling on given i.i.d. drafts (correct)."""
    r = p
    for x in drafts:
        if rng.random() < r[x] / q[x]:
            return x
        d = np.maximum(r - q, 0.0)
        r = d / d.sum() if d.sum() > 0 else r
    return _inverse_cdf(r, rng.random())


def rrs_fixed_residual(p, q, drafts, rng) -> int:
    """A plausible bug: every step tests against ``p`` and resamples ``norm((p - q)_+)``
    instead of updating the residual ``r`` (right for one draft, wrong for ``k >= 2``)."""
    for x in drafts:
        if rng.random() < p[x] / q[x]:
            return x
    return _inverse_cdf(np.maximum(p - q, 0.0), rng.random())
