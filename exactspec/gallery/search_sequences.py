"""Search small per-position instances for a counterexample to a user's multi-position rule.

A multi-position verifier (:mod:`exactspec.sequences.user`) is tried on pairs given by
per-position rows: position ``i`` has its own target row ``p_i`` and draft row ``q_i`` (the
bonus row ``p_gamma`` too), each a small rational distribution.  Different rows at different
positions are where sequence-level bugs show (a residual of the wrong position, a bonus token
from the wrong row, a rejection followed by an acceptance at the last position); point masses
and ties come first.  Instances are tried from the smallest up (the largest denominator used,
then the sum of the rows' ranks); the first lossy one is returned with its exact report.  An
instance on which the user's code raises an error of its own (a residual of equal rows) is
skipped.  Finding nothing is evidence, not a proof.

>>> from exactspec.core.dist import residual
>>> def stale(s, drafts, p, q):
...     resid = residual(p[0], q[0])
...     out = ()
...     for i, x in enumerate(drafts):
...         if not s.coin(min(1, p[i][x] / q[i][x])):
...             return out + (s.draw(resid),)
...         out += (x,)
...     return out + (s.draw(p[len(drafts)]),)
>>> found = search_sequence_counterexample(stale, gamma=2, m=2)
>>> found.report["verdict"], found.report["tv"], found.rows
('lossy-logic', '1/2', {'target': ['0,1', '1,0', '0,1'], 'draft': ['1/2,1/2', '0,1']})
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import product

from ..core.dist import exact_str
from ..core.errors import InvalidInput, TooLarge
from ..sequences.user import position_pair, user_report
from .search import small_dists

__all__ = ["SequenceSearch", "search_sequence_counterexample"]


@dataclass
class SequenceSearch:
    """The first lossy instance (its report and rows), or ``None``, and the instances tried."""

    report: dict | None
    rows: dict | None
    instances: int


def _row_pool(n: int, max_denominator: int) -> list:
    pool, seen = [], set()
    for d in range(1, max_denominator + 1):
        for dist in small_dists(n, d):
            if dist.probs not in seen:
                seen.add(dist.probs)
                pool.append(dist)
    return pool


def _by_size(size: int, slots: int):
    """Every tuple of ``slots`` ranks below ``size``, those whose largest rank is smaller first
    (and, within one largest rank, by the sum of ranks), generated lazily level by level."""
    for top in range(size):
        level = [r for r in product(range(top + 1), repeat=slots) if top in r] \
            if (top + 1) ** slots <= 200_000 else None
        if level is None:
            yield from (r for r in product(range(top + 1), repeat=slots) if top in r)
            continue
        yield from sorted(level, key=lambda r: (sum(r), r))


def search_sequence_counterexample(function, *, gamma: int, m: int | None = None,
                                   tokens: int = 2, max_denominator: int = 3,
                                   arith: str | None = None, grid: int | None = None,
                                   tolerance=None, max_paths: int | None = 10**5,
                                   max_instances: int = 1000) -> SequenceSearch:
    """Try per-position rows on ``tokens`` tokens with entries of denominator at most
    ``max_denominator``; stop at the first instance that is lossy (by logic; with ``arith``,
    or by rounding beyond ``tolerance`` when one is given)."""
    if isinstance(gamma, bool) or not isinstance(gamma, int) or gamma < 1:
        raise InvalidInput(f"gamma={gamma!r}: need an integer >= 1")
    m = m if m is not None else gamma + 1
    pool = _row_pool(tokens, max_denominator)
    slots = 2 * gamma + 1  # p_0..p_gamma, q_0..q_{gamma-1}
    tried = 0
    for ranked in _by_size(len(pool), slots):
        if tried >= max_instances:
            break
        rows = [pool[i] for i in ranked]
        target, draft = rows[:gamma + 1], rows[gamma + 1:]
        table = {"target": [list(r.probs) for r in target],
                 "draft": [list(r.probs) for r in draft]}
        pair = position_pair(table)
        tried += 1
        try:
            report = user_report({"gamma": gamma, "m": m}, function, pair=pair, arith=arith,
                                 grid=grid, tolerance=tolerance, max_paths=max_paths)
        except (InvalidInput, TooLarge) as err:
            if "hidden state" in str(err):
                raise
            continue
        if report["verdict"] == "lossy-logic" or (tolerance is not None and not report["ok"]):
            shown = {side: [",".join(exact_str(Fraction(v)) for v in row) for row in rows_]
                     for side, rows_ in table.items()}
            return SequenceSearch(report, shown, tried)
    return SequenceSearch(None, None, tried)
