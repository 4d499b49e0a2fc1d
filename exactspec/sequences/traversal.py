"""Traversal Verification (Weng et al., NeurIPS 2025): verify a token tree from the leaves up.

The children of each node are drafted *without replacement* from ``q(. | node)`` and kept in
drafting order.  Every node ``u`` carries a sequence-level acceptance probability ``p_u``, a
target-side distribution ``P_u`` (at first ``p(. | u)``) and a draft-side distribution ``Q_u``
(at first ``q(. | u)``).  The root has ``p = 1``; a child ``c`` with token ``t`` gets
``p_c = min(1, p_u P_u(t) / Q_u(t))`` from its parent's state when it is first entered.

Verification walks the tree in post-order: go to the first live child until a node has none
(a leaf, or an inner node whose children were all rejected).  That node ``a`` is accepted with
probability ``p_a``: the call returns the path to ``a`` and one token drawn from ``P_a``.  If
it is rejected, it is deleted and its parent ``u`` is updated with its old state:

- ``S = sum_x (p_u P_u(x) - Q_u(x))_+`` over the whole vocabulary;
- ``p_u <- S / (S + 1 - p_u)``; ``P_u <- norm((p_u P_u - Q_u)_+)`` (old ``p_u``);
- ``Q_u`` loses the rejected token and is renormalised (the next sibling is drafted from it).

The root keeps ``p = 1``, so when the walk comes back to it the call returns one token from
the root's current ``P`` (``norm((p - q)_+)`` after its first rejected child).  On a chain the
rule accepts the whole block with ``p_gamma`` and otherwise the prefix of length ``i`` with
``S_i / (S_i + 1 - p_i)``: block verification (:mod:`exactspec.sequences.block`).

Drafting is lazy here: a sibling is drafted only once the one before it is rejected, which has
the same law (sibling ``j`` is drawn from ``q`` without siblings ``1..j-1``, and those are all
gone by then) and far fewer paths.

>>> from exactspec.sequences.context import ContextPair
>>> from exactspec.sequences.multitoken import prove_sequence
>>> from exactspec.sequences.block import Block, accepted_per_call
>>> pair = ContextPair.context_free("1/3,2/3", "2/3,1/3")
>>> accepted_per_call(Traversal((1, 1)), pair), accepted_per_call(Block(2), pair)
(Fraction(11, 9), Fraction(11, 9))
>>> proof = prove_sequence(Traversal((2, 1)), ContextPair.context_free("1/2,3/10,1/5",
...                                                                   "1/5,1/5,3/5"), m=3)
>>> proof.lossless, proof.tokens_per_call
(True, Fraction(51, 20))
"""

from __future__ import annotations

from fractions import Fraction

from .context import ContextPair
from ..core.dist import Dist
from .multitoken import Verifier, check_branching as _check_branching

__all__ = ["Traversal", "traversal_call", "traversal_update", "chain_comparison"]


def traversal_update(accept: Fraction, target: list, draft: list, index: int):
    """The parent's new state after its child with token position ``index`` is rejected.

    ``accept``, ``target`` and ``draft`` are the parent's ``p_u``, ``P_u`` and ``Q_u`` (lists
    of probabilities in label order).  Returns ``(p_u', P_u', Q_u')``; ``P_u'`` is ``None``
    when ``S = 0`` (then ``p_u' = 0`` and it is never read).

    >>> a, t, d = traversal_update(Fraction(1), [Fraction(1, 3), Fraction(2, 3)],
    ...                            [Fraction(2, 3), Fraction(1, 3)], 0)
    >>> a, t, d
    (Fraction(1, 1), [Fraction(0, 1), Fraction(1, 1)], [Fraction(0, 1), Fraction(1, 1)])
    """
    over = [max(accept * a - b, 0) for a, b in zip(target, draft)]
    s = sum(over, Fraction(0))
    rest = 1 - draft[index]
    new_draft = [Fraction(0) if i == index else (b / rest if rest else Fraction(0))
                 for i, b in enumerate(draft)]
    if s == 0:
        if accept == 1:
            raise AssertionError("internal: a child of a node with p = 1 and S = 0 cannot be "
                                 "rejected")
        return Fraction(0), None, new_draft
    return s / (s + 1 - accept), [v / s for v in over], new_draft


class _Node:
    __slots__ = ("context", "tokens", "depth", "accept", "target", "draft", "drawn")

    def __init__(self, pair, context, tokens, depth, accept):
        self.context = context
        self.tokens = tokens
        self.depth = depth
        self.accept = accept
        self.target = list(pair.target(context).probs)
        self.draft = list(pair.draft(context).probs)
        self.drawn = 0


def traversal_call(s, pair: ContextPair, ctx, branching) -> tuple:
    """One target call of Traversal Verification over a tree with this ``branching`` (children
    per depth, drafted without replacement; a node gets fewer children when ``q`` has fewer
    tokens left).  Returns the tokens it produces."""
    branching = _check_branching(branching)
    labels = pair.labels
    ctx = tuple(ctx)

    def visit(node: _Node):
        # returns the call's tokens if something at or below `node` is accepted, else None
        while node.depth < len(branching) and node.drawn < branching[node.depth] \
                and any(node.draft):
            node.drawn += 1
            q = Dist(node.draft, labels, check=False)
            t = s.draft(q, f"draft{node.depth + 1}.{node.drawn}")
            i = labels.index(t)
            child_accept = min(Fraction(1), node.accept * node.target[i] / node.draft[i])
            child = _Node(pair, node.context + (t,), node.tokens + (t,), node.depth + 1,
                          child_accept)
            out = visit(child)
            if out is not None:
                return out
            node.accept, target, node.draft = traversal_update(node.accept, node.target,
                                                               node.draft, i)
            if target is not None:
                node.target = target
        if node.depth == 0 or s.coin(node.accept, f"accept{node.depth}"):
            return node.tokens + (s.draw(Dist(node.target, labels, check=False), "next"),)
        return None

    return visit(_Node(pair, ctx, (), 0, Fraction(1)))


class Traversal(Verifier):
    """Traversal Verification of a tree with this ``branching`` (:func:`traversal_call`);
    ``Traversal((1,) * gamma)`` is the ``gamma``-token chain.

    >>> Traversal((2, 2)).describe()
    {'verifier': 'traversal', 'max_tokens': 3, 'drafted': 6, 'branching': [2, 2]}
    """

    def __init__(self, branching):
        self.branching = _check_branching(branching)
        self.name = "traversal"
        self.max_tokens = len(self.branching) + 1
        total, width = 0, 1
        for b in self.branching:
            width *= b
            total += width
        self.drafted = total

    def call(self, s, pair, ctx):
        return traversal_call(s, pair, ctx, self.branching)

    def describe(self):
        return {**super().describe(), "branching": list(self.branching)}

    def identity(self):
        return "traversal", None, {"branching": list(self.branching)}

    def __repr__(self):
        return f"Traversal({self.branching})"


# -- comparisons ---------------------------------------------------------------------------

def chain_comparison(pairs, gamma: int, ctx=()) -> list[dict]:
    """On each pair: the exact tokens per call of Traversal Verification on a ``gamma``-chain,
    block verification and token-by-token verification, and whether the one-call laws of
    traversal and block verification are identical.

    >>> from exactspec.sequences.context import ContextPair
    >>> row = chain_comparison([ContextPair.context_free("1/3,2/3", "2/3,1/3")], 2)[0]
    >>> row["traversal"], row["block"], row["token"], row["same_law"]
    (Fraction(20, 9), Fraction(20, 9), Fraction(19, 9), True)
    """
    from .block import Block
    from .chains import Chain
    from .multitoken import call_law

    rows = []
    for index, pair in enumerate(pairs):
        tv = call_law(Traversal((1,) * gamma), pair, ctx)
        bv = call_law(Block(gamma), pair, ctx)
        token = call_law(Chain(gamma, lazy=True), pair, ctx)
        same = {t: w for t, w in tv.law.items() if w} == {t: w for t, w in bv.law.items() if w}
        rows.append({"instance": index, "pair": pair, "traversal": tv.expectation(len),
                     "block": bv.expectation(len), "token": token.expectation(len),
                     "same_law": same})
    return rows

