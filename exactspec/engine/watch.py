"""User code under watch: hidden randomness is refused during an exact run.

An exact run is a proof only when every random choice goes through the sampler ``s``.  While
a method runs under :func:`watched`, the usual hidden sources raise :class:`HiddenRandomness`
instead of answering: the functions of Python's :mod:`random` module and its ``Random`` /
``SystemRandom`` classes, ``os.urandom``, :mod:`secrets`, :mod:`uuid`'s random identifiers,
the clock (``time.time``, ``time.perf_counter``, ``datetime.datetime.now``, ...), and, when
NumPy is loaded, the functions of ``numpy.random`` (``default_rng``, ``rand``, ``choice``,
...).  Every call is refused, whatever its result and however rarely it is made: a rule that
draws ``random() < 1e-12`` is lossy on this instance with probability ``1e-12``, not proved.
A layer that runs the user's code on its own terms may model some of these calls instead
(:data:`MODELS`): the tensor layer answers Python's and NumPy's uniforms in a PyTorch rule by
draws of the engine (:mod:`exactspec.torch_layer.pyrandom`); without a model, every call is
refused.

Names bound before the run are covered too: ``from random import random``, ``from time
import time``, ``from os import urandom``, ``from numpy.random import random`` keep a
reference to the original function, which patching the module does not reach.  The watch
looks through the namespaces the user's functions can reach (their module's globals, the
globals of the functions and classes they use that live in the user's files, closure cells,
default arguments, one level into the dicts and lists of those globals) and swaps every
reference to a hidden source for the refusing one during the run, restoring it after.  A
generator made before the run (say ``rng = np.random.default_rng()`` at import) is caught by
the hidden-state check (its state changes when drawn) and by running the paths a second time
and comparing (:class:`Fingerprint`).

Inside the watch, the values a :class:`~exactspec.core.dist.Dist` hands to user code are exact
numbers that absorb float literals (:func:`~exactspec.core.exact_values.exact_values`).

>>> import random
>>> with watched():
...     try:
...         random.random()
...     except HiddenRandomness as err:
...         print(str(err).split(" (in ")[0])
the method called random.random
>>> 0 <= random.random() < 1
True
"""

from __future__ import annotations

import functools
import hashlib
import os
import random
import sys
import time
import types
from contextlib import contextmanager

from ..core.errors import InvalidInput
from ..core.exact_values import exact_values
from ..core.signals import is_user_file, library_paths

__all__ = ["HiddenRandomness", "watched", "Fingerprint", "MODELS", "NOT_MODELLED"]

_RANDOM_FUNCTIONS = ("random", "uniform", "randint", "randrange", "choice", "choices",
                     "shuffle", "sample", "getrandbits", "gauss", "normalvariate",
                     "triangular", "betavariate", "expovariate", "randbytes", "seed",
                     "binomialvariate", "lognormvariate", "vonmisesvariate", "gammavariate",
                     "paretovariate", "weibullvariate")
_CLASS_METHODS = ("random", "getrandbits", "randbytes", "seed", "__init__", "uniform",
                  "choice", "choices", "randint", "randrange")
_TIME_FUNCTIONS = ("time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic",
                   "monotonic_ns", "process_time", "process_time_ns", "thread_time",
                   "thread_time_ns")
#: These read the clock only when the time is not given: the position of that argument.
_TIME_WITHOUT_ARGUMENT = {"localtime": 0, "gmtime": 0, "ctime": 0, "asctime": 0, "strftime": 1}
_SECRETS_FUNCTIONS = ("token_bytes", "token_hex", "token_urlsafe", "randbelow", "randbits",
                      "choice")
_UUID_FUNCTIONS = ("uuid1", "uuid4")


class HiddenRandomness(InvalidInput):
    """The method drew randomness (or read the clock) outside the sampler ``s``."""


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _library_call() -> bool:
    """Whether the hidden source is called by a library rather than by the user's code: the
    first caller outside the standard library is in an installed package (sympy seeds and
    uses a generator of its own in some exact algorithms) or in exactspec, or the call comes
    from a module being imported.  A user's file calling ``random``, ``numpy.random`` or the
    clock, directly or through the standard library, is refused; randomness a library draws
    on the user's behalf is left to the run-twice comparison."""
    stdlib, libraries = library_paths()
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith("<frozen importlib"):
            return True
        if not name.startswith(stdlib) or name.startswith(libraries):
            return name.startswith(libraries) and not is_user_file(name)
        frame = frame.f_back
    return False


def _user_line() -> str:
    """`` (in FILE line N)`` for the innermost frame of the user's code, or ``""``."""
    frame = sys._getframe(2)
    while frame is not None:
        if is_user_file(frame.f_code.co_filename):
            return f" (in {frame.f_code.co_filename} line {frame.f_lineno})"
        frame = frame.f_back
    return ""


def _refusal(name: str, where: str) -> HiddenRandomness:
    return HiddenRandomness(
        f"the method called {name}{where}: hidden randomness (or the clock) makes the exact "
        "law meaningless, even when the result does not change the verdict on this "
        "instance; make every random choice through the sampler s (s.coin, s.draw, "
        "s.draft, s.uniform)")


#: The model of hidden draws that a layer running the user's code puts in place (at most
#: one at a time, the innermost last): ``model(name, args, kwargs)`` answers the call of the
#: refused source ``name`` (``"random.random"``, ``"random.Random.uniform"``,
#: ``"numpy.random.default_rng"``, ...) by a draw that branches through the engine, or
#: returns :data:`NOT_MODELLED` to have it refused.  The tensor layer fills it while a PyTorch
#: rule's run is installed (Python's and NumPy's uniforms there are modelled, not refused);
#: while it is empty, every call is refused.
MODELS: list = []

#: What a model returns for a call it does not model (the call is then refused).
NOT_MODELLED = object()


def _refuse(name: str, original=None, time_at: int | None = None):
    def refused(*args, **kwargs):
        if original is not None and ((time_at is not None and len(args) > time_at
                                      and args[time_at] is not None) or _library_call()):
            return original(*args, **kwargs)
        if MODELS:
            out = MODELS[-1](name, args, kwargs)
            if out is not NOT_MODELLED:
                return out
        raise _refusal(name, _user_line())
    refused.__name__ = f"refused_{name.replace('.', '_')}"
    refused.__qualname__ = refused.__name__
    refused.__wrapped_source__ = original
    return refused


_WATCHED_CLASSES: dict = {}


def _watched_class(cls, methods: tuple, dotted: str):
    """A subclass of the clock class ``cls`` (``datetime.datetime``, ``datetime.date``) whose
    ``methods`` (``now``, ``today``, ...) are refused; made once, named as ``cls``."""
    hit = _WATCHED_CLASSES.get(cls)
    if hit is not None:
        return hit
    namespace = {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                 "__slots__": ()}
    for method in methods:
        original = getattr(cls, method)
        namespace[method] = classmethod(_refusing_classmethod(f"{dotted}.{method}", original))
    out = type(cls.__name__, (cls,), namespace)
    _WATCHED_CLASSES[cls] = out
    return out


def _refusing_classmethod(name: str, original):
    def refused(cls, *args, **kwargs):
        if _library_call():
            return original(*args, **kwargs)
        raise _refusal(name, _user_line())
    refused.__name__ = f"refused_{name.replace('.', '_')}"
    return refused


def _targets():
    """``(owner, attribute, dotted name, replacement)`` for every hidden source to refuse
    (replacement ``None``: a refusing function made from the original; an int: the same,
    refusing only when the time argument at that position is not given)."""
    import datetime
    import secrets
    import uuid

    out = [(random, name, f"random.{name}", None) for name in _RANDOM_FUNCTIONS
           if hasattr(random, name)]
    out += [(cls, name, f"random.{cls.__name__}.{name}", None) for cls in
            (random.Random, random.SystemRandom) for name in _CLASS_METHODS
            if name != "__init__" or name in vars(cls)]
    out += [(os, "urandom", "os.urandom", None)]
    if hasattr(os, "getrandom"):
        out.append((os, "getrandom", "os.getrandom", None))
    out += [(secrets, name, f"secrets.{name}", None) for name in _SECRETS_FUNCTIONS
            if hasattr(secrets, name)]
    out += [(uuid, name, f"uuid.{name}", None) for name in _UUID_FUNCTIONS]
    out += [(time, name, f"time.{name}", None) for name in _TIME_FUNCTIONS
            if hasattr(time, name)]
    out += [(time, name, f"time.{name}", at) for name, at in _TIME_WITHOUT_ARGUMENT.items()
            if hasattr(time, name)]
    out += [(datetime, "datetime", "datetime.datetime",
             _watched_class(datetime.datetime, ("now", "utcnow", "today"), "datetime.datetime")),
            (datetime, "date", "datetime.date",
             _watched_class(datetime.date, ("today",), "datetime.date"))]
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
                out.append((nprandom, name, f"numpy.random.{name}", None))
    return out


# -- names bound before the run -----------------------------------------------------------------
#: At most this many objects are looked through for bound references (a user's module graph
#: is small; a huge one is cut here rather than slowing every run).
MAX_SCANNED = 20_000


def _user_code(obj) -> bool:
    code = getattr(obj, "__code__", None)
    return code is not None and is_user_file(code.co_filename)


def _user_module(module) -> bool:
    name = getattr(module, "__file__", None)
    return isinstance(name, str) and is_user_file(os.path.abspath(name))


def _user_class(cls) -> bool:
    """A class defined in the user's files (one of its functions is the user's code)."""
    module = sys.modules.get(cls.__module__)
    if module is not None and _user_module(module):
        return True
    for value in vars(cls).values():
        value = getattr(value, "__func__", value)
        if isinstance(value, types.FunctionType):
            return _user_code(value)
    return False


def _bind_traps(functions, swaps: dict, undo: list) -> None:
    """Swap, in every namespace the user's ``functions`` reach, each value whose ``id`` is a
    key of ``swaps`` for its replacement; ``undo`` receives how to put each one back."""
    seen: set = set()
    todo = list(functions)
    budget = MAX_SCANNED

    def swap_in(mapping) -> None:
        if id(mapping) in seen:
            return
        seen.add(id(mapping))
        for key, value in list(mapping.items()):
            hit = swaps.get(id(value))
            if hit is not None and hit[0] is value:
                mapping[key] = hit[1]
                undo.append(("item", mapping, key, value))
            elif type(value) in (dict, list):
                todo.append(("container", value))
            elif callable(value) or isinstance(value, type(sys)):
                todo.append(value)

    while todo and budget > 0:
        budget -= 1
        obj = todo.pop()
        if isinstance(obj, tuple) and len(obj) == 2 and obj[0] == "container":
            box = obj[1]
            if id(box) in seen:
                continue
            seen.add(id(box))
            items = box.items() if isinstance(box, dict) else enumerate(box)
            for key, value in list(items):
                hit = swaps.get(id(value))
                if hit is not None and hit[0] is value:
                    box[key] = hit[1]
                    undo.append(("item", box, key, value))
            continue
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, type(sys)):                          # a module of the user's
            if _user_module(obj):
                swap_in(vars(obj))
            continue
        if isinstance(obj, types.MethodType):
            todo.append(obj.__func__)
            owner = obj.__self__
            if hasattr(owner, "__dict__") and not isinstance(owner, type(sys)):
                todo.append(("container", vars(owner)))
            continue
        if isinstance(obj, functools.partial):
            todo.append(obj.func)
            continue
        if isinstance(obj, type):
            if _user_class(obj):
                for key, value in list(vars(obj).items()):
                    hit = swaps.get(id(value))
                    inner = getattr(value, "__func__", None)
                    wrapped = swaps.get(id(inner)) if isinstance(
                        value, (staticmethod, classmethod)) else None
                    if hit is not None and hit[0] is value:
                        setattr(obj, key, hit[1])
                        undo.append(("attr", obj, key, value))
                    elif wrapped is not None and wrapped[0] is inner:
                        setattr(obj, key, type(value)(wrapped[1]))
                        undo.append(("attr", obj, key, value))
                    elif isinstance(value, (staticmethod, classmethod)):
                        todo.append(inner)
                    elif callable(value):
                        todo.append(value)
                module = sys.modules.get(obj.__module__)
                if module is not None:
                    todo.append(module)
            continue
        if not isinstance(obj, types.FunctionType):
            call = getattr(type(obj), "__call__", None)
            if isinstance(call, types.FunctionType) and _user_code(call):
                todo.append(type(obj))
                todo.append(call)
                if hasattr(obj, "__dict__"):
                    todo.append(("container", vars(obj)))
            continue
        if not _user_code(obj):
            if obj.__code__.co_filename.startswith(_PACKAGE):  # exactspec's wrapper of the
                wrapped = getattr(obj, "__wrapped__", None)   # user's function: look inside
                inner = [wrapped] if wrapped is not None else []
                for cell in obj.__closure__ or ():
                    try:
                        inner.append(cell.cell_contents)
                    except ValueError:
                        continue
                inner += list(obj.__defaults__ or ())
                todo.extend(v for v in inner if callable(v))
            continue
        swap_in(obj.__globals__)
        for cell in obj.__closure__ or ():
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            hit = swaps.get(id(value))
            if hit is not None and hit[0] is value:
                cell.cell_contents = hit[1]
                undo.append(("cell", cell, None, value))
            elif callable(value):
                todo.append(value)
        for attribute in ("__defaults__", "__kwdefaults__"):
            values = getattr(obj, attribute)
            if not values:
                continue
            items = values.items() if isinstance(values, dict) else enumerate(values)
            changed = {key: swaps[id(v)][1] for key, v in items
                       if id(v) in swaps and swaps[id(v)][0] is v}
            if changed:
                undo.append(("attr", obj, attribute, values))
                if isinstance(values, dict):
                    setattr(obj, attribute, {**values, **changed})
                else:
                    setattr(obj, attribute, tuple(changed.get(i, v)
                                                  for i, v in enumerate(values)))


def _undo(undo: list) -> None:
    for kind, owner, key, value in reversed(undo):
        if kind == "item":
            owner[key] = value
        elif kind == "cell":
            owner.cell_contents = value
        else:
            setattr(owner, key, value)


_DEPTH = 0


@contextmanager
def watched(*functions):
    """Refuse hidden randomness inside the ``with`` block (re-entrant; restored after).

    ``functions`` are the user's code about to run (a function, a bound method, a callable
    object): references to hidden sources bound in the namespaces they reach are swapped for
    refusing ones during the block.  Inside the block, distributions hand user code exact
    numbers that absorb float literals
    (:func:`~exactspec.core.exact_values.exact_values`)."""
    global _DEPTH
    if _DEPTH:
        _DEPTH += 1
        undo: list = []
        try:
            if functions:
                _bind_traps(functions, _SWAPS, undo)
            yield
        finally:
            _undo(undo)
            _DEPTH -= 1
        return
    saved = []
    swaps: dict = {}
    undo = []
    try:
        for owner, name, dotted, replacement in _cached_targets():
            had = name in vars(owner) if isinstance(owner, type) else True
            original = getattr(owner, name, None)
            saved.append((owner, name, had, original))
            if replacement is None or isinstance(replacement, int):
                made = _REFUSERS.get((id(owner), name))
                if made is None or made[0] is not original:   # made once per original
                    made = (original, _refuse(dotted, original, replacement))
                    _REFUSERS[(id(owner), name)] = made
                replacement = made[1]
            setattr(owner, name, replacement)
            if original is not None:
                swaps[id(original)] = (original, replacement)
        _SWAPS.clear()
        _SWAPS.update(swaps)
        _DEPTH = 1
        if functions:
            _bind_traps(functions, swaps, undo)
        with exact_values():
            yield
    finally:
        _DEPTH = 0
        _SWAPS.clear()
        _undo(undo)
        for owner, name, had, value in reversed(saved):
            if had:
                setattr(owner, name, value)
            else:
                delattr(owner, name)


_SWAPS: dict = {}
_REFUSERS: dict = {}
_TARGETS: dict = {}


def _cached_targets() -> list:
    """:func:`_targets`, computed once (again when NumPy's generator module gets loaded)."""
    if "numpy" in sys.modules and "numpy.random" not in sys.modules:
        import importlib

        importlib.import_module("numpy.random")
    key = "numpy.random" in sys.modules
    hit = _TARGETS.get(key)
    if hit is None:
        hit = _TARGETS[key] = _targets()
    return hit


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
