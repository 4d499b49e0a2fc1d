"""Claims about multi-token drafts: chains, token trees, block verification, idealised trees,
and the sequence-level bug classes (docs/math.md, chains and token trees; docs/methods.md "Chains, block
verification, trees").

Every joint law is exact: one call is enumerated on every path from each reachable context and
the calls are composed (:func:`exactspec.sequences.multitoken.joint_law`); on small instances the whole
generation is also enumerated in one run, and those paths go into the certificate for the
independent checker (tokens there are ``m``-tuples written ``"a,b"``).
"""

from __future__ import annotations

import random

from ..sequences.block import BLOCK_CHECK_PAIR, BLOCK_CHECK_VALUES, Block, accepted_per_call, \
    ideal_accepted
from ..sequences.chains import Chain, chain_tokens_per_call, \
    constant_acceptance_pair, leviathan_table, random_constant_acceptance_pair, \
    tokens_per_call_closed_form
from ..replay import check_certificate
from ..sequences.context import ContextPair, context_key, random_model_pair
from ..core.dist import Dist, exact_str
from ..sequences.multitoken import prove_sequence, tokens_per_call
from ..optimum.alpha_star import law_optimum, optimal_acceptance
from ..sequences.trees import Tree, branching_patterns, chain_vs_tree_table, node_rule, \
    positional_tokens_per_call, rrs_positional_probabilities, run_sequence_bugs
from .base import PROVED, REFUTED, Claim, ClaimResult, Split

__all__ = ["CLAIMS", "TREE_RULES", "tree_rules", "IDEAL_PAIRS"]

#: The node rules every two-level tree is proved with (``key`` joins when registered).
TREE_RULES = (("rrs", None), ("rrs-wor", None), ("optimal", None), ("optimal", "wor"))

#: Context-free pairs for the idealised (positional) table: the seed pair, and a pair where
#: the second child often wins.
IDEAL_PAIRS = (("1/2,3/10,1/5", "1/5,1/5,3/5"), ("1/2,1/2,0,0", "1/4,1/4,1/4,1/4"))


def tree_rules() -> list:
    """``TREE_RULES`` plus every registered multi-draft method that is not one of them yet
    (``key`` once it exists), as ``(name, drafts)``."""
    from ..methods import METHODS

    rules = list(TREE_RULES)
    if "key" in METHODS:
        rules.append(("key", None))
    return rules


def _pairs(seed: int, count: int, n: int, depth: int, zeros: bool = True):
    rng = random.Random(seed)
    return [random_model_pair(rng, n, depth, zeros=zeros, name=f"random {seed}/{i}")
            for i in range(count)]


def _certified(verifier, pair, m, details, certs, expect_lossless=True) -> bool:
    """Enumerate the whole generation, certify it, re-check the certificate."""
    proof = prove_sequence(verifier, pair, m, full_paths=True, keep_paths=True)
    cert = proof.certificate()
    problems = check_certificate(cert)
    certs.append(cert)
    ok = proof.lossless == expect_lossless and not problems
    if problems:
        details.append(f"certificate of {verifier!r} rejected: {problems[:2]}")
    return ok


def _composed_equals_full(verifier, pair, m) -> bool:
    full = prove_sequence(verifier, pair, m, full_paths=True)
    composed = prove_sequence(verifier, pair, m)
    return full.law == composed.law


# -- chains --------------------------------------------------------------------------------

def check_chain_lossless() -> ClaimResult:
    details, certs = [], []
    ok = True
    runs = paths = 0
    for gamma in (1, 2, 3):
        for n in (2, 3):
            pairs = _pairs(100 * gamma + n, 6 if n == 2 else 4, n, gamma + 1)
            for pair in pairs:
                for m in (gamma + 1, 2 * gamma + 2):
                    if n == 3 and m > 4 and gamma > 1:
                        continue
                    for lazy in (False, True):
                        proof = prove_sequence(Chain(gamma, lazy=lazy), pair, m)
                        runs += 1
                        paths += proof.paths
                        if not proof.lossless:
                            ok = False
                            details.append(f"gamma={gamma} m={m} lazy={lazy}: differs at "
                                           f"{proof.differs[:3]} on {pair.to_table()}")
                if tokens_per_call(Chain(gamma), pair) != chain_tokens_per_call(pair, gamma):
                    ok = False
                    details.append(f"gamma={gamma}: tokens per call != formula on "
                                   f"{pair.to_table()}")
    details.append(f"chains gamma = 1, 2, 3 on random context-dependent pairs (2 and 3 tokens, "
                   f"zeros allowed, a fresh p and q at every context): the first m = gamma + 1 "
                   f"and 2 gamma + 2 tokens follow prod p(x_i | x_<i) exactly; {runs} proofs "
                   f"(drafts all drawn first, and lazily), {paths:,} paths")
    details.append("exact tokens per call (every path) = 1 + sum_i sum_x prod min(p, q) on every "
                   "pair")
    same = all(_composed_equals_full(Chain(g), pair, g + 1)
               for g in (1, 2) for pair in _pairs(7 + g, 3, 2, 3))
    ok = ok and same
    details.append(f"whole-generation enumeration = composed per-call laws: {same}")
    for gamma, n in ((1, 2), (2, 2), (1, 3)):
        pair = _pairs(900 + gamma + n, 1, n, gamma + 1)[0]
        ok = _certified(Chain(gamma), pair, gamma + 1, details, certs) and ok
    details.append(f"{len(certs)} whole-generation certificates re-checked by the checker")
    return ClaimResult(PROVED if ok else REFUTED, details, {"parts": certs})


def check_chain_tokens_per_call() -> ClaimResult:
    details = []
    ok = True
    rows = leviathan_table()
    for row in rows:
        rounded = f"{float(row['closed_form']):.2f}"
        good = (row["closed_form"] == row["formula"] == row["enumerated"]
                and rounded == row["printed"])
        ok = ok and good
        details.append(f"alpha = {exact_str(row['alpha'])}, gamma = {row['gamma']}: "
                       f"(1 - a^(g+1)) / (1 - a) = {exact_str(row['closed_form'])} "
                       f"= {rounded} (Leviathan Table 1: {row['printed']}); engine "
                       f"{exact_str(row['enumerated'])}")
    count = 0
    rng = random.Random(31)
    for alpha in ("0", "1/5", "1/2", "2/3", "9/10", "1"):
        for gamma in range(0, 4):
            pairs = [constant_acceptance_pair(alpha)] + [
                random_constant_acceptance_pair(rng, alpha, n, gamma) for n in (2, 3)]
            for pair in pairs:
                value = tokens_per_call(Chain(gamma, lazy=True), pair)
                count += 1
                if value != tokens_per_call_closed_form(alpha, gamma):
                    ok = False
                    details.append(f"alpha={alpha} gamma={gamma}: engine {value}")
    details.append(f"constant acceptance alpha in {{0, 1/5, 1/2, 2/3, 9/10, 1}}, gamma 0..3, on "
                   f"the two-token pair and on random context-dependent pairs with acceptance "
                   f"alpha at every context: engine = closed form in all {count} cases")
    inconst = 0
    for pair in _pairs(37, 8, 3, 3):
        for gamma in (1, 2, 3):
            if tokens_per_call(Chain(gamma, lazy=True), pair) != chain_tokens_per_call(pair,
                                                                                     gamma):
                ok = False
            inconst += 1
    details.append(f"varying acceptance: engine = 1 + sum_i sum_x prod min(p, q) in all "
                   f"{inconst} cases")
    table = [{"alpha": exact_str(r["alpha"]), "gamma": r["gamma"],
              "tokens_per_call": exact_str(r["closed_form"]), "printed": r["printed"]}
             for r in rows]
    return ClaimResult(PROVED if ok else REFUTED, details, {"parts": [], "table": table})


# -- trees ---------------------------------------------------------------------------------

def _tree_pairs(seed, count, n, depth, drafts):
    # drafts without replacement need two draftable tokens at each node: no zeros then
    return _pairs(seed, count, n, depth, zeros=(drafts == "iid"))


def _tree_units(pairs_per_rule: int = 6) -> list:
    """Each rule's proofs on each 3-token pair, on the 2-token pairs, and eager = lazy with
    its certificate; then the seed pair's tokens per call.  Weights: rough seconds."""
    units = []
    for r, (name, _) in enumerate(tree_rules()):
        scale = 3.0 if name == "key" else 1.0
        units += [(("pair3", r, i), scale * (3.0 if i < 2 else 0.2))
                  for i in range(pairs_per_rule)]
        units += [(("pair2", r), 0.5 * scale), (("eager", r), 0.3)]
    return units + [(("tail",), 1.0)]


def _tree_part(unit, pairs_per_rule: int = 6):
    kind = unit[0]
    if kind == "tail":
        return _tree_tail()
    name, drafts = tree_rules()[unit[1]]
    rule = node_rule(name, drafts)
    runs = paths = 0
    bad = []
    if kind == "pair3":
        i = unit[2]
        pair = _tree_pairs(500 + len(name), pairs_per_rule, 3, 3, rule.draft_law)[i]
        for m in ((3, 5) if i < 2 else (3,)):
            proof = prove_sequence(Tree((2, 2), rule), pair, m)
            runs += 1
            paths += proof.paths
            if not proof.lossless:
                bad.append((m, pair.to_table()))
        return runs, paths, bad
    if kind == "pair2":
        for pair in _tree_pairs(600 + len(name), 4, 2, 3, rule.draft_law):
            for branching in ((2,), (2, 1), (1, 2), (2, 2)):
                proof = prove_sequence(Tree(branching, rule), pair, len(branching) + 1)
                runs += 1
                paths += proof.paths
                if not proof.lossless:
                    bad.append((branching, pair.to_table()))
        return runs, paths, bad
    pair = _tree_pairs(700 + len(name), 1, 2, 2, rule.draft_law)[0]
    eager = prove_sequence(Tree((2, 2), rule, lazy=False), pair, 3)
    lazy = prove_sequence(Tree((2, 2), rule), pair, 3)
    same = eager.law == lazy.law and eager.tokens_per_call == lazy.tokens_per_call
    details, certs = [], []
    certified = _certified(Tree((2,), rule), pair, 2, details, certs)
    return same, eager.lossless, certified, details, certs


def _tree_tail():
    """Tokens per call on the seed pair, context-free, and the negative control."""
    details = []
    p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
    pair = ContextPair.context_free(p, q)
    rrs = tokens_per_call(Tree((2, 2), "rrs"), pair)
    positional = positional_tokens_per_call((2, 2), rrs_positional_probabilities(p, q, 2))
    a = optimal_acceptance(p, q, 2)
    b = law_optimum(p, q, 2, "wor")
    opt = tokens_per_call(Tree((2, 2), "optimal"), pair)
    opt_wor = tokens_per_call(Tree((2, 2), "optimal", "wor"), pair)
    good = rrs == positional and opt == 1 + a + a * a and opt_wor == 1 + b + b * b
    ok = good
    details.append(f"seed pair, branching (2, 2): tokens per call rrs {exact_str(rrs)} "
                   f"(= positional model), rrs-wor "
                   f"{exact_str(tokens_per_call(Tree((2, 2), 'rrs-wor'), pair))}, optimal "
                   f"{exact_str(opt)} = 1 + a* + a*^2 (a* = {exact_str(a)}), optimal-wor "
                   f"{exact_str(opt_wor)}")
    if ("key", None) in tree_rules():
        key = tokens_per_call(Tree((2, 2), "key"), pair)
        ok = ok and key == opt
        details.append(f"key (realises a*): tokens per call {exact_str(key)} = optimal's")
    mismatch = prove_sequence(Tree((2, 2), "rrs", "wor"), pair, 3)
    ok = ok and not mismatch.lossless
    details.append(f"negative control: the rrs rule on children drafted without replacement is "
                   f"lossy, TV = {exact_str(mismatch.tv)}")
    return ok, details


def _tree_merge(tallies, pairs_per_rule: int = 6) -> ClaimResult:
    details, certs = [], []
    ok = True
    by_unit = dict(zip((unit for unit, _ in _tree_units(pairs_per_rule)), tallies))
    for r, (name, drafts) in enumerate(tree_rules()):
        rule = node_rule(name, drafts)
        runs = paths = 0
        bad = []
        for unit in [("pair3", r, i) for i in range(pairs_per_rule)] + [("pair2", r)]:
            more_runs, more_paths, more_bad = by_unit[unit]
            runs += more_runs
            paths += more_paths
            bad += more_bad
        ok = ok and not bad
        details.append(f"rule {rule.name} (drafts {rule.draft_law}): two levels, two children, "
                       f"3 tokens, {pairs_per_rule} random context-dependent pairs, m = 3 "
                       f"(and 5 on two); "
                       f"2 tokens, "
                       f"branchings (2), (2,1), (1,2), (2,2): {runs} proofs, {paths:,} paths, "
                       f"{'all lossless' if not bad else f'LOSSY on {bad[:1]}'}")
        same, eager_lossless, certified, cert_details, cert_parts = by_unit["eager", r]
        ok = ok and same and eager_lossless
        details.append(f"  whole tree drafted first = drafted lazily (law and tokens per call): "
                       f"{same}")
        details += cert_details
        certs += cert_parts
        ok = certified and ok
    tail_ok, tail_details = by_unit["tail",]
    details += tail_details
    ok = ok and tail_ok
    return ClaimResult(PROVED if ok else REFUTED, details, {"parts": certs})


TREE_LOSSLESS = Split(units=_tree_units, part=_tree_part, merge=_tree_merge)


def check_tree_lossless(pairs_per_rule: int = 6) -> ClaimResult:
    return TREE_LOSSLESS.whole(pairs_per_rule=pairs_per_rule)


# -- block verification --------------------------------------------------------------------

def check_block_verification() -> ClaimResult:
    details, certs = [], []
    pair = ContextPair.context_free(*BLOCK_CHECK_PAIR)
    values = {"token": accepted_per_call(Chain(2), pair),
              "block": accepted_per_call(Block(2), pair), "ideal": ideal_accepted(pair, 2)}
    ok = values == BLOCK_CHECK_VALUES
    details.append(f"two-token example, gamma = 2: expected accepted draft tokens "
                   f"{exact_str(values['token'])} token by token, {exact_str(values['block'])} "
                   f"by blocks, {exact_str(values['ideal'])} ideal (check values 10/9, 11/9, "
                   f"12/9)")
    runs = 0
    order = True
    for gamma in (1, 2, 3):
        for n in (2, 3):
            for pair in _pairs(300 + 10 * gamma + n, 5 if n == 2 else 3, n, gamma + 1):
                for m in ((gamma + 1, 2 * gamma + 2) if n == 2 else (gamma + 1,)):
                    proof = prove_sequence(Block(gamma), pair, m)
                    runs += 1
                    if not proof.lossless:
                        ok = False
                        details.append(f"block gamma={gamma} m={m} LOSSY on {pair.to_table()}")
                tok = accepted_per_call(Chain(gamma), pair)
                blk = accepted_per_call(Block(gamma), pair)
                if not tok <= blk <= ideal_accepted(pair, gamma):
                    order = False
    ok = ok and order
    details.append(f"block verification, gamma = 1, 2, 3, random context-dependent pairs (2 and 3 "
                   f"tokens): the first m tokens follow the target's joint law exactly in all "
                   f"{runs} proofs")
    details.append(f"token by token <= blocks <= ideal on every pair: {order}")
    for gamma in (1, 2):
        ok = _certified(Block(gamma), _pairs(950 + gamma, 1, 2, 3)[0], gamma + 1, details,
                        certs) and ok
    return ClaimResult(PROVED if ok else REFUTED, details, {"parts": certs})


# -- idealised trees -----------------------------------------------------------------------

def check_idealised_trees() -> ClaimResult:
    details = []
    ok = True
    tables = []
    for p_text, q_text in IDEAL_PAIRS:
        p, q = Dist.parse(p_text), Dist.parse(q_text)
        pair = ContextPair.context_free(p, q)
        P = rrs_positional_probabilities(p, q, 6)
        checked = 0
        for n in (1, 2, 3, 4):
            for branching in branching_patterns(n):
                engine = tokens_per_call(Tree(branching, "rrs"), pair)
                if engine != positional_tokens_per_call(branching, P):
                    ok = False
                    details.append(f"{branching}: engine {engine} != positional")
                checked += 1
        rows = chain_vs_tree_table(P, (1, 2, 3, 4, 5, 6, 8))
        for row in rows:
            if row["drafted"] == 6:
                engine = tokens_per_call(Tree(row["best_tree"], "rrs"), pair)
                checked += 1
                ok = ok and engine == row["best_tree_tokens"]
        alpha = P[0]
        ok = ok and all(positional_tokens_per_call((1,) * g, P)
                        == tokens_per_call_closed_form(alpha, g) for g in range(8))
        details.append(f"p = ({p_text}), q = ({q_text}), RRS at every node: P = "
                       f"({', '.join(exact_str(v) for v in P)}, ...); the positional model "
                       f"equals the exact engine on all {checked} branchings checked")
        details.append("  drafted | chain tokens/call | best branching | its tokens/call")
        for row in rows:
            details.append(f"  {row['drafted']:7} | {exact_str(row['chain']):>14} "
                           f"({float(row['chain']):.4f}) | {str(row['best_tree']):14} | "
                           f"{exact_str(row['best_tree_tokens'])} "
                           f"({float(row['best_tree_tokens']):.4f})")
        tables.append({"p": p_text, "q": q_text, "P": [exact_str(v) for v in P],
                       "rows": [{"drafted": r["drafted"], "chain": exact_str(r["chain"]),
                                 "best_tree": list(r["best_tree"]),
                                 "best_tree_tokens": exact_str(r["best_tree_tokens"])}
                                for r in rows]})
    details.append("the chain (1, ..., 1) under P gives (1 - a^(g+1)) / (1 - a) with a = P[1]")
    return ClaimResult(PROVED if ok else REFUTED, details, {"parts": [], "tables": tables})


# -- sequence-level bugs -------------------------------------------------------------------

def _law_text(law: dict) -> str:
    return ", ".join(f"{context_key(t)}: {exact_str(w)}" for t, w in sorted(law.items()))


def check_sequence_bugs() -> ClaimResult:
    details, certs = [], []
    ok = True
    for row in run_sequence_bugs():
        bug_ok = (not row["buggy_lossless"]) and row["correct_lossless"]
        details.append(f"{row['name']}: {row['description']}")
        details.append(f"  instance {row['pair']}, first {row['m']} tokens")
        details.append(f"  buggy law  {_law_text(row['law'])}")
        details.append(f"  target     {_law_text(row['target'])}")
        details.append(f"  TV = {exact_str(row['tv'])}; correct version "
                       f"{'PROVED lossless' if row['correct_lossless'] else 'LOSSY'}")
        bad, good = row["buggy"], row["correct"]
        bug_ok = _certified(bad.verifier, bad.pair, bad.m, details, certs,
                            expect_lossless=False) and bug_ok
        bug_ok = _certified(good.verifier, good.pair, good.m, details, certs) and bug_ok
        ok = ok and bug_ok
    details.append(f"{len(certs)} certificates (buggy laws and correct versions) re-checked")
    return ClaimResult(PROVED if ok else REFUTED, details, {"parts": certs})


CLAIMS = [
    Claim("chain-lossless", "a gamma-token chain with the bonus token (gamma = 1, 2, 3) "
          "generates exactly the target's joint law: the first m tokens, over as many target "
          "calls as needed, follow prod_i p(x_i | x_<i)", check_chain_lossless, issue="7"),
    Claim("chain-tokens-per-call", "a chain's expected tokens per target call is "
          "1 + sum_i sum_x prod min(p, q), which is (1 - alpha^(gamma+1)) / (1 - alpha) when "
          "the acceptance is alpha at every context (Leviathan Table 1: 1.96, 3.69, 6.86)",
          check_chain_tokens_per_call, issue="7"),
    Claim("tree-lossless", "token trees of two levels with two children (vocabulary 3), "
          "verified node by node with rrs, rrs-wor, optimal (i.i.d. and without "
          "replacement) or key (when registered), generate exactly the target's joint law",
          check_tree_lossless,
          issue="7", fast={"pairs_per_rule": 2}, split=TREE_LOSSLESS),
    Claim("block-verification", "block verification generates exactly the target's joint law "
          "(gamma = 1, 2, 3) and accepts 11/9 draft tokens on the two-token example, between "
          "token by token (10/9) and ideal (12/9)", check_block_verification, issue="7"),
    Claim("idealised-trees", "under Sequoia's positional model the tokens per call of a tree "
          "is sum over nodes of prod P[position]; for a context-free pair with RRS at every "
          "node this is exact", check_idealised_trees, issue="7"),
    Claim("sequence-bugs", "three sequence-level bugs are lossy, with their exact laws (bonus "
          "from the first position's target, bonus from a stale residual, rejected draft kept "
          "in the output), and their fixes are lossless", check_sequence_bugs, issue="7"),
]
