"""The size estimate of the exact walk (:func:`exactspec.engine.estimate_paths`) against the
counted number of paths, and the refusals sized by it."""

from fractions import Fraction as F

import pytest

from exactspec.core.dist import Dist
from exactspec.core.errors import TooLarge
from exactspec.engine import enumerate_paths, estimate_paths
from exactspec.methods import get_method

# the instance of ``exactspec compare --p 3,1,4,1,5,9,2,6,5,3,5 --q 2,7,1,8,2,8,1,8,2,8,4
# --normalize``: key-lazy's draft-count chain over 11 tokens
P = Dist([F(v, 44) for v in (3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5)])
Q = Dist([F(v, 51) for v in (2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4)])
KEY_LAZY = get_method("key-lazy").run


class FakeClock:
    """A clock that advances by ``step`` seconds at every reading."""

    def __init__(self, step):
        self.step, self.now, self.readings = step, 0.0, 0

    def __call__(self):
        self.readings += 1
        self.now += self.step
        return self.now


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    """The engine's clock (``exactspec.engine.path_estimate.clock``: the median seconds of a path
    that the seconds budget multiplies, the cut of a round past ``MAX_SECONDS / 10``) moves
    a microsecond a reading, so that no estimate or refusal here depends on the machine; a
    test sets ``clock.step`` for the seconds a path takes."""
    from exactspec.engine import path_estimate

    fake = FakeClock(1e-6)
    monkeypatch.setattr(path_estimate, "clock", fake)
    return fake


def test_a_small_tree_is_counted_exactly():
    p, q = Dist.parse("1/2,1/5,3/10"), Dist.parse("1/10,3/5,3/10")
    for name, k in (("key-lazy", 2), ("rrs", 2), ("sps", 1), ("optimal", 2)):
        run = get_method(name).run
        counted = enumerate_paths(run, p, q, k, max_paths=None).paths
        assert estimate_paths(run, p, q, k, probes=10**4, thorough=True) == counted


def test_a_uniform_tree_is_estimated_exactly_past_the_kept_nodes():
    q = Dist([F(1, 10)] * 10)

    def many(s, p, q, k):
        s.drafts(q, k)
        return s.draw(p)

    # every node of a level has the same subtree: any choice of kept nodes gives 10**9
    assert estimate_paths(many, q, q, 8, thorough=True) == 10**9
    assert estimate_paths(many, q, q, 8, probes=7, seed=5, thorough=True) == 10**9


def test_one_node_per_level_is_knuths_estimator():
    # one kept node: a uniform child each level, weighted by the product of the arities
    q = Dist([F(1, 3)] * 3)

    def chain(s, p, q, k):
        x = s.draw(q)
        if x == 0:
            return s.draw(q)
        return x

    seen = {estimate_paths(chain, q, q, 1, probes=1, seed=seed, thorough=True)
            for seed in range(40)}
    assert seen == {3, 9}                  # root 3 * (branch 0: 3 leaves | others: 1 leaf)


def test_key_lazy_estimate_is_close_where_random_probes_fall_short():
    # a random path gives most drafts to the first tokens; the paths that spread them open
    # the most key branches: 40 independent probes estimated about a sixth of k = 6's
    # 213,773 paths; keeping nodes level by level follows the real tree
    counted = enumerate_paths(KEY_LAZY, P, Q, 4, max_paths=None).paths
    assert counted == 9490
    estimate = estimate_paths(KEY_LAZY, P, Q, 4, probes=160, thorough=True)
    assert counted / 2 < estimate < 2 * counted
    # k = 6: 213,773 paths (counted by merged states in test_key_lazy_merged.py); Knuth's
    # 40 probes say about a sixth of it, the level-by-level rounds come within a factor 2
    assert estimate_paths(KEY_LAZY, P, Q, 6, thorough=False) < 213_773 / 2
    assert 213_773 / 2 < estimate_paths(KEY_LAZY, P, Q, 6, max_paths=10**6) < 2 * 213_773


def test_key_lazy_over_budget_is_refused_up_front_not_in_flight():
    # k = 6 has 213,773 paths (counted once, about 30 s); a budget of 100,000 is refused by
    # the estimate before the walk starts, with the estimate in the message
    with pytest.raises(TooLarge, match=r"^about [\d,]+ paths to enumerate") as err:
        enumerate_paths(KEY_LAZY, P, Q, 6, max_paths=100_000)
    assert 100_000 < err.value.estimate < 2 * 213_773


def test_a_seconds_budget_is_refused_up_front(clock):
    clock.step = 1e-3                                     # a millisecond a path
    with pytest.raises(TooLarge, match=r"^about [\d,]+ paths at about 0.001 s each: about "
                       r"[\d,]+ s of exact work, over the budget of 1 s") as err:
        enumerate_paths(KEY_LAZY, P, Q, 6, max_paths=10**7, max_seconds=1)
    assert err.value.estimate > 100_000


def test_the_seconds_budget_is_the_estimate_times_the_seconds_of_a_path(clock):
    """k = 4 (9,490 paths, some thousands estimated): at a millisecond a path over a budget of
    1 s, refused before the walk (the method ran only for the estimate); at ten microseconds
    a path within it, enumerated."""
    calls = []

    def counting(s, p, q, k):
        calls.append(1)
        return KEY_LAZY(s, p, q, k)

    clock.step = 1e-3
    with pytest.raises(TooLarge, match=r"at about 0.001 s each: about [\d,]+ s of exact "
                       r"work, over the budget of 1 s") as err:
        enumerate_paths(counting, P, Q, 4, max_paths=10**7, max_seconds=1)
    assert 1_000 < err.value.estimate < 2 * 9490 and len(calls) < 9490
    clock.step = 1e-5
    assert enumerate_paths(counting, P, Q, 4, max_paths=10**7, max_seconds=1).paths == 9490


def test_knuths_probes_unless_a_budget_is_near():
    # without a budget, or far below one, the estimate is Knuth's 40 probes (as cheap as 40
    # paths); within a hundredfold of a budget it is redone level by level
    def counted_only(**budget):
        return estimate_paths(KEY_LAZY, P, Q, 6, **budget)

    knuth = estimate_paths(KEY_LAZY, P, Q, 6, thorough=False)
    assert counted_only() == knuth == counted_only(max_paths=10**9)
    assert counted_only(max_paths=10**6) == estimate_paths(KEY_LAZY, P, Q, 6, max_paths=10**6,
                                                           thorough=True) != knuth


def test_level_rounds_stop_once_far_under_every_budget():
    """The level-by-level rounds are refined only while a size decision is near: an estimate
    under a twentieth of the budget (``ROUND_MARGIN``) after its first round stands, one
    closer to the budget takes more rounds (more runs of the method)."""
    from exactspec.engine import exact

    calls = []

    def counting(s, p, q, k):
        calls.append(1)
        return KEY_LAZY(s, p, q, k)

    def runs(**budget):
        calls.clear()
        estimate = estimate_paths(counting, P, Q, 6, thorough=True, **budget)
        return estimate, len(calls)

    first, few = runs(max_paths=10**8)                   # 10**8 / 20 is far above the paths
    refined, many = runs(max_paths=10**6)                # 10**6 / 20 is not: refined
    assert exact.ROUND_MARGIN == 20 and many > 3 * few
    assert 213_773 / 2 < refined < 2 * 213_773 and 213_773 / 3 < first < 3 * 213_773
