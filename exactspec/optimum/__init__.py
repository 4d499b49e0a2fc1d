"""The optimum for ``k`` drafts and the draft laws it is taken over.

- :mod:`.alpha_star`: ``alpha*``, the accepted-token law ``a*`` and the tight prefixes, three
  ways (closed form, brute force over subsets, exact max flow over draft multisets); the
  optimum of any draft law; the exact transport flow used by the ``optimal`` method (gathered
  from :mod:`exactspec.optimum.closed_form`, :mod:`.subsets`, :mod:`.multisets`,
  :mod:`.max_flow`, :mod:`.law_optima` and :mod:`.checks`);
- :mod:`.draft_laws`: how the ``k`` drafts of one position are drawn (i.i.d., without
  replacement, SpecHub's hub law), with their exact multiset laws.

>>> from exactspec import Dist
>>> optimum(Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"), 2).alpha_star
Fraction(21, 25)
"""

from .alpha_star import *  # noqa: F401,F403  (the optimum's public names)
from .alpha_star import __all__ as _optimum_names
from .draft_laws import (IID, DraftLaw, Hub, WithoutReplacement, draft_law, drafts,
                         is_exact_dist, point_mass, restricted)

__all__ = list(_optimum_names) + ["DraftLaw", "IID", "WithoutReplacement", "Hub", "draft_law",
                                  "drafts", "point_mass", "restricted", "is_exact_dist"]
