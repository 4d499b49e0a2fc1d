"""The ``exactspec`` command line.

Every command takes ``--json`` (one JSON object on stdout, nothing else there).  Exit status:
0 success, 1 a refuted claim, 2 bad input or usage (one line on stderr), 3 undecided.
Heavy modules (sympy, numpy, networkx) are imported only by the commands that need them.
"""

from __future__ import annotations

import argparse
import json
import sys

EXIT_OK, EXIT_REFUTED, EXIT_USAGE, EXIT_UNDECIDED = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in one line and exits 2."""

    def error(self, message):
        raise _UsageError(f"{self.prog}: {message}")


class _UsageError(Exception):
    pass


def _add_instance(parser, k=True):
    parser.add_argument("--p", required=True, help="target: 1/2,3/10,1/5 or @file.json")
    parser.add_argument("--q", required=True, help="draft: 1/5,1/5,3/5 or @file.json")
    if k:
        parser.add_argument("--k", type=int, default=1, help="drafts per position (default 1)")
    parser.add_argument("--labels", help="token labels: abc or a,b,c")
    parser.add_argument("--normalize", action="store_true",
                        help="rescale p and q to sum exactly 1")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="exactspec", description="Exact proofs for speculative-decoding "
                     "verifiers: output law, verdict and acceptance, in exact arithmetic.")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    ex = sub.add_parser("example", help="the seed's worked example, proved")
    ex.add_argument("--json", action="store_true")

    ve = sub.add_parser("verify", help="exact output law, verdict and acceptance of a method")
    ve.add_argument("method", help="sps, naive, top1, ... or file.py:function")
    ve.add_argument("--p", help="target: 1/2,3/10,1/5 or @file.json")
    ve.add_argument("--q", help="draft: 1/5,1/5,3/5 or @file.json")
    ve.add_argument("--k", type=int, default=1, help="drafts per position (default 1)")
    ve.add_argument("--labels", help="token labels: abc or a,b,c")
    ve.add_argument("--normalize", action="store_true", help="rescale p and q to sum 1")
    ve.add_argument("--json", action="store_true", help="one JSON object on stdout")
    ve.add_argument("--grid", type=int, metavar="N",
                    help="explicit uniforms on {0, 1/N, ..., (N-1)/N} (e.g. 16777216)")
    ve.add_argument("--max-paths", type=int, metavar="N",
                    help="insist on enumerating up to N paths (default budget 10**7)")
    ve.add_argument("--certificate", metavar="FILE", help="write the certificate (JSON)")
    ve.add_argument("--search", action="store_true",
                    help="look for a small rational counterexample (no --p/--q needed)")
    ve.add_argument("--backend", choices=["exact", "numpy"], default="exact",
                    help="numpy: float64 at vocabulary scale (never a proof)")

    si = sub.add_parser("simulate", help="sample a method: empirical law and acceptance")
    si.add_argument("method")
    _add_instance(si)
    si.add_argument("--n", type=int, default=10000, help="number of samples")
    si.add_argument("--seed", type=int, default=0)
    si.add_argument("--grid", type=int, metavar="N")
    si.add_argument("--backend", choices=["exact", "numpy"], default="exact",
                    help="numpy: vectorised float sampling")

    op = sub.add_parser("optimal", help="alpha*, a*, the sorted order and tight prefixes")
    _add_instance(op)
    op.add_argument("--backend", choices=["exact", "numpy"], default="exact")

    co = sub.add_parser("compare", help="every method side by side against its optimum")
    _add_instance(co)
    co.add_argument("--methods", help="comma-separated method names (default: all)")
    co.add_argument("--backend", choices=["exact", "numpy"], default="exact")

    rh = sub.add_parser("rho", help="rho_k, the tight ratio of RRS to the optimum")
    rh.add_argument("k", type=int, help="number of drafts")
    rh.add_argument("--json", action="store_true")

    tr = sub.add_parser("tree", help="chains, token trees and block verification, proved")
    tr.add_argument("spec", help="a JSON spec file (format: docs/tree_format.md)")
    tr.add_argument("--json", action="store_true")
    tr.add_argument("--max-paths", type=int, metavar="N",
                    help="insist on enumerating up to N paths (default budget 10**6)")

    pr = sub.add_parser("prove", help="run the claims and print each verdict")
    pr.add_argument("name", nargs="?", help="one claim (default: all)")
    pr.add_argument("--list", action="store_true", help="list the claims")
    pr.add_argument("--certificate-dir", metavar="DIR", help="write certificates here")
    pr.add_argument("--jobs", type=int, metavar="N",
                    help="claims run N at a time in worker processes (default: every core)")
    pr.add_argument("--full", action="store_true",
                    help="the full corpora (what proofs/*.py run); default: the fast ones")
    pr.add_argument("--json", action="store_true")
    return parser


def _read_pair(args):
    from .core.dist import Dist

    if args.p is None or args.q is None:
        raise _UsageError("both --p and --q are required")
    p = Dist.parse(args.p, labels=args.labels, normalize=args.normalize, name="p")
    q = Dist.parse(args.q, labels=args.labels, normalize=args.normalize, name="q")
    if p.labels != q.labels:
        from .core.errors import InvalidInput

        if len(p) != len(q):
            raise InvalidInput(f"q has {len(q)} entries but p has {len(p)}")
        raise InvalidInput(f"p and q have different labels: {list(p.labels)} vs "
                           f"{list(q.labels)}")
    return p, q


def _read_float_pair(args):
    """``--p``/``--q`` for the NumPy backend: lists of floats, or ``{label: float}``."""
    from fractions import Fraction

    from .core.dist import parse_labels
    from .core.errors import InvalidInput

    def read(text, name):
        text = text.strip()
        if text.startswith("@"):
            path = text[1:]
            try:
                with open(path) as handle:
                    data = json.load(handle)
            except OSError as err:
                raise InvalidInput(f"{name}: cannot read {path}: {err.strerror}") from None
            except ValueError as err:
                raise InvalidInput(f"{name}: {path} is not valid JSON ({err})") from None
            if not isinstance(data, (list, dict)) or not data:
                raise InvalidInput(f"{name}: {path} must hold a non-empty JSON list or object")
            values = list(data.values()) if isinstance(data, dict) else data
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                raise InvalidInput(f"{name}: {path} must hold numbers only")
            return data
        values = []
        for i, part in enumerate(text.split(",")):
            try:
                values.append(float(Fraction(part.strip())))
            except (ValueError, ZeroDivisionError):
                raise InvalidInput(f"{name}[{i}]={part.strip()!r}: not a number") from None
        return values

    p, q = read(args.p, "p"), read(args.q, "q")
    if args.labels and isinstance(p, list):
        labels = parse_labels(args.labels, len(p), name="labels")
        p = dict(zip(labels, p))
        q = dict(zip(labels, q)) if isinstance(q, list) and len(q) == len(labels) else q
    return p, q


def _emit(obj, as_json: bool, text: str) -> None:
    if as_json:
        sys.stdout.write(json.dumps(obj) + "\n")
    else:
        sys.stdout.write(text.rstrip("\n") + "\n")


def _table(rows, header) -> str:
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(header, widths)).rstrip()]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines)


# -- commands ---------------------------------------------------------------------------
def cmd_example(args) -> int:
    from .core.dist import Dist, exact_str, overlap, residual
    from .verify import verify

    p = Dist.parse("1/2,3/10,1/5", labels="abc", name="p")
    q = Dist.parse("1/5,1/5,3/5", labels="abc", name="q")
    r = residual(p, q)
    result = verify("sps", p, q)
    rows = []
    for t in p.labels:
        rows.append([t, exact_str(p[t]), exact_str(q[t]), exact_str(min(1, p[t] / q[t])),
                     exact_str(min(p[t], q[t])), exact_str(r[t]),
                     exact_str(result.law[t])])
    header = ["token", "p", "q", "min(1,p/q)", "kept", "residual", "output"]
    obj = {
        "labels": list(p.labels), "target": p.to_json(), "draft": q.to_json(),
        "ratio": {t: row[3] for t, row in zip(p.labels, rows)},
        "kept": {t: row[4] for t, row in zip(p.labels, rows)},
        "residual": r.to_json(),
        "output": {t: exact_str(result.law[t]) for t in p.labels},
        "acceptance": exact_str(result.acceptance),
        "acceptance_float": float(result.acceptance),
        "lossless": result.lossless, "paths": result.paths,
    }
    text = (
        "The lossless rule on the seed's example: accept x ~ q with probability "
        "min(1, p(x)/q(x)),\notherwise resample from norm(max(0, p - q)).\n\n"
        + _table(rows, header)
        + f"\n\nacceptance = sum min(p, q) = {exact_str(overlap(p, q))} "
        f"(enumerated: {exact_str(result.acceptance)})\n"
        f"output law {'= p exactly: PROVED' if result.lossless else '!= p: REFUTED'} "
        f"({result.paths} paths enumerated)")
    _emit(obj, args.json, text)
    return EXIT_OK if result.lossless else EXIT_REFUTED


def _verify_text(result) -> str:
    from .core.dist import exact_str

    p = result.p
    rows = [[t, exact_str(p[t]), exact_str(result.q[t]), exact_str(result.law[t]),
             "" if result.law[t] == p[t] else "differs"] for t in p.labels]
    lines = [f"method {result.method.name}, k = {result.k}: {result.paths} paths enumerated",
             _table(rows, ["token", "target p", "draft q", "output", ""]),
             f"acceptance P(Y in X) = {exact_str(result.acceptance)} "
             f"({float(result.acceptance):.6g})"]
    if result.enumeration.used_accept and result.explicit_acceptance != result.acceptance:
        lines.append(f"explicit acceptance = {exact_str(result.explicit_acceptance)}")
    if result.lossless:
        lines.append("LOSSLESS: the output law equals p exactly on this instance")
    else:
        lines.append(f"LOSSY: the output law differs from p at {', '.join(map(str, result.differs))}"
                     f"; TV(output, p) = {exact_str(result.bias)}")
    return "\n".join(lines)


def cmd_verify(args) -> int:
    from .verify import verify

    if args.search:
        return _search(args)
    if args.backend == "numpy":
        return _float_command("verify", args)
    p, q = _read_pair(args)
    max_paths = args.max_paths if args.max_paths is not None else 10**7
    if args.certificate or args.grid:
        result = verify(args.method, p, q, args.k, grid=args.grid,
                        keep_paths=bool(args.certificate), max_paths=max_paths,
                        progress=None if args.max_paths is None else True)
    else:
        from .bounds.compare import exact_verification

        # the plain enumeration when it is small; merged states for methods with a stepped
        # form (rrs, rrs-wor, kseq, spechub) when the paths are too many to list
        result = exact_verification(args.method, p, q, args.k, max_paths=max_paths)
    if args.certificate:
        _write_json(args.certificate, result.certificate())
    _emit(result.to_json(), args.json, _verify_text(result))
    return EXIT_OK if result.lossless else EXIT_REFUTED


def _write_json(path, obj) -> None:
    from .core.errors import InvalidInput

    try:
        with open(path, "w") as handle:
            json.dump(obj, handle, indent=1)
    except OSError as err:
        raise InvalidInput(f"cannot write {path}: {err.strerror}") from None


def _search(args) -> int:
    from .gallery.search import search_counterexample

    found = search_counterexample(args.method, k=args.k)
    result = found.counterexample
    if result is None:
        obj = {"method": args.method, "k": args.k, "counterexample": None,
               "instances": found.instances}
        _emit(obj, args.json, f"no counterexample among {found.instances} small rational "
              "instances (evidence, not a proof)")
        return EXIT_OK
    obj = result.to_json()
    obj["counterexample"] = {"p": result.p.to_json(), "q": result.q.to_json()}
    obj["instances"] = found.instances
    _emit(obj, args.json, f"counterexample found after {found.instances} instances:\n"
          + _verify_text(result))
    return EXIT_REFUTED


def cmd_simulate(args) -> int:
    from .core.dist import exact_str
    from .verify import simulate

    if args.backend == "numpy":
        return _float_command("simulate", args)
    p, q = _read_pair(args)
    sim = simulate(args.method, p, q, args.k, n=args.n, seed=args.seed, grid=args.grid)
    lo, hi = sim.acceptance_interval()
    tv = sim.total_variation_to(p)
    obj = {"method": args.method, "k": args.k, "n": args.n, "seed": args.seed,
           "labels": [str(t) for t in p.labels], "target": p.to_json(),
           "counts": {str(t): c for t, c in sim.counts.items()},
           "empirical_float": {str(t): c / sim.n for t, c in sim.counts.items()},
           "tv_to_target_float": tv, "acceptance_float": sim.acceptance,
           "acceptance_ci95_float": [lo, hi]}
    rows = [[t, exact_str(p[t]), str(sim.counts[t]), f"{sim.counts[t] / sim.n:.4f}"]
            for t in p.labels]
    text = (f"method {args.method}, k = {args.k}: {args.n} samples (seed {args.seed})\n"
            + _table(rows, ["token", "target p", "count", "empirical"])
            + f"\nTV(empirical, p) = {tv:.4f}\nacceptance = {sim.acceptance:.4f} "
            f"(95% interval {lo:.4f} to {hi:.4f})\nsampling is evidence, not proof: "
            "use exactspec verify for the exact law")
    _emit(obj, args.json, text)
    return EXIT_OK


def _float_command(kind: str, args) -> int:
    from .numpy_backend import commands

    if args.p is None or args.q is None:
        raise _UsageError("both --p and --q are required")
    p, q = _read_float_pair(args)
    if kind == "verify":
        obj = commands.verify_float(args.method, p, q, args.k, normalize=args.normalize)
    elif kind == "simulate":
        obj = commands.simulate_float(args.method, p, q, args.k, n=args.n, seed=args.seed,
                                      normalize=args.normalize)
    elif kind == "optimal":
        obj = commands.optimal_float(p, q, args.k, normalize=args.normalize)
    else:
        methods = tuple(args.methods.split(",")) if args.methods else ("sps", "rrs")
        if args.k != 1 and "sps" in methods and not args.methods:
            methods = ("rrs",)
        obj = commands.compare_float(p, q, args.k, methods, normalize=args.normalize)
    lines = [f"{kind} (numpy backend, float64: estimates, never a proof), k = {args.k}"]
    for key, value in obj.items():
        if isinstance(value, dict):
            if len(value) > 12:
                value = f"{{... {len(value)} tokens}}"
        lines.append(f"  {key}: {value}")
    _emit(obj, args.json, "\n".join(lines))
    return EXIT_OK


def cmd_optimal(args) -> int:
    if args.backend == "numpy":
        return _float_command("optimal", args)
    from .bounds.compare import optimal_report

    from .core.dist import exact_str

    p, q = _read_pair(args)
    obj = optimal_report(p, q, args.k)
    checks = obj["checks"]
    by_name = {str(t): t for t in p.labels}
    rows = [[name, obj["a_star"][name], exact_str(p[by_name[name]]),
             exact_str(q[by_name[name]]), "tight" if name in obj["tight"] else ""]
            for name in obj["order"]]
    verdicts = {True: "agrees", False: "DISAGREES", None: "skipped (too large)"}
    text = (f"optimal acceptance for k = {args.k} i.i.d. drafts: alpha* = {obj['alpha_star']}\n"
            + _table(rows, ["token (q/p order)", "a*", "p", "q", "prefix"]) + "\nchecks: "
            + ", ".join(f"{name} {verdicts[ok]}" for name, ok in checks.items())
            + "".join(f"\n  {name} skipped: {why}"
                      for name, why in obj.get("checks_skipped", {}).items()))
    _emit(obj, args.json, text)
    bad = any(ok is False for ok in checks.values())
    return EXIT_REFUTED if bad else EXIT_OK


def cmd_compare(args) -> int:
    if args.backend == "numpy":
        return _float_command("compare", args)
    from .bounds.compare import compare

    p, q = _read_pair(args)
    methods = args.methods.split(",") if args.methods else None
    obj = compare(p, q, args.k, methods)
    rows = []
    for m in obj["methods"]:
        if "skipped" in m:
            rows.append([m["method"], m.get("draft_law", ""), "skipped", "", "", m["skipped"]])
        else:
            rows.append([m["method"], m["draft_law"], "lossless" if m["lossless"] else "LOSSY",
                         m["acceptance"], m["optimum"], m["ratio_to_optimal"] or "-"])
    text = (f"k = {args.k}: alpha* = {obj['alpha_star']} (i.i.d. drafts), a* = "
            + ", ".join(f"{t}: {v}" for t, v in obj["a_star"].items()) + "\n"
            + _table(rows, ["method", "drafts", "verdict", "acceptance", "optimum", "ratio"]))
    _emit(obj, args.json, text)
    return EXIT_OK


def cmd_rho(args) -> int:
    from .bounds.rho.report import rho_report, rho_text

    obj = rho_report(args.k)
    _emit(obj, args.json, rho_text(args.k))
    return EXIT_OK


def cmd_tree(args) -> int:
    from .sequences.trees import tree_report, tree_text

    report = tree_report(args.spec, max_paths=args.max_paths or 10**6)
    _emit(report, args.json, tree_text(report))
    return EXIT_OK if report["lossless"] else EXIT_REFUTED


def cmd_prove(args) -> int:
    from pathlib import Path

    from .claims import PROVED, REFUTED, all_claims, get_claim
    from .claims.runner import ProgressLine, run_claims
    from .core.errors import InvalidInput

    if args.list:
        claims = all_claims()
        obj = {"claims": [{"name": c.name, "statement": c.statement_for(args.full)}
                          for c in claims]}
        _emit(obj, args.json, "\n".join(f"{c['name']}: {c['statement']}"
                                        for c in obj["claims"]))
        return EXIT_OK

    if args.jobs is not None and args.jobs < 1:
        raise InvalidInput(f"--jobs={args.jobs}: need at least one worker")
    claims = [get_claim(args.name)] if args.name else all_claims()
    by_name = {c.name: c for c in claims}
    progress = ProgressLine(len(claims)) if not args.json else None
    results = []
    for name, result in run_claims(list(by_name), jobs=args.jobs, full=args.full,
                                   on_event=progress):
        claim = by_name[name]
        statement = claim.statement_for(args.full)
        if args.certificate_dir:
            folder = Path(args.certificate_dir)
            folder.mkdir(parents=True, exist_ok=True)
            _write_json(folder / f"{claim.name}.json", result.certificate)
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
        _emit({"claims": results}, True, "")
    if REFUTED in verdicts:
        return EXIT_REFUTED
    if verdicts - {PROVED}:
        return EXIT_UNDECIDED
    return EXIT_OK


COMMANDS = {"example": cmd_example, "verify": cmd_verify, "simulate": cmd_simulate,
            "optimal": cmd_optimal, "compare": cmd_compare, "rho": cmd_rho, "tree": cmd_tree,
            "prove": cmd_prove}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return EXIT_USAGE
        return COMMANDS[args.command](args)
    except _UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - every failure becomes one line, never a traceback
        return _report(err)


def _report(err: Exception) -> int:
    from .core.errors import ExactspecError, TooLarge, Undecided

    if isinstance(err, Undecided):
        print(f"undecided: {err}", file=sys.stderr)
        return EXIT_UNDECIDED
    if isinstance(err, (ExactspecError, TooLarge)):
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    where = _user_frame(err)
    print(f"error: {type(err).__name__}: {err}{where}", file=sys.stderr)
    return EXIT_USAGE


def _user_frame(err) -> str:
    """`` (in file.py line N)`` for the innermost frame outside exactspec, if any."""
    import os
    import traceback

    package = os.path.dirname(os.path.abspath(__file__))
    frames = [f for f in traceback.extract_tb(err.__traceback__)
              if not os.path.abspath(f.filename).startswith(package)]
    if frames:
        return f" (in {frames[-1].filename} line {frames[-1].lineno})"
    return " (inside exactspec: please report this as a bug)"


if __name__ == "__main__":
    sys.exit(main())
