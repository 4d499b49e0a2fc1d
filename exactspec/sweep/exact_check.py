"""Exact spot checks of a sweep: the float rows of a position converted exactly (every float
is its binary value) and each figure recomputed exactly.

At vocabulary scale, ``Fraction`` arithmetic token by token is slow (a binary denominator can
reach ``2^1074``), so a row becomes integers over one common power of two
(:func:`integer_row`: ``p = N / S`` with ``S = sum N``), and the figures are computed on
integers without a gcd.  At vocabulary scale even a Python integer per token is slow, so
:func:`exact_figures` keeps the integers in NumPy: :class:`DyadicRow` holds each float as its
53-bit mantissa and a shift, and sums along the exact order as 32-bit limbs in ``int64``
(exact; a Python integer is made only for the few states and tokens a figure reads), and
:func:`dyadic_order` sorts by the float ratio and the exact remainder of its division, with
every remaining equal pair checked exactly.  The figures:

==================  ===================================================================
column              exact twin
==================  ===================================================================
``alpha_one``       ``sum_t min(Np_t Sq, Nq_t Sp) / (Sp Sq)`` (:func:`overlap_integer`),
                    that is ``1 - A_j / Sp + B_j / Sq`` at the first ``j`` of the exact
                    order with ``q/p >= Sq/Sp`` (:func:`overlap_split`)
``alpha_star``      ``1 + min(0, min_j g_k(Q_j) - P_j)`` on integers along one exact sort
                    for every ``k``, at the states whose float ``h`` is near the minimum
                    (:func:`alpha_star_integer`, :func:`candidate_states`; tested against
                    :func:`exactspec.bounds.closed_forms.optimum_common_denominator`)
``acc_optimal``     the same ``alpha*``
``acc_key``         the same ``alpha*`` (KEY attains the optimum)
``acc_rrs``         RRS's residual thresholds along the exact order, once up to the largest
                    ``k`` (:func:`rrs_thresholds_integer`; tested against the recursion
                    :func:`rrs_acceptance_integer`)
``acc_kseq``        :func:`exactspec.bounds.closed_forms.kseq_acceptance` at the rational
                    ``rho`` within ``10^-12`` above ``rho*`` (:func:`~exactspec.methods.kseq.rho_star`);
                    only for ``|V| <=`` :data:`KSEQ_EXACT_MAX_VOCAB`
==================  ===================================================================

``acc_rrs_wor`` is a Monte Carlo estimate, not a formula, so it has no exact twin here.
The tests set the integer routines against :mod:`exactspec.numpy_backend.twins` (Fractions).

>>> import numpy as np
>>> exact = exact_figures(np.array([0.5, 0.25, 0.25]), np.array([0.25, 0.25, 0.5]), [2],
...                       ["rrs", "optimal"])
>>> exact[0]["alpha_star"], exact[0]["acc_rrs"], exact[0]["alpha_one"]
(Fraction(15, 16), Fraction(13, 16), Fraction(3, 4))
"""

from __future__ import annotations

from fractions import Fraction
from itertools import accumulate

import numpy as np

from ..bounds.closed_forms import exact_ratio_order, kseq_acceptance
from ..core.dist import Dist
from ..core.errors import InvalidInput
from ..methods.kseq import rho_star

__all__ = ["exact_figures", "integer_row", "overlap_integer", "rrs_acceptance_integer",
           "rrs_acceptances_integer", "rrs_thresholds_integer", "alpha_star_integer",
           "exact_order", "candidate_states", "CANDIDATE_MARGIN",
           "KSEQ_EXACT_MAX_VOCAB", "EXACT_COLUMNS", "DyadicRow", "dyadic_order",
           "overlap_split", "DYADIC_RANGE"]

#: Largest vocabulary at which K-SEQ's ``rho*`` is recomputed exactly (its exact bisection
#: costs about 40 passes over the vocabulary in ``Fraction``\ s).
KSEQ_EXACT_MAX_VOCAB = 4096

#: The columns an exact spot check recomputes.
EXACT_COLUMNS = ("alpha_one", "alpha_star", "acc_optimal", "acc_key", "acc_rrs", "acc_kseq")


def integer_row(row) -> tuple[list[int], int]:
    """A non-negative float64 row as integers ``N`` with ``row = N / 2^e`` exactly; returns
    ``(N, sum N)``, so the normalised row is ``N / sum N``.

    >>> N, S = integer_row(np.array([0.5, 0.25, 0.0]))
    >>> [Fraction(a, S) for a in N]
    [Fraction(2, 3), Fraction(1, 3), Fraction(0, 1)]
    """
    x = np.asarray(row, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(x)) or np.any(x < 0):
        raise InvalidInput("an exact check needs finite non-negative values")
    mant, expo = np.frexp(x)                              # x = mant * 2^expo, 0.5 <= mant < 1
    m = (mant * 2.0 ** 53).astype(np.int64)               # exact: 53-bit integers
    e = expo.astype(np.int64) - 53
    nz = m != 0
    if not nz.any():
        raise InvalidInput("an exact check needs a row with a positive value")
    low = int(e[nz].min())
    shifts = (e - low).tolist()
    N = [int(a) << s if a else 0 for a, s in zip(m.tolist(), shifts)]
    return N, sum(N)


def overlap_integer(Np, Sp, Nq, Sq) -> Fraction:
    """``sum_t min(p_t, q_t)`` for ``p = Np / Sp``, ``q = Nq / Sq``."""
    return Fraction(sum(min(a * Sq, b * Sp) for a, b in zip(Np, Nq)), Sp * Sq)


def rrs_acceptance_integer(Np, Sp, Nq, Sq, k: int) -> Fraction:
    """RRS acceptance ``1 - prod_{i=1..k} TV(r_{i-1}, q)`` with each residual kept as integers
    over one denominator: ``r = R / D``, ``(r - q)_+ = E / (D Sq)`` with
    ``E = max(R Sq - Nq D, 0)``, ``TV = sum E / (D Sq)``, and the next residual ``E / sum E``.

    >>> rrs_acceptance_integer([5, 4], 9, [1, 2], 3, 2)
    Fraction(23, 27)
    """
    R, D = list(Np), Sp
    rejection = Fraction(1)
    for _ in range(k):
        E = [max(r * Sq - b * D, 0) for r, b in zip(R, Nq)]
        S = sum(E)
        if S == 0:
            return Fraction(1)
        rejection *= Fraction(S, D * Sq)
        R, D = E, S
    return 1 - rejection


def rrs_acceptances_integer(Np, Sp, Nq, Sq, ks) -> list[Fraction]:
    """:func:`rrs_acceptance_integer` for each ``k`` of ``ks``, from one recursion up to the
    largest (the chance of rejecting ``i`` drafts is the product of the first ``i`` factors).

    >>> rrs_acceptances_integer([5, 4], 9, [1, 2], 3, [2, 1])
    [Fraction(23, 27), Fraction(7, 9)]
    """
    R, D = list(Np), Sp
    rejected = [Fraction(1)]
    for _ in range(max(ks)):
        E = [max(r * Sq - b * D, 0) for r, b in zip(R, Nq)]
        S = sum(E)
        if S == 0:
            rejected.append(Fraction(0))
            R = [0] * len(R)
            continue
        rejected.append(rejected[-1] * Fraction(S, D * Sq))
        R, D = E, S
    return [1 - rejected[k] for k in ks]


def exact_order(p_row, q_row, Np, Nq) -> list[int]:
    """Token indices by the exact ratio ``q/p`` ascending (``p = 0`` last, ties by index).

    The float ratio of two floats is their exact ratio correctly rounded, hence monotone in
    it: one stable NumPy sort of the float ratios, then each run of equal floats (exact ties,
    or ratios closer than a rounding, or rounded to 0 or infinity) re-sorted by the exact
    ratio ``Nq / Np``.

    >>> exact_order(np.array([0.5, 0.25, 0.25, 0.0]), np.array([0.25, 0.125, 0.5, 0.125]),
    ...             [4, 2, 2, 0], [2, 1, 4, 1])
    [0, 1, 2, 3]
    """
    p = np.asarray(p_row, dtype=np.float64).reshape(-1)
    q = np.asarray(q_row, dtype=np.float64).reshape(-1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        r = np.where(p > 0, q / np.where(p > 0, p, 1.0), np.inf)
    order = np.argsort(r, kind="stable")
    rs = r[order]
    same = np.flatnonzero(rs[1:] == rs[:-1])
    order = order.tolist()
    if same.size:
        starts = same[np.r_[True, np.diff(same) > 1]]        # runs of equal floats
        ends = same[np.r_[np.diff(same) > 1, True]] + 2
        for lo, hi in zip(starts.tolist(), ends.tolist()):
            run = order[lo:hi]
            a = run[0]
            if Np[a] and all(Nq[i] * Np[a] == Np[i] * Nq[a] for i in run):
                continue                                     # exact ties: by index already
            # two ratios a/b != c/d differ by at least 1/(bd), so their floors at a scale
            # 2^shift above every b d differ: the integer keys order them exactly
            shift = 2 * max(Np[i].bit_length() for i in run) + 2
            order[lo:hi] = sorted(run, key=lambda i: (
                Np[i] == 0, (Nq[i] << shift) // Np[i] if Np[i] else 0, i))
    return order


def alpha_star_integer(Np, Sp, Nq, Sq, ks, order=None, states=None,
                       prefix=None) -> list[Fraction]:
    """``alpha* = 1 + min(0, min_j g_k(Q_j) - P_j)`` for each ``k`` of ``ks``, along one exact
    sort of the tokens by ``q/p`` (``p = 0`` last), on integers: with ``P_j = A_j / Sp`` and
    ``Q_j = B_j / Sq``, ``h_j Sp Sq^k = Sp (Sq^k - (Sq - B_j)^k) - A_j Sq^k``.

    ``order``: the exact order if known (:func:`exact_order`).  ``states``: per ``k``, the
    prefix lengths ``j`` to evaluate (default all), e.g. those of :func:`candidate_states`.

    >>> alpha_star_integer([5, 3, 2], 10, [2, 2, 6], 10, [1, 2, 4])
    [Fraction(3, 5), Fraction(21, 25), Fraction(1, 1)]
    """
    if order is None:
        order = exact_ratio_order(list(Np), list(Nq))
    A, B = prefix or _prefix_integers(Np, Nq, order)
    out = []
    for j, k in enumerate(ks):
        power = Sq ** k
        best = 0
        for t in (range(1, len(A)) if states is None else states[j]):
            h = Sp * (power - (Sq - B[t]) ** k) - A[t] * power
            if h < best:
                best = h
        out.append(1 + Fraction(best, Sp * power))
    return out


def _prefix_integers(Np, Nq, order):
    return (list(accumulate([Np[i] for i in order], initial=0)),
            list(accumulate([Nq[i] for i in order], initial=0)))


#: A state whose float ``h`` is within this of the float minimum is evaluated exactly: the float
#: ``h`` is within ``1e-10`` of the exact one (running sums of at most ``2^20`` terms, a few
#: roundings each), so the exact minimum is always among them.
CANDIDATE_MARGIN = 1e-8


def candidate_states(p_row, q_row, ks, order) -> list[list[int]]:
    """Per ``k``, the prefix lengths ``j`` whose float ``h_j`` is within
    :data:`CANDIDATE_MARGIN` of the float minimum (and at or below it plus the margin of 0):
    the states that can hold the exact minimum of ``h``.

    >>> p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.2, 0.6])
    >>> candidate_states(p, q, [1, 4], [0, 1, 2])
    [[2], [3]]
    """
    idx = np.asarray(order, dtype=np.intp)
    p = np.asarray(p_row, dtype=np.float64)[idx]
    q = np.asarray(q_row, dtype=np.float64)[idx]
    P = np.cumsum(p / p.sum())
    rest = np.maximum(1.0 - np.cumsum(q / q.sum()), 0.0)
    out = []
    for k in ks:
        h = (1.0 - rest ** k) - P
        limit = min(float(h.min()), 0.0) + CANDIDATE_MARGIN
        out.append((np.flatnonzero(h <= limit) + 1).tolist())
    return out


def rrs_thresholds_integer(Np, Sp, Nq, Sq, ks, order, prefix=None) -> list[Fraction]:
    """RRS's acceptance for each ``k`` from the exact order: after ``i`` rejections the
    residual is ``(p - c_i q)_+ / Z_i`` with ``c_0 = 0``, ``Z_0 = 1``, ``c_i = c_{i-1} +
    Z_{i-1}`` and ``Z_i = sum (p - c_i q)_+``, a sum over a prefix of the order (the tokens with
    ``q/p < 1/c_i``, found by bisection); ``Z_k`` is the chance that ``k`` drafts are all
    rejected.  The same law as :func:`rrs_acceptance_integer`'s recursion (tested).

    >>> rrs_thresholds_integer([5, 4], 9, [1, 2], 3, [2, 1], [0, 1])
    [Fraction(23, 27), Fraction(7, 9)]
    """
    A, B = prefix or _prefix_integers(Np, Nq, order)
    n = len(order)
    c, Z = Fraction(0), Fraction(1)
    rejected = [Fraction(1)]
    for _ in range(max(ks)):
        if Z:
            c += Z
            lo, hi = 0, n                    # first position with p <= c q (or p = 0)
            while lo < hi:
                mid = (lo + hi) // 2
                i = order[mid]
                if Np[i] * Sq * c.denominator > Nq[i] * Sp * c.numerator:
                    lo = mid + 1
                else:
                    hi = mid
            Z = max(Fraction(0), Fraction(A[lo], Sp) - c * Fraction(B[lo], Sq))
        rejected.append(Z)
    return [1 - rejected[k] for k in ks]


#: :func:`dyadic_order` needs every positive value of both rows within ``[2^-e, 2]`` for this
#: ``e``, so that the float products it forms neither underflow nor overflow; other rows take
#: the Python-integer route (:func:`exact_order`).
DYADIC_RANGE = 480

#: Bits per limb of :class:`DyadicRow`: a column of ``n < 2^31`` limbs sums below ``2^63``.
_LIMB = 32


class DyadicRow:
    """A non-negative float64 row as integers ``N_i = x_i 2^-low`` over one power of two, held
    in NumPy as each value's 53-bit mantissa and its shift (``N_i = m_i 2^shift_i``).

    ``row[i]`` is ``N_i`` (a Python integer), ``total`` is ``sum N``, and :meth:`prefix` gives
    the running sums ``A_t = N_{o_0} + ... + N_{o_{t-1}}`` along an order ``o``: every ``N_i``
    is cut into 32-bit limbs at its place, the limbs summed by column in ``int64`` (exact: at
    most ``2^31`` terms below ``2^32``), and a column's sums recombined into a Python integer
    only where a state is read.  The same integers as :func:`integer_row` (tested).

    >>> x = np.array([0.75, 0.25, 0.0, 2.0 ** -10])
    >>> row = DyadicRow(x)
    >>> [row[i] for i in range(4)] == integer_row(x)[0]
    True
    >>> A = row.prefix([3, 0, 1, 2])
    >>> [str(Fraction(A[t]) * Fraction(2) ** row.low) for t in range(5)]
    ['0', '1/1024', '769/1024', '1025/1024', '1025/1024']
    """

    def __init__(self, x):
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        if not np.all(np.isfinite(x)) or np.any(x < 0):
            raise InvalidInput("an exact check needs finite non-negative values")
        mant, expo = np.frexp(x)                          # x = mant 2^expo, 1/2 <= mant < 1
        m = (mant * 2.0 ** 53).astype(np.int64)           # exact: 53-bit integers
        nz = m != 0
        if not nz.any():
            raise InvalidInput("an exact check needs a row with a positive value")
        e = expo.astype(np.int64) - 53
        self.low = int(e[nz].min())
        self.mantissa = m
        self.shift = np.where(nz, e - self.low, 0)
        self._total = None

    def __len__(self):
        return self.mantissa.size

    def __getitem__(self, i) -> int:
        return int(self.mantissa[i]) << int(self.shift[i])

    def _limbs(self, order=None):
        """The row (in ``order``, if given) as a ``(n, limbs)`` int64 array of 32-bit limbs
        (``N_i = sum_l L_il 2^32l``): ``n`` times about ``span / 32 + 3`` values, where the
        span of a float64 row is at most about 1,130 bits."""
        m, shift = self.mantissa, self.shift
        if order is not None:
            m, shift = m[order], shift[order]
        m = m.astype(np.uint64)
        place, off = np.divmod(shift, _LIMB)
        off = off.astype(np.uint64)
        width = np.uint64(_LIMB)
        mask = np.uint64((1 << _LIMB) - 1)
        n = m.size
        out = np.zeros((n, int(place.max()) + 3), dtype=np.int64)
        rows = np.arange(n)
        # m 2^off has at most 53 + 31 bits: three limbs, each shift below 64
        out[rows, place] = ((m << off) & mask).astype(np.int64)
        out[rows, place + 1] = ((m >> (width - off)) & mask).astype(np.int64)
        out[rows, place + 2] = ((m >> width) >> (width - off)).astype(np.int64)
        return out

    @staticmethod
    def _join(limbs) -> int:
        total = 0
        for j, v in enumerate(limbs.tolist()):
            total += v << (_LIMB * j)
        return total

    @property
    def total(self) -> int:
        """``sum N``."""
        if self._total is None:
            self._total = self._join(self._limbs().sum(axis=0))
        return self._total

    def prefix(self, order) -> "_Prefix":
        """The running sums along ``order``: ``A[t]`` for ``t = 0..n`` (Python integers)."""
        limbs = self._limbs(np.asarray(order, dtype=np.intp))
        return _Prefix(np.cumsum(limbs, axis=0, out=limbs))


class _Prefix:
    """Running sums of limbs; ``A[t]`` recombines row ``t - 1`` into one integer."""

    def __init__(self, sums):
        self.sums = sums

    def __len__(self):
        return self.sums.shape[0] + 1

    def __getitem__(self, t) -> int:
        return DyadicRow._join(self.sums[t - 1]) if t else 0


def _split(a):
    """Veltkamp's split of float64 values into halves of at most 26 bits (``a = hi + lo``)."""
    c = a * 134217729.0                                  # 2^27 + 1
    hi = c - (c - a)
    return hi, a - hi


def dyadic_order(p_row, q_row, Np=None, Nq=None) -> np.ndarray:
    """The exact order of :func:`exact_order` (``q/p`` ascending, ``p = 0`` last, ties by
    index), in NumPy.

    The float ratio ``r = fl(q/p)`` is monotone in the exact one, and the remainder of the
    division ``q - r p`` is a float, computed exactly (Dekker's product: ``r p = hi + lo``
    exactly, then ``(q - hi) - lo`` with no rounding); the exact ratio is ``r + (q - r p)/p``,
    so among equal ``r`` the float ``s = fl((q - r p)/p)`` is monotone in it too.  One stable
    sort by ``(r, s)``; a pair still equal in both is an exact tie when its ``(p, q)`` are equal,
    and otherwise compared exactly on integers (``Np``, ``Nq``: :class:`DyadicRow` or lists;
    the run re-sorted by exact keys if need be).  Rows with a positive value outside
    ``[2^-DYADIC_RANGE, 2]`` (where the products could underflow) take :func:`exact_order`.

    >>> p, q = np.array([0.5, 0.25, 0.25, 0.0]), np.array([0.25, 0.125, 0.5, 0.125])
    >>> dyadic_order(p, q).tolist()
    [0, 1, 2, 3]
    """
    p = np.asarray(p_row, dtype=np.float64).reshape(-1)
    q = np.asarray(q_row, dtype=np.float64).reshape(-1)
    lowest = 2.0 ** -DYADIC_RANGE
    if not all(np.all((x == 0) | ((x >= lowest) & (x <= 2.0))) for x in (p, q)):
        Np = Np if Np is not None else DyadicRow(p)
        Nq = Nq if Nq is not None else DyadicRow(q)
        return np.asarray(exact_order(p, q, Np, Nq), dtype=np.intp)
    live = p > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(live, q / np.where(live, p, 1.0), np.inf)
        rf = np.where(live, r, 0.0)
        prod = rf * p
        rh, rl = _split(rf)
        ph, pl = _split(p)
        err = ((rh * ph - prod) + rh * pl + rl * ph) + rl * pl   # rf p = prod + err, exactly
        rem = (q - prod) - err                                   # q - rf p, exactly
        s = np.where(live, rem / np.where(live, p, 1.0), 0.0)
    order = np.argsort(r + 1j * s, kind="stable")       # complex: by (r, s), ties by index
    rs, ss = r[order], s[order]
    same = np.flatnonzero((rs[1:] == rs[:-1]) & (ss[1:] == ss[:-1]))
    if same.size:
        a, b = order[same], order[same + 1]
        doubt = same[((p[a] != p[b]) | (q[a] != q[b])) & (p[a] > 0)]
        if doubt.size:                                   # equal floats, maybe not equal ratios
            Np = Np if Np is not None else DyadicRow(p)
            Nq = Nq if Nq is not None else DyadicRow(q)
            order = order.tolist()
            starts = same[np.r_[True, np.diff(same) > 1]]
            ends = same[np.r_[np.diff(same) > 1, True]] + 2
            for lo, hi in zip(starts.tolist(), ends.tolist()):
                if not np.any((doubt >= lo) & (doubt < hi)):
                    continue
                run = order[lo:hi]
                if all(Nq[i] * Np[run[0]] == Np[i] * Nq[run[0]] for i in run):
                    continue                             # exact ties: by index already
                shift = 2 * max(Np[i].bit_length() for i in run) + 2
                order[lo:hi] = sorted(run, key=lambda i: ((Nq[i] << shift) // Np[i], i))
            order = np.asarray(order, dtype=np.intp)
    return order


def overlap_split(Np, Sp, Nq, Sq, order, A, B) -> Fraction:
    """``sum_t min(p_t, q_t)`` from the exact order: the tokens with ``q/p < Sq/Sp`` (a prefix,
    found by bisection) give ``q``, the others ``p``: ``1 - A_j / Sp + B_j / Sq``.

    >>> overlap_split([5, 3, 2], 10, [2, 2, 6], 10, [0, 1, 2], [0, 5, 8, 10], [0, 2, 4, 10])
    Fraction(3, 5)
    """
    lo, hi = 0, len(order)
    while lo < hi:
        mid = (lo + hi) // 2
        i = int(order[mid])
        if Np[i] * Sq > Nq[i] * Sp:
            lo = mid + 1
        else:
            hi = mid
    return Fraction(Sq * (Sp - A[lo]) + Sp * B[lo], Sp * Sq)


def _as_dist(N, S) -> Dist:
    return Dist([Fraction(a, S) for a in N], check=False)


def exact_figures(p_row, q_row, ks, methods, *, python: bool = False) -> list[dict]:
    """For one position (float64 rows as the sweep used them, normalised exactly here), one
    dict per ``k`` mapping each checkable column to its exact value.

    The integers stay in NumPy (:class:`DyadicRow`, :func:`dyadic_order`) unless K-SEQ is
    checked (small vocabularies: ``Fraction`` rows) or ``python=True``: a Python integer per
    token, the route the NumPy one is tested against (the same values).
    """
    small = "kseq" in methods and np.size(p_row) <= KSEQ_EXACT_MAX_VOCAB
    if python or small:
        Np, Sp = integer_row(p_row)
        Nq, Sq = integer_row(q_row)
        one = overlap_integer(Np, Sp, Nq, Sq)
        order = exact_order(p_row, q_row, Np, Nq)
        prefix = _prefix_integers(Np, Nq, order)
    else:
        Np, Nq = DyadicRow(p_row), DyadicRow(q_row)
        order = dyadic_order(p_row, q_row, Np, Nq)
        prefix = Np.prefix(order), Nq.prefix(order)
        Sp, Sq = prefix[0][len(order)], prefix[1][len(order)]
        one = overlap_split(Np, Sp, Nq, Sq, order, *prefix)
    p, q = (_as_dist(Np, Sp), _as_dist(Nq, Sq)) if small else (None, None)
    alphas = alpha_star_integer(Np, Sp, Nq, Sq, ks, order,
                                candidate_states(p_row, q_row, ks, order), prefix)
    rrs = (rrs_thresholds_integer(Np, Sp, Nq, Sq, ks, order, prefix) if "rrs" in methods
           else None)
    out = []
    for j, k in enumerate(ks):
        values: dict[str, Fraction] = {"alpha_one": one}
        alpha = alphas[j]
        values["alpha_star"] = alpha
        if "optimal" in methods:
            values["acc_optimal"] = alpha
        if "key" in methods:
            values["acc_key"] = alpha
        if "rrs" in methods:
            values["acc_rrs"] = rrs[j]
        if small:
            values["acc_kseq"] = kseq_acceptance(p, q, k, rho_star(p, q, k).rho)
        out.append(values)
    return out
