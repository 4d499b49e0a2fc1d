"""Claim: a gamma-token chain with the bonus token generates exactly the
target's joint law (the first m tokens, over as many target calls as needed).

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/chain-lossless.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove chain-lossless`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("chain-lossless"))
