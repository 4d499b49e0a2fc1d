"""Paths whose common start is run once: the other options of a choice taken in forked copies.

The depth-first driver (:mod:`.driver`) replays a path's prefix of choices from the start of
the body for every path.  Where the body's work before its first choice is most of the work
(an engine's kernels, run over the whole vocabulary before the acceptance tests that split
the path), every path pays it again.  :class:`ForkedPaths` lets the walk pay it once: at a
choice past the prefix the process forks one copy per option not taken (POSIX ``os.fork``),
each copy suspended at that choice, holding the state the run had there; this process goes on
with the first option.  When a process has finished its own path, it resumes its copies one at
a time, the one forked last first, and each finishes its path (forking at its own choices in
turn), resumes its own copies, sends back what its paths added and ends.  The paths are the
same, in the same depth-first order, and each is run from the start to its end once; only the
start they share is not run again.

Whether to fork is decided once per walk, at the first choice of its first path: only when the
path has by then run for :data:`FORK_AFTER_SECONDS` (a cheap start is cheaper replayed than
copied); otherwise the walk replays its prefixes as before.  The deadlines open around the walk
(:mod:`exactspec.core.deadline`) go on in a copy as in this process: one closed here before a
copy resumes is closed there too.  What a copy sends back is what its paths added to the
route's law (``collect``), joined here by ``merge`` in the order of the walk; an exception of
a copy's run is raised here in its place in that order.  A copy that ends without a result
(user code that ends the process) is refused.  Before the copies run,
:meth:`ForkedPaths.probe` can count the walk's paths: one random path below each copy's choice,
in a fork of the copy (which stays suspended), gives Knuth's estimate of the tree under that
choice.  A copy never returns into the code that called the walk: it ends with ``os._exit``.

The walk's paths differ from the replayed ones in one respect: each copy holds the state the
process had where it was forked, so what a path's code changes in process state (a global
counter, a cache) is seen by no path after it but this process's own later paths.  The routes
that fork check for hidden state by running the call's law twice, and compare.

>>> forked = ForkedPaths(collect=lambda: None, merge=lambda data: None, after_seconds=0)
>>> forked.possible() == hasattr(__import__("os"), "fork")
True
"""

from __future__ import annotations

import os
import pickle
import random
import select
import signal
import struct
import sys
import time
from typing import Any, Callable

from ..core import deadline
from ..core.errors import InvalidInput
from ..core.supervise import write_all

__all__ = ["ForkedPaths", "FORK_AFTER_SECONDS"]

#: A walk forks at the first choice of its first path only if the path has run this long.
FORK_AFTER_SECONDS = 0.1

_HEADER = struct.Struct("<Q")


class _Copy:
    """A forked copy suspended at a choice: its pid, its channels, the deadlines open at the
    fork."""

    __slots__ = ("pid", "release", "result", "deadlines")

    def __init__(self, pid, release, result, deadlines):
        self.pid, self.release, self.result, self.deadlines = pid, release, result, deadlines


class ForkedPaths:
    """The forks of one depth-first walk (:func:`~.driver.depth_first`'s ``forked``).

    Parameters
    ----------
    collect : callable
        ``collect() -> data``: what this process's paths have added to the route's law (a
        copy calls it once, after its paths and its own copies' are done); picklable.
    merge : callable
        ``merge(data)``: add a copy's ``data`` here.

    Attributes
    ----------
    active : bool or None
        Whether the walk forks (``None`` until its first choice).
    copies_seconds : float
        The CPU seconds of the copies resumed from here and of theirs (a copy's CPU time
        starts at its fork, and it is not this process's).
    after_seconds : float, optional
        Fork only if the first path has run this long at its first choice (default
        :data:`FORK_AFTER_SECONDS`, read when the walk is made).
    """

    def __init__(self, collect: Callable[[], Any], merge: Callable[[Any], None], *,
                 after_seconds: float | None = None):
        self.collect, self.merge = collect, merge
        self.after_seconds = FORK_AFTER_SECONDS if after_seconds is None else after_seconds
        self.active: bool | None = None      # decided at the first choice of the first path
        self.is_copy = False
        self.splits: list = []               # per choice that forked: its copies, in order
        self.split_seconds: list = []        # (seconds into the path, copies) per such choice
        self.copies_seconds = 0.0            # CPU seconds of the copies that came back
        self.sampler = None                  # the walk's sampler (set by the driver)
        self.probing = False                 # a probe's process (see probe)
        self._began = 0.0
        self._result_fd = None

    def possible(self) -> bool:
        """Whether this process can fork (POSIX)."""
        return hasattr(os, "fork")

    # -- at a choice (the sampler's frontier) --------------------------------------------
    def split(self, arity: int) -> int:
        """The option this process takes at a new choice of ``arity`` options: 0 here, and
        ``1 .. arity - 1`` in copies forked now (when the walk forks)."""
        if self.active is None:
            self.active = self.possible() and \
                deadline.clock() - self._began >= self.after_seconds
        if not self.active:
            return 0
        copies: list = []
        self.splits.append(copies)
        self.split_seconds.append((deadline.clock() - self._began, arity - 1))
        open_now = deadline.open_deadlines()
        for option in range(1, arity):
            release_r, release_w = os.pipe()
            result_r, result_w = os.pipe()
            sys.stdout.flush()
            sys.stderr.flush()
            try:
                pid = os.fork()
            except OSError as err:
                for fd in (release_r, release_w, result_r, result_w):
                    os.close(fd)
                if not self.is_copy and len(self.splits) == 1 and not copies:
                    # nothing forked yet: this walk replays its prefixes instead
                    self.splits, self.split_seconds, self.active = [], [], False
                    return 0
                raise InvalidInput(f"a copy of the process for the walk's other paths could "
                                   f"not be forked ({err}): too many processes or too little "
                                   "memory; a smaller --tokens or vocabulary") from None
            if pid == 0:                              # the copy: suspended until resumed
                os.close(release_w)
                os.close(result_r)
                for earlier in self.splits:
                    for copy in earlier:
                        os.close(copy.release)
                        os.close(copy.result)
                if self._result_fd is not None:
                    os.close(self._result_fd)
                self.splits, self.split_seconds = [], []
                self.copies_seconds = 0.0
                self.is_copy = True
                self._result_fd = result_w
                self._resume(release_r, open_now)
                return option
            os.close(release_r)
            os.close(result_w)
            copies.append(_Copy(pid, release_w, result_r, open_now))
        return 0

    def _resume(self, release_fd: int, open_then: list) -> None:
        """In a copy: wait until resumed, keeping the deadlines still open in the process that
        resumes it; a probe asked for meanwhile is forked, and its result sent, each time
        (the probe's process returns from here).  The process gone (no message): end."""
        while True:
            message = _read_exactly(release_fd, len(open_then) + 1)
            if message is None:
                os._exit(0)
            deadline.keep_open([d for d, keep in zip(open_then, message[1:]) if keep])
            if message[:1] == b"r":
                break
            if self._probe_here(release_fd):
                return
        os.close(release_fd)
        self._began = deadline.clock()

    def _probe_here(self, release_fd: int) -> bool:
        """In a copy asked for a probe: fork one that goes on from this choice with random
        options (``True`` in it), and relay what it sends (``("probe", None)`` if nothing)."""
        read, write = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            pid = None
        if pid == 0:
            _die_with_parent()
            os.close(read)
            os.close(release_fd)
            os.close(self._result_fd)
            self._result_fd = write
            self.probing = True
            self._began = deadline.clock()
            self.sampler._probe = random.Random(os.getpid())
            self.sampler._probe_size = 1
            return True
        os.close(write)
        payload = b""
        if pid is not None:
            payload = _read_to_end(read)
            os.waitpid(pid, 0)
        os.close(read)
        if not payload:
            payload = pickle.dumps(("probe", None, 0.0))
        write_all(self._result_fd, _HEADER.pack(len(payload)) + payload)
        return False

    # -- the walk ------------------------------------------------------------------------
    def first_path(self, one_path: Callable[[], None]) -> None:
        """Run this process's path; in a copy (which comes back here from the choice it was
        forked at), then its own copies', send back what they added, and end."""
        self._began = deadline.clock()
        try:
            one_path()
        except BaseException as err:      # noqa: BLE001 - a copy sends every outcome back
            if self.probing:              # (a probe's path always ends here: its choices
                self._end_probe()         # are not the prefix's, which the driver checks)
            if self.is_copy:
                self._end_copy(("error", err))
            raise
        if self.probing:
            self._end_probe()
        if self.is_copy:
            try:
                paths = 1 + self.run_copies()
                outcome = ("value", (self.collect(), paths,
                                     time.process_time() + self.copies_seconds))
            except BaseException as err:  # noqa: BLE001
                outcome = ("error", err)
            self._end_copy(outcome)

    def _end_probe(self) -> None:
        """In a probe: send the product of the arities of its choices and its seconds, and end
        the process (never returns)."""
        try:
            write_all(self._result_fd, pickle.dumps(
                ("probe", self.sampler._probe_size, deadline.clock() - self._began)))
        finally:
            os._exit(0)

    def probe(self) -> tuple:
        """``(paths, seconds)``: the walk's paths estimated from random paths of the copies
        (the first path, and for each copy the product of the arities along a random path
        below its choice: Knuth's estimate of the tree under that choice, each one run in a
        fork of the copy, which stays suspended), and the mean seconds of a copy's path (its
        part after its choice)."""
        paths, seconds, probes = 1, 0.0, 0
        for copies in self.splits:
            for copy in copies:
                try:
                    self._send(copy, b"p")
                    payload = self._receive(copy)
                except OSError:
                    payload = None
                _, size, spent = ("probe", None, 0.0) if payload is None else \
                    pickle.loads(payload)                  # our own copy's bytes
                paths += 1 if size is None else size
                seconds += spent
                probes += 1
        return paths, seconds / max(1, probes)

    def _end_copy(self, outcome: tuple) -> None:
        """In a copy: send ``outcome`` back and end the process (never returns)."""
        try:
            self.abandon()
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except BaseException:          # noqa: BLE001 - a closed stream: the result goes
                pass
            try:
                payload = pickle.dumps(outcome)
                if outcome[0] == "error":
                    pickle.loads(payload)  # an error that cannot be made again goes as text
            except BaseException as err:   # noqa: BLE001
                what = outcome[1] if outcome[0] == "error" else err
                payload = pickle.dumps(("error", InvalidInput(
                    f"a forked path's result could not be sent back: {type(what).__name__}: "
                    f"{what}")))
            write_all(self._result_fd, _HEADER.pack(len(payload)) + payload)
        finally:
            os._exit(0)

    def run_copies(self, every: Callable[[int], None] | None = None, done: int = 1) -> int:
        """Resume this process's copies in the walk's order (the last choice first, its
        options in order), each to its end; merge what each sends; return their paths.
        ``every(count)`` after each copy's paths, counting on from ``done``."""
        paths = 0
        while self.splits:
            copies = self.splits[-1]
            while copies:
                copy = copies.pop(0)
                data, count, seconds = self._run_copy(copy)
                self.copies_seconds += seconds
                self.merge(data)
                paths += count
                if every is not None:
                    for n in range(done + paths - count + 1, done + paths + 1):
                        every(n)
            self.splits.pop()
        return paths

    def _send(self, copy: _Copy, kind: bytes) -> None:
        """Tell a suspended copy to run (``b"r"``) or to probe (``b"p"``), with the deadlines
        of its fork that are still open here."""
        open_now = deadline.open_deadlines()
        write_all(copy.release, kind + bytes(any(d is o for o in open_now)
                                             for d in copy.deadlines))

    def _receive(self, copy: _Copy):
        """A copy's next message (``None``: it ended without one)."""
        header = self._await(copy, _HEADER.size)
        return None if header is None else self._await(copy, _HEADER.unpack(header)[0])

    def _run_copy(self, copy: _Copy):
        try:
            self._send(copy, b"r")
        except OSError:                   # the copy has ended already: no result below
            pass
        finally:
            os.close(copy.release)
        try:
            payload = self._receive(copy)
        except BaseException:
            _end(copy.pid)
            raise
        finally:
            os.close(copy.result)
        _, status = os.waitpid(copy.pid, 0)
        if payload is None:
            how = (f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
                   else f"exit code {os.WEXITSTATUS(status)}")
            raise InvalidInput(f"a path run in a forked copy of the process ended without its "
                               f"result ({how}): user code may have ended the process "
                               "(os._exit, a signal) or run out of memory")
        kind, value = pickle.loads(payload)      # our own copy's bytes
        if kind == "error":
            raise value
        return value

    def _await(self, copy: _Copy, size: int):
        """``size`` bytes from a copy, checking the open deadlines while it works."""
        out = bytearray()
        while len(out) < size:
            ready, _, _ = select.select([copy.result], [], [], 0.5)
            if not ready:
                deadline.check()
                continue
            chunk = os.read(copy.result, min(size - len(out), 1 << 20))
            if not chunk:
                return None
            out += chunk
        return bytes(out)

    def copy_seconds(self, first: float) -> float | None:
        """The mean seconds of a copy's path, estimated from the first path's ``first``
        seconds: the part of it after the choice the copy was forked at (``None`` where the
        walk does not fork)."""
        if not self.active:
            return None
        copies = sum(n for _, n in self.split_seconds)
        parts = sum(n * max(0.0, first - at) for at, n in self.split_seconds)
        return parts / max(1, copies)

    def abandon(self) -> None:
        """End the copies not resumed (a walk stopped by an error or a budget)."""
        for copies in self.splits:
            for copy in copies:
                for fd in (copy.release, copy.result):
                    try:
                        os.close(fd)
                    except OSError:
                        pass
                _end(copy.pid)
        self.splits = []


def _end(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (OSError, ChildProcessError):
        pass


def _die_with_parent() -> None:
    """Linux: end this process when the one that forked it ends (a probe whose copy is
    stopped by a budget); elsewhere nothing."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)          # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _read_to_end(fd: int) -> bytes:
    out = bytearray()
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except InterruptedError:
            continue
        if not chunk:
            return bytes(out)
        out += chunk


def _read_exactly(fd: int, size: int):
    out = b""
    while len(out) < size:
        try:
            chunk = os.read(fd, size - len(out))
        except InterruptedError:
            continue
        if not chunk:
            return None
        out += chunk
    return out
