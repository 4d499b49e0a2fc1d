"""The exception hierarchy: one base class, a few meaningful kinds.

Every message names the argument and the offending value, so that the command line can
print it as a one-line error and exit 2.
"""


#: The function that notes an error made while user code runs (set by :mod:`.signals`).
ERROR_RECORDERS: list = []


class ExactspecError(Exception):
    """Base class of every error exactspec raises on purpose.

    Each one made while user code runs is noted on the run (:mod:`exactspec.core.signals`),
    so that user code that catches it and goes on is refused, not believed.
    """

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls, *args, **kwargs)
        if ERROR_RECORDERS:
            ERROR_RECORDERS[0](self)
        return self


class InvalidInput(ExactspecError, ValueError):
    """An argument is malformed: a distribution that does not sum to 1, a bad ``k``, ..."""


class NotExact(ExactspecError, TypeError):
    """A value cannot be represented exactly (NaN, infinity, an unknown type)."""


class TooLarge(ExactspecError):
    """Exact work would exceed its budget; carries the estimate and the budget."""

    def __init__(self, message: str, estimate: int | None = None, budget: int | None = None):
        super().__init__(message)
        self.estimate = estimate
        self.budget = budget


class Undecided(ExactspecError):
    """Symbolic work met a sign it could not decide."""


def names_its_line(err: BaseException) -> bool:
    """Whether ``err``'s message already names the user's file and line (an error marked
    ``located``, as the tensor layer's refusals are, and messages that say
    `` (in FILE line N)``), so that no caller adds it again.

    >>> names_its_line(InvalidInput("bad (in rule.py line 3)"))
    True
    >>> names_its_line(InvalidInput("bad"))
    False
    """
    return getattr(err, "located", False) or " (in " in str(err)


def did_you_mean(word: str, choices) -> str:
    """`` (did you mean 'rrs'?)`` naming the choices close to a mistyped ``word``, or ``''``.

    >>> did_you_mean("verfy", ["example", "verify", "prove"])
    " (did you mean 'verify'?)"
    >>> did_you_mean("rss", ["rrs", "sps", "kseq"])
    " (did you mean 'sps' or 'rrs'?)"
    >>> did_you_mean("zzz", ["rrs"])
    ''
    """
    import difflib

    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
