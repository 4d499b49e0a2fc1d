"""Speed of the exact engine on the multi-draft methods and the optimum.

    python benchmarks/exact_engine.py            # headline cases and growth tables
    python benchmarks/exact_engine.py --quick    # headline cases only, no reference optimum
    python benchmarks/exact_engine.py --largest  # also the largest cases within a minute
    python benchmarks/exact_engine.py --row      # the 152,064-token float row, old vs new
    python benchmarks/exact_engine.py --key      # verify key: plain paths vs merged states
    python benchmarks/exact_engine.py --rho      # rho 8: Q(a_8) products, Fractions vs integers

Headline cases (targets from the issue):

- ``rrs``, ``|V| = 8``, ``k = 4``: the plain enumeration (every path listed; target < 1 s),
  and the merged-state interpreter;
- ``rrs``, ``|V| = 32``, ``k = 8``: ``C(39, 8) = 61,523,748`` draft multisets, ``32^8`` ordered
  draft tuples; only the merged-state interpreter (:mod:`exactspec.engine.merged`) can do it,
  because RRS's residual after a rejection does not depend on which token was rejected
  (target: within a minute);
- ``optimal``, ``|V| = 5``, ``k = 3``: the exact max flow and the enumeration;
- ``alpha*`` and ``a*`` in exact rationals at ``|V| = 152,064`` from float inputs converted
  without loss (``Fraction(float)``, then normalised exactly), compared with a float64 twin
  (target: within ten seconds).

Every exact result printed here is also checked (law = p, acceptance = closed form or
optimum); figures are CPU seconds of this process (``time.process_time``) on this machine,
for comparison within one run.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from exactspec.bounds.closed_forms import (optimum_common_denominator, rrs_acceptance,  # noqa: E402
                                    spechub_acceptance)
from exactspec.core.dist import Dist  # noqa: E402
from exactspec.engine.merged import enumerate_merged  # noqa: E402
from exactspec.methods.kseq import KSEQ_STEPS  # noqa: E402
from exactspec.methods.optimal import transport_plan  # noqa: E402
from exactspec.methods.rrs import RRS_STEPS  # noqa: E402
from exactspec.methods.rrs_wor import RRS_WOR_STEPS  # noqa: E402
from exactspec.methods.spechub import SPECHUB_STEPS  # noqa: E402
from exactspec.optimum.alpha_star import optimal_acceptance, optimum  # noqa: E402
from exactspec.verify import verify  # noqa: E402


def instance(n: int, seed: int) -> tuple[Dist, Dist]:
    """A random rational pair on ``n`` tokens (integer weights 1..12, normalised)."""
    rng = random.Random(seed)
    dists = []
    for _ in range(2):
        weights = [rng.randint(1, 12) for _ in range(n)]
        total = sum(weights)
        dists.append(Dist([Fraction(w, total) for w in weights]))
    return dists[0], dists[1]


def timed(function, *args, **kw):
    """``(CPU seconds, result)``: process time, so that other load on a shared machine does
    not count (everything here is single-threaded Python)."""
    start = time.process_time()
    result = function(*args, **kw)
    return time.process_time() - start, result


def table(title: str, header: list[str], rows: list[list]) -> None:
    print(f"\n### {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")
    sys.stdout.flush()


def secs(t: float) -> str:
    return f"{t:.3f}" if t < 10 else f"{t:.1f}"


# -- the cases -----------------------------------------------------------------------------

def rrs_plain(n, k, seed=0):
    p, q = instance(n, seed)
    t, r = timed(verify, "rrs", p, q, k, max_paths=None)
    assert r.lossless and r.acceptance == rrs_acceptance(p, q, k)
    return t, r.paths


def merged(steps, name, n, k, seed=0, check=None):
    p, q = instance(n, seed)
    t, r = timed(enumerate_merged, steps, p, q, k)
    assert r.law == dict(p) and r.total == 1, name
    if check is not None:
        assert check(p, q, k, r)
    return t, r


def float_alpha_star(pf: np.ndarray, qf: np.ndarray, k: int) -> float:
    """The cumulative minimum in float64 (the float twin of the closed form)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(pf > 0, qf / pf, np.inf)
    order = np.lexsort((np.arange(len(pf)), ratio))
    prefix_p = np.cumsum(pf[order])
    cap = 1 - (1 - np.minimum(np.cumsum(qf[order]), 1.0)) ** k
    slack = np.minimum.accumulate(np.concatenate(([0.0], cap - prefix_p)))
    return float(prefix_p[-1] + slack[-1])


def alpha_star_at_scale(n: int, k: int, seed: int = 0, reference: bool = False):
    rng = np.random.default_rng(seed)
    pf = rng.gamma(0.3, size=n)
    pf /= pf.sum()
    qf = rng.gamma(0.3, size=n)
    qf /= qf.sum()
    t_convert, (p, q) = timed(lambda: (Dist([Fraction(float(x)) for x in pf], normalize=True),
                                       Dist([Fraction(float(x)) for x in qf], normalize=True)))
    t_exact, opt = timed(optimum_common_denominator, p, q, k)
    assert sum(opt.a_star.probs) == opt.alpha_star
    t_float, alpha_float = timed(float_alpha_star, pf, qf, k)
    rel = abs(alpha_float - float(opt.alpha_star)) / float(opt.alpha_star)
    t_reference = None
    if reference:
        t_reference, ref = timed(optimum, p, q, k)
        assert ref == opt, "the two exact implementations disagree"
    bits = max(v.denominator.bit_length() for v in p.probs + q.probs)
    return t_convert, t_exact, t_reference, t_float, rel, bits, opt


# -- main ------------------------------------------------------------------------------------

def headline(reference: bool) -> None:
    rows = []
    t, paths = rrs_plain(8, 4)
    rows.append(["rrs, plain enumeration (every path listed)", 8, 4, f"{paths:,} paths",
                 secs(t), "< 1 s"])
    t, r = merged(RRS_STEPS, "rrs", 8, 4,
                  check=lambda p, q, k, r: r.acceptance == rrs_acceptance(p, q, k))
    rows.append(["rrs, merged states", 8, 4,
                 f"{r.states} states, {r.transitions} transitions", secs(t), "< 1 s"])
    t, r = merged(RRS_STEPS, "rrs", 32, 8,
                  check=lambda p, q, k, r: r.acceptance == rrs_acceptance(p, q, k))
    rows.append(["rrs, merged states", 32, 8,
                 f"{math.comb(39, 8):,} multisets, {32 ** 8:,} draft tuples; {r.paths:,} step "
                 f"histories counted through {r.states} states, {r.transitions} transitions",
                 secs(t), "< 60 s"])
    p, q = instance(5, 0)
    t_flow, plan = timed(transport_plan, p, q, 3)
    t_run, res = timed(verify, "optimal", p, q, 3)
    assert res.lossless and res.acceptance == plan.alpha == optimal_acceptance(p, q, 3)
    rows.append(["optimal: exact max flow, then enumeration", 5, 3,
                 f"{plan.multisets} multisets, {res.paths} paths", secs(t_flow + t_run), ""])
    n = 152_064
    t_convert, t_exact, t_reference, t_float, rel, bits, opt = alpha_star_at_scale(
        n, 4, reference=reference)
    rows.append([f"alpha*, a* from floats (exact, common denominator; "
                 f"float->Fraction {secs(t_convert)} s)", f"{n:,}", 4,
                 f"denominators up to 2^{bits}; float64 twin within {rel:.1e} relative "
                 f"({secs(t_float)} s)", secs(t_exact + t_convert), "< 10 s"])
    if t_reference is not None:
        rows.append(["alpha*, a*: optimum.optimum (reference, Fraction sort and scan)",
                     f"{n:,}", 4, "same Optimum", secs(t_reference), ""])
    table("Headline cases", ["case", "vocab", "k", "size", "seconds", "target"], rows)


def growth() -> None:
    rows = []
    for n, k in [(4, 2), (4, 3), (4, 4), (6, 3), (6, 4), (8, 2), (8, 3), (8, 4), (8, 5)]:
        t, paths = rrs_plain(n, k)
        rows.append([n, k, f"{paths:,}", secs(t)])
    table("rrs, plain enumeration: paths ~ |V|^k", ["vocab", "k", "paths", "seconds"], rows)

    rows = []
    for name, steps in (("rrs", RRS_STEPS), ("kseq", KSEQ_STEPS)):
        for n, k in [(8, 4), (32, 8), (64, 16), (128, 8), (128, 32), (256, 16)]:
            t, r = merged(steps, name, n, k)
            rows.append([name, n, k, f"{math.comb(n + k - 1, k):.2e}", r.states,
                         f"{r.transitions:,}", secs(t)])
    for n in (10, 100, 300, 1000):
        t, r = merged(SPECHUB_STEPS, "spechub", n, 2,
                      check=lambda p, q, k, r: r.acceptance == spechub_acceptance(p, q))
        rows.append(["spechub", n, 2, f"{n - 1:.2e}", r.states, f"{r.transitions:,}", secs(t)])
    table("merged states: about k |V| transitions, each carrying a |V|-vector "
          "P(state, t drafted) of exact rationals",
          ["method", "vocab", "k", "multisets", "states", "transitions", "seconds"], rows)

    rows = []
    for n, k in [(6, 3), (8, 3), (8, 4), (10, 4), (12, 4), (12, 5)]:
        t_plain = None
        if n ** k <= 5000:
            p, q = instance(n, 0)
            t_plain, _ = timed(verify, "rrs-wor", p, q, k, max_paths=None)
        t, r = merged(RRS_WOR_STEPS, "rrs-wor", n, k)
        rows.append([n, k, f"{math.perm(n, k):,}", r.states, f"{r.transitions:,}",
                     "-" if t_plain is None else secs(t_plain), secs(t)])
    table("rrs-wor: merged states are (residual, drafted set)",
          ["vocab", "k", "ordered tuples", "states", "transitions", "plain s", "merged s"], rows)

    rows = []
    for n, k in [(3, 3), (5, 3), (8, 3), (10, 4), (15, 4), (20, 4), (16, 5)]:
        p, q = instance(n, 0)
        t_flow, plan = timed(transport_plan, p, q, k)
        t_run, res = timed(verify, "optimal", p, q, k, max_paths=None)
        assert res.lossless and res.acceptance == plan.alpha
        rows.append([n, k, f"{plan.multisets:,}", secs(t_flow), secs(t_run)])
    table("optimal: the exact max flow grows with the number of multisets C(|V| + k - 1, k)",
          ["vocab", "k", "multisets", "max flow s", "enumeration s"], rows)

    rows = []
    for n in (1_000, 10_000, 100_000, 152_064):
        t_convert, t_exact, _, t_float, rel, bits, _ = alpha_star_at_scale(n, 4)
        rows.append([f"{n:,}", secs(t_convert), secs(t_exact), f"2^{bits}", f"{rel:.1e}"])
    table("alpha*, a* exact from floats: about linear in |V| (one sort, one scan)",
          ["vocab", "float->Fraction s", "exact optimum s", "largest denominator",
           "float64 relative gap"], rows)


def largest() -> None:
    """The largest cases measured to prove within about a minute (several minutes in all)."""
    rows = []
    for name, n, k in [("rrs", 8, 6), ("kseq", 8, 5), ("rrs-wor", 12, 5), ("spechub", 300, 2)]:
        p, q = instance(n, 0)
        t, r = timed(verify, name, p, q, k, max_paths=None)
        assert r.lossless
        rows.append([name, "plain", n, k, f"{r.paths:,} paths", secs(t)])
    for name, steps, n, k in [("rrs", RRS_STEPS, 1024, 8), ("rrs", RRS_STEPS, 512, 16),
                              ("kseq", KSEQ_STEPS, 512, 16), ("rrs-wor", RRS_WOR_STEPS, 14, 6),
                              ("spechub", SPECHUB_STEPS, 2000, 2)]:
        t, r = merged(steps, name, n, k)
        rows.append([name, "merged", n, k, f"{r.states:,} states, {r.transitions:,} "
                     "transitions", secs(t)])
    from exactspec.methods.optimal import optimal_method

    p, q = instance(36, 0)
    t_flow, plan = timed(transport_plan, p, q, 4, budget=10**6)
    t_run, r = timed(verify, optimal_method(budget=10**6), p, q, 4, max_paths=None)
    assert r.lossless and r.acceptance == plan.alpha
    rows.append(["optimal", "max flow + plain", 36, 4, f"{plan.multisets:,} multisets, "
                 f"{r.paths:,} paths", secs(t_flow + t_run)])
    table("Largest cases proved within about a minute (lossless, exact acceptance)",
          ["method", "engine", "vocab", "k", "size", "seconds"], rows)


class fraction_paths:
    """Within this block the exact routines take their ``Fraction`` paths (the integer rows
    switched off): the code that ran before rows went to integers, for old-vs-new figures."""

    def __enter__(self):
        import exactspec.bounds.closed_forms as closed_forms
        import exactspec.core.dist as dist_module
        import exactspec.optimum.closed_form as closed_form

        self.saved = [(m, m.integer_row_of) for m in (closed_form, closed_forms, dist_module)]
        for module, _ in self.saved:
            module.integer_row_of = lambda d: None
        return self

    def __exit__(self, *exc):
        for module, function in self.saved:
            module.integer_row_of = function


def fraction_normalized(row: np.ndarray) -> Dist:
    """The conversion as it was: one ``Fraction`` per float, summed and divided one by one."""
    values = [Fraction(x) for x in row.tolist()]
    total = sum(values, Fraction(0))
    return Dist([v / total for v in values], check=False)


def full_vocabulary_row(n: int = 152_064, k: int = 4, seed: int = 0) -> None:
    """Old and new seconds for one realistic float row pair (softmax of Gaussian logits, the
    draft's logits the target's plus noise), conversion of both rows included, every value
    checked equal.  New: the NumPy rows go to integer rows in vectorised code and the
    ``Fraction``\\ s of a converted row (and of ``a*``) are built when first read; the cost of
    reading them all is its own line."""
    from exactspec.core.dist import overlap

    rng = np.random.default_rng(seed)
    z = rng.normal(size=n) * 2
    pf = np.exp(z - z.max())
    pf /= pf.sum()
    zq = z + rng.normal(size=n) * 0.5
    qf = np.exp(zq - zq.max())
    qf /= qf.sum()

    def convert_new():
        return Dist(pf, normalize=True), Dist(qf, normalize=True)

    def convert_old():
        return fraction_normalized(pf), fraction_normalized(qf)

    def best_new(function, rounds=3):
        return min(timed(function) for _ in range(rounds))[0]

    t_new_conv = best_new(convert_new)
    t_old_conv, (p_old, q_old) = timed(convert_old)
    p, q = convert_new()
    t_read = best_new(lambda: [d.probs for d in convert_new()]) - t_new_conv
    assert p_old.probs == p.probs and q_old.probs == q.probs
    rows = [["conversion of p and q from NumPy (normalised exactly)",
             secs(t_old_conv), secs(t_new_conv), "same Fractions"],
            ["  + reading every entry of both rows as a Fraction (built when first read)",
             "-", secs(max(t_read, 0.0)), ""]]
    for name, function in [(f"alpha*, a*, order, tight (optimum, k = {k})",
                            lambda a, b: optimum(a, b, k)),
                           (f"RRS acceptance 1 - prod TV (k = {k})",
                            lambda a, b: rrs_acceptance(a, b, k)),
                           ("one-draft acceptance sum min(p, q)", overlap)]:
        t_new = best_new(lambda: function(*convert_new()))
        new = function(*convert_new())
        with fraction_paths():
            t_old, old = timed(lambda: function(*convert_old()))
        assert new == old, name
        rows.append([name + ", conversion included", secs(t_old), secs(t_new), "equal"])
        if name.startswith("alpha*"):
            t_a = best_new(lambda: function(*convert_new()).a_star.probs) - t_new
            rows.append(["  + reading every entry of a* as a Fraction", "-",
                         secs(max(t_a, 0.0)), ""])
    table(f"One float row pair at |V| = {n:,}: Fraction path (old) vs integer rows (new), CPU "
          "seconds, conversion of both rows included", ["exact routine", "old", "new",
                                                         "values"], rows)


# -- KEY: plain paths against merged states -------------------------------------------------

#: Named KEY instances where the plain enumeration takes seconds to tens of seconds.
KEY_CASES = [
    ("KEY counterexample 1", "3/5,2/5", "1/2,1/2", 8),
    ("KEY counterexample 2", "1/2,1/5,3/10,0", "1/20,1/20,1/10,4/5", 10),
    ("seed example, 3 tokens", "1/2,3/10,1/5", "1/5,1/5,3/5", 8),
    ("dyadic, 4 tokens", "1/2,1/4,1/8,1/8", "1/8,1/8,1/4,1/2", 7),
    ("sixths, 4 tokens", "1/3,1/3,1/6,1/6", "1/6,1/6,1/3,1/3", 7),
]


def key_section() -> None:
    """``verify key``'s enumeration: the plain paths (old: what the command ran before) and
    the merged states of :mod:`exactspec.key.stepped` (new: what it runs above 250 paths),
    CPU seconds in this process, with law, P(Y in X), explicit acceptance and the number of
    paths asserted equal."""
    from exactspec.bounds.compare import exact_verification

    rows = []
    for name, ps, qs, k in KEY_CASES:
        p, q = Dist.parse(ps), Dist.parse(qs)
        t_old, old = timed(verify, "key", p, q, k, max_paths=None)
        t_new, new = timed(exact_verification, "key", p, q, k)
        a, b = old.enumeration, new.enumeration
        assert type(b).__name__ == "MergedEnumeration", name
        assert (a.law, a.acceptance, a.explicit_acceptance, a.paths) == \
            (b.law, b.acceptance, b.explicit_acceptance, b.paths), name
        assert new.lossless and new.acceptance == optimum(p, q, k).alpha_star, name
        rows.append([name, f"V = {len(p)}, k = {k}", f"{a.paths:,}", f"{b.states:,}",
                     secs(t_old), secs(t_new), f"{t_old / t_new:.0f}x", "equal"])
    table("verify key: plain paths (old) vs merged states (new), CPU seconds",
          ["instance", "size", "paths", "merged states", "old", "new", "speed-up", "values"],
          rows)


# -- rho K: the tight instance's run in Q(a_K) -------------------------------------------------

def rho_section(k: int = 8, repeats: int = 3) -> None:
    """``exactspec rho K``: the engine's run of the tight instance in ``Q(a_K)`` with number
    field products on Fractions (old) and on integers (new), each in a fresh process (the
    field's isolating interval, once refined, is kept), best of ``repeats``; and the whole
    command's CPU seconds beside those of its imports alone (python, exactspec, sympy: the
    part no change here can remove)."""
    import resource
    import subprocess

    python = sys.executable
    root = str(Path(__file__).resolve().parent.parent)
    engine = (f"import sys, time; sys.path.insert(0, {root!r})\n"
              "from fractions import Fraction\n"
              "from exactspec.bounds.rho.closed_form import rho, tight_instance\n"
              "from exactspec.bounds.rho.engine_checks import engine_tight_instance\n"
              "from exactspec.engine import algebraic\n"
              "if sys.argv[1] == 'old':\n"
              "    algebraic.NumberField.multiply = lambda f, a, b: f.reduce(\n"
              "        algebraic._poly_mul(list(a), list(b)) or [Fraction(0)])\n"
              f"rho({k}), tight_instance({k})\n"
              "start = time.process_time()\n"
              f"inst = engine_tight_instance({k})\n"
              "seconds = time.process_time() - start\n"
              "assert inst.checked\n"
              "print(seconds, inst.paths, inst.acceptance.coeffs)\n")
    best, values = {}, {}
    for _ in range(repeats):
        for label in ("old", "new"):
            out = subprocess.run([python, "-c", engine, label], check=True, text=True,
                                 capture_output=True).stdout.split(" ", 2)
            best[label] = min(best.get(label, math.inf), float(out[0]))
            values[label] = (out[1], out[2])
    assert values["old"] == values["new"]           # the same paths, the same acceptance
    rows = [[f"engine_tight_instance({k}), {values['new'][0]} paths in Q(a_{k})",
             secs(best["old"]), secs(best["new"]), f"{best['old'] / best['new']:.1f}x",
             "equal"]]
    table(f"rho {k}: the tight instance through the engine, CPU seconds (best of {repeats}, "
          "fresh processes)",
          ["work", "old (Fraction products)", "new (integer products)", "speed-up", "values"],
          rows)

    def child_cpu(command: list[str]) -> float:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    prefix = f"import sys; sys.path.insert(0, {root!r}); "
    imports = min(child_cpu([python, "-c", prefix + "import exactspec.cli, sympy"])
                  for _ in range(repeats))
    whole = min(child_cpu([python, "-c", prefix + "from exactspec.cli import main; "
                           f"main(['rho', '{k}'])"]) for _ in range(repeats))
    table(f"exactspec rho {k}: whole command vs its imports, CPU seconds (new code, best of "
          f"{repeats})",
          ["whole command", "imports only (python, exactspec, sympy)", "imports' share"],
          [[secs(whole), secs(imports), f"{imports / whole:.0%}"]])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="headline cases only, without the reference optimum")
    parser.add_argument("--largest", action="store_true",
                        help="also the largest cases proved within about a minute (slow)")
    parser.add_argument("--row", action="store_true",
                        help="only the full-vocabulary float row, old path vs new")
    parser.add_argument("--key", action="store_true",
                        help="only verify key: plain paths (old) vs merged states (new)")
    parser.add_argument("--rho", action="store_true",
                        help="only rho 8: the tight instance's number field, old vs new")
    args = parser.parse_args(argv)
    if args.key or args.rho:
        if args.key:
            key_section()
        if args.rho:
            rho_section()
        return 0
    full_vocabulary_row()
    if args.row:
        return 0
    headline(reference=not args.quick)
    if not args.quick:
        growth()
    if args.largest:
        largest()
    return 0


if __name__ == "__main__":
    sys.exit(main())
