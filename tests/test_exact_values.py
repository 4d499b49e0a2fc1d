"""Exact numbers handed to user code: float literals taken at their exact binary value.

Every result is checked against the same operation on plain ``Fraction``\\ s with the float
converted by ``Fraction(float)`` (two ways: the subclass's arithmetic against the textbook
conversion), and the type is checked to stay exact.
"""

import operator
import pickle
import random
from fractions import Fraction

import numpy as np
import pytest
import sympy

from exactspec.core.dist import Dist
from exactspec.core.errors import InvalidInput
from exactspec.core.exact_values import (ExactFraction, exact_operand, exact_values,
                                         floats_converted, plain_fraction)

OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
       operator.mod]
FLOATS = [0.0, -0.0, 0.1, 1e-9, 2.5, -3.75, 1e300, 5e-324, 1 / 3]


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.__name__)
def test_arithmetic_with_floats_is_exact_both_ways(op):
    rng = random.Random(7)
    for _ in range(40):
        x = ExactFraction(rng.randint(-50, 50), rng.randint(1, 50))
        for f in FLOATS + [rng.uniform(-5, 5)]:
            if op in (operator.truediv, operator.floordiv, operator.mod):
                if f != 0:
                    got = op(x, f)
                    assert got == op(Fraction(x), Fraction(f)) and not isinstance(got, float)
                if x != 0:
                    got = op(f, x)
                    assert got == op(Fraction(f), Fraction(x)) and not isinstance(got, float)
                continue
            for got, want in ((op(x, f), op(Fraction(x), Fraction(f))),
                              (op(f, x), op(Fraction(f), Fraction(x)))):
                assert got == want and type(got) is ExactFraction


def test_results_with_ints_and_fractions_stay_exact_fractions():
    x = ExactFraction(2, 3)
    for value in (x + 1, 1 + x, x * Fraction(3, 4), Fraction(3, 4) * x, x - x, -x, abs(-x),
                  +x, x ** 2, x ** -1, 2 - x, Fraction(1, 2) / x, x % 1, divmod(x, 1)[1]):
        assert type(value) is ExactFraction
    assert x ** 2 == Fraction(4, 9) and 2 - x == Fraction(4, 3)


def test_comparisons_with_floats_are_exact():
    tenth = ExactFraction(1, 10)
    assert Fraction(0.1) > Fraction(1, 10)          # 0.1 is a little above 1/10
    assert tenth < 0.1 and tenth != 0.1 and not tenth == 0.1 and 0.1 > tenth
    assert ExactFraction(Fraction(0.1)) == 0.1
    assert max(tenth - ExactFraction(1, 5), 0.0) == 0.0
    assert type(max(tenth, 0.0)) is ExactFraction and min(1.0, tenth) is tenth
    assert tenth < float("inf") and tenth > float("-inf")     # infinities compare exactly
    assert hash(ExactFraction(1, 3)) == hash(Fraction(1, 3))
    assert {Fraction(1, 3): "a"}[ExactFraction(1, 3)] == "a"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_floats_are_refused(bad):
    x = ExactFraction(1, 3)
    for op in (operator.add, operator.mul, operator.truediv):
        with pytest.raises(InvalidInput, match="not a finite number"):
            op(x, bad)
        with pytest.raises(InvalidInput, match="not a finite number"):
            op(bad, x)
    if bad != bad:
        with pytest.raises(InvalidInput, match="not a finite number"):
            x < bad                                           # noqa: B015


def test_numpy_and_sympy_operands():
    x = ExactFraction(1, 3)
    assert x + np.float32(0.1) == Fraction(1, 3) + Fraction(float(np.float32(0.1)))
    assert np.float32(0.1) + x == x + np.float32(0.1)
    assert type(np.float64(0.25) * x) is ExactFraction and np.float64(0.25) * x == Fraction(1, 12)
    assert type(x * np.int64(3)) is ExactFraction and x * np.int64(3) == 1
    assert sympy.Rational(1, 3) + x == sympy.Rational(2, 3)
    assert sympy.simplify(ExactFraction(1, 2) ** 0.5 - sympy.sqrt(2) / 2) == 0
    assert sympy.simplify(2 ** ExactFraction(1, 2) - sympy.sqrt(2)) == 0
    assert exact_operand(np.float16(0.1)) == Fraction(float(np.float16(0.1)))


def test_conversions_are_counted():
    x = ExactFraction(1, 3)
    before = floats_converted()
    y = 0.0 + x / 2 * 1e-9
    assert x < 0.5
    assert floats_converted() - before == 3 and y == Fraction(1, 6) * Fraction(1e-9)
    before = floats_converted()
    assert x + Fraction(1, 3) + 1 == Fraction(5, 3) and floats_converted() == before


def test_pickles_and_engine_values_are_plain_fractions():
    x = ExactFraction(5, 7)
    assert pickle.dumps(x) == pickle.dumps(Fraction(5, 7))       # fingerprints see a Fraction
    assert type(pickle.loads(pickle.dumps(x))) is Fraction
    assert type(plain_fraction(x)) is Fraction and plain_fraction(x) == x


def test_distributions_hand_out_exact_values_only_inside_the_block():
    p = Dist.parse("1/2,3/10,1/5")
    assert type(p[0]) is Fraction
    with exact_values():
        assert type(p[0]) is ExactFraction and all(type(v) is ExactFraction for v in p.probs)
        assert [type(v) for v in p.values()] == [ExactFraction] * 3
        assert p[1] + 0.5 == Fraction(3, 10) + Fraction(1, 2)
        built = Dist([max(p[t] - Fraction(1, 5), 0.0) for t in p], normalize=True)
        assert built.probs == (Fraction(3, 4), Fraction(1, 4), 0)
        with exact_values():                                     # re-entrant
            assert type(p[2]) is ExactFraction
        assert type(p[2]) is ExactFraction
    assert type(p[0]) is Fraction and type(p.probs[0]) is Fraction and p[0] + 0.5 == 1.0
    with pytest.raises(ZeroDivisionError):
        with exact_values():
            1 / (p[0] - p[0])
    assert type(p[0]) is Fraction                                # restored after an error


def test_a_float_runs_values_pass_unchanged():
    from exactspec.engine.float_sampler import float_dist
    from exactspec.engine.floats import FloatValue

    f = float_dist(Dist.parse("1/3,2/3"), "float32")
    with exact_values():
        assert all(type(v) is FloatValue for v in f.probs) and type(f[0]) is FloatValue
        kept = Dist([f[0], f[1]])                                # a kernel's row, kept as is
        assert kept.probs == f.probs


def test_sympy_values_and_symbols_mix_with_exact_values():
    a = sympy.Symbol("a", positive=True)
    p = Dist.parse("1/4,3/4")
    with exact_values():
        assert sympy.sqrt(p[0]) == sympy.Rational(1, 2)
        assert sympy.simplify(p[1] * a + 0.5 * a - sympy.Rational(5, 4) * a) == 0
        assert sympy.simplify(sympy.exp(p[0]) * 2.0 - 2 * sympy.exp(sympy.Rational(1, 4))) == 0
        symbolic = Dist([a, 1 - a], check=False)
        assert symbolic[0] is a and symbolic[1] == 1 - a          # symbolic values untouched


def test_the_symbolic_interpreter_proves_the_same_inside_the_block():
    """Symbolic values pass unchanged; the witnesses re-checked at rational points get exact
    values: the verdict and the cases are those of a run outside."""
    from exactspec.core.dist import residual
    from exactspec.engine.symbolic import prove_symbolic

    def rule(s, p, q, k=1):
        x = s.draft(q)
        if s.coin(min(1, p[x] / q[x])):
            return x
        return s.draw(residual(p, q))

    outside = prove_symbolic(rule, 2)
    with exact_values():
        inside = prove_symbolic(rule, 2)
    assert (inside.verdict, len(inside.cases)) == (outside.verdict, len(outside.cases)) \
        == ("proved", 3)
