"""The text of a user's multi-position report (:func:`exactspec.sequences.user.user_report`):
the verdict, the tokens per call, the law of the first ``m`` tokens beside the target, and the
three runs' TVs side by side.
"""

from __future__ import annotations

from fractions import Fraction

__all__ = ["user_text"]


def _elementwise_text(report: dict) -> str:
    library = report.get("elementwise")
    if library is None:
        return ""
    text = " (exp/log correctly rounded" if library == "correct" else \
        f" (exp/log {library}'s {report['arith']}"
    if report.get("sum_order") is not None:
        text += f", long sums {report['sum_order']}"
    return text + ")"


def user_text(report: dict, max_rows: int = 24) -> str:
    """A short summary of :func:`user_report`: verdict, tokens per call, the law of the first
    ``m`` tokens beside the target (the differing sequences first)."""
    if report.get("route") == "factored":
        from .factored import factored_text

        return factored_text(report)
    v = report["verifier"]
    head = (f"user verifier {v['function']} ({'rows of every position, gamma = ' + str(v['gamma']) if v['shape'] == 'rows' else 'whole call'}"
            f"{', stateful' if v['stateful'] else ''}); {report['arith']} arithmetic"
            f"{_elementwise_text(report)}; "
            f"first m = {report['m']} tokens from context '{report['context']}'")
    keys = list(report["target"]) + [k for k in report["law"] if k not in report["target"]]
    differs = report.get("differs", [])
    keys = [k for k in keys if k in differs] + [k for k in keys if k not in differs]
    rows = [[k, report["target"].get(k, "0"), report["law"].get(k, "0"),
             "differs" if k in differs else ""] for k in keys[:max_rows]]
    widths = [max(len(str(r[i])) for r in [["tokens", "target", "law", ""]] + rows)
              for i in range(4)]
    table = "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()
                      for r in [["tokens", "target", "law", ""]] + rows)
    if len(keys) > max_rows:
        more = len(keys) - max_rows
        table += (f"\n... {more:,} more sequence{'s' if more > 1 else ''} (the differing ones "
                  "first; --json lists every one)")
    lines = [head, table,
             f"tokens per call = {report['tokens_per_call']} "
             f"({report['tokens_per_call_float']:.6g}); {report['paths']} paths, "
             f"{report['calls_enumerated']} calls enumerated"]
    verdict = report["verdict"]
    if verdict == "lossless":
        lines.append(f"PROVED: the first {report['m']} tokens follow the target's joint law "
                     "exactly")
    elif verdict == "lossy-rounding":
        lines.append(f"REFUTED (lossy by rounding only): exact arithmetic with ideal uniforms "
                     f"is lossless; TV = {report['bias']} (~{report['bias_float']:.3g})")
    elif verdict == "lossy-grid":
        lines.append(f"REFUTED (lossy by the grid only): exact arithmetic with ideal uniforms "
                     f"is lossless; TV = {report['bias']} (~{report['bias_float']:.3g})")
    else:
        lines.append(f"REFUTED (lossy by logic): TV = {report['bias_exact_arith']}"
                     f"; differs at {', '.join(differs[:8])}")
    if report["arith"] != "exact" or report["grid"] is not None:
        lines.append(_split_line(report))
    if "tolerance" in report and verdict in ("lossy-grid", "lossy-rounding"):
        lines.append(f"tolerance {report['tolerance']}: the bias is "
                     + ("within it" if report["within_tolerance"] else "ABOVE it"))
    return "\n".join(lines)


def _split_line(report: dict) -> str:
    """The TVs of the three runs side by side, as the one-position report prints them."""
    from ..verdict import split_line

    def value(key):
        text = report.get(key)
        return None if text is None else _exact(text)

    return split_line(None if report["arith"] == "exact" else report["arith"], report["grid"],
                      value("bias"), value("bias_exact_arith"), value("bias_grid_only"))


def _exact(text: str):
    """An exact value printed by :func:`~exactspec.core.dist.exact_str` read back (a Fraction, or a sympy number)."""
    try:
        return Fraction(text)
    except ValueError:
        import sympy

        return sympy.sympify(text)
