"""KEY by its lowest key slot (exactspec.key.min_slot) against the plain enumeration of key."""

import dataclasses
import json
import random
from fractions import Fraction

import pytest

from exactspec import Dist, verify
from exactspec.bounds.compare import exact_verification
from exactspec.claims.base import random_pair
from exactspec.claims.key import COUNTEREXAMPLES
from exactspec.cli import main
from exactspec.core.errors import InvalidInput
from exactspec.engine.merged import enumerate_merged
from exactspec.key import key_placement
from exactspec.key.min_slot import (KEY_MIN_SLOT_STEPS, lowest_slot_law, other_drafts_reason,
                                    others_never_output, selected_token_law)
from exactspec.optimum.alpha_star import optimum


def _cases():
    cases = [(p, q, k) for p, q, k in COUNTEREXAMPLES]
    cases += [(Dist.parse("1/3,1/6,1/2,0"), Dist.parse("1/4,0,1/2,1/4"), k) for k in (1, 2, 4)]
    cases += [(Dist.parse("1/2,1/2"), Dist.parse("0,1"), 3),
              (Dist.parse("1/10,9/10"), Dist.parse("1/10,9/10"), 5)]
    rng = random.Random(97)
    cases += [(*random_pair(rng, 1 + i % 6), 1 + i % 5) for i in range(30)]
    return cases


def test_min_slot_form_equals_the_plain_enumeration_of_key():
    """On counterexamples, zeros in p and q, one draftable token and random rationals on 1-6
    tokens at k = 1..5: the condition holds, and the law (entry by entry), P(Y in X) and the
    explicit acceptance equal the plain enumerations of key and of key-lazy; the states are
    at most |V| + 2."""
    for p, q, k in _cases():
        assert others_never_output(p, q, k) is None
        merged = enumerate_merged(KEY_MIN_SLOT_STEPS, p, q, k)
        for method in ("key", "key-lazy"):
            plain = verify(method, p, q, k, max_paths=None).enumeration
            assert type(plain).__name__ in ("Enumeration", "LawLeafEnumeration")  # not merged
            for t in p.labels:
                assert type(merged.law[t]) in (int, Fraction)
                assert merged.law[t] == plain.law[t]
            assert merged.acceptance == plain.acceptance
            assert merged.explicit_acceptance == plain.explicit_acceptance
        assert merged.acceptance == optimum(p, q, k).alpha_star
        assert merged.total == 1 and merged.states <= len(p.labels) + 2


def test_the_selected_token_law_is_the_winner_law():
    """The selected token's law, summed over the lowest slot, is the placement's w, which the
    placement computes another way (the pieces times each slot's average density); the
    lowest slot's law sums to 1 and is (1 - Q_j)^k - (1 - Q_(j+1))^k."""
    for p, q, k in _cases():
        plan = key_placement(p, q, k)
        assert selected_token_law(plan) == plan.winner
        lowest = lowest_slot_law(plan)
        assert sum(lowest.probs, Fraction(0)) == 1
        tails = [(1 - c) ** k for c in plan.cuts]
        assert list(lowest.probs) == [tails[j] - tails[j + 1] for j in lowest.labels]


def test_the_condition_names_a_residual_token_a_draft_could_be():
    """Where a rejection could follow at the first slot (beta < 1 there) and the residual has
    key mass later, the condition gives the reason, naming the token; merged states then
    refuse to run the shortcut directly."""
    p, q, k = Dist.parse("1/2,1/5,3/10,0"), Dist.parse("1/20,1/20,1/10,4/5"), 10
    plan = key_placement(p, q, k)
    assert other_drafts_reason(plan) is None
    half = Dist([Fraction(1, 2)] * len(p.labels), p.labels, check=False)
    doubtful = dataclasses.replace(plan, beta=half, _cache={})
    reason = other_drafts_reason(doubtful)
    assert reason is not None and "of the residual has key mass in slot" in reason
    assert other_drafts_reason(dataclasses.replace(plan, k=1, beta=half, _cache={})) is None

    never = dataclasses.replace(KEY_MIN_SLOT_STEPS, condition=lambda p, q, k: "not here")
    with pytest.raises(InvalidInput, match="key-min-slot does not apply here: not here"):
        enumerate_merged(never, p, q, k)


def test_verify_key_at_hundreds_of_tokens_by_the_lowest_slot(tmp_path, capsys):
    """verify key --k 4 on 300 seeded tokens: merged states by the shortcut, law p and
    P(Y in X) = alpha* exactly, at most |V| + 2 states; the same from the command line."""
    rng = random.Random(3)
    n = 300
    rows = []
    for _ in range(2):
        weights = [rng.randint(1, 1000) for _ in range(n)]
        rows.append([Fraction(w, sum(weights)) for w in weights])
    p, q = Dist(rows[0]), Dist(rows[1])
    r = exact_verification("key", p, q, 4)
    assert r.route == "merged-states" and r.enumeration.form == "key-min-slot"
    assert r.lossless and r.acceptance == r.explicit_acceptance == optimum(p, q, 4).alpha_star
    assert r.enumeration.states <= n + 2
    for name, row in (("p.json", rows[0]), ("q.json", rows[1])):
        (tmp_path / name).write_text(json.dumps([str(v) for v in row]))
    code = main(["verify", "key", "--p", "@" + str(tmp_path / "p.json"), "--q",
                 "@" + str(tmp_path / "q.json"), "--k", "4", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["lossless"] and out["stepped_form"] == "key-min-slot"
    assert out["acceptance"] == str(optimum(p, q, 4).alpha_star)
