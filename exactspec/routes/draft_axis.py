"""Route: a rule written with the sampler ``s``, its draft an axis.

The rule's body runs once per path of its other random choices with ``s.draft(q)`` standing
for every draft token at once (:mod:`exactspec.engine.draft_axis`): the values read at the
draft hold one value per token, a condition on them splits the tokens, a coin or a uniform
compared with them branches with a weight per token, and a resample returned as drawn is a
law leaf.  The one-draft rule runs its body about four times at any vocabulary size.

Declines: a PyTorch rule (its own axis routes), a float run (``arith``), a request that lists
its paths (a certificate), rows that are not plain rationals, a rule that never drafts, and
anything the axis does not follow (a second draft, a value read at the draft hashed, turned
into a number or text, built into a law; a refusal: the routes after it word it with the
user's line).
"""

from __future__ import annotations

from ..core.errors import ExactspecError
from ..core.signals import CannotProceed
from .request import Request
from .stand_ins import stand_in_run

__all__ = ["DRAFT_AXIS", "DraftAxis"]


class DraftAxis:
    """The draft of a rule written with ``s`` as an axis."""

    name = "draft-axis"
    declines_on = (ExactspecError,)   # the routes after it word a refusal with the user's line
    kept_refusals = ()

    def run(self, request: Request, declined: dict):
        from ..engine.draft_axis import enumerate_draft_axis

        run = stand_in_run(request)
        try:
            return enumerate_draft_axis(run, request.p, request.q, request.k,
                                        grid=request.grid, max_paths=request.max_paths,
                                        watch=request.user, max_seconds=request.max_seconds)
        except (ArithmeticError, AttributeError, KeyError, LookupError, TypeError,
                ValueError) as err:       # the rule's own error: the walk raises it on its path
            raise CannotProceed(f"the rule raised {type(err).__name__} on the draft axis") \
                from None


DRAFT_AXIS = DraftAxis()
