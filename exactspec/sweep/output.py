"""Writing a sweep: the per-position table (Parquet or CSV), the summary as text, the plots.

Parquet is written with pyarrow (``pip install 'exactspec[sweep]'``), CSV with the standard
library; the plots with matplotlib.  Each is imported only when asked for.

>>> import numpy as np
>>> print(json_ready({"a_float": np.float64("nan"), "b": [np.int64(2)]}))
{'a_float': None, 'b': [2]}
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from ..core.errors import InvalidInput

__all__ = ["write_table", "read_table", "json_ready", "summary_text", "plot"]


def json_ready(obj):
    """``obj`` with NumPy scalars as Python numbers and NaN/inf as ``None`` (valid JSON)."""
    if isinstance(obj, dict):
        return {k: json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_ready(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def write_table(table: dict, path) -> str:
    """Write the table to ``path``: ``.parquet`` (pyarrow) or ``.csv``."""
    path = Path(path)
    if path.suffix == ".parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise InvalidInput("writing Parquet needs pyarrow: pip install 'exactspec[sweep]' "
                               "(or write .csv)") from None
        pq.write_table(pa.table({k: np.asarray(v) for k, v in table.items()}), str(path))
    elif path.suffix == ".csv":
        names = list(table)
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(names)
            columns = [np.asarray(table[n]).tolist() for n in names]
            for row in zip(*columns):
                w.writerow([repr(v) if isinstance(v, float) else v for v in row])
    else:
        raise InvalidInput(f"--out {path}: write .parquet or .csv")
    return str(path)


def read_table(path) -> dict:
    """Read a table written by :func:`write_table` back as a dict of NumPy columns."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        t = pq.read_table(str(path))
        return {name: t.column(name).to_numpy() for name in t.column_names}
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    out = {}
    for j, name in enumerate(header):
        values = [r[j] for r in body]
        kind = np.int64 if name in ("row", "position", "k") else np.float64
        out[name] = np.array(values, dtype=kind)
    return out


def summary_text(summary: dict, methods) -> str:
    """The summary as a table for the terminal."""
    ks = summary["k"]
    lines = [f"{summary['positions_swept']} of {summary['positions']} positions, "
             f"|V| = {summary['vocab']} ({summary['dtype']}, "
             f"{'logits' if summary['logits'] else 'probabilities'}), on {summary['scheduler']}"]
    if summary["skipped_rows"]:
        lines.append(f"skipped {len(summary['skipped_rows'])} bad rows, first: position "
                     f"{summary['skipped_rows'][0]['position']}: "
                     f"{summary['skipped_rows'][0]['reason']}")
    head = ["k", "alpha*"] + list(methods)
    rows = []
    for i, k in enumerate(ks):
        row = [str(k), _ci(summary["alpha_star_mean_float"][i],
                           summary["alpha_star_ci95_float"][i])]
        for m in methods:
            entry = next(e for e in summary["methods"] if e["method"] == m and e["k"] == k)
            row.append(_ci(entry["acceptance_mean_float"], entry["acceptance_ci95_float"]))
        rows.append(row)
    lines.append("mean acceptance (95% CI) by k:")
    lines.append(_table(rows, head))
    if summary.get("one_draft_mean_float") is not None:
        lines.append(f"one draft: {summary['one_draft_mean_float']:.4f}")
    if summary["gap_mean_float"]:
        head = ["k", "mean gap", "median", "90%", "max", "pooled rej. ratio",
                "min a_RRS/a*", "rho_k"]
        rows = [[str(k), f"{summary['gap_mean_float'][i]:.4f}",
                 f"{summary['gap_median_float'][i]:.4f}", f"{summary['gap_p90_float'][i]:.4f}",
                 f"{summary['gap_max_float'][i]:.4f}",
                 f"{summary['pooled_rejection_ratio_float'][i]:.3f}",
                 f"{summary['min_ratio_rrs_float'][i]:.4f}", f"{summary['rho_k_float'][i]:.4f}"]
                for i, k in enumerate(ks)]
        lines.append("RRS against the optimum (gap = alpha* - alpha_RRS):")
        lines.append(_table(rows, head))
    tp = [e for e in summary["methods"]]
    if tp:
        lines.append(f"tokens per target call, chains of gamma = {summary['gamma']}: " + ", ".join(
            f"{e['method']}@{e['k']} {e['tokens_per_call_mean_float']:.3f}" for e in tp))
    ex = summary["exact_checks"]
    if ex["rows"]:
        lines.append(f"exact spot checks: {ex['rows']} positions, largest difference "
                     f"{ex['max_abs_diff_float']:.2e}")
    lines.append(f"{summary['seconds_float']:.1f} s")
    return "\n".join(lines)


def _ci(mean, ci) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "-"
    return f"{mean:.4f} [{ci[0]:.4f}, {ci[1]:.4f}]"


def _table(rows, header) -> str:
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    return "\n".join("  ".join(str(c).rjust(w) for c, w in zip(r, widths))
                     for r in [header] + rows)


def plot(table: dict, summary: dict, methods, path) -> str:
    """Two panels: the distribution of RRS's gap per ``k``, and mean acceptance against ``k``
    for each method with its 95% interval (and ``alpha*``)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InvalidInput("--plot needs matplotlib: pip install 'exactspec[sweep]'") from None
    ks = summary["k"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    if "gap_rrs" in table:
        for k in ks:
            gap = table["gap_rrs"][table["k"] == k]
            left.hist(gap, bins=50, histtype="step", label=f"k = {k}")
        left.set_xlabel("alpha* - alpha_RRS per position")
        left.set_ylabel("positions")
        left.legend(fontsize=8)
        left.set_title("RRS's gap to the optimum")
    else:
        left.set_axis_off()
        left.text(0.5, 0.5, "gap needs --methods with rrs", ha="center")
    right.errorbar(ks, summary["alpha_star_mean_float"],
                   yerr=_half(summary["alpha_star_mean_float"], summary["alpha_star_ci95_float"]),
                   label="alpha*", color="black", linestyle="--", capsize=3)
    for m in methods:
        entries = [next(e for e in summary["methods"] if e["method"] == m and e["k"] == k)
                   for k in ks]
        means = [e["acceptance_mean_float"] for e in entries]
        right.errorbar(ks, means, yerr=_half(means, [e["acceptance_ci95_float"] for e in entries]),
                       marker="o", label=m, capsize=3)
    right.axhline(summary.get("one_draft_mean_float") or 0, color="grey", linewidth=0.8,
                  label="one draft")
    right.set_xscale("log", base=2)
    right.set_xticks(ks, [str(k) for k in ks])
    right.set_xlabel("k (drafts)")
    right.set_ylabel("mean acceptance")
    right.legend(fontsize=8)
    right.set_title(f"{summary['positions_swept']} positions, |V| = {summary['vocab']}")
    fig.tight_layout()
    fig.savefig(str(path), dpi=110)
    plt.close(fig)
    return str(path)


def _half(means, cis):
    return [max(0.0, (m or 0) - (c[0] if c[0] is not None else (m or 0))) for m, c in
            zip(means, cis)]
