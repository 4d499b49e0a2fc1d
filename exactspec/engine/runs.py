"""Enumerate a run whose output is any hashable value, such as a tuple of tokens.

:func:`~exactspec.engine.exact.enumerate_paths` runs a one-position verifier
``method(s, p, q, k)`` and insists that its output is a token of ``p``.  Multi-token drafts
(chains, trees, blocks) output a *sequence*, and the law to prove is a joint law over
sequences.  :func:`enumerate_runs` is the same depth-first walk over the same
:class:`~exactspec.engine.exact.ExactSampler` (its ``_reset``/``_advance`` loop), for a run
``run(s) -> output`` with any hashable output: it returns the exact law of the output, the
number of paths and, on request, every path.

>>> from exactspec.core.dist import Dist
>>> coin = Dist.parse("1/3,2/3")
>>> result = enumerate_runs(lambda s: (s.draw(coin), s.draw(coin)))
>>> result.law[(1, 1)], result.paths
(Fraction(4, 9), 4)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable

from ..core.errors import InvalidInput, TooLarge
from ..core.exact_values import floats_converted
from .driver import depth_first
from .exact import (DEFAULT_MAX_PATHS, Enumeration, ExactSampler, Path, check_seconds,
                    estimate_paths)

__all__ = ["RunEnumeration", "enumerate_runs"]


@dataclass
class RunEnumeration:
    """The exact law of a run's output.

    ``law`` maps each output to its probability (outputs in the order first met); ``paths``
    counts the paths; ``path_list`` holds every :class:`~exactspec.engine.exact.Path` when
    ``keep_paths=True`` (its ``drafts`` are the tokens drafted on that path); ``floats``
    counts the float values the run's exact arithmetic took at their exact binary value, over
    every path (:attr:`floats_converted`).
    """

    law: dict
    paths: int
    total: Any
    path_list: list | None = None
    seconds: float = 0.0
    floats: int = 0
    _tree: Any = field(default=None, repr=False)

    @property
    def floats_converted(self) -> int:
        """Float values met in the run (float literals mixed with probabilities, floats
        handed to the sampler) and taken at their exact binary value, over every path.

        >>> from exactspec.core.dist import Dist
        >>> from exactspec.core.exact_values import exact_values
        >>> p = Dist.parse("1/2,1/2")
        >>> with exact_values():
        ...     r = enumerate_runs(lambda s: s.coin(0.0 + p[0]))
        >>> r.law[True], r.floats_converted
        (Fraction(1, 2), 2)
        """
        return self.floats

    def expectation(self, f: Callable) -> Any:
        """``E[f(output)]``, exactly.

        >>> from exactspec.core.dist import Dist
        >>> enumerate_runs(lambda s: (s.draw(Dist.parse("1/2,1/2")),) * 2).expectation(len)
        Fraction(2, 1)
        """
        return sum((w * f(y) for y, w in self.law.items()), Fraction(0))

    def path_tree(self):
        """The tree of paths as a networkx ``DiGraph`` (needs ``keep_paths=True``); the same
        layout as :meth:`exactspec.engine.exact.Enumeration.path_tree`."""
        if self._tree is None:
            if self.path_list is None:
                raise InvalidInput("the tree of paths needs keep_paths=True")
            view = Enumeration(labels=tuple(self.law), law=self.law, acceptance=None,
                               explicit_acceptance=None, paths=self.paths, total=self.total,
                               used_drafts=False, used_accept=False, path_list=self.path_list)
            self._tree = view.path_tree()
        return self._tree


def enumerate_runs(run: Callable, *, keep_paths: bool = False,
                   max_paths: int | None = DEFAULT_MAX_PATHS, grid: int | None = None,
                   sampler_factory=None, max_seconds: float | None = None) -> RunEnumeration:
    """Run ``run(s)`` on every path of its random choices; return the exact output law.

    Parameters
    ----------
    run : callable
        ``run(s) -> output``, its random choices made through the sampling interface ``s``;
        the output must be hashable (a token, a tuple of tokens, ...).
    keep_paths : bool
        Keep every path (for certificates and :meth:`RunEnumeration.path_tree`).
    max_paths : int or None
        Refuse (:class:`~exactspec.core.errors.TooLarge`) when the estimated number of
        paths is larger; ``None`` insists.
    grid : int, optional
        Explicit uniforms on the grid ``{0, 1/N, ..., (N-1)/N}``.
    max_seconds : float, optional
        Refuse (:class:`~exactspec.core.errors.TooLarge`) when the estimated number of paths
        times the measured seconds of one path (the median of the estimate's probes) is
        larger; only with ``max_paths``, whose estimate it reuses.
    """
    factory = sampler_factory or (lambda: ExactSampler(grid=grid))
    if max_paths is not None:
        timing: list = []
        estimate = estimate_paths(lambda s, p, q, k: run(s), None, None, 1,
                                  sampler_factory=factory, timing=timing,
                                  max_paths=max_paths, max_seconds=max_seconds)
        if estimate > max_paths:
            raise TooLarge(f"about {estimate:,} paths to enumerate, over the budget of "
                           f"{max_paths:,}: use a smaller instance, or max_paths=None to insist",
                           estimate=estimate, budget=max_paths)
        check_seconds(estimate, timing[0] if timing else 0.0, max_seconds, max_paths,
                      "a smaller instance")
    start = time.perf_counter()
    s = factory()
    law: dict = {}
    total = [Fraction(0)]
    path_list = [] if keep_paths else None
    converted = floats_converted()

    def leaf(s, y):
        try:
            hash(y)
        except TypeError:
            raise InvalidInput(f"the run returned {y!r}, which is not hashable: return a "
                               "token or a tuple of tokens") from None
        w = s.weight
        law[y] = law.get(y, 0) + w
        total[0] = total[0] + w
        if keep_paths:
            path_list.append(Path(tuple(s.branches), w, y, tuple(s.drafted), False))

    count = depth_first(s, run, leaf)
    total = total[0]
    return RunEnumeration(law=law, paths=count, total=total, path_list=path_list,
                          seconds=time.perf_counter() - start,
                          floats=s.floats + floats_converted() - converted)
