"""A user's own multi-position verifier, proved from a JSON spec (``exactspec tree``).

Two shapes of function, told apart by their parameters:

- **as engines write it**: ``f(s, drafts, p, q)``.  The engine drafts ``gamma`` tokens
  ``x_1..x_gamma`` from the draft model (``x_i ~ q(. | ctx, x_<i)``), calls the target once and
  hands the function the rows of every position: ``p[i] = p(. | ctx, x_1..x_i)`` for
  ``i = 0..gamma`` (``gamma + 1`` rows, the last for the bonus token) and ``q[i]`` for
  ``i = 0..gamma-1``.  The function returns the tokens it emits (a tuple, 1 to ``gamma + 1``);
- **a whole call**: ``f(s, pair, ctx)``, given the model pair and the context (it drafts and
  verifies as it likes: a chain, a tree, a block).

Each call reads nothing but its inputs.  A verifier that keeps state from one call to the next
must say so: a last parameter ``state`` (``None`` at the first call), and a return value
``(tokens, new_state)`` with a hashable state; the engine threads it through the calls and
composes the law over (context, state).  Hidden state (a module global, a closure variable, an
attribute or a default argument the function changes, or a first call that answers the same
random choices differently when they are replayed after the enumeration) is detected and
refused: no law is returned from it.  The first call is enumerated once; its law gives both the
tokens per call and the start of the composition.

Under ``arith`` the rows reach the function rounded into the format and its arithmetic is
rounded as the format does (:mod:`exactspec.engine.float_sampler`); the float run is paired with
the same verifier in exact arithmetic and the verdict says ``lossless``, ``lossy-rounding`` or
``lossy-logic`` (:mod:`exactspec.rounding`).

>>> from exactspec.sequences.context import ContextPair
>>> def chain(s, drafts, p, q):
...     out = ()
...     for i, x in enumerate(drafts):
...         if not s.coin(min(1, p[i][x] / q[i][x])):
...             return out + (s.draw(residual(p[i], q[i])),)
...         out += (x,)
...     return out + (s.draw(p[len(drafts)]),)
>>> pair = ContextPair.context_free("1/3,2/3", "2/3,1/3")
>>> r = user_report({"gamma": 2, "m": 2}, chain, pair=pair)
>>> r["verdict"], r["tokens_per_call"]
('lossless', '19/9')
"""

from __future__ import annotations

import inspect
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

from ..core.dist import Dist, exact_str, law_distance, residual  # noqa: F401 (residual: doctests)
from ..core.errors import InvalidInput, names_its_line
from ..engine.exact import MAX_SECONDS, ExactSampler
from ..engine.hidden_state import HiddenState, check_unchanged, state_fingerprint
from ..engine.runs import enumerate_runs
from ..engine.watch import watched
from .context import ContextPair, context_key, parse_context, read_spec
from .multitoken import Verifier, sequence_certificate
from .user_loading import load_user_function, load_verifier, trusted_function
from .user_summary import user_text

__all__ = ["UserVerifier", "as_user_verifier", "load_user_function", "load_verifier", "user_report",
           "user_text", "HiddenState", "position_pair", "builtin_report", "recorded_pair",
           "trusted_function", "replay_certificate", "DEFAULT_MAX_SECONDS", "SPEC_KEYS"]

#: The keys of a user's spec (``exactspec tree SPEC --verifier F``, :func:`user_report`).
SPEC_KEYS = {"model", "labels", "target", "draft", "verifier", "gamma", "m", "context",
             "arith", "grid", "tolerance"}


# -- the verifier ------------------------------------------------------------------------------
class UserVerifier(Verifier):
    """A user's function as a multi-position verifier (see the module docstring)."""

    def __init__(self, function: Callable, gamma: int | None = None, name: str | None = None):
        self.function = function
        self.name = name or getattr(function, "__name__", "user")
        try:
            params = [prm.name for prm in inspect.signature(function).parameters.values()]
        except (TypeError, ValueError):
            raise InvalidInput(f"{self.name}: cannot read its parameters") from None
        self.stateful = bool(params) and params[-1] == "state"
        core = params[:-1] if self.stateful else params
        if len(core) == 3 and core[1] == "pair":
            self.shape = "call"
        elif len(core) == 4:
            self.shape = "rows"
        else:
            raise InvalidInput(
                f"{self.name}({', '.join(params)}): a multi-position verifier takes "
                "(s, drafts, p, q) or (s, pair, ctx), plus a last parameter `state` if it "
                "keeps state between calls")
        if self.shape == "rows":
            if gamma is None:
                raise InvalidInput(f"{self.name} takes the rows of every position: give "
                                   "'gamma' (draft tokens per call) in the spec or --gamma")
            if isinstance(gamma, bool) or not isinstance(gamma, int) or gamma < 1:
                raise InvalidInput(f"gamma={gamma!r}: need an integer >= 1")
        self.gamma = gamma
        self.max_tokens = (gamma + 1) if gamma else 1
        self.drafted = gamma or 0
        #: Declared capability: the PyTorch rule a whole call runs
        #: (:func:`~exactspec.sequences.torch_rules.pytorch_whole_call`), or ``None``.
        self.tensor_rule = getattr(function, "pytorch_rule", None)

    def describe(self) -> dict:
        out = {"verifier": "user", "function": self.name, "shape": self.shape,
               "stateful": self.stateful, "max_tokens": self.max_tokens,
               "drafted": self.drafted}
        if self.gamma:
            out["gamma"] = self.gamma
        return out

    def step(self, s, pair: ContextPair, ctx: tuple, state=None):
        """One call: ``(tokens, new_state)`` (``new_state`` is ``None`` when stateless)."""
        fmt = getattr(s, "fmt", None)
        if self.shape == "rows":
            drafts: tuple = ()
            for i in range(self.gamma):
                drafts += (s.draft(pair.draft(ctx + drafts), f"draft{i + 1}"),)
            p_rows = [pair.target(ctx + drafts[:i]) for i in range(self.gamma + 1)]
            q_rows = [pair.draft(ctx + drafts[:i]) for i in range(self.gamma)]
            if fmt is not None:
                from ..engine.float_sampler import float_dist

                p_rows = [float_dist(r, fmt) for r in p_rows]
                q_rows = [float_dist(r, fmt) for r in q_rows]
            args: tuple = (s, drafts, p_rows, q_rows)
        else:
            args = (s, pair if fmt is None else _FloatPair(pair, fmt), ctx)
        if self.stateful:
            args += (state,)
        result = _call_user(self.function, args)
        if self.stateful:
            if not (isinstance(result, tuple) and len(result) == 2):
                raise InvalidInput(f"{self.name} declares `state`: it must return "
                                   f"(tokens, new_state), got {result!r}")
            tokens, new_state = result
            try:
                hash(new_state)
            except TypeError:
                raise InvalidInput(f"{self.name}: the state must be hashable (a tuple, a "
                                   f"number, a string), got {type(new_state).__name__}"
                                   ) from None
        else:
            tokens, new_state = result, None
        if isinstance(tokens, list):
            tokens = tuple(tokens)
        if not isinstance(tokens, tuple) or not tokens:
            raise InvalidInput(f"{self.name}: a call must return a non-empty tuple of tokens, "
                               f"got {tokens!r}")
        if self.gamma and len(tokens) > self.gamma + 1:
            raise InvalidInput(f"{self.name} returned {len(tokens)} tokens from {self.gamma} "
                               f"drafts: at most gamma + 1 = {self.gamma + 1}")
        for t in tokens:
            if t not in pair.labels:
                raise InvalidInput(f"{self.name} returned {t!r}, not a token of the "
                                   f"vocabulary {list(pair.labels)}")
        return tokens, new_state

    def call(self, s, pair, ctx):
        if self.stateful:
            raise InvalidInput(f"{self.name} keeps state: prove it with user_report, which "
                               "threads the state through the calls")
        return self.step(s, pair, tuple(ctx))[0]


class _FloatPair:
    """A model pair whose rows come rounded into a float format."""

    def __init__(self, pair: ContextPair, fmt):
        self._pair, self._fmt = pair, fmt
        self.labels = pair.labels

    def target(self, ctx=()):
        from ..engine.float_sampler import float_dist

        return float_dist(self._pair.target(tuple(ctx)), self._fmt)

    def draft(self, ctx=()):
        from ..engine.float_sampler import float_dist

        return float_dist(self._pair.draft(tuple(ctx)), self._fmt)


def _call_user(function, args):
    """Call the user's function; an exactspec error raised inside it names the user's line."""
    try:
        return function(*args)
    except InvalidInput as err:
        if isinstance(err, HiddenState) or names_its_line(err):
            raise
        where = _user_line(err.__traceback__)
        if not where:
            raise
        try:                      # the same kind of error (hidden randomness stays one)
            named = type(err)(f"{err}{where}")
        except TypeError:
            named = InvalidInput(f"{err}{where}")
        raise named from None


def _user_line(tb) -> str:
    import os

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frames = [f for f in __import__("traceback").extract_tb(tb)
              if not os.path.abspath(f.filename).startswith(package)]
    return f" (in {frames[-1].filename} line {frames[-1].lineno})" if frames else ""


def as_user_verifier(obj, gamma: int | None = None) -> UserVerifier:
    """A :class:`UserVerifier` for a function (or ``file.py:function``)."""
    if isinstance(obj, UserVerifier):
        return obj
    if isinstance(obj, str):
        return UserVerifier(load_verifier(obj, gamma=gamma), gamma, name=obj)
    if callable(obj):
        return UserVerifier(obj, gamma)
    raise InvalidInput(f"{obj!r}: give a function or file.py:function")


def _rows_of_every_position(pair, name: str):
    """``pair`` as a PyTorch rule's whole call reads it: the same target and draft rows at
    every position, a context-free pair (a table with only the root context ``""`` becomes
    one, so that it takes the route of ``verify --tokens``); a pair that depends on the
    context is refused (the rule is handed the rows at the call's context at every
    position)."""
    from .context import ContextPair

    if pair.context_free_rows is not None:
        return pair
    table = pair._table
    if table is not None and all(list(table.get(side, {})) == [""]
                                 for side in ("target", "draft")):
        root = ()
        return ContextPair.context_free(pair.target(root), pair.draft(root), name=pair.name)
    raise InvalidInput(f"{name}: a PyTorch rule is handed the same target and draft rows at "
                       "every draft position, so its pair must be context-free: give only "
                       "the root context \"\" in 'target' and 'draft'")


# -- hidden state --------------------------------------------------------------------------------
def _check_unchanged(verifier: UserVerifier, before: dict) -> None:
    check_unchanged(verifier.function, before, verifier.name)


# -- laws ---------------------------------------------------------------------------------------
def _factory(arith, grid, elementwise="correct", sum_order=None):
    if arith is not None:
        from ..engine.float_sampler import FloatSampler

        return lambda: FloatSampler(arith, grid, elementwise, sum_order)
    return lambda: ExactSampler(grid=grid)


def _call_law(verifier, pair, ctx, state, factory, max_paths, max_seconds=None):
    return enumerate_runs(lambda s: verifier.step(s, pair, ctx, state), max_paths=max_paths,
                          max_seconds=max_seconds,
                          sampler_factory=factory)


def _reads_rows_only(verifier, pair) -> bool:
    """Whether every call's law is the same at every context: a context-free pair and a
    function that sees only its rows (``f(s, drafts, p, q)``, a PyTorch rule); a whole call
    ``f(s, pair, ctx)`` may read the context and is enumerated per context."""
    return pair.context_free_rows is not None and (
        verifier.shape == "rows" or verifier.tensor_rule is not None)


def _joint(verifier, pair, m, ctx, factory, max_paths, root=None, max_seconds=None):
    """The law of the first ``m`` tokens, composed over (context, state); each reachable
    (context, state) enumerated once (the root's law may be given), each state once when the
    call's law does not depend on the context (:func:`_reads_rows_only`)."""
    free = _reads_rows_only(verifier, pair)
    calls: dict = {}
    if root is not None:
        calls[(None if free else ctx, None)] = root
    counts = {"paths": 0, "calls": 0, "floats": 0}
    memo: dict = {}

    def one(c, state):
        key = (None if free else c, state)
        if key not in calls:
            calls[key] = _call_law(verifier, pair, c, state, factory, max_paths, max_seconds)
        law = calls[key]
        if key not in counted:
            counted.add(key)
            counts["paths"] += law.paths
            counts["calls"] += 1
            counts["floats"] += getattr(law, "floats_converted", 0)
        return law.law

    counted: set = set()

    def rest(c, state, left):
        key = (None if free else c, state, left)
        if key in memo:
            return memo[key]
        out: dict = {}
        for (tokens, new_state), w in one(c, state).items():
            if w == 0:
                continue
            if len(tokens) >= left:
                head = tokens[:left]
                out[head] = out.get(head, 0) + w
            else:
                for tail, w2 in rest(c + tokens, new_state, left - len(tokens)).items():
                    out[tokens + tail] = out.get(tokens + tail, 0) + w * w2
        memo[key] = out
        return out

    return rest(ctx, None, m), counts


def _replay_signature(verifier, pair, ctx, factory, probes: int = 8) -> list:
    """The first call run along ``probes`` seeded random paths: the branches taken, their
    probabilities and the result.  Equal before and after the enumeration unless the call
    depends on something that changed in between."""
    import random

    out = []
    for seed in range(probes):
        s = factory()
        s._probe = random.Random(seed)
        s._probe_size = 1
        s._reset()
        result = verifier.step(s, pair, ctx, None)
        out.append((tuple(s.branches), s.weight, result))
    return out


def _generate(s, verifier, pair, m, ctx):
    out: tuple = ()
    state = None
    while len(out) < m:
        tokens, state = verifier.step(s, pair, ctx + out, state)
        out += tokens
    return out[:m]


def position_pair(table: dict) -> ContextPair:
    """A pair given by per-position rows: ``{"labels": .., "target": [row0, row1, ..],
    "draft": [row0, ..]}``; position ``i`` (the ``i``-th generated token) uses row ``i`` (the
    last row beyond the list)."""
    from .context import read_dist  # the table reader's own row parser

    labels = table.get("labels")
    rows = {}
    for side in ("target", "draft"):
        value = table.get(side)
        if not isinstance(value, list) or not value:
            raise InvalidInput(f"per-position rows: '{side}' must be a non-empty list of rows")
        rows[side] = value
    if labels is None:
        first = rows["target"][0]
        n = len(first.split(",")) if isinstance(first, str) else len(first)
        labels = list(range(n))
    from .context import parse_labels

    labels = tuple(parse_labels(labels, name="labels"))
    parsed = {side: [read_dist(r, labels, f"{side}[{i}]") for i, r in enumerate(v)]
              for side, v in rows.items()}

    def pick(side):
        return lambda ctx: parsed[side][min(len(ctx), len(parsed[side]) - 1)]

    from .context import labels_json

    table = {"labels": labels_json(labels),
             **{side: [[exact_str(v) for v in d.probs] for d in parsed[side]]
                for side in ("target", "draft")}}
    return ContextPair(pick("target"), pick("draft"), labels, name="per-position rows",
                       table=table)


# -- the report -----------------------------------------------------------------------------------
def _load_pair(spec: dict, base: Path | None) -> ContextPair:
    model = spec.get("model")
    if isinstance(model, str):
        path = Path(model) if base is None or Path(model).is_absolute() else base / model
        return ContextPair.from_json(path)
    if isinstance(model, dict):
        table = model
    elif model is None:
        table = {k: spec[k] for k in ("labels", "target", "draft") if k in spec}
    else:
        raise InvalidInput("spec: 'model' must be a table object or a JSON file name")
    if isinstance(table.get("target"), list) or isinstance(table.get("draft"), list):
        return position_pair(table)
    return ContextPair.from_table(table)


DEFAULT_MAX_PATHS = 10**6   # one budget for every route to a user's multi-position rule
#: A call whose paths would take longer than this (its size estimate times the measured
#: seconds of one path) is refused up front too; ``max_seconds=None`` (on the command line,
#: a path budget given with ``--max-paths N``) insists.
DEFAULT_MAX_SECONDS = MAX_SECONDS


def user_report(spec, function=None, *, pair: ContextPair | None = None,
                gamma: int | None = None, m: int | None = None, arith: str | None = None,
                grid: int | None = None, tolerance=None,
                max_paths: int | None = DEFAULT_MAX_PATHS, certificate: bool = False,
                elementwise: str = "correct",
                max_seconds: float | None = DEFAULT_MAX_SECONDS,
                sum_order: str | None = None) -> dict:
    """Prove a user's multi-position verifier on a spec; a JSON-ready report.

    The one entry point for a user's multi-position rule: ``exactspec tree SPEC --verifier
    F`` and ``exactspec verify F --tokens M`` (a context-free spec: ``(p, q)`` at every
    context, ``m = M``) both land here.

    ``spec`` is a dict or the path of a JSON file: the model pair (docs/tree_format.md, or
    per-position rows), ``verifier`` (``"file.py:function"``, relative to the spec file),
    ``gamma``, ``m`` (default ``gamma + 1``), ``context``; the keyword arguments override it.
    Keys: ``verifier``, ``m``, ``law`` and ``target`` (the first ``m`` tokens, exact),
    ``lossless``, ``verdict`` (``lossless``, ``lossy-grid``, ``lossy-rounding``,
    ``lossy-logic``), ``bias`` (TV of the run asked for), ``bias_exact_arith`` (exact
    arithmetic, ideal uniforms) and ``bias_grid_only`` (exact arithmetic on the run's grid,
    ``null`` without one), ``tokens_per_call`` (exact), ``floats_converted``, ``differs``,
    ``difference`` and ``tv`` (the run asked for) when lossy; ``exact_arith`` (the same
    verifier in exact arithmetic with ideal uniforms) when the run asked for is another;
    ``certificate`` (every path of the generation) on request.  ``elementwise`` (with
    ``arith``): where the float run's ``exp`` and ``log`` come from (``"correct"``,
    ``"numpy"``, ``"torch"``), reported as ``elementwise``.  ``sum_order`` (with ``arith``):
    the declared order of the float run's sums of more than a few terms
    (:mod:`~exactspec.engine.float_sums`; without one such a sum is refused), reported as
    ``sum_order`` and recorded in the certificate.

    A PyTorch rule on a context-free pair (no ``certificate``, ``elementwise`` correct) first
    takes the factored route (:mod:`exactspec.sequences.factored`: every draft position a
    tensor axis, ``route: "factored"``, ``law`` and ``target`` only where the sequences are
    few, a ``witness`` prefix when lossy; under ``arith`` or ``grid`` its three runs each by
    that route); a rule it does not track takes the path route.  A call that reads only its
    rows (``f(s, drafts, p, q)``, a PyTorch rule) is enumerated once per state on a
    context-free pair, not once per context.
    """
    spec, base = read_spec(spec, "spec", SPEC_KEYS)
    if function is None:
        function = spec.get("verifier")
        if not isinstance(function, str) or ":" not in function:
            raise InvalidInput("spec: 'verifier' must name the user's function as "
                               "file.py:function (or give --verifier)")
    gamma = gamma if gamma is not None else spec.get("gamma")
    if isinstance(gamma, Fraction) and gamma.denominator == 1:
        gamma = int(gamma)
    if isinstance(function, UserVerifier):
        name, function = function.name, function.function
    elif isinstance(function, str):
        name = function
        given_m = m if m is not None else spec.get("m")
        function = load_verifier(function, base, gamma=gamma,
                                 m=int(given_m) if isinstance(given_m, (int, Fraction)) and
                                 not isinstance(given_m, bool) and given_m == int(given_m)
                                 else None)
    else:
        name = getattr(function, "__name__", "user")
    verifier = UserVerifier(function, gamma, name=name)
    pair = pair if pair is not None else _load_pair(spec, base)
    if verifier.tensor_rule is not None:
        pair = _rows_of_every_position(pair, name)
    m = m if m is not None else spec.get("m", verifier.max_tokens)
    if isinstance(m, Fraction) and m.denominator == 1:
        m = int(m)
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise InvalidInput(f"m={m!r}: need a number of tokens >= 1")
    ctx = parse_context(spec.get("context", ""), pair.labels)
    arith = arith if arith is not None else spec.get("arith")
    grid = grid if grid is not None else spec.get("grid")
    if tolerance is None:
        tolerance = spec.get("tolerance")
    if tolerance is not None:
        tolerance = Fraction(tolerance)
        if tolerance < 0:
            raise InvalidInput(f"tolerance={exact_str(tolerance)}: need a number >= 0")
    if sum_order is not None:
        from ..engine.float_sums import check_sum_order

        if arith is None:
            raise InvalidInput(f"sum_order={sum_order!r} applies to a float run: give arith "
                               "(--arith float32, ...)")
        check_sum_order(sum_order)
    from ..routes import plan
    from .routes import SEQUENCE_ROUTES, SequenceRequest

    request = SequenceRequest(verifier, pair, m, ctx, arith=arith, grid=grid,
                              tolerance=tolerance, max_paths=max_paths,
                              certificate=certificate, elementwise=elementwise,
                              max_seconds=max_seconds, sum_order=sum_order, report=_report)
    return plan(request, SEQUENCE_ROUTES).enumeration


class _Run:
    """One exact enumeration of the first ``m`` tokens (one arithmetic, one grid)."""

    def __init__(self, law, tpc, paths, calls, root, floats):
        self.law, self.tpc, self.paths, self.calls = law, tpc, paths, calls
        self.root, self.floats = root, floats


def _prove(verifier, pair, m, ctx, target, arith, grid, max_paths,
           elementwise="correct", max_seconds=None, sum_order=None) -> _Run:
    """The law of the first ``m`` tokens in ``arith`` (exact when ``None``) with uniforms on
    ``grid`` (long float sums in ``sum_order``), every reachable (context, state) enumerated
    once; hidden state refused, and hidden randomness under the watch of every exact run
    (:func:`~exactspec.engine.watch.watched`)."""
    with watched(verifier.function):
        return _prove_watched(verifier, pair, m, ctx, target, arith, grid, max_paths,
                              elementwise, max_seconds, sum_order)


def _prove_watched(verifier, pair, m, ctx, target, arith, grid, max_paths,
                   elementwise="correct", max_seconds=None, sum_order=None) -> _Run:
    factory = _factory(arith, grid, elementwise, sum_order)
    before = state_fingerprint(verifier.function)
    signature = _replay_signature(verifier, pair, ctx, factory)
    root = _call_law(verifier, pair, ctx, None, factory, max_paths,  # enumerated once
                     max_seconds)
    _check_unchanged(verifier, before)
    law, counts = _joint(verifier, pair, m, ctx, factory, max_paths, root=root,
                         max_seconds=max_seconds)
    _check_unchanged(verifier, before)
    if _replay_signature(verifier, pair, ctx, factory) != signature:
        raise HiddenState(
            f"{verifier.name} keeps hidden state: the same random choices of its first "
            "call, replayed after the enumeration, gave a different result, so its calls "
            "depend on what ran before; declare the state (a last parameter `state`, "
            "returning (tokens, new_state)) or remove it")
    extra = [t for t in law if t not in target]
    if extra:
        raise InvalidInput(f"{verifier.name} produced {extra[0]!r}, not a sequence of "
                           f"tokens of the vocabulary {list(pair.labels)}")
    full = {t: law.get(t, Fraction(0)) for t in target}
    tpc = sum((w * len(tokens) for (tokens, _), w in root.law.items()), Fraction(0))
    return _Run(full, tpc, counts["paths"], counts["calls"], root, counts["floats"])


def _law_json(law: dict) -> dict:
    return {context_key(t): exact_str(w) for t, w in law.items() if w != 0}


def _report(verifier: UserVerifier, pair: ContextPair, m: int, ctx: tuple, *, arith, grid,
            tolerance, max_paths, certificate, elementwise="correct",
            max_seconds=None, sum_order=None) -> dict:
    """The report of :func:`user_report`: the run asked for (``arith``, ``grid``), the same
    verifier in exact arithmetic with ideal uniforms, and in exact arithmetic on the grid."""
    from ..verdict import ThreeRuns, Verdict

    runs = ThreeRuns.of(arith, grid)
    fmt, on_grid = runs.format, runs.grid
    target = pair.joint(m, ctx)
    if elementwise != "correct" and arith is None:
        raise InvalidInput(f"elementwise={elementwise!r} applies to a float run: give arith "
                           "(--arith float32, ...)")
    asked = _prove(verifier, pair, m, ctx, target, arith, grid, max_paths,
                   elementwise, max_seconds, sum_order)
    ideal = asked if runs.ideal_is_asked else _prove(verifier, pair, m, ctx, target, None,
                                                     None, max_paths, max_seconds=max_seconds)
    grid_only = None
    if on_grid is not None:
        if runs.grid_is_asked:
            grid_only = asked
        else:
            try:
                grid_only = _prove(verifier, pair, m, ctx, target, None, on_grid, max_paths,
                                   max_seconds=max_seconds)
            except TypeError:  # irrational thresholds (s.exp in exact arithmetic) on a grid
                grid_only = None
    tv, tv_ideal = law_distance(asked.law, target), law_distance(ideal.law, target)
    tv_grid = None if grid_only is None else law_distance(grid_only.law, target)
    differs = [t for t in target if asked.law[t] != target[t]]
    same = None if grid_only is None or fmt is None else grid_only.law == asked.law
    judged = Verdict(runs, tv, tv_ideal, tv_grid, same_as_grid=same, tolerance=tolerance,
                     lossless=not differs, ideal_lossless=tv_ideal == 0)
    report: dict[str, Any] = {
        "kind": "exactspec-user-sequence-report",
        "verifier": verifier.describe(),
        "labels": [str(t) for t in pair.labels],
        "context": context_key(ctx),
        "m": m,
        "lossless": not differs,
        "law": _law_json(asked.law),
        "target": _law_json(target),
        "tokens_per_call": exact_str(asked.tpc),
        "tokens_per_call_float": float(asked.tpc),
        "call_law": _call_law_json(asked.root.law),
        "paths": asked.paths,
        "calls_enumerated": asked.calls,
        **judged.fields(),
        "floats_converted": ideal.floats,
    }
    if differs:
        report["differs"] = [context_key(t) for t in differs]
        report["difference"] = {context_key(t): exact_str(asked.law[t] - target[t])
                                for t in differs}
        report["tv"] = exact_str(tv)
        report["tv_float"] = float(tv)
    if fmt is not None:
        report["elementwise"] = elementwise
        report["sum_order"] = sum_order
    if ideal is not asked:
        report["exact_arith"] = {
            "law": _law_json(ideal.law), "tokens_per_call": exact_str(ideal.tpc),
            "paths": ideal.paths,
            "differs": [context_key(t) for t in target if ideal.law[t] != target[t]]}
    report.update(judged.tolerance_fields())
    report["ok"] = judged.ok
    if certificate:
        with watched(verifier.function):
            enumeration = enumerate_runs(lambda s: _generate(s, verifier, pair, m, ctx),
                                         keep_paths=True, max_paths=max_paths,
                                         sampler_factory=_factory(arith, grid, elementwise,
                                                                  sum_order))
        report["certificate"] = sequence_certificate(
            enumeration, target, verifier=verifier, pair=pair, m=m, ctx=ctx,
            user=verifier.name, gamma=verifier.gamma, arith=arith, grid=grid,
            elementwise=elementwise, sum_order=sum_order)
    return report


def recorded_pair(model: dict) -> ContextPair:
    """The model pair a sequence certificate records (:meth:`ContextPair.recorded_table`):
    a context table, or per-position rows."""
    if isinstance(model.get("target"), list):
        return position_pair(model)
    return ContextPair.from_table(model)


def replay_certificate(cert: dict, *, verifier: Verifier | None = None,
                       function: Callable | None = None,
                       max_paths: int | None = DEFAULT_MAX_PATHS) -> dict:
    """A sequence certificate written again from what ``cert`` records: its model pair,
    ``m``, ``context``, ``arith``, ``grid``, ``elementwise``, ``sum_order`` (when the run
    declared one), and the generation enumerated once more through ``verifier`` (one of
    exactspec's own, rebuilt by the checker) or ``function`` (a user's, trusted by the person
    checking).  The checker compares the two.

    >>> from exactspec.sequences.chains import Chain
    >>> from exactspec.sequences.multitoken import prove_sequence
    >>> pair = ContextPair.context_free("1/3,2/3", "2/3,1/3")
    >>> cert = prove_sequence(Chain(1), pair, 2, full_paths=True, keep_paths=True).certificate()
    >>> replay_certificate(cert, verifier=Chain(1)) == cert
    True
    """
    from .multitoken import generate

    pair = recorded_pair(cert["model"])
    m, gamma = cert["m"], cert["gamma"]
    ctx = parse_context(cert["context"], pair.labels)
    user = None
    if verifier is None:
        verifier = UserVerifier(function, gamma, name=cert["method"])
        user = cert["method"]
    arith, grid, elementwise = cert["arith"], cert["grid"], cert["elementwise"]
    sum_order = cert.get("sum_order")
    if isinstance(verifier, UserVerifier):
        def run(s):
            return _generate(s, verifier, pair, m, ctx)
    else:
        def run(s):
            return generate(s, verifier, pair, m, ctx)
    enumeration = enumerate_runs(run, keep_paths=True, max_paths=max_paths,
                                 sampler_factory=_factory(arith, grid, elementwise, sum_order))
    return sequence_certificate(enumeration, pair.joint(m, ctx), verifier=verifier, pair=pair,
                                m=m, ctx=ctx, user=user, gamma=gamma, arith=arith, grid=grid,
                                elementwise=elementwise, sum_order=sum_order)


def builtin_report(spec, *, arith: str | None = None, grid: int | None = None, tolerance=None,
                   max_paths: int | None = DEFAULT_MAX_PATHS) -> dict:
    """A built-in chain, tree or block spec (docs/tree_format.md) run as a whole-call verifier
    with its arithmetic in ``arith`` and/or its uniforms on ``grid``: the same report as
    :func:`user_report`, paired with exact arithmetic.

    >>> r = builtin_report({"target": {"": "1/2,1/2"}, "draft": {"": "1/4,3/4"}, "gamma": 1},
    ...                    arith="float32")
    >>> r["verdict"], r["bias"]  # float32(2/3) is 1/(3 * 2**24) too high; times q(1) = 3/4
    ('lossy-rounding', '1/67108864')
    """
    from .trees import load_tree_spec

    loaded = load_tree_spec(spec)
    builtin = loaded["verifier"]

    def whole_call(s, pair, ctx):
        return builtin.call(s, pair, ctx)

    whole_call.__name__ = builtin.name
    report = user_report({"m": loaded["m"], "context": context_key(loaded["context"])},
                         whole_call, pair=loaded["pair"], arith=arith, grid=grid,
                         tolerance=tolerance, max_paths=max_paths)
    report["verifier"] = {**builtin.describe(), "shape": "call", "stateful": False,
                          "function": builtin.name}
    return report


def _call_law_json(law: dict) -> dict:
    out: dict = {}
    for (tokens, _state), w in law.items():
        key = context_key(tokens)
        out[key] = out.get(key, 0) + w
    return {k: exact_str(v) for k, v in out.items() if v != 0}
