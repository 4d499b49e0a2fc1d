"""Half precision as torch's CPU kernels compute it, in the exact tensor layer under ``--arith``.

A ``float16``/``bfloat16`` tensor multiplied or divided by a Python number (or a one-element
tensor of another dtype) is computed in ``float32`` ("opmath": the number rounded to
``float32``, the result rounded once into the half format); ``number / t`` is
``t.reciprocal() * number``; additions, subtractions, comparisons, ``where`` and ``clamp``
round the number into the half format through ``float32`` (c10's ``Half(float)``).  The
references here are computed in the test itself, from ``struct``'s ``float32`` and a
round-to-nearest-even on Fractions, never by the layer's own rounding.

Where real torch is importable (not a dependency: skipped otherwise; for instance
``sys.path.append("/tmp/torchenv/lib/python3.11/site-packages")`` before pytest runs), every
elementwise op of the layer is compared bit for bit with torch's over random bit patterns of
``float16``, ``bfloat16``, ``float32`` and ``float64`` and random Python scalars.
"""

from __future__ import annotations

import math
import operator
import struct
from fractions import Fraction as F

import numpy as np
import pytest

from exactspec.core.errors import InvalidInput
from exactspec.engine.floats import FORMATS, FloatValue, exact_value
from exactspec.torch_layer import installed
from exactspec.torch_layer.context import Run

#: precision and smallest normal exponent of the formats, for the reference rounding below
SPEC = {"float16": (11, -14, 15), "bfloat16": (8, -126, 127), "float32": (24, -126, 127)}


# -- the reference, written here ----------------------------------------------------------
def rne(x, name: str):
    """``x`` (a Fraction) rounded to nearest, ties to even, into the format ``name``; ``inf``
    beyond its largest value (the test's own helper, from Fractions)."""
    p, emin, emax = SPEC[name]
    if x == 0:
        return F(0)
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if F(2) ** e > a:
        e -= 1
    spacing = F(2) ** (max(e, emin) - p + 1)
    q, r = divmod(a, spacing)
    if r > spacing / 2 or (r == spacing / 2 and q % 2):
        q += 1
    out = q * spacing
    if out >= F(2) ** (emax + 1):
        return math.inf if x > 0 else -math.inf
    return out if x > 0 else -out


def f32(x):
    """``x`` (a Python float, or an exact Fraction of one) as ``float32`` rounds it, by
    ``struct`` (the C cast of a double)."""
    return F(struct.unpack("f", struct.pack("f", float(x)))[0])


def opmath(x, s, op, name: str):
    """``x op s`` as torch computes a half tensor op a Python float: ``s`` to ``float32``, the
    operation in ``float32``, the result to the half format."""
    return rne(f32(op(F(x), f32(s))), name)


def _values(t) -> list:
    return [exact_value(v) for v in t._values()]


def _half_values(name: str, lo: F, hi: F) -> list:
    """Every value of the format in ``[lo, hi)`` (a binade)."""
    p = SPEC[name][0]
    return [lo + (hi - lo) * F(k, 2 ** (p - 1)) for k in range(2 ** (p - 1))]


@pytest.fixture()
def torch():
    with installed(Run(None, FORMATS["float32"])) as t:
        yield t


# -- the examples, exact ------------------------------------------------------------------
def test_the_three_examples_bit_for_bit(torch):
    assert _values(torch.tensor([3.0], dtype=torch.float16) * 0.1) == [F(1229, 4096)]
    assert _values(torch.tensor([1.0], dtype=torch.float16) / 0.3) == [F(1707, 512)]
    assert _values(torch.tensor([1.0078125], dtype=torch.bfloat16) * 0.1) == [F(103, 1024)]
    # half arithmetic on the number rounded into the format gives the other answers
    assert rne(3 * rne(F(0.1), "float16"), "float16") == F(1228, 4096)
    assert rne(1 / rne(F(0.3), "float16"), "float16") == F(1706, 512)
    assert rne(F(1.0078125) * rne(F(0.1), "bfloat16"), "bfloat16") == F(207, 2048)


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_every_value_in_one_to_two_times_a_tenth_and_over_three_tenths(torch, name):
    """All 1,024 float16 and 128 bfloat16 values of [1, 2): ``t * 0.1`` and ``t / 0.3`` equal
    the float32 computation rounded into the format (702 of the 2,304 were wrong when the
    layer rounded the number into the half format first)."""
    xs = _half_values(name, F(1), F(2))
    t = torch.tensor([float(x) for x in xs], dtype=getattr(torch, name))
    for op, s in ((operator.mul, 0.1), (operator.truediv, 0.3)):
        got = _values(op(t, s))
        want = [opmath(x, s, op, name) for x in xs]
        assert got == want, (name, op, sum(g != w for g, w in zip(got, want)))


def test_reversed_in_place_zero_dim_and_temperature(torch):
    xs = _half_values("float16", F(1, 4), F(1, 2))[::7]
    t = torch.tensor([float(x) for x in xs], dtype=torch.float16)
    want = [opmath(x, 0.1, operator.mul, "float16") for x in xs]
    assert _values(0.1 * t) == want                       # torch's mul(t, 0.1)
    assert _values(t.clone().mul_(0.1)) == want
    assert _values(t * torch.tensor(0.1)) == want          # a 0-dim float32 tensor
    assert _values(t * torch.tensor(0.1, dtype=torch.float64)) == want
    assert t.mul(torch.tensor([0.1])).dtype is torch.float32   # dimensioned: promoted
    temperature = 0.7
    assert _values(t / temperature) == [opmath(x, 0.7, operator.truediv, "float16") for x in xs]
    assert _values(t.clone().div_(temperature)) == _values(t / temperature)
    assert _values(t / torch.tensor(temperature)) == _values(t / temperature)
    # a 0-dim float32 tensor in front is rounded into float16 first (torch's mul(s, t))
    assert _values(torch.tensor(0.1) * t) == [rne(x * rne(F(0.1), "float16"), "float16")
                                              for x in xs]
    # number / t is t.reciprocal() * number, in float32 too
    assert _values(0.3 / t) == [opmath(rne(1 / x, "float16"), 0.3, operator.mul, "float16")
                                for x in xs]
    assert _values(1 / t) == [rne(1 / x, "float16") for x in xs]
    u = torch.tensor([3.0, 7.0, 0.1])
    assert _values(0.3 / u) == [f32(f32(1 / f32(x)) * f32(0.3)) for x in (3.0, 7.0, 0.1)]


def test_add_sub_compare_where_clamp_round_the_number_into_the_format(torch):
    xs = _half_values("bfloat16", F(1), F(2))
    t = torch.tensor([float(x) for x in xs], dtype=torch.bfloat16)
    s = 0.1
    h = rne(f32(s), "bfloat16")                           # through float32, as c10 converts
    assert _values(t + s) == [rne(x + h, "bfloat16") for x in xs]
    assert _values(s - t) == [rne(h - x, "bfloat16") for x in xs]
    assert _values(t.clone().add_(s)) == _values(t + s)
    assert (t > 1.5).tolist() == [x > F(1.5) for x in xs]
    assert _values(torch.where(t > 1.5, t, s)) == [x if x > F(1.5) else h for x in xs]
    assert _values(t.clamp(max=1.3)) == [min(x, rne(f32(1.3), "bfloat16")) for x in xs]


def test_a_double_into_a_half_format_is_rounded_through_float32(torch):
    x = 1 + 2 ** -11 + 2 ** -40            # above float16's midpoint, on float32's
    assert rne(F(x), "float16") == 1 + F(2) ** -10 and rne(f32(x), "float16") == 1
    assert _values(torch.tensor([x], dtype=torch.float16)) == [1]
    assert _values(torch.tensor([x], dtype=torch.float64).to(torch.float16)) == [1]
    assert (torch.tensor([1.0], dtype=torch.float16) == x).tolist() == [True]
    m = 2 ** 24 + 2 ** 16 + 1              # an int into bfloat16, through float32 too
    assert _values(torch.tensor([m]).to(torch.bfloat16)) == [2 ** 24]
    n = 2 ** 60 + 2 ** 36 + 1              # torch.tensor reads an int as a double first
    assert _values(torch.tensor([n], dtype=torch.float32)) == [2 ** 60]
    assert _values(torch.ones(1) * n) == [2 ** 60 + 2 ** 37]     # a scalar: int64 to float


def test_two_half_tensors_are_correctly_rounded(torch):
    rng = np.random.default_rng(3)
    for name in ("float16", "bfloat16"):
        xs = [rne(F(float(v)), name) for v in rng.standard_normal(64)]
        ys = [rne(F(float(v)), name) or F(1) for v in rng.standard_normal(64)]
        a = torch.tensor([float(x) for x in xs], dtype=getattr(torch, name))
        b = torch.tensor([float(y) for y in ys], dtype=getattr(torch, name))
        for op in (operator.add, operator.sub, operator.mul, operator.truediv):
            assert _values(op(a, b)) == [rne(op(x, y), name) for x, y in zip(xs, ys)]


def test_pow_with_a_number_exponent(torch):
    xs = _half_values("float16", F(1), F(2))[::17]
    t = torch.tensor([float(x) for x in xs], dtype=torch.float16)
    assert _values(t ** 2) == [rne(x * x, "float16") for x in xs]
    assert _values(t ** 3) == [rne(f32(f32(x * x) * x), "float16") for x in xs]
    assert _values(t.pow(-2)) == [rne(f32(1 / (x * x)), "float16") for x in xs]
    assert _values(t ** -1) == _values(t.reciprocal()) and _values(t ** 0) == [1] * len(xs)
    b = torch.tensor([float(x) for x in xs], dtype=torch.bfloat16)   # in bfloat16 steps
    bx = [rne(x, "bfloat16") for x in xs]
    assert _values(b ** 3) == [rne(rne(x * x, "bfloat16") * x, "bfloat16") for x in bx]
    with pytest.raises(InvalidInput, match="vectorised pow"):
        t ** 5
    with pytest.raises(InvalidInput, match="negative integer powers"):
        torch.tensor([2, 3]) ** -1
    assert (torch.tensor([2, 3]) ** 2).tolist() == [4, 9]
    with installed() as exact:
        assert exact.tensor([F(2, 3), F(0)]).pow(-1).tolist() == [F(3, 2), math.inf]


def test_values_beyond_the_dtype_refused_where_torch_refuses(torch):
    t = torch.tensor([1.0, 2.0], dtype=torch.float16)
    mask = torch.tensor([True, False])
    for call in (lambda: t.clamp(max=65505.0), lambda: t.masked_fill(mask, -1e9),
                 lambda: torch.full((2,), 1e5, dtype=torch.float16), lambda: t.clone().fill_(1e5),
                 lambda: t.new_full((2,), 65519.0)):
        with pytest.raises(InvalidInput, match="without overflow"):
            call()
    assert _values(t.clamp(max=65504.0)) == [1, 2]
    assert _values(t.masked_fill(mask, -math.inf))[0] == -math.inf
    assert _values(t * 1e5) == [math.inf, math.inf]      # arithmetic overflows to inf
    assert _values(t + 1e5) == [math.inf, math.inf]
    with pytest.raises(InvalidInput, match="alpha"):
        t.add(t, alpha=0.5)                              # a fused kernel, not modelled


def test_a_pytorch_rule_under_float16_computes_its_scaled_ratio_in_float32(tmp_path):
    """A PyTorch rule whose acceptance ratio scales both rows by a number, under ``--arith
    float16``: the same law as the rule on the sampling interface computing each scaled value
    in float32 and rounding it into float16 (and not the law of half arithmetic on the number
    rounded into float16)."""
    from exactspec import Dist
    from exactspec.rounding import split_bias

    f16 = FORMATS["float16"]
    path = tmp_path / "rule.py"
    path.write_text("import torch\n"
                    "def sample(p, q):\n"
                    "    x = torch.multinomial(q, 1)\n"
                    "    ratio = (p[x] * 0.3) / (q[x] * 0.3)\n"
                    "    if torch.rand_like(ratio) <= ratio:\n"
                    "        return x\n"
                    "    residual = torch.clamp(p - q, min=0)\n"
                    "    return torch.multinomial(residual / residual.sum(), 1)\n")

    def twin(scale):
        def rule(s, p, q):
            x = s.draft(q)
            ratio = scale(p[x]) / scale(q[x])
            if s.uniform() <= ratio:
                return x
            residual = [(a - b if a > b else a - a) for a, b in zip(p.probs, q.probs)]
            total = sum(residual[1:], residual[0])
            return s.draw(Dist([r / total for r in residual], p.labels, check=False))
        return rule

    def in_float32(v):                    # the test's own float32 product, then float16
        if not isinstance(v, FloatValue):                  # the exact runs: exact
            return v * F(0.3)
        return FloatValue(float(rne(f32(F(v.value) * f32(0.3)), "float16")), f16)

    def in_half(v):
        if not isinstance(v, FloatValue):
            return v * F(0.3)
        return v * FloatValue(float(rne(f32(0.3), "float16")), f16)

    p, q = Dist.parse("1/3,19/29,1/87"), Dist.parse("1/3,55/87,1/29")   # ratio 1365/4096 at 2
    run = split_bias(f"{path}:sample", p, q, arith="float16").run
    assert run.law == split_bias(twin(in_float32), p, q, arith="float16").run.law
    assert run.law != split_bias(twin(in_half), p, q, arith="float16").run.law


def test_a_uniform_times_a_number_under_float16_is_computed_in_float32(tmp_path):
    """``torch.rand(1, dtype=torch.float16) * 0.3 < c``: the comparison holds at the grid
    points ``j / 2**11`` whose float32 product, rounded to float16, is below ``c`` (1,707 of
    them for ``c = 1/4``; 1,706 with ``0.3`` rounded into float16 first)."""
    from exactspec import Dist
    from exactspec.rounding import split_bias

    path = tmp_path / "rule.py"
    path.write_text("import torch\n"
                    "def sample(p, q):\n"
                    "    u = torch.rand(1, dtype=p.dtype)\n"
                    "    return 0 if bool(u * 0.3 < 0.25) else 1\n")
    c = F(1, 4)
    count = sum(opmath(F(j, 2 ** 11), 0.3, operator.mul, "float16") < c for j in range(2 ** 11))
    half_first = sum(rne(F(j, 2 ** 11) * rne(f32(0.3), "float16"), "float16") < c
                     for j in range(2 ** 11))
    assert (count, half_first) == (1707, 1706)
    run = split_bias(f"{path}:sample", Dist.parse("1/2,1/2"), Dist.parse("1/2,1/2"),
                     arith="float16").run
    assert run.law[0] == F(count, 2 ** 11)


# -- against real torch, where it is installed (never a dependency) --------------------------
def _bits(real, name: str, n: int, rng):
    """``n`` random bit patterns of ``name`` as a real torch tensor (infinities and NaNs
    included)."""
    if name == "float64":
        raw = rng.integers(0, 2 ** 63, n, dtype=np.int64) * rng.choice([-1, 1], n)
        return real.from_numpy(raw.copy()).view(real.float64)
    if name == "float32":
        raw = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32).view(np.int32)
        return real.from_numpy(raw.copy()).view(real.float32)
    raw = rng.integers(0, 2 ** 16, n, dtype=np.uint64).astype(np.uint16).view(np.int16)
    return real.from_numpy(raw.copy()).view(getattr(real, name))


def _scalars(rng) -> list:
    out = [0.1, 0.3, 1 / 3, 0.7, -2.5e-4, 1e-8, 3, 7, -1, 1e5, 1e39, 2 ** 40 + 1,
           1 + 2 ** -11 + 2 ** -40, -0.0, True, 65519.0]
    for _ in range(6):
        out.append(float(rng.choice([-1, 1]) * rng.random() * 2.0 ** int(rng.integers(-30, 30))))
    out.append(int(rng.integers(-10 ** 6, 10 ** 6)))
    return out


def _plain(x):
    """A comparable key: the value and its sign bit; NaN as one key."""
    if isinstance(x, bool):
        return x
    x = float(x)
    return "nan" if x != x else (x, math.copysign(1.0, x))


def _layer_plain(t) -> list:
    out = []
    for v in t._values():
        out.append(v if isinstance(v, bool) else _plain(v.value if isinstance(v, FloatValue)
                                                           else v))
    return out


def _real_plain(t) -> list:
    if t.dtype.is_floating_point:
        return [_plain(x) for x in t.reshape(-1).double().tolist()]
    return t.reshape(-1).tolist()


def _run_both(real, build):
    """``build(torch_module, tensors)`` on real torch and on the layer; the two results'
    elements (or the same refusal)."""
    try:
        want = build(real)
    except (RuntimeError, OverflowError, ValueError, TypeError) as err:
        want = ("error", type(err).__name__)
    with installed(Run(None, FORMATS["float32"])) as layer:
        try:
            got = build(layer)
        except InvalidInput:
            got = ("error",)
    return want, got


def test_every_elementwise_op_matches_real_torch_bit_for_bit():
    real = pytest.importorskip("torch")
    if not hasattr(real, "from_numpy"):
        pytest.skip("the torch importable here is not PyTorch")
    rng = np.random.default_rng(20240611)
    n = 256
    unary_ops = {
        "reciprocal": lambda t: t.reciprocal(),
        "neg": lambda t: -t,
        "abs": lambda t: t.abs(),
        "pow 2": lambda t: t ** 2, "pow 3": lambda t: t ** 3, "pow -1": lambda t: t ** -1,
        "pow -2": lambda t: t.pow(-2), "pow 0": lambda t: t ** 0, "pow 1": lambda t: t ** 1,
        "to float32": lambda t: t.float(), "to float64": lambda t: t.double(),
        "to float16": lambda t: t.half(), "to bfloat16": lambda t: t.bfloat16(),
    }
    scalar_ops = {
        "t * s": lambda t, s: t * s, "s * t": lambda t, s: s * t,
        "t / s": lambda t, s: t / s, "s / t": lambda t, s: s / t,
        "t + s": lambda t, s: t + s, "s + t": lambda t, s: s + t,
        "t - s": lambda t, s: t - s, "s - t": lambda t, s: s - t,
        "t < s": lambda t, s: t < s, "t <= s": lambda t, s: t <= s,
        "t == s": lambda t, s: t == s, "t > s": lambda t, s: t > s,
        "mul_": lambda t, s: t.clone().mul_(s), "div_": lambda t, s: t.clone().div_(s),
        "add_": lambda t, s: t.clone().add_(s), "sub_": lambda t, s: t.clone().sub_(s),
        "clamp min": lambda t, s: t.clamp(min=s), "clamp max": lambda t, s: t.clamp(max=s),
    }
    mismatches = {}
    checked = 0

    def compare(key, fn):
        nonlocal checked
        want, got = _run_both(real, fn)
        if isinstance(want, tuple) or isinstance(got, tuple):
            if isinstance(want, tuple) != isinstance(got, tuple):
                mismatches[key] = ("torch: " + (want[1] if isinstance(want, tuple) else "ok"),
                                   "layer: " + ("refused" if isinstance(got, tuple) else "ok"))
            return
        w = _real_plain(want)
        g = _layer_plain(got)
        checked += len(w)
        bad = sum(a != b for a, b in zip(w, g))
        if bad or len(w) != len(g) or str(want.dtype).replace("torch.", "") != got.dtype.name:
            mismatches[key] = (bad, len(w), str(want.dtype), got.dtype.name)

    for name in ("float16", "bfloat16", "float32", "float64"):
        bits = _bits(real, name, n, rng)
        values = bits.double().tolist()
        other = _bits(real, name, n, rng).double().tolist()

        def tensor(t, vals=values, dtype=name):
            return t.tensor(vals, dtype=getattr(t, dtype))

        for key, f in unary_ops.items():
            compare((name, key), lambda t, f=f: f(tensor(t)))
        for s in _scalars(rng):
            for key, f in scalar_ops.items():
                compare((name, key, s), lambda t, f=f, s=s: f(tensor(t), s))
            compare((name, "where", s), lambda t, s=s: t.where(tensor(t) > 0, tensor(t), s))
            compare((name, "where r", s), lambda t, s=s: t.where(tensor(t) > 0, s, tensor(t)))
            for dt in ("float32", "float64", "int64", "float16"):
                if dt == "int64" and not isinstance(s, int):
                    continue
                compare((name, "t * 0-d", dt, s), lambda t, s=s, dt=dt:
                        tensor(t) * t.tensor(s, dtype=getattr(t, dt)))
                compare((name, "t / 0-d", dt, s), lambda t, s=s, dt=dt:
                        tensor(t) / t.tensor(s, dtype=getattr(t, dt)))
                compare((name, "0-d * t", dt, s), lambda t, s=s, dt=dt:
                        t.tensor(s, dtype=getattr(t, dt)) * tensor(t))
                compare((name, "t + 0-d", dt, s), lambda t, s=s, dt=dt:
                        tensor(t) + t.tensor(s, dtype=getattr(t, dt)))
            compare((name, "tensor of s"), lambda t, s=s: t.tensor([s] * 3, dtype=getattr(t, name)))
        for op in (operator.add, operator.sub, operator.mul, operator.truediv, operator.lt):
            compare((name, "t op u", op.__name__),
                    lambda t, op=op: op(tensor(t), tensor(t, other)))
        compare((name, "with the other half"), lambda t: tensor(t) * tensor(
            t, other, "bfloat16" if name == "float16" else "float16"))
        compare((name, "max/min"), lambda t: t.maximum(tensor(t), tensor(t, other)))
        for k in range(0, 64, 4):          # sums of 4 terms (within the layer's SUM_TERMS)
            part = [v for v in values[k:k + 4]]
            compare((name, "sum of 4", k), lambda t, part=part: tensor(t, part).sum())
            compare((name, "mean of 4", k), lambda t, part=part: tensor(t, part).mean())
    assert checked > 200_000
    assert not mismatches, (len(mismatches), dict(list(mismatches.items())[:12]))
