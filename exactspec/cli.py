"""The ``exactspec`` command line.

Every command takes ``--json`` (one JSON object on stdout, nothing else there).  Exit status:
0 success, 1 a refuted claim, 2 bad input or usage (one line on stderr), 3 undecided.
Heavy modules (sympy, numpy, networkx) are imported only by the commands that need them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

EXIT_OK, EXIT_REFUTED, EXIT_USAGE, EXIT_UNDECIDED = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in one line and exits 2."""

    def error(self, message):
        raise _UsageError(f"{self.prog}: {message}{_did_you_mean(message)}")


def _did_you_mean(message: str) -> str:
    """`` (did you mean 'verify'?)`` for argparse's ``invalid choice: 'verfy' (choose from
    ...)``; empty when nothing is close."""
    import re

    from .core.errors import did_you_mean

    found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if not found:
        return ""
    choices = re.findall(r"'([^']*)'", found.group(2)) or found.group(2).split(", ")
    return did_you_mean(found.group(1), choices)


class _UsageError(Exception):
    pass


def _add_instance(parser, k=True, required=True):
    parser.add_argument("--p", required=required,
                        help="target: 1/2,3/10,1/5, @file.json or @row.npy")
    parser.add_argument("--q", required=required,
                        help="draft: 1/5,1/5,3/5, @file.json or @row.npy")
    if k:
        parser.add_argument("--k", type=int, default=1, help="drafts per position (default 1)")
    parser.add_argument("--labels", help="token labels: abc or a,b,c")
    parser.add_argument("--normalize", action="store_true",
                        help="rescale p and q to sum exactly 1")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")


def _version() -> str:
    """The installed distribution's version, else the package's own."""
    from importlib import metadata

    from . import __version__

    try:
        return metadata.version("exactspec")
    except metadata.PackageNotFoundError:
        return __version__


#: The wall-clock budget of a run of user code without --seconds (none under --max-paths N).
DEFAULT_RUN_SECONDS = 600.0


def _add_run_seconds(parser) -> None:
    parser.add_argument("--seconds", type=float, metavar="S",
                        help="stop a run of user code after S seconds of wall-clock time, "
                        "kept by a watching process the code cannot disarm (default "
                        f"{DEFAULT_RUN_SECONDS:g}; none under --max-paths N)")


#: Every registered method, as ``verify``'s help lists them (tests/test_help.py checks this
#: against :data:`exactspec.methods.METHODS`, which is not imported to build the parser).
METHOD_NAMES = ("sps", "naive", "top1", "rrs", "rrs-wor", "kseq", "spechub", "optimal", "key",
                "key-lazy", "typical", "greedy", "top-k", "top-p")

_EXITS = {
    "proof": ("0 lossless (or a bias within --tolerance), 1 lossy, 2 bad input or usage (one "
              "line on stderr), 3 undecided"),
    "plain": "0 done, 2 bad input or usage (one line on stderr)",
    "optimal": ("0 every check agrees, 1 a check disagrees, 2 bad input or usage (one line on "
                "stderr)"),
    "prove": "0 every claim proved, 1 a claim refuted, 2 bad input or usage, 3 undecided",
    "probability": ("0 the probability computed, 2 bad input or usage (one line on stderr), "
                    "3 undecided"),
    "check": ("0 CERTIFICATE OK, 1 CERTIFICATE REJECTED, 2 bad input (one line on stderr), "
              "4 CERTIFICATE NOT CHECKED (nothing wrong found, but a part was not replayed)"),
    "example": "0 the example proved, 1 refuted, 2 bad input or usage (one line on stderr)",
}

#: Each command's ``--help`` epilog: a short example and its exit codes.
EPILOGS = {
    "example": ("exactspec example\nexactspec example --json", "example"),
    "verify": ("exactspec verify sps --p 1/2,3/10,1/5 --q 1/5,1/5,3/5\n"
               "exactspec verify examples/my_rule.py:my_rule --p 1/2,3/10,1/5 --q 1/5,1/5,3/5\n"
               "exactspec verify examples/my_rule.py:my_rule --p @p.json --q @q.json "
               "--arith float32", "proof"),
    "simulate": ("exactspec simulate sps --p 1/2,3/10,1/5 --q 1/5,1/5,3/5 --n 10000", "plain"),
    "optimal": ("exactspec optimal --p 1/2,3/10,1/5 --q 1/5,1/5,3/5 --k 2", "optimal"),
    "compare": ("exactspec compare --p 1/2,3/10,1/5 --q 1/5,1/5,3/5 --k 2\n"
                "exactspec compare --tree examples/chain.json", "plain"),
    "rho": ("exactspec rho 2", "plain"),
    "tree": ("exactspec tree examples/chain.json", "proof"),
    "prove": ("exactspec prove --list\nexactspec prove --jobs 2", "prove"),
    "sweep": ("exactspec sweep logits.npz --logits --k 1,2,4 --out results.csv", "plain"),
    "probability": ("exactspec probability my_test.py:check --p 1/2,1/2 --q 1/2,1/2",
                    "probability"),
    "check": ("exactspec verify sps --p 1/2,1/2 --q 1/4,3/4 --certificate c.json\n"
              "exactspec check c.json\n"
              "exactspec check c.json --trust examples/my_rule.py:my_rule   # a user's rule",
              "check"),
}


def _epilog(command: str) -> str:
    """The ``--help`` epilog of ``command``: its example and exit codes."""
    example, exits = EPILOGS[command]
    lines = "\n".join(f"  {line}" for line in example.splitlines())
    import textwrap

    exits = textwrap.fill(f"exit codes: {_EXITS[exits]}", width=79, subsequent_indent="  ")
    return f"example:\n{lines}\n\n{exits}"


def _add_command(sub, name: str, help_text: str, **kwargs):
    """A subcommand whose ``--help`` ends with its example and exit codes."""
    return sub.add_parser(name, help=help_text, description=help_text[:1].upper() +
                          help_text[1:] + ".", epilog=_epilog(name),
                          formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="exactspec", description="Exact proofs for speculative-decoding "
                     "verifiers: output law, verdict and acceptance, in exact arithmetic.",
                     epilog="example:\n  exactspec example\n  exactspec verify sps --p "
                     "1/2,3/10,1/5 --q 1/5,1/5,3/5\n\nexit codes (every command): 0 success, "
                     "1 a refuted claim, 2 bad input or usage (one line on stderr), 3 "
                     "undecided; exactspec check: 4 not checked.\nexactspec COMMAND --help "
                     "shows the command's example and exit codes.",
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"exactspec {_version()}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    ex = _add_command(sub, "example", "the one-draft rule on p = 1/2,3/10,1/5 and q = 1/5,1/5,3/5, "
                      "its table and its proof")
    ex.add_argument("--json", action="store_true")

    ve = _add_command(sub, "verify", "exact output law, verdict and acceptance of a method")
    ve.add_argument("method", help="a method: " + ", ".join(METHOD_NAMES) + "; or a rule "
                    "of yours, file.py:function or module:function")
    ve.add_argument("--p", help="target: 1/2,3/10,1/5, @file.json or @row.npy")
    ve.add_argument("--q", help="draft: 1/5,1/5,3/5, @file.json or @row.npy")
    ve.add_argument("--k", type=int, help="drafts per position (default 1)")
    ve.add_argument("--labels", help="token labels: abc or a,b,c")
    ve.add_argument("--normalize", action="store_true", help="rescale p and q to sum 1")
    ve.add_argument("--json", action="store_true", help="one JSON object on stdout")
    ve.add_argument("--exact", action="store_true",
                    help="write every exact value in full in the text (by default a long one "
                    "is shown by its decimal figure and a short exact form; --json always "
                    "holds every digit)")
    ve.add_argument("--grid", type=int, metavar="N",
                    help="explicit uniforms on {0, 1/N, ..., (N-1)/N} (e.g. 16777216)")
    ve.add_argument("--max-paths", type=int, metavar="N",
                    help="insist on enumerating up to N paths (default budget 10**7)")
    ve.add_argument("--certificate", metavar="FILE", help="write the certificate (JSON)")
    ve.add_argument("--search", action="store_true",
                    help="look for a small rational counterexample (no --p/--q needed)")
    ve.add_argument("--search-tokens", type=int, metavar="N",
                    help="with --search: vocabulary sizes 1 to N, smallest first (default 3)")
    ve.add_argument("--backend", choices=["exact", "numpy"], default="exact",
                    help="numpy: float64 at vocabulary scale (never a proof)")
    ve.add_argument("--arith", choices=["float32", "bfloat16", "float16", "float64"],
                    help="run the method's arithmetic in this float format, exactly rounded, "
                    "and pair it with exact arithmetic: lossless, lossy by the grid only, by "
                    "rounding, or by logic")
    ve.add_argument("--tolerance", metavar="T",
                    help="a bias of the grid or of rounding only (--grid, --arith) at most T "
                    "exits 0 (e.g. 2**-20 or 1e-6, read exactly)")
    ve.add_argument("--elementwise", choices=["correct", "numpy", "torch"], default="correct",
                    help="with --arith: exp and log correctly rounded (default), or NumPy's / "
                    "PyTorch's CPU functions of the dtype, on the exact float inputs")
    ve.add_argument("--sum-order", metavar="ORDER",
                    help="with --arith: the order of a PyTorch rule's long float sums: "
                    "sequential, correctly-rounded or torch-avx2[:T] (torch's CPU kernel on "
                    "AVX2, T threads); without it such sums are refused")
    ve.add_argument("--logits-p", metavar="L", help="target logits: 2,1,0, @file.json or "
                    "@row.npy (the target is their exact softmax; --arith computes it in the format)")
    ve.add_argument("--logits-q", metavar="L", help="draft logits, as --logits-p")
    ve.add_argument("--tokens", type=int, metavar="M",
                    help="the method is a multi-position rule, f(s, pair, ctx) or f(s, drafts, "
                         "p, q) with --gamma: prove its first M generated tokens on the pair "
                         "(p, q) at every context (the route of `tree --verifier`)")
    ve.add_argument("--gamma", type=int,
                    help="with --tokens: draft tokens per call, for a rule f(s, drafts, p, q)")
    _add_run_seconds(ve)

    si = _add_command(sub, "simulate", "sample a method: empirical law and acceptance")
    si.add_argument("method", help="as verify's: " + ", ".join(METHOD_NAMES)
                    + ", or file.py:function")
    _add_instance(si)
    si.add_argument("--n", type=int, default=10000, help="number of samples")
    si.add_argument("--seed", type=int, default=0)
    si.add_argument("--grid", type=int, metavar="N")
    si.add_argument("--backend", choices=["exact", "numpy"], default="exact",
                    help="numpy: vectorised float sampling")
    _add_run_seconds(si)

    op = _add_command(sub, "optimal", "alpha*, a*, the sorted order and tight prefixes")
    _add_instance(op)
    op.add_argument("--backend", choices=["exact", "numpy"], default="exact")

    co = _add_command(sub, "compare", "every method side by side against its optimum")
    _add_instance(co, required=False)
    co.add_argument("--tree", metavar="SPEC",
                    help="instead of --p/--q: every sequence-level method on a chain or tree "
                         "spec (docs/tree_format.md), exact tokens per call side by side")
    co.add_argument("--methods", help="comma-separated method names among "
                    + ", ".join(METHOD_NAMES) + " (default: all)")
    co.add_argument("--backend", choices=["exact", "numpy"], default="exact")

    rh = _add_command(sub, "rho", "rho_k, the tight ratio of RRS to the optimum")
    rh.add_argument("k", type=int, help="number of drafts")
    rh.add_argument("--json", action="store_true")

    tr = _add_command(sub, "tree", "chains, token trees and block verification, proved")
    tr.add_argument("spec", help="a JSON spec file (format: docs/tree_format.md)")
    tr.add_argument("--json", action="store_true")
    tr.add_argument("--max-paths", type=int, metavar="N",
                    help="insist on enumerating up to N paths (default budget 10**6)")
    tr.add_argument("--verifier", metavar="FILE.py:FUNCTION",
                    help="a user's verifier: f(s, drafts, p, q) given the rows of every "
                    "position, or f(s, pair, ctx) for a whole call (overrides the spec)")
    tr.add_argument("--gamma", type=int, help="draft tokens per call (overrides the spec)")
    _add_run_seconds(tr)
    tr.add_argument("--m", type=int, help="tokens to prove (overrides the spec)")
    tr.add_argument("--grid", type=int, metavar="N", help="explicit uniforms on a grid of N")
    tr.add_argument("--arith", choices=["float32", "bfloat16", "float16", "float64"],
                    help="the user's verifier in this float format, paired with exact "
                    "arithmetic")
    tr.add_argument("--tolerance", metavar="T", help="a bias of the grid or of rounding only "
                    "(--grid, --arith) at most T exits 0")
    tr.add_argument("--elementwise", choices=["correct", "numpy", "torch"], default="correct",
                    help="with --arith: exp and log correctly rounded (default), or NumPy's / "
                    "PyTorch's CPU functions of the dtype, on the exact float inputs")
    tr.add_argument("--certificate", metavar="FILE",
                    help="write every path of the generation (JSON) for the checker")
    tr.add_argument("--search", action="store_true",
                    help="with a user's verifier: search small per-position rows for the "
                    "smallest counterexample (the spec's model is not needed)")
    tr.add_argument("--search-tokens", type=int, metavar="N",
                    help="with --search: vocabulary sizes 1 to N, smallest first (default 3)")

    pr = _add_command(sub, "prove", "run the claims and print each verdict")
    pr.add_argument("name", nargs="?", help="one claim (default: all)")
    pr.add_argument("--list", action="store_true", help="list the claims")
    pr.add_argument("--certificate-dir", metavar="DIR", help="write certificates here")
    pr.add_argument("--jobs", type=int, metavar="N",
                    help="N units of work (claims, blocks of a claim's corpus) at a time in worker "
                         "processes (default: every core)")
    pr.add_argument("--full", action="store_true",
                    help="the full corpora (what proofs/*.py run); default: the fast ones")
    pr.add_argument("--json", action="store_true")
    pr.add_argument("--scheduler", metavar="ADDRESS",
                    help="run the claims as tasks on a Dask scheduler, tcp://host:port")
    pr.add_argument("--scheduler-timeout", type=float, default=10.0, metavar="SECONDS")

    sw = _add_command(sub, "sweep", "every method's acceptance over a logits dump (Dask)")
    sw.add_argument("dump", help=".npz, .safetensors, a Zarr store or a directory of .npy "
                    "(layout: docs/sweep_format.md)")
    sw.add_argument("--k", default="1,2,4,8", help="drafts per position, e.g. 1,2,4,8")
    sw.add_argument("--methods", help="rrs,rrs-wor,kseq,key,optimal (default: all but rrs-wor)")
    sw.add_argument("--logits", action="store_true", help="the arrays hold logits")
    sw.add_argument("--temperature", type=float, default=1.0, help="for --logits (default 1)")
    sw.add_argument("--top-p", type=float, help="keep each row's nucleus of this mass")
    sw.add_argument("--gamma", type=int, default=4,
                    help="chain length for tokens per target call (default 4)")
    sw.add_argument("--names", default="target,draft", help="the two arrays' names")
    sw.add_argument("--out", help="per-position table: results.parquet or results.csv")
    sw.add_argument("--plot", metavar="PNG", help="gap distribution and acceptance against k")
    sw.add_argument("--summary-json", metavar="FILE", help="the summary as records, one per "
                    "method x k, with the run: dump, options, exactspec version, time")
    sw.add_argument("--html", metavar="FILE", help="a self-contained HTML report: the "
                    "summary tables and the plots")
    sw.add_argument("--scheduler", metavar="ADDRESS", help="a Dask scheduler, tcp://host:port")
    sw.add_argument("--scheduler-timeout", type=float, default=10.0, metavar="SECONDS")
    sw.add_argument("--workers", type=int, help="local threads (default: the cores)")
    sw.add_argument("--block-mb", type=float, default=32.0,
                    help="MB of float64 rows per task and array (default 32)")
    sw.add_argument("--exact-sample", type=int, default=0, metavar="N",
                    help="recompute N random positions exactly and report the difference")
    sw.add_argument("--samples", type=int, default=1000,
                    help="Monte Carlo draws per position for rrs-wor (default 1000)")
    sw.add_argument("--seed", type=int, default=0)
    sw.add_argument("--skip-bad-rows", action="store_true",
                    help="skip rows with NaN, infinities or wrong sums (reported)")
    sw.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                    help="progress bar on stderr (default: when stderr is a terminal)")
    sw.add_argument("--json", action="store_true")

    pb = _add_command(sub, "probability", "the exact probability that a randomized check "
                      "holds, and the paths where it fails")
    pb.add_argument("check", help="file.py:function or module:function: check(s, p, q[, k]) "
                    "draws through s and returns True/False (or raises AssertionError)")
    _add_instance(pb)
    pb.add_argument("--grid", type=int, metavar="N",
                    help="explicit uniforms on {0, 1/N, ..., (N-1)/N} (e.g. 16777216)")
    pb.add_argument("--arith", choices=["float32", "bfloat16", "float16", "float64"],
                    help="run the check's arithmetic in this float format, exactly rounded")
    pb.add_argument("--max-paths", type=int, metavar="N",
                    help="insist on enumerating up to N paths (default budget 10**7)")
    pb.add_argument("--failing", type=int, default=10, metavar="N",
                    help="show at most N failing paths (default 10; all are counted)")
    pb.add_argument("--seconds", type=float, default=60.0, metavar="S",
                    help="stop a check that runs longer than S seconds (default 60)")

    ck = _add_command(sub, "check", "check a certificate: its arithmetic by a small "
                      "independent checker, its paths replayed through the method")
    ck.add_argument("certificate", metavar="CERT", help="a certificate file (JSON) written by "
                    "--certificate or prove --certificate-dir")
    ck.add_argument("--trust", action="append", default=[], metavar="FILE.py:FUNCTION",
                    help="replay through this rule of yours (FILE.py:FUNCTION or "
                    "MODULE:FUNCTION; runs its code); a certificate that names a rule outside "
                    "exactspec is otherwise NOT CHECKED, never run")
    ck.add_argument("--no-replay", action="store_true",
                    help="the method-free check only: the paths' arithmetic, not who made them")
    ck.add_argument("--max-paths", type=int, metavar="N", help="at most N paths (default 10**6)")
    ck.add_argument("--max-seconds", type=float, metavar="S",
                    help="stop the check after S seconds (default 600): NOT CHECKED")
    ck.add_argument("--json", action="store_true", help="one JSON object on stdout")
    return parser


def _read_pair(args):
    from .core.dist import Dist

    if args.p is None or args.q is None:
        raise _UsageError("both --p and --q are required")
    _check_entry_count(args.p, "p")
    _check_entry_count(args.q, "q")
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
    import numpy as np

    from .core.dist import parse_labels
    from .core.errors import InvalidInput

    def read(text, name):
        text = text.strip()
        if text.startswith("@") and text.lower().endswith(".npy"):
            from .core.dist import read_npy_row

            row = read_npy_row(text[1:], name)
            if row.dtype.kind == "f" and not np.all(np.isfinite(row)):
                raise InvalidInput(f"{name}: {text[1:]} holds a value that is not finite")
            return [float(v) for v in row.tolist()]
        if text.startswith("@"):
            path = text[1:]
            from .core.dist import read_text_capped

            try:
                data = json.loads(read_text_capped(path, name))
            except RecursionError:
                raise InvalidInput(f"{name}: {path} nests JSON too deeply") from None
            except ValueError as err:
                raise InvalidInput(f"{name}: {path} is not valid JSON ({err})") from None
            if not isinstance(data, (list, dict)) or not data:
                raise InvalidInput(f"{name}: {path} must hold a non-empty JSON list or object")
            values = list(data.values()) if isinstance(data, dict) else data
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                raise InvalidInput(f"{name}: {path} must hold numbers only")
            for i, v in enumerate(values):               # 1e400 reads as inf, 10**400 as int
                _as_float(v, f"{name}: {path}: entry {i} ({str(v)[:40]})")
            return data
        from .core.dist import parse_number

        values = []
        for i, part in enumerate(text.split(",")):
            try:
                value = parse_number(part.strip(), f"{name}[{i}]")   # its exponent bounded
            except InvalidInput:
                raise InvalidInput(f"{name}[{i}]={part.strip()!r}: not a number") from None
            values.append(_as_float(value, f"{name}[{i}]={part.strip()!r}"))
        return values

    p, q = read(args.p, "p"), read(args.q, "q")
    if args.labels and isinstance(p, list):
        labels = parse_labels(args.labels, len(p), name="labels")
        p = dict(zip(labels, p))
        q = dict(zip(labels, q)) if isinstance(q, list) and len(q) == len(labels) else q
    return p, q


def _as_float(value, where: str) -> float:
    """``value`` as a finite float64, or one line: the NumPy backend's numbers are floats."""
    import math

    from .core.errors import InvalidInput

    try:
        result = float(value)
    except OverflowError:
        result = math.inf
    if not math.isfinite(result):
        raise InvalidInput(f"{where}: outside the float64 range of --backend numpy (the exact "
                           "engine reads any rational)")
    return result


_STDOUT = [None]  # the real stdout while user code's prints go to stderr (--json)
#: [the command runs under --json, its JSON object is written]: an error or an undecided
#: result under --json still writes one object, ``{"error": ..., "exit": N}``
_JSON = [False, False]


def _emit(obj, as_json: bool, text) -> None:
    """Write ``obj`` as JSON or ``text``; either may be a function that makes it, called only
    when it is the one written (a report of 152,064 tokens costs seconds to format)."""
    out = _STDOUT[0] or sys.stdout
    if as_json:
        out.write(json.dumps(obj() if callable(obj) else obj) + "\n")
        _JSON[1] = True
    else:
        out.write((text() if callable(text) else text).rstrip("\n") + "\n")


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
        "The one-draft rule on p = (1/2, 3/10, 1/5), q = (1/5, 1/5, 3/5): accept x ~ q with "
        "probability\nmin(1, p(x)/q(x)), otherwise resample from norm(max(0, p - q)).\n\n"
        + _table(rows, header)
        + f"\n\nacceptance = sum min(p, q) = {exact_str(overlap(p, q))} "
        f"(enumerated: {exact_str(result.acceptance)})\n"
        f"output law {'= p exactly: PROVED' if result.lossless else '!= p: REFUTED'} "
        f"({result.paths} paths enumerated)")
    _emit(obj, args.json, text)
    return EXIT_OK if result.lossless else EXIT_REFUTED


#: What the two acceptance figures of a report are, in words.
ACCEPTANCE_WORDS = "the probability that the emitted token is one of the drafts"
EXPLICIT_WORDS = ("the probability that the rule takes a draft by s.accept (a resample that "
                  "happens to land on a draft counts in P(Y in X), not here)")


def _verify_text(result, exact: bool = False) -> str:
    """The text of an exact ``verify``: the table (long exact values as decimals unless
    ``exact``), the acceptance in words, and the verdict line, its TV's decimal first."""
    from .core.dist import exact_str
    from .core.text import CELL_NOTE, cell, figure, left_out_line, named_few, rows_shown
    from .verify import shipped_lines

    p = result.p
    differs = result.differs
    shown, left_out = rows_shown(p.labels, differs)
    rows = [[t, cell(p[t], exact), cell(result.q[t], exact), cell(result.law[t], exact),
             "" if result.law[t] == p[t] else
             f"differs by {_signed_cell(result.law[t] - p[t], exact)}"]
            for t in shown]
    axis = getattr(result.enumeration, "draft_axis", 0)
    table = _table(rows, ["token", "target p", "draft q", "output", ""])
    notes = [left_out_line(left_out)] if left_out else []
    if any(c.startswith("~") for row in rows for c in row[1:4]):
        notes.append(CELL_NOTE)
    lines = [f"method {result.method.name}, k = {result.k}: {result.paths} paths enumerated"
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
    from .core.text import cell

    text = cell(d, exact)
    if text.lstrip("~").startswith("-"):
        return text
    return "~+" + text[1:] if text.startswith("~") else "+" + text


def cmd_verify(args) -> int:
    from .verify import verify

    if args.sum_order is not None:
        from .engine.float_sums import check_sum_order

        if not args.arith:
            raise _UsageError("--sum-order applies with --arith (a float run's sums)")
        if args.search or args.backend == "numpy":
            raise _UsageError("--sum-order applies to the proof of a PyTorch rule "
                              "(not with --search or --backend numpy)")
        check_sum_order(args.sum_order)
    _check_verify_options(args)
    if args.search_tokens is not None and not args.search:
        raise _UsageError("--search-tokens applies to --search")
    if args.tokens is not None:
        return _verify_sequence(args)
    if args.gamma is not None:
        raise _UsageError("--gamma applies to a multi-position rule (--tokens M)")
    args.k = 1 if args.k is None else args.k
    if args.search:
        if args.elementwise != "correct":
            raise _UsageError("--elementwise does not apply to --search (its float runs use "
                              "correctly rounded exp and log)")
        return _search(args)
    if args.backend == "numpy":
        return _float_command("verify", args)
    if args.arith or args.tolerance is not None or args.logits_p or args.logits_q or \
            args.elementwise != "correct":
        return _verify_arith(args)
    p, q = _read_pair(args)
    _check_exact_probes(args, p)
    max_paths = args.max_paths if args.max_paths is not None else 10**7
    if args.certificate:   # streamed to the file as the paths are enumerated
        from .core.files import output_path
        from .verify import verify_to_certificate

        with output_path(args.certificate, "--certificate") as temporary:
            result = verify_to_certificate(args.method, p, q, args.k, temporary,
                                           grid=args.grid, max_paths=max_paths,
                                           progress=None if args.max_paths is None else True)
    elif args.grid:
        result = verify(args.method, p, q, args.k, grid=args.grid, max_paths=max_paths,
                        progress=None if args.max_paths is None else True)
    else:
        from .bounds.compare import exact_verification

        # the plain enumeration when it is small; merged states for methods with a stepped
        # form (rrs, rrs-wor, kseq, spechub) when the paths are too many to list
        result = exact_verification(args.method, p, q, args.k, max_paths=max_paths)
    if args.grid:   # the grid run beside ideal uniforms: lossless, lossy-grid or lossy-logic
        from .bounds.compare import exact_verification
        from .rounding import BiasSplit

        ideal = exact_verification(args.method, p, q, args.k, max_paths=max_paths)
        split = BiasSplit(result.method, result.p, result.q, result.k, None, args.grid,
                          ideal, None, result)
        _emit(split.to_json, args.json, lambda: split.text(args.exact))
        return EXIT_OK if split.ok else EXIT_REFUTED
    _emit(result.to_json, args.json, lambda: _verify_text(result, args.exact))
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
            raise _UsageError(f"{given[0]} does not apply to --backend numpy (float64 "
                              "estimates: no paths, certificate or float format); drop one "
                              "of them")
    if args.elementwise != "correct" and not args.arith and not args.search:
        raise _UsageError(f"--elementwise {args.elementwise} applies to a float run: give "
                          "--arith FORMAT (float32, ...)")


def _verify_arith(args) -> int:
    """``verify --arith``: the float run beside the exact-arithmetic run, and the verdict."""
    from .rounding import split_bias

    tolerance = None
    if args.tolerance is not None:
        tolerance = _read_exact_number(args.tolerance, "--tolerance", nonnegative=True)
    max_paths = args.max_paths if args.max_paths is not None else 10**7
    if args.logits_p or args.logits_q:
        if args.p or args.q:
            raise _UsageError("give --p/--q or --logits-p/--logits-q, not both")
        if not (args.logits_p and args.logits_q):
            raise _UsageError("both --logits-p and --logits-q are required")
        if args.certificate:
            raise _UsageError("--certificate with logits: the target (their exact softmax) is "
                              "irrational and the checker reads rationals; give --p/--q")
        lp, labels = _read_logits(args.logits_p, "logits-p", args.labels)
        lq, labels_q = _read_logits(args.logits_q, "logits-q", args.labels)
        if len(lp) != len(lq):
            raise _UsageError(f"--logits-q has {len(lq)} entries but --logits-p has {len(lp)}")
        split = split_bias(args.method, k=args.k, arith=args.arith, grid=args.grid,
                           tolerance=tolerance, logits_p=lp, logits_q=lq, labels=labels,
                           max_paths=max_paths, keep_paths=bool(args.certificate),
                           elementwise=args.elementwise, sum_order=args.sum_order)
    else:
        p, q = _read_pair(args)
        _check_exact_probes(args, p)
        split = split_bias(args.method, p, q, args.k, arith=args.arith, grid=args.grid,
                           tolerance=tolerance, max_paths=max_paths,
                           keep_paths=bool(args.certificate), elementwise=args.elementwise,
                           sum_order=args.sum_order)
    if args.certificate:
        _write_json(args.certificate, split.run.certificate())
    _emit(split.to_json, args.json, lambda: split.text(args.exact))
    return EXIT_OK if split.ok else EXIT_REFUTED


def _read_exact_number(text, name, *, nonnegative=False):
    """An exact number: ``1/3``, ``1e-6`` (the decimal rational), ``2**-20``, ``-2**-20``
    (the minus applies to the power, as in Python), ``3/4**2`` (``3/16``, as in Python).  Decimal exponents are bounded by
    :data:`~exactspec.core.budget.MAX_EXPONENT` and powers by
    :data:`~exactspec.core.budget.MAX_EXACT_DIGITS` before the number is built; with
    ``nonnegative`` a negative number is refused."""
    from fractions import Fraction

    from .core.budget import MAX_EXACT_DIGITS, digits_of_bits, power_bits
    from .core.dist import parse_number as _parse_number
    from .core.errors import TooLarge

    t = text.strip()
    usage = f"{name}={text!r}: not a number (use 1/1000000, 1e-6 or 2**-20)"
    sign = 1
    if "**" in t:
        base_text, _, power_text = t.partition("**")
        base_text, power_text = base_text.strip(), power_text.strip()
        if base_text.startswith("-"):                    # -2**-20 is -(2**-20)
            sign, base_text = -1, base_text[1:].strip()
        numerator = None
        if "/" in base_text:                             # 3/4**2 is 3/(4**2), as in Python
            numerator_text, _, base_text = base_text.rpartition("/")
            try:
                numerator = Fraction(_parse_number(numerator_text.strip(), name))
            except ValueError:
                raise _UsageError(usage) from None
            base_text = base_text.strip()
        if power_text.startswith("(") and power_text.endswith(")"):
            power_text = power_text[1:-1].strip()
        if len(power_text) > 12:
            raise TooLarge(f"{name}={text[:40]!r}: the power {power_text[:20]}... is over the "
                           f"budget of {MAX_EXACT_DIGITS:,} digits exactly",
                           budget=MAX_EXACT_DIGITS)
        try:
            base, power = Fraction(_parse_number(base_text, name)), int(power_text)
        except ValueError:
            raise _UsageError(usage) from None
        digits = digits_of_bits(power_bits(base, abs(power)))
        if digits > MAX_EXACT_DIGITS:
            raise TooLarge(f"{name}={text[:40]!r}: ({base})**{power} has about {digits:,} digits "
                           f"exactly, over the budget of {MAX_EXACT_DIGITS:,} digits",
                           estimate=digits, budget=MAX_EXACT_DIGITS)
        try:
            value = sign * (base ** power if numerator is None else numerator / base ** power)
        except ZeroDivisionError:
            raise _UsageError(usage) from None
    else:
        try:
            value = _parse_number(t, name)
        except TooLarge:
            raise
        except Exception:                                # noqa: BLE001 - one line, our words
            raise _UsageError(usage) from None
    if nonnegative and value < 0:
        raise _UsageError(f"{name}={text!r}: must be at least 0 (a bias at most T)")
    return value


#: Logits are read up to this many characters each and this magnitude: the exact softmax of a
#: spread of 10,000 is still decided in seconds; past it sympy's sign decisions of
#: ``exp(L)`` grow without bound (and every float format saturates long before).
MAX_LOGIT = 10**4
MAX_LOGIT_CHARS = 400


def _logit(text, name):
    """One logit from its text, within :data:`MAX_LOGIT_CHARS` characters and
    :data:`MAX_LOGIT` in magnitude."""
    from .core.dist import parse_number as _parse_number
    from .core.errors import TooLarge

    text = text.strip()
    if len(text) > MAX_LOGIT_CHARS:
        raise TooLarge(f"{name}={text[:20]}...: {len(text):,} characters, over the budget of "
                       f"{MAX_LOGIT_CHARS} for one logit", estimate=len(text),
                       budget=MAX_LOGIT_CHARS)
    value = _parse_number(text, name)
    if abs(value) > MAX_LOGIT:
        raise TooLarge(f"{name}={text}: |logit| over the budget of {MAX_LOGIT:,} (the exact "
                       "softmax could not be decided; every float format saturates far below)",
                       estimate=abs(value), budget=MAX_LOGIT)
    return value


def _read_logits(text, name, labels_arg):
    """Logits: ``2,1,0`` (exact numbers, any sign), ``@file.json`` (a list, or an object
    ``{label: logit}``) or ``@row.npy`` (a 1-D array; floats are their exact binary values);
    the file is read up to the size cap of a distribution file and each logit up to
    :data:`MAX_LOGIT`."""
    from fractions import Fraction

    from .core.dist import exact, parse_labels, read_npy_row, read_text_capped
    from .core.errors import ExactspecError, InvalidInput, TooLarge

    t = text.strip()
    labels = None
    if t.startswith("@") and t.lower().endswith(".npy"):
        values = []
        for i, v in enumerate(read_npy_row(t[1:], name).tolist()):
            value = exact(v, f"{name}: {t[1:]}: {name}[{i}]")
            if abs(value) > MAX_LOGIT:
                raise TooLarge(f"{name}: {t[1:]}: {name}[{i}]={v!r}: |logit| over the budget "
                               f"of {MAX_LOGIT:,}", estimate=abs(value), budget=MAX_LOGIT)
            values.append(value)
    elif t.startswith("@"):
        path = t[1:]
        count = [0]

        def number(token):
            count[0] += 1
            return _logit(token, f"{name}[{count[0] - 1}]")

        def constant(token):
            raise InvalidInput(f"{name}: {path} holds {token}: logits must be finite numbers")

        try:
            data = json.loads(read_text_capped(path, name), parse_float=number,
                              parse_int=number, parse_constant=constant)
        except ExactspecError:
            raise
        except RecursionError:
            raise InvalidInput(f"{name}: {path} nests JSON too deeply") from None
        except ValueError as err:
            raise InvalidInput(f"{name}: {path} is not valid JSON ({err})") from None
        if isinstance(data, dict) and "logits" in data:
            data = data["logits"]
        if isinstance(data, dict):
            labels, values = tuple(data), list(data.values())
        elif isinstance(data, list):
            values = data
        else:
            raise InvalidInput(f"{name}: {path} must hold a list or an object of logits")
        if not values or not all(isinstance(v, Fraction) for v in values):
            raise InvalidInput(f"{name}: {path} must hold finite numbers only")
    else:
        values = [_logit(part, f"{name}[{i}]") for i, part in enumerate(t.split(","))]
    if labels_arg:
        labels = parse_labels(labels_arg, len(values), name="labels")
    return values, labels


def _verify_sequence(args) -> int:
    """``verify F --tokens M``: the route of ``tree --verifier F`` on a context-free spec."""
    from .sequences.context import ContextPair

    for flag, given in (("--k", args.k is not None), ("--backend numpy", args.backend == "numpy"),
                        ("--logits-p", args.logits_p), ("--logits-q", args.logits_q)):
        if given:
            raise _UsageError(f"{flag} does not apply to a multi-position rule (--tokens): give "
                              "--p and --q, the pair at every context")
    if args.exact:
        raise _UsageError("--exact applies to a one-position verify (a multi-position rule's "
                          "report writes its exact values in full; --json holds every one)")
    if args.tokens < 1:
        raise _UsageError(f"--tokens={args.tokens}: need a number of tokens >= 1")
    function = _pytorch_whole_call(args.method, args.tokens)
    if args.search:
        if args.p is not None or args.q is not None:
            raise _UsageError("--search tries its own small pairs: give no --p/--q")
        return _search_sequences(args, function, gamma=args.gamma, m=args.tokens,
                                 context_free=True, name=args.method)
    p, q = _read_pair(args)
    pair = ContextPair.context_free(p, q)
    return _sequence_report(args, {"m": args.tokens}, function, pair=pair,
                            gamma=args.gamma, m=args.tokens)


def _pytorch_whole_call(method: str, m: int):
    """A PyTorch rule ``fn(p, q)`` (a file that imports torch) as the whole call of a
    multi-position rule on 2-D rows (:mod:`exactspec.sequences.torch_rules`); any other rule
    as given."""
    from .torch_layer import load_pytorch_rule

    rule = load_pytorch_rule(method)
    if rule is None:
        return method
    from .sequences.torch_rules import pytorch_whole_call

    return pytorch_whole_call(rule, m)


def _sequence_report(args, spec, function, *, pair=None, gamma=None, m=None) -> int:
    """The one report of a user's multi-position rule, from ``verify --tokens`` or ``tree``."""
    from .sequences.user import DEFAULT_MAX_PATHS, DEFAULT_MAX_SECONDS, user_report, user_text

    if args.search_tokens is not None:
        raise _UsageError("--search-tokens applies to --search")
    report = user_report(spec, function, pair=pair, gamma=gamma, m=m, arith=args.arith,
                         grid=args.grid, tolerance=_tolerance(args),
                         max_paths=args.max_paths or DEFAULT_MAX_PATHS,
                         certificate=bool(args.certificate), elementwise=args.elementwise,
                         max_seconds=None if args.max_paths else DEFAULT_MAX_SECONDS,
                         sum_order=getattr(args, "sum_order", None))
    if args.certificate:
        _write_json(args.certificate, report.pop("certificate"))
    _emit(report, args.json, user_text(report))
    return EXIT_OK if report["ok"] else EXIT_REFUTED


def _tolerance(args):
    return None if args.tolerance is None else _read_exact_number(args.tolerance, "--tolerance",
                                                                  nonnegative=True)


def _write_json(path, obj, flag: str = "--certificate") -> None:
    """``obj`` as JSON in the file ``path``, whole or not at all
    (:func:`~exactspec.core.files.output_file`); a failed write is one line naming it."""
    from .core.files import output_file

    with output_file(path, flag) as handle:
        json.dump(obj, handle, indent=1)


def _search(args) -> int:
    from .gallery.search import search_counterexample

    for flag, given in (("--p", args.p), ("--q", args.q), ("--logits-p", args.logits_p),
                        ("--logits-q", args.logits_q), ("--certificate", args.certificate),
                        ("--backend numpy", args.backend == "numpy")):
        if given:
            raise _UsageError(f"{flag} does not apply to --search (it tries its own small "
                              "instances; prove the counterexample it prints without --search)")

    tolerance = _tolerance(args)
    found = search_counterexample(args.method, k=args.k, grid=args.grid, arith=args.arith,
                                  tolerance=tolerance,
                                  max_tokens=3 if args.search_tokens is None
                                  else args.search_tokens,
                                  max_paths=args.max_paths if args.max_paths else 10**6)
    result = found.counterexample
    if result is None:
        obj = {"method": args.method, "k": args.k, "counterexample": None,
               "instances": found.instances, "arith": args.arith or "exact"}
        _emit(obj, args.json, f"no counterexample among {found.instances} small rational "
              "instances (evidence, not a proof)")
        return EXIT_OK
    split = found.split
    obj = split.to_json() if split is not None else result.to_json()
    obj["counterexample"] = {"p": result.p.to_json(), "q": result.q.to_json()}
    obj["instances"] = found.instances
    text = split.text(args.exact) if split is not None else _verify_text(result, args.exact)
    _emit(obj, args.json, f"counterexample found after {found.instances} instances "
          f"(p = {','.join(obj['counterexample']['p'].values())}, q = "
          f"{','.join(obj['counterexample']['q'].values())}):\n" + text)
    return EXIT_REFUTED


def cmd_simulate(args) -> int:
    from .core.dist import exact_str
    from .verify import simulate

    if args.backend == "numpy":
        return _float_command("simulate", args)
    p, q = _read_pair(args)
    if not _is_pytorch_rule(args.method):
        from .core.budget import check_exact_runs

        check_exact_runs(len(p), args.n, DEFAULT_RUN_SECONDS, f"--n {args.n:,} samples",
                         instead="fewer samples (--n), or --backend numpy")
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
    # one dictionary look-up per token (a list of the tight labels searched per token was
    # quadratic: minutes at 152,064 tokens)
    p_text = {str(t): exact_str(v) for t, v in zip(p.labels, p.probs)}
    q_text = {str(t): exact_str(v) for t, v in zip(q.labels, q.probs)}
    tight = set(obj["tight"])
    rows = [[name, obj["a_star"][name], p_text[name], q_text[name],
             "tight" if name in tight else ""] for name in obj["order"]]
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
    if args.tree is not None:
        if args.p is not None or args.q is not None or args.backend != "exact":
            raise _UsageError("compare --tree SPEC takes the model from the spec: no --p, --q "
                              "or --backend numpy")
        from .sequences.tree_compare import sequence_compare, sequence_compare_text

        report = sequence_compare(args.tree)
        _emit(report, args.json, sequence_compare_text(report))
        return EXIT_OK
    if args.p is None or args.q is None:
        raise _UsageError("exactspec compare: the following arguments are required: --p, --q "
                          "(or --tree SPEC)")
    if args.backend == "numpy":
        return _float_command("compare", args)
    from .bounds.compare import compare

    p, q = _read_pair(args)
    methods = args.methods.split(",") if args.methods else None
    obj = compare(p, q, args.k, methods)
    rows, lossy_rows = [], []
    for m in obj["methods"]:
        by_design = m.get("group") == "lossy-by-design"
        if "skipped" in m:
            blank = [""] if by_design else ["", ""]
            (lossy_rows if by_design else rows).append(
                [m["method"], m.get("draft_law", ""), "skipped", *blank, m["skipped"]])
        elif by_design:
            lossy_rows.append([m["method"], m["draft_law"],
                               "lossless" if m["lossless"] else "LOSSY", m["acceptance"],
                               m["bias"]])
        else:
            rows.append([m["method"], m["draft_law"], "lossless" if m["lossless"] else "LOSSY",
                         m["acceptance"], m["optimum"], m["ratio_to_optimal"] or "-"])
    text = (f"k = {args.k}: alpha* = {obj['alpha_star']} (i.i.d. drafts), a* = "
            + ", ".join(f"{t}: {v}" for t, v in obj["a_star"].items()) + "\n"
            + _table(rows, ["method", "drafts", "verdict", "acceptance", "optimum", "ratio"]))
    if lossy_rows:
        text += ("\n\nlossy by design (bias = TV(output law, p)):\n"
                 + _table(lossy_rows, ["method", "drafts", "verdict", "acceptance", "bias"]))
    _emit(obj, args.json, text)
    return EXIT_OK


def cmd_rho(args) -> int:
    from .bounds.rho.report import rho_report, rho_text

    if args.k > 64:  # large K: the closed form, not a derivation per K
        from .bounds.rho.large import rho_large_report, rho_large_text

        _emit(rho_large_report(args.k), args.json, rho_large_text(args.k))
        return EXIT_OK
    obj = rho_report(args.k)
    _emit(obj, args.json, rho_text(args.k))
    return EXIT_OK


def cmd_tree(args) -> int:
    from .sequences.trees import tree_report, tree_text

    user = args.verifier or _spec_names_function(args.spec)
    if args.elementwise != "correct" and not user:   # (--search refuses it for every route)
        raise _UsageError("--elementwise applies to a user's verifier under --arith (not to "
                          "a built-in tree method)")
    if user:
        if args.search:
            _check_search_options(args)          # before the spec's verifier is imported
            from .sequences.context import read_spec
            from .sequences.user import _SPEC_KEYS, load_verifier

            spec, base = read_spec(args.spec, "spec", _SPEC_KEYS)
            name = args.verifier or spec.get("verifier")
            gamma = args.gamma if args.gamma is not None else spec.get("gamma")
            m = args.m if args.m is not None else spec.get("m")
            function = load_verifier(name, base, gamma=_whole(gamma, "gamma"),
                                     m=_whole(m, "m"))   # a PyTorch rule: the whole call
            for key in ("arith", "grid", "tolerance"):   # the spec's, unless given here
                if getattr(args, key) is None and spec.get(key) is not None:
                    setattr(args, key, spec[key] if key != "tolerance" else str(spec[key]))
            return _search_sequences(args, function, gamma=_whole(gamma, "gamma"),
                                     m=_whole(m, "m"), name=name, context_free=getattr(
                                         function, "pytorch_rule", None) is not None)
        return _sequence_report(args, args.spec, args.verifier, gamma=args.gamma, m=args.m)
    given = [f"--{n}" for n in ("gamma", "m", "certificate") if getattr(args, n) is not None]
    if args.search:
        given.append("--search")
    if args.search_tokens is not None:
        given.append("--search-tokens")
    if given:
        raise _UsageError(f"{given[0]} applies to a user's verifier (--verifier file.py:function "
                          "or a spec whose 'verifier' names one)")
    if args.arith or args.grid or args.tolerance is not None:
        from .sequences.user import builtin_report, user_text

        report = builtin_report(args.spec, arith=args.arith, grid=args.grid,
                                tolerance=_tolerance(args), max_paths=args.max_paths or 10**6)
        _emit(report, args.json, user_text(report))
        return EXIT_OK if report["ok"] else EXIT_REFUTED
    report = tree_report(args.spec, max_paths=args.max_paths or 10**6)
    _emit(report, args.json, tree_text(report))
    return EXIT_OK if report["lossless"] else EXIT_REFUTED


def _whole(value, name):
    """A spec's count (``gamma``, ``m``) as an int, or ``None``."""
    from fractions import Fraction

    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, Fraction) and value.denominator == 1:
        return int(value)
    raise _UsageError(f"spec: {name}={value!r}: need a whole number")


def _search_sequences(args, function, *, gamma, m, context_free, name=None) -> int:
    """``tree --verifier F --search`` and ``verify F --tokens M --search``: the smallest
    counterexample among the instances of ``verify --search``, in its order."""
    from .gallery.search_sequences import search_sequence_counterexample
    from .sequences.user import user_text

    _check_search_options(args)
    tokens = 3 if args.search_tokens is None else args.search_tokens
    name = name or str(function)
    found = search_sequence_counterexample(
        function, gamma=gamma, m=m, tokens=tokens, context_free=context_free, name=name,
        arith=args.arith, grid=args.grid, tolerance=_tolerance(args),
        max_paths=args.max_paths or 10**5)
    shape = "context-free pairs (p, q)" if context_free else "per-position rows"
    if found.report is None:
        obj = {"verifier": name, "counterexample": None, "instances": found.instances,
               "search_tokens": tokens}
        _emit(obj, args.json, f"no counterexample among {found.instances} small {shape} on 1 "
              f"to {tokens} tokens (evidence, not a proof)")
        return EXIT_OK
    obj = dict(found.report)
    obj["counterexample"] = found.rows
    obj["instances"] = found.instances
    obj["search_tokens"] = tokens
    rows = found.rows
    where = (f"p = {rows['p']}, q = {rows['q']}" if context_free else
             f"target rows {' | '.join(rows['target'])}; draft rows {' | '.join(rows['draft'])}")
    _emit(obj, args.json, f"counterexample found after {found.instances} instances: {where}\n"
          + user_text(found.report))
    return EXIT_REFUTED


def _check_search_options(args) -> None:
    """The options ``--search`` of a multi-position rule refuses, from the arguments alone."""
    if args.certificate:
        raise _UsageError("--certificate with --search: search first, then prove the "
                          "counterexample with --certificate")
    if args.elementwise != "correct":
        raise _UsageError("--elementwise does not apply to --search (its float runs use "
                          "correctly rounded exp and log)")


def _spec_names_function(spec_path) -> bool:
    """Whether the spec's ``verifier`` names a user's function (``file.py:function``)."""
    spec = _spec_or_none(spec_path)
    return isinstance(spec, dict) and ":" in str(spec.get("verifier", ""))


def _spec_or_none(spec_path):
    """The spec file's JSON by the spec reader (a regular file, capped, numbers bounded), or
    ``None`` when it cannot be read: the command's own reading then says why."""
    from .core.errors import ExactspecError
    from .sequences.context import read_json

    try:
        return read_json(spec_path, "spec")
    except ExactspecError:
        return None


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
    if args.jobs is not None:
        from .claims.runner import default_jobs

        cores = default_jobs()
        if args.jobs > cores:                            # more processes only cost memory
            print(f"note: --jobs={args.jobs} capped at the {cores} cores this process may use",
                  file=sys.stderr)
            args.jobs = cores
    _check_folder(args.certificate_dir, "--certificate-dir")
    if args.certificate_dir:                             # before the work, not after it
        try:
            Path(args.certificate_dir).mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise _UsageError(f"--certificate-dir {args.certificate_dir}: cannot create it "
                              f"({err.strerror})") from None
    claims = [get_claim(args.name)] if args.name is not None else all_claims()
    by_name = {c.name: c for c in claims}
    progress = ProgressLine(len(claims)) if not args.json else None
    results = []
    if getattr(args, "scheduler", None):
        from .sweep.prove import run_claims as run_on_dask

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
            _write_json(folder / f"{claim.name}.json", result.certificate, "--certificate-dir")
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


def cmd_sweep(args) -> int:
    import os

    from .sweep import plot, summary_text, sweep, tidy_summary, write_table
    from .sweep.output import json_ready

    names = [n.strip() for n in args.names.split(",")]
    if len(names) != 2 or not all(names):
        raise _UsageError(f"--names {args.names!r}: give two names, target,draft")
    if args.workers is not None and args.workers < 1:
        raise _UsageError(f"--workers {args.workers}: need at least 1")
    for flag, path in (("--out", args.out), ("--plot", args.plot), ("--html", args.html),
                       ("--summary-json", args.summary_json)):
        folder = os.path.dirname(os.path.abspath(path)) if path else None
        if folder and (not os.path.isdir(folder) or os.path.isdir(path)):
            raise _UsageError(f"{flag} {path}: cannot write a file there")
    if args.out and os.path.splitext(args.out)[1] not in (".parquet", ".csv"):
        raise _UsageError(f"--out {args.out}: write .parquet or .csv")   # before the sweep
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
        from .sweep.report import html_report

        html_report(result, args.html, methods)
        result.summary["html"] = args.html
    if args.summary_json:
        _write_json(args.summary_json, tidy_summary(result), "--summary-json")
        result.summary["summary_json"] = args.summary_json
    _emit(json_ready(result.summary), args.json, summary_text(result.summary, methods))
    return EXIT_OK


def cmd_probability(args) -> int:
    from .testing.probability import probability_report

    if ":" not in args.check:
        raise _UsageError(f"probability: {args.check!r}: name the check as file.py:function "
                          "or module:function")
    if args.failing < 0:
        raise _UsageError(f"--failing={args.failing}: must be a non-negative integer")
    if not args.seconds > 0 or args.seconds == float("inf"):
        raise _UsageError(f"--seconds={args.seconds}: must be a positive number of seconds")
    p, q = _read_pair(args)
    _check_exact_probes(args, p)
    max_paths = args.max_paths if args.max_paths is not None else 10**7
    report = probability_report(args.check, p, q, k=args.k, grid=args.grid, arith=args.arith,
                                max_paths=max_paths, max_failing=args.failing,
                                seconds=args.seconds)
    _emit(report.to_json(), args.json, report.text())
    return EXIT_OK


def cmd_check(args) -> int:
    """``exactspec check CERT [--trust FILE.py:FUNCTION]``: the checkers' command
    (:func:`~exactspec.replay.check_command`; ``python -m exactspec.checker`` is the same)."""
    import math

    from .replay import check_command

    if args.max_seconds is not None and not (math.isfinite(args.max_seconds)
                                             and args.max_seconds > 0):
        raise _UsageError(f"--max-seconds={args.max_seconds}: give a finite number of seconds "
                          "above 0")
    out = check_command(args.certificate, trust=args.trust, replay=not args.no_replay,
                        max_paths=args.max_paths, max_seconds=args.max_seconds)
    lines = out.pop("lines")
    _emit(out, args.json, "\n".join(lines))
    return out["exit"]


COMMANDS = {"example": cmd_example, "verify": cmd_verify, "simulate": cmd_simulate,
            "optimal": cmd_optimal, "compare": cmd_compare, "rho": cmd_rho, "tree": cmd_tree,
            "prove": cmd_prove, "sweep": cmd_sweep, "probability": cmd_probability,
            "check": cmd_check}


_VALUE_OPTIONS = {"--p", "--q", "--labels"}


def _join_negative_values(argv: list) -> list:
    """``--p -0,1`` as ``--p=-0,1``: argparse would read ``-0,1`` as an option."""
    out = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if (token in _VALUE_OPTIONS and i + 1 < len(argv) and isinstance(argv[i + 1], str)
                and argv[i + 1].startswith("-") and not argv[i + 1].startswith("--")):
            out.append(f"{token}={argv[i + 1]}")
            i += 2
            continue
        out.append(token)
        i += 1
    return out


#: Exact commands read distributions of at most this many entries (reading, the optimum and
#: its table take about 60 microseconds of CPU per exact entry: 12 s at 200,000).
MAX_EXACT_ENTRIES = 250_000


def _check_entry_count(text, name) -> None:
    """Refuse, before parsing, a distribution with more than :data:`MAX_EXACT_ENTRIES`
    entries (counted by their separators, file size capped as for every distribution)."""
    from .core.dist import read_text_capped
    from .core.errors import TooLarge

    text = text.strip()
    if text.startswith("@") and text.lower().endswith(".npy"):
        from .core.dist import read_npy_row

        entries = read_npy_row(text[1:], name).size
    else:
        body = read_text_capped(text[1:], name) if text.startswith("@") else text
        entries = body.count(",") + 1
    if entries > MAX_EXACT_ENTRIES:
        raise TooLarge(f"{name}: about {entries:,} entries, over the budget of "
                       f"{MAX_EXACT_ENTRIES:,} for exact arithmetic (about {entries * 6e-5:,.0f} "
                       "s of CPU): use --backend numpy (float64 estimates)",
                       estimate=entries, budget=MAX_EXACT_ENTRIES)


#: The exact path estimate runs a method this many times before it enumerates (Knuth's
#: probes, :func:`~exactspec.engine.exact.estimate_paths`), within a tenth of the
#: enumeration's seconds budget (60 s).
ESTIMATE_PROBES = 40
ESTIMATE_SECONDS = 6.0


def _check_exact_probes(args, p) -> None:
    """Refuse, before any run, an exact enumeration over a distribution so long that the
    path estimate's probes alone (:data:`ESTIMATE_PROBES` runs, each over every entry)
    would pass :data:`ESTIMATE_SECONDS` (:func:`~exactspec.core.budget.check_exact_runs`);
    ``--max-paths N`` insists, and a PyTorch rule (whose draft is a tensor axis, not a path
    per token) is not sized here."""
    from .core.budget import check_exact_runs

    if args.max_paths is not None or _is_pytorch_rule(getattr(args, "method", None)
                                                      or getattr(args, "check", None)):
        return
    check_exact_runs(len(p), ESTIMATE_PROBES, ESTIMATE_SECONDS,
                     f"the path estimate's {ESTIMATE_PROBES} runs of the method",
                     instead="--backend numpy (float64 estimates), or --max-paths N to insist")


def _is_pytorch_rule(method) -> bool:
    """Whether ``method`` names a function of a file that imports torch (read, not run)."""
    files = _rule_file(method)
    if not files or not os.path.isfile(files[0]):
        return False
    from .torch_layer.detect import imports_torch

    return imports_torch(files[0])


def _check_folder(path, flag) -> None:
    """A folder to write into: refused up front when it names something that is not a
    folder (``/dev/null``, a file)."""
    import os

    if path is not None and os.path.exists(path) and not os.path.isdir(path):
        raise _UsageError(f"{flag} {path}: exists and is not a folder")


def _check_counts(args) -> None:
    """Counts that must be positive, timeouts that must be finite and positive, and paths
    that must name a file."""
    import math

    timeout = getattr(args, "scheduler_timeout", None)
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        raise _UsageError(f"--scheduler-timeout={timeout}: give a finite number of seconds "
                          "above 0")
    for name in ("grid", "max_paths", "n"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            raise _UsageError(f"--{name.replace('_', '-')}={value}: must be a positive integer")
    seed = getattr(args, "seed", None)
    if seed is not None and seed < 0:
        raise _UsageError(f"--seed={seed}: must be a non-negative integer")
    if getattr(args, "certificate", None) is not None and not args.certificate.strip():
        raise _UsageError("--certificate '': give a file name to write the certificate to")
    if getattr(args, "certificate_dir", None) is not None and not args.certificate_dir.strip():
        raise _UsageError("--certificate-dir '': give a folder to write the certificates to")
    _check_outputs(args)


#: The options that name a file a command writes.
_OUTPUT_OPTIONS = ("certificate", "out", "plot", "html", "summary_json")


def _check_outputs(args) -> None:
    """Refuse, before any work, an output file that is one of the command's inputs (or the
    same file through a link) or lies inside an input folder
    (:func:`~exactspec.core.files.check_outputs`)."""
    from .core.files import check_outputs

    outputs = [(f"--{name.replace('_', '-')}", getattr(args, name, None))
               for name in _OUTPUT_OPTIONS]
    outputs = [(flag, path) for flag, path in outputs if isinstance(path, str) and path]
    if outputs:
        check_outputs(outputs, _inputs(args))


def _rule_file(named, base=None) -> list:
    """The file of a rule named ``file.py:function`` (and its place relative to ``base``, a
    spec's folder), or nothing for a registered name or ``module:function``."""
    if not isinstance(named, str) or ":" not in named:
        return []
    where = named.rpartition(":")[0]
    if not (where.endswith(".py") or "/" in where):
        return []
    found = [where]
    if base is not None and not os.path.isabs(where):
        found.append(os.path.join(base, where))
    return found


def _inputs(args) -> list:
    """``(what, path)`` of every file and folder a command reads: ``@file`` rows, a rule's
    file, a spec and the model and verifier files it names, a dump."""
    found = []
    for name in ("p", "q", "logits_p", "logits_q"):
        text = getattr(args, name, None)
        if isinstance(text, str) and text.strip().startswith("@"):
            found.append((f"the --{name.replace('_', '-')} file", text.strip()[1:]))
    for name in ("method", "check", "verifier"):
        found += [("the rule file", where) for where in _rule_file(getattr(args, name, None))]
    spec = getattr(args, "spec", None) or getattr(args, "tree", None)
    if isinstance(spec, str):
        found.append(("the spec", spec))
        data = _spec_or_none(spec)
        base = os.path.dirname(spec)
        if isinstance(data, dict):
            model = data.get("model")
            if isinstance(model, str):
                found.append(("the spec's model file", os.path.join(base, model)))
            found += [("the spec's verifier file", where)
                      for where in _rule_file(data.get("verifier"), base)]
    if isinstance(getattr(args, "dump", None), str):
        found.append(("the dump", args.dump))
    return found


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    argv = _join_negative_values(argv)
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)   # exact values may have any number of digits
    parser = build_parser()
    _JSON[:] = ["--json" in argv, False]
    try:
        args = parser.parse_args(argv)
        _JSON[0] = bool(getattr(args, "json", False))
        if args.command is None:
            return _no_command()
        _check_counts(args)
        return _supervised_command(args)
    except _UsageError as err:
        return _fail(f"error: {err}")
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - every failure becomes one line, never a traceback
        return _report(err)


def _runs_user_code(args) -> bool:
    """Whether the command runs a user's code: a method, check or verifier named by file or
    module (``rule.py:fn``), or a tree spec (which may name one)."""
    if args.command == "tree" or args.command == "probability":
        return True
    if args.command == "check":                  # a --trust rule of the user's is run
        return bool(args.trust)
    named = getattr(args, "method", None)
    return args.command in ("verify", "simulate") and isinstance(named, str) and ":" in named


def _supervised_command(args) -> int:
    """Run a command that runs user code in a watched child process
    (:func:`~exactspec.core.supervise.supervised`): its wall-clock budget (``--seconds``, or
    the check's own under ``probability``) is kept by this process, which user code cannot
    reach; every other command runs here."""
    from .core.supervise import can_supervise, supervised

    if not _runs_user_code(args) or not can_supervise():
        return _command_exit(args)
    seconds = getattr(args, "seconds", None)
    if seconds is not None and (not seconds > 0 or seconds == float("inf")):
        raise _UsageError(f"--seconds={seconds}: must be a positive number of seconds")
    grace = 0.0
    if args.command == "probability":           # the check's budget comes first, in its words
        grace = 2.0 + seconds / 5
    elif args.command == "check":                # the checker's budget, then its grace
        seconds = (args.max_seconds or 600.0) + 10.0
    elif seconds is None and not getattr(args, "max_paths", None):
        seconds = DEFAULT_RUN_SECONDS
    ticker = _Ticker.start(f"exactspec {args.command}", seconds) \
        if args.command == "verify" and sys.stderr.isatty() else None
    try:
        return supervised(lambda: _command_exit(args), seconds=seconds, grace=grace,
                          what=f"exactspec {args.command}",
                          advice="give a larger --seconds S, or a smaller instance")
    finally:
        if ticker is not None:
            ticker.stop()


class _Ticker:
    """A progress line on stderr while a supervised command runs longer than
    :data:`PROGRESS_AFTER` seconds: ``exactspec verify: working, 12 s (budget 600 s; Ctrl-C
    stops it)``, rewritten in place each second by a thread of the watching process (the
    child that runs the work has none, so its forked runs still fork) and cleared before
    anything the command writes is shown.  Started only when stderr is a terminal."""

    def __init__(self, what: str, seconds, stream, after: float, every: float):
        import threading

        self.what, self.seconds, self.stream = what, seconds, stream
        self.after, self.every = after, every
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.shown = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.saved = None

    @classmethod
    def start(cls, what: str, seconds, stream=None, after: float | None = None,
              every: float = 1.0) -> "_Ticker":
        """Start the line's thread and put the command's streams behind :meth:`clear`."""
        ticker = cls(what, seconds, stream or sys.stderr,
                     PROGRESS_AFTER if after is None else after, every)
        ticker.saved = (sys.stdout, sys.stderr)
        sys.stdout = _ClearingStream(sys.stdout, ticker, final=True)
        sys.stderr = _ClearingStream(sys.stderr, ticker, final=False)
        ticker.thread.start()
        return ticker

    def line(self, elapsed: float) -> str:
        budget = f"budget {self.seconds:g} s; " if self.seconds else ""
        return f"{self.what}: working, {elapsed:.0f} s ({budget}Ctrl-C stops it)"

    def _run(self) -> None:
        import time

        began = time.monotonic()
        if self.done.wait(self.after):
            return
        while not self.done.is_set():
            with self.lock:
                if self.done.is_set():
                    return
                self.stream.write("\r" + self.line(time.monotonic() - began) + "\x1b[K")
                self.stream.flush()
                self.shown = True
            self.done.wait(self.every)

    def clear(self, final: bool = False) -> None:
        """Take the line off the screen (before the command's own text); ``final``: and stop
        it (the report has begun)."""
        if os.getpid() != self.pid:                      # the forked child: not its line
            return
        with self.lock:
            if final:
                self.done.set()
            if self.shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
                self.shown = False

    def stop(self) -> None:
        self.clear(final=True)
        if self.saved is not None and os.getpid() == self.pid:
            sys.stdout, sys.stderr = self.saved
            self.saved = None


class _ClearingStream:
    """A stream that clears the progress line (:class:`_Ticker`) before each write."""

    def __init__(self, stream, ticker: _Ticker, final: bool):
        self._stream, self._ticker, self._final = stream, ticker, final

    def write(self, text):
        if text:
            self._ticker.clear(final=self._final)
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


#: The progress line of a supervised ``verify`` appears after this many seconds.
PROGRESS_AFTER = 3.0


def _command_exit(args) -> int:
    """One command run to its exit code, a failure reported in one line."""
    try:
        return _run_command(args)
    except _UsageError as err:
        return _fail(f"error: {err}")
    except Exception as err:  # noqa: BLE001 - every failure becomes one line, never a traceback
        return _report(err)


class _UserExit(SystemExit):
    """``os._exit(code)`` called in this process while a command ran (user code)."""


def _trapped_exit(real_exit, pid):
    """``os._exit`` for the run of a command: in this process it raises :class:`_UserExit`
    (user code must not end the command without its report), in a forked worker it exits."""
    def _exit(code):
        if os.getpid() != pid:                           # a worker process: its own exit
            real_exit(code)
        raise _UserExit(code)
    return _exit


def _run_command(args) -> int:
    """Run one command; under ``--json`` whatever user code prints goes to stderr; a call of
    ``sys.exit`` or ``os._exit`` in user code is refused in one line (exit 2)."""
    if getattr(args, "json", False):
        _STDOUT[0], sys.stdout = sys.stdout, sys.stderr
    real_exit = os._exit
    os._exit = _trapped_exit(real_exit, os.getpid())
    try:
        return COMMANDS[args.command](args)
    except SystemExit as exiting:  # user code called sys.exit: its exit, not ours
        where = _user_frame(exiting, only_user=True)
        call = "os._exit" if isinstance(exiting, _UserExit) else "sys.exit"
        return _fail(f"error: user code called {call}({exiting.code!r}){where}: a verifier "
                     "must return a token")
    finally:
        os._exit = real_exit
        if _STDOUT[0] is not None:
            sys.stdout, _STDOUT[0] = _STDOUT[0], None


def _no_command() -> int:
    """Bare ``exactspec``: the short usage and a one-line hint, exit 2."""
    print("usage: exactspec [-h] [--version] COMMAND [options]", file=sys.stderr)
    return _fail(f"error: exactspec: name a command ({', '.join(COMMANDS)}; exactspec --help "
                 "describes them)")


def _fail(line: str, code: int = EXIT_USAGE) -> int:
    """Print ``line`` (``error: ...`` or ``undecided: ...``) on stderr and return ``code``;
    under ``--json`` also write the command's one object on stdout, ``{"error": ...,
    "exit": 2}`` (``{"undecided": ..., "exit": 3}``), unless it wrote its own already."""
    print(line, file=sys.stderr)
    if _JSON[0] and not _JSON[1]:
        key, _, text = line.partition(": ")
        key = "undecided" if code == EXIT_UNDECIDED else "error"
        out = _STDOUT[0] or sys.stdout
        out.write(json.dumps({key: text or line, "exit": code}) + "\n")
        out.flush()
        _JSON[1] = True
    return code


def _report(err: Exception) -> int:
    from .core.errors import ExactspecError, TooLarge, Undecided, names_its_line

    if isinstance(err, Undecided):
        return _fail(f"undecided: {_one_line(err)}", EXIT_UNDECIDED)
    if isinstance(err, (ExactspecError, TooLarge)):
        where = "" if names_its_line(err) else _user_frame(err, only_user=True)
        return _fail(f"error: {_one_line(err)}{where}")
    if isinstance(err, MemoryError):
        return _fail("error: out of memory: the work needed more memory than this process may "
                     "take (give a smaller instance)")
    where = _user_frame(err)
    if where.startswith(" (in "):
        where = " (raised by user code " + where[len(" ("):]
    return _fail(f"error: {type(err).__name__}: {_one_line(err)}{where}")


def _one_line(err) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= 2000 else text[:2000] + " ..."


def _user_frame(err, only_user: bool = False) -> str:
    """`` (in file.py line N)`` for the innermost frame outside exactspec, if any."""
    import os
    import traceback

    package = os.path.dirname(os.path.abspath(__file__))
    frames = [f for f in traceback.extract_tb(err.__traceback__)
              if not os.path.abspath(f.filename).startswith(package)
              and not f.filename.startswith("<frozen ") and f.filename.endswith(".py")
              and f"{os.sep}lib{os.sep}python" not in f.filename]
    if frames:
        return f" (in {frames[-1].filename} line {frames[-1].lineno})"
    return "" if only_user else " (inside exactspec: please report this as a bug)"


if __name__ == "__main__":
    sys.exit(main())
