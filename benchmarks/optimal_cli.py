"""``exactspec optimal`` from the command line against its routine in process, at 152,064 tokens.

    python benchmarks/optimal_cli.py [--tokens 152064] [--k 4] [--runs 3] [--base DIR]

Writes two seeded rows of rational probabilities (weights 1..12 from ``random.Random(1)``
and ``random.Random(2)``, each normalised exactly) as JSON lists of ``"a/b"`` texts, then
measures, side by side in one run, in CPU seconds (user + system):

- the whole process of ``exactspec optimal --p @p.json --q @q.json --k 4`` (``--json`` and
  the text table; interpreter start, imports, reading, output included), by ``os.wait4``;
- the same with ``--backend numpy``;
- in this process, by ``time.process_time()``: the exact optimum
  (:func:`exactspec.optimum.alpha_star.optimum` on two Dists made afresh for each run, so
  that nothing computed in an earlier run is reused) and the float one
  (:func:`exactspec.numpy_backend.optimum.optimum_bucketed` on the float64 rows; its first
  call and the median of later calls).

Prints the medians of ``--runs`` runs, the ratios process / routine, and the load average
(the machine may be shared).  ``--base DIR`` runs the same commands, side by side, from another
checkout of the code (``git worktree add DIR <commit>``; its package put first on
``PYTHONPATH``).  Targets: the exact command within 2 times the exact optimum,
the NumPy one within 5 times the float routine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from fractions import Fraction


def write_rows(folder: str, tokens: int) -> tuple[list[Fraction], list[Fraction]]:
    """The two seeded rows, written to ``folder/p.json`` and ``folder/q.json``."""
    rows = []
    for seed, name in ((1, "p"), (2, "q")):
        rng = random.Random(seed)
        weights = [rng.randint(1, 12) for _ in range(tokens)]
        total = sum(weights)
        row = [Fraction(w, total) for w in weights]
        with open(os.path.join(folder, f"{name}.json"), "w") as f:
            json.dump([str(v) for v in row], f)
        rows.append(row)
    return rows[0], rows[1]


def child_cpu(command: list[str], out_path: str, base: str | None = None) -> float | str:
    """CPU seconds (user + system) of one run of ``command``, its stdout written to
    ``out_path`` (``base``: the checkout whose package it runs); the error line of a command
    that fails."""
    env = dict(os.environ)
    if base is not None:
        env["PYTHONPATH"] = base + os.pathsep + env.get("PYTHONPATH", "")
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.PIPE, env=env,
                                cwd=os.path.dirname(out_path))   # not this checkout's folder
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if proc.returncode not in (0, 1):
        return f"exit {proc.returncode}: {err.strip()[:60]}"
    return usage.ru_utime + usage.ru_stime


def in_process(p_row, q_row, k: int, runs: int) -> dict:
    """CPU seconds of the exact and the float optimum in this process."""
    import numpy as np

    from exactspec.core.dist import Dist
    from exactspec.numpy_backend.optimum import optimum_bucketed
    from exactspec.optimum.alpha_star import optimum

    exact = []
    for _ in range(runs):
        p, q = Dist(p_row), Dist(q_row)      # fresh: nothing cached from an earlier run
        start = time.process_time()
        optimum(p, q, k)
        exact.append(time.process_time() - start)
    P = np.array([float(v) for v in p_row])
    Q = np.array([float(v) for v in q_row])
    floats = []
    for _ in range(max(runs, 5) + 1):
        start = time.process_time()
        optimum_bucketed(P, Q, k)
        floats.append(time.process_time() - start)
    return {"exact": statistics.median(exact), "float_first": floats[0],
            "float": statistics.median(floats[1:])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=152_064)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", help="a folder to keep the rows and the outputs in")
    ap.add_argument("--base", help="another checkout whose commands run side by side")
    args = ap.parse_args()
    folder = args.keep or tempfile.mkdtemp(prefix="optimal_cli_")
    os.makedirs(folder, exist_ok=True)
    p_row, q_row = write_rows(folder, args.tokens)
    base = [sys.executable, "-m", "exactspec", "optimal", "--p", "@" + os.path.join(folder,
            "p.json"), "--q", "@" + os.path.join(folder, "q.json"), "--k", str(args.k)]
    commands = {
        "exact --json": (base + ["--json"], "exact"),
        "exact (text)": (base, "exact"),
        "numpy --json": (base + ["--backend", "numpy", "--json"], "float"),
        "numpy (text)": (base + ["--backend", "numpy"], "float"),
    }
    routine = in_process(p_row, q_row, args.k, args.runs)
    cpu = {}
    for name, (command, kind) in list(commands.items()):
        for base in [None] + ([args.base] if args.base else []):
            label = name if base is None else f"{name} [base]"
            commands[label] = (command, kind)
            out = os.path.join(folder, label.replace(" ", "_").replace("(", "").replace(")", "")
                               .replace("--", "").replace("[", "").replace("]", "") + ".out")
            times = [child_cpu(command, out, base) for _ in range(args.runs)]
            failed = [t for t in times if isinstance(t, str)]
            cpu[label] = failed[0] if failed else statistics.median(times)
    print(f"exactspec optimal, {args.tokens:,} tokens, k = {args.k}; median of {args.runs} "
          f"runs; load average {os.getloadavg()[0]:.2f}")
    print(f"  in process: exact optimum {routine['exact']:.3f} s CPU; float optimum_bucketed "
          f"{routine['float'] * 1e3:.1f} ms (first call {routine['float_first'] * 1e3:.1f} ms)")
    print(f"  {'command':<21} {'process CPU s':>13} {'routine CPU s':>13} {'ratio':>8}  target")
    for name, (_, kind) in sorted(commands.items(), key=lambda item: list(cpu).index(item[0])):
        ref = routine[kind]
        target = "<= 2" if kind == "exact" else "<= 5"
        if isinstance(cpu[name], str):
            print(f"  {name:<21} {cpu[name]}")
        else:
            print(f"  {name:<21} {cpu[name]:>13.3f} {ref:>13.4f} {cpu[name] / ref:>8.1f}  "
                  f"{target}")
    print(f"  (outputs in {folder})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
