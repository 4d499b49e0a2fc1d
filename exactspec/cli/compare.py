"""``exactspec compare``: every method side by side against its optimum, or every
sequence-level method on a spec (``--tree``).
"""

from __future__ import annotations

from .float64 import float_command
from .output import emit, aligned_table
from .process import EXIT_OK, UsageError
from .readers import read_pair


def cmd_compare(args) -> int:
    if args.tree is not None:
        if args.p is not None or args.q is not None or args.backend != "exact":
            raise UsageError("compare --tree SPEC takes the model from the spec: no --p, --q "
                             "or --backend numpy")
        from ..sequences.tree_compare import sequence_compare, sequence_compare_text

        report = sequence_compare(args.tree)
        emit(report, args.json, sequence_compare_text(report))
        return EXIT_OK
    if args.p is None or args.q is None:
        raise UsageError("exactspec compare: the following arguments are required: --p, --q "
                         "(or --tree SPEC)")
    if args.backend == "numpy":
        return float_command("compare", args)
    from ..bounds.compare import compare

    p, q = read_pair(args)
    methods = args.methods.split(",") if args.methods else None
    obj = compare(p, q, args.k, methods)
    rows, lossy_rows = [], []
    for m in obj["methods"]:
        by_design = m.get("group") == "lossy-by-design"
        if "skipped" in m:
            blank = [""] if by_design else ["", ""]
            (lossy_rows if by_design else rows).append(
                [m["method"], m.get("draft_law", ""), "skipped", *blank, m["skipped"]])
        elif by_design:
            lossy_rows.append([m["method"], m["draft_law"],
                               "lossless" if m["lossless"] else "LOSSY", m["acceptance"],
                               m["bias"]])
        else:
            rows.append([m["method"], m["draft_law"], "lossless" if m["lossless"] else "LOSSY",
                         m["acceptance"], m["optimum"], m["ratio_to_optimal"] or "-"])
    text = (f"k = {args.k}: alpha* = {obj['alpha_star']} (i.i.d. drafts), a* = "
            + ", ".join(f"{t}: {v}" for t, v in obj["a_star"].items()) + "\n"
            + aligned_table(rows, ["method", "drafts", "verdict", "acceptance", "optimum",
                                   "ratio"]))
    if lossy_rows:
        text += ("\n\nlossy by design (bias = TV(output law, p)):\n"
                 + aligned_table(lossy_rows, ["method", "drafts", "verdict", "acceptance", "bias"]))
    emit(obj, args.json, text)
    return EXIT_OK
