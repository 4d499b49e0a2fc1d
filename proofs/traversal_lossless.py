"""Claim: Traversal Verification generates exactly the target's joint law on chains of
1-3 tokens and token trees of 1-3 levels over 3 tokens (random context-dependent pairs).

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/traversal-lossless.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove traversal-lossless`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("traversal-lossless"))
