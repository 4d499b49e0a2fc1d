"""What no stand-in value can answer for: a rule's code asking for a value's exact type or id.

Routes that hand a rule stand-in values (the draft axis's values read at the draft, law
leaves' tokens) intercept every operation Python lets an object intercept: arithmetic,
comparisons, truth values, attributes, ``isinstance``.  ``type(v)`` and ``id(v)`` are the
exception: they read the object itself, and a rule that branches on them (``type(r) is
Fraction``) would take another path with a stand-in than with the number it stands for.
:func:`identity_reads` finds where the user's code could call them: the names ``type`` and
``id`` in the code of the rule and of every function of the user's files it reaches (through
its globals, closures, defaults and ``__wrapped__``), and those builtins bound under another
name in the globals it reads.  A route that hands out stand-ins declines such a rule.

>>> def plain(s, p, q):
...     return s.draft(q)
>>> def typed(s, p, q):
...     x = s.draft(q)
...     return x if type(p[x]) is int else s.draw(p)
>>> identity_reads(plain) is None, identity_reads(typed)
(True, 'calls type() (in typed)')
"""

from __future__ import annotations

import builtins
import types

from ..core.signals import is_user_file

__all__ = ["identity_reads"]

#: The builtins no stand-in value can intercept, by name.
IDENTITY_BUILTINS = {"type": builtins.type, "id": builtins.id}

#: How many functions of the user's files are followed at most.
MAX_FUNCTIONS = 512


def _user_function(value) -> bool:
    code = getattr(value, "__code__", None)
    return isinstance(code, types.CodeType) and is_user_file(code.co_filename)


def _codes(code: types.CodeType):
    """``code`` and every code object nested in it (inner functions, comprehensions)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def identity_reads(function) -> str | None:
    """Where the user's code reached from ``function`` could call ``type()`` or ``id()``
    (a short reason), or ``None``."""
    seen: set = set()
    todo = [function]
    while todo and len(seen) < MAX_FUNCTIONS:
        f = todo.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        wrapped = getattr(f, "__wrapped__", None)
        if wrapped is not None:
            todo.append(wrapped)
        for cell in getattr(f, "__closure__", None) or ():
            try:
                todo.append(cell.cell_contents)
            except ValueError:                # an empty cell
                pass
        todo.extend(getattr(f, "__defaults__", None) or ())
        if not _user_function(f):
            continue
        spaces = getattr(f, "__globals__", {})
        for code in _codes(f.__code__):
            for name in code.co_names:
                value = spaces.get(name, getattr(builtins, name, None))
                for builtin_name, builtin in IDENTITY_BUILTINS.items():
                    if value is builtin:
                        return f"calls {builtin_name}() (in {f.__code__.co_name})"
                if _user_function(value):
                    todo.append(value)
    return None
