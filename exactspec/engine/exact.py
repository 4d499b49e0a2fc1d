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

The interpreter is written in modules by concern, gathered here (every name importers use is
this module's): the sampler and the checks on a method's input (:mod:`.exact_sampler`), the
estimate of the tree's size and the seconds budget (:mod:`.path_estimate`), and here the walk
over every path, its budgets and its result (:class:`Enumeration`).

>>> from exactspec.core.dist import Dist
>>> enumerate_paths(lambda s, p, q, k: s.draw(p), Dist.parse("1/4,3/4"), None).law
{0: Fraction(1, 4), 1: Fraction(3, 4)}
"""

from __future__ import annotations

import functools
import gc
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable

from ..core.errors import InvalidInput, TooLarge
from ..core.exact_values import floats_converted
from . import path_estimate
from .driver import depth_first
from .exact_sampler import (MAX_CALLS, MAX_DEPTH, ExactSampler, check_unchanged,  # noqa: F401
                            exact_probability, input_snapshot, pick_weights, unwatched)
from .path_estimate import (ESTIMATE_LEVELS, ESTIMATE_RUNS, FAR_OVER,  # noqa: F401
                            KNUTH_SHORTFALL, MAX_SECONDS, ROUND_MARGIN, check_seconds,
                            estimate_paths)
from .watch import Fingerprint, watched

__all__ = ["ExactSampler", "Path", "Enumeration", "enumerate_paths", "estimate_paths",
           "DEFAULT_MAX_PATHS", "gc_paused", "over_budget"]

DEFAULT_MAX_PATHS = 10**7


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
    before = input_snapshot(p), input_snapshot(q)
    with watched(method) if watch else unwatched():
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
        check_unchanged(before, p, q)
    return result


def over_budget(count: int, estimate, max_paths, seconds: float,
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
    start = path_estimate.clock()
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
            refusal = over_budget(count, estimate, max_paths, path_estimate.clock() - start,
                                  max_seconds)
            if refusal is not None:
                raise refusal
        if progress and count % 20000 == 0:
            now = path_estimate.clock()
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
                         seconds=path_estimate.clock() - start,
                         floats=s.floats + floats_converted() - converted)
    return result, (digest.digest() if digest is not None else None)
