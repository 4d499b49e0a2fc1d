"""What a claim is: a statement, a check that returns a verdict, and a certificate.

A claim's check returns a :class:`ClaimResult` whose verdict is ``PROVED``, ``REFUTED`` or
``UNDECIDED``; the certificate is plain JSON that :mod:`exactspec.checker` re-verifies without
the engine.
"""

from __future__ import annotations

import json
import random
import sys
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Callable

from ..core.dist import Dist, exact_str
from ..core.random_dists import random_dist, random_pair

__all__ = ["Claim", "ClaimResult", "Split", "add_tallies", "index_blocks", "random_dist",
           "random_pair", "symbolic_certificate", "run_claim_main", "PROVED", "REFUTED",
           "UNDECIDED"]

PROVED, REFUTED, UNDECIDED = "PROVED", "REFUTED", "UNDECIDED"


@dataclass
class ClaimResult:
    """A verdict, the lines that support it, and a JSON certificate.

    The certificate is ``{"parts": [...]}``: path certificates and symbolic certificates that
    :func:`exactspec.checker.check_certificate` re-verifies, plus any data the claim records.
    """

    verdict: str
    details: list = field(default_factory=list)
    certificate: dict = field(default_factory=dict)
    seconds: float = 0.0


@dataclass(frozen=True)
class Split:
    """A claim whose work is a list of independent units (corpus instances, symbolic proofs),
    so that the units can run in different processes.

    ``units(**kwargs)`` lists ``(unit, weight)``: a picklable description of each unit and its
    rough relative cost (for scheduling only).  ``part(unit, **kwargs)`` does one unit and
    returns a picklable tally; ``merge(tallies, **kwargs)`` turns the tallies, in the order of
    ``units``, into the claim's :class:`ClaimResult`.  The keyword arguments are the claim's
    corpus arguments (empty for the full corpus).  :meth:`whole` is the serial run, the same
    three steps in one process, and is what the claim's ``check`` calls: so a split run and a
    serial run give the same verdict, details and certificate by construction.

    >>> halves = Split(units=lambda n=4: [((i,), 1) for i in range(n)],
    ...                part=lambda unit, n=4: unit[0] ** 2,
    ...                merge=lambda tallies, n=4: ClaimResult(PROVED, [f"sum {sum(tallies)}"]))
    >>> halves.whole(n=3).details
    ['sum 5']
    """

    units: Callable[..., list]
    part: Callable[..., object]
    merge: Callable[..., "ClaimResult"]

    def whole(self, **kwargs) -> "ClaimResult":
        """Every unit in order, in this process, merged."""
        return self.merge([self.part(unit, **kwargs) for unit, _ in self.units(**kwargs)],
                          **kwargs)


def index_blocks(weights: list, most: float, offset: int = 0) -> list:
    """Units for a corpus whose instances cost ``weights``: ``((start, stop), weight)`` for
    consecutive blocks of instances weighing at most ``most`` together (an instance heavier
    than that is a block of its own), indices counted from ``offset``.

    >>> index_blocks([1, 1, 3, 1], 2)
    [((0, 2), 2.0), ((2, 3), 3.0), ((3, 4), 1.0)]
    """
    blocks, start, weight = [], 0, 0.0
    for i, w in enumerate(weights):
        if i > start and weight + w > most:
            blocks.append(((offset + start, offset + i), float(weight)))
            start, weight = i, 0.0
        weight += w
    if start < len(weights):
        blocks.append(((offset + start, offset + len(weights)), float(weight)))
    return blocks


def add_tallies(tallies: list) -> dict:
    """The tallies of several units, in order, as one: numbers added, lists joined.

    >>> add_tallies([{"paths": 3, "failures": ["a"]}, {"paths": 4, "failures": ["b"]}])
    {'paths': 7, 'failures': ['a', 'b']}
    """
    total: dict = {}
    for tally in tallies:
        for key, value in tally.items():
            if key not in total:
                total[key] = list(value) if isinstance(value, list) else value
            else:
                total[key] += value
    return total


@dataclass(frozen=True)
class Claim:
    """One claim: ``name``, the ``statement`` in words, and ``check() -> ClaimResult``.

    A corpus claim also has a fast corpus: ``fast`` holds the keyword arguments of ``check``
    that make it (smaller corpora, the same kinds of instance), and ``fast_statement`` the
    statement for it when the statement names the corpus size.  ``run(full=True)`` runs the
    full corpus (what the proof scripts run), ``run(full=False)`` the fast one.
    """

    name: str
    statement: str
    check: Callable[..., ClaimResult]
    issue: str = ""
    fast: dict | None = None
    fast_statement: str = ""
    split: Split | None = None

    def statement_for(self, full: bool = True) -> str:
        """The statement of the full corpus, or of the fast one."""
        return self.statement if full or not self.fast_statement else self.fast_statement

    def corpus_arguments(self, full: bool = True) -> dict:
        """The keyword arguments of ``check`` for the full corpus (none) or the fast one."""
        return dict(self.fast) if not full and self.fast is not None else {}

    def work_units(self, full: bool = True) -> list:
        """``(unit, weight)`` for each independent unit of work: the split claim's units, or
        one unit (``None``) for the whole claim."""
        if self.split is None:
            return [(None, 1.0)]
        return self.split.units(**self.corpus_arguments(full))

    def run_unit(self, unit, full: bool = True):
        """One unit of :meth:`work_units` (the whole unfinished result when not split)."""
        if self.split is None:
            return self.check(**self.corpus_arguments(full))
        return self.split.part(unit, **self.corpus_arguments(full))

    def finish(self, tallies: list, full: bool = True, seconds: float = 0.0) -> ClaimResult:
        """The result from the tallies of every unit of :meth:`work_units`, in order."""
        if self.split is None:
            (result,) = tallies
        else:
            result = self.split.merge(tallies, **self.corpus_arguments(full))
        return self._stamped(result, full, seconds)

    def run(self, full: bool = True) -> ClaimResult:
        start = time.perf_counter()
        result = self.check(**self.corpus_arguments(full))
        return self._stamped(result, full, time.perf_counter() - start)

    def _stamped(self, result: ClaimResult, full: bool, seconds: float) -> ClaimResult:
        fast = not full and self.fast is not None
        result.seconds = seconds
        result.certificate.setdefault("kind", "exactspec-claim-certificate")
        result.certificate.setdefault("parts", [])
        result.certificate.setdefault("claim", self.name)
        result.certificate.setdefault("statement", self.statement_for(not fast))
        result.certificate["corpus_run"] = "fast" if fast else "full"
        result.certificate.setdefault("verdict", result.verdict)
        return result


def symbolic_certificate(proof, statement: str) -> dict:
    """A JSON certificate of a :class:`~exactspec.engine.symbolic.SymbolicProof`: each case's
    conditions, its simplified law, and at each witness point the exact path certificate."""
    from ..verify import certificate_paths

    cases = []
    for case in proof.cases:
        witnesses = []
        for point in case.witnesses:
            cert = certificate_paths(point["enumeration"], point["p"], point["q"],
                                     method=proof.method, k=proof.k)
            witnesses.append({"point": point["point"], "certificate": cert})
        cases.append({"conditions": case.conditions, "verdict": case.verdict,
                      "law": {str(k): str(v) for k, v in case.law.items()},
                      "acceptance": str(case.acceptance), "witnesses": witnesses,
                      "note": case.note})
    out = {"kind": "exactspec-symbolic-certificate", "version": 1, "statement": statement,
           "method": proof.method, "n": proof.n, "k": proof.k,
           "positive_entries_assumed": proof.positive,
           "infeasible_cases": proof.infeasible, "cases": cases}
    if getattr(proof, "target", None) is not None:     # a law other than p: the claim's
        out["target_law"] = {str(k): str(v) for k, v in proof.target.items()}
    return out


def run_claim_main(name: str, argv=None) -> int:
    """Entry point for ``proofs/*.py``: run one claim, print its verdict, write the
    certificate (``--certificate FILE``, default ``certificates/NAME.json`` beside the
    current directory), exit 0 only when proved."""
    import argparse

    from . import get_claim

    parser = argparse.ArgumentParser(description=f"Check the claim {name!r}.")
    parser.add_argument("--certificate", help="where to write the certificate (JSON)")
    parser.add_argument("--fast", action="store_true",
                        help="the fast corpus of `exactspec prove` (default: the full one)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    claim = get_claim(name)
    print(f"Claim {claim.name}: {claim.statement_for(not args.fast)}")
    result = claim.run(full=not args.fast)
    for line in result.details:
        print(f"  {line}")
    target = Path(args.certificate) if args.certificate else Path("certificates") / f"{name}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(result.certificate, indent=1))
    print(f"{result.verdict} ({result.seconds:.1f} s; certificate {target})")
    return 0 if result.verdict == PROVED else 1
