"""Claim: Sequoia's positional model gives a tree's tokens per call, exactly for
context-free pairs with RRS at every node; the chain-vs-tree table.

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/idealised-trees.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove idealised-trees`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("idealised-trees"))
