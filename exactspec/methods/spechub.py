"""``spechub``: SpecHub's verifier for ``k = 2`` drafts from the hub draft law.

Drafts (:class:`exactspec.optimum.draft_laws.Hub`): ``a = argmax q`` (ties by index), ``X_1 ~ q``;
``X_2 = a`` if ``X_1 != a``, else ``X_2 ~ q`` restricted to ``V \\ {a}``, so every pair holds
the hub.  With ``Q(i, a) = q(i)`` and ``Q(a, i) = q(a) q(i) / (1 - q(a))`` for ``i != a`` (the
pair's probabilities), the verifier works through the pair types in the order of the authors'
code (docs/methods.md#spechub):

1. pair ``(i, a)``: accept ``i`` with probability ``min(1, p(i) / Q(i, a))``;
2. ``g1(t) = max(0, p(t) - Q(t, a))`` for ``t != a``, ``g1(a) = p(a)``;
   ``Q'(t, a) = max(0, Q(t, a) - p(t))``;
3. pair ``(a, i)``: accept ``i`` with probability ``min(1, g1(i) / Q(a, i))``;
4. ``g2(t) = max(0, g1(t) - Q(a, t))`` for ``t != a``; ``Q'(a, t) = max(0, Q(a, t) - g1(t))``;
5. pair ``(a, i)`` still rejected: accept the hub with ``min(1, g2(a) / sum_t Q'(a, t))``,
   then ``g2(a) <- max(0, g2(a) - sum_t Q'(a, t))``;
6. pair ``(i, a)`` still rejected: accept the hub with ``min(1, g2(a) / sum_t Q'(t, a))``,
   then likewise;
7. otherwise output ``Y ~ norm(g2)``.

Lossless; acceptance ``p(a) + sum_{i != a} min(p(i), q(i) / (1 - q(a)))``, which is the
optimum of the hub draft law.  Undefined when ``q`` is a point mass: refused.

>>> from exactspec import Dist, verify
>>> p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/10,3/10,3/5")
>>> result = verify("spechub", p, q, 2)
>>> result.lossless, result.acceptance
(True, Fraction(3, 4))
"""

from __future__ import annotations

from functools import lru_cache

from ..core.dist import Dist
from ..optimum.draft_laws import Hub, is_exact_dist, point_mass, restricted
from ..engine.merged import Done, Stepped, by_identity
from .base import Method

__all__ = ["spechub", "spechub_plan", "SPECHUB_STEPS", "METHOD"]

_HUB = Hub()


def _pos(x):
    return x if x > 0 else 0


def spechub_plan(p: Dist, q: Dist) -> dict:
    """The deterministic quantities of the rule: the hub, ``Q``, ``g1``, ``g2``, and the hub's
    two acceptance probabilities with ``g2(a)`` after each of steps 5 and 6."""
    a = _HUB.hub(q)
    rest = 1 - q[a]
    others = [t for t in q.labels if t != a]
    pair_ia = {t: q[t] for t in others}                    # Q(i, a)
    pair_ai = {t: q[a] * q[t] / rest for t in others}      # Q(a, i)
    g1 = {t: _pos(p[t] - pair_ia[t]) for t in others}
    left_ia = {t: _pos(pair_ia[t] - p[t]) for t in others}  # Q'(i, a)
    g2 = {t: _pos(g1[t] - pair_ai[t]) for t in others}
    left_ai = {t: _pos(pair_ai[t] - g1[t]) for t in others}  # Q'(a, i)
    hub_mass = p[a]
    s5 = sum((left_ai[t] for t in others), 0)
    hub5 = min(1, hub_mass / s5) if s5 != 0 else 0
    hub_mass = _pos(hub_mass - s5)
    s6 = sum((left_ia[t] for t in others), 0)
    hub6 = min(1, hub_mass / s6) if s6 != 0 else 0
    hub_mass = _pos(hub_mass - s6)
    g2[a] = hub_mass
    return {"hub": a, "pair_ia": pair_ia, "pair_ai": pair_ai, "g1": g1,
            "hub5": hub5, "hub6": hub6, "g2": g2}


@lru_cache(maxsize=64)
def _cached_plan(p: Dist, q: Dist) -> dict:
    return spechub_plan(p, q)


def spechub(s, p, q, k=2):
    """SpecHub (k = 2): accept the non-hub draft with the two-stage ratios, then the hub,
    else resample ``norm(g2)``."""
    exact = is_exact_dist(p) and is_exact_dist(q)
    plan = _cached_plan(p, q) if exact else spechub_plan(p, q)
    a = plan["hub"]
    x1, x2 = _HUB.draw(s, q, 2)
    if x1 != a:                                   # pair (i, a)
        i = x1
        if s.coin(min(1, p[i] / plan["pair_ia"][i]), "accept draft"):
            return s.accept(i)
        hub_first = False
    else:                                         # pair (a, i)
        i = x2
        if s.coin(min(1, plan["g1"][i] / plan["pair_ai"][i]), "accept draft"):
            return s.accept(i)
        hub_first = True
    if s.coin(plan["hub5"] if hub_first else plan["hub6"], "accept hub"):
        return s.accept(a)
    if "residual" not in plan:
        g2 = plan["g2"]
        plan["residual"] = Dist.from_weights([g2[t] for t in p.labels], p.labels)
    return s.draw(plan["residual"], "residual")


def _start(p, q, k):
    return "drafts"


@by_identity
def _step_plan(p, q) -> dict:
    """The plan of one ``(p, q)`` and the hub's second-draft laws, once per pair (a step
    would otherwise check the rows and build those laws on every transition)."""
    exact = is_exact_dist(p) and is_exact_dist(q)
    plan = dict(_cached_plan(p, q) if exact else spechub_plan(p, q))
    a = plan["hub"]
    plan["second"] = (point_mass(q.labels, a), restricted(q, {a}))
    return plan


def _hub_pair(s, q, plan):
    """The two drafts of :meth:`~exactspec.optimum.draft_laws.Hub.draw`, from the plan's
    laws."""
    a = plan["hub"]
    x1 = s.draft(q, "draft1")
    x2 = s.draft(plan["second"][0] if x1 != a else plan["second"][1], "draft2")
    return x1, x2


def _step(s, p, q, k, state):
    plan = _step_plan(p, q)
    if state == "residual":
        if "residual" not in plan:
            g2 = plan["g2"]
            plan["residual"] = Dist.from_weights([g2[t] for t in p.labels], p.labels)
        return Done(s.draw(plan["residual"], "residual"))
    a = plan["hub"]
    x1, x2 = _hub_pair(s, q, plan)
    i = x1 if x1 != a else x2
    first = plan["pair_ia"] if x1 != a else plan["pair_ai"]
    numerator = p[i] if x1 != a else plan["g1"][i]
    if s.coin(min(1, numerator / first[i]), "accept draft"):
        return Done(s.accept(i))
    if s.coin(plan["hub5"] if x1 == a else plan["hub6"], "accept hub"):
        return Done(s.accept(a))
    return "residual"


#: SpecHub in two steps (the pair and its decisions; then the residual draw), so that every
#: rejected pair merges into one state before the residual is drawn.
SPECHUB_STEPS = Stepped(_start, _step, name="spechub")


def _requires(p, q, k):
    _HUB.check(q, k)


METHOD = Method("spechub", spechub, draft_law="hub", k_values=(2,), requires=_requires,
                steps=SPECHUB_STEPS,
                summary="SpecHub, 2 drafts that always hold the hub argmax q; refuses a "
                        "point-mass q")
