"""vLLM's Triton rejection sampler as it ships, verified through two small PyTorch rules.

``rejection_sample`` of vLLM's second engine (``vllm/v1/sample/rejection_sampler.py``, checked
with vllm 0.33.0) launches three Triton kernels: ``rejection_random_sample_kernel`` (accept the
draft while ``p / q >= u``, with ``u`` drawn by ``torch.rand(dtype=torch.float64)``),
``sample_recovered_tokens_kernel`` (the recovered token as an exponential race over the
residual ``max(p - q, 0) * (1 / E)``, the vocabulary in tiles of ``BLOCK_SIZE = 8192``) and,
for greedy requests, ``rejection_greedy_sample_kernel``.  The file is taken from the installed
package's source by :func:`exactspec.torch_layer.load`, unedited and without importing vLLM;
``triton`` and ``triton.language`` are exactspec's stand-in (:mod:`exactspec.triton_layer`), so
the kernels run program by program over exact tensors.  ``refuse="at-use"``: what the module
reaches but the sampling path never runs and that cannot be loaded (``NVMLError`` of its
bundled ``pynvml``, bound only on a branch that does not run here) is refused only if it runs.

``rule(p, q)`` is one draft position (``exactspec verify FILE:rule --p P --q Q``);
``rule_tokens(p, q)`` every position of ``exactspec verify FILE:rule_tokens --tokens M``
(``M - 1`` drafts, the bonus token drawn from the last target row).  The target logits are
``log p`` (``-inf`` at a zero), which the engine turns back into ``p`` with its ``float32``
softmax; the draft rows are ``float32`` as vLLM keeps them.

Exact: lossless on ``--p 1/2,1/3,1/6,0 --q 1/4,1/4,0,1/2`` (2 paths, the draft a tensor axis;
acceptance 1/2).  Under
``--arith float32`` the acceptance's ``target_prob / draft_prob`` is refused: Triton's ``/`` on
``float32`` is the GPU's approximate ``div.full.f32``.  With ``--elementwise numpy`` (the
kernels as Triton's interpreter computes them, ``/`` correctly rounded): lossy by rounding only,
TV about ``1.49e-08``, and the token of ``p = 0`` is emitted ``2**-54`` of the time (its draft
accepted at a ``float64`` uniform of exactly 0).

``rule_tokens`` with ``--tokens M`` takes the factored route: each draft position a tensor
axis through both kernels (the acceptance's Python ``if`` statements split the engine's path
with a weight vector per axis, as a PyTorch chain's comparisons do), every position's recovered
token a race kept as its law over the request's one noise row (vLLM's ``inv_q`` is
``[batch_size, vocab_size]``: the positions share it, and only the first rejected position's
token is emitted).  The recovered-token kernel's running maximum across tiles of
``BLOCK_SIZE = 8192``, ``if local_max > max_val``, runs both branches and keeps the maximum and
the winner over both tiles (:mod:`exactspec.triton_layer.branches`), so the tiles add no path.
At 152,064 tokens (19 tiles) with ``--tokens 4``: 4 engine paths, 3 draft axes, lossless,
tokens per call exactly ``1 + a + a**2 + a**3`` (``a = sum(min(p, q))``), in about 50 s of CPU,
within the default budget: the engine paths split only at the acceptance tests, after both
kernels have run, and the walk runs that common start once (each other option in a forked copy
of the process, :mod:`exactspec.engine.forked_paths`); most of the rest is the kernels' exact
elements, run twice (the second run checks for hidden state).
"""

import torch

from exactspec.torch_layer import load

rejection_sample = load("vllm.v1.sample.rejection_sampler:rejection_sample", refuse="at-use")
SamplingMetadata = load("vllm.v1.sample.metadata:SamplingMetadata", refuse="at-use")

# vLLM's launchers cache their kernel's argument names on the first launch (a
# functools.cached_property of the launcher): read once here, so that the first run the engine
# enumerates does not change the launcher and look like hidden state.
for _launcher in ("_rejection_random_sample", "_sample_recovered_tokens"):
    rejection_sample.__globals__[_launcher]._kernel_arg_names


def _all_random():
    """One request sampled at temperature 1: every field ``rejection_sample`` reads, set."""
    none = torch.zeros(1)
    return SamplingMetadata(
        temperature=torch.ones(1), all_greedy=False, all_random=True, top_p=None, top_k=None,
        generators={}, max_num_logprobs=None, no_penalties=True, prompt_token_ids=None,
        frequency_penalties=none, presence_penalties=none, repetition_penalties=none,
        output_token_ids=[[]], allowed_token_ids_mask=None, bad_words_token_ids={},
        logitsprocs=None)


def rule(p, q):
    """One draft token through vLLM's kernels: the token they emit at position 0."""
    draft = torch.multinomial(q, 1).to(torch.int32)
    bonus = torch.multinomial(p, 1).view(1, 1)
    out = rejection_sample(draft, [1], 1, torch.tensor([1], dtype=torch.int32),
                           q.view(1, -1).to(torch.float32), p.log().view(1, -1), bonus,
                           _all_random())
    return out[0, 0]


def rule_tokens(p, q):
    """``k = len(q)`` draft tokens through vLLM's kernels: the tokens they emit, ``-1`` off."""
    k = q.shape[0]
    draft = torch.multinomial(q, 1).view(-1).to(torch.int32)
    bonus = torch.multinomial(p[k:], 1).view(1, 1)
    out = rejection_sample(draft, [k], k, torch.tensor([k], dtype=torch.int32),
                           q.to(torch.float32), p[:k].log(), bonus, _all_random())
    return out[0][out[0] != -1]
