"""The exact tensor layer standing in for torch: op semantics, random constructors enumerated to
their exact laws (each law two ways: a PyTorch rule and the same rule on the sampling interface),
PyTorch rules through ``exactspec verify``, and refusals in one line."""

from __future__ import annotations

import json
import math
import sys
import textwrap
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest

from exactspec import Dist, verify
from exactspec.cli import main
from exactspec.core.dist import total_variation
from exactspec.engine.floats import FORMATS, FloatValue, exact_value
from exactspec.torch_layer import installed, load_pytorch_rule
from exactspec.torch_layer.context import Run

ROOT = Path(__file__).resolve().parent.parent
HF = str(ROOT / "examples" / "engines" / "hf_speculative_sampling.py")
VLLM = str(ROOT / "examples" / "engines" / "vllm_rejection_sampler.py")
CHAIN = str(ROOT / "examples" / "engines" / "flashinfer_chain.py")
TREE = str(ROOT / "examples" / "engines" / "sglang_tree.py")
P, Q = Dist.parse("1/2,1/3,1/6"), Dist.parse("1/3,1/3,1/3")


def rule_file(tmp_path, source: str, name: str = "rule.py") -> str:
    path = tmp_path / name
    path.write_text("import torch\n" + textwrap.dedent(source))
    return str(path)


# -- op semantics ---------------------------------------------------------------------------
def test_dtype_promotion_as_torch_does_it():
    with installed() as torch:
        i = torch.tensor([1, 2])
        assert (i + 0.5).dtype is torch.float32          # a number only raises the category
        assert (i / i).dtype is torch.float32            # true division of integers
        assert (i + True).dtype is torch.int64
        h, b = torch.ones(2, dtype=torch.float16), torch.ones(2, dtype=torch.bfloat16)
        assert (h + b).dtype is torch.float32
        f32 = torch.ones(2, dtype=torch.float32)
        zero_d = torch.tensor(1, dtype=torch.float64)
        assert (f32 * zero_d).dtype is torch.float32      # a 0-d tensor of the same category
        assert (i * zero_d).dtype is torch.float64        # ... counts when its category is higher
        assert (f32 < 1).dtype is torch.bool
        assert torch.tensor([True, False]).to(torch.int64).tolist() == [1, 0]
        assert torch.tensor([F(-7, 2), F(7, 2)]).long().tolist() == [-3, 3]   # toward zero


def test_torch_tensor_of_a_numpy_array_keeps_its_dtype_as_torch_does():
    with installed() as torch:
        a = torch.tensor(np.array([0.5, 0.25]))
        b = torch.tensor(np.array([[1, 2]], dtype=np.int32))
        c = torch.tensor(np.float32(0.1))
        d = torch.tensor(np.array([True, False]))
        assert (a.dtype, a.tolist()) == (torch.float64, [F(1, 2), F(1, 4)])
        assert (b.dtype, b.shape, b.tolist()) == (torch.int32, (1, 2), [[1, 2]])
        assert (c.dtype, c.item()) == (torch.float32, F(float(np.float32(0.1))))
        assert d.dtype is torch.bool and d.tolist() == [True, False]
    try:
        import torch as real
    except ImportError:
        return
    assert str(real.tensor(np.array([0.5, 0.25])).dtype) == "torch.float64"
    assert str(real.tensor(np.array([[1, 2]], dtype=np.int32)).dtype) == "torch.int32"
    assert str(real.tensor(np.float32(0.1)).dtype) == "torch.float32"


def test_broadcasting_and_exact_values():
    with installed() as torch:
        col = torch.tensor([[F(1)], [F(2)]], dtype=torch.float64)
        row = torch.tensor([F(1, 3), F(1, 2), F(1)], dtype=torch.float64)
        assert (col * row).tolist() == [[F(1, 3), F(1, 2), F(1)], [F(2, 3), F(1), F(2)]]
        assert (col / 0).tolist() == [[math.inf], [math.inf]]
        assert math.isnan((torch.zeros(1) / 0).item())
        assert torch.clamp(row - F(1, 2), min=0).tolist() == [0, 0, F(1, 2)]
        assert torch.maximum(row, col).shape == (2, 3)


def test_views_write_through_and_advanced_indexing_copies():
    with installed() as torch:
        t = torch.zeros(2, 3, dtype=torch.float64)
        t[1][2] = 5                               # a view of a view
        t[:, 0].fill_(1)                          # a column view, in place
        t.view(6)[1] = 7
        t.unsqueeze(0)[0, 0, 2] = 9
        assert t.tolist() == [[1, 7, 9], [1, 0, 5]]
        copy = t[torch.tensor([0, 1]), torch.tensor([2, 2])]
        copy[0] = 100                             # advanced indexing copies: t unchanged
        assert copy.tolist() == [100, 5] and t[0, 2].item() == 9
        t[t > 4] = -1                             # a boolean mask assigns through
        assert t.tolist() == [[1, -1, -1], [1, 0, -1]]
        t[torch.tensor([1]), 1] = 3               # advanced assignment
        assert t[1].tolist() == [1, 3, -1]
        e = t[0].expand(2, 3)
        assert e.tolist() == [[1, -1, -1], [1, -1, -1]]
        x = torch.arange(6).reshape(2, 3)
        assert x.permute(1, 0)[2].tolist() == [2, 5]
        assert x[..., 1].tolist() == [1, 4] and x[None, :, 0].tolist() == [[0, 3]]


def test_squeeze_of_several_dims_as_transformers_writes_it():
    with installed() as torch:
        t = torch.zeros(1, 1, 3)
        assert t.squeeze(0, 1).shape == (3,) == t.squeeze((0, 1)).shape
        assert t.squeeze(dim=1).shape == (1, 3) and t.squeeze().shape == (3,)
        assert torch.squeeze(t, 0).shape == (1, 3)


ENGINE_OPS = {     # op: (the call on a torch module, torch 2.13's answer on CPU)
    "cumprod of accept bits": (
        lambda t: t.tensor([[True, True, False, True], [True] * 4]).cumprod(dim=1).tolist(),
        [[1, 1, 0, 0], [1, 1, 1, 1]]),
    "cumprod of floats": (lambda t: t.tensor([0.5, 0.5, 3.0], dtype=t.float64).cumprod(0)
                          .tolist(), [0.5, 0.25, 0.75]),
    "repeat": (lambda t: [t.tensor([1, 2]).repeat(2).tolist(),
                          t.tensor([[1, 2]]).repeat(2, 1).tolist(),
                          t.tensor([3]).repeat(1, 2).tolist()],
               [[1, 2, 1, 2], [[1, 2], [1, 2]], [[3, 3]]]),
    "repeat_interleave": (lambda t: [t.tensor([1, 2]).repeat_interleave(2).tolist(),
                                     t.repeat_interleave(t.tensor([1, 2]), t.tensor([1, 3]))
                                     .tolist(),
                                     t.tensor([[1, 2], [3, 4]]).repeat_interleave(2, dim=0)
                                     .tolist()],
                          [[1, 1, 2, 2], [1, 2, 2, 2], [[1, 2], [1, 2], [3, 4], [3, 4]]]),
    "nonzero": (lambda t: [t.tensor([0, 3, 0, 4]).nonzero().tolist(),
                           t.nonzero(t.tensor([[0, 1], [1, 0]]), as_tuple=True)[1].tolist()],
                [[[1], [3]], [1, 0]]),
    "relu": (lambda t: [t.tensor([-1.5, 0.0, 2.0]).relu().tolist(),
                        t.relu(t.tensor([-1, 3])).tolist(),
                        t.nn.functional.relu(t.tensor([[-2.0, 0.5]])).tolist()],
             [[0.0, 0.0, 2.0], [0, 3], [[0.0, 0.5]]]),
    "constants": (lambda t: [t.inf, -t.inf, t.pi == math.pi, math.isnan(t.nan)],
                  [math.inf, -math.inf, True, True]),
    "allclose, isclose, equal": (lambda t: [
        t.allclose(t.tensor([0.5, 0.5], dtype=t.float64).sum(), t.tensor(1.0, dtype=t.float64)),
        t.isclose(t.tensor([1.0, 1.0]), t.tensor([1.0 + 1e-6, 1.1])).tolist(),
        t.equal(t.tensor([1, 2]), t.tensor([1, 2])), t.tensor([1, 2]).equal(t.tensor([1]))],
        [True, [True, False], True, False]),
    "log_softmax": (lambda t: t.log_softmax(t.tensor([0.0, 0.0], dtype=t.float64), dim=-1)
                    .exp().tolist(), [0.5, 0.5]),
    "type_as, type": (lambda t: [str(t.tensor([1, 2]).type_as(t.tensor([0.5])).dtype),
                                 t.tensor([1]).type(), t.tensor([1]).type(t.float64).tolist()],
                      ["torch.float32", "torch.LongTensor", [1.0]]),
    "count_nonzero": (lambda t: [t.count_nonzero(t.tensor([0, 1, 2])).item(),
                                 t.tensor([[0, 1], [1, 1]]).count_nonzero(dim=1).tolist()],
                      [2, [1, 2]]),
    "scatter_add, index_add": (lambda t: [
        t.zeros(4, dtype=t.int64).scatter_add(0, t.tensor([1, 1, 3]), t.tensor([1, 2, 3]))
        .tolist(),
        t.zeros(3, dtype=t.int64).index_add_(0, t.tensor([0, 0]), t.tensor([1, 5])).tolist(),
        t.zeros(2, 2).index_add(1, t.tensor([1]), t.tensor([[1.0], [2.0]])).tolist()],
        [[0, 3, 0, 3], [6, 0, 0], [[0.0, 1.0], [0.0, 2.0]]]),
    "one_hot": (lambda t: t.nn.functional.one_hot(t.tensor([0, 2]), num_classes=3).tolist(),
                [[1, 0, 0], [0, 0, 1]]),
    "where of a condition alone": (lambda t: [
        r.tolist() for r in t.where(t.tensor([[True, False], [True, True]]))],
        [[0, 1, 1], [0, 0, 1]]),
    "flip": (lambda t: t.tensor([[1, 2, 3], [4, 5, 6]]).flip(1).tolist(),
             [[3, 2, 1], [6, 5, 4]]),
    "div rounding_mode": (lambda t: [t.div(t.tensor([7, -7]), 2, rounding_mode="floor").tolist(),
                                     t.tensor([7, -7]).div(2, rounding_mode="trunc").tolist(),
                                     t.remainder(t.tensor([7, -7]), 3).tolist()],
                          [[3, -4], [3, -3], [1, 2]]),
    "masked_select": (lambda t: t.tensor([[1, -1, 2], [3, 4, -1]]).masked_select(
        t.tensor([[1, -1, 2], [3, 4, -1]]) != -1).tolist(), [1, 2, 3, 4]),
    "unbind, split, chunk": (lambda t: [
        [r.tolist() for r in t.tensor([[1, 2], [3, 4]]).unbind(0)],
        [r.tolist() for r in t.arange(5).split(2)],
        [r.tolist() for r in t.split(t.arange(5), [1, 4])],
        [r.tolist() for r in t.tensor([[1, 2], [3, 4]]).chunk(2, dim=1)]],
        [[[1, 2], [3, 4]], [[0, 1], [2, 3], [4]], [[0], [1, 2, 3, 4]], [[[1], [3]], [[2], [4]]]]),
}


@pytest.mark.parametrize("name", sorted(ENGINE_OPS))
def test_structural_ops_engines_use_as_torch_computes_them(name):
    """Ops of engines' samplers (``cumprod`` of accept bits, ``repeat_interleave`` of
    per-request values, ``nonzero``, ``div(rounding_mode=...)``, ...): the layer's answer is
    the one torch gives (written out here, and computed by torch where it is installed)."""
    call, expect = ENGINE_OPS[name]
    with installed() as torch:
        assert call(torch) == expect
    try:
        import torch as real
    except ImportError:
        return
    assert call(real) == expect


def test_float32_cumprod_accumulates_in_float64_as_the_cpu_kernel():
    xs = [F(3, 5), F(7, 9), F(11, 13)]
    with installed(Run(None, FORMATS["float32"])) as torch:
        got = torch.tensor(xs).cumprod(0).tolist()
    f32, f64 = FORMATS["float32"], FORMATS["float64"]
    acc, expect = F(1), []
    for x in xs:                       # each term rounded to float32, the product in float64
        acc = f64.round(acc * f32.round(x))
        expect.append(f32.round(acc))
    assert [exact_value(v) for v in got] == expect
    try:
        import torch as real
    except ImportError:
        return
    ours = real.tensor([float(x) for x in xs], dtype=real.float32).cumprod(0).tolist()
    assert [F(v) for v in ours] == expect


def test_in_place_ops_alias_their_storage():
    with installed() as torch:
        p = torch.tensor([F(1, 2), F(1, 4), F(1, 4)], dtype=torch.float64)
        alias = p[1:]
        alias.mul_(2).add_(1).div_(2)
        assert p.tolist() == [F(1, 2), F(3, 4), F(3, 4)]
        p.clamp_min_(F(3, 5))
        assert p.tolist() == [F(3, 5), F(3, 4), F(3, 4)]
        ints = torch.tensor([1, 2])
        with pytest.raises(Exception, match="can't be cast"):
            ints.div_(2)


def test_reductions_ties_and_order():
    with installed() as torch:
        assert torch.tensor([0, 3, 3]).argmax().item() == 1           # first index on ties
        assert torch.zeros(4).argmax().item() == 0                     # an all-zero row gives 0
        m = torch.tensor([[1, 5, 5], [7, 7, 0]])
        values, indices = m.max(dim=1)
        assert values.tolist() == [5, 7] and indices.tolist() == [1, 0]
        assert m.argmax(dim=0, keepdim=True).tolist() == [[1, 1, 0]]
        assert m.sum().item() == 25 and m.sum(dim=0).tolist() == [8, 12, 5]
        assert m.cumsum(dim=1).tolist() == [[1, 6, 11], [7, 14, 14]]
        assert (m > 4).any(dim=1).tolist() == [True, True]
        assert (m > 0).all(dim=0).tolist() == [True, True, False]
        nan = torch.tensor([F(1), F(0), F(2)], dtype=torch.float64) / \
            torch.tensor([F(1), F(0), F(1)], dtype=torch.float64)
        assert nan.argmax().item() == 1                               # NaN wins, as in torch
        s = torch.tensor([3, 1, 3, 2])
        assert s.sort(descending=True).indices.tolist() == [0, 2, 3, 1]   # stable
        assert s.sort().values.tolist() == [1, 2, 3, 3]
        assert s.topk(2).values.tolist() == [3, 3] and s.topk(1, largest=False).indices[0] == 1
        tied = s.topk(2).indices                 # torch's order of tied indices: not modelled
        with pytest.raises(Exception, match=r"index of tied values from topk.*:\d+\)"):
            s[tied]
        long = torch.tensor([1, 0] * 9)                 # 18 > 16: sort(stable=False) unstable
        assert long.sort(stable=True).indices.tolist()[:3] == [1, 3, 5]
        with pytest.raises(Exception, match="index of tied values from sort"):
            int(long.sort().indices[0])
        w = torch.tensor([F(1, 10), F(1, 2), F(1, 5), F(1, 5)], dtype=torch.float64)
        sorted_w, order = w.sort(descending=True)
        keep = sorted_w.cumsum(-1) - sorted_w < F(7, 10)           # top-p written with sort
        filtered = torch.zeros_like(w).scatter_(0, order, sorted_w * keep)
        assert filtered.tolist() == [0, F(1, 2), F(1, 5), 0]


def test_gather_where_masked_fill_take_along_dim():
    with installed() as torch:
        t = torch.tensor([[1, 2, 3], [4, 5, 6]])
        idx = torch.tensor([[2], [0]])
        assert t.gather(1, idx).tolist() == [[3], [4]]
        assert torch.take_along_dim(t, idx, dim=1).tolist() == [[3], [4]]
        assert torch.where(t > 2, t, 0).tolist() == [[0, 0, 3], [4, 5, 6]]
        assert t.masked_fill(t % 2 == 0, -1).tolist() == [[1, -1, 3], [-1, 5, -1]]
        assert torch.cat([t, t[:1]]).shape == (3, 3)
        assert torch.stack([t[0], t[1]], dim=1).tolist() == [[1, 4], [2, 5], [3, 6]]


def test_softmax_exact_where_rational_and_float32_rounded():
    with installed() as torch:
        masked = torch.tensor([F(0), -math.inf, F(0)], dtype=torch.float64)
        assert torch.softmax(masked, dim=-1).tolist() == [F(1, 2), 0, F(1, 2)]
        import sympy
        exact = torch.softmax(torch.tensor([F(0), F(1)], dtype=torch.float64), dim=0).tolist()
        assert (exact[1] - sympy.E / (1 + sympy.E)).equals(0)
    f32 = FORMATS["float32"]
    with installed(Run(None, f32)) as torch:
        masked = torch.tensor([2.0, -math.inf, 2.0, 2.0])   # weights 0 and 1: any order
        out = [exact_value(v) for v in torch.nn.functional.softmax(masked, dim=0).tolist()]
        assert out == [F(f32.round(F(1, 3))), 0, F(f32.round(F(1, 3))), F(f32.round(F(1, 3)))]
        logits = torch.tensor([0.0, math.log(3.0)])
        with pytest.raises(Exception, match="softmax under --arith float32: exactspec models "
                           "it as torch 2.14's AVX2"):     # declared by --sum-order torch-avx2
            torch.nn.functional.softmax(logits, dim=0)  # its rounding: the kernel's own


def test_float32_cumsum_accumulates_in_float64_as_the_cpu_kernel():
    f32 = FORMATS["float32"]
    values = [1.0, 2.0 ** -24, 2.0 ** -24]
    expected = np.cumsum(np.array(values, dtype=np.float32), dtype=np.float64).astype(np.float32)
    with installed(Run(None, f32)) as torch:
        got = torch.tensor(values).cumsum(0).tolist()
        assert [exact_value(v) for v in got] == [F(float(v)) for v in expected] == \
            [F(1), F(1), 1 + F(1, 2 ** 23)]
        third = torch.tensor([F(1, 3)]).item()             # a Python float: float64
        assert third.fmt is FORMATS["float64"]
        assert exact_value(third) == F(f32.round(F(1, 3)))  # literals rounded into the dtype
        assert exact_value(third * 3) == 1 + F(1, 2 ** 25)  # Python's float arithmetic
        with pytest.raises(Exception, match="summation order"):
            torch.ones(5).sum()


def test_empty_memory_and_outside_names_refused_with_the_line():
    with installed() as torch:
        e = torch.empty(3)
        e[0] = 1
        assert e[0].item() == 1
        with pytest.raises(Exception, match=r"never written \(test_torch_layer.py:\d+\)"):
            e.sum()
        assert torch.cuda.is_available() is False and torch.cuda.device_count() == 0
        with pytest.raises(Exception, match=r"torch.cuda.current_device is refused"):
            torch.cuda.current_device()
        with pytest.raises(Exception, match=r"torch.fft is outside"):
            torch.fft


def test_the_layer_is_installed_only_while_it_runs():
    before = sys.modules.get("torch")
    with installed() as torch:
        assert sys.modules["torch"] is torch
        import torch.nn.functional as functional
        assert functional is torch.nn.functional
    assert sys.modules.get("torch") is before


# -- random constructors: the same law two ways -----------------------------------------------
def law(method, p=P, q=Q, **kw):
    return verify(method, p, q, **kw).law


def test_hf_sampler_is_lossless_with_the_law_of_the_sampling_interface_rule():
    torch_rule = verify(f"{HF}:sample", P, Q)
    assert torch_rule.lossless and torch_rule.law == {0: F(1, 2), 1: F(1, 3), 2: F(1, 6)}
    assert torch_rule.acceptance == verify("sps", P, Q).acceptance == F(5, 6)


def test_hf_bug_variants_refuted_with_their_exact_tv():
    def wrong_row(s, p, q):                # the same bug on the sampling interface
        x = s.draft(q)
        if s.uniform() <= q[x] / p[x]:
            return x
        residual = [max(a - b, 0) for a, b in zip(p.probs, q.probs)]
        total = sum(residual)
        return s.draw(Dist([r / total for r in residual], p.labels))

    r = verify(f"{HF}:sample_wrong_row", P, Q)
    assert r.law == law(wrong_row) == {0: F(1, 3), 1: F(1, 3), 2: F(1, 3)}
    assert not r.lossless and total_variation(r.law_dist(), P) == F(1, 6)
    r = verify(f"{HF}:sample_resample_from_p", P, Q)
    assert r.law == {0: F(5, 12), 1: F(7, 18), 2: F(7, 36)} and total_variation(r.law_dist(), P) == F(1, 12)


def test_hf_sampler_under_float32_on_the_generator_grid():
    from exactspec.rounding import split_bias

    split = split_bias(f"{HF}:sample", P, Q, arith="float32")

    def same_in_interface(s, p, q):
        x = s.draft(q)
        if s.uniform() <= p[x] / q[x]:
            return x
        residual = [(a - b if a > b else a - a) for a, b in zip(p.probs, q.probs)]
        total = sum(residual[1:], residual[0])
        return s.draw(Dist([r / total for r in residual], p.labels, check=False))

    twin = split_bias(same_in_interface, P, Q, arith="float32")
    assert split.run.law == twin.run.law
    # r <= 1/2 on the 2**24 grid holds at 2**23 + 1 points: token 2 gains that one point
    assert split.run.law[2] == F(1, 3) * F(2 ** 23 + 1, 2 ** 24) == F(2796203, 16777216)
    assert split.verdict == "lossy-grid"                 # the grid alone: same law as exact
    assert split.bias == split.bias_grid_only == F(1, 50331648)


def test_a_number_times_a_uniform_under_arith_is_the_uniform_times_the_number(tmp_path):
    """``q[x] * u <= p[x]`` (a kernel's ``draft_p * uniform <= target_p``) under ``--arith``
    is the same float program as ``u * q[x] <= p[x]``: the uniform's reflected operation."""
    from exactspec.rounding import split_bias

    path = rule_file(tmp_path, """
        def rule(p, q, left=True):
            x = torch.multinomial(q, 1)
            u = torch.rand(1, dtype=p.dtype)
            if ((q[x] * u if left else u * q[x]) <= p[x]).item():
                return x
            return torch.multinomial(torch.clamp(p - q, min=0), 1)
        def right(p, q):
            return rule(p, q, left=False)
        """)
    left, right = (split_bias(f"{path}:{f}", P2, Q2, arith="float32") for f in ("rule", "right"))
    assert left.run.law == right.run.law and left.bias == right.bias > 0
    assert law(f"{path}:rule", P2, Q2) == {0: F(1, 2), 1: F(1, 3), 2: F(1, 6)}


@pytest.mark.parametrize("arith", ["float32", "float16", "bfloat16", "float64"])
def test_hf_sampler_bias_is_one_grid_point_in_every_format(arith):
    from exactspec.rounding import split_bias

    grid = FORMATS[arith].grid                   # the ratio at token 2 is exactly 1/2 in each
    split = split_bias(f"{HF}:sample", P, Q, arith=arith)
    assert split.run.law[2] == F(1, 3) * F(grid // 2 + 1, grid)
    assert split.bias == split.bias_grid_only == F(1, 3 * grid)


def test_vllm_style_sampler_lossy_by_its_clamp_at_tiny():
    t = F(1, 2 ** 126)                                   # torch.finfo(torch.float32).tiny
    r = verify(f"{VLLM}:sample", P, Q)
    # a rejection (probability 1/6) recovers from (1/6, t, t) / (1/6 + 2t)
    recovered = [F(1, 6) / (F(1, 6) + 2 * t), t / (F(1, 6) + 2 * t), t / (F(1, 6) + 2 * t)]
    accepted = [F(1, 3), F(1, 3), F(1, 6)]               # min(p, q)
    assert r.law == {i: accepted[i] + F(1, 6) * recovered[i] for i in range(3)}
    assert total_variation(r.law_dist(), P) == 2 * t / (1 + 12 * t)
    wrong = verify(f"{VLLM}:sample_target_recovery", P, Q)
    assert wrong.law == verify(f"{HF}:sample_resample_from_p", P, Q).law
    assert total_variation(wrong.law_dist(), P) == F(1, 12)


def test_vllm_style_noise_filled_through_a_copy_is_refused(capsys):
    code, _, err = cli(capsys, "verify", f"{VLLM}:sample_copy_noise", "--p", "1/2,1/3,1/6",
                       "--q", "1/3,1/3,1/3")
    assert code == 2 and "read of torch.empty memory that was never written" in err
    assert "(vllm_rejection_sampler.py:" in err and len(err.strip().splitlines()) == 1


def test_a_tensor_of_compared_uniforms(tmp_path):
    path = rule_file(tmp_path, """
        def count(p, q):
            u = torch.rand(3, dtype=p.dtype)
            return (u < p[:3]).sum()
        def count_filled(p, q):
            u = torch.empty(2, 3, dtype=p.dtype).uniform_()[1]
            return (p[:3] > u).sum()
        """)

    def twin(s, p, q):
        return sum(1 for i in range(3) if s.uniform() < p.probs[i])

    p4, q4 = Dist.parse("1/2,1/3,1/6,0"), Dist.parse("1/4,1/4,1/4,1/4")
    got = law(f"{path}:count", p4, q4)
    assert got == law(twin, p4, q4)
    assert got[0] == F(1, 2) * F(2, 3) * F(5, 6)                   # closed form
    assert law(f"{path}:count_filled", p4, q4) == got
    assert law(f"{path}:count", p4, q4, grid=7) == law(twin, p4, q4, grid=7)


def test_inverse_cdf_with_searchsorted_is_the_engine_pick(tmp_path):
    path = rule_file(tmp_path, """
        def inverse_cdf(p, q):
            u = torch.rand(1, dtype=p.dtype)
            return torch.searchsorted(p.cumsum(0), u, right=True)[0]
        """)

    def twin(s, p, q):
        return s.pick(p, s.uniform())

    assert law(f"{path}:inverse_cdf") == law(twin) == {0: F(1, 2), 1: F(1, 3), 2: F(1, 6)}
    # on {0, 1/5, ..., 4/5}: three points below 1/2, two in [1/2, 5/6), none in [5/6, 1)
    assert law(f"{path}:inverse_cdf", grid=5) == law(twin, grid=5) == \
        {0: F(3, 5), 1: F(2, 5), 2: 0}


def test_expanded_in_place_and_conflicting_writes_refused():
    with installed() as torch:
        row = torch.zeros(3)
        with pytest.raises(Exception, match="single memory location"):
            row.expand(2, 3).add_(1)
        with pytest.raises(Exception, match="different values in one place"):
            row[torch.tensor([0, 0])] = torch.tensor([1.0, 2.0])
        row[torch.tensor([0, 0])] = 5                       # the same value twice: fine
        i = torch.tensor(1)
        row[i:][0:1].fill_(7)
        row[i].fill_(8)                                     # a 0-d index selects: a view
        assert row.tolist() == [5, 8, 0]


def test_multinomial_is_the_normalised_row(tmp_path):
    path = rule_file(tmp_path, """
        def pick(p, q):
            w = p * torch.tensor([2, 1, 0]) + q       # unnormalised weights
            return torch.multinomial(w, 1)[0]
        def two(p, q):
            picks = torch.multinomial(q + p, 2, replacement=False)
            return picks[1]
        """)
    # w = (1 + 1/3, 1/3 + 1/3, 1/3) / (7/3)
    assert law(f"{path}:pick") == {0: F(4, 7), 1: F(2, 7), 2: F(1, 7)}
    w = [F(5, 6), F(2, 3), F(1, 2)]                    # p + q, total 2: successive sampling
    second = {j: sum(w[i] / 2 * w[j] / (2 - w[i]) for i in range(3) if i != j) for j in range(3)}
    assert law(f"{path}:two") == second


def test_exponential_race_as_the_engine_races(tmp_path):
    path = rule_file(tmp_path, """
        def race(p, q):
            e = torch.empty_like(q).exponential_()
            draft = (q / e).argmax()
            if torch.rand(1, dtype=p.dtype) < p[draft] / q[draft]:
                return draft
            residual = (p - q).clamp_min(0)
            return residual.div_(e).argmax(dim=-1)    # the same noise again: shared
        """)

    def twin(s, p, q):
        e = s.exponentials(3)
        x = (list(q.probs) / e).argmax()
        if s.uniform() < p[x] / q[x]:
            return x
        return ([max(a - b, 0) for a, b in zip(p.probs, q.probs)] / e).argmax()

    q2 = Dist.parse("1/6,1/2,1/3")
    assert law(f"{path}:race", P, q2) == law(twin, P, q2)


def test_a_race_written_with_the_reciprocal_of_the_noise(tmp_path):
    """vLLM's recovered token ``argmax(prob * q.reciprocal())`` (and ``prob / q / 2``,
    ``1 / (q / prob)``) is the race ``argmax(prob / q)``: the residual's law."""
    path = rule_file(tmp_path, """
        def recovered(p, q):
            noise = torch.empty_like(p)
            noise.exponential_()
            inv_q = noise.reciprocal()
            prob = torch.clamp(p - q, min=0)
            return torch.argmax(prob * inv_q, dim=-1)
        def halved(p, q):
            noise = torch.empty_like(p).exponential_()
            return (torch.clamp(p - q, min=0) / noise / 2).argmax()
        def inverted(p, q):
            noise = torch.empty_like(p).exponential_()
            return (1 / (noise / (p + q))).argmax()
        """)
    q2 = Dist.parse("1/6,1/2,1/3")
    residual = {0: F(1), 1: F(0), 2: F(0)}              # relu(p - q) = (1/3, 0, 0)
    assert law(f"{path}:recovered", P, q2) == law(f"{path}:halved", P, q2) == residual
    assert law(f"{path}:inverted", P, q2) == {0: F(1, 3), 1: F(5, 12), 2: F(1, 4)}


def test_gumbel_max_on_the_log_of_exponential_noise_is_the_softmax_law(tmp_path, capsys):
    """``argmax(logits - log(E))`` (Gumbel noise ``-log E`` added to logits, scaled by a
    temperature or not, a masked logit at ``-inf``) is the race ``argmax(exp(logits) / E)``:
    token ``i`` with probability ``softmax(logits)_i``; under ``--arith`` it is refused."""
    import sympy

    path = rule_file(tmp_path, """
        def gumbel(p, q):
            logits = torch.log(p)
            e = torch.empty_like(logits).exponential_()
            return torch.argmax(logits - e.log())
        def tempered(p, q):
            logits = torch.log(p).unsqueeze(0)
            g = -torch.empty_like(logits).exponential_().log()
            return torch.argmax(logits / 0.5 + g / 0.5, dim=-1)
        def argmin(p, q):
            e = torch.empty_like(p).exponential_()
            return torch.argmin(e.log() - torch.log(p))
        def masked(p, q):
            logits = torch.log(p).masked_fill(torch.tensor([False, False, True]), -torch.inf)
            return (logits - torch.log(torch.empty_like(logits).exponential_())).argmax()
        def irrational(p, q):
            logits = torch.tensor([0.0, 1.0, 2.0], dtype=p.dtype)
            return (logits - torch.log(torch.empty_like(logits).exponential_())).argmax()
        """)
    for name in ("gumbel", "tempered", "argmin"):
        assert law(f"{path}:{name}") == {0: F(1, 2), 1: F(1, 3), 2: F(1, 6)}, name
    assert law(f"{path}:masked") == {0: F(3, 5), 1: F(2, 5), 2: 0}
    got, e = law(f"{path}:irrational"), sympy.E
    assert all(sympy.simplify(got[i] - w / (1 + e + e ** 2)) == 0
               for i, w in enumerate((1, e, e ** 2)))
    code, _, err = cli(capsys, "verify", f"{path}:gumbel", "--p", "1/2,1/3,1/6", "--q",
                       "1/3,1/3,1/3", "--arith", "float32")
    assert code == 2 and "a race of Gumbel scores" in err and "(rule.py:6)" in err


def test_a_race_of_an_all_zero_residual_is_index_0_as_torch_gives(tmp_path):
    """vLLM computes the recovered token whether or not it is used; with ``p = q`` the residual
    is all zero, every score ``0 / E`` is 0 and torch's argmax of equal values is index 0 (it
    was refused as a race no token can win).  The draft is then always accepted."""
    path = rule_file(tmp_path, """
        def f(p, q):
            x = torch.multinomial(q, 1)
            u = torch.rand(1, dtype=p.dtype)
            noise = torch.empty_like(p)
            noise.exponential_()
            recovered = torch.argmax(torch.clamp(p - q, min=0) * noise.reciprocal(), dim=-1)
            also = (torch.clamp(p - q, min=0) / noise).argmax()
            return torch.where(u < p[x] / q[x], x, recovered + also)
        def zero(p, q):
            return (torch.zeros_like(p) / torch.empty_like(p).exponential_()).argmax()
        """)
    result = verify(f"{path}:f", P2, P2)
    assert result.lossless and result.acceptance == 1
    assert law(f"{path}:zero") == {0: F(1), 1: F(0), 2: F(0)}
    try:
        import torch as real
    except ImportError:
        return
    zeros = real.zeros(3, dtype=real.float64)
    assert (zeros / real.empty_like(zeros).exponential_()).argmax().item() == 0


def test_rows_of_one_noise_tensor_race_independently(tmp_path, capsys):
    """``noise[rows].exponential_()`` fills one tensor; ``argmax(dim=1)`` races each row on
    its own part, and disjoint parts of i.i.d. exponentials are independent races.  A race over
    an overlapping part of the same noise is undecided in one line."""
    path = rule_file(tmp_path, """
        def rows(p, q):
            w = torch.cat((p, q)).reshape(2, -1)
            noise = torch.empty_like(w)
            noise[0:2].exponential_()
            picks = w.div(noise).argmax(dim=1)
            return picks[1] if picks[0] == 0 else picks[0]
        def overlap(p, q):
            w = torch.cat((p, q)).reshape(2, -1)
            noise = torch.empty_like(w).exponential_()
            picks = (w / noise).argmax(dim=1)
            return (w / noise)[:, :2].reshape(-1).argmax() % 3 if picks[0] == 0 else picks[0]
        """)

    def twin(s, p, q):
        a = (list(p.probs) / s.exponentials(3)).argmax()
        b = (list(q.probs) / s.exponentials(3)).argmax()
        return b if a == 0 else a

    # by hand: P(t) = p_0 q_t + [t != 0] p_t
    expect = {0: F(1, 6), 1: F(1, 6) + F(1, 3), 2: F(1, 6) + F(1, 6)}
    assert law(f"{path}:rows") == law(twin) == expect
    code, _, err = cli(capsys, "verify", f"{path}:overlap", "--p", "1/2,1/3,1/6", "--q",
                       "1/3,1/3,1/3")
    assert code == 3 and "overlapping parts of a noise vector" in err
    assert "(rule.py:13)" in err and len(err.strip().splitlines()) == 1


# -- exponential and Gumbel noise written from uniforms: -log(u), -log(1 - u), -log(-log(u)) --
NOISE_RULES = """
    def exp_race(p, q):
        u = torch.rand_like(p)
        return (p / -torch.log(u)).argmax()
    def exp_race_of_complement(p, q):
        return (p / -torch.log(1 - torch.rand(3, dtype=p.dtype))).argmax()
    def exp_argmin(p, q):
        e = torch.rand_like(p).log().neg()
        return torch.argmin(e / p)
    def gumbel(p, q):
        gumbels = -torch.log(-torch.log(torch.rand_like(p)))
        return torch.argmax(torch.log(p) + gumbels)
    def gumbel_tempered(p, q):
        u = torch.rand_like(p)
        return (torch.log(p) / 0.5 - torch.log(-torch.log(u))).argmax()
    def residual(p, q):
        draft = torch.multinomial(q, num_samples=1)
        if torch.rand(1, dtype=p.dtype) < p[draft] / q[draft]:
            return draft
        r = torch.clamp(p - q, min=0)
        return (r / -torch.log(torch.rand_like(r))).argmax()
    def shared(p, q):
        e = -torch.log(torch.rand_like(p))
        first = (q / e).argmax()
        return (p / e).argmax() if first == 0 else first
    def rows(p, q):
        e = -torch.rand(2, 3, dtype=p.dtype).log()
        picks = (torch.stack([p, q]) / e).argmax(dim=1)
        return picks[0] if picks[1] == 1 else picks[1]
"""

#: the same rules with the noise drawn by ``exponential_()`` (what exactspec already models)
EXPONENTIAL_TWINS = """
    def exp_race(p, q):
        return (p / torch.empty_like(p).exponential_()).argmax()
    def exp_race_of_complement(p, q):
        return (p / torch.empty_like(p).exponential_()).argmax()
    def exp_argmin(p, q):
        return torch.argmin(torch.empty_like(p).exponential_() / p)
    def gumbel(p, q):
        return torch.argmax(torch.log(p) - torch.empty_like(p).exponential_().log())
    def gumbel_tempered(p, q):
        e = torch.empty_like(p).exponential_()
        return (torch.log(p) / 0.5 - torch.log(e)).argmax()
    def residual(p, q):
        draft = torch.multinomial(q, num_samples=1)
        if torch.rand(1, dtype=p.dtype) < p[draft] / q[draft]:
            return draft
        r = torch.clamp(p - q, min=0)
        return (r / torch.empty_like(r).exponential_()).argmax()
    def shared(p, q):
        e = torch.empty_like(p).exponential_()
        first = (q / e).argmax()
        return (p / e).argmax() if first == 0 else first
    def rows(p, q):
        e = torch.empty(2, 3, dtype=p.dtype).exponential_()
        picks = (torch.stack([p, q]) / e).argmax(dim=1)
        return picks[0] if picks[1] == 1 else picks[1]
"""


def test_noise_from_uniforms_has_the_law_of_exponential_noise(tmp_path):
    """``-log(u)`` and ``-log(1 - u)`` of uniforms are ``Exp(1)`` noise and ``-log(-log(u))``
    Gumbel noise: a race ``argmax(w / E)`` (or ``argmin(E / w)``) has the weights' law,
    Gumbel-max over logits the softmax law, noise shared by two races and the rows of a 2-D
    noise tensor are those of ``exponential_()``.  Each law by hand and equal to the path
    enumeration of the same rule written with ``exponential_()``."""
    q2 = Dist.parse("1/6,1/2,1/3")
    ours, twins = rule_file(tmp_path, NOISE_RULES), rule_file(tmp_path, EXPONENTIAL_TWINS,
                                                              "twins.py")
    weights = {0: F(1, 2), 1: F(1, 3), 2: F(1, 6)}
    squared = {0: F(9, 14), 1: F(2, 7), 2: F(1, 14)}           # softmax(log(p) / 0.5) = p^2
    by_hand = {"exp_race": weights, "exp_race_of_complement": weights, "exp_argmin": weights,
               "gumbel": weights, "gumbel_tempered": squared, "residual": weights,
               # rows: t0 ~ p, t1 ~ q apart; P(t) = q_1 p_t + [t != 1] q_t
               "rows": {0: F(1, 2) * F(1, 2) + F(1, 6), 1: F(1, 2) * F(1, 3),
                        2: F(1, 2) * F(1, 6) + F(1, 3)}}
    for name in ("exp_race", "exp_race_of_complement", "exp_argmin", "gumbel",
                 "gumbel_tempered", "residual", "shared", "rows"):
        got = verify(f"{ours}:{name}", P, q2)
        twin = verify(f"{twins}:{name}", P, q2)
        assert got.law == twin.law, name
        assert got.acceptance == twin.acceptance, name
        if name in by_hand:
            assert got.law == by_hand[name], name

    def shared_on_the_interface(s, p, q):          # shared noise on the sampling interface
        e = s.exponentials(3)
        first = (list(q.probs) / e).argmax()
        return (list(p.probs) / e).argmax() if first == 0 else first

    assert verify(f"{ours}:shared", P, q2).law == law(shared_on_the_interface, P, q2)


@pytest.mark.parametrize("body, message, code", [
    ("u = torch.rand_like(p)\n    e = -torch.log(u)\n    if u[0] < 0.5:\n        return 0\n"
     "    return (p / e).argmax()", "u1 read again after its log became exponential noise", 3),
    ("u = torch.rand_like(p)\n    if u[0] < 0.5:\n        return 0\n"
     "    return (p / -torch.log(u)).argmax()", "the log of u1 after it was compared", 3),
    ("return (p / -torch.log(2 * torch.rand_like(p))).argmax()",
     "the log of a random value other than a uniform u or 1 - u", 3),
    ("return (p / torch.log(torch.rand_like(p))).argmax()",
     "a weight divided by a value of negative exponential noise", 3),
    ("u = torch.rand_like(p)\n    a = torch.log(u[:2])\n    return (p / -torch.log(u)).argmax()",
     "the log of uniforms some of which were logged before with others", 3),
    ("u = torch.rand_like(p)\n    a = torch.log(u)\n    return (p / -torch.log(1 - u)).argmax()",
     "or as u and as 1 - u", 3),
])
def test_noise_from_uniforms_misused_is_refused_in_one_line(capsys, tmp_path, body, message,
                                                             code):
    path = rule_file(tmp_path, f"def f(p, q):\n    {body}\n")
    got, _, err = cli(capsys, "verify", f"{path}:f", "--p", "1/2,1/3,1/6", "--q", "1/3,1/3,1/3")
    assert got == code and message in err and "(rule.py:" in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("options, message", [
    (["--arith", "float32"], "the log of 3 uniforms of the float32 run's generator grid "
     "(2**24 points each) under --arith: -log(u) on the grid is not Exp(1) noise, and its "
     "exact law there ((2**24)**3 grid points"),
    (["--arith", "bfloat16"], "(2**8 points each)"),
    (["--grid", "7"], "the log of 3 uniforms on the grid of 7 points (--grid, or the exact "
     "run on the format's grid): -log(u) on the grid is not Exp(1) noise, and its exact law "
     "there (7**3 grid points) is not computed"),
])
def test_noise_from_uniforms_on_a_grid_is_refused_with_its_size(capsys, tmp_path, options,
                                                                 message):
    """On a grid ``-log(u)`` takes ``N`` values, not an ``Exp(1)`` law: refused in one line
    with the size of its law (``exponential_()`` noise stays continuous there)."""
    path = rule_file(tmp_path, NOISE_RULES)
    code, _, err = cli(capsys, "verify", f"{path}:residual", "--p", "1/2,1/3,1/6", "--q",
                       "1/6,1/2,1/3", *options)
    assert code == 2 and message in err and "(rule.py:" in err, err
    assert len(err.strip().splitlines()) == 1


def test_noise_from_uniforms_in_real_torch_follows_the_law_exactspec_proves():
    """Under torch, ``argmax(w / -log(u))``, ``argmax(w / -log(1 - u))`` and Gumbel-max
    ``argmax(log(w) - log(-log(u)))`` over 40,000 rows of ``torch.rand`` pass a chi-square test
    (level 1e-6) against ``w / sum(w)``, the law the layer proves for them."""
    real = pytest.importorskip("torch")
    import mpmath

    n, w = 40_000, real.tensor([1 / 2, 1 / 3, 1 / 6], dtype=real.float64)
    gen = real.Generator().manual_seed(7)
    expect = [F(1, 2), F(1, 3), F(1, 6)]
    for make in (lambda u: w / -real.log(u), lambda u: w / -real.log(1 - u),
                 lambda u: real.log(w) - real.log(-real.log(u))):
        u = real.rand(n, 3, dtype=real.float64, generator=gen)
        picks = make(u).argmax(dim=1).tolist()
        stat = sum((picks.count(i) - n * float(e)) ** 2 / (n * float(e))
                   for i, e in enumerate(expect))
        assert float(mpmath.gammainc(1, stat / 2, regularized=True)) > 1e-6


# -- uniforms of another dtype under --arith: each tensor in its own dtype ---------------------
MIXED_RULES = """
    def v1(p, q):
        draft = torch.multinomial(q, num_samples=1)
        uniform = torch.rand(1, dtype=torch.float64)
        target_prob, draft_prob = p[draft], q[draft]
        if ((draft_prob > 0) & (target_prob / draft_prob >= uniform)).item():
            return draft
        residual = torch.clamp(p - q, min=0)
        return (residual / torch.empty_like(residual).exponential_()).argmax()
    def kernel(p, q):
        draft = torch.multinomial(q, num_samples=1)
        uniform = torch.empty(1, dtype=torch.float64).uniform_()
        if (uniform * q[draft] < p[draft]).item():
            return draft
        return torch.multinomial(torch.clamp(p - q, min=0), 1)
    def half(p, q):
        draft = torch.multinomial(q, num_samples=1)
        if torch.rand(1, dtype=torch.float16) < p[draft] / q[draft]:
            return draft
        return torch.multinomial(torch.clamp(p - q, min=0), 1)
"""


def _f32(x) -> F:
    return F(float(np.float32(float(x))))


def test_float64_uniforms_beside_float32_rows_under_arith(tmp_path, capsys):
    """vLLM's second engine compares ``float64`` uniforms with ``float32`` probability ratios:
    under ``--arith float32`` the ratio is rounded in ``float32`` and compared in ``float64``
    (torch's promotion) with a uniform of the ``float64`` generator's grid ``j / 2**53``.  The
    float run's law by hand: accepting ``x`` with ``#{j : j / 2**53 <= c_x} / 2**53``,
    ``c_x = fl32(p_x / q_x)``, else the residual's race over its ``float32`` values."""
    path = rule_file(tmp_path, MIXED_RULES)
    code, out, err = cli(capsys, "verify", f"{path}:v1", "--p", "1/2,1/3,1/6", "--q",
                         "1/3,1/3,1/3", "--arith", "float32", "--json")
    data = json.loads(out)
    n = 2 ** 53
    p32 = [_f32(x) for x in P.probs]
    q32 = [_f32(x) for x in Q.probs]
    accept = []
    for a, b in zip(p32, q32):
        c = _f32(np.float32(float(a)) / np.float32(float(b)))
        accept.append(F(min(n, math.floor(c * n) + 1), n))
    residual = [max(_f32(np.float32(float(a)) - np.float32(float(b))), F(0))
                for a, b in zip(p32, q32)]
    reject = 1 - sum(F(1, 3) * a for a in accept)
    expect = {str(i): F(1, 3) * accept[i] + reject * residual[i] / sum(residual)
              for i in range(3)}
    assert code == 1 and {k: F(v) for k, v in data["output"].items()} == expect
    assert accept[2] == F(2 ** 52 + 1, n)                     # c_2 = 1/2 exactly
    assert F(data["bias"]) == F(1, 3 * 2 ** 53)               # one float64 grid point
    assert data["exact_arith"]["output"] == {"0": "1/2", "1": "1/3", "2": "1/6"}
    # the same rule in exact arithmetic: a float64 uniform is an ideal one there
    assert verify(f"{path}:v1", P, Q).lossless


def test_a_rounded_expression_of_a_float64_uniform_cut_by_bisection(tmp_path, capsys):
    """``uniform * q[x] < p[x]`` with a ``float64`` uniform and ``float32`` rows: the product
    in ``float64`` (promotion), rounded once; the cut is the first grid point where the
    rounded product reaches ``p[x]`` (counted here with Python's own floats, which are
    ``float64``), and a ``float16`` uniform on its grid of ``2**11`` beside the rows."""
    path = rule_file(tmp_path, MIXED_RULES)
    p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
    n = 2 ** 53
    p32 = [float(np.float32(float(x))) for x in p.probs]
    q32 = [float(np.float32(float(x))) for x in q.probs]

    def count_below(a, b):                 # #{j < 2**53 : fl64(j / 2**53 * b) < a}
        lo, hi = 0, n
        while lo < hi:
            mid = (lo + hi) // 2
            if (mid / n) * b < a:
                lo = mid + 1
            else:
                hi = mid
        return lo

    accept = [F(count_below(a, b), n) for a, b in zip(p32, q32)]
    residual = [max(F(float(np.float32(a) - np.float32(b))), F(0)) for a, b in zip(p32, q32)]
    reject = 1 - sum(F(b) * acc for b, acc in zip(q.probs, accept))
    expect = {str(i): q.probs[i] * accept[i] + reject * residual[i] / sum(residual)
              for i in range(3)}
    code, out, _ = cli(capsys, "verify", f"{path}:kernel", "--p", "1/2,3/10,1/5", "--q",
                       "1/5,1/5,3/5", "--arith", "float32", "--json")
    assert {k: F(v) for k, v in json.loads(out)["output"].items()} == expect
    # a float16 uniform: u < c on the grid j / 2**11, c the float32 ratio compared in float32
    m = 2 ** 11
    ratios = [F(float(np.float32(a) / np.float32(b))) for a, b in zip(p32, q32)]
    accept16 = [F(min(m, math.ceil(c * m)), m) for c in ratios]
    reject16 = 1 - sum(F(b) * acc for b, acc in zip(q.probs, accept16))
    expect16 = {str(i): q.probs[i] * accept16[i] + reject16 * residual[i] / sum(residual)
                for i in range(3)}
    code, out, _ = cli(capsys, "verify", f"{path}:half", "--p", "1/2,3/10,1/5", "--q",
                       "1/5,1/5,3/5", "--arith", "float32", "--json")
    assert {k: F(v) for k, v in json.loads(out)["output"].items()} == expect16


def test_the_generator_grids_and_promotion_the_layer_assumes_are_torchs():
    """``torch.rand`` of ``float64`` and ``float32`` draws multiples of ``1 / N`` (``N = 2**53``,
    ``2**24``), the grids of :data:`~exactspec.engine.floats.FORMATS`, and a ``float32`` tensor
    compared with a ``float64`` one is compared in ``float64``.  (Torch 2.14's CPU ``rand`` of
    ``float16`` and ``bfloat16`` is not the grid ``2**11`` / ``2**8`` the engine models for those
    formats: it is the ``float32`` draw rounded to nearest into the half type, ``1.0`` replaced
    by 0; pinned here.)"""
    real = pytest.importorskip("torch")
    gen = real.Generator().manual_seed(3)
    for dtype, name in ((real.float64, "float64"), (real.float32, "float32")):
        n = FORMATS[name].grid
        u = real.rand(20_000, dtype=dtype, generator=gen).double()
        scaled = u * n
        assert bool((scaled == scaled.floor()).all()) and float(u.max()) < 1, name
        assert len(set(scaled.tolist())) > 19_000, name        # the fine grid is used
    for dtype in (real.float16, real.bfloat16):
        a = real.rand(200_000, generator=real.Generator().manual_seed(11))
        b = real.rand(200_000, dtype=dtype, generator=real.Generator().manual_seed(11))
        rounded = a.to(dtype)
        assert real.equal(b, real.where(rounded == 1, real.zeros_like(rounded), rounded))
        assert bool((rounded == 1).any())                     # ... and 1.0 does occur there
    a32 = real.tensor([0.5], dtype=real.float32)
    u64 = real.tensor([0.5 + 2 ** -40], dtype=real.float64)
    assert real.result_type(a32, u64) == real.float64
    assert bool(a32 < u64)          # in float32 the uniform would round to 0.5: not less


# -- setitem of a value with leading unit dimensions; floats counted once ----------------------
def _setitem_cases(torch):
    out = []
    for shape, key, value in (((2, 3), (0, slice(None)), (1, 3)), ((2, 3), 1, (1, 1, 3)),
                              ((2, 3), (slice(None), 1), (2, 1)), ((2, 3), 0, (2, 3)),
                              ((3,), slice(0, 2), (1, 2))):
        x = torch.zeros(*shape)
        try:
            x[key] = torch.ones(*value)
            out.append(x.tolist())
        except Exception:                        # noqa: BLE001 - torch refuses these too
            out.append("refused")
    try:
        torch.zeros(2, 3)[0].copy_(torch.ones(1, 3))
        out.append("copy_ accepted")
    except Exception:                            # noqa: BLE001
        out.append("copy_ refused")
    return out


def test_setitem_drops_the_values_leading_unit_dimensions_as_torch_does(tmp_path):
    with installed() as torch:
        got = _setitem_cases(torch)
    assert got == [[[1, 1, 1], [0, 0, 0]], [[0, 0, 0], [1, 1, 1]], "refused", "refused",
                   [1, 1, 0], "copy_ refused"]
    path = rule_file(tmp_path, """
        def rows(p, q):
            u = torch.empty(2, 3, dtype=p.dtype)
            u[0, :] = torch.rand(1, 3, dtype=p.dtype)
            u[1] = torch.rand(1, 1, 3, dtype=p.dtype)
            return (u[0] < p).int().argmax() if (u[1] < 0.5).all() else 1
        """)
    # the first i with u_i < p_i (argmax of an all-false row: 0), when all of u[1] < 1/2
    p2, left, first = [F(1, 4), F(1, 2), F(1, 4)], F(1), {}
    for i, x in enumerate(p2):
        first[i], left = left * x, left * (1 - x)
    first[0] += left
    expect = {t: F(1, 8) * first[t] + (F(7, 8) if t == 1 else 0) for t in range(3)}
    assert law(f"{path}:rows", Dist(p2), Q) == expect
    try:
        import torch as real
    except ImportError:
        return
    assert _setitem_cases(real) == [[[1, 1, 1], [0, 0, 0]], [[0, 0, 0], [1, 1, 1]],
                                    "refused", "refused", [1, 1, 0], "copy_ refused"]


def test_a_float_literal_counts_once_per_rule_not_once_per_path(tmp_path):
    """``floats_converted`` of a PyTorch rule counts each float of its code once (a value at
    a place of the code), however many paths, elements or loop passes read it: on the path
    route (Python branching on the draft) and on the vectorised route alike."""
    path = rule_file(tmp_path, """
        def f(p, q):
            x = torch.multinomial(q, 1)
            r = torch.clamp(p - q, min=1e-9)              # one literal, a row of elements
            for _ in range(3):
                r = r * 0.5                               # one literal, three passes
            if x.item() == 0:                             # Python branching: the paths
                return x
            if torch.rand(1, dtype=p.dtype) < p[x] / q[x]:
                return x
            return torch.multinomial(r, 1)
        def g(p, q):
            x = torch.multinomial(q, 1)
            r = torch.clamp(p - q, min=1e-9)
            r = torch.tensor([0.25, 0.25, 0.5], dtype=p.dtype) * r
            return torch.where(torch.rand(1, dtype=p.dtype) < p[x] / q[x], x,
                               torch.multinomial(r, 1))
        """)
    paths = verify(f"{path}:f", P, Q)
    assert paths.paths > 3 and paths.floats_converted == 2
    vectorised = verify(f"{path}:g", P, Q)
    # 1e-9, and 0.25 and 0.5 of one list (its two 0.25 one value at one place)
    assert vectorised.enumeration.draft_axis == 3 and vectorised.floats_converted == 3


def test_softmax_with_temperature_and_top_p_written_with_sort_cumsum_scatter(tmp_path):
    import sympy

    path = rule_file(tmp_path, """
        import torch.nn.functional as F
        def top_p(p, q):
            probs = F.softmax(torch.tensor([0.0, 1.0, 2.0], dtype=p.dtype) / 2, dim=-1)
            sorted_probs, order = probs.sort(descending=True)
            sorted_probs[sorted_probs.cumsum(-1) - sorted_probs > 0.6] = 0
            filtered = torch.zeros_like(probs).scatter_(-1, order, sorted_probs)
            return torch.multinomial(filtered, 1)
        """)
    got = law(f"{path}:top_p", Q, Q)
    e, root = sympy.E, sympy.sqrt(sympy.E)      # weights 1 : e^(1/2) : e; the top two kept
    assert got[0] == 0
    assert (got[1] - root / (e + root)).equals(0)
    assert (got[2] - e / (e + root)).equals(0)


def test_top_k_and_top_p_warpers_on_log_probabilities(tmp_path):
    path = rule_file(tmp_path, """
        import torch.nn.functional as F
        def top_k(p, q):
            logits = torch.log(p)
            top = torch.topk(logits, 2).values[..., -1, None]
            logits = logits.masked_fill(logits < top, float("-inf"))
            return torch.multinomial(F.softmax(logits, dim=-1), 1)
        def top_p(p, q):
            logits = torch.log(p).unsqueeze(0)
            sorted_logits, sorted_indices = torch.sort(logits, descending=False)
            cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
            remove = cumulative <= (1 - 0.6)
            remove[..., -1:] = 0
            remove = remove.scatter(1, sorted_indices, remove)
            logits = logits.masked_fill(remove, -float("inf"))
            return torch.multinomial(F.softmax(logits, dim=-1), num_samples=1).squeeze(1)
        """)
    # both keep tokens 0 and 1 of p = (1/2, 1/3, 1/6): renormalised, (3/5, 2/5, 0)
    expected = {0: F(3, 5), 1: F(2, 5), 2: 0}
    assert law(f"{path}:top_k") == law(f"{path}:top_p") == expected


def test_a_seeded_generator_is_accepted(tmp_path):
    path = rule_file(tmp_path, """
        def seeded(p, q):
            g = torch.Generator(device="cpu").manual_seed(1234)
            draft = torch.multinomial(q, 1, generator=g)
            u = torch.rand(1, generator=g, dtype=p.dtype)
            if (u < p[draft] / q[draft]).item():
                return draft
            r = (p - q).clamp(min=0)
            return torch.multinomial(r / r.sum(), 1, generator=g)
        """)
    assert verify(f"{path}:seeded", P, Q).lossless


def test_a_three_parameter_function_is_not_a_pytorch_rule(tmp_path):
    path = rule_file(tmp_path, """
        def f(s, p, q):
            return s.draw(p)
        """)
    assert load_pytorch_rule(f"{path}:f") is None


# -- the command line ------------------------------------------------------------------------
def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_verify_json_of_a_pytorch_rule(capsys):
    import json

    code, out, _ = cli(capsys, "verify", f"{HF}:sample", "--p", "1/2,1/3,1/6", "--q",
                       "1/3,1/3,1/3", "--json")
    data = json.loads(out)
    assert code == 0 and data["lossless"] and data["acceptance"] == "5/6"
    code, out, _ = cli(capsys, "verify", f"{HF}:sample_wrong_row", "--p", "1/2,1/3,1/6",
                       "--q", "1/3,1/3,1/3", "--json")
    assert code == 1 and json.loads(out)["differs"] == ["0", "2"]


@pytest.mark.parametrize("body, message", [
    ("return p.cosh().argmax()", "Tensor.cosh is outside exactspec's tensor layer (rule.py:3)"),
    ("return torch.fft.fft(p)", "torch.fft is outside exactspec's tensor layer (rule.py:3)"),
    ("return torch.cuda.current_device()", "torch.cuda.current_device is refused"),
    ("return p.to('cuda').argmax()", "exactspec runs a PyTorch rule on its own CPU"),
    ("return torch.multinomial(q, 1, generator=torch.Generator(device='cuda'))",
     "torch.Generator(device='cuda'): exactspec runs a PyTorch rule on its own CPU"),
    ("e = torch.empty(3, dtype=p.dtype)\n    e[:2] = torch.rand(2, dtype=p.dtype)\n"
     "    return (e < p).int().argmax()", "never written (rule.py:5)"),
    ("return torch.tensor([0.5])", "return the emitted token index"),
    ("return (p > q).argmax()", "argmax of a bool tensor (torch refuses it)"),
    ("return torch.topk(torch.tensor([1, 1, 0]), 2)[1][1]",
     "returned an index of tied values from topk: torch leaves the order of tied indices "
     "unspecified"),
    ("return ((p > q) - (q > p)).int().argmax()", "subtraction of two bool tensors"),
    ("return (torch.tensor([2 ** 62]) * 4 + torch.multinomial(q, 1)) % 3",
     "an int64 result 18446744073709551616 outside the dtype's range: torch wraps it around"),
    ("return torch.where(torch.tensor([1, 0, 0]), p, q).argmax()",
     "where: the condition is a int64 tensor; torch takes a bool tensor"),
    ("return torch.zeros(3).scatter_add_(0, torch.tensor([0, 0]), p[:2]).argmax()",
     "scatter_add: src is float64, the tensor float32; torch takes the same dtype"),
    ("return torch.zeros_like(p).scatter_(0, torch.tensor([0]), torch.tensor([1])).argmax()",
     "scatter: src is int64, the tensor float64"),
    ("return torch.zeros(3, dtype=torch.int64).scatter_(0, torch.tensor([0, 0]), "
     "torch.tensor([1, 2])).argmax()", "depends on the hardware's order"),
    ("return torch.tensor([2 ** 70]).argmax()", "cannot be converted to type int64 without "
     "overflow"),
    ("return p.half().masked_fill(p > 0.3, -1e9).argmax()", "cannot be converted to type "
     "float16 without overflow"),
    ("return (p - True).argmax()", "subtraction with a bool operand"),
    ("return torch.tensor([1.0]).expand(10 ** 9).sum().int()", "1,000,000,000 elements, over "
     "the tensor layer's budget of 16,777,216"),
])
def test_refusals_are_one_line_exit_2(capsys, tmp_path, body, message):
    path = rule_file(tmp_path, f"def f(p, q):\n    {body}\n")
    code, _, err = cli(capsys, "verify", f"{path}:f", "--p", "1/2,1/4,1/4", "--q", "1/3,1/3,1/3")
    assert code == 2 and message in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("tokens", [[], ["--tokens", "3"]])
def test_a_refusal_names_the_users_line_once(capsys, tmp_path, tokens):
    """The layer's refusal names the file and line itself; neither the one-position route nor
    the multi-position one adds it again, nor calls it a value the verifier built."""
    path = rule_file(tmp_path, "def f(p, q):\n    x = torch.multinomial(q, 1)\n"
                               "    return torch.fft.fft(p)\n")
    code, _, err = cli(capsys, "verify", f"{path}:f", "--p", "1/2,1/4,1/4", "--q",
                       "1/3,1/3,1/3", *tokens)
    assert code == 2
    assert err.strip() == "error: torch.fft is outside exactspec's tensor layer (rule.py:4)"


@pytest.mark.parametrize("source, message", [
    ("def f(p):\n    return 0\n", "f(p) takes 1 parameter without a default: a PyTorch rule"),
    ("def f():\n    return 0\n", "f() takes 0 parameters"),
    ("def f(p, q, r, s, t):\n    return 0\n", "f(p, q, r, s, t) takes 5 parameters"),
    ("def f(p, q, *, temperature):\n    return 0\n",
     "keyword-only parameter 'temperature' without a default"),
    ("f = 3\n", "f is not a function of (p, q)"),
    ("def f(p, q)\n    return 0\n", "rule.py under exactspec's tensor layer failed: "
     "SyntaxError: expected ':' (rule.py, line 2)"),
    ("import torch.distributions as D\ndef f(p, q):\n    return D.Categorical(p).sample()\n",
     "torch.distributions is outside exactspec's tensor layer, which stands in for torch and "
     "torch.nn.functional (rule.py:2)"),
    ("async def f(p, q):\n    return 0\n", "f is asynchronous"),
    ("def f(p, q):\n    yield 0\n", "f is a generator"),
    ("def f(p, q):\n    while True:\n        if torch.rand(1, dtype=p.dtype) < 2:\n"
     "            pass\n", "random constructors more than 10,000 times: it may loop without "
     "bound (rule.py:4)"),
])
def test_a_function_that_is_not_a_pytorch_rule_is_refused_in_one_line(capsys, tmp_path, source,
                                                                      message):
    """In a file that imports torch, a function that cannot be called as ``fn(p, q)`` is
    refused when loaded (not handed to the sampler-rule loader, which would import the file
    without the layer); a loop drawing without branching is refused, not run forever."""
    path = rule_file(tmp_path, source)
    code, out, err = cli(capsys, "verify", f"{path}:f", "--p", "1/2,1/4,1/4", "--q",
                         "1/3,1/3,1/3")
    assert code == 2 and message in err and not out, err
    assert len(err.strip().splitlines()) == 1 and "No module named" not in err


@pytest.mark.parametrize("arith", [[], ["--arith", "float32"]])
def test_a_rule_keeping_state_between_calls_is_refused_on_the_vectorised_route(capsys, tmp_path,
                                                                               arith):
    """The draft as a tensor axis runs the body once: a rule whose calls alternate between
    the residual and ``p`` (lossless on odd calls only) was proved from its first call."""
    path = rule_file(tmp_path, """
        N = [0]
        def f(p, q):
            N[0] += 1
            x = torch.multinomial(q, 1)
            u = torch.rand(1, dtype=p.dtype)
            r = torch.multinomial(torch.clamp(p - q, min=0) if N[0] % 2 else p, 1)
            return torch.where(u < p[x] / q[x], x, r)
        """)
    code, out, err = cli(capsys, "verify", f"{path}:f", "--p", "1/2,1/3,1/6", "--q",
                         "1/4,1/4,1/2", *arith)
    assert code == 2 and "keeps hidden state: its global 'N' changed" in err and not out
    assert len(err.strip().splitlines()) == 1


def test_a_numpy_integer_returned_is_the_token(tmp_path):
    path = rule_file(tmp_path, """
        import numpy as np
        def f(p, q):
            x = torch.multinomial(q, 1)
            if torch.rand(1, dtype=p.dtype) < p[x] / q[x]:
                return np.int64(x.item())
            return np.argmax(np.array([1, 0, 0]))
        """)
    # accepted with q * min(1, p / q) = (1/4, 1/4, 1/6); the rejection's 1/3 goes to token 0
    assert law(f"{path}:f", P2, Q2) == {0: F(7, 12), 1: F(1, 4), 2: F(1, 6)}


def test_a_cuda_refusal_names_the_users_line_once(capsys, tmp_path):
    path = rule_file(tmp_path, "def f(p, q):\n    return torch.multinomial(q.cuda(), 1)\n")
    code, _, err = cli(capsys, "verify", f"{path}:f", "--p", "1/2,1/4,1/4", "--q", "1/3,1/3,1/3")
    assert code == 2 and err.strip() == ("error: Tensor.cuda(): exactspec runs a PyTorch rule "
                                         "on its own CPU tensor layer (rule.py:3)")


def test_a_torch_compiled_rule_runs_eagerly_exact_and_is_refused_under_arith(capsys,
                                                                              tmp_path):
    path = rule_file(tmp_path, """
        @torch.compile(dynamic=True)
        def residual(p, q):
            return torch.clamp(p - q, min=0)

        @torch.compile
        def f(p, q):
            x = torch.multinomial(q, 1)
            if torch.rand(1, dtype=p.dtype) < p[x] / q[x]:
                return x
            return torch.multinomial(residual(p, q), 1)
        """)
    assert law(f"{path}:f", P2, Q2) == {0: F(1, 2), 1: F(1, 3), 2: F(1, 6)}
    code, _, err = cli(capsys, "verify", f"{path}:f", "--p", "1/2,1/3,1/6", "--q",
                       "1/4,1/4,1/2", "--arith", "float32")
    assert code == 2 and "torch.compile'd f under --arith" in err and "(rule.py:7)" in err
    assert len(err.strip().splitlines()) == 1


def test_float_scatter_add_into_one_place_under_arith_is_refused(capsys, tmp_path):
    """Exact sums do not depend on their order; float32 sums of two values into one place do,
    and torch does not fix that order."""
    path = rule_file(tmp_path, "def f(p, q):\n"
                               "    t = torch.zeros_like(p).scatter_add_(0, torch.tensor([0, 0]), "
                               "p[:2])\n    return torch.multinomial(t + q, 1)\n")
    # t = (1/2 + 1/3, 0, 0); t + q = (13/12, 3/12, 6/12), normalised by 22/12
    assert law(f"{path}:f", P2, Q2) == {0: F(13, 22), 1: F(3, 22), 2: F(6, 22)}
    code, _, err = cli(capsys, "verify", f"{path}:f", "--p", "1/2,1/4,1/4", "--q",
                       "1/3,1/3,1/3", "--arith", "float32")
    assert code == 2 and "scatter_add of two float32 values into one place" in err
    assert "(rule.py:3)" in err and len(err.strip().splitlines()) == 1


def test_a_long_float_sum_under_arith_is_refused_in_one_line(capsys):
    p, q = ",".join(["1/5"] * 5), ",".join(["1/10"] * 4 + ["3/5"])
    code, _, err = cli(capsys, "verify", f"{HF}:sample", "--p", p, "--q", q, "--arith", "float32")
    assert code == 2 and "a float32 sum of 5 terms under --arith" in err
    assert "--sum-order" in err                          # the message names the option
    assert "hf_speculative_sampling.py:" in err and len(err.strip().splitlines()) == 1
    code, _, _ = cli(capsys, "verify", f"{HF}:sample", "--p", p, "--q", q)
    assert code == 0                                     # exact arithmetic: any order


@pytest.mark.parametrize("order", ["sequential", "correctly-rounded", "torch-avx2",
                                   "torch-avx2:2"])
def test_a_declared_sum_order_runs_and_is_reported(capsys, order):
    p, q = ",".join(["1/5"] * 5), ",".join(["1/10"] * 4 + ["3/5"])
    code, out, err = cli(capsys, "verify", f"{HF}:sample", "--p", p, "--q", q, "--arith",
                         "float32", "--sum-order", order, "--json")
    report = json.loads(out)
    assert code in (0, 1) and report["sum_order"] == order and report["arith"] == "float32"
    assert report["verdict"] in ("lossless", "lossy-grid", "lossy-rounding")
    assert report["bias_exact_arith"] == "0"
    code, out, _ = cli(capsys, "verify", f"{HF}:sample", "--p", p, "--q", q, "--arith",
                       "float32", "--sum-order", order)
    assert f"long sums {order}" in out


@pytest.mark.parametrize("args,message", [
    (["--sum-order", "sequential"], "--sum-order applies with --arith"),
    (["--arith", "float32", "--sum-order", "pairwise"], "sum order 'pairwise'"),
])
def test_sum_order_misuse_is_one_line_exit_2(capsys, args, message):
    code, _, err = cli(capsys, "verify", f"{HF}:sample", "--p", "1/2,1/2", "--q", "1/3,2/3",
                       *args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_a_noise_value_read_alone_is_undecided_in_one_line(capsys, tmp_path):
    path = rule_file(tmp_path, "def f(p, q):\n"
                               "    return (torch.empty_like(p).exponential_() < p).int().argmax()\n")
    code, _, err = cli(capsys, "verify", f"{path}:f", "--p", "1/2,1/2", "--q", "1/2,1/2")
    assert code == 3 and "a single exponential value read on its own" in err
    assert "(rule.py:3)" in err and len(err.strip().splitlines()) == 1


# -- multi-position PyTorch rules (verify FILE:fn --tokens M) ---------------------------------
P2, Q2 = Dist.parse("1/2,1/3,1/6"), Dist.parse("1/4,1/4,1/2")     # relu(p - q) has 2 tokens


def prove_tokens(spec, m, p=P2, q=Q2, arith=None):
    from exactspec.sequences.context import ContextPair
    from exactspec.sequences.torch_rules import pytorch_whole_call
    from exactspec.sequences.user import user_report

    return user_report({}, pytorch_whole_call(load_pytorch_rule(spec), m),
                       pair=ContextPair.context_free(p, q), m=m, arith=arith)


def first_token_law(report) -> dict:
    out: dict = {}
    for key, w in report["law"].items():
        first = key.split(",")[0]
        out[first] = out.get(first, F(0)) + F(w)
    return out


def test_flashinfer_style_chain_is_proved_and_its_noise_reuse_refuted():
    ok = prove_tokens(f"{CHAIN}:chain", 2)
    assert ok["verdict"] == "lossless" and ok["tokens_per_call"] == "5/3"  # 1 + sum min(p, q)
    reuse = prove_tokens(f"{CHAIN}:chain_reuse_rejecting_uniform", 2)
    # by hand: token 2 is rejected when u >= 1/3 (probability 1/2 * 2/3); the residual
    # (1/4, 1/12, 0) then reads u uniform on [1/3, 1): token 0 for u < 3/4, i.e. 5/8, not 3/4
    first = first_token_law(reuse)
    assert first == {"0": F(1, 4) + F(1, 3) * F(5, 8), "1": F(1, 4) + F(1, 3) * F(3, 8),
                     "2": F(1, 6)}
    assert reuse["verdict"] == "lossy-logic" and F(reuse["tv"]) >= F(1, 24)
    shared = prove_tokens(f"{CHAIN}:chain_shared_uniform", 2)
    # one position: the shared uniform draws a rejected position's token as the reuse does
    # (and biases the bonus token after an acceptance besides)
    assert first_token_law(shared) == first and shared["verdict"] == "lossy-logic"
    assert F(shared["tv"]) > F(reuse["tv"])


def test_flashinfer_style_chain_under_float32_is_lossy_by_the_grid_only():
    r = prove_tokens(f"{CHAIN}:chain", 2, arith="float32")
    # the float32 law is exactly the law of exact arithmetic on torch.rand's 2**24 grid
    assert r["verdict"] == "lossy-grid" and r["bias_exact_arith"] == "0"
    assert r["bias"] == r["bias_grid_only"] == "117440515/3377699720527872"


@pytest.mark.parametrize("m", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_hf_and_vllm_multi_position_rules_under_float32(m):
    """The k-position samplers under ``--arith float32`` (the factored route): the Hugging Face
    one is lossless in exact arithmetic and lossy by rounding only; the vLLM-style one is lossy
    by its clamp at tiny, the same exact TV as the factored route gives, plus the rounding."""
    hf = prove_tokens(f"{HF}:speculative_sampling", m, arith="float32")
    assert hf["verdict"] == "lossy-rounding" and hf["bias_exact_arith"] == "0"
    assert 0 < F(hf["bias_grid_only"]) < F(hf["bias"]) < F(1, 10 ** 7)
    if m == 3:
        vllm = prove_tokens(f"{VLLM}:rejection_sample", m, arith="float32")
        exact = prove_tokens(f"{VLLM}:rejection_sample", m)
        assert exact["route"] == vllm["route"] == "factored"
        assert vllm["verdict"] == "lossy-logic" and vllm["bias_exact_arith"] == exact["tv"]
        assert F(exact["tv"]) < F(1, 10 ** 37) and 0 < F(vllm["bias"]) < F(1, 10 ** 7)


def _tree_first_token(p, q, with_replacement: bool, threshold_acc=F(1)) -> dict:
    """The first token of the tree rule by hand: siblings (a, b) from q, one coin, accept a when
    coin <= p(a) / t, then b when coin <= (p(a) + p(b)) / t, else the residual without them."""
    n = len(p)
    law = [F(0)] * n
    for a in range(n):
        for b in range(n):
            if a == b and not with_replacement:
                continue
            weight = q[a] * (q[b] if with_replacement else q[b] / (1 - q[a]))
            first = min(F(1), p[a] / threshold_acc)
            second = min(F(1), ((p[a] + p[b]) if a != b else 2 * p[a]) / threshold_acc)
            law[a] += weight * first
            law[b] += weight * (second - first)
            rest = [i for i in range(n) if i not in (a, b)]
            mass = sum(p[i] for i in rest)
            for i in rest:
                law[i] += weight * (1 - second) * p[i] / mass
    return {str(i): w for i, w in enumerate(law) if w}


def test_sglang_style_tree_is_proved_and_two_bug_classes_refuted():
    p, q = list(P2.probs), list(Q2.probs)
    ok = prove_tokens(f"{TREE}:tree", 2)
    assert ok["verdict"] == "lossless"
    assert first_token_law(ok) == _tree_first_token(p, q, False) == \
        {str(i): w for i, w in enumerate(p)}
    dup = prove_tokens(f"{TREE}:tree_siblings_with_replacement", 2)
    assert dup["verdict"] == "lossy-logic" and dup["tv"] == "1175/36864"
    assert first_token_law(dup) == _tree_first_token(p, q, True)
    relaxed = prove_tokens(f"{TREE}:tree_relaxed_threshold", 2)
    assert relaxed["verdict"] == "lossy-logic" and relaxed["tv"] == "1/18"
    assert first_token_law(relaxed) == _tree_first_token(p, q, False, F(1, 2))


def test_multi_position_pytorch_rule_through_the_cli(capsys):
    import json

    code, out, _ = cli(capsys, "verify", f"{CHAIN}:chain_shared_uniform", "--p", "1/2,1/3,1/6",
                       "--q", "1/4,1/4,1/2", "--tokens", "2")
    assert code == 1 and "REFUTED (lossy by logic)" in out
    code, _, err = cli(capsys, "verify", f"{CHAIN}:chain", "--p", "1/2,1/2", "--q", "1/2,1/2",
                       "--tokens", "1")
    assert code == 2 and "needs M >= 2" in err
    code, out, _ = cli(capsys, "verify", f"{CHAIN}:chain", "--p", "1/2,1/3,1/6", "--q",
                       "1/4,1/4,1/2", "--tokens", "2", "--arith", "float32", "--tolerance",
                       "2**-20", "--json")
    data = json.loads(out)
    assert code == 0 and data["verdict"] == "lossy-grid" and data["within_tolerance"]
    assert F(data["bias"]) == F(117440515, 3377699720527872)     # about 3.48e-08
    code, _, err = cli(capsys, "verify", "sps", "--p", "1/2,1/2", "--q", "1/2,1/2", "--tokens",
                       "2", "--arith", "float32")
    assert code == 2 and "sps" in err                # a registered one-position method


def test_multi_position_rule_returning_a_bad_value_is_refused(tmp_path, capsys):
    path = rule_file(tmp_path, "def f(p, q):\n    return torch.tensor([0, 1, 2, 0])\n")
    code, _, err = cli(capsys, "verify", f"{path}:f", "--p", "1/2,1/4,1/4", "--q",
                       "1/3,1/3,1/3", "--tokens", "2")
    assert code == 2 and "emitted 4 tokens from 1 draft positions" in err


@pytest.mark.slow
@pytest.mark.parametrize("name, verdict, tv", [
    ("flashinfer_chain.py:chain", "lossless", None),
    ("flashinfer_chain.py:chain_reuse_rejecting_uniform", "lossy-logic", "133/2304"),
    ("flashinfer_chain.py:chain_shared_uniform", "lossy-logic", "1103/6912"),
    ("sglang_tree.py:tree", "lossless", None),
    ("sglang_tree.py:tree_siblings_with_replacement", "lossy-logic", "272381/7077888"),
    ("sglang_tree.py:tree_relaxed_threshold", "lossy-logic", "1009/12960"),
    ("hf_speculative_sampling.py:speculative_sampling", "lossless", None),
    ("hf_speculative_sampling.py:speculative_sampling_count_all", "lossy-logic", "1357/5832"),
])
def test_gallery_chain_and_tree_on_three_tokens(name, verdict, tv):
    r = prove_tokens(str(ROOT / "examples" / "engines" / name), 3)
    assert r["verdict"] == verdict and r.get("tv") == tv


# -- against real torch, where it is installed -----------------------------------------------
def test_deterministic_float32_ops_match_real_torch():
    real = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    a, b = rng.random(4).astype(np.float32), rng.random(4).astype(np.float32) + 0.1
    expect = {
        "div": (real.tensor(a) / real.tensor(b)).tolist(),
        "sub_clamp": real.clamp(real.tensor(a) - real.tensor(b), min=0).tolist(),
        "cumsum": real.tensor(a).cumsum(0).tolist(),
        "sum": [real.tensor(a).sum().item()],
        "mul_half": (real.tensor(a).half() * real.tensor(b).half()).float().tolist(),
    }
    with installed(Run(None, FORMATS["float32"])) as torch:
        x, y = torch.tensor(a.tolist()), torch.tensor(b.tolist())
        got = {
            "div": (x / y).tolist(),
            "sub_clamp": torch.clamp(x - y, min=0).tolist(),
            "cumsum": x.cumsum(0).tolist(),
            "sum": [x.sum().item()],
            "mul_half": (x.half() * y.half()).float().tolist(),
        }
    for key in expect:
        assert [exact_value(v) for v in got[key]] == [F(v) for v in expect[key]], key


def test_op_semantics_match_real_torch_on_cpu():
    """Promotion, division by zero, clamp/maximum with NaN, argmax ties, sort stability and
    topk ties: the layer's answer beside torch's (skipped where torch is not installed)."""
    real = pytest.importorskip("torch")
    nan, inf = float("nan"), float("inf")
    cases = {
        "int + float": lambda t: str((t.tensor([1, 2]) + 0.5).dtype),
        "int / int": lambda t: str((t.tensor([1, 2]) / t.tensor([2, 2])).dtype),
        "f16 + bf16": lambda t: str((t.ones(2, dtype=t.float16)
                                     + t.ones(2, dtype=t.bfloat16)).dtype),
        "f32 * 0-d f64": lambda t: str((t.ones(2) * t.tensor(1.0, dtype=t.float64)).dtype),
        "i64 * 0-d f64": lambda t: str((t.ones(2, dtype=t.int64)
                                        * t.tensor(1.0, dtype=t.float64)).dtype),
        "f16 * 0-d f64": lambda t: str((t.tensor(2.0, dtype=t.float64)
                                        * t.ones(2, dtype=t.float16)).dtype),
        "bool * 1.5": lambda t: str((t.tensor([True]) * 1.5).dtype),
        "sum of bools": lambda t: str(t.tensor([True, True]).sum().dtype),
        "floor div, mod": lambda t: ((t.tensor([-7, 7]) // 2).tolist(),
                                     (t.tensor([-7, 7]) % 3).tolist()),
        "to long": lambda t: t.tensor([-3.5, 3.5, 2.9]).long().tolist(),
        "x / 0": lambda t: (t.tensor([1.0, -1.0, 0.0]) / 0).tolist(),
        "clamp nan": lambda t: t.clamp(t.tensor([nan, 1.0]), min=0.5).tolist(),
        "clamp min > max": lambda t: t.clamp(t.tensor([0.0, 1.0, 2.0]), min=1.5, max=0.5).tolist(),
        "maximum nan": lambda t: t.maximum(t.tensor([nan, 1.0]), t.tensor([1.0, nan])).tolist(),
        "argmax ties, zeros, nan, inf": lambda t: [
            t.tensor([0.0, 3.0, 3.0, 1.0]).argmax().item(), t.zeros(4).argmax().item(),
            t.tensor([0.0, nan, nan]).argmax().item(), t.tensor([1.0, inf, inf]).argmax().item(),
            t.tensor([2.0, 1.0, 1.0]).argmin().item(),
            t.tensor([[1.0, 5.0, 5.0], [2.0, 2.0, 0.0]]).max(dim=1).indices.tolist()],
        "sort ties up to 16": lambda t: [t.tensor(row).sort(descending=d).indices.tolist()
                                         for row in ([1.0, 2.0, 1.0, 2.0, 0.0], [1.0, 0.0] * 8)
                                         for d in (False, True)],
        "sort nan": lambda t: t.tensor([1.0, nan, 0.0]).sort(descending=True).indices.tolist(),
        "topk untied": lambda t: t.tensor([0.1, 0.7, 0.2]).topk(2).indices.tolist(),
        "finfo": lambda t: [t.finfo(t.float32).tiny, t.finfo(t.float32).eps,
                            t.finfo(t.float16).max, t.finfo(t.bfloat16).eps],
    }
    def plain(x):                      # numbers compared by value, dtypes by name
        if isinstance(x, (list, tuple)):
            return [plain(v) for v in x]
        if isinstance(x, str):
            return x.replace("torch.", "")
        if isinstance(x, bool):
            return x
        x = float(exact_value(x)) if isinstance(x, FloatValue) else float(x)
        return "nan" if x != x else x

    expect = {name: plain(f(real)) for name, f in cases.items()}
    with installed() as torch:
        for name, f in cases.items():
            assert plain(f(torch)) == expect[name], name
    # torch's topk does not keep index order among ties (the layer refuses those indices)
    assert real.tensor([1.0, 2.0, 1.0, 2.0, 0.0, 1.0, 2.0, 1.0]).topk(2).indices.tolist() != \
        [1, 3]
    # and its sort(stable=False) is not stable on a lane of 17 with ties (the layer refuses)
    gen = real.Generator().manual_seed(0)
    rows = [real.randint(0, 3, (17,), generator=gen).float() for _ in range(50)]
    assert any(not real.equal(r.sort().indices, r.sort(stable=True).indices) for r in rows)


def test_float32_cumsum_accumulator_against_real_torch():
    """Rows where a float32 accumulator would lose every small term: torch's CPU cumsum keeps
    them (it accumulates in float64), as the layer does; float16/bfloat16 in float32."""
    real = pytest.importorskip("torch")
    rows = {"float32": [1.0] + [2.0 ** -24] * 40, "float16": [1.0] + [2.0 ** -11] * 9,
            "bfloat16": [1.0] + [2.0 ** -8] * 9}
    rng = np.random.default_rng(11)
    rows["float32 mixed"] = (rng.standard_normal(30) * 10.0 ** rng.integers(-9, 3, 30)).tolist()
    for name, values in rows.items():
        fmt = name.split()[0]
        want = real.tensor(values, dtype=getattr(real, fmt)).cumsum(0).double().tolist()
        with installed(Run(None, FORMATS[fmt])) as torch:
            got = torch.tensor(values).to(getattr(torch, fmt)).cumsum(0).tolist()
        assert [exact_value(v) for v in got] == [F(v) for v in want], name
    assert real.tensor(rows["float32"]).cumsum(0)[-1].item() == 1 + 40 * 2.0 ** -24


def test_multinomial_of_one_sample_is_an_exponential_race_in_real_torch():
    """The law the layer gives ``torch.multinomial(w, 1)`` (the normalised row) is that of
    torch's CPU kernel: with the same generator state it returns ``argmax(w / E)``, ``E`` an
    exponential vector: an exponential race, whose winner is ``i`` with probability
    ``w_i / sum w``."""
    real = pytest.importorskip("torch")
    for dtype in (real.float64, real.float32):
        w = real.tensor([[0.5, 0.2, 0.0, 0.3], [1.0, 3.0, 2.0, 0.5]], dtype=dtype)
        for seed in range(100):
            drawn = real.multinomial(w, 1, generator=real.Generator().manual_seed(seed))
            noise = real.empty_like(w).exponential_(generator=real.Generator().manual_seed(seed))
            assert drawn.flatten().tolist() == (w / noise).argmax(dim=1).tolist()
    # without replacement: the top n of the same race, whose law is the layer's (each next
    # sample drawn from the weights left, normalised)
    w = real.tensor([0.5, 0.2, 0.0, 0.3, 0.4], dtype=real.float64)
    for seed in range(100):
        drawn = real.multinomial(w, 2, generator=real.Generator().manual_seed(seed))
        noise = real.empty_like(w).exponential_(generator=real.Generator().manual_seed(seed))
        assert drawn.tolist() == (w / noise).topk(2).indices.tolist()


def _chi_square_p_value(counts: dict, law: dict, n: int) -> float:
    import mpmath

    stat = sum((counts.get(k, 0) - n * float(w)) ** 2 / (n * float(w)) for k, w in law.items())
    assert set(counts) <= set(law)                    # nothing outside the law's support
    return float(mpmath.gammainc((len(law) - 1) / 2, stat / 2, regularized=True))


def _noncentral_power(law: dict, alternative: dict, n: int, alpha: float) -> float:
    """The power of the chi-square test at level ``alpha`` against ``alternative``
    (noncentral chi-square, noncentrality ``n * sum (a - l)^2 / l``)."""
    import mpmath

    df = len(law) - 1
    lam = n * sum((float(alternative.get(k, 0)) - float(w)) ** 2 / float(w)
                  for k, w in law.items())
    low, high = 0.0, 1000.0                   # the critical value: upper tail alpha
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if mpmath.gammainc(df / 2, mid / 2, regularized=True) > alpha \
            else (low, mid)
    crit = high
    below = mpmath.nsum(lambda j: mpmath.exp(-lam / 2) * (lam / 2) ** j / mpmath.factorial(j)
                        * mpmath.gammainc(df / 2 + j, 0, crit / 2, regularized=True),
                        [0, mpmath.inf])
    return float(1 - below)


def _real_module(path: Path, real):
    import importlib.util

    assert sys.modules.get("torch") is real
    spec = importlib.util.spec_from_file_location(f"_real_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("file, good, bad, tokens", [
    ("hf_speculative_sampling.py", "sample", "sample_resample_from_p", None),
    ("vllm_rejection_sampler.py", "sample", "sample_target_recovery", None),
    ("flashinfer_chain.py", "chain", "chain_reuse_rejecting_uniform", 2),
    ("sglang_tree.py", "tree", "tree_relaxed_threshold", 2),
    ("hf_speculative_sampling.py", "speculative_sampling", "speculative_sampling_count_all", 3),
    ("vllm_rejection_sampler.py", "rejection_sample", "rejection_sample_all_accepted_as_rejected",
     3),
])
def test_gallery_files_run_unchanged_under_real_torch(file, good, bad, tokens):
    """Each gallery sampler, imported with real torch, called N = 20,000 times on float64 rows
    with a seeded generator: its empirical law passes a chi-square test (level 1e-6) against
    the law exactspec proves, and its bug variant fails it; the power of the test against the
    bug variant's exact law is computed and asserted at least 0.999."""
    real = pytest.importorskip("torch")
    path = ROOT / "examples" / "engines" / file
    module = _real_module(path, real)
    n, alpha = 20_000, 1e-6
    if tokens is None:
        p, q = P, Q
        laws = {}
        for name in (good, bad):
            result = verify(f"{path}:{name}", p, q)
            laws[name] = {str(t): w for t, w in result.law.items() if w}
    else:
        p, q = P2, Q2
        laws = {name: {k: F(v) for k, v in prove_tokens(f"{path}:{name}", tokens)["call_law"]
                       .items() if F(v)} for name in (good, bad)}
    rows_p = real.tensor([[float(x) for x in p.probs]] * (tokens or 1), dtype=real.float64)
    rows_q = real.tensor([[float(x) for x in q.probs]] * ((tokens or 1) - (1 if tokens else 0)),
                         dtype=real.float64)
    if tokens is None:
        rows_p, rows_q = rows_p[0], rows_q[0]
    real.manual_seed(1234)
    samples = {}
    for name in (good, bad):
        counts: dict = {}
        for _ in range(n):
            out = getattr(module, name)(rows_p, rows_q)
            key = str(int(out.reshape(-1)[0])) if tokens is None else \
                ",".join(str(int(t)) for t in out.tolist())
            counts[key] = counts.get(key, 0) + 1
        samples[name] = counts
    assert laws[good] != laws[bad]
    assert _noncentral_power(laws[good], laws[bad], n, alpha) > 0.999
    assert _chi_square_p_value(samples[good], laws[good], n) > alpha
    assert _chi_square_p_value(samples[bad], laws[bad], n) > alpha   # its own law: exact too
    assert _chi_square_p_value(samples[bad], laws[good], n) < alpha  # ... and refuted
