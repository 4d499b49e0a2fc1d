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
import exactspec.optimum.closed_form as closed_form
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
    for module in (closed_form, closed_forms, dist_module):
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



def _awkward_rows():
    """Float rows for the vectorised conversion: zeros, subnormals, a huge exponent span,
    powers of two, one repeated value, and a random spread of exponents."""
    rng = np.random.default_rng(4)
    spread = rng.random(300) * 2.0 ** rng.integers(-1070, 60, 300).astype(float)
    spread[::7] = 0.0
    span = np.full(100, 1e-300)
    span[0], span[1], span[2] = 1e300, 5e-324, 2.0 ** -1022
    powers = 2.0 ** -np.arange(70, dtype=float)
    subnormal = np.array([5e-324 * (i + 1) for i in range(80)])
    same = np.full(64, 0.1)
    zeros_first = np.concatenate([np.zeros(40), rng.random(40)])
    return [spread, span, powers, subnormal, same, zeros_first]


@pytest.mark.parametrize("index", range(6))
def test_float_arrays_convert_like_float_lists_and_the_fraction_division(index):
    """NumPy rows (vectorised) = Python float lists (integer path) = one Fraction per float,
    summed and divided: the same Fractions, numerator and denominator, and the same integer
    row."""
    x = _awkward_rows()[index]
    from_array = Dist(x, normalize=True)
    assert from_array._probs is None                    # built when first read
    row = integer_row_of(from_array)
    from_list = Dist(x.tolist(), normalize=True)
    assert row == integer_row_of(from_list)
    old = _old_normalized(x.tolist())
    assert from_array.probs == from_list.probs == old.probs
    assert all((a.numerator, a.denominator) == (b.numerator, b.denominator)
               for a, b in zip(from_array.probs, old.probs))
    assert from_array == from_list and hash(from_array) == hash(from_list)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_narrow_float_arrays_widen_exactly(dtype):
    x = (np.random.default_rng(5).random(200) ** 6).astype(dtype)
    x[3] = 0
    assert Dist(x, normalize=True).probs == _old_normalized(
        [float(v) for v in x.astype(np.float64)]).probs


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1e30, allow_nan=False,
                          allow_subnormal=True), min_size=64, max_size=120)
       .filter(lambda v: sum(v) > 0))
def test_float_array_conversion_equals_the_list_path(values):
    from_array = Dist(np.array(values), normalize=True)
    from_list = Dist(values, normalize=True)
    assert integer_row_of(from_array) == integer_row_of(from_list)
    assert from_array.probs == from_list.probs


def test_float_arrays_keep_the_error_messages_of_the_list_path():
    x = np.full(100, 0.01)
    x[7] = np.nan
    with pytest.raises(NotExact, match=r"p\[7\]=np.float64\(nan\): not a finite number"):
        Dist(x, normalize=True)
    x[7] = np.inf
    with pytest.raises(NotExact, match=r"p\[7\]=np.float64\(inf\)"):
        Dist(x, normalize=True)
    x[7], x[9], x[12] = 0.01, -0.25, -1.0
    labels = [f"t{i}" for i in range(100)]
    messages = []
    for row in (x, x.tolist()):
        with pytest.raises(InvalidInput) as err:
            Dist(row, labels, normalize=True, name="q")
        messages.append(str(err.value))
    assert messages[0] == messages[1] == "q[t9] = -1/4 is negative"
    for row in (np.zeros(80), np.zeros(80).tolist()):
        with pytest.raises(InvalidInput, match="^p sums to 0: nothing to normalize$"):
            Dist(row, normalize=True)
    with pytest.raises(InvalidInput, match="one-dimensional"):
        Dist(np.ones((70, 2)), normalize=True)
    with pytest.raises(InvalidInput, match="labels of p has 3 entries"):
        Dist(np.ones(70), "abc", normalize=True)


def test_lazy_rows_read_like_built_ones():
    p, q = _softmax_rows(400, 9)
    lazy, built = Dist(p, normalize=True), Dist(p.tolist(), normalize=True)
    assert lazy[17] == built[17] and lazy.index(17) == 17 and len(lazy) == 400
    assert list(lazy.values()) == list(built.probs)
    assert lazy.to_json() == built.to_json()
    opt = closed_form.optimum(lazy, Dist(q, normalize=True), 3)
    assert opt.a_star._probs is None and sum(opt.a_star.probs) == opt.alpha_star
    tight = set(opt.tight)
    assert tight and len(tight) < len(lazy)
    for t, v in zip(lazy.labels, opt.a_star.probs):   # untight entries are p's own values
        assert (v is lazy[t]) if t not in tight else v <= lazy[t]
    assert opt == closed_form.optimum(built, Dist(q.tolist(), normalize=True), 3)
    import pickle
    assert pickle.loads(pickle.dumps(opt.a_star)) == opt.a_star

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
    fast = [(closed_form.optimum(p, q, k), closed_forms.rrs_acceptance(p, q, k),
             overlap(p, q), total_variation(p, q)) for p, q in instances]
    _fraction_paths(monkeypatch)
    for (p, q), (opt, rrs, ov, tv) in zip(instances, fast):
        ref = closed_form.optimum(p, q, k)
        assert opt.alpha_star == ref.alpha_star
        assert opt.a_star.probs == ref.a_star.probs
        assert opt.order == ref.order and opt.tight == ref.tight
        assert rrs == closed_forms.rrs_acceptance(p, q, k)
        assert ov == overlap(p, q) and tv == total_variation(p, q) and ov + tv == 1
