"""Claim: typical acceptance, greedy multi-draft, top-k and top-p verification are lossy by
design, with exact bias and acceptance on the seed example and laws equal to closed forms.

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/lossy-rules.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove lossy-rules`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("lossy-rules"))
