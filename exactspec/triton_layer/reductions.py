"""Reductions and scans of a block: sums, extremes and their indices, running sums.

``tl.sum`` sums ``bool`` and integers narrower than 32 bits as ``int32`` and
``float16``/``bfloat16`` as ``float32``; ``tl.cumsum`` keeps ``float16`` and sums ``bfloat16``
as ``float32``.  Under ``--arith`` the GPU adds a block's floats in an order its layout decides
(the elements of a thread in turn, then a butterfly across lanes and warps): a float sum (or
running sum) whose lane holds at most two nonzero terms is the same in every order; a longer
one is taken in the run's declared ``--sum-order`` (``sequential``: left to right, each
addition rounded into the dtype; ``correctly-rounded``: the exact sum rounded once), and
refused without one.  Integers, and the exact run, add the halves of the axis element by
element (the butterfly; every order gives the same there).  ``tl.max``/``tl.min``/
``tl.argmax``/``tl.argmin`` return, among equal extremes, the smallest index (Triton's
``tie_break_left=True``, the default; ``False`` is refused); a NaN in their block is refused,
since Triton's result then depends on the reduction's order.  The reductions are the block's
methods too (:class:`BlockReductions`).

>>> from .creation import arange
>>> sum(arange(0, 4)).t.item(), argmax(arange(0, 4), 0).t.item()
(6, 3)
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

from ..core.integer_rows import fractions_over, integer_row
from ..core.signals import CannotProceed
from ..engine.floats import FORMATS, FloatValue
from ..torch_layer import dtypes as D
from ..torch_layer import functions as _fn
from ..torch_layer.branched import Branched, LawIndex
from ..torch_layer.context import current
from ..torch_layer.dispatch import OPS
from ..torch_layer.noise import race_maximum
from ..torch_layer.tensor import Tensor
from .operators import cast, reshape
from .blocks import (bfloat16, block, block_methods, dtype, float16, float32, has_nan, int32,
                     tensor)
from .errors import refuse

__all__ = ["BlockReductions", "argmax", "argmin", "cumsum", "max", "min", "sum"]

_builtin_max, _builtin_sum = max, sum


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
    if x.dtype.kind == "float" and has_nan(x.t):
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
    themselves when some weight is positive (a positive score beats them almost surely), and
    are the number 0 when every weight is 0 (``0 / E``: a tile whose residual is zero)."""
    if largest:
        races = [i for i, v in enumerate(lane) if type(v).__name__ == "RaceScore"]
        if races and len(races) < len(lane):
            raced = set(races)
            plain = [v for i, v in enumerate(lane) if i not in raced]
            if all(lane[i].over and _zero_weight(lane[i].weight) for i in races):
                # every score is 0 / E = 0 (a tile whose residual is all zero): numbers
                t = Tensor.new([Fraction(0) if i in raced else v for i, v in enumerate(lane)],
                               (len(lane),), dt)
                return t.argmax()._values()[0]
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
                    return LawIndex(probs, won.what, race=won.race)
                raise CannotProceed("a race among a kernel's lanes not decided")
    t = Tensor.new(list(lane), (len(lane),), dt)
    return (t.argmax() if largest else t.argmin())._values()[0]


def _not_positive(v) -> bool:
    if isinstance(v, FloatValue):
        v = v.value
    if isinstance(v, (int, Fraction)) or (isinstance(v, float) and v == v):
        return v <= 0
    return False


def _zero_weight(w) -> bool:
    if isinstance(w, FloatValue):
        w = w.value
    return isinstance(w, (int, Fraction, float)) and w == 0


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


def _extreme_at(lane: list, i):
    """The extreme of a lane at its index ``i``; where ``i`` is a race's winner kept as its
    law (a vectorised route), the race's maximum (:func:`~exactspec.torch_layer.noise.
    race_maximum`: ``W / E`` in law, whichever token won)."""
    if getattr(type(i), "lazy_count", False):       # the first lane a lazy comparison holds
        return OPS["lazy_lane_extreme"](lane, True, False)
    if type(i) is not LawIndex:
        return lane[i]
    if i.race is None:
        raise CannotProceed(f"the value at the {i.what} token read")
    return race_maximum(i)


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
        values = Tensor.new([_extreme_at(lane, i) for lane, i in zip(lanes, idx._values())],
                            outer, x.t.dtype)
        return (block(_keep(values, ax, keep_dims, nd), x.dtype),
                block(_keep(idx, ax, keep_dims, nd), int32))
    if getattr(current().sampler, "lazy_compare", None) is not None and \
            any(getattr(type(v), "lazy_count", False) for v in x.t._values()):
        # lazy comparisons of a uniform (a factored run): their maximum, no index needed
        outer, lanes = x.t._lanes(ax)
        values = Tensor.new([OPS["lazy_lane_extreme"](lane, largest, False) for lane in lanes],
                            outer, x.t.dtype)
        return block(_keep(values, ax, keep_dims, nd), x.dtype)
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


def _exact_running_sum(values: list) -> list | None:
    """The running sums of a lane of exact rationals, over one common denominator (``None``
    for a lane with another value, or denominators too large to share)."""
    if not all(type(v) is Fraction for v in values):
        return None
    row = integer_row(values)
    if row is None:
        return None
    ints, d = row
    return fractions_over(list(itertools.accumulate(ints)), d)


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
    if dtype.kind == "float" and current().exact and t.ndim == 1:
        exact = _exact_running_sum(t._values())
        if exact is not None:        # exact sums are the same in every order: by integers
            out = Tensor.new(exact, t.shape, dtype.torch)
            return block(out.flip(0).contiguous() if reverse else out, dtype)
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


@block_methods
class BlockReductions:
    """A block's reductions and scans (methods of :class:`~.language.tensor`)."""

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
