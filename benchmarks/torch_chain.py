"""The gallery's multi-position samplers under ``--tokens M``: seconds by vocabulary size.

    python benchmarks/torch_chain.py [--tokens M ...] [--paths-up-to N] [--arith F ...]
                                     [--only WORD ...] [V ...]
        (default: M = 3 4, N = 8, exact arithmetic, every rule, V = 100 1000; --only keeps the
        rules whose function name contains WORD)

For each size, the realistic pair of ``benchmarks/torch_layer.py`` (float32 softmax rows read
at their exact binary values, renormalised exactly), the same rows at every context.  The
chain of ``examples/engines/flashinfer_chain.py`` (``M - 1`` draft positions, shared uniforms,
inverse-CDF recovery) is proved by the factored route (:mod:`exactspec.sequences.factored`):
each draft position a tensor axis, the call's law a sum of rank-one terms computed once, the
law of the first ``M`` tokens decided against ``p``'s joint law by exact linear algebra.
Prints the verdict, tokens per call, the engine paths, the exact TV of a lossy rule (or its
labelled lower bound) and the CPU seconds.  Its bug variants: the recovered token drawn with
the uniform that rejected is tracked by the factored route (the count of a uniform split on a
draft axis); one uniform shared by every position is not (two axes compared with one uniform)
and takes the path route (each call enumerated once, not per context), run up to ``V = N``
and refused up front with its estimate beyond (with a budget of 10,000 paths where the default
budget would let it run for hours).

The Hugging Face-style ``speculative_sampling`` (``examples/engines/hf_speculative_sampling.py``:
``k`` candidates at once, a ``cumsum`` count of the accepted prefix, a residual or bonus row
picked by it) and the vLLM-style ``rejection_sample`` (``examples/engines/
vllm_rejection_sampler.py``: a recovered token per position by an exponential race per noise
row, output masks) with their bug variants take the factored route too: 4 engine paths at
``M = 3``, 8 at ``M = 4``.

``--arith F`` (``float32``, ``float16``, ``bfloat16``, ``float64``; repeatable; ``exact`` names
exact arithmetic) runs ``verify --tokens M --arith F``'s three runs, each by the factored
route: the float run (the rows rounded into the format, every operation rounded, the
format's generator grid), exact arithmetic with ideal uniforms and exact arithmetic on the
grid; it prints the verdict and the three TVs (of the first 2 tokens, a lower bound, where
the dense law of ``M`` tokens is over 10^6 entries) and the CPU seconds of the whole report.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from torch_layer import rows  # noqa: E402

from exactspec.core.errors import TooLarge  # noqa: E402
from exactspec.sequences.context import ContextPair  # noqa: E402
from exactspec.sequences.torch_rules import pytorch_whole_call  # noqa: E402
from exactspec.sequences.user import DEFAULT_MAX_PATHS, user_report  # noqa: E402
from exactspec.torch_layer.rule import load_pytorch_rule  # noqa: E402

ENGINES = ROOT / "examples" / "engines"
CHAIN = str(ENGINES / "flashinfer_chain.py")
#: every rule run, as ``FILE:function``
RULES = [f"{CHAIN}:{name}" for name in
         ("chain", "chain_reuse_rejecting_uniform", "chain_shared_uniform")] + \
    [f"{ENGINES / 'hf_speculative_sampling.py'}:{name}" for name in
     ("speculative_sampling", "speculative_sampling_count_all")] + \
    [f"{ENGINES / 'vllm_rejection_sampler.py'}:{name}" for name in
     ("rejection_sample", "rejection_sample_all_accepted_as_rejected")]


def main(argv: list[str]) -> int:
    tokens, paths_up_to, ariths, only = [], 8, [], []
    while argv[:1] in (["--tokens"], ["--paths-up-to"], ["--arith"], ["--only"]):
        if argv[0] == "--tokens":
            tokens.append(int(argv[1]))
        elif argv[0] == "--arith":
            ariths.append(None if argv[1] == "exact" else argv[1])
        elif argv[0] == "--only":
            only.append(argv[1])
        else:
            paths_up_to = int(argv[1])
        argv = argv[2:]
    tokens = tokens or [3, 4]
    ariths = ariths or [None]
    sizes = [int(a) for a in argv] or [100, 1000]
    for vocab in sizes:
        p, q = rows(vocab)
        pair = ContextPair.context_free(p, q)
        for m, arith in [(m, a) for m in tokens for a in ariths]:
            for spec in RULES:
                name = spec.rsplit("/", 1)[-1]
                if only and not any(word in name for word in only):
                    continue
                rule = load_pytorch_rule(spec)
                where = f"V={vocab:5d} M={m} {arith or 'exact'} {name}"
                start = time.process_time()
                budget = DEFAULT_MAX_PATHS
                if vocab > paths_up_to and vocab ** m <= DEFAULT_MAX_PATHS:
                    budget = 10**4          # the path route refused up front, not run for hours
                try:
                    r = user_report({"m": m}, pytorch_whole_call(rule, m), pair=pair, m=m,
                                    max_paths=budget, arith=arith)
                except TooLarge as err:
                    print(f"{where}: refused up front ({time.process_time() - start:.2f} s): "
                          f"{err}", flush=True)
                    continue
                seconds = time.process_time() - start
                extra = "" if r["lossless"] else \
                    f"  TV={r['tv_float']:.6g} ({r.get('tv_is', 'exact')})"
                if arith is not None:
                    extra += (f"  TVs: {arith} run {r['bias_float']:.6g}, exact arithmetic "
                              f"{r['bias_exact_arith_float']:.6g}, exact on the grid "
                              f"{r['bias_grid_only_float']:.6g}")
                print(f"{where}: {r['verdict']}  tokens/call="
                      f"{r['tokens_per_call_float']:.6f}  route={r.get('route', 'paths')}  "
                      f"engine paths={r['paths']}  {seconds:.2f} s CPU{extra}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
