"""The ``exactspec tree`` input format (docs/tree_format.md), its report and its text:
:func:`load_tree_spec`, :func:`check_tree_size`, :func:`tree_report`, :func:`tree_text`.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

from ..core.dist import exact_str
from ..core.errors import InvalidInput
from ..verdict import verdict_of
from .context import ContextPair, context_key, parse_context, read_spec
from .multitoken import call_law, prove_sequence
from .tree_verifier import Tree

__all__ = ["MAX_TREE_NODES", "check_tree_size", "load_tree_spec", "tree_report", "tree_text"]


_SPEC_KEYS = {"model", "labels", "target", "draft", "verifier", "gamma", "branching", "rule",
              "drafts", "m", "context", "lazy"}


def load_tree_spec(spec) -> dict:
    """Read and check a spec (a dict, or the path of a JSON file; docs/tree_format.md).

    Returns ``{"pair", "verifier", "m", "context", "spec"}``.
    """
    spec, base = read_spec(spec, "tree spec", _SPEC_KEYS)
    model = spec.get("model")
    if isinstance(model, str):
        path = Path(model) if base is None or Path(model).is_absolute() else base / model
        pair = ContextPair.from_json(path)
    elif isinstance(model, dict):
        pair = ContextPair.from_table(model)
    elif model is None:
        pair = ContextPair.from_table({k: spec[k] for k in ("labels", "target", "draft")
                                     if k in spec})
    else:
        raise InvalidInput("tree spec: 'model' must be a table object or a JSON file name")
    kind = spec.get("verifier", "tree" if "branching" in spec else "chain")
    gamma = _int(spec.get("gamma"), "gamma", 0) if kind in ("chain", "block") else None
    if kind == "chain":
        from .chains import Chain

        if gamma is None:
            raise InvalidInput("tree spec: a chain needs 'gamma' (draft tokens per call)")
        verifier = Chain(gamma, lazy=bool(spec.get("lazy", False)))
    elif kind == "block":
        from .block import Block

        if gamma is None:
            raise InvalidInput("tree spec: block verification needs 'gamma'")
        verifier = Block(gamma)
    elif kind == "tree":
        if "branching" not in spec:
            raise InvalidInput("tree spec: a tree needs 'branching' (children per depth, "
                               "e.g. [2, 2])")
        branching = [_int(b, "branching entry", 1) for b in spec["branching"]] \
            if isinstance(spec["branching"], list) else spec["branching"]
        verifier = Tree(branching, spec.get("rule", "rrs"), spec.get("drafts"),
                        lazy=bool(spec.get("lazy", True)))
    elif kind == "traversal":
        from .traversal import Traversal

        if "branching" in spec:
            shape = spec["branching"]
            if isinstance(shape, list):
                shape = [_int(b, "branching entry", 1) for b in shape]
        elif "gamma" in spec:
            shape = (1,) * _int(spec["gamma"], "gamma", 1)
        else:
            raise InvalidInput("tree spec: traversal needs 'branching' (or 'gamma' for a chain)")
        verifier = Traversal(shape)
    else:
        raise InvalidInput(f"tree spec: verifier={kind!r}: choose chain, tree, block or "
                           "traversal")
    m = _int(spec.get("m", verifier.max_tokens), "m", 1)
    ctx = parse_context(spec.get("context", ""), pair.labels)
    return {"pair": pair, "verifier": verifier, "m": m, "context": ctx, "spec": spec}


def _int(value, name: str, low: int):
    if value is None:
        return None
    if isinstance(value, Fraction) and value.denominator == 1:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InvalidInput(f"tree spec: {name}={value!r}: need an integer >= {low}")
    return value


MAX_TREE_NODES = 10_000


def check_tree_size(pair, verifier, m: int, ctx, max_paths: int | None) -> None:
    """Refuse, before any work, a spec whose law cannot fit the budget.

    The first ``m`` tokens take about ``s^m`` values, ``s`` the target's support at the
    starting context (exactly that many when the support is the same everywhere), and every
    one of them is a path of the enumeration; a tree also drafts ``drafted`` tokens per call.

    >>> from exactspec.sequences.context import ContextPair
    >>> from exactspec.sequences.chains import Chain
    >>> pair = ContextPair.from_table({"target": {"": "1/2,1/2"}, "draft": {"": "1/2,1/2"}})
    >>> check_tree_size(pair, Chain(50), 51, (), 10**6)
    Traceback (most recent call last):
    ...
    exactspec.core.errors.TooLarge: tree spec: about 2,251,799,813,685,248 token sequences of length 51 (2 tokens of support, m = 51), over the budget of 1,000,000 paths: use a smaller gamma, m or vocabulary, or --max-paths N to insist
    """
    from ..core.budget import check_sequences, sequence_count
    from ..core.errors import TooLarge

    drafted = getattr(verifier, "drafted", 0) or 0
    if drafted > MAX_TREE_NODES:
        raise TooLarge(f"tree spec: {drafted:,} drafted tokens per call, over the budget of "
                       f"{MAX_TREE_NODES:,} nodes: use a smaller branching", estimate=drafted,
                       budget=MAX_TREE_NODES)
    if max_paths is None:
        return
    support = len(pair.target(ctx).support)
    estimate = sequence_count(support, m)               # capped: a huge m costs nothing
    if estimate > max_paths:
        if estimate > 2**64:
            check_sequences(support, m, 0, max_paths, what="tree spec: m =")
        raise TooLarge(f"tree spec: about {estimate:,} token sequences of length {m} ({support} "
                       f"tokens of support, m = {m}), over the budget of {max_paths:,} paths: use "
                       "a smaller gamma, m or vocabulary, or --max-paths N to insist",
                       estimate=estimate, budget=max_paths)


def tree_report(spec, *, max_paths: int | None = 10**6) -> dict:
    """Prove a chain, tree or block spec (docs/tree_format.md) and report, JSON-ready: exact
    values as strings, floats only under keys ending ``_float``.

    >>> r = tree_report({"target": {"": "1/3,2/3"}, "draft": {"": "2/3,1/3"}, "gamma": 2})
    >>> r["lossless"], r["tokens_per_call"], r["accepted_per_call"], r["ideal_accepted"]
    (True, '19/9', '10/9', '4/3')
    """
    from .block import ideal_accepted
    from .chains import Chain, chain_tokens_per_call

    loaded = load_tree_spec(spec)
    pair, verifier, m, ctx = loaded["pair"], loaded["verifier"], loaded["m"], loaded["context"]
    check_tree_size(pair, verifier, m, ctx, max_paths)
    proof = prove_sequence(verifier, pair, m, ctx, max_paths=max_paths)
    one = call_law(verifier, pair, ctx, max_paths=max_paths)
    tpc = proof.tokens_per_call
    report: dict[str, Any] = {
        "kind": "exactspec-tree-report",
        "verifier": verifier.describe(),
        "labels": [str(t) for t in pair.labels],
        "context": context_key(ctx),
        "m": m,
        "lossless": proof.lossless,
        # exact arithmetic, ideal uniforms: a lossy law is the logic's (the one vocabulary of
        # every route; --arith and --grid pair runs in sequences.user.builtin_report)
        "verdict": verdict_of(proof.lossless, proof.lossless),
        "arith": "exact",
        "grid": None,
        "bias": exact_str(proof.tv),
        "bias_exact_arith": exact_str(proof.tv),
        "bias_grid_only": None,
        "tokens_per_call": exact_str(tpc),
        "tokens_per_call_float": float(tpc),
        "accepted_per_call": exact_str(tpc - 1),
        "accepted_per_call_float": float(tpc - 1),
        "drafted": verifier.drafted,
        "call_law": {context_key(t): exact_str(w) for t, w in one.law.items() if w != 0},
        "law": {context_key(t): exact_str(w) for t, w in proof.law.items() if w != 0},
        "target": {context_key(t): exact_str(w) for t, w in proof.target.items() if w != 0},
        "paths": proof.paths + one.paths,
        "calls_enumerated": proof.calls,
    }
    if not proof.lossless:
        report["differs"] = [context_key(t) for t in proof.differs]
        report["tv"] = exact_str(proof.tv)
        report["tv_float"] = float(proof.tv)
    if isinstance(verifier, Chain) or getattr(verifier, "name", "") == "block":
        gamma = verifier.gamma
        formula = chain_tokens_per_call(pair, gamma, ctx)
        ideal = ideal_accepted(pair, gamma, ctx)
        report["chain_tokens_per_call"] = exact_str(formula)
        report["chain_tokens_per_call_float"] = float(formula)
        report["ideal_accepted"] = exact_str(ideal)
        report["ideal_accepted_float"] = float(ideal)
        alphas = {pair.acceptance(c) for c in pair.contexts(gamma, ctx)}
        if len(alphas) == 1:
            from .chains import tokens_per_call_closed_form

            (alpha,) = alphas
            closed = tokens_per_call_closed_form(alpha, gamma)
            report["constant_acceptance"] = exact_str(alpha)
            report["closed_form"] = exact_str(closed)
            report["closed_form_float"] = float(closed)
    return report


def tree_text(report: dict, max_rows: int = 24) -> str:
    """A short human-readable summary of :func:`tree_report`'s dict: the verdict, tokens per
    call, and the law of the first ``m`` tokens beside the target (the differing sequences
    first when lossy; at most ``max_rows`` rows)."""
    v = report["verifier"]
    if v["verifier"] == "tree":
        what = (f"tree, branching {v['branching']}, rule {v['rule']}, drafts {v['drafts']} "
                f"({v['drafted']} drafted tokens)")
    elif v["verifier"] == "traversal":
        what = (f"traversal verification, branching {v['branching']}, drafts without "
                f"replacement ({v['drafted']} drafted tokens)")
    else:
        what = f"{v['verifier']}, gamma = {v['gamma']}"
    ctx = report["context"] or '""'
    lines = [f"{what}; context {ctx}; labels {', '.join(report['labels'])}"]
    if report["lossless"]:
        lines.append(f"LOSSLESS: the first {report['m']} tokens follow the target's joint law "
                     f"exactly ({report['paths']:,} paths, {report['calls_enumerated']} "
                     "contexts enumerated)")
    else:
        shown = "; ".join(report["differs"][:4])
        more = len(report["differs"]) - 4
        where = shown + (f" and {more} more" if more > 0 else "")
        lines.append(f"LOSSY: the first {report['m']} tokens differ from the target's joint "
                     f"law at {where}; TV = {report['tv']}")
    lines.append(f"tokens per target call = {report['tokens_per_call']} "
                 f"(~{report['tokens_per_call_float']:.4f}); accepted drafts per call = "
                 f"{report['accepted_per_call']}")
    if "chain_tokens_per_call" in report and v["verifier"] == "chain":
        lines.append(f"chain formula 1 + sum prod min(p, q) = {report['chain_tokens_per_call']}")
    if "closed_form" in report and v["verifier"] == "chain":
        lines.append(f"constant acceptance {report['constant_acceptance']}: "
                     f"(1 - a^(gamma+1)) / (1 - a) = {report['closed_form']}")
    if "ideal_accepted" in report:
        lines.append(f"ideal accepted drafts per call (coupling bound) = "
                     f"{report['ideal_accepted']}")
    keys = sorted(set(report["law"]) | set(report["target"]))
    differs = report.get("differs", [])
    keys = [k for k in keys if k in differs] + [k for k in keys if k not in differs]
    width = max([len("tokens")] + [len(k) for k in keys])
    lines.append(f"{'tokens':<{width}}  {'law':<12} target")
    for key in keys[:max_rows]:
        mark = "  <- differs" if key in differs else ""
        lines.append(f"{key:<{width}}  {report['law'].get(key, '0'):<12} "
                     f"{report['target'].get(key, '0')}{mark}")
    if len(keys) > max_rows:
        lines.append(f"... {len(keys) - max_rows} more sequences (--json for all)")
    return "\n".join(lines)
