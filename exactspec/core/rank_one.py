"""Exact sums of rank-one tensors: laws of token sequences without ``|V|^M`` enumeration.

A *term* is ``(coef, (f_1, ..., f_j))``: the tensor ``coef * f_1 (x) ... (x) f_j`` over
``j`` token positions, each ``f_k`` a tuple of exact numbers of the vocabulary's length (a
measure on the token of position ``k``).  A sum of terms of one order is a law of ``j``-token
sequences kept factored: ``R`` terms take ``R * j * |V|`` numbers where the dense law takes
``|V|^j``.

- :func:`find_nonzero` decides exactly whether a sum of terms is the zero tensor, and when it
  is not, returns an entry where it is not zero.  Along the first position it writes the first
  factors in a basis of their span (exact Gaussian elimination over the rationals, reduced
  row echelon form: basis vector ``e_l`` is 1 at its pivot ``t_l`` and every other basis vector
  is 0 there), so the sum is ``sum_l e_l (x) G_l`` with ``G_l`` a sum of terms of one order
  less; the ``e_l`` being independent, the sum is zero iff every ``G_l`` is, and its slice at
  token ``t_l`` is ``G_l`` itself (the witness recurses into it).
- :func:`compose` builds the law of the first ``m`` tokens of repeated calls of a stateless
  rule on a context-free pair: ``L_m = sum_j A_j (x) L_{m-j}`` (a call that emits at least
  ``m`` tokens contributes its first ``m``), ``A_j`` the call's terms of ``j`` tokens.
- :func:`dense` and :func:`tv_to_power` give the dense law and its exact total variation from
  ``p^{(x)m}`` where ``|V|^m`` entries fit.

>>> from fractions import Fraction as F
>>> p = (F(1, 2), F(1, 2))
>>> half = (F(1, 2), F(0))
>>> terms = [(F(1), (half, p)), (F(1), ((F(0), F(1, 2)), p))]      # = p (x) p
>>> find_nonzero(terms + [(F(-1), (p, p))]) is None
True
>>> find_nonzero([(F(1), (half, p)), (F(-1), (p, p))])
(1, 0)
"""

from __future__ import annotations

import math
from fractions import Fraction

from .deadline import check as check_deadline
from .integer_rows import exact_sum, integer_row, scaled_rows_sum

__all__ = ["find_nonzero", "shortest_nonzero_prefix", "compose", "compress", "scaled_sum",
           "marginal", "value_at", "dense", "tv_to_power", "mass"]


def mass(term) -> Fraction:
    """The total mass of one term: ``coef * prod_k sum(f_k)``."""
    coef, factors = term
    out = coef
    for f in factors:
        out *= exact_sum(f)
    return out


def _value_key(f):
    """A key equal for equal factors: for a vector of ``int``s and ``Fraction``s (in lowest
    terms, as they always are) its numerators and denominators, hashed as integers (a
    ``Fraction``'s own hash takes a modular inverse: about 4 microseconds an entry); any other
    vector itself."""
    if all(type(v) is Fraction or type(v) is int for v in f):
        return tuple([v.numerator for v in f]), tuple([v.denominator for v in f])
    return f


class _Interner:
    """One object per distinct factor (each new object hashed once), so that equal factors
    are told apart by identity."""

    def __init__(self):
        self._by_value: dict = {}
        self._by_id: dict = {}

    def __call__(self, f):
        hit = self._by_id.get(id(f))
        if hit is not None:
            return hit[1]
        canonical = self._by_value.setdefault(_value_key(f), f)
        self._by_id[id(f)] = (f, canonical)       # keeps f alive: its id stays its own
        return canonical


def compress(terms: list, intern=None) -> list:
    """The same tensor in fewer terms: terms whose factors but the last are equal are merged
    (their last factors added, scaled by their coefficients, by integers over one common
    denominator: :func:`scaled_sum`); zero terms dropped.

    >>> from fractions import Fraction as F
    >>> a, b = (F(1), F(0)), (F(0), F(1))
    >>> compress([(F(1, 2), (a, a)), (F(1, 3), (a, b)), (F(0), (b, b))])
    [(1, ((Fraction(1, 1), Fraction(0, 1)), (Fraction(1, 2), Fraction(1, 3))))]
    """
    groups: dict = {}
    order: list = []
    scalar = Fraction(0)
    for coef, factors in terms:
        if coef == 0:
            continue
        if not factors:
            scalar += coef
            continue
        head = factors[:-1]
        key = tuple(map(id, head))     # the same factor objects (hashing exact rows is slow)
        if key not in groups:
            groups[key] = []
            order.append((key, head))
        groups[key].append((coef, factors[-1]))
    last = (lambda f: f) if intern is None else intern
    rows: dict = {}
    out = []
    for key, head in order:
        summed = scaled_sum(groups[key], rows)
        if any(summed):
            out.append((1, head + (last(summed),)))
    if scalar:
        out.append((scalar, ()))
    return out


def scaled_sum(pairs: list, rows: dict | None = None) -> tuple:
    """``sum_k c_k f_k`` of ``pairs = [(c_k, f_k), ...]`` (exact rows of one length), by
    integers over one common denominator when every number is a ``Fraction`` or ``int`` (a
    row met before is read from ``rows``, by identity); one pair ``(1, f)`` is ``f`` itself.

    >>> from fractions import Fraction as F
    >>> scaled_sum([(F(1, 2), (F(1, 3), F(2, 3))), (2, (F(1, 4), F(0)))])
    (Fraction(2, 3), Fraction(1, 3))
    """
    if len(pairs) == 1 and pairs[0][0] == 1 and type(pairs[0][1]) is tuple:
        return pairs[0][1]
    rows = {} if rows is None else rows
    terms = []
    for c, f in pairs:
        hit = rows.get(id(f))
        if hit is None:
            hit = rows[id(f)] = (f, integer_row(f))      # keeps f alive: its id stays its own
        if hit[1] is None:
            return _fraction_sum(pairs)
        terms.append((c, hit[1]))
    out = scaled_rows_sum(terms, len(pairs[0][1]))
    return _fraction_sum(pairs) if out is None else tuple(out)


def _fraction_sum(pairs: list) -> tuple:
    acc = [Fraction(0)] * len(pairs[0][1])
    for c, f in pairs:
        for i, v in enumerate(f):
            if v:
                acc[i] += c * v
    return tuple(acc)


def marginal(terms: list, k: int) -> list:
    """The law of the first ``k`` positions (the others summed out)."""
    out = []
    for coef, factors in terms:
        c = coef
        for f in factors[k:]:
            c *= exact_sum(f)
        out.append((c, factors[:k]))
    return compress(out)


def value_at(terms: list, index: tuple) -> Fraction:
    """The entry of the sum of ``terms`` at the token indices ``index`` (one per position)."""
    out = Fraction(0)
    for coef, factors in terms:
        v = coef
        for f, t in zip(factors, index):
            v *= f[t]
            if not v:
                break
        out += v
    return out


def _pivots(rows: list) -> list:
    """The pivot columns of the reduced row echelon form of exact ``rows`` (the columns where
    each row, reduced by the rows before it, is first not zero; the rows that reduce to zero
    have none).  By integers, fraction-free (``r * e[t] - r[t] * e``, each row divided by the
    gcd of its entries) when the rows are rows of rationals; the scale of a row does not move
    its pivot."""
    basis: list = []
    pivots: list = []
    for row in rows:
        check_deadline()
        r = integer_row(row)
        if r is None:
            return _rational_pivots(rows)
        ints = r[0]
        for e, piv in basis:
            c = ints[piv]
            if c:
                a = e[piv]
                ints = [x * a - c * y if y else x * a for x, y in zip(ints, e)]
                g = math.gcd(*ints)
                if g > 1:
                    ints = [x // g for x in ints]
        piv = next((i for i, v in enumerate(ints) if v), None)
        if piv is None:
            continue
        basis.append((ints, piv))
        pivots.append(piv)
    return pivots


def _rational_pivots(rows: list) -> list:
    """:func:`_pivots` of rows that are not all rationals (exact arithmetic as it is)."""
    reduced: list = []
    for row in rows:
        _independent(row, reduced)
    return [piv for _, piv in reduced]


def find_nonzero(terms: list):
    """``None`` when the sum of ``terms`` (all of one order) is the zero tensor; otherwise the
    token indices of an entry where it is not zero (see the module's text)."""
    terms = [(c, f) for c, f in terms if c != 0]
    if not terms:
        return None
    order = len(terms[0][1])
    if any(len(f) != order for _, f in terms):
        raise ValueError("terms of different orders")
    if order == 0:
        return None if exact_sum(c for c, _ in terms) == 0 else ()
    if order == 1:
        acc = scaled_sum([(c, f) for c, (f,) in terms])
        return next(((i,) for i, v in enumerate(acc) if v), None)
    groups: dict = {}
    for c, f in terms:                   # by factor object: equal rows need not merge here
        groups.setdefault(id(f[0]), (f[0], []))[1].append((c, f[1:]))
    firsts = [f0 for f0, _ in groups.values()]
    pivots = _pivots(firsts)
    for piv in pivots:
        sub = []
        for f0, members in groups.values():
            lam = f0[piv]                # f0 = sum_l f0[pivot_l] e_l
            if lam:
                sub.extend((c * lam, rest) for c, rest in members)
        found = find_nonzero(compress(sub))
        if found is not None:
            return (piv,) + found
    return None


def shortest_nonzero_prefix(terms: list):
    """The shortest prefix where the sum of ``terms`` (all of one order ``K``), the positions
    after it summed out, is not zero: ``(tokens, value)``, ``tokens`` the prefix's token
    indices and ``value`` the marginal there; ``None`` when the sum is the zero tensor.

    In time polynomial in the terms, the order and the vocabulary (not ``rank^K`` as a
    recursion over the positions would be).  The terms' coefficients after ``k`` positions,
    read at a prefix ``x_1 .. x_k``, form the vector ``e(x) = (c_j prod_i f_i^(j)(x_i))_j``;
    the prefix's marginal is the linear form ``sum_j e_j(x) m_j`` with ``m_j`` the mass of
    term ``j`` after ``k``.  Every ``e(x)`` lies in the span of the vectors ``e(y) (*) F_k[:, t]``
    (``(*)`` elementwise) for ``e(y)`` spanning the vectors of the level before and ``t`` the
    pivot columns of the matrix ``F_k`` of the terms' factors at position ``k`` (a basis of its
    columns); so a basis of at most ``R`` vectors per level, each the vector of a prefix it
    names, decides every marginal of that level: one of them is not zero iff some prefix's
    is, and that basis vector's prefix is the witness.  (The identity testing of read-once
    algebraic branching programs, by linear algebra level by level.)

    >>> from fractions import Fraction as F
    >>> p, half = (F(1, 2), F(1, 2)), (F(1, 2), F(0))
    >>> shortest_nonzero_prefix([(F(1), (half, p)), (F(1), ((F(0), F(1, 2)), p)),
    ...                          (F(-1), (p, p))]) is None
    True
    >>> shortest_nonzero_prefix([(F(1), (p, p)), (F(-1), (p, (F(1, 4), F(3, 4))))])
    ((0, 0), Fraction(1, 8))
    >>> shortest_nonzero_prefix([(F(1), (p, half)), (F(-1), (p, p))])    # mass 1/2, not 1
    ((), Fraction(-1, 2))
    """
    intern = _Interner()
    merged: dict = {}                    # terms of equal factors, one term (by interned ids)
    for c, fs in terms:
        if c != 0:
            fs = tuple(intern(f) for f in fs)
            hit = merged.setdefault(tuple(map(id, fs)), [Fraction(0), fs])
            hit[0] += c
    terms = [(c, fs) for c, fs in merged.values() if c != 0]
    if not terms:
        return None
    order = len(terms[0][1])
    if any(len(fs) != order for _, fs in terms):
        raise ValueError("terms of different orders")
    count = len(terms)
    sums: dict = {}
    for _, fs in terms:
        for f in fs:
            if id(f) not in sums:
                sums[id(f)] = exact_sum(f)
    rest = [[Fraction(1)] * count]                 # rest[K - k][j]: term j's mass after k
    for k in range(order - 1, -1, -1):
        rest.append([r * sums[id(fs[k])] for r, (_, fs) in zip(rest[-1], terms)])
    rest.reverse()
    basis = [([Fraction(c) for c, _ in terms], ())]
    total = _dot(basis[0][0], rest[0])
    if total:
        return (), total
    for k in range(order):
        column = [fs[k] for _, fs in terms]
        distinct = list({id(f): f for f in column}.values())
        pivots = _pivots(distinct)
        reduced: list = []                         # the span so far, in echelon form
        level = []
        for vector, prefix in basis:
            for t in pivots:
                check_deadline()
                candidate = [v * f[t] if v else v for v, f in zip(vector, column)]
                if _independent(candidate, reduced):
                    level.append((candidate, prefix + (t,)))
                    if len(level) == count:
                        break
            if len(level) == count:
                break
        basis = level
        for vector, prefix in basis:
            value = _dot(vector, rest[k + 1])
            if value:
                return prefix, value
    return None


def _dot(a: list, b: list):
    out = Fraction(0)
    for x, y in zip(a, b):
        if x and y:
            out += x * y
    return out


def _independent(vector: list, reduced: list) -> bool:
    """Whether ``vector`` is outside the span of ``reduced`` (rows in echelon form, each with
    its pivot: ``(row, pivot)``, the row 1 at its pivot); if so it is added, reduced."""
    r = list(vector)
    for row, piv in reduced:
        c = r[piv]
        if c:
            r = [a - c * b if b else a for a, b in zip(r, row)]
    piv = next((i for i, v in enumerate(r) if v), None)
    if piv is None:
        return False
    inv = 1 / r[piv]
    reduced.append(([v * inv if v else v for v in r], piv))
    return True


def compose(call_terms: list, m: int) -> dict:
    """``{k: L_k}`` for ``k = 0..m``: the law of the first ``k`` tokens of repeated calls whose
    one call has the law ``call_terms`` (each term's order the number of tokens it emits, at
    least 1), the same at every context and with no state between calls.

    >>> from fractions import Fraction as F
    >>> e0, e1 = (F(1), F(0)), (F(0), F(1))
    >>> laws = compose([(F(1, 2), (e0, e1)), (F(1, 2), (e1,))], 2)   # "0,1" or "1"
    >>> value_at(laws[2], (1, 1)), value_at(laws[2], (0, 1)), value_at(laws[2], (1, 0))
    (Fraction(1, 4), Fraction(1, 2), Fraction(1, 4))
    """
    if any(not f for _, f in call_terms):
        raise ValueError("a call that emits no token")
    intern = _Interner()
    call_terms = [(c, tuple(intern(f) for f in fs)) for c, fs in call_terms]
    laws: dict = {0: [(Fraction(1), ())]}
    for k in range(1, m + 1):
        out = []
        for c, fs in call_terms:
            check_deadline()
            j = len(fs)
            if j >= k:
                coef = c
                for f in fs[k:]:
                    coef *= exact_sum(f)
                out.append((coef, fs[:k]))
            else:
                out.extend((c * c2, fs + gs) for c2, gs in laws[k - j])
        laws[k] = compress(out, intern)
    return laws


def _integer(f) -> tuple[list, int]:
    d = 1
    for v in f:
        if v:
            d = math.lcm(d, Fraction(v).denominator)
    return [int(v * d) for v in f], d


def dense(terms: list, n: int):
    """The dense tensor of the sum of ``terms`` (order ``k``): ``(numerators, denominator)``,
    a NumPy object array of shape ``(n,) * k`` of Python ints and one common denominator."""
    import numpy as np

    parts = []
    common = 1
    for coef, factors in terms:
        ints, den = [], Fraction(coef).denominator
        for f in factors:
            i, d = _integer(f)
            ints.append(i)
            den *= d
        parts.append((Fraction(coef).numerator, ints, den))
        common = math.lcm(common, den)
    order = len(terms[0][1]) if terms else 0
    total = np.zeros((n,) * order, dtype=object) if order else 0
    for num, ints, den in parts:
        arr = np.array([num * (common // den)], dtype=object).reshape(()) if order else \
            num * (common // den)
        for i in ints:
            arr = np.multiply.outer(arr, np.array(i, dtype=object))
        total = total + arr
    return total, common


def tv_to_power(terms: list, p: tuple, k: int) -> Fraction:
    """The exact total variation between the sum of ``terms`` (order ``k``, total mass 1) and
    ``p^{(x)k}``, from the dense tensors (``len(p) ** k`` entries)."""
    n = len(p)
    law = terms + [(Fraction(-1), (tuple(p),) * k)]
    diff, den = dense(law, n)
    if k == 0:
        return Fraction(max(diff, 0), den)
    positive = sum(int(v) for v in diff.flat if v > 0)
    return Fraction(positive, den)
