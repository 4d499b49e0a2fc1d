"""``exactspec check``: a certificate checked by the independent checker and replayed.
"""

from __future__ import annotations

from .output import emit
from .process import UsageError


def cmd_check(args) -> int:
    """``exactspec check CERT [--trust FILE.py:FUNCTION]``: the checkers' command
    (:func:`~exactspec.replay.check_command`; ``python -m exactspec.checker`` is the same)."""
    import math

    from ..replay import check_command

    if args.max_seconds is not None and not (math.isfinite(args.max_seconds)
                                             and args.max_seconds > 0):
        raise UsageError(f"--max-seconds={args.max_seconds}: give a finite number of seconds "
                         "above 0")
    out = check_command(args.certificate, trust=args.trust, replay=not args.no_replay,
                        max_paths=args.max_paths, max_seconds=args.max_seconds)
    lines = out.pop("lines")
    emit(out, args.json, "\n".join(lines))
    return out["exit"]
