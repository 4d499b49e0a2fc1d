"""The factored route under its budgets, with an injected clock.

A multi-position PyTorch rule on the factored route (every draft position a tensor axis)
has engine paths that show only as its code runs: the chain of the gallery compares every
position's uniform at once, so ``M - 1`` draft positions are ``2 ** (M - 1)`` engine paths.
The route estimates them on the first path (Knuth's estimate from one path, and random engine
paths where that one passes a budget) and refuses, before any other path runs, an estimate
over the path budget or projected seconds over the seconds budget, with the estimate; a run past twice the seconds budget is stopped by a deadline
(:mod:`exactspec.core.deadline`) that user code cannot catch and go on.  No test here reads
the machine's speed: the clocks are replaced.
"""

from pathlib import Path

import pytest

from exactspec.core import deadline
from exactspec.core.deadline import Deadline, check
from exactspec.core.dist import Dist
from exactspec.core.errors import TooLarge
from exactspec.core.signals import SignalCaught, user_code
from exactspec.engine import path_estimate
from exactspec.sequences import factored
from exactspec.sequences.context import ContextPair
from exactspec.sequences.torch_rules import pytorch_whole_call
from exactspec.sequences.user import user_report
from exactspec.torch_layer.rule import load_pytorch_rule

ROOT = Path(__file__).resolve().parent.parent
CHAIN = ROOT / "examples" / "engines" / "flashinfer_chain.py"
P, Q = "1/2,1/3,1/6", "1/4,1/4,1/2"


def _report(m, **kw):
    rule = load_pytorch_rule(f"{CHAIN}:chain")
    return user_report({"m": m}, pytorch_whole_call(rule, m),
                       pair=ContextPair.context_free(P, Q), m=m, **kw)


def _ticking(step):
    """A clock that moves ``step`` seconds at each reading."""
    now = [0.0]

    def clock():
        now[0] += step
        return now[0]

    return clock


def test_more_engine_paths_than_the_budget_refused_up_front():
    """24 draft positions: about 2**24 engine paths, over the default 10**6, refused after
    the first path and a few random engine paths, with the estimate."""
    with pytest.raises(TooLarge) as err:
        _report(25)
    assert err.value.estimate == 2 ** 24 and err.value.budget == 10 ** 6
    assert "about 16,777,216 engine paths" in str(err.value)
    assert "--max-paths N to insist" in str(err.value)


def test_rows_too_large_for_the_tensor_layer_refused_before_they_are_made():
    """10**11 tokens of 3: the target rows would be 3 * 10**11 elements (they once ran out of
    memory building them); refused up front with their size."""
    with pytest.raises(TooLarge) as err:
        _report(10 ** 11)
    assert err.value.estimate == 3 * 10 ** 11 and err.value.budget == 2 ** 24
    assert "a tensor of 300,000,000,000 elements" in str(err.value)


def _budget(max_seconds=60, max_paths=10 ** 6, m=4):
    rule = load_pytorch_rule(f"{CHAIN}:chain")
    return factored.CallBudget(rule, Dist(P), Dist(Q), m - 1, 2, max_paths, max_seconds)


def test_a_first_path_within_the_budgets_decides_at_once(monkeypatch):
    """Knuth's estimate from the first path (8 paths at 1 s, run twice: 16 s) within 60 s:
    no random paths are run."""
    monkeypatch.setattr(factored, "call_paths_estimate", None)      # never called
    _budget()(8, 4, 1.0)


def test_a_first_path_over_the_budget_leaves_the_decision_to_random_paths(monkeypatch):
    """The first path says 8 paths (at least 4) at 5 s: 80 s run twice (at least 40 s); the
    random engine paths are read at 0.5 s each (a clock moving 0.5 s per reading): about
    8 s, within 60 s; within a budget of 7 s refused with that estimate."""
    monkeypatch.setattr(path_estimate, "clock", _ticking(0.5))
    _budget()(8, 4, 5.0)
    with pytest.raises(TooLarge) as err:
        _budget(max_seconds=7)(8, 4, 0.5)
    text = str(err.value)
    assert "about 8 engine paths at about 0.5 s each, the call's law run 2 times: about 8 s" \
        in text and "over the budget of 7 s" in text
    assert err.value.estimate == 8 and err.value.budget == 7


def test_the_paths_there_are_at_least_refused_at_once(monkeypatch):
    """4 paths at least (one path, three options not taken) at 10 s, run twice: 80 s, over
    60 s, refused without random paths."""
    monkeypatch.setattr(factored, "call_paths_estimate", None)      # never called
    with pytest.raises(TooLarge) as err:
        _budget()(8, 4, 10.0)
    assert "at least 4 engine paths at about 10 s each, the call's law run 2 times: about " \
           "80 s of exact work, over the budget of 60 s" in str(err.value)


def test_a_first_path_slower_than_its_share_refused(monkeypatch):
    """A first engine path passing the budget's share of one run (the budget over the runs
    of the call's law) refuses the run while that path runs."""
    monkeypatch.setattr(deadline, "clock", _ticking(1.0))
    with pytest.raises(TooLarge) as err:
        _report(4, max_seconds=60)
    assert "its first engine path took more than 30 s, and the call's law is run 2 times" \
        in str(err.value)


def test_a_run_past_twice_the_budget_stopped(monkeypatch):
    """Whatever the estimate said: the run stops at twice the budget."""
    monkeypatch.setattr(factored.CallBudget, "deadline", lambda self: None)
    monkeypatch.setattr(factored.CallBudget, "__call__", lambda self, *sizes, **kw: None)
    monkeypatch.setattr(deadline, "clock", _ticking(1.0))
    with pytest.raises(TooLarge) as err:
        _report(4, max_seconds=60)
    assert "not done after 121 s of exact work, over the budget of 60 s: stopped" \
        in str(err.value)


def test_insisting_skips_the_seconds_budget(monkeypatch):
    """``--max-paths N`` (no seconds budget): no estimate, no deadline."""
    monkeypatch.setattr(deadline, "clock", _ticking(1000.0))
    monkeypatch.setattr(path_estimate, "clock", _ticking(1000.0))
    r = _report(4, max_paths=100, max_seconds=None)
    assert r["verdict"] == "lossless" and r["factored"]["engine_paths"] == 8


def test_user_code_that_catches_the_deadline_is_refused():
    """The deadline's refusal is one of the engine's: caught by user code, the run is
    refused in one line, it never goes on."""
    ticks = _ticking(1.0)

    def swallows():
        try:
            check()
        except Exception:
            return "went on"

    with Deadline(0.5, lambda spent: TooLarge(f"stopped after {spent:.0f} s"), clock=ticks):
        with pytest.raises(SignalCaught) as err:
            with user_code():
                swallows()
    assert "caught exactspec's TooLarge (stopped after 1 s)" in str(err.value)


def test_no_deadline_costs_nothing():
    check()                       # nothing open: nothing raised
    with Deadline(10, lambda spent: TooLarge("late"), clock=_ticking(1.0)) as d:
        check()
        assert d.spent() == 2.0
    check()
