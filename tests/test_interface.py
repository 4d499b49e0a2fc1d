"""Every sampler of the package offers the declared sampling interface (engine/interface.py).

A rule may call any of :class:`~exactspec.engine.interface.Sampler`'s calls on whatever
interpreter runs it; an enumerating sampler also offers what the one driver works it by
(:class:`~exactspec.engine.interface.Enumerating`).  The classes are found by walking the
package, so a new sampler is held to the declaration without an edit here.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import exactspec
from exactspec.engine.driver import depth_first
from exactspec.engine.interface import REPLAYED_CALLS, SAMPLER_CALLS, Enumerating, Sampler


def _sampler_classes() -> list[type]:
    found = {}
    for info in pkgutil.walk_packages(exactspec.__path__, "exactspec."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (inspect.isclass(obj) and obj.__module__ == info.name
                    and name.endswith("Sampler") and obj not in (Sampler,)):
                found[f"{info.name}.{name}"] = obj
    return [found[k] for k in sorted(found)]


SAMPLERS = _sampler_classes()


def _parameters(function) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default)
            for p in inspect.signature(function).parameters.values()]


def test_the_walk_finds_the_samplers():
    names = {c.__name__ for c in SAMPLERS}
    assert {"ExactSampler", "RandomSampler", "GenericSampler", "FloatSampler", "LawSampler",
            "VectorSampler", "PairSampler", "FactoredSampler"} <= names


def test_the_declared_calls_are_the_protocols():
    declared = {n for n in vars(Sampler) if not n.startswith("_")}
    assert declared == set(SAMPLER_CALLS)


@pytest.mark.parametrize("cls", SAMPLERS, ids=lambda c: c.__qualname__)
def test_every_sampler_offers_every_call_with_the_declared_parameters(cls):
    replay = cls.__module__.startswith("exactspec.checker")   # the checker's own, stdlib only
    for call in REPLAYED_CALLS if replay else SAMPLER_CALLS:
        method = getattr(cls, call, None)
        assert callable(method), f"{cls.__qualname__} has no {call}()"
        want = _parameters(getattr(Sampler, call))
        got = _parameters(method)
        # the declared parameters, in order, with their kinds and defaults; more may follow
        # only with defaults (an interpreter's own options)
        assert got[:len(want)] == want, (cls.__qualname__, call, got, want)
        assert all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                   for p in list(inspect.signature(method).parameters.values())[len(want):])


@pytest.mark.parametrize("cls", [c for c in SAMPLERS if hasattr(c, "_advance")],
                         ids=lambda c: c.__qualname__)
def test_an_enumerating_sampler_offers_the_driver_hooks(cls):
    for hook in ("_reset", "_advance"):
        assert callable(getattr(cls, hook))
    assert _parameters(cls._reset) == [("self", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                        inspect.Parameter.empty)]


def test_the_driver_runs_on_the_declared_hooks_alone():
    """A sampler with nothing but the declared hooks and one call is enumerated by the driver:
    the driver needs no more of a sampler than :class:`Enumerating` says."""

    class TwoCoins:
        def __init__(self):
            self._prefix, self._depth, self.weight = [], 0, 1

        def _reset(self):
            self._depth, self.weight = 0, 1

        def coin(self, prob, what="coin"):
            if self._depth == len(self._prefix):
                self._prefix.append(0)
            heads = self._prefix[self._depth] == 0
            self._depth += 1
            self.weight *= prob if heads else 1 - prob
            return heads

        def _advance(self):
            while self._prefix and self._prefix[-1] == 1:
                self._prefix.pop()
            if not self._prefix:
                return False
            self._prefix[-1] = 1
            return True

    from fractions import Fraction

    s = TwoCoins()
    assert isinstance(s, Enumerating) and not isinstance(s, Sampler)
    law = {}
    count = depth_first(s, lambda s: (s.coin(Fraction(1, 3)), s.coin(Fraction(1, 4))),
                        lambda s, y: law.__setitem__(y, law.get(y, 0) + s.weight))
    assert count == 4
    assert law == {(True, True): Fraction(1, 12), (True, False): Fraction(1, 4),
                   (False, True): Fraction(1, 6), (False, False): Fraction(1, 2)}
