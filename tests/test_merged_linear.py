"""The merged-state interpreter at linear cost per state: the same numbers as before.

:func:`exactspec.engine.merged.enumerate_merged` holds a state's ``P(state, t drafted)``
vector lazily and lists a law's options once; these tests check it against the plain path
enumeration (the reference semantics: law, ``P(Y in X)``, explicit acceptance) and against
the dense forward program it replaces, written out below (every count too: paths, states,
transitions), on small random rows with zeros and ties, for every stepped method at
``k = 1..3``; and at a medium vocabulary against RRS's closed form.
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from exactspec.bounds.closed_forms import rrs_acceptance
from exactspec.core.dist import Dist
from exactspec.core.errors import InvalidInput
from exactspec.engine.driver import depth_first
from exactspec.engine.exact import ExactSampler, enumerate_paths
from exactspec.engine.merged import Done, Stepped, by_identity, enumerate_merged
from exactspec.methods import METHODS
from exactspec.methods.kseq import _BetaTable, kseq_beta, rho_star
from exactspec.methods.rrs import RRS_STEPS

STEPPED = ("rrs", "rrs-wor", "kseq", "spechub", "key", "key-lazy")


def dense_reference(stepped, p, q, k):
    """The forward program with one dense vector per state, copied at every transition
    (the interpreter as it was): law, acceptances, paths, states, transitions."""
    labels = tuple(p.labels)
    index = {lab: i for i, lab in enumerate(labels)}
    law = {lab: 0 for lab in labels}
    acceptance = explicit = 0
    counts = {"paths": 0, "states": 0, "transitions": 0}
    used = {"drafts": False}
    frontier = {(stepped.start(p, q, k), (False, None)): [Fraction(1), [0] * len(labels), 1]}
    while frontier:
        counts["states"] += len(frontier)
        following: dict = {}
        for (state, accepted), (mass, vector, count) in frontier.items():
            def leaf(s, result, accepted=accepted, mass=mass, vector=vector, count=count):
                nonlocal acceptance, explicit
                counts["transitions"] += 1
                weight = mass * s.weight
                fresh = {index[x] for x in s.drafted}
                used["drafts"] = used["drafts"] or bool(fresh)
                drafted = [weight if i in fresh else d * s.weight for i, d in enumerate(vector)]
                acc = (True, s.accepted_token) if s.did_accept else accepted
                if isinstance(result, Done):
                    y = result.output
                    law[y] += weight
                    acceptance += drafted[index[y]]
                    if acc[0] and acc[1] == y:
                        explicit += weight
                    counts["paths"] += count
                else:
                    seen = following.setdefault((result, acc), [0, [0] * len(labels), 0])
                    seen[0] += weight
                    seen[1] = [a + b for a, b in zip(seen[1], drafted)]
                    seen[2] += count

            depth_first(ExactSampler(), lambda s, state=state: stepped.step(s, p, q, k, state),
                        leaf)
        frontier = following
    if not used["drafts"]:
        acceptance = explicit
    return law, acceptance, explicit, counts


def random_row(rng, n, zeros):
    """Small integer weights (ties), some zero, normalised."""
    weights = [rng.randint(0 if zeros else 1, 4) for _ in range(n)]
    if not any(weights):
        weights[rng.randrange(n)] = 1
    total = sum(weights)
    return Dist([Fraction(w, total) for w in weights])


def instances():
    rng = random.Random(20261202)
    for case in range(6):
        n = rng.randint(2, 5)
        p, q = random_row(rng, n, case % 2 == 0), random_row(rng, n, case % 3 == 0)
        if case == 5:
            q = p                                      # p = q: nothing is ever rejected
        yield p, q


CASES = list(instances())


@pytest.mark.parametrize("name", STEPPED)
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_merged_equals_the_paths_and_the_dense_program(name, k, case):
    p, q = CASES[case]
    method = METHODS[name]
    if name == "spechub" and k != 2:
        return
    try:
        method.check(p, q, k)
    except InvalidInput:
        return
    merged = enumerate_merged(method.steps, p, q, k)
    plain = enumerate_paths(method.run, p, q, k, max_paths=None)
    assert merged.law == plain.law and merged.total == 1
    assert merged.acceptance == plain.acceptance
    assert merged.explicit_acceptance == plain.explicit_acceptance
    law, acceptance, explicit, counts = dense_reference(method.steps, p, q, k)
    assert (merged.law, merged.acceptance, merged.explicit_acceptance) == (law, acceptance,
                                                                           explicit)
    assert (merged.paths, merged.states, merged.transitions) == (
        counts["paths"], counts["states"], counts["transitions"])


def test_vectors_through_steps_that_draft_nothing_and_merge_from_many_states():
    """A state reached from several states and steps with no draft (pure rescalings looked
    through) keep ``P(Y in X)`` exact."""
    def start(p, q, k):
        return 0

    def step(s, p, q, k, i):
        if i == 0:
            s.draft(q, "first")
            return s.draw(Dist.parse("1/3,2/3"), "branch") + 1
        if i in (1, 2):
            s.coin(Fraction(1, 5), "nothing drafted")
            return 3 if s.coin(Fraction(1, 2), "merge") else 4
        if i in (3, 4):
            return 5 if s.coin(Fraction(2, 3), "merge again") else 6
        if i == 5:
            s.draft(q, "second")
            return 6
        return Done(s.draw(p, "output"))

    p, q = Dist.parse("1/2,1/4,1/4"), Dist.parse("1/6,1/3,1/2")
    stepped = Stepped(start, step)
    merged = enumerate_merged(stepped, p, q, 1)
    law, acceptance, explicit, counts = dense_reference(stepped, p, q, 1)
    assert merged.law == law and merged.acceptance == acceptance
    assert (merged.paths, merged.states, merged.transitions) == (
        counts["paths"], counts["states"], counts["transitions"])


def test_by_identity_remembers_objects_not_values():
    calls = []
    total = by_identity(lambda row: calls.append(1) or sum(row))
    a, b = [1, 2], [1, 2]
    assert total(a) == total(a) == total(b) == 3
    assert len(calls) == 2                       # equal but distinct: computed again


def test_kseq_beta_table_and_piece_as_the_linear_scan():
    rng = random.Random(7)
    for _ in range(5):
        n = rng.randint(3, 30)
        p, q = random_row(rng, n, True), random_row(rng, n, True)
        table = _BetaTable(p, q)
        for rho in [Fraction(1), Fraction(3, 2), Fraction(2), Fraction(7, 3), Fraction(4)] + \
                table.keys[:5]:
            if rho > 0:
                assert table(rho) == kseq_beta(p, q, rho)
        for k in (2, 3, 4):
            star = rho_star(p, q, k)
            ratios = sorted({a / b for a, b in zip(p.probs, q.probs)
                             if a > 0 and b > 0 and 1 < a / b < k})
            gaps = [(r, 1 - (1 - kseq_beta(p, q, r)) ** k - r * kseq_beta(p, q, r))
                    for r in [Fraction(1)] + ratios + [Fraction(k)]]
            if gaps[0][1] <= 0:
                assert star.rho == 1
                continue
            first = next(j for j, (r, g) in enumerate(gaps) if g <= 0)
            assert star.piece == (gaps[first - 1][0], gaps[first][0])


def test_rrs_at_two_thousand_tokens_against_the_closed_form():
    rng = random.Random(2000)
    n = 2000

    def row():
        weights = [rng.randint(0, 1000) for _ in range(n)]
        total = sum(weights)
        return Dist([Fraction(w, total) for w in weights])

    p, q = row(), row()
    merged = enumerate_merged(RRS_STEPS, p, q, 4)
    assert merged.law == dict(p)
    assert merged.acceptance == rrs_acceptance(p, q, 4)


def test_acceptance_terms_summed_in_batches_give_the_same_sums(monkeypatch):
    """The acceptances' terms are kept in lists and summed over integers (in batches of
    TERMS_KEPT, so memory stays bounded): batches of 2 give the same exact P(Y in X) and
    explicit acceptance as one batch, and RRS's closed form."""
    import exactspec.engine.merged as merged

    rng = random.Random(8)
    weights = [rng.randint(1, 50) for _ in range(40)]
    p = Dist([Fraction(w, sum(weights)) for w in weights])
    weights = [rng.randint(1, 50) for _ in range(40)]
    q = Dist([Fraction(w, sum(weights)) for w in weights])
    whole = enumerate_merged(RRS_STEPS, p, q, 3)
    monkeypatch.setattr(merged, "TERMS_KEPT", 2)
    batched = enumerate_merged(RRS_STEPS, p, q, 3)
    assert (batched.acceptance, batched.explicit_acceptance) == (whole.acceptance,
                                                                 whole.explicit_acceptance)
    assert whole.acceptance == rrs_acceptance(p, q, 3) and batched.law == dict(p)
