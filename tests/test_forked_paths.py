"""Paths whose common start runs once (:mod:`exactspec.engine.forked_paths`).

A walk that forks at its choices runs the same paths as the replayed walk, in the same
depth-first order: the factored route's call law (its rank-one terms, term by term and in
order, its paths and axes) is the same with the forks forced (``fork_after=0``) as replayed,
on the gallery's chains and engine samplers, exact, on a grid and in float formats; and so
is the whole report of ``verify --tokens M``.  An error on a later path is raised as the
replayed walk raises it; a copy whose user code ends the process is refused in one line; a
deadline closed before a copy resumes is closed there too; the hidden state of a rule that
counts its calls is still found.  These tests fork the pytest process (POSIX only).
"""

import os
import textwrap
from fractions import Fraction as F
from pathlib import Path

import pytest

from exactspec.core import deadline
from exactspec.core.deadline import Deadline
from exactspec.core.dist import Dist
from exactspec.core.errors import InvalidInput, TooLarge
from exactspec.core.signals import CannotProceed
from exactspec.engine import forked_paths
from exactspec.engine.driver import depth_first
from exactspec.engine.exact import ExactSampler
from exactspec.engine.forked_paths import ForkedPaths
from exactspec.sequences import factored
from exactspec.sequences.context import ContextPair
from exactspec.sequences.torch_rules import pytorch_whole_call
from exactspec.sequences.user import user_report
from exactspec.torch_layer.factored import factored_call_law
from exactspec.torch_layer.rule import load_pytorch_rule

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="forks need POSIX")

ROOT = Path(__file__).resolve().parent.parent
ENGINES = ROOT / "examples" / "engines"
RULES = [f"{ENGINES / 'flashinfer_chain.py'}:chain",
         f"{ENGINES / 'flashinfer_chain.py'}:chain_reuse_rejecting_uniform",
         f"{ENGINES / 'hf_speculative_sampling.py'}:speculative_sampling",
         f"{ENGINES / 'vllm_rejection_sampler.py'}:rejection_sample"]
PAIRS = [("1/2,1/3,1/6", "1/4,1/4,1/2"), ("1/4,1/4,1/2,0", "1/2,0,1/4,1/4")]


def _laws(monkeypatch, spec, p, q, gamma, **run):
    """The call law replayed and forked; the forked walk checked to have forked."""
    forks = []
    split = ForkedPaths.split

    def spy(self, arity):
        option = split(self, arity)
        forks.append(self.active)
        return option

    monkeypatch.setattr(ForkedPaths, "split", spy)
    rule = load_pytorch_rule(spec)
    replayed = factored_call_law(rule, Dist(p), Dist(q), gamma, fork_after=float("inf"),
                                 **run)
    assert forks and not any(forks)          # decided at the first choice: no fork
    replayed_choices = len(forks)
    forked = factored_call_law(rule, Dist(p), Dist(q), gamma, fork_after=0, **run)
    assert forks[replayed_choices:] and all(forks[replayed_choices:])   # each choice here
    return replayed, forked


@pytest.mark.parametrize("spec", RULES, ids=lambda s: s.rsplit("/", 1)[-1])
@pytest.mark.parametrize("pq", PAIRS, ids=["three", "zeros"])
def test_forked_call_law_is_the_replayed_one(monkeypatch, spec, pq):
    """Three drafts: the terms, their order, the paths and the axes are the same."""
    replayed, forked = _laws(monkeypatch, spec, *pq, 3)
    assert replayed.paths > 1
    assert forked.terms == replayed.terms
    assert (forked.paths, forked.axes) == (replayed.paths, replayed.axes)


@pytest.mark.parametrize("run", [dict(grid=5), dict(arith="float32"), dict(arith="float16"),
                                 dict(arith="float16", grid=16)],
                         ids=["grid", "float32", "float16", "float16-grid"])
def test_forked_float_and_grid_runs_are_the_replayed_ones(monkeypatch, run):
    replayed, forked = _laws(monkeypatch, RULES[0], *PAIRS[0], 2, **run)
    assert forked.terms == replayed.terms and forked.paths == replayed.paths


def _report(m, spec=RULES[0]):
    rule = load_pytorch_rule(spec)
    report = user_report({"m": m}, pytorch_whole_call(rule, m),
                         pair=ContextPair.context_free(*PAIRS[0]), m=m, arith="float32")
    return {k: v for k, v in report.items() if k != "factored"}, report["factored"]["terms"]


def test_forked_report_is_the_replayed_one(monkeypatch):
    """``verify FILE:chain --tokens 3 --arith float32``: the same report, seconds left out
    (the forks forced by the module's default)."""
    monkeypatch.setattr(forked_paths, "FORK_AFTER_SECONDS", float("inf"))
    replayed = _report(3)
    monkeypatch.setattr(forked_paths, "FORK_AFTER_SECONDS", 0.0)
    assert _report(3) == replayed


CHAIN_FILE = ENGINES / "flashinfer_chain.py"
LOAD_CHAIN = f"""
import importlib.util

import torch

_spec = importlib.util.spec_from_file_location("gallery_chain", {str(CHAIN_FILE)!r})
gallery = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gallery)
"""

COUNTING = LOAD_CHAIN + '''
calls = [0]


def chain(p, q):
    """The gallery's chain; on odd calls its last token replaced by 0."""
    calls[0] += 1
    out = gallery.chain(p, q)
    if calls[0] % 2:
        return list(out[:-1]) + [torch.tensor(0)]
    return out
'''


def test_hidden_state_found_when_the_walk_forks(tmp_path, monkeypatch):
    """A rule that counts its calls in a global: each copy holds the count of its fork, but
    the call's law run again differs, and the report says so."""
    path = tmp_path / "counting.py"
    path.write_text(textwrap.dedent(COUNTING))
    monkeypatch.setattr(forked_paths, "FORK_AFTER_SECONDS", 0.0)
    rule = load_pytorch_rule(f"{path}:chain")
    with pytest.raises(InvalidInput, match="keeps hidden state"):
        user_report({"m": 3}, pytorch_whole_call(rule, 3),
                    pair=ContextPair.context_free(*PAIRS[0]), m=3)


FAILING = LOAD_CHAIN + '''
import os


def raises(p, q):
    """The gallery's chain, raising on the paths that reject the second draft."""
    out = gallery.chain(p, q)
    if len(out) == 2:
        raise ValueError("no residual at the second position")
    return out


def ends(p, q):
    """The same, ending the process there."""
    out = gallery.chain(p, q)
    if len(out) == 2:
        os._exit(3)
    return out
'''


@pytest.fixture
def failing(tmp_path):
    path = tmp_path / "failing.py"
    path.write_text(textwrap.dedent(FAILING))
    return path


def test_an_error_on_a_later_path_is_raised_as_replayed(failing):
    """The path rejecting at the second position raises: a fallback with the same words
    whether that path was replayed or run in a copy."""
    rule = load_pytorch_rule(f"{failing}:raises")
    errors = []
    for after in (float("inf"), 0):
        with pytest.raises(CannotProceed) as err:
            factored_call_law(rule, Dist(PAIRS[0][0]), Dist(PAIRS[0][1]), 3, fork_after=after)
        errors.append(str(err.value))
    assert errors[0] == errors[1] == "ValueError: no residual at the second position"


def test_a_copy_that_ends_the_process_is_refused(failing):
    """User code that ends a copy (``os._exit``) on a later path: refused in one line, and
    this process goes on."""
    rule = load_pytorch_rule(f"{failing}:ends")
    with pytest.raises(InvalidInput, match="ended without its result \\(exit code 3\\)"):
        factored_call_law(rule, Dist(PAIRS[0][0]), Dist(PAIRS[0][1]), 3, fork_after=0)


def _coins(s):
    """Three coins, each drawn after a deadline check (the copies' deadlines)."""
    coin = Dist.parse("1/3,2/3")
    out = []
    for _ in range(3):
        deadline.check()
        out.append(s.draw(coin))
    return tuple(out)


def _walk(after, *, on_leaf=None):
    law = {}

    def leaf(s, y):
        law[y] = law.get(y, 0) + s.weight
        if on_leaf is not None:
            on_leaf()

    def collect():
        return dict(law)

    def merge(data):
        for y, w in data.items():
            law[y] = law.get(y, 0) + w

    forked = ForkedPaths(collect, merge, after_seconds=after)
    paths = depth_first(ExactSampler(), _coins, leaf, forked=forked)
    return paths, law, forked


def test_a_forked_walk_of_the_engine_sampler_is_the_replayed_one():
    paths, law, forked = _walk(float("inf"))
    assert not forked.active and paths == 8
    paths_forked, law_forked, forked = _walk(0)
    assert forked.active and paths_forked == 8
    assert law_forked == law and law[(1, 1, 1)] == F(8, 27)
    assert sum(law_forked.values()) == 1


@pytest.mark.parametrize("close", [True, False])
def test_a_deadline_closed_before_a_copy_resumes_is_closed_there(tmp_path, close):
    """A deadline whose clock (a file every process reads) passes it at the first path's
    leaf: closed there, the copies run their paths; left open, the first copy resumed
    refuses, and its refusal is raised here."""
    now = tmp_path / "now"
    now.write_text("0")
    first = Deadline(5, lambda spent: TooLarge(f"over: {spent:g} s"),
                     clock=lambda: float(now.read_text()))

    def passes():
        now.write_text("100")
        if close:
            first.close()

    with first:
        if close:
            paths, law, _ = _walk(0, on_leaf=passes)
            assert paths == 8 and sum(law.values()) == 1
        else:
            with pytest.raises(TooLarge, match="over: 100 s"):
                _walk(0, on_leaf=passes)


def test_the_budget_of_a_forked_walk_counts_a_copy_at_its_part(monkeypatch):
    """A first path of 10 s whose copies cost 1 s each (the part after their choice): 8 paths
    by Knuth's estimate are 10 + 7 = 17 s a run, 34 s for two, within 60 s at once, where
    replayed (8 * 10 * 2 = 160 s, at least 4 * 10 * 2 = 80 s) they are refused; 4 paths at
    least of a first path of 25 s and copies of 3 s: 34 s a run, 68 s, refused with that
    estimate; past Knuth's estimate the random engine paths count the paths, each then at a
    copy's part, not at a random path's seconds; given the copies' probes, they count the
    paths instead, each part at the probes' mean."""
    rule = load_pytorch_rule(RULES[0])
    budget = factored.CallBudget(rule, Dist(PAIRS[0][0]), Dist(PAIRS[0][1]), 3, 2, 10 ** 6, 60)
    monkeypatch.setattr(factored, "call_paths_estimate", None)        # never called
    budget(8, 4, 10.0, forks=1.0)
    with pytest.raises(TooLarge, match="at least 4 engine paths at about 10 s each"):
        budget(8, 4, 10.0)
    with pytest.raises(TooLarge) as err:
        budget(8, 4, 25.0, forks=3.0)
    assert "at least 4 engine paths at about 8.5 s each, the call's law run 2 times: about " \
        "68 s" in str(err.value) and err.value.estimate == 68
    monkeypatch.setattr(factored, "call_paths_estimate", lambda *a, **k: (20, 0.5))
    budget(40, 4, 5.0)                                # replayed: 20 * 0.5 * 2 = 20 s
    with pytest.raises(TooLarge, match="about 20 engine paths at about 2.6 s each"):
        budget(40, 4, 5.0, forks=2.5)                 # forked: (5 + 19 * 2.5) * 2 = 105 s
    monkeypatch.setattr(factored, "call_paths_estimate", None)        # never called
    budget(8, 4, 20.0, forks=3.0, probe=lambda: (4, 2.0))   # (20 + 3 * 2) * 2 = 52 s
    with pytest.raises(TooLarge, match="about 7 engine paths at about 4.6 s each"):
        budget(8, 4, 20.0, forks=3.0, probe=lambda: (7, 2.0))   # (20 + 6 * 2) * 2 = 64 s


def test_a_walk_that_cannot_fork_replays(monkeypatch):
    """``os.fork`` failing at the first choice (too many processes): the walk replays its
    prefixes instead, with the same law."""
    def no_fork():
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(forked_paths.os, "fork", no_fork)
    paths, law, forked = _walk(0)
    assert forked.active is False and paths == 8 and law[(0, 0, 0)] == F(1, 27)


def _process_gone(pid: int) -> bool:
    """Whether ``pid`` has ended (gone, or a zombie not yet reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads /proc")
def test_a_watched_run_stopped_ends_the_copies_it_forked(tmp_path):
    """The watch that stops a supervised run at its wall-clock budget ends the processes the
    run forked too (its process group), not only the run."""
    import time

    from exactspec.core.supervise import supervised

    pid_file = tmp_path / "copy"

    def work():
        pid = os.fork()
        if pid == 0:                                  # a copy that would outlive the run
            time.sleep(120)
            os._exit(0)
        pid_file.write_text(str(pid))
        time.sleep(120)

    with pytest.raises(TooLarge, match="wall-clock time and was stopped"):
        supervised(work, seconds=1, what="the run")
    pid = int(pid_file.read_text())
    for _ in range(100):
        if _process_gone(pid):
            break
        time.sleep(0.05)
    assert _process_gone(pid)


def test_a_copy_killed_before_it_resumes_is_refused():
    """A suspended copy ended from outside (``SIGKILL``) before its turn: refused in one line
    when the walk reaches it, the other copies ended."""
    import signal

    def leaf(s, y):
        if not forked.is_copy and forked.splits:
            os.kill(forked.splits[-1][0].pid, signal.SIGKILL)

    forked = ForkedPaths(lambda: None, lambda data: None, after_seconds=0)
    with pytest.raises(InvalidInput, match="ended without its result \\(signal 9\\)"):
        depth_first(ExactSampler(), _coins, leaf, forked=forked)
    assert forked.splits == []


def test_the_copies_probed_count_the_paths_and_stay_suspended():
    """After the first path of three coins (a copy at each coin), one random path below each
    copy's choice counts the tree under it (4, 2 and 1 paths: a tree of even branches is
    counted exactly), run in a fork of the copy; the copies then run their paths as before."""
    estimates = []

    def every(count):
        if count == 1:
            estimates.append(forked.probe())

    law = {}

    def leaf(s, y):
        law[y] = law.get(y, 0) + s.weight

    def merge(data):
        for y, w in data.items():
            law[y] = law.get(y, 0) + w

    forked = ForkedPaths(lambda: dict(law), merge, after_seconds=0)
    paths = depth_first(ExactSampler(), _coins, leaf, forked=forked, every=every)
    assert paths == 8 and estimates[0][0] == 8 and estimates[0][1] >= 0
    assert sum(law.values()) == 1 and law[(1, 1, 1)] == F(8, 27)


def test_a_chain_that_stops_at_its_first_rejection_probed_exactly(monkeypatch):
    """The Triton gallery's vLLM-style chain (its kernels launched with three drafts): 4
    engine paths (the first rejected draft ends the path) against Knuth's 8 from the first
    path; the probes of its copies say 4, and the call's law is the replayed one."""
    seen = []

    class Budget:
        def deadline(self):
            return None

        def __call__(self, arities, least, seconds, forks=None, probe=None):
            seen.append((arities, least, forks is not None, probe()))

    rule = load_pytorch_rule(f"{ENGINES / 'triton_kernels.py'}:chain_tokens")
    forked = factored_call_law(rule, Dist(PAIRS[0][0]), Dist(PAIRS[0][1]), 3, fork_after=0,
                               first_path=Budget())
    replayed = factored_call_law(rule, Dist(PAIRS[0][0]), Dist(PAIRS[0][1]), 3,
                                 fork_after=float("inf"))
    (arities, least, forks, (paths, _)), = seen
    assert forks and paths == replayed.paths == forked.paths
    assert forked.terms == replayed.terms
    assert (arities, least, paths) == (8, 4, 4)
