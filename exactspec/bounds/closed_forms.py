"""Closed forms for multi-draft acceptance, and ``same``: a closed form against the engine.

Each closed form here is the formula of docs/methods.md or docs/math.md written directly, sharing no
code with the methods; the tests set it against the exact enumeration of the method with
:func:`same`.

- :func:`rrs_acceptance`: ``1 - prod_{i=1..k} TV(r_{i-1}, q)`` (RRS, i.i.d. drafts);
- :func:`kseq_beta`, :func:`kseq_acceptance`: ``beta(rho) = sum_x min(p(x)/rho, q(x))`` and
  ``p_acc(rho) = 1 - (1 - beta(rho))^k``, K-SEQ's explicit-accept probability at ``rho``;
- :func:`spechub_acceptance`: ``p(a) + sum_{i != a} min(p(i), q(i) / (1 - q(a)))``;
- :data:`KHISTI_FIGURE_2`, :data:`SEED_TABLE`: external check values.

>>> from exactspec.core.dist import Dist
>>> p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
>>> [rrs_acceptance(p, q, k) for k in (1, 2, 3, 4)]
[Fraction(3, 5), Fraction(19, 25), Fraction(207, 250), Fraction(539, 625)]
>>> kseq_acceptance(p, q, 2, 2)
Fraction(279, 400)
>>> same(lambda k: rrs_acceptance(p, q, k), lambda k: acceptance_of("rrs", p, q, k), [1, 2, 3])
[]
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Iterable

from ..core.dist import Dist, integer_row_of, law_distance
from ..methods.kseq import kseq_beta

__all__ = ["same", "acceptance_of", "explicit_acceptance_of", "rrs_acceptance",
           "rrs_residuals", "kseq_beta", "kseq_acceptance", "spechub_acceptance",
           "khisti_alpha_star", "optimum_common_denominator", "KHISTI_FIGURE_2", "SEED_TABLE",
           "SEED_P", "SEED_Q", "exact_ratio_order"]

F = Fraction


def same(closed_form: Callable, enumeration: Callable, cases: Iterable) -> list:
    """The cases where ``closed_form(case) != enumeration(case)``, as
    ``(case, closed, enumerated)`` triples; an empty list means they agree on every case.

    A case that is a tuple is unpacked into the arguments.

    >>> same(lambda a, b: a + b, lambda a, b: b + a, [(1, 2), (3, 4)])
    []
    >>> same(abs, lambda x: x, [-1, 2])
    [(-1, 1, -1)]
    """
    differ = []
    for case in cases:
        args = case if isinstance(case, tuple) else (case,)
        closed, enumerated = closed_form(*args), enumeration(*args)
        if closed != enumerated:
            differ.append((case, closed, enumerated))
    return differ


def acceptance_of(method, p, q, k: int = 1):
    """``P(Y in X)`` of ``method`` on ``(p, q, k)``, by exact enumeration of every path."""
    from ..verify import verify

    return verify(method, p, q, k, max_paths=None).acceptance


def explicit_acceptance_of(method, p, q, k: int = 1):
    """The probability that ``method`` explicitly accepts a draft, by exact enumeration."""
    from ..verify import verify

    return verify(method, p, q, k, max_paths=None).explicit_acceptance


def rrs_residuals(p: Dist, q: Dist, k: int) -> list:
    """``[r_0, r_1, ...]``: RRS's residuals as lists, ``r_0 = p``,
    ``r_i = norm(max(0, r_{i-1} - q))``; stops early when ``r_i = q`` (no more rejections)."""
    r = list(p.probs)
    qs = list(q.probs)
    chain = [r]
    for _ in range(k):
        excess = [max(a - b, 0) for a, b in zip(r, qs)]
        total = sum(excess, F(0))
        if total == 0:
            break
        r = [e / total for e in excess]
        chain.append(r)
    return chain


def rrs_acceptance(p: Dist, q: Dist, k: int) -> Fraction:
    """RRS's acceptance ``1 - prod_{i=1..k} TV(r_{i-1}, q)`` (docs/math.md#rrs-and-the-tight-ratio).

    >>> rrs_acceptance(Dist.parse("5/9,4/9"), Dist.parse("1/3,2/3"), 2)
    Fraction(23, 27)
    """
    rows = integer_row_of(p), integer_row_of(q)
    if rows[0] is not None and rows[1] is not None:
        return _rrs_acceptance_on_integers(*rows, k)
    qs = list(q.probs)
    chain = rrs_residuals(p, q, k)
    product = F(1)
    for i in range(k):
        if i >= len(chain):        # r_{i-1} = q: that step accepted surely
            return F(1)
        product *= law_distance(chain[i], qs)
        if product == 0:
            return F(1)
    return 1 - product


def _rrs_acceptance_on_integers(p_row, q_row, k: int) -> Fraction:
    """:func:`rrs_acceptance` by integers: ``r_(i-1) = R / D_r``, ``q = Q / D_q``, the excess
    ``max(0, R D_q - Q D_r)`` over ``D_r D_q`` is ``TV(r_(i-1), q)`` and, renormalised, the
    next residual (same values as the ``Fraction`` chain)."""
    r, d_r = p_row
    qq, d_q = q_row
    product = F(1)
    for _ in range(k):
        excess = [x for x in (a * d_q - b * d_r for a, b in zip(r, qq))]
        excess = [x if x > 0 else 0 for x in excess]
        total = sum(excess)
        if total == 0:                 # r_(i-1) = q: that step accepted surely
            return F(1)
        product *= F(total, d_r * d_q)
        r, d_r = excess, total
    return 1 - product


def kseq_acceptance(p: Dist, q: Dist, k: int, rho) -> Any:
    """``p_acc(rho) = 1 - (1 - beta(rho))^k``: K-SEQ's probability of an explicit accept."""
    return 1 - (1 - kseq_beta(p, q, rho)) ** k


def spechub_acceptance(p: Dist, q: Dist) -> Fraction:
    """SpecHub's acceptance ``p(a) + sum_{i != a} min(p(i), q(i) / (1 - q(a)))``, with
    ``a = argmax q`` (ties by the smallest index).

    >>> spechub_acceptance(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/10,3/10,3/5"))
    Fraction(3, 4)
    """
    probs = list(q.probs)
    a = max(range(len(probs)), key=lambda i: (probs[i], -i))
    rest = 1 - probs[a]
    return p.probs[a] + sum((min(p.probs[i], probs[i] / rest) for i in range(len(probs))
                             if i != a), F(0))


def khisti_alpha_star(x) -> Fraction:
    """Khisti et al.'s Fig. 2 optimum: draft uniform on 3 tokens, ``k = 2``, target
    ``(1/3, x, 2/3 - x)``: ``1 - max(0, 1/9 - x, x - 5/9)``."""
    return 1 - max(F(0), F(1, 9) - x, x - F(5, 9))


#: Khisti et al., Fig. 2 (draft uniform on 3 tokens, k = 2): ``(target, alpha*, RRS)``.
KHISTI_FIGURE_2 = [
    ((F(1, 3), F(0), F(2, 3)), F(8, 9), F(7, 9)),
    ((F(1, 3), F(1, 12), F(7, 12)), F(35, 36), F(5, 6)),
    ((F(1, 3), F(1, 6), F(1, 2)), F(1), F(8, 9)),
    ((F(1, 3), F(1, 4), F(5, 12)), F(1), F(17, 18)),
    ((F(1, 6), F(0), F(5, 6)), F(13, 18), F(2, 3)),
]

SEED_P = Dist([F(1, 2), F(3, 10), F(1, 5)], "abc")
SEED_Q = Dist([F(1, 5), F(1, 5), F(3, 5)], "abc")

#: docs/math.md#worked-values, the seed example: ``(k, alpha*, a*, RRS acceptance)``.
SEED_TABLE = [
    (1, F(3, 5), (F(1, 5), F(1, 5), F(1, 5)), F(3, 5)),
    (2, F(21, 25), (F(9, 25), F(7, 25), F(1, 5)), F(19, 25)),
    (3, F(123, 125), (F(61, 125), F(37, 125), F(1, 5)), F(207, 250)),
    (4, F(1), (F(1, 2), F(3, 10), F(1, 5)), F(539, 625)),
]


def optimum_common_denominator(p: Dist, q: Dist, k: int):
    """``alpha*``, ``a*``, the order and the tight prefixes (an
    :class:`~exactspec.optimum.alpha_star.Optimum`) by the sorted cumulative minimum of docs/math.md#the-optimum,
    computed on integers over one common denominator.

    The same closed form as :func:`exactspec.optimum.alpha_star.optimum`, written independently for
    scale: with ``p = P / D_p`` and ``q = Q / D_q`` (integers ``P``, ``Q``), every ``F_j`` is an
    integer over ``D_p D_q^k``, so the scan needs no gcd; the order is sorted by the exact key
    ``Q_t / P_t``.  This is what makes ``alpha*`` exact at full vocabulary size from float
    inputs converted without loss (whose binary denominators can reach ``2^1074``).
    Tokens are sorted by the correctly rounded float of ``Q_t / P_t`` (rounding is monotone),
    and only runs of equal floats are re-sorted by the exact ratio.

    >>> opt = optimum_common_denominator(SEED_P, SEED_Q, 2)
    >>> opt.alpha_star, opt.a_star, opt.tight
    (Fraction(21, 25), Dist({'a': 9/25, 'b': 7/25, 'c': 1/5}), ('a', 'b'))
    """
    import math

    from ..optimum.alpha_star import Optimum, check_k, law_pair

    p, q = law_pair(p, q)
    k = check_k(k)
    dp = math.lcm(*(v.denominator for v in p.probs))
    dq = math.lcm(*(v.denominator for v in q.probs))
    big_p = [v.numerator * (dp // v.denominator) for v in p.probs]
    big_q = [v.numerator * (dq // v.denominator) for v in q.probs]
    n = len(big_p)
    order = exact_ratio_order(big_p, big_q)
    dqk = dq ** k
    scale = dp * dqk                      # F_j * scale is an integer
    f = q_sum = 0
    a = [0] * n
    tight = []
    for i in order:
        q_sum += big_q[i]
        cap = dp * (dqk - (dq - q_sum) ** k)
        free = f + big_p[i] * dqk
        if cap <= free:
            tight.append(p.labels[i])
            new = cap
        else:
            new = free
        a[i] = new - f
        f = new
    return Optimum(alpha_star=F(f, scale), a_star=Dist([F(v, scale) for v in a], p.labels,
                                                        check=False),
                   order=tuple(p.labels[i] for i in order), tight=tuple(tight), k=k)


def exact_ratio_order(big_p: list, big_q: list) -> list:
    """Token indices by ``Q/P`` ascending (``P = 0`` last, ties by index), exactly."""
    def rounded(i):
        try:
            return big_q[i] / big_p[i]       # int / int is correctly rounded, hence monotone
        except OverflowError:
            return float("inf")

    positive = [i for i, v in enumerate(big_p) if v]
    floats = {i: rounded(i) for i in positive}
    keyed = sorted(positive, key=lambda i: (floats[i], i))
    order, start = [], 0
    while start < len(keyed):
        end = start + 1
        head = floats[keyed[start]]
        while end < len(keyed) and floats[keyed[end]] == head:
            end += 1
        run = keyed[start:end]
        if len(run) > 1:     # equal floats: the exact ratios decide
            run.sort(key=lambda i: (F(big_q[i], big_p[i]), i))
        order += run
        start = end
    return order + [i for i, v in enumerate(big_p) if not v]
