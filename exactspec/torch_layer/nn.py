"""``torch.nn`` as engines use it around a sampler: a module class holding its buffers, and padding.

Engines wrap their samplers in ``torch.nn.Module`` subclasses: ``__init__`` calls
``super().__init__()``, keeps tensors with ``register_buffer`` and submodules as attributes (a
``ModuleList`` of them), and is called as ``sampler(...)``, which runs ``forward``.  The
engine moves it with ``.to(device)``, ``.cpu()`` and ``.eval()``, each returning the module
itself.  :class:`Module` gives that plumbing on the layer's tensors; the layer has no autograd,
so a :class:`Parameter` is a tensor like any other and ``train``/``eval`` only set
``training``.  ``.to(dtype)`` (and ``.half()``, ``.double()``, ...) converts the floating-point
parameters and buffers, as torch does; a CUDA device is refused in one line.

:func:`pad` is ``torch.nn.functional.pad`` in its ``"constant"`` mode (negative widths crop).

>>> from .module import installed
>>> with installed() as torch:
...     class Scale(torch.nn.Module):
...         def __init__(self):
...             super().__init__()
...             self.register_buffer("factor", torch.tensor([2], dtype=torch.float64))
...         def forward(self, x):
...             return x * self.factor
...     m = Scale().to("cpu").eval()
...     (m(torch.tensor([1, 3], dtype=torch.float64)).tolist(), m.training)
([Fraction(2, 1), Fraction(6, 1)], False)
"""

from __future__ import annotations

import math
from collections import OrderedDict

from . import dtypes as D
from .context import refuse
from .tensor import Tensor, as_tensor, check_size, dtype_arg, check_device

__all__ = ["Module", "ModuleList", "ModuleDict", "Sequential", "Identity", "Parameter", "pad"]


class Parameter(Tensor):
    """``torch.nn.Parameter``: a tensor (sharing ``data``'s memory) kept by a module as a
    parameter; the layer has no autograd, so ``requires_grad`` changes nothing."""

    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        data = Tensor.new([], (0,), D.float32) if data is None else as_tensor(data)
        out = Tensor.__new__(cls)
        Tensor.__init__(out, data._st, data._shape, data._strides, data._off, data.dtype)
        return out

    def __init__(self, data=None, requires_grad=True):
        pass

    @property
    def data(self) -> Tensor:
        return Tensor(self._st, self._shape, self._strides, self._off, self.dtype)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


def _float_to(t, dtype):
    """``t`` converted to ``dtype`` when it is a floating-point tensor (torch's ``Module.to``
    converts only those), else ``t``."""
    if dtype is None or not isinstance(t, Tensor) or t.dtype.kind != "float":
        return t
    out = t.to(dtype)
    return Parameter(out) if isinstance(t, Parameter) and out is not t else out


class Module:
    """``torch.nn.Module`` (see the module's text): subclass it, call ``super().__init__()``,
    define ``forward``; ``module(*args)`` runs ``forward(*args)``."""

    training: bool

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise refuse(f"{type(self).__name__}.__init__ of torch.nn.Module takes no "
                         "arguments (torch refuses them too)")
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())

    # -- attributes ---------------------------------------------------------------------
    def _registry(self):
        try:
            return object.__getattribute__(self, "_modules")
        except AttributeError:
            return None

    def __setattr__(self, name, value):
        modules = self._registry()
        if isinstance(value, (Module, Parameter)) and modules is None:
            kind = "module" if isinstance(value, Module) else "parameters"
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if modules is not None:
            params, buffers = self.__dict__["_parameters"], self.__dict__["_buffers"]
            if name in buffers and not isinstance(value, (Parameter, Module)) and \
                    (value is None or isinstance(value, Tensor)):
                buffers[name] = value              # a buffer given a new tensor stays one
            else:
                for registry in (params, buffers, modules):
                    registry.pop(name, None)
                if isinstance(value, Parameter):
                    params[name] = value
                elif isinstance(value, Module):
                    modules[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        for registry in ("_parameters", "_buffers", "_modules"):
            self.__dict__.get(registry, {}).pop(name, None)
        object.__delattr__(self, name)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """``register_buffer``: ``tensor`` (or ``None``) kept as the attribute ``name``."""
        if self._registry() is None:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"buffer name {name!r}: a non-empty string without '.'")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer "
                            f"'{name}' (torch Tensor or None required)")
        self._buffers[name] = tensor
        object.__setattr__(self, name, tensor)

    def register_parameter(self, name: str, param) -> None:
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (torch.nn.Parameter or None required)")
        setattr(self, name, param)
        if param is None:
            self._parameters[name] = None

    def add_module(self, name: str, module) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        setattr(self, name, module)
        if module is None:
            self._modules[name] = None

    register_module = add_module

    # -- calling ------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # -- what it holds ------------------------------------------------------------------
    def named_children(self):
        return ((n, m) for n, m in self._modules.items() if m is not None)

    def children(self):
        return (m for _, m in self.named_children())

    def named_modules(self, memo=None, prefix: str = ""):
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, child in self.named_children():
            yield from child.named_modules(memo, f"{prefix}.{name}" if prefix else name)

    def modules(self):
        return (m for _, m in self.named_modules())

    def _named(self, registry: str, recurse: bool):
        seen = set()
        owners = self.named_modules() if recurse else [("", self)]
        for prefix, module in owners:
            for name, t in getattr(module, registry).items():
                if t is None or id(t) in seen:
                    continue
                seen.add(id(t))
                yield (f"{prefix}.{name}" if prefix else name), t

    def named_parameters(self, prefix: str = "", recurse: bool = True):
        return ((prefix + n, t) for n, t in self._named("_parameters", recurse))

    def parameters(self, recurse: bool = True):
        return (t for _, t in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix: str = "", recurse: bool = True):
        return ((prefix + n, t) for n, t in self._named("_buffers", recurse))

    def buffers(self, recurse: bool = True):
        return (t for _, t in self.named_buffers(recurse=recurse))

    def state_dict(self, *args, **kwargs) -> OrderedDict:
        out = OrderedDict(self.named_parameters())
        out.update(self.named_buffers())
        return out

    def apply(self, fn):
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # -- where it lives, and its mode -----------------------------------------------------
    def _convert(self, dtype):
        for module in self.modules():
            for registry in ("_parameters", "_buffers"):
                for name, t in list(getattr(module, registry).items()):
                    converted = _float_to(t, dtype)
                    if converted is not t:
                        getattr(module, registry)[name] = converted
                        object.__setattr__(module, name, converted)
        return self

    def to(self, *args, **kwargs):
        """``module.to(device)``, ``.to(dtype)``, ``.to(tensor)``, ``.to(device, dtype)``:
        the module itself, its floating-point parameters and buffers converted to ``dtype``."""
        dtype = dtype_arg(kwargs.pop("dtype", None))
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        kwargs.pop("memory_format", None)
        if kwargs:
            raise refuse(f"Module.to: argument {sorted(kwargs)[0]!r} is outside exactspec's "
                         "tensor layer")
        for a in args:
            if isinstance(a, Tensor):
                dtype = a.dtype
            elif isinstance(a, D.DType) or a in (float, int, bool):
                dtype = dtype_arg(a)
            elif isinstance(a, bool):
                continue                           # non_blocking given by position
            else:
                check_device(a)
        if device is not None:
            check_device(device)
        if dtype is not None and dtype.kind != "float":
            raise refuse(f"nn.Module.to only accepts floating point dtypes, but got "
                         f"desired dtype={dtype!r} (torch refuses it too)")
        return self._convert(dtype)

    def cpu(self):
        return self

    def cuda(self, *args, **kwargs):
        raise refuse(f"{type(self).__name__}.cuda(): exactspec runs a PyTorch rule on its own "
                     "CPU tensor layer")

    def type(self, dst_type):
        return self._convert(dtype_arg(dst_type))

    def float(self):
        return self._convert(D.float32)

    def double(self):
        return self._convert(D.float64)

    def half(self):
        return self._convert(D.float16)

    def bfloat16(self):
        return self._convert(D.bfloat16)

    def train(self, mode: bool = True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True):
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        return None

    def share_memory(self):
        return self

    # -- text ---------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self):
        lines = [f"({name}): " + repr(child).replace("\n", "\n  ")
                 for name, child in self.named_children()]
        extra = self.extra_repr()
        if not lines:
            return f"{self._get_name()}({extra})"
        body = "\n  ".join(([extra] if extra else []) + lines)
        return f"{self._get_name()}(\n  {body}\n)"


class ModuleList(Module):
    """``torch.nn.ModuleList``: a list of modules, registered under their indices."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _index(self, i: int) -> int:
        n = len(self._modules)
        if not isinstance(i, int) or isinstance(i, bool) or not -n <= i < n:
            raise IndexError(f"index {i} is out of range")
        return i % n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return ModuleList(list(self._modules.values())[i])
        return self._modules[str(self._index(i))]

    def __setitem__(self, i, module):
        setattr(self, str(self._index(i)), module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(list(self._modules.values()))

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module) -> None:
        items = list(self._modules.values())
        items.insert(index, module)
        for name in list(self._modules):
            delattr(self, name)
        self.extend(items)


class Sequential(ModuleList):
    """``torch.nn.Sequential``: the modules called in turn, each on the last one's output."""

    def __init__(self, *modules):
        super().__init__(modules[0].values() if len(modules) == 1 and
                         isinstance(modules[0], dict) else modules)

    def forward(self, x):
        for module in self:
            x = module(x)
        return x


class ModuleDict(Module):
    """``torch.nn.ModuleDict``: modules by name."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        delattr(self, key)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(list(self._modules))

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return list(self._modules.keys())

    def values(self):
        return list(self._modules.values())

    def items(self):
        return list(self._modules.items())

    def update(self, modules):
        items = modules.items() if hasattr(modules, "items") else modules
        for key, module in items:
            self[key] = module


class Identity(Module):
    """``torch.nn.Identity``: its input, unchanged."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


def pad(input, pad, mode: str = "constant", value=None) -> Tensor:
    """``torch.nn.functional.pad`` in ``"constant"`` mode: ``pad`` gives ``(left, right)``
    widths from the last dimension backwards; the new places hold ``value`` (0 by default)
    and a negative width removes places, as in torch."""
    t = as_tensor(input)
    if mode != "constant":
        raise refuse(f"F.pad with mode={mode!r} is outside exactspec's tensor layer (the "
                     "constant mode is in it)")
    widths = [int(w) for w in pad]
    if len(widths) % 2 or len(widths) // 2 > t.ndim:
        raise refuse(f"F.pad: padding of length {len(widths)} for a tensor of {t.ndim} "
                     "dimensions (torch needs an even length of at most twice the dimensions)")
    sizes = list(t._shape)
    spans = []                          # per padded dim: (dim, source slice, target slice)
    for i in range(len(widths) // 2):
        d = t.ndim - 1 - i
        left, right = widths[2 * i], widths[2 * i + 1]
        n = sizes[d]
        new = n + left + right
        if new < 0:
            raise refuse(f"F.pad: the padded size of dimension {d} would be {new}")
        start, stop = max(0, -left), n - max(0, -right)
        spans.append((d, slice(start, max(start, stop)), max(0, left)))
        sizes[d] = new
    check_size(math.prod(sizes), f"F.pad to {sizes}")
    fill = 0 if value is None else value
    out = Tensor.new([], (0,), t.dtype).new_full(sizes, fill)
    source = [slice(None)] * t.ndim
    target = [slice(None)] * t.ndim
    for d, src, at in spans:
        source[d] = src
        target[d] = slice(at, at + max(0, src.stop - src.start))
    part = t[tuple(source)]
    if part.numel():
        out[tuple(target)] = part
    return out
