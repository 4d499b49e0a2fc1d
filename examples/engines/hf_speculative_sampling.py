"""Hugging Face transformers' speculative sampling in its PyTorch idiom: one position, and k.

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

Several positions at once, as the engine's function verifies them: ``_speculative_sampling``
takes the ``k`` candidate tokens ``[1, k]``, the draft rows ``[1, k, vocab]`` and the target rows
``[1, k + 1, vocab]``; it picks ``p_i`` and ``q_i`` of every candidate with one advanced index,
draws ``r_i = torch.rand_like(p_i / q_i)``, accepts ``r_i <= p_i / q_i``, counts the accepted
prefix as ``n_matches = ((~is_accepted).cumsum(dim=-1) < 1).sum()``, and emits the prefix and
one token drawn with ``torch.multinomial`` from the residual of row ``n_matches`` (from the last
target row when all ``k`` were accepted: the bonus token), joined with ``torch.cat``.
``speculative_sampling(p, q)`` adapts it to ``exactspec verify ... --tokens M``: ``p`` holds
``M`` target rows and ``q`` holds ``M - 1`` draft rows, the candidates are drawn from ``q``
with ``torch.multinomial``, and it returns the emitted tokens.  What exactspec finds on
``--p 1/2,1/3,1/6 --q 1/4,1/4,1/2 --tokens 3`` (two candidates):

- ``speculative_sampling``: proved (the first 3 tokens follow ``p``'s joint law exactly; 19/9
  tokens per call), by the factored route (4 engine paths, each candidate a tensor axis);
  under ``--arith float32`` lossy by rounding only, TV about ``3.80e-08`` (exact arithmetic
  with the uniforms on the ``2**-24`` grid of ``torch.rand`` alone: ``3.64e-08``; the float32
  rows and ratios do the rest);
- ``speculative_sampling_count_all``: ``n_matches = is_accepted.sum()``, every accepted
  position counted rather than the accepted prefix, so a rejected first candidate followed by
  an accepted second one is emitted; refuted (TV ``1357/5832`` on the first 3 tokens, ``2/9``
  on the first token, which is ``(1/3, 5/18, 7/18)`` instead of ``p``).  A residual taken from
  the wrong position is a bug of the same family that these context-free rows (the same ``p``
  and ``q`` at every position) cannot show.

Run with exactspec (the bodies are unchanged PyTorch)::

    exactspec verify examples/engines/hf_speculative_sampling.py:speculative_sampling --p 1/2,1/3,1/6 --q 1/4,1/4,1/2 --tokens 3
    exactspec verify examples/engines/hf_speculative_sampling.py:speculative_sampling --p 1/2,1/3,1/6 --q 1/4,1/4,1/2 --tokens 3 --arith float32
    exactspec verify examples/engines/hf_speculative_sampling.py:speculative_sampling_count_all --p 1/2,1/3,1/6 --q 1/4,1/4,1/2 --tokens 3

At ``|V| = 1,000`` (``benchmarks/torch_chain.py``) the factored route proves
``speculative_sampling`` with ``--tokens 3`` in about 1 s and ``--tokens 4`` in about 3 s.

The same file runs unchanged under real PyTorch (``sample(p, q)`` with float tensors ``p`` and
``q`` of one row each returns a one-element int64 tensor; ``speculative_sampling(p, q)`` on rows
``[k + 1, V]`` and ``[k, V]`` returns a 1-D int64 tensor of emitted tokens).
Checked with torch 2.13 on CPU: ``tests/test_torch_layer.py`` calls each
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


def _speculative_sampling(candidate_ids, draft_probs, target_probs, count_all_accepted=False):
    """Verify ``k`` candidate tokens at once; ``(valid_tokens, n_matches)``.

    ``candidate_ids`` [1, k], ``draft_probs`` [1, k, vocab], ``target_probs`` [1, k + 1, vocab]
    (the engine softmaxes logits first; here the rows are probabilities).  ``valid_tokens``
    [1, n_matches + 1] holds the accepted prefix and one token drawn from the residual of the
    first rejected position, or from the last target row when all ``k`` were accepted.
    """
    candidate_length = candidate_ids.shape[-1]
    positions = torch.arange(candidate_length)
    q_i = draft_probs[0, positions, candidate_ids[0]]                  # [k]
    p_i = target_probs[0, positions, candidate_ids[0]]
    probability_ratio = p_i / q_i
    r_i = torch.rand_like(probability_ratio)
    is_accepted = r_i <= probability_ratio
    if count_all_accepted:
        n_matches = is_accepted.sum()                # every accepted position, not the prefix
    else:
        n_matches = ((~is_accepted).cumsum(dim=-1) < 1).sum()
    p_n_plus_1 = target_probs[:, n_matches, :]
    if n_matches < candidate_length:
        q_n_plus_1 = draft_probs[:, n_matches, :]
        p_prime = torch.clamp(p_n_plus_1 - q_n_plus_1, min=0)
        p_prime.div_(p_prime.sum())
    else:
        p_prime = p_n_plus_1                         # all accepted: the bonus token
    t = torch.multinomial(p_prime, num_samples=1)                      # [1, 1]
    valid_tokens = torch.cat((candidate_ids[:, :n_matches], t), dim=-1)
    return valid_tokens, n_matches


def speculative_sampling(p, q):
    """Speculative sampling of ``k = len(q)`` candidate tokens at once (lossless)."""
    candidate_ids = torch.multinomial(q, num_samples=1).reshape(1, -1)
    valid_tokens, _ = _speculative_sampling(candidate_ids, q.unsqueeze(0), p.unsqueeze(0))
    return valid_tokens[0]


def speculative_sampling_count_all(p, q):
    """``n_matches`` counted as every accepted position, not the accepted prefix (a bug:
    lossy)."""
    candidate_ids = torch.multinomial(q, num_samples=1).reshape(1, -1)
    valid_tokens, _ = _speculative_sampling(candidate_ids, q.unsqueeze(0), p.unsqueeze(0),
                                            count_all_accepted=True)
    return valid_tokens[0]
