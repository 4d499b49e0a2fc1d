"""The claims behind ``exactspec prove``: one statement each, with a check and a certificate.

>>> [c.name for c in all_claims()][:2]
['lossless-rule', 'acceptance-1-tv']
"""

from __future__ import annotations

from ..core.errors import InvalidInput
from .base import PROVED, REFUTED, UNDECIDED, Claim, ClaimResult

__all__ = ["Claim", "ClaimResult", "all_claims", "get_claim", "PROVED", "REFUTED", "UNDECIDED"]


def all_claims() -> list[Claim]:
    """Every registered claim, in a stable order."""
    from . import (bounds, generic, key, lossy_rules, multi_draft, one_draft, races, traversal,
                   trees)

    return [claim for module in (one_draft, multi_draft, trees, bounds, key, traversal, lossy_rules,
                                 races, generic)
            for claim in module.CLAIMS]


def get_claim(name: str) -> Claim:
    """The claim called ``name``."""
    for claim in all_claims():
        if claim.name == name:
            return claim
    known = ", ".join(c.name for c in all_claims())
    raise InvalidInput(f"unknown claim {name!r}: choose one of {known}")
