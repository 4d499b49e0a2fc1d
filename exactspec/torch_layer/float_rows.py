"""Whole rows of one float format, computed by NumPy: the layer's elementwise ops at vocabulary
size under ``--arith``.

Under ``--arith`` a tensor's elements are :class:`~exactspec.engine.floats.FloatValue`\\ s and
each operation is rounded once into the dtype.  For a row of ``float32``, ``float16`` or
``float64`` values (every one a value of the dtype), ``+ - * /`` are computed here on the whole
row in ``float64`` (exact for ``float64``; for the two narrower formats the double rounding
through binary64 is innocuous, :attr:`~exactspec.engine.floats.FloatFormat.fast`) and rounded
into the dtype by NumPy's cast (round to nearest, ties to even, subnormals, overflow to
``inf``: checked equal to :meth:`~exactspec.engine.floats.FloatFormat.round` in
``tests/test_floats.py``), and ``maximum``/``minimum`` take the same element as the scalar
route (:func:`extreme`: NaN propagates, a tie keeps the first operand).  ``bfloat16``, which
NumPy has no dtype for, and rows holding anything else (an exact number, a random value, a
draft branch) take the scalar route.  A ``float16`` row multiplied or divided by a scalar
(:func:`opmath`) is computed as torch's CPU kernel computes it: in ``float32``, each result
rounded to ``float32`` and then to ``float16``.

>>> from exactspec.engine.floats import FORMATS, FloatValue
>>> f32 = FORMATS["float32"]
>>> row = [FloatValue(1.0, f32), FloatValue(3.0, f32)] * 32
>>> [v.value for v in binary(operator.truediv, row, [FloatValue(3.0, f32)] * 64, f32)][:2]
[0.3333333432674408, 1.0]
>>> binary(operator.truediv, row[:2], row[:2], f32) is None     # short rows: element by element
True
"""

from __future__ import annotations

import operator

from ..engine.floats import FloatFormat, FloatValue

__all__ = ["NUMPY_FORMATS", "values_of", "binary", "opmath", "extreme"]

#: The formats whose rows NumPy computes (its dtype of the same name rounds as they do).
NUMPY_FORMATS = ("float32", "float16", "float64")

#: Rows shorter than this take the scalar route (NumPy's start-up costs more there).
MIN_ROW = 64

_OPS = (operator.add, operator.sub, operator.mul, operator.truediv)


def values_of(row, fmt: FloatFormat):
    """The float64 array of ``row``'s values when every element is a :class:`FloatValue`
    of ``fmt`` (and ``fmt`` is one of :data:`NUMPY_FORMATS`); ``None`` otherwise."""
    if fmt.name not in NUMPY_FORMATS:
        return None
    out = []
    append = out.append
    for v in row:
        if type(v) is not FloatValue or v.fmt is not fmt:
            return None
        append(v.value)
    import numpy as np

    return np.array(out, dtype=np.float64)


def _held(array, fmt: FloatFormat) -> list:
    import numpy as np

    if fmt.name != "float64":
        array = array.astype(np.dtype(fmt.name)).astype(np.float64)
    return [FloatValue(x, fmt) for x in array.tolist()]


def binary(op, xs, ys, fmt: FloatFormat):
    """``[op(x, y) for x, y in zip(xs, ys)]`` rounded into ``fmt``, for two rows of ``fmt``'s
    values of one length; ``None`` where the rows are not such rows (the caller computes
    element by element)."""
    rows = _two_rows(xs, ys, fmt) if op in _OPS else None
    if rows is None:
        return None
    import numpy as np

    with np.errstate(all="ignore"):
        return _held(op(*rows), fmt)


def opmath(op, xs, ss, fmt: FloatFormat):
    """``x op s`` for a row ``xs`` of ``fmt``'s values and a row ``ss`` of ``float32`` values
    (a scalar operand, :func:`~exactspec.torch_layer.values.opmath_scalar`), ``op`` a
    multiplication or division: computed in ``float32`` and rounded into ``fmt``
    (:func:`~exactspec.torch_layer.values.opmath_arith` element by element); ``None`` for
    short rows, other values, or a format NumPy has no dtype for (``bfloat16``)."""
    if op not in (operator.mul, operator.truediv) or fmt.name != "float16" or \
            len(xs) < MIN_ROW:
        return None
    a = values_of(xs, fmt)
    if a is None:
        return None
    from ..engine.floats import FORMATS

    b = values_of(ss, FORMATS["float32"])
    if b is None:
        return None
    import numpy as np

    with np.errstate(all="ignore"):
        r = op(a.astype(np.float32), b.astype(np.float32))      # float32 arithmetic
        return _held(r.astype(np.float64), fmt)


def _two_rows(xs, ys, fmt: FloatFormat):
    """The two rows as NumPy arrays of ``fmt``, or ``None`` (short rows, other values)."""
    if len(xs) < MIN_ROW:
        return None
    a = values_of(xs, fmt)
    b = None if a is None else values_of(ys, fmt)
    return None if b is None else (a, b)


def extreme(xs, ys, fmt: FloatFormat, maximum: bool):
    """``torch.maximum``/``minimum`` of two rows of ``fmt``'s values as the scalar route takes
    them: a NaN operand wins (the first when both are), otherwise the second operand when it is
    strictly larger (smaller), else the first; ``None`` as :func:`binary`."""
    rows = _two_rows(xs, ys, fmt)
    if rows is None:
        return None
    a, b = rows
    import numpy as np

    with np.errstate(all="ignore"):
        nan_a, nan_b = np.isnan(a), np.isnan(b)
        larger = (b > a) if maximum else (b < a)
        take_b = ~nan_a & (nan_b | larger)
    return [y if t else x for x, y, t in zip(xs, ys, take_b.tolist())]
