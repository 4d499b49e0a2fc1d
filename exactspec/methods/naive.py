"""``naive``: output the draft as it is (lossy).  Law ``q``, bias ``TV(q, p)``."""

from .base import Method


def naive(s, p, q, k=1):
    """Keep every draft: the output law is ``q``, not ``p``."""
    return s.accept(s.draft(q))


METHOD = Method("naive", naive, claimed_lossless=False, k_values=(1,),
                summary="keeps every draft: output law q (lossy)")
