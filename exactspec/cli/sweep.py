"""``exactspec sweep``: every method's acceptance over a logits dump (Dask).
"""

from __future__ import annotations

import sys

from .output import emit, write_json
from .process import EXIT_OK, UsageError


def cmd_sweep(args) -> int:
    import os

    from ..sweep import plot, summary_text, sweep, tidy_summary, write_table
    from ..sweep.output import json_ready

    names = [n.strip() for n in args.names.split(",")]
    if len(names) != 2 or not all(names):
        raise UsageError(f"--names {args.names!r}: give two names, target,draft")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers {args.workers}: need at least 1")
    for flag, path in (("--out", args.out), ("--plot", args.plot), ("--html", args.html),
                       ("--summary-json", args.summary_json)):
        folder = os.path.dirname(os.path.abspath(path)) if path else None
        if folder and (not os.path.isdir(folder) or os.path.isdir(path)):
            raise UsageError(f"{flag} {path}: cannot write a file there")
    if args.out and os.path.splitext(args.out)[1] not in (".parquet", ".csv"):
        raise UsageError(f"--out {args.out}: write .parquet or .csv")   # before the sweep
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    result = sweep(args.dump, args.k, methods=args.methods, logits=args.logits,
                   temperature=args.temperature, top_p=args.top_p, gamma=args.gamma,
                   samples=args.samples, seed=args.seed, skip_bad_rows=args.skip_bad_rows,
                   exact_sample=args.exact_sample, block_mb=args.block_mb,
                   scheduler=args.scheduler, scheduler_timeout=args.scheduler_timeout,
                   workers=args.workers, progress=progress, target=names[0], draft=names[1])
    methods = [e["method"] for e in result.summary["methods"]]
    methods = list(dict.fromkeys(methods))
    if args.out:
        result.summary["out"] = write_table(result.table, args.out)
    if args.plot:
        result.summary["plot"] = plot(result.table, result.summary, methods, args.plot,
                                      title=result.run["dump"])
    if args.html:
        from ..sweep.report import html_report

        html_report(result, args.html, methods)
        result.summary["html"] = args.html
    if args.summary_json:
        write_json(args.summary_json, tidy_summary(result), "--summary-json")
        result.summary["summary_json"] = args.summary_json
    emit(json_ready(result.summary), args.json, summary_text(result.summary, methods))
    return EXIT_OK
