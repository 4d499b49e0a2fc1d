"""A deadline on exact work whose size shows only as it runs.

Some work cannot be counted before it starts: the engine paths of a rule whose draft
positions are tensor axes depend on what the rule's code compares, and one path may read
whole rows of the vocabulary.  Such work runs inside a :class:`Deadline`; the places where
the interpreters make work (a tensor made, a random choice taken, a kernel's program
started, a term of a composed law) call :func:`check`, which refuses the run once a deadline
open around it has passed.  The refusal is made by the deadline's ``refusal`` (a
:class:`~exactspec.core.errors.TooLarge`); like every refusal of the engine it is recorded
when made (:mod:`exactspec.core.signals`), so user code that catches it is refused in turn.
Outside any deadline :func:`check` costs one test of an empty list.

The clock is :data:`clock`, taken when this module is imported (a watch on user code may
replace ``time.perf_counter`` while the user's code runs); a test passes a clock of its own.

>>> from exactspec.core.errors import TooLarge
>>> ticks = iter(range(0, 100, 2))                    # a clock that moves 2 s per reading
>>> with Deadline(5, lambda spent: TooLarge(f"stopped after {spent} s"),
...               clock=lambda: next(ticks)):
...     for _ in range(10):
...         check()
Traceback (most recent call last):
...
exactspec.core.errors.TooLarge: stopped after 6 s
>>> check()                                           # no deadline open: nothing
"""

from __future__ import annotations

import time
from typing import Callable

__all__ = ["Deadline", "check", "clock", "open_deadlines", "keep_open"]

#: The seconds clock of every deadline without a clock of its own.
clock = time.perf_counter

_OPEN: list = []          # the deadlines open now, innermost last


class Deadline:
    """Refuse the work inside the ``with`` block once ``seconds`` have passed.

    Parameters
    ----------
    seconds : float
        The time the block may take.
    refusal : callable
        ``refusal(spent) -> TooLarge``: the refusal, given the seconds spent.
    clock : callable, optional
        Seconds now (default :data:`clock`, read when the deadline opens).
    """

    __slots__ = ("seconds", "refusal", "_clock", "started", "at")

    def __init__(self, seconds: float, refusal: Callable, clock: Callable | None = None):
        self.seconds, self.refusal, self._clock = seconds, refusal, clock
        self.started = self.at = None

    def __enter__(self) -> "Deadline":
        if self._clock is None:
            self._clock = clock
        self.started = self._clock()
        self.at = self.started + self.seconds
        _OPEN.append(self)
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    def close(self) -> None:
        """End the deadline before its block ends (again: nothing)."""
        if self in _OPEN:
            _OPEN.remove(self)

    def spent(self) -> float:
        """Seconds since the deadline opened."""
        return self._clock() - self.started

    def check(self) -> None:
        """Raise this deadline's refusal if it has passed."""
        now = self._clock()
        if now > self.at:
            raise self.refusal(now - self.started)


def check() -> None:
    """Raise the refusal of an open deadline that has passed (nothing when none is open)."""
    if _OPEN:
        for deadline in _OPEN:
            deadline.check()


def open_deadlines() -> list:
    """The deadlines open now, innermost last (a copy of the list)."""
    return list(_OPEN)


def keep_open(deadlines: list) -> None:
    """Make ``deadlines`` the open ones (a forked copy of the process keeps those that the
    process resuming it still has open, :mod:`exactspec.engine.forked_paths`)."""
    _OPEN[:] = deadlines
