"""Claim: two-level token trees with two children (vocabulary 3), verified node
by node with rrs, rrs-wor, optimal or key, generate exactly the target's joint law.

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/tree-lossless.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove tree-lossless`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("tree-lossless"))
