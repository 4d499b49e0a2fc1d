"""Claim: alpha_RRS >= rho_k alpha* (exact, on a corpus of 6000 random rational instances, 2-6 tokens, k = 2..5; and symbolically on two tokens); the smallest ratio found is reported.

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/rrs-ratio-bound.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove rrs-ratio-bound`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("rrs-ratio-bound"))
