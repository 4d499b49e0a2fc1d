r"""Exponential and Gumbel noise vectors, and the races run over them, with exact laws.

Engines rarely sample a token by inverse CDF.  They draw a noise vector over the vocabulary
and take an argmax:

- an *exponential race*: ``E = s.exponentials(n)`` (``E_v ~ Exp(1)`` i.i.d.) and
  ``(w / E).argmax()`` (equivalently ``(E / w).argmin()``);
- *Gumbel-max*: ``G = s.gumbels(n)`` and ``(log(w) + G).argmax()``.

- *Gumbel-max over raw logits*: ``(logits + G).argmax()``, the race over the weights
  ``exp(l - max l)`` (:func:`logit_weights`; its first-arrival law is ``softmax(l)``, exact in
  sympy, rational where the logits are logarithms of rationals).

Both read the same through ``s.race(w, noise)``.  Weights held in a float format (the float
interpreter, :mod:`.float_sampler`) are read at their exact binary values.  A noise vector may
be used in several races (an engine draws one per request and reuses it for every draft
position), and the weights of a race may depend on earlier outcomes.

**Exact laws.**  Write ``T_v = E_v / w_v`` (the arrival time of token ``v``, ``Exp(w_v)``).
The race's winner is ``argmin_v T_v``; ``argmax`` of the same scores is the *last* arrival.
A Gumbel ``G_v`` is ``-log E_v`` for an ``E_v ~ Exp(1)`` (``P(-log E <= g) = P(E >= e^-g) =
exp(-e^-g)``, the Gumbel CDF), and ``log w_v + G_v = -log T_v``, so Gumbel-max over ``w`` is the
exponential race over ``w``: one machinery serves both.

*One race on fresh noise*: ``P(win = j) = int_0^inf w_j e^{-w_j t} prod_{i != j} e^{-w_i t} dt
= w_j / sum_i w_i`` (the minimum of independent exponentials); the last arrival has, by
inclusion-exclusion over the others, ``P(last = j) = sum_{A subset of others} (-1)^|A|
w_j / (w_j + w(A))``.  Both are rational functions of the weights, so they also run over
symbolic weights.

*Several races over one noise vector*: every outcome is a set of homogeneous linear
inequalities ``w_i E_j - w_j E_i <= 0`` on ``E`` (``j`` arrives before ``i``).  The event that
all the outcomes so far happened is a polyhedral cone ``C`` in ``R^n_+``, and
``P(E in C)`` is rational: the density of ``E`` is ``exp(-sum x)``, and ``E / sum(E)`` is
uniform on the simplex, independent of ``sum(E)`` (the Dirichlet(1, ..., 1) fact); a cone is
invariant under scaling, so ``P(E in C) = P(E / sum(E) in C)``, the share of the simplex that
lies in ``C``.  Dropping the last coordinate, the simplex is ``{y >= 0, sum y <= 1}`` of volume
``1 / (d-1)!``, so ``P(E in C) = (d-1)! vol(C')`` for the polytope ``C'`` it cuts out; that
volume is exact (:mod:`.polytope`).  Coordinates that no inequality links are independent, so
the cone splits into components and the probability is their product.  A race's branch
probability is the ratio ``P(C and the new outcome) / P(C)``, exact.

This never lists the ``n!`` orders of the noise; the cost is that of the volumes, about
``C(m, d-1)`` exact solves for ``m`` inequalities on ``d`` linked coordinates, refused above
the budget (:class:`~exactspec.core.errors.TooLarge`).  A single noise value read on its own
(``E[v]``) is beyond the exact method (``Undecided``); the sampling interpreter reads it.

Noise is continuous even when explicit uniforms are on a grid (``--grid N``): the grid models a
float uniform generator, and a float exponential's ties have probability about ``2^-24`` per
pair, which this model neglects.  Ties (probability 0 for continuous noise) follow ``torch.argmax``: the lowest index.  Tokens of
weight 0 never win a race (their score ``0 / E`` is 0); a race whose weights are all 0 is an
error, as is a race over no tokens.

>>> from fractions import Fraction as F
>>> cone_probability([(1, -1)])                  # P(E_0 <= E_1)
Fraction(1, 2)
>>> first_arrival_law([F(1), F(2), F(3)])
[Fraction(1, 6), Fraction(1, 3), Fraction(1, 2)]
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

from ..core.errors import InvalidInput, TooLarge, Undecided
from .polytope import vertex_work, volume

__all__ = ["Noise", "Scores", "LogWeights", "Logits", "log", "race_weights", "logit_weights",
           "cone_probability", "first_arrival_law", "last_arrival_law", "race_rows",
           "MAX_RACE_WORK", "CACHE", "OPTIONS"]

#: Most exact solves one volume of a race may take before the race is refused (each solve is
#: a small exact linear system: 20,000 take seconds).
MAX_RACE_WORK = 20_000


class Noise:
    """A noise vector over ``n`` tokens: i.i.d. ``Exp(1)`` (``kind="exponential"``) or standard
    Gumbel (``kind="gumbel"``), drawn by ``s.exponentials(n)`` / ``s.gumbels(n)``.

    Exact interpreters keep ``rows``: the homogeneous inequalities ``row . E <= 0`` that the
    races so far imply on the underlying exponentials.  The sampling interpreter keeps
    ``values``.
    """

    __slots__ = ("sampler", "n", "ident", "kind", "rows", "values")

    def __init__(self, sampler, n: int, ident: int, kind: str, values=None):
        self.sampler = sampler
        self.n = n
        self.ident = ident
        self.kind = kind
        self.rows: list = []
        self.values = values

    def __len__(self):
        return self.n

    def __rtruediv__(self, weights):                      # w / E
        self._need("exponential", "divide weights by exponential noise: w / E")
        return Scores(self, weights, first_on_max=True)

    def __truediv__(self, weights):                       # E / w
        self._need("exponential", "divide exponential noise by weights: E / w")
        return Scores(self, weights, first_on_max=False)

    __array_ufunc__ = None      # ``array / E``, ``logits + G``: NumPy hands the operation here

    def __add__(self, other):                             # G + log(w), G + logits
        self._need("gumbel", "add Gumbel noise to log-weights or logits: log(w) + G, "
                   "logits + G")
        if isinstance(other, LogWeights):
            return Scores(self, other.weights, first_on_max=True)
        if isinstance(other, (Noise, Scores)) or isinstance(other, (int, float, Fraction)):
            raise InvalidInput("Gumbel noise is added to a vector: log-weights (log(w) + G, "
                               "with log from exactspec.engine.races) or logits (logits + G)")
        return Scores(self, Logits(other), first_on_max=True)

    __radd__ = __add__

    def __getitem__(self, v):
        if self.values is not None:
            return float(self.values[v])
        raise Undecided(f"noise{self.ident}[{v!r}]: a single noise value read on its own is "
                        "beyond the exact method; use the noise in a race (s.race, argmax)")

    def _need(self, kind, text):
        if self.kind != kind:
            raise InvalidInput(f"noise{self.ident} is {self.kind} noise: {text}")

    def __repr__(self):
        return f"Noise({self.kind}, n={self.n}, #{self.ident})"


class Logits:
    """Raw logits ``l`` added to Gumbel noise (``logits + G``): Gumbel-max over them is the
    race over the weights ``exp(l - max l)`` (:func:`race_weights` forms them, exactly: sympy
    exponentials, rational where the differences are logarithms of rationals)."""

    __slots__ = ("values",)

    def __init__(self, values):
        self.values = values

    def __repr__(self):
        return f"Logits({self.values!r})"


class LogWeights:
    """``log(w)`` of a weight vector, to be added to Gumbel noise (see :func:`log`)."""

    __slots__ = ("weights",)

    def __init__(self, weights):
        self.weights = weights

    def __add__(self, other):
        if not isinstance(other, Noise):
            raise InvalidInput("log(w) is added to Gumbel noise from s.gumbels(n)")
        return other.__add__(self)

    __radd__ = __add__


def log(x):
    """``log(w)`` of a weight vector, read lazily so that ``(log(w) + G).argmax()`` is
    Gumbel-max over ``w`` (tokens of weight 0 have ``log 0 = -inf`` and never win); of a number
    or an explicit uniform, an exact logarithm (:mod:`.logs`: ``log(u) + log(q) < log(p)``,
    ``-log(u)`` as an exponential)."""
    from .joint import Linear, is_view
    from .logs import log_of

    if getattr(x, "is_symbolic_value", False):
        raise Undecided("the log of a symbolic value is beyond the exact method")
    if isinstance(x, (int, float, Fraction)) or is_view(x) or isinstance(x, Linear):
        return log_of(x)
    return LogWeights(x)


class Scores:
    """The scores of a race (``w / E``, ``E / w`` or ``log w + G``), waiting for
    ``.argmax()`` or ``.argmin()``."""

    __slots__ = ("noise", "weights", "first_on_max")

    def __init__(self, noise: Noise, weights, first_on_max: bool):
        self.noise = noise
        self.weights = weights
        self.first_on_max = first_on_max

    def argmax(self, what: str = "race"):
        """The token of the largest score."""
        return self.noise.sampler.race(self.weights, self.noise, first=self.first_on_max,
                                       what=what)

    def argmin(self, what: str = "race"):
        """The token of the smallest score."""
        return self.noise.sampler.race(self.weights, self.noise, first=not self.first_on_max,
                                       what=what)


def race_weights(weights, n: int | None = None) -> tuple[tuple, list]:
    """``(labels, weights)`` of a Dist, a mapping or a sequence (labels are then indices).

    A value of a float format (:class:`~exactspec.engine.floats.FloatValue`) is read at its
    exact binary value (the weight the kernel holds); raw :class:`Logits` become the weights
    ``exp(l - max l)``.

    >>> from exactspec.engine.floats import FORMATS, FloatValue
    >>> race_weights([FloatValue(0.5, FORMATS["float32"]), Fraction(1, 4)])
    ((0, 1), [Fraction(1, 2), Fraction(1, 4)])
    >>> race_weights(Logits([0, 0, Fraction(-1)]))[1]
    [Fraction(1, 1), Fraction(1, 1), exp(-1)]
    """
    from ..core.dist import Dist, exact

    if isinstance(weights, Logits):
        labels, logits = race_weights_raw(weights.values, n)
        return labels, logit_weights(logits, labels)
    if isinstance(weights, Dist):
        labels, values = tuple(weights.labels), list(weights.probs)
    elif hasattr(weights, "keys") and hasattr(weights, "values"):
        labels, values = tuple(weights.keys()), list(weights.values())
    else:
        try:
            values = list(weights)
        except TypeError:
            raise InvalidInput(f"race weights {weights!r}: give a Dist, a mapping or a "
                               "sequence of non-negative numbers") from None
        labels = tuple(range(len(values)))
    if not values:
        raise InvalidInput("race: argmax over an empty set of tokens")
    if n is not None and len(values) != n:
        raise InvalidInput(f"race: {len(values)} weights against a noise vector of {n} tokens")
    out = []
    for lab, v in zip(labels, values):
        v = _format_value(v, f"race weight of {lab!r}")
        if not getattr(v, "is_symbolic_value", False):
            v = exact(v, f"race weight of {lab!r}")
        if v < 0:
            raise InvalidInput(f"race weight of {lab!r} is {v}, negative")
        out.append(v)
    return labels, out


def _format_value(v, what: str):
    """A float format's value at its exact binary value (a Fraction); anything else as is."""
    from .floats import FloatValue

    if isinstance(v, FloatValue):
        if not math.isfinite(v.value):
            raise InvalidInput(f"{what} is {v.value} in {v.fmt.name}, not a finite number")
        return Fraction(v.value)
    return v


def race_weights_raw(values, n: int | None = None) -> tuple[tuple, list]:
    """``(labels, values)`` of a Dist, a mapping or a sequence, the values unchecked."""
    from ..core.dist import Dist

    if isinstance(values, Dist):
        labels, values = tuple(values.labels), list(values.probs)
    elif hasattr(values, "keys") and hasattr(values, "values"):
        labels, values = tuple(values.keys()), list(values.values())
    else:
        try:
            values = list(values)
        except TypeError:
            raise InvalidInput(f"logits {values!r}: give a sequence of numbers") from None
        labels = tuple(range(len(values)))
    if not values:
        raise InvalidInput("race: argmax over an empty set of tokens")
    if n is not None and len(values) != n:
        raise InvalidInput(f"race: {len(values)} logits against a noise vector of {n} tokens")
    return labels, values


def logit_weights(logits: list, labels: tuple = ()) -> list:
    """The race weights ``exp(l_i - max l)`` of raw logits, exact: ``1`` at the maximum,
    Fractions where the difference is the logarithm of a rational (``log(1/3) - log(1/2)``),
    else sympy exponentials.  A logit of ``-inf`` (a masked token) has weight 0.

    >>> import sympy
    >>> logit_weights([sympy.log(Fraction(1, 3)), sympy.log(Fraction(1, 2))])
    [Fraction(2, 3), Fraction(1, 1)]
    """
    import sympy

    from ..core.dist import exact

    values = []
    for i, v in enumerate(logits):
        lab = labels[i] if i < len(labels) else i
        what = f"logit of {lab!r}"
        v = _logit_value(v, what)
        if getattr(v, "is_symbolic_value", False) or (hasattr(v, "free_symbols")
                                                      and v.free_symbols):
            raise Undecided("Gumbel-max over symbolic logits is beyond the exact method")
        if isinstance(v, float) and v == -math.inf:
            values.append(None)
            continue
        v = exact(v, what)
        if not isinstance(v, Fraction):
            v = sympy.sympify(v)
            if v == -sympy.oo:
                values.append(None)
                continue
            if not v.is_finite or not v.is_real:
                raise InvalidInput(f"{what} is {v}, not a finite real number")
        values.append(v)
    finite = [v for v in values if v is not None]
    if not finite:
        raise InvalidInput("race over logits that are all -inf: no token can win")
    top = max(finite, key=lambda x: x if isinstance(x, Fraction) else sympy.N(x, 50))
    out = []
    for v in values:
        if v is None:
            out.append(Fraction(0))
            continue
        if isinstance(v, Fraction) and isinstance(top, Fraction):
            d = v - top
            out.append(Fraction(1) if d == 0 else sympy.exp(sympy.Rational(d.numerator,
                                                                           d.denominator)))
            continue
        w = sympy.exp(sympy.sympify(v) - sympy.sympify(top))
        if not w.is_Rational:
            w = sympy.simplify(sympy.expand_log(sympy.powsimp(w), force=True))
        out.append(Fraction(int(w.p), int(w.q)) if w.is_Rational else w)
    return out


def _logit_value(v, what: str):
    from .floats import FloatValue

    if isinstance(v, FloatValue):
        if math.isnan(v.value) or v.value == math.inf:
            raise InvalidInput(f"{what} is {v.value} in {v.fmt.name}, not a finite number")
        return v.value if v.value == -math.inf else Fraction(v.value)
    if isinstance(v, float) and (math.isnan(v) or v == math.inf):
        raise InvalidInput(f"{what} is {v}, not a finite number")
    return v


def race_rows(weights: list, j: int, first: bool, n: int) -> list:
    """The inequalities ``row . E <= 0`` that say token ``j`` arrives first (``first``) or last
    among the tokens of positive weight."""
    rows = []
    for i, w in enumerate(weights):
        if i == j or not w > 0:
            continue
        row = [Fraction(0)] * n
        if first:       # E_j / w_j <= E_i / w_i
            row[j], row[i] = w, -weights[j]
        else:           # E_i / w_i <= E_j / w_j
            row[i], row[j] = weights[j], -w
        rows.append(_normal(row))
    return rows


def _normal(row) -> tuple:
    if any(not isinstance(v, (int, Fraction)) for v in row):
        return tuple(row)                     # symbolic weights: kept as they are
    lead = next(abs(v) for v in row if v != 0)
    return tuple(Fraction(v) / lead for v in row)


def first_arrival_law(weights: list) -> list:
    """``P(argmin_v E_v / w_v = j) = w_j / sum w`` for fresh noise (0 for zero weights)."""
    total = sum(weights[1:], weights[0])
    if not total > 0:
        raise InvalidInput("race over weights that sum to 0: no token can win")
    return [w / total if w > 0 else 0 * w for w in weights]


#: Most terms the last-arrival law of one race on fresh noise may take (per token: the
#: distinct subset sums of the other weights, at most ``2^(n-1)``).
MAX_LAST_ARRIVAL_TERMS = 10**5


def last_arrival_law(weights: list) -> list:
    """``P(argmax_v E_v / w_v = j)`` for fresh noise, by inclusion-exclusion; a token of
    weight 0 arrives at infinity and is last for sure (the lowest such index).

    For rational weights the subsets are grouped by their sum (a signed count per distinct
    sum of the other weights), so equal or small integer weights cost little; the number of
    terms is estimated first (``n`` times the fewer of ``2^(n-1)`` and the distinct sums the
    weights' common denominator allows) and refused above :data:`MAX_LAST_ARRIVAL_TERMS`.

    >>> last_arrival_law([Fraction(1), Fraction(1), Fraction(2)])
    [Fraction(5, 12), Fraction(5, 12), Fraction(1, 6)]
    """
    zeros = [i for i, w in enumerate(weights) if not w > 0]
    if zeros:
        return [1 if i == zeros[0] else 0 for i in range(len(weights))]
    n = len(weights)
    rational = all(isinstance(w, (int, Fraction)) for w in weights)
    states = 2 ** (n - 1) if n < 200 else 2**200
    if rational:
        denominator = math.lcm(*(Fraction(w).denominator for w in weights))
        span = sum(int(Fraction(w) * denominator) for w in weights) + 1
        states = min(states, span)
    if n * states > MAX_LAST_ARRIVAL_TERMS:
        raise TooLarge(f"the last arrival of a race over {n} tokens: about {n * states:,} "
                       "inclusion-exclusion terms (subset sums of the other weights), over the "
                       f"budget of {MAX_LAST_ARRIVAL_TERMS:,} (use fewer tokens, or the first "
                       "arrival: argmax of w / E)", estimate=n * states,
                       budget=MAX_LAST_ARRIVAL_TERMS)
    out = []
    for j, wj in enumerate(weights):
        others = [w for i, w in enumerate(weights) if i != j]
        if rational:                                     # weights times their denominator
            scaled = [int(Fraction(w) * denominator) for w in others]
            own = int(Fraction(wj) * denominator)
            signed = {0: 1}                              # subset sum -> sum of (-1)^|A|
            for w in scaled:
                step = dict(signed)
                for total, count in signed.items():
                    step[total + w] = step.get(total + w, 0) - count
                signed = {t: c for t, c in step.items() if c}
            out.append(sum((Fraction(c * own, own + t) for t, c in signed.items()),
                           Fraction(0)))
            continue
        total = 0 * wj
        for size in range(len(others) + 1):
            for subset in itertools.combinations(others, size):
                total = total + (-1) ** size * wj / (wj + sum(subset, 0 * wj))
        out.append(total)
    return out


CACHE: dict = {}


def cone_probability(rows, *, max_work: int | None = MAX_RACE_WORK) -> Fraction:
    """``P(row . E <= 0 for every row)`` for ``E`` i.i.d. ``Exp(1)``: a product over the
    linked groups of coordinates of ``(d-1)! vol`` (module docstring).

    >>> cone_probability([(1, -2, 0), (0, 1, -1)])    # P(E_0 <= 2 E_1, E_1 <= E_2)
    Fraction(1, 4)
    """
    rows = [tuple(Fraction(v) for v in r) for r in rows]
    if not rows:
        return Fraction(1)
    n = len(rows[0])
    parent = list(range(n))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for r in rows:
        support = [i for i, v in enumerate(r) if v != 0]
        for i in support[1:]:
            parent[find(i)] = find(support[0])
    groups: dict = {}
    for r in rows:
        support = [i for i, v in enumerate(r) if v != 0]
        if support:
            groups.setdefault(find(support[0]), []).append(r)
    prob = Fraction(1)
    for group_rows in groups.values():
        coords = sorted({i for r in group_rows for i, v in enumerate(r) if v != 0})
        reduced = frozenset(_normal([r[i] for i in coords]) for r in group_rows)
        key = (len(coords), reduced)
        if key not in CACHE:
            if len(CACHE) > 100_000:
                CACHE.clear()
            CACHE[key] = _group_probability(sorted(reduced), len(coords), max_work)
        prob *= CACHE[key]
        if prob == 0:
            break
    return prob


def _group_probability(rows: list, d: int, max_work) -> Fraction:
    if d == 1:
        return Fraction(0) if any(r[0] > 0 for r in rows) else Fraction(1)
    dim = d - 1
    constraints = []
    for i in range(dim):                               # y_i >= 0
        constraints.append((tuple(-1 if k == i else 0 for k in range(dim)), 0))
    constraints.append((tuple([1] * dim), 1))          # y_last = 1 - sum y >= 0
    for r in rows:                                     # r . (y, 1 - sum y) <= 0
        constraints.append((tuple(r[i] - r[-1] for i in range(dim)), -r[-1]))
    work = vertex_work(len(constraints), dim)
    if max_work is not None and work > max_work:
        raise TooLarge(f"races over shared noise link {d} tokens by {len(rows)} inequalities: "
                       f"their exact joint law needs about {work:,} linear solves, over the "
                       f"budget of {max_work:,} (use fewer tokens or positions)",
                       estimate=work, budget=max_work)
    return volume(constraints, dim, max_work=None) * math.factorial(dim)


def fresh_for(noise: Noise, weights: list) -> bool:
    """True when no earlier race on ``noise`` touched a token of positive weight here."""
    support = {i for i, w in enumerate(weights) if w > 0}
    return not any(r[i] != 0 for r in noise.rows for i in support)


OPTIONS: dict = {}


def exact_race_options(noise: Noise, weights: list, first: bool) -> list:
    """``[(index, probability, rows)]``: each possible winner, its exact conditional
    probability given the earlier races on ``noise``, and the inequalities it adds.

    The exact interpreter re-runs a method once per path, so the answers are remembered
    (for rational weights)."""
    if all(isinstance(w, (int, Fraction)) for w in weights):
        key = (tuple(noise.rows), tuple(weights), first)
        hit = OPTIONS.get(key)
        if hit is None:
            if len(OPTIONS) > 100_000:
                OPTIONS.clear()
            hit = OPTIONS[key] = _race_options(noise, weights, first)
        return hit
    return _race_options(noise, weights, first)


def _race_options(noise: Noise, weights: list, first: bool) -> list:
    n = noise.n
    if not any(w > 0 for w in weights):
        raise InvalidInput("race over weights that sum to 0: no token can win")
    if not first and any(not w > 0 for w in weights):
        j = next(i for i, w in enumerate(weights) if not w > 0)
        return [(j, 1, [])]
    candidates = [j for j, w in enumerate(weights) if w > 0]
    if len(candidates) == 1:
        return [(candidates[0], 1, [])]
    if fresh_for(noise, weights):
        support = [weights[j] for j in candidates]
        law = first_arrival_law(support) if first else last_arrival_law(support)
        return [(j, pr, race_rows(weights, j, first, n)) for j, pr in zip(candidates, law)]
    if any(not isinstance(w, (int, Fraction)) for w in weights):
        raise Undecided("a race over irrational or symbolic weights (exp of logits, a "
                        "symbol) on noise already used by an earlier race: its joint law is "
                        "exact only for rational weights")
    linked = {i for r in noise.rows for i, v in enumerate(r) if v != 0} | set(candidates)
    rows = len(noise.rows) + len(candidates) - 1
    work = vertex_work(rows + len(linked), len(linked) - 1)
    if work > MAX_RACE_WORK:
        raise TooLarge(f"a race over noise shared with earlier races links {len(linked)} tokens "
                       f"by {rows} inequalities: its exact joint law needs about {work:,} "
                       f"linear solves, over the budget of {MAX_RACE_WORK:,} (use fewer tokens "
                       "or positions)", estimate=work, budget=MAX_RACE_WORK)
    before = cone_probability(noise.rows)
    out = []
    for j in candidates:
        rows = race_rows(weights, j, first, n)
        pr = cone_probability(noise.rows + rows) / before
        out.append((j, pr, rows))
    return out


def sampled_race(noise: Noise, weights: list, first: bool) -> int:
    """The winner's index with the noise values drawn (sampling interpreter)."""
    import numpy as np

    if not any(w > 0 for w in weights):
        raise InvalidInput("race over weights that sum to 0: no token can win")
    w = np.array([float(v) for v in weights])
    values = np.asarray(noise.values, dtype=float)
    exps = values if noise.kind == "exponential" else np.exp(-values)
    scores = w / exps
    return int(np.argmax(scores) if first else np.argmin(scores))
