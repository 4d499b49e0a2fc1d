"""Exact sums by key, kept as integer numerators per denominator.

The weights of one enumeration share few denominators (a row given over one common
denominator, its products with a few coins), so a sum by key is kept as integer numerators
per ``(key, denominator)`` and each key's sum formed once, at the end: adding a ``Fraction``
is then an integer addition, not a ``Fraction`` one.

>>> sums = ExactSums()
>>> sums.add("a", Fraction(1, 3)); sums.add("a", Fraction(1, 6)); sums.add_product("b", Fraction(1, 2), Fraction(2, 3))
>>> sums.totals() == {"a": Fraction(1, 2), "b": Fraction(1, 3)}
True
"""

from __future__ import annotations

from fractions import Fraction

from ..core.integer_rows import fraction_of

__all__ = ["ExactSums"]


class ExactSums:
    """Exact sums by key, kept as integer numerators per (key, denominator): adding a
    ``Fraction`` is an integer addition, not a ``Fraction`` one (the weights of one
    enumeration share few denominators); each key's sum is formed once, at the end."""

    __slots__ = ("parts", "other")

    def __init__(self):
        self.parts: dict = {}        # (key, denominator) -> numerator
        self.other: dict = {}        # key -> a sum of weights that are not Fractions

    def add(self, key, w) -> None:
        if type(w) is Fraction:
            part = (key, w.denominator)
            self.parts[part] = self.parts.get(part, 0) + w.numerator
        else:
            self.other[key] = self.other.get(key, 0) + w

    def add_product(self, key, w, m) -> None:
        """Add ``w * m`` (the product unreduced when both are Fractions)."""
        if type(w) is Fraction and type(m) is Fraction:
            part = (key, w.denominator * m.denominator)
            self.parts[part] = self.parts.get(part, 0) + w.numerator * m.numerator
        else:
            self.other[key] = self.other.get(key, 0) + w * m

    def totals(self) -> dict:
        """Each key's exact sum (its parts added over their integers, one gcd at the end)."""
        by_key: dict = {}
        for (key, denominator), numerator in self.parts.items():
            seen = by_key.get(key)
            if seen is None:
                by_key[key] = (numerator, denominator)
            elif seen[1] == denominator:
                by_key[key] = (seen[0] + numerator, denominator)
            else:
                by_key[key] = (seen[0] * denominator + numerator * seen[1],
                               seen[1] * denominator)
        out = dict(self.other)
        for key, (numerator, denominator) in by_key.items():
            total = fraction_of(numerator, denominator)
            out[key] = out[key] + total if key in out else total
        return out

    @staticmethod
    def grand_total(*sums: "ExactSums"):
        """The sum over every key of every one of ``sums`` (parts of one denominator added
        as integers first)."""
        parts: dict = {}
        total = Fraction(0)
        for each in sums:
            for (_, denominator), numerator in each.parts.items():
                parts[denominator] = parts.get(denominator, 0) + numerator
            for weight in each.other.values():
                total = total + weight
        for denominator, numerator in parts.items():
            total = total + Fraction(numerator, denominator)
        return total
