"""Every sequence-level method on one spec, side by side (``exactspec compare --tree SPEC``).

The spec (docs/tree_format.md) gives the model pair, the context, ``m`` and a shape: a chain of
``gamma`` drafts or a tree ``branching``.  Each method is proved on it exactly (the first ``m``
tokens against the target's joint law) and its exact tokens per target call is set against the
best one proved lossless:

- on the chain of the spec's depth: token by token (``chain``), block verification
  (``block``) and Traversal Verification (``traversal-chain``);
- on the tree, when some level has more than one child: node by node with ``rrs``,
  ``rrs-wor``, ``optimal`` (i.i.d.), ``optimal-wor``, ``key`` (when registered), and
  Traversal Verification (``traversal``);
- lossy by design (their own group, with the exact ``TV`` of the joint law): the tree (or
  chain) verified node by node with ``greedy`` and with ``typical`` (Medusa's defaults).

>>> spec = {"target": {"": "1/3,2/3"}, "draft": {"": "2/3,1/3"}, "gamma": 2}
>>> r = sequence_compare(spec)
>>> [(e["method"], e["verdict"], e["tokens_per_call"], e["ratio_to_best"])
...  for e in r["methods"] if e["group"] == "lossless"]
[('chain', 'lossless', '19/9', '19/20'), ('block', 'lossless', '20/9', '1'), ('traversal-chain', 'lossless', '20/9', '1')]
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..core.dist import exact_str
from ..core.errors import InvalidInput, TooLarge, Undecided
from ..verdict import verdict_of
from .context import context_key
from .multitoken import prove_sequence

__all__ = ["sequence_methods", "sequence_compare", "sequence_compare_text", "tree_comparison",
           "TREE_COMPARISON_RULES"]


def _shape(verifier) -> tuple:
    if hasattr(verifier, "branching"):
        return tuple(verifier.branching)
    return (1,) * verifier.gamma


def sequence_methods(branching) -> list[tuple[str, str, Any]]:
    """``(name, group, make)`` for every sequence-level method on this shape; ``make()``
    builds the verifier (and may raise :class:`InvalidInput` when it does not apply)."""
    from ..methods import METHODS
    from .block import Block
    from .chains import Chain
    from .traversal import Traversal
    from .trees import Tree, node_rule

    branching = tuple(branching)
    depth = len(branching)
    out = [("chain", "lossless", lambda: Chain(depth, lazy=True)),
           ("block", "lossless", lambda: Block(depth)),
           ("traversal-chain", "lossless", lambda: Traversal((1,) * depth))]
    if any(b > 1 for b in branching):
        rules = [("rrs", None), ("rrs-wor", None), ("optimal", None), ("optimal", "wor")]
        if "key" in METHODS:
            rules.append(("key", None))
        for name, drafts in rules:
            label = f"tree-{name}" + ("-wor" if drafts == "wor" else "")
            out.append((label, "lossless",
                        lambda n=name, d=drafts: Tree(branching, node_rule(n, d))))
        out.append(("traversal", "lossless", lambda: Traversal(branching)))
    for name in ("greedy", "typical"):
        if name in METHODS:
            out.append((f"tree-{name}" if any(b > 1 for b in branching) else f"chain-{name}",
                        "lossy-by-design", lambda n=name: Tree(branching, n)))
    return out


def sequence_compare(spec, *, max_paths: int | None = 10**6) -> dict:
    """Prove every sequence-level method on the spec's pair, context and ``m``; JSON-ready
    (exact values as strings, floats only under ``_float`` keys).

    Each entry: ``method``, ``group`` (``lossless`` or ``lossy-by-design``), ``verifier``,
    ``drafted``, ``lossless``, ``verdict`` (``lossless``, or ``lossy-logic``: exact arithmetic
    with ideal uniforms), ``tokens_per_call``,
    ``ratio_to_best`` (to the largest tokens per call among the entries proved lossless),
    ``tv`` when lossy; or ``skipped`` with the reason.
    """
    from .trees import load_tree_spec

    loaded = load_tree_spec(spec)
    pair, m, ctx = loaded["pair"], loaded["m"], loaded["context"]
    branching = _shape(loaded["verifier"])
    if not branching:
        raise InvalidInput("compare --tree: the spec drafts no tokens (gamma = 0)")
    entries = []
    for name, group, make in sequence_methods(branching):
        entry: dict[str, Any] = {"method": name, "group": group}
        try:
            verifier = make()
            proof = prove_sequence(verifier, pair, m, ctx, max_paths=max_paths)
        except (InvalidInput, TooLarge, Undecided) as err:
            entry["skipped"] = str(err)
            entries.append(entry)
            continue
        tpc = proof.tokens_per_call
        entry.update({"verifier": verifier.describe(), "drafted": verifier.drafted,
                      "lossless": proof.lossless,
                      "verdict": verdict_of(proof.lossless, proof.lossless),
                      "tokens_per_call": tpc, "paths": proof.paths})
        if not proof.lossless:
            entry["tv"] = exact_str(proof.tv)
            entry["tv_float"] = float(proof.tv)
        entries.append(entry)
    proved = [e for e in entries if e.get("lossless")]
    best = max((e["tokens_per_call"] for e in proved), default=None)
    for e in entries:
        if "tokens_per_call" not in e:
            continue
        tpc = e["tokens_per_call"]
        e["tokens_per_call"] = exact_str(tpc)
        e["tokens_per_call_float"] = float(tpc)
        ratio = None if best is None else Fraction(tpc) / best
        e["ratio_to_best"] = None if ratio is None else exact_str(ratio)
        e["ratio_to_best_float"] = None if ratio is None else float(ratio)
    return {
        "kind": "exactspec-tree-compare",
        "labels": [str(t) for t in pair.labels],
        "context": context_key(ctx),
        "m": m,
        "branching": list(branching),
        "best_lossless": [e["method"] for e in proved
                          if Fraction(e["tokens_per_call"]) == best],
        "best_tokens_per_call": None if best is None else exact_str(best),
        "best_tokens_per_call_float": None if best is None else float(best),
        "methods": entries,
    }


def sequence_compare_text(report: dict) -> str:
    """The report as two tables: the lossless methods, then those lossy by design (the text
    says PROVED or REFUTED, the multi-position routes' words for the JSON ``verdict``)."""
    def table(rows, header):
        widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
        return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()
                         for r in [header] + rows)

    lossless, lossy = [], []
    for e in report["methods"]:
        if "skipped" in e:
            row = [e["method"], "", "skipped", "", e["skipped"]]
        else:
            last = e["ratio_to_best"] or "-"
            word = "PROVED" if e["lossless"] else "REFUTED"
            row = [e["method"], str(e["drafted"]), word, e["tokens_per_call"],
                   last if e["group"] == "lossless" else e["tv"]]
        (lossless if e["group"] == "lossless" else lossy).append(row)
    ctx = report["context"] or '""'
    lines = [f"shape {report['branching']}, context {ctx}, m = {report['m']}, labels "
             f"{', '.join(report['labels'])}; best lossless: "
             f"{', '.join(report['best_lossless'])} ({report['best_tokens_per_call']} tokens "
             "per call)",
             table(lossless, ["method", "drafted", "verdict", "tokens/call", "ratio to best"])]
    if lossy:
        lines += ["", "lossy by design (tv = TV of the first m tokens' law to the target's):",
                  table(lossy, ["method", "drafted", "verdict", "tokens/call", "tv"])]
    return "\n".join(lines)


#: The node-by-node tree rules Traversal Verification is set against: ``(rule, drafts)``.
TREE_COMPARISON_RULES = (("rrs", None), ("rrs-wor", None), ("optimal", None),
                         ("optimal", "wor"))


def tree_comparison(pairs, branching, ctx=(), rules=TREE_COMPARISON_RULES) -> list[dict]:
    """On each pair: the exact tokens per call of Traversal Verification on a tree with this
    ``branching`` beside the node-by-node tree with each rule of ``rules`` (keys
    ``"rrs"``, ``"rrs-wor"``, ``"optimal"``, ``"optimal-wor"``).  Pairs need at least as many
    draftable tokens at every node as the widest level (drafts without replacement)."""
    from .multitoken import tokens_per_call
    from .traversal import Traversal
    from .trees import Tree, node_rule

    rows = []
    for index, pair in enumerate(pairs):
        row = {"instance": index, "pair": pair,
               "traversal": tokens_per_call(Traversal(branching), pair, ctx)}
        for name, drafts in rules:
            rule = node_rule(name, drafts)
            row[rule.name] = tokens_per_call(Tree(branching, rule), pair, ctx)
        rows.append(row)
    return rows
