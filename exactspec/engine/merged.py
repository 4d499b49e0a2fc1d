"""The merged-state interpreter: a forward dynamic program over a method's states.

The plain exact interpreter (:mod:`.exact`) lists every path, so ``k`` i.i.d. drafts over
``|V|`` tokens cost at least ``|V|^k`` paths.  Many verifiers forget most of their history:
after a rejection RRS keeps only its residual, which does not depend on *which* token was
rejected.  Written as a sequence of steps over a hashable state, such a method runs here one
step at a time; paths that reach the same state are merged (their weights added), so the work
is the number of distinct states times the branching of one step.

A :class:`Stepped` method has ``start(p, q, k) -> state`` and
``step(s, p, q, k, state) -> state or Done(y)``.  A step makes its random choices through the
usual sampling interface ``s`` (``s.draft``, ``s.coin``, ``s.draw``, ``s.accept``; explicit
uniforms may be used within one step) and must depend on nothing but its arguments: that is
what makes merging sound (the future of a path depends only on its state).

Outcomes are counted, not listed.  For ``P(Y in X)`` each merged state carries, besides its
probability, the vector ``P(state, t was drafted)`` over the tokens ``t``: a step that drafts
``t`` sets that entry to the state's whole probability, every other entry is multiplied by the
step's probability, and merging adds vectors.  A step ending in ``Done(y)`` adds
``P(state, y drafted)`` to the acceptance.  An explicit accept (``s.accept``) is carried in the
state key until the output, so ``explicit_acceptance`` is exact too.

**Linear in the vocabulary per state.**  A transition never copies a vector: the one it
reaches is held as ``sum_j w_j D_j + fixes`` (:class:`_Drafted`), where ``D_j`` is the vector
of a state it came from, ``w_j`` the summed probability of the steps from there, and
``fixes`` a sparse correction at the tokens those steps drafted (``weight - w D_j[t]``, which
makes the entry the whole weight).  A vector is built (a sparse mapping) only when an entry
of it is read: once per state, in ``O(V)``.  One sampler runs every state, so a law's
options are listed once, not once per transition (:meth:`ExactSampler.draw`).  With a state
key hashed in ``O(1)`` (a :class:`~exactspec.core.dist.Dist` caches its hash) and a step
that does ``O(1)`` work per choice, a run costs ``O(V)`` per state plus ``O(1)`` per
transition.

The plain method stays the reference semantics; tests check that both interpreters agree.

>>> from exactspec.core.dist import Dist
>>> from exactspec.methods.rrs import RRS_STEPS
>>> p, q = Dist.parse("1/2,3/10,1/5", labels="abc"), Dist.parse("1/5,1/5,3/5", labels="abc")
>>> result = enumerate_merged(RRS_STEPS, p, q, 2)
>>> result.law == dict(p), result.acceptance, result.states, result.paths
(True, Fraction(19, 25), 3, 7)
"""

from __future__ import annotations

import functools
import sys
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

from ..core.errors import InvalidInput, TooLarge
from ..core.integer_rows import exact_sum
from .driver import depth_first
from .exact import Enumeration, ExactSampler
from .step_budget import StepBudget

__all__ = ["Stepped", "Done", "MergedEnumeration", "enumerate_merged", "DEFAULT_MAX_STATES",
           "by_identity", "stepped_form"]

#: Refuse a run whose frontier grows beyond this many distinct states.
DEFAULT_MAX_STATES = 10**6
#: The terms of the acceptances kept before they are summed into one (memory stays bounded).
TERMS_KEPT = 1 << 16
#: A run that takes longer than this many seconds shows a progress line (on a terminal).
PROGRESS_AFTER = 2.0


def by_identity(function: Callable, kept: int = 1024) -> Callable:
    """``function`` remembered by the identity of its arguments: for read-only arguments (a
    :class:`~exactspec.core.dist.Dist`, a number) a step computes its tables once per state
    instead of once per transition.  The arguments are held while remembered, so an
    identity is never taken for another's; at most ``kept`` calls are remembered.

    >>> calls = []
    >>> double = by_identity(lambda row: calls.append(1) or [2 * v for v in row])
    >>> row = (1, 2)
    >>> double(row) is double(row), len(calls)
    (True, 1)
    """
    memo: dict = {}

    @functools.wraps(function)
    def remembered(*args):
        key = tuple(map(id, args))
        hit = memo.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], args)):
            return hit[1]
        value = function(*args)
        if len(memo) >= kept:
            memo.clear()
        memo[key] = (args, value)
        return value

    return remembered


@dataclass(frozen=True)
class Done:
    """What a step returns to end the run with output ``output``."""

    output: Any


@dataclass(frozen=True)
class Stepped:
    """A method as a sequence of steps over a hashable state.

    Attributes
    ----------
    start : callable
        ``start(p, q, k) -> state``: the state before the first step.
    step : callable
        ``step(s, p, q, k, state) -> state`` or :class:`Done`: one step, its random choices
        made through ``s``.  It may read only its arguments.
    name : str
        For messages.
    plain_paths : int, optional
        Where a caller chooses between the two interpreters
        (:func:`exactspec.bounds.compare.exact_verification`): the plain enumeration runs up to
        this many estimated paths, the merged states above (``None``: the caller's default).
    paths_budget : bool
        The number of merged states is not bounded in advance (as RRS's ``O(k |V|)`` is):
        such a caller refuses, as for the plain enumeration, when the estimated number of
        paths is over its budget of paths, so that only the work is smaller, never the reach.
    least_steps : callable, optional
        ``least_steps(p, q, k) -> int``: a number of steps the run takes at least (KEY: one
        per token of ``q``'s support), so that a seconds budget can project the steps still
        to come (:class:`~exactspec.engine.step_budget.StepBudget`).
    condition : callable, optional
        ``condition(p, q, k) -> None or str``: ``None`` where this form gives the method's
        law, ``P(Y in X)`` and explicit acceptance, else the reason it does not (a form that
        drafts fewer tokens than the method, proved equal only where its condition holds).
    shortcut : Stepped, optional
        A form of the same method with fewer states, run in this one's place where its
        ``condition`` holds (:func:`stepped_form`; KEY by its lowest key slot).
    """

    start: Callable
    step: Callable
    name: str = ""
    plain_paths: int | None = None
    paths_budget: bool = False
    least_steps: Callable | None = None
    condition: Callable | None = None
    shortcut: "Stepped | None" = None


def stepped_form(stepped: Stepped, p, q, k: int) -> Stepped:
    """The form to run for ``(p, q, k)``: the shortcut where its condition holds, else
    ``stepped`` itself."""
    short = stepped.shortcut
    if short is None or short.condition is not None and short.condition(p, q, k) is not None:
        return stepped
    return short


@dataclass
class MergedEnumeration(Enumeration):
    """An :class:`~exactspec.engine.exact.Enumeration` computed by merging states.

    ``paths`` counts the step-by-step histories the merged states stand for (never listed);
    ``states`` the distinct states met, ``transitions`` the one-step paths run, ``steps`` the
    number of generations.
    """

    states: int = 0
    transitions: int = 0
    steps: int = 0
    form: str = ""


class _Mass:
    """A merged state: its probability, ``P(state, t drafted)`` and its number of paths.

    While its generation is being reached it holds ``sources`` (``id(mass) -> [w, mass]``:
    the summed probability ``w`` of the steps from each state of the previous generation)
    and ``fixes`` (the drafted tokens' corrections); :meth:`settle` then forms ``weight =
    sum w P(source)`` and the vector, once per pair of states instead of once per step.
    """

    __slots__ = ("weight", "drafted", "count", "sources", "fixes")

    def __init__(self, weight, drafted, count):
        self.weight = weight
        self.drafted = drafted
        self.count = count
        self.sources: dict | None = None
        self.fixes: dict | None = None

    def settle(self) -> None:
        """Form the probability and the vector from the sources and fixes."""
        weight = 0
        drafted = None
        for scale, source in self.sources.values():
            weight = weight + scale * source.weight
            if source.drafted is not None:
                if drafted is None:
                    drafted = _Drafted()
                drafted.add(scale, source.drafted)
        if self.fixes:
            if drafted is None:
                drafted = _Drafted()
            drafted.fixes = self.fixes
        self.weight, self.drafted = weight, drafted
        self.sources = self.fixes = None


class _Drafted:
    """A vector ``P(state, t drafted)`` over token positions, built when first read.

    Until then it is ``sum_j scale_j * source_j + fixes``: ``terms`` maps ``id(source)`` to
    ``[scale, source]`` (sources are vectors of the previous generation, or ``None`` for the
    zero vector, never stored), ``fixes`` a sparse mapping position -> value.  Built, it is
    the sparse mapping ``values`` (positions with entry 0 may be absent).
    """

    __slots__ = ("terms", "fixes", "values")

    def __init__(self):
        self.terms: dict = {}
        self.fixes: dict = {}
        self.values = None

    def add(self, scale, source) -> None:
        """Add ``scale * source`` (``source`` a built or pending vector of the previous
        generation, or ``None``)."""
        if source is None:
            return
        if source.values is None and not source.fixes and len(source.terms) == 1:
            (inner_scale, inner), = source.terms.values()   # a pure rescaling: look through
            scale, source = scale * inner_scale, inner
        term = self.terms.get(id(source))
        if term is None:
            self.terms[id(source)] = [scale, source]
        else:
            term[0] = term[0] + scale

    def built(self) -> dict:
        """The entries as a mapping position -> value (built once, iteratively)."""
        if self.values is not None:
            return self.values
        pending = [self]
        while pending:                         # build the sources first, deepest last
            top = pending[-1]
            waiting = [src for _, src in top.terms.values() if src.values is None]
            if waiting:
                pending.extend(waiting)
                continue
            pending.pop()
            if top.values is not None:
                continue
            values: dict = {}
            for scale, src in top.terms.values():
                get = values.get
                for i, v in src.values.items():
                    old = get(i)
                    values[i] = scale * v if old is None else old + scale * v
            for i, v in top.fixes.items():
                old = values.get(i)
                values[i] = v if old is None else old + v
            top.values = values
            top.terms = top.fixes = None
        return self.values

    def at(self, position: int):
        """The entry at ``position``."""
        return self.built().get(position, 0)


def _entry(drafted, position: int):
    """``drafted[position]`` of a vector or ``None`` (the zero vector)."""
    return 0 if drafted is None else drafted.at(position)


def _keep_term(terms: list, value) -> None:
    """Add ``value`` to the terms of a sum, summed into one (over integers, ``exact_sum``)
    each time :data:`TERMS_KEPT` of them are kept."""
    terms.append(value)
    if len(terms) >= TERMS_KEPT:
        terms[:] = [exact_sum(terms, 0)]


def enumerate_merged(stepped: Stepped, p, q, k: int = 1, *, grid: int | None = None,
                     max_states: int | None = DEFAULT_MAX_STATES,
                     max_steps: int = 100_000,
                     progress: bool | None = None,
                     max_seconds: float | None = None) -> MergedEnumeration:
    """Run a :class:`Stepped` method exactly, merging equal states; the exact law,
    ``P(Y in X)`` and the explicit acceptance.

    Parameters
    ----------
    max_states : int or None
        Refuse (:class:`~exactspec.core.errors.TooLarge`) when one generation holds more distinct
        states; ``None`` insists.
    max_steps : int
        Refuse a method that has not finished after this many steps.
    progress : bool, optional
        Print a progress line on stderr (the step, the states in it, the paths finished);
        by default once the run has taken :data:`PROGRESS_AFTER` seconds, when stderr is a
        terminal.
    max_seconds : float, optional
        Refuse (:class:`~exactspec.core.errors.TooLarge`) a step whose states, projected at
        the rate of its first ones, take the run past this many seconds of exact work
        (:class:`~exactspec.engine.step_budget.StepBudget`); ``None``: no seconds budget.
    """
    start_time = time.perf_counter()
    if stepped.condition is not None:
        why = stepped.condition(p, q, k)
        if why is not None:
            raise InvalidInput(f"{stepped.name} does not apply here: {why}")
    budget = None
    if max_seconds is not None:
        least = stepped.least_steps(p, q, k) if stepped.least_steps is not None else 0
        budget = StepBudget(max_seconds, stepped.name or "the method", least_steps=least)
    if progress is None:
        progress = sys.stderr.isatty()
        quiet_until = start_time + PROGRESS_AFTER
    else:
        quiet_until = start_time
    shown = False
    labels = tuple(p.labels)
    index = {lab: i for i, lab in enumerate(labels)}
    law = {lab: 0 for lab in labels}
    in_drafts: list = []                # the terms of P(Y in X) and of the explicit acceptance,
    explicit_terms: list = []           # summed once at the end (exact_sum: over integers)
    paths = states = transitions = 0
    used_drafts = used_accept = False
    no_accept = (False, None)
    frontier: dict = {(stepped.start(p, q, k), no_accept): _Mass(Fraction(1), None, 1)}
    sampler = ExactSampler(grid=grid)           # a law's options listed once for every state
    generation = 0
    try:
        while frontier:
            generation += 1
            if generation > max_steps:
                raise TooLarge(f"{stepped.name or 'the method'} has not finished after "
                               f"{max_steps} steps", estimate=None, budget=max_steps)
            states += len(frontier)
            if budget is not None:
                budget.begin(generation, len(frontier))
            following: dict = {}
            aliases: dict = {}
            for (state, accepted), mass in frontier.items():

                def leaf(s, result, state=state, accepted=accepted, mass=mass):
                    nonlocal transitions, used_drafts, used_accept, \
                        paths, quiet_until, shown
                    transitions += 1
                    w = s.weight
                    source = mass.drafted
                    fresh = None
                    if s.drafted:
                        used_drafts = True
                        fresh = {index[x] for x in s.drafted}
                    acc = (True, s.accepted_token) if s.did_accept else accepted
                    used_accept = used_accept or acc[0]
                    if isinstance(result, Done):
                        y = result.output
                        if y not in law:
                            raise InvalidInput(f"the method returned {y!r}, which is not a "
                                               f"token of p (labels {list(labels)})")
                        weight = mass.weight * w
                        law[y] = law[y] + weight
                        at = index[y]
                        if fresh is not None and at in fresh:
                            _keep_term(in_drafts, weight)
                        elif source is not None:
                            d = source.at(at)
                            if d:
                                _keep_term(in_drafts, d * w)
                        if acc[0] and acc[1] == y:
                            _keep_term(explicit_terms, weight)
                        paths += mass.count
                    else:
                        alias = (id(result), acc)      # the same state object: no compare
                        hit = aliases.get(alias)
                        if hit is not None and hit[0] is result:
                            seen = hit[1]
                        else:
                            key = (result, acc)
                            seen = following.get(key)
                            if seen is None:
                                following[key] = seen = _Mass(None, None, 0)
                                seen.sources = {}
                            aliases[alias] = (result, seen)
                        seen.count += mass.count
                        term = seen.sources.get(id(mass))
                        if term is None:
                            seen.sources[id(mass)] = [w, mass]
                        else:
                            term[0] = term[0] + w
                        if fresh is not None:
                            fixes = seen.fixes
                            if fixes is None:
                                fixes = seen.fixes = {}
                            for i in fresh:        # the entry becomes the whole weight
                                d = _entry(source, i)
                                value = (mass.weight - d) * w if d else mass.weight * w
                                old = fixes.get(i)
                                fixes[i] = value if old is None else old + value
                    if progress and transitions % 512 == 1:
                        now = time.perf_counter()
                        if now >= quiet_until:
                            quiet_until = now + 0.5
                            shown = True
                            line = (f"  merged states: step {generation}, {len(frontier):,} "
                                    f"states, {len(following):,} next, {paths:,} paths finished")
                            print("\r" + line.ljust(78), end="", file=sys.stderr, flush=True)

                depth_first(sampler, lambda s, state=state: stepped.step(s, p, q, k, state),
                            leaf)
                if budget is not None:
                    budget.state_done()
            if max_states is not None and len(following) > max_states:
                raise TooLarge(
                    f"{stepped.name or 'the method'}: {len(following):,} distinct states after "
                    f"{generation} steps, over the budget of {max_states:,}",
                    estimate=len(following), budget=max_states)
            del aliases
            for mass in following.values():
                mass.settle()
            frontier = following
    except BaseException:
        if shown:                                      # end the progress line
            print(file=sys.stderr)
        raise
    if shown:
        line = f"  merged states: {generation} steps, {states:,} states, {paths:,} paths"
        print("\r" + line.ljust(78), file=sys.stderr)
    acceptance, explicit = exact_sum(in_drafts, 0), exact_sum(explicit_terms, 0)
    if not used_drafts:
        acceptance = explicit
    total = sum(law.values(), 0)
    return MergedEnumeration(labels=labels, law=law, acceptance=acceptance,
                             explicit_acceptance=explicit, paths=paths, total=total,
                             used_drafts=used_drafts, used_accept=used_accept,
                             seconds=time.perf_counter() - start_time, states=states,
                             transitions=transitions, steps=generation,
                             form=stepped.name)
