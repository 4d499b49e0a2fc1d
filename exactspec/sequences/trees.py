"""Token trees on networkx: draft a tree, verify it node by node with a multi-draft rule.

A draft tree is a networkx ``DiGraph`` rooted at the context (docs/math.md#token-trees).  Node ids
are tuples of child indices (the root is ``()``, its second child ``(1,)``), so two children
may carry the same token (i.i.d. drafts); each node has ``token`` (``None`` at the root),
``context`` (the whole token tuple) and ``depth``.  With a *branching* ``(b_1, ..., b_D)``
every node at depth ``d`` has ``b_{d+1}`` children drafted from ``q(. | node)`` under a draft
law (``"iid"``, ``"wor"`` without replacement, ``"hub"``; :mod:`exactspec.optimum.draft_laws`).

Verification walks from the root: at a node, a *node rule* ``rule(s, p, q, children) -> y``
(the node's target and draft distributions and its children's tokens, in drafting order)
returns one token ``y`` whose law must be ``p``; if ``y`` is one of the children the walk moves
to the first such child, else it stops with ``y`` (a residual sample).  At an accepted leaf a
bonus token is drawn from ``p(. | leaf)``.  Lossless whenever each node's rule is lossless for
that node's child-draft law: a child's subtree is drafted independently of everything else at
the node, so the walk continues with a fresh tree below the chosen token.

Node rules (:func:`node_rule`): ``rrs`` and ``rrs-wor`` run the registered methods
(:mod:`exactspec.methods.rrs`, :mod:`exactspec.methods.rrs_wor`) on the node's children,
``optimal`` is the exact optimal transport for the node's draft law (a max flow over draft
multisets), and any method registered in :data:`exactspec.methods.METHODS` (``key``,
``kseq``, ``spechub``, ...) plugs in the same way, replaying the children as its drafts.

This module gathers the token trees' public names from the modules of
``exactspec.sequences`` that define them, one concern each: the node rules (``node_rules``),
drafting and verifying a tree (``tree_verifier``), Sequoia's positional model
(``positional``), the sequence-level bug classes (``sequence_bugs``) and the ``exactspec tree``
input format, report and text (``tree_spec``).

>>> from exactspec.sequences.context import ContextPair
>>> from exactspec.sequences.multitoken import prove_sequence
>>> pair = ContextPair.context_free("1/2,3/10,1/5", "1/5,1/5,3/5")
>>> proof = prove_sequence(Tree((2, 2), "rrs"), pair, m=3)
>>> proof.lossless, proof.tokens_per_call
(True, Fraction(1461, 625))
>>> positional_tokens_per_call((2, 2), rrs_positional_probabilities(pair.target(), pair.draft(), 2))
Fraction(1461, 625)
"""

from .multitoken import prove_sequence  # noqa: F401  (the examples' namespace)
from .node_rules import NODE_RULES, NodeRule, node_rule, optimal_rule, rule_from_method
from .positional import (branching_patterns, chain_vs_tree_table, positional_tokens_per_call,
                         rrs_positional_probabilities)
from .sequence_bugs import (SequenceBug, first_row_bonus_chain, kept_rejected_chain,
                            run_sequence_bugs, sequence_bugs, stale_residual_tree,
                            stale_residual_tree_call)
from .tree_spec import MAX_TREE_NODES, check_tree_size, load_tree_spec, tree_report, tree_text
from .tree_verifier import (Tree, draft_tree, drafted_tokens, reach_probabilities, tree_call,
                            tree_layout, verification_law, verify_tree)

__all__ = [
    "NodeRule",
    "NODE_RULES",
    "node_rule",
    "rule_from_method",
    "optimal_rule",
    "Tree",
    "draft_tree",
    "verify_tree",
    "tree_call",
    "verification_law",
    "reach_probabilities",
    "tree_layout",
    "drafted_tokens",
    "first_row_bonus_chain",
    "kept_rejected_chain",
    "stale_residual_tree",
    "branching_patterns",
    "positional_tokens_per_call",
    "rrs_positional_probabilities",
    "chain_vs_tree_table",
    "stale_residual_tree_call",
    "SequenceBug",
    "sequence_bugs",
    "run_sequence_bugs",
    "load_tree_spec",
    "tree_report",
    "tree_text",
    "MAX_TREE_NODES",
    "check_tree_size",
]
