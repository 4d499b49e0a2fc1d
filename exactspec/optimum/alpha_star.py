"""The optimum for ``k`` drafts: ``alpha*``, the accepted-token law ``a*``, tight prefixes.

:func:`optimum` computes ``alpha*(p, q, k)`` for ``k`` i.i.d. drafts in closed form (a
cumulative minimum over the tokens sorted by ``q/p``, :mod:`exactspec.optimum.closed_form`
states it; docs/math.md#the-optimum), with one optimal accepted-token law ``a*`` and the
tight prefixes, exactly; it is cross-checked by brute force over all subsets
(:func:`alpha_star_brute_force`) and by an exact max-flow over draft multisets
(:func:`alpha_star_max_flow`, which also handles drafts without replacement and SpecHub's hub
law).  :func:`law_optimum` gives the optimum of any of those draft laws by brute force over
cuts, and :func:`check_optimum` runs every cross-check that fits its budget.

This module gathers the optimum's public names from the modules of ``exactspec.optimum`` that
define them, one concern each: the closed form and the inputs it reads (``closed_form``),
brute force over subsets (``subsets``), the draft multisets (``multisets``), the exact max
flow (``max_flow``), the optimum of the other draft laws (``law_optima``) and the
cross-checks (``checks``).

>>> p = Dist.parse("1/2,3/10,1/5", labels="abc")
>>> q = Dist.parse("1/5,1/5,3/5", labels="abc")
>>> optimum(p, q, 2).alpha_star
Fraction(21, 25)
>>> check_optimum(p, q, 2)
{'closed_form': True, 'brute_force': True, 'max_flow': True}
"""

from fractions import Fraction  # noqa: F401  (the examples' namespace)

from ..core.dist import Dist  # noqa: F401  (the examples' namespace)
from .checks import CHECK_FLOW_MULTISETS, check_optimum, checks_and_skips, optimum_check_skips
from .closed_form import (DRAFT_LAWS, Optimum, accepted_law, check_k, g, law_pair,
                          optimal_acceptance, optimal_order, optimum)
from .law_optima import hub_optimum, law_optimum
from .max_flow import alpha_star_max_flow, realisable_by_flow, transport_flow
from .multisets import MAX_MULTISETS, draft_multiset_count, draft_multisets, hub_token
from .subsets import MAX_SUBSET_TOKENS, alpha_star_brute_force, infeasible_set, is_feasible

__all__ = ["DRAFT_LAWS", "MAX_MULTISETS", "MAX_SUBSET_TOKENS", "Optimum", "g", "optimal_order",
           "optimum", "optimal_acceptance", "accepted_law", "alpha_star_brute_force",
           "alpha_star_max_flow", "draft_multisets", "draft_multiset_count", "law_optimum",
           "hub_optimum", "hub_token", "is_feasible", "infeasible_set", "check_optimum",
           "optimum_check_skips", "CHECK_FLOW_MULTISETS", "check_k", "checks_and_skips",
           "law_pair", "realisable_by_flow", "transport_flow"]
