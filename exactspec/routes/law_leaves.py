"""Route: law leaves, a resample the rule returns as drawn one leaf, not one path per token.

A rule written against the sampler ``s`` is run by the exact walk with ``s.draw(dist)`` and
``s.pick(dist, u)`` at a fresh uniform answered by an opaque law token
(:mod:`exactspec.engine.law_leaves`): a run that hands it back ends in one leaf of weight times
that law, so the one-draft rule costs about ``2 V`` leaves of ``O(1)`` instead of ``V**2``
paths.  Any other use of the token is a decline (the plain walk is the route).

Declines: a PyTorch rule (its own routes vectorise its draft), a float run (``arith``), a
request that lists its paths (a certificate), rows that are not plain rationals, and any use
of a law token or of the uniform that picked one.
"""

from __future__ import annotations

from ..core.errors import TooLarge
from ..core.signals import CannotProceed
from .request import Request
from .stand_ins import stand_in_run

__all__ = ["LAW_LEAVES", "LawLeaves"]


class LawLeaves:
    """The walk with law leaves."""

    name = "law-leaves"
    declines_on = (TooLarge,)   # over its budget: the plain walk refuses with its own
    kept_refusals = ()         # estimate, never smaller (a law leaf stands for paths)

    def run(self, request: Request, declined: dict):
        from ..engine.law_leaves import enumerate_law_leaves

        run = stand_in_run(request)
        try:
            return enumerate_law_leaves(run, request.p, request.q, request.k,
                                        grid=request.grid, max_paths=request.max_paths,
                                        progress=request.progress, watch=request.user,
                                        max_seconds=request.max_seconds)
        except TypeError as err:          # a law of irrational numbers on a grid: the walk
            if request.grid is None:      # words it (or declines) as it always has
                raise
            raise CannotProceed(f"thresholds that are not rational on a grid ({err})") \
                from None


LAW_LEAVES = LawLeaves()
