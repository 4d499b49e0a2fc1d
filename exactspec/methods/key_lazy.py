"""``key-lazy``: KEY drawing only the keys that can matter; the same exact law as ``key``.

Distinct draft tokens are visited in the order their key supports start.  A visited token
draws once for all its copies (the slot of its smallest key and how many of its keys share
that slot), resolved only as finely as the current smallest key needs; the visit stops at the
first token whose key support starts after the current smallest key.  What it avoids: one key
per duplicate draft, every key of a token that cannot beat the current smallest key, and the
position of keys that lose anyway (:func:`exactspec.key.expected_key_draws` gives the expected
number of draws exactly; ``key`` always draws ``k``).

>>> from exactspec import Dist, verify
>>> p, q = Dist.parse("1/2,1/5,3/10,0"), Dist.parse("1/20,1/20,1/10,4/5")
>>> result = verify("key-lazy", p, q, 10)          # docs/math.md#the-two-counterexamples, 2
>>> result.lossless, result.acceptance == result.explicit_acceptance
(True, True)
"""

from __future__ import annotations

from ..key.lazy_stepped import KEY_LAZY_STEPS
from ..key.placement import key_placement
from ..key.selection import draw_drafts, smallest_key_lazy
from .base import Method

__all__ = ["key_lazy", "key_lazy_uniforms", "METHOD"]


def key_lazy(s, p, q, k=1):
    """Lazy KEY: the same verifier, drawing only the keys that can be the smallest."""
    plan = key_placement(p, q, k)
    drafts = draw_drafts(s, q, k)
    x = smallest_key_lazy(s, plan, drafts)
    if s.coin(plan.beta[x], "accept"):
        return s.accept(x)
    return s.draw(plan.residual, "residual")


#: The same rule one random choice per step, for the merged-state interpreter
#: (:mod:`exactspec.key.lazy_stepped`: the same paths, laws and acceptances).


def key_lazy_uniforms(s, p, q, k=1):
    """Lazy KEY with every random choice from a fresh explicit uniform."""
    plan = key_placement(p, q, k)
    drafts = draw_drafts(s, q, k)
    x = smallest_key_lazy(s, plan, drafts, uniforms=True)
    if s.uniform() < plan.beta[x]:
        return s.accept(x)
    return s.pick(plan.residual, s.uniform(), "residual")


def _requires(p, q, k):
    key_placement(p, q, k)


METHOD = Method("key-lazy", key_lazy, draft_law="iid", requires=_requires,
                steps=KEY_LAZY_STEPS,
                summary="KEY drawing only the keys that can matter (same law as key)")
