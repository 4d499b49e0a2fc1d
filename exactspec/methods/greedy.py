"""``greedy``: greedy verification of ``k`` drafts (Medusa at temperature 0, EAGLE and
SpecInfer greedy trees), lossy by design for sampling.

Draft ``k`` tokens i.i.d. from ``q``; the one equal to the target's argmax ``g`` (first label
of largest ``p``) is accepted, and when none is, the output is ``g`` itself.  The output is
always ``g``: sampling from ``p`` becomes greedy decoding, bias ``1 - p(g)``; the acceptance
is ``1 - (1 - q(g))^k``.  ``top1`` is the one-draft case.

:data:`GREEDY_STEPS` is the same rule one draft per step over the state ``(drafts left,
whether g was drafted)``, for the merged-state interpreter: the drafts are i.i.d., drawn in
the same order from the same law, and the rule reads of them only whether ``g`` is one, so
the two give the same law, ``P(Y in X)``, explicit acceptance and number of paths, in
``O(k |V|)`` transitions instead of ``|V|^k`` paths.

>>> from exactspec import Dist, verify
>>> p, q = Dist.parse("1/2,3/10,1/5", labels="abc"), Dist.parse("1/5,1/5,3/5", labels="abc")
>>> r = verify("greedy", p, q, 2)
>>> r.law_dist(), r.acceptance, r.bias
(Dist({'a': 1, 'b': 0, 'c': 0}), Fraction(9, 25), Fraction(1, 2))
"""

from __future__ import annotations

from ..engine.merged import Done, Stepped, by_identity
from .base import Method
from .top1 import argmax

__all__ = ["greedy", "GREEDY_STEPS", "METHOD"]


def greedy(s, p, q, k=1):
    """Accept the draft equal to the target's argmax; otherwise output the argmax."""
    drafts = s.drafts(q, k)
    top = argmax(p)
    if top in drafts:
        return s.accept(top)
    return top


_argmax = by_identity(argmax)           # once per target, not once per transition


def _start(p, q, k):
    return (k, False)


def _step(s, p, q, k, state):
    left, seen = state
    top = _argmax(p)
    if left:
        x = s.draft(q, f"draft{k - left + 1}")
        return (left - 1, seen or x == top)
    return Done(s.accept(top) if seen else top)


#: ``greedy`` one draft per step (module docstring).
GREEDY_STEPS = Stepped(_start, _step, name="greedy")

METHOD = Method("greedy", greedy, claimed_lossless=False, steps=GREEDY_STEPS,
                summary="greedy multi-draft verification: accepts only the target's argmax "
                        "(lossy for sampling)")
