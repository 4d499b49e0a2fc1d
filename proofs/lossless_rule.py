"""Claim: the one-draft rule outputs exactly p, for every p and q.

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/lossless-rule.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove lossless-rule`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("lossless-rule"))
