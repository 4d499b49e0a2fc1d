"""``exactspec sweep`` against the plain NumPy loop a user would write
(``benchmarks/sweep_plain_loop.py``), side by side in one run, on synthetic logits dumps.

Each dump holds target logits from a Zipf-like law (``-1.1 log rank`` over a random order of
the vocabulary, plus Gaussian noise per row) and draft logits correlated with them (scaled
and noised), stored as float32 or float16 in an uncompressed ``.npz``.  Every command runs in
its own process; its CPU seconds (user + system) and peak resident memory come from
``os.wait4``'s resource usage.  The sweep runs on one worker thread for the CPU comparison;
``--two-cores`` adds the README's command on 2,000 x 32,000 rows with two workers (wall time).

Both sides write the same outputs: for ``rrs,optimal`` the figures only; for the README's
command (``FULL``) every method's figures, the Parquet table and the plot (the loop draws it
with pyplot, as a user would; the CPU seconds of that plot are shown apart, so the ratio
without it can be read off).  Only the sweep does the exact spot checks.

    python benchmarks/sweep_vs_loop.py                      # 500 x 32,000 and 256 x 152,064
    python benchmarks/sweep_vs_loop.py --shapes 100x32000 --dtypes float32
    python benchmarks/sweep_vs_loop.py --two-cores
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOOP = os.path.join(ROOT, "benchmarks", "sweep_plain_loop.py")
FULL = ["--methods", "rrs,kseq,key,optimal", "--exact-sample", "3"]


def make_dump(path, rows, vocab, dtype, seed=0):
    rng = np.random.default_rng(seed)
    base = -1.1 * np.log(np.arange(1, vocab + 1))[rng.permutation(vocab)]
    target = np.empty((rows, vocab), dtype=dtype)
    draft = np.empty((rows, vocab), dtype=dtype)
    for i in range(rows):
        t = base + rng.normal(0.0, 1.5, vocab)
        target[i] = t
        draft[i] = 0.9 * t + rng.normal(0.0, 1.0, vocab)
    np.savez(path, target=target, draft=draft)


#: The commands run as an installed package would: with their bytecode compiled once.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


#: Runs a command and prints its exit status, CPU seconds, peak RSS (KiB) and stderr's tail.
#: The launcher is a small process, so that the peak RSS of the command (which starts as a copy
#: of the process that starts it) is not this script's, which holds a dump while making it.
LAUNCH = """import json, os, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = p.stderr.read().decode()
_, status, u = os.wait4(p.pid, 0)
print(json.dumps([os.waitstatus_to_exitcode(status), u.ru_utime + u.ru_stime, u.ru_maxrss,
                  err[-2000:]]))"""


def measure(cmd):
    """(CPU seconds, peak RSS in MiB, wall seconds) of one command in its own process."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", LAUNCH, *cmd], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    code, cpu, rss, err = json.loads(done.stdout)
    if code:
        sys.exit(f"{' '.join(cmd)} failed:\n{err}")
    return cpu, rss / 1024, wall, err


def pair(dump, out, full, workers=1):
    methods = FULL if full else ["--methods", "rrs,optimal"]
    sweep = [sys.executable, "-m", "exactspec", "sweep", dump, "--logits", "--k", "1,2,4,8",
             *methods, "--workers", str(workers), "--no-progress", "--json"]
    loop = [sys.executable, LOOP, dump, "--logits", "--k", "1,2,4,8", "--methods",
            methods[1]]
    if full:
        sweep += ["--out", os.path.join(out, "s.parquet"), "--plot", os.path.join(out, "s.png")]
        loop += ["--out", os.path.join(out, "l.parquet"), "--plot", os.path.join(out, "l.png")]
    return measure(loop), measure(sweep)


def _make(path, rows, vocab, dtype):
    subprocess.run([sys.executable, __file__, "--make", path, str(rows), str(vocab), dtype],
                   check=True)


def main():
    if sys.argv[1:2] == ["--make"]:
        path, rows, vocab, dtype = sys.argv[2:]
        return make_dump(path, int(rows), int(vocab), dtype)
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="500x32000,256x152064")
    ap.add_argument("--dtypes", default="float32,float16")
    ap.add_argument("--two-cores", action="store_true")
    a = ap.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q", "exactspec"], cwd=ROOT, env=ENV,
                   check=True, stdout=subprocess.DEVNULL)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'dump':>24} {'command':>12} {'loop s':>7} {'(plot)':>6} {'sweep s':>7} {'time':>6} "
          f"{'loop MiB':>8} {'sweep MiB':>9} {'memory':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for shape in a.shapes.split(","):
            rows, vocab = (int(x) for x in shape.split("x"))
            for dtype in a.dtypes.split(","):
                dump = os.path.join(tmp, f"{shape}-{dtype}.npz")
                _make(dump, rows, vocab, dtype)
                for full in (False, True):
                    (lc, lm, _, err), (sc, sm, _, _) = pair(dump, tmp, full)
                    name = "README" if full else "rrs,optimal"
                    drawn = re.search(r"plot cpu ([0-9.]+)", err)
                    plot_s = f"{float(drawn.group(1)):6.1f}" if drawn else f"{'-':>6}"
                    print(f"{shape + ' ' + dtype:>24} {name:>12} {lc:7.1f} {plot_s} {sc:7.1f} "
                          f"{sc / lc:5.2f}x {lm:8.0f} {sm:9.0f} {sm / lm:5.2f}x", flush=True)
                os.remove(dump)
        if a.two_cores:
            dump = os.path.join(tmp, "2000x32000-float32.npz")
            _make(dump, 2000, 32000, "float32")
            (lc, lm, lw, _), (sc, sm, sw, _) = pair(dump, tmp, True, workers=2)
            print(f"README command, 2000 x 32000 float32, two workers: {sw:.1f} s wall, "
                  f"{sc:.1f} s CPU, {sm:.0f} MiB (loop: {lw:.1f} s wall, {lc:.1f} s CPU, "
                  f"{lm:.0f} MiB)")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
