"""Law leaves and the draft axis against the plain walk: the one-draft rule written with ``s``.

    python benchmarks/law_leaves.py             # 200, 1,000, 10,000 and 152,064 tokens
    python benchmarks/law_leaves.py --quick     # up to 10,000 tokens
    python benchmarks/law_leaves.py --plain 200 # the plain walk up to 200 tokens (default 100)
    python benchmarks/law_leaves.py --cli       # also `exactspec verify` itself, process and all

Two rules: the registry's ``sps`` (``s.draw`` of the residual) and the user's
``examples/my_rule.py:my_rule`` (two explicit uniforms, ``s.pick`` of the residual at a fresh
one), each run as ``verify`` runs it (a user's rule under the watch: hidden randomness
refused, every path run twice).  The plain walk (:func:`~exactspec.engine.exact.enumerate_paths`)
enumerates every resampled token on its own path and is cubic in the vocabulary; law leaves
(:func:`~exactspec.engine.law_leaves.enumerate_law_leaves`) are one leaf per resample, about
``2 V`` runs of the rule; the draft axis
(:func:`~exactspec.engine.draft_axis.enumerate_draft_axis`, what ``verify`` runs today) runs
the rule about 4 times with its draft standing for every token.  Rows: seeded integer
weights 1..12, normalised exactly (each row its own denominator).  Every result is checked:
the law is ``p`` and the acceptance is ``sum_t min(p(t), q(t))``.  Figures are CPU seconds of
this process (``time.process_time``), for comparison within one run; with ``--cli``, the
user and system CPU seconds of a whole ``exactspec verify ... --json`` process (start,
reading the rows from a JSON file, the proof, the output) with its route; growth is the
ratio of seconds over the ratio of sizes in the exponent (1: linear, 3: cubic).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from exactspec.core.dist import Dist, overlap  # noqa: E402
from exactspec.engine.draft_axis import enumerate_draft_axis  # noqa: E402
from exactspec.engine.exact import enumerate_paths  # noqa: E402
from exactspec.engine.law_leaves import enumerate_law_leaves  # noqa: E402
from exactspec.methods import get_method  # noqa: E402

SIZES = (200, 1_000, 10_000, 152_064)
PLAIN_SIZES = (25, 50, 100, 200)


def instance(n: int, seed: int) -> tuple[Dist, Dist]:
    """A random rational pair on ``n`` tokens (integer weights 1..12, normalised)."""
    rng = random.Random(seed)
    rows = [[Fraction(rng.randint(1, 12)) for _ in range(n)] for _ in range(2)]
    return Dist(rows[0], normalize=True), Dist(rows[1], normalize=True)


def run(route, method, p, q) -> tuple[float, int]:
    """CPU seconds and paths (leaves) of one route, its result checked."""
    start = time.process_time()
    result = route(method.run, p, q, 1, watch=method.user)
    seconds = time.process_time() - start
    assert result.law == dict(zip(p.labels, p.probs)), "law is not p"
    assert result.acceptance == overlap(p, q), "acceptance is not the overlap"
    return seconds, result.paths


def cli_run(spec: str, p: Dist, q: Dist) -> tuple[float, str]:
    """CPU seconds (user + system) of one ``exactspec verify`` process on the rows, written
    to JSON files first, and the route it reports (its verdict checked)."""
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for name, row in (("p", p), ("q", q)):
            path = os.path.join(tmp, f"{name}.json")
            with open(path, "w") as f:
                json.dump([f"{v.numerator}/{v.denominator}" for v in row.probs], f)
            files.append(path)
        before = os.times()
        out = subprocess.run([sys.executable, "-m", "exactspec", "verify", spec, "--p",
                              "@" + files[0], "--q", "@" + files[1], "--json"],
                             capture_output=True, text=True, cwd=ROOT)
        after = os.times()
    report = json.loads(out.stdout)
    assert report.get("lossless") is True, out.stdout[:300] + out.stderr[-300:]
    seconds = (after.children_user - before.children_user) + \
        (after.children_system - before.children_system)
    return seconds, report["route"]


def growth(rows: list) -> str:
    if len(rows) < 2 or rows[-2][1] <= 0:
        return ""
    (n0, t0), (n1, t1) = rows[-2], rows[-1]
    return f"  (growth ~V^{math.log(max(t1, 1e-6) / max(t0, 1e-6)) / math.log(n1 / n0):.2f})"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="up to 10,000 tokens")
    parser.add_argument("--plain", type=int, default=100,
                        help="run the plain walk up to this many tokens (default 100)")
    parser.add_argument("--cli", action="store_true", help="also the command line itself")
    args = parser.parse_args(argv)
    sizes = [n for n in SIZES if not args.quick or n <= 10_000]
    methods = {"sps": get_method("sps"),
               "my_rule": get_method(f"{ROOT / 'examples' / 'my_rule.py'}:my_rule")}
    print(f"{'rule':8} {'route':10} {'tokens':>8} {'paths':>10} {'CPU s':>8}")
    for name, method in methods.items():
        for label, route, these in (("plain walk", enumerate_paths,
                                     [n for n in PLAIN_SIZES if n <= args.plain]),
                                    ("law leaves", enumerate_law_leaves, sizes),
                                    ("draft axis", enumerate_draft_axis, sizes)):
            rows: list = []
            for n in these:
                p, q = instance(n, 0)
                seconds, paths = run(route, method, p, q)
                rows.append((n, seconds))
                print(f"{name:8} {label:10} {n:>8,} {paths:>10,} {seconds:>8.2f}"
                      f"{growth(rows)}", flush=True)
        if args.cli:
            spec = "sps" if name == "sps" else "examples/my_rule.py:my_rule"
            rows = []
            for n in sizes:
                seconds, route = cli_run(spec, *instance(n, 0))
                rows.append((n, seconds))
                print(f"{name:8} {'verify':10} {n:>8,} {route:>10} {seconds:>8.2f}"
                      f"{growth(rows)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
