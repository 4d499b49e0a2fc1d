"""``optimal``: exact optimal transport from draft multisets to tokens; reaches ``alpha*``.

For a draft law with finitely many multisets, the largest ``P(Y in X)`` of a lossless verifier
is the value of the max flow on source -> multiset ``X`` (capacity ``P(X)``) -> each token in
``X`` -> sink (capacity ``p(t)``).  :func:`transport_plan` solves it once per
``(p, q, k, law)`` with networkx and ``Fraction`` capacities (exact), and reads off the
conditional law ``pi(y | X) = flow(X -> y) / P(X)`` and the accepted law
``a(y) = sum_X flow(X -> y)``.  The verifier draws the multiset ``X``, accepts with
probability ``sum_y pi(y | X)`` a token ``y ~ pi(. | X)``, and otherwise outputs
``Y ~ (p - a) / (1 - alpha)``.  Its law is ``a + (p - a) = p`` and its explicit acceptance is
the flow value; since the flow is maximum there is no augmenting path, so the residual never
lands on a token of ``X`` and ``P(Y in X)`` is the flow value too (the engine checks it).  Its
accepted law is one optimal law, not necessarily ``a*``.

The behaviour depends only on the multiset of drafts, so the exact engine draws the multiset
in one choice with its multinomial weight (:meth:`exactspec.optimum.draft_laws.DraftLaw.draw_multiset`).
Work grows with the number of multisets, ``C(m + k - 1, k)`` for ``m`` draftable tokens: above
:data:`MAX_OPTIMAL_MULTISETS` it is refused with :class:`~exactspec.core.errors.TooLarge`.

>>> from exactspec import Dist, verify
>>> p, q = Dist.parse("1/2,3/10,1/5", labels="abc"), Dist.parse("1/5,1/5,3/5", labels="abc")
>>> result = verify("optimal", p, q, 2)
>>> result.lossless, result.acceptance, result.explicit_acceptance
(True, Fraction(21, 25), Fraction(21, 25))
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from ..core.dist import Dist
from ..optimum.draft_laws import draft_law, is_exact_dist
from ..core.errors import NotExact, TooLarge
from .base import Method

__all__ = ["optimal", "optimal_method", "transport_plan", "TransportPlan",
           "MAX_OPTIMAL_MULTISETS", "METHOD"]

#: Largest number of draft multisets whose transport problem ``optimal`` solves exactly.
MAX_OPTIMAL_MULTISETS = 50_000


@dataclass(frozen=True)
class TransportPlan:
    """An exact optimal transport plan from draft multisets to tokens.

    Attributes
    ----------
    alpha : Fraction
        The flow value: the optimal acceptance of the draft law.
    accepted : Dist
        ``a(y) = P(Y = y, accepted)``, summing to ``alpha`` (not 1).
    conditional : dict
        ``multiset -> Dist`` of ``pi(. | X)`` normalised over the accepted part, and
    accept_probability : dict
        ``multiset -> sum_y pi(y | X)``.
    residual : Dist or None
        ``(p - a) / (1 - alpha)``; ``None`` when ``alpha = 1``.
    multisets : int
        The number of draft multisets.
    """

    law: str
    k: int
    alpha: Fraction
    accepted: Dist
    conditional: dict
    accept_probability: dict
    residual: Dist | None
    multisets: int


def _multiset_estimate(q: Dist, k: int, law: str) -> int:
    m = len(q.support)
    if law == "iid":
        return math.comb(m + k - 1, k)
    if law == "wor":
        return math.comb(m, k)
    return max(m - 1, 0)


def transport_plan(p: Dist, q: Dist, k: int, law: str = "iid", *,
                   budget: int = MAX_OPTIMAL_MULTISETS) -> TransportPlan:
    """Solve the transport problem of ``(p, q, k)`` under ``law`` exactly (cached).

    >>> plan = transport_plan(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 2)
    >>> plan.alpha, plan.multisets
    (Fraction(21, 25), 6)
    """
    for name, d in (("p", p), ("q", q)):
        if not is_exact_dist(d):
            raise NotExact(f"{name}: the optimal transport needs exact rational probabilities")
    dl = draft_law(law)
    dl.check(q, k)
    estimate = _multiset_estimate(q, k, dl.name)
    if estimate > budget:
        raise TooLarge(
            f"optimal: about {estimate:,} draft multisets ({dl.name}, k={k}, "
            f"{len(q.support)} draftable tokens) for an exact max flow, over the budget of "
            f"{budget:,}; compare against the closed-form optimum (exactspec optimal) or use "
            "rrs / kseq, which the engine proves at this size",
            estimate=estimate, budget=budget)
    return _plan(p, q, k, dl.name)


@lru_cache(maxsize=16)
def _plan(p: Dist, q: Dist, k: int, law: str) -> TransportPlan:
    from ..optimum.alpha_star import transport_flow

    multisets = list(draft_law(law).multisets(q, k, budget=MAX_OPTIMAL_MULTISETS * 10))
    alpha, flow = transport_flow(p.labels, p.probs, multisets)
    accepted = {t: Fraction(0) for t in p.labels}
    conditional, accept_probability = {}, {}
    for drafts, weight in multisets:
        node = ("drafts", drafts)
        sent = {}
        for t in sorted(set(drafts), key=p.index):
            f = flow[node][("token", t)]["flow"]
            if f > 0:
                sent[t] = Fraction(f)
                accepted[t] += Fraction(f)
        total = sum(sent.values(), Fraction(0))
        accept_probability[drafts] = total / weight
        if total:
            conditional[drafts] = Dist([sent.get(t, 0) / total for t in p.labels], p.labels,
                                       check=False)
    a = Dist([accepted[t] for t in p.labels], p.labels, check=False)
    if sum(a.probs) != alpha or any(a[t] > p[t] for t in p.labels):
        raise AssertionError("internal: the flow's accepted law is inconsistent")
    residual = None
    if alpha != 1:
        residual = Dist([(p[t] - a[t]) / (1 - alpha) for t in p.labels], p.labels,
                        check=False)
    return TransportPlan(law, k, alpha, a, conditional, accept_probability, residual,
                         len(multisets))


def optimal_method(law: str = "iid", budget: int = MAX_OPTIMAL_MULTISETS) -> Method:
    """The optimal-transport verifier for a draft law (``"iid"``, ``"wor"`` or ``"hub"``)."""
    dl = draft_law(law)

    def run(s, p, q, k=1):
        plan = transport_plan(p, q, k, dl.name, budget=budget)
        drafts = dl.draw_multiset(s, q, k)
        accept = plan.accept_probability[drafts]
        if accept != 0 and s.coin(accept, "accept"):
            return s.accept(s.draw(plan.conditional[drafts], "accepted token"))
        return s.draw(plan.residual, "residual")

    def requires(p, q, k):
        transport_plan(p, q, k, dl.name, budget=budget)   # refuses what is too large

    def plan_size(p, q, k):
        return (_multiset_estimate(q, k, dl.name),
                f"draft multisets ({dl.name}, k={k}) for an exact max flow")

    name = "optimal" if dl.name == "iid" else f"optimal-{dl.name}"
    run.__name__ = name.replace("-", "_")
    return Method(name, run, draft_law=dl.name, requires=requires, plan_size=plan_size,
                  k_values=(2,) if dl.name == "hub" else None,
                  summary=f"exact optimal transport per draft multiset ({dl.description}); "
                          f"reaches the optimum; refuses more than {budget:,} multisets")


METHOD = optimal_method("iid")
optimal = METHOD.run

