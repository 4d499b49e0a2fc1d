"""Python's and NumPy's random draws in a PyTorch rule, modelled through the engine.

An engine's sampler sometimes makes a random choice with Python's :mod:`random` or NumPy's
generators instead of torch's (``if random.random() <= ratio``).  While a PyTorch rule's run
is installed (:func:`~.module.installed`), the watch's refusing replacements
(:mod:`exactspec.engine.watch`) hand these calls to :func:`model`, which answers each one by
a draw that branches through the engine, as ``torch.rand`` does:

- ``random.random()``, NumPy's ``random()`` / ``random_sample()`` / ``rand()`` (module
  functions and ``np.random.default_rng(seed)``'s methods): one uniform, ideal in the exact
  run (the engine's uniform, on ``--grid N`` when given), under ``--arith`` on the float64
  grid ``j / 2**53`` that these generators draw from (a :class:`~.grid_uniforms.GridUniform` of
  ``float64`` beside rows of another format, the format's own grid under ``--arith
  float64``): the law of ``torch.rand(1, dtype=torch.float64)``.  NumPy's ``random(dtype=
  np.float32)`` is on ``j / 2**24``.
- ``random.uniform(a, b)`` and NumPy's ``uniform(low, high)``: ``a + (b - a) * u``, each
  operation as Python computes it (rounded in ``float64`` under ``--arith``; ``b - a``
  computed first, as both libraries do).
- ``random.choice(seq)`` and NumPy's ``choice(a)`` without ``p``: an index uniform on
  ``range(len(seq))``, exactly (both libraries draw it without bias); so are
  ``random.randrange``, ``random.randint``, NumPy's ``integers`` and ``np.random.randint``.
- ``random.choices(population, weights=None, k=1)`` (also ``cum_weights=``): Python's
  algorithm on the modelled uniform: without weights ``floor(u * n)``, with weights the
  bisection of ``u * total`` into the running sums, every comparison an exact branch (under
  ``--arith`` the rounded ``float64`` product compared, so the law is that of the float64
  grid, bias included).  NumPy's ``choice(a, p=p)``: its ``cumsum`` of ``p``, divided by
  the last sum, searched with the uniform (``side="right"``).
- ``random.Random(seed)`` (and ``np.random.default_rng(seed)``): accepted, seeded or not;
  its draws are modelled as independent of each other and of every other draw, as torch's
  generators are (a seeded stream is a fixed function of its seed).

Everything else stays refused (``random.gauss``, ``shuffle``, ``SystemRandom``, ``size=``
other than ``None``, ``np.random.Generator(...)``, the clock, ``os.urandom``, :mod:`secrets`,
:mod:`uuid`); in a rule of the sampling interface (``fn(s, p, q)``) every one of them is
refused as before, since every draw there goes through ``s``.
"""

from __future__ import annotations

from fractions import Fraction

from ..engine.exact import ExactSampler
from ..engine.watch import NOT_MODELLED
from . import dtypes as D
from . import random as _rnd
from .context import current, refuse
from .values import exact_number

__all__ = ["model", "ModelledGenerator", "MODELLED"]

#: The calls answered by a draw of the engine (everything else is refused).
MODELLED = ("random.random", "random.uniform", "random.choice", "random.choices",
            "random.randint", "random.randrange",
            "random.Random.__init__", "random.Random.seed", "random.Random.random",
            "random.Random.uniform", "random.Random.choice", "random.Random.choices",
            "random.Random.randint", "random.Random.randrange",
            "numpy.random.default_rng", "numpy.random.random", "numpy.random.random_sample",
            "numpy.random.rand", "numpy.random.uniform", "numpy.random.choice",
            "numpy.random.randint")


def _run():
    run = current()
    return run if run.sampler is not None else None


def _uniform(dtype=D.float64):
    """One fresh uniform of ``dtype``, as ``torch.rand((), dtype=dtype)`` draws it: a 0-dim
    tensor, which takes part in torch's promotion as the Python float it stands for does (a
    wrapped number and a 0-dim tensor both leave a dimensioned tensor's dtype as it is)."""
    from .tensor import Tensor

    return Tensor.new([_rnd.fresh_uniform(_rnd.drawing_run(), dtype)], (), dtype)


def _index(n: int, what: str) -> int:
    """An index uniform on ``range(n)``: an exact draw of the engine."""
    from ..core.dist import Dist

    if n <= 0:
        raise IndexError("Cannot choose from an empty sequence")
    run = _rnd.drawing_run()
    if n == 1:
        return 0
    dist = Dist([Fraction(1, n)] * n, list(range(n)), check=False)
    draw = ExactSampler.draw if isinstance(run.sampler, ExactSampler) else \
        type(run.sampler).draw
    return draw(run.sampler, dist, what=what)


def _no_size(name: str, size) -> None:
    if size is not None:
        raise refuse(f"{name}(size={size!r}): one draw per call is modelled in a PyTorch "
                     "rule; call it once per draw (or draw a tensor with torch.rand)")


def _numbers(name: str, values) -> list:
    from .tensor import Tensor

    if isinstance(values, Tensor):
        raise refuse(f"{name} with a tensor of weights: Python would add them as tensors; "
                     "pass numbers (t.tolist())")
    return list(values)


def _bisect_right(cum, x, hi: int) -> int:
    """``bisect.bisect_right(cum, x, 0, hi)`` as CPython computes it (``x < cum[mid]``)."""
    lo = 0
    while lo < hi:
        mid = (lo + hi) // 2
        if x < cum[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _choices(population, weights=None, *, cum_weights=None, k=1):
    """``random.choices`` (CPython's algorithm, on the modelled uniform)."""
    n = len(population)
    if cum_weights is None:
        if weights is None:
            out = []
            for _ in range(k):
                x = _uniform() * (n + 0.0)
                out.append(population[_bisect_right(range(1, n + 1), x, n - 1)])
            return out
        cum_weights, total = [], None
        for w in _numbers("random.choices", weights):
            total = w if total is None else total + w
            cum_weights.append(total)
    elif weights is not None:
        raise TypeError("Cannot specify both weights and cumulative weights")
    else:
        cum_weights = _numbers("random.choices", cum_weights)
    if len(cum_weights) != n:
        raise ValueError("The number of weights does not match the population")
    total = cum_weights[-1] + 0.0
    if total <= 0.0:
        raise ValueError("Total of weights must be greater than zero")
    return [population[_bisect_right(cum_weights, _uniform() * total, n - 1)]
            for _ in range(k)]


def _integer_in(name: str, values: range) -> int:
    """An integer uniform on ``values``, exactly (``randrange``, ``randint``, NumPy's
    ``integers``: each draws it without bias)."""
    if len(values) == 0:
        raise ValueError(f"empty range in {name}")
    return values[_index(len(values), name)]


def _randrange(start, stop=None, step=1):
    if stop is None:
        start, stop = 0, start
    for v in (start, stop, step):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"randrange takes integers, not {type(v).__name__}")
    return _integer_in("randrange", range(start, stop, step))


def _numpy_integers(name: str, low, high=None, size=None, dtype=None, endpoint=False):
    _no_size(name, size)
    if high is None:
        low, high = 0, low
    low, high = int(low), int(high)
    return _integer_in(name, range(low, high + 1 if endpoint else high))


def _uniform_between(a, b, dtype=D.float64):
    """``a + (b - a) * u``, as Python's ``random.uniform`` and NumPy's ``uniform`` compute it."""
    from .tensor import Tensor

    if isinstance(a, Tensor) or isinstance(b, Tensor):
        raise refuse("random.uniform / numpy uniform with tensor bounds: pass numbers "
                     "(t.item())")
    return a + (b - a) * _uniform(dtype)


def _numpy_choice(name: str, a, size=None, replace=True, p=None, **kwargs):
    """NumPy's ``choice(a, p=p)`` (one draw): an exact uniform index without ``p``; with it,
    the index of the uniform in ``cumsum(p) / cumsum(p)[-1]`` (``searchsorted``, right)."""
    from .tensor import Tensor

    _no_size(name, size)
    if kwargs.get("axis", 0) != 0:
        raise refuse(f"{name}(axis=...) is outside the modelled draws")
    population = range(int(a)) if isinstance(a, int) and not isinstance(a, bool) else a
    n = len(population)
    if n == 0:
        raise ValueError("a cannot be empty unless no samples are taken")
    if p is None:
        return population[_index(n, name)]
    weights = p.tolist() if isinstance(p, Tensor) else list(p)
    if len(weights) != n:
        raise ValueError("a and p must have same size")
    if any(w < 0 for w in weights):
        raise ValueError("probabilities are not non-negative")
    cdf, total = [], None
    for w in weights:
        total = w if total is None else total + w
        cdf.append(total)
    if abs(exact_number(total) - 1) > Fraction(1, 2**26):
        raise ValueError("probabilities do not sum to 1")
    last = cdf[-1]
    cdf = [c / last for c in cdf]
    return population[_bisect_right(cdf, _uniform(), n)]


class ModelledGenerator:
    """``np.random.default_rng(seed)`` in a PyTorch rule: ``random``, ``uniform`` and
    ``choice`` draw through the engine (see the module's text); the seed is accepted and every
    draw is modelled as independent."""

    def __init__(self, seed=None):
        self.seed = seed

    def random(self, size=None, dtype=None, out=None):
        _no_size("Generator.random", size)
        if out is not None:
            raise refuse("Generator.random(out=...) is outside the modelled draws")
        name = getattr(dtype, "__name__", str(dtype)) if dtype is not None else "float64"
        if name not in ("float64", "float32", "double", "single", "d", "f"):
            raise refuse(f"Generator.random(dtype={dtype!r}): float64 or float32")
        return _uniform(D.float32 if name in ("float32", "single", "f") else D.float64)

    def uniform(self, low=0.0, high=1.0, size=None):
        _no_size("Generator.uniform", size)
        return _uniform_between(low, high)

    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True):
        return _numpy_choice("Generator.choice", a, size, replace, p, axis=axis)

    def integers(self, low, high=None, size=None, dtype=None, endpoint=False):
        return _numpy_integers("Generator.integers", low, high, size, dtype, endpoint)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise refuse(f"Generator.{name} is outside the draws modelled in a PyTorch rule "
                     "(random, uniform, choice, integers)")

    def __repr__(self):
        return f"Generator(modelled, seed={self.seed!r})"


def _self_args(args):
    return args[1:]           # a method of random.Random: drop the instance


def model(name: str, args: tuple, kwargs: dict):
    """The answer to the refused call ``name(*args, **kwargs)`` in a PyTorch rule's run, or
    :data:`~exactspec.engine.watch.NOT_MODELLED` (see the module's text)."""
    if _run() is None:
        return NOT_MODELLED
    if name not in MODELLED:
        if not name.startswith(("random.", "numpy.random.")):
            return NOT_MODELLED            # the clock, os.urandom, secrets, uuid: refused
        from ..engine.watch import HiddenRandomness
        from .context import user_line

        err = HiddenRandomness(
            f"the method called {name} ({user_line()}): in a PyTorch rule exactspec models "
            "Python's and NumPy's uniforms (random.random, uniform, choice, choices, "
            "randint, randrange, a random.Random's and a NumPy Generator's random, uniform, "
            "choice, integers), not this "
            "call; draw with torch (torch.rand, torch.multinomial, exponential_)")
        err.located = True
        raise err
    if name.startswith("random.Random."):
        method = name.rpartition(".")[2]
        if method in ("__init__", "seed"):
            return None                        # accepted: the draws are modelled apart
        name, args = f"random.{method}", _self_args(args)
    if name == "random.random":
        if args or kwargs:
            raise TypeError("random() takes no arguments")
        return _uniform()
    if name == "random.uniform":
        return _uniform_between(*args, **kwargs)
    if name == "random.choice":
        (seq,) = args
        return seq[_index(len(seq), "random.choice")]
    if name == "random.choices":
        return _choices(*args, **kwargs)
    if name == "random.randrange":
        return _randrange(*args, **kwargs)
    if name == "random.randint":
        a, b = args
        return _randrange(a, b + 1)
    if name == "numpy.random.randint":
        return _numpy_integers(name, *args, **kwargs)
    if name == "numpy.random.default_rng":
        return ModelledGenerator(*args, **kwargs)
    if name == "numpy.random.rand":
        if args:
            raise refuse("numpy.random.rand(d0, ...): one draw per call is modelled in a "
                         "PyTorch rule; call it without dimensions")
        return _uniform()
    if name in ("numpy.random.random", "numpy.random.random_sample"):
        size = args[0] if args else kwargs.get("size")
        _no_size(name, size)
        return _uniform()
    if name == "numpy.random.uniform":
        low, high, size = (list(args) + [0.0, 1.0, None][len(args):])[:3]
        low, high = kwargs.get("low", low), kwargs.get("high", high)
        _no_size(name, kwargs.get("size", size))
        return _uniform_between(low, high)
    return _numpy_choice(name, *args, **kwargs)            # numpy.random.choice
