"""Elementwise functions of blocks: ``tl.where``, ``tl.maximum``/``minimum``, ``tl.exp``/``log``.

``tl.where``'s two values are promoted as a binary operation's (:mod:`.operators`).
``tl.maximum``/``tl.minimum`` with a NaN are refused unless
``propagate_nan=tl.PropagateNan.ALL`` (then NaN wins, as the tensor layer's).
``tl.exp``/``tl.log`` (and ``libdevice``'s) are the tensor layer's in the exact run (so
``-tl.log(u)`` of uniforms is exponential noise) and refused under ``--arith``: the GPU
computes them with approximate instructions (with ``--elementwise numpy`` they are NumPy's, as
Triton's interpreter computes them).  ``.exp()`` and ``.log()`` are the block's
(:class:`BlockFunctions`).

>>> from .blocks import int32, scalar_block
>>> maximum(scalar_block(2, int32), 3).t.item(), cdiv(10, 4)
(3, 3)
"""

from __future__ import annotations

import operator

from ..torch_layer import dtypes as D
from ..torch_layer import functions as _fn
from ..torch_layer.context import current
from ..torch_layer.tensor import Tensor
from .operators import as_block, binary, cast
from .blocks import (KIND, PropagateNan, block, block_methods, broadcast_mark, float32, has_nan,
                     int1, modelled, result_dtype, scalar_block, scalar_dtype, scalar_kind,
                     tensor, undefined_of)
from .errors import refuse
from .state import interpreter_arithmetic

__all__ = ["BlockFunctions", "abs_", "cdiv", "clamp", "exp", "log", "maximum", "minimum",
           "where"]

_builtin_max, _builtin_min = max, min


def where(condition, x, y) -> tensor:
    """``tl.where(condition, x, y)``: ``x`` and ``y`` promoted as a binary operation's."""
    if not isinstance(condition, tensor):
        condition = scalar_block(bool(condition), int1)
    if condition.dtype.kind != "bool":
        condition = binary(condition, 0, operator.ne)
    if not isinstance(x, tensor) and not isinstance(y, tensor):
        dt = scalar_dtype(y) if KIND[scalar_kind(y)] > KIND[scalar_kind(x)] \
            else scalar_dtype(x)
    else:
        dt = result_dtype(x, y)
    modelled(dt)
    xb, yb = as_block(x, dt), as_block(y, dt)
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
    undefined = broadcast_mark(undefined, t.shape)
    return block(t, dt, undefined)


def _extreme(x, y, propagate_nan, largest: bool) -> tensor:
    name = "tl.maximum" if largest else "tl.minimum"
    dt = result_dtype(x, y) if isinstance(x, tensor) or isinstance(y, tensor) else None
    if dt is None:
        return (_builtin_max if largest else _builtin_min)(x, y)
    modelled(dt)
    xb, yb = as_block(x, dt), as_block(y, dt)
    if dt.kind == "float" and propagate_nan != PropagateNan.ALL and \
            (has_nan(xb.t) or has_nan(yb.t)):
        raise refuse(f"{name} of a NaN with propagate_nan=NONE (the GPU's max.f32 drops it, "
                     "exactspec does not model that): pass propagate_nan=tl.PropagateNan.ALL")
    t = xb.t.maximum(yb.t) if largest else xb.t.minimum(yb.t)
    und = undefined_of(xb, yb)
    return block(t, dt, broadcast_mark(und, t.shape))


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
    if not current().exact and not interpreter_arithmetic():
        raise refuse(f"{name} under --arith: the GPU computes it with an approximate "
                     "instruction (ex2.approx/lg2.approx) whose rounding exactspec does not "
                     "model; run it exactly, or with --elementwise numpy as Triton's "
                     "interpreter computes it")
    if current().exact:
        t = x.t.exp() if name.endswith("exp") else x.t.log()
    else:                                        # declared: NumPy's, as the interpreter's
        t = x.t._unary(_numpy_function("exp" if name.endswith("exp") else "log"))
    return block(t, x.dtype, x.undefined)


def _numpy_function(which: str):
    """``exp`` or ``log`` of one element as NumPy computes it in the value's format (on
    every draft branch); any other value (noise, a race) as the tensor layer's."""
    from ..engine.floats import FloatValue, elementwise as library_function
    from ..torch_layer.branched import Branched

    fallback = _fn.exp_value if which == "exp" else _fn.log_value

    def apply(v):
        if type(v) is Branched:
            return v.map(apply)
        if isinstance(v, FloatValue):
            return library_function(which, v, "numpy")
        return fallback(v)

    return apply


def exp(x) -> tensor:
    """``tl.exp``: the tensor layer's ``exp`` (exact run; NumPy's under ``--elementwise
    numpy``)."""
    return _transcendental(x, "tl.exp")


def log(x) -> tensor:
    """``tl.log``: the tensor layer's ``log`` (exact run: ``-log(u)`` is noise; NumPy's under
    ``--elementwise numpy``)."""
    return _transcendental(x, "tl.log")


def abs_(x) -> tensor:
    """``tl.abs``."""
    return block(abs(x.t), x.dtype, x.undefined)


def cdiv(x, div):
    """``tl.cdiv(x, div)``: ``(x + div - 1) // div``."""
    return (x + div - 1) // div


@block_methods
class BlockFunctions:
    """A block's ``.exp()`` and ``.log()`` (methods of :class:`~.language.tensor`)."""

    def exp(self):
        return exp(self)

    def log(self):
        return log(self)
