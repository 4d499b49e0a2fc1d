"""``exactspec tree``: chains, token trees and block verification proved, or a user's
verifier on a spec (``--verifier``).
"""

from __future__ import annotations

from .multiposition import check_search_options, search_sequences, sequence_report
from .output import emit
from .process import EXIT_OK, EXIT_REFUTED, UsageError
from .readers import spec_names_function, read_tolerance, whole


def cmd_tree(args) -> int:
    from ..sequences.trees import tree_report, tree_text

    user = args.verifier or spec_names_function(args.spec)
    if args.elementwise != "correct" and not user:   # (--search refuses it for every route)
        raise UsageError("--elementwise applies to a user's verifier under --arith (not to "
                         "a built-in tree method)")
    if user:
        if args.search:
            check_search_options(args)          # before the spec's verifier is imported
            from ..sequences.context import read_spec
            from ..sequences.user import SPEC_KEYS, load_verifier

            spec, base = read_spec(args.spec, "spec", SPEC_KEYS)
            name = args.verifier or spec.get("verifier")
            gamma = args.gamma if args.gamma is not None else spec.get("gamma")
            m = args.m if args.m is not None else spec.get("m")
            function = load_verifier(name, base, gamma=whole(gamma, "gamma"),
                                     m=whole(m, "m"))   # a PyTorch rule: the whole call
            for key in ("arith", "grid", "tolerance"):   # the spec's, unless given here
                if getattr(args, key) is None and spec.get(key) is not None:
                    setattr(args, key, spec[key] if key != "tolerance" else str(spec[key]))
            return search_sequences(args, function, gamma=whole(gamma, "gamma"),
                                    m=whole(m, "m"), name=name, context_free=getattr(
                                         function, "pytorch_rule", None) is not None)
        return sequence_report(args, args.spec, args.verifier, gamma=args.gamma, m=args.m)
    given = [f"--{n}" for n in ("gamma", "m", "certificate") if getattr(args, n) is not None]
    if args.search:
        given.append("--search")
    if args.search_tokens is not None:
        given.append("--search-tokens")
    if given:
        raise UsageError(f"{given[0]} applies to a user's verifier (--verifier file.py:function "
                         "or a spec whose 'verifier' names one)")
    if args.arith or args.grid or args.tolerance is not None:
        from ..sequences.user import builtin_report, user_text

        report = builtin_report(args.spec, arith=args.arith, grid=args.grid,
                                tolerance=read_tolerance(args), max_paths=args.max_paths or 10**6)
        emit(report, args.json, user_text(report))
        return EXIT_OK if report["ok"] else EXIT_REFUTED
    report = tree_report(args.spec, max_paths=args.max_paths or 10**6)
    emit(report, args.json, tree_text(report))
    return EXIT_OK if report["lossless"] else EXIT_REFUTED
