"""The sweep's Python API for rows held in memory, and its long-form outputs: the same
figures as a dump on disk holding the same rows, one record per method x k, bad arrays
refused with one line."""

from __future__ import annotations

import base64
import json
import re
import struct
import zlib
from html.parser import HTMLParser

import numpy as np
import pytest

pytest.importorskip("dask")

from exactspec.core.errors import InvalidInput  # noqa: E402
from exactspec.sweep import (ArrayDump, sweep, sweep_arrays, tidy_columns,  # noqa: E402
                             tidy_summary, to_dataframe)


class _Tensor:
    """An object that only offers ``__array__`` (as a CPU torch tensor does)."""

    def __init__(self, values):
        self.values = values

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.values, dtype=dtype)


def _logits(seed, n=6, vocab=50):
    rng = np.random.default_rng(seed)
    t = rng.normal(0, 2, (n, vocab)).astype(np.float32)
    return t, (0.8 * t + rng.normal(0, 1, (n, vocab))).astype(np.float32)


def test_arrays_give_the_same_figures_as_a_dump(tmp_path):
    t, d = _logits(1)
    path = tmp_path / "d.npz"
    np.savez(path, target=t, draft=d)
    options = dict(methods="rrs,kseq,key,optimal", logits=True, workers=1)
    on_disk = sweep(str(path), "1,2,4", **options)
    in_memory = sweep_arrays(_Tensor(t), d, "1,2,4", name="pair", **options)
    for name, values in on_disk.table.items():
        assert np.array_equal(values, in_memory.table[name], equal_nan=True), name
    assert in_memory.run["dump"] == "pair" and on_disk.run["dump"] == str(path)
    assert in_memory.run["options"]["k"] == [1, 2, 4]


def test_long_form_and_records():
    t, d = _logits(2, n=4)
    result = sweep_arrays(t, d, [1, 3], methods=["rrs", "optimal"], logits=True, workers=1,
                          position=np.arange(10, 14))
    cols = tidy_columns(result.table, ["rrs", "optimal"])
    assert all(v.size == 4 * 2 * 2 for v in cols.values())
    rrs = cols["method"] == "rrs"
    assert np.array_equal(cols["acceptance"][rrs], result.table["acc_rrs"])
    assert np.array_equal(cols["acceptance"][~rrs], result.table["alpha_star"])
    assert sorted(set(cols["position"].tolist())) == [10, 11, 12, 13]
    summary = tidy_summary(result)
    assert [(r["method"], r["k"]) for r in summary["records"]] == [
        ("rrs", 1), ("optimal", 1), ("rrs", 3), ("optimal", 3)]
    assert {"dump", "options", "exactspec_version", "started_utc",
            "seconds_float"} <= set(summary["run"])
    json.dumps(summary, allow_nan=False)
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(InvalidInput, match="needs pandas"):
            to_dataframe(result)
    else:
        assert len(to_dataframe(result)) == 16


@pytest.mark.parametrize("target, draft, message", [
    (np.zeros(5), np.zeros(5), "shape"),
    (np.zeros((2, 3), dtype=np.int64), np.zeros((2, 3)), "element type"),
    (np.zeros((2, 3)), np.zeros((2, 4)), "shape"),
    (object(), np.zeros((2, 3)), "target"),
])
def test_bad_arrays_are_refused(target, draft, message):
    with pytest.raises(InvalidInput, match=message):
        ArrayDump(target, draft)


def test_estimate_and_progress_line(capsys):
    t, d = _logits(3, n=5)
    sweep_arrays(t, d, [1, 2], methods="rrs,optimal", logits=True, workers=1, progress=True,
                 block_mb=0.0008)
    err = capsys.readouterr().err
    assert "sweep: 5 rows x 50 tokens, 3 blocks: about" in err and "(estimate)" in err
    last = err.split("\r")[-1]
    assert last.startswith("5/5 rows") and "rows/s" in last and "0 s left" in last


# -- pandas and xarray: the same figures, shaped for analysis --------------------------------

def _swept(seed=4, n=5, ks=(1, 2, 4), methods="rrs,kseq,key,optimal"):
    t, d = _logits(seed, n=n)
    return sweep_arrays(t, d, list(ks), methods=methods, logits=True, workers=1,
                        position=np.arange(100, 100 + n), name="pair-4")


def test_dataframe_one_row_per_position_method_k():
    pandas = pytest.importorskip("pandas")
    result = _swept()
    frame = to_dataframe(result)
    assert isinstance(frame, pandas.DataFrame)
    assert len(frame) == 5 * 4 * 3
    assert list(frame.columns) == ["position", "row", "k", "method", "acceptance",
                                   "tokens_per_call", "alpha_star", "alpha_one"]
    assert not frame.duplicated(["position", "method", "k"]).any()
    table = result.table
    for m, name in (("rrs", "acc_rrs"), ("kseq", "acc_kseq"), ("key", "acc_key"),
                    ("optimal", "alpha_star")):
        for k in (1, 2, 4):
            got = frame[(frame.method == m) & (frame.k == k)].sort_values("position")
            at = table["k"] == k
            assert got["position"].tolist() == table["position"][at].tolist()
            assert np.array_equal(got["acceptance"].to_numpy(), table[name][at])
    # the summary's means are the DataFrame's group means (floats summed in another order)
    means = frame.groupby(["method", "k"])["acceptance"].mean()
    for entry in result.summary["methods"]:
        assert means[(entry["method"], entry["k"])] == pytest.approx(
            entry["acceptance_mean_float"], rel=0, abs=1e-15)


def test_dataset_dims_position_method_k():
    pytest.importorskip("xarray")
    from exactspec.sweep import to_dataset

    result = _swept()
    ds = to_dataset(result)
    assert ds["acceptance"].dims == ("position", "method", "k")
    assert ds.sizes == {"position": 5, "method": 4, "k": 3}
    assert ds["position"].values.tolist() == [100, 101, 102, 103, 104]
    assert ds["row"].values.tolist() == [0, 1, 2, 3, 4]
    assert ds["method"].values.tolist() == ["rrs", "kseq", "key", "optimal"]
    table = result.table
    for k in (1, 2, 4):
        at = table["k"] == k
        assert np.array_equal(ds["acceptance"].sel({"method": "kseq", "k": k}).values,
                              table["acc_kseq"][at])
        assert np.array_equal(ds["alpha_star"].sel(k=k).values, table["alpha_star"][at])
        assert np.array_equal(ds["gap_rrs"].sel(k=k).values, table["gap_rrs"][at])
        assert np.array_equal(ds["tokens_per_call"].sel({"method": "rrs", "k": k}).values,
                              table["tokens_per_call_rrs"][at])
    assert np.array_equal(ds["alpha_one"].values, table["alpha_one"][table["k"] == 1])
    assert ds.attrs["dump"] == "pair-4" and json.loads(ds.attrs["options"])["k"] == [1, 2, 4]
    # the Dataset and the DataFrame hold the same figures, cell for cell
    pytest.importorskip("pandas")
    long = ds["acceptance"].to_dataframe().reset_index()
    frame = to_dataframe(result)
    merged = frame.merge(long, on=["position", "method", "k"], suffixes=("", "_ds"))
    assert len(merged) == len(frame)
    assert np.array_equal(merged["acceptance"].to_numpy(), merged["acceptance_ds"].to_numpy())


# -- the HTML report: well-formed, self-contained, every figure in a table -------------------

class _Page(HTMLParser):
    """Checks nesting and gathers cells, images and every attribute value."""

    VOID = {"meta", "img", "br", "hr", "link", "input"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.values, self.texts = [], [], [], []
        self.images, self.attributes, self.title, self._in = [], [], "", None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.attributes.extend(v for v in attrs.values() if v)
        if tag == "img":
            self.images.append(attrs.get("src", ""))
        if tag == "td" and "data-value" in attrs:
            self.values.append(attrs["data-value"])
        if tag not in self.VOID:
            self.stack.append(tag)
        self._in = tag

    def handle_endtag(self, tag):
        self._in = None
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
        else:
            self.stack.pop()

    def handle_data(self, data):
        if self._in == "title":
            self.title += data
        self.texts.append(data)


def _png_chunks(data: bytes) -> list:
    """The chunk types of a PNG, each chunk's CRC checked."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    i, kinds = 8, []
    while i < len(data):
        (length,) = struct.unpack(">I", data[i:i + 4])
        kind, body = data[i + 4:i + 8], data[i + 8:i + 8 + length]
        (crc,) = struct.unpack(">I", data[i + 8 + length:i + 12 + length])
        assert zlib.crc32(kind + body) == crc, kind
        kinds.append(kind)
        i += 12 + length
    return kinds


def _figures(obj):
    """Every number in a JSON object (``None``, NaN in the summary, included)."""
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _figures(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _figures(v)
    elif obj is None or (isinstance(obj, (int, float)) and not isinstance(obj, bool)):
        yield obj


def test_html_report_is_self_contained_and_shows_every_figure(tmp_path):
    from exactspec.sweep import html_report
    from exactspec.sweep.output import json_ready

    result = _swept(n=6, ks=(1, 2, 3), methods="rrs,key,optimal")
    path = tmp_path / "report.html"
    document = html_report(result, str(path))
    assert path.read_text(encoding="utf-8") == document
    page = _Page()
    page.feed(document)
    page.close()
    assert page.errors == [] and page.stack == []
    assert document.startswith("<!DOCTYPE html>") and page.title == "Sweep of pair-4"
    assert "Sweep of pair-4" in page.texts
    # nothing from the network: no http(s) reference, no script, no external sheet or font
    assert not re.search(r"https?:", document, re.IGNORECASE)
    assert not any(a.startswith(("//", "http")) for a in page.attributes)
    assert "<script" not in document and "<link" not in document and "@import" not in document
    # the plot: one PNG data URI that decodes to a valid image
    assert len(page.images) == 1
    head, _, payload = page.images[0].partition(",")
    assert head == "data:image/png;base64"
    chunks = _png_chunks(base64.b64decode(payload, validate=True))
    assert chunks[0] == b"IHDR" and chunks[-1] == b"IEND" and b"IDAT" in chunks
    # every figure of the JSON summary is a cell, its exact float in data-value
    shown = set(page.values)
    tidy = tidy_summary(result)
    records = tidy["records"]
    assert len(records) == 3 * 3
    wanted = list(_figures(records))
    summary = json_ready(result.summary)
    for key in ("gap_mean_float", "gap_ci95_float", "gap_median_float", "gap_p90_float",
                "gap_max_float", "pooled_rejection_ratio_float", "min_ratio_rrs_float",
                "rho_k_float"):
        wanted += list(_figures(summary[key]))
    wanted += [tidy["run"][key] for key in ("positions", "positions_swept", "vocab",
                                            "seconds_float")]
    wanted += [tidy["run"]["exact_checks"]["rows"]]
    missing = [v for v in wanted if ("null" if v is None else repr(v)) not in shown]
    assert missing == []
    for text in (tidy["run"]["started_utc"], tidy["run"]["exactspec_version"] or "",
                 "rrs", "key", "optimal"):
        assert text in page.texts


def test_cli_writes_the_report_and_the_records(tmp_path, capsys):
    from exactspec.cli import main

    t, d = _logits(5, n=4)
    dump = tmp_path / "pair.npz"
    np.savez(dump, target=t, draft=d)
    report, records = tmp_path / "r.html", tmp_path / "s.json"
    code = main(["sweep", str(dump), "--logits", "--k", "1,2", "--methods", "rrs,optimal",
                 "--workers", "1", "--html", str(report), "--summary-json", str(records),
                 "--json"])
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["html"] == str(report) and printed["summary_json"] == str(records)
    written = json.loads(records.read_text())
    in_memory = sweep_arrays(t, d, [1, 2], methods="rrs,optimal", logits=True, workers=1)
    assert written["records"] == tidy_summary(in_memory)["records"]
    assert written["run"]["dump"] == str(dump) and written["run"]["options"]["k"] == [1, 2]
    page = _Page()
    page.feed(report.read_text(encoding="utf-8"))
    assert page.title == f"Sweep of {dump}" and page.errors == []
    shown = set(page.values)
    assert all(repr(v) in shown for r in written["records"] for v in _figures(r)
               if v is not None)
    # an output that cannot be written is refused before the sweep runs
    code = main(["sweep", str(dump), "--logits", "--html", str(tmp_path / "no" / "r.html")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.endswith("cannot write a file there") and "no/r.html" in err


def test_table_and_plot_written_without_pandas_or_pyplot(tmp_path):
    """The Parquet table and the PNG are written in a fresh interpreter without importing
    pandas (the columns reach pyarrow as buffers) or pyplot (a Figure on the Agg canvas); the
    table reads back equal, NaN included."""
    import subprocess
    import sys
    from pathlib import Path

    code = f"""
import sys
import numpy as np
from exactspec.sweep import sweep_arrays, read_table, write_table, plot
rng = np.random.default_rng(3)
t = rng.normal(0, 2, (5, 40))
r = sweep_arrays(t, 0.8 * t + rng.normal(0, 1, (5, 40)), [1, 4], logits=True, workers=1)
table = dict(r.table, nan_column=np.where(r.table["k"] == 1, np.nan, 0.5))
write_table(table, {str(tmp_path / "t.parquet")!r})
methods = list(dict.fromkeys(e["method"] for e in r.summary["methods"]))
plot(r.table, r.summary, methods, {str(tmp_path / "p.png")!r}, title="five rows")
print("pandas" in sys.modules, "matplotlib.pyplot" in sys.modules)
back = read_table({str(tmp_path / "t.parquet")!r})
same = all(np.array_equal(back[n], np.asarray(v), equal_nan=True) and back[n].dtype == v.dtype
           for n, v in table.items())
print(same)
"""
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False", "True"]
    png = (tmp_path / "p.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert (width, height) == (1210, 462)                # 11 x 4.2 inches at 110 dpi


def test_result_methods_are_the_functions():
    """``SweepResult.to_dataframe()`` and ``.to_dataset()`` give what the functions give, cell
    for cell (the methods are thin calls)."""
    pandas = pytest.importorskip("pandas")
    result = _swept(n=3, ks=(1, 2), methods="rrs,key")
    frame = result.to_dataframe()
    assert isinstance(frame, pandas.DataFrame)
    assert frame.equals(to_dataframe(result))
    assert result.to_dataframe(["key"]).equals(to_dataframe(result, ["key"]))
    assert set(result.to_dataframe(["key"])["method"]) == {"key"}
    pytest.importorskip("xarray")
    from exactspec.sweep import to_dataset

    assert result.to_dataset().identical(to_dataset(result))
    assert result.to_dataset(["rrs"])["method"].values.tolist() == ["rrs"]

