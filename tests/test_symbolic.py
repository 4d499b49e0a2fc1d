"""The symbolic interpreter: case splits over signs, verdicts, witness re-checks."""

import pytest
import sympy

from exactspec.replay import check_certificate
from exactspec.claims.base import symbolic_certificate
from exactspec.core.dist import overlap
from exactspec.engine.symbolic import Case, SymbolicValue, prove_symbolic, symbolic_dists
from exactspec.core.errors import Undecided
from exactspec.methods.naive import naive
from exactspec.methods.sps import sps, sps_uniforms


def test_sps_on_three_tokens_every_sign_pattern():
    proof = prove_symbolic(sps, 3, expected_acceptance=lambda p, q, k: overlap(p, q))
    assert proof.verdict == "proved"
    # sign patterns of p - q on 3 tokens with equal sums: 27 - 7 - 7 = 13
    assert len(proof.cases) == 13
    assert check_certificate(symbolic_certificate(proof, "sps")) == []


def test_sps_with_explicit_uniforms_and_zero_entries():
    proof = prove_symbolic(sps_uniforms, 2, positive=False)
    assert proof.verdict == "proved"
    assert len(proof.cases) == 11


def test_naive_is_refuted_with_a_witness():
    proof = prove_symbolic(naive, 2)
    assert proof.verdict == "refuted"
    case = proof.cases[0]
    assert any(w["differs"] for w in case.witnesses)


def test_naive_law_is_q_symbolically():
    proof = prove_symbolic(naive, 3, expected_law=lambda p, q, k: q)
    assert proof.verdict == "proved"


def test_a_wrong_expected_acceptance_is_not_proved():
    proof = prove_symbolic(sps, 2, expected_acceptance=lambda p, q, k: 1)
    assert proof.verdict != "proved"


def test_nonlinear_comparisons_are_split_too():
    def odd(s, p, q, k=1):
        x = s.draft(q)
        if p[0] * p[1] < q[0] * q[1]:           # a nonlinear atom
            return s.accept(x)
        return s.draw(p)

    proof = prove_symbolic(odd, 2)
    assert proof.verdict in {"refuted", "undecided"}
    assert any("p0*p1" in " ".join(c.conditions) or "q0*q1" in " ".join(c.conditions)
               for c in proof.cases)


def test_case_decides_linear_consequences_without_splitting():
    p, q, variables, eqs, pos = symbolic_dists(2)
    p0, p1, q0, q1 = variables
    case = Case(variables, eqs, pos, {sympy.expand(p0 - q0): 1})
    # p0 > q0 and both sums 1 force p1 < q1
    assert case.sign(p1 - q1) == -1


def test_comparisons_outside_a_run_are_undecided():
    with pytest.raises(Undecided):
        bool(SymbolicValue(sympy.Symbol("x")) < 1)


@pytest.mark.slow
def test_a_method_error_in_a_case_the_pruning_cannot_rule_out_is_undecided_not_a_crash():
    # RRS at k = 2 on three tokens: after two rejections the linear facts cannot rule out
    # "r1 <= q everywhere" (infeasible only through the normaliser of r1), where the second
    # residual is empty; the case is undecided with the method's error, never a traceback
    from exactspec.methods.rrs import rrs

    proof = prove_symbolic(rrs, 3, 2)
    assert proof.verdict == "undecided"
    verdicts = {c.verdict for c in proof.cases}
    assert "refuted" not in verdicts and "proved" in verdicts
    failed = [c for c in proof.cases if "error of the method" in c.note]
    assert failed and all(c.law == {} and "residual" in c.note for c in failed)
    assert any("residual max(0, p - q) is empty" in c.note for c in failed)


def test_a_method_that_fails_on_real_inputs_raises_its_own_error():
    from exactspec.core.errors import InvalidInput

    def broken(s, p, q, k=1):
        x = s.draft(q)
        if s.coin(min(1, p[x] / q[x])):
            return s.accept(x)
        raise InvalidInput("broken: no residual step")

    with pytest.raises(InvalidInput, match="broken: no residual step"):
        prove_symbolic(broken, 2)
