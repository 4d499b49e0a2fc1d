"""The draft axis's values that are not enumerated per branch, and their rules.

The vectorised route (:mod:`.branched`) runs a PyTorch rule's body once with its draft as a
tensor axis (a :class:`~.branched.Branched` value: one element's value on every draft
branch).  Beside it the route keeps values it does not enumerate, each with the rules by which
the tensor layer computes with it, registered here beside its definition (:mod:`.dispatch`):

- :class:`LawIndex`: a token drawn once, kept as its law; it is cast to an integer dtype,
  multiplied by a mask element (``0``/``1``) or plus ``0``, compared with an integer where the
  answer is the same for its whole support; read as one number it has none, and anything else
  is not tracked (:class:`~exactspec.core.signals.CannotProceed`);
- :class:`Split`: ``u < c[draft]`` kept as a value; it stays one in a bool dtype, any other
  use reads it as a bool (the engine's branch point); ``torch.where`` of tokens with it is a
  :class:`Mixture` (its rule is :mod:`.branched`'s, beside ``select``);
- :class:`Mixture`: a token selected by a split, cast to an integer dtype and passed around;
- :class:`Pair`: a quantity of the pair run (ideal uniforms and the grid).

>>> token = LawIndex([Fraction(1, 2), Fraction(1, 2)], "drawn")
>>> ARITH[LawIndex](operator.mul, token, 1) is token, DECIDE[LawIndex](operator.ne, token, -1)
(True, True)
"""

from __future__ import annotations

import operator
from fractions import Fraction

from ..core.integer_rows import fractions_over, scaled_rows_sum
from ..core.signals import CannotProceed
from .context import undecided
from .dispatch import ARITH, DECIDE, register  # noqa: F401  (ARITH, DECIDE: the examples)

__all__ = ["LawIndex", "Split", "Mixture", "Pair", "no_one_value", "law_token_decide",
           "mixed_token", "reads_as_bool"]


class LawIndex:
    """A token drawn once with a known law ``probs`` (exact, summing to 1), not enumerated;
    ``row``, when given, is the law as an integer row ``(numerators, denominator)`` and
    ``probs`` is then made from it when first read; ``parts``, when given, is the law as a
    mixture ``[(weight, token, shift), ...]`` of other tokens' laws moved up by ``shift``
    (a kernel's ``v + local_id``, the running argmax across tiles), made when first read.

    ``race``: ``(noise, tokens, total, serials)`` for the winner of an exponential race kept
    as its law (:func:`~exactspec.torch_layer.noise.race_index`): the race's noise vector, the
    noise elements it ran over, their total weight, and the races (one, or the tiles merged by
    :func:`~exactspec.torch_layer.noise.race_maxima_selected`) it is the argmax of."""

    __slots__ = ("_probs", "row", "what", "race", "parts")

    def __init__(self, probs, what: str, row=None, race=None, parts=None):
        self._probs = probs
        self.row = row
        self.what = what
        self.race = race
        self.parts = parts

    @property
    def probs(self) -> list:
        if self._probs is None:
            self._probs = fractions_over(*self.row) if self.parts is None else \
                _mixed(self.parts)
        return self._probs

    def over(self, n: int) -> "LawIndex":
        """The token with its law over exactly ``n`` indices: a kernel's lanes past the
        vocabulary hold no probability (any that does is not an index), a shorter law is
        padded with zeros."""
        if self.parts is None and self.row is not None and len(self.row[0]) == n:
            return self
        probs = self.probs
        if len(probs) == n:
            return self
        if any(probs[n:]):
            raise CannotProceed(f"the {self.what} token out of range")
        return LawIndex(list(probs[:n]) + [Fraction(0)] * (n - len(probs)), self.what,
                        race=self.race)

    def support_span(self) -> tuple[int, int] | None:
        """The least and the greatest index of the law's support (``None`` where it has
        none), without making the law of a mixture: the span of a mixture of laws with
        positive weights is the union of its parts' spans, each moved by its shift (no mass
        cancels, weights and laws being non-negative).

        >>> t = mixed_token(LawIndex([Fraction(0), Fraction(1)], "a"), Fraction(1, 2),
        ...                 LawIndex([Fraction(1), Fraction(0)], "b").shifted(5), "m")
        >>> t.support_span(), t._probs is None
        ((1, 5), True)
        """
        if self._probs is None and self.parts is not None and all(
                type(w) in (int, Fraction) and w >= 0 for w, _, _ in self.parts):
            spans = [(shift + span[0], shift + span[1]) for weight, token, shift in self.parts
                     if weight for span in (token.support_span(),) if span is not None]
            if not spans:
                return None
            return min(lo for lo, _ in spans), max(hi for _, hi in spans)
        values = self.row[0] if _by_row(self) else self.probs
        lo = next((i for i, w in enumerate(values) if w), None)
        if lo is None:
            return None
        return lo, len(values) - 1 - next(i for i, w in enumerate(reversed(values)) if w)

    def shifted(self, c: int) -> "LawIndex":
        """The token plus the integer ``c >= 0``: its law moved up by ``c``."""
        return self if c == 0 else LawIndex(None, self.what, race=self.race,
                                            parts=[(Fraction(1), self, c)])

    def __repr__(self):
        return f"<{self.what} token>"

    def _refuse(self, *args):
        raise CannotProceed(f"the {self.what} token used in a computation")

    __bool__ = __index__ = __int__ = __float__ = __hash__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __truediv__ = __rtruediv__ = __floordiv__ = __mod__ = __neg__ = _refuse


def mixed_token(a: LawIndex, weight, b: LawIndex, what: str, race=None) -> LawIndex:
    """The token that is ``a`` with probability ``weight`` and ``b`` otherwise, ``a`` and
    ``b`` independent of the choice: the mixture of their laws (kept as parts, made when read).

    >>> t = mixed_token(LawIndex([Fraction(1)], "a"), Fraction(1, 4),
    ...                 LawIndex([Fraction(1)], "b").shifted(2), "mixed")
    >>> t.probs
    [Fraction(1, 4), Fraction(0, 1), Fraction(3, 4)]
    """
    parts = []
    for scale, token in ((Fraction(weight), a), (1 - Fraction(weight), b)):
        if token.parts is not None and token._probs is None:
            parts.extend((scale * w, t, sh) for w, t, sh in token.parts)
        else:
            parts.append((scale, token, 0))
    return LawIndex(None, what, race=race, parts=parts)


def _mixed(parts) -> list:
    """The law of a mixture ``[(weight, token, shift), ...]``, each token's law moved up by
    its shift (trailing zeros kept to the longest), by integers where the laws allow it: each
    token's law added where it lies, so that the tiles of a vocabulary cost their own
    lengths, not the vocabulary's each."""
    size = max(shift + _length(token) for _, token, shift in parts)
    kept = [(weight, token, shift) for weight, token, shift in parts if weight != 0]
    out = scaled_rows_sum([(weight, _law_row(token), shift) for weight, token, shift in kept],
                          size)
    if out is None:                    # laws that are not all rationals: as they are
        out = [Fraction(0)] * size
        for weight, token, shift in kept:
            probs = token.probs
            row = [0] * shift + list(probs) + [0] * (size - shift - len(probs))
            out = [a + weight * b for a, b in zip(out, row)]
    return out


def _length(token: LawIndex) -> int:
    return len(token.row[0]) if _by_row(token) else len(token.probs)


def _law_row(token: LawIndex):
    """The token's law: its integer row where it is kept as one, else its probabilities."""
    return token.row if _by_row(token) else token.probs


def _by_row(token: LawIndex) -> bool:
    return token._probs is None and token.parts is None and token.row is not None


class Split:
    """The outcome of ``u < c[draft]`` on a fresh uniform, kept as a value: ``True`` with
    probability ``below[x]`` on draft branch ``x``.

    Selecting a token with it (``torch.where``, ``masked_fill``) gives a :class:`Mixture`, and
    the engine does not branch.  Any other use reads it as a Python ``bool`` (a condition, a
    conversion, arithmetic, a reduction): the engine's branch point is made then, with the
    same two outcomes and weights the comparison would have made at once, and the split keeps
    the outcome of this path (:attr:`decided`) for every later use.
    """

    __slots__ = ("sampler", "below", "what", "decided")

    def __init__(self, sampler, below: list, what: str):
        self.sampler = sampler
        self.below = below
        self.what = what
        self.decided = None

    def __repr__(self):
        return f"<split {self.what}>" if self.decided is None else repr(self.decided)

    def __bool__(self):
        if self.decided is None:
            self.decided = self.sampler._choose_split(self.below, self.what)
        return self.decided

    def __index__(self):
        return int(bool(self))

    __int__ = __index__

    def __float__(self):
        return float(bool(self))

    def __hash__(self):
        return hash(bool(self))


def _as_bool(op, reverse=False):
    if reverse:
        return lambda self, o: op(o, bool(self))
    return lambda self, o: op(bool(self), o)


def reads_as_bool(cls: type) -> None:
    """Give ``cls`` (a value whose ``__bool__`` decides it) the operators of a Python bool:
    comparisons, ``& | ^`` and arithmetic read it as ``bool(self)`` first."""
    for name, op in (("eq", operator.eq), ("ne", operator.ne), ("lt", operator.lt),
                     ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge),
                     ("and", operator.and_), ("or", operator.or_), ("xor", operator.xor),
                     ("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                     ("truediv", operator.truediv), ("floordiv", operator.floordiv),
                     ("mod", operator.mod)):
        setattr(cls, f"__{name}__", _as_bool(op))
        if name not in ("eq", "ne", "lt", "le", "gt", "ge"):
            setattr(cls, f"__r{name}__", _as_bool(op, True))
    cls.__neg__ = lambda self: -bool(self)
    cls.__invert__ = lambda self: ~bool(self)


reads_as_bool(Split)


class Mixture:
    """A token selected by a :class:`Split`: ``a`` where it holds, else ``b`` (each a plain
    token, a :class:`Branched` one or a :class:`LawIndex`, or a mixture again).  It may be
    passed around and returned; any other use raises :class:`~exactspec.core.signals.CannotProceed` (``retry="splits"``)."""

    __slots__ = ("split", "a", "b")

    def __init__(self, split: Split, a, b):
        self.split = split
        self.a = a
        self.b = b

    def __repr__(self):
        return f"<{self.a!r} if {self.split!r} else {self.b!r}>"

    def _refuse(self, *args):
        raise CannotProceed("a token selected by a split used in a computation", retry="splits")

    __bool__ = __index__ = __int__ = __float__ = __hash__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __truediv__ = __rtruediv__ = __floordiv__ = __mod__ = __neg__ = _refuse
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = __invert__ = _refuse


class Pair(tuple):
    """A quantity of the pair run: its value with ideal uniforms and on the grid."""

    __slots__ = ()

    def __new__(cls, ideal, on_grid):
        return tuple.__new__(cls, (ideal, on_grid))


def no_one_value(v, what: str):
    """A value of the draft's branches (or a token kept as its law) has no one value."""
    raise CannotProceed(f"a value of the draft's branches {what}")


# -- the rules of a token kept as its law ------------------------------------------------

def _law_token_arith(op, a, b, arith=None):
    """A token kept as its law (:class:`LawIndex`) times a mask element 0 or 1, or plus 0: the
    token or 0 (``out.mul_(~mask).add_(tokens.mul(mask))`` writes a token where the mask
    holds); any other arithmetic on it is not tracked
    (:class:`~exactspec.core.signals.CannotProceed`)."""
    t, other = (a, b) if type(a) is LawIndex else (b, a)
    if type(other) is int:
        if op is operator.mul and other in (0, 1):
            return t if other else 0
        if other == 0 and (op is operator.add or (op is operator.sub and t is a)):
            return t
        if op is operator.add and other > 0:          # a tile's offset: v + local_id
            return t.shifted(other)
    raise CannotProceed(f"the {t.what} token used in a computation")


def _law_token_extreme(x, y, maximum: bool, dtype, extreme):
    """``maximum``/``minimum`` of a token kept as its law and an integer ``c``: the token where
    its whole support is on the kept side of ``c`` (``tl.minimum(recovered_id, vocab_size -
    1)``), ``c`` where it is on the other side; else not tracked."""
    t, c = (x, y) if type(x) is LawIndex else (y, x)
    if type(c) is int:
        span = t.support_span()            # (a mixture's law is not made for this)
        if span is None:                   # no support: every index is on the kept side
            return t
        lo, hi = span
        if (lo >= c) if maximum else (hi <= c):
            return t
        if (hi <= c) if maximum else (lo >= c):
            return c
    raise CannotProceed(f"the {t.what} token in a maximum or minimum that depends on it")


_ORDERS = (operator.lt, operator.le, operator.gt, operator.ge)


def law_token_decide(op, a, b, decide=None, truth=None) -> bool:
    """A token kept as its law compared with a plain integer: the answer when it is the same
    for every token of the law's support (``token != -1``); else not tracked."""
    t, c = (a, b) if type(a) is LawIndex else (b, a)
    if type(c) is int:
        span = t.support_span()
        if span is None:                   # no support: no answer at all
            raise CannotProceed(f"the {t.what} token compared where the answer depends on it")
        lo, hi = span
        if op in _ORDERS or (op in (operator.eq, operator.ne) and not lo <= c <= hi):
            # an order, or (in)equality to a constant outside the span: the answer at the
            # span's two ends is the answer at every index between
            answers = {op(k, c) if t is a else op(c, k) for k in (lo, hi)}
        else:
            answers = {op(k, c) if t is a else op(c, k)
                       for k, w in enumerate(t.probs) if w}
        if len(answers) == 1:
            return answers.pop()
    raise CannotProceed(f"the {t.what} token compared where the answer depends on it")


def _law_token_cast(v: LawIndex, dtype, cast):
    if dtype.kind == "int":
        return v
    raise CannotProceed("a drawn token converted to a non-integer dtype")


def _law_token_power(x, power):
    raise undecided("pow of a random value is beyond the exact method")


register(LawIndex, rank=2, arith=_law_token_arith, decide=law_token_decide,
         cast=_law_token_cast, extreme=_law_token_extreme, power=_law_token_power,
         python=no_one_value, number_test=no_one_value)


# -- the rules of a split and of a token selected by one ---------------------------------

def _split_cast(v: Split, dtype, cast):
    """A split not yet decided stays a value in a bool dtype; any other cast reads it as a
    bool (the engine's branch point)."""
    if v.decided is None and dtype.kind == "bool":
        return v
    return cast(bool(v), dtype)


def _mixture_cast(v: Mixture, dtype, cast):
    if dtype.kind == "int":
        return v
    raise CannotProceed("a token selected by a split converted to a non-integer dtype",
                        retry="splits")


register(Split, rank=0, cast=_split_cast, python=lambda v, what: bool(v),
         truth=lambda r: r)
register(Mixture, rank=0, cast=_mixture_cast)
