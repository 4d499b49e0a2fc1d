"""Budgets the user's code cannot disarm: the work runs in a child process that is watched.

A wall-clock budget kept inside the process that runs user code (a ``SIGALRM`` timer, a check
between paths) can be caught, blocked, ignored or cancelled by that code, and a single call
that never returns is never checked at all.  :func:`supervised` forks: the child does the work
under resource limits (CPU seconds, address space) and sends back its result; the parent
reads nothing but the child's output, which it relays, and the result, and kills the child
(``SIGKILL``, which no code can catch) when the wall-clock budget is spent.  What the child
prints reaches the caller's ``sys.stdout`` and ``sys.stderr`` as it is written, so progress
lines and a test's captured output are as without the fork.

Where a fork is not possible (not POSIX) the work runs in this process, under the budgets the
engine keeps itself.  A caller with other threads is forked all the same: the child holds only
the calling thread (Python takes its import lock across the fork), and a child that still
blocks on a lock another thread held is stopped at the budget like any other.

>>> supervised(lambda: 6 * 7, seconds=10, what="the product")
42
>>> import time
>>> supervised(lambda: time.sleep(30), seconds=0.5, what="a nap")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
exactspec.core.errors.TooLarge: a nap ran for more than 0.5 s of wall-clock time and was stopped ...
"""

from __future__ import annotations

import math
import os
import pickle
import select
import signal
import struct
import sys
import time
import warnings
from typing import Any, Callable

from .errors import InvalidInput, TooLarge

__all__ = ["supervised", "can_supervise", "write_all", "MAX_MEMORY_BYTES"]

#: The address space a supervised run may take (a run over it fails its allocation).
MAX_MEMORY_BYTES = 16 * 2**30

_clock = time.monotonic          # taken before any watch of user code replaces the clock


def can_supervise() -> bool:
    """Whether this process can fork a supervised child (POSIX)."""
    return hasattr(os, "fork")


def supervised(work: Callable[[], Any], *, seconds: float | None, what: str,
               grace: float = 0.0, memory_bytes: int | None = MAX_MEMORY_BYTES,
               advice: str = "give a larger budget, or a smaller instance") -> Any:
    """Run ``work()`` in a watched child process and return its result (or raise its error).

    Parameters
    ----------
    seconds : float or None
        The wall-clock budget; the child also gets as many seconds of CPU (a run that spends
        them is stopped by the kernel).  ``None``: no time budget.
    what : str
        What runs, for the refusal (``"the check rule.py:check"``).
    grace : float
        Seconds past ``seconds`` before the child is stopped (a budget the run also keeps
        itself, with a message of its own, comes first).
    memory_bytes : int or None
        The child's address-space limit.
    advice : str
        The way out named by a refusal for time.
    """
    __tracebackhide__ = True        # a failing check shows the caller's line, not this one
    if not can_supervise():
        return work()
    channels = [os.pipe() for _ in range(3)]          # result, stdout, stderr
    sys.stdout.flush()
    sys.stderr.flush()
    with warnings.catch_warnings():          # (a fork beside other threads, said above)
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:                                     # the child: never returns
        _child(work, channels, None if seconds is None else seconds + grace, memory_bytes)
    for _read, write in channels:
        os.close(write)
    return _watch(pid, [read for read, _write in channels], seconds, grace, what, advice)


def _child(work, channels, seconds, memory_bytes) -> None:
    status = 0
    try:
        try:
            os.setpgid(0, 0)           # its own group: a stop ends the copies it forks too
        except OSError:
            pass
        for read, _write in channels:
            os.close(read)
        _limits(seconds, memory_bytes)
        result_fd, out_fd, err_fd = (write for _read, write in channels)
        sys.stdout = _Relay(out_fd, sys.stdout)
        sys.stderr = _Relay(err_fd, sys.stderr)
        try:
            outcome = ("value", work())
        except BaseException as err:   # noqa: BLE001 - every outcome goes back to the parent
            outcome = ("error", err)
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:          # noqa: BLE001 - a closed stream: the result still goes
            pass
        try:
            payload = pickle.dumps(outcome)
            if outcome[0] == "error":
                pickle.loads(payload)  # an error that cannot be made again goes as its text
        except BaseException as err:   # noqa: BLE001
            if outcome[0] == "error":
                err = outcome[1]
                payload = pickle.dumps(("error", InvalidInput(
                    f"{type(err).__name__}: {err}")))
            else:
                payload = pickle.dumps(("error", InvalidInput(
                    f"the result could not be sent back from the supervised run: "
                    f"{type(err).__name__}: {err}")))
        write_all(result_fd, struct.pack("<Q", len(payload)) + payload)
    except BaseException:              # noqa: BLE001
        status = 70
    finally:
        os._exit(status)


def _limits(seconds, memory_bytes) -> None:
    try:
        import resource
    except ImportError:                # not POSIX: the wall-clock budget alone
        return
    if seconds is not None:
        cpu = int(math.ceil(seconds)) + 1
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        if hard == resource.RLIM_INFINITY or hard > cpu + 1:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    if memory_bytes is not None:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard == resource.RLIM_INFINITY or hard > memory_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to the file descriptor ``fd`` (a pipe may take it in parts)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class _Relay:
    """A text stream of the child writing straight to a pipe the parent relays."""

    def __init__(self, fd: int, original):
        self._fd = fd
        self.encoding = "utf-8"
        self.errors = "replace"
        self._tty = bool(getattr(original, "isatty", lambda: False)())

    def write(self, text: str) -> int:
        write_all(self._fd, str(text).encode("utf-8", "replace"))
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return self._tty

    def fileno(self) -> int:
        return self._fd

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)


def _watch(pid: int, fds: list, seconds, grace, what: str, advice: str):
    __tracebackhide__ = True
    result_fd, out_fd, err_fd = fds
    streams = {out_fd: sys.stdout, err_fd: sys.stderr}
    decoders = {}
    import codecs

    for fd in streams:
        decoders[fd] = codecs.getincrementaldecoder("utf-8")("replace")
    result = bytearray()
    deadline = None if seconds is None else _clock() + seconds + grace
    open_fds = list(fds)
    killed = False
    try:
        while open_fds:
            wait = None if deadline is None else deadline - _clock()
            if wait is not None and wait <= 0:
                _signal_group(pid)
                killed = True
                break
            try:
                ready, _, _ = select.select(open_fds, [], [], wait)
            except InterruptedError:
                continue
            for fd in ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    open_fds.remove(fd)
                    continue
                if fd == result_fd:
                    result += chunk
                else:
                    text = decoders[fd].decode(chunk)
                    if text:
                        streams[fd].write(text)
                        streams[fd].flush()
    except BaseException:              # an interrupt of the caller: the child goes too
        _kill(pid)
        raise
    finally:
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
    _, status = os.waitpid(pid, 0)
    if killed:
        raise TooLarge(f"{what} ran for more than {seconds:g} s of wall-clock time and was "
                       "stopped (by a watching process, which the run's own code cannot "
                       f"catch, block or cancel); {advice}")
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL) \
            and seconds is not None:
        raise TooLarge(f"{what} used more than {math.ceil(seconds + grace) + 1} s of CPU and was "
                       f"stopped (a limit the run's own code cannot lift); {advice}")
    if len(result) < 8:
        how = (f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
               else f"exit code {os.WEXITSTATUS(status)}")
        raise InvalidInput(f"{what} ended without a result ({how}): user code may have ended "
                           "the process (os._exit, a signal) or run out of memory (the budget "
                           f"is {MAX_MEMORY_BYTES // 2**30} GiB)")
    (size,) = struct.unpack("<Q", bytes(result[:8]))
    kind, value = pickle.loads(bytes(result[8:8 + size]))   # our own child's bytes
    if kind == "error":
        raise value
    return value


def _signal_group(pid: int) -> None:
    """``SIGKILL`` to the child and to the processes it forked (its group, when it made
    one: :mod:`exactspec.engine.forked_paths`)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        os.kill(pid, signal.SIGKILL)


def _kill(pid: int) -> None:
    try:
        _signal_group(pid)
        os.waitpid(pid, 0)
    except (OSError, ChildProcessError):
        pass
