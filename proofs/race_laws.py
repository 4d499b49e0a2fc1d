"""Claim: Gumbel-max and the exponential race sample like the inverse CDF.

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/race-laws.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove race-laws`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("race-laws"))
