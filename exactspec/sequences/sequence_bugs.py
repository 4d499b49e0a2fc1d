"""Sequence-level bug classes: a chain's bonus from the first position's target, a rejected
draft kept in the output, tree RRS with a stale residual; each with its correct version and
the instance that exposes it (:func:`sequence_bugs`, :func:`run_sequence_bugs`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.dist import residual
from .context import ContextPair
from .multitoken import Verifier, check_branching as _check_branching, prove_sequence
from .tree_verifier import drafted_tokens

__all__ = ["SequenceBug", "first_row_bonus_chain", "kept_rejected_chain", "run_sequence_bugs",
           "sequence_bugs", "stale_residual_tree", "stale_residual_tree_call"]


def stale_residual_tree_call(s, pair: ContextPair, ctx, branching, *, fixed: bool = False
                             ) -> tuple:
    """BUG (``fixed=False``): RRS over a tree whose residual cache ``res`` is not cleared when
    a sibling is accepted, so after one sibling is rejected and another accepted, the next
    node's rule and the leaf's bonus read the parent's stale residual instead of
    ``p(. | accepted child)``.  ``fixed=True`` clears it (the correct tree RRS)."""
    branching = _check_branching(branching)
    out: tuple = ()
    c = tuple(ctx)
    res = None
    for k in branching:
        p, q = pair.target(c), pair.draft(c)
        children = s.drafts(q, k)
        accepted = None
        for i, x in enumerate(children):
            r = res if res is not None else p
            if s.coin(min(1, r[x] / q[x]), f"accept{i + 1}"):
                accepted = x
                break
            res = residual(r, q)
        if accepted is None:
            return out + (s.draw(res, "residual"),)
        out = out + (accepted,)
        c = c + (accepted,)
        if fixed:
            res = None
    return out + (s.draw(res if res is not None else pair.target(c), "bonus"),)


@dataclass(frozen=True)
class SequenceBug:
    """One sequence-level bug class: the buggy call, the correct call, the instance."""

    name: str
    description: str
    buggy: Verifier
    correct: Verifier
    pair: ContextPair
    m: int


def first_row_bonus_chain(gamma: int) -> Verifier:
    """The chain whose bonus is drawn from the first position's target, as a verifier."""
    from .chains import first_row_bonus_chain_call
    from .multitoken import FunctionVerifier

    return FunctionVerifier(lambda s, pair, ctx: first_row_bonus_chain_call(s, pair, ctx, gamma),
                            "first-row-bonus", gamma + 1, gamma,
                            ("first-row-bonus", gamma, ()))


def kept_rejected_chain(gamma: int) -> Verifier:
    """The chain that keeps a rejected draft token in its output, as a verifier."""
    from .chains import kept_rejected_chain_call
    from .multitoken import FunctionVerifier

    return FunctionVerifier(lambda s, pair, ctx: kept_rejected_chain_call(s, pair, ctx, gamma),
                            "rejected-draft-kept", gamma + 1, gamma,
                            ("rejected-draft-kept", gamma, ()))


def stale_residual_tree(branching, *, fixed: bool = False) -> Verifier:
    """Tree RRS with the stale residual cache (``fixed=False``) or cleared (``fixed=True``:
    the correct tree RRS), as a verifier."""
    from .multitoken import FunctionVerifier

    branching = _check_branching(branching)
    name = "tree-rrs" if fixed else "stale-residual-bonus"
    return FunctionVerifier(lambda s, pair, ctx: stale_residual_tree_call(
        s, pair, ctx, branching, fixed=fixed), name, len(branching) + 1,
        drafted_tokens(branching), (name, None, (("branching", list(branching)),)))


def sequence_bugs() -> list[SequenceBug]:
    """The sequence-level bug classes, each with the instance that exposes it."""
    from .chains import Chain

    seed = ContextPair.context_free("1/2,3/10,1/5", "1/5,1/5,3/5", name="seed pair")
    offset = ContextPair.from_table({"target": {"": "1,0", "0": "0,1"},
                                   "draft": {"": "1,0", "0": "1/2,1/2"}},
                                  name="q_0 = p_0 = (1, 0), p_1 = (0, 1)")
    return [
        SequenceBug(
            "first-row-bonus",
            "the bonus token is drawn from the first position's target p(.|c) instead of the "
            "last, p(.|c, x_1..x_gamma) (a kernel read the bonus row without the position "
            "offset)",
            first_row_bonus_chain(1), Chain(1), offset, 2),
        SequenceBug(
            "stale-residual-bonus",
            "tree RRS whose residual is not reset when a sibling is accepted: after one "
            "sibling is rejected and another accepted, the bonus is drawn from the stale "
            "residual instead of p(.|leaf)",
            stale_residual_tree((2,)), stale_residual_tree((2,), fixed=True), seed, 2),
        SequenceBug(
            "rejected-draft-kept",
            "on a rejection the rejected draft token stays in the output before the residual "
            "sample",
            kept_rejected_chain(1), Chain(1), seed, 2),
    ]


def run_sequence_bugs() -> list[dict]:
    """Each bug class: the buggy law (refuted), the target law, the correct version's verdict.

    >>> [(row["name"], row["buggy_lossless"], row["correct_lossless"])
    ...  for row in run_sequence_bugs()]  # doctest: +NORMALIZE_WHITESPACE
    [('first-row-bonus', False, True), ('stale-residual-bonus', False, True),
     ('rejected-draft-kept', False, True)]
    """
    rows = []
    for bug in sequence_bugs():
        bad = prove_sequence(bug.buggy, bug.pair, bug.m)
        good = prove_sequence(bug.correct, bug.pair, bug.m)
        rows.append({"name": bug.name, "description": bug.description, "pair": bug.pair.name,
                     "m": bug.m, "buggy_lossless": bad.lossless, "law": bad.nonzero_law(),
                     "target": {t: w for t, w in bad.target.items() if w != 0},
                     "tv": bad.tv, "correct_lossless": good.lossless, "buggy": bad,
                     "correct": good})
    return rows
