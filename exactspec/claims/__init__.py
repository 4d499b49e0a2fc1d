"""The claims behind ``exactspec prove``: one statement each, with a check and a certificate.

>>> [c.name for c in all_claims()][:2]
['lossless-rule', 'acceptance-1-tv']
"""

from __future__ import annotations

from ..errors import InvalidInput
from .base import PROVED, REFUTED, UNDECIDED, Claim, ClaimResult

__all__ = ["Claim", "ClaimResult", "all_claims", "get_claim", "PROVED", "REFUTED", "UNDECIDED"]


def all_claims() -> list[Claim]:
    """Every registered claim, in a stable order."""
    from . import multi_draft, one_draft
    from . import trees  # issue 7: chains, token trees, block verification
    from . import bounds  # issue 4: rho_k, its tight instances, the bound's evidence

    return (list(one_draft.CLAIMS) + list(multi_draft.CLAIMS) + list(trees.CLAIMS)
            + list(bounds.CLAIMS) + list(_key_claims()))


def _key_claims():  # issue 5: KEY
    from . import key

    return key.CLAIMS


def get_claim(name: str) -> Claim:
    """The claim called ``name``."""
    for claim in all_claims():
        if claim.name == name:
            return claim
    known = ", ".join(c.name for c in all_claims())
    raise InvalidInput(f"unknown claim {name!r}: choose one of {known}")
