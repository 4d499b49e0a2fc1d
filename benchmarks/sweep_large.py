"""A sweep over a dump far larger than the memory it is allowed: a Zarr array of float16 logits.

    .venv/bin/python benchmarks/sweep_large.py                       # 20,000 x 152,064 (~6 GB)
    .venv/bin/python benchmarks/sweep_large.py --positions 2000      # ~0.6 GB

Makes ``target`` and ``draft`` (synthetic logits: the target's are Gaussian with a heavy head,
the draft's the target's plus noise) in a Zarr group under ``--dir`` (default a new directory
in ``/tmp``), written 64 rows at a time, uncompressed, chunks of 64 positions.  Then runs
``exactspec sweep`` on it in a child process and reports its wall time, positions per second
and peak resident memory (``getrusage`` of the child), beside the dump's size.  The dump is
deleted afterwards unless ``--keep``.  Check the free disk first (``df -h /tmp``).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CHUNK = 64


def make_dump(path: Path, positions: int, vocab: int, seed: int) -> float:
    """Write the dump; returns its size in GB."""
    import zarr

    group = zarr.open_group(str(path), mode="w")
    arrays = {name: group.create_array(name, shape=(positions, vocab), chunks=(CHUNK, vocab),
                                       dtype="float16", compressors=None)
              for name in ("target", "draft")}
    rng = np.random.default_rng(seed)
    for lo in range(0, positions, CHUNK):
        hi = min(lo + CHUNK, positions)
        t = rng.standard_normal((hi - lo, vocab), dtype=np.float32) * 2.0
        t[:, :64] += 6.0                                  # a few likely tokens per row
        d = t + rng.standard_normal((hi - lo, vocab), dtype=np.float32)
        arrays["target"][lo:hi] = t.astype(np.float16)
        arrays["draft"][lo:hi] = d.astype(np.float16)
    return 2 * positions * vocab * 2 / 1e9


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--positions", type=int, default=20_000)
    parser.add_argument("--vocab", type=int, default=152_064)
    parser.add_argument("--k", default="4")
    parser.add_argument("--methods", default="rrs,optimal")
    parser.add_argument("--block-mb", type=float, default=80.0,
                        help="float64 MB per block and array (80: one stored chunk)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--exact-sample", type=int, default=1)
    parser.add_argument("--dir", help="where to write the dump (default: a new /tmp folder)")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="sweep-bench-"))
    dump = base / "logits.zarr"
    try:
        start = time.perf_counter()
        size_gb = make_dump(dump, args.positions, args.vocab, args.seed)
        made = time.perf_counter() - start
        print(f"dump: {args.positions} x {args.vocab} float16 logits, {size_gb:.2f} GB, "
              f"written in {made:.0f} s", flush=True)
        cmd = [sys.executable, "-m", "exactspec", "sweep", str(dump), "--logits", "--k", args.k,
               "--methods", args.methods, "--block-mb", str(args.block_mb),
               "--workers", str(args.workers), "--exact-sample", str(args.exact_sample),
               "--out", str(base / "results.parquet"), "--json"]
        start = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - start
        peak_gb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1e6   # KB -> GB
        if out.returncode != 0:
            print(out.stderr.strip(), file=sys.stderr)
            return out.returncode
        summary = json.loads(out.stdout)
        print(f"sweep: {summary['positions_swept']} positions, k = {summary['k']}, methods "
              f"{args.methods}, {summary['blocks']} blocks on {summary['scheduler']}")
        print(f"wall {wall:.0f} s ({summary['positions_swept'] / wall:.1f} positions/s), "
              f"peak resident memory {peak_gb:.2f} GB for a {size_gb:.2f} GB dump")
        for entry in summary["methods"]:
            print(f"  {entry['method']} k={entry['k']}: mean acceptance "
                  f"{entry['acceptance_mean_float']:.4f} {entry['acceptance_ci95_float']}")
        print(f"  mean gap {summary['gap_mean_float']}, exact checks "
              f"{summary['exact_checks']['rows']} rows, largest difference "
              f"{summary['exact_checks']['max_abs_diff_float']:.2e}")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
