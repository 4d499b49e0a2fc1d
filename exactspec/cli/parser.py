"""The argument parser of the command line: every command's options, its ``--help`` with an
example and the exit codes, usage errors in one line.
"""

from __future__ import annotations

import argparse
import sys

from .process import DEFAULT_RUN_SECONDS, UsageError


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in one line and exits 2."""

    def error(self, message):
        raise UsageError(f"{self.prog}: {message}{_did_you_mean(message)}")


def _did_you_mean(message: str) -> str:
    """`` (did you mean 'verify'?)`` for argparse's ``invalid choice: 'verfy' (choose from
    ...)``; empty when nothing is close."""
    import re

    from ..core.errors import did_you_mean

    found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if not found:
        return ""
    choices = re.findall(r"'([^']*)'", found.group(2)) or found.group(2).split(", ")
    return did_you_mean(found.group(1), choices)


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


class _Version(argparse.Action):
    """``--version``: the version looked up only when asked for (reading the installed
    distribution's metadata costs every other command about 40 ms at start)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="show program's version number and exit"):
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0,
                         help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        sys.stdout.write(f"exactspec {_version()}\n")
        parser.exit(0)


def _version() -> str:
    """The installed distribution's version, else the package's own."""
    from importlib import metadata

    from .. import __version__

    try:
        return metadata.version("exactspec")
    except metadata.PackageNotFoundError:
        return __version__


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
    parser.add_argument("--version", action=_Version)
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


_VALUE_OPTIONS = {"--p", "--q", "--labels"}


def join_negative_values(argv: list) -> list:
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
