"""The tensor's indexing: ``t[key]``, ``t[key] = value``, masked fills, scatters, index adds.

Basic indexing (ints, slices, ``None``, ``...``) gives a view; advanced indexing (integer
tensors, lists, boolean masks) copies, and assigning through it writes the positions it
names (refused where one position would get two different values: which one torch keeps
depends on the hardware's order).  An index on every draft branch (the vectorised route,
:mod:`.axis_values`) is checked on every branch and reads every branch's element.

>>> t = Tensor.of([10, 20, 30])
>>> t[Tensor.of([2, 0])].tolist(), t[t > 15].tolist()
([30, 10], [20, 30])
"""

from __future__ import annotations

import math

from . import dtypes as D
from .context import refuse
from .dispatch import OPS
from .tensor_core import (Tensor, as_tensor, broadcast_shapes, check_size, dim_index,
                          index_value, tensor_methods)
from .tensor_elements import checked_index, index_tuples, multi_indices, read
from .values import UNSET, cast, check_python_int, scalar_to

__all__ = ["TensorIndexing"]


@tensor_methods
class TensorIndexing:
    """The tensor's indexing and indexed writes (methods of :class:`~.tensor_core.Tensor`)."""

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
                k = index_value(k)             # torch selects with it: a view, like an int
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
                if k.step is not None and index_value(k.step) <= 0:
                    raise refuse("a slice step must be positive (torch refuses it too)")
                n = self._shape[d]
                parts.append(("slice", d, range(*k.indices(n))))
                d += 1
            elif isinstance(k, Tensor) and k.dtype is D.bool_:
                if tuple(k._shape) != tuple(self._shape[d:d + k.ndim]):
                    raise refuse(f"mask of shape {list(k._shape)} does not match the indexed "
                                 f"shape {list(self._shape[d:d + k.ndim])}")
                hits = [idx for idx, v in zip(multi_indices(k._shape), k._values()) if v]
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
                i = index_value(k)
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
        adv_values = [[checked_index(v, self._shape[p[1]], p[1])
                       for v in p[2]._expanded_values(bshape)] for p in adv]
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
        for combo in index_tuples(ranges):
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
        d = dim_index(dim, self.ndim)
        source = as_tensor(source) if alpha == 1 else as_tensor(source) * alpha
        index = as_tensor(index).reshape(-1)
        shape = [1] * source.ndim
        shape[d] = index.numel()
        spread = index.reshape(shape).expand(source.shape) if source.ndim else index
        return self.scatter_add_(d, spread.contiguous(), source)

    def index_add(self, dim, index, source, alpha=1):
        return self.clone().index_add_(dim, index, source, alpha)
