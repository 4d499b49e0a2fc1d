"""Claim: for every vocabulary size |V| >= 2, naive, top-1 and the residual without max(0, .)
are lossy, each with a counterexample family valid for every |V| >= 2.

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/lossy-every-size.json), and exits 0 only when proved.  The check lives in the
package (`exactspec prove lossy-every-size`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("lossy-every-size"))
