"""The vocabulary-generic interpreter: proofs for every vocabulary size, its refusals, its
closed forms against exact enumeration, and its certificates under the sympy checker."""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy

from exactspec.claims.generic import family, generic_certificate
from exactspec.core.dist import Dist, overlap
from exactspec.engine.exact import enumerate_paths
from exactspec.engine.generic import NotGeneric, prove_generic
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
