"""The tensor's reductions, running sums and sorts, in the orders :mod:`.tensor` declares.

``sum`` (left to right up to :data:`~.tensor_core.SUM_TERMS` float terms under ``--arith``,
longer sums in the run's ``--sum-order``), ``cumsum``/``cumprod`` (torch's accumulators),
``argmax``/``argmin``/``max``/``min`` (the first index on ties, a NaN wins), ``sort`` (stable
where torch's CPU kernel was measured stable), ``topk`` (an index of tied values a
:class:`TieOrder`, refused where it is used).

>>> t = Tensor.of([[3, 1], [2, 2]])
>>> t.sum(0).tolist(), t.sum().item(), t.cumsum(1).tolist()
([5, 3], 8, [[3, 4], [2, 4]])
"""

from __future__ import annotations

import functools
import math
import operator
from fractions import Fraction

from ..core.integer_rows import exact_sum
from ..engine.floats import FORMATS, FloatValue
from . import dtypes as D
from .context import current, refuse, undecided
from .dispatch import OPS
from .tensor_core import (SUM_TERMS, STABLE_SORT_LANE, Tensor, ValuesIndices, dim_index,
                          index_value, tensor_methods)
from .tensor_elements import cast_format, decide, same_value
from .tensor_elementwise import tensor_extreme
from .values import arith, cast, is_nan, is_random

__all__ = ["TensorReductions", "TieOrder", "lane_sum", "running_sum", "running_product",
           "running", "arg_index", "tie_ordered", "sorted_order"]


@tensor_methods
class TensorReductions:
    """The tensor's reductions and sorts (methods of :class:`~.tensor_core.Tensor`)."""

    def _lanes(self, dim):
        """``(outer shape, lanes)``: the values along ``dim`` for every other index."""
        d = dim_index(dim, self.ndim)
        if self.ndim == 0:
            return (), [self._values()]
        order = [i for i in range(self.ndim) if i != d] + [d]
        moved = self.permute(order)
        values = moved._values()
        n = self._shape[d]
        lanes = [values[i:i + n] for i in range(0, len(values), n)] if n else \
            [[] for _ in range(math.prod(moved._shape[:-1]))]
        return tuple(moved._shape[:-1]), lanes

    def _reduce(self, dim, keepdim, f, dtype):
        if dim is None:
            out = f(self._values())
            shape = (1,) * self.ndim if keepdim else ()
            return Tensor.new([out], shape, dtype)
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        if len(dims) > 1:
            t = self
            for dd in sorted((dim_index(x, self.ndim) for x in dims), reverse=True):
                t = t._reduce(dd, keepdim, f, dtype)
            return t
        d = dim_index(dims[0], self.ndim)
        outer, lanes = self._lanes(d)
        shape = list(outer)
        if keepdim and self.ndim:
            shape.insert(d, 1)
        return Tensor.new([f(lane) for lane in lanes], shape, dtype)

    def sum(self, dim=None, keepdim=False, dtype=None):
        out_dtype = dtype or (self.dtype if self.dtype.kind == "float" else D.int64)
        return self._reduce(dim, keepdim, lambda lane: lane_sum(lane, out_dtype), out_dtype)

    def mean(self, dim=None, keepdim=False):
        if self.dtype.kind != "float":
            raise refuse("mean of a non-float tensor (torch refuses it too)")
        total = self.sum(dim, keepdim)
        count = self.numel() // max(1, total.numel())
        return total / count

    def cumsum(self, dim, dtype=None):
        """The running sum along ``dim``, exact in the exact run, under ``--arith`` accumulated
        as torch's CPU kernel accumulates it (see :meth:`cumprod`)."""
        return self._running_along(dim, dtype, running_sum)

    def cumprod(self, dim, dtype=None):
        """The running product along ``dim`` (the accepted prefix as ``accepted.cumprod(1)``):
        integers and bools exactly (as ``int64``), floats exactly in the exact run and, under
        ``--arith``, accumulated as torch's CPU kernel accumulates them (``float64`` for
        ``float32`` and ``float64``, ``float32`` for ``float16``/``bfloat16``), each output
        rounded to the dtype."""
        return self._running_along(dim, dtype, running_product)

    def _running_along(self, dim, dtype, accumulated):
        out_dtype = dtype or (self.dtype if self.dtype.kind == "float" else D.int64)
        d = dim_index(dim, self.ndim)
        order = [i for i in range(self.ndim) if i != d] + [d]
        moved = self.permute(order) if self.ndim else self.reshape(1)
        out = Tensor.new([None] * self.numel(), moved._shape, out_dtype)
        _, lanes = self._lanes(d) if self.ndim else ((), [self._values()])
        out._st.data[:] = [v for lane in lanes for v in accumulated(lane, out_dtype)]
        inverse = [order.index(i) for i in range(self.ndim)]
        return (out.permute(inverse) if self.ndim else out.reshape(())).contiguous()

    def _arg(self, dim, keepdim, largest):
        if dim is None:
            flat = self.reshape(-1) if self.is_contiguous() else self.clone().reshape(-1)
            i = arg_index(flat._values(), largest)
            return Tensor.new([i], (1,) * self.ndim if keepdim else (), D.int64)
        return self._reduce(dim, keepdim, lambda lane: arg_index(lane, largest), D.int64)

    def _no_bool_arg(self, name):
        if self.dtype is D.bool_:               # torch: "argmax_cpu" not implemented for 'Bool'
            raise refuse(f"{name} of a bool tensor (torch refuses it): convert it with .int() "
                         "or use max(dim)")

    def argmax(self, dim=None, keepdim=False):
        self._no_bool_arg("argmax")
        return self._arg(dim, keepdim, True)

    def argmin(self, dim=None, keepdim=False):
        self._no_bool_arg("argmin")
        return self._arg(dim, keepdim, False)

    def _extreme_reduce(self, dim, keepdim, largest, other):
        if other is not None:
            return tensor_extreme(self, other, maximum=largest)
        if dim is None:
            values = self._values()
            return Tensor.new([values[arg_index(values, largest)]], (), self.dtype)
        idx = self._arg(dim, keepdim, largest)
        outer, lanes = self._lanes(dim)
        vals = [lane[i] if not getattr(type(i), "lazy_count", False) else
                OPS["lazy_lane_extreme"](lane, largest, self.dtype is D.bool_)
                for lane, i in zip(lanes, idx._values())]
        return ValuesIndices(Tensor.new(vals, idx._shape, self.dtype), idx)

    def max(self, dim=None, keepdim=False, other=None):
        if isinstance(dim, Tensor):
            dim, other = None, dim
        return self._extreme_reduce(dim, keepdim, True, other)

    def min(self, dim=None, keepdim=False, other=None):
        if isinstance(dim, Tensor):
            dim, other = None, dim
        return self._extreme_reduce(dim, keepdim, False, other)

    def amax(self, dim=None, keepdim=False):
        r = self.max(dim, keepdim)
        return r.values if isinstance(r, ValuesIndices) else r

    def any(self, dim=None, keepdim=False):
        return self._reduce(dim, keepdim, lambda lane: any(cast(v, D.bool_) for v in lane),
                            D.bool_)

    def all(self, dim=None, keepdim=False):
        return self._reduce(dim, keepdim, lambda lane: all(cast(v, D.bool_) for v in lane),
                            D.bool_)

    def sort(self, dim=-1, descending=False, stable=False):
        d = dim_index(dim, self.ndim)
        outer, lanes = self._lanes(d)
        orders = [sorted_order(lane, descending) for lane in lanes]
        indices = orders if stable or not lanes or len(lanes[0]) <= STABLE_SORT_LANE else \
            [tie_ordered(lane, o, o, "sort(stable=False) on a lane of more than "
                          f"{STABLE_SORT_LANE} elements") for lane, o in zip(lanes, orders)]
        return self._from_lanes(d, [[lane[i] for i in o] for lane, o in zip(lanes, orders)],
                                indices, len(lanes[0]) if lanes else 0)

    def argsort(self, dim=-1, descending=False, stable=False):
        return self.sort(dim, descending, stable).indices

    def topk(self, k, dim=-1, largest=True, sorted=True):
        k = index_value(k)
        d = dim_index(dim, self.ndim)
        outer, lanes = self._lanes(d)
        if lanes and not 0 <= k <= len(lanes[0]):
            raise refuse(f"topk: k={k} is out of range for a dimension of {len(lanes[0])}")
        orders = [sorted_order(lane, largest) for lane in lanes]
        return self._from_lanes(d, [[lane[i] for i in o[:k]] for lane, o in zip(lanes, orders)],
                                [tie_ordered(lane, o[:k], o, "topk")
                                 for lane, o in zip(lanes, orders)], k)

    def _from_lanes(self, d, value_lanes, index_lanes, n):
        outer = [self._shape[i] for i in range(self.ndim) if i != d]
        moved = outer + [n]
        inverse = list(range(d)) + [self.ndim - 1] + list(range(d, self.ndim - 1))
        vals = Tensor.new([v for lane in value_lanes for v in lane], moved, self.dtype)
        idx = Tensor.new([v for lane in index_lanes for v in lane], moved, D.int64)
        if self.ndim == 0:
            return ValuesIndices(vals.reshape(()), idx.reshape(()))
        return ValuesIndices(vals.permute(inverse).contiguous(),
                             idx.permute(inverse).contiguous())

    def gather(self, dim, index):
        return OPS["gather"](self, dim, index)

    def softmax(self, dim=-1, dtype=None):
        return OPS["softmax"](self, dim, dtype)

    def multinomial(self, num_samples, replacement=False, generator=None):
        return OPS["multinomial"](self, num_samples, replacement)


def lane_sum(lane, dtype):
    """The sum of one lane in ``dtype``, in the order :mod:`.tensor` declares."""
    if dtype.kind != "float":
        values = [cast(v, dtype) for v in lane]
        lazy = next((v for v in values if getattr(type(v), "lazy_count", False)), None)
        if lazy is not None:             # an inverse-CDF count: its comparisons at once
            return type(lazy).summed(values)
        return sum(values, 0)
    lane = [cast(v, dtype) for v in lane]
    if any(is_random(v) for v in lane):
        raise undecided("the sum of random values is beyond the exact method")
    run = current()
    if run.exact:
        if all(type(v) is Fraction for v in lane):
            return exact_sum(lane)          # the same exact sum, by integers
        total = Fraction(0)
        for v in lane:
            total = arith(operator.add, total, v)
        return total
    if run.sum_order is not None:
        from ..engine.float_sums import float_sum

        fmt = FORMATS[dtype.name]
        return FloatValue(float_sum([v.value for v in lane], fmt, run.sum_order), fmt)
    if len(lane) > SUM_TERMS:
        raise refuse(f"a {dtype.name} sum of {len(lane)} terms under --arith: its rounding "
                     "depends on the kernel's summation order; declare one with --sum-order "
                     "(sequential, correctly-rounded, torch-avx2)")
    acc = FORMATS["float32"] if dtype.rank == 1 else FORMATS[dtype.name]
    total = FloatValue(0.0, acc)
    for v in lane:
        total = total + FloatValue(acc.round(Fraction(v.value)) if math.isfinite(v.value)
                                   else v.value, acc)
    return cast(total, dtype)


def running_sum(lane, dtype):
    """``cumsum`` of one lane (see :func:`running`)."""
    return running(lane, dtype, operator.add, 0, "sum")


def running_product(lane, dtype):
    """``cumprod`` of one lane (see :func:`running`)."""
    return running(lane, dtype, operator.mul, 1, "product")


def running(lane, dtype, op, start: int, what: str):
    """The cumulative ``op`` of ``lane`` (``cumsum``, ``cumprod``): exact in the exact run and
    for integers; under ``--arith`` accumulated in float64 for float32 and float64 values, in
    float32 for float16 and bfloat16, each partial result rounded into the dtype."""
    lane = [cast(v, dtype) for v in lane]
    if any(is_random(v) for v in lane):
        raise undecided(f"the cumulative {what} of random values is beyond the exact method")
    if dtype.kind != "float" or current().exact:
        out, total = [], (start if dtype.kind != "float" else Fraction(start))
        for v in lane:
            total = arith(op, total, v)
            out.append(total)
        return out
    acc = FORMATS["float64"] if dtype.rank >= 2 else FORMATS["float32"]
    total = FloatValue(float(start), acc)
    out = []
    for v in lane:
        total = op(total, cast_format(v, acc))
        out.append(cast(total, dtype))
    return out


def arg_index(values, largest: bool) -> int:
    """The first index of the largest (smallest) value; a NaN wins."""
    if not values:
        raise refuse("argmax/argmin of an empty tensor")
    raced = OPS["race_index"](values, largest)
    if raced is not None:
        return raced
    if any(getattr(type(v), "lazy_count", False) for v in values):   # a factored run's
        return OPS["lazy_lane_first"](values, largest)             # inverse-CDF lookup
    best = 0
    if is_nan(values[0]):
        return 0
    for i in range(1, len(values)):
        v = values[i]
        if is_nan(v):
            return i
        if decide(operator.gt if largest else operator.lt, v, values[best]):
            best = i
    return best


class TieOrder:
    """An index that ``topk`` (or an unstable ``sort``) returns for a value tied with another
    value of its lane: torch leaves the order of tied indices unspecified (and its CPU kernel
    does not keep index order), so the layer does not model it; any use of the index (as an
    index, a number, a comparison) is refused with the user's line.  The values returned
    beside it are exact."""

    __slots__ = ("index", "what")

    def __init__(self, index: int, what: str):
        self.index, self.what = index, what

    def _refuse(self, *args):
        raise refuse(f"an index of tied values from {self.what}: torch leaves the order of "
                     "tied indices unspecified (its CPU kernel does not keep index order), "
                     "which exactspec does not model; break the ties or use stable=True sort")

    __index__ = __int__ = __float__ = __bool__ = __hash__ = _refuse
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __truediv__ = __rtruediv__ = __floordiv__ = __mod__ = __neg__ = _refuse

    def __repr__(self):
        return f"TieOrder({self.index})"


def tie_ordered(lane, chosen, order, what) -> list:
    """``chosen`` (indices into ``lane``), each replaced by a :class:`TieOrder` when its value
    is tied with another value of the lane (``order`` is the lane sorted)."""
    tied = set()
    for a, b in zip(order, order[1:]):
        x, y = lane[a], lane[b]
        if (is_nan(x) and is_nan(y)) or (not is_nan(x) and not is_nan(y) and same_value(x, y)):
            tied.update((a, b))
    return [TieOrder(i, what) if i in tied else i for i in chosen]


def sorted_order(values, descending: bool) -> list:
    """The indices of ``values`` in stable sorted order (ascending, or ``descending``); NaN
    sorts as the largest."""
    def compare(i, j):
        a, b = values[i], values[j]
        na, nb = is_nan(a), is_nan(b)
        if na or nb:
            c = (1 if na else 0) - (1 if nb else 0)     # NaN is the largest
        else:
            c = -1 if decide(operator.lt, a, b) else (1 if decide(operator.lt, b, a) else 0)
        return -c if descending else c

    return sorted(range(len(values)), key=functools.cmp_to_key(compare))
