"""Claim: a chain's exact tokens per target call, equal to
(1 - alpha^(gamma+1)) / (1 - alpha) under constant acceptance (Leviathan Table 1).

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/chain-tokens-per-call.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove chain-tokens-per-call`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("chain-tokens-per-call"))
