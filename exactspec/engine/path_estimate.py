"""The size of a tree of paths, estimated before it is enumerated, and the seconds budget.

:func:`estimate_paths`: Knuth's random probes, and near a budget the tree expanded level by
level with a bounded number of nodes kept per level; :func:`check_seconds` refuses work whose
estimated seconds pass a budget.  Every decision is by counts and the probes are seeded, so
that the same instance gets the same estimate on every run; the seconds of a path are read on
:data:`clock`, the one clock of the exact interpreter (the walk's too, :mod:`.exact`).

>>> from exactspec.core.dist import Dist
>>> estimate_paths(lambda s, p, q, k: s.draw(p), Dist.parse("1/2,1/2"), None, 1)
2
"""

from __future__ import annotations

import time
from fractions import Fraction
from typing import Callable

from ..core.errors import InvalidInput, TooLarge
from ..core.signals import user_code
from .exact_sampler import ExactSampler, Frontier, check_unchanged, input_snapshot, unwatched
from .watch import watched

__all__ = ["ESTIMATE_LEVELS", "ESTIMATE_RUNS", "FAR_OVER", "KNUTH_SHORTFALL", "MAX_SECONDS",
           "ROUND_MARGIN", "check_seconds", "clock", "estimate_paths"]

#: the clock of the exact interpreter's seconds (taken before any watch replaces the clock)
clock = time.perf_counter

MAX_SECONDS = 60.0         # estimated time of an enumeration run without --max-paths
#: Random probes that predict more than this many times the seconds budget are not refined
#: level by level (each level costs up to ``probes`` runs of a method that is slow per path).
FAR_OVER = 100


class _ProbeRandom:
    """A small seeded generator for the size probes (SplitMix64), kept apart from Python's
    ``random`` so that a watch on user code can refuse ``random`` without stopping the probes."""

    __slots__ = ("_state",)

    def __init__(self, seed: int = 0):
        self._state = (seed * 0x9E3779B97F4A7C15 + 1) & 0xFFFFFFFFFFFFFFFF

    def _next(self) -> int:
        self._state = (self._state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        return z ^ (z >> 31)

    def randrange(self, n: int) -> int:
        return self._next() % n

    def fraction(self) -> Fraction:
        """A uniform number in ``[0, 1)`` on the grid of ``2**-64``."""
        return Fraction(self._next(), 2**64)



def _call(method: Callable, sampler, p, q, k):
    with user_code():
        return method(sampler, p, q, k)



ESTIMATE_LEVELS = 64

#: Refining the size estimate (more nodes kept per level) stops before the refinements
#: would run the method more than this many times (a count, not seconds: the estimate is
#: the same on every machine).
ESTIMATE_RUNS = 20_000


#: Knuth's estimate can fall short of the number of paths by this factor and more (key-lazy's
#: chain of draft counts: 41x at k = 7 on 11 tokens); within it of a budget, the estimate
#: is redone level by level.
KNUTH_SHORTFALL = 100
#: A level-by-level estimate this many times under every budget is not refined further: the
#: size decisions it serves are clear (its first round is within a few times the count).
ROUND_MARGIN = 20


def check_seconds(estimate: int, per_path: float, max_seconds: float | None,
                  max_paths: int | None, instead: str) -> None:
    """Refuse (:class:`~exactspec.core.errors.TooLarge`) an enumeration whose ``estimate``
    paths at ``per_path`` seconds each pass ``max_seconds``; ``instead`` says what to use."""
    seconds = estimate * per_path
    if max_seconds is not None and seconds > max_seconds:
        raise TooLarge(f"about {estimate:,} paths at about {per_path:.2g} s each: about "
                       f"{seconds:,.0f} s of exact work, over the budget of "
                       f"{max_seconds:.0f} s: use {instead}, or --max-paths N to insist",
                       estimate=estimate, budget=max_paths)


def estimate_paths(method: Callable, p, q, k, *, sampler_factory=ExactSampler, probes: int = 40,
                   seed: int = 0, watch: bool = False, timing: list | None = None,
                   max_paths: int | None = None, max_seconds: float | None = None,
                   thorough: bool | None = None) -> int:
    """The estimated number of paths: Knuth's random probes, redone level by level near a
    budget.

    *Knuth's estimator*: ``probes`` independent random paths, each scored by the product of
    the branching factors met along it (unbiased, cheap: one run per probe).  On a tree
    whose wide subtrees are rarely hit by a random path (a chain of draft counts, where a
    random path gives most drafts to the first tokens, but the paths that spread them open
    the most branches) it falls short many times over, so with a budget to refuse at
    (``max_paths``, ``max_seconds``) and Knuth's figure within :data:`KNUTH_SHORTFALL` of it,
    the estimate is redone *level by level* (``thorough=True`` asks for that always,
    ``thorough=False`` never).

    *Level by level*: level ``d`` holds nodes (prefixes of ``d`` choices), each with a
    weight: how many nodes of the tree it stands for.  Each node is run once, replaying its
    prefix: the run ends (a path, whose weight is counted) or stops at its next choice, whose
    options become its children with its weight.  When a level has more than ``probes``
    children, ``probes`` draws are taken with probability proportional to weight (systematic
    sampling), and a child drawn ``m`` times carries ``m`` times the level's total over
    ``probes``.  The kept nodes then follow the tree's real shape level by level (Knuth's
    estimator is the case of one node per level); a tree with at most ``probes`` nodes on
    every level is counted exactly.  With a budget, the estimate is refined: again with four
    times as many nodes kept per level (the estimates averaged with weights proportional to
    the nodes kept), as long as the next round's runs of the method (four times this
    round's) stay within a twentieth of the estimated paths and all rounds after the first
    within :data:`ESTIMATE_RUNS` runs, and never once the estimate is over ten times
    ``max_paths`` or its predicted seconds over ten times ``max_seconds`` (a refusal either
    way), or under every budget given by a factor of :data:`ROUND_MARGIN` (nothing to
    decide).  Work per round: at most ``probes`` runs per level, each stopping at the choice
    after its prefix.  Past :data:`ESTIMATE_LEVELS` levels, or once a round passes
    :data:`MAX_SECONDS` / 10, each kept node finishes with one random probe.

    Every decision is by counts, and the probes are seeded: the same instance gets the same
    estimate on every run (except for a method so slow per path that the probes pass
    :data:`MAX_SECONDS` / 10).  ``timing``, when given, receives the median seconds of one
    whole path (one-time work such as plans and caches is not per path).

    >>> from exactspec.core.dist import Dist
    >>> def two_draws_after_heads(s, p, q, k):     # tails: 1 path; heads: 3 * 3 paths
    ...     if s.coin(Fraction(1, 2)):
    ...         s.draw(p)
    ...         return s.draw(p)
    ...     return p.labels[0]
    >>> estimate_paths(two_draws_after_heads, Dist.parse("1/3,1/3,1/3"), None, 1,
    ...                thorough=True)
    10
    """
    rng = _ProbeRandom(seed)
    before = input_snapshot(p), input_snapshot(q)
    times: list = []
    with watched(method) if watch else unwatched():
        if thorough is not True:
            estimate = _knuth_estimate(method, p, q, k, sampler_factory, probes, rng, times)
            if thorough is None:                   # redo near a budget
                per_path = sorted(times)[len(times) // 2]
                thorough = (max_paths is not None
                            and estimate * KNUTH_SHORTFALL >= max_paths) or (
                    max_seconds is not None
                    and estimate * per_path * KNUTH_SHORTFALL >= max_seconds)
                if max_seconds is not None and estimate * per_path > FAR_OVER * max_seconds:
                    thorough = False               # refused by its seconds whatever the rounds
        if thorough:                               # (the same draws as when asked directly)
            times.clear()
            estimate = _rounds_estimate(method, p, q, k, sampler_factory, probes,
                                        _ProbeRandom(seed), times, max_paths, max_seconds)
    if watch:
        check_unchanged(before, p, q)
    if timing is not None:
        timing.append(sorted(times)[len(times) // 2])
    return max(1, round(estimate))


def _knuth_estimate(method, p, q, k, sampler_factory, probes, rng, times):
    """The mean over random probes of the product of the branching factors met along the
    probe; probing stops early when the probes alone pass :data:`MAX_SECONDS` / 10."""
    total = 0
    done = 0
    start = clock()
    for _ in range(probes):
        s = sampler_factory()
        s._probe = rng
        s._probe_size = 1
        s._reset()
        began = clock()
        _call(method, s, p, q, k)
        times.append(clock() - began)
        total += s._probe_size
        done += 1
        if clock() - start > MAX_SECONDS / 10:
            break
    return Fraction(total, done)


def _rounds_estimate(method, p, q, k, sampler_factory, probes, rng, times, max_paths,
                     max_seconds):
    """The level-by-level estimate of :func:`estimate_paths`, refined in rounds."""
    rounds: list = []                              # (estimate, nodes kept per level)
    refining = 0
    size = probes
    while True:
        estimate, exact, runs = _level_estimate(method, p, q, k, sampler_factory, size, rng,
                                                times)
        if rounds:
            refining += runs
        rounds.append((estimate, size))
        if exact:                                  # every level fitted: the count itself
            return estimate
        mean = sum(e * n for e, n in rounds) / sum(n for _, n in rounds)
        predicted = float(mean) * sorted(times)[len(times) // 2]
        if max_paths is None and max_seconds is None:
            break                                  # nothing to refuse: no refinement
        if (max_paths is not None and mean > 10 * max_paths) or (
                max_seconds is not None and predicted > 10 * max_seconds):
            break                                  # far over a budget: refused anyway
        if (max_paths is None or mean * ROUND_MARGIN <= max_paths) and (
                max_seconds is None or predicted * ROUND_MARGIN <= max_seconds):
            break                                  # far under every budget: decided
        if 4 * runs > mean / 20 or refining + 4 * runs > ESTIMATE_RUNS:
            break
        size *= 4
    return sum(e * n for e, n in rounds) / sum(n for _, n in rounds)


def _level_estimate(method, p, q, k, sampler_factory, probes, rng, times) -> tuple:
    """One round of :func:`estimate_paths`: ``(estimate, exact, runs)``, ``exact`` when no
    level had to be sampled, ``runs`` how many times the method ran.  The seconds of the
    runs that ended in a path go to ``times``.  (The one reading of the clock that can change
    the estimate: a round that passes :data:`MAX_SECONDS` / 10, not counting its first run,
    which holds one-time work such as a plan, finishes by probes; only a method that slow
    per path meets it.)"""
    population: list = [((), (), Fraction(1))]   # (prefix, arities along it, weight)
    paths = Fraction(0)
    exact = True
    start = clock()
    first = None
    level = 0
    runs = 0
    while population:
        if level >= ESTIMATE_LEVELS or clock() - start - (first or 0) > MAX_SECONDS / 10:
            exact = False
            for prefix, arity, weight in population:
                s = sampler_factory()
                s._prefix, s._arity = list(prefix), list(arity)
                s._probe, s._probe_size = rng, 1
                s._reset()
                began = clock()
                _call(method, s, p, q, k)
                runs += 1
                times.append(clock() - began)
                paths += weight * s._probe_size
            break
        groups = []
        for prefix, arity, weight in population:
            s = sampler_factory()
            s._prefix, s._arity = list(prefix), list(arity)
            s._stop_at_frontier = True
            s._reset()
            began = clock()
            runs += 1
            try:
                _call(method, s, p, q, k)
            except Frontier as frontier:
                groups.append((prefix, arity, frontier.arity, weight))
                continue
            finally:
                if first is None:
                    first = clock() - began
            times.append(clock() - began)
            if s._depth != len(prefix):
                raise InvalidInput(
                    "the method made different random choices on a replay (it stopped "
                    f"after {s._depth} choices, not {len(prefix)}): every random choice "
                    "must go through the sampler s: the method reads hidden randomness or "
                    "state (random, numpy.random, a counter)")
            paths += weight
        population, whole = _resample(groups, probes, rng)
        exact = exact and whole
        level += 1
    return paths, exact, runs


def _resample(groups: list, size: int, rng: _ProbeRandom) -> list:
    """The children of one level, ``groups`` = ``[(prefix, arities, arity, weight), ...]``
    (``arity`` children of equal ``weight`` each), and whether they are all kept: all of
    them when there are at most ``size``, else ``size`` systematic draws proportional to weight, each child drawn ``m``
    times weighing ``m * total / size`` (so that every child's expected weight is its own)."""
    if sum(arity for _, _, arity, _ in groups) <= size:
        return [(prefix + (i,), arities + (arity,), weight)
                for prefix, arities, arity, weight in groups for i in range(arity)], True
    total = sum((arity * weight for _, _, arity, weight in groups), Fraction(0))
    step = total / size
    position = rng.fraction() * step          # the draws: position + j * step, j < size
    out = []
    low = Fraction(0)
    for prefix, arities, arity, weight in groups:
        high = low + arity * weight
        drawn: dict = {}
        while position < high:
            i = min(int((position - low) / weight), arity - 1)
            drawn[i] = drawn.get(i, 0) + 1
            position += step
        for i, m in drawn.items():
            out.append((prefix + (i,), arities + (arity,), m * step))
        low = high
    return out, False
