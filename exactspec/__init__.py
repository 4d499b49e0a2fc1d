"""exactspec: exact proofs of losslessness and acceptance for speculative-decoding verifiers.

>>> from exactspec import Dist, verify
>>> p = Dist.parse("1/2,3/10,1/5", labels="abc")
>>> q = Dist.parse("1/5,1/5,3/5", labels="abc")
>>> result = verify("sps", p, q)
>>> result.lossless, result.acceptance
(True, Fraction(3, 5))
"""

import sys
import types

from .core.dist import Dist, overlap, residual, total_variation
from .core.errors import ExactspecError, InvalidInput, NotExact, TooLarge, Undecided
from .core.signals import CannotProceed, EngineSignal, SignalCaught

__version__ = "0.1.0"

#: The names imported when first read (the methods and the engine behind ``verify`` take
#: most of the package's import time; ``exactspec optimal`` never needs them).
_LAZY = {"METHODS": "methods", "Method": "methods", "get_method": "methods",
         "Verification": "verify", "simulate": "verify", "verify": "verify",
         "split_bias": "rounding"}


class _Package(types.ModuleType):
    """The package's module: a lazy name is imported when first read, and the submodule
    ``exactspec.verify``, once imported, never hides the function ``verify``."""

    def __getattr__(self, name):
        where = _LAZY.get(name)
        if where is None:
            raise AttributeError(f"module 'exactspec' has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(f"{__name__}.{where}"), name)
        types.ModuleType.__setattr__(self, name, value)
        return value

    def __setattr__(self, name, value):
        if name in _LAZY and isinstance(value, types.ModuleType):
            return                      # the import system naming a submodule: the function wins
        types.ModuleType.__setattr__(self, name, value)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(_LAZY))


sys.modules[__name__].__class__ = _Package

__all__ = [
    "CannotProceed",
    "Dist",
    "EngineSignal",
    "ExactspecError",
    "InvalidInput",
    "METHODS",
    "Method",
    "NotExact",
    "SignalCaught",
    "TooLarge",
    "Undecided",
    "Verification",
    "get_method",
    "overlap",
    "residual",
    "simulate",
    "split_bias",
    "total_variation",
    "verify",
]
