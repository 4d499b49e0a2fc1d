"""Sweeps over dumps: every format read alike, per-position figures against the exact engine on
every row, the Dask cluster against the local scheduler, bad dumps refused in one line.

Floats are the subject here: the sweep's figures are float64, compared with exact values on the
very same float rows (converted without loss) within the backend's stated tolerances
(``1e-13`` for ``alpha*``, RRS and one draft; ``1e-11`` for K-SEQ, which runs at a ``rho``
within ``1e-12`` of ``rho*`` in the exact twin).
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("dask")

from exactspec import verify  # noqa: E402
from exactspec.bounds.closed_forms import kseq_acceptance  # noqa: E402
from exactspec.cli import main  # noqa: E402
from exactspec.core.dist import Dist, overlap  # noqa: E402
from exactspec.methods.kseq import rho_star  # noqa: E402
from exactspec.numpy_backend.twins import (agrees, exact_pair, optimum_exact,  # noqa: E402
                                           rrs_acceptance_exact)
from exactspec.sweep import open_dump, read_table, sweep  # noqa: E402
from exactspec.sweep.exact_check import (integer_row, overlap_integer,  # noqa: E402
                                         rrs_acceptance_integer)
from exactspec.sweep.figures import kseq_float  # noqa: E402
from exactspec.sweep.rows import probabilities, top_p_cut  # noqa: E402

POSITIONS, VOCAB = 12, 40
KS = (1, 2, 3)


def logits_pair(positions=POSITIONS, vocab=VOCAB, seed=0):
    rng = np.random.default_rng(seed)
    target = (2.0 * rng.normal(size=(positions, vocab))).astype(np.float32)
    draft = (target + rng.normal(size=(positions, vocab))).astype(np.float32)
    return target, draft


def softmax(x, temperature=1.0):
    z = np.asarray(x, dtype=np.float64) / temperature
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def write_safetensors(path, arrays: dict, bf16: bool = False):
    """A safetensors file written by hand (the format: 8-byte header size, JSON, raw data)."""
    header, blobs, offset = {}, [], 0
    for name, arr in arrays.items():
        if bf16:
            raw = (np.asarray(arr, dtype=np.float32).view(np.uint32) >> 16).astype("<u2")
            dtype = "BF16"
        else:
            raw = np.ascontiguousarray(arr)
            dtype = {"float16": "F16", "float32": "F32", "float64": "F64"}[raw.dtype.name]
        data = raw.tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def make_dump(tmp_path, fmt, target, draft, **extra):
    arrays = {"target": target, "draft": draft, **extra}
    if fmt == "npz":
        path = tmp_path / "d.npz"
        np.savez(path, **arrays)
    elif fmt == "npz-compressed":
        path = tmp_path / "dc.npz"
        np.savez_compressed(path, **arrays)
    elif fmt == "npy-dir":
        path = tmp_path / "npy"
        path.mkdir()
        for name, arr in arrays.items():
            np.save(path / f"{name}.npy", arr)
    elif fmt == "safetensors":
        from safetensors.numpy import save_file

        path = tmp_path / "d.safetensors"
        save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, str(path))
    elif fmt in ("zarr", "zarr2"):
        import zarr

        path = tmp_path / "d.zarr"
        group = zarr.open_group(str(path), mode="w", zarr_format=3 if fmt == "zarr" else 2)
        for name, arr in arrays.items():
            chunks = (5,) + arr.shape[1:] if arr.ndim == 2 else (5,)
            group.create_array(name, data=arr, chunks=chunks)
    else:
        raise ValueError(fmt)
    return str(path)


FORMATS = ["npz", "npz-compressed", "npy-dir", "safetensors", "zarr", "zarr2"]


def test_stored_npz_rows_read_by_seeking_in_the_file(tmp_path):
    """A stored ``.npz`` member is read at its bytes' place in the file (its local header
    parsed), a compressed one through the zip stream; both give ``np.load``'s rows."""
    import zipfile

    from exactspec.sweep.dump import _stored_start

    target, draft = logits_pair()
    stored = make_dump(tmp_path, "npz", target, draft)
    compressed = make_dump(tmp_path, "npz-compressed", target, draft)
    with zipfile.ZipFile(stored) as zf:
        member = zf.read("draft.npy")
        zf.fp.seek(_stored_start(zf, "draft.npy"))
        assert zf.fp.read(len(member)) == member
    with zipfile.ZipFile(compressed) as zf:
        assert _stored_start(zf, "draft.npy") is None
    for path in (stored, compressed):
        dump = open_dump(path)
        for lo, hi in ((0, 1), (5, 12), (POSITIONS - 1, POSITIONS)):
            t, d = dump.read(lo, hi)
            assert np.array_equal(t, target[lo:hi]) and np.array_equal(d, draft[lo:hi])


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_reads_the_same_rows(tmp_path, fmt):
    target, draft = logits_pair()
    dump = open_dump(make_dump(tmp_path, fmt, target, draft))
    assert (dump.positions, dump.vocab, dump.dtype) == (POSITIONS, VOCAB, "float32")
    t, d = dump.read(3, 9)
    assert np.array_equal(t, target[3:9]) and np.array_equal(d, draft[3:9])
    assert dump.position_ids(3, 5).tolist() == [3, 4]


def test_float16_and_bfloat16_rows(tmp_path):
    target, draft = logits_pair()
    path = make_dump(tmp_path, "safetensors", target.astype(np.float16),
                     draft.astype(np.float16))
    t, _ = open_dump(path).read(0, 2)
    assert t.dtype == np.float16 and np.array_equal(t, target[:2].astype(np.float16))
    path = tmp_path / "bf.safetensors"
    write_safetensors(path, {"target": target, "draft": draft}, bf16=True)
    dump = open_dump(path)
    assert dump.dtype == "bfloat16"
    t, _ = dump.read(0, 2)
    truncated = (target[:2].view(np.uint32) & 0xFFFF0000).view(np.float32)
    assert np.array_equal(t, truncated)                 # bfloat16 widened exactly


def test_position_metadata(tmp_path):
    target, draft = logits_pair()
    names = np.arange(100, 100 + POSITIONS, dtype=np.int64)
    dump = open_dump(make_dump(tmp_path, "npz", target, draft, position=names))
    assert dump.has_position and dump.position_ids(2, 4).tolist() == [102, 103]


# -- per-position figures against the exact engine -----------------------------------------

def exact_rows(P, Q, k):
    """Each figure of one row exactly, by the Fraction twins (not the sweep's integer code)."""
    p, q = exact_pair(P, Q)
    return {"alpha_one": overlap(p, q), "alpha_star": optimum_exact(p, q, k).alpha_star,
            "acc_rrs": rrs_acceptance_exact(p, q, k),
            "acc_kseq": kseq_acceptance(p, q, k, rho_star(p, q, k).rho)}


TOL = {"alpha_one": 1e-14, "alpha_star": 1e-13, "acc_optimal": 1e-13, "acc_key": 1e-12,
       "acc_rrs": 1e-13, "acc_kseq": 1e-11}


@pytest.mark.slow
def test_every_row_against_the_exact_engine(tmp_path):
    target, draft = logits_pair()
    result = sweep(make_dump(tmp_path, "zarr", target, draft), KS, logits=True,
                   temperature=0.7, exact_sample=2)
    table = result.table
    assert table["row"].size == POSITIONS * len(KS)
    P, Q = softmax(target, 0.7), softmax(draft, 0.7)
    for i in range(table["row"].size):
        row, k = int(table["row"][i]), int(table["k"][i])
        exact = exact_rows(P[row], Q[row], k)
        exact["acc_optimal"] = exact["acc_key"] = exact["alpha_star"]
        for name, value in exact.items():
            # the sweep's own softmax rows differ from these by a few ulps
            assert agrees(table[name][i], value, TOL[name] + 1e-14), (name, row, k)
        assert table["gap_rrs"][i] == table["alpha_star"][i] - table["acc_rrs"][i]
    checks = result.exact_checks
    assert checks["rows"] == 2 and checks["max_abs_diff_float"] < 1e-11
    assert set(checks["columns_float"]) == {"alpha_one", "alpha_star", "acc_optimal",
                                           "acc_key", "acc_rrs", "acc_kseq"}


def test_integer_twins_equal_the_fraction_twins():
    rng = np.random.default_rng(4)
    for _ in range(5):
        p, q = rng.random(30) ** 6, rng.random(30) ** 6
        q[3] = 0.0
        Np, Sp = integer_row(p)
        Nq, Sq = integer_row(q)
        total = sum(Fraction(float(y)) for y in p)
        assert [Fraction(a, Sp) for a in Np] == [Fraction(float(x)) / total for x in p]
        P, Q = exact_pair(p, q)
        assert overlap_integer(Np, Sp, Nq, Sq) == overlap(P, Q)
        for k in (1, 2, 4):
            assert rrs_acceptance_integer(Np, Sp, Nq, Sq, k) == rrs_acceptance_exact(P, Q, k)


def test_kseq_float_against_exact():
    p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
    for k in (1, 2, 3, 5):
        exact = kseq_acceptance(p, q, k, rho_star(p, q, k).rho)
        value = kseq_float(np.array([[0.5, 0.3, 0.2]]), np.array([[0.2, 0.2, 0.6]]), k)[0]
        assert agrees(value, exact, 1e-11)


def test_rrs_wor_estimate_against_exact_enumeration(tmp_path):
    P = np.array([[0.5, 0.3, 0.15, 0.05]])
    Q = np.array([[0.2, 0.2, 0.3, 0.3]])
    path = make_dump(tmp_path, "npz", P, Q)
    result = sweep(path, [2], methods="rrs-wor,rrs", samples=20_000, seed=3)
    exact = verify("rrs-wor", Dist([Fraction(v).limit_denominator(100) for v in P[0]]),
                   Dist([Fraction(v).limit_denominator(100) for v in Q[0]]), 2).acceptance
    est, se = result.table["acc_rrs_wor"][0], result.table["acc_rrs_wor_se"][0]
    assert abs(est - float(exact)) < 5 * se          # 5 standard errors
    assert result.table["acc_rrs_wor"][0] > result.table["acc_rrs"][0] - 5 * se


def test_probabilities_and_logits_agree(tmp_path):
    target, draft = logits_pair(6, 25, seed=2)
    a = sweep(make_dump(tmp_path, "npz", target, draft), [2], logits=True, temperature=2.0)
    sub = tmp_path / "p"
    sub.mkdir()
    b = sweep(make_dump(sub, "npy-dir", softmax(target, 2.0), softmax(draft, 2.0)), [2])
    assert np.allclose(a.table["alpha_star"], b.table["alpha_star"], rtol=0, atol=1e-13)
    assert np.allclose(a.table["acc_rrs"], b.table["acc_rrs"], rtol=0, atol=1e-13)


def test_top_p():
    cut = top_p_cut(np.array([[0.5, 0.25, 0.25]]), 0.75)[0]
    for value, exact in zip(cut, (Fraction(2, 3), Fraction(1, 3), Fraction(0))):
        assert agrees(value, exact, 2 ** -53)          # the token reaching 0.75 stays
    P, bad = probabilities(np.log(np.array([[0.5, 0.2, 0.3]])), logits=True, top_p=0.5)
    assert bad == [] and P.tolist() == [[1.0, 0.0, 0.0]]


# -- Dask: a cluster started here against the local scheduler --------------------------------

def test_local_cluster_matches_the_local_scheduler(tmp_path):
    from distributed import Client, LocalCluster

    target, draft = logits_pair()
    path = make_dump(tmp_path, "safetensors", target, draft)
    local = sweep(path, KS, logits=True, block_mb=0.001, exact_sample=1)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        on_cluster = sweep(path, KS, logits=True, block_mb=0.001, client=client,
                           exact_sample=1)
        assert on_cluster.summary["blocks"] > 2
        for name, values in local.table.items():
            assert np.array_equal(values, on_cluster.table[name], equal_nan=True), name
        assert on_cluster.exact_checks == local.exact_checks
        code = main(["sweep", path, "--logits", "--k", "2", "--json",
                     "--scheduler", cluster.scheduler_address])
        assert code == 0
        # the claims on the same engine: same verdicts and certificates as run here
        from exactspec.claims import get_claim
        from exactspec.sweep.prove import run_claims

        remote = run_claims(["top1-lossy"], client=client)
        for claim, result in remote:
            here = get_claim(claim.name).run()
            assert (result.verdict, result.certificate) == (here.verdict, here.certificate)
        assert [r.verdict for _, r in remote] == ["PROVED"]


def _records(summary_file):
    with open(summary_file) as f:
        return json.load(f)["records"]


@pytest.mark.slow
def test_process_cluster_matches_the_local_run_and_the_in_memory_api(tmp_path, capsys):
    """``exactspec sweep --scheduler`` on two worker processes: the same per-position table
    (CSV, floats written by repr), the same summary and records as the local run, and as
    :func:`sweep_arrays` on the same rows in memory."""
    import os

    from distributed import Client, LocalCluster

    from exactspec.sweep import sweep_arrays, tidy_summary

    target, draft = logits_pair()
    path = make_dump(tmp_path, "npz", target, draft)
    argv = ["sweep", path, "--logits", "--k", "1,2,3", "--block-mb", "0.001",
            "--exact-sample", "2", "--json"]
    out = {name: (tmp_path / f"{name}.csv", tmp_path / f"{name}.json")
           for name in ("local", "cluster")}
    assert main(argv + ["--out", str(out["local"][0]), "--summary-json",
                        str(out["local"][1])]) == 0
    local = json.loads(capsys.readouterr().out)
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                      dashboard_address=None) as cluster:
        with Client(cluster) as client:
            pids = set(client.run(os.getpid).values())
        assert len(pids) == 2 and os.getpid() not in pids          # two other processes
        assert main(argv + ["--scheduler", cluster.scheduler_address, "--out",
                            str(out["cluster"][0]), "--summary-json",
                            str(out["cluster"][1])]) == 0
        remote = json.loads(capsys.readouterr().out)
    assert remote["blocks"] == local["blocks"] > 2
    assert remote["scheduler"].startswith("tcp://") and local["scheduler"].startswith("local")
    in_memory = sweep_arrays(target, draft, "1,2,3", logits=True, block_mb=0.001,
                             exact_sample=2, workers=1)
    tables = [read_table(out[name][0]) for name in ("local", "cluster")]
    assert set(tables[0]) == set(tables[1]) == set(in_memory.table)
    for name, values in in_memory.table.items():
        for table in tables:
            assert np.array_equal(table[name], values, equal_nan=True), name
    varying = {"seconds_float", "scheduler", "out", "summary_json"}
    assert {k: v for k, v in remote.items() if k not in varying} == \
        {k: v for k, v in local.items() if k not in varying}
    assert _records(out["cluster"][1]) == _records(out["local"][1]) == \
        tidy_summary(in_memory)["records"]
    assert local["exact_checks"]["rows"] == 2 and remote["exact_checks"] == local["exact_checks"]


# -- the command line ----------------------------------------------------------------------

@pytest.mark.slow
def test_cli_json_contract_and_outputs(tmp_path, capsys):
    target, draft = logits_pair()
    path = make_dump(tmp_path, "npz", target, draft)
    out, png = tmp_path / "r.parquet", tmp_path / "r.png"
    code = main(["sweep", path, "--logits", "--k", "1,2", "--exact-sample", "2", "--json",
                 "--out", str(out), "--plot", str(png)])
    captured = capsys.readouterr()
    assert code == 0
    obj = json.loads(captured.out)
    for key in ("positions", "vocab", "k", "methods", "alpha_star_mean_float",
                "gap_mean_float", "exact_checks"):
        assert key in obj
    assert obj["positions"] == POSITIONS and obj["vocab"] == VOCAB and obj["k"] == [1, 2]
    entry = obj["methods"][0]
    assert {"method", "k", "acceptance_mean_float", "acceptance_ci95_float"} <= set(entry)
    assert len(obj["alpha_star_mean_float"]) == 2 and len(obj["gap_mean_float"]) == 2
    assert obj["exact_checks"]["rows"] == 2
    assert obj["exact_checks"]["max_abs_diff_float"] < 1e-11
    table = read_table(out)
    assert table["row"].size == POSITIONS * 2
    mean_rrs2 = table["acc_rrs"][table["k"] == 2].mean()
    got = next(e for e in obj["methods"] if e["method"] == "rrs" and e["k"] == 2)
    assert got["acceptance_mean_float"] == pytest.approx(mean_rrs2, abs=1e-15)
    assert png.stat().st_size > 1000
    csv = tmp_path / "r.csv"
    assert main(["sweep", path, "--logits", "--k", "2", "--out", str(csv)]) == 0
    back = read_table(csv)
    assert np.array_equal(back["acc_rrs"], table["acc_rrs"][table["k"] == 2])


def _error(capsys, argv):
    code = main(argv)
    err = capsys.readouterr().err.strip()
    return code, err


def test_bad_dumps_give_one_line_errors(tmp_path, capsys):
    target, draft = logits_pair()
    cases = []
    (tmp_path / "a").mkdir()
    cases.append((make_dump(tmp_path / "a", "npz", target, draft[:, :30]), "shape"))
    np.savez(tmp_path / "missing.npz", target=target, other=draft)
    cases.append((str(tmp_path / "missing.npz"), "no array 'draft'"))
    probs = softmax(target)
    probs[4] *= 0.5
    (tmp_path / "b").mkdir()
    cases.append((make_dump(tmp_path / "b", "npz", probs, softmax(draft)), "not 1"))
    cases.append((str(tmp_path / "nothing.npz"), "no such file"))
    (tmp_path / "c").mkdir()
    cases.append((make_dump(tmp_path / "c", "npz", target.astype(np.int32), draft), "int32"))
    for path, words in cases:
        code, err = _error(capsys, ["sweep", path, "--k", "2"])
        assert code == 2 and len(err.splitlines()) == 1 and words in err, (path, err)
    (tmp_path / "good").mkdir()
    good = make_dump(tmp_path / "good", "npz", target, draft)
    code, err = _error(capsys, ["sweep", good, "--logits", "--k", "0"])
    assert code == 2 and "positive" in err
    code, err = _error(capsys, ["sweep", good, "--logits", "--methods", "rrs,nope"])
    assert code == 2 and "nope" in err


def test_nan_row_named_and_skipped_only_when_asked(tmp_path, capsys):
    target, draft = logits_pair()
    names = np.arange(500, 500 + POSITIONS, dtype=np.int64)
    target[7, 3] = np.nan
    path = make_dump(tmp_path, "zarr", target, draft, position=names)
    code, err = _error(capsys, ["sweep", path, "--logits", "--k", "2"])
    assert code == 2 and len(err.splitlines()) == 1
    assert "position 507 (row 7)" in err and "NaN" in err and "--skip-bad-rows" in err
    code = main(["sweep", path, "--logits", "--k", "2", "--skip-bad-rows", "--json"])
    obj = json.loads(capsys.readouterr().out)
    assert code == 0 and obj["positions_swept"] == POSITIONS - 1
    assert obj["skipped_rows"] == [{"position": 507, "reason": "target row holds NaN"}]
    (tmp_path / "all").mkdir()
    nan = np.full((3, 5), np.nan, dtype=np.float32)
    code, err = _error(capsys, ["sweep", make_dump(tmp_path / "all", "npz", nan, nan),
                                "--logits", "--skip-bad-rows"])
    assert code == 2 and len(err.splitlines()) == 1 and "every row is bad" in err


def test_prove_on_an_unreachable_scheduler(capsys):
    code, err = _error(capsys, ["prove", "top1-lossy", "--scheduler", "tcp://127.0.0.1:9",
                                "--scheduler-timeout", "1"])
    assert code == 2 and len(err.splitlines()) == 1 and "cannot connect" in err


def test_unreachable_scheduler(tmp_path, capsys):
    target, draft = logits_pair()
    path = make_dump(tmp_path, "npz", target, draft)
    code, err = _error(capsys, ["sweep", path, "--logits", "--scheduler", "tcp://127.0.0.1:9",
                                "--scheduler-timeout", "1"])
    assert code == 2 and len(err.splitlines()) == 1 and "tcp://127.0.0.1:9" in err


@pytest.mark.slow
def test_the_package_works_without_dask():
    code = ("import sys; sys.modules['dask'] = None\n"
            "import exactspec\n"
            "from exactspec.cli import main\n"
            "assert main(['rho', '2']) == 0\n"
            "assert main(['sweep', 'x.npz']) == 2\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pip install 'exactspec[sweep]'" in out.stderr


# -- dumps that lie about their size, and budgets of the sweep ---------------------------------
def _npy_bytes(shape, data=b"\0" * 64, descr="<f4"):
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False,
                                               "shape": shape})
    return buf.getvalue() + data


def _safetensors_bytes(header, data=b"\0" * 64):
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def _forged_dumps(tmp_path):
    """``(path, words)``: each forged file and the words its one-line refusal must hold."""
    import zipfile

    huge = (100_000, 10_000)                             # 4 GB of float32 over 64 bytes
    ok = {"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 64]}
    cases = []
    npz = tmp_path / "lie.npz"
    with zipfile.ZipFile(npz, "w") as zf:
        for name in ("target", "draft"):
            zf.writestr(f"{name}.npy", _npy_bytes(huge))
    cases.append((npz, ["lie.npz", "'target'", "4,000,000,000 bytes", "holds 64"]))
    folder = tmp_path / "lie_npy"
    folder.mkdir()
    for name in ("target", "draft"):
        (folder / f"{name}.npy").write_bytes(_npy_bytes(huge))
    cases.append((folder, ["draft.npy", "4,000,000,000 bytes"]))
    forged = {
        "offsets.safetensors": ({"target": {"dtype": "F32", "shape": list(huge),
                                            "data_offsets": [0, 4 * 10**9]}, "draft": ok},
                                ["'target'", "data_offsets", "4,000,000,000"]),
        "shape.safetensors": ({"target": {"dtype": "F32", "shape": list(huge),
                                          "data_offsets": [0, 64]}, "draft": ok},
                              ["'target'", "4,000,000,000 bytes"]),
        "strings.safetensors": ({"target": {"dtype": "F32", "shape": [4, 4],
                                            "data_offsets": ["0", "64"]}, "draft": ok},
                                ["'target'", "data_offsets"]),
        "list.safetensors": ([1, 2, 3], ["header is a JSON list"]),
        "negative.safetensors": ({"target": {"dtype": "F32", "shape": [-4, 4],
                                             "data_offsets": [0, 64]}, "draft": ok},
                                 ["'target'", "'shape'", "[-4, 4]"]),
        "deep.safetensors": (b"[" * 100_000 + b"]" * 100_000, ["nests too deeply"]),
        "entry.safetensors": ({"target": [1], "draft": ok}, ["'target'", "JSON list"]),
        "dtype.safetensors": ({"target": {"dtype": 7, "shape": [4, 4],
                                          "data_offsets": [0, 64]}, "draft": ok},
                              ["'target'", "'dtype'"]),
    }
    for name, (header, words) in forged.items():
        (tmp_path / name).write_bytes(_safetensors_bytes(header))
        cases.append((tmp_path / name, [name] + words))
    (tmp_path / "head.safetensors").write_bytes(struct.pack("<Q", 10**7) + b"{}")
    cases.append((tmp_path / "head.safetensors", ["header of 10,000,000 bytes"]))
    import zarr

    group = zarr.open_group(str(tmp_path / "lie.zarr"), mode="w")
    for name in ("target", "draft"):
        group.create_array(name, shape=(10**6, 10**5), chunks=(1000, 10**5), dtype="f4")
    cases.append((tmp_path / "lie.zarr", ["lie.zarr", "1,000 chunks", "holds 0"]))
    wide = tmp_path / "wide.safetensors"
    wide.write_bytes(_safetensors_bytes({"target": {"dtype": "F32", "shape": [0, 2**26],
                                                    "data_offsets": [0, 0]}, "draft": ok}))
    cases.append((wide, ["one row", "over the budget"]))
    return cases


def test_forged_dump_headers_are_refused_before_reading(tmp_path, capsys):
    """A header that declares more than the file holds, or that breaks the format, is
    refused in one line naming the file and the field: no 4 GB allocation, no traceback, no
    message blaming exactspec."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for path, words in _forged_dumps(tmp_path):
        code, err = _error(capsys, ["sweep", str(path), "--k", "2"])
        assert code == 2 and len(err.splitlines()) == 1, (path, err)
        assert "exactspec" not in err.replace(str(tmp_path), ""), err
        for word in words:
            assert word in err, (path, word, err)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 500, grown_mb                      # nothing of the declared 4 GB


def test_sweep_k_and_gamma_budgets(tmp_path, capsys):
    """--k of a billion and a list of 5,000 values are refused up front with the estimate;
    --gamma 1e9 finishes (tokens per call by doubling, equal to the closed form)."""
    from exactspec.sweep.figures import tokens_per_call

    target, draft = logits_pair()
    path = make_dump(tmp_path, "npz", target, draft)
    code, err = _error(capsys, ["sweep", path, "--logits", "--k", "1000000000"])
    assert code == 2 and "1,000,000,000" in err and "65,536" in err
    code, err = _error(capsys, ["sweep", path, "--logits", "--k",
                                ",".join(map(str, range(1, 5001)))])
    assert code == 2 and "5,000 values" in err and "64" in err
    code = main(["sweep", path, "--logits", "--k", "2", "--gamma", "1000000000", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["gamma"] == 10**9
    # doubling against the exact geometric sum (1 - a^(g+1)) / (1 - a), and g + 1 at a = 1
    a = np.array([0.5, 0.75, 1.0])
    for gamma in (64, 100, 1001):
        for got, x in zip(tokens_per_call(a, gamma), a):
            x = Fraction(float(x))
            want = gamma + 1 if x == 1 else (1 - x ** (gamma + 1)) / (1 - x)
            assert abs(Fraction(float(got)) - want) <= want * Fraction(1, 10**13)


def test_a_port_that_accepts_and_never_answers_is_refused_within_the_timeout(tmp_path):
    """A local socket that accepts and says nothing: sweep --scheduler gives up after
    --scheduler-timeout, in one line (run in a subprocess; its limit only stops a hang, the
    timeout itself is tested on a fake socket below)."""
    import socket

    target, draft = logits_pair()
    path = make_dump(tmp_path, "npz", target, draft)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        port = server.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "exactspec", "sweep", path, "--logits",
                               "--scheduler", f"tcp://127.0.0.1:{port}",
                               "--scheduler-timeout", "2"],
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stdout == "", done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "sent nothing within 2 s" in lines[0], done.stderr


def test_the_scheduler_probe_waits_at_most_the_timeout_at_each_step(monkeypatch):
    """The probe hands ``--scheduler-timeout`` to the connection and to the wait for the
    first byte (a silent port raises ``socket.timeout`` there): refused in one line, no clock
    read by the test."""
    import socket

    from exactspec.core.errors import InvalidInput
    from exactspec.sweep import engine

    seen = []

    class Silent:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def settimeout(self, seconds):
            seen.append(("recv", seconds))

        def recv(self, size):
            raise socket.timeout("timed out")

    def connect(address, timeout=None):
        seen.append(("connect", address, timeout))
        return Silent()

    monkeypatch.setattr(socket, "create_connection", connect)
    with pytest.raises(InvalidInput, match=r"^scheduler tcp://127.0.0.1:8786: accepted the "
                       r"connection but sent nothing within 2.5 s \(not a Dask scheduler\?\)$"):
        engine._probe("tcp://127.0.0.1:8786", 2.5)
    assert seen == [("connect", ("127.0.0.1", 8786), 2.5), ("recv", 2.5)]


def test_a_zarr_dump_with_a_chunk_left_out_as_fill_value_is_read(tmp_path):
    """Zarr 3 does not store a chunk that is all fill value: a dump with one such chunk is
    data, not a header that lies (a store missing most of its declared chunks is refused
    above)."""
    import zarr

    from exactspec.sweep.dump import open_dump

    rng = np.random.default_rng(3)
    group = zarr.open_group(str(tmp_path / "gap.zarr"), mode="w")
    for name in ("target", "draft"):
        rows = rng.standard_normal((6, 5)).astype("f4")
        rows[4:] = 0.0                              # the last chunk: all fill value (0)
        arr = group.create_array(name, shape=(6, 5), chunks=(2, 5), dtype="f4", fill_value=0.0)
        arr[:] = rows
    assert group["target"].nchunks_initialized < group["target"].nchunks
    dump = open_dump(str(tmp_path / "gap.zarr"))
    assert dump.positions == 6 and dump.vocab == 5
