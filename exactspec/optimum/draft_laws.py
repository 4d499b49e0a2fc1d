"""Draft laws: how the ``k`` drafts of one position are drawn.

Three laws, each an object with one contract (:class:`DraftLaw`):

- :class:`IID` (``"iid"``): ``X_1..X_k`` independent, each ``~ q``;
- :class:`WithoutReplacement` (``"wor"``): ``X_1 ~ q``, then ``q`` restricted to the tokens
  not yet drawn, renormalised (needs ``k <=`` the size of ``q``'s support);
- :class:`Hub` (``"hub"``, SpecHub, ``k = 2``): ``a = argmax q`` (ties by index), ``X_1 ~ q``;
  ``X_2 = a`` if ``X_1 != a``, else ``X_2 ~ q`` restricted to ``V \\ {a}``.

A law draws its drafts through the sampling interface (:meth:`DraftLaw.draw`, the reference
semantics), gives its exact multiset probabilities (:meth:`DraftLaw.multisets`, which is
:func:`exactspec.optimum.alpha_star.draft_multisets`) and the optimum of a lossless verifier that drafts
from it (:meth:`DraftLaw.optimum`).

Exchangeability: a verifier whose behaviour depends only on the *multiset* of drafts (such as
``optimal``) may draw the multiset directly with its multinomial weight
(:meth:`DraftLaw.draw_multiset`) instead of the ``k`` ordered drafts; the exact engine then
enumerates ``C(m + k - 1, k)`` multisets instead of ``m^k`` tuples, with the same law.  A
verifier that reads the drafts in order (RRS, K-SEQ) must use :meth:`DraftLaw.draw`.

>>> from exactspec.core.dist import Dist
>>> q = Dist.parse("1/5,1/5,3/5", labels="abc")
>>> Hub().multiset_law(q, 2)
Dist({('a', 'c'): 1/2, ('b', 'c'): 1/2})
>>> draft_law("iid").multiset_count(q, 2), draft_law("wor").multiset_count(q, 2)
(6, 3)
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Any, Iterator

from ..core.dist import Dist
from ..core.errors import InvalidInput

__all__ = ["DraftLaw", "IID", "WithoutReplacement", "Hub", "DRAFT_LAWS", "draft_law", "drafts",
           "point_mass", "restricted", "is_exact_dist"]


def is_exact_dist(d: Dist) -> bool:
    """Whether every probability of ``d`` is a ``Fraction`` (not symbolic, not algebraic)."""
    return all(isinstance(v, Fraction) for v in d.probs)


def point_mass(labels, x) -> Dist:
    """The law that is 1 at ``x`` (no validation; used inside methods)."""
    return Dist([1 if lab == x else 0 for lab in labels], labels, check=False)


def restricted(q: Dist, removed) -> Dist:
    """``q`` restricted to the tokens not in ``removed``, renormalised.

    Raises :class:`InvalidInput` when nothing is left to draw.

    >>> restricted(Dist.parse("1/2,1/4,1/4"), {0})
    Dist({0: 0, 1: 1/2, 2: 1/2})
    """
    rest = [0 if lab in removed else pr for lab, pr in zip(q.labels, q.probs)]
    total = sum(rest[1:], rest[0])
    if total == 0:
        raise InvalidInput(f"q has no mass outside {sorted(map(str, removed))}: nothing left to "
                           "draft")
    return Dist([v / total for v in rest], q.labels, check=False)


def _argmax(q: Dist):
    best = q.labels[0]
    for lab in q.labels[1:]:
        if q[lab] > q[best]:
            best = lab
    return best


class DraftLaw:
    """The contract of a draft law (subclasses: :class:`IID`, :class:`WithoutReplacement`,
    :class:`Hub`).  ``name`` is the key the rest of exactspec uses (``Method.draft_law``)."""

    name = ""
    description = ""

    def __repr__(self):
        return f"{type(self).__name__}()"

    def check(self, q: Dist, k: int) -> None:
        """Raise :class:`InvalidInput` when ``k`` drafts cannot be drawn from ``q``."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidInput(f"k={k}: need at least one draft")

    def draw(self, s, q: Dist, k: int) -> tuple:
        """The ``k`` ordered drafts, drawn through the sampler ``s``."""
        raise NotImplementedError

    def multisets(self, q: Dist, k: int, **kw) -> Iterator[tuple[tuple, Fraction]]:
        """Every draft multiset (labels in token order) with its exact probability."""
        from .alpha_star import draft_multisets

        return draft_multisets(q, k, self.name, **kw)

    def multiset_count(self, q: Dist, k: int) -> int:
        """The number of distinct draft multisets."""
        from .alpha_star import draft_multiset_count

        return draft_multiset_count(q, k, self.name)

    def multiset_law(self, q: Dist, k: int) -> Dist:
        """The law of the draft multiset, as a :class:`Dist` whose labels are multisets."""
        return _multiset_law(self.name, q, k)

    def draw_multiset(self, s, q: Dist, k: int) -> tuple:
        """The multiset of drafts (labels in token order), remembered as drafts by ``s``.

        With the exact interpreter and exact ``q`` the multiset is chosen directly with its
        exact probability (:meth:`multiset_law`): for i.i.d. drafts as a chain of binomial
        choices (how many drafts are token ``t``, given those left), one path per multiset at
        ``O(|V| k)`` cost; for the other laws as one choice among the multisets.  Otherwise
        (sampling, symbolic) the ordered drafts are drawn and sorted, which has the same law.
        Only sound for a verifier that never looks at the order of its drafts.
        """
        from ..engine.exact import ExactSampler

        exact_walk = isinstance(s, ExactSampler) or getattr(s, "replays_exact_engine", False)
        if exact_walk and is_exact_dist(q):
            multiset = self._choose_multiset(s, q, k)
            s.drafted.extend(multiset)
            return multiset
        return tuple(sorted(self.draw(s, q, k), key=q.index))

    def _choose_multiset(self, s, q: Dist, k: int) -> tuple:
        return s.draw(self.multiset_law(q, k), "drafts")

    def optimum(self, p: Dist, q: Dist, k: int) -> Fraction:
        """The largest ``P(Y in X)`` of a lossless verifier drafting from this law."""
        from .alpha_star import law_optimum

        return law_optimum(p, q, k, self.name)


class IID(DraftLaw):
    """``k`` independent drafts from ``q`` (with replacement)."""

    name = "iid"
    description = "k independent drafts from q (with replacement)"

    def draw(self, s, q, k):
        return tuple(s.draft(q, f"draft{i + 1}") for i in range(k))

    def _choose_multiset(self, s, q, k):
        # the multinomial as a chain of binomials: the count of each token given the drafts
        # left and the mass of the tokens not yet counted (O(|V| k) per path, not O(#multisets))
        labels, tables = _binomial_chain(q, k)
        left = k
        multiset: list = []
        for j, lab in enumerate(labels):
            if left == 0:
                break
            if j == len(labels) - 1:
                multiset += [lab] * left
                break
            count = s.draw(tables[j][left], f"count {lab}")
            multiset += [lab] * count
            left -= count
        return tuple(multiset)

    def optimum(self, p, q, k):
        from .alpha_star import optimal_acceptance

        return optimal_acceptance(p, q, k)


class WithoutReplacement(DraftLaw):
    """``X_1 ~ q``, then ``q`` restricted to the tokens not yet drawn, renormalised."""

    name = "wor"
    description = "k drafts from q without replacement"

    def check(self, q, k):
        super().check(q, k)
        if k > len(q.support):
            raise InvalidInput(
                f"k={k}: drafting without replacement needs k <= {len(q.support)}, the number "
                "of tokens q can draft; use a smaller k, or i.i.d. drafts (rrs)")

    def draw(self, s, q, k):
        chosen: list = []
        for i in range(k):
            x = s.draft(restricted(q, chosen) if chosen else q, f"draft{i + 1}")
            chosen.append(x)
        return tuple(chosen)


class Hub(DraftLaw):
    """SpecHub's two drafts: every pair contains the hub ``a = argmax q``."""

    name = "hub"
    description = "SpecHub: 2 drafts, every pair contains the hub argmax q"

    @staticmethod
    def hub(q: Dist):
        """``argmax q``, ties by the smallest token index."""
        return _argmax(q)

    def check(self, q, k):
        super().check(q, k)
        if k != 2:
            raise InvalidInput(f"k={k}: the hub draft law (SpecHub) has exactly 2 drafts")
        a = self.hub(q)
        if q[a] == 1:
            raise InvalidInput(
                f"q is a point mass on {a!r}: the hub draft law needs a second token to draft; "
                "use rrs or sps")

    def draw(self, s, q, k=2):
        a = self.hub(q)
        x1 = s.draft(q, "draft1")
        if x1 != a:
            x2 = s.draft(point_mass(q.labels, a), "draft2")
        else:
            x2 = s.draft(restricted(q, {a}), "draft2")
        return (x1, x2)

    def optimum(self, p, q, k=2):
        from .alpha_star import hub_optimum

        return hub_optimum(p, q)


#: The draft laws by name, as instances.
DRAFT_LAWS: dict[str, DraftLaw] = {"iid": IID(), "wor": WithoutReplacement(), "hub": Hub()}


def draft_law(name) -> DraftLaw:
    """The draft law called ``name`` (``"iid"``, ``"wor"``, ``"hub"``), or ``name`` itself."""
    if isinstance(name, DraftLaw):
        return name
    try:
        return DRAFT_LAWS[name]
    except (KeyError, TypeError):
        raise InvalidInput(f"draft_law={name!r}: choose one of {', '.join(DRAFT_LAWS)}") from None


def drafts(s, q: Dist, k: int, law: Any = "iid") -> tuple:
    """``k`` ordered drafts from ``q`` under the draft law ``law``, through the sampler ``s``.

    Equivalent to ``s.drafts(q, k)`` for ``"iid"`` and ``s.drafts(q, k, replace=False)`` for
    ``"wor"``; ``"hub"`` draws SpecHub's pair.
    """
    return draft_law(law).draw(s, q, k)


@lru_cache(maxsize=32)
def _multiset_law(name: str, q: Dist, k: int) -> Dist:
    items = list(DRAFT_LAWS[name].multisets(q, k))
    return Dist([w for _, w in items], [m for m, _ in items], check=False)


@lru_cache(maxsize=32)
def _binomial_chain(q: Dist, k: int):
    """For i.i.d. drafts: the support's labels, and for each label ``j`` and number of drafts
    ``left`` still to place, the law of how many of them are ``j`` (a binomial with the share
    of ``j`` among the labels not yet counted)."""
    import math

    labels = [lab for lab, v in zip(q.labels, q.probs) if v != 0]
    tables = []
    mass = Fraction(1)
    for lab in labels:
        share = q[lab] / mass
        row = {}
        for left in range(1, k + 1):
            weights = [math.comb(left, c) * share ** c * (1 - share) ** (left - c)
                       for c in range(left + 1)]
            row[left] = Dist(weights, list(range(left + 1)), check=False)
        tables.append(row)
        mass -= q[lab]
    return labels, tables
