"""A user's own verifiers, written against the sampling interface ``s``.

    exactspec verify examples/my_rule.py:my_rule --p 1/2,3/10,1/5 --q 1/5,1/5,3/5
    exactspec verify examples/my_rule.py:shortcut --search
"""

from exactspec import residual


def my_rule(s, p, q):
    """The lossless rule, as a kernel writes it: one uniform to accept, a fresh one to resample."""
    x = s.draft(q)
    u = s.uniform()
    if u < p[x] / q[x]:
        return s.accept(x)
    return s.pick(residual(p, q), s.uniform())


def shortcut(s, p, q):
    """A tempting shortcut: reuse the accept test's uniform for the resample (lossy)."""
    x = s.draft(q)
    u = s.uniform()
    if u < p[x] / q[x]:
        return s.accept(x)
    return s.pick(residual(p, q), u)
