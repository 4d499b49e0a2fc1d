"""Enumeration throughput of the exact engine (paths per second), and start-up time.

    python benchmarks/engine_throughput.py

Cases: the one-draft rule with explicit uniforms on a 64-token instance, and a k-draft
method that draws k i.i.d. drafts and then runs the one-draft rule on the first (|V| = 8,
k = 5: 8**5 * ... paths).  Figures are for comparison within one run on one machine.
"""

import subprocess
import sys
import time
from fractions import Fraction

from exactspec import Dist
from exactspec.engine import enumerate_paths
from exactspec.methods.sps import sps, sps_uniforms


def rule_after_k_drafts(s, p, q, k):
    drafts = s.drafts(q, k)
    x = drafts[0]
    if s.coin(min(1, p[x] / q[x])):
        return s.accept(x)
    from exactspec import residual

    return s.draw(residual(p, q))


def spread(n, shift):
    weights = [(i * 7 + shift) % 11 + 1 for i in range(n)]
    return Dist([Fraction(w, sum(weights)) for w in weights])


def main():
    rows = []
    for name, method, n, k in [("sps", sps, 64, 1), ("sps_uniforms", sps_uniforms, 64, 1),
                               ("rule after k drafts", rule_after_k_drafts, 8, 5)]:
        p, q = spread(n, 0), spread(n, 5)
        start = time.perf_counter()
        result = enumerate_paths(method, p, q, k, max_paths=None)
        seconds = time.perf_counter() - start
        assert result.total == 1 and result.law == dict(zip(p.labels, p.probs))
        rows.append((name, n, k, result.paths, seconds, result.paths / seconds))
    print(f"{'case':22} {'|V|':>4} {'k':>2} {'paths':>9} {'seconds':>8} {'paths/s':>9}")
    for name, n, k, paths, seconds, rate in rows:
        print(f"{name:22} {n:4d} {k:2d} {paths:9d} {seconds:8.2f} {rate:9.0f}")
    cmd = [sys.executable, "-m", "exactspec", "verify", "sps", "--p", "1/2,3/10,1/5",
           "--q", "1/5,1/5,3/5", "--json"]
    times = []
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    base = []
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], capture_output=True, check=True)
        base.append(time.perf_counter() - start)
    print(f"start-up of `exactspec verify sps` (best of 5): {min(times):.3f} s "
          f"(bare interpreter {min(base):.3f} s)")


if __name__ == "__main__":
    main()
