"""The tensor's views and shapes: ``view``, ``reshape``, ``squeeze``, ``expand``, ``permute``, ...

A view shares its tensor's storage (``shape``, ``strides``, ``offset`` over the same
:class:`~.tensor_core.Storage`), so writing through it writes the tensor it came from, as in
torch; ``repeat``, ``tile``, ``repeat_interleave``, ``outer``, ``index_select``, ``flip``
copy (each refused before it is made when it would be over the layer's size,
:func:`~.tensor_core.check_size`).

>>> t = Tensor.of([[1, 2], [3, 4]])
>>> t.t().tolist(), t.reshape(-1).tolist(), t.unsqueeze(0).shape
([[1, 3], [2, 4]], [1, 2, 3, 4], (1, 2, 2))
"""

from __future__ import annotations

import math

from . import dtypes as D
from .context import refuse
from .tensor_core import (Size, Tensor, as_tensor, broadcast_shapes, check_size,
                          contiguous_strides, dim_index, index_value, tensor_methods)
from .tensor_elements import multi_indices, python_value
from .values import cast

__all__ = ["TensorViews"]


@tensor_methods
class TensorViews:
    """The tensor's views and shape operations (methods of :class:`~.tensor_core.Tensor`)."""

    def _shape_arg(self, shape) -> list:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
            shape = shape[0]
        shape = [index_value(n) for n in shape]
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
        return self._view(shape, contiguous_strides(shape), self._off)

    def reshape(self, *shape):
        shape = self._shape_arg(shape)
        if self.is_contiguous():
            return self._view(shape, contiguous_strides(shape), self._off)
        return Tensor.new(self._values(), shape, self.dtype)

    def flatten(self, start_dim=0, end_dim=-1):
        if self.ndim == 0:
            return self.reshape(1)
        a, b = dim_index(start_dim, self.ndim), dim_index(end_dim, self.ndim)
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
            dims = {dim_index(d, self.ndim) for d in (dim if isinstance(dim, (tuple, list))
                                                  else (dim,))}
            keep = [i for i, n in enumerate(self._shape) if not (i in dims and n == 1)]
        return self._view([self._shape[i] for i in keep], [self._strides[i] for i in keep],
                          self._off)

    def unsqueeze(self, dim):
        d = index_value(dim)
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
        shape = [index_value(n) for n in shape]
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
        sizes = [index_value(n) for n in sizes]
        if len(sizes) < self.ndim or any(n < 0 for n in sizes):
            raise refuse(f"repeat{tuple(sizes)}: give a non-negative count for every dimension "
                         f"of the tensor ({self.ndim})")
        t = self.reshape([1] * (len(sizes) - self.ndim) + list(self._shape))
        shape = [a * n for a, n in zip(t._shape, sizes)]
        check_size(math.prod(shape), f"repeat{tuple(sizes)}")
        src = t._values()
        values = []
        for idx in multi_indices(shape):
            flat = 0
            for i, a, st in zip(idx, t._shape, contiguous_strides(t._shape)):
                flat += (i % a) * st
            values.append(src[flat])
        return Tensor.new(values, shape, self.dtype)

    def repeat_interleave(self, repeats, dim=None):
        """``repeat_interleave``: each element (each slice along ``dim``) repeated, by one
        count or a count per element."""
        t = self.reshape(-1) if dim is None else self
        d = 0 if dim is None else dim_index(dim, t.ndim)
        n = t._shape[d]
        counts = [index_value(c) for c in as_tensor(repeats)._values()] \
            if isinstance(repeats, Tensor) else [index_value(repeats)]
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
        dims = [index_value(n) for n in dims]
        return self.repeat([1] * (self.ndim - len(dims)) + dims)

    def outer(self, other):
        """``outer`` of two 1-D tensors: ``self[i] * other[j]`` (promoted as ``*`` is)."""
        other = as_tensor(other)
        if self.ndim != 1 or other.ndim != 1:
            raise refuse("outer takes two 1-D tensors")
        return self.reshape(-1, 1) * other.reshape(1, -1)

    ger = outer

    def index_select(self, dim, index):
        d = dim_index(dim, self.ndim)
        key = (slice(None),) * d + (as_tensor(index).reshape(-1),)
        return self[key]

    def flip(self, *dims):
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = dims[0]
        key = [slice(None)] * self.ndim
        out = self
        for d in {dim_index(x, self.ndim) for x in dims}:
            key = (slice(None),) * d + (Tensor.of(list(range(self._shape[d] - 1, -1, -1)),
                                                  D.int64),)
            out = out[key]
        return out.clone() if out is self else out

    def nonzero(self, as_tuple=False):
        """The indices of the non-zero elements in row-major order (``[count, ndim]``, or one
        1-D tensor per dimension with ``as_tuple``)."""
        flags = [bool(python_value(cast(v, D.bool_))) for v in self._values()]
        hits = [idx for idx, f in zip(multi_indices(self._shape), flags) if f]
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
        d = dim_index(dim, self.ndim)
        return tuple(self.select(d, i) for i in range(self._shape[d]))

    def select(self, dim, index):
        d = dim_index(dim, self.ndim)
        return self[(slice(None),) * d + (index_value(index),)]

    def narrow(self, dim, start, length):
        d = dim_index(dim, self.ndim)
        start = index_value(start)
        return self[(slice(None),) * d + (slice(start, start + index_value(length)),)]

    def split(self, split_size, dim=0):
        d = dim_index(dim, self.ndim)
        n = self._shape[d]
        if isinstance(split_size, (list, tuple)):
            sizes = [index_value(x) for x in split_size]
            if sum(sizes) != n:
                raise refuse(f"split sizes {sizes} do not add up to {n}")
        else:
            size = index_value(split_size)
            if size <= 0:
                raise refuse("split size must be positive")
            sizes = [min(size, n - i) for i in range(0, n, size)]
        out, start = [], 0
        for k in sizes:
            out.append(self.narrow(d, start, k))
            start += k
        return tuple(out)

    def chunk(self, chunks, dim=0):
        n = self._shape[dim_index(dim, self.ndim)]
        chunks = index_value(chunks)
        return self.split(max(1, -(-n // chunks)), dim)

    def permute(self, *dims):
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = dims[0]
        dims = [dim_index(d, self.ndim) for d in dims]
        if sorted(dims) != list(range(self.ndim)):
            raise refuse(f"permute{tuple(dims)}: not a permutation of the dimensions")
        return self._view([self._shape[d] for d in dims], [self._strides[d] for d in dims],
                          self._off)

    def transpose(self, a, b):
        dims = list(range(self.ndim))
        a, b = dim_index(a, self.ndim), dim_index(b, self.ndim)
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
