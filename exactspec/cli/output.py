"""What a command writes: its report on stdout as text or one JSON object (``--json``), its
tables, and the JSON files it is asked for (certificates, summaries).
"""

from __future__ import annotations

import json
import sys


STDOUT = [None]  # the real stdout while user code's prints go to stderr (--json)
#: [the command runs under --json, its JSON object is written]: an error or an undecided
#: result under --json still writes one object, ``{"error": ..., "exit": N}``
JSON = [False, False]


def emit(obj, as_json: bool, text) -> None:
    """Write ``obj`` as JSON or ``text``; either may be a function that makes it, called only
    when it is the one written (a report of 152,064 tokens costs seconds to format)."""
    out = STDOUT[0] or sys.stdout
    if as_json:
        out.write(json.dumps(obj() if callable(obj) else obj) + "\n")
        JSON[1] = True
    else:
        out.write((text() if callable(text) else text).rstrip("\n") + "\n")


def aligned_table(rows, header) -> str:
    """``rows`` under ``header`` as text, each column padded to its widest cell.

    >>> print(aligned_table([["a", 1], ["bb", 22]], ["x", "y"]))
    x   y
    a   1
    bb  22
    """
    rows = [r[:len(header)] for r in rows]
    return aligned_columns(list(zip(*rows)) if rows else [()] * len(header), header)


def aligned_columns(columns, header) -> str:
    """The table of ``columns`` (one sequence of cells each, all of one length) under
    ``header``, as :func:`aligned_table` writes it; built column by column, each line by one
    format call (a table of 152,064 rows in a fraction of a second)."""
    table = [[str(h), *map(str, column)] for h, column in zip(header, columns)]
    widths = [max(map(len, column)) for column in table]
    line = "  ".join(f"{{:<{w}}}" for w in widths).format
    return "\n".join(map(str.rstrip, map(line, *table)))


def write_json(path, obj, flag: str = "--certificate") -> None:
    """``obj`` as JSON in the file ``path``, whole or not at all
    (:func:`~exactspec.core.files.output_file`); a failed write is one line naming it."""
    from ..core.files import output_file

    with output_file(path, flag) as handle:
        json.dump(obj, handle, indent=1)
