"""The exact core: distributions, errors and the exact rational simplex.

Everything else in exactspec is built on these three modules, and they import nothing from
the rest of the package:

- :mod:`.dist`: exact finite distributions (``Dist``), parsing and validation, TV, overlap,
  residual;
- :mod:`.errors`: the error classes (``ExactspecError`` and its subclasses);
- :mod:`.lp`: an exact rational simplex (feasibility of symbolic cases);
- :mod:`.random_dists`: random rational distributions with small denominators.
"""

from .dist import Dist, overlap, residual, total_variation
from .errors import ExactspecError, InvalidInput, NotExact, TooLarge, Undecided

__all__ = ["Dist", "overlap", "residual", "total_variation", "ExactspecError", "InvalidInput",
           "NotExact", "TooLarge", "Undecided"]
