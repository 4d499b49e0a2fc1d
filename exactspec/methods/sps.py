"""``sps``: the lossless one-draft rule (speculative sampling).

Draw ``x ~ q``; accept it with probability ``min(1, p(x) / q(x))``; on rejection output
``y ~ norm(max(0, p - q))``.  Output law ``p``, acceptance ``sum_t min(p(t), q(t))``.

>>> from exactspec import Dist, verify
>>> p, q = Dist.parse("1/2,3/10,1/5", labels="abc"), Dist.parse("1/5,1/5,3/5", labels="abc")
>>> result = verify("sps", p, q)
>>> result.lossless, result.acceptance
(True, Fraction(3, 5))
"""

from ..core.dist import residual
from .base import Method


def sps(s, p, q, k=1):
    """The lossless rule: accept ``x`` with probability ``min(1, p(x)/q(x))``, else resample."""
    x = s.draft(q)
    if s.coin(min(1, p[x] / q[x]), "accept"):
        return s.accept(x)
    return s.draw(residual(p, q), "residual")


def sps_uniforms(s, p, q, k=1):
    """The same rule as kernels write it: explicit uniforms, a fresh one for the resample."""
    x = s.draft(q)
    if s.uniform() < p[x] / q[x]:
        return s.accept(x)
    return s.pick(residual(p, q), s.uniform(), "residual")


METHOD = Method("sps", sps, k_values=(1,),
                summary="one draft: accept with min(1, p/q), else resample the residual")
