"""Claim: merging the tokens into two groups by the support of RRS's final residual never increases RRS's acceptance and never decreases alpha* (exact, on a corpus of 2000 random rational instances).

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/lumping-step.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove lumping-step`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("lumping-step"))
