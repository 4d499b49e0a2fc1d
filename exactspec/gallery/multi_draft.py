"""Multi-draft negative controls: RRS run on the wrong draft law, each next to the right rule.

Two known lossy mismatches (docs/methods.md#known-lossy-mismatches).  Both are ordinary verifiers written against
the sampling interface; the engine refutes them with their exact output law, and proves the
matching correct rule.

- :func:`rrs_on_wor_drafts`: the with-replacement RRS rule (``q`` never changes) applied to
  drafts drawn *without* replacement.  After a rejection the next draft cannot repeat the
  rejected token, but the residual still subtracts all of ``q``.  Correct rule: ``rrs-wor``.
- :func:`rrs_skipping_duplicates`: i.i.d. drafts, but a draft equal to one already rejected is
  skipped (as a token tree that merges duplicate children does).  Skipping changes the law of
  the next draft that is actually verified.  Correct rule: ``rrs``.

>>> [(row.name, row.verdict, row.correct) for row in run_gallery_multi()]
... # doctest: +NORMALIZE_WHITESPACE
[('rrs_on_wor_drafts', 'lossy-logic', 'lossless'),
 ('rrs_skipping_duplicates', 'lossy-logic', 'lossless')]
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, NamedTuple

from ..core.dist import Dist, residual, total_variation
from ..methods.rrs import rrs
from ..methods.rrs_wor import rrs_wor
from ..verify import verify

__all__ = ["rrs_on_wor_drafts", "rrs_skipping_duplicates", "MultiGalleryEntry",
           "GALLERY_MULTI", "MultiGalleryRow", "run_gallery_multi"]


def rrs_on_wor_drafts(s, p, q, k=1):
    """RRS with ``q`` held fixed, but the drafts drawn without replacement (lossy)."""
    drafts = s.drafts(q, k, replace=False)
    r = p
    for i, x in enumerate(drafts):
        if s.coin(min(1, r[x] / q[x]), f"accept{i + 1}"):
            return s.accept(x)
        r = residual(r, q)
    return s.draw(r, "residual")


def rrs_skipping_duplicates(s, p, q, k=1):
    """RRS on i.i.d. drafts that skips a draft equal to one already rejected (lossy)."""
    drafts = s.drafts(q, k)
    r = p
    rejected = set()
    for i, x in enumerate(drafts):
        if x in rejected:
            continue
        if s.coin(min(1, r[x] / q[x]), f"accept{i + 1}"):
            return s.accept(x)
        rejected.add(x)
        r = residual(r, q)
    return s.draw(r, "residual")


@dataclass(frozen=True)
class MultiGalleryEntry:
    """One mismatch on its instance: the lossy rule, the correct rule, ``(p, q, k)`` and the
    lossy rule's exact output law."""

    name: str
    description: str
    buggy: Callable
    correct: Callable
    p: Dist
    q: Dist
    k: int
    expected_law: Dist


_F = Fraction
_SEED_P = Dist([_F(1, 2), _F(3, 10), _F(1, 5)], "abc")
_SEED_Q = Dist([_F(1, 5), _F(1, 5), _F(3, 5)], "abc")

GALLERY_MULTI = [
    MultiGalleryEntry(
        name="rrs_on_wor_drafts",
        description=(
            "The with-replacement RRS verifier handed drafts sampled without replacement: "
            "after c is rejected the second draft is a or b, each with chance 1/2 instead of "
            "1/5, yet it is judged against the residual formed with the unchanged q, where "
            "it is accepted surely; the output law becomes (2/5, 2/5, 1/5) instead of "
            "(1/2, 3/10, 1/5)."),
        buggy=rrs_on_wor_drafts, correct=rrs_wor, p=_SEED_P, q=_SEED_Q, k=2,
        expected_law=Dist([_F(2, 5), _F(2, 5), _F(1, 5)], "abc"),
    ),
    MultiGalleryEntry(
        name="rrs_skipping_duplicates",
        description=(
            "RRS on i.i.d. drafts that skips a draft equal to an already rejected one (a tree "
            "that merges duplicate children): when both drafts are c and the first is "
            "rejected, RRS would reject the second c too and resample from (11/12, 1/12, 0); "
            "skipping it resamples from (3/4, 1/4, 0) instead, so b comes out too often: "
            "(23/50, 17/50, 1/5)."),
        buggy=rrs_skipping_duplicates, correct=rrs, p=_SEED_P, q=_SEED_Q, k=2,
        expected_law=Dist([_F(23, 50), _F(17, 50), _F(1, 5)], "abc"),
    ),
]


class MultiGalleryRow(NamedTuple):
    """The lossy rule's verdict and exact law, its TV to ``p``, and the correct rule's
    verdict (verdicts: ``"lossless"`` or ``"lossy-logic"``)."""

    name: str
    verdict: str
    law: Dist
    tv: Fraction
    correct: str


def run_gallery_multi(entries=None) -> list[MultiGalleryRow]:
    """Verify every entry exactly."""
    rows = []
    for entry in GALLERY_MULTI if entries is None else entries:
        bad = verify(entry.buggy, entry.p, entry.q, entry.k)
        good = verify(entry.correct, entry.p, entry.q, entry.k)
        law = bad.law_dist()
        rows.append(MultiGalleryRow(entry.name, bad.verdict, law, total_variation(law, entry.p),
                                    good.verdict))
    return rows
