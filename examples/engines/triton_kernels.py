"""Bug classes of engines' Triton verification kernels, each beside a correct version.

Our own kernels in the idiom of vLLM's second engine (``vllm/v1/sample/rejection_sampler.py``:
``rejection_random_sample_kernel`` accepts while ``p / q >= u`` with ``u`` drawn in
``float64``, ``sample_recovered_tokens_kernel`` picks the recovered token over the vocabulary in
tiles of ``BLOCK_SIZE``) and of SGLang's chain sampler
(``sglang/kernels/ops/speculative/reject_sampling.py``: the recovered token by the inverse of the
residual's running sum, tile by tile), launched from PyTorch rules ``f(p, q)`` for
``exactspec verify`` (one draft position, batch of one request unless said).  Under exactspec
``triton`` is its Triton layer (:mod:`exactspec.triton_layer`): every program runs over exact
tensors.  Divisions are ``tl.div_rn`` (the correctly rounded quotient) so that ``--arith
float32`` models them.  The rows here are the example's
``--p 1/2,1/3,1/6,0 --q 1/4,1/4,0,1/2`` (a ``p = 0 < q`` token and a ``q = 0 < p`` token) unless
said; ``tests/test_triton_gallery.py`` derives each TV by hand.

(a) The recovered token as a race over the residual, ``argmax(max(p - q, 0) / E)``:
``race_recovery`` is right (lossless); ``draft_row_recovery`` divides by ``q``, the draft row,
where the race takes ``q``, vLLM's name for its exponential noise (both are called ``q`` in
``sample_recovered_tokens``): a token with ``q = 0 < p`` scores ``inf`` and wins every rejection
(TV ``1/3``, exact and under ``float32``).  The score's division by a noise value that can be
0 is the hazard behind vLLM's ``inv_q = q.reciprocal()`` and its masks (vLLM PR #34974, which
moved the kernel to ``prob * inv_q`` in tiles of 8192, and PR #21876, an argmax over ``nan``
scores returning a padded lane).

(b) A padded draft slot, id ``-1``: a batch of two requests, the first without a draft this
step (its slot ``-1``, as vLLM pads ``draft_token_ids``: "-1 is used for padded draft token ids
that should be rejected", ``rejection_random_sample_kernel``).  ``padded_reference`` is the
PyTorch reference: it reads ``p[rows, draft]`` by advanced indexing, where ``-1`` wraps to the
last column, and masks the slot with ``draft >= 0``.  ``padded_guarded`` is the kernel that
tests ``draft < 0`` first (lossless for the second request, the one returned);
``padded_unguarded`` reads ``p_ptr + row * V + draft`` unguarded, one element before its row:
for the first request, before the tensor, which exactspec refuses in one line naming the
kernel's load (on the GPU it reads whatever lies there).

(c) The recovered token by the inverse of the residual's running sum, the vocabulary in tiles of
``BLOCK`` lanes and a running best across tiles (``local_best, local_id = tl.max(hit,
return_indices=True)``, the first lane whose running sum passes ``u * total``): the rows are a
vocabulary padded to a multiple of ``BLOCK`` (``--p 1/2,1/2,0,0 --q 1/4,3/4,0,0``: tokens 2 and
3, the last tile, are padding, probability 0 on both sides, as an engine pads its logits to
the model's padded vocabulary).  Every tile from the first hit on holds a hit (the running sum
only grows), so the running best ties from there: ``cdf_recovery`` keeps the earlier tile
(strict ``>`` across tiles, as ``tl.max`` keeps the smallest index within one) and is lossless;
``cdf_recovery_later_tile`` takes the later (``>=``): the all-zero last tile wins every
rejection and emits token 2, an id past the real vocabulary (TV ``1/4``, exact and under
``float32``), the out-of-vocabulary id of vLLM's GHSA-8wr5-jm2h-8r4f (PR #44744: a tail tile whose
valid entries are all 0 won the tie; fixed by ``-inf`` on the lanes past the vocabulary and a
clamp) and of vLLM issue #13175 (padded vocabularies);  ``cdf_recovery_later_tile_guarded``
masks the hits to ``VOCAB`` lanes (the real vocabulary) and clamps the id, which makes ``>=``
harmless again (lossless).

(d) The race of (a) over the vocabulary in tiles of ``BLOCK`` lanes with a running maximum
across tiles, as vLLM's ``sample_recovered_tokens_kernel`` runs it since PR #34974 (``score =
prob * inv_q`` per tile, ``local_max, local_id = tl.max(score, return_indices=True)``, then
``if local_max > max_val``): ``tiled_race_recovery`` is lossless, the same law as the race in
one tile (a tile's maximum is ``W_tile / E`` in law, independent of which lane won it, so the
comparison of two tiles is a race of their residual masses); ``tiled_race_recovery_no_offset``
keeps the lane's index within its tile and forgets the tile's start (``recovered = local_id``
for ``v + local_id``): a recovered token of the second tile comes out as the first tile's
token (TV ``1/6`` with ``BLOCK = 2``: token 2's residual mass goes to token 0).

(e) Several draft positions in one launch, as vLLM launches its kernels for a request: (d)'s
``tiled_race_kernel`` runs one program per position, each racing its own residual over the
request's one noise row (vLLM's ``inv_q`` is ``[batch_size, vocab_size]``, shared by the
request's positions) in tiles with a running maximum, and ``chain_accept_kernel`` walks the
positions in a Python loop with ``if`` statements on loaded values, as
``rejection_random_sample_kernel`` does: ``chain_tokens`` is lossless (``verify --tokens M``);
``chain_tokens_one_tile`` is the same in one tile, and ``chain_tokens_no_offset`` forgets the tiles' start as ``tiled_race_recovery_no_offset`` does
(lossy: on the example's rows the first token's law is (d)'s, TV ``1/6``).

(f) A chain in the idiom of SGLang's ``speculative_sampling_classic_kernel``: one program walks
the positions, accepting while ``coin * q < p`` (a product, no division), and draws the final
token by the inverse of a running sum, ``argmax(cumsum(w) > u * sum(w))`` over one tile of
``BLOCK >= |V|`` lanes, ``w`` the residual ``max(p - q, 0)`` of the rejected position or the
next target row after every draft was accepted: ``cdf_chain_tokens`` is lossless (``verify
--tokens M``, tokens per call ``1 + a + ... + a^(M-1)`` with ``a = sum(min(p, q))``);
``cdf_chain_tokens_tiled`` is the same over tiles of 2 lanes, searched as SGLang's kernel
searches them (``if found == 0``, then ``if`` some lane of the tile passes the uniform);
``cdf_chain_tokens_from_target`` draws the token after a rejection from ``p`` itself, the
resampling bug of a rule that forgets the residual (lossy).

The draft is a tensor axis through these kernels (they decide with ``tl.where``, not a
Python ``if`` on a loaded value): ``race_recovery`` on the rows of ``benchmarks/torch_layer.py``
at 152,064 tokens (one tile of 262,144 lanes) is proved lossless in 2 runs, about 13 s of CPU.

Run with exactspec::

    exactspec verify examples/engines/triton_kernels.py:draft_row_recovery --p 1/2,1/3,1/6,0 --q 1/4,1/4,0,1/2
    exactspec verify examples/engines/triton_kernels.py:cdf_recovery_later_tile --p 1/2,1/2,0,0 --q 1/4,3/4,0,0 --arith float32
"""

import torch
import triton
import triton.language as tl


@triton.jit
def accept_kernel(out_ptr, draft_ptr, target_ptr, draft_probs_ptr, uniform_ptr,
                  recovered_ptr):
    """``draft`` where ``q > 0`` and ``p / q >= u`` (vLLM's test), else the recovered token."""
    draft = tl.load(draft_ptr)
    p = tl.load(target_ptr + draft)
    q = tl.load(draft_probs_ptr + draft)
    accepted = (q > 0) & (tl.div_rn(p, tl.maximum(q, 1e-30)) >= tl.load(uniform_ptr))
    tl.store(out_ptr, tl.where(accepted, draft, tl.load(recovered_ptr)))


@triton.jit
def race_recovery_kernel(recovered_ptr, target_ptr, draft_probs_ptr, noise_ptr, vocab,
                         BLOCK: tl.constexpr, DIVIDE_BY_DRAFT: tl.constexpr):
    """The residual ``max(p - q, 0)`` divided by the noise, or by the draft row (the bug)."""
    offs = tl.arange(0, BLOCK)
    mask = offs < vocab
    p = tl.load(target_ptr + offs, mask=mask, other=0.0)
    q = tl.load(draft_probs_ptr + offs, mask=mask, other=0.0)
    divisor = q if DIVIDE_BY_DRAFT else tl.load(noise_ptr + offs, mask=mask, other=1.0)
    score = tl.where(mask, tl.div_rn(tl.maximum(p - q, 0.0), divisor), float("-inf"))
    tl.store(recovered_ptr, tl.argmax(score, axis=0))


def _one_position(p, q, launch_recovery):
    """Draw the draft and the uniform as vLLM does (float32 rows, a float64 uniform), launch
    the recovery and the acceptance; the emitted token."""
    p32, q32 = p.to(torch.float32), q.to(torch.float32)
    draft = torch.multinomial(q, 1).to(torch.int32)
    uniform = torch.rand(1, dtype=torch.float64)
    recovered = torch.empty(1, dtype=torch.int32)
    launch_recovery(recovered, p32, q32)
    out = torch.empty(1, dtype=torch.int32)
    accept_kernel[(1,)](out, draft, p32, q32, uniform, recovered)
    return out[0]


def _race(divide_by_draft):
    def launch(recovered, p32, q32):
        noise = torch.empty_like(p32).exponential_()
        vocab = p32.shape[0]
        race_recovery_kernel[(1,)](recovered, p32, q32, noise, vocab,
                                   BLOCK=triton.next_power_of_2(vocab),
                                   DIVIDE_BY_DRAFT=divide_by_draft)
    return launch


def race_recovery(p, q):
    """(a) The recovered token as an exponential race over the residual (lossless)."""
    return _one_position(p, q, _race(False))


def draft_row_recovery(p, q):
    """(a) The residual divided by the draft row ``q`` instead of the noise: a token of
    ``q = 0 < p`` scores ``inf`` and is emitted at every rejection (lossy)."""
    return _one_position(p, q, _race(True))


# -- (b) a padded draft slot -----------------------------------------------------------------
@triton.jit
def padded_accept_kernel(out_ptr, draft_ptr, target_ptr, draft_probs_ptr, uniform_ptr,
                         recovered_ptr, vocab, GUARD: tl.constexpr):
    """One program per request; a slot ``-1`` is rejected when ``GUARD`` (vLLM's test)."""
    row = tl.program_id(0)
    draft = tl.load(draft_ptr + row)
    if GUARD and draft < 0:
        accepted = False
    else:
        p = tl.load(target_ptr + row * vocab + draft)
        q = tl.load(draft_probs_ptr + row * vocab + draft)
        accepted = (q > 0) & (tl.div_rn(p, tl.maximum(q, 1e-30)) >= tl.load(uniform_ptr + row))
    tl.store(out_ptr + row, tl.where(accepted, draft, tl.load(recovered_ptr + row)))


def _padded_batch(p, q):
    """Rows ``[2, V]``: request 0 has no draft (slot ``-1``, no draft row), request 1 ``x ~ q``;
    the recovered token of each drawn from its residual by ``torch.multinomial``."""
    target = torch.stack([p, p]).to(torch.float32)
    draft_probs = torch.stack([torch.zeros_like(q), q]).to(torch.float32)
    draft = torch.cat([torch.tensor([-1]), torch.multinomial(q, 1)]).to(torch.int32)
    uniform = torch.rand(2, dtype=torch.float64)
    recovered = torch.cat([torch.multinomial(p, 1),
                           torch.multinomial(torch.clamp(p - q, min=0), 1)]).to(torch.int32)
    return target, draft_probs, draft, uniform, recovered


def _padded_kernel(p, q, guard):
    target, draft_probs, draft, uniform, recovered = _padded_batch(p, q)
    out = torch.empty(2, dtype=torch.int32)
    padded_accept_kernel[(2,)](out, draft, target, draft_probs, uniform, recovered,
                               p.shape[0], GUARD=guard)
    return out[1]


def padded_guarded(p, q):
    """(b) The kernel rejects the padded slot before it reads anything (lossless)."""
    return _padded_kernel(p, q, True)


def padded_unguarded(p, q):
    """(b) The kernel reads the padded slot's probabilities at offset ``-1``: before the
    tensor for the first request (refused)."""
    return _padded_kernel(p, q, False)


def padded_reference(p, q):
    """(b) The PyTorch reference: ``-1`` read at the last column (negative indexing), then
    masked by ``draft >= 0`` (lossless)."""
    target, draft_probs, draft, uniform, recovered = _padded_batch(p, q)
    rows = torch.arange(2)
    ratio = target[rows, draft] / torch.clamp(draft_probs[rows, draft], min=1e-30)
    accepted = (draft >= 0) & (draft_probs[rows, draft] > 0) & (ratio >= uniform)
    return torch.where(accepted, draft, recovered)[1]


# -- (c) the vocabulary in tiles ---------------------------------------------------------------
@triton.jit
def cdf_recovery_kernel(recovered_ptr, target_ptr, draft_probs_ptr, uniform_ptr, padded,
                        VOCAB: tl.constexpr, BLOCK: tl.constexpr, LATER_TILE_WINS: tl.constexpr,
                        GUARD: tl.constexpr):
    """The first lane whose running sum of ``max(p - q, 0)`` passes ``u * total``, tile by
    tile; ``padded`` lanes are loaded, the real vocabulary is ``VOCAB``."""
    total = 0.0
    for v in range(0, padded, BLOCK):
        offs = v + tl.arange(0, BLOCK)
        mask = offs < padded
        p = tl.load(target_ptr + offs, mask=mask, other=0.0)
        q = tl.load(draft_probs_ptr + offs, mask=mask, other=0.0)
        total += tl.sum(tl.maximum(p - q, 0.0))
    target_u = tl.load(uniform_ptr) * total
    best = 0
    recovered_id = 0
    running = 0.0
    for v in range(0, padded, BLOCK):
        offs = v + tl.arange(0, BLOCK)
        mask = offs < padded
        p = tl.load(target_ptr + offs, mask=mask, other=0.0)
        q = tl.load(draft_probs_ptr + offs, mask=mask, other=0.0)
        residual = tl.maximum(p - q, 0.0)
        hit = (running + tl.cumsum(residual, axis=0)) > target_u
        if GUARD:
            hit = hit & (offs < VOCAB)
        local_best, local_id = tl.max(hit.to(tl.int32), axis=0, return_indices=True)
        if LATER_TILE_WINS:
            if local_best >= best:
                best = local_best
                recovered_id = v + local_id
        elif local_best > best:
            best = local_best
            recovered_id = v + local_id
        running += tl.sum(residual)
    if GUARD:
        recovered_id = tl.minimum(recovered_id, VOCAB - 1)
    tl.store(recovered_ptr, recovered_id)


def _cdf(later_tile_wins, guard):
    def launch(recovered, p32, q32):
        uniform = torch.rand(1)
        padded = p32.shape[0]
        vocab = int(((p32 + q32) > 0).sum()) if guard else padded  # the tokens either row has
        cdf_recovery_kernel[(1,)](recovered, p32, q32, uniform, padded, VOCAB=vocab, BLOCK=2,
                                  LATER_TILE_WINS=later_tile_wins, GUARD=guard)
    return launch


def cdf_recovery(p, q):
    """(c) Strict ``>`` across tiles: the earliest tile's hit (lossless)."""
    return _one_position(p, q, _cdf(False, False))


def cdf_recovery_later_tile(p, q):
    """(c) ``>=`` across tiles: the last tile holding a hit wins the tie (lossy)."""
    return _one_position(p, q, _cdf(True, False))


def cdf_recovery_later_tile_guarded(p, q):
    """(c) ``>=`` across tiles with the hits masked to the real vocabulary and the id clamped
    (lossless)."""
    return _one_position(p, q, _cdf(True, True))


# -- (d) the race in tiles, a running maximum across them --------------------------------------
@triton.jit
def tiled_race_kernel(recovered_ptr, target_ptr, draft_probs_ptr, inv_noise_ptr, vocab,
                      BLOCK: tl.constexpr, OFFSET: tl.constexpr):
    """The residual's race ``max(p - q, 0) * (1 / E)``, tile by tile, the largest tile maximum
    kept (``OFFSET``: the tile's start added to the lane's index); one program per row of the
    rows, every row racing the one noise row."""
    row = tl.program_id(0)
    max_val = tl.full((), float("-inf"), tl.float32)
    recovered_id = 0
    for v in range(0, vocab, BLOCK):
        offs = v + tl.arange(0, BLOCK)
        mask = offs < vocab
        p = tl.load(target_ptr + row * vocab + offs, mask=mask, other=0.0)
        q = tl.load(draft_probs_ptr + row * vocab + offs, mask=mask, other=0.0)
        inv_noise = tl.load(inv_noise_ptr + offs, mask=mask, other=0.0)
        score = tl.where(mask, tl.maximum(p - q, 0.0) * inv_noise, float("-inf"))
        local_max, local_id = tl.max(score, axis=0, return_indices=True)
        if local_max > max_val:
            max_val = local_max
            recovered_id = v + local_id if OFFSET else local_id
    tl.store(recovered_ptr + row, tl.minimum(recovered_id, vocab - 1))


def _tiled_race(offset):
    def launch(recovered, p32, q32):
        inv_noise = torch.empty_like(p32).exponential_().reciprocal()
        tiled_race_kernel[(1,)](recovered, p32, q32, inv_noise, p32.shape[0], BLOCK=2,
                                OFFSET=offset)
    return launch


def tiled_race_recovery(p, q):
    """(d) The race in tiles of 2 lanes, the running maximum across tiles (lossless)."""
    return _one_position(p, q, _tiled_race(True))


def tiled_race_recovery_no_offset(p, q):
    """(d) The same, the winning lane's index kept without its tile's start (lossy)."""
    return _one_position(p, q, _tiled_race(False))


# -- (e) several draft positions in one launch, one noise row per request -----------------------
@triton.jit
def chain_accept_kernel(out_ptr, draft_ptr, target_ptr, draft_probs_ptr, uniform_ptr,
                        recovered_ptr, bonus_ptr, num_drafts, vocab):
    """The positions in turn while their drafts are accepted (``q > 0`` and ``p / q >= u``),
    the first rejected one's recovered token, the bonus token when none was rejected."""
    rejected = False
    for pos in range(num_drafts):
        if not rejected:
            draft = tl.load(draft_ptr + pos)
            u = tl.load(uniform_ptr + pos)
            p = tl.load(target_ptr + pos * vocab + draft)
            q = tl.load(draft_probs_ptr + pos * vocab + draft)
            if q > 0 and tl.div_rn(p, q) >= u:
                token = draft
            else:
                rejected = True
                token = tl.load(recovered_ptr + pos)
            tl.store(out_ptr + pos, token)
    if not rejected:
        tl.store(out_ptr + num_drafts, tl.load(bonus_ptr))


def _chain(p, q, offset, one_tile=False):
    """``k = len(q)`` drafts, one launch of each kernel for the request: its emitted tokens."""
    k, vocab = q.shape[0], q.shape[1]
    p32, q32 = p.to(torch.float32), q.to(torch.float32)
    draft = torch.multinomial(q, 1).view(-1).to(torch.int32)
    bonus = torch.multinomial(p[k], 1).to(torch.int32)
    uniform = torch.rand(k, dtype=torch.float64)
    inv_noise = torch.empty(vocab, dtype=torch.float32).exponential_().reciprocal()
    recovered = torch.empty(k, dtype=torch.int32)
    block = triton.next_power_of_2(vocab) if one_tile else 2
    tiled_race_kernel[(k,)](recovered, p32, q32, inv_noise, vocab, BLOCK=block, OFFSET=offset)
    out = torch.full((k + 1,), -1, dtype=torch.int32)
    chain_accept_kernel[(1,)](out, draft, p32, q32, uniform, recovered, bonus, k, vocab)
    return out[out != -1]


def chain_tokens(p, q):
    """(e) Every position of a request in one launch (lossless): ``verify --tokens M``."""
    return _chain(p, q, True)


def chain_tokens_one_tile(p, q):
    """(e) The same in one tile (no running maximum): the reference of ``chain_tokens``."""
    return _chain(p, q, True, one_tile=True)


def chain_tokens_no_offset(p, q):
    """(e) The tiles' start forgotten, as in (d) (lossy)."""
    return _chain(p, q, False)


# -- (f) a chain in one program, the final token by the inverse CDF ----------------------------
@triton.jit
def cdf_chain_kernel(out_ptr, draft_ptr, target_ptr, draft_probs_ptr, uniform_ptr,
                     final_uniform_ptr, num_drafts, vocab, BLOCK: tl.constexpr,
                     FROM_TARGET: tl.constexpr):
    """Accept the positions in turn while ``coin * q < p``; then the token at the final
    uniform of the inverse CDF of the rejected position's residual (``FROM_TARGET``: of its
    target row), or of the next target row when every draft was accepted, tile by tile."""
    accepted = 0
    rejected = False
    for pos in range(num_drafts):
        if not rejected:
            draft = tl.load(draft_ptr + pos)
            coin = tl.load(uniform_ptr + pos)
            p = tl.load(target_ptr + pos * vocab + draft)
            q = tl.load(draft_probs_ptr + pos * vocab + draft)
            if coin * q < p:
                tl.store(out_ptr + pos, draft)
                accepted += 1
            else:
                rejected = True
    residual = rejected and not FROM_TARGET
    total = 0.0
    for v in range(0, vocab, BLOCK):
        offs = v + tl.arange(0, BLOCK)
        weight = tl.load(target_ptr + accepted * vocab + offs, mask=offs < vocab, other=0.0)
        if residual:
            q_row = tl.load(draft_probs_ptr + accepted * vocab + offs, mask=offs < vocab,
                            other=0.0)
            weight = tl.maximum(weight - q_row, 0.0)
        total += tl.sum(weight)
    target_u = tl.load(final_uniform_ptr) * total
    running = 0.0
    token = vocab - 1
    found = 0
    for v in range(0, vocab, BLOCK):
        if found == 0:
            offs = v + tl.arange(0, BLOCK)
            weight = tl.load(target_ptr + accepted * vocab + offs, mask=offs < vocab,
                             other=0.0)
            if residual:
                q_row = tl.load(draft_probs_ptr + accepted * vocab + offs, mask=offs < vocab,
                                other=0.0)
                weight = tl.maximum(weight - q_row, 0.0)
            hit = (running + tl.cumsum(weight, axis=0)) > target_u
            if tl.max(hit, axis=0):
                token = v + tl.argmax(hit.to(tl.int32), axis=0)
                found = 1
            running += tl.sum(weight)
    tl.store(out_ptr + accepted, token)


def _cdf_chain(p, q, from_target, block=None):
    """``k = len(q)`` drafts through :func:`cdf_chain_kernel` (one tile unless ``block``):
    the emitted tokens."""
    k, vocab = q.shape[0], q.shape[1]
    draft = torch.multinomial(q, 1).view(-1).to(torch.int32)
    out = torch.full((k + 1,), -1, dtype=torch.int32)
    cdf_chain_kernel[(1,)](out, draft, p.to(torch.float32), q.to(torch.float32),
                           torch.rand(k), torch.rand(1), k, vocab,
                           BLOCK=block or triton.next_power_of_2(vocab),
                           FROM_TARGET=from_target)
    return out[out != -1]


def cdf_chain_tokens(p, q):
    """(f) Accept while ``coin * q < p``, the final token by the inverse CDF (lossless)."""
    return _cdf_chain(p, q, False)


def cdf_chain_tokens_tiled(p, q):
    """(f) The same over tiles of 2 lanes, the first tile that passes the uniform searched
    as SGLang's kernel does (lossless)."""
    return _cdf_chain(p, q, False, block=2)


def cdf_chain_tokens_from_target(p, q):
    """(f) The token after a rejection drawn from ``p``, not the residual (lossy)."""
    return _cdf_chain(p, q, True)
