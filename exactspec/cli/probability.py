"""``exactspec probability``: the exact probability that a randomized check holds.
"""

from __future__ import annotations

from .arguments import exact_probes_limited
from .output import emit
from .process import EXIT_OK, UsageError
from .readers import read_pair


def cmd_probability(args) -> int:
    from ..testing.probability import probability_report

    if ":" not in args.check:
        raise UsageError(f"probability: {args.check!r}: name the check as file.py:function "
                         "or module:function")
    if args.failing < 0:
        raise UsageError(f"--failing={args.failing}: must be a non-negative integer")
    if not args.seconds > 0 or args.seconds == float("inf"):
        raise UsageError(f"--seconds={args.seconds}: must be a positive number of seconds")
    p, q = read_pair(args)
    from ..core.budget import check_probe_limit

    with exact_probes_limited(args):
        check_probe_limit(len(p))        # a check is walked path by path: no other route
    max_paths = args.max_paths if args.max_paths is not None else 10**7
    report = probability_report(args.check, p, q, k=args.k, grid=args.grid, arith=args.arith,
                                max_paths=max_paths, max_failing=args.failing,
                                seconds=args.seconds)
    emit(report.to_json(), args.json, report.text())
    return EXIT_OK
