"""Claims about Traversal Verification (Weng et al., NeurIPS 2025): it is lossless on chains
and token trees, and on a single chain it is block verification, instance by instance.

Every law is exact (:func:`exactspec.sequences.multitoken.joint_law`); a small instance is also
enumerated as one run and its path certificate re-checked by the independent checker.
"""

from __future__ import annotations

import random

from ..replay import check_certificate
from ..core.dist import exact_str
from ..sequences.context import random_model_pair
from ..sequences.multitoken import prove_sequence
from ..sequences.traversal import Traversal, chain_comparison
from ..sequences.tree_compare import tree_comparison
from .base import PROVED, REFUTED, Claim, ClaimResult

__all__ = ["CLAIMS", "TRAVERSAL_SHAPES", "CHAIN_INSTANCES"]

#: Tree shapes (children per depth) the lossless claim proves, with the pairs per shape.
TRAVERSAL_SHAPES = (((1,), 4), ((1, 1), 4), ((1, 1, 1), 1), ((2,), 4), ((3,), 4),
                    ((2, 1), 4), ((1, 2), 4), ((2, 2), 3), ((3, 1), 2), ((2, 1, 1), 1),
                    ((1, 2, 1), 1))

#: How many random chains the block-verification comparison runs, and their length.
CHAIN_INSTANCES = (200, 2)


def _pairs(seed: int, count: int, zeros: bool = True):
    rng = random.Random(seed)
    return [random_model_pair(rng, 3, 2, zeros=zeros, name=f"random {seed}/{i}")
            for i in range(count)]


def check_traversal_lossless() -> ClaimResult:
    details, certs = [], []
    ok = True
    for index, (branching, count) in enumerate(TRAVERSAL_SHAPES):
        runs = paths = 0
        bad = []
        tokens = []
        for pair in _pairs(1700 + index, count):
            proof = prove_sequence(Traversal(branching), pair, len(branching) + 1)
            runs += 1
            paths += proof.paths
            tokens.append(proof.tokens_per_call)
            if not proof.lossless:
                bad.append(pair.to_table())
        ok = ok and not bad
        details.append(f"branching {list(branching)}, 3 tokens, {count} random context-dependent "
                       f"pairs (zeros allowed), m = {len(branching) + 1}: {paths:,} paths, "
                       f"{'all lossless' if not bad else f'LOSSY on {bad[0]}'}; tokens per "
                       f"call {', '.join(exact_str(t) for t in tokens)}")
    pair = _pairs(1799, 1)[0]
    full = prove_sequence(Traversal((2, 1)), pair, 3, full_paths=True, keep_paths=True)
    composed = prove_sequence(Traversal((2, 1)), pair, 3)
    cert = full.certificate()
    problems = check_certificate(cert)
    certs.append(cert)
    same = full.law == composed.law and full.lossless
    ok = ok and same and not problems
    details.append(f"whole generation in one run = composed calls (branching [2, 1]): {same}; "
                   f"certificate of {full.paths:,} paths re-checked: "
                   f"{'ok' if not problems else problems[:2]}")
    return ClaimResult(PROVED if ok else REFUTED, details, {"parts": certs})


def check_traversal_chain_block() -> ClaimResult:
    details = []
    count, gamma = CHAIN_INSTANCES
    rows = chain_comparison(_pairs(1800, count), gamma)
    differ = [r["instance"] for r in rows if r["traversal"] != r["block"]]
    laws = [r["instance"] for r in rows if not r["same_law"]]
    above = sum(r["traversal"] > r["token"] for r in rows)
    below = [r["instance"] for r in rows if r["traversal"] < r["token"]]
    ok = not differ and not laws and not below
    table = [{"instance": r["instance"], "traversal": exact_str(r["traversal"]),
              "block": exact_str(r["block"]), "token_by_token": exact_str(r["token"]),
              "same_law": r["same_law"], "target": r["pair"].to_table()["target"],
              "draft": r["pair"].to_table()["draft"]} for r in rows]
    details.append(f"{count} random context-dependent pairs (3 tokens, zeros allowed), chains of "
                   f"{gamma}: tokens per call of traversal = block verification on "
                   f"{count - len(differ)} of {count}"
                   + (f" (differ on {differ})" if differ else "")
                   + f"; one-call laws identical on {count - len(laws)}")
    details.append(f"traversal > token by token on {above}, equal on {count - above - len(below)}"
                   f", below on {len(below)}")
    for r in rows[:3]:
        details.append(f"  instance {r['instance']}: traversal {exact_str(r['traversal'])}, "
                       f"block {exact_str(r['block'])}, token by token {exact_str(r['token'])}")
    rows = chain_comparison(_pairs(1801, 20), 3)
    differ3 = [r["instance"] for r in rows if not r["same_law"] or r["traversal"] != r["block"]]
    ok = ok and not differ3
    details.append(f"20 more pairs, chains of 3: identical laws and tokens per call on "
                   f"{20 - len(differ3)} of 20")
    trees = tree_comparison(_pairs(1802, 4, zeros=False), (2, 2))
    for key in ("rrs", "rrs-wor", "optimal", "optimal-wor"):
        wins = sum(r["traversal"] > r[key] for r in trees)
        ties = sum(r["traversal"] == r[key] for r in trees)
        details.append(f"tree [2, 2], 4 pairs without zeros: traversal above {key} on {wins}, "
                       f"equal on {ties}, below on {len(trees) - wins - ties}")
    return ClaimResult(PROVED if ok else REFUTED, details, {"parts": [], "chains": table})


CLAIMS = [
    Claim("traversal-lossless", "Traversal Verification (children drafted without replacement, "
          "verified leaves first with sequence-level acceptance) generates exactly the "
          "target's joint law on chains of 1-3 tokens and trees of 1-3 levels over 3 tokens",
          check_traversal_lossless, issue="17"),
    Claim("traversal-chain-block", "on a single chain Traversal Verification and block "
          "verification have the same exact one-call law and tokens per call on 200 random "
          "instances (gamma = 2) and 20 more (gamma = 3), never below token by token",
          check_traversal_chain_block, issue="17"),
]
