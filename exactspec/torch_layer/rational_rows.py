"""Rows of exact rationals computed on their numerators and denominators.

An elementwise operation of two rows of ``Fraction``\\ s (``p[x] / q[x]`` over a draft axis,
``torch.maximum`` of two rows) computed by integers: the same reduced fractions and the same
bools as the operators, one gcd each, without the operators' type dispatch
(:func:`rational_row`, :func:`rational_extreme`).

>>> rational_row(operator.sub, [Fraction(1, 2)], [Fraction(1, 3)])
[Fraction(1, 6)]
"""

from __future__ import annotations

import math
import operator
from fractions import Fraction

from ..core.integer_rows import fraction_of, reduced_fraction

__all__ = ["rational_row", "rational_extreme"]


def _add(xn, xd, yn, yd):
    return fraction_of(xn * yd + yn * xd, xd * yd)


def _sub(xn, xd, yn, yd):
    return fraction_of(xn * yd - yn * xd, xd * yd)


def _mul(xn, xd, yn, yd):
    """The product reduced as ``Fraction`` reduces it: by the gcds across the two operands."""
    g1 = math.gcd(xn, yd)
    if g1 > 1:
        xn //= g1
        yd //= g1
    g2 = math.gcd(yn, xd)
    if g2 > 1:
        yn //= g2
        xd //= g2
    return reduced_fraction(xn * yn, xd * yd)


def _div(xn, xd, yn, yd):
    """The quotient reduced as ``Fraction`` reduces it (``yn != 0``)."""
    g1 = math.gcd(xn, yn)
    if g1 > 1:
        xn //= g1
        yn //= g1
    g2 = math.gcd(yd, xd)
    if g2 > 1:
        xd //= g2
        yd //= g2
    n, d = xn * yd, yn * xd
    return reduced_fraction(-n, -d) if d < 0 else reduced_fraction(n, d)


_ROW_OPS = {operator.add: _add, operator.sub: _sub, operator.mul: _mul,
            operator.truediv: _div,
            operator.lt: lambda xn, xd, yn, yd: xn * yd < yn * xd,
            operator.le: lambda xn, xd, yn, yd: xn * yd <= yn * xd,
            operator.gt: lambda xn, xd, yn, yd: xn * yd > yn * xd,
            operator.ge: lambda xn, xd, yn, yd: xn * yd >= yn * xd,
            operator.eq: lambda xn, xd, yn, yd: xn == yn and xd == yd,
            operator.ne: lambda xn, xd, yn, yd: xn != yn or xd != yd}


def rational_row(op, xs, ys):
    """``[op(x, y) for x, y in zip(xs, ys)]`` for two rows of ``Fraction``\\ s, by integers on
    their numerators and denominators (the same reduced fractions, the same bools, without
    the operators' type dispatch); ``None`` for another operation, a value that is not a
    ``Fraction`` or a division by zero (the caller computes element by element).

    >>> rational_row(operator.truediv, [Fraction(1, 2), Fraction(-3, 4)], [Fraction(3), Fraction(-1, 2)])
    [Fraction(1, 6), Fraction(3, 2)]
    >>> rational_row(operator.lt, [Fraction(1, 3)], [Fraction(1, 2)])
    [True]
    """
    f = _ROW_OPS.get(op)
    if f is None:
        return None
    for row in (xs, ys):
        for v in row:
            if type(v) is not Fraction:
                return None
    if op is operator.truediv and not all(ys):
        return None
    return [f(x._numerator, x._denominator, y._numerator, y._denominator)
            for x, y in zip(xs, ys)]


def rational_extreme(xs, ys, maximum: bool):
    """``max`` (``maximum``) or ``min`` of two rows of ``Fraction``\\ s, element by element,
    taking the second value only when it is strictly larger (smaller), as ``torch.maximum``
    and ``minimum`` take it in the layer; ``None`` where a value is not a ``Fraction``.

    >>> rational_extreme([Fraction(1, 2), Fraction(2)], [Fraction(1), Fraction(1)], False)
    [Fraction(1, 2), Fraction(1, 1)]
    """
    for row in (xs, ys):
        for v in row:
            if type(v) is not Fraction:
                return None
    if maximum:
        return [y if x._numerator * y._denominator < y._numerator * x._denominator else x
                for x, y in zip(xs, ys)]
    return [y if y._numerator * x._denominator < x._numerator * y._denominator else x
            for x, y in zip(xs, ys)]

