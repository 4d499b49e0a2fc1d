"""Route: a one-position PyTorch rule with its draft as a tensor axis.

The rule's body runs once per path of its other random choices, the draft a branch axis of
every tensor (:mod:`exactspec.torch_layer.branched`; under ``arith`` its float run,
:mod:`exactspec.torch_layer.branched_float`).  Two routes: :data:`SPLITS_AS_VALUES` keeps the
acceptance test ``u < c[draft]`` a value that ``torch.where`` selects with; where a token so
selected is used in a computation it asks for :data:`SPLITS_AS_BRANCHES`, which runs the body
again with every split a branch point of the engine.

Declines: a rule that is not a PyTorch rule, ``k != 1``, a request that keeps paths (only the
path routes list paths), rows given as a float softmax (logits), library ``exp``/``log``
(``elementwise`` other than ``"correct"``).  Anything the vectorised run meets that it does
not track, and any refusal it meets (which the path route words with the user's line), is a
decline.
"""

from __future__ import annotations

from ..core.errors import ExactspecError
from ..core.signals import CannotProceed
from .request import Request

__all__ = ["SPLITS_AS_VALUES", "SPLITS_AS_BRANCHES", "TensorAxis", "declined_for"]


def declined_for(request: Request) -> str | None:
    """Why the tensor-axis routes do not take ``request`` (``None``: they may)."""
    if request.tensor_rule is None:
        return "not a PyTorch rule"
    if request.k != 1:
        return f"k = {request.k}"
    if request.keep_paths or request.on_path is not None:
        return "the paths are listed (a certificate)"
    if request.rows is not None:
        return "the float rows are a softmax of logits"
    if request.elementwise != "correct":
        return f"exp and log from {request.elementwise}"
    return None


class TensorAxis:
    """The draft as a tensor axis, with splits as values (``split_values``) or as branch
    points."""

    declines_on = (ExactspecError,)   # the path route words a refusal with the user's line
    kept_refusals = ()

    def __init__(self, name: str, split_values: bool):
        self.name, self.split_values = name, split_values

    def run(self, request: Request, declined: dict):
        rule = self._rule(request, declined)
        from ..engine.watch import watched

        with watched(rule.function):
            return rule.vectorised(request.p, request.q, request.grid, request.arith,
                                   request.sum_order, split_values=self.split_values)

    def run_pair(self, request: Request, declined: dict, on_grid: int) -> tuple:
        """Exact arithmetic with ideal uniforms and on the grid of ``on_grid`` points, from
        one run of the body (:class:`~exactspec.torch_layer.branched.PairSampler`)."""
        if request.arith is not None:
            raise CannotProceed("a float run")
        rule = self._rule(request, declined)
        from ..engine.watch import watched

        with watched(rule.function):
            return rule.vectorised_pair(request.p, request.q, on_grid,
                                        split_values=self.split_values)

    def _rule(self, request: Request, declined: dict):
        """The PyTorch rule of ``request`` where this route takes it (else a decline)."""
        why = declined_for(request)
        if why is not None:
            raise CannotProceed(why)
        if not self.split_values:
            asked = declined.get(SPLITS_AS_VALUES.name)
            if asked is None or asked.retry != "splits":
                raise CannotProceed("runs only when the splits as values ask for it")
        return request.tensor_rule


SPLITS_AS_VALUES = TensorAxis("tensor-axis", True)
SPLITS_AS_BRANCHES = TensorAxis("tensor-axis-branching", False)
