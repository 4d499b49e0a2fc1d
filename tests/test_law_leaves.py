"""Law leaves (exactspec.engine.law_leaves) against the plain walk (enumerate_paths).

The walk is the reference: every rule here gets from the law-leaf route exactly the law,
``P(Y in X)`` and the explicit acceptance of the walk, or a ``CannotProceed`` (recorded).
"""

from __future__ import annotations

import contextlib
import random
from fractions import Fraction
from pathlib import Path

import pytest

from exactspec import verify
from exactspec.core.dist import Dist, overlap, residual
from exactspec.core.errors import InvalidInput, TooLarge
from exactspec.core.exact_values import ExactFraction, exact_values
from exactspec.core.signals import CannotProceed, SignalCaught
from exactspec.engine import exact_sampler
from exactspec.engine.exact import enumerate_paths, estimate_paths
from exactspec.engine.law_leaves import LawSampler, SharedRuns, enumerate_law_leaves
from exactspec.gallery import one_draft
from exactspec.methods import METHODS, get_method
from exactspec.methods.sps import sps, sps_uniforms

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MY_RULE = get_method(f"{EXAMPLES / 'my_rule.py'}:my_rule").run
SHORTCUT = get_method(f"{EXAMPLES / 'my_rule.py'}:shortcut").run

#: Small pairs: 2-5 tokens, zeros, ties, p = q, q a point mass.
PAIRS = [
    ("1/2,3/10,1/5", "1/5,1/5,3/5"),
    ("1/2,1/2", "3/4,1/4"),
    ("1/4,1/4,1/4,1/4", "1/2,0,1/4,1/4"),
    ("0,1/3,1/3,1/3", "1/3,1/3,0,1/3"),
    ("1/2,1/4,1/4", "1,0,0"),
    ("1/5,1/5,1/5,1/5,1/5", "1/10,3/10,1/10,3/10,1/5"),
    ("1/3,2/3", "1/3,2/3"),
    ("1/8,3/8,0,1/2", "1/4,1/4,1/4,1/4"),
]


def _pairs():
    return [(Dist.parse(a), Dist.parse(b)) for a, b in PAIRS]


def _same(method, p, q, k=1, grid=None):
    """The law-leaf route's figures equal the walk's, or it declined: ``"leaves"`` /
    ``"declined: why"``."""
    plain = enumerate_paths(method, p, q, k, grid=grid)
    try:
        leaves = enumerate_law_leaves(method, p, q, k, grid=grid)
    except CannotProceed as err:
        return f"declined: {err.why}"
    assert leaves.law == plain.law
    assert leaves.acceptance == plain.acceptance
    assert leaves.explicit_acceptance == plain.explicit_acceptance
    assert leaves.total == 1
    assert (leaves.used_drafts, leaves.used_accept) == (plain.used_drafts, plain.used_accept)
    assert leaves.leaves <= plain.paths == leaves.paths
    return "leaves"


def _raises_plain(method, p, q):
    """The walk's own error for a pair the rule does not take (p = q for a residual)."""
    try:
        enumerate_paths(method, p, q)
    except InvalidInput as err:
        return err
    return None


@pytest.mark.parametrize("method", [sps, sps_uniforms, MY_RULE],
                         ids=["sps", "sps_uniforms", "my_rule"])
@pytest.mark.parametrize("grid", [None, 3, 7])
def test_one_draft_rules_take_the_route(method, grid):
    for p, q in _pairs():
        if _raises_plain(method, p, q) is not None:
            with pytest.raises(InvalidInput):
                enumerate_law_leaves(method, p, q, grid=grid)
            continue
        assert _same(method, p, q, grid=grid) == "leaves"


@pytest.mark.parametrize("grid", [None, 4])
def test_shortcut_followed_with_its_lossy_law(grid):
    """The reused uniform is not fresh: the pick is enumerated, its law the walk's."""
    for p, q in _pairs():
        if _raises_plain(SHORTCUT, p, q) is None:
            assert _same(SHORTCUT, p, q, grid=grid) == "leaves"
    p, q = Dist.parse("1/2,1/4,1/4"), Dist.parse("1,0,0")
    law = enumerate_law_leaves(SHORTCUT, p, q).law
    assert law == {0: Fraction(1, 2), 1: 0, 2: Fraction(1, 2)}     # lossy, as the walk says


def _registry_cases():
    for name, method in sorted(METHODS.items()):
        for k in (1, 2):
            if method.k_values is None or k in method.k_values:
                yield name, method, k


DECLINED: dict = {}


@pytest.mark.parametrize("name,method,k", list(_registry_cases()),
                         ids=[f"{n}-k{k}" for n, _, k in _registry_cases()])
def test_every_registered_method(name, method, k):
    outcomes = set()
    for p, q in _pairs()[:5]:
        try:
            enumerate_paths(method.run, p, q, k)
        except (InvalidInput, TooLarge, ZeroDivisionError):
            continue                       # the method does not take this pair (the walk
            #                                says so; spechub's plan divides by q's zeros)
        outcomes.add(_same(method.run, p, q, k))
    DECLINED[(name, k)] = outcomes
    if name == "sps":
        assert outcomes == {"leaves"}


GALLERY = [
    one_draft.argmax_draft, one_draft.argmax_draft_point_mass,
    one_draft.draft_from(Dist.parse("1/2,1/4,1/4")),
    one_draft.draft_and_verify_with(Dist.parse("1/4,1/4,1/2")),
    one_draft.reused_uniform, one_draft.unfiltered_target(Dist.parse("1/2,3/10,1/5")),
    one_draft.filtered_target(Dist.parse("1/2,3/10,1/5"), "0.6"),
    one_draft.accept_on_target_match, one_draft.point_mass_proposal,
]


@pytest.mark.parametrize("rule", GALLERY, ids=[rule.__name__ for rule in GALLERY])
def test_gallery_rules(rule):
    outcomes = set()
    for p, q in _pairs():
        if len(p) != 3 and rule.__name__ in ("draft_from_r", "draft_and_verify_with_r",
                                              "unfiltered_target", "filtered_target"):
            continue
        try:
            enumerate_paths(rule, p, q)
        except InvalidInput:
            continue
        outcomes.add(_same(rule, p, q))
    assert outcomes
    if rule.__name__ == "accept_on_target_match":       # compares the drawn token
        assert outcomes == {"declined: the rule compared (==) a token drawn as a law leaf "
                            "(target): law leaves do not follow a value the rule reads"}
    if rule.__name__ in ("argmax_draft_point_mass", "point_mass_proposal", "reused_uniform"):
        assert outcomes == {"leaves"}


# -- a law token cannot be read ---------------------------------------------------------------

def _resampler(use):
    """sps whose resampled token ``y`` goes through ``use(y, x, p)`` before it is returned."""
    def rule(s, p, q, k=1):
        x = s.draft(q)
        if s.coin(min(1, p[x] / q[x])):
            return s.accept(x)
        y = s.draw(residual(p, q))
        return use(s, y, x, p)
    return rule


USES = {
    "==": lambda s, y, x, p: y if y == x else x,
    "!=": lambda s, y, x, p: y if y != x else x,
    "<": lambda s, y, x, p: y if y < x else x,
    "hash": lambda s, y, x, p: y if hash(y) else y,
    "dict key": lambda s, y, x, p: {y: 1} and y,
    "in a set": lambda s, y, x, p: y if y in {0, 1} else y,
    "bool": lambda s, y, x, p: y if y else y,
    "str": lambda s, y, x, p: str(y) and y,
    "repr": lambda s, y, x, p: repr(y) and y,
    "f-string": lambda s, y, x, p: f"{y}" and y,
    "int": lambda s, y, x, p: int(y),
    "index a list": lambda s, y, x, p: list(p.labels)[y],
    "index a Dist": lambda s, y, x, p: y if p[y] > 0 else x,
    "arithmetic": lambda s, y, x, p: y + 0,
    "reflected arithmetic": lambda s, y, x, p: 0 + y,
    "isinstance": lambda s, y, x, p: y if isinstance(y, int) else x,
    "attribute": lambda s, y, x, p: y.real,
    "hasattr": lambda s, y, x, p: y if hasattr(y, "real") else x,
    "sorted": lambda s, y, x, p: sorted([y, x])[0],
    "a tuple returned": lambda s, y, x, p: (y,),
    "s.coin": lambda s, y, x, p: y if s.coin(y) else y,
    "s.accept": lambda s, y, x, p: s.accept(y),
    "s.draw": lambda s, y, x, p: s.draw(y),
    "pickle": lambda s, y, x, p: __import__("pickle").dumps(y) and y,
    "copy": lambda s, y, x, p: __import__("copy").copy(y),
}


@pytest.mark.parametrize("use", list(USES), ids=list(USES))
def test_any_use_of_a_law_token_declines(use):
    p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
    rule = _resampler(USES[use])
    with pytest.raises(CannotProceed) as info:
        enumerate_law_leaves(rule, p, q)
    assert "a token drawn as a law leaf" in info.value.why


def test_a_declined_rule_keeps_its_plain_law():
    """The walk (what verify reports) still gives the true law of a rule that reads ``y``."""
    p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
    rule = _resampler(lambda s, y, x, p: x if y == 0 else y)   # resampled 0 becomes x
    with pytest.raises(CannotProceed):
        enumerate_law_leaves(rule, p, q)
    # by hand: rejection only at x = 2 (q = 3/5, accept 1/3): weight 2/5, residual (3/4, 1/4, 0)
    expected = {0: Fraction(1, 5), 1: Fraction(1, 5) + Fraction(2, 5) * Fraction(1, 4),
                2: Fraction(1, 5) + Fraction(2, 5) * Fraction(3, 4)}
    assert enumerate_paths(rule, p, q).law == expected
    assert dict(verify(rule, p, q).law) == expected


CATCHERS = {
    "except BaseException": lambda y, x: _swallow(lambda: y == x),
    "bare except": lambda y, x: _bare(lambda: hash(y)),
    "contextlib.suppress": lambda y, x: _suppress(lambda: str(y)),
    "return in finally": lambda y, x: _finally(lambda: y < x),
}


def _swallow(f):
    try:
        return f()
    except BaseException:
        return False


def _bare(f):
    try:
        return f()
    except:  # noqa: E722
        return False


def _suppress(f):
    with contextlib.suppress(BaseException):
        return f()
    return False


def _finally(f):
    try:
        return f()
    finally:
        return False  # noqa: B012


@pytest.mark.parametrize("catch", list(CATCHERS), ids=list(CATCHERS))
def test_a_caught_refusal_never_gives_a_law(catch):
    p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
    rule = _resampler(lambda s, y, x, p: x if CATCHERS[catch](y, x) else y)
    with pytest.raises((CannotProceed, SignalCaught)):
        enumerate_law_leaves(rule, p, q)
    with pytest.raises((CannotProceed, SignalCaught)):
        enumerate_law_leaves(rule, p, q, watch=True)


@pytest.mark.parametrize("grid", [None, 5])
def test_a_comparison_that_cuts_nothing_leaves_a_uniform_fresh(grid):
    """``u < 1`` says nothing about ``u``: a pick after it is still a law leaf; ``u < 1/2``
    cuts it: the pick is enumerated (the walk's law either way)."""
    p, q = Dist.parse("1/4,1/4,1/2"), Dist.parse("1/2,1/4,1/4")

    def uncut(s, p, q, k=1):
        x = s.draft(q)
        u = s.uniform()
        if u < 1 and not u < 0:
            return s.pick(p, u)
        return x

    def cut(s, p, q, k=1):
        x = s.draft(q)
        u = s.uniform()
        if u < Fraction(1, 2):
            return s.pick(p, u)
        return x

    for rule in (uncut, cut):
        plain = enumerate_paths(rule, p, q, grid=grid)
        leaves = enumerate_law_leaves(rule, p, q, grid=grid)
        assert (leaves.law, leaves.acceptance) == (plain.law, plain.acceptance)
    assert enumerate_law_leaves(uncut, p, q, grid=grid).leaves == 3
    on_grid = {None: dict(zip(p.labels, p.probs)),      # grid 5: points 0, 1/5 | 2/5 | 3/5, 4/5
               5: {0: Fraction(2, 5), 1: Fraction(1, 5), 2: Fraction(2, 5)}}
    assert enumerate_law_leaves(uncut, p, q, grid=grid).law == on_grid[grid]


def test_a_used_up_uniform_declines():
    p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")

    def again(s, p, q, k=1):
        x = s.draft(q)
        if s.uniform() < p[x] / q[x]:
            return s.accept(x)
        u = s.uniform()
        y = s.pick(residual(p, q), u)
        return y if u < Fraction(1, 2) else x

    def twice(s, p, q, k=1):
        x = s.draft(q)
        if s.uniform() < p[x] / q[x]:
            return s.accept(x)
        u = s.uniform()
        s.pick(residual(p, q), u)
        return s.pick(residual(p, q), u)

    def combined_before(s, p, q, k=1):
        x = s.draft(q)
        u = s.uniform()
        v = 1 - u
        y = s.pick(residual(p, q), u)
        return y if v < Fraction(1, 3) else x

    for rule in (again, twice, combined_before):
        plain = enumerate_paths(rule, p, q)          # the walk follows each of them
        assert plain.total == 1
        with pytest.raises(CannotProceed) as info:
            enumerate_law_leaves(rule, p, q)
        assert "uniform" in info.value.why


def test_a_stored_token_read_on_a_later_run_declines():
    p, q = Dist.parse("1/5,2/5,2/5"), Dist.parse("1/2,1/4,1/4")   # draft 0 is rejected first
    kept = []

    def rule(s, p, q, k=1):
        if kept and kept[0] == 0:
            return 0
        x = s.draft(q)
        if s.coin(min(1, p[x] / q[x])):
            return s.accept(x)
        y = s.draw(residual(p, q))
        kept.append(y)
        return y

    with pytest.raises(CannotProceed):
        enumerate_law_leaves(rule, p, q, max_paths=None)


def test_a_token_of_an_earlier_run_returned_declines():
    p, q = Dist.parse("1/5,2/5,2/5"), Dist.parse("1/2,1/4,1/4")
    kept = []

    def rule(s, p, q, k=1):
        x = s.draft(q)
        if kept:
            return kept[0]
        if s.coin(min(1, p[x] / q[x])):
            return s.accept(x)
        kept.append(s.draw(residual(p, q)))
        return kept[0]

    with pytest.raises(CannotProceed, match="earlier run"):
        enumerate_law_leaves(rule, p, q, max_paths=None)


def test_what_the_route_does_not_take_declines():
    p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
    with pytest.raises(CannotProceed, match="float run"):
        enumerate_law_leaves(sps, p, q, arith="float32")
    with pytest.raises(CannotProceed, match="paths themselves"):
        enumerate_law_leaves(sps, p, q, keep_paths=True)
    with pytest.raises(CannotProceed, match="paths themselves"):
        enumerate_law_leaves(sps, p, q, on_path=print)


# -- what a law leaf adds --------------------------------------------------------------------

def test_acceptance_counts_the_law_on_the_drafts():
    """``P(Y in X)`` of a law leaf is its law's mass on the drafts; the explicit acceptance
    its mass on the accepted token."""
    p, q = Dist.parse("1/2,1/4,1/4"), Dist.parse("1/3,1/3,1/3")

    def resample_always(s, p, q, k=1):
        x = s.draft(q)
        s.accept(x)                                  # marked, then resampled from p
        return s.draw(p)

    plain = enumerate_paths(resample_always, p, q)
    leaves = enumerate_law_leaves(resample_always, p, q)
    assert leaves.law == plain.law == {0: Fraction(1, 2), 1: Fraction(1, 4), 2: Fraction(1, 4)}
    assert leaves.acceptance == plain.acceptance == Fraction(1, 3)       # sum_t q(t) p(t)
    assert leaves.explicit_acceptance == plain.explicit_acceptance == Fraction(1, 3)
    assert leaves.leaves == 3 and leaves.paths == plain.paths == 9

    def two_drafts(s, p, q, k=2):
        a, b = s.drafts(q, 2)
        return s.draw(p)

    plain = enumerate_paths(two_drafts, p, q)
    leaves = enumerate_law_leaves(two_drafts, p, q)
    assert leaves.acceptance == plain.acceptance
    # by hand: P(Y in {a, b}) = sum over (a, b) of q(a) q(b) p({a, b})
    by_hand = sum(Fraction(1, 9) * sum(p[t] for t in {a, b}) for a in range(3) for b in range(3))
    assert leaves.acceptance == by_hand
    assert leaves.used_accept is False and leaves.explicit_acceptance == 0


def test_a_law_with_one_token_is_that_token():
    p = Dist.parse("1/2,1/2")

    def rule(s, p, q, k=1):
        y = s.draw(Dist.parse("0,1"))
        return 0 if y == 1 else 1                    # a plain token: comparable

    assert enumerate_law_leaves(rule, p, p).law == {0: 1, 1: 0}


def test_a_token_not_of_p_refused_in_one_line():
    p = Dist.parse("1/2,1/2")
    other = Dist.parse("1/2,1/2", labels="ab")

    def rule(s, p, q, k=1):
        return s.draw(other)

    with pytest.raises(InvalidInput, match="not a token of p"):
        enumerate_law_leaves(rule, p, p)


def test_a_law_that_does_not_sum_to_one_refused_as_on_the_walk():
    p = Dist.parse("1/2,1/2")
    bad = Dist([Fraction(1, 2), Fraction(1, 3)], check=False)

    def rule(s, p, q, k=1):
        return s.draw(bad)

    with pytest.raises(InvalidInput, match="sum to 5/6"):
        enumerate_paths(rule, p, p)
    with pytest.raises(InvalidInput, match="sum to 5/6"):
        enumerate_law_leaves(rule, p, p)


def test_pick_over_unnormalised_weights():
    """``pick(w, u)`` at a fresh ``u``: the share of ``[0, 1)`` each token's interval of the
    cumulative sums covers (a total over 1 cuts the last ones off; under 1, the walk's
    refusal)."""
    p = Dist.parse("1/4,1/4,1/4,1/4")
    heavy = Dist([Fraction(1, 2), Fraction(1, 4), Fraction(1, 2), Fraction(1, 4)], check=False)

    def rule(s, p, q, k=1):
        return s.pick(heavy, s.uniform())

    for grid in (None, 3, 8):
        plain = enumerate_paths(rule, p, p, grid=grid)
        assert enumerate_law_leaves(rule, p, p, grid=grid).law == plain.law
    assert enumerate_law_leaves(rule, p, p).law == {0: Fraction(1, 2), 1: Fraction(1, 4),
                                                    2: Fraction(1, 4), 3: 0}
    light = Dist([Fraction(1, 4)] * 3 + [Fraction(0)], check=False)

    def short(s, p, q, k=1):
        return s.pick(light, s.uniform())

    with pytest.raises(InvalidInput, match="past the cumulative sums"):
        enumerate_law_leaves(short, p, p)


def test_hidden_state_refused_under_watch():
    p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
    calls = [0]

    def counter(s, p, q, k=1):
        calls[0] += 1
        x = s.draft(q)
        if calls[0] % 7 == 0:
            return x
        if s.coin(min(1, p[x] / q[x])):
            return s.accept(x)
        return s.draw(residual(p, q))

    with pytest.raises(InvalidInput, match="different results"):
        enumerate_law_leaves(counter, p, q, watch=True, max_paths=None)


def test_a_rule_that_never_stops_drawing_meets_the_call_budget(monkeypatch):
    monkeypatch.setattr(exact_sampler, "MAX_CALLS", 500)
    p = Dist.parse("1/2,1/2")

    def forever(s, p, q, k=1):
        while True:
            s.draw(p)

    with pytest.raises(TooLarge, match="sampler calls"):
        enumerate_law_leaves(forever, p, p)


# -- the size estimate and vocabulary size ---------------------------------------------------

def _row_pair(n: int, seed: int):
    rng = random.Random(seed)
    rows = [[Fraction(rng.randint(1, 12)) for _ in range(n)] for _ in range(2)]
    return Dist(rows[0], normalize=True), Dist(rows[1], normalize=True)


def test_estimate_counts_law_leaves():
    p, q = _row_pair(400, 1)
    counted = enumerate_law_leaves(sps, p, q).leaves
    shared = SharedRuns()
    estimate = estimate_paths(sps, p, q, 1, thorough=True,
                              sampler_factory=lambda: LawSampler(shared=shared))
    assert counted <= 2 * len(p)
    assert counted / 2 <= estimate <= 2 * counted          # about 2V, not V**2
    with pytest.raises(TooLarge) as info:
        enumerate_law_leaves(sps, p, q, max_paths=100)
    assert info.value.estimate <= 4 * len(p)
    assert "law leaf" in str(info.value)


def test_still_too_large_refused_up_front():
    """Two resamples compared with each other are enumerated (the second one's value is
    read), so V**2 leaves: refused by the estimate before the walk."""
    p, q = _row_pair(3000, 2)

    def reads_one(s, p, q, k=1):
        x = s.draft(q)
        y = s.draft(p)                               # a branch: V * V paths
        return x if y == x else y

    with pytest.raises(TooLarge) as info:
        enumerate_law_leaves(reads_one, p, q, max_paths=10**6)
    assert info.value.estimate > 10**6


@pytest.mark.parametrize("method", [sps, MY_RULE], ids=["sps", "my_rule"])
def test_thousands_of_tokens(method):
    p, q = _row_pair(2000, 3)
    result = enumerate_law_leaves(method, p, q, watch=method is MY_RULE)
    assert result.law == dict(zip(p.labels, p.probs))
    assert result.acceptance == result.explicit_acceptance == overlap(p, q)
    assert result.leaves <= 2 * len(p)


@pytest.mark.slow
@pytest.mark.parametrize("method", [sps, MY_RULE], ids=["sps", "my_rule"])
def test_a_real_vocabulary(method):
    p, q = _row_pair(152_064, 4)
    result = enumerate_law_leaves(method, p, q, watch=method is MY_RULE)
    assert result.law == dict(zip(p.labels, p.probs))
    assert result.acceptance == overlap(p, q)


# -- residual remembered -----------------------------------------------------------------------

def test_residual_is_remembered_per_pair():
    p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
    first = residual(p, q)
    assert residual(p, q) is first
    assert first == Dist.parse("3/4,1/4,0")
    copy = Dist.parse("1/2,3/10,1/5")
    assert residual(copy, q) is not first and residual(copy, q) == first
    others = [_row_pair(5, seed) for seed in range(10)]
    for a, b in others:
        residual(a, b)
    assert residual(p, q) is not first and residual(p, q) == first     # the memo is bounded
    with exact_values():
        inside = residual(*others[0])
        assert all(type(v) is Fraction for v in inside._probs)       # stored plain
        assert type(inside[0]) is ExactFraction                      # handed out exact
    with pytest.raises(InvalidInput, match="empty"):
        residual(p, p)
    with pytest.raises(InvalidInput, match="empty"):
        residual(p, p)


def test_the_residual_memo_is_no_hidden_state_of_a_rule():
    """A rule that closes over ``residual`` keeps no state by calling it (the memo is the
    library's), so verify's hidden-state check passes it."""
    from exactspec.engine.hidden_state import check_unchanged, state_fingerprint

    def rule(s, p, q, k=1):
        x = s.draft(q)
        if s.coin(min(1, p[x] / q[x])):
            return s.accept(x)
        return s.draw(residual(p, q))

    p, q = _row_pair(6, 11)
    before = state_fingerprint(rule)
    enumerate_law_leaves(rule, p, q)
    check_unchanged(rule, before, "rule")
    assert verify(rule, p, q).lossless


def _rows(n: int) -> list[str]:
    rng = random.Random(3)
    return [",".join(str(rng.randint(1, 9)) for _ in range(n)) for _ in "pq"]


def test_the_command_line_proves_past_the_probe_limit(monkeypatch, capsys, tmp_path):
    """The command line's limit on the path estimate's probes assumes every run reads every
    entry (the plain walk's cost): the one-draft rule's runs do not, so it is proved where the
    limit would have refused the walk (here the limit is made small enough to refuse 2,000
    entries), by the draft axis, and by law leaves for a rule the axis declines."""
    import json

    from exactspec.cli import arguments, main
    from exactspec.engine import law_leaves

    monkeypatch.setattr(arguments, "ESTIMATE_SECONDS", 0.2)
    # the law leaves' probes run under a wall-clock watchdog of twice those seconds: on a
    # loaded machine 0.4 s of wall clock may pass before they finish; what is shrunk here is
    # the probe limit's model of the walk, not that watchdog
    watched = law_leaves.supervised
    monkeypatch.setattr(law_leaves, "supervised", lambda work, *, seconds, **kw:
                        watched(work, seconds=max(seconds, 120.0), **kw))
    p, q = _rows(2000)
    code = main(["verify", "sps", "--p", p, "--q", q, "--normalize", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["lossless"] and out["route"] == "draft-axis"
    code = main(["verify", "examples/my_rule.py:my_rule", "--p", p, "--q", q, "--normalize",
                 "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["lossless"] and out["route"] == "draft-axis"
    rule = tmp_path / "hashed.py"
    rule.write_text("from exactspec import residual\n\n\n"
                    "def f(s, p, q):\n"
                    "    x = s.draft(q)\n"
                    "    assert {x: 1}[x] == 1\n"         # a hashed draft: the axis declines
                    "    if s.uniform() < p[x] / q[x]:\n"
                    "        return s.accept(x)\n"
                    "    return s.pick(residual(p, q), s.uniform())\n")
    code = main(["verify", f"{rule}:f", "--p", p, "--q", q, "--normalize", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["lossless"] and out["route"] == "law-leaves", out
    assert "hashed" in out["declined"]["draft-axis"]


def test_a_slow_rule_past_the_probe_limit_is_refused_up_front(monkeypatch, capsys, tmp_path):
    """A rule whose every run is slow (a loop over the vocabulary) meets the limit on the
    estimate's probes with law leaves too: its probes are stopped at twice the limit, and the
    path route refuses it up front, in one line with its estimate."""
    from exactspec.cli import arguments, main

    monkeypatch.setattr(arguments, "ESTIMATE_SECONDS", 0.05)
    rule = tmp_path / "slow.py"
    rule.write_text("def f(s, p, q):\n"
                    "    x = s.draft(q)\n"
                    "    total = {x: 0}[x]\n"          # a hashed draft: the axis declines
                    "    for _ in range(10**6):\n"
                    "        total += 1\n"
                    "    return x\n")
    p, q = _rows(2000)
    code = main(["verify", f"{rule}:f", "--p", p, "--q", q, "--normalize"])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "40 runs" in err and "2,000 entries" in err
