"""The tensor's elementwise operations: arithmetic, comparisons, promotion, in-place writes.

Operations broadcast and promote as torch does (:func:`~.tensor_core.result_type`,
:mod:`.dtypes`); a whole row of exact rationals is computed by integers
(:mod:`.rational_rows`), under ``--arith`` a whole row of ``float32``, ``float16`` or
``float64`` values by NumPy (:mod:`.float_rows`), rounded as the scalar route
(:func:`~.values.arith`) rounds; half precision's multiplication and division by a scalar in
``float32`` ("opmath", see :mod:`.tensor`); integer powers as torch's CPU kernel computes
them; in-place operations write into the storage.

>>> a = Tensor.of([1, 2, 3])
>>> (a * 2 + 1).tolist(), (a / 2).tolist()[0], (a > 1).tolist()
([3, 5, 7], Fraction(1, 2), [False, True, True])
"""

from __future__ import annotations

import math
import operator
from fractions import Fraction

from ..engine.floats import FORMATS, FloatValue
from . import dtypes as D
from . import float_rows
from .context import current, refuse
from .dispatch import EXTREME, OPS, binary_rule
from .rational_rows import rational_extreme, rational_row
from .tensor_core import (Tensor, as_tensor, broadcast_shapes, check_size, result_type,
                          tensor_methods)
from .tensor_elements import (all_rationals, check_int_range, decide, element_extreme,
                              exact_element_power, float_element_power, is_inf,
                              truncated_division)
from .values import (HALF_FORMATS, arith, cast, cast_row, check_python_int, is_nan, opmath_arith,
                     opmath_scalar, scalar_to)

__all__ = ["TensorElementwise", "tensor_extreme"]


#: Operations whose result on two plain values of a dtype's kind (``int`` for integer dtypes,
#: ``Fraction`` for float dtypes in the exact run) is the Python operation itself: what
#: :func:`~.values.cast` and :func:`~.values.arith` give for them (``int`` rows are range
#: checked after).
_PLAIN_OPS = frozenset((operator.add, operator.sub, operator.mul))
_PLAIN_PAIRS = {"int": int, "float": Fraction}
#: ``&``, ``|``, ``^`` of plain bools (a kernel's masks) or ints: the operator, as arith gives it
_BITWISE = frozenset((operator.and_, operator.or_, operator.xor))
_BITWISE_PAIRS = {"bool": bool, "int": int}


@tensor_methods
class TensorElementwise:
    """The tensor's elementwise and in-place operations (methods of
    :class:`~.tensor_core.Tensor`)."""

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
        if dtype.kind == "float" and current().exact and all_rationals(av) and all_rationals(bv) \
                and (op is not operator.truediv or all(bv)):
            # exact rationals: cast leaves them as they are and arith is the plain operation
            out = rational_row(op, av, bv) if n >= float_rows.MIN_ROW else None
            if out is None:
                out = [op(x, y) for x, y in zip(av, bv)]
            return Tensor.new(out, shape, D.bool_ if compare else dtype)
        plain = _PLAIN_PAIRS.get(dtype.kind) if compare or op in _PLAIN_OPS else \
            _BITWISE_PAIRS.get(dtype.kind) if op in _BITWISE else None
        if plain is not None and (dtype.kind != "float" or current().exact):
            # plain pairs (a kernel's masked lanes beside noise, int offsets) as cast and
            # arith or decide would compute them, at once; a Python number cast once
            if not isinstance(a, Tensor):
                av = [cast(a, dtype)] * n
            if not isinstance(b, Tensor):
                bv = [cast(b, dtype)] * n
        else:
            plain = None
        if compare:
            lazy_row = getattr(current().sampler, "lazy_compare_row", None)
            if lazy_row is not None and n >= float_rows.MIN_ROW:
                out = lazy_row(op, av, bv)      # a row against one uniform: lazy, at once
                if out is not None:
                    return Tensor.new(out, shape, D.bool_)
            if plain is not None:
                out = [op(x, y) if type(x) is plain and type(y) is plain else
                       decide(op, cast(x, dtype), cast(y, dtype)) for x, y in zip(av, bv)]
            else:
                out = [decide(op, cast(x, dtype), cast(y, dtype)) for x, y in zip(av, bv)]
            return Tensor.new(out, shape, D.bool_)
        if op is operator.truediv and n >= float_rows.MIN_ROW and dtype.kind == "float":
            out = OPS["race_scores"](av, bv, None if current().exact else dtype.name)
            if out is not None:                  # w / E of a race, on a whole row
                return Tensor.new(out, shape, dtype)
        if op is operator.mul and n >= float_rows.MIN_ROW and dtype.kind == "float" and \
                current().exact:
            out = OPS["race_products"](av, bv)
            if out is not None:                  # prob * (1 / E) of a race, on a whole row
                return Tensor.new(out, shape, dtype)
        if dtype.kind == "float" and not current().exact and n >= float_rows.MIN_ROW:
            xs = cast_row(av, dtype) if isinstance(a, Tensor) else [cast(a, dtype)] * n
            ys = cast_row(bv, dtype) if isinstance(b, Tensor) else [cast(b, dtype)] * n
            out = float_rows.binary(op, xs, ys, FORMATS[dtype.name])   # a whole row by NumPy
            if out is None:
                out = [arith(op, x, y) for x, y in zip(xs, ys)]
            return Tensor.new(out, shape, dtype)
        if plain is not None:
            out = [op(x, y) if type(x) is plain and type(y) is plain else
                   arith(op, cast(x, dtype), cast(y, dtype)) for x, y in zip(av, bv)]
        else:
            out = [arith(op, cast(x, dtype), cast(y, dtype)) for x, y in zip(av, bv)]
        if dtype.kind == "int":
            check_int_range(out, dtype)
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
        return self._binary(o, truncated_division)

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
            out = [exact_element_power(cast(v, dtype), n) for v in self._values()]
            check_int_range(out, dtype if dtype is not D.bool_ else D.int64)
            return Tensor.new(out, self._shape, dtype if dtype is not D.bool_ else D.int64)
        if current().exact:
            return Tensor.new([exact_element_power(cast(v, dtype), n) for v in self._values()],
                              self._shape, dtype)
        if n not in (0, 1, 2, 3, -1, -2):
            raise refuse(f"pow with exponent {exponent} under --arith: torch's CPU kernel calls "
                         "a vectorised pow function there, whose rounding exactspec does not "
                         "model (exponents 0, 1, 2, 3, -1, -2 are computed as torch does); "
                         "write the product out, or run exactly")
        fmt = FORMATS[dtype.name]
        return Tensor.new([float_element_power(cast(v, dtype), n, fmt) for v in self._values()],
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
        return Tensor.new([is_inf(v) for v in self._values()], self._shape, D.bool_)

    def isfinite(self):
        return Tensor.new([not (is_inf(v) or is_nan(v)) for v in self._values()], self._shape,
                          D.bool_)

    def clamp(self, min=None, max=None):
        if min is None and max is None:
            raise refuse("clamp needs min or max")
        for bound in (min, max):                   # a number beyond the dtype: torch refuses
            if bound is not None and not isinstance(bound, Tensor):
                scalar_to(bound, result_type(self, bound))
        out = self
        if min is not None:
            out = tensor_extreme(out, min, maximum=True)
        if max is not None:
            out = tensor_extreme(out, max, maximum=False)
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
        return tensor_extreme(self, other, maximum=True)

    def minimum(self, other):
        return tensor_extreme(self, other, maximum=False)

    def where(self, condition, other):
        return OPS["where"](condition, self, other)

    def masked_fill(self, mask, value):
        return self.clone().masked_fill_(mask, value)

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


def tensor_extreme(a, b, maximum: bool):
    """``torch.maximum``/``minimum`` (and clamp's two halves): NaN propagates."""
    a = as_tensor(a) if not isinstance(a, Tensor) else a
    dtype = result_type(a, b)
    shape = broadcast_shapes(a._shape, b._shape) if isinstance(b, Tensor) else a._shape
    av = a._expanded_values(shape)
    bv = b._expanded_values(shape) if isinstance(b, Tensor) else [b] * len(av)
    if dtype.kind == "float" and current().exact and len(av) >= float_rows.MIN_ROW and \
            all_rationals(av):
        ys = None
        if isinstance(b, Tensor):        # two rows (a kernel's block 0 broadcast)
            ys = bv if all_rationals(bv) else None
        elif type(b) in (int, float, Fraction):
            y = cast(b, dtype)           # one cast of the scalar for the whole row (a Python
            if type(y) is Fraction:      # float counted once, as every literal is)
                ys = [y] * len(av)
        if ys is not None:
            return Tensor.new(rational_extreme(av, ys, maximum), shape, dtype)
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
        if type(x) in EXTREME or type(y) in EXTREME:       # a value type's own (per branch)
            out.append(binary_rule(EXTREME, x, y)(x, y, maximum, dtype, element_extreme))
        else:
            out.append(element_extreme(x, y, maximum))
    return Tensor.new(out, shape, dtype)
