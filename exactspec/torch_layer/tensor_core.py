"""The tensor of the layer: its storage, its construction and its reads into Python.

:class:`Tensor` here holds what every operation rests on: the view (``shape``, ``strides``,
``offset``) over a :class:`Storage`, construction (:meth:`Tensor.new`, :meth:`Tensor.of`,
:func:`as_tensor`), positions and values, writes, dtype conversions and reads into Python
(``item``, ``tolist``, ``bool``).  The methods of each other concern are written in a module
of their own and made the tensor's by :func:`tensor_methods`: views
(:mod:`.tensor_views`), indexing (:mod:`.tensor_indexing`), elementwise operations
(:mod:`.tensor_elementwise`), reductions and sorts (:mod:`.tensor_reductions`).
:mod:`.tensor` gathers them; the semantics are described there.

>>> t = Tensor.new([1, 2, 3, 4], (2, 2), D.int64)
>>> t.shape, t.tolist(), t._values()
((2, 2), [[1, 2], [3, 4]], [1, 2, 3, 4])
"""

from __future__ import annotations

import math
import operator
from collections import namedtuple
from itertools import repeat

from ..core.deadline import check as check_deadline
from ..core.errors import TooLarge
from ..engine.floats import FORMATS, FloatValue
from . import dtypes as D
from .context import current, refuse, user_line
from .dispatch import OPS, PYTHON, UNSET
from .tensor_elements import python_value, same_value, unpacked_double
from .values import cast, cast_row, exact_number, is_random, scalar_to

#: ``Tensor`` is defined here and documented where the layer gathers it (``tensor``), so it is
#: not listed: one description of ``torch.Tensor`` on the site.
__all__ = ["Storage", "Size", "SUM_TERMS", "STABLE_SORT_LANE", "MAX_ELEMENTS",
           "OPS", "ValuesIndices", "result_type", "as_tensor", "broadcast_shapes",
           "check_size", "dtype_arg", "check_device", "tensor_methods", "PYTHON_DTYPES",
           "contiguous_strides", "scalar_dtype", "flattened", "numpy_dtype", "dtype_of_values",
           "index_value", "dim_index", "rebuilt_tensor", "methods_into"]

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
PYTHON_DTYPES = {float: D.float64, int: D.int64, bool: D.bool_}


def dtype_arg(d):
    """A ``dtype=`` argument as the layer's dtype: a dtype itself, ``None``, or Python's
    ``float``, ``int``, ``bool`` (``float64``, ``int64``, ``bool``, as torch reads them);
    anything else refused.

    >>> dtype_arg(float), dtype_arg(D.float32), dtype_arg(None) is None
    (torch.float64, torch.float32, True)
    """
    if d is None or isinstance(d, D.DType):
        return d
    if isinstance(d, type) and d in PYTHON_DTYPES:
        return PYTHON_DTYPES[d]
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


def contiguous_strides(shape) -> tuple:
    """The strides of a contiguous (row-major) tensor of ``shape``."""
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


def scalar_dtype(x):
    """The dtype torch gives a Python number ``x`` (or one float value of a format)."""
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
            d, g = scalar_dtype(x), 2
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


def flattened(data, shape=None):
    """``(values, shape)`` of nested lists (or a tensor, or one value): the values in row-major
    order."""
    if isinstance(data, Tensor):
        return data._values(), tuple(data.shape)
    if isinstance(data, (list, tuple)):
        if not data:
            return [], (0,)
        parts = [flattened(x) for x in data]
        inner = parts[0][1]
        if any(p[1] != inner for p in parts):
            raise refuse("torch.tensor of nested lists of different lengths")
        return [v for p in parts for v in p[0]], (len(data),) + inner
    return [data], ()


def numpy_dtype(data):
    """The layer's dtype of a NumPy array or scalar (``None`` for anything else)."""
    if type(data).__module__ != "numpy" or not hasattr(data, "dtype"):
        return None
    name = {"bool": "bool"}.get(data.dtype.name, data.dtype.name)
    if name not in D.DTYPES:
        raise refuse(f"a NumPy array of dtype {data.dtype.name} is outside exactspec's tensor "
                     "layer")
    return D.DTYPES[name]


def dtype_of_values(values) -> D.DType:
    """The dtype ``torch.tensor`` infers from the values (bool, int, a float format's, else the
    default dtype)."""
    if values and all(isinstance(v, bool) for v in values):
        return D.bool_
    if values and all(isinstance(v, int) for v in values):
        return D.int64
    fv = [v for v in values if isinstance(v, FloatValue)]
    if fv:
        return D.DTYPES[fv[0].fmt.name]
    return D.default_dtype()


def index_value(i) -> int:
    """An index argument as a Python int (an int or a one-element integer tensor)."""
    if isinstance(i, Tensor):
        if i.numel() != 1 or i.dtype.kind == "float":
            raise refuse("an index must be an integer (or a one-element integer tensor)")
        return int(i._values()[0])
    if isinstance(i, bool) or not isinstance(i, int):
        raise refuse(f"index {i!r}: not an integer")
    return i


def dim_index(d, ndim: int) -> int:
    """The dimension argument ``d`` of a tensor of ``ndim`` dimensions in ``range(ndim)``
    (negative counts from the end), refused when out of range."""
    d = index_value(d)
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
        check_deadline()                 # every operation makes its result here
        shape = tuple(shape)
        return cls(Storage(values), shape, contiguous_strides(shape), 0, dtype)

    @classmethod
    def of(cls, data, dtype=None) -> "Tensor":
        """``torch.tensor(data, dtype=dtype)``; a NumPy array or scalar keeps its dtype, as
        ``torch.tensor`` keeps it (its floats taken at their exact binary values)."""
        dtype = dtype_arg(dtype)
        array_dtype = numpy_dtype(data)
        if array_dtype is not None:
            data = data.tolist() if hasattr(data, "tolist") else data.item()
        values, shape = flattened(data)
        dtype = dtype or array_dtype or (data.dtype if isinstance(data, Tensor)
                                         else dtype_of_values(values))
        if dtype.kind == "float" and not current().exact:
            values = [unpacked_double(v) if type(v) is int else v for v in values]
        return cls.new([cast(v, dtype) for v in values], shape, dtype)

    def __reduce__(self):
        # rebuilt by this module's function: pickle never looks the class up as torch.Tensor
        return (rebuilt_tensor, (self._st, self._shape, self._strides, self._off, self.dtype))

    # -- shape -------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._shape)
        return self._shape[dim_index(dim, self.ndim)]

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
        return self._strides if dim is None else self._strides[dim_index(dim, self.ndim)]

    def is_contiguous(self) -> bool:
        expected = contiguous_strides(self._shape)
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
        shape = self._shape
        if len(shape) == 1 and self._strides[0] == 1:      # a row in place: one slice
            out = data[self._off:self._off + shape[0]]
            if type(out) is not list:                      # (a fresh list, as below)
                out = list(out)
        else:
            out = [data[p] for p in self._positions()]
        if any(map(operator.is_, out, repeat(UNSET))):
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
                if pos in seen and not same_value(seen[pos], v):
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
            if isinstance(a, D.DType) or (isinstance(a, type) and a in PYTHON_DTYPES):
                dtype = dtype_arg(a)
            elif isinstance(a, Tensor):
                dtype = a.dtype
            elif isinstance(a, bool):          # non_blocking or copy given by position
                continue
            elif a is not None:
                check_device(a)
        if dtype is None or dtype is self.dtype:
            return self
        return Tensor.new(cast_row(self._values(), dtype), self._shape, dtype)

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
        # a value type's own reading: a split is a bool (the engine branches), a value of the
        # draft's branches has none
        if type(v) in PYTHON:
            return PYTHON[type(v)](v, "read into Python")
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
        return bool(python_value(cast(self._values()[0], D.bool_)))

    def __int__(self):
        if self.numel() != 1:
            raise refuse(f"int() of a tensor of {self.numel()} elements")
        return python_value(cast(self._values()[0], D.int64))

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


def rebuilt_tensor(storage, shape, strides, offset, dtype) -> Tensor:
    """A tensor unpickled (:meth:`Tensor.__reduce__`)."""
    return Tensor(storage, shape, strides, offset, dtype)


#: Names of a class body that are not methods of the tensor (``__hash__``: a body that
#: defines ``__eq__`` sets it to ``None``; the tensor keeps its own)
_NOT_METHODS = frozenset({"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__",
                          "__hash__"})


def tensor_methods(methods: type) -> type:
    """Make the methods (and properties, and aliases) of the class body ``methods`` the
    :class:`Tensor`'s: the tensor's methods of one concern are written in a module of their
    own.  A name the tensor has already is refused (two modules defining one method).

    Parameters
    ----------
    methods : type
        A class whose body holds tensor methods (it is not a base of the tensor).

    Returns
    -------
    type
        ``methods`` itself, so that this is a class decorator.
    """
    return methods_into(Tensor)(methods)


def methods_into(cls: type):
    """The class decorator that makes the methods of a class body ``cls``'s, refusing a name
    ``cls`` has already (:func:`tensor_methods` for :class:`Tensor`; the Triton layer's block
    takes its methods the same way)."""
    def decorate(methods: type) -> type:
        for name, value in vars(methods).items():
            if name in _NOT_METHODS:
                continue
            if name in vars(cls):
                raise TypeError(f"{cls.__name__}.{name} is defined twice ({methods.__name__})")
            setattr(cls, name, value)
        return methods
    return decorate
