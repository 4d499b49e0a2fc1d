"""How a rule is enumerated: one request, routes tried in a declared order, one planner.

- :mod:`.request`: the :class:`Request` every route takes and the :class:`Answer` it gives;
- :mod:`.planner`: :func:`plan` (the one place a route is chosen), :func:`plan_pair`;
- one module per route: :mod:`.tensor_axis` (a PyTorch rule's draft as a tensor axis),
  :mod:`.merged` (merged states of a stepped method), :mod:`.law_leaves` (a resample
  returned as drawn one leaf), :mod:`.paths` (the path enumeration, the reference semantics);
- :mod:`.forked`: a route run in a forked process beside this one (long rows).
"""

from .planner import ONE_POSITION, plan, plan_pair, route_names
from .request import Answer, Request

__all__ = ["Answer", "Request", "ONE_POSITION", "plan", "plan_pair", "route_names"]
