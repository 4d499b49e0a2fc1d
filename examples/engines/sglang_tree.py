"""Tree verification over index arrays, target-only, in the style of SGLang's tree kernel.

The kernel this mirrors is SGLang's ``tree_speculative_sampling_target_only``
(``sgl-kernel/csrc/speculative/speculative_sampling.cuh``, called from
``python/sglang/srt/speculative/eagle_utils.py``): the draft tree of each request is given by
index arrays over its nodes, ``candidates`` (the token of each node, node 0 the root),
``retrive_next_token`` (a node's first child, ``-1`` for none) and ``retrive_next_sibling``
(the next child of the same parent); ``target_probs`` holds the target row after every node.
From the root down, the children of the last accepted node are tried in sibling order against
one coin: the child is accepted when ``coin <= prob_acc / threshold_acc`` (``prob_acc`` the
target mass of the children tried so far at this node) or ``p(child) >= threshold_single``; an
accepted node brings a fresh coin (``uniform_samples`` of that node); a rejected child's target
mass is written into ``draft_probs``, so that when no child is accepted the last token is drawn
from ``relu(target - draft_probs)``, with its own uniform
(``uniform_samples_for_final_sampling``).  The draft probabilities play no part in acceptance
(target-only): with ``threshold_single = threshold_acc = 1`` and distinct siblings the rule is
lossless for any tree.  ``tree_speculative_sampling_target_only`` below is our own PyTorch
code for that computation (a Python walk over the index arrays, in-place writes), not a copy.

``tree(p, q)`` adapts it to one request and a tree of ``n + 2`` nodes for ``n`` draft rows (the
root, two children drawn from ``q`` without replacement, then a chain of ``n - 1`` nodes under
the first child; ``--tokens 3`` hands it 3 target rows and 2 draft rows: 4 nodes, depth 2); the
target row of a node is the row of its depth, as the context-free pair of ``--p``/``--q``
gives.

What exactspec finds (``--p 1/2,1/3,1/6 --q 1/4,1/4,1/2 --tokens 3``):

- ``tree``: proved, and under ``--arith float32`` lossy by rounding (TV about ``2.08e-08``,
  beside ``2.26e-08`` for exact arithmetic on the ``2**-24`` grid alone);
- ``tree_siblings_with_replacement``: the children drawn with replacement, so two siblings can
  hold the same token: the coin test counts its target mass twice (``prob_acc``) and the
  residual removes it once; refuted;
- ``tree_relaxed_threshold``: ``threshold_acc = 0.5`` (accept when
  ``coin <= 2 * prob_acc``), the relaxed acceptance an engine offers for speed: refuted.

Run with exactspec (the bodies are unchanged PyTorch)::

    exactspec verify examples/engines/sglang_tree.py:tree --p 1/2,1/3,1/6 --q 1/4,1/4,1/2 --tokens 3
    exactspec verify examples/engines/sglang_tree.py:tree --p 1/2,1/3,1/6 --q 1/4,1/4,1/2 --tokens 3 --arith float32
    exactspec verify examples/engines/sglang_tree.py:tree_siblings_with_replacement --p 1/2,1/3,1/6 --q 1/4,1/4,1/2 --tokens 3
    exactspec verify examples/engines/sglang_tree.py:tree_relaxed_threshold --p 1/2,1/3,1/6 --q 1/4,1/4,1/2 --tokens 3

The same file runs unchanged under real PyTorch: ``tree(p, q)`` on float tensors ``p`` of
shape ``[n + 1, V]`` and ``q`` of shape ``[n, V]`` returns a 1-D int64 tensor of emitted tokens.
Checked with torch 2.13 on CPU: ``tests/test_torch_layer.py`` calls it
20,000 times on float64 rows with a seeded generator and tests its empirical law against
the law exactspec proves (chi-square at level ``1e-6``, with power above 0.999 against the
bug variant, which it rejects).
"""

import torch


def tree_speculative_sampling_target_only(predicts, accept_index, accept_token_num,
                                          candidates, retrive_index, retrive_next_token,
                                          retrive_next_sibling, uniform_samples,
                                          uniform_samples_for_final_sampling, target_probs,
                                          draft_probs, threshold_single=1.0, threshold_acc=1.0):
    """Walk each request's tree; writes ``predicts`` (the token after each accepted node),
    ``accept_index`` (the accepted nodes, root first) and ``accept_token_num`` in place.

    ``candidates``, ``retrive_*``, ``uniform_samples``: [batch, num_draft_tokens];
    ``target_probs``, ``draft_probs``: [batch, num_draft_tokens, vocab] (``draft_probs`` zero
    on entry); ``uniform_samples_for_final_sampling``: [batch].
    """
    batch, num_draft_tokens = candidates.shape
    num_speculative_tokens = accept_index.shape[1]
    vocab = target_probs.shape[-1]
    for bx in range(batch):
        node = 0
        coin = uniform_samples[bx, 0]
        last_accepted = int(retrive_index[bx, 0])
        accept_index[bx, 0] = last_accepted
        num_accepted = 0
        for _ in range(1, num_speculative_tokens):
            child = int(retrive_next_token[bx, node])
            prob_acc = torch.zeros((), dtype=target_probs.dtype)
            while child != -1:
                token = int(candidates[bx, child])
                target_prob_single = target_probs[bx, node, token]
                prob_acc += target_prob_single
                if bool(coin <= prob_acc / threshold_acc) or \
                        bool(target_prob_single >= threshold_single):
                    predicts[last_accepted] = token
                    num_accepted += 1
                    last_accepted = int(retrive_index[bx, child])
                    accept_index[bx, num_accepted] = last_accepted
                    node = child
                    coin = uniform_samples[bx, child]
                    break
                draft_probs[bx, node, token] = target_probs[bx, node, token]
                child = int(retrive_next_sibling[bx, child])
            if child == -1:
                break
        accept_token_num[bx] = num_accepted
        relu = (target_probs[bx, node] - draft_probs[bx, node]).clamp_(min=0)
        cdf = relu.cumsum(dim=0)
        u = uniform_samples_for_final_sampling[bx] * cdf[-1]
        predicts[last_accepted] = (cdf <= u).sum().clamp_(max=vocab - 1)


def _one_request(p, q, replacement=False, threshold_acc=1.0):
    # nodes: 0 the root, 1 and 2 its children (siblings), then a chain 3, 4, .. under node 1,
    # as deep as the rows allow (n = q.shape[0] draft positions: depth n)
    n = q.shape[0]
    nodes = n + 2
    candidates = torch.zeros(1, nodes, dtype=torch.int64)
    candidates[0, 1:3] = torch.multinomial(q[0], num_samples=2, replacement=replacement)
    for depth in range(1, n):
        candidates[0, depth + 2] = torch.multinomial(q[depth], num_samples=1)[0]
    retrive_index = torch.arange(nodes).reshape(1, nodes)
    retrive_next_token = torch.full((1, nodes), -1, dtype=torch.int64)
    retrive_next_sibling = torch.full((1, nodes), -1, dtype=torch.int64)
    retrive_next_token[0, 0] = 1
    retrive_next_sibling[0, 1] = 2
    if n > 1:
        retrive_next_token[0, 1] = 3
        retrive_next_token[0, 3:nodes - 1] = torch.arange(4, nodes)
    node_depth = torch.tensor([0, 1, 1] + list(range(2, n + 1)))
    target_probs = p[node_depth].unsqueeze(0)                  # the row after each node
    draft_probs = torch.zeros_like(target_probs)
    predicts = torch.full((nodes,), -1, dtype=torch.int64)
    accept_index = torch.full((1, n + 1), -1, dtype=torch.int64)
    accept_token_num = torch.zeros(1, dtype=torch.int64)
    tree_speculative_sampling_target_only(
        predicts, accept_index, accept_token_num, candidates, retrive_index,
        retrive_next_token, retrive_next_sibling, torch.rand(1, nodes, dtype=p.dtype),
        torch.rand(1, dtype=p.dtype), target_probs, draft_probs, threshold_acc=threshold_acc)
    accepted_nodes = accept_index[0, :int(accept_token_num[0]) + 1]
    return predicts[accepted_nodes]


def tree(p, q):
    """Target-only tree verification with distinct siblings (lossless)."""
    return _one_request(p, q)


def tree_siblings_with_replacement(p, q):
    """Siblings drawn with replacement: a token can be tried twice (a bug: lossy)."""
    return _one_request(p, q, replacement=True)


def tree_relaxed_threshold(p, q):
    """Acceptance relaxed by ``threshold_acc = 0.5`` (lossy)."""
    return _one_request(p, q, threshold_acc=0.5)
