"""Claim: rho_k = 1 - max_[0,1] (a^k - a^(2k-1)) has the closed form 1 - ((k-1)/(2k-1)) (k/(2k-1))^(k/(k-1)) (derived by sympy), rho_1 = 1, rho_2 = 23/27, rho_3 = 1 - 6 sqrt(15)/125, rho_k decreases in k and tends to 3/4.

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/rho-closed-form.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove rho-closed-form`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("rho-closed-form"))
