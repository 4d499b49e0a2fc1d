"""A PyTorch rule: ``fn(p, q)`` in a file that does ``import torch``, run by the engine.

A function of two parameters (the target and draft rows, no sampler parameter) in a file that
imports torch is a PyTorch rule.  :func:`load_pytorch_rule` imports the file freshly with
``torch`` resolving to the layer (:mod:`exactspec.torch_layer.module`) and returns a :class:`PyTorchRule`, a method
``run(s, p, q, k)`` of the engine's sampling interface: each run builds ``p`` and ``q`` as 1-D
tensors (``float64`` holding the exact values, or the ``--arith`` dtype holding the rounded
ones), calls the function under the layer with the random constructors branching through
``s``, and reads the emitted token index (a Python int or a one-element integer tensor).

A multi-position PyTorch rule (``verify FILE:fn --p P --q Q --tokens M``) is the same kind of
function on 2-D rows: :func:`exactspec.sequences.torch_rules.pytorch_whole_call` hands ``fn`` the target rows ``p`` of shape
``[M, V]`` and the draft rows ``q`` of shape ``[M - 1, V]`` (``M - 1`` draft positions, so
that one call can emit all ``M`` tokens; every row is the context-free pair's row), and reads
the emitted tokens (a 1-D integer tensor or a list of ints): :meth:`PyTorchRule.call_rows`.
``torch.multinomial(q, 1)`` on the draft rows (or on row ``i``) draws the drafts of those
positions; :mod:`exactspec.sequences.torch_rules` proves the call as a whole call, exact or
under ``--arith``.
"""

from __future__ import annotations

import inspect
import time
from fractions import Fraction
from pathlib import Path

from ..core.errors import ExactspecError, InvalidInput
from ..core.signals import CannotProceed, user_code
from ..core.user_code import import_user_file, user_function, user_line
from ..engine.driver import depth_first
from ..core.integer_rows import exact_sum, fraction_of, fractions_over, integer_row
from ..engine.exact import gc_paused
from ..engine.float_sampler import FloatSampler
from . import dtypes as D
from .context import Run
from .detect import imports_torch
from .module import installed
from .tensor import Tensor, TieOrder
from .values import cast

__all__ = ["PyTorchRule", "load_pytorch_rule"]


def _enumeration(p, law: list, acceptance, paths: int, start: float, floats: int,
                 seconds: float | None = None):
    """The :class:`~exactspec.engine.exact.Enumeration` of a vectorised run (its draft axis
    ``len(p)`` tokens, its ``seconds``, else those since ``start``); a law that does not sum
    to 1 is a run the route does not follow
    (:class:`~exactspec.core.signals.CannotProceed`)."""
    from ..engine.exact import Enumeration

    total = exact_sum(law)
    if total != 1:
        raise CannotProceed(f"a law whose mass is {total}, not 1")
    labels = tuple(p.labels)
    return Enumeration(labels=labels, law=dict(zip(labels, law)), acceptance=acceptance,
                       explicit_acceptance=Fraction(0), paths=paths, total=total,
                       used_drafts=True, used_accept=False,
                       seconds=time.process_time() - start if seconds is None else seconds,
                       draft_axis=len(labels),
                       floats=floats)


def _replay_falls_back(s):

    return CannotProceed("a replay that differs")


def _positional(function) -> list | None:
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return None
    return [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            and p.default is p.empty]


def _keyword_only(function) -> str | None:
    """The first keyword-only parameter of ``function`` without a default, or ``None``."""
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    return next((p.name for p in params if p.kind == p.KEYWORD_ONLY and p.default is p.empty),
                None)


def load_pytorch_rule(spec: str):
    """The :class:`PyTorchRule` named by ``file.py:function`` when the file imports torch and
    the function takes ``(p, q)``; ``None`` when the file does not import torch or the function
    is a sampler rule (its first parameter ``s``, three or four parameters, or ``*args``: the
    caller loads it as one).
    A function of the file with any other number of parameters (or not a plain function) is
    refused in one line (:class:`~exactspec.core.errors.InvalidInput`)."""
    where, _, name = spec.rpartition(":")
    path = Path(where)
    if not where or not name or not where.endswith(".py") or not path.is_file() or \
            not imports_torch(path):
        return None
    module = import_user_file(spec, path, prefix="_exactspec_torch_rule_", under=installed,
                              keep=False, during=" under exactspec's tensor layer", line=True,
                              passes=(ExactspecError,), explain=lambda err: _outside(err, path))
    function = user_function(module, spec)
    if not callable(function):
        raise InvalidInput(f"method {spec!r}: {name} is not a function of (p, q) (it is "
                           f"{type(function).__name__} {function!r:.40})")
    if inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function) or \
            inspect.isgeneratorfunction(function):
        kind = "a generator" if inspect.isgeneratorfunction(function) else "asynchronous"
        raise InvalidInput(f"method {spec!r}: {name} is {kind}: a PyTorch rule is a plain "
                           "function of (p, q) returning the emitted token")
    positional = _positional(function)
    if positional is None or (positional and positional[0].name == "s") or \
            len(positional) in (3, 4):
        return None                     # a rule of the sampling interface (s, p, q[, k])
    if len(positional) != 2:            # neither kind of rule
        names = ", ".join(p.name for p in positional)
        raise InvalidInput(f"method {spec!r}: {name}({names}) takes {len(positional)} "
                           f"parameter{'s' * (len(positional) != 1)} without a default: a "
                           "PyTorch rule is a function of (p, q), the target and draft rows")
    required = _keyword_only(function)
    if required:
        raise InvalidInput(f"method {spec!r}: {name} has a keyword-only parameter "
                           f"{required!r} without a default: exactspec calls a PyTorch rule "
                           "as fn(p, q)")
    rule = PyTorchRule(function, spec, path)
    rule.shipped = shipped_sources(module)
    return rule


def shipped_sources(module) -> list:
    """Where the functions and classes a rule file took from installed packages come from
    (``exactspec.torch_layer.load``): ``[{package, version, module, name, file}, ...]``."""
    out = []
    for value in list(vars(module).values()):
        try:
            source = getattr(value, "__exactspec_source__", None) if callable(value) else None
        except Exception:  # noqa: BLE001 - a value whose attributes refuse to be read
            source = None
        if isinstance(source, dict) and source not in out:
            out.append(dict(source))
    return out


def _integer(v):
    """A NumPy integer (``int(np.argmax(...))`` left as ``np.int64``) as the int it is; any
    other value unchanged.  An index of tied values (``topk``) is refused as its use is."""
    if isinstance(v, TieOrder):
        raise InvalidInput(f"the PyTorch rule returned an index of tied values from {v.what}: "
                           "torch leaves the order of tied indices unspecified (its CPU kernel "
                           "does not keep index order), which exactspec does not model")
    if type(v).__module__ == "numpy" and getattr(v, "dtype", None) is not None and \
            v.dtype.kind in "iu":
        return int(v)
    return v


def _outside(err, path) -> str | None:
    """The message of a file that imports a part of torch the layer does not have."""
    missing = (err.name or "") if isinstance(err, ModuleNotFoundError) else ""
    if missing.startswith("torch."):
        return (f"{missing} is outside exactspec's tensor layer, which stands in for torch and "
                f"torch.nn.functional{user_line(err, path)}")
    return None


class _Row:
    """A row of exact numbers kept as a list of values and, made when first needed and where
    the values allow it, as an integer row ``(numerators, denominator)``
    (:func:`~exactspec.core.integer_rows.integer_row`): the law's rows summed, multiplied
    and combined by integers.

    >>> r = _Row([Fraction(1, 2), Fraction(1, 4)])
    >>> r.total(), r.at(1), r.times(_Row([Fraction(1, 2), Fraction(1)]), True).fractions()
    (Fraction(3, 4), Fraction(1, 4), [Fraction(1, 4), Fraction(0, 1)])
    """

    __slots__ = ("_fractions", "_ints")

    def __init__(self, fractions=None, ints=None):
        self._fractions = fractions
        self._ints = ints

    def ints(self):
        """The integer row, or ``None`` when the values are not rationals of one moderate
        common denominator."""
        if self._ints is None:
            self._ints = integer_row(self._fractions) or False
        return self._ints or None

    def fractions(self) -> list:
        if self._fractions is None:
            self._fractions = fractions_over(*self._ints)
        return self._fractions

    def exact(self):
        """The integer row when there is one, else the values (for ``combine`` and ``dot``)."""
        return self.ints() or self.fractions()

    def total(self):
        r = self.ints()
        return fraction_of(sum(r[0]), r[1]) if r else exact_sum(self.fractions())

    def at(self, i: int):
        return self.fractions()[i] if self._fractions is not None else \
            fraction_of(self._ints[0][i], self._ints[1])

    def times(self, other: "_Row", complement: bool) -> "_Row":
        """``self[x] * other[x]`` (``complement``: ``self[x] * (1 - other[x])``) per branch."""
        a, b = self.ints(), other.ints()
        if a and b:
            (xs, dx), (ys, dy) = a, b
            if complement:
                return _Row(None, ([x * (dy - y) for x, y in zip(xs, ys)], dx * dy))
            return _Row(None, ([x * y for x, y in zip(xs, ys)], dx * dy))
        ys = other.fractions()
        if a and all(type(y) is Fraction for y in ys):    # integers times rationals
            xs, dx = a
            if complement:
                return _Row([fraction_of(x * (y._denominator - y._numerator),
                                         dx * y._denominator) for x, y in zip(xs, ys)])
            return _Row([fraction_of(x * y._numerator, dx * y._denominator)
                         for x, y in zip(xs, ys)])
        xs = self.fractions()
        if complement:
            return _Row([x * (1 - y) for x, y in zip(xs, ys)])
        return _Row([x * y for x, y in zip(xs, ys)])


class _Law:
    """The output law of a vectorised run as it is summed over the paths: ``terms``, a list of
    ``(scale, row)`` (a law token spread by its row, the draft spread over its branches), and
    ``point``, the mass on plain tokens; with the acceptance and the paths counted."""

    __slots__ = ("n", "terms", "point", "acceptance", "paths")

    def __init__(self, n: int):
        self.n = n
        self.terms: list = []
        self.point = [Fraction(0)] * n
        self.acceptance = Fraction(0)
        self.paths = 0

    def result(self) -> tuple:
        """``(law, acceptance, paths)``, the law as a list of exact values by token."""
        from .branched import combine

        return combine(self.terms + [(1, self.point)], self.n), self.acceptance, self.paths


class PyTorchRule:
    """``run(s, p, q, k)`` of the engine for a PyTorch rule ``function(p, q)``."""

    def __init__(self, function, spec: str, path):
        self.function = function
        self.spec = spec
        self.path = Path(path)
        self.__wrapped__ = function
        self.__name__ = getattr(function, "__name__", "rule")
        self.__doc__ = function.__doc__
        self.gamma = 1            # draft positions of a multi-position call (call_rows)
        self.shipped: list = []   # functions taken from installed packages (shipped_sources)

    @property
    def summary(self) -> str:
        return (self.function.__doc__ or "").strip().split("\n")[0]

    def __call__(self, s, p, q, k=1):
        fmt = s.fmt if isinstance(s, FloatSampler) else None
        run = Run(s, fmt)
        with installed(run):
            dtype = D.float64 if fmt is None else D.DTYPES[fmt.name]
            p_row = Tensor.new([cast(v, dtype) for v in p.probs], (len(p.probs),), dtype)
            q_row = Tensor.new([cast(v, dtype) for v in q.probs], (len(q.probs),), dtype)
            run.draft = (q_row, q_row._st.version, q)
            try:
                with user_code():
                    result = self.function(p_row, q_row)
                index = self._index(result, len(p.probs))
            except ExactspecError:
                raise
            except Exception as err:
                raise InvalidInput(f"the PyTorch rule {self.spec} raised {type(err).__name__}: "
                                   f"{err}{user_line(err, self.path)}") from None
        return p.labels[index]

    @gc_paused
    def vectorised(self, p, q, grid: int | None = None, arith=None,
                   sum_order: str | None = None, *, split_values: bool = True):
        """The exact :class:`~exactspec.engine.exact.Enumeration` of the rule with its draft
        kept as a branch axis (:mod:`.branched`): the body runs once per path of the other
        random choices, not once per draft token.  With ``split_values`` the acceptance test
        ``u < c[draft]`` is a value (a split) that ``torch.where`` selects the emitted token
        with, a branch point only where it is read as a bool; a selected token used in a
        computation raises :class:`~exactspec.core.signals.CannotProceed` with ``retry
        "splits"`` (run again without ``split_values``: every split a branch point).  With
        ``arith`` (a float format) the float run (:mod:`.branched_float`): ``p`` and ``q``
        rounded into the format, its generator grid unless ``grid`` says otherwise, long
        sums in ``sum_order``.  ``p`` and ``q`` are the exact rows.  Anything the vectorised
        run does not track raises :class:`~exactspec.core.signals.CannotProceed`; the
        planner (:mod:`exactspec.routes.planner`) then takes another route."""
        from ..core.exact_values import floats_converted

        start, n, converted = time.process_time(), len(p.probs), floats_converted()
        law, acceptance, paths, floats = self._vectorised(
            p, q, grid, n, arith=arith, sum_order=sum_order, split_values=split_values)
        return _enumeration(p, law, acceptance, paths, start, floats + floats_converted() -
                            converted)

    @gc_paused
    def vectorised_pair(self, p, q, grid: int, *, split_values: bool = True):
        """The two exact enumerations of :meth:`vectorised` with ideal uniforms and on the
        uniform grid of ``grid`` points, from one run of the body
        (:class:`~.branched.PairSampler`): ``(ideal, on_grid)``, each with the seconds of the
        one run.  A body that uses a uniform's law otherwise than in a comparison with a
        branched threshold raises :class:`~exactspec.core.signals.CannotProceed` with
        ``retry "apart"`` (the two runs are made apart)."""
        from ..core.exact_values import floats_converted

        start, n, converted = time.process_time(), len(p.probs), floats_converted()
        runs, floats = self._vectorised(p, q, None, n, pair_grid=grid,
                                        split_values=split_values)
        floats += floats_converted() - converted
        seconds = time.process_time() - start              # of the one run, given to both
        return tuple(_enumeration(p, law, acceptance, paths, start, floats, seconds)
                     for law, acceptance, paths in runs)

    def _vectorised(self, p, q, grid, n, arith=None, sum_order=None, split_values=False,
                    pair_grid=None):
        """The law, acceptance and paths of the vectorised run and the floats it converted;
        with ``pair_grid``, ``([(law, acceptance, paths)] * 2, floats)``: one run of the body
        for ideal uniforms and the grid of ``pair_grid`` points."""
        from .branched import (Branched, LawIndex, Mixture, Pair, PairSampler,
                               VectorSampler, dot)

        if any(not isinstance(v, Fraction) for v in list(p.probs) + list(q.probs)):
            raise CannotProceed("rows that are not exact rationals")
        p_exact = [Fraction(v) if type(v) is not Fraction else v for v in p.probs]
        q_exact = [Fraction(v) if type(v) is not Fraction else v for v in q.probs]
        if pair_grid is not None:
            s = PairSampler(n, pair_grid, split_values)
            fmt, dtype, p_held, q_held = None, D.float64, p_exact, q_exact
        elif arith is None:
            s = VectorSampler(n, grid, split_values)
            fmt, dtype, p_held, q_held = None, D.float64, p_exact, q_exact
        else:
            from ..engine.floats import FloatValue, get_format
            from .branched_float import VectorFloatSampler

            fmt = get_format(arith)
            s = VectorFloatSampler(n, fmt, grid, sum_order, split_values)
            dtype = D.DTYPES[fmt.name]          # the rows as a tensor of the dtype holds them
            p_held = [FloatValue(fmt.round(v), fmt) for v in p_exact]
            q_held = [FloatValue(fmt.round(v), fmt) for v in q_exact]
        q_draft = _Row(q_exact)          # the draft's law, a weight per draft branch
        runs = [_Law(n) for _ in range(1 if pair_grid is None else 2)]

        def add(token, wx: _Row, law: _Law, run: int):
            """The law's mass ``wx[x]`` (per draft branch) on ``token`` (in the pair run,
            ``run`` 0 for ideal uniforms, 1 on the grid)."""
            if type(token) is int:
                if not 0 <= token < n:
                    raise CannotProceed("a selected token that is not an index")
                law.point[token] += wx.total()
                law.acceptance += wx.at(token)
            elif type(token) is LawIndex:
                token = token.over(n)
                row = token.row if token.row is not None else token.probs
                law.terms.append((wx.total(), row))
                law.acceptance += dot(wx.exact(), row)
            elif type(token) is Mixture:            # a token selected by a split
                split = token.split
                if split.decided is not None:       # read as a bool later on this path
                    add(token.a if split.decided else token.b, wx, law, run)
                    return
                below = split.below
                below = _Row(below[run] if type(below) is Pair else below)
                add(token.a, wx.times(below, False), law, run)
                add(token.b, wx.times(below, True), law, run)
            elif type(token) is Branched and token.values == list(range(n)):   # the draft
                law.terms.append((1, wx.exact()))
                law.acceptance += wx.total()
            elif type(token) is Branched:                       # a token per draft branch
                for x, (t, m) in enumerate(zip(token.values, wx.fractions())):
                    if type(t) is not int or not 0 <= t < n:
                        raise CannotProceed("a branched token that is not an index")
                    law.point[t] += m
                    if t == x:
                        law.acceptance += m
            else:
                raise CannotProceed("a result that is not a token")

        def body(s):
            run = Run(s, fmt)
            with installed(run):
                p_row = Tensor.new(list(p_held), (n,), dtype)
                q_row = Tensor.new(list(q_held), (n,), dtype)
                run.draft = (q_row, q_row._st.version, q)
                try:
                    result = self.function(p_row, q_row)
                except (CannotProceed, ExactspecError):
                    raise
                except Exception as err:
                    raise CannotProceed(f"{type(err).__name__}: {err}") from None
            return self._vector_token(result, n)      # (a returned split is read here)

        def finish(s):
            s.finish()
            if s.axis is None:
                raise CannotProceed("no draft")

        def leaf(s, token):
            w = s.weight
            for run, law in enumerate(runs):
                if pair_grid is not None and not s.alive[run]:
                    continue                      # an outcome of weight 0 in this run
                law.paths += 1
                values = getattr(w, "values", None)       # a weight per draft branch
                if type(values) is Pair:
                    values = values[run]
                # q[x] * P(path | x)
                wx = q_draft.times(_Row(values), False) if values is not None else \
                    q_draft if w == 1 else _Row([a * w for a in q_exact])
                add(token, wx, law, run)

        depth_first(s, body, leaf, finish=finish, differs=_replay_falls_back)
        if pair_grid is not None:
            return [law.result() for law in runs], s.floats
        return (*runs[0].result(), s.floats)

    def _vector_token(self, result, n):
        from .branched import Branched, LawIndex, Mixture, Split

        if isinstance(result, Tensor):
            if result.numel() != 1 or result.dtype.kind != "int":
                raise CannotProceed("a result that is not one integer")
            result = result._values()[0]
        if type(result) is Split:
            result = int(result)            # a returned split: read as a bool here
        if type(result) is int and 0 <= result < n:
            return result
        if type(result) in (Branched, LawIndex, Mixture):
            return result
        raise CannotProceed("a result that is not a token")

    def call_rows(self, s, pair, ctx=()) -> tuple:
        """One call of a multi-position rule: ``function(p, q)`` on ``[gamma + 1, V]`` target
        and ``[gamma, V]`` draft rows of the context-free ``pair`` (``gamma`` is
        :attr:`gamma`, set by the caller); the emitted tokens as labels."""
        fmt = s.fmt if isinstance(s, FloatSampler) else None
        run = Run(s, fmt)
        target, draft = pair.target(ctx), pair.draft(ctx)
        n = len(target.probs)
        with installed(run):
            dtype = D.float64 if fmt is None else D.DTYPES[fmt.name]
            p_rows = Tensor.new([cast(v, dtype) for v in target.probs] * (self.gamma + 1),
                                (self.gamma + 1, n), dtype)
            q_rows = Tensor.new([cast(v, dtype) for v in draft.probs] * self.gamma,
                                (self.gamma, n), dtype)
            run.draft = (q_rows, q_rows._st.version, draft)
            try:
                with user_code():
                    result = self.function(p_rows, q_rows)
                tokens = self._tokens(result, n)
            except ExactspecError:
                raise
            except Exception as err:
                raise InvalidInput(f"the PyTorch rule {self.spec} raised {type(err).__name__}: "
                                   f"{err}{user_line(err, self.path)}") from None
        return tuple(target.labels[i] for i in tokens)

    def _tokens(self, result, n: int) -> list:
        if isinstance(result, Tensor):
            if result.ndim > 1 or result.dtype.kind != "int":
                raise InvalidInput(f"the PyTorch rule {self.spec} returned a tensor of shape "
                                   f"{list(result.shape)} and dtype {result.dtype.name}: return "
                                   "the emitted tokens (a 1-D integer tensor or a list of ints)")
            result = result._values()
        if not isinstance(result, (list, tuple)):
            raise InvalidInput(f"the PyTorch rule {self.spec} returned {result!r}: return the "
                               "emitted tokens (a 1-D integer tensor or a list of ints)")
        out = []
        for t in result:
            if isinstance(t, Tensor) and t.numel() == 1 and t.dtype.kind == "int":
                t = t._values()[0]
            t = _integer(t)
            if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < n:
                raise InvalidInput(f"the PyTorch rule {self.spec} emitted {t!r}: every token "
                                   f"must be an index in 0..{n - 1}")
            out.append(t)
        if not out or len(out) > self.gamma + 1:
            raise InvalidInput(f"the PyTorch rule {self.spec} emitted {len(out)} tokens from "
                               f"{self.gamma} draft positions: between 1 and {self.gamma + 1}")
        return out

    def _index(self, result, n: int) -> int:
        if isinstance(result, Tensor):
            if result.numel() != 1 or result.dtype.kind != "int":
                raise InvalidInput(f"the PyTorch rule {self.spec} returned a tensor of "
                                   f"{result.numel()} {result.dtype.name} values: return the "
                                   "emitted token index (an int or a one-element integer "
                                   "tensor)")
            result = result._values()[0]
        result = _integer(result)
        if isinstance(result, bool) or not isinstance(result, int):
            raise InvalidInput(f"the PyTorch rule {self.spec} returned {result!r}: return the "
                               "emitted token index (an int or a one-element integer tensor)")
        if not 0 <= result < n:
            raise InvalidInput(f"the PyTorch rule {self.spec} returned token {result}, outside "
                               f"0..{n - 1}")
        return result

