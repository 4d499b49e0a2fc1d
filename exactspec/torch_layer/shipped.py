"""A function or class of an installed package, taken from its source as it ships: :func:`load`.

A kernel engineer checks the sampler their engine ships, unedited, from a small adapter file::

    import torch
    from exactspec.torch_layer import load
    _speculative_sampling = load("transformers.generation.utils:_speculative_sampling")

    def rule(p, q):
        ...                                   # build the engine's arguments from p and q

``load("package.module:name")`` does not import the package (an engine's ``__init__`` imports
real torch and much else).  It finds the package's directory (``importlib.util.find_spec`` of
the top-level name, which imports nothing, else a scan of ``sys.path``), reads the module's
source with :mod:`ast` and runs only what the definition needs, in a fresh module object of the
same name: the definition itself and, transitively, the module-level names it uses (functions,
classes, constants, the ``import`` statements that bind them).  An import of the package's own
modules (``from .helpers import f``, ``from ..config import X``, ``from package.x import y``) is
resolved the same way, from source; any other import runs as written, ``import torch`` under
exactspec's tensor layer (installed for the load if it is not already).  What the definition
does not use is never run, so a module that imports half the world at its top still loads.
Annotations are not evaluated (the module's code is compiled as under ``from __future__
import annotations``); decorators run.  A name bound only inside an ``if`` or ``try`` block is
taken from the first of its bindings that runs.

A name the definition uses that cannot be loaded is refused in one line naming it and the
module it comes from (:class:`~exactspec.core.errors.InvalidInput`); with
``load(target, refuse="at-use")`` a name read only inside a function's body is refused only
if that body uses it (a stand-in, :class:`~.shipped_source.Unloaded`), so that an engine whose
module reaches what the sampling path never runs still loads.  While a load runs, a module of
the package that code outside it imports by name (``logging.config`` resolving a formatter
class) is the module read from source (:class:`~.shipped_source.SourceFinder`), never the
package imported for real.  The loaded object carries where it came from,
``__exactspec_source__``: the package's distribution name and version
(``importlib.metadata``), the module, the name and the source file.  The reading of a
package's source, a name at a time, is :mod:`.shipped_source`; here is the entry point.

>>> import sys, tempfile, pathlib
>>> site = pathlib.Path(tempfile.mkdtemp())
>>> (site / "tinyengine").mkdir()
>>> _ = (site / "tinyengine" / "__init__.py").write_text("import a_dependency_not_installed\\n")
>>> _ = (site / "tinyengine" / "ops.py").write_text(
...     "import torch\\nimport another_missing_module\\nSCALE = 2\\n"
...     "def double(t: torch.Tensor) -> torch.Tensor:\\n    return t * SCALE\\n")
>>> sys.path.insert(0, str(site))
>>> double = load("tinyengine.ops:double")
>>> with installed() as torch:
...     double(torch.tensor([1, 3])).tolist()
[2, 6]
>>> double.__exactspec_source__["module"], "tinyengine" in sys.modules
('tinyengine.ops', False)
>>> sys.path.remove(str(site))
"""

from __future__ import annotations

import importlib.metadata
import sys
from contextlib import contextmanager, nullcontext

from ..core.errors import InvalidInput
from .context import current
from .module import LayerModule, installed
from .shipped_source import LoadFailure, SourceFinder, SourceLoader

__all__ = ["load"]


def load(target: str, *, refuse: str = "at-load"):
    """The function or class ``target`` (``"package.module:name"``, or
    ``"package.module:Class.method"``) of an installed package, defined from the package's
    source as it is, without importing the package (see the module's documentation).

    Parameters
    ----------
    target : str
        The module's dotted name, a colon and the definition's name.
    refuse : {"at-load", "at-use"}
        When a name the definition reaches cannot be loaded: ``"at-load"`` (the default)
        refuses the load in one line; ``"at-use"`` refuses it only if the code runs it.  Under
        ``"at-use"`` a name read only inside a function's body (never while a definition is
        made) that cannot be loaded is bound to a stand-in that refuses, in one line naming it
        and why it could not be loaded, any call, attribute, item, iteration or truth test of
        it: an engine whose module reaches its platform detection, its compiler cache or its
        warm-up from code the sampling path never runs still loads.  A name read while a
        definition is made (a decorator, a default, a base class) is always needed, and is
        refused at load either way.

    Returns
    -------
    object
        The function or class, with ``__exactspec_source__``: a dict of ``package``,
        ``version`` (``None`` where no distribution names it), ``module``, ``name``, ``file``;
        under ``"at-use"`` also ``unloaded``: the names bound to a refusing stand-in, each a
        line saying where it comes from and why it could not be loaded.

    Raises
    ------
    InvalidInput
        In one line: a malformed target, a module that is not found or is not Python source,
        a name it does not define, or a name the definition uses that could not be loaded.

    Examples
    --------
    >>> fraction = load("fractions:Fraction")
    >>> fraction(3, 6), fraction.__exactspec_source__["name"]
    (Fraction(1, 2), 'Fraction')
    >>> load("fractions:no_such_name")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    exactspec.core.errors.InvalidInput: fractions:no_such_name: fractions does not define ...
    """
    if not isinstance(target, str):
        raise InvalidInput(f"load: expected 'package.module:name', got {target!r:.60}")
    if refuse not in ("at-load", "at-use"):
        raise InvalidInput(f"load({target!r}): refuse is 'at-load' or 'at-use', got "
                           f"{refuse!r:.40}")
    module_name, colon, name = target.strip().partition(":")
    parts = name.split(".")
    if not colon or not all(p.isidentifier() for p in module_name.split(".")) or \
            not all(p.isidentifier() for p in parts):
        raise InvalidInput(f"load: expected 'package.module:name' (a module's dotted name, a "
                           f"colon, a function or class), got {target!r:.80}")
    top = module_name.split(".")[0]
    if top in ("torch", "exactspec"):
        raise InvalidInput(f"load({target!r}): {top} is not an engine's package (load takes "
                           "a definition from an installed package's source)")
    with _layer():
        loader = _shared_loader(top, refuse == "at-use")
        before = set(sys.modules)
        finder = SourceFinder(loader)
        sys.meta_path.insert(0, finder)
        try:
            source = loader.module(module_name)
            value = source.attribute(parts[0])
            for attribute in parts[1:]:
                value = _attribute(value, attribute)
        except LoadFailure as failure:
            raise InvalidInput(_message(target, failure)) from None
        finally:
            sys.meta_path.remove(finder)
            _forget_new_modules(before, top)
    info = {"package": loader.distribution(), "module": module_name, "name": name,
            "file": source.file}
    if loader.at_use:
        info["unloaded"] = [u.line for u in loader.stand_ins]
    info["version"] = _version(info["package"])
    try:
        value.__exactspec_source__ = info
    except (AttributeError, TypeError):
        pass                            # a constant or a builtin: nothing to carry it on
    return value


#: ``[(run, {top-level package: SourceLoader})]``: the loaders of the layer's installation in
#: progress (an adapter file's import), so that two loads from one package there share its
#: modules (one base class, one constant); a later installation reads the source afresh.
_SHARED: list = []


def _shared_loader(top: str, at_use: bool = False) -> "SourceLoader":
    run = current()
    if not _SHARED or _SHARED[0][0] is not run:
        _SHARED[:] = [(run, {})]
    loaders = _SHARED[0][1]
    if (top, at_use) not in loaders:
        loaders[top, at_use] = SourceLoader(top, at_use)
    return loaders[top, at_use]


def _attribute(value, attribute: str):
    try:
        return getattr(value, attribute)
    except AttributeError:
        raise LoadFailure(f"{getattr(value, '__qualname__', value)!s:.60} has no attribute "
                       f"{attribute!r}") from None


def _message(target: str, failure: LoadFailure) -> str:
    """``target uses 'a' from m, which could not be loaded: it uses 'b' from n, which uses
    'c' from o: why``."""
    if not failure.chain:
        return f"{target}: {failure.reason}"
    (name, module), rest = failure.chain[0], failure.chain[1:]
    through = ", which uses ".join(f"{n!r} from {m}" for n, m in rest)
    return (f"{target} uses {name!r} from {module}, which could not be loaded: "
            f"{'it uses ' + through + ': ' if rest else ''}{failure.reason}")


@contextmanager
def _layer():
    """The tensor layer installed for the block unless it already is (an adapter file is
    imported under it)."""
    present = sys.modules.get("torch")
    with nullcontext() if isinstance(present, LayerModule) else installed():
        yield


def _forget_new_modules(before: set, top: str = "") -> None:
    """Drop from ``sys.modules`` the modules first imported during the load that hold the
    tensor layer (a real module imported under it would keep the stand-in for later code)
    and the package's own modules read from source
    (:class:`~.shipped_source.SourceFinder`); the loaded definitions keep what they
    reference."""
    for key in set(sys.modules) - before:
        held = sys.modules.get(key)
        if key.split(".")[0] == top:
            sys.modules.pop(key, None)
            continue
        if key.split(".")[0] in ("torch", "exactspec"):
            continue                        # the layer, and exactspec's own lazy imports
        try:
            values = list(vars(held).values())
        except TypeError:
            continue
        if any(isinstance(v, LayerModule) for v in values):
            sys.modules.pop(key, None)


def _version(distribution):
    if distribution is None:
        return None
    try:
        return importlib.metadata.version(distribution)
    except (importlib.metadata.PackageNotFoundError, ValueError, OSError):
        return None
