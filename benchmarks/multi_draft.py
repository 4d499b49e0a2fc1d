"""Multi-draft methods through merged states at real vocabulary sizes.

    python benchmarks/multi_draft.py                       # the table, this checkout
    python benchmarks/multi_draft.py --base /tmp/w/base    # beside an older checkout
    python benchmarks/multi_draft.py --methods rrs kseq --sizes 1000 10000 --cap 60
    python benchmarks/multi_draft.py --methods rrs kseq key --k 8 --sizes 152064

Each cell is the CPU seconds (``time.process_time``) of one
:func:`exactspec.bounds.compare.exact_verification` call (the planner, its size estimate,
the merged-state interpreter and the checks of the result), run in a process of its own on
seeded rational rows of ``n`` tokens (weights ``1..1000``, normalised exactly): ``rrs``,
``kseq``, ``key`` at ``k = 4``, ``spechub`` at ``k = 2`` (its only ``k``) and ``rrs-wor`` at
``k = 2``.  Every run checks ``law = p``.  A method's larger sizes are skipped once one run
takes more than ``--cap`` seconds (or is stopped at ``3 x cap`` of wall time, shown ``>``);
a refusal of the engine (over a budget) is shown as ``refused``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

METHODS = {"rrs": 4, "kseq": 4, "key": 4, "spechub": 2, "rrs-wor": 2}
SIZES = (1_000, 10_000, 32_000, 152_064)

CHILD = r"""
import json, random, sys, time
from fractions import Fraction
from exactspec.core.dist import Dist
from exactspec.core.errors import TooLarge
from exactspec.bounds.compare import exact_verification
from exactspec.methods import get_method

method, n, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(1)

def row():
    weights = [rng.randint(1, 1000) for _ in range(n)]
    total = sum(weights)
    return Dist([Fraction(w, total) for w in weights])

p, q = row(), row()
start = time.process_time()
try:
    result = exact_verification(get_method(method), p, q, k)
except TooLarge as refusal:
    print(json.dumps({"refused": str(refusal)[:120], "seconds": time.process_time() - start}))
    sys.exit(0)
seconds = time.process_time() - start
enumeration = result.enumeration
assert enumeration.law == dict(p), "law != p"
print(json.dumps({"seconds": seconds, "route": result.route,
                  "states": getattr(enumeration, "states", None),
                  "transitions": getattr(enumeration, "transitions", None),
                  "acceptance": float(enumeration.acceptance)}))
"""


def measure(method: str, n: int, k: int, cap: float, tree: Path) -> dict:
    """One run of ``method`` at ``n`` tokens in a child process importing ``tree``."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, method, str(n), str(k)],
                              capture_output=True, text=True, env=env, cwd=str(tree),
                              timeout=3 * cap)
    except subprocess.TimeoutExpired:
        return {"stopped": 3 * cap}
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1][:120]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def cell(outcome: dict | None) -> str:
    """A measurement as table text."""
    if outcome is None:
        return "skipped"
    if "stopped" in outcome:
        return f"> {outcome['stopped']:.0f}"
    if "refused" in outcome:
        return "refused"
    if "error" in outcome:
        return "error"
    return f"{outcome['seconds']:.2f}"


def table(methods, sizes, cap, trees: dict, k_all: int | None = None) -> list[str]:
    """Markdown rows: one per method and checkout, one column per size (``k_all``: the
    number of drafts of every method but spechub, whose only ``k`` is 2)."""
    lines = ["| method | k | code | " + " | ".join(f"{n:,}" for n in sizes) + " |",
             "|---|---|---|" + "---|" * len(sizes)]
    for method in methods:
        k = METHODS[method] if k_all is None or method == "spechub" else k_all
        for label, tree in trees.items():
            cells, over = [], False
            for n in sizes:
                outcome = None if over else measure(method, n, k, cap, tree)
                if outcome is not None:
                    print(f"  {method} k={k} n={n:,} [{label}]: {outcome}", file=sys.stderr,
                          flush=True)
                    over = ("seconds" not in outcome or outcome["seconds"] > cap
                            or "refused" in outcome)
                cells.append(cell(outcome))
            lines.append(f"| {method} | {k} | {label} | " + " | ".join(cells) + " |")
    return lines


def main(argv=None) -> int:
    """Print the table (markdown)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    parser.add_argument("--cap", type=float, default=60.0,
                        help="skip a method's larger sizes after a run over this many seconds")
    parser.add_argument("--k", type=int, default=None,
                        help="the drafts of every method but spechub (default: 4, rrs-wor 2)")
    parser.add_argument("--base", type=Path, default=None,
                        help="an older checkout to measure beside this one")
    args = parser.parse_args(argv)
    trees = {"this": ROOT}
    if args.base is not None:
        trees = {"base": args.base.resolve(), "this": ROOT}
    for line in table(args.methods, args.sizes, args.cap, trees, args.k):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
