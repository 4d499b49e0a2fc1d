"""Route: the path enumeration, the reference semantics every other route is held to.

Every random choice of the rule is a branch point; each path is run through the one
depth-first driver (:func:`exactspec.engine.driver.depth_first`) by the exact walk
(:func:`exactspec.engine.exact.enumerate_paths`), under the watch for user code (hidden
randomness refused, every path run twice and compared, inputs read-only).  It takes every
request; it declines only a grid run whose thresholds are not rational numbers (a user's
``sympy.exp`` has no place on a grid of rationals), and a walk over its budget where merged
states may take over (``retry "merged"``, :mod:`exactspec.routes.merged`).  Within a caller's
limit on the path estimate's probes (:func:`exactspec.core.budget.probes_limited`: the command
line's), a walk whose probes alone would pass it is refused before any run, after the routes
before this one have had their turn.
"""

from __future__ import annotations

import os

from ..core.budget import check_probe_limit
from ..core.errors import InvalidInput, TooLarge, names_its_line
from ..core.signals import CannotProceed
from ..engine.exact import enumerate_paths
from .merged import plain_refusal_falls_back
from .request import Request

__all__ = ["PATHS", "Paths", "naming_user_lines", "user_line", "total_is_one"]


class Paths:
    """The path enumeration."""

    name = "paths"
    declines_on = ()
    kept_refusals = ()

    def run(self, request: Request, declined: dict):
        p, q = request.float_rows()
        run = naming_user_lines(request.run, request.name) if request.user else request.run
        try:
            check_probe_limit(len(p))      # a caller's limit on the estimate's probes
            enumeration = enumerate_paths(run, p, q, request.k, grid=request.grid,
                                          keep_paths=request.keep_paths,
                                          max_paths=request.max_paths,
                                          progress=request.progress,
                                          sampler_factory=request.sampler_factory(),
                                          on_path=request.on_path, watch=request.user,
                                          max_seconds=request.max_seconds)
        except TooLarge as refusal:
            if not plain_refusal_falls_back(request, refusal):
                raise
            raise CannotProceed(f"over its budget ({refusal})", retry="merged") from None
        except TypeError as err:
            if request.grid is None or request.arith is not None:
                raise
            raise CannotProceed(f"thresholds that are not rational on a grid ({err})") \
                from None
        if not total_is_one(enumeration.total):
            raise AssertionError(f"internal: path weights sum to {enumeration.total}, not 1")
        return enumeration


PATHS = Paths()


def total_is_one(total) -> bool:
    """The paths' weights sum to exactly 1 (a sympy sum simplified first)."""
    if not hasattr(total, "free_symbols"):
        return total == 1
    import sympy

    return sympy.simplify(sympy.sympify(total) - 1) == 0


def naming_user_lines(run, name: str):
    """``run`` whose exactspec errors raised inside the user's code name the user's line (a
    distribution the code builds is the code's, not ``--p``'s)."""
    def wrapped(s, p, q, k):
        try:
            return run(s, p, q, k)
        except InvalidInput as err:
            where = user_line(err.__traceback__)
            if not where or names_its_line(err):
                raise
            text = str(err)
            for arg in ("p ", "q "):  # Dist's default name: here it is the verifier's value
                if text.startswith(arg):
                    text = "the distribution " + text[len(arg):]
            raise type(err)(f"in {name}{where}, a value the verifier built: {text}"
                            ) from None
    wrapped.__wrapped__ = run
    return wrapped


def user_line(tb) -> str:
    """`` (in FILE line N)`` for the innermost frame of ``tb`` outside exactspec, or ``""``."""
    import traceback

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frames = [f for f in traceback.extract_tb(tb)
              if not os.path.abspath(f.filename).startswith(package)]
    return f" (in {frames[-1].filename} line {frames[-1].lineno})" if frames else ""
