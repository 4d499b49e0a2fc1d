"""The module that stands in for ``torch`` while exactspec imports and runs a PyTorch rule.

:func:`installed` puts it in ``sys.modules`` as ``torch`` (with ``torch.nn``,
``torch.nn.functional`` and ``torch.cuda``) for the length of a ``with`` block and puts back
whatever was there before (a real torch included).  A name the layer does not define is refused
in one line naming it and the user's line (:class:`~exactspec.core.errors.InvalidInput`, exit
2 on the command line); every name under ``torch.cuda`` is refused the same way.

>>> with installed() as torch:
...     t = torch.tensor([1, 2, 3], dtype=torch.float64)
...     (t / t.sum()).tolist()
[Fraction(1, 6), Fraction(1, 3), Fraction(1, 2)]
>>> import sys; "torch" in sys.modules and sys.modules["torch"].__name__ == "exactspec-torch"
False
"""

from __future__ import annotations

import functools
import math
import sys
import types
from contextlib import contextmanager
from pathlib import Path

from ..core.errors import InvalidInput
from . import dtypes as D
from . import functions as _fn
from . import random as _rnd
from .context import CURRENT, Run, current, refuse
from .tensor import MAX_ELEMENTS, Size, Tensor, as_tensor, check_size, result_type
from .values import UNSET, scalar_to

__all__ = ["installed", "make_module"]


class _LayerModule(types.ModuleType):
    """A module of the layer: an unknown attribute is refused with the user's line."""

    _what = "outside exactspec's tensor layer"

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise refuse(f"{self.__name__.replace('exactspec-', '')}.{name} is {self._what}")


class _CudaModule(_LayerModule):
    _what = "refused: exactspec runs a PyTorch rule on its own CPU tensor layer, not on a GPU"


class no_grad:
    """``torch.no_grad()`` / ``torch.inference_mode()``: a context and a decorator that do
    nothing (the layer has no autograd)."""

    def __init__(self, mode=True):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            return function(*args, **kwargs)

        return wrapper


def compile(model=None, **options):
    """``torch.compile`` (a decorator, with or without options): the function runs with the
    layer's eager semantics.  In the exact run that is the compiled function's law too; under
    ``--arith`` a call is refused, since compiled kernels fuse operations and round in an order
    exactspec does not model."""
    if model is None:
        return lambda f: compile(f, **options)

    @functools.wraps(model)
    def compiled(*args, **kwargs):
        if not current().exact:
            code = getattr(model, "__code__", None)
            where = f" ({Path(code.co_filename).name}:{code.co_firstlineno})" if code else ""
            err = InvalidInput(f"torch.compile'd {getattr(model, '__name__', 'function')} "
                               "under --arith: its fused kernels round in an order exactspec "
                               f"does not model; run it exactly{where}")
            err.located = True
            raise err
        return model(*args, **kwargs)

    return compiled


def _size(args, kwargs) -> tuple:
    if "size" in kwargs:
        args = (kwargs.pop("size"),)
    if len(args) == 1 and isinstance(args[0], (tuple, list, Size)):
        args = tuple(args[0])
    shape = tuple(int(n) for n in args)
    if any(n < 0 for n in shape):
        raise refuse(f"negative size {list(shape)}")
    if math.prod(shape) > MAX_ELEMENTS:
        check_size(math.prod(shape), f"a tensor of size {list(shape)}")
    return shape


def _options(kwargs):
    dev = kwargs.pop("device", None)
    if dev is not None and getattr(dev, "type", str(dev).split(":")[0]) != "cpu":
        raise refuse(f"device {dev!r}: exactspec runs a PyTorch rule on its own CPU tensor layer")
    kwargs.pop("requires_grad", None)
    kwargs.pop("pin_memory", None)
    kwargs.pop("layout", None)
    kwargs.pop("memory_format", None)
    kwargs.pop("generator", None)
    dtype = kwargs.pop("dtype", None)
    if kwargs:
        raise refuse(f"argument {sorted(kwargs)[0]!r} is outside exactspec's tensor layer")
    return dtype


def make_module() -> types.ModuleType:
    """A fresh module object standing for ``torch``."""
    torch = _LayerModule("exactspec-torch", "exactspec's exact tensor layer standing in for torch")
    torch.__name__ = "torch"
    nn = _LayerModule("torch.nn")
    functional = _LayerModule("torch.nn.functional")
    cuda = _CudaModule("torch.cuda")
    torch.nn, nn.functional, torch.cuda = nn, functional, cuda
    for name, d in D.DTYPES.items():
        setattr(torch, name, d)
    torch.float, torch.double, torch.half = D.float32, D.float64, D.float16
    torch.long, torch.int = D.int64, D.int32
    torch.dtype, torch.Tensor, torch.Size = D.DType, Tensor, Size
    torch.finfo, torch.iinfo, torch.device = D.finfo, D.iinfo, D.device
    torch.Generator = _rnd.Generator
    torch.no_grad = torch.inference_mode = torch.enable_grad = no_grad
    torch.compile = compile
    torch.__version__ = "exactspec"

    def get_default_dtype():
        return D.default_dtype()

    def manual_seed(seed):
        return _rnd.Generator().manual_seed(seed)

    def tensor(data, dtype=None, device=None, requires_grad=False):
        _options({"device": device})
        return Tensor.of(data, dtype)

    def as_tensor_(data, dtype=None, device=None):
        _options({"device": device})
        return as_tensor(data, dtype)

    def full(*args, fill_value=None, **kwargs):
        if fill_value is None:
            *args, fill_value = args
        shape = _size(tuple(args), kwargs)
        dtype = _options(kwargs) or (result_type(fill_value) if not isinstance(fill_value, float)
                                     else D.default_dtype())
        return Tensor.new([scalar_to(fill_value, dtype)] * math.prod(shape), shape, dtype)

    def zeros(*args, **kwargs):
        shape = _size(args, kwargs)
        dtype = _options(kwargs) or D.default_dtype()
        return full(shape, 0, dtype=dtype)

    def ones(*args, **kwargs):
        shape = _size(args, kwargs)
        dtype = _options(kwargs) or D.default_dtype()
        return full(shape, 1, dtype=dtype)

    def empty(*args, **kwargs):
        shape = _size(args, kwargs)
        dtype = _options(kwargs) or D.default_dtype()
        return Tensor.new([UNSET] * math.prod(shape), shape, dtype)

    def _like(f):
        def like(t, *args, **kwargs):
            kwargs.setdefault("dtype", t.dtype)
            return f(t.shape, *args, **kwargs)
        like.__name__ = f.__name__ + "_like"
        return like

    def arange(start, end=None, step=1, dtype=None, device=None):
        _options({"device": device})
        if end is None:
            start, end = 0, start
        if not all(isinstance(x, int) for x in (start, end, step)):
            raise refuse("arange with non-integer bounds is outside exactspec's tensor layer")
        if step == 0:
            raise refuse("arange: step must be nonzero (torch refuses it too)")
        for x in (start, end):
            scalar_to(x, D.int64)                  # torch refuses a bound beyond int64
        count = len(range(start, end, step))
        if count > MAX_ELEMENTS:
            check_size(count, f"torch.arange({start}, {end}, {step})")
        values = list(range(start, end, step))
        return Tensor.of(values, dtype or D.int64) if values else \
            Tensor.new([], (0,), dtype or D.int64)

    def rand(*args, **kwargs):
        shape = _size(args, kwargs)
        return _rnd.rand(shape, _options(kwargs))

    def rand_like(t, dtype=None, **kwargs):
        _options(kwargs)
        return _rnd.rand(tuple(t.shape), dtype or t.dtype)

    def refused(name, why):
        def f(*args, **kwargs):
            raise refuse(f"torch.{name}: {why}")
        return f

    def method(name):
        def f(t, *args, **kwargs):
            return getattr(as_tensor(t), name)(*args, **kwargs)
        f.__name__ = name
        return f

    for name, f in [("tensor", tensor), ("as_tensor", as_tensor_), ("full", full),
                    ("zeros", zeros), ("ones", ones), ("empty", empty), ("arange", arange),
                    ("rand", rand), ("rand_like", rand_like),
                    ("get_default_dtype", get_default_dtype), ("manual_seed", manual_seed)]:
        setattr(torch, name, f)
    torch.zeros_like, torch.ones_like = _like(zeros), _like(ones)
    torch.empty_like, torch.full_like = _like(empty), _like(full)
    torch.multinomial = lambda input, num_samples, replacement=False, generator=None, **kw: \
        _rnd.multinomial(input, num_samples, replacement)
    torch.where, torch.gather = _fn.where, _fn.gather
    torch.take_along_dim, torch.cat, torch.stack = _fn.take_along_dim, _fn.cat, _fn.stack
    torch.concat = torch.concatenate = _fn.cat
    torch.searchsorted = _fn.searchsorted
    torch.softmax = functional.softmax = \
        lambda input, dim=None, dtype=None, **kw: _fn.softmax(as_tensor(input), dim, dtype)
    for name in ("argmax", "argmin", "max", "min", "amax", "maximum", "minimum", "clamp", "clip",
                 "clamp_min", "clamp_max", "sum", "mean", "cumsum", "sort", "argsort", "topk",
                 "any", "all", "exp", "log", "isnan", "isinf", "isfinite", "abs", "reciprocal",
                 "masked_fill", "scatter", "logical_not", "logical_and", "logical_or",
                 "squeeze", "unsqueeze", "reshape", "flatten", "permute", "transpose", "clone",
                 "add", "sub", "mul", "div", "neg", "lt", "le", "gt", "ge", "eq", "ne",
                 "cumprod", "remainder", "repeat_interleave", "index_select", "flip",
                 "nonzero", "masked_select", "unbind", "select", "narrow", "split", "chunk",
                 "relu", "scatter_add", "index_add", "isclose", "allclose", "equal",
                 "count_nonzero", "pow", "tile", "outer", "ger"):
        setattr(torch, name, method(name))
    functional.relu = lambda input, inplace=False: input.relu_() if inplace else input.relu()
    torch.log_softmax = functional.log_softmax = \
        lambda input, dim=None, dtype=None, **kw: _fn.log_softmax(as_tensor(input), dim, dtype)
    functional.one_hot = _fn.one_hot
    torch.inf, torch.nan, torch.pi, torch.e = math.inf, math.nan, math.pi, math.e
    torch.is_tensor = lambda x: isinstance(x, Tensor)
    torch.is_floating_point = lambda t: t.dtype.kind == "float"
    torch.result_type = result_type
    torch.promote_types = D.promote
    torch.randn = torch.normal = torch.randn_like = \
        refused("randn", "Gaussian noise is outside exactspec's tensor layer")
    torch.set_default_dtype = refused(
        "set_default_dtype", "the layer's default float dtype is float32 in the exact run and "
        "the --arith format otherwise")
    return torch


@contextmanager
def installed(run: Run | None = None):
    """``torch`` (and its submodules) resolve to the layer inside the block; ``run`` is the
    run the random constructors branch in."""
    if not _MODULE:
        _MODULE.append(make_module())
    torch = _MODULE[0]
    ours = {"torch": torch, "torch.nn": torch.nn, "torch.nn.functional": torch.nn.functional,
            "torch.cuda": torch.cuda}
    present = sys.modules.get("torch")
    if present is None or present is torch:         # no other torch loaded: swap our names
        saved = {k: sys.modules[k] for k in ours if k in sys.modules}
        everything = False
    else:                                           # a real torch: set all of it aside
        saved = {k: m for k, m in sys.modules.items() if k == "torch" or k.startswith("torch.")}
        for k in saved:
            del sys.modules[k]
        everything = True
    sys.modules.update(ours)
    CURRENT.append(run if run is not None else Run())
    try:
        yield torch
    finally:
        CURRENT.pop()
        names = [k for k in sys.modules if k == "torch" or k.startswith("torch.")] \
            if everything else list(ours)
        for k in names:
            sys.modules.pop(k, None)
        sys.modules.update(saved)


_MODULE: list = []      # the layer's module object, made once
