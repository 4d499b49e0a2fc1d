"""The optimum for two drafts: Khisti et al.'s closed form and canonical architecture.

Khisti et al. (arXiv:2410.18234) show that any optimal scheme for ``K`` independent drafts is
an importance-weighted *selection* of one draft followed by the one-draft rule with the
selected draft's law ``p_I`` as the draft; for two i.i.d. drafts

    alpha*(p, q, 2) = min over S of [ p(S) + 1 - q(S)^2 ],

and the acceptance is 1 exactly when ``p(S) >= q(S)^2`` for every ``S`` (docs/methods.md#khisti-et-al).
Here, exactly:

- :func:`khisti_optimum` is that formula as written, :func:`acceptance_one` the criterion;
- :func:`canonical_lp` solves the canonical architecture as an exact LP over selection rules,
  and :func:`canonical_verifier` turns its solution into a verifier that the engine runs:
  lossless, with acceptance the LP value;
- :func:`figure_family` runs the Fig. 2 family (draft uniform on 3 tokens, target
  ``(c, x, 1 - c - x)``) for a symbol ``x`` through :mod:`exactspec.engine.interval`: the
  closed form and RRS's acceptance (the registered ``rrs``) come out piecewise linear in
  ``x``, and each piece is set against Khisti et al.'s published formula (for ``c = 1/3``)
  and against :func:`exactspec.optimum.alpha_star.optimum` at rational points of the piece.

>>> from exactspec.core.dist import Dist
>>> p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
>>> khisti_optimum(p, q), canonical_lp(p, q).value, acceptance_one(p, q)
(Fraction(21, 25), Fraction(21, 25), False)
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction

import sympy as sp

from ..core.dist import Dist, residual
from ..engine.interval import Piece, piecewise, to_sympy
from ..core.lp import linprog_max
from ..methods import get_method
from ..optimum.alpha_star import alpha_star_max_flow, optimum
from ..verify import verify

__all__ = ["khisti_optimum", "acceptance_one", "CanonicalSolution", "canonical_lp",
           "canonical_verifier", "FigureFamily", "figure_family"]


def _subsets(n: int):
    for size in range(n + 1):
        yield from itertools.combinations(range(n), size)


def khisti_optimum(p: Dist, q: Dist):
    """``min over S of p(S) + 1 - q(S)^2``: Khisti et al.'s optimum for two i.i.d. drafts.

    Written over every subset, in whatever exact arithmetic ``p`` and ``q`` use (symbolic
    values included: the comparisons are then decided by the running case).
    """
    best = None
    for s in _subsets(len(p)):
        value = (sum((p.probs[i] for i in s), Fraction(0)) + 1
                 - sum((q.probs[i] for i in s), Fraction(0))**2)
        best = value if best is None or value < best else best
    return best


def acceptance_one(p: Dist, q: Dist) -> bool:
    """Khisti et al.'s criterion: two i.i.d. drafts can always be accepted (``alpha* = 1``)
    iff ``p(S) >= q(S)^2`` for every set ``S``.

    >>> acceptance_one(Dist.parse("5/9,4/9"), Dist.parse("1/3,2/3"))
    True
    """
    return all(sum((p.probs[i] for i in s), Fraction(0))
               >= sum((q.probs[i] for i in s), Fraction(0))**2 for s in _subsets(len(p)))


def _pairs(q: Dist) -> list[tuple[tuple, Fraction]]:
    """The unordered draft pairs ``{x, y}`` (token indices) with their probabilities > 0."""
    n = len(q)
    out = []
    for i in range(n):
        for j in range(i, n):
            w = q.probs[i] * q.probs[j] * (1 if i == j else 2)
            if w:
                out.append(((i, j), w))
    return out


@dataclass(frozen=True)
class CanonicalSolution:
    """An optimal selection rule of the canonical architecture (two i.i.d. drafts).

    ``value`` is the LP optimum ``sum_y min(p(y), p_I(y))``; ``selection[(i, j)]`` is the law
    (a :class:`Dist` over the labels) of the selected draft given the unordered pair of
    drafts ``{i, j}`` (token indices); ``p_i`` is the selected draft's law.
    """

    value: Fraction
    selection: dict
    p_i: Dist


def canonical_lp(p: Dist, q: Dist) -> CanonicalSolution:
    """Khisti et al.'s canonical architecture for two i.i.d. drafts, as an exact LP.

    Variables: ``w(X, y) = P(X) beta_y(X) >= 0`` for each unordered pair ``X`` with
    ``P(X) > 0`` and each ``y`` in ``X`` (``sum_y w(X, y) = P(X)``), and ``m_y``; maximise
    ``sum_y m_y`` subject to ``m_y <= p(y)`` and ``m_y <= p_I(y) = sum_X w(X, y)``: the
    one-draft rule's acceptance ``sum_y min(p(y), p_I(y))`` with draft ``p_I``.  Solved by
    :func:`exactspec.core.lp.linprog_max` (rational simplex).
    """
    n = len(p)
    pairs = _pairs(q)
    columns = [(x, y) for x, _ in pairs for y in sorted(set(x))]
    nv = len(columns) + n
    eq, ub = [], []
    for x, w in pairs:
        row = [Fraction(0)] * nv
        for c, (xx, _) in enumerate(columns):
            if xx == x:
                row[c] = Fraction(1)
        eq.append((row, w))
    for y in range(n):
        row = [Fraction(0)] * nv
        row[len(columns) + y] = Fraction(1)
        ub.append((row, p.probs[y]))
        row = [Fraction(0)] * nv
        row[len(columns) + y] = Fraction(1)
        for c, (_, yy) in enumerate(columns):
            if yy == y:
                row[c] = Fraction(-1)
        ub.append((row, Fraction(0)))
    objective = [Fraction(0)] * len(columns) + [Fraction(1)] * n
    value, solution = linprog_max(objective, eq=eq, ub=ub)
    selection = {}
    p_i = [Fraction(0)] * n
    for x, w in pairs:
        law = [Fraction(0)] * n
        for c, (xx, y) in enumerate(columns):
            if xx == x:
                law[y] += solution[c] / w
                p_i[y] += solution[c]
        selection[x] = Dist(law, p.labels, check=False)
    return CanonicalSolution(value, selection, Dist(p_i, p.labels, check=False))


def canonical_verifier(solution: CanonicalSolution):
    """The verifier of a :class:`CanonicalSolution`: draw two drafts, select one with the
    solution's law given the pair, then run the one-draft rule with draft ``p_I`` against
    ``p`` (accept ``y`` with ``min(1, p(y)/p_I(y))``, else resample ``norm(max(0, p - p_I))``).

    >>> p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
    >>> r = verify(canonical_verifier(canonical_lp(p, q)), p, q, 2)
    >>> r.lossless, r.acceptance, r.explicit_acceptance
    (True, Fraction(21, 25), Fraction(21, 25))
    """
    def canonical(s, p, q, k=2):
        x1, x2 = s.drafts(q, 2)
        pair = tuple(sorted((p.index(x1), p.index(x2))))
        y = s.draw(solution.selection[pair], "select")
        if s.coin(min(1, p[y] / solution.p_i[y]), "accept"):
            return s.accept(y)
        return s.draw(residual(p, solution.p_i), "residual")

    return canonical


@dataclass
class FigureFamily:
    """Khisti et al.'s Fig. 2 family run for a symbol ``x``: draft uniform on 3 tokens,
    ``k = 2``, target ``(c, x, 1 - c - x)`` for ``0 <= x <= 1 - c``.

    Attributes
    ----------
    c : Fraction
    x : sympy.Symbol
    pieces : list of Piece
        Over ``0 <= x <= 1 - c`` (the ends included as point pieces), each with ``alpha``
        (:func:`khisti_optimum`), ``rrs`` (the engine's RRS acceptance), ``lossless`` (RRS)
        and, when ``published`` is given, ``published`` evaluated on the piece.
    point_checks : list of dict
        At three rational points of each open piece and at every point piece: ``x``, the
        piece's values there, and ``optimum``, ``max_flow``, ``canonical`` (the LP) values.
    agrees : bool
        On every piece ``alpha`` equals the published formula identically (if given), RRS is
        lossless, and every point check agrees.
    """

    c: Fraction
    x: sp.Symbol
    pieces: list
    point_checks: list
    agrees: bool

    def formula(self, key: str = "alpha", *, merge: bool = True) -> list[tuple[str, str, str]]:
        """``(lo, hi, expression)`` of ``key`` on each open piece; with ``merge``, neighbours
        with the same expression that also holds at the point between them are joined."""
        out: list = []
        last_point = None
        for pc in self.pieces:
            if pc.is_point:
                last_point = pc
                continue
            expr = pc.values[key]
            if (merge and out and out[-1][2] == expr and last_point is not None
                    and sp.simplify(expr.subs(self.x, last_point.lo)
                                    - last_point.values[key]) == 0):
                out[-1] = (out[-1][0], pc.hi, expr)
            else:
                out.append((pc.lo, pc.hi, expr))
        return [(str(lo), str(hi), str(e)) for lo, hi, e in out]

    def value(self, key: str, at) -> sp.Expr:
        """``key`` at the rational ``x = at``."""
        for pc in self.pieces:
            if pc.contains(at):
                return pc.at(at)[key]
        raise ValueError(f"x = {at} is outside the family")


def _sym(v: Fraction) -> sp.Rational:
    return sp.Rational(v.numerator, v.denominator)


def _target(c: Fraction, v) -> Dist:
    return Dist([c, v, 1 - c - v], check=isinstance(v, Fraction), name="p")


def figure_family(c=Fraction(1, 3), published=None) -> FigureFamily:
    """Run :func:`khisti_optimum` and ``verify("rrs", p, q, 2)`` over the Fig. 2 family.

    Parameters
    ----------
    c : rational
        The target's first entry (Khisti et al. use ``1/3``, and ``1/6`` in the text).
    published : callable, optional
        A closed form ``f(x)`` to set against the optimum on every piece, e.g.
        :func:`exactspec.bounds.closed_forms.khisti_alpha_star` (``1 - max(0, 1/9 - x, x - 5/9)``,
        for ``c = 1/3``); it is evaluated inside the run, so it may use ``min``/``max``.

    Examples
    --------
    >>> fam = figure_family()
    >>> fam.formula()
    [('0', '1/9', 'x + 8/9'), ('1/9', '5/9', '1'), ('5/9', '2/3', '14/9 - x')]
    >>> fam.formula("rrs")
    [('0', '1/3', '2*x/3 + 7/9'), ('1/3', '2/3', '11/9 - 2*x/3')]
    >>> fam.value("rrs", Fraction(1, 12)), fam.agrees
    (5/6, True)
    """
    c = Fraction(c)
    x = sp.Symbol("x")
    q = Dist([Fraction(1, 3)] * 3, name="q")
    rrs = get_method("rrs")

    def run(v):
        p = _target(c, v)
        result = verify(rrs, p, q, 2, max_paths=None)
        out = {"alpha": khisti_optimum(p, q), "rrs": result.acceptance,
               "lossless": result.lossless}
        if published is not None:
            out["published"] = published(v)
        return out

    top = 1 - c
    pieces = piecewise(run, x, 0, top)
    ends = [Piece(x, _sym(e), _sym(e), to_sympy(run(e)), ()) for e in (Fraction(0), top)]
    pieces = [ends[0]] + pieces + [ends[1]]
    agrees = all(pc.values["lossless"] is True for pc in pieces)
    if published is not None:
        agrees = agrees and all(sp.simplify(pc.values["alpha"] - pc.values["published"]) == 0
                                for pc in pieces)
    checks = []
    for pc in pieces:
        lo, hi = Fraction(str(pc.lo)), Fraction(str(pc.hi))
        points = [lo] if pc.is_point else [lo + (hi - lo) * Fraction(j, 4) for j in (1, 2, 3)]
        for point in points:
            p = _target(c, point)
            values = pc.at(point)
            row = {"x": point, "alpha": Fraction(str(values["alpha"])),
                   "rrs": Fraction(str(values["rrs"])),
                   "optimum": optimum(p, q, 2).alpha_star,
                   "max_flow": alpha_star_max_flow(p, q, 2),
                   "canonical": canonical_lp(p, q).value,
                   "rrs_exact": verify(rrs, p, q, 2).acceptance}
            row["agrees"] = (row["alpha"] == row["optimum"] == row["max_flow"]
                             == row["canonical"] and row["rrs"] == row["rrs_exact"])
            agrees = agrees and row["agrees"]
            checks.append(row)
    return FigureFamily(c, x, pieces, checks, agrees)
