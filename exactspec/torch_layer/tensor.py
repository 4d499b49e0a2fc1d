"""The tensor of the layer: n-d views over a shared storage, with torch's semantics.

A :class:`Tensor` is a view (``shape``, ``strides``, ``offset``) over a :class:`Storage`, a flat
list of elements (:mod:`exactspec.torch_layer.values`).  Basic indexing (ints, slices, ``None``, ``...``),
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

The tensor is written in modules by concern, gathered here (every name importers use is
this module's): its storage, construction and reads into Python (:mod:`.tensor_core`), views
(:mod:`.tensor_views`), indexing (:mod:`.tensor_indexing`), elementwise operations
(:mod:`.tensor_elementwise`), reductions and sorts (:mod:`.tensor_reductions`), the element
rules they share (:mod:`.tensor_elements`); a value type with rules of its own (the draft
axis's, :mod:`.axis_values`) is handled by its rules, looked up by its type
(:mod:`.dispatch`).

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

from fractions import Fraction  # noqa: F401  (the examples above)

# the tensor's methods of each concern, made its own where their modules are imported
from . import tensor_elementwise, tensor_indexing, tensor_reductions, tensor_views  # noqa: F401
from .axis_values import law_token_decide  # noqa: F401
from .dispatch import OPS
from .tensor_core import (MAX_ELEMENTS, PYTHON_DTYPES, STABLE_SORT_LANE, SUM_TERMS, Size,
                          Storage, Tensor, ValuesIndices, as_tensor, broadcast_shapes,
                          check_device, check_size, contiguous_strides, dim_index, dtype_arg,
                          dtype_of_values, flattened, index_value, numpy_dtype, rebuilt_tensor,
                          result_type, scalar_dtype)
from .tensor_elements import (DECIDED_SIGNS, all_rationals, cast_format, check_int_range,
                              checked_index, decide, element_extreme, exact_element_power,
                              float_element_power, index_tuples, is_inf, is_sympy,
                              multi_indices, python_value, read, same_value, settled_float,
                              truncated_division, truth, unpacked_double)
from .tensor_elementwise import tensor_extreme
from .tensor_reductions import (TieOrder, arg_index, lane_sum, running, running_product,
                                running_sum, sorted_order, tie_ordered)

__all__ = ["Tensor", "Storage", "Size", "SUM_TERMS", "STABLE_SORT_LANE", "MAX_ELEMENTS",
           "TieOrder", "result_type", "as_tensor", "broadcast_shapes", "check_size", "dtype_arg",
           "check_device", "OPS", "ValuesIndices", "read", "decide", "cast_format"]
