"""KEY: an exact optimal verifier for ``k`` i.i.d. drafts, built from random keys.

Each draft draws a random key; the draft with the smallest key is selected and accepted with
probability ``a*(t) / w(t)``; on rejection the output is drawn from ``(p - a*) / (1 - alpha*)``.
The keys are placed (:mod:`.placement`) so that the selected token has law ``w`` with
``w = a*`` on every tight block and ``w >= a*`` elsewhere: the verifier is lossless and accepts
with probability exactly ``alpha*`` for every ``p``, ``q``, ``k``.  :mod:`.selection` gives the
selection law ``r*(t | X)`` in closed form; :mod:`.sampler` samples the keys as real numbers
and tests the sampler against the closed form.  Derivation and proof: docs/key.md.

>>> from exactspec.core.dist import Dist
>>> plan = key_placement(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 2)
>>> plan.alpha_star, plan.winner, plan.beta
(Fraction(21, 25), Dist({0: 9/25, 1: 7/25, 2: 9/25}), Dist({0: 1, 1: 1, 2: 5/9}))
"""

from .placement import LATER, Block, KeyPlacement, Swap, key_placement
from .selection import acceptance_law, check_selection_law, draw_drafts, expected_key_draws, \
    key_law, selection_law, smallest_key, smallest_key_lazy

__all__ = ["Block", "KeyPlacement", "LATER", "Swap", "key_placement", "selection_law",
           "acceptance_law", "key_law", "draw_drafts", "smallest_key", "smallest_key_lazy",
           "expected_key_draws", "check_selection_law", "sample_selection", "sample_verifier",
           "selection_test", "verifier_test", "SamplingTest"]

_SAMPLER_NAMES = {"SamplingTest", "sample_selection", "sample_verifier", "selection_test",
                  "verifier_test"}


def __getattr__(name):
    """The sampler's names load NumPy, so they are imported on first use only."""
    if name in _SAMPLER_NAMES:
        from . import sampler

        return getattr(sampler, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
