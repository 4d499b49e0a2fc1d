"""Multi-position PyTorch rules with every draft position as a tensor axis (the factored route).

On small pairs with zeros and ties, ``verify --tokens M`` by the factored route
(:mod:`exactspec.sequences.factored`) gives the same verdict, law, tokens per call and TV as the
path route (one run of the body per path, every context); rules the factored run does not
track fall back and keep the path route's report.  Under ``--arith`` and ``--grid`` the
three runs (float, exact with ideal uniforms, exact on the grid) by the factored route equal
the path route's, and ``--sum-order`` reaches the multi-position route, its report and its
certificate.  The exact rank-one algebra
(:mod:`exactspec.core.rank_one`) is checked against dense tensors on random small instances.
"""

import itertools
import random
import textwrap
from fractions import Fraction as F
from pathlib import Path

import pytest

from exactspec.core import rank_one
from exactspec.core.errors import TooLarge
from exactspec.sequences import factored
from exactspec.sequences.context import ContextPair
from exactspec.sequences.torch_rules import pytorch_whole_call
from exactspec.sequences.user import user_report
from exactspec.core.signals import CannotProceed
from exactspec.torch_layer.factored import factored_call_law
from exactspec.torch_layer.rule import load_pytorch_rule

ROOT = Path(__file__).resolve().parent.parent
CHAIN = ROOT / "examples" / "engines" / "flashinfer_chain.py"
HF = ROOT / "examples" / "engines" / "hf_speculative_sampling.py"
VLLM = ROOT / "examples" / "engines" / "vllm_rejection_sampler.py"

PAIRS = [
    ("1/2,1/3,1/6", "1/4,1/4,1/2"),
    ("1/4,1/4,1/2,0", "1/2,0,1/4,1/4"),          # zeros on both sides
    ("1/5,1/5,1/5,2/5", "1/5,1/5,2/5,1/5"),      # ties p = q
    ("0,1,0", "1/2,1/4,1/4"),                    # a one-token target
]

# a chain whose recovered token is drawn from p, not from the residual (a bug the factored
# route tracks: multinomial over plain weights), and one that accepts with u < p / q
VARIANTS = '''
import torch


def chain_recover_from_p(p, q):
    n = q.shape[0]
    drafts = torch.multinomial(q, num_samples=1)                      # [n, 1]
    pd = p[:n].gather(1, drafts).reshape(n)
    qd = q.gather(1, drafts).reshape(n)
    u = torch.rand(n)
    out = []
    for i in range(n):
        x = drafts[i, 0]
        accept = u[i] < pd[i] / qd[i]
        if not bool(accept):
            return out + [torch.multinomial(p[i], 1)[0]]
        out.append(x)
    return out + [torch.multinomial(p[n], 1)[0]]


def chain_normalised(p, q):
    n = q.shape[0]
    drafts = torch.multinomial(q, num_samples=1)                      # [n, 1]
    pd = p[:n].gather(1, drafts).reshape(n)
    qd = q.gather(1, drafts).reshape(n)
    u = torch.rand(n, dtype=p.dtype)
    out = []
    for i in range(n):
        if not bool(u[i] <= pd[i] / qd[i]):
            residual = (p[i] - q[i]).clamp(min=0)
            residual = residual / residual.sum()                      # a long float sum
            return out + [torch.multinomial(residual, 1)[0]]
        out.append(drafts[i, 0])
    return out + [torch.multinomial(p[n], 1)[0]]


def chain_bonus_from_q(p, q):
    n = q.shape[0]
    drafts = torch.multinomial(q, num_samples=1)                      # [n, 1]
    pd = p[:n].gather(1, drafts).reshape(n)
    qd = q.gather(1, drafts).reshape(n)
    u = torch.rand(n)
    out = []
    for i in range(n):
        if not bool(u[i] * qd[i] < pd[i]):
            residual = (p[i] - q[i]).clamp(min=0)
            return out + [torch.multinomial(residual, 1)[0]]
        out.append(drafts[i, 0])
    return out + [torch.multinomial(q[n - 1], 1)[0]]               # the bonus from q


def chain_divide(p, q):
    n = q.shape[0]
    drafts = torch.multinomial(q, num_samples=1)                      # [n, 1]
    pd = p[:n].gather(1, drafts).reshape(n)
    qd = q.gather(1, drafts).reshape(n)
    u = torch.rand(n)
    out = []
    for i in range(n):
        x = drafts[i, 0]
        accept = u[i] < pd[i] / qd[i]
        if not bool(accept):
            residual = (p[i] - q[i]).clamp(min=0)
            return out + [torch.multinomial(residual, 1)[0]]
        out.append(x)
    return out + [torch.multinomial(p[n], 1)[0]]
'''


@pytest.fixture(scope="module")
def variants(tmp_path_factory):
    path = tmp_path_factory.mktemp("rules") / "chain_variants.py"
    path.write_text(textwrap.dedent(VARIANTS))
    return path


def _switched_off(*args, **kwargs):
    """The factored route declining every request: the planner takes the path route."""
    raise CannotProceed("switched off by the test")


def _both(spec, p, q, m):
    """The report by the factored route (when it applies) and by the path route (the
    reference, without the seconds budget: a loaded machine must not refuse it)."""
    rule = load_pytorch_rule(spec)
    pair = ContextPair.context_free(p, q)
    whole = pytorch_whole_call(rule, m)
    fast = user_report({"m": m}, whole, pair=pair, m=m)
    with pytest.MonkeyPatch.context() as patch:          # the same call by the path route
        patch.setattr(factored, "factored_report", _switched_off)
        slow = user_report({"m": m}, whole, pair=pair, m=m, max_seconds=None)
    return fast, slow


def _same(fast, slow):
    assert fast["verdict"] == slow["verdict"]
    assert fast["lossless"] == slow["lossless"]
    assert fast["tokens_per_call"] == slow["tokens_per_call"]
    assert fast["bias"] == slow["bias"]
    assert fast["law"] == slow["law"]
    assert fast["target"] == slow["target"]
    assert fast.get("call_law") == slow["call_law"]


@pytest.mark.parametrize("pq", PAIRS)
@pytest.mark.parametrize("m", [2, 3])
def test_chain_factored_equals_paths(pq, m):
    fast, slow = _both(f"{CHAIN}:chain", *pq, m)
    assert fast["route"] == "factored" and "route" not in slow
    _same(fast, slow)
    assert fast["verdict"] == "lossless"
    assert fast["factored"]["draft_axes"] == m - 1


def test_chain_four_tokens():
    fast, slow = _both(f"{CHAIN}:chain", "1/2,1/3,1/6", "1/4,1/4,1/2", 4)
    assert fast["route"] == "factored"
    _same(fast, slow)


@pytest.mark.parametrize("pq,m", [(pq, m) for m in (2, 3) for pq in PAIRS] + [(PAIRS[0], 4)])
def test_reuse_of_the_rejecting_uniform_factored_equals_paths(pq, m):
    """The recovered token drawn with the uniform that rejected: its law depends on the
    rejected draft's axis, summed out exactly (a 2-axis factor of the draft and the token)."""
    fast, slow = _both(f"{CHAIN}:chain_reuse_rejecting_uniform", *pq, m)
    assert fast["route"] == "factored"
    _same(fast, slow)


def test_reuse_first_token_tv():
    """The gallery's figure: on the first token alone TV 1/24 (a rejection leaves u uniform
    on [1/3, 1), which gives token 0 with probability 5/8 instead of 3/4)."""
    fast, _ = _both(f"{CHAIN}:chain_reuse_rejecting_uniform", "1/2,1/3,1/6", "1/4,1/4,1/2", 3)
    assert fast["tv_first_token"] == "1/24" and fast["tv"] == "133/2304"
    assert fast["verdict"] == "lossy-logic"


@pytest.mark.parametrize("name", ["chain_recover_from_p", "chain_divide"])
@pytest.mark.parametrize("pq", PAIRS[:3])
@pytest.mark.parametrize("m", [2, 3])
def test_variants_factored_equal_paths(variants, name, pq, m):
    fast, slow = _both(f"{variants}:{name}", *pq, m)
    assert fast["route"] == "factored"
    _same(fast, slow)
    if not fast["lossless"]:
        w = fast["witness"]
        tokens = w["tokens"]
        # the witness is a prefix whose probability differs: read it off the path route's law
        k = len(tokens.split(","))
        marginal = sum((F(v) for seq, v in slow["law"].items()
                        if seq.split(",")[:k] == tokens.split(",")), F(0))
        assert F(w["law"]) == marginal != F(w["target"])
        assert fast["tv_is"].startswith("exact")


def _prefix_laws(law: dict, m: int) -> dict:
    """``{k: law of the first k tokens}`` read off the path route's law of ``m`` tokens."""
    out = {}
    for k in range(1, m + 1):
        out[k] = {}
        for seq, v in law.items():
            key = ",".join(seq.split(",")[:k])
            out[k][key] = out[k].get(key, F(0)) + F(v)
    return out


@pytest.mark.parametrize("name,m,shortest", [("chain_bonus_from_q", 2, 2),
                                             ("chain_bonus_from_q", 3, 3),
                                             ("chain_bonus_from_q", 4, 4),
                                             ("chain_recover_from_p", 3, 1),
                                             ("chain_reuse_rejecting_uniform", 4, 1)])
def test_the_witness_is_the_shortest_prefix_that_differs(variants, name, m, shortest):
    """The shortest prefix that differs, found on one call's law padded with ``p`` without
    composing the calls, is the path route's: a bonus token drawn from ``q`` is the ``m``-th
    token of a call at the earliest, so every shorter prefix follows ``p``; a recovered token
    drawn from ``p`` or with the rejecting uniform is wrong from the first token.  Its
    probability is the path route's."""
    p, q = "1/2,1/3,1/6", "1/4,1/4,1/2"
    spec = f"{CHAIN}:{name}" if name.startswith("chain_reuse") else f"{variants}:{name}"
    fast, slow = _both(spec, p, q, m)
    assert fast["route"] == "factored"
    _same(fast, slow)
    assert fast["verdict"] == "lossy-logic"
    prefixes = _prefix_laws(slow["law"], m)
    target = [F(1, 2), F(1, 3), F(1, 6)]
    first = None
    for k in range(1, m + 1):
        for seq in itertools.product(range(3), repeat=k):
            key = ",".join(map(str, seq))
            want = F(1)
            for t in seq:
                want *= target[t]
            if prefixes[k].get(key, F(0)) != want:
                first = k
                break
        if first is not None:
            break
    tokens = fast["witness"]["tokens"]
    assert first == shortest == len(tokens.split(","))
    assert F(fast["witness"]["law"]) == prefixes[first].get(tokens, F(0)) != F(fast["witness"]["target"])


def test_a_lossless_law_is_not_composed():
    """Lossless: the law of every prefix is ``p``'s joint law, one term, decided on one
    call's law padded with ``p`` (the calls are never composed)."""
    fast, slow = _both(f"{CHAIN}:chain", "1/2,1/3,1/6", "1/4,1/4,1/2", 4)
    assert fast["factored"]["terms_of_law"] == 1 and fast["law"] == slow["law"]


def test_bug_variant_refuted_with_witness(variants):
    fast, slow = _both(f"{variants}:chain_recover_from_p", "1/2,1/3,1/6", "1/4,1/4,1/2", 3)
    assert fast["verdict"] == "lossy-logic" and fast["bias"] == slow["bias"] != "0"
    first = {}
    for seq, v in slow["law"].items():
        first[seq[0]] = first.get(seq[0], F(0)) + F(v)
    p = [F(1, 2), F(1, 3), F(1, 6)]
    assert F(fast["tv_first_token"]) == sum(max(first.get(str(t), F(0)) - p[t], F(0))
                                            for t in range(3))


def test_lower_bound_when_the_dense_law_does_not_fit(variants, monkeypatch):
    fast, slow = _both(f"{variants}:chain_recover_from_p", "1/2,1/3,1/6", "1/4,1/4,1/2", 3)
    monkeypatch.setattr(factored, "DENSE_LIMIT", 9)      # 3^2 fits, 3^3 does not
    rule = load_pytorch_rule(f"{variants}:chain_recover_from_p")
    pair = ContextPair.context_free("1/2,1/3,1/6", "1/4,1/4,1/2")
    bound = user_report({"m": 3}, pytorch_whole_call(rule, 3), pair=pair, m=3)
    assert bound["tv_of_first"] == 2 and "lower bound" in bound["tv_is"]
    two = {}
    for seq, v in slow["law"].items():
        key = seq.rsplit(",", 1)[0]
        two[key] = two.get(key, F(0)) + F(v)
    p = [F(1, 2), F(1, 3), F(1, 6)]
    exact_two = sum(max(two.get(f"{a},{b}", F(0)) - p[a] * p[b], F(0))
                    for a in range(3) for b in range(3))
    assert F(bound["tv"]) == exact_two <= F(fast["tv"])


def test_a_lower_bound_shorter_than_the_witness_is_zero(variants, monkeypatch):
    """A bonus token drawn from ``q`` first shows at the 3rd token: the TV of the first 2
    (all the dense law fits) is 0 exactly, known from the witness; the path route's law of
    the first 2 tokens is ``p``'s joint law."""
    _, slow = _both(f"{variants}:chain_bonus_from_q", "1/2,1/3,1/6", "1/4,1/4,1/2", 3)
    monkeypatch.setattr(factored, "DENSE_LIMIT", 9)      # 3^2 fits, 3^3 does not
    rule = load_pytorch_rule(f"{variants}:chain_bonus_from_q")
    pair = ContextPair.context_free("1/2,1/3,1/6", "1/4,1/4,1/2")
    bound = user_report({"m": 3}, pytorch_whole_call(rule, 3), pair=pair, m=3)
    assert bound["verdict"] == "lossy-logic" and bound["witness"]["tokens"].count(",") == 2
    assert bound["tv"] == "0" and bound["tv_first_token"] == "0"
    p = [F(1, 2), F(1, 3), F(1, 6)]
    two = _prefix_laws(slow["law"], 3)[2]
    assert all(two.get(f"{a},{b}", F(0)) == p[a] * p[b] for a in range(3) for b in range(3))


def test_uniform_read_again_falls_back():
    """One uniform expanded over the positions: two axes' comparisons of one uniform (not a
    product of per-axis weights): the path route, each call enumerated once."""
    p, q = "1/2,1/3,1/6", "1/4,1/4,1/2"
    rule = load_pytorch_rule(f"{CHAIN}:chain_shared_uniform")
    from exactspec import Dist

    with pytest.raises(CannotProceed):       # the route declines: the paths are taken
        factored_call_law(rule, Dist(p), Dist(q), 2)
    fast, slow = _both(f"{CHAIN}:chain_shared_uniform", p, q, 3)
    assert "route" not in fast and fast["verdict"] == "lossy-logic"
    _same(fast, slow)
    assert fast["bias"] == "1103/6912" and fast["calls_enumerated"] == 1   # not per context

    def plain(s, pair, ctx):                            # a whole call that may read ctx
        return whole(s, pair, ctx)

    whole = pytorch_whole_call(rule, 3)
    per_context = user_report({"m": 3}, plain, pair=ContextPair.context_free(p, q), m=3)
    assert per_context["law"] == fast["law"] and per_context["calls_enumerated"] > 1


def test_fallback_refused_up_front_at_large_vocabulary(monkeypatch):
    """Refused by the count of token sequences before the path route runs the rule once: the
    rule's function ran at most once (the factored route's try, which falls back), its rows
    were never handed to a path."""
    rule = load_pytorch_rule(f"{CHAIN}:chain_shared_uniform")
    n = 1000
    p = ",".join(f"{k + 1}/{n * (n + 1) // 2}" for k in range(n))
    q = ",".join([f"1/{n}"] * n)
    pair = ContextPair.context_free(p, q)
    runs, paths = [], []
    function, call_rows = rule.function, type(rule).call_rows
    monkeypatch.setattr(rule, "function", lambda *a, **kw: runs.append(1) or function(*a, **kw))
    monkeypatch.setattr(type(rule), "call_rows",
                        lambda self, *a, **kw: paths.append(1) or call_rows(self, *a, **kw))
    with pytest.raises(TooLarge, match="1,000,000,000,000 token sequences") as info:
        user_report({"m": 4}, pytorch_whole_call(rule, 4), pair=pair, m=4)
    assert len(runs) <= 1 and paths == []
    # the refusal ends with why the factored route declined
    assert str(info.value).endswith(
        "(declined: factored: a uniform read again after a branched comparison)")
    # on three tokens the same rule runs on every path (the counts are not vacuous)
    small = ContextPair.context_free("1/2,1/3,1/6", "1/4,1/4,1/2")
    user_report({"m": 3}, pytorch_whole_call(rule, 3), pair=small, m=3)
    assert len(paths) > 1 and len(runs) > len(paths)


def _ramp_and_uniform(n: int) -> tuple[str, str]:
    """``p`` proportional to ``1 .. n`` and the uniform ``q``, as ``--p``/``--q`` strings."""
    return (",".join(f"{k + 1}/{n * (n + 1) // 2}" for k in range(n)),
            ",".join([f"1/{n}"] * n))


def test_chain_factored_at_vocabulary_50():
    """A size the path route cannot reach (50^3 draft combinations per call): proved."""
    n = 50
    p, q = _ramp_and_uniform(n)
    rule = load_pytorch_rule(f"{CHAIN}:chain")
    pair = ContextPair.context_free(p, q)
    r = user_report({"m": 4}, pytorch_whole_call(rule, 4), pair=pair, m=4)
    assert r["route"] == "factored" and r["verdict"] == "lossless"
    assert r["paths"] <= 8
    # tokens per call of a chain of 3 drafts: 1 + a + a^2 + a^3, a = sum min(p, q)
    a = sum(min(F(k + 1, n * (n + 1) // 2), F(1, n)) for k in range(n))
    assert F(r["tokens_per_call"]) == 1 + a + a ** 2 + a ** 3


# -- the Hugging Face and vLLM-style samplers over k positions ----------------------------------
ENGINE_RULES = [f"{HF}:speculative_sampling", f"{HF}:speculative_sampling_count_all",
                f"{VLLM}:rejection_sample", f"{VLLM}:rejection_sample_all_accepted_as_rejected"]


def _engine_cases():
    for spec in ENGINE_RULES:
        heavy = "vllm" in spec                       # its path route: about 1-4 s at M = 3
        for pq in PAIRS:
            for m in (2, 3):            # the default run: two pairs; the rest with -m slow
                slow = pq not in (PAIRS[0], PAIRS[2]) or (heavy and m == 3 and pq != PAIRS[0])
                yield pytest.param(spec, pq, m, marks=[pytest.mark.slow] if slow else [],
                                   id=f"{Path(spec).name}-{pq[0]}-{m}")
        yield pytest.param(spec, PAIRS[0], 4, marks=[pytest.mark.slow] if heavy else [],
                           id=f"{Path(spec).name}-{PAIRS[0][0]}-4")


@pytest.mark.parametrize("spec, pq, m", list(_engine_cases()))
def test_engine_samplers_factored_equal_paths(spec, pq, m):
    """The batched samplers over ``k = M - 1`` positions: a prefix count by ``cumsum``, a
    residual or bonus row picked by that count, an exponential race per position row on one
    noise tensor, masks written with ``mul_``/``add_`` and the output read back with
    ``row[row != -1]``: the factored route tracks each, with the path route's report."""
    fast, slow = _both(spec, *pq, m)
    assert fast["route"] == "factored" and fast["factored"]["draft_axes"] == m - 1
    _same(fast, slow)


def test_hf_count_of_every_accepted_position_refuted_by_hand():
    """``n_matches = is_accepted.sum()`` over two drafts: a rejected first draft followed by
    an accepted second one emits the rejected draft.  By hand (P(x = t, accepted) = min(p, q)
    = (1/4, 1/4, 1/6), P(x = t, rejected) = (0, 0, 1/3), each draft accepted with probability
    2/3, residual (3/4, 1/4, 0)): the first token is an accepted first draft, else the rejected
    draft when the second is accepted, else a residual token:
    (1/4 + 1/3 * 1/3 * 3/4, 1/4 + 1/3 * 1/3 * 1/4, 1/6 + 1/3 * 2/3) = (1/3, 5/18, 7/18), TV
    2/9.  Tokens per call: 3, 2, 2, 1 for the acceptances 11, 10, 01, 00: 7/3."""
    fast, slow = _both(f"{HF}:speculative_sampling_count_all", *PAIRS[0], 3)
    first: dict = {}
    for seq, v in slow["law"].items():
        first[seq[0]] = first.get(seq[0], F(0)) + F(v)
    assert first == {"0": F(1, 3), "1": F(5, 18), "2": F(7, 18)}
    assert fast["tv_first_token"] == "2/9" and fast["tv"] == "1357/5832"
    assert F(fast["tokens_per_call"]) == 3 * F(4, 9) + 2 * F(2, 9) + 2 * F(2, 9) + F(1, 9)
    # the correct count on the same instance: 1 + a + a^2, a = 2/3
    ok, _ = _both(f"{HF}:speculative_sampling", *PAIRS[0], 3)
    assert ok["verdict"] == "lossless" and F(ok["tokens_per_call"]) == 1 + F(2, 3) + F(4, 9)


def _vllm_first_token(t, all_accepted_fix: bool) -> dict:
    """The first token of the vLLM-style rule over two drafts by hand, the clamp at ``t``:
    the recovered row is max(p - q, t) normalised; without the all-accepted fix a call that
    accepted both drafts emits the recovered token of position 0."""
    p, q = [F(1, 2), F(1, 3), F(1, 6)], [F(1, 4), F(1, 4), F(1, 2)]
    accept = [min(a, b) for a, b in zip(p, q)]          # P(x = i and accepted)
    a = sum(accept)
    rec = [max(x - y, t) for x, y in zip(p, q)]
    rec = [r / sum(rec) for r in rec]
    both = a * a if not all_accepted_fix else F(0)
    return {i: (accept[i] - (accept[i] * a if not all_accepted_fix else 0))
            + (1 - a + both) * rec[i] for i in range(3)}


def test_vllm_first_token_by_hand_with_the_clamp_at_tiny():
    t = F(2) ** -126                                    # torch.finfo(torch.float32).tiny
    for name, fix in (("rejection_sample", True),
                      ("rejection_sample_all_accepted_as_rejected", False)):
        fast, slow = _both(f"{VLLM}:{name}", *PAIRS[0], 3)
        first: dict = {}
        for seq, v in slow["law"].items():
            first[int(seq[0])] = first.get(int(seq[0]), F(0)) + F(v)
        expect = _vllm_first_token(t, fix)
        assert first == expect
        p = [F(1, 2), F(1, 3), F(1, 6)]
        assert F(fast["tv_first_token"]) == sum(max(expect[i] - p[i], 0) for i in range(3))
        assert fast["verdict"] == "lossy-logic"
        if fix:           # a rejection (1/3) weighs token 2 by t / (1/3 + t): TV t / (1 + 3t)
            assert F(fast["tv_first_token"]) == t / (1 + 3 * t)
    # with the clamp at 0 the correct rule's first token is p itself, the bug's is 1/6 away
    assert _vllm_first_token(F(0), True) == {0: F(1, 2), 1: F(1, 3), 2: F(1, 6)}
    assert _vllm_first_token(F(0), False) == {0: F(2, 3), 1: F(5, 18), 2: F(1, 18)}


def test_engine_samplers_at_vocabulary_50():
    """A size the path route cannot reach in a test (50^2 draft pairs a call): 4 engine paths,
    proved (HF) or lossy by the clamp at tiny only (vLLM: TV below 1e-36)."""
    n = 50
    p = ",".join(f"{k + 1}/{n * (n + 1) // 2}" for k in range(n))
    q = ",".join([f"1/{n}"] * n)
    pair = ContextPair.context_free(p, q)
    a = sum(min(F(k + 1, n * (n + 1) // 2), F(1, n)) for k in range(n))
    for spec in (f"{HF}:speculative_sampling", f"{VLLM}:rejection_sample"):
        r = user_report({"m": 3}, pytorch_whole_call(load_pytorch_rule(spec), 3), pair=pair,
                        m=3)
        assert r["route"] == "factored" and r["paths"] == 4
        assert F(r["tokens_per_call"]) == 1 + a + a ** 2
        assert r["verdict"] == "lossless" if "hf" in spec else F(r["tv"]) < F(1, 10 ** 36)


# -- the rank-one algebra against dense tensors -------------------------------------------------
def _dense(terms, n, k):
    out = {}
    for idx in itertools.product(range(n), repeat=k):
        out[idx] = rank_one.value_at(terms, idx)
    return out


def _random_terms(rng, n, k, r):
    return [(F(rng.randint(-3, 3), rng.randint(1, 4)),
             tuple(tuple(F(rng.randint(0, 2), rng.randint(1, 3)) for _ in range(n))
                   for _ in range(k)))
            for _ in range(r)]


@pytest.mark.parametrize("seed", range(30))
def test_find_nonzero_against_dense(seed):
    rng = random.Random(seed)
    n, k, r = rng.randint(1, 3), rng.randint(1, 3), rng.randint(1, 4)
    terms = _random_terms(rng, n, k, r)
    if seed % 2:                                  # make it zero: subtract its own dense form
        dense = _dense(terms, n, k)
        for idx, v in dense.items():
            if v:
                terms.append((-v, tuple(tuple(F(int(i == t)) for i in range(n)) for t in idx)))
    dense = _dense(terms, n, k)
    found = rank_one.find_nonzero(terms)
    if all(v == 0 for v in dense.values()):
        assert found is None
    else:
        assert found is not None and dense[found] != 0


@pytest.mark.parametrize("seed", range(40))
def test_shortest_nonzero_prefix_against_dense(seed):
    """The shortest prefix whose marginal is not zero, against the dense tensor's marginals:
    random terms, made zero (their dense form subtracted) or zero on their first positions
    only (a term that agrees with them there)."""
    rng = random.Random(500 + seed)
    n, k, r = rng.randint(1, 3), rng.randint(1, 4), rng.randint(1, 5)
    terms = _random_terms(rng, n, k, r)
    if seed % 3 == 0:                             # zero: subtract its own dense form
        for idx, v in _dense(terms, n, k).items():
            if v:
                terms.append((-v, tuple(tuple(F(int(i == t)) for i in range(n)) for t in idx)))
    elif seed % 3 == 1 and k > 1:                 # equal marginals on the first k - 1
        j = rng.randint(1, k - 1)
        head = _dense(terms, n, k)                # minus (its first j positions) x a tail
        marg: dict = {}
        for idx, v in head.items():
            marg[idx[:j]] = marg.get(idx[:j], F(0)) + v
        tail = tuple(tuple(F(rng.randint(0, 3)) for _ in range(n)) for _ in range(k - j))
        scale = F(1)
        for f in tail:
            scale *= sum(f, F(0))
        if scale:
            for idx, v in marg.items():
                if v:
                    one_hot = tuple(tuple(F(int(i == t)) for i in range(n)) for t in idx)
                    terms.append((-v / scale, one_hot + tail))
    dense = _dense(terms, n, k)
    expected = None
    for length in range(0, k + 1):
        marg = {}
        for idx, v in dense.items():
            marg[idx[:length]] = marg.get(idx[:length], F(0)) + v
        hit = next(((idx, v) for idx, v in sorted(marg.items()) if v), None)
        if hit is not None:
            expected = (length, marg)
            break
    found = rank_one.shortest_nonzero_prefix(terms)
    if expected is None:
        assert found is None
    else:
        length, marg = expected
        tokens, value = found
        assert len(tokens) == length and marg[tokens] == value != 0


@pytest.mark.parametrize("seed", range(10))
def test_compose_and_tv_against_dense(seed):
    rng = random.Random(100 + seed)
    n = rng.randint(2, 3)

    def law():
        w = [F(rng.randint(0, 3)) for _ in range(n)]
        w[rng.randrange(n)] += 1
        s = sum(w)
        return tuple(x / s for x in w)

    call = [(F(1, 2), (law(),)), (F(1, 3), (law(), law())), (F(1, 6), (law(), law(), law()))]
    laws = rank_one.compose(call, 3)
    # the law of the first 3 tokens, by enumerating calls
    expect: dict = {}

    def walk(prefix, weight):
        if len(prefix) >= 3:
            expect[prefix[:3]] = expect.get(prefix[:3], F(0)) + weight
            return
        for c, fs in call:
            for idx in itertools.product(range(n), repeat=len(fs)):
                w = c
                for f, t in zip(fs, idx):
                    w *= f[t]
                if w:
                    walk(prefix + idx, weight * w)

    walk((), F(1))
    assert _dense(laws[3], n, 3) == {i: expect.get(i, F(0))
                                     for i in itertools.product(range(n), repeat=3)}
    p = law()
    tv = sum(max(expect.get(i, F(0)) - p[i[0]] * p[i[1]] * p[i[2]], F(0))
             for i in itertools.product(range(n), repeat=3))
    assert rank_one.tv_to_power(laws[3], p, 3) == tv


def test_command_line(capsys):
    import json

    from exactspec.cli import main

    args = ["verify", f"{CHAIN}:chain", "--p", "1/2,1/3,1/6", "--q", "1/4,1/4,1/2",
            "--tokens", "3", "--json"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["route"] == "factored" and report["tokens_per_call"] == "19/9"
    args[1] = f"{CHAIN}:chain_reuse_rejecting_uniform"
    assert main(args) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["route"] == "factored" and report["tv"] == "133/2304"
    assert main(args[:-1]) == 1
    text = capsys.readouterr().out
    assert "factored route: 4 engine paths, 2 draft axes vectorised" in text
    assert "REFUTED (lossy by logic)" in text and "TV = 133/2304" in text


# -- the float runs (--arith) and the grid (--grid) by the factored route ---------------------
def _both_arith(spec, p, q, m, **kw):
    """The report under ``arith``/``grid`` by the factored route and by the path route."""
    rule = load_pytorch_rule(spec)
    pair = ContextPair.context_free(p, q)
    whole = pytorch_whole_call(rule, m)
    fast = user_report({"m": m}, whole, pair=pair, m=m, **kw)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(factored, "factored_report", _switched_off)
        slow = user_report({"m": m}, whole, pair=pair, m=m, max_seconds=None, **kw)
    return fast, slow


def _same_runs(fast, slow):
    """The verdict, the three TVs, the laws (of the run asked for and of exact arithmetic) and
    tokens per call are the path route's."""
    _same(fast, slow)
    for key in ("arith", "grid", "bias_exact_arith", "bias_grid_only", "ok"):
        assert fast[key] == slow[key], key
    if "exact_arith" in slow:
        assert fast["exact_arith"]["law"] == slow["exact_arith"]["law"]
        assert fast["exact_arith"]["tokens_per_call"] == slow["exact_arith"]["tokens_per_call"]
        assert fast["exact_arith"]["differs"] == slow["exact_arith"]["differs"]


FIVE = ("1/3,1/6,1/5,3/10,0", "1/7,2/7,1/7,1/7,2/7")
#: the default run keeps one pair per format and M (float32 at M = 3, float16 at M = 2, five
#: tokens); the other pairs run with ``-m slow``
_DEFAULT_FLOAT = {(0, "float32"), (1, "float16"), (4, "float32")}
FLOAT_CASES = [pytest.param(name, pq, m, arith,
                            marks=[] if (i, arith) in _DEFAULT_FLOAT else [pytest.mark.slow])
               for name in ("chain", "chain_reuse_rejecting_uniform")
               for arith in ("float32", "float16")
               for i, (pq, m) in enumerate(((PAIRS[0], 3), (PAIRS[1], 2), (PAIRS[2], 3),
                                            (PAIRS[3], 2), (FIVE, 2)))] + \
    [pytest.param(name, ("1/7,2/7,4/7", "1/3,1/3,1/3"), 3, arith,
                  marks=[] if name == "chain" else [pytest.mark.slow])
     for name in ("chain", "chain_reuse_rejecting_uniform")
     for arith in ("bfloat16", "float64")] + \
    [pytest.param("chain", FIVE, 3, "float32", marks=pytest.mark.slow)]


@pytest.mark.parametrize("name,pq,m,arith", FLOAT_CASES)
def test_chain_float_runs_factored_equal_paths(name, pq, m, arith):
    fast, slow = _both_arith(f"{CHAIN}:{name}", *pq, m, arith=arith)
    assert fast["route"] == "factored" and "route" not in slow
    _same_runs(fast, slow)
    assert fast["verdict"] != "lossless" or fast["bias"] == "0"


@pytest.mark.parametrize("name", ["chain_recover_from_p", "chain_divide"])
@pytest.mark.parametrize("arith", ["float32", "float16"])
@pytest.mark.parametrize("m", [2, 3])
def test_variants_float_runs_factored_equal_paths(variants, name, arith, m):
    fast, slow = _both_arith(f"{variants}:{name}", "1/2,1/3,1/6", "1/4,1/4,1/2", m,
                             arith=arith)
    assert fast["route"] == "factored"
    _same_runs(fast, slow)


@pytest.mark.parametrize("grid,arith", [
    (2, None), pytest.param(5, None, marks=pytest.mark.slow), (16, None), (5, "float16"),
    pytest.param(1000, "float16", marks=pytest.mark.slow)])
def test_grid_runs_factored_equal_paths(grid, arith):
    """Exact arithmetic on a grid: the axis splits, the lazy counts and the count of a
    uniform split on an axis on grid points, as the path run counts them; a float run on a
    grid other than its format's (its grid values rounded into the format, the cuts found by
    the path run's bisection)."""
    for name in ("chain", "chain_reuse_rejecting_uniform"):
        fast, slow = _both_arith(f"{CHAIN}:{name}", "1/2,1/3,1/6", "1/4,1/4,1/2", 3, grid=grid,
                                 arith=arith)
        assert fast["route"] == "factored"
        _same_runs(fast, slow)


def test_grid_and_rounding_told_apart():
    """float32 on this pair is lossy by its grid alone, float16 beyond it: the factored float
    run's law is compared with exact arithmetic on the grid exactly."""
    for arith, verdict in (("float32", "lossy-grid"), ("float16", "lossy-rounding")):
        fast, slow = _both_arith(f"{CHAIN}:chain", *PAIRS[0], 2, arith=arith)
        assert fast["route"] == "factored" and fast["verdict"] == slow["verdict"] == verdict
        assert (fast["bias"] == fast["bias_grid_only"]) == (verdict == "lossy-grid")
        assert fast["bias_exact_arith"] == "0" and fast["exact_arith"]["lossless"]


def test_shared_uniform_under_arith_takes_the_path_route():
    fast, slow = _both_arith(f"{CHAIN}:chain_shared_uniform", *PAIRS[0], 2, arith="float16")
    assert "route" not in fast
    _same_runs(fast, slow)
    assert fast["verdict"] == "lossy-logic"


# -- --sum-order under --tokens ---------------------------------------------------------------
P5, Q5 = "1/5,1/5,1/10,1/10,2/5", "1/10,1/10,1/5,1/5,2/5"


@pytest.mark.parametrize("order", ["torch-avx2", "sequential", "correctly-rounded"])
def test_a_long_float_sum_in_a_declared_order_factored_equals_paths(variants, order):
    fast, slow = _both_arith(f"{variants}:chain_normalised", P5, Q5, 2, arith="float32",
                             sum_order=order)
    assert fast["route"] == "factored" and fast["sum_order"] == slow["sum_order"] == order
    _same_runs(fast, slow)
    assert fast["verdict"] in ("lossy-grid", "lossy-rounding")


def test_sum_order_on_the_command_line(variants, capsys, tmp_path):
    import json

    from exactspec.cli import main
    from exactspec.replay import check

    base = ["verify", f"{variants}:chain_normalised", "--p", P5, "--q", Q5, "--tokens", "2",
            "--arith", "float32"]
    assert main(base) == 2                    # no order declared: one line naming the option
    err = capsys.readouterr().err
    assert "a float32 sum of 5 terms" in err and "--sum-order" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert main(base + ["--sum-order", "torch-avx2", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["route"] == "factored" and report["sum_order"] == "torch-avx2"
    assert main(base + ["--sum-order", "torch-avx2"]) == 1
    assert "long sums torch-avx2" in capsys.readouterr().out
    assert main(["verify", f"{variants}:chain_normalised", "--p", P5, "--q", Q5, "--tokens",
                 "2", "--sum-order", "sequential"]) == 2
    assert "--sum-order applies with --arith" in capsys.readouterr().err
    # the certificate records the order; the checker's replay runs the same float run
    cert_path = tmp_path / "cert.json"
    assert main(base + ["--sum-order", "torch-avx2", "--certificate", str(cert_path)]) == 1
    capsys.readouterr()
    cert = json.loads(cert_path.read_text())
    assert cert["sum_order"] == "torch-avx2" and cert["arith"] == "float32"
    trust = (f"{variants}:chain_normalised",)
    assert check(cert, trust=trust).verdict == "OK"
    del cert["sum_order"]                     # replayed without it: the sum is refused
    assert check(cert, trust=trust).verdict == "REJECTED"
    cert["sum_order"] = "pairwise"
    from exactspec.checker import CertificateError

    with pytest.raises(CertificateError, match="sum_order 'pairwise'"):
        check(cert, trust=trust)


def test_chain_float_run_at_vocabulary_50():
    """A size the path route cannot reach under --arith either: the three runs factored."""
    n = 50
    p, q = _ramp_and_uniform(n)
    rule = load_pytorch_rule(f"{CHAIN}:chain")
    pair = ContextPair.context_free(p, q)
    r = user_report({"m": 3}, pytorch_whole_call(rule, 3), pair=pair, m=3, arith="float32")
    assert r["route"] == "factored" and r["arith"] == "float32" and r["grid"] == 2**24
    assert r["verdict"] in ("lossy-grid", "lossy-rounding") and r["bias_exact_arith"] == "0"
    assert F(r["bias"]) > 0 and F(r["bias_grid_only"]) > 0
    a = sum(min(F(k + 1, n * (n + 1) // 2), F(1, n)) for k in range(n))
    assert F(r["exact_arith"]["tokens_per_call"]) == 1 + a + a ** 2


@pytest.mark.parametrize("arith", ["float16", "bfloat16"])
def test_the_galloping_cut_is_the_path_runs_bisection(arith):
    """The cut of ``f(u) * a < c`` (``<=``) the float run finds from any guess is the grid
    point the path run's bisection finds (``FloatSampler._compare``), NaN thresholds too."""
    from exactspec.engine.float_sampler import FloatSampler
    from exactspec.engine.floats import FloatValue, get_format
    from exactspec.torch_layer.factored import FactoredFloatSampler

    fmt = get_format(arith)
    rng = random.Random(7)
    fast = FactoredFloatSampler(3, fmt)
    fast._reset()
    for i in range(60):
        a = FloatValue(fmt.round(F(rng.randint(1, 1000), rng.randint(1, 1000))), fmt)
        c = FloatValue(fmt.round(F(rng.randint(-5, 1200), 1000)), fmt) if rng.random() < .9 \
            else FloatValue(float("nan"), fmt)
        if i % 4 == 0:
            c = a                                     # p = q at the draft: u * q rounds to q
        for strict in (True, False):
            path = FloatSampler(fmt)
            path._reset()
            u = path.uniform()
            expr = u * a
            below = path._compare(expr, c, strict)    # one branch point: its cut is u.hi/lo
            base = expr.base
            cut = base.hi if below else base.lo
            if not below and base.lo == 0:            # held nowhere
                cut = F(0)
            for guess in (0, fmt.grid // 2, fmt.grid, rng.randrange(fmt.grid)):
                k = fast._cut(lambda v: v * a, c, strict, guess)
                assert F(k, fmt.grid) == cut, (a, c, strict, guess)


def test_a_tolerance_is_never_met_by_a_lower_bound(monkeypatch):
    """Where only the TV of a prefix fits, a tolerance it exceeds is exceeded; one it meets
    decides nothing and is refused with the size, never an exit 0."""
    rule = load_pytorch_rule(f"{CHAIN}:chain")
    pair = ContextPair.context_free(*PAIRS[0])
    whole = pytorch_whole_call(rule, 3)
    full = user_report({"m": 3}, whole, pair=pair, m=3, arith="float16", tolerance=1)
    assert full["within_tolerance"] and full["ok"] and "tv_of_first" not in full
    monkeypatch.setattr(factored, "DENSE_LIMIT", 9)      # 3^2 fits, 3^3 does not
    below = user_report({"m": 3}, whole, pair=pair, m=3, arith="float16", tolerance=0)
    assert below["tv_of_first"] == 2 and not below["within_tolerance"] and not below["ok"]
    with pytest.raises(TooLarge, match="only a lower bound"):
        user_report({"m": 3}, whole, pair=pair, m=3, arith="float16", tolerance=1)


def test_the_factored_float_report_has_its_documented_keys(capsys):
    """The keys docs/json.md gives for ``verify --tokens --arith`` on the factored route."""
    import json

    from exactspec.cli import main

    assert main(["verify", f"{CHAIN}:chain", "--p", PAIRS[0][0], "--q", PAIRS[0][1], "--tokens",
                 "3", "--arith", "float16", "--json"]) == 1
    r = json.loads(capsys.readouterr().out)
    for key in ("kind", "verifier", "route", "labels", "context", "m", "law", "target",
                "lossless", "verdict", "bias", "bias_exact_arith", "bias_grid_only",
                "bias_float", "bias_exact_arith_float", "bias_grid_only_float",
                "floats_converted", "arith", "grid", "tokens_per_call",
                "tokens_per_call_float", "paths", "calls_enumerated", "ok", "differs",
                "difference", "tv", "tv_float", "witness", "tv_is", "tv_first_token",
                "elementwise", "sum_order", "exact_arith", "factored"):
        assert key in r, key
    assert set(r["factored"]) == {"engine_paths", "draft_axes", "terms", "terms_of_law",
                                  "seconds", "runs_seconds", "note"}
    assert set(r["witness"]) == {"tokens", "law", "target"}
    assert set(r["exact_arith"]) == {"tokens_per_call", "paths", "lossless", "law", "differs"}
    assert r["sum_order"] is None and r["elementwise"] == "correct"
    assert r["verdict"] == "lossy-rounding" and r["exact_arith"]["lossless"]


def _engine_float_cases():
    for spec in ENGINE_RULES:
        heavy = "vllm" in spec                 # its path route under --arith: about 5 s at M = 3
        for arith in ("float32", "float16"):
            for m in (2, 3):
                yield pytest.param(spec, arith, m,
                                   marks=[pytest.mark.slow] if heavy and m == 3 else [],
                                   id=f"{Path(spec).name}-{arith}-{m}")


@pytest.mark.parametrize("spec, arith, m", list(_engine_float_cases()))
def test_engine_samplers_float_runs_factored_equal_paths(spec, arith, m):
    """The k-position Hugging Face and vLLM-style samplers under ``--arith``: the three runs
    by the factored route (a residual normalised by a long sum in a declared order, a race
    per noise row over float weights) give the path route's verdict, TVs and laws."""
    fast, slow = _both_arith(spec, *PAIRS[0], m, arith=arith, sum_order="sequential")
    assert fast["route"] == "factored"
    _same_runs(fast, slow)


def test_equal_factors_as_other_objects_are_one_factor():
    """Factors equal in value but made apart (a forked path's terms sent back, an ``int``
    beside a ``Fraction``) are interned as one, so that their terms cancel; a factor that
    differs in one entry, or a vector of floats, stays its own."""
    p = (F(1, 2), F(1, 3), F(1, 6))
    same = tuple([F(1, 2), F(1, 3), F(1, 6)])
    assert same is not p
    assert rank_one.shortest_nonzero_prefix([(F(1), (p, p)), (F(-1), (same, same))]) is None
    ones = (F(1), F(0), F(0))
    assert rank_one.shortest_nonzero_prefix(
        [(F(1), (ones, p)), (F(-1), ((1, 0, 0), tuple(p)))]) is None
    other = (F(1, 2), F(1, 3), F(1, 7))
    found = rank_one.shortest_nonzero_prefix([(F(1), (p, p)), (F(-1), (p, other))])
    assert found == ((), F(1, 42))
    floats = (0.5, 0.25, 0.25)
    assert rank_one.shortest_nonzero_prefix(
        [(F(1), (floats,)), (F(-1), (tuple(list(floats)),))]) is None
