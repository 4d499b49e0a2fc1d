"""Claim: KEY and KEY-lazy (smallest random key verified with a*/w, residual
(p - a*)/(1 - alpha*)) are lossless and accept with probability exactly alpha*, equal to the
exact optimal transport, including the two counterexamples of docs/math.md#the-two-counterexamples.

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/key-lossless-optimal.json), and exits 0 only when proved.  The check lives in the
package (`exactspec prove key-lossless-optimal`); this script is its entry point.
Derivation and proof: docs/key.md.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("key-lossless-optimal"))
