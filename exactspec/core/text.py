"""Short text of long reports: a table of a few rows, a list of a few names.

A law over 152,064 tokens is a report of 152,064 rows; the text output shows the rows that
matter (those that differ first) and says how many it leaves out, and ``--json`` keeps every
one.
"""

from __future__ import annotations

__all__ = ["TEXT_ROWS", "TEXT_NAMES", "EXACT_CHARS", "CELL_CHARS", "CELL_NOTE", "rows_shown",
           "left_out_line", "named_few", "figure", "cell"]

#: The most rows a text table shows.
TEXT_ROWS = 24
#: The most names a text line lists.
TEXT_NAMES = 8


def rows_shown(labels, differing, max_rows: int = TEXT_ROWS) -> tuple[list, int]:
    """The labels a table shows, those in ``differing`` first (each part in its order), at
    most ``max_rows`` of them, and how many it leaves out.

    >>> rows_shown(range(30), {3, 29})
    ([3, 29, 0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22], 6)
    >>> rows_shown("abc", set())
    (['a', 'b', 'c'], 0)
    """
    labels = list(labels)
    if len(labels) <= max_rows:
        return labels, 0
    differing = set(differing)
    first = [t for t in labels if t in differing]
    order = first + [t for t in labels if t not in differing]
    return order[:max_rows], len(labels) - max_rows


def left_out_line(left_out: int, what: str = "token") -> str:
    """The line under a table that left rows out (``""`` when none).

    >>> left_out_line(152040)
    '... 152,040 more tokens (the differing ones first; --json lists every one)'
    """
    if not left_out:
        return ""
    return (f"... {left_out:,} more {what}{'s' if left_out > 1 else ''} (the differing ones "
            "first; --json lists every one)")


def named_few(names, max_names: int = TEXT_NAMES) -> str:
    """``names`` joined by commas, at most ``max_names`` of them and a count of the rest.

    >>> named_few(["0", "2"])
    '0, 2'
    >>> named_few(range(20))
    '0, 1, 2, 3, 4, 5, 6, 7 and 12 more'
    """
    names = [str(n) for n in names]
    if len(names) <= max_names:
        return ", ".join(names)
    return f"{', '.join(names[:max_names])} and {len(names) - max_names:,} more"


#: An exact value is written in full on a text line when it takes at most this many
#: characters; a longer one is shown by its decimal figure and a short exact form (every
#: digit is in ``--json``, and on the line under ``verify --exact``).
EXACT_CHARS = 40
#: A table cell writes an exact value in full up to this many characters, else its decimal.
CELL_CHARS = 20


def _decimal(value) -> float:
    """``value`` (a ``Fraction``, an int or a sympy number) as a float."""
    try:
        return float(value)
    except TypeError:
        return float(getattr(value, "expr", value).evalf(30))


def _decimal_text(value) -> tuple[str, bool]:
    """The figure of ``value`` to three significant digits (trailing zeros kept when it is
    not the value, ``1.80e-08``) and whether it is the value."""
    from fractions import Fraction

    text = f"{_decimal(value):.3g}"
    try:
        same = Fraction(text) == Fraction(value)
    except (TypeError, ValueError):
        same = False
    return (text, True) if same else (f"{_decimal(value):#.3g}", False)   # ~1.80e-08


def figure(value, exact: bool = False) -> str:
    """An exact value for a line of text: its decimal figure first, then an exact form.

    The exact form is the value in full when it is short (at most :data:`EXACT_CHARS`
    characters), ``N * 2**-E`` for a binary fraction (a float run's TV) whose numerator is
    short, and otherwise the digits of its numerator and denominator (``31 and 41 digits``) and
    where to find them; ``exact=True`` writes every digit (``verify --exact``; ``--json``
    always holds them).

    >>> from fractions import Fraction
    >>> figure(Fraction(1, 4))
    '0.25 (exactly 1/4)'
    >>> figure(Fraction(37748737, 2**101))
    '~1.49e-23 (exactly 37748737/2535301200456458802993406410752)'
    >>> figure(Fraction(3, 2**140))
    '~2.15e-42 (exactly 3 * 2**-140)'
    >>> figure(Fraction(10**30 + 1, 3 * 10**40))
    '~3.33e-11 (exact: 31 and 41 digits, --exact)'
    >>> figure(0), figure(1)
    ('0', '1')
    """
    from fractions import Fraction

    from .dist import exact_str

    text = exact_str(value)
    decimal, same = _decimal_text(value)
    if same and decimal == text:                       # 0, 1, 2: nothing to add
        return text
    head = decimal if same else f"~{decimal}"
    if exact or len(text) <= EXACT_CHARS:
        return f"{head} (exactly {text})"
    if isinstance(value, (int, Fraction)):
        value = Fraction(value)
        n, d = value.numerator, value.denominator
        if d & (d - 1) == 0 and len(str(abs(n))) <= 20:
            return f"{head} (exactly {n} * 2**-{d.bit_length() - 1})"
        return f"{head} (exact: {len(str(abs(n)))} and {len(str(d))} digits, --exact)"
    return f"{head} (exact: {len(text):,} characters, --exact)"


def cell(value, exact: bool = False) -> str:
    """An exact value for a table cell: in full when it is short (at most
    :data:`CELL_CHARS` characters) or ``exact``, else ``~`` and its decimal figure to six
    digits (the line :data:`CELL_NOTE` under the table says so).

    >>> from fractions import Fraction
    >>> cell(Fraction(3, 10)), cell(Fraction(1, 3**40))
    ('3/10', '~8.22526e-20')
    """
    from .dist import exact_str

    text = exact_str(value)
    if exact or len(text) <= CELL_CHARS:
        return text
    return f"~{_decimal(value):.6g}"


#: The line under a table that shows a long exact value by its decimal figure.
CELL_NOTE = ("~: the decimal figure of an exact value too long for the table (--exact writes "
             "every digit, --json too)")
