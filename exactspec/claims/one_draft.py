"""Claims about the one-draft rule and its lossy look-alikes (docs/math.md#the-one-draft-rule)."""

from __future__ import annotations

import random
from fractions import Fraction
from itertools import islice

from ..replay import check_certificate
from ..core.dist import Dist, exact_str, overlap, total_variation
from ..engine.symbolic import prove_symbolic
from ..methods.naive import naive
from ..methods.sps import sps, sps_uniforms
from ..methods.top1 import top1
from ..verify import verify
from .base import PROVED, REFUTED, UNDECIDED, Claim, ClaimResult, Split, index_blocks, \
    random_pair, symbolic_certificate

CORPUS_SIZE = 300
#: The fast corpus of ``exactspec prove`` (the full one is what ``proofs/*.py`` run).
FAST_SIZE = 60
SEED_P = Dist.parse("1/2,3/10,1/5", labels="abc")
SEED_Q = Dist.parse("1/5,1/5,3/5", labels="abc")


def _corpus(seed: int = 2024, size: int = CORPUS_SIZE):
    rng = random.Random(seed)
    yield SEED_P, SEED_Q
    for i in range(size - 1):
        yield random_pair(rng, 1 + i % 5)


def _symbolic_one(method, n, positive, statement, **kw):
    """One symbolic proof: ``(verdicts, details, certificates)``."""
    details, verdicts = [], []
    proof = prove_symbolic(method, n, positive=positive, **kw)
    verdicts.append(proof.verdict)
    counts = {v: sum(c.verdict == v for c in proof.cases) for v in
              ("proved", "refuted", "undecided")}
    where = "p_i, q_i > 0" if positive else "zero entries allowed"
    details.append(f"{n} tokens ({where}): {len(proof.cases)} feasible sign cases, "
                   f"{proof.infeasible} infeasible; {counts}")
    cert = symbolic_certificate(proof, statement)
    problems = check_certificate(cert)
    if problems:
        verdicts.append("undecided")
        details.append(f"  witness certificates rejected: {problems[:3]}")
    return verdicts, details, [cert]


def _symbolic(method, sizes_positive, sizes_zero, statement, **kw):
    details, certs, verdicts = [], [], []
    for n, positive in [(n, True) for n in sizes_positive] + [(n, False) for n in sizes_zero]:
        more = _symbolic_one(method, n, positive, statement, **kw)
        verdicts += more[0]
        details += more[1]
        certs += more[2]
    return verdicts, details, certs


def _verdict(verdicts) -> str:
    if "refuted" in verdicts:
        return REFUTED
    if "undecided" in verdicts:
        return UNDECIDED
    return PROVED


#: Rough seconds of each symbolic proof of the one-draft rule, for scheduling.
_SYMBOLIC_SECONDS = {1: 0.1, 2: 0.2, 3: 1.2, 4: 7.2}


def _lossless_rule_units(size: int = CORPUS_SIZE, symbolic_sizes=(1, 2, 3, 4)) -> list:
    """The generic every-size proof, the exact corpus in blocks, each symbolic proof."""
    return ([(("generic",), 8.5)]
            + [(("exact",) + block, weight / 100)
               for block, weight in index_blocks([1] * size, 100)]
            + [(("symbolic", n, True), _SYMBOLIC_SECONDS.get(n, 30.0)) for n in symbolic_sizes]
            + [(("symbolic", 2, False), 0.3)])


def _lossless_rule_part(unit, size: int = CORPUS_SIZE, symbolic_sizes=(1, 2, 3, 4)):
    kind = unit[0]
    if kind == "exact":
        paths, failures = 0, []
        for p, q in islice(_corpus(size=size), unit[1], unit[2]):
            for method in (sps, sps_uniforms):
                r = verify(method, p, q, keep_paths=True)
                paths += r.paths
                if not r.lossless or check_certificate(r.certificate()):
                    failures.append(f"exact failure at p={p}, q={q} ({method.__name__})")
        return paths, failures
    if kind == "symbolic":
        return _symbolic_one(sps, unit[1], unit[2], "the one-draft rule's output law is p",
                             expected_acceptance=lambda p, q, k: overlap(p, q))
    from .generic import cross_check, one_draft_every_size

    proof, generic_cert, problems = one_draft_every_size()
    count, bad = cross_check(proof, sps)
    line = (f"for every vocabulary size (generic interpreter): {proof.verdict.upper()}"
            f" in all {len(proof.cases)} cases ({len(proof.infeasible)} infeasible), "
            f"law(t) = p(t) and acceptance = sum min(p, q); certificate re-checked by "
            f"the sympy checker: {'OK' if not problems else problems[:2]}; closed form = "
            f"exact enumeration on {count} random instances (2-8 tokens): "
            f"{'all agree' if not bad else f'{len(bad)} disagree'}")
    failed = proof.verdict != "proved" or bool(problems) or bool(bad)
    return line, generic_cert, failed, proof.verdict


def _lossless_rule_merge(tallies, size: int = CORPUS_SIZE, symbolic_sizes=(1, 2, 3, 4)):
    units = _lossless_rule_units(size, symbolic_sizes)
    details, certs, verdicts = [], [], []
    paths = 0
    generic = None
    for (unit, _), tally in zip(units, tallies):
        if unit[0] == "exact":
            paths += tally[0]
            details += tally[1]
        elif unit[0] == "symbolic":
            verdicts += tally[0]
            certs += tally[2]
        else:
            generic = tally
    exact_ok = not details
    details.append(f"exact: {size} random rational instances (1-5 tokens, zeros "
                   f"allowed), two formulations, {paths} paths, certificates re-checked")
    details += ["symbolic (law = p and acceptance = sum min(p, q) in every case):"] + \
        ["  " + d for (unit, _), tally in zip(units, tallies) if unit[0] == "symbolic"
         for d in tally[1]]
    line, generic_cert, failed, generic_verdict = generic
    details.insert(0, line)
    if failed:
        verdicts.append("undecided" if generic_verdict != "refuted" else "refuted")
    certs.insert(0, generic_cert)
    verdict = _verdict(verdicts) if exact_ok else REFUTED
    return ClaimResult(verdict, details, {"parts": certs})


LOSSLESS_RULE = Split(units=_lossless_rule_units, part=_lossless_rule_part,
                      merge=_lossless_rule_merge)


def check_lossless_rule(size: int = CORPUS_SIZE, symbolic_sizes=(1, 2, 3, 4)) -> ClaimResult:
    return LOSSLESS_RULE.whole(size=size, symbolic_sizes=symbolic_sizes)


def check_acceptance(size: int = CORPUS_SIZE) -> ClaimResult:
    details = []
    bad = []
    for p, q in _corpus(seed=7, size=size):
        r = verify(sps, p, q)
        if r.acceptance != 1 - total_variation(p, q) or r.acceptance != overlap(p, q):
            bad.append((p, q, r.acceptance))
    details.append(f"exact: P(accept) = 1 - TV(p, q) = sum min(p, q) on {size} "
                   f"instances; failures: {len(bad)}")
    verdicts, sym_details, certs = _symbolic(
        sps, (2, 3), (2,), "P(accept) of the one-draft rule is 1 - TV(p, q)",
        expected_acceptance=lambda p, q, k: 1 - total_variation(p, q))
    details += ["symbolic: acceptance - (1 - TV) cancels in every case:"] + \
        ["  " + d for d in sym_details]
    verdict = REFUTED if bad else _verdict(verdicts)
    return ClaimResult(verdict, details, {"parts": certs})


def check_naive_bias(size: int = CORPUS_SIZE, symbolic_sizes=(2, 3, 4)) -> ClaimResult:
    details = []
    bad = 0
    for p, q in _corpus(seed=11, size=size):
        r = verify(naive, p, q)
        if r.law_dist() != q or r.bias != total_variation(q, p):
            bad += 1
    details.append(f"exact: the naive law is q and its bias TV(law, p) = TV(q, p) on "
                   f"{size} instances; failures: {bad}")
    verdicts, sym_details, certs = _symbolic(
        naive, symbolic_sizes, (2, 3), "the naive rule's output law is q",
        expected_law=lambda p, q, k: q)
    details += ["symbolic: the naive law equals q in every case:"] + \
        ["  " + d for d in sym_details]
    verdict = REFUTED if bad else _verdict(verdicts)
    return ClaimResult(verdict, details, {"parts": certs})


def check_top1_lossy(size: int = CORPUS_SIZE) -> ClaimResult:
    """Top-1 matching puts all mass on argmax p: lossy for every p that is not a point mass."""
    from ..methods.top1 import argmax

    p, q = SEED_P, SEED_Q
    r = verify(top1, p, q, keep_paths=True)
    details = [f"counterexample p={p}, q={q}: law {r.law_dist()}, TV to p {exact_str(r.bias)}"]
    counter_ok = (not r.lossless) and not check_certificate(r.certificate())
    bad = 0
    for p, q in _corpus(seed=13, size=size):
        law = verify(top1, p, q).law_dist()
        point = Dist([1 if lab == argmax(p) else 0 for lab in p.labels], p.labels)
        if law != point:
            bad += 1
    details.append(f"exact: the top-1 law is the point mass on argmax p on {size} "
                   f"instances; failures: {bad}")
    verdict = PROVED if counter_ok and not bad else REFUTED
    return ClaimResult(verdict, details, {"parts": [r.certificate()]})


CLAIMS = [
    Claim("lossless-rule", "the one-draft rule (accept with min(1, p/q), else resample "
          "norm(max(0, p - q))) outputs exactly p and accepts with sum min(p, q), for every "
          "vocabulary size and every p and q (zeros allowed)", check_lossless_rule,
          issue="foundation", fast={"size": FAST_SIZE, "symbolic_sizes": (1, 2, 3)},
          split=LOSSLESS_RULE),
    Claim("acceptance-1-tv", "the one-draft rule accepts with probability "
          "sum min(p, q) = 1 - TV(p, q)", check_acceptance, issue="foundation",
          fast={"size": FAST_SIZE}),
    Claim("naive-bias", "keeping every draft outputs q, so its bias is TV(q, p)",
          check_naive_bias, issue="foundation", fast={"size": FAST_SIZE,
                                                      "symbolic_sizes": (2, 3)}),
    Claim("top1-lossy", "accepting only the target's argmax is lossy: its law is the point "
          "mass on argmax p", check_top1_lossy, issue="foundation",
          fast={"size": FAST_SIZE}),
]
