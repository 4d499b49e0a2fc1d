"""The optimum as an exact max flow over draft multisets, and the transport flow behind it.

The network is source -> draft multiset ``X`` (capacity ``P(X)``) -> each token in ``X`` ->
sink (capacity ``p(t)``), with ``Fraction`` capacities and a flow kept exact (checked); it
gives the optimum of any draft law of :func:`~exactspec.optimum.multisets.draft_multisets`
and decides whether an accepted-token law is realisable.

>>> alpha_star_max_flow(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 2)
Fraction(21, 25)
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..core.dist import Dist
from .closed_form import law_pair
from .multisets import MAX_MULTISETS, draft_multisets

__all__ = ["alpha_star_max_flow", "max_flow_value", "realisable_by_flow", "transport_flow"]

def transport_flow(labels: tuple, caps, multisets, flow_func=None):
    """Exact max flow source -> multiset (capacity P(X)) -> token in X -> sink (``caps[t]``).

    Returns ``(value, residual)``: the flow value as a ``Fraction`` and networkx's residual
    network, whose edge ``("drafts", X) -> ("token", t)`` carries the flow routed from ``X``
    to ``t`` (``residual[u][v]["flow"]``, exact).
    """
    import networkx as nx
    from networkx.algorithms.flow import shortest_augmenting_path

    flow_func = shortest_augmenting_path if flow_func is None else flow_func
    graph = nx.DiGraph()
    source, sink = ("source",), ("sink",)
    graph.add_node(source)
    graph.add_node(sink)
    position = {t: i for i, t in enumerate(labels)}
    for drafts, weight in multisets:
        node = ("drafts", drafts)
        graph.add_edge(source, node, capacity=weight)
        for t in sorted(set(drafts), key=position.__getitem__):   # token order, every process
            # never binding: at most P(X) enters the multiset's node
            graph.add_edge(node, ("token", t), capacity=weight)
    for t, cap in zip(labels, caps):
        if cap != 0:
            graph.add_edge(("token", t), sink, capacity=cap)
    residual = flow_func(graph, source, sink)
    value = residual.graph["flow_value"]
    # exactness invariant: the flow algorithm must not have gone through floats
    assert isinstance(value, (int, Fraction)) and not isinstance(value, bool), type(value)
    assert all(isinstance(d["flow"], (int, Fraction)) for _, _, d in residual.edges(data=True))
    return Fraction(value), residual


def max_flow_value(labels: tuple, caps, multisets, flow_func=None) -> Fraction:
    """The value of :func:`transport_flow`."""
    return transport_flow(labels, caps, multisets, flow_func)[0]


def alpha_star_max_flow(p: Any, q: Any, k: int, draft_law: str = "iid", *,
                        flow_func=None, budget: int = MAX_MULTISETS) -> Fraction:
    """The optimal acceptance for a draft law, as an exact max flow over draft multisets.

    The network is source -> draft multiset ``X`` (capacity ``P(X)``) -> each token in ``X``
    -> sink (capacity ``p(t)``); its value is the largest ``P(Y in X)`` of a lossless verifier
    for that draft law (``alpha*`` for ``"iid"``).  Capacities are ``Fraction`` values and the flow
    stays exact (checked).

    Parameters
    ----------
    p, q : Dist
        Target and draft laws.
    k : int
        The number of drafts.
    draft_law : {"iid", "wor", "hub"}
        See :func:`draft_multisets`.
    flow_func : callable, optional
        A networkx max-flow algorithm returning a residual network; default
        ``shortest_augmenting_path`` (the fastest here on multiset networks).
        Every networkx algorithm (``edmonds_karp``, ``shortest_augmenting_path``,
        ``preflow_push``, ``dinitz``, ``boykov_kolmogorov``) stays exact with ``Fraction``
        capacities; ``edmonds_karp`` is far slower on networks of thousands of multisets.
    budget : int
        Refuse with :class:`TooLarge` above this many draft multisets.

    Examples
    --------
    >>> alpha_star_max_flow(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 2)
    Fraction(21, 25)
    """
    p, q = law_pair(p, q)
    multisets = draft_multisets(q, k, draft_law, budget=budget)
    return max_flow_value(p.labels, p.probs, multisets, flow_func)


def realisable_by_flow(a: Dist, q: Dist, k: int, flow_func=None,
                        budget: int = MAX_MULTISETS) -> bool:
    """Whether ``a`` is a realisable accepted-token law for ``k`` i.i.d. drafts."""
    total = sum(a.probs, Fraction(0))
    value = max_flow_value(a.labels, a.probs, draft_multisets(q, k, "iid", budget=budget), flow_func)
    return value == total
