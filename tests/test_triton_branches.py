"""A kernel's ``if`` on race maxima: both branches run and their values selected.

``exactspec.triton_layer.branches`` rewrites the ``if`` statements of a ``@triton.jit``
function so that a condition comparing the maxima of two races over disjoint parts of one
noise vector (a running maximum across tiles) runs both branches and selects each name's
value, without a branch point.  Here:

- the rewriting keeps Python's meaning of every ``if`` whose condition is a plain value
  (names bound in one branch only, ``elif`` chains, loops with ``break``, ``return`` inside an
  ``if``, ``del``, augmented assignment), on many inputs against the function as written;
- the tiled race of the gallery ((d), and (e) for several positions in one launch, one noise
  row shared by the positions) gives the law of the path enumeration, or of the same kernel in
  one tile, and its closed form, in a number of engine paths that does not grow with the tiles;
- what cannot be selected is decided or refused, never guessed: a branch that stores, a value
  that is not a race's maximum or winner, race maxima over a noise row that several races
  share compared on a path route (refused: the maxima are then not independent of the other
  races).
"""

from __future__ import annotations

import random
import textwrap
from fractions import Fraction as F
from pathlib import Path

import pytest

import exactspec
from exactspec.core.dist import Dist
from exactspec.core.errors import ExactspecError, Undecided
from exactspec.sequences.context import ContextPair
from exactspec.sequences.torch_rules import pytorch_whole_call
from exactspec.sequences.user import user_report
from exactspec.torch_layer.rule import load_pytorch_rule
from exactspec.triton_layer.branches import rewritten

GALLERY = Path(__file__).resolve().parent.parent / "examples" / "engines" / "triton_kernels.py"

PLAIN = '''
def f(x, y):
    total = 0
    if x > 2:
        only_then = x * 2
        total += only_then
    elif x == 2:
        total -= 1
        if y:
            total *= 10
    else:
        del total
        total = -x
    for i in range(4):
        if i == y:
            break
        if i % 2:
            total += i
        else:
            continue
    if y > 5:
        return total, "early"
    try:
        return total, only_then
    except NameError:
        return total, None
'''


def _original(source: str, name: str):
    namespace: dict = {}
    exec(compile(source, "<plain>", "exec"), namespace)
    return namespace[name]


def test_rewriting_keeps_the_meaning_of_plain_ifs():
    source = textwrap.dedent(PLAIN)
    written, rewritten_f = _original(source, "f"), rewritten(source, "f", {}, "<plain>", 0)
    for x in range(-1, 6):
        for y in range(0, 8):
            assert rewritten_f(x, y) == written(x, y), (x, y)


def test_a_name_bound_in_neither_branch_stays_unbound():
    source = textwrap.dedent('''
        def g(c):
            if c:
                late = 1
            return late
    ''')
    g = rewritten(source, "g", {}, "<plain>", 0)
    assert g(True) == 1
    with pytest.raises(UnboundLocalError):
        g(False)


def _spec(name: str) -> str:
    return f"{GALLERY}:{name}"


def _rows(seed: int, n: int):
    rng = random.Random(seed)
    wp = [rng.choice([0, 1, 2, 3, 5]) for _ in range(n)]
    wq = [rng.choice([0, 1, 2, 3, 5]) for _ in range(n)]
    wp[0] += 1
    wq[-1] += 1
    return Dist([F(w, sum(wp)) for w in wp]), Dist([F(w, sum(wq)) for w in wq])


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", ["tiled_race_recovery", "tiled_race_recovery_no_offset"])
def test_a_running_maximum_over_tiles_is_one_path_with_the_path_enumerations_law(seed, name):
    # 7 tokens in tiles of 2: four tiles, three comparisons of race maxima; the path
    # enumeration branches on each (and on every tile's winner), the tensor axis does not
    p, q = _rows(seed, 7)
    fast = exactspec.verify(_spec(name), p, q)
    slow = exactspec.verify(_spec(name), p, q, keep_paths=True)
    assert fast.law == slow.law and fast.acceptance == slow.acceptance
    assert fast.paths == 2 < slow.paths
    if name == "tiled_race_recovery":
        assert fast.lossless


def _call_law(spec: str, p: Dist, q: Dist, m: int) -> dict:
    rule = load_pytorch_rule(spec)
    pair = ContextPair.context_free(p, q)
    return user_report({"m": m}, pytorch_whole_call(rule, m), pair=pair, m=m)


def _closed_form_call_law(p: Dist, q: Dist, k: int, recovered: list) -> dict:
    """The call law of ``k`` drafts accepted while ``u <= p / q``, the first rejection's
    recovered token drawn from ``recovered``, the bonus token from ``p``."""
    accept = [min(a, b) for a, b in zip(p.probs, q.probs)]
    reject = 1 - sum(accept)
    law: dict = {}

    def walk(prefix, weight):
        if len(prefix) == k:
            for t, w in enumerate(p.probs):
                if w:
                    law[prefix + (t,)] = weight * w
            return
        for t, r in enumerate(recovered):
            if r and reject:
                law[prefix + (t,)] = weight * reject * r
        for t, a in enumerate(accept):
            if a:
                walk(prefix + (t,), weight * a)

    walk((), F(1))
    return {",".join(map(str, key)): str(v) for key, v in law.items()}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("m", [2, 3])
def test_several_positions_on_one_noise_row_by_the_factored_route(seed, m):
    # 5 tokens in tiles of 2 (three tiles), every position racing the request's one noise row;
    # the same launch in one tile (no maximum compared) and the closed form agree
    p, q = _rows(seed, 5)
    tiled = _call_law(_spec("chain_tokens"), p, q, m)
    one = _call_law(_spec("chain_tokens_one_tile"), p, q, m)
    assert tiled["route"] == "factored" and tiled["verdict"] == "lossless"
    assert tiled["call_law"] == one["call_law"] == one["call_law"]
    residual = [max(a - b, F(0)) for a, b in zip(p.probs, q.probs)]
    r = [w / sum(residual) for w in residual] if sum(residual) else residual
    want = _closed_form_call_law(p, q, m - 1, r)
    assert {k: v for k, v in tiled["call_law"].items() if F(v)} == want


def test_the_tiles_start_forgotten_moves_the_recovered_token_by_the_closed_form():
    # tiles of 2: the residual's mass on token t goes to token t mod 2
    p, q = _rows(1, 5)
    report = _call_law(_spec("chain_tokens_no_offset"), p, q, 3)
    residual = [max(a - b, F(0)) for a, b in zip(p.probs, q.probs)]
    moved = [F(0)] * 5
    for t, w in enumerate(residual):
        moved[t % 2] += w / sum(residual)
    assert report["route"] == "factored" and report["verdict"] == "lossy-logic"
    assert {k: v for k, v in report["call_law"].items() if F(v)} == \
        _closed_form_call_law(p, q, 2, moved)


KERNELS = '''
import torch
import triton
import triton.language as tl


@triton.jit
def tiles_kernel(out_ptr, weights_ptr, inv_noise_ptr, vocab, BLOCK: tl.constexpr,
                 STORE_IN_BRANCH: tl.constexpr, KEEP_TILE: tl.constexpr):
    pos = tl.program_id(0)
    max_val = tl.full((), float("-inf"), tl.float32)
    recovered_id = 0
    best_tile = 0
    for v in range(0, vocab, BLOCK):
        offs = v + tl.arange(0, BLOCK)
        mask = offs < vocab
        w = tl.load(weights_ptr + pos * vocab + offs, mask=mask, other=0.0)
        e = tl.load(inv_noise_ptr + offs, mask=mask, other=0.0)
        score = tl.where(mask, w * e, float("-inf"))
        local_max, local_id = tl.max(score, axis=0, return_indices=True)
        if local_max > max_val:
            max_val = local_max
            recovered_id = v + local_id
            if KEEP_TILE:
                best_tile = v
            if STORE_IN_BRANCH:
                tl.store(out_ptr + pos, v + local_id)
    if not STORE_IN_BRANCH:
        tl.store(out_ptr + pos, best_tile if KEEP_TILE else recovered_id)


def _launch(p, q, store, keep_tile, rows=1):
    n = p.shape[0]
    weights = torch.stack([p, q])[:rows].to(torch.float32).contiguous()
    inv_noise = torch.empty(n, dtype=torch.float32).exponential_().reciprocal()
    out = torch.zeros(rows, dtype=torch.int32)
    tiles_kernel[(rows,)](out, weights, inv_noise, n, BLOCK=2, STORE_IN_BRANCH=store,
                          KEEP_TILE=keep_tile)
    return out


def stored_in_branch(p, q):
    return _launch(p, q, True, False)[0]


def best_tile(p, q):
    return _launch(p, q, False, True)[0]


def shared_noise(p, q):
    torch.multinomial(q, 1)                       # a draft, never used
    out = _launch(p, q, False, False, rows=2)
    return out[0]
'''


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    path = tmp_path_factory.mktemp("kernels") / "tiles.py"
    path.write_text(textwrap.dedent(KERNELS))
    return path


@pytest.mark.parametrize("name", ["stored_in_branch", "best_tile"])
def test_what_cannot_be_selected_is_decided_on_the_paths(kernels, name):
    # a store in the branch, and a tile's start kept (a plain number, not a race's winner):
    # the tensor axis cannot select them, the path enumeration decides every comparison
    p, q = _rows(2, 5)
    fast = exactspec.verify(f"{kernels}:{name}", p, q)
    slow = exactspec.verify(f"{kernels}:{name}", p, q, keep_paths=True)
    assert fast.law == slow.law and fast.paths == slow.paths
    if name == "stored_in_branch":                      # the store holds the winner
        total = sum(p.probs)
        assert {t: w for t, w in fast.law.items() if w} == \
            {t: w / total for t, w in enumerate(p.probs) if w}
    else:                                               # the tile of the winner: 0, 2, 4
        tiles = {v: sum(p.probs[v:v + 2]) for v in (0, 2, 4)}
        assert {t: w for t, w in fast.law.items() if w} == \
            {v: w for v, w in tiles.items() if w}


def test_race_maxima_over_a_shared_noise_row_are_lazily_selected_or_refused(kernels):
    # two rows race the same noise; the first row's winner has its own law: selected without
    # deciding on the tensor axis, refused on the path route (deciding the first row's
    # comparisons would condition the second row's races, which the coin does not track)
    p, q = _rows(3, 5)
    fast = exactspec.verify(f"{kernels}:shared_noise", p, q)
    assert {t: w for t, w in fast.law.items() if w} == \
        {t: w for t, w in enumerate(p.probs) if w}
    with pytest.raises(Undecided, match="several races ran over the same noise"):
        exactspec.verify(f"{kernels}:shared_noise", p, q, keep_paths=True)


def test_a_kernel_with_global_names_is_not_rewritten():
    source = textwrap.dedent('''
        def h(c):
            global SEEN
            if c:
                SEEN = c
            return c
    ''')
    assert rewritten(source, "h", {}, "<plain>", 0) is None


STATEFUL = '''
import torch
import triton
import triton.language as tl

RECORDS = []


@triton.jit
def records_kernel(out_ptr, w_ptr, inv_ptr, vocab, BLOCK: tl.constexpr):
    max_val = tl.full((), float("-inf"), tl.float32)
    rid = 0
    for v in range(0, vocab, BLOCK):
        offs = v + tl.arange(0, BLOCK)
        mask = offs < vocab
        w = tl.load(w_ptr + offs, mask=mask, other=0.0)
        e = tl.load(inv_ptr + offs, mask=mask, other=0.0)
        local_max, local_id = tl.max(tl.where(mask, w * e, float("-inf")), axis=0,
                                     return_indices=True)
        if local_max > max_val:
            max_val = local_max
            rid = v + local_id
            RECORDS.append(v)
    tl.store(out_ptr, rid)


def records(p, q):
    torch.multinomial(q, 1)
    inv = torch.empty(p.shape[0], dtype=torch.float32).exponential_().reciprocal()
    out = torch.zeros(1, dtype=torch.int32)
    records_kernel[(1,)](out, p.to(torch.float32), inv, p.shape[0], BLOCK=2)
    n = len(RECORDS) - 1
    RECORDS.clear()                      # the same state after every call
    return torch.tensor(n)
'''


def test_a_branch_that_calls_outside_the_triton_language_is_never_run_both_ways(tmp_path):
    # the branch appends to a list: running both branches would count every tile as a
    # record (token 1 always); the comparison is decided on the paths instead, where the
    # watcher sees the list change while the rule is enumerated and refuses it
    path = tmp_path / "records.py"
    path.write_text(textwrap.dedent(STATEFUL))
    uniform = Dist.parse("1/4,1/4,1/4,1/4")
    with pytest.raises(ExactspecError, match="hidden state"):
        exactspec.verify(f"{path}:records", uniform, uniform)
