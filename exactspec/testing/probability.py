"""The exact probability that a randomized check holds, and the paths on which it fails.

A *check* is a function with a rule's signature, ``check(s, p, q)`` or ``check(s, p, q, k)``:
it makes its random choices through the sampler ``s`` (usually by running a rule on ``s``) and
returns ``True`` or ``False``, or raises :class:`AssertionError` (which counts as ``False``).
A test that draws samples and asserts something of each one is such a check; exactspec runs it
on every path of the sampler and adds up the exact weights of the paths where it holds.

>>> from exactspec import Dist
>>> def accepted_draft_is_likely(s, p, q):
...     x = s.draft(q)
...     accepted = s.coin(min(1, p[x] / q[x]), "accept")
...     return not accepted or p[x] > 0
>>> probability(accepted_draft_is_likely, Dist.parse("0,1"), Dist.parse("1/2,1/2"))
Fraction(1, 1)
>>> def first_token(s, p, q):
...     return s.draw(p) == 0
>>> report = probability_report(first_token, Dist.parse("1/4,3/4"), Dist.parse("1/2,1/2"))
>>> report.probability, report.paths, [f.probability for f in report.failing]
(Fraction(1, 4), 2, [Fraction(3, 4)])
"""

from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ..core.dist import Dist, exact_str
from ..core.errors import InvalidInput, TooLarge
from ..core.signals import EngineSignal
from ..engine.exact import DEFAULT_MAX_PATHS, enumerate_paths
from ..methods import get_method
from ..rounding import exact_difference, exact_sign
from ..verify import as_k

__all__ = ["probability", "probability_report", "ProbabilityReport", "FailingPath",
           "DEFAULT_SECONDS"]

_clock = time.perf_counter  # taken before any watch replaces the clock

#: Wall-clock seconds a whole probability computation may take before it is stopped (a check
#: that never returns, or one far more expensive than its size estimate said).
DEFAULT_SECONDS = 60.0

_HOLDS, _FAILS = "holds", "fails"


@dataclass(frozen=True)
class FailingPath:
    """One path on which the check fails: its exact probability, its branches
    ``(kind, what, probability)`` and the assertion's message (``""`` for ``False``)."""

    probability: Any
    branches: tuple
    message: str = ""

    def describe(self) -> str:
        """``draft 0 -> u1 < 1/2`` and the message, in one line."""
        steps = " -> ".join(str(what) for _kind, what, _prob in self.branches) or "(no choice)"
        return steps + (f": {self.message}" if self.message else "")

    def to_json(self) -> dict:
        out = {"probability": exact_str(self.probability),
               "branches": [[kind, str(what), exact_str(prob)]
                            for kind, what, prob in self.branches]}
        if self.message:
            out["message"] = self.message
        return out


@dataclass
class ProbabilityReport:
    """The exact probability that a check holds, and where it fails.

    ``probability`` is exact (a ``Fraction``, or a sympy number for irrational inputs);
    ``failing`` holds the first ``max_failing`` failing paths in enumeration order and
    ``failing_paths`` counts them all; ``paths`` counts every path.
    """

    check: str
    probability: Any
    paths: int
    failing: list = field(default_factory=list)
    failing_paths: int = 0
    k: int = 1
    grid: int | None = None
    arith: str | None = None

    @property
    def failure(self):
        """``1 - probability``, exactly."""
        return exact_difference(1, self.probability)

    def __float__(self) -> float:
        return _float(self.probability)

    def to_json(self) -> dict:
        """The ``exactspec probability --json`` object."""
        out = {"check": self.check, "k": self.k,
               "probability": exact_str(self.probability),
               "probability_float": _float(self.probability),
               "failure": exact_str(self.failure), "failure_float": _float(self.failure),
               "paths": self.paths, "failing_paths": self.failing_paths,
               "failing": [f.to_json() for f in self.failing]}
        if self.grid is not None:
            out["grid"] = self.grid
        out["arith"] = self.arith or "exact"
        return out

    def text(self) -> str:
        lines = [f"check {self.check}, k = {self.k}"
                 + (f", {self.arith} arithmetic" if self.arith else "")
                 + (f", uniforms on a grid of {_grid_text(self.grid)}" if self.grid else "")
                 + f" ({self.paths} paths)",
                 f"P(check holds) = {exact_str(self.probability)} "
                 f"(~{_float(self.probability):.10g})"]
        if self.failing_paths:
            lines.append(f"P(check fails) = {exact_str(self.failure)} "
                         f"(~{_float(self.failure):.3g}), on {self.failing_paths} path"
                         + ("s" if self.failing_paths != 1 else "") + ":")
            lines += [f"  {exact_str(f.probability)}: {f.describe()}" for f in self.failing]
            if self.failing_paths > len(self.failing):
                lines.append(f"  ... and {self.failing_paths - len(self.failing)} more")
        else:
            lines.append("the check holds on every path")
        return "\n".join(lines)


def _float(x) -> float:
    return float(x.evalf(30)) if hasattr(x, "free_symbols") else float(x)


def _grid_text(grid: int) -> str:
    return f"2**{grid.bit_length() - 1}" if grid & (grid - 1) == 0 else str(grid)


class _OutOfTime(EngineSignal):
    """Internal: the wall-clock budget ran out inside the check (an engine signal: the
    check's own ``except`` that catches it is refused)."""


@contextmanager
def _deadline(seconds: float | None):
    """Stop the block after ``seconds`` of wall-clock time (POSIX main thread; elsewhere the
    path and size budgets of the engine still apply)."""
    usable = (seconds is not None and hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return

    def expire(signum, frame):
        raise _OutOfTime()

    previous = signal.signal(signal.SIGALRM, expire)
    outer, _interval = signal.setitimer(signal.ITIMER_REAL, float(seconds))
    start = _clock()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:                   # a timer of the caller's (pytest-timeout): re-armed
            signal.setitimer(signal.ITIMER_REAL, max(outer - (_clock() - start), 1e-3),
                             _interval)


def _as_bool(value, name: str) -> bool:
    if value is True or value is False:
        return value
    module = type(value).__module__ or ""
    if module == "numpy" and getattr(value, "shape", None) == () and \
            getattr(getattr(value, "dtype", None), "kind", "") == "b":   # numpy.bool_
        return bool(value)
    if module.startswith("torch") and str(getattr(value, "dtype", "")) == "torch.bool" and \
            getattr(value, "numel", lambda: 0)() == 1:                   # a one-element tensor
        return bool(value.item())
    raise InvalidInput(f"the check {name} returned {value!r} ({type(value).__name__}), not "
                       "True or False: a check returns a bool or raises AssertionError")


def probability_report(check, p, q, *, k: int = 1, grid: int | None = None,
                       arith: str | None = None, max_paths: int | None = DEFAULT_MAX_PATHS,
                       seconds: float | None = DEFAULT_SECONDS,
                       max_failing: int = 10) -> ProbabilityReport:
    """The exact probability that ``check`` holds on ``(p, q, k)``, with its failing paths.

    Parameters
    ----------
    check : callable or str
        ``check(s, p, q[, k]) -> bool`` (an :class:`AssertionError` counts as ``False``), or
        ``"file.py:function"`` / ``"module:function"`` naming one.
    grid : int, optional
        Explicit uniforms on ``{0, 1/N, ..., (N-1)/N}``.
    arith : str, optional
        Run the check's arithmetic in a float format (``"float32"``, ...): ``p`` and ``q``
        reach it rounded into the format and uniforms come from the format's generator grid
        (unless ``grid`` says otherwise), as :func:`exactspec.verify` does.
    max_paths : int or None
        Refuse work estimated above this many paths (``None`` insists).
    seconds : float or None
        Stop after this many seconds of wall-clock time (a check that never returns).
    max_failing : int
        Keep at most this many failing paths (all are counted).

    Notes
    -----
    With ``seconds``, the check runs in a watched child process
    (:func:`~exactspec.core.supervise.supervised`): a check that catches the timer's signal,
    blocks it or cancels it is still stopped.
    """
    if seconds is not None and _seconds_ok(seconds):
        from ..core.supervise import supervised

        return supervised(lambda: _probability_report(check, p, q, k, grid, arith, max_paths,
                                                      seconds, max_failing),
                          seconds=float(seconds), grace=0.5 + float(seconds) / 10,
                          what=f"the check {check if isinstance(check, str) else getattr(check, '__name__', 'given')}")
    return _probability_report(check, p, q, k, grid, arith, max_paths, seconds, max_failing)


def _seconds_ok(seconds) -> bool:
    return (isinstance(seconds, (int, float, Fraction)) and not isinstance(seconds, bool)
            and 0 < seconds < 1e9)


def _probability_report(check, p, q, k, grid, arith, max_paths, seconds, max_failing):
    k = as_k(k)
    m = get_method(check)
    p = p if isinstance(p, Dist) else Dist(p, name="p")
    q = q if isinstance(q, Dist) else Dist(q, name="q")
    if p.labels != q.labels:
        raise InvalidInput(f"q has {len(q)} entries but p has {len(p)}" if len(p) != len(q)
                           else f"p and q have different labels: {list(p.labels)} vs "
                           f"{list(q.labels)}")
    m.check(p, q, k)
    if not isinstance(max_failing, int) or max_failing < 0:
        raise InvalidInput(f"max_failing={max_failing!r}: need an integer >= 0")
    if seconds is not None and not _seconds_ok(seconds):
        raise InvalidInput(f"seconds={seconds!r}: need a positive number of seconds, or None "
                           "for no limit")
    run_p, run_q, factory, fmt_name, shown_grid = p, q, None, None, grid
    if arith is not None:
        from ..engine.float_sampler import FloatSampler, float_dist
        from ..engine.floats import get_format

        fmt = get_format(arith)
        fmt_name = fmt.name
        shown_grid = grid if grid is not None else fmt.grid   # the format's generator
        run_p, run_q = float_dist(p, fmt), float_dist(q, fmt)
        factory = lambda: FloatSampler(fmt, grid)  # noqa: E731
    user = _is_user(m)
    name = m.name
    last = {"message": ""}

    def run(s, _outcomes, _unused, k):
        last["message"] = ""
        try:
            held = m.run(s, run_p, run_q, k)
        except AssertionError as err:
            last["message"] = " ".join(str(err).split())[:300]
            return _FAILS
        return _HOLDS if _as_bool(held, name) else _FAILS

    failing: list = []
    count = [0]

    def on_path(path):
        if path.output == _FAILS:
            count[0] += 1
            if len(failing) < max_failing:
                failing.append(FailingPath(path.weight, path.branches, last["message"]))

    outcomes = Dist([Fraction(1, 2), Fraction(1, 2)], (_HOLDS, _FAILS), name="outcomes")
    before = _values(p), _values(q)
    if user:
        from ..engine.hidden_state import state_fingerprint

        state = state_fingerprint(m.run)
    try:
        with _deadline(seconds):
            enumeration = enumerate_paths(run, outcomes, outcomes, k, grid=grid,
                                          max_paths=max_paths, sampler_factory=factory,
                                          on_path=on_path, watch=user)
    except _OutOfTime:
        raise TooLarge(f"the check {name} ran for more than {float(seconds):g} s and had not "
                       "finished: it may never return (a loop that makes no random choice), "
                       "or give a larger seconds= budget") from None
    finally:
        if user:
            from ..engine.hidden_state import check_unchanged

            check_unchanged(m.run, state, name)
    if (_values(p), _values(q)) != before:
        raise InvalidInput(f"the check {name} changed its input p or q: they are read-only")
    if exact_sign(exact_difference(enumeration.total, 1)) != 0:
        raise AssertionError(f"internal: path weights sum to {enumeration.total}, not 1")
    holds = enumeration.law[_HOLDS]
    if hasattr(holds, "free_symbols"):
        import sympy

        holds = sympy.simplify(holds)
        if holds.is_Rational:
            holds = Fraction(int(holds.p), int(holds.q))
    else:
        holds = Fraction(holds)
    return ProbabilityReport(name, holds, enumeration.paths, failing, count[0], k, shown_grid,
                             fmt_name)


def probability(check, p, q, *, k: int = 1, grid: int | None = None,
                arith: str | None = None, max_paths: int | None = DEFAULT_MAX_PATHS,
                seconds: float | None = DEFAULT_SECONDS):
    """The exact probability (a ``Fraction``, or an exact sympy number) that ``check`` holds.

    ``check(s, p, q[, k])`` draws through the sampler ``s`` and returns a bool (or raises
    :class:`AssertionError`, counted as ``False``); see :func:`probability_report` for the
    parameters and the failing paths.

    >>> from exactspec import Dist
    >>> def never_emits_zero_target_token(s, p, q):
    ...     x = s.draft(q)
    ...     y = x if s.uniform() <= p[x] / q[x] else s.draw(Dist([0, 1]))  # '<=': a kernel bug
    ...     return p[y] > 0
    >>> probability(never_emits_zero_target_token, Dist.parse("0,1"), Dist.parse("1,0"),
    ...             grid=2**24)
    Fraction(16777215, 16777216)
    """
    return probability_report(check, p, q, k=k, grid=grid, arith=arith, max_paths=max_paths,
                              seconds=seconds, max_failing=0).probability


def _values(d: Dist) -> tuple:
    return d.labels, tuple(repr(v) for v in d.probs)


def _is_user(m) -> bool:
    from ..verify import is_user_method

    return is_user_method(m)
