"""``exactspec verify``: a method's exact output law, verdict and acceptance; its float run
beside the exact one (``--arith``), a counterexample search (``--search``), a multi-position
rule (``--tokens``).
"""

from __future__ import annotations

from .arguments import exact_probes_limited
from .float64 import float_command
from .multiposition import search_sequences, sequence_report
from .output import emit, aligned_table, write_json
from .process import EXIT_OK, EXIT_REFUTED, UsageError
from .readers import read_exact_number, read_logits, read_pair, read_tolerance


#: What the two acceptance figures of a report are, in words.
ACCEPTANCE_WORDS = "the probability that the emitted token is one of the drafts"
EXPLICIT_WORDS = ("the probability that the rule takes a draft by s.accept (a resample that "
                  "happens to land on a draft counts in P(Y in X), not here)")


def _verify_text(result, exact: bool = False) -> str:
    """The text of an exact ``verify``: the table (long exact values as decimals unless
    ``exact``), the acceptance in words, and the verdict line, its TV's decimal first."""
    from ..core.dist import exact_str
    from ..core.text import CELL_NOTE, cell, figure, left_out_line, named_few, rows_shown
    from ..verify import shipped_lines

    p = result.p
    differs = result.differs
    shown, left_out = rows_shown(p.labels, differs)
    rows = [[t, cell(p[t], exact), cell(result.q[t], exact), cell(result.law[t], exact),
             "" if result.law[t] == p[t] else
             f"differs by {_signed_cell(result.law[t] - p[t], exact)}"]
            for t in shown]
    axis = getattr(result.enumeration, "draft_axis", 0)
    table = aligned_table(rows, ["token", "target p", "draft q", "output", ""])
    notes = [left_out_line(left_out)] if left_out else []
    if any(c.startswith("~") for row in rows for c in row[1:4]):
        notes.append(CELL_NOTE)
    form = getattr(result.enumeration, "form", "")
    if form:                            # merged states count histories, never list them
        counted = (f"{result.paths:,} paths counted through "
                   f"{result.enumeration.states:,} merged states ({form})")
    elif result.route == "sorted-sums":
        counted = f"{result.paths:,} paths counted by sums over one sorted order"
    else:
        counted = f"{result.paths} paths enumerated"
    lines = [f"method {result.method.name}, k = {result.k}: {counted}"
             + (f", each over all {axis:,} draft tokens as a tensor axis" if axis else ""),
             *shipped_lines(result.method),
             *([f"note: {result.enumeration.floats} float values met in the method were taken at "
                "their exact binary value (the verdict is about the float program)"]
               if getattr(result.enumeration, "floats", 0) else []),
             "\n".join([table, *notes]),
             f"acceptance P(Y in X) = {figure(result.acceptance, exact)}: {ACCEPTANCE_WORDS}"]
    if result.enumeration.used_accept and result.explicit_acceptance != result.acceptance:
        lines.append(f"explicit acceptance = {figure(result.explicit_acceptance, exact)}: "
                     f"{EXPLICIT_WORDS}")
    if result.lossless:
        lines.append("LOSSLESS: the output law equals p exactly on this instance")
    else:
        lines.append(f"LOSSY: TV(output, p) {figure(result.bias, exact)}; the output law "
                     f"differs from p at {named_few(differs)}")
    return "\n".join(lines)


def _signed_cell(d, exact: bool = False) -> str:
    """A difference for the ``differs by`` column, with its sign: in full when short (or
    ``exact``), else its decimal figure (``~+2.4e-38``)."""
    from ..core.text import cell

    text = cell(d, exact)
    if text.lstrip("~").startswith("-"):
        return text
    return "~+" + text[1:] if text.startswith("~") else "+" + text


def cmd_verify(args) -> int:
    from ..verify import verify

    if args.sum_order is not None:
        from ..engine.float_sums import check_sum_order

        if not args.arith:
            raise UsageError("--sum-order applies with --arith (a float run's sums)")
        if args.search or args.backend == "numpy":
            raise UsageError("--sum-order applies to the proof of a PyTorch rule "
                             "(not with --search or --backend numpy)")
        check_sum_order(args.sum_order)
    _check_verify_options(args)
    if args.search_tokens is not None and not args.search:
        raise UsageError("--search-tokens applies to --search")
    if args.tokens is not None:
        return _verify_sequence(args)
    if args.gamma is not None:
        raise UsageError("--gamma applies to a multi-position rule (--tokens M)")
    args.k = 1 if args.k is None else args.k
    if args.search:
        if args.elementwise != "correct":
            raise UsageError("--elementwise does not apply to --search (its float runs use "
                             "correctly rounded exp and log)")
        return _search(args)
    if args.backend == "numpy":
        return float_command("verify", args)
    if args.arith or args.tolerance is not None or args.logits_p or args.logits_q or \
            args.elementwise != "correct":
        return _verify_arith(args)
    p, q = read_pair(args)
    with exact_probes_limited(args):
        return _verify_exact(args, p, q)


def _verify_exact(args, p, q) -> int:
    """``verify`` in exact arithmetic (on ``--grid N`` beside ideal uniforms)."""
    from ..verify import verify

    max_paths = args.max_paths if args.max_paths is not None else 10**7
    if args.certificate:   # streamed to the file as the paths are enumerated
        from ..core.files import output_path
        from ..verify import verify_to_certificate

        with output_path(args.certificate, "--certificate") as temporary:
            result = verify_to_certificate(args.method, p, q, args.k, temporary,
                                           grid=args.grid, max_paths=max_paths,
                                           progress=None if args.max_paths is None else True)
    elif args.grid:
        result = verify(args.method, p, q, args.k, grid=args.grid, max_paths=max_paths,
                        progress=None if args.max_paths is None else True)
    else:
        from ..bounds.compare import exact_verification

        # the plain enumeration when it is small; merged states for methods with a stepped
        # form (rrs, rrs-wor, kseq, spechub) when the paths are too many to list
        result = exact_verification(args.method, p, q, args.k, max_paths=max_paths)
    if args.grid:   # the grid run beside ideal uniforms: lossless, lossy-grid or lossy-logic
        from ..bounds.compare import exact_verification
        from ..rounding import BiasSplit

        ideal = exact_verification(args.method, p, q, args.k, max_paths=max_paths)
        split = BiasSplit(result.method, result.p, result.q, result.k, None, args.grid,
                          ideal, None, result)
        emit(split.to_json, args.json, lambda: split.text(args.exact))
        return EXIT_OK if split.ok else EXIT_REFUTED
    emit(result.to_json, args.json, lambda: _verify_text(result, args.exact))
    return EXIT_OK if result.lossless else EXIT_REFUTED


def _check_verify_options(args) -> None:
    """Refuse, from the arguments alone and before any row is read, options ``verify`` would
    otherwise ignore: a proof's options beside ``--backend numpy`` (float64 estimates: no
    paths, no certificate, no float format) and ``--elementwise`` without ``--arith``."""
    if args.backend == "numpy" and args.tokens is None:
        given = [flag for flag, value in (
            ("--grid", args.grid), ("--certificate", args.certificate),
            ("--arith", args.arith), ("--tolerance", args.tolerance),
            ("--logits-p", args.logits_p), ("--logits-q", args.logits_q),
            ("--max-paths", args.max_paths), ("--exact", args.exact),
            ("--elementwise", args.elementwise != "correct")) if value]
        if given:
            raise UsageError(f"{given[0]} does not apply to --backend numpy (float64 "
                             "estimates: no paths, certificate or float format); drop one "
                             "of them")
    if args.elementwise != "correct" and not args.arith and not args.search:
        raise UsageError(f"--elementwise {args.elementwise} applies to a float run: give "
                         "--arith FORMAT (float32, ...)")


def _verify_arith(args) -> int:
    """``verify --arith``: the float run beside the exact-arithmetic run, and the verdict."""
    from ..rounding import split_bias

    tolerance = None
    if args.tolerance is not None:
        tolerance = read_exact_number(args.tolerance, "--tolerance", nonnegative=True)
    max_paths = args.max_paths if args.max_paths is not None else 10**7
    if args.logits_p or args.logits_q:
        if args.p or args.q:
            raise UsageError("give --p/--q or --logits-p/--logits-q, not both")
        if not (args.logits_p and args.logits_q):
            raise UsageError("both --logits-p and --logits-q are required")
        if args.certificate:
            raise UsageError("--certificate with logits: the target (their exact softmax) is "
                             "irrational and the checker reads rationals; give --p/--q")
        lp, labels = read_logits(args.logits_p, "logits-p", args.labels)
        lq, labels_q = read_logits(args.logits_q, "logits-q", args.labels)
        if len(lp) != len(lq):
            raise UsageError(f"--logits-q has {len(lq)} entries but --logits-p has {len(lp)}")
        split = split_bias(args.method, k=args.k, arith=args.arith, grid=args.grid,
                           tolerance=tolerance, logits_p=lp, logits_q=lq, labels=labels,
                           max_paths=max_paths, keep_paths=bool(args.certificate),
                           elementwise=args.elementwise, sum_order=args.sum_order)
    else:
        p, q = read_pair(args)
        with exact_probes_limited(args):
            split = split_bias(args.method, p, q, args.k, arith=args.arith, grid=args.grid,
                               tolerance=tolerance, max_paths=max_paths,
                               keep_paths=bool(args.certificate),
                               elementwise=args.elementwise, sum_order=args.sum_order)
    if args.certificate:
        write_json(args.certificate, split.run.certificate())
    emit(split.to_json, args.json, lambda: split.text(args.exact))
    return EXIT_OK if split.ok else EXIT_REFUTED


def _verify_sequence(args) -> int:
    """``verify F --tokens M``: the route of ``tree --verifier F`` on a context-free spec."""
    from ..sequences.context import ContextPair

    for flag, given in (("--k", args.k is not None), ("--backend numpy", args.backend == "numpy"),
                        ("--logits-p", args.logits_p), ("--logits-q", args.logits_q)):
        if given:
            raise UsageError(f"{flag} does not apply to a multi-position rule (--tokens): give "
                             "--p and --q, the pair at every context")
    if args.exact:
        raise UsageError("--exact applies to a one-position verify (a multi-position rule's "
                         "report writes its exact values in full; --json holds every one)")
    if args.tokens < 1:
        raise UsageError(f"--tokens={args.tokens}: need a number of tokens >= 1")
    function = _pytorch_whole_call(args.method, args.tokens)
    if args.search:
        if args.p is not None or args.q is not None:
            raise UsageError("--search tries its own small pairs: give no --p/--q")
        return search_sequences(args, function, gamma=args.gamma, m=args.tokens,
                                context_free=True, name=args.method)
    p, q = read_pair(args)
    pair = ContextPair.context_free(p, q)
    return sequence_report(args, {"m": args.tokens}, function, pair=pair,
                           gamma=args.gamma, m=args.tokens)


def _pytorch_whole_call(method: str, m: int):
    """A PyTorch rule ``fn(p, q)`` (a file that imports torch) as the whole call of a
    multi-position rule on 2-D rows (:mod:`exactspec.sequences.torch_rules`); any other rule
    as given."""
    from ..torch_layer import load_pytorch_rule

    rule = load_pytorch_rule(method)
    if rule is None:
        return method
    from ..sequences.torch_rules import pytorch_whole_call

    return pytorch_whole_call(rule, m)


def _search(args) -> int:
    from ..gallery.search import search_counterexample

    for flag, given in (("--p", args.p), ("--q", args.q), ("--logits-p", args.logits_p),
                        ("--logits-q", args.logits_q), ("--certificate", args.certificate),
                        ("--backend numpy", args.backend == "numpy")):
        if given:
            raise UsageError(f"{flag} does not apply to --search (it tries its own small "
                             "instances; prove the counterexample it prints without --search)")

    tolerance = read_tolerance(args)
    found = search_counterexample(args.method, k=args.k, grid=args.grid, arith=args.arith,
                                  tolerance=tolerance,
                                  max_tokens=3 if args.search_tokens is None
                                  else args.search_tokens,
                                  max_paths=args.max_paths if args.max_paths else 10**6)
    result = found.counterexample
    if result is None:
        obj = {"method": args.method, "k": args.k, "counterexample": None,
               "instances": found.instances, "arith": args.arith or "exact"}
        emit(obj, args.json, f"no counterexample among {found.instances} small rational "
             "instances (evidence, not a proof)")
        return EXIT_OK
    split = found.split
    obj = split.to_json() if split is not None else result.to_json()
    obj["counterexample"] = {"p": result.p.to_json(), "q": result.q.to_json()}
    obj["instances"] = found.instances
    text = split.text(args.exact) if split is not None else _verify_text(result, args.exact)
    emit(obj, args.json, f"counterexample found after {found.instances} instances "
         f"(p = {','.join(obj['counterexample']['p'].values())}, q = "
         f"{','.join(obj['counterexample']['q'].values())}):\n" + text)
    return EXIT_REFUTED
