"""User code that catches everything: the engine's signals kept on the run.

A rule that catches exactspec's own exceptions (a route's fallback, a refusal of hidden
randomness or of an op outside the tensor layer) and carries on would be judged on a path real
Python never takes.  Each case here is a rule that is lossy or not runnable as written; each
must come out refused (exit 2, one line naming where the signal was raised and caught) or
LOSSY with its true TV, never LOSSLESS, on every surface: ``verify`` with and without
``--certificate``, ``assert_lossless``, ``probability`` and the Python API of sequences.
"""

import textwrap
from fractions import Fraction

import pytest

pytest_plugins = ["pytester"]

from exactspec import Dist, SignalCaught, verify
from exactspec.cli import main
from exactspec.testing import assert_lossless, probability

P, Q = Dist.parse("1/2,1/3,1/6"), Dist.parse("2/3,1/6,1/6")
PQ = ["--p", "1/2,1/3,1/6", "--q", "2/3,1/6,1/6"]


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, argv, *words):
    """Exit 2, nothing on stdout, one line on stderr holding every word."""
    code, out, err = run(capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 2 and out == "", (code, out, err)
    assert len(lines) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def write(tmp_path, name, body) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


# -- a route's fallback, caught ---------------------------------------------------------------
# The draft is a tensor axis on the fast route: `.item()` of it is the route's fallback.  Each
# rule keeps draft 0 outright and otherwise runs the Hugging Face rule: its true law is
# (2/3, 1/6, 1/6) on this pair, TV 1/6 (the path route says so).
HF_TAIL = """
    ratio = p[draft] / q[draft]
    r = torch.rand_like(ratio)
    if (r <= ratio).all():
        return draft
    residual = torch.clamp(p - q, min=0)
    residual.div_(residual.sum())
    return torch.multinomial(residual, num_samples=1)
"""
CATCHERS = {
    "except_exception": """
        try:
            if draft.item() == 0:
                return draft
        except Exception:
            pass
    """,
    "except_base_exception": """
        try:
            if draft.item() == 0:
                return draft
        except BaseException:
            pass
    """,
    "bare_except": """
        try:
            if draft.item() == 0:
                return draft
        except:  # noqa: E722
            pass
    """,
    "contextlib_suppress": """
        with contextlib.suppress(BaseException):
            if draft.item() == 0:
                return draft
    """,
    "exit_returns_true": """
        with Swallow():
            if draft.item() == 0:
                return draft
    """,
    "flag_in_finally": """
        done = [False]
        def keep():
            try:
                value = draft.item()
                done[0] = True
                return value == 0
            finally:
                if not done[0]:
                    return False
        if keep():
            return draft
    """,
}


def _catching_rule(tmp_path, case) -> str:
    body = textwrap.indent(textwrap.dedent(CATCHERS[case]), "    ")
    source = ("import contextlib\nimport torch\n\n\nclass Swallow:\n"
              "    def __enter__(self):\n        return self\n\n"
              "    def __exit__(self, *exc):\n        return True\n\n\n"
              "def sample(p, q):\n    draft = torch.multinomial(q, num_samples=1)\n"
              + body + textwrap.indent(textwrap.dedent(HF_TAIL), "    "))
    return write(tmp_path, case, source) + ":sample"


@pytest.mark.parametrize("case", sorted(CATCHERS))
def test_a_caught_fallback_is_run_on_the_paths_with_its_true_law(capsys, tmp_path, case):
    spec = _catching_rule(tmp_path, case)
    result = verify(spec, P, Q)
    assert not result.lossless
    assert result.law == {0: Fraction(2, 3), 1: Fraction(1, 6), 2: Fraction(1, 6)}
    assert result.bias == Fraction(1, 6)
    code, out, err = run(capsys, "verify", spec, *PQ)
    assert code == 1 and "TV(output, p) ~0.167 (exactly 1/6)" in out, (out, err)
    code, out, err = run(capsys, "verify", spec, *PQ, "--certificate", tmp_path / "c.json")
    assert code == 1 and "TV(output, p) ~0.167 (exactly 1/6)" in out, (out, err)
    with pytest.raises(AssertionError):
        assert_lossless(spec, P, Q)


# -- refusals, caught ------------------------------------------------------------------------
SAMPLER_HIDDEN = {
    "random_random": ("import random", "random.random() < 2", "random.random"),
    "numpy_random": ("import numpy as np", "np.random.rand() < 2", "numpy.random.rand"),
    "time_time": ("import time", "time.time() > 0", "time.time"),
    "os_urandom": ("import os", "os.urandom(1) is not None", "os.urandom"),
}


def _sampler_rule(tmp_path, case, catch="except Exception:") -> str:
    header, test, _ = SAMPLER_HIDDEN[case]
    lines = [header, "from exactspec import residual", "", "",
             "def rule(s, p, q):",
             "    x = s.draft(q)",
             "    try:",
             f"        if {test}:",                           # line 8
             "            return x",
             f"    {catch}",                                  # line 10
             "        pass",
             "    if s.uniform() < p[x] / q[x]:",
             "        return s.accept(x)",
             "    return s.pick(residual(p, q), s.uniform())", ""]
    path = tmp_path / f"{case}.py"
    path.write_text("\n".join(lines))
    return f"{path}:rule"


def _torch_rule(tmp_path, name, head: str) -> str:
    """A PyTorch file: ``head`` (module lines, then the start of ``sample``), then the Hugging
    Face rule's tail."""
    source = textwrap.dedent(head) + textwrap.indent(textwrap.dedent(HF_TAIL), "    ")
    return write(tmp_path, name, source) + ":sample"


@pytest.mark.parametrize("case", sorted(SAMPLER_HIDDEN))
def test_a_caught_refusal_of_hidden_randomness_refuses_the_rule(capsys, tmp_path, case):
    spec = _sampler_rule(tmp_path, case)
    name = SAMPLER_HIDDEN[case][2]
    line = refused(capsys, ["verify", spec, *PQ], "caught", name, f"{case}.py:8",
                   f"{case}.py:10")
    assert "LOSSLESS" not in line
    refused(capsys, ["verify", spec, *PQ, "--certificate", tmp_path / "c.json"], "caught", name)
    refused(capsys, ["verify", spec, *PQ, "--arith", "float32"], "caught", name)
    assert not (tmp_path / "c.json").exists()
    with pytest.raises(SignalCaught, match="caught"):
        verify(spec, P, Q)
    with pytest.raises(SignalCaught, match="caught"):
        assert_lossless(spec, P, Q)


def test_a_caught_refusal_through_base_exception_and_suppress(capsys, tmp_path):
    spec = _sampler_rule(tmp_path, "random_random", "except BaseException:")
    refused(capsys, ["verify", spec, *PQ], "caught", "random.random")
    spec = write(tmp_path, "suppressed", """
        import contextlib
        import random


        def rule(s, p, q):
            x = s.draft(q)
            with contextlib.suppress(ValueError):
                if random.random() < 2:
                    return x
            return x
        """) + ":rule"
    refused(capsys, ["verify", spec, *PQ], "caught", "suppressed.py:9", "suppressed.py:8")


PYTORCH_REFUSED = {
    "fft": ("torch.fft.fft(p)", "torch.fft"),
    "clock": ("time.time()", "time.time"),
}


@pytest.mark.parametrize("case", sorted(PYTORCH_REFUSED))
def test_a_caught_refusal_in_a_pytorch_rule(capsys, tmp_path, case):
    call, name = PYTORCH_REFUSED[case]
    spec = _torch_rule(tmp_path, f"torch_{case}", f"""\
        import time
        import torch


        def sample(p, q):
            draft = torch.multinomial(q, num_samples=1)
            try:
                {call}
                return draft
            except Exception:
                pass
        """)
    refused(capsys, ["verify", spec, *PQ], "caught", name)
    refused(capsys, ["verify", spec, *PQ, "--certificate", tmp_path / "c.json"], "caught")
    refused(capsys, ["verify", spec, *PQ, "--arith", "float32"], "caught")
    with pytest.raises(SignalCaught):
        assert_lossless(spec, P, Q)


def test_a_refusal_whose_traceback_is_taken_off_is_still_caught(capsys, tmp_path):
    spec = write(tmp_path, "cleared", """
        import random


        def rule(s, p, q):
            x = s.draft(q)
            try:
                random.random()
            except Exception as err:
                err.__traceback__ = None
            return x
        """) + ":rule"
    refused(capsys, ["verify", spec, *PQ], "user code caught", "random.random")


def test_a_check_that_catches_a_refusal_gets_no_probability(tmp_path):
    spec = write(tmp_path, "check", """
        import random


        def check(s, p, q):
            x = s.draft(q)
            try:
                return random.random() < 2
            except Exception:
                return True
        """) + ":check"
    with pytest.raises(SignalCaught, match="random.random"):
        probability(spec, P, Q)


def test_a_refusal_in_a_thread_of_the_rule_is_one_line(capsys, tmp_path):
    spec = write(tmp_path, "threaded", """
        import random
        import threading


        def rule(s, p, q):
            x = s.draft(q)
            worker = threading.Thread(target=random.random)
            worker.start()
            worker.join()
            return x
        """) + ":rule"
    refused(capsys, ["verify", spec, *PQ], "a thread", "random.random", "never reached")


def test_an_uncaught_refusal_is_reported_as_before(capsys, tmp_path):
    spec = write(tmp_path, "plain", """
        import random


        def rule(s, p, q):
            x = s.draft(q)
            if random.random() < 2:
                return x
            return x
        """) + ":rule"
    line = refused(capsys, ["verify", spec, *PQ], "random.random")
    assert "user code caught" not in line


def test_a_rule_catching_only_its_own_errors_is_proved(capsys, tmp_path):
    spec = write(tmp_path, "own", """
        from exactspec import residual


        def rule(s, p, q):
            x = s.draft(q)
            try:
                ratio = p[x] / q[x]
            except ZeroDivisionError:
                ratio = 1
            try:
                int("not a number")
            except ValueError:
                pass
            if s.uniform() < ratio:
                return s.accept(x)
            return s.pick(residual(p, q), s.uniform())
        """) + ":rule"
    code, out, err = run(capsys, "verify", spec, *PQ)
    assert code == 0 and "LOSSLESS" in out, (out, err)


# -- hidden state wherever it lives -----------------------------------------------------------
def test_a_counter_in_a_helper_module_is_refused(capsys, tmp_path, monkeypatch):
    write(tmp_path, "counting_helper", """
        COUNTS = {"n": 0}


        def bump():
            COUNTS["n"] += 1
            return COUNTS["n"]
        """)
    spec = write(tmp_path, "uses_helper", """
        import counting_helper
        from exactspec import residual


        def rule(s, p, q):
            x = s.draft(q)
            if counting_helper.bump() % 2 == 0:
                return x
            if s.uniform() < p[x] / q[x]:
                return s.accept(x)
            return s.pick(residual(p, q), s.uniform())
        """) + ":rule"
    monkeypatch.syspath_prepend(str(tmp_path))
    refused(capsys, ["verify", spec, *PQ], "hidden state", "counting_helper.COUNTS")


def test_a_pytorch_chain_keeping_state_in_a_helper_module_is_refused(capsys, tmp_path,
                                                                     monkeypatch):
    """A multi-position PyTorch rule, every line in a ``try``, that turns lossy after its
    third call through a list in a helper module: the factored route sees the state change
    and refuses it; it once declined, and the path route, run after those calls, found the
    state settled and gave the changed rule's verdict (lossy-logic, exit 1)."""
    write(tmp_path, "calls_helper", """
        CALLS = []
        """)
    spec = write(tmp_path, "chain_with_helper", """
        import torch
        import calls_helper


        def chain(p, q):
            try:
                calls_helper.CALLS.append(1)
                n = q.shape[0]
                drafts = torch.multinomial(q, num_samples=1)
                pd = p[:n].gather(1, drafts).reshape(n)
                qd = q.gather(1, drafts).reshape(n)
                u = torch.rand(n)
                out = []
                for i in range(n):
                    if not bool(u[i] * qd[i] < pd[i]):
                        residual = (p[i] - q[i]).clamp(min=0)
                        if len(calls_helper.CALLS) > 3:
                            residual = p[i]
                        return out + [torch.multinomial(residual, 1)[0]]
                    out.append(drafts[i, 0])
                return out + [torch.multinomial(p[n], 1)[0]]
            except BaseException:
                return [torch.tensor(0)]
        """) + ":chain"
    monkeypatch.syspath_prepend(str(tmp_path))
    refused(capsys, ["verify", spec, "--tokens", "3", *PQ], "hidden state",
            "calls_helper.CALLS")


def test_the_hit_count_of_an_lru_cache_is_state(capsys, tmp_path):
    spec = write(tmp_path, "cached", """
        import functools
        from exactspec import residual


        @functools.lru_cache(maxsize=None)
        def ratio_of(a, b):
            return a / b


        def rule(s, p, q):
            x = s.draft(q)
            ratio = ratio_of(p[x], q[x])
            if ratio_of.cache_info().hits % 2 == 1:
                return x
            if s.uniform() < ratio:
                return s.accept(x)
            return s.pick(residual(p, q), s.uniform())


        def pure(s, p, q):
            x = s.draft(q)
            if s.uniform() < ratio_of(p[x], q[x]):
                return s.accept(x)
            return s.pick(residual(p, q), s.uniform())
        """)
    refused(capsys, ["verify", spec + ":rule", *PQ], "hidden state", "cache of ratio_of")
    code, out, err = run(capsys, "verify", spec + ":pure", *PQ)
    assert code == 0 and "LOSSLESS" in out, (out, err)


def test_a_pytorch_rule_counter_is_refused_on_the_certificate_route(capsys, tmp_path):
    spec = _torch_rule(tmp_path, "torch_counter", """\
        import torch

        N = 0


        def sample(p, q):
            global N
            N += 1
            draft = torch.multinomial(q, num_samples=1)
            if N % 2 == 0:
                return draft
        """)
    refused(capsys, ["verify", spec, *PQ], "hidden state", "'N'")
    refused(capsys, ["verify", spec, *PQ, "--certificate", tmp_path / "c.json"],
            "hidden state", "'N'")
    assert not (tmp_path / "c.json").exists()


def test_prove_sequence_refuses_what_the_command_line_refuses(tmp_path, monkeypatch):
    from exactspec.engine.hidden_state import HiddenState
    from exactspec.sequences.context import ContextPair
    from exactspec.sequences.multitoken import prove_sequence

    write(tmp_path, "stateful_chain", """
        from exactspec import residual

        CALLS = [0]


        def chain(s, pair, ctx):
            CALLS[0] += 1
            p, q = pair.target(ctx), pair.draft(ctx)
            x = s.draft(q)
            if CALLS[0] % 2 == 0:
                return (x,)
            if s.uniform() < p[x] / q[x]:
                return (s.accept(x),)
            return (s.pick(residual(p, q), s.uniform()),)


        def plain(s, pair, ctx):
            p, q = pair.target(ctx), pair.draft(ctx)
            x = s.draft(q)
            if s.uniform() < p[x] / q[x]:
                return (s.accept(x),)
            return (s.pick(residual(p, q), s.uniform()),)
        """)
    monkeypatch.syspath_prepend(str(tmp_path))
    import stateful_chain

    pair = ContextPair(lambda c: "1/2,1/3,1/6", lambda c: "2/3,1/6,1/6", "abc")
    for full_paths in (False, True):
        with pytest.raises(HiddenState, match="CALLS"):
            prove_sequence(stateful_chain.chain, pair, 2, full_paths=full_paths)
        assert prove_sequence(stateful_chain.plain, pair, 2, full_paths=full_paths).lossless


# -- multi-position rules and the plugin -------------------------------------------------------
def _chain_spec(tmp_path, catch: str) -> str:
    write(tmp_path, "catching_chain", f"""
        import random
        from exactspec import residual


        def chain(s, drafts, p, q):
            out = ()
            for i, x in enumerate(drafts):
                try:
                    if random.random() < 2:
                        return out + (x,)
                {catch}
                    pass
                if s.uniform() < p[i][x] / q[i][x]:
                    out += (x,)
                    continue
                return out + (s.pick(residual(p[i], q[i]), s.uniform()),)
            return out + (s.pick(p[len(drafts)], s.uniform()),)
        """)
    spec = tmp_path / "chain.json"
    spec.write_text('{"labels": ["a", "b"], "target": {"": "1/2,1/2", "a": "1/3,2/3", '
                    '"b": "2/3,1/3"}, "draft": {"": "1/4,3/4", "a": "1/2,1/2", "b": "1/2,1/2"}, '
                    '"verifier": "catching_chain.py:chain", "gamma": 2, "m": 2}')
    return str(spec)


@pytest.mark.parametrize("catch", ["except Exception:", "except BaseException:"])
def test_a_multi_position_rule_that_catches_a_refusal(capsys, tmp_path, catch):
    spec = _chain_spec(tmp_path, catch)
    refused(capsys, ["tree", spec], "user code caught", "random.random",
            "catching_chain.py:10")
    refused(capsys, ["tree", spec, "--arith", "float32"], "user code caught")
    refused(capsys, ["verify", str(tmp_path / "catching_chain.py") + ":chain", "--tokens", 2,
                     "--gamma", 2, "--p", "1/2,1/2", "--q", "1/4,3/4"], "user code caught")


def test_the_plugin_does_not_pass_a_rule_that_catches_a_refusal(pytester, monkeypatch,
                                                                 tmp_path):
    spec = _sampler_rule(tmp_path, "random_random")
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_inner=f"""
        from exactspec import Dist


        def test_rule(exact_lossless):
            exact_lossless({spec!r}, Dist.parse("1/2,1/3,1/6"), Dist.parse("2/3,1/6,1/6"))
        """)
    result = pytester.runpytest("-p", "exactspec.pytest_plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*SignalCaught: user code caught*random.random*"])


# -- budgets kept from outside the user's code --------------------------------------------------
DISARMS = {
    "catches_and_blocks": """
        import signal


        def check(s, p, q):
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            while True:
                try:
                    sum(range(1000))
                except BaseException:
                    pass
        """,
    "ignores_the_alarm": """
        import signal


        def check(s, p, q):
            signal.signal(signal.SIGALRM, signal.SIG_IGN)
            while True:
                pass
        """,
    "cancels_the_timer": """
        import signal


        def check(s, p, q):
            signal.setitimer(signal.ITIMER_REAL, 0)
            while True:
                pass
        """,
}


@pytest.mark.parametrize("case", sorted(DISARMS))
def test_seconds_hold_against_a_check_that_disarms_the_timer(capsys, tmp_path, case):
    spec = write(tmp_path, case, DISARMS[case]) + ":check"
    refused(capsys, ["probability", spec, *PQ, "--seconds", "0.5"], "more than 0.5 s")


def test_seconds_hold_through_the_api(tmp_path):
    from exactspec import TooLarge

    spec = write(tmp_path, "disarming", DISARMS["catches_and_blocks"]) + ":check"
    with pytest.raises(TooLarge, match="more than 0.5 s"):
        probability(spec, P, Q, seconds=0.5)
    loop = write(tmp_path, "loops", """
        def rule(s, p, q):
            x = s.draft(q)
            while True:
                try:
                    pass
                except BaseException:
                    pass
        """) + ":rule"
    with pytest.raises(TooLarge, match="more than 0.5 s"):
        assert_lossless(loop, P, Q, seconds=0.5)


def test_seconds_hold_beside_another_thread(tmp_path):
    import threading

    from exactspec import TooLarge

    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        spec = write(tmp_path, "disarming", DISARMS["ignores_the_alarm"]) + ":check"
        with pytest.raises(TooLarge, match="more than 0.5 s"):
            probability(spec, P, Q, seconds=0.5)
    finally:
        stop.set()
        other.join()


def test_a_rule_that_never_returns_is_stopped_by_verify_seconds(capsys, tmp_path):
    spec = write(tmp_path, "forever", """
        import signal


        def rule(s, p, q):
            signal.signal(signal.SIGALRM, signal.SIG_IGN)
            x = s.draft(q)
            while True:
                pass
        """) + ":rule"
    refused(capsys, ["verify", spec, *PQ, "--seconds", "0.5"], "more than 0.5 s", "--seconds")
    refused(capsys, ["verify", spec, *PQ, "--seconds", "0"], "--seconds")


def test_the_plugin_seconds_bound_exact_lossless(pytester, monkeypatch, tmp_path):
    spec = write(tmp_path, "loops", """
        def rule(s, p, q):
            x = s.draft(q)
            while True:
                pass
        """) + ":rule"
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_inner=f"""
        import pytest
        from exactspec import Dist


        @pytest.mark.exactspec(seconds=0.5)
        def test_rule(exact_lossless):
            exact_lossless({spec!r}, Dist.parse("1/2,1/2"), Dist.parse("1/3,2/3"))
        """)
    result = pytester.runpytest("-p", "exactspec.pytest_plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*TooLarge: the check of*more than 0.5 s*"])


def test_a_tolerance_with_a_huge_exponent_is_refused_at_once(pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_inner="""
        import pytest


        @pytest.mark.exactspec(tolerance="1e-100000000")
        def test_nothing():
            pass
        """)
    result = pytester.runpytest("-p", "exactspec.pytest_plugin", "-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*tolerance='1e-100000000'*need an exact number*"])


# -- certificates replayed through a rule that catches the replay's signals ------------------------
def test_a_trusted_replay_that_catches_a_mismatch_is_rejected(capsys, tmp_path):
    from exactspec.replay import main as checker_main

    rule = tmp_path / "replayed.py"
    rule.write_text("def rule(s, p, q):\n    return s.draft(q)\n")
    cert = tmp_path / "c.json"
    code, out, err = run(capsys, "verify", f"{rule}:rule", "--p", "1/2,1/2", "--q", "1/2,1/2",
                         "--certificate", cert)
    assert code == 0, err
    assert checker_main([str(cert), "--trust", f"{rule}:rule"]) == 0
    capsys.readouterr()
    rule.write_text(textwrap.dedent("""
        def rule(s, p, q):
            x = s.draft(q)
            try:
                s.coin(1/2)          # a choice the certificate does not record
            except Exception:
                pass
            return x
        """))
    assert checker_main([str(cert), "--trust", f"{rule}:rule"]) == 1
    out, _ = capsys.readouterr()
    assert "caught the replay's signal" in out and "CERTIFICATE REJECTED" in out


def test_the_checker_refuses_a_fifo_without_blocking(capsys, tmp_path):
    import os

    from exactspec.replay import main as checker_main

    fifo = tmp_path / "cert.json"
    os.mkfifo(fifo)
    assert checker_main([str(fifo)]) == 2
    _, err = capsys.readouterr()
    assert "FIFO" in err and len(err.strip().splitlines()) == 1
