"""A pure-PyTorch rejection sampler in the style of vLLM's first engine: one position, and k.

The code follows the structure of the rejection sampler of vLLM's first engine
(``vllm/model_executor/layers/rejection_sampler.py``; our own code, not a copy): batched tensors
``[batch, k, vocab]``, the draft and target probabilities of the drafted tokens picked with
``gather``, acceptance by ``torch.rand_like(...) < min(p / q, 1)``, recovered probabilities
``clamp(p - q, min=tiny)`` normalised by their sum, and the recovered token drawn as an
exponential race, ``probs.div_(noise).argmax(dim=1)``, with one noise row per request, each
filled in place through a slice of ``torch.empty_like(probs)`` (a per-request generator may
seed it).  ``sample`` adapts it to one request and one draft position: the draft token is drawn
from ``q`` with ``torch.multinomial``.

What exactspec finds (``--p 1/2,1/3,1/6 --q 1/3,1/3,1/3``):

- ``sample``: lossy, by the clamp at ``torch.finfo(torch.float32).tiny`` (``t = 2**-126``):
  a rejected position gives every token with ``p <= q`` a weight ``t`` instead of 0, an exact
  TV of ``2t / (1 + 12t)`` on this instance (about ``2.4e-38``, also under ``--arith float32``; the clamp exists to avoid a
  0/0 when ``p = q``);
- ``sample_copy_noise``: the noise rows are filled through advanced indexing (``noise[rows]``),
  which writes into a copy, so the race reads ``torch.empty`` memory that was never written: on
  a GPU it races against whatever the memory held; exactspec refuses it with the line;
- ``sample_target_recovery``: the recovered token is drawn from ``p`` rather than the residual
  (TV ``1/12``).

Run with exactspec (the bodies are unchanged PyTorch)::

    exactspec verify examples/engines/vllm_rejection_sampler.py:sample --p 1/2,1/3,1/6 --q 1/3,1/3,1/3
    exactspec verify examples/engines/vllm_rejection_sampler.py:sample_copy_noise --p 1/2,1/3,1/6 --q 1/3,1/3,1/3
    exactspec verify examples/engines/vllm_rejection_sampler.py:sample_target_recovery --p 1/2,1/3,1/6 --q 1/3,1/3,1/3

Several positions at once, as the engine verifies them: ``_rejection_sample`` runs the same
acceptance and recovery on ``[1, k, vocab]`` (a recovered token for every position, each row an
exponential race on its own row of one noise tensor), draws the bonus token from the last
target row, and ``_create_output`` writes ``[1, k + 1]`` as the engine does: the first
rejection as ``(accepted == 0).max(1).indices``, set to ``k`` where there is none, masks
``indices < limits`` and ``indices == limits``, the drafts through ``torch.where``, the bonus
column where the last position was kept, the recovered token by ``output.mul_(~mask)
.add_(recovered.mul(mask))``, ``-1`` after.  ``rejection_sample(p, q)`` adapts it to
``exactspec verify ... --tokens M`` (``M`` target rows, ``M - 1`` draft rows) and returns the
output without its ``-1``.  On ``--p 1/2,1/3,1/6 --q 1/4,1/4,1/2 --tokens 3`` (two drafts):

- ``rejection_sample``: lossy by the clamp at tiny only, by the factored route (4 engine
  paths): TV about ``2.16e-38`` on the first 3 tokens, ``t / (1 + 3t)`` on the first token
  (``t = 2**-126``; a rejection, probability ``1/3``, draws token 2 with weight
  ``t / (1/3 + t)``); under ``--arith float32`` TV about ``3.80e-08``, by the clamp, the
  ``2**-24`` grid of ``torch.rand_like`` (``3.64e-08`` with exact arithmetic on the grid) and
  the rounded rows;
- ``rejection_sample_all_accepted_as_rejected``: without ``limits[~rejected.any(1)] = k`` a
  call that accepted every draft takes index 0 from ``max`` of an all-false row (as torch
  does) and emits the recovered token of position 0 alone; refuted (TV about ``0.309`` on the
  first 3 tokens; the first token is ``(2/3, 5/18, 1/18)`` instead of ``p`` up to the clamp,
  TV about ``1/6``; 11/9 tokens per call instead of 19/9).  A bonus token emitted after a
  rejection, or the recovered token of the wrong position, are bugs of this kind that these
  context-free rows (the same ``p`` and ``q`` at every position, the bonus row included)
  cannot show: each is then a fresh token of the right law.

Run with exactspec (the bodies are unchanged PyTorch)::

    exactspec verify examples/engines/vllm_rejection_sampler.py:rejection_sample --p 1/2,1/3,1/6 --q 1/4,1/4,1/2 --tokens 3
    exactspec verify examples/engines/vllm_rejection_sampler.py:rejection_sample --p 1/2,1/3,1/6 --q 1/4,1/4,1/2 --tokens 3 --arith float32
    exactspec verify examples/engines/vllm_rejection_sampler.py:rejection_sample_all_accepted_as_rejected --p 1/2,1/3,1/6 --q 1/4,1/4,1/2 --tokens 3

At ``|V| = 1,000`` (``benchmarks/torch_chain.py``) the factored route decides
``rejection_sample`` with ``--tokens 3`` in about 3 s and ``--tokens 4`` in about 6 s.

The same file runs unchanged under real PyTorch (``sample(p, q)`` on float tensors of one row
each returns a 0-d int64 tensor; ``rejection_sample(p, q)`` on rows ``[k + 1, V]`` and
``[k, V]`` returns a 1-D int64 tensor of emitted tokens).
Checked with torch 2.13 on CPU: ``tests/test_torch_layer.py`` calls each
20,000 times on float64 rows with a seeded generator and tests its empirical law against
the law exactspec proves (chi-square at level ``1e-6``, with power above 0.999 against the
bug variant, which it rejects).
"""

import torch

SMALLEST_POSITIVE = torch.finfo(torch.float32).tiny

# the request's own generator, made once and kept from step to step as the engine keeps it
# (a generator seeded afresh at every call would repeat its noise: under real torch every call
# would then race against the same exponentials)
GENERATORS = {0: torch.Generator().manual_seed(0)}


def _batch_gather(probs, token_ids):
    """``probs[b, j, token_ids[b, j]]`` for ``probs`` of shape [batch, k, vocab]."""
    return probs.gather(-1, token_ids.unsqueeze(-1)).squeeze(-1)


def _get_accepted(target_probs, draft_probs, draft_token_ids):
    selected_draft = _batch_gather(draft_probs, draft_token_ids)
    selected_target = _batch_gather(target_probs, draft_token_ids)
    uniform_rand = torch.rand_like(selected_target)
    capped_ratio = torch.minimum(selected_target / selected_draft,
                                 torch.full((1,), 1, dtype=target_probs.dtype))
    return uniform_rand < capped_ratio


def _get_recovered_probs(target_probs, draft_probs):
    difference = target_probs - draft_probs
    f = torch.clamp(difference, min=SMALLEST_POSITIVE)
    return f / torch.sum(f, dim=-1, keepdim=True)


def _multinomial(probs, k, generators):
    """One token per row of ``probs`` [batch * k, vocab] by an exponential race."""
    noise = torch.empty_like(probs)
    for request in range(noise.shape[0] // k):
        rows = slice(request * k, (request + 1) * k)
        noise[rows].exponential_(1.0, generator=generators.get(request))
    return probs.div_(noise).argmax(dim=1)


def _multinomial_copy(probs, k, generators):
    """The same, with the rows picked by advanced indexing: a copy is filled, not ``noise``."""
    noise = torch.empty_like(probs)
    for request in range(noise.shape[0] // k):
        rows = list(range(request * k, (request + 1) * k))
        noise[rows].exponential_(1.0, generator=generators.get(request))
    return probs.div_(noise).argmax(dim=1)


def _verify(p, q, recovered_probs_of, multinomial):
    batch, k = 1, 1
    target_probs = p.reshape(batch, k, -1)
    draft_probs = q.reshape(batch, k, -1)
    draft_token_ids = torch.multinomial(q, num_samples=1).reshape(batch, k)
    accepted = _get_accepted(target_probs, draft_probs, draft_token_ids)
    recovered_probs = recovered_probs_of(target_probs, draft_probs).reshape(batch * k, -1)
    recovered = multinomial(recovered_probs, k, GENERATORS).reshape(batch, k)
    output = torch.where(accepted, draft_token_ids, recovered)
    return output[0, 0]


def sample(p, q):
    """vLLM-style rejection sampling at one position (lossy by the clamp at tiny)."""
    return _verify(p, q, _get_recovered_probs, _multinomial)


def sample_copy_noise(p, q):
    """The noise rows filled through advanced indexing: never written (refused)."""
    return _verify(p, q, _get_recovered_probs, _multinomial_copy)


def sample_target_recovery(p, q):
    """The recovered token drawn from the target row instead of the residual (lossy)."""
    return _verify(p, q, lambda target, draft: target.clone(), _multinomial)


def _create_output(accepted, recovered_token_ids, draft_token_ids, bonus_token_ids,
                   all_accepted_fix=True):
    """``[batch, k + 1]``: the accepted prefix, the recovered token at the first rejection, the
    bonus token when all ``k`` were accepted, ``-1`` after."""
    batch, k = recovered_token_ids.shape
    rejected = accepted == 0
    limits = rejected.max(1).indices                   # the first rejection ...
    if all_accepted_fix:
        limits[~rejected.any(1)] = k                   # ... or k when there is none
    indices = torch.arange(k).unsqueeze(0)
    accepted_mask = indices < limits.unsqueeze(1)
    after_false_mask = indices == limits.unsqueeze(1)
    output_with_bonus_tokens = -torch.ones((batch, k + 1), dtype=torch.int64)
    output = output_with_bonus_tokens[:, :k]           # a view: writes land in the full row
    output[:, :k] = torch.where(accepted_mask, draft_token_ids,
                                -torch.ones_like(draft_token_ids))
    output_with_bonus_tokens[:, -1] = torch.where(output[:, -1] != -1, bonus_token_ids, -1)
    output.mul_(~after_false_mask).add_(recovered_token_ids.mul(after_false_mask))
    return output_with_bonus_tokens


def _rejection_sample(p, q, all_accepted_fix=True):
    batch, k = 1, q.shape[0]
    target_probs = p[:k].reshape(batch, k, -1)
    draft_probs = q.reshape(batch, k, -1)
    draft_token_ids = torch.multinomial(q, num_samples=1).reshape(batch, k)
    bonus_token_ids = torch.multinomial(p[k:], num_samples=1).reshape(batch)
    accepted = _get_accepted(target_probs, draft_probs, draft_token_ids)
    recovered_probs = _get_recovered_probs(target_probs, draft_probs).reshape(batch * k, -1)
    recovered = _multinomial(recovered_probs, k, GENERATORS).reshape(batch, k)
    output = _create_output(accepted, recovered, draft_token_ids, bonus_token_ids,
                            all_accepted_fix=all_accepted_fix)
    row = output[0]
    return row[row != -1]


def rejection_sample(p, q):
    """vLLM-style rejection sampling of ``k = len(q)`` draft positions (lossy by the clamp at
    tiny)."""
    return _rejection_sample(p, q)


def rejection_sample_all_accepted_as_rejected(p, q):
    """The first rejection taken as ``max(1).indices`` alone: a row with no rejection gives
    index 0 (torch's max of an all-false row), so a call that accepted every draft emits the
    recovered token of position 0 instead (a bug: lossy)."""
    return _rejection_sample(p, q, all_accepted_fix=False)
