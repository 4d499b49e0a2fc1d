"""The dtypes of the tensor layer, torch's promotion rules, and how one value is held in each.

A value of a float dtype is held as an exact number in the exact run (a ``Fraction``; ``inf``
and ``nan`` as Python floats; an exact sympy number after an exact ``exp``) and as a
:class:`~exactspec.engine.floats.FloatValue` of the dtype's format under ``--arith`` (every
operation rounded once, as IEEE 754 does).  An ``int64`` value is a Python ``int``, a ``bool``
value a Python ``bool``.  Explicit uniforms and exponential noise from the random constructors
stay the engine's objects (:mod:`exactspec.engine.uniform`), so that comparing them branches.

Promotion follows torch: ``bool < integer < floating`` by category; within a category the wider
dtype wins (``float16`` with ``bfloat16`` gives ``float32``); a zero-dimensional tensor counts
only when it is of a higher category than the dimensioned operands, and a Python number only
raises the category (an ``int64`` tensor plus ``0.5`` is of the default float dtype).

>>> promote(float16, bfloat16), promote(int64, float16), promote(bool_, int64)
(torch.float32, torch.float16, torch.int64)
"""

from __future__ import annotations

from fractions import Fraction

from ..engine.floats import FORMATS, FloatFormat
from .context import current, refuse

__all__ = ["DType", "float16", "bfloat16", "float32", "float64", "int32", "int64", "bool_",
           "DTYPES", "promote", "category", "finfo", "iinfo", "device", "default_dtype"]

_CATEGORY = {"bool": 0, "int": 1, "float": 2}


class DType:
    """A tensor dtype: ``name`` (``"float32"``), ``kind`` (``"bool"``, ``"int"`` or
    ``"float"``) and ``rank`` within the kind (the wider, the higher)."""

    __slots__ = ("name", "kind", "rank", "bits")

    def __init__(self, name: str, kind: str, rank: int, bits: int):
        self.name = name
        self.kind = kind
        self.rank = rank
        self.bits = bits

    @property
    def is_floating_point(self) -> bool:
        return self.kind == "float"

    @property
    def itemsize(self) -> int:
        return max(1, self.bits // 8)

    @property
    def format(self) -> FloatFormat | None:
        """The float format of a float dtype (None otherwise)."""
        return FORMATS.get(self.name)

    def to_real(self):
        return self

    def __repr__(self):
        return f"torch.{self.name}"

    def __reduce__(self):
        return (_named, (self.name,))


float16 = DType("float16", "float", 1, 16)
bfloat16 = DType("bfloat16", "float", 1, 16)
float32 = DType("float32", "float", 2, 32)
float64 = DType("float64", "float", 3, 64)
int32 = DType("int32", "int", 1, 32)
int64 = DType("int64", "int", 2, 64)
bool_ = DType("bool", "bool", 0, 8)

DTYPES = {d.name: d for d in (float16, bfloat16, float32, float64, int32, int64, bool_)}


def _named(name):
    return DTYPES[name]


def default_dtype() -> DType:
    """The default float dtype of the run: ``float32``, or the ``--arith`` format."""
    return DTYPES[current().default_name]


def category(d: DType) -> int:
    """0 for bool, 1 for the integer dtypes, 2 for the float dtypes."""
    return _CATEGORY[d.kind]


def promote(a: DType, b: DType) -> DType:
    """The dtype torch computes ``a op b`` in, for two tensors of the same standing."""
    if a is b:
        return a
    ca, cb = category(a), category(b)
    if ca != cb:
        return a if ca > cb else b
    if a.rank == b.rank:          # float16 with bfloat16: neither holds the other
        return float32
    return a if a.rank > b.rank else b


class finfo:
    """``torch.finfo(dtype)``: ``bits``, ``eps``, ``max``, ``min``, ``tiny`` (smallest normal,
    also ``smallest_normal``), ``resolution``, as Python floats (exact binary values).

    >>> f = finfo(float32)
    >>> f.eps == 2.0 ** -23, f.tiny == 2.0 ** -126, f.max > 3.4e38
    (True, True, True)
    """

    def __init__(self, dtype: DType = None):
        dtype = float32 if dtype is None else dtype
        fmt = getattr(dtype, "format", None)
        if fmt is None:
            from ..core.errors import InvalidInput

            raise InvalidInput(f"torch.finfo({dtype!r}): finfo takes a float dtype")
        self.dtype = dtype.name
        self.bits = dtype.bits
        self.eps = float(Fraction(1, 2 ** (fmt.precision - 1)))
        self.max = fmt.max_value
        self.min = -fmt.max_value
        self.tiny = self.smallest_normal = float(Fraction(2) ** fmt.emin)
        digits = int((fmt.precision - 1) * 0.30102999566398120)
        self.resolution = float(10.0 ** -digits)

    def __repr__(self):
        return f"finfo(eps={self.eps}, max={self.max}, tiny={self.tiny}, dtype={self.dtype})"


class iinfo:
    """``torch.iinfo(dtype)``: ``bits``, ``min``, ``max`` of an integer dtype."""

    def __init__(self, dtype: DType):
        if dtype.kind != "int":
            from ..core.errors import InvalidInput

            raise InvalidInput(f"torch.iinfo({dtype!r}): iinfo takes an integer dtype")
        self.dtype = dtype.name
        self.bits = dtype.bits
        self.max = 2 ** (dtype.bits - 1) - 1
        self.min = -(2 ** (dtype.bits - 1))


class device:
    """``torch.device``: only the CPU (``"cpu"``, ``"cpu:0"``, ``("cpu", 0)`` or a device)."""

    def __init__(self, kind="cpu", index=None):
        if isinstance(kind, device):
            kind, index = kind.type, kind.index if index is None else index
        name, _, number = str(kind).partition(":")
        self.type = name
        if self.type != "cpu":
            raise refuse(f"torch.device({kind!r}): exactspec runs a PyTorch rule on its own CPU "
                         "tensor layer")
        self.index = int(number) if number and index is None else index

    def __repr__(self):
        return "device(type='cpu')" if self.index is None else \
            f"device(type='cpu', index={self.index})"

    def __str__(self):
        return "cpu" if self.index is None else f"cpu:{self.index}"

    def __eq__(self, other):
        return getattr(other, "type", other) == "cpu"

    __hash__ = object.__hash__
