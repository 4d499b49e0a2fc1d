"""Claim: block verification generates exactly the target's joint law;
10/9, 11/9, 12/9 accepted draft tokens (token by token, blocks, ideal).

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/block-verification.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove block-verification`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("block-verification"))
