"""The engine's signals, kept on the run: user code cannot swallow them.

While a user's function runs, the engine talks to its drivers by raising: a refusal (hidden
randomness, an op outside the tensor layer, a budget: an
:class:`~exactspec.core.errors.ExactspecError`) or a control signal (a fallback to another
route, the frontier of a size estimate, a case split: an :class:`EngineSignal`).  Each is an
exception, and a user's ``try: ... except BaseException: pass`` (or ``contextlib.suppress``,
a context manager whose ``__exit__`` returns True, a ``return`` in ``finally``) can catch it
and carry on along its except branch: a path real Python or real torch would never take.

So every such exception is recorded on the run at the moment it is made (:func:`user_code`
opens the record around each call of user code).  When the call ends, a recorded exception
that did not come out of it, and that passed through the user's code on its way (its
traceback holds a frame of a user's file), was caught there: the run is refused in one line
naming the signal, the user's line that raised it and the line that caught it
(:class:`SignalCaught`), or, for a fallback, the route's own fallback is raised again so that
the route that can follow the rule runs instead.  An exception the engine catches inside its
own code never touches a user frame and is not counted.

>>> from exactspec.core.errors import InvalidInput
>>> def swallows():
...     try:
...         raise InvalidInput("refused")
...     except Exception:
...         return 1
>>> with user_code():
...     answer = swallows()                  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
exactspec.core.signals.SignalCaught: user code caught exactspec's InvalidInput (refused) raised at <doctest ...>:3 and caught at <doctest ...>:3: the run would go on ...
>>> def passes():
...     raise InvalidInput("refused")
>>> with user_code():
...     passes()
Traceback (most recent call last):
...
exactspec.core.errors.InvalidInput: refused
"""

from __future__ import annotations

import ast
import os
import sys
import threading

from . import errors
from .errors import InvalidInput

__all__ = ["EngineSignal", "SignalCaught", "user_code", "user_calls", "is_user_file",
           "count_as_user", "record", "library_paths"]


class SignalCaught(InvalidInput):
    """User code caught one of the engine's signals and went on: its run is refused."""

    located = True      # the message names the user's lines


class EngineSignal(BaseException):
    """Base of the engine's control signals raised through user code (a fallback to another
    route, a size estimate's frontier, a case split).  A ``BaseException``, so that ``except
    Exception`` in user code lets them pass; recorded when made, so that ``except
    BaseException`` is caught too (:func:`user_code`).

    ``fallback`` is True for a signal that asks for another route: caught by user code, it
    is raised again (a new one of the same class) instead of a refusal.
    """

    fallback = False

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls, *args, **kwargs)
        record(self)
        return self


class CannotProceed(EngineSignal):
    """The one signal by which a route says it cannot go on with a request (a value it does
    not track, rows it does not take, a replay that differs): raised by the route, caught
    only by the planner (:mod:`exactspec.routes.planner`), which records ``why`` and tries the
    next route in its declared order.  ``retry`` names the variant of the same route that can
    still go on where there is one: ``"splits"`` (run again with every split a branch point)
    or ``"apart"`` (a pair run made as two runs).

    Caught by user code, it is raised again (with its ``retry``) when the call ends, so the
    planner still moves on to a route whose verdict is the true one.

    Examples
    --------
    >>> err = CannotProceed("rows that are not exact rationals")
    >>> str(err), err.retry, err.fallback
    ('rows that are not exact rationals', None, True)
    """

    fallback = True

    def __init__(self, why: str = "", *, retry: str | None = None):
        super().__init__(why)
        self.retry = retry

    @property
    def why(self) -> str:
        return str(self)


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PATHS: list = []


def library_paths() -> tuple:
    """``(stdlib, (installed packages..., exactspec))``, computed once."""
    if not _PATHS:
        import sysconfig

        paths = sysconfig.get_paths()
        libraries = {paths[key] for key in ("purelib", "platlib")}
        libraries.add(_PACKAGE)
        _PATHS.append((paths["stdlib"], tuple(sorted(libraries))))
    return _PATHS[0]


#: Files of installed packages whose code runs as the user's (an engine's function taken
#: from its package's source by ``exactspec.torch_layer.load``): watched, its state and its
#: catches of the engine's signals checked, as a file of the user's own.
_USER_FILES: set = set()


def count_as_user(name: str) -> None:
    """Count the code of the file ``name`` as the user's from now on (see :func:`is_user_file`)."""
    _USER_FILES.add(name)


def is_user_file(name: str) -> bool:
    """Whether code from the file ``name`` is the user's: not the standard library, not an
    installed package, not exactspec, not the import machinery (code run from a string,
    ``<string>``, counts as the user's).

    >>> is_user_file(os.__file__), is_user_file("/home/me/rule.py"), is_user_file("<string>")
    (False, True, True)
    """
    if name.startswith("<frozen"):
        return False
    if name in _USER_FILES:
        return True
    stdlib, libraries = library_paths()
    if name.startswith(stdlib):
        return False
    return not name.startswith(libraries)


# -- the record -----------------------------------------------------------------------------
_LOCAL = threading.local()
_ORPHANS: list = []          # made in a thread with no open record (a thread the user started)
_OPEN = [0]                  # records open in any thread
_ENTERED = [0]               # calls of user code opened so far (every thread)
_COUNT = threading.Lock()


def record(err: BaseException) -> None:
    """Note ``err`` on the innermost open record of this thread (or, in a thread of the
    user's own, on the list every open record reads); nothing when no user code runs."""
    if not _OPEN[0]:
        return
    stack = getattr(_LOCAL, "stack", None)
    if stack:
        stack[-1].append(err)
    else:
        _ORPHANS.append(err)


errors.ERROR_RECORDERS.append(record)


def _through_user(err: BaseException) -> bool:
    """Whether ``err`` was caught in the user's code: its traceback (from the frame that
    caught it down to the raise) holds a user's frame, or was taken off it."""
    tb = err.__traceback__
    if tb is None:              # made and never raised, or its traceback taken off in user code
        return True
    while tb is not None:
        if is_user_file(tb.tb_frame.f_code.co_filename):
            return True
        tb = tb.tb_next
    return False


def _received(exc) -> set:
    """The ids of ``exc`` and of the engine's exceptions it was raised from (a refusal the
    engine turned into another carries the first as its context)."""
    out = set()
    while exc is not None and id(exc) not in out and _is_signal(exc):
        out.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return out


def _is_signal(err) -> bool:
    from .errors import ExactspecError

    return isinstance(err, (EngineSignal, ExactspecError))


def user_calls() -> int:
    """How many calls of user code have been opened so far (:class:`user_code`): a caller
    that sees it unchanged knows no user code ran meanwhile."""
    return _ENTERED[0]


class user_code:
    """Open the record of the engine's signals around one call of user code.

    On leaving, a signal made during the call that the user's code caught is refused
    (:class:`SignalCaught`, or a new fallback of the signal's class); the exception that
    leaves the call, and the signals it was raised from, reached the engine.
    """

    __slots__ = ("records", "orphans")

    def __enter__(self):
        stack = getattr(_LOCAL, "stack", None)
        if stack is None:
            stack = _LOCAL.stack = []
        self.records: list = []
        self.orphans = len(_ORPHANS)
        stack.append(self.records)
        with _COUNT:
            _OPEN[0] += 1
            _ENTERED[0] += 1
            if _OPEN[0] == 1:
                _quiet_threads()
        return self

    def __exit__(self, kind, exc, tb):
        stack = _LOCAL.stack
        stack.pop()
        with _COUNT:
            _OPEN[0] -= 1
            orphans = _ORPHANS[self.orphans:] if len(_ORPHANS) > self.orphans else ()
            if not _OPEN[0]:
                del _ORPHANS[:]
        if not self.records and not orphans:
            return False
        received = _received(exc)
        if stack and exc is not None and received:
            stack[-1].append(exc)        # an outer call of user code may catch it in turn
        for err in list(self.records) + list(orphans):
            if id(err) in received or not (getattr(err, "_thread", False)
                                           or _through_user(err)):
                continue                 # (a thread's death of a signal is never received)
            raise _caught(err) from None
        return False


def _caught(err: BaseException) -> BaseException:
    """What a caught signal becomes: a fallback raised again, or the refusal of the run."""
    raised, caught = _lines(err)
    if isinstance(err, EngineSignal) and err.fallback:
        again = type(err)(f"user code caught the route's fallback ({err}){caught}")
        again.retry = getattr(err, "retry", None)
        return again
    name = type(err).__name__
    text = " ".join(str(err).split(" (in ")[0].split())
    text = text.split(": ")[0] if len(text.split(": ")[0]) >= 12 else text
    if len(text) > 200:
        text = text[:200] + " ..."
    advice = ("so no verdict is given; let exactspec's exceptions pass (catch only your own "
              "exceptions, or re-raise exactspec.ExactspecError and exactspec.EngineSignal)")
    if getattr(err, "_thread", False):
        return SignalCaught(
            f"a thread started by user code stopped on exactspec's {name} ({text}){raised}: "
            f"the signal never reached the engine, {advice}")
    return SignalCaught(
        f"user code caught exactspec's {name} ({text}){raised}{caught}: the run would go on "
        f"along a path real Python would not take, {advice}")


def _lines(err) -> tuple:
    """`` raised at FILE:LINE`` (the user's innermost frame) and `` and caught at
    FILE:LINE`` (the handler around the user's outermost frame) of a caught ``err``."""
    tb = err.__traceback__
    frames = []
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if is_user_file(name):
            frames.append((name, tb.tb_lineno))
        tb = tb.tb_next
    if not frames:
        return "", ""
    inner, outer = frames[-1], frames[0]
    handler = _handler_line(*outer)
    raised = f" raised at {_short(inner[0])}:{inner[1]}"
    return raised, f" and caught at {_short(outer[0])}:{handler or outer[1]}"


def _short(name: str) -> str:
    if name.startswith("<"):
        return name
    try:
        relative = os.path.relpath(name)
    except ValueError:
        return name
    return name if relative.startswith("..") else relative


_HANDLERS: dict = {}


def _handler_line(filename: str, line: int) -> int | None:
    """The line of the innermost ``except``, ``finally`` or ``with`` around ``line`` of
    ``filename`` (where an exception passing through ``line`` was caught)."""
    nodes = _HANDLERS.get(filename)
    if nodes is None:
        nodes = []
        try:
            with open(filename, "rb") as handle:
                tree = ast.parse(handle.read(2**22))
        except (OSError, SyntaxError, ValueError):
            tree = None
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))) and node.body:
                start, end = node.body[0].lineno, node.body[-1].end_lineno
                mark = (node.handlers[0].lineno if node.handlers
                        else node.finalbody[0].lineno - 1 if node.finalbody else node.lineno)
                nodes.append((start, end, mark))
            elif isinstance(node, (ast.With, ast.AsyncWith)) and node.body:
                nodes.append((node.body[0].lineno, node.body[-1].end_lineno, node.lineno))
        _HANDLERS[filename] = nodes
    around = [n for n in nodes if n[0] <= line <= n[1]]
    if not around:
        return None
    return min(around, key=lambda n: n[1] - n[0])[2]


# -- threads the user starts ------------------------------------------------------------------
_HOOK: list = []                  # the thread hook before ours, once ours is installed


def _thread_hook(args) -> None:
    """While user code runs, a thread of the user's that dies of one of the engine's signals
    prints nothing (the run is refused for it in one line) instead of its traceback."""
    if _OPEN[0] and _is_signal(args.exc_value):
        args.exc_value._thread = True
        if not any(args.exc_value is e for e in _ORPHANS):
            _ORPHANS.append(args.exc_value)
        return
    _HOOK[0](args)


def _quiet_threads() -> None:
    """Install :func:`_thread_hook` once, the first time user code runs (it hands every
    other exception to the hook that was there)."""
    if not _HOOK:
        _HOOK.append(threading.excepthook)
        threading.excepthook = _thread_hook
