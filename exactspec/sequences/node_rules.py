"""The node rules of a token tree: ``rule(s, p, q, children) -> y`` at one node, with the draft
law of the children it is lossless for (:class:`NodeRule`, :func:`node_rule`).

``rrs`` and ``rrs-wor`` run the registered methods on the node's children, ``optimal`` is the
exact optimal transport for the node's draft law (a max flow over draft multisets), and any
method registered in :data:`exactspec.methods.METHODS` plugs in the same way, replaying the
children as its drafts (:func:`rule_from_method`).

>>> node_rule("optimal", "wor").draft_law
'wor'
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache
from typing import Callable

from ..core.dist import Dist, residual
from ..core.errors import InvalidInput
from ..optimum.draft_laws import draft_law as _draft_law

__all__ = ["NODE_RULES", "NodeRule", "node_rule", "optimal_rule", "rule_from_method"]


@dataclass(frozen=True)
class NodeRule:
    """A per-node verification rule ``run(s, p, q, children) -> token`` and the draft law of
    the children it is lossless for (``"iid"``, ``"wor"``, ``"hub"``)."""

    name: str
    run: Callable
    draft_law: str = "iid"
    #: the name :func:`node_rule` built it from (``rrs``, ``optimal``, a registered method),
    #: ``None`` for a rule given as a function: a tree of a named rule is one of exactspec's
    #: own verifiers, which a certificate's replay rebuilds by name
    registered: str | None = None


class _ReplayedDrafts:
    """A sampler whose drafts are a node's children, already drawn; everything else goes to
    the sampler underneath.  Lets a method ``f(s, p, q, k)`` verify a tree node."""

    def __init__(self, s, children):
        self._s = s
        self._children = tuple(children)
        self._next = 0

    def draft(self, q, what: str = "draft"):
        if self._next >= len(self._children):
            raise InvalidInput(f"the node rule drew more drafts than the node's "
                               f"{len(self._children)} children")
        x = self._children[self._next]
        self._next += 1
        return x

    def drafts(self, q, k: int, replace: bool = True) -> tuple:
        return tuple(self.draft(q) for _ in range(k))

    def __getattr__(self, name):
        return getattr(self._s, name)


def rule_from_method(method) -> NodeRule:
    """A node rule from a verification method (a registered name, a
    :class:`~exactspec.methods.Method` or ``f(s, p, q, k)``): the method runs on the node's
    ``p``, ``q`` and ``k = number of children``, and its drafts are the children."""
    from ..methods import get_method

    m = get_method(method)

    def run(s, p, q, children, _run=m.run):
        return _run(_ReplayedDrafts(s, children), p, q, len(children))

    return NodeRule(m.name, run, m.draft_law)


@dataclass(frozen=True)
class _Plan:
    routes: dict
    residual: Dist | None
    alpha: Fraction


@lru_cache(maxsize=512)
def _optimal_plan(p: Dist, q: Dist, k: int, law: str) -> _Plan:
    """The exact optimal transport for ``k`` drafts under ``law``: for each draft multiset
    ``X`` the law of the routed token (accept ``t`` in ``X``) or the residual."""
    from ..optimum.alpha_star import draft_multisets, transport_flow

    multisets = list(draft_multisets(q, k, law))
    _, flows = transport_flow(p.labels, p.probs, multisets)
    accepted = {t: Fraction(0) for t in p.labels}
    routes = {}
    for drafts, weight in multisets:
        node = ("drafts", drafts)
        options, left = [], weight
        for t in sorted(set(drafts), key=q.index):
            f = Fraction(flows[node][("token", t)]["flow"])
            if f:
                options.append((("accept", t), f / weight))
                accepted[t] += f
                left -= f
        if left:
            options.append((("residual",), left / weight))
        routes[drafts] = Dist([w for _, w in options], [lab for lab, _ in options],
                              check=False)
    alpha = sum(accepted.values(), Fraction(0))
    rest = None
    if alpha != 1:
        rest = Dist([(p[t] - accepted[t]) / (1 - alpha) for t in p.labels], p.labels,
                    check=False)
    return _Plan(routes, rest, alpha)


def optimal_rule(law: str = "iid") -> NodeRule:
    """The exact optimal node rule for drafts under ``law``: given the multiset ``X`` of the
    children, accept ``t`` in ``X`` with the max-flow's conditional probability, else draw
    from ``(p - a) / (1 - alpha)``, ``a`` the flow into each token.  Its acceptance is the
    draft law's optimum (``alpha*`` for i.i.d. drafts)."""
    law = _draft_law(law).name

    def run(s, p, q, children):
        plan = _optimal_plan(p, q, len(children), law)
        drafts = tuple(sorted(children, key=q.index))
        choice = s.draw(plan.routes[drafts], "route")
        if choice[0] == "accept":
            return s.accept(choice[1])
        return s.draw(plan.residual, "residual")

    return NodeRule("optimal" if law == "iid" else f"optimal-{law}", run, law)


def _rrs_rule() -> NodeRule:
    from ..methods.rrs import rrs

    return NodeRule("rrs", rule_from_method(rrs).run, "iid")


def _rrs_wor_rule() -> NodeRule:
    from ..methods.rrs_wor import rrs_wor

    return NodeRule("rrs-wor", rule_from_method(rrs_wor).run, "wor")


#: The built-in node rules by name (``optimal`` adapts to the tree's draft law).
NODE_RULES: dict[str, Callable[[], NodeRule]] = {
    "rrs": _rrs_rule,
    "rrs-wor": _rrs_wor_rule,
    "optimal": lambda: optimal_rule("iid"),
}


def node_rule(spec, drafts: str | None = None) -> NodeRule:
    """The node rule named ``spec`` (``rrs``, ``rrs-wor``, ``optimal``, or any method in
    :data:`exactspec.methods.METHODS`, e.g. ``key`` once registered), a :class:`NodeRule`, or
    a function ``f(s, p, q, children)``; ``drafts`` overrides the children's draft law
    (``optimal`` then uses the optimum of that law; other rules run as given, which may be
    lossy: the engine will say).

    >>> node_rule("rrs-wor").draft_law, node_rule("optimal", "wor").name
    ('wor', 'optimal-wor')
    """
    if isinstance(spec, NodeRule):
        rule = spec
    elif callable(spec) and not isinstance(spec, str):
        rule = NodeRule(getattr(spec, "__name__", "rule"), spec, "iid")
    elif isinstance(spec, str) and spec in NODE_RULES:
        if spec == "optimal" and drafts is not None:
            return replace(optimal_rule(drafts), registered="optimal")
        rule = replace(NODE_RULES[spec](), registered=spec)
    elif isinstance(spec, str):
        from ..methods import METHODS

        if spec not in METHODS:
            known = ", ".join(sorted(set(NODE_RULES) | set(METHODS)))
            raise InvalidInput(f"rule={spec!r}: choose one of {known}")
        rule = replace(rule_from_method(METHODS[spec]), registered=spec)
    else:
        raise InvalidInput(f"rule={spec!r}: give a rule name such as rrs, or f(s, p, q, "
                           "children)")
    if drafts is not None:
        law = _draft_law(drafts).name
        if law != rule.draft_law:
            if rule.draft_law == "wor":
                raise InvalidInput(f"rule={rule.name!r} needs distinct children (drafts without "
                                   f"replacement); drafts={drafts!r} can repeat a child")
            rule = replace(rule, draft_law=law)
    return rule
