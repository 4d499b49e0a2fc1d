"""Claim: recursive rejection sampling with k i.i.d. drafts outputs exactly p, with acceptance 1 - prod TV(r_{i-1}, q).

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/rrs-lossless.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove rrs-lossless`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("rrs-lossless"))
