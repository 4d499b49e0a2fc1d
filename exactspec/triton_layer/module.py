"""The modules that stand in for ``triton`` and ``triton.language`` while a rule runs.

:func:`triton_modules` gives ``triton``, ``triton.language`` (also reached as ``tl``),
``triton.language.math``, ``triton.language.extra``, ``triton.language.extra.libdevice`` and
``triton.language.extra.cuda.libdevice``; the tensor layer's
:func:`~exactspec.torch_layer.module.installed` puts them in ``sys.modules`` beside its
``torch`` (and sets a real triton aside).  A name the layer does not define is refused in one
line naming it and the user's line.  The real triton is never imported.

>>> mods = triton_modules()
>>> mods["triton"].cdiv(10, 4), mods["triton.language"].float32
(3, fp32)
"""

from __future__ import annotations

import importlib.machinery
import types
from pathlib import Path

from . import language as L
from . import launch as K
from .errors import refuse

__all__ = ["triton_modules", "MODELLED_VERSION"]

#: ``triton.__version__`` while the layer stands in for triton
MODELLED_VERSION = "3.4.0"


class _Module(types.ModuleType):
    """A module of the layer: an unknown attribute is refused with the user's line."""

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise refuse(f"{self.__name__}.{name} is outside exactspec's Triton layer")


def _spec(module: types.ModuleType, package: bool) -> None:
    origin = str(Path(__file__).resolve().with_name("__init__.py"))
    module.__spec__ = importlib.machinery.ModuleSpec(module.__name__, None, origin=origin,
                                                     is_package=package)
    module.__file__ = origin
    module.__package__ = module.__name__ if package else module.__name__.rpartition(".")[0]
    if package:
        module.__path__ = []


def _identity(x, *args, **kwargs):
    return x


def _nothing(*args, **kwargs):
    return None


def _static_assert(cond, msg=""):
    if not cond:
        raise refuse(f"tl.static_assert failed: {msg}")


def _device_assert(cond, msg="", mask=None):
    if isinstance(cond, L.tensor):
        values = cond.t._values()
        if any(v is False for v in values):
            raise refuse(f"tl.device_assert failed: {msg}")
    elif not cond:
        raise refuse(f"tl.device_assert failed: {msg}")


_LANGUAGE = {
    "program_id": L.program_id, "num_programs": L.num_programs, "arange": L.arange,
    "zeros": L.zeros, "zeros_like": L.zeros_like, "full": L.full, "load": K.load,
    "store": K.store, "where": L.where, "sum": L.sum, "max": L.max, "min": L.min,
    "argmax": L.argmax, "argmin": L.argmin, "cumsum": L.cumsum, "minimum": L.minimum,
    "maximum": L.maximum, "clamp": L.clamp, "static_range": L.static_range,
    "range": L.range_, "rand": L.rand,
    "randn": L.randn, "exp": L.exp, "log": L.log, "abs": L.abs_, "cdiv": L.cdiv,
    "div_rn": L.div_rn, "fdiv": L.fdiv,
    "cast": L.cast, "reshape": L.reshape, "view": L.reshape,
    "constexpr": L.constexpr, "tensor": L.tensor, "dtype": L.dtype,
    "pointer_type": L.pointer_type, "PropagateNan": L.PropagateNan,
    "multiple_of": _identity, "max_contiguous": _identity, "max_constancy": _identity,
    "assume": _nothing, "debug_barrier": _nothing, "static_print": _nothing,
    "device_print": _nothing, "static_assert": _static_assert,
    "device_assert": _device_assert,
}


def _math_module(name: str) -> types.ModuleType:
    m = _Module(name)
    _spec(m, False)
    m.exp, m.log, m.abs, m.div_rn, m.fdiv = L.exp, L.log, L.abs_, L.div_rn, L.fdiv
    return m


def triton_modules() -> dict:
    """The module objects standing for ``triton`` and its language, by module name (made
    once)."""
    if not _MADE:
        _MADE.append(_make())
    return dict(_MADE[0])


_MADE: list = []


def _make() -> dict:
    triton = _Module("triton")
    language = _Module("triton.language")
    extra = _Module("triton.language.extra")
    cuda = _Module("triton.language.extra.cuda")
    libdevice = _math_module("triton.language.extra.libdevice")
    cuda_libdevice = _math_module("triton.language.extra.cuda.libdevice")
    math_ = _math_module("triton.language.math")
    for m, package in ((triton, True), (language, True), (extra, True), (cuda, True)):
        _spec(m, package)
    triton.language, language.extra, language.math = language, extra, math_
    extra.libdevice, extra.cuda, cuda.libdevice = libdevice, cuda, cuda_libdevice
    for name, value in _LANGUAGE.items():
        setattr(language, name, value)
    for name, d in L.DTYPES.items():
        setattr(language, name, d)
    language.float8e4nv, language.float8e5 = L.DTYPES["fp8e4nv"], L.DTYPES["fp8e5"]
    triton.jit, triton.autotune, triton.heuristics = K.jit, K.autotune, K.heuristics
    triton.Config, triton.cdiv, triton.next_power_of_2 = K.Config, K.cdiv, K.next_power_of_2
    triton.JITFunction = K.JITFunction
    runtime, autotuner, jit = (_Module("triton.runtime"), _Module("triton.runtime.autotuner"),
                               _Module("triton.runtime.jit"))
    for m in (runtime, autotuner, jit):
        _spec(m, m is runtime)
    triton.runtime, runtime.autotuner, runtime.jit = runtime, autotuner, jit
    autotuner.Autotuner, autotuner.Heuristics = K.Autotuner, K.Heuristics
    jit.JITFunction = K.JITFunction
    triton.__version__ = MODELLED_VERSION
    return {"triton": triton, "triton.language": language, "triton.language.math": math_,
            "triton.language.extra": extra, "triton.language.extra.libdevice": libdevice,
            "triton.language.extra.cuda": cuda,
            "triton.language.extra.cuda.libdevice": cuda_libdevice, "triton.runtime": runtime,
            "triton.runtime.autotuner": autotuner, "triton.runtime.jit": jit}
