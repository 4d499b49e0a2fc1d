"""Logarithms of uniforms and of exact numbers, compared exactly: ``log(u) + log(q) < log(p)``.

Kernels often test in log space (vLLM's Model Runner V2 accepts iff ``log p > log u + log q``)
and turn a uniform into an exponential as ``-log(u)``.  A :class:`LogExpr` is a sum
``sum_i c_i log(x_i)`` with integer coefficients over exact positive numbers and explicit
uniforms (or their positive affine views).  Since ``log`` is increasing,
``sum_i c_i log(x_i) < 0`` iff ``prod_i x_i^{c_i} < 1``, and the engine decides the product form:

- no uniform: a comparison of exact numbers;
- one uniform ``x`` with coefficient ``+1`` or ``-1``: ``x < 1/K`` or ``x > K``, an interval split;
- ``log(x) - log(y)``: ``K x < y``, a linear comparison of two uniforms (:mod:`.joint`);
- coefficients all ``+1`` (or all ``-1``) over distinct uniforms, fresh, cut by thresholds or
  extending a running product: a product of uniforms compared with a constant
  (:class:`.joint.Product`, exact with logarithms).

Anything else (a square ``2 log u``, a log mixed with a plain number ``-log(u) < 3``, whose
threshold ``e^-3`` is irrational) is beyond the exact method: ``Undecided``.  ``log(0)`` is
``-inf`` as in the kernels.  In the sampling interpreter uniforms are floats and ``log`` of a
float is a float; a :class:`LogExpr` of numbers only then turns into its float when combined with
one.

>>> from fractions import Fraction
>>> from exactspec.engine.runs import enumerate_runs
>>> from exactspec.engine.races import log
>>> enumerate_runs(lambda s: log(s.uniform()) + log(Fraction(1, 2)) < log(Fraction(1, 3))).law
{True: Fraction(2, 3), False: Fraction(1, 3)}
>>> enumerate_runs(lambda s: -log(s.uniform()) < -log(s.uniform())).law[True]
Fraction(1, 2)
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..core.errors import Undecided
from .joint import Linear, Product, is_view, as_linear

__all__ = ["LogExpr", "log_of"]


def log_of(x):
    """``log(x)``: a :class:`LogExpr` for an exact number or an explicit uniform, ``math.log``
    (``-inf`` at 0) for a float."""
    if isinstance(x, float):
        return math.log(x) if x > 0 else -math.inf
    if is_view(x) or isinstance(x, Linear):
        lin = as_linear(x)
        if len(lin.terms) != 1:
            raise Undecided("the log of a combination of several uniforms is beyond the exact "
                            "method")
        ((u, a),) = lin.terms.items()
        if a < 0:
            raise Undecided("the log of a decreasing view of a uniform (such as 1 - u) is "
                            "beyond the exact method; compare the view itself")
        return LogExpr({_key(u, a, lin.const): 1}, Fraction(1), 0)
    value = Fraction(x)
    if value < 0:
        raise ValueError(f"log of the negative number {value}")
    if value == 0:
        return LogExpr({}, Fraction(1), 1)
    return LogExpr({}, value, 0)


def _key(u, scale, shift):
    return (u, Fraction(scale), Fraction(shift))


class LogExpr:
    """``sum_i c_i log(x_i) + log(K) + z log(0)``: ``terms`` maps ``(uniform, scale, shift)`` to
    its integer coefficient, ``K`` is the exact constant, ``zeros`` the coefficient of
    ``log 0``."""

    __slots__ = ("terms", "K", "zeros")

    def __init__(self, terms: dict, K, zeros: int):
        self.terms = {k: c for k, c in terms.items() if c != 0}
        self.K = K
        self.zeros = zeros

    def _as_log(self, other):
        if isinstance(other, LogExpr):
            return other
        if isinstance(other, (int, Fraction)) and other == 0:
            return LogExpr({}, Fraction(1), 0)          # 0 = log 1
        return None

    def __float__(self):
        if self.terms:
            raise TypeError("a log of a random quantity has no float value in the exact "
                            "interpreter")
        if self.zeros:
            return -math.inf if self.zeros > 0 else math.inf
        return math.log(self.K)

    def _combine(self, other, sign):
        if isinstance(other, float):
            return float(self) + sign * other
        o = self._as_log(other)
        if o is None:
            raise Undecided("adding a plain number to a logarithm is beyond the exact method: "
                            "write the number as log(c)")
        terms = dict(self.terms)
        for k, c in o.terms.items():
            terms[k] = terms.get(k, 0) + sign * c
        K = self.K * o.K if sign > 0 else self.K / o.K
        return LogExpr(terms, K, self.zeros + sign * o.zeros)

    def __add__(self, o): return self._combine(o, 1)
    __radd__ = __add__
    def __sub__(self, o): return self._combine(o, -1)

    def __rsub__(self, o):
        if isinstance(o, float):
            return o - float(self)
        return (-self)._combine(o, 1)

    def __neg__(self):
        return LogExpr({k: -c for k, c in self.terms.items()}, 1 / self.K, -self.zeros)

    def __mul__(self, k):
        if isinstance(k, float):
            return float(self) * k
        if isinstance(k, bool) or not isinstance(k, int):
            raise Undecided("a logarithm times a non-integer is beyond the exact method")
        return LogExpr({t: c * k for t, c in self.terms.items()}, self.K ** k, self.zeros * k)

    __rmul__ = __mul__

    def _decide(self, other, strict: bool, flip: bool) -> bool:
        if isinstance(other, float):
            a, b = (other, float(self)) if flip else (float(self), other)
            return a < b if strict else a <= b
        o = self._as_log(other)
        if o is None:
            raise Undecided("comparing a logarithm with a plain number is beyond the exact "
                            "method (its threshold is irrational): compare with log(c)")
        diff = (o - self) if flip else (self - o)        # decide diff < 0 (or <= 0)
        return _below_zero(diff, strict)

    def __lt__(self, o): return self._decide(o, True, False)
    def __le__(self, o): return self._decide(o, False, False)
    def __gt__(self, o): return self._decide(o, True, True)
    def __ge__(self, o): return self._decide(o, False, True)

    def __bool__(self):
        raise TypeError("a logarithm has no truth value; compare it")

    def __repr__(self):
        parts = [f"{c}*log({s}*u{u.ident}+{b})" for (u, s, b), c in self.terms.items()]
        return " + ".join(parts + [f"log({self.K})"] + ([f"{self.zeros}*log(0)"]
                                                          if self.zeros else []))


def _below_zero(d: LogExpr, strict: bool) -> bool:
    """Decide ``prod x_i^{c_i} K 0^z < 1`` (or ``<= 1``)."""
    if d.zeros > 0:
        return True                                      # -inf
    if d.zeros < 0:
        return False                                     # +inf
    views = [(u * s + b if (s != 1 or b != 0) else u, c) for (u, s, b), c in d.terms.items()]
    K = d.K
    if not views:
        return K < 1 if strict else K <= 1
    coeffs = sorted(c for _, c in views)
    if len(views) == 1 and coeffs[0] == 1:               # x K < 1
        x = views[0][0]
        return (x < 1 / K) if strict else (x <= 1 / K)
    if len(views) == 1 and coeffs[0] == -1:              # K < x
        x = views[0][0]
        return (x > K) if strict else (x >= K)
    if coeffs == [-1, 1]:                                # K x / y < 1  <=>  K x < y
        x = next(v for v, c in views if c == 1)
        y = next(v for v, c in views if c == -1)
        return (K * x < y) if strict else (K * x <= y)
    if all(c == 1 for c in coeffs):                      # prod x < 1 / K
        product = Product.of(views[0][0], views[1][0])
        for v, _ in views[2:]:
            product = product * v
        return (product < 1 / K) if strict else (product <= 1 / K)
    if all(c == -1 for c in coeffs):                     # prod x > K
        product = Product.of(views[0][0], views[1][0])
        for v, _ in views[2:]:
            product = product * v
        return (product > K) if strict else (product >= K)
    raise Undecided("this comparison of logarithms of uniforms (a power, or a mixed product "
                    "and ratio) is beyond the exact method")
