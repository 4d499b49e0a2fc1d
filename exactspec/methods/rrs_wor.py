"""``rrs-wor``: recursive rejection sampling with drafts without replacement (RSD; Sequoia,
EAGLE-1).

Drafts without replacement (:class:`exactspec.optimum.draft_laws.WithoutReplacement`).  ``r_1 = p``,
``q_1 = q``; for ``i = 1..k`` accept ``X_i`` with probability
``min(1, r_i(X_i) / q_i(X_i))``, else ``r_{i+1} = norm(max(0, r_i - q_i))`` and ``q_{i+1}`` is
``q_i`` with ``X_i`` removed and renormalised; after ``k`` rejections output
``Y ~ r_{k+1}``.  Needs ``k <=`` the number of tokens ``q`` can draft (refused otherwise).

:data:`RRS_WOR_STEPS` is the same rule one draft per step over the state
``(r_i, set of tokens drafted)``, for the merged-state interpreter.  Unlike RRS, that state
grows with the vocabulary: ``q_{i+1}`` depends on which tokens were rejected, so after ``i``
rejections there are up to ``C(|V|, i)`` states (ordered drafts of one set merge), each
drafting over about ``|V|`` tokens; after the ``k``-th the drafted set is dropped (only the
residual is read), so the last draw is made from at most ``C(|V|, k - 1)`` states.
``k = 2`` takes about ``2 |V|^2`` transitions, ``O(1)`` work each (the restricted ``q`` and
the residual are formed once per state); at ``k = 2`` the route of sorted sums
(:mod:`.rrs_wor_sums`: the rejected draft enters only through ``1 / (1 - q(x))``) takes
``O(|V| log |V|)`` instead.

>>> from exactspec import Dist, verify
>>> p, q = Dist.parse("1/2,3/10,1/5", labels="abc"), Dist.parse("1/5,1/5,3/5", labels="abc")
>>> result = verify("rrs-wor", p, q, 2)
>>> result.lossless, result.acceptance
(True, Fraction(9, 10))
"""

from __future__ import annotations

from functools import lru_cache

from ..core.dist import residual
from ..optimum.draft_laws import WithoutReplacement, restricted
from ..engine.merged import Done, Stepped, by_identity
from .base import Method
from .rrs_wor_sums import two_draft_sums

__all__ = ["rrs_wor", "RRS_WOR_STEPS", "METHOD"]

_WOR = WithoutReplacement()


def rrs_wor(s, p, q, k=1):
    """RRS without replacement: the draft law and the residual both drop rejected drafts."""
    drafts = s.drafts(q, k, replace=False)
    r, qi = p, q
    for i, x in enumerate(drafts):
        if s.coin(min(1, r[x] / qi[x]), f"accept{i + 1}"):
            return s.accept(x)
        r = residual(r, qi)        # a rejection means r(x) < q_i(x): not empty
        if i + 1 < k:
            qi = restricted(q, drafts[:i + 1])
    return s.draw(r, "residual")


def _start(p, q, k):
    return (p, frozenset())


@lru_cache(maxsize=256)
def _restricted(q, drawn):
    """``restricted(q, drawn)`` once per state (``q`` is read-only and hashes once), not once
    per transition."""
    return restricted(q, drawn)


@by_identity
def _last_rejection(r, qi):
    """The state after the last rejection, one object per state before it (the merged-state
    interpreter then finds it without comparing residuals)."""
    return (residual(r, qi), None)


def _step(s, p, q, k, state):
    r, drawn = state
    if drawn is None or len(drawn) == k:
        return Done(s.draw(r, "residual"))
    qi = _restricted(q, drawn) if drawn else q
    x = s.draft(qi, f"draft{len(drawn) + 1}")
    if s.coin(min(1, r[x] / qi[x]), f"accept{len(drawn) + 1}"):
        return Done(s.accept(x))
    if len(drawn) + 1 == k:     # every draft rejected: which ones no longer matters
        return _last_rejection(r, qi)
    return (residual(r, qi), drawn | {x})


#: RRS without replacement one draft per step (state: the residual and the drafted set; after
#: the last rejection the residual alone, so that those states merge).
RRS_WOR_STEPS = Stepped(_start, _step, name="rrs-wor")


def _requires(p, q, k):
    _WOR.check(q, k)


METHOD = Method("rrs-wor", rrs_wor, draft_law="wor", requires=_requires,
                steps=RRS_WOR_STEPS, sorted_sums=two_draft_sums,
                summary="recursive rejection sampling, k drafts without replacement: q and the "
                        "residual both drop each rejected draft")
