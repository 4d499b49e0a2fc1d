"""The one-draft rule as a Triton kernel launched from a PyTorch rule, beside the same algorithm
in plain PyTorch.

``sample(p, q)`` draws the draft ``x ~ q`` with ``torch.multinomial``, a uniform and an
exponential noise row in PyTorch (as vLLM's rejection sampler draws them before its kernels,
``vllm/v1/sample/rejection_sampler.py``), and launches ``one_draft_kernel``: accept ``x`` when
``u < p[x] / q[x]`` (the quotient by ``tl.div_rn``, correctly rounded in ``float32`` and then
into the rows' dtype, as torch computes it), else the recovered token, the winner of the race
``argmax(max(p - q, 0) / E)`` over the residual. ``sample_philox`` draws the uniform inside the
kernel with ``tl.rand(seed, pid)``; ``sample_torch`` is the same algorithm on the tensor layer
without a kernel. ``sample_target_recovery`` recovers from ``p`` instead of the residual
(lossy). ``sample_branching`` decides in a Python ``if`` on the kernel's acceptance (a runtime
branch of the compiled kernel), and ``sample_masked_noise`` loads the noise's masked lanes as
``-inf`` and the probabilities' as 0 (``0 / -inf`` is ``-0.0``, which never wins), as vLLM's
recovered-token kernel does. ``sample_plain_division`` writes the ratio with ``/``, which the
GPU computes as the approximate ``div.full.f32``: exact in the exact run, refused under
``--arith``.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _residual_race(p_ptr, q_ptr, noise_ptr, vocab, BLOCK: tl.constexpr, FROM_TARGET: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < vocab
    p = tl.load(p_ptr + offs, mask=mask, other=0.0)
    q = tl.load(q_ptr + offs, mask=mask, other=0.0)
    e = tl.load(noise_ptr + offs, mask=mask, other=1.0)
    weight = p if FROM_TARGET else tl.maximum(p - q, 0.0)
    return tl.argmax(weight / e, axis=0)


@triton.jit
def _ratio(p_ptr, q_ptr, x):
    # p[x] / q[x] correctly rounded (Triton's / is the approximate div.full.f32 on the GPU)
    p = tl.load(p_ptr + x)
    return tl.div_rn(p.to(tl.float32), tl.load(q_ptr + x).to(tl.float32)).to(p.dtype)


@triton.jit
def one_draft_kernel(p_ptr, q_ptr, draft_ptr, u_ptr, noise_ptr, out_ptr, vocab,
                     BLOCK: tl.constexpr, FROM_TARGET: tl.constexpr = False):
    pid = tl.program_id(0)
    x = tl.load(draft_ptr + pid)
    accepted = tl.load(u_ptr + pid) < _ratio(p_ptr, q_ptr, x)
    recovered = _residual_race(p_ptr, q_ptr, noise_ptr, vocab, BLOCK, FROM_TARGET)
    tl.store(out_ptr + pid, tl.where(accepted, x, recovered))


@triton.jit
def one_draft_philox_kernel(p_ptr, q_ptr, draft_ptr, noise_ptr, out_ptr, vocab, seed,
                            BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(draft_ptr + pid)
    u = tl.rand(seed, pid)
    accepted = u < _ratio(p_ptr, q_ptr, x)
    recovered = _residual_race(p_ptr, q_ptr, noise_ptr, vocab, BLOCK, False)
    tl.store(out_ptr + pid, tl.where(accepted, x, recovered))


@triton.jit
def one_draft_branching_kernel(p_ptr, q_ptr, draft_ptr, u_ptr, noise_ptr, out_ptr, vocab,
                               BLOCK: tl.constexpr):
    x = tl.load(draft_ptr)
    if tl.load(u_ptr) < _ratio(p_ptr, q_ptr, x):
        tl.store(out_ptr, x)
    else:
        tl.store(out_ptr, _residual_race(p_ptr, q_ptr, noise_ptr, vocab, BLOCK, False))


@triton.jit
def recovered_masked_noise_kernel(p_ptr, q_ptr, noise_ptr, out_ptr, vocab, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < vocab
    p = tl.load(p_ptr + offs, mask=mask, other=0)
    q = tl.load(q_ptr + offs, mask=mask, other=0)
    e = tl.load(noise_ptr + offs, mask=mask, other=float("-inf"))
    tl.store(out_ptr, tl.argmax(tl.maximum(p - q, 0) / e, axis=-1))


def sample_branching(p, q):
    vocab = p.shape[0]
    draft = torch.multinomial(q, 1)
    u = torch.rand(1, dtype=p.dtype)
    noise = torch.empty_like(p).exponential_()
    out = torch.empty(1, dtype=torch.int64)
    one_draft_branching_kernel[(1,)](p, q, draft, u, noise, out, vocab,
                                     BLOCK=triton.next_power_of_2(vocab))
    return out[0]


def sample_masked_noise(p, q):
    vocab = p.shape[0]
    x = torch.multinomial(q, 1)[0]
    u = torch.rand(1, dtype=p.dtype)[0]
    noise = torch.empty_like(p).exponential_()
    recovered = torch.empty(1, dtype=torch.int64)
    recovered_masked_noise_kernel[(1,)](p, q, noise, recovered, vocab,
                                        BLOCK=triton.next_power_of_2(vocab))
    return torch.where(u < p[x] / q[x], x, recovered[0])


@triton.jit
def one_draft_plain_division_kernel(p_ptr, q_ptr, draft_ptr, u_ptr, noise_ptr, out_ptr, vocab,
                                    BLOCK: tl.constexpr):
    x = tl.load(draft_ptr)
    accepted = tl.load(u_ptr) < tl.load(p_ptr + x) / tl.load(q_ptr + x)
    recovered = _residual_race(p_ptr, q_ptr, noise_ptr, vocab, BLOCK, False)
    tl.store(out_ptr, tl.where(accepted, x, recovered))


def sample_plain_division(p, q):
    vocab = p.shape[0]
    draft = torch.multinomial(q, 1)
    u = torch.rand(1, dtype=p.dtype)
    noise = torch.empty_like(p).exponential_()
    out = torch.empty(1, dtype=torch.int64)
    one_draft_plain_division_kernel[(1,)](p, q, draft, u, noise, out, vocab,
                                          BLOCK=triton.next_power_of_2(vocab))
    return out[0]


def _launch(p, q, from_target=False):
    vocab = p.shape[0]
    draft = torch.multinomial(q, 1)
    u = torch.rand(1, dtype=p.dtype)
    noise = torch.empty_like(p).exponential_()
    out = torch.empty(1, dtype=torch.int64)
    one_draft_kernel[(1,)](p, q, draft, u, noise, out, vocab,
                           BLOCK=triton.next_power_of_2(vocab), FROM_TARGET=from_target)
    return out[0]


def sample(p, q):
    return _launch(p, q)


def sample_target_recovery(p, q):
    return _launch(p, q, from_target=True)


def sample_philox(p, q):
    vocab = p.shape[0]
    draft = torch.multinomial(q, 1)
    noise = torch.empty_like(p).exponential_()
    out = torch.empty(1, dtype=torch.int64)
    grid = lambda meta: (triton.cdiv(1, 1),)
    one_draft_philox_kernel[grid](p, q, draft, noise, out, vocab, 1234,
                                  BLOCK=triton.next_power_of_2(vocab))
    return out[0]


def sample_torch(p, q):
    x = torch.multinomial(q, 1)[0]
    u = torch.rand(1, dtype=p.dtype)[0]
    noise = torch.empty_like(p).exponential_()
    accepted = u < p[x] / q[x]
    recovered = (torch.clamp(p - q, min=0) / noise).argmax()
    return torch.where(accepted, x, recovered)
