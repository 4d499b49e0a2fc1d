"""A gallery of real verifier bugs, each next to the correct version that exactspec proves.

Every entry is a small verifier ``f(s, p, q, k=1)`` written against the sampling interface
(:mod:`exactspec.engine`), named like the bug, on the instance where the bug was reported.
The buggy version is refuted with its exact output law; the correct version is proved
lossless.  Two entries are rules that were *reported* as bugs but are exact: they have no
buggy version, and their expected law is ``p``.

>>> [row.name for row in run_gallery()]  # doctest: +NORMALIZE_WHITESPACE
['argmax_draft', 'draft_from_other_model', 'reused_uniform', 'top_p_unfiltered_target',
 'accept_on_target_match', 'point_mass_proposal']
>>> run_gallery()[2]
GalleryRow(name='reused_uniform', verdict='lossy-logic', law=Dist({0: 1/2, 1: 0, 2: 1/2}), \
tv=Fraction(1, 4), correct='lossless')
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, NamedTuple

from ..core.dist import Dist, exact, exact_str, residual, total_variation
from ..core.errors import InvalidInput
from ..methods.sps import sps, sps_uniforms
from ..methods.top1 import argmax
from ..verify import verify

__all__ = [
    "GALLERY",
    "GalleryEntry",
    "GalleryRow",
    "accept_on_target_match",
    "argmax_draft",
    "argmax_draft_point_mass",
    "draft_and_verify_with",
    "draft_from",
    "filtered_target",
    "point_mass",
    "point_mass_proposal",
    "reused_uniform",
    "run_gallery",
    "top_p",
    "unfiltered_target",
]


# --- helpers ---------------------------------------------------------------------------------

def point_mass(labels, x) -> Dist:
    """The distribution that puts all its mass on token ``x``.

    >>> point_mass((0, 1, 2), 1)
    Dist({0: 0, 1: 1, 2: 0})
    """
    if x not in labels:
        raise InvalidInput(f"x={x!r} is not one of the labels {list(labels)}")
    return Dist([Fraction(lab == x) for lab in labels], labels, check=False)


def top_p(dist: Dist, threshold) -> Dist:
    """Nucleus (top-p) filtering: keep the smallest high-probability prefix, renormalised.

    Tokens are ordered by descending probability, **ties broken by token order** (the earlier
    token is kept first; a sort that is not stable, as on some GPUs, may keep a different one of
    several tied tokens at the cut).  The kept set is the shortest prefix of that order whose
    mass *reaches* the threshold (``>= threshold``); everything else gets 0 and the kept
    probabilities are divided by their sum.  The threshold is read exactly (``"0.6"`` is
    ``3/5``; a float is its exact binary value) and must satisfy ``0 < threshold <= 1``.

    Equivalent to keeping ``t`` iff the mass strictly before ``t`` in that order is below the
    threshold.

    >>> top_p(Dist.parse("1/2,3/10,1/5"), "0.6")
    Dist({0: 5/8, 1: 3/8, 2: 0})
    >>> top_p(Dist.parse("1/4,1/4,1/4,1/4"), "1/2")  # a tie at the cut: token order decides
    Dist({0: 1/2, 1: 1/2, 2: 0, 3: 0})
    """
    t = exact(threshold, "threshold")
    if not 0 < t <= 1:
        raise InvalidInput(f"threshold={exact_str(t)}: top-p needs 0 < threshold <= 1")
    order = sorted(dist.labels, key=lambda lab: -dist[lab])  # stable: ties keep token order
    kept: set = set()
    mass = Fraction(0)
    for lab in order:
        kept.add(lab)
        mass += dist[lab]
        if mass >= t:
            break
    return Dist([dist[lab] / mass if lab in kept else Fraction(0) for lab in dist.labels],
                dist.labels, check=False)


def _ratio(p, q, x):
    """``p(x) / q(x)`` as a float kernel computes it: ``p/0`` is inf (accept), ``0/0`` NaN."""
    if q[x] != 0:
        return p[x] / q[x]
    return Fraction(1) if p[x] != 0 else Fraction(0)


# --- 1. greedy (argmax) drafts verified with the softmax ratio ------------------------------

def argmax_draft(s, p, q, k=1):
    """Bug: the draft is ``argmax q`` but the ratio and the residual use the softmax ``q``.

    The draft is deterministic (drawn from the point mass at ``argmax q``, ties by token
    order), accepted with probability ``min(1, p(x)/q(x))``; on rejection the output is drawn
    from ``norm(max(0, p - q))``.

    >>> from exactspec import Dist, verify
    >>> verify(argmax_draft, Dist.parse("1/2,1/2"), Dist.parse("3/4,1/4")).law_dist()
    Dist({0: 2/3, 1: 1/3})
    """
    x = s.draft(point_mass(q.labels, argmax(q)))
    if s.coin(min(1, _ratio(p, q, x)), "accept"):
        return s.accept(x)
    return s.draw(residual(p, q), "residual")


def argmax_draft_point_mass(s, p, q, k=1):
    """Fixed: verify the greedy draft against the point mass it came from.

    With proposal ``delta_x`` the lossless rule accepts ``x`` with probability ``p(x)`` and
    otherwise draws from ``norm(max(0, p - delta_x))``, which is ``p`` with ``x`` removed.

    >>> from exactspec import Dist, verify
    >>> result = verify(argmax_draft_point_mass, Dist.parse("1/2,1/2"), Dist.parse("3/4,1/4"))
    >>> result.lossless, result.acceptance
    (True, Fraction(1, 2))
    """
    x = s.draft(point_mass(q.labels, argmax(q)))
    if s.coin(p[x], "accept"):
        return s.accept(x)
    return s.draw(_without(p, x), "residual")


def _without(p: Dist, x) -> Dist:
    """``p`` with token ``x`` removed and renormalised (needs ``p(x) < 1``)."""
    return Dist.from_weights([Fraction(0) if lab == x else p[lab] for lab in p.labels],
                             p.labels)


# --- 2. drafts sampled from r, verified against q -------------------------------------------

def draft_from(r: Dist) -> Callable:
    """Bug: a verifier whose drafts come from ``r`` while the ratio uses the ``q`` it is given.

    >>> from exactspec import Dist, verify
    >>> half = Dist.parse("1/2,1/2")
    >>> verify(draft_from(Dist.parse("3/4,1/4")), half, half).law_dist()
    Dist({0: 3/4, 1: 1/4})
    """

    def drafted_from_r(s, p, q, k=1):
        x = s.draft(r)
        if s.coin(min(1, _ratio(p, q, x)), "accept"):
            return s.accept(x)
        return s.draw(residual(p, q), "residual")

    drafted_from_r.__name__ = "draft_from_r"
    drafted_from_r.__doc__ = "Drafts from r, verifies against q (lossy unless r = q)."
    return drafted_from_r


def draft_and_verify_with(r: Dist) -> Callable:
    """Fixed: the draft law ``r`` is also the law the verifier divides by (``sps`` with ``r``).

    >>> from exactspec import Dist, verify
    >>> half = Dist.parse("1/2,1/2")
    >>> verify(draft_and_verify_with(Dist.parse("3/4,1/4")), half, half).acceptance
    Fraction(3, 4)
    """

    def verified_against_r(s, p, q, k=1):
        return sps(s, p, r, k)

    verified_against_r.__name__ = "draft_and_verify_with_r"
    verified_against_r.__doc__ = "Drafts from r and verifies against r (lossless)."
    return verified_against_r


# --- 3. one uniform for the accept test and the residual draw -------------------------------

def reused_uniform(s, p, q, k=1):
    """Bug: the uniform of the accept test ``u < p(x)/q(x)`` also drives the residual draw.

    After a rejection ``u`` lies in ``[p(x)/q(x), 1)``, so the inverse-CDF lookup only reaches
    the upper part of the residual.  The fix is :func:`exactspec.methods.sps.sps_uniforms`
    (a fresh uniform for the draw).

    >>> from exactspec import Dist, verify
    >>> p, q = Dist.parse("1/2,1/4,1/4"), Dist.parse("1,0,0")
    >>> verify(reused_uniform, p, q).law_dist()
    Dist({0: 1/2, 1: 0, 2: 1/2})
    """
    x = s.draft(q)
    u = s.uniform()
    if u < p[x] / q[x]:
        return s.accept(x)
    return s.pick(residual(p, q), u, "residual")


# --- 4. top-p applied to the draft, not to the target ---------------------------------------

def unfiltered_target(p_raw: Dist) -> Callable:
    """Bug: the verifier computes the target from the raw logits (``p_raw``), ignoring top-p.

    The draft ``q`` was sampled with the user's top-p filter; the verifier runs the lossless
    rule against ``p_raw``, so its output law is ``p_raw``, not the filtered target ``p``.

    >>> from exactspec import Dist, verify
    >>> p_raw = Dist.parse("1/2,3/10,1/5")
    >>> intended = top_p(p_raw, "0.6")
    >>> verify(unfiltered_target(p_raw), intended, intended).law_dist()
    Dist({0: 1/2, 1: 3/10, 2: 1/5})
    """

    def verified_unfiltered(s, p, q, k=1):
        return sps(s, p_raw, q, k)

    verified_unfiltered.__name__ = "unfiltered_target"
    verified_unfiltered.__doc__ = "Verifies against the raw target, without the top-p filter."
    return verified_unfiltered


def filtered_target(p_raw: Dist, threshold) -> Callable:
    """Fixed: apply the same top-p filter to the target before verifying.

    >>> from exactspec import Dist, verify
    >>> p_raw = Dist.parse("1/2,3/10,1/5")
    >>> intended = top_p(p_raw, "0.6")
    >>> verify(filtered_target(p_raw, "0.6"), intended, intended).lossless
    True
    """
    target = top_p(p_raw, threshold)

    def verified_filtered(s, p, q, k=1):
        return sps(s, target, q, k)

    verified_filtered.__name__ = "filtered_target"
    verified_filtered.__doc__ = "Verifies against the top-p filtered target (lossless)."
    return verified_filtered


# --- 5. reported as bugs, but exact -----------------------------------------------------------

def accept_on_target_match(s, p, q, k=1):
    """Exact: draw the target's own token ``y ~ p``; accept the draft iff it equals ``y``.

    The output is ``y`` on every path, so its law is ``p``; the acceptance is
    ``sum_t p(t) q(t)``, below the lossless rule's ``sum_t min(p(t), q(t))``.

    >>> from exactspec import Dist, verify
    >>> p, q = Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5")
    >>> result = verify(accept_on_target_match, p, q)
    >>> result.lossless, result.acceptance
    (True, Fraction(7, 25))
    """
    x = s.draft(q)
    y = s.draw(p, "target")
    if y == x:
        return s.accept(x)
    return y


def point_mass_proposal(s, p, q, k=1):
    """Exact: treat the draft ``x`` as a point mass: accept with ``p(x)``, else ``p`` minus ``x``.

    Given any ``x`` the output law is ``p(x) delta_x + (1 - p(x)) p(. | not x) = p``, so the rule
    is lossless for every ``q``; its acceptance is ``sum_t q(t) p(t)``.

    >>> from exactspec import Dist, verify
    >>> p, q = Dist.parse("1/2,1/3,1/6"), Dist.parse("1/10,7/10,1/5")
    >>> result = verify(point_mass_proposal, p, q)
    >>> result.lossless, result.acceptance
    (True, Fraction(19, 60))
    """
    x = s.draft(q)
    if s.coin(p[x], "accept"):
        return s.accept(x)
    return s.draw(_without(p, x), "rest")


# --- the registry ----------------------------------------------------------------------------

@dataclass(frozen=True)
class GalleryEntry:
    """One bug class on its instance.

    Attributes
    ----------
    name : str
        The bug, as an identifier (``"reused_uniform"``).
    description : str
        How the bug arises in real kernels.
    buggy : callable or None
        The buggy verifier ``f(s, p, q, k=1)``; ``None`` for a rule reported as a bug that is
        exact (then ``correct`` is that rule).
    correct : callable
        The correct version, proved lossless on ``(p, q)``.
    p, q : Dist
        The intended target and the draft law handed to the verifier.
    expected_law : Dist
        The exact output law of ``buggy`` (``p`` for the exact entries).
    expected_acceptance : Fraction or None
        ``P(Y in X)`` of the reported rule, where the report states it.
    """

    name: str
    description: str
    buggy: Callable | None
    correct: Callable
    p: Dist
    q: Dist
    expected_law: Dist
    expected_acceptance: Any = None

    @property
    def reported(self) -> Callable:
        """The rule that was reported: ``buggy``, or the exact rule itself."""
        return self.buggy if self.buggy is not None else self.correct

    @property
    def is_bug(self) -> bool:
        """False for the two rules that were reported as bugs but are exact."""
        return self.buggy is not None


def _d(text: str) -> Dist:
    return Dist.parse(text)


_R = _d("3/4,1/4")
_P_RAW = _d("1/2,3/10,1/5")
_TOP_P = Fraction(3, 5)

GALLERY: list[GalleryEntry] = [
    GalleryEntry(
        name="argmax_draft",
        description=(
            "Greedy drafting (the draft model's argmax, e.g. temperature 0 on the draft side) "
            "while the verifier still divides by the draft's softmax q and resamples from "
            "norm(max(0, p - q)); the draft really came from the point mass at argmax q, and "
            "verifying against that point mass (accept with p(x), else p without x) is exact. "
            "On this instance taking the residual against the point mass instead gives the same "
            "law (2/3, 1/3): only token 1 has p > q and p > delta_0."),
        buggy=argmax_draft,
        correct=argmax_draft_point_mass,
        p=_d("1/2,1/2"),
        q=_d("3/4,1/4"),
        expected_law=_d("2/3,1/3"),
    ),
    GalleryEntry(
        name="draft_from_other_model",
        description=(
            "The drafts are sampled from one law r (another temperature, stale sampling "
            "parameters, a different draft head) while the verifier is handed the "
            "probabilities q of another; with p = q every draft is accepted and the output is r."),
        buggy=draft_from(_R),
        correct=draft_and_verify_with(_R),
        p=_d("1/2,1/2"),
        q=_d("1/2,1/2"),
        expected_law=_R,
    ),
    GalleryEntry(
        name="reused_uniform",
        description=(
            "A kernel draws one random number per position and uses it both for the accept "
            "test u < p(x)/q(x) and for the inverse-CDF draw from the residual; after a "
            "rejection u is confined to [p(x)/q(x), 1), so the draw reaches only the upper "
            "part of the residual's CDF."),
        buggy=reused_uniform,
        correct=sps_uniforms,
        p=_d("1/2,1/4,1/4"),
        q=_d("1,0,0"),
        expected_law=_d("1/2,0,1/2"),
    ),
    GalleryEntry(
        name="top_p_unfiltered_target",
        description=(
            "The draft sampler applies the user's top-p filter but the verifier computes p from "
            "the raw target logits; rejections then resample tokens the filter removed, and the "
            "output is the unfiltered target (here token 2 with probability 1/5) instead of the "
            "top-p law (5/8, 3/8, 0). The draft model equals the target model, top-p 0.6."),
        buggy=unfiltered_target(_P_RAW),
        correct=filtered_target(_P_RAW, _TOP_P),
        p=top_p(_P_RAW, _TOP_P),
        q=top_p(_P_RAW, _TOP_P),
        expected_law=_P_RAW,
    ),
    GalleryEntry(
        name="accept_on_target_match",
        description=(
            "Reported as a bug, but exact: the verifier samples the target's own token y ~ p "
            "and accepts the draft iff it equals y, else outputs y; the output is always y, "
            "so its law is p. Only the acceptance sum_t p(t) q(t) is worse than the lossless "
            "rule's sum_t min(p(t), q(t)) (7/25 against 3/5 here)."),
        buggy=None,
        correct=accept_on_target_match,
        p=_d("1/2,3/10,1/5"),
        q=_d("1/5,1/5,3/5"),
        expected_law=_d("1/2,3/10,1/5"),
        expected_acceptance=Fraction(7, 25),
    ),
    GalleryEntry(
        name="point_mass_proposal",
        description=(
            "Reported as a bug, but exact: the verifier treats the proposal as a point mass on "
            "the draft x, accepting with probability p(x) and otherwise drawing from p with x "
            "removed; given any x the output law is p, so it is lossless for every q, with "
            "acceptance sum_t q(t) p(t) (19/60 here, against 3/5 for the lossless rule)."),
        buggy=None,
        correct=point_mass_proposal,
        p=_d("1/2,1/3,1/6"),
        q=_d("1/10,7/10,1/5"),
        expected_law=_d("1/2,1/3,1/6"),
        expected_acceptance=Fraction(19, 60),
    ),
]


class GalleryRow(NamedTuple):
    """One row of :func:`run_gallery`: the reported rule's verdict and exact law, its TV to the
    intended ``p``, and the verdict of the correct version (verdicts: ``"lossless"`` or
    ``"lossy-logic"``, exact arithmetic with ideal uniforms)."""

    name: str
    verdict: str
    law: Dist
    tv: Fraction
    correct: str


def run_gallery(entries=None) -> list[GalleryRow]:
    """Verify every entry exactly: ``(name, verdict, law, tv, correct)`` per entry.

    ``verdict`` and ``law`` are those of the reported rule (the buggy version, or the exact
    rule itself); ``tv`` is ``TV(law, p)``; ``correct`` is the verdict of the correct version.

    >>> row = run_gallery()[0]
    >>> row.name, row.verdict, row.law, row.tv, row.correct
    ('argmax_draft', 'lossy-logic', Dist({0: 2/3, 1: 1/3}), Fraction(1, 6), 'lossless')
    """
    rows = []
    for entry in GALLERY if entries is None else entries:
        reported = verify(entry.reported, entry.p, entry.q)
        law = reported.law_dist()
        correct = verify(entry.correct, entry.p, entry.q)
        rows.append(GalleryRow(entry.name, reported.verdict, law,
                               total_variation(law, entry.p), correct.verdict))
    return rows
