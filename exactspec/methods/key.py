"""``key``: the KEY verifier for ``k`` i.i.d. drafts; lossless with acceptance exactly ``alpha*``.

Each draft draws a random key from its token's key law (:mod:`exactspec.key.placement`: a
slot of ``[0, 1]``, then a uniform position inside it); the draft with the smallest key is
selected; its token ``t`` is accepted with probability ``beta_t = a*(t) / w(t)``; otherwise
the output is drawn from the residual ``(p - a*) / (1 - alpha*)``.  Two formulations of the
same rule: :func:`key` (``s.draw`` and ``s.coin``, fast to enumerate) and
:func:`key_uniforms` (every choice from a fresh explicit uniform, as a kernel writes it).

On the exact engine the position inside a slot only decides which of several drafts whose
keys share the lowest slot is the smallest; i.i.d. uniform positions in one interval are each
the smallest with equal probability, so that choice is one uniform draw among those drafts
(the closed form :func:`exactspec.key.selection_law` integrates the real positions and agrees
exactly).  The behaviour depends only on the multiset of drafts, drawn in one choice
(:func:`exactspec.key.selection.draw_drafts`).

>>> from exactspec import Dist, verify
>>> p, q = Dist.parse("3/5,2/5"), Dist.parse("1/2,1/2")
>>> result = verify("key", p, q, 8)                  # docs/math.md#the-two-counterexamples, 1
>>> result.lossless, result.acceptance
(True, Fraction(1, 1))
"""

from __future__ import annotations

from ..key.placement import key_placement
from ..key.selection import draw_drafts, smallest_key
from ..key.stepped import KEY_STEPS
from .base import Method

__all__ = ["key", "key_uniforms", "METHOD"]


def key(s, p, q, k=1):
    """KEY: the smallest-key draft, accepted with ``a*(t) / w(t)``, else the residual."""
    plan = key_placement(p, q, k)
    drafts = draw_drafts(s, q, k)
    x = smallest_key(s, plan, drafts)
    if s.coin(plan.beta[x], "accept"):
        return s.accept(x)
    return s.draw(plan.residual, "residual")


#: The same rule one random choice per step, for the merged-state interpreter
#: (:mod:`exactspec.key.stepped`: the same paths, laws and acceptances).


def key_uniforms(s, p, q, k=1):
    """The same verifier with every random choice from a fresh explicit uniform."""
    plan = key_placement(p, q, k)
    drafts = draw_drafts(s, q, k)
    x = smallest_key(s, plan, drafts, uniforms=True)
    if s.uniform() < plan.beta[x]:
        return s.accept(x)
    return s.pick(plan.residual, s.uniform(), "residual")


def _requires(p, q, k):
    key_placement(p, q, k)                  # exact rationals only; validates the instance


METHOD = Method("key", key, draft_law="iid", requires=_requires, steps=KEY_STEPS,
                summary="KEY: k i.i.d. drafts with random keys, smallest key verified with "
                        "a*/w; reaches alpha* exactly")
