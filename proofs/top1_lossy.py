"""Claim: accepting only the target's argmax is lossy.

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/top1-lossy.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove top1-lossy`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("top1-lossy"))
