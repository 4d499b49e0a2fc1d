"""Block verification (Sun, Mendlovic, Leviathan et al., ICLR 2025): accept whole blocks.

The chain of :mod:`exactspec.sequences.chains` verifies its ``gamma`` drafts token by token and stops at
the first rejection.  Block verification judges the prefixes jointly (docs/methods.md#sequences):
``w_0 = 1``, ``w_i = min(1, w_{i-1} p(X_i|X_<i) / q(X_i|X_<i))``;
``h_i = s_i / (s_i + 1 - w_i)`` with ``s_i = sum_x (w_i p(x|X_<=i) - q(x|X_<=i))_+`` for
``i < gamma`` (``h_i = 1`` when ``w_i = 1`` and ``s_i = 0``), ``h_gamma = w_gamma``.  Block
``i`` is accepted with probability ``h_i``, independently, and ``tau`` is the largest accepted
``i`` (``h_0 = 1``); if ``tau = gamma`` the bonus is drawn from ``p(.|X_<=gamma)``, else the
next token from ``norm((w_tau p(.|X_<=tau) - q(.|X_<=tau))_+)``.  The coins are tossed from
``i = gamma`` down, stopping at the first head, which has the same law.

Check values (draft ``(2/3, 1/3)``, target ``(1/3, 2/3)``, context-free, ``gamma = 2``):
expected accepted draft tokens ``10/9`` token by token, ``11/9`` by blocks, ``12/9`` ideal.

>>> from exactspec.sequences.context import ContextPair
>>> from exactspec.sequences.chains import Chain
>>> pair = ContextPair.context_free("1/3,2/3", "2/3,1/3")
>>> accepted_per_call(Chain(2), pair), accepted_per_call(Block(2), pair), ideal_accepted(pair, 2)
(Fraction(10, 9), Fraction(11, 9), Fraction(4, 3))
"""

from __future__ import annotations

from fractions import Fraction

from .context import ContextPair
from ..core.dist import Dist
from ..core.errors import InvalidInput
from .chains import draft_chain
from .multitoken import Verifier, tokens_per_call

__all__ = ["Block", "block_call", "block_weights", "accepted_per_call", "ideal_accepted",
           "BLOCK_CHECK_PAIR", "BLOCK_CHECK_VALUES"]


def block_weights(pair: ContextPair, ctx, drafts) -> tuple[list, list]:
    """``(w, h)`` for the drafts ``X_1..X_gamma`` from ``ctx``: ``w_0..w_gamma`` and the block
    acceptance probabilities ``h_0..h_gamma``.

    >>> from exactspec.sequences.context import ContextPair
    >>> w, h = block_weights(ContextPair.context_free("1/3,2/3", "2/3,1/3"), (), (1, 0))
    >>> [str(v) for v in w], [str(v) for v in h]
    (['1', '1', '1/2'], ['1', '1', '1/2'])
    """
    ctx = tuple(ctx)
    gamma = len(drafts)
    w = [Fraction(1)]
    for i, x in enumerate(drafts):
        c = ctx + tuple(drafts[:i])
        p, q = pair.target(c), pair.draft(c)
        if q[x] == 0:
            raise InvalidInput(f"draft {x!r} at context {list(c)} has q = 0: it cannot be drafted")
        w.append(min(Fraction(1), w[-1] * p[x] / q[x]))
    h = []
    for i in range(gamma):
        c = ctx + tuple(drafts[:i])
        p, q = pair.target(c), pair.draft(c)
        s_i = sum((max(w[i] * p[t] - q[t], 0) for t in p.labels), Fraction(0))
        if w[i] == 1 and s_i == 0:
            h.append(Fraction(1))
        else:
            h.append(s_i / (s_i + 1 - w[i]))
    h.append(w[gamma])
    return w, h


def block_call(s, pair: ContextPair, ctx, gamma: int) -> tuple:
    """One target call of block verification; returns the tokens it produces."""
    ctx = tuple(ctx)
    drafts = draft_chain(s, pair, ctx, gamma)
    w, h = block_weights(pair, ctx, drafts)
    tau = 0
    for i in range(gamma, -1, -1):
        if s.coin(h[i], f"block{i}"):
            tau = i
            break
    c = ctx + tuple(drafts[:tau])
    if tau == gamma:
        y = s.draw(pair.target(c), "bonus")
    else:
        p, q = pair.target(c), pair.draft(c)
        masses = [max(w[tau] * a - b, 0) for a, b in zip(p.probs, q.probs)]
        total = sum(masses, Fraction(0))
        if total == 0:
            raise AssertionError("internal: block tau chosen with an empty residual")
        y = s.draw(Dist([m / total for m in masses], p.labels, check=False), "residual")
    return tuple(drafts[:tau]) + (y,)


class Block(Verifier):
    """Block verification of ``gamma`` drafted tokens (:func:`block_call`)."""

    def __init__(self, gamma: int):
        if isinstance(gamma, bool) or not isinstance(gamma, int) or gamma < 0:
            raise InvalidInput(f"gamma={gamma!r}: need a number of draft tokens >= 0")
        self.gamma = gamma
        self.name = "block"
        self.max_tokens = gamma + 1
        self.drafted = gamma

    def call(self, s, pair, ctx):
        return block_call(s, pair, ctx, self.gamma)

    def describe(self):
        return {**super().describe(), "gamma": self.gamma}

    def identity(self):
        return "block", self.gamma, {}

    def __repr__(self):
        return f"Block({self.gamma})"


def accepted_per_call(verifier, pair: ContextPair, ctx=()) -> Fraction:
    """Expected accepted draft tokens per call: tokens per call minus the one token every call
    adds (the residual sample or the bonus) — exact for chains, trees and blocks."""
    return tokens_per_call(verifier, pair, ctx) - 1


def ideal_accepted(pair: ContextPair, gamma: int, ctx=()) -> Fraction:
    """``sum_{i<=gamma} sum_{x_1..x_i} min(p(x_1..x_i), q(x_1..x_i))``: the expected accepted
    prefix length of an ideal coupling of the draft and target blocks (an upper bound for any
    lossless verification of a ``gamma``-token draft)."""
    total = Fraction(0)
    for i in range(1, gamma + 1):
        p, q = pair.joint(i, ctx), pair.joint(i, ctx, side="draft")
        total += sum((min(p[t], q[t]) for t in p), Fraction(0))
    return total


#: The two-token example of docs/methods.md#sequences: draft ``(2/3, 1/3)``, target ``(1/3, 2/3)``.
BLOCK_CHECK_PAIR = ("1/3,2/3", "2/3,1/3")
#: Expected accepted draft tokens at ``gamma = 2``: token by token, blocks, ideal.
BLOCK_CHECK_VALUES = {"token": Fraction(10, 9), "block": Fraction(11, 9),
                      "ideal": Fraction(12, 9)}
