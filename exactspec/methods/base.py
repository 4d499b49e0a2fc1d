"""The one contract every verification method follows.

A method is a plain function ``run(s, p, q, k)`` written against the sampling interface ``s``
(see :mod:`exactspec.engine`): it makes its drafts with ``s.draft``/``s.drafts``, its random
decisions with ``s.coin``, ``s.draw``, ``s.uniform`` and ``s.pick``, marks an explicitly
accepted draft with ``s.accept(x)``, and returns the output token.  :class:`Method` adds what
the registry, the command line and ``compare`` need to know about it.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

from ..core.errors import InvalidInput

__all__ = ["Method", "as_method"]


@dataclass(frozen=True)
class Method:
    """A verification method and its contract.

    Attributes
    ----------
    name : str
        The registry name (``"sps"``).
    run : callable
        ``run(s, p, q, k) -> token``.
    draft_law : str
        ``"iid"``, ``"wor"`` (without replacement) or ``"hub"``: the law its drafts follow, so
        that ``compare`` can set it against the optimum of that law.
    claimed_lossless : bool
        What the literature claims; the engine proves or refutes it on each instance.
    k_values : tuple or None
        The only ``k`` it takes (``(1,)`` for one-draft rules), or ``None`` for any ``k >= 1``.
    summary : str
        One line for listings.
    user : bool
        A user's function (not a registered method): the exact engine runs it under watch
        (hidden randomness refused, every path run twice and compared, inputs read-only).
    plan_size : callable, optional
        ``plan_size(p, q, k) -> (size, what)``: the size of the exact work the method does
        once before its first path (``optimal``: the draft multisets of its max flow), cheap
        to compute, so that a caller can refuse it up front (``compare``).
    steps : Stepped, optional
        Declared capability: the method's stepped form (:class:`~exactspec.engine.merged.Stepped`),
        which merged states run where the plain paths are too many
        (:mod:`exactspec.routes.merged`).
    sorted_sums : callable, optional
        Declared capability: ``sorted_sums(p, q, k, *, max_seconds) -> Enumeration``, the
        method's exact law,
        ``P(Y in X)``, explicit acceptance and number of paths by sums over one sorted order
        (:mod:`exactspec.routes.sorted_sums`; RRS without replacement at ``k = 2``).
    tensor_rule : PyTorchRule, optional
        Declared capability: the PyTorch rule behind ``run``, whose draft can be a tensor axis
        (:mod:`exactspec.routes.tensor_axis`).
    """

    name: str
    run: Callable
    draft_law: str = "iid"
    claimed_lossless: bool = True
    k_values: tuple | None = None
    summary: str = ""
    requires: Callable | None = field(default=None, compare=False)
    user: bool = field(default=False, compare=False)
    plan_size: Callable | None = field(default=None, compare=False)
    steps: Any = field(default=None, compare=False)
    sorted_sums: Callable | None = field(default=None, compare=False)
    tensor_rule: Any = field(default=None, compare=False)

    def check(self, p, q, k: int) -> None:
        """Raise :class:`InvalidInput` when the method cannot run on ``(p, q, k)``."""
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise InvalidInput(f"k={k}: need at least one draft")
        if self.k_values is not None and k not in self.k_values:
            allowed = ", ".join(str(v) for v in self.k_values)
            raise InvalidInput(f"{self.name} takes only k = {allowed}, not k = {k}")
        if self.draft_law == "wor" and k > len(q.support):
            raise InvalidInput(
                f"{self.name} drafts without replacement: k={k} exceeds the {len(q.support)} "
                "tokens q gives positive probability; use a smaller k or rrs")
        if self.requires is not None:
            self.requires(p, q, k)


def as_method(function: Callable, name: str | None = None) -> Method:
    """Wrap a user's verifier ``f(s, p, q)`` or ``f(s, p, q, k)`` as a :class:`Method`."""
    if isinstance(function, Method):
        return function
    if not callable(function):
        raise InvalidInput(f"{function!r} is not a function")
    try:
        params = inspect.signature(function).parameters
    except (TypeError, ValueError):
        params = {}
    positional = [prm for prm in params.values()
                  if prm.kind in (prm.POSITIONAL_ONLY, prm.POSITIONAL_OR_KEYWORD)]
    takes_k = len(positional) >= 4 or "k" in params or any(
        prm.kind == prm.VAR_POSITIONAL for prm in params.values())
    if takes_k:
        run = function
    elif len(positional) == 3:
        def run(s, p, q, k, _f=function):
            return _f(s, p, q)

        run.__wrapped__ = function                   # what inspect.unwrap finds
    else:
        raise InvalidInput(
            f"{getattr(function, '__name__', function)}: a verifier takes (s, p, q) or "
            "(s, p, q, k)")
    label = name or getattr(function, "__name__", "user")
    return Method(name=label, run=run, summary=(function.__doc__ or "").strip().split("\n")[0],
                  k_values=None if takes_k else (1,),
                  user=not str(getattr(function, "__module__", "")).startswith("exactspec."),
                  tensor_rule=function if _is_pytorch_rule(function) else None)


def _is_pytorch_rule(function) -> bool:
    """``function`` is a loaded PyTorch rule (the torch layer is imported only if so)."""
    if type(function).__module__ != "exactspec.torch_layer.rule":
        return False
    from ..torch_layer.rule import PyTorchRule

    return isinstance(function, PyTorchRule)
