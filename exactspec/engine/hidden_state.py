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

import pickle
import types
from typing import Any

from ..core.errors import InvalidInput

__all__ = ["HiddenState", "state_fingerprint", "check_unchanged"]


class HiddenState(InvalidInput):
    """A verifier kept state between runs without declaring it."""


def _digest(value) -> Any:
    try:
        return pickle.dumps(value)
    except Exception:  # noqa: BLE001 - unpicklable values are compared by their text
        return repr(value)


def _kind(value) -> str:
    """``"random generator in "`` for Python's and NumPy's generators, else ``""``."""
    names = {"Random", "SystemRandom", "Generator", "RandomState"}
    return "random generator in " if type(value).__name__ in names else ""


def state_fingerprint(function, seen=None, depth: int = 0) -> dict:
    """What ``function`` could keep between runs, each item digested for comparison."""
    seen = set() if seen is None else seen
    out: dict = {}
    if id(function) in seen or depth > 3:
        return out
    seen.add(id(function))
    if isinstance(function, types.MethodType):
        out["attributes of self"] = _digest(vars(function.__self__))
        function = function.__func__
    code = getattr(function, "__code__", None)
    if code is None:
        wrapped = getattr(function, "__wrapped__", None)   # a rule object around the user's
        if isinstance(wrapped, types.FunctionType):        # function (a PyTorch rule): its state
            out.update(state_fingerprint(wrapped, seen, depth + 1))
        if hasattr(function, "__dict__"):
            out[f"attributes of {type(function).__name__}"] = _digest(vars(function))
        call = getattr(type(function), "__call__", None)
        return out if call is None else {**out, **state_fingerprint(call, seen, depth + 1)}
    module_globals = getattr(function, "__globals__", {})
    for name in code.co_names:
        if name not in module_globals:
            continue
        value = module_globals[name]
        if isinstance(value, types.FunctionType):
            if value.__module__ == function.__module__:
                out.update(state_fingerprint(value, seen, depth + 1))
            continue
        if isinstance(value, (types.ModuleType, type)) or callable(value):
            continue
        out[f"{_kind(value)}global {name!r}"] = _digest(value)
    for name, cell in zip(code.co_freevars, function.__closure__ or ()):
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if isinstance(value, types.FunctionType):
            out.update(state_fingerprint(value, seen, depth + 1))
        elif not isinstance(value, (types.ModuleType, type)):
            out[f"{_kind(value)}closure variable {name!r}"] = _digest(value)
    defaults = tuple(function.__defaults__ or ()) + tuple((function.__kwdefaults__ or {}).values())
    for value in defaults:
        if isinstance(value, types.FunctionType):
            out.update(state_fingerprint(value, seen, depth + 1))
    out[f"defaults of {function.__name__}"] = _digest(
        tuple(v for v in defaults if not isinstance(v, types.FunctionType)))
    out[f"attributes of {function.__name__}"] = _digest(dict(vars(function)))
    return out


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
