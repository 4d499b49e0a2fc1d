"""An independent checker for exactspec certificates.

It shares no code with the engine and uses only the standard library (``fractions``, ``json``):
a certificate lists every path with its branch probabilities and its output; the checker
recomputes each path's probability as the product of its branches, checks that every
branching point's alternatives sum to 1, that the paths sum to 1, and recomputes the law and
``P(Y in X)``, comparing them with every recorded field (``law``, ``acceptance``, ``claim``).

Binding the paths to the method is a *replay*: every path is run again through the method,
feeding back the recorded choices (the replay sampler of :mod:`~.method_replay` is written
here, sharing no code with the engine); the method must meet the recorded alternatives at
every branching point and end with the recorded output and drafts.  This package never looks
a method up itself: the caller hands it a ``resolve`` function (:mod:`exactspec.replay`
gives the registry's methods, and a user's method only when the person checking names it).

What a path certificate records is bound one way or another: the arithmetic binds
``probability``, ``claim``, ``law`` and ``acceptance`` to the paths, and each branch's
probability to the alternative its choice takes; the replay binds ``method``, ``k`` (the
method's contract first: ``sps`` takes ``k = 1`` alone), ``grid``, ``labels``, ``target``,
``draft``, ``arith`` and ``sum_order`` (they are what it runs on) and each path's choices,
output, drafts and ``accepted``; anything else (a value off the schema, ``sum_order`` or a
non-default ``elementwise`` of an exact run) is bad input.  An edit that still checks is the
certificate of the run it now describes (a grid for a method that draws no uniform changes
none of its paths).  A branch's kind and description are words for a reader.  A symbolic
certificate's cases (conditions, laws, acceptances, verdicts, witness points, the count of
infeasible cases) are derived again through its method on its ``n``, ``k`` and
``positive_entries_assumed`` by the replay (:func:`~.arithmetic.examine`'s ``symbolic``);
its statement and notes are words.

Trust model.  A certificate is data from someone else.  Checking it never imports a module,
calls a function or evaluates text that the certificate names: exact values are read by a
small grammar (:func:`~.reading.exact_number`: an integer or a fraction ``-3/5``, at most
:data:`~.report.MAX_DIGITS` digits each), keys are checked against a fixed schema (an
unknown key, a missing one or a part of unknown kind is an error), and the work is bounded
(file size, JSON nesting, number of paths, seconds).

Verdicts and exit codes of ``python -m exactspec.checker CERT.json``:

- ``CERTIFICATE OK`` (0): every part checked, every path certificate replayed;
- ``CERTIFICATE REJECTED`` (1): something is wrong (each problem on its own line);
- bad input (2): unreadable, too large, too deeply nested, not JSON, off the schema; one line;
- ``CERTIFICATE NOT CHECKED`` (4): nothing wrong was found, but some part could not be
  replayed (a method outside the registry that the command line does not name with
  ``--trust``, a user's sequence verifier not named so, a sequence certificate of version 1,
  which records no models) or the time budget ran out:
  never reported as OK.  ``--no-replay`` asks for the method-free check only (then OK means:
  the paths' arithmetic holds, not that a method produced them).

The modules import only each other and the standard library: :mod:`~.report` (exit codes,
budgets, errors, the deadline, the report), :mod:`~.reading` (the bounded file and the exact
values' grammar), :mod:`~.schema` (keys and types of a path certificate), :mod:`~.arithmetic`
(the method-free check, :func:`~.arithmetic.examine`), :mod:`~.method_replay` (the replay
sampler, :func:`~.method_replay.replay_paths`) and :mod:`~.command` (the command line).  This
package re-exports the names its importers use.
"""

from .arithmetic import check_certificate, check_paths, examine
from .command import USAGE, UsageError, hard_limit, main, parse_arguments, run_command
from .method_replay import replay_paths
from .reading import exact_number, load_certificate, parse_certificate
from .report import (EXIT_BAD_INPUT, EXIT_NOT_CHECKED, EXIT_OK, EXIT_REJECTED, KIND_CLAIM,
                     KIND_GENERIC, KIND_PATHS, KIND_SYMBOLIC, MAX_BYTES, MAX_DEPTH, MAX_DIGITS,
                     MAX_PATHS, MAX_SECONDS, CertificateError, Deadline, OutOfTime, Report,
                     Unreplayable)
from .schema import (ARITH_FORMATS, ELEMENTWISE, MAX_GRID, MAX_K, MAX_M, SUM_ORDERS,
                     expect_integer, expect_keys, expect_list, expect_text, is_sequence, kind_of)

__all__ = ["check_certificate", "examine", "Report", "CertificateError", "load_certificate",
           "exact_number", "replay_paths", "EXIT_OK", "EXIT_REJECTED", "EXIT_BAD_INPUT",
           "EXIT_NOT_CHECKED"]
