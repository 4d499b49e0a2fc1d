"""The draft multisets of ``k`` drafts with their exact probabilities: i.i.d. drafts, drafts
without replacement (sets) and SpecHub's hub law (pairs with the hub).

>>> list(draft_multisets(Dist.parse("1/3,2/3", labels="ab"), 2))
[(('a', 'a'), Fraction(1, 9)), (('a', 'b'), Fraction(4, 9)), (('b', 'b'), Fraction(4, 9))]
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from fractions import Fraction
from itertools import combinations_with_replacement
from typing import Any

from ..core.budget import digits_of_bits
from ..core.dist import Dist, integer_row_of
from ..core.errors import InvalidInput, TooLarge
from .closed_form import check_draft_law_name, check_k, exact_law

__all__ = ["MAX_MULTISETS", "draft_multiset_count", "draft_multisets", "draft_support",
           "hub_index", "hub_token"]

#: Largest number of draft multisets (sets, for ``"wor"``) that an enumeration accepts.
MAX_MULTISETS = 200_000


def hub_token(q: Any):
    """SpecHub's hub: ``argmax q``, ties broken by the smallest token index.

    >>> hub_token(Dist.parse("1/4,3/8,3/8", labels="abc"))
    'b'
    """
    q = exact_law(q, "q")
    return q.labels[hub_index(q)]


def hub_index(q: Dist) -> int:
    """The index of SpecHub's hub: ``argmax q``, ties by the smallest index."""
    return max(range(len(q)), key=lambda i: (q.probs[i], -i))


def draft_support(q: Dist, k: int, law: str) -> list[int]:
    """Validate ``(q, k, law)``; return the indices of ``q``'s support."""
    row = integer_row_of(q)           # its integers where it has them (no Fraction each)
    support = [i for i, v in enumerate(row[0] if row is not None else q.probs) if v != 0]
    if law == "wor" and k > len(support):
        raise InvalidInput(
            f"k={k}: drafting without replacement needs k <= {len(support)}, the number of "
            "tokens q can draft")
    if law == "hub":
        if k != 2:
            raise InvalidInput(f"k={k}: the hub draft law has exactly 2 drafts")
        hub = hub_index(q)
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
    q = exact_law(q, "q")
    k = check_k(k)
    law = check_draft_law_name(law)
    m = len(draft_support(q, k, law))
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
    q = exact_law(q, "q")
    k = check_k(k)
    law = check_draft_law_name(law)
    support = draft_support(q, k, law)
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
    hub = hub_index(q)
    rest = 1 - q.probs[hub]
    for i in support:
        if i != hub:
            pair = (min(i, hub), max(i, hub))
            yield tuple(q.labels[j] for j in pair), q.probs[i] / rest
