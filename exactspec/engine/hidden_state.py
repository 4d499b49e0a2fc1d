"""Hidden state: what a verifier could keep from one run to the next, and a check that it did not.

The exact interpreters run a method again and again (once per path, once per call); a method
that changes something outside its inputs (a module global, a closure variable, an attribute,
a mutable default) between runs gets a law computed from corrupted state.
:func:`state_fingerprint` records everything of that kind the function's code can reach (its
globals, those of the same module's functions it calls, closure cells, defaults, attributes);
:func:`check_unchanged` compares a later fingerprint and raises :class:`HiddenState`.

>>> seen = []
>>> def remembers(s, p, q):
...     seen.append(1)
>>> before = state_fingerprint(remembers)
>>> remembers(None, None, None)
>>> check_unchanged(remembers, before, "remembers")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
exactspec.engine.hidden_state.HiddenState: remembers keeps hidden state: its global 'seen' changed ...
"""

from __future__ import annotations

import functools
import pickle
import types
from typing import Any

from ..core.errors import InvalidInput
from ..core.signals import CannotProceed

__all__ = ["HiddenState", "state_fingerprint", "check_unchanged"]


class HiddenState(InvalidInput):
    """A verifier kept state between runs without declaring it."""


def _digest(value) -> Any:
    try:
        return pickle.dumps(value)
    except CannotProceed:    # a route's stand-in (a law token, the draft) kept: never equal
        return ("a stand-in value of a route", id(value))
    except Exception:  # noqa: BLE001 - unpicklable values are compared by their text
        try:
            return repr(value)
        except CannotProceed:
            return ("a stand-in value of a route", id(value))


def _kind(value) -> str:
    """``"random generator in "`` for Python's and NumPy's generators, else ``""``."""
    names = {"Random", "SystemRandom", "Generator", "RandomState"}
    return "random generator in " if type(value).__name__ in names else ""


#: Names whose call reads or resets a ``functools`` cache's own state (its hit count).
_CACHE_STATE = {"cache_info", "cache_clear"}


def state_fingerprint(function, seen=None, depth: int = 0) -> dict:
    """What ``function`` could keep between runs, each item digested for comparison: its
    globals and closure cells, the data of the user's modules it reaches (a counter in a
    helper module's dict), the functions of the user's files it calls, objects with
    attributes (a callable instance), and the hit counts of the ``functools`` caches it
    reaches when its code reads them (``cache_info``)."""
    caches: list = []
    names: set = set()
    out = _fingerprint(function, set() if seen is None else seen, depth, caches, names)
    if names & _CACHE_STATE:
        for label, cache in caches:
            out[f"cache of {label}"] = repr(cache.cache_info())
    return out


def _is_cache(value) -> bool:
    """A ``functools.lru_cache`` (or ``functools.cache``) wrapper."""
    return isinstance(value, functools._lru_cache_wrapper)


def _user_code(value) -> bool:
    from ..core.signals import is_user_file

    code = getattr(value, "__code__", None)
    return code is not None and is_user_file(code.co_filename)


def _user_module(value) -> bool:
    from ..core.signals import is_user_file

    name = getattr(value, "__file__", None)
    return isinstance(name, str) and is_user_file(name)


def _fingerprint(function, seen, depth, caches, names) -> dict:
    out: dict = {}
    if id(function) in seen or depth > 3:
        return out
    seen.add(id(function))
    if isinstance(function, types.MethodType):
        out["attributes of self"] = _digest(vars(function.__self__))
        function = function.__func__
    if _is_cache(function):
        caches.append((getattr(function, "__name__", "a cached function"), function))
        return {**out, **_fingerprint(function.__wrapped__, seen, depth + 1, caches, names)}
    code = getattr(function, "__code__", None)
    if code is None:
        wrapped = getattr(function, "__wrapped__", None)   # a rule object around the user's
        if isinstance(wrapped, types.FunctionType):        # function (a PyTorch rule): its state
            out.update(_fingerprint(wrapped, seen, depth + 1, caches, names))
        if hasattr(function, "__dict__"):
            out[f"attributes of {type(function).__name__}"] = _digest(vars(function))
        call = getattr(type(function), "__call__", None)
        if call is None:
            return out
        return {**out, **_fingerprint(call, seen, depth + 1, caches, names)}
    names.update(code.co_names)
    module_globals = getattr(function, "__globals__", {})
    for name in code.co_names:
        if name not in module_globals:
            continue
        value = module_globals[name]
        out.update(_global(name, value, function, seen, depth, caches, names))
    for name, cell in zip(code.co_freevars, function.__closure__ or ()):
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if isinstance(value, types.FunctionType) or _is_cache(value):
            out.update(_fingerprint(value, seen, depth + 1, caches, names))
        elif not isinstance(value, (types.ModuleType, type)):
            out[f"{_kind(value)}closure variable {name!r}"] = _digest(value)
    defaults = tuple(function.__defaults__ or ()) + tuple((function.__kwdefaults__ or {}).values())
    for value in defaults:
        if isinstance(value, types.FunctionType):
            out.update(_fingerprint(value, seen, depth + 1, caches, names))
    out[f"defaults of {function.__name__}"] = _digest(
        tuple(v for v in defaults if not isinstance(v, types.FunctionType)))
    out[f"attributes of {function.__name__}"] = _digest(dict(vars(function)))
    return out


def _global(name, value, function, seen, depth, caches, names) -> dict:
    """The fingerprint of the global ``name`` that ``function`` reads."""
    if isinstance(value, types.FunctionType):
        if value.__module__ == function.__module__ or _user_code(value):
            return _fingerprint(value, seen, depth + 1, caches, names)
        return {}
    if _is_cache(value):
        return _fingerprint(value, seen, depth + 1, caches, names)
    if isinstance(value, types.ModuleType):
        if not _user_module(value) or id(value) in seen:
            return {}
        seen.add(id(value))             # a helper module of the user's: its data and code
        out = {}
        for attribute, held in list(vars(value).items()):
            if attribute.startswith("__"):
                continue
            if isinstance(held, types.FunctionType) or _is_cache(held):
                if _user_code(held) or _is_cache(held):
                    out.update(_fingerprint(held, seen, depth + 1, caches, names))
            elif not isinstance(held, (types.ModuleType, type)) and not callable(held):
                out[f"{_kind(held)}global {name}.{attribute}"] = _digest(held)
        return out
    if isinstance(value, type):
        return {}
    if callable(value):
        if hasattr(value, "__dict__") and not isinstance(value, types.BuiltinFunctionType) \
                and _user_code(getattr(type(value), "__call__", None)):
            return {f"attributes of global {name!r}": _digest(vars(value)),
                    **_fingerprint(value, seen, depth + 1, caches, names)}
        return {}
    return {f"{_kind(value)}global {name!r}": _digest(value)}


def check_unchanged(function, before: dict, name: str) -> None:
    """Raise :class:`HiddenState` when ``function``'s fingerprint differs from ``before``."""
    after = state_fingerprint(function)
    changed = [k for k in before if after.get(k) != before[k]]
    generators = [k for k in changed if k.startswith("random generator")]
    if generators:
        raise HiddenState(
            f"{name} draws from its own random generator (its {generators[0]}): every random "
            "choice must go through the sampler s, not random or numpy.random")
    if changed:
        raise HiddenState(
            f"{name} keeps hidden state: its {changed[0]} changed while it was enumerated, so "
            "its law depends on what ran before; make each run depend only on its inputs, or "
            "declare the state (a last parameter `state`, returning (tokens, new_state))")
