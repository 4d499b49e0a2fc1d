"""User code under watch: hidden randomness is refused during an exact run.

An exact run is a proof only when every random choice goes through the sampler ``s``.  While
a method runs under :func:`watched`, the usual hidden sources raise :class:`HiddenRandomness`
instead of answering: the functions of Python's :mod:`random` module and its ``Random`` /
``SystemRandom`` classes, ``os.urandom``, :mod:`secrets`, the clock (``time.time``,
``time.perf_counter``, ...), and, when NumPy is loaded, the functions of ``numpy.random``
(``default_rng``, ``rand``, ``choice``, ...).  A generator made before the run (say
``rng = np.random.default_rng()`` at import) cannot be patched; the exact engine catches it
by running the paths a second time and comparing (:class:`Fingerprint`).

>>> import random
>>> with watched():
...     try:
...         random.random()
...     except HiddenRandomness as err:
...         print(str(err).split(":")[0])
the method called random.random
>>> 0 <= random.random() < 1
True
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
import time
from contextlib import contextmanager

from ..core.errors import InvalidInput

__all__ = ["HiddenRandomness", "watched", "Fingerprint"]

_RANDOM_FUNCTIONS = ("random", "uniform", "randint", "randrange", "choice", "choices",
                     "shuffle", "sample", "getrandbits", "gauss", "normalvariate",
                     "triangular", "betavariate", "expovariate", "randbytes", "seed",
                     "binomialvariate")
_CLASS_METHODS = ("random", "getrandbits", "randbytes", "seed", "__init__")
_TIME_FUNCTIONS = ("time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic",
                   "monotonic_ns", "process_time", "process_time_ns")
_SECRETS_FUNCTIONS = ("token_bytes", "token_hex", "token_urlsafe", "randbelow", "randbits",
                      "choice")


class HiddenRandomness(InvalidInput):
    """The method drew randomness (or read the clock) outside the sampler ``s``."""


def _library_call() -> bool:
    """Whether the hidden source is called by a library rather than by the user's code: the
    first caller outside the standard library is in an installed package (sympy seeds and
    uses a generator of its own in some exact algorithms) or in exactspec, or the call comes
    from a module being imported.  A user's file calling ``random``, ``numpy.random`` or the
    clock, directly or through the standard library, is refused; randomness a library draws
    on the user's behalf is left to the run-twice comparison."""
    import sysconfig

    stdlib = sysconfig.get_paths()["stdlib"]
    libraries = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    libraries.add(_PACKAGE)
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith("<frozen importlib"):
            return True
        if not name.startswith(stdlib) or any(name.startswith(lib) for lib in libraries):
            return any(name.startswith(lib) for lib in libraries)
        frame = frame.f_back
    return False


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _refuse(name: str, original=None):
    def refused(*args, **kwargs):
        if original is not None and _library_call():
            return original(*args, **kwargs)
        raise HiddenRandomness(
            f"the method called {name}: hidden randomness (or the clock) makes the exact law "
            "meaningless; make every random choice through the sampler s (s.coin, s.draw, "
            "s.draft, s.uniform)")
    refused.__name__ = f"refused_{name.replace('.', '_')}"
    return refused


def _targets():
    """``(owner, attribute, dotted name)`` for every hidden source to refuse."""
    import secrets

    out = [(random, name, f"random.{name}") for name in _RANDOM_FUNCTIONS
           if hasattr(random, name)]
    out += [(cls, name, f"random.{cls.__name__}.{name}") for cls in
            (random.Random, random.SystemRandom) for name in _CLASS_METHODS
            if name != "__init__" or name in vars(cls)]
    out += [(os, "urandom", "os.urandom")]
    if hasattr(os, "getrandom"):
        out.append((os, "getrandom", "os.getrandom"))
    out += [(secrets, name, f"secrets.{name}") for name in _SECRETS_FUNCTIONS
            if hasattr(secrets, name)]
    out += [(time, name, f"time.{name}") for name in _TIME_FUNCTIONS if hasattr(time, name)]
    if "numpy" in sys.modules and "numpy.random" not in sys.modules:
        import importlib

        importlib.import_module("numpy.random")    # NumPy loads it lazily: patch it first
    nprandom = sys.modules.get("numpy.random")
    if nprandom is not None:
        names = set(getattr(nprandom, "__all__", ())) | {
            name for name in dir(nprandom) if not name.startswith("_")}
        for name in sorted(names):
            value = getattr(nprandom, name, None)
            if callable(value) and not isinstance(value, type(sys)):
                out.append((nprandom, name, f"numpy.random.{name}"))
    return out


_DEPTH = 0


@contextmanager
def watched():
    """Refuse hidden randomness inside the ``with`` block (re-entrant; restored after)."""
    global _DEPTH
    if _DEPTH:
        _DEPTH += 1
        try:
            yield
        finally:
            _DEPTH -= 1
        return
    saved = []
    for owner, name, dotted in _targets():
        had = name in vars(owner) if isinstance(owner, type) else True
        saved.append((owner, name, had, getattr(owner, name, None)))
        setattr(owner, name, _refuse(dotted, getattr(owner, name, None)))
    _DEPTH = 1
    try:
        yield
    finally:
        _DEPTH = 0
        for owner, name, had, value in reversed(saved):
            if had:
                setattr(owner, name, value)
            else:
                delattr(owner, name)


class Fingerprint:
    """A running digest of what every path did (branches, output, drafts, weight), in order.

    Two runs of a deterministic method over the same paths give the same digest; a method
    that reads hidden state (a generator made at import, a counter, the clock) almost surely
    does not.

    >>> a, b = Fingerprint(), Fingerprint()
    >>> a.add("x", [1]); b.add("x", [1])
    >>> a.digest() == b.digest()
    True
    """

    __slots__ = ("_hash",)

    def __init__(self):
        self._hash = hashlib.blake2b(digest_size=16)

    def add(self, *parts) -> None:
        self._hash.update(repr(parts).encode())
        self._hash.update(b"\x00")

    def digest(self) -> str:
        return self._hash.hexdigest()
