"""Random rational distributions with small denominators: the instances of corpus claims,
counterexample searches and property tests.

>>> import random
>>> p, q = random_pair(random.Random(0), 3)
>>> sum(p.probs), sum(q.probs)
(Fraction(1, 1), Fraction(1, 1))
"""

from __future__ import annotations

import random
from fractions import Fraction

from .dist import Dist

__all__ = ["random_dist", "random_pair"]


def random_dist(rng: random.Random, n: int, *, zeros: bool = True, denominator: int = 12,
                labels=None) -> Dist:
    """A random rational distribution on ``n`` tokens (small denominators, zeros allowed)."""
    while True:
        weights = [rng.randint(0 if zeros else 1, denominator) for _ in range(n)]
        if sum(weights) > 0:
            total = sum(weights)
            return Dist([Fraction(w, total) for w in weights], labels)


def random_pair(rng: random.Random, n: int, **kw) -> tuple[Dist, Dist]:
    """Random ``(p, q)`` on the same ``n`` tokens."""
    return random_dist(rng, n, **kw), random_dist(rng, n, **kw)
