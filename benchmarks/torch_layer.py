"""The exact tensor layer on the gallery's one-position samplers: seconds by vocabulary size.

    python benchmarks/torch_layer.py [V ...]             (default: 10 30 100 1000 10000)
    python benchmarks/torch_layer.py --paths-up-to N V ...   (path enumeration up to V = N)

For each size, a realistic pair of rows: a target row ``p``, the float32 softmax of logits
``2 z`` (``z`` standard normal, seed 1), and a draft row ``q``, the float32 softmax of the same
logits plus ``0.5 z'`` (seed 2), each read at its exact binary values and renormalised exactly
(integer rows over one common denominator).  Two PyTorch rules of ``examples/engines/``, the
Hugging Face style ``sample`` (lossless) and the vLLM style ``sample`` (uniform acceptance,
exponential-race recovery over the residual clamped at float32's ``tiny``; lossy by the clamp),
are proved exactly by :func:`exactspec.verify`, which keeps the draft as a tensor axis
(:mod:`exactspec.torch_layer.branched`), and, up to ``--paths-up-to`` (default 100), by the
path enumeration (one run of the body per path).  Prints the paths, the exact TV from ``p``
and the CPU seconds of each.  ``--arith float32`` is not run: both rules sum a whole row in
float32, which the layer refuses beyond a few terms (the rounding of a long float sum depends
on the kernel's summation order).
"""

from __future__ import annotations

import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from exactspec import Dist, verify  # noqa: E402
from exactspec.core.integer_rows import exact_sum, fractions_over, integer_row  # noqa: E402
from exactspec.engine.exact import enumerate_paths  # noqa: E402
from exactspec.torch_layer.rule import load_pytorch_rule  # noqa: E402

ENGINES = ROOT / "examples" / "engines"
RULES = {"HF sample  ": str(ENGINES / "hf_speculative_sampling.py") + ":sample",
         "vLLM sample": str(ENGINES / "vllm_rejection_sampler.py") + ":sample"}


def softmax_row(logits: np.ndarray) -> Dist:
    """The float32 softmax of ``logits`` at its exact binary values, renormalised exactly."""
    e = np.exp(logits - logits.max()).astype(np.float32)
    probs = (e / e.sum(dtype=np.float32)).astype(np.float32)
    ints, _ = integer_row([Fraction(float(x)) for x in probs])
    return Dist(fractions_over(ints, sum(ints)), check=False)


def rows(vocab: int) -> tuple[Dist, Dist]:
    z = np.random.default_rng(1).standard_normal(vocab).astype(np.float32)
    z2 = np.random.default_rng(2).standard_normal(vocab).astype(np.float32)
    logits = (2 * z).astype(np.float32)
    return softmax_row(logits), softmax_row((logits + 0.5 * z2).astype(np.float32))


def tv(law: dict, p: Dist) -> Fraction:
    return exact_sum([abs(law[lab] - pr) for lab, pr in zip(p.labels, p.probs)]) / 2


def main(argv: list[str]) -> int:
    paths_up_to = 100
    if argv[:1] == ["--paths-up-to"]:
        paths_up_to, argv = int(argv[1]), argv[2:]
    sizes = [int(a) for a in argv] or [10, 30, 100, 1000, 10000]
    for vocab in sizes:
        p, q = rows(vocab)
        for label, spec in RULES.items():
            start = time.process_time()
            result = verify(spec, p, q, max_paths=None)
            seconds = time.process_time() - start
            print(f"V={vocab:6d}  {label}  tensor axis: lossless={result.lossless}  "
                  f"TV={float(tv(result.enumeration.law, p)):.3g}  "
                  f"paths={result.enumeration.paths}  {seconds:7.2f} s CPU", flush=True)
            if vocab <= paths_up_to:
                rule = load_pytorch_rule(spec)
                start = time.process_time()
                enum = enumerate_paths(rule, p, q, 1, max_paths=None)
                seconds = time.process_time() - start
                same = enum.law == result.enumeration.law
                print(f"V={vocab:6d}  {label}  paths:       same law={same}  "
                      f"paths={enum.paths}  {seconds:7.2f} s CPU", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
