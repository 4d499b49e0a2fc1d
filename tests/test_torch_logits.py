"""Logits built from probability rows stay rational: ``log(r) / n + c`` elements.

``torch.log(p)``, a ``log_softmax``, plus a constant, times an integer or divided by one, are
held exactly as ``log(r) / n + c`` (:mod:`exactspec.torch_layer.log_rationals`), so
``softmax`` of such a row is ``r_i**(1/n) / sum r**(1/n)``, a rational computed without sympy,
and a draw from it is a tensor axis (two runs of the body, not one path per token).  Checked
here: the algebra and the comparisons against sympy's exact values, softmax and log_softmax
against closed forms (temperatures ``1/k`` and ``k``, shifts, ``-inf``, rows sympy must still
take), and a rule in transformers' idiom (softmax of logits, ratio, ``rand_like``, ``cumsum``,
the clamped residual) on 3-6 tokens with zeros and ties: the vectorised law, acceptance and
verdict equal the path enumeration's and the closed forms, as Fractions.  Where transformers
is importable (``/tmp/sideenv``, put at the end of ``sys.path``), its ``_speculative_sampling``
loaded unedited gives the same.
"""

from __future__ import annotations

import importlib.util
import math
import random
import sys
import textwrap
from fractions import Fraction as F
from pathlib import Path

import pytest
import sympy

from exactspec import Dist, verify
from exactspec.engine.exact import enumerate_paths
from exactspec.torch_layer import installed
from exactspec.torch_layer.log_rationals import LogRational, softmax_row
from exactspec.torch_layer.rule import load_pytorch_rule


def _fast(rule, p, q, grid=None, arith=None, sum_order=None):
    """The tensor-axis routes' enumeration of ``rule`` (its draft as a tensor axis), or
    ``None`` where they decline (the planner would take the paths)."""
    from exactspec.routes import Request, plan
    from exactspec.routes.planner import TENSOR_AXIS

    answer = plan(Request(run=rule, name=rule.spec, p=p, q=q, grid=grid, arith=arith,
                          sum_order=sum_order, tensor_rule=rule), TENSOR_AXIS, optional=True)
    return None if answer is None else answer.enumeration


def _fast_pair(rule, p, q, grid):
    """The two enumerations of one paired run (ideal uniforms, the grid), or ``None``."""
    from exactspec.routes import Request, plan_pair

    pair = plan_pair(Request(run=rule, name=rule.spec, p=p, q=q, tensor_rule=rule), grid)
    return None if pair is None else tuple(answer.enumeration for answer in pair)

L = LogRational.log


def same(a, b) -> bool:
    """Two exact sympy values equal: ``log``s of rationals with rational coefficients, their
    difference expanded into logs of primes (``expand_log``, exact), then zero."""
    return sympy.expand_log(a - b, force=True).equals(0)


def exact(v):
    """sympy's exact value of an element."""
    if isinstance(v, F):
        return sympy.Rational(v.numerator, v.denominator)
    return sympy.sympify(v)


# -- the algebra ------------------------------------------------------------------------
def test_canonical_forms_and_equality():
    assert L(F(1)) == 0 and type(L(F(1))) is F
    assert LogRational.make(F(4), 2) == L(F(2))                 # log(4) / 2 is log 2
    assert LogRational.make(F(8, 27), 6) == LogRational.make(F(2, 3), 2)
    assert L(F(2)) - L(F(2)) == 0 and type(L(F(2)) - L(F(2))) is F
    assert L(F(2)) + L(F(3)) == L(F(6))
    assert L(F(1, 2)) != F(-1) and L(F(2)) != 0.5
    assert hash(LogRational.make(F(9), 2)) == hash(L(F(3)))
    assert -L(F(2, 3)) == L(F(3, 2))
    assert L(F(1, 2)) * 3 == L(F(1, 8)) and L(F(1, 8)) / 3 == L(F(1, 2))


def test_arithmetic_and_comparisons_against_sympy():
    rng = random.Random(7)
    values = []
    for _ in range(10):
        r = F(rng.randint(1, 40), rng.randint(1, 40))
        v = LogRational.make(r, rng.choice([1, 1, 2, 3]), F(rng.randint(-3, 3), rng.randint(1, 4)))
        values.append(v)
    values += [F(0), F(1, 2), F(-2)]
    for a in values:
        for b in values[:6]:
            for op in (lambda x, y: x + y, lambda x, y: x - y):
                got = op(a, b)
                assert same(exact(got), op(exact(a), exact(b)))
            want = sympy.N(exact(a) - exact(b), 60)
            assert (a < b) == (want < 0) and (a > b) == (want > 0)
            assert (a <= b) == (want <= 0) and (a == b) == (want == 0)
        for s in (F(2), F(-1, 3), F(3, 2)):
            assert same(exact(a * s), exact(a) * exact(s))
            assert same(exact(a / s), exact(a) / exact(s))
        assert math.isclose(float(a), float(sympy.N(exact(a), 30)), rel_tol=1e-12, abs_tol=1e-12)


def test_a_comparison_decided_near_equality():
    """``log 2`` against a rational within ``10**-20`` of it, both ways."""
    ln2 = sympy.N(sympy.log(2), 50)
    below = F(sympy.Rational(str(ln2 - sympy.Rational(1, 10 ** 25))))
    above = F(sympy.Rational(str(ln2 + sympy.Rational(1, 10 ** 25))))
    assert L(F(2)) > below and L(F(2)) < above


def test_softmax_row_closed_forms():
    p = [F(1, 2), F(1, 3), F(1, 6), F(0)]
    logs = [L(x) if x else -math.inf for x in p]
    assert softmax_row(logs) == p
    assert softmax_row([v + F(5, 7) if v != -math.inf else v for v in logs]) == p   # a shift
    squares = [x * x for x in p]
    assert softmax_row([v * 2 for v in logs]) == [x / sum(squares) for x in squares]
    roots = softmax_row([L(F(1, 4)) / 2, L(F(1, 9)) / 2])       # sqrt: rational here
    assert roots == [F(3, 5), F(2, 5)]
    assert softmax_row([L(F(1, 2)) / 2, L(F(1, 8)) / 2]) == [F(2, 3), F(1, 3)]  # a factor
    assert softmax_row([L(F(1, 2)) / 2, L(F(1, 3)) / 2]) is None   # irrational: sympy's
    assert softmax_row([L(F(1, 2)), L(F(1, 3)) + 1]) is None       # two shifts: sympy's
    assert softmax_row([F(0), F(0), -math.inf]) == [F(1, 2), F(1, 2), F(0)]


def test_the_layer_keeps_logits_of_probabilities_rational():
    with installed() as torch:
        p = torch.tensor([F(1, 2), F(1, 4), F(1, 4), F(0)])
        logits = p.log()
        assert p.log().softmax(-1).tolist() == [F(1, 2), F(1, 4), F(1, 4), F(0)]
        ls = torch.log_softmax(logits * 3 - 2, dim=-1)
        assert all(type(v) in (LogRational, F, float) for v in ls.tolist())
        assert ls.exp().tolist() == [F(8, 10), F(1, 10), F(1, 10), F(0)]
        temp = torch.nn.functional.softmax(logits / F(1, 2), dim=-1)      # temperature 1/2
        assert temp.tolist() == [F(4, 6), F(1, 6), F(1, 6), F(0)]
        half = (logits / 2).softmax(-1).tolist()[0]                        # irrational: exact
        assert sympy.simplify(half - sympy.sqrt(2) / (sympy.sqrt(2) + 2)) == 0
        assert logits.argmax().item() == 0 and logits.max().item() == L(F(1, 2))
        assert logits.argmin().item() == 3
        assert (logits > -math.inf).tolist() == [True] * 3 + [False]
        assert (logits < math.inf).all() and not (logits == math.nan).any()
        mixed = torch.tensor([F(0), F(1)]).softmax(-1).tolist()            # plain logits
        assert sympy.simplify(mixed[1] - sympy.E / (1 + sympy.E)) == 0


# -- a rule in transformers' idiom, on logits ------------------------------------------------
RULE = '''
import torch


def _accept_or_resample(draft, draft_logits, target_logits):
    """One candidate position: probabilities from logits, accept with p_i / q_i, else draw
    from the clamped residual; (token, number of matches)."""
    q = draft_logits.softmax(dim=-1)
    p = target_logits.softmax(dim=-1)
    p_i = p[:, torch.arange(1), draft].squeeze(0, 1)
    q_i = q[:, torch.arange(1), draft].squeeze(0, 1)
    ratio = p_i / q_i
    u = torch.rand_like(ratio)
    accepted = u <= ratio
    matches = ((~accepted).cumsum(dim=-1) < 1).sum()
    if matches < 1:
        residual = torch.clamp(p[:, 0, :] - q[:, 0, :], min=0)
        residual.div_(residual.sum())
        return torch.multinomial(residual, num_samples=1).squeeze(1)[None, :], matches
    return draft[:, :1], matches


def rule(p, q):
    draft = torch.multinomial(q, num_samples=1).view(1, 1)
    target = torch.stack([p.log(), p.log()]).unsqueeze(0)
    tokens, _ = _accept_or_resample(draft, q.log().view(1, 1, -1), target)
    return tokens[0, 0]


def rule_resample_from_p(p, q):
    draft = torch.multinomial(q, num_samples=1).view(1, 1)
    target = (2 * p.log() - 1).softmax(-1).log() / 2      # log p again, a long way round
    u = torch.rand(())
    ratio = target.softmax(-1)[draft] / q.log().softmax(-1)[draft]
    if (u <= ratio).all():
        return draft[0, 0]
    return torch.multinomial(target.softmax(-1), 1)[0]
'''


def _d(*xs):
    return Dist([F(x) for x in xs])


INSTANCES = [
    (_d("1/2", "1/3", "1/6"), _d("1/3", "1/3", "1/3")),
    (_d("1/4", "1/4", "1/2", "0"), _d("1/2", "0", "1/4", "1/4")),          # zeros on both
    (_d("1/5", "1/5", "1/5", "2/5"), _d("1/5", "1/5", "2/5", "1/5")),      # ties, p = q there
    (_d("0", "1", "0", "0", "0"), _d("1/2", "1/4", "1/8", "1/16", "1/16")),
    (_d("1/6", "1/6", "1/6", "1/6", "1/6", "1/6"), _d("1/6", "1/6", "1/6", "1/6", "1/6", "1/6")),
]


def _acceptance(p, q):
    return sum(min(a, b) for a, b in zip(p.probs, q.probs))


@pytest.fixture(scope="module")
def rule_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("logits") / "idiom.py"
    path.write_text(RULE)
    return str(path)


@pytest.mark.parametrize("case", range(len(INSTANCES)))
def test_logits_route_equals_the_path_enumeration(rule_file, case):
    p, q = INSTANCES[case]
    rule = load_pytorch_rule(f"{rule_file}:rule")
    fast = _fast(rule, p, q)
    paths = enumerate_paths(rule, p, q, 1, max_paths=None)
    assert fast is not None and fast.paths <= 2
    assert fast.law == paths.law == dict(zip(p.labels, p.probs))
    assert fast.acceptance == paths.acceptance == _acceptance(p, q)
    assert all(type(v) is F for v in fast.law.values())
    result = verify(f"{rule_file}:rule", p, q)
    assert result.lossless and result.enumeration.paths <= 2


@pytest.mark.parametrize("case", range(len(INSTANCES)))
def test_a_lossy_variant_on_logits(rule_file, case):
    """Resampling from ``p`` on a rejection: ``min(p, q) + (1 - acceptance) p``."""
    p, q = INSTANCES[case]
    rule = load_pytorch_rule(f"{rule_file}:rule_resample_from_p")
    fast = _fast(rule, p, q)
    paths = enumerate_paths(rule, p, q, 1, max_paths=None)
    beta = _acceptance(p, q)
    want = {lab: min(a, b) + (1 - beta) * a for lab, a, b in zip(p.labels, p.probs, q.probs)}
    assert fast is not None and fast.law == paths.law == want
    result = verify(f"{rule_file}:rule_resample_from_p", p, q)
    assert result.lossless == (want == dict(zip(p.labels, p.probs)))


def test_a_draw_from_softmax_of_logits_is_a_tensor_axis_at_a_thousand_tokens(rule_file):
    rng = random.Random(3)
    ints = [rng.randint(0, 9) for _ in range(1000)]
    ints2 = [rng.randint(1, 9) for _ in range(1000)]
    p = Dist([F(x, sum(ints)) for x in ints])
    q = Dist([F(x, sum(ints2)) for x in ints2])
    result = verify(f"{rule_file}:rule", p, q)
    assert result.lossless and result.enumeration.paths == 2
    assert result.acceptance == _acceptance(p, q)


SIDE = Path("/tmp/sideenv/lib/python3.11/site-packages")


def _transformers():
    if importlib.util.find_spec("transformers") is None and (SIDE / "transformers").is_dir():
        sys.path.append(str(SIDE))
    return importlib.util.find_spec("transformers") is not None


@pytest.mark.skipif(not _transformers(), reason="transformers is not installed")
@pytest.mark.parametrize("case", range(len(INSTANCES)))
def test_transformers_as_shipped_on_logits(tmp_path, case):
    path = tmp_path / "adapter.py"
    path.write_text(textwrap.dedent('''
        import torch
        from exactspec.torch_layer import load

        _speculative_sampling = load("transformers.generation.utils:_speculative_sampling")


        def rule(p, q):
            candidate = torch.multinomial(q, num_samples=1).view(1, 1)
            new_logits = torch.stack([p.log(), p.log()]).unsqueeze(0)
            tokens, _ = _speculative_sampling(candidate, q.log().view(1, 1, -1), 1,
                                              new_logits, False)
            return tokens[0, 0]
        '''))
    p, q = INSTANCES[case]
    rule = load_pytorch_rule(f"{path}:rule")
    fast = _fast(rule, p, q)
    paths = enumerate_paths(rule, p, q, 1, max_paths=None)
    assert fast is not None and fast.paths <= 2
    assert fast.law == paths.law == dict(zip(p.labels, p.probs))
    assert fast.acceptance == paths.acceptance == _acceptance(p, q)
