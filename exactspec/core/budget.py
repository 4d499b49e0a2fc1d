"""Budgets for exact work: sizes estimated before the work is done, refused above the budget.

An exact power ``x**k`` of a rational has about ``k`` times the bits of ``x``; a file is read
up to a byte cap; a decimal exponent is bounded before the number is built.  Each refusal is a
:class:`~exactspec.core.errors.TooLarge` naming the estimate, the budget and an alternative.

>>> from fractions import Fraction
>>> power_bits(Fraction(4, 5), 10)
30
>>> check_power(Fraction(4, 5), 10**9, "g_k")
Traceback (most recent call last):
...
exactspec.core.errors.TooLarge: g_k: (4/5)**1000000000 has about 903,089,987 digits exactly, over the budget of 1,000,000 digits: use --backend numpy (float64 estimates) or a smaller k
"""

from __future__ import annotations

import math
from fractions import Fraction

from .errors import TooLarge

__all__ = ["MAX_EXACT_DIGITS", "MAX_FILE_BYTES", "MAX_EXPONENT", "power_bits", "check_power",
           "digits_of_bits"]

MAX_EXACT_DIGITS = 10**6       # one exact number may have this many decimal digits
MAX_FILE_BYTES = 64 * 2**20    # a distribution file is read up to 64 MiB
MAX_EXPONENT = 10_000          # decimal exponents in input text: |e| <= 10,000


def digits_of_bits(bits: int) -> int:
    """Decimal digits of a number with ``bits`` bits (rounded up)."""
    return math.ceil(bits * math.log10(2))


def power_bits(x, k: int) -> int:
    """About how many bits ``x**k`` has (numerator or denominator, the larger), for exact ``x``."""
    x = Fraction(x)
    if x == 0 or abs(x) == 1:
        return 1
    return k * max(abs(x.numerator).bit_length(), x.denominator.bit_length())


def check_power(x, k: int, what: str) -> None:
    """Refuse ``x**k`` when its exact value would have more than :data:`MAX_EXACT_DIGITS` digits."""
    if not isinstance(x, (int, Fraction)):
        return
    digits = digits_of_bits(power_bits(x, k))
    if digits > MAX_EXACT_DIGITS:
        raise TooLarge(f"{what}: ({x})**{k} has about {digits:,} digits exactly, over the budget "
                       f"of {MAX_EXACT_DIGITS:,} digits: use --backend numpy (float64 estimates) "
                       "or a smaller k", estimate=digits, budget=MAX_EXACT_DIGITS)
