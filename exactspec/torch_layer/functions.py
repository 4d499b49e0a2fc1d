"""The layer's functions beyond a tensor's own methods: ``where``, ``gather``, ``scatter``,
``take_along_dim``, ``cat``, ``stack``, ``softmax``, and ``exp``/``log`` of one element.

>>> from .tensor import Tensor
>>> t = Tensor.of([[1, 2, 3], [4, 5, 6]])
>>> gather(t, 1, Tensor.of([[2, 0], [1, 1]])).tolist()
[[3, 1], [5, 5]]
>>> softmax(Tensor.of([Fraction(0), Fraction(0)]), 0).tolist()
[Fraction(1, 2), Fraction(1, 2)]
"""

from __future__ import annotations

import math
import operator
from fractions import Fraction

from ..engine import floats
from ..engine.floats import FloatValue
from . import dtypes as D
from .context import current, refuse, undecided
from .dispatch import INDEX, SELECT
from .log_rationals import LogRational, rational_root, softmax_row as log_softmax_row
from .tensor import OPS, Tensor, as_tensor, broadcast_shapes, check_size, decide, dim_index, \
    multi_indices, read, result_type
from .values import (HALF_FORMATS, UNSET, arith, cast, cast_row, check_python_int,
                     exact_number, is_nan, is_random, scalar_to)

__all__ = ["where", "gather", "scatter_into", "scatter_add_into", "take_along_dim", "cat",
           "stack", "softmax", "log_softmax", "one_hot", "isclose", "searchsorted",
           "exp_value", "log_value"]


def where(condition, x=None, y=None):
    """``torch.where(condition, x, y)``: ``x`` where the condition holds, else ``y``;
    ``torch.where(condition)`` is ``condition.nonzero(as_tuple=True)``, as in torch."""
    condition = as_tensor(condition)
    if x is None and y is None:
        return condition.nonzero(as_tuple=True)
    if x is None or y is None:
        raise refuse("where takes a condition alone, or a condition and two values")
    if condition.dtype is not D.bool_:
        raise refuse(f"where: the condition is a {condition.dtype.name} tensor; torch takes a "
                     "bool tensor (compare it, or .bool())")
    check_python_int(x)
    check_python_int(y)
    dtype = result_type(x, y)
    if dtype.name not in HALF_FORMATS:        # torch 2.14 refuses a number beyond float32 or
        for v in (x, y):                      # int64 here (a half one becomes inf)
            if not isinstance(v, Tensor):
                scalar_to(v, dtype)
    shapes = [t._shape for t in (condition, x, y) if isinstance(t, Tensor)]
    shape = broadcast_shapes(*shapes)
    n = check_size(math.prod(shape), f"torch.where of shape {list(shape)}")
    cv = condition._expanded_values(shape)
    xv = x._expanded_values(shape) if isinstance(x, Tensor) else [x] * n
    yv = y._expanded_values(shape) if isinstance(y, Tensor) else [y] * n
    if all(type(c) is bool for c in cv):       # a plain mask: the values chosen, cast once
        return Tensor.new(cast_row([a if c else b for c, a, b in zip(cv, xv, yv)], dtype),
                          shape, dtype)
    return Tensor.new([_where_one(cast(c, D.bool_), a, b, dtype) for c, a, b in zip(cv, xv, yv)],
                      shape, dtype)


def _where_one(c, a, b, dtype):
    if type(c) in SELECT and a is not UNSET and b is not UNSET:
        # a value type's own choice: a split not yet decided selects a token per outcome (a
        # mixture; other values: the split read as a bool)
        chosen = SELECT[type(c)](c, a, b, dtype, cast)
        if chosen is not None:
            return chosen
    return cast(a if c else b, dtype)


def _index_tensor(index) -> Tensor:
    index = as_tensor(index)
    if index.dtype.kind != "int":
        raise refuse(f"an index tensor must be of an integer dtype, not {index.dtype.name}")
    return index


def gather(t: Tensor, dim, index) -> Tensor:
    """``out[i][j] = t[index[i][j]][j]`` along ``dim`` (the shape of ``index``)."""
    index = _index_tensor(index)
    d = dim_index(dim, t.ndim)
    if index.ndim != t.ndim:
        raise refuse("gather: index and input must have the same number of dimensions")
    data = t._st.data
    out = []
    for idx, i in zip(multi_indices(index._shape), index._values()):
        n = t._shape[d]
        if type(i) in INDEX:                    # the draft's index on every branch: checked
            i = INDEX[type(i)](i, n, "gather: ")  # and wrapped into 0..n-1 on each
        elif not -n <= i < n:
            raise refuse(f"gather: index {i} is out of bounds for dimension {d} of size {n}")
        else:
            i = i % n
        pos = t._off
        for k, (c, st) in enumerate(zip(idx, t._strides)):
            if k != d and c >= t._shape[k]:
                raise refuse("gather: index is larger than the input outside the gathered "
                             "dimension")
            pos += (i if k == d else c) * st
        out.append(read(data, pos))
    return Tensor.new([cast(v, t.dtype) for v in out], index._shape, t.dtype)


def take_along_dim(t: Tensor, indices, dim=None) -> Tensor:
    """``torch.take_along_dim``: ``gather`` after broadcasting the other dimensions."""
    indices = _index_tensor(indices)
    if dim is None:
        return gather(t.reshape(-1), 0, indices.reshape(-1))
    d = dim_index(dim, t.ndim)
    shape_t, shape_i = list(t._shape), list(indices._shape)
    shape_t[d] = shape_i[d] = 1
    common = list(broadcast_shapes(tuple(shape_t), tuple(shape_i)))
    t_shape, i_shape = list(common), list(common)
    t_shape[d], i_shape[d] = t._shape[d], indices._shape[d]
    return gather(t.expand(t_shape), d, indices.expand(i_shape))


def scatter_into(t: Tensor, dim, index, src, reduce=None) -> Tensor:
    """``t.scatter_(dim, index, src)``: ``t[index[i][j]][j] = src[i][j]`` along ``dim`` (a
    number ``src`` fills).  Several writes to one place: the last one wins here; torch does not
    say which wins, so a rule whose result depends on it is refused."""
    if reduce is not None:
        raise refuse("scatter with reduce= is outside exactspec's tensor layer")
    index = _index_tensor(index)
    d = dim_index(dim, t.ndim)
    _same_dtype("scatter", t, src)
    if isinstance(src, Tensor):
        values = src[tuple(slice(0, n) for n in index._shape)]._values() if src.ndim else \
            src._values() * index.numel()
    else:
        values = [src] * index.numel()
    positions, seen = [], {}
    for idx, i, v in zip(multi_indices(index._shape), index._values(), values):
        n = t._shape[d]
        if not -n <= i < n:
            raise refuse(f"scatter: index {i} is out of bounds for dimension {d} of size {n}")
        pos = t._off + sum((i % n if k == d else c) * st
                           for k, (c, st) in enumerate(zip(idx, t._strides)))
        v = cast(v, t.dtype)
        if pos in seen and not _same(seen[pos], v):
            raise refuse("scatter writes different values to one place: which one torch keeps "
                         "depends on the hardware's order")
        seen[pos] = v
        positions.append(pos)
    t._write(positions, [seen[p] for p in positions])
    return t


def _same_dtype(what, t, src) -> None:
    """torch's scatter ops take a ``src`` tensor of the destination's dtype only."""
    if isinstance(src, Tensor) and src.dtype is not t.dtype:
        raise refuse(f"{what}: src is {src.dtype.name}, the tensor {t.dtype.name}; torch takes "
                     "the same dtype (convert src with .to)")


def scatter_add_into(t: Tensor, dim, index, src) -> Tensor:
    """``t.scatter_add_(dim, index, src)``: ``t[index[i][j]][j] += src[i][j]`` along ``dim``.
    Exact and integer sums do not depend on their order; a float place that receives two
    values under ``--arith`` is refused (torch does not fix the order of the additions)."""
    index = _index_tensor(index)
    d = dim_index(dim, t.ndim)
    _same_dtype("scatter_add", t, src)
    src = as_tensor(src)
    values = src[tuple(slice(0, n) for n in index._shape)]._values()
    ordered = t.dtype.kind != "float" or current().exact
    adds: dict = {}
    for idx, i, v in zip(multi_indices(index._shape), index._values(), values):
        n = t._shape[d]
        if not -n <= i < n:
            raise refuse(f"scatter_add: index {i} is out of bounds for dimension {d} of size "
                         f"{n}")
        pos = t._off + sum((i % n if k == d else c) * st
                           for k, (c, st) in enumerate(zip(idx, t._strides)))
        if pos in adds and not ordered:
            raise refuse(f"scatter_add of two {t.dtype.name} values into one place under "
                         "--arith: their rounded sum depends on the hardware's order")
        adds.setdefault(pos, []).append(cast(v, t.dtype))
    data = t._st.data
    positions = list(adds)
    sums = []
    for pos in positions:
        total = cast(read(data, pos), t.dtype)
        for v in adds[pos]:
            total = arith(operator.add, total, v)
        sums.append(total)
    t._write(positions, sums)
    return t


def one_hot(tensor, num_classes=-1) -> Tensor:
    """``F.one_hot``: an ``int64`` tensor with one more dimension of ``num_classes``."""
    tensor = _index_tensor(tensor)
    values = tensor._values()
    if num_classes == -1:
        num_classes = max(values) + 1 if values else 0
    if any(not 0 <= v < num_classes for v in values):
        raise refuse(f"one_hot: a class outside 0..{num_classes - 1}")
    check_size(len(values) * num_classes, f"one_hot with {num_classes} classes")
    flat = [int(v == c) for v in values for c in range(num_classes)]
    return Tensor.new(flat, list(tensor._shape) + [num_classes], D.int64)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> Tensor:
    """``torch.isclose``: ``|a - b| <= atol + rtol * |b|``, decided on the exact values (the
    tolerances at their exact binary values)."""
    a, b = as_tensor(a), as_tensor(b)
    shape = broadcast_shapes(a._shape, b._shape)
    out = []
    for x, y in zip(a._expanded_values(shape), b._expanded_values(shape)):
        if is_random(x) or is_random(y):
            raise undecided("isclose of a random value is beyond the exact method")
        x, y = exact_number(x), exact_number(y)
        if is_nan(x) or is_nan(y):
            out.append(bool(equal_nan and is_nan(x) and is_nan(y)))
        elif isinstance(x, float) or isinstance(y, float):     # an infinity
            out.append(x == y)
        else:
            out.append(decide(operator.le, abs(x - y),
                              Fraction(atol) + Fraction(rtol) * abs(y)))
    return Tensor.new(out, shape, D.bool_)


def log_softmax(t: Tensor, dim=-1, dtype=None) -> Tensor:
    """``log_softmax``: the log of :func:`softmax` (exact values; refused under ``--arith``,
    as a float ``softmax`` is)."""
    if not current().exact:
        raise refuse("log_softmax under --arith: torch's CPU kernel takes SLEEF's vectorised "
                     "log (1 ulp, not correctly rounded) of the kernel's sum and subtracts "
                     "the max and that log from each logit, which exactspec does not model; "
                     "use softmax (modelled for float32 with --sum-order torch-avx2), give "
                     "the rule probabilities, or run it exactly")
    return softmax(t, dim, dtype).log()


def _same(a, b) -> bool:
    if is_random(a) or is_random(b):
        return a is b
    return exact_number(a) == exact_number(b)


def cat(tensors, dim=0) -> Tensor:
    """``torch.cat``: the tensors joined along ``dim``."""
    tensors = [as_tensor(t) for t in tensors]
    tensors = [t for t in tensors if not (t.ndim == 1 and t.numel() == 0)] or tensors[:1]
    dtype = result_type(*tensors)
    d = dim_index(dim, tensors[0].ndim)
    for t in tensors:
        if t.ndim != tensors[0].ndim or any(a != b for k, (a, b) in
                                            enumerate(zip(t._shape, tensors[0]._shape)) if k != d):
            raise refuse("cat: tensors must have the same shape except in the joined dimension")
    check_size(sum(t.numel() for t in tensors), f"torch.cat of {len(tensors)} tensors")
    lanes_all = [t._lanes(d)[1] for t in tensors]
    outer = [tensors[0]._shape[k] for k in range(tensors[0].ndim) if k != d]
    joined = [[cast(v, dtype) for lanes in lanes_all for v in lanes[r]]
              for r in range(len(lanes_all[0]))]
    n = sum(t._shape[d] for t in tensors)
    moved = Tensor.new([v for lane in joined for v in lane], outer + [n], dtype)
    inverse = list(range(d)) + [len(outer)] + list(range(d, len(outer)))
    return moved.permute(inverse).contiguous()


def stack(tensors, dim=0) -> Tensor:
    """``torch.stack``: the tensors joined along a new dimension ``dim``."""
    tensors = [as_tensor(t) for t in tensors]
    return cat([t.unsqueeze(dim) for t in tensors], dim)


def searchsorted(sorted_sequence, values, *, right=False, side=None, out_int32=False,
                 sorter=None):
    """``torch.searchsorted`` over a 1-D sorted row: for each value the number of entries
    ``< value`` (``<=`` with ``right=True``), found by comparing in order from the first (each
    comparison with an explicit uniform is a branch of the engine)."""
    if sorter is not None:
        raise refuse("searchsorted with sorter= is outside exactspec's tensor layer")
    if side is not None:
        right = side == "right"
    seq = as_tensor(sorted_sequence)
    if seq.ndim != 1:
        raise refuse("searchsorted over a sorted row of more than one dimension is outside "
                     "exactspec's tensor layer")
    scalar = not isinstance(values, Tensor)
    vals = as_tensor(values) if not scalar else Tensor.of([values])
    dtype = result_type(seq, vals)
    row = [cast(x, dtype) for x in seq._values()]
    op = operator.le if right else operator.lt
    out = []
    for v in vals._values():
        v = cast(v, dtype)
        count = 0
        while count < len(row) and decide(op, row[count], v):
            count += 1
        out.append(count)
    result_dtype = D.int32 if out_int32 else D.int64
    if scalar:
        return Tensor.new(out, (), result_dtype)
    return Tensor.new(out, vals._shape, result_dtype)


def exp_value(v):
    """``exp`` of one element: exact (a sympy number, a Fraction where it is rational: 1 at
    0, ``1/2`` at ``log(1/2)``, ``r**(1/n)`` at ``log(r) / n`` where that root is rational) or
    correctly rounded."""
    if is_random(v):
        raise undecided("exp of a random value is beyond the exact method")
    if isinstance(v, FloatValue):
        return floats.exp(v)
    if isinstance(v, float):
        return Fraction(0) if v == -math.inf else v
    if v == 0:
        return Fraction(1)
    if type(v) is LogRational and v.c == 0:          # exp(log(r) / n): rational or not
        root = rational_root(v.r, v.n)
        if root is not None:
            return root
    import sympy

    return _rational(sympy.exp(_sympy(v)))


#: The logs of rationals kept by identity (the rows of a rule run once per engine path hold
#: the same rationals on every path): at most this many (a row of 152,064 tokens fits, in
#: tens of megabytes), then forgotten.
LOGS_KEPT = 1 << 18
_LOGS: dict = {}


def log_value(v):
    """``log`` of one element: exact (0 at 1, a :class:`~.log_rationals.LogRational` at a
    positive rational, else a sympy number) or correctly rounded; the log of exponential
    noise is kept for a race (:class:`~.noise.LogNoise`)."""
    if type(v) is Fraction:                 # the common case first: an exact rational
        hit = _LOGS.get(id(v))
        if hit is not None and hit[0] is v:
            return hit[1]
        num = v.numerator
        if num > 0:
            out = Fraction(0) if num == v.denominator else LogRational.log(v)
        else:
            out = -math.inf if num == 0 else math.nan
        if len(_LOGS) >= LOGS_KEPT:
            _LOGS.clear()
        _LOGS[id(v)] = (v, out)             # the rational kept: its id is not reused
        return out
    if hasattr(v, "log_noise"):
        return v.log_noise()
    if is_random(v):
        raise undecided("log of a random value is beyond the exact method")
    if isinstance(v, FloatValue):
        return floats.log(v)
    if isinstance(v, float):
        return v
    if v == 0:
        return -math.inf
    if v < 0:
        return math.nan
    if v == 1:
        return Fraction(0)
    if type(v) is Fraction:                 # log(r): kept exact without sympy
        return LogRational.log(v)
    import sympy

    return _rational(sympy.log(_sympy(v)))


def _rational(r):
    """A sympy result that is rational (``exp(log(1/2))``) as the Fraction it is."""
    return Fraction(int(r.p), int(r.q)) if getattr(r, "is_Rational", False) else r


def _sympy(v):
    import sympy

    if isinstance(v, Fraction):
        return sympy.Rational(v.numerator, v.denominator)
    return sympy.sympify(v)


def softmax(t: Tensor, dim=-1, dtype=None) -> Tensor:
    """``softmax`` along ``dim``: ``exp(x - max) / sum``; exact, or rounded as the format does.

    In the exact run the result is rational when every finite logit of a row is equal (a
    masked row), and when the logits are logs of rationals sharing a shift (``log(p)``, a
    ``log_softmax``, plus a constant, times a rational or over an integer:
    :mod:`.log_rationals`; ``r_i / sum r`` computed on integers, without sympy); otherwise
    exact sympy numbers; ``-inf`` logits get weight exactly 0."""
    if dim is None:
        raise refuse("softmax needs dim=")
    t = t.to(dtype) if dtype is not None else t
    if t.dtype.kind != "float":
        raise refuse("softmax of a non-float tensor")
    d = dim_index(dim, t.ndim)
    outer, lanes = t._lanes(d)
    rows = []
    for lane in lanes:
        if any(is_random(v) for v in lane):
            raise undecided("softmax of random values is beyond the exact method")
        if current().exact:
            rows.append(_exact_softmax(lane))
        else:
            rows.append(_float_softmax(lane, t.dtype, d, t.ndim))
    moved = Tensor.new([v for row in rows for v in row], list(outer) + [t._shape[d]] if t.ndim
                       else [], t.dtype)
    if not t.ndim:
        return moved
    inverse = list(range(d)) + [t.ndim - 1] + list(range(d, t.ndim - 1))
    return moved.permute(inverse).contiguous()


def _float_softmax(lane, dtype, d: int, ndim: int) -> list:
    """A float softmax row under ``--arith``: a masked row (weights 0 and 1) in any order;
    a ``float32`` row over the last dimension with ``--sum-order torch-avx2`` as torch's AVX2
    CPU kernel computes it (:mod:`.torch_softmax`); any other refused, saying what is not
    modelled and the ways out."""
    if _masked_row(lane):
        return floats.softmax(lane)
    order = str(current().sum_order or "")
    fmt = lane[0].fmt.name if lane and isinstance(lane[0], FloatValue) else dtype.name
    ways = ("run it with --arith float32 --sum-order torch-avx2, give the rule probabilities "
            "instead of logits, or run it exactly (without --arith)")
    if dtype.name != "float32":
        raise refuse(f"softmax of a {dtype.name} row under --arith {fmt}: exactspec models "
                     "torch's CPU softmax for float32 rows only (the float16/bfloat16 kernels "
                     "widen to float32 and call libm's expf on the tail, float64 calls "
                     "SLEEF's double exp: not modelled); " + ways)
    if d != ndim - 1 and ndim > 1:
        raise refuse(f"softmax over dimension {d} of a {ndim}-d tensor under --arith: "
                     "torch's CPU kernel for a dimension other than the last sums in another "
                     "order, not modelled; softmax over the last dimension (transpose first), "
                     "or " + ways[: ways.index(", give")] + " on the last dimension")
    if not order.startswith("torch-avx2"):
        raise refuse("softmax under --arith float32: exactspec models it as torch 2.14's "
                     "AVX2 CPU kernel (SLEEF's vectorised exp at 1 ulp, not correctly "
                     "rounded; an 8-lane sum; a multiplication by the rounded reciprocal), "
                     "which --sum-order torch-avx2 declares (other capabilities, AVX512 and "
                     "the scalar build, round differently and are not modelled); " + ways)
    values = []
    for v in lane:
        x = v.value if isinstance(v, FloatValue) and v.fmt.name == "float32" else None
        if x is None or x != x or x == math.inf:
            raise refuse("softmax under --arith float32 of a row holding +inf, nan or a value "
                         "that is not a float32 number: not modelled; " + ways)
        values.append(x)
    if all(x == -math.inf for x in values):
        return floats.softmax(lane)
    from .torch_softmax import softmax_avx2

    fmt32 = lane[0].fmt
    return [FloatValue(float(x), fmt32) for x in softmax_avx2(values)]


def _masked_row(lane) -> bool:
    """Every finite logit equal (a masked row: weights 0 and 1), no nan."""
    finite = [v for v in lane if not _is_neg_inf(v)]
    if any(is_random(v) or type(v) is not FloatValue for v in finite):
        return False
    return bool(finite) and not any(is_nan(v) for v in finite) and \
        all(decide(operator.eq, exact_number(v), exact_number(finite[0])) for v in finite)


def _is_neg_inf(v) -> bool:
    x = v.value if isinstance(v, FloatValue) else v
    return isinstance(x, float) and x == -math.inf


_SOFTMAX: dict = {}       # exact softmax rows already computed (a rule runs once per path)


def _exact_softmax(lane):
    try:
        key = tuple(lane)
        hit = _SOFTMAX.get(key)
    except TypeError:
        key, hit = None, None
    if hit is not None:
        return list(hit)
    out = _exact_softmax_row(lane)
    if key is not None and len(_SOFTMAX) < 1024:
        _SOFTMAX[key] = tuple(out)
    return out


def _exact_softmax_row(lane):
    finite = [v for v in lane if not (isinstance(v, float) and v == -math.inf)]
    if not finite:
        return [math.nan] * len(lane)
    if any(isinstance(v, float) for v in finite):
        raise refuse("softmax of a row holding inf or nan")
    if all(v == finite[0] for v in finite):
        share = Fraction(1, len(finite))
        return [Fraction(0) if isinstance(v, float) else share for v in lane]
    rational = log_softmax_row(lane)       # logs of rationals sharing a shift: r_i / sum r
    if rational is not None:
        return rational
    import sympy

    top = max(finite, key=lambda v: sympy.N(_sympy(v), 30))
    weights = [Fraction(0) if isinstance(v, float) else sympy.exp(_sympy(v) - _sympy(top))
               for v in lane]
    total = sympy.Add(*[_sympy(w) for w in weights])
    return [w if w == 0 else w / total for w in weights]


OPS.update(where=where, gather=gather, scatter_into=scatter_into, softmax=softmax,
           scatter_add_into=scatter_add_into, one_hot=one_hot, isclose=isclose,
           log_softmax=log_softmax,
           exp_value=exp_value, log_value=log_value)
