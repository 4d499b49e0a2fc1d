"""The one depth-first driver: every path of a sampler's tree of choices, one run at a time.

A sampler of the engine (:class:`~exactspec.engine.exact.ExactSampler` and the samplers
built on it: the float, generic, vectorised and factored ones) keeps a prefix of choices;
``_reset()`` starts a run along it, a choice past its end takes the first option and records
its arity, and ``_advance()`` moves to the next untried prefix.  :func:`depth_first` owns that
loop for every route that enumerates: it resets, runs the body as user code (the engine's
signals kept on the run, :mod:`exactspec.core.signals`), checks that the run made the choices
its prefix replays, hands the finished run to the route's ``leaf``, and advances.  A route is
its body and its leaf (what one run computes and what it adds to the law), not a copy of the
loop.

>>> from exactspec.core.dist import Dist
>>> from exactspec.engine.exact import ExactSampler
>>> coin = Dist.parse("1/3,2/3")
>>> law = {}
>>> def leaf(s, y):
...     law[y] = law.get(y, 0) + s.weight
>>> depth_first(ExactSampler(), lambda s: (s.draw(coin), s.draw(coin)), leaf)
4
>>> law[(1, 1)]
Fraction(4, 9)
"""

from __future__ import annotations

from typing import Any, Callable

from ..core.errors import InvalidInput
from ..core.signals import user_code

__all__ = ["depth_first", "replay_differs"]


def replay_differs(s) -> InvalidInput:
    """The refusal of a run that stopped before the choices its prefix replays."""
    return InvalidInput(
        "the method made different random choices on a replay (it stopped after "
        f"{s._depth} choices, not {len(s._prefix)}): every random choice must go "
        "through the sampler s: the method reads hidden randomness or state "
        "(random, numpy.random, a counter)")


def depth_first(s, body: Callable[[Any], Any], leaf: Callable[[Any, Any], None], *,
                finish: Callable[[Any], None] | None = None,
                differs: Callable[[Any], BaseException] = replay_differs,
                every: Callable[[int], None] | None = None, forked=None) -> int:
    """Run ``body(s)`` once along every path of the sampler ``s``; return the path count.

    Parameters
    ----------
    s : Enumerating
        Has ``_reset()``, ``_advance()``, ``_depth`` and ``_prefix`` (the engine's samplers;
        :class:`~exactspec.engine.interface.Enumerating`).
    body : callable
        ``body(s) -> result``: one run (user code runs inside it).
    leaf : callable
        ``leaf(s, result)``: what the finished run adds (``s.weight``, ``s.branches``, ...).
    finish : callable, optional
        ``finish(s)`` after the body and before the replay check (a vectorised sampler
        settles its last axis there).
    differs : callable
        The exception to raise for a run that did not replay its prefix.
    every : callable, optional
        ``every(count)`` after each path: budgets and progress (it may raise).
    forked : ForkedPaths, optional
        Lets the walk run the other options of each new choice in forked copies of the
        process, so that the paths' common start runs once (:mod:`.forked_paths`, which
        decides at the first choice whether to); what the copies' leaves add comes back
        through it.  ``s`` is then an :class:`~exactspec.engine.exact_sampler.ExactSampler`.
    """
    def one_path():
        s._reset()
        with user_code():
            result = body(s)
        if finish is not None:
            finish(s)
        if s._depth != len(s._prefix):
            raise differs(s)
        leaf(s, result)

    count = 0
    if forked is not None:
        s._forks = forked
        forked.sampler = s
        try:
            forked.first_path(one_path)
            count = 1
            if every is not None:
                every(count)
            if forked.active:
                return count + forked.run_copies(every, count)
        finally:
            s._forks = None
            forked.abandon()
        if not s._advance():
            return count
    while True:
        one_path()
        count += 1
        if every is not None:
            every(count)
        if not s._advance():
            return count
