"""``greedy``: greedy verification of ``k`` drafts (Medusa at temperature 0, EAGLE and
SpecInfer greedy trees), lossy by design for sampling.

Draft ``k`` tokens i.i.d. from ``q``; the one equal to the target's argmax ``g`` (first label
of largest ``p``) is accepted, and when none is, the output is ``g`` itself.  The output is
always ``g``: sampling from ``p`` becomes greedy decoding, bias ``1 - p(g)``; the acceptance
is ``1 - (1 - q(g))^k``.  ``top1`` is the one-draft case.

>>> from exactspec import Dist, verify
>>> p, q = Dist.parse("1/2,3/10,1/5", labels="abc"), Dist.parse("1/5,1/5,3/5", labels="abc")
>>> r = verify("greedy", p, q, 2)
>>> r.law_dist(), r.acceptance, r.bias
(Dist({'a': 1, 'b': 0, 'c': 0}), Fraction(9, 25), Fraction(1, 2))
"""

from __future__ import annotations

from .base import Method
from .top1 import argmax

__all__ = ["greedy", "METHOD"]


def greedy(s, p, q, k=1):
    """Accept the draft equal to the target's argmax; otherwise output the argmax."""
    drafts = s.drafts(q, k)
    top = argmax(p)
    if top in drafts:
        return s.accept(top)
    return top


METHOD = Method("greedy", greedy, claimed_lossless=False,
                summary="greedy multi-draft verification: accepts only the target's argmax "
                        "(lossy for sampling)")
