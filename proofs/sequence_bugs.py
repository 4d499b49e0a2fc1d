"""Claim: three sequence-level bugs are lossy with their exact laws, and their
fixes are lossless.

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/sequence-bugs.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove sequence-bugs`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("sequence-bugs"))
