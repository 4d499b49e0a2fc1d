"""The KEY placement: where each token's random key lives, so the smallest key realises ``a*``.

Keys are positions ``u`` in ``[0, 1]`` (docs/math.md#keys-as-positions).  A draft of token ``t`` draws its
key from a density ``rho_t`` on ``[0, 1]``; the draft with the smallest key is selected.  If
``q(t) rho_t(u)`` sums to 1 over the tokens at every ``u``, the key of one random draft is
uniform, the smallest of ``k`` keys has density ``g_k'(u) = k (1 - u)^(k-1)``, and the
selected draft has token ``t`` with probability

    w(t) = integral of q(t) rho_t(u) g_k'(u) du.

**The placement** (one sort, then explicit rational arithmetic):

1. Sort the tokens that ``q`` can draft by ``q/p`` ascending (:func:`exactspec.optimum.alpha_star.optimum`)
   and lay them out consecutively: token ``j`` owns the *slot* ``[Q_{j-1}, Q_j)``.  The slot
   holds winner mass ``v_j = g_k(Q_j) - g_k(Q_{j-1})`` at average density
   ``d_j = v_j / q_j`` (decreasing in ``j``, since ``g_k'`` decreases).
2. The *surplus* ``e_j = v_j - a*_j``.  Its prefix sums are ``g_k(Q_j) - F_j >= 0``, zero at
   every tight prefix.  Tokens with ``e > 0`` are *donors*, with ``e < 0`` *receivers*.
3. Match surplus to deficit first-in first-out along the order: donor ``i`` sends value
   ``tau`` to receiver ``r`` when their cumulative intervals overlap; the prefix sums make
   every receiver's donors come before it, and no pair crosses a tight prefix.
4. Each matched pair *swaps* key mass ``delta = tau / (d_i - d_r)``: a fraction of the
   donor's slot goes to the receiver's key and an equal mass of the receiver's slot goes to
   the donor's key.  The donor loses winner mass ``delta (d_i - d_r) = tau``, the receiver
   gains it.

So ``w = a*`` on every tight block and ``w >= a*`` after the last tight prefix (the donors
left unmatched there keep their surplus).  The swaps always fit inside the slots: within a
block ``a*/q`` decreases, so a donor ``i`` and a later receiver ``r`` have
``d_i > a*_i/q_i >= a*_r/q_r > d_r``, hence ``delta (d_i - d_r) = tau`` with ``tau <= e_i``
moves less than ``q_i`` of the donor's slot and less than ``q_r`` of the receiver's.  Every
number is rational when ``p`` and ``q`` are.  Proof of the verifier built on it: docs/key.md.

>>> from exactspec.core.dist import Dist
>>> plan = key_placement(Dist.parse("3/5,2/5"), Dist.parse("1/2,1/2"), 8)
>>> plan.alpha_star, plan.winner                        # docs/math.md#the-two-counterexamples, 1
(Fraction(1, 1), Dist({0: 3/5, 1: 2/5}))
>>> [(s.donor, s.receiver, s.mass) for s in plan.swaps]
[(0, 1, Fraction(507, 2540))]
>>> plan.pieces[1]                                      # (slot, key mass) of token 1's key
((0, Fraction(507, 2540)), (1, Fraction(763, 2540)))
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

from ..core.budget import check_power
from ..core.dist import Dist, exact_str, integer_row_of
from ..core.errors import InvalidInput, NotExact
from ..optimum.alpha_star import Optimum, g, optimum

__all__ = ["Swap", "Block", "KeyPlacement", "key_placement", "LATER"]

#: The outcome "every key of this token lies after the current smallest key" (lazy laws).
LATER = "later"


@dataclass(frozen=True)
class Swap:
    """One matched donor/receiver pair.

    ``mass`` (``delta``) of the donor's slot becomes part of the receiver's key, and the same
    mass of the receiver's slot part of the donor's key; ``value`` (``tau``) is the winner
    mass that moves from donor to receiver, ``delta * (d_donor - d_receiver)``.
    """

    donor: Any
    receiver: Any
    mass: Fraction
    value: Fraction


@dataclass(frozen=True)
class Block:
    """A run of slots between consecutive tight prefixes (``kind="tight"``, where ``w = a*``)
    or after the last one (``kind="tail"``, where ``w >= a*``); ``[lo, hi)`` in key space."""

    kind: str
    tokens: tuple
    lo: Fraction
    hi: Fraction


@dataclass(frozen=True, eq=False)
class KeyPlacement:
    """The key placement of ``(p, q, k)`` and everything the verifier needs from it.

    Attributes
    ----------
    optimum : ~exactspec.optimum.closed_form.Optimum
        ``alpha*``, ``a*``, the ``q/p`` order and the tight prefixes.
    slot_tokens : tuple
        The token owning slot ``j`` (draftable tokens in ``q/p`` order).
    cuts : tuple of Fraction
        ``0 = Q_0 < Q_1 < ... < Q_m = 1``: slot ``j`` is ``[cuts[j], cuts[j + 1])``.
    density : tuple of Fraction
        ``d_j``: the average of ``g_k'`` over slot ``j``.
    swaps : tuple of Swap
        The matched pairs, in first-in first-out order (donors and receivers both ascending).
    pieces : dict
        ``token -> ((slot, key mass), ...)`` by slot: the key of a draft of ``token`` falls
        in slot ``j`` with probability ``mass / q(token)``, then uniformly inside the slot.
    winner : Dist
        ``w(t)``, the probability that the smallest of ``k`` keys is a draft of ``t``.
    beta : Dist
        ``a*(t) / w(t)``: the probability of accepting the selected draft (0 where ``w = 0``).
    residual : Dist or None
        ``(p - a*) / (1 - alpha*)``; ``None`` when ``alpha* = 1``.
    blocks : tuple of Block
    """

    p: Dist
    q: Dist
    k: int
    optimum: Optimum
    slot_tokens: tuple
    cuts: tuple
    density: tuple
    swaps: tuple
    pieces: dict
    winner: Dist
    beta: Dist
    residual: Dist | None
    blocks: tuple
    _cache: dict = field(default_factory=dict, repr=False)

    # -- the optimum ----------------------------------------------------------------------
    @property
    def alpha_star(self) -> Fraction:
        return self.optimum.alpha_star

    @property
    def a_star(self) -> Dist:
        return self.optimum.a_star

    @property
    def path(self) -> str:
        """``"consecutive"`` when no swap is needed (the greedy vertex in ``q/p`` order already
        gives ``w >= a*`` with equality on the tight blocks), else ``"swaps"``."""
        return "swaps" if self.swaps else "consecutive"

    # -- one token's key ------------------------------------------------------------------
    def slot(self, j: int) -> tuple[Fraction, Fraction]:
        """Slot ``j`` as ``(lo, hi)``."""
        return self.cuts[j], self.cuts[j + 1]

    def slot_of(self, token) -> int:
        """The slot a token owns in the consecutive layout."""
        return self._slot_index[token]

    @property
    def _slot_index(self) -> dict:
        if "index" not in self._cache:
            self._cache["index"] = {t: j for j, t in enumerate(self.slot_tokens)}
        return self._cache["index"]

    def _check_token(self, token):
        if token not in self.pieces:
            if token in self.p:
                raise InvalidInput(
                    f"token {token!r} has q = 0: it is never drafted and has no key")
            raise InvalidInput(f"unknown token {token!r}; labels are {list(self.p.labels)}")

    def slot_law(self, token) -> Dist:
        """The law of the slot holding one key of ``token`` (labels: slot indices).

        >>> from exactspec.core.dist import Dist
        >>> plan = key_placement(Dist.parse("3/5,2/5"), Dist.parse("1/2,1/2"), 8)
        >>> plan.slot_law(0)
        Dist({0: 763/1270, 1: 507/1270})
        """
        self._check_token(token)
        cache = self._cache.setdefault("slot_law", {})
        if token not in cache:
            qt = self.q[token]
            slots = [j for j, _ in self.pieces[token]]
            cache[token] = Dist([m / qt for _, m in self.pieces[token]], slots, check=False)
        return cache[token]

    def first_slot(self, token) -> int:
        """The first slot where a key of ``token`` can fall (where its key support starts)."""
        self._check_token(token)
        return self.pieces[token][0][0]

    def key_density(self, token) -> list[tuple[Fraction, Fraction, Fraction]]:
        """``rho_token`` as ``[(lo, hi, density), ...]``: constant on each slot it touches.

        >>> from exactspec.core.dist import Dist
        >>> plan = key_placement(Dist.parse("3/5,2/5"), Dist.parse("1/2,1/2"), 8)
        >>> [(str(lo), str(hi), str(d)) for lo, hi, d in plan.key_density(1)]
        [('0', '1/2', '507/635'), ('1/2', '1', '763/635')]
        """
        self._check_token(token)
        qt = self.q[token]
        out = []
        for j, m in self.pieces[token]:
            lo, hi = self.slot(j)
            out.append((lo, hi, m / (qt * (hi - lo))))
        return out

    def key_cdf(self, token, u) -> Fraction:
        """``P(key of one draft of token <= u)``: piecewise linear in ``u``."""
        u = Fraction(u)
        total = Fraction(0)
        for lo, hi, dens in self.key_density(token):
            if u > lo:
                total += dens * (min(u, hi) - lo)
        return total

    def fraction(self, token, j: int) -> Fraction:
        """``h_token`` on slot ``j``: the share of slot ``j``'s key mass that is ``token``'s."""
        for jj, m in self.pieces.get(token, ()):
            if jj == j:
                lo, hi = self.slot(j)
                return m / (hi - lo)
        return Fraction(0)

    def min_slot_law(self, token, copies: int, before: int | None = None) -> Dist:
        """The law of ``(slot of the smallest of `copies` keys of token, how many of them are
        in that slot)``, lumping every slot after ``before`` into :data:`LATER`.

        ``P(slot j, n keys there) = C(c, n) pi_j^n T_j^(c-n)``, with ``pi_j`` the slot law and
        ``T_j`` the probability of a slot after ``j``.  Used by the lazy verifier.

        >>> from exactspec.core.dist import Dist
        >>> plan = key_placement(Dist.parse("3/5,2/5"), Dist.parse("1/2,1/2"), 8)
        >>> plan.min_slot_law(1, 2)
        Dist({(0, 1): 386841/806450, (0, 2): 257049/1612900, (1, 2): 582169/1612900})
        """
        self._check_token(token)
        if copies < 1:
            raise InvalidInput(f"copies={copies}: need at least one key")
        key = (token, copies, before)
        cache = self._cache.setdefault("min_slot_law", {})
        if key not in cache:
            labels, probs = [], []
            law = self.slot_law(token)
            after = Fraction(1)
            for j, pj in zip(law.labels, law.probs):
                if before is not None and j > before:
                    break
                after -= pj
                for n in range(1, copies + 1):
                    weight = math.comb(copies, n) * pj ** n * after ** (copies - n)
                    if weight != 0:
                        labels.append((j, n))
                        probs.append(weight)
            if before is not None:
                rest = after ** copies
                if rest != 0:
                    labels.append(LATER)
                    probs.append(rest)
            cache[key] = Dist(probs, labels, check=False)
        return cache[key]

    # -- checks and export ----------------------------------------------------------------
    def check(self) -> list[str]:
        """Re-derive every property the proof uses, in exact arithmetic; problems as text.

        Slots tile ``[0, 1]``; every slot is shared out exactly (fractions sum to 1); every key
        has mass ``q(t)``; masses are non-negative; ``w`` recomputed from the pieces equals
        :attr:`winner`; ``w = a*`` on tight blocks and ``w >= a*`` on the tail; each token's
        key stays inside its block; ``sum w = 1``.
        """
        problems = []
        if self.cuts[0] != 0 or self.cuts[-1] != 1:
            problems.append(f"slots cover [{self.cuts[0]}, {self.cuts[-1]}), not [0, 1)")
        shared = [Fraction(0)] * len(self.slot_tokens)
        block_of = {}
        for b, block in enumerate(self.blocks):
            for t in block.tokens:
                block_of[t] = b
        for t, pieces in self.pieces.items():
            if sum((m for _, m in pieces), Fraction(0)) != self.q[t]:
                problems.append(f"key of {t!r} has mass {sum(m for _, m in pieces)} != q")
            w = Fraction(0)
            for j, m in pieces:
                if m < 0:
                    problems.append(f"negative key mass {m} of {t!r} in slot {j}")
                shared[j] += m
                w += m * self.density[j]
                if block_of[self.slot_tokens[j]] != block_of[t]:
                    problems.append(f"key of {t!r} leaves its block (slot {j})")
            if w != self.winner[t]:
                problems.append(f"w({t!r}) recomputed {w} != {self.winner[t]}")
        for j, total in enumerate(shared):
            lo, hi = self.slot(j)
            if total != hi - lo:
                problems.append(f"slot {j} shared out {total} of {hi - lo}")
        for block in self.blocks:
            for t in block.tokens:
                w, a = self.winner[t], self.a_star[t]
                if (block.kind == "tight" and w != a) or w < a:
                    problems.append(f"w({t!r}) = {w} vs a* = {a} in a {block.kind} block")
        if sum(self.winner.probs, Fraction(0)) != 1:
            problems.append("w does not sum to 1")
        return problems

    def to_json(self) -> dict:
        """The placement as JSON with exact values as text."""
        return {
            "k": self.k,
            "alpha_star": exact_str(self.alpha_star),
            "path": self.path,
            "slots": [{"token": str(t), "lo": exact_str(self.cuts[j]),
                       "hi": exact_str(self.cuts[j + 1]), "density": exact_str(self.density[j])}
                      for j, t in enumerate(self.slot_tokens)],
            "blocks": [{"kind": b.kind, "tokens": [str(t) for t in b.tokens],
                        "lo": exact_str(b.lo), "hi": exact_str(b.hi)} for b in self.blocks],
            "swaps": [{"donor": str(s.donor), "receiver": str(s.receiver),
                       "mass": exact_str(s.mass), "value": exact_str(s.value)}
                      for s in self.swaps],
            "winner": self.winner.to_json(),
            "beta": self.beta.to_json(),
        }


def _exact_law(d: Any, name: str, labels=None) -> Dist:
    if not isinstance(d, Dist):
        d = Dist(d, labels, name=name)
    for lab, v in zip(d.labels, d.probs):
        if not isinstance(v, Fraction):
            raise NotExact(f"{name}[{lab}] = {v}: the key placement needs exact rationals")
    return d


def key_placement(p: Any, q: Any, k: int) -> KeyPlacement:
    """The KEY placement of ``(p, q, k)`` (module docstring), exact and cached.

    Parameters
    ----------
    p, q : Dist
        Target and draft laws over the same labels, exact rationals.
    k : int
        The number of i.i.d. drafts.

    Returns
    -------
    KeyPlacement

    Examples
    --------
    >>> from exactspec.core.dist import Dist
    >>> plan = key_placement(Dist.parse("1/2,1/5,3/10,0"), Dist.parse("1/20,1/20,1/10,4/5"), 10)
    >>> [(b.kind, b.tokens) for b in plan.blocks], plan.path     # docs/math.md's second one
    ([('tight', (0,)), ('tight', (1, 2)), ('tail', (3,))], 'swaps')
    >>> plan.winner[1] == plan.a_star[1] == Fraction(1, 5), plan.check()
    (True, [])
    """
    last = _LAST[0]
    if last is not None and last.p is p and last.q is q and last.k == k:
        return last                       # the engine asks once per path: skip hashing
    p = _exact_law(p, "p")
    q = _exact_law(q, "q", labels=p.labels)
    plan = _placement(p, q, k)
    _LAST[0] = plan
    return plan


_LAST: list = [None]


def _slots(q: Dist, tokens: list, k: int) -> tuple:
    """``(cuts, value, density)`` of the consecutive layout: ``Q_j``, ``v_j = g_k(Q_(j+1)) -
    g_k(Q_j)`` and ``v_j / q_j``.  On an integer row (``q_t = n_t / D``) as
    ``((D - C_j)^k - (D - C_(j+1))^k) / D^k``, one reduction each, not a chain of fractions."""
    row = integer_row_of(q)
    if row is None:
        cuts = [Fraction(0)]
        for t in tokens:
            cuts.append(cuts[-1] + q[t])
        value = [g(k, cuts[j + 1]) - g(k, cuts[j]) for j in range(len(tokens))]
        return cuts, value, [value[j] / q[t] for j, t in enumerate(tokens)]
    numerators, d = row
    check_power(Fraction(1, d), k, f"g_k(Q) = 1 - (1 - Q)^k at k = {k}")
    at = {t: i for i, t in enumerate(q.labels)}
    whole, below = d ** k, d ** (k - 1)
    cuts, value, density = [Fraction(0)], [], []
    c, tail = 0, whole                  # C_j and (D - C_j)^k
    for t in tokens:
        n = numerators[at[t]]
        c += n
        after = (d - c) ** k
        cuts.append(Fraction(c, d))
        value.append(Fraction(tail - after, whole))
        density.append(Fraction(tail - after, below * n))
        tail = after
    return cuts, value, density


@lru_cache(maxsize=64)
def _placement(p: Dist, q: Dist, k: int) -> KeyPlacement:
    opt = optimum(p, q, k)
    a = opt.a_star
    tight = set(opt.tight)
    tokens = [t for t in opt.order if q[t] != 0]
    # 1. consecutive slots in q/p order, their winner mass and density
    cuts, value, density = _slots(q, tokens, k)
    # blocks: cut after every tight token; the draftable tokens after the last one: the tail
    blocks, current = [], []
    for j, t in enumerate(tokens):
        current.append(j)
        if t in tight:
            blocks.append(("tight", current))
            current = []
    if current:
        blocks.append(("tail", current))
    # 2-4. first-in first-out matching of surplus to deficit inside each block, then swaps
    pieces = {t: {j: q[t]} for j, t in enumerate(tokens)}
    swaps = []
    block_list = []
    for kind, members in blocks:
        lo, hi = cuts[members[0]], cuts[members[-1] + 1]
        block_list.append(Block(kind, tuple(tokens[j] for j in members), lo, hi))
        donors = []                       # [slot, surplus left], first in first out
        head = 0
        for j in members:
            e = value[j] - a[tokens[j]]
            if e > 0:
                donors.append([j, e])
                continue
            need = -e
            while need > 0:
                if head == len(donors):   # impossible: prefix sums of the surplus are >= 0
                    raise AssertionError(f"internal: no donor left for slot {j}")
                i, left = donors[head]
                tau = min(need, left)
                delta = tau / (density[i] - density[j])
                donor, receiver = tokens[i], tokens[j]
                swaps.append(Swap(donor, receiver, delta, tau))
                pieces[donor][i] -= delta
                pieces[donor][j] = pieces[donor].get(j, 0) + delta
                pieces[receiver][j] -= delta
                pieces[receiver][i] = pieces[receiver].get(i, 0) + delta
                need -= tau
                donors[head][1] = left - tau
                if donors[head][1] == 0:
                    head += 1
        if kind == "tight" and any(left != 0 for _, left in donors[head:]):
            raise AssertionError("internal: surplus left in a tight block")
    piece_tuples = {t: tuple(sorted(pc.items())) for t, pc in pieces.items()}
    w = {t: Fraction(0) for t in p.labels}
    for t, pc in piece_tuples.items():
        w[t] = sum((m * density[j] for j, m in pc), Fraction(0))
    winner = Dist([w[t] for t in p.labels], p.labels, check=False)
    beta = Dist([a[t] / w[t] if w[t] != 0 else Fraction(0) for t in p.labels], p.labels,
                check=False)
    residual = None
    if opt.alpha_star != 1:
        residual = Dist([(p[t] - a[t]) / (1 - opt.alpha_star) for t in p.labels], p.labels,
                        check=False)
    plan = KeyPlacement(p=p, q=q, k=k, optimum=opt, slot_tokens=tuple(tokens),
                        cuts=tuple(cuts), density=tuple(density), swaps=tuple(swaps),
                        pieces=piece_tuples, winner=winner, beta=beta, residual=residual,
                        blocks=tuple(block_list))
    problems = plan.check()
    if problems:                          # the construction is proved; this guards the code
        raise AssertionError(f"internal: key placement inconsistent: {problems[:3]}")
    return plan
