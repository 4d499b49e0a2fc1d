"""Route: merged states of a method's stepped form, where the plain paths are too many.

A method that declares a stepped form (:attr:`~exactspec.methods.base.Method.steps`: RRS,
RRS without replacement, K-SEQ, SpecHub, KEY) is run step by step with equal states merged
(:func:`exactspec.engine.merged.enumerate_merged`), which counts paths instead of listing them.
It answers only requests that allow merged states
(:func:`exactspec.bounds.compare.exact_verification`), in two places of the planner's order:

- :data:`MERGED_STATES`, before the path enumeration, when the estimated plain paths are more
  than :data:`PLAIN_PATHS` (or the stepped form's own smaller ``plain_paths``) or their
  estimated seconds more than the request's ``max_seconds``; it declines otherwise, and the
  plain enumeration, the reference, runs;
- :data:`MERGED_AFTER_PATHS`, after the path enumeration declined with ``retry "merged"``: the
  walk's own, closer estimate went over its budget, and merged states fit
  (:func:`plain_refusal_falls_back`).

Raises :class:`~exactspec.core.errors.TooLarge` above the budget: ``k`` over
:data:`MERGED_MAX_K`, or merged states not bounded in advance (``paths_budget``) estimated
above the request's budget, or a step of merged states projected past the seconds budget
(:func:`merged_seconds`) from the rate of its first states.
"""

from __future__ import annotations

from ..core.errors import TooLarge
from ..core.signals import CannotProceed
from .request import Request

__all__ = ["MERGED_STATES", "MERGED_AFTER_PATHS", "MergedStates", "PLAIN_PATHS",
           "MERGED_FALLBACK_PATHS", "MERGED_MAX_K", "merged_budget", "merged_form",
           "merged_seconds", "plain_refusal_falls_back"]

#: Above this many estimated paths, a method with a stepped form runs with merged states.
PLAIN_PATHS = 100_000
#: A method whose merged states are not bounded in advance (``paths_budget``) takes them in
#: place of a refused plain walk up to this many estimated paths (key-lazy: about 1,900,000
#: paths in 18 s on 11 tokens).
MERGED_FALLBACK_PATHS = 2_000_000
#: The most drafts merged states take (most stepped forms take about one step per draft).
MERGED_MAX_K = 2_000


def merged_form(request: Request):
    """The stepped form merged states run for ``request``: the method's, or its shortcut
    where the shortcut's condition holds (:func:`~exactspec.engine.merged.stepped_form`)."""
    from ..engine.merged import stepped_form

    return stepped_form(request.steps, request.p, request.q, request.k)


def merged_budget(request: Request):
    """The budget of merged states: the request's ``max_paths``, and for merged states not
    bounded in advance also its ``max_merged_paths``."""
    budget = request.max_paths
    if merged_form(request).paths_budget and request.max_merged_paths is not None:
        budget = request.max_merged_paths if budget is None else \
            min(budget, request.max_merged_paths)
    return budget


def plain_refusal_falls_back(request: Request, refusal: TooLarge) -> bool:
    """Whether merged states take over from a plain walk refused as too large: always for
    merged states bounded in advance, else when the refusal's estimate fits
    :data:`MERGED_FALLBACK_PATHS` and the budget."""
    if request.steps is None or not request.merged_states:
        return False
    if not merged_form(request).paths_budget:
        return True
    budget = merged_budget(request)
    limit = MERGED_FALLBACK_PATHS if budget is None else min(budget, MERGED_FALLBACK_PATHS)
    return refusal.estimate is not None and refusal.estimate <= limit


class MergedStates:
    """Merged states, before the plain enumeration (``after_paths=False``) or in place of
    its refusal (``after_paths=True``)."""

    declines_on = ()
    kept_refusals = ()

    def __init__(self, name: str, after_paths: bool):
        self.name, self.after_paths = name, after_paths

    def run(self, request: Request, declined: dict):
        steps = request.steps
        if steps is None:
            raise CannotProceed("no stepped form")
        if not request.merged_states:
            raise CannotProceed("merged states not asked for")
        if self.after_paths:
            plain = declined.get("paths")
            if plain is None or plain.retry != "merged":
                raise CannotProceed("the plain enumeration did not give way")
            return _merged(request)
        self._check_size(request)
        return _merged(request)

    def _check_size(self, request: Request) -> None:
        """Decline when the plain enumeration fits; refuse what merged states cannot do."""
        from ..engine.exact import estimate_paths

        steps, k, name = merged_form(request), request.k, request.name
        if k > MERGED_MAX_K:
            raise TooLarge(f"{name} at k = {k}: exact enumeration by merged states takes at "
                           f"most {MERGED_MAX_K:,} drafts: use --backend numpy (float64 "
                           "estimates)", estimate=k, budget=MERGED_MAX_K)
        budget = merged_budget(request)
        plain_paths = PLAIN_PATHS if request.plain_paths is None else request.plain_paths
        if steps.plain_paths is not None:
            plain_paths = min(plain_paths, steps.plain_paths)
        timing: list = []
        try:                     # sized with care near the refusal and the seconds budget
            estimate = estimate_paths(request.run, request.p, request.q, k, timing=timing,
                                      max_paths=budget if steps.paths_budget else None,
                                      max_seconds=request.max_seconds)
        except TooLarge as refusal:  # too deep to probe (large k): merged states may still do
            estimate, probe_refusal = None, refusal
        if steps.paths_budget and budget is not None and (estimate is None or
                                                          estimate > budget):
            if estimate is None:  # the probe's own refusal names the size that stopped it
                raise probe_refusal
            raise TooLarge(f"{name} at k = {k}: about {estimate:,} paths, over the budget of "
                           f"{budget:,} (merged states, whose number is not bounded in "
                           "advance): use --backend numpy, or --max-paths N to insist",
                           estimate=estimate, budget=budget)
        if estimate is not None and estimate <= plain_paths:
            seconds = estimate * timing[0]
            if request.max_seconds is None or seconds <= request.max_seconds:
                raise CannotProceed(f"the plain enumeration fits: about {estimate:,} paths")


def merged_seconds(request: Request) -> float | None:
    """The seconds budget of a run by merged states: the path enumeration's
    :data:`~exactspec.engine.path_estimate.MAX_SECONDS`, or the request's ``max_seconds``
    where that is larger (a smaller one says when the plain walk gives way, as ``compare``'s
    does, and merged states still prove below it); none when the caller insists (a
    ``max_paths`` other than the default, and no ``max_seconds``)."""
    from ..engine.exact import DEFAULT_MAX_PATHS
    from ..engine.path_estimate import MAX_SECONDS

    if request.max_seconds is None and request.max_paths != DEFAULT_MAX_PATHS:
        return None
    return max(MAX_SECONDS, request.max_seconds or 0.0)


def _merged(request: Request):
    from ..engine.merged import enumerate_merged

    enumeration = enumerate_merged(merged_form(request), request.p, request.q, request.k,
                                   max_states=request.max_paths,
                                   max_seconds=merged_seconds(request))
    if enumeration.total != 1:
        raise AssertionError(f"internal: merged weights sum to {enumeration.total}, not 1")
    return enumeration


MERGED_STATES = MergedStates("merged-states", after_paths=False)
MERGED_AFTER_PATHS = MergedStates("merged-states-after-paths", after_paths=True)
