"""exactspec in a test suite: exact assertions and the exact probability that a check holds.

- :func:`assert_lossless` (one instance, or the family of small instances when ``p`` and
  ``q`` are omitted; ``arith`` and ``tolerance`` for a float kernel),
  :func:`assert_lossless_family` and :func:`assert_acceptance` raise one
  :class:`AssertionError` that names the (smallest) counterexample, its exact output law
  against the target and the exact TV;
- :func:`probability` is the exact probability that a randomized check holds (a function with
  a rule's signature that draws through the sampler and returns a bool);
  :func:`probability_report` adds the paths on which it fails;
- :func:`power`, :func:`detectable_bias` and :func:`samples_needed` (:mod:`.power`): what a
  statistical histogram test (TV, squared L2 or chi-square, ``n`` samples, a threshold) can
  see: its exact power for small ``n``, a stated approximation beyond.

The pytest plugin (:mod:`exactspec.pytest_plugin`) wraps these as fixtures and a marker.

>>> from exactspec import Dist
>>> from exactspec.testing import assert_lossless, probability
>>> assert_lossless("sps", Dist.parse("1/2,3/10,1/5"), Dist.parse("1/5,1/5,3/5"))
>>> def first_is_zero(s, p, q):
...     return s.draw(p) == 0
>>> probability(first_is_zero, Dist.parse("1/3,2/3"), Dist.parse("1/2,1/2"))
Fraction(1, 3)
"""

from .assertions import (LosslessAssertionError, assert_acceptance, assert_lossless,
                         assert_lossless_family)
from .power import (PowerReport, chi2_threshold, detectable_bias, exact_power, power,
                    samples_needed, statistic_law)
from .probability import FailingPath, ProbabilityReport, probability, probability_report

__all__ = ["LosslessAssertionError", "assert_acceptance", "assert_lossless",
           "assert_lossless_family", "probability", "probability_report", "ProbabilityReport",
           "FailingPath", "PowerReport", "chi2_threshold", "detectable_bias", "exact_power",
           "power", "samples_needed", "statistic_law"]
