"""The run a PyTorch rule is in: the engine's sampler, the arithmetic, and where the user is.

While exactspec runs a rule, :data:`CURRENT` holds a :class:`Run`: the sampler ``s`` the random
constructors branch through, the float format of ``--arith`` (``None`` in the exact run), the
default float dtype, and the draft row ``q`` as the rule received it (a multinomial draw from
it is the draft).  :func:`refuse` raises the one-line error that names the user's file and line.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..core.errors import InvalidInput, Undecided

__all__ = ["Run", "current", "refuse", "undecided", "user_line"]

_HERE = str(Path(__file__).resolve().parent)
_ENGINE = str(Path(__file__).resolve().parent.parent / "engine")
_TRITON = str(Path(__file__).resolve().parent.parent / "triton_layer")


class Run:
    """One run of a rule.

    Parameters
    ----------
    sampler : object or None
        The engine's sampler (``None``: no random constructor may be used, as at import time).
    fmt : FloatFormat or None
        The ``--arith`` format; ``None`` for the exact run.
    """

    def __init__(self, sampler=None, fmt=None, draft=None):
        self.sampler = sampler
        self.fmt = fmt
        self.default_name = fmt.name if fmt is not None else "float32"   # the default dtype
        self.draft = draft            # (q tensor, snapshot of its values, q Dist) or None
        self.drafted = False
        #: the declared order of long float sums (``--sum-order``), or None
        self.sum_order = getattr(sampler, "sum_order", None)

    @property
    def exact(self) -> bool:
        return self.fmt is None


#: The run in progress (a plain import of a rule file runs with no sampler).
CURRENT = [Run()]


def current() -> Run:
    """The run in progress."""
    return CURRENT[-1]


def user_line() -> str:
    """``file:line`` of the innermost frame outside exactspec's tensor layer, Triton layer and
    engine."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        try:
            resolved = str(Path(name).resolve())
        except OSError:
            resolved = name
        if not resolved.startswith((_HERE, _ENGINE, _TRITON)):
            return f"{Path(name).name}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


def refuse(message: str) -> InvalidInput:
    """An :class:`InvalidInput` saying ``message`` and the user's file and line (to raise)."""
    return _naming(InvalidInput, message)


def undecided(message: str) -> Undecided:
    """An :class:`Undecided` saying ``message`` and the user's file and line (to raise)."""
    return _naming(Undecided, message)


def _naming(kind, message: str):
    line = user_line()
    err = kind(f"{message} ({line})")
    err.located = True            # named once: no caller adds the line again
    return err
