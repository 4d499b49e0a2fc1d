"""A multi-position PyTorch rule proved with its draft positions as tensor axes.

``verify FILE:fn --p P --q Q --tokens M`` on a PyTorch rule (a context-free pair): one call's
law is computed once with every draft position as its own axis
(:mod:`exactspec.torch_layer.factored`), a sum of ``R`` rank-one terms, ``R`` the
number of engine paths (the drafts vectorised, not enumerated).  The rule sees only its rows,
which are the same at every context of a context-free pair, and keeps no state, so that law is
the law of every call and the law of the first ``M`` tokens composes:
``L_M = sum_j A_j (x) L_{M-j}`` (:func:`exactspec.core.rank_one.compose`).  Whether every
``L_k``, ``k <= M``, equals ``p^{(x)k}`` is decided on one call's law padded with ``p`` (see
:class:`_Composed`: the shortest prefix that differs is the shortest that differs there), by
exact linear algebra on the terms (:func:`exactspec.core.rank_one.shortest_nonzero_prefix`),
without the ``|V|^M`` sequences and without composing the calls.  A lossy rule gets a
witness: the shortest prefix of tokens whose probability differs, both exact values, and the
exact TV where the dense law of the first ``M`` tokens fits (``|V|^M`` at most
:data:`DENSE_LIMIT` entries); else the exact TV of the longest prefix that fits, a lower bound
of the TV of the first ``M`` tokens, labelled as one.

Under ``--arith`` (or ``--grid``) the verdict's three runs (the float run, exact arithmetic with
ideal uniforms, exact arithmetic on the grid) are each computed this way, and whether the
float law equals the law on the grid (``lossy-grid`` or ``lossy-rounding``) is decided exactly
on the terms.

Anything the factored run does not track raises
:class:`~exactspec.core.signals.CannotProceed` and the planner takes the path route.  Under a
seconds budget the engine paths of one call are estimated first and too large work is refused
up front with its estimate (:class:`CallBudget`).
"""

from __future__ import annotations

import contextlib
import itertools
import math
from fractions import Fraction
from typing import Any

from ..core.deadline import Deadline
from ..core.dist import exact_str
from ..core.errors import TooLarge
from ..core.rank_one import (compose, compress, find_nonzero, marginal, mass,
                             shortest_nonzero_prefix, tv_to_power, value_at)
from ..engine.hidden_state import HiddenState, check_unchanged, state_fingerprint
from ..engine.watch import watched
from ..torch_layer.factored import call_paths_estimate, factored_call_law
from .context import context_key

__all__ = ["factored_report", "factored_text", "CallBudget", "DENSE_LIMIT", "LAW_SHOWN",
           "INSTEAD"]

#: The largest dense law (entries) whose exact TV is computed.
DENSE_LIMIT = 10**6
#: The largest law (entries) written into the report sequence by sequence.
LAW_SHOWN = 4096


class _Composed:
    """One run's call law and the law of the first ``k <= m`` tokens of repeated calls.

    Whether the first ``k`` tokens follow ``p``'s joint law for every ``k <= m`` is decided on
    the call's law *padded with p*: each term of ``j`` tokens followed by ``p`` at the
    positions after it, up to ``K = min(m, longest call)`` positions (``Pad_K``).  Calls are
    independent and alike, so the first ``k`` tokens are the first call's ``T`` tokens followed
    by the first ``k - T`` tokens of a fresh generation; when the first ``k - 1`` tokens follow
    ``p``'s joint law, so do those ``k - T``, and the law of the first ``k`` tokens is the
    marginal ``Pad_k`` of ``Pad_K``.  Hence the shortest prefix whose law differs is the
    shortest ``k`` where ``Pad_k`` differs from ``p^(x)k``, with the same values (found in
    one pass over the positions, in time polynomial in the terms, the positions and the
    vocabulary: :func:`~exactspec.core.rank_one.shortest_nonzero_prefix`), and when ``Pad_K``
    equals ``p^(x)K`` every prefix up to ``m`` tokens follows ``p`` (a longer one adds whole
    fresh generations).  The
    laws ``L_k`` themselves are composed (:func:`~exactspec.core.rank_one.compose`) only where
    a report needs one of a lossy run: its TV, its law written out, two runs compared."""

    def __init__(self, call, m: int, p: tuple):
        self.call, self.m, self.p = call, m, p
        longest = min(m, max(len(f) for _, f in call.terms))
        padded = [(c, f + (p,) * (longest - len(f))) for c, f in marginal(call.terms, longest)]
        self.witness = None
        found = shortest_nonzero_prefix(padded + [(Fraction(-1), (p,) * longest)])
        if found is not None:
            tokens, difference = found
            target_v = Fraction(1)
            for t in tokens:
                target_v *= p[t]
            self.witness = (tokens, difference + target_v, target_v)
        self.lossless = self.witness is None
        self.tpc = sum((mass((c, f)) * len(f) for c, f in call.terms), Fraction(0))
        self._laws: dict = {}
        self._tv: dict = {}

    def law(self, k: int) -> list:
        """The law of the first ``k`` tokens as rank-one terms (``p^(x)k`` when lossless)."""
        if self.lossless:
            return [(Fraction(1), (self.p,) * k)]
        if k not in self._laws:
            self._laws.update(compose(self.call.terms, k))
        return self._laws[k]

    def terms_of_law(self, m: int):
        """The terms of the law of the first ``m`` tokens, where it is known (1 when lossless,
        ``None`` for a lossy law not composed)."""
        return 1 if self.lossless else len(self._laws[m]) if m in self._laws else None

    def tv(self, p: tuple, k: int) -> Fraction:
        """The exact TV of the first ``k`` tokens from ``p``'s joint law (0 when lossless, and
        when ``k`` is shorter than the shortest prefix that differs)."""
        if self.lossless or len(self.witness[0]) > k:
            return Fraction(0)
        if k not in self._tv:
            self._tv[k] = tv_to_power(self.law(k), p, k)
        return self._tv[k]

    def same_law(self, other: "_Composed", m: int) -> bool:
        """Whether the two runs give the first ``m`` tokens the same law (exactly)."""
        if self.lossless or other.lossless:
            return self.lossless and other.lossless
        if compress(list(self.call.terms)) == compress(list(other.call.terms)):
            return True                          # one call law: one law of every prefix
        return find_nonzero(self.law(m) + [(-c, f) for c, f in other.law(m)]) is None


def factored_report(rule, pair, m: int, ctx: tuple, *, describe: dict, tolerance=None,
                    max_paths: int | None = None, arith: str | None = None,
                    grid: int | None = None, sum_order: str | None = None,
                    max_seconds: float | None = None) -> dict:
    """The report of ``user_report`` for the PyTorch ``rule`` on the context-free ``pair``,
    by the factored route; a rule that does something the route does not track raises
    :class:`~exactspec.core.signals.CannotProceed` (the planner takes the path route).

    With ``arith`` (a float format) or ``grid``, the three runs of the verdict, each by the
    factored route: the run asked for (the float run: rows rounded into the format, every
    operation rounded, the format's generator grid, long sums in ``sum_order``), exact
    arithmetic with ideal uniforms, and exact arithmetic on the run's grid; where any of them
    is not tracked, the path route runs all three.

    With ``max_seconds``, the engine paths are estimated on the first one (:class:`CallBudget`)
    and a run whose estimate passes ``max_paths`` or whose projected seconds (paths, seconds
    per path, runs of the call's law) pass ``max_seconds`` is refused before its other paths
    run (:class:`~exactspec.core.errors.TooLarge`, with the estimate); the run is stopped at
    twice ``max_seconds`` whatever the estimate said
    (:class:`~exactspec.core.deadline.Deadline`)."""
    from ..verdict import ThreeRuns

    target_row = pair.target(ctx)
    draft_row = pair.draft(ctx)
    gamma = m - 1
    runs = ThreeRuns.of(arith, grid)
    on_grid = runs.grid

    def call_law(**kw):
        return factored_call_law(rule, target_row, draft_row, gamma, max_paths=max_paths, **kw)

    before = state_fingerprint(rule.function)
    # the call's law is run for the run asked for, again (hidden state), and for each of
    # the verdict's other runs that is not the one asked for
    count = 2 + (not runs.ideal_is_asked) + (on_grid is not None and not runs.grid_is_asked)
    first_path = None
    budget = contextlib.nullcontext()
    if max_seconds is not None:
        first_path = CallBudget(rule, target_row, draft_row, gamma, count, max_paths,
                                max_seconds, arith=arith, grid=grid, sum_order=sum_order)
        budget = Deadline(2 * max_seconds, lambda spent: TooLarge(
            f"the factored run of {rule.spec}: not done after {spent:,.0f} s of exact work, "
            f"over the budget of {max_seconds:,.0f} s: stopped; {INSTEAD}",
            estimate=math.ceil(spent), budget=math.floor(max_seconds)))
    with budget:
        return _report(rule, pair, m, ctx, target_row, draft_row, call_law, before, runs,
                       describe, tolerance, arith, grid, sum_order, first_path)


#: What to do instead of a factored run over the budget.
INSTEAD = "a smaller --tokens or vocabulary, or --max-paths N to insist"


class CallBudget:
    """The size check of a factored run, made on its first engine path
    (:func:`~exactspec.torch_layer.factored.factored_call_law`'s ``first_path``).

    The call's law is run ``count`` times, each run at least as long as the first path: a
    first path longer than ``max_seconds / count`` is refused while it runs
    (:meth:`deadline`).  Once it ends, the run is sized from it, each path counted at its
    seconds: the paths there are at least (that one, and one for each option its choices
    did not take) over either budget are refused at once; else the product of the arities
    along it (Knuth's estimate from one path, which a tree of uneven branches overstates)
    within both budgets goes on at once; else the decision is left to random engine paths
    (:func:`~exactspec.torch_layer.factored.call_paths_estimate`, never under the paths
    there are at least), each then at the seconds of a random path.  Where the walk forks
    (the paths' common start run once, :mod:`~exactspec.engine.forked_paths`), ``forks`` is
    the mean seconds of a copy's path (its part after the choice it was forked at): ``n``
    paths are counted as the first path and ``n - 1`` such parts, and ``probe`` (given then)
    counts the paths by one random path below each copy's choice, run in a fork of the copy
    (:meth:`~exactspec.engine.forked_paths.ForkedPaths.probe`), each part then at the
    probes' mean seconds.  A refusal
    (:class:`~exactspec.core.errors.TooLarge`, with the estimate) comes before any other path
    runs."""

    def __init__(self, rule, target, draft, gamma: int, count: int, max_paths, max_seconds,
                 **run):
        self.rule, self.target, self.draft, self.gamma = rule, target, draft, gamma
        self.count, self.max_paths, self.max_seconds, self.run = count, max_paths, \
            max_seconds, run
        self.share = max_seconds / count

    def deadline(self) -> Deadline:
        """The deadline of the first engine path."""
        return Deadline(self.share, lambda spent: TooLarge(
            f"the factored run of {self.rule.spec}: its first engine path took more than "
            f"{self.share:,.0f} s, and the call's law is run {self.count} times, each with "
            f"that path: over the budget of {self.max_seconds:,.0f} s; {INSTEAD}",
            estimate=math.ceil(spent * self.count), budget=math.floor(self.max_seconds)))

    def __call__(self, arities: int, least: int, seconds: float,
                 forks: float | None = None, probe=None) -> None:
        cost = (lambda n: n * seconds) if forks is None else \
            (lambda n: seconds + (n - 1) * forks)
        if not self._within(least, cost(least)):
            self._refuse(least, cost(least), "at least")
        if self._within(arities, cost(arities)):
            return
        with self.deadline():
            if probe is not None:        # random paths of the walk's copies, each its part
                paths, part = probe()
                cost = lambda n: seconds + (n - 1) * part      # noqa: E731
            else:
                paths, probed = call_paths_estimate(self.rule, self.target, self.draft,
                                                    self.gamma, max_paths=self.max_paths,
                                                    max_seconds=self.share, **self.run)
                if forks is None:        # a path replayed costs what a random path did
                    cost = lambda n: n * probed                # noqa: E731
        paths = max(paths, least)
        if not self._within(paths, cost(paths)):
            self._refuse(paths, cost(paths), "about")

    def _refuse(self, paths: int, one_run: float, how: str):
        if self.max_paths is not None and paths > self.max_paths:
            raise TooLarge(f"the factored run of {self.rule.spec}: {how} {paths:,} engine "
                           f"paths (its draft axes vectorised), over the budget of "
                           f"{self.max_paths:,}; {INSTEAD}",
                           estimate=paths, budget=self.max_paths)
        total = one_run * self.count
        raise TooLarge(f"the factored run of {self.rule.spec}: {how} {paths:,} engine paths "
                       f"at about {one_run / paths:.2g} s each, the call's law run "
                       f"{self.count} times: about {total:,.0f} s of exact work, over the "
                       f"budget of {self.max_seconds:,.0f} s; {INSTEAD}",
                       estimate=math.ceil(total), budget=math.floor(self.max_seconds))

    def _within(self, paths: int, one_run: float) -> bool:
        """Whether ``paths`` engine paths taking ``one_run`` seconds in all fit both budgets
        (the call's law run ``count`` times)."""
        return (self.max_paths is None or paths <= self.max_paths) and \
            one_run * self.count <= self.max_seconds


def _report(rule, pair, m, ctx, target_row, draft_row, call_law, before, runs, describe,
            tolerance, arith, grid, sum_order, first_path) -> dict:
    """The body of :func:`factored_report`, inside its budget."""
    from ..verdict import Verdict

    labels = tuple(pair.labels)
    n = len(labels)
    fmt, on_grid = runs.format, runs.grid
    with watched(rule.function):
        asked_call = call_law(arith=arith, grid=grid, sum_order=sum_order,
                              first_path=first_path)
        # run again: a call this route cannot follow the second time raises CannotProceed
        # (the planner takes the path route); a call whose law differs is refused here
        again = call_law(arith=arith, grid=grid, sum_order=sum_order)
        ideal_call = asked_call if runs.ideal_is_asked else call_law()
        grid_call = None
        if on_grid is not None:
            grid_call = asked_call if runs.grid_is_asked else call_law(grid=on_grid)
    check_unchanged(rule.function, before, rule.spec)
    if again.terms != asked_call.terms:
        raise HiddenState(f"{rule.spec} keeps hidden state: its call, run again, gave a "
                          "different law, so its calls depend on what ran before")
    p = tuple(Fraction(v) for v in target_row.probs)
    asked = _Composed(asked_call, m, p)
    ideal = asked if ideal_call is asked_call else _Composed(ideal_call, m, p)
    grid_only = None if grid_call is None else \
        asked if grid_call is asked_call else _Composed(grid_call, m, p)
    tv_k = m
    while tv_k > 1 and n ** tv_k > DENSE_LIMIT:
        tv_k -= 1
    same = None if grid_only is None or fmt is None else asked.same_law(grid_only, m)
    tv, tv_ideal = asked.tv(p, tv_k), ideal.tv(p, tv_k)
    tv_grid = None if grid_only is None else tv if same else grid_only.tv(p, tv_k)
    judged = Verdict(runs, tv, tv_ideal, tv_grid, same_as_grid=same, tolerance=tolerance,
                     lossless=asked.lossless, ideal_lossless=ideal.lossless)
    report: dict[str, Any] = {
        "kind": "exactspec-user-sequence-report",
        "verifier": describe,
        "route": "factored",
        "labels": [str(t) for t in labels],
        "context": context_key(ctx),
        "m": m,
        "lossless": asked.lossless,
    }
    if n ** m <= LAW_SHOWN:
        report["law"], report["target"] = _dense_json(asked.law(m), p, labels, m)
    if sum(n ** k for k in range(1, m + 1)) <= LAW_SHOWN:      # one call's law, as the path
        report["call_law"] = _call_law_json(asked_call.terms, labels, n)   # route gives it
    seconds = sum(c.seconds for c in {id(c): c for c in (asked_call, ideal_call, grid_call)
                                      if c is not None}.values())
    report.update({
        "tokens_per_call": exact_str(asked.tpc),
        "tokens_per_call_float": float(asked.tpc),
        "paths": asked_call.paths,
        "calls_enumerated": 1,
        "factored": {
            "engine_paths": asked_call.paths,
            "draft_axes": asked_call.axes,
            "terms": len(asked_call.terms),
            "terms_of_law": asked.terms_of_law(m),
            "seconds": round(asked_call.seconds, 3),
            "runs_seconds": round(seconds, 3),
            "note": f"each of the {asked_call.axes} draft positions is a tensor axis of "
                    f"{n} branches (vectorised, not counted as paths); the call's law is "
                    "computed once and is the same at every context of a context-free pair",
        },
        **judged.fields(),
        "floats_converted": 0,
    })
    if not asked.lossless:
        found, law_v, target_v = asked.witness
        key = context_key(tuple(labels[t] for t in found))
        report["differs"] = [key]
        report["difference"] = {key: exact_str(law_v - target_v)}
        report["witness"] = {"tokens": key, "law": exact_str(law_v),
                             "target": exact_str(target_v)}
        report["tv"] = exact_str(tv)
        report["tv_float"] = float(tv)
        report["tv_is"] = _tv_is(tv_k, m, n)
        report["tv_first_token"] = exact_str(asked.tv(p, 1))
    if tv_k < m and (tv or tv_ideal or tv_grid):
        report["tv_of_first"] = tv_k        # every TV of the report is of the first tv_k tokens
    if fmt is not None:
        report["elementwise"] = "correct"
        report["sum_order"] = sum_order
    if ideal is not asked:
        exact_arith: dict[str, Any] = {"tokens_per_call": exact_str(ideal.tpc),
                                       "paths": ideal_call.paths,
                                       "lossless": ideal.lossless}
        if n ** m <= LAW_SHOWN:
            law, target = _dense_json(ideal.law(m), p, labels, m)
            exact_arith["law"] = law
            # every sequence in the order of the tokens, as the path route lists them (a
            # sequence outside p's support comes in its place, not after the others)
            exact_arith["differs"] = [
                k for k in (context_key(tuple(labels[t] for t in seq))
                            for seq in itertools.product(range(n), repeat=m))
                if law.get(k, "0") != target.get(k, "0")]
        if not ideal.lossless:
            found, law_v, target_v = ideal.witness
            exact_arith["witness"] = {"tokens": context_key(tuple(labels[t] for t in found)),
                                      "law": exact_str(law_v), "target": exact_str(target_v)}
        report["exact_arith"] = exact_arith
    if tolerance is not None:
        if judged.within_tolerance and tv_k < m:      # a lower bound within the tolerance decides nothing
            raise TooLarge(f"--tolerance {exact_str(tolerance)}: the TV of the first {m} "
                           f"tokens needs their dense law, {n}^{m} entries, over the budget of "
                           f"{DENSE_LIMIT:,}; the TV of the first {tv_k} ({float(tv):.3g}) is "
                           "within the tolerance but only a lower bound (a smaller --tokens)",
                           estimate=n ** m, budget=DENSE_LIMIT)
        report.update(judged.tolerance_fields())
    report["ok"] = judged.ok
    return report


def _tv_is(tv_k: int, m: int, n: int) -> str:
    if tv_k < m:
        return (f"a lower bound: the exact TV of the first {tv_k} tokens (the dense law of {m} "
                f"tokens has {n}^{m} entries, over {DENSE_LIMIT:,})")
    return f"exact: the TV of the first {m} tokens"



def _call_law_json(terms, labels, n: int) -> dict:
    """One call's law of its emitted tokens (a sum of rank-one terms) as the path route
    reports it: each emitted sequence and its exact probability."""
    import itertools

    law: dict = {}
    for coef, factors in terms:
        for seq in itertools.product(range(n), repeat=len(factors)):
            v = coef
            for f, t in zip(factors, seq):
                v *= f[t]
            if v:
                key = context_key(tuple(labels[t] for t in seq))
                law[key] = law.get(key, Fraction(0)) + v
    return {k: exact_str(v) for k, v in law.items() if v}

def _dense_json(terms, p, labels, m) -> tuple[dict, dict]:
    """The law of the first ``m`` tokens and ``p``'s joint law, sequence by sequence."""
    import itertools

    law, target = {}, {}
    for seq in itertools.product(range(len(labels)), repeat=m):
        key = context_key(tuple(labels[t] for t in seq))
        v = value_at(terms, seq)
        if v:
            law[key] = exact_str(v)
        t = Fraction(1)
        for i in seq:
            t *= p[i]
        if t:
            target[key] = exact_str(t)
    return law, target


def factored_text(report: dict) -> str:
    """A short summary of :func:`factored_report`."""
    v = report["verifier"]
    f = report["factored"]
    arith = report["arith"]
    how = "exact arithmetic" if arith == "exact" else f"{arith} arithmetic"
    if report.get("sum_order") is not None:
        how += f" (long sums {report['sum_order']})"
    lines = [f"PyTorch rule {v['function']}; {how}; first m = {report['m']} tokens "
             f"({len(report['labels'])} tokens, context-free pair)",
             f"factored route: {f['engine_paths']} engine paths, {f['draft_axes']} draft axes "
             f"vectorised, the call's law a sum of {f['terms']} rank-one terms "
             f"({f['seconds']} s)",
             f"tokens per call = {report['tokens_per_call']} "
             f"({report['tokens_per_call_float']:.6g})"]
    verdict = report["verdict"]
    if verdict == "lossless":
        lines.append(f"PROVED: the first {report['m']} tokens follow the target's joint law "
                     "exactly")
    else:
        w = report["witness"]
        why = {"lossy-grid": "lossy by the grid only: exact arithmetic with ideal uniforms is "
                             "lossless",
               "lossy-rounding": "lossy by rounding only: exact arithmetic with ideal uniforms "
                                 "is lossless",
               "lossy-logic": "lossy by logic"}[verdict]
        lines.append(f"REFUTED ({why}): P({w['tokens']}) = {w['law']}, the target "
                     f"gives {w['target']}; TV = {report['tv']} (~{report['tv_float']:.3g}), "
                     f"{report['tv_is']}; first token TV = {report['tv_first_token']}")
    if arith != "exact" or report["grid"] is not None:
        from ..verdict import split_line

        def value(key):
            text = report.get(key)
            return None if text is None else Fraction(text)

        k = report.get("tv_of_first")
        lines.append(split_line(None if arith == "exact" else arith, report["grid"],
                                value("bias"), value("bias_exact_arith"),
                                value("bias_grid_only"))
                     + ("" if k is None else f" (of the first {k} tokens: lower bounds)"))
    if "tolerance" in report and verdict in ("lossy-grid", "lossy-rounding"):
        lines.append(f"tolerance {report['tolerance']}: the bias is "
                     + ("within it" if report["within_tolerance"] else "ABOVE it"))
    return "\n".join(lines)
