"""A route run in a forked process beside this one: the float run of a long row.

At 152,064 tokens the float run and the exact run of a one-position PyTorch rule take about
ten seconds each and are independent: the float run (and the exact run on the grid, when it
is a run of its own) can run in a child while this process runs exact arithmetic.  The child
plans its request on the tensor-axis routes only and sends back what ``pack`` makes of the
enumeration (computed where it ran: a law as integers, its TV); where a second process
cannot be used (not Linux, one core, rows shorter than :data:`PARALLEL_MIN_TOKENS`, a request
the tensor-axis routes decline, a process with more than one thread, whose locks a fork
would copy held) or a run does not complete
there, the caller plans it here, where any error is raised as it would be.
"""

from __future__ import annotations

from typing import Callable

from .request import Request

__all__ = ["PARALLEL_MIN_TOKENS", "start_in_fork", "Forked"]

#: A one-position PyTorch rule on rows at least this long runs its float run in a forked
#: process while this one runs exact arithmetic.
PARALLEL_MIN_TOKENS = 20_000


def start_in_fork(requests: list, pack: Callable) -> "Forked | None":
    """Start each of ``requests`` (on the tensor-axis routes) in a forked process; ``pack``
    turns an :class:`~.request.Answer` into what is sent back.  ``None`` where a fork is not
    used (the caller plans them here)."""
    import os
    import sys
    import threading

    from .planner import plan
    from .tensor_axis import SPLITS_AS_BRANCHES, SPLITS_AS_VALUES, declined_for

    if not requests or sys.platform != "linux" or \
            len(requests[0].p) < PARALLEL_MIN_TOKENS or \
            len(os.sched_getaffinity(0)) < 2 or \
            any(declined_for(r) is not None for r in requests) \
            or threading.active_count() > 1:      # a fork copies one thread: no held locks
        return None
    import multiprocessing

    def work(conn, request):
        try:
            answer = plan(request, (SPLITS_AS_VALUES, SPLITS_AS_BRANCHES), optional=True)
            conn.send(None if answer is None else pack(answer))
        except BaseException:       # the caller plans it again here, and raises it there
            conn.send(None)
        conn.close()

    context = multiprocessing.get_context("fork")
    forked = Forked()
    try:
        for request in requests:
            receive, send = context.Pipe(duplex=False)
            child = context.Process(target=work, args=(send, request), daemon=True)
            child.start()
            send.close()
            forked.children.append((child, receive))
    except (OSError, ValueError):
        forked.stop()
        return None
    return forked


class Forked:
    """The forked processes of :func:`start_in_fork`, each with the end of its pipe."""

    def __init__(self):
        self.children = []

    def result(self):
        """What each child sent, in the order started, or ``None`` if one did not complete."""
        try:
            runs = tuple(receive.recv() for _, receive in self.children)
        except (EOFError, OSError):
            return None
        finally:
            self.stop()
        return None if None in runs else runs

    def stop(self):
        for child, receive in self.children:
            if child.is_alive():
                child.terminate()
            child.join()
            receive.close()
