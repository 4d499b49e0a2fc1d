"""A small exact linear-programming solver in rationals (two-phase simplex, Bland's rule).

Used to decide which sign cases are feasible in the symbolic engine and as an exact LP
cross-check.  Bland's rule never cycles, so the solver always terminates; every number is a
``Fraction``, so its answers are exact.

>>> # maximise x + y subject to x + 2y <= 4, 3x + y <= 6, x, y >= 0
>>> linprog_max([1, 1], ub=[([1, 2], 4), ([3, 1], 6)])
(Fraction(14, 5), [Fraction(8, 5), Fraction(6, 5)])
"""

from __future__ import annotations

from fractions import Fraction

__all__ = ["Infeasible", "Unbounded", "linprog_max"]


class Infeasible(Exception):
    """The constraints have no solution."""


class Unbounded(Exception):
    """The objective is unbounded above."""


def linprog_max(c, eq=(), ub=(), lb=()):
    """Maximise ``c . x`` over ``x >= 0`` with ``a . x = b`` (``eq``), ``a . x <= b`` (``ub``)
    and ``a . x >= b`` (``lb``), each constraint given as ``(a, b)``.

    Returns ``(value, x)`` in Fractions; raises :class:`Infeasible` or :class:`Unbounded`.
    """
    n = len(c)
    rows: list[tuple[list, Fraction, int]] = []  # (coefficients, rhs, slack sign)
    for a, b in eq:
        rows.append(([Fraction(v) for v in a], Fraction(b), 0))
    for a, b in ub:
        rows.append(([Fraction(v) for v in a], Fraction(b), 1))
    for a, b in lb:
        rows.append(([Fraction(v) for v in a], Fraction(b), -1))
    m = len(rows)
    n_slack = sum(1 for _, _, s in rows if s != 0)
    width = n + n_slack + m  # original, slack, artificial
    tableau: list[list[Fraction]] = []
    basis: list[int] = []
    slack_at = n
    for i, (a, b, s) in enumerate(rows):
        row = a + [Fraction(0)] * (n_slack + m) + [b]
        if s != 0:
            row[slack_at] = Fraction(s)
            slack_at += 1
        if row[-1] < 0:
            row = [-v for v in row]
        row[n + n_slack + i] = Fraction(1)
        tableau.append(row)
        basis.append(n + n_slack + i)
    artificial = set(range(n + n_slack, width))
    # phase 1: minimise the sum of artificials = maximise -sum
    phase1 = [Fraction(0)] * width
    for j in artificial:
        phase1[j] = Fraction(-1)
    _simplex(tableau, basis, phase1, width)
    if any(tableau[i][-1] != 0 for i, j in enumerate(basis) if j in artificial):
        raise Infeasible("no point satisfies the constraints")
    # drive remaining artificials out of the basis where possible
    for i, j in enumerate(basis):
        if j in artificial:
            for col in range(n + n_slack):
                if tableau[i][col] != 0:
                    _pivot(tableau, basis, i, col)
                    break
    keep = [i for i, j in enumerate(basis) if j not in artificial]
    tableau = [tableau[i] for i in keep]
    basis = [basis[i] for i in keep]
    for row in tableau:
        for j in artificial:
            row[j] = Fraction(0)
    objective = [Fraction(v) for v in c] + [Fraction(0)] * (n_slack + m)
    _simplex(tableau, basis, objective, n + n_slack)
    x = [Fraction(0)] * width
    for i, j in enumerate(basis):
        x[j] = tableau[i][-1]
    value = sum((Fraction(cj) * xj for cj, xj in zip(c, x)), Fraction(0))
    return value, x[:n]


def _pivot(tableau, basis, r, col):
    pivot_row = tableau[r]
    pv = pivot_row[col]
    if pv != 1:
        tableau[r] = pivot_row = [v / pv if v else v for v in pivot_row]
    nonzero = [(j, v) for j, v in enumerate(pivot_row) if v]   # rows are mostly zeros
    for i, row in enumerate(tableau):
        if i != r:
            f = row[col]
            if f:
                for j, v in nonzero:
                    row[j] -= f * v
    basis[r] = col


def _simplex(tableau, basis, objective, usable):
    """Maximise ``objective`` (length ``width``) in place; columns ``>= usable`` may leave
    the basis but never enter."""
    while True:
        # reduced costs: c_j - c_B B^-1 A_j (only the basic columns with c_j != 0 count)
        costs = [(tableau[i], objective[j]) for i, j in enumerate(basis) if objective[j]]
        in_basis = set(basis)
        entering = None
        for col in range(usable):
            if col in in_basis:
                continue
            reduced = objective[col]
            for row, cost in costs:
                if row[col]:
                    reduced -= cost * row[col]
            if reduced > 0:
                entering = col  # Bland: the smallest improving index
                break
        if entering is None:
            return
        best = None
        for i, row in enumerate(tableau):
            if row[entering] > 0:
                ratio = row[-1] / row[entering]
                if best is None or ratio < best[0] or (ratio == best[0] and basis[i] < best[2]):
                    best = (ratio, i, basis[i])
        if best is None:
            raise Unbounded("the objective is unbounded")
        _pivot(tableau, basis, best[1], entering)
