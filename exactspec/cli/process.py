"""Process control of the command line: exit codes, the supervised child that runs user
code under a wall-clock budget, the progress line, and every failure printed in one line.

Exit status: 0 success, 1 a refuted claim, 2 bad input or usage (one line on stderr),
3 undecided (``exactspec check``: 4 not checked).  A command that runs user code runs in a
watched child process (:func:`~exactspec.core.supervise.supervised`) whose budget this
process keeps.
"""

from __future__ import annotations

import json
import os
import sys

from .output import JSON, STDOUT


EXIT_OK, EXIT_REFUTED, EXIT_USAGE, EXIT_UNDECIDED = 0, 1, 2, 3


class UsageError(Exception):
    """Bad usage of a command: ``error: ...`` in one line on stderr, exit 2."""


#: The wall-clock budget of a run of user code without --seconds (none under --max-paths N).
DEFAULT_RUN_SECONDS = 600.0


def _runs_user_code(args) -> bool:
    """Whether the command runs a user's code: a method, check or verifier named by file or
    module (``rule.py:fn``), or a tree spec (which may name one)."""
    if args.command == "tree" or args.command == "probability":
        return True
    if args.command == "check":                  # a --trust rule of the user's is run
        return bool(args.trust)
    named = getattr(args, "method", None)
    return args.command in ("verify", "simulate") and isinstance(named, str) and ":" in named


def supervised_command(args, command) -> int:
    """Run ``command(args)`` in a watched child process when it runs user code
    (:func:`~exactspec.core.supervise.supervised`): its wall-clock budget (``--seconds``, or
    the check's own under ``probability``) is kept by this process, which user code cannot
    reach; every other command runs here."""
    from ..core.supervise import can_supervise, supervised

    if not _runs_user_code(args) or not can_supervise():
        return _command_exit(args, command)
    seconds = getattr(args, "seconds", None)
    if seconds is not None and (not seconds > 0 or seconds == float("inf")):
        raise UsageError(f"--seconds={seconds}: must be a positive number of seconds")
    grace = 0.0
    if args.command == "probability":           # the check's budget comes first, in its words
        grace = 2.0 + seconds / 5
    elif args.command == "check":                # the checker's budget, then its grace
        seconds = (args.max_seconds or 600.0) + 10.0
    elif seconds is None and not getattr(args, "max_paths", None):
        seconds = DEFAULT_RUN_SECONDS
    ticker = Ticker.start(f"exactspec {args.command}", seconds) \
        if args.command == "verify" and sys.stderr.isatty() else None
    try:
        return supervised(lambda: _command_exit(args, command), seconds=seconds, grace=grace,
                          what=f"exactspec {args.command}",
                          advice="give a larger --seconds S, or a smaller instance")
    finally:
        if ticker is not None:
            ticker.stop()


class Ticker:
    """A progress line on stderr while a supervised command runs longer than
    :data:`PROGRESS_AFTER` seconds: ``exactspec verify: working, 12 s (budget 600 s; Ctrl-C
    stops it)``, rewritten in place each second by a thread of the watching process (the
    child that runs the work has none, so its forked runs still fork) and cleared before
    anything the command writes is shown.  Started only when stderr is a terminal."""

    def __init__(self, what: str, seconds, stream, after: float, every: float):
        import threading

        self.what, self.seconds, self.stream = what, seconds, stream
        self.after, self.every = after, every
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.shown = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.saved = None

    @classmethod
    def start(cls, what: str, seconds, stream=None, after: float | None = None,
              every: float = 1.0) -> "_Ticker":
        """Start the line's thread and put the command's streams behind :meth:`clear`."""
        ticker = cls(what, seconds, stream or sys.stderr,
                     PROGRESS_AFTER if after is None else after, every)
        ticker.saved = (sys.stdout, sys.stderr)
        sys.stdout = _ClearingStream(sys.stdout, ticker, final=True)
        sys.stderr = _ClearingStream(sys.stderr, ticker, final=False)
        ticker.thread.start()
        return ticker

    def line(self, elapsed: float) -> str:
        budget = f"budget {self.seconds:g} s; " if self.seconds else ""
        return f"{self.what}: working, {elapsed:.0f} s ({budget}Ctrl-C stops it)"

    def _run(self) -> None:
        import time

        began = time.monotonic()
        if self.done.wait(self.after):
            return
        while not self.done.is_set():
            with self.lock:
                if self.done.is_set():
                    return
                self.stream.write("\r" + self.line(time.monotonic() - began) + "\x1b[K")
                self.stream.flush()
                self.shown = True
            self.done.wait(self.every)

    def clear(self, final: bool = False) -> None:
        """Take the line off the screen (before the command's own text); ``final``: and stop
        it (the report has begun)."""
        if os.getpid() != self.pid:                      # the forked child: not its line
            return
        with self.lock:
            if final:
                self.done.set()
            if self.shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
                self.shown = False

    def stop(self) -> None:
        self.clear(final=True)
        if self.saved is not None and os.getpid() == self.pid:
            sys.stdout, sys.stderr = self.saved
            self.saved = None


class _ClearingStream:
    """A stream that clears the progress line (:class:`Ticker`) before each write."""

    def __init__(self, stream, ticker: Ticker, final: bool):
        self._stream, self._ticker, self._final = stream, ticker, final

    def write(self, text):
        if text:
            self._ticker.clear(final=self._final)
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


#: The progress line of a supervised ``verify`` appears after this many seconds.
PROGRESS_AFTER = 3.0


def _command_exit(args, command) -> int:
    """``command(args)`` run to its exit code, a failure reported in one line."""
    try:
        return _run_command(args, command)
    except UsageError as err:
        return fail(f"error: {err}")
    except Exception as err:  # noqa: BLE001 - every failure becomes one line, never a traceback
        return report_error(err)


class _UserExit(SystemExit):
    """``os._exit(code)`` called in this process while a command ran (user code)."""


def _trapped_exit(real_exit, pid):
    """``os._exit`` for the run of a command: in this process it raises :class:`_UserExit`
    (user code must not end the command without its report), in a forked worker it exits."""
    def _exit(code):
        if os.getpid() != pid:                           # a worker process: its own exit
            real_exit(code)
        raise _UserExit(code)
    return _exit


def _run_command(args, command) -> int:
    """Run ``command(args)``; under ``--json`` whatever user code prints goes to stderr; a call of
    ``sys.exit`` or ``os._exit`` in user code is refused in one line (exit 2)."""
    if getattr(args, "json", False):
        STDOUT[0], sys.stdout = sys.stdout, sys.stderr
    real_exit = os._exit
    os._exit = _trapped_exit(real_exit, os.getpid())
    try:
        return command(args)
    except SystemExit as exiting:  # user code called sys.exit: its exit, not ours
        where = user_frame(exiting, only_user=True)
        call = "os._exit" if isinstance(exiting, _UserExit) else "sys.exit"
        return fail(f"error: user code called {call}({exiting.code!r}){where}: a verifier "
                     "must return a token")
    finally:
        os._exit = real_exit
        if STDOUT[0] is not None:
            sys.stdout, STDOUT[0] = STDOUT[0], None


def no_command(commands) -> int:
    """Bare ``exactspec``: the short usage and a one-line hint naming ``commands``, exit 2."""
    print("usage: exactspec [-h] [--version] COMMAND [options]", file=sys.stderr)
    return fail(f"error: exactspec: name a command ({', '.join(commands)}; exactspec --help "
                 "describes them)")


def fail(line: str, code: int = EXIT_USAGE) -> int:
    """Print ``line`` (``error: ...`` or ``undecided: ...``) on stderr and return ``code``;
    under ``--json`` also write the command's one object on stdout, ``{"error": ...,
    "exit": 2}`` (``{"undecided": ..., "exit": 3}``), unless it wrote its own already."""
    print(line, file=sys.stderr)
    if JSON[0] and not JSON[1]:
        key, _, text = line.partition(": ")
        key = "undecided" if code == EXIT_UNDECIDED else "error"
        out = STDOUT[0] or sys.stdout
        out.write(json.dumps({key: text or line, "exit": code}) + "\n")
        out.flush()
        JSON[1] = True
    return code


def report_error(err: Exception) -> int:
    """An error reported in one line on stderr, with its exit code (3 when undecided, else 2)."""
    from ..core.errors import ExactspecError, TooLarge, Undecided, names_its_line

    if isinstance(err, Undecided):
        return fail(f"undecided: {_one_line(err)}", EXIT_UNDECIDED)
    if isinstance(err, (ExactspecError, TooLarge)):
        where = "" if names_its_line(err) else user_frame(err, only_user=True)
        return fail(f"error: {_one_line(err)}{where}")
    if isinstance(err, MemoryError):
        return fail("error: out of memory: the work needed more memory than this process may "
                     "take (give a smaller instance)")
    where = user_frame(err)
    if where.startswith(" (in "):
        where = " (raised by user code " + where[len(" ("):]
    return fail(f"error: {type(err).__name__}: {_one_line(err)}{where}")


def _one_line(err) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= 2000 else text[:2000] + " ..."


def user_frame(err, only_user: bool = False) -> str:
    """`` (in file.py line N)`` for the innermost frame outside exactspec, if any."""
    import traceback

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # exactspec/
    frames = [f for f in traceback.extract_tb(err.__traceback__)
              if not os.path.abspath(f.filename).startswith(package)
              and not f.filename.startswith("<frozen ") and f.filename.endswith(".py")
              and f"{os.sep}lib{os.sep}python" not in f.filename]
    if frames:
        return f" (in {frames[-1].filename} line {frames[-1].lineno})"
    return "" if only_user else " (inside exactspec: please report this as a bug)"
