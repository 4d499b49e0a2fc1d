"""The checkers' command line: options (:func:`parse_arguments`), the bounded run around a
check with its one-line errors and exit codes (:func:`run_command`), and a wall-clock alarm
behind the cooperative deadline (:func:`hard_limit`).
"""

import sys

from .arithmetic import examine
from .reading import load_certificate
from .report import (EXIT_BAD_INPUT, MAX_BYTES, MAX_PATHS, MAX_SECONDS, CertificateError,
                     Deadline, OutOfTime, Report)

__all__ = ["USAGE", "UsageError", "parse_arguments", "run_command", "hard_limit", "main"]

USAGE = ("usage: python -m exactspec.checker [--no-replay] [--trust FILE.py:FUNCTION|"
         "MODULE:FUNCTION]... [--max-bytes N] [--max-paths N] [--max-seconds S] "
         "CERTIFICATE.json")


class UsageError(ValueError):
    pass


def parse_arguments(argv, usage=USAGE):
    """The checkers' options: ``(path, options)``; :class:`UsageError` on bad usage."""
    options = {"replay": True, "trust": [], "max_bytes": MAX_BYTES, "max_paths": MAX_PATHS,
               "max_seconds": MAX_SECONDS}
    numbers = {"--max-bytes": ("max_bytes", int), "--max-paths": ("max_paths", int),
               "--max-seconds": ("max_seconds", float)}
    paths = []
    argv = list(argv)
    while argv:
        arg = argv.pop(0)
        if arg == "--no-replay":
            options["replay"] = False
        elif arg == "--trust" or arg in numbers:
            if not argv:
                raise UsageError(f"{arg} needs a value")
            value = argv.pop(0)
            if arg == "--trust":
                options["trust"].append(value)
                continue
            key, kind = numbers[arg]
            try:
                number = kind(value)
            except ValueError:
                raise UsageError(f"{arg} {value!r}: a number expected") from None
            if not 0 < number < float("inf"):
                raise UsageError(f"{arg} {value!r}: a positive finite number expected")
            options[key] = number
        elif arg.startswith("-") and arg != "-":
            raise UsageError(f"unknown option {arg}")
        else:
            paths.append(arg)
    if len(paths) != 1:
        raise UsageError(usage)
    return paths[0], options


def run_command(argv, check, usage=USAGE) -> int:
    """The checkers' command line around ``check(cert, options, deadline) -> Report``: one
    line on stderr and exit 2 for bad input, the problems and the verdict on stdout."""
    try:
        path, options = parse_arguments(argv, usage)
    except UsageError as err:
        print(f"error: {err}" if not str(err).startswith("usage") else str(err),
              file=sys.stderr)
        return EXIT_BAD_INPUT
    deadline = Deadline(options["max_seconds"])
    restore = hard_limit(options["max_seconds"] + 5)
    try:
        cert = load_certificate(path, options["max_bytes"])
        report = check(cert, options, deadline)
    except CertificateError as err:
        where = "" if str(err).startswith("--trust") else f"certificate {path}: "
        print(f"error: {where}{err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OutOfTime as err:
        report = Report()
        report.unchecked.append(str(err))
    except RecursionError:
        print(f"error: certificate {path}: an expression nested too deep", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        restore()
    for note in report.notes:
        print(f"note: {note}")
    for problem in report.problems:
        print(problem)
    for reason in report.unchecked:
        print(f"not checked: {reason}")
    if report.verdict == "OK" and not options["replay"]:
        print("CERTIFICATE OK (method-free check: the paths were not replayed)")
    else:
        print(f"CERTIFICATE {report.verdict}")
    return report.exit_code


def hard_limit(seconds):
    """A wall-clock alarm behind the cooperative :class:`Deadline` (work inside one long
    library call, such as a Groebner basis, is interrupted too); returns its undoing."""
    import signal
    import threading

    if not hasattr(signal, "setitimer") or \
            threading.current_thread() is not threading.main_thread():
        return lambda: None

    def ring(signum, frame):
        raise OutOfTime(f"the check ran past its budget of {seconds - 5:g} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)

    def restore():
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)

    return restore


def main(argv=None, resolve=None) -> int:
    """``python -m exactspec.checker``; ``resolve`` as in :func:`examine` (the command line
    passes :mod:`exactspec.replay`'s)."""
    argv = sys.argv[1:] if argv is None else argv

    def check(cert, options, deadline):
        return examine(cert, resolve, options["replay"], options["max_paths"], deadline)

    return run_command(argv, check)
