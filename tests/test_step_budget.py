"""Merged states under a seconds budget: a step projected from the rate of its first states
(and the steps a method says are still to come) refused with its estimate; the clock is
injected, so no figure here depends on this machine's speed."""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction

import pytest

from exactspec import Dist
from exactspec.bounds.compare import exact_verification
from exactspec.core.errors import TooLarge
from exactspec.engine import path_estimate
from exactspec.engine.merged import enumerate_merged
from exactspec.engine.step_budget import SETTLE_SECONDS, StepBudget
from exactspec.key.stepped import KEY_STEPS, least_steps
from exactspec.methods import get_method
from exactspec.routes.merged import merged_seconds
from exactspec.routes.request import Request


class Ticks:
    """A clock that moves ``by`` seconds at each reading."""

    def __init__(self, by: float):
        self.now, self.by = 0.0, by

    def __call__(self) -> float:
        self.now += self.by
        return self.now


def test_a_step_projected_past_the_budget_is_refused_with_its_estimate():
    budget = StepBudget(60.0, "rrs-wor", clock=Ticks(2.0))
    budget.begin(2, 1_000)
    with pytest.raises(TooLarge) as err:
        budget.state_done()
    assert "step 2: 1 of 1,000 states" in str(err.value)
    assert "over the budget of 60 s" in str(err.value)
    assert err.value.estimate >= 1_000 and err.value.budget == 60


def test_a_step_within_the_budget_runs_to_its_end():
    budget = StepBudget(60.0, "rrs", clock=Ticks(0.01))
    budget.begin(1, 1_000)
    for _ in range(1_000):                         # 20 s projected at most: never refused
        budget.state_done()


def test_no_rate_is_trusted_before_it_has_run_a_while():
    budget = StepBudget(60.0, "rrs", clock=Ticks(SETTLE_SECONDS / 10))
    budget.begin(1, 10**9)
    for _ in range(8):                             # under a second seen: no projection yet
        budget.state_done()
    with pytest.raises(TooLarge):
        for _ in range(10):
            budget.state_done()


def test_steps_still_to_come_refuse_only_past_twice_the_budget():
    # one state a step, 100 steps at least: 2 s a step projects 202 s at the first step
    budget = StepBudget(60.0, "key", clock=Ticks(2.0), least_steps=100)
    budget.begin(1, 1)
    with pytest.raises(TooLarge, match="step 1: 1 of 1 states.*and at least 99 steps more take"):
        budget.state_done()
    # 1 s a step projects 101 s: over the budget, not over twice it, so the run goes on
    budget = StepBudget(60.0, "key", clock=Ticks(1.0), least_steps=100)
    budget.begin(1, 1)
    budget.state_done()
    quiet = StepBudget(60.0, "key", clock=Ticks(0.1), least_steps=100)
    for generation in range(1, 101):               # 0.1 s a step, 100 steps: 20 s in all
        quiet.begin(generation, 1)
        quiet.state_done()


def test_a_run_past_twice_the_budget_is_stopped_whatever_its_rate():
    budget = StepBudget(10.0, "key", clock=Ticks(0.1))
    budget.started -= 25.0                          # 25 s spent before this step
    budget.begin(7, 10**6)
    with pytest.raises(TooLarge, match="step 7: not done after 25 s"):
        budget.state_done()                         # before any rate: stopped all the same


def _rows(n: int):
    p = Dist([Fraction(i + 1, n * (n + 1) // 2) for i in range(n)])
    q = Dist([Fraction(n - i, n * (n + 1) // 2) for i in range(n)])
    return p, q


def test_merged_states_refused_by_the_budget_and_run_without_one(monkeypatch):
    p, q = _rows(12)
    steps = get_method("rrs-wor").steps
    free = enumerate_merged(steps, p, q, 2)
    assert free.law == dict(p)
    monkeypatch.setattr(path_estimate, "clock", Ticks(5.0))
    with pytest.raises(TooLarge, match="rrs-wor: merged states, step"):
        enumerate_merged(steps, p, q, 2, max_seconds=60.0)
    again = enumerate_merged(steps, p, q, 2)         # no budget: the same law
    assert again.law == free.law and again.acceptance == free.acceptance


def test_key_takes_one_step_at_least_per_token_of_q():
    p, q = Dist.parse("3/5,2/5,0"), Dist.parse("1/2,1/4,1/4")
    run = enumerate_merged(KEY_STEPS, p, q, 3)
    assert least_steps(p, q, 3) == 3 <= run.steps
    p, q = _rows(6)
    assert least_steps(p, q, 2) == 6 <= enumerate_merged(KEY_STEPS, p, q, 2).steps


def test_the_route_takes_the_walks_budget_unless_the_caller_insists():
    p, q = _rows(4)
    base = dict(name="rrs-wor", run=None, p=p, q=q, k=2)
    assert merged_seconds(Request(**base)) == path_estimate.MAX_SECONDS
    assert merged_seconds(Request(**base, max_seconds=5.0)) == path_estimate.MAX_SECONDS
    assert merged_seconds(Request(**base, max_seconds=600.0)) == 600.0
    assert merged_seconds(Request(**base, max_paths=10**12)) is None
    assert merged_seconds(Request(**base, max_paths=None)) is None


def test_the_planner_refuses_through_the_route_with_a_slow_clock(monkeypatch):
    p, q = _rows(60)
    monkeypatch.setattr(path_estimate, "clock", Ticks(5.0))
    with pytest.raises(TooLarge, match="rrs-wor: merged states, step"):
        exact_verification("rrs-wor", p, q, 2)
    with pytest.raises(TooLarge, match="rrs-wor: merged states, step"):
        exact_verification("rrs-wor", p, q, 2, max_seconds=5.0)
    monkeypatch.setattr(path_estimate, "clock", Ticks(1e-4))   # fast: compare's 1e-9 still
    assert exact_verification("rrs-wor", p, q, 2, max_seconds=1e-9).lossless   # proves


def test_the_command_refuses_in_one_line(tmp_path):
    n = 10_000
    p, q = _rows(n)
    for name, d in (("p", p), ("q", q)):
        (tmp_path / f"{name}.json").write_text("[" + ",".join(f'"{v}"' for v in d.probs) + "]")
    # k = 3: merged states (at k = 2 sorted sums prove these rows in about 20 s)
    out = subprocess.run([sys.executable, "-m", "exactspec", "verify", "rrs-wor", "--k", "3",
                          "--p", f"@{tmp_path / 'p.json'}", "--q", f"@{tmp_path / 'q.json'}"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "over the budget of 60 s" in lines[0], out.stderr
    assert "Traceback" not in out.stderr
