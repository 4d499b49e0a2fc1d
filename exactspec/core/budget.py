"""Budgets for exact work: sizes estimated before the work is done, refused above the budget.

An exact power ``x**k`` of a rational has about ``k`` times the bits of ``x``; a file is read
up to a byte cap; a decimal exponent is bounded before the number is built.  Each refusal is a
:class:`~exactspec.core.errors.TooLarge` naming the estimate, the budget and an alternative.

>>> from fractions import Fraction
>>> power_bits(Fraction(4, 5), 10)
30
>>> check_power(Fraction(4, 5), 10**9, "g_k")
Traceback (most recent call last):
...
exactspec.core.errors.TooLarge: g_k: (4/5)**1000000000 has about 903,089,987 digits exactly, over the budget of 1,000,000 digits: use --backend numpy (float64 estimates) or a smaller k
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from fractions import Fraction

from .errors import TooLarge

__all__ = ["MAX_EXACT_DIGITS", "MAX_FILE_BYTES", "MAX_EXPONENT", "MAX_NUMBER_CHARS",
           "MAX_TOKENS", "power_bits", "check_power", "digits_of_bits", "sequence_count",
           "check_sequences", "exact_run_seconds", "check_exact_runs", "probes_limited",
           "check_probe_limit", "probe_limit"]

MAX_EXACT_DIGITS = 10**6       # one exact number may have this many decimal digits
MAX_FILE_BYTES = 64 * 2**20    # a distribution file is read up to 64 MiB
MAX_EXPONENT = 10_000          # decimal exponents in input text: |e| <= 10,000
MAX_NUMBER_CHARS = 10_000      # one number of a JSON spec: at most 10,000 characters
#: A multi-position proof generates at most this many tokens (``m``, ``gamma``): each one is
#: at least one step of the generation, however few sequences the vocabulary makes.
MAX_TOKENS = 10**6
#: The exact interpreter's cost of one run of a method over a distribution of ``n`` entries is
#: at least about ``SECONDS_PER_RUN + n * SECONDS_PER_ENTRY`` (a draw, a residual: each entry
#: an exact fraction; measured 3 to 13 microseconds per entry for sps, naive, top1 and rrs).
SECONDS_PER_RUN = 5e-6
SECONDS_PER_ENTRY = 3e-6


def digits_of_bits(bits: int) -> int:
    """Decimal digits of a number with ``bits`` bits (rounded up)."""
    return math.ceil(bits * math.log10(2))


def power_bits(x, k: int) -> int:
    """About how many bits ``x**k`` has (numerator or denominator, the larger), for exact ``x``."""
    x = Fraction(x)
    if x == 0 or abs(x) == 1:
        return 1
    return k * max(abs(x.numerator).bit_length(), x.denominator.bit_length())


def check_power(x, k: int, what: str) -> None:
    """Refuse ``x**k`` when its exact value would have more than :data:`MAX_EXACT_DIGITS` digits."""
    if not isinstance(x, (int, Fraction)):
        return
    digits = digits_of_bits(power_bits(x, k))
    if digits > MAX_EXACT_DIGITS:
        raise TooLarge(f"{what}: ({x})**{k} has about {digits:,} digits exactly, over the budget "
                       f"of {MAX_EXACT_DIGITS:,} digits: use --backend numpy (float64 estimates) "
                       "or a smaller k", estimate=digits, budget=MAX_EXACT_DIGITS)


def sequence_count(vocab: int, m: int, gamma: int = 0) -> int:
    """About how many token sequences an exact proof of the first ``m`` tokens of a
    multi-position rule lists: ``vocab^max(m, gamma)`` (the target's joint law of ``m``
    tokens has ``vocab^m`` entries, and one call drafts ``gamma`` tokens of ``vocab`` each).
    Capped at ``2^64 + 1`` so that a huge ``m`` costs nothing to estimate.

    >>> sequence_count(2, 10), sequence_count(3, 2, gamma=4), sequence_count(2, 10**9) > 2**64
    (1024, 81, True)
    """
    length = max(int(m), int(gamma or 0))
    if vocab <= 1:
        return 1
    if length * math.log2(vocab) > 64:
        return 2**64 + 1
    return vocab ** length


def check_sequences(vocab: int, m: int, gamma: int = 0, max_paths: int | None = 10**7,
                    what: str = "--tokens") -> None:
    """Refuse, before any work, a multi-position proof whose sequences (see
    :func:`sequence_count`) exceed ``max_paths`` (``None``: no budget).

    >>> check_sequences(2, 40, max_paths=10**7)
    Traceback (most recent call last):
    ...
    exactspec.core.errors.TooLarge: --tokens 40: about 1,099,511,627,776 token sequences (2 tokens, m = 40, gamma = 0), over the budget of 10,000,000 paths: use a smaller m, gamma or vocabulary, or --max-paths N to insist
    >>> check_sequences(2, 10**6, max_paths=10**7)
    Traceback (most recent call last):
    ...
    exactspec.core.errors.TooLarge: --tokens 1000000: about 2^1,000,000 token sequences (2 tokens, m = 1000000, gamma = 0), over the budget of 10,000,000 paths: use a smaller m, gamma or vocabulary, or --max-paths N to insist
    >>> check_sequences(1, 10**29, max_paths=10**7)
    Traceback (most recent call last):
    ...
    exactspec.core.errors.TooLarge: --tokens 100000000000000000000000000000: 100,000,000,000,000,000,000,000,000,000 tokens (m = 100000000000000000000000000000, gamma = 0) to generate, over the budget of 1,000,000: use a smaller m or gamma
    """
    if max_paths is None:
        return
    count = sequence_count(vocab, m, gamma)
    if count <= max_paths:
        length = max(int(m), int(gamma or 0))
        if length > MAX_TOKENS:                  # one sequence, but every token a step
            raise TooLarge(f"{what} {m}: {length:,} tokens (m = {m}, gamma = {gamma or 0}) "
                           f"to generate, over the budget of {MAX_TOKENS:,}: use a smaller m "
                           "or gamma", estimate=length, budget=MAX_TOKENS)
        return
    length = max(int(m), int(gamma or 0))
    if count > 2**64:
        text = f"{vocab}^{length:,}" if vocab > 2 else f"2^{length:,}"
    else:
        text = f"{count:,}"
    raise TooLarge(f"{what} {m}: about {text} token sequences ({vocab} tokens, m = {m}, gamma = "
                   f"{gamma or 0}), over the budget of {max_paths:,} paths: use a smaller m, "
                   "gamma or vocabulary, or --max-paths N to insist", estimate=count,
                   budget=max_paths)


def exact_run_seconds(entries: int, runs: int) -> float:
    """A lower estimate of the seconds of ``runs`` exact runs of a method over
    distributions of ``entries`` entries (:data:`SECONDS_PER_RUN`,
    :data:`SECONDS_PER_ENTRY`).

    >>> round(exact_run_seconds(200_000, 40), 1)
    24.0
    """
    return runs * (SECONDS_PER_RUN + entries * SECONDS_PER_ENTRY)


def check_exact_runs(entries: int, runs: int, seconds: float, what: str,
                     instead: str = "--backend numpy (float64 estimates)") -> None:
    """Refuse, before any run, ``runs`` exact runs over ``entries`` entries whose lower
    estimate (:func:`exact_run_seconds`) passes ``seconds``; ``what`` says why that many
    runs (``"the path estimate's 40 probes"``).

    >>> check_exact_runs(200_000, 40, 6.0, "the path estimate's 40 probes")
    Traceback (most recent call last):
    ...
    exactspec.core.errors.TooLarge: p and q of 200,000 entries: the path estimate's 40 probes alone take at least 24 s of exact arithmetic, over the budget of 6 s: use --backend numpy (float64 estimates)
    """
    estimate = exact_run_seconds(entries, runs)
    if estimate > seconds:
        shown = f"{estimate:,.0f}" if estimate < 1e12 else f"{estimate:.2g}"
        raise TooLarge(f"p and q of {entries:,} entries: {what} alone take at least {shown} s "
                       f"of exact arithmetic, over the budget of {seconds:,.0f} s: use "
                       f"{instead}", estimate=math.ceil(estimate), budget=math.floor(seconds))


#: The limit on the path estimate's probes that a caller (the command line) set for the runs
#: below it: ``(runs, seconds, what, instead)``, or ``None``.
_PROBE_LIMIT: contextvars.ContextVar = contextvars.ContextVar("exact_probe_limit",
                                                               default=None)


@contextlib.contextmanager
def probes_limited(runs: int, seconds: float, what: str,
                   instead: str = "--backend numpy (float64 estimates)"):
    """Within the block, the path route refuses up front (:func:`check_probe_limit`) a walk
    whose path estimate's ``runs`` probes alone would pass ``seconds``; the routes tried
    before it (a tensor axis, merged states, law leaves) are not held to it.

    >>> with probes_limited(40, 6.0, "the path estimate's 40 probes"):
    ...     check_probe_limit(200_000)
    Traceback (most recent call last):
    ...
    exactspec.core.errors.TooLarge: p and q of 200,000 entries: the path estimate's 40 probes alone take at least 24 s of exact arithmetic, over the budget of 6 s: use --backend numpy (float64 estimates)
    >>> check_probe_limit(200_000)      # outside such a block: no limit
    """
    token = _PROBE_LIMIT.set((runs, seconds, what, instead))
    try:
        yield
    finally:
        _PROBE_LIMIT.reset(token)


def probe_limit() -> tuple | None:
    """The limit of the enclosing :func:`probes_limited` block, ``(runs, seconds, what,
    instead)``, or ``None`` outside every such block."""
    return _PROBE_LIMIT.get()


def check_probe_limit(entries: int) -> None:
    """The limit of :func:`probes_limited` applied to a walk over ``entries`` entries (none
    outside such a block)."""
    limit = _PROBE_LIMIT.get()
    if limit is not None:
        runs, seconds, what, instead = limit
        check_exact_runs(entries, runs, seconds, what, instead)
