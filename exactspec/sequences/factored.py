"""A multi-position PyTorch rule proved with its draft positions as tensor axes.

``verify FILE:fn --p P --q Q --tokens M`` on a PyTorch rule (a context-free pair): one call's
law is computed once with every draft position as its own axis
(:mod:`exactspec.torch_layer.factored`), a sum of ``R`` rank-one terms, ``R`` the
number of engine paths (the drafts vectorised, not enumerated).  The rule sees only its rows,
which are the same at every context of a context-free pair, and keeps no state, so that law is
the law of every call and the law of the first ``M`` tokens composes:
``L_M = sum_j A_j (x) L_{M-j}`` (:func:`exactspec.core.rank_one.compose`).  Whether ``L_M``
equals ``p^{(x)M}`` is decided exactly by linear algebra on the terms
(:func:`exactspec.core.rank_one.find_nonzero`), without the ``|V|^M`` sequences.  A lossy rule
gets a witness: the shortest prefix of tokens whose probability differs, both exact values,
and the exact TV where the dense law of the first ``M`` tokens fits (``|V|^M`` at most
:data:`DENSE_LIMIT` entries); else the exact TV of the longest prefix that fits, a lower bound
of the TV of the first ``M`` tokens, labelled as one.

Under ``--arith`` (or ``--grid``) the verdict's three runs (the float run, exact arithmetic with
ideal uniforms, exact arithmetic on the grid) are each computed this way, and whether the
float law equals the law on the grid (``lossy-grid`` or ``lossy-rounding``) is decided exactly
on the terms.

Anything the factored run does not track returns ``None`` and the caller takes the path route
(which refuses too large work up front with its estimate).
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

from ..core.dist import exact_str
from ..core.rank_one import compose, find_nonzero, mass, tv_to_power, value_at
from ..engine.hidden_state import HiddenState, check_unchanged, state_fingerprint
from ..engine.watch import watched
from ..torch_layer.factored import factored_call_law
from .context import context_key

__all__ = ["factored_report", "factored_text", "DENSE_LIMIT", "LAW_SHOWN"]

#: The largest dense law (entries) whose exact TV is computed.
DENSE_LIMIT = 10**6
#: The largest law (entries) written into the report sequence by sequence.
LAW_SHOWN = 4096


class _Composed:
    """One run's call law composed to the first ``m`` tokens: the laws ``L_1 .. L_m``, the
    shortest prefix that differs from ``p``'s joint law (``None``: lossless), tokens per call."""

    def __init__(self, call, m: int, p: tuple):
        self.call = call
        self.laws = compose(call.terms, m)
        self.witness = None
        for k in range(1, m + 1):                    # the shortest prefix that differs
            found = find_nonzero(self.laws[k] + [(Fraction(-1), (p,) * k)])
            if found is not None:
                target_v = Fraction(1)
                for t in found:
                    target_v *= p[t]
                self.witness = (found, value_at(self.laws[k], found), target_v)
                break
        self.lossless = self.witness is None
        self.tpc = sum((mass((c, f)) * len(f) for c, f in call.terms), Fraction(0))
        self._tv: dict = {}

    def tv(self, p: tuple, k: int) -> Fraction:
        """The exact TV of the first ``k`` tokens from ``p``'s joint law (0 when lossless)."""
        if self.lossless:
            return Fraction(0)
        if k not in self._tv:
            self._tv[k] = tv_to_power(self.laws[k], p, k)
        return self._tv[k]

    def same_law(self, other: "_Composed", m: int) -> bool:
        """Whether the two runs give the first ``m`` tokens the same law (exactly)."""
        return find_nonzero(self.laws[m] + [(-c, f) for c, f in other.laws[m]]) is None


def factored_report(rule, pair, m: int, ctx: tuple, *, describe: dict, tolerance=None,
                    max_paths: int | None = None, arith: str | None = None,
                    grid: int | None = None, sum_order: str | None = None) -> dict:
    """The report of ``user_report`` for the PyTorch ``rule`` on the context-free ``pair``,
    by the factored route; a rule that does something the route does not track raises
    :class:`~exactspec.core.signals.CannotProceed` (the planner takes the path route).

    With ``arith`` (a float format) or ``grid``, the three runs of the verdict, each by the
    factored route: the run asked for (the float run: rows rounded into the format, every
    operation rounded, the format's generator grid, long sums in ``sum_order``), exact
    arithmetic with ideal uniforms, and exact arithmetic on the run's grid; where any of them
    is not tracked, the path route runs all three."""
    from ..verdict import ThreeRuns, Verdict

    target_row = pair.target(ctx)
    draft_row = pair.draft(ctx)
    labels = tuple(pair.labels)
    n = len(labels)
    gamma = m - 1
    runs = ThreeRuns.of(arith, grid)
    fmt, on_grid = runs.format, runs.grid

    def call_law(**kw):
        return factored_call_law(rule, target_row, draft_row, gamma, max_paths=max_paths, **kw)

    before = state_fingerprint(rule.function)
    with watched(rule.function):
        asked_call = call_law(arith=arith, grid=grid, sum_order=sum_order)
        # run again: a call this route cannot follow the second time raises CannotProceed,
        # and the planner takes the path route, which refuses hidden state in its own words
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
        report["law"], report["target"] = _dense_json(asked.laws[m], p, labels, m)
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
            "terms_of_law": len(asked.laws[m]),
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
        report["tv_first_token"] = exact_str(tv_to_power(asked.laws[1], p, 1))
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
            law, target = _dense_json(ideal.laws[m], p, labels, m)
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
            from ..core.errors import TooLarge

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
