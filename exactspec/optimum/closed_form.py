"""The closed form of the optimum for ``k`` i.i.d. drafts: ``alpha*``, ``a*``, tight prefixes.

For ``k`` i.i.d. drafts from ``q`` and target ``p`` (docs/math.md#the-optimum)::

    alpha*(p, q, k) = min over A of [ p(A) + 1 - q(A)^k ]
                    = min over B of [ g_k(q(B)) + p(V \\ B) ],    g_k(x) = 1 - (1 - x)^k,

and the second minimum is attained at a prefix ``B`` of the tokens sorted by ``q/p`` ascending.
:func:`optimum` computes it by the cumulative minimum ``F_j = min(F_{j-1} + p_j, g_k(Q_j))``,
which also gives one optimal accepted-token law ``a*`` and the tight prefixes.  Every value is
an exact ``Fraction``.  The inputs of every routine of the optimum are read here
(:func:`law_pair`, :func:`check_k`, :func:`check_draft_law_name`).

>>> p = Dist.parse("1/2,3/10,1/5", labels="abc")
>>> q = Dist.parse("1/5,1/5,3/5", labels="abc")
>>> opt = optimum(p, q, 2)
>>> opt.alpha_star, opt.a_star
(Fraction(21, 25), Dist({'a': 9/25, 'b': 7/25, 'c': 1/5}))
>>> opt.order, opt.tight
(('a', 'b', 'c'), ('a', 'b'))
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..core.budget import check_power
from ..core.dist import Dist, exact, exact_str, integer_row_of
from ..core.errors import InvalidInput, NotExact

__all__ = ["DRAFT_LAWS", "Optimum", "accepted_law", "check_draft_law_name", "check_k",
           "check_same_labels", "exact_law", "exact_masses", "g", "law_pair",
           "optimal_acceptance", "optimal_order", "optimum"]

#: The draft laws with finitely many draft multisets (:mod:`exactspec.optimum.multisets`).
DRAFT_LAWS = ("iid", "wor", "hub")


# -- input handling ----------------------------------------------------------------------

def check_k(k: Any) -> int:
    """The number of drafts ``k`` as an int, checked: an integer of at least 1."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise InvalidInput(f"k={k!r}: the number of drafts must be an integer")
    if k < 1:
        raise InvalidInput(f"k={k}: need at least one draft")
    return int(k)


def check_draft_law_name(law: Any) -> str:
    """The draft law's name, checked: one of :data:`DRAFT_LAWS`."""
    if law not in DRAFT_LAWS:
        raise InvalidInput(f"draft_law={law!r}: choose one of {', '.join(DRAFT_LAWS)}")
    return law


def exact_masses(d: Any, name: str, labels=None) -> Dist:
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
        if any(v._numerator < 0 for v in dist.probs):
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


#: The last exact laws checked, by identity (a Dist is read-only: checked once, not again
#: by every function of the optimum it is handed to).
_LAWS_CHECKED: dict = {}


def exact_law(d: Any, name: str, labels=None) -> Dist:
    """``d`` as an exact probability law: ``Fraction`` entries summing to exactly 1."""
    if _LAWS_CHECKED.get(id(d)) is d:
        return d
    dist = exact_masses(d, name, labels)
    row = integer_row_of(dist)
    total = Fraction(sum(row[0]), row[1]) if row else sum(dist.probs, Fraction(0))
    if total != 1:
        raise InvalidInput(f"{name} sums to {exact_str(total)}, not 1")
    if dist is d:
        if len(_LAWS_CHECKED) >= 8:
            _LAWS_CHECKED.clear()
        _LAWS_CHECKED[id(d)] = d
    return dist


def check_same_labels(p: Dist, q: Dist, name: str = "q") -> None:
    """Raise :class:`InvalidInput` unless ``q`` (argument ``name``) has ``p``'s labels."""
    if len(p) != len(q):
        raise InvalidInput(f"{name} has {len(q)} entries but p has {len(p)}")
    if p.labels != q.labels:
        raise InvalidInput(
            f"p and {name} have different labels: {list(p.labels)} vs {list(q.labels)}")


def law_pair(p: Any, q: Any) -> tuple[Dist, Dist]:
    """``p`` and ``q`` as Dists on the same labels (``q`` read with ``p``'s labels)."""
    p = exact_law(p, "p")
    q = exact_law(q, "q", labels=p.labels)
    check_same_labels(p, q)
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
    p, q = law_pair(p, q)
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
            "a_star": law_texts(self.a_star),
            "order": list(map(str, self.order)),
            "tight": list(map(str, self.tight)),
        }


def law_texts(law: Dist) -> dict:
    """``law.to_json()``: ``{label: "3/5"}``, its values by :func:`law_text_row`.

    >>> law_texts(Dist.parse("1/2,1/4,1/4", labels="abc"))
    {'a': '1/2', 'b': '1/4', 'c': '1/4'}
    """
    return dict(zip(map(str, law.labels), law_text_row(law)))


def law_text_row(law: Dist) -> list[str]:
    """``law``'s values as exact lowest-terms text, in token order: from the integer row when
    ``law`` has one, each distinct numerator reduced and written once (an optimum's ``a*``
    repeats ``p``'s values).

    >>> law_text_row(Dist.parse("1/2,1/4,1/4"))
    ['1/2', '1/4', '1/4']
    """
    row = integer_row_of(law)
    if row is None:
        return list(map(exact_str, law.probs))
    ints, d = row
    texts: dict[int, str] = {}
    for n in set(ints):
        g = math.gcd(n, d)
        texts[n] = str(n // g) if d == g else f"{n // g}/{d // g}"
    return list(map(texts.__getitem__, ints))


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
    p, q = law_pair(p, q)
    k = check_k(k)
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
    try:         # every ratio in C where none overflows a float (the rows' usual case)
        floats = list(map(operator.truediv, qq, pp) if len(positive) == len(pp) else
                      map(operator.truediv, map(qq.__getitem__, positive),
                          map(pp.__getitem__, positive)))
    except OverflowError:
        floats = [rounded(i) for i in positive]
    by_ratio = sorted(range(len(positive)), key=floats.__getitem__)   # stable: index order
    keyed = [positive[j] for j in by_ratio]
    if len(positive) == len(pp) and max(qq) * max(pp) <= 1 << 51:
        # Q_i, P_i <= A, B with AB <= 2^51: two distinct ratios differ by at least
        # 1/(P_i P_j), relatively by at least 1/(Q_i P_j) >= 2^-51, more than the two ulps
        # (2^-52 relative each way) within which they could round to one float; so equal
        # floats are equal ratios, already in index order (the exact sort would keep it).
        return keyed
    sorted_floats = [floats[j] for j in by_ratio]
    equal_to_next = [x == y for x, y in zip(sorted_floats, sorted_floats[1:])]
    order: list[int] = []
    start = 0
    while start < len(keyed):
        end = start + 1
        while end < len(keyed) and equal_to_next[end - 1]:
            end += 1
        if end - start > 1:                      # equal floats: the exact ratios decide
            run = keyed[start:end]
            a = run[0]
            if any(qq[i] * pp[a] != qq[a] * pp[i] for i in run):   # (all equal: index order)
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
