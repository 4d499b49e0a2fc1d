"""A sweep as one self-contained HTML file (``exactspec sweep --html FILE``): the run, the
summary tables and the plots, with the plots embedded as PNG ``data:`` URIs and the style
inline, so the file opens anywhere with no network access.

Every figure of the tidy summary (:func:`~exactspec.sweep.output.tidy_summary`) is a cell of
a table: the cell shows it to six significant digits and carries its exact float in
``data-value`` (Python's ``repr``, which reads back to the same float).

>>> print(cell(0.123456789), cell(None), cell(3), cell("rrs"), sep="\\n")
<td class="num" data-value="0.123456789">0.123457</td>
<td class="none" data-value="null">n/a</td>
<td class="num" data-value="3">3</td>
<td>rrs</td>
"""

from __future__ import annotations

import base64
import html
import io
import json

from ..core.files import output_file
from .output import plot, tidy_summary

__all__ = ["html_report", "cell"]

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 72em; padding: 0 1em; color: #222; }
h1 { font-size: 1.4em; word-break: break-all; }
h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.none { color: #999; text-align: center; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
p.note { color: #555; font-size: 0.9em; }
"""

#: The columns of the records table, in order, with their headings.
_RECORD_COLUMNS = [
    ("method", "method"), ("k", "k"), ("positions", "positions"),
    ("acceptance_mean_float", "acceptance"), ("acceptance_ci95_float", "95% CI"),
    ("tokens_per_call_mean_float", "tokens per call"),
    ("tokens_per_call_ci95_float", "95% CI"),
    ("alpha_star_mean_float", "alpha*"), ("alpha_star_ci95_float", "95% CI"),
    ("one_draft_mean_float", "one draft"), ("gap_rrs_mean_float", "RRS's gap"),
]

_GAP_COLUMNS = [
    ("gap_mean_float", "mean gap"), ("gap_ci95_float", "95% CI"),
    ("gap_median_float", "median"), ("gap_p90_float", "90th percentile"),
    ("gap_max_float", "max"), ("pooled_rejection_ratio_float", "pooled rejection ratio"),
    ("min_ratio_rrs_float", "min alpha_RRS / alpha*"), ("rho_k_float", "rho_k"),
]


def cell(value) -> str:
    """One table cell: a number to six significant digits with its exact value in
    ``data-value``, ``None`` (NaN in the summary) as n/a, text escaped."""
    if value is None:
        return '<td class="none" data-value="null">n/a</td>'
    if isinstance(value, bool):
        return f"<td>{'yes' if value else 'no'}</td>"
    if isinstance(value, int):
        return f'<td class="num" data-value="{value}">{value}</td>'
    if isinstance(value, float):
        return f'<td class="num" data-value="{value!r}">{value:.6g}</td>'
    return f"<td>{html.escape(str(value))}</td>"


def _is_interval(value) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(
        v is None or isinstance(v, (int, float)) for v in value)


def _cells(value, interval: bool = False) -> str:
    """A value as cells: in an interval column two cells (low, high), else one (lists and
    objects as JSON text)."""
    if interval:
        low, high = value if _is_interval(value) else (None, None)
        return cell(low) + cell(high)
    if isinstance(value, (list, dict)):
        return cell(json.dumps(value))
    return cell(value)


def _table(columns, rows, caption) -> str:
    """A table of dicts ``rows`` over ``columns`` (keys missing from every row dropped); a
    column whose values are intervals ``[low, high]`` spans two cells."""
    columns = [(k, label) for k, label in columns if any(k in r for r in rows)]
    if not rows or not columns:
        return ""
    interval = {k: any(_is_interval(r.get(k)) for r in rows) for k, _ in columns}
    head = "".join(f'<th colspan="2">{html.escape(label)} (low, high)</th>' if interval[k]
                   else f"<th>{html.escape(label)}</th>" for k, label in columns)
    body = "".join("<tr>" + "".join(_cells(r.get(k), interval[k]) for k, _ in columns)
                   + "</tr>" for r in rows)
    return (f"<table><caption>{html.escape(caption)}</caption><tr>{head}</tr>{body}"
            "</table>")


def _key_values(pairs, caption) -> str:
    body = "".join(f"<tr><th>{html.escape(str(k))}</th>{_cells(v)}</tr>" for k, v in pairs)
    return f"<table><caption>{html.escape(caption)}</caption>{body}</table>"


def html_report(result, path=None, methods=None, title: str | None = None) -> str:
    """The report of a sweep as one HTML document; written to ``path`` when given.

    Parameters
    ----------
    result : SweepResult
        What :func:`~exactspec.sweep.engine.sweep` returned.
    path : str, optional
        Where to write the file.
    methods : list of str, optional
        The methods to show (default: every method swept).
    title : str, optional
        The plot's and the page's title (default: the dump's name).

    Returns
    -------
    str
        The document.
    """
    s = result.summary
    tidy = tidy_summary(result)
    run = tidy["run"]
    if methods is None:
        methods = list(dict.fromkeys(e["method"] for e in s["methods"]))
    name = title or str(run.get("dump"))
    png = io.BytesIO()
    plot(result.table, s, methods, png, title=name)
    image = base64.b64encode(png.getvalue()).decode("ascii")
    options = run.get("options") or {}
    facts = [("dump", run.get("dump")), ("positions", run.get("positions")),
             ("positions swept", run.get("positions_swept")), ("vocabulary", run.get("vocab")),
             ("stored type", run.get("dtype")), ("exactspec version", run.get("exactspec_version")),
             ("started (UTC)", run.get("started_utc")), ("seconds", run.get("seconds_float")),
             ("scheduler", s.get("scheduler")), ("blocks", s.get("blocks"))]
    gap_rows = [{key: s[key][i] for key, _ in _GAP_COLUMNS if len(s.get(key) or []) > i}
                | {"k": k} for i, k in enumerate(s["k"])] if s.get("gap_mean_float") else []
    checks = run.get("exact_checks") or {}
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>Sweep of {html.escape(name)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>Sweep of {html.escape(name)}</h1>",
        f'<p class="note">{run.get("positions_swept")} of {run.get("positions")} positions, '
        f"|V| = {run.get('vocab')}; methods {html.escape(', '.join(methods))}; "
        f"k = {html.escape(', '.join(str(k) for k in s['k']))}. Means with 95% intervals "
        "(normal approximation over positions).</p>",
        "<h2>Mean acceptance by method and k</h2>",
        _table(_RECORD_COLUMNS, tidy["records"], "one record per method and k"),
    ]
    if gap_rows:
        parts += ["<h2>RRS against the optimum</h2>",
                  '<p class="note">gap = alpha* - alpha_RRS per position; rho_k is the tight '
                  "bound on alpha_RRS / alpha*.</p>",
                  _table([("k", "k")] + _GAP_COLUMNS, gap_rows, "by k")]
    parts += [
        "<h2>Plots</h2>",
        f'<figure><img alt="Sweep of {html.escape(name)}: RRS gap distribution and mean '
        f'acceptance against k" src="data:image/png;base64,{image}">'
        f"<figcaption>Left: RRS's gap per position for each k. Right: mean acceptance "
        "against k with 95% intervals; series are shifted slightly along k so that equal "
        "means stay visible.</figcaption></figure>",
        "<h2>Run</h2>",
        _key_values(facts, "what ran"),
        _key_values(sorted(options.items()), "options"),
    ]
    if checks.get("rows"):
        parts.append(_key_values(
            [("positions checked exactly", checks.get("rows")),
             ("largest difference", checks.get("max_abs_diff_float"))]
            + sorted((f"difference in {k}", v)
                     for k, v in (checks.get("columns_float") or {}).items()),
            "exact spot checks"))
    skipped = run.get("skipped_rows") or []
    if skipped:
        parts.append(_table([("position", "position"), ("reason", "reason")], skipped,
                            f"{len(skipped)} rows skipped"))
    parts.append("</body></html>")
    document = "\n".join(p for p in parts if p) + "\n"
    if path is not None:                     # whole or not at all: renamed into place
        with output_file(path, "--html", "w", encoding="utf-8") as f:
            f.write(document)
    return document
