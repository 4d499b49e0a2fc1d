"""The exact tensor layer on the gallery's one-position samplers: seconds by vocabulary size.

    python benchmarks/torch_layer.py [V ...]             (default: 10 30 100 1000 10000)
    python benchmarks/torch_layer.py --paths-up-to N V ...   (path enumeration up to V = N)
    python benchmarks/torch_layer.py --arith float32 [--sum-order ORDER] V ...

For each size, a realistic pair of rows: a target row ``p``, the float32 softmax of logits
``2 z`` (``z`` standard normal, seed 1), and a draft row ``q``, the float32 softmax of the same
logits plus ``0.5 z'`` (seed 2), each read at its exact binary values and renormalised exactly
(integer rows over one common denominator).  Two PyTorch rules of ``examples/engines/``, the
Hugging Face style ``sample`` (lossless) and the vLLM style ``sample`` (uniform acceptance,
exponential-race recovery over the residual clamped at float32's ``tiny``; lossy by the clamp),
are proved exactly by :func:`exactspec.verify`, which keeps the draft as a tensor axis
(:mod:`exactspec.torch_layer.branched`), and, up to ``--paths-up-to`` (default 100), by the
path enumeration (one run of the body per path).  Prints the paths (runs of the body: 1
for the vLLM style rule, whose ``torch.where`` selects from both outcomes of its acceptance
test, 2 for the Hugging Face style rule, whose ``if`` branches on it), the exact TV from ``p``
and the CPU seconds of each.

With ``--arith FORMAT`` each rule is run as ``verify --arith`` runs it
(:func:`exactspec.rounding.split_bias`, long sums in ``--sum-order``, default ``torch-avx2``):
the float run, exact arithmetic with ideal uniforms and exact arithmetic on the format's grid,
all with the draft as a tensor axis, the two exact ones from one run of the body where the
rule allows it (``exact+grid``; on long rows the float run in a forked process beside it);
prints the CPU seconds of each run, the CPU seconds of the whole (its processes together) and
its wall seconds, the verdict and the three TVs.
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


def _cpu() -> float:
    """CPU seconds of this process and of the processes it waited for (``verify --arith``
    runs two of its three runs in forked processes on long rows)."""
    import resource

    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                           resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def float_runs(vocab: int, p: Dist, q: Dist, arith: str, order: str) -> None:
    """The three runs of ``verify --arith`` on the axis, timed one by one."""
    from exactspec.rounding import split_bias

    for label, spec in RULES.items():
        start, wall = _cpu(), time.perf_counter()
        split = split_bias(spec, p, q, arith=arith, sum_order=order, max_paths=None)
        verdict = split.verdict
        seconds, wall = _cpu() - start, time.perf_counter() - wall
        runs = {arith: split.rounded, "exact": split.exact, "grid": split.grid_only}
        if split.pair_run:          # the two exact runs from one run of the body
            runs = {arith: split.rounded, "exact+grid": split.exact}
        each = "  ".join(f"{name} {run.enumeration.seconds:6.2f} s ({run.paths} paths)"
                         for name, run in runs.items())
        print(f"V={vocab:6d}  {label}  {each}  all {seconds:6.2f} s CPU, {wall:6.2f} s wall",
              flush=True)
        print(f"V={vocab:6d}  {label}  verdict {verdict}: TV {arith} {float(split.bias):.4g}, "
              f"exact arithmetic {float(split.bias_exact_arith):.4g}, exact on the grid "
              f"{float(split.bias_grid_only):.4g}", flush=True)


def main(argv: list[str]) -> int:
    paths_up_to = 100
    arith, order = None, "torch-avx2"
    while argv[:1] and argv[0].startswith("--"):
        if argv[0] == "--paths-up-to":
            paths_up_to = int(argv[1])
        elif argv[0] == "--arith":
            arith = argv[1]
        elif argv[0] == "--sum-order":
            order = argv[1]
        else:
            raise SystemExit(f"unknown option {argv[0]}")
        argv = argv[2:]
    sizes = [int(a) for a in argv] or [10, 30, 100, 1000, 10000]
    for vocab in sizes:
        p, q = rows(vocab)
        if arith is not None:
            float_runs(vocab, p, q, arith, order)
            continue
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
