"""Law leaves: a resample that the rule returns as drawn is one leaf, not one path per token.

The exact walk (:func:`~exactspec.engine.exact.enumerate_paths`) branches on every token of
every draw: a one-draft rule that drafts ``x ~ q`` and, on a rejection, resamples
``y ~ residual(p, q)`` has ``V`` paths for the draft and ``V`` more under each rejection,
``V**2`` in all, each forming the residual again.  Most rules written against the sampler
(``s``) hand the resampled token straight back: nothing downstream looks at which token it
is, so its value need not be enumerated.  This route runs such a rule with
:class:`LawSampler`, which answers

- ``s.draw(dist)``, and ``s.pick(dist, u)`` with a *fresh* uniform ``u`` (made by
  ``s.uniform()``, still uniform on all of ``[0, 1)``: no comparison has cut it, none has
  linked it to another uniform, no product has used it; a comparison that cut nothing left
  it independent of everything so far), with a **law token**: an opaque stand-in for "a
  token drawn from this law" (for ``pick``: the law of the inverse CDF at a uniform ``u``,
  counted on the grid under ``grid=``);
- everything else as the walk does (``s.draft`` stays a branch, one path per token).

A run that returns a law token as it is ends in a *law leaf*: it adds ``weight * law`` to the
output law.  The leaf is ``O(1)``: weights are summed per law object (and per set of drafts
and accepted token, for the two acceptance figures), and each law is spread over its tokens
once, at the end.  ``P(Y in X)`` of a law leaf is ``weight * law(X)`` (the law's mass on the
drafted tokens); its explicit acceptance ``weight * law(a)`` for a token ``a`` it accepted with
``s.accept``.

Any other use of a law token (``==``, ``hash``, ``<``, ``bool``, ``str``, ``int``, arithmetic,
indexing with it or into it, reading an attribute, ``isinstance``, passing it into ``s``) raises
:class:`~exactspec.core.signals.CannotProceed` naming the use: the route cannot tell what the
rule would do with the token's value, and the planner runs the plain walk instead.  A fresh
uniform that picked a law token is used up: reading it again (a comparison, a second pick, a
combination made before) raises the same.  The signal is recorded when it is made
(:mod:`exactspec.core.signals`), and every refusal is also counted by the route itself, so
a rule that catches it (``except BaseException``, ``contextlib.suppress``, a C function that
clears the error) still ends in ``CannotProceed``, never in a law computed from a path real
Python would not take.  What Python does not let an object intercept (``type(y)``, ``y is
z``, ``id(y)``) is the one limit: a rule that branches on a token's identity or type is not
a rule this route is for.

With :func:`~exactspec.core.dist.residual` remembered per pair of ``Dist`` objects and the
draft's options built once per law, ``sps`` and a kernel-style rule cost ``2 V`` leaves of
``O(1)`` each at ``V`` tokens.  The size estimate runs the rule with the same sampler
(:func:`~exactspec.engine.exact.estimate_paths`), so it counts leaves, and work over a budget
is refused up front with its estimate as on the walk.

The loop is the engine's one driver (:func:`~exactspec.engine.driver.depth_first`: replay,
signal records, budgets through ``every``); grids (``grid=``) and the hidden-state watch
(``watch=True``: hidden randomness refused, every leaf run twice and compared, ``p`` and ``q``
checked unchanged) are as on the walk.  A float run (``FloatSampler``, ``--arith``) is not
followed: :func:`enumerate_law_leaves` takes no sampler factory, and given ``arith=`` it
declines (``CannotProceed(FLOAT_RUN)``), as it does when the paths themselves are asked for
(``keep_paths``, ``on_path``: a certificate's paths).

>>> from exactspec.core.dist import Dist
>>> from exactspec.methods.sps import sps
>>> p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
>>> result = enumerate_law_leaves(sps, p, q)
>>> result.law == {0: Fraction(1, 2), 1: Fraction(3, 10), 2: Fraction(1, 5)}, result.acceptance
(True, Fraction(3, 5))
>>> result.leaves, result.paths    # drafts 0, 1 accepted; 2 accepted, or a law of 2 tokens
(4, 5)
"""

from __future__ import annotations

import hashlib
import sys
import time
from fractions import Fraction
from dataclasses import dataclass
from typing import Callable

from ..core.budget import check_exact_runs, probe_limit
from ..core.dist import Dist
from ..core.errors import InvalidInput, TooLarge
from ..core.exact_values import floats_converted
from ..core.signals import CannotProceed
from ..core.supervise import can_supervise, supervised
from . import exact_sampler
from .driver import depth_first
from .exact_sums import ExactSums
from .exact import (DEFAULT_MAX_PATHS, MAX_SECONDS, Enumeration, ExactSampler, check_seconds,
                    check_unchanged, estimate_paths, input_snapshot, over_budget, unwatched)
from .uniform import Uniform
from .watch import Fingerprint, watched

_clock = time.perf_counter  # taken before any watch replaces the clock

__all__ = ["enumerate_law_leaves", "LawSampler", "LawToken", "FLOAT_RUN", "Opaque", "OPAQUE",
           "SharedRuns", "LeafTally", "leaf_pass", "law_of", "refuse_use", "refused_quietly"]

#: The reason this route gives for a float run (``--arith``): it follows exact runs only.
FLOAT_RUN = "float run"

#: Laws and option lists remembered per enumeration: at most this many objects, and
#: :data:`MEMO_TOKENS` tokens over all of them (beyond, the memo starts again).
MEMO_LIMIT = 4096
MEMO_TOKENS = 2**22


class SharedRuns:
    """What the runs of one enumeration share: laws checked, option lists built, laws of
    fresh picks (each remembered by the object it came from, held so its identity stays its
    own), and the refusals of law tokens made so far."""

    __slots__ = ("laws", "options", "option_keys", "leaf_laws", "refusals", "tokens", "runs")

    def __init__(self):
        self.laws: dict = {}          # ExactSampler._law's memo, one for every run
        self.options: dict = {}       # (id(dist), what) -> (dist, options, floats)
        self.option_keys: dict = {}   # id(options) -> (options, digest)
        self.leaf_laws: dict = {}     # (kind, id(dist)) -> (dist, LeafLaw or label, floats)
        self.refusals: list = []      # why each law-token use was refused
        self.tokens = 0               # tokens of the laws remembered
        self.runs = 0                 # runs of the method so far

    def trim(self, dist) -> None:
        """Make room for one more law of ``dist``'s size."""
        self.tokens += len(dist.labels)
        if self.tokens > MEMO_TOKENS or max(len(self.options), len(self.leaf_laws),
                                            len(self.laws)) > MEMO_LIMIT:
            for memo in (self.options, self.option_keys, self.leaf_laws, self.laws):
                memo.clear()
            self.tokens = len(dist.labels)


@dataclass
class LawLeafEnumeration(Enumeration):
    """An :class:`~exactspec.engine.exact.Enumeration` computed with law leaves.

    ``paths`` counts the paths of the plain walk the leaves stand for (a law leaf one path per
    token of positive probability of its law, never run); ``leaves`` the runs made.
    """

    leaves: int = 0


class LeafLaw:
    """The law a law token stands for: ``probs`` over ``labels`` (exact, summing to 1)."""

    __slots__ = ("labels", "probs", "index", "_digest")

    def __init__(self, labels: tuple, probs: tuple, index):
        self.labels = labels
        self.probs = probs
        self.index = index
        self._digest = None

    def mass(self, tokens) -> Fraction:
        """The law's mass on the distinct ``tokens`` (tokens it does not have weigh 0)."""
        if len(tokens) == 1:
            try:
                i = self.index.get(tokens[0])
            except TypeError:
                return Fraction(0)
            return Fraction(0) if i is None else self.probs[i]
        total = Fraction(0)
        for t in tokens:
            try:
                i = self.index.get(t)
            except TypeError:          # an unhashable value is no token of the law
                continue
            if i is not None:
                total += self.probs[i]
        return total

    def support(self) -> int:
        """The tokens of positive probability: the paths the walk would run for this law."""
        return sum(1 for v in self.probs if v != 0)

    def digest(self) -> str:
        """A digest of the law's content, for the hidden-state fingerprint (once per law)."""
        if self._digest is None:
            self._digest = _digest((self.labels, self.probs))
        return self._digest


def _digest(value) -> str:
    return hashlib.blake2b(repr(value).encode(), digest_size=16).hexdigest()


def refuse_use(opaque, use: str):
    """Count and raise the refusal of a use of a law token (or of a used-up uniform)."""
    shared = object.__getattribute__(opaque, "_shared")
    what = object.__getattribute__(opaque, "_what")
    if type(opaque) is LawToken:
        what = f"a token drawn as a law leaf ({what})"
    why = f"the rule {use} {what}: {type(opaque).not_followed}"
    shared.refusals.append(why)
    raise CannotProceed(why)


class Opaque:
    """A value user code may hold and hand back, never read: every use raises
    :class:`~exactspec.core.signals.CannotProceed`."""

    __slots__ = ("_shared", "_what")
    not_followed = "law leaves do not follow a value the rule reads"

    def __init__(self, shared: SharedRuns, what: str):
        object.__setattr__(self, "_shared", shared)
        object.__setattr__(self, "_what", what)

    def __getattribute__(self, name):
        refuse_use(self, f"read the attribute {name!r} of")


_USES = {
    "__eq__": "compared (==)", "__ne__": "compared (!=)", "__lt__": "compared (<)",
    "__le__": "compared (<=)", "__gt__": "compared (>)", "__ge__": "compared (>=)",
    "__hash__": "hashed (a dict key, a set, `in`)", "__bool__": "took the truth value of",
    "__str__": "turned into text", "__repr__": "turned into text (repr)",
    "__format__": "formatted", "__bytes__": "turned into bytes", "__int__": "took int() of",
    "__float__": "took float() of", "__complex__": "took complex() of",
    "__index__": "indexed with", "__round__": "rounded", "__trunc__": "truncated",
    "__floor__": "floored", "__ceil__": "took the ceiling of", "__abs__": "took abs() of",
    "__neg__": "negated", "__pos__": "applied unary + to", "__invert__": "inverted",
    "__len__": "took len() of", "__iter__": "iterated over", "__reversed__": "reversed",
    "__contains__": "searched in", "__getitem__": "indexed into", "__setitem__": "assigned into",
    "__delitem__": "deleted from", "__call__": "called", "__enter__": "entered",
    "__exit__": "exited", "__setattr__": "set an attribute of", "__delattr__": "deleted an attribute of",
    "__dir__": "listed the attributes of", "__sizeof__": "took the size of",
    "__reduce__": "pickled or copied", "__reduce_ex__": "pickled or copied",
    "__copy__": "copied", "__deepcopy__": "copied", "__getstate__": "pickled",
    "__fspath__": "used as a path", "__array__": "made an array of",
    "__await__": "awaited", "__aiter__": "iterated over", "__anext__": "iterated over",
}
for _op in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "divmod", "pow",
            "lshift", "rshift", "and", "or", "xor"):
    for _form in ("__{}__", "__r{}__", "__i{}__"):
        if _form == "__i{}__" and _op == "divmod":
            continue
        _USES[_form.format(_op)] = f"did arithmetic ({_op}) with"


def _refusing(name: str, use: str):
    def method(self, *args, **kwargs):
        refuse_use(self, use)
    method.__name__ = name
    return method


for _name, _use in _USES.items():
    setattr(Opaque, _name, _refusing(_name, _use))
del _name, _use, _op, _form


class LawToken(Opaque):
    """A token drawn from a law, not enumerated: the rule may return it (directly or stored
    and handed back), nothing else (see the module's note)."""

    __slots__ = ("_law", "_run")

    def __init__(self, shared: SharedRuns, law: LeafLaw, what: str, run: int):
        object.__setattr__(self, "_shared", shared)
        object.__setattr__(self, "_what", what)
        object.__setattr__(self, "_law", law)
        object.__setattr__(self, "_run", run)


OPAQUE = frozenset({LawToken, Opaque})


def law_of(token: LawToken) -> LeafLaw:
    """The law a law token stands for."""
    return object.__getattribute__(token, "_law")


def _exact_total(values) -> Fraction:
    """The exact sum of ``Fraction``\\ s, added as integers per denominator (a row over one
    common denominator is one integer sum)."""
    parts: dict = {}
    for v in values:
        parts[v.denominator] = parts.get(v.denominator, 0) + v.numerator
    return sum((Fraction(n, d) for d, n in parts.items()), Fraction(0))


class LawSampler(ExactSampler):
    """The exact sampler with law leaves: ``draw`` and a fresh uniform's ``pick`` hand back
    a :class:`LawToken`; the rest is :class:`~exactspec.engine.exact.ExactSampler`'s.

    Parameters
    ----------
    grid : int, optional
        Explicit uniforms on ``{0, 1/N, ..., (N-1)/N}`` (a fresh pick's law is then the
        grid points' share of each token's interval).
    shared : SharedRuns, optional
        What the runs of one enumeration share (laws and option lists built once).
    """

    def __init__(self, grid: int | None = None, shared: SharedRuns | None = None):
        self.shared = shared if shared is not None else SharedRuns()
        super().__init__(grid=grid)
        self._laws = self.shared.laws

    def _reset(self):
        super()._reset()
        self.shared.runs += 1
        self._run = self.shared.runs     # the run a law token was drawn on

    def _guard(self, what: str, *args) -> None:
        """Refuse a law token (or a used-up uniform) handed to ``s.<what>``.  (One inside a
        list or a mapping is refused by the first operation the sampler does on it.)"""
        for v in args:
            if type(v) in OPAQUE:
                refuse_use(v, f"passed to s.{what}")

    # -- branches, with their option lists built once per law ---------------------------
    def _branch(self, dist, what: str):
        """``dist``'s token as a branch (the walk's ``draw``), its options built once."""
        key = (id(dist), what)
        hit = self.shared.options.get(key)
        if hit is None or hit[0] is not dist:
            floats = self.floats
            probs = self._law(dist, what)
            options = [(lab, pr, f"{what} {lab}") for lab, pr in zip(dist.labels, probs)
                       if pr != 0]
            self.shared.trim(dist)
            hit = (dist, options, self.floats - floats)
            self.shared.options[key] = hit
            self.shared.option_keys[id(options)] = (options, None)
        else:
            self.floats += hit[2]
        return self._choose(what, hit[1])

    def _choice_key(self, options: list):
        if len(options) < 16:                        # short: its probabilities themselves
            return tuple(option[1] for option in options)
        named = self.shared.option_keys.get(id(options))
        if named is None or named[0] is not options:
            return super()._choice_key(options)
        if named[1] is None:
            named = (options, _digest(tuple(option[1] for option in options)))
            self.shared.option_keys[id(options)] = named
        return named[1]

    def draft(self, q, what: str = "draft"):
        """One draft token from ``q``: a branch, as on the walk."""
        if type(q) in OPAQUE or type(what) in OPAQUE:
            self._guard("draft", q, what)
        x = self._branch(q, what) if isinstance(q, Dist) else ExactSampler.draw(self, q, what)
        self.drafted.append(x)
        return x

    def drafts(self, q, k: int, replace: bool = True) -> tuple:
        """``k`` drafts from ``q`` (branches), as on the walk."""
        self._guard("drafts", q, k, replace)
        return super().drafts(q, k, replace)

    # -- law tokens -------------------------------------------------------------------------
    def draw(self, dist, what: str = "draw"):
        """A token drawn from ``dist``: a :class:`LawToken` for a ``Dist`` of exact rationals
        with two or more tokens of positive probability (its one token when it has one); a
        branch for anything else."""
        if type(dist) in OPAQUE or type(what) in OPAQUE:
            self._guard("draw", dist, what)
        if not isinstance(dist, Dist):
            return ExactSampler.draw(self, dist, what)
        probs = self._law(dist, what)               # checked, floats counted, remembered
        key = ("draw", id(dist))
        hit = self.shared.leaf_laws.get(key)
        if hit is None or hit[0] is not dist:
            leaf = None
            if all(type(pr) is Fraction for pr in probs):
                support = [lab for lab, pr in zip(dist.labels, probs) if pr != 0]
                leaf = support[0] if len(support) == 1 else \
                    LeafLaw(dist.labels, tuple(probs), dist._index)
            self.shared.trim(dist)
            hit = (dist, leaf, 0)
            self.shared.leaf_laws[key] = hit
        return self._leaf(hit[1], dist, what)

    def _leaf(self, leaf, dist, what):
        if leaf is None:
            return self._branch(dist, what)
        if type(leaf) is not LeafLaw:
            return self._choose(what, [(leaf, 1, what)])     # its one token
        self._calls += 1                # no branch: the call counted, as on the walk (a
        if self._calls > exact_sampler.MAX_CALLS:             # rule that never stops drawing)
            self._choose(what, [(None, 1, what)])            # (the walk's refusal)
        return LawToken(self.shared, leaf, what, self._run)

    def pick(self, dist, u, what: str = "pick"):
        """The inverse CDF of ``dist`` at ``u``: a :class:`LawToken` when ``u`` is a fresh
        uniform and ``dist`` a ``Dist`` of exact rationals whose cumulative sums reach 1 (then
        ``u`` is used up); otherwise as on the walk."""
        if type(dist) in OPAQUE or type(u) in OPAQUE or type(what) in OPAQUE:
            self._guard("pick", dist, u, what)
        if type(u) is Uniform and type(u.sampler) is Opaque:     # used up by a law pick
            refuse_use(u.sampler, "looked up again")
        if (type(u) is Uniform and u.sampler is self and not u.linked and not u.spent
                and u.lo == 0 and u.hi == 1 and isinstance(dist, Dist)):
            key = ("pick", id(dist))
            hit = self.shared.leaf_laws.get(key)
            if hit is None or hit[0] is not dist:
                floats = self.floats
                leaf = self._pick_law(dist, u, what)
                self.shared.trim(dist)
                hit = (dist, leaf, self.floats - floats)
                self.shared.leaf_laws[key] = hit
            else:
                self.floats += hit[2]
            if hit[1] is not None:
                self._use_up(u)
                return self._leaf(hit[1], dist, what)
        return super().pick(dist, u, what)

    def _pick_law(self, dist, u: Uniform, what: str):
        """The law of ``pick(dist, u)`` for a fresh ``u`` (token ``t`` where
        ``cum_{t-1} <= u < cum_t``, its share of ``[0, 1)`` or of the grid), its one token,
        or ``None`` (weights that are not exact rationals, or sum under 1: the walk's pick
        decides, and refuses the latter)."""
        weights = self._weights(dist, what)
        if not all(type(w) is Fraction for w in weights):
            return None
        if self.grid is None and _exact_total(weights) == 1:     # the law is dist itself
            support = [lab for lab, w in zip(dist.labels, weights) if w != 0]
            return support[0] if len(support) == 1 else \
                LeafLaw(dist.labels, tuple(weights), dist._index)
        probs = []
        support = []
        cum = Fraction(0)
        for lab, w in zip(dist.labels, weights):
            a, b = cum, cum + w
            cum = b
            share = 0
            if w != 0:
                share = self._interval_weight(u, max(a, u.lo), min(b, u.hi))
                if share != 0:
                    support.append(lab)
            probs.append(share)
        if cum < 1:
            return None
        if len(support) == 1:
            return support[0]
        return LeafLaw(dist.labels, tuple(probs), dist._index)

    def _use_up(self, u: Uniform) -> None:
        """``u`` picked a law token: any later reading of it refuses."""
        spent = Opaque(self.shared, f"a uniform (u{u.ident}) that picked a token as a law "
                                     "leaf")
        u.sampler = spent
        u.lo = spent
        u.hi = spent

    # -- the rest of the interface, guarded ---------------------------------------------------
    def coin(self, prob, what: str = "coin") -> bool:
        if type(prob) in OPAQUE or type(what) in OPAQUE:
            self._guard("coin", prob, what)
        return super().coin(prob, what)

    def accept(self, x):
        if type(x) in OPAQUE:
            self._guard("accept", x)
        return super().accept(x)

    def race(self, weights, noise, *, first: bool = True, what: str = "race"):
        self._guard("race", weights, noise, first, what)
        return super().race(weights, noise, first=first, what=what)

    def exponentials(self, n: int):
        self._guard("exponentials", n)
        return super().exponentials(n)

    def gumbels(self, n: int):
        self._guard("gumbels", n)
        return super().gumbels(n)

    def exp(self, x):
        self._guard("exp", x)
        return super().exp(x)

    def log(self, x):
        self._guard("log", x)
        return super().log(x)

    def softmax(self, logits) -> list:
        self._guard("softmax", logits)
        return super().softmax(logits)


def enumerate_law_leaves(method: Callable, p, q, k: int = 1, *, grid: int | None = None,
                         max_paths: int | None = DEFAULT_MAX_PATHS,
                         progress: bool | None = None, watch: bool = False,
                         max_seconds: float | None = None, arith: str | None = None,
                         keep_paths: bool = False,
                         on_path: Callable | None = None) -> Enumeration:
    """Run ``method(s, p, q, k)`` on every path, a returned law token one leaf, and return
    the exact :class:`LawLeafEnumeration` (``leaves`` counts the leaves run, ``paths`` the
    plain walk's paths they stand for).

    Parameters
    ----------
    method : callable
        ``method(s, p, q, k) -> token``, written against the sampling interface.
    p, q : Dist
        The target and the draft law.
    k : int
        Handed to the method.
    grid : int, optional
        Explicit uniforms on a grid of ``N`` points, as on the walk.
    max_paths : int or None
        Refuse (:class:`~exactspec.core.errors.TooLarge`) when the estimated number of
        leaves is larger; ``None`` insists.
    progress : bool, optional
        A progress line on stderr (default: when the estimate is large and stderr is a
        terminal).
    watch : bool
        The method is user code: hidden randomness refused while it runs, every leaf run a
        second time and compared, ``p`` and ``q`` checked unchanged.
    max_seconds : float, optional
        Refuse when the estimated seconds are more (by default :data:`MAX_SECONDS` under the
        default ``max_paths``); the run stops at twice this.

    arith : str, optional
        A float run (``--arith``) is not followed: given, the route declines
        (:data:`FLOAT_RUN`).
    keep_paths, on_path
        The walk's path list and per-path callback (a certificate's paths): a law leaf is
        not one path per token, so either asked for declines.

    Raises
    ------
    CannotProceed
        The rule used a law token (or a uniform that picked one) for anything but handing it
        back, or a float run or the paths themselves were asked for: the plain walk
        (:func:`~exactspec.engine.exact.enumerate_paths`) is the route.
    TooLarge
        Over a budget, up front by the estimate or on the way.
    """
    if arith is not None:
        raise CannotProceed(FLOAT_RUN)
    if keep_paths or on_path is not None:
        raise CannotProceed("the paths themselves were asked for (a law leaf stands for one "
                            "path per token)")
    shared = SharedRuns()
    factory = lambda: LawSampler(grid=grid, shared=shared)  # noqa: E731
    estimate = None
    if max_seconds is None and max_paths == DEFAULT_MAX_PATHS:
        max_seconds = MAX_SECONDS
    if max_paths is not None or progress:
        limit = probe_limit()
        if limit is not None and can_supervise() and not _cheap(limit, len(p)):
            estimate, per_path = _estimated_within(limit, method, p, q, k, factory, shared,
                                                   watch, max_paths, max_seconds)
        else:
            estimate, per_path = _estimated(method, p, q, k, factory, shared, watch,
                                            max_paths, max_seconds)
        check_seconds(estimate, per_path, max_seconds, max_paths,
                      "--backend numpy, a smaller instance")
    if progress is None:
        progress = bool(estimate and estimate > 200_000 and sys.stderr.isatty())
    before = input_snapshot(p), input_snapshot(q)
    with watched(method) if watch else unwatched():
        result, digest = leaf_pass(method, p, q, k, factory, shared, progress, estimate, watch,
                                   max_paths, max_seconds)
        if watch:
            _, again = leaf_pass(method, p, q, k, factory, shared, False, None, True)
            if again != digest:
                raise InvalidInput(
                    "the method gave different results when the same paths were run twice: "
                    "it reads hidden randomness or state (a generator made at import, a "
                    "counter, the clock); make every random choice through the sampler s")
    if watch:
        check_unchanged(before, p, q)
    return result


def _estimated(method, p, q, k, factory, shared, watch, max_paths, max_seconds) -> tuple:
    """``(estimate, seconds per leaf)`` by the path estimate with law leaves; a refusal by
    the count (:class:`~exactspec.core.errors.TooLarge`) or a caught refusal of a law token
    (:class:`~exactspec.core.signals.CannotProceed`) raised."""
    for warm in (False, True):
        timing: list = []
        estimate = estimate_paths(method, p, q, k, sampler_factory=factory, watch=watch,
                                  timing=timing, max_paths=max_paths, max_seconds=max_seconds)
        refused_quietly(shared)
        if max_paths is not None and estimate > max_paths:
            raise TooLarge(
                f"about {estimate:,} paths (a law leaf each) to enumerate, over the budget "
                f"of {max_paths:,}: use --backend numpy, or --max-paths N to insist",
                estimate=estimate, budget=max_paths)
        per_path = timing[0] * (2 if watch else 1)
        if warm or max_seconds is None or estimate * per_path <= max_seconds:
            break
        # over by its seconds: the first probes paid for one-time work (the residual,
        # a law's options, a fresh pick's law); estimate again with them remembered
    return estimate, per_path


def _cheap(limit, entries: int) -> bool:
    """Whether the limit's probes fit its seconds even if every run read every entry
    (:func:`~exactspec.core.budget.check_exact_runs`)."""
    try:
        check_exact_runs(entries, *limit)
    except TooLarge:
        return False
    return True


def _estimated_within(limit, method, p, q, k, factory, shared, watch, max_paths,
                      max_seconds) -> tuple:
    """:func:`_estimated` in a supervised child under a caller's limit on the estimate's
    probes (:func:`~exactspec.core.budget.probes_limited`): probes running past twice its
    seconds are stopped and the route declines over its budget, so the path route refuses
    up front with its estimate.  A rule failing in the child is estimated again here, where
    its error keeps its traceback (the user's line); its probes are seeded."""
    runs, seconds, what, _instead = limit

    def work():
        try:
            return ("estimate",) + _estimated(method, p, q, k, factory, shared, watch,
                                              max_paths, max_seconds)
        except TooLarge as refusal:              # sent back as its parts (exact types)
            return ("too-large", str(refusal), refusal.estimate, refusal.budget)
        except CannotProceed as why:
            return ("declined", str(why))
        except Exception:                        # noqa: BLE001 - made again here, below
            return ("failed",)

    outcome = supervised(work, seconds=2 * seconds, what=f"{what} (with law leaves)",
                         advice="--max-paths N to insist")
    if outcome[0] == "too-large":
        raise TooLarge(outcome[1], estimate=outcome[2], budget=outcome[3])
    if outcome[0] == "declined":
        raise CannotProceed(outcome[1])
    if outcome[0] == "failed":   # the rule's own error, raised here with its traceback (the
        return _estimated(method, p, q, k, factory, shared, watch, max_paths, max_seconds)
    return outcome[1], outcome[2]


def refused_quietly(shared: SharedRuns) -> None:
    """A law token's refusal that did not end the run (caught somewhere): decline."""
    if shared.refusals:
        raise CannotProceed(f"{shared.refusals[0]} (the refusal was caught, and the run went "
                            "on)")


class LeafTally:
    """What :func:`leaf_pass` sums, handed to a sampler that accounts its own leaves."""

    __slots__ = ("tokens", "sums", "used", "laws", "law_leaves", "law_weights", "in_drafts",
                 "accepted")

    def __init__(self, *parts):
        for name, part in zip(self.__slots__, parts):
            setattr(self, name, part)


def leaf_pass(method, p, q, k, factory, shared, progress, estimate, fingerprint,
              max_paths=None, max_seconds=None):
    """One pass over the leaves: ``(Enumeration, digest or None)``."""
    start = _clock()
    s = factory()
    labels = p.labels
    law = {lab: 0 for lab in labels}
    tokens = ExactSums()         # a returned token's weight, by token
    sums = ExactSums()           # "total", "acceptance", "explicit" of returned tokens
    used = {"drafts": False, "accept": False}
    laws: dict = {}          # id(LeafLaw) -> LeafLaw
    law_leaves: dict = {}    # id(LeafLaw) -> the leaves that returned it
    law_weights = ExactSums()    # id(LeafLaw) -> weight
    in_drafts = ExactSums()      # (id(LeafLaw), distinct drafts) -> weight
    accepted = ExactSums()       # (id(LeafLaw), accepted token) -> weight
    extra = [0]              # paths an axis leaf stands for, beyond one each
    tally = LeafTally(tokens, sums, used, laws, law_leaves, law_weights, in_drafts, accepted)
    digest = Fingerprint() if fingerprint else None
    s.record_choices = bool(fingerprint)
    last_report = [start]
    converted = floats_converted()
    refused = len(shared.refusals)

    def leaf(s, y):
        if len(shared.refusals) != refused:
            refused_quietly(shared)
        w = s.weight
        if type(w) is not Fraction and getattr(s, "axis", None) is not None:
            # a weight per draft token (engine/draft_axis.py): the sampler accounts the leaf
            extra[0] += s.axis_leaf(y, w, tally, labels)
            if digest is not None:
                digest.add(s.choices, s.axis_shown(y, w))
            return
        if type(y) is LawToken:
            if object.__getattribute__(y, "_run") != s._run:
                raise CannotProceed("the rule returned a token drawn as a law leaf on an "
                                    "earlier run (state kept from run to run)")
            leaf_law = law_of(y)
            key = id(leaf_law)
            if key not in laws:
                laws[key] = leaf_law
            law_leaves[key] = law_leaves.get(key, 0) + 1
            law_weights.add(key, w)
            if s.drafted:
                used["drafts"] = True
                drafted = s.drafted
                in_drafts.add((key, (drafted[0],) if len(drafted) == 1
                               else tuple(dict.fromkeys(drafted))), w)
            if s.did_accept:
                used["accept"] = True
                try:
                    accepted.add((key, (s.accepted_token,)), w)
                except TypeError:           # an unhashable value is no token: it weighs 0
                    pass
            shown = ("law", leaf_law.digest())
        else:
            if y not in law:
                raise InvalidInput(f"the method returned {y!r}, which is not a token of p "
                                   f"(labels {list(labels)})")
            tokens.add(y, w)
            if s.drafted:
                used["drafts"] = True
                if y in s.drafted:
                    sums.add("acceptance", w)
            if s.did_accept:
                used["accept"] = True
                if s.accepted_token == y:
                    sums.add("explicit", w)
            shown = y
        if digest is not None:
            digest.add(s.choices, shown, s.drafted, s.did_accept, s.accepted_token, w)

    def every(count):
        if max_paths is not None and count % 1024 == 0:
            refusal = over_budget(count, estimate, max_paths, _clock() - start, max_seconds)
            if refusal is not None:
                raise refusal
        if progress and count % 20000 == 0:
            now = _clock()
            if now - last_report[0] > 0.5:
                last_report[0] = now
                shown = f"{count:,}" + (f" / ~{estimate:,}" if estimate else "")
                print(f"\r  enumerating law leaves: {shown}", end="", file=sys.stderr,
                      flush=True)

    count = depth_first(s, lambda s: method(s, p, q, k), leaf, every=every)
    refused_quietly(shared)
    total = ExactSums.grand_total(tokens, law_weights)    # every leaf's weight, once
    for key, weight in law_weights.totals().items():
        leaf_law = laws[key]
        for lab, pr in zip(leaf_law.labels, leaf_law.probs):
            if pr == 0:
                continue
            if lab not in law:
                raise InvalidInput(f"the method returned {lab!r}, which is not a token of p "
                                   f"(labels {list(labels)})")
            tokens.add_product(lab, weight, pr)
    law.update(tokens.totals())
    for figure, by_law in (("acceptance", in_drafts), ("explicit", accepted)):
        for ((key, drafted), denominator), numerator in by_law.parts.items():
            sums.add_product(figure, Fraction(numerator, denominator),
                             laws[key].mass(drafted))
        for (key, drafted), weight in by_law.other.items():
            sums.add_product(figure, weight, laws[key].mass(drafted))
    totals = sums.totals()
    acceptance, explicit = totals.get("acceptance", 0), totals.get("explicit", 0)
    if progress:
        print(f"\r  enumerated {count:,} law leaves" + " " * 20, file=sys.stderr)
    if not used["drafts"]:
        acceptance = explicit
    stood_for = count + extra[0] + sum(n * (laws[key].support() - 1) for key, n in law_leaves.items())
    result = LawLeafEnumeration(labels=labels, law=law, acceptance=acceptance,
                                explicit_acceptance=explicit, paths=stood_for,
                                total=total,
                                used_drafts=used["drafts"], used_accept=used["accept"],
                                path_list=None, seconds=_clock() - start,
                                floats=s.floats + floats_converted() - converted,
                                leaves=count)
    return result, (digest.digest() if digest is not None else None)
