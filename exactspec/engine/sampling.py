"""The sampling interpreter: run a method with a seeded NumPy random generator.

The method's own arithmetic stays exact (its distributions are still ``Fraction``s); only the
random choices are drawn, from ``numpy.random.Generator``.  Explicit uniforms are real floats in
``[0, 1)``, or exact grid points ``j / N`` with the ``grid`` option.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ..core.errors import InvalidInput
from ..core.signals import user_code

__all__ = ["RandomSampler", "Simulation", "simulate_method"]


class RandomSampler:
    """The sampling interface, interpreted by drawing from ``rng``."""

    exact = False
    symbolic = False

    def __init__(self, rng, grid: int | None = None):
        self.rng = rng
        self.grid = grid
        self._reset()

    def _reset(self):
        self.drafted: list = []
        self.did_accept = False
        self.accepted_token = None

    def draw(self, dist, what: str = "draw"):
        probs = [float(v) for v in dist.probs]
        u = self.rng.random() * math.fsum(probs)
        cum = 0.0
        last = None
        for lab, pr in zip(dist.labels, probs):
            if pr <= 0:
                continue
            last = lab
            cum += pr
            if u < cum:
                return lab
        if last is None:
            raise InvalidInput(f"{what}: nothing to choose from (all probabilities are 0)")
        return last

    def coin(self, prob, what: str = "coin") -> bool:
        if prob < 0 or prob > 1:
            raise InvalidInput(f"{what}: probability {prob} is outside [0, 1]")
        return bool(self.rng.random() < float(prob))

    def exp(self, x) -> float:
        return math.exp(float(x))

    def log(self, x) -> float:
        return math.log(float(x))

    def softmax(self, logits) -> list:
        values = [float(x) for x in logits]
        top = max(values)
        weights = [math.exp(v - top) for v in values]
        total = math.fsum(weights)
        return [w / total for w in weights]

    def draft(self, q, what: str = "draft"):
        x = self.draw(q, what)
        self.drafted.append(x)
        return x

    def drafts(self, q, k: int, replace: bool = True) -> tuple:
        if replace:
            return tuple(self.draft(q) for _ in range(k))
        from ..core.dist import Dist

        chosen: list = []
        for i in range(k):
            rest = [0 if lab in chosen else pr for lab, pr in zip(q.labels, q.probs)]
            if sum(rest) == 0:
                raise InvalidInput(f"k={k}: too few tokens in q for drafts without replacement")
            total = sum(rest)
            x = self.draft(Dist([v / total for v in rest], q.labels, check=False))
            chosen.append(x)
        return tuple(chosen)

    def accept(self, x):
        self.did_accept = True
        self.accepted_token = x
        return x

    def uniform(self):
        if self.grid is not None:
            return Fraction(int(self.rng.integers(self.grid)), self.grid)
        return float(self.rng.random())

    def exponentials(self, n: int):
        """``n`` i.i.d. ``Exp(1)`` values, drawn (see :mod:`~exactspec.engine.races`)."""
        return self._noise(n, "exponential")

    def gumbels(self, n: int):
        """``n`` i.i.d. standard Gumbel values, drawn."""
        return self._noise(n, "gumbel")

    def _noise(self, n, kind):
        from .races import Noise

        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InvalidInput(f"{kind} noise of n={n!r} tokens: need a positive integer")
        values = self.rng.exponential(size=n) if kind == "exponential" else \
            self.rng.gumbel(size=n)
        return Noise(self, n, 0, kind, values=values)

    def race(self, weights, noise, *, first: bool = True, what: str = "race"):
        """The race's winner with the noise values drawn (:func:`.races.sampled_race`)."""
        from .races import Noise, race_weights, sampled_race

        if not isinstance(noise, Noise) or noise.values is None:
            raise InvalidInput(f"{what}: the noise must come from s.exponentials(n) or "
                               "s.gumbels(n)")
        labels, values = race_weights(weights, noise.n)
        return labels[sampled_race(noise, values, first)]

    def pick(self, dist, u, what: str = "pick"):
        from .exact import pick_weights

        dist = pick_weights(dist, what)
        cum = 0
        for lab, pr in zip(dist.labels, dist.probs):
            cum = cum + pr
            if pr != 0 and u < cum:
                return lab
        raise InvalidInput(f"{what}: u={u} lies outside the distribution's cumulative range")


@dataclass
class Simulation:
    """Counts from ``n`` sampled runs: empirical law, acceptance and its 95% interval."""

    labels: tuple
    counts: dict
    n: int
    accepted: int
    explicit: int

    @property
    def empirical(self) -> dict:
        return {lab: Fraction(c, self.n) for lab, c in self.counts.items()}

    @property
    def acceptance(self) -> float:
        return self.accepted / self.n

    def acceptance_interval(self, z: float = 1.959963984540054) -> tuple[float, float]:
        """Wilson score interval for the acceptance probability (95% by default)."""
        n, phat = self.n, self.acceptance
        denom = 1 + z * z / n
        centre = (phat + z * z / (2 * n)) / denom
        half = z * math.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n)) / denom
        return max(0.0, centre - half), min(1.0, centre + half)

    def total_variation_to(self, target) -> float:
        return 0.5 * sum(abs(self.counts[lab] / self.n - float(target[lab]))
                         for lab in self.labels)


def simulate_method(method, p, q, k: int, n: int, *, seed: int | None = 0,
                    grid: int | None = None, rng=None, callback=None) -> Simulation:
    """Run ``method(s, p, q, k)`` ``n`` times with a seeded generator."""
    import numpy as np

    if not isinstance(n, int) or n < 1:
        raise InvalidInput(f"n={n}: need a positive number of samples")
    rng = rng if rng is not None else np.random.default_rng(seed)
    s = RandomSampler(rng, grid=grid)
    counts = {lab: 0 for lab in p.labels}
    accepted = explicit = 0
    for i in range(n):
        s._reset()
        with user_code():
            y = method(s, p, q, k)
        if y not in counts:
            raise InvalidInput(f"the method returned {y!r}, which is not a token of p")
        counts[y] += 1
        if (y in s.drafted) if s.drafted else (s.did_accept and s.accepted_token == y):
            accepted += 1
        if s.did_accept and s.accepted_token == y:
            explicit += 1
        if callback is not None:
            callback(i, y, s)
    return Simulation(p.labels, counts, n, accepted, explicit)
