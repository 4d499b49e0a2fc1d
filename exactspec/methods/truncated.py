"""``top-k`` and ``top-p``: verification against a truncated target, lossy by design.

The target is cut to its ``K`` most likely tokens (``top-k``) or to the smallest set of most
likely tokens whose mass reaches ``P`` (``top-p``, nucleus), renormalised, and the ``k``
i.i.d. drafts are verified against that truncated target by recursive rejection sampling
(with RRS's stepped form on the truncated target for merged states: the same rule on the
same target, so the same law and acceptances in ``O(k |V|)``).
The output law is the truncated target exactly, so the bias is the mass cut off,
``TV(p_trunc, p) = 1 - p(kept)``.  Ties in ``p`` are broken by token order.  The registered
rules use ``K = 2`` and ``P = 4/5`` (Medusa's nucleus default); :func:`top_k` and
:func:`top_p` build others.

>>> from exactspec import Dist, verify
>>> p, q = Dist.parse("1/2,3/10,1/5", labels="abc"), Dist.parse("1/5,1/5,3/5", labels="abc")
>>> truncate_top_k(p, 2), truncate_top_p(p, "4/5")
(Dist({'a': 5/8, 'b': 3/8, 'c': 0}), Dist({'a': 5/8, 'b': 3/8, 'c': 0}))
>>> r = verify("top-k", p, q, 1)
>>> r.law_dist() == truncate_top_k(p, 2), r.acceptance, r.bias
(True, Fraction(2, 5), Fraction(1, 5))
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from ..core.dist import Dist, exact, exact_str
from ..core.errors import InvalidInput
from ..engine.merged import Stepped
from .base import Method
from .rrs import RRS_STEPS, rrs

__all__ = ["truncate_top_k", "truncate_top_p", "top_k", "top_p", "TOP_K", "TOP_P"]


def _ranked(p: Dist) -> list:
    """The labels by ``p`` descending, token order on ties (the sort is stable)."""
    order = sorted(range(len(p.labels)), key=lambda i: -p.probs[i])
    return [p.labels[i] for i in order]


def _keep(p: Dist, kept) -> Dist:
    kept = set(kept)
    mass = sum((p[t] for t in kept), Fraction(0))
    return Dist([p[t] / mass if t in kept else Fraction(0) for t in p.labels], p.labels,
                check=False)


@lru_cache(maxsize=1024)
def truncate_top_k(p: Dist, K: int) -> Dist:
    """``p`` cut to its ``K`` most likely tokens (token order on ties), renormalised."""
    if isinstance(K, bool) or not isinstance(K, int) or K < 1:
        raise InvalidInput(f"K={K!r}: need a number of kept tokens >= 1")
    return _keep(p, _ranked(p)[:K])


@lru_cache(maxsize=1024)
def truncate_top_p(p: Dist, P) -> Dist:
    """``p`` cut to the smallest set of most likely tokens of mass ``>= P``, renormalised."""
    P = exact(P, "P")
    if not 0 < P <= 1:
        raise InvalidInput(f"P={exact_str(P)}: need 0 < P <= 1")
    kept, mass = [], Fraction(0)
    for t in _ranked(p):
        kept.append(t)
        mass += p[t]
        if mass >= P:
            break
    return _keep(p, kept)


def _rrs_steps_on(truncate, name: str) -> Stepped:
    """RRS's stepped form against ``truncate(p)`` (remembered per target: a ``Dist``
    hashes once), for merged states."""
    return Stepped(lambda p, q, k: RRS_STEPS.start(truncate(p), q, k),
                   lambda s, p, q, k, state: RRS_STEPS.step(s, truncate(p), q, k, state),
                   name=name)


def top_k(K: int, name: str | None = None) -> Method:
    """RRS against the top-``K`` truncated target, as a :class:`Method` (lossy by design)."""
    truncate_top_k(Dist([1]), K)      # checks K

    def top_k_rule(s, p, q, k=1):
        """RRS against the top-K truncated target."""
        return rrs(s, truncate_top_k(p, K), q, k)

    label = name or f"top-k(K={K})"
    return Method(label, top_k_rule, claimed_lossless=False,
                  steps=_rrs_steps_on(lambda p: truncate_top_k(p, K), label),
                  summary=f"RRS against the target cut to its top {K} tokens (lossy)")


def top_p(P, name: str | None = None) -> Method:
    """RRS against the nucleus (top-``P``) truncated target, as a :class:`Method`."""
    P = exact(P, "P")
    truncate_top_p(Dist([1]), P)      # checks P

    def top_p_rule(s, p, q, k=1):
        """RRS against the top-p (nucleus) truncated target."""
        return rrs(s, truncate_top_p(p, P), q, k)

    label = name or f"top-p(P={exact_str(P)})"
    return Method(label, top_p_rule, claimed_lossless=False,
                  steps=_rrs_steps_on(lambda p: truncate_top_p(p, P), label),
                  summary=f"RRS against the nucleus of mass {exact_str(P)} (lossy)")


TOP_K = top_k(2, name="top-k")
TOP_P = top_p(Fraction(4, 5), name="top-p")
