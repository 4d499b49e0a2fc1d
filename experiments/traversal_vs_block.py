"""Traversal Verification against block verification and token-by-token verification on single
chains, instance by instance, in exact arithmetic.

Both Traversal Verification (Weng et al.) and block verification (Sun et al.) claim to be the
best lossless verifier of one drafted chain.  For each random context-dependent pair (3 tokens,
zeros allowed; the same pairs as the claim ``traversal-chain-block``) this prints the exact
expected tokens per target call of the three rules on a ``gamma``-chain, and whether the
one-call laws of traversal and block verification are identical; then the instances where
traversal and block verification differ (none is expected).

    .venv/bin/python experiments/traversal_vs_block.py              # 200 chains of 2
    .venv/bin/python experiments/traversal_vs_block.py --gamma 3 --count 20 --seed 1801
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from exactspec.core.dist import exact_str  # noqa: E402
from exactspec.sequences.context import random_model_pair  # noqa: E402
from exactspec.sequences.traversal import chain_comparison  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--gamma", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1800)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    pairs = [random_model_pair(rng, 3, 2, zeros=True) for _ in range(args.count)]
    rows = chain_comparison(pairs, args.gamma)
    print(f"{'instance':>8}  {'traversal':>16}  {'block':>16}  {'token by token':>16}  same law")
    for r in rows:
        print(f"{r['instance']:>8}  {exact_str(r['traversal']):>16}  {exact_str(r['block']):>16}"
              f"  {exact_str(r['token']):>16}  {r['same_law']}")
    differ = [r["instance"] for r in rows if r["traversal"] != r["block"] or not r["same_law"]]
    above = sum(r["traversal"] > r["token"] for r in rows)
    print(f"traversal = block verification (tokens per call and one-call law) on "
          f"{len(rows) - len(differ)} of {len(rows)}; differ on: {differ or 'none'}")
    print(f"traversal above token by token on {above}, equal on "
          f"{sum(r['traversal'] == r['token'] for r in rows)}, below on "
          f"{sum(r['traversal'] < r['token'] for r in rows)}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
