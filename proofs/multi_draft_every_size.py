"""Claim: RRS (k = 2), RRS without replacement and K-SEQ for every vocabulary size, as far as
the vocabulary-generic interpreter reaches (UNDECIDED where it stops, with the reason).

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/multi-draft-every-size.json), and exits 0 only when proved.  The check lives in
the package (`exactspec prove multi-draft-every-size`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("multi-draft-every-size"))
