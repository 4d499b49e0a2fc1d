"""One position of Hugging Face transformers' speculative sampling, in its PyTorch idiom.

The verifier here is written the way ``_speculative_sampling`` in transformers'
``generation/utils.py`` does its work (our own code, not a copy): the draft token is the one the
draft model sampled, its acceptance probability is the ratio ``p / q`` at that token computed by
a division, a ``torch.rand`` uniform decides acceptance (``r <= p / q``), and on rejection a
token is drawn with ``torch.multinomial`` from the residual ``(p - q)`` clamped at 0 and
normalised in place.  Here one position is checked; the draft is drawn in the function from the
draft row ``q`` (the engine counts it as the draft).

``sample`` is lossless.  Two bug classes of this code are beside it: ``sample_wrong_row`` takes
the acceptance ratio against the wrong row (``q / p`` instead of ``p / q``), and
``sample_resample_from_p`` draws a rejected position's token from the target row instead of the
residual.  Under ``--arith float32`` the correct rule is lossy by the grid only: its uniform is
on the ``2**-24`` grid of ``torch.rand`` and the test ``r <= ratio`` (not ``<``) accepts one grid
point too many when the ratio is a grid point (TV ``2**-24 / 3`` on the instance below).

Run with exactspec (the body is unchanged PyTorch)::

    exactspec verify examples/engines/hf_speculative_sampling.py:sample --p 1/2,1/3,1/6 --q 1/3,1/3,1/3
    exactspec verify examples/engines/hf_speculative_sampling.py:sample_wrong_row --p 1/2,1/3,1/6 --q 1/3,1/3,1/3
    exactspec verify examples/engines/hf_speculative_sampling.py:sample --p 1/2,1/3,1/6 --q 1/3,1/3,1/3 --arith float32
    exactspec verify examples/engines/hf_speculative_sampling.py:sample_resample_from_p --p 1/2,1/3,1/6 --q 1/3,1/3,1/3

The same file runs unchanged under real PyTorch (``sample(p, q)`` with float tensors ``p`` and
``q`` of one row each returns a one-element int64 tensor).
Checked with torch 2.13 on CPU: ``tests/test_torch_layer.py`` calls it
20,000 times on float64 rows with a seeded generator and tests its empirical law against
the law exactspec proves (chi-square at level ``1e-6``, with power above 0.999 against the
bug variant, which it rejects).
"""

import torch


def sample(p, q):
    """Speculative sampling at one position: accept the draft with probability min(1, p/q),
    else draw from the normalised positive residual (lossless)."""
    draft = torch.multinomial(q, num_samples=1)              # the draft model's token
    p_i = p[draft]
    q_i = q[draft]
    probability_ratio = p_i / q_i
    r_i = torch.rand_like(probability_ratio)
    is_accepted = r_i <= probability_ratio
    if is_accepted.all():
        return draft
    p_prime = torch.clamp(p - q, min=0)
    p_prime.div_(p_prime.sum())
    return torch.multinomial(p_prime, num_samples=1)


def sample_wrong_row(p, q):
    """The same rule with the ratio taken against the wrong row, q / p (a bug: lossy)."""
    draft = torch.multinomial(q, num_samples=1)
    probability_ratio = q[draft] / p[draft]
    r_i = torch.rand_like(probability_ratio)
    if (r_i <= probability_ratio).all():
        return draft
    p_prime = torch.clamp(p - q, min=0)
    p_prime.div_(p_prime.sum())
    return torch.multinomial(p_prime, num_samples=1)


def sample_resample_from_p(p, q):
    """On rejection, draw from the target row p instead of the residual (a bug: lossy)."""
    draft = torch.multinomial(q, num_samples=1)
    probability_ratio = p[draft] / q[draft]
    r_i = torch.rand_like(probability_ratio)
    if (r_i <= probability_ratio).all():
        return draft
    return torch.multinomial(p, num_samples=1)
