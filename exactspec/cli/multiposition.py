"""A user's multi-position rule on the command line, shared by ``verify --tokens`` and
``tree --verifier``: its one report (:func:`~exactspec.sequences.user.user_report`) and its
counterexample search.
"""

from __future__ import annotations

from .output import emit, write_json
from .process import EXIT_OK, EXIT_REFUTED, UsageError
from .readers import read_tolerance


def sequence_report(args, spec, function, *, pair=None, gamma=None, m=None) -> int:
    """The one report of a user's multi-position rule, from ``verify --tokens`` or ``tree``."""
    from ..sequences.user import DEFAULT_MAX_PATHS, DEFAULT_MAX_SECONDS, user_report, user_text

    if args.search_tokens is not None:
        raise UsageError("--search-tokens applies to --search")
    report = user_report(spec, function, pair=pair, gamma=gamma, m=m, arith=args.arith,
                         grid=args.grid, tolerance=read_tolerance(args),
                         max_paths=args.max_paths or DEFAULT_MAX_PATHS,
                         certificate=bool(args.certificate), elementwise=args.elementwise,
                         max_seconds=None if args.max_paths else DEFAULT_MAX_SECONDS,
                         sum_order=getattr(args, "sum_order", None))
    if args.certificate:
        write_json(args.certificate, report.pop("certificate"))
    emit(report, args.json, user_text(report))
    return EXIT_OK if report["ok"] else EXIT_REFUTED


def search_sequences(args, function, *, gamma, m, context_free, name=None) -> int:
    """``tree --verifier F --search`` and ``verify F --tokens M --search``: the smallest
    counterexample among the instances of ``verify --search``, in its order."""
    from ..gallery.search_sequences import search_sequence_counterexample
    from ..sequences.user import user_text

    check_search_options(args)
    tokens = 3 if args.search_tokens is None else args.search_tokens
    name = name or str(function)
    found = search_sequence_counterexample(
        function, gamma=gamma, m=m, tokens=tokens, context_free=context_free, name=name,
        arith=args.arith, grid=args.grid, tolerance=read_tolerance(args),
        max_paths=args.max_paths or 10**5)
    shape = "context-free pairs (p, q)" if context_free else "per-position rows"
    if found.report is None:
        obj = {"verifier": name, "counterexample": None, "instances": found.instances,
               "search_tokens": tokens}
        emit(obj, args.json, f"no counterexample among {found.instances} small {shape} on 1 "
             f"to {tokens} tokens (evidence, not a proof)")
        return EXIT_OK
    obj = dict(found.report)
    obj["counterexample"] = found.rows
    obj["instances"] = found.instances
    obj["search_tokens"] = tokens
    rows = found.rows
    where = (f"p = {rows['p']}, q = {rows['q']}" if context_free else
             f"target rows {' | '.join(rows['target'])}; draft rows {' | '.join(rows['draft'])}")
    emit(obj, args.json, f"counterexample found after {found.instances} instances: {where}\n"
         + user_text(found.report))
    return EXIT_REFUTED


def check_search_options(args) -> None:
    """The options ``--search`` of a multi-position rule refuses, from the arguments alone."""
    if args.certificate:
        raise UsageError("--certificate with --search: search first, then prove the "
                         "counterexample with --certificate")
    if args.elementwise != "correct":
        raise UsageError("--elementwise does not apply to --search (its float runs use "
                         "correctly rounded exp and log)")
