"""Chain speculative sampling with shared uniforms, the PyTorch reference of a fused kernel.

The kernel this mirrors is FlashInfer's chain speculative sampling
(``flashinfer.sampling.chain_speculative_sampling``, ``include/flashinfer/sampling.cuh``): one
thread block per request walks the ``n`` draft positions of a chain, accepts draft token ``x_i``
when ``u_i * q_i(x_i) < p_i(x_i)`` (no division), stops at the first rejection, and draws the
token of the stopping position ``j`` from ``relu(p_j - q_j)`` (from ``p_n`` when all ``n`` were
accepted: the bonus token) by inverse CDF against ``u * sum``.  The caller hands it one tensor
of uniforms ``[batch, n + 1]``: ``u_0 .. u_{n-1}`` decide acceptance and ``u_n`` draws the
recovered or bonus token.  ``chain_speculative_sampling`` below is our own batched PyTorch code
for that computation (tensors ``[batch, n, vocab]``, ``gather``, masks, in-place writes through
advanced indexing), not a copy of the kernel or of its tests.

``chain(p, q)`` adapts it to one request: ``p`` holds ``n + 1`` target rows and ``q`` holds
``n`` draft rows (``exactspec verify ... --tokens M`` hands it ``M - 1`` draft positions), the
drafts are drawn from ``q`` with ``torch.multinomial`` and the uniforms with ``torch.rand``; it
returns the emitted tokens (accepted drafts and one recovered or bonus token).

What exactspec finds (``--p 1/2,1/3,1/6 --q 1/4,1/4,1/2 --tokens 3``, two draft positions; the
residual ``relu(p - q)`` has two tokens, so the uniform that draws from it matters):

- ``chain``: proved (the first 3 tokens follow ``p``'s joint law exactly); under
  ``--arith float32`` lossy by the grid only, TV about ``3.51e-08``: the float32 law is
  exactly the law of exact arithmetic with the uniforms on the ``2**-24`` grid of
  ``torch.rand`` (the rounded products ``u * q`` and ``u * sum`` add nothing here);
- ``chain_reuse_rejecting_uniform``: the recovered token is drawn with the uniform that just
  rejected (``u_j`` instead of ``u_n``), a reuse of shared noise: conditioned on the rejection
  ``u_j`` is no longer uniform; refuted (TV ``133/2304`` on the first 3 tokens; on the first
  token alone ``1/24``: a rejection leaves ``u_j`` uniform on ``[1/3, 1)``, which gives token 0
  with probability ``5/8`` instead of ``3/4``);
- ``chain_shared_uniform``: the caller passes one uniform per request expanded over the
  positions (``torch.rand(batch, 1).expand(...)``), so the positions' acceptance tests are
  correlated; refuted (TV ``1103/6912``).

Run with exactspec (the bodies are unchanged PyTorch)::

    exactspec verify examples/engines/flashinfer_chain.py:chain --p 1/2,1/3,1/6 --q 1/4,1/4,1/2 --tokens 3
    exactspec verify examples/engines/flashinfer_chain.py:chain --p 1/2,1/3,1/6 --q 1/4,1/4,1/2 --tokens 3 --arith float32
    exactspec verify examples/engines/flashinfer_chain.py:chain_reuse_rejecting_uniform --p 1/2,1/3,1/6 --q 1/4,1/4,1/2 --tokens 3
    exactspec verify examples/engines/flashinfer_chain.py:chain_shared_uniform --p 1/2,1/3,1/6 --q 1/4,1/4,1/2 --tokens 3

The same file runs unchanged under real PyTorch: ``chain(p, q)`` on float tensors ``p`` of
shape ``[n + 1, V]`` and ``q`` of shape ``[n, V]`` returns a 1-D int64 tensor of emitted tokens.
Checked with torch 2.13 on CPU: ``tests/test_torch_layer.py`` calls it
20,000 times on float64 rows with a seeded generator and tests its empirical law against
the law exactspec proves (chi-square at level ``1e-6``, with power above 0.999 against the
bug variant, which it rejects).
"""

import torch


def chain_speculative_sampling(draft_probs, draft_token_ids, uniform_samples, target_probs,
                               reuse_rejecting_uniform=False):
    """Verify ``batch`` chains of ``n`` drafts; ``(output_token_ids, accepted_num)``.

    ``draft_probs`` [batch, n, vocab], ``draft_token_ids`` [batch, n], ``uniform_samples``
    [batch, n + 1], ``target_probs`` [batch, n + 1, vocab].  ``output_token_ids`` [batch, n + 1]
    holds the accepted drafts, then the recovered (or bonus) token, then ``-1``.
    """
    batch, n, vocab = draft_probs.shape
    rows = torch.arange(batch)
    output_token_ids = torch.full((batch, n + 1), -1, dtype=torch.int64)
    index = draft_token_ids.unsqueeze(-1)
    q = draft_probs.gather(-1, index).squeeze(-1)                       # [batch, n]
    p = target_probs[:, :n].gather(-1, index).squeeze(-1)               # [batch, n]
    accepted_num = torch.zeros(batch, dtype=torch.int64)
    running = torch.ones(batch, dtype=torch.bool)
    for i in range(n):
        accept = running & (uniform_samples[:, i] * q[:, i] < p[:, i])
        output_token_ids[:, i] = torch.where(accept, draft_token_ids[:, i],
                                             output_token_ids[:, i])
        accepted_num += accept.long()
        running = accept
    # the stopping position: relu(p_j - q_j), or p_n (no draft there) for the bonus token
    padded_draft = torch.zeros_like(target_probs)
    padded_draft[:, :n] = draft_probs
    relu = (target_probs[rows, accepted_num] - padded_draft[rows, accepted_num]).clamp_(min=0)
    cdf = relu.cumsum(dim=-1)
    column = accepted_num if reuse_rejecting_uniform else torch.full_like(accepted_num, n)
    u = uniform_samples[rows, column] * cdf[:, -1]
    token = (cdf <= u.unsqueeze(-1)).sum(dim=-1).clamp_(max=vocab - 1)
    output_token_ids[rows, accepted_num] = token
    return output_token_ids, accepted_num


def _one_request(p, q, uniform_samples, reuse_rejecting_uniform=False):
    n = q.shape[0]
    draft_token_ids = torch.multinomial(q, num_samples=1).reshape(1, n)
    output, accepted_num = chain_speculative_sampling(
        q.unsqueeze(0), draft_token_ids, uniform_samples, p.unsqueeze(0),
        reuse_rejecting_uniform=reuse_rejecting_uniform)
    return output[0, :int(accepted_num[0]) + 1]


def chain(p, q):
    """Chain speculative sampling, one uniform per position plus one to draw (lossless)."""
    return _one_request(p, q, torch.rand(1, q.shape[0] + 1, dtype=p.dtype))


def chain_reuse_rejecting_uniform(p, q):
    """The recovered token drawn with the uniform that rejected (a bug: lossy)."""
    return _one_request(p, q, torch.rand(1, q.shape[0] + 1, dtype=p.dtype),
                        reuse_rejecting_uniform=True)


def chain_shared_uniform(p, q):
    """One uniform per request expanded over every position (a bug: lossy)."""
    return _one_request(p, q, torch.rand(1, 1, dtype=p.dtype).expand(1, q.shape[0] + 1))
