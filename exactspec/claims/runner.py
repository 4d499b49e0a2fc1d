"""Running many claims at once: a pool of worker processes, longest work first.

A claim that is a list of independent units (a :class:`~exactspec.claims.base.Split`: blocks
of its corpus, its symbolic proofs) has its units spread over the workers; any other claim
runs whole in one worker.  A claim's units are merged, in their order, by the claim's own
reducer, the same one its serial run uses, so its verdict, details and certificate are those
of a serial run whatever ``--jobs`` is.  Results come back in the registry's order whatever
order they finish in, so the text and JSON of ``exactspec prove`` do not depend on ``--jobs``.

>>> [r.verdict for _, r in run_claims(["top1-lossy"], jobs=1)]
['PROVED']
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import NamedTuple

from .base import ClaimResult

__all__ = ["default_jobs", "run_claims", "Progress", "ProgressLine"]

#: Rough CPU seconds of each claim's full corpus on one core (measured on a busy two-core
#: machine), for scheduling only: longest first, so that no long piece of work starts last.
#: A split claim's seconds are shared out over its units by their weights.  A claim not listed
#: counts as 5 s.
EXPECTED_SECONDS = {
    "key-lossless-optimal": 45, "key-selection-law": 40, "tree-lossless": 45,
    "rrs-every-size": 75,
    "lossless-rule": 20, "rrs-ratio-bound": 15, "lumping-step": 14, "kseq-guarantee": 13,
    "alpha-star-three-ways": 12, "chain-lossless": 10, "block-verification": 9,
    "acceptance-1-tv": 8, "khisti-two-drafts": 8, "a-star-feasible-optimal": 8,
    "rrs-wor-not-worse": 7, "multi-draft-lossless": 6, "lossy-every-size": 6,
    "traversal-lossless": 10, "traversal-chain-block": 10,
}


class Progress(NamedTuple):
    """What a finished unit of work leaves done: its claim's units finished and in all, and
    the share of the whole run's expected work finished (0 to 1)."""

    claim_units_done: int
    claim_units: int
    work_done: float


def default_jobs() -> int:
    """Every core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:        # not on Linux
        return max(1, os.cpu_count() or 1)


def _run_unit(name: str, unit, full: bool):
    """One unit of a claim, and the seconds it took."""
    from . import get_claim

    start = time.perf_counter()
    tally = get_claim(name).run_unit(unit, full)
    return tally, time.perf_counter() - start


def run_claims(names: list[str] | None = None, *, jobs: int | None = None, full: bool = True,
               on_event: Callable[[str, str, object], None] | None = None
               ) -> Iterator[tuple[str, ClaimResult]]:
    """Run claims, ``jobs`` units of work at a time; yield ``(name, result)`` in the
    registry's order.

    Parameters
    ----------
    names : list of str, optional
        The claims (default: every registered claim), in the order to report them.
    jobs : int, optional
        Worker processes (default :func:`default_jobs`); ``1`` runs in this process.
    full : bool
        The full corpus of every corpus claim (default), or the fast one.
    on_event : callable, optional
        Called as ``on_event("start", name, None)`` when a claim's first unit starts,
        ``on_event("unit", name, progress)`` (a :class:`Progress`) when one of its units
        finishes, and ``on_event("done", name, result)`` when the claim is finished.

    Notes
    -----
    A split claim's ``seconds`` is the sum of its units' seconds: the work, wherever it ran.
    """
    from . import all_claims, get_claim

    names = [c.name for c in all_claims()] if names is None else list(names)
    claims = {name: get_claim(name) for name in names}   # unknown names fail before any work
    jobs = default_jobs() if jobs is None else jobs
    event = on_event or (lambda *_: None)
    units = {name: claims[name].work_units(full) for name in names}
    tasks = []                                    # (expected seconds, name, index)
    for name in names:
        total = sum(weight for _, weight in units[name]) or 1.0
        share = EXPECTED_SECONDS.get(name, 5) / total
        tasks += [(share * weight, name, index) for index, (_, weight) in enumerate(units[name])]
    work_total = sum(cost for cost, _, _ in tasks) or 1.0
    tallies = {name: [None] * len(units[name]) for name in names}
    left = {name: len(units[name]) for name in names}
    seconds = dict.fromkeys(names, 0.0)
    work_done = 0.0

    def finished(name, index, cost, tally, spent):
        """Record a unit; the claim's result once its last unit is in, else ``None``."""
        nonlocal work_done
        tallies[name][index] = tally
        seconds[name] += spent
        left[name] -= 1
        work_done += cost
        event("unit", name, Progress(len(units[name]) - left[name], len(units[name]),
                                     min(1.0, work_done / work_total)))
        if left[name]:
            return None
        result = claims[name].finish(tallies.pop(name), full, seconds[name])
        event("done", name, result)
        return result

    if jobs <= 1 or len(tasks) <= 1:
        costs = {(name, index): cost for cost, name, index in tasks}
        for name in names:
            event("start", name, None)
            for index, (unit, _) in enumerate(units[name]):
                tally, spent = _run_unit(name, unit, full)
                result = finished(name, index, costs[name, index], tally, spent)
            yield name, result
        return
    order = sorted(tasks, key=lambda task: -task[0])     # stable: ties in registry order
    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux")
                                          else "spawn")
    done: dict[str, ClaimResult] = {}
    started: set[str] = set()
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=context) as pool:
        pending = {}

        def submit():
            cost, name, index = order.pop(0)
            unit = units[name][index][0]
            pending[pool.submit(_run_unit, name, unit, full)] = (cost, name, index)
            if name not in started:
                started.add(name)
                event("start", name, None)

        while order and len(pending) < jobs:      # start only what runs now (progress line)
            submit()
        next_out = 0
        while pending:
            complete, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in complete:
                cost, name, index = pending.pop(future)
                tally, spent = future.result()
                if order:
                    submit()
                result = finished(name, index, cost, tally, spent)
                if result is not None:
                    done[name] = result
            while next_out < len(names) and names[next_out] in done:
                yield names[next_out], done.pop(names[next_out])
                next_out += 1


class ProgressLine:
    """One self-overwriting status line on a terminal
    (``[3/26] 41% of the work, 41 s; running: a 5/12, b``); silent when the stream is not a
    terminal.  It counts the work finished: claims done, and the share of the expected work
    done (from the ``"unit"`` events of :func:`run_claims`)."""

    def __init__(self, total: int, stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.total = total
        self.finished = 0
        self.running: dict[str, str] = {}
        self.work: float | None = None
        self.start = time.monotonic()
        self._clock = time.monotonic

    def __call__(self, kind: str, name: str, result) -> None:
        if kind == "start":
            self.running[name] = ""
        elif kind == "unit":
            self.work = result.work_done
            if name in self.running and result.claim_units > 1:
                self.running[name] = f" {result.claim_units_done}/{result.claim_units}"
        else:
            self.running.pop(name, None)
            self.finished += 1
        self.show()

    def show(self) -> None:
        if not self.enabled:
            return
        work = "" if self.work is None else f" {100 * self.work:.0f}% of the work,"
        running = ", ".join(name + units for name, units in self.running.items()) or "-"
        text = (f"[{self.finished}/{self.total}]{work} {self._clock() - self.start:.0f} s; "
                f"running: {running}")
        self.stream.write("\r\033[K" + text[:150])
        self.stream.flush()

    def clear(self) -> None:
        if self.enabled:
            self.stream.write("\r\033[K")
            self.stream.flush()
