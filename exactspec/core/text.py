"""Short text of long reports: a table of a few rows, a list of a few names.

A law over 152,064 tokens is a report of 152,064 rows; the text output shows the rows that
matter (those that differ first) and says how many it leaves out, and ``--json`` keeps every
one.
"""

from __future__ import annotations

__all__ = ["TEXT_ROWS", "TEXT_NAMES", "rows_shown", "left_out_line", "named_few"]

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
