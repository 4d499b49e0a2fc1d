"""RRS against the optimum: ``rho_k``'s tight instances run through the engine, and the
evidence for Baliga et al.'s bound ``alpha_RRS >= rho_k alpha*``.

:mod:`exactspec.bounds.rho.closed_form` derives ``rho_k`` with sympy and runs RRS on the tight family by a
hand recursion.  Here the *engine* does it: the registered ``rrs`` method (the code a user
would verify) runs

- over the whole family ``q = (1-a, a)``, ``p = (1-a^k, a^k)`` for a symbol ``0 < a < 1``
  (:func:`engine_tight_family`, via :mod:`exactspec.engine.interval`): lossless, with
  acceptance ``1 - (a^k - a^(2k-1))``; a second, family-specific verifier
  (:func:`tight_family_coupling`) is lossless with acceptance 1, so ``alpha* = 1``;
- at the maximiser ``a = a_k`` itself (:func:`engine_tight_instance`): a rational for
  ``k = 2`` (``p = (5/9, 4/9)``, ``q = (1/3, 2/3)``: acceptance ``23/27``), an exact algebraic
  number in ``Q(a_k)`` (:mod:`exactspec.engine.algebraic`) for ``k >= 3``;
- at rational ``a`` just below ``a_k`` (:func:`rational_tight_checks`): ratios exact, strictly
  above ``rho_k`` and decreasing to it.

Then the theorem's evidence on random rational instances, exact throughout:
:func:`ratio_survey` (the bound, and the smallest ratio found), :func:`lump` (the proof's
two-group lumping step), and :func:`two_token_bound` (the two-token case, symbolically).
Comparisons with the algebraic ``rho_k`` are certified (:func:`compare_with_rho`): rational
enclosures from integer roots, never a float.

>>> inst = engine_tight_instance(2)
>>> inst.p, inst.q, inst.acceptance, inst.alpha_star
(Dist({0: 5/9, 1: 4/9}), Dist({0: 1/3, 1: 2/3}), Fraction(23, 27), Fraction(1, 1))
>>> engine_tight_family(3).acceptance
a**5 - a**3 + 1
>>> compare_with_rho(Fraction(23, 27), 2), compare_with_rho(Fraction(8141, 10000), 3)
(0, 1)
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Sequence

import sympy as sp

from .closed_form import (certified_sign, check_k, gap_power, rational_tight_instances, rho,
                          tight_family)
from ...core.dist import Dist, exact_str
from ...engine.interval import piecewise
from ...engine.merged import Done, Stepped, enumerate_merged
from ...core.errors import InvalidInput
from ...methods import get_method
from ...optimum.alpha_star import alpha_star_brute_force, alpha_star_max_flow, optimum
from ...verify import verify

__all__ = [
    "rho_enclosure",
    "compare_with_rho",
    "tight_family_coupling",
    "EngineFamily",
    "engine_tight_family",
    "EngineInstance",
    "engine_tight_instance",
    "RationalInstance",
    "rational_tight_checks",
    "RRSChain",
    "rrs_chain",
    "rrs_by_engine",
    "Lumping",
    "lumping_group",
    "lump",
    "TwoTokenBound",
    "two_token_bound",
    "random_instances",
    "RatioRow",
    "RatioSurvey",
    "ratio_survey",
]


# --------------------------------------------------------------------------------------------
# Comparing with rho_k exactly
# --------------------------------------------------------------------------------------------

def rho_enclosure(k: int, digits: int = 40) -> tuple[Fraction, Fraction]:
    """Rationals ``lo <= rho_k <= hi`` with ``hi - lo <= 10^-digits``, by integer roots.

    ``m = 1 - rho_k`` satisfies ``m^(k-1) = N/D`` with integers ``N``, ``D``
    (``N = (k-1)^(k-1) k^k``, ``D = (2k-1)^(2k-1)``), so with ``S = 10^digits`` and
    ``r = floor(S (N/D)^(1/(k-1)))`` (an integer root of an integer) ``r/S <= m < (r+1)/S``.
    When ``m`` is rational (``k = 1, 2``) both ends are ``rho_k``, cross-checked against the
    sympy value of :func:`exactspec.bounds.rho.closed_form.rho`.

    >>> rho_enclosure(2)
    (Fraction(23, 27), Fraction(23, 27))
    >>> lo, hi = rho_enclosure(3, 6)
    >>> lo, hi
    (Fraction(50881, 62500), Fraction(814097, 1000000))
    """
    k = check_k(k)
    if k == 1:
        return Fraction(1), Fraction(1)
    n, d = gap_power(k)
    root, exact = sp.integer_nthroot(n * d**(k - 2), k - 1)     # (N/D)^(1/(k-1)) * D
    if exact:
        value = 1 - Fraction(int(root), d)
        if sp.Rational(value.numerator, value.denominator) != rho(k).rho:
            raise AssertionError(f"rho_{k}: the enclosure and sympy disagree")
        return value, value
    scale = 10**digits
    r = int(sp.integer_nthroot(n * scale**(k - 1) // d, k - 1)[0])
    return 1 - Fraction(r + 1, scale), 1 - Fraction(r, scale)


def compare_with_rho(x, k: int) -> int:
    """The exact sign of ``x - rho_k`` for a rational ``x``: ``-1``, ``0`` or ``1``.

    Compared with a rational enclosure of ``rho_k`` (:func:`rho_enclosure`, 40 then 400
    digits); an ``x`` inside both is settled by :func:`exactspec.bounds.rho.closed_form.certified_sign` on
    the sympy value (which also decides equality).

    >>> compare_with_rho(Fraction(3, 4), 5), compare_with_rho(1, 1)
    (-1, 0)
    """
    x = Fraction(x)
    for digits in (40, 400):
        lo, hi = rho_enclosure(k, digits)
        if lo == hi:
            return (x > lo) - (x < lo)
        if x < lo:
            return -1
        if x > hi:
            return 1
    return certified_sign(sp.Rational(x.numerator, x.denominator) - rho(k).rho)


# --------------------------------------------------------------------------------------------
# The tight family, through the engine
# --------------------------------------------------------------------------------------------

def tight_family_coupling(s, p, q, k=1):
    """A lossless verifier with acceptance 1 on the tight family (so ``alpha* = 1`` there).

    For ``q = (1-a, a)``, ``p = (1-a^k, a^k)`` on tokens ``0, 1``: output ``1`` when every
    draft is ``1`` (probability ``a^k = p(1)``), else output ``0``, which is then one of the
    drafts.  Its law is ``p`` exactly and ``Y`` is always a draft: an explicit coupling that
    reaches acceptance 1.  (It is lossless only on this family; the engine checks that.)
    """
    drafts = s.drafts(q, k)
    one, zero = q.labels[1], q.labels[0]
    if all(x == one for x in drafts):
        return s.accept(one)
    return s.accept(zero)


def _coupling_start(p, q, k):
    return (0, True)


def _coupling_step(s, p, q, k, state):
    i, all_ones = state
    if i == k:
        return Done(s.accept(q.labels[1] if all_ones else q.labels[0]))
    x = s.draft(q, f"draft{i + 1}")
    return (i + 1, all_ones and x == q.labels[1])


#: :func:`tight_family_coupling` one draft per step (state: drafts so far, all equal to 1?).
TIGHT_COUPLING_STEPS = Stepped(_coupling_start, _coupling_step, name="tight-family-coupling")


def _family(a, k: int) -> tuple[Dist, Dist]:
    """``p = (1 - a^k, a^k)``, ``q = (1 - a, a)`` on tokens ``0, 1``; ``a`` exact or symbolic."""
    check = isinstance(a, Fraction)
    return (Dist([1 - a**k, a**k], check=check, name="p"),
            Dist([1 - a, a], check=check, name="q"))


def _cut_minimum(p: Sequence, q: Sequence, k: int):
    """``min over subsets A of p(A) + 1 - q(A)^k`` in whatever exact arithmetic ``p, q`` use
    (comparisons decided by it): docs/math.md#the-optimum's min-cut form of ``alpha*``."""
    n = len(p)
    best = None
    for size in range(n + 1):
        for subset in itertools.combinations(range(n), size):
            pa = sum((p[i] for i in subset), Fraction(0))
            qa = sum((q[i] for i in subset), Fraction(0))
            value = pa + 1 - qa**k
            best = value if best is None or value < best else best
    return best


@dataclass(frozen=True)
class EngineFamily:
    """RRS run by the engine on ``q = (1-a, a)``, ``p = (1-a^k, a^k)`` for all ``0 < a < 1``.

    Attributes
    ----------
    k : int
    a : sympy.Symbol
    pieces : int
        How many pieces the run over ``(0, 1)`` split into (1: no sign changes inside).
    lossless : bool
        RRS's law equals ``p`` identically.
    acceptance : sympy.Expr
        RRS's ``P(Y in X)`` as a polynomial in ``a``.
    paths : int
        Paths enumerated per run.
    coupling_lossless, coupling_acceptance
        :func:`tight_family_coupling`'s verdict and acceptance (1): ``alpha* >= 1``.
    cut_minimum : sympy.Expr
        ``min_A p(A) + 1 - q(A)^k`` with every comparison decided on ``(0, 1)``.
    hand : sympy.Expr
        :func:`exactspec.bounds.rho.closed_form.tight_family`'s hand-recursion acceptance.
    conditions : tuple of str
        The signs the engine decided for all ``a`` in ``(0, 1)``.
    proved : bool
        Everything above as claimed: lossless, acceptance ``1 - (a^k - a^(2k-1))`` equal to
        the hand recursion, coupling lossless with acceptance 1, cut minimum 1, one piece.
    """

    k: int
    a: sp.Symbol
    pieces: int
    lossless: bool
    acceptance: sp.Expr
    paths: int
    coupling_lossless: bool
    coupling_acceptance: sp.Expr
    cut_minimum: sp.Expr
    hand: sp.Expr
    conditions: tuple
    proved: bool


def engine_tight_family(k: int) -> EngineFamily:
    """Run ``verify("rrs", p, q, k)`` over the tight family for a symbol ``0 < a < 1``.

    :func:`exactspec.engine.interval.piecewise` decides every comparison RRS makes (e.g.
    ``r_0(0)/q(0) - 1 = (a - a^k)/(1 - a) > 0``) for all ``a`` in ``(0, 1)`` at once, from the
    real roots of its numerator and denominator; the enumeration's law and acceptance come
    out as polynomials in ``a``.

    >>> fam = engine_tight_family(2)
    >>> fam.acceptance, fam.lossless, fam.coupling_acceptance, fam.cut_minimum, fam.proved
    (a**3 - a**2 + 1, True, 1, 1, True)
    """
    k = check_k(k)
    a = sp.Symbol("a")
    rrs, coupling = get_method("rrs"), tight_family_coupling

    def run(v):
        p, q = _family(v, k)
        r = verify(rrs, p, q, k, max_paths=None)
        c = verify(coupling, p, q, k, max_paths=None)
        return {"lossless": r.lossless, "acceptance": r.acceptance, "paths": r.paths,
                "coupling_lossless": c.lossless, "coupling_acceptance": c.acceptance,
                "cut": _cut_minimum(p.probs, q.probs, k)}

    pieces = piecewise(run, a, 0, 1)
    values = pieces[0].values
    acceptance = sp.expand(values["acceptance"])
    by_hand = tight_family(k)
    hand = by_hand.rrs.subs(by_hand.a, a)
    proved = (len(pieces) == 1 and values["lossless"] is True
              and sp.expand(acceptance - (1 - (a**k - a**(2 * k - 1)))) == 0
              and sp.expand(acceptance - hand) == 0
              and values["coupling_lossless"] is True and values["coupling_acceptance"] == 1
              and values["cut"] == 1)
    return EngineFamily(k, a, len(pieces), values["lossless"] is True, acceptance,
                        int(values["paths"]), values["coupling_lossless"] is True,
                        values["coupling_acceptance"], values["cut"], sp.expand(hand),
                        pieces[0].conditions, proved)


@dataclass
class EngineInstance:
    """RRS run by the engine at the maximiser ``a = a_k`` (``a = 1/2`` for ``k = 1``).

    ``a`` is a ``Fraction`` when rational (``k = 1, 2``), else an exact
    :class:`~exactspec.engine.algebraic.Algebraic` in ``Q(a_k)``; ``p``, ``q``, the
    acceptance and ``alpha_star`` are in the same arithmetic.  ``expected`` is
    ``1 - (a^k - a^(2k-1))`` in that arithmetic and ``rho`` the sympy ``rho_k``;
    ``checked`` is True when the acceptance equals ``expected`` exactly, RRS is lossless,
    ``alpha* = 1`` (coupling and cut minimum; for rational ``a`` also :func:`optimum`, brute
    force and max flow) and a 40-digit enclosure of the acceptance meets that of ``rho_k``.
    ``certificates`` holds the path certificates (rational ``a`` only); ``interpreter`` is
    ``"paths"`` (plain enumeration, ``paths`` paths) or ``"merged"`` (the merged-state
    interpreter, used above ``k = 8``).
    """

    k: int
    a: Any
    p: Dist
    q: Dist
    acceptance: Any
    alpha_star: Any
    expected: Any
    rho: sp.Expr
    lossless: bool
    paths: int
    checks: dict
    certificates: list = field(default_factory=list)
    interpreter: str = "paths"

    @property
    def checked(self) -> bool:
        return self.lossless and all(self.checks.values())

    @property
    def ratio(self):
        return self.acceptance / self.alpha_star


def _enclose(x, digits: int) -> tuple[Fraction, Fraction]:
    """Rational bounds on an exact value (Fraction or Algebraic) of width ``<= 10^-digits``."""
    if isinstance(x, Fraction):
        return x, x
    while True:
        lo, hi = x._bounds()
        if hi - lo <= Fraction(1, 10**digits):
            return lo, hi
        x.field.refine()


#: Up to this ``k`` the tight instance runs by plain path enumeration (``2^k`` draft tuples);
#: beyond, by the merged-state interpreter.
_PLAIN_K = 8


def engine_tight_instance(k: int) -> EngineInstance:
    """``verify("rrs", p, q, k)`` at ``q = (1 - a_k, a_k)``, ``p = (1 - a_k^k, a_k^k)``.

    For ``k >= 3`` the maximiser ``a_k = (k/(2k-1))^(1/(k-1))`` is irrational; the engine
    then computes in ``Q(a_k)`` exactly (:func:`exactspec.engine.algebraic.exact_root`).

    >>> inst = engine_tight_instance(3)
    >>> inst.acceptance == inst.expected, inst.alpha_star, inst.checked
    (True, Fraction(1, 1), True)
    >>> inst.rho
    1 - 6*sqrt(15)/125
    """
    from ...engine.algebraic import exact_root

    k = check_k(k)
    r = rho(k)
    argmax = sp.Rational(1, 2) if r.argmax is None else r.argmax
    a = exact_root(argmax)
    rational = isinstance(a, Fraction)
    p, q = _family(a, k)
    m = get_method("rrs")
    if k <= _PLAIN_K:
        result = verify(m, p, q, k, keep_paths=rational, max_paths=None)
        coupling = verify(tight_family_coupling, p, q, k, keep_paths=rational, max_paths=None)
        enumeration, lossless = result.enumeration, result.lossless
        coupling_ok = coupling.lossless and coupling.acceptance == 1
    else:       # 2^k paths: the merged-state interpreter, O(k) states
        enumeration = enumerate_merged(m.steps, p, q, k)
        lossless = all(enumeration.law[t] == p[t] for t in p.labels)
        merged = enumerate_merged(TIGHT_COUPLING_STEPS, p, q, k)
        coupling_ok = (all(merged.law[t] == p[t] for t in p.labels)
                       and merged.acceptance == 1)
    cut = _cut_minimum(p.probs, q.probs, k)
    expected = 1 - (a**k - a**(2 * k - 1))
    acceptance = enumeration.acceptance
    lo, hi = _enclose(acceptance, 40)
    rlo, rhi = rho_enclosure(k, 40)
    checks = {
        "acceptance = 1 - (a^k - a^(2k-1))": acceptance == expected,
        "coupling lossless with acceptance 1": coupling_ok,
        "cut minimum = 1": cut == 1,
        "acceptance meets rho_k (40-digit enclosures)": lo <= rhi and rlo <= hi,
    }
    certificates = []
    alpha_star = Fraction(1) if checks["coupling lossless with acceptance 1"] else cut
    if rational and k <= _PLAIN_K:
        checks["alpha* = 1 (closed form, brute force, max flow)"] = (
            optimum(p, q, k).alpha_star == alpha_star_brute_force(p, q, k)
            == alpha_star_max_flow(p, q, k) == 1)
        checks["acceptance = rho_k"] = compare_with_rho(acceptance, k) == 0
        certificates = [result.certificate(), coupling.certificate()]
    return EngineInstance(k, a, p, q, acceptance, alpha_star, expected, r.rho, lossless,
                          enumeration.paths, checks, certificates,
                          "paths" if k <= _PLAIN_K else "merged")


@dataclass(frozen=True)
class RationalInstance:
    """The family at a rational ``a`` below ``a_k``: the engine's exact ratio, above ``rho_k``.

    ``ratio = acceptance / alpha_star``; ``above`` is ``compare_with_rho(ratio, k) > 0``;
    ``gap_upper`` is a rational upper bound on ``ratio - rho_k``.
    """

    k: int
    a: Fraction
    p: Dist
    q: Dist
    acceptance: Fraction
    alpha_star: Fraction
    ratio: Fraction
    lossless: bool
    above: bool
    gap_upper: Fraction
    certificate: dict


def rational_tight_checks(k: int, n: int = 4) -> list[RationalInstance]:
    """The first ``n`` of :func:`exactspec.bounds.rho.closed_form.rational_tight_instances` (decimal
    truncations of ``a_k``), each run through the engine: ``verify("rrs")`` for the acceptance
    (with its path certificate), :func:`optimum` for ``alpha*``, the ratio compared with
    ``rho_k`` exactly.

    >>> [(str(r.a), str(r.ratio), r.above) for r in rational_tight_checks(3, 2)]
    [('7/10', '82507/100000', True), ('77/100', '8141454157/10000000000', True)]
    """
    k = check_k(k)
    rows = []
    lower = rho_enclosure(k, 60)[0]
    for a, hand_ratio in rational_tight_instances(k, n):
        p, q = _family(a, k)
        result = verify(get_method("rrs"), p, q, k, keep_paths=True, max_paths=None)
        alpha = optimum(p, q, k).alpha_star
        ratio = result.acceptance / alpha
        if ratio != hand_ratio:
            raise AssertionError(f"k={k}, a={a}: engine ratio {ratio} != hand {hand_ratio}")
        rows.append(RationalInstance(k, a, p, q, result.acceptance, alpha, ratio,
                                     result.lossless, compare_with_rho(ratio, k) > 0,
                                     ratio - lower, result.certificate()))
    return rows


# --------------------------------------------------------------------------------------------
# RRS's residual chain, and the engine's RRS on explicit instances
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RRSChain:
    """RRS's residuals and rejection probabilities on ``(p, q, k)``, from the product formula.

    ``residuals[i]`` is ``r_i`` (``r_0 = p``, as tuples in token order), ``tvs[i]`` is
    ``TV(r_i, q)`` for the steps taken; the chain stops early when a ``TV`` is 0 (that step
    accepts surely).  ``rejection = prod tvs`` (0 when it stopped early) and
    ``acceptance = 1 - rejection``.
    """

    residuals: tuple
    tvs: tuple
    rejection: Fraction
    acceptance: Fraction

    @property
    def complete(self) -> bool:
        """All ``k`` drafts can be rejected (``rejection > 0``): ``r_k`` exists."""
        return self.rejection > 0


def rrs_chain(p: Dist, q: Dist, k: int) -> RRSChain:
    """RRS in closed form: ``r_i = norm(max(0, r_{i-1} - q))``, acceptance
    ``1 - prod_i TV(r_{i-1}, q)`` (docs/math.md#rrs-and-the-tight-ratio), written without the engine.

    >>> c = rrs_chain(Dist.parse("5/9,4/9"), Dist.parse("1/3,2/3"), 2)
    >>> c.tvs, c.acceptance, c.residuals[-1]
    ((Fraction(2, 9), Fraction(2, 3)), Fraction(23, 27), (Fraction(1, 1), Fraction(0, 1)))
    """
    qs = tuple(q.probs)
    r = tuple(p.probs)
    residuals, tvs = [r], []
    for _ in range(k):
        excess = [max(x - y, Fraction(0)) for x, y in zip(r, qs)]
        tv = sum(excess, Fraction(0))
        tvs.append(tv)
        if tv == 0:
            break
        r = tuple(e / tv for e in excess)
        residuals.append(r)
    rejection = Fraction(1)
    for tv in tvs:
        rejection *= tv
    return RRSChain(tuple(residuals), tuple(tvs), rejection, 1 - rejection)


def rrs_by_engine(p: Dist, q: Dist, k: int, *, merged: bool = True):
    """The engine's exact run of the registered ``rrs`` on ``(p, q, k)``: the merged-state
    interpreter (``merged=True``, ``O(k |V|)`` work) or the plain path enumeration."""
    m = get_method("rrs")
    if merged:
        return enumerate_merged(m.steps, p, q, k)
    return verify(m, p, q, k, max_paths=None).enumeration


# --------------------------------------------------------------------------------------------
# The lumping step
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Lumping:
    """The proof's two-group lumping of one instance (see :func:`lump`).

    Attributes
    ----------
    high : tuple
        The labels of the group ``H``.
    p2, q2 : Dist
        The lumped instance on labels ``("H", "L")``: ``(p(H), p(L))``, ``(q(H), q(L))``.
    rrs, rrs_lumped : Fraction
        RRS's acceptance before and after lumping (engine, merged interpreter).
    alpha_star, alpha_star_lumped : Fraction
        ``alpha*`` before and after lumping.
    steps : dict
        The proof's intermediate facts, each True or False (empty when ``complete`` is
        False): ``H`` inside every excess set, each ``TV_i <= q(L)``, the scalar identity, the
        lumped closed form.
    complete : bool
        Whether RRS can reject all ``k`` drafts (otherwise its acceptance is 1).
    """

    high: tuple
    p2: Dist
    q2: Dist
    rrs: Fraction
    rrs_lumped: Fraction
    alpha_star: Fraction
    alpha_star_lumped: Fraction
    steps: dict
    complete: bool

    @property
    def rrs_not_increased(self) -> bool:
        return self.rrs_lumped <= self.rrs

    @property
    def alpha_star_not_decreased(self) -> bool:
        return self.alpha_star_lumped >= self.alpha_star

    @property
    def holds(self) -> bool:
        """Both inequalities, and every intermediate fact of the proof."""
        return self.rrs_not_increased and self.alpha_star_not_decreased and all(
            self.steps.values())


def lumping_group(p: Dist, q: Dist, k: int) -> tuple:
    """The group ``H`` of the lumping step, as a tuple of labels.

    When RRS rejects all ``k`` drafts with positive probability, ``H`` is the support of
    the final residual ``r_k = norm(max(0, r_{k-1} - q))``: the tokens where the sign of
    ``r_{k-1} - q`` is positive.  Otherwise (some step accepts surely, RRS's acceptance is 1)
    ``H = {t : p(t) > q(t)}``; any group would do there.

    >>> lumping_group(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 2)
    (0, 1)
    """
    chain = rrs_chain(p, q, k)
    if chain.complete:
        final = chain.residuals[k]
        return tuple(lab for lab, x in zip(p.labels, final) if x > 0)
    return tuple(lab for lab in p.labels if p[lab] > q[lab])


def lump(p: Dist, q: Dist, k: int, group: Sequence | None = None) -> Lumping:
    """Merge the tokens into two groups, ``H`` (:func:`lumping_group`) and ``L = V \\ H``,
    and compare RRS and ``alpha*`` before and after.

    The lumped instance has two tokens, ``p2 = (p(H), p(L))`` and ``q2 = (q(H), q(L))``.
    The step claims ``alpha_RRS(p2, q2) <= alpha_RRS(p, q)`` and
    ``alpha*(p2, q2) >= alpha*(p, q)``.

    Why (checked step by step in ``steps``): ``alpha*`` is a minimum over subsets ``A`` of
    ``p(A) + 1 - q(A)^k``, and lumping only removes subsets (those that split a group), so
    it cannot decrease.  For RRS, let ``S_i = {t : r_{i-1}(t) > q(t)}``; these sets are
    nested and ``H = S_k`` lies in every one, so ``TV_i = r_{i-1}(S_i) - q(S_i) <= 1 - q(H)``
    and, with ``R_i = TV_1 ... TV_i``, the mass ``R_i r_i(H)`` follows the scalar recursion
    ``R_i r_i(H) = R_{i-1} r_{i-1}(H) - R_{i-1} q(H)``; since ``r_k(H) = 1``,
    ``R_k = p(H) - q(H) (1 + R_1 + ... + R_{k-1})``.  Bounding each ``R_j >= R_k / q(L)^(k-j)``
    gives ``R_k <= (p(H) - q(H)) q(L)^(k-1)``, which is the lumped instance's rejection
    probability.  (Grouping instead by the sign of ``r_k - q``, one step later, fails on
    random instances: the claim records how often.)

    Parameters
    ----------
    group : sequence of labels, optional
        Use this ``H`` instead of :func:`lumping_group` (the proof's facts are then not
        checked).

    Examples
    --------
    >>> lp = lump(Dist.parse("3/5,1/5,1/5"), Dist.parse("1/3,1/2,1/6"), 2)
    >>> lp.high, lp.p2, lp.q2
    ((0,), Dist({'H': 3/5, 'L': 2/5}), Dist({'H': 1/3, 'L': 2/3}))
    >>> lp.rrs_lumped, lp.rrs, lp.alpha_star_lumped, lp.alpha_star, lp.holds
    (Fraction(37, 45), Fraction(5, 6), Fraction(43, 45), Fraction(19, 20), True)
    """
    chain = rrs_chain(p, q, k)
    high = lumping_group(p, q, k) if group is None else tuple(group)
    hset = set(high)
    ph = sum((p[t] for t in high), Fraction(0))
    qh = sum((q[t] for t in high), Fraction(0))
    p2 = Dist([ph, 1 - ph], ("H", "L"), name="p")
    q2 = Dist([qh, 1 - qh], ("H", "L"), name="q")
    rrs = rrs_by_engine(p, q, k).acceptance
    rrs2 = rrs_by_engine(p2, q2, k).acceptance
    steps: dict = {}
    if group is None and chain.complete:
        labels = p.labels
        ql = 1 - qh
        excess_sets = [{lab for lab, x, y in zip(labels, r, q.probs) if x > y}
                       for r in chain.residuals[:k]]
        partial = [Fraction(1)]
        for tv in chain.tvs:
            partial.append(partial[-1] * tv)
        steps = {
            "RRS closed form = engine": chain.acceptance == rrs,
            "H = S_k lies in every S_i": all(hset <= s for s in excess_sets)
            and hset == excess_sets[-1],
            "TV_i <= q(L) for i >= 2": all(tv <= ql for tv in chain.tvs[1:]),
            "R_k = p(H) - q(H)(1 + R_1 + ... + R_(k-1))":
                partial[k] == ph - qh * sum(partial[:k], Fraction(0)),
            "lumped RRS = 1 - (p(H) - q(H)) q(L)^(k-1)": rrs2 == 1 - (ph - qh) * ql**(k - 1),
        }
    return Lumping(high, p2, q2, rrs, rrs2, optimum(p, q, k).alpha_star,
                   optimum(p2, q2, k).alpha_star, steps, chain.complete)


# --------------------------------------------------------------------------------------------
# The two-token case, symbolically
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TwoTokenBound:
    """The bound on two tokens, symbolically (see :func:`two_token_bound`)."""

    k: Any
    steps: tuple
    proved: bool


def two_token_bound(k: int | None = None) -> TwoTokenBound:
    """``alpha_RRS / alpha* >= rho_k`` for every two-token instance, shown with sympy.

    Name the token RRS's residual ends on ``H`` (``P = p(H) > Q = q(H)``; if ``P <= Q`` swap
    the tokens, and if ``P = Q`` RRS accepts surely) and put ``a = q(L) = 1 - Q``.  Then
    ``alpha_RRS = 1 - (P - Q) a^(k-1)`` (the engine proves this for ``k <= 4`` over every
    two-token ``p, q``: the ``lumping-step`` claim; it is the lumped closed form) and
    ``alpha* = min(1, 2 - P - a^k)``.  Two regions:

    - ``P <= 1 - a^k``: ``alpha* = 1`` and ``(P - Q) a^(k-1) <= (a - a^k) a^(k-1) =
      a^k - a^(2k-1) <= 1 - rho_k``;
    - ``P >= 1 - a^k``: the ratio ``N/D`` with ``N = 1 - (P - Q) a^(k-1)``,
      ``D = 2 - P - a^k > 0`` has ``d/dP (N/D) = (N - a^(k-1) D)/D^2`` and sympy shows
      ``N - a^(k-1) D = (1 - a^(k-1))(1 - a^k) >= 0``, so the ratio is smallest at
      ``P = 1 - a^k``, where it is ``1 - (a^k - a^(2k-1)) >= rho_k``.

    ``k=None`` proves the identities for a symbolic positive integer ``k``.

    >>> two_token_bound(3).proved, two_token_bound().proved
    (True, True)
    """
    kk = sp.Symbol("k", integer=True, positive=True) if k is None else check_k(k)
    a, P = sp.symbols("a P", positive=True)
    Q = 1 - a
    N = 1 - (P - Q) * a**(kk - 1)
    D = 2 - P - a**kk
    derivative = sp.diff(N / D, P)
    numerator = sp.simplify(derivative * D**2)
    identity = sp.simplify(sp.expand(N - a**(kk - 1) * D - (1 - a**(kk - 1)) * (1 - a**kk)))
    same = sp.simplify(sp.expand(numerator - (N - a**(kk - 1) * D)))
    boundary = sp.simplify(sp.expand(N.subs(P, 1 - a**kk) - (1 - (a**kk - a**(2 * kk - 1)))))
    region_one = sp.simplify(sp.expand((1 - a**kk - Q) * a**(kk - 1) - (a**kk - a**(2 * kk - 1))))
    steps = (
        f"alpha_RRS = {N}, alpha* = min(1, {D}) with a = q(L), P = p(H)",
        f"P <= 1 - a^k: (P - Q) a^(k-1) is largest at P = 1 - a^k, where it minus "
        f"(a^k - a^(2k-1)) simplifies to {region_one}",
        f"P >= 1 - a^k: d/dP (N/D) * D^2 - (N - a^(k-1) D) simplifies to {same}",
        f"N - a^(k-1) D - (1 - a^(k-1))(1 - a^k) simplifies to {identity}: "
        "the derivative is >= 0 for 0 < a < 1",
        f"at P = 1 - a^k: N - (1 - (a^k - a^(2k-1))) simplifies to {boundary}",
        "so alpha_RRS / alpha* >= 1 - (a^k - a^(2k-1)) >= rho_k on two tokens",
    )
    proved = identity == 0 and same == 0 and boundary == 0 and region_one == 0
    return TwoTokenBound(kk, steps, proved)


# --------------------------------------------------------------------------------------------
# The bound on random rational instances
# --------------------------------------------------------------------------------------------

def random_instances(count: int, seed: int = 0, *, vocab: Sequence[int] = (2, 3, 4, 5, 6),
                     ks: Sequence[int] = (2, 3, 4, 5), denominator: int = 12) -> list:
    """``count`` random rational ``(p, q, k)``, cycling through every ``(|V|, k)`` pair;
    entries are integer weights ``0..denominator`` normalised (zeros allowed).

    >>> [(len(p), k) for p, q, k in random_instances(3)]
    [(2, 2), (3, 2), (4, 2)]
    """
    from ...core.random_dists import random_pair

    rng = random.Random(seed)
    pairs = [(n, k) for k in ks for n in vocab]
    out = []
    for i in range(count):
        n, k = pairs[i % len(pairs)]
        p, q = random_pair(rng, n, denominator=denominator)
        out.append((p, q, k))
    return out


@dataclass(frozen=True)
class RatioRow:
    """One instance of the survey: RRS (engine), ``alpha*``, their ratio (``None`` when
    ``alpha* = 0``) and the exact sign of ``ratio - rho_k``."""

    p: Dist
    q: Dist
    k: int
    rrs: Fraction
    alpha_star: Fraction
    ratio: Fraction | None
    sign: int

    def to_json(self) -> dict:
        return {"p": self.p.to_json(), "q": self.q.to_json(), "k": self.k,
                "alpha_rrs": exact_str(self.rrs), "alpha_star": exact_str(self.alpha_star),
                "ratio": None if self.ratio is None else exact_str(self.ratio),
                "ratio_float": None if self.ratio is None else float(self.ratio)}


@dataclass
class RatioSurvey:
    """The bound on a corpus.

    ``rows`` in corpus order; ``violations`` the rows with ``ratio < rho_k``; ``disagreements``
    describes any instance where two computations of the same number differed (RRS: engine
    vs closed form, and the plain enumeration on every ``plain_every``-th instance;
    ``alpha*``: closed form vs brute force, and max flow likewise).
    """

    rows: list
    violations: list
    disagreements: list
    plain_checked: int
    flow_checked: int

    def smallest(self, k: int | None = None) -> RatioRow | None:
        """The row with the smallest ratio (among those with draft count ``k``)."""
        rows = [r for r in self.rows if r.ratio is not None and (k is None or r.k == k)]
        return min(rows, key=lambda r: r.ratio) if rows else None

    def closest(self) -> RatioRow | None:
        """The row with the smallest ``ratio / rho_k`` (compared with 40-digit enclosures)."""
        rows = [r for r in self.rows if r.ratio is not None]
        return min(rows, key=lambda r: r.ratio / rho_enclosure(r.k, 40)[1]) if rows else None

    @property
    def holds(self) -> bool:
        return not self.violations and not self.disagreements


def ratio_survey(instances, *, plain_every: int = 0, flow_every: int = 0,
                 plain_budget: int = 300) -> RatioSurvey:
    """``alpha_RRS >= rho_k alpha*`` on every instance, exactly.

    RRS's acceptance comes from the engine (the registered ``rrs``, merged-state
    interpreter) and must equal the product formula (:func:`rrs_chain`); ``alpha*`` from
    :func:`optimum` must equal the brute-force minimum over subsets.  The ratio is compared
    with ``rho_k`` by :func:`compare_with_rho`.  With ``plain_every = m > 0`` every ``m``-th
    instance with at most ``plain_budget`` draft tuples (``|supp q|^k``) also runs the plain
    path enumeration, and with ``flow_every`` the exact max flow.

    >>> s = ratio_survey(random_instances(40, seed=1), plain_every=5)
    >>> s.holds, len(s.rows), s.plain_checked
    (True, 40, 8)
    """
    rows, violations, disagreements = [], [], []
    plain = flow = 0
    for i, (p, q, k) in enumerate(instances):
        engine = rrs_by_engine(p, q, k).acceptance
        closed = rrs_chain(p, q, k).acceptance
        alpha = optimum(p, q, k).alpha_star
        if engine != closed:
            disagreements.append(f"RRS engine {engine} vs closed form {closed} at p={p}, q={q}, "
                                 f"k={k}")
        if alpha != alpha_star_brute_force(p, q, k):
            disagreements.append(f"alpha* closed form vs brute force at p={p}, q={q}, k={k}")
        if plain_every and i % plain_every == 0 and len(q.support)**k <= plain_budget:
            plain += 1
            if rrs_by_engine(p, q, k, merged=False).acceptance != engine:
                disagreements.append(f"RRS plain vs merged enumeration at p={p}, q={q}, k={k}")
        if flow_every and i % flow_every == 0:
            flow += 1
            if alpha_star_max_flow(p, q, k) != alpha:
                disagreements.append(f"alpha* closed form vs max flow at p={p}, q={q}, k={k}")
        if alpha == 0:
            row = RatioRow(p, q, k, engine, alpha, None, 1)
        else:
            ratio = engine / alpha
            row = RatioRow(p, q, k, engine, alpha, ratio, compare_with_rho(ratio, k))
            if row.sign < 0:
                violations.append(row)
        rows.append(row)
    return RatioSurvey(rows, violations, disagreements, plain, flow)
