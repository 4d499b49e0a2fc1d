"""exactspec: exact proofs of losslessness and acceptance for speculative-decoding verifiers.

>>> from exactspec import Dist, verify
>>> p = Dist.parse("1/2,3/10,1/5", labels="abc")
>>> q = Dist.parse("1/5,1/5,3/5", labels="abc")
>>> result = verify("sps", p, q)
>>> result.lossless, result.acceptance
(True, Fraction(3, 5))
"""

from .core.dist import Dist, overlap, residual, total_variation
from .core.errors import ExactspecError, InvalidInput, NotExact, TooLarge, Undecided
from .core.signals import CannotProceed, EngineSignal, SignalCaught
from .methods import METHODS, Method, get_method
from .verify import Verification, simulate, verify
from .rounding import split_bias

__version__ = "0.1.0"

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
