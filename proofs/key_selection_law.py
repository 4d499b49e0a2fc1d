"""Claim: the key mechanism (per-draft keys, smallest wins) selects token t with exactly the
closed-form probability sel(t | X) for every draft multiset X, and r*(t | X) = beta_t sel(t | X)
satisfies sum_X P(X) r*(t | X) = a*(t).

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/key-selection-law.json), and exits 0 only when proved.  The check lives in the
package (`exactspec prove key-selection-law`); this script is its entry point.
Derivation and proof: docs/key.md.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("key-selection-law"))
