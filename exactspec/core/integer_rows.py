"""Exact rows as integers over one common denominator.

A row of ``Fraction``s ``x_i = n_i / d_i`` is the integer row ``X_i = x_i D`` over
``D = lcm(d_i)``.  Sums, prefix sums and comparisons of the row are then integer operations,
which are far cheaper than adding ``Fraction``s one at a time (each addition reduces by a
gcd).  Float rows are the main case: every float is a dyadic rational, so ``D`` is one power
of two and a row of 152,064 floats has only a few hundred distinct denominators.  Rows whose
common denominator would be huge (many unrelated denominators) are left to ``Fraction``s:
:func:`integer_row` returns ``None`` above :data:`MAX_DENOMINATOR_BITS`.

>>> integer_row([Fraction(1, 2), Fraction(3, 8), Fraction(1, 8)])
([4, 3, 1], 8)
>>> exact_sum([Fraction(1, 3), Fraction(1, 6), Fraction(1, 4)])
Fraction(3, 4)
"""

from __future__ import annotations

import math
from fractions import Fraction

__all__ = ["INTEGER_ROW_MIN", "MAX_DENOMINATOR_BITS", "common_denominator", "lcm_within_budget",
           "integer_row", "exact_sum", "scaled_rows_sum",
           "fraction_of", "reduced_fraction", "float_fraction", "fractions_over"]

#: Rows shorter than this stay with ``Fraction``s (there the integer bookkeeping costs more
#: than it saves); :func:`exactspec.core.dist.integer_row_of` returns ``None`` for them.
INTEGER_ROW_MIN = 64

#: The largest common denominator (in bits) worth computing with; a float row needs at most
#: about 1,100 bits (the smallest subnormal is 2^-1074).
MAX_DENOMINATOR_BITS = 8192


def common_denominator(values) -> int | None:
    """``lcm`` of the denominators of ``Fraction`` values, or ``None`` when a value is not a
    ``Fraction`` or ``int`` or the lcm would exceed :data:`MAX_DENOMINATOR_BITS` bits.

    >>> common_denominator([Fraction(1, 4), Fraction(1, 6), 2])
    12
    """
    denominators = set()
    for v in values:
        t = type(v)
        if t is Fraction:
            denominators.add(v._denominator)
        elif t is not int:
            return None
    return lcm_within_budget(denominators)


def lcm_within_budget(denominators) -> int | None:
    """``lcm`` of positive integers, or ``None`` past :data:`MAX_DENOMINATOR_BITS` bits.

    >>> lcm_within_budget({4, 6}), lcm_within_budget([2 ** 9000])
    (12, None)
    """
    d = 1
    for x in denominators:
        d = math.lcm(d, x)
        if d.bit_length() > MAX_DENOMINATOR_BITS:
            return None
    return d


def integer_row(values) -> tuple[list[int], int] | None:
    """``([x_i * D], D)`` with ``D`` the common denominator, or ``None`` (see
    :func:`common_denominator`).

    Equivalent to ``[x * D for x in values]`` with every product an integer.
    """
    values = list(values)
    d = common_denominator(values)
    if d is None:
        return None
    factor: dict[int, int] = {}
    out = []
    for v in values:
        if type(v) is not Fraction:             # an int
            out.append(v * d)
            continue
        den = v._denominator
        f = factor.get(den)
        if f is None:
            f = factor[den] = d // den
        out.append(v._numerator * f)
    return out, d


def exact_sum(values, start=Fraction(0)):
    """The exact sum of ``values``: by integers over the common denominator when the values
    are ``Fraction`` values, otherwise (symbolic values) one term at a time.

    Equivalent to ``sum(values, start)``.

    >>> exact_sum([Fraction(1, 2), Fraction(1, 4)], Fraction(1, 4))
    Fraction(1, 1)
    """
    values = list(values)
    row = integer_row(values) if type(start) in (Fraction, int) else None
    if row is None:
        return sum(values, start)
    ints, d = row
    return start + Fraction(sum(ints), d)


def scaled_rows_sum(terms, n: int) -> list[Fraction] | None:
    """``sum_k c_k r_k`` for ``terms = [(c_k, r_k), ...]``: rationals ``c_k`` and exact rows
    ``r_k`` of length ``n``, each a row of ``Fraction``/``int`` values or its integer row
    ``(numerators, denominator)``, by integers over one common denominator; ``None`` where a
    scale or a row is not rational (the caller adds those as they are).  A term
    ``(c_k, r_k, s_k)`` is a shorter row placed at ``s_k`` (zeros elsewhere), added where it
    lies: its cost is its own length, not ``n``.

    >>> scaled_rows_sum([(Fraction(1, 2), [Fraction(1, 3), Fraction(2, 3)]), (1, ([2, 0], 2))], 2)
    [Fraction(7, 6), Fraction(1, 3)]
    >>> scaled_rows_sum([(Fraction(1, 2), [Fraction(1)], 2), (Fraction(1, 2), [1, 0])], 3)
    [Fraction(1, 2), Fraction(0, 1), Fraction(1, 2)]
    """
    scaled = []
    common = 1
    for term in terms:
        c, row = term[0], term[1]
        r = row if type(row) is tuple and len(row) == 2 and type(row[0]) is list else \
            integer_row(row)
        if r is None or type(c) not in (int, Fraction):
            return None
        c = Fraction(c)
        d = r[1] * c.denominator
        scaled.append((r[0], c.numerator, d, term[2] if len(term) > 2 else 0))
        common = math.lcm(common, d)
    total = [0] * n
    for ints, a, d, shift in scaled:
        k = a * (common // d)
        if k:
            end = shift + len(ints)
            total[shift:end] = [t + i * k for t, i in zip(total[shift:end], ints)]
    return fractions_over(total, common)


def fraction_of(numerator: int, denominator: int) -> Fraction:
    """``Fraction(numerator, denominator)`` (``denominator > 0``), reduced by one gcd without
    the general constructor's type dispatch (the bulk of the time on long rows).

    >>> fraction_of(6, 8), fraction_of(-3, 9), fraction_of(0, 5)
    (Fraction(3, 4), Fraction(-1, 3), Fraction(0, 1))
    """
    g = math.gcd(numerator, denominator)
    if g != 1:
        numerator //= g
        denominator //= g
    return reduced_fraction(numerator, denominator)


def reduced_fraction(numerator: int, denominator: int) -> Fraction:
    """``Fraction(numerator, denominator)`` of a numerator and a positive denominator already
    in lowest terms: no gcd, no type dispatch.

    >>> reduced_fraction(-3, 4)
    Fraction(-3, 4)
    """
    f = object.__new__(Fraction)
    f._numerator = numerator
    f._denominator = denominator
    return f


def float_fraction(x: float) -> Fraction:
    """The exact value of a finite float, ``Fraction(x)``, without the constructor's dispatch.

    >>> float_fraction(0.1) == Fraction(0.1), float_fraction(-0.5)
    (True, Fraction(-1, 2))
    """
    return reduced_fraction(*x.as_integer_ratio())        # already in lowest terms


def fractions_over(numerators, denominator: int) -> list[Fraction]:
    """``[Fraction(n, denominator) for n in numerators]``, each in lowest terms.

    >>> fractions_over([2, 3, 0], 4)
    [Fraction(1, 2), Fraction(3, 4), Fraction(0, 1)]
    """
    return [fraction_of(n, denominator) for n in numerators]


def digit_ratio(text: str) -> tuple[int, int] | None:
    """``"a/b"`` or ``"a"`` written in digits alone (``b`` not starting with 0) as
    ``(a, b)``; ``None`` for any other text.

    >>> digit_ratio("3/7"), digit_ratio("12"), digit_ratio("1/07"), digit_ratio("-1/2")
    ((3, 7), (12, 1), None, None)
    """
    a, slash, b = text.partition("/")
    if not slash:
        b = "1"
    if a.isdecimal() and b.isdecimal() and b[0] != "0":
        return int(a), int(b)
    return None


def ratio_texts_row(values) -> tuple[list[int], int] | None:
    """Texts ``"a/b"`` and ``"a"`` of digits (as a JSON file of a long row writes them) as
    an integer row over their common denominator, without a ``Fraction`` each (each distinct
    text read once: a long row repeats its values); ``None`` for any other entry or a common
    denominator over the budget (the general path reads them).

    >>> ratio_texts_row(["1/2", "1/3", "1/6", "1/3"])
    ([3, 2, 1, 2], 6)
    >>> ratio_texts_row(["1/2", 0.5]) is None
    True
    """
    try:
        distinct = dict.fromkeys(values)
    except TypeError:                               # an unhashable entry: not a text
        return None
    for v in distinct:
        parts = digit_ratio(v) if type(v) is str else None
        if parts is None:
            return None
        distinct[v] = parts
    d = lcm_within_budget({b for _, b in distinct.values()})
    if d is None:
        return None
    scaled = {v: n * (d // b) for v, (n, b) in distinct.items()}
    return list(map(scaled.__getitem__, values)), d
