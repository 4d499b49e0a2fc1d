"""The exact tensor layer on the Hugging Face style sampler: paths and seconds by vocabulary size.

    python benchmarks/torch_layer.py [V ...]        (default: 10 30)

For each size, random rational rows ``p`` and ``q`` (weights 1..20, seeds 1 and 2) and the exact
``verify`` of ``examples/engines/hf_speculative_sampling.py:sample`` (a PyTorch rule run under
the layer) beside the same rule on the sampling interface (``sps``).  Prints the paths and the
CPU seconds of each.  The layer runs each path's tensor ops element by element on Fractions:
its cost grows as paths times vocabulary (about ``2 V**2`` element operations per path set).
"""

from __future__ import annotations

import random
import sys
import time
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from exactspec import Dist, verify  # noqa: E402

RULE = str(ROOT / "examples" / "engines" / "hf_speculative_sampling.py") + ":sample"


def row(vocab: int, seed: int) -> Dist:
    rng = random.Random(seed)
    weights = [rng.randint(1, 20) for _ in range(vocab)]
    total = sum(weights)
    return Dist([Fraction(w, total) for w in weights])


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or [10, 30]
    for vocab in sizes:
        p, q = row(vocab, 1), row(vocab, 2)
        for name in (RULE, "sps"):
            start = time.process_time()
            result = verify(name, p, q, max_paths=10**7, max_seconds=None)
            seconds = time.process_time() - start
            label = "PyTorch rule" if name == RULE else "sps         "
            print(f"V={vocab:4d}  {label}  lossless={result.lossless}  "
                  f"paths={result.enumeration.paths:6d}  {seconds:7.2f} s CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
