"""The tensor of the layer: n-d views over a shared storage, with torch's semantics.

A :class:`Tensor` is a view (``shape``, ``strides``, ``offset``) over a :class:`Storage`, a flat
list of elements (:mod:`.values`).  Basic indexing (ints, slices, ``None``, ``...``),
``view``/``reshape`` of a contiguous tensor, ``squeeze``/``unsqueeze``/``expand``/``permute``
are views: writing through them writes the tensor they came from, as in torch.  Advanced
indexing (integer tensors, lists, boolean masks) copies, and assigning through it writes the
positions it names.  Elementwise operations broadcast and promote as torch does
(:mod:`.dtypes`), and in-place operations write into the storage.  Under ``--arith`` a whole
row of ``float32``, ``float16`` or ``float64`` values is computed by NumPy, rounded as the
scalar route rounds (:mod:`.float_rows`).

Orders declared (they matter only under ``--arith``, where rounding depends on them):

- ``sum``: left to right up to :data:`SUM_TERMS` terms (``float16``/``bfloat16`` summed in
  ``float32`` and rounded once at the end); under ``--arith`` a longer float sum is taken in
  the order the run declares (``--sum-order``, :attr:`.context.Run.sum_order`:
  ``sequential``, ``correctly-rounded``, or ``torch-avx2``, PyTorch's CPU kernel on AVX2,
  checked bit for bit against torch 2.13; :mod:`exactspec.engine.float_sums`), and refused
  without one: kernels sum long rows with several accumulators or a tree, an order that
  depends on the machine's vector width and thread count;
- ``cumsum``: a running sum accumulated in ``float64`` for ``float32``/``float64`` (``float32``
  for the half types), each output rounded into the dtype, as torch's CPU kernel does;
- ``argmax``/``argmin``/``max(dim)``/``min(dim)``: the first index on ties (an all-zero row
  gives 0), a NaN wins; ``sort`` is stable (equal values keep their index order, descending
  too; NaN sorts as the largest) with ``stable=True``, and with the default ``stable=False``
  on lanes of at most :data:`STABLE_SORT_LANE` elements, where torch's CPU kernel was
  measured stable; on a longer lane with ties (where it was measured not stable) the indices
  of tied values are :class:`TieOrder` elements, refused where they are used; ``topk`` gives
  the values of that sort's first ``k``, and its index of a value tied with another value of
  the lane is a :class:`TieOrder` element (torch 2.13's CPU ``topk`` was measured returning
  ``[1, 6]`` for the two largest of ``[1, 2, 1, 2, 0, 1, 2, 1]``: neither the set nor the
  order of tied indices is index order);
- ``softmax``: exact in the exact run (rational for logs of rationals sharing a shift,
  :mod:`.log_rationals`; a sympy number where ``exp`` makes one irrational); under
  ``--arith`` a row whose finite logits are all equal (weights 0 and 1) in any order, and a
  ``float32`` row over the last dimension with ``--sum-order torch-avx2`` as torch 2.14's
  AVX2 CPU kernel computes it (:mod:`.torch_softmax`, bit for bit); any other is refused,
  naming what is not modelled (``functions.softmax``).

Half precision (``float16``, ``bfloat16``) as torch's CPU kernels compute it: a
multiplication or division of a half tensor by a Python number (or by a one-element tensor of
another dtype: a 0-dim ``float32`` temperature) is computed in ``float32`` with the number
rounded to ``float32`` and the result rounded once into the half format ("opmath":
``torch.tensor([3.0], dtype=torch.float16) * 0.1`` is ``1229/4096``, not the ``1228/4096`` of
half arithmetic on ``0.1`` rounded to half); ``number / t`` is ``t.reciprocal() * number`` in
every float dtype, as ``Tensor.__rdiv__`` is; an addition, subtraction, comparison, ``where``
or ``clamp`` with a number rounds the number into the half format (through ``float32``) and
computes in it.  An operation of two half values is correctly rounded: torch computes it in
``float32`` and rounds once more, and the two roundings give the correctly rounded result
(``24 >= 2 p + 2`` for ``p`` = 11 and 8 significand bits; below ``bfloat16``'s smallest normal,
where ``float32`` is subnormal too, a product or quotient of two 8-bit significands is never
within ``2**-150`` of a midpoint of ``bfloat16``'s subnormals without being one).
Checked bit for bit against torch 2.14 (``tests/test_torch_half.py``).

Every tensor the layer makes is at most :data:`MAX_ELEMENTS` elements: a larger one (``repeat``,
``expand(...)`` read as a whole, ``torch.zeros(10**6, 10**6)``, a broadcast) is refused before
it is made, with its size (:class:`~exactspec.core.errors.TooLarge`).

Checked against torch 2.13 on CPU (``tests/test_torch_layer.py``, where torch is installed):
the ``cumsum`` accumulator (``float64`` for ``float32``, on ``1 + 2**-24 + ...`` rows where a
``float32`` accumulator loses every term), dtype promotion, division (by zero too), ``clamp``
and ``maximum`` with NaN, ``argmax``/``argmin`` ties, NaN and all-zero rows, ``sort``
stability (stable up to 16 elements, not from 17), ``topk`` on ties (not index order), and
``torch.multinomial(w, 1)``, which equals ``argmax(w / E)`` for ``E`` the exponential
vector drawn from the same generator state.

>>> t = Tensor.of([[1, 2, 3], [4, 5, 6]])
>>> row = t[1]
>>> row[0] = 40
>>> t.tolist()
[[1, 2, 3], [40, 5, 6]]
>>> (t[:, 1:] * Fraction(1, 2)).tolist()
[[Fraction(1, 1), Fraction(3, 2)], [Fraction(5, 2), Fraction(3, 1)]]
>>> Tensor.of([0, 3, 3]).argmax().item()
1
"""

from __future__ import annotations

import functools
import math
import operator
from collections import namedtuple
from fractions import Fraction

from ..core.errors import TooLarge
from ..core.integer_rows import exact_sum
from ..engine.floats import FORMATS, FloatValue
from ..engine.uniform import Uniform, UniformView
from . import dtypes as D
from . import float_rows
from ..core.signals import CannotProceed
from .branched import (Branched, LawIndex, Split, axis_of, rational_extreme,
                       rational_row, select)
from .context import current, refuse, undecided, user_line
from .values import (HALF_FORMATS, UNSET, arith, cast, cast_row, check_python_int, exact_number,
                     is_nan, is_random, opmath_arith, opmath_scalar, scalar_to)

__all__ = ["Tensor", "Storage", "Size", "SUM_TERMS", "STABLE_SORT_LANE", "MAX_ELEMENTS",
           "TieOrder", "result_type", "as_tensor", "broadcast_shapes", "check_size", "dtype_arg",
           "check_device"]

#: Under ``--arith``, the longest float sum taken left to right without a declared order.
SUM_TERMS = 4

#: The longest lane that ``sort(stable=False)`` sorts stably (torch 2.13's CPU kernel was
#: measured stable on every tied lane of up to 16 elements and not stable from 17).
STABLE_SORT_LANE = 16

#: The most elements one tensor of the layer may hold (``2**24``, 16,777,216): every element
#: is a Python object (an exact rational, a value of a float format), so a tensor of this size
#: already takes about a gigabyte and seconds per operation.  An operation that would make a
#: larger one is refused before it is made, with its size (:func:`check_size`); views
#: (``expand``, slices) are not made and may be larger, until their elements are read.
MAX_ELEMENTS = 2 ** 24


def check_size(n: int, what: str) -> int:
    """``n``, the number of elements ``what`` would make; refused (:class:`TooLarge`, with the
    estimate and the budget, naming the user's line) when it is over :data:`MAX_ELEMENTS`."""
    if n > MAX_ELEMENTS:
        err = TooLarge(f"{what} would make a tensor of {n:,} elements, over the tensor layer's "
                       f"budget of {MAX_ELEMENTS:,} (2**24) elements: every element is a Python "
                       f"object ({user_line()})", estimate=n, budget=MAX_ELEMENTS)
        err.located = True
        raise err
    return n


#: Python's number types as a dtype argument, as torch reads them (``dtype=float`` is
#: ``float64``, ``dtype=int`` is ``int64``)
_PYTHON_DTYPES = {float: D.float64, int: D.int64, bool: D.bool_}


def dtype_arg(d):
    """A ``dtype=`` argument as the layer's dtype: a dtype itself, ``None``, or Python's
    ``float``, ``int``, ``bool`` (``float64``, ``int64``, ``bool``, as torch reads them);
    anything else refused.

    >>> dtype_arg(float), dtype_arg(D.float32), dtype_arg(None) is None
    (torch.float64, torch.float32, True)
    """
    if d is None or isinstance(d, D.DType):
        return d
    if isinstance(d, type) and d in _PYTHON_DTYPES:
        return _PYTHON_DTYPES[d]
    raise refuse(f"dtype {d!r} is not a dtype of exactspec's tensor layer (give torch.float32, "
                 "torch.float64, ... or Python's float, int, bool)")


def check_device(a) -> None:
    """A ``device`` argument: the CPU (``"cpu"``, ``"cpu:0"``, ``torch.device("cpu")``, or
    ``None``) passes; anything else (a CUDA device) is refused in one line."""
    if a is None:
        return
    name = getattr(a, "type", a)
    if isinstance(name, str) and name.split(":")[0] == "cpu":
        return
    raise refuse(f"device {a!r}: exactspec runs a PyTorch rule on its own CPU tensor layer")


#: Operations defined in :mod:`.functions` and :mod:`.random` (which import this module),
#: filled in when they are imported; a tensor's methods reach them here.
OPS: dict = {}

ValuesIndices = namedtuple("ValuesIndices", ["values", "indices"])


class Size(tuple):
    """``torch.Size``: a tuple of ints with ``numel()``."""

    def numel(self) -> int:
        return math.prod(self)


class Storage:
    """The flat memory under tensors; ``version`` counts writes."""

    __slots__ = ("data", "version")

    def __init__(self, data: list):
        self.data = data
        self.version = 0


def _contiguous(shape) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def broadcast_shapes(*shapes) -> tuple:
    """The shape ``shapes`` broadcast to, as torch does (refused when they do not fit)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        sizes = {s[len(s) - ndim + i] for s in shapes if len(s) - ndim + i >= 0} - {1}
        if len(sizes) > 1:
            raise refuse(f"shapes {', '.join(str(list(s)) for s in shapes)} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _scalar_dtype(x):
    if isinstance(x, bool):
        return D.bool_
    if isinstance(x, int):
        return D.int64
    if isinstance(x, FloatValue):
        return D.DTYPES[x.fmt.name]
    return D.default_dtype()


def result_type(*xs) -> D.DType:
    """The dtype torch computes an operation on ``xs`` (tensors and Python numbers) in."""
    groups = [None, None, None]            # dimensioned tensors, zero-dim tensors, numbers
    for x in xs:
        if isinstance(x, Tensor):
            d, g = x.dtype, (0 if x.ndim else 1)
        elif x is None:
            continue
        else:
            d, g = _scalar_dtype(x), 2
        groups[g] = d if groups[g] is None else D.promote(groups[g], d)
    out = groups[0]
    for g in (1, 2):
        d = groups[g]
        if d is None:
            continue
        if out is None:
            out = d
        elif D.category(d) > D.category(out):
            out = d if g == 1 else {0: D.bool_, 1: D.int64,
                                    2: D.default_dtype()}[D.category(d)]
    return out


def as_tensor(x, dtype=None) -> "Tensor":
    """``x`` as a tensor (a tensor unchanged unless ``dtype`` asks for another)."""
    dtype = dtype_arg(dtype)
    if isinstance(x, Tensor):
        return x if dtype is None or x.dtype is dtype else x.to(dtype)
    return Tensor.of(x, dtype)


def _flatten(data, shape=None):
    if isinstance(data, Tensor):
        return data._values(), tuple(data.shape)
    if isinstance(data, (list, tuple)):
        if not data:
            return [], (0,)
        parts = [_flatten(x) for x in data]
        inner = parts[0][1]
        if any(p[1] != inner for p in parts):
            raise refuse("torch.tensor of nested lists of different lengths")
        return [v for p in parts for v in p[0]], (len(data),) + inner
    return [data], ()


def _numpy_dtype(data):
    """The layer's dtype of a NumPy array or scalar (``None`` for anything else)."""
    if type(data).__module__ != "numpy" or not hasattr(data, "dtype"):
        return None
    name = {"bool": "bool"}.get(data.dtype.name, data.dtype.name)
    if name not in D.DTYPES:
        raise refuse(f"a NumPy array of dtype {data.dtype.name} is outside exactspec's tensor "
                     "layer")
    return D.DTYPES[name]


def _dtype_of_values(values) -> D.DType:
    if values and all(isinstance(v, bool) for v in values):
        return D.bool_
    if values and all(isinstance(v, int) for v in values):
        return D.int64
    fv = [v for v in values if isinstance(v, FloatValue)]
    if fv:
        return D.DTYPES[fv[0].fmt.name]
    return D.default_dtype()


def _index_value(i) -> int:
    if isinstance(i, Tensor):
        if i.numel() != 1 or i.dtype.kind == "float":
            raise refuse("an index must be an integer (or a one-element integer tensor)")
        return int(i._values()[0])
    if isinstance(i, bool) or not isinstance(i, int):
        raise refuse(f"index {i!r}: not an integer")
    return i


def _dim(d, ndim: int) -> int:
    d = _index_value(d)
    n = max(ndim, 1)
    if not -n <= d < n:
        raise refuse(f"dim {d} is out of range for a tensor of {ndim} dimensions")
    return d % n


class Tensor:
    """A tensor of the layer (see the module's text)."""

    __slots__ = ("_st", "_shape", "_strides", "_off", "dtype", "__weakref__")
    #: ``type(t).__module__`` and ``__name__`` are torch's (``torch.Tensor``), as engine code
    #: that checks a tensor's type by name reads them; pickling goes through
    #: :meth:`__reduce__`, never through the name
    __module__ = "torch"
    __hash__ = object.__hash__
    is_cuda = False
    requires_grad = False

    def __init__(self, storage: Storage, shape, strides, offset: int, dtype: D.DType):
        self._st = storage
        self._shape = tuple(shape)
        self._strides = tuple(strides)
        self._off = offset
        self.dtype = dtype

    # -- construction ------------------------------------------------------------------
    @classmethod
    def new(cls, values: list, shape, dtype: D.DType) -> "Tensor":
        """A fresh contiguous tensor holding ``values`` (already of ``dtype``)."""
        shape = tuple(shape)
        return cls(Storage(values), shape, _contiguous(shape), 0, dtype)

    @classmethod
    def of(cls, data, dtype=None) -> "Tensor":
        """``torch.tensor(data, dtype=dtype)``; a NumPy array or scalar keeps its dtype, as
        ``torch.tensor`` keeps it (its floats taken at their exact binary values)."""
        dtype = dtype_arg(dtype)
        numpy_dtype = _numpy_dtype(data)
        if numpy_dtype is not None:
            data = data.tolist() if hasattr(data, "tolist") else data.item()
        values, shape = _flatten(data)
        dtype = dtype or numpy_dtype or (data.dtype if isinstance(data, Tensor)
                                         else _dtype_of_values(values))
        if dtype.kind == "float" and not current().exact:
            values = [_unpacked_double(v) if type(v) is int else v for v in values]
        return cls.new([cast(v, dtype) for v in values], shape, dtype)

    def __reduce__(self):
        # rebuilt by this module's function: pickle never looks the class up as torch.Tensor
        return (_rebuilt, (self._st, self._shape, self._strides, self._off, self.dtype))

    # -- shape -------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._shape)
        return self._shape[_dim(dim, self.ndim)]

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return len(self._shape)

    def numel(self) -> int:
        return math.prod(self._shape)

    nelement = numel

    @property
    def device(self):
        return D.device("cpu")

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[_dim(dim, self.ndim)]

    def is_contiguous(self) -> bool:
        expected = _contiguous(self._shape)
        return all(n == 1 or a == b for n, a, b in zip(self._shape, self._strides, expected))

    def _positions(self) -> list:
        if math.prod(self._shape) > MAX_ELEMENTS:    # an expanded view read as a whole
            check_size(math.prod(self._shape), f"reading a tensor of shape {list(self._shape)}")
        out = [self._off]
        for n, st in zip(self._shape, self._strides):
            out = [p + i * st for p in out for i in range(n)]
        return out

    def _values(self) -> list:
        data = self._st.data
        out = [data[p] for p in self._positions()]
        if any(v is UNSET for v in out):
            raise refuse("read of torch.empty memory that was never written")
        return out

    def _view(self, shape, strides, offset) -> "Tensor":
        return Tensor(self._st, shape, strides, offset, self.dtype)

    def _own_positions(self) -> list:
        """The positions an in-place operation writes (refused when two elements of the tensor
        share one memory location, as torch refuses it: an ``expand``-ed tensor)."""
        positions = self._positions()
        if len(set(positions)) != len(positions):
            raise refuse("in-place write to a tensor in which more than one element refers to "
                         "a single memory location (an expanded tensor): clone it first")
        return positions

    def _write(self, positions: list, values: list) -> None:
        if len(set(positions)) != len(positions):
            seen = {}
            for pos, v in zip(positions, values):
                if pos in seen and not _same_value(seen[pos], v):
                    raise refuse("an indexed write puts different values in one place: which "
                                 "one torch keeps depends on the hardware's order")
                seen[pos] = v
        data = self._st.data
        for pos, v in zip(positions, values):
            data[pos] = v
        self._st.version += 1

    # -- dtype and device --------------------------------------------------------------
    def to(self, *args, **kwargs) -> "Tensor":
        dtype = dtype_arg(kwargs.get("dtype"))
        for a in list(args) + [kwargs.get("device")]:
            if isinstance(a, D.DType) or (isinstance(a, type) and a in _PYTHON_DTYPES):
                dtype = dtype_arg(a)
            elif isinstance(a, Tensor):
                dtype = a.dtype
            elif isinstance(a, bool):          # non_blocking or copy given by position
                continue
            elif a is not None:
                check_device(a)
        if dtype is None or dtype is self.dtype:
            return self
        return Tensor.new([cast(v, dtype) for v in self._values()], self._shape, dtype)

    type = to

    def float(self):
        return self.to(D.float32)

    def double(self):
        return self.to(D.float64)

    def half(self):
        return self.to(D.float16)

    def bfloat16(self):
        return self.to(D.bfloat16)

    def long(self):
        return self.to(D.int64)

    def int(self):
        return self.to(D.int32)

    def bool(self):
        return self.to(D.bool_)

    def cpu(self):
        return self

    def cuda(self, *args, **kwargs):
        raise refuse("Tensor.cuda(): exactspec runs a PyTorch rule on its own CPU tensor layer")

    def detach(self):
        return self

    def contiguous(self):
        return self if self.is_contiguous() else self.clone()

    def clone(self):
        return Tensor.new(self._values(), self._shape, self.dtype)

    def new_tensor(self, data, dtype=None, **kwargs):
        check_device(kwargs.get("device"))
        return Tensor.of(data, dtype_arg(dtype) or self.dtype)

    def new_full(self, size, fill_value, dtype=None, **kwargs):
        check_device(kwargs.get("device"))
        dtype = dtype_arg(dtype) or self.dtype
        size = tuple(size) if isinstance(size, (tuple, list, Size)) else (size,)
        check_size(math.prod(size), f"new_full({list(size)})")
        return Tensor.new([scalar_to(fill_value, dtype)] * math.prod(size), size, dtype)

    def new_zeros(self, *size, dtype=None, **kwargs):
        size = size[0] if len(size) == 1 and isinstance(size[0], (tuple, list, Size)) else size
        return self.new_full(size, 0, dtype, **kwargs)

    def new_ones(self, *size, dtype=None, **kwargs):
        size = size[0] if len(size) == 1 and isinstance(size[0], (tuple, list, Size)) else size
        return self.new_full(size, 1, dtype, **kwargs)

    def new_empty(self, *size, dtype=None, **kwargs):
        check_device(kwargs.get("device"))
        size = size[0] if len(size) == 1 and isinstance(size[0], (tuple, list, Size)) else size
        size = tuple(size)
        check_size(math.prod(size), f"new_empty({list(size)})")
        return Tensor.new([UNSET] * math.prod(size), size, dtype_arg(dtype) or self.dtype)

    def is_floating_point(self) -> bool:
        return self.dtype.kind == "float"

    def element_size(self) -> int:
        return self.dtype.itemsize

    # -- Python conversions ------------------------------------------------------------
    def _python(self, v):
        """An element as Python reads it: an exact number in the exact run; under ``--arith``
        a ``float64`` value (a Python float), so that Python arithmetic on it rounds as
        Python's floats do."""
        if type(v) is Branched or type(v) is LawIndex:
            raise CannotProceed("a value of the draft's branches read into Python")
        if type(v) is Split:             # a split read into Python: a bool (the engine branches)
            return bool(v)
        if self.dtype.kind != "float" or is_random(v):
            if is_random(v):
                OPS["check_not_noise"](v)
            return v
        if isinstance(v, FloatValue):
            return v if v.fmt is FORMATS["float64"] else FloatValue(v.value, FORMATS["float64"])
        return exact_number(v)

    def item(self):
        if self.numel() != 1:
            raise refuse(f"item() of a tensor of {self.numel()} elements")
        return self._python(self._values()[0])

    def tolist(self):
        values = [self._python(v) for v in self._values()]

        def nest(vals, shape):
            if not shape:
                return vals[0]
            step = len(vals) // shape[0] if shape[0] else 0
            return [nest(vals[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]

        return nest(values, self._shape)

    def __bool__(self):
        if self.numel() != 1:
            raise refuse(f"the truth value of a tensor of {self.numel()} elements is ambiguous")
        return bool(_one(cast(self._values()[0], D.bool_)))

    def __int__(self):
        if self.numel() != 1:
            raise refuse(f"int() of a tensor of {self.numel()} elements")
        return _one(cast(self._values()[0], D.int64))

    def __index__(self):
        if self.dtype.kind == "float":
            raise refuse("a float tensor used as an index")
        return self.__int__()

    def __float__(self):
        raise refuse("float() of a tensor leaves the modelled arithmetic (use .item(), exact)")

    def __len__(self):
        if not self._shape:
            raise refuse("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise refuse("iteration over a 0-d tensor")
        return (self[i] for i in range(self._shape[0]))

    def __repr__(self):
        def text(v):
            return str(exact_number(v)) if not is_random(v) else repr(v)

        values = [self._st.data[pos] for pos in self._positions()]
        body = ", ".join("?" if v is UNSET else text(v) for v in values)
        return f"tensor([{body}], shape={list(self._shape)}, dtype={self.dtype!r})"

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):       # protocols probed by Python,
            raise AttributeError(name)                          # copy, NumPy: not there
        raise refuse(f"Tensor.{name} is outside exactspec's tensor layer")

    # -- views -------------------------------------------------------------------------
    def _shape_arg(self, shape) -> list:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
            shape = shape[0]
        shape = [_index_value(n) for n in shape]
        if shape.count(-1) > 1:
            raise refuse("only one dimension can be -1")
        if -1 in shape:
            rest = math.prod(n for n in shape if n != -1)
            shape[shape.index(-1)] = self.numel() // rest if rest else 0
        if math.prod(shape) != self.numel():
            raise refuse(f"shape {shape} is invalid for a tensor of {self.numel()} elements")
        return shape

    def view(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], D.DType):
            raise refuse("Tensor.view(dtype) (a bit cast) is outside exactspec's tensor layer")
        shape = self._shape_arg(shape)
        if not self.is_contiguous():
            raise refuse("view of a non-contiguous tensor: use reshape (torch refuses it too)")
        return self._view(shape, _contiguous(shape), self._off)

    def reshape(self, *shape):
        shape = self._shape_arg(shape)
        if self.is_contiguous():
            return self._view(shape, _contiguous(shape), self._off)
        return Tensor.new(self._values(), shape, self.dtype)

    def flatten(self, start_dim=0, end_dim=-1):
        if self.ndim == 0:
            return self.reshape(1)
        a, b = _dim(start_dim, self.ndim), _dim(end_dim, self.ndim)
        shape = list(self._shape[:a]) + [math.prod(self._shape[a:b + 1])] + \
            list(self._shape[b + 1:])
        return self.reshape(shape)

    def view_as(self, other):
        return self.view(other.shape)

    def reshape_as(self, other):
        return self.reshape(other.shape)

    def squeeze(self, *dims, dim=None):
        """``squeeze()``, ``squeeze(d)``, ``squeeze((d0, d1))`` and, as torch also takes it,
        ``squeeze(d0, d1)`` (transformers writes ``.squeeze(0, 1)``)."""
        if dims:
            dim = dims[0] if len(dims) == 1 else dims
        if dim is None:
            keep = [i for i, n in enumerate(self._shape) if n != 1]
        else:
            dims = {_dim(d, self.ndim) for d in (dim if isinstance(dim, (tuple, list))
                                                  else (dim,))}
            keep = [i for i, n in enumerate(self._shape) if not (i in dims and n == 1)]
        return self._view([self._shape[i] for i in keep], [self._strides[i] for i in keep],
                          self._off)

    def unsqueeze(self, dim):
        d = _index_value(dim)
        if not -(self.ndim + 1) <= d <= self.ndim:
            raise refuse(f"unsqueeze dim {d} is out of range")
        d %= self.ndim + 1
        shape, strides = list(self._shape), list(self._strides)
        shape.insert(d, 1)
        strides.insert(d, strides[d] * shape[d + 1] if d < len(strides) else 1)
        return self._view(shape, strides, self._off)

    def expand(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
            shape = shape[0]
        shape = [_index_value(n) for n in shape]
        extra = len(shape) - self.ndim
        if extra < 0:
            raise refuse(f"expand to {shape}: fewer dimensions than the tensor's")
        strides = []
        for i, n in enumerate(shape):
            if i < extra:
                if n < 0:
                    raise refuse("expand: -1 is not allowed for a new leading dimension")
                strides.append(0)
                continue
            own, st = self._shape[i - extra], self._strides[i - extra]
            if n == -1 or n == own:
                shape[i] = own
                strides.append(st)
            elif own == 1:
                strides.append(0)
            else:
                raise refuse(f"expand of size {own} to {n} in dimension {i}")
        return self._view(shape, strides, self._off)

    def expand_as(self, other):
        return self.expand(other.shape)

    def repeat(self, *sizes):
        """``repeat``: the tensor tiled ``sizes`` times (a copy, as torch makes)."""
        if len(sizes) == 1 and isinstance(sizes[0], (tuple, list, Size)):
            sizes = sizes[0]
        sizes = [_index_value(n) for n in sizes]
        if len(sizes) < self.ndim or any(n < 0 for n in sizes):
            raise refuse(f"repeat{tuple(sizes)}: give a non-negative count for every dimension "
                         f"of the tensor ({self.ndim})")
        t = self.reshape([1] * (len(sizes) - self.ndim) + list(self._shape))
        shape = [a * n for a, n in zip(t._shape, sizes)]
        check_size(math.prod(shape), f"repeat{tuple(sizes)}")
        src = t._values()
        values = []
        for idx in _multi_indices(shape):
            flat = 0
            for i, a, st in zip(idx, t._shape, _contiguous(t._shape)):
                flat += (i % a) * st
            values.append(src[flat])
        return Tensor.new(values, shape, self.dtype)

    def repeat_interleave(self, repeats, dim=None):
        """``repeat_interleave``: each element (each slice along ``dim``) repeated, by one
        count or a count per element."""
        t = self.reshape(-1) if dim is None else self
        d = 0 if dim is None else _dim(dim, t.ndim)
        n = t._shape[d]
        counts = [_index_value(c) for c in as_tensor(repeats)._values()] \
            if isinstance(repeats, Tensor) else [_index_value(repeats)]
        if len(counts) == 1:
            counts = counts * n
        if len(counts) != n or any(c < 0 for c in counts):
            raise refuse(f"repeat_interleave: {len(counts)} counts for {n} elements")
        check_size(sum(counts) * (t.numel() // n if n else 0), "repeat_interleave")
        check_size(sum(counts), "repeat_interleave")
        picks = [i for i, c in enumerate(counts) for _ in range(c)]
        return t.index_select(d, Tensor.of(picks, D.int64) if picks else
                              Tensor.new([], (0,), D.int64))

    def tile(self, *dims):
        """``tile``: ``repeat`` with ones put in front of ``dims`` when it has fewer entries
        than the tensor has dimensions."""
        if len(dims) == 1 and isinstance(dims[0], (tuple, list, Size)):
            dims = dims[0]
        dims = [_index_value(n) for n in dims]
        return self.repeat([1] * (self.ndim - len(dims)) + dims)

    def outer(self, other):
        """``outer`` of two 1-D tensors: ``self[i] * other[j]`` (promoted as ``*`` is)."""
        other = as_tensor(other)
        if self.ndim != 1 or other.ndim != 1:
            raise refuse("outer takes two 1-D tensors")
        return self.reshape(-1, 1) * other.reshape(1, -1)

    ger = outer

    def index_select(self, dim, index):
        d = _dim(dim, self.ndim)
        key = (slice(None),) * d + (as_tensor(index).reshape(-1),)
        return self[key]

    def flip(self, *dims):
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = dims[0]
        key = [slice(None)] * self.ndim
        out = self
        for d in {_dim(x, self.ndim) for x in dims}:
            key = (slice(None),) * d + (Tensor.of(list(range(self._shape[d] - 1, -1, -1)),
                                                  D.int64),)
            out = out[key]
        return out.clone() if out is self else out

    def nonzero(self, as_tuple=False):
        """The indices of the non-zero elements in row-major order (``[count, ndim]``, or one
        1-D tensor per dimension with ``as_tuple``)."""
        flags = [bool(_one(cast(v, D.bool_))) for v in self._values()]
        hits = [idx for idx, f in zip(_multi_indices(self._shape), flags) if f]
        if as_tuple:
            return tuple(Tensor.new([h[d] for h in hits], (len(hits),), D.int64)
                         for d in range(max(self.ndim, 1)))
        return Tensor.new([i for h in hits for i in h], (len(hits), self.ndim), D.int64)

    def masked_select(self, mask):
        mask = as_tensor(mask)
        shape = broadcast_shapes(self._shape, mask._shape)
        return self.expand(shape)[mask.expand(shape)] if tuple(shape) != tuple(self._shape) \
            else self[mask]

    def unbind(self, dim=0):
        d = _dim(dim, self.ndim)
        return tuple(self.select(d, i) for i in range(self._shape[d]))

    def select(self, dim, index):
        d = _dim(dim, self.ndim)
        return self[(slice(None),) * d + (_index_value(index),)]

    def narrow(self, dim, start, length):
        d = _dim(dim, self.ndim)
        start = _index_value(start)
        return self[(slice(None),) * d + (slice(start, start + _index_value(length)),)]

    def split(self, split_size, dim=0):
        d = _dim(dim, self.ndim)
        n = self._shape[d]
        if isinstance(split_size, (list, tuple)):
            sizes = [_index_value(x) for x in split_size]
            if sum(sizes) != n:
                raise refuse(f"split sizes {sizes} do not add up to {n}")
        else:
            size = _index_value(split_size)
            if size <= 0:
                raise refuse("split size must be positive")
            sizes = [min(size, n - i) for i in range(0, n, size)]
        out, start = [], 0
        for k in sizes:
            out.append(self.narrow(d, start, k))
            start += k
        return tuple(out)

    def chunk(self, chunks, dim=0):
        n = self._shape[_dim(dim, self.ndim)]
        chunks = _index_value(chunks)
        return self.split(max(1, -(-n // chunks)), dim)

    def permute(self, *dims):
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = dims[0]
        dims = [_dim(d, self.ndim) for d in dims]
        if sorted(dims) != list(range(self.ndim)):
            raise refuse(f"permute{tuple(dims)}: not a permutation of the dimensions")
        return self._view([self._shape[d] for d in dims], [self._strides[d] for d in dims],
                          self._off)

    def transpose(self, a, b):
        dims = list(range(self.ndim))
        a, b = _dim(a, self.ndim), _dim(b, self.ndim)
        dims[a], dims[b] = dims[b], dims[a]
        return self.permute(dims)

    def t(self):
        return self if self.ndim < 2 else self.transpose(0, 1)

    @property
    def T(self):
        return self.permute(list(reversed(range(self.ndim))))

    def _expanded_values(self, shape) -> list:
        if tuple(self._shape) == tuple(shape):
            return self._values()
        return self.expand(shape)._values()

    # -- indexing ----------------------------------------------------------------------
    def _index(self, key):
        """``(shape, positions, view)``: the storage positions ``self[key]`` names, in its
        order (``None`` when the key is basic: the view's positions, computed only where they
        are written), and the view when the key is basic."""
        if not isinstance(key, tuple):
            key = (key,)
        items = []
        for k in key:
            if isinstance(k, (list, tuple)):
                k = Tensor.of(list(k), D.bool_ if k and all(isinstance(x, bool) for x in k)
                              else D.int64)
            elif isinstance(k, bool):
                k = Tensor.of(k)
            elif isinstance(k, Tensor) and k.ndim == 0 and k.dtype.kind == "int":
                k = _index_value(k)             # torch selects with it: a view, like an int
            items.append(k)
        used = sum(k.ndim if isinstance(k, Tensor) and k.dtype is D.bool_ else
                   0 if k is None or k is Ellipsis else 1 for k in items)
        ellipses = [i for i, k in enumerate(items) if k is Ellipsis]   # by identity: a
        if len(ellipses) > 1:                                           # tensor's == is lazy
            raise refuse("an index can have only one ellipsis")
        if used > self.ndim:
            raise refuse(f"too many indices for a tensor of {self.ndim} dimensions")
        if ellipses:
            i = ellipses[0]
            items[i:i + 1] = [slice(None)] * (self.ndim - used)
        else:
            items += [slice(None)] * (self.ndim - used)
        advanced = any(isinstance(k, Tensor) for k in items)
        parts, d = [], 0
        for k in items:
            if k is None:
                parts.append(("none",))
            elif isinstance(k, slice):
                if k.step is not None and _index_value(k.step) <= 0:
                    raise refuse("a slice step must be positive (torch refuses it too)")
                n = self._shape[d]
                parts.append(("slice", d, range(*k.indices(n))))
                d += 1
            elif isinstance(k, Tensor) and k.dtype is D.bool_:
                if tuple(k._shape) != tuple(self._shape[d:d + k.ndim]):
                    raise refuse(f"mask of shape {list(k._shape)} does not match the indexed "
                                 f"shape {list(self._shape[d:d + k.ndim])}")
                hits = [idx for idx, v in zip(_multi_indices(k._shape), k._values()) if v]
                for j in range(k.ndim):
                    parts.append(("adv", d + j, Tensor.new([h[j] for h in hits], (len(hits),),
                                                           D.int64)))
                d += k.ndim
            elif isinstance(k, Tensor):
                if k.dtype.kind != "int":
                    raise refuse(f"tensors used as indices must be integer or bool, not "
                                 f"{k.dtype.name}")
                parts.append(("adv", d, k))
                d += 1
            else:
                i = _index_value(k)
                n = self._shape[d]
                if not -n <= i < n:
                    raise refuse(f"index {i} is out of bounds for dimension {d} of size {n}")
                parts.append(("adv", d, Tensor.new([i % n], (), D.int64)) if advanced
                             else ("int", d, i % n))
                d += 1
        if not advanced:
            shape, strides, off = [], [], self._off
            for part in parts:
                if part[0] == "none":
                    shape.append(1)
                    strides.append(0)
                elif part[0] == "int":
                    off += part[2] * self._strides[part[1]]
                else:
                    r = part[2]
                    st = self._strides[part[1]]
                    off += r.start * st if len(r) else 0
                    shape.append(len(r))
                    strides.append(st * r.step)
            view = self._view(shape, strides, off)
            return tuple(shape), None, view             # positions: view._positions()
        adv = [p for p in parts if p[0] == "adv"]
        bshape = broadcast_shapes(*(p[2]._shape for p in adv))
        adv_values = [[_checked(v, self._shape[p[1]], p[1]) for v in p[2]._expanded_values(bshape)]
                      for p in adv]
        where = [i for i, p in enumerate(parts) if p[0] == "adv"]
        together = where == list(range(where[0], where[-1] + 1))
        layout = []                      # output blocks: ("adv",) or a basic part
        for i, p in enumerate(parts):
            if p[0] == "adv":
                if together and i == where[0]:
                    layout.append(("adv",))
            else:
                layout.append(p)
        if not together:
            layout.insert(0, ("adv",))
        shape = []
        for block in layout:
            shape.extend(bshape if block[0] == "adv" else [1] if block[0] == "none"
                         else [len(block[2])])
        check_size(math.prod(shape), "advanced indexing")
        # every output element: the basic parts' indices and the advanced block's flat index
        ranges = [range(math.prod(bshape)) if b[0] == "adv" else range(1) if b[0] == "none"
                  else b[2] for b in layout]
        positions = []
        adv_dims = [p[1] for p in adv]
        for combo in _product(ranges):
            pos = self._off
            for block, c in zip(layout, combo):
                if block[0] == "adv":
                    for dim_, vals in zip(adv_dims, adv_values):
                        pos += vals[c] * self._strides[dim_]
                elif block[0] == "slice":
                    pos += c * self._strides[block[1]]
            positions.append(pos)
        return tuple(shape), positions, None

    def __getitem__(self, key):
        shape, positions, view = self._index(key)
        if view is not None:
            return view
        data = self._st.data
        values = [data[p] if type(p) is int else read(data, p) for p in positions]
        if any(v is UNSET for v in values):
            raise refuse("read of torch.empty memory that was never written")
        return Tensor.new(values, shape, self.dtype)

    def __setitem__(self, key, value):
        shape, positions, view = self._index(key)
        if positions is None:
            positions = view._positions()
        if isinstance(value, Tensor) and value.ndim > len(shape):
            # torch drops the value's leading dimensions of size 1 first (``x[i, :] =
            # torch.rand(1, k)``); an in-place ``copy_`` does not
            lead = value.ndim - len(shape)
            if all(n == 1 for n in value._shape[:lead]):
                value = value._view(value._shape[lead:], value._strides[lead:], value._off)
        self._write(positions, self._fill_values(value, shape))

    def _fill_values(self, value, shape) -> list:
        if isinstance(value, Tensor):
            if D.category(value.dtype) > D.category(self.dtype):
                raise refuse(f"assigning {value.dtype.name} values into a {self.dtype.name} "
                             "tensor")
            return [cast(v, self.dtype) for v in value._expanded_values(shape)]
        check_python_int(value)
        v = cast(value, self.dtype)
        return [v] * math.prod(shape)

    # -- elementwise -------------------------------------------------------------------
    def _binary(self, other, op, *, compare=False, true_div=False, reverse=False):
        if not isinstance(other, Tensor):
            check_python_int(other)
            if reverse and op is operator.truediv and not current().exact:
                # ``number / t`` is ``t.reciprocal() * number`` (torch's Tensor.__rdiv__): two
                # roundings under --arith (the same value in the exact run)
                return self.reciprocal()._binary(other, operator.mul)
        a, b = (other, self) if reverse else (self, other)
        if op is operator.sub:
            bools = [x is True or x is False or (isinstance(x, Tensor) and x.dtype is D.bool_)
                     for x in (a, b)]
            if any(bools):
                what = "of two bool tensors" if all(bools) else "with a bool operand"
                raise refuse(f"subtraction {what} (torch refuses it): use ~, ^ or logical_not "
                             "/ logical_xor")
        dtype = result_type(a, b)
        if true_div and dtype.kind != "float":
            dtype = D.default_dtype()
        shape = broadcast_shapes(*(x._shape for x in (a, b) if isinstance(x, Tensor)))
        n = check_size(math.prod(shape), f"an elementwise operation of shape {list(shape)}")
        if (op is operator.mul or op is operator.truediv) and dtype.name in HALF_FORMATS and \
                not compare and not current().exact and \
                (not isinstance(other, Tensor) or (other.numel() == 1 and other.dtype is not dtype)):
            out = self._opmath(other, op, dtype, shape)
            if out is not None:
                return out
        av = a._expanded_values(shape) if isinstance(a, Tensor) else [a] * n
        bv = b._expanded_values(shape) if isinstance(b, Tensor) else [b] * n
        if dtype.kind == "float" and current().exact and _rationals(av) and _rationals(bv) \
                and (op is not operator.truediv or all(bv)):
            # exact rationals: cast leaves them as they are and arith is the plain operation
            out = rational_row(op, av, bv) if n >= float_rows.MIN_ROW else None
            if out is None:
                out = [op(x, y) for x, y in zip(av, bv)]
            return Tensor.new(out, shape, D.bool_ if compare else dtype)
        if compare:
            out = [decide(op, cast(x, dtype), cast(y, dtype)) for x, y in zip(av, bv)]
            return Tensor.new(out, shape, D.bool_)
        if op is operator.truediv and n >= float_rows.MIN_ROW and dtype.kind == "float":
            out = OPS["race_scores"](av, bv, None if current().exact else dtype.name)
            if out is not None:                  # w / E of a race, on a whole row
                return Tensor.new(out, shape, dtype)
        if dtype.kind == "float" and not current().exact and n >= float_rows.MIN_ROW:
            xs = cast_row(av, dtype) if isinstance(a, Tensor) else [cast(a, dtype)] * n
            ys = cast_row(bv, dtype) if isinstance(b, Tensor) else [cast(b, dtype)] * n
            out = float_rows.binary(op, xs, ys, FORMATS[dtype.name])   # a whole row by NumPy
            if out is None:
                out = [arith(op, x, y) for x, y in zip(xs, ys)]
            return Tensor.new(out, shape, dtype)
        out = [arith(op, cast(x, dtype), cast(y, dtype)) for x, y in zip(av, bv)]
        if dtype.kind == "int":
            _check_int_range(out, dtype)
        return Tensor.new(out, shape, dtype)

    def _opmath(self, other, op, dtype, shape):
        """``self * other`` or ``self / other`` of a half dtype by a scalar operand (a Python
        number, or a one-element tensor of another dtype), as torch's CPU kernel computes it
        (the scalar is its operand 2 in ``mul(self, other)`` and ``div(self, other)``, also
        for ``other * self``): in ``float32``, rounded once into the half format (see the
        module's text); ``None`` where the scalar is random (the usual route)."""
        scalar = other._values()[0] if isinstance(other, Tensor) else other
        s = opmath_scalar(scalar)
        if s is None:
            return None
        fmt = FORMATS[dtype.name]
        xs = cast_row(self._expanded_values(shape), dtype)
        fast = float_rows.opmath(op, xs, [s] * len(xs), fmt) if type(s) is FloatValue else None
        if fast is not None:
            return Tensor.new(fast, shape, dtype)
        out = []
        usual = None
        for x in xs:
            r = opmath_arith(op, x, s, fmt)
            if r is None:                     # a random element: the usual route
                if usual is None:
                    usual = cast(scalar, dtype)
                r = arith(op, x, usual)
            out.append(r)
        return Tensor.new(out, shape, dtype)

    def __add__(self, o):
        return self._binary(o, operator.add)

    def __radd__(self, o):
        return self._binary(o, operator.add, reverse=True)

    def __sub__(self, o):
        return self._binary(o, operator.sub)

    def __rsub__(self, o):
        return self._binary(o, operator.sub, reverse=True)

    def __mul__(self, o):
        return self._binary(o, operator.mul)

    def __rmul__(self, o):
        return self._binary(o, operator.mul, reverse=True)

    def __truediv__(self, o):
        return self._binary(o, operator.truediv, true_div=True)

    def __rtruediv__(self, o):
        return self._binary(o, operator.truediv, true_div=True, reverse=True)

    def add(self, o, alpha=1):
        self._check_alpha(o, alpha)
        return self + (o * alpha if alpha != 1 else o)

    def sub(self, o, alpha=1):
        self._check_alpha(o, alpha)
        return self - (o * alpha if alpha != 1 else o)

    def _check_alpha(self, o, alpha) -> None:
        """``add``/``sub`` with ``alpha`` other than 1 or -1 under ``--arith`` on floats:
        torch's CPU kernel fuses ``self + alpha * other`` (a fused multiply-add on its vector
        lanes, two roundings on the tail), an order exactspec does not model."""
        check_python_int(alpha)
        if alpha in (1, -1) or current().exact or result_type(self, o).kind != "float":
            return
        raise refuse(f"add/sub with alpha={alpha} under --arith: torch's CPU kernel fuses "
                     "self + alpha * other (one rounding on its vector lanes, two on the rest), "
                     "an order exactspec does not model; multiply first (self + other * alpha)")

    def mul(self, o):
        return self * o

    def div(self, o, rounding_mode=None):
        """``div``; ``rounding_mode="floor"`` and ``"trunc"`` of integer tensors as torch
        rounds them (of float tensors: refused, as floor division is)."""
        if rounding_mode is None:
            return self / o
        if rounding_mode not in ("floor", "trunc"):
            raise refuse(f"div rounding_mode {rounding_mode!r}: torch takes 'floor' or 'trunc'")
        if result_type(self, o).kind == "float":
            raise refuse(f"div(rounding_mode={rounding_mode!r}) of float tensors is outside "
                         "exactspec's tensor layer")
        if rounding_mode == "floor":
            return self // o
        return self._binary(o, _truncated_division)

    def remainder(self, o):
        return self % o

    def __floordiv__(self, o):
        if result_type(self, o).kind == "float":
            raise refuse("floor division of float tensors is outside exactspec's tensor layer")
        return self._binary(o, operator.floordiv)

    def __mod__(self, o):
        if result_type(self, o).kind == "float":
            raise refuse("remainder of float tensors is outside exactspec's tensor layer")
        return self._binary(o, operator.mod)

    def __lt__(self, o):
        return self._binary(o, operator.lt, compare=True)

    def __le__(self, o):
        return self._binary(o, operator.le, compare=True)

    def __gt__(self, o):
        return self._binary(o, operator.gt, compare=True)

    def __ge__(self, o):
        return self._binary(o, operator.ge, compare=True)

    def __eq__(self, o):
        return self._binary(o, operator.eq, compare=True)

    def __ne__(self, o):
        return self._binary(o, operator.ne, compare=True)

    lt, le, gt, ge, eq, ne = __lt__, __le__, __gt__, __ge__, __eq__, __ne__

    def pow(self, exponent):
        """``self ** exponent`` for a number ``exponent``: integer powers exactly in the exact
        run (``0 ** -1`` is ``inf``); under ``--arith`` the exponents torch's CPU kernel computes
        by multiplications, as it computes them (checked on every finite ``float16`` and
        ``bfloat16`` value against torch 2.14): ``0`` (1), ``1``, ``2`` (``x * x``), ``3``
        (``x * x * x``), ``-1`` (``reciprocal``), ``-2`` (``1 / (x * x)``), in the dtype's
        arithmetic, and for ``float16`` in ``float32`` rounded once into ``float16`` (the
        kernel's ``pow`` of the widened value); another exponent is refused there (a
        vectorised ``pow`` function, whose rounding exactspec does not model).  An integer
        tensor to a negative integer power is refused, as torch refuses it."""
        if isinstance(exponent, Tensor):
            if exponent.ndim or exponent.dtype.kind == "float":
                raise refuse("pow with a tensor exponent is outside exactspec's tensor layer: "
                             "give a number")
            exponent = exponent._values()[0]
        if isinstance(exponent, bool) or not isinstance(exponent, (int, float, Fraction)) or \
                isinstance(exponent, float) and not math.isfinite(exponent):
            raise refuse(f"pow with exponent {exponent!r}: give a finite number")
        check_python_int(exponent)
        dtype = self.dtype
        if dtype.kind != "float" and not isinstance(exponent, int):
            dtype = D.default_dtype()                     # an int tensor ** 2.0 is float
        if exponent != int(exponent):
            raise refuse(f"pow with the exponent {exponent}: a non-integer power is outside "
                         "exactspec's tensor layer (irrational in exact arithmetic)")
        n = int(exponent)
        if dtype.kind != "float":
            if n < 0:
                raise refuse("integers to negative integer powers are not allowed (torch "
                             "refuses it too)")
            out = [_exact_power(cast(v, dtype), n) for v in self._values()]
            _check_int_range(out, dtype if dtype is not D.bool_ else D.int64)
            return Tensor.new(out, self._shape, dtype if dtype is not D.bool_ else D.int64)
        if current().exact:
            return Tensor.new([_exact_power(cast(v, dtype), n) for v in self._values()],
                              self._shape, dtype)
        if n not in (0, 1, 2, 3, -1, -2):
            raise refuse(f"pow with exponent {exponent} under --arith: torch's CPU kernel calls "
                         "a vectorised pow function there, whose rounding exactspec does not "
                         "model (exponents 0, 1, 2, 3, -1, -2 are computed as torch does); "
                         "write the product out, or run exactly")
        fmt = FORMATS[dtype.name]
        return Tensor.new([_float_power(cast(v, dtype), n, fmt) for v in self._values()],
                          self._shape, dtype)

    __pow__ = pow

    def pow_(self, exponent):
        return self._inplace(self.pow(exponent))

    def __rpow__(self, base):
        raise refuse("a number to the power of a tensor (number ** t) is outside exactspec's "
                     "tensor layer")

    def _logical(self, other, op):
        if self.dtype is not D.bool_ or (isinstance(other, Tensor) and other.dtype is not D.bool_):
            if result_type(self, other).kind == "float":
                raise refuse("bitwise operations take bool or integer tensors")
        return self._binary(other, op)

    def __and__(self, o):
        return self._logical(o, operator.and_)

    __rand__ = __and__

    def __or__(self, o):
        return self._logical(o, operator.or_)

    __ror__ = __or__

    def __xor__(self, o):
        return self._logical(o, operator.xor)

    __rxor__ = __xor__

    def __invert__(self):
        if self.dtype is D.bool_:
            return Tensor.new([not v for v in self._values()], self._shape, D.bool_)
        if self.dtype.kind == "int":
            return Tensor.new([~v for v in self._values()], self._shape, self.dtype)
        raise refuse("~ of a float tensor")

    def logical_not(self):
        return Tensor.new([not cast(v, D.bool_) for v in self._values()], self._shape, D.bool_)

    def logical_and(self, o):
        return self.bool() & as_tensor(o).bool()

    def logical_or(self, o):
        return self.bool() | as_tensor(o).bool()

    def _unary(self, f, dtype=None):
        dtype = dtype or self.dtype
        return Tensor.new([f(cast(v, dtype)) for v in self._values()], self._shape, dtype)

    def __neg__(self):
        if self.dtype is D.bool_:
            raise refuse("negation of a bool tensor")
        return self._unary(operator.neg)

    def __pos__(self):
        return self

    def __abs__(self):
        return self._unary(abs)

    abs = __abs__
    neg = __neg__

    def reciprocal(self):
        dtype = self.dtype if self.dtype.kind == "float" else D.default_dtype()
        return self._binary_scalar_left(1, dtype)

    def _binary_scalar_left(self, scalar, dtype):
        one = cast(scalar, dtype)
        return Tensor.new([arith(operator.truediv, one, cast(v, dtype)) for v in self._values()],
                          self._shape, dtype)

    def exp(self):
        exp_value = OPS["exp_value"]
        dtype = self.dtype if self.dtype.kind == "float" else D.default_dtype()
        return self._unary(exp_value, dtype)

    def log(self):
        if self.dtype.kind == "float":
            noise = OPS["uniform_log"](self)      # log(u) of explicit uniforms: -E (a race's)
            if noise is not None:
                return noise
        log_value = OPS["log_value"]
        dtype = self.dtype if self.dtype.kind == "float" else D.default_dtype()
        return self._unary(log_value, dtype)

    def log_(self):
        return self._inplace(self.log())

    def isnan(self):
        return Tensor.new([is_nan(v) for v in self._values()], self._shape, D.bool_)

    def isinf(self):
        return Tensor.new([_is_inf(v) for v in self._values()], self._shape, D.bool_)

    def isfinite(self):
        return Tensor.new([not (_is_inf(v) or is_nan(v)) for v in self._values()], self._shape,
                          D.bool_)

    def clamp(self, min=None, max=None):
        if min is None and max is None:
            raise refuse("clamp needs min or max")
        for bound in (min, max):                   # a number beyond the dtype: torch refuses
            if bound is not None and not isinstance(bound, Tensor):
                scalar_to(bound, result_type(self, bound))
        out = self
        if min is not None:
            out = _extreme(out, min, maximum=True)
        if max is not None:
            out = _extreme(out, max, maximum=False)
        return out

    clip = clamp

    def relu(self):
        """``relu``: ``clamp(min=0)`` (NaN stays NaN, as in torch)."""
        return self.clamp(min=0)

    def relu_(self):
        return self.clamp_(min=0)

    def clamp_min(self, min):
        return self.clamp(min=min)

    def clamp_max(self, max):
        return self.clamp(max=max)

    def maximum(self, other):
        return _extreme(self, other, maximum=True)

    def minimum(self, other):
        return _extreme(self, other, maximum=False)

    def where(self, condition, other):
        return OPS["where"](condition, self, other)

    def masked_fill(self, mask, value):
        return self.clone().masked_fill_(mask, value)

    # -- in place ----------------------------------------------------------------------
    def _inplace(self, result) -> "Tensor":
        if not isinstance(result, Tensor):
            result = Tensor.of(result)
        if D.category(result.dtype) > D.category(self.dtype):
            raise refuse(f"result type {result.dtype.name} can't be cast to the desired output "
                         f"type {self.dtype.name} of an in-place operation")
        if broadcast_shapes(self._shape, result._shape) != tuple(self._shape):
            raise refuse(f"an in-place result of shape {list(result._shape)} does not fit a "
                         f"tensor of shape {list(self._shape)}")
        self._write(self._own_positions(),
                    cast_row(result._expanded_values(self._shape), self.dtype))
        return self

    def add_(self, o, alpha=1):
        return self._inplace(self.add(o, alpha=alpha))

    def sub_(self, o, alpha=1):
        return self._inplace(self.sub(o, alpha=alpha))

    def mul_(self, o):
        return self._inplace(self * o)

    def div_(self, o):
        return self._inplace(self / o)

    def clamp_(self, min=None, max=None):
        return self._inplace(self.clamp(min, max))

    clip_ = clamp_

    def clamp_min_(self, min):
        return self._inplace(self.clamp(min=min))

    def clamp_max_(self, max):
        return self._inplace(self.clamp(max=max))

    def reciprocal_(self):
        return self._inplace(self.reciprocal())

    def neg_(self):
        return self._inplace(-self)

    def exp_(self):
        return self._inplace(self.exp())

    def fill_(self, value):
        if not isinstance(value, Tensor):
            scalar_to(value, self.dtype)           # torch refuses a value beyond the dtype
        self._write(self._own_positions(), self._fill_values(value, self._shape))
        return self

    def zero_(self):
        return self.fill_(0)

    def copy_(self, src):
        self._write(self._own_positions(), self._fill_values(as_tensor(src), self._shape))
        return self

    def masked_fill_(self, mask, value):
        mask = as_tensor(mask)
        if mask.dtype is not D.bool_:
            raise refuse("masked_fill needs a bool mask")
        if broadcast_shapes(self._shape, mask._shape) != tuple(self._shape):
            raise refuse(f"mask of shape {list(mask._shape)} does not fit shape "
                         f"{list(self._shape)}")
        if isinstance(value, Tensor):
            if value.numel() != 1:
                raise refuse("masked_fill takes a number or a one-element tensor")
            value = value._values()[0]
            v = cast(value, self.dtype)
        else:
            v = scalar_to(value, self.dtype)       # torch refuses a value beyond the dtype
        hits = [p for p, m in zip(self._positions(), mask._expanded_values(self._shape)) if m]
        self._write(hits, [v] * len(hits))
        return self

    def scatter_(self, dim, index, src=None, value=None, reduce=None):
        return OPS["scatter_into"](self, dim, index, src if src is not None else value, reduce)

    def scatter(self, dim, index, src=None, value=None, reduce=None):
        return self.clone().scatter_(dim, index, src, value, reduce)

    def scatter_add_(self, dim, index, src):
        return OPS["scatter_add_into"](self, dim, index, src)

    def scatter_add(self, dim, index, src):
        return self.clone().scatter_add_(dim, index, src)

    def index_add_(self, dim, index, source, alpha=1):
        """``index_add_``: slice ``index[i]`` of ``self`` along ``dim`` gets slice ``i`` of
        ``source`` added (a ``scatter_add_`` with the index spread over the slice)."""
        d = _dim(dim, self.ndim)
        source = as_tensor(source) if alpha == 1 else as_tensor(source) * alpha
        index = as_tensor(index).reshape(-1)
        shape = [1] * source.ndim
        shape[d] = index.numel()
        spread = index.reshape(shape).expand(source.shape) if source.ndim else index
        return self.scatter_add_(d, spread.contiguous(), source)

    def index_add(self, dim, index, source, alpha=1):
        return self.clone().index_add_(dim, index, source, alpha)

    def type_as(self, other):
        return self.to(other.dtype)

    def type(self, dtype=None, **kwargs):
        if dtype is None:                      # the legacy type name, as torch gives it
            return "torch." + {"float32": "Float", "float64": "Double", "float16": "Half",
                               "bfloat16": "BFloat16", "int64": "Long", "int32": "Int",
                               "bool": "Bool"}.get(self.dtype.name, "") + "Tensor"
        return self.to(dtype)

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        return OPS["isclose"](self, other, rtol, atol, equal_nan)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
        return all(self.isclose(other, rtol, atol, equal_nan)._values())

    def equal(self, other) -> bool:
        other = as_tensor(other)
        return tuple(self._shape) == tuple(other._shape) and bool((self == other).all())

    def count_nonzero(self, dim=None):
        return (self != 0).sum(dim)

    def log_softmax(self, dim=-1, dtype=None):
        return OPS["log_softmax"](self, dim, dtype)

    def uniform_(self, a=0, b=1, generator=None):
        return OPS["uniform_fill"](self, a, b)

    def exponential_(self, lambd=1, generator=None):
        return OPS["exponential_fill"](self, lambd)

    def normal_(self, *args, **kwargs):
        raise refuse("normal_: Gaussian noise is outside exactspec's tensor layer")

    # -- reductions --------------------------------------------------------------------
    def _lanes(self, dim):
        """``(outer shape, lanes)``: the values along ``dim`` for every other index."""
        d = _dim(dim, self.ndim)
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
            for dd in sorted((_dim(x, self.ndim) for x in dims), reverse=True):
                t = t._reduce(dd, keepdim, f, dtype)
            return t
        d = _dim(dims[0], self.ndim)
        outer, lanes = self._lanes(d)
        shape = list(outer)
        if keepdim and self.ndim:
            shape.insert(d, 1)
        return Tensor.new([f(lane) for lane in lanes], shape, dtype)

    def sum(self, dim=None, keepdim=False, dtype=None):
        out_dtype = dtype or (self.dtype if self.dtype.kind == "float" else D.int64)
        return self._reduce(dim, keepdim, lambda lane: _sum(lane, out_dtype), out_dtype)

    def mean(self, dim=None, keepdim=False):
        if self.dtype.kind != "float":
            raise refuse("mean of a non-float tensor (torch refuses it too)")
        total = self.sum(dim, keepdim)
        count = self.numel() // max(1, total.numel())
        return total / count

    def cumsum(self, dim, dtype=None):
        """The running sum along ``dim``, exact in the exact run, under ``--arith`` accumulated
        as torch's CPU kernel accumulates it (see :meth:`cumprod`)."""
        return self._running_along(dim, dtype, _running_sum)

    def cumprod(self, dim, dtype=None):
        """The running product along ``dim`` (the accepted prefix as ``accepted.cumprod(1)``):
        integers and bools exactly (as ``int64``), floats exactly in the exact run and, under
        ``--arith``, accumulated as torch's CPU kernel accumulates them (``float64`` for
        ``float32`` and ``float64``, ``float32`` for ``float16``/``bfloat16``), each output
        rounded to the dtype."""
        return self._running_along(dim, dtype, _running_product)

    def _running_along(self, dim, dtype, running):
        out_dtype = dtype or (self.dtype if self.dtype.kind == "float" else D.int64)
        d = _dim(dim, self.ndim)
        order = [i for i in range(self.ndim) if i != d] + [d]
        moved = self.permute(order) if self.ndim else self.reshape(1)
        out = Tensor.new([None] * self.numel(), moved._shape, out_dtype)
        _, lanes = self._lanes(d) if self.ndim else ((), [self._values()])
        out._st.data[:] = [v for lane in lanes for v in running(lane, out_dtype)]
        inverse = [order.index(i) for i in range(self.ndim)]
        return (out.permute(inverse) if self.ndim else out.reshape(())).contiguous()

    def _arg(self, dim, keepdim, largest):
        if dim is None:
            flat = self.reshape(-1) if self.is_contiguous() else self.clone().reshape(-1)
            i = _arg_index(flat._values(), largest)
            return Tensor.new([i], (1,) * self.ndim if keepdim else (), D.int64)
        return self._reduce(dim, keepdim, lambda lane: _arg_index(lane, largest), D.int64)

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
            return _extreme(self, other, maximum=largest)
        if dim is None:
            values = self._values()
            return Tensor.new([values[_arg_index(values, largest)]], (), self.dtype)
        idx = self._arg(dim, keepdim, largest)
        outer, lanes = self._lanes(dim)
        vals = [lane[i] for lane, i in zip(lanes, idx._values())]
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
        d = _dim(dim, self.ndim)
        outer, lanes = self._lanes(d)
        orders = [_sorted_order(lane, descending) for lane in lanes]
        indices = orders if stable or not lanes or len(lanes[0]) <= STABLE_SORT_LANE else \
            [_tie_ordered(lane, o, o, "sort(stable=False) on a lane of more than "
                          f"{STABLE_SORT_LANE} elements") for lane, o in zip(lanes, orders)]
        return self._from_lanes(d, [[lane[i] for i in o] for lane, o in zip(lanes, orders)],
                                indices, len(lanes[0]) if lanes else 0)

    def argsort(self, dim=-1, descending=False, stable=False):
        return self.sort(dim, descending, stable).indices

    def topk(self, k, dim=-1, largest=True, sorted=True):
        k = _index_value(k)
        d = _dim(dim, self.ndim)
        outer, lanes = self._lanes(d)
        if lanes and not 0 <= k <= len(lanes[0]):
            raise refuse(f"topk: k={k} is out of range for a dimension of {len(lanes[0])}")
        orders = [_sorted_order(lane, largest) for lane in lanes]
        return self._from_lanes(d, [[lane[i] for i in o[:k]] for lane, o in zip(lanes, orders)],
                                [_tie_ordered(lane, o[:k], o, "topk")
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


def _rebuilt(storage, shape, strides, offset, dtype) -> Tensor:
    """A tensor unpickled (:meth:`Tensor.__reduce__`)."""
    return Tensor(storage, shape, strides, offset, dtype)


def read(data: list, position):
    """``data[position]``, on every branch when the position is branched."""
    if type(position) is int:
        return data[position]
    if isinstance(position, Branched):
        values = [data[i] for i in position.values]
        if any(v is UNSET for v in values):
            raise CannotProceed("a branched read of unwritten memory")
        if all(type(v) is Fraction for v in values):
            return Branched(values, position.axis)
        if any(isinstance(v, (Branched, LawIndex)) or is_random(v) for v in values):
            raise CannotProceed("a branched read of a random or branched value")
        return Branched(values, position.axis)
    return data[position]


def _rationals(values) -> bool:
    """Every value a plain ``Fraction``."""
    return all(type(v) is Fraction for v in values)


def _one(v):
    """``v`` as one Python value: a value of the draft's branches has none."""
    if type(v) is Branched or type(v) is LawIndex:
        raise CannotProceed("a value of the draft's branches read into Python")
    return v


def _checked(i, n, d):
    if type(i) is Branched:                   # an index on every draft branch
        if not all(-n <= j < n for j in i.values):
            raise CannotProceed("a branched index out of bounds on some branch")
        return i.map(lambda j: j % n)
    if not -n <= i < n:
        raise refuse(f"index {i} is out of bounds for dimension {d} of size {n}")
    return i % n


def _multi_indices(shape):
    return list(_product([range(n) for n in shape]))


def _product(ranges):
    out = [()]
    for r in ranges:
        out = [c + (i,) for c in out for i in r]
    return out


_SIGNS: dict = {}        # comparisons of exact sympy numbers already decided


def decide(op, a, b) -> bool:
    """``op(a, b)`` for two elements, as a bool; a comparison with a random element is a branch
    of the engine; one of exact sympy numbers (an exact softmax) is remembered."""
    if type(a) is Fraction and type(b) is Fraction:          # the common case first
        return op(a, b)
    if _is_sympy(a) or _is_sympy(b):
        try:
            key = (op, a, b)
            hit = _SIGNS.get(key)
        except TypeError:
            key, hit = None, None
        if hit is not None:
            return hit
        out = _truth(op(a, b))
        if key is not None and len(_SIGNS) < 1 << 16:
            _SIGNS[key] = out
        return out
    if type(a) is LawIndex or type(b) is LawIndex:
        return _law_token_decide(op, a, b)
    if type(a) is Branched or type(b) is Branched:
        if is_random(a) or is_random(b):      # a uniform against a threshold per branch
            if "uniform_noise" in current().__dict__:
                OPS["check_not_noise"](a, b)
            u = a if is_random(a) else b
            if not isinstance(getattr(u, "base", None), Uniform) or \
                    not (isinstance(u, UniformView) or hasattr(u, "increasing")) or \
                    u.base.linked or u.base.spent or is_random(b if u is a else a):
                raise CannotProceed("a branched value compared with a random value other than a "
                               "fresh uniform")
            return _truth(op(a, b))
        av = a.values if type(a) is Branched else None
        bv = b.values if type(b) is Branched else None
        out = [decide(op, av[i] if av is not None else a, bv[i] if bv is not None else b)
               for i in range(len(av if av is not None else bv))]
        if out and all(v is out[0] for v in out):
            return out[0]            # the same on every branch (a token != -1): a plain bool
        return Branched(out, axis_of(a, b))
    run = current()
    if "uniform_noise" in run.__dict__:          # a uniform whose log is noise: not again
        OPS["check_not_noise"](a, b)
    lazy = getattr(run.sampler, "lazy_compare", None)            # a factored run's hook
    if lazy is not None:
        r = lazy(op, a, b)
        if r is not None:
            return r
    return _truth(op(a, b))


def _law_token_decide(op, a, b) -> bool:
    """A token kept as its law compared with a plain integer: the answer when it is the same
    for every token of the law's support (``token != -1``); else not tracked."""
    t, c = (a, b) if type(a) is LawIndex else (b, a)
    if type(c) is int:
        support = [k for k, w in enumerate(t.probs) if w]
        answers = {op(k, c) if t is a else op(c, k) for k in support}
        if len(answers) == 1:
            return answers.pop()
    raise CannotProceed(f"the {t.what} token compared where the answer depends on it")


def _same_value(a, b) -> bool:
    if is_random(a) or is_random(b):
        return a is b
    return not is_nan(a) and decide(operator.eq, exact_number(a), exact_number(b))


def _is_sympy(x) -> bool:
    return type(x).__module__.startswith("sympy")


def _truth(r) -> bool:
    if isinstance(r, bool) or type(r) is Split:     # a split stays a value until read
        return r
    try:
        return bool(r)
    except TypeError as err:
        raise undecided(f"a comparison the exact method cannot decide ({err})") from None


def _is_inf(v) -> bool:
    if type(v) is Branched or type(v) is LawIndex:
        raise CannotProceed("a value of the draft's branches tested for inf")
    x = v.value if isinstance(v, FloatValue) else v
    return isinstance(x, float) and math.isinf(x)


def _extreme(a, b, maximum: bool):
    """``torch.maximum``/``minimum`` (and clamp's two halves): NaN propagates."""
    a = as_tensor(a) if not isinstance(a, Tensor) else a
    dtype = result_type(a, b)
    shape = broadcast_shapes(a._shape, b._shape) if isinstance(b, Tensor) else a._shape
    av = a._expanded_values(shape)
    bv = b._expanded_values(shape) if isinstance(b, Tensor) else [b] * len(av)
    if dtype.kind == "float" and current().exact and len(av) >= float_rows.MIN_ROW and \
            not isinstance(b, Tensor) and type(b) in (int, float, Fraction) and _rationals(av):
        y = cast(b, dtype)               # one cast of the scalar for the whole row (a Python
        if type(y) is Fraction:          # float counted once, as every literal is)
            return Tensor.new(rational_extreme(av, [y] * len(av), maximum), shape, dtype)
    if dtype.kind == "float" and not current().exact and len(av) >= float_rows.MIN_ROW:
        xs = cast_row(av, dtype)
        ys = cast_row(bv, dtype) if isinstance(b, Tensor) else [cast(b, dtype)] * len(av)
        out = float_rows.extreme(xs, ys, FORMATS[dtype.name], maximum)   # by NumPy
        if out is not None:
            return Tensor.new(out, shape, dtype)
        av, bv = xs, ys
    out = []
    for x, y in zip(av, bv):
        x, y = cast(x, dtype), cast(y, dtype)
        if type(x) is Branched or type(y) is Branched:     # branch by branch
            n = len((x if type(x) is Branched else y).values)
            xs = x.values if type(x) is Branched else [x] * n
            ys = y.values if type(y) is Branched else [y] * n
            fast = (rational_extreme(xs, ys, maximum) if len(xs) >= float_rows.MIN_ROW
                    else None) if current().exact else \
                float_rows.extreme(xs, ys, FORMATS[dtype.name], maximum)
            out.append(Branched(fast if fast is not None else
                                [_extreme_one(a, b, maximum) for a, b in zip(xs, ys)],
                                axis_of(x, y)))
        else:
            out.append(_extreme_one(x, y, maximum))
    return Tensor.new(out, shape, dtype)


def _extreme_one(x, y, maximum: bool):
    if type(x) is Fraction and type(y) is Fraction:          # the common case first
        return (y if x < y else x) if maximum else (y if y < x else x)
    if is_nan(x) or is_nan(y):
        return x if is_nan(x) else y
    if maximum:
        return y if decide(operator.lt, x, y) else x
    return y if decide(operator.lt, y, x) else x


def _sum(lane, dtype):
    if dtype.kind != "float":
        return sum((cast(v, dtype) for v in lane), 0)
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


def _running_sum(lane, dtype):
    return _running(lane, dtype, operator.add, 0, "sum")


def _running_product(lane, dtype):
    return _running(lane, dtype, operator.mul, 1, "product")


def _running(lane, dtype, op, start: int, what: str):
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


def _unpacked_double(v: int) -> float:
    """A Python int in ``torch.tensor(data, dtype=<a float dtype>)``: read as a double first,
    as torch unpacks it (``2**60 + 2**36 + 1`` is ``2**60`` in ``float32``)."""
    try:
        return float(v)
    except OverflowError:
        raise refuse(f"the int {v} in a float tensor: too large to convert to float (torch "
                     "refuses it too)") from None


def _exact_power(x, n: int):
    """``x ** n`` of one exact element (``n`` an integer): IEEE's ``inf`` for ``0 ** -k``."""
    if type(x) is Branched:
        return x.map(lambda v: _exact_power(v, n))
    if is_random(x) or type(x) is LawIndex:
        raise undecided("pow of a random value is beyond the exact method")
    if isinstance(x, float):                   # inf, nan (nan ** 0 is 1, as in torch)
        return _settle_float(x ** n)
    if n < 0 and x == 0:
        return math.inf
    return x ** n


def _settle_float(r):
    return Fraction(r) if math.isfinite(r) else r


def _float_power(x, n: int, fmt):
    """``x ** n`` of one element under ``--arith`` as torch's CPU kernel computes it (see
    :meth:`Tensor.pow`)."""
    if type(x) is Branched:
        return x.map(lambda v: _float_power(v, n, fmt))
    if n == 0:
        return FloatValue(1.0, fmt)
    if n == 1:
        return x
    if fmt.name == "float16" and n in (3, -2) and type(x) is FloatValue:
        f32 = FORMATS["float32"]
        w = FloatValue(x.value, f32)
        r = w * w * w if n == 3 else FloatValue(1.0, f32) / (w * w)
        return FloatValue(fmt.round(r.value), fmt)
    if n == -1:
        return arith(operator.truediv, FloatValue(1.0, fmt), x)
    square = arith(operator.mul, x, x)
    if n == 2:
        return square
    if n == 3:
        return arith(operator.mul, square, x)
    return arith(operator.truediv, FloatValue(1.0, fmt), square)


def _check_int_range(values, dtype) -> None:
    """Integer results outside the dtype's range are refused: torch wraps them around."""
    bound = 2 ** (dtype.bits - 1)
    for v in values:
        if type(v) is int and not -bound <= v < bound:
            raise refuse(f"an {dtype.name} result {v} outside the dtype's range: torch wraps "
                         "it around (an overflow), exactspec does not model that")


def _truncated_division(a, b):
    """Integer division rounded toward zero (``div(..., rounding_mode="trunc")``)."""
    if b == 0:
        raise refuse("integer division by zero (torch raises ZeroDivisionError)")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def cast_format(v: FloatValue, fmt) -> FloatValue:
    x = v.value
    return FloatValue(fmt.round(Fraction(x)) if math.isfinite(x) else x, fmt)


def _arg_index(values, largest: bool) -> int:
    """The first index of the largest (smallest) value; a NaN wins."""
    if not values:
        raise refuse("argmax/argmin of an empty tensor")
    raced = OPS["race_index"](values, largest)
    if raced is not None:
        return raced
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


def _tie_ordered(lane, chosen, order, what) -> list:
    """``chosen`` (indices into ``lane``), each replaced by a :class:`TieOrder` when its value
    is tied with another value of the lane (``order`` is the lane sorted)."""
    tied = set()
    for a, b in zip(order, order[1:]):
        x, y = lane[a], lane[b]
        if (is_nan(x) and is_nan(y)) or (not is_nan(x) and not is_nan(y) and _same_value(x, y)):
            tied.update((a, b))
    return [TieOrder(i, what) if i in tied else i for i in chosen]


def _sorted_order(values, descending: bool) -> list:
    def compare(i, j):
        a, b = values[i], values[j]
        na, nb = is_nan(a), is_nan(b)
        if na or nb:
            c = (1 if na else 0) - (1 if nb else 0)     # NaN is the largest
        else:
            c = -1 if decide(operator.lt, a, b) else (1 if decide(operator.lt, b, a) else 0)
        return -c if descending else c

    return sorted(range(len(values)), key=functools.cmp_to_key(compare))
