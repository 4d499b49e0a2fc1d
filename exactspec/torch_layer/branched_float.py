"""The draft as a tensor axis under ``--arith``: the float run of a PyTorch rule, vectorised.

:class:`VectorFloatSampler` is :class:`~.branched.VectorSampler` with the arithmetic of
:class:`~exactspec.engine.float_sampler.FloatSampler`: the rows reach the rule rounded into the
format, every branched value is the format's value the path run computes on that branch
(:class:`~.branched.Branched` of :class:`~exactspec.engine.floats.FloatValue`), and the
uniforms are the format's generator grid (``j / 2**24`` for ``float32``).

- A fresh uniform ``u`` compared with a branched threshold ``c`` (``u < c``, ``u <= c``, or a
  monotone rounded expression of ``u`` against ``c``) is one branch point whose outcome
  ``True`` has, on draft branch ``x``, the probability of the grid points where the path run's
  comparison holds: ``ceil(c[x] N) / N`` for ``u < c[x]`` and ``(floor(c[x] N) + 1) / N`` for
  ``u <= c[x]`` (clipped to ``[0, 1]``, ``N`` the grid; a NaN threshold holds nowhere), and
  for an expression ``f(u)`` the cut the path run finds by bisection on the grid
  (:meth:`~exactspec.engine.float_sampler.FloatSampler._cut_point`), branch by branch.
- A race over a row of the format's values (``w / E``, then ``argmax``) and a
  ``torch.multinomial(w, 1)`` draw are the law ``w / sum(w)`` at the weights' exact binary
  values, as the path run takes them (its noise continuous:
  :mod:`exactspec.engine.float_sampler`).

Anything else falls back to the path enumeration, as in the exact run.
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..engine.float_sampler import FloatSampler, Expr
from ..engine.floats import FloatValue
from ..core.signals import CannotProceed
from .branched import Branched, VectorSampler

__all__ = ["VectorFloatSampler"]


class _Identity(Expr):
    """The uniform itself (``f(u) = u``): its comparisons need no bisection."""

    __slots__ = ()
    identity = True


class VectorFloatSampler(VectorSampler, FloatSampler):
    """The vectorised interpreter with the rule's arithmetic in the format ``arith``."""

    def __init__(self, size: int, arith, grid: int | None = None,
                 sum_order: str | None = None, split_values: bool = False):
        FloatSampler.__init__(self, arith, grid, sum_order=sum_order)
        self.size = size
        self.split_values = split_values

    def uniform(self):
        base = FloatSampler.uniform(self).base
        return _Identity(base, lambda v: v, True)

    def _compare(self, expr, c, strict: bool) -> bool:
        if not isinstance(c, Branched):
            self._check_fresh(expr.base)
            return FloatSampler._compare(self, expr, c, strict)
        base = expr.base
        self._check_fresh(base)
        if base.linked or base.spent or base.lo != 0 or base.hi != 1:
            raise CannotProceed("a branched comparison of a uniform already split")
        n = self.grid
        cuts = []
        # the grid's points j / N are values of the format when N is a power of two of at most
        # its precision: u itself is then compared as it is, without a bisection
        exact_grid = n & (n - 1) == 0 and n <= 1 << self.fmt.precision
        if getattr(expr, "identity", False) and exact_grid:
            for x, never in zip(c.values, self._never):
                if never:
                    cuts.append(0)
                    continue
                v = self._threshold(x)
                if v != v:
                    k = 0
                elif v == math.inf or v == -math.inf:
                    k = n if v > 0 else 0
                else:
                    k = math.ceil(v * n) if strict else math.floor(v * n) + 1
                cuts.append(0 if k < 0 else n if k > n else k)
        else:
            if strict:
                g = expr
            else:          # f(u) <= c iff not (-f(u) < -c): the path run's own form
                g = Expr(base, lambda v, f=expr.f: -f(v), not expr.increasing)
            for x, never in zip(c.values, self._never):
                if never:
                    cuts.append(0)
                    continue
                v = FloatValue(self._threshold(x), self.fmt)
                t = self._cut_point(g, v if strict else -v)
                cuts.append(int(t * n))
        # the path run's comparison holds for u below the cut (f increasing) or from it on
        holds = [Fraction(0) if never else
                 Fraction(k, n) if expr.increasing else 1 - Fraction(k, n)
                 for k, never in zip(cuts, self._never)]
        sign = "<" if strict else "<="
        return self._branched_split(base, holds, f"f(u{base.ident}) {sign} c[draft]")

    def _threshold(self, x) -> float:
        """A branch's threshold as the format holds it (a Python float)."""
        if isinstance(x, FloatValue):
            if x.fmt is not self.fmt:
                raise CannotProceed("a threshold of another format")
            return x.value
        if isinstance(x, (int, Fraction)) and not isinstance(x, bool):
            return self.fmt.round(x)
        raise CannotProceed("a branched threshold that is not a number of the format")

