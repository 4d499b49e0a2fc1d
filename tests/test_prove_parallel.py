"""``exactspec prove`` in parallel: the same verdicts and details whatever ``--jobs``, results
in the registry's order, a progress line only on a terminal, and the fast corpus beside the
full one."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from exactspec.claims import all_claims, get_claim
from exactspec.claims.base import PROVED, Claim, ClaimResult, Split
from exactspec.claims.runner import Progress, ProgressLine, run_claims
from exactspec.cli import main

FAST_PAIR = ["top1-lossy", "sequence-bugs"]


def test_parallel_runs_give_the_serial_verdicts_and_details_in_registry_order():
    serial = list(run_claims(FAST_PAIR, jobs=1, full=False))
    parallel = list(run_claims(FAST_PAIR, jobs=2, full=False))
    assert [n for n, _ in serial] == [n for n, _ in parallel] == FAST_PAIR
    for (_, a), (_, b) in zip(serial, parallel):
        assert a.verdict == b.verdict == "PROVED"
        assert a.details == b.details
        assert a.certificate == b.certificate


def test_events_start_and_finish_every_claim():
    seen, progress = [], []
    list(run_claims(FAST_PAIR, jobs=2, full=False,
                    on_event=lambda kind, name, result: (
                        seen.append((kind, name)) if kind != "unit"
                        else progress.append((name, result)))))
    assert sorted(seen) == sorted([("start", n) for n in FAST_PAIR] +
                                  [("done", n) for n in FAST_PAIR])
    assert sorted(name for name, _ in progress) == sorted(FAST_PAIR)   # one unit each
    assert progress[-1][1] == Progress(1, 1, 1.0)
    assert 0 < progress[0][1].work_done < 1


# A split claim whose units finish in the reverse of their order (the first sleeps longest)
# and whose merge depends on that order: the runner must merge by unit, not by finishing.
def _toy_units(n=6):
    return [((i,), float(n - i)) for i in range(n)]


def _toy_part(unit, n=6):
    import time

    time.sleep(0.02 * (n - unit[0]))
    return [f"unit {unit[0]}"], unit[0] ** 2


def _toy_merge(tallies, n=6):
    details = [line for lines, _ in tallies for line in lines]
    return ClaimResult(PROVED, details + [f"sum of squares {sum(s for _, s in tallies)}"],
                       {"parts": [{"square": s} for _, s in tallies]})


TOY = Split(units=_toy_units, part=_toy_part, merge=_toy_merge)


@pytest.fixture
def toy_claim(monkeypatch):
    from exactspec.claims import generic

    claim = Claim("toy-split", "squares add up", lambda n=6: TOY.whole(n=n), fast={"n": 4},
                  split=TOY)
    monkeypatch.setattr(generic, "CLAIMS", generic.CLAIMS + [claim])  # forked workers see it
    return claim


def test_a_split_claim_is_merged_in_unit_order_whatever_finishes_first(toy_claim):
    serial = toy_claim.run(full=True)
    assert serial.details[-1] == "sum of squares 55"
    events = []
    ((name, parallel),) = run_claims(["toy-split"], jobs=3, full=True,
                                     on_event=lambda kind, n, r: events.append((kind, r)))
    assert name == "toy-split"
    assert parallel.details == serial.details
    assert parallel.certificate == serial.certificate
    assert parallel.certificate["corpus_run"] == "full"
    units = [r for kind, r in events if kind == "unit"]
    assert [u.claim_units_done for u in units] == [1, 2, 3, 4, 5, 6]
    assert units[-1].work_done == 1.0 and events[-1][0] == "done"
    ((_, fast),) = run_claims(["toy-split"], jobs=2, full=False)
    assert fast.details == toy_claim.run(full=False).details
    assert fast.details[-1] == "sum of squares 14"
    assert fast.certificate["corpus_run"] == "fast"


@pytest.mark.slow
def test_split_claims_give_the_serial_run_on_small_corpora(monkeypatch):
    """The real split claims, their corpora made small: the parallel run (units in worker
    processes, merged) has the serial run's verdict, details and certificate."""
    import dataclasses

    from exactspec.claims import key, trees
    from exactspec.core.dist import Dist

    monkeypatch.setattr(key, "COUNTEREXAMPLES", (
        (Dist.parse("3/5,2/5"), Dist.parse("1/2,1/2"), 2),
        (Dist.parse("1/2,1/5,3/10"), Dist.parse("1/20,3/20,4/5"), 2)))
    monkeypatch.setattr(key, "CLAIMS", [dataclasses.replace(c, fast={"size": 8})
                                        for c in key.CLAIMS])
    monkeypatch.setattr(trees, "tree_rules", lambda: [("rrs", None)])
    monkeypatch.setattr(trees, "CLAIMS", [
        dataclasses.replace(c, fast={"pairs_per_rule": 1}) if c.name == "tree-lossless" else c
        for c in trees.CLAIMS])
    names = ["key-lossless-optimal", "key-selection-law", "tree-lossless"]
    assert all(len(get_claim(n).work_units(full=False)) > 2 for n in names)
    parallel = dict(run_claims(names, jobs=2, full=False))
    for name in names:
        serial = get_claim(name).run(full=False)
        assert serial.verdict == parallel[name].verdict == "PROVED", name
        assert serial.details == parallel[name].details, name
        assert serial.certificate == parallel[name].certificate, name


def test_every_corpus_claim_has_a_smaller_fast_corpus():
    for claim in all_claims():
        if claim.fast is None:
            continue
        sizes = {key: value for key, value in claim.fast.items() if key == "size"}
        for key, fast_size in sizes.items():
            import inspect

            full_size = inspect.signature(claim.check).parameters[key].default
            assert fast_size < full_size, claim.name
        if claim.fast_statement:
            assert claim.fast_statement != claim.statement
            assert claim.statement_for(True) == claim.statement


def test_the_fast_corpus_is_the_default_of_prove_and_says_so(capsys):
    assert main(["prove", "top1-lossy", "--json", "--jobs", "1"]) == 0
    fast = json.loads(capsys.readouterr().out)["claims"][0]
    assert "on 60 instances" in fast["details"][-1]
    claim = get_claim("top1-lossy")
    full = claim.run(full=True)
    assert "on 300 instances" in full.details[-1]
    assert full.certificate["corpus_run"] == "full"
    assert claim.run(full=False).certificate["corpus_run"] == "fast"


def test_progress_line_only_on_a_terminal():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    tty, pipe = Terminal(), io.StringIO()
    for stream in (tty, pipe):
        line = ProgressLine(2, stream)
        line("start", "a", None)
        line("start", "b", None)
        line("unit", "b", Progress(1, 4, 0.25))
        line("done", "a", None)
        line.clear()
    assert pipe.getvalue() == ""
    shown = tty.getvalue().split("\r")
    assert any("[0/2] 25% of the work" in s and "running: a, b 1/4" in s for s in shown)
    assert any("[1/2] 25% of the work" in s and "running: b 1/4" in s for s in shown)


@pytest.mark.parametrize("jobs", ["0", "-3", "two"])
def test_bad_jobs_is_a_usage_error(jobs):
    out = subprocess.run([sys.executable, "-m", "exactspec", "prove", "top1-lossy", "--jobs",
                          jobs], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
