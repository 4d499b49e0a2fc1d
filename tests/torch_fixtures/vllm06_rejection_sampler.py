"""A rejection sampler in the style of vLLM 0.6's, as an engine ships it: a module, TorchScript, no autograd.

Our own code (not a copy), written the way vLLM 0.6 writes its speculative-decoding sampler
(``vllm/model_executor/layers/rejection_sampler.py`` over ``spec_decode_base_sampler.py``):
an ``nn.Module`` base class that keeps the dtypes and a buffer, ``__init__`` calling
``super().__init__()``, a subclass whose ``forward`` takes batched tensors ``[batch, k + 1,
vocab]`` / ``[batch, k, vocab]`` under ``@torch.no_grad()``, type annotations with
``Optional[...]`` and ``Dict[int, torch.Generator]``, a ``cached_property`` for the clamp's
tiny value, a ``@torch.jit.script`` helper for the first rejection, the draft and target
probabilities of the drafted tokens picked by advanced indexing, acceptance by ``uniform <
min(p / q, 1)``, recovered probabilities ``clamp(p - q, min=tiny)`` normalised, the recovered
token an exponential race (``probs.div_(noise).argmax(dim=1)``), and the output row with ``-1``
after the first rejection.  The module is moved with ``.to(device)`` and ``.eval()`` as an
engine moves it.

``rule(p, q)`` adapts it to one position (``exactspec verify FILE:rule --p P --q Q``):
lossy by the clamp at ``tiny = 2**-126`` only.  ``rule_k(p, q)`` to several (``--tokens M``).
The same file runs under real torch (``tests/test_torch_plumbing.py``).
"""

from functools import cached_property
from typing import Dict, Optional

import torch
import torch.jit
import torch.nn as nn


@torch.jit.script
def first_rejection(accepted: torch.Tensor, k: int) -> torch.Tensor:
    """The index of the first rejected position of each row of ``accepted`` [batch, k], or
    ``k`` where every position was accepted."""
    rejected = accepted == 0
    limits = torch.argmax(rejected.to(torch.int64), dim=1)
    limits[~rejected.any(dim=1)] = k
    return limits


class SpecDecodeSamplerBase(nn.Module):
    """What every speculative-decoding sampler keeps: dtypes, a strict mode, a unit buffer."""

    def __init__(self, strict_mode: bool = False):
        super().__init__()
        self._strict_mode = strict_mode
        self.probs_dtype = torch.float32
        self.token_id_dtype = torch.int64
        self.register_buffer("_unit", torch.ones(1, dtype=self.probs_dtype), persistent=False)

    def _check_shapes(self, target_with_bonus_probs: torch.Tensor, draft_probs: torch.Tensor,
                      draft_token_ids: torch.Tensor) -> None:
        batch_size, k, vocab = draft_probs.shape
        assert target_with_bonus_probs.shape == (batch_size, k + 1, vocab)
        assert draft_token_ids.shape == (batch_size, k)

    def _create_output(self, accepted: torch.Tensor, recovered_token_ids: torch.Tensor,
                       draft_token_ids: torch.Tensor,
                       bonus_token_ids: torch.Tensor) -> torch.Tensor:
        """``[batch, k + 1]``: the accepted drafts, the recovered token at the first
        rejection, the bonus token after k acceptances, ``-1`` after."""
        batch_size, k = recovered_token_ids.shape
        limits = first_rejection(accepted, k)
        positions = torch.arange(k, device=accepted.device).unsqueeze(0)
        kept = positions < limits.unsqueeze(1)
        at_rejection = positions == limits.unsqueeze(1)
        output = torch.full((batch_size, k + 1), -1, dtype=self.token_id_dtype,
                            device=accepted.device)
        output[:, :k] = torch.where(kept, draft_token_ids, recovered_token_ids)
        output[:, :k].masked_fill_(~(kept | at_rejection), -1)
        all_kept = limits == k
        output[:, k] = torch.where(all_kept, bonus_token_ids.squeeze(-1), -1)
        return output


class RejectionSampler(SpecDecodeSamplerBase):
    """Modified rejection sampling of k draft tokens per request."""

    def __init__(self, strict_mode: bool = False):
        super().__init__(strict_mode=strict_mode)

    @cached_property
    def _smallest_positive_value(self) -> float:
        return torch.finfo(self.probs_dtype).tiny

    @torch.no_grad()
    def forward(self, target_with_bonus_probs: torch.Tensor, bonus_token_ids: torch.Tensor,
                draft_probs: torch.Tensor, draft_token_ids: torch.Tensor,
                generators: Optional[Dict[int, torch.Generator]] = None) -> torch.Tensor:
        if self._strict_mode:
            self._check_shapes(target_with_bonus_probs, draft_probs, draft_token_ids)
        batch_size, k, _ = draft_probs.shape
        if batch_size == 0:
            return torch.empty(0, k + 1, device=draft_probs.device, dtype=int)
        accepted, recovered = self._batch_modified_rejection_sampling(
            target_with_bonus_probs[:, :-1], draft_probs, draft_token_ids, generators or {})
        return self._create_output(accepted, recovered, draft_token_ids, bonus_token_ids)

    def _batch_modified_rejection_sampling(
            self, target_probs: torch.Tensor, draft_probs: torch.Tensor,
            draft_token_ids: torch.Tensor,
            generators: Dict[int, torch.Generator]) -> "tuple[torch.Tensor, torch.Tensor]":
        batch_size, k, vocab_size = draft_probs.shape
        accepted = self._get_accepted(target_probs, draft_probs, draft_token_ids)
        recovered_probs = self._get_recovered_probs(target_probs, draft_probs).reshape(
            batch_size * k, vocab_size)
        recovered = _multinomial(recovered_probs, k, generators).reshape(batch_size, k)
        return accepted, recovered

    def _get_accepted(self, target_probs: torch.Tensor, draft_probs: torch.Tensor,
                      draft_token_ids: torch.Tensor) -> torch.Tensor:
        batch_size, k, _ = draft_probs.shape
        batch_indices = torch.arange(batch_size, device=target_probs.device)[:, None]
        position_indices = torch.arange(k, device=target_probs.device)
        selected_draft = draft_probs[batch_indices, position_indices, draft_token_ids]
        selected_target = target_probs[batch_indices, position_indices, draft_token_ids]
        uniform = torch.rand(batch_size, k, dtype=self.probs_dtype, device=target_probs.device)
        capped_ratio = torch.minimum(selected_target / selected_draft, self._unit)
        return uniform < capped_ratio

    def _get_recovered_probs(self, target_probs: torch.Tensor,
                             draft_probs: torch.Tensor) -> torch.Tensor:
        _, k, _ = draft_probs.shape
        f = torch.clamp(target_probs - draft_probs, min=self._smallest_positive_value)
        return f / torch.sum(f, dim=-1).reshape(-1, k, 1)


def _multinomial(probs: torch.Tensor, k: int,
                 generators: Dict[int, torch.Generator]) -> torch.Tensor:
    """One token per row of ``probs`` [batch * k, vocab], an exponential race per row, the
    rows of request ``i`` filled from its own generator when it has one."""
    noise = torch.empty_like(probs)
    for request in range(probs.shape[0] // k):
        noise[request * k:(request + 1) * k].exponential_(1.0, generator=generators.get(request))
    return probs.div_(noise).argmax(dim=1)


SAMPLER = RejectionSampler(strict_mode=True).to(torch.device("cpu")).eval()


def _call(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """The engine's call on one request: ``p`` [k + 1, V] and ``q`` [k, V] rows."""
    k = q.shape[0]
    draft_token_ids = torch.multinomial(q, num_samples=1).reshape(1, k)
    bonus_token_ids = torch.multinomial(p[k:], num_samples=1).reshape(1, 1)
    return SAMPLER(p.unsqueeze(0).to(torch.float32), bonus_token_ids,
                   q.unsqueeze(0).to(torch.float32), draft_token_ids)


def rule(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """One position: the token emitted at the first position."""
    return _call(torch.stack([p, p]), q.unsqueeze(0))[0, 0]


def rule_k(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """``len(q)`` draft positions (``--tokens M``): the emitted tokens."""
    row = _call(p, q)[0]
    return row[row != -1]
