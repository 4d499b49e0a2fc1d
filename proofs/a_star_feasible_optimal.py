"""Claim: the cumulative-minimum law a* is feasible and optimal.

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/a-star-feasible-optimal.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove a-star-feasible-optimal`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("a-star-feasible-optimal"))
