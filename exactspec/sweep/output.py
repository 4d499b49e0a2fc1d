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
from ..core.files import output_file, output_path
from .figures import column

__all__ = ["write_table", "read_table", "json_ready", "summary_text", "plot", "tidy_columns",
           "to_dataframe", "to_dataset", "tidy_summary"]


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
    """Write the table to ``path``: ``.parquet`` (pyarrow) or ``.csv``, whole or not at all
    (:func:`~exactspec.core.files.output_file`: a temporary file renamed into place)."""
    path = Path(path)
    if path.suffix == ".parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise InvalidInput("writing Parquet needs pyarrow: pip install 'exactspec[sweep]' "
                               "(or write .csv)") from None
        names = list(table)
        with output_path(path, "--out") as temporary:
            pq.write_table(pa.Table.from_arrays([_arrow_column(pa, table[n]) for n in names],
                                                names=names), temporary)
    elif path.suffix == ".csv":
        names = list(table)
        with output_file(path, "--out", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(names)
            columns = [np.asarray(table[n]).tolist() for n in names]
            for row in zip(*columns):
                w.writerow([repr(v) if isinstance(v, float) else v for v in row])
    else:
        raise InvalidInput(f"--out {path}: write .parquet or .csv")
    return str(path)


def _arrow_column(pa, values):
    """A NumPy column as an Arrow array: numbers wrapped without a copy (``from_buffers``,
    which, unlike ``pa.array``, does not import pandas to ask whether the column is one of
    its types); anything else through ``pa.array``."""
    x = np.asarray(values)
    if x.ndim == 1 and x.dtype.kind in "iuf" and x.dtype.isnative:
        x = np.ascontiguousarray(x)
        return pa.Array.from_buffers(pa.from_numpy_dtype(x.dtype), len(x),
                                     [None, pa.py_buffer(x)])
    return pa.array(x)


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


#: Each series of the acceptance panel: colour, marker, line style.  Markers are hollow and
#: of decreasing size, and each series is shifted a little along ``k``, so that series with
#: equal means (KEY's acceptance is ``alpha*``, which the optimum attains too) stay visible.
_STYLES = {"alpha*": ("black", "D", "--", 10), "optimal": ("tab:green", "s", "-", 8.5),
           "key": ("tab:red", "^", "-.", 7), "kseq": ("tab:purple", "v", ":", 6),
           "rrs": ("tab:blue", "o", "-", 5), "rrs-wor": ("tab:orange", "x", (0, (5, 1)), 5)}


def plot(table: dict, summary: dict, methods, path, title: str | None = None) -> str:
    """Two panels: the distribution of RRS's gap per ``k``, and mean acceptance against ``k``
    for each method with its 95% interval (and ``alpha*``); ``title`` (the dump's name) above
    both.  ``path`` is a file name or a binary file object (PNG)."""
    try:                                                 # the figure and Agg canvas only:
        from matplotlib.backends.backend_agg import FigureCanvasAgg   # no pyplot, no GUI
        from matplotlib.figure import Figure
    except ImportError:
        raise InvalidInput("--plot needs matplotlib: pip install 'exactspec[sweep]'") from None
    ks = summary["k"]
    fig = Figure(figsize=(11, 4.2))
    FigureCanvasAgg(fig)
    # fixed margins (inches turned into fractions) in place of a layout engine's search
    fig.subplots_adjust(left=0.065, right=0.985, bottom=0.13, top=0.84 if title else 0.9,
                        wspace=0.2)
    left, right = fig.subplots(1, 2)
    if title:
        fig.suptitle(title, fontsize=11)
    if "gap_rrs" in table:
        dashes = ["-", "--", "-.", ":"]
        for i, k in enumerate(ks):
            gap = table["gap_rrs"][table["k"] == k]
            left.hist(gap, bins=50, histtype="step", label=f"k = {k}",
                      linestyle=dashes[i % len(dashes)], linewidth=1.2 + 0.4 * (i % 2))
        left.set_xlabel("alpha* - alpha_RRS per position")
        left.set_ylabel("positions")
        left.legend(fontsize=8)
        left.set_title("RRS's gap to the optimum")
    else:
        left.set_axis_off()
        left.text(0.5, 0.5, "gap needs --methods with rrs", ha="center")
    series = [("alpha*", summary["alpha_star_mean_float"], summary["alpha_star_ci95_float"])]
    for m in methods:
        entries = [next(e for e in summary["methods"] if e["method"] == m and e["k"] == k)
                   for k in ks]
        series.append((m, [e["acceptance_mean_float"] for e in entries],
                       [e["acceptance_ci95_float"] for e in entries]))
    for i, (name, means, cis) in enumerate(series):
        color, marker, line, size = _STYLES.get(name, ("grey", "o", "-", 5))
        shift = 2 ** (0.05 * (i - (len(series) - 1) / 2))
        right.errorbar([k * shift for k in ks], [np.nan if m is None else m for m in means],
                       yerr=_half(means, cis), label=name, color=color, marker=marker,
                       markersize=size, markerfacecolor="none", linestyle=line, capsize=3)
    right.axhline(summary.get("one_draft_mean_float") or 0, color="grey", linewidth=0.8,
                  linestyle=":", label="one draft")
    right.set_xscale("log", base=2)
    right.set_xticks(ks, [str(k) for k in ks])
    right.set_xlabel("k (drafts)")
    right.set_ylabel("mean acceptance")
    right.legend(fontsize=8)
    right.set_title(f"{summary['positions_swept']} positions, |V| = {summary['vocab']}")
    if hasattr(path, "write"):
        fig.savefig(path, format="png", dpi=110)
    else:
        with output_file(path, "--plot", "wb") as handle:
            fig.savefig(handle, format="png", dpi=110)
    return path if hasattr(path, "write") else str(path)


def _half(means, cis):
    return [max(0.0, (m or 0) - (c[0] if c[0] is not None else (m or 0))) for m, c in
            zip(means, cis)]


def tidy_columns(table: dict, methods) -> dict:
    """The per-position table in long form: one row per position x method x ``k``, with
    columns ``position``, ``row``, ``k``, ``method``, ``acceptance``, ``tokens_per_call``,
    ``alpha_star`` and ``alpha_one`` (NumPy arrays; ``method`` an array of str).

    >>> t = {"row": np.array([0, 0]), "position": np.array([7, 7]), "k": np.array([1, 2]),
    ...      "alpha_star": np.array([0.6, 0.84]), "alpha_one": np.array([0.6, 0.6]),
    ...      "acc_rrs": np.array([0.6, 0.76]), "tokens_per_call_rrs": np.array([1.6, 1.76])}
    >>> cols = tidy_columns(t, ["rrs"])
    >>> cols["method"].tolist(), cols["k"].tolist(), cols["acceptance"].tolist()
    (['rrs', 'rrs'], [1, 2], [0.6, 0.76])
    """
    methods = list(methods)
    n = table["k"].size
    out = {name: np.tile(np.asarray(table[name]), len(methods))
           for name in ("position", "row", "k", "alpha_star", "alpha_one")}
    out["method"] = np.repeat(np.array(methods, dtype=str), n)
    out["acceptance"] = np.concatenate([np.asarray(table[column(m)], dtype=np.float64)
                                        for m in methods]) if methods else np.empty(0)
    out["tokens_per_call"] = np.concatenate(
        [np.asarray(table["tokens_per_call_" + m.replace("-", "_")], dtype=np.float64)
         for m in methods]) if methods else np.empty(0)
    order = ["position", "row", "k", "method", "acceptance", "tokens_per_call",
             "alpha_star", "alpha_one"]
    return {name: out[name] for name in order}


def to_dataframe(result, methods=None):
    """A sweep's per-position figures as a pandas DataFrame in long form
    (:func:`tidy_columns`); needs pandas (in the ``sweep`` extra)."""
    try:
        import pandas
    except ImportError:
        raise InvalidInput("to_dataframe needs pandas: pip install 'exactspec[sweep]'; "
                           "tidy_columns gives the same columns as NumPy arrays") from None
    return pandas.DataFrame(tidy_columns(result.table, _methods_of(result, methods)))


def _methods_of(result, methods):
    if methods is None:
        return list(dict.fromkeys(e["method"] for e in result.summary["methods"]))
    return list(methods)


def to_dataset(result, methods=None):
    """A sweep's figures as an xarray Dataset with dimensions ``position``, ``method`` and
    ``k``: ``acceptance`` and ``tokens_per_call`` over all three, ``alpha_star`` (and
    ``gap_rrs`` where RRS was swept) over ``position`` x ``k``, ``alpha_one`` over
    ``position``; the coordinate ``row`` gives each position's row in the dump, and the
    attributes the run (:func:`tidy_summary`'s ``run``, the options as JSON text).  Select
    with a dict, ``ds.acceptance.sel({"method": "rrs", "k": 4})`` (``sel``'s own ``method``
    argument takes the keyword).  Needs xarray, which exactspec does not install."""
    try:
        import xarray
    except ImportError:
        raise InvalidInput("to_dataset needs xarray (pip install xarray); to_dataframe or "
                           "tidy_columns give the same figures in long form") from None
    import json

    table, methods = result.table, _methods_of(result, methods)
    ks = [int(k) for k in result.summary["k"]]
    rows, at = np.unique(np.asarray(table["row"]), return_inverse=True)
    kat = (np.asarray(table["k"])[:, None] == np.array(ks)[None, :]).argmax(axis=1)

    def grid(name):
        out = np.full((rows.size, len(ks)), np.nan)
        out[at, kat] = np.asarray(table[name], dtype=np.float64)
        return out

    position = np.empty(rows.size, dtype=np.int64)
    position[at] = table["position"]
    data = {
        "acceptance": (("position", "method", "k"),
                       np.stack([grid(column(m)) for m in methods], axis=1)),
        "tokens_per_call": (("position", "method", "k"), np.stack(
            [grid("tokens_per_call_" + m.replace("-", "_")) for m in methods], axis=1)),
        "alpha_star": (("position", "k"), grid("alpha_star")),
        "alpha_one": (("position",), grid("alpha_one")[:, 0]),
    }
    if "gap_rrs" in table:
        data["gap_rrs"] = (("position", "k"), grid("gap_rrs"))
    run = json_ready(dict(result.run))
    attrs = {key: value for key, value in run.items() if isinstance(value, (str, int, float))}
    attrs["options"] = json.dumps(run.get("options"))
    return xarray.Dataset(data, coords={"position": position, "method": methods, "k": ks,
                                        "row": ("position", rows.astype(np.int64))},
                          attrs=attrs)


def tidy_summary(result) -> dict:
    """The summary as records, one per method x ``k`` (mean acceptance and tokens per call
    with their 95% intervals, ``alpha*``'s mean, the one-draft mean, and RRS's gap where
    swept), plus ``run``: the dump, the options, exactspec's version, the start time and the
    seconds taken (JSON-ready)."""
    s = result.summary
    ks = list(s["k"])
    records = []
    for entry in s["methods"]:
        j = ks.index(entry["k"])
        record = dict(entry)
        record["alpha_star_mean_float"] = s["alpha_star_mean_float"][j]
        record["alpha_star_ci95_float"] = s["alpha_star_ci95_float"][j]
        record["one_draft_mean_float"] = s.get("one_draft_mean_float")
        if s.get("gap_mean_float"):
            record["gap_rrs_mean_float"] = s["gap_mean_float"][j]
        records.append(record)
    run = dict(result.run)
    run.update(positions=s["positions"], positions_swept=s["positions_swept"],
               vocab=s["vocab"], dtype=s["dtype"],
               exact_checks=s.get("exact_checks"), skipped_rows=s.get("skipped_rows"))
    return json_ready({"records": records, "run": run})
