"""Exponential noise and its races: what ``exponential_()`` and the log of uniforms make.

- ``exponential_()`` (:func:`~.random.exponential_fill`): the tensor becomes one noise vector
  ``s.exponentials(n)`` (:class:`NoiseValue`); ``w / E``, ``E / w`` and ``E`` itself (also
  written ``w * E.reciprocal()``, a score times or divided by a positive number: a
  :class:`RaceScore`) are decided by ``argmax``/``argmin`` as one exponential race
  (:mod:`exactspec.engine.races`, exact even when the noise serves several races).  An argmax
  over a part of the vector (one row of a 2-D noise tensor, ``argmax(dim=1)``) races that part
  as a noise vector of its own: disjoint parts of i.i.d. exponentials are independent; parts
  that overlap without being the same part are beyond the exact method, and so is a single
  noise value read on its own.  ``log(E)`` is kept too: ``argmax(logits - log(E))`` (Gumbel
  noise added to logits, any positive scale) is the race ``argmax(exp(logits) / E)``, exact
  run only (:class:`LogNoise`).
- ``torch.log`` of explicit uniforms: ``log(u) = -E`` and ``log(1 - u) = -E'`` with
  ``E ~ Exp(1)``, so ``-torch.log(u)`` (or ``-torch.log(1 - u)``) is exponential noise, the
  uniforms of one ``log`` call one noise vector, racing as ``exponential_()`` noise does, and
  ``-torch.log(-torch.log(u))`` is Gumbel noise (``logits + G``).  Exact run with ideal
  uniforms only: on a grid (``--grid``, the exact run on the format's grid, ``--arith``)
  ``-log(u)`` takes finitely many values, and its law there is refused in one line with its
  size; a uniform compared before its log, or read after it, is refused (:func:`uniform_log`).

The tensor layer hands these values to :mod:`.tensor`'s operations through
:data:`~.dispatch.OPS` (``race_index``, ``race_scores``, ``uniform_log``, ``check_not_noise``).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

from ..core.integer_rows import exact_sum, float_fraction
from ..engine.floats import FloatValue
from ..engine.uniform import Uniform, UniformView
from .axis_values import mixed_token, reads_as_bool
from .branched import LawIndex
from .context import current, refuse, undecided
from .dispatch import register
from .grid_uniforms import grid_power, grid_text
from .tensor import OPS, Tensor
from .values import KEPT_BY_FLOAT_CAST, exact_number, is_nan, is_random

__all__ = ["NoiseValue", "RaceScore", "LogNoise", "race_scores", "race_index", "uniform_log",
           "check_not_noise", "race_maxima_compared", "RaceOrder", "race_maxima_selected",
           "race_maximum", "race_products"]

#: serial numbers of races (a race's maximum and its winner name the races they stand for)
_RACES = itertools.count()


class NoiseValue:
    """Element ``index`` of an exponential noise vector, times ``scale`` (a non-zero rational:
    ``log(u)`` of an explicit uniform is ``-E``, scale ``-1``; a race needs it positive)."""

    __slots__ = ("noise", "noise_index", "scale")

    def __init__(self, noise, index: int, scale=Fraction(1)):
        self.noise = noise
        self.noise_index = index
        self.scale = scale

    def _negative(self, what: str):
        raise undecided(f"{what} of negative exponential noise (log(u) of a uniform is -E): "
                        "negate it first, -torch.log(u) is the Exp(1) noise of a race")

    def __rtruediv__(self, w):                        # w / E: the race's score of weight w
        w = _weight(w)
        if self.scale < 0:
            if w > 0:
                self._negative("a weight divided by a value")
            w = -w
        return RaceScore(self.noise, self.noise_index,
                         w if self.scale == 1 else w / abs(self.scale), True)

    def __truediv__(self, w):                         # E / w
        w = _weight(w)
        if w == 0 or (w > 0) != (self.scale > 0):
            raise undecided("exponential noise divided by a weight that is not positive")
        return RaceScore(self.noise, self.noise_index, w / self.scale, False)

    def __mul__(self, c):
        c = _weight(c)
        if c == 0:
            raise undecided("exponential noise times 0 is beyond the exact method")
        return NoiseValue(self.noise, self.noise_index, self.scale * c)

    __rmul__ = __mul__

    def __neg__(self):                                # -log(u): the noise E itself
        return NoiseValue(self.noise, self.noise_index, -self.scale)

    def _refuse(self, *args):
        raise undecided(f"noise{self.noise.ident}[{self.noise_index}]: a single exponential "
                        "value read on its own is beyond the exact method; use it in a race "
                        "(w / E, then argmax)")

    __lt__ = __le__ = __gt__ = __ge__ = __add__ = __radd__ = __sub__ = __rsub__ = _refuse

    def __bool__(self):
        self._refuse()

    def log_noise(self):                              # log(scale E) = log E + log(scale)
        if self.scale < 0:
            self._negative("the log")
        return LogNoise(self.noise, self.noise_index, Fraction(1),
                        OPS["log_value"](self.scale) if self.scale != 1 else Fraction(0))

    def __repr__(self):
        return f"E{self.noise.ident}[{self.noise_index}]" if self.scale == 1 else \
            f"{self.scale}*E{self.noise.ident}[{self.noise_index}]"


class LogNoise:
    """``a * log(E) + b`` for element ``noise_index`` of a noise vector (``a`` a non-zero
    rational, ``b`` an exact number): Gumbel noise ``-log(E)`` added to logits.  An argmax of
    such values with one ``a`` is an exponential race, ``argmax(b - |a| log E)`` being
    ``argmax(exp(b / |a|) / E)`` (Gumbel-max sampling of ``softmax(b / |a|)``); anything
    else on it is beyond the exact method.  Exact run only: under ``--arith`` the rounding of
    the log and of the sum would matter and is not modelled (refused)."""

    __slots__ = ("noise", "noise_index", "a", "b")

    def __init__(self, noise, index: int, a, b):
        self.noise = noise
        self.noise_index = index
        self.a = a
        self.b = b

    def _with(self, a, b):
        return LogNoise(self.noise, self.noise_index, a, b)

    def __neg__(self):
        return self._with(-self.a, -self.b)

    def __add__(self, c):
        return self._with(self.a, self.b + _offset(c))

    __radd__ = __add__

    def __sub__(self, c):
        return self._with(self.a, self.b - _offset(c))

    def __rsub__(self, c):
        return self._with(-self.a, _offset(c) - self.b)

    def __mul__(self, c):
        c = _weight(c)
        if c == 0:
            raise undecided("log-noise times 0 is beyond the exact method")
        return self._with(self.a * c, self.b * c)

    __rmul__ = __mul__

    def __truediv__(self, c):
        c = _weight(c)
        if c == 0:
            raise undecided("log-noise divided by 0")
        return self._with(self.a / c, self.b / c)

    def _refuse(self, *args):
        raise undecided(f"the log of noise{self.noise.ident} used outside an argmax/argmin "
                        "is beyond the exact method")

    __lt__ = __le__ = __gt__ = __ge__ = __rtruediv__ = _refuse

    def __bool__(self):
        self._refuse()

    def race_score(self, a):
        """This value as a race score of a race whose values all have the factor ``a``."""
        if not current().exact:
            raise refuse("a race of Gumbel scores (log of exponential noise) under --arith: "
                         "the rounding of the log and of the sum is not modelled; run it "
                         "exactly")
        exp_value = OPS["exp_value"]
        if a < 0:                    # b - |a| log E: the score exp(b / |a|) / E
            return RaceScore(self.noise, self.noise_index, _weight(exp_value(self.b / -a)),
                             True)
        if _is_infinite(self.b):     # log E - inf: an infinite weight E / 0
            raise undecided("log-noise plus -inf in a race of log E (the sign of a Gumbel "
                            "score reversed)")
        return RaceScore(self.noise, self.noise_index, _weight(exp_value(-self.b / a)), False)

    def __repr__(self):
        return f"{self.a}*log(E{self.noise.ident}[{self.noise_index}]) + {self.b}"


def _is_zero(w) -> bool:
    return isinstance(w, (Fraction, int)) and w == 0      # (Fraction's exact subclass too)


def _offset(c):
    if is_random(c):
        raise undecided("log-noise plus a random value is beyond the exact method")
    x = exact_number(c)
    if is_nan(x) or x == math.inf:
        raise undecided("log-noise plus nan or +inf is beyond the exact method")
    return x


def _is_infinite(x) -> bool:
    return isinstance(x, float) and math.isinf(x)


class RaceScore:
    """The score of token ``noise_index`` in a race: ``w / E`` (``over=True``) or ``E / w``.

    ``race_max``: ``(tokens, W, races)`` once this score won an argmax over the ``tokens`` of
    its noise vector, of total weight ``W`` (the race's maximum, distributed as ``W / E``,
    independent of which token won it; ``races`` the serial numbers of the races it is the
    maximum of); two such maxima of disjoint parts compare as a race of their totals
    (:func:`race_maxima_compared`).  A race's maximum whose winner is kept as its law (the
    vectorised routes) has no token of its own: ``noise_index`` is ``None``."""

    __slots__ = ("noise", "noise_index", "weight", "over", "race_max")

    def __init__(self, noise, index: int, weight, over: bool):
        self.noise = noise
        self.noise_index = index
        self.weight = weight
        self.over = over
        self.race_max = None

    def _refuse(self, *args):
        raise undecided(f"a race score (w / E) of noise{self.noise.ident} used outside an "
                        "argmax/argmin is beyond the exact method")

    def _positive(self, c, what):
        c = _weight(c)
        if c <= 0:
            raise undecided(f"a race score {what} a number that is not positive")
        return c

    def __mul__(self, c):        # (w / E) * c = (w c) / E; (E / w) * c = E / (w / c)
        if self.over:
            c = _weight(c)
            if c < 0:
                raise undecided("a race score times a negative number")
            return RaceScore(self.noise, self.noise_index, self.weight * c, True)
        c = self._positive(c, "times")
        return RaceScore(self.noise, self.noise_index, self.weight / c, False)

    __rmul__ = __mul__           # prob * (1 / E): vLLM's ``prob * q.reciprocal()``

    def __truediv__(self, c):    # (w / E) / c = (w / c) / E; (E / w) / c = E / (w c)
        c = self._positive(c, "divided by")
        return RaceScore(self.noise, self.noise_index,
                         self.weight / c if self.over else self.weight * c, self.over)

    def __rtruediv__(self, c):   # c / (w / E) = E / (w / c); c / (E / w) = (c w) / E
        c = self._positive(c, "dividing")
        return RaceScore(self.noise, self.noise_index,
                         self.weight / c if self.over else self.weight * c, not self.over)

    __add__ = __radd__ = __sub__ = __rsub__ = _refuse

    def _against(self, c, op):
        if isinstance(c, RaceScore) and self.over and c.over:
            return race_maxima_compared(self, c, op)
        if not self.over or isinstance(c, RaceScore) or is_random(c):
            self._refuse()
        c = exact_number(c)
        w = exact_number(self.weight)
        if isinstance(c, float) and c == -math.inf or c < 0 or (c == 0 and w > 0):
            return op in ("gt", "ge")
        if c == 0 and w == 0:
            return op in ("ge", "le")
        self._refuse()

    def __gt__(self, c):
        return self._against(c, "gt")

    def __ge__(self, c):
        return self._against(c, "ge")

    def __lt__(self, c):
        return self._against(c, "lt")

    def __le__(self, c):
        return self._against(c, "le")

    def __bool__(self):
        self._refuse()

    def __repr__(self):
        return f"score{self.noise_index}(noise{self.noise.ident})"


def race_maxima_compared(a: RaceScore, b: RaceScore, op: str):
    """``a op b`` (``op`` one of ``gt``, ``ge``, ``lt``, ``le``) of two race scores ``w / E``:
    the maxima of races over disjoint parts ``A`` and ``B`` of one noise vector (a kernel's
    running maximum across tiles: ``if local_max > max_val``).

    The maximum of ``w_i / E_i`` over ``A`` is ``W_A / E`` in law (``E ~ Exp(1)``), independent
    of which token won ``A``, and independent of the part ``B``; so ``a > b`` holds with
    probability ``W_A / (W_A + W_B)`` (a coin, exactly), whichever tokens won, and the larger,
    whichever it is, is then the maximum over ``A | B``: the winner carries that part on, the
    loser no longer stands for a race's maximum.  A score of weight 0 is the number 0 (a
    positive score beats it almost surely); ties of positive scores have probability 0.  Any
    other comparison of two race scores is beyond the exact method.

    Inside the condition of a kernel's ``if`` (:mod:`exactspec.triton_layer.branches`) on a
    vectorised route (where the races' winners are kept as their laws) the comparison is kept
    as a :class:`RaceOrder` not yet decided, so that both branches can run and their values be
    selected (:func:`race_maxima_selected`) without a branch point."""
    wa, wb = exact_number(a.weight), exact_number(b.weight)
    if a is b or (wa == 0 and wb == 0):
        return op in ("ge", "le")
    if wa == 0 or wb == 0:
        return (wa != 0) == (op in ("gt", "ge"))
    ma, mb = a.race_max, b.race_max
    if ma is None or mb is None or a.noise is not b.noise or ma[0] & mb[0]:
        raise undecided(f"a comparison of two race scores (w / E) of noise{a.noise.ident} "
                        "other than the maxima of races over disjoint parts of one noise "
                        "vector is beyond the exact method")
    order = RaceOrder(a, b, op, ma[1] / (ma[1] + mb[1]))
    run = current()
    if getattr(run, "lazy_orders", False) and getattr(run.sampler, "vectorised", False):
        return order             # the winners are kept as their laws: they can be selected
    return bool(order)


class RaceOrder:
    """``a op b`` of the maxima ``a`` and ``b`` of two races over disjoint parts of one noise
    vector, not yet decided: ``a`` is the larger with probability ``first``
    (:func:`race_maxima_compared`).  Read as a bool, the engine's coin decides it once (the
    exact path samplers; a vectorised one cannot branch on it and proceeds no further)."""

    __slots__ = ("a", "b", "op", "first", "decided")

    def __init__(self, a: RaceScore, b: RaceScore, op: str, first):
        self.a, self.b, self.op, self.first = a, b, op, first
        self.decided = None

    @property
    def holds(self):
        """The probability that ``a op b`` holds."""
        return self.first if self.op in ("gt", "ge") else 1 - self.first

    def __bool__(self):
        if self.decided is None:
            self.decided = self._decide()
        return self.decided

    def _decide(self) -> bool:
        from ..engine.exact_sampler import ExactSampler
        from ..engine.float_sampler import FloatSampler

        a, b = self.a, self.b
        sampler = current().sampler
        if type(sampler) not in (ExactSampler, FloatSampler):
            from ..core.signals import CannotProceed

            raise CannotProceed("the maxima of two races compared (the path enumeration "
                                "decides it)")
        _alone(a.noise, a.race_max[0] | b.race_max[0])
        first = ExactSampler.coin(sampler, self.first,
                                  what=f"race maxima (noise{a.noise.ident})")
        winner, loser = (a, b) if first else (b, a)
        winner.race_max, loser.race_max = _union_race(a, b), None
        return first == (self.op in ("gt", "ge"))


reads_as_bool(RaceOrder)
RaceOrder.__invert__ = lambda self: not bool(self)     # ~ of a bool element: its negation
RaceOrder.__index__ = RaceOrder.__int__ = lambda self: int(bool(self))
RaceOrder.__hash__ = lambda self: hash(bool(self))


def _order_cast(v: RaceOrder, dtype, cast):
    """An order not yet decided stays a value in a bool dtype; any other cast decides it."""
    if v.decided is None and dtype.kind == "bool":
        return v
    return cast(bool(v), dtype)


register(RaceOrder, rank=0, cast=_order_cast, python=lambda v, what: bool(v),
         truth=lambda r: r)


def _alone(noise, tokens: frozenset) -> None:
    """Refuse a decision about race maxima over ``tokens`` of ``noise`` where another race ran
    over some of them too (one noise row shared by several positions' races): the maxima are
    then not independent of the other races' outcomes."""
    counts = current().__dict__.get("race_counts", {})
    for (ident, part), count in counts.items():
        if ident == id(noise) and count > 1 and part & tokens:
            raise undecided(f"the maxima of races over noise{noise.ident} compared where "
                            "several races ran over the same noise: beyond the exact method")


def race_maxima_selected(order: RaceOrder, then_value, else_value):
    """The value a kernel's ``if order: x = then_value`` (else ``x = else_value``) leaves,
    without deciding ``order``; ``None`` where it cannot be had without deciding it.

    - the two race maxima compared, the larger taken: the maximum over both parts, a race's
      maximum again (its weight the total);
    - their winners (tokens kept as their law; ``v + local_id`` moved up by its tile's offset),
      each where its own maximum was the larger: the winner over both parts, whose law is the
      mixture of the two by the order's probability (a race's winner is independent of its
      maximum, and the parts are independent).
    """
    a, b = order.a, order.b
    if {id(then_value), id(else_value)} == {id(a), id(b)} and then_value is not else_value:
        if (then_value is a) != (order.op in ("gt", "ge")):
            return None                          # the smaller kept: not a race's maximum
        return _union_maximum(a, b)
    if type(then_value) is LawIndex and type(else_value) is LawIndex:
        t_race, e_race = then_value.race, else_value.race
        big, small = (a, b) if order.op in ("gt", "ge") else (b, a)
        if t_race is None or e_race is None or big.race_max is None or \
                small.race_max is None or t_race[0] is not a.noise or \
                e_race[0] is not a.noise or t_race[3] != big.race_max[2] or \
                e_race[3] != small.race_max[2]:
            return None
        return mixed_token(then_value, order.holds, else_value, then_value.what,
                           race=(a.noise,) + _union_race(a, b))
    return None


def _union_race(a: RaceScore, b: RaceScore) -> tuple:
    ma, mb = a.race_max, b.race_max
    return ma[0] | mb[0], ma[1] + mb[1], ma[2] | mb[2]


def _union_maximum(a: RaceScore, b: RaceScore) -> RaceScore:
    return _maximum_score(a.noise, _union_race(a, b))


def _maximum_score(noise, race_max: tuple) -> RaceScore:
    """A race's maximum ``W / E`` with no token of its own: ``race_max = (tokens, W, races)``."""
    out = RaceScore(noise, None, race_max[1], True)
    out.race_max = race_max
    return out


def race_maximum(token: LawIndex) -> RaceScore:
    """The maximum of the race whose winner ``token`` is kept as its law (a kernel's
    ``tl.max(score, return_indices=True)`` on a vectorised route): ``W / E`` in law, ``W`` the
    race's total weight, a race score with no token of its own."""
    noise, tokens, total, races = token.race
    if tokens is None:
        raise undecided("the extreme of a race of E / w scores whose winner is kept as its "
                        "law is beyond the exact method")
    return _maximum_score(noise, (tokens, total, races))


def race_products(xs, ys):
    """``[x * y for x, y in zip(xs, ys)]`` in the exact run where each pair is two rationals
    or a race score ``w / E`` and a rational ``c >= 0`` (``prob * inv_q``: the score of
    weight ``w c``), computed as :meth:`RaceScore.__mul__` does; ``None`` for other rows (the
    caller computes element by element)."""
    out = []
    append = out.append
    for x, y in zip(xs, ys):
        tx, ty = type(x), type(y)
        if tx is Fraction and ty is Fraction:
            append(x * y)
            continue
        if tx is RaceScore and ty is Fraction:
            score, c = x, y
        elif ty is RaceScore and tx is Fraction:
            score, c = y, x
        else:
            return None
        if not score.over or c._numerator < 0:
            return None
        w = score.weight
        append(RaceScore(score.noise, score.noise_index,
                         c if type(w) is Fraction and w == 1 else w * c, True))
    return out


def race_scores(weights, noise, fmt_name=None):
    """``[w / e for w, e in zip(weights, noise)]`` for a row of weights over a row of noise
    values, computed as :meth:`NoiseValue.__rtruediv__` does: exact rationals in the exact
    run, finite values of the format ``fmt_name`` (taken at their exact binary values) under
    ``--arith``; ``None`` for other rows (the caller computes element by element)."""
    out = []
    append = out.append
    for w, e in zip(weights, noise):
        if type(e) is not NoiseValue:
            return None
        if fmt_name is None:
            if type(w) is not Fraction:
                return None
        elif type(w) is FloatValue and w.fmt.name == fmt_name and math.isfinite(w.value):
            w = float_fraction(w.value)
        else:
            return None
        s = e.scale
        if s < 0:
            return None                  # negative noise: element by element (refused there)
        append(RaceScore(e.noise, e.noise_index, w if s == 1 else w / s, True))
    return out


def _weight(w):
    if is_random(w):
        raise undecided("a race between two random quantities is beyond the exact method")
    x = exact_number(w)
    if isinstance(x, float):
        raise refuse(f"a race weight of {x}: not a finite number")
    return x

def _noise_part(noise, index: list):
    """The noise vector that a race over the elements ``index`` of ``noise`` runs on, and each
    element's place in it: ``noise`` itself when the race covers it whole, else the part
    ``index`` as a noise vector of its own (``noise[rows].exponential_()`` filled once,
    ``argmax(dim=1)`` racing each row): disjoint parts of i.i.d. exponentials are independent
    vectors of i.i.d. exponentials.  A part that overlaps another part (or the whole vector
    raced) without being the same part is beyond the exact method."""
    run = current()
    table = run.__dict__.setdefault("noise_parts", {})
    entry = table.setdefault(id(noise), [noise, {}, False])   # noise, parts, raced whole
    parts = entry[1]
    if sorted(index) == list(range(noise.n)):
        if parts:
            raise undecided("argmax over a whole noise vector after races over parts of it "
                            "is beyond the exact method")
        entry[2] = True
        return noise, index
    key = frozenset(index)
    if entry[2] or any(key & other for other in parts if other != key):
        raise undecided("argmax over overlapping parts of a noise vector is beyond the exact "
                        "method")
    part = parts.get(key)
    if part is None:
        part = parts[key] = run.sampler.exponentials(len(key))
    place = {i: j for j, i in enumerate(sorted(key))}
    return part, [place[i] for i in index]


def race_index(values, largest: bool):
    """The argmax (argmin) of a row of race scores as one exponential race, or None when the
    row holds no noise."""
    logs = [v for v in values if isinstance(v, LogNoise)]
    if logs:                                     # Gumbel scores b - log E: a race
        if len(logs) != len(values) or len({v.a for v in logs}) != 1:
            raise undecided("argmax over log-noise mixed with other values (or scaled "
                            "differently) is beyond the exact method")
        values = [v.race_score(logs[0].a) for v in logs]
    noisy = [v for v in values if isinstance(v, (NoiseValue, RaceScore))]
    if not noisy:
        return None
    if all(type(v) is NoiseValue and v.scale < 0 for v in values):
        # argmax of -s E (log(u) of uniforms) is the argmin of s E, and argmin the argmax
        values = [-v for v in values]
        largest = not largest
    elif any(type(v) is NoiseValue and v.scale < 0 for v in values):
        raise undecided("argmax over exponential noise of both signs is beyond the exact "
                        "method")
    if len(noisy) != len(values):
        raise undecided("argmax over noise mixed with other values is beyond the exact method")
    noise = values[0].noise
    over = [v.over if isinstance(v, RaceScore) else False for v in values]
    if all(isinstance(v, RaceScore) and v.over and _is_zero(v.weight) for v in values):
        # every score w / E is 0 (a residual that is all zero, computed whether or not it is
        # used): torch's argmax (argmin) of equal values is the first index, whatever E holds
        return 0
    if any(v.noise is not noise for v in values) or len(set(over)) != 1:
        raise undecided("argmax over scores of different races is beyond the exact method")
    index = [v.noise_index for v in values]
    if any(i is None for i in index):
        raise undecided("argmax over a race's maximum whose winner is kept as its law is "
                        "beyond the exact method")
    if len(set(index)) != len(index):
        raise undecided("argmax over one noise element twice is beyond the exact method")
    whole = values[0].noise
    tokens = frozenset(index)
    run = current()
    counts = run.__dict__.setdefault("race_counts", {})
    counts[(id(whole), tokens)] = counts.get((id(whole), tokens), 0) + 1
    noise, index = _noise_part(noise, index)
    weights = [Fraction(0)] * noise.n
    for v, i in zip(values, index):
        weights[i] = v.weight if isinstance(v, RaceScore) else 1 / v.scale
    if not over[0] and any(w == 0 for w in weights):
        raise undecided("E / w with a weight 0 (an infinite score) in a race")
    first = over[0] == largest
    token = run.sampler.race(weights, noise, first=first, what="race")
    serial = frozenset((next(_RACES),))
    # a race of w / E scores won by its largest: its maximum is W / E (race_maximum)
    total = exact_sum([exact_number(w) for w in weights]) if over[0] and largest else None
    if isinstance(token, LawIndex):          # kept as its law: position k holds index[k]
        if index != list(range(noise.n)):    # not the noise in its own order: reordered
            token = LawIndex([token.probs[i] for i in index], token.what)
        token.race = (whole, tokens if total is not None else None, total, serial)
        return token
    k = index.index(token)
    if total is not None:                    # the winner is the race's maximum, W / E
        values[k].race_max = (tokens, total, serial)
    return k


# -- exponential noise as -log(u) --------------------------------------------------------------
def _uniform_of(v):
    """``(uniform, kind)`` for ``u`` itself (kind ``"u"``) or ``1 - u`` (kind ``"1-u"``) of an
    explicit uniform of the exact run; ``None`` for anything else."""
    if type(v) is Uniform:
        return v, "u"
    if isinstance(v, UniformView) and isinstance(v.base, Uniform) and v.scale == 1 and \
            v.shift == 0:
        return v.base, "u"
    terms = getattr(v, "terms", None)
    if type(v).__name__ == "Linear" and isinstance(terms, dict) and len(terms) == 1:
        ((u, a),) = terms.items()
        if isinstance(u, Uniform) and a == -1 and v.const == 1:
            return u, "1-u"
    return None


def _is_uniform_like(v) -> bool:
    t = type(v)
    return t is not Fraction and t is not FloatValue and is_random(v) and \
        not isinstance(v, (NoiseValue, RaceScore, LogNoise))


def uniform_log(t: Tensor):
    """``torch.log(t)`` of a tensor holding explicit uniforms: ``log(u) = -E`` and
    ``log(1 - u) = -E'``, with ``E = -log(u)`` an ``Exp(1)`` value, are exponential noise
    (:class:`NoiseValue` of scale ``-1``), so that ``w / -log(u)`` races as
    ``w / exponential_()`` does and ``-log(-log(u))`` is Gumbel noise.  The uniforms of one
    call become one noise vector (the same uniform logged again is the same noise element);
    each must be fresh (never compared) and is not compared afterwards.  Exact run with ideal
    uniforms only: on a grid (``--grid``, the exact run on the format's grid, or under
    ``--arith``) ``-log(u)`` is not ``Exp(1)`` and its law on the grid is refused with its
    size.  ``None`` when ``t`` holds no uniform (the caller takes the log as usual)."""
    values = t._values()
    if not any(_is_uniform_like(v) for v in values):
        return None
    run = current()
    n = len(values)
    if not run.exact:
        fmts = {getattr(getattr(v, "base", None), "fmt", run.fmt) for v in values
                if _is_uniform_like(v)}
        grid = max(f.grid for f in fmts)
        raise refuse(f"the log of {n} uniform{'s' * (n != 1)} of the {run.fmt.name} run's "
                     f"generator grid ({grid_text(grid)} points each) under --arith: "
                     f"-log(u) on the grid is not Exp(1) noise, and its exact law there "
                     f"({grid_power(grid, n)} grid points, each a rounded logarithm) is not "
                     "computed; run exactly, or draw the noise with exponential_()")
    found = []
    for v in values:
        hit = _uniform_of(v)
        if hit is None:
            raise undecided("the log of a random value other than a uniform u or 1 - u "
                            "(a scaled or shifted uniform, a combination) is beyond the "
                            "exact method")
        found.append(hit)
    grid = run.sampler.grid                  # (the pair run hands this to two runs)
    distinct = list({id(u): (u, kind) for u, kind in found}.values())
    if grid is not None:
        m = len(distinct)
        raise refuse(f"the log of {m} uniform{'s' * (m != 1)} on the grid of "
                     f"{grid_text(grid)} points (--grid, or the exact run on the format's "
                     f"grid): -log(u) on the grid is not Exp(1) noise, and its exact law there "
                     f"({grid_power(grid, m)} grid points) is not computed; run with ideal "
                     "uniforms, or draw the noise with exponential_()")
    table = run.__dict__.setdefault("uniform_noise", {})
    known = [table.get(id(u)) for u, _ in distinct]
    if all(k is None for k in known):
        for u, _ in distinct:
            if u.lo != 0 or u.hi != 1 or u.linked or u.spent:
                raise undecided(f"the log of u{u.ident} after it was compared: -log(u) is "
                                "Exp(1) noise only for a fresh uniform")
        noise = run.sampler.exponentials(len(distinct))
        for i, (u, kind) in enumerate(distinct):
            table[id(u)] = (u, kind, noise, i)
    elif any(k is None for k in known) or len({id(k[2]) for k in known}) != 1 or \
            any(k[1] != kind for k, (_, kind) in zip(known, distinct)):
        raise undecided("the log of uniforms some of which were logged before with others "
                        "(or as u and as 1 - u) is beyond the exact method: take the log of "
                        "the whole tensor of uniforms once")
    out = []
    for u, kind in found:
        _, _, noise, i = table[id(u)]
        out.append(NoiseValue(noise, i, Fraction(-1)))
    return Tensor.new(out, t._shape, t.dtype)


def check_not_noise(*values) -> None:
    """Refuse a comparison (or a read into Python) of an explicit uniform that a log turned
    into exponential noise: its law there is that of the noise, which the engine's uniform
    does not know."""
    table = current().__dict__.get("uniform_noise")
    if not table:
        return
    for v in values:
        bases = [getattr(v, "base", None)]
        terms = getattr(v, "terms", None)
        if isinstance(terms, dict):
            bases.extend(terms)
        for b in bases:
            if b is not None and id(b) in table and table[id(b)][0] is b:
                raise undecided(f"u{b.ident} read again after its log became exponential "
                                "noise: -log(u) and u are one random value, which the race "
                                "does not model")


OPS.update(race_index=race_index, race_scores=race_scores, race_products=race_products,
           uniform_log=uniform_log,
           check_not_noise=check_not_noise)
KEPT_BY_FLOAT_CAST.update((NoiseValue, RaceScore))
