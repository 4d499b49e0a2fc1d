"""Multi-token verification: one target call, several tokens; their joint law, proved exactly.

A *verifier* here is one target call: ``call(s, pair, ctx) -> tuple of tokens``, written
against the sampling interface ``s`` (:mod:`exactspec.engine`) over a context-dependent
:class:`~exactspec.sequences.context.ContextPair`.  It drafts, verifies and returns the tokens it produced
(at least one).  Chains (:mod:`exactspec.sequences.chains`), token trees (:mod:`exactspec.sequences.trees`) and
block verification (:mod:`exactspec.sequences.block`) are verifiers; so is any function of that shape.

Generation calls the verifier again and again, each call continuing the context with the
tokens produced so far, until at least ``m`` tokens exist.  The claim to check is that the
first ``m`` tokens follow the target's joint law ``prod_i p(x_i | ctx, x_<i)`` exactly.

Two exact ways to get the law of the first ``m`` tokens:

- **full paths** (:func:`generation_law`): enumerate every random path of the whole
  generation, all calls in one run (the reference semantics; paths can be listed and
  certified);
- **composed** (:func:`joint_law`): enumerate *one* call from each context that can be
  reached, then compose.  Sound because a call reads nothing but its context, so the calls
  form a Markov chain on contexts; the work is a sum, not a product, over calls.

Tests check that both agree.

>>> from exactspec.sequences.context import ContextPair
>>> from exactspec.sequences.chains import Chain
>>> pair = ContextPair.context_free("1/3,2/3", "2/3,1/3")
>>> proof = prove_sequence(Chain(2), pair, m=3)
>>> proof.lossless, proof.tokens_per_call
(True, Fraction(19, 9))
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable

from .context import ContextPair, context_key
from ..core.dist import exact_str, law_distance
from ..engine.exact import DEFAULT_MAX_PATHS
from ..engine.runs import RunEnumeration, enumerate_runs
from ..core.errors import InvalidInput

__all__ = [
    "Verifier",
    "check_branching",
    "FunctionVerifier",
    "as_verifier",
    "generate",
    "call_law",
    "joint_law",
    "generation_law",
    "tokens_per_call",
    "SequenceProof",
    "prove_sequence",
    "sequence_certificate",
    "simulate_calls",
]


class Verifier:
    """The contract of a multi-token verifier: ``call(s, pair, ctx) -> tuple of tokens``.

    Subclasses set ``name`` and implement :meth:`call`; ``max_tokens`` is the most tokens one
    call can produce and ``drafted`` the number of draft tokens one call drafts (for a tree,
    its size without the root).
    """

    name = "verifier"
    max_tokens: int = 1
    drafted: int = 0

    def call(self, s, pair: ContextPair, ctx: tuple) -> tuple:
        raise NotImplementedError

    def __call__(self, s, pair, ctx=()):
        return self.call(s, pair, tuple(ctx))

    def describe(self) -> dict:
        """A JSON-ready description (for reports)."""
        return {"verifier": self.name, "max_tokens": self.max_tokens, "drafted": self.drafted}

    def identity(self) -> tuple | None:
        """``(name, gamma, parameters)`` under which the registry of exactspec's sequence
        verifiers (:mod:`exactspec.gallery.sequence_verifiers`) rebuilds this verifier for a
        certificate's replay, or ``None`` (a verifier exactspec does not ship: a
        certificate of it is replayed only through a function the person checking trusts)."""
        return None

    def __repr__(self):
        return f"{type(self).__name__}({self.name})"


@dataclass(frozen=True, repr=False)
class FunctionVerifier(Verifier):
    """A verifier given as a plain function ``f(s, pair, ctx) -> tuple``."""

    function: Callable
    name: str = "function"
    max_tokens: int = 1
    drafted: int = 0
    #: ``(name, gamma, ((parameter, value), ...))`` when exactspec's registry of sequence
    #: verifiers rebuilds this one (its own bug classes), else ``None``.
    registered: tuple | None = None

    def call(self, s, pair, ctx):
        return self.function(s, pair, ctx)

    def identity(self):
        if self.registered is None:
            return None
        name, gamma, parameters = self.registered
        return name, gamma, dict(parameters)


def as_verifier(obj, *, max_tokens: int = 1, drafted: int = 0) -> Verifier:
    """A :class:`Verifier`, or a function ``f(s, pair, ctx)`` wrapped as one."""
    if isinstance(obj, Verifier):
        return obj
    if callable(obj):
        return FunctionVerifier(obj, getattr(obj, "__name__", "function"), max_tokens, drafted)
    raise InvalidInput(f"{obj!r} is not a verifier: give a Verifier or f(s, pair, ctx)")


def _checked_call(verifier: Verifier, s, pair, ctx) -> tuple:
    out = verifier.call(s, pair, ctx)
    if not isinstance(out, tuple) or not out:
        raise InvalidInput(f"{verifier.name}: a call must return a non-empty tuple of tokens, "
                           f"got {out!r}")
    return out


def generate(s, verifier, pair: ContextPair, m: int, ctx=()) -> tuple:
    """Call ``verifier`` until at least ``m`` tokens exist; return the first ``m``.

    Written against the sampling interface, so it runs exactly (every path), by sampling, or
    inside any other run.
    """
    verifier = as_verifier(verifier)
    ctx = tuple(ctx)
    out: tuple = ()
    while len(out) < m:
        out = out + _checked_call(verifier, s, pair, ctx + out)
    return out[:m]


def call_law(verifier, pair: ContextPair, ctx=(), *, keep_paths: bool = False,
             max_paths: int | None = DEFAULT_MAX_PATHS) -> RunEnumeration:
    """The exact law of the tokens one call produces from ``ctx`` (every path enumerated)."""
    verifier = as_verifier(verifier)
    ctx = tuple(ctx)
    return enumerate_runs(lambda s: _checked_call(verifier, s, pair, ctx),
                          keep_paths=keep_paths, max_paths=max_paths)


def tokens_per_call(verifier, pair: ContextPair, ctx=(), *,
                    max_paths: int | None = DEFAULT_MAX_PATHS) -> Fraction:
    """The exact expected number of tokens one target call produces from ``ctx``."""
    return call_law(verifier, pair, ctx, max_paths=max_paths).expectation(len)


def _check_m(m) -> int:
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise InvalidInput(f"m={m!r}: need a number of tokens >= 1")
    return m


def joint_law(verifier, pair: ContextPair, m: int, ctx=(), *,
              max_paths: int | None = DEFAULT_MAX_PATHS, stats: dict | None = None) -> dict:
    """The exact law of the first ``m`` generated tokens, composed from one-call laws.

    Each reachable context's call is enumerated once (every path); the laws are composed
    along the Markov chain of contexts.  ``stats``, if given, receives ``paths`` (paths
    enumerated, all calls together) and ``calls`` (contexts enumerated).
    """
    verifier = as_verifier(verifier)
    m = _check_m(m)
    ctx = tuple(ctx)
    calls: dict = {}
    memo: dict = {}
    counts = {"paths": 0, "calls": 0}

    def one_call(c):
        hit = calls.get(c)
        if hit is None:
            result = call_law(verifier, pair, c, max_paths=max_paths)
            counts["paths"] += result.paths
            counts["calls"] += 1
            hit = calls[c] = result.law
        return hit

    def rest(c, left):
        key = (c, left)
        if key in memo:
            return memo[key]
        out: dict = {}
        for tokens, w in one_call(c).items():
            if w == 0:
                continue
            if len(tokens) >= left:
                head = tokens[:left]
                out[head] = out.get(head, 0) + w
            else:
                for tail, w2 in rest(c + tokens, left - len(tokens)).items():
                    seq = tokens + tail
                    out[seq] = out.get(seq, 0) + w * w2
        memo[key] = out
        return out

    law = rest(ctx, m)
    if stats is not None:
        stats.update(counts)
    return law


def generation_law(verifier, pair: ContextPair, m: int, ctx=(), *, keep_paths: bool = False,
                   max_paths: int | None = DEFAULT_MAX_PATHS) -> RunEnumeration:
    """The law of the first ``m`` generated tokens with every path of the whole generation
    enumerated in one run (the reference; ``keep_paths=True`` for certificates)."""
    verifier = as_verifier(verifier)
    m = _check_m(m)
    ctx = tuple(ctx)
    return enumerate_runs(lambda s: generate(s, verifier, pair, m, ctx), keep_paths=keep_paths,
                          max_paths=max_paths)


@dataclass
class SequenceProof:
    """The exact verdict on the first ``m`` tokens a verifier generates from ``ctx``.

    ``law`` and ``target`` map every ``m``-tuple (zeros included) to its probability;
    ``lossless`` is True when they are equal; ``differs`` lists the tuples where they are not;
    ``tv`` is ``TV(law, target)``; ``tokens_per_call`` is the exact expected number of tokens
    of one call from ``ctx``.
    """

    verifier: Verifier
    pair: ContextPair
    m: int
    ctx: tuple
    law: dict
    target: dict
    tokens_per_call: Fraction
    paths: int
    calls: int
    enumeration: RunEnumeration | None = None
    seconds: float = 0.0
    _differs: list | None = field(default=None, repr=False)

    @property
    def differs(self) -> list:
        if self._differs is None:
            self._differs = [t for t in self.target if self.law.get(t, 0) != self.target[t]]
        return self._differs

    @property
    def lossless(self) -> bool:
        return not self.differs

    @property
    def tv(self) -> Fraction:
        return law_distance(self.law, self.target)

    def nonzero_law(self) -> dict:
        """The output law without its zero entries."""
        return {t: w for t, w in self.law.items() if w != 0}

    def to_json(self) -> dict:
        """JSON-ready: exact values as strings, sequences as comma-joined labels."""
        out: dict[str, Any] = {
            "verifier": self.verifier.describe(),
            "m": self.m,
            "context": context_key(self.ctx),
            "lossless": self.lossless,
            "law": {context_key(t): exact_str(w) for t, w in self.law.items() if w != 0},
            "target": {context_key(t): exact_str(w) for t, w in self.target.items() if w != 0},
            "tokens_per_call": exact_str(self.tokens_per_call),
            "tokens_per_call_float": float(self.tokens_per_call),
            "paths": self.paths,
            "calls_enumerated": self.calls,
        }
        if not self.lossless:
            out["differs"] = [context_key(t) for t in self.differs]
            out["tv"] = exact_str(self.tv)
            out["tv_float"] = float(self.tv)
        return out

    def certificate(self) -> dict:
        """Every path of the whole generation, for the independent checker (needs
        ``prove_sequence(..., full_paths=True, keep_paths=True)``)."""
        if self.enumeration is None or self.enumeration.path_list is None:
            raise InvalidInput("a certificate needs every path: prove_sequence(..., "
                               "full_paths=True, keep_paths=True)")
        return sequence_certificate(self.enumeration, self.target, verifier=self.verifier,
                                    pair=self.pair, m=self.m, ctx=self.ctx)


def sequence_certificate(enumeration: RunEnumeration, target: dict, *, verifier: Verifier,
                         pair: ContextPair, m: int, ctx=(), user: str | None = None,
                         gamma: int | None = None, arith: str | None = None,
                         grid: int | None = None, elementwise: str = "correct",
                         sum_order: str | None = None) -> dict:
    """A checker certificate whose tokens are ``m``-tuples written ``"a,b"``: every path with
    its branch probabilities and output; ``claim`` is ``lossless`` when the law equals
    ``target``, else ``law`` (the paths must add up to the recorded law).

    It records what a replay needs: the model pair (``model``: the context table, or the
    per-position rows, exact), ``m``, ``context``, ``arith``, ``grid``, ``elementwise``,
    ``sum_order`` (only when a float run declared the order of its long sums), and the
    verifier: one of exactspec's own (``method`` its registry name, ``gamma`` and
    ``parameters`` as :meth:`Verifier.identity` gives them) or a user's (``user``: its
    ``file.py:function``, a label only: the checker replays it with ``--trust`` alone).
    """
    if enumeration.path_list is None:
        raise InvalidInput("a certificate needs keep_paths=True")
    law = {t: enumeration.law.get(t, 0) for t in target}
    extra = [t for t in enumeration.law if t not in target]
    if extra:
        raise InvalidInput(f"output {extra[0]!r} is not an m-tuple of the vocabulary")
    lossless = all(law[t] == target[t] for t in target)
    identity = None if user is not None else verifier.identity()
    if identity is None:
        name, parameters = (user if user is not None else verifier.name), {}
    else:
        name, gamma, parameters = identity
    cert = {
        "kind": "exactspec-certificate",
        "version": 2,
        "method": name,
        "user": identity is None,
        "gamma": gamma,
        "parameters": parameters,
        "model": pair.recorded_table(),
        "arith": arith,
        "grid": grid,
        "elementwise": elementwise,
        "m": m,
        "context": context_key(ctx),
        "claim": "lossless" if lossless else "law",
        "target": {context_key(t): exact_str(w) for t, w in target.items()},
        "law": {context_key(t): exact_str(w) for t, w in law.items()},
        "paths": [
            {"branches": [[kind, what, exact_str(prob)] for kind, what, prob in path.branches],
             "probability": exact_str(path.weight),
             "output": context_key(path.output),
             "drafts": [str(x) for x in path.drafts]}
            for path in enumeration.path_list
        ],
    }
    if sum_order is not None:
        cert["sum_order"] = sum_order
    return cert


def prove_sequence(verifier, pair: ContextPair, m: int | None = None, ctx=(), *,
                   full_paths: bool = False, keep_paths: bool = False,
                   max_paths: int | None = DEFAULT_MAX_PATHS) -> SequenceProof:
    """Prove or refute that the first ``m`` generated tokens follow the target's joint law.

    Parameters
    ----------
    m : int, optional
        Tokens to check; default ``verifier.max_tokens`` (one full call and its bonus token).
    full_paths : bool
        Enumerate the whole generation in one run (:func:`generation_law`) instead of
        composing one-call laws (:func:`joint_law`); needed for :meth:`SequenceProof.certificate`
        (with ``keep_paths=True``).
    """
    verifier = as_verifier(verifier)
    m = _check_m(m if m is not None else max(1, verifier.max_tokens))
    ctx = tuple(ctx)
    user = _user_call(verifier)
    if user is None:
        return _prove_sequence(verifier, pair, m, ctx, full_paths, keep_paths, max_paths)
    from ..engine.hidden_state import HiddenState, check_unchanged, state_fingerprint
    from ..engine.watch import watched

    with watched(user):          # a user's verifier: hidden randomness and state refused
        before = state_fingerprint(user)
        try:
            first = call_law(verifier, pair, ctx, max_paths=max_paths).law
            proof = _prove_sequence(verifier, pair, m, ctx, full_paths, keep_paths, max_paths)
            again = call_law(verifier, pair, ctx, max_paths=max_paths).law
        except InvalidInput:     # a replay that went another way: name the state if it can
            check_unchanged(user, before, verifier.name)
            raise
        check_unchanged(user, before, verifier.name)
        if again != first:
            raise HiddenState(
                f"{verifier.name} keeps hidden state: its first call, enumerated again after "
                "the proof, has another law, so its calls depend on what ran before; make "
                "each call depend only on its inputs")
    return proof


def _user_call(verifier: Verifier):
    """The user's code a verifier runs (its function, or its own ``call`` method), or
    ``None`` for exactspec's own verifiers."""
    from ..core.signals import is_user_file

    function = getattr(verifier, "function", None)
    if not callable(function):
        function = verifier.call
    code = getattr(getattr(function, "__func__", function), "__code__", None)
    return function if code is not None and is_user_file(code.co_filename) else None


def _prove_sequence(verifier, pair, m, ctx, full_paths, keep_paths, max_paths):
    start = time.perf_counter()
    target = pair.joint(m, ctx)
    enumeration = None
    if full_paths:
        enumeration = generation_law(verifier, pair, m, ctx, keep_paths=keep_paths,
                                     max_paths=max_paths)
        law, paths, calls = dict(enumeration.law), enumeration.paths, 0
    else:
        stats: dict = {}
        law = joint_law(verifier, pair, m, ctx, max_paths=max_paths, stats=stats)
        paths, calls = stats["paths"], stats["calls"]
    extra = [t for t in law if t not in target]
    if extra:
        raise InvalidInput(f"{verifier.name} produced {extra[0]!r}, not a sequence of tokens "
                           f"of the vocabulary {list(pair.labels)}")
    full_law = {t: law.get(t, Fraction(0)) for t in target}
    tpc = tokens_per_call(verifier, pair, ctx, max_paths=max_paths)
    return SequenceProof(verifier, pair, m, ctx, full_law, target, tpc, paths, calls,
                         enumeration, time.perf_counter() - start)


def all_sequences(labels, m: int) -> list:
    """Every ``m``-tuple over ``labels``."""
    return list(itertools.product(labels, repeat=m))


def simulate_calls(verifier, pair: ContextPair, n: int, ctx=(), *, seed: int = 0) -> list:
    """Sample ``n`` calls from ``ctx`` with a seeded NumPy generator (never a proof); returns
    the produced token tuples."""
    import numpy as np

    from ..engine.sampling import RandomSampler

    verifier = as_verifier(verifier)
    s = RandomSampler(np.random.default_rng(seed))
    out = []
    for _ in range(n):
        s._reset()
        out.append(_checked_call(verifier, s, pair, tuple(ctx)))
    return out


def check_branching(branching) -> tuple:
    """A tree's shape: children per depth, each an integer >= 1 (``[2, 2]``)."""
    try:
        b = tuple(branching)
    except TypeError:
        raise InvalidInput(f"branching={branching!r}: give children per depth, e.g. [2, 2]"
                           ) from None
    for v in b:
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InvalidInput(f"branching={list(b)}: every depth needs an integer number of "
                               f"children >= 1, got {v!r}")
    return b
