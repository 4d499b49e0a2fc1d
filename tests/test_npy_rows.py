"""``@row.npy`` wherever a row is read (``--p``, ``--q``, ``--logits-p``, ``--logits-q``,
``Dist.parse``): a 1-D array's floats are their exact binary values, as a NumPy array given in
Python is; bad files are refused in one line; the size cap of a distribution file holds."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from exactspec.cli import read_logits, main
from exactspec.core.budget import MAX_FILE_BYTES
from exactspec.core.dist import Dist
from exactspec.core.errors import InvalidInput, NotExact, TooLarge


def _save(tmp_path, name, array):
    path = tmp_path / name
    np.save(path, array)
    return str(path)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_rows_are_their_exact_binary_values(tmp_path, dtype):
    row = np.array([0.1, 0.3, 0.6], dtype=dtype)
    path = _save(tmp_path, "p.npy", row)
    read = Dist.parse("@" + path, normalize=True)
    # the same Dist as the array given in Python, and as the exact values normalised by hand
    assert read == Dist(row, normalize=True)
    exact = [Fraction(float(v)) for v in row]
    total = sum(exact)
    assert list(read.probs) == [v / total for v in exact]


def test_integer_rows_and_labels(tmp_path):
    path = _save(tmp_path, "w.npy", np.array([1, 3], dtype=np.int64))
    assert Dist.parse("@" + path, labels="ab", normalize=True) == Dist(
        {"a": Fraction(1, 4), "b": Fraction(3, 4)})


def test_cli_reads_npy_as_it_reads_the_same_values_typed(tmp_path, capsys):
    p = _save(tmp_path, "p.npy", np.array([0.5, 0.25, 0.25], dtype=np.float32))
    q = _save(tmp_path, "q.npy", np.array([0.25, 0.25, 0.5]))
    assert main(["optimal", "--p", "@" + p, "--q", "@" + q, "--k", "2", "--json"]) == 0
    from_files = json.loads(capsys.readouterr().out)
    assert main(["optimal", "--p", "1/2,1/4,1/4", "--q", "1/4,1/4,1/2", "--k", "2",
                 "--json"]) == 0
    typed = json.loads(capsys.readouterr().out)
    assert from_files == typed
    assert main(["verify", "rrs", "--p", "@" + p, "--q", "@" + q, "--k", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["lossless"] is True
    assert main(["optimal", "--p", "@" + p, "--q", "@" + q, "--k", "2", "--backend", "numpy",
                 "--json"]) == 0
    numpy = json.loads(capsys.readouterr().out)
    # the float backend on the files against the exact route on the typed values
    assert abs(numpy["alpha_star_float"] - float(Fraction(typed["alpha_star"]))) < 1e-13


def test_logits_from_npy_are_exact(tmp_path):
    path = _save(tmp_path, "l.npy", np.array([2.0, 0.1, -1.5], dtype=np.float32))
    values, labels = read_logits("@" + path, "logits-p", None)
    assert values == [Fraction(2), Fraction(float(np.float32(0.1))), Fraction(-3, 2)]
    assert labels is None
    big = _save(tmp_path, "big.npy", np.array([0.0, 2e4]))
    with pytest.raises(TooLarge, match="logit"):
        read_logits("@" + big, "logits-p", None)


def test_bad_npy_files_refused_in_one_line(tmp_path, capsys):
    q = "1/3,1/3,1/3"
    bad = {
        "2d.npy": (np.ones((2, 3)) / 3, "shape (2, 3)"),
        "text.npy": (np.array(["a", "b", "c"]), "need float16"),
        "nan.npy": (np.array([np.nan, 0.5, 0.5]), "not a finite number"),
        "empty.npy": (np.zeros(0), "shape (0,)"),
        "obj.npy": (None, "pickled objects are never loaded"),
    }
    for name, (array, words) in bad.items():
        if array is None:
            np.save(tmp_path / name, np.array([{"x": 1}], dtype=object), allow_pickle=True)
        else:
            np.save(tmp_path / name, array)
        code = main(["optimal", "--p", f"@{tmp_path / name}", "--q", q])
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1 and words in err, (name, err)
    (tmp_path / "junk.npy").write_bytes(b"not an array")
    with pytest.raises(InvalidInput, match="not a readable .npy"):
        Dist.parse(f"@{tmp_path / 'junk.npy'}")
    with pytest.raises(NotExact):
        Dist.parse(f"@{tmp_path / 'nan.npy'}")


def test_the_file_size_cap_holds(tmp_path, capsys):
    path = tmp_path / "huge.npy"
    with open(path, "wb") as f:             # a valid header, then past the cap of data
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<f8", "fortran_order": False, "shape": (MAX_FILE_BYTES // 8 + 8,)})
        f.truncate(MAX_FILE_BYTES + 4096)
    with pytest.raises(TooLarge, match="larger than 64 MiB"):
        Dist.parse(f"@{path}")
    code = main(["optimal", "--p", f"@{path}", "--q", "1/2,1/2"])
    assert code == 2 and "larger than 64 MiB" in capsys.readouterr().err
