"""The seconds of a step-by-step enumeration projected from its first states, and refused
when they pass the budget.

An enumeration by merged states (:func:`~exactspec.engine.merged.enumerate_merged`) works
one generation of states at a time, and the number of states is not known before the
generation is reached: RRS without replacement has one state after the first draft and
about one per token after the first rejection, each reading a vector over the vocabulary.
:class:`StepBudget` watches a generation as it runs: once it has spent
:data:`SETTLE_SECONDS` on it, the seconds of the states still to do are projected from
the rate of those done (and at that step's cost for each step the method says is still to come,
:attr:`~exactspec.engine.merged.Stepped.least_steps`, refused then only past twice the
budget, since later steps may cost less), and a run whose projection passes the budget is
refused at once, with the projection, instead of running for hours.  A run past twice the budget is stopped
whatever the projection said (the rate of the first states may have been low).

The clock is :data:`exactspec.engine.path_estimate.clock`, read at each call, so that a
test can replace it; the budget logic never depends on this machine's speed.

>>> ticks = iter(range(0, 1000, 2))             # a clock that moves 2 s per reading
>>> budget = StepBudget(60.0, "rrs-wor", clock=lambda: next(ticks))
>>> budget.begin(1, 100)
>>> budget.state_done()
Traceback (most recent call last):
...
exactspec.core.errors.TooLarge: rrs-wor: merged states, step 1: 1 of 100 states in 2.0 s; at that rate this step takes about 202 s of exact work, over the budget of 60 s: use --backend numpy (float64 estimates), a smaller instance, or --max-paths N to insist
"""

from __future__ import annotations

import math
from typing import Callable

from ..core.errors import TooLarge
from . import path_estimate

__all__ = ["StepBudget", "SETTLE_SECONDS"]

#: A generation's rate is trusted once it has run this long (or finished).
SETTLE_SECONDS = 1.0


class StepBudget:
    """The seconds budget of a run by generations of states.

    Parameters
    ----------
    max_seconds : float
        The budget of exact work, in seconds.
    name : str
        What runs, for the refusal (``"rrs-wor"``).
    clock : callable, optional
        Seconds now (default :data:`exactspec.engine.path_estimate.clock`, read when called).
    least_steps : int
        Steps the run takes at least (0: unknown): a step's projected seconds count once more
        for each step still to come.
    """

    def __init__(self, max_seconds: float, name: str, clock: Callable | None = None,
                 least_steps: int = 0):
        self.max_seconds, self.name, self.least_steps = max_seconds, name, least_steps
        self._clock = clock
        self.started = self.now()
        self.generation = 0
        self.states = self.done = 0
        self.step_started = self.started

    def now(self) -> float:
        """The clock's reading."""
        return (self._clock or path_estimate.clock)()

    def begin(self, generation: int, states: int) -> None:
        """A new generation of ``states`` states starts."""
        self.generation, self.states, self.done = generation, states, 0
        self.step_started = self.now()

    def state_done(self) -> None:
        """One state of the generation is done: refuse
        (:class:`~exactspec.core.errors.TooLarge`) if the whole run passes twice the budget,
        if the generation's states still to do, projected at its rate so far, take it past
        the budget, or if the steps still to come at this step's cost take it past twice
        the budget.  A step that has finished, with no step known to be still to come, is
        never refused by projection (the run may be about to end)."""
        self.done += 1
        now = self.now()
        spent = now - self.step_started
        elapsed = now - self.started
        instead = "use --backend numpy (float64 estimates), a smaller instance, or " \
                  "--max-paths N to insist"
        if elapsed > 2 * self.max_seconds:
            raise TooLarge(f"{self.name}: merged states, step {self.generation}: not done "
                           f"after {elapsed:,.0f} s of exact work, over the budget of "
                           f"{self.max_seconds:,.0f} s: stopped; {instead}",
                           estimate=math.ceil(elapsed), budget=math.floor(self.max_seconds))
        later = max(0, self.least_steps - self.generation)
        if self.done < self.states:
            if spent < SETTLE_SECONDS:
                return                   # too little seen for a rate
        elif not later or elapsed < SETTLE_SECONDS:
            return                       # a finished step projects nothing more
        step = spent / self.done * self.states
        projected = (self.step_started - self.started) + step * (1 + later)
        # steps to come are counted at this step's cost; they may cost less (states finish),
        # so a projection over them refuses only past twice the budget, as a walk stops
        if projected > self.max_seconds * (2 if later else 1):
            more = f" and at least {later:,} steps more take" if later else " takes"
            raise TooLarge(f"{self.name}: merged states, step {self.generation}: "
                           f"{self.done:,} of {self.states:,} states in {spent:,.1f} s; at "
                           f"that rate this step{more} about {projected:,.0f} s of exact "
                           f"work, over the budget of {self.max_seconds:,.0f} s: {instead}",
                           estimate=math.ceil(projected), budget=math.floor(self.max_seconds))
