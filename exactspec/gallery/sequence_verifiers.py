"""exactspec's own sequence verifiers by name: what a sequence certificate's replay rebuilds.

A sequence certificate (:func:`exactspec.sequences.multitoken.sequence_certificate`) names its
verifier by ``method``, ``gamma`` and ``parameters`` (:meth:`~exactspec.sequences.multitoken.
Verifier.identity`).  The checker rebuilds exactspec's own verifiers from this table only:
chains, block verification, token trees of a named node rule, Traversal Verification, the
sequence-level bug classes and the engine-shaped rules of :mod:`exactspec.gallery.engines`.
Nothing the certificate names is imported: a name outside the table is a user's verifier,
replayed only through a function the person checking trusts.

>>> build_verifier("tree", None, {"branching": [2, 2], "rule": "rrs-wor", "drafts": "wor",
...                               "lazy": True})
Tree([2, 2], 'rrs-wor', 'wor')
>>> build_verifier("chain", 2, {"lazy": False}).identity()
('chain', 2, {'lazy': False})
>>> build_verifier("chain", 2, {"lazy": False, "extra": 1})
Traceback (most recent call last):
...
exactspec.core.errors.InvalidInput: verifier chain: unknown parameter 'extra'
"""

from __future__ import annotations

from ..core.errors import InvalidInput
from ..sequences.block import Block
from ..sequences.chains import Chain
from ..sequences.traversal import Traversal
from ..sequences.trees import (MAX_TREE_NODES, Tree, drafted_tokens, first_row_bonus_chain,
                               kept_rejected_chain, stale_residual_tree)
from .engines import ENGINE_RULES, EngineRule

__all__ = ["SEQUENCE_VERIFIERS", "build_verifier", "MAX_GAMMA"]

#: The most draft tokens per call a rebuilt verifier takes.
MAX_GAMMA = 64


def _gamma(name, gamma, low=0):
    if isinstance(gamma, bool) or not isinstance(gamma, int) or not low <= gamma <= MAX_GAMMA:
        raise InvalidInput(f"verifier {name}: gamma {gamma!r}: an integer from {low} to "
                           f"{MAX_GAMMA}")
    return gamma


def _no_gamma(name, gamma):
    if gamma is not None:
        raise InvalidInput(f"verifier {name}: takes no gamma (its shape is 'branching')")


def _branching(name, value):
    if not isinstance(value, list) or not value or not all(
            isinstance(b, int) and not isinstance(b, bool) and 1 <= b <= MAX_TREE_NODES
            for b in value) or len(value) > MAX_GAMMA:
        raise InvalidInput(f"verifier {name}: branching: a list of children per depth (>= 1)")
    if drafted_tokens(value) > MAX_TREE_NODES:
        raise InvalidInput(f"verifier {name}: branching {value[:8]}: more than "
                           f"{MAX_TREE_NODES:,} drafted tokens per call")
    return tuple(value)


def _flag(name, value, what):
    if not isinstance(value, bool):
        raise InvalidInput(f"verifier {name}: {what}: true or false")
    return value


def _word(name, value, what):
    if not isinstance(value, str) or not value.replace("-", "").isalnum() or len(value) > 64:
        raise InvalidInput(f"verifier {name}: {what}: a name")
    return value


def _chain(name, gamma, p):
    return Chain(_gamma(name, gamma), lazy=_flag(name, p["lazy"], "lazy"))


def _block(name, gamma, p):
    return Block(_gamma(name, gamma))


def _tree(name, gamma, p):
    _no_gamma(name, gamma)
    return Tree(_branching(name, p["branching"]), _word(name, p["rule"], "rule"),
                _word(name, p["drafts"], "drafts"), lazy=_flag(name, p["lazy"], "lazy"))


def _traversal(name, gamma, p):
    _no_gamma(name, gamma)
    return Traversal(_branching(name, p["branching"]))


def _stale(fixed):
    def build(name, gamma, p):
        _no_gamma(name, gamma)
        return stale_residual_tree(_branching(name, p["branching"]), fixed=fixed)
    return build


def _engine(call):
    def build(name, gamma, p):
        return EngineRule(call, _gamma(name, gamma, 1))
    return build


#: name -> (its parameters, ``build(name, gamma, parameters) -> Verifier``).
SEQUENCE_VERIFIERS: dict = {
    "chain": (("lazy",), _chain),
    "block": ((), _block),
    "tree": (("branching", "rule", "drafts", "lazy"), _tree),
    "traversal": (("branching",), _traversal),
    "first-row-bonus": ((), lambda n, g, p: first_row_bonus_chain(_gamma(n, g, 1))),
    "rejected-draft-kept": ((), lambda n, g, p: kept_rejected_chain(_gamma(n, g, 1))),
    "stale-residual-bonus": (("branching",), _stale(False)),
    "tree-rrs": (("branching",), _stale(True)),
}
for _call, _name in ENGINE_RULES.items():
    assert _name not in SEQUENCE_VERIFIERS, _name
    SEQUENCE_VERIFIERS[_name] = ((), _engine(_call))


def build_verifier(name: str, gamma, parameters: dict):
    """exactspec's own sequence verifier ``name`` with ``gamma`` and ``parameters`` (exactly
    the keys it takes); :class:`InvalidInput` for a name outside :data:`SEQUENCE_VERIFIERS`
    or parameters off its schema.  The verifier rebuilt has the same identity."""
    if name not in SEQUENCE_VERIFIERS:
        raise InvalidInput(f"verifier {str(name)[:80]!r} is not one of exactspec's sequence "
                           "verifiers")
    keys, build = SEQUENCE_VERIFIERS[name]
    if not isinstance(parameters, dict):
        raise InvalidInput(f"verifier {name}: parameters: an object expected")
    unknown = sorted(set(parameters) - set(keys))
    if unknown:
        raise InvalidInput(f"verifier {name}: unknown parameter {unknown[0]!r}")
    missing = [k for k in keys if k not in parameters]
    if missing:
        raise InvalidInput(f"verifier {name}: missing parameter {missing[0]!r}")
    verifier = build(name, gamma, parameters)
    if verifier.identity() != (name, gamma, parameters):
        raise InvalidInput(f"verifier {name}: these parameters name another verifier "
                           f"({verifier.identity()})")
    return verifier
