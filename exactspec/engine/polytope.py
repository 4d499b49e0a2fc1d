"""Exact volumes of small polytopes ``{x : a . x <= b}``, in rational arithmetic.

Two independent ways, so that each checks the other:

- :func:`volume` (the one the engine uses) lists the vertices (every ``dim``-subset of the
  constraints solved exactly, kept when it satisfies all constraints) and triangulates by
  *pulling*: the polytope is the union, with disjoint interiors, of the pyramids from its
  least vertex ``v0`` over the facets that do not contain ``v0``; each facet is triangulated
  the same way, one dimension lower.  The volume is ``sum |det(v_i - v0)| / dim!`` over the
  simplices;
- :func:`volume_by_slices` integrates the ``(dim-1)``-volume of the sections
  ``x_dim = t``.  Between two consecutive vertex heights that section volume is a polynomial of
  degree at most ``dim - 1`` in ``t``, so an interpolatory rule on ``dim`` interior points
  integrates it exactly; the sections are measured the same way, down to intervals.

Both need a bounded polytope (the caller adds the bounding constraints) and cost about
``C(m, dim)`` exact linear solves for ``m`` constraints: :func:`vertex_work` is that count, and
:func:`volume` refuses (:class:`~exactspec.core.errors.TooLarge`) above its budget.

>>> triangle = [((-1, 0), 0), ((0, -1), 0), ((1, 1), 1)]
>>> volume(triangle, 2), volume_by_slices(triangle, 2)
(Fraction(1, 2), Fraction(1, 2))
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

from ..core.errors import TooLarge

__all__ = ["volume", "volume_by_slices", "vertices", "vertex_work", "DEFAULT_MAX_WORK"]

#: Most ``dim``-subsets of constraints :func:`volume` solves before refusing.
DEFAULT_MAX_WORK = 300_000


def _rows(constraints):
    return [(tuple(Fraction(v) for v in a), Fraction(b)) for a, b in constraints]


def _solve(matrix, rhs):
    """The solution of ``matrix x = rhs`` (square, Fractions), or None when singular."""
    n = len(matrix)
    rows = [list(r) + [v] for r, v in zip(matrix, rhs)]
    for col in range(n):
        pivot = next((r for r in range(col, n) if rows[r][col] != 0), None)
        if pivot is None:
            return None
        rows[col], rows[pivot] = rows[pivot], rows[col]
        head = rows[col]
        inv = 1 / head[col]
        for r in range(n):
            if r != col and rows[r][col] != 0:
                f = rows[r][col] * inv
                rows[r] = [x - f * y for x, y in zip(rows[r], head)]
    return tuple(rows[i][n] / rows[i][i] for i in range(n))


def _det(matrix) -> Fraction:
    rows = [list(r) for r in matrix]
    n = len(rows)
    det = Fraction(1)
    for col in range(n):
        pivot = next((r for r in range(col, n) if rows[r][col] != 0), None)
        if pivot is None:
            return Fraction(0)
        if pivot != col:
            rows[col], rows[pivot] = rows[pivot], rows[col]
            det = -det
        head = rows[col]
        det *= head[col]
        for r in range(col + 1, n):
            if rows[r][col] != 0:
                f = rows[r][col] / head[col]
                rows[r] = [x - f * y for x, y in zip(rows[r], head)]
    return det


def _rank(vectors) -> int:
    rows = [list(v) for v in vectors]
    rank = 0
    width = len(rows[0]) if rows else 0
    for col in range(width):
        pivot = next((r for r in range(rank, len(rows)) if rows[r][col] != 0), None)
        if pivot is None:
            continue
        rows[rank], rows[pivot] = rows[pivot], rows[rank]
        head = rows[rank]
        for r in range(rank + 1, len(rows)):
            if rows[r][col] != 0:
                f = rows[r][col] / head[col]
                rows[r] = [x - f * y for x, y in zip(rows[r], head)]
        rank += 1
    return rank


def _affine_dim(points) -> int:
    points = list(points)
    if not points:
        return -1
    base = points[0]
    return _rank([[x - y for x, y in zip(p, base)] for p in points[1:]]) if len(points) > 1 else 0


def vertex_work(m: int, dim: int) -> int:
    """The number of exact solves :func:`vertices` makes: ``C(m, dim)``.

    >>> vertex_work(10, 3)
    120
    """
    return math.comb(m, dim)


def vertices(constraints, dim: int) -> list:
    """The vertices of ``{x : a . x <= b}``: a list of ``(point, tight)`` with ``tight`` the
    frozenset of constraint indices that hold with equality there.

    >>> [v for v, _ in vertices([((-1,), 0), ((1,), 3)], 1)]
    [(Fraction(0, 1),), (Fraction(3, 1),)]
    """
    rows = _rows(constraints)
    found: dict = {}
    for subset in itertools.combinations(range(len(rows)), dim):
        point = _solve([rows[i][0] for i in subset], [rows[i][1] for i in subset])
        if point is None or point in found:
            continue
        values = [sum((a * x for a, x in zip(row, point)), Fraction(0)) for row, _ in rows]
        if all(v <= b for v, (_, b) in zip(values, rows)):
            found[point] = frozenset(i for i, (v, (_, b)) in enumerate(zip(values, rows))
                                     if v == b)
    return list(found.items())


def volume(constraints, dim: int, *, max_work: int | None = DEFAULT_MAX_WORK) -> Fraction:
    """The exact ``dim``-volume of the bounded polytope ``{x : a . x <= b}`` (pulling
    triangulation; see the module docstring).

    >>> cube_corner = [((-1, 0, 0), 0), ((0, -1, 0), 0), ((0, 0, -1), 0), ((1, 1, 1), 1)]
    >>> volume(cube_corner, 3)
    Fraction(1, 6)
    """
    rows = _rows(constraints)
    if dim == 0:
        return Fraction(1) if all(b >= 0 for _, b in rows) else Fraction(0)
    work = vertex_work(len(rows), dim)
    if max_work is not None and work > max_work:
        raise TooLarge(f"an exact polytope volume needs about {work:,} linear solves "
                       f"({len(rows)} constraints in {dim} dimensions), over the budget of "
                       f"{max_work:,}", estimate=work, budget=max_work)
    listed = vertices(rows, dim)
    if len(listed) < dim + 1:
        return Fraction(0)
    points = [p for p, _ in listed]
    tight = [t for _, t in listed]
    if _affine_dim(points) < dim:
        return Fraction(0)

    def triangulate(face: frozenset, k: int) -> list:
        if k == 0:
            return [(min(face),)]
        v0 = min(face)
        seen = set()
        out = []
        for c in range(len(rows)):
            sub = frozenset(v for v in face if c in tight[v])
            if v0 in sub or len(sub) < k or sub in seen:
                continue
            seen.add(sub)
            if _affine_dim(points[v] for v in sub) != k - 1:
                continue
            out.extend((v0,) + simplex for simplex in triangulate(sub, k - 1))
        return out

    total = Fraction(0)
    for simplex in triangulate(frozenset(range(len(points))), dim):
        v0 = points[simplex[0]]
        total += abs(_det([[x - y for x, y in zip(points[v], v0)] for v in simplex[1:]]))
    return total / math.factorial(dim)


def _interval(rows) -> Fraction:
    lo, hi = None, None
    for (a,), b in rows:
        if a > 0:
            hi = b / a if hi is None else min(hi, b / a)
        elif a < 0:
            lo = b / a if lo is None else max(lo, b / a)
        elif b < 0:
            return Fraction(0)
    if lo is None or hi is None:
        raise ValueError("volume_by_slices needs a bounded polytope")
    return max(Fraction(0), hi - lo)


def _weights(points: int) -> list:
    """Weights of the interpolatory rule on ``[0, 1]`` at nodes ``(k+1)/(points+1)``: exact
    for polynomials of degree below ``points``."""
    nodes = [Fraction(k + 1, points + 1) for k in range(points)]
    return list(_solve([[s ** j for s in nodes] for j in range(points)],
                       [Fraction(1, j + 1) for j in range(points)])), nodes


def volume_by_slices(constraints, dim: int) -> Fraction:
    """The same volume as :func:`volume`, by exact integration of section volumes (a second,
    independent method, for cross-checks).

    >>> square = [((-1, 0), 0), ((0, -1), 0), ((1, 0), 1), ((0, 1), 1)]
    >>> volume_by_slices(square, 2)
    Fraction(1, 1)
    """
    rows = _rows(constraints)
    if dim == 1:
        return _interval(rows)
    heights = sorted({p[-1] for p, _ in vertices(rows, dim)})
    weights, nodes = _weights(dim)
    total = Fraction(0)
    for t0, t1 in zip(heights, heights[1:]):
        piece = Fraction(0)
        for w, s in zip(weights, nodes):
            t = t0 + s * (t1 - t0)
            section = [(a[:-1], b - a[-1] * t) for a, b in rows]
            piece += w * volume_by_slices(section, dim - 1)
        total += (t1 - t0) * piece
    return total
