"""The number field's remembered signs and products, and its interval bounds by the signs of
the ends: the same answers as a field that remembers nothing, and as sympy at 60 digits."""

import random
from fractions import Fraction

import sympy as sp

from exactspec.bounds.rho.closed_form import rho
from exactspec.engine.algebraic import Algebraic, NumberField, exact_root

X = sp.Symbol("x")


def fields():
    return [exact_root(rho(8).argmax).field,                      # Q(a_8), as in `rho 8`
            exact_root(sp.Poly(X**3 - 2, X).real_roots()[0]).field,
            NumberField([-2, 0, 1], -2, -1),                      # -sqrt 2: a negative interval
            NumberField([Fraction(-1, 4), 1, 1], Fraction(-1, 2), Fraction(1, 2))]  # straddles 0


def random_element(rng, degree):
    return tuple(Fraction(rng.randint(-40, 40), rng.randint(1, 30)) if rng.random() < .8
                 else Fraction(0) for _ in range(degree))


def fresh(field):
    return NumberField(field.minpoly, field.lo, field.hi)


def four_products(field, coeffs):
    a, b = field.lo, field.hi
    lo = hi = coeffs[-1]
    for c in reversed(coeffs[:-1]):
        products = (lo * a, lo * b, hi * a, hi * b)
        lo, hi = min(products) + c, max(products) + c
    return lo, hi


def test_bounds_by_the_signs_of_the_ends_equal_the_four_products():
    rng = random.Random(11)
    for field in fields():
        for _ in range(200):
            coeffs = random_element(rng, field.degree)
            assert field.bounds(coeffs) == four_products(field, coeffs)
        field.refine()
        coeffs = random_element(rng, field.degree)
        assert field.bounds(coeffs) == four_products(field, coeffs)


def test_remembered_signs_equal_a_fresh_field_and_sympy():
    rng = random.Random(12)
    for field in fields():
        roots = [r for r in sp.Poly([sp.Rational(c.numerator, c.denominator)
                                     for c in reversed(field.minpoly)], X).real_roots()
                 if field.lo < r.evalf(30) < field.hi]
        assert len(roots) == 1
        theta = roots[0]
        for _ in range(40):
            coeffs = random_element(rng, field.degree)
            if not any(coeffs[1:]):
                continue
            first = field.sign(coeffs)
            assert field.sign(coeffs) == first == fresh(field).sign(coeffs)
            value = sum(sp.Rational(c.numerator, c.denominator) * theta**i
                        for i, c in enumerate(coeffs))
            assert first == sp.sign(sp.N(value, 60))


def test_remembered_products_equal_fresh_products():
    rng = random.Random(13)
    for field in fields():
        for _ in range(40):
            a, b = random_element(rng, field.degree), random_element(rng, field.degree)
            product = field.multiply(a, b)
            assert field.multiply(a, b) is product                 # remembered
            assert field.multiply(tuple(a), tuple(b)) == product
            assert fresh(field).multiply(a, b) == product == field._multiply(a, b)


def test_comparisons_with_rationals_equal_comparisons_with_lifted_constants():
    rng = random.Random(14)
    for field in fields():
        for _ in range(40):
            x = Algebraic(field, random_element(rng, field.degree))
            for c in (0, 1, -1, Fraction(rng.randint(-9, 9), rng.randint(1, 9))):
                lifted = Algebraic(field, (Fraction(c),) + (Fraction(0),) * (field.degree - 1))
                assert (x < c, x <= c, x > c, x >= c, x == c, x != c) == \
                    (x < lifted, x <= lifted, x > lifted, x >= lifted, x == lifted, x != lifted)
        rational = Algebraic(field, (Fraction(3, 7),) + (Fraction(0),) * (field.degree - 1))
        assert rational == Fraction(3, 7) and rational > 0 and not rational < Fraction(3, 7)
