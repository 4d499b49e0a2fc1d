"""SGLang's Triton chain sampler as it ships, verified through a small PyTorch rule.

``chain_speculative_sampling_triton`` of SGLang (``sglang/kernels/ops/speculative/
reject_sampling.py``, checked with sglang 0.5.23) launches ``speculative_sampling_classic_kernel``:
accept the draft while ``coin * q < p``, then draw the final token by inverting the running sum
of the residual ``max(p - q, 0)`` (or of ``p`` after every draft was accepted), tile by tile.
The file imports only ``triton`` and ``triton.language``, exactspec's Triton layer here, and is
taken from the installed package's source by :func:`exactspec.torch_layer.load` without
importing SGLang.  ``rule(p, q)``: one draft (the root and one candidate); the first token the
kernel writes to ``predicts``.  Exact: lossless on ``--p 1/2,1/3,1/6,0 --q 1/4,1/4,0,1/2``
(acceptance 1/2).  Under ``--arith float32`` its ``tl.sum`` over 4096 lanes needs a declared
``--sum-order``; with one, the kernel's ``residual_scale * p_val - q_val`` is refused: Triton's
compiler may fuse it into one multiply-add, and SGLang's launcher does not pass
``enable_fp_fusion=False``.  With ``--elementwise numpy`` (as Triton's interpreter computes it,
no fused multiply-add) and ``--sum-order sequential``: lossy by the ``float32`` uniforms' grid
only, TV ``1/100663296``.  ``rule_tokens(p, q)``: ``k = len(q)`` drafts in one launch
(``verify --tokens M``), the tokens the kernel writes: on the factored route, each draft a
tensor axis and the final token's inverse CDF kept as its law, its tiles of ``BLOCK_V = 4096``
searched on intervals of the final uniform (lossless; about 17 s of CPU at 32,000 tokens and
85 s at 152,064 with ``--tokens 4``).
"""

import torch

from exactspec.torch_layer import load

chain = load("sglang.kernels.ops.speculative.reject_sampling:chain_speculative_sampling_triton")


def rule(p, q):
    """One draft through SGLang's kernel: the token written first."""
    draft = torch.multinomial(q, 1).view(1, 1)
    candidates = torch.cat([torch.zeros(1, 1, dtype=torch.int64), draft], dim=1)  # root, draft
    predicts = torch.full((2,), -1, dtype=torch.int64)
    accept_index = torch.full((1, 2), -1, dtype=torch.int64)
    accept_num = torch.zeros(1, dtype=torch.int64)
    chain(predicts, accept_index, accept_num, candidates, torch.arange(2).view(1, 2), None, None,
          torch.rand(1, 1), torch.rand(1), torch.stack([p, p]).unsqueeze(0), q.view(1, 1, -1),
          None, None, True)
    return predicts[0]


def rule_tokens(p, q):
    """``k = len(q)`` drafts in one chain (the root, then the drafts): the tokens written."""
    k = q.shape[0]
    draft = torch.multinomial(q, 1).view(1, k)
    candidates = torch.cat([torch.zeros(1, 1, dtype=torch.int64), draft], dim=1)
    predicts = torch.full((k + 1,), -1, dtype=torch.int64)
    accept_index = torch.full((1, k + 1), -1, dtype=torch.int64)
    chain(predicts, accept_index, torch.zeros(1, dtype=torch.int64), candidates,
          torch.arange(k + 1).view(1, k + 1), None, None, torch.rand(1, k), torch.rand(1),
          p.unsqueeze(0), q.unsqueeze(0), None, None, True)
    return predicts[predicts != -1]
