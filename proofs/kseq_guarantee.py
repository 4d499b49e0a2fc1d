"""Claim: K-SEQ at its exact rho* accepts at least (1 - (1-1/k)^k) alpha*, hence (1 - 1/e) alpha* (SpecTr; exact, on a corpus of 600 random rational instances).

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/kseq-guarantee.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove kseq-guarantee`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("kseq-guarantee"))
