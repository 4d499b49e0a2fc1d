"""The checks of a command's arguments before any work: counts and timeouts, output files
that are not inputs, and exact work refused up front by its estimate.
"""

from __future__ import annotations

import os

from .process import UsageError
from .readers import rule_file, spec_or_none


#: The exact path estimate runs a method this many times before it enumerates (Knuth's
#: probes, :func:`~exactspec.engine.exact.estimate_paths`), within a tenth of the
#: enumeration's seconds budget (60 s).
ESTIMATE_PROBES = 40
ESTIMATE_SECONDS = 6.0


def exact_probes_limited(args):
    """The block in which an exact enumeration runs for the command: the path route refuses,
    before any run, a walk over distributions so long that the path estimate's probes alone
    (:data:`ESTIMATE_PROBES` runs, each over every entry) would pass :data:`ESTIMATE_SECONDS`
    (:func:`~exactspec.core.budget.probes_limited`); the planner's other routes (law leaves,
    merged states, a PyTorch rule's tensor axis) are tried first and are not held to it.
    ``--max-paths N`` insists, and a PyTorch rule (whose draft is a tensor axis, not a path
    per token) is not sized here."""
    import contextlib

    from ..core.budget import probes_limited

    if args.max_paths is not None or is_pytorch_rule(getattr(args, "method", None)
                                                     or getattr(args, "check", None)):
        return contextlib.nullcontext()
    return probes_limited(ESTIMATE_PROBES, ESTIMATE_SECONDS,
                          f"the path estimate's {ESTIMATE_PROBES} runs of the method",
                          instead="--backend numpy (float64 estimates), or --max-paths N to "
                                  "insist")


def is_pytorch_rule(method) -> bool:
    """Whether ``method`` names a function of a file that imports torch (read, not run)."""
    files = rule_file(method)
    if not files or not os.path.isfile(files[0]):
        return False
    from ..torch_layer.detect import imports_torch

    return imports_torch(files[0])


def check_folder(path, flag) -> None:
    """A folder to write into: refused up front when it names something that is not a
    folder (``/dev/null``, a file)."""
    if path is not None and os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"{flag} {path}: exists and is not a folder")


def check_counts(args) -> None:
    """Counts that must be positive, timeouts that must be finite and positive, and paths
    that must name a file."""
    import math

    timeout = getattr(args, "scheduler_timeout", None)
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        raise UsageError(f"--scheduler-timeout={timeout}: give a finite number of seconds "
                         "above 0")
    for name in ("grid", "max_paths", "n"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            raise UsageError(f"--{name.replace('_', '-')}={value}: must be a positive integer")
    seed = getattr(args, "seed", None)
    if seed is not None and seed < 0:
        raise UsageError(f"--seed={seed}: must be a non-negative integer")
    if getattr(args, "certificate", None) is not None and not args.certificate.strip():
        raise UsageError("--certificate '': give a file name to write the certificate to")
    if getattr(args, "certificate_dir", None) is not None and not args.certificate_dir.strip():
        raise UsageError("--certificate-dir '': give a folder to write the certificates to")
    _check_outputs(args)


#: The options that name a file a command writes.
_OUTPUT_OPTIONS = ("certificate", "out", "plot", "html", "summary_json")


def _check_outputs(args) -> None:
    """Refuse, before any work, an output file that is one of the command's inputs (or the
    same file through a link) or lies inside an input folder
    (:func:`~exactspec.core.files.check_outputs`)."""
    from ..core.files import check_outputs

    outputs = [(f"--{name.replace('_', '-')}", getattr(args, name, None))
               for name in _OUTPUT_OPTIONS]
    outputs = [(flag, path) for flag, path in outputs if isinstance(path, str) and path]
    if outputs:
        check_outputs(outputs, _inputs(args))


def _inputs(args) -> list:
    """``(what, path)`` of every file and folder a command reads: ``@file`` rows, a rule's
    file, a spec and the model and verifier files it names, a dump."""
    found = []
    for name in ("p", "q", "logits_p", "logits_q"):
        text = getattr(args, name, None)
        if isinstance(text, str) and text.strip().startswith("@"):
            found.append((f"the --{name.replace('_', '-')} file", text.strip()[1:]))
    for name in ("method", "check", "verifier"):
        found += [("the rule file", where) for where in rule_file(getattr(args, name, None))]
    spec = getattr(args, "spec", None) or getattr(args, "tree", None)
    if isinstance(spec, str):
        found.append(("the spec", spec))
        data = spec_or_none(spec)
        base = os.path.dirname(spec)
        if isinstance(data, dict):
            model = data.get("model")
            if isinstance(model, str):
                found.append(("the spec's model file", os.path.join(base, model)))
            found += [("the spec's verifier file", where)
                      for where in rule_file(data.get("verifier"), base)]
    if isinstance(getattr(args, "dump", None), str):
        found.append(("the dump", args.dump))
    return found
