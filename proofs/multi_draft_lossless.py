"""Claim: rrs, rrs-wor, kseq, spechub and optimal output exactly p and never beat their draft law's optimum.

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/multi-draft-lossless.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove multi-draft-lossless`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("multi-draft-lossless"))
