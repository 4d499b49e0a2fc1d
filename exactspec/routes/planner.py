"""The planner: the one place that chooses how a rule is enumerated.

Routes are tried in a declared order (:data:`ONE_POSITION`); each either answers the
:class:`~exactspec.routes.request.Request` with an exact enumeration or raises
:class:`~exactspec.core.signals.CannotProceed`, which only the planner catches.  It records
which route answered and why each one before it declined (:class:`~.request.Answer`), and
fingerprints a user's rule around the run (hidden state refused,
:mod:`exactspec.engine.hidden_state`).  A route also declines on the refusals it names in
``declines_on`` (the tensor-axis routes on any: the path route words a refusal with the
user's line; law leaves on being over the budget: the plain walk refuses with its own
estimate), except those it keeps (``kept_refusals``).  The same loop serves every table of routes: a user's multi-position
rule has its own (:data:`exactspec.sequences.routes.SEQUENCE_ROUTES`), answered by reports.

The order, fastest first, the reference last:

1. ``tensor-axis`` (:mod:`.tensor_axis`): a PyTorch rule's draft as a tensor axis, splits as
   values;
2. ``tensor-axis-branching``: the same with every split a branch point, when the first asks;
3. ``sorted-sums`` (:mod:`exactspec.routes.sorted_sums`): a method's exact law by sums over one
   sorted order, where its plain paths are too many (RRS without replacement at ``k = 2``);
4. ``merged-states`` (:mod:`exactspec.routes.merged`): a stepped method whose plain paths are too many;
5. ``draft-axis`` (:mod:`exactspec.routes.draft_axis`): a rule written with ``s``, its draft an
   axis (the body run once per path of its other choices);
6. ``law-leaves`` (:mod:`exactspec.routes.law_leaves`): the walk with a resample returned as drawn one leaf;
7. ``paths`` (:mod:`.paths`): the path enumeration, the reference semantics;
8. ``merged-states-after-paths``: merged states where the walk went over its budget.

The conformance suite (``tests/test_routes.py``) runs every route of :data:`ONE_POSITION` on
the same requests and holds each answer to the path enumeration's.

Examples
--------
>>> from exactspec.core.dist import Dist
>>> from exactspec.methods import get_method
>>> m = get_method("sps")
>>> answer = plan(Request(run=m.run, name="sps", p=Dist.parse("1/2,1/2"),
...                       q=Dist.parse("1/3,2/3")))
>>> answer.route, answer.enumeration.acceptance
('draft-axis', Fraction(5, 6))
>>> sorted(answer.declined)
['merged-states', 'sorted-sums', 'tensor-axis', 'tensor-axis-branching']
"""

from __future__ import annotations

from ..core.errors import ExactspecError, InvalidInput, TooLarge
from ..core.signals import CannotProceed, user_calls
from .draft_axis import DRAFT_AXIS
from .law_leaves import LAW_LEAVES
from .merged import MERGED_AFTER_PATHS, MERGED_STATES
from .paths import PATHS
from .request import Answer, Request
from .sorted_sums import SORTED_SUMS
from .tensor_axis import SPLITS_AS_BRANCHES, SPLITS_AS_VALUES

__all__ = ["ONE_POSITION", "TENSOR_AXIS", "plan", "plan_pair", "route_names"]

#: The one-position routes, in the order the planner tries them.
ONE_POSITION = (SPLITS_AS_VALUES, SPLITS_AS_BRANCHES, SORTED_SUMS, MERGED_STATES, DRAFT_AXIS,
                LAW_LEAVES, PATHS, MERGED_AFTER_PATHS)

#: The tensor-axis routes, which also give exact arithmetic with ideal uniforms and on a
#: grid from one run (:func:`plan_pair`).
TENSOR_AXIS = PAIRED = (SPLITS_AS_VALUES, SPLITS_AS_BRANCHES)


def route_names(routes=ONE_POSITION) -> list:
    """The names of ``routes``, in order."""
    return [r.name for r in routes]


def plan(request: Request, routes=ONE_POSITION, *, optional: bool = False) -> Answer | None:
    """The first answer of ``routes`` to ``request``, with why the routes before declined.

    ``optional``: ``None`` when every route declines (else a one-line
    :class:`~exactspec.core.errors.InvalidInput` naming each reason).
    """
    return _first_answer(request, routes, lambda route, declined: route.run(request, declined),
                         optional)


def plan_pair(request: Request, on_grid: int) -> tuple | None:
    """Exact arithmetic with ideal uniforms and on the grid of ``on_grid`` points from one
    run of a rule's body (:data:`PAIRED`): two :class:`~.request.Answer`\\ s, ``(ideal,
    on_grid)``, or ``None`` where no paired route answers (the caller plans the two runs)."""
    answer = _first_answer(request, PAIRED,
                           lambda route, declined: route.run_pair(request, declined, on_grid),
                           True)
    if answer is None:
        return None
    ideal, grid = answer.enumeration
    return (Answer(ideal, answer.route, answer.declined),
            Answer(grid, answer.route, answer.declined))


def _first_answer(request: Request, routes, attempt, optional: bool):
    before = _fingerprint(request)
    inputs = _inputs(request)
    declined: dict = {}
    try:
        for route in routes:
            calls = user_calls()
            try:
                enumeration = attempt(route, declined)
            except CannotProceed as why:
                declined[route.name] = why
                if user_calls() != calls:
                    _ran_unchanged(request, inputs, before)
                continue
            except ExactspecError as refusal:
                if not isinstance(refusal, route.declines_on) or \
                        isinstance(refusal, route.kept_refusals):
                    _say_declined(refusal, declined)
                    raise
                declined[route.name] = CannotProceed(f"refused here: {refusal}")
                if user_calls() != calls:
                    _ran_unchanged(request, inputs, before)
                continue
            _check_unchanged(request, before)
            return Answer(enumeration, route.name,
                          {name: why.why for name, why in declined.items()})
    except InvalidInput:
        _check_unchanged(request, before)   # a replay that went another way: name the state
        raise
    if optional:
        return None
    reasons = "; ".join(f"{name}: {why.why}" for name, why in declined.items())
    raise InvalidInput(f"{request.name}: no exact route takes this run ({reasons})")


def _say_declined(refusal: ExactspecError, declined: dict) -> None:
    """A later route's refusal for size, followed by why the faster routes before it
    declined (a kernel engineer learns what kept the run off them)."""
    if declined and isinstance(refusal, TooLarge) and refusal.args and \
            isinstance(refusal.args[0], str) and "declined:" not in refusal.args[0]:
        reasons = "; ".join(f"{name}: {why.why}" for name, why in declined.items())
        refusal.args = (f"{refusal.args[0]} (declined: {reasons})",) + refusal.args[1:]


def _inputs(request: Request):
    """A user's rule's ``p`` and ``q`` as they were before the first route ran."""
    if not request.user:
        return None
    from ..engine.exact_sampler import input_snapshot

    return input_snapshot(request.p), input_snapshot(request.q)


def _ran_unchanged(request: Request, inputs, before) -> None:
    """A route that declined after running the rule: a rule that changed ``p`` or ``q``, or
    kept state (a value of that route held in a global), is refused here, before the next
    route runs on what it changed."""
    if inputs is not None:
        from ..engine.exact_sampler import check_unchanged

        check_unchanged(inputs, request.p, request.q)
    _check_unchanged(request, before)


def _fingerprint(request: Request):
    if not request.user:
        return None
    from ..engine.hidden_state import state_fingerprint

    return state_fingerprint(_rule_object(request))


def _check_unchanged(request: Request, before) -> None:
    if request.user:
        from ..engine.hidden_state import check_unchanged

        check_unchanged(_rule_object(request), before, request.name)


def _rule_object(request: Request):
    """What holds the rule's state: the PyTorch rule, or the path form."""
    return request.tensor_rule if request.tensor_rule is not None else request.run
