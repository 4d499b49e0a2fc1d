"""Chains: draft ``gamma`` tokens, verify them in one target call (Leviathan et al., Alg. 1).

Draft ``x_1 ~ q(.|c)``, ``x_2 ~ q(.|c, x_1)``, ..., ``x_gamma``.  Position ``i`` is judged by
the one-draft rule against ``p(.|c, x_<i)`` and ``q(.|c, x_<i)``; the first rejection resamples
from that position's residual ``norm(max(0, p - q))`` and discards the rest; if all ``gamma``
are accepted, a bonus token is drawn from ``p(.|c, x_1..x_gamma)``.  One call produces 1 to
``gamma + 1`` tokens (docs/math.md#chains-of-drafts).

Expected tokens per call: exactly ``1 + sum_{i<=gamma} sum_{x_1..x_i} prod_{j<=i}
min(p(x_j|x_<j), q(x_j|x_<j))`` (:func:`chain_tokens_per_call`), which is
``(1 - alpha^(gamma+1)) / (1 - alpha)`` when the acceptance is ``alpha`` at every context
(:func:`tokens_per_call_closed_form`).

>>> from exactspec.sequences.context import ContextPair
>>> from exactspec.sequences.multitoken import prove_sequence
>>> pair = constant_acceptance_pair("3/5")
>>> proof = prove_sequence(Chain(2), pair, m=3)
>>> proof.lossless, proof.tokens_per_call, tokens_per_call_closed_form("3/5", 2)
(True, Fraction(49, 25), Fraction(49, 25))

Two sequence-level bug classes live here beside the correct chain (the engine refutes them,
:mod:`exactspec.claims.trees`): :func:`first_row_bonus_chain_call`, whose bonus token reads the
first position's target row instead of the last, and :func:`kept_rejected_chain_call`, which
leaves the rejected draft token in the output.
"""

from __future__ import annotations

from fractions import Fraction

from .context import ContextPair
from ..core.dist import Dist, exact, exact_str, residual
from ..core.errors import InvalidInput
from .multitoken import Verifier

__all__ = [
    "Chain",
    "chain_call",
    "chain_tokens_per_call",
    "tokens_per_call_closed_form",
    "constant_acceptance_pair",
    "leviathan_table",
    "LEVIATHAN_TABLE_1",
    "first_row_bonus_chain_call",
    "kept_rejected_chain_call",
    "random_constant_acceptance_pair",
]


def _check_gamma(gamma) -> int:
    if isinstance(gamma, bool) or not isinstance(gamma, int) or gamma < 0:
        raise InvalidInput(f"gamma={gamma!r}: need a number of draft tokens >= 0")
    return gamma


def draft_chain(s, pair: ContextPair, ctx, gamma: int) -> list:
    """Draft ``x_1 ~ q(.|ctx)``, ``x_2 ~ q(.|ctx, x_1)``, ... ``x_gamma``: all drafts first,
    as a kernel does before the one verify pass."""
    drafts: list = []
    c = tuple(ctx)
    for i in range(gamma):
        x = s.draft(pair.draft(c), f"draft{i + 1}")
        drafts.append(x)
        c = c + (x,)
    return drafts


def chain_call(s, pair: ContextPair, ctx, gamma: int, *, lazy: bool = False) -> tuple:
    """One target call of the ``gamma``-token chain; returns the tokens it produces.

    With ``lazy=False`` (the reference, as a kernel does it) all ``gamma`` drafts are drawn
    before any is verified; ``lazy=True`` drafts ``x_{i+1}`` only once ``x_i`` is accepted,
    which has the same law (drafts after a rejection are discarded unread) and fewer paths.
    """
    ctx = tuple(ctx)
    drafts = [] if lazy else draft_chain(s, pair, ctx, gamma)
    out: tuple = ()
    for i in range(gamma):
        c = ctx + out
        p, q = pair.target(c), pair.draft(c)
        x = drafts[i] if not lazy else s.draft(q, f"draft{i + 1}")
        if not s.coin(min(1, p[x] / q[x]), f"accept{i + 1}"):
            return out + (s.draw(residual(p, q), "residual"),)
        out = out + (x,)
    return out + (s.draw(pair.target(ctx + out), "bonus"),)


class Chain(Verifier):
    """The ``gamma``-token chain with the bonus token (:func:`chain_call`).

    >>> Chain(3).describe()
    {'verifier': 'chain', 'max_tokens': 4, 'drafted': 3, 'gamma': 3, 'lazy': False}
    """

    def __init__(self, gamma: int, *, lazy: bool = False):
        self.gamma = _check_gamma(gamma)
        self.lazy = lazy
        self.name = "chain"
        self.max_tokens = self.gamma + 1
        self.drafted = self.gamma

    def call(self, s, pair, ctx):
        return chain_call(s, pair, ctx, self.gamma, lazy=self.lazy)

    def describe(self):
        return {**super().describe(), "gamma": self.gamma, "lazy": self.lazy}

    def identity(self):
        return "chain", self.gamma, {"lazy": self.lazy}

    def __repr__(self):
        return f"Chain({self.gamma}{', lazy=True' if self.lazy else ''})"


def chain_tokens_per_call(pair: ContextPair, gamma: int, ctx=()) -> Fraction:
    """Expected tokens per call of the chain, from the formula
    ``1 + sum_{i<=gamma} sum_{x_1..x_i} prod_{j<=i} min(p(x_j|x_<j), q(x_j|x_<j))``
    (no enumeration of the verifier's paths).

    >>> chain_tokens_per_call(ContextPair.context_free("1/3,2/3", "2/3,1/3"), 2)
    Fraction(19, 9)
    """
    gamma = _check_gamma(gamma)

    def accepted(c, left):
        # expected number of accepted drafts from context c with `left` positions to go
        if left == 0:
            return Fraction(0)
        p, q = pair.target(c), pair.draft(c)
        total = Fraction(0)
        for x in p.labels:
            kept = min(p[x], q[x])
            if kept:
                total += kept * (1 + accepted(c + (x,), left - 1))
        return total

    return 1 + accepted(tuple(ctx), gamma)


def tokens_per_call_closed_form(alpha, gamma: int) -> Fraction:
    """``(1 - alpha^(gamma+1)) / (1 - alpha)`` (``gamma + 1`` when ``alpha = 1``): expected
    tokens per call when every position accepts with probability ``alpha``.

    >>> tokens_per_call_closed_form("0.6", 2)
    Fraction(49, 25)
    """
    a = exact(alpha, "alpha")
    gamma = _check_gamma(gamma)
    if not 0 <= a <= 1:
        raise InvalidInput(f"alpha={alpha}: need 0 <= alpha <= 1")
    if a == 1:
        return Fraction(gamma + 1)
    return (1 - a ** (gamma + 1)) / (1 - a)


def constant_acceptance_pair(alpha) -> ContextPair:
    """A context-free pair on two tokens whose one-draft acceptance is ``alpha`` everywhere:
    ``p = (alpha, 1 - alpha)``, ``q = (1, 0)``.

    >>> constant_acceptance_pair("4/5").acceptance(("anything",))
    Fraction(4, 5)
    """
    a = exact(alpha, "alpha")
    if not 0 <= a <= 1:
        raise InvalidInput(f"alpha={alpha}: need 0 <= alpha <= 1")
    p = Dist([a, 1 - a])
    q = Dist([1, 0])
    return ContextPair.context_free(p, q, name=f"constant acceptance {alpha}")


#: Leviathan et al., Table 1: ``(alpha, gamma, expected tokens per call as printed)``.
LEVIATHAN_TABLE_1 = (("0.6", 2, "1.96"), ("0.8", 5, "3.69"), ("0.9", 10, "6.86"))


def leviathan_table(*, enumerate_engine: bool = True) -> list[dict]:
    """Table 1's rows recomputed: the closed form, the chain formula on
    :func:`constant_acceptance_pair` and (``enumerate_engine``) the exact engine, each exact,
    beside the printed two-decimal value."""
    from .multitoken import tokens_per_call

    rows = []
    for alpha, gamma, printed in LEVIATHAN_TABLE_1:
        closed = tokens_per_call_closed_form(alpha, gamma)
        pair = constant_acceptance_pair(alpha)
        row = {"alpha": exact(alpha), "gamma": gamma, "printed": printed,
               "closed_form": closed, "formula": chain_tokens_per_call(pair, gamma)}
        if enumerate_engine:
            row["enumerated"] = tokens_per_call(Chain(gamma, lazy=True), pair)
        rows.append(row)
    return rows


# -- sequence-level bug classes ------------------------------------------------------------

def first_row_bonus_chain_call(s, pair: ContextPair, ctx, gamma: int) -> tuple:
    """BUG: the bonus token is drawn from the *first* position's target ``p(.|c)`` instead of
    ``p(.|c, x_1..x_gamma)`` (a kernel that read the bonus row without the position offset).
    """
    ctx = tuple(ctx)
    drafts = draft_chain(s, pair, ctx, gamma)
    out: tuple = ()
    for i in range(gamma):
        c = ctx + out
        p, q = pair.target(c), pair.draft(c)
        x = drafts[i]
        if not s.coin(min(1, p[x] / q[x]), f"accept{i + 1}"):
            return out + (s.draw(residual(p, q), "residual"),)
        out = out + (x,)
    return out + (s.draw(pair.target(ctx), "bonus"),)      # should be pair.target(ctx + out)


def kept_rejected_chain_call(s, pair: ContextPair, ctx, gamma: int) -> tuple:
    """BUG: on the first rejection the rejected draft token stays in the output, followed by
    the residual sample (the resample was written after ``x_i`` instead of over it)."""
    ctx = tuple(ctx)
    drafts = draft_chain(s, pair, ctx, gamma)
    out: tuple = ()
    for i in range(gamma):
        c = ctx + out
        p, q = pair.target(c), pair.draft(c)
        x = drafts[i]
        if not s.coin(min(1, p[x] / q[x]), f"accept{i + 1}"):
            return out + (x, s.draw(residual(p, q), "residual"))   # should drop x
        out = out + (x,)
    return out + (s.draw(pair.target(ctx + out), "bonus"),)


def random_constant_acceptance_pair(rng, alpha, n: int, depth: int, *, denominator: int = 6
                                    ) -> ContextPair:
    """A random context-dependent pair whose one-draft acceptance is ``alpha`` at *every*
    context, though ``p`` and ``q`` change with the context: ``p = alpha a + (1 - alpha) b``,
    ``q = alpha a + (1 - alpha) c`` with ``b`` and ``c`` on disjoint random token sets, so
    ``sum min(p, q) = alpha``.  Contexts of at most ``depth`` tokens; ``rng`` is a
    ``random.Random``; ``n >= 2`` tokens."""
    import itertools

    from ..core.random_dists import random_dist
    from .context import context_key

    a_ = exact(alpha, "alpha")
    if not 0 <= a_ <= 1:
        raise InvalidInput(f"alpha={alpha}: need 0 <= alpha <= 1")
    if n < 2:
        raise InvalidInput(f"n={n}: need at least 2 tokens")
    labels = tuple(range(n))
    table: dict = {"target": {}, "draft": {}}

    def on(tokens):
        d = random_dist(rng, len(tokens), zeros=False, denominator=denominator)
        out = [Fraction(0)] * n
        for t, v in zip(tokens, d.probs):
            out[t] = v
        return out

    for k in range(depth + 1):
        for ctx in itertools.product(labels, repeat=k):
            common = list(random_dist(rng, n, denominator=denominator).probs)
            tokens = list(labels)
            rng.shuffle(tokens)
            cut = rng.randint(1, n - 1)
            b, c = on(sorted(tokens[:cut])), on(sorted(tokens[cut:]))
            key = context_key(ctx)
            table["target"][key] = [a_ * x + (1 - a_) * y for x, y in zip(common, b)]
            table["draft"][key] = [a_ * x + (1 - a_) * y for x, y in zip(common, c)]
    return ContextPair.from_table(table, name=f"random, acceptance {exact_str(a_)} everywhere")
