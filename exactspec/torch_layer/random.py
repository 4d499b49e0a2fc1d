"""Random constructors that branch through the engine's sampler.

- ``torch.rand``, ``rand_like``, ``empty(...).uniform_()``: each element is an explicit uniform
  ``s.uniform()``: ideal on ``[0, 1)`` in the exact run (on ``{0, 1/N, ...}`` with
  ``--grid N``), on the format's generator grid under ``--arith`` (``j / 2**24`` for
  ``float32``).  Comparing an element with a threshold (``u < c``, ``u <= c``) is a branch of
  the engine whose weight is the length (or grid count) of the piece; nothing is sampled.
- ``exponential_()``: the tensor becomes one noise vector ``s.exponentials(n)``; ``w / E``,
  ``E / w`` and ``E`` itself (also written ``w * E.reciprocal()``, a score times or divided by
  a positive number) are decided by ``argmax``/``argmin`` as one exponential race
  (:mod:`exactspec.engine.races`, exact even when the noise serves several races).  An argmax
  over a part of the vector (one row of a 2-D noise tensor, ``argmax(dim=1)``) races that part
  as a noise vector of its own: disjoint parts of i.i.d. exponentials are independent; parts
  that overlap without being the same part are beyond the exact method, and so is a single
  noise value read on its own.  ``log(E)`` is kept too: ``argmax(logits - log(E))`` (Gumbel
  noise added to logits, any positive scale) is the race ``argmax(exp(logits) / E)``, exact
  run only (:class:`LogNoise`).
- ``torch.multinomial(w, n)``: each sample is token ``i`` with probability ``w_i / sum w`` (with
  replacement), and without replacement the next token from the weights left (successive
  sampling).  This is the law of PyTorch's CPU kernel: for one sample or without replacement it
  divides ``w`` by a fresh exponential vector and takes the argmax (top-``n``), an exponential
  race on fresh noise, whose first arrival is ``i`` with probability ``w_i / sum w`` (the
  minimum of independent ``Exp(w_i)``; checked with torch 2.13: ``multinomial(w, 1)`` and
  ``multinomial(w, 2)`` equal ``argmax(w / E)`` and ``topk(w / E, 2)`` for ``E`` drawn by
  ``exponential_`` from the same generator state, in ``float64`` and ``float32``, 2-D too);
  with replacement it inverts the normalised cumulative
  sum, the same law.  The float rounding of the kernel's ``w / E`` is not modelled (ties of
  about ``2**-24`` per pair, as :mod:`exactspec.engine.races` says).  A draw from the draft
  row ``q`` exactly as the rule received it is the rule's draft (``s.draft``: counted for
  ``P(Y in X)``).
- ``generator=`` and ``torch.Generator().manual_seed(seed)``: accepted; a seeded stream is a
  fixed function of its seed, and the layer models every draw as independent of all others
  (per-request streams as independent streams).
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..core.dist import Dist
from ..core.integer_rows import float_fraction
from ..engine.exact import ExactSampler
from ..engine.floats import FloatValue
from . import dtypes as D
from .branched import Branched, LawIndex
from .context import current, refuse, undecided, user_line
from .tensor import OPS, Tensor, check_size
from .values import KEPT_BY_FLOAT_CAST, arith, cast, exact_number, is_nan, is_random

__all__ = ["Generator", "rand", "uniform_fill", "exponential_fill", "multinomial", "race_index",
           "NoiseValue", "RaceScore", "LogNoise"]


class Generator:
    """``torch.Generator``: accepted, seeded or not; its draws are modelled as independent."""

    def __init__(self, device="cpu"):
        if getattr(device, "type", str(device).split(":")[0]) != "cpu":
            raise refuse(f"torch.Generator(device={device!r}): exactspec runs a PyTorch rule "
                         "on its own CPU tensor layer")
        self.device = device
        self._seed = 67280421310721

    def manual_seed(self, seed):
        self._seed = int(seed)
        return self

    def seed(self):
        return self._seed

    def initial_seed(self):
        return self._seed


#: random constructor calls (``rand``, ``uniform_``, ``exponential_``, ``multinomial``) one
#: run of a rule may make: a loop drawing without branching (``while True: if torch.rand(1) <
#: 2: ...``) is refused instead of running forever
MAX_DRAWS = 10_000


def _sampler():
    run = current()
    if run.sampler is None:
        raise refuse("a random constructor outside the rule's run (at import time)")
    run.draws = getattr(run, "draws", 0) + 1
    if run.draws > MAX_DRAWS:
        from ..core.errors import TooLarge
        err = TooLarge(f"one run of the rule called random constructors more than "
                       f"{MAX_DRAWS:,} times: it may loop without bound ({user_line()})")
        err.located = True
        raise err
    return run


def _check_dtype(run, dtype):
    if dtype.kind != "float":
        raise refuse(f"random uniforms of dtype {dtype.name}: give a float dtype")
    if not run.exact and dtype.name != run.fmt.name:
        raise refuse(f"uniforms of dtype {dtype.name} under --arith {run.fmt.name}: the layer's "
                     f"generator draws {run.fmt.name} values only (uniforms of another dtype "
                     "beside the rows are not modelled); run exactly, or with --arith "
                     f"{dtype.name}")


def rand(shape, dtype=None) -> Tensor:
    """A tensor of explicit uniforms (see the module's text)."""
    run = _sampler()
    dtype = dtype or D.default_dtype()
    _check_dtype(run, dtype)
    n = check_size(math.prod(shape), f"torch.rand({list(shape)})")
    return Tensor.new([run.sampler.uniform() for _ in range(n)], shape, dtype)


def uniform_fill(t: Tensor, a=0, b=1) -> Tensor:
    """``t.uniform_(a, b)``: every element a fresh uniform, scaled to ``[a, b)``."""
    run = _sampler()
    _check_dtype(run, t.dtype)
    values = []
    for _ in range(t.numel()):
        u = run.sampler.uniform()
        if (a, b) != (0, 1):
            import operator
            u = arith(operator.add, arith(operator.mul, u, cast(b - a, t.dtype)),
                      cast(a, t.dtype))
        values.append(u)
    t._write(t._own_positions(), values)
    return t


class NoiseValue:
    """Element ``index`` of an exponential noise vector, times ``scale``."""

    __slots__ = ("noise", "noise_index", "scale")

    def __init__(self, noise, index: int, scale=Fraction(1)):
        self.noise = noise
        self.noise_index = index
        self.scale = scale

    def __rtruediv__(self, w):                        # w / E: the race's score of weight w
        w = _weight(w)
        return RaceScore(self.noise, self.noise_index, w if self.scale == 1 else w / self.scale,
                         True)

    def __truediv__(self, w):                         # E / w
        w = _weight(w)
        if w <= 0:
            raise undecided("exponential noise divided by a weight that is not positive")
        return RaceScore(self.noise, self.noise_index, w / self.scale, False)

    def __mul__(self, c):
        c = _weight(c)
        if c <= 0:
            raise undecided("exponential noise times a number that is not positive")
        return NoiseValue(self.noise, self.noise_index, self.scale * c)

    __rmul__ = __mul__

    def _refuse(self, *args):
        raise undecided(f"noise{self.noise.ident}[{self.noise_index}]: a single exponential "
                        "value read on its own is beyond the exact method; use it in a race "
                        "(w / E, then argmax)")

    __lt__ = __le__ = __gt__ = __ge__ = __add__ = __radd__ = __sub__ = __rsub__ = _refuse

    def __bool__(self):
        self._refuse()

    def log_noise(self):                              # log(scale E) = log E + log(scale)
        return LogNoise(self.noise, self.noise_index, Fraction(1),
                        OPS["log_value"](self.scale) if self.scale != 1 else Fraction(0))

    def __repr__(self):
        return f"E{self.noise.ident}[{self.noise_index}]"


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
    """The score of token ``noise_index`` in a race: ``w / E`` (``over=True``) or ``E / w``."""

    __slots__ = ("noise", "noise_index", "weight", "over")

    def __init__(self, noise, index: int, weight, over: bool):
        self.noise = noise
        self.noise_index = index
        self.weight = weight
        self.over = over

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

    __lt__ = __le__ = __gt__ = __ge__ = __add__ = __radd__ = __sub__ = __rsub__ = _refuse

    def __bool__(self):
        self._refuse()

    def __repr__(self):
        return f"score{self.noise_index}(noise{self.noise.ident})"


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
        append(RaceScore(e.noise, e.noise_index, w if s == 1 else w / s, True))
    return out


def _weight(w):
    if is_random(w):
        raise undecided("a race between two random quantities is beyond the exact method")
    x = exact_number(w)
    if isinstance(x, float):
        raise refuse(f"a race weight of {x}: not a finite number")
    return x


def exponential_fill(t: Tensor, lambd=1) -> Tensor:
    """``t.exponential_(lambd)``: ``t`` becomes one noise vector of ``Exp(lambd)`` values."""
    run = _sampler()
    if t.dtype.kind != "float":
        raise refuse("exponential_ of a non-float tensor")
    n = t.numel()
    noise = run.sampler.exponentials(n)
    scale = 1 / Fraction(exact_number(lambd))
    t._write(t._own_positions(), [NoiseValue(noise, i, scale) for i in range(n)])
    return t


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
    if len(set(index)) != len(index):
        raise undecided("argmax over one noise element twice is beyond the exact method")
    noise, index = _noise_part(noise, index)
    weights = [Fraction(0)] * noise.n
    for v, i in zip(values, index):
        weights[i] = v.weight if isinstance(v, RaceScore) else 1 / v.scale
    if not over[0] and any(w == 0 for w in weights):
        raise undecided("E / w with a weight 0 (an infinite score) in a race")
    first = over[0] == largest
    token = current().sampler.race(weights, noise, first=first, what="race")
    if isinstance(token, LawIndex):          # kept as its law: position k holds index[k]
        if index == list(range(noise.n)):     # the noise in its own order: the law as it is
            return token
        return LawIndex([token.probs[i] for i in index], token.what)
    return index.index(token)


def _draft_position(t: Tensor, run):
    """The draft position (0 for a 1-D draft row) that ``t`` is the unwritten row of, or
    ``None``: a multinomial draw from it is that position's draft."""
    if run.draft is None:
        return None
    q, version, _ = run.draft
    if t._st is not q._st or t._st.version != version or t.ndim != 1:
        return None
    if q.ndim == 1:
        return 0 if t.numel() == q.numel() and t._positions() == q._positions() else None
    positions = t._positions()
    for i in range(q._shape[0]):
        if positions == q[i]._positions():
            return i
    return None


def multinomial(t: Tensor, num_samples, replacement=False) -> Tensor:
    """``torch.multinomial(t, num_samples, replacement)`` (see the module's text)."""
    num_samples = int(num_samples)
    check_size(num_samples * (t._shape[0] if t.ndim == 2 else 1), "multinomial")
    run = _sampler()
    if t.ndim not in (1, 2):
        raise refuse("multinomial takes a 1-D or 2-D tensor of weights")
    if t.dtype.kind != "float":
        raise refuse("multinomial takes float weights")
    rows = [t] if t.ndim == 1 else [t[i] for i in range(t._shape[0])]
    n = t._shape[-1]
    if num_samples < 1 or (not replacement and num_samples > n):
        raise refuse(f"multinomial: cannot draw {num_samples} samples from {n} categories "
                     f"{'' if replacement else 'without replacement'}".rstrip())
    out = []
    for row in rows:
        position = _draft_position(row, run) if num_samples == 1 else None
        if position is not None:
            q_dist = run.draft[2]
            what = "draft" if run.draft[0].ndim == 1 else f"draft{position + 1}"
            label = run.sampler.draft(q_dist, what)
            if isinstance(label, Branched):       # the draft as a branch axis (vectorised)
                out.append([label])
                continue
            out.append([list(q_dist.labels).index(label)])
            continue
        weights = []
        for v in row._values():
            if is_random(v):
                raise undecided("multinomial over random weights is beyond the exact method")
            x = exact_number(v)
            if is_nan(x) or (isinstance(x, float) and math.isinf(x)) or x < 0:
                raise refuse("invalid multinomial distribution (a weight is negative, inf or "
                             "nan)")
            weights.append(x)
        chosen = []
        if num_samples == 1 and getattr(run.sampler, "vectorised", False):
            out.append([run.sampler.lazy_draw(weights, "multinomial")])   # kept as its law
            continue
        for k in range(num_samples):
            left = [Fraction(0) if (not replacement and i in chosen) else w
                    for i, w in enumerate(weights)]
            total = sum(left[1:], left[0])
            if total == 0:
                raise refuse("invalid multinomial distribution (sum of probabilities <= 0)")
            dist = Dist([w / total for w in left], list(range(n)), check=False)
            draw = ExactSampler.draw if isinstance(run.sampler, ExactSampler) else \
                type(run.sampler).draw                   # the sampling interpreter
            chosen.append(draw(run.sampler, dist, what="multinomial"))
        out.append(chosen)
    values = [i for row in out for i in row]
    shape = (num_samples,) if t.ndim == 1 else (len(rows), num_samples)
    return Tensor.new(values, shape, D.int64)


OPS.update(uniform_fill=uniform_fill, exponential_fill=exponential_fill,
           multinomial=multinomial, race_index=race_index, race_scores=race_scores)
KEPT_BY_FLOAT_CAST.update((NoiseValue, RaceScore))
