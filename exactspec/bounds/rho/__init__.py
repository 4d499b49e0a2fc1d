"""``rho_k``: how far recursive rejection sampling can fall short of the optimum, in one place.

- :mod:`.closed_form`: ``rho_k`` derived with sympy, its limit, monotonicity, the tight
  instances and certified comparisons;
- :mod:`.engine_checks`: the tight instances run through the exact engine, the lumping step,
  the ratio survey on random instances;
- :mod:`.report`: what ``exactspec rho K`` prints.

>>> rho(2).rho
23/27
"""

from .closed_form import *  # noqa: F401,F403
from .closed_form import __all__ as _closed_form_names
from .report import rho_report, rho_text

__all__ = list(_closed_form_names) + ["rho_report", "rho_text"]
