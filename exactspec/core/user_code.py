"""User code named ``path/to/file.py:function`` or ``package.module:function``, loaded in
one place: the reference parsed, the file imported under a module name of its own (one per
resolved path) or the module imported by name, optionally inside a context the caller gives
(the tensor layer's ``installed()``, under which ``import torch`` is the layer), any failure
of the import turned into one line (:class:`~exactspec.core.errors.InvalidInput`), and the
function looked up.

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> path = os.path.join(folder, "rule.py")
>>> with open(path, "w") as handle:
...     _ = handle.write("def f(s, p, q):\\n    return 0\\n")
>>> load_user_object(f"{path}:f").__name__
'f'
>>> load_user_object("fractions:Fraction").__name__
'Fraction'
>>> load_user_object(f"{path}:g")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
exactspec.core.errors.InvalidInput: method '...rule.py:g': ...rule.py has no function 'g'
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Callable

from .errors import InvalidInput

__all__ = ["import_user_file", "import_user_module", "is_file_reference", "load_user_object",
           "user_function", "user_line", "user_reference"]


def user_reference(spec: str) -> tuple[str, str]:
    """``(where, name)`` of ``where:name`` (split at the last colon); refused in one line
    when either part is empty."""
    where, _, name = spec.rpartition(":")
    if not where or not name:
        raise InvalidInput(f"method {spec!r}: expected file.py:function or module:function")
    return where, name


def is_file_reference(where: str) -> bool:
    """Whether ``where`` names a file (it ends in ``.py`` or holds a ``/``), not a module."""
    return where.endswith(".py") or "/" in where


def user_line(err: BaseException, path) -> str:
    """A space and ``(file.py:LINE)``, the last line of the file ``path`` in ``err``'s
    traceback, or ``""`` when none of its frames is in that file."""
    frames = [f for f in traceback.extract_tb(err.__traceback__)
              if Path(f.filename).resolve() == Path(path).resolve()]
    return f" ({Path(path).name}:{frames[-1].lineno})" if frames else ""


def import_user_file(spec: str, path, *, prefix: str = "_exactspec_user_",
                     under: Callable | None = None, keep: bool = True,
                     during: str = "", line: bool = False,
                     passes: tuple = (), explain: Callable | None = None) -> ModuleType:
    """The module of the file ``path`` (named in ``spec``), executed afresh.

    Parameters
    ----------
    spec : str
        The reference as the user gave it, for the messages.
    path : str or Path
        The file, which exists.
    prefix : str
        The module's name is ``prefix`` and a number of the resolved path.
    under : callable, optional
        A context manager factory (the tensor layer's ``installed``) the file runs inside.
    keep : bool
        Whether the module stays in ``sys.modules`` after the import (it is there while the
        file runs either way).
    during : str
        Words after the file's name in the message of a failure (``" under exactspec's
        tensor layer"``).
    line : bool
        Whether that message ends with the file's line the failure came from
        (:func:`user_line`).
    passes : tuple of exception types
        Errors raised as they are (exactspec's own one-line errors).
    explain : callable, optional
        ``explain(err)``: the message of a failure the caller words itself, or ``None``.

    Raises
    ------
    InvalidInput
        ``method SPEC: importing FILE failed: TYPE: MESSAGE`` when the file fails to import.
    """
    path = Path(path)
    module_name = f"{prefix}{abs(hash(str(path.resolve())))}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None:
        raise InvalidInput(f"method {spec!r}: importing {path} failed: not a Python file")
    module = importlib.util.module_from_spec(loader_spec)
    try:
        with under() if under is not None else contextlib.nullcontext():
            sys.modules[module_name] = module
            loader_spec.loader.exec_module(module)
    except passes:
        raise
    except Exception as err:  # the user's file failed to import: report it in one line
        message = explain(err) if explain is not None else None
        if message is None:
            message = (f"method {spec!r}: importing {spec.rpartition(':')[0]}{during} failed: "
                       f"{type(err).__name__}: {err}{user_line(err, path) if line else ''}")
        raise InvalidInput(message) from None
    finally:
        if not keep:
            sys.modules.pop(module_name, None)
    return module


def import_user_module(spec: str, where: str) -> ModuleType:
    """The module named ``where`` (a dotted name) in ``spec``, imported; a failure refused in
    one line (``method SPEC: cannot import MODULE: TYPE: MESSAGE``)."""
    try:
        return importlib.import_module(where)
    except Exception as err:
        raise InvalidInput(f"method {spec!r}: cannot import {where}: "
                           f"{type(err).__name__}: {err}") from None


def user_function(module: ModuleType, spec: str):
    """The object ``spec`` names in ``module``; refused in one line when there is none."""
    where, _, name = spec.rpartition(":")
    function = getattr(module, name, None)
    if function is None:
        raise InvalidInput(f"method {spec!r}: {where} has no function {name!r}")
    return function


def load_user_object(spec: str, **options):
    """The object named by ``path/to/file.py:function`` or ``package.module:function``.

    A file must exist (``method SPEC: no such file FILE`` otherwise) and is imported by
    :func:`import_user_file` with ``options``; a module is imported by name.
    """
    where, _ = user_reference(spec)
    if is_file_reference(where):
        if not Path(where).is_file():
            raise InvalidInput(f"method {spec!r}: no such file {where}")
        module = import_user_file(spec, where, **options)
    else:
        module = import_user_module(spec, where)
    return user_function(module, spec)
