"""Refusals of the Triton layer: one line naming the kernel and the user's line.

>>> err = refuse("an example")
>>> str(err).startswith("an example (")
True
"""

from __future__ import annotations

import os
import sys

from ..core.errors import InvalidInput

__all__ = ["refuse", "user_frame_line", "KERNELS"]

#: exactspec's own code (frames in it are never the user's line)
PACKAGE = os.path.realpath(os.path.join(os.path.dirname(__file__), os.pardir)) + os.sep
HERE = os.path.realpath(os.path.dirname(__file__)) + os.sep

#: the names of the kernels being launched, innermost last
KERNELS: list = []

_OURS: dict = {}


def ours(filename: str) -> bool:
    """Whether ``filename`` is exactspec's own code."""
    hit = _OURS.get(filename)
    if hit is None:
        hit = _OURS[filename] = os.path.realpath(filename).startswith(PACKAGE)
    return hit


def user_frame_line(frame=None) -> str:
    """``file:line`` of the innermost frame outside exactspec (the kernel's line, inside a
    launch)."""
    frame = frame if frame is not None else sys._getframe(1)
    while frame is not None and ours(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return "?"
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


def where(line: str) -> str:
    """``kernel K, file:line`` inside a launch, else ``file:line``."""
    return f"kernel {KERNELS[-1]}, {line}" if KERNELS else line


def refuse(message: str) -> InvalidInput:
    """An :class:`InvalidInput` saying ``message``, the kernel and the user's line (to raise)."""
    err = InvalidInput(f"{message} ({where(user_frame_line(sys._getframe(1)))})")
    err.located = True
    return err
