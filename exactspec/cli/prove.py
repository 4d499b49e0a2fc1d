"""``exactspec prove``: the claims run and each verdict printed.
"""

from __future__ import annotations

import sys

from .arguments import check_folder
from .output import emit, write_json
from .process import EXIT_OK, EXIT_REFUTED, EXIT_UNDECIDED, UsageError


def cmd_prove(args) -> int:
    from pathlib import Path

    from ..claims import PROVED, REFUTED, all_claims, get_claim
    from ..claims.runner import ProgressLine, run_claims
    from ..core.errors import InvalidInput

    if args.list:
        claims = all_claims()
        obj = {"claims": [{"name": c.name, "statement": c.statement_for(args.full)}
                          for c in claims]}
        emit(obj, args.json, "\n".join(f"{c['name']}: {c['statement']}"
                                       for c in obj["claims"]))
        return EXIT_OK

    if args.jobs is not None and args.jobs < 1:
        raise InvalidInput(f"--jobs={args.jobs}: need at least one worker")
    if args.jobs is not None:
        from ..claims.runner import default_jobs

        cores = default_jobs()
        if args.jobs > cores:                            # more processes only cost memory
            print(f"note: --jobs={args.jobs} capped at the {cores} cores this process may use",
                  file=sys.stderr)
            args.jobs = cores
    check_folder(args.certificate_dir, "--certificate-dir")
    if args.certificate_dir:                             # before the work, not after it
        try:
            Path(args.certificate_dir).mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise UsageError(f"--certificate-dir {args.certificate_dir}: cannot create it "
                             f"({err.strerror})") from None
    claims = [get_claim(args.name)] if args.name is not None else all_claims()
    by_name = {c.name: c for c in claims}
    progress = ProgressLine(len(claims)) if not args.json else None
    results = []
    if getattr(args, "scheduler", None):
        from ..sweep.prove import run_claims as run_on_dask

        stream = ((c.name, r) for c, r in run_on_dask(
            [c.name for c in claims], scheduler=args.scheduler,
            scheduler_timeout=args.scheduler_timeout, full=args.full))
    else:
        stream = run_claims(list(by_name), jobs=args.jobs, full=args.full, on_event=progress)
    for name, result in stream:
        claim = by_name[name]
        statement = claim.statement_for(args.full)
        if args.certificate_dir:
            folder = Path(args.certificate_dir)
            folder.mkdir(parents=True, exist_ok=True)
            write_json(folder / f"{claim.name}.json", result.certificate, "--certificate-dir")
        if not args.json:
            progress.clear()
            print(f"{claim.name}: {statement}")
            for line in result.details:
                print(f"    {line}")
            print(f"  {result.verdict} ({result.seconds:.1f} s)", flush=True)
            progress.show()
        results.append({"name": claim.name, "statement": statement,
                        "verdict": result.verdict, "details": result.details,
                        "seconds_float": result.seconds})
    if progress is not None:
        progress.clear()
    verdicts = {r["verdict"] for r in results}
    if args.json:
        emit({"claims": results}, True, "")
    if REFUTED in verdicts:
        return EXIT_REFUTED
    if verdicts - {PROVED}:
        return EXIT_UNDECIDED
    return EXIT_OK
