"""Claims about rules that are lossy by design: Medusa's typical acceptance, greedy multi-draft
verification, top-k and top-p truncated verification.  Each is refuted as a sampler of ``p``
with its exact bias ``TV(output, p)`` and acceptance, and the engine's laws equal the rules'
closed forms.  The verdict is PROVED when every stated figure comes out exactly."""

from __future__ import annotations

import random
from fractions import Fraction

from ..core.dist import Dist, exact_str, total_variation
from ..core.random_dists import random_dist
from ..methods.top1 import argmax
from ..methods.truncated import top_k, top_p, truncate_top_k, truncate_top_p
from ..methods.typical import MEDUSA_DELTA, MEDUSA_EPS, typical_acceptance, typical_law
from ..verify import verify
from .base import PROVED, REFUTED, Claim, ClaimResult

__all__ = ["CLAIMS", "SEED_FIGURES"]

F = Fraction

#: ``(method, eps, delta, k) -> (bias, acceptance)`` on the seed example.
SEED_FIGURES = {
    ("typical", MEDUSA_EPS, MEDUSA_DELTA, 1): (F(2, 5), F(1)),
    ("typical", MEDUSA_EPS, MEDUSA_DELTA, 2): (F(4, 25), F(1)),
    ("typical", F(3, 10), F(3, 5), 1): (F(3, 10), F(2, 5)),
    ("typical", F(3, 10), F(3, 5), 2): (F(11, 50), F(16, 25)),
    ("greedy", None, None, 1): (F(1, 2), F(1, 5)),
    ("greedy", None, None, 2): (F(1, 2), F(9, 25)),
    ("top-k", None, None, 1): (F(1, 5), F(2, 5)),
    ("top-p", None, None, 2): (F(1, 5), F(16, 25)),
}


def check_lossy_rules() -> ClaimResult:
    details = []
    ok = True
    p = Dist.parse("1/2,3/10,1/5", labels="abc")
    q = Dist.parse("1/5,1/5,3/5", labels="abc")
    for (name, eps, delta, k), (bias, acceptance) in SEED_FIGURES.items():
        method = typical_acceptance(eps, delta) if name == "typical" else name
        r = verify(method, p, q, k)
        good = (not r.lossless) and r.bias == bias and r.acceptance == acceptance
        ok = ok and good
        setting = f" eps = {exact_str(eps)}, delta = {exact_str(delta)}," if eps else ""
        details.append(f"seed example, {name},{setting} k = {k}: bias {exact_str(r.bias)}, "
                       f"acceptance {exact_str(r.acceptance)}, law "
                       + ", ".join(f"{t}: {exact_str(v)}" for t, v in zip(p.labels,
                                                                             r.law_dist().probs))
                       + ("" if good else f"  <- expected bias {exact_str(bias)}, acceptance "
                                          f"{exact_str(acceptance)}"))
    rng = random.Random(1717)
    settings = [(MEDUSA_EPS, MEDUSA_DELTA), (F(3, 10), F(3, 5)), (F(1, 4), F(1))]
    runs = bad = 0
    for _ in range(100):
        n = rng.randint(2, 4)
        pp, qq = random_dist(rng, n, denominator=6), random_dist(rng, n, denominator=6)
        k = rng.randint(1, 3)
        eps, delta = settings[rng.randrange(len(settings))]
        g = argmax(pp)
        checks = [
            (verify(typical_acceptance(eps, delta), pp, qq, k).law_dist(),
             typical_law(pp, qq, k, eps, delta)),
            (verify("greedy", pp, qq, k).law_dist(),
             Dist([F(int(t == g)) for t in pp.labels], pp.labels)),
            (verify(top_k(2), pp, qq, k).law_dist(), truncate_top_k(pp, 2)),
            (verify(top_p(F(4, 5)), pp, qq, k).law_dist(), truncate_top_p(pp, F(4, 5))),
        ]
        for engine, closed in checks:
            runs += 1
            if engine != closed:
                bad += 1
        ok = ok and total_variation(checks[1][1], pp) == 1 - pp[g]
    ok = ok and bad == 0
    details.append(f"100 random rational instances (2-4 tokens, k = 1..3): engine law = closed "
                   f"form in {runs - bad} of {runs} (typical, greedy, top-k, top-p)")
    return ClaimResult(PROVED if ok else REFUTED, details, {"parts": []})


CLAIMS = [
    Claim("lossy-rules", "typical acceptance (Medusa, p(x) > min(eps, delta exp(-H(p)))), "
          "greedy multi-draft, top-k and top-p verification are lossy with exact bias and "
          "acceptance on the seed example (typical at eps = 9/100, delta = 3/10: bias 2/5; at "
          "eps = 3/10, delta = 3/5: bias 3/10), and their laws equal closed forms",
          check_lossy_rules, issue="17"),
]
