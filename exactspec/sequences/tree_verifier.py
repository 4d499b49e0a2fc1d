"""Drafting a token tree and verifying it node by node: :func:`draft_tree`,
:func:`verify_tree`, one call (:func:`tree_call`) and the :class:`Tree` verifier, with the
law of the walk and the tree's layout (:mod:`exactspec.sequences.trees` describes the walk).

>>> from exactspec.sequences.multitoken import prove_sequence
>>> pair = ContextPair.context_free("1/2,3/10,1/5", "1/5,1/5,3/5")
>>> prove_sequence(Tree((2,), "rrs"), pair, m=2).lossless
True
"""

from __future__ import annotations

from fractions import Fraction

from ..core.dist import Dist
from ..optimum.draft_laws import draft_law as _draft_law
from .context import ContextPair
from .multitoken import Verifier, check_branching as _check_branching
from .node_rules import node_rule

__all__ = ["Tree", "children_of", "draft_tree", "drafted_tokens", "reach_probabilities",
           "tree_call", "tree_layout", "verification_law", "verify_tree"]


def drafted_tokens(branching) -> int:
    """Tokens a tree with this branching drafts: ``sum_d prod_{j<=d} b_j``.

    >>> drafted_tokens((2, 2)), drafted_tokens((1, 1, 1))
    (6, 3)
    """
    total, width = 0, 1
    for b in _check_branching(branching):
        width *= b
        total += width
    return total


def _draw_children(s, q: Dist, k: int, law: str) -> tuple:
    law_obj = _draft_law(law)
    law_obj.check(q, k)
    return tuple(law_obj.draw(s, q, k))


def draft_tree(s, pair: ContextPair, ctx, branching, drafts: str = "iid"):
    """Draft a whole tree through the sampler ``s``, level by level; returns the ``DiGraph``."""
    import networkx as nx

    branching = _check_branching(branching)
    ctx = tuple(ctx)
    tree = nx.DiGraph()
    tree.add_node((), token=None, context=ctx, depth=0)
    level = [()]
    for depth, k in enumerate(branching):
        nxt = []
        for node in level:
            c = tree.nodes[node]["context"]
            children = _draw_children(s, pair.draft(c), k, drafts)
            for i, x in enumerate(children):
                child = node + (i,)
                tree.add_node(child, token=x, context=c + (x,), depth=depth + 1)
                tree.add_edge(node, child)
                nxt.append(child)
        level = nxt
    tree.graph.update(context=ctx, branching=branching, drafts=_draft_law(drafts).name)
    return tree


def children_of(tree, node) -> list:
    """The children of ``node`` in ``tree``, in index order."""
    return sorted(tree.successors(node))


def verify_tree(s, pair: ContextPair, tree, rule, *, trace: bool = False):
    """Verify a drafted tree: the walk from the root (see the module docstring).  Returns the
    produced tokens, or ``(tokens, nodes visited)`` with ``trace=True``."""
    rule = node_rule(rule)
    node = ()
    out: tuple = ()
    visited = [node]
    while True:
        c = tree.nodes[node]["context"]
        kids = children_of(tree, node)
        p = pair.target(c)
        if not kids:
            out = out + (s.draw(p, "bonus"),)
            break
        tokens = tuple(tree.nodes[k]["token"] for k in kids)
        y = rule.run(s, p, pair.draft(c), tokens)
        out = out + (y,)
        if y not in tokens:
            break
        node = kids[tokens.index(y)]
        visited.append(node)
    return (out, tuple(visited)) if trace else out


def tree_call(s, pair: ContextPair, ctx, branching, rule, drafts: str | None = None) -> tuple:
    """One target call of the tree, drafting a node's children only when the walk reaches
    it (lazy: the same law as :func:`draft_tree` then :func:`verify_tree`, since a subtree
    the walk never enters is never read)."""
    rule = node_rule(rule, drafts)
    branching = _check_branching(branching)
    out: tuple = ()
    c = tuple(ctx)
    for k in branching:
        p, q = pair.target(c), pair.draft(c)
        children = _draw_children(s, q, k, rule.draft_law)
        y = rule.run(s, p, q, children)
        out = out + (y,)
        c = c + (y,)
        if y not in children:
            return out
    return out + (s.draw(pair.target(c), "bonus"),)


class Tree(Verifier):
    """A token tree with ``branching[d]`` children per node at depth ``d``, verified node by
    node with ``rule``; ``drafts`` overrides the rule's draft law; ``lazy=False`` drafts the
    whole tree before verifying (the reference), ``lazy=True`` (default) only what the walk
    reaches.

    >>> Tree((2, 2), "rrs-wor").describe()["drafts"]
    'wor'
    """

    def __init__(self, branching, rule="rrs", drafts: str | None = None, *, lazy: bool = True):
        self.branching = _check_branching(branching)
        self.rule = node_rule(rule, drafts)
        self.lazy = lazy
        self.name = "tree"
        self.max_tokens = len(self.branching) + 1
        self.drafted = drafted_tokens(self.branching)

    def call(self, s, pair, ctx):
        if self.lazy:
            return tree_call(s, pair, ctx, self.branching, self.rule)
        tree = draft_tree(s, pair, ctx, self.branching, self.rule.draft_law)
        return verify_tree(s, pair, tree, self.rule)

    def describe(self):
        return {**super().describe(), "branching": list(self.branching),
                "rule": self.rule.name, "drafts": self.rule.draft_law, "lazy": self.lazy}

    def identity(self):
        if self.rule.registered is None:
            return None
        return "tree", None, {"branching": list(self.branching), "rule": self.rule.registered,
                              "drafts": self.rule.draft_law, "lazy": self.lazy}

    def __repr__(self):
        return f"Tree({list(self.branching)}, {self.rule.name!r}, {self.rule.draft_law!r})"


def verification_law(pair: ContextPair, tree, rule):
    """The exact law of the tokens produced when verifying the *given* drafted ``tree``
    (only the verifier's randomness): a :class:`~exactspec.engine.runs.RunEnumeration`."""
    from ..engine.runs import enumerate_runs

    return enumerate_runs(lambda s: verify_tree(s, pair, tree, rule), keep_paths=True)


def reach_probabilities(pair: ContextPair, tree, rule) -> dict:
    """``P(the walk reaches node)`` for every node of the given drafted ``tree``."""
    from ..engine.runs import enumerate_runs

    result = enumerate_runs(lambda s: verify_tree(s, pair, tree, rule, trace=True))
    reach = {node: Fraction(0) for node in tree.nodes}
    for (_, visited), w in result.law.items():
        for node in visited:
            reach[node] += w
    return reach


def tree_layout(tree) -> dict:
    """``{node: (x, y)}`` for drawing: leaves evenly spaced, parents centred, depth down."""
    pos: dict = {}
    leaves = [n for n in sorted(tree.nodes) if tree.out_degree(n) == 0]
    order = {n: i for i, n in enumerate(sorted(leaves))}

    def place(node):
        kids = children_of(tree, node)
        if not kids:
            x = float(order[node])
        else:
            x = sum(place(k) for k in kids) / len(kids)
        pos[node] = (x, -float(tree.nodes[node]["depth"]))
        return x

    place(())
    return pos
