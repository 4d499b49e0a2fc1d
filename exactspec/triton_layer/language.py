"""``triton.language`` over the tensor layer: dtypes, blocks, Triton's promotion and its ops.

A block (:class:`tensor`, Triton's name) is a torch-layer tensor (:mod:`exactspec.torch_layer`)
holding the elements, with a Triton dtype beside it; a block of pointers holds integer element
offsets into one launch argument's storage.  Every element operation is the tensor layer's
(exact rationals, the engine's random values, values of a float format under ``--arith``
rounded once per operation), called with both operands already cast to the one dtype Triton's
promotion gives, so that the tensor layer's own (torch) promotion never applies.

The language is written in modules by concern, gathered here (the names a kernel reaches as
``tl.NAME`` are this module's; :mod:`exactspec.triton_layer.module` makes
``triton.language`` of them): the dtypes, Triton's promotion and the block (:mod:`.blocks`);
arithmetic, comparisons, pointer arithmetic and casts, with the refusals of ``/`` and of a
fusable ``a * b + c`` under ``--arith`` (:mod:`.operators`); blocks made in a kernel,
``tl.rand`` among them (:mod:`.creation`); ``tl.where``, ``tl.maximum``/``minimum``,
``tl.exp``/``log`` (:mod:`.elementwise`); reductions and scans, with the order of their
float additions (:mod:`.reductions`).  Loads and stores are :mod:`.launch`'s.

>>> promote(int32, bfloat16), DTYPES["float32"]
(bf16, fp32)
"""

from __future__ import annotations

# every name a kernel or the layer reaches here; importing the modules of the block's
# operators, functions and reductions makes their methods the block's (blocks.block_methods)
from .operators import binary, cast, div_rn, fdiv, reshape  # noqa: F401
from .blocks import (DTYPES, OF_TORCH, PropagateNan, bfloat16, block, constexpr,  # noqa: F401
                     dtype, float16, float32, float64, int1, int32, int64, pointer_type,
                     promote, result_dtype, scalar_block, tensor)
from .creation import (MAX_BLOCK, arange, full, full_like, num_programs,  # noqa: F401
                       program_id, rand, randn, range_, static_range, zeros, zeros_like)
from .elementwise import abs_, cdiv, clamp, exp, log, maximum, minimum, where  # noqa: F401
from .reductions import argmax, argmin, cumsum, max, min, sum  # noqa: F401

__all__ = ["dtype", "pointer_type", "tensor", "constexpr", "block", "scalar_block",
           "DTYPES", "promote", "program_id", "num_programs", "arange", "zeros", "full",
           "where", "minimum", "maximum", "sum", "max", "min", "argmax", "argmin", "cumsum",
           "rand", "randn", "static_range", "range_", "exp", "log", "PropagateNan"]
