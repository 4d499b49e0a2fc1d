"""Benchmark of KEY in NumPy at full vocabulary size.

    .venv/bin/python benchmarks/key.py            # |V| = 152,064, both corpora (a few minutes)
    .venv/bin/python benchmarks/key.py --quick    # |V| = 20,000, fewer rows

Rows are next-token pairs from :func:`exactspec.numpy_backend.models.model_pair` (``docs`` and ``code``).
For each corpus, temperature and ``k`` it reports, per position: the time of the placement
(:func:`exactspec.numpy_backend.key.key_placement`, which includes ``optimum_sorted``) and of
``optimum_sorted`` alone, how many positions need swaps (the rest are the plain consecutive
layout; there is no fallback path), swaps per position, the float law error bound, the time per
sample of drafting and verifying (placement reused), the sampled acceptance against ``alpha*``, and the lazy variant's mean
number of key draws against ``k``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from exactspec.numpy_backend.models import model_pair  # noqa: E402
from exactspec.numpy_backend.key import key_placement, sample_key  # noqa: E402
from exactspec.numpy_backend.optimum import optimum_sorted  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rows", type=int, default=None)
    args = parser.parse_args(argv)
    vocab = 20_000 if args.quick else 152_064
    rows = args.rows or (4 if args.quick else 16)
    samples = 200 if args.quick else 1000
    print(f"|V| = {vocab:,}, {rows} positions per setting, {samples} samples per position")
    print(f"{'corpus':6} {'T':>4} {'k':>2} | {'place ms':>8} {'sort+a* ms':>10} "
          f"{'swapped':>7} {'swaps':>7} {'law err':>8} | {'us/sample':>9} {'acc':>7} "
          f"{'alpha*':>7} | {'lazy draws':>10}")
    for corpus in ("docs", "code"):
        pair = model_pair(corpus, vocab_size=vocab)
        for temperature in (1.0, 0.7):
            P, Q = pair.rows(rows, seed=1, temperature=temperature)
            for k in (2, 4, 8):
                start = time.perf_counter()
                optimum_sorted(P, Q, k)
                t_opt = (time.perf_counter() - start) / rows
                start = time.perf_counter()
                plan = key_placement(P, Q, k)
                t_place = (time.perf_counter() - start) / rows
                rng = np.random.default_rng(0)
                start = time.perf_counter()
                out = sample_key(P, Q, k, rng, n=samples, placement=plan)
                t_sample = (time.perf_counter() - start) / (rows * samples)
                lazy = sample_key(P, Q, k, rng, n=samples, lazy=True, placement=plan)
                print(f"{corpus:6} {temperature:4.1f} {k:2d} | {t_place * 1e3:8.1f} "
                      f"{t_opt * 1e3:10.1f} {np.mean(plan.swaps > 0):7.0%} "
                      f"{plan.swaps.mean():7.0f} {plan.law_error.max():8.1e} | "
                      f"{t_sample * 1e6:9.1f} {out.accepted.mean():7.4f} "
                      f"{plan.alpha_star.mean():7.4f} | {lazy.key_draws.mean():10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
