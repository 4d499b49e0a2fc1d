"""The commands under ``--backend numpy``: float64 estimates at vocabulary scale
(:mod:`exactspec.numpy_backend.commands`), never a proof.
"""

from __future__ import annotations

from .output import emit
from .process import EXIT_OK, UsageError
from .readers import read_float_pair


def float_command(kind: str, args) -> int:
    """The float64 (NumPy backend) form of ``kind``'s command: estimates printed, never a proof."""
    from ..numpy_backend import commands

    if args.p is None or args.q is None:
        raise UsageError("both --p and --q are required")
    p, q = read_float_pair(args)
    if kind == "verify":
        obj = commands.verify_float(args.method, p, q, args.k, normalize=args.normalize)
    elif kind == "simulate":
        obj = commands.simulate_float(args.method, p, q, args.k, n=args.n, seed=args.seed,
                                      normalize=args.normalize)
    elif kind == "optimal":
        obj = commands.optimal_float(p, q, args.k, normalize=args.normalize)
    else:
        methods = tuple(args.methods.split(",")) if args.methods else ("sps", "rrs")
        if args.k != 1 and "sps" in methods and not args.methods:
            methods = ("rrs",)
        obj = commands.compare_float(p, q, args.k, methods, normalize=args.normalize)
    lines = [f"{kind} (numpy backend, float64: estimates, never a proof), k = {args.k}"]
    for key, value in obj.items():
        if isinstance(value, dict):
            if len(value) > 12:
                value = f"{{... {len(value)} tokens}}"
        lines.append(f"  {key}: {value}")
    emit(obj, args.json, "\n".join(lines))
    return EXIT_OK
