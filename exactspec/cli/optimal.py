"""``exactspec optimal``: ``alpha*``, ``a*``, the sorted order and the tight prefixes, with
their cross-checks.
"""

from __future__ import annotations

from .float64 import float_command
from .output import aligned_columns, emit
from .process import EXIT_OK, EXIT_REFUTED
from .readers import read_pair


def cmd_optimal(args) -> int:
    if args.backend == "numpy":
        return float_command("optimal", args)
    from ..optimum.checks import optimal_report     # not bounds: no methods, no engine
    from ..optimum.closed_form import law_text_row, optimum

    p, q = read_pair(args)
    opt = optimum(p, q, args.k)
    obj = optimal_report(p, q, args.k, opt)
    checks = obj["checks"]

    def text() -> str:             # built only when it is what is written (not under --json)
        # column by column, each token's cells found by its position (texts from the
        # integer rows, if any): one look-up per cell, no search per token
        position = dict(zip(p.labels, range(len(p))))
        in_order = list(map(position.__getitem__, opt.order))
        prefix = [""] * len(p)
        for label in opt.tight:
            prefix[position[label]] = "tight"
        columns = [obj["order"]] + [
            list(map(row.__getitem__, in_order))
            for row in (law_text_row(opt.a_star), law_text_row(p), law_text_row(q), prefix)]
        verdicts = {True: "agrees", False: "DISAGREES", None: "skipped (too large)"}
        return (f"optimal acceptance for k = {args.k} i.i.d. drafts: alpha* = "
                f"{obj['alpha_star']}\n"
                + aligned_columns(columns, ["token (q/p order)", "a*", "p", "q", "prefix"])
                + "\nchecks: "
                + ", ".join(f"{name} {verdicts[ok]}" for name, ok in checks.items())
                + "".join(f"\n  {name} skipped: {why}"
                          for name, why in obj.get("checks_skipped", {}).items()))

    emit(obj, args.json, text)
    bad = any(ok is False for ok in checks.values())
    return EXIT_REFUTED if bad else EXIT_OK
