"""Blocks made in a kernel: program ids, ranges, filled blocks, loops, random numbers.

A block's dimensions are powers of 2, at most :data:`MAX_BLOCK` elements in all, as Triton's.

``tl.rand(seed, offsets)``: Philox streams modelled as independent fresh uniform draws through
the engine's sampler (ideal uniforms, or the ``--grid``), one per distinct ``(seed, offset)``
of the run (the same pair gives the same uniform, as Philox does); refused under ``--arith``,
where Triton's float32 values (31 random bits times ``2**-31``, rounded to ``float32``: a grid
finer near 0) are not the engine's generator grid; ``tl.randn`` (Gaussian noise) is refused,
as ``torch.randn`` is.

>>> arange(0, 4).t.tolist(), zeros((2,), int32).shape
([0, 1, 2, 3], [2])
"""

from __future__ import annotations

import math

from ..core.signals import CannotProceed
from ..torch_layer import dtypes as D
from ..torch_layer import random as _rnd
from ..torch_layer.context import current
from ..torch_layer.tensor import Tensor
from .operators import cast
from .blocks import block, check_range, element, float32, int32, modelled, scalar_block, tensor
from .errors import refuse
from .state import launch

__all__ = ["MAX_BLOCK", "arange", "full", "full_like", "num_programs", "program_id", "rand",
           "randn", "range_", "static_range", "zeros", "zeros_like"]

_range = range


#: Triton's largest block (``TRITON_MAX_TENSOR_NUMEL``, ``2**20`` elements)
MAX_BLOCK = 2 ** 20


def _power_of_two(n: int, what: str) -> int:
    if n <= 0 or n & (n - 1):
        raise refuse(f"{what}: {n} is not a power of 2 (Triton's blocks are)")
    if n > MAX_BLOCK:
        raise refuse(f"{what}: a block of {n:,} elements, over Triton's largest "
                     f"({MAX_BLOCK:,}, TRITON_MAX_TENSOR_NUMEL)")
    return n


def _shape_arg(shape) -> tuple:
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    for s in shape:
        _power_of_two(s, "a block dimension")
    _power_of_two(math.prod(shape), f"a block of shape {list(shape)}")
    return shape


def program_id(axis) -> tensor:
    """``tl.program_id(axis)``: this program's index along ``axis`` (an ``int32`` scalar)."""
    axis = int(axis)
    if axis not in (0, 1, 2):
        raise refuse(f"tl.program_id({axis}): the axis is 0, 1 or 2")
    return scalar_block(launch().pid[axis], int32)


def num_programs(axis) -> tensor:
    """``tl.num_programs(axis)``: the grid's size along ``axis`` (an ``int32`` scalar)."""
    axis = int(axis)
    if axis not in (0, 1, 2):
        raise refuse(f"tl.num_programs({axis}): the axis is 0, 1 or 2")
    return scalar_block(launch().grid[axis], int32)


def arange(start, end) -> tensor:
    """``tl.arange(start, end)``: ``start, ..., end - 1`` as ``int32`` (a power of 2 of them)."""
    start, end = int(start), int(end)
    _power_of_two(end - start, f"tl.arange({start}, {end})")
    values = list(_range(start, end))
    check_range(values, int32)
    return block(Tensor.new(values, (len(values),), D.int32), int32)


def full(shape, value, dtype) -> tensor:
    """``tl.full(shape, value, dtype)``."""
    shape = _shape_arg(shape)
    modelled(dtype)
    if isinstance(value, tensor):
        value._defined("tl.full's value")
        v = cast(value, dtype).t._values()[0]
    else:
        v = element(value, dtype)
    return block(Tensor.new([v] * math.prod(shape), shape, dtype.torch), dtype)


def zeros(shape, dtype) -> tensor:
    """``tl.zeros(shape, dtype)``."""
    return full(shape, 0, dtype)


def zeros_like(x: tensor) -> tensor:
    """``tl.zeros_like(x)``."""
    return full(x.shape, 0, x.dtype)


def full_like(x: tensor, value) -> tensor:
    """``tl.full_like(x, value)``."""
    return full(x.shape, value, x.dtype)


def static_range(*args):
    """``tl.static_range``: Python's ``range`` (the loop is unrolled; the values are the same)."""
    return _range(*(int(a) for a in args))


def range_(*args, num_stages=None, loop_unroll_factor=None, **kwargs):
    """``tl.range``: Python's ``range`` (pipelining options change no value)."""
    return _range(*(int(a) for a in args))


def _philox_key(seed) -> int:
    if isinstance(seed, tensor):
        seed._defined("tl.rand's seed")
        values = seed.t._values()
        if len(values) != 1 or type(values[0]) is not int:
            raise CannotProceed("a tl.rand seed that is not one plain integer")
        return values[0]
    return int(seed)


def rand(seed, offset, n_rounds=10) -> tensor:
    """``tl.rand(seed, offset)``: a ``float32`` uniform on ``[0, 1)`` per offset, the engine's
    uniform (see the module's text)."""
    if not current().exact:
        raise refuse("tl.rand under --arith: Triton turns Philox's 32 random bits into a "
                     "float32 as k * 2**-31 rounded to float32 (a grid finer near 0), which the "
                     "engine's uniforms do not model; draw the uniforms with torch.rand and "
                     "pass them to the kernel, or run exactly")
    key = _philox_key(seed)
    if isinstance(offset, tensor):
        offset._defined("tl.rand's offset")
        offs, shape = offset.t._values(), tuple(offset.t.shape)
    else:
        offs, shape = [int(offset)], ()
    streams = current().__dict__.setdefault("_triton_philox", {})
    for o in offs:
        if type(o) is not int:
            raise CannotProceed("a tl.rand offset on the draft's branches")
    fresh = sorted({o for o in offs if (key, o) not in streams})
    if fresh:                                      # one draw of the tensor layer for them all
        for o, u in zip(fresh, _rnd.rand((len(fresh),), D.float32)._values()):
            streams[(key, o)] = u
    return block(Tensor.new([streams[(key, o)] for o in offs], shape, D.float32), float32)


def randn(seed, offset, n_rounds=10):
    """``tl.randn``: refused (Gaussian noise is outside the engine, as ``torch.randn`` is)."""
    raise refuse("tl.randn: Gaussian noise is outside exactspec's tensor layer (use tl.rand "
                 "and a comparison, or -tl.log(tl.rand(...)) for exponential noise)")
