"""Claim: alpha* from the sorted cumulative minimum equals the brute-force minimum cut and the exact max flow.

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/alpha-star-three-ways.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove alpha-star-three-ways`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("alpha-star-three-ways"))
