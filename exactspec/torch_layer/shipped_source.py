"""A package's modules read from source a name at a time, for :func:`~.shipped.load`.

:class:`SourceLoader` holds the modules of one package: each module's syntax tree is read once
(``_Module``: the statements that bind each module-level name, and the module object its
definitions run in), and a name is defined by running only the statements it needs, with the
package's own imports resolved from source the same way.  While a load runs,
:class:`SourceFinder` makes a module of the package that code outside it imports by name the
module read from source.  A name that cannot be loaded is a :class:`LoadFailure` (with the
chain of names that led to it), or, under ``refuse="at-use"``, an :class:`Unloaded` stand-in
that refuses its use.
"""

from __future__ import annotations

import __future__
import ast
import builtins
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import symtable
import sys
import types
from contextlib import contextmanager

from ..core.errors import ExactspecError, InvalidInput
from ..core.signals import count_as_user

__all__ = ["LoadFailure", "SourceLoader", "SourceFinder", "Unloaded"]

_FLAGS = __future__.annotations.compiler_flag
_BUILTINS = frozenset(vars(builtins))


class LoadFailure(ImportError):
    """A name that could not be loaded: ``chain`` the ``(name, module)`` hops from the
    definition asked for to the failing one, ``reason`` why."""

    def __init__(self, reason: str, chain=()):
        super().__init__(reason)
        self.reason, self.chain = reason, list(chain)


def _short(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text}" if not isinstance(err, ExactspecError) else text


# -- finding a module's source ---------------------------------------------------------------
def _find_top(top: str):
    """``(origin, search_locations)`` of the top-level module ``top``, imported by nothing."""
    try:
        spec = importlib.util.find_spec(top)        # a top-level name: imports nothing
    except (ImportError, ValueError, AttributeError):
        spec = None
    if spec is not None:
        locations = spec.submodule_search_locations
        return spec, list(locations) if locations is not None else None
    for entry in sys.path:                          # a finder that failed: the paths by hand
        base = os.path.join(entry or os.curdir, top)
        if os.path.isfile(os.path.join(base, "__init__.py")):
            return importlib.util.spec_from_file_location(
                top, os.path.join(base, "__init__.py"), submodule_search_locations=[base]), \
                [base]
        if os.path.isfile(base + ".py"):
            return importlib.util.spec_from_file_location(top, base + ".py"), None
    return None, None


class _Module:
    """One module's source: its syntax tree, the statements that bind each module-level name,
    and the module object its definitions run in (``object``, made when first needed)."""

    def __init__(self, loader, name: str, spec, locations):
        self.loader, self.name, self.locations = loader, name, locations
        self.file = spec.origin if spec.has_location else None
        if self.file is not None:        # the shipped code runs as the user's (watched)
            count_as_user(self.file)
        self.is_package = locations is not None
        source = None
        if self.file is None and not self.is_package:
            raise LoadFailure(f"{name} is not Python source (it is {spec.origin or 'built in'})")
        if self.file is not None:
            if not self.file.endswith(".py"):
                raise LoadFailure(f"{name} is {os.path.basename(self.file)}, not Python source")
            try:
                source = spec.loader.get_source(name)
            except (ImportError, OSError, AttributeError) as err:
                raise LoadFailure(f"the source of {name} could not be read: {_short(err)}") \
                    from None
            if source is None:
                raise LoadFailure(f"{name} ships no Python source")
        try:
            tree = ast.parse(source or "", self.file or name)
        except (SyntaxError, ValueError) as err:
            raise LoadFailure(f"{name} does not parse: {_short(err)}") from None
        self.bindings: dict = {}        # name -> [(order, statement, alias or None, branch)]
        self.stars: list = []           # from x import * statements
        self.assigned: set = set()      # names functions declare global
        self.mutations: dict = {}       # name -> statements that set its items or attributes
        self.order = 0
        self._index(tree.body, False)
        for node in ast.walk(tree):
            if isinstance(node, ast.Global):
                self.assigned.update(node.names)
        self.object = _SourceModuleType(name)
        self.object.__dict__["__exactspec_module__"] = self
        self.object.__dict__["__builtins__"] = dict(vars(builtins), __import__=loader.import_)
        self.object.__file__ = self.file
        self.object.__package__ = name if self.is_package else name.rpartition(".")[0]
        if self.is_package:
            self.object.__path__ = list(locations)
        self.done: set = set()          # statements run (by id)
        self.busy: set = set()          # statements running (a cycle is let through)

    # -- the index of bindings --------------------------------------------------------------
    def _index(self, body, branch: bool) -> None:
        for stmt in body:
            self.order += 1
            order = self.order
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self._bind(stmt.name, order, stmt, None, branch)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
                    continue
                for target in targets:
                    for node in ast.walk(target):
                        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                            self._bind(node.id, order, stmt, None, branch)
                    base = target
                    while isinstance(base, (ast.Attribute, ast.Subscript)):
                        base = base.value
                    if base is not target and isinstance(base, ast.Name):
                        self.mutations.setdefault(base.id, []).append((order, stmt))
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                for alias in stmt.names:
                    if alias.name == "*":
                        self.stars.append(stmt)
                    else:
                        bound = alias.asname or alias.name.split(".")[0] \
                            if isinstance(stmt, ast.Import) else alias.asname or alias.name
                        self._bind(bound, order, stmt, alias, branch)
            elif isinstance(stmt, ast.If):
                self._index(stmt.body, True)
                self._index(stmt.orelse, True)
            elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
                self._index(stmt.body, True)
                for handler in stmt.handlers:
                    self._index(handler.body, True)
                self._index(stmt.orelse, True)
                self._index(stmt.finalbody, True)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
                    isinstance(stmt.value.func, ast.Attribute) and \
                    isinstance(stmt.value.func.value, ast.Name):      # NAME.update(...)
                self.mutations.setdefault(stmt.value.func.value.id, []).append((order, stmt))

    def _bind(self, name, order, stmt, alias, branch) -> None:
        self.bindings.setdefault(name, []).append((order, stmt, alias, branch))

    # -- names ------------------------------------------------------------------------------
    def defines(self, name: str) -> bool:
        return name in self.bindings

    def attribute(self, name: str):
        """The value of the module-level ``name``: a definition run from source, a
        submodule, or a name of a ``from x import *``."""
        if name in self.bindings:
            return self.value(name)
        if self.is_package and self.loader.has_module(f"{self.name}.{name}"):
            return self.loader.module(f"{self.name}.{name}").object
        if "__getattr__" in self.bindings and name != "__getattr__":   # a module __getattr__
            getter = self.value("__getattr__")
            try:
                return getter(name)
            except AttributeError:
                pass
            except Exception as err:                    # noqa: BLE001 - one line
                raise LoadFailure(f"{self.name}.__getattr__({name!r}) failed: {_short(err)}") \
                    from None
        for stmt in self.stars:
            source = self._import_source(stmt)
            if source is not None:
                try:
                    module = self.loader.module(source)
                except LoadFailure:
                    continue
                if module.defines(name):
                    return module.attribute(name)
            else:
                value = self._run_star(stmt, name)
                if value is not None:
                    return value[0]
        raise LoadFailure(f"{self.name} does not define {name!r}")

    def value(self, name: str, before: int | None = None):
        """Run the statements that bind ``name`` (those before statement ``before`` when a
        module-level expression reads it) and return its value."""
        chosen = self._chosen(name)
        if before is not None:
            earlier = [b for b in chosen if b[0] < before]
            chosen = earlier or chosen
        errors = []
        conditional = all(b[3] for b in chosen)
        for order, stmt, alias, branch in chosen:
            try:
                self._run(order, stmt, alias)
            except LoadFailure as failure:
                if not conditional:
                    raise
                errors.append(failure)
                continue
            if conditional:                         # the first binding of a branch that runs
                break
        else:
            if errors:
                raise errors[0]
        if all(b[2] is None for b in chosen):      # X[k] = v, X.update(...) of its own X
            for order, stmt in self.mutations.get(name, ()):
                if before is None or order < before:
                    self._run(order, stmt, None)
        try:
            return self.object.__dict__[name]
        except KeyError:
            raise LoadFailure(f"{self.name} binds {name!r} only conditionally, and not on the "
                           "branch that ran") from None

    def _chosen(self, name: str) -> list:
        """The plain bindings of ``name`` at module level in order; where it has none, its
        bindings inside ``if`` and ``try`` blocks, tried in order."""
        bindings = self.bindings[name]
        plain = [b for b in bindings if not b[3]]
        return plain or bindings

    # -- running statements -----------------------------------------------------------------
    def _run(self, order: int, stmt, alias) -> None:
        key = (id(stmt), alias.name if alias is not None else None)
        if key in self.done or key in self.busy:
            return
        self.busy.add(key)
        try:
            if alias is not None:
                self._run_import(stmt, alias)
            else:
                self._resolve(stmt, order)
                code = compile(ast.Module(body=[stmt], type_ignores=[]), self.file or self.name,
                               "exec", flags=_FLAGS, dont_inherit=True)
                try:
                    with _registered(self.name, self.object):
                        exec(code, self.object.__dict__)
                except LoadFailure:
                    raise
                except Exception as err:                # noqa: BLE001 - reported in one line
                    raise LoadFailure(f"running {_what(stmt)} ({os.path.basename(self.file or '')}"
                                   f":{stmt.lineno}) failed: {_short(err)}") from None
            self.done.add(key)
        finally:
            self.busy.discard(key)

    def _resolve(self, stmt, order: int) -> None:
        """Load every module-level name ``stmt`` reads (its body's included)."""
        now, later, attributes = _free_names(stmt)
        own = {n for n, bindings in self.bindings.items()
               if any(b[1] is stmt for b in bindings)}
        for name in sorted(now | later):
            if name in own and name not in now:
                continue                                    # a function calling itself
            if name in self.object.__dict__ and name not in self.bindings:
                continue                                    # __name__, __file__, ...
            if name not in self.bindings:
                if name in _BUILTINS or name in self.assigned:
                    continue
            try:
                if name in self.bindings:
                    value = self.value(name, order if name in now else None)
                else:
                    value = self.attribute(name)
                    self.object.__dict__[name] = value
            except LoadFailure as failure:
                chain = [(name, self._origin(name))] + failure.chain
                if self.loader.at_use and name not in now:  # read only when a body runs
                    self.object.__dict__[name] = self.loader.unloaded(failure.reason, chain)
                    continue
                raise LoadFailure(failure.reason, chain) from None
            if isinstance(value, _SourceModuleType):        # helpers.f: loaded up front
                for attribute in sorted(attributes.get(name, ())):
                    try:
                        getattr(value, attribute)
                    except AttributeError:
                        pass                                # a submodule's own refusal
                    except LoadFailure as failure:
                        chain = [(f"{name}.{attribute}", value.__name__)] + failure.chain
                        if self.loader.at_use and name not in now:
                            value.__dict__[attribute] = self.loader.unloaded(failure.reason,
                                                                             chain)
                            continue
                        raise LoadFailure(failure.reason, chain) from None

    def _origin(self, name: str) -> str:
        """The module a name of this module comes from: an import's source, else this one."""
        for order, stmt, alias, branch in self.bindings.get(name, ()):
            if alias is not None:
                if isinstance(stmt, ast.ImportFrom):
                    return self._import_source(stmt) or stmt.module or self.name
                return alias.name
        return self.name

    def _import_source(self, stmt) -> str | None:
        """The absolute name of a ``from`` import's module when it is of this package (loaded
        from source), else ``None`` (imported as written)."""
        if stmt.level:
            try:
                return importlib.util.resolve_name("." * stmt.level + (stmt.module or ""),
                                                   self.object.__package__)
            except (ImportError, ValueError) as err:
                raise LoadFailure(f"a relative import in {self.name}: {_short(err)}") from None
        if stmt.module and stmt.module.split(".")[0] == self.loader.top:
            return stmt.module
        return None

    def _run_import(self, stmt, alias) -> None:
        """Run the import ``stmt`` for its one name ``alias``, as written (the package's own
        modules come from source through the module's ``__import__``)."""
        if isinstance(stmt, ast.ImportFrom):
            node = ast.ImportFrom(module=stmt.module, names=[alias], level=stmt.level)
            what = self._import_source(stmt) or stmt.module
        else:
            node, what = ast.Import(names=[alias]), alias.name
        ast.copy_location(node, stmt)
        code = compile(ast.fix_missing_locations(ast.Module(body=[node], type_ignores=[])),
                       self.file or self.name, "exec", flags=_FLAGS, dont_inherit=True)
        try:
            exec(code, self.object.__dict__)
        except LoadFailure:
            raise
        except ExactspecError as err:
            raise LoadFailure(_short(err)) from None
        except Exception as err:                        # noqa: BLE001 - one line
            raise LoadFailure(f"importing {what} failed: {_short(err)}") from None

    def _run_star(self, stmt, name: str):
        """``(value,)`` of ``name`` from the real module of a ``from x import *`` outside the
        package, else ``None``."""
        try:
            module = importlib.import_module(stmt.module)
        except Exception:                               # noqa: BLE001 - not a source of it
            return None
        if hasattr(module, name):
            value = getattr(module, name)
            self.object.__dict__[name] = value
            return (value,)
        return None


@contextmanager
def _registered(name: str, module):
    """``sys.modules[name]`` is ``module`` while a statement runs (``dataclasses`` and
    ``typing`` read a class's module there), then what it was."""
    missing = object()
    saved = sys.modules.get(name, missing)
    sys.modules[name] = module
    try:
        yield
    finally:
        if saved is missing:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = saved


class SourceFinder:
    """A finder first on ``sys.meta_path`` while a load runs: a module of the package that
    code outside it imports by name (``logging.config`` resolving a formatter class such as
    ``"vllm.logging_utils.NewLineFormatter"``, ``importlib.import_module``) is the module read
    from source, not the package imported for real (whose ``__init__`` would run)."""

    def __init__(self, loader):
        self.loader = loader

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] != self.loader.top or self.loader.finding:
            return None                 # another package, or the loader finding the source
        return importlib.machinery.ModuleSpec(name, self)

    def create_module(self, spec):
        try:
            return self.loader.module(spec.name).object
        except LoadFailure as failure:
            raise ImportError(f"{spec.name}: {failure.reason}") from None

    def exec_module(self, module):
        pass                            # its names are read from source when first used


class _SourceModuleType(types.ModuleType):
    """A module of the package, loaded from source a name at a time: a name not yet loaded is
    loaded when first read (``helpers.f``, ``from .helpers import f``)."""

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        source = self.__dict__.get("__exactspec_module__")
        if source is None:
            raise AttributeError(name)
        try:
            return source.attribute(name)
        except LoadFailure as failure:
            if failure.chain or not failure.reason.startswith(f"{self.__name__} does not "):
                raise
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") \
                from None


class Unloaded:
    """A name of the package's source that could not be loaded, under ``refuse="at-use"``:
    reading it is fine, using it is refused in one line (an
    :class:`~exactspec.core.errors.InvalidInput`, recorded as every refusal made while user code
    runs, so shipped code that catches it is refused as well).

    >>> stand_in = Unloaded("tinyengine", "No module named 'regex'",
    ...                      [("current_platform", "tinyengine.platforms")])
    >>> stand_in.is_cuda()
    Traceback (most recent call last):
    ...
    exactspec.core.errors.InvalidInput: tinyengine as shipped used 'current_platform' from tinyengine.platforms (its attribute 'is_cuda'), which could not be loaded: No module named 'regex'
    """

    __slots__ = ("line",)

    def __init__(self, top: str, reason: str, chain):
        (name, module), rest = chain[0], chain[1:]
        through = ", which uses ".join(f"{n!r} from {m}" for n, m in rest)
        object.__setattr__(self, "line", (
            f"{name!r} from {module}", top,
            f"{'it uses ' + through + ': ' if rest else ''}{reason}"))

    def _refuse(self, how: str):
        what, top, why = object.__getattribute__(self, "line")
        raise InvalidInput(f"{top} as shipped used {what}{how}, which could not be loaded: "
                           f"{why}")

    def __getattribute__(self, name):
        if name == "line":                      # the stand-in's line in `unloaded`
            what, top, why = object.__getattribute__(self, name)
            return f"{what}: {why}"
        if name == "_refuse" or (name.startswith("__") and name.endswith("__")):
            return object.__getattribute__(self, name)     # Python's own protocols
        object.__getattribute__(self, "_refuse")(f" (its attribute {name!r})")

    def __repr__(self):
        return f"<could not be loaded: {self.line}>"

    def __call__(self, *args, **kwargs):
        self._refuse(" (a call)")

    def __getitem__(self, key):
        self._refuse(" (an item)")

    def __iter__(self):
        self._refuse(" (its items)")

    def __bool__(self):
        self._refuse(" (its truth)")

    def __instancecheck__(self, value):
        self._refuse(" (an isinstance test)")

    def __subclasscheck__(self, value):
        self._refuse(" (an issubclass test)")

    def __mro_entries__(self, bases):
        self._refuse(" (a base class)")


def _what(stmt) -> str:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return f"def {stmt.name}"
    if isinstance(stmt, ast.ClassDef):
        return f"class {stmt.name}"
    return "the statement"


class _StripAnnotations(ast.NodeTransformer):
    """Annotations removed (they are not evaluated: ``from __future__ import annotations``)."""

    def visit_arg(self, node):
        node.annotation = None
        return node

    def _function(self, node):
        node.returns = None
        self.generic_visit(node)
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_AnnAssign(self, node):
        self.generic_visit(node)
        target = node.target
        if node.value is None:
            return ast.Expr(value=ast.Constant(None))   # an annotation alone binds nothing
        return ast.Assign(targets=[target], value=node.value)


def _free_names(stmt):
    """``(now, later, attributes)``: the module-level names a top-level statement reads when
    it runs (decorators, defaults, bases, class bodies, values) and those its functions read
    when called, and for each name the attributes read from it (``helpers.f``)."""
    import copy

    stripped = _StripAnnotations().visit(copy.deepcopy(stmt))
    ast.fix_missing_locations(stripped)
    source = ast.unparse(ast.Module(body=[stripped], type_ignores=[]))
    table = symtable.symtable(source, "<definition>", "exec")
    now, later = set(), set()

    def walk(t, at_definition: bool):
        kind = t.get_type()
        kind = getattr(kind, "value", kind)
        at_definition = at_definition and kind in ("module", "class")
        for symbol in t.get_symbols():
            name = symbol.get_name()
            if symbol.is_referenced() and (symbol.is_global() or kind == "module"):
                (now if at_definition else later).add(name)
        for child in t.get_children():
            walk(child, at_definition)

    walk(table, True)
    attributes: dict = {}
    for node in ast.walk(stripped):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            attributes.setdefault(node.value.id, set()).add(node.attr)
    return now, later, attributes


class SourceLoader:
    """The modules of one package, each read once for the loads of one installation of the
    layer."""

    def __init__(self, top: str, at_use: bool = False):
        self.top, self.at_use = top, at_use
        self.modules: dict = {}
        self.finding = False
        self.stand_ins: list = []       # the refusing stand-ins bound under refuse="at-use"

    def unloaded(self, reason: str, chain) -> "Unloaded":
        """A stand-in for the name ``chain[0]`` that could not be loaded (see
        :class:`Unloaded`), noted once for the loaded object's ``unloaded`` list."""
        stand_in = Unloaded(self.top, reason, chain)
        if all(u.line != stand_in.line for u in self.stand_ins):
            self.stand_ins.append(stand_in)
        return stand_in

    def has_module(self, name: str) -> bool:
        try:
            return self._spec(name)[0] is not None
        except LoadFailure:
            return False

    def _spec(self, name: str):
        parts = name.split(".")
        if len(parts) == 1:
            self.finding = True
            try:
                return _find_top(name)
            finally:
                self.finding = False
        parent = self.module(".".join(parts[:-1]))
        if not parent.is_package:
            return None, None
        try:
            spec = importlib.machinery.PathFinder.find_spec(name, parent.locations)
        except (ImportError, ValueError) as err:
            raise LoadFailure(f"finding {name} failed: {_short(err)}") from None
        if spec is None:
            return None, None
        locations = spec.submodule_search_locations
        return spec, list(locations) if locations is not None else None

    def module(self, name: str) -> _Module:
        """The source of module ``name`` of the package (a :class:`LoadFailure` if none)."""
        if name in self.modules:
            return self.modules[name]
        spec, locations = self._spec(name)
        if spec is None:
            where = "on sys.path" if "." not in name else f"in {name.rpartition('.')[0]}"
            raise LoadFailure(f"no module {name} found {where}")
        module = _Module(self, name, spec, locations)
        self.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent in self.modules and child not in self.modules[parent].bindings:
            self.modules[parent].object.__dict__.setdefault(child, module.object)
        return module

    def import_(self, name, globals=None, locals=None, fromlist=(), level=0):
        """``__import__`` for the package's source: its own modules (``from .x import y``,
        ``import package.x``, at module level or in a function) from source, any other module
        imported as usual."""
        absolute = name
        if level:
            package = (globals or {}).get("__package__") or ""
            try:
                absolute = importlib.util.resolve_name("." * level + name, package)
            except (ImportError, ValueError) as err:
                raise ImportError(f"a relative import from {package}: {_short(err)}") from None
        if absolute.split(".")[0] != self.top:
            return builtins.__import__(name, globals, locals, fromlist, level)
        parts = absolute.split(".")
        for i in range(1, len(parts) + 1):
            self.module(".".join(parts[:i]))           # each set on its parent
        if fromlist:
            return self.module(absolute).object
        return self.module(parts[0]).object

    def distribution(self):
        """The distribution that ships the top-level package (its import name where no
        distribution's metadata says otherwise), ``None`` when none is installed."""
        try:
            importlib.metadata.distribution(self.top)
            return self.top
        except (importlib.metadata.PackageNotFoundError, ValueError, OSError):
            pass
        try:
            names = importlib.metadata.packages_distributions().get(self.top)
        except Exception:                               # noqa: BLE001 - metadata is optional
            names = None
        return names[0] if names else None
