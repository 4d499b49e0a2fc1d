"""The rules of value types with their own semantics, looked up by the type of an element.

An element of a tensor is a plain number (an exact rational, a value of a float format, a
Python int or bool), a random value of the engine (a uniform, an expression of one, noise:
:func:`is_random`), or a value of a type that brings its own rules: the draft-axis values of
the vectorised route (:mod:`.axis_values`: a value on every draft branch, a token kept as
its law, a split not yet decided, a token selected by one).  Such a type registers, beside
its definition, how it takes part in each kind of operation (:func:`register`), and the
generic code (:mod:`exactspec.torch_layer.values`, the tensor modules, :mod:`.functions`) asks the table of that
kind with the element's exact type (``type(x) in ARITH``: one dict look-up on the hot path,
no chain of type tests).

The kinds, each a dict from a type to its rule (the arguments each rule takes):

- :data:`ARITH`: ``rule(op, a, b, arith)``, ``a op b`` for two elements cast to the
  operation's dtype; ``arith`` is the scalar operation to apply per branch;
- :data:`DECIDE`: ``rule(op, a, b, decide)``, a comparison as a bool (or a value of the type);
- :data:`CAST`: ``rule(v, dtype, cast)``, the element held as a value of ``dtype``;
- :data:`EXTREME`: ``rule(x, y, maximum, dtype, extreme)``, ``torch.maximum``/``minimum`` of
  two elements;
- :data:`POWER`: ``rule(x, power)``, an integer power (``power`` the scalar one);
- :data:`OPMATH_SCALAR` and :data:`OPMATH`: half precision's ``float32`` scalar and
  operation (``rule(v, opmath_scalar)``, ``rule(op, x, s, fmt, opmath_arith)``);
- :data:`SELECT`: ``rule(condition, a, b, dtype, cast)``, ``torch.where``'s choice of one
  element (``None`` where the condition is read as a bool as usual);
- :data:`READ_AT`: ``rule(data, position)``, the element of a flat storage at a position of
  the type;
- :data:`INDEX`: ``rule(i, n, what)``, an index of the type checked against a dimension of
  size ``n`` and wrapped into ``0..n-1``;
- :data:`PYTHON`: ``rule(v, what)``, the element read as one Python value (``.item()``,
  ``bool``, ``int``);
- :data:`NUMBER_TEST`: ``rule(v, what)``, the element tested as one number (``isnan``,
  ``isinf``); raises where the type has no one number;
- :data:`TRUTH`: ``rule(r)``, the result of a comparison kept as it is (a split stays a value
  until it is read).

When both operands of a binary kind have a rule, the rule of the higher ``rank`` (given at
registration) applies: a token kept as its law outranks a value on every branch, as the
operation on the token decides whether it is tracked at all.

>>> class Tagged:
...     pass
>>> register(Tagged, rank=1, python=lambda v, what: "tagged")
>>> PYTHON[Tagged](Tagged(), "read")
'tagged'
>>> unregister(Tagged)
>>> Tagged in PYTHON
False
"""

from __future__ import annotations

from fractions import Fraction

from ..engine.floats import FloatValue

__all__ = ["UNSET", "register", "unregister", "binary_rule", "is_random", "OPS", "ARITH", "DECIDE",
           "CAST", "EXTREME", "POWER", "OPMATH_SCALAR", "OPMATH", "SELECT", "READ_AT", "INDEX",
           "PYTHON", "NUMBER_TEST", "TRUTH", "RANK"]



class _Unset:
    """The content of ``torch.empty`` memory never written."""

    __slots__ = ()

    def __repr__(self):
        return "<uninitialised>"


#: The content of ``torch.empty`` memory never written (one object).
UNSET = _Unset()

ARITH: dict = {}
DECIDE: dict = {}
CAST: dict = {}
EXTREME: dict = {}
POWER: dict = {}
OPMATH_SCALAR: dict = {}
OPMATH: dict = {}
SELECT: dict = {}
READ_AT: dict = {}
INDEX: dict = {}
PYTHON: dict = {}
NUMBER_TEST: dict = {}
TRUTH: dict = {}

#: A registered type's rank: the rule of the higher rank applies to two operands.
RANK: dict = {}

_KINDS = {"arith": ARITH, "decide": DECIDE, "cast": CAST, "extreme": EXTREME, "power": POWER,
          "opmath_scalar": OPMATH_SCALAR, "opmath": OPMATH, "select": SELECT,
          "read_at": READ_AT, "index": INDEX, "python": PYTHON, "number_test": NUMBER_TEST,
          "truth": TRUTH}

#: Operations defined in modules above the tensor (:mod:`.functions`, :mod:`.random`), filled
#: in when they are imported; a tensor's methods and the value types' rules reach them here.
OPS: dict = {}


def register(cls: type, *, rank: int = 0, **rules) -> None:
    """Register the rules of the value type ``cls``, one keyword per kind (see the module's
    text), with its ``rank`` for binary kinds.

    Parameters
    ----------
    cls : type
        The value type; looked up by exact type (a subclass registers its own rules).
    rank : int
        Its rank against another registered type in a binary operation.
    **rules
        ``kind=rule`` for the kinds the type takes part in.
    """
    unknown = set(rules) - set(_KINDS)
    if unknown:
        raise ValueError(f"unknown kinds of rule: {', '.join(sorted(unknown))}")
    RANK[cls] = rank
    for kind, rule in rules.items():
        _KINDS[kind][cls] = rule


def unregister(cls: type) -> None:
    """Remove every rule of ``cls``."""
    RANK.pop(cls, None)
    for table in _KINDS.values():
        table.pop(cls, None)


def binary_rule(table: dict, a, b):
    """The rule of ``table`` for the operands ``a`` and ``b``: the one of the operand whose type
    has a rule (the higher :data:`RANK` when both have; ``a``'s on equal ranks), ``None``
    when neither has.

    >>> binary_rule({int: "int's rule"}, 1.5, 2)
    "int's rule"
    """
    ra = table.get(type(a))
    rb = table.get(type(b))
    if ra is None:
        return rb
    if rb is None or RANK[type(a)] >= RANK[type(b)]:
        return ra
    return rb


def is_random(v) -> bool:
    """An engine object standing for a random value (a uniform, an expression of one, noise).

    >>> is_random(Fraction(1, 2)), is_random(0.5)
    (False, False)
    """
    if isinstance(v, (bool, int, Fraction, float, FloatValue)):
        return False
    return (hasattr(v, "base") and hasattr(v, "scale")) or hasattr(v, "_float_threshold") \
        or type(v).__name__ in ("Linear", "Product", "LogValue") or hasattr(v, "noise_index")
