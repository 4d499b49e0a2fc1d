"""Claim: one exponential noise vector per request leaves vLLM's output law unchanged.

Prints PROVED, REFUTED or UNDECIDED, writes its certificate (--certificate FILE, default
certificates/shared-noise-vllm.json), and exits 0 only when proved.  The check lives in the package
(`exactspec prove shared-noise-vllm`); this script is its entry point.
"""

import sys

from exactspec.claims.base import run_claim_main

if __name__ == "__main__":
    sys.exit(run_claim_main("shared-noise-vllm"))
