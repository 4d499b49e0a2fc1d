"""Exact rows as integers over a common denominator: the fast paths of ``Dist`` conversion,
``optimum`` (alpha*, a*, order, tight prefixes), RRS's closed-form acceptance, overlap and TV
give exactly the values of the ``Fraction`` paths on the same inputs."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import exactspec.bounds.closed_forms as closed_forms
import exactspec.core.dist as dist_module
import exactspec.core.integer_rows as integer_rows
import exactspec.optimum.alpha_star as alpha_star
from exactspec.core.dist import Dist, integer_row_of, overlap, total_variation
from exactspec.core.errors import InvalidInput, NotExact
from exactspec.core.integer_rows import (MAX_DENOMINATOR_BITS, common_denominator, exact_sum,
                                         float_fraction, fraction_of, integer_row)


def _softmax_rows(n, seed, temperature=1.0, noise=0.5):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n) * 2
    p = np.exp((z - z.max()) / temperature)
    z2 = z + rng.normal(size=n) * noise
    q = np.exp((z2 - z2.max()) / temperature)
    return p / p.sum(), q / q.sum()


def _fraction_paths(monkeypatch):
    """Switch every integer fast path off: what remains is the Fraction code."""
    for module in (alpha_star, closed_forms, dist_module):
        monkeypatch.setattr(module, "integer_row_of", lambda d: None)


def _old_normalized(values):
    exact = [Fraction(v) for v in values]
    total = sum(exact, Fraction(0))
    return Dist([v / total for v in exact], check=False)


# -- the helpers --------------------------------------------------------------------------

def test_helpers_on_small_rows():
    assert integer_row([Fraction(1, 2), Fraction(1, 3), Fraction(1, 6)]) == ([3, 2, 1], 6)
    assert common_denominator([Fraction(1, 2), 0.5]) is None
    assert common_denominator([Fraction(1, 2 ** (MAX_DENOMINATOR_BITS + 1))]) is None
    assert exact_sum([Fraction(1, 3), Fraction(2, 3)]) == 1
    assert fraction_of(10, 4) == Fraction(5, 2) and fraction_of(-6, 9) == Fraction(-2, 3)
    for x in (0.1, 1e-300, 5e-324, 0.0, 1.0, 2.5):
        f = float_fraction(x)
        assert f == Fraction(x) and (f.numerator, f.denominator) == (
            Fraction(x).numerator, Fraction(x).denominator)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(1, 40)), min_size=1, max_size=12))
def test_integer_row_and_sum_match_fractions(pairs):
    values = [Fraction(n, d) for n, d in pairs]
    ints, d = integer_row(values)
    assert [Fraction(i, d) for i in ints] == values
    assert exact_sum(values) == sum(values, Fraction(0))


# -- conversion ---------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1])
def test_normalized_float_rows_equal_the_fraction_division(seed):
    p, _ = _softmax_rows(3000, seed)
    p[5] = 0.0
    p[7] = 5e-324                                  # a subnormal
    new = Dist(p, normalize=True)
    old = _old_normalized(p.tolist())
    assert new.probs == old.probs
    assert all((a.numerator, a.denominator) == (b.numerator, b.denominator)
               for a, b in zip(new.probs, old.probs))
    assert sum(new.probs, Fraction(0)) == 1
    ints, d = integer_row_of(new)
    assert [Fraction(i, d) for i in ints] == list(new.probs)


def test_float_rows_keep_their_error_messages():
    with pytest.raises(NotExact, match=r"p\[1\]=nan"):
        Dist([-0.5, float("nan")], normalize=True)
    with pytest.raises(InvalidInput, match=r"p\[0\] = -1/2 is negative"):
        Dist([-0.5, 1.5], normalize=True)
    with pytest.raises(InvalidInput, match="sums to 0"):
        Dist([0.0, 0.0], normalize=True)


# -- the optimum, RRS, overlap: fast path = Fraction path --------------------------------

def _instances():
    for seed, temperature in ((0, 1.0), (1, 0.5), (2, 2.0)):
        p, q = _softmax_rows(500, seed, temperature)
        yield Dist(p, normalize=True), Dist(q, normalize=True)
    p, q = _softmax_rows(5000, 3)                  # above the NumPy-sort threshold
    yield Dist(p, normalize=True), Dist(q, normalize=True)
    # rationals with zeros and ties in q/p (equal ratios, p = 0 tokens)
    yield (Dist([Fraction(1, 4), 0, Fraction(1, 4), Fraction(1, 2), 0]),
           Dist([Fraction(1, 8), Fraction(1, 8), Fraction(1, 8), Fraction(1, 4), Fraction(3, 8)]))
    yield (Dist([Fraction(1, 3), Fraction(1, 3), Fraction(1, 3)]),
           Dist([Fraction(1, 3), Fraction(1, 3), Fraction(1, 3)]))


@pytest.mark.parametrize("k", [1, 2, 4])
def test_optimum_rrs_overlap_equal_their_fraction_paths(k, monkeypatch):
    monkeypatch.setattr(integer_rows, "INTEGER_ROW_MIN", 1)     # short rows too
    instances = list(_instances())
    fast = [(alpha_star.optimum(p, q, k), closed_forms.rrs_acceptance(p, q, k),
             overlap(p, q), total_variation(p, q)) for p, q in instances]
    _fraction_paths(monkeypatch)
    for (p, q), (opt, rrs, ov, tv) in zip(instances, fast):
        ref = alpha_star.optimum(p, q, k)
        assert opt.alpha_star == ref.alpha_star
        assert opt.a_star.probs == ref.a_star.probs
        assert opt.order == ref.order and opt.tight == ref.tight
        assert rrs == closed_forms.rrs_acceptance(p, q, k)
        assert ov == overlap(p, q) and tv == total_variation(p, q) and ov + tv == 1
