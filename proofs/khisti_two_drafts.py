"""Claim: for two i.i.d. drafts alpha* = min_S p(S) + 1 - q(S)^2 (Khisti et al.), reached by their canonical architecture; the Fig. 2 family reproduced symbolically in x.

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/khisti-two-drafts.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove khisti-two-drafts`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("khisti-two-drafts"))
