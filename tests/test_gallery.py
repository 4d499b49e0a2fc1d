"""The gallery of real verifier bugs (exactspec.gallery.one_draft).

Each buggy version is refuted with exactly its expected law, each correct version is proved
lossless with a certificate the independent checker accepts, and the two rules reported as bugs
that are exact are proved, on their instances and (hypothesis) on random rational ones.
"""

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exactspec import Dist, InvalidInput, overlap, residual, total_variation, verify
from exactspec.replay import check_certificate
from exactspec.gallery.one_draft import (
    GALLERY,
    GalleryRow,
    accept_on_target_match,
    argmax_draft,
    argmax_draft_point_mass,
    point_mass,
    point_mass_proposal,
    run_gallery,
    top_p,
)
from exactspec.methods.top1 import argmax

F = Fraction
BY_NAME = {entry.name: entry for entry in GALLERY}
BUGS = [entry for entry in GALLERY if entry.is_bug]
EXACT = [entry for entry in GALLERY if not entry.is_bug]


def law_of(result):
    """The output law as a list of Fractions in token order."""
    return [F(result.law[lab]) for lab in result.p.labels]


def test_the_gallery_lists_the_six_bug_classes():
    assert [entry.name for entry in GALLERY] == [
        "argmax_draft", "draft_from_other_model", "reused_uniform", "top_p_unfiltered_target",
        "accept_on_target_match", "point_mass_proposal"]
    assert {entry.name for entry in EXACT} == {"accept_on_target_match", "point_mass_proposal"}
    for entry in GALLERY:
        assert entry.p.labels == entry.q.labels == entry.expected_law.labels
        assert sum(entry.p.probs) == sum(entry.q.probs) == sum(entry.expected_law.probs) == 1
        assert entry.description.strip()


@pytest.mark.parametrize("entry", BUGS, ids=lambda e: e.name)
def test_buggy_version_is_refuted_with_its_exact_law(entry):
    result = verify(entry.buggy, entry.p, entry.q)
    assert not result.lossless
    assert law_of(result) == [F(v) for v in entry.expected_law.probs]
    assert result.differs
    assert result.bias == total_variation(entry.expected_law, entry.p) > 0


@pytest.mark.parametrize("entry", BUGS, ids=lambda e: e.name)
def test_buggy_certificate_records_the_refuted_law(entry):
    cert = verify(entry.buggy, entry.p, entry.q, keep_paths=True).certificate()
    assert cert["claim"] == "law"
    _checks(cert)


@pytest.mark.parametrize("entry", GALLERY, ids=lambda e: e.name)
def test_correct_version_is_proved_with_a_checked_certificate(entry):
    result = verify(entry.correct, entry.p, entry.q, keep_paths=True)
    assert result.lossless
    assert law_of(result) == [F(v) for v in entry.p.probs]
    cert = result.certificate()
    assert cert["claim"] == "lossless"
    _checks(cert)


def _checks(cert):
    """Method-free always; replayed too when the method is one of exactspec's own rules (a
    rule made inside a function is not, and then the check says so and only that)."""
    assert check_certificate(cert, replay=False) == []
    problems = check_certificate(cert)
    assert problems == [] or (len(problems) == 1 and "not replayed" in problems[0])


@pytest.mark.parametrize("entry", EXACT, ids=lambda e: e.name)
def test_reported_but_exact_rules_have_their_stated_acceptance(entry):
    assert entry.buggy is None and entry.expected_law == entry.p
    result = verify(entry.correct, entry.p, entry.q)
    assert result.lossless
    assert result.acceptance == result.explicit_acceptance == entry.expected_acceptance
    # Both accept with probability sum_t p(t) q(t), below the lossless rule's overlap.
    assert entry.expected_acceptance == sum(entry.p[t] * entry.q[t] for t in entry.p)
    assert entry.expected_acceptance < overlap(entry.p, entry.q)


def test_stated_values_of_the_issue():
    assert BY_NAME["argmax_draft"].expected_law == Dist.parse("2/3,1/3")
    assert BY_NAME["draft_from_other_model"].expected_law == Dist.parse("3/4,1/4")
    assert BY_NAME["reused_uniform"].expected_law == Dist.parse("1/2,0,1/2")
    top = BY_NAME["top_p_unfiltered_target"]
    assert top.q == top.p == Dist.parse("5/8,3/8,0")
    assert top.expected_law[2] == F(1, 5)
    point = BY_NAME["point_mass_proposal"]
    assert point.q == Dist.parse("1/10,7/10,1/5")  # sums to exactly 1
    assert point.expected_acceptance == F(19, 60)


def test_run_gallery_rows():
    rows = run_gallery()
    assert all(isinstance(row, GalleryRow) for row in rows)
    assert [row.name for row in rows] == [entry.name for entry in GALLERY]
    for row, entry in zip(rows, GALLERY):
        assert row.law == entry.expected_law
        assert row.tv == total_variation(entry.expected_law, entry.p)
        assert row.verdict == ("lossy-logic" if entry.is_bug else "lossless")
        assert row.correct == "lossless"
    tvs = {row.name: row.tv for row in rows}
    assert tvs == {"argmax_draft": F(1, 6), "draft_from_other_model": F(1, 4),
                   "reused_uniform": F(1, 4), "top_p_unfiltered_target": F(1, 5),
                   "accept_on_target_match": 0, "point_mass_proposal": 0}


# --- the argmax entry: which model gives (2/3, 1/3) -----------------------------------------

def argmax_draft_point_mass_residual(s, p, q, k=1):
    """The other reading: softmax ratio, but the residual taken against the point mass."""
    x = s.draft(point_mass(q.labels, argmax(q)))
    if s.coin(min(1, p[x] / q[x]), "accept"):
        return s.accept(x)
    return s.draw(residual(p, point_mass(q.labels, x)), "residual")


def test_both_readings_of_the_argmax_bug_give_two_thirds_here_but_differ_in_general():
    entry = BY_NAME["argmax_draft"]
    for method in (argmax_draft, argmax_draft_point_mass_residual):
        assert verify(method, entry.p, entry.q).law_dist() == Dist.parse("2/3,1/3")
    # A token with p(t) < q(t) other than the argmax separates them.
    p, q = Dist.parse("1/4,1/4,1/2"), Dist.parse("1/2,1/3,1/6")
    assert verify(argmax_draft, p, q).law_dist() == Dist.parse("1/2,0,1/2")
    assert verify(argmax_draft_point_mass_residual, p, q).law_dist() == Dist.parse("1/2,1/6,1/3")
    assert verify(argmax_draft_point_mass, p, q).lossless


# --- top_p --------------------------------------------------------------------------------

@pytest.mark.parametrize("dist, threshold, expected", [
    ("1/2,3/10,1/5", "0.6", "5/8,3/8,0"),
    ("1/2,3/10,1/5", "1/2", "1,0,0"),          # the first token reaches it exactly
    ("1/2,3/10,1/5", "0.8", "5/8,3/8,0"),
    ("1/2,3/10,1/5", "0.81", "1/2,3/10,1/5"),
    ("1/2,3/10,1/5", "1", "1/2,3/10,1/5"),
    ("1/5,3/10,1/2", "0.6", "0,3/8,5/8"),      # order is by probability, not by token
    ("1/4,1/4,1/4,1/4", "1/2", "1/2,1/2,0,0"),  # ties at the cut: earlier tokens kept
    ("1/4,1/4,1/4,1/4", "0.51", "1/3,1/3,1/3,0"),
    ("0,1/2,1/2", "1", "0,1/2,1/2"),
])
def test_top_p(dist, threshold, expected):
    assert top_p(Dist.parse(dist), threshold) == Dist.parse(expected)


@pytest.mark.parametrize("threshold", ["0", "-1/2", "11/10"])
def test_top_p_rejects_thresholds_outside_0_1(threshold):
    with pytest.raises(InvalidInput, match="threshold"):
        top_p(Dist.parse("1/2,1/2"), threshold)


# --- the two exact rules, in general ------------------------------------------------------

weights = st.lists(st.integers(0, 6), min_size=3, max_size=3).filter(lambda w: sum(w) > 0)


@settings(max_examples=200, deadline=None)
@given(weights, weights)
def test_reported_but_exact_rules_are_lossless_in_general(p_weights, q_weights):
    p = Dist(p_weights, normalize=True)
    q = Dist(q_weights, normalize=True)
    expected_acceptance = sum(p[t] * q[t] for t in p)
    for rule in (accept_on_target_match, point_mass_proposal):
        result = verify(rule, p, q)
        assert result.lossless, (rule.__name__, p, q, result.law_dist())
        assert result.acceptance == expected_acceptance
    assert verify(argmax_draft_point_mass, p, q).lossless
