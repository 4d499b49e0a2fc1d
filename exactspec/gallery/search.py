"""Search small rational instances for a counterexample to a rule meant to be lossless.

Instances are tried from the smallest up (:func:`small_instances`, shared with the search over
multi-position rules, :mod:`exactspec.gallery.search_sequences`): vocabulary sizes 1 to
``max_tokens``; within one size, rows (distributions) with entries of a common denominator up to
``max_denominator`` ranked by denominator (point masses first), and tuples of rows ordered by
the largest rank they use, then by the sum of their ranks.  Each vocabulary size has its own
budget of instances, so that a larger size is always reached.  Finding nothing is evidence,
not a proof.

>>> from exactspec.methods.naive import naive
>>> found = search_counterexample(naive)
>>> found.counterexample.p, found.counterexample.q
(Dist({0: 0, 1: 1}), Dist({0: 1, 1: 0}))
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import product

from ..core.dist import Dist
from ..core.errors import ExactspecError, InvalidInput
from ..methods import get_method
from ..verify import Verification, verify

__all__ = ["SearchResult", "search_counterexample", "small_dists", "small_instances",
           "position_instances", "PER_SIZE"]

PER_SIZE = 1000   # instances tried at most per vocabulary size


@dataclass
class SearchResult:
    """The first counterexample found (a lossy :class:`Verification`), or ``None``, and the
    number of instances tried."""

    counterexample: Verification | None
    instances: int
    split: object = None


def _compositions(total: int, parts: int):
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            yield (first,) + rest


def small_dists(n: int, denominator: int):
    """Every distribution on ``n`` tokens whose entries are multiples of ``1/denominator``."""
    for parts in _compositions(denominator, n):
        yield Dist([Fraction(a, denominator) for a in parts])


def row_pool(n: int, max_denominator: int) -> list:
    """The distributions on ``n`` tokens with entries of denominator at most
    ``max_denominator``, each once, by denominator (point masses first).

    >>> [",".join(map(str, d.probs)) for d in row_pool(2, 3)]
    ['0,1', '1,0', '1/2,1/2', '1/3,2/3', '2/3,1/3']
    """
    pool, seen = [], set()
    for d in range(1, max_denominator + 1):
        for dist in small_dists(n, d):
            if dist.probs not in seen:
                seen.add(dist.probs)
                pool.append(dist)
    return pool


def by_size(size: int, slots: int):
    """Every tuple of ``slots`` ranks below ``size``, those whose largest rank is smaller first
    (and, within one largest rank, by the sum of ranks), generated lazily level by level.

    >>> list(by_size(2, 2))
    [(0, 0), (0, 1), (1, 0), (1, 1)]
    """
    for top in range(size):
        if (top + 1) ** slots > 200_000:
            yield from (r for r in product(range(top + 1), repeat=slots) if top in r)
            continue
        level = [r for r in product(range(top + 1), repeat=slots) if top in r]
        yield from sorted(level, key=lambda r: (sum(r), r))


def small_instances(slots: int, *, max_tokens: int = 3, max_denominator: int = 4,
                    per_size: int | None = PER_SIZE):
    """Tuples of ``slots`` small rational distributions on a common vocabulary, smallest
    first: ``(n, rows)`` for vocabulary sizes ``n = 1 .. max_tokens``; within one size, in the
    order of :func:`by_size` over :func:`row_pool`; at most ``per_size`` tuples per size.

    ``slots = 2`` gives the pairs ``(p, q)`` of ``verify --search``; a multi-position rule
    takes one row per position and side.

    >>> [(n, [",".join(map(str, r.probs)) for r in rows])
    ...  for n, rows in small_instances(2, max_tokens=2)][:4]
    [(1, ['1', '1']), (2, ['0,1', '0,1']), (2, ['0,1', '1,0']), (2, ['1,0', '0,1'])]
    """
    _check_max_tokens(max_tokens)
    for n in range(1, max_tokens + 1):
        pool = row_pool(n, max_denominator)
        for count, ranked in enumerate(by_size(len(pool), slots)):
            if per_size is not None and count >= per_size:
                break
            yield n, [pool[i] for i in ranked]


def _check_max_tokens(max_tokens) -> None:
    """Refuse a vocabulary bound of the search that is not 1 to 12 tokens."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise InvalidInput(f"--search-tokens {max_tokens!r}: need a vocabulary size >= 1")
    if max_tokens > 12:
        raise InvalidInput(f"--search-tokens {max_tokens}: at most 12 tokens (the rows of a "
                           "larger vocabulary are too many to search from the smallest up)")


def position_instances(n_target: int, n_draft: int, *, max_tokens: int = 3,
                       max_denominator: int = 4, per_size: int | None = PER_SIZE):
    """Per-position rows, ``n_target`` target rows and ``n_draft`` draft rows on a common
    vocabulary, smallest first, that reach every pair of ``verify --search``: ``(n, target,
    draft)`` for vocabulary sizes ``n = 1 .. max_tokens``.

    Within one size two orders are merged level by level (a level: the largest rank of
    :func:`row_pool` an instance uses, as in :func:`by_size`), and an instance met twice is
    tried once:

    - ``verify --search``'s pairs ``(p, q)`` in its order (:func:`small_instances` with two
      slots, at most ``per_size``), each at every position: ``p`` every target row, ``q`` every
      draft row.  A bug of one node (a residual spread over three tokens, a uniform reused
      for the residual's draw) shows at the first position, on the pair where ``verify
      --search`` finds it;
    - tuples of rows that differ by position (:func:`by_size` over ``n_target + n_draft``
      slots, at most ``per_size``), where sequence-level bugs show (a residual of the wrong
      position, a bonus token from the wrong row).  Their number grows as the power of the
      slots, so alone they stop at the first few ranks of three tokens.

    At a level the pairs come first.

    >>> def rows(t):
    ...     return " ".join(",".join(map(str, r.probs)) for r in t)
    >>> for n, t, d in list(position_instances(2, 1, max_tokens=2))[:6]:
    ...     print(n, "target", rows(t), "draft", rows(d))
    1 target 1 1 draft 1
    2 target 0,1 0,1 draft 0,1
    2 target 0,1 0,1 draft 1,0
    2 target 1,0 1,0 draft 0,1
    2 target 1,0 1,0 draft 1,0
    2 target 0,1 1,0 draft 0,1
    """
    slots = n_target + n_draft
    for n, rows in _merged_levels(slots, n_target, max_tokens, max_denominator, per_size):
        yield n, rows[:n_target], rows[n_target:]


def _merged_levels(slots, n_target, max_tokens, max_denominator, per_size):
    _check_max_tokens(max_tokens)
    for n in range(1, max_tokens + 1):
        pool = row_pool(n, max_denominator)
        pairs = _capped(((a,) * n_target + (b,) * (slots - n_target)
                         for a, b in by_size(len(pool), 2)), per_size)
        mixed = _capped(by_size(len(pool), slots), per_size)
        seen = set()
        head = {0: next(pairs, None), 1: next(mixed, None)}
        streams = {0: pairs, 1: mixed}
        while head[0] is not None or head[1] is not None:
            # the lower level next; at one level, verify --search's pairs first
            side = 0 if head[1] is None or (head[0] is not None
                                            and max(head[0]) <= max(head[1])) else 1
            ranked, head[side] = head[side], next(streams[side], None)
            if ranked in seen:
                continue
            seen.add(ranked)
            yield n, [pool[i] for i in ranked]


def _capped(iterator, count):
    for number, item in enumerate(iterator):
        if count is not None and number >= count:
            return
        yield item


def search_counterexample(method, k: int = 1, *, max_tokens: int = 3,
                          max_denominator: int = 4, grid: int | None = None,
                          arith: str | None = None, tolerance=None,
                          max_paths: int | None = 10**6,
                          per_size: int | None = PER_SIZE) -> SearchResult:
    """Try every small rational ``(p, q)`` in order of size; stop at the first lossy one.

    The instances where verification bugs show come first within each size: zeros and point
    masses (entries 0 and 1), ties (``p = q`` at a token), and from three tokens on, residuals
    spread over several tokens (:func:`small_instances`).  ``grid`` puts the uniforms on a
    grid and ``arith`` runs the method in a float format, paired with ideal uniforms and exact
    arithmetic (:func:`exactspec.rounding.split_bias`): a counterexample is then an instance
    lossy by logic, or lossy by the grid or rounding beyond ``tolerance`` when one is given
    (on a grid without a format, any grid bias beyond ``tolerance``, 0 by default).
    The result's ``split`` holds the runs of the counterexample.
    """
    m = get_method(method)
    tried = 0
    refusal = None
    for _, (p, q) in small_instances(2, max_tokens=max_tokens,
                                      max_denominator=max_denominator, per_size=per_size):
        try:
            m.check(p, q, k)
        except InvalidInput as err:
            refusal = err
            continue
        tried += 1
        if arith is None and grid is None:
            result = verify(m, p, q, k, max_paths=max_paths)
            if not result.lossless:
                return SearchResult(result, tried)
            continue
        result = verify(m, p, q, k, grid=grid, max_paths=max_paths, arith=arith)
        if result.lossless:
            continue
        from ..rounding import split_bias

        split = split_bias(m, p, q, k, arith=arith, grid=grid, tolerance=tolerance,
                           max_paths=max_paths)
        # under a float format every kernel is lossy by rounding: only logic, or a bias
        # beyond the tolerance, is a counterexample; on a grid alone, any bias beyond it
        if split.verdict == "lossy-logic" or (not split.ok and (tolerance is not None
                                                                or arith is None)):
            return SearchResult(split.run, tried, split)
    if tried == 0:
        raise InvalidInput(f"--search: {m.name} runs on none of the small instances at k = {k}"
                           + (f" ({refusal})" if refusal is not None else "")
                           + "; nothing was searched")
    return SearchResult(None, tried)
