"""The draft as a tensor axis (vectorised exact enumeration) against the path enumeration.

For the gallery's one-position PyTorch rules (Hugging Face style and vLLM style, with their bug
variants) on small rows with zeros and ties, the law and the acceptance of the vectorised run
equal those of the path enumeration exactly; rules whose control flow depends on the draft
fall back to the path enumeration and keep its law.  The same holds for their float runs
(``--arith float32`` and ``float16``, long sums in each declared order, whole rows element by
element or by NumPy), and ``verify --arith``'s verdict and three TVs are those of the paths.
"""

from fractions import Fraction as F
from pathlib import Path

import pytest

from exactspec import Dist, verify
from exactspec.core.errors import InvalidInput
from exactspec.engine.exact import enumerate_paths
from exactspec.torch_layer.rule import load_pytorch_rule


def _fast(rule, p, q, grid=None, arith=None, sum_order=None):
    """The tensor-axis routes' enumeration of ``rule`` (its draft as a tensor axis), or
    ``None`` where they decline (the planner would take the paths)."""
    from exactspec.routes import Request, plan
    from exactspec.routes.planner import TENSOR_AXIS

    answer = plan(Request(run=rule, name=rule.spec, p=p, q=q, grid=grid, arith=arith,
                          sum_order=sum_order, tensor_rule=rule), TENSOR_AXIS, optional=True)
    return None if answer is None else answer.enumeration


def _switched_off(self, *args, **kwargs):
    """A tensor-axis entry point that declines every request: the planner takes the paths."""
    from exactspec.core.signals import CannotProceed

    raise CannotProceed("switched off by the test")


def _fast_pair(rule, p, q, grid):
    """The two enumerations of one paired run (ideal uniforms, the grid), or ``None``."""
    from exactspec.routes import Request, plan_pair

    pair = plan_pair(Request(run=rule, name=rule.spec, p=p, q=q, tensor_rule=rule), grid)
    return None if pair is None else tuple(answer.enumeration for answer in pair)

ROOT = Path(__file__).resolve().parent.parent
ENGINES = ROOT / "examples" / "engines"

RULES = [
    ("hf_speculative_sampling.py", "sample"),
    ("hf_speculative_sampling.py", "sample_wrong_row"),
    ("hf_speculative_sampling.py", "sample_resample_from_p"),
    ("vllm_rejection_sampler.py", "sample"),
    ("vllm_rejection_sampler.py", "sample_target_recovery"),
]


def _d(*xs):
    return Dist([F(x) for x in xs])


INSTANCES = [
    (_d("1/2", "1/3", "1/6"), _d("1/3", "1/3", "1/3")),
    (_d("1/4", "1/4", "1/2", "0"), _d("1/2", "0", "1/4", "1/4")),          # zeros on both
    (_d("1/5", "1/5", "1/5", "2/5"), _d("1/5", "1/5", "2/5", "1/5")),      # ties p = q
    (_d("1/8", "1/8", "1/8", "1/8", "1/8", "1/8", "1/8", "1/8"),
     _d("1/4", "1/4", "1/16", "1/16", "1/16", "1/16", "1/8", "1/8")),
    (_d("0", "1", "0"), _d("1/2", "1/4", "1/4")),
]


@pytest.mark.parametrize("file,name", RULES)
@pytest.mark.parametrize("case", range(len(INSTANCES)))
def test_vectorised_law_equals_path_law(file, name, case):
    p, q = INSTANCES[case]
    rule = load_pytorch_rule(f"{ENGINES / file}:{name}")
    fast = _fast(rule, p, q)
    try:
        paths = enumerate_paths(rule, p, q, 1, max_paths=None)
    except InvalidInput:          # q / p at p = 0: refused on the paths, so no fast law
        assert fast is None and name == "sample_wrong_row"
        return
    assert fast is not None
    assert fast.law == paths.law
    assert fast.acceptance == paths.acceptance
    assert fast.total == 1
    assert fast.paths <= 2 < paths.paths or paths.paths <= 2


@pytest.mark.parametrize("file,name", [RULES[0], RULES[3]])
def test_vectorised_on_a_grid(file, name):
    p, q = INSTANCES[0]
    rule = load_pytorch_rule(f"{ENGINES / file}:{name}")
    fast = _fast(rule, p, q, grid=7)
    paths = enumerate_paths(rule, p, q, 1, grid=7, max_paths=None)
    assert fast is not None and fast.law == paths.law and fast.acceptance == paths.acceptance


def test_verify_takes_the_vectorised_route():
    p, q = INSTANCES[0]
    result = verify(f"{ENGINES / 'hf_speculative_sampling.py'}:sample", p, q)
    assert result.lossless and result.enumeration.paths == 2
    assert result.acceptance == F(5, 6)
    wrong = verify(f"{ENGINES / 'hf_speculative_sampling.py'}:sample_wrong_row", p, q)
    assert not wrong.lossless
    assert wrong.enumeration.law == {0: F(1, 3), 1: F(1, 3), 2: F(1, 3)}


FALLBACKS = '''
import torch


def branch_on_draft(p, q):
    """Python-level branching on a value of the draft."""
    x = torch.multinomial(q, 1)
    if p[x] > q[x]:
        return x
    return torch.multinomial(p, 1)


def item_of_draft(p, q):
    """.item() of the draft."""
    x = torch.multinomial(q, 1).item()
    return x


def uniform_twice(p, q):
    """One uniform compared with a per-draft threshold, then again."""
    x = torch.multinomial(q, 1)
    u = torch.rand(1, dtype=p.dtype)
    if (u < p[x] / q[x]).all() and (u < torch.full((1,), 1, dtype=p.dtype) / 2).all():
        return x
    return torch.multinomial(p, 1)


def two_drafts(p, q):
    """Two drafts: one branch axis only."""
    x = torch.multinomial(q, 1)
    y = torch.multinomial(q, 1)
    u = torch.rand(1, dtype=p.dtype)
    return x if (u < p[x] / q[x]).all() else y


def drawn_token_computed(p, q):
    """A token drawn with multinomial, then used in arithmetic."""
    x = torch.multinomial(q, 1)
    y = torch.multinomial(p, 1)
    return (y + 1) % p.shape[0]


def write_at_draft(p, q):
    """A write at the draft's index."""
    x = torch.multinomial(q, 1)
    mask = torch.zeros_like(p)
    mask[x] = 1
    u = torch.rand(1, dtype=p.dtype)
    if (u < (mask * p).sum() / q[x]).all():
        return x
    return torch.multinomial(p, 1)


def where_on_branch(p, q):
    """torch.where with a per-branch condition."""
    x = torch.multinomial(q, 1)
    y = torch.where(p[x] > q[x], x, torch.zeros_like(x))
    return y


def clamp_ratio(p, q):
    """A clamp of a per-branch ratio, then a uniform."""
    x = torch.multinomial(q, 1)
    r = (p[x] / q[x]).clamp(max=1)
    u = torch.rand_like(r)
    return x if (u < r).all() else torch.multinomial((p - q).clamp_min(0), 1)
'''


@pytest.mark.parametrize("name", ["branch_on_draft", "item_of_draft", "uniform_twice",
                                  "two_drafts", "drawn_token_computed", "write_at_draft",
                                  "where_on_branch"])
def test_untracked_control_flow_falls_back(tmp_path, name):
    path = tmp_path / "rules.py"
    path.write_text(FALLBACKS)
    p, q = INSTANCES[0]
    rule = load_pytorch_rule(f"{path}:{name}")
    assert _fast(rule, p, q) is None
    result = verify(f"{path}:{name}", p, q)
    assert result.enumeration.law == enumerate_paths(rule, p, q, 1, max_paths=None).law
    assert result.enumeration.paths > 2


JOINT = '''
import torch


def joint_after_split(p, q):
    """A uniform split per draft branch, then compared jointly with a second uniform."""
    x = torch.multinomial(q, 1)
    u = torch.rand(1, dtype=p.dtype)
    v = torch.rand(1, dtype=p.dtype)
    accepted = (u < p[x] / q[x]).all()
    if (u + v < 1).all():
        return x if accepted else torch.multinomial(p, 1)
    return torch.multinomial(q, 1)
'''


def test_joint_comparison_after_a_branched_split_falls_back(tmp_path):
    path = tmp_path / "joint.py"
    path.write_text(JOINT)
    p, q = INSTANCES[0]
    rule = load_pytorch_rule(f"{path}:joint_after_split")
    assert _fast(rule, p, q) is None
    assert verify(f"{path}:joint_after_split", p, q).enumeration.law == \
        enumerate_paths(rule, p, q, 1, max_paths=None).law


@pytest.mark.parametrize("case", range(len(INSTANCES)))
def test_a_clamped_ratio_stays_on_the_axis(tmp_path, case):
    path = tmp_path / "rules.py"
    path.write_text(FALLBACKS)
    p, q = INSTANCES[case]
    rule = load_pytorch_rule(f"{path}:clamp_ratio")
    fast = _fast(rule, p, q)
    paths = enumerate_paths(rule, p, q, 1, max_paths=None)
    assert fast is not None and fast.law == paths.law and fast.acceptance == paths.acceptance


def _random_row(rng, n):
    weights = [rng.choice([0, 0, 1, 2, 3, 5]) for _ in range(n)]
    if not any(weights):
        weights[0] = 1
    total = sum(weights)
    return Dist([F(w, total) for w in weights])


@pytest.mark.parametrize("file,name", [RULES[0], RULES[3]])
def test_random_small_rows(file, name):
    import random

    rng = random.Random(24)
    rule = load_pytorch_rule(f"{ENGINES / file}:{name}")
    for _ in range(12):
        n = rng.randint(3, 6)
        p, q = _random_row(rng, n), _random_row(rng, n)
        fast = _fast(rule, p, q)
        paths = enumerate_paths(rule, p, q, 1, max_paths=None)
        assert fast is not None
        assert (fast.law, fast.acceptance) == (paths.law, paths.acceptance)


# -- the float runs (--arith) with the draft as a tensor axis ----------------------------------

FLOAT_INSTANCES = [INSTANCES[0], INSTANCES[2], INSTANCES[3],
                   (_d("3/7", "1/7", "2/7", "0", "1/7", "0"),
                    _d("1/11", "2/11", "3/11", "1/11", "1/11", "3/11"))]


def _float_paths(rule, p, q, arith, order):
    from exactspec.engine.float_sampler import FloatSampler, float_dist

    return enumerate_paths(rule, float_dist(p, arith), float_dist(q, arith), 1, max_paths=None,
                           sampler_factory=lambda: FloatSampler(arith, sum_order=order))


@pytest.mark.parametrize("file,name", RULES)
@pytest.mark.parametrize("arith,order", [("float32", "torch-avx2"), ("float16", "sequential"),
                                         ("float32", "correctly-rounded")])
@pytest.mark.parametrize("numpy_rows", [False, True])
def test_float_run_vectorised_equals_paths(file, name, arith, order, numpy_rows, monkeypatch):
    """The float run on the axis gives the path enumeration's law and acceptance exactly, with
    whole rows computed element by element or by NumPy (at any length)."""
    from exactspec.torch_layer import float_rows

    monkeypatch.setattr(float_rows, "MIN_ROW", 1 if numpy_rows else 10**9)
    rule = load_pytorch_rule(f"{ENGINES / file}:{name}")
    for p, q in FLOAT_INSTANCES:
        try:
            paths = _float_paths(rule, p, q, arith, order)
        except InvalidInput:      # q / p at p = 0 is refused on the paths
            assert name == "sample_wrong_row"
            continue
        fast = _fast(rule, p, q, None, arith, order)
        assert fast is not None
        assert (fast.law, fast.acceptance) == (paths.law, paths.acceptance)
        assert fast.paths <= 2


@pytest.mark.parametrize("file,name", RULES)
def test_float_verdict_and_three_tvs_equal_paths(file, name, monkeypatch):
    """``split_bias`` (the CLI's ``verify --arith``) gives the same verdict and the same three
    TVs with its runs on the axis as with every run enumerated path by path."""
    from exactspec.rounding import split_bias
    from exactspec.torch_layer.rule import PyTorchRule

    spec = f"{ENGINES / file}:{name}"
    p, q = FLOAT_INSTANCES[3]
    if name == "sample_wrong_row":
        p, q = INSTANCES[0]
    fast = split_bias(spec, p, q, arith="float32", sum_order="torch-avx2")
    monkeypatch.setattr(PyTorchRule, "vectorised", _switched_off)
    monkeypatch.setattr(PyTorchRule, "vectorised_pair", _switched_off)
    slow = split_bias(spec, p, q, arith="float32", sum_order="torch-avx2")
    assert fast.verdict == slow.verdict
    assert (fast.bias, fast.bias_exact_arith, fast.bias_grid_only) == \
        (slow.bias, slow.bias_exact_arith, slow.bias_grid_only)
    assert fast.run.paths <= 2 < slow.run.paths
    expected = {"sample": "lossy-rounding", "sample_wrong_row": "lossy-logic",
                "sample_resample_from_p": "lossy-logic",
                "sample_target_recovery": "lossy-logic"}
    if "hf_" in file or name != "sample":
        assert fast.verdict == expected[name]
    else:                         # vLLM's clamp at tiny: lossy in exact arithmetic too
        assert fast.verdict == "lossy-logic"


def test_float_comparison_of_an_expression_of_the_uniform(tmp_path):
    """``u * 3 < c[x]``, ``v * 2 + 1/4 <= c[x]`` and ``-w > -c[x]`` (rounded expressions of a
    uniform, increasing and decreasing, against a branched threshold) cut the grid where the
    path run's bisection does."""
    path = tmp_path / "rule.py"
    path.write_text("import torch\n\n\ndef f(p, q):\n"
                    "    x = torch.multinomial(q, 1)\n"
                    "    u = torch.rand(1)\n"
                    "    if (u * 3 < p[x] / q[x]).all():\n"
                    "        return x\n"
                    "    v = torch.rand(1)\n"
                    "    if (v * 2 + 0.25 <= p[x]).all():\n"
                    "        return x\n"
                    "    w = torch.rand(1)\n"
                    "    if (-w > -q[x]).all():\n"
                    "        return x\n"
                    "    return torch.multinomial(p, 1)\n")
    rule = load_pytorch_rule(f"{path}:f")
    for p, q in FLOAT_INSTANCES:
        for arith in ("float32", "bfloat16"):
            fast = _fast(rule, p, q, None, arith)
            paths = _float_paths(rule, p, q, arith, None)
            assert fast is not None and fast.law == paths.law


@pytest.mark.parametrize("file,name", [RULES[0], RULES[3]])
def test_float_run_at_a_few_hundred_tokens_stays_on_the_axis(file, name, monkeypatch):
    """At 300 tokens ``verify --arith float32`` keeps the draft on the axis (2 paths for the
    rule that tests its acceptance in an ``if``, 1 for the one that selects with
    ``torch.where``), with whole rows by NumPy, and its law equals that of the
    element-by-element route."""
    import random

    from exactspec.torch_layer import float_rows

    rng = random.Random(300)
    p, q = _random_row(rng, 300), _random_row(rng, 300)
    spec = f"{ENGINES / file}:{name}"
    fast = verify(spec, p, q, arith="float32", sum_order="torch-avx2")
    assert fast.paths == (2 if file.startswith("hf") else 1)
    assert fast.enumeration.draft_axis == 300
    monkeypatch.setattr(float_rows, "MIN_ROW", 10**9)
    scalar = verify(spec, p, q, arith="float32", sum_order="torch-avx2")
    assert scalar.law == fast.law and scalar.acceptance == fast.acceptance


@pytest.mark.parametrize("file,name", RULES)
def test_exact_whole_rows_equal_element_by_element(file, name, monkeypatch):
    """At 300 tokens the exact runs compute whole rows of rationals on numerators and
    denominators (elementwise ops, comparisons, maximum/minimum, clamp, ``w / E`` and its
    in-place write): the pair run and the run on ideal uniforms give the laws, acceptances,
    paths and converted floats of the element-by-element route."""
    import random

    from exactspec.torch_layer import branched, float_rows

    rng = random.Random(301)
    p, q = _random_row(rng, 300), _random_row(rng, 300)
    rule = load_pytorch_rule(f"{ENGINES / file}:{name}")
    runs = [_fast_pair(rule, p, q, 2**24), _fast(rule, p, q)]
    monkeypatch.setattr(float_rows, "MIN_ROW", 10**9)
    monkeypatch.setattr(branched, "_FAST_ROW", 10**9)
    scalar = [_fast_pair(rule, p, q, 2**24), _fast(rule, p, q)]
    if name == "sample_wrong_row":           # q / p at p = 0: no fast law either way
        assert runs == scalar == [None, None]
        return
    for a, b in zip([*runs[0], runs[1]], [*scalar[0], scalar[1]]):
        assert (a.law, a.acceptance, a.paths, a.floats) == (b.law, b.acceptance, b.paths,
                                                            b.floats)


def test_float_run_on_a_grid_the_format_rounds():
    """``--arith bfloat16 --grid 1000``: the grid's points ``j / 1000`` are rounded into the
    format before they are compared, on the axis as on the paths."""
    rule = load_pytorch_rule(f"{ENGINES / 'hf_speculative_sampling.py'}:sample")
    from exactspec.engine.float_sampler import FloatSampler, float_dist

    for p, q in FLOAT_INSTANCES:
        fast = _fast(rule, p, q, 1000, "bfloat16", "sequential")
        paths = enumerate_paths(rule, float_dist(p, "bfloat16"), float_dist(q, "bfloat16"), 1,
                                max_paths=None, sampler_factory=lambda: FloatSampler(
                                    "bfloat16", 1000, sum_order="sequential"))
        assert fast is not None and fast.law == paths.law


def _counted(rule):
    """``rule`` with its body's calls counted in ``rule.calls``."""
    body = rule.function
    rule.calls = 0

    def counting(p, q):
        rule.calls += 1
        return body(p, q)

    rule.function = counting
    return rule


@pytest.mark.parametrize("arith", [None, "float32"])
def test_a_selected_token_runs_the_body_once(arith):
    """vLLM's ``torch.where(accepted, draft, recovered)`` on the acceptance test ``u < c[x]``
    is a mixture of the two tokens: the body runs once, exact and under ``--arith``, and the
    law is the path enumeration's.  Hugging Face's ``if is_accepted.all()`` reads the test as
    a Python bool: the engine branches there, two runs, the same law as the paths."""
    for (file, name), runs in ((RULES[3], 1), (RULES[4], 1), (RULES[0], 2)):
        for p, q in INSTANCES[:3]:
            rule = _counted(load_pytorch_rule(f"{ENGINES / file}:{name}"))
            fast = _fast(rule, p, q, None, arith)
            assert fast is not None and rule.calls == runs == fast.paths
            paths = enumerate_paths(rule, p, q, 1, max_paths=None) if arith is None else \
                _float_paths(rule, p, q, arith, None)
            assert fast.law == paths.law and fast.acceptance == paths.acceptance


SPLITS = """\
import torch


def _parts(p, q):
    x = torch.multinomial(q, 1)
    accepted = torch.rand(1) < torch.clamp(p[x] / q[x], max=1)
    residual = torch.clamp(p - q, min=0)
    return x, accepted, torch.multinomial(residual / residual.sum(), 1)


def where_then_if(p, q):
    x, accepted, y = _parts(p, q)
    out = torch.where(accepted, x, y)
    if accepted.item():               # the same split read as a bool after the selection
        return out
    return out


def where_then_add(p, q):
    x, accepted, y = _parts(p, q)
    y = torch.clamp(p - q, min=0).argmax()        # a plain token: arithmetic on it is tracked
    return torch.where(accepted, x, y) + 0        # the selected token in arithmetic


def where_of_values(p, q):
    x, accepted, y = _parts(p, q)
    return torch.where(accepted, x, 0) if torch.where(accepted, 1.0, 0.0) > 0.5 else y


def if_then_where(p, q):
    x, accepted, y = _parts(p, q)
    if not accepted.all():
        return y
    return torch.where(accepted, x, y)


def count_accepted(p, q):
    x, accepted, y = _parts(p, q)
    return torch.where(accepted.long().sum() == 1, x, y)


def where_negated(p, q):
    x, accepted, y = _parts(p, q)
    return torch.where(~accepted, y, x)
"""


@pytest.mark.parametrize("name,runs", [("where_then_if", 2), ("where_then_add", 2),
                                       ("where_of_values", 2), ("if_then_where", 2),
                                       ("count_accepted", 2), ("where_negated", 2)])
def test_a_split_read_otherwise_keeps_the_path_law(tmp_path, name, runs):
    """A split read as a bool (``if``, ``.item()``, ``~``, ``.long().sum()``) is the engine's
    branch point with the same weights; a selected token used in arithmetic reruns the
    vectorised route with the test a branch point (2 runs of the body): every law and
    acceptance is the path enumeration's, exact and under ``--arith float32``."""
    path = tmp_path / "splits.py"
    path.write_text(SPLITS)
    for arith in (None, "float32"):
        for p, q in INSTANCES[:3]:
            rule = _counted(load_pytorch_rule(f"{path}:{name}"))
            fast = _fast(rule, p, q, None, arith)
            assert fast is not None and fast.paths == 2
            if name == "where_then_add":     # one run that stops at the +, then two runs
                assert rule.calls == 3
            else:
                assert rule.calls == runs
            paths = enumerate_paths(rule, p, q, 1, max_paths=None) if arith is None else \
                _float_paths(rule, p, q, arith, None)
            assert fast.law == paths.law and fast.acceptance == paths.acceptance


# -- exact arithmetic with ideal uniforms and on the grid from one run of the body ------------

@pytest.mark.parametrize("file,name", RULES)
@pytest.mark.parametrize("grid", [2**24, 2**11, 7, 2])
def test_pair_run_equals_the_two_runs_and_the_paths(file, name, grid):
    """The pair run's two enumerations are the vectorised run with ideal uniforms and the one
    on the grid (law, acceptance, paths, floats), and the path enumeration's laws; on a grid of
    2 points an outcome of weight 0 is no path of the grid run (HF: 1 path, ideal: 2)."""
    rule = load_pytorch_rule(f"{ENGINES / file}:{name}")
    for p, q in INSTANCES + FLOAT_INSTANCES[3:]:
        pair = _fast_pair(rule, p, q, grid)
        ideal, on_grid = _fast(rule, p, q), _fast(rule, p, q, grid)
        if ideal is None:         # q / p at p = 0: refused on the paths, no fast law either
            assert pair is None and on_grid is None and name == "sample_wrong_row"
            continue
        assert pair is not None
        for one, two in zip(pair, (ideal, on_grid)):
            assert (one.law, one.acceptance, one.paths, one.floats) == \
                (two.law, two.acceptance, two.paths, two.floats)
        for one, g in zip(pair, (None, grid)):
            paths = enumerate_paths(rule, p, q, 1, grid=g, max_paths=None)
            assert (one.law, one.acceptance) == (paths.law, paths.acceptance)
    if grid == 2 and "hf_" in file and name == "sample":
        p, q = INSTANCES[0]
        assert [run.paths for run in _fast_pair(rule, p, q, grid)] == [2, 1]


@pytest.mark.parametrize("file,name", RULES)
@pytest.mark.parametrize("arith", ["float32", "float16"])
def test_split_bias_from_the_pair_run_equals_two_runs(file, name, arith, monkeypatch):
    """``verify --arith`` with its exact runs from one pair run: the same three runs (laws,
    acceptances, paths), verdict, TVs and differences as with the two exact runs apart."""
    import exactspec.rounding as rounding

    spec = f"{ENGINES / file}:{name}"
    p, q = FLOAT_INSTANCES[3] if name != "sample_wrong_row" else INSTANCES[0]
    calls = []
    pair_run = rounding._pair_run
    monkeypatch.setattr(rounding, "_pair_run", lambda *a: calls.append(1) or pair_run(*a))
    one = rounding.split_bias(spec, p, q, arith=arith, sum_order="torch-avx2")
    assert calls == [1] and one.exact.enumeration.seconds == one.grid_only.enumeration.seconds
    monkeypatch.setattr(rounding, "_pair_run", lambda *a: None)
    two = rounding.split_bias(spec, p, q, arith=arith, sum_order="torch-avx2")
    for run in ("exact", "grid_only", "rounded"):
        a, b = getattr(one, run), getattr(two, run)
        assert (a.law, a.acceptance, a.paths) == (b.law, b.acceptance, b.paths)
    assert (one.verdict, one.bias, one.bias_exact_arith, one.bias_grid_only) == \
        (two.verdict, two.bias, two.bias_exact_arith, two.bias_grid_only)
    assert (one.differences, one.differences_exact_arith) == \
        (two.differences, two.differences_exact_arith)
    assert one.grid_only.grid == get_grid(arith)


def get_grid(arith):
    from exactspec.engine.floats import get_format

    return get_format(arith).grid


GRID_ELSEWHERE = '''
import torch


def coin_then_accept(p, q):
    """A uniform against a constant (its law on the grid differs), then the acceptance."""
    x = torch.multinomial(q, 1)
    v = torch.rand(1, dtype=p.dtype)
    if (v < 0.3).all():
        return torch.multinomial(p, 1)
    u = torch.rand(1, dtype=p.dtype)
    if (u < p[x] / q[x]).all():
        return x
    return torch.multinomial((p - q).clamp_min(0), 1)
'''


def test_a_uniform_read_elsewhere_runs_the_two_runs_apart(tmp_path):
    """A uniform compared with a constant reads the grid outside a comparison with
    ``c[draft]``: no pair run; the two runs are made apart, each on the axis, and give the
    path enumeration's laws (``verify --grid``: lossy by the grid only)."""
    from exactspec.rounding import split_bias

    path = tmp_path / "coin.py"
    path.write_text(GRID_ELSEWHERE)
    p, q = INSTANCES[0]
    rule = load_pytorch_rule(f"{path}:coin_then_accept")
    assert _fast_pair(rule, p, q, 7) is None
    ideal, on_grid = _fast(rule, p, q), _fast(rule, p, q, 7)
    assert ideal is not None and on_grid is not None
    split = split_bias(f"{path}:coin_then_accept", p, q, grid=7)
    for run, g in ((split.exact, None), (split.grid_only, 7)):
        paths = enumerate_paths(rule, p, q, 1, grid=g, max_paths=None)
        assert (run.law, run.acceptance) == (paths.law, paths.acceptance)
    assert split.exact.law == ideal.law and split.grid_only.law == on_grid.law
    assert split.verdict == "lossy-grid" and split.bias_exact_arith == 0


def test_rows_of_rationals_equal_fraction_arithmetic():
    """The whole-row operations on numerators and denominators give the ``Fraction``
    operators' results (values and bools), with signs, zeros and integers among them."""
    import operator
    import random

    from exactspec.torch_layer.branched import (_complement, rational_extreme,
                                                rational_row)

    rng = random.Random(7)
    xs = [F(rng.randint(-40, 40), rng.randint(1, 30)) for _ in range(400)] + [F(0), F(3)]
    ys = [F(rng.randint(-40, 40), rng.randint(1, 30)) for _ in range(400)] + [F(5, 2), F(3)]
    for op in (operator.add, operator.sub, operator.mul, operator.lt, operator.le,
               operator.gt, operator.ge, operator.eq, operator.ne):
        assert rational_row(op, xs, ys) == [op(x, y) for x, y in zip(xs, ys)]
    nonzero = [y or F(1, 7) for y in ys]
    assert rational_row(operator.truediv, xs, nonzero) == [x / y for x, y in zip(xs, nonzero)]
    assert rational_row(operator.truediv, xs, ys) is None       # a zero divisor: per element
    assert rational_row(operator.floordiv, xs, nonzero) is None
    assert rational_row(operator.add, xs, [1] * len(xs)) is None  # an int: per element
    assert rational_extreme(xs, ys, True) == [y if x < y else x for x, y in zip(xs, ys)]
    assert rational_extreme(xs, ys, False) == [y if y < x else x for x, y in zip(xs, ys)]
    assert _complement(xs) == [1 - x for x in xs]
    assert all(type(v) is F for v in rational_row(operator.sub, xs, ys) + _complement(xs))



def test_branched_arithmetic_of_rational_rows_equals_the_scalar_rule(monkeypatch):
    """``p[x] / q[x]`` and the like on a draft axis (the tensor layer's elementwise rule on
    two branched values, or one and a number) computed as whole rows of rationals give the
    scalar rule's values branch by branch; a zero divisor or a value that is not a rational
    takes the scalar rule (``x / 0`` an infinity, as on the paths); rows of integers (a
    pointer's offsets at the draft tokens) likewise, a bool among them taking the scalar
    rule."""
    import operator
    import random

    from exactspec.torch_layer import branched
    from exactspec.torch_layer.branched import Branched
    from exactspec.torch_layer.values import arith

    rng = random.Random(11)
    xs = [F(rng.randint(-40, 40), rng.randint(1, 30)) for _ in range(200)]
    ys = [F(rng.randint(1, 40), rng.randint(1, 30)) for _ in range(200)]
    with_zero = ys[:-1] + [F(0)]
    cases = [(Branched(xs, 2), Branched(ys, 2)), (Branched(xs, 2), F(3, 7)),
             (5, Branched(ys, 2)), (Branched(xs, 2), Branched(with_zero, 2)),
             (Branched(xs, 2), Branched([1.5] + ys[1:], 2))]
    ops = (operator.add, operator.sub, operator.mul, operator.truediv)

    def every(op, a, b):
        return [v for v in arith(op, a, b).values]

    rows = []
    whole = branched.rational_row
    monkeypatch.setattr(branched, "rational_row", lambda *a: rows.append(a[0]) or whole(*a))
    ints = [rng.randint(-2**40, 2**40) for _ in range(200)]
    offsets = [(Branched(ints, 1), Branched(ints[::-1], 1)), (7, Branched(ints, 1)),
               (Branched(ints, 1), -3), (Branched(ints, 1), Branched([True] + ints[1:], 1))]
    fast = [every(op, a, b) for a, b in cases for op in ops]
    assert len(rows) == len(fast)                   # every case tried as whole rows
    fast_ints = [every(op, a, b) for a, b in offsets for op in ops]
    monkeypatch.setattr(branched, "_FAST_ROW", 10**9)
    scalar = [every(op, a, b) for a, b in cases for op in ops]
    assert fast == scalar
    assert fast_ints == [every(op, a, b) for a, b in offsets for op in ops]
    assert [type(v) for v in fast_ints[0]] == [int] * 200
    assert all(type(v) is F for row in fast[:12] for v in row)
    assert fast[15][-1] == float("inf") or fast[15][-1] == float("-inf")


def test_bitwise_rows_of_plain_bools_and_ints_equal_the_scalar_rule(monkeypatch):
    """``mask_a & mask_b`` (a kernel's lane masks), ``|`` and ``^`` of bool and int tensors,
    exact and under ``--arith``: the operator on plain bools and ints gives the scalar
    rule's values and dtypes (a bool beside an int tensor takes the scalar rule)."""
    import operator
    import random

    from exactspec.engine.floats import FORMATS
    from exactspec.torch_layer import installed, tensor_elementwise
    from exactspec.torch_layer.context import Run

    rng = random.Random(5)
    bools = [[rng.random() < 0.5 for _ in range(300)] for _ in range(2)]
    ints = [[rng.randint(-2**31, 2**31 - 1) for _ in range(300)] for _ in range(2)]

    def results():
        out = []
        for run in (None, Run(None, FORMATS["float32"])):
            with (installed(run) if run is not None else installed()) as t:
                a, b = t.tensor(bools[0]), t.tensor(bools[1])
                i, j = t.tensor(ints[0], dtype=t.int32), t.tensor(ints[1], dtype=t.int64)
                for x, y in ((a, b), (a, True), (i, j), (i, 7), (a, i)):
                    for op in (operator.and_, operator.or_, operator.xor):
                        r = op(x, y)
                        out.append((r.dtype.name, r.tolist()))
        return out

    fast = results()
    monkeypatch.setattr(tensor_elementwise, "_BITWISE_PAIRS", {})
    assert fast == results()
    assert fast[0] == ("bool", [x and y for x, y in zip(*bools)])
    assert fast[6][1] == [x & y for x, y in zip(*ints)]

def _forks_allowed():
    import os
    import sys

    return sys.platform == "linux" and len(os.sched_getaffinity(0)) >= 2


#: Run in a fresh interpreter: the side runs fork only a process of one thread, and a test
#: session may hold other threads (a Dask cluster's, a sweep's) by the time this test runs.
SIDE_RUNS = """
import json, sys
from pathlib import Path
import exactspec.rounding as rounding
import exactspec.routes.forked as routes_forked
from exactspec import Dist
from exactspec.core.errors import InvalidInput

engines = Path(sys.argv[1])
p = Dist.parse(",".join(f"{i}/528" for i in range(1, 33)))
q = Dist.parse(",".join(f"{33 - i}/528" for i in range(1, 33)))
used = []
side_runs = rounding._side_runs

def spy(*args):
    side = side_runs(*args)
    used.append(side is not None)
    return side

rounding._side_runs = spy
out = {}
for rule in ("vllm_rejection_sampler.py:sample", "hf_speculative_sampling.py:sample"):
    splits = []
    for least in (0, 10**9):
        routes_forked.PARALLEL_MIN_TOKENS = least
        splits.append(rounding.split_bias(f"{engines / rule}", p, q, arith="float32",
                                          sum_order="torch-avx2"))
    forked, serial = splits
    same = all((getattr(forked, r).law, getattr(forked, r).acceptance, getattr(forked, r).paths)
               == (getattr(serial, r).law, getattr(serial, r).acceptance,
                   getattr(serial, r).paths) for r in ("exact", "rounded", "grid_only"))
    same = same and [forked.verdict, forked.bias, forked.bias_exact_arith,
                     forked.bias_grid_only] == [serial.verdict, serial.bias,
                                                serial.bias_exact_arith, serial.bias_grid_only]
    out[rule] = [same, forked.verdict]
routes_forked.PARALLEL_MIN_TOKENS = 0
try:
    rounding.split_bias(f"{engines / 'vllm_rejection_sampler.py'}:sample", p, q,
                        arith="float32")
except InvalidInput as err:
    out["refused"] = str(err)
out["used"] = list(used)
used.clear()
splits = []        # no pair run: the exact run on the grid forked too
for least in (0, 10**9):
    routes_forked.PARALLEL_MIN_TOKENS = least
    splits.append(rounding.split_bias(sys.argv[2], p, q, arith="float32"))
forked, serial = splits
out["apart"] = [all((getattr(forked, r).law, getattr(forked, r).acceptance)
                    == (getattr(serial, r).law, getattr(serial, r).acceptance)
                    for r in ("exact", "rounded", "grid_only"))
                and forked.bias_grid_only == serial.bias_grid_only, list(used)]
print(json.dumps(out))
"""


@pytest.mark.skipif(not _forks_allowed(), reason="the side runs fork: Linux, two cores")
def test_side_runs_in_forked_processes_give_the_serial_split(tmp_path):
    """``verify --arith`` on long rows runs its float run in a forked process beside the pair
    run of exact arithmetic (ideal uniforms and the grid): the same laws, acceptances, paths,
    verdict and TVs as the runs one after the other in one process (the float run's law and
    TV sent back as integers); a forked run that stops (a long float sum with no declared
    order) hands nothing back and is run again in the main process, which refuses it in its
    usual words; a rule with no pair run has its exact run on the grid forked too."""
    import json
    import subprocess
    import sys

    coin = tmp_path / "coin.py"
    coin.write_text(GRID_ELSEWHERE)
    done = subprocess.run([sys.executable, "-c", SIDE_RUNS, str(ENGINES),
                           f"{coin}:coin_then_accept"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["vllm_rejection_sampler.py:sample"] == [True, "lossy-logic"]
    assert out["hf_speculative_sampling.py:sample"] == [True, "lossy-rounding"]
    assert out["used"] == [True, False, True, False, True]
    assert "--sum-order" in out["refused"]
    assert out["apart"] == [True, [True, True, False, False]]


def test_a_process_with_a_second_thread_runs_every_run_itself():
    """A fork copies only the calling thread, so a lock another thread holds would stay held
    in the copy: with a second thread alive, no side run is started."""
    import threading

    import exactspec.rounding as rounding
    from exactspec.methods import get_method

    p = Dist.parse(",".join(f"{i}/528" for i in range(1, 33)))
    q = Dist.parse(",".join(f"{33 - i}/528" for i in range(1, 33)))
    m = get_method(f"{ENGINES / 'vllm_rejection_sampler.py'}:sample")
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert rounding._side_runs(m, p, q, 1, [(None, "float32", "torch-avx2")]) is None
    finally:
        stop.set()
        other.join()


def test_the_garbage_collector_is_paused_only_during_the_runs():
    """The vectorised runs pause the cyclic garbage collector and resume it after, also when
    the rule is refused; a collector that was off stays off."""
    import gc

    from exactspec.rounding import split_bias

    p, q = INSTANCES[0]
    seen = []
    rule = load_pytorch_rule(f"{ENGINES / 'vllm_rejection_sampler.py'}:sample")
    body = rule.function
    rule.function = lambda *a: seen.append(gc.isenabled()) or body(*a)
    assert gc.isenabled()
    assert _fast_pair(rule, p, q, 2**24) is not None and seen == [False]
    assert gc.isenabled()
    with pytest.raises(InvalidInput):
        split_bias(f"{ENGINES / 'vllm_rejection_sampler.py'}:sample_copy_noise", p, q,
                   arith="float32")
    assert gc.isenabled()
    gc.disable()
    try:
        split_bias(f"{ENGINES / 'vllm_rejection_sampler.py'}:sample", p, q, arith="float32")
        assert not gc.isenabled()
    finally:
        gc.enable()
