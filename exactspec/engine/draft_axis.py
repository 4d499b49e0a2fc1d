"""Draft axis: a rule written with the sampler ``s`` run once per path with its draft an axis.

Law leaves (:mod:`exactspec.engine.law_leaves`) run a one-draft rule once per draft token:
about ``1.5 V`` runs at ``V`` tokens, each a few exact operations.  Here ``s.draft(q)`` answers an
:class:`AxisToken` that stands for every token of ``q``'s support at once, and the values
read at it are :class:`AxisValue`\\ s holding one value per draft token, each computed by the
scalar operation the walk applies on that token's path (``p[x]``, ``p[x] / q[x]``, ``min(1,
r)``, ``u < r``).  The path weight holds one weight per draft token (:class:`AxisWeights`,
``q(x)`` at the draft).  Where the rule's control flow depends on the draft the run splits:

- a truth value of an axis value (``if r < 1``, the comparison ``min`` makes, ``max(p[x] -
  q[x], 0)``) that is ``True`` on some tokens and ``False`` on others is a branch point whose
  two options weigh ``1`` on the tokens taking it and ``0`` on the others: each outcome's run
  goes on with the tokens that take it;
- ``s.coin(c)`` with ``c`` read at the draft, and a comparison ``u < c`` of a fresh uniform,
  branch with the weights ``c(x)`` and ``1 - c(x)`` (``P(u < c(x))`` ideal or on the grid);
  the uniform is used up (reading it again declines);
- ``s.draw(dist)`` and a fresh uniform's ``s.pick(dist, u)`` of a law that is the same on
  every token are law tokens, as on law leaves.

So the one-draft rule and a kernel-style rule with two uniforms run their body about four
times, with ``O(V)`` exact operations each, instead of about ``1.5 V`` times.  A run that returns
the draft adds ``w(x)`` at each token ``x``; one that returns a law token adds ``(sum w) *
law``, with ``P(Y in X) = sum_x w(x) law(x)``; one that returns a fixed token adds ``sum w``
there.  ``paths`` counts the walk's paths these stand for.

Anything the axis does not follow declines (:class:`~exactspec.core.signals.CannotProceed`,
and the planner runs law leaves): a second draft, ``s.drafts`` with ``k > 1``, an axis value
hashed, turned into text or a number, used as an index, its attributes or class read by the
user's code (``isinstance``), a float or a sympy number combined with it, a law or a weight
row built from axis values, a value from an earlier run, an operation that fails on some
token (the walk raises it there and words it), and more than :data:`MAX_RUNS` runs or the
seconds of the budget.  Every refusal is counted by the route, so a rule that catches it
still declines.  ``type(v)`` and ``v is w`` are not interceptable: a rule that branches on
the exact type of a value read at its draft is not one this route is for (as for law leaves).

>>> from exactspec.core.dist import Dist
>>> from exactspec.methods.sps import sps
>>> p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
>>> result = enumerate_draft_axis(sps, p, q)
>>> result.law == {0: Fraction(1, 2), 1: Fraction(3, 10), 2: Fraction(1, 5)}, result.acceptance
(True, Fraction(3, 5))
>>> result.leaves, result.paths    # (p/q < 1 or not) x (accepted or not), the walk's 5 paths
(3, 5)
"""

from __future__ import annotations

import abc
import operator
import sys
import time
from fractions import Fraction
from typing import Callable

from ..core.dist import Dist
from ..core.exact_values import stored_probs
from ..core.integer_rows import exact_sum, reduced_fraction
from ..core.signals import CannotProceed, is_user_file
from ..torch_layer.rational_rows import rational_row
from .exact import DEFAULT_MAX_PATHS, MAX_SECONDS, check_unchanged, input_snapshot, unwatched
from .law_leaves import (FLOAT_RUN, OPAQUE, LawLeafEnumeration, LawSampler, LawToken, Opaque,
                         SharedRuns, law_of, leaf_pass, refuse_use)
from .uniform import Uniform, below_ideal, below_on_grid
from .watch import watched

__all__ = ["enumerate_draft_axis", "AxisSampler", "AxisToken", "AxisValue", "AxisWeights",
           "MAX_RUNS"]

_clock = time.perf_counter  # taken before any watch replaces the clock

#: The most runs of the body the route makes before it declines (each run costs ``O(V)``).
MAX_RUNS = 512

#: Rows at least this long are computed by :func:`~exactspec.torch_layer.rational_rows.rational_row`.
_FAST_ROW = 64

_ZERO, _ONE = Fraction(0), Fraction(1)
_ZERO_IDENTITY = (operator.add, operator.sub)
_ONE_IDENTITY = (operator.mul, operator.truediv)
_EXACT = (Fraction, int, bool)
_ABC_FILES = (abc.__file__, "<frozen abc>")
_UNIFORMS = ("exactspec.engine.uniform", "exactspec.engine.joint")
_COMPARED = (str, bytes, type(None), float)     # compared with a value read at the draft


def _decline(shared: SharedRuns, why: str):
    """Count and raise a decline of the axis (counted: a rule that catches it still
    declines)."""
    shared.refusals.append(why)
    raise CannotProceed(why)


class _Axis:
    """One draft on one run: its tokens (``q``'s support, in order, also as a list), their
    positions in ``q`` and the sampler."""

    __slots__ = ("sampler", "q", "labels", "label_list", "positions", "run", "n")

    def __init__(self, sampler, q: Dist, labels: tuple, label_list: list, positions: list):
        self.sampler, self.q, self.labels, self.positions = sampler, q, labels, positions
        self.label_list = label_list
        self.run = sampler._run
        self.n = len(labels)

    def check(self) -> None:
        """An axis value is used on its own run only."""
        s = self.sampler
        if s._run != self.run or s.axis is not self:
            _decline(s.shared, "the rule used a value read at its draft on a later run "
                               "(state kept from run to run)")

    def live(self):
        """The positions still weighing on this path (``None``: all)."""
        return self.sampler.live()


class AxisWeights:
    """A path weight per draft token (aligned with the axis; ``0`` where a token's path
    left this branch)."""

    __slots__ = ("values", "mask", "_has_zero")

    def __init__(self, values: list, mask: bool = False):
        self.values = values
        self.mask = mask          # every value the 0 or the 1 of this module (a condition)
        self._has_zero = None

    def has_zero(self) -> bool:
        """Whether some token weighs 0 (its path left this branch)."""
        if self._has_zero is None:
            self._has_zero = not all(self.values)
        return self._has_zero

    def __mul__(self, other):
        if type(other) is AxisWeights:
            xs, ys = self.values, other.values
            if other.mask:
                return AxisWeights([x if y is _ONE else _ZERO for x, y in zip(xs, ys)])
        elif type(other) in (int, Fraction):
            if other == 1:
                return self
            ys = [Fraction(other)] * len(self.values)
            xs = self.values
        else:
            raise CannotProceed("a path weight that is not an exact number on the draft axis")
        out = rational_row(operator.mul, xs, ys) if len(xs) >= _FAST_ROW else None
        return AxisWeights(out if out is not None else [x * y for x, y in zip(xs, ys)])

    __rmul__ = __mul__

    def total(self) -> Fraction:
        return exact_sum(self.values)

    def __repr__(self):  # a choice's key in the hidden-state fingerprint (the laws compared too)
        return f"AxisWeights({len(self.values)})"


def _scalar(shared: SharedRuns, b, compare: bool):
    """A plain operand of an axis operation as an exact number (a ``Fraction`` subclass as
    the ``Fraction`` it equals); ``NotImplemented`` for a uniform (its own operator decides);
    a float or any other value declines (``==``/``!=`` take any value)."""
    t = type(b)
    if t is int or t is Fraction or t is bool:
        return b
    if t in (AxisValue, AxisToken):
        return b
    if t.__module__ in _UNIFORMS:
        return NotImplemented                      # a uniform's own operator decides
    if isinstance(b, Fraction):
        return Fraction(b.numerator, b.denominator)
    if compare and t in _COMPARED:
        return b
    _decline(shared, f"the rule combined a value read at its draft with a {t.__name__}")


def _values_of(v, axis: _Axis):
    if type(v) is AxisValue:
        other = object.__getattribute__(v, "_axis")
        if other is not axis:
            other.check()
            _decline(axis.sampler.shared, "values of two drafts combined")
        return object.__getattribute__(v, "_values")
    if type(v) is AxisToken:
        return axis.label_list
    return None


#: Whole-row results remembered per enumeration (the body computes the same rows on every run).
_MEMO_ROWS = 256


def _memo_key(op, a, xs, b, ys):
    """The key of a whole-row operation: the rows by identity, plain operands by value."""
    return (op, id(xs) if xs is not None else (type(a), a),
            id(ys) if ys is not None else (type(b), b))


def _apply(axis: _Axis, op, a, b, what: str):
    """``op`` token by token on the live tokens of ``axis``: ``a``, ``b`` rows or plain
    values."""
    axis.check()
    shared = axis.sampler.shared
    n, live = axis.n, axis.live()
    xs = _values_of(a, axis)
    ys = _values_of(b, axis)
    if ys is None and xs is not None and type(b) is int and \
            ((b == 0 and op in _ZERO_IDENTITY) or (b == 1 and op in _ONE_IDENTITY)):
        return a if type(a) is AxisValue else AxisValue(shared, axis, xs)   # x - 0, x / 1
    memo = axis.sampler.memo
    if live is None:
        key = _memo_key(op, a, xs, b, ys)
        hit = memo.get(key)
        if hit is not None and hit[0] is xs and hit[1] is ys:
            return AxisValue(shared, axis, hit[2])
    try:
        if live is None:
            if xs is None:
                xs = [a] * n
            if ys is None:
                ys = [b] * n
            out = None
            if n >= _FAST_ROW:
                if type(a) is int:
                    xs = [Fraction(a)] * n
                if type(b) is int:
                    ys = [Fraction(b)] * n
                out = rational_row(op, xs, ys)
            if out is None:
                out = [op(x, y) for x, y in zip(xs, ys)]
        else:
            out = [None] * n
            for i in live:
                out[i] = op(a if xs is None else xs[i], b if ys is None else ys[i])
    except (ArithmeticError, TypeError, ValueError) as err:
        _decline(shared, f"{what} failed on some draft tokens ({type(err).__name__}): the walk "
                         "raises it on their paths")
    for v in (out if live is None else (out[i] for i in live)):
        if type(v) not in _EXACT:
            _decline(shared, f"{what} gave a {type(v).__name__} on some draft tokens")
    if live is None:
        if len(memo) >= _MEMO_ROWS:
            memo.clear()
        memo[key] = (xs, ys, out)        # the rows held, so an identity stays theirs
    return AxisValue(shared, axis, out)


def _binary(op, name: str, reverse: bool = False, compare: bool = False):
    def method(self, other):
        axis = object.__getattribute__(self, "_axis")
        other = _scalar(axis.sampler.shared, other, compare)
        if other is NotImplemented:
            return NotImplemented
        a, b = (other, self) if reverse else (self, other)
        return _apply(axis, op, a, b, f"{name} of a value read at the draft")
    method.__name__ = name
    return method


def _asked_by_user() -> bool:
    """Whether the code asking for an axis value's class (``isinstance``) is the user's:
    the frame past the ABC machinery's (``isinstance(v, Fraction)`` runs through abc.py)."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename in _ABC_FILES:
        f = f.f_back
    return f is not None and is_user_file(f.f_code.co_filename)


class AxisValue(Opaque):
    """A value read at the draft: one value per draft token (see the module's note)."""

    __slots__ = ("_axis", "_values")
    not_followed = "the draft axis does not follow a value read at the draft used so"

    def __init__(self, shared: SharedRuns, axis: _Axis, values: list):
        super().__init__(shared, "a value read at the draft")
        object.__setattr__(self, "_axis", axis)
        object.__setattr__(self, "_values", values)

    def __getattribute__(self, name):
        if name == "__class__" and not _asked_by_user():
            return AxisValue                       # Python's own operators (fractions.py)
        refuse_use(self, f"read the attribute {name!r} of")

    def __bool__(self):
        axis = object.__getattribute__(self, "_axis")
        axis.check()
        values = object.__getattribute__(self, "_values")
        return axis.sampler.axis_truth(values)

    def __neg__(self):
        return _apply(object.__getattribute__(self, "_axis"), operator.sub, 0, self, "-")

    def __pos__(self):
        return self

    def __abs__(self):
        return self if not self < 0 else -self

    __add__ = _binary(operator.add, "+")
    __radd__ = _binary(operator.add, "+", reverse=True)
    __sub__ = _binary(operator.sub, "-")
    __rsub__ = _binary(operator.sub, "-", reverse=True)
    __mul__ = _binary(operator.mul, "*")
    __rmul__ = _binary(operator.mul, "*", reverse=True)
    __truediv__ = _binary(operator.truediv, "/")
    __rtruediv__ = _binary(operator.truediv, "/", reverse=True)
    __lt__ = _binary(operator.lt, "<", compare=True)
    __le__ = _binary(operator.le, "<=", compare=True)
    __gt__ = _binary(operator.gt, ">", compare=True)
    __ge__ = _binary(operator.ge, ">=", compare=True)
    __eq__ = _binary(operator.eq, "==", compare=True)
    __ne__ = _binary(operator.ne, "!=", compare=True)
    __hash__ = Opaque.__hash__      # hashing declines (a class with __eq__ loses it)


class AxisToken(Opaque):
    """The draft: every token of ``q``'s support at once.  ``p[x]`` reads ``p`` at every
    one (an :class:`AxisValue`); ``x == t`` compares each with ``t``; the rule may return
    it and pass it to ``s.accept``; any other use declines."""

    __slots__ = ("_axis",)
    not_followed = "the draft axis does not follow the draft token used so"

    def __init__(self, shared: SharedRuns, axis: _Axis):
        super().__init__(shared, "the draft token")
        object.__setattr__(self, "_axis", axis)

    def __getattribute__(self, name):
        if name == "value_at":             # Dist.__getitem__ asks for it
            return object.__getattribute__(self, "_value_at")
        if name == "__class__" and not _asked_by_user():
            return AxisToken
        refuse_use(self, f"read the attribute {name!r} of")

    def _value_at(self, dist) -> AxisValue:
        """``dist`` read at every draft token."""
        axis = object.__getattribute__(self, "_axis")
        axis.check()
        shared = axis.sampler.shared
        if not isinstance(dist, Dist):
            _decline(shared, "the draft token used as a key of something other than a law")
        memo = axis.sampler.memo
        key = ("at", id(dist))
        hit = memo.get(key)
        if hit is not None and hit[0] is dist and hit[1] is axis.positions:
            return AxisValue(shared, axis, hit[2])
        probs = stored_probs(dist)
        if dist.labels is axis.q.labels or dist.labels == axis.q.labels:
            values = [probs[i] for i in axis.positions]
        else:
            index = dist._index
            try:
                values = [probs[index[lab]] for lab in axis.labels]
            except KeyError:
                _decline(shared, "a law read at a draft token it does not have (the walk "
                                 "words it)")
        for v in values:
            if type(v) is not Fraction and type(v) is not int:
                _decline(shared, "a law of values that are not exact rationals read at the "
                                 "draft")
        memo[key] = (dist, axis.positions, values)
        return AxisValue(shared, axis, values)

    __eq__ = _binary(operator.eq, "==", compare=True)
    __ne__ = _binary(operator.ne, "!=", compare=True)
    __hash__ = Opaque.__hash__


_AXIS_TYPES = (AxisToken, AxisValue)


def _complement(values: list) -> list:
    """``1 - v`` of each exact probability (a ``Fraction`` ``n/d`` in lowest terms gives
    ``(d - n)/d``, in lowest terms too)."""
    return [reduced_fraction(v._denominator - v._numerator, v._denominator)
            if type(v) is Fraction else 1 - v for v in values]


class AxisSampler(LawSampler):
    """The law-leaf sampler with its first draft an axis (see the module's note).

    Parameters
    ----------
    grid : int, optional
        Explicit uniforms on ``{0, 1/N, ..., (N-1)/N}``.
    shared : SharedRuns, optional
        What the runs of one enumeration share.
    max_seconds : float, optional
        Decline when the runs so far took longer (the walk's budget then decides).
    """

    def __init__(self, grid: int | None = None, shared: SharedRuns | None = None,
                 max_seconds: float | None = None, memo: dict | None = None):
        self.started = _clock()
        self.max_seconds = max_seconds
        self.memo = memo if memo is not None else {}    # rows computed, by their operands
        self.axis = None
        super().__init__(grid=grid, shared=shared)

    def _reset(self):
        super()._reset()
        self.axis = None
        self._live = (None, None)
        runs = self.shared.runs
        if runs > MAX_RUNS:
            _decline(self.shared, f"more than {MAX_RUNS:,} runs of the body on the draft axis")
        if self.max_seconds is not None and _clock() - self.started > self.max_seconds:
            _decline(self.shared, "over the seconds of its budget on the draft axis")

    def _guard(self, what: str, *args) -> None:
        for v in args:
            if type(v) in _AXIS_TYPES:
                _decline(self.shared, f"a value read at the draft passed to s.{what}")
        super()._guard(what, *args)

    def live(self):
        """The draft tokens still weighing on this path (``None``: all of them)."""
        w = self.weight
        if type(w) is not AxisWeights:
            return None
        if self._live[0] is w:
            return self._live[1]
        live = None if not w.has_zero() else [i for i, v in enumerate(w.values) if v]
        self._live = (w, live)
        return live

    # -- the draft ------------------------------------------------------------------------
    def draft(self, q, what: str = "draft"):
        """The draft: an :class:`AxisToken` over ``q``'s support, ``q(x)`` its weights."""
        if type(q) in OPAQUE or type(q) in _AXIS_TYPES or type(what) in OPAQUE:
            self._guard("draft", q, what)
        if self.axis is not None:
            _decline(self.shared, "a second draft (the axis is the first)")
        if not isinstance(q, Dist):
            _decline(self.shared, "a draft from something other than a law")
        probs = self._law(q, what)
        key = ("axis", id(q))
        hit = self.shared.options.get(key)
        if hit is None or hit[0] is not q:
            if not all(type(pr) is Fraction for pr in probs):
                _decline(self.shared, "a draft law that is not exact rationals")
            positions = [i for i, pr in enumerate(probs) if pr != 0]
            labels = tuple(q.labels[i] for i in positions)
            self.shared.trim(q)
            hit = (q, positions, labels, list(labels), [probs[i] for i in positions])
            self.shared.options[key] = hit
        _, positions, labels, label_list, weights = hit
        self._calls += 1
        self.axis = _Axis(self, q, labels, label_list, positions)
        self.weight = self.weight * AxisWeights(weights)
        token = AxisToken(self.shared, self.axis)
        self.drafted.append(token)
        return token

    def drafts(self, q, k: int, replace: bool = True) -> tuple:
        if k != 1:
            _decline(self.shared, f"{k} drafts (the axis is one draft)")
        return (self.draft(q, "draft1"),)

    # -- branch points on the axis --------------------------------------------------------
    def _axis_choice(self, kind: str, yes: list, what: str, no: list | None = None,
                     mask: bool = False) -> bool:
        """A branch point weighing ``yes[x]`` (``True``) and ``no[x]`` (``False``; by
        default ``1 - yes[x]``) on the live tokens (a token no longer live weighs 0 on
        both; its entries are not read)."""
        live = self.live()
        n = len(yes)
        if live is None:
            heads = yes
            tails = no if no is not None else _complement(yes)
            some_heads, some_tails = any(heads), any(tails)
        else:
            heads, tails = [_ZERO] * n, [_ZERO] * n
            rest = no if no is not None else _complement([yes[i] for i in live])
            for j, i in enumerate(live):
                heads[i] = yes[i]
                tails[i] = no[i] if no is not None else rest[j]
            some_heads = any(heads[i] for i in live)
            some_tails = any(tails[i] for i in live)
        options = []
        if some_heads:
            options.append((True, AxisWeights(heads, mask), what))
        if some_tails:
            options.append((False, AxisWeights(tails, mask), f"not {what}"))
        return self._choose(kind, options)

    def axis_truth(self, values: list) -> bool:
        """The truth value of an axis value: one outcome where the live tokens agree, else a
        branch point (each outcome's tokens weigh 1, the others 0)."""
        live = self.live()
        try:
            truths = [bool(v) for v in values] if live is None else \
                {i: bool(values[i]) for i in live}
        except (TypeError, ValueError):
            _decline(self.shared, "a truth value of a value read at the draft failed")
        seen = truths if live is None else truths.values()
        if all(seen):
            return True
        if not any(seen):
            return False
        if live is None:
            yes = [_ONE if t else _ZERO for t in truths]
        else:
            yes = [_ONE if truths.get(i) else _ZERO for i in range(len(values))]
        no = [_ZERO if y is _ONE else _ONE for y in yes]
        return self._axis_choice("axis", yes, "a condition on the draft", no, mask=True)

    def coin(self, prob, what: str = "coin") -> bool:
        if type(prob) is not AxisValue:
            return super().coin(prob, what)
        axis = object.__getattribute__(prob, "_axis")
        axis.check()
        values = object.__getattribute__(prob, "_values")
        live = self.live()
        for i in (range(len(values)) if live is None else live):
            v = values[i]
            t = type(v)
            if t is Fraction:
                if v._numerator < 0 or v._numerator > v._denominator:
                    break
            elif t is bool or not 0 <= v <= 1:
                break
        else:
            if any(type(v) is int for v in values):
                values = [Fraction(v) if type(v) is int else v for v in values]
            return self._axis_choice(what, values, f"{what} heads")
        _decline(self.shared, f"{what}: a probability outside [0, 1] (or a bool) on some draft "
                              "tokens (the walk words it)")

    def _split_uniform(self, u: Uniform, c, strict: bool) -> bool:
        if type(c) is not AxisValue:
            return super()._split_uniform(u, c, strict)
        axis = object.__getattribute__(c, "_axis")
        axis.check()
        if u.linked or u.spent or u.lo != 0 or u.hi != 1:
            _decline(self.shared, "a uniform compared with a value read at the draft after "
                                  "it was cut or combined")
        values = object.__getattribute__(c, "_values")
        live = self.live()
        below = [None] * len(values)
        n = self.grid
        for i in (range(len(values)) if live is None else live):
            v = values[i]
            if type(v) is not Fraction and type(v) is not int:
                _decline(self.shared, "a uniform compared with a bool read at the draft (the "
                                      "walk words it)")
            below[i] = below_ideal(v) if n is None else below_on_grid(v, n, strict)
        result = self._axis_choice("uniform", below, f"u{u.ident} {'<' if strict else '<='} "
                                                      "c[draft]")
        self._use_up(u)
        return result

    # -- laws built from axis values are not followed ----------------------------------------
    def _law(self, dist, what: str) -> list:
        seen = self._laws.get(id(dist))
        if seen is None or seen[0] is not dist:
            if any(type(v) in _AXIS_TYPES for v in stored_probs(dist)):
                _decline(self.shared, f"{what}: a law built from values read at the draft")
        return super()._law(dist, what)

    def _weights(self, dist, what: str) -> list:
        if any(type(v) in _AXIS_TYPES for v in dist.probs):
            _decline(self.shared, f"{what}: weights built from values read at the draft")
        return super()._weights(dist, what)

    def race(self, weights, noise, *, first: bool = True, what: str = "race"):
        if any(type(v) in _AXIS_TYPES for v in weights):
            _decline(self.shared, "a race over weights read at the draft")
        return super().race(weights, noise, first=first, what=what)

    def softmax(self, logits) -> list:
        if any(type(v) in _AXIS_TYPES for v in logits):
            _decline(self.shared, "a softmax of values read at the draft")
        return super().softmax(logits)

    # -- a run's leaf -------------------------------------------------------------------------
    def axis_leaf(self, y, w: AxisWeights, tally, labels) -> int:
        """Add the run's leaf to ``tally`` (:class:`~.law_leaves.LeafTally`); return the
        walk's paths it stands for beyond one."""
        axis = self.axis
        values = w.values
        live = self.live()
        rows = range(len(values)) if live is None else live
        drafted = bool(self.drafted)
        accepted = self.accepted_token if self.did_accept else None
        if accepted is not None and type(accepted) is not AxisToken:
            if type(accepted) in OPAQUE or type(accepted) is AxisValue:
                _decline(self.shared, "s.accept of something other than the draft or a token")
        if drafted:
            tally.used["drafts"] = True
        if self.did_accept:
            tally.used["accept"] = True
        total = exact_sum([values[i] for i in rows])
        if type(y) is AxisToken:
            if object.__getattribute__(y, "_axis") is not axis:
                _decline(self.shared, "the rule returned a draft of an earlier run")
            if not set(axis.labels) <= set(labels):
                _decline(self.shared, "a draft token that is not a token of p (the walk "
                                      "words it)")
            for i in rows:
                tally.tokens.add(axis.labels[i], values[i])
            tally.sums.add("acceptance", total)
            if self.did_accept:
                tally.sums.add("explicit", total if type(accepted) is AxisToken
                               else self._at_label(values, rows, accepted))
        elif type(y) is LawToken:
            if object.__getattribute__(y, "_run") != self._run:
                _decline(self.shared, "the rule returned a token drawn on an earlier run")
            law = law_of(y)
            key = id(law)
            tally.laws.setdefault(key, law)
            tally.law_leaves[key] = tally.law_leaves.get(key, 0) + len(rows)
            tally.law_weights.add(key, total)
            at_draft = None
            if drafted or type(accepted) is AxisToken:
                index = law.index
                at_draft = exact_sum(
                    [values[i] * law.probs[index[axis.labels[i]]] for i in rows
                     if axis.labels[i] in index] or [_ZERO])
            if drafted:
                tally.sums.add("acceptance", at_draft)
            if self.did_accept:
                tally.sums.add("explicit", at_draft if type(accepted) is AxisToken
                               else total * law.mass((accepted,)))
        else:
            try:
                known = y in labels
            except TypeError:
                known = False
            if type(y) in _AXIS_TYPES or type(y) in OPAQUE or not known:
                _decline(self.shared, "the rule returned something other than a token, the "
                                      "draft or a drawn token (the walk words it)")
            tally.tokens.add(y, total)
            if drafted:
                tally.sums.add("acceptance", self._at_label(values, rows, y))
            if self.did_accept:
                tally.sums.add("explicit", self._at_label(values, rows, y)
                               if type(accepted) is AxisToken
                               else total if accepted == y else _ZERO)
        return len(rows) - 1

    def _at_label(self, values, rows, label) -> Fraction:
        """The weight of the draft token ``label`` (0 when it is not live)."""
        for i in rows:
            if self.axis.labels[i] == label:
                return values[i]
        return _ZERO

    def axis_shown(self, y, w: AxisWeights) -> tuple:
        """What the hidden-state fingerprint records of an axis leaf."""
        if type(y) is AxisToken:
            shown = "draft"
        elif type(y) is LawToken:
            shown = ("law", law_of(y).digest())
        else:
            shown = y
        accepted = self.accepted_token
        return (shown, repr(w), self.did_accept,
                "draft" if type(accepted) is AxisToken else
                None if type(accepted) in OPAQUE else accepted)


def _figures(result) -> tuple:
    return (result.law, result.acceptance, result.explicit_acceptance, result.paths)


def enumerate_draft_axis(method: Callable, p, q, k: int = 1, *, grid: int | None = None,
                         max_paths: int | None = DEFAULT_MAX_PATHS, watch: bool = False,
                         max_seconds: float | None = None, arith: str | None = None,
                         keep_paths: bool = False,
                         on_path: Callable | None = None) -> LawLeafEnumeration:
    """Run ``method(s, p, q, k)`` with its draft an axis and return the exact
    :class:`~.law_leaves.LawLeafEnumeration` (``leaves`` the runs of the body, ``paths``
    the walk's paths they stand for).

    Parameters
    ----------
    method, p, q, k, grid
        As for :func:`~.law_leaves.enumerate_law_leaves`.
    max_paths : int or None
        The walk's budget: under the default, :data:`~.exact.MAX_SECONDS` seconds of runs;
        ``None`` insists (no limit of seconds; :data:`MAX_RUNS` still holds).
    watch : bool
        The method is user code: hidden randomness refused, every run made twice and
        compared, ``p`` and ``q`` checked unchanged.
    max_seconds : float, optional
        Decline past these seconds of runs.
    arith, keep_paths, on_path
        A float run, or the paths themselves, decline.

    Raises
    ------
    CannotProceed
        The axis does not follow the rule (see the module's note), or the rule never drew a
        draft (law leaves are the route).
    """
    if arith is not None:
        raise CannotProceed(FLOAT_RUN)
    if keep_paths or on_path is not None:
        raise CannotProceed("the paths themselves were asked for (one run stands for a path "
                            "per draft token)")
    if max_seconds is None and max_paths == DEFAULT_MAX_PATHS:
        max_seconds = MAX_SECONDS
    shared = SharedRuns()
    memo: dict = {}     # whole rows by their operands (pure: a second pass may reuse them)

    def factory():
        return AxisSampler(grid=grid, shared=shared, max_seconds=max_seconds, memo=memo)

    def run(s, p, q, k):
        answer = method(s, p, q, k)
        if s.axis is None:
            _decline(shared, "a run without a draft (law leaves are the route)")
        return answer

    before = (input_snapshot(p), input_snapshot(q)) if watch else None
    with watched(method) if watch else unwatched():
        result, digest = leaf_pass(run, p, q, k, factory, shared, False, None, watch)
        if watch:
            second, again = leaf_pass(run, p, q, k, factory, shared, False, None, True)
            if again != digest or _figures(second) != _figures(result):
                _decline(shared, "the runs differed when made twice (hidden state): law "
                                 "leaves word it")
    if watch:
        check_unchanged(before, p, q)
    return result
