"""The samplers under test: one-position rejection samplers as inference engines write them.

Each is a plain function ``f(s, p, q)`` written against exactspec's sampler interface ``s``:
``s.draft(q)`` is the draft token, ``s.uniform()`` a uniform random number (a float32
``torch.rand`` value under ``arith="float32"``), ``s.pick(weights, u)`` an inverse-CDF lookup.
The arithmetic is whatever ``p`` and ``q`` hold: exact fractions, or float32 values rounded
as a kernel rounds them.

- :func:`rejection_sample`: the correct rule (accept when ``u < p(x) / q(x)``, else resample
  from ``norm(max(0, p - q))``);
- :func:`rejection_sample_le`: the same with ``u <= p(x) / q(x)``, as some kernels write it:
  a zero uniform then accepts a draft whose target probability is 0;
- :func:`resample_from_target`: broken, resamples from ``p`` instead of the residual;
- :func:`top_k_rejection_sample`: the target filtered to its top ``TOP_K`` tokens first.

Below them, randomized checks as an engine's unit tests assert them on each sample.  Each has a
rule's signature ``check(s, p, q)``: it runs a sampler on ``s`` and returns whether the
assertion holds on that sample.  ``exactspec.testing.probability(check, p, q,
arith="float32")``, or ``exactspec probability engine_samplers.py:NAME --arith float32``, is
the exact probability that the assertion holds on one draw.
"""

from exactspec import Dist

TOP_K = 2


def _residual(p, q):
    """``norm(max(0, p - q))``, computed in the arithmetic of ``p`` and ``q``."""
    weights = [max(p[t] - q[t], 0) for t in p.labels]
    total = 0
    for w in weights:
        total = total + w
    return Dist([w / total for w in weights], p.labels, check=False)


def rejection_sample(s, p, q):
    """The correct rule: accept the draft when ``u < p(x) / q(x)``."""
    x = s.draft(q)
    if s.uniform() < p[x] / q[x]:
        return x
    return s.pick(_residual(p, q), s.uniform(), "residual")


def rejection_sample_le(s, p, q):
    """Accept the draft when ``u <= p(x) / q(x)``: ``u = 0`` accepts a token ``p`` rules out."""
    x = s.draft(q)
    if s.uniform() <= p[x] / q[x]:
        return x
    return s.pick(_residual(p, q), s.uniform(), "residual")


def resample_from_target(s, p, q):
    """Broken: after a rejection, draw from ``p`` instead of the residual."""
    x = s.draft(q)
    if s.uniform() < p[x] / q[x]:
        return x
    return s.pick(p, s.uniform(), "resample")


def top_k_labels(p, top_k=TOP_K):
    """The ``top_k`` most likely tokens of ``p`` (ties to the lower token)."""
    order = sorted(p.labels, key=lambda t: (-p[t], p.index(t)))
    return set(order[:top_k])


def top_k_target(p, top_k=TOP_K):
    """``p`` restricted to its top ``top_k`` tokens and renormalised (in ``p``'s arithmetic)."""
    keep = top_k_labels(p, top_k)
    total = 0
    for t in p.labels:
        if t in keep:
            total = total + p[t]
    return Dist([p[t] / total if t in keep else 0 * p[t] for t in p.labels], p.labels,
                check=False)


def top_k_rejection_sample(s, p, q, strict=True):
    """Top-k sampling speculated: the rule run against the top-k target."""
    target = top_k_target(p)
    x = s.draft(q)
    u = s.uniform()
    ratio = target[x] / q[x]
    if (u < ratio) if strict else (u <= ratio):
        return x
    return s.pick(_residual(target, q), s.uniform(), "residual")


def top_k_rejection_sample_le(s, p, q):
    """:func:`top_k_rejection_sample` with the ``<=`` comparison."""
    return top_k_rejection_sample(s, p, q, strict=False)


# -- checks ------------------------------------------------------------------------------


def emitted_in_top_k_le(s, p, q):
    """Every emitted token is in the target's top-k (the ``<=`` kernel)."""
    return top_k_rejection_sample_le(s, p, q) in top_k_labels(p)


def emitted_in_top_k(s, p, q):
    """Every emitted token is in the target's top-k (the ``<`` kernel)."""
    return top_k_rejection_sample(s, p, q) in top_k_labels(p)


def accepted_count_matches_reference(s, p, q):
    """The kernel's accepted count (``u < p(x) / q(x)``) equals the reference's, computed
    another way (``u * q(x) < p(x)``), on the same draft and uniform."""
    x = s.draft(q)
    u = s.uniform()
    accepted = 1 if u < p[x] / q[x] else 0
    reference = 1 if u * q[x] < p[x] else 0
    return accepted == reference


def _greedy(p):
    return max(p.labels, key=lambda t: p[t])


def greedy_when_one_hot_le(s, p, q):
    """With a one-hot target, the output is the greedy token (the ``<=`` kernel)."""
    return rejection_sample_le(s, p, q) == _greedy(p)


def greedy_when_one_hot(s, p, q):
    """With a one-hot target, the output is the greedy token (the ``<`` kernel)."""
    return rejection_sample(s, p, q) == _greedy(p)


def zero_target_never_emitted_le(s, p, q):
    """A token whose target probability is 0 is never emitted (the ``<=`` kernel)."""
    y = rejection_sample_le(s, p, q)
    assert p[y] > 0, f"emitted token {y}, whose target probability is 0"
    return True
