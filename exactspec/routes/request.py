"""What a route is asked for and what it answers: one contract for every enumeration route.

A :class:`Request` names the rule (its path form, and the capabilities it declares: a PyTorch
rule's tensor form, a stepped form for merged states), the pair, ``k``, the arithmetic, the
uniform grid, the order of long float sums and the budget.  A route answers with an
:class:`Answer`: the exact enumeration the verdict reads, the name of the route that computed
it and why the routes tried before it declined.  A route that cannot follow the request raises
:class:`~exactspec.core.signals.CannotProceed`, its one way out, caught only by the planner
(:mod:`exactspec.routes.planner`).

Examples
--------
>>> from exactspec.core.dist import Dist
>>> r = Request(run=lambda s, p, q, k: s.draft(q), name="draft", p=Dist.parse("1/2,1/2"),
...             q=Dist.parse("1/3,2/3"))
>>> r.rounded, r.float_rows() == (r.p, r.q)
(False, True)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

from ..core.dist import Dist
from ..engine.exact import DEFAULT_MAX_PATHS

__all__ = ["Request", "Answer"]


@dataclass(frozen=True)
class Request:
    """One enumeration asked of the planner.

    Attributes
    ----------
    run : callable
        The rule's path form, ``run(s, p, q, k) -> token`` (the reference semantics).
    name : str
        The rule's name, for messages.
    p, q : Dist
        The exact target and draft.
    k : int
        The number of drafts.
    arith : str, optional
        The float format the rule's arithmetic runs in (``None``: exact arithmetic).
    grid : int, optional
        The uniforms' grid (``None``: ideal uniforms, or the format's generator under ``arith``).
    sum_order : str, optional
        Under ``arith``, the declared order of long float sums.
    elementwise : str
        Under ``arith``, where ``exp`` and ``log`` come from (``"correct"``, ``"numpy"``,
        ``"torch"``).
    rows : tuple, optional
        The rows the float run receives when they are not ``p`` and ``q`` rounded into the
        format (a float softmax of logits); ``None`` otherwise.
    keep_paths : bool
        Keep every path (a certificate, a tree of paths): only the path routes list paths.
    on_path : callable, optional
        Called with each path as it is enumerated (a certificate streamed to a file): only
        the path routes list paths.
    max_paths, max_seconds, progress
        The budget and the progress line of the path enumeration.
    user : bool
        The rule is user code: its hidden state is fingerprinted around the run.
    tensor_rule : object, optional
        Declared capability: the PyTorch rule, whose draft can be a tensor axis.
    steps : object, optional
        Declared capability: the stepped form, which merged states run.
    sorted_sums : callable, optional
        Declared capability: the method's exact law by sums over one sorted order
        (:mod:`exactspec.routes.sorted_sums`).
    merged_states : bool
        Merged states may answer (:func:`exactspec.bounds.compare.exact_verification`).
    plain_paths, max_merged_paths
        The merged-state route's sizing (see :mod:`exactspec.routes.merged`).
    """

    run: Callable
    name: str
    p: Dist
    q: Dist
    k: int = 1
    arith: str | None = None
    grid: int | None = None
    sum_order: str | None = None
    elementwise: str = "correct"
    rows: tuple | None = None
    keep_paths: bool = False
    on_path: Callable | None = field(default=None, compare=False)
    max_paths: int | None = DEFAULT_MAX_PATHS
    max_seconds: float | None = None
    progress: bool | None = None
    user: bool = False
    tensor_rule: Any = field(default=None, compare=False)
    steps: Any = field(default=None, compare=False)
    sorted_sums: Callable | None = field(default=None, compare=False)
    merged_states: bool = False
    plain_paths: int | None = None
    max_merged_paths: int | None = None

    @property
    def rounded(self) -> bool:
        """The rule's arithmetic runs in a float format."""
        return self.arith is not None

    def float_rows(self) -> tuple:
        """The rows the rule computes with: ``p`` and ``q`` rounded into the format (or the
        float softmax given as :attr:`rows`); the exact rows without ``arith``."""
        if self.arith is None:
            return self.p, self.q
        if self.rows is not None:
            return self.rows
        from ..engine.float_sampler import float_dist

        return float_dist(self.p, self.arith), float_dist(self.q, self.arith)

    def sampler_factory(self) -> Callable:
        """The path enumeration's sampler for this arithmetic and grid."""
        if self.arith is None:
            from ..engine.exact import ExactSampler

            return lambda: ExactSampler(grid=self.grid)
        from ..engine.float_sampler import FloatSampler

        return lambda: FloatSampler(self.arith, self.grid, self.elementwise, self.sum_order)

    def but(self, **changes) -> "Request":
        """The same request with ``changes``."""
        return replace(self, **changes)


@dataclass
class Answer:
    """A route's answer: the exact ``enumeration``, the ``route`` that computed it, and
    ``declined``, the routes tried before it with the reason each gave."""

    enumeration: Any
    route: str
    declined: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"route": self.route, "declined": dict(self.declined)}
