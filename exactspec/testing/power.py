"""What a statistical test can see: the power of a histogram test against an exact bias.

An engine's statistical sampler test draws ``n`` samples from the sampler, whose output law is
``r``, bins them, computes a statistic of the histogram against the target ``p`` and fails
when the statistic exceeds a threshold.  Its *power* against ``r`` is the probability that it
fails.  Three statistics of the counts ``c`` (``c / n`` the empirical law):

- ``"tv"``: ``TV(c / n, p) = 1/2 sum |c_t / n - p_t|``;
- ``"l2"``: the squared L2 distance ``sum (c_t / n - p_t)**2`` (squared, so that it stays
  rational; compare it with a squared threshold);
- ``"chi2"``: Pearson's ``sum (c_t - n p_t)**2 / (n p_t)`` (every ``p_t > 0``).

**Exact** (:func:`statistic_law`, :func:`exact_power`): the counts are multinomial
``(n, r)``; every composition of ``n`` is enumerated with its exact probability, while there
are at most ``max_outcomes`` of them (``C(n + V - 1, V - 1)`` for ``V`` tokens).

**Approximations** (:func:`power`, for larger ``n``), each stated in the result's ``method``:

- ``"chi2"``: Pearson's statistic under ``r`` is approximately non-central chi-square with
  ``V - 1`` degrees of freedom and non-centrality ``lambda = n sum (r_t - p_t)**2 / p_t``
  (the local-alternative approximation);
- ``"l2"``: ``c / n - p`` approximately Gaussian with mean ``d = r - p`` and covariance
  ``C / n``, ``C = diag(r) - r r^T``; the quadratic form's exact mean ``|d|^2 + tr C / n``
  and variance ``2 tr (C / n)^2 + 4 d^T (C / n) d`` under that Gaussian, and the statistic
  taken as normal;
- ``"tv"``: the same Gaussian limit; ``TV`` has there the mean of half a sum of folded
  normals and a variance from the pairs ``E |X_s| |X_t|`` (one-dimensional integrals,
  :func:`tv_moments`), and is taken as normal with those two moments.  The moments match a
  simulation closely; the normal shape is the approximation: with a bias of the order of the
  noise or larger it is within a few hundredths of the simulated power, but with no bias at
  all (a skewed, half-normal-like statistic) it understates the tail.

As ``n`` grows the TV statistic tends to ``TV(r, p)``: a test that fails when it exceeds
``threshold`` never detects a bias below ``threshold``, however many samples it draws; a
chi-square test at a fixed level detects any bias once ``n`` is about
``lambda* / sum (r_t - p_t)**2 / p_t`` (:func:`samples_needed`).

>>> from exactspec import Dist
>>> p, r = Dist.parse("1/2,1/2"), Dist.parse("3/5,2/5")
>>> statistic_law("tv", p, r, 2)
{Fraction(1, 2): Fraction(13, 25), Fraction(0, 1): Fraction(12, 25)}
>>> exact_power("tv", p, r, 2, Fraction(1, 4))
Fraction(13, 25)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from math import comb

from ..core.dist import Dist, exact_str
from ..core.errors import InvalidInput, TooLarge

__all__ = ["STATISTICS", "statistic_law", "exact_power", "power", "PowerReport",
           "detectable_bias", "samples_needed", "chi2_threshold", "tv_moments"]

STATISTICS = ("tv", "l2", "chi2")

#: Compositions of ``n`` enumerated by default before the exact law is refused.
MAX_OUTCOMES = 200_000


def _pair(p, r) -> tuple[Dist, Dist]:
    p = p if isinstance(p, Dist) else Dist(p, name="p")
    r = r if isinstance(r, Dist) else Dist(r, name="r")
    if p.labels != r.labels:
        raise InvalidInput(f"r has {len(r)} entries but p has {len(p)}" if len(p) != len(r)
                           else "p and r have different labels")
    for d in (p, r):
        if any(hasattr(v, "free_symbols") for v in d.probs):
            raise InvalidInput("the power of a test needs rational laws (Fractions), not "
                               "symbolic ones")
    return p, r


def _check(statistic: str, p: Dist, n) -> None:
    if statistic not in STATISTICS:
        raise InvalidInput(f"statistic {statistic!r}: choose one of {', '.join(STATISTICS)}")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise InvalidInput(f"n={n!r}: need a positive integer number of samples")
    if statistic == "chi2" and any(v == 0 for v in p.probs):
        raise InvalidInput("chi2: every target probability must be positive (drop the tokens "
                           "of probability 0, or use tv or l2)")


def _compositions(total: int, parts: int):
    if parts == 1:
        yield (total,)
        return
    for first in range(total, -1, -1):
        for rest in _compositions(total - first, parts - 1):
            yield (first,) + rest


def _value(statistic: str, counts, p: tuple, n: int) -> Fraction:
    if statistic == "tv":
        return sum((abs(Fraction(c, n) - pt) for c, pt in zip(counts, p)), Fraction(0)) / 2
    if statistic == "l2":
        return sum(((Fraction(c, n) - pt) ** 2 for c, pt in zip(counts, p)), Fraction(0))
    return sum(((c - n * pt) ** 2 / (n * pt) for c, pt in zip(counts, p)), Fraction(0))


def statistic_law(statistic: str, p, r, n: int, *, max_outcomes: int = MAX_OUTCOMES) -> dict:
    """The exact law ``{value: probability}`` of the statistic of ``n`` samples of ``r``
    against ``p`` (multinomial counts, every composition of ``n`` enumerated).

    Raises :class:`~exactspec.core.errors.TooLarge` up front when there are more than
    ``max_outcomes`` compositions.
    """
    p, r = _pair(p, r)
    _check(statistic, p, n)
    size = comb(n + len(p) - 1, len(p) - 1)
    if size > max_outcomes:
        raise TooLarge(f"{size:,} histograms of {n} samples on {len(p)} tokens, over the "
                       f"budget of {max_outcomes:,}: use power() (a stated approximation)",
                       estimate=size, budget=max_outcomes)
    probs = [Fraction(v) for v in r.probs]
    target = tuple(Fraction(v) for v in p.probs)
    law: dict = {}
    factorial = [1] * (n + 1)
    for i in range(1, n + 1):
        factorial[i] = factorial[i - 1] * i
    for counts in _compositions(n, len(p)):
        weight = Fraction(factorial[n])
        for c, pr in zip(counts, probs):
            if c:
                if pr == 0:
                    weight = Fraction(0)
                    break
                weight = weight * pr ** c / factorial[c]
        if weight == 0:
            continue
        value = _value(statistic, counts, target, n)
        law[value] = law.get(value, Fraction(0)) + weight
    return law


def exact_power(statistic: str, p, r, n: int, threshold, *,
                max_outcomes: int = MAX_OUTCOMES) -> Fraction:
    """``P(statistic > threshold)`` under ``n`` samples of ``r``, exactly."""
    limit = _threshold(threshold)
    law = statistic_law(statistic, p, r, n, max_outcomes=max_outcomes)
    return sum((w for value, w in law.items() if value > limit), Fraction(0))


def _threshold(threshold) -> Fraction:
    try:
        value = Fraction(threshold.strip() if isinstance(threshold, str) else threshold)
    except (TypeError, ValueError, ZeroDivisionError, OverflowError):
        raise InvalidInput(f"threshold={threshold!r}: need a number >= 0") from None
    if value < 0:
        raise InvalidInput(f"threshold={exact_str(value)}: need a number >= 0")
    return value


@dataclass
class PowerReport:
    """The power of a histogram test: ``P(statistic > threshold)`` under ``r``.

    ``exact`` is the exact power (a ``Fraction``) when the law was enumerated, else ``None``;
    ``power_float`` the power as a float; ``method`` how it was computed.
    """

    statistic: str
    n: int
    threshold: Fraction
    power_float: float
    method: str
    exact: Fraction | None = None
    bias_float: float = 0.0

    def to_json(self) -> dict:
        out = {"statistic": self.statistic, "n": self.n,
               "threshold": exact_str(self.threshold), "power_float": self.power_float,
               "method": self.method, "bias_float": self.bias_float}
        if self.exact is not None:
            out["power"] = exact_str(self.exact)
        return out


def _normal_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))


def _approximate(statistic: str, p: list, r: list, n: int, threshold: float) -> tuple:
    d = [a - b for a, b in zip(r, p)]
    if statistic == "chi2":
        from ..numpy_backend.harness import ncx2_sf

        lam = n * sum(x * x / pt for x, pt in zip(d, p))
        return ncx2_sf(threshold, len(p) - 1, lam), \
            f"non-central chi-square, df {len(p) - 1}, lambda = {lam:.6g}"
    if statistic == "l2":
        cov = [[(r[i] if i == j else 0.0) - r[i] * r[j] for j in range(len(r))]
               for i in range(len(r))]
        mean = sum(x * x for x in d) + sum(cov[i][i] for i in range(len(r))) / n
        tr2 = sum(cov[i][j] * cov[j][i] for i in range(len(r)) for j in range(len(r))) / n ** 2
        quad = sum(d[i] * cov[i][j] * d[j] for i in range(len(r)) for j in range(len(r))) / n
        var = 2 * tr2 + 4 * quad
        return _normal_tail(threshold, mean, var), \
            "normal, with the mean and variance of the Gaussian limit's quadratic form"
    mean, var = tv_moments(p, r, n)
    return _normal_tail(threshold, mean, var), \
        "normal, with the mean and variance of the Gaussian limit's TV"


def tv_moments(p: list, r: list, n: int) -> tuple[float, float]:
    """Mean and variance of ``TV(c / n, p)`` in the Gaussian limit ``c / n - p ~ N(d, C / n)``
    (``d = r - p``, ``C = diag(r) - r r^T``): the mean is half a sum of folded-normal means;
    each ``E |X_s| |X_t|`` is a one-dimensional integral (Gauss-Hermite, 120 nodes) of
    ``|x|`` times the folded-normal mean of ``X_t`` given ``X_s = x``.

    >>> m, v = tv_moments([0.5, 0.5], [0.5, 0.5], 100)
    >>> round(m, 6), round(m * m + v, 6)     # |N(0, 1/400)| twice, halved: E = sqrt(2/pi)/20
    (0.039894, 0.0025)
    """
    import numpy as np

    nodes, weights = _hermite_nodes()
    p_, r_ = np.asarray(p, dtype=float), np.asarray(r, dtype=float)
    d = r_ - p_
    cov = (np.diag(r_) - np.outer(r_, r_)) / n
    sd = np.sqrt(np.clip(np.diag(cov), 0, None))
    size = len(p_)
    means = np.array([_folded_mean(d[t], sd[t]) for t in range(size)])
    second = np.empty((size, size))
    for s in range(size):
        x = d[s] + sd[s] * nodes
        for t in range(size):
            if s == t:
                second[s, t] = d[s] ** 2 + sd[s] ** 2
            elif sd[s] == 0:
                second[s, t] = abs(d[s]) * means[t]
            else:
                beta = cov[s, t] / cov[s, s]
                spread = math.sqrt(max(cov[t, t] - beta * cov[s, t], 0.0))
                conditional = d[t] + beta * (x - d[s])
                second[s, t] = float(np.sum(weights * np.abs(x)
                                            * _folded_mean(conditional, spread)))
    var = float((second - np.outer(means, means)).sum()) / 4
    return float(means.sum()) / 2, max(var, 0.0)


@functools.lru_cache(maxsize=1)
def _hermite_nodes():
    """Gauss-Hermite nodes and weights for ``E f(Z)``, ``Z ~ N(0, 1)`` (computed once)."""
    from numpy.polynomial.hermite_e import hermegauss

    nodes, weights = hermegauss(120)
    return nodes, weights / weights.sum()


def _folded_mean(m, s):
    """``E |X|`` for ``X ~ N(m, s**2)`` (``m`` a float or a NumPy array)."""
    import numpy as np

    if s == 0:
        return np.abs(m)
    erf = np.vectorize(math.erf)
    return s * math.sqrt(2 / math.pi) * np.exp(-np.square(m) / (2 * s * s)) \
        + m * erf(m / (s * math.sqrt(2)))


def _normal_tail(threshold: float, mean: float, var: float) -> float:
    if var <= 0:
        return 1.0 if mean > threshold else 0.0
    return _normal_sf((threshold - mean) / math.sqrt(var))


def power(statistic: str, p, r, n: int, threshold, *,
          max_outcomes: int = MAX_OUTCOMES) -> PowerReport:
    """The probability that the test (``statistic > threshold`` on ``n`` samples) fails when
    the sampler's law is ``r``: exact while the histograms number at most ``max_outcomes``,
    otherwise by the approximation of the module's docstring (named in ``method``).

    >>> from exactspec import Dist
    >>> p = Dist.parse("1/2,3/10,1/5")
    >>> report = power("chi2", p, p, 10**6, chi2_threshold(2, 0.01))
    >>> report.method.split(",")[0], round(report.power_float, 6)
    ('non-central chi-square', 0.01)
    """
    p, r = _pair(p, r)
    _check(statistic, p, n)
    limit = _threshold(threshold)
    from ..core.dist import total_variation

    bias = float(total_variation(r, p))
    if comb(n + len(p) - 1, len(p) - 1) <= max_outcomes:
        exact = exact_power(statistic, p, r, n, limit, max_outcomes=max_outcomes)
        return PowerReport(statistic, n, limit, float(exact), "exact (multinomial "
                           "enumeration)", exact, bias)
    value, method = _approximate(statistic, [float(v) for v in p.probs],
                                 [float(v) for v in r.probs], n, float(limit))
    return PowerReport(statistic, n, limit, value, method, None, bias)


def chi2_threshold(df: int, alpha: float) -> Fraction:
    """The level-``alpha`` critical value of the chi-square test with ``df`` degrees of
    freedom (the statistic's threshold), as the Fraction of its float value.

    >>> float(chi2_threshold(1, 0.05))
    3.841458820694...
    """
    from ..numpy_backend.harness import chi2_isf

    if not isinstance(df, int) or df < 1:
        raise InvalidInput(f"df={df!r}: need at least 1 degree of freedom")
    return Fraction(chi2_isf(float(alpha), df))


def detectable_bias(statistic: str, p, r, n: int, threshold, *, level: float = 0.5,
                    max_outcomes: int = MAX_OUTCOMES) -> float | None:
    """The smallest TV bias, along the direction from ``p`` to ``r``, that the test detects
    with probability ``level`` (default 1/2): the laws ``p + t (r - p)`` for ``0 <= t <= T``
    (``T`` the largest keeping them laws), ``t`` found by bisection on the power.  ``None``
    when even ``t = T`` is detected with probability below ``level``.
    """
    p, r = _pair(p, r)
    _check(statistic, p, n)
    if not 0 < level < 1:
        raise InvalidInput(f"level={level!r}: need a probability strictly between 0 and 1")
    limit = _threshold(threshold)
    # the direction from p to r scaled to TV 1, exactly: a bias far below float64's resolution
    # next to p (a float32 kernel's 2**-126) still gives a direction
    exact_d = [Fraction(b) - Fraction(a) for a, b in zip(p.probs, r.probs)]
    tv = sum(abs(x) for x in exact_d) / 2
    if tv == 0:
        raise InvalidInput("r equals p: there is no bias to scale")
    d = [float(x / tv) for x in exact_d]
    # some entry falls (both laws sum to 1): p + t d stays a law up to the first one at 0
    t_max = float(min(Fraction(a) / (-x / tv) for a, x in zip(p.probs, exact_d) if x < 0))
    tv_unit = 1.0
    exact = comb(n + len(p) - 1, len(p) - 1) <= max_outcomes

    def detects(t: float) -> float:
        law = [float(a) + t * x for a, x in zip(p.probs, d)]
        if exact:
            q = Dist([Fraction(v) for v in law], p.labels, normalize=True, name="r")
            return float(exact_power(statistic, p, q, n, limit, max_outcomes=max_outcomes))
        return _approximate(statistic, [float(v) for v in p.probs], law, n, float(limit))[0]

    if detects(t_max) < level:
        return None
    lo, hi = 0.0, t_max
    if detects(0.0) >= level:
        return 0.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if detects(mid) >= level:
            hi = mid
        else:
            lo = mid
    return hi * tv_unit           # t is the bias in TV along the direction


def samples_needed(p, r, *, alpha: float = 0.01, level: float = 0.5) -> int:
    """The number of samples at which Pearson's chi-square test at level ``alpha`` detects the
    law ``r`` with probability ``level`` (default 1/2), by the non-central chi-square
    approximation: ``ceil(lambda* / sum (r_t - p_t)**2 / p_t)``.

    (A test with a fixed TV threshold has no such count: its statistic tends to ``TV(r, p)``,
    so a bias below the threshold is never detected; see :func:`detectable_bias`.)

    >>> from exactspec import Dist
    >>> samples_needed(Dist.parse("1/2,1/2"), Dist.parse("51/100,49/100"))
    16588
    """
    p, r = _pair(p, r)
    _check("chi2", p, 1)
    from ..numpy_backend.harness import noncentrality_for_power

    distance = sum((Fraction(b) - Fraction(a)) ** 2 / Fraction(a)
                   for a, b in zip(p.probs, r.probs))
    if distance == 0:
        raise InvalidInput("r equals p: no number of samples detects a bias of 0")
    lam = noncentrality_for_power(len(p) - 1, float(alpha), float(level))
    return max(1, math.ceil(Fraction(lam) / distance))
