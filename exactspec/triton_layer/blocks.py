"""Triton's dtypes, its promotion, and the block (:class:`tensor`, Triton's name) they type.

A block is a torch-layer tensor (:mod:`exactspec.torch_layer`) holding the elements, with a
Triton dtype beside it; a block of pointers holds integer element offsets into one launch
argument's storage.  The block's operators and methods are written by concern and made its own
where their modules are imported (:func:`block_methods`): arithmetic, comparisons, casts
(:mod:`.operators`), ``exp``/``log`` (:mod:`.elementwise`), reductions and scans
(:mod:`.reductions`); :mod:`.language` imports them all.

Promotion (Triton's language reference, "Triton Semantics"): between two blocks, the higher
kind wins (``bool < integer < floating``); within a kind the wider dtype; ``float16`` with
``bfloat16`` gives ``float32``.  A Python number or a ``tl.constexpr`` value is a scalar that
takes part only when its kind is higher than the block's, as ``int32`` (``int64`` when it does
not fit) or ``float32`` (``float64`` beyond ``float32``'s range).  A non-constexpr kernel
argument is not such a scalar: a Python ``int`` is an ``int32`` block (``int64`` when it does
not fit), a ``float`` a ``float32`` block.

>>> promote(int32, float32), scalar_block(3, int64)
(fp32, <triton block int64[]>)
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..engine.floats import FORMATS, FloatValue
from ..torch_layer import dtypes as D
from ..torch_layer.branched import Branched
from ..torch_layer.tensor import Tensor
from ..torch_layer.tensor_core import methods_into
from ..torch_layer.values import UNSET
from .errors import refuse

#: ``tensor`` and ``dtype`` are defined here and documented where the layer gathers them
#: (``language``), so they are not listed: one description of each, which the annotations
#: of the layer's functions name.
__all__ = ["DTYPES", "KIND", "OF_TORCH", "PropagateNan", "block", "block_methods",
           "broadcast_mark", "check_range", "constexpr", "element", "has_nan", "is_scalar",
           "modelled", "pointer_type", "promote", "result_dtype", "scalar_block",
           "scalar_dtype", "scalar_kind", "undefined_of"]


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

#: the order of the kinds in promotion (the higher kind wins)
KIND = {"bool": 0, "int": 1, "float": 2}


def modelled(d: dtype) -> dtype:
    """``d`` itself, refused when the layer does not model its values."""
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
    not yet rounded into anything else (for the fused multiply-add refusal).

    The operators and the methods Triton forwards to its free functions are the block's from
    the modules of their concern (:func:`block_methods`)."""

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

    __hash__ = object.__hash__

    def __getitem__(self, key):
        """``x[None, :]``, ``x[:, None]``: new axes of length 1 (Triton's only indexing)."""
        key = key if isinstance(key, tuple) else (key,)
        for k in key:
            if not (k is None or (isinstance(k, slice) and k == slice(None))):
                raise refuse("a Triton block is indexed only by None and ':' (new axes)")
        t = self.t[key]
        und = self.undefined[key] if self.undefined is not None else None
        return tensor(t, self.dtype, self.base, und, self.product)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)            # probes (hasattr(x, "__array__")) stay quiet
        raise refuse(f"the Triton block method .{name} is outside exactspec's Triton layer")

#: names of a class body that are not methods to give the block
def block_methods(methods: type) -> type:
    """Make the methods of the class body ``methods`` the block's (:class:`tensor`'s): the
    block's methods of one concern are written in a module of their own.  A name the block has
    already is refused (two modules defining one method).

    Parameters
    ----------
    methods : type
        A class whose body holds block methods (it is not a base of the block).

    Returns
    -------
    type
        ``methods`` itself, so that this is a class decorator.
    """
    return methods_into(tensor)(methods)


def block(t: Tensor, dtype_: dtype, undefined=None, product=False) -> tensor:
    """A block of ``dtype_`` over ``t`` (already holding values of ``dtype_.torch``)."""
    return tensor(t, dtype_, None, undefined, product)


def scalar_block(value, dtype_: dtype) -> tensor:
    """A 0-d block holding the Python number (or element) ``value`` as a value of ``dtype_``."""
    modelled(dtype_)
    t = Tensor.new([UNSET], (), dtype_.torch)
    t._st.data[0] = element(value, dtype_)
    return block(t, dtype_)


def element(value, dtype_: dtype):
    """A Python number as an element of ``dtype_`` (the tensor layer's cast)."""
    from ..torch_layer.values import cast as element_cast

    if dtype_.kind == "int" and isinstance(value, int) and not isinstance(value, bool):
        check_range([value], dtype_)
    return element_cast(value, dtype_.torch)


def check_range(values, dt: dtype) -> None:
    """Refuse an integer of ``values`` outside the range of ``dt`` (the GPU wraps it)."""
    bound = 1 << (dt.bits - 1)
    for v in values:
        if type(v) is int and not -bound <= v < bound:
            raise refuse(f"{dt.name} overflow in a kernel: {v} is outside [-2**{dt.bits - 1}, "
                         f"2**{dt.bits - 1}) and the GPU wraps it around (compute the offset "
                         "in tl.int64: x.to(tl.int64))")


def is_scalar(x) -> bool:
    """Whether ``x`` is a Python number (a scalar of an operation), not a block."""
    return isinstance(x, (bool, int, float, Fraction)) and not isinstance(x, tensor)


def scalar_kind(x) -> str:
    """The kind of a Python number: ``"bool"``, ``"int"`` or ``"float"``."""
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return "int"
    return "float"


def scalar_dtype(x) -> dtype:
    """The dtype a Python number takes when its kind is higher than the block's."""
    kind = scalar_kind(x)
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
    if KIND[a.kind] != KIND[b.kind]:
        return a if KIND[a.kind] > KIND[b.kind] else b
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    return float32                                  # float16 with bfloat16: the supremum


def result_dtype(a, b) -> dtype:
    """The dtype of ``a op b`` for blocks or Python numbers (at least one a block)."""
    if isinstance(a, tensor) and isinstance(b, tensor):
        return promote(a.dtype, b.dtype)
    blk, s = (a, b) if isinstance(a, tensor) else (b, a)
    if KIND[scalar_kind(s)] <= KIND[blk.dtype.kind]:
        return blk.dtype
    return promote(blk.dtype, scalar_dtype(s))


def undefined_of(*blocks):
    """The union of the undefined-lane marks of ``blocks`` (``None``: no lane undefined)."""
    marks = [b.undefined for b in blocks if isinstance(b, tensor) and b.undefined is not None]
    if not marks:
        return None
    out = marks[0]
    for m in marks[1:]:
        out = out | m
    return out


def broadcast_mark(mark, shape):
    """The undefined-lane mark ``mark`` broadcast to ``shape`` (``None`` stays ``None``)."""
    if mark is None:
        return None
    return mark.expand(*shape).contiguous() if tuple(mark.shape) != tuple(shape) else mark


def has_nan(t: Tensor) -> bool:
    """Whether a tensor-layer tensor holds a NaN (on any draft branch)."""
    for v in t._values():
        vals = v.values if type(v) is Branched else (v,)
        for w in vals:
            x = w.value if isinstance(w, FloatValue) else w
            if isinstance(x, float) and x != x:
                return True
    return False
