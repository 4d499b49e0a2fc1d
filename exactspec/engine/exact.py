"""The exact interpreter: run a method on every random path and add up the path weights.

A method is ordinary Python that makes its random choices through a sampler ``s``
(``s.draw``, ``s.coin``, ``s.draft``, ``s.drafts``, ``s.uniform``, ``s.pick``, ``s.accept``).
:class:`ExactSampler` runs it again and again, each time following the next untried sequence of
choices (a depth-first walk of the tree of paths, re-executing the method from the start for
each path).  Every path carries the exact product of its branch probabilities, its drafts, its
output and whether a draft was explicitly accepted.  The same method code also runs by random
sampling (:mod:`.sampling`) and over symbolic distributions (:mod:`.symbolic`).

Before enumerating, the size of the tree is estimated (:func:`estimate_paths`: Knuth's
random probes, and near a budget the tree expanded level by level with a bounded number of
nodes kept per level), and work above the budget is refused with the estimate.
"""

from __future__ import annotations

import functools
import gc
import sys
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable

from ..core.errors import InvalidInput, TooLarge
from ..core.exact_values import ExactFraction, floats_converted, plain_fraction, stored_probs
from ..core.signals import EngineSignal, user_code
from .driver import depth_first
from .races import Noise, exact_race_options, race_weights
from .uniform import Uniform, grid_count
from .watch import Fingerprint, watched

_clock = time.perf_counter  # taken before any watch replaces the clock

__all__ = ["ExactSampler", "Path", "Enumeration", "enumerate_paths", "estimate_paths",
           "DEFAULT_MAX_PATHS", "gc_paused"]

DEFAULT_MAX_PATHS = 10**7
MAX_DEPTH = 1_000
MAX_CALLS = 10**6          # sampler calls on one path, branching or not
MAX_SECONDS = 60.0         # estimated time of an enumeration run without --max-paths
#: Random probes that predict more than this many times the seconds budget are not refined
#: level by level (each level costs up to ``probes`` runs of a method that is slow per path).
FAR_OVER = 100


@dataclass(frozen=True)
class Path:
    """One complete path: its branches ``(kind, what, probability)``, weight and result."""

    branches: tuple
    weight: Any
    output: Any
    drafts: tuple
    accepted: bool
    choices: tuple = ()


@dataclass
class Enumeration:
    """The exact result of running a method on every path.

    ``law`` maps each label to ``P(Y = label)``; ``acceptance`` is ``P(Y in X)`` (the output
    is one of the drafts); ``explicit_acceptance`` is the probability that the method
    explicitly accepted a draft (``s.accept``); ``paths`` counts the paths; ``floats`` counts
    the float values the method's exact arithmetic took at their exact binary value, over
    every path (:attr:`floats_converted`); ``draft_axis`` is the number of draft tokens each
    path carries as a tensor axis (:mod:`exactspec.torch_layer.branched`; 0 when every draft
    token is its own path).
    """

    labels: tuple
    law: dict
    acceptance: Any
    explicit_acceptance: Any
    paths: int
    total: Any
    used_drafts: bool
    used_accept: bool
    path_list: list | None = None
    seconds: float = 0.0
    floats: int = 0
    _tree: Any = field(default=None, repr=False)
    draft_axis: int = 0      # draft tokens carried as a tensor axis on every path (0: none)

    @property
    def floats_converted(self) -> int:
        """Float values met in the method (float literals mixed with probabilities, floats
        handed to the sampler) and taken at their exact binary value, over every path."""
        return self.floats

    def path_tree(self):
        """The tree of paths as a networkx ``DiGraph`` (needs ``keep_paths=True``).

        Nodes are prefixes of branch sequences (the root is ``()``); each edge carries
        ``kind``, ``what`` and ``prob``; each leaf carries ``output``, ``weight``, ``drafts``
        and ``accepted``.
        """
        if self.path_list is None:
            raise InvalidInput("the tree of paths needs keep_paths=True")
        if self._tree is None:
            import networkx as nx

            graph = nx.DiGraph()
            graph.add_node((), label="start", weight=Fraction(1))
            for path in self.path_list:
                node = ()
                for kind, what, prob in path.branches:
                    child = node + ((kind, what),)
                    if child not in graph:
                        graph.add_node(child, label=what)
                        graph.add_edge(node, child, kind=kind, what=what, prob=prob)
                    node = child
                leaf = node + (("output", path.output),)
                graph.add_node(leaf, label=f"Y={path.output}", output=path.output,
                               weight=path.weight, drafts=path.drafts, accepted=path.accepted)
                graph.add_edge(node, leaf, kind="output", what=f"Y={path.output}", prob=1)
            self._tree = graph
        return self._tree


class _Frontier(EngineSignal):
    """Internal: a run of the size estimate reached the first choice after its prefix (an
    engine signal: a method's own ``except`` that catches it is refused)."""

    def __init__(self, arity: int):
        super().__init__(arity)
        self.arity = arity


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


def exact_probability(value, what: str, sampler=None):
    """A branch probability as an exact number.

    Fractions and integers pass (a ``Fraction`` subclass, such as the exact numbers user code
    receives, as the plain ``Fraction`` it equals); a float (Python or NumPy, any width)
    becomes its exact binary value, counted on ``sampler.floats`` so that the output can say
    so; symbolic values pass.

    >>> exact_probability(0.5, "coin")
    Fraction(1, 2)
    >>> exact_probability(0.1, "coin") == Fraction(3602879701896397, 36028797018963968)
    True
    """
    if type(value) is Fraction:
        return value
    if isinstance(value, Fraction):
        return plain_fraction(value) if type(value) is ExactFraction else \
            Fraction(value.numerator, value.denominator)
    if isinstance(value, bool):
        raise InvalidInput(f"{what}: probability {value!r} is a bool, not a number")
    if isinstance(value, int):
        return Fraction(value)
    ratio = getattr(value, "as_integer_ratio", None)
    if ratio is not None and not hasattr(value, "free_symbols"):
        try:
            num, den = ratio()
        except (OverflowError, ValueError):
            raise InvalidInput(f"{what}: probability {value!r} is not a finite number") from None
        if sampler is not None:
            sampler.floats += 1
        return Fraction(num, den)
    if getattr(value, "is_Float", False):
        if sampler is not None:
            sampler.floats += 1
        import sympy

        if not value.is_finite:
            raise InvalidInput(f"{what}: probability {value} is not a finite number")
        rational = sympy.Rational(value)  # the Float's exact binary value
        return Fraction(int(rational.p), int(rational.q))
    return value


class ExactSampler:
    """The sampling interface, interpreted by exhaustive enumeration.

    Parameters
    ----------
    grid : int, optional
        Model explicit uniforms as uniform on ``{0, 1/N, ..., (N-1)/N}`` instead of ``[0, 1)``.
    """

    exact = True
    symbolic = False

    def __init__(self, grid: int | None = None):
        if grid is not None and (not isinstance(grid, int) or grid < 1):
            raise InvalidInput(f"grid={grid!r}: need a positive integer number of grid points")
        self.grid = grid
        self._prefix: list[int] = []
        self._arity: list[int] = []
        self._probe: _ProbeRandom | None = None
        self._probe_size = 1
        self._stop_at_frontier = False
        self.floats = 0
        self.record_choices = False
        self._laws: dict = {}
        self._reset()

    # -- bookkeeping ---------------------------------------------------------------------
    def _reset(self):
        self._depth = 0
        self._calls = 0
        self.weight = Fraction(1)
        self.branches: list = []
        self.choices: list = []
        self.drafted: list = []
        self.accepted_token = None
        self.did_accept = False
        self._uniforms = 0
        self._noises = 0
        self._region: list = []          # linear comparisons linking uniforms (:mod:`.joint`)
        self._uniform_by_id: dict = {}

    def _choose(self, kind: str, options: list):
        """Take one of ``options`` = ``[(value, prob, what), ...]`` (non-zero probs)."""
        if not options:
            raise InvalidInput(f"{kind}: nothing to choose from (all probabilities are 0)")
        self._calls += 1
        if self._calls > MAX_CALLS:
            raise TooLarge(f"a path made more than {MAX_CALLS:,} sampler calls: too much work "
                           "for exact enumeration (a smaller k, or --backend numpy)")
        if len(options) == 1:
            value, prob, what = options[0]
            self.weight = self.weight * prob
            return value
        d = self._depth
        if d >= MAX_DEPTH:
            raise TooLarge(f"a path made more than {MAX_DEPTH:,} random choices: the method "
                           "may loop without bound (exact enumeration needs finitely many paths)")
        if d < len(self._prefix):
            i = self._prefix[d]
            if self._arity[d] != len(options):
                raise InvalidInput(
                    f"the method made different random choices on a replay ({kind} had "
                    f"{self._arity[d]} options, now {len(options)}): every random choice must "
                    "go through the sampler s: the method reads hidden randomness or state "
                "(random, numpy.random, a counter)")
        elif self._probe is not None:
            i = self._probe.randrange(len(options))
            self._probe_size *= len(options)
        else:
            if self._stop_at_frontier:     # a size estimate learns this node's arity only
                raise _Frontier(len(options))
            i = 0
            self._prefix.append(0)
            self._arity.append(len(options))
        self._depth += 1
        value, prob, what = options[i]
        self.weight = self.weight * prob
        self.branches.append((kind, what, prob))
        if self.record_choices:
            self.choices.append((i, self._choice_key(options)))
        return value

    def _choice_key(self, options: list):
        """What a recorded choice remembers of its options (the hidden-state fingerprint):
        their probabilities; a route that reuses one option list on every path may name it
        by a digest instead (:mod:`.law_leaves`)."""
        return tuple(option[1] for option in options)

    def _advance(self) -> bool:
        """Move to the next untried path; False when every path has been run."""
        while self._prefix:
            if self._prefix[-1] + 1 < self._arity[-1]:
                self._prefix[-1] += 1
                return True
            self._prefix.pop()
            self._arity.pop()
        return False

    # -- the sampling interface ----------------------------------------------------------
    def draw(self, dist, what: str = "draw"):
        """A token drawn from ``dist``."""
        probs = self._law(dist, what)
        options = [(lab, pr, f"{what} {lab}") for lab, pr in zip(dist.labels, probs)
                   if pr != 0]
        return self._choose(what, options)

    def _law(self, dist, what: str) -> list:
        """``dist``'s probabilities, exact; refused unless they are in [0, 1] and sum to 1.

        Checked once per law object (a ``Dist`` is read-only) and remembered."""
        seen = self._laws.get(id(dist))
        if seen is not None and seen[0] is dist:
            self.floats += seen[2]
            return seen[1]
        floats = self.floats
        probs = [exact_probability(pr, what, self) for pr in stored_probs(dist)]
        if all(isinstance(pr, Fraction) for pr in probs):
            if any(pr < 0 for pr in probs) or sum(probs) != 1:
                from ..core.dist import exact_str

                raise InvalidInput(
                    f"{what}: the method drew from a law whose entries "
                    f"{'are negative' if any(pr < 0 for pr in probs) else 'sum to ' + exact_str(sum(probs))}"
                    ", not a probability law summing to 1 exactly (floats rounded? build it "
                    "from Fractions)")
        if len(self._laws) > 4096:
            self._laws.clear()
        self._laws[id(dist)] = (dist, probs, self.floats - floats)
        return probs

    def _weights(self, dist, what: str) -> list:
        """``dist``'s entries as exact non-negative weights, not necessarily summing to 1: the
        inverse CDF of :meth:`pick` runs over unnormalised masses too (``cumsum(w)`` looked up
        at ``u * total``, as kernels write it)."""
        from ..core.dist import exact_str

        probs = [exact_probability(pr, what, self) for pr in dist.probs]
        for lab, pr in zip(dist.labels, probs):
            if isinstance(pr, Fraction) and pr < 0:
                raise InvalidInput(f"{what}: the weight of {lab!r} is {exact_str(pr)}, "
                                   "negative")
        return probs

    def coin(self, prob, what: str = "coin") -> bool:
        """True with probability ``prob``."""
        prob = exact_probability(prob, what, self)
        if type(prob) is Fraction:     # the same tests on its integers (cheaper per path)
            num, den = prob.numerator, prob.denominator
            outside, heads, tails = num < 0 or num > den, num != 0, num != den
        else:
            outside = prob < 0 or prob > 1
            heads, tails = (prob != 0, prob != 1) if not outside else (False, False)
        if outside:
            raise InvalidInput(f"{what}: probability {prob} is outside [0, 1]")
        options = []
        if heads:
            options.append((True, prob, f"{what} heads"))
        if tails:
            options.append((False, 1 - prob, f"{what} tails"))
        return self._choose(what, options)

    def draft(self, q, what: str = "draft"):
        """One draft token from ``q``, remembered as a draft for ``P(Y in X)``."""
        x = self.draw(q, what)
        self.drafted.append(x)
        return x

    def drafts(self, q, k: int, replace: bool = True) -> tuple:
        """``k`` drafts from ``q``: i.i.d., or without replacement (``replace=False``)."""
        if replace:
            return tuple(self.draft(q, f"draft{i + 1}") for i in range(k))
        from ..core.dist import Dist

        chosen: list = []
        remaining = q
        for i in range(k):
            x = self.draft(remaining, f"draft{i + 1}")
            chosen.append(x)
            if i + 1 < k:
                rest = [0 if lab in chosen else pr for lab, pr in zip(q.labels, q.probs)]
                total = sum(rest[1:], rest[0])
                if total == 0:
                    raise InvalidInput(
                        f"k={k}: q has only {len(q.support)} tokens with positive probability, "
                        "too few for drafts without replacement")
                remaining = Dist([v / total for v in rest], q.labels, check=False)
        return tuple(chosen)

    def accept(self, x):
        """Mark ``x`` as an explicitly accepted draft and return it."""
        self.did_accept = True
        self.accepted_token = x
        return x

    # -- exact transcendental functions (sympy values: exp of a rational is irrational) ----
    def exp(self, x):
        """``exp(x)`` exactly (a sympy number; ``s.exp``, ``s.log``, ``s.softmax`` are the
        functions a float interpreter rounds, see :mod:`.float_sampler`)."""
        import sympy

        return sympy.exp(_sympy_exact(x))

    def log(self, x):
        """``log(x)`` exactly (a sympy number)."""
        import sympy

        return sympy.log(_sympy_exact(x))

    def softmax(self, logits) -> list:
        """``exp(x_i) / sum_j exp(x_j)`` exactly (sympy numbers, summing to 1 exactly)."""
        import sympy

        values = tuple(_sympy_exact(x) for x in logits)
        hit = _SOFTMAX.get(values)
        if hit is not None:
            return list(hit)
        top = max(values, key=lambda v: sympy.N(v, 30))
        weights = [sympy.exp(v - top) for v in values]
        total = sympy.Add(*weights)
        out = [w / total for w in weights]
        if len(_SOFTMAX) < 4096:
            _SOFTMAX[values] = tuple(out)
        return out

    def uniform(self) -> Uniform:
        """An explicit uniform random number in ``[0, 1)`` (see :mod:`.uniform`)."""
        self._uniforms += 1
        u = Uniform(self, self._uniforms)
        self._uniform_by_id[u.ident] = u
        return u

    def pick(self, dist, u, what: str = "pick"):
        """The token at ``u`` of the inverse CDF of ``dist`` (tokens in their given order).

        ``dist`` may hold unnormalised non-negative weights: token ``t`` is picked iff
        ``cum_{t-1} <= u < cum_t`` for the cumulative sums of the weights, so ``u`` scaled by
        their total (``s.pick(w, u * total)``) is the normalised draw; a lookup whose range
        passes the total is refused.  A plain sequence of weights (a list, a NumPy array)
        picks an index, a mapping one of its keys."""
        dist = pick_weights(dist, what)
        base = getattr(u, "base", None)
        if not isinstance(base, Uniform):
            from .joint import Linear

            if isinstance(u, Linear):
                return self._pick_by_comparisons(dist, u, what)
            raise InvalidInput("pick needs an explicit uniform from s.uniform()")
        if base.linked or base.spent:
            return self._pick_by_comparisons(dist, u, what)
        options = []
        cum = 0
        for lab, pr in zip(dist.labels, self._weights(dist, what)):
            a, b = cum, cum + pr
            if getattr(b, "is_Rational", None) is False:  # an irrational sum: settle it
                b = _settled(b)                          # (softmax weights add up to 1)
            cum = b
            if pr == 0:
                continue
            lo = max(base.lo, (a - u.shift) / u.scale)
            hi = min(base.hi, (b - u.shift) / u.scale)
            weight = self._interval_weight(base, lo, hi)
            if weight != 0:
                options.append(((lab, lo, hi), weight, f"{what} {lab} (u{base.ident})"))
        if not options:
            raise InvalidInput(f"{what}: u lies outside the distribution's cumulative range")
        start, end = (base.lo * u.scale + u.shift, base.hi * u.scale + u.shift)
        if not (_at_most(0, start) and _at_most(end, cum)):  # part of u's range: no token
            from ..core.dist import exact_str

            raise InvalidInput(
                f"{what}: the weights sum to {exact_str(cum)} but the value looked up ranges "
                f"over [{exact_str(start)}, {exact_str(end)}): part of it falls past the "
                "cumulative sums and no token is there (an inverse CDF over unnormalised "
                "weights looks up u * total)")
        lab, lo, hi = self._choose(what, options)
        base.lo, base.hi = lo, hi
        return lab

    def exponentials(self, n: int) -> Noise:
        """A vector of ``n`` i.i.d. ``Exp(1)`` noise values, for races (see :mod:`~exactspec.engine.races`)."""
        return self._noise(n, "exponential")

    def gumbels(self, n: int) -> Noise:
        """A vector of ``n`` i.i.d. standard Gumbel noise values, for Gumbel-max races."""
        return self._noise(n, "gumbel")

    def _noise(self, n, kind):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InvalidInput(f"{kind} noise of n={n!r} tokens: need a positive integer")
        self._noises += 1
        return Noise(self, n, self._noises, kind)

    def race(self, weights, noise: Noise, *, first: bool = True, what: str = "race"):
        """The token of ``argmax_v w_v / E_v`` (``first=True``; Gumbel noise: ``argmax_v
        log w_v + G_v``), or of ``argmin`` (``first=False``), over the noise vector ``noise``;
        exact even when ``noise`` served earlier races (:mod:`~exactspec.engine.races`)."""
        if not isinstance(noise, Noise) or noise.sampler is not self:
            raise InvalidInput(f"{what}: the noise must come from s.exponentials(n) or "
                               "s.gumbels(n) of this run")
        labels, weights = race_weights(weights, noise.n)
        options = exact_race_options(noise, weights, first)
        chosen = self._choose(what, [((j, rows), pr, f"{what} {labels[j]} (noise{noise.ident})")
                                     for j, pr, rows in options if pr != 0])
        j, rows = chosen
        noise.rows = noise.rows + rows
        return labels[j]

    def _pick_by_comparisons(self, dist, u, what):
        """Inverse CDF as a chain of comparisons ``u < F(t)`` (for a uniform linked to
        others, or a combination such as ``1 - u``)."""
        cum = 0
        last = None
        for lab, pr in zip(dist.labels, dist.probs):
            if pr == 0:
                continue
            cum = cum + pr
            last = lab
            if u < cum:
                return lab
        if last is None:
            raise InvalidInput(f"{what}: nothing to choose from (all probabilities are 0)")
        raise InvalidInput(f"{what}: u lies outside the distribution's cumulative range")

    # -- uniform splitting ---------------------------------------------------------------
    def _interval_weight(self, u: Uniform, lo, hi):
        if not lo < hi:
            return 0
        if self.grid is None:
            if u.lo == 0 and u.hi == 1:          # a uniform not cut yet: the length itself
                return hi if lo == 0 else (1 - lo if hi == 1 else hi - lo)
            return (hi - lo) / (u.hi - u.lo)
        total = grid_count(u.lo, u.hi, self.grid)
        return Fraction(grid_count(lo, hi, self.grid), total)

    def _split_uniform(self, u: Uniform, c, strict: bool) -> bool:
        c = exact_probability(c, "uniform", self)
        if self.grid is not None:
            scaled = Fraction(c) * self.grid
            import math

            cut = Fraction(math.ceil(scaled) if strict else math.floor(scaled) + 1, self.grid)
        else:
            cut = c
        if not u.lo < cut:
            return False
        if not cut < u.hi:
            return True
        below = self._interval_weight(u, u.lo, cut)
        above = self._interval_weight(u, cut, u.hi)
        options = []
        sign = "<" if strict else "<="
        if below != 0:
            options.append((True, below, f"u{u.ident} {sign} {c}"))
        if above != 0:
            options.append((False, above, f"u{u.ident} not {sign} {c}"))
        result = self._choose("uniform", options)
        if result:
            u.hi = cut
        else:
            u.lo = cut
        return result


_SOFTMAX: dict = {}
_SETTLED: dict = {}


def _at_most(a, b) -> bool:
    """``a <= b`` for exact numbers; for sympy numbers that sympy cannot order (an irrational
    sum equal to its bound but not simplified to it), ``b - a`` evaluated to 50 digits is not
    clearly negative."""
    try:
        return bool(a <= b)
    except TypeError:
        import sympy

        return not sympy.N(sympy.sympify(b) - sympy.sympify(a), 50) < -sympy.Float(10) ** -40


class _Weights:
    """A sequence or mapping of weights read as ``labels`` and ``probs`` (for :meth:`pick`)."""

    __slots__ = ("labels", "probs")

    def __init__(self, labels, probs):
        self.labels = tuple(labels)
        self.probs = tuple(probs)


def pick_weights(dist, what: str = "pick"):
    """``dist`` when it has ``labels`` and ``probs`` (a Dist); a mapping's keys and values; a
    sequence's indices and entries.

    >>> pick_weights([Fraction(1, 2), 1]).labels
    (0, 1)
    """
    if hasattr(dist, "labels") and hasattr(dist, "probs"):
        return dist
    if hasattr(dist, "keys") and hasattr(dist, "values"):
        return _Weights(dist.keys(), dist.values())
    if isinstance(dist, (str, bytes)):
        raise InvalidInput(f"{what}: weights {dist!r}: give a Dist, a mapping or a sequence")
    try:
        values = list(dist)
    except TypeError:
        raise InvalidInput(f"{what}: weights {dist!r}: give a Dist, a mapping or a sequence "
                           "of non-negative numbers") from None
    return _Weights(range(len(values)), values)


def _settled(expr):
    """``sympy.simplify(expr)``, remembered (the same sums recur on every path)."""
    hit = _SETTLED.get(expr)
    if hit is None:
        import sympy

        hit = sympy.simplify(expr)
        if len(_SETTLED) < 4096:
            _SETTLED[expr] = hit
    return hit


def _sympy_exact(x):
    import sympy

    if isinstance(x, (int, Fraction)):
        return sympy.Rational(Fraction(x).numerator, Fraction(x).denominator)
    if isinstance(x, float):
        f = Fraction(x)
        return sympy.Rational(f.numerator, f.denominator)
    return sympy.sympify(x)


def _call(method: Callable, sampler, p, q, k):
    with user_code():
        return method(sampler, p, q, k)


def _snapshot(dist) -> tuple:
    """What a method must not change in its input: labels and exact values (those user code
    reads too: :func:`~exactspec.core.exact_values.exact_values`)."""
    def values(probs):
        return tuple((v.numerator, v.denominator) if isinstance(v, Fraction) else repr(v)
                     for v in probs)

    plain = values(getattr(dist, "probs", ()))
    handed = getattr(dist, "_exact", None)
    return (tuple(getattr(dist, "labels", ())), plain,
            plain if handed is None else values(handed))


def _check_unchanged(before, p, q) -> None:
    for name, dist, old in (("p", p, before[0]), ("q", q, before[1])):
        if _snapshot(dist) != old:
            if getattr(dist, "_exact", None) is not None:
                object.__setattr__(dist, "_exact", None)     # forget the values it changed
            raise InvalidInput(f"the method changed its input {name}: p and q are read-only "
                               "(copy them, e.g. dict(p), before changing anything)")


#: The size estimate expands the tree of paths level by level for at most this many levels;
#: below, each node it keeps finishes with one random probe.
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


def gc_paused(function):
    """``function`` run with Python's cyclic garbage collector paused (and resumed after, if
    it was on): a run at vocabulary size makes millions of short-lived objects (rationals,
    values of a format, rows) that reference counting frees, and the collector's passes over
    them cost about a fifth of the run."""
    @functools.wraps(function)
    def paused(*args, **kwargs):
        on = gc.isenabled()
        gc.disable()
        try:
            return function(*args, **kwargs)
        finally:
            if on:
                gc.enable()

    return paused


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
    before = _snapshot(p), _snapshot(q)
    times: list = []
    with watched(method) if watch else _nothing():
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
        _check_unchanged(before, p, q)
    if timing is not None:
        timing.append(sorted(times)[len(times) // 2])
    return max(1, round(estimate))


def _knuth_estimate(method, p, q, k, sampler_factory, probes, rng, times):
    """The mean over random probes of the product of the branching factors met along the
    probe; probing stops early when the probes alone pass :data:`MAX_SECONDS` / 10."""
    total = 0
    done = 0
    start = _clock()
    for _ in range(probes):
        s = sampler_factory()
        s._probe = rng
        s._probe_size = 1
        s._reset()
        began = _clock()
        _call(method, s, p, q, k)
        times.append(_clock() - began)
        total += s._probe_size
        done += 1
        if _clock() - start > MAX_SECONDS / 10:
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
    start = _clock()
    first = None
    level = 0
    runs = 0
    while population:
        if level >= ESTIMATE_LEVELS or _clock() - start - (first or 0) > MAX_SECONDS / 10:
            exact = False
            for prefix, arity, weight in population:
                s = sampler_factory()
                s._prefix, s._arity = list(prefix), list(arity)
                s._probe, s._probe_size = rng, 1
                s._reset()
                began = _clock()
                _call(method, s, p, q, k)
                runs += 1
                times.append(_clock() - began)
                paths += weight * s._probe_size
            break
        groups = []
        for prefix, arity, weight in population:
            s = sampler_factory()
            s._prefix, s._arity = list(prefix), list(arity)
            s._stop_at_frontier = True
            s._reset()
            began = _clock()
            runs += 1
            try:
                _call(method, s, p, q, k)
            except _Frontier as frontier:
                groups.append((prefix, arity, frontier.arity, weight))
                continue
            finally:
                if first is None:
                    first = _clock() - began
            times.append(_clock() - began)
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


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def enumerate_paths(method: Callable, p, q, k: int = 1, *, grid: int | None = None,
                    keep_paths: bool = False, max_paths: int | None = DEFAULT_MAX_PATHS,
                    progress: bool | None = None, sampler_factory=None,
                    on_path: Callable | None = None, watch: bool = False,
                    max_seconds: float | None = None) -> Enumeration:
    """Run ``method(s, p, q, k)`` on every path and return the exact :class:`Enumeration`.

    Parameters
    ----------
    max_paths : int or None
        Refuse (:class:`~exactspec.core.errors.TooLarge`) when the estimated number of paths is
        larger; ``None`` insists, whatever the size.
    progress : bool, optional
        Print a progress line on stderr (default: when the estimate is large and stderr is a
        terminal).
    on_path : callable, optional
        Called with each :class:`Path` as it is enumerated (a certificate streams this way,
        without holding the paths in memory).
    watch : bool
        The method is user code: refuse hidden randomness while it runs
        (:func:`~exactspec.engine.watch.watched`), run every path a second time and compare,
        and check that ``p`` and ``q`` come back unchanged.
    max_seconds : float, optional
        Refuse when the estimated seconds of the walk (estimated paths times the median
        seconds of one path) are more; by default :data:`MAX_SECONDS` under the default
        ``max_paths`` and no limit otherwise.  The walk stops at twice this.
    """
    factory = sampler_factory or (lambda: ExactSampler(grid=grid))
    estimate = None
    if max_seconds is None and max_paths == DEFAULT_MAX_PATHS:
        max_seconds = MAX_SECONDS
    if max_paths is not None or progress:
        timing: list = []
        estimate = estimate_paths(method, p, q, k, sampler_factory=factory, watch=watch,
                                  timing=timing, max_paths=max_paths, max_seconds=max_seconds)
        if max_paths is not None and estimate > max_paths:
            raise TooLarge(
                f"about {estimate:,} paths to enumerate, over the budget of {max_paths:,}: "
                "use --backend numpy, or --max-paths N to insist",
                estimate=estimate, budget=max_paths)
        check_seconds(estimate, timing[0] * (2 if watch else 1), max_seconds, max_paths,
                      "--backend numpy, a smaller instance")
    if progress is None:
        progress = bool(estimate and estimate > 200_000 and sys.stderr.isatty())
    before = _snapshot(p), _snapshot(q)
    with watched(method) if watch else _nothing():
        result, digest = _walk(method, p, q, k, factory, keep_paths, progress, estimate,
                               on_path, watch, max_paths, max_seconds)
        if watch:
            _, again = _walk(method, p, q, k, factory, False, False, None, None, True)
            if again != digest:
                raise InvalidInput(
                    "the method gave different results when the same paths were run twice: "
                    "it reads hidden randomness or state (a generator made at import, a "
                    "counter, the clock); make every random choice through the sampler s "
                    "(in a PyTorch rule: through torch's random functions)")
    if watch:
        _check_unchanged(before, p, q)
    return result


def _over_budget(count: int, estimate, max_paths, seconds: float,
                 max_seconds: float | None = None) -> TooLarge | None:
    """The refusal for an enumeration that has outgrown its estimate, or ``None``.

    The up-front estimate samples the tree and can still fall short on a tree whose large
    branches are rare among the nodes of their level; the walk itself then stops at the
    same budgets: more paths than ``max_paths``, or more than twice ``max_seconds`` of work,
    or of :data:`MAX_SECONDS` without ``max_seconds`` (under the default budget, or under
    any budget once the walk has passed twice its estimate)."""
    guess = f" (estimated about {estimate:,})" if estimate else ""
    if count > max_paths:
        return TooLarge(
            f"more than {max_paths:,} paths{guess}, over the budget of {max_paths:,}: stopped; "
            "use --backend numpy, or --max-paths N to insist", estimate=count, budget=max_paths)
    wrong = not estimate or count > 2 * estimate     # the estimate was far short
    limit = MAX_SECONDS if max_seconds is None else max_seconds
    if seconds > 2 * limit and (max_seconds is not None or max_paths == DEFAULT_MAX_PATHS
                                or wrong):
        return TooLarge(
            f"{count:,} paths{guess} enumerated in {seconds:,.0f} s and not done, over the "
            f"budget of {limit:.0f} s of exact work: stopped; use --backend numpy, a "
            "smaller instance, or --max-paths N to insist", estimate=count, budget=max_paths)
    return None


def _walk(method, p, q, k, factory, keep_paths, progress, estimate, on_path, fingerprint,
          max_paths=None, max_seconds=None):
    start = _clock()
    s = factory()
    labels = p.labels
    law = {lab: 0 for lab in labels}
    sums = {"acceptance": 0, "explicit": 0, "total": 0}
    used = {"drafts": False, "accept": False}
    path_list = [] if keep_paths else None
    digest = Fingerprint() if fingerprint else None
    s.record_choices = bool(keep_paths or on_path is not None or fingerprint)
    last_report = [start]
    converted = floats_converted()

    def leaf(s, y):
        if y not in law:
            raise InvalidInput(f"the method returned {y!r}, which is not a token of p "
                               f"(labels {list(labels)})")
        w = s.weight
        law[y] = law[y] + w
        sums["total"] = sums["total"] + w
        if s.drafted:
            used["drafts"] = True
            if y in s.drafted:
                sums["acceptance"] = sums["acceptance"] + w
        if s.did_accept:
            used["accept"] = True
            if s.accepted_token == y:
                sums["explicit"] = sums["explicit"] + w
        if digest is not None:
            digest.add(s.choices, y, s.drafted, s.did_accept, s.accepted_token, w)
        if keep_paths or on_path is not None:
            path = Path(tuple(s.branches), w, y, tuple(s.drafted),
                        bool(s.did_accept and s.accepted_token == y), tuple(s.choices))
            if keep_paths:
                path_list.append(path)
            if on_path is not None:
                on_path(path)

    def every(count):
        if max_paths is not None and count % 1024 == 0:
            refusal = _over_budget(count, estimate, max_paths, _clock() - start, max_seconds)
            if refusal is not None:
                raise refusal
        if progress and count % 20000 == 0:
            now = _clock()
            if now - last_report[0] > 0.5:
                last_report[0] = now
                shown = f"{count:,}" + (f" / ~{estimate:,}" if estimate else "")
                print(f"\r  enumerating paths: {shown}", end="", file=sys.stderr, flush=True)

    count = depth_first(s, lambda s: method(s, p, q, k), leaf, every=every)
    acceptance, explicit, total = sums["acceptance"], sums["explicit"], sums["total"]
    used_drafts, used_accept = used["drafts"], used["accept"]
    if progress:
        print(f"\r  enumerated {count:,} paths" + " " * 20, file=sys.stderr)
    if not used_drafts:
        acceptance = explicit
    result = Enumeration(labels=labels, law=law, acceptance=acceptance,
                         explicit_acceptance=explicit, paths=count, total=total,
                         used_drafts=used_drafts, used_accept=used_accept, path_list=path_list,
                         seconds=_clock() - start,
                         floats=s.floats + floats_converted() - converted)
    return result, (digest.digest() if digest is not None else None)
