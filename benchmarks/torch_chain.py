"""The gallery's FlashInfer-style chain under ``--tokens M``: seconds by vocabulary size.

    python benchmarks/torch_chain.py [--tokens M ...] [V ...]   (default: M = 3 4, V = 100 1000)

For each size, the realistic pair of ``benchmarks/torch_layer.py`` (float32 softmax rows read
at their exact binary values, renormalised exactly), the same rows at every context.  The
chain of ``examples/engines/flashinfer_chain.py`` (``M - 1`` draft positions, shared uniforms,
inverse-CDF recovery) is proved by the factored route (:mod:`exactspec.sequences.factored`):
each draft position a tensor axis, the call's law a sum of rank-one terms computed once, the
law of the first ``M`` tokens decided against ``p``'s joint law by exact linear algebra.
Prints the verdict, tokens per call, the engine paths and the CPU seconds.  Then its two bug
variants, which read a compared uniform again and fall back to the path route: the refusal
up front with its estimate at these sizes.
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
from exactspec.sequences.user import user_report  # noqa: E402
from exactspec.torch_layer.rule import load_pytorch_rule  # noqa: E402

CHAIN = str(ROOT / "examples" / "engines" / "flashinfer_chain.py")


def main(argv: list[str]) -> int:
    tokens = []
    while argv[:1] == ["--tokens"]:
        tokens.append(int(argv[1]))
        argv = argv[2:]
    tokens = tokens or [3, 4]
    sizes = [int(a) for a in argv] or [100, 1000]
    for vocab in sizes:
        p, q = rows(vocab)
        pair = ContextPair.context_free(p, q)
        for m in tokens:
            for name in ("chain", "chain_reuse_rejecting_uniform", "chain_shared_uniform"):
                rule = load_pytorch_rule(f"{CHAIN}:{name}")
                start = time.process_time()
                try:
                    r = user_report({"m": m}, pytorch_whole_call(rule, m), pair=pair, m=m)
                except TooLarge as err:
                    print(f"V={vocab:5d} M={m} {name}: refused up front ({err})", flush=True)
                    continue
                seconds = time.process_time() - start
                extra = "" if r["lossless"] else f"  TV={r['tv']}"
                print(f"V={vocab:5d} M={m} {name}: {r['verdict']}  tokens/call="
                      f"{r['tokens_per_call_float']:.6f}  route={r.get('route', 'paths')}  "
                      f"engine paths={r['paths']}  {seconds:.2f} s CPU{extra}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
