"""The exact interpreter's sampler: every random choice a branch, each path run in turn.

:class:`ExactSampler` interprets the sampling interface (``s.draw``, ``s.coin``, ``s.draft``,
``s.drafts``, ``s.uniform``, ``s.pick``, ``s.accept``) by exhaustive enumeration: a method
run through it follows the next untried sequence of choices (a depth-first walk of the tree
of paths, re-executing the method from the start for each path), and every path carries the
exact product of its branch probabilities.  A size estimate (:mod:`.path_estimate`) runs it
by random probes or up to the first choice after a prefix (:class:`Frontier`); the walk
(:mod:`.exact`) runs it on every path.  Beside it, what a method must not change in its
input, checked after a run (:func:`input_snapshot`, :func:`check_unchanged`).

>>> from exactspec.core.dist import Dist
>>> s = ExactSampler()
>>> s.coin(Fraction(1, 3)), s.weight
(True, Fraction(1, 3))
"""

from __future__ import annotations

from fractions import Fraction

from ..core.deadline import check as check_deadline
from ..core.errors import InvalidInput, TooLarge
from ..core.exact_values import ExactFraction, plain_fraction, stored_probs
from ..core.integer_rows import exact_sum
from ..core.signals import EngineSignal
from .races import Noise, exact_race_options, race_weights
from .uniform import Uniform, grid_count

__all__ = ["ExactSampler", "Frontier", "MAX_CALLS", "MAX_DEPTH", "check_unchanged",
           "exact_probability", "input_snapshot", "pick_weights", "unwatched"]

MAX_DEPTH = 1_000
MAX_CALLS = 10**6          # sampler calls on one path, branching or not
_ONE = Fraction(1)         # a path's weight before its first choice (multiplied by nothing)


class Frontier(EngineSignal):
    """A run of the size estimate reached the first choice after its prefix, of ``arity``
    options (an engine signal: a method's own ``except`` that catches it is refused)."""

    def __init__(self, arity: int):
        super().__init__(arity)
        self.arity = arity


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
        self._probe = None               # a size estimate's random probes (path_estimate)
        self._probe_size = 1
        self._stop_at_frontier = False
        self._forks = None               # a walk's forked copies (:mod:`.forked_paths`)
        self.floats = 0
        self.record_choices = False
        self._laws: dict = {}
        self._options: dict = {}         # id(law) -> (law, its options), see draw
        self._listed = 0
        self._last_coin = (None, None)   # (prob, 1 - prob) of the last coin
        self._reset()

    # -- bookkeeping ---------------------------------------------------------------------
    def _reset(self):
        self._depth = 0
        self._calls = 0
        self.weight = _ONE               # the path's probability so far (see _choose)
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
        """Take one of ``options`` = ``[(value, prob, what), ...]`` (non-zero probs; ``what``
        ``None`` names the branch ``"{kind} {value}"``, written only for the branch taken)."""
        if not options:
            raise InvalidInput(f"{kind}: nothing to choose from (all probabilities are 0)")
        self._calls += 1
        check_deadline()
        if self._calls > MAX_CALLS:
            raise TooLarge(f"a path made more than {MAX_CALLS:,} sampler calls: too much work "
                           "for exact enumeration (a smaller k, or --backend numpy)")
        if len(options) == 1:
            value, prob, what = options[0]
            self.weight = prob if self.weight is _ONE else self.weight * prob
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
                raise Frontier(len(options))
            i = 0 if self._forks is None else self._forks.split(len(options))
            self._prefix.append(i)
            self._arity.append(len(options))
        self._depth += 1
        value, prob, what = options[i]
        self.weight = prob if self.weight is _ONE else self.weight * prob   # 1 * prob: no work
        self.branches.append((kind, f"{kind} {value}" if what is None else what, prob))
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
    #: Forget the listed options of the laws drawn from once they hold this many in all.
    OPTIONS_KEPT = 4_000_000

    def draw(self, dist, what: str = "draw"):
        """A token drawn from ``dist``; its options listed once per law object (a ``Dist`` is
        read-only), not on every path or state that draws from it."""
        probs = self._law(dist, what)           # validated once per law, remembered
        hit = self._options.get(id(dist))
        if hit is None or hit[0] is not dist:
            options = [(lab, pr, None) for lab, pr in zip(dist.labels, probs) if pr != 0]
            if self._listed + len(options) > self.OPTIONS_KEPT:
                self._options.clear()
                self._listed = 0
            self._options[id(dist)] = hit = (dist, options)
            self._listed += len(options)
        return self._choose(what, hit[1])

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
            if any(pr._numerator < 0 if type(pr) is Fraction else pr < 0 for pr in probs) \
                    or not _sums_to_one(dist, probs):
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
            if (pr._numerator < 0 if type(pr) is Fraction else isinstance(pr, Fraction) and
                    pr < 0):
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
            last = self._last_coin           # the replay of a step meets one coin twice
            if last[0] is not prob:
                last = self._last_coin = (prob, 1 - prob)
            options.append((False, last[1], f"{what} tails"))
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


def _sums_to_one(dist, probs) -> bool:
    """Whether the exact ``probs`` of ``dist`` sum to 1 (on its integer row where it has
    one, kept with it)."""
    from ..core.dist import Dist, integer_row_of

    row = integer_row_of(dist) if type(dist) is Dist else None
    return sum(row[0]) == row[1] if row is not None else exact_sum(probs) == 1


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



def input_snapshot(dist) -> tuple:
    """What a method must not change in its input: labels and exact values (those user code
    reads too: :func:`~exactspec.core.exact_values.exact_values`)."""
    def values(probs):
        return tuple([(v._numerator, v._denominator) if isinstance(v, Fraction) else repr(v)
                      for v in probs])

    plain = values(getattr(dist, "probs", ()))
    handed = getattr(dist, "_exact", None)
    return (tuple(getattr(dist, "labels", ())), plain,
            plain if handed is None else values(handed))


def check_unchanged(before, p, q) -> None:
    """Refuse a method that changed its input ``p`` or ``q`` (``before``: their
    :func:`input_snapshot` taken before the run)."""
    for name, dist, old in (("p", p, before[0]), ("q", q, before[1])):
        if input_snapshot(dist) != old:
            if getattr(dist, "_exact", None) is not None:
                object.__setattr__(dist, "_exact", None)     # forget the values it changed
            raise InvalidInput(f"the method changed its input {name}: p and q are read-only "
                               "(copy them, e.g. dict(p), before changing anything)")


#: The size estimate expands the tree of paths level by level for at most this many levels;


class unwatched:
    """The context of a run whose method is not watched (``watch=False``): it does nothing."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
