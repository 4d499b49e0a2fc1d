"""What a check finds and the budgets it runs under: the exit codes, the limits of one check
(bytes, nesting, paths, seconds, digits), the kinds of certificate, the error of bad input
(:class:`CertificateError`), the replay's own signals (:class:`OutOfTime`,
:class:`Unreplayable`), the wall-clock :class:`Deadline` and the :class:`Report`.
"""

import time

__all__ = ["EXIT_OK", "EXIT_REJECTED", "EXIT_BAD_INPUT", "EXIT_NOT_CHECKED", "MAX_BYTES",
           "MAX_DEPTH", "MAX_PATHS", "MAX_SECONDS", "MAX_DIGITS", "KIND_PATHS", "KIND_CLAIM",
           "KIND_SYMBOLIC", "KIND_GENERIC", "CertificateError", "OutOfTime", "Unreplayable",
           "Deadline", "Report", "RAISED_SIGNALS", "ReplaySignal"]

EXIT_OK, EXIT_REJECTED, EXIT_BAD_INPUT, EXIT_NOT_CHECKED = 0, 1, 2, 4

#: Budgets of one check (the command line's options change them).
MAX_BYTES = 256 * 2**20
MAX_DEPTH = 64
MAX_PATHS = 10**6
MAX_SECONDS = 600.0
#: Digits of one integer in an exact value (numerator or denominator).
MAX_DIGITS = 2000

KIND_PATHS = "exactspec-certificate"
KIND_CLAIM = "exactspec-claim-certificate"
KIND_SYMBOLIC = "exactspec-symbolic-certificate"
KIND_GENERIC = "exactspec-generic-certificate"


class CertificateError(ValueError):
    """A certificate that cannot be read or is off the schema (bad input, exit 2)."""

    # its public name, the one tracebacks and the reference show: the package re-exports it
    __module__ = "exactspec.checker"


#: The replay's own exceptions raised during the current path (a method that catches one
#: and goes on is found out: :func:`replay_paths` reads this list after each path).
RAISED_SIGNALS: list = []


class ReplaySignal(Exception):
    """An exception of the replay raised through the method's code: noted when made."""

    def __init__(self, *args):
        super().__init__(*args)
        RAISED_SIGNALS.append(self)


class OutOfTime(ReplaySignal):
    """The check's time budget ran out (the certificate is then not checked)."""


class Unreplayable(ReplaySignal):
    """The method refuses the replay's work as too large: the part is not checked."""


#: The clock of :class:`Deadline` (a test puts a fake one here).
_clock = time.monotonic


class Deadline:
    """A wall-clock budget, checked between steps of the work."""

    def __init__(self, seconds=None):
        self.seconds = seconds
        self.end = None if seconds is None else _clock() + seconds

    def check(self):
        if self.end is not None and _clock() > self.end:
            raise OutOfTime(f"the check ran past its budget of {self.seconds:g} s")


class Report:
    """What a check found: ``problems`` (the certificate is wrong) and ``unchecked`` (parts
    that could not be checked in full).  :attr:`verdict` is ``OK``, ``REJECTED`` or
    ``NOT CHECKED``."""

    def __init__(self):
        self.problems = []
        self.unchecked = []
        self.notes = []

    @property
    def verdict(self) -> str:
        if self.problems:
            return "REJECTED"
        return "NOT CHECKED" if self.unchecked else "OK"

    @property
    def exit_code(self) -> int:
        return {"OK": EXIT_OK, "REJECTED": EXIT_REJECTED,
                "NOT CHECKED": EXIT_NOT_CHECKED}[self.verdict]

