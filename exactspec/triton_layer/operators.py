"""A block's arithmetic, comparisons and casts, with Triton's promotion (:mod:`.blocks`).

Every element operation is the tensor layer's (exact rationals, the engine's random values,
values of a float format under ``--arith`` rounded once per operation), called with both
operands already cast to the one dtype Triton's promotion gives, so that the tensor layer's
own (torch) promotion never applies.  ``x / y`` of two integer blocks is ``float32``.  Integer
``//`` and ``%`` truncate toward zero (C's, as Triton's signed division does); an integer
result outside its dtype's range is refused (the GPU wraps it).  Pointer arithmetic adds
integer offsets to a block of pointers.

Under ``--arith`` a float product added or subtracted directly (``a * b + c``) is refused
unless the launch passes ``enable_fp_fusion=False``: Triton's compiler may contract it to one
fused multiply-add.  Under ``--arith`` a ``float32`` (or ``float16``/``bfloat16``) ``x / y`` of
two values of the format is refused, except where it is exact (``0 / y``, ``x / inf``):
Triton's ``/`` lowers to PTX ``div.full.f32`` on NVIDIA GPUs, an approximation within 2 ulp
whose rounding is not specified (triton-lang/triton PR 446, issue 10661; ``tl.fdiv`` too);
``tl.div_rn`` of ``float32`` values is the correctly rounded quotient, and ``float64``'s ``/``
(``div.rn.f64``) is correctly rounded.  A race's ``w / E`` is the race (its float rounding is
not modelled, as in the tensor layer) and passes.  A float run that declares NumPy's arithmetic
(``--elementwise numpy``: the kernel as Triton's interpreter, ``TRITON_INTERPRET=1``, runs it)
takes every ``/`` as the correctly rounded quotient in its dtype and never fuses ``a * b + c``
(:func:`~exactspec.triton_layer.state.interpreter_arithmetic`); the verdict is then about that
platform, not the GPU's.

The operators, ``.to``/``.cast`` and ``.reshape`` are the block's (:class:`BlockOperators`).

>>> from .blocks import float32, int32, scalar_block
>>> (scalar_block(7, int32) // -2).t.item(), (scalar_block(1, int32) / 2).dtype
(-3, fp32)
"""

from __future__ import annotations

import math
import operator
from fractions import Fraction

from ..core.signals import CannotProceed
from ..engine.floats import FloatValue
from ..torch_layer import dtypes as D
from ..torch_layer.branched import Branched
from ..torch_layer.context import current
from ..torch_layer.tensor import Tensor
from .blocks import (block, block_methods, broadcast_mark, check_range, dtype, float32,
                     float64, int1, is_scalar, modelled, result_dtype, scalar_block, tensor,
                     undefined_of)
from .errors import refuse
from .state import interpreter_arithmetic, launch_option

__all__ = ["BlockOperators", "as_block", "binary", "cast", "div_rn", "fdiv", "reshape"]


def as_block(x, dtype_: dtype) -> tensor:
    """``x`` (a block or a Python number) as a block of ``dtype_``."""
    if getattr(type(x), "uniform_cases", False):    # a value per part of a uniform: one
        x = x.value()
    if isinstance(x, tensor):
        if x.dtype is dtype_:
            return x
        return cast(x, dtype_)
    if not is_scalar(x):
        raise refuse(f"a {type(x).__name__} in a Triton block operation")
    return scalar_block(x, dtype_)



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
    modelled(dt)
    compare = op in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq,
                     operator.ne)
    if op is operator.truediv and dt.kind != "float":
        dt = float32
    if op in (operator.floordiv, operator.mod, operator.lshift, operator.rshift,
              operator.and_, operator.or_, operator.xor) and dt.kind == "float":
        raise refuse(f"{_OP_TEXT[op]} of {dt.name} blocks (Triton takes integers there)")
    x, y = as_block(a, dt), as_block(b, dt)
    if op in _FUSED and dt.kind == "float" and not current().exact and \
            (x.product or y.product) and launch_option("enable_fp_fusion", True) and \
            not interpreter_arithmetic():
        raise refuse("a float product added or subtracted directly (a * b + c) under --arith: "
                     "Triton's compiler may contract it into one fused multiply-add, rounded "
                     "once; launch the kernel with enable_fp_fusion=False for the run exactspec "
                     "models (or check it as Triton's interpreter runs it, --elementwise numpy)")
    if op is operator.truediv and not precise and dt is not float64 and \
            not current().exact and not interpreter_arithmetic():
        _approximate_division(x, y, dt)
    undefined = undefined_of(x, y)
    if dt.kind == "int" and not compare:
        t = _integer_op(x.t, y.t, op, dt)
    else:
        t = op(x.t, y.t)
    out_dt = int1 if compare else dt
    if undefined is not None:
        undefined = broadcast_mark(undefined, t.shape)
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
                         "quotient, or compare u * q < p; --elementwise numpy checks the "
                         "kernel as Triton's interpreter computes it (IEEE division)")


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
    check_range(out, dt)
    return Tensor.new(out, shape, dt.torch)


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
    modelled(dtype_)
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
        check_range(out._values(), dtype_)
    return tensor(out, dtype_, None, x.undefined)


def reshape(x: tensor, *shape) -> tensor:
    """``tl.reshape(x, shape)``."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    und = x.undefined.reshape(*shape) if x.undefined is not None else None
    return tensor(x.t.reshape(*shape), x.dtype, x.base, und)


def _same_shape(b: tensor, t: Tensor, dtype_: dtype) -> tensor:
    return tensor(t, dtype_, b.base, b.undefined, False)



@block_methods
class BlockOperators:
    """A block's operators, ``.to``/``.cast`` and ``.reshape`` (methods of
    :class:`~.language.tensor`)."""

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

    def to(self, dtype_, fp_downcast_rounding=None, bitcast=False):
        return cast(self, dtype_, fp_downcast_rounding, bitcast)

    def cast(self, dtype_, fp_downcast_rounding=None, bitcast=False):
        return cast(self, dtype_, fp_downcast_rounding, bitcast)

    def reshape(self, *shape, can_reorder=False):
        return reshape(self, *shape)
