"""Bug classes of engines' Triton kernels (``examples/engines/triton_kernels.py``), each beside
its correct version, refuted or proved with its exact TV in exact arithmetic and under
``--arith float32``; every expected law is derived by hand in the comments.

Float32 facts used below: ``fl(1/3) = 11184811 / 2**25`` and ``fl(1/6) = 11184811 / 2**26``
(``2**25 / 3 = 11184810.67`` rounds up); ``fl(2/3) = 11184811 / 2**24``; a ``float64`` uniform
``u = j / 2**53`` satisfies ``u <= r`` for a multiple ``r`` of ``2**-53`` in ``r * 2**53 + 1``
of the ``2**53`` grid points, so ``P(u <= r) = r + 2**-53``; the rows' dyadic entries
(``1/2``, ``1/4``, ``3/4``) are exact.
"""

from __future__ import annotations

from fractions import Fraction as F
from pathlib import Path

import pytest

import exactspec
from exactspec.core.dist import Dist
from exactspec.core.errors import InvalidInput
from exactspec.rounding import split_bias

FILE = Path(__file__).resolve().parent.parent / "examples" / "engines" / "triton_kernels.py"

# (a), (b): a p = 0 < q token (3) and a q = 0 < p token (2)
P, Q = Dist.parse("1/2,1/3,1/6,0"), Dist.parse("1/4,1/4,0,1/2")
# (c): tokens 2 and 3 are the padding of the vocabulary, the last tile of BLOCK = 2
P_PADDED, Q_PADDED = Dist.parse("1/2,1/2,0,0"), Dist.parse("1/4,3/4,0,0")
EPS = F(1, 2 ** 53)                       # P(u = 0) for a float64 uniform
THIRD, SIXTH = F(11184811, 2 ** 25), F(11184811, 2 ** 26)     # fl(1/3), fl(1/6)


def _spec(name: str) -> str:
    return f"{FILE}:{name}"


def _tv(law: dict, p: Dist) -> F:
    return sum(abs(F(law.get(i, 0)) - F(x)) for i, x in enumerate(p.probs)) / 2


# -- (a) the recovered token: a race over the residual, or divided by the draft row ------------
def test_race_recovery_is_lossless_exactly():
    # accepted with min(p, q) = (1/4, 1/4, 0, 0); a rejection (1/2, at token 3) recovers
    # from the residual (1/4, 1/12, 1/6, 0) / (1/2): 1/4 + 1/2 * 1/2 = 1/2, ... = p
    r = exactspec.verify(_spec("race_recovery"), P, Q)
    assert r.lossless and r.law == dict(enumerate(P.probs)) and r.acceptance == F(1, 2)


def test_race_recovery_under_float32_is_lossy_by_rounding_only():
    # float32 rows (fl(1/3), fl(1/6)): drafts 0 and 1 always accepted (ratios 2 and
    # 4 fl(1/3) >= 1); draft 3 (q = 1/2) accepted only at u = 0 (0 >= u), P = 2**-53; the
    # rejection R = (1/2)(1 - 2**-53) races over w = (1/4, fl(1/3) - 1/4, fl(1/6), 0)
    # (Sterbenz: the difference is exact), W = fl(1/3) + fl(1/6) = 1/2 + 2**-26
    w = [F(1, 4), THIRD - F(1, 4), SIXTH, F(0)]
    rejected, total = F(1, 2) * (1 - EPS), sum(w)
    law = {0: F(1, 4) + rejected * w[0] / total, 1: F(1, 4) + rejected * w[1] / total,
           2: rejected * w[2] / total, 3: F(1, 2) * EPS}
    s = split_bias(_spec("race_recovery"), P, Q, arith="float32")
    assert s.verdict == "lossy-rounding" and s.bias_exact_arith == 0
    assert s.rounded.law == law
    assert s.bias == _tv(law, P)


def test_draft_row_recovery_is_refuted_exactly():
    # the score (p - q)+ / q: token 2 (q = 0 < p) scores inf and wins every rejection
    # (1/2): the law (1/4, 1/4, 1/2, 0); TV = (1/4 + 1/12 + 1/3) / 2 = 1/3
    r = exactspec.verify(_spec("draft_row_recovery"), P, Q)
    assert not r.lossless
    assert r.law == {0: F(1, 4), 1: F(1, 4), 2: F(1, 2), 3: 0}
    assert r.bias == F(1, 3)


def test_draft_row_recovery_under_float32_is_lossy_by_logic():
    # the same, draft 3 now accepted at u = 0 (2**-53 of its 1/2): token 3 gets 2**-54,
    # token 2 the rest of the rejection, 1/2 - 2**-54: TV = (1/4 + 1/12 + 1/3 - 2**-54 +
    # 2**-54) / 2 = 1/3 still
    s = split_bias(_spec("draft_row_recovery"), P, Q, arith="float32")
    assert s.verdict == "lossy-logic"
    assert s.rounded.law == {0: F(1, 4), 1: F(1, 4), 2: F(1, 2) - EPS / 2, 3: EPS / 2}
    assert s.bias == s.bias_exact_arith == F(1, 3)


# -- (b) a padded draft slot -------------------------------------------------------------------
@pytest.mark.parametrize("name", ["padded_guarded", "padded_reference"])
def test_a_padded_slot_guarded_or_masked_leaves_the_other_request_lossless(name):
    # request 1's own draft, uniform and residual: the one-draft rule, law p, acceptance 1/2
    r = exactspec.verify(_spec(name), P, Q)
    assert r.lossless and r.law == dict(enumerate(P.probs))


def test_the_guard_and_the_reference_agree_under_float32():
    kernel = split_bias(_spec("padded_guarded"), P, Q, arith="float32")
    reference = split_bias(_spec("padded_reference"), P, Q, arith="float32")
    assert kernel.rounded.law == reference.rounded.law
    assert (kernel.bias, kernel.bias_grid_only) == (reference.bias, reference.bias_grid_only)


def test_an_unguarded_padded_slot_reads_before_the_tensor_and_is_refused(capsys):
    from exactspec.cli import main

    code = main(["verify", _spec("padded_unguarded"), "--p", "1/2,1/3,1/6,0", "--q",
                 "1/4,1/4,0,1/2"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert "tl.load out of bounds: element -1 of argument target_ptr" in err
    assert "padded_accept_kernel, triton_kernels.py:" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    with pytest.raises(InvalidInput, match="element -1 of argument target_ptr"):
        exactspec.verify(_spec("padded_unguarded"), P, Q)


# -- (c) the vocabulary in tiles, a running best across tiles ----------------------------------
@pytest.mark.parametrize("name", ["cdf_recovery", "cdf_recovery_later_tile_guarded"])
def test_the_earlier_tile_or_the_guarded_hits_are_lossless(name):
    # draft 1 (3/4) accepted with (1/2)/(3/4) = 2/3, rejected 1/4; the residual (1/4, 0, 0,
    # 0) passes u * 1/4 at lane 0 of tile 0; every later tile ties (its hits are all true):
    # strict > keeps tile 0, and the guarded hits of tile 1 (lanes past the 2 real tokens)
    # are all false: token 0, law (1/4 + 1/4, 3/4 * 2/3) = p
    r = exactspec.verify(_spec(name), P_PADDED, Q_PADDED)
    assert r.lossless and r.law == dict(enumerate(P_PADDED.probs))
    assert r.acceptance == F(3, 4)


def test_the_later_tile_wins_the_tie_and_emits_a_padded_id():
    # >= across tiles: tile 1 (tokens 2, 3: all-zero residual, the running sum already 1/4 >
    # u / 4) ties with tile 0 and wins: every rejection (1/4) emits token 2, a padded id:
    # the law (1/4, 1/2, 1/4, 0); TV = (1/4 + 0 + 1/4) / 2 = 1/4
    r = exactspec.verify(_spec("cdf_recovery_later_tile"), P_PADDED, Q_PADDED)
    assert r.law == {0: F(1, 4), 1: F(1, 2), 2: F(1, 4), 3: 0}
    assert r.bias == F(1, 4)


def test_the_tiles_under_float32():
    # the ratio fl(2/3) = r = 11184811 / 2**24 (a multiple of 2**-53): draft 1 accepted with
    # r + 2**-53, so token 1 gets (3/4)(r + 2**-53) = 1/2 + 2**-26 + 3 * 2**-55 and the
    # rejection the rest; strict: the rest to token 0, TV = 2**-26 + 3 * 2**-55 (lossy by
    # rounding only); >=: the rest to token 2, TV = (1/4 + (2**-26 + 3 * 2**-55) +
    # (1/4 - 2**-26 - 3 * 2**-55)) / 2 = 1/4
    r = F(11184811, 2 ** 24)
    one = F(3, 4) * (r + EPS)
    assert one == F(1, 2) + F(1, 2 ** 26) + F(3, 2 ** 55)
    strict = split_bias(_spec("cdf_recovery"), P_PADDED, Q_PADDED, arith="float32")
    assert strict.verdict == "lossy-rounding"
    assert strict.rounded.law == {0: 1 - one, 1: one, 2: 0, 3: 0}
    assert strict.bias == F(1, 2 ** 26) + F(3, 2 ** 55)
    guarded = split_bias(_spec("cdf_recovery_later_tile_guarded"), P_PADDED, Q_PADDED,
                         arith="float32")
    assert guarded.rounded.law == strict.rounded.law
    later = split_bias(_spec("cdf_recovery_later_tile"), P_PADDED, Q_PADDED, arith="float32")
    assert later.verdict == "lossy-logic"
    assert later.rounded.law == {0: F(1, 4), 1: one, 2: F(3, 4) - one, 3: 0}
    assert later.bias == later.bias_exact_arith == F(1, 4)


# -- (d) the race in tiles, a running maximum across tiles ---------------------------------------
def _race_law_float32():
    # the float32 law of test_race_recovery_under_float32_is_lossy_by_rounding_only
    w = [F(1, 4), THIRD - F(1, 4), SIXTH, F(0)]
    rejected, total = F(1, 2) * (1 - EPS), sum(w)
    return {0: F(1, 4) + rejected * w[0] / total, 1: F(1, 4) + rejected * w[1] / total,
            2: rejected * w[2] / total, 3: F(1, 2) * EPS}


def test_tiled_race_is_the_race_in_one_tile_exactly_and_under_float32():
    # tiles {0, 1} and {2, 3}: the first tile's maximum beats the second's with probability
    # (1/4 + 1/12) / (1/2) = 2/3, its lane by its own race: the law of the race in one tile
    r = exactspec.verify(_spec("tiled_race_recovery"), P, Q)
    assert r.lossless and r.law == dict(enumerate(P.probs)) and r.acceptance == F(1, 2)
    s = split_bias(_spec("tiled_race_recovery"), P, Q, arith="float32")
    assert s.verdict == "lossy-rounding" and s.rounded.law == _race_law_float32()


def test_tiled_race_without_the_tiles_start_sends_the_second_tile_to_the_first():
    # token 2 (lane 0 of the second tile) comes out as token 0: 1/4 + 1/2 (1/2 + 1/3) = 2/3
    r = exactspec.verify(_spec("tiled_race_recovery_no_offset"), P, Q)
    assert r.law == {0: F(2, 3), 1: F(1, 3), 2: 0, 3: 0} and r.bias == F(1, 6)
    s = split_bias(_spec("tiled_race_recovery_no_offset"), P, Q, arith="float32")
    race = _race_law_float32()
    assert s.verdict == "lossy-logic" and s.bias_exact_arith == F(1, 6)
    assert s.rounded.law == {0: race[0] + race[2], 1: race[1], 2: 0, 3: race[3]}


@pytest.mark.parametrize("seed", range(4))
def test_tiled_race_equals_one_tile_on_seeded_rows(seed):
    # three tiles (the last one padded with -inf), tiles whose residual is all zero included
    import random

    rng = random.Random(seed)
    wp = [rng.choice([0, 1, 2, 3]) for _ in range(5)]
    wq = [rng.choice([0, 1, 2, 3]) for _ in range(5)]
    wp[0] += 1
    wq[1] += 1
    p = Dist([F(w, sum(wp)) for w in wp])
    q = Dist([F(w, sum(wq)) for w in wq])
    tiled = exactspec.verify(_spec("tiled_race_recovery"), p, q)
    one = exactspec.verify(_spec("race_recovery"), p, q)
    assert tiled.lossless and tiled.law == one.law and tiled.acceptance == one.acceptance


# -- (f) a chain in one program, the final token by the inverse CDF of one tile ---------------
def _by_both_routes(spec: str, p: Dist, q: Dist, m: int, **kw) -> tuple[dict, dict]:
    """``verify --tokens m`` of ``spec`` by the factored route and by the path route (the
    factored route switched off: the reference)."""
    from exactspec.core.signals import CannotProceed
    from exactspec.sequences import factored
    from exactspec.sequences.context import ContextPair
    from exactspec.sequences.torch_rules import pytorch_whole_call
    from exactspec.sequences.user import user_report
    from exactspec.torch_layer.rule import load_pytorch_rule

    def switched_off(*args, **kwargs):
        raise CannotProceed("switched off by the test")

    whole = pytorch_whole_call(load_pytorch_rule(spec), m)
    pair = ContextPair.context_free(p, q)
    fast = user_report({"m": m}, whole, pair=pair, m=m, **kw)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(factored, "factored_report", switched_off)
        slow = user_report({"m": m}, whole, pair=pair, m=m, max_seconds=None, **kw)
    return fast, slow


CDF_PAIRS = [(P, Q), (Dist.parse("1/7,2/7,4/7"), Dist.parse("1/3,1/3,1/3")),
             (Dist.parse("1/3,1/6,1/5,3/10,0"), Dist.parse("1/7,2/7,1/7,1/7,2/7"))]


@pytest.mark.parametrize("name", ["cdf_chain_tokens", "cdf_chain_tokens_tiled",
                                  "cdf_chain_tokens_from_target"])
@pytest.mark.parametrize("pair", range(len(CDF_PAIRS)))
@pytest.mark.parametrize("m", [2, 3])
def test_the_inverse_cdf_is_its_law_on_the_factored_route(name, pair, m):
    # argmax(cumsum(w) > u * sum(w)): the first lane whose running sum passes the uniform, a
    # lazy count of the uniform with the path enumeration's law, not one path per token; in
    # tiles of 2 lanes, each tile's if on the uniform run both ways, the token a count again
    p, q = CDF_PAIRS[pair]
    fast, slow = _by_both_routes(_spec(name), p, q, m)
    assert fast["route"] == "factored" and "route" not in slow
    assert fast["factored"]["engine_paths"] == m                 # accepted 0..m-1 drafts
    for key in ("verdict", "law", "call_law", "tokens_per_call", "bias"):
        assert fast[key] == slow[key], key
    a = sum(min(x, y) for x, y in zip(p.probs, q.probs))
    assert F(fast["tokens_per_call"]) == sum(a ** j for j in range(m))
    assert fast["verdict"] == ("lossy-logic" if name.endswith("from_target") else "lossless")


def test_the_inverse_cdf_from_the_target_after_a_rejection_by_hand():
    # the first token: min(p, q) accepted, else p itself: P(1) = 1/4 + 1/2 * 1/3 = 5/12, and
    # the first token's TV sum |min(p, q) - p / 2| / 2 = (1/12 + 1/12) / 2 = 1/12
    fast, _ = _by_both_routes(_spec("cdf_chain_tokens_from_target"), P, Q, 2)
    first = {}
    for seq, pr in fast["law"].items():
        first[seq.split(",")[0]] = first.get(seq.split(",")[0], 0) + F(pr)
    assert first["1"] == F(5, 12) and _tv({int(k): v for k, v in first.items()}, P) == F(1, 12)


@pytest.mark.parametrize("name", ["cdf_chain_tokens", "cdf_chain_tokens_tiled"])
def test_the_inverse_cdf_under_float32_on_both_routes(name):
    # the float run, exact arithmetic and the grid by the factored route, as the path route
    # gives them: lossy by the uniforms' grid only (the running sum of the rows, computed in
    # the format, passes u * sum(w) at the grid points the exact one does)
    fast, slow = _by_both_routes(_spec(name), P, Q, 3, arith="float32",
                                 sum_order="sequential")
    assert fast["route"] == "factored"
    for key in ("verdict", "law", "tokens_per_call", "bias", "bias_exact_arith",
                "bias_grid_only"):
        assert fast[key] == slow[key], key
    assert fast["bias_exact_arith"] == "0"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_inverse_cdf_in_tiles_equals_one_tile_on_seeded_rows(seed):
    # seven tokens in four tiles of 2 (the last one padded), tiles whose residual is all zero
    # included: the tile-by-tile search by the factored route in one engine path per number
    # of accepted drafts, the call's law of the one-tile kernel
    import random

    rng = random.Random(seed)
    wp = [rng.choice([0, 1, 2, 3]) for _ in range(7)]
    wq = [rng.choice([0, 0, 1, 2, 3]) for _ in range(7)]
    wp[0] += 1
    wq[1] += 1
    p = Dist([F(w, sum(wp)) for w in wp])
    q = Dist([F(w, sum(wq)) for w in wq])
    tiled, slow = _by_both_routes(_spec("cdf_chain_tokens_tiled"), p, q, 3)
    one, _ = _by_both_routes(_spec("cdf_chain_tokens"), p, q, 3)
    assert tiled["route"] == one["route"] == "factored" and tiled["verdict"] == "lossless"
    assert tiled["factored"]["engine_paths"] == 3
    assert tiled["call_law"] == one["call_law"] == slow["call_law"]


def test_the_inverse_cdf_at_300_tokens_is_the_race_kernels_call_law():
    # 300 tokens in one tile of 512 lanes: the row of running sums compared with u * total at
    # once (lazy comparisons made for the whole row); the call's law, a sum of rank-one terms,
    # that of the chain whose recovered token is a race (gallery (e): the same rule by another
    # algorithm), term by term; tokens per call 1 + a + a^2 exactly
    import random

    from exactspec.sequences.context import ContextPair
    from exactspec.sequences.torch_rules import pytorch_whole_call
    from exactspec.sequences.user import user_report
    from exactspec.torch_layer.factored import factored_call_law
    from exactspec.torch_layer.rule import load_pytorch_rule

    rng = random.Random(7)
    wp = [rng.randint(0, 9) for _ in range(300)]
    wq = [rng.randint(0, 9) for _ in range(300)]
    wp[0] += 1
    wq[0] += 1
    p = Dist([F(w, sum(wp)) for w in wp])
    q = Dist([F(w, sum(wq)) for w in wq])
    laws = [factored_call_law(load_pytorch_rule(_spec(name)), p, q, 2)
            for name in ("cdf_chain_tokens", "chain_tokens_one_tile")]
    assert sorted(laws[0].terms) == sorted(laws[1].terms) and laws[0].paths == 3
    report = user_report({"m": 3}, pytorch_whole_call(load_pytorch_rule(
        _spec("cdf_chain_tokens")), 3), pair=ContextPair.context_free(p, q), m=3)
    assert report["route"] == "factored" and report["verdict"] == "lossless"
    a = sum(min(x, y) for x, y in zip(p.probs, q.probs))
    assert F(report["tokens_per_call"]) == 1 + a + a * a


UNNORMALISED = '''
import torch
import triton
import triton.language as tl


@triton.jit
def doubled_cdf_kernel(out_ptr, target_ptr, uniform_ptr, vocab, BLOCK: tl.constexpr):
    """The inverse CDF of 2 p, tile by tile: its running sums reach 1 inside a tile."""
    target_u = tl.load(uniform_ptr) * 2.0
    running = 0.0
    token = vocab - 1
    found = 0
    for v in range(0, vocab, BLOCK):
        if found == 0:
            offs = v + tl.arange(0, BLOCK)
            weight = 2.0 * tl.load(target_ptr + offs, mask=offs < vocab, other=0.0)
            hit = (running + tl.cumsum(weight, axis=0)) > target_u
            if tl.max(hit, axis=0):
                token = v + tl.argmax(hit.to(tl.int32), axis=0)
                found = 1
            running += tl.sum(weight)
    tl.store(out_ptr, token)


def tokens(p, q):
    out = torch.full((1,), -1, dtype=torch.int32)
    doubled_cdf_kernel[(1,)](out, p[0].to(torch.float32), torch.rand(1), p.shape[1], BLOCK=2)
    return [out[0], torch.multinomial(p[1], 1)[0]]
'''


def test_a_running_sum_of_exactly_one_inside_a_tile_is_not_a_lane_that_always_holds(tmp_path):
    # weights 2 p: the first tile's running sums are 1/2 and 1, against u * 2; the tile holds
    # a lane that passes only where u < 1/2 (a threshold equal to 1 is a number, not True)
    rule = tmp_path / "doubled.py"
    rule.write_text(UNNORMALISED)
    p = Dist.parse("1/4,1/4,1/4,1/4")
    fast, slow = _by_both_routes(f"{rule}:tokens", p, p, 2)
    assert fast["route"] == "factored" and fast["verdict"] == slow["verdict"] == "lossless"
    assert fast["law"] == slow["law"]
