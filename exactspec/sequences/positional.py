"""Idealised trees, Sequoia's positional model: the ``j``-th child of any node is the accepted
one with probability ``P[j-1]``, whatever the context; tokens per call, RRS's positional
probabilities, every branching of ``n`` drafted tokens and the chain-vs-tree table.

>>> positional_tokens_per_call((2, 2), rrs_positional_probabilities(
...     Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 2))
Fraction(1461, 625)
"""

from __future__ import annotations

from fractions import Fraction

from ..core.dist import Dist, exact, exact_str
from ..core.errors import InvalidInput
from .multitoken import check_branching as _check_branching
from .tree_verifier import children_of

__all__ = ["branching_patterns", "chain_vs_tree_table", "positional_tokens_per_call",
           "rrs_positional_probabilities"]


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
        for j, kid in enumerate(children_of(tree, node)):
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
