"""The package's layers: no import circle between modules, and no module imports a higher layer.

Every import in every module counts, the ones inside functions too (they run, only later),
except in a module's ``if __name__ == "__main__":`` block: that block is a command line
(``python -m exactspec.checker``), in the command line's layer, and runs only as one.
The layers, lowest first, are listed in ARCHITECTURE.md; this test is their definition.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "exactspec"

#: Lowest first.  A module may import its own layer and those below it, never one above.
LAYERS = [
    ("core", "checker", "generic_checker"),
    ("engine", "torch_layer", "triton_layer"),
    ("routes",),
    ("optimum",),
    ("numpy_backend",),
    ("key",),
    ("methods",),
    ("verdict", "verify", "rounding"),
    ("bounds",),
    ("sequences",),
    ("gallery", "testing", "pytest_plugin", "replay"),
    ("claims",),
    ("sweep",),
    ("cli", "__main__"),
]
RANK = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """The exactspec modules (or packages) that ``path`` imports, as absolute names."""
    return imports_in(module_name(path), path.name == "__init__.py", path.read_text())


def imports_in(name: str, is_package: bool, source: str) -> set[str]:
    """The exactspec modules that module ``name`` with this ``source`` imports."""
    package = name.split(".") if is_package else name.split(".")[:-1]
    found = set()
    tree = ast.parse(source)
    for block in [n for n in tree.body if _is_main_block(n)]:
        tree.body.remove(block)                      # a command line: the top layer
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "exactspec")
        elif isinstance(node, ast.ImportFrom):
            target = import_target(node, package)
            if target.split(".")[0] != "exactspec":
                continue
            found.add(target)
            for alias in node.names:                 # ``from . import sampler``: a submodule
                candidate = f"{target}.{alias.name}"
                if MODULES.get(candidate):
                    found.add(candidate)
    found.discard(name)
    return found


def import_target(node: ast.ImportFrom, package: list) -> str:
    """The absolute module name of ``from ... import`` in a module of ``package``."""
    if node.level:
        base = package[: len(package) - node.level + 1]
        return ".".join(base + ([node.module] if node.module else []))
    return node.module or ""


def _is_main_block(node) -> bool:
    """``if __name__ == "__main__":`` at the top level of a module."""
    test = getattr(node, "test", None)
    return (isinstance(node, ast.If) and isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.ops[0], ast.Eq)
            and getattr(test.comparators[0], "value", None) == "__main__")


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def import_graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    for name, path in MODULES.items():
        graph.add_node(name)
        for target in imports_of(path):
            if target in MODULES:
                graph.add_edge(name, target)
    return graph


def layer(name: str) -> int | None:
    parts = name.split(".")
    if len(parts) == 1:                              # the facade sits on top of everything
        return len(LAYERS)
    return RANK.get(parts[1])


def test_every_module_has_a_layer():
    unplaced = sorted(n for n in MODULES if layer(n) is None)
    assert not unplaced, f"modules outside every layer (add them to LAYERS): {unplaced}"


def test_no_import_circles():
    graph = import_graph()
    # a package imports its own submodules (its facade); that edge is not a circle of concepts
    facade = [(a, b) for a, b in graph.edges if b.startswith(a + ".")
              and MODULES[a].name == "__init__.py"]
    graph.remove_edges_from(facade)
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert not cycles, f"import circles: {cycles}"


def test_no_upward_imports():
    upward = []
    for name, path in MODULES.items():
        for target in imports_of(path):
            if target == "exactspec":                 # docstrings' examples use the facade
                continue
            if layer(target) is not None and layer(name) < layer(target):
                upward.append(f"{name} -> {target}")
    assert not upward, "lower layers import higher ones:\n" + "\n".join(sorted(upward))


@pytest.mark.parametrize("source", ["from ..cli import main",
                                    "def later():\n    from ..claims import base\n",
                                    "if __name__ != '__main__':\n    from ..cli import main\n"])
def test_the_check_sees_upward_imports(source):
    """The check can fail: a core module importing the command line (even inside a function)
    is an upward import."""
    name = "exactspec.core.fake"
    targets = imports_in(name, False, source)
    assert targets and all(layer(t) > layer(name) for t in targets)


def test_a_main_block_is_the_command_line():
    """``python -m exactspec.checker``'s block may call the command line above the layers;
    the same import anywhere else in the module is upward."""
    source = ("import sys\nif __name__ == '__main__':\n    from exactspec.replay import main\n"
              "    sys.exit(main())\n")
    assert imports_in("exactspec.checker", False, source) == set()
    assert imports_in("exactspec.checker", False, source.replace("'__main__'", "'x'")) == \
        {"exactspec.replay"}


def test_the_certificate_checker_imports_only_itself():
    """The certificate checker shares no code with the rest of exactspec (ARCHITECTURE.md):
    its modules import each other and the standard library, nothing else.  Its ``__main__``
    block, the command line that hands over to the registry's replay, is not part of it."""
    checker = [name for name in MODULES
               if name == "exactspec.checker" or name.startswith("exactspec.checker.")]
    assert len(checker) > 1                           # the package and its modules
    outside = sorted(f"{name} -> {target}" for name in checker
                     for target in imports_of(MODULES[name])
                     if target != "exactspec.checker"
                     and not target.startswith("exactspec.checker."))
    assert not outside, "the certificate checker imports exactspec:\n" + "\n".join(outside)
    libraries = sorted(f"{name} -> {library}" for name in checker
                       for library in _absolute_imports(MODULES[name].read_text())
                       if library not in sys.stdlib_module_names)
    assert not libraries, "the certificate checker imports a library:\n" + "\n".join(libraries)


def _absolute_imports(source: str) -> set[str]:
    """The top-level packages a module imports by absolute name (outside its main block)."""
    tree = ast.parse(source)
    tree.body = [node for node in tree.body if not _is_main_block(node)]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.add((node.module or "").split(".")[0])
    return found


def test_the_checker_rule_sees_an_import_of_exactspec_or_a_library():
    """The rule can fail: a checker module importing the engine's distributions, or sympy, is
    found; its own modules and the standard library are not."""
    assert imports_in("exactspec.checker.reading", False, "from ..core.dist import Dist\n") \
        == {"exactspec.core.dist"}
    assert imports_in("exactspec.checker.reading", False, "from .report import Report\n") \
        == {"exactspec.checker.report"}
    source = "import json\nfrom fractions import Fraction\nimport sympy\n"
    assert {lib for lib in _absolute_imports(source) if lib not in sys.stdlib_module_names} \
        == {"sympy"}


def private_names_used(name: str, is_package: bool, source: str) -> list[str]:
    """The private names (one leading underscore) of *other* exactspec modules that module
    ``name`` imports (``from .x import _y``) or reads off an imported module (``x._y``)."""
    package = name.split(".") if is_package else name.split(".")[:-1]
    tree = ast.parse(source)
    modules: dict[str, str] = {}                  # a local name -> the module it is bound to
    used = []

    def private(attr: str) -> bool:
        return attr.startswith("_") and not attr.startswith("__")

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = import_target(node, package)
            if target.split(".")[0] != "exactspec":
                continue
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                if candidate in MODULES:
                    modules[alias.asname or alias.name] = candidate
                elif private(alias.name) and target != name:
                    used.append(f"{name} imports {target}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "exactspec" and alias.asname:
                    modules[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in modules and private(node.attr)
                and modules[node.value.id] != name):
            used.append(f"{name} reads {modules[node.value.id]}.{node.attr}")
    return used


def test_no_private_names_across_modules():
    """What one module uses of another is public there: named without a leading underscore,
    documented, in its ``__all__`` where it has one (ARCHITECTURE.md)."""
    used = [u for name, path in MODULES.items()
            for u in private_names_used(name, path.name == "__init__.py", path.read_text())]
    assert not used, "private names used across modules:\n" + "\n".join(sorted(used))


@pytest.mark.parametrize("source", ["from .dist import _residual_memo\n",
                                    "def later():\n    from ..engine.exact import _walk\n",
                                    "from . import dist\nx = dist._cache\n",
                                    "from exactspec.core import dist as d\nd._cache\n"])
def test_the_check_sees_private_names(source):
    """The check can fail: a private name imported from, or read off, another module."""
    assert private_names_used("exactspec.core.fake", False, source)


def test_the_check_lets_a_module_keep_its_own_private_names():
    assert not private_names_used("exactspec.core.dist", False, "from .text import figure\n"
                                  "from . import text\ntext.figure\n")


#: A module holds one contract; past this many lines it is split by concern (ARCHITECTURE.md).
MAX_MODULE_LINES = 800


def test_no_module_over_the_line_limit():
    long = sorted(f"{name}: {lines} lines" for name, path in MODULES.items()
                  if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES)
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split by concern):\n" + \
        "\n".join(long)
