"""The draft axis (exactspec.engine.draft_axis) against the plain walk (enumerate_paths).

Every figure of the enumeration (law, ``P(Y in X)``, explicit acceptance, total, which of
the two the rule used, the walk's path count) is the walk's wherever the route answers; the
rules it is for take it (the one-draft rule, the kernel-style rules with uniforms, the
README's rule, the one-draft gallery), grids included; the rest decline with a reason, and
so does every use of the draft or a value read at it that the axis does not follow, also
when the rule catches the refusal.
"""

from __future__ import annotations

import random
from fractions import Fraction
from pathlib import Path

import pytest

from exactspec import Dist
from exactspec.core.errors import InvalidInput
from exactspec.core.signals import CannotProceed, SignalCaught
from exactspec.engine.draft_axis import MAX_RUNS, enumerate_draft_axis
from exactspec.engine.exact import enumerate_paths
from exactspec.gallery import one_draft
from exactspec.methods import METHODS, get_method
from exactspec.methods.sps import sps, sps_uniforms
from test_law_leaves import _pairs        # the same small pairs as law leaves

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MY_RULE = get_method(f"{EXAMPLES / 'my_rule.py'}:my_rule").run
SHORTCUT = get_method(f"{EXAMPLES / 'my_rule.py'}:shortcut").run
FLIPPED = get_method(f"{EXAMPLES / 'uniform_rules.py'}:flipped").run
TWO_UNIFORMS = get_method(f"{EXAMPLES / 'uniform_rules.py'}:two_uniforms").run

def _same(method, p, q, k=1, grid=None, **options):
    """``"axis"`` where the route answers with every figure of the walk, ``"declined: why"``
    where it declines, ``"raises"`` where the walk itself refuses the pair."""
    try:
        plain = enumerate_paths(method, p, q, k, grid=grid)
    except (InvalidInput, ArithmeticError):
        return "raises"
    try:
        axis = enumerate_draft_axis(method, p, q, k, grid=grid, **options)
    except CannotProceed as err:
        return f"declined: {err.why}"
    assert axis.law == plain.law
    assert axis.acceptance == plain.acceptance
    assert axis.explicit_acceptance == plain.explicit_acceptance
    assert axis.total == plain.total == 1
    assert (axis.used_drafts, axis.used_accept) == (plain.used_drafts, plain.used_accept)
    assert axis.paths == plain.paths
    assert axis.leaves <= plain.paths
    return "axis"


AXIS_RULES = {"sps": sps, "sps_uniforms": sps_uniforms, "my_rule": MY_RULE}


@pytest.mark.parametrize("name", sorted(AXIS_RULES))
@pytest.mark.parametrize("grid", [None, 3, 7])
def test_one_draft_rules_take_the_route(name, grid):
    outcomes = {_same(AXIS_RULES[name], p, q, grid=grid) for p, q in _pairs()}
    assert "axis" in outcomes and outcomes <= {"axis", "raises"}, outcomes


@pytest.mark.parametrize("rule", [FLIPPED, TWO_UNIFORMS, SHORTCUT],
                         ids=["flipped", "two_uniforms", "shortcut"])
def test_uniforms_combined_or_reused_decline(rule):
    """``1 - u > 1 - r`` and ``u * v < r`` compare a combination of uniforms (the joint
    treatment of the walk) with a value read at the draft, and ``shortcut`` looks up again
    the uniform it compared with one: declined, law leaves follow them."""
    outcomes = {_same(rule, p, q) for p, q in _pairs()}
    assert any(o.startswith("declined: ") for o in outcomes), outcomes


def _registry_cases():
    for name, method in sorted(METHODS.items()):
        for k in (1, 2):
            if method.k_values is None or k in method.k_values:
                yield name, k


@pytest.mark.parametrize("name,k", list(_registry_cases()))
def test_every_registered_method_is_the_walk_or_declines(name, k):
    method = get_method(name)
    for p, q in _pairs():
        outcome = _same(method.run, p, q, k, watch=method.user)
        assert outcome in ("axis", "raises") or outcome.startswith("declined: ")


def test_the_one_draft_methods_take_it():
    """The registry's one-draft rules that read their draft only through ``p[x]``, ``q[x]``."""
    p, q = _pairs()[0]
    taken = {name for name, method in METHODS.items()
             if (method.k_values is None or 1 in method.k_values)
             and _same(method.run, p, q, 1) == "axis"}
    assert {"sps", "naive", "top1"} <= taken, taken


@pytest.mark.parametrize("entry", one_draft.GALLERY, ids=lambda e: e.name)
def test_the_one_draft_gallery(entry):
    """Each entry's reported and correct rules on its own instance."""
    for rule in (entry.reported, entry.correct):
        outcome = _same(rule, entry.p, entry.q)
        assert outcome == "axis" or outcome.startswith("declined: "), outcome


def test_random_pairs_at_more_tokens():
    """Seeded pairs of 2 to 64 tokens (the long-row arithmetic from 64), both grids."""
    rng = random.Random(3)
    for n in (2, 9, 64):
        for _ in range(2):
            rows = [[Fraction(rng.randint(0, 5)) for _ in range(n)] for _ in range(2)]
            for row in rows:
                row[rng.randrange(n)] += 1
            p, q = (Dist(row, normalize=True) for row in rows)
            for rule in (sps, MY_RULE):
                for grid in (None, 5):
                    assert _same(rule, p, q, grid=grid) in ("axis", "raises")


# -- what the axis does not follow declines, caught or not ----------------------------------
def _declines(rule, match: str | None = None):
    p, q = _pairs()[0]
    with pytest.raises((CannotProceed, SignalCaught), match=match):
        enumerate_draft_axis(rule, p, q, watch=True)


def test_hashing_the_draft_or_a_value_declines():
    _declines(lambda s, p, q, k: {s.draft(q): 1} and 0, "hashed")
    _declines(lambda s, p, q, k: {p[s.draft(q)]: 1} and 0, "hashed")


def test_numbers_and_text_of_a_value_decline():
    _declines(lambda s, p, q, k: 0 if float(p[s.draft(q)]) > 0.3 else 1, "float")
    _declines(lambda s, p, q, k: 0 if str(s.draft(q)) == "1" else 1, "text")
    _declines(lambda s, p, q, k: [0, 1, 2][s.draft(q)], "indexed")


def test_isinstance_from_the_rule_declines():
    from fractions import Fraction as F

    _declines(lambda s, p, q, k: 0 if isinstance(p[s.draft(q)], F) else 1, "__class__")


def test_a_caught_refusal_still_declines():
    def catches(s, p, q, k):
        x = s.draft(q)
        try:
            return 0 if float(p[x]) > 0.3 else 1
        except BaseException:            # noqa: BLE001 - the point of the test
            return 2

    def suppresses(s, p, q, k):
        x = s.draft(q)
        try:
            hash(x)
        except Exception:                # noqa: BLE001 - CannotProceed is no Exception
            pass
        return x

    _declines(catches)
    _declines(suppresses)


def test_a_second_draft_and_state_across_runs_decline():
    _declines(lambda s, p, q, k: s.draft(q) if s.draft(q) == 0 else 1, "second draft")
    kept = []

    def keeps(s, p, q, k):
        x = s.draft(q)
        if kept:
            return 0 if kept[0] < 1 else 1
        kept.append(p[x] / q[x])
        return x if s.coin(Fraction(1, 2)) else 1

    _declines(keeps)


def test_a_law_built_from_values_read_at_the_draft_declines():
    def built(s, p, q, k):
        x = s.draft(q)
        a = p[x]
        return s.draw(Dist([a, 1 - a] + [0] * (len(p) - 2), p.labels, check=False))

    _declines(built)


def test_a_float_combined_with_a_value_declines():
    """The walk counts each float it converts per path; the axis does not follow floats."""
    _declines(lambda s, p, q, k: s.accept(0) if s.coin(p[s.draft(q)] * 0.5) else 1, "float")


def test_an_operation_failing_on_some_tokens_declines():
    """1 / p[x] fails where p is 0: the walk raises it on that token's path, and words it."""
    p, q = Dist.parse("0,1/2,1/2"), Dist.parse("1/3,1/3,1/3")
    with pytest.raises(CannotProceed, match="ZeroDivisionError"):
        enumerate_draft_axis(lambda s, p, q, k: 0 if 1 / p[s.draft(q)] > 2 else 1, p, q)


def test_a_condition_splits_the_tokens():
    """``if p[x] > q[x]`` runs each outcome with the tokens taking it."""
    def by_condition(s, p, q, k):
        x = s.draft(q)
        if p[x] > q[x]:
            return s.accept(x)
        return s.draw(p)

    for p, q in _pairs():
        assert _same(by_condition, p, q) in ("axis", "raises")


def test_too_many_runs_decline():
    def many(s, p, q, k):
        x = s.draft(q)
        for _ in range(13):
            s.coin(Fraction(1, 2))
        return x

    p, q = _pairs()[0]
    assert 2**13 > MAX_RUNS
    with pytest.raises(CannotProceed, match="runs of the body"):
        enumerate_draft_axis(many, p, q)


def test_hidden_state_declines():
    calls = [0]

    def counter(s, p, q, k):
        calls[0] += 1
        x = s.draft(q)
        return x if calls[0] % 2 else s.draw(p)

    p, q = _pairs()[0]
    with pytest.raises((CannotProceed, InvalidInput)):
        enumerate_draft_axis(counter, p, q, watch=True)


def test_type_and_id_in_the_rule_decline_on_the_command_line(capsys, tmp_path):
    """``type(v)`` and ``id(v)`` read the object itself: a rule whose code calls them (also
    under another name) is not handed stand-ins; the walk answers."""
    import json

    from exactspec.cli import main

    rule = tmp_path / "typed.py"
    rule.write_text("from fractions import Fraction\n"
                    "kind = type\n\n\n"
                    "def f(s, p, q):\n"
                    "    x = s.draft(q)\n"
                    "    if kind(p[x] / q[x]) is Fraction:\n"
                    "        return x\n"
                    "    return s.draw(p)\n")
    code = main(["verify", f"{rule}:f", "--p", "1/2,1/4,1/4", "--q", "1/3,1/3,1/3", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["route"] == "paths" and code in (0, 1)
    assert "type()" in out["declined"]["draft-axis"] and "type()" in out["declined"]["law-leaves"]


@pytest.mark.slow
def test_the_full_vocabulary():
    """152,064 tokens (seeded rows of integer weights, each its own denominator): the
    one-draft rule and the README's rule are lossless with acceptance ``sum min(p, q)``."""
    from exactspec.core.dist import overlap

    rng = random.Random(1)
    p, q = (Dist([Fraction(rng.randint(1, 12)) for _ in range(152_064)], normalize=True)
            for _ in range(2))
    for rule, watch in ((sps, False), (MY_RULE, True)):
        result = enumerate_draft_axis(rule, p, q, max_paths=None, watch=watch)
        assert result.law == dict(zip(p.labels, p.probs))
        assert result.acceptance == overlap(p, q) and result.leaves <= 4
