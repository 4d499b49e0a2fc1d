"""A user's multi-position verifier loaded from ``path/to/file.py:function`` or
``module:function`` (:func:`exactspec.core.user_code.load_user_object`): a PyTorch rule
``fn(p, q)`` (a file that imports torch) made the whole call of its draft positions
(:func:`exactspec.sequences.torch_rules.pytorch_whole_call`), any other function as it is.
:mod:`exactspec.sequences.user` proves it.

>>> load_user_function("exactspec.sequences.chains:chain_tokens_per_call").__name__
'chain_tokens_per_call'
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..core.errors import InvalidInput
from ..core.user_code import load_user_object

__all__ = ["load_user_function", "load_verifier", "trusted_function"]


def load_verifier(spec: str, base: Path | None = None, *, gamma: int | None = None,
                  m: int | None = None) -> Callable:
    """The user's multi-position verifier named ``spec`` (relative to ``base``), as ``tree
    --verifier`` and a spec's ``"verifier"`` take it: a PyTorch rule ``fn(p, q)`` (a file
    that imports torch) loaded on the tensor layer and made the whole call of ``gamma + 1``
    target rows and ``gamma`` draft rows (``m`` rows and ``m - 1`` draft rows without
    ``gamma``, as ``verify FILE:fn --tokens m`` hands it), any other function as
    :func:`load_user_function` loads it."""
    from ..torch_layer import load_pytorch_rule

    rule = load_pytorch_rule(_resolved(spec, base))
    if rule is None:
        return load_user_function(spec, base)
    positions = gamma + 1 if isinstance(gamma, int) and not isinstance(gamma, bool) else m
    if positions is None:
        raise InvalidInput(f"{spec}: a PyTorch rule needs the number of draft positions each "
                           "call is handed: give 'gamma' (or 'm') in the spec, or --gamma")
    from .torch_rules import pytorch_whole_call

    return pytorch_whole_call(rule, positions)


def _resolved(spec: str, base: Path | None) -> str:
    """``spec`` with its file taken relative to ``base`` where it is found there only."""
    where, _, name = spec.rpartition(":")
    if base is not None and where.endswith(".py") and not Path(where).is_absolute() \
            and not Path(where).is_file() and (base / where).is_file():
        return f"{base / where}:{name}"
    return spec


def load_user_function(spec: str, base: Path | None = None) -> Callable:
    """The function named by ``path/to/file.py:function`` (relative to ``base``) or
    ``module:function``."""
    spec = _resolved(spec, base)
    function = load_user_object(spec)
    if not callable(function):
        raise InvalidInput(f"{spec}: not a function")
    return function


def trusted_function(reference: str, m: int) -> Callable:
    """The user's verifier named ``reference`` as ``exactspec tree --verifier`` and ``verify
    --tokens M`` load it: a PyTorch rule ``fn(p, q)`` as the whole call for ``m`` tokens, any
    other function as given.  Only for a reference the person checking a certificate named
    (``--trust``)."""
    from ..torch_layer import load_pytorch_rule

    rule = load_pytorch_rule(reference)
    if rule is None:
        return load_user_function(reference)
    from .torch_rules import pytorch_whole_call

    return pytorch_whole_call(rule, m)
