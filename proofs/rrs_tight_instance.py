"""Claim: on q = (1-a, a), p = (1-a^k, a^k) RRS (run by the engine for symbolic 0 < a < 1) is lossless with acceptance 1 - (a^k - a^(2k-1)) and alpha* = 1, so RRS reaches exactly rho_k alpha* at a = a_k: 23/27 at p = (5/9, 4/9), q = (1/3, 2/3) for k = 2; rational instances approach rho_k from above.

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/rrs-tight-instance.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove rrs-tight-instance`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("rrs-tight-instance"))
