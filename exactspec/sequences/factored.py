"""A multi-position PyTorch rule proved with its draft positions as tensor axes.

``verify FILE:fn --p P --q Q --tokens M`` on a PyTorch rule (a context-free pair, exact
arithmetic, ideal uniforms): one call's law is computed once with every draft position as its
own axis (:mod:`exactspec.torch_layer.factored`), a sum of ``R`` rank-one terms, ``R`` the
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

Anything the factored run does not track returns ``None`` and the caller takes the path route
(which refuses too large work up front with its estimate).
"""

from __future__ import annotations

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


def factored_report(rule, pair, m: int, ctx: tuple, *, describe: dict, tolerance=None,
                    max_paths: int | None = None) -> dict | None:
    """The report of ``user_report`` for the PyTorch ``rule`` on the context-free ``pair``,
    by the factored route; ``None`` when the rule does something the route does not track."""
    from ..rounding import tolerated
    from ..verify import verdict_of

    target_row = pair.target(ctx)
    draft_row = pair.draft(ctx)
    labels = tuple(pair.labels)
    n = len(labels)
    gamma = m - 1
    before = state_fingerprint(rule.function)
    with watched(rule.function):
        call = factored_call_law(rule, target_row, draft_row, gamma, max_paths=max_paths)
        if call is None:
            return None
        again = factored_call_law(rule, target_row, draft_row, gamma, max_paths=max_paths)
    check_unchanged(rule.function, before, rule.spec)
    if again is None or again.terms != call.terms:
        raise HiddenState(f"{rule.spec} keeps hidden state: its call, run again, gave a "
                          "different law, so its calls depend on what ran before")
    p = tuple(Fraction(v) for v in target_row.probs)
    laws = compose(call.terms, m)
    witness = None
    for k in range(1, m + 1):                    # the shortest prefix that differs
        found = find_nonzero(laws[k] + [(Fraction(-1), (p,) * k)])
        if found is not None:
            law_v = value_at(laws[k], found)
            target_v = Fraction(1)
            for t in found:
                target_v *= p[t]
            witness = (found, law_v, target_v)
            break
    lossless = witness is None
    tpc = sum((mass((c, f)) * len(f) for c, f in call.terms), Fraction(0))
    tv, tv_k = Fraction(0), m
    if not lossless:
        tv_k = m
        while tv_k > 1 and n ** tv_k > DENSE_LIMIT:
            tv_k -= 1
        tv = tv_to_power(laws[tv_k], p, tv_k)
    verdict = verdict_of(lossless, lossless)
    report: dict[str, Any] = {
        "kind": "exactspec-user-sequence-report",
        "verifier": describe,
        "route": "factored",
        "labels": [str(t) for t in labels],
        "context": context_key(ctx),
        "m": m,
        "lossless": lossless,
    }
    if n ** m <= LAW_SHOWN:
        import itertools

        law, target = {}, {}
        for seq in itertools.product(range(n), repeat=m):
            key = context_key(tuple(labels[t] for t in seq))
            v = value_at(laws[m], seq)
            if v:
                law[key] = exact_str(v)
            t = Fraction(1)
            for i in seq:
                t *= p[i]
            if t:
                target[key] = exact_str(t)
        report["law"], report["target"] = law, target
    if sum(n ** k for k in range(1, m + 1)) <= LAW_SHOWN:
        import itertools                  # one call's law of its emitted tokens, as the path
                                          # route reports it

        call_law: dict = {}
        for coef, factors in call.terms:
            for seq in itertools.product(range(n), repeat=len(factors)):
                v = coef
                for f, t in zip(factors, seq):
                    v *= f[t]
                if v:
                    key = context_key(tuple(labels[t] for t in seq))
                    call_law[key] = call_law.get(key, Fraction(0)) + v
        report["call_law"] = {k: exact_str(v) for k, v in call_law.items() if v}
    report.update({
        "tokens_per_call": exact_str(tpc),
        "tokens_per_call_float": float(tpc),
        "paths": call.paths,
        "calls_enumerated": 1,
        "factored": {
            "engine_paths": call.paths,
            "draft_axes": call.axes,
            "terms": len(call.terms),
            "terms_of_law": len(laws[m]),
            "seconds": round(call.seconds, 3),
            "note": f"each of the {call.axes} draft positions is a tensor axis of "
                    f"{n} branches (vectorised, not counted as paths); the call's law is "
                    "computed once and is the same at every context of a context-free pair",
        },
        "arith": "exact",
        "grid": None,
        "verdict": verdict,
        "bias": exact_str(tv),
        "bias_float": float(tv),
        "bias_exact_arith": exact_str(tv),
        "bias_exact_arith_float": float(tv),
        "bias_grid_only": None,
        "bias_grid_only_float": None,
        "floats_converted": 0,
    })
    if not lossless:
        found, law_v, target_v = witness
        key = context_key(tuple(labels[t] for t in found))
        report["differs"] = [key]
        report["difference"] = {key: exact_str(law_v - target_v)}
        report["witness"] = {"tokens": key, "law": exact_str(law_v),
                             "target": exact_str(target_v)}
        report["tv"] = exact_str(tv)
        report["tv_float"] = float(tv)
        if tv_k < m:
            report["tv_of_first"] = tv_k
            report["tv_is"] = (f"a lower bound: the exact TV of the first {tv_k} tokens (the "
                               f"dense law of {m} tokens has {n}^{m} entries, over "
                               f"{DENSE_LIMIT:,})")
        else:
            report["tv_is"] = f"exact: the TV of the first {m} tokens"
        report["tv_first_token"] = exact_str(tv_to_power(laws[1], p, 1))
    if tolerance is not None:
        report["tolerance"] = exact_str(tolerance)
        report["within_tolerance"] = tolerated(verdict, tv, tolerance)
    report["ok"] = verdict == "lossless" or bool(report.get("within_tolerance"))
    return report


def factored_text(report: dict) -> str:
    """A short summary of :func:`factored_report`."""
    v = report["verifier"]
    f = report["factored"]
    lines = [f"PyTorch rule {v['function']}; exact arithmetic; first m = {report['m']} tokens "
             f"({len(report['labels'])} tokens, context-free pair)",
             f"factored route: {f['engine_paths']} engine paths, {f['draft_axes']} draft axes "
             f"vectorised, the call's law a sum of {f['terms']} rank-one terms "
             f"({f['seconds']} s)",
             f"tokens per call = {report['tokens_per_call']} "
             f"({report['tokens_per_call_float']:.6g})"]
    if report["verdict"] == "lossless":
        lines.append(f"PROVED: the first {report['m']} tokens follow the target's joint law "
                     "exactly")
    else:
        w = report["witness"]
        lines.append(f"REFUTED (lossy by logic): P({w['tokens']}) = {w['law']}, the target "
                     f"gives {w['target']}; TV = {report['tv']} (~{report['tv_float']:.3g}), "
                     f"{report['tv_is']}; first token TV = {report['tv_first_token']}")
    return "\n".join(lines)
