"""Claim: on a single chain Traversal Verification and block verification have the same
exact law and tokens per call on 200 random instances, never below token by token.

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/traversal-chain-block.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove traversal-chain-block`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("traversal-chain-block"))
