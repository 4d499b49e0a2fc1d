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

from fractions import Fraction

from ..core.errors import ExactspecError
from ..core.signals import CannotProceed
from .paths import naming_user_lines
from .request import Request

__all__ = ["DRAFT_AXIS", "DraftAxis"]


class DraftAxis:
    """The draft of a rule written with ``s`` as an axis."""

    name = "draft-axis"
    declines_on = (ExactspecError,)   # the routes after it word a refusal with the user's line
    kept_refusals = ()

    def run(self, request: Request, declined: dict):
        if request.tensor_rule is not None:
            raise CannotProceed("a PyTorch rule")
        if request.arith is not None:
            raise CannotProceed("a float run")
        if request.keep_paths or request.on_path is not None:
            raise CannotProceed("the paths are listed (a certificate)")
        if not all(type(v) is Fraction or type(v) is int
                   for row in (request.p, request.q) for v in row.probs):
            raise CannotProceed("rows that are not plain rationals")
        from ..engine.draft_axis import enumerate_draft_axis
        from ..engine.identity_reads import identity_reads

        why = identity_reads(request.run) if request.user else None
        if why is not None:
            raise CannotProceed(f"the rule {why}, which no stand-in value can answer for")

        run = naming_user_lines(request.run, request.name) if request.user else request.run
        try:
            return enumerate_draft_axis(run, request.p, request.q, request.k,
                                        grid=request.grid, max_paths=request.max_paths,
                                        watch=request.user, max_seconds=request.max_seconds)
        except (ArithmeticError, AttributeError, KeyError, LookupError, TypeError,
                ValueError) as err:       # the rule's own error: the walk raises it on its path
            raise CannotProceed(f"the rule raised {type(err).__name__} on the draft axis") \
                from None


DRAFT_AXIS = DraftAxis()
