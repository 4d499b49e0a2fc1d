"""Claim: keeping every draft outputs q, so its bias is TV(q, p).

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/naive-bias.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove naive-bias`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("naive-bias"))
