"""A sampler that takes logits, exactly: transformers' ``_speculative_sampling`` as shipped.

    python benchmarks/torch_logits.py [--old-up-to N] [V ...]    (default: 30 100 1000 4000 152064)
    python benchmarks/torch_logits.py --arith float32 [V ...]

For each size, the pair of rows of ``benchmarks/torch_layer.py`` (float32 softmax rows read at
their exact values and renormalised exactly), handed to an adapter that builds the function's
logits as an engine would hold them, ``torch.log`` of the rows, and calls transformers
4.46.3's ``_speculative_sampling`` loaded unedited by :func:`exactspec.torch_layer.load`
(from ``/tmp/sideenv`` or wherever transformers is importable; without it, a rule of the same
idiom written here).  Each size is proved by :func:`exactspec.verify` in a fresh process,
twice up to ``--old-up-to`` (default 100):

- ``new``: the layer as it is, ``log`` of a rational a :class:`~exactspec.torch_layer.
  log_rationals.LogRational`, so ``softmax`` gives the rows back as rationals and the draft
  and the residual draw are tensor axes (2 runs of the body);
- ``old``: ``log`` of a rational a sympy number (the layer before ``log_rationals``: the log
  element put back in the same process), so each softmax element is a sympy number and the
  residual draw, over sympy weights, is one path per token.

Prints the verdict, the exact acceptance, the paths and the CPU seconds of each.

With ``--arith float32`` each size is run as ``verify --arith float32 --sum-order
torch-avx2`` runs it (:func:`exactspec.rounding.split_bias`: the float run, its softmax as
torch's AVX2 CPU kernel computes it, :mod:`exactspec.torch_layer.torch_softmax`, beside the
exact runs); prints the verdict, the three TVs, the CPU seconds of the whole (its processes
together) and its wall seconds, twice: with each correctly rounded ``exp``/``log`` computed
afresh (``/uncached``, as before :data:`exactspec.engine.floats.ROUNDED`) and remembered.
Before the kernel's model the layer refused a float softmax: no older figure exists.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIDE = Path("/tmp/sideenv/lib/python3.11/site-packages")

ADAPTER = '''
import torch
from exactspec.torch_layer import load

_speculative_sampling = load("transformers.generation.utils:_speculative_sampling")


def rule(p, q):
    candidate = torch.multinomial(q, num_samples=1).view(1, 1)
    new_logits = torch.stack([p.log(), p.log()]).unsqueeze(0)
    tokens, _ = _speculative_sampling(candidate, q.log().view(1, 1, -1), 1, new_logits, False)
    return tokens[0, 0]
'''

OWN = '''
import torch


def _sampling(draft, draft_logits, target_logits):
    q = draft_logits.softmax(dim=-1)
    p = target_logits.softmax(dim=-1)
    ratio = p[:, torch.arange(1), draft].squeeze(0, 1) / q[:, torch.arange(1), draft].squeeze(0, 1)
    accepted = torch.rand_like(ratio) <= ratio
    if ((~accepted).cumsum(dim=-1) < 1).sum() < 1:
        residual = torch.clamp(p[:, 0, :] - q[:, 0, :], min=0)
        residual.div_(residual.sum())
        return torch.multinomial(residual, num_samples=1).squeeze(1)[None, :]
    return draft[:, :1]


def rule(p, q):
    draft = torch.multinomial(q, num_samples=1).view(1, 1)
    target = torch.stack([p.log(), p.log()]).unsqueeze(0)
    return _sampling(draft, q.log().view(1, 1, -1), target)[0, 0]
'''


def _transformers() -> bool:
    if importlib.util.find_spec("transformers") is None and (SIDE / "transformers").is_dir():
        sys.path.append(str(SIDE))
    return importlib.util.find_spec("transformers") is not None


def child(spec: str, vocab: int, route: str, side: str) -> None:
    """One proof in this process; prints one JSON line."""
    if side:
        sys.path.append(side)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from torch_layer import _cpu, rows

    if route.startswith("arith="):
        from exactspec.engine import floats
        from exactspec.rounding import split_bias

        if route.endswith("/uncached"):         # exp and log rounded without remembering
            floats.ROUNDED_MAX, route = 0, route[:-len("/uncached")]

        p, q = rows(vocab)
        start, wall = _cpu(), time.perf_counter()
        split = split_bias(spec, p, q, arith=route[6:], sum_order="torch-avx2", max_paths=None)
        print(json.dumps({"verdict": split.verdict, "tv": float(split.bias),
                          "tv_exact": str(split.bias_exact_arith),
                          "tv_grid": float(split.bias_grid_only), "paths": split.rounded.paths,
                          "seconds": _cpu() - start, "wall": time.perf_counter() - wall}))
        return

    from exactspec import verify
    from exactspec.torch_layer import functions

    if route == "old":                      # log of a rational: the sympy number, as before
        import sympy

        def old_log_value(v, new=functions.log_value):
            if type(v) is functions.Fraction and v > 0 and v != 1:
                return functions._rational(sympy.log(functions._sympy(v)))
            return new(v)

        functions.OPS["log_value"] = old_log_value
    p, q = rows(vocab)
    start = time.process_time()
    result = verify(spec, p, q, max_paths=None)
    seconds = time.process_time() - start
    print(json.dumps({"lossless": result.lossless, "paths": result.enumeration.paths,
                      "acceptance": str(result.acceptance), "seconds": seconds}))


def main(argv: list[str]) -> int:
    old_up_to, arith = 100, None
    if argv[:1] == ["--old-up-to"]:
        old_up_to, argv = int(argv[1]), argv[2:]
    if argv[:1] == ["--arith"]:
        arith, argv = argv[1], argv[2:]
    sizes = [int(a) for a in argv] or [30, 100, 1000, 4000, 152064]
    shipped = _transformers()
    folder = Path(tempfile.mkdtemp())
    (folder / "adapter.py").write_text(ADAPTER if shipped else OWN)
    spec = f"{folder / 'adapter.py'}:rule"
    side = str(SIDE) if shipped and (SIDE / "transformers").is_dir() else ""
    print("rule:", "transformers 4.46.3 _speculative_sampling, loaded unedited" if shipped
          else "a rule of transformers' idiom (transformers not found)", flush=True)
    for vocab in sizes:
        for how in ("/uncached", "") if arith is not None else ():
            out = subprocess.run([sys.executable, __file__, "--child", spec, str(vocab),
                                  f"arith={arith}{how}", side], capture_output=True,
                                 text=True, check=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            print(f"V={vocab:6d}  {arith}{how or '  (logs remembered)'}  {r['verdict']}  TV {arith} {r['tv']:.4g}, exact "
                  f"arithmetic {r['tv_exact']}, exact on the grid {r['tv_grid']:.4g}  "
                  f"paths={r['paths']}  {r['seconds']:7.2f} s CPU, {r['wall']:7.2f} s wall",
                  flush=True)
        if arith is not None:
            continue
        for route in ("old", "new") if vocab <= old_up_to else ("new",):
            out = subprocess.run([sys.executable, __file__, "--child", spec, str(vocab), route,
                                  side], capture_output=True, text=True, check=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            acc = r["acceptance"]
            acc = acc if len(acc) < 40 else f"{acc[:16]}...({len(acc)} chars)"
            print(f"V={vocab:6d}  {route}  lossless={r['lossless']}  paths={r['paths']:6d}  "
                  f"acceptance={acc}  {r['seconds']:8.2f} s CPU", flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
        raise SystemExit(0)
    raise SystemExit(main(sys.argv[1:]))
