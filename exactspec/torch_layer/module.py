"""The module that stands in for ``torch`` while exactspec imports and runs a PyTorch rule.

:func:`installed` puts it in ``sys.modules`` as ``torch`` (with ``torch.nn``,
``torch.nn.functional``, ``torch.jit`` and ``torch.cuda``) for the length of a ``with`` block
and puts back whatever was there before (a real torch included).  A name the layer does not
define is refused in one line naming it and the user's line
(:class:`~exactspec.core.errors.InvalidInput`, exit 2 on the command line); under
``torch.cuda`` only ``is_available()`` (``False``) and ``device_count()`` (0) answer, every other
name is refused the same way.

The engine plumbing around a sampler runs as it does on a CPU without autograd:

- ``torch.jit.script``, ``torch.jit.trace`` (with its example inputs), ``torch.jit.ignore``,
  ``torch.jit.unused`` and ``torch.jit.export`` return the function (or module) they are given,
  which runs eagerly: TorchScript runs the same CPU kernels as eager mode (its CPU fuser is
  off by default), so the law is the eager one, under ``--arith`` too (``torch.compile``, whose
  kernels fuse and round in their own order, is refused there);
- ``torch.no_grad``, ``torch.inference_mode``, ``torch.enable_grad`` and
  ``torch.set_grad_enabled`` are context managers and decorators (with or without
  parentheses) that do nothing;
- ``torch.nn.Module``, ``ModuleList``, ``ModuleDict``, ``Sequential``, ``Identity``,
  ``Parameter`` and ``torch.nn.functional.pad`` (:mod:`.nn`);
- ``torch.Tensor``, ``torch.dtype``, ``torch.device``, ``torch.Generator`` and ``torch.Size``
  are classes, usable in annotations and ``isinstance``; the tensor class reports
  ``torch.Tensor`` as its module and name;
- a ``device`` argument is accepted wherever torch takes one when it names the CPU
  (``"cpu"``, ``torch.device("cpu")``), and a CUDA device is refused in one line; Python's
  ``float``, ``int`` and ``bool`` are accepted as dtypes (``float64``, ``int64``, ``bool``);
- the module has a ``__spec__`` (``importlib.util.find_spec("torch")`` answers while the
  layer is installed), a ``__file__`` (the layer's own package file) and a ``__version__``:
  :data:`MODELLED_VERSION`, the torch version whose CPU semantics the layer was checked
  against, a string that compares with versions as torch's does.

>>> with installed() as torch:
...     t = torch.tensor([1, 2, 3], dtype=torch.float64)
...     (t / t.sum()).tolist()
[Fraction(1, 6), Fraction(1, 3), Fraction(1, 2)]
>>> import sys; "torch" in sys.modules and sys.modules["torch"].__name__ == "exactspec-torch"
False
"""

from __future__ import annotations

import functools
import importlib.machinery
import math
import re
import sys
import types
from contextlib import contextmanager
from pathlib import Path

from ..core.errors import InvalidInput
from ..engine.watch import MODELS
from . import dtypes as D
from . import functions as _fn
from . import nn as _nn
from . import pyrandom as _pyrandom
from . import random as _rnd
from .context import CURRENT, Run, current, refuse
from .tensor import (MAX_ELEMENTS, Size, Tensor, as_tensor, check_device, check_size, dtype_arg,
                     result_type)
from .values import UNSET, scalar_to

__all__ = ["installed", "make_module", "MODELLED_VERSION", "TorchVersion", "LayerModule"]

#: ``torch.__version__`` while the layer stands in for torch: the torch release whose CPU
#: semantics the layer's tests check it against (``tests/test_torch_half.py``,
#: ``tests/test_torch_layer.py``, ``tests/test_torch_plumbing.py``)
MODELLED_VERSION = "2.14.0"


class TorchVersion(str):
    """A version string that compares with other versions (strings or tuples) by its release
    numbers, as ``torch.__version__`` does: ``TorchVersion("2.14.0") >= "2.5"``.

    >>> v = TorchVersion("2.14.0")
    >>> v >= "2.5", v < (2, 15), v == "2.14.0", v.split(".")[0]
    (True, True, True, '2')
    """

    __slots__ = ()

    @staticmethod
    def _release(v) -> tuple:
        if isinstance(v, tuple):
            parts = list(v)
        else:
            parts = [int(x) for x in re.findall(r"\d+", str(v).split("+")[0].split("a")[0]
                                                         .split("b")[0].split("rc")[0])]
        while parts and parts[-1] == 0:
            parts.pop()
        return tuple(parts)

    def _cmp(self, other, op):
        if not isinstance(other, (str, tuple)):
            return NotImplemented
        return op(self._release(self), self._release(other))

    def __lt__(self, other):
        return self._cmp(other, lambda a, b: a < b)

    def __le__(self, other):
        return self._cmp(other, lambda a, b: a <= b)

    def __gt__(self, other):
        return self._cmp(other, lambda a, b: a > b)

    def __ge__(self, other):
        return self._cmp(other, lambda a, b: a >= b)

    def __eq__(self, other):
        return self._cmp(other, lambda a, b: a == b)

    def __ne__(self, other):
        return self._cmp(other, lambda a, b: a != b)

    __hash__ = str.__hash__


class LayerModule(types.ModuleType):
    """A module of the layer: an unknown attribute is refused with the user's line."""

    _what = "outside exactspec's tensor layer"

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise refuse(f"{self.__name__.replace('exactspec-', '')}.{name} is {self._what}")


class _CudaModule(LayerModule):
    _what = "refused: exactspec runs a PyTorch rule on its own CPU tensor layer, not on a GPU"


class no_grad:
    """``torch.no_grad()`` / ``torch.inference_mode()`` / ``torch.enable_grad()`` /
    ``torch.set_grad_enabled(mode)``: a context manager and a decorator (``@torch.no_grad()``
    and ``@torch.no_grad``) that does nothing and returns the function it decorates (the layer
    has no autograd)."""

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, bool):   # ``@torch.no_grad``: the function
            return mode
        return super().__new__(cls)

    def __init__(self, mode=True):
        pass

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False

    def __call__(self, function):
        return function

    def clone(self):
        return self


def _returns_it(obj=None, *args, **kwargs):
    """``torch.jit.script(fn)`` (and ``trace(fn, example_inputs)``, ``unused``, ``export``,
    ``interface``): ``fn`` itself, run eagerly."""
    if obj is None:
        raise refuse("torch.jit.script/trace of nothing: give the function or module")
    return obj


def _ignore(drop=False, **kwargs):
    """``torch.jit.ignore`` as a decorator, bare (``@torch.jit.ignore``) or called
    (``@torch.jit.ignore(drop=True)``): the function itself."""
    if callable(drop) and not isinstance(drop, bool):
        return drop
    return lambda function: function


def _jit_module() -> types.ModuleType:
    jit = LayerModule("torch.jit")
    jit.script = jit.trace = jit.unused = jit.export = jit.interface = _returns_it
    jit.script_if_tracing = jit.trace_module = _returns_it
    jit.ignore = _ignore
    jit.is_scripting = jit.is_tracing = lambda: False
    jit.annotate = lambda the_type, the_value: the_value
    jit.Attribute = lambda value, the_type=None: value
    jit.Final = __import__("typing").Final
    return jit


def _spec(module: types.ModuleType, package: bool) -> None:
    """A module spec, file and package path as an installed torch has them (``find_spec``
    answers; no submodule is found on disk: ``__path__`` is empty)."""
    origin = str(Path(__file__).resolve().with_name("__init__.py"))
    module.__spec__ = importlib.machinery.ModuleSpec(module.__name__, None, origin=origin,
                                                     is_package=package)
    module.__spec__.has_location = True
    module.__file__ = origin
    module.__package__ = module.__name__ if package else module.__name__.rpartition(".")[0]
    if package:
        module.__path__ = []


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
    check_device(kwargs.pop("device", None))
    kwargs.pop("requires_grad", None)
    kwargs.pop("pin_memory", None)
    kwargs.pop("layout", None)
    kwargs.pop("memory_format", None)
    kwargs.pop("generator", None)
    dtype = dtype_arg(kwargs.pop("dtype", None))
    if kwargs:
        raise refuse(f"argument {sorted(kwargs)[0]!r} is outside exactspec's tensor layer")
    return dtype


def make_module() -> types.ModuleType:
    """A fresh module object standing for ``torch``."""
    torch = LayerModule("exactspec-torch", "exactspec's exact tensor layer standing in for torch")
    torch.__name__ = "torch"
    nn = LayerModule("torch.nn")
    functional = LayerModule("torch.nn.functional")
    cuda = _CudaModule("torch.cuda")
    jit = _jit_module()
    torch.nn, nn.functional, torch.cuda, torch.jit = nn, functional, cuda, jit
    for module, package in ((torch, True), (nn, True), (functional, False), (cuda, True),
                            (jit, True)):
        _spec(module, package)
    cuda.is_available = lambda: False
    cuda.device_count = lambda: 0
    for name in ("Module", "ModuleList", "ModuleDict", "Sequential", "Identity", "Parameter"):
        setattr(nn, name, getattr(_nn, name))
    functional.pad = _nn.pad
    for name, d in D.DTYPES.items():
        setattr(torch, name, d)
    torch.float, torch.double, torch.half = D.float32, D.float64, D.float16
    torch.long, torch.int = D.int64, D.int32
    torch.dtype, torch.Tensor, torch.Size = D.DType, Tensor, Size
    torch.finfo, torch.iinfo, torch.device = D.finfo, D.iinfo, D.device
    torch.Generator = _rnd.Generator
    torch.no_grad = torch.inference_mode = torch.enable_grad = torch.set_grad_enabled = no_grad
    torch.compile = compile
    torch.__version__ = TorchVersion(MODELLED_VERSION)

    def get_default_dtype():
        return D.default_dtype()

    def manual_seed(seed):
        return _rnd.Generator().manual_seed(seed)

    def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
        check_device(device)
        return Tensor.of(data, dtype)

    def as_tensor_(data, dtype=None, device=None):
        check_device(device)
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
            if kwargs.get("dtype") is None:
                kwargs["dtype"] = t.dtype
            return f(t.shape, *args, **kwargs)
        like.__name__ = f.__name__ + "_like"
        return like

    def arange(start, end=None, step=1, dtype=None, device=None, **kwargs):
        dtype = dtype_arg(dtype)
        _options({"device": device, **kwargs})
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
        return _rnd.rand(tuple(t.shape), dtype_arg(dtype) or t.dtype)

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
    run the random constructors branch in, and the draws of Python's ``random`` and NumPy's
    generators that the watch would refuse branch through it too (:mod:`.pyrandom`)."""
    if not _MODULE:
        _MODULE.append(make_module())
    torch = _MODULE[0]
    ours = {"torch": torch, "torch.nn": torch.nn, "torch.nn.functional": torch.nn.functional,
            "torch.cuda": torch.cuda, "torch.jit": torch.jit}
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
    from ..triton_layer.module import triton_modules     # ``triton`` beside ``torch``
    saved_triton = {k: m for k, m in sys.modules.items() if k.split(".")[0] == "triton"}
    for k in saved_triton:
        del sys.modules[k]
    sys.modules.update(triton_modules())
    CURRENT.append(run if run is not None else Run())
    MODELS.append(_pyrandom.model)      # Python's and NumPy's uniforms: modelled, not refused
    try:
        yield torch
    finally:
        MODELS.pop()
        CURRENT.pop()
        names = [k for k in sys.modules if k == "torch" or k.startswith("torch.")] \
            if everything else list(ours)
        for k in names:
            sys.modules.pop(k, None)
        sys.modules.update(saved)
        for k in [k for k in sys.modules if k.split(".")[0] == "triton"]:
            del sys.modules[k]
        sys.modules.update(saved_triton)


_MODULE: list = []      # the layer's module object, made once
