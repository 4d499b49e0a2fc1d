"""Random constructors that branch through the engine's sampler.

- ``torch.rand``, ``rand_like``, ``empty(...).uniform_()``: each element is an explicit uniform
  ``s.uniform()``: ideal on ``[0, 1)`` in the exact run (on ``{0, 1/N, ...}`` with
  ``--grid N``), on the format's generator grid under ``--arith`` (``j / 2**24`` for
  ``float32``).  Comparing an element with a threshold (``u < c``, ``u <= c``) is a branch of
  the engine whose weight is the length (or grid count) of the piece; nothing is sampled.
  Under ``--arith`` a uniform of another float dtype than the format's (``torch.rand(...,
  dtype=torch.float64)`` beside ``float32`` rows, as vLLM's second engine draws them) is on
  its own dtype's grid (``j / 2**53`` for ``float64``) and takes part in torch's promotion
  (compared with a ``float32`` ratio in ``float64``):
  :class:`~.grid_uniforms.GridUniform`.
- ``exponential_()``: the tensor becomes one noise vector ``s.exponentials(n)``, decided by
  ``argmax``/``argmin`` as an exponential race; ``torch.log`` of explicit uniforms is
  exponential noise too (:mod:`.noise`).
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

The random constructors are here; the values they make are written beside them: exponential
noise and its races (:mod:`.noise`), uniforms of another dtype on their own grid
(:mod:`.grid_uniforms`).  The names of those two are importable from here as well.
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..core.dist import Dist
from ..engine.exact import ExactSampler
from ..engine.floats import FORMATS
from . import dtypes as D
from .branched import Branched
from .context import current, refuse, undecided, user_line
from .grid_uniforms import GridExpr, GridUniform  # noqa: F401  (importable from here)
from .noise import (LogNoise, NoiseValue, RaceScore, check_not_noise,  # noqa: F401
                    race_index, race_scores, uniform_log)
from .tensor import OPS, Tensor, check_size
from .values import arith, cast, exact_number, is_nan, is_random

#: The names defined here; those of the noise and of the grid uniforms (importable from here)
#: are documented in :mod:`.noise` and :mod:`.grid_uniforms`.
__all__ = ["Generator", "rand", "uniform_fill", "exponential_fill", "multinomial",
           "MAX_DRAWS", "drawing_run", "fresh_uniform"]


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


#: The most random constructor calls (``rand``, ``uniform_``, ``exponential_``, ``multinomial``) one
#: run of a rule may make: a loop drawing without branching (``while True: if torch.rand(1) <
#: 2: ...``) is refused instead of running forever
MAX_DRAWS = 10_000


def drawing_run():
    """The current run, for a random constructor called in it: its call counted against
    :data:`MAX_DRAWS` (refused outside a rule's run)."""
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


def fresh_uniform(run, dtype):
    """One fresh uniform of ``dtype``: the sampler's (ideal, on ``--grid``, or on the format's
    generator grid under ``--arith``), or, under ``--arith`` for a dtype other than the run's
    format, a :class:`~.grid_uniforms.GridUniform` on that dtype's own generator grid."""
    if run.exact or dtype.name == run.fmt.name:
        return run.sampler.uniform()
    return GridUniform(run, FORMATS[dtype.name])


def rand(shape, dtype=None) -> Tensor:
    """A tensor of explicit uniforms (see the module's text)."""
    run = drawing_run()
    dtype = dtype or D.default_dtype()
    _check_dtype(run, dtype)
    n = check_size(math.prod(shape), f"torch.rand({list(shape)})")
    return Tensor.new([fresh_uniform(run, dtype) for _ in range(n)], shape, dtype)


def uniform_fill(t: Tensor, a=0, b=1) -> Tensor:
    """``t.uniform_(a, b)``: every element a fresh uniform, scaled to ``[a, b)``."""
    run = drawing_run()
    _check_dtype(run, t.dtype)
    values = []
    for _ in range(t.numel()):
        u = fresh_uniform(run, t.dtype)
        if (a, b) != (0, 1):
            import operator
            u = arith(operator.add, arith(operator.mul, u, cast(b - a, t.dtype)),
                      cast(a, t.dtype))
        values.append(u)
    t._write(t._own_positions(), values)
    return t

def exponential_fill(t: Tensor, lambd=1) -> Tensor:
    """``t.exponential_(lambd)``: ``t`` becomes one noise vector of ``Exp(lambd)`` values."""
    run = drawing_run()
    if t.dtype.kind != "float":
        raise refuse("exponential_ of a non-float tensor")
    n = t.numel()
    noise = run.sampler.exponentials(n)
    scale = 1 / Fraction(exact_number(lambd))
    t._write(t._own_positions(), [NoiseValue(noise, i, scale) for i in range(n)])
    return t


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
    run = drawing_run()
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
           multinomial=multinomial)
