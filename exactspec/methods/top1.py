"""``top1``: accept the draft iff it is the target's argmax, else output the argmax (lossy).

All output mass lands on ``argmax p`` (ties by token order): sampling silently becomes greedy
decoding.
"""

from .base import Method


def argmax(dist):
    """The first label of largest probability."""
    best = dist.labels[0]
    for lab in dist.labels[1:]:
        if dist[lab] > dist[best]:
            best = lab
    return best


def top1(s, p, q, k=1):
    """Accept the draft only when it matches the target's top choice."""
    x = s.draft(q)
    top = argmax(p)
    if x == top:
        return s.accept(x)
    return top


METHOD = Method("top1", top1, claimed_lossless=False, k_values=(1,),
                summary="accepts only the target's argmax: greedy decoding (lossy)")
