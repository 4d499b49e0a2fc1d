"""Multi-position PyTorch rules: ``verify FILE:fn --p P --q Q --tokens M`` on 2-D rows.

A function ``fn(p, q)`` of a file that imports torch (a PyTorch rule,
:mod:`exactspec.torch_layer.rule`) is, under ``--tokens M``, a whole call of a chain or tree
verifier: each call is handed the target rows ``p`` of shape ``[M, V]`` and the draft rows ``q``
of shape ``[M - 1, V]`` of the context-free pair (``M - 1`` draft positions, so that one call
can emit all ``M`` tokens; a call that emits fewer is followed by another one) and returns the
emitted token indices.  :func:`pytorch_whole_call` makes it a whole call ``f(s, pair, ctx)``,
proved like every user's multi-position rule by :func:`exactspec.sequences.user.user_report`
(every option of ``verify --tokens`` applies: ``--arith``, ``--grid``, ``--tolerance``,
``--certificate``, ``--search``).
"""

from __future__ import annotations

from ..core.errors import InvalidInput

__all__ = ["pytorch_whole_call"]


def pytorch_whole_call(rule, m: int):
    """The PyTorch ``rule`` (a :class:`~exactspec.torch_layer.rule.PyTorchRule`) as a whole
    call ``f(s, pair, ctx)`` for the first ``m`` tokens, handed ``m`` target rows and ``m - 1``
    draft rows."""
    if isinstance(m, bool) or not isinstance(m, int) or m < 2:
        raise InvalidInput(f"--tokens {m!r}: a multi-position PyTorch rule needs M >= 2 (each "
                           "call is handed M - 1 draft positions)")
    rule.gamma = m - 1

    def whole_call(s, pair, ctx):
        return rule.call_rows(s, pair, ctx)

    whole_call.__name__ = rule.spec
    whole_call.pytorch_rule = rule     # reads only its rows: the factored route may take it
    return whole_call
