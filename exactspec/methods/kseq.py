"""``kseq``: K-SEQ (SpecTr) with ``k`` i.i.d. drafts, at a rational ``rho`` just above ``rho*``.

With ``beta(rho) = sum_x min(p(x)/rho, q(x))``, ``p_acc(rho) = 1 - (1 - beta(rho))^k`` and
``gamma = p_acc(rho) / beta(rho)``: for ``i = 1..k`` accept ``X_i`` with probability
``min(1, p(X_i) / (rho q(X_i)))``; if all are rejected output
``Y ~ norm(max(0, p - gamma min(p/rho, q)))``.  Lossless exactly when
``p_acc(rho) <= rho beta(rho)``; since ``p_acc(rho) - rho beta(rho)`` is non-increasing in
``rho``, that is every ``rho >= rho*``, the smallest root in ``[1, k]`` (``rho* = 1`` when it
is already lossless at 1: ``p = q``, disjoint supports, ``k = 1``).

**Which rho.** ``rho*`` is algebraic: on the linear piece of ``beta`` that holds it,
``rho^k (p_acc(rho) - rho beta(rho))`` is a polynomial of degree at most ``k + 1``.
:func:`rho_star` finds that piece exactly, gets ``rho*`` from sympy (a rational, or a
``CRootOf``), and then an exact bisection on the sign of ``p_acc(rho) - rho beta(rho)``
brackets it; the method runs at the simplest rational ``rho`` in
``[rho*, rho* + tolerance]`` (default tolerance ``10^-12``), or at ``rho*`` itself when that
is rational.  The registered ``kseq`` therefore runs at a rational ``rho`` with
``0 <= rho - rho* <= 10^-12`` (the gap is reported).  At such a ``rho > rho*``, ``p_acc(rho)``
is the explicit-accept probability and ``P(Y in X)`` is slightly larger (the residual can land
on a rejected draft); both are reported, ``P(Y in X)`` as the acceptance.  :func:`kseq_method`
makes the rule at any ``rho`` (``rho="exact"`` runs at the algebraic ``rho*`` in exact
number-field arithmetic, :mod:`exactspec.engine.algebraic`, where the two acceptances agree).

>>> from exactspec import Dist, verify
>>> p, q = Dist.parse("1/2,3/10,1/5", labels="abc"), Dist.parse("1/5,1/5,3/5", labels="abc")
>>> at2 = verify(kseq_method(2), p, q, 2)
>>> at2.lossless, at2.explicit_acceptance, at2.acceptance
(True, Fraction(279, 400), Fraction(18243, 24200))
>>> rho_star(p, q, 2).exact
sqrt(11)/5 + 4/5
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from ..core.budget import check_power
from ..core.dist import Dist, exact_str
from ..engine.merged import Done, Stepped, by_identity
from ..core.errors import InvalidInput, NotExact
from .base import Method

__all__ = ["kseq", "kseq_beta", "kseq_method", "kseq_residual", "rho_star", "RhoStar",
           "KSEQ_STEPS", "DEFAULT_TOLERANCE", "METHOD", "simplest_between"]

#: How far above ``rho*`` the registered ``kseq`` may run.
DEFAULT_TOLERANCE = Fraction(1, 10**12)


def kseq_beta(p: Dist, q: Dist, rho) -> Any:
    """``beta(rho) = sum_x min(p(x) / rho, q(x))``: one draft's chance of acceptance.

    >>> kseq_beta(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 2)
    Fraction(9, 20)
    """
    return sum((min(a / rho, b) for a, b in zip(p.probs, q.probs)), Fraction(0))


def _gap(p, q, k, rho, beta=None):
    """``p_acc(rho) - rho beta(rho)``: positive below ``rho*``, at most 0 from ``rho*`` on
    (``beta``: a :class:`_BetaTable` of ``(p, q)``, else :func:`kseq_beta`)."""
    b = kseq_beta(p, q, rho) if beta is None else beta(rho)
    check_power(1 - b, k, f"K-SEQ's acceptance 1 - (1 - beta)^k at k = {k}")
    return 1 - (1 - b) ** k - rho * b


class _BetaTable:
    """``beta(rho)`` in ``O(log V)`` after one pass over the tokens: the ratios ``p/q``
    sorted (``keys``), ``below[j]`` the mass of ``p`` on the tokens of the first ``j`` ratios
    and ``above[j]`` the mass of ``q`` on the others, so that ``beta(rho) = below[j] / rho +
    above[j]`` with ``j`` the number of ratios ``<= rho`` (equal to :func:`kseq_beta`)."""

    def __init__(self, p: Dist, q: Dist):
        groups: dict = {}
        for a, b in zip(p.probs, q.probs):
            if b != 0:                     # q(x) = 0 adds min(p(x)/rho, 0) = 0
                ratio = a / b
                seen = groups.get(ratio)
                groups[ratio] = (a, b) if seen is None else (seen[0] + a, seen[1] + b)
        self.keys = sorted(groups)
        below, above = [Fraction(0)], [Fraction(0)]
        for key in self.keys:
            below.append(below[-1] + groups[key][0])
        for key in reversed(self.keys):
            above.append(above[-1] + groups[key][1])
        above.reverse()
        self.below, self.above = below, above

    def __call__(self, rho):
        j = bisect.bisect_right(self.keys, rho)
        return self.below[j] / rho + self.above[j]

    def mass_p_at_most(self, rho):
        """``sum of p(x)`` over ``q(x) > 0``, ``p(x) <= rho q(x)``."""
        return self.below[bisect.bisect_right(self.keys, rho)]

    def mass_q_at_least(self, rho):
        """``sum of q(x)`` over ``q(x) > 0``, ``p(x) >= rho q(x)``."""
        return self.above[bisect.bisect_left(self.keys, rho)]


def simplest_between(lo: Fraction, hi: Fraction) -> Fraction:
    """The rational with the smallest denominator in ``[lo, hi]`` (``0 <= lo <= hi``).

    >>> simplest_between(Fraction(33, 100), Fraction(34, 100))
    Fraction(1, 3)
    >>> simplest_between(Fraction(31, 100), Fraction(33, 100))
    Fraction(5, 16)
    """
    if lo > hi:
        raise ValueError("empty interval")
    fl = math.floor(lo)
    if fl == lo or fl + 1 <= hi:
        return Fraction(math.ceil(lo))
    # lo and hi share the integer part fl and lo is not an integer: recurse on 1/(x - fl)
    return fl + 1 / simplest_between(1 / (hi - fl), 1 / (lo - fl))


@dataclass(frozen=True)
class RhoStar:
    """Where K-SEQ runs.

    Attributes
    ----------
    exact : Fraction or sympy expression
        ``rho*`` itself: a ``Fraction`` when rational, else a sympy ``CRootOf``.
    rho : Fraction
        The rational ``rho >= rho*`` the method runs at.
    lower : Fraction
        A rational ``<= rho*`` (equal to it when ``rho*`` is rational).
    piece : tuple
        ``(lo, hi)``: the linear piece of ``beta`` holding ``rho*``.
    polynomial : sympy expression
        ``rho^k (p_acc(rho) - rho beta(rho))`` on that piece, in ``x``.
    """

    exact: Any
    rho: Fraction
    lower: Fraction
    piece: tuple
    polynomial: Any

    @property
    def is_exact(self) -> bool:
        """Whether ``rho`` is ``rho*`` itself."""
        return self.rho == self.lower

    @property
    def gap_bound(self) -> Fraction:
        """An exact bound: ``0 <= rho - rho* <= gap_bound``."""
        return self.rho - self.lower

    @property
    def gap_float(self) -> float:
        """``rho - rho*`` (float, from sympy at 30 digits)."""
        if isinstance(self.exact, Fraction):
            return float(self.rho - self.exact)
        import sympy

        rho = sympy.Rational(self.rho.numerator, self.rho.denominator)
        return float((rho - self.exact).evalf(30))

    def to_json(self) -> dict:
        star = exact_str(self.exact) if isinstance(self.exact, Fraction) else str(self.exact)
        return {"rho": exact_str(self.rho), "rho_float": float(self.rho),
                "rho_star": star, "rho_star_float": float(
                    self.exact if isinstance(self.exact, Fraction) else self.exact.evalf(30)),
                "rho_is_rho_star": self.is_exact, "gap_bound": exact_str(self.gap_bound),
                "gap_float": self.gap_float}


def _check_exact(p: Dist, q: Dist) -> None:
    for name, d in (("p", p), ("q", q)):
        for lab, v in zip(d.labels, d.probs):
            if not isinstance(v, Fraction):
                raise NotExact(f"{name}[{lab}] = {exact_str(v)}: kseq at rho* needs exact "
                               "rationals; give a fixed rho (kseq_method(rho)) for symbolic runs")


def rho_star(p: Dist, q: Dist, k: int, tolerance: Fraction = DEFAULT_TOLERANCE) -> RhoStar:
    """K-SEQ's ``rho*`` exactly, and the rational ``rho`` in ``[rho*, rho* + tolerance]``
    the method runs at (``rho*`` itself when rational).

    >>> from exactspec.core.dist import Dist
    >>> r = rho_star(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 2)
    >>> r.piece, r.rho > r.exact, r.gap_bound <= Fraction(1, 10**12)
    ((Fraction(1, 1), Fraction(3, 2)), True, True)
    """
    _check_exact(p, q)
    tolerance = Fraction(tolerance)
    if tolerance <= 0:
        raise InvalidInput(f"tolerance={tolerance}: must be positive")
    return _rho_star(p, q, k, tolerance)


MAX_ROOT_DEGREE = 32


@lru_cache(maxsize=256)
def _rho_star(p: Dist, q: Dist, k: int, tolerance: Fraction) -> RhoStar:
    import sympy

    if k > MAX_ROOT_DEGREE:
        from ..core.errors import TooLarge

        raise TooLarge(f"K-SEQ at k = {k}: rho* is a root of a degree-{k} polynomial, and exact "
                       f"root isolation is refused above degree {MAX_ROOT_DEGREE} (its cost "
                       "grows steeply with the degree): use k <= "
                       f"{MAX_ROOT_DEGREE}, or rrs (merged recursion) for large k",
                       estimate=k, budget=MAX_ROOT_DEGREE)
    x = sympy.Symbol("x")
    one = Fraction(1)
    beta = _BetaTable(p, q)
    if _gap(p, q, k, one, beta) <= 0:
        return RhoStar(one, one, one, (one, one), sympy.Integer(0))
    top = Fraction(k)
    candidates = [b for b in beta.keys if 1 < b < top] + [top]
    # the first candidate where the gap (non-increasing in rho) is <= 0, by bisection; the
    # last one (top = k) always is
    first, last = 0, len(candidates) - 1
    while first < last:
        middle = (first + last) // 2
        if _gap(p, q, k, candidates[middle], beta) <= 0:
            last = middle
        else:
            first = middle + 1
    hi = candidates[first]
    lo = candidates[first - 1] if first else one
    # on (lo, hi): beta(rho) = A / rho + B
    A = beta.mass_p_at_most(lo)
    B = beta.mass_q_at_least(hi)
    rA, rB = sympy.Rational(A.numerator, A.denominator), sympy.Rational(B.numerator,
                                                                       B.denominator)
    poly = sympy.expand(x ** k - (x * (1 - rB) - rA) ** k - x ** k * (rA + rB * x))
    slo, shi = (sympy.Rational(v.numerator, v.denominator) for v in (lo, hi))
    roots = [r for r in sympy.Poly(poly, x).real_roots() if slo < r <= shi]
    if not roots:   # cannot happen: the sign changes on (lo, hi]
        raise AssertionError(f"internal: no root of {poly} in ({lo}, {hi}]")
    root = min(roots)
    if root.is_Rational:
        exact = Fraction(int(root.p), int(root.q))
        return RhoStar(exact, exact, exact, (lo, hi), poly)
    a, b = lo, hi            # invariant: gap(a) > 0 >= gap(b), so a < rho* <= b
    while b - a > tolerance / 2:
        mid = (a + b) / 2
        if _gap(p, q, k, mid, beta) <= 0:
            b = mid
        else:
            a = mid
    rho = simplest_between(b, min(a + tolerance, hi))
    return RhoStar(root, rho, a, (lo, hi), poly)


def kseq_residual(p: Dist, q: Dist, k: int, rho) -> Dist:
    """``norm(max(0, p - gamma min(p/rho, q)))`` with ``gamma = p_acc(rho) / beta(rho)``:
    where K-SEQ resamples after ``k`` rejections."""
    b = kseq_beta(p, q, rho)
    gamma = (1 - (1 - b) ** k) / b if b != 0 else 0
    masses = [max(a - gamma * min(a / rho, c), 0) for a, c in zip(p.probs, q.probs)]
    total = sum(masses[1:], masses[0])
    if total == 0:
        raise InvalidInput("the K-SEQ residual is empty: every draft is accepted")
    return Dist([m / total for m in masses], p.labels, check=False)


def _kseq_at(s, p, q, k, rho):
    drafts = s.drafts(q, k)
    for i, x in enumerate(drafts):
        if s.coin(min(1, p[x] / (rho * q[x])), f"accept{i + 1}"):
            return s.accept(x)
    return s.draw(kseq_residual(p, q, k, rho), "residual")


class _Plan:
    """K-SEQ's deterministic quantities for one exact ``(p, q, k, rho)``, computed once (the
    exact engine re-runs the method from the start for every path)."""

    def __init__(self, p, q, k, rho):
        self.accept = {x: min(1, p[x] / (rho * q[x])) for x in q.labels if q[x] != 0}
        self.args = (p, q, k, rho)
        self._residual = None

    @property
    def residual(self):
        if self._residual is None:
            self._residual = kseq_residual(*self.args)
        return self._residual


@lru_cache(maxsize=64)
def _plan(p, q, k, tolerance):
    return _Plan(p, q, k, rho_star(p, q, k, tolerance).rho)


def _kseq_planned(s, p, q, k, tolerance):
    plan = _plan(p, q, k, tolerance)
    drafts = s.drafts(q, k)
    for i, x in enumerate(drafts):
        if s.coin(plan.accept[x], f"accept{i + 1}"):
            return s.accept(x)
    return s.draw(plan.residual, "residual")


def kseq(s, p, q, k=1):
    """K-SEQ at the rational ``rho`` of :func:`rho_star` (within ``10^-12`` above ``rho*``)."""
    return _kseq_planned(s, p, q, k, DEFAULT_TOLERANCE)


@by_identity
def _step_residual(p, q, k, rho):
    return kseq_residual(p, q, k, rho)


@by_identity
def _step_ratios(p, q, rho) -> dict:
    """``x -> min(1, p(x) / (rho q(x)))``, filled as drafts are met."""
    return {}


def _steps(rho_of):
    rho_of = by_identity(rho_of)     # rho, the residual and the ratios once per (p, q, k)

    def start(p, q, k):
        return 0

    def step(s, p, q, k, i):
        rho = rho_of(p, q, k)
        if i == k:
            return Done(s.draw(_step_residual(p, q, k, rho), "residual"))
        x = s.draft(q, f"draft{i + 1}")
        ratios = _step_ratios(p, q, rho)
        ratio = ratios.get(x)
        if ratio is None:
            ratio = ratios[x] = min(1, p[x] / (rho * q[x]))
        if s.coin(ratio, f"accept{i + 1}"):
            return Done(s.accept(x))
        return i + 1

    return Stepped(start, step, name="kseq")


#: K-SEQ one draft per step (state: the number of drafts rejected so far).
KSEQ_STEPS = _steps(lambda p, q, k: rho_star(p, q, k).rho)


def _requires(p, q, k):
    _check_exact(p, q)


def kseq_method(rho: Any = None, tolerance: Fraction = DEFAULT_TOLERANCE) -> Method:
    """K-SEQ as a :class:`Method` at a chosen ``rho``.

    ``rho=None``: the rational ``rho`` within ``tolerance`` above ``rho*``; a number: that
    ``rho`` (lossless iff ``rho >= rho*``; a fixed rational ``rho`` also runs symbolically);
    ``"exact"``: the algebraic ``rho*`` itself, in exact arithmetic of ``Q(rho*)``.
    """
    if rho is None:
        def run(s, p, q, k=1):
            return _kseq_planned(s, p, q, k, tolerance)

        steps = _steps(lambda p, q, k: rho_star(p, q, k, tolerance).rho)
        name, requires = "kseq", _requires
    elif rho == "exact":
        from ..engine.algebraic import exact_root

        def rho_of(p, q, k):
            r = rho_star(p, q, k)
            return r.exact if isinstance(r.exact, Fraction) else exact_root(r.exact)

        def run(s, p, q, k=1):
            return _kseq_at(s, p, q, k, rho_of(p, q, k))

        steps = _steps(rho_of)
        name, requires = "kseq@rho*", _requires
    else:
        value = rho if not isinstance(rho, (int, str)) else Fraction(rho)

        def run(s, p, q, k=1):
            return _kseq_at(s, p, q, k, value)

        steps = _steps(lambda p, q, k: value)
        name, requires = f"kseq@{exact_str(value)}", None
    run.__name__ = name
    return Method(name, run, draft_law="iid", requires=requires, steps=steps,
                  summary=f"K-SEQ (SpecTr) at rho = {rho if rho is not None else 'rational'}")


METHOD = Method(
    "kseq", kseq, draft_law="iid", requires=_requires, steps=KSEQ_STEPS,
    summary="K-SEQ (SpecTr), k i.i.d. drafts: accept X_i with min(1, p/(rho q)); runs at a "
            "rational rho with 0 <= rho - rho* <= 1e-12 (rho* itself when rational)")
