"""RRS without replacement at ``k = 2`` by sums over one sorted order, linear after a sort.

:data:`~exactspec.methods.rrs_wor.RRS_WOR_STEPS` keeps the rejected first draft in its state
(the second draft is drawn from ``q`` without it), so its merged states cost about
``2 |V|^2`` transitions: about 1,600 tokens in a minute.  :func:`two_draft_sums` computes the
same law, ``P(Y in X)``, explicit acceptance and number of paths of
:func:`~exactspec.methods.rrs_wor.rrs_wor` at ``k = 2`` in ``O(|V| log |V|)`` exact operations.

**What the rule does.**  ``X_1 ~ q`` is accepted with ``min(1, p / q)``: the accepted mass is
``A(t) = min(p(t), q(t))``, and ``X_1 = x`` is rejected with probability
``w(x) = q(x) - A(x)``.  After a rejection the target is ``r = norm(max(0, p - q))`` and
``X_2`` is drawn from ``q`` without ``x``, ``c q(t)`` for ``t != x`` with
``c = 1 / (1 - q(x))``; it is accepted with ``min(1, r(X_2) / (c q(X_2)))``, else the output
is drawn from ``norm(max(0, r - q_(-x)))``.

**Why the rejected token enters only through ``c``.**  A rejected ``x`` has ``p(x) < q(x)``,
so ``r(x) = 0``.  Given ``X_1 = x`` rejected, the second step accepts ``t`` with probability
``B_c(t) = min(r(t), c q(t))`` (at ``t = x`` both sides give 0) and leaves, after its own
rejection, the mass ``M_c(t) = max(0, r(t) - c q(t))`` to the residual (again 0 at ``x``,
which ``q_(-x)`` does not hold and ``r`` gives 0); the residual draw has total weight
``sum_t M_c(t)``, the probability of that rejection.  So

    law(t) = A(t) + sum_x w(x) (B_c(x)(t) + M_c(x)(t)),

with ``c`` a function of ``q(x)`` alone.  Sort the distinct values ``c`` takes, with the
prefix sums of ``w`` and ``w c`` over them: a token ``t`` with ``q(t) > 0`` has
``B_c(t) = c q(t)`` exactly when ``c <= r(t) / q(t)``, so one binary search per token gives
both sums (``q(t) = 0``: ``B = 0``, ``M = r(t)``).  The explicit acceptance is
``sum A + sum_t sum_x w(x) B_c(x)(t)``.  ``P(Y in X)`` is the same: the residual's last draw
gives 0 to ``x`` and to a rejected ``X_2 = t`` (``r(t) < c q(t)``), the only drafts.

**The number of paths** is the plain enumeration's (both drafts are drawn first, a coin
branches only where both outcomes have positive probability, the residual once per token of
its support): over ordered pairs ``(x, t)`` of draftable tokens,
``[p(x) > 0] + [p(x) < q(x)] ([r(t) > 0] + [r(t) < c q(t)] N(c))`` with ``N(c)`` the tokens
where ``r > c q``, counted by the same sort.

Every number is exact.  The sums' denominators grow with the number of distinct draft
probabilities (one ``1 - q(x)`` each), and the work with them: it is projected from the
vocabulary and those bits (:func:`projected_seconds`) and refused up front
(:class:`~exactspec.core.errors.TooLarge`) past the budget.

>>> from exactspec.core.dist import Dist
>>> p, q = Dist.parse("1/2,3/10,1/5", labels="abc"), Dist.parse("1/5,1/5,3/5", labels="abc")
>>> e = two_draft_sums(p, q, 2)
>>> e.law == dict(p), e.acceptance, e.explicit_acceptance, e.paths
(True, Fraction(9, 10), Fraction(9, 10), 9)
"""

from __future__ import annotations

import bisect
import time
from fractions import Fraction

from ..core.dist import residual
from ..core.errors import TooLarge
from ..core.signals import CannotProceed
from ..engine.exact import Enumeration

__all__ = ["two_draft_sums", "sum_bits", "projected_seconds", "SECONDS_PER_BIT_POWER",
           "MAX_SECONDS"]

#: Seconds of one token's sums per ``bits ** 1.5`` of their common denominator, measured on two
#: cores: 0.7 s at 3,000 tokens with 31,000 bits, 4.7 s at 6,000 with 68,000, 21 s at 10,000
#: with 122,000 (every draft probability distinct), 28 s at 152,064 with 18,400.
SECONDS_PER_BIT_POWER = 5e-11

#: Refuse sums projected past this many seconds (a request's own ``max_seconds`` replaces it).
MAX_SECONDS = 60.0


def sum_bits(p, q) -> int:
    """A bound on the bits of the prefix sums' common denominator: the bits of each distinct
    ``1 - q(x)`` over the tokens that can be rejected (``p(x) < q(x)``)."""
    seen = {b for a, b in zip(p.probs, q.probs) if a < b}
    return sum((1 - v).denominator.bit_length() for v in seen)


def projected_seconds(p, q, bits: int | None = None) -> float:
    """The seconds the sums are projected to take: ``|V| bits^1.5`` at
    :data:`SECONDS_PER_BIT_POWER` (``bits``: :func:`sum_bits`, computed when not given)."""
    bits = sum_bits(p, q) if bits is None else bits
    return SECONDS_PER_BIT_POWER * len(p.labels) * max(bits, 64) ** 1.5


def two_draft_sums(p, q, k: int, *, max_seconds: float | None = MAX_SECONDS) -> Enumeration:
    """The exact enumeration of RRS without replacement at ``k = 2`` (module docstring).

    Raises :class:`~exactspec.core.signals.CannotProceed` at any other ``k``, and
    :class:`~exactspec.core.errors.TooLarge` when projected past ``max_seconds``
    (:func:`projected_seconds`; ``None``: no budget).
    """
    if k != 2:
        raise CannotProceed(f"sorted sums take k = 2 only, not k = {k}")
    bits = sum_bits(p, q)
    seconds = projected_seconds(p, q, bits)
    if max_seconds is not None and seconds > max_seconds:
        raise TooLarge(f"rrs-wor at k = 2 by sorted sums: their common denominator may reach "
                       f"{bits:,} bits (one factor per distinct draft probability), about "
                       f"{seconds:,.0f} s of exact work over {len(p.labels):,} tokens, over the "
                       f"budget of {max_seconds:,.0f} s: use --backend numpy, or --max-paths N "
                       "to insist", estimate=seconds, budget=max_seconds)
    start = time.perf_counter()
    labels = tuple(p.labels)
    ps, qs = list(p.probs), list(q.probs)
    accepted = [min(a, b) for a, b in zip(ps, qs)]
    law = dict(zip(labels, accepted))
    explicit = sum(accepted, Fraction(0))
    drafts = sum(1 for b in qs if b)
    paths = sum(1 for a, b in zip(ps, qs) if b and a) * (drafts - 1)
    if explicit != 1:                        # some first draft is rejected
        r = list(residual(p, q).probs)
        rejected: dict = {}                  # q(x) -> sum of w(x) over those x
        count: dict = {}                     # q(x) -> how many such x
        for a, b in zip(ps, qs):
            if a < b:
                rejected[b] = rejected.get(b, 0) + (b - a)
                count[b] = count.get(b, 0) + 1
        values = sorted(rejected)            # c = 1 / (1 - q(x)) increases with q(x)
        scales = [1 / (1 - v) for v in values]
        w_sums, wc_sums = [Fraction(0)], [Fraction(0)]
        for v, c in zip(values, scales):
            w_sums.append(w_sums[-1] + rejected[v])
            wc_sums.append(wc_sums[-1] + rejected[v] * c)
        total = w_sums[-1]
        ratios = sorted(rt / qt for rt, qt in zip(r, qs) if qt)     # r(t) / q(t)
        never = sum(1 for rt, qt in zip(r, qs) if not qt and rt)      # r > 0 = q
        positive = sum(1 for rt, qt in zip(r, qs) if qt and rt)
        second = Fraction(0)
        for lab, rt, qt in zip(labels, r, qs):
            if not qt:
                law[lab] += total * rt                   # never drafted: all residual
                continue
            theta = rt / qt
            i = bisect.bisect_right(scales, theta)       # c <= theta: B = c q(t)
            bulk = qt * wc_sums[i] + rt * (total - w_sums[i])
            law[lab] += bulk + (rt * w_sums[i] - qt * wc_sums[i])
            second += bulk
        explicit += second
        for v, c in zip(values, scales):                 # the paths after each rejection
            below = bisect.bisect_left(ratios, c)        # r(t) < c q(t), draftable t
            above = len(ratios) - bisect.bisect_right(ratios, c) + never
            # X_2 = x itself is excluded: r(x) = 0 < c q(x), one of ``below``
            paths += count[v] * (positive + (below - 1) * above)
    total_law = sum(law.values(), Fraction(0))
    return Enumeration(labels=labels, law=law, acceptance=explicit,
                       explicit_acceptance=explicit, paths=paths, total=total_law,
                       used_drafts=True, used_accept=True,
                       seconds=time.perf_counter() - start)
