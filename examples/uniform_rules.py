"""One-position rules that combine uniforms as kernels do.

    exactspec verify examples/uniform_rules.py:flipped --p 1/2,1/3,1/6 --q 1/6,1/6,2/3
    exactspec verify examples/uniform_rules.py:two_uniforms --p 1/2,1/3,1/6 --q 1/6,1/6,2/3
    exactspec verify examples/uniform_rules.py:two_uniforms --p 1/2,1/3,1/6 --q 1/6,1/6,2/3 --grid 1000

``flipped`` writes the test and the resample with ``1 - u`` (lossless with continuous uniforms;
on a grid ``1 - u`` can be exactly 1, past the last cumulative sum, and the engine says so).
``two_uniforms`` multiplies two uniforms where one belongs: lossy, with an exact TV that
contains ``log 2``; on a grid the TV is a rational that approaches it as the grid grows.
"""

from exactspec import residual


def flipped(s, p, q):
    """Accept iff 1 - u > 1 - p/q; resample at 1 - v (lossless)."""
    x = s.draft(q)
    if 1 - s.uniform() > 1 - p[x] / q[x]:
        return s.accept(x)
    return s.pick(residual(p, q), 1 - s.uniform())


def two_uniforms(s, p, q):
    """Accept iff u * v < p/q (lossy: the product of two uniforms is not uniform)."""
    x = s.draft(q)
    if s.uniform() * s.uniform() < p[x] / q[x]:
        return s.accept(x)
    return s.pick(residual(p, q), s.uniform())
