"""rho_k, its limit and monotonicity, and the tight two-token family (exactspec.bounds.rho.closed_form).

Expected values are sympy rationals or exact algebraic numbers; floats appear only in the
independent grid maximisation, where they are the subject.
"""

from fractions import Fraction
from itertools import combinations

import mpmath
import pytest
import sympy as sp

from exactspec.bounds.rho.closed_form import (
    Rho,
    certified_sign,
    rational_tight_instances,
    rho,
    rho_closed_form,
    rho_decreasing,
    rho_limit,
    tight_family,
    tight_instance,
)
from exactspec.core.errors import InvalidInput


# --- rho_k -----------------------------------------------------------------------------------

def test_rho_1_is_one_and_has_no_unique_maximiser():
    r = rho(1)
    assert isinstance(r, Rho)
    assert r.k == 1 and r.rho == 1 and r.argmax is None


def test_rho_2_is_23_27_at_two_thirds():
    r = rho(2)
    assert r.rho == sp.Rational(23, 27)
    assert r.argmax == sp.Rational(2, 3)


def test_rho_3_is_one_minus_six_root_fifteen_over_125():
    r = rho(3)
    assert sp.simplify(r.rho - (1 - 6 * sp.sqrt(15) / 125)) == 0
    assert sp.simplify(r.argmax - sp.sqrt(sp.Rational(3, 5))) == 0


def test_derivation_lists_endpoints_stationary_point_and_curvature():
    lines = rho(3).derivation
    text = "\n".join(lines)
    assert "f(0) = 0" in text and "f(1) = 0" in text
    assert "3 - 5*a**2 = 0" in text
    assert "< 0: a strict maximum" in text
    assert lines[-1] == "rho_3 = 1 - f(sqrt(15)/5) = 1 - 6*sqrt(15)/125"


@pytest.mark.parametrize("k", range(2, 9))
def test_rho_agrees_with_closed_form_and_stationary_equation(k):
    r = rho(k)
    a = r.argmax
    # the stationary-point equation k = (2k-1) a^(k-1), exactly
    assert sp.simplify(a**(k - 1) - sp.Rational(k, 2 * k - 1)) == 0
    closed = rho_closed_form()
    assert sp.simplify(r.rho - closed.rho.subs(closed.k, k)) == 0
    # (1 - rho_k)^(k-1) is the rational ((k-1)/(2k-1))^(k-1) (k/(2k-1))^k
    power = sp.nsimplify(sp.expand((1 - r.rho)**(k - 1)))
    assert power == sp.Rational(k - 1, 2 * k - 1)**(k - 1) * sp.Rational(k, 2 * k - 1)**k
    assert 0 < certified_sign(1 - r.rho) and certified_sign(r.rho - sp.Rational(3, 4)) > 0


@pytest.mark.parametrize("k, message", [
    (0, "k=0: need at least one draft"),
    (-3, "k=-3: need at least one draft"),
    (2.0, "k=2.0: must be an integer"),
    (sp.Rational(5, 2), "k=5/2: must be an integer"),
    ("2", "k='2': must be an integer"),
    (True, "k=True: must be an integer"),
    (None, "k=None: must be an integer"),
])
def test_invalid_k(k, message):
    for function in (rho, tight_instance, tight_family):
        with pytest.raises(InvalidInput, match=message):
            function(k)


def test_invalid_rational_instance_arguments():
    with pytest.raises(InvalidInput, match="k=1: every a is tight"):
        rational_tight_instances(1, 3)
    with pytest.raises(InvalidInput, match="n=0"):
        rational_tight_instances(2, 0)
    with pytest.raises(InvalidInput, match="k_max=0: need at least one draft"):
        rho_decreasing(0)


# --- limit and monotonicity ------------------------------------------------------------------

def test_limit_is_three_quarters():
    lim = rho_limit()
    assert lim.value == sp.Rational(3, 4)
    assert "sympy.limit" in lim.method


def test_rho_decreasing_symbolically_for_all_k():
    m = rho_decreasing(60)
    assert m.for_all_k
    assert m.checked == (1, 60)
    k = rho_closed_form().k
    assert sp.simplify(m.derivative - sp.log((2 * k - 1) / k) / (k - 1)**2) == 0
    assert m.method.startswith("symbolic")


def test_rho_decreasing_exact_fallback_covers_the_range_and_says_so():
    m = rho_decreasing(150, symbolic=False)
    assert not m.for_all_k and m.derivative is None
    assert m.checked == (1, 150)
    assert "k = 1..150" in m.method and "certified intervals" in m.method


@pytest.mark.parametrize("k", range(1, 7))
def test_consecutive_rho_decrease_by_certified_sign(k):
    assert certified_sign(rho(k).rho - rho(k + 1).rho) == 1


# --- the tight instance ----------------------------------------------------------------------

def test_tight_instance_k2_is_exactly_23_27_of_the_optimum():
    inst = tight_instance(2)
    assert inst.p == (sp.Rational(5, 9), sp.Rational(4, 9))
    assert inst.q == (sp.Rational(1, 3), sp.Rational(2, 3))
    assert inst.tvs == (sp.Rational(2, 9), sp.Rational(2, 3))
    assert inst.rrs == sp.Rational(23, 27)
    assert inst.alpha_star == 1
    assert inst.ratio == rho(2).rho


@pytest.mark.parametrize("k", range(1, 7))
def test_tight_instance_ratio_equals_rho(k):
    inst = tight_instance(k)
    assert inst.alpha_star == 1
    assert sp.simplify(inst.ratio - rho(k).rho) == 0
    assert sp.simplify(sum(inst.p) - 1) == 0 and sp.simplify(sum(inst.q) - 1) == 0


@pytest.mark.parametrize("k", range(1, 6))
def test_tight_family_symbolic_rrs(k):
    fam = tight_family(k)
    a = fam.a
    assert fam.proved
    assert sp.expand(fam.rrs - (1 - (a**k - a**(2 * k - 1)))) == 0
    assert fam.alpha_star == 1
    if k == 1:
        assert fam.tvs == (0,)      # p = q: the first draft is accepted surely
    else:
        assert sp.expand(fam.tvs[0] - (a - a**k)) == 0
        assert fam.tvs[1:] == (a,) * (k - 1)


def _rrs_fraction(p, q, k):
    """Independent RRS in Fractions: 1 - prod_i TV(r_{i-1}, q)."""
    r, reject = list(p), Fraction(1)
    for _ in range(k):
        excess = [max(Fraction(0), x - y) for x, y in zip(r, q)]
        tv = sum(excess)
        reject *= tv
        if tv == 0:
            break
        r = [e / tv for e in excess]
    return 1 - reject


def _optimum_fraction(p, q, k):
    n = len(p)
    return min(sum(p[i] for i in s) + 1 - sum((q[i] for i in s), Fraction(0))**k
               for size in range(n + 1) for s in combinations(range(n), size))


@pytest.mark.parametrize("k", range(2, 6))
def test_rational_instances_decrease_strictly_to_rho(k):
    instances = rational_tight_instances(k, 6)
    target = rho(k)
    assert len(instances) == 6
    for j, (a, ratio) in enumerate(instances):
        assert isinstance(a, Fraction) and isinstance(ratio, Fraction)
        assert certified_sign(sp.Rational(a.numerator, a.denominator) - target.argmax) < 0
        p, q = (1 - a**k, a**k), (1 - a, a)
        assert _optimum_fraction(p, q, k) == 1
        assert ratio == _rrs_fraction(p, q, k) == 1 - (a**k - a**(2 * k - 1))
        assert certified_sign(sp.Rational(ratio.numerator, ratio.denominator) - target.rho) > 0
    ratios = [ratio for _, ratio in instances]
    assert all(x > y for x, y in zip(ratios, ratios[1:]))
    assert all(x[0] < y[0] for x, y in zip(instances, instances[1:]))
    # gap below 10^-6 by the sixth decimal truncation (it shrinks like (a_k - a)^2)
    last = sp.Rational(ratios[-1].numerator, ratios[-1].denominator)
    assert certified_sign(last - target.rho - sp.Rational(1, 10**6)) < 0


# --- certified signs -------------------------------------------------------------------------

@pytest.mark.parametrize("x, expected", [
    (sp.Rational(-1, 3), -1),
    (sp.Integer(0), 0),
    (sp.sqrt(2) * sp.sqrt(3) - sp.sqrt(6), 0),
    (sp.sqrt(15) / 5 - sp.Rational(7745966, 10**7), 1),
    (sp.Rational(14)**sp.Rational(2, 3) / 7 - sp.Rational(82982653337, 10**11), -1),
    (sp.Rational(14)**sp.Rational(2, 3) / 7 - sp.Rational(82982653336, 10**11), 1),
])
def test_certified_sign(x, expected):
    assert certified_sign(x) == expected


def test_certified_sign_rejects_symbols():
    with pytest.raises(InvalidInput, match="free symbols"):
        certified_sign(sp.Symbol("a") + 1)


# --- independent float cross-check -----------------------------------------------------------

@pytest.mark.parametrize("k", range(2, 7))
def test_rho_against_grid_maximisation(k):
    """Brute maximisation of a^k - a^(2k-1) on a grid of step h = 1/20000, in mpmath.

    Tolerance: the grid misses the maximum by at most max|f''| (h/2)^2 / 2 with
    max|f''| <= k(k-1) + (2k-1)(2k-2) <= 140 for k <= 6, i.e. below 5e-8; we allow 1e-7,
    and the grid value may not exceed the exact maximum (beyond 1e-20 rounding).
    """
    n = 20000
    best, best_a = mpmath.mpf(0), mpmath.mpf(0)
    with mpmath.workdps(25):
        for i in range(n + 1):
            a = mpmath.mpf(i) / n
            value = a**k - a**(2 * k - 1)
            if value > best:
                best, best_a = value, a
        exact_max = mpmath.mpf(sp.N(1 - rho(k).rho, 30))
        assert best <= exact_max + mpmath.mpf("1e-20")
        assert exact_max - best < mpmath.mpf("1e-7")
        assert abs(best_a - mpmath.mpf(sp.N(rho(k).argmax, 30))) < mpmath.mpf("1e-3")


# --- the tight instance's number field: products on integers ---------------------------------

def test_number_field_products_on_integers_equal_fraction_products():
    """NumberField.multiply (integers over one denominator) against the Fraction product
    reduced modulo m, on random elements of Q(a_8) (m = x^7 - 8/15, the field `rho 8` runs
    the engine in), Q(cbrt 2) and a field whose m has several non-integer coefficients."""
    import random

    from exactspec.engine.algebraic import Algebraic, NumberField, poly_mul, exact_root

    x = sp.Symbol("x")
    fields = [exact_root(rho(8).argmax).field,
              exact_root(sp.Poly(x**3 - 2, x).real_roots()[0]).field,
              NumberField([Fraction(-1, 6), Fraction(2, 3), Fraction(-5, 4), 1], 0, 1)]
    assert fields[0].minpoly == [Fraction(-8, 15)] + [Fraction(0)] * 6 + [Fraction(1)]
    rng = random.Random(5)
    for field in fields:
        for _ in range(60):
            a, b = ([Fraction(rng.randint(-30, 30), rng.randint(1, 40)) if rng.random() < .8
                     else Fraction(0) for _ in range(field.degree)] for _ in range(2))
            slow = field.reduce(poly_mul(a, b) or [Fraction(0)])
            fast = field.multiply(tuple(a), tuple(b))
            assert fast == slow and all(type(c) is Fraction for c in fast)
            assert all(c.denominator > 0 and sp.gcd(c.numerator, c.denominator) == 1
                       for c in fast)
            assert Algebraic(field, a) * Algebraic(field, b) == Algebraic(field, slow)
