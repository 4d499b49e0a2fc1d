"""Claim: the one-draft rule accepts with probability sum min(p, q) = 1 - TV(p, q).

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/acceptance-1-tv.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove acceptance-1-tv`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("acceptance-1-tv"))
