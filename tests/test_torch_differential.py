"""A randomized differential audit of the fast PyTorch routes against the path enumeration.

Every rule of the gallery (``examples/engines/``) is run on seeded random small pairs (3 to 5
tokens, rationals with small denominators, zeros in ``p`` or ``q``, ties ``p = q`` at some
tokens, a uniform ``q``, ``p = q``) and on hand-written edge pairs, by its fast route and by
the path enumeration (one run of the body per path of every random choice), and the two
reports must agree exactly:

- one position (the draft as a tensor axis, the pair run of the exact runs with ideal
  uniforms and on the grid): ``split_bias`` in exact arithmetic, on the grids 2 and 7, and
  under ``float32`` and ``float16`` (long sums ``"sequential"``): the verdict, the three TVs,
  the laws and acceptances of the three runs (``Fraction``\\ s), a refusal by the same error;
- several positions (the factored route, ``M = 2`` and ``3``): ``user_report`` under the same
  arithmetics: verdict, TVs, tokens per call, laws, the exact-arithmetic twin's law and the
  sequences where it differs.

The path route is reached by replacing the fast routes with functions that return ``None``,
as a rule the fast route does not track would.  The default run takes a few seeds; the wide
sweep (hundreds of cases per arithmetic) is marked ``slow``.
"""

import random
from fractions import Fraction as F
from pathlib import Path

import pytest

from exactspec import Dist
from exactspec.core.errors import InvalidInput, TooLarge
from exactspec.rounding import split_bias
from exactspec.sequences import factored
from exactspec.sequences.context import ContextPair
from exactspec.sequences.torch_rules import pytorch_whole_call
from exactspec.sequences.user import user_report
from exactspec.torch_layer.rule import PyTorchRule, load_pytorch_rule

ENGINES = Path(__file__).resolve().parent.parent / "examples" / "engines"

ONE = [("hf_speculative_sampling.py", "sample"),
       ("hf_speculative_sampling.py", "sample_wrong_row"),
       ("hf_speculative_sampling.py", "sample_resample_from_p"),
       ("vllm_rejection_sampler.py", "sample"),
       ("vllm_rejection_sampler.py", "sample_target_recovery")]

MULTI = [("flashinfer_chain.py", "chain"),
         ("flashinfer_chain.py", "chain_reuse_rejecting_uniform"),
         ("flashinfer_chain.py", "chain_shared_uniform"),     # up to 3 tokens only
         ("hf_speculative_sampling.py", "speculative_sampling"),
         ("hf_speculative_sampling.py", "speculative_sampling_count_all"),
         ("vllm_rejection_sampler.py", "rejection_sample"),
         ("vllm_rejection_sampler.py", "rejection_sample_all_accepted_as_rejected")]

ARITHS = {"exact": {}, "grid2": {"grid": 2}, "grid7": {"grid": 7},
          "float32": {"arith": "float32", "sum_order": "sequential"},
          "float16": {"arith": "float16", "sum_order": "sequential"}}

KINDS = ("random", "zeros_p", "zeros_q", "zeros_both", "ties", "q_uniform", "equal")


def _row(rng, n, zeros=0):
    w = [rng.randint(1, 9) for _ in range(n)]
    for i in rng.sample(range(n), zeros):
        w[i] = 0
    total = sum(w)
    return [F(x, total) for x in w]


def instance(seed):
    """The seeded pair of kind ``KINDS[seed % 7]``: 3 to 5 tokens, denominators at most 45."""
    rng = random.Random(seed)
    kind = KINDS[seed % len(KINDS)]
    n = rng.randint(3, 5)
    if kind == "random":
        p, q = _row(rng, n), _row(rng, n)
    elif kind == "zeros_p":
        p, q = _row(rng, n, rng.randint(1, n - 1)), _row(rng, n)
    elif kind == "zeros_q":                 # the draft never drafts some tokens p keeps
        p, q = _row(rng, n), _row(rng, n, rng.randint(1, n - 1))
    elif kind == "zeros_both":
        p, q = _row(rng, n, 1), _row(rng, n, 1)
    elif kind == "ties":                    # p = q except at two tokens
        p = _row(rng, n)
        q = list(p)
        i, j = rng.sample(range(n), 2)
        d = min(q[i] / 2, F(1, 12))
        q[i] -= d
        q[j] += d
    elif kind == "q_uniform":
        p, q = _row(rng, n), [F(1, n)] * n
    else:                                   # p = q
        p = _row(rng, n)
        q = list(p)
    return p, q


def test_instances_cover_every_kind():
    """The seeds' pairs are distributions of each kind claimed (a harness that cannot drift)."""
    for seed in range(14):
        p, q = instance(seed)
        kind = KINDS[seed % 7]
        assert sum(p) == 1 == sum(q) and min(p + q) >= 0 and 3 <= len(p) == len(q) <= 5
        assert (0 in p) == (kind in ("zeros_p", "zeros_both"))
        assert (0 in q) == (kind in ("zeros_q", "zeros_both"))
        assert (p == q) == (kind == "equal")
        if kind == "ties":
            assert sum(a != b for a, b in zip(p, q)) == 2
        if kind == "q_uniform":
            assert set(q) == {F(1, len(q))}


# -- one position ----------------------------------------------------------------------------
def _refusal(run):
    try:
        return run()
    except (InvalidInput, TooLarge) as err:
        return type(err).__name__


def _switched_off(self, *args, **kwargs):
    """A tensor-axis entry point that declines every request: the planner takes the paths."""
    from exactspec.core.signals import CannotProceed

    raise CannotProceed("switched off by the test")


def one_position(spec, p, q, **kw):
    """``split_bias`` by the fast routes (and which of them answered) and by the paths."""
    run = lambda: split_bias(spec, Dist(p), Dist(q), **kw)  # noqa: E731
    used = []
    vectorised, pair = PyTorchRule.vectorised, PyTorchRule.vectorised_pair

    def spy(function, mark):
        def wrapped(self, *a, **k):
            try:
                out = function(self, *a, **k)
            except BaseException:          # the route declined (or refused): the planner
                used.append("-")           # goes on to the next
                raise
            used.append(mark)
            return out
        return wrapped

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(PyTorchRule, "vectorised", spy(vectorised, "axis"))
        patch.setattr(PyTorchRule, "vectorised_pair", spy(pair, "pair"))
        fast = _refusal(run)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(PyTorchRule, "vectorised", _switched_off)
        patch.setattr(PyTorchRule, "vectorised_pair", _switched_off)
        slow = _refusal(run)
    return fast, slow, used


def same_one(fast, slow):
    """The verdict, the three TVs, each run's law and acceptance; the same refusal."""
    if isinstance(fast, str) or isinstance(slow, str):
        assert fast == slow
        return
    for key in ("verdict", "bias", "bias_exact_arith", "bias_grid_only"):
        assert getattr(fast, key) == getattr(slow, key), key
    for run in ("exact", "grid_only", "rounded"):
        a, b = getattr(fast, run), getattr(slow, run)
        assert (a is None) == (b is None), run
        if a is not None:
            assert a.law == b.law, run
            assert a.acceptance == b.acceptance, run
            # the axis counts an accept/reject branch of weight 0 that no path takes
            assert a.paths <= max(b.paths, 2), run


def _one_cases(seeds):
    return [(seed, file, name, arith) for seed in seeds for file, name in ONE
            for arith in ARITHS]


@pytest.mark.parametrize("seed,file,name,arith", _one_cases([0]) + [
    pytest.param(*case, marks=pytest.mark.slow) for case in _one_cases([3])])
def test_one_position_fast_equals_paths(seed, file, name, arith):
    p, q = instance(seed)
    fast, slow, used = one_position(f"{ENGINES / file}:{name}", p, q, **ARITHS[arith])
    same_one(fast, slow)
    if not isinstance(fast, str):          # the fast route answered here
        assert "axis" in used or "pair" in used


@pytest.mark.slow
@pytest.mark.parametrize("arith", list(ARITHS))
def test_one_position_wide_sweep(arith):
    """80 seeds x 5 rules per arithmetic (400 cases)."""
    for seed in range(14, 94):
        p, q = instance(seed)
        for file, name in ONE:
            fast, slow, _ = one_position(f"{ENGINES / file}:{name}", p, q, **ARITHS[arith])
            same_one(fast, slow)


EDGES = {
    "q zero where p is positive": ("1/2,1/4,1/4", "0,1/2,1/2"),
    "p with zeros": ("0,1/2,0,1/2", "1/4,1/4,1/4,1/4"),
    "p on the 2**-24 grid": (f"{F(1, 2**24)},{F(1, 2) - F(1, 2**24)},1/2", "1/2,1/4,1/4"),
    "p / q on the 2**-24 grid": (f"{F(3, 2**26)},{F(1, 2) - F(3, 2**26)},1/2", "1/4,1/4,1/2"),
    "p on the float16 grid": (f"{F(1, 2**11)},{F(1023, 2**11)},1/2", "1/2,1/4,1/4"),
    "two tokens": ("1/3,2/3", "1/2,1/2"),
    "two tokens, p one-hot": ("0,1", "1/2,1/2"),
    "one token": ("1", "1"),
    "thirds, not dyadic": ("1/3,1/3,1/3", "0.5,0.25,0.25"),
    "decimals, not dyadic": ("0.3,0.3,0.4", "0.1,0.2,0.7"),
}


def _rows(edge):
    return [[F(x) for x in row.split(",")] for row in EDGES[edge]]


@pytest.mark.parametrize("edge", list(EDGES))
@pytest.mark.parametrize("arith", [pytest.param(a, marks=pytest.mark.slow)
                                   if a != "exact" else a for a in ARITHS])
def test_one_position_edges(edge, arith):
    p, q = _rows(edge)
    for file, name in ONE:
        fast, slow, _ = one_position(f"{ENGINES / file}:{name}", p, q, **ARITHS[arith])
        same_one(fast, slow)


def test_edges_by_hand():
    """Two edge reports read by hand: the one-token pair is lossless in exact arithmetic on
    both routes; ``sample_wrong_row`` (``q / p``) is refused at ``p = 0`` on both routes."""
    fast, slow, used = one_position(f"{ENGINES / 'hf_speculative_sampling.py'}:sample",
                                    [F(1)], [F(1)])
    assert fast.verdict == slow.verdict == "lossless" and fast.exact.law == {0: F(1)}
    p, q = _rows("p with zeros")
    fast, slow, _ = one_position(f"{ENGINES / 'hf_speculative_sampling.py'}:sample_wrong_row",
                                 p, q)
    assert fast == slow == "InvalidInput"


# -- several positions -----------------------------------------------------------------------
def several_positions(spec, p, q, m, **kw):
    """``user_report`` by the factored route (where it applies) and by the paths."""
    rule = load_pytorch_rule(spec)
    pair = ContextPair.context_free(Dist(p), Dist(q))
    whole = pytorch_whole_call(rule, m)
    run = lambda: user_report({"m": m}, whole, pair=pair, m=m, **kw)  # noqa: E731
    fast = _refusal(run)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(factored, "factored_report", _switched_off)
        slow = _refusal(run)
    return fast, slow


def same_several(fast, slow):
    """The report's figures; the factored route's ``differs`` names its witness prefix only,
    so the sequences that differ are compared through the laws and ``exact_arith``."""
    if isinstance(fast, str) or isinstance(slow, str):
        assert fast == slow
        return
    for key in ("verdict", "lossless", "tokens_per_call", "bias", "target", "arith", "grid",
                "bias_exact_arith", "bias_grid_only", "ok"):
        assert fast.get(key) == slow.get(key), key
    if "law" in fast:
        assert fast["law"] == slow["law"]
    if fast.get("call_law") is not None:
        assert fast["call_law"] == slow["call_law"]
    if fast.get("differs"):                 # the witness prefix is a prefix that differs
        assert slow["differs"] and not fast["lossless"]
    if "exact_arith" in slow:
        for key in ("law", "tokens_per_call", "differs"):
            assert fast["exact_arith"].get(key) == slow["exact_arith"].get(key), key


def _multi_rules(n):
    return [(file, name) for file, name in MULTI
            if name != "chain_shared_uniform" or n <= 3]


@pytest.mark.parametrize("seed", [2])
@pytest.mark.parametrize("arith", ["exact", pytest.param("grid7", marks=pytest.mark.slow),
                                   pytest.param("float16", marks=pytest.mark.slow)])
def test_several_positions_fast_equals_paths(seed, arith):
    p, q = instance(seed)
    routes = set()
    for file, name in _multi_rules(len(p)):
        fast, slow = several_positions(f"{ENGINES / file}:{name}", p, q, 2, **ARITHS[arith])
        same_several(fast, slow)
        routes.add(fast.get("route") if isinstance(fast, dict) else fast)
    assert "factored" in routes


def test_differs_of_the_exact_twin_in_token_order():
    """Regression: with ``p = (3/4, 1/4, 0)`` the factored route listed the sequences through
    token 2 (outside ``p``'s support) after the others in ``exact_arith.differs``; the path
    route lists every sequence in the order of the tokens."""
    p, q = [F(3, 4), F(1, 4), F(0)], [F(8, 9), F(0), F(1, 9)]
    fast, slow = several_positions(f"{ENGINES / 'vllm_rejection_sampler.py'}:rejection_sample",
                                   p, q, 2, grid=2)
    assert fast["route"] == "factored"
    expected = [f"{a},{b}" for a in range(3) for b in range(3)]   # the clamp at tiny: all
    assert fast["exact_arith"]["differs"] == slow["exact_arith"]["differs"] == expected


@pytest.mark.slow
@pytest.mark.parametrize("arith", list(ARITHS))
@pytest.mark.parametrize("m", [2, 3])
def test_several_positions_wide_sweep(arith, m):
    """Every multi-position rule of the gallery on 14 seeds (M = 2) or the three seeds of
    3 tokens (M = 3)."""
    for seed in range(14) if m == 2 else (1, 2, 3):
        p, q = instance(seed)
        for file, name in _multi_rules(len(p)):
            fast, slow = several_positions(f"{ENGINES / file}:{name}", p, q, m,
                                           **ARITHS[arith])
            same_several(fast, slow)


@pytest.mark.slow
@pytest.mark.parametrize("edge", list(EDGES))
def test_several_positions_edges(edge):
    p, q = _rows(edge)
    for arith in ("exact", "grid2", "float32"):
        for file, name in _multi_rules(len(p)):
            fast, slow = several_positions(f"{ENGINES / file}:{name}", p, q, 2,
                                           **ARITHS[arith])
            same_several(fast, slow)
