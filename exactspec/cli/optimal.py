"""``exactspec optimal``: ``alpha*``, ``a*``, the sorted order and the tight prefixes, with
their cross-checks.
"""

from __future__ import annotations

from .float64 import float_command
from .output import emit, aligned_table
from .process import EXIT_OK, EXIT_REFUTED
from .readers import read_pair


def cmd_optimal(args) -> int:
    if args.backend == "numpy":
        return float_command("optimal", args)
    from ..optimum.checks import optimal_report     # not bounds: no methods, no engine
    from ..optimum.closed_form import law_texts

    p, q = read_pair(args)
    obj = optimal_report(p, q, args.k)
    checks = obj["checks"]

    def text() -> str:             # built only when it is what is written (not under --json)
        # one dictionary look-up per token (a list of the tight labels searched per token
        # was quadratic: minutes at 152,064 tokens)
        p_text, q_text = law_texts(p), law_texts(q)     # from the integer rows, if any
        tight = set(obj["tight"])
        rows = [[name, obj["a_star"][name], p_text[name], q_text[name],
                 "tight" if name in tight else ""] for name in obj["order"]]
        verdicts = {True: "agrees", False: "DISAGREES", None: "skipped (too large)"}
        return (f"optimal acceptance for k = {args.k} i.i.d. drafts: alpha* = "
                f"{obj['alpha_star']}\n"
                + aligned_table(rows, ["token (q/p order)", "a*", "p", "q", "prefix"])
                + "\nchecks: "
                + ", ".join(f"{name} {verdicts[ok]}" for name, ok in checks.items())
                + "".join(f"\n  {name} skipped: {why}"
                          for name, why in obj.get("checks_skipped", {}).items()))

    emit(obj, args.json, text)
    bad = any(ok is False for ok in checks.values())
    return EXIT_REFUTED if bad else EXIT_OK
