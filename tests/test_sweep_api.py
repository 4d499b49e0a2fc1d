"""The sweep's Python API for rows held in memory, and its long-form outputs: the same
figures as a dump on disk holding the same rows, one record per method x k, bad arrays
refused with one line."""

from __future__ import annotations

import json

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
