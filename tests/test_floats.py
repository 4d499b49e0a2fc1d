"""Float formats rounded exactly, against NumPy's own arithmetic; the float interpreter against
brute force over the uniform grid; the verdict that separates rounding from logic."""

from fractions import Fraction
import json
import math
import random

import numpy as np
import pytest

from exactspec import Dist
from exactspec.core.errors import InvalidInput
from exactspec.engine.exact import enumerate_paths
from exactspec.engine.float_sampler import FloatSampler, float_dist
from exactspec.engine.floats import FORMATS, FloatValue, exp, fsum, log, softmax

F32, F16, BF16, F64 = (FORMATS[n] for n in ("float32", "float16", "bfloat16", "float64"))
OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
       "/": lambda a, b: a / b}


def same(a: float, b: float) -> bool:
    """Equal as IEEE values, the sign of zero included, NaN equal to NaN."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1, a) == math.copysign(1, b)


def random_bits(rng, n, width, dtype, finite=True):
    bits = rng.integers(0, 2**width, size=n, dtype=np.uint64).astype(
        {16: np.uint16, 32: np.uint32}[width])
    values = bits.view(dtype)
    return [v for v in values if np.isfinite(v)] if finite else list(values)


EDGE32 = [0.0, -0.0, 1.0, -1.0, float(np.float32(1) + np.float32(2.0**-23)),
          float(np.finfo(np.float32).max), float(np.finfo(np.float32).tiny),
          float(np.float32(2.0**-149)), float(np.float32(3 * 2.0**-149)), 0.5, 3.0, 2.0**-126,
          float(np.float32(1 / 3)), float("inf"), float("-inf")]


@pytest.mark.parametrize("dtype, fmt, width", [(np.float32, F32, 32), (np.float16, F16, 16)])
def test_arithmetic_matches_numpy(dtype, fmt, width):
    """+ - * / on random bit patterns (subnormals, huge values, overflow) and edge values: the
    exactly rounded result is NumPy's, bit for bit (NumPy's float16 computes in float32 and
    rounds once more, which is exact for these four operations since 24 >= 2 * 11 + 2)."""
    rng = np.random.default_rng(12)
    values = random_bits(rng, 400, width, dtype)
    with np.errstate(over="ignore"):
        edge = [dtype(v) for v in EDGE32]
    pairs = list(zip(values[::2], values[1::2])) + [(a, b) for a in edge for b in edge]
    with np.errstate(all="ignore"):
        for a, b in pairs:
            x, y = FloatValue(float(a), fmt), FloatValue(float(b), fmt)
            for name, op in OPS.items():
                got = op(x, y).value
                want = float(op(dtype(a), dtype(b)))
                assert same(got, want), (float(a), name, float(b), got, want)


def test_float64_rounding_matches_python_division():
    """float64: the rounding of random fractions equals Python's correctly rounded integer
    division, across normal, subnormal and tie cases; overflow goes to infinity."""
    rng = random.Random(5)
    for _ in range(3000):
        num = rng.getrandbits(rng.randint(1, 200)) + 1
        den = rng.getrandbits(rng.randint(1, 200)) + 1
        scale = rng.choice([0, 0, 900, -900, 1060, -1060])
        x = Fraction(num, den) * Fraction(2) ** scale
        try:
            want = num * 2**max(scale, 0) / (den * 2**max(-scale, 0))
        except OverflowError:  # Python refuses a quotient that rounds beyond the largest float
            want = math.inf
        assert same(F64.round(x), want)
    assert F64.round(Fraction(2) ** 1024) == math.inf
    assert F64.round(Fraction(1, 2**1075)) == 0.0  # half the smallest subnormal: tie to 0
    assert F64.round(Fraction(3, 2**1076)) == 2.0**-1074


def bfloat16_reference(x32: np.float32) -> float:
    """bfloat16 from its definition: the float32 bits rounded to their top 16, to nearest
    with ties to even (finite inputs)."""
    bits = int(np.float32(x32).view(np.uint32))
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return float(np.uint32(rounded << 16).view(np.float32))


def test_bfloat16_rounding_matches_its_definition():
    rng = np.random.default_rng(7)
    values = random_bits(rng, 4000, 32, np.float32) + [np.float32(v) for v in EDGE32
                                                      if math.isfinite(v)]
    for v in values:
        assert same(BF16.round(Fraction(float(v))) if v != 0 else BF16.round(float(v)),
                    bfloat16_reference(v)), float(v)


def test_bfloat16_arithmetic_matches_float32_then_definition():
    """bfloat16 + - * /: float32 arithmetic followed by the definition's rounding (double
    rounding is exact here: 24 >= 2 * 8 + 2), on values away from float32's subnormals."""
    rng = np.random.default_rng(3)
    values = [np.float32(bfloat16_reference(np.float32(m * 2.0**e)))
              for m, e in zip(rng.uniform(-2, 2, 600), rng.integers(-40, 40, 600))]
    for a, b in zip(values[::2], values[1::2]):
        x, y = FloatValue(float(a), BF16), FloatValue(float(b), BF16)
        for name, op in OPS.items():
            assert same(op(x, y).value, bfloat16_reference(op(a, b))), (a, name, b)


def test_rounding_edges():
    assert F32.round(1 + Fraction(1, 2**24)) == 1.0  # a tie goes to the even neighbour
    assert F32.round(1 + Fraction(3, 2**24)) == 1 + 2.0**-22
    top = Fraction(2**24 - 1, 2**24) * 2**128
    assert F32.round(top) == float(np.finfo(np.float32).max)
    assert F32.round(top + Fraction(2**103)) == math.inf  # the midpoint to 2**128 overflows
    assert F32.round(top + Fraction(2**103) - 1) == float(np.finfo(np.float32).max)
    assert F32.round(Fraction(1, 2**150)) == 0.0 and F32.round(Fraction(3, 2**151)) == 2.0**-149
    assert same(F16.round(Fraction(-1, 2**30)), -0.0)
    assert F16.max_value == 65504.0 and F16.round(65520) == math.inf


def test_sums_follow_the_code_order():
    one, tiny = FloatValue(1.0, F16), FloatValue(2.0**-11, F16)
    assert sum([one, tiny, tiny]).value == 1.0  # Python's sum: left to right
    assert (one + (tiny + tiny)).value == 1 + 2.0**-10
    assert fsum([tiny, tiny, one]).value == 1 + 2.0**-10


def test_exp_and_log_are_correctly_rounded():
    """exp/log decided by certified intervals, against float64 math rounded once more into
    float32 (double rounding could differ on hard cases; on this fixed sample it does not)."""
    rng = np.random.default_rng(1)
    for x in rng.uniform(-80, 80, 300).astype(np.float32):
        assert exp(FloatValue(float(x), F32)).value == float(np.float32(math.exp(float(x))))
    for x in rng.uniform(1e-6, 1e6, 300).astype(np.float32):
        assert log(FloatValue(float(x), F32)).value == float(np.float32(math.log(float(x))))
    assert exp(FloatValue(200.0, F32)).value == math.inf
    assert log(FloatValue(0.0, F32)).value == -math.inf


def test_softmax_in_float32():
    xs = [FloatValue(v, F32) for v in (2.0, 1.0, 0.0)]
    out = softmax(xs)
    e = [exp(FloatValue(v, F32)) for v in (0.0, -1.0, -2.0)]
    total = (e[0] + e[1]) + e[2]
    assert [o.value for o in out] == [(w / total).value for w in e]
    want = np.exp(np.float32([0, -1, -2]), dtype=np.float32)
    assert max(abs(o.value - float(w / want.sum())) for o, w in zip(out, want)) < 1e-7


def test_float_refuses_leaving_the_format():
    with pytest.raises(TypeError, match="s.exp"):
        math.exp(FloatValue(1.0, F32))
    with pytest.raises(InvalidInput, match="mixing"):
        FloatValue(1.0, F32) + FloatValue(1.0, F16)


# -- the float interpreter against brute force over the grid ----------------------------------
def law_of(rule, p, q, fmt, grid):
    return enumerate_paths(rule, float_dist(p, fmt), float_dist(q, fmt),
                           sampler_factory=lambda: FloatSampler(fmt, grid)).law


@pytest.mark.parametrize("grid", [64, 1000])
def test_rounded_uniform_comparison_matches_brute_force(grid):
    """``u * q[x] < p[x]`` in float16 with u on a grid: the enumerated probability is the count
    of grid points where the rounded product is below, point by point."""
    p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
    fp, fq = float_dist(p, F16), float_dist(q, F16)

    def rule(s, p, q, k):
        x = s.draft(q)
        return x if s.uniform() * q[x] < p[x] else "no"

    def scaled(s, p, q, k):
        return 0 if rule(s, p, q, k) != "no" else 1

    law = enumerate_paths(scaled, fp, fq, sampler_factory=lambda: FloatSampler(F16, grid)).law
    brute = Fraction(0)
    for x in p.labels:
        hits = sum(1 for j in range(grid)
                   if FloatValue(F16.round(Fraction(j, grid)), F16) * fq[x] < fp[x])
        brute += q[x] * Fraction(hits, grid)
    assert law[0] == brute


def test_float_pick_matches_brute_force():
    """The inverse CDF with float16 cumulative sums, clamped to the last token, against a
    point-by-point walk over the grid."""
    weights = Dist([Fraction(1, 3), Fraction(1, 3), Fraction(1, 3)])
    fw = float_dist(weights, F16)
    grid = 256

    def rule(s, p, q, k):
        return s.pick(p, s.uniform())

    law = enumerate_paths(rule, fw, fw, sampler_factory=lambda: FloatSampler(F16, grid)).law
    cums, c = [], FloatValue(0.0, F16)
    for w in fw.probs:
        c = c + w
        cums.append(c)
    counts = [0, 0, 0]
    for j in range(grid):
        u = FloatValue(F16.round(Fraction(j, grid)), F16)
        counts[next((i for i, cu in enumerate(cums) if u < cu), 2)] += 1
    assert [law[i] for i in range(3)] == [Fraction(n, grid) for n in counts]


# -- the verdict: rounding or logic ----------------------------------------------------------
from pathlib import Path  # noqa: E402

from exactspec.cli import main  # noqa: E402
from exactspec.rounding import split_bias  # noqa: E402

KERNELS = str(Path(__file__).resolve().parent.parent / "examples" / "float_kernels.py")
P, Q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")


def one_draft_float32_by_numpy(p, q, strict=True):
    """The law of the float32 one-draft kernel computed a second way: NumPy float32 for the
    ratios, residual, sum and cumulative sums; grid counts for the uniforms (``u < c`` holds
    for ``ceil(c N)`` of the ``N`` grid points, ``u <= c`` for ``floor(c N) + 1``)."""
    n = 2**24
    p32, q32 = np.float32([float(v) for v in p.probs]), np.float32([float(v) for v in q.probs])
    mass = np.maximum(p32 - q32, np.float32(0))
    total = np.float32(0)
    for m in mass:
        total = np.float32(total + m)
    r = mass / total
    cum, c = [], np.float32(0)
    for v in r:
        c = np.float32(c + v)
        cum.append(Fraction(float(c)))
    last = max(i for i, v in enumerate(r) if v > 0)
    pick, prev = [], 0
    for i in range(len(r)):
        upto = n if i == last else min(n, max(prev, math.ceil(cum[i] * n)))
        pick.append(Fraction(upto - prev, n) if r[i] > 0 else Fraction(0))
        prev = upto if r[i] > 0 else prev
    law = [Fraction(0)] * len(r)
    for x in range(len(r)):
        c = Fraction(float(np.float32(p32[x] / q32[x])))
        hits = min(n, math.ceil(c * n)) if strict else min(n, math.floor(c * n) + 1)
        accept = Fraction(hits, n)
        law[x] += q.probs[x] * accept
        for t in range(len(r)):
            law[t] += q.probs[x] * (1 - accept) * pick[t]
    return law


@pytest.mark.parametrize("name, strict", [("accept_lt", True), ("accept_le", False)])
def test_float32_kernel_law_matches_numpy_second_computation(name, strict):
    split = split_bias(f"{KERNELS}:{name}", P, Q, arith="float32")
    assert [split.rounded.law[t] for t in P.labels] == one_draft_float32_by_numpy(P, Q, strict)
    assert split.verdict == "lossy-rounding" and split.bias_exact_arith == 0
    assert split.bias == sum(max(split.rounded.law[t] - P[t], 0) for t in P.labels)


def test_rounding_logic_and_tolerance():
    le = split_bias(f"{KERNELS}:accept_le", P, Q, arith="float32")
    assert le.verdict == "lossy-rounding"
    assert le.bias == Fraction(29360127, 703687441776640)
    assert le.bias_grid_only == Fraction(1, 41943040)  # one grid point, 2**-24, times q(2)
    assert not le.ok
    assert split_bias(f"{KERNELS}:accept_le", P, Q, arith="float32", tolerance=le.bias).ok
    assert not split_bias(f"{KERNELS}:accept_le", P, Q, arith="float32",
                          tolerance=le.bias - Fraction(1, 10**30)).ok
    logic = split_bias(f"{KERNELS}:softmax_residual", P, Q, arith="float32", tolerance=1)
    assert logic.verdict == "lossy-logic" and not logic.ok
    assert abs(float(logic.bias_exact_arith.evalf(30)) - 0.14372246669) < 1e-10
    # float64: smaller, and here wholly the grid's (the float64 run's law is that of exact
    # arithmetic on the grid of 2**53: every rounded threshold keeps the same grid points)
    f64 = split_bias(f"{KERNELS}:accept_lt", P, Q, arith="float64")
    assert f64.verdict == "lossy-grid" and f64.bias < le.bias
    assert f64.rounded.law == f64.grid_only.law and f64.bias == f64.bias_grid_only
    # dyadic inputs on a matching grid: the float run is exactly lossless
    dy = split_bias("sps", Dist.parse("1/2,1/4,1/4"), Dist.parse("1/4,1/4,1/2"),
                    arith="float32")
    assert dy.verdict == "lossless" and dy.ok


def test_verdict_without_arith():
    assert split_bias("sps", P, Q).verdict == "lossless"
    naive = split_bias("naive", P, Q)
    assert naive.verdict == "lossy-logic" and naive.bias == Fraction(2, 5)


def test_logits_target_is_the_exact_softmax():
    import sympy

    split = split_bias("sps", logits_p=[2, 1, 0], logits_q=[0, 0, 0], arith="float32")
    assert split.verdict == "lossy-rounding" and split.bias_exact_arith == 0
    e = sympy.E
    assert sympy.simplify(split.p.probs[0] - e**2 / (1 + e + e**2)) == 0
    assert 0 < float(split.bias.evalf(30)) < 1e-7


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_arith(capsys):
    base = ["--p", "1/2,3/10,1/5", "--q", "1/5,1/5,3/5", "--arith", "float32"]
    code, out, err = run_cli(capsys, "verify", f"{KERNELS}:accept_le", *base, "--json")
    obj = json.loads(out)
    assert code == 1 and err == ""
    assert obj["arith"] == "float32" and obj["verdict"] == "lossy-rounding"
    assert obj["bias"] == "29360127/703687441776640" and obj["bias_exact_arith"] == "0"
    assert obj["grid"] == 2**24 and set(obj["differs"]) == {"0", "1", "2"}
    code, out, _ = run_cli(capsys, "verify", f"{KERNELS}:accept_le", *base, "--tolerance",
                           "2**-20")
    assert code == 0 and "LOSSY BY ROUNDING ONLY" in out and "within" in out
    code, out, _ = run_cli(capsys, "verify", f"{KERNELS}:softmax_residual", *base,
                           "--tolerance", "1")
    assert code == 1 and "LOSSY BY LOGIC" in out
    code, out, _ = run_cli(capsys, "verify", "sps", "--logits-p", "2,1,0", "--logits-q",
                           "0,0,0", "--arith", "bfloat16", "--json")
    obj = json.loads(out)
    assert code == 1 and obj["verdict"] == "lossy-rounding" and obj["inputs"] == "logits"
    code, out, _ = run_cli(capsys, "verify", "naive", "--p", "1/2,1/2", "--q", "1/3,2/3",
                           "--json")
    assert code == 1 and json.loads(out)["verdict"] == "lossy-logic"



def test_cli_arith_certificate(capsys, tmp_path):
    from exactspec.replay import check_certificate

    cert = tmp_path / "float32.json"
    code, out, _ = run_cli(capsys, "verify", f"{KERNELS}:accept_lt", "--p", "1/2,3/10,1/5",
                           "--q", "1/5,1/5,3/5", "--arith", "float32", "--certificate",
                           str(cert), "--json")
    assert code == 1 and check_certificate(str(cert), trust=[f"{KERNELS}:accept_lt"]) == []
    assert "not replayed" in check_certificate(str(cert))[0]     # a user's rule: not trusted
    written = json.loads(cert.read_text())
    assert written["claim"] == "law" and written["law"] == json.loads(out)["output"]


@pytest.mark.parametrize("argv", [
    ["--p", "1/2,1/2", "--q", "1/3,2/3", "--arith", "float32", "--tolerance", "x"],
    ["--p", "1/2,1/2", "--q", "1/3,2/3", "--arith", "float8"],
    ["--logits-p", "1,2", "--arith", "float32"],
    ["--logits-p", "1,2", "--logits-q", "1,2,3", "--arith", "float32"],
    ["--logits-p", "1,2", "--logits-q", "1,2", "--arith", "float32", "--certificate", "x.json"],
])
def test_cli_arith_bad_input(capsys, argv):
    code, out, err = run_cli(capsys, "verify", "sps", *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.slow
def test_search_with_arith_and_grid(capsys):
    from exactspec.gallery.search import search_counterexample

    logic = search_counterexample(f"{KERNELS}:softmax_residual", arith="float32")
    assert logic.split.verdict == "lossy-logic" and logic.instances == 3
    assert logic.counterexample.p.probs == (0, 1)
    rounding = search_counterexample(f"{KERNELS}:accept_lt", arith="float16",
                                     tolerance=Fraction(1, 10**4))
    assert rounding.split.verdict == "lossy-rounding"
    assert rounding.split.bias == Fraction(1, 6144) > Fraction(1, 10**4)
    code, out, _ = run_cli(capsys, "verify", f"{KERNELS}:accept_lt", "--search", "--arith",
                           "float16", "--tolerance", "1e-4", "--json")
    obj = json.loads(out)
    assert code == 1 and obj["bias"] == "1/6144" and obj["verdict"] == "lossy-rounding"
    # the smallest: two tokens, thirds, the draft a point mass
    assert obj["counterexample"] == {"p": {"0": "1/3", "1": "2/3"}, "q": {"0": "0", "1": "1"}}
    # one token (1), then two: point masses (4), halves (5), p = 0,1 with q = 1/3,2/3 (1),
    # then this one
    assert obj["instances"] == rounding.instances == 12
    grid = search_counterexample(f"{KERNELS}:accept_le", grid=4)
    assert grid.counterexample is not None and not grid.counterexample.lossless


# -- the platform's elementwise functions (--elementwise) ------------------------------------

def _softmax_pick(s, p, q, k):
    """A float kernel: the target's logits, their softmax, an inverse-CDF draw."""
    w = s.softmax([s.log(v) for v in p.probs])
    return s.pick(Dist(w, p.labels, check=False), s.uniform())


def _softmax_pick_direct(p, library):
    """The same kernel recomputed directly in NumPy float32 over the whole grid of 2**24
    uniforms: ``library`` ``"numpy"`` calls NumPy's log/exp, ``"correct"`` rounds mpmath's
    200-bit values (through float64: a double rounding that could only differ at a float32
    midpoint, and the values are compared with the engine's below)."""
    import mpmath

    def fn(name, values):
        if library == "numpy":
            return getattr(np, name)(values)
        mpmath.mp.prec = 200
        return np.array([float(getattr(mpmath, name)(mpmath.mpf(float(v)))) for v in values],
                        dtype=np.float32)

    pf = np.array([F32.round(v) for v in p.probs], dtype=np.float32)
    logits = fn("log", pf)
    e = fn("exp", (logits - logits.max()).astype(np.float32))
    total = np.float32(0)
    for v in e:                                   # the sum left to right
        total = np.float32(total + v)
    cum = np.cumsum((e / total).astype(np.float32), dtype=np.float32)
    u = (np.arange(2**24, dtype=np.float64) / 2**24).astype(np.float32)
    index = np.minimum(np.searchsorted(cum, u, side="right"), len(cum) - 1)
    return [Fraction(int(c), 2**24) for c in np.bincount(index, minlength=len(cum))]


def test_numpy_float32_softmax_row_differs_from_correctly_rounded():
    row = [FloatValue(0.0, F32), FloatValue(-61 / 16, F32),
           FloatValue(F32.round(Fraction(-1, 3)), F32)]
    correct = [Fraction(v.value) for v in softmax(row)]
    numpy_row = [Fraction(v.value) for v in softmax(row, library="numpy")]
    assert correct == [Fraction(9649709, 16777216), Fraction(13644149, 1073741824),
                       Fraction(3457159, 8388608)]
    assert numpy_row == [Fraction(9649709, 16777216), Fraction(6822075, 536870912),
                         Fraction(13828635, 33554432)]
    # the NumPy row two ways: the engine against NumPy float32 directly
    x = np.array([v.value for v in row], dtype=np.float32)
    e = np.exp(x - x.max())
    total = np.float32(np.float32(e[0] + e[1]) + e[2])
    assert numpy_row == [Fraction(float(v)) for v in (e / total).astype(np.float32)]


def test_a_float_kernel_under_both_elementwise_models_two_ways():
    from exactspec.rounding import split_bias

    p, q = Dist.parse("1/6,1/2,1/3"), Dist.parse("1/3,1/3,1/3")
    want = {"correct": ([Fraction(2796203, 16777216), Fraction(8388609, 16777216),
                         Fraction(1398101, 4194304)], Fraction(1, 12582912)),
            "numpy": ([Fraction(2796203, 16777216), Fraction(1, 2),
                       Fraction(5592405, 16777216)], Fraction(1, 50331648))}
    # NumPy's exp happens to give the grid's own law here: its whole bias is the grid's
    verdicts = {"correct": "lossy-rounding", "numpy": "lossy-grid"}
    for library, (law, tv) in want.items():
        split = split_bias(_softmax_pick, p, q, arith="float32", elementwise=library)
        assert split.verdict == verdicts[library] and split.bias_exact_arith == 0
        assert split.bias_grid_only == Fraction(1, 50331648)
        assert [split.rounded.law[t] for t in p.labels] == law
        assert split.bias == tv == sum(max(a - b, 0) for a, b in zip(law, p.probs))
        assert split.to_json()["elementwise"] == library
        assert _softmax_pick_direct(p, library) == law


def test_cli_elementwise(capsys, tmp_path):
    base = ["verify", "sps", "--p", "1/2,3/10,1/5", "--q", "1/5,1/5,3/5"]
    code, out, err = run_cli(capsys, *base, "--arith", "float32", "--elementwise", "numpy",
                             "--json")
    assert code == 1 and json.loads(out)["elementwise"] == "numpy"
    code, out, err = run_cli(capsys, *base, "--arith", "float32", "--elementwise", "numpy")
    assert "exp/log numpy's float32" in out
    for extra, word in ((["--elementwise", "numpy"], "arith"),
                        (["--arith", "bfloat16", "--elementwise", "numpy"], "bfloat16")):
        code, out, err = run_cli(capsys, *base, *extra)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and word in err
    try:
        import torch  # noqa: F401
    except ImportError:
        code, out, err = run_cli(capsys, *base, "--arith", "float32", "--elementwise", "torch")
        assert code == 2 and out == "" and "PyTorch is not installed" in err


def test_an_exp_overflow_is_reported_where_it_happens(capsys, tmp_path):
    rule = tmp_path / "overflow.py"
    rule.write_text("from exactspec import Dist\n"
                    "def rule(s, p, q, k):\n"
                    "    w = [s.exp(1000 * v) for v in p.probs]\n"
                    "    return s.pick(Dist(w, p.labels, check=False), s.uniform())\n")
    code, out, err = run_cli(capsys, "verify", f"{rule}:rule", "--p", "1/2,1/3,1/6", "--q",
                             "1/6,1/6,2/3", "--arith", "float32")
    line = err.strip()
    assert code == 2 and out == "" and len(line.splitlines()) == 1
    assert "float32 overflow: s.exp(500)" in line and "overflow.py line 3" in line
    s = FloatSampler("float32")
    assert s.exp(88).value == float(np.float32(math.exp(88)))       # below the largest value
    with pytest.raises(InvalidInput, match="overflow"):
        s.exp(89)


# -- inverse CDF over unnormalised weights at u * total ----------------------------------------

def _unnormalised_pick(s, p, q, k):
    """``cumsum(w)`` looked up at ``u * total`` (the first index with ``cum > u * total``)."""
    w = [2 * v for v in p.probs]
    total = sum(w)
    return s.pick(Dist(w, p.labels, check=False), s.uniform() * total)


def test_unnormalised_inverse_cdf_is_lossless_exactly_and_rounded_under_arith():
    from exactspec.rounding import split_bias

    p, q = Dist.parse("1/2,1/3,1/6"), Dist.parse("1/6,1/6,2/3")
    split = split_bias(_unnormalised_pick, p, q, arith="float32")
    # the float run's law is exactly the grid's: every bit of the bias is the grid's
    assert split.bias_exact_arith == 0 and split.verdict == "lossy-grid"
    assert split.bias_grid_only == split.bias
    law = [split.rounded.law[t] for t in p.labels]
    # NumPy float32 directly over the grid of 2**24 uniforms
    w = np.array([2 * np.float32(F32.round(v)) for v in p.probs], dtype=np.float32)
    cum = np.cumsum(w, dtype=np.float32)
    u = (np.arange(2**24, dtype=np.float64) / 2**24).astype(np.float32)
    index = np.minimum(np.searchsorted(cum, u * cum[-1], side="right"), len(w) - 1)
    direct = [Fraction(int(c), 2**24) for c in np.bincount(index, minlength=len(w))]
    assert law == direct == [Fraction(1, 2), Fraction(5592406, 16777216),
                             Fraction(2796202, 16777216)]
    assert split.bias == Fraction(1, 25165824)


def test_a_list_of_weights_picks_an_index_in_every_interpreter():
    from exactspec.engine.sampling import RandomSampler

    def rule(s, p, q, k):
        w = [2 * v for v in p.probs]
        return p.labels[s.pick(w, s.uniform() * sum(w))]

    p = Dist.parse("1/2,1/3,1/6")
    assert enumerate_paths(rule, p, p).law == dict(zip(p.labels, p.probs))
    float_law = enumerate_paths(rule, float_dist(p, F32), float_dist(p, F32),
                                sampler_factory=lambda: FloatSampler(F32)).law
    w = np.array([2 * np.float32(F32.round(v)) for v in p.probs], dtype=np.float32)
    cum = np.cumsum(w, dtype=np.float32)
    u = (np.arange(2**24, dtype=np.float64) / 2**24).astype(np.float32)
    index = np.minimum(np.searchsorted(cum, u * cum[-1], side="right"), len(w) - 1)
    assert list(float_law.values()) == [Fraction(int(c), 2**24) for c in np.bincount(index)]
    s = RandomSampler(np.random.default_rng(0))
    counts = [0, 0, 0]
    for _ in range(3000):
        s._reset()
        counts[rule(s, p, p, 1)] += 1
    assert abs(counts[0] / 3000 - 0.5) < 0.05 and abs(counts[2] / 3000 - 1 / 6) < 0.05


def test_a_lookup_past_the_total_is_refused():
    def short(s, p, q, k):
        return s.pick(Dist([v / 2 for v in p.probs], p.labels, check=False), s.uniform())

    with pytest.raises(InvalidInput, match="past the cumulative sums"):
        enumerate_paths(short, Dist.parse("1/2,1/2"), Dist.parse("1/2,1/2"))


def test_tree_route_says_which_elementwise_functions(capsys):
    from pathlib import Path

    examples = Path(__file__).resolve().parent.parent / "examples"
    base = ["tree", str(examples / "chain_user.json"), "--verifier",
            f"{examples / 'chain_user.py'}:chain", "--arith", "float32"]
    code, out, err = run_cli(capsys, *base, "--elementwise", "numpy", "--json")
    obj = json.loads(out)
    assert obj["elementwise"] == "numpy" and obj["verdict"] == "lossy-rounding", err
    code, out, err = run_cli(capsys, *base)
    assert "(exp/log correctly rounded)" in out.splitlines()[0]
    code, out, err = run_cli(capsys, "tree", str(examples / "tree.json"), "--arith", "float32",
                             "--elementwise", "numpy")
    assert code == 2 and out == "" and "--elementwise" in err


def test_torch_elementwise_dispatch_through_a_stand_in(monkeypatch):
    """The torch route's plumbing (dtype, CPU tensor, read-back) through a stand-in module
    whose functions are NumPy's: it must give NumPy's values exactly (PyTorch itself is not
    installed here; where it is, ``test_cli_elementwise`` runs it for real)."""
    import sys
    import types

    class Tensor:
        def __init__(self, value, dtype):
            self.value, self.dtype = value, dtype

        def item(self):
            return float(self.value)

    fake = types.ModuleType("torch")
    fake.float32, fake.float16, fake.float64, fake.bfloat16 = (np.float32, np.float16,
                                                               np.float64, "bfloat16")
    fake.tensor = lambda x, dtype, device: Tensor(dtype(x), dtype)
    fake.exp = lambda t: Tensor(np.exp(t.value), t.dtype)
    fake.log = lambda t: Tensor(np.log(t.value), t.dtype)
    monkeypatch.setitem(sys.modules, "torch", fake)
    from exactspec.engine.floats import elementwise

    for v in (-61 / 16, 0.75, 3.0):
        x = FloatValue(v, F32)
        assert elementwise("exp", x, "torch").value == float(np.exp(np.float32(v)))
        assert elementwise("log", FloatValue(abs(v), F32), "torch").value == \
            float(np.log(np.float32(abs(v))))
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    with pytest.raises(InvalidInput, match="is not PyTorch"):
        FloatSampler("float32", elementwise="torch")


# -- + - * / through binary64, and float sums in a declared order ---------------------------

def _format_values(rng, fmt, n):
    """Values of ``fmt``: random bit patterns' values, subnormals, the largest, zeros of both
    signs, infinities and NaN."""
    out = [0.0, -0.0, math.inf, -math.inf, math.nan, fmt.max_value, -fmt.max_value,
           fmt.min_subnormal, -fmt.min_subnormal]
    p = fmt.precision
    for _ in range(n):
        sign = rng.choice((1, -1))
        if rng.random() < 0.25:
            out.append(sign * math.ldexp(rng.randrange(1, 1 << (p - 1)), fmt.emin - p + 1))
        else:
            e = rng.randint(fmt.emin, fmt.emax) if rng.random() < 0.5 else rng.randint(-8, 8)
            out.append(sign * math.ldexp(rng.randrange(1 << (p - 1), 1 << p), e - p + 1))
    return out


@pytest.mark.parametrize("fmt", [F32, F16, BF16, F64], ids=lambda f: f.name)
def test_binary64_arithmetic_equals_the_exact_route(fmt):
    """``+ - * /`` computed in Python floats and rounded once equal the exact rational result
    rounded once, on random values, subnormals, overflow, signed zeros, NaN and infinities."""
    rng = random.Random(11)
    values = _format_values(rng, fmt, 600)
    import operator

    half = math.ldexp(1.0, -fmt.precision)             # half an ulp of 1: sums that tie
    ties = [(1.0, half), (1.0, 3 * half), (-1.0, -half), (1.0 + 2 * half, half),
            (fmt.max_value, math.ldexp(1.0, fmt.emax - fmt.precision)),  # overflows at the tie
            (fmt.min_subnormal, 0.5), (3 * fmt.min_subnormal, 0.5)]      # subnormal ties
    pairs = ties + [(rng.choice(values), rng.choice(values)) for _ in range(4000)]
    for a, b in pairs:
        for op in (operator.add, operator.sub, operator.mul, operator.truediv):
            x = FloatValue(a, fmt)
            assert same(x._arith(a, b, op).value, x._arith_exact(a, b, op).value), (a, b, op)
    one = FloatValue(1.0, fmt)
    assert (one + half).value == 1.0 and (one + 3 * half).value == 1.0 + 4 * half


@pytest.mark.parametrize("fmt", [F32, F16, BF16], ids=lambda f: f.name)
def test_rounding_through_binary64_equals_the_exact_rounding(fmt, monkeypatch):
    """A float or a rational rounded into the format through binary64 equals the exact
    rounding: ties to even at midpoints, a hair off midpoints, overflow, subnormals."""
    from exactspec.engine.floats import FloatFormat

    rng = random.Random(12)
    cases = []
    for a in _format_values(rng, fmt, 400):
        if not math.isfinite(a) or a == 0:
            continue
        ulp = Fraction(2) ** (max(math.frexp(a)[1] - 1, fmt.emin) - fmt.precision + 1)
        mid = Fraction(a) + ulp / 2
        cases += [mid, mid + Fraction(1, 10**40), mid - Fraction(1, 10**40),
                  Fraction(a) * Fraction(rng.randrange(1, 10**9), 10**9)]
    cases += [Fraction(1, 3), Fraction(-2, 7), Fraction(2) ** -200, Fraction(2) ** 200]
    fast = [fmt.round(x) for x in cases] + [fmt.round(float(x)) for x in cases]
    monkeypatch.setattr(FloatFormat, "_round_rational", lambda self, x: None)
    monkeypatch.setattr(FloatFormat, "_round_double", lambda self, x: self.round(Fraction(x)))
    exact = [fmt.round(x) for x in cases] + [fmt.round(Fraction(float(x))) for x in cases]
    assert all(same(a, b) for a, b in zip(fast, exact))


@pytest.mark.parametrize("fmt", [F32, F16], ids=lambda f: f.name)
def test_numpy_rows_equal_the_scalar_route(fmt):
    """Whole rows computed by NumPy (:mod:`exactspec.torch_layer.float_rows`) equal the
    element-by-element route, ``maximum``/``minimum`` with NaN and signed zeros too."""
    import operator

    from exactspec.torch_layer import float_rows
    from exactspec.torch_layer.tensor import element_extreme

    rng = random.Random(13)
    values = _format_values(rng, fmt, 300)
    xs = [FloatValue(rng.choice(values), fmt) for _ in range(500)]
    ys = [FloatValue(rng.choice(values), fmt) for _ in range(500)]
    for op in (operator.add, operator.sub, operator.mul, operator.truediv):
        rows = float_rows.binary(op, xs, ys, fmt)
        assert all(same(a.value, op(x, y).value) for a, x, y in zip(rows, xs, ys))
    for maximum in (True, False):
        rows = float_rows.extreme(xs, ys, fmt, maximum)
        assert all(a is element_extreme(x, y, maximum) for a, x, y in zip(rows, xs, ys))
    assert float_rows.binary(operator.add, xs[:3], ys[:3], fmt) is None     # too short
    assert float_rows.binary(operator.add, xs, [Fraction(1)] * 500, fmt) is None


def _sequential(values, fmt):
    acc = F64 if fmt is F64 else F32
    total = FloatValue(values[0], acc)
    for v in values[1:]:
        total = total + FloatValue(v, acc)
    return fmt.round(total.value) if math.isfinite(total.value) else total.value


def _pairwise_torch(values, fmt):
    """torch-avx2 for a row of 8 * 4 * m + r float32 terms with m < 16, written out: 8 lanes,
    each summing its column of the 4-vector groups in 4 running accumulators (one per vector of
    the group), the leftover vectors into the first, then the 4 accumulators, then the tail
    elements and the lanes into one scalar."""
    acc = lambda v: FloatValue(v, F32)           # noqa: E731
    n = len(values)
    vectors = n // 8
    groups = vectors // 4
    lanes = []
    for lane in range(8):
        partial = [acc(0.0) for _ in range(4)]
        for g in range(groups):
            for k in range(4):
                partial[k] = partial[k] + acc(values[(4 * g + k) * 8 + lane])
        first = partial[0]
        for v in range(4 * groups, vectors):
            first = first + acc(values[v * 8 + lane])
        for k in (1, 2, 3):
            first = first + partial[k]
        lanes.append(first)
    final = acc(0.0)
    for k in range(vectors * 8, n):
        final = final + acc(values[k])
    for lane in lanes:
        final = final + lane
    return (acc(0.0) + final).value


@pytest.mark.parametrize("fmt", [F32, F16, BF16, F64], ids=lambda f: f.name)
def test_sum_orders_two_ways(fmt):
    """``sequential`` equals the format's own additions left to right (in the accumulator);
    ``correctly-rounded`` equals the exact sum rounded once; both propagate NaN and
    infinities as IEEE does."""
    from exactspec.engine.float_sums import float_sum

    rng = random.Random(14)
    for n in (1, 2, 5, 17, 100, 300):
        row = [fmt.round(rng.gauss(0, 1) * 2.0 ** rng.randint(-12, 12)) for _ in range(n)]
        assert same(float_sum(row, fmt, "sequential"), _sequential(row, fmt))
        exact = sum((Fraction(v) for v in row), Fraction(0))
        assert same(float_sum(row, fmt, "correctly-rounded"), fmt.round(exact) if exact else 0.0)
    for order in ("sequential", "correctly-rounded", "torch-avx2"):
        assert math.isnan(float_sum([1.0, math.inf, -math.inf], fmt, order))
        assert float_sum([1.0, math.inf, 2.0], fmt, order) == math.inf
        assert math.isnan(float_sum([math.nan] + [1.0] * 40, fmt, order))


def test_torch_order_written_out_and_its_threads():
    """``torch-avx2`` equals the cascade written out where it has one level (fewer than 16
    groups of 4 vectors), and the threads split only rows of at least 2**15 terms."""
    from exactspec.engine.float_sums import float_sum

    rng = random.Random(15)
    for n in (8, 9, 31, 32, 33, 100, 257, 500, 511):
        row = [F32.round(rng.gauss(0, 1) * 2.0 ** rng.randint(-20, 20)) for _ in range(n)]
        assert same(float_sum(row, F32, "torch-avx2"), _pairwise_torch(row, F32)), n
    row = [F32.round(rng.gauss(0, 1)) for _ in range(40000)]
    short = row[:30000]
    assert float_sum(short, F32, "torch-avx2:2") == float_sum(short, F32, "torch-avx2")
    one, two = float_sum(row, F32, "torch-avx2"), float_sum(row, F32, "torch-avx2:2")
    halves = [float_sum(row[:20000], F32, "torch-avx2"), float_sum(row[20000:], F32, "torch-avx2")]
    assert two == float_sum(halves, F32, "torch-avx2")
    assert float_sum(row, F32, "torch-avx2:3") == two          # two chunks of 2**15 at most
    assert isinstance(one, float)


def test_torch_order_matches_torch_bit_for_bit():
    """Where PyTorch is installed on an AVX2 CPU: ``torch-avx2:T`` equals ``torch.sum`` bit
    for bit with ``T`` threads, four dtypes, rows of 1 to 70,000 terms."""
    torch = pytest.importorskip("torch")
    if torch.backends.cpu.get_cpu_capability() != "AVX2":
        pytest.skip("the torch-avx2 order is PyTorch's kernel on an AVX2 CPU")
    from exactspec.engine.float_sums import float_sum

    rng = np.random.default_rng(16)
    saved = torch.get_num_threads()
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            for name in ("float32", "float64", "float16", "bfloat16"):
                for n in (1, 3, 8, 17, 100, 1025, 33000, 70000):
                    x = torch.from_numpy(rng.standard_normal(n) * np.exp(rng.standard_normal(n)))
                    x = x.to(getattr(torch, name))
                    row = [float(v) for v in x.to(torch.float64).numpy()]
                    assert float_sum(row, FORMATS[name], f"torch-avx2:{threads}") == \
                        x.sum().item(), (threads, name, n)
    finally:
        torch.set_num_threads(saved)


def test_tv_on_integer_rows_equals_the_term_by_term_tv():
    """``verify --arith``'s TVs on integer rows equal the term-by-term exact differences
    (every difference and the TV), and a law with a symbolic value keeps the general route."""
    import sympy

    from exactspec.rounding import _tv, _tv_rows, exact_difference

    rng = random.Random(24)
    for n in (2, 5, 40):
        weights = [rng.randint(0, 9) or 1 for _ in range(n)]
        target = Dist([Fraction(w, sum(weights)) for w in weights])
        other = [rng.randint(0, 9) for _ in range(n)]
        other[0] += 1
        law = dict(zip(target.labels, [Fraction(w, sum(other)) for w in other]))
        tv, diffs = _tv_rows(law, target)
        slow = {t: exact_difference(law[t], target[t]) for t in target.labels}
        assert diffs == {t: d for t, d in slow.items() if d != 0}
        assert tv == sum((d for d in slow.values() if d > 0), Fraction(0))
        assert _tv(law, target) == (tv, diffs)
    law = {0: sympy.Rational(1, 2), 1: sympy.Rational(1, 2)}
    assert _tv_rows(law, Dist([Fraction(1, 2), Fraction(1, 2)])) is None
    assert _tv(law, Dist([Fraction(1, 3), Fraction(2, 3)]))[0] == Fraction(1, 6)


def test_each_formats_generator_grid_points_are_values_of_the_format():
    # the float sampler's cut of the uniform reads j / grid as a value of the format without
    # rounding it (exactspec.engine.float_sampler): every grid point must be one
    import random
    from fractions import Fraction

    from exactspec.engine.floats import FORMATS

    rng = random.Random(5)
    for name, fmt in FORMATS.items():
        n = fmt.grid
        points = range(n) if n <= 4096 else [0, 1, n - 1] + rng.sample(range(n), 3000)
        assert all(fmt.round(Fraction(j, n)) == j / n for j in points), name
