"""The optimum for ``k`` drafts: ``alpha*``, the accepted-token law ``a*``, tight prefixes.

For ``k`` i.i.d. drafts from ``q`` and target ``p`` (docs/math.md#the-optimum)::

    alpha*(p, q, k) = min over A of [ p(A) + 1 - q(A)^k ]
                    = min over B of [ g_k(q(B)) + p(V \\ B) ],    g_k(x) = 1 - (1 - x)^k,

and the second minimum is attained at a prefix ``B`` of the tokens sorted by ``q/p`` ascending.
:func:`optimum` computes it by the cumulative minimum ``F_j = min(F_{j-1} + p_j, g_k(Q_j))``,
which also gives one optimal accepted-token law ``a*`` and the tight prefixes.  Every value is
an exact ``Fraction``; the closed form is cross-checked by brute force over all subsets
(:func:`alpha_star_brute_force`) and by an exact max-flow over draft multisets
(:func:`alpha_star_max_flow`, which also handles drafts without replacement and SpecHub's hub
law).  :func:`law_optimum` gives the optimum of any of those draft laws by brute force over
cuts, and :func:`check_optimum` runs every cross-check that fits its budget.

>>> p = Dist.parse("1/2,3/10,1/5", labels="abc")
>>> q = Dist.parse("1/5,1/5,3/5", labels="abc")
>>> opt = optimum(p, q, 2)
>>> opt.alpha_star, opt.a_star
(Fraction(21, 25), Dist({'a': 9/25, 'b': 7/25, 'c': 1/5}))
>>> opt.order, opt.tight
(('a', 'b', 'c'), ('a', 'b'))
>>> check_optimum(p, q, 2)
{'closed_form': True, 'brute_force': True, 'max_flow': True}
"""

from __future__ import annotations

import math
import numbers
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations_with_replacement
from typing import Any

from ..core.budget import check_power, digits_of_bits
from ..core.dist import Dist, exact, exact_str, integer_row_of
from ..core.errors import InvalidInput, NotExact, TooLarge

__all__ = [
    "DRAFT_LAWS",
    "MAX_MULTISETS",
    "MAX_SUBSET_TOKENS",
    "Optimum",
    "g",
    "optimal_order",
    "optimum",
    "optimal_acceptance",
    "accepted_law",
    "alpha_star_brute_force",
    "alpha_star_max_flow",
    "draft_multisets",
    "draft_multiset_count",
    "law_optimum",
    "hub_optimum",
    "hub_token",
    "is_feasible",
    "infeasible_set",
    "check_optimum",
    "optimum_check_skips",
    "CHECK_FLOW_MULTISETS",
]

#: The draft laws with finitely many draft multisets that this module enumerates.
DRAFT_LAWS = ("iid", "wor", "hub")

#: Largest vocabulary that the subset enumerations (``2^n`` subsets) accept.
MAX_SUBSET_TOKENS = 20

#: Largest number of draft multisets (sets, for ``"wor"``) that an enumeration accepts.
MAX_MULTISETS = 200_000


# -- input handling ----------------------------------------------------------------------

def _check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise InvalidInput(f"k={k!r}: the number of drafts must be an integer")
    if k < 1:
        raise InvalidInput(f"k={k}: need at least one draft")
    return int(k)


def _check_law(law: Any) -> str:
    if law not in DRAFT_LAWS:
        raise InvalidInput(f"draft_law={law!r}: choose one of {', '.join(DRAFT_LAWS)}")
    return law


def _masses(d: Any, name: str, labels=None) -> Dist:
    """``d`` as a Dist of non-negative ``Fraction`` masses (no check of the sum)."""
    if isinstance(d, Dist):
        dist = d
    elif isinstance(d, Mapping) or labels is None:
        dist = Dist(d, name=name, check=False)
    else:
        dist = Dist(d, labels, name=name, check=False)
    row = dist._integer_row
    if dist._probs is None and row is not None and (not row[0] or min(row[0]) >= 0):
        return dist                               # exact, not read yet: keep it lazy
    if all(type(v) is Fraction for v in dist.probs):
        if any(v.numerator < 0 for v in dist.probs):
            i = next(i for i, v in enumerate(dist.probs) if v.numerator < 0)
            raise InvalidInput(f"{name}[{dist.labels[i]}] = {exact_str(dist.probs[i])} is "
                               "negative")
        return dist                               # already exact: keep it (and its rows)
    values = []
    for lab, v in zip(dist.labels, dist.probs):
        if not isinstance(v, Fraction):
            v = exact(v, f"{name}[{lab}]")
            if not isinstance(v, Fraction):
                raise NotExact(f"{name}[{lab}] = {exact_str(v)}: the optimum needs exact "
                               "rational probabilities, not symbolic ones")
        if v < 0:
            raise InvalidInput(f"{name}[{lab}] = {exact_str(v)} is negative")
        values.append(v)
    return Dist(values, dist.labels, check=False)


def _law(d: Any, name: str, labels=None) -> Dist:
    """``d`` as an exact probability law: ``Fraction`` entries summing to exactly 1."""
    dist = _masses(d, name, labels)
    row = integer_row_of(dist)
    total = Fraction(sum(row[0]), row[1]) if row else sum(dist.probs, Fraction(0))
    if total != 1:
        raise InvalidInput(f"{name} sums to {exact_str(total)}, not 1")
    return dist


def _same_labels(p: Dist, q: Dist, name: str = "q") -> None:
    if len(p) != len(q):
        raise InvalidInput(f"{name} has {len(q)} entries but p has {len(p)}")
    if p.labels != q.labels:
        raise InvalidInput(
            f"p and {name} have different labels: {list(p.labels)} vs {list(q.labels)}")


def _pair(p: Any, q: Any) -> tuple[Dist, Dist]:
    p = _law(p, "p")
    q = _law(q, "q", labels=p.labels)
    _same_labels(p, q)
    return p, q


# -- the closed form ---------------------------------------------------------------------

def g(k: int, x: Any) -> Any:
    """``g_k(x) = 1 - (1 - x)^k``: the chance that one of ``k`` i.i.d. drafts falls in a set of
    draft mass ``x``.

    Parameters
    ----------
    k : int
        The number of drafts.
    x : Fraction, int, str or sympy expression
        The draft mass of the set; read exactly (``"0.2"`` is ``1/5``).

    Returns
    -------
    Fraction or sympy expression
        Exact when ``x`` is.

    Examples
    --------
    >>> g(2, Fraction(1, 5)), g(3, "2/5"), g(1, Fraction(1, 3))
    (Fraction(9, 25), Fraction(98, 125), Fraction(1, 3))
    """
    x = exact(x, "x")
    check_power(1 - x, k, f"g_k(Q) = 1 - (1 - Q)^k at k = {k}")
    return 1 - (1 - x) ** k


def _order_indices(p: Dist, q: Dist) -> list[int]:
    """Indices by ``q/p`` ascending, ``p = 0`` last, ties by index, exactly.

    Equivalent to sorting with the cross-multiplied comparison ``q(s) p(t) < q(t) p(s)``; done
    as one sort by the correctly rounded float of ``q/p`` (rounding is monotone, so it never
    inverts two ratios), then an exact sort inside each run of equal floats.
    """
    pp, qq = p.probs, q.probs

    def rounded(i: int) -> float:
        a, b = qq[i], pp[i]
        try:   # int / int is correctly rounded
            return (a.numerator * b.denominator) / (a.denominator * b.numerator)
        except OverflowError:
            return math.inf

    positive = [i for i, v in enumerate(pp) if v != 0]
    floats = {i: rounded(i) for i in positive}
    keyed = sorted(positive, key=lambda i: (floats[i], i))
    order: list[int] = []
    start = 0
    while start < len(keyed):
        end = start + 1
        while end < len(keyed) and floats[keyed[end]] == floats[keyed[start]]:
            end += 1
        run = keyed[start:end]
        if len(run) > 1:                         # equal floats: the exact ratios decide
            run.sort(key=lambda i: (qq[i] / pp[i], i))
        order += run
        start = end
    return order + [i for i, v in enumerate(pp) if v == 0]


def optimal_order(p: Any, q: Any) -> tuple:
    """The tokens sorted by ``q/p`` ascending: tokens with ``p = 0`` last, ties by token index.

    Ratios are compared cross-multiplied (``q(s) p(t) < q(t) p(s)``), so nothing is divided;
    tokens with ``p = 0`` (ratio infinite, or ``0/0``) all tie and keep their index order.

    Parameters
    ----------
    p, q : Dist
        Target and draft laws over the same labels.

    Returns
    -------
    tuple
        The labels in that order.

    Examples
    --------
    >>> optimal_order(Dist.parse("1/2,3/10,1/5", labels="abc"),
    ...               Dist.parse("1/5,1/5,3/5", labels="abc"))
    ('a', 'b', 'c')
    >>> optimal_order(Dist.parse("0,1/2,1/2"), Dist.parse("1/3,1/3,1/3"))
    (1, 2, 0)
    """
    p, q = _pair(p, q)
    return tuple(p.labels[i] for i in _order_indices(p, q))


@dataclass(frozen=True)
class Optimum:
    """The optimum for ``k`` i.i.d. drafts, from the sorted-prefix closed form.

    Attributes
    ----------
    alpha_star : Fraction
        The largest acceptance ``P(Y in X)`` of any lossless verifier: ``F_n``.
    a_star : Dist
        One optimal accepted-token law, ``a*(t) = P(Y = t and Y in X)``; it sums to
        ``alpha_star``, not 1 (built with ``check=False``).  Other optimal laws may exist.
    order : tuple
        The labels sorted by ``q/p`` ascending (:func:`optimal_order`).
    tight : tuple
        The label ending each tight prefix, in ``order``: ``order[j - 1]`` for every
        ``j = 1..n`` with ``F_j = g_k(Q_j)``, i.e. ``a*(prefix_j) = g_k(q(prefix_j))``.
        Every such ``j`` counts, including two degenerate kinds: a prefix made only of tokens
        with ``q = 0`` (``F_j = 0 = g_k(0)``, tight vacuously: no draft ever falls in it), and
        a token with ``p = q = 0`` right after a tight prefix (its prefix is the same set up to
        a null token).  The last label is included exactly when the whole vocabulary is tight,
        i.e. when ``alpha_star = 1``.  Tight prefixes depend on the tie-breaking of ``order``.
    k : int
        The number of drafts.
    """

    alpha_star: Fraction
    a_star: Dist
    order: tuple
    tight: tuple
    k: int

    def to_json(self) -> dict:
        """The ``exactspec optimal --json`` fields (without ``checks``), values as exact text."""
        return {
            "k": self.k,
            "alpha_star": exact_str(self.alpha_star),
            "a_star": self.a_star.to_json(),
            "order": [str(t) for t in self.order],
            "tight": [str(t) for t in self.tight],
        }


def optimum(p: Any, q: Any, k: int) -> Optimum:
    """``alpha*``, ``a*``, the sorted order and the tight prefixes for ``k`` i.i.d. drafts.

    With the tokens in :func:`optimal_order` and prefix sums ``P_j``, ``Q_j``::

        F_0 = 0,   F_j = min(F_{j-1} + p_j, g_k(Q_j)),   a*_j = F_j - F_{j-1},   alpha* = F_n.

    Equivalent to ``min(p(A) + 1 - q(A)**k for A in subsets(V))`` for ``alpha*``
    (:func:`alpha_star_brute_force`), in ``O(n log n)`` exact operations.

    Parameters
    ----------
    p, q : Dist
        Target and draft laws over the same labels, exact rationals summing to 1.
    k : int
        The number of i.i.d. drafts, at least 1.

    Returns
    -------
    Optimum

    Examples
    --------
    >>> opt = optimum(Dist.parse("1/2,3/10,1/5", labels="abc"),
    ...               Dist.parse("1/5,1/5,3/5", labels="abc"), 4)
    >>> opt.alpha_star, opt.a_star, opt.tight
    (Fraction(1, 1), Dist({'a': 1/2, 'b': 3/10, 'c': 1/5}), ('c',))
    """
    p, q = _pair(p, q)
    k = _check_k(k)
    rows = integer_row_of(p), integer_row_of(q)
    if rows[0] is not None and rows[1] is not None:
        return _optimum_on_integers(p, q, k, *rows)
    order = _order_indices(p, q)
    a = [Fraction(0)] * len(p)
    tight = []
    f = Fraction(0)
    q_prefix = Fraction(0)
    for i in order:
        q_prefix += q.probs[i]
        cap = g(k, q_prefix)
        free = f + p.probs[i]
        new = cap if cap <= free else free      # F_j = g_k(Q_j) exactly when cap <= free
        if cap <= free:
            tight.append(p.labels[i])
        a[i] = new - f
        f = new
    assert q_prefix == 1 and 0 <= f <= 1
    return Optimum(
        alpha_star=f,
        a_star=Dist(a, p.labels, check=False),
        order=tuple(p.labels[i] for i in order),
        tight=tuple(tight),
        k=k,
    )


def _order_of_integers(pp: list[int], qq: list[int]) -> list[int]:
    """:func:`_order_indices` on integer rows (``p = P / D_p``, ``q = Q / D_q``): the ratios
    ``q/p`` are ``Q/P`` times one positive constant, so they sort the same way."""
    def rounded(i: int) -> float:
        try:   # int / int is correctly rounded
            return qq[i] / pp[i]
        except OverflowError:
            return math.inf

    positive = [i for i, v in enumerate(pp) if v != 0]
    if len(positive) < 4096:
        floats = {i: rounded(i) for i in positive}
        keyed = sorted(positive, key=lambda i: (floats[i], i))
        equal_to_next = [floats[a] == floats[b] for a, b in zip(keyed, keyed[1:])]
    else:                                        # long rows: one stable sort in NumPy
        import numpy as np

        ratios = np.array([rounded(i) for i in positive], dtype=np.float64)
        by_ratio = np.argsort(ratios, kind="stable")       # ties stay in index order
        keyed = np.asarray(positive, dtype=np.int64)[by_ratio].tolist()
        sorted_ratios = ratios[by_ratio]
        equal_to_next = (sorted_ratios[1:] == sorted_ratios[:-1]).tolist()
    order: list[int] = []
    start = 0
    while start < len(keyed):
        end = start + 1
        while end < len(keyed) and equal_to_next[end - 1]:
            end += 1
        if end - start > 1:                      # equal floats: the exact ratios decide
            run = keyed[start:end]
            run.sort(key=lambda i: (Fraction(qq[i], pp[i]), i))
            order += run
        else:
            order.append(keyed[start])
        start = end
    return order + [i for i, v in enumerate(pp) if v == 0]


def _optimum_on_integers(p: Dist, q: Dist, k: int, p_row, q_row) -> Optimum:
    """:func:`optimum` by integer arithmetic: ``p = P / D_p``, ``q = Q / D_q`` and every
    ``F_j`` an integer over ``D = D_p D_q^k``, with ``g_k(S / D_q) D = (D_q^k - (D_q - S)^k)
    D_p``.  The same order, the same comparisons, the same values as the ``Fraction`` loop."""
    pp, d_p = p_row
    qq, d_q = q_row
    order = _order_of_integers(pp, qq)
    d_qk = d_q ** k
    d = d_p * d_qk
    a = [x * d_qk for x in pp]         # a*_j = p_j wherever F_j = F_(j-1) + p_j; over d
    tight = []
    tight_at = []
    f = 0
    s = 0
    for i in order:
        s += qq[i]
        cap = (d_qk - (d_q - s) ** k) * d_p
        free = f + a[i]
        if cap <= free:
            tight.append(p.labels[i])
            tight_at.append(i)
            a[i] = cap - f
            f = cap
        else:
            f = free
    assert s == d_q and 0 <= f <= d
    return Optimum(
        alpha_star=Fraction(f, d),
        # the Fractions are built when read; untight entries are p's own
        a_star=Dist._over_row(p, (a, d), changed=tight_at),
        order=tuple(map(p.labels.__getitem__, order)),
        tight=tuple(tight),
        k=k,
    )


def optimal_acceptance(p: Any, q: Any, k: int) -> Fraction:
    """``alpha*(p, q, k)``: the best acceptance of a lossless verifier with ``k`` i.i.d. drafts.

    Equivalent to ``optimum(p, q, k).alpha_star``.

    >>> optimal_acceptance(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 3)
    Fraction(123, 125)
    """
    return optimum(p, q, k).alpha_star


def accepted_law(p: Any, q: Any, k: int) -> Dist:
    """``a*``: one optimal accepted-token law, ``a*(t) = P(Y = t and Y in X)``; sums to ``alpha*``.

    Equivalent to ``optimum(p, q, k).a_star``.

    >>> accepted_law(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 3)
    Dist({0: 61/125, 1: 37/125, 2: 1/5})
    """
    return optimum(p, q, k).a_star


# -- brute force over subsets ------------------------------------------------------------

def _refuse_subsets(n: int, what: str) -> None:
    if n > MAX_SUBSET_TOKENS:
        raise TooLarge(
            f"{what} enumerates all 2^{n} = {2 ** n} subsets of {n} tokens; the budget is "
            f"{MAX_SUBSET_TOKENS} tokens (2^{MAX_SUBSET_TOKENS} subsets)",
            estimate=2 ** n, budget=2 ** MAX_SUBSET_TOKENS)


def _gray_subsets(n: int, *vectors) -> Iterator[tuple]:
    """Yield ``(mask, sum of each vector over the subset)`` for every subset, in Gray order."""
    sums = [Fraction(0) for _ in vectors]
    mask = 0
    yield (mask, *sums)
    for step in range(1, 1 << n):
        bit = (step & -step).bit_length() - 1
        mask ^= 1 << bit
        sign = 1 if mask >> bit & 1 else -1
        for s, vec in enumerate(vectors):
            sums[s] += sign * vec[bit]
        yield (mask, *sums)


def alpha_star_brute_force(p: Any, q: Any, k: int) -> Fraction:
    """``alpha*`` as the minimum cut over every subset of the vocabulary.

    Equivalent to ``min(p(A) + 1 - q(A)**k for A in subsets(V))`` (``A`` empty gives 1).
    Independent of the sorted order; refuses vocabularies above :data:`MAX_SUBSET_TOKENS`.

    >>> alpha_star_brute_force(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 2)
    Fraction(21, 25)
    """
    p, q = _pair(p, q)
    k = _check_k(k)
    _refuse_subsets(len(p), "the brute-force optimum")
    return min(pa + 1 - qa ** k for _, pa, qa in _gray_subsets(len(p), p.probs, q.probs))


def infeasible_set(a: Any, q: Any, k: int) -> tuple | None:
    """A set ``A`` with ``a(A) > g_k(q(A))``, or ``None`` when ``a`` is feasible.

    ``a`` is a non-negative mass vector (an accepted-token law, summing to at most 1) over
    ``q``'s labels.  It is realisable as ``P(Y = t and Y in X)`` by ``k`` i.i.d. drafts exactly
    when no such set exists and ``a <= 1``; this checks every subset (small vocabularies).

    >>> infeasible_set(Dist([Fraction(1, 2), 0], check=False), Dist.parse("1/5,4/5"), 2)
    (0,)
    """
    q = _law(q, "q")
    a = _masses(a, "a", labels=q.labels)
    _same_labels(q, a, "a")
    k = _check_k(k)
    _refuse_subsets(len(q), "the feasibility check")
    for mask, aa, qa in _gray_subsets(len(q), a.probs, q.probs):
        if aa > g(k, qa):
            return tuple(lab for i, lab in enumerate(q.labels) if mask >> i & 1)
    return None


def is_feasible(a: Any, q: Any, k: int) -> bool:
    """Whether ``a(A) <= g_k(q(A))`` for every subset ``A`` (brute force over subsets).

    Equivalent to ``all(a(A) <= 1 - (1 - q(A))**k for A in subsets(V))``: ``a`` lies in the
    polymatroid of ``A -> g_k(q(A))``.

    >>> p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
    >>> is_feasible(accepted_law(p, q, 2), q, 2), is_feasible(p, q, 2)
    (True, False)
    """
    return infeasible_set(a, q, k) is None


# -- draft multisets ---------------------------------------------------------------------

def hub_token(q: Any):
    """SpecHub's hub: ``argmax q``, ties broken by the smallest token index.

    >>> hub_token(Dist.parse("1/4,3/8,3/8", labels="abc"))
    'b'
    """
    q = _law(q, "q")
    return q.labels[_hub_index(q)]


def _hub_index(q: Dist) -> int:
    return max(range(len(q)), key=lambda i: (q.probs[i], -i))


def _check_draft_law(q: Dist, k: int, law: str) -> list[int]:
    """Validate ``(q, k, law)``; return the indices of ``q``'s support."""
    support = [i for i, v in enumerate(q.probs) if v != 0]
    if law == "wor" and k > len(support):
        raise InvalidInput(
            f"k={k}: drafting without replacement needs k <= {len(support)}, the number of "
            "tokens q can draft")
    if law == "hub":
        if k != 2:
            raise InvalidInput(f"k={k}: the hub draft law has exactly 2 drafts")
        hub = _hub_index(q)
        if q.probs[hub] == 1:
            raise InvalidInput(
                f"q is a point mass on {q.labels[hub]!r}: the hub draft law needs a second "
                "token to draft")
    return support


def draft_multiset_count(q: Any, k: int, law: str = "iid") -> int:
    """The number of distinct draft multisets: ``C(m + k - 1, k)`` for ``"iid"``, ``C(m, k)``
    for ``"wor"`` (sets), ``m - 1`` for ``"hub"``, with ``m`` the size of ``q``'s support.

    >>> draft_multiset_count(Dist.parse("1/5,1/5,3/5"), 2), draft_multiset_count(
    ...     Dist.parse("1/5,1/5,3/5"), 2, "wor")
    (6, 3)
    """
    q = _law(q, "q")
    k = _check_k(k)
    law = _check_law(law)
    m = len(_check_draft_law(q, k, law))
    if law == "iid":
        return math.comb(m + k - 1, k)
    if law == "wor":
        return math.comb(m, k)
    return m - 1


def draft_multisets(q: Any, k: int, law: str = "iid", *,
                    budget: int = MAX_MULTISETS) -> Iterator[tuple[tuple, Fraction]]:
    """Every draft multiset of ``k`` drafts with its exact probability; the probabilities sum
    to exactly 1.

    Multisets are tuples of labels in token order, one per distinct multiset, in a fixed order.

    Parameters
    ----------
    q : Dist
        The draft law.
    k : int
        The number of drafts.
    law : {"iid", "wor", "hub"}
        ``"iid"``: ``X_1..X_k`` independent, each ``~ q`` (multinomial weights).
        ``"wor"``: without replacement, ``X_1 ~ q``, then ``q`` restricted to the tokens not
        yet drawn and renormalised; yields each set of ``k`` distinct tokens with the total
        probability of its orderings (needs ``k <=`` the size of ``q``'s support).
        ``"hub"`` (SpecHub, ``k = 2``): ``a = argmax q`` (ties by index), ``X_1 ~ q``, then
        ``X_2 = a`` if ``X_1 != a``, else ``X_2 ~ q`` restricted to ``V \\ {a}``; yields
        ``{a, i}`` with probability ``q(i) / (1 - q(a))`` (refuses a point mass ``q``).
    budget : int
        Refuse with :class:`TooLarge` when the enumeration would exceed this many multisets
        (for ``"wor"``, counting the shorter prefix sets its exact recursion visits).

    Returns
    -------
    iterator of (tuple, Fraction)
        Validation and the size check happen at the call, the enumeration lazily.

    Examples
    --------
    >>> list(draft_multisets(Dist.parse("1/3,2/3", labels="ab"), 2))
    [(('a', 'a'), Fraction(1, 9)), (('a', 'b'), Fraction(4, 9)), (('b', 'b'), Fraction(4, 9))]
    >>> list(draft_multisets(Dist.parse("1/2,1/4,1/4", labels="abc"), 2, "wor"))
    [(('a', 'b'), Fraction(5, 12)), (('a', 'c'), Fraction(5, 12)), (('b', 'c'), Fraction(1, 6))]
    """
    q = _law(q, "q")
    k = _check_k(k)
    law = _check_law(law)
    support = _check_draft_law(q, k, law)
    m = len(support)
    if law == "iid":
        estimate = math.comb(m + k - 1, k)
    elif law == "wor":
        estimate = sum(math.comb(m, i) for i in range(1, k + 1))
    else:
        estimate = m - 1
    if estimate > budget:
        raise TooLarge(
            f"draft_law={law!r} with k={k} over the {m} tokens q can draft: about {estimate} "
            f"draft multisets to enumerate exactly, over the budget of {budget}",
            estimate=estimate, budget=budget)
    weight_bits = max(k * max(q.probs[i].denominator.bit_length() for i in support), 1)
    digits = estimate * digits_of_bits(weight_bits)
    if digits > 10**7:
        raise TooLarge(
            f"draft_law={law!r} with k={k}: {estimate} draft multisets whose exact weights hold "
            f"about {digits:,} digits together, over the budget of 10,000,000 digits",
            estimate=digits, budget=10**7)
    if law == "iid":
        return _iid_multisets(q, k, support)
    if law == "wor":
        return _wor_sets(q, k, support)
    return _hub_pairs(q, support)


def _iid_multisets(q: Dist, k: int, support: list[int]) -> Iterator[tuple[tuple, Fraction]]:
    for combo in combinations_with_replacement(support, k):
        counts = Counter(combo)
        weight = Fraction(math.factorial(k))
        for i, c in counts.items():
            weight *= q.probs[i] ** c / math.factorial(c)
        yield tuple(q.labels[i] for i in combo), weight


def _wor_sets(q: Dist, k: int, support: list[int]) -> Iterator[tuple[tuple, Fraction]]:
    # layer[T] = P(the first |T| drafts are the tokens of T, in some order)
    layer: dict[tuple, Fraction] = {(): Fraction(1)}
    for _ in range(k):
        nxt: dict[tuple, Fraction] = {}
        for drawn, weight in layer.items():
            left = 1 - sum((q.probs[i] for i in drawn), Fraction(0))
            for i in support:
                if i in drawn:
                    continue
                key = tuple(sorted(drawn + (i,)))
                nxt[key] = nxt.get(key, Fraction(0)) + weight * q.probs[i] / left
        layer = nxt
    for drawn in sorted(layer):
        yield tuple(q.labels[i] for i in drawn), layer[drawn]


def _hub_pairs(q: Dist, support: list[int]) -> Iterator[tuple[tuple, Fraction]]:
    hub = _hub_index(q)
    rest = 1 - q.probs[hub]
    for i in support:
        if i != hub:
            pair = (min(i, hub), max(i, hub))
            yield tuple(q.labels[j] for j in pair), q.probs[i] / rest


# -- exact max flow ----------------------------------------------------------------------

def transport_flow(labels: tuple, caps, multisets, flow_func=None):
    """Exact max flow source -> multiset (capacity P(X)) -> token in X -> sink (``caps[t]``).

    Returns ``(value, residual)``: the flow value as a ``Fraction`` and networkx's residual
    network, whose edge ``("drafts", X) -> ("token", t)`` carries the flow routed from ``X``
    to ``t`` (``residual[u][v]["flow"]``, exact).
    """
    import networkx as nx
    from networkx.algorithms.flow import shortest_augmenting_path

    flow_func = shortest_augmenting_path if flow_func is None else flow_func
    graph = nx.DiGraph()
    source, sink = ("source",), ("sink",)
    graph.add_node(source)
    graph.add_node(sink)
    position = {t: i for i, t in enumerate(labels)}
    for drafts, weight in multisets:
        node = ("drafts", drafts)
        graph.add_edge(source, node, capacity=weight)
        for t in sorted(set(drafts), key=position.__getitem__):   # token order, every process
            # never binding: at most P(X) enters the multiset's node
            graph.add_edge(node, ("token", t), capacity=weight)
    for t, cap in zip(labels, caps):
        if cap != 0:
            graph.add_edge(("token", t), sink, capacity=cap)
    residual = flow_func(graph, source, sink)
    value = residual.graph["flow_value"]
    # exactness invariant: the flow algorithm must not have gone through floats
    assert isinstance(value, (int, Fraction)) and not isinstance(value, bool), type(value)
    assert all(isinstance(d["flow"], (int, Fraction)) for _, _, d in residual.edges(data=True))
    return Fraction(value), residual


def _max_flow(labels: tuple, caps, multisets, flow_func=None) -> Fraction:
    """The value of :func:`transport_flow`."""
    return transport_flow(labels, caps, multisets, flow_func)[0]


def alpha_star_max_flow(p: Any, q: Any, k: int, draft_law: str = "iid", *,
                        flow_func=None, budget: int = MAX_MULTISETS) -> Fraction:
    """The optimal acceptance for a draft law, as an exact max flow over draft multisets.

    The network is source -> draft multiset ``X`` (capacity ``P(X)``) -> each token in ``X``
    -> sink (capacity ``p(t)``); its value is the largest ``P(Y in X)`` of a lossless verifier
    for that draft law (``alpha*`` for ``"iid"``).  Capacities are ``Fraction`` values and the flow
    stays exact (checked).

    Parameters
    ----------
    p, q : Dist
        Target and draft laws.
    k : int
        The number of drafts.
    draft_law : {"iid", "wor", "hub"}
        See :func:`draft_multisets`.
    flow_func : callable, optional
        A networkx max-flow algorithm returning a residual network; default
        ``shortest_augmenting_path`` (the fastest here on multiset networks).
        Every networkx algorithm (``edmonds_karp``, ``shortest_augmenting_path``,
        ``preflow_push``, ``dinitz``, ``boykov_kolmogorov``) stays exact with ``Fraction``
        capacities; ``edmonds_karp`` is far slower on networks of thousands of multisets.
    budget : int
        Refuse with :class:`TooLarge` above this many draft multisets.

    Examples
    --------
    >>> alpha_star_max_flow(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 2)
    Fraction(21, 25)
    """
    p, q = _pair(p, q)
    multisets = draft_multisets(q, k, draft_law, budget=budget)
    return _max_flow(p.labels, p.probs, multisets, flow_func)


def _realisable_by_flow(a: Dist, q: Dist, k: int, flow_func=None,
                        budget: int = MAX_MULTISETS) -> bool:
    """Whether ``a`` is a realisable accepted-token law for ``k`` i.i.d. drafts."""
    total = sum(a.probs, Fraction(0))
    value = _max_flow(a.labels, a.probs, draft_multisets(q, k, "iid", budget=budget), flow_func)
    return value == total


# -- the optimum of other draft laws -----------------------------------------------------

def law_optimum(p: Any, q: Any, k: int, law: str = "iid") -> Fraction:
    """The optimal acceptance for a draft law, by brute force over cuts.

    Equivalent to ``1 + min(p(H) - P(all drafts in H) for H in subsets(V))``, with
    ``P(all drafts in H)`` summed over :func:`draft_multisets`.  Only subsets of ``q``'s
    support need checking (a token ``q`` never drafts only adds ``p``); refuses supports above
    :data:`MAX_SUBSET_TOKENS` tokens.  For ``"iid"`` this is ``alpha*``; for ``"hub"`` it
    equals :func:`hub_optimum`.

    >>> p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/10,3/10,3/5")
    >>> law_optimum(p, q, 2, "iid"), law_optimum(p, q, 2, "wor"), law_optimum(p, q, 2, "hub")
    (Fraction(69, 100), Fraction(111, 140), Fraction(3, 4))
    """
    p, q = _pair(p, q)
    k = _check_k(k)
    law = _check_law(law)
    support = _check_draft_law(q, k, law)
    m = len(support)
    _refuse_subsets(m, f"the {law!r} optimum")
    bit = {p.labels[i]: j for j, i in enumerate(support)}
    inside = [Fraction(0)] * (1 << m)           # inside[H] = P(the set of drafts is H)
    for drafts, weight in draft_multisets(q, k, law):
        mask = 0
        for t in drafts:
            mask |= 1 << bit[t]
        inside[mask] += weight
    for j in range(m):                          # now inside[H] = P(all drafts in H)
        step = 1 << j
        for mask in range(1 << m):
            if mask & step:
                inside[mask] += inside[mask ^ step]
    p_support = [p.probs[i] for i in support]
    best = Fraction(0)                          # H empty
    for mask, p_h in _gray_subsets(m, p_support):
        best = min(best, p_h - inside[mask])
    return 1 + best


def hub_optimum(p: Any, q: Any) -> Fraction:
    """The optimal acceptance under SpecHub's hub draft law (``k = 2``), in closed form.

    Equivalent to ``p(a) + sum(min(p(i), q(i) / (1 - q(a))) for i != a)`` with
    ``a = argmax q`` (:func:`hub_token`); refuses a point-mass ``q``.

    >>> hub_optimum(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/10,3/10,3/5"))
    Fraction(3, 4)
    """
    p, q = _pair(p, q)
    _check_draft_law(q, 2, "hub")
    hub = _hub_index(q)
    rest = 1 - q.probs[hub]
    total = p.probs[hub]
    for i in range(len(p)):
        if i != hub:
            total += min(p.probs[i], q.probs[i] / rest)
    return total


# -- all checks --------------------------------------------------------------------------

#: Largest number of i.i.d. draft multisets for the max-flow cross-check of
#: :func:`check_optimum` (two exact max flows; about 1 s at 2,000 multisets on one core).
CHECK_FLOW_MULTISETS = 5_000


def check_optimum(p: Any, q: Any, k: int) -> dict:
    """Cross-check the closed-form optimum every independent way that fits its budget.

    Returns the ``checks`` object of ``exactspec optimal --json``:

    - ``"closed_form"``: ``0 <= a* <= p`` and ``sum a* = alpha*`` (always ``True``);
    - ``"brute_force"``: ``alpha*`` equals the minimum over all subsets
      (:func:`alpha_star_brute_force`) and ``a*`` is feasible (:func:`is_feasible`);
    - ``"max_flow"``: ``alpha*`` equals the exact max flow over i.i.d. draft multisets, and the
      flow with sink capacities ``a*`` saturates them (``a*`` is realisable).

    A value is ``None`` when that check was skipped as too large (:class:`TooLarge`): the
    brute force above :data:`MAX_SUBSET_TOKENS` tokens, the max flow above
    :data:`CHECK_FLOW_MULTISETS` draft multisets (:func:`optimum_check_skips` says why).

    >>> check_optimum(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 3)
    {'closed_form': True, 'brute_force': True, 'max_flow': True}
    """
    return _checks_and_skips(p, q, k)[0]


def optimum_check_skips(p: Any, q: Any, k: int) -> dict:
    """Why each skipped check of :func:`check_optimum` was skipped: ``{name: reason}``.

    >>> optimum_check_skips(Dist.parse("1/2,1/2"), Dist.parse("1/2,1/2"), 2)
    {}
    """
    p, q = _pair(p, q)
    k = _check_k(k)
    skips = {}
    if len(p) > MAX_SUBSET_TOKENS:
        skips["brute_force"] = (f"2^{len(p)} subsets of {len(p)} tokens, over the budget of "
                                f"{MAX_SUBSET_TOKENS} tokens")
    count = draft_multiset_count(q, k)
    if count > CHECK_FLOW_MULTISETS:
        skips["max_flow"] = (f"{count} draft multisets, over the budget of "
                             f"{CHECK_FLOW_MULTISETS} for the max-flow cross-check")
    return skips


def _checks_and_skips(p: Any, q: Any, k: int, opt: Optimum | None = None
                      ) -> tuple[dict, dict]:
    """:func:`check_optimum` and :func:`optimum_check_skips` together, of ``opt`` when the
    caller has computed the optimum already (it is not computed twice)."""
    p, q = _pair(p, q)
    k = _check_k(k)
    if opt is None:
        opt = optimum(p, q, k)
    a = opt.a_star
    checks: dict[str, bool | None] = {
        "closed_form": bool(
            all(0 <= a[t] <= p[t] for t in p.labels)
            and sum(a.probs, Fraction(0)) == opt.alpha_star),
        "brute_force": None,
        "max_flow": None,
    }
    try:
        checks["brute_force"] = bool(
            alpha_star_brute_force(p, q, k) == opt.alpha_star and is_feasible(a, q, k))
    except TooLarge:
        pass
    try:
        budget = CHECK_FLOW_MULTISETS
        checks["max_flow"] = bool(
            alpha_star_max_flow(p, q, k, budget=budget) == opt.alpha_star
            and _realisable_by_flow(a, q, k, budget=budget))
    except TooLarge:
        pass
    return checks, optimum_check_skips(p, q, k)
