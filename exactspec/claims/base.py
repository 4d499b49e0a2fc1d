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

__all__ = ["Claim", "ClaimResult", "random_dist", "random_pair", "symbolic_certificate",
           "run_claim_main", "PROVED", "REFUTED", "UNDECIDED"]

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

    def statement_for(self, full: bool = True) -> str:
        """The statement of the full corpus, or of the fast one."""
        return self.statement if full or not self.fast_statement else self.fast_statement

    def run(self, full: bool = True) -> ClaimResult:
        fast = not full and self.fast is not None
        start = time.perf_counter()
        result = self.check(**self.fast) if fast else self.check()
        result.seconds = time.perf_counter() - start
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
            cert = certificate_paths(point["enumeration"], point["p"], point["q"])
            witnesses.append({"point": point["point"], "certificate": cert})
        cases.append({"conditions": case.conditions, "verdict": case.verdict,
                      "law": {str(k): str(v) for k, v in case.law.items()},
                      "acceptance": str(case.acceptance), "witnesses": witnesses,
                      "note": case.note})
    return {"kind": "exactspec-symbolic-certificate", "version": 1, "statement": statement,
            "method": proof.method, "n": proof.n, "k": proof.k,
            "positive_entries_assumed": proof.positive,
            "infeasible_cases": proof.infeasible, "cases": cases}


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
