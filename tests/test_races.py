"""Races over exponential and Gumbel noise, uniforms combined: exact, sampling and symbolic.

Every exact law here is computed two ways (polytope triangulation against section
integration, cones against sympy integrals or closed forms), and the sampling interpreter is
checked against the exact law by a chi-square test at level 0.001 whose power is stated: with
``N = 6000`` samples every binned TV bias of at least ``detectable_tv(N, df)`` (below 0.06 for
the sizes here, asserted) is detected with probability at least 0.8.
"""

from __future__ import annotations

import random
from fractions import Fraction as F

import numpy as np
import pytest
import sympy

from exactspec.core.dist import Dist
from exactspec.core.errors import InvalidInput, TooLarge, Undecided
from exactspec.engine.polytope import volume, volume_by_slices
from exactspec.engine.races import (cone_probability, first_arrival_law, last_arrival_law, log,
                                    race_rows)
from exactspec.engine.runs import enumerate_runs
from exactspec.engine.sampling import RandomSampler
from exactspec.numpy_backend.harness import goodness_of_fit

P3 = Dist.parse("1/2,1/3,1/6")
R3 = Dist.parse("1/6,1/6,2/3")


def sampled_law(run, n, seed=0):
    """Counts of ``run(s)`` over ``n`` seeded runs of the sampling interpreter."""
    s = RandomSampler(np.random.default_rng(seed))
    counts: dict = {}
    for _ in range(n):
        s._reset()
        y = run(s)
        counts[y] = counts.get(y, 0) + 1
    return counts


def assert_consistent(run, law, n=6000, seed=0):
    counts = sampled_law(run, n, seed)
    keys = list(law)
    assert set(counts) <= set(keys)
    report = goodness_of_fit([counts.get(k, 0) for k in keys], [float(law[k]) for k in keys],
                             alpha=0.001, power=0.8)
    assert report.detectable_tv < 0.06
    assert report.verdict == "consistent", (report.p_value, counts)


# -- polytope volumes, two ways ---------------------------------------------------------------

def _random_polytope(rng, dim):
    box = [(tuple(-1 if k == i else 0 for k in range(dim)), 0) for i in range(dim)]
    box += [(tuple(1 if k == i else 0 for k in range(dim)), 1) for i in range(dim)]
    extra = [(tuple(F(rng.randint(-3, 3)) for _ in range(dim)), F(rng.randint(-1, 3), 2))
             for _ in range(rng.randint(1, 3))]
    return box + extra


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_volume_triangulation_equals_section_integration(dim):
    rng = random.Random(dim)
    for _ in range(8):
        cons = _random_polytope(rng, dim)
        assert volume(cons, dim) == volume_by_slices(cons, dim)


def test_volume_known_values():
    simplex4 = [(tuple(-1 if k == i else 0 for k in range(4)), 0) for i in range(4)]
    simplex4.append(((1, 1, 1, 1), 1))
    assert volume(simplex4, 4) == F(1, 24)
    assert volume([((1, 0), 0), ((-1, 0), 0), ((0, 1), 1), ((0, -1), 0)], 2) == 0   # flat


def test_volume_budget_refused():
    cons = _random_polytope(random.Random(0), 3)
    with pytest.raises(TooLarge):
        volume(cons, 3, max_work=3)


# -- cones of exponentials: closed forms and sympy integrals -----------------------------------

def test_cone_probability_single_race_equals_closed_form():
    rng = random.Random(3)
    for n in (2, 3, 4):
        w = [F(rng.randint(1, 6)) for _ in range(n)]
        want = first_arrival_law(w)
        got = [cone_probability(race_rows(w, j, True, n)) for j in range(n)]
        assert got == want
        lasts = [cone_probability(race_rows(w, j, False, n)) for j in range(n)]
        assert lasts == last_arrival_law(w)
        assert sum(lasts) == 1


def _sympy_probability(n, bounds):
    """``int exp(-sum x)`` with ``bounds`` = [(var, lo, hi)] integrated in the given order."""
    xs = sympy.symbols(f"x0:{n}", positive=True)
    expr = sympy.exp(-sum(xs))
    for i, lo, hi in bounds:
        expr = sympy.expand(sympy.integrate(expr, (xs[i], lo(xs), hi(xs)), conds="none"))
    return sympy.nsimplify(expr)


@pytest.mark.slow
def test_cone_probability_against_sympy_integrals():
    oo = sympy.oo
    # P(E0 <= 2 E1, E1 <= E2)
    want = _sympy_probability(3, [(0, lambda x: 0, lambda x: 2 * x[1]),
                                  (2, lambda x: x[1], lambda x: oo),
                                  (1, lambda x: 0, lambda x: oo)])
    assert cone_probability([(1, -2, 0), (0, 1, -1)]) == F(str(want)) == F(1, 4)
    # P(3 E0 <= E1 <= 2 E2), nested the other way
    want = _sympy_probability(3, [(0, lambda x: 0, lambda x: x[1] / 3),
                                  (1, lambda x: 0, lambda x: 2 * x[2]),
                                  (2, lambda x: 0, lambda x: oo)])
    assert cone_probability([(3, -1, 0), (0, 1, -2)]) == F(str(want))
    # P(E0 <= E1/2, E0 <= E2/3, E3 <= E0): the first arrival of rates (6, 2, 3) after E3
    want = _sympy_probability(4, [(1, lambda x: 2 * x[0], lambda x: oo),
                                  (2, lambda x: 3 * x[0], lambda x: oo),
                                  (3, lambda x: 0, lambda x: x[0]),
                                  (0, lambda x: 0, lambda x: oo)])
    got = cone_probability([(2, -1, 0, 0), (3, 0, -1, 0), (-1, 0, 0, 1)])
    assert got == F(str(want))


# -- races in the exact interpreter -----------------------------------------------------------

def test_single_race_forms_have_the_weights_law():
    forms = {
        "w/E argmax": lambda s: (P3 / s.exponentials(3)).argmax(),
        "E/w argmin": lambda s: (s.exponentials(3) / P3).argmin(),
        "gumbel": lambda s: (log(P3) + s.gumbels(3)).argmax(),
        "race": lambda s: s.race(P3, s.exponentials(3)),
        "race gumbel": lambda s: s.race(P3, s.gumbels(3)),
    }
    for name, run in forms.items():
        assert enumerate_runs(run).law == dict(P3), name


def test_last_arrival_law_two_ways():
    law = enumerate_runs(lambda s: (P3 / s.exponentials(3)).argmin()).law
    w = list(P3.probs)
    assert [law[i] for i in range(3)] == last_arrival_law(w)
    # by hand for two tokens: P(E0/w0 > E1/w1) = w1 / (w0 + w1)
    two = enumerate_runs(lambda s: (Dist.parse("1/4,3/4") / s.exponentials(2)).argmin()).law
    assert two == {0: F(3, 4), 1: F(1, 4)}


def shared_two_races(s):
    E = s.exponentials(3)
    a = (P3 / E).argmax()
    b = (R3 / E).argmax()
    return a, b


def test_shared_noise_joint_law_marginals_and_coupling():
    law = enumerate_runs(shared_two_races).law
    assert sum(law.values()) == 1
    for k in range(3):
        assert sum(w for (a, _), w in law.items() if a == k) == P3[k]
        assert sum(w for (_, b), w in law.items() if b == k) == R3[k]
    # coupled, not independent: the same noise makes equal winners likelier
    assert law[(0, 0)] == F(1, 6) and law[(0, 0)] != P3[0] * R3[0]
    # the joint law by the cones directly
    for (a, b), w in law.items():
        rows = race_rows(list(P3.probs), a, True, 3) + race_rows(list(R3.probs), b, True, 3)
        assert cone_probability(rows) == w


def test_races_with_weights_depending_on_earlier_outcomes():
    def run(s):
        E = s.exponentials(3)
        a = s.race(P3, E)
        w = [0 if v == a else P3[v] for v in range(3)]      # exclude the first winner
        return a, s.race(w, E)

    law = enumerate_runs(run).law
    # memorylessness: after the first arrival at time t, the others' remaining times are
    # independent Exp(w_v), so the second race is P3 without a, whatever t: sampling two
    # tokens without replacement (the Gumbel-top-2 fact)
    assert law == {(a, b): P3[a] * P3[b] / (1 - P3[a])
                   for a in range(3) for b in range(3) if b != a}
    assert_consistent(run, law)


def test_races_mixed_with_coins_and_uniforms():
    def run(s):
        E = s.exponentials(3)
        u = s.uniform()
        a = s.race(P3, E)
        if u < F(1, 3):
            return a, s.race(R3, E)
        return a, s.pick(R3, u)

    law = enumerate_runs(run).law
    joint = enumerate_runs(shared_two_races).law
    # u is independent of E: with probability 1/3 the second race, else pick(R3, u) with
    # u in [1/3, 1), which is token 2 (R3's cumulative sums are 1/6, 1/3, 1)
    for a in range(3):
        for b in range(3):
            want = F(1, 3) * joint.get((a, b), 0) + (F(2, 3) * P3[a] if b == 2 else 0)
            assert law.get((a, b), 0) == want


def test_gumbel_and_exponential_share_the_machinery():
    def run(s):
        G = s.gumbels(3)
        return (log(P3) + G).argmax(), (log(R3) + G).argmax()

    assert enumerate_runs(run).law == enumerate_runs(shared_two_races).law


# -- sampling agrees with the exact law ------------------------------------------------------

@pytest.mark.parametrize("run", [
    lambda s: (P3 / s.exponentials(3)).argmax(),
    lambda s: (log(P3) + s.gumbels(3)).argmax(),
    lambda s: (P3 / s.exponentials(3)).argmin(),
    shared_two_races,
])
def test_sampling_agrees_with_exact(run):
    assert_consistent(run, enumerate_runs(run).law)


def test_sampling_detects_a_wrong_law():
    wrong = {k: F(1, 9) for k in [(a, b) for a in range(3) for b in range(3)]}
    counts = sampled_law(shared_two_races, 6000)
    keys = list(wrong)
    report = goodness_of_fit([counts.get(k, 0) for k in keys], [float(wrong[k]) for k in keys])
    assert report.verdict == "inconsistent"


# -- symbolic ---------------------------------------------------------------------------------

def race_recovery(s, p, q, k):
    """The one-draft rule with the recovered token drawn by an exponential race."""
    x = s.draft(q)
    if s.coin(min(1, p[x] / q[x])):
        return s.accept(x)
    residual = [max(a - b, 0) for a, b in zip(p.probs, q.probs)]
    return p.labels[(residual / s.exponentials(len(p))).argmax()]


def race_over_p(s, p, q, k):
    x = s.draft(q)
    if s.coin(min(1, p[x] / q[x])):
        return s.accept(x)
    return p.labels[(list(p.probs) / s.exponentials(len(p))).argmax()]


@pytest.mark.slow
def test_symbolic_race_recovery_proved():
    from exactspec.engine.symbolic import prove_symbolic

    assert prove_symbolic(race_recovery, 2).verdict == "proved"
    assert prove_symbolic(race_over_p, 2).verdict == "refuted"


def test_symbolic_shared_noise_is_undecided():
    from exactspec.engine.symbolic import prove_symbolic

    def twice(s, p, q, k):
        E = s.exponentials(len(p))
        (list(q.probs) / E).argmax()
        return (list(p.probs) / E).argmax()

    with pytest.raises(Undecided):
        prove_symbolic(twice, 2)


# -- bad uses and budgets ---------------------------------------------------------------------

@pytest.mark.parametrize("run, message", [
    (lambda s: s.race([0, 0, 0], s.exponentials(3)), "sum to 0"),
    (lambda s: s.race([], s.exponentials(1)), "empty"),
    (lambda s: s.race([1, 2], s.exponentials(3)), "against a noise vector"),
    (lambda s: s.race([1, -1], s.exponentials(2)), "negative"),
    (lambda s: ([1, 2] / s.gumbels(2)).argmax(), "is gumbel noise"),
    (lambda s: (log([1, 2]) + s.exponentials(2)).argmax(), "is exponential noise"),
    (lambda s: s.exponentials(0), "positive integer"),
])
def test_bad_uses_are_invalid_input(run, message):
    with pytest.raises(InvalidInput, match=message):
        enumerate_runs(run, max_paths=None)
    with pytest.raises(InvalidInput, match=message):
        sampled_law(run, 1)


def test_single_noise_value_is_undecided_exactly():
    with pytest.raises(Undecided):
        enumerate_runs(lambda s: s.exponentials(2)[0] < 1, max_paths=None)


def test_many_shared_races_are_refused_not_enumerated():
    n = 9
    w = [F(i + 1) for i in range(n)]

    def run(s):
        E = s.exponentials(n)
        return tuple(s.race(w[i:] + w[:i], E) for i in range(4))

    with pytest.raises(TooLarge, match="linear solves"):
        enumerate_runs(run, max_paths=None)


# -- uniforms combined: 1 - u, u < v, a*u < b*v, min/max, products ------------------------------

HALF = F(1, 2)
COMBINED = {
    "u < v": (lambda s: s.uniform() < s.uniform(), F(1, 2)),
    "3u < 2v + 1/5": (lambda s: 3 * s.uniform() < 2 * s.uniform() + F(1, 5), None),
    "1 - u < 1/3": (lambda s: 1 - s.uniform() < F(1, 3), F(1, 3)),
    "min(u, v) < 1/2": (lambda s: min(s.uniform(), s.uniform()) < HALF, F(3, 4)),
    "max(u, v, w) < 1/2": (lambda s: max(s.uniform(), s.uniform(), s.uniform()) < HALF, F(1, 8)),
    "u < v < w": (lambda s: (lambda u, v, w: u < v and v < w)(s.uniform(), s.uniform(),
                                                               s.uniform()), F(1, 6)),
}


def _brute_grid(event, k, grid):
    """P(event) with every grid point of the ``k`` uniforms listed (a second way to count)."""
    hits = 0
    for js in __import__("itertools").product(range(grid), repeat=k):
        us = [F(j, grid) for j in js]
        hits += bool(event(*us))
    return F(hits, grid ** k)


def test_combined_uniforms_exact_values():
    for name, (run, want) in COMBINED.items():
        law = enumerate_runs(run).law
        if want is not None:
            assert law[True] == want, name
    # 3u < 2v + 1/5 by a sympy integral: u < (2v + 1/5) / 3, which stays below 1 on [0, 1]
    v = sympy.symbols("v", positive=True)
    want = sympy.integrate((2 * v + sympy.Rational(1, 5)) / 3, (v, 0, 1))
    assert enumerate_runs(COMBINED["3u < 2v + 1/5"][0]).law[True] == F(str(want))


@pytest.mark.parametrize("grid", [3, 7, 10])
def test_combined_uniforms_on_the_grid_counted_two_ways(grid):
    events = {
        "u < v": (2, lambda u, v: u < v),
        "3u < 2v + 1/5": (2, lambda u, v: 3 * u < 2 * v + F(1, 5)),
        "3u <= 2v + 1/5": (2, lambda u, v: 3 * u <= 2 * v + F(1, 5)),
        "u + v + w <= 1": (3, lambda u, v, w: u + v + w <= 1),
        "u v < 1/2": (2, lambda u, v: u * v < HALF),
        "u v <= 1/2": (2, lambda u, v: u * v <= HALF),
    }
    for name, (k, event) in events.items():
        def run(s, event=event, k=k):
            return event(*[s.uniform() for _ in range(k)])
        got = enumerate_runs(run, grid=grid).law.get(True, 0)
        assert got == _brute_grid(event, k, grid), name


def test_grid_agrees_with_continuous_as_grid_grows():
    cases = [(lambda s: 3 * s.uniform() < 2 * s.uniform() + F(1, 5), 2),
             (lambda s: s.uniform() * s.uniform() < HALF, 2),
             (lambda s: min(s.uniform(), 1 - s.uniform()) < F(1, 3), 2)]
    for run, _ in cases:
        exact = enumerate_runs(run).law[True]
        errors = []
        for grid in (10, 100, 1000):
            counted = enumerate_runs(run, grid=grid).law[True]
            errors.append(abs(float(counted) - float(exact)))
            assert errors[-1] <= 3 / grid
        assert errors[-1] <= errors[0]


def test_products_exact_with_logs():
    x = sympy.symbols("x", positive=True)
    law = enumerate_runs(lambda s: s.uniform() * s.uniform() < HALF).law
    # P(uv < c) = c + int_c^1 c / u du = c - c log c
    c = sympy.Rational(1, 2)
    assert sympy.simplify(law[True] - (c + sympy.integrate(c / x, (x, c, 1)))) == 0
    three = enumerate_runs(lambda s: s.uniform() * s.uniform() * s.uniform() < F(1, 4)).law
    c = sympy.Rational(1, 4)
    assert sympy.simplify(three[True] - c * (1 - sympy.log(c) + sympy.log(c) ** 2 / 2)) == 0
    assert sympy.simplify(three[True] + three[False] - 1) == 0


def test_product_reuse_is_undecided():
    def run(s):
        u, v = s.uniform(), s.uniform()
        if u * v < HALF:
            return u < F(1, 3)
        return False

    with pytest.raises(Undecided):
        enumerate_runs(run, max_paths=None)


@pytest.mark.parametrize("name", ["u < v", "3u < 2v + 1/5", "min(u, v) < 1/2", "u < v < w"])
def test_combined_sampling_agrees_with_exact(name):
    run = COMBINED[name][0]
    assert_consistent(run, enumerate_runs(run).law)


def test_product_sampling_agrees_with_exact():
    run = lambda s: s.uniform() * s.uniform() < HALF          # noqa: E731
    law = {k: F(str(sympy.Float(sympy.N(v, 30), 30))) for k, v in enumerate_runs(run).law.items()}
    assert_consistent(run, law)


# -- the command line -------------------------------------------------------------------------

def _cli(args, capsys):
    from exactspec.cli import main

    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


EXAMPLE = str(__import__("pathlib").Path(__file__).resolve().parent.parent / "examples"
              / "engine_rule.py")
PQ = ["--p", "1/2,1/3,1/6", "--q", "1/6,1/6,2/3"]


def test_cli_proves_the_vllm_shaped_user_rule(capsys):
    import json

    code, out, err = _cli(["verify", f"{EXAMPLE}:vllm_rule", "--tokens", "3", "--json"] + PQ,
                          capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["verdict"] == "lossless" and report["m"] == 3
    assert report["law"] == report["target"]
    code, out, err = _cli(["verify", f"{EXAMPLE}:race_over_p", "--tokens", "3", "--json"] + PQ,
                          capsys)
    assert code == 1, err
    report = json.loads(out)
    # the same TV as the gallery's kernel-shaped vLLM rule with the race over p
    assert report["verdict"] == "lossy-logic" and report["tv"] == "4/27"


def test_cli_bad_races_exit_2(tmp_path, capsys):
    rules = tmp_path / "bad.py"
    rules.write_text(
        "def zero(s, pair, ctx):\n"
        "    return (pair.labels[([0] * len(pair.labels) / s.exponentials(len(pair.labels)))"
        ".argmax()],)\n"
        "def empty(s, pair, ctx):\n"
        "    return (s.race([], s.exponentials(1)),)\n")
    for name, message in (("zero", "sum to 0"), ("empty", "empty")):
        code, out, err = _cli(["verify", f"{rules}:{name}", "--tokens", "1"] + PQ, capsys)
        assert code == 2 and out == ""
        assert len(err.strip().splitlines()) == 1 and message in err
    code, out, err = _cli(["verify", f"{EXAMPLE}:vllm_rule", "--tokens", "0"] + PQ, capsys)
    assert code == 2 and "tokens" in err
    code, out, err = _cli(["verify", f"{EXAMPLE}:vllm_rule", "--tokens", "2", "--backend",
                           "numpy"] + PQ, capsys)
    assert code == 2 and "--backend numpy" in err and out == ""


# -- logarithms: log(u) + log(q) < log(p), -log(u) as an exponential ----------------------------

def test_log_space_acceptance_is_the_product_test():
    from exactspec.core.dist import residual
    from exactspec.verify import verify

    def log_space(s, p, q, k):
        x = s.draft(q)
        if log(p[x]) > log(s.uniform()) + log(q[x]):          # Model Runner V2's test
            return s.accept(x)
        return s.pick(residual(p, q), s.uniform())

    p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
    result = verify(log_space, p, q)
    assert result.lossless and result.acceptance == F(3, 5)

    def product_form(s, p, q, k):
        x = s.draft(q)
        if s.uniform() * q[x] < p[x]:
            return s.accept(x)
        return s.pick(residual(p, q), s.uniform())

    for grid in (7, 10):      # the strict log test is the strict product test, point by point
        assert verify(log_space, p, q, grid=grid).law == verify(product_form, p, q,
                                                                 grid=grid).law


@pytest.mark.parametrize("run, want", [
    (lambda s: log(s.uniform()) + log(HALF) < log(F(1, 3)), F(2, 3)),
    (lambda s: -log(s.uniform()) < -log(s.uniform()), F(1, 2)),        # Exp(1) vs Exp(1)
    (lambda s: log(s.uniform()) - log(s.uniform()) < log(HALF), F(1, 4)),
    (lambda s: log(F(0)) < log(s.uniform()), F(1)),                       # log 0 = -inf
])
def test_logs_exact_and_sampled(run, want):
    law = enumerate_runs(run).law
    assert law[True] == want
    assert_consistent(run, law)


def test_minus_log_uniforms_sum_is_the_product():
    both = enumerate_runs(lambda s: -log(s.uniform()) - log(s.uniform()) > log(F(2))).law
    product = enumerate_runs(lambda s: s.uniform() * s.uniform() < HALF).law
    assert sympy.simplify(both[True] - product[True]) == 0


@pytest.mark.parametrize("run", [
    lambda s: 2 * log(s.uniform()) < log(HALF),          # a square
    lambda s: -log(s.uniform()) < 3,                      # irrational threshold
    lambda s: log(1 - s.uniform()) < log(HALF),           # decreasing view
])
def test_logs_beyond_the_method_are_undecided(run):
    with pytest.raises(Undecided):
        enumerate_runs(run, max_paths=None)


def test_cli_refuses_races_over_too_many_linked_tokens(tmp_path, capsys):
    rules = tmp_path / "big.py"
    rules.write_text(
        "def many(s, pair, ctx):\n"
        "    n = len(pair.labels)\n"
        "    E = s.exponentials(n)\n"
        "    w = [i + 1 for i in range(n)]\n"
        "    return tuple(pair.labels[s.race(w[i:] + w[:i], E)] for i in range(4))\n")
    p = ",".join(["1/9"] * 9)
    code, out, err = _cli(["verify", f"{rules}:many", "--tokens", "4", "--p", p, "--q", p],
                          capsys)
    assert code == 2 and out == "" and "linear solves" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_joint_law_of_three_shared_races_by_both_volume_methods(monkeypatch):
    """Four tokens, three races over one noise vector with different weights: the joint law by
    the triangulation and by section integration (the engine's volume swapped out), equal,
    summing to 1, with the right marginals."""
    from exactspec.engine import races

    weights = [[F(1), F(2), F(3), F(4)], [F(4), F(1), F(1), F(2)], [F(1), F(1), F(5), F(1)]]

    def run(s):
        E = s.exponentials(4)
        return tuple(s.race(w, E) for w in weights)

    races.CACHE.clear(), races.OPTIONS.clear()
    by_triangles = enumerate_runs(run).law
    monkeypatch.setattr(races, "volume", lambda rows, dim, max_work=None:
                        volume_by_slices(rows, dim))
    races.CACHE.clear(), races.OPTIONS.clear()
    by_sections = enumerate_runs(run).law
    races.CACHE.clear(), races.OPTIONS.clear()
    assert by_triangles == by_sections
    assert sum(by_triangles.values()) == 1
    for r, w in enumerate(weights):
        for j in range(4):
            assert sum(v for k, v in by_triangles.items() if k[r] == j) == w[j] / sum(w)


def test_symbolic_one_minus_u_acceptance_proved():
    from exactspec.core.dist import residual
    from exactspec.engine.symbolic import prove_symbolic

    def flipped(s, p, q, k):
        x = s.draft(q)
        if 1 - s.uniform() > 1 - p[x] / q[x]:          # u < p/q, written with 1 - u
            return s.accept(x)
        return s.pick(residual(p, q), 1 - s.uniform())

    assert prove_symbolic(flipped, 2).verdict == "proved"


def test_merged_interpreter_runs_races():
    from exactspec.core.dist import residual
    from exactspec.engine.exact import enumerate_paths
    from exactspec.engine.merged import Done, Stepped, enumerate_merged

    def step(s, p, q, k, state):
        x = s.draft(q)
        if s.coin(min(1, p[x] / q[x])):
            return Done(s.accept(x))
        return Done(p.labels[(list(residual(p, q).probs) / s.exponentials(len(p))).argmax()])

    def plain(s, p, q, k):
        return step(s, p, q, k, None).output

    p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
    merged = enumerate_merged(Stepped(lambda p, q, k: None, step, "race"), p, q, 1)
    assert merged.law == enumerate_paths(plain, p, q, 1).law == dict(p)


def test_cli_products_exact_and_on_growing_grids(capsys):
    import json

    rules = str(__import__("pathlib").Path(EXAMPLE).parent / "uniform_rules.py")
    code, out, _ = _cli(["verify", f"{rules}:flipped", "--json"] + PQ, capsys)
    assert code == 0 and json.loads(out)["lossless"]
    code, out, _ = _cli(["verify", f"{rules}:two_uniforms", "--json"] + PQ, capsys)
    assert code == 1
    exact = sympy.sympify(json.loads(out)["bias"])
    assert sympy.simplify(exact - sympy.log(2) / 3) == 0
    errors = []
    for grid in (10, 100, 1000):
        code, out, _ = _cli(["verify", f"{rules}:two_uniforms", "--json", "--grid", str(grid)]
                            + PQ, capsys)
        bias = F(json.loads(out)["bias"])                    # rational on the grid
        errors.append(abs(float(bias) - float(exact)))
    assert errors[2] < errors[1] < errors[0] and errors[2] < 0.01


# -- races under --arith, Gumbel-max over raw logits, products of cut uniforms ------------------

RACE_RULES = '''
from exactspec.engine.races import log


def race_p(s, p, q, k):
    return p.labels[(list(p.probs) / s.exponentials(len(p.labels))).argmax()]


def gumbel_p(s, p, q, k):
    return p.labels[(log(list(p.probs)) + s.gumbels(len(p.labels))).argmax()]


def gumbel_logits(s, p, q, k):
    return p.labels[([s.log(v) for v in p.probs] + s.gumbels(len(p.labels))).argmax()]


def recovery_race(s, p, q, k):
    x = s.draft(q)
    if s.uniform() < p[x] / q[x]:
        return x
    r = [max(a - b, 0) for a, b in zip(p.probs, q.probs)]
    return p.labels[(r / s.exponentials(len(p.labels))).argmax()]
'''


def test_races_over_float32_weights_run_under_arith(tmp_path, capsys):
    import json

    from exactspec.engine.floats import FORMATS
    from exactspec.rounding import split_bias

    rules = tmp_path / "races.py"
    rules.write_text(RACE_RULES)
    f32 = FORMATS["float32"]
    w = [F(f32.round(v)) for v in P3.probs]           # the weights as float32 holds them
    law = first_arrival_law(w)
    assert law == [F(33554432, 67108865), F(22369622, 67108865), F(11184811, 67108865)]
    for name in ("race_p", "gumbel_p"):
        split = split_bias(f"{rules}:{name}", P3, R3, arith="float32")
        assert [split.rounded.law[t] for t in P3.labels] == law
        assert split.verdict == "lossy-rounding" and split.bias == F(1, 134217730)
    code, out, err = _cli(["verify", f"{rules}:recovery_race", "--arith", "float32",
                           "--json"] + PQ, capsys)
    report = json.loads(out)
    assert code == 1 and report["verdict"] == "lossy-rounding", err
    assert report["bias_exact_arith"] == "0" and report["bias"] == "1/100663293"


def test_gumbel_max_over_raw_logits():
    from exactspec.engine.races import logit_weights

    def over(logits):
        return lambda s: (list(logits) + s.gumbels(len(logits))).argmax()

    assert enumerate_runs(over([0, 0])).law == {0: F(1, 2), 1: F(1, 2)}
    law = enumerate_runs(over([F(1), 0, F(-1)])).law
    e = sympy.E
    softmax = [e / (e + 1 + 1 / e), 1 / (e + 1 + 1 / e), (1 / e) / (e + 1 + 1 / e)]
    for j in range(3):
        assert sympy.simplify(law[j] - softmax[j]) == 0
    assert sum(law.values()).equals(1)
    # numpy arrays of logits, -inf masks a token, logs of rationals give rational weights
    law = enumerate_runs(lambda s: (np.array([0.0, -np.inf, 0.0]) + s.gumbels(3)).argmax()).law
    assert law == {0: F(1, 2), 2: F(1, 2)}
    assert logit_weights([sympy.log(F(1, 6)), sympy.log(F(1, 2))]) == [F(1, 3), F(1)]
    assert_consistent(over([F(1), 0, F(-1)]), {j: float(v) for j, v in
                                               enumerate(sympy.N(x) for x in softmax)})


def test_gumbel_over_log_probabilities_is_lossless_in_exact_arithmetic(tmp_path, capsys):
    rules = tmp_path / "races.py"
    rules.write_text(RACE_RULES)
    code, out, err = _cli(["verify", f"{rules}:gumbel_logits"] + PQ, capsys)
    assert code == 0 and "LOSSLESS" in out, err


def test_bad_logits_are_invalid_input():
    with pytest.raises(InvalidInput, match="all -inf"):
        enumerate_runs(lambda s: ([-np.inf, -np.inf] + s.gumbels(2)).argmax())
    with pytest.raises(InvalidInput, match="not a finite"):
        enumerate_runs(lambda s: ([np.nan, 0.0] + s.gumbels(2)).argmax())
    with pytest.raises(InvalidInput, match="exponential"):
        enumerate_runs(lambda s: ([0, 0] + s.exponentials(2)).argmax())
    with pytest.raises(InvalidInput, match="2 logits against a noise vector of 3"):
        enumerate_runs(lambda s: ([0, 0] + s.gumbels(3)).argmax())


def test_a_product_whose_factor_was_already_compared(capsys):
    import itertools

    def prefix(s):
        u, v = s.uniform(), s.uniform()
        if u < F(1, 2):
            return 0
        return 1 if u * v < F(1, 3) else 2

    law = enumerate_runs(prefix).law
    u, v = sympy.symbols("u v", positive=True)
    integral = sympy.integrate(sympy.Min(1, sympy.Rational(1, 3) / u), (u, sympy.Rational(1, 2), 1))
    assert law[0] == F(1, 2)
    assert sympy.simplify(law[1] - integral) == 0 and sympy.simplify(law[1] - sympy.log(2) / 3) == 0
    grid = enumerate_runs(prefix, grid=8).law                 # counted, and by brute force
    brute = sum(1 for i, j in itertools.product(range(8), repeat=2)
                if not F(i, 8) < F(1, 2) and F(i * j, 64) < F(1, 3))
    assert grid[1] == F(brute, 64) == F(19, 64)
    assert_consistent(prefix, {k: float(sympy.N(x)) for k, x in law.items()})


def test_a_running_product_of_uniforms_two_ways():
    import itertools

    from exactspec.engine.joint import cut, extend, product_below_in_box

    # the carried density against the corners of the box, on cut uniforms
    for t, boxes in [(F(1, 3), [(F(1, 2), F(1)), (F(0), F(1))]),
                     (F(1, 5), [(F(1, 4), F(3, 4)), (F(1, 3), F(1))])]:
        _, mass = cut(extend(None, boxes), t, True)
        assert sympy.simplify(mass - product_below_in_box(t, boxes)) == 0

    def running(s):                       # stop once the running product drops below 1/3
        u1, u2, u3 = s.uniform(), s.uniform(), s.uniform()
        if u1 < F(1, 3):
            return 0
        if u1 * u2 < F(1, 3):
            return 1
        return 2 if u1 * u2 * u3 < F(1, 3) else 3

    law = enumerate_runs(running).law
    L = sympy.log(3)
    # nested events: P(stop by step j) = P(u_1 ... u_j < 1/3) = (1/3) sum_{i<j} (log 3)^i / i!
    closed = [sympy.Rational(1, 3), L / 3, L**2 / 6, 1 - sympy.Rational(1, 3) * (1 + L + L**2 / 2)]
    for j in range(4):
        assert abs(sympy.N(law[j] - closed[j], 50)) < 1e-45
        assert sympy.simplify(law[j] - closed[j]) == 0
    grid = enumerate_runs(running, grid=6).law              # counted, and by brute force
    brute = [0, 0, 0, 0]
    for js in itertools.product(range(6), repeat=3):
        u = [F(j, 6) for j in js]
        brute[0 if u[0] < F(1, 3) else 1 if u[0] * u[1] < F(1, 3) else
              2 if u[0] * u[1] * u[2] < F(1, 3) else 3] += 1
    assert [grid.get(j, 0) for j in range(4)] == [F(c, 216) for c in brute]
    assert_consistent(running, {j: float(sympy.N(v)) for j, v in law.items()})

    def partial(s):                       # reuses one factor of an earlier product only
        u1, u2, u3 = s.uniform(), s.uniform(), s.uniform()
        return 0 if u1 * u2 < F(1, 3) else (1 if u1 * u3 < F(1, 3) else 2)

    with pytest.raises(Undecided, match="some, but not all"):
        enumerate_runs(partial)
