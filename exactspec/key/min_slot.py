"""KEY by its lowest key slot: a stepped form whose states grow linearly in the vocabulary.

:data:`~exactspec.key.stepped.KEY_STEPS` follows every draft's token and key slot, so its
merged states (next token, drafts left, lowest slot, tied counts) grow faster than ``|V|``:
``k = 4`` reaches about 80 tokens in a minute.  What the verifier reads of the ``k`` drafts
is only the token of the smallest key.  :data:`KEY_MIN_SLOT_STEPS` draws that directly:

1. the token of the smallest of the ``k`` keys, its law computed from the law of the slot
   holding that key and of the token of a key in that slot (:func:`selected_token_law`);
2. the acceptance coin ``beta``;
3. on a rejection (one merged state) the residual.

**Why it has the same law and explicit acceptance as** :func:`exactspec.methods.key.key`.
Each draft of ``key`` draws its token from ``q`` and its key's slot from that token's slot law
(:meth:`~exactspec.key.placement.KeyPlacement.slot_law`), independently of the other drafts,
so one draft's key lies in slot ``i`` with probability
``m_i = sum_t q(t) P(slot i | t)``, the total key mass the placement's pieces put in slot
``i``, which the placement's check establishes to be the slot's width.  With ``G_j = m_0 + ... + m_(j-1)``, the ``k`` keys
all lie in slots ``j`` or later with probability ``(1 - G_j)^k``, so the lowest slot is ``j``
with probability ``(1 - G_j)^k - (1 - G_(j+1))^k``.  Given that the lowest slot is ``j`` and
that ``c >= 1`` drafts have their keys there, those drafts' tokens are independent, each
``t`` with probability ``P(t | slot j) = q(t) P(slot j | t) / m_j``, and the smallest key
among them is each of the ``c`` equally likely (positions i.i.d. uniform in the slot,
whatever the token), independently of their tokens: so the selected token has law
``P(t | slot j)`` whatever ``c``.  The acceptance coin and the residual are ``key``'s own.
The output law and the explicit acceptance depend only on the selected token, the coin and
the residual, so they are equal; summed over the slots, the selected token's law is
``sum_j P(lowest slot j) P(t | slot j)``.

**``P(Y in X)``.**  This form drafts only the selected token, so ``P(Y in X)`` is counted for
it; a draft that is not selected can be the output only after a rejection, when the residual
draws its token.  :func:`others_never_output` proves that this has probability 0 (or says why
not, and then this form does not run): a rejection follows a selection in slot ``j`` only if
some token with ``beta < 1`` has key mass there, and the drafts that were not selected then
have their keys in slots ``j`` or later, so a residual token with no key mass at or after the
first such slot is never one of them.  Where that holds, ``P(Y in X)`` here is exactly
``key``'s.  The number of paths counts this form's own histories, not ``key``'s.

``key-lazy`` selects the draft of the smallest of the same keys, drawing only the keys that
can be it, so its selected token has the same law and this form is its shortcut too.  The
tests set this form against the plain enumerations of ``key`` and ``key-lazy``
(``tests/test_key_min_slot.py``).

>>> from exactspec.core.dist import Dist
>>> from exactspec.engine.merged import enumerate_merged
>>> p, q = Dist.parse("1/2,1/5,3/10,0"), Dist.parse("1/20,1/20,1/10,4/5")
>>> others_never_output(p, q, 10) is None          # docs/math.md#the-two-counterexamples, 2
True
>>> merged = enumerate_merged(KEY_MIN_SLOT_STEPS, p, q, 10)
>>> merged.law == dict(p), merged.acceptance, merged.states
(True, Fraction(8717049, 9765625), 6)
"""

from __future__ import annotations

from fractions import Fraction

from ..core.dist import Dist
from ..engine.merged import Done, Stepped
from .placement import KeyPlacement, key_placement

__all__ = ["KEY_MIN_SLOT_STEPS", "lowest_slot_law", "selected_token_law",
           "others_never_output", "other_drafts_reason"]


def _slot_pieces(plan: KeyPlacement) -> list:
    """``[[(token, key mass), ...] per slot]``: the pieces of every token's key, by slot."""
    cache = plan._cache
    if "slot_pieces" not in cache:
        by_slot: list = [[] for _ in plan.slot_tokens]
        for t, pieces in plan.pieces.items():
            for j, mass in pieces:
                if mass:
                    by_slot[j].append((t, mass))
        cache["slot_pieces"] = by_slot
    return cache["slot_pieces"]


def lowest_slot_law(plan: KeyPlacement) -> Dist:
    """The law of the slot holding the smallest of the ``k`` keys (labels: slot indices):
    ``(1 - G_j)^k - (1 - G_(j+1))^k``, ``G_j`` the key mass before slot ``j`` (the slots'
    cuts: the placement's check establishes that the pieces in each slot add up to its width).

    >>> plan = key_placement(Dist.parse("3/5,2/5"), Dist.parse("1/2,1/2"), 8)
    >>> lowest_slot_law(plan)
    Dist({0: 255/256, 1: 1/256})
    """
    cache = plan._cache
    if "lowest_slot_law" not in cache:
        k = plan.k
        tails = [(1 - cut) ** k for cut in plan.cuts]        # all k keys at slot j or later
        slots = range(len(plan.slot_tokens))
        cache["lowest_slot_law"] = Dist([tails[j] - tails[j + 1] for j in slots], tuple(slots),
                                        check=False)
    return cache["lowest_slot_law"]


def selected_token_law(plan: KeyPlacement) -> Dist:
    """The token of the smallest of the ``k`` keys, over the labels of ``p``:
    ``sum_j P(lowest slot j) P(t | slot j)`` (:func:`lowest_slot_law`), where the token of a
    key known to lie in slot ``j`` is ``t`` with probability ``q(t) P(slot j | t) / m_j``, the
    share of the slot's key mass that the pieces give ``t``.

    >>> plan = key_placement(Dist.parse("3/5,2/5"), Dist.parse("1/2,1/2"), 8)
    >>> selected_token_law(plan) == plan.winner
    True
    """
    cache = plan._cache
    if "selected_token_law" not in cache:
        lowest = lowest_slot_law(plan)
        cuts = plan.cuts
        law = dict.fromkeys(plan.p.labels, 0)
        for j, pieces in enumerate(_slot_pieces(plan)):
            share = lowest.probs[j] / (cuts[j + 1] - cuts[j])
            for t, mass in pieces:
                law[t] += share * mass
        cache["selected_token_law"] = Dist(list(law.values()), tuple(law), check=False)
    return cache["selected_token_law"]


def others_never_output(p, q, k: int) -> str | None:
    """``None`` when a draft that is not selected can never be the output (module
    docstring), else the reason, naming the token and the slots.

    >>> others_never_output(Dist.parse("1/2,1/2"), Dist.parse("1/3,2/3"), 2) is None
    True
    """
    plan = key_placement(p, q, k)
    if "others_never_output" not in plan._cache:
        plan._cache["others_never_output"] = other_drafts_reason(plan)
    return plan._cache["others_never_output"]


def other_drafts_reason(plan: KeyPlacement) -> str | None:
    """What :func:`others_never_output` reads of a placement: ``None`` when no token of the
    residual has key mass at or after the first slot where a rejection can follow (or there
    is no other draft, or no rejection), else the reason."""
    if plan.k == 1 or plan.residual is None:
        return None                      # no other draft, or no rejection
    beta = plan.beta
    first_reject = None
    for j, pieces in enumerate(_slot_pieces(plan)):
        if any(beta[t] < 1 for t, _ in pieces):
            first_reject = j
            break
    if first_reject is None:
        return None
    residual = plan.residual
    for r, share in zip(residual.labels, residual.probs):
        if share == 0:
            continue
        late = [j for j, mass in plan.pieces.get(r, ()) if mass and j >= first_reject]
        if late:
            return (f"token {r!r} of the residual has key mass in slot {late[0]}, at or after "
                    f"slot {first_reject}, where a rejection can follow: a draft that is not "
                    "selected could be the output")
    return None


def _start(p, q, k):
    return ("smallest key",)


def _step(s, p, q, k, state):
    plan = key_placement(p, q, k)
    kind = state[0]
    if kind == "smallest key":
        x = s.draw(selected_token_law(plan), "smallest key")
        s.drafted.append(x)
        return ("selected", x)
    if kind == "selected":
        x = state[1]
        if s.coin(plan.beta[x], "accept"):
            return Done(s.accept(x))
        return ("rejected",)
    return Done(s.draw(plan.residual, "residual"))


#: ``key`` by its lowest key slot, for :func:`exactspec.engine.merged.enumerate_merged`
#: where :func:`others_never_output` holds (module docstring): at most ``|V|`` states a step.
KEY_MIN_SLOT_STEPS = Stepped(_start, _step, name="key-min-slot", plain_paths=250,
                             condition=others_never_output)
