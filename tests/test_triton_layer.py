"""The Triton layer (``exactspec/triton_layer/``): kernels run unchanged over the tensor layer.

Each op on small blocks with exact expected values, Triton's promotion, the orders of float
reductions under ``--arith``, the refusals (one line naming the kernel and the line), and the
one-draft rule written as a kernel (``tests/torch_fixtures/triton_one_draft.py``) verified
exactly and under ``--arith float32``/``float16`` with the same law and TVs as the same
algorithm in plain PyTorch.  No real triton is needed; where it is importable, the fixture's
kernel also runs under ``TRITON_INTERPRET=1``.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from fractions import Fraction as F
from pathlib import Path

import pytest

import exactspec
from exactspec import Dist
from exactspec.core.errors import InvalidInput
from exactspec.engine.floats import FORMATS, FloatValue
from exactspec.rounding import split_bias
from exactspec.torch_layer.context import Run
from exactspec.torch_layer.module import installed

FIXTURE = Path(__file__).parent / "torch_fixtures" / "triton_one_draft.py"
HERE = Path(__file__).name


def exact(values):
    return [F(v.value) if isinstance(v, FloatValue) else v for v in values]


def run(body, fmt=None):
    """``body(torch, triton, tl)`` with the stand-ins installed (``fmt``: an --arith format)."""
    with installed(Run(None, FORMATS[fmt]) if fmt else None) as torch:
        import triton
        import triton.language as tl

        return body(torch, triton, tl)


def refused(body, *words, fmt=None):
    with pytest.raises(InvalidInput) as info:
        run(body, fmt)
    message = str(info.value)
    assert "\n" not in message
    for w in words:
        assert w in message, message
    assert HERE in message, message
    return message


# -- launching ------------------------------------------------------------------------------

def _masked_max_kernel(triton, tl):
    @triton.jit
    def kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask, other=0)
        tl.store(out_ptr + offs, tl.where(x > y, x, y) + 1, mask=mask)

    return kernel


def test_grid_tuple_and_callable_load_store_mask_where():
    def body(torch, triton, tl):
        kernel = _masked_max_kernel(triton, tl)
        x = torch.tensor([1, 5, F(1, 3), 7, 2], dtype=torch.float64)
        y = torch.tensor([4, 2, 6, 1, F(9, 2)], dtype=torch.float64)
        a, b = torch.empty(5, dtype=torch.float64), torch.empty(5, dtype=torch.float64)
        kernel[(triton.cdiv(5, 4),)](x, y, a, 5, BLOCK=4)
        kernel[lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)](x, y, b, 5, BLOCK=2)
        return a.tolist(), b.tolist()

    a, b = run(body)
    assert a == b == [5, 6, 7, 8, F(11, 2)]


def test_program_id_num_programs_2d_grid():
    def body(torch, triton, tl):
        @triton.jit
        def kernel(out_ptr):
            i, j = tl.program_id(0), tl.program_id(1)
            tl.store(out_ptr + j * tl.num_programs(0) + i, 10 * i + j + 100 * tl.num_programs(1))

        out = torch.empty(6, dtype=torch.int64)
        kernel[(3, 2)](out)
        return out.tolist()

    assert run(body) == [200, 210, 220, 201, 211, 221]


def test_python_loop_over_tiles_and_static_range():
    def body(torch, triton, tl):
        @triton.jit
        def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, REPEAT: tl.constexpr):
            acc = tl.zeros((BLOCK,), dtype=tl.float64)
            for start in range(0, n, BLOCK):
                offs = start + tl.arange(0, BLOCK)
                acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
            total = tl.sum(acc, axis=0)
            for _ in tl.static_range(REPEAT):
                total = total * 2
            tl.store(out_ptr, total)

        x = torch.tensor([F(1, k) for k in range(1, 8)], dtype=torch.float64)
        out = torch.empty(1, dtype=torch.float64)
        kernel[(1,)](x, out, 7, BLOCK=2, REPEAT=3)
        return out.item()

    assert run(body) == 8 * sum(F(1, k) for k in range(1, 8))


def test_autotune_first_config_and_heuristics():
    def body(torch, triton, tl):
        seen = []

        @triton.autotune(configs=[triton.Config({"BLOCK": 4}, num_warps=2),
                                  triton.Config({"BLOCK": 8}, num_warps=8)], key=["n"])
        @triton.heuristics({"EVEN": lambda meta: meta["n"] % meta["BLOCK"] == 0})
        @triton.jit
        def kernel(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
            seen.append((BLOCK, EVEN))
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, offs * 2, mask=offs < n)

        x = torch.zeros(6, dtype=torch.int32)
        kernel[lambda meta: (triton.cdiv(6, meta["BLOCK"]),)](x, 6)
        return x.tolist(), seen

    values, seen = run(body)
    assert values == [0, 2, 4, 6, 8, 10]
    assert seen == [(4, False), (4, False)]


def test_cdiv_next_power_of_2_version():
    def body(torch, triton, tl):
        return (triton.cdiv(10, 4), triton.next_power_of_2(5), triton.next_power_of_2(64),
                triton.next_power_of_2(1), triton.__version__)

    assert run(body) == (3, 8, 64, 1, "3.4.0")


def test_import_forms_resolve_to_the_stand_in():
    def body(torch, triton, tl):
        from triton import language as tl2
        from triton.language.extra import libdevice
        import triton.language.extra.cuda.libdevice as cuda_libdevice
        import triton.language.math as tlmath

        return (tl2 is tl, libdevice.exp is tl.exp, cuda_libdevice.log is tl.log,
                tlmath.exp is tl.exp), triton

    found, stand_in = run(body)
    assert found == (True, True, True, True)
    assert sys.modules.get("triton") is not stand_in        # taken away after the block


def test_ragged_batch_early_return_and_loop_over_a_loaded_count():
    # the shape of an engine's per-request kernel: a 2-D grid (request, position), the
    # request's start read from cumulative counts, an early return past its count, a Python
    # loop whose bound is a loaded value, and jit options that change no value
    def body(torch, triton, tl):
        @triton.jit(do_not_specialize=["width"])
        def kernel(out_ptr, cu_ptr, width, FILL: tl.constexpr):
            req, pos = tl.program_id(0), tl.program_id(1)
            start = 0 if req == 0 else tl.load(cu_ptr + req - 1)
            count = tl.load(cu_ptr + req) - start
            if pos >= count:
                return
            total = 0
            for i in range(count):
                total += i + 1
            tl.store(out_ptr + (start + pos) * width + tl.arange(0, 2),
                     tl.full((2,), FILL, tl.int64) + total * 10 + pos)

        cu = torch.tensor([2, 3, 6], dtype=torch.int64)
        out = torch.zeros(12, dtype=torch.int64)
        kernel[(3, 3)](out, cu, 2, FILL=1000)
        return out.tolist()

    # request 0: count 2 (total 3), request 1: count 1 (total 1), request 2: count 3 (total 6)
    assert run(body) == [1030, 1030, 1031, 1031, 1010, 1010, 1060, 1060, 1061, 1061,
                         1062, 1062]


def test_jit_helper_called_from_kernel():
    def body(torch, triton, tl):
        @triton.jit
        def twice(x):
            return x + x

        @triton.jit
        def kernel(out_ptr):
            tl.store(out_ptr + tl.arange(0, 2), twice(tl.arange(0, 2) + 3))

        out = torch.empty(2, dtype=torch.int32)
        kernel[(1,)](out)
        return out.tolist()

    assert run(body) == [6, 8]


# -- values, dtypes and promotion ------------------------------------------------------------

def test_promotion_rules():
    def body(torch, triton, tl):
        seen = {}

        @triton.jit
        def kernel(h_ptr, b_ptr, f_ptr, i_ptr, n, scale, BIG: tl.constexpr):
            h = tl.load(h_ptr + tl.arange(0, 2))
            b = tl.load(b_ptr + tl.arange(0, 2))
            f = tl.load(f_ptr + tl.arange(0, 2))
            i = tl.load(i_ptr + tl.arange(0, 2))
            seen.update({
                "i+1.5": (i + 1.5).dtype, "h*2.0": (h * 2.0).dtype, "h+f": (h + f).dtype,
                "h+b": (h + b).dtype, "i/i": (i / i).dtype, "i+n": (i + n).dtype,
                "h*n": (h * n).dtype, "h*scale": (h * scale).dtype, "i<2": (i < 2).dtype,
                "(i<2)+BIG": ((i < 2) + BIG).dtype, "where": tl.where(i > 0, h, 1).dtype,
                "arange": tl.arange(0, 4).dtype, "pid": tl.program_id(0).dtype,
                "sum(h)": tl.sum(h, axis=0).dtype, "sum(i<2)": tl.sum(i < 2, axis=0).dtype,
                "cumsum(h)": tl.cumsum(h, axis=0).dtype, "cumsum(b)": tl.cumsum(b, axis=0).dtype,
            })

        kernel[(1,)](torch.zeros(2, dtype=torch.float16), torch.zeros(2, dtype=torch.bfloat16),
                     torch.zeros(2, dtype=torch.float32), torch.ones(2, dtype=torch.int32),
                     3, 0.5, BIG=2 ** 40)
        return {k: v.name for k, v in seen.items()}

    assert run(body) == {
        "i+1.5": "fp32", "h*2.0": "fp16", "h+f": "fp32", "h+b": "fp32", "i/i": "fp32",
        "i+n": "int32", "h*n": "fp16", "h*scale": "fp32", "i<2": "int1", "(i<2)+BIG": "int64",
        "where": "fp16", "arange": "int32", "pid": "int32", "sum(h)": "fp32",
        "sum(i<2)": "int32", "cumsum(h)": "fp16", "cumsum(b)": "fp32"}


def test_casts_integer_division_zeros_full():
    def body(torch, triton, tl):
        @triton.jit
        def kernel(x_ptr, i_ptr, b_ptr, z_ptr):
            offs = tl.arange(0, 4)
            x = tl.load(x_ptr + offs)
            tl.store(i_ptr + offs, x.to(tl.int32))
            tl.store(b_ptr + offs, x.to(tl.int1))
            k = x.to(tl.int32)
            tl.store(z_ptr + offs, k // 2 + 10 * (k % 2)
                     + 100 * tl.full((4,), 3, tl.int32) + tl.zeros((4,), tl.int32))

        x = torch.tensor([F(-7, 2), F(7, 2), 0, F(-1, 3)], dtype=torch.float64)
        i = torch.empty(4, dtype=torch.int32)
        b = torch.empty(4, dtype=torch.bool)
        z = torch.empty(4, dtype=torch.int64)
        kernel[(1,)](x, i, b, z)
        return i.tolist(), b.tolist(), z.tolist()

    i, b, z = run(body)
    assert i == [-3, 3, 0, 0]                       # truncation toward zero
    assert b == [True, True, False, True]
    # -3 // 2 = -1 and -3 % 2 = -1 (C's), 3 // 2 = 1 and 3 % 2 = 1
    assert z == [-1 - 10 + 300, 1 + 10 + 300, 300, 300]


def test_minimum_maximum_abs_and_new_axes():
    def body(torch, triton, tl):
        @triton.jit
        def kernel(x_ptr, y_ptr, lo_ptr, hi_ptr, outer_ptr):
            offs = tl.arange(0, 2)
            x = tl.load(x_ptr + offs)
            y = tl.load(y_ptr + offs)
            tl.store(lo_ptr + offs, tl.minimum(x, y))
            tl.store(hi_ptr + offs, tl.maximum(x, 0.0))
            tl.store(lo_ptr + 2 + offs, tl.clamp(x, -0.5, 0.25))
            grid = x[:, None] * 10 + y[None, :]
            tl.store(outer_ptr + offs[:, None] * 2 + offs[None, :], grid)

        x = torch.tensor([F(1, 2), F(-3, 4)], dtype=torch.float64)
        y = torch.tensor([F(1, 3), 2], dtype=torch.float64)
        lo, hi = torch.empty(4, dtype=torch.float64), torch.empty(2, dtype=torch.float64)
        outer = torch.empty(4, dtype=torch.float64)
        kernel[(1,)](x, y, lo, hi, outer)
        return lo.tolist(), hi.tolist(), outer.tolist()

    lo, hi, outer = run(body)
    assert lo == [F(1, 3), F(-3, 4), F(1, 4), F(-1, 2)]
    assert hi == [F(1, 2), 0]
    assert outer == [5 + F(1, 3), 7, F(-15, 2) + F(1, 3), F(-11, 2)]


# -- reductions and scans ---------------------------------------------------------------------

def test_reductions_ties_smallest_index():
    def body(torch, triton, tl):
        @triton.jit
        def kernel(x_ptr, o_ptr, BLOCK: tl.constexpr):
            x = tl.load(x_ptr + tl.arange(0, BLOCK))
            tl.store(o_ptr + 0, tl.sum(x, axis=0))
            tl.store(o_ptr + 1, tl.max(x, axis=0))
            tl.store(o_ptr + 2, tl.min(x))
            tl.store(o_ptr + 3, tl.argmax(x, axis=0))
            tl.store(o_ptr + 4, tl.argmin(x, axis=0))
            value, index = tl.max(x, axis=0, return_indices=True)
            tl.store(o_ptr + 5, index)
            value, index = tl.min(x, axis=0, return_indices=True)
            tl.store(o_ptr + 6, value)
            tl.store(o_ptr + 7, index)

        x = torch.tensor([F(1, 3), 2, F(-1, 2), 2, F(-1, 2), 0, 2, 1], dtype=torch.float64)
        o = torch.empty(8, dtype=torch.float64)
        kernel[(1,)](x, o, BLOCK=8)
        return o.tolist()

    assert run(body) == [F(1, 3) + 6 - 1 + 1, 2, F(-1, 2), 1, 2, 1, F(-1, 2), 2]


def test_cumsum_and_two_dimensional_reductions():
    def body(torch, triton, tl):
        @triton.jit
        def kernel(x_ptr, c_ptr, r_ptr, s_ptr, a_ptr):
            rows, cols = tl.arange(0, 2), tl.arange(0, 4)
            x = tl.load(x_ptr + rows[:, None] * 4 + cols[None, :])
            tl.store(c_ptr + rows[:, None] * 4 + cols[None, :], tl.cumsum(x, axis=1))
            tl.store(r_ptr + rows[:, None] * 4 + cols[None, :],
                     tl.cumsum(x, axis=1, reverse=True))
            tl.store(s_ptr + cols, tl.sum(x, axis=0))
            tl.store(a_ptr + rows, tl.argmax(x, axis=1))

        x = torch.tensor([[1, 2, 3, 3], [F(1, 2), -1, 4, 0]], dtype=torch.float64)
        c, r = torch.empty(8, dtype=torch.float64), torch.empty(8, dtype=torch.float64)
        s, a = torch.empty(4, dtype=torch.float64), torch.empty(2, dtype=torch.int32)
        kernel[(1,)](x, c, r, s, a)
        return c.tolist(), r.tolist(), s.tolist(), a.tolist()

    c, r, s, a = run(body)
    assert c == [1, 3, 6, 9, F(1, 2), F(-1, 2), F(7, 2), F(7, 2)]
    assert r == [9, 8, 6, 3, F(7, 2), 3, 4, 0]
    assert s == [F(3, 2), 1, 7, 3]
    assert a == [2, 2]


def _summed(order, values, cumulative=False):
    def body(torch, triton, tl):
        @triton.jit
        def kernel(x_ptr, o_ptr, N: tl.constexpr):
            x = tl.load(x_ptr + tl.arange(0, N))
            if cumulative:
                tl.store(o_ptr + tl.arange(0, N), tl.cumsum(x, axis=0))
            else:
                tl.store(o_ptr, tl.sum(x, axis=0))

        x = torch.tensor(values, dtype=torch.float32)
        o = torch.empty(len(values) if cumulative else 1, dtype=torch.float32)
        kernel[(1,)](x, o, N=len(values))
        return exact(o._values()) if cumulative else exact(o._values())[0]

    def ordered(torch, triton, tl):
        from exactspec.torch_layer.context import current

        current().sum_order = order
        return body(torch, triton, tl)

    return ordered


def test_float_sums_under_arith_need_a_declared_order():
    # 1 + 2**-24 is a tie that rounds to 1: left to right the sum is 2**-24, exactly 2**-23
    row = [1.0, 2.0 ** -24, -1.0, 2.0 ** -24]
    assert run(_summed("sequential", row), "float32") == F(1, 2 ** 24)
    assert run(_summed("correctly-rounded", row), "float32") == F(1, 2 ** 23)
    assert run(_summed(None, row)) == F(1, 2 ** 23)                    # the exact run
    assert run(_summed("sequential", row, True), "float32") == [1, 1, 0, F(1, 2 ** 24)]
    assert run(_summed("correctly-rounded", row, True), "float32") == \
        [1, 1, F(1, 2 ** 24), F(1, 2 ** 23)]
    for cumulative in (False, True):
        refused(_summed(None, row, cumulative), "4 fp32 lanes under --arith",
                "--sum-order sequential or correctly-rounded", fmt="float32")
    # two nonzero terms: the same in every order, no order needed
    assert run(_summed(None, [1.0, 0.0, 2.0 ** -24, 0.0]), "float32") == 1
    assert run(_summed(None, [1.0, 0.0, 2.0 ** -23, 0.0], True), "float32") == \
        [1, 1, 1 + F(1, 2 ** 23), 1 + F(1, 2 ** 23)]


def test_float16_arithmetic_rounds_as_the_tensor_layer():
    def body(torch, triton, tl):
        @triton.jit
        def kernel(x_ptr, y_ptr, o_ptr):
            offs = tl.arange(0, 4)
            x = tl.load(x_ptr + offs)
            y = tl.load(y_ptr + offs)
            quotient = tl.div_rn((x * 3.0).to(tl.float32), y.to(tl.float32))
            tl.store(o_ptr + offs, quotient.to(tl.float16) - x)

        x = torch.tensor([0.1, 0.3, 1 / 3, 2.5], dtype=torch.float16)
        y = torch.tensor([0.7, 3.0, 1 / 7, 0.2], dtype=torch.float16)
        o = torch.empty(4, dtype=torch.float16)
        kernel[(1,)](x, y, o)
        three = torch.tensor([3.0], dtype=torch.float16)
        return exact(o._values()), exact((((x * three) / y) - x)._values())

    got, by_torch_layer = run(body, "float16")
    assert got == by_torch_layer
    assert all(v * 2 ** 24 == int(v * 2 ** 24) for v in got)      # float16 values


def test_approximate_division_refused_under_arith():
    # Triton's / of float32 values is PTX div.full.f32 (within 2 ulp): refused under --arith,
    # except where every division is exact (0 / y, x / inf); float64 is div.rn.f64
    def body(dtype):
        def inner(torch, triton, tl):
            @triton.jit
            def k(x_ptr, y_ptr, o_ptr):
                offs = tl.arange(0, 2)
                tl.store(o_ptr + offs, tl.load(x_ptr + offs) / tl.load(y_ptr + offs))

            d = getattr(torch, dtype)
            x, y = torch.tensor([1.0, 2.0], dtype=d), torch.tensor([3.0, 7.0], dtype=d)
            o = torch.empty(2, dtype=d)
            k[(1,)](x, y, o)
            zeros = torch.empty(2, dtype=d)
            k[(1,)](torch.zeros(2, dtype=d), y, zeros)
            return exact(o._values()), exact(zeros._values())

        return inner

    for fmt, dtype in (("float32", "float32"), ("float16", "float16")):
        refused(body(dtype), f"fp{dtype[-2:]} division under --arith", "div.full.f32",
                "tl.div_rn", fmt=fmt)
    assert run(body("float64"), "float32") == ([F(1 / 3), F(2 / 7)], [0, 0])
    assert run(body("float32")) == ([F(1, 3), F(2, 7)], [0, 0])        # the exact run


def test_div_rn_takes_float32():
    def body(torch, triton, tl):
        @triton.jit
        def k(x_ptr):
            tl.div_rn(tl.load(x_ptr), 3.0)

        k[(1,)](torch.ones(1, dtype=torch.float16))

    refused(body, "tl.div_rn of a fp16 block", "float32")


def test_fused_multiply_add_refused_under_arith_unless_fusion_off():
    def make(triton, tl):
        @triton.jit
        def kernel(x_ptr, o_ptr):
            offs = tl.arange(0, 2)
            x = tl.load(x_ptr + offs)
            tl.store(o_ptr + offs, x * x + 1.0)

        return kernel

    def body(fusion):
        def inner(torch, triton, tl):
            x = torch.tensor([1 / 3, 0.1], dtype=torch.float32)
            o = torch.empty(2, dtype=torch.float32)
            if fusion:
                make(triton, tl)[(1,)](x, o)
            else:
                make(triton, tl)[(1,)](x, o, enable_fp_fusion=False)
            return exact(o._values()), exact((x * x + 1.0)._values())

        return inner

    refused(body(True), "fused multiply-add", "enable_fp_fusion=False", "kernel kernel",
            fmt="float32")
    got, expected = run(body(False), "float32")
    assert got == expected
    got, expected = run(body(True))                        # exact run: nothing rounds
    assert got == [F(1 / 3) ** 2 + 1, F(0.1) ** 2 + 1]
    # as Triton's interpreter runs it (--elementwise numpy): no compiler, two roundings
    from exactspec.engine.float_sampler import FloatSampler

    with installed(Run(FloatSampler("float32", elementwise="numpy"), FORMATS["float32"])) \
            as torch:
        import triton
        import triton.language as tl

        got, expected = body(True)(torch, triton, tl)
    assert got == expected


# -- refusals -----------------------------------------------------------------------------------

def test_out_of_bounds_without_mask_refused():
    def load(torch, triton, tl):
        @triton.jit
        def reader(x_ptr, o_ptr):
            tl.store(o_ptr + tl.arange(0, 4), tl.load(x_ptr + tl.arange(0, 4)))

        reader[(1,)](torch.zeros(3), torch.zeros(4))

    def store(torch, triton, tl):
        @triton.jit
        def writer(o_ptr):
            tl.store(o_ptr + tl.arange(0, 4), 1.0)

        writer[(1,)](torch.zeros(3))

    refused(load, "tl.load out of bounds", "element 3 of argument x_ptr", "kernel reader")
    refused(store, "tl.store out of bounds", "element 3 of argument o_ptr", "kernel writer")


def test_unwritten_memory_refused():
    def body(torch, triton, tl):
        @triton.jit
        def reader(x_ptr, o_ptr):
            tl.store(o_ptr, tl.load(x_ptr + 1))

        reader[(1,)](torch.empty(2), torch.zeros(1))

    refused(body, "nothing wrote", "kernel reader")


def test_races_between_programs_refused():
    def store_race(torch, triton, tl):
        @triton.jit
        def everyone_writes_zero(o_ptr):
            tl.store(o_ptr, tl.program_id(0))

        everyone_writes_zero[(2,)](torch.zeros(1, dtype=torch.int32))

    def read_write(torch, triton, tl):
        @triton.jit
        def shift(x_ptr):
            pid = tl.program_id(0)
            tl.store(x_ptr + pid + 1, tl.load(x_ptr + pid) + 1)

        shift[(2,)](torch.zeros(3))

    def lanes(torch, triton, tl):
        @triton.jit
        def two_lanes(o_ptr):
            tl.store(o_ptr + tl.arange(0, 2) // 2, tl.arange(0, 2))

        two_lanes[(1,)](torch.zeros(1, dtype=torch.int32))

    refused(store_race, "program 0 of this launch stores too", "store race",
            "kernel everyone_writes_zero")
    refused(read_write, "kernel shift", "race")
    refused(lanes, "two lanes of one tl.store", "kernel two_lanes")


def test_one_program_rewriting_its_own_memory_is_fine():
    def body(torch, triton, tl):
        @triton.jit
        def twice(x_ptr):
            offs = tl.program_id(0) * 2 + tl.arange(0, 2)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 3)

        x = torch.tensor([1, 2, 3, 4], dtype=torch.int64)
        twice[(2,)](x)
        return x.tolist()

    assert run(body) == [6, 9, 12, 15]


def test_undefined_lanes_and_other_refusals():
    def undefined_sum(torch, triton, tl):
        @triton.jit
        def k(x_ptr, o_ptr):
            offs = tl.arange(0, 4)
            tl.store(o_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < 3), axis=0))

        k[(1,)](torch.zeros(4), torch.zeros(1))

    def undefined_store(torch, triton, tl):
        @triton.jit
        def k(x_ptr, o_ptr):
            offs = tl.arange(0, 4)
            tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=offs < 3) * 2)

        k[(1,)](torch.zeros(4), torch.zeros(4))

    def overflow(torch, triton, tl):
        @triton.jit
        def k(o_ptr, stride):
            tl.store(o_ptr, (tl.program_id(0) + 1) * stride * stride)

        k[(1,)](torch.zeros(1, dtype=torch.int64), 2 ** 16)

    def nan_max(torch, triton, tl):
        @triton.jit
        def k(x_ptr, o_ptr):
            x = tl.load(x_ptr + tl.arange(0, 2))
            tl.store(o_ptr, tl.max(x / x, axis=0))

        k[(1,)](torch.tensor([0.0, 1.0], dtype=torch.float64), torch.zeros(1))

    def randn(torch, triton, tl):
        @triton.jit
        def k(o_ptr):
            tl.store(o_ptr, tl.randn(0, 0))

        k[(1,)](torch.zeros(1))

    def unknown(torch, triton, tl):
        @triton.jit
        def k(o_ptr):
            tl.atomic_add(o_ptr, 1.0)

        k[(1,)](torch.zeros(1))

    def ties_right(torch, triton, tl):
        @triton.jit
        def k(o_ptr):
            tl.store(o_ptr, tl.argmax(tl.zeros((2,), tl.float32), axis=0, tie_break_left=False))

        k[(1,)](torch.zeros(1, dtype=torch.int32))

    def not_power_of_two(torch, triton, tl):
        @triton.jit
        def k(o_ptr):
            tl.store(o_ptr + tl.arange(0, 3), 1.0)

        k[(1,)](torch.zeros(3))

    def huge(torch, triton, tl):
        @triton.jit
        def k(o_ptr):
            tl.store(o_ptr, tl.sum(tl.arange(0, 2 ** 30), axis=0))

        k[(1,)](torch.zeros(1, dtype=torch.int64))

    def called_directly(torch, triton, tl):
        @triton.jit
        def k(o_ptr):
            pass

        k(torch.zeros(1))

    def cast_overflow(torch, triton, tl):
        @triton.jit
        def k(x_ptr, o_ptr):
            tl.store(o_ptr, tl.load(x_ptr).to(tl.int32))

        k[(1,)](torch.tensor([2.0 ** 31], dtype=torch.float64), torch.zeros(1, dtype=torch.int32))

    def shapes(torch, triton, tl):                 # the tensor layer's refusal, relocated
        @triton.jit
        def k(x_ptr, o_ptr):
            tl.store(o_ptr + tl.arange(0, 2), tl.load(x_ptr + tl.arange(0, 4)))

        k[(1,)](torch.zeros(4), torch.zeros(4))

    refused(cast_overflow, "converted to int32", "undefined on the GPU", "kernel k")
    message = refused(shapes, "expand", "kernel k, test_triton_layer.py:")
    assert "language.py" not in message and "launch.py" not in message
    refused(undefined_sum, "tl.sum", "left undefined", "kernel k")
    refused(undefined_store, "tl.store of a lane", "left undefined")
    refused(overflow, "int32 overflow", "tl.int64")
    refused(nan_max, "NaN", "tl.max")
    refused(randn, "tl.randn", "Gaussian")
    refused(unknown, "triton.language.atomic_add is outside exactspec's Triton layer")
    refused(ties_right, "tie_break_left=False")
    refused(not_power_of_two, "not a power of 2")
    refused(called_directly, "called outside a kernel", "k[grid](...)")
    refused(huge, "1,073,741,824 elements", "TRITON_MAX_TENSOR_NUMEL")


def test_exp_log_exact_only():
    def body(torch, triton, tl):
        @triton.jit
        def k(x_ptr, o_ptr):
            tl.store(o_ptr, tl.log(tl.exp(tl.load(x_ptr))))

        x = torch.tensor([F(1, 2)], dtype=torch.float32)
        o = torch.empty(1, dtype=torch.float32)
        k[(1,)](x, o)
        return o.tolist()

    assert run(body) == [F(1, 2)]
    refused(body, "tl.exp under --arith", "approximate", fmt="float32")


def test_cuda_device_refused_as_the_tensor_layer_does():
    def body(torch, triton, tl):
        torch.empty(2, device="cuda")

    with pytest.raises(InvalidInput, match="device 'cuda'"):
        run(body)


# -- the one-draft rule as a kernel ------------------------------------------------------------

P, Q = Dist.parse("1/2,1/3,1/6"), Dist.parse("1/3,1/3,1/3")
P4, Q4 = Dist.parse("3/7,2/7,1/7,1/7"), Dist.parse("1/5,2/5,1/10,3/10")


def _spec(name):
    return f"{FIXTURE}:{name}"


@pytest.mark.parametrize("p,q", [(P, Q), (P4, Q4)])
def test_one_draft_kernel_lossless_and_equal_to_plain_pytorch(p, q):
    for name in ("sample", "sample_philox", "sample_branching", "sample_masked_noise"):
        r = exactspec.verify(_spec(name), p, q)
        twin = exactspec.verify(_spec("sample_torch"), p, q)
        assert r.lossless and r.law == twin.law == dict(zip(range(len(p.probs)), p.probs))


def test_one_draft_kernel_takes_the_draft_as_a_tensor_axis():
    # the kernel's loads at the draft's offset hold a value per draft branch: one run of the
    # body (the plain-PyTorch twin indexes p[x] with a 0-d tensor and runs per token)
    assert exactspec.verify(_spec("sample"), P4, Q4).paths == 1
    w, v = [3, 1, 4, 1, 5, 9, 2, 6] * 4, [2, 7, 1, 8, 2, 8, 1, 8] * 4
    p = Dist.parse(",".join(f"{x}/{sum(w)}" for x in w))
    q = Dist.parse(",".join(f"{x}/{sum(v)}" for x in v))
    r = exactspec.verify(_spec("sample"), p, q)
    assert r.lossless and r.paths == 1 and r.law == dict(enumerate(p.probs))


def test_one_draft_kernel_bug_refuted_exactly():
    r = exactspec.verify(_spec("sample_target_recovery"), P, Q)
    assert r.law == {0: F(5, 12), 1: F(7, 18), 2: F(7, 36)}
    assert r.bias == F(1, 12)


@pytest.mark.parametrize("arith", ["float32", "float16"])
def test_one_draft_kernel_under_arith_equals_plain_pytorch(arith):
    kernel = split_bias(_spec("sample"), P4, Q4, arith=arith)
    twin = split_bias(_spec("sample_torch"), P4, Q4, arith=arith)
    for other in ("sample_branching", "sample_masked_noise"):
        variant = split_bias(_spec(other), P4, Q4, arith=arith)
        assert (variant.bias, variant.bias_exact_arith, variant.bias_grid_only) == \
            (twin.bias, twin.bias_exact_arith, twin.bias_grid_only)
        assert variant.rounded.law == twin.rounded.law
    assert kernel.verdict == twin.verdict == "lossy-rounding"
    assert (kernel.bias, kernel.bias_exact_arith, kernel.bias_grid_only) == \
        (twin.bias, twin.bias_exact_arith, twin.bias_grid_only)
    assert kernel.rounded.law == twin.rounded.law
    assert kernel.bias_exact_arith == 0
    assert kernel.bias == {"float32": F(17872871, 1018671367454720),
                           "float16": F(1, 28672)}[arith]


def test_plain_division_kernel_exact_and_refused_under_arith():
    r = exactspec.verify(_spec("sample_plain_division"), P4, Q4)
    assert r.lossless and r.law == exactspec.verify(_spec("sample_torch"), P4, Q4).law
    with pytest.raises(InvalidInput) as info:
        exactspec.verify(_spec("sample_plain_division"), P4, Q4, arith="float32")
    assert "div.full.f32" in str(info.value)
    assert "kernel one_draft_plain_division_kernel, triton_one_draft.py:" in str(info.value)


@pytest.mark.parametrize("arith", ["float32", "float16"])
def test_plain_division_as_the_interpreter_computes_it_equals_plain_pytorch(arith):
    # --elementwise numpy declares NumPy's arithmetic (Triton's interpreter): / is the
    # correctly rounded quotient, as torch's, so the kernel's law is the PyTorch twin's
    kernel = split_bias(_spec("sample_plain_division"), P4, Q4, arith=arith,
                        elementwise="numpy")
    twin = split_bias(_spec("sample_torch"), P4, Q4, arith=arith, elementwise="numpy")
    assert kernel.verdict == twin.verdict == "lossy-rounding"
    assert kernel.rounded.law == twin.rounded.law
    assert (kernel.bias, kernel.bias_exact_arith, kernel.bias_grid_only) == \
        (twin.bias, twin.bias_exact_arith, twin.bias_grid_only)


def test_interpreter_arithmetic_rounds_division_and_takes_numpys_exp():
    import numpy as np

    from exactspec.engine.float_sampler import FloatSampler

    def body(torch, triton, tl):
        @triton.jit
        def k(x_ptr, y_ptr, o_ptr, e_ptr):
            offs = tl.arange(0, 2)
            x = tl.load(x_ptr + offs)
            tl.store(o_ptr + offs, x / tl.load(y_ptr + offs))
            tl.store(e_ptr + offs, tl.exp(x))

        x = torch.tensor([1.0, 2.0], dtype=torch.float32)
        y = torch.tensor([3.0, 7.0], dtype=torch.float32)
        o, e = torch.empty(2, dtype=torch.float32), torch.empty(2, dtype=torch.float32)
        k[(1,)](x, y, o, e)
        return exact(o._values()), exact(e._values())

    with installed(Run(FloatSampler("float32", elementwise="numpy"), FORMATS["float32"])) \
            as torch:
        import triton
        import triton.language as tl

        quotients, exps = body(torch, triton, tl)
    assert quotients == [F(float(np.float32(1) / np.float32(3))),
                         F(float(np.float32(2) / np.float32(7)))]
    assert exps == [F(float(np.exp(np.float32(1)))), F(float(np.exp(np.float32(2))))]
    refused(lambda torch, triton, tl: body(torch, triton, tl), "division under --arith",
            "--elementwise numpy", fmt="float32")


def test_philox_uniforms_refused_under_arith():
    # Triton's float32 uniforms (k * 2**-31 rounded) are not the engine's generator grid
    with pytest.raises(InvalidInput) as info:
        split_bias(_spec("sample_philox"), P4, Q4, arith="float32")
    assert "tl.rand under --arith" in str(info.value)
    assert "kernel one_draft_philox_kernel, triton_one_draft.py:" in str(info.value)


def test_philox_same_seed_and_offset_is_the_same_uniform(tmp_path):
    rule = tmp_path / "philox_rule.py"
    rule.write_text(
        "import torch\nimport triton\nimport triton.language as tl\n\n"
        "@triton.jit\n"
        "def k(o_ptr, seed, OTHER: tl.constexpr):\n"
        "    a = tl.rand(seed, 0) < 0.5\n"
        "    b = tl.rand(seed, OTHER) < 0.5\n"
        "    tl.store(o_ptr, a.to(tl.int32) + 2 * b.to(tl.int32))\n\n"
        "def same(p, q):\n"
        "    o = torch.empty(1, dtype=torch.int32)\n"
        "    k[(1,)](o, 7, OTHER=0)\n"
        "    return o[0]\n\n"
        "def other(p, q):\n"
        "    o = torch.empty(1, dtype=torch.int32)\n"
        "    k[(1,)](o, 7, OTHER=1)\n"
        "    return o[0]\n")
    p = Dist.parse("1/4,1/4,1/4,1/4")
    assert exactspec.verify(f"{rule}:same", p, p).law == \
        {0: F(1, 2), 1: F(0), 2: F(0), 3: F(1, 2)}
    assert exactspec.verify(f"{rule}:other", p, p).lossless


def test_refusal_through_verify_names_the_kernel_line(tmp_path):
    rule = tmp_path / "oob_rule.py"
    rule.write_text(
        "import torch\nimport triton\nimport triton.language as tl\n\n"
        "@triton.jit\n"
        "def copy(x_ptr, o_ptr, BLOCK: tl.constexpr):\n"
        "    offs = tl.arange(0, BLOCK)\n"
        "    tl.store(o_ptr + offs, tl.load(x_ptr + offs))\n\n"
        "def sample(p, q):\n"
        "    o = torch.empty(4, dtype=p.dtype)\n"
        "    copy[(1,)](p, o, BLOCK=4)\n"
        "    return torch.multinomial(o[:3], 1)[0]\n")
    with pytest.raises(InvalidInput) as info:
        exactspec.verify(f"{rule}:sample", P, Q)
    assert "tl.load out of bounds" in str(info.value)
    assert "kernel copy, oob_rule.py:8" in str(info.value)


@pytest.mark.parametrize("compared, words", [
    ("local_max > max_val * 2", "other than the maxima of races over disjoint parts"),
    ("tl.sum(tl.where(offs == v, score, 0.0)) > max_val", "used outside an argmax"),
])
def test_race_scores_compared_other_than_as_tile_maxima_are_undecided(tmp_path, compared,
                                                                      words):
    # a tile's maximum compares with another tile's (a race of their totals); a maximum
    # scaled, or a lane read on its own, is not a race's maximum
    rule = tmp_path / "tile_rule.py"
    rule.write_text(
        "import torch\nimport triton\nimport triton.language as tl\n\n"
        "@triton.jit\n"
        "def tiles(w_ptr, e_ptr, o_ptr, n, BLOCK: tl.constexpr):\n"
        "    max_val = tl.full((), float('-inf'), tl.float32)\n"
        "    best = 0\n"
        "    for v in range(0, n, BLOCK):\n"
        "        offs = v + tl.arange(0, BLOCK)\n"
        "        score = tl.load(w_ptr + offs) * tl.load(e_ptr + offs)\n"
        "        local_max, local_id = tl.max(score, axis=0, return_indices=True)\n"
        f"        if {compared}:\n"
        "            max_val = local_max\n"
        "            best = v + local_id\n"
        "    tl.store(o_ptr, best)\n\n"
        "def sample(p, q):\n"
        "    e = torch.empty_like(p).exponential_().reciprocal()\n"
        "    o = torch.empty(1, dtype=torch.int64)\n"
        "    tiles[(1,)](p, e, o, p.shape[0], BLOCK=2)\n"
        "    return o[0]\n")
    p4 = Dist.parse("1/2,1/4,1/8,1/8")
    with pytest.raises(exactspec.Undecided) as info:
        exactspec.verify(f"{rule}:sample", p4, p4)
    assert words in str(info.value) and "kernel tiles, tile_rule.py:" in str(info.value)


# -- real triton, where installed --------------------------------------------------------------

def test_fixture_kernel_under_triton_interpreter():
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    script = (
        "import collections, importlib.util, torch\n"
        f"spec = importlib.util.spec_from_file_location('fixture', {str(FIXTURE)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "torch.manual_seed(0)\n"
        "p = torch.tensor([3/7, 2/7, 1/7, 1/7], dtype=torch.float64)\n"
        "q = torch.tensor([1/5, 2/5, 1/10, 3/10], dtype=torch.float64)\n"
        "n = 4000\n"
        "c = collections.Counter(int(m.sample(p, q)) for _ in range(n))\n"
        "stat = sum((c[i] - n * float(p[i])) ** 2 / (n * float(p[i])) for i in range(4))\n"
        "print(stat)\n")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    # chi-square with 3 degrees of freedom: above 27.9 with probability about 4e-6
    assert float(out.stdout.strip()) < 27.9
