"""``compare`` sizes each method's exact work up front: a method over its budget is reported
with ``null`` values, the reason and the estimate; the others are computed as before."""

from fractions import Fraction as F

import pytest

from exactspec.bounds.closed_forms import rrs_acceptance
from exactspec.bounds.compare import (COMPARE_MAX_MERGED_PATHS, COMPARE_MAX_PLAN, compare,
                                      exact_verification)
from exactspec.core.dist import Dist

P = Dist([F(v, 44) for v in (3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5)])
Q = Dist([F(v, 51) for v in (2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4)])
SEED_P = Dist.parse("1/2,3/10,1/5", labels="abc")
SEED_Q = Dist.parse("1/5,1/5,3/5", labels="abc")
NULLS = ("lossless", "verdict", "acceptance", "acceptance_float", "optimum", "ratio_to_optimal")


class FakeClock:
    """A clock that advances by ``step`` seconds at every reading."""

    def __init__(self, step):
        self.step, self.now = step, 0.0

    def __call__(self):
        self.now += self.step
        return self.now


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    """The engine's clock (``exactspec.engine.path_estimate.clock``, whose median seconds of a path
    size a plain walk against its seconds budget) moves a millisecond a reading: no budget
    here depends on the machine; a test sets ``clock.step`` for the seconds a path takes."""
    from exactspec.engine import path_estimate

    fake = FakeClock(1e-3)
    monkeypatch.setattr(path_estimate, "clock", fake)
    return fake


def rows(out):
    return {row["method"]: row for row in out["methods"]}


def assert_over_budget(row, *words):
    assert all(row[key] is None for key in NULLS)
    assert row["skipped"].startswith("too large to prove exactly")
    assert all(word in row["skipped"] for word in words)


def test_optimal_over_the_plan_budget_is_refused_before_its_max_flow():
    # C(18, 8) = 43,758 draft multisets at k = 8: about 11 s of exact max flow, refused
    # from the count alone; at k = 2 (66 multisets) the same call computes alpha* = 1
    row = rows(compare(P, Q, 8, methods=["optimal"]))["optimal"]
    assert_over_budget(row, "43,758 draft multisets", f"{COMPARE_MAX_PLAN:,}")
    assert row["estimate"] == 43_758
    small = rows(compare(P, Q, 2, methods=["optimal"]))["optimal"]
    assert small["acceptance"] == small["optimum"] and small["lossless"] is True
    assert "estimate" not in small


def test_a_plain_walk_over_the_seconds_budget_is_refused_with_its_estimate(clock):
    # typical at k = 4 on 11 tokens: 14,641 paths; at a tenth of a millisecond each over a
    # budget of 1 s, refused up front with the estimate; at a microsecond each, proved
    clock.step = 1e-4
    row = rows(compare(P, Q, 4, methods=["typical"], max_seconds=1))["typical"]
    assert_over_budget(row, "at about 0.0001 s each", "s of exact work, over the budget of 1 s")
    assert 5_000 < row["estimate"] < 50_000
    clock.step = 1e-6
    row = rows(compare(P, Q, 4, methods=["typical"], max_seconds=1))["typical"]
    assert row["lossless"] is False and "skipped" not in row and "estimate" not in row


def test_merged_states_not_bounded_in_advance_are_refused_above_their_budget():
    # key-lazy at k = 8 by KEY_LAZY_STEPS (its shortcut, KEY's lowest key slot, declined):
    # 1,901,119 paths (counted through merged states in about 16 s; the plain walk passed
    # 621,568 paths in 120 s without finishing): the estimate is over compare's budget for
    # merged states whose number is not bounded in advance
    import dataclasses

    from exactspec.key.lazy_stepped import KEY_LAZY_STEPS
    from exactspec.methods import METHODS
    from exactspec.methods.base import Method

    steps = dataclasses.replace(KEY_LAZY_STEPS, shortcut=dataclasses.replace(
        KEY_LAZY_STEPS.shortcut, condition=lambda p, q, k: "declined in this test"))
    lazy = Method("key-lazy", METHODS["key-lazy"].run, steps=steps)
    row = rows(compare(P, Q, 8, methods=[lazy]))["key-lazy"]
    assert_over_budget(row, "(merged states, whose number is not bounded in advance)",
                       f"{COMPARE_MAX_MERGED_PATHS:,}")
    assert row["estimate"] > COMPARE_MAX_MERGED_PATHS
    # as registered, KEY's lowest key slot proves it (at most |V| + 2 states)
    row = rows(compare(P, Q, 8, methods=["key-lazy"]))["key-lazy"]
    assert row["lossless"] is True and row["stepped_form"] == "key-min-slot"
    assert row["acceptance"] == row["optimum"]


def test_a_tiny_budget_refuses_plain_walks_but_merged_states_still_prove():
    out = compare(SEED_P, SEED_Q, 2, methods=["rrs", "typical", "optimal"], max_seconds=1e-9,
                  max_plan=5)
    got = rows(out)
    assert_over_budget(got["typical"], "over the budget of 0 s")
    assert_over_budget(got["optimal"], "6 draft multisets")
    # rrs has a merged-state form: the same exact acceptance, two ways
    assert got["rrs"]["engine"] == "merged"
    assert F(got["rrs"]["acceptance"]) == rrs_acceptance(SEED_P, SEED_Q, 2) == F(19, 25)
    plain = rows(compare(SEED_P, SEED_Q, 2, methods=["rrs"]))["rrs"]
    assert "engine" not in plain and plain["acceptance"] == got["rrs"]["acceptance"]


def test_exact_verification_without_a_seconds_budget_is_unchanged():
    r = exact_verification("key-lazy", SEED_P, SEED_Q, 2)
    assert r.lossless and r.acceptance == F(21, 25)


@pytest.mark.slow
def test_compare_at_k8_prints_what_it_can_prove_and_refuses_the_rest():
    # the command of the timing (about 3 s here; before the budgets, minutes)
    got = rows(compare(P, Q, 8))
    assert F(got["rrs"]["acceptance"]) == rrs_acceptance(P, Q, 8) == F(69490098101, 76733331851)
    for name in ("rrs", "rrs-wor", "kseq", "key", "key-lazy"):
        assert got[name]["lossless"] is True and got[name]["optimum"] == "1"
    assert got["key"]["acceptance"] == got["key-lazy"]["acceptance"] == "1"
    for name in ("typical", "greedy", "top-k", "top-p"):     # lossy, by linear routes
        assert got[name]["lossless"] is False and got[name]["bias"] != "0"
    for name in ("optimal",):
        assert_over_budget(got[name])
        assert got[name]["estimate"] > 20_000
    for name in ("sps", "naive", "top1", "spechub"):
        assert "acceptance" not in got[name] and "k = " in got[name]["skipped"]
