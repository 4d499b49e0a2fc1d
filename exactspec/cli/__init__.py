"""The ``exactspec`` command line.

Every command takes ``--json`` (one JSON object on stdout, nothing else there).  Exit status:
0 success, 1 a refuted claim, 2 bad input or usage (one line on stderr), 3 undecided.
Heavy modules (sympy, numpy, networkx) are imported only by the commands that need them.

The package: :mod:`~exactspec.cli.parser` builds the argument parser (options, help texts,
examples, exit codes), :mod:`~exactspec.cli.readers` reads the inputs (rows, files, specs,
numbers), :mod:`~exactspec.cli.arguments` checks the arguments before any work,
:mod:`~exactspec.cli.output` writes the reports, :mod:`~exactspec.cli.process` controls the
process (the supervised child, budgets, the progress line, exit codes, errors in one line),
and each command is one module that takes the parsed arguments, calls the function of the
layer that owns the work, and prints.
"""

from __future__ import annotations

import sys

from .arguments import check_counts
from .check import cmd_check
from .compare import cmd_compare
from .example import cmd_example
from .optimal import cmd_optimal
from .output import JSON
from .parser import EPILOGS, METHOD_NAMES, join_negative_values, build_parser
from .probability import cmd_probability
from .process import (EXIT_OK, EXIT_REFUTED, EXIT_UNDECIDED, EXIT_USAGE, fail, no_command,
                      report_error, supervised_command, Ticker, UsageError)  # noqa: F401
from .prove import cmd_prove
from .readers import read_exact_number, read_logits   # noqa: F401 (tests use them)
from .rho import cmd_rho
from .simulate import cmd_simulate
from .sweep import cmd_sweep
from .tree import cmd_tree
from .verify import cmd_verify

__all__ = ["main", "build_parser", "COMMANDS", "METHOD_NAMES", "EPILOGS", "EXIT_OK",
           "EXIT_REFUTED", "EXIT_USAGE", "EXIT_UNDECIDED"]

#: Each command's name and the function that runs it on the parsed arguments.
COMMANDS = {"example": cmd_example, "verify": cmd_verify, "simulate": cmd_simulate,
            "optimal": cmd_optimal, "compare": cmd_compare, "rho": cmd_rho, "tree": cmd_tree,
            "prove": cmd_prove, "sweep": cmd_sweep, "probability": cmd_probability,
            "check": cmd_check}


def main(argv=None) -> int:
    """Run the command line on ``argv`` (default ``sys.argv[1:]``) and return its exit code.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after ``exactspec``.

    Returns
    -------
    int
        0 success, 1 a refuted claim, 2 bad input or usage (one line on stderr), 3 undecided,
        4 a certificate not checked (``exactspec check``), 130 interrupted.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    argv = join_negative_values(argv)
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)   # exact values may have any number of digits
    parser = build_parser()
    JSON[:] = ["--json" in argv, False]
    try:
        args = parser.parse_args(argv)
        JSON[0] = bool(getattr(args, "json", False))
        if args.command is None:
            return no_command(COMMANDS)
        check_counts(args)
        return supervised_command(args, COMMANDS[args.command])
    except UsageError as err:
        return fail(f"error: {err}")
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - every failure becomes one line, never a traceback
        return report_error(err)
