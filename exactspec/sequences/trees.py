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

>>> from exactspec.sequences.context import ContextPair
>>> from exactspec.sequences.multitoken import prove_sequence
>>> pair = ContextPair.context_free("1/2,3/10,1/5", "1/5,1/5,3/5")
>>> proof = prove_sequence(Tree((2, 2), "rrs"), pair, m=3)
>>> proof.lossless, proof.tokens_per_call
(True, Fraction(1461, 625))
>>> positional_tokens_per_call((2, 2), rrs_positional_probabilities(pair.target(), pair.draft(), 2))
Fraction(1461, 625)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from .context import ContextPair, context_key, parse_context, read_spec
from ..core.dist import Dist, exact, exact_str, residual
from ..optimum.draft_laws import draft_law as _draft_law
from ..core.errors import InvalidInput
from .multitoken import Verifier, call_law, check_branching as _check_branching, \
    prove_sequence

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
]


# -- node rules ----------------------------------------------------------------------------

@dataclass(frozen=True)
class NodeRule:
    """A per-node verification rule ``run(s, p, q, children) -> token`` and the draft law of
    the children it is lossless for (``"iid"``, ``"wor"``, ``"hub"``)."""

    name: str
    run: Callable
    draft_law: str = "iid"
    #: the name :func:`node_rule` built it from (``rrs``, ``optimal``, a registered method),
    #: ``None`` for a rule given as a function: a tree of a named rule is one of exactspec's
    #: own verifiers, which a certificate's replay rebuilds by name
    registered: str | None = None


class _ReplayedDrafts:
    """A sampler whose drafts are a node's children, already drawn; everything else goes to
    the sampler underneath.  Lets a method ``f(s, p, q, k)`` verify a tree node."""

    def __init__(self, s, children):
        self._s = s
        self._children = tuple(children)
        self._next = 0

    def draft(self, q, what: str = "draft"):
        if self._next >= len(self._children):
            raise InvalidInput(f"the node rule drew more drafts than the node's "
                               f"{len(self._children)} children")
        x = self._children[self._next]
        self._next += 1
        return x

    def drafts(self, q, k: int, replace: bool = True) -> tuple:
        return tuple(self.draft(q) for _ in range(k))

    def __getattr__(self, name):
        return getattr(self._s, name)


def rule_from_method(method) -> NodeRule:
    """A node rule from a verification method (a registered name, a
    :class:`~exactspec.methods.Method` or ``f(s, p, q, k)``): the method runs on the node's
    ``p``, ``q`` and ``k = number of children``, and its drafts are the children."""
    from ..methods import get_method

    m = get_method(method)

    def run(s, p, q, children, _run=m.run):
        return _run(_ReplayedDrafts(s, children), p, q, len(children))

    return NodeRule(m.name, run, m.draft_law)


@dataclass(frozen=True)
class _Plan:
    routes: dict
    residual: Dist | None
    alpha: Fraction


@lru_cache(maxsize=512)
def _optimal_plan(p: Dist, q: Dist, k: int, law: str) -> _Plan:
    """The exact optimal transport for ``k`` drafts under ``law``: for each draft multiset
    ``X`` the law of the routed token (accept ``t`` in ``X``) or the residual."""
    from ..optimum.alpha_star import draft_multisets, transport_flow

    multisets = list(draft_multisets(q, k, law))
    _, flows = transport_flow(p.labels, p.probs, multisets)
    accepted = {t: Fraction(0) for t in p.labels}
    routes = {}
    for drafts, weight in multisets:
        node = ("drafts", drafts)
        options, left = [], weight
        for t in sorted(set(drafts), key=q.index):
            f = Fraction(flows[node][("token", t)]["flow"])
            if f:
                options.append((("accept", t), f / weight))
                accepted[t] += f
                left -= f
        if left:
            options.append((("residual",), left / weight))
        routes[drafts] = Dist([w for _, w in options], [lab for lab, _ in options],
                              check=False)
    alpha = sum(accepted.values(), Fraction(0))
    rest = None
    if alpha != 1:
        rest = Dist([(p[t] - accepted[t]) / (1 - alpha) for t in p.labels], p.labels,
                    check=False)
    return _Plan(routes, rest, alpha)


def optimal_rule(law: str = "iid") -> NodeRule:
    """The exact optimal node rule for drafts under ``law``: given the multiset ``X`` of the
    children, accept ``t`` in ``X`` with the max-flow's conditional probability, else draw
    from ``(p - a) / (1 - alpha)``, ``a`` the flow into each token.  Its acceptance is the
    draft law's optimum (``alpha*`` for i.i.d. drafts)."""
    law = _draft_law(law).name

    def run(s, p, q, children):
        plan = _optimal_plan(p, q, len(children), law)
        drafts = tuple(sorted(children, key=q.index))
        choice = s.draw(plan.routes[drafts], "route")
        if choice[0] == "accept":
            return s.accept(choice[1])
        return s.draw(plan.residual, "residual")

    return NodeRule("optimal" if law == "iid" else f"optimal-{law}", run, law)


def _rrs_rule() -> NodeRule:
    from ..methods.rrs import rrs

    return NodeRule("rrs", rule_from_method(rrs).run, "iid")


def _rrs_wor_rule() -> NodeRule:
    from ..methods.rrs_wor import rrs_wor

    return NodeRule("rrs-wor", rule_from_method(rrs_wor).run, "wor")


#: The built-in node rules by name (``optimal`` adapts to the tree's draft law).
NODE_RULES: dict[str, Callable[[], NodeRule]] = {
    "rrs": _rrs_rule,
    "rrs-wor": _rrs_wor_rule,
    "optimal": lambda: optimal_rule("iid"),
}


def node_rule(spec, drafts: str | None = None) -> NodeRule:
    """The node rule named ``spec`` (``rrs``, ``rrs-wor``, ``optimal``, or any method in
    :data:`exactspec.methods.METHODS`, e.g. ``key`` once registered), a :class:`NodeRule`, or
    a function ``f(s, p, q, children)``; ``drafts`` overrides the children's draft law
    (``optimal`` then uses the optimum of that law; other rules run as given, which may be
    lossy: the engine will say).

    >>> node_rule("rrs-wor").draft_law, node_rule("optimal", "wor").name
    ('wor', 'optimal-wor')
    """
    if isinstance(spec, NodeRule):
        rule = spec
    elif callable(spec) and not isinstance(spec, str):
        rule = NodeRule(getattr(spec, "__name__", "rule"), spec, "iid")
    elif isinstance(spec, str) and spec in NODE_RULES:
        if spec == "optimal" and drafts is not None:
            return replace(optimal_rule(drafts), registered="optimal")
        rule = replace(NODE_RULES[spec](), registered=spec)
    elif isinstance(spec, str):
        from ..methods import METHODS

        if spec not in METHODS:
            known = ", ".join(sorted(set(NODE_RULES) | set(METHODS)))
            raise InvalidInput(f"rule={spec!r}: choose one of {known}")
        rule = replace(rule_from_method(METHODS[spec]), registered=spec)
    else:
        raise InvalidInput(f"rule={spec!r}: give a rule name such as rrs, or f(s, p, q, "
                           "children)")
    if drafts is not None:
        law = _draft_law(drafts).name
        if law != rule.draft_law:
            if rule.draft_law == "wor":
                raise InvalidInput(f"rule={rule.name!r} needs distinct children (drafts without "
                                   f"replacement); drafts={drafts!r} can repeat a child")
            rule = replace(rule, draft_law=law)
    return rule


# -- drafting and verifying trees ----------------------------------------------------------

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


def _children(tree, node) -> list:
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
        kids = _children(tree, node)
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
        kids = _children(tree, node)
        if not kids:
            x = float(order[node])
        else:
            x = sum(place(k) for k in kids) / len(kids)
        pos[node] = (x, -float(tree.nodes[node]["depth"]))
        return x

    place(())
    return pos


# -- idealised trees: Sequoia's positional model -------------------------------------------

def positional_tokens_per_call(tree_or_branching, P) -> Fraction:
    """Expected tokens per call when the ``j``-th child of any node is the accepted one with
    probability ``P[j-1]``, whatever the context (Sequoia's positional acceptance model):
    ``sum over nodes v of prod_{edges on the path to v} P[position]`` (the root counts 1:
    the token every call adds).  ``tree_or_branching`` is a branching ``(b_1, ..)`` or a
    drafted tree (children ordered by index).

    >>> positional_tokens_per_call((1, 1), ["3/5"])  # the chain: (1 - a^3) / (1 - a)
    Fraction(49, 25)
    """
    P = [exact(v, f"P[{j}]") for j, v in enumerate(P)]
    if any(v < 0 for v in P) or sum(P, Fraction(0)) > 1:
        raise InvalidInput(f"P={[exact_str(v) for v in P]}: positional acceptance "
                           "probabilities must be >= 0 and sum to at most 1")
    if isinstance(tree_or_branching, (tuple, list)):
        branching = _check_branching(tree_or_branching)
        if branching and max(branching) > len(P):
            raise InvalidInput(f"branching={list(branching)} has {max(branching)} children "
                               f"at a node but P gives only {len(P)} positions")
        total, path = Fraction(1), Fraction(1)
        for b in branching:
            path *= sum(P[:b], Fraction(0))
            total += path
        return total
    tree = tree_or_branching
    total = Fraction(0)

    def walk(node, weight):
        nonlocal total
        total += weight
        for j, kid in enumerate(_children(tree, node)):
            if j >= len(P):
                raise InvalidInput(f"node {node} has {j + 1}+ children but P gives only "
                                   f"{len(P)} positions")
            walk(kid, weight * P[j])

    walk((), Fraction(1))
    return total


def rrs_positional_probabilities(p: Dist, q: Dist, k: int) -> list:
    """``P[j] = P(RRS accepts its j-th i.i.d. draft)`` for ``j = 1..k``:
    ``prod_{i<j} TV(r_{i-1}, q) * (1 - TV(r_{j-1}, q))``.  They do not depend on ``k`` or on
    the context when ``p`` and ``q`` do not, so the positional model is then exact for RRS
    trees.

    >>> rrs_positional_probabilities(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 3)
    [Fraction(3, 5), Fraction(4, 25), Fraction(17, 250)]
    """
    from ..bounds.closed_forms import rrs_residuals

    chain = rrs_residuals(p, q, k)
    out, reach = [], Fraction(1)
    for j in range(k):
        if j >= len(chain):            # r = q: that step accepts surely
            out.append(reach)
            reach = Fraction(0)
            continue
        tv = sum((max(a - b, 0) for a, b in zip(chain[j], q.probs)), Fraction(0))
        out.append(reach * (1 - tv))
        reach *= tv
    return out


def branching_patterns(n: int, *, max_depth: int | None = None) -> list:
    """Every branching ``(b_1, .., b_D)`` that drafts exactly ``n`` tokens.

    >>> branching_patterns(3)
    [(1, 1, 1), (1, 2), (3,)]
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InvalidInput(f"n={n!r}: need a number of drafted tokens >= 1")
    out = []

    def grow(prefix, width, left):
        if left == 0:
            out.append(tuple(prefix))
            return
        if max_depth is not None and len(prefix) >= max_depth:
            return
        for b in range(1, left // width + 1):
            grow(prefix + [b], width * b, left - width * b)

    grow([], 1, n)
    return sorted(out)


def chain_vs_tree_table(P, budgets=(1, 2, 3, 4, 5, 6)) -> list[dict]:
    """For each number ``n`` of drafted tokens: the chain's tokens per call and the best
    branching's, under the positional model ``P`` (exact)."""
    rows = []
    for n in budgets:
        chain = positional_tokens_per_call((1,) * n, P)
        scored = [(positional_tokens_per_call(b, P), b) for b in branching_patterns(n)
                  if max(b) <= len(P)]
        best_value = max(v for v, _ in scored)
        best = [b for v, b in scored if v == best_value]
        rows.append({"drafted": n, "chain": chain, "best_tree": best[0],
                     "best_tree_tokens": best_value, "ties": best[1:]})
    return rows


# -- sequence-level bug classes ------------------------------------------------------------

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


# -- the `exactspec tree` input format, report and text ------------------------------------

_SPEC_KEYS = {"model", "labels", "target", "draft", "verifier", "gamma", "branching", "rule",
              "drafts", "m", "context", "lazy"}


def load_tree_spec(spec) -> dict:
    """Read and check a spec (a dict, or the path of a JSON file; docs/tree_format.md).

    Returns ``{"pair", "verifier", "m", "context", "spec"}``.
    """
    spec, base = read_spec(spec, "tree spec", _SPEC_KEYS)
    model = spec.get("model")
    if isinstance(model, str):
        path = Path(model) if base is None or Path(model).is_absolute() else base / model
        pair = ContextPair.from_json(path)
    elif isinstance(model, dict):
        pair = ContextPair.from_table(model)
    elif model is None:
        pair = ContextPair.from_table({k: spec[k] for k in ("labels", "target", "draft")
                                     if k in spec})
    else:
        raise InvalidInput("tree spec: 'model' must be a table object or a JSON file name")
    kind = spec.get("verifier", "tree" if "branching" in spec else "chain")
    gamma = _int(spec.get("gamma"), "gamma", 0) if kind in ("chain", "block") else None
    if kind == "chain":
        from .chains import Chain

        if gamma is None:
            raise InvalidInput("tree spec: a chain needs 'gamma' (draft tokens per call)")
        verifier = Chain(gamma, lazy=bool(spec.get("lazy", False)))
    elif kind == "block":
        from .block import Block

        if gamma is None:
            raise InvalidInput("tree spec: block verification needs 'gamma'")
        verifier = Block(gamma)
    elif kind == "tree":
        if "branching" not in spec:
            raise InvalidInput("tree spec: a tree needs 'branching' (children per depth, "
                               "e.g. [2, 2])")
        branching = [_int(b, "branching entry", 1) for b in spec["branching"]] \
            if isinstance(spec["branching"], list) else spec["branching"]
        verifier = Tree(branching, spec.get("rule", "rrs"), spec.get("drafts"),
                        lazy=bool(spec.get("lazy", True)))
    elif kind == "traversal":
        from .traversal import Traversal

        if "branching" in spec:
            shape = spec["branching"]
            if isinstance(shape, list):
                shape = [_int(b, "branching entry", 1) for b in shape]
        elif "gamma" in spec:
            shape = (1,) * _int(spec["gamma"], "gamma", 1)
        else:
            raise InvalidInput("tree spec: traversal needs 'branching' (or 'gamma' for a chain)")
        verifier = Traversal(shape)
    else:
        raise InvalidInput(f"tree spec: verifier={kind!r}: choose chain, tree, block or "
                           "traversal")
    m = _int(spec.get("m", verifier.max_tokens), "m", 1)
    ctx = parse_context(spec.get("context", ""), pair.labels)
    return {"pair": pair, "verifier": verifier, "m": m, "context": ctx, "spec": spec}


def _int(value, name: str, low: int):
    if value is None:
        return None
    if isinstance(value, Fraction) and value.denominator == 1:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InvalidInput(f"tree spec: {name}={value!r}: need an integer >= {low}")
    return value


MAX_TREE_NODES = 10_000


def check_tree_size(pair, verifier, m: int, ctx, max_paths: int | None) -> None:
    """Refuse, before any work, a spec whose law cannot fit the budget.

    The first ``m`` tokens take about ``s^m`` values, ``s`` the target's support at the
    starting context (exactly that many when the support is the same everywhere), and every
    one of them is a path of the enumeration; a tree also drafts ``drafted`` tokens per call.

    >>> from exactspec.sequences.context import ContextPair
    >>> from exactspec.sequences.chains import Chain
    >>> pair = ContextPair.from_table({"target": {"": "1/2,1/2"}, "draft": {"": "1/2,1/2"}})
    >>> check_tree_size(pair, Chain(50), 51, (), 10**6)
    Traceback (most recent call last):
    ...
    exactspec.core.errors.TooLarge: tree spec: about 2,251,799,813,685,248 token sequences of length 51 (2 tokens of support, m = 51), over the budget of 1,000,000 paths: use a smaller gamma, m or vocabulary, or --max-paths N to insist
    """
    from ..core.budget import check_sequences, sequence_count
    from ..core.errors import TooLarge

    drafted = getattr(verifier, "drafted", 0) or 0
    if drafted > MAX_TREE_NODES:
        raise TooLarge(f"tree spec: {drafted:,} drafted tokens per call, over the budget of "
                       f"{MAX_TREE_NODES:,} nodes: use a smaller branching", estimate=drafted,
                       budget=MAX_TREE_NODES)
    if max_paths is None:
        return
    support = len(pair.target(ctx).support)
    estimate = sequence_count(support, m)               # capped: a huge m costs nothing
    if estimate > max_paths:
        if estimate > 2**64:
            check_sequences(support, m, 0, max_paths, what="tree spec: m =")
        raise TooLarge(f"tree spec: about {estimate:,} token sequences of length {m} ({support} "
                       f"tokens of support, m = {m}), over the budget of {max_paths:,} paths: use "
                       "a smaller gamma, m or vocabulary, or --max-paths N to insist",
                       estimate=estimate, budget=max_paths)


def tree_report(spec, *, max_paths: int | None = 10**6) -> dict:
    """Prove a chain, tree or block spec (docs/tree_format.md) and report, JSON-ready: exact
    values as strings, floats only under keys ending ``_float``.

    >>> r = tree_report({"target": {"": "1/3,2/3"}, "draft": {"": "2/3,1/3"}, "gamma": 2})
    >>> r["lossless"], r["tokens_per_call"], r["accepted_per_call"], r["ideal_accepted"]
    (True, '19/9', '10/9', '4/3')
    """
    from .block import ideal_accepted
    from .chains import Chain, chain_tokens_per_call

    loaded = load_tree_spec(spec)
    pair, verifier, m, ctx = loaded["pair"], loaded["verifier"], loaded["m"], loaded["context"]
    check_tree_size(pair, verifier, m, ctx, max_paths)
    proof = prove_sequence(verifier, pair, m, ctx, max_paths=max_paths)
    one = call_law(verifier, pair, ctx, max_paths=max_paths)
    tpc = proof.tokens_per_call
    report: dict[str, Any] = {
        "kind": "exactspec-tree-report",
        "verifier": verifier.describe(),
        "labels": [str(t) for t in pair.labels],
        "context": context_key(ctx),
        "m": m,
        "lossless": proof.lossless,
        # exact arithmetic, ideal uniforms: a lossy law is the logic's (the one vocabulary of
        # every route; --arith and --grid pair runs in sequences.user.builtin_report)
        "verdict": "lossless" if proof.lossless else "lossy-logic",
        "arith": "exact",
        "grid": None,
        "bias": exact_str(proof.tv),
        "bias_exact_arith": exact_str(proof.tv),
        "bias_grid_only": None,
        "tokens_per_call": exact_str(tpc),
        "tokens_per_call_float": float(tpc),
        "accepted_per_call": exact_str(tpc - 1),
        "accepted_per_call_float": float(tpc - 1),
        "drafted": verifier.drafted,
        "call_law": {context_key(t): exact_str(w) for t, w in one.law.items() if w != 0},
        "law": {context_key(t): exact_str(w) for t, w in proof.law.items() if w != 0},
        "target": {context_key(t): exact_str(w) for t, w in proof.target.items() if w != 0},
        "paths": proof.paths + one.paths,
        "calls_enumerated": proof.calls,
    }
    if not proof.lossless:
        report["differs"] = [context_key(t) for t in proof.differs]
        report["tv"] = exact_str(proof.tv)
        report["tv_float"] = float(proof.tv)
    if isinstance(verifier, Chain) or getattr(verifier, "name", "") == "block":
        gamma = verifier.gamma
        formula = chain_tokens_per_call(pair, gamma, ctx)
        ideal = ideal_accepted(pair, gamma, ctx)
        report["chain_tokens_per_call"] = exact_str(formula)
        report["chain_tokens_per_call_float"] = float(formula)
        report["ideal_accepted"] = exact_str(ideal)
        report["ideal_accepted_float"] = float(ideal)
        alphas = {pair.acceptance(c) for c in pair.contexts(gamma, ctx)}
        if len(alphas) == 1:
            from .chains import tokens_per_call_closed_form

            (alpha,) = alphas
            closed = tokens_per_call_closed_form(alpha, gamma)
            report["constant_acceptance"] = exact_str(alpha)
            report["closed_form"] = exact_str(closed)
            report["closed_form_float"] = float(closed)
    return report


def tree_text(report: dict, max_rows: int = 24) -> str:
    """A short human-readable summary of :func:`tree_report`'s dict: the verdict, tokens per
    call, and the law of the first ``m`` tokens beside the target (the differing sequences
    first when lossy; at most ``max_rows`` rows)."""
    v = report["verifier"]
    if v["verifier"] == "tree":
        what = (f"tree, branching {v['branching']}, rule {v['rule']}, drafts {v['drafts']} "
                f"({v['drafted']} drafted tokens)")
    elif v["verifier"] == "traversal":
        what = (f"traversal verification, branching {v['branching']}, drafts without "
                f"replacement ({v['drafted']} drafted tokens)")
    else:
        what = f"{v['verifier']}, gamma = {v['gamma']}"
    ctx = report["context"] or '""'
    lines = [f"{what}; context {ctx}; labels {', '.join(report['labels'])}"]
    if report["lossless"]:
        lines.append(f"LOSSLESS: the first {report['m']} tokens follow the target's joint law "
                     f"exactly ({report['paths']:,} paths, {report['calls_enumerated']} "
                     "contexts enumerated)")
    else:
        shown = "; ".join(report["differs"][:4])
        more = len(report["differs"]) - 4
        where = shown + (f" and {more} more" if more > 0 else "")
        lines.append(f"LOSSY: the first {report['m']} tokens differ from the target's joint "
                     f"law at {where}; TV = {report['tv']}")
    lines.append(f"tokens per target call = {report['tokens_per_call']} "
                 f"(~{report['tokens_per_call_float']:.4f}); accepted drafts per call = "
                 f"{report['accepted_per_call']}")
    if "chain_tokens_per_call" in report and v["verifier"] == "chain":
        lines.append(f"chain formula 1 + sum prod min(p, q) = {report['chain_tokens_per_call']}")
    if "closed_form" in report and v["verifier"] == "chain":
        lines.append(f"constant acceptance {report['constant_acceptance']}: "
                     f"(1 - a^(gamma+1)) / (1 - a) = {report['closed_form']}")
    if "ideal_accepted" in report:
        lines.append(f"ideal accepted drafts per call (coupling bound) = "
                     f"{report['ideal_accepted']}")
    keys = sorted(set(report["law"]) | set(report["target"]))
    differs = report.get("differs", [])
    keys = [k for k in keys if k in differs] + [k for k in keys if k not in differs]
    width = max([len("tokens")] + [len(k) for k in keys])
    lines.append(f"{'tokens':<{width}}  {'law':<12} target")
    for key in keys[:max_rows]:
        mark = "  <- differs" if key in differs else ""
        lines.append(f"{key:<{width}}  {report['law'].get(key, '0'):<12} "
                     f"{report['target'].get(key, '0')}{mark}")
    if len(keys) > max_rows:
        lines.append(f"... {len(keys) - max_rows} more sequences (--json for all)")
    return "\n".join(lines)

