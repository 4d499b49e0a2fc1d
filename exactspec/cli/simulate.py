"""``exactspec simulate``: a method sampled, its empirical law and acceptance (evidence,
not proof).
"""

from __future__ import annotations

from .arguments import is_pytorch_rule
from .float64 import float_command
from .output import emit, aligned_table
from .process import DEFAULT_RUN_SECONDS, EXIT_OK
from .readers import read_pair


def cmd_simulate(args) -> int:
    from ..core.dist import exact_str
    from ..verify import simulate

    if args.backend == "numpy":
        return float_command("simulate", args)
    p, q = read_pair(args)
    if not is_pytorch_rule(args.method):
        from ..core.budget import check_exact_runs

        check_exact_runs(len(p), args.n, DEFAULT_RUN_SECONDS, f"--n {args.n:,} samples",
                         instead="fewer samples (--n), or --backend numpy")
    sim = simulate(args.method, p, q, args.k, n=args.n, seed=args.seed, grid=args.grid)
    lo, hi = sim.acceptance_interval()
    tv = sim.total_variation_to(p)
    obj = {"method": args.method, "k": args.k, "n": args.n, "seed": args.seed,
           "labels": [str(t) for t in p.labels], "target": p.to_json(),
           "counts": {str(t): c for t, c in sim.counts.items()},
           "empirical_float": {str(t): c / sim.n for t, c in sim.counts.items()},
           "tv_to_target_float": tv, "acceptance_float": sim.acceptance,
           "acceptance_ci95_float": [lo, hi]}
    rows = [[t, exact_str(p[t]), str(sim.counts[t]), f"{sim.counts[t] / sim.n:.4f}"]
            for t in p.labels]
    text = (f"method {args.method}, k = {args.k}: {args.n} samples (seed {args.seed})\n"
            + aligned_table(rows, ["token", "target p", "count", "empirical"])
            + f"\nTV(empirical, p) = {tv:.4f}\nacceptance = {sim.acceptance:.4f} "
            f"(95% interval {lo:.4f} to {hi:.4f})\nsampling is evidence, not proof: "
            "use exactspec verify for the exact law")
    emit(obj, args.json, text)
    return EXIT_OK
