"""Multi-position PyTorch rules: ``verify FILE:fn --p P --q Q --tokens M`` on 2-D rows.

A function ``fn(p, q)`` of a file that imports torch (a PyTorch rule,
:mod:`exactspec.torch_layer.rule`) is, under ``--tokens M``, a whole call of a chain or tree
verifier: each call is handed the target rows ``p`` of shape ``[M, V]`` and the draft rows ``q``
of shape ``[M - 1, V]`` of the context-free pair (``M - 1`` draft positions, so that one call
can emit all ``M`` tokens; a call that emits fewer is followed by another one) and returns the
emitted token indices.  :func:`prove_pytorch_tokens` proves the first ``M`` tokens against the
target's joint law with :func:`exactspec.sequences.user.user_report` (exact, or under
``--arith`` paired with exact arithmetic).
"""

from __future__ import annotations

from ..core.errors import InvalidInput
from .context import ContextPair
from .user import user_report

__all__ = ["prove_pytorch_tokens"]


def prove_pytorch_tokens(rule, p, q, m: int, *, arith: str | None = None, tolerance=None,
                         max_paths: int | None = 10**7) -> dict:
    """Prove the PyTorch ``rule`` (a :class:`~exactspec.torch_layer.rule.PyTorchRule`) on the
    context-free pair ``(p, q)`` for its first ``m`` tokens; ``user_report``'s report."""
    if isinstance(m, bool) or not isinstance(m, int) or m < 2:
        raise InvalidInput(f"--tokens {m!r}: a multi-position PyTorch rule needs M >= 2 (each "
                           "call is handed M - 1 draft positions)")
    rule.gamma = m - 1

    def whole_call(s, pair, ctx):
        return rule.call_rows(s, pair, ctx)

    whole_call.__name__ = rule.spec
    return user_report({}, whole_call, pair=ContextPair.context_free(p, q), m=m, arith=arith,
                       tolerance=tolerance, max_paths=max_paths)
