"""Start-up of the command line: a one-draft ``verify`` against a bare interpreter.

    python benchmarks/cli_startup.py

Prints the median wall seconds of five runs of each, and the modules over 10 ms in
``python -X importtime`` of the verify run (the heavy ones, sympy, numpy, networkx and mpmath,
must not appear: tests/test_engine.py keeps them out).  Target: verify under 0.3 s.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

VERIFY = [sys.executable, "-m", "exactspec", "verify", "sps", "--p", "1/2,3/10,1/5", "--q",
          "1/5,1/5,3/5"]
BARE = [sys.executable, "-c", "pass"]


def median_seconds(command: list[str], runs: int = 5) -> tuple[float, float]:
    """Median wall seconds and median CPU seconds (user + system) of the child: on a busy
    machine the wall time also counts waiting for a core."""
    import resource

    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main() -> int:
    (bare, bare_cpu), (verify, verify_cpu) = median_seconds(BARE), median_seconds(VERIFY)
    print(f"python -c pass:                   {bare:.3f} s wall, {bare_cpu:.3f} s CPU")
    print(f"exactspec verify sps (one draft): {verify:.3f} s wall, {verify_cpu:.3f} s CPU "
          "(target < 0.3 s)")
    out = subprocess.run([VERIFY[0], "-X", "importtime", *VERIFY[1:]], capture_output=True,
                         text=True).stderr
    rows = []
    for line in out.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    print("imports over 10 ms (cumulative microseconds):")
    for micros, name in sorted(rows, reverse=True):
        if micros > 10_000:
            print(f"  {micros:>8}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
