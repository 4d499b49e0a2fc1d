"""Claims about races over noise: Gumbel-max and the exponential race sample like the inverse
CDF, and vLLM's noise shared across a request's positions leaves its output law unchanged.

The exact laws come from :mod:`exactspec.engine.races` (closed forms for one race, polytope
volumes for races over shared noise); the symbolic parts are sympy integrals and the symbolic
interpreter.
"""

from __future__ import annotations

import random
from fractions import Fraction

from ..replay import check_certificate
from ..core.dist import Dist, exact_str
from ..core.random_dists import random_dist
from ..engine.races import cone_probability, first_arrival_law, log, race_rows
from ..engine.runs import enumerate_runs
from ..gallery.engines import EngineRule, vllm_call, vllm_race_over_p_call, \
    vllm_recovered_tokens
from ..sequences.context import random_model_pair
from ..sequences.multitoken import call_law, prove_sequence
from .base import PROVED, REFUTED, Claim, ClaimResult

__all__ = ["CLAIMS", "winner_law_integral", "gumbel_is_minus_log_exponential"]


def winner_law_integral(n: int):
    """``P(argmax_v w_v / E_v = 0)`` for symbolic positive weights ``w_0..w_{n-1}``, by the
    sympy integral ``int_0^inf w_0 e^{-w_0 t} prod_{v>0} e^{-w_v t} dt`` (the first arrival of
    independent ``Exp(w_v)`` times ``E_v / w_v``), and the weights.

    >>> value, w = winner_law_integral(2)
    >>> value
    w0/(w0 + w1)
    """
    import sympy

    w = sympy.symbols(f"w0:{n}", positive=True)
    t = sympy.symbols("t", positive=True)
    density = w[0] * sympy.exp(-w[0] * t)
    survive = sympy.exp(-sum(w[1:]) * t)
    value = sympy.simplify(sympy.integrate(density * survive, (t, 0, sympy.oo)))
    return value, w


def gumbel_is_minus_log_exponential() -> bool:
    """``P(-log E <= g) = exp(-exp(-g))`` for ``E ~ Exp(1)``: ``-log E`` is a standard Gumbel,
    so ``log w + G = -log(E / w)`` and Gumbel-max over ``w`` is the exponential race."""
    import sympy

    g = sympy.symbols("g", real=True)
    x = sympy.symbols("x", positive=True)
    # P(-log E <= g) = P(E >= exp(-g)) = int_{exp(-g)}^inf e^{-x} dx
    tail = sympy.integrate(sympy.exp(-x), (x, sympy.exp(-g), sympy.oo))
    return sympy.simplify(tail - sympy.exp(-sympy.exp(-g))) == 0


def check_race_laws() -> ClaimResult:
    import sympy

    details, ok = [], True
    for n in (2, 3, 4):
        value, w = winner_law_integral(n)
        good = sympy.simplify(value - w[0] / sum(w)) == 0
        ok &= good
        details.append(f"sympy: P(race winner = 0) = {value} for {n} symbolic weights "
                       f"({'= w0 / sum w' if good else 'DIFFERS'})")
    good = gumbel_is_minus_log_exponential()
    ok &= good
    details.append(f"sympy: P(-log E <= g) = exp(-exp(-g)), -log E is Gumbel: {good}")
    rng = random.Random(11)
    count = 0
    for trial in range(60):
        n = rng.randint(1, 5)
        d = random_dist(rng, n, denominator=rng.choice([4, 6, 10]))
        labels = tuple(range(n))
        ways = {
            "draw": enumerate_runs(lambda s: s.draw(d)).law,
            "pick": enumerate_runs(lambda s: s.pick(d, s.uniform())).law,
            "w/E argmax": enumerate_runs(lambda s: (d / s.exponentials(n)).argmax()).law,
            "E/w argmin": enumerate_runs(lambda s: (s.exponentials(n) / d).argmin()).law,
            "gumbel-max": enumerate_runs(lambda s: (log(d) + s.gumbels(n)).argmax()).law,
        }
        want = {lab: d[lab] for lab in labels if d[lab] != 0}
        for name, law in ways.items():
            got = {k: v for k, v in law.items() if v != 0}
            if got != want:
                ok = False
                details.append(f"instance {trial}: {name} gives {got}, not {want}")
        weights = list(d.probs)
        if sum(1 for v in weights if v > 0) > 1:
            cones = [cone_probability(race_rows(weights, j, True, n)) if weights[j] > 0
                     else 0 for j in range(n)]
            if cones != first_arrival_law(weights):
                ok = False
                details.append(f"instance {trial}: the cone volumes differ from w / sum w")
        count += 1
    details.append(f"exact engine: draw = inverse CDF = exponential race (both forms) = "
                   f"Gumbel-max on {count} random rational laws (1-5 tokens, zeros allowed); "
                   "polytope volumes of the race cones = w_j / sum w")
    from ..engine.symbolic import prove_symbolic
    from ..gallery.engines import relu_residual

    def race_rule(s, p, q, k):
        x = s.draft(q)
        if s.coin(min(1, p[x] / q[x])):
            return s.accept(x)
        r = relu_residual(list(p.probs), list(q.probs))
        return p.labels[(r / s.exponentials(len(p))).argmax()]

    proof = prove_symbolic(race_rule, 2)
    ok &= proof.verdict == "proved"
    details.append(f"symbolic: the one-draft rule with its residual drawn by an exponential race "
                   f"is {proof.verdict} for every p, q on 2 tokens ({len(proof.cases)} cases)")
    return ClaimResult(PROVED if ok else REFUTED, details)


def check_shared_noise() -> ClaimResult:
    details, ok, parts = [], True, []
    rng = random.Random(5)
    pairs = [random_model_pair(rng, 3, 2, zeros=False, name=f"random 5/{i}") for i in range(3)]
    coupled = 0
    for i, pair in enumerate(pairs):
        for gamma in (1, 2):
            shared = EngineRule(vllm_call, gamma)
            fresh = EngineRule(lambda s, pr, c, g: vllm_call(s, pr, c, g,
                                                             noise_per_position=True), gamma)
            a, b = call_law(shared, pair).law, call_law(fresh, pair).law
            same = a == b
            proof = prove_sequence(shared, pair, gamma + 1)
            ok &= same and proof.lossless
            recovered = [call_law(lambda s, pr, c, flag=flag: vllm_recovered_tokens(
                s, pr, c, gamma, noise_per_position=flag), pair).law for flag in (False, True)]
            coupled += recovered[0] != recovered[1]
            details.append(f"pair {i}, gamma = {gamma}: one call's law with noise per request "
                           f"{'=' if same else '!='} with noise per position; first "
                           f"{gamma + 1} tokens {'PROVED' if proof.lossless else 'REFUTED'} "
                           f"lossless; recovered tokens {'coupled' if recovered[0] != recovered[1] else 'not coupled'}")
    ok &= coupled > 0
    details.append("why: the recovered tokens of one request are coupled through E, but the "
                   "accept loop emits at most one of them, and E is independent of the drafts "
                   "and the acceptance uniforms, so the emitted token's law given the history "
                   "is the race's winner law, the normalised residual")
    # a certificate: the whole generation of two positions, every path
    pair = pairs[0]
    proof = prove_sequence(EngineRule(vllm_call, 1), pair, 2, full_paths=True, keep_paths=True)
    cert = proof.certificate()
    problems = check_certificate(cert)
    ok &= proof.lossless and not problems
    parts.append(cert)
    details.append(f"whole-generation certificate (gamma = 1, m = 2): {proof.enumeration.paths} "
                   f"paths, re-checked: {'ok' if not problems else problems[0]}")
    bad = prove_sequence(EngineRule(vllm_race_over_p_call, 2), pairs[0], 3)
    ok &= not bad.lossless
    details.append(f"contrast: the race over p instead of the residual is REFUTED, "
                   f"TV = {exact_str(bad.tv)}")
    return ClaimResult(PROVED if ok else REFUTED, details, {"parts": parts})


CLAIMS = [
    Claim("race-laws", "Gumbel-max (argmax log w + G) and the exponential race (argmax w / E) "
          "have the law of inverse-CDF sampling from w / sum w: by sympy for 2-4 symbolic "
          "weights, and exactly in the engine on random rational laws",
          check_race_laws),
    Claim("shared-noise-vllm", "reusing one exponential noise vector across a request's draft "
          "positions, as vLLM's rejection sampler does, does not change the joint law of its "
          "output: per-request and per-position noise give the same call law, both lossless, "
          "though the recovered tokens are coupled",
          check_shared_noise),
]
