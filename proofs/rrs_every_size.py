"""Claim: for every vocabulary size |V| >= 1 and every p, q, RRS with k = 2 i.i.d. drafts
outputs exactly p and accepts with 1 - TV(p, q) TV(r_1, q).

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/rrs-every-size.json), and exits 0 only when proved.  The check lives in the
package (`exactspec prove rrs-every-size`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("rrs-every-size"))
