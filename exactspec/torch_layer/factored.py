"""Multi-position PyTorch rules with every draft position as its own tensor axis.

A multi-position PyTorch rule (``verify FILE:fn --tokens M``) draws ``M - 1`` drafts
``x_1 .. x_{M-1}``, one per draft row, with ``torch.multinomial(q, 1)``.  Path enumeration runs
the body once per combination of drafts (about ``|V|^(M-1)`` runs).  Here the body runs once
per path of the *other* random choices, with draft ``x_i`` kept as its own axis ``i``: a
:class:`~exactspec.torch_layer.branched.Branched` value of axis ``i`` (its value on every
branch of ``x_i``), computed branch by branch by the same scalar operation the path run applies.

- A comparison of a fresh uniform with a threshold of axis ``i`` (``u < c[x_i]``, and
  ``u * a[x_i] < c[x_i]`` as kernels write it without a division) is one branch point of the
  engine whose outcomes carry a weight vector on axis ``i``: ``P(u < c[x])`` per branch ``x``
  and its complement.  The uniform may be read again only by an inverse-CDF lookup (below);
  any other reuse falls back.
- An inverse-CDF lookup of a fresh uniform against plain thresholds (``(cdf <= u * total)
  .sum()``, or ``argmax(cdf > u * total)`` where the last threshold is the total) is kept as
  the law of its count (:class:`~.factored_sampler.LazyCount`), not split
  into ``|V|`` paths.  Looked up after a comparison on axis ``i`` (the recovered token drawn
  with the uniform that rejected), the count's law depends on ``x_i``: its vector is summed
  over axis ``i`` exactly (:func:`_split_count_factor`), the axis then used by that token.
- A weight of the path is therefore a number times one weight vector per axis, and the
  control state (which positions were accepted, what was written where) is a plain value.
- Each emitted token is a plain index, a value of one axis (the draft itself or a function of
  it), or a token drawn once with a known law (:class:`~exactspec.torch_layer.branched.
  LawIndex`: ``torch.multinomial`` of plain weights, an exponential race on fresh noise).  When
  no two emitted tokens come from the same axis or the same draw, the path's law of the emitted
  tokens is a product measure, one vector per token: a *rank-one* term ``(coef, (f_1, ..,
  f_j))`` (:mod:`exactspec.core.rank_one`), and the call's law is the sum of its paths' terms.

An operation that mixes two axes, a branched value deciding Python control flow, a uniform
compared on two axes (one uniform shared by every position), two emitted tokens of one axis: :class:`~exactspec.
core.signals.CannotProceed`, and the caller enumerates paths instead.

Each of the three runs of ``--arith`` takes this route: exact arithmetic with ideal uniforms
(above), exact arithmetic on a grid (a comparison on axis ``i`` holds with the grid count
below the threshold on each branch, the path run's rule; a lazy count's comparisons are cut
at grid points of the uniform itself), and the float run
(:class:`~.factored_float.FactoredFloatSampler`: the rows and every operation in the format,
the format's generator grid, the comparisons cut where the path run's rounded comparisons
flip).

The route is written in three modules: the exact interpreter (:mod:`.factored_sampler`), its
float run (:mod:`.factored_float`), and here the call's law summed from the paths
(:func:`factored_call_law`); the interpreters' names are importable from here as well.

>>> from exactspec.core.dist import Dist
>>> from exactspec.torch_layer.rule import load_pytorch_rule
>>> rule = load_pytorch_rule("examples/engines/flashinfer_chain.py:chain")
>>> law = factored_call_law(rule, Dist("1/2,1/2"), Dist("1/4,3/4"), 2)
>>> law.paths, law.axes, sorted(len(f) for _, f in law.terms)
(4, 2, [1, 1, 2, 3])
"""

from __future__ import annotations

import contextlib
import time
from fractions import Fraction

from ..core import deadline
from ..core.errors import ExactspecError, TooLarge
from ..core.integer_rows import exact_sum, reduced_fraction
from ..core.rank_one import mass
from ..core.signals import CannotProceed
from ..engine.driver import depth_first
from ..engine.forked_paths import ForkedPaths
from ..engine.floats import FloatValue, get_format
from . import dtypes as D
from .branched import Branched, LawIndex
from .context import Run
from .factored_float import FactoredFloatSampler
from .factored_sampler import AxisUniform, FactoredSampler, LazyCount  # noqa: F401
from .module import installed
from .tensor import MAX_ELEMENTS, Tensor

#: The call's law is defined here; the interpreters (importable from here) are documented in
#: :mod:`.factored_sampler` and :mod:`.factored_float`.
__all__ = ["CallLaw", "factored_call_law", "call_paths_estimate"]


class CallLaw:
    """The law of one call of a multi-position rule as a sum of rank-one terms.

    Attributes
    ----------
    terms : list
        ``(coef, factors)`` per engine path (zero terms left out), one factor per emitted
        token (:mod:`exactspec.core.rank_one`).
    paths : int
        Engine paths run (the draft axes vectorised, not counted as paths).
    axes : int
        Draft axes of the call.
    seconds : float
        CPU seconds.
    """

    def __init__(self, terms, paths, axes, seconds, n):
        self.terms, self.paths, self.axes, self.seconds, self.n = terms, paths, axes, seconds, n


def _as_vector(values) -> list:
    return [Fraction(v) if type(v) is not Fraction else v for v in values]


def _packed(vector):
    """A vector of ``Fraction``s as a list of its numerators and denominators (pickled as
    ints, not as texts); any other vector (a tuple) as it is."""
    if all(type(v) is Fraction for v in vector):
        return [[v.numerator for v in vector], [v.denominator for v in vector]]
    return vector


def _unpacked(packed):
    if type(packed) is list:
        return tuple(map(reduced_fraction, *packed))
    return packed


def factored_call_law(rule, target, draft, gamma: int, *, max_paths: int | None = None,
                      arith=None, grid: int | None = None, sum_order: str | None = None,
                      first_path=None, fork_after: float | None = None) -> CallLaw:
    """The law of one call of the PyTorch ``rule`` handed ``gamma + 1`` target rows
    ``target`` and ``gamma`` draft rows ``draft`` (exact :class:`~exactspec.core.dist.Dist`
    rows, the same at every position), every draft an axis; a rule that does something this
    route does not track raises :class:`~exactspec.core.signals.CannotProceed` (a refusal
    met here is raised as it is; the planner then takes the path route, which gives the
    refusal its words).  More than
    ``max_paths`` engine paths is refused (:class:`TooLarge`).

    In exact arithmetic the uniforms are ideal, or on ``grid``; with ``arith`` (a float
    format) the float run (:class:`FactoredFloatSampler`): the rows rounded into the format
    and held in a tensor of its dtype, every operation rounded, the uniforms on the format's
    generator grid unless ``grid`` says otherwise, long float sums in ``sum_order``; the
    drafts follow the exact draft row.

    ``first_path``, when given, watches the size of the walk: its ``deadline()`` (a
    :class:`~exactspec.core.deadline.Deadline`, or ``None``) is open until the first engine
    path ends, and ``first_path(arities, least, seconds)`` is then called with the product
    of the arities of the choices along that path (Knuth's estimate of the paths from that
    one path), the paths there are at least (that one and one for each option it did not
    take), its seconds and ``forks``, before any other path runs (it may raise).  ``forks``
    is ``None``, or, where the walk forks (:mod:`~exactspec.engine.forked_paths`: the start
    its paths share run once, from ``fork_after`` seconds of the first path before its first
    choice, default :data:`~exactspec.engine.forked_paths.FORK_AFTER_SECONDS`), the mean
    seconds of a copy's path (the part of the first path after the copy's choice), and
    ``probe`` then counts the paths by random paths of the copies
    (:meth:`~exactspec.engine.forked_paths.ForkedPaths.probe`), else ``None``."""
    start = time.process_time()
    make, body, n = _call_run(rule, target, draft, gamma, arith, grid, sum_order)
    s = make()
    terms: list = []

    def leaf(s, tokens):
        axes[0] = max(axes[0], len(s.axes))
        term = _term(s, tokens, n, rows)
        if term is not None:
            terms.append(term)

    def every(paths):
        if paths == 1 and first_path is not None:
            if watch is not None:
                watch.close()
            product, pending = 1, 0
            for arity in s._arity:
                product *= arity
                pending += arity - 1
            first = deadline.clock() - began
            first_path(product, 1 + pending, first, forks=forked.copy_seconds(first),
                       probe=forked.probe if forked.active else None)
        if max_paths is not None and paths > max_paths:
            raise TooLarge(f"the factored run of {rule.spec} passed {max_paths:,} engine "
                           "paths (its draft axes vectorised): over the budget; "
                           "--max-paths N to insist", estimate=paths, budget=max_paths)

    def collect():                   # a forked copy's terms, the vectors as integer rows
        return axes[0], [(coef, tuple(_packed(f) for f in factors)) for coef, factors in terms]

    def merge(data):
        axes[0] = max(axes[0], data[0])
        terms.extend((coef, tuple(_unpacked(f) for f in factors)) for coef, factors in data[1])

    axes = [0]
    rows: dict = {id(draft): (draft, _as_vector(draft.probs))}   # the draft row, exact
    forked = ForkedPaths(collect, merge, after_seconds=fork_after)
    watch = None if first_path is None else first_path.deadline()
    began = deadline.clock()
    with watch if watch is not None else contextlib.nullcontext():
        paths = depth_first(s, body, leaf, finish=lambda s: s.finish(),
                            differs=lambda s: CannotProceed("a replay that differs"),
                            every=every, forked=forked)
    axes = axes[0]
    total = exact_sum([mass(t) for t in terms])
    if total != 1:
        raise CannotProceed(f"a call law whose mass is {total}, not 1")
    seconds = time.process_time() - start + forked.copies_seconds     # the copies' CPU too
    return CallLaw(terms, paths, axes, seconds, n)


def call_paths_estimate(rule, target, draft, gamma: int, *, arith=None,
                        grid: int | None = None, sum_order: str | None = None,
                        max_paths: int | None = None, max_seconds: float | None = None
                        ) -> tuple[int, float]:
    """``(paths, seconds)``: the estimated number of engine paths of
    :func:`factored_call_law` with the same arguments, and the median seconds of one, by
    random engine paths (:func:`~exactspec.engine.path_estimate.estimate_paths`: Knuth's
    probes, as many as fit in a tenth of the walk's budget, at least one; not refined level
    by level, which would run the rule once per node kept)."""
    from ..engine.path_estimate import estimate_paths

    make, body, _ = _call_run(rule, target, draft, gamma, arith, grid, sum_order)
    timing: list = []
    paths = estimate_paths(lambda s, p, q, k: body(s), target, draft, gamma,
                           sampler_factory=make, timing=timing, max_paths=max_paths,
                           max_seconds=max_seconds, thorough=False)
    return paths, timing[0]


def _call_run(rule, target, draft, gamma: int, arith, grid, sum_order):
    """``(make, body, n)``: the sampler of one call's engine paths (a maker of fresh ones),
    the body that runs the rule once along a path and returns its emitted tokens, and the
    vocabulary size."""
    if any(type(v) is not Fraction for v in list(target.probs) + list(draft.probs)):
        if any(not isinstance(v, (int, Fraction)) for v in list(target.probs) +
               list(draft.probs)):
            raise CannotProceed("rows that are not exact rationals")
    p = _as_vector(target.probs)
    q = _as_vector(draft.probs)
    n = len(p)
    if (gamma + 1) * n > MAX_ELEMENTS:              # refused before the rows are made
        raise TooLarge(f"{gamma + 1:,} tokens of {n:,}: the rule's target rows would be a "
                       f"tensor of {(gamma + 1) * n:,} elements, over the tensor layer's "
                       f"budget of {MAX_ELEMENTS:,} (2**24): a smaller --tokens",
                       estimate=(gamma + 1) * n, budget=MAX_ELEMENTS)
    if arith is None:
        fmt, dtype = None, D.float64
        p_held, q_held = p, q

        def make():
            return FactoredSampler(n, grid)
    else:
        fmt = get_format(arith)
        dtype = D.DTYPES[fmt.name]
        p_held = [FloatValue(fmt.round(v), fmt) for v in p]
        q_held = [FloatValue(fmt.round(v), fmt) for v in q]

        def make():
            return FactoredFloatSampler(n, fmt, grid, sum_order)

    def body(s):
        run = Run(s, fmt)
        with installed(run):
            p_rows = Tensor.new(p_held * (gamma + 1), (gamma + 1, n), dtype)
            q_rows = Tensor.new(q_held * gamma, (gamma, n), dtype)
            run.draft = (q_rows, q_rows._st.version, draft)
            try:
                result = rule.function(p_rows, q_rows)
            except (CannotProceed, ExactspecError):
                raise
            except Exception as err:
                raise CannotProceed(f"{type(err).__name__}: {err}") from None
            return _emitted(result, n, gamma)

    return make, body, n


def _emitted(result, n: int, gamma: int) -> list:
    """The emitted tokens of one path: plain indices, axis values, law tokens."""
    if isinstance(result, Tensor):
        if result.ndim > 1 or result.dtype.kind != "int":
            raise CannotProceed("a result that is not a 1-D integer tensor")
        result = result._values()
    if not isinstance(result, (list, tuple)):
        raise CannotProceed("a result that is not a list of tokens")
    out = []
    counted: set = set()
    for t in result:
        if isinstance(t, Tensor):
            if t.numel() != 1 or t.dtype.kind != "int":
                raise CannotProceed("a token that is not one integer")
            t = t._values()[0]
        if type(t) is int:
            if not 0 <= t < n:
                raise CannotProceed("a token out of range")
        elif type(t) is Branched:
            if any(type(v) is not int or not 0 <= v < n for v in t.values):
                raise CannotProceed("a branched token that is not an index on every branch")
        elif isinstance(t, LazyCount):
            if t.view.base.ident in counted:
                raise CannotProceed("one lazy count emitted twice")
            counted.add(t.view.base.ident)
            if t.view.base.ident in t.sampler._axis_split:    # depends on the split's axis
                out.append(t)
                continue
            law = t.law()
            if any(type(k) is not int or not 0 <= k < n for k in law):
                raise CannotProceed("a lazy count that is not an index")
            probs = [Fraction(0)] * n
            for k, w in law.items():
                probs[k] = w
            t = LawIndex(probs, f"inverse-CDF u{t.view.base.ident}")
        elif type(t) is not LawIndex:
            raise CannotProceed("a result that is not a token")
        else:
            t = t.over(n)
        out.append(t)
    if not out or len(out) > gamma + 1:
        raise CannotProceed("a number of tokens outside 1..gamma + 1")
    return out


def _term(s: FactoredSampler, tokens: list, n: int, rows: dict):
    """The path's law of its emitted tokens, one vector per token (``None``: weight 0);
    ``rows`` keeps each draft row's exact vector (by identity of its Dist)."""
    weight = s.weight
    coef = weight.scalar
    masses = {}
    for axis, (_, q) in enumerate(s.axes):
        w = weight.axes.get(axis)
        hit = rows.get(id(q))
        if hit is None or hit[0] is not q:
            hit = rows[id(q)] = (q, _as_vector(q.probs))
        qs = hit[1]
        masses[axis] = qs if w is None else [a * b for a, b in zip(qs, w)]
    for axis in weight.axes:
        if axis not in masses:
            raise CannotProceed("a weight on an axis that was not drafted")
    used_axes: set = set()
    used_laws: list = []
    factors = []
    for t in tokens:
        if type(t) is int:
            f = [Fraction(0)] * n
            f[t] = Fraction(1)
        elif isinstance(t, LazyCount):          # a count of a uniform split on an axis
            axis, below, outcome = s._axis_split[t.view.base.ident]
            if axis in used_axes:
                raise CannotProceed("two emitted tokens of one draft axis")
            used_axes.add(axis)
            f = _split_count_factor(t.intervals(), masses[axis], below, outcome, n)
        elif type(t) is LawIndex:
            if any(t is other or t.race is not None and other.race is not None and
                   t.race[0] is other.race[0] for other in used_laws):
                raise CannotProceed("one drawn token emitted twice, or two winners of races "
                                    "on one noise vector")
            used_laws.append(t)
            f = _as_vector(t.probs)
        else:
            if t.axis in used_axes:
                raise CannotProceed("two emitted tokens of one draft axis")
            used_axes.add(t.axis)
            m = masses[t.axis]
            if t.values == list(range(n)):
                f = m
            else:
                f = [Fraction(0)] * n
                for x, v in enumerate(t.values):
                    f[v] += m[x]
        factors.append(tuple(f))
    for axis, m in masses.items():
        if axis not in used_axes:
            coef *= exact_sum(m)
    if coef == 0 or any(not any(f) for f in factors):
        return None
    return coef, tuple(factors)


def _split_count_factor(pieces, m, below, outcome: bool, n: int) -> list:
    """The law of a lazy count of a uniform ``u`` split on an axis, the axis summed out:
    ``f[k] = sum_x c_x |I_x  n  J_k|``, ``J_k`` the pieces of ``[0, 1)`` giving count ``k``,
    ``I_x = [0, b_x)`` (``u < c[x]`` held) or ``[b_x, 1)`` (it did not), ``b_x = P(u < c[x])``,
    ``c_x = m[x] / |I_x|`` (``m`` the axis's mass, which holds ``|I_x|`` as a factor), by
    prefix sums over the ``b_x`` sorted."""
    import bisect

    pts = []
    for mx, b in zip(m, below):
        size = b if outcome else 1 - b
        if mx and size:
            pts.append((b, mx / size))
    pts.sort(key=lambda e: e[0])
    ts = [b for b, _ in pts]
    s0 = [Fraction(0)]
    s1 = [Fraction(0)]
    for b, c in pts:
        s0.append(s0[-1] + c)
        s1.append(s1[-1] + c * b)
    total0 = s0[-1]
    f = [Fraction(0)] * n
    for lo, hi, k in pieces:
        i_lo = bisect.bisect_right(ts, lo)       # b_x <= lo
        i_hi = bisect.bisect_left(ts, hi)        # b_x < hi
        mid0, mid1 = s0[i_hi] - s0[i_lo], s1[i_hi] - s1[i_lo]
        if outcome:      # I_x = [0, b_x): all of J_k when b_x >= hi, [lo, b_x) when inside
            v = (total0 - s0[i_hi]) * (hi - lo) + (mid1 - mid0 * lo)
        else:            # I_x = [b_x, 1): all of J_k when b_x <= lo, [b_x, hi) when inside
            v = s0[i_lo] * (hi - lo) + (mid0 * hi - mid1)
        if v:
            if type(k) is not int or not 0 <= k < n:
                raise CannotProceed("a lazy count that is not an index")
            f[k] += v
    return f
