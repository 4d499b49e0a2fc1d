"""``rrs``: recursive rejection sampling with ``k`` i.i.d. drafts (SpecInfer).

``r_0 = p``; for ``i = 1..k`` accept ``X_i`` with probability ``min(1, r_{i-1}(X_i) / q(X_i))``,
else ``r_i = norm(max(0, r_{i-1} - q))``; if all ``k`` are rejected, output ``Y ~ r_k``.
``q`` never changes.  Lossless; acceptance ``1 - prod_i TV(r_{i-1}, q)``
(:func:`exactspec.bounds.closed_forms.rrs_acceptance`).

Two forms of the same rule: :func:`rrs`, the reference (all ``k`` drafts drawn first, as a
kernel does), and :data:`RRS_STEPS`, one draft per step over the state ``(i, r_i)``, which the
merged-state interpreter (:mod:`exactspec.engine.merged`) runs in ``O(k |V|)`` transitions,
because the residual after a rejection does not depend on which token was rejected.  Each
transition does ``O(1)`` work: the next residual and the acceptance ratios are computed once
per state (remembered by the identity of ``r`` and ``q``), not once per transition.

>>> from exactspec import Dist, verify
>>> p, q = Dist.parse("1/2,3/10,1/5", labels="abc"), Dist.parse("1/5,1/5,3/5", labels="abc")
>>> result = verify("rrs", p, q, 2)
>>> result.lossless, result.acceptance
(True, Fraction(19, 25))
"""

from __future__ import annotations

from functools import lru_cache

from ..core.dist import residual
from ..optimum.draft_laws import is_exact_dist
from ..engine.merged import Done, Stepped, by_identity
from .base import Method

__all__ = ["rrs", "RRS_STEPS", "METHOD"]


def rrs(s, p, q, k=1):
    """Recursive rejection sampling: accept ``X_i`` with ``min(1, r(X_i)/q(X_i))``, else
    ``r <- norm(max(0, r - q))``; after ``k`` rejections output ``Y ~ r``."""
    drafts = s.drafts(q, k)
    r = p
    for i, x in enumerate(drafts):
        if s.coin(min(1, r[x] / q[x]), f"accept{i + 1}"):
            return s.accept(x)
        r = _next(r, q)         # a rejection means r(x) < q(x): the residual is not empty
    return s.draw(r, "residual")


@by_identity
def _is_exact_pair(r, q) -> bool:
    return is_exact_dist(r) and is_exact_dist(q)


def _next(r, q):
    """``norm(max(0, r - q))``, remembered for exact inputs (each path re-runs the method)."""
    if _is_exact_pair(r, q):
        return _cached_residual(r, q)
    return residual(r, q)


@by_identity
def _ratios(r, q) -> dict:
    """``x -> min(1, r(x) / q(x))``, filled as drafts are met (one table per state)."""
    return {}


@lru_cache(maxsize=1024)
def _cached_residual(r, q):
    return residual(r, q)


def _start(p, q, k):
    return (0, p)


def _step(s, p, q, k, state):
    i, r = state
    if i == k:
        return Done(s.draw(r, "residual"))
    x = s.draft(q, f"draft{i + 1}")
    ratios = _ratios(r, q)
    ratio = ratios.get(x)
    if ratio is None:
        ratio = ratios[x] = min(1, r[x] / q[x])
    if s.coin(ratio, f"accept{i + 1}"):
        return Done(s.accept(x))
    return (i + 1, _next(r, q))


#: RRS one draft per step, for :func:`exactspec.engine.merged.enumerate_merged`.  Drafts after
#: an acceptance are not drawn: the output is then a draft already, so ``P(Y in X)`` is
#: unchanged.
RRS_STEPS = Stepped(_start, _step, name="rrs")

METHOD = Method("rrs", rrs, draft_law="iid", steps=RRS_STEPS,
                summary="recursive rejection sampling, k i.i.d. drafts: accept X_i with "
                        "min(1, r/q), else r <- norm(max(0, r - q))")
