"""RRS's neighbours against RRS and the optimum: RRS without replacement, and K-SEQ's guarantee.

Two statements from docs/methods.md#guarantees, checked exactly on random rational instances:

- **RRS without replacement is never worse than RRS** (:func:`wor_survey`): the engine runs
  the registered ``rrs`` and ``rrs-wor`` (merged-state interpreter; the plain enumeration
  on a sample) wherever ``rrs-wor`` is defined (``k <=`` the size of ``q``'s support).
- **K-SEQ's guarantee** (:func:`kseq_survey`): SpecTr states that K-SEQ is
  ``(1 - 1/e)``-optimal; a secondary note gives ``1 - (1 - 1/k)^k``, which is larger for every
  finite ``k`` (it decreases to ``1 - 1/e``), so the stronger of the two.  K-SEQ's acceptance
  at its algebraic ``rho*`` is ``p_acc(rho*)``, and ``p_acc`` is non-increasing in ``rho``,
  so the rational ``lower <= rho* <= rho`` of :func:`exactspec.methods.kseq.rho_star` give
  exact rational bounds ``p_acc(rho) <= p_acc(rho*) <= p_acc(lower)``; each constant is
  compared with those bounds (``1 - 1/e`` through a rational enclosure of ``e``).  On a sample
  the engine runs K-SEQ at ``rho*`` itself, in ``Q(rho*)``, and its acceptance must lie
  between the bounds and satisfy the guarantees exactly.

>>> from exactspec.core.dist import Dist
>>> p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
>>> row = kseq_bounds(p, q, 2, engine=True)
>>> row.alpha_star, row.engine, row.lower <= row.engine <= row.upper
(Fraction(21, 25), Algebraic(2*sqrt(11)/25 + 13/25), True)
>>> row.guarantee("1-(1-1/k)^k"), row.guarantee("1-1/e")
(1, 1)
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..core.dist import Dist, exact_str
from ..engine.merged import enumerate_merged
from ..methods import get_method
from ..optimum.alpha_star import optimum

__all__ = ["e_enclosure", "KSEQ_CONSTANTS", "constant_bounds", "WorRow", "WorSurvey",
           "wor_survey", "KseqRow", "kseq_bounds", "KseqSurvey", "kseq_survey"]


# --------------------------------------------------------------------------------------------
# RRS without replacement against RRS
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class WorRow:
    """One instance: RRS and RRS without replacement, both by the engine."""

    p: Dist
    q: Dist
    k: int
    rrs: Fraction
    rrs_wor: Fraction

    @property
    def margin(self) -> Fraction:
        return self.rrs_wor - self.rrs

    def to_json(self) -> dict:
        return {"p": self.p.to_json(), "q": self.q.to_json(), "k": self.k,
                "alpha_rrs": exact_str(self.rrs), "alpha_rrs_wor": exact_str(self.rrs_wor)}


@dataclass
class WorSurvey:
    """``rows`` where ``rrs-wor`` is defined; ``skipped`` counts the others; ``worse`` the rows
    with ``rrs-wor < rrs``; ``disagreements`` where the plain and merged enumerations differ."""

    rows: list
    skipped: int
    worse: list
    disagreements: list
    plain_checked: int

    @property
    def strictly_better(self) -> int:
        return sum(r.margin > 0 for r in self.rows)

    @property
    def holds(self) -> bool:
        return not self.worse and not self.disagreements


def _acceptance(name: str, p: Dist, q: Dist, k: int, merged: bool = True):
    from ..verify import verify

    m = get_method(name)
    if merged:
        return enumerate_merged(m.steps, p, q, k).acceptance
    return verify(m, p, q, k, max_paths=None).acceptance


def wor_survey(instances, *, plain_every: int = 0) -> WorSurvey:
    """``alpha_RRS-wor >= alpha_RRS`` on every instance where drafts without replacement exist.

    >>> from exactspec.bounds.rho.engine_checks import random_instances
    >>> s = wor_survey(random_instances(30, seed=3), plain_every=10)
    >>> s.holds, len(s.rows) + s.skipped
    (True, 30)
    """
    rows, worse, disagreements = [], [], []
    skipped = plain = 0
    for i, (p, q, k) in enumerate(instances):
        if k > len(q.support):
            skipped += 1
            continue
        row = WorRow(p, q, k, _acceptance("rrs", p, q, k), _acceptance("rrs-wor", p, q, k))
        if plain_every and i % plain_every == 0:
            plain += 1
            if (_acceptance("rrs", p, q, k, merged=False) != row.rrs
                    or _acceptance("rrs-wor", p, q, k, merged=False) != row.rrs_wor):
                disagreements.append(f"plain vs merged enumeration at p={p}, q={q}, k={k}")
        if row.margin < 0:
            worse.append(row)
        rows.append(row)
    return WorSurvey(rows, skipped, worse, disagreements, plain)


# --------------------------------------------------------------------------------------------
# K-SEQ's guarantee
# --------------------------------------------------------------------------------------------

def e_enclosure(terms: int = 40) -> tuple[Fraction, Fraction]:
    """Rationals ``lo < e < hi`` from ``sum_{n<N} 1/n!`` and its tail bound ``1/((N-1)! (N-1))``.

    >>> import math
    >>> lo, hi = e_enclosure(12)
    >>> float(lo) < math.e < float(hi), hi - lo < Fraction(1, 10**8)
    (True, True)
    """
    total, factorial = Fraction(0), 1
    for n in range(terms):
        factorial = factorial * n if n else 1
        total += Fraction(1, factorial)
    # with N = terms: sum_{n>=N} 1/n! < (N+1)/(N N!) < 1/((N-1)! (N-1))
    return total, total + Fraction(1, factorial * (terms - 1))


#: The two stated guarantees, as functions of ``k`` giving rational ``(lo, hi)`` bounds.
KSEQ_CONSTANTS = ("1-(1-1/k)^k", "1-1/e")


def constant_bounds(name: str, k: int) -> tuple[Fraction, Fraction]:
    """Rational bounds ``lo <= c <= hi`` of a guarantee constant (equal when ``c`` is rational).

    >>> constant_bounds("1-(1-1/k)^k", 2)
    (Fraction(3, 4), Fraction(3, 4))
    """
    if name == "1-(1-1/k)^k":
        c = 1 - (1 - Fraction(1, k))**k
        return c, c
    if name == "1-1/e":
        lo, hi = e_enclosure()
        return 1 - 1 / lo, 1 - 1 / hi
    raise ValueError(f"unknown constant {name!r}: choose one of {', '.join(KSEQ_CONSTANTS)}")


def _p_acc(p: Dist, q: Dist, k: int, rho: Fraction) -> Fraction:
    """``1 - (1 - beta(rho))^k``, ``beta(rho) = sum_x min(p(x)/rho, q(x))`` (docs/methods.md#k-seq)."""
    beta = sum((min(a / rho, b) for a, b in zip(p.probs, q.probs)), Fraction(0))
    return 1 - (1 - beta)**k


@dataclass
class KseqRow:
    """K-SEQ at ``rho*`` on one instance: exact rational bounds ``lower <= alpha_KSEQ <=
    upper``, ``alpha*``, and (on the engine sample) the exact algebraic acceptance."""

    p: Dist
    q: Dist
    k: int
    rho_exact: Any
    lower: Fraction
    upper: Fraction
    alpha_star: Fraction
    engine: Any = None

    def guarantee(self, name: str) -> int:
        """``1`` if ``alpha_KSEQ >= c alpha*`` is certain, ``-1`` if it certainly fails, ``0``
        if the bounds cannot tell."""
        lo, hi = constant_bounds(name, self.k)
        if self.lower >= hi * self.alpha_star:
            return 1
        if self.upper < lo * self.alpha_star:
            return -1
        return 0

    @property
    def ratio_lower(self) -> Fraction | None:
        return None if self.alpha_star == 0 else self.lower / self.alpha_star

    def to_json(self) -> dict:
        return {"p": self.p.to_json(), "q": self.q.to_json(), "k": self.k,
                "rho_star": exact_str(self.rho_exact), "alpha_kseq_lower": exact_str(self.lower),
                "alpha_kseq_upper": exact_str(self.upper),
                "alpha_star": exact_str(self.alpha_star),
                "ratio_float": None if self.alpha_star == 0 else float(self.ratio_lower)}


def kseq_bounds(p: Dist, q: Dist, k: int, *, engine: bool = False) -> KseqRow:
    """K-SEQ's acceptance at ``rho*`` bracketed exactly, and ``alpha*``.

    ``engine=True`` also runs K-SEQ at the algebraic ``rho*`` through the engine
    (``kseq_method("exact")``, merged-state interpreter) and stores its exact acceptance.
    """
    from ..methods.kseq import kseq_method, rho_star

    r = rho_star(p, q, k)
    row = KseqRow(p, q, k, r.exact, _p_acc(p, q, k, r.rho), _p_acc(p, q, k, r.lower),
                  optimum(p, q, k).alpha_star)
    if engine:
        row.engine = enumerate_merged(kseq_method("exact").steps, p, q, k).acceptance
    return row


@dataclass
class KseqSurvey:
    """K-SEQ against ``alpha*`` on a corpus: per constant, the rows where the guarantee
    fails (``failures``) or cannot be told (``unknown``); ``disagreements`` where the
    engine's exact acceptance falls outside the bounds or decides a guarantee differently."""

    rows: list
    failures: dict
    unknown: dict
    disagreements: list
    engine_checked: int

    def smallest(self, k: int | None = None) -> KseqRow | None:
        rows = [r for r in self.rows if r.alpha_star != 0 and (k is None or r.k == k)]
        return min(rows, key=lambda r: r.ratio_lower) if rows else None

    def holds(self, name: str) -> bool:
        return not self.failures[name] and not self.unknown[name] and not self.disagreements


def kseq_survey(instances, *, engine_every: int = 0) -> KseqSurvey:
    """Both guarantees on every instance; K-SEQ by the engine on every ``engine_every``-th.

    >>> from exactspec.bounds.rho.engine_checks import random_instances
    >>> s = kseq_survey(random_instances(20, seed=4), engine_every=10)
    >>> s.holds("1-(1-1/k)^k"), s.holds("1-1/e"), s.engine_checked
    (True, True, 2)
    """
    rows, disagreements = [], []
    failures = {name: [] for name in KSEQ_CONSTANTS}
    unknown = {name: [] for name in KSEQ_CONSTANTS}
    checked = 0
    for i, (p, q, k) in enumerate(instances):
        run_engine = bool(engine_every) and i % engine_every == 0
        row = kseq_bounds(p, q, k, engine=run_engine)
        if run_engine:
            checked += 1
            if not row.lower <= row.engine <= row.upper:
                disagreements.append(f"engine acceptance {row.engine} outside "
                                     f"[{row.lower}, {row.upper}] at p={p}, q={q}, k={k}")
        for name in KSEQ_CONSTANTS:
            verdict = row.guarantee(name)
            if verdict < 0:
                failures[name].append(row)
            elif verdict == 0:
                unknown[name].append(row)
            if run_engine:
                lo, hi = constant_bounds(name, k)
                exact_ok = row.engine >= hi * row.alpha_star
                if verdict > 0 and not exact_ok:
                    disagreements.append(f"{name}: bounds and engine disagree at p={p}, q={q}")
        rows.append(row)
    return KseqSurvey(rows, failures, unknown, disagreements, checked)
