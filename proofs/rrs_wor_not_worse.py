"""Claim: RRS without replacement never accepts less than RRS (exact, on a corpus of 2000 random rational instances).

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/rrs-wor-not-worse.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove rrs-wor-not-worse`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("rrs-wor-not-worse"))
