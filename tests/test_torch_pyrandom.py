"""Python's and NumPy's random draws in a PyTorch rule: each one a uniform of the engine (ideal
in exact runs, on the float64 grid ``j / 2**53`` under ``--arith``), the laws by hand and equal
to the same rules written with ``torch.rand``; what stays refused."""

from __future__ import annotations

import json
import textwrap
from fractions import Fraction as F

import pytest

from exactspec import Dist, verify
from exactspec.cli import main
from exactspec.core.errors import InvalidInput
from exactspec.engine.exact import enumerate_paths
from exactspec.engine.watch import HiddenRandomness, watched
from exactspec.rounding import split_bias
from exactspec.torch_layer import load_pytorch_rule


def _fast(rule, p, q, grid=None, arith=None, sum_order=None):
    """The tensor-axis routes' enumeration of ``rule`` (its draft as a tensor axis), or
    ``None`` where they decline (the planner would take the paths)."""
    from exactspec.routes import Request, plan
    from exactspec.routes.planner import TENSOR_AXIS

    answer = plan(Request(run=rule, name=rule.spec, p=p, q=q, grid=grid, arith=arith,
                          sum_order=sum_order, tensor_rule=rule), TENSOR_AXIS, optional=True)
    return None if answer is None else answer.enumeration


P, Q = Dist.parse("1/2,1/3,1/6"), Dist.parse("1/3,1/3,1/3")
P2, Q2 = Dist.parse("1/2,1/3,1/6"), Dist.parse("1/6,1/6,2/3")
EXACT = {0: F(1, 2), 1: F(1, 3), 2: F(1, 6)}
N53 = 2 ** 53

RULES = '''
import random

import numpy as np
import torch


def _residual(p, q):
    p_prime = torch.clamp(p - q, min=0)
    p_prime.div_(p_prime.sum())
    return torch.multinomial(p_prime, num_samples=1)


def hf_le(p, q):
    """transformers' acceptance test with Python's uniform, compared in float64."""
    draft = torch.multinomial(q, num_samples=1)
    if random.random() <= (p[draft] / q[draft]).item():
        return draft
    return _residual(p, q)


def hf_lt(p, q):
    draft = torch.multinomial(q, num_samples=1)
    if random.random() < (p[draft] / q[draft]).item():
        return draft
    return _residual(p, q)


def hf_torch_rand(p, q):
    """The same rule with torch's float64 uniform."""
    draft = torch.multinomial(q, num_samples=1)
    if (torch.rand(1, dtype=torch.float64) <= (p[draft] / q[draft]).item()).item():
        return draft
    return _residual(p, q)


def hf_tensor(p, q):
    """The uniform compared with the ratio tensor (the draft stays a tensor axis)."""
    draft = torch.multinomial(q, num_samples=1)
    if random.random() <= p[draft] / q[draft]:
        return draft
    return _residual(p, q)


def hf_tensor_torch_rand(p, q):
    draft = torch.multinomial(q, num_samples=1)
    if (torch.rand((), dtype=torch.float64) <= p[draft] / q[draft]).item():
        return draft
    return _residual(p, q)


def reuse(p, q):
    """The rejecting uniform reused for the residual's inverse CDF: a real bug."""
    draft = torch.multinomial(q, num_samples=1)
    u = random.random()
    if u <= (p[draft] / q[draft]).item():
        return draft
    r = torch.clamp(p - q, min=0)
    for i, c in enumerate(torch.cumsum(r / r.sum(), 0).tolist()):
        if u < c:
            return i
    return len(p) - 1


def choices(p, q):
    draft = torch.multinomial(q, num_samples=1)
    if random.uniform(0, 1) <= (p[draft] / q[draft]).item():
        return draft
    w = torch.clamp(p - q, min=0).tolist()
    return random.choices(range(len(w)), weights=w)[0]


def seeded(p, q):
    rng = random.Random(1234)
    draft = torch.multinomial(q, num_samples=1)
    if rng.random() <= (p[draft] / q[draft]).item():
        return draft
    w = torch.clamp(p - q, min=0).tolist()
    return rng.choices(range(len(w)), weights=w)[0]


def numpy_generator(p, q):
    rng = np.random.default_rng(0)
    draft = torch.multinomial(q, num_samples=1)
    if rng.random() <= (p[draft] / q[draft]).item():
        return draft
    r = torch.clamp(p - q, min=0)
    return int(rng.choice(len(p), p=(r / r.sum()).tolist()))


def numpy_module(p, q):
    draft = torch.multinomial(q, num_samples=1)
    if np.random.uniform(0.0, 1.0) <= (p[draft] / q[draft]).item():
        return draft
    r = torch.clamp(p - q, min=0)
    return int(np.random.choice(len(p), p=(r / r.sum()).tolist()))


def uniform_choice(p, q):
    return random.choice([0, 1, 2])


def numpy_uniform_choice(p, q):
    return int(np.random.default_rng(7).choice(3))


def unweighted_choices(p, q):
    return random.choices([0, 1, 2], k=1)[0]


def randints(p, q):
    """Four exact uniform integers on 0..2 (Python's, a Random's, NumPy's two kinds)."""
    picks = [random.randint(0, 2), random.Random(4).randrange(3),
             int(np.random.default_rng(1).integers(3)), int(np.random.randint(0, 3))]
    return picks[random.randrange(0, 4)]


def gauss(p, q):
    return int(random.gauss(0, 1) > 0)


def system_random(p, q):
    return int(random.SystemRandom().random() < 0.5)


def clock(p, q):
    import time
    return int(time.time() % 2 < 1)


def sized(p, q):
    return int(np.random.default_rng(0).random(3)[0] < 0.5)
'''


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    path = tmp_path_factory.mktemp("pyrandom") / "pyrandom_rules.py"
    path.write_text(RULES)
    return str(path)


def test_hf_rule_with_python_random_is_lossless_and_equals_torch_rand(rules):
    for name in ("hf_le", "hf_lt", "hf_torch_rand", "hf_tensor", "choices", "seeded",
                 "numpy_generator", "numpy_module"):
        for p, q in ((P, Q), (P2, Q2)):
            r = verify(f"{rules}:{name}", p, q)
            assert r.lossless and r.law == EXACT, name
            assert r.acceptance == (F(5, 6) if q is Q else F(1, 2)), name


def test_the_tensor_comparison_keeps_the_draft_as_a_tensor_axis(rules):
    r = verify(f"{rules}:hf_tensor", P, Q)
    assert r.enumeration.paths == 2                      # the draft enumerated as an axis
    twin = verify(f"{rules}:hf_tensor_torch_rand", P, Q)
    assert twin.enumeration.paths == 2 and twin.law == r.law == EXACT
    rule = load_pytorch_rule(f"{rules}:hf_tensor")
    with watched(rule.function):
        fast = _fast(rule, P2, Q2)
        paths = enumerate_paths(rule, P2, Q2, 1, max_paths=None)
    assert fast is not None and fast.law == paths.law == EXACT
    assert fast.acceptance == paths.acceptance == F(1, 2)


def test_a_reused_uniform_has_its_exact_law(rules):
    # rejected only at draft 2 (ratio 1/4), u then uniform on (1/4, 1); the residual's CDF
    # (2/3, 1, 1): token 0 on (1/4, 2/3), token 1 on [2/3, 1)
    r = verify(f"{rules}:reuse", P2, Q2)
    assert r.law == {0: F(1, 6) + F(2, 3) * F(5, 12), 1: F(1, 6) + F(2, 3) * F(1, 3),
                     2: F(1, 6)} == {0: F(4, 9), 1: F(7, 18), 2: F(1, 6)}
    assert not r.lossless


def test_uniform_choices_are_exact(rules):
    for name in ("uniform_choice", "numpy_uniform_choice", "unweighted_choices", "randints"):
        assert verify(f"{rules}:{name}", P, Q).law == {0: F(1, 3), 1: F(1, 3), 2: F(1, 3)}


def test_under_float32_the_uniform_is_on_the_float64_grid(rules):
    """On p = 1/2,1/3,1/6 and a uniform draft the float32 ratios are 3/2 (rounded), 1 and
    1/2 exactly; the residual is all on token 0.  ``u <= 1/2`` holds at 2**52 + 1 points of
    the 2**53 grid, ``u < 1/2`` at 2**52."""
    le = split_bias(f"{rules}:hf_le", P, Q, arith="float32")
    extra = F(1, 3) * F(1, N53)                          # one float64 grid point of draft 2
    assert le.run.law == {0: F(1, 2) - extra, 1: F(1, 3), 2: F(1, 6) + extra}
    assert le.run.law[2] == F(1, 3) * F(2 ** 52 + 1, N53)
    assert le.bias == F(1, 3 * N53) == F(1, 27021597764222976)
    twin = split_bias(f"{rules}:hf_torch_rand", P, Q, arith="float32")
    assert twin.run.law == le.run.law and twin.bias == le.bias
    lt = split_bias(f"{rules}:hf_lt", P, Q, arith="float32")
    assert lt.run.law == EXACT and lt.bias == 0
    for name in ("numpy_generator", "seeded", "choices"):
        other = split_bias(f"{rules}:{name}", P, Q, arith="float32")
        assert other.run.law == le.run.law, name
    f64 = split_bias(f"{rules}:hf_le", P, Q, arith="float64")       # the format's own grid
    assert f64.run.law == le.run.law


def test_a_float64_uniform_rounded_into_float32_by_promotion_is_refused(rules, capsys):
    # random.random() <= ratio (a float32 tensor): torch compares in float32, rounding the
    # uniform, which is not modelled
    code = main(["verify", f"{rules}:hf_tensor", "--p", "1/2,1/3,1/6", "--q", "1/3,1/3,1/3",
                 "--arith", "float32"])
    out, err = capsys.readouterr()
    assert code == 2 and "float64 uniform used as float32" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("name,word", [("gauss", "random.gauss"),
                                       ("system_random", "random.SystemRandom"),
                                       ("clock", "time.time"),
                                       ("sized", "size=3")])
def test_what_is_not_modelled_stays_refused(rules, capsys, name, word):
    code = main(["verify", f"{rules}:{name}", "--p", "1/2,1/3,1/6", "--q", "1/3,1/3,1/3"])
    out, err = capsys.readouterr()
    assert code == 2 and word in err and len(err.splitlines()) == 1, err


def test_outside_a_pytorch_rule_python_random_stays_refused():
    import random

    made = random.Random(3)
    with watched():
        with pytest.raises(HiddenRandomness, match="random.random"):
            random.random()
        with pytest.raises(HiddenRandomness, match="random.Random.uniform"):
            made.uniform(0, 1)
        with pytest.raises(HiddenRandomness, match="random.Random.__init__"):
            random.Random(3)


def test_the_report_names_the_model(rules, capsys):
    code = main(["verify", f"{rules}:hf_le", "--p", "1/2,1/3,1/6", "--q", "1/3,1/3,1/3",
                 "--json"])
    out, _ = capsys.readouterr()
    assert code == 0 and json.loads(out)["lossless"] is True


def test_a_float_run_says_the_draft_has_the_exact_law_q(rules, capsys):
    argv = ["verify", f"{rules}:hf_le", "--p", "1/2,1/3,1/6", "--q", "1/3,1/3,1/3"]
    assert main([*argv, "--arith", "float32"]) == 1
    out = capsys.readouterr().out
    assert ("draft law: the exact q (the rows rounded to float32 are what the rule computes "
            "with)") in out.splitlines()
    assert main([*argv, "--arith", "float32", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["draft_law"] == "exact"
    assert main(argv) == 0 and "draft law" not in capsys.readouterr().out
    main(["verify", "sps", *argv[2:], "--arith", "float32", "--json"])
    assert "draft_law" not in json.loads(capsys.readouterr().out)


def test_a_refused_draw_caught_in_a_pytorch_rule_is_refused(tmp_path, capsys):
    path = tmp_path / "caught_gauss.py"
    path.write_text(textwrap.dedent('''\
        import random
        import torch


        def sample(p, q):
            draft = torch.multinomial(q, num_samples=1)
            try:
                random.gauss(0, 1)
            except Exception:
                pass
            return draft
        '''))
    code = main(["verify", f"{path}:sample", "--p", "1/2,1/3,1/6", "--q", "1/3,1/3,1/3"])
    err = capsys.readouterr().err
    assert code == 2 and "caught" in err and "random.gauss" in err, err
    assert "caught_gauss.py:8" in err and len(err.splitlines()) == 1


CHAIN = """import random
import torch


def chain(p, q, use_torch=False):
    '''k drafts, each accepted with a fresh uniform; the residual at the first rejection.'''
    k = q.shape[0]
    drafts = torch.multinomial(q, num_samples=1).reshape(-1)
    out = []
    for i in range(k):
        x = drafts[i]
        ratio = (p[i, x] / q[i, x]).item()
        u = torch.rand((), dtype=torch.float64) if use_torch else random.random()
        if u <= ratio:
            out.append(int(x))
            continue
        r = torch.clamp(p[i] - q[i], min=0)
        out.append(int(torch.multinomial(r / r.sum(), 1)))
        return out
    out.append(int(torch.multinomial(p[k], 1)))
    return out


def chain_torch(p, q):
    return chain(p, q, use_torch=True)
"""


@pytest.mark.parametrize("arith", [None, "float32"])
def test_a_chain_with_python_uniforms_equals_the_chain_with_torch_rand(tmp_path, capsys, arith):
    """``verify --tokens 3`` of a chain whose acceptance uniforms are Python's: the joint law,
    tokens per call (19/9 exactly) and TVs of the same chain drawn with
    ``torch.rand(dtype=float64)``, exactly and under ``--arith float32``."""
    path = tmp_path / "py_chain.py"
    path.write_text(CHAIN)
    reports = []
    for name in ("chain", "chain_torch"):
        argv = ["verify", f"{path}:{name}", "--p", "1/2,1/3,1/6", "--q", "1/4,1/4,1/2",
                "--tokens", "3", "--json"] + (["--arith", arith] if arith else [])
        code = main(argv)
        reports.append((code, json.loads(capsys.readouterr().out)))
    (code, mine), (code_torch, torch_rand) = reports
    assert code == code_torch == (0 if arith is None else 1)
    assert F(mine["tokens_per_call"]) == F(torch_rand["tokens_per_call"])
    assert (F(mine["tokens_per_call"]) == F(19, 9)) == (arith is None)
    for key in ("law", "bias", "bias_exact_arith", "bias_grid_only"):
        assert mine.get(key) == torch_rand.get(key), key


MADE_AT_IMPORT = """import random
import numpy as np
import torch

G = np.random.default_rng(0)
R = random.Random(5)


def gen_at_import(p, q):
    draft = torch.multinomial(q, num_samples=1)
    if G.random() <= (p[draft] / q[draft]).item():
        return draft
    return torch.multinomial(p, 1)


def random_at_import(p, q):
    draft = torch.multinomial(q, num_samples=1)
    if R.random() <= (p[draft] / q[draft]).item():
        return draft
    r = torch.clamp(p - q, min=0)
    return torch.multinomial(r / r.sum(), 1)
"""


def test_generators_made_at_import(tmp_path, capsys):
    """A ``random.Random`` made at import is modelled (its draws go through the watch's
    class methods); a NumPy ``Generator`` made at import draws for real (its methods cannot
    be replaced) and is refused as hidden state."""
    path = tmp_path / "made_at_import.py"
    path.write_text(MADE_AT_IMPORT)
    pq = ["--p", "1/2,1/3,1/6", "--q", "1/3,1/3,1/3"]
    assert main(["verify", f"{path}:random_at_import", *pq]) == 0
    assert "LOSSLESS" in capsys.readouterr().out
    assert main(["verify", f"{path}:gen_at_import", *pq]) == 2
    err = capsys.readouterr().err
    assert "its own random generator" in err and "'G'" in err and len(err.splitlines()) == 1


def test_the_grids_python_and_numpy_draw_from():
    """Python's ``random()`` and NumPy's ``random()`` (Generator and legacy) are multiples of
    ``2**-53`` in ``[0, 1)``, NumPy's ``float32`` draw of ``2**-24``: the float64 grid the
    layer puts them on under ``--arith`` (and ``j / 2**24``)."""
    import random

    import numpy as np

    rng, gen, legacy = random.Random(3), np.random.default_rng(3), np.random.RandomState(3)
    for _ in range(2000):
        for u in (rng.random(), float(gen.random()), float(legacy.random_sample())):
            assert 0 <= u < 1 and (F(u) * 2 ** 53).denominator == 1
        v = gen.random(dtype=np.float32)
        assert (F(float(v)) * 2 ** 24).denominator == 1


def test_real_torch_compares_a_python_float_with_a_float32_tensor_in_float32():
    """Why ``random.random() <= ratio`` (a ``float32`` tensor) is refused under ``--arith``
    and handed to the rule as a 0-dim ``float64`` tensor: torch rounds the Python float (and a
    0-dim ``float64`` tensor alike) into ``float32`` before comparing."""
    real = pytest.importorskip("torch")
    if not hasattr(real, "from_numpy"):
        pytest.skip("the torch importable here is not PyTorch")
    ratio = real.tensor([0.5], dtype=real.float32)
    u = 0.5 + 2.0 ** -30                       # above 1/2 in float64, 1/2 in float32
    assert bool(u <= ratio) is True and (u <= ratio.item()) is False
    assert bool(real.tensor(u, dtype=real.float64) <= ratio) is True
    assert (real.tensor(u, dtype=real.float64) * ratio).dtype == real.float32
