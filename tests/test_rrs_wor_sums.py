"""RRS without replacement at k = 2 by sorted sums (exactspec.methods.rrs_wor_sums) against the
plain enumeration and merged states, and the route that runs them."""

import random
from fractions import Fraction

import pytest

from exactspec import Dist, verify
from exactspec.bounds.compare import exact_verification
from exactspec.claims.base import random_pair
from exactspec.cli import main
from exactspec.core.errors import TooLarge
from exactspec.core.signals import CannotProceed
from exactspec.engine.merged import enumerate_merged
from exactspec.methods import rrs_wor_sums
from exactspec.methods.rrs_wor import RRS_WOR_STEPS
from exactspec.methods.rrs_wor_sums import projected_seconds, sum_bits, two_draft_sums
from exactspec.optimum.alpha_star import optimum


def _seeded(n, seed, top=1000):
    rng = random.Random(seed)
    rows = []
    for _ in range(2):
        weights = [rng.randint(1, top) for _ in range(n)]
        rows.append(Dist([Fraction(w, sum(weights)) for w in weights]))
    return rows


CASES = [(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")),
         (Dist.parse("1/2,1/2,0"), Dist.parse("1/3,1/3,1/3")),       # p = 0 < q
         (Dist.parse("1/3,1/3,1/3"), Dist.parse("1/3,1/3,1/3")),     # p = q: no rejection
         (Dist.parse("0,1/2,1/2"), Dist.parse("1/2,1/2,0")),         # q = 0 < p
         (Dist.parse("1/4,1/4,1/4,1/4"), Dist.parse("1/2,1/4,1/8,1/8")),   # tied q values
         (Dist.parse("1/10,1/10,4/5"), Dist.parse("2/5,2/5,1/5"))]


def test_sorted_sums_equal_the_plain_enumeration():
    """Law entry by entry, P(Y in X), explicit acceptance and the number of paths equal the
    plain enumeration's, on zeros of p and of q, p = q, tied draft probabilities and random
    rationals on 2-7 tokens."""
    rng = random.Random(23)
    cases = CASES + [random_pair(rng, 2 + i % 6) for i in range(40)]
    for p, q in cases:
        if len(q.support) < 2:
            continue
        plain = verify("rrs-wor", p, q, 2, max_paths=None).enumeration
        assert type(plain).__name__ in ("Enumeration", "LawLeafEnumeration")
        e = two_draft_sums(p, q, 2)
        for t in p.labels:
            assert type(e.law[t]) in (int, Fraction) and e.law[t] == plain.law[t]
        assert (e.acceptance, e.explicit_acceptance) == (plain.acceptance,
                                                         plain.explicit_acceptance)
        assert e.paths == plain.paths and e.total == 1


def test_sorted_sums_equal_merged_states_at_hundreds_of_tokens():
    """At 150 tokens (merged states: about 45,000 transitions) the same law and acceptances;
    the paths differ by what the stepped form does not draw (it draws the second draft after
    a rejection, the rule draws both first: ``m - 2`` more paths per first acceptance, ``m``
    the draftable tokens); at other k the sums decline."""
    p, q = _seeded(150, 5)
    e = two_draft_sums(p, q, 2)
    merged = enumerate_merged(RRS_WOR_STEPS, p, q, 2)
    assert e.law == merged.law and e.law == dict(p)
    assert (e.acceptance, e.explicit_acceptance) == (merged.acceptance,
                                                     merged.explicit_acceptance)
    m = len(q.support)
    first = sum(1 for a, b in zip(p.probs, q.probs) if a and b)
    assert e.paths - merged.paths == first * (m - 2)
    with pytest.raises(CannotProceed, match="k = 2 only"):
        two_draft_sums(p, q, 3)


def test_verify_takes_sorted_sums_where_the_paths_are_too_many(tmp_path, capsys):
    """exact_verification at 3,000 tokens (merged states would take minutes): the route of
    sorted sums, law p, P(Y in X) equal to the explicit acceptance; the command line names
    the route; k = 3 goes to merged states, with the reason the sums gave."""
    p, q = _seeded(3000, 8)
    r = exact_verification("rrs-wor", p, q, 2)
    assert r.route == "sorted-sums" and r.lossless
    assert r.acceptance == r.explicit_acceptance and 0 < r.acceptance < 1
    assert r.paths > 10**9
    small_p, small_q = _seeded(40, 2)
    three = exact_verification("rrs-wor", small_p, small_q, 3, plain_paths=0)
    assert three.route == "merged-states"
    assert three.declined["sorted-sums"] == "sorted sums take k = 2 only, not k = 3"
    (tmp_path / "p.json").write_text("[" + ",".join(f'"{v}"' for v in p.probs) + "]")
    (tmp_path / "q.json").write_text("[" + ",".join(f'"{v}"' for v in q.probs) + "]")
    code = main(["verify", "rrs-wor", "--k", "2", "--p", f"@{tmp_path / 'p.json'}",
                 "--q", f"@{tmp_path / 'q.json'}", "--json"])
    out = capsys.readouterr().out
    assert code == 0 and '"route": "sorted-sums"' in out and '"lossless": true' in out


def test_sums_over_their_budget_are_refused_up_front(monkeypatch, capsys):
    """The work is projected before any sum from the vocabulary and the bits of the sums'
    denominators (one factor per distinct draft probability of a token that can be
    rejected); past the budget: TooLarge with the projected seconds, exit 2 and one line on
    the command line; --max-paths insists."""
    p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
    assert sum_bits(p, q) == (1 - Fraction(3, 5)).denominator.bit_length()
    assert projected_seconds(p, q) == rrs_wor_sums.SECONDS_PER_BIT_POWER * 3 * 64 ** 1.5
    monkeypatch.setattr(rrs_wor_sums, "SECONDS_PER_BIT_POWER", 1.0)
    with pytest.raises(TooLarge, match="may reach 3 bits .* about 1,536 s .* budget of 60 s"):
        two_draft_sums(p, q, 2)
    assert two_draft_sums(p, q, 2, max_seconds=None).law == dict(p)
    big_p, big_q = _seeded(400, 3)
    rows = ["--p", ",".join(map(str, big_p.probs)), "--q", ",".join(map(str, big_q.probs))]
    code = main(["verify", "rrs-wor", "--k", "2", *rows])
    err = capsys.readouterr().err
    assert code == 2 and "over the budget of 60 s" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    code = main(["verify", "rrs-wor", "--k", "2", *rows, "--max-paths", str(10**15), "--json"])
    out = capsys.readouterr().out
    assert code == 0 and '"route": "sorted-sums"' in out
