"""Search small rational instances for a counterexample to a rule meant to be lossless.

Instances are tried from the smallest up: vocabulary sizes 1 to ``max_tokens``, entries with a
common denominator up to ``max_denominator`` (every composition of it), every pair ``(p, q)``.
Finding nothing is evidence, not a proof.

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

__all__ = ["SearchResult", "search_counterexample", "small_dists"]


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


def search_counterexample(method, k: int = 1, *, max_tokens: int = 3,
                          max_denominator: int = 4, grid: int | None = None,
                          arith: str | None = None, tolerance=None,
                          max_paths: int | None = 10**6) -> SearchResult:
    """Try every small rational ``(p, q)`` in order of size; stop at the first lossy one.

    The instances where verification bugs show come first within each size: zeros and point
    masses (entries 0 and 1), ties (``p = q`` at a token), and from three tokens on, residuals
    spread over several tokens.  ``grid`` puts the uniforms on a grid; ``arith`` runs the
    method in a float format (:func:`exactspec.rounding.split_bias`): a counterexample is then
    an instance lossy by logic, or lossy by rounding beyond ``tolerance`` when one is given.
    The result's ``split`` holds the float/exact pair of the counterexample.
    """
    m = get_method(method)
    tried = 0
    refusal = None
    seen = set()
    for n in range(1, max_tokens + 1):
        for d in range(1, max_denominator + 1):
            dists = [x for x in small_dists(n, d)]
            for p, q in product(dists, repeat=2):
                key = (p.probs, q.probs)
                if key in seen:
                    continue
                seen.add(key)
                try:
                    m.check(p, q, k)
                except InvalidInput as err:
                    refusal = err
                    continue
                tried += 1
                if arith is None:
                    result = verify(m, p, q, k, grid=grid, max_paths=max_paths)
                    if not result.lossless:
                        return SearchResult(result, tried)
                    continue
                result = verify(m, p, q, k, grid=grid, max_paths=max_paths, arith=arith)
                if result.lossless:
                    continue
                from ..rounding import split_bias

                split = split_bias(m, p, q, k, arith=arith, grid=grid, tolerance=tolerance,
                                   max_paths=max_paths)
                if split.verdict == "lossy-logic" or (tolerance is not None and not split.ok):
                    return SearchResult(split.run, tried, split)
    if tried == 0:
        raise InvalidInput(f"--search: {m.name} runs on none of the small instances at k = {k}"
                           + (f" ({refusal})" if refusal is not None else "")
                           + "; nothing was searched")
    return SearchResult(None, tried)
