"""``triton.language`` over the tensor layer: dtypes, blocks, Triton's promotion and its ops.

A block (:class:`tensor`, Triton's name) is a torch-layer tensor (:mod:`exactspec.torch_layer`)
holding the elements, with a Triton dtype beside it; a block of pointers holds integer element
offsets into one launch argument's storage.  Every element operation is the tensor layer's
(exact rationals, the engine's random values, values of a float format under ``--arith``
rounded once per operation), called with both operands already cast to the one dtype Triton's
promotion gives, so that the tensor layer's own (torch) promotion never applies.

Promotion (Triton's language reference, "Triton Semantics"): between two blocks, the higher
kind wins (``bool < integer < floating``); within a kind the wider dtype; ``float16`` with
``bfloat16`` gives ``float32``.  A Python number or a ``tl.constexpr`` value is a scalar that
takes part only when its kind is higher than the block's, as ``int32`` (``int64`` when it does
not fit) or ``float32`` (``float64`` beyond ``float32``'s range); ``x / y`` of two integer
blocks is ``float32``.  A non-constexpr kernel argument is not such a scalar: a Python ``int``
is an ``int32`` block (``int64`` when it does not fit), a ``float`` a ``float32`` block.
Integer ``//`` and ``%`` truncate toward zero (C's, as Triton's signed division does); an
integer result outside its dtype's range is refused (the GPU wraps it).

Reductions and scans: ``tl.sum`` sums ``bool`` and integers narrower than 32 bits as ``int32``
and ``float16``/``bfloat16`` as ``float32``; ``tl.cumsum`` keeps ``float16`` and sums
``bfloat16`` as ``float32``.  Under ``--arith`` the GPU adds a block's floats in an order its
layout decides (the elements of a thread in turn, then a butterfly across lanes and warps):
a float sum (or running sum) whose lane holds at most two nonzero terms is the same in every
order; a longer one is taken in the run's declared ``--sum-order`` (``sequential``: left to
right, each addition rounded into the dtype; ``correctly-rounded``: the exact sum rounded
once), and refused without one.  Integers, and the exact run, add the halves of the axis
element by element (the butterfly; every order gives the same there).  ``tl.max``/``tl.min``/
``tl.argmax``/``tl.argmin`` return, among equal extremes, the smallest index (Triton's
``tie_break_left=True``, the default; ``False`` is refused); a NaN in their block is refused,
since Triton's result then depends on the reduction's order.  ``tl.maximum``/``tl.minimum``
with a NaN are refused unless ``propagate_nan=tl.PropagateNan.ALL`` (then NaN wins, as the
tensor layer's).  ``tl.exp``/``tl.log`` (and ``libdevice``'s) are the tensor layer's in the exact
run (so ``-tl.log(u)`` of uniforms is exponential noise) and refused under ``--arith``: the GPU
computes them with approximate instructions.  Under ``--arith`` a float product added or
subtracted directly (``a * b + c``) is refused unless the launch passes
``enable_fp_fusion=False``: Triton's compiler may contract it to one fused multiply-add.
Under ``--arith`` a ``float32`` (or ``float16``/``bfloat16``) ``x / y`` of two values of the
format is refused, except where it is exact (``0 / y``, ``x / inf``): Triton's ``/`` lowers to
PTX ``div.full.f32`` on NVIDIA GPUs, an approximation within 2 ulp whose rounding is not
specified (triton-lang/triton PR 446, issue 10661; ``tl.fdiv`` too); ``tl.div_rn`` of
``float32`` values is the correctly rounded quotient, and ``float64``'s ``/`` (``div.rn.f64``)
is correctly rounded.  A race's ``w / E`` is the race (its float rounding is not modelled, as
in the tensor layer) and passes.

``tl.rand(seed, offsets)``: Philox streams modelled as independent fresh uniform draws through
the engine's sampler (ideal uniforms, or the ``--grid``), one per distinct ``(seed, offset)``
of the run (the same pair gives the same uniform, as Philox does); refused under ``--arith``,
where Triton's float32 values (31 random bits times ``2**-31``, rounded to ``float32``: a grid
finer near 0) are not the engine's generator grid; ``tl.randn`` (Gaussian noise) is refused,
as ``torch.randn`` is.
"""

from __future__ import annotations

import math
import operator
from fractions import Fraction

from ..core.signals import CannotProceed
from ..engine.floats import FORMATS, FloatValue
from ..torch_layer import dtypes as D
from ..torch_layer import functions as _fn
from ..torch_layer import random as _rnd
from ..torch_layer.branched import Branched, LawIndex
from ..torch_layer.context import current
from ..torch_layer.tensor import Tensor
from ..torch_layer.values import UNSET
from .errors import refuse
from .state import launch, launch_option

__all__ = ["dtype", "pointer_type", "tensor", "constexpr", "block", "scalar_block",
           "DTYPES", "promote", "program_id", "num_programs", "arange", "zeros", "full",
           "where", "minimum", "maximum", "sum", "max", "min", "argmax", "argmin", "cumsum",
           "rand", "randn", "static_range", "range_", "exp", "log", "PropagateNan"]

_builtin_max, _builtin_min, _builtin_sum, _range = max, min, sum, range


class dtype:
    """A Triton dtype (``tl.float32`` is ``fp32``): its kind, width and the tensor layer's
    dtype that holds its values (``None`` for the dtypes not modelled: 8- and 16-bit integers,
    unsigned integers, fp8)."""

    __slots__ = ("name", "kind", "bits", "torch")

    def __init__(self, name: str, kind: str, bits: int, torch):
        self.name, self.kind, self.bits, self.torch = name, kind, bits, torch

    @property
    def primitive_bitwidth(self) -> int:
        return self.bits

    def is_floating(self) -> bool:
        return self.kind == "float"

    def is_int(self) -> bool:
        return self.kind in ("int", "bool")

    def is_bool(self) -> bool:
        return self.kind == "bool"

    def is_ptr(self) -> bool:
        return False

    def __repr__(self):
        return self.name

    def __call__(self, value):                     # ``tl.float32(0.5)``: a scalar block
        return scalar_block(value, self)


class pointer_type(dtype):
    """``tl.pointer_type(element_ty)``: a pointer to elements of ``element_ty``."""

    __slots__ = ("element_ty",)

    def __init__(self, element_ty: dtype):
        super().__init__(f"pointer<{element_ty.name}>", "ptr", 64, None)
        self.element_ty = element_ty

    def is_ptr(self) -> bool:
        return True


int1 = dtype("int1", "bool", 1, D.bool_)
int32 = dtype("int32", "int", 32, D.int32)
int64 = dtype("int64", "int", 64, D.int64)
float16 = dtype("fp16", "float", 16, D.float16)
bfloat16 = dtype("bf16", "float", 16, D.bfloat16)
float32 = dtype("fp32", "float", 32, D.float32)
float64 = dtype("fp64", "float", 64, D.float64)
_UNMODELLED = [dtype(n, k, b, None) for n, k, b in
               (("int8", "int", 8), ("int16", "int", 16), ("uint8", "uint", 8),
                ("uint16", "uint", 16), ("uint32", "uint", 32), ("uint64", "uint", 64),
                ("fp8e4nv", "float", 8), ("fp8e5", "float", 8), ("fp8e4b15", "float", 8))]

#: Triton's dtype names in ``triton.language`` and the dtypes they are
DTYPES = {"int1": int1, "int32": int32, "int64": int64, "float16": float16,
          "bfloat16": bfloat16, "float32": float32, "float64": float64,
          **{d.name: d for d in _UNMODELLED}, "float8e4nv": _UNMODELLED[6],
          "float8e5": _UNMODELLED[7]}

#: the tensor layer's dtype of a tensor argument -> the Triton dtype of its pointer's elements
OF_TORCH = {D.bool_: int1, D.int32: int32, D.int64: int64, D.float16: float16,
            D.bfloat16: bfloat16, D.float32: float32, D.float64: float64}

_KIND = {"bool": 0, "int": 1, "float": 2}


def _modelled(d: dtype) -> dtype:
    if d.torch is None:
        raise refuse(f"tl.{d.name} values are not modelled (the layer holds int1, int32, "
                     "int64, float16, bfloat16, float32 and float64)")
    return d


class constexpr:
    """``tl.constexpr``: the annotation of a compile-time parameter; ``tl.constexpr(v)`` is
    ``v`` itself (compile-time values are plain Python values here)."""

    def __new__(cls, value=None):
        return value


class PropagateNan:
    """``tl.PropagateNan``: ``NONE`` (the default of ``tl.maximum``/``minimum``) or ``ALL``."""

    NONE = 0
    ALL = 0xFFFF


# -- blocks -------------------------------------------------------------------------------

class tensor:
    """A block of a program: a tensor-layer tensor ``t`` of elements, and its Triton dtype.

    A block of pointers holds integer element offsets (``t``, ``int64``) into the storage of
    one launch argument (``base``).  ``undefined`` is a bool tensor-layer tensor marking the
    lanes of a masked load without ``other`` that the mask left out (their values are
    undefined on the GPU): an operation carries the marks, and a mark that reaches a result (a
    reduction, a store, a pointer, a branch) is refused.  ``product`` marks a float product
    not yet rounded into anything else (for the fused multiply-add refusal)."""

    __slots__ = ("t", "dtype", "base", "undefined", "product")

    def __init__(self, t, dtype_: dtype, base=None, undefined=None, product=False):
        self.t, self.dtype, self.base, self.undefined = t, dtype_, base, undefined
        self.product = product

    @property
    def type(self):
        return self.dtype

    @property
    def shape(self) -> list:
        return list(self.t.shape)

    @property
    def numel(self) -> int:
        return self.t.numel()

    def __repr__(self):
        return f"<triton block {self.dtype.name}{self.shape}>"

    # -- Python's reads of a block --------------------------------------------------------
    def _defined(self, what: str) -> None:
        if self.undefined is not None and any(v is True for v in self.undefined._values()):
            raise refuse(f"{what} of a lane that a masked tl.load without other= left "
                         "undefined")

    def __bool__(self):
        self._defined("the truth value")
        return bool(self.t)

    def __index__(self):
        self._defined("an integer")
        if self.dtype.kind == "float" or self.dtype.is_ptr():
            raise refuse(f"a {self.dtype.name} block used as a Python integer")
        return int(self.t)

    __int__ = __index__

    def __iter__(self):
        raise refuse("iteration over a Triton block (use tl.static_range or range)")

    # -- operators ------------------------------------------------------------------------
    def __add__(self, o):
        return binary(self, o, operator.add)

    def __radd__(self, o):
        return binary(o, self, operator.add)

    def __sub__(self, o):
        return binary(self, o, operator.sub)

    def __rsub__(self, o):
        return binary(o, self, operator.sub)

    def __mul__(self, o):
        return binary(self, o, operator.mul)

    def __rmul__(self, o):
        return binary(o, self, operator.mul)

    def __truediv__(self, o):
        return binary(self, o, operator.truediv)

    def __rtruediv__(self, o):
        return binary(o, self, operator.truediv)

    def __floordiv__(self, o):
        return binary(self, o, operator.floordiv)

    def __rfloordiv__(self, o):
        return binary(o, self, operator.floordiv)

    def __mod__(self, o):
        return binary(self, o, operator.mod)

    def __rmod__(self, o):
        return binary(o, self, operator.mod)

    def __lt__(self, o):
        return binary(self, o, operator.lt)

    def __le__(self, o):
        return binary(self, o, operator.le)

    def __gt__(self, o):
        return binary(self, o, operator.gt)

    def __ge__(self, o):
        return binary(self, o, operator.ge)

    def __eq__(self, o):
        return binary(self, o, operator.eq)

    def __ne__(self, o):
        return binary(self, o, operator.ne)

    __hash__ = object.__hash__

    def __and__(self, o):
        return binary(self, o, operator.and_)

    def __rand__(self, o):
        return binary(o, self, operator.and_)

    def __or__(self, o):
        return binary(self, o, operator.or_)

    def __ror__(self, o):
        return binary(o, self, operator.or_)

    def __xor__(self, o):
        return binary(self, o, operator.xor)

    def __rxor__(self, o):
        return binary(o, self, operator.xor)

    def __lshift__(self, o):
        return binary(self, o, operator.lshift)

    def __rshift__(self, o):
        return binary(self, o, operator.rshift)

    def __neg__(self):
        if self.dtype.is_ptr():
            raise refuse("negation of a pointer block")
        return binary(0, self, operator.sub)

    def __pos__(self):
        return self

    def __invert__(self):
        if self.dtype.kind == "bool":
            return _same_shape(self, ~self.t, int1)
        if self.dtype.kind == "int":
            return binary(-1, self, operator.sub)            # ~x == -1 - x in two's complement
        raise refuse(f"~ of a {self.dtype.name} block")

    def __getitem__(self, key):
        """``x[None, :]``, ``x[:, None]``: new axes of length 1 (Triton's only indexing)."""
        key = key if isinstance(key, tuple) else (key,)
        for k in key:
            if not (k is None or (isinstance(k, slice) and k == slice(None))):
                raise refuse("a Triton block is indexed only by None and ':' (new axes)")
        t = self.t[key]
        und = self.undefined[key] if self.undefined is not None else None
        return tensor(t, self.dtype, self.base, und, self.product)

    # -- methods Triton forwards to the free functions ------------------------------------
    def to(self, dtype_, fp_downcast_rounding=None, bitcast=False):
        return cast(self, dtype_, fp_downcast_rounding, bitcast)

    def cast(self, dtype_, fp_downcast_rounding=None, bitcast=False):
        return cast(self, dtype_, fp_downcast_rounding, bitcast)

    def sum(self, axis=None, keep_dims=False, dtype=None):
        return sum(self, axis, keep_dims, dtype)

    def max(self, axis=None, return_indices=False, return_indices_tie_break_left=True,
            keep_dims=False):
        return max(self, axis, return_indices, return_indices_tie_break_left, keep_dims)

    def min(self, axis=None, return_indices=False, return_indices_tie_break_left=True,
            keep_dims=False):
        return min(self, axis, return_indices, return_indices_tie_break_left, keep_dims)

    def argmax(self, axis, tie_break_left=True, keep_dims=False):
        return argmax(self, axis, tie_break_left, keep_dims)

    def argmin(self, axis, tie_break_left=True, keep_dims=False):
        return argmin(self, axis, tie_break_left, keep_dims)

    def cumsum(self, axis=0, reverse=False, dtype=None):
        return cumsum(self, axis, reverse, dtype)

    def exp(self):
        return exp(self)

    def log(self):
        return log(self)

    def reshape(self, *shape, can_reorder=False):
        return reshape(self, *shape)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)            # probes (hasattr(x, "__array__")) stay quiet
        raise refuse(f"the Triton block method .{name} is outside exactspec's Triton layer")


def block(t: Tensor, dtype_: dtype, undefined=None, product=False) -> tensor:
    """A block of ``dtype_`` over ``t`` (already holding values of ``dtype_.torch``)."""
    return tensor(t, dtype_, None, undefined, product)


def scalar_block(value, dtype_: dtype) -> tensor:
    """A 0-d block holding the Python number (or element) ``value`` as a value of ``dtype_``."""
    _modelled(dtype_)
    t = Tensor.new([UNSET], (), dtype_.torch)
    t._st.data[0] = _element(value, dtype_)
    return block(t, dtype_)


def _element(value, dtype_: dtype):
    """A Python number as an element of ``dtype_`` (the tensor layer's cast)."""
    from ..torch_layer.values import cast as element_cast

    if dtype_.kind == "int" and isinstance(value, int) and not isinstance(value, bool):
        _check_range([value], dtype_)
    return element_cast(value, dtype_.torch)


def _same_shape(b: tensor, t: Tensor, dtype_: dtype) -> tensor:
    return tensor(t, dtype_, b.base, b.undefined, False)


def _is_scalar(x) -> bool:
    return isinstance(x, (bool, int, float, Fraction)) and not isinstance(x, tensor)


def _scalar_kind(x) -> str:
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return "int"
    return "float"


def _scalar_dtype(x) -> dtype:
    """The dtype a Python number takes when its kind is higher than the block's."""
    kind = _scalar_kind(x)
    if kind == "bool":
        return int1
    if kind == "int":
        return int32 if -2 ** 31 <= x < 2 ** 31 else int64
    if isinstance(x, float) and math.isfinite(x) and abs(x) > FORMATS["float32"].max_value:
        return float64
    return float32


def promote(a: dtype, b: dtype) -> dtype:
    """Triton's promotion of two blocks' dtypes (see the module's text).

    >>> promote(int32, bfloat16), promote(float32, float16), promote(float16, bfloat16)
    (bf16, fp32, fp32)
    """
    if a is b:
        return a
    if _KIND[a.kind] != _KIND[b.kind]:
        return a if _KIND[a.kind] > _KIND[b.kind] else b
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    return float32                                  # float16 with bfloat16: the supremum


def result_dtype(a, b) -> dtype:
    """The dtype of ``a op b`` for blocks or Python numbers (at least one a block)."""
    if isinstance(a, tensor) and isinstance(b, tensor):
        return promote(a.dtype, b.dtype)
    blk, s = (a, b) if isinstance(a, tensor) else (b, a)
    if _KIND[_scalar_kind(s)] <= _KIND[blk.dtype.kind]:
        return blk.dtype
    return promote(blk.dtype, _scalar_dtype(s))


def _as_block(x, dtype_: dtype) -> tensor:
    """``x`` (a block or a Python number) as a block of ``dtype_``."""
    if isinstance(x, tensor):
        if x.dtype is dtype_:
            return x
        return cast(x, dtype_)
    if not _is_scalar(x):
        raise refuse(f"a {type(x).__name__} in a Triton block operation")
    return scalar_block(x, dtype_)


def _undefined_of(*blocks):
    marks = [b.undefined for b in blocks if isinstance(b, tensor) and b.undefined is not None]
    if not marks:
        return None
    out = marks[0]
    for m in marks[1:]:
        out = out | m
    return out


def _broadcast_mark(mark, shape):
    if mark is None:
        return None
    return mark.expand(*shape).contiguous() if tuple(mark.shape) != tuple(shape) else mark


_FUSED = (operator.add, operator.sub)


def binary(a, b, op, precise: bool = False) -> tensor:
    """``a op b`` of blocks and Python numbers, with Triton's promotion (``precise``: a
    division rounded correctly, ``tl.div_rn``'s)."""
    if not isinstance(a, tensor) and not isinstance(b, tensor):
        return op(a, b)
    pa = a.dtype.is_ptr() if isinstance(a, tensor) else False
    pb = b.dtype.is_ptr() if isinstance(b, tensor) else False
    if pa or pb:
        return _pointer_arith(a, b, op, pa, pb)
    dt = result_dtype(a, b)
    _modelled(dt)
    compare = op in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq,
                     operator.ne)
    if op is operator.truediv and dt.kind != "float":
        dt = float32
    if op in (operator.floordiv, operator.mod, operator.lshift, operator.rshift,
              operator.and_, operator.or_, operator.xor) and dt.kind == "float":
        raise refuse(f"{_OP_TEXT[op]} of {dt.name} blocks (Triton takes integers there)")
    x, y = _as_block(a, dt), _as_block(b, dt)
    if op in _FUSED and dt.kind == "float" and not current().exact and \
            (x.product or y.product) and launch_option("enable_fp_fusion", True):
        raise refuse("a float product added or subtracted directly (a * b + c) under --arith: "
                     "Triton's compiler may contract it into one fused multiply-add, rounded "
                     "once; launch the kernel with enable_fp_fusion=False for the run exactspec "
                     "models")
    if op is operator.truediv and not precise and dt is not float64 and not current().exact:
        _approximate_division(x, y, dt)
    undefined = _undefined_of(x, y)
    if dt.kind == "int" and not compare:
        t = _integer_op(x.t, y.t, op, dt)
    else:
        t = op(x.t, y.t)
    out_dt = int1 if compare else dt
    if undefined is not None:
        undefined = _broadcast_mark(undefined, t.shape)
    return block(t, out_dt, undefined,
                 product=op is operator.mul and dt.kind == "float")


def _plain(v) -> bool:
    """A value of a float format (on every draft branch too): neither random nor noise."""
    if type(v) is Branched:
        return all(isinstance(w, FloatValue) for w in v.values)
    return isinstance(v, FloatValue)


def _exact_quotient(a, b) -> bool:
    """``a / b`` that any division gives exactly: a zero numerator or an infinite divisor."""
    xs = a.values if type(a) is Branched else [a]
    ys = b.values if type(b) is Branched else [b]
    return all(x.value == 0 for x in xs) or \
        all(math.isinf(y.value) for y in ys)


def _approximate_division(x: tensor, y: tensor, dt: dtype) -> None:
    """Under ``--arith``, ``x / y`` of ``float32`` (and of ``float16``/``bfloat16``, computed in
    ``float32``) values is refused: Triton's ``/`` lowers to PTX ``div.full.f32``, an
    approximation within 2 ulp whose rounding is not specified (a race's ``w / E`` is a race,
    whose float rounding the tensor layer does not model, and passes)."""
    from ..torch_layer.tensor import broadcast_shapes

    shape = broadcast_shapes(x.t.shape, y.t.shape)
    for a, b in zip(x.t._expanded_values(shape), y.t._expanded_values(shape)):
        if _plain(a) and _plain(b) and not _exact_quotient(a, b):
            raise refuse(f"{dt.name} division under --arith: Triton's / on the GPU is PTX "
                         "div.full.f32 (within 2 ulp, its rounding not specified); write "
                         "tl.div_rn(x, y) on float32 values for the correctly rounded "
                         "quotient, or compare u * q < p")


def div_rn(x, y) -> tensor:
    """``tl.div_rn(x, y)`` (also ``tl.math.div_rn``, ``libdevice.div_rn``): the correctly
    rounded ``float32`` quotient (Triton takes ``float32`` operands only)."""
    for v in (x, y):
        if isinstance(v, tensor) and v.dtype is not float32:
            raise refuse(f"tl.div_rn of a {v.dtype.name} block: it takes float32 (convert with "
                         ".to(tl.float32))")
    return binary(x, y, operator.truediv, precise=True)


def fdiv(x, y, ieee_rounding=False) -> tensor:
    """``tl.fdiv(x, y)``: the fast division (``div.full.f32`` on the GPU; ``ieee_rounding`` is
    ignored there), as ``/``."""
    return binary(x, y, operator.truediv)


_OP_TEXT = {operator.floordiv: "//", operator.mod: "%", operator.lshift: "<<",
            operator.rshift: ">>", operator.and_: "&", operator.or_: "|", operator.xor: "^"}


def _c_div(x: int, y: int) -> int:
    if y == 0:
        raise refuse("integer division by zero in a kernel (undefined on the GPU)")
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


def _int_apply(op, x, y):
    if op is operator.floordiv:
        return _c_div(x, y)
    if op is operator.mod:
        return x - _c_div(x, y) * y
    if op is operator.rshift:
        return x >> y
    if op is operator.lshift:
        return x << y
    return op(x, y)


def _integer_op(xt: Tensor, yt: Tensor, op, dt: dtype) -> Tensor:
    """An integer operation on plain ints, computed exactly and refused when it leaves the
    dtype's range (the GPU wraps it around)."""
    from ..torch_layer.tensor import broadcast_shapes

    shape = broadcast_shapes(xt.shape, yt.shape)
    xs = xt._expanded_values(shape)
    ys = yt._expanded_values(shape)
    out = []
    for x, y in zip(xs, ys):
        if type(x) is bool:
            x = int(x)
        if type(y) is bool:
            y = int(y)
        if type(x) is not int or type(y) is not int:
            if op in (operator.add, operator.sub, operator.mul):     # a drawn token: the
                out.append(None)                                     # tensor layer's route
                continue
            raise CannotProceed("integer division of a value of the draft's branches in a "
                                "kernel")
        out.append(_int_apply(op, x, y))
    if any(v is None for v in out):
        wide = op(xt.to(D.int64), yt.to(D.int64))
        return wide.to(dt.torch)
    _check_range(out, dt)
    return Tensor.new(out, shape, dt.torch)


def _check_range(values, dt: dtype) -> None:
    bound = 1 << (dt.bits - 1)
    for v in values:
        if type(v) is int and not -bound <= v < bound:
            raise refuse(f"{dt.name} overflow in a kernel: {v} is outside [-2**{dt.bits - 1}, "
                         f"2**{dt.bits - 1}) and the GPU wraps it around (compute the offset "
                         "in tl.int64: x.to(tl.int64))")


def _pointer_arith(a, b, op, pa: bool, pb: bool) -> tensor:
    if op in (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge) \
            and pa and pb:
        if a.base is not b.base:
            raise refuse("comparison of pointers into two different arguments")
        return block(op(a.t, b.t), int1)
    if pa and pb:
        raise refuse(f"{_OP_TEXT.get(op, op.__name__)} of two pointer blocks")
    ptr, other = (a, b) if pa else (b, a)
    if op is operator.sub and not pa:
        raise refuse("a number minus a pointer")
    if op not in (operator.add, operator.sub):
        raise refuse(f"pointer arithmetic other than + and - ({op.__name__})")
    if isinstance(other, tensor):
        if other.dtype.kind not in ("int", "bool"):
            raise refuse(f"a pointer plus a {other.dtype.name} block (offsets are integers)")
        other._defined("a pointer offset")
        offsets = other.t.to(D.int64)
    elif isinstance(other, int):
        offsets = Tensor.new([int(other)], (), D.int64)
    else:
        raise refuse(f"a pointer plus a {type(other).__name__}")
    t = op(ptr.t, offsets)
    return tensor(t, ptr.dtype, ptr.base)


def cast(x, dtype_: dtype, fp_downcast_rounding=None, bitcast=False) -> tensor:
    """``x.to(dtype)``: every element converted as the tensor layer converts it (floats
    rounded to nearest even, floats to integers truncated toward zero, ``int1`` as ``!= 0``)."""
    if bitcast:
        raise refuse("a bitcast (.to(..., bitcast=True)): the layer holds values, not bits")
    if fp_downcast_rounding not in (None, "rtne"):
        raise refuse(f"fp_downcast_rounding={fp_downcast_rounding!r}: only round to nearest "
                     "even ('rtne', the default) is modelled")
    if not isinstance(dtype_, dtype):
        raise refuse(f"{dtype_!r} is not a Triton dtype")
    if not isinstance(x, tensor):
        return scalar_block(x, dtype_)
    if x.dtype.is_ptr() or dtype_.is_ptr():
        raise refuse("a cast of or to a pointer")
    _modelled(dtype_)
    if x.dtype is dtype_:
        return x
    if dtype_.kind == "int" and x.dtype.kind == "float":
        values = x.t._values()
        for v in values:
            fv = v.value if isinstance(v, FloatValue) else v
            if isinstance(fv, float) and not math.isfinite(fv):
                raise refuse(f"{fv} converted to {dtype_.name} in a kernel (undefined)")
            if isinstance(fv, (int, float, Fraction)):
                whole = int(Fraction(fv))                  # truncated toward zero
                bound = 1 << (dtype_.bits - 1)
                if not -bound <= whole < bound:
                    raise refuse(f"{fv} converted to {dtype_.name} in a kernel: outside its "
                                 "range, the conversion is undefined on the GPU")
    out = x.t.to(dtype_.torch)
    if dtype_.kind == "int":
        _check_range(out._values(), dtype_)
    return tensor(out, dtype_, None, x.undefined)


def reshape(x: tensor, *shape) -> tensor:
    """``tl.reshape(x, shape)``."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    und = x.undefined.reshape(*shape) if x.undefined is not None else None
    return tensor(x.t.reshape(*shape), x.dtype, x.base, und)


# -- creation -----------------------------------------------------------------------------

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
    _check_range(values, int32)
    return block(Tensor.new(values, (len(values),), D.int32), int32)


def full(shape, value, dtype) -> tensor:
    """``tl.full(shape, value, dtype)``."""
    shape = _shape_arg(shape)
    _modelled(dtype)
    if isinstance(value, tensor):
        value._defined("tl.full's value")
        v = cast(value, dtype).t._values()[0]
    else:
        v = _element(value, dtype)
    return block(Tensor.new([v] * math.prod(shape), shape, dtype.torch), dtype)


def zeros(shape, dtype) -> tensor:
    """``tl.zeros(shape, dtype)``."""
    return full(shape, 0, dtype)


def zeros_like(x: tensor) -> tensor:
    """``tl.zeros_like(x)``."""
    return full(x.shape, 0, x.dtype)


def full_like(x: tensor, value) -> tensor:
    return full(x.shape, value, x.dtype)


def static_range(*args):
    """``tl.static_range``: Python's ``range`` (the loop is unrolled; the values are the same)."""
    return _range(*(int(a) for a in args))


def range_(*args, num_stages=None, loop_unroll_factor=None, **kwargs):
    """``tl.range``: Python's ``range`` (pipelining options change no value)."""
    return _range(*(int(a) for a in args))


# -- elementwise functions ------------------------------------------------------------------

def where(condition, x, y) -> tensor:
    """``tl.where(condition, x, y)``: ``x`` and ``y`` promoted as a binary operation's."""
    if not isinstance(condition, tensor):
        condition = scalar_block(bool(condition), int1)
    if condition.dtype.kind != "bool":
        condition = binary(condition, 0, operator.ne)
    if not isinstance(x, tensor) and not isinstance(y, tensor):
        dt = _scalar_dtype(y) if _KIND[_scalar_kind(y)] > _KIND[_scalar_kind(x)] \
            else _scalar_dtype(x)
    else:
        dt = result_dtype(x, y)
    _modelled(dt)
    xb, yb = _as_block(x, dt), _as_block(y, dt)
    t = _fn.where(condition.t, xb.t, yb.t)
    undefined = None
    if xb.undefined is not None or yb.undefined is not None:
        cv = condition.t
        xu = xb.undefined if xb.undefined is not None else Tensor.new([False], (), D.bool_)
        yu = yb.undefined if yb.undefined is not None else Tensor.new([False], (), D.bool_)
        if all(type(v) is bool for v in cv._values()):
            undefined = _fn.where(cv, xu, yu)        # the lanes of the value selected
        else:
            undefined = xu | yu
    if condition.undefined is not None:               # an undefined condition: its lanes
        undefined = condition.undefined if undefined is None else undefined | \
            condition.undefined
    undefined = _broadcast_mark(undefined, t.shape)
    return block(t, dt, undefined)


def _has_nan(t: Tensor) -> bool:
    for v in t._values():
        vals = v.values if type(v) is Branched else (v,)
        for w in vals:
            x = w.value if isinstance(w, FloatValue) else w
            if isinstance(x, float) and x != x:
                return True
    return False


def _extreme(x, y, propagate_nan, largest: bool) -> tensor:
    name = "tl.maximum" if largest else "tl.minimum"
    dt = result_dtype(x, y) if isinstance(x, tensor) or isinstance(y, tensor) else None
    if dt is None:
        return (_builtin_max if largest else _builtin_min)(x, y)
    _modelled(dt)
    xb, yb = _as_block(x, dt), _as_block(y, dt)
    if dt.kind == "float" and propagate_nan != PropagateNan.ALL and \
            (_has_nan(xb.t) or _has_nan(yb.t)):
        raise refuse(f"{name} of a NaN with propagate_nan=NONE (the GPU's max.f32 drops it, "
                     "exactspec does not model that): pass propagate_nan=tl.PropagateNan.ALL")
    t = xb.t.maximum(yb.t) if largest else xb.t.minimum(yb.t)
    und = _undefined_of(xb, yb)
    return block(t, dt, _broadcast_mark(und, t.shape))


def maximum(x, y, propagate_nan=PropagateNan.NONE) -> tensor:
    """``tl.maximum(x, y)``."""
    return _extreme(x, y, propagate_nan, True)


def minimum(x, y, propagate_nan=PropagateNan.NONE) -> tensor:
    """``tl.minimum(x, y)``."""
    return _extreme(x, y, propagate_nan, False)


def clamp(x, min, max, propagate_nan=PropagateNan.NONE) -> tensor:
    """``tl.clamp(x, min, max)``: ``tl.minimum(tl.maximum(x, min), max)``."""
    return _extreme(_extreme(x, min, propagate_nan, True), max, propagate_nan, False)


def _transcendental(x, name: str) -> tensor:
    if not isinstance(x, tensor):
        x = scalar_block(x, float32)
    if x.dtype.kind != "float":
        x = cast(x, float32)
    if not current().exact:
        raise refuse(f"{name} under --arith: the GPU computes it with an approximate "
                     "instruction (ex2.approx/lg2.approx) whose rounding exactspec does not "
                     "model; run it exactly")
    t = x.t.exp() if name.endswith("exp") else x.t.log()
    return block(t, x.dtype, x.undefined)


def exp(x) -> tensor:
    """``tl.exp``: the tensor layer's ``exp`` (exact run only)."""
    return _transcendental(x, "tl.exp")


def log(x) -> tensor:
    """``tl.log``: the tensor layer's ``log`` (exact run only: ``-log(u)`` is noise)."""
    return _transcendental(x, "tl.log")


def abs_(x) -> tensor:
    """``tl.abs``."""
    return block(abs(x.t), x.dtype, x.undefined)


def cdiv(x, div):
    """``tl.cdiv(x, div)``: ``(x + div - 1) // div``."""
    return (x + div - 1) // div


# -- reductions and scans -------------------------------------------------------------------

def _axis(x: tensor, axis) -> tuple[tensor, int]:
    """``x`` and the axis to reduce (``None``: all dimensions, flattened first)."""
    if axis is None:
        return reshape(x, x.numel) if len(x.shape) != 1 else x, 0
    axis = int(axis)
    n = len(x.shape)
    if not -n <= axis < n:
        raise refuse(f"axis {axis} of a block of {n} dimensions")
    return x, axis % n


def _reduced_mark(x: tensor, what: str) -> None:
    x._defined(what)


def _keep(t: Tensor, axis: int, keep_dims: bool, ndim: int) -> Tensor:
    return t.unsqueeze(axis) if keep_dims and ndim else t


def _sum_dtype(d: dtype, given) -> dtype:
    if given is not None:
        return given
    if d.kind == "bool" or (d.kind == "int" and d.bits < 32):
        return int32
    if d in (float16, bfloat16):
        return float32
    return d


def sum(input, axis=None, keep_dims=False, dtype=None) -> tensor:
    """``tl.sum``: see the module's text for the dtype and the order of the additions."""
    x, ax = _axis(input, axis)
    _reduced_mark(x, "tl.sum")
    dt = _sum_dtype(x.dtype, dtype)
    x = cast(x, dt)
    t = x.t
    if dt.kind == "float" and not current().exact:
        declared = _declared_sums(t, ax, dt, "tl.sum", running=False)
        if declared is not None:
            return block(_keep(declared, ax, keep_dims, len(input.shape)), dt)
    n = t.shape[ax]
    while n > 1:                                     # the butterfly: halves, element by element
        h = n // 2
        lo, hi = t.narrow(ax, 0, h), t.narrow(ax, h, h)
        t = (block(lo, dt) + block(hi, dt)).t if dt.kind != "float" else lo + hi
        n = h
    t = t.squeeze(ax)
    return block(_keep(t, ax, keep_dims, len(input.shape)), dt)


def _nonzero(lane) -> int:
    return _builtin_sum(1 for v in lane if v.value != 0)


def _declared_sums(t: Tensor, ax: int, dt: dtype, what: str, running: bool):
    """Under ``--arith``, the float sums (``running``: the running sums) of ``t`` along ``ax``
    in an order that holds on the GPU: any order where a lane has at most two nonzero terms,
    else the run's declared ``--sum-order`` (``sequential``: left to right, each addition
    rounded into the dtype; ``correctly-rounded``: the exact sum rounded once), else refused;
    ``None`` for lanes that hold other values than the format's (the tensor layer's
    arithmetic decides those)."""
    from ..engine.float_sums import float_sum

    outer, lanes = t._lanes(ax)
    if any(type(v) is Branched for lane in lanes for v in lane):
        raise CannotProceed(f"a float {what} over the draft's branches in a kernel")
    if not all(type(v) is FloatValue for lane in lanes for v in lane):
        return None
    order = "sequential"
    if any(_nonzero(lane) > 2 for lane in lanes):
        order = current().sum_order
        if order not in ("sequential", "correctly-rounded"):
            n = _builtin_max(len(lane) for lane in lanes)
            raise refuse(f"{what} of {n} {dt.name} lanes under --arith: the GPU adds them in "
                         "an order its layout decides (elements of a thread in turn, then a "
                         "butterfly across lanes and warps), which exactspec does not model; "
                         "declare --sum-order sequential or correctly-rounded")
    fmt = FORMATS[dt.torch.name]

    def total(terms):
        if order == "sequential":
            acc = terms[0]
            for v in terms[1:]:
                acc = acc + v
            return acc
        return FloatValue(float_sum([v.value for v in terms], fmt, "correctly-rounded"), fmt)

    def prefixes(terms):                 # the running sums, in one pass
        if order == "sequential":
            out, acc = [], None
            for v in terms:
                acc = v if acc is None else acc + v
                out.append(acc)
            return out
        if not all(math.isfinite(v.value) for v in terms):
            return [total(terms[:i + 1]) for i in range(len(terms))]
        out, exact_total = [], Fraction(0)
        for v in terms:
            exact_total += Fraction(v.value)
            out.append(FloatValue(fmt.round(exact_total), fmt))
        return out

    if not running:
        return Tensor.new([total(lane) for lane in lanes], outer, dt.torch)
    values = [v for lane in lanes for v in prefixes(lane)]
    moved = Tensor.new(values, tuple(outer) + (t.shape[ax],), dt.torch)
    order_back = list(range(ax)) + [t.ndim - 1] + list(range(ax, t.ndim - 1))
    return moved.permute(order_back).contiguous()


def _no_nan(x: tensor, name: str) -> None:
    if x.dtype.kind == "float" and _has_nan(x.t):
        raise refuse(f"{name} of a block holding a NaN: Triton's result then depends on its "
                     "reduction order, which exactspec does not model")


def _tie_rule(tie_break_left, name: str) -> None:
    if not tie_break_left:
        raise refuse(f"{name} with tie_break_left=False: which of equal values wins then "
                     "depends on the reduction order; only the leftmost (the default) is "
                     "modelled")


def _lane_index(lane: list, dt, largest: bool) -> int:
    """The smallest index of the largest (smallest) element of one lane: the tensor layer's
    ``argmax``, except that a race's scores ``w / E`` beside lanes holding a number that is
    not positive (the masked lanes of a kernel: ``0 / 1.0``, ``-inf``) race among
    themselves when some weight is positive (a positive score beats them almost surely)."""
    if largest:
        races = [i for i, v in enumerate(lane) if type(v).__name__ == "RaceScore"]
        if races and len(races) < len(lane):
            raced = set(races)
            plain = [v for i, v in enumerate(lane) if i not in raced]
            if all(_not_positive(v) for v in plain) and \
                    all(getattr(lane[i], "over", False) for i in races) and \
                    any(_positive_weight(lane[i].weight) for i in races):
                sub = Tensor.new([lane[i] for i in races], (len(races),), dt)
                won = sub.argmax()._values()[0]
                if type(won) is int:
                    return races[won]
                if type(won) is LawIndex:          # the race's winner kept as its law
                    probs = [Fraction(0)] * len(lane)
                    for k, i in enumerate(races):
                        probs[i] = won.probs[k]
                    return LawIndex(probs, won.what)
                raise CannotProceed("a race among a kernel's lanes not decided")
    t = Tensor.new(list(lane), (len(lane),), dt)
    return (t.argmax() if largest else t.argmin())._values()[0]


def _not_positive(v) -> bool:
    if isinstance(v, FloatValue):
        v = v.value
    if isinstance(v, (int, Fraction)) or (isinstance(v, float) and v == v):
        return v <= 0
    return False


def _positive_weight(w) -> bool:
    if isinstance(w, FloatValue):
        w = w.value
    if type(w).__module__.startswith("sympy") and getattr(w, "is_Rational", False):
        w = Fraction(int(w.p), int(w.q))
    return isinstance(w, (int, Fraction, float)) and w > 0


def _indices(x: tensor, ax: int, largest: bool) -> Tensor:
    outer, lanes = x.t._lanes(ax)
    return Tensor.new([_lane_index(lane, x.t.dtype, largest) for lane in lanes], outer,
                      D.int32)


def _extreme_reduce(input, axis, return_indices, tie_break_left, keep_dims, largest):
    name = "tl.max" if largest else "tl.min"
    x, ax = _axis(input, axis)
    _reduced_mark(x, name)
    _no_nan(x, name)
    if x.dtype.kind == "bool":
        x = cast(x, int32)
    nd = len(input.shape)
    if return_indices:
        _tie_rule(tie_break_left, name)
        idx = _indices(x, ax, largest)
        outer, lanes = x.t._lanes(ax)
        values = Tensor.new([lane[i] for lane, i in zip(lanes, idx._values())], outer,
                            x.t.dtype)
        return (block(_keep(values, ax, keep_dims, nd), x.dtype),
                block(_keep(idx, ax, keep_dims, nd), int32))
    r = x.t.max(dim=ax) if largest else x.t.min(dim=ax)
    return block(_keep(r.values, ax, keep_dims, nd), x.dtype)


def max(input, axis=None, return_indices=False, return_indices_tie_break_left=True,
        keep_dims=False):
    """``tl.max``: the largest element (with ``return_indices``, the smallest index of it)."""
    if not isinstance(input, tensor):
        raise refuse("tl.max of a Python number (use the builtin max)")
    return _extreme_reduce(input, axis, return_indices, return_indices_tie_break_left,
                           keep_dims, True)


def min(input, axis=None, return_indices=False, return_indices_tie_break_left=True,
        keep_dims=False):
    """``tl.min``: the smallest element (with ``return_indices``, the smallest index of it)."""
    if not isinstance(input, tensor):
        raise refuse("tl.min of a Python number (use the builtin min)")
    return _extreme_reduce(input, axis, return_indices, return_indices_tie_break_left,
                           keep_dims, False)


def _arg(input, axis, tie_break_left, keep_dims, largest) -> tensor:
    name = "tl.argmax" if largest else "tl.argmin"
    _tie_rule(tie_break_left, name)
    x, ax = _axis(input, axis)
    _reduced_mark(x, name)
    _no_nan(x, name)
    if x.dtype.kind == "bool":
        x = cast(x, int32)
    return block(_keep(_indices(x, ax, largest), ax, keep_dims, len(input.shape)), int32)


def argmax(input, axis, tie_break_left=True, keep_dims=False) -> tensor:
    """``tl.argmax``: the smallest index of the largest element (a race's winner for race
    scores ``w / E``: the tensor layer's ``argmax``)."""
    return _arg(input, axis, tie_break_left, keep_dims, True)


def argmin(input, axis, tie_break_left=True, keep_dims=False) -> tensor:
    """``tl.argmin``: the smallest index of the smallest element."""
    return _arg(input, axis, tie_break_left, keep_dims, False)


def cumsum(input, axis=0, reverse=False, dtype=None) -> tensor:
    """``tl.cumsum``: the running sum along ``axis``, added as the lanes' scan adds (offsets
    1, 2, 4, ...; see the module's text)."""
    x, ax = _axis(input, axis)
    _reduced_mark(x, "tl.cumsum")
    if dtype is None:
        dtype = int32 if x.dtype.kind == "bool" or (x.dtype.kind == "int" and x.dtype.bits < 32) \
            else float32 if x.dtype is bfloat16 else x.dtype
    x = cast(x, dtype)
    t = x.t.flip(ax) if reverse else x.t
    if dtype.kind == "float" and not current().exact:
        declared = _declared_sums(t, ax, dtype, "tl.cumsum", running=True)
        if declared is not None:
            return block(declared.flip(ax).contiguous() if reverse else declared, dtype)
    n = t.shape[ax]
    offset = 1
    while offset < n:
        head = t.narrow(ax, 0, offset)
        moved = t.narrow(ax, 0, n - offset)
        tail = t.narrow(ax, offset, n - offset)
        added = (block(tail, dtype) + block(moved, dtype)).t if dtype.kind != "float" \
            else tail + moved
        t = _fn.cat([head.contiguous(), added], ax)
        offset *= 2
    if reverse:
        t = t.flip(ax)
    return block(t.contiguous(), dtype)


# -- random numbers -------------------------------------------------------------------------

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
