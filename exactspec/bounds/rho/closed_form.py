"""The tight ratio rho_k of recursive rejection sampling, derived with sympy.

With ``k`` i.i.d. drafts, recursive rejection sampling (RRS) always reaches at least the
fraction ``rho_k`` of the optimal acceptance ``alpha*`` (Baliga et al.), where

    rho_k = 1 - max_{0 <= a <= 1} (a^k - a^(2k-1)),

and the bound is tight on a two-token family.  Nothing here is typed in: the maximiser, the
value, the closed form, the limit 3/4 and the monotonicity in ``k`` are derived by sympy, and
every sign that a proof step needs is decided exactly (rational arithmetic, a polynomial with
positive coefficients, or certified interval arithmetic that must separate from zero).

>>> rho(2).rho, rho(2).argmax
(23/27, 2/3)
>>> rho(3).rho
1 - 6*sqrt(15)/125
>>> rho_limit().value
3/4
>>> tight_instance(2).p, tight_instance(2).q
((5/9, 4/9), (1/3, 2/3))
"""

from __future__ import annotations

import functools
import itertools
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Sequence

import sympy as sp
from mpmath.ctx_iv import MPIntervalContext

from ...core.errors import InvalidInput, Undecided

__all__ = ["Rho", "rho", "rho_closed_form", "Limit", "rho_limit", "Monotonicity",
           "rho_decreasing", "TightInstance", "tight_instance", "rational_tight_instances",
           "TightFamily", "tight_family", "certified_sign", "check_k", "gap_power"]

Sign = Callable[[sp.Expr], int]

#: The variable of f(a) = a^k - a^(2k-1); positive, so sympy keeps only positive roots.
_A = sp.Symbol("a", positive=True)
#: ``t = k - 1 > 0``: the closed form is proved for real ``k > 1`` through this variable.
_T = sp.Symbol("t", positive=True)
#: The number of drafts as a real variable (``k > 0``), for the limit.
_K = sp.Symbol("k", positive=True)


# --------------------------------------------------------------------------------------------
# Deciding signs exactly
# --------------------------------------------------------------------------------------------

def _interval(x: sp.Expr, ctx: MPIntervalContext):
    """A rigorous enclosure of the real number ``x`` (sympy) in the interval context ``ctx``."""
    if x.is_Rational:
        return ctx.mpf(int(x.p)) / ctx.mpf(int(x.q))
    if x.is_Add:
        return sum((_interval(arg, ctx) for arg in x.args[1:]), _interval(x.args[0], ctx))
    if x.is_Mul:
        result = ctx.mpf(1)
        for arg in x.args:
            result = result * _interval(arg, ctx)
        return result
    if x.is_Pow:
        base, exponent = x.args
        b = _interval(base, ctx)
        if exponent.is_Integer:
            return b ** int(exponent)
        if exponent.is_Rational and b.a > 0:
            return ctx.exp(ctx.log(b) * _interval(exponent, ctx))
        raise Undecided(f"cannot enclose {x}: base {base} not certified positive")
    raise Undecided(f"cannot enclose {x}: {type(x).__name__} is not supported")


def certified_sign(x, *, max_prec: int = 4096) -> int:
    """The exact sign (-1, 0 or 1) of a real algebraic number given as a sympy expression.

    Rationals are compared exactly.  Otherwise ``x`` (sums, products and rational powers of
    rationals) is enclosed by interval arithmetic with outward rounding at 64, 128, ...
    bits until the interval excludes 0; an interval that never does is settled by sympy's
    minimal polynomial (``x`` is 0 exactly when it is ``X``).  Raises
    :class:`~exactspec.core.errors.Undecided` when neither works: never a guess.

    Equivalent to ``sympy.sign(x)`` where that is decided, without trusting floating point.

    >>> certified_sign(sp.Rational(2, 3)**3 - sp.Rational(2, 3)**5)
    1
    >>> certified_sign(sp.sqrt(15)/5 - sp.Rational(7, 9))
    -1
    >>> certified_sign(sp.sqrt(2)*sp.sqrt(3) - sp.sqrt(6))
    0
    """
    x = sp.sympify(x)
    if x.free_symbols:
        raise InvalidInput(f"x={x}: has free symbols {sorted(map(str, x.free_symbols))}, "
                           "not a number")
    if x.is_Rational:
        return int(bool(x > 0)) - int(bool(x < 0))
    prec = 64
    while prec <= max_prec:
        ctx = MPIntervalContext()
        ctx.prec = prec
        try:
            enclosure = _interval(x, ctx)
        except Undecided:
            enclosure = None
        if enclosure is not None:
            if enclosure.a > 0:
                return 1
            if enclosure.b < 0:
                return -1
        prec *= 2
    try:
        if sp.minimal_polynomial(x, sp.Dummy("X")).is_Symbol:
            return 0
    except (NotImplementedError, sp.polys.polyerrors.NotAlgebraic):
        pass
    raise Undecided(f"cannot decide the sign of {x} (intervals up to {max_prec} bits)")


def _unit_interval_sign(a: sp.Symbol) -> Sign:
    """Sign oracle for rational functions of ``a`` on the open interval ``0 < a < 1``.

    Substitutes ``a = 1/(1 + s)`` with ``s > 0``; the expression becomes N(s)/D(s), and the
    sign is decided when the expanded numerator and denominator are each 0 or have
    coefficients of one sign (sympy's ``is_positive`` on a polynomial in a positive symbol).
    """
    s = sp.Symbol("s", positive=True)

    def sign(expr: sp.Expr) -> int:
        expr = sp.sympify(expr)
        if expr.free_symbols - {a}:
            raise InvalidInput(f"expr={expr}: only {a} may be free")
        num, den = sp.fraction(sp.together(expr.subs(a, 1 / (1 + s))))
        num, den = sp.expand(num), sp.expand(den)
        if num == 0:
            return 0
        signs = []
        for part in (num, den):
            if part.is_positive:
                signs.append(1)
            elif part.is_negative:
                signs.append(-1)
            else:
                raise Undecided(f"cannot decide the sign of {expr} for 0 < {a} < 1")
        return signs[0] * signs[1]

    return sign


def _max(values: Sequence[sp.Expr], sign: Sign) -> tuple[int, sp.Expr]:
    """Index and value of a maximum of ``values``, every comparison decided by ``sign``."""
    best = 0
    for i in range(1, len(values)):
        if sign(values[i] - values[best]) > 0:
            best = i
    return best, values[best]


def _min(values: Sequence[sp.Expr], sign: Sign) -> tuple[int, sp.Expr]:
    best, _ = _max([-v for v in values], sign)
    return best, values[best]


def check_k(k, name: str = "k") -> int:
    """The number of drafts ``k`` (argument ``name``) as an int, checked: an integer of at
    least 1."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise InvalidInput(f"{name}={k!r}: must be an integer number of drafts")
    k = int(k)
    if k < 1:
        raise InvalidInput(f"{name}={k}: need at least one draft")
    return k


# --------------------------------------------------------------------------------------------
# rho_k
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Rho:
    """The tight ratio ``rho_k = 1 - max_{0<=a<=1} (a^k - a^(2k-1))``, with its derivation.

    Attributes
    ----------
    k : int or sympy.Symbol
        Number of drafts (a symbol for the closed form of :func:`rho_closed_form`).
    rho : sympy.Expr
        The exact value.
    argmax : sympy.Expr or None
        The maximiser ``a_k`` of ``a^k - a^(2k-1)`` on [0, 1]; ``None`` for ``k = 1``, where
        the function is identically 0 and every ``a`` maximises.
    derivation : tuple of str
        The steps: stationary-point equation, candidates with their values (endpoints
        included), second-derivative sign, result.
    """

    k: int | sp.Symbol
    rho: sp.Expr
    argmax: sp.Expr | None
    derivation: tuple[str, ...]


def rho(k: int) -> Rho:
    """The tight RRS ratio ``rho_k``, derived with sympy by maximising ``a^k - a^(2k-1)``.

    Differentiates ``f(a) = a^k - a^(2k-1)``, factors ``f'(a) = a^(k-1) (k - (2k-1) a^(k-1))``,
    solves ``k = (2k-1) a^(k-1)`` for its root in (0, 1), compares ``f`` there with the
    endpoints ``f(0) = f(1) = 0`` and checks ``f'' < 0``; every sign is certified
    (:func:`certified_sign`).

    Parameters
    ----------
    k : int
        Number of drafts, at least 1.

    Returns
    -------
    Rho

    Raises
    ------
    InvalidInput
        ``k`` is not an integer or is below 1.

    Examples
    --------
    >>> rho(1).rho, rho(1).argmax
    (1, None)
    >>> r = rho(2)
    >>> r.rho, r.argmax
    (23/27, 2/3)
    >>> for line in r.derivation:
    ...     print(line)
    f(a) = -a**3 + a**2
    f'(a) = -3*a**2 + 2*a = a*(2 - 3*a)
    f'(a) = 0 in (0, 1): 2 - 3*a = 0, so a = 2/3
    candidates: f(0) = 0, f(1) = 0, f(2/3) = 4/27
    f''(2/3) = -2 < 0: a strict maximum
    rho_2 = 1 - f(2/3) = 23/27
    >>> rho(3).rho, rho(3).argmax
    (1 - 6*sqrt(15)/125, sqrt(15)/5)
    >>> rho(4).rho
    1 - 12*14**(2/3)/343
    >>> rho(0)
    Traceback (most recent call last):
    ...
    exactspec.core.errors.InvalidInput: k=0: need at least one draft
    """
    return _rho(check_k(k))


@functools.lru_cache(maxsize=None)
def _rho(k: int) -> Rho:
    a = _A
    f = a**k - a**(2 * k - 1)
    if k == 1:
        return Rho(1, sp.Integer(1), None, (
            f"f(a) = a - a = {f} for every a: every a in [0, 1] maximises",
            "rho_1 = 1 - 0 = 1",
        ))
    df = sp.diff(f, a)
    reduced = sp.cancel(df / a**(k - 1))          # k - (2k-1) a^(k-1)
    assert sp.expand(reduced * a**(k - 1) - df) == 0
    # k - (2k-1) a^(k-1) decreases strictly for a > 0 (its derivative is negative there), so
    # it has at most one positive root; the binomial equation's positive root is
    # (k/(2k-1))^(1/(k-1)), checked by substitution (no general solve: it builds all k-1
    # complex roots first)
    root = sp.root(sp.Rational(k, 2 * k - 1), k - 1)
    if sp.diff(reduced, a).is_negative is not True or sp.expand(reduced.subs(a, root)) != 0:
        raise Undecided(f"k={k}: could not certify the root {root} of {reduced}")
    if not (certified_sign(root) > 0 and certified_sign(1 - root) > 0):
        raise Undecided(f"k={k}: the stationary point {root} is not in (0, 1)")
    candidates = [sp.Integer(0), sp.Integer(1), root]
    values = [sp.radsimp(f.subs(a, c)) for c in candidates]
    best, value = _max(values, certified_sign)
    if best != 2 or certified_sign(value) <= 0:
        raise Undecided(f"k={k}: the stationary point {root} is not the maximiser")
    curvature = sp.radsimp(sp.diff(f, a, 2).subs(a, root))
    if certified_sign(curvature) >= 0:
        raise Undecided(f"k={k}: f''({root}) = {curvature} is not negative")
    ratio = 1 - value
    factor = a**(k - 1) if k > 2 else a
    derivation = (
        f"f(a) = {f}",
        f"f'(a) = {df} = {factor}*({reduced})",
        f"f'(a) = 0 in (0, 1): {reduced} = 0, so a = {root}",
        "candidates: " + ", ".join(f"f({c}) = {v}" for c, v in zip(candidates, values)),
        f"f''({root}) = {curvature} < 0: a strict maximum",
        f"rho_{k} = 1 - f({root}) = {ratio}",
    )
    return Rho(k, ratio, root, derivation)


@functools.lru_cache(maxsize=None)
def rho_closed_form() -> Rho:
    """``rho_k`` for a real number of drafts ``k > 1``, derived symbolically.

    With ``t = k - 1 > 0`` sympy factors ``f'(a) = a^t g(a)``, shows ``g`` decreasing with
    ``g(0+) > 0 > g(1)`` (so its root is the unique maximiser on [0, 1]), solves
    ``k = (2k-1) a^(k-1)`` and proves ``f(a_k) = ((k-1)/(2k-1)) (k/(2k-1))^(k/(k-1))``.
    The result is stated in the positive symbol ``k``.

    >>> c = rho_closed_form()
    >>> c.argmax
    (k/(2*k - 1))**(1/(k - 1))
    >>> c.rho
    -(k/(2*k - 1))**(k/(k - 1))*(k - 1)/(2*k - 1) + 1
    >>> c.rho.subs(c.k, 3) == rho(3).rho
    True
    """
    a, t, k = _A, _T, 1 + _T
    f = a**k - a**(2 * k - 1)
    df = sp.diff(f, a)
    reduced = sp.collect(sp.powsimp(sp.expand(df / a**t)), a**t)   # k - (2k-1) a^(k-1)
    if sp.simplify(reduced * a**t - df) != 0:
        raise Undecided("sympy could not factor a**(k-1) out of f'(a)")
    slope = sp.factor(sp.diff(reduced, a))
    at_0, at_1 = sp.limit(reduced, a, 0, "+"), reduced.subs(a, 1)
    if not (slope.is_negative and at_0.is_positive and at_1.is_negative):
        raise Undecided(f"could not show that {reduced} has exactly one root in (0, 1)")
    roots = sp.solve(sp.Eq(reduced, 0), a)
    if len(roots) != 1:
        raise Undecided(f"expected one positive stationary point, found {roots}")
    root = roots[0]
    closed = ((k - 1) / (2 * k - 1)) * (k / (2 * k - 1))**(k / (k - 1))
    if sp.simplify(f.subs(a, root) - closed) != 0:
        raise Undecided("sympy could not confirm the closed form of f(a_k)")
    back = {t: _K - 1}
    derivation = (
        f"with t = k - 1 > 0: f'(a) = a**t*g(a), g(a) = {reduced}",
        f"g'(a) = {slope} < 0, g(0+) = {at_0} > 0, g(1) = {at_1} < 0: g has one root in "
        "(0, 1), f increases before it and decreases after, so it is the maximiser on [0, 1]",
        f"the root: a_k = {root.subs(back)}",
        f"max f = f(a_k) = {closed.subs(back)} (sympy: the difference simplifies to 0)",
    )
    return Rho(_K, 1 - closed.subs(back), root.subs(back), derivation)


# --------------------------------------------------------------------------------------------
# The limit and monotonicity in k
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Limit:
    """A limit proved by sympy: ``value = lim_{variable -> oo} expression``."""

    value: sp.Expr
    expression: sp.Expr
    variable: sp.Symbol
    method: str


def rho_limit() -> Limit:
    """``lim_{k -> oo} rho_k = 3/4``, computed by ``sympy.limit`` on the closed form.

    >>> lim = rho_limit()
    >>> lim.value
    3/4
    >>> print(lim.method)
    sympy.limit(-(k/(2*k - 1))**(k/(k - 1))*(k - 1)/(2*k - 1) + 1, k, oo) with k a positive symbol
    """
    closed = rho_closed_form()
    value = sp.limit(closed.rho, closed.k, sp.oo)
    method = f"sympy.limit({closed.rho}, {closed.k}, oo) with {closed.k} a positive symbol"
    return Limit(value, closed.rho, closed.k, method)


@dataclass(frozen=True)
class Monotonicity:
    """What is proved about ``rho_k`` decreasing in ``k``.

    Attributes
    ----------
    for_all_k : bool
        ``True`` when a symbolic proof covers every integer ``k >= 1``.
    method : str
        How it was shown.
    derivative : sympy.Expr or None
        ``d/dk log(1 - rho_k)`` for real ``k > 1`` (``None`` if not used), shown positive.
    checked : tuple of int
        ``(1, k_max)``: consecutive values compared exactly over this range.
    steps : tuple of str
        The proof, one step a line.
    """

    for_all_k: bool
    method: str
    derivative: sp.Expr | None
    checked: tuple[int, int]
    steps: tuple[str, ...]


def _symbolic_decrease() -> tuple[sp.Expr, list[str]] | None:
    """Show ``d/dk log(1 - rho_k) > 0`` for real ``k > 1``; ``None`` if sympy cannot."""
    t = _T
    closed = rho_closed_form()
    gap = (1 - closed.rho).subs(closed.k, 1 + t)          # max f, positive for t > 0
    derivative = sp.simplify(sp.diff(sp.expand_log(sp.log(gap)), t))
    num, den = sp.fraction(sp.together(derivative))
    if not den.is_positive:
        return None
    steps = [f"with k = 1 + t, t > 0: d/dk log(1 - rho_k) = {derivative}",
             f"denominator {den} > 0"]
    if not num.is_positive:
        combined = sp.logcombine(num)
        if not (isinstance(combined, sp.log)
                and sp.together(combined.args[0] - 1).is_positive):
            return None
        steps.append(f"numerator {num} = {combined} > 0 since "
                     f"{combined.args[0]} - 1 = {sp.together(combined.args[0] - 1)} > 0")
    else:
        steps.append(f"numerator {num} > 0")
    steps.append("so 1 - rho_k increases, rho_k decreases, for real k > 1 (all k >= 2)")
    return sp.logcombine(derivative.subs(t, _K - 1)), steps


def gap_power(k: int) -> tuple[int, int]:
    """``(1 - rho_k)^(k-1) = ((k-1)/(2k-1))^(k-1) (k/(2k-1))^k`` as (numerator, denominator)."""
    return (k - 1)**(k - 1) * k**k, (2 * k - 1)**(2 * k - 1)


#: Up to this k consecutive values are compared in integers; beyond, by certified intervals.
_INTEGER_LIMIT = 100


def _gap_interval(k: int, ctx: MPIntervalContext):
    """An enclosure of ``1 - rho_k = ((k-1)/(2k-1)) (k/(2k-1))^(k/(k-1))``, ``k >= 2``."""
    c = ctx.mpf(k) / ctx.mpf(2 * k - 1)
    return ctx.mpf(k - 1) / ctx.mpf(2 * k - 1) * ctx.exp(ctx.log(c) * ctx.mpf(k) / ctx.mpf(k - 1))


def _exact_decrease(k_max: int) -> list[str]:
    """Prove ``rho_k > rho_{k+1}`` for ``1 <= k < k_max``, never trusting a float.

    ``m_k = 1 - rho_k`` has ``m_k^(k-1) = N_k/D_k`` rational, so for ``k >= 2``
    ``m_k < m_{k+1}`` iff ``(N_k/D_k)^k < (N_{k+1}/D_{k+1})^(k-1)`` (both sides the
    ``k(k-1)``-th powers of positive reals): integer arithmetic, used up to
    ``_INTEGER_LIMIT``.  Beyond, the integers grow like ``k^2 log k`` digits, so ``m_k`` and
    ``m_{k+1}`` are enclosed by outward-rounded interval arithmetic whose intervals must be
    disjoint.  ``k = 1`` is ``m_1 = 0 < m_2``.
    """
    if k_max < 2:
        return [f"k_max={k_max}: nothing to compare"]
    n2, d2 = gap_power(2)
    if not (0 < n2 < d2):
        raise AssertionError("0 < m_2 < 1 must hold")
    steps = [f"rho_1 = 1 > rho_2 = {1 - Fraction(n2, d2)}"]
    last = min(k_max, _INTEGER_LIMIT)
    for k in range(2, last):
        (n, d), (n1, d1) = gap_power(k), gap_power(k + 1)
        if not n**k * d1**(k - 1) < n1**(k - 1) * d**k:
            raise AssertionError(f"rho_{k} > rho_{k + 1} failed: docs/math.md would be wrong")
    if last > 2:
        steps.append(f"for 2 <= k < {last}: (1 - rho_k)^(k-1) = N_k/D_k is rational and "
                     "(N_k/D_k)^k < (N_(k+1)/D_(k+1))^(k-1) in integers, so rho_k > rho_(k+1)")
    if k_max > last:
        ctx = MPIntervalContext()
        ctx.prec = 128
        k = last
        while k < k_max:
            if _gap_interval(k, ctx).b < _gap_interval(k + 1, ctx).a:
                k += 1
            elif ctx.prec < 4096:
                ctx.prec *= 2
            else:
                raise Undecided(f"intervals for rho_{k} and rho_{k + 1} do not separate")
        steps.append(f"for {last} <= k < {k_max}: interval enclosures of 1 - rho_k "
                     f"(outward rounding, {ctx.prec} bits) are disjoint and increasing, "
                     "so rho_k > rho_(k+1)")
    return steps


def rho_decreasing(k_max: int = 50, *, symbolic: bool = True) -> Monotonicity:
    """Show that ``rho_k`` is strictly decreasing in ``k``.

    First symbolically: for real ``k = 1 + t > 1`` sympy simplifies
    ``d/dk log(1 - rho_k)`` to ``log((2k-1)/k)/(k-1)^2`` and decides its sign (the log's
    argument exceeds 1), so ``rho_k`` decreases for all ``k >= 2``; with ``rho_1 = 1 > rho_2``
    this covers every integer ``k >= 1``.  Independently, and as the only proof when the
    symbolic step is skipped or undecided, consecutive values ``k = 1..k_max`` are compared
    in exact integer arithmetic (powers of ``1 - rho_k`` are rational), and from
    ``k = 100`` on by certified interval arithmetic whose enclosures must separate.

    Parameters
    ----------
    k_max : int
        Compare ``rho_1 > rho_2 > ... > rho_{k_max}`` exactly.
    symbolic : bool
        Attempt the proof for all ``k``.

    Examples
    --------
    >>> m = rho_decreasing(20)
    >>> m.for_all_k, m.checked
    (True, (1, 20))
    >>> m.derivative
    log((2*k - 1)/k)/(k - 1)**2
    >>> rho_decreasing(10, symbolic=False).method
    'exact comparison of consecutive values, k = 1..10'
    """
    k_max = check_k(k_max, "k_max")
    steps = _exact_decrease(k_max)
    exact_method = f"exact comparison of consecutive values, k = 1..{k_max}"
    if k_max > _INTEGER_LIMIT:
        exact_method += f" (certified intervals from k = {_INTEGER_LIMIT})"
    found = _symbolic_decrease() if symbolic else None
    if found is None:
        return Monotonicity(False, exact_method, None, (1, k_max), tuple(steps))
    derivative, symbolic_steps = found
    method = ("symbolic: d/dk log(1 - rho_k) > 0 for real k > 1, and rho_1 > rho_2; "
              f"cross-checked by {exact_method}")
    return Monotonicity(True, method, derivative, (1, k_max),
                        tuple(symbolic_steps + steps))


# --------------------------------------------------------------------------------------------
# RRS and the optimum on explicit instances
# --------------------------------------------------------------------------------------------

def _rrs(p: Sequence[sp.Expr], q: Sequence[sp.Expr], k: int, sign: Sign,
         canon: Callable[[sp.Expr], sp.Expr]) -> tuple[sp.Expr, tuple[sp.Expr, ...]]:
    """RRS acceptance and the per-step TVs.

    Equivalent to ``1 - prod_i TV(r_{i-1}, q)`` with ``r_0 = p`` and
    ``r_i = norm(max(0, r_{i-1} - q))``; a step with ``TV = 0`` accepts surely.
    """
    r = tuple(p)
    tvs = []
    for _ in range(k):
        excess = [canon(ri - qi) for ri, qi in zip(r, q)]
        positive = [e if sign(e) > 0 else sp.Integer(0) for e in excess]
        tv = canon(sp.Add(*positive))
        tvs.append(tv)
        if sign(tv) == 0:
            break
        r = tuple(canon(e / tv) for e in positive)
    return canon(1 - sp.Mul(*tvs)), tuple(tvs)


def _optimum(p: Sequence[sp.Expr], q: Sequence[sp.Expr], k: int, sign: Sign,
             canon: Callable[[sp.Expr], sp.Expr]) -> sp.Expr:
    """``alpha* = min over subsets A of p(A) + 1 - q(A)^k``, by enumerating all subsets."""
    n = len(p)
    values = []
    for size in range(n + 1):
        for subset in itertools.combinations(range(n), size):
            pa = sp.Add(*(p[i] for i in subset))
            qa = sp.Add(*(q[i] for i in subset))
            values.append(canon(pa + 1 - qa**k))
    return _min(values, sign)[1]


def _number_canon(x: sp.Expr) -> sp.Expr:
    return sp.radsimp(sp.expand(x))


@dataclass(frozen=True)
class TightInstance:
    """The two-token instance ``q = (1-a, a)``, ``p = (1-a^k, a^k)`` at a given ``a``.

    ``rrs`` is RRS's acceptance, ``tvs`` its per-step TVs, ``alpha_star`` the optimal
    acceptance, ``ratio = rrs / alpha_star``.
    """

    k: int
    a: sp.Expr
    p: tuple[sp.Expr, sp.Expr]
    q: tuple[sp.Expr, sp.Expr]
    rrs: sp.Expr
    tvs: tuple[sp.Expr, ...]
    alpha_star: sp.Expr
    ratio: sp.Expr


def _instance(k: int, a: sp.Expr) -> TightInstance:
    canon = _number_canon
    q = (canon(1 - a), a)
    p = (canon(1 - a**k), canon(a**k))
    rrs, tvs = _rrs(p, q, k, certified_sign, canon)
    alpha_star = _optimum(p, q, k, certified_sign, canon)
    return TightInstance(k, a, p, q, rrs, tvs, alpha_star, canon(rrs / alpha_star))


def tight_instance(k: int) -> TightInstance:
    """The instance where RRS reaches exactly ``rho_k`` of the optimum: ``a = a_k``.

    For ``k = 1`` every ``a`` is tight (``p = q``); ``a = 1/2`` is used.

    >>> inst = tight_instance(2)
    >>> inst.p, inst.q
    ((5/9, 4/9), (1/3, 2/3))
    >>> inst.tvs, inst.rrs, inst.alpha_star, inst.ratio
    ((2/9, 2/3), 23/27, 1, 23/27)
    >>> tight_instance(3).rrs
    1 - 6*sqrt(15)/125
    """
    k = check_k(k)
    a = rho(k).argmax
    return _instance(k, sp.Rational(1, 2) if a is None else a)


def rational_tight_instances(k: int, n: int) -> list[tuple[Fraction, Fraction]]:
    """Rational ``a`` approaching ``a_k`` from below, with exact ratios ``alpha_RRS/alpha*``.

    The ``a`` are the distinct decimal truncations ``floor(a_k 10^j) / 10^j``, computed with
    integer roots (``a_k^(k-1) = k/(2k-1)``), so they increase strictly to ``a_k``; since
    ``a^k - a^(2k-1)`` increases on ``[0, a_k]`` the ratios decrease strictly to ``rho_k``.

    Parameters
    ----------
    k : int
        Number of drafts, at least 2 (for ``k = 1`` every ``a`` has ratio exactly 1).
    n : int
        How many instances.

    Examples
    --------
    >>> rational_tight_instances(2, 3)
    [(Fraction(3, 5), Fraction(107, 125)), (Fraction(33, 50), Fraction(106487, 125000)), \
(Fraction(333, 500), Fraction(106481537, 125000000))]
    """
    k = check_k(k)
    if k == 1:
        raise InvalidInput("k=1: every a is tight (ratio 1), nothing to approach")
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise InvalidInput(f"n={n!r}: need a positive integer number of instances")
    result: list[tuple[Fraction, Fraction]] = []
    previous = None
    j = 0
    while len(result) < n:
        j += 1
        scale = 10**j
        # the largest m with (m/scale)^(k-1) <= k/(2k-1)
        m = sp.integer_nthroot(k * scale**(k - 1) // (2 * k - 1), k - 1)[0]
        a = Fraction(m, scale)
        if a == previous or a == 0:
            continue
        previous = a
        inst = _instance(k, sp.Rational(a.numerator, a.denominator))
        result.append((a, Fraction(int(inst.ratio.p), int(inst.ratio.q))))
    return result


# --------------------------------------------------------------------------------------------
# The family for symbolic a
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TightFamily:
    """RRS on ``q = (1-a, a)``, ``p = (1-a^k, a^k)`` for a symbol ``0 < a < 1``.

    ``proved`` is ``True`` when sympy confirms ``rrs == 1 - (a^k - a^(2k-1))`` and
    ``alpha_star == 1`` identically.
    """

    k: int
    a: sp.Symbol
    p: tuple[sp.Expr, sp.Expr]
    q: tuple[sp.Expr, sp.Expr]
    tvs: tuple[sp.Expr, ...]
    rrs: sp.Expr
    alpha_star: sp.Expr
    proved: bool


def tight_family(k: int) -> TightFamily:
    """Run RRS symbolically on the tight family, every sign decided for all ``0 < a < 1``.

    Signs come from substituting ``a = 1/(1+s)``, ``s > 0``, and reading the signs of
    polynomials in ``s`` (e.g. ``a - a^k`` has numerator ``(1+s)^(k-1) - 1``).  The first
    step has ``TV = a - a^k`` and leaves the residual ``(1, 0)``; every later step has
    ``TV = a``.

    >>> fam = tight_family(3)
    >>> fam.tvs
    (-a**3 + a, a, a)
    >>> fam.rrs, fam.alpha_star, fam.proved
    (a**5 - a**3 + 1, 1, True)
    """
    k = check_k(k)
    a = sp.Symbol("a", positive=True)
    sign = _unit_interval_sign(a)
    canon = sp.cancel
    q = (1 - a, a)
    p = (1 - a**k, a**k)
    rrs, tvs = _rrs(p, q, k, sign, canon)
    alpha_star = _optimum(p, q, k, sign, canon)
    proved = (sp.expand(rrs - (1 - (a**k - a**(2 * k - 1)))) == 0
              and sp.expand(alpha_star - 1) == 0)
    return TightFamily(k, a, p, q, tvs, sp.expand(rrs), alpha_star, proved)
