"""The vocabulary-generic interpreter: proofs for every vocabulary size, its refusals, its
closed forms against exact enumeration, and its certificates under the sympy checker."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
import sympy

from exactspec.claims.generic import family, generic_certificate
from exactspec.core.dist import Dist, overlap
from exactspec.core.random_dists import random_pair
from exactspec.engine.exact import enumerate_paths
from exactspec.engine.generic import NotGeneric, prove_generic
from exactspec.engine.symbolic import prove_symbolic
from exactspec.generic_checker import check_generic_certificate
from exactspec.methods.naive import naive
from exactspec.methods.rrs_wor import rrs_wor
from exactspec.methods.sps import sps
from exactspec.methods.top1 import top1


@pytest.fixture(scope="module")
def sps_proof():
    return prove_generic(sps, expected_acceptance=lambda p, q, k: overlap(p, q))


def test_naive_refuted_for_every_size_with_law_q():
    proof = prove_generic(naive)
    assert proof.verdict == "refuted"
    assert {str(c.law["t"]) for c in proof.cases} <= {"q_t", "0"}
    for n in range(2, 7):
        p, q = family(n)
        case, law, _ = proof.law_at(p, q, 0)
        assert law == Fraction(1, 4) == enumerate_paths(naive, p, q).law[0] != p[0]


def test_refusals_name_the_reason():
    assert "two tokens" in prove_generic(top1).outside or \
        "linear homogeneous" in prove_generic(top1).outside
    assert "without replacement" in prove_generic(rrs_wor, 2).outside

    def uses_a_constant(s, p, q, k=1):
        masses = [a + Fraction(1, 10) for a in p.probs]   # not a sum, not scale-free
        return s.draw(Dist(masses, p.labels, check=False))

    assert prove_generic(uses_a_constant).outside

    def flips_twice(s, p, q, k=1):        # weight q_x (p_x/q_x)^2: not linear in the token
        x = s.draft(q)
        r = min(1, p[x] / q[x])
        if s.coin(r) and s.coin(r):
            return s.accept(x)
        return x

    assert "not linear" in prove_generic(flips_twice).outside


def test_not_generic_is_invalid_input():
    assert issubclass(NotGeneric, ValueError)


@pytest.mark.slow
def test_one_draft_rule_proved_for_every_size(sps_proof):
    assert sps_proof.verdict == "proved"
    assert all(c.law["t"] == sympy.Symbol("p_t", nonnegative=True) or c.law["t"] == 0
               for c in sps_proof.cases)
    assert all(c.total == 1 for c in sps_proof.cases)
    cert = generic_certificate(sps_proof, "sps lossless for every size")
    assert check_generic_certificate(cert) == []


# The closed form against exact enumeration (random instances on 2-8 tokens, and at the
# per-size symbolic proofs' witnesses), and the wrong residual refuted with its family, are
# the claims lossless-rule (cross_check on 21 instances; per-size symbolic proofs on 1-4
# tokens) and lossy-every-size (refuted, the family exact = closed form on 2-8 tokens), whose
# certificates the generic checker re-checks, tying every case's closed form to exact
# enumeration at a witness point (tests/test_claims.py).


def test_checker_rejects_a_tampered_certificate():
    proof = prove_generic(naive)
    cert = generic_certificate(proof, "naive")
    assert check_generic_certificate(cert) == []
    bad = dict(cert, cases=[dict(c, verdict="proved") for c in cert["cases"]])
    assert check_generic_certificate(bad)
    short = dict(cert, infeasible=[])
    assert check_generic_certificate(short)


@pytest.mark.slow
def test_where_the_abstraction_stops_is_said_plainly():
    from exactspec.claims.generic import check_reach

    result = check_reach()
    text = "\n".join(result.details)
    assert result.verdict == "UNDECIDED"
    assert "rrs-wor (k = 2): OUTSIDE" in text and "without replacement" in text
    assert "kseq (k = 2, rho*): OUTSIDE" in text


def test_a_prefix_sum_over_the_rest_is_caught_by_the_order_check():
    def first_slots(s, p, q, k=1):
        x = s.draft(q)
        head = sum(list(q.probs)[:2], 0)          # a sum over part of the vocabulary
        if s.coin(min(1, head), "keep"):
            return s.accept(x)
        return s.draw(p, "resample")

    proof = prove_generic(first_slots)
    assert proof.outside is not None


def _balance_leaf(t_value="p_t - q_t", split_sign=0):
    """A leaf pruned by the balance of ``S = sum (p - q)^+`` over ``t`` and one class ``R``
    with ``p < q`` on every token of ``R``: ``S = (p_t - q_t) = Q_R - P_R > 0``."""
    balance = {"sum": "p_t - q_t", "atom": "p_t - q_t", "atom_sign": 1, "owners": ["t"],
               "strict": True, "strictly_negative": "t2",
               "terms": [["t", t_value, 1, True], ["rest[R]", "P_R - Q_R", -1, False],
                         ["t2", "p_t2 - q_t2", -1, True]]}
    variables = ["p_t", "p_t2", "q_t", "q_t2", "P_R", "Q_R"]
    return {"path": [["aggregate", "p_t - q_t", split_sign]], "conditions": [],
            "variables": variables,
            "equalities": ["p_t + p_t2 + P_R - 1", "q_t + q_t2 + Q_R - 1"],
            "facts": [], "nonnegative": [], "balances": [balance]}


def test_checker_rechecks_the_balance_identity():
    from exactspec.generic_checker import _balance_problems, _parse, _symbols

    def problems(leaf):
        symbols = _symbols({}, leaf)
        variables = [symbols[v] for v in leaf["variables"]]
        equalities = [_parse(e, symbols) for e in leaf["equalities"]]
        return _balance_problems(leaf, symbols, variables, equalities)

    assert problems(_balance_leaf()) == []
    assert problems(_balance_leaf(split_sign=-1)) == []
    # the balance does not exclude S > 0, an entry that breaks the zero sum is caught
    assert problems(_balance_leaf(split_sign=1))
    assert problems(_balance_leaf(t_value="p_t - 2*q_t"))


# -- RRS with two drafts, for every vocabulary size ----------------------------------------
# The proof is derived once, by the claim rrs-every-size in the suite's background run of
# ``exactspec prove --full`` (conftest.py), which also re-derives every case's identities
# from the recorded path sums; the tests here read the certificate it wrote.
@pytest.fixture(scope="module")
def rrs_certificate(full_prove_run):
    import json

    _, out, _, folder = full_prove_run
    results = {r["name"]: r for r in json.loads(out)["claims"]}
    claim = json.loads((folder / "rrs-every-size.json").read_text())
    (cert,) = [part for part in claim["parts"] if "cases" in part]
    return results["rrs-every-size"], cert


@pytest.mark.slow
def test_rrs_two_drafts_proved_for_every_size(rrs_certificate):
    result, cert = rrs_certificate
    assert result["verdict"] == "PROVED" and cert["verdict"] == "proved"
    # the full run re-derived the identities from the path sums and found them sound
    assert any("identities re-derived from the path sums): OK" in line
               for line in result["details"]), result["details"]
    assert check_generic_certificate(cert, path_sums=False) == []
    assert {c["law"]["t"] for c in cert["cases"]} <= {"p_t", "0"}
    assert all(c["verdict"] == "proved" for c in cert["cases"])
    # the names of sums (_S1, _S2) stay inside the engine: no fact, condition, law or leaf
    # of the certificate mentions one (only the recorded path sums do)
    import json

    shown = json.dumps([{k: v for k, v in c.items() if k != "sums"} for c in cert["cases"]] +
                       cert["infeasible"], default=str)
    assert "_S" not in shown and all(c["sums"]["names"] for c in cert["cases"])
    # a tampered certificate is rejected: a wrong law, a missing infeasible leaf
    wrong = dict(cert, cases=[dict(c, law={"t": "q_t"}) for c in cert["cases"]])
    assert check_generic_certificate(wrong, path_sums=False)
    assert check_generic_certificate(dict(cert, infeasible=cert["infeasible"][1:]),
                                     path_sums=False)


def _rrs_instances():
    """Random rational pairs of 2-8 tokens, and hand-made ties and zeros: ``p = q``, disjoint
    supports, ``r_1 = (1, 0, 0)``, and ``r_1(0) = q(0)`` (a token on the second residual's
    boundary)."""
    rng = random.Random(11)
    pairs = [random_pair(rng, n) for n in range(2, 9) for _ in range(2)]
    for p, q in (("1/2,1/2", "1/2,1/2"), ("1,0,0", "0,1/2,1/2"),
                 ("1/2,1/4,1/4", "1/4,1/4,1/2"), ("3/8,5/8,0", "1/4,1/4,1/2")):
        pairs.append((Dist.parse(p), Dist.parse(q)))
    return pairs


@pytest.mark.slow
def test_rrs_closed_form_matches_enumeration_and_the_product_formula(rrs_certificate):
    from exactspec.bounds.closed_forms import rrs_acceptance
    from exactspec.engine.generic import certificate_law_at
    from exactspec.methods.rrs import rrs

    cert = rrs_certificate[1]
    cases = set()
    for p, q in _rrs_instances():
        exact = enumerate_paths(rrs, p, q, 2, max_paths=None)
        for t in p.labels:
            case, law, acc = certificate_law_at(cert, p, q, t)
            cases.add(case)
            assert law == exact.law[t] == p[t]
            assert acc == exact.explicit_acceptance == rrs_acceptance(p, q, 2)
    assert len(cases) >= 6                               # the instances reach many cases


@pytest.mark.slow
def test_rrs_matches_the_per_size_symbolic_proof(rrs_certificate):
    from exactspec.bounds.closed_forms import rrs_acceptance
    from exactspec.engine.generic import certificate_law_at
    from exactspec.methods.rrs import rrs

    # the per-size engine reaches two tokens (zeros allowed) with two drafts; on three
    # tokens it stops at a case it cannot rule out
    proof = prove_symbolic(rrs, 2, 2, positive=False)
    assert proof.verdict == "proved"
    for case in proof.cases:
        for w in case.witnesses:
            for t in w["p"].labels:
                _, law, acc = certificate_law_at(rrs_certificate[1], w["p"], w["q"], t)
                assert law == w["enumeration"].law[t] == w["p"][t]
                assert acc == rrs_acceptance(w["p"], w["q"], 2)


def test_checker_substitutes_variables_fixed_to_zero():
    from exactspec.generic_checker import _strictly_feasible

    p_t, q_t, x = sympy.symbols("p_t q_t x")
    facts = [(q_t, 0), (p_t, 1), (q_t * x - p_t, 1)]     # q_t = 0 makes the last one -p_t > 0
    assert not _strictly_feasible([p_t, q_t, x], [], facts)
    # without the fixed zero the nonlinear fact is not linear, so nothing is excluded
    assert _strictly_feasible([p_t, q_t, x], [], facts[1:])


def test_checker_rechecks_a_balance_against_a_fixed_sign():
    from exactspec.generic_checker import _balance_problems, _parse, _symbols

    def problems(leaf):
        symbols = _symbols({}, leaf)
        variables = [symbols[v] for v in leaf["variables"]]
        equalities = [_parse(e, symbols) for e in leaf["equalities"]]
        return _balance_problems(leaf, symbols, variables, equalities)

    # the sum's sign was fixed by an earlier split (a fact of the leaf), not by its last step
    leaf = dict(_balance_leaf(), path=[["aggregate", "p_t - q_t", 0], ["empty", "R", False]],
                facts=[["p_t - q_t", 0]])
    assert problems(leaf) == []
    assert problems(dict(leaf, facts=[["p_t - q_t", 1]]))       # a sign the balance allows
    assert problems(dict(leaf, facts=[]))                          # nothing excluded at all


def test_checker_rederives_the_identities_from_the_path_sums():
    def resample(s, p, q, k=1):                      # draws from p: law p, in one case
        x = s.draft(q)
        return s.draw(p, "output") if x is not None else x

    def about_sums(cert, **kw):      # (a local method: its witnesses cannot be replayed)
        return [m for m in check_generic_certificate(cert, **kw) if "does not vanish" in m]

    proof = prove_generic(resample, name="resample")
    assert proof.verdict == "proved"
    cert = generic_certificate(proof, "resample")
    assert all(c["sums"]["law"] for c in cert["cases"]) and about_sums(cert) == []
    tampered = dict(cert, cases=[dict(c, sums=dict(c["sums"], law={"t": "p_t + q_t/7"}))
                                 for c in cert["cases"]])
    assert about_sums(tampered)
    assert about_sums(tampered, path_sums=False) == []


def test_checker_reads_the_generic_parts_of_a_claim_certificate():
    cert = generic_certificate(prove_generic(naive), "naive")
    claim = {"kind": "exactspec-claim-certificate", "parts": [{"kind": "other"}, cert]}
    assert check_generic_certificate(claim) == []
    assert check_generic_certificate(dict(claim, parts=[dict(cert, infeasible=[])]))
    assert check_generic_certificate(dict(claim, parts=[]))
