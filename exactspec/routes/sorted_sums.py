"""Route: a method's exact law by sums over one sorted order, where its paths are too many.

A method may declare :attr:`~exactspec.methods.base.Method.sorted_sums`: a function
``sums(p, q, k, *, max_seconds) -> Enumeration`` that computes its exact law, ``P(Y in X)``, explicit
acceptance and number of paths from its structure, in ``O(|V| log |V|)`` exact operations,
raising :class:`~exactspec.core.signals.CannotProceed` where that structure does not hold
(RRS without replacement: ``k = 2`` only, :mod:`exactspec.methods.rrs_wor_sums`), and
:class:`~exactspec.core.errors.TooLarge` where its work is projected past ``max_seconds``
(merged states' budget, :func:`~.merged.merged_seconds`: none where the caller insists).  It
answers only requests that allow counted paths, as merged states do
(:func:`exactspec.bounds.compare.exact_verification`, ``verify`` on the command line), and
declines where the plain enumeration, the reference, fits (the sums count its paths exactly:
at most :data:`~.merged.PLAIN_PATHS`, or the request's ``plain_paths``); it runs before merged
states, whose states it spares.
"""

from __future__ import annotations

from ..core.signals import CannotProceed
from .merged import PLAIN_PATHS, merged_seconds
from .request import Request

__all__ = ["SORTED_SUMS", "SortedSums"]


class SortedSums:
    """A method's declared sorted sums."""

    name = "sorted-sums"
    declines_on = ()
    kept_refusals = ()

    def run(self, request: Request, declined: dict):
        sums = request.sorted_sums
        if sums is None:
            raise CannotProceed("no sorted sums")
        if not request.merged_states:
            raise CannotProceed("counted paths not asked for")
        plain_paths = PLAIN_PATHS if request.plain_paths is None else request.plain_paths
        enumeration = sums(request.p, request.q, request.k,      # or CannotProceed
                           max_seconds=merged_seconds(request))
        if enumeration.paths <= plain_paths:     # the count is the plain enumeration's
            raise CannotProceed(f"the plain enumeration fits: {enumeration.paths:,} paths")
        if enumeration.total != 1:
            raise AssertionError(f"internal: {request.name}'s sums give {enumeration.total}, "
                                 "not 1")
        return enumeration


SORTED_SUMS = SortedSums()
