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
from exactspec.claims.runner import ProgressLine, run_claims
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
    seen = []
    list(run_claims(FAST_PAIR, jobs=2, full=False,
                    on_event=lambda kind, name, result: seen.append((kind, name))))
    assert sorted(seen) == sorted([("start", n) for n in FAST_PAIR] +
                                  [("done", n) for n in FAST_PAIR])


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
        line("done", "a", None)
        line.clear()
    assert pipe.getvalue() == ""
    assert "[1/2]" in tty.getvalue() and "running: b" in tty.getvalue()


@pytest.mark.parametrize("jobs", ["0", "-3", "two"])
def test_bad_jobs_is_a_usage_error(jobs):
    out = subprocess.run([sys.executable, "-m", "exactspec", "prove", "top1-lossy", "--jobs",
                          jobs], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
