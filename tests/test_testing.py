"""exactspec in a test suite: the assertions, the exact probability that a check holds, the
``probability`` command, and bad uses refused in one line."""

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from exactspec import Dist, InvalidInput, TooLarge, verify
from exactspec.cli import main
from exactspec.testing import (LosslessAssertionError, assert_acceptance, assert_lossless,
                               assert_lossless_family, probability, probability_report)

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
SAMPLERS = ROOT / "examples" / "engine_tests" / "engine_samplers.py"
P, Q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
GRID = 2**24


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- assertions --------------------------------------------------------------------------

def test_assert_lossless_passes_and_fails_with_the_exact_law():
    assert_lossless("sps", P, Q)
    with pytest.raises(LosslessAssertionError) as info:
        assert_lossless("naive", P, Q)
    err = info.value
    assert isinstance(err, AssertionError)
    # the naive rule's law is q: TV(q, p) by hand
    assert err.bias == sum(abs(a - b) for a, b in zip(P.probs, Q.probs)) / 2 == Fraction(2, 5)
    assert err.law == {0: Fraction(1, 5), 1: Fraction(1, 5), 2: Fraction(3, 5)}
    text = str(err)
    assert text.splitlines()[0] == f"Not lossless: naive on p = {P!r}, q = {Q!r}, k = 1"
    assert "TV(output law, target) = 2/5 (~0.4)" in text
    assert "Mismatched tokens: 3 / 3" in text
    assert " 2      1/5     3/5     +2/5" in text


def test_assert_lossless_under_float32_and_tolerance():
    bias = verify("sps", P, Q, arith="float32").bias          # the float run's TV, by verify
    assert bias == Fraction(37748737, 1407374883553280)
    assert_lossless("sps", P, Q, arith="float32", tolerance=bias)
    with pytest.raises(AssertionError) as info:
        assert_lossless("sps", P, Q, arith="float32", tolerance=bias - Fraction(1, 10**30))
    assert "lossy by rounding only" in str(info.value)
    assert f"TV(output law, target) = {bias}" in str(info.value)
    assert "the bias is above it" in str(info.value)
    with pytest.raises(AssertionError, match="lossy by logic"):      # never excused
        assert_lossless("naive", P, Q, arith="float32", tolerance=1)


def test_a_grid_alone_is_named():
    def le_kernel(s, p, q):
        x = s.draft(q)
        return x if s.uniform() <= p[x] / q[x] else s.draw(Dist([0, 1]))

    p, q = Dist.parse("0,1"), Dist.parse("1,0")
    assert_lossless(le_kernel, p, q)                      # ideal uniforms: u = 0 has weight 0
    with pytest.raises(AssertionError) as info:
        assert_lossless(le_kernel, p, q, grid=GRID)
    text = str(info.value)
    assert "uniforms on a grid of 2**24" in text and "Verdict: lossy by the grid only" in text
    assert info.value.bias == Fraction(1, GRID)          # the one grid point u = 0


def test_family_names_the_smallest_counterexample():
    with pytest.raises(LosslessAssertionError) as info:
        assert_lossless("naive")                   # p, q omitted: the family is searched
    err = info.value
    assert (err.p, err.q) == (Dist.parse("0,1"), Dist.parse("1,0"))
    assert err.bias == 1 == verify("naive", err.p, err.q).bias
    assert "Smallest counterexample: instance 3 of the small instances" in str(err)
    assert_lossless_family("sps", max_tokens=2, max_denominator=3)


def test_assert_acceptance_exact():
    overlap = sum(min(a, b) for a, b in zip(P.probs, Q.probs))
    assert_acceptance("sps", P, Q, overlap)
    assert_acceptance("sps", P, Q, "3/5")
    with pytest.raises(AssertionError) as info:
        assert_acceptance("sps", P, Q, Fraction(1, 2))
    assert "expected 1/2, got 3/5 (got - expected = 1/10" in str(info.value)


@pytest.mark.parametrize("call, words", [
    (lambda: assert_acceptance("sps", P, Q, 0.6), "a float is not exact"),
    (lambda: assert_lossless("sps", P, None), "give both p and q"),
    (lambda: assert_lossless("sps", P, Q, arith="float32", tolerance=-1), "need a number >= 0"),
    (lambda: assert_lossless("sps", P, Q, arith="float32", tolerance="x"), "need a number"),
    (lambda: assert_lossless_family("sps", max_tokens=0), "max_tokens=0"),
    (lambda: assert_lossless("no-such-rule", P, Q), "unknown method"),
])
def test_bad_assertion_arguments(call, words):
    with pytest.raises(InvalidInput, match=words):
        call()


# -- the probability that a check holds -----------------------------------------------------

def le_kernel_never_emits_zero_target(s, p, q):
    x = s.draft(q)
    y = x if s.uniform() <= p[x] / q[x] else s.draw(Dist([0, 1]))
    assert p[y] > 0, f"emitted {y}"
    return True


def test_probability_of_a_zero_uniform_two_ways():
    p, q = Dist.parse("0,1"), Dist.parse("1,0")
    report = probability_report(le_kernel_never_emits_zero_target, p, q, grid=GRID)
    # the grid points j / 2**24 with j / 2**24 <= 0, counted
    zero = sum(1 for j in range(64) if Fraction(j, GRID) <= 0)
    assert report.probability == 1 - Fraction(zero, GRID) == Fraction(GRID - 1, GRID)
    assert report.failing_paths == 1 and report.failing[0].message.startswith("emitted 0")
    assert report.failing[0].probability == report.failure == Fraction(1, GRID)
    assert float(report) == float(Fraction(GRID - 1, GRID))
    # without a grid the zero uniform has probability 0
    assert probability(le_kernel_never_emits_zero_target, p, q) == 1


def test_failing_paths_add_up_to_the_failure():
    def draws_zero(s, p, q, k):
        return s.draw(p) == 0 and s.draw(p) == 0

    report = probability_report(draws_zero, P, Q, k=1)
    assert report.probability == Fraction(1, 4)
    # paths: 0 then 0 (holds), 0 then 1 or 2, and 1 or 2 first: 5 paths, 4 failing
    assert report.paths == 5 and report.failing_paths == 4
    assert sum(f.probability for f in report.failing) == report.failure == Fraction(3, 4)
    assert probability_report(draws_zero, P, Q, max_failing=1).failing_paths == 4
    assert len(probability_report(draws_zero, P, Q, max_failing=1).failing) == 1


def test_numpy_bools_are_bools():
    np = pytest.importorskip("numpy")

    def check(s, p, q):
        return np.bool_(s.coin(Fraction(1, 3)))

    assert probability(check, P, Q) == Fraction(1, 3)


def returns_an_int(s, p, q):
    return 1


def hidden_randomness(s, p, q):
    import random
    return random.random() < 0.5


def never_returns(s, p, q):
    while True:
        pass


def flips_forever(s, p, q):
    while True:
        s.coin(Fraction(1, 2))


@pytest.mark.parametrize("check, error, words", [
    (returns_an_int, InvalidInput, r"returned 1 \(int\), not True or False"),
    (hidden_randomness, InvalidInput, "called random.random"),
    (never_returns, TooLarge, "ran for more than 0.5 s and had not finished"),
    (flips_forever, TooLarge, "random choices"),
])
def test_bad_checks_refused(check, error, words):
    with pytest.raises(error, match=words):
        probability(check, P, Q, seconds=0.5)


def test_bad_probability_arguments():
    for seconds in (0, float("inf"), float("nan"), "5", True):
        with pytest.raises(InvalidInput, match="seconds"):
            probability(returns_an_int, P, Q, seconds=seconds)
    with pytest.raises(InvalidInput, match="max_failing"):
        probability_report(returns_an_int, P, Q, max_failing=-1)
    with pytest.raises(InvalidInput, match="q has 2 entries but p has 3"):
        probability(returns_an_int, P, Dist.parse("1/2,1/2"))


# -- the command -------------------------------------------------------------------------

def test_probability_command_top_k_equals_a_count(capsys):
    """The top-k check on a float32 instance, from the command line, against the grid points
    counted with NumPy's float32: a draft outside the top-2 (token 2, q = 3/5, target 0 after
    top-k) is accepted by the '<=' kernel where u <= 0."""
    np = pytest.importorskip("numpy")
    code, out, err = run(capsys, "probability", f"{SAMPLERS}:emitted_in_top_k_le",
                         "--p", "1/2,3/10,1/5", "--q", "1/5,1/5,3/5", "--arith", "float32",
                         "--json")
    assert code == 0, err
    obj = json.loads(out)
    uniforms = np.arange(GRID, dtype=np.float32) / np.float32(GRID)
    count = int(np.count_nonzero(uniforms <= np.float32(0) / np.float32(0.6)))
    expected = 1 - Fraction(3, 5) * Fraction(count, GRID)
    assert Fraction(obj["probability"]) == expected == Fraction(83886077, 83886080)
    assert obj["probability_float"] == float(expected)
    assert obj["failure"] == "3/83886080" and obj["failing_paths"] == 1
    assert obj["failing"][0]["probability"] == "3/83886080"
    assert obj["arith"] == "float32" and obj["grid"] == GRID and obj["paths"] >= 2
    code, out, _ = run(capsys, "probability", f"{SAMPLERS}:emitted_in_top_k",
                       "--p", "1/2,3/10,1/5", "--q", "1/5,1/5,3/5", "--arith", "float32")
    assert code == 0 and "P(check holds) = 1 " in out and "holds on every path" in out
    assert "float32 arithmetic, uniforms on a grid of 2**24" in out


def test_probability_command_grid_text(capsys, tmp_path):
    f = tmp_path / "checks.py"
    f.write_text("def first(s, p, q):\n    assert s.draw(p) == 0, 'not the first token'\n"
                 "    return True\n")
    code, out, _ = run(capsys, "probability", f"{f}:first", "--p", "1/3,2/3", "--q", "1/2,1/2")
    assert code == 0
    assert "P(check holds) = 1/3" in out and "2/3: draw 1: not the first token" in out


@pytest.mark.parametrize("argv, words", [
    (["sps"], "name the check as file.py:function"),
    ([f"{SAMPLERS}:no_such"], "has no function"),
    ([f"{SAMPLERS}:emitted_in_top_k", "--seconds", "0"], "--seconds=0.0"),
    ([f"{SAMPLERS}:emitted_in_top_k", "--failing", "-1"], "--failing=-1"),
    ([f"{SAMPLERS}:emitted_in_top_k", "--grid", "0"], "--grid=0"),
    ([f"{SAMPLERS}:emitted_in_top_k", "--arith", "float8"], "invalid choice"),
])
def test_probability_command_bad_input(capsys, argv, words):
    code, out, err = run(capsys, "probability", *argv, "--p", "1/2,3/10,1/5",
                         "--q", "1/5,1/5,3/5")
    assert code == 2 and out == "" and words in err and len(err.strip().splitlines()) == 1


def test_probability_command_bad_check(capsys, tmp_path):
    f = tmp_path / "checks.py"
    f.write_text("def returns_token(s, p, q):\n    return s.draw(p)\n")
    code, out, err = run(capsys, "probability", f"{f}:returns_token", "--p", "1/2,1/2",
                         "--q", "1/2,1/2")
    assert code == 2 and out == "" and "not True or False" in err
    assert len(err.strip().splitlines()) == 1


# -- the pytest plugin ---------------------------------------------------------------------

PLUGIN_TESTS = """
import pytest
from exactspec import Dist

def le_kernel(s, p, q):
    x = s.draft(q)
    y = x if s.uniform() <= p[x] / q[x] else s.draw(Dist([0, 1]))
    return p[y] > 0

@pytest.mark.exactspec(grid=2**24)
def test_probability_from_the_marker(exact_probability):
    assert exact_probability(le_kernel, Dist.parse("0,1"), Dist.parse("1,0")) == 1

def test_lossless_fails(exact_lossless):
    exact_lossless("naive", Dist.parse("1/2,1/2"), Dist.parse("3/4,1/4"))

@pytest.mark.exactspec(arith="float32", tolerance="1/1048576")
def test_lossless_within_tolerance(exact_lossless, exact_acceptance, exactspec_options):
    assert exactspec_options == {"arith": "float32", "tolerance": "1/1048576"}
    exact_lossless("sps", Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"))
    exact_acceptance("sps", Dist.parse("1/2,1/2"), Dist.parse("1/3,2/3"), "5/6", arith=None)
"""


def run_plugin(pytester, monkeypatch, source):
    """An inner pytest run with the plugin loaded by ``-p`` (entry points off, so that an
    installed copy is not loaded twice)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_inner=source)
    return pytester.runpytest("-p", "exactspec.pytest_plugin", "-p", "no:cacheprovider")


def test_plugin_shows_the_exact_figures(pytester, monkeypatch):
    result = run_plugin(pytester, monkeypatch, PLUGIN_TESTS)
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines([
        "E       assert 16777215/16777216 == 1",
        "E         exact difference: left - right = -1/16777216 (~-5.96e-08)",
        "E         the left side misses 1 by exactly 1/16777216 = 2**-24",
    ])
    result.stdout.fnmatch_lines([
        "E       exactspec.testing.LosslessAssertionError: Not lossless: naive on p = "
        "Dist({0: 1/2, 1: 1/2}), q = Dist({0: 3/4, 1: 1/4}), k = 1",
        "E       Verdict: lossy by logic*",
        "E       TV(output law, target) = 1/4 (~0.25)",
    ])


@pytest.mark.parametrize("marker, words", [
    ("max_paths=0", "(max_paths=0) on test_inner.py::test_marked: need a positive integer"),
    ("arith='float8'", "(arith='float8') on test_inner.py::test_marked: need a float format"),
    ("tolerance=-1", "(tolerance=-1) on test_inner.py::test_marked: need an exact number"),
    ("seconds=float('inf')", "(seconds=inf) on test_inner.py::test_marked: need a positive"),
    ("grid=True", "(grid=True) on test_inner.py::test_marked: need a positive integer"),
    ("colour=1", "(colour=1) on test_inner.py::test_marked: unknown option"),
    ("'float32'", " on test_inner.py::test_marked: give options by name"),
])
def test_plugin_bad_marker_is_an_error_of_that_test(pytester, monkeypatch, marker, words):
    """A bad marker value fails its own test at setup, in one line; the other tests run."""
    source = f"""
import pytest

@pytest.mark.exactspec({marker})
def test_marked(exact_lossless):
    raise RuntimeError("the body must not run")

def test_other():
    pass
"""
    result = run_plugin(pytester, monkeypatch, source)
    result.assert_outcomes(passed=1, errors=1)
    out = result.stdout.str()
    assert "the body must not run" not in out
    assert "ERROR at setup of test_marked" in out
    reported = [line for line in result.stdout.lines
                if line.startswith("@pytest.mark.exactspec")]
    assert len(reported) == 1 and words in reported[0]


def test_plugin_bad_marker_of_a_deselected_test_is_not_checked(pytester, monkeypatch):
    source = """
import pytest

@pytest.mark.exactspec(grid=0)
def test_marked():
    pass

def test_other():
    pass
"""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_inner=source)
    result = pytester.runpytest("-p", "exactspec.pytest_plugin", "-p", "no:cacheprovider",
                                "-k", "test_other")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, deselected=1)


def test_plugin_is_cheap_to_import():
    code = ("import sys, exactspec.pytest_plugin; print(sorted(m for m in ('sympy', 'numpy', "
            "'networkx', 'exactspec.testing', 'exactspec.gallery') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"


# -- what a statistical test can see ---------------------------------------------------------

from itertools import product as _product                                    # noqa: E402

from exactspec.testing import (chi2_threshold, detectable_bias, exact_power, power,  # noqa: E402
                               samples_needed, statistic_law)
from exactspec.testing.power import tv_moments                               # noqa: E402


def _brute_statistic(statistic, p, counts, n):
    e = [Fraction(c, n) - a for c, a in zip(counts, p.probs)]
    if statistic == "tv":
        return sum(abs(x) for x in e) / 2
    if statistic == "l2":
        return sum(x * x for x in e)
    return sum(n * x * x / a for x, a in zip(e, p.probs))


@pytest.mark.parametrize("statistic", ["tv", "l2", "chi2"])
def test_statistic_law_against_every_sequence(statistic):
    """The multinomial enumeration against all 3**5 ordered sequences of 5 samples."""
    p, r, n = P, Dist.parse("2/5,2/5,1/5"), 5
    law = statistic_law(statistic, p, r, n)
    brute: dict = {}
    for seq in _product(range(3), repeat=n):
        weight = Fraction(1)
        for t in seq:
            weight *= r[t]
        counts = [seq.count(t) for t in range(3)]
        value = _brute_statistic(statistic, p, counts, n)
        brute[value] = brute.get(value, 0) + weight
    assert law == {v: w for v, w in brute.items() if w}
    assert sum(law.values()) == 1
    threshold = sorted(law)[len(law) // 2]
    assert exact_power(statistic, p, r, n, threshold) == sum(
        w for v, w in brute.items() if v > threshold)


def test_power_is_exact_while_small_then_approximate():
    r = Dist.parse("2/5,2/5,1/5")
    small = power("tv", P, r, 5, Fraction(1, 10))
    assert small.exact == exact_power("tv", P, r, 5, Fraction(1, 10))
    assert small.method.startswith("exact")
    large = power("tv", P, r, 10**5, Fraction(1, 10))
    assert large.exact is None and large.method.startswith("normal")


def test_chi2_approximation_against_the_exact_law():
    """At n = 100 (5,151 histograms) the non-central chi-square approximation against the
    exact multinomial law, for a bias of the order of the noise."""
    r = Dist.parse("3/5,1/4,3/20")
    threshold = chi2_threshold(2, 0.05)
    exact = exact_power("chi2", P, r, 100, threshold)
    approx = power("chi2", P, r, 100, threshold, max_outcomes=1)
    assert approx.exact is None and approx.method.startswith("non-central chi-square")
    assert abs(approx.power_float - float(exact)) < 0.03
    assert 0.3 < float(exact) < 0.7


def test_tv_moments_in_closed_form():
    """Two tokens: TV = |X| with X ~ N(d, r(1-r)/n): the folded normal's moments."""
    import math

    n, d, s = 400, 0.01, math.sqrt(0.26 * 0.74 / 400)
    mean, var = tv_moments([0.25, 0.75], [0.26, 0.74], n)
    folded = s * math.sqrt(2 / math.pi) * math.exp(-d * d / (2 * s * s)) + d * math.erf(
        d / (s * math.sqrt(2)))
    assert mean == pytest.approx(folded, rel=1e-9)
    assert var == pytest.approx(d * d + s * s - folded ** 2, rel=1e-6)


def test_samples_needed_and_detectable_bias_agree():
    r = Dist.parse("51/100,29/100,1/5")
    n = samples_needed(P, r, alpha=0.01)
    tv = float(sum(abs(a - b) for a, b in zip(P.probs, r.probs)) / 2)
    found = detectable_bias("chi2", P, r, n, chi2_threshold(2, 0.01))
    assert found == pytest.approx(tv, rel=1e-3)
    assert power("chi2", P, r, n, chi2_threshold(2, 0.01)).power_float == pytest.approx(
        0.5, abs=1e-3)


def test_a_tv_threshold_never_sees_below_itself():
    """With many samples the TV statistic tends to the bias: a threshold test detects about
    its own threshold and never a smaller bias."""
    r = Dist.parse("51/100,29/100,1/5")                     # TV 1/100
    assert detectable_bias("tv", P, r, 10**9, Fraction(1, 200)) == pytest.approx(
        1 / 200, rel=1e-2)
    assert power("tv", P, r, 10**9, Fraction(1, 50)).power_float < 1e-12


def test_gallery_float32_bias_needs_quadrillions_of_samples():
    """The float32 one-draft kernel's exact bias (about 2.7e-8) against the chi-square test
    at level 0.01 with half power; the non-centrality it reaches checked by Marcum's Q
    (the tail of the non-central chi-square with 2 degrees of freedom) as an integral."""
    import mpmath

    r = verify("sps", P, Q, arith="float32").law_dist()
    distance = sum((b - a) ** 2 / a for a, b in zip(P.probs, r.probs))
    n = samples_needed(P, r, alpha=0.01)
    assert 10**15 < n < 10**16
    c = float(chi2_threshold(2, 0.01))

    def marcum(lam):               # P(chi2'(2, lam) > c) = Q_1(sqrt(lam), sqrt(c))
        a = mpmath.sqrt(lam)
        return mpmath.quad(lambda t: t * mpmath.exp(-(t * t + lam) / 2)
                           * mpmath.besseli(0, a * t),
                           [mpmath.sqrt(c), mpmath.sqrt(c) + 20, mpmath.inf])

    assert abs(marcum(float(n * distance)) - 0.5) < 1e-9   # one sample moves it by ~1e-16


@pytest.mark.parametrize("call, words", [
    (lambda: statistic_law("kl", P, P, 3), "choose one of tv, l2, chi2"),
    (lambda: statistic_law("tv", P, P, 0), "n=0"),
    (lambda: statistic_law("chi2", Dist.parse("0,1"), Dist.parse("1/2,1/2"), 3), "positive"),
    (lambda: exact_power("tv", P, P, 3, -1), "threshold=-1"),
    (lambda: samples_needed(P, P), "r equals p"),
    (lambda: detectable_bias("tv", P, Q, 10, Fraction(1, 10), level=1), "level=1"),
])
def test_bad_power_arguments(call, words):
    with pytest.raises(InvalidInput, match=words):
        call()


def test_exact_law_refused_up_front():
    with pytest.raises(TooLarge, match="histograms of 1000 samples on 3 tokens"):
        statistic_law("tv", P, P, 1000, max_outcomes=10_000)


@pytest.mark.slow
@pytest.mark.parametrize("statistic, r, threshold", [
    ("tv", "51/100,29/100,1/5", Fraction(1, 100)),
    ("tv", "51/100,29/100,1/5", Fraction(12, 1000)),
    ("l2", "51/100,29/100,1/5", Fraction(1, 10**4)),
    ("chi2", "51/100,29/100,1/5", None),
])
def test_power_approximations_against_simulation(statistic, r, threshold):
    """At n = 10**4 samples, 40,000 simulated tests (standard error of the rate below
    0.0025): the approximation within 0.03, and for TV the two moments within 2%."""
    np = pytest.importorskip("numpy")
    n, runs = 10**4, 40_000
    r = Dist.parse(r)
    if threshold is None:
        threshold = chi2_threshold(2, 0.01)
    report = power(statistic, P, r, n, threshold)
    assert report.exact is None
    pf = np.array([float(v) for v in P.probs])
    counts = np.random.default_rng(7).multinomial(n, [float(v) for v in r.probs], size=runs)
    e = counts / n - pf
    values = {"tv": 0.5 * np.abs(e).sum(1), "l2": (e ** 2).sum(1),
              "chi2": (n * e ** 2 / pf).sum(1)}[statistic]
    simulated = float((values > float(threshold)).mean())
    assert abs(report.power_float - simulated) < 0.03
    if statistic == "tv":
        mean, var = tv_moments(list(pf), [float(v) for v in r.probs], n)
        assert mean == pytest.approx(values.mean(), rel=0.02)
        assert var == pytest.approx(values.var(), rel=0.02)


def test_an_outer_timer_survives_the_deadline():
    """A caller's own SIGALRM timer (pytest-timeout's signal method) is re-armed afterwards."""
    import signal

    if not hasattr(signal, "setitimer"):
        pytest.skip("no interval timers here")
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *a: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 30)
        assert probability(f"{SAMPLERS}:emitted_in_top_k", P, Q) == 1
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < left <= 30 and not fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.slow
def test_the_example_suite_fails_on_a_broken_sampler(pytester, monkeypatch):
    """``ENGINE_SAMPLER=resample_from_target``: the example suite's law assertion fails with
    one message naming the instance and its exact TV (1/10 on the seed example: the law
    min(p, q) + (1 - 3/5) p = (2/5, 8/25, 7/25))."""
    monkeypatch.setenv("ENGINE_SAMPLER", "resample_from_target")
    suite = ROOT / "examples" / "engine_tests" / "test_engine_sampler.py"
    result = pytester.runpytest(str(suite), "-p", "no:cacheprovider", "-k",
                                "sampler_is_lossless")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        f"E   *LosslessAssertionError: Not lossless: resample_from_target on p = {P!r}, "
        f"q = {Q!r}, k = 1",
        "E       Verdict: lossy by logic*",
        "E       TV(output law, target) = 1/10 (~0.1)",
        "E       Mismatched tokens: 3 / 3",
        "E        token  target  output  output - target",
        "E        0      1/2     2/5     -1/10",
        "E        1      3/10    8/25    +1/50",
        "E        2      1/5     7/25    +2/25",
    ])


def test_detectable_bias_reads_a_direction_below_float64_resolution():
    """The direction from p to r is taken exactly: a bias of 2**-126 (a float32 kernel's clamp
    at tiny) points the same way as a bias of 1/100 and gives the same detectable threshold."""
    from exactspec.testing.power import chi2_threshold, detectable_bias

    p = Dist.parse("1/2,1/2")
    tiny = Fraction(1, 2**126)
    far = detectable_bias("chi2", p, Dist([Fraction(1, 2) + Fraction(1, 100),
                                            Fraction(1, 2) - Fraction(1, 100)]),
                          10**4, chi2_threshold(1, 0.01), max_outcomes=0)
    near = detectable_bias("chi2", p, Dist([Fraction(1, 2) + tiny, Fraction(1, 2) - tiny]),
                           10**4, chi2_threshold(1, 0.01), max_outcomes=0)
    assert near == far and 0 < near < Fraction(1, 50)      # the approximation's threshold
