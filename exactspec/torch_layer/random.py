"""Random constructors that branch through the engine's sampler.

- ``torch.rand``, ``rand_like``, ``empty(...).uniform_()``: each element is an explicit uniform
  ``s.uniform()``: ideal on ``[0, 1)`` in the exact run (on ``{0, 1/N, ...}`` with
  ``--grid N``), on the format's generator grid under ``--arith`` (``j / 2**24`` for
  ``float32``).  Comparing an element with a threshold (``u < c``, ``u <= c``) is a branch of
  the engine whose weight is the length (or grid count) of the piece; nothing is sampled.
  Under ``--arith`` a uniform of another float dtype than the format's (``torch.rand(...,
  dtype=torch.float64)`` beside ``float32`` rows, as vLLM's second engine draws them) is on
  its own dtype's grid (``j / 2**53`` for ``float64``) and takes part in torch's promotion
  (compared with a ``float32`` ratio in ``float64``): :class:`GridUniform`.
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
- ``torch.log`` of explicit uniforms: ``log(u) = -E`` and ``log(1 - u) = -E'`` with
  ``E ~ Exp(1)``, so ``-torch.log(u)`` (or ``-torch.log(1 - u)``) is exponential noise, the
  uniforms of one ``log`` call one noise vector, racing as ``exponential_()`` noise does, and
  ``-torch.log(-torch.log(u))`` is Gumbel noise (``logits + G``).  Exact run with ideal
  uniforms only: on a grid (``--grid``, the exact run on the format's grid, ``--arith``)
  ``-log(u)`` takes finitely many values, and its law there is refused in one line with its
  size; a uniform compared before its log, or read after it, is refused (:func:`uniform_log`).
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
from ..engine.floats import FORMATS, FloatValue, exact_value
from ..engine.uniform import Uniform, UniformView
from . import dtypes as D
from .branched import Branched, LawIndex
from .context import current, refuse, undecided, user_line
from .tensor import OPS, Tensor, check_size
from .values import KEPT_BY_FLOAT_CAST, arith, cast, exact_number, is_nan, is_random

__all__ = ["Generator", "rand", "uniform_fill", "exponential_fill", "multinomial", "race_index",
           "NoiseValue", "RaceScore", "LogNoise", "GridUniform", "uniform_log",
           "check_not_noise"]


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


def _uniform(run, dtype):
    """One fresh uniform of ``dtype``: the sampler's (ideal, on ``--grid``, or on the format's
    generator grid under ``--arith``), or, under ``--arith`` for a dtype other than the run's
    format, a :class:`GridUniform` on that dtype's own generator grid."""
    if run.exact or dtype.name == run.fmt.name:
        return run.sampler.uniform()
    return GridUniform(run, FORMATS[dtype.name])


def rand(shape, dtype=None) -> Tensor:
    """A tensor of explicit uniforms (see the module's text)."""
    run = _sampler()
    dtype = dtype or D.default_dtype()
    _check_dtype(run, dtype)
    n = check_size(math.prod(shape), f"torch.rand({list(shape)})")
    return Tensor.new([_uniform(run, dtype) for _ in range(n)], shape, dtype)


def uniform_fill(t: Tensor, a=0, b=1) -> Tensor:
    """``t.uniform_(a, b)``: every element a fresh uniform, scaled to ``[a, b)``."""
    run = _sampler()
    _check_dtype(run, t.dtype)
    values = []
    for _ in range(t.numel()):
        u = _uniform(run, t.dtype)
        if (a, b) != (0, 1):
            import operator
            u = arith(operator.add, arith(operator.mul, u, cast(b - a, t.dtype)),
                      cast(a, t.dtype))
        values.append(u)
    t._write(t._own_positions(), values)
    return t


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

    __add__ = __radd__ = __sub__ = __rsub__ = _refuse

    def _against(self, c, op):
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


# -- uniforms of another dtype under --arith -------------------------------------------------
def _grid_text(n: int) -> str:
    return f"2**{n.bit_length() - 1}" if n & (n - 1) == 0 else f"{n:,}"


def _grid_power(n: int, m: int) -> str:
    """``n**m`` as text: ``(2**24)**3``, ``7**3``."""
    text = _grid_text(n)
    return f"({text})**{m}" if "**" in text else f"{text}**{m}"


class GridExpr:
    """``f(u)`` for a :class:`GridUniform` ``u``: ``f`` maps a grid value to a value of the
    format ``fmt`` (``None``: the value itself, in the uniform's own format); ``increasing``
    says its direction.  It widens exactly into a format that holds every value of its own
    (``float16`` into ``float32``, ``float32`` into ``float64``), as torch's promotion does
    before comparing it with a wider tensor; its arithmetic then rounds in the wider format."""

    __slots__ = ("u", "f", "increasing", "_efmt")

    def __init__(self, u, f, increasing: bool, fmt=None):
        self.u = u
        self.f = f
        self.increasing = increasing
        self._efmt = fmt

    @property
    def base(self):
        return self.u

    @property
    def fmt(self):
        return self._efmt if self._efmt is not None else self.u.fmt

    def _float_threshold(self):
        return None

    def widen(self, fmt) -> "GridExpr":
        """This value held in ``fmt``: itself in its own format, exactly in a wider one, and
        refused in one that would round it (torch rounds; the layer does not model that)."""
        own = self.fmt
        if fmt is own:
            return self
        if fmt.precision < own.precision or fmt.emin > own.emin or fmt.emax < own.emax:
            raise refuse(f"a {own.name} uniform used as {fmt.name}: the conversion rounds it, "
                         "which exactspec does not model for a uniform; draw the uniform in "
                         f"{fmt.name}, or compare it in {own.name} or a wider dtype")
        f = self.f
        return GridExpr(self.u, (lambda v: FloatValue(v.value, fmt)) if f is None else
                        (lambda v: FloatValue(f(v).value, fmt)), self.increasing, fmt)

    def _map(self, g, increasing: bool) -> "GridExpr":
        f = self.f
        return GridExpr(self.u, g if f is None else (lambda v: g(f(v))),
                        self.increasing == increasing, self._efmt)

    def _scalar(self, a) -> FloatValue:
        if is_random(a):
            raise undecided(f"a {self.u.fmt.name} uniform in arithmetic with another random "
                            "value is beyond the exact method")
        fmt = self.fmt
        if isinstance(a, FloatValue) and a.fmt is fmt:
            return a
        return cast(a, D.DTYPES[fmt.name])

    def __mul__(self, a):
        a = self._scalar(a)
        if not a.value > 0:
            raise undecided(f"a {self.u.fmt.name} uniform times a number that is not positive")
        return self._map(lambda v: v * a, True)

    __rmul__ = __mul__

    def __truediv__(self, a):
        a = self._scalar(a)
        if not a.value > 0:
            raise undecided(f"a {self.u.fmt.name} uniform divided by a number that is not "
                            "positive")
        return self._map(lambda v: v / a, True)

    def __rtruediv__(self, a):
        a = self._scalar(a)
        if not a.value > 0:
            raise undecided(f"a number that is not positive divided by a {self.u.fmt.name} "
                            "uniform")
        return self._map(lambda v: a / v, False)

    def __add__(self, b):
        b = self._scalar(b)
        return self._map(lambda v: v + b, True)

    __radd__ = __add__

    def __sub__(self, b):
        b = self._scalar(b)
        return self._map(lambda v: v - b, True)

    def __rsub__(self, b):
        b = self._scalar(b)
        return self._map(lambda v: b - v, False)

    def __neg__(self):
        return self._map(lambda v: -v, False)

    def _value(self, j: int):
        v = self.u.value_at(j)
        return exact_value(v if self.f is None else self.f(v))

    def _compare(self, c, strict: bool) -> bool:
        """``f(u) < c`` (``strict``) or ``f(u) <= c``, as a branch on the grid."""
        if is_random(c):
            raise undecided(f"a {self.u.fmt.name} uniform compared with another random value "
                            "is beyond the exact method")
        c = exact_number(c)
        if is_nan(c):
            return False
        u = self.u
        lo, hi = u.lo, u.hi

        def holds(j):
            x = self._value(j)
            if isinstance(x, float) and x != x:
                return False
            return x < c if strict else x <= c

        if self.f is None and not isinstance(c, float):      # u itself: the cut directly
            k = math.ceil(c * u.n) if strict else math.floor(c * u.n) + 1
            cut = min(max(k, lo), hi)
        else:                  # the first index in [lo, hi] at which ``holds`` flips
            a, b = lo, hi
            while a < b:
                mid = (a + b) // 2
                if holds(mid) == self.increasing:
                    a = mid + 1
                else:
                    b = mid
            cut = a
        return u.split(cut, self.increasing, f"{'<' if strict else '<='} {c}")

    def __lt__(self, c):
        return self._compare(c, True)

    def __le__(self, c):
        return self._compare(c, False)

    def __gt__(self, c):
        return not self._compare(c, False)

    def __ge__(self, c):
        return not self._compare(c, True)

    def __bool__(self):
        raise undecided(f"the truth value of a {self.u.fmt.name} uniform: compare it with a "
                        "threshold")

    def __float__(self):
        raise undecided(f"float() of a {self.u.fmt.name} uniform: compare it with a threshold")

    def __repr__(self):
        return f"f(u{self.u.ident}) in {self.u.fmt.name}"


class GridUniform(GridExpr):
    """A uniform of dtype ``fmt`` drawn in a float run of another format: ``torch.rand(...,
    dtype=torch.float64)`` beside ``float32`` rows under ``--arith float32`` (vLLM's second
    engine draws its uniforms so).  It is uniform on its own dtype's generator grid ``{j / N}``
    (``N = 2**53`` for ``float64``, ``2**24`` for ``float32``, as torch draws them; ``2**11``
    for ``float16`` and ``2**8`` for ``bfloat16``, the grids the engine takes for those formats
    under ``--arith``), whose points are values of ``fmt``.  The layer keeps the grid indices
    still possible, ``lo <= j < hi``; comparing a monotone rounded expression of it
    (:class:`GridExpr`: ``u``, ``u * c``, ``1 - u``, ... each operation rounded in ``fmt``) with
    a number is an exact branch of the engine whose weight is the share of those indices where
    the comparison holds (the cut found by bisection).  Any other use (it against another
    random value, its log) is refused."""

    __slots__ = ("run", "_fmt", "n", "lo", "hi", "ident")

    def __init__(self, run, fmt):
        super().__init__(self, None, True)
        self.run = run
        self._fmt = fmt
        self.n = fmt.grid
        self.lo, self.hi = 0, fmt.grid
        count = run.__dict__.get("grid_uniforms", 0) + 1
        run.grid_uniforms = count
        self.ident = count

    @property
    def fmt(self):
        return self._fmt

    def value_at(self, j: int) -> FloatValue:
        return FloatValue(float(Fraction(j, self.n)), self._fmt)

    def split(self, cut: int, increasing: bool, what: str) -> bool:
        """``True`` for the indices below ``cut`` (``increasing``) or from it on: an exact
        branch of the engine on the indices still possible."""
        lo, hi = self.lo, self.hi
        cut = min(max(cut, lo), hi)
        held = cut - lo if increasing else hi - cut
        if held == hi - lo:
            return True
        if held == 0:
            return False
        outcome = ExactSampler.coin(self.run.sampler, Fraction(held, hi - lo),
                                    f"u{self.ident} ({self._fmt.name}) {what}")
        if outcome == increasing:
            self.hi = cut
        else:
            self.lo = cut
        return outcome

    def __repr__(self):
        return (f"u{self.ident} ({self._fmt.name}) in [{self.lo}, {self.hi}) / "
                f"{_grid_text(self.n)}")


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
                     f"generator grid ({_grid_text(grid)} points each) under --arith: "
                     f"-log(u) on the grid is not Exp(1) noise, and its exact law there "
                     f"({_grid_power(grid, n)} grid points, each a rounded logarithm) is not "
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
                     f"{_grid_text(grid)} points (--grid, or the exact run on the format's "
                     f"grid): -log(u) on the grid is not Exp(1) noise, and its exact law there "
                     f"({_grid_power(grid, m)} grid points) is not computed; run with ideal "
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
           multinomial=multinomial, race_index=race_index, race_scores=race_scores,
           uniform_log=uniform_log, check_not_noise=check_not_noise)
KEPT_BY_FLOAT_CAST.update((NoiseValue, RaceScore))
