"""``typical``: Medusa's typical acceptance (Cai et al., ICML 2024), lossy by design.

A draft ``x`` is accepted when ``p(x) > min(eps, delta * exp(-H(p)))``, ``H`` the natural-log
entropy of the target.  With ``k`` drafts the accepted one of largest ``p(x)`` is kept (the
first drafted among equals); when none passes, the output is the target's argmax (the greedy
base token that typical acceptance always keeps; ties by token order).  Defaults are Medusa's
``eps = 0.09``, ``delta = 0.3``.  In a token tree verified node by node the kept child is the
passing one of largest ``p``; Medusa itself keeps the candidate path with the longest accepted
prefix, which can differ.  The entropy is taken without the ``1e-5`` smoothing some code
adds inside the logarithm.

``exp(-H(p)) = prod_i p_i^(p_i)`` is irrational in general, so the comparison is decided with
certified mpmath interval enclosures at rising precision.  When the intervals do not separate
(an exact tie is possible: ``p = (1/2, 1/2)`` has ``exp(-H) = 1/2``), both sides are raised to
the power ``D``, the common denominator of ``p``, which makes them rational:
``(p(x)/delta)^D`` against ``prod_i p_i^(D p_i)``.  Above :data:`EXACT_POWER_LIMIT` that is
refused with :class:`~exactspec.core.errors.Undecided`.

>>> from exactspec import Dist, verify
>>> p, q = Dist.parse("1/2,3/10,1/5", labels="abc"), Dist.parse("1/5,1/5,3/5", labels="abc")
>>> r = verify("typical", p, q, 1)                   # Medusa's defaults: every token passes
>>> r.lossless, r.acceptance, r.bias
(False, Fraction(1, 1), Fraction(2, 5))
>>> r = verify(typical_acceptance("3/10", "3/5"), p, q, 1)   # threshold 0.6 e^-H ~ 0.214
>>> accepted_tokens(p, "3/10", "3/5"), r.law_dist(), r.bias
(('a', 'b'), Dist({'a': 4/5, 'b': 1/5, 'c': 0}), Fraction(3, 10))
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from math import lcm

from ..core.dist import Dist, exact, exact_str
from ..core.errors import InvalidInput, Undecided
from .base import Method

__all__ = ["typical_acceptance", "accepted_tokens", "exceeds_entropy_threshold",
           "entropy_threshold_interval", "typical_law", "typical_sums", "MEDUSA_EPS",
           "MEDUSA_DELTA",
           "EXACT_POWER_LIMIT", "METHOD"]

#: Medusa's ``posterior_threshold`` (eps) and ``posterior_alpha`` (delta).
MEDUSA_EPS, MEDUSA_DELTA = Fraction(9, 100), Fraction(3, 10)

#: The largest common denominator of ``p`` for which a tie is settled by exact powers.
EXACT_POWER_LIMIT = 4096

_PRECISIONS = (64, 256, 1024)


def _iv_fraction(iv, x: Fraction):
    return iv.mpf(x.numerator) / iv.mpf(x.denominator)


def entropy_threshold_interval(p: Dist, delta, prec: int = 64):
    """A certified mpmath interval holding ``delta * exp(-H(p))`` (``prec`` bits).

    >>> lo_hi = entropy_threshold_interval(Dist.parse("1/2,1/2"), 1)
    >>> float(lo_hi.a) <= 0.5 <= float(lo_hi.b)
    True
    """
    return _threshold_interval(p, exact(delta, "delta"), prec)


@lru_cache(maxsize=64)
def _threshold_interval(p: Dist, delta: Fraction, prec: int):
    """:func:`entropy_threshold_interval` once per ``(p, delta, prec)``: every token of ``p``
    is compared with the same threshold, which takes ``O(|V|)`` logarithms to enclose."""
    from mpmath import iv

    old = iv.prec
    iv.prec = prec
    try:
        log_e = iv.mpf(0)
        for v in p.probs:
            if v:
                x = _iv_fraction(iv, Fraction(v))
                log_e += x * iv.log(x)
        return _iv_fraction(iv, delta) * iv.exp(log_e)
    finally:
        iv.prec = old


def exceeds_entropy_threshold(value, p: Dist, delta) -> bool:
    """Whether ``value > delta * exp(-H(p))``, decided exactly (see the module docstring).

    >>> half = Dist.parse("1/2,1/2")
    >>> exceeds_entropy_threshold("1/2", half, 1), exceeds_entropy_threshold("51/100", half, 1)
    (False, True)
    """
    value, delta = exact(value, "value"), exact(delta, "delta")
    if delta <= 0:
        return value > 0
    from mpmath import iv

    for prec in _PRECISIONS:
        old = iv.prec
        iv.prec = prec
        try:
            lhs = _iv_fraction(iv, value)
        finally:
            iv.prec = old
        rhs = entropy_threshold_interval(p, delta, prec)
        if lhs.a > rhs.b:
            return True
        if lhs.b < rhs.a:
            return False
    # the enclosures overlap: compare the D-th powers, which are rational
    probs = [Fraction(v) for v in p.probs]
    d = lcm(*(v.denominator for v in probs))
    if d > EXACT_POWER_LIMIT:
        raise Undecided(f"typical acceptance: p(x) = {exact_str(value)} against delta exp(-H(p)) "
                        f"with delta = {exact_str(delta)} is not separated at "
                        f"{_PRECISIONS[-1]} bits, and p's common denominator {d} is too large "
                        f"for exact powers (limit {EXACT_POWER_LIMIT})")
    right = Fraction(1)
    for v in probs:
        if v:
            right *= v ** int(v * d)
    return (value / delta) ** d > right


@lru_cache(maxsize=1024)
def _accepted(p: Dist, eps: Fraction, delta: Fraction) -> tuple:
    return tuple(t for t in p.labels
                 if p[t] > 0 and (p[t] > eps or exceeds_entropy_threshold(p[t], p, delta)))


def accepted_tokens(p: Dist, eps=MEDUSA_EPS, delta=MEDUSA_DELTA) -> tuple:
    """The tokens ``x`` with ``p(x) > min(eps, delta exp(-H(p)))``, in label order.

    >>> accepted_tokens(Dist.parse("1/2,3/10,1/5", labels="abc"))
    ('a', 'b', 'c')
    """
    eps, delta = exact(eps, "eps"), exact(delta, "delta")
    if eps < 0 or delta < 0:
        raise InvalidInput(f"eps={exact_str(eps)}, delta={exact_str(delta)}: need eps >= 0 and "
                           "delta >= 0")
    return _accepted(p, eps, delta)


def _argmax(p: Dist):
    best = p.labels[0]
    for t in p.labels[1:]:
        if p[t] > p[best]:
            best = t
    return best


def typical_law(p: Dist, q: Dist, k: int, eps=MEDUSA_EPS, delta=MEDUSA_DELTA) -> Dist:
    """The output law in closed form: group the accepted tokens by ``p`` (largest first); the
    group ``G`` wins with ``(1 - q(before))^k - (1 - q(before + G))^k`` and shares it in
    proportion to ``q``; the argmax of ``p`` also gets ``(1 - q(accepted))^k``.

    >>> typical_law(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 2, "3/10", "3/5")
    Dist({0: 18/25, 1: 7/25, 2: 0})
    """
    passing = accepted_tokens(p, eps, delta)
    out = {t: Fraction(0) for t in p.labels}
    seen = Fraction(0)
    for level in sorted({p[t] for t in passing}, reverse=True):
        group = [t for t in passing if p[t] == level]
        mass = sum((q[t] for t in group), Fraction(0))
        if mass == 0:
            continue
        share = (1 - seen) ** k - (1 - seen - mass) ** k
        for t in group:
            out[t] += share * q[t] / mass
        seen += mass
    out[_argmax(p)] += (1 - seen) ** k
    return Dist([out[t] for t in p.labels], p.labels, check=False)


def typical_sums(p: Dist, q: Dist, k: int, eps=MEDUSA_EPS, delta=MEDUSA_DELTA):
    """The exact enumeration of typical acceptance by its closed form (:func:`typical_law`),
    for the route of sorted sums: the law, the explicit acceptance ``1 - (1 - q(A))^k``
    (``A`` the passing tokens: some draft passes), ``P(Y in X)`` (also when no draft passes
    and the argmax ``g``, not passing, was drafted: ``(1 - q(A))^k - (1 - q(A) - q(g))^k``)
    and the plain enumeration's paths, ``m^k`` for the ``m`` draftable tokens.

    >>> e = typical_sums(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 2, "3/10",
    ...                  "3/5")
    >>> e.law[0], e.acceptance, e.explicit_acceptance, e.paths
    (Fraction(18, 25), Fraction(16, 25), Fraction(16, 25), 9)
    """
    from ..engine.exact import Enumeration

    law = typical_law(p, q, k, eps, delta)
    passing = set(accepted_tokens(p, eps, delta))
    mass = sum((q[t] for t in passing), Fraction(0))
    explicit = 1 - (1 - mass) ** k
    acceptance = explicit
    top = _argmax(p)
    if top not in passing:
        acceptance += (1 - mass) ** k - (1 - mass - q[top]) ** k
    drafts = sum(1 for v in q.probs if v)
    return Enumeration(labels=tuple(p.labels), law=dict(zip(law.labels, law.probs)),
                       acceptance=acceptance, explicit_acceptance=explicit,
                       paths=drafts ** k, total=sum(law.probs, Fraction(0)),
                       used_drafts=True, used_accept=mass != 0)


def typical_acceptance(eps=MEDUSA_EPS, delta=MEDUSA_DELTA, name: str | None = None) -> Method:
    """The typical-acceptance rule at ``eps``, ``delta`` as a :class:`Method` (``k`` i.i.d.
    drafts; lossy by design).

    >>> typical_acceptance("1/4", 1).name
    'typical(eps=1/4,delta=1)'
    """
    eps, delta = exact(eps, "eps"), exact(delta, "delta")
    if eps < 0 or delta < 0:
        raise InvalidInput(f"eps={exact_str(eps)}, delta={exact_str(delta)}: need eps >= 0 and "
                           "delta >= 0")

    def typical(s, p, q, k=1):
        """Typical acceptance: keep the passing draft of largest p, else the target's argmax."""
        drafts = s.drafts(q, k)
        passing = set(_accepted(p, eps, delta))
        best = None
        for x in drafts:
            if x in passing and (best is None or p[x] > p[best]):
                best = x
        if best is not None:
            return s.accept(best)
        return _argmax(p)

    label = name or f"typical(eps={exact_str(eps)},delta={exact_str(delta)})"
    return Method(label, typical, claimed_lossless=False,
                  sorted_sums=lambda p, q, k, max_seconds=None: typical_sums(p, q, k, eps,
                                                                             delta),
                  summary=f"Medusa typical acceptance, p(x) > min({exact_str(eps)}, "
                          f"{exact_str(delta)} exp(-H(p))), else argmax p (lossy)")


METHOD = typical_acceptance(MEDUSA_EPS, MEDUSA_DELTA, name="typical")
