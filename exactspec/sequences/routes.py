"""The routes of a user's multi-position rule, tried in order by the planner.

A :class:`SequenceRequest` (the verifier, the pair, ``m`` tokens after the context, the
arithmetic, the grid, the budget) is answered, through
:func:`exactspec.routes.planner.plan`, by the first of :data:`SEQUENCE_ROUTES` that takes it:

1. ``factored`` (:mod:`exactspec.sequences.factored`): a PyTorch rule on a context-free pair,
   every draft position a tensor axis, the call's law a sum of rank-one terms; declines a
   rule that is not a PyTorch rule, a pair whose rows depend on the context, a certificate
   (the paths are listed), library ``exp``/``log``, one token;
2. ``paths``: the joint enumeration of the generation, call by call (the reference).

Each answer is the report :func:`exactspec.sequences.user.user_report` returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.errors import ExactspecError, TooLarge
from ..core.signals import CannotProceed
from ..engine.hidden_state import HiddenState

__all__ = ["SequenceRequest", "SEQUENCE_ROUTES", "FACTORED", "JOINT_PATHS"]


@dataclass(frozen=True)
class SequenceRequest:
    """One generation of a user's multi-position rule asked of the planner: the verifier
    (:class:`~exactspec.sequences.user.UserVerifier`), its pair, ``m`` tokens after ``ctx``,
    and the run's arithmetic, grid, tolerance, budgets and options."""

    verifier: Any
    pair: Any
    m: int
    ctx: tuple
    arith: str | None = None
    grid: int | None = None
    tolerance: Any = None
    max_paths: int | None = None
    certificate: bool = False
    elementwise: str = "correct"
    max_seconds: float | None = None
    sum_order: str | None = None
    report: Any = field(default=None, compare=False)   # the path route's report function
    user: bool = False             # each route checks the rule's state itself

    @property
    def name(self) -> str:
        return self.verifier.name


class Factored:
    """Every draft position a tensor axis (:func:`~exactspec.sequences.factored.factored_report`)."""

    name = "factored"
    declines_on = (ExactspecError,)   # the path route words a refusal with the user's line
    # over the budget here is over the budget; a call whose law changed when run again (or
    # state seen changed) is hidden state, and the path route, run after these calls, might
    # find the state already settled and give the verdict of a changed rule
    kept_refusals = (TooLarge, HiddenState)

    def run(self, request: SequenceRequest, declined: dict) -> dict:
        rule = request.verifier.tensor_rule
        if rule is None:
            raise CannotProceed("not a PyTorch rule")
        if request.pair.context_free_rows is None:
            raise CannotProceed("rows that depend on the context")
        if request.certificate:
            raise CannotProceed("the paths are listed (a certificate)")
        if request.elementwise != "correct":
            raise CannotProceed(f"exp and log from {request.elementwise}")
        if request.m < 2:
            raise CannotProceed("one token")
        from . import factored

        return factored.factored_report(rule, request.pair, request.m, request.ctx,
                                        describe=request.verifier.describe(),
                                        tolerance=request.tolerance,
                                        max_paths=request.max_paths, arith=request.arith,
                                        grid=request.grid, sum_order=request.sum_order,
                                        max_seconds=request.max_seconds)


class JointPaths:
    """The generation enumerated call by call, every path (the reference)."""

    name = "paths"
    declines_on = ()
    kept_refusals = ()

    def run(self, request: SequenceRequest, declined: dict) -> dict:
        from ..core.budget import check_sequences

        verifier = request.verifier
        check_sequences(len(request.pair.labels), request.m, verifier.gamma or 0,
                        request.max_paths, what="m =")
        return request.report(verifier, request.pair, request.m, request.ctx,
                              arith=request.arith, grid=request.grid,
                              tolerance=request.tolerance, max_paths=request.max_paths,
                              certificate=request.certificate,
                              elementwise=request.elementwise,
                              max_seconds=request.max_seconds, sum_order=request.sum_order)


FACTORED = Factored()
JOINT_PATHS = JointPaths()

#: The routes of a user's multi-position rule, in the order the planner tries them.
SEQUENCE_ROUTES = (FACTORED, JOINT_PATHS)
