"""The one-draft rule as a float kernel writes it, three ways (run with --arith float32).

    exactspec verify examples/float_kernels.py:accept_le --p 1/2,3/10,1/5 --q 1/5,1/5,3/5 --arith float32
    exactspec verify examples/float_kernels.py:accept_lt --p 1/2,3/10,1/5 --q 1/5,1/5,3/5 --arith float32
    exactspec verify examples/float_kernels.py:softmax_residual --p 1/2,3/10,1/5 --q 1/5,1/5,3/5 --arith float32

Under ``--arith`` every probability the code touches is a value of that dtype and every
operation on it is rounded as the dtype rounds; ``s.uniform()`` is ``torch.rand``.
"""

from exactspec import Dist


def _residual(s, p, q):
    """max(p - q, 0), normalised by its sum (summed left to right, in the code's dtype)."""
    mass = [max(p[t] - q[t], 0) for t in p.labels]
    total = sum(mass[1:], mass[0])
    return Dist([m / total for m in mass], p.labels, check=False)


def accept_le(s, p, q):
    """Accept when ``u <= p/q`` (a grid uniform is 0 with probability 2**-24: one grid point
    too many is accepted)."""
    x = s.draft(q)
    if s.uniform() <= p[x] / q[x]:
        return s.accept(x)
    return s.pick(_residual(s, p, q), s.uniform())


def accept_lt(s, p, q):
    """Accept when ``u < p/q``: the convention of the exact rule."""
    x = s.draft(q)
    if s.uniform() < p[x] / q[x]:
        return s.accept(x)
    return s.pick(_residual(s, p, q), s.uniform())


def softmax_residual(s, p, q):
    """The residual normalised with a softmax of p - q, as if the differences were logits:
    wrong in any arithmetic."""
    x = s.draft(q)
    if s.uniform() < p[x] / q[x]:
        return s.accept(x)
    weights = s.softmax([max(p[t] - q[t], 0) for t in p.labels])
    return s.pick(Dist(weights, p.labels, check=False), s.uniform())
