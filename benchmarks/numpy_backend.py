"""Benchmark of the NumPy backend against one ``numpy.argsort`` of the same rows.

    .venv/bin/python benchmarks/numpy_backend.py            # the tables (a few minutes)
    .venv/bin/python benchmarks/numpy_backend.py --quick    # smaller, for a smoke run
    .venv/bin/python benchmarks/numpy_backend.py --float    # the float tables only
    .venv/bin/python benchmarks/numpy_backend.py --cpu      # CPU time, not wall (shared machines)

Realistic rows first, every token with its own ratio ``q/p``: softmax of Gaussian logits with
a heavy head (the draft: the target's logits plus Gaussian noise) at temperatures 0.5, 1 and 2,
and next-token pairs from :func:`exactspec.numpy_backend.models.model_pair` (``code``: a trigram
target and a bigram draft over the standard library's sources) at vocabulary sizes the corpus
fills without padding.  For ``|V|`` = 32,000 and 152,064 and batches of 1 and 16, each
routine's time per position is set against one ``numpy.argsort`` of the same row, measured
side by side in the same loop (interleaved rounds, the best round of each kept; a ratio is of
two best rounds).  The bucketed routine is timed with NumPy passes alone and, when numba is
installed (``pip install '.[fast]'``), with its compiled loops, in the same loop.  Then,
separately, the padded n-gram rows (a vocabulary padded with never-seen tokens that share one
ratio, so most of a row is one tie block).  Then the exact
``Fraction`` implementations and exact LP / max-flow solves, at the sizes where they finish,
and one full-size row recomputed exactly to check the float results.
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from exactspec.core.dist import Dist  # noqa: E402
from exactspec.core.lp import linprog_max  # noqa: E402
from exactspec.numpy_backend.models import model_pair  # noqa: E402
from exactspec.numpy_backend import (optimum_bucketed, optimum_sorted,  # noqa: E402
                                     rrs_acceptance)
from exactspec.numpy_backend.twins import (exact_pair, optimum_exact,  # noqa: E402
                                           rrs_acceptance_exact)
from exactspec.optimum.alpha_star import alpha_star_max_flow, draft_multisets  # noqa: E402

K = 4


def rows(vocab_size: int, batch: int, seed: int = 1):
    """Padded n-gram rows (the vocabulary padded to ``vocab_size`` with never-seen tokens)."""
    pair = model_pair("code", vocab_size, max_chars=12_000_000)
    return pair.rows(batch, seed=seed)


def gaussian_rows(vocab_size: int, batch: int, temperature: float, seed: int = 1):
    """Softmax rows of Gaussian logits (standard deviation 2, 64 head tokens lifted by up to
    8); the draft's logits are the target's plus standard Gaussian noise."""
    rng = np.random.default_rng(seed)
    logits = 2.0 * rng.standard_normal((batch, vocab_size))
    logits[:, :64] += 8.0 * rng.random((batch, 64))
    draft = logits + rng.standard_normal((batch, vocab_size))

    def softmax(z):
        z = z / temperature
        z -= z.max(axis=-1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=-1, keepdims=True)
    return softmax(logits), softmax(draft)


#: The ``code`` corpus at 12 million characters has 44,420 distinct training tokens: its
#: n-gram pair fills a vocabulary up to this size without padding.
NGRAM_UNPADDED = 44_000


def ngram_rows(vocab_size: int, batch: int, temperature: float, seed: int = 1):
    pair = model_pair("code", vocab_size, max_chars=12_000_000)
    return pair.rows(batch, seed=seed, temperature=temperature)


#: The clock of :func:`best_of`: wall time, or this thread's CPU time with ``--cpu`` (on a
#: shared machine, time spent waiting for a core then does not count).
CLOCK = time.perf_counter


def best_of(functions, rounds: int) -> list[float]:
    """Interleave the functions ``rounds`` times; keep each one's best time (seconds)."""
    best = [math.inf] * len(functions)
    for f in functions:
        f()                                                  # warm up
    for _ in range(rounds):
        for i, f in enumerate(functions):
            start = CLOCK()
            f()
            best[i] = min(best[i], CLOCK() - start)
    return best


def plain_sorted(p, q, k):
    """The textbook version, for scale only (not a library routine): one argsort of the
    rounded ratios, plain ``cumsum`` prefix sums, ``minimum.accumulate``, ``a* = diff(F)``."""
    P = p / p.sum(axis=-1, keepdims=True)
    Q = q / q.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(P > 0, Q / P, np.inf)
    order = np.argsort(r, axis=-1)
    ps, qs = np.take_along_axis(P, order, -1), np.take_along_axis(Q, order, -1)
    Pc, Qc = np.cumsum(ps, axis=-1), np.cumsum(qs, axis=-1)
    rest = 1.0 - Qc
    h = 1.0 - (rest * rest) * (rest * rest) - Pc if k == 4 else 1.0 - rest ** k - Pc
    M = np.minimum(np.minimum.accumulate(h, axis=-1), 0.0)
    a_sorted = np.diff(Pc + M, axis=-1, prepend=0.0)
    a = np.empty_like(a_sorted)
    np.put_along_axis(a, order, a_sorted, axis=-1)
    return 1.0 + M[..., -1], a


def argsort_rows(p):
    for row in p:
        np.argsort(row)


from exactspec.numpy_backend import _kernels  # noqa: E402

#: numba's compiled loops (``pip install '.[fast]'``): the bucketed routine is timed both
#: ways, side by side, when they are there.
COMPILED = _kernels.available()
ROUTINES = ["argsort (baseline)", "alpha*, a*: plain sort+cumsum+cummin",
            "alpha*, a*: sorted (reference)", "alpha*, a*: bucketed, NumPy passes"] + (
    ["alpha*, a*: bucketed, compiled loops (numba)"] if COMPILED else [])


def timed_rows(P, Q, batches, rounds, singles):
    """Per batch size: each routine's best time per position and the fraction of tokens the
    bucketed version sorted, all routines interleaved in one loop; batch 1 sums ``singles``
    separate rows."""
    out = []
    for batch in batches:
        if batch == 1:
            groups = [(P[i:i + 1], Q[i:i + 1]) for i in range(singles)]
        else:
            groups = [(P[:batch], Q[:batch])]
        totals = np.zeros(len(ROUTINES))
        sorted_tokens = 0
        for p, q in groups:
            routines = [lambda: argsort_rows(p), lambda: plain_sorted(p, q, K),
                        lambda: optimum_sorted(p, q, K),
                        lambda: optimum_bucketed(p, q, K, compiled=False)]
            if COMPILED:
                routines.append(lambda: optimum_bucketed(p, q, K, compiled=True))
            totals += best_of(routines, rounds)
            sorted_tokens += int(optimum_bucketed(p, q, K, compiled=False).sorted_tokens.sum())
        positions = sum(p.shape[0] for p, _ in groups)
        out.append((batch, totals / positions, sorted_tokens / (positions * P.shape[1])))
    return out


def float_table(cases, batches, rounds, singles):
    """``cases``: (row kind, |V|, make(batch) -> (p, q))."""
    out = []
    for kind, V, make in cases:
        P, Q = make(max(max(batches), singles))
        for batch, per, fraction in timed_rows(P, Q, batches, rounds, singles):
            for name, t in zip(ROUTINES, per):
                extra = ""
                if "bucketed" in name:
                    extra = f"{100 * fraction:.1f}% of tokens sorted"
                elif "plain" in name:
                    extra = "for scale: no compensation, not cross-checked"
                out.append((kind, str(V), str(batch), name, f"{t * 1e6:,.0f}",
                            f"{t / per[0]:.2f}", extra))
    return out


def realistic_cases(sizes, temperatures):
    cases = []
    for V in sizes:
        for T in temperatures:
            cases.append((f"gaussian T={T:g}", V,
                          lambda b, V=V, T=T: gaussian_rows(V, b, T)))
    for V in sorted({min(V, NGRAM_UNPADDED) for V in sizes}):
        for T in (0.7, 1.0):
            cases.append((f"n-gram T={T:g}", V, lambda b, V=V, T=T: ngram_rows(V, b, T)))
    return cases


def padded_cases(sizes):
    return [("n-gram padded T=1", V, lambda b, V=V: rows(V, b)) for V in sizes]


def exact_table(sizes):
    out = []
    for V in sizes:
        p, q = rows(V, 1, seed=3)
        argsort = best_of([lambda: np.argsort(p[0])], 5)[0]
        start = time.perf_counter()
        P, Q = exact_pair(p[0], q[0])
        convert = time.perf_counter() - start
        start = time.perf_counter()
        optimum_exact(P, Q, K)
        t_opt = time.perf_counter() - start + convert
        start = time.perf_counter()
        rrs_acceptance_exact(P, Q, K)
        t_rrs = time.perf_counter() - start + convert
        out.append((str(V), "exact Fractions: alpha*, a* (exactspec.optimum.alpha_star)",
                    f"{t_opt:.3g} s", f"{t_opt / argsort:,.0f}"))
        out.append((str(V), f"exact Fractions: RRS acceptance (k={K})",
                    f"{t_rrs:.3g} s", f"{t_rrs / argsort:,.0f}"))
    return out


def multiset_lp(p: Dist, q: Dist, k: int) -> Fraction:
    """``alpha*`` as an exact rational LP over draft multisets (exactspec.core.lp)."""
    multisets = list(draft_multisets(q, k))
    variables = [(m, t) for m, (ms, _) in enumerate(multisets) for t in sorted(set(ms))]
    ub = []
    for m, (ms, weight) in enumerate(multisets):
        ub.append(([1 if v[0] == m else 0 for v in variables], weight))
    for t in p.labels:
        ub.append(([1 if v[1] == t else 0 for v in variables], p[t]))
    value, _ = linprog_max([1] * len(variables), ub=ub)
    return value


def lp_table(budget_s: float):
    out = []
    rng = np.random.default_rng(0)
    plan = [(4, 2, "lp"), (5, 3, "lp"), (6, 3, "lp"),
            (8, 4, "flow"), (16, 4, "flow"), (24, 4, "flow"), (32, 4, "flow")]
    stopped = set()
    for V, k, solver in plan:
        if solver in stopped:
            continue
        p, q = rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V))
        P, Q = exact_pair(p, q)
        argsort = best_of([lambda: np.argsort(p)], 5)[0]
        start = time.perf_counter()
        value = multiset_lp(P, Q, k) if solver == "lp" else alpha_star_max_flow(P, Q, k)
        seconds = time.perf_counter() - start
        assert value == optimum_exact(P, Q, k).alpha_star
        name = ("exact LP over draft multisets (exactspec.core.lp)" if solver == "lp"
                else "exact max-flow over draft multisets (networkx)")
        out.append((f"{V} (k={k})", name, f"{seconds:.3g} s", f"{seconds / argsort:,.0f}"))
        if seconds > budget_s:                  # the next size would take far longer
            stopped.add(solver)
    try:
        from scipy.optimize import linprog  # noqa: F401  (only here, and only if present)
    except ImportError:
        out.append(("-", "scipy.optimize.linprog", "scipy not importable: skipped", "-"))
    else:                                                   # pragma: no cover
        out.append(("-", "scipy.optimize.linprog", "available; not run (exact solves above)",
                    "-"))
    return out


def full_size_check(V: int):
    p, q = rows(V, 1, seed=5)
    P, Q = exact_pair(p[0], q[0])
    start = time.perf_counter()
    ex = optimum_exact(P, Q, K)
    rrs = rrs_acceptance_exact(P, Q, K)
    seconds = time.perf_counter() - start
    lines = []
    results = [optimum_sorted(p, q, K), optimum_bucketed(p, q, K, compiled=False)]
    if COMPILED:
        results.append(optimum_bucketed(p, q, K, compiled=True))
    for fl, label in zip(results, ("sorted", "bucketed", "compiled")):
        d_alpha = abs(Fraction(float(fl.alpha_star[0])) - ex.alpha_star)
        a = fl.a_star[0]
        d_a = max(abs(Fraction(float(a[t])) - v) for t, v in enumerate(ex.a_star.probs))
        rel = max((abs(Fraction(float(a[t])) - v) / v for t, v in enumerate(ex.a_star.probs)
                   if v != 0), default=Fraction(0))
        lines.append(f"  {label:8s} |alpha* - exact| = {float(d_alpha):.2e}  "
                     f"max |a* - exact| = {float(d_a):.2e}  max relative = {float(rel):.2e}")
    d_rrs = abs(Fraction(float(rrs_acceptance(p, q, K)[0])) - rrs)
    lines.append(f"  RRS      |alpha_RRS - exact| = {float(d_rrs):.2e}")
    return seconds, lines


def render(rows_, header):
    widths = [max(len(r[i]) for r in [header] + rows_) for i in range(len(header))]
    left = {7: (0, 3), 4: (1,)}.get(len(header), ())
    fmt = lambda r: "  ".join(c.ljust(w) if i in left or i == len(r) - 1 else c.rjust(w)  # noqa
                              for i, (c, w) in enumerate(zip(r, widths)))
    return "\n".join([fmt(header), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows_])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer rounds")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--float", action="store_true", help="the float tables only")
    parser.add_argument("--cpu", action="store_true",
                        help="time by this thread's CPU time instead of wall time")
    args = parser.parse_args(argv)
    global CLOCK
    CLOCK = time.thread_time if args.cpu else time.perf_counter
    quick = args.quick
    sizes = (32_000,) if quick else (32_000, 152_064)
    rounds = args.rounds or (3 if quick else 7)
    features = np._core._multiarray_umath.__cpu_features__
    simd = "AVX512" if features.get("AVX512F") else ("AVX2" if features.get("AVX2") else "none")
    print(f"exactspec NumPy backend benchmark: numpy {np.__version__}, Python "
          f"{platform.python_version()}, {platform.machine()}, widest SIMD {simd}")
    print(f"k = {K}; {'CPU' if args.cpu else 'wall'} time per position, best of {rounds} "
          "interleaved rounds; "
          f"'x argsort' = best time / best time of one numpy.argsort of the same row, "
          f"measured in the same loop")
    print("bucketed: NumPy passes, and " + (
        "numba's compiled loops (numba " + __import__("numba").__version__ + ")" if COMPILED
        else "no compiled loops (numba not installed: pip install '.[fast]')"))
    header = ["rows", "|V|", "batch", "routine", "us/position", "x argsort", "note"]
    batches = (1, 16)
    singles = 4 if quick else 8
    print()
    print("realistic rows (every ratio distinct; n-gram pairs without padding):")
    print(render(float_table(realistic_cases(sizes, (0.5, 1.0, 2.0)), batches, rounds,
                             singles), header))
    print()
    print("padded rows (never-seen tokens sharing one ratio: one large tie block):")
    print(render(float_table(padded_cases((152_064,)), batches, rounds, singles), header))
    print()
    if args.float:
        return 0
    print(render(exact_table((1_000, 10_000) if quick else (1_000, 10_000, 32_000)),
                 ["|V|", "exact routine (one row)", "time", "x argsort"]))
    print()
    print(render(lp_table(2.0 if quick else 20.0),
                 ["|V|", "exact solver (one instance)", "time", "x argsort"]))
    print()
    V = 32_000 if quick else 152_064
    seconds, lines = full_size_check(V)
    print(f"full-size exact check, |V| = {V}, one row (exact work {seconds:.1f} s):")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
