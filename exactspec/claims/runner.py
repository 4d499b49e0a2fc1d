"""Running many claims at once: a pool of worker processes, longest claims first.

Each claim runs whole in one worker (a claim's verdict and certificate are those of a serial
run: the workers share nothing).  Results come back in the registry's order whatever order
they finish in, so the text and JSON of ``exactspec prove`` do not depend on ``--jobs``.

>>> [r.verdict for _, r in run_claims(["top1-lossy"], jobs=1)]
['PROVED']
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

from .base import ClaimResult

__all__ = ["default_jobs", "run_claims", "ProgressLine"]

#: Rough CPU seconds of each claim's full corpus on one core (measured on a busy two-core
#: machine), for scheduling only: longest first, so that no long claim starts last.  A claim
#: not listed counts as 5 s.
EXPECTED_SECONDS = {
    "key-lossless-optimal": 45, "key-selection-law": 40, "tree-lossless": 44,
    "lossless-rule": 20, "rrs-ratio-bound": 15, "lumping-step": 14, "kseq-guarantee": 13,
    "alpha-star-three-ways": 12, "chain-lossless": 10, "block-verification": 9,
    "acceptance-1-tv": 8, "khisti-two-drafts": 8, "a-star-feasible-optimal": 8,
    "rrs-wor-not-worse": 7, "multi-draft-lossless": 6,
}


def default_jobs() -> int:
    """Every core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:        # not on Linux
        return max(1, os.cpu_count() or 1)


def _run_one(name: str, full: bool) -> ClaimResult:
    from . import get_claim

    return get_claim(name).run(full=full)


def run_claims(names: list[str] | None = None, *, jobs: int | None = None, full: bool = True,
               on_event: Callable[[str, str, ClaimResult | None], None] | None = None
               ) -> Iterator[tuple[str, ClaimResult]]:
    """Run claims, ``jobs`` at a time; yield ``(name, result)`` in the registry's order.

    Parameters
    ----------
    names : list of str, optional
        The claims (default: every registered claim), in the order to report them.
    jobs : int, optional
        Worker processes (default :func:`default_jobs`); ``1`` runs in this process.
    full : bool
        The full corpus of every corpus claim (default), or the fast one.
    on_event : callable, optional
        Called as ``on_event("start", name, None)`` and ``on_event("done", name, result)``.
    """
    from . import all_claims, get_claim

    names = [c.name for c in all_claims()] if names is None else list(names)
    for name in names:
        get_claim(name)                           # unknown names fail before any work
    jobs = default_jobs() if jobs is None else jobs
    event = on_event or (lambda *_: None)
    if jobs <= 1 or len(names) <= 1:
        for name in names:
            event("start", name, None)
            result = _run_one(name, full)
            event("done", name, result)
            yield name, result
        return
    order = sorted(names, key=lambda n: -EXPECTED_SECONDS.get(n, 5))
    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux")
                                          else "spawn")
    done: dict[str, ClaimResult] = {}
    with ProcessPoolExecutor(max_workers=min(jobs, len(names)), mp_context=context) as pool:
        pending = {}
        queue = list(order)
        while queue and len(pending) < jobs:      # start only what runs now (progress line)
            name = queue.pop(0)
            pending[pool.submit(_run_one, name, full)] = name
            event("start", name, None)
        next_out = 0
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                name = pending.pop(future)
                done[name] = future.result()
                event("done", name, done[name])
                if queue:
                    nxt = queue.pop(0)
                    pending[pool.submit(_run_one, nxt, full)] = nxt
                    event("start", nxt, None)
            while next_out < len(names) and names[next_out] in done:
                yield names[next_out], done.pop(names[next_out])
                next_out += 1


class ProgressLine:
    """One self-overwriting status line on a terminal (``[3/26] 41 s running: a, b``);
    silent when the stream is not a terminal."""

    def __init__(self, total: int, stream=None):
        import time

        self.stream = sys.stderr if stream is None else stream
        self.enabled = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.total = total
        self.finished = 0
        self.running: list[str] = []
        self.start = time.monotonic()
        self._clock = time.monotonic

    def __call__(self, kind: str, name: str, result) -> None:
        if kind == "start":
            self.running.append(name)
        else:
            self.running.remove(name)
            self.finished += 1
        self.show()

    def show(self) -> None:
        if not self.enabled:
            return
        text = (f"[{self.finished}/{self.total}] {self._clock() - self.start:.0f} s running: "
                f"{', '.join(self.running) or '-'}")
        self.stream.write("\r\033[K" + text[:150])
        self.stream.flush()

    def clear(self) -> None:
        if self.enabled:
            self.stream.write("\r\033[K")
            self.stream.flush()
