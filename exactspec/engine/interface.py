"""The sampling interface, declared: what a rule may call on ``s``, and what the driver calls.

A rule ``rule(s, p, q[, k])`` makes every random choice through ``s``; every interpreter of the
engine (exact paths, merged states, law leaves, the vocabulary-generic run, the float run, the
tensor axes of a PyTorch rule, seeded sampling, the certificate checker's replay) offers the
same calls, :class:`Sampler`.  A sampler that enumerates also offers the few operations the one
depth-first driver (:func:`~exactspec.engine.driver.depth_first`) works it by,
:class:`Enumerating`; they are private (a rule never calls them), and no route calls them
but the driver.  (The certificate checker's replay, which imports nothing of the engine, offers
the calls a certificate records, :data:`REPLAYED_CALLS`: a path of a rule that calls the others
is not recorded in a certificate.)  ``tests/test_interface.py`` holds every sampler class of the package to these
two declarations, parameter by parameter.

>>> from exactspec.engine.exact import ExactSampler
>>> from exactspec.engine.sampling import RandomSampler
>>> isinstance(ExactSampler(), Sampler), isinstance(ExactSampler(), Enumerating)
(True, True)
>>> import numpy
>>> isinstance(RandomSampler(numpy.random.default_rng(0)), Enumerating)
False
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["Enumerating", "REPLAYED_CALLS", "SAMPLER_CALLS", "Sampler"]


@runtime_checkable
class Sampler(Protocol):
    """The calls a rule may make on its sampler ``s`` (the guide's table of the interface).

    Each returns what the interpreter makes of it: a token, a boolean, a uniform, a noise
    vector (exact values and their law when enumerating, numbers when sampling).
    """

    def draw(self, dist, what: str = "draw") -> Any:
        """A token drawn from ``dist``."""

    def coin(self, prob, what: str = "coin") -> bool:
        """``True`` with probability ``prob``."""

    def draft(self, q, what: str = "draft") -> Any:
        """One draft token from ``q``."""

    def drafts(self, q, k: int, replace: bool = True) -> tuple:
        """``k`` draft tokens from ``q``, with or without replacement."""

    def accept(self, x) -> Any:
        """``x``, marked as an accepted draft."""

    def uniform(self) -> Any:
        """An explicit uniform on ``[0, 1)``."""

    def pick(self, dist, u, what: str = "pick") -> Any:
        """The inverse-CDF draw of ``dist`` at the uniform ``u``."""

    def exp(self, x) -> Any:
        """``exp(x)`` in the interpreter's arithmetic."""

    def log(self, x) -> Any:
        """``log(x)`` in the interpreter's arithmetic."""

    def softmax(self, logits) -> list:
        """The softmax of ``logits`` in the interpreter's arithmetic."""

    def exponentials(self, n: int) -> Any:
        """``n`` i.i.d. standard exponentials (a noise vector over the vocabulary)."""

    def gumbels(self, n: int) -> Any:
        """``n`` i.i.d. standard Gumbels (a noise vector over the vocabulary)."""

    def race(self, weights, noise, *, first: bool = True, what: str = "race") -> Any:
        """The winner of the race of ``weights`` on ``noise``."""


#: The names of :class:`Sampler`'s calls, in the order the guide lists them.
SAMPLER_CALLS = ("draw", "coin", "draft", "drafts", "accept", "uniform", "pick", "exp", "log",
                 "softmax", "exponentials", "gumbels", "race")

#: The calls the certificate checker's replay sampler offers (a certificate's recorded choices).
REPLAYED_CALLS = ("draw", "coin", "draft", "drafts", "accept", "uniform", "pick")


@runtime_checkable
class Enumerating(Protocol):
    """What the depth-first driver works an enumerating sampler by.

    The sampler keeps a prefix of choices, ``_prefix``; ``_reset()`` starts a run along it
    (``_depth`` choices made so far, ``weight`` the run's probability), a choice past the
    prefix's end takes its first option, and ``_advance()`` moves to the next untried prefix
    (``False`` when every path has run).
    """

    _prefix: list
    _depth: int

    def _reset(self) -> None:
        """Start a run along the prefix."""

    def _advance(self) -> bool:
        """Move to the next untried prefix; ``False`` when there is none."""
