"""The planner's routes held to the path enumeration: a conformance suite over every route.

Every route of :data:`exactspec.routes.planner.ONE_POSITION` (and of the multi-position table,
:data:`exactspec.sequences.routes.SEQUENCE_ROUTES`) is run directly on the same corpus of
requests: the built-in methods at ``k = 1, 2`` on seeded small pairs (3 to 5 tokens, zeros,
ties, a uniform draft, ``p = q``), and the one-position PyTorch rules of the gallery
(``examples/engines/``) in exact arithmetic, on a grid of 7 points and in ``float32`` and
``float16``.  A route that takes a request must give the path enumeration's law and
acceptance exactly (so the same verdict and TVs); a route that cannot go on says so with
:class:`~exactspec.core.signals.CannotProceed`, the one signal the planner catches.  Routes
that run only after another declined are asked as the planner would ask them.  A route added
to a table is in this suite with no further edit, and must answer at least one request.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from exactspec import Dist
from exactspec.core.errors import ExactspecError
from exactspec.core.signals import CannotProceed
from exactspec.methods import get_method
from exactspec.rounding import _tv
from exactspec.routes import plan, plan_pair
from exactspec.routes.planner import ONE_POSITION, PAIRED
from exactspec.routes.paths import PATHS
from exactspec.routes.tensor_axis import SPLITS_AS_VALUES
from exactspec.sequences.context import ContextPair
from exactspec.sequences.routes import JOINT_PATHS, SEQUENCE_ROUTES, SequenceRequest
from exactspec.sequences.torch_rules import pytorch_whole_call
from exactspec.sequences.user import UserVerifier, _report
from exactspec.torch_layer.rule import load_pytorch_rule
from exactspec.verify import request_of
from test_torch_differential import MULTI, ONE, instance

ENGINES = Path(__file__).resolve().parent.parent / "examples" / "engines"

#: Built-in methods, the README's rule file and rules of the gallery, and the k each runs at.
METHODS = [("sps", 1), ("naive", 1), ("top1", 1), ("rrs", 2), ("rrs-wor", 2), ("kseq", 2),
           ("spechub", 2), ("key", 2), ("key-lazy", 2), ("my_rule", 1), ("shortcut", 1),
           ("argmax_draft", 1), ("reused_uniform", 1), ("accept_on_target_match", 1),
           ("point_mass_proposal", 1), ("greedy", 2), ("typical", 2), ("top-k", 2),
           ("top-p", 2)]
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
GALLERY = {"argmax_draft", "reused_uniform", "accept_on_target_match", "point_mass_proposal"}
ARITHS = {"exact": {}, "grid7": {"grid": 7},
          "float32": {"arith": "float32", "sum_order": "sequential"},
          "float16": {"arith": "float16", "sum_order": "sequential"}}
SEEDS = range(7)            # one pair of every kind of the differential audit

#: What the planner has told a route that runs only after another declined: the splits as
#: values asked for branch points, the plain walk asked for merged states.
ASKED = {SPLITS_AS_VALUES.name: CannotProceed("asked by the suite", retry="splits"),
         PATHS.name: CannotProceed("asked by the suite", retry="merged")}

ROUTES = [r for r in ONE_POSITION if r is not PATHS]


def _cases():
    out = []
    for seed in SEEDS:
        for name, k in METHODS:
            out.append((name, k, seed, "exact"))
        for file, name in ONE:
            for arith in ARITHS:
                out.append((f"{file}:{name}", 1, seed, arith))
    return out


CASES = _cases()


@functools.lru_cache(maxsize=None)
def _method(spec):
    if ":" in spec:
        return get_method(str(ENGINES / spec))
    if spec in ("my_rule", "shortcut"):
        return get_method(f"{EXAMPLES / 'my_rule.py'}:{spec}")
    from exactspec.gallery import one_draft

    return get_method(getattr(one_draft, spec) if spec in GALLERY else spec)


def _request(case):
    spec, k, seed, arith = case
    p, q = (Dist(row) for row in instance(seed))
    m = _method(spec)
    try:
        m.check(p, q, k)
    except ExactspecError:
        return None
    return request_of(m, p, q, k, max_paths=None, merged_states=True, plain_paths=0,
                      **ARITHS[arith])


@functools.lru_cache(maxsize=None)
def _reference(case):
    """The path enumeration's answer to ``case``: ``(law, acceptance)``, or the type of the
    refusal it gives."""
    request = _request(case)
    if request is None:
        return None
    try:
        e = PATHS.run(request.but(merged_states=False), {})
    except ExactspecError as refusal:
        return type(refusal).__name__
    return e.law, e.acceptance


def _answer(route, case):
    """``route``'s own answer to ``case`` as :func:`_reference` gives it, or ``None`` where it
    declines."""
    request = _request(case)
    try:
        e = route.run(request, dict(ASKED))
    except CannotProceed:
        return None
    except ExactspecError as refusal:
        if isinstance(refusal, route.declines_on) and \
                not isinstance(refusal, route.kept_refusals):
            return None                 # the planner goes on to the paths
        return type(refusal).__name__
    return e.law, e.acceptance


@pytest.mark.parametrize("route", ROUTES, ids=[r.name for r in ROUTES])
@pytest.mark.parametrize("case", CASES, ids=["-".join(map(str, c)) for c in CASES])
def test_route_gives_the_path_enumeration(route, case):
    """Where the route takes the request: the path enumeration's law and acceptance exactly
    (or its refusal), hence its verdict and its TV to ``p``."""
    reference = _reference(case)
    if reference is None:
        pytest.skip("the method does not take this pair")
    answer = _answer(route, case)
    if answer is None:
        return
    assert answer == reference
    if not isinstance(answer, str):
        p = _request(case).p
        assert _tv(answer[0], p) == _tv(reference[0], p)


@pytest.mark.parametrize("route", ROUTES + [PATHS], ids=[r.name for r in ROUTES + [PATHS]])
def test_every_route_answers_some_request(route):
    """No route of the table is dead weight: each takes at least one request of the corpus
    (the suite above would pass vacuously for a route that declines everything)."""
    assert any(_reference(c) is not None and _answer(route, c) is not None for c in CASES)


@pytest.mark.parametrize("route", PAIRED, ids=[r.name for r in PAIRED])
@pytest.mark.parametrize("file,name", ONE)
@pytest.mark.parametrize("grid", [2, 7])
def test_paired_run_gives_both_path_enumerations(route, file, name, grid):
    """A paired route's one run of the body gives the path enumeration's law and acceptance
    with ideal uniforms and on the grid."""
    for seed in SEEDS:
        case = (f"{file}:{name}", 1, seed, "exact")
        request = _request(case)
        try:
            ideal, on_grid = route.run_pair(request, dict(ASKED), grid)
        except (CannotProceed, ExactspecError):
            continue
        for got, g in ((ideal, None), (on_grid, grid)):
            e = PATHS.run(request.but(grid=g), {})
            assert (got.law, got.acceptance) == (e.law, e.acceptance)


def test_the_planner_records_the_route_and_why_the_others_declined():
    """The planner's answer names the route that answered and the reason of each before."""
    p, q = (Dist(row) for row in instance(0))
    answer = plan(request_of(_method("sps"), p, q))
    assert answer.route == "draft-axis"
    assert answer.declined == {"tensor-axis": "not a PyTorch rule",
                               "tensor-axis-branching": "not a PyTorch rule",
                               "sorted-sums": "no sorted sums",
                               "merged-states": "no stepped form"}
    answer = plan(request_of(_method("rrs"), p, q, 2))
    assert answer.route == "law-leaves"
    assert answer.declined["draft-axis"] == "2 drafts (the axis is one draft)"
    answer = plan(request_of(_method("hf_speculative_sampling.py:sample"), p, q))
    assert answer.route == "tensor-axis" and answer.declined == {}
    pair = plan_pair(request_of(_method("hf_speculative_sampling.py:sample"), p, q), 7)
    assert [a.route for a in pair] == ["tensor-axis", "tensor-axis"]
    wor = plan(request_of(_method("rrs-wor"), p, q, 2, merged_states=True))
    assert wor.route != "sorted-sums"
    assert wor.declined["sorted-sums"].startswith("the plain enumeration fits:")


# -- multi-position rules ----------------------------------------------------------------------
SEQUENCE_ARITHS = {"exact": {}, "float32": {"arith": "float32", "sum_order": "sequential"}}
SEQUENCE_CASES = [pytest.param(file, name, m, seed, arith, id=f"{file}-{name}-{m}-{seed}-{arith}",
                               marks=[pytest.mark.slow] if m > 2 else [])
                  for file, name in MULTI for m in (2, 3) for seed in (0, 4)
                  for arith in SEQUENCE_ARITHS]      # three tokens: the slow run
FIGURES = ("verdict", "lossless", "tokens_per_call", "bias", "bias_exact_arith",
           "bias_grid_only")


def _sequence_request(case):
    file, name, m, seed, arith = case
    p, q = (Dist(row) for row in instance(seed))
    whole = pytorch_whole_call(load_pytorch_rule(f"{ENGINES / file}:{name}"), m)
    verifier = UserVerifier(whole, name=name)
    pair = ContextPair.context_free(p, q)
    options = SEQUENCE_ARITHS[arith]
    return SequenceRequest(verifier, pair, m, (), max_paths=10**6, report=_report, **options)


def _figures(route, request):
    try:
        report = route.run(request, {})
    except CannotProceed:
        return None
    except ExactspecError as refusal:
        if isinstance(refusal, route.declines_on) and \
                not isinstance(refusal, route.kept_refusals):
            return None
        return type(refusal).__name__
    return {key: report.get(key) for key in FIGURES}


SEQUENCE_OTHERS = [r for r in SEQUENCE_ROUTES if r is not JOINT_PATHS]


@pytest.mark.parametrize("route", SEQUENCE_OTHERS, ids=[r.name for r in SEQUENCE_OTHERS])
@pytest.mark.parametrize("file,name,m,seed,arith", SEQUENCE_CASES)
def test_sequence_route_gives_the_joint_enumeration(route, file, name, m, seed, arith):
    """Where a multi-position route takes the request: the joint path enumeration's verdict,
    tokens per call and three TVs exactly."""
    case = (file, name, m, seed, arith)
    got = _figures(route, _sequence_request(case))
    if got is None:
        return
    assert got == _figures(JOINT_PATHS, _sequence_request(case))
