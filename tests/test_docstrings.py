"""Docstrings render as written: a doctest sits under ``Examples``, not in another section.

The API reference renders the numpydoc sections with napoleon.  A ``>>>`` example that follows
a ``Parameters`` (or ``Returns``, ``Raises``, ...) section without an ``Examples`` heading of
its own is read as more entries of that section: ``Dist([0.5 (>>>)`` shown as a parameter.
The site's build (``-W``) does not catch it, so this test reads every public docstring of the
package with a small numpydoc section parser of its own and names each misplaced example.

A section heading is a line followed by a line of dashes.  A ``>>>`` line is in place before
the first section (the summary and the extended description) and in an ``Examples`` section.
Prose after the last entry of a Parameters section, without a ``Notes`` heading, is garbled
the same way (a parameter named by its first words), and is caught too.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

import exactspec

DASHES = re.compile(r"^\s*-{3,}\s*$")
PROMPT = re.compile(r"^\s*>>>")
#: Sections where an example is in place; everything else is a field list or prose napoleon
#: parses, where a prompt would be read as one of its entries.
EXAMPLE_SECTIONS = {"examples", "example"}


def sections(docstring: str) -> list[tuple[str | None, int, list[str]]]:
    """``(heading, first line number, lines)`` of a docstring; the text before the first
    heading has heading ``None``.

    >>> sections("Summary.\\n\\nParameters\\n----------\\nx : int\\n")
    [(None, 1, ['Summary.', '']), ('Parameters', 3, ['x : int'])]
    """
    lines = inspect.cleandoc(docstring).splitlines()
    found: list[tuple[str | None, int, list[str]]] = [(None, 1, [])]
    i = 0
    while i < len(lines):
        line = lines[i]
        if (line.strip() and i + 1 < len(lines) and DASHES.match(lines[i + 1])
                and not DASHES.match(line)):
            found.append((line.strip(), i + 1, []))
            i += 2
            continue
        found[-1][2].append(line)
        i += 1
    return found


def misplaced_examples(docstring: str | None) -> list[tuple[str, int, str]]:
    """``(section, line number, line)`` of each ``>>>`` line outside ``Examples`` and the
    text before the first section.

    >>> misplaced_examples("Summary.\\n\\n>>> 1\\n1\\n\\nReturns\\n-------\\nint\\n")
    []
    >>> misplaced_examples("Summary.\\n\\nReturns\\n-------\\nint\\n\\n>>> 1\\n1\\n")
    [('Returns', 7, '>>> 1')]
    """
    if not docstring:
        return []
    bad = []
    for heading, start, body in sections(docstring):
        if heading is None or heading.lower() in EXAMPLE_SECTIONS:
            continue
        for offset, line in enumerate(body):
            if PROMPT.match(line):
                bad.append((heading, start + 2 + offset, line.strip()))
    return bad


#: Sections napoleon reads as a list of entries, each a header line with its description
#: indented below: ``name``, ``name : type`` or ``a, b : type`` (Parameters and the like), an
#: exception's name (Raises, Warns).
ENTRY_SECTIONS = {"parameters", "other parameters", "attributes", "keyword arguments",
                  "arguments", "args"}
NAME_SECTIONS = {"raises", "warns"}
ENTRY = re.compile(r"^\*{0,2}[A-Za-z_][\w.]*(\s*,\s*\*{0,2}[A-Za-z_][\w.]*)*\s*(:.*)?$")
NAMES = re.compile(r"^[A-Za-z_][\w.]*(\s*,\s*[A-Za-z_][\w.]*)*\s*$")


def prose_in_entries(docstring: str | None) -> list[tuple[str, int, str]]:
    r"""``(section, line number, line)`` of each line at the left margin of a Parameters-like
    section that is not an entry's header: prose after the last entry, which napoleon would
    render as one more parameter (it belongs under ``Notes``).

    >>> prose_in_entries("S.\n\nParameters\n----------\nx : int\n    A value.\n")
    []
    >>> prose_in_entries("S.\n\nParameters\n----------\nx : int\n\nMore text here.\n")
    [('Parameters', 7, 'More text here.')]
    """
    if not docstring:
        return []
    bad = []
    for heading, start, body in sections(docstring):
        name = (heading or "").lower()
        pattern = ENTRY if name in ENTRY_SECTIONS else NAMES if name in NAME_SECTIONS else None
        if pattern is None:
            continue
        for offset, line in enumerate(body):
            if line.strip() and not line[0].isspace() and not pattern.match(line.strip()):
                bad.append((heading, start + 2 + offset, line.strip()))
    return bad


def public_modules() -> list[str]:
    """Every module of the package whose dotted name has no part starting with ``_``."""
    names = ["exactspec"]
    for info in pkgutil.walk_packages(exactspec.__path__, "exactspec."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def _members(owner, module_name: str):
    """``(name, object)`` of the public functions, classes and methods ``owner`` defines."""
    for name, value in vars(owner).items():
        if name.startswith("_"):
            continue
        target = value
        if isinstance(value, (staticmethod, classmethod)):
            target = value.__func__
        elif isinstance(value, property):
            target = value.fget
        if not (inspect.isfunction(target) or inspect.isclass(target)):
            continue
        if getattr(target, "__module__", None) != module_name:
            continue                                  # imported, documented where defined
        yield name, value, target


def documented_objects() -> list[tuple[str, object]]:
    """``(qualified name, object)`` of every public module, function, class and method."""
    found = []
    for module_name in public_modules():
        module = importlib.import_module(module_name)
        found.append((module_name, module))
        for name, _, target in _members(module, module_name):
            found.append((f"{module_name}.{name}", target))
            if inspect.isclass(target):
                for member, value, inner in _members(target, module_name):
                    doc_owner = value if isinstance(value, property) else inner
                    found.append((f"{module_name}.{name}.{member}", doc_owner))
    return found


def test_the_parser_reads_numpydoc_sections():
    doc = '''Summary line.

    Extended text with an example in place:

    >>> 1 + 1
    2

    Parameters
    ----------
    x : int
        A value.

    >>> x = 1

    Examples
    --------
    >>> 2
    2
    '''
    assert [s[0] for s in sections(doc)] == [None, "Parameters", "Examples"]
    assert misplaced_examples(doc) == [("Parameters", 13, ">>> x = 1")]
    # a table rule or a lone line of dashes is not a heading
    assert [s[0] for s in sections("Text\n\n---\n\nmore\n")] == [None]


def test_the_scan_sees_the_package():
    """Not vacuous: the scan reaches classes, methods and functions of deep modules."""
    names = {name for name, _ in documented_objects()}
    assert "exactspec.core.dist.Dist" in names
    assert any(name.startswith("exactspec.core.dist.Dist.") for name in names)
    assert "exactspec.pytest_plugin.validate_options" in names
    assert len(names) > 500


def test_examples_sit_under_an_examples_heading():
    """No public docstring has a ``>>>`` example inside a Parameters/Returns/... section.

    Each object's own docstring (``__doc__``, not one inherited), its line numbers counted
    after :func:`inspect.cleandoc`.
    """
    bad = []
    for name, obj in documented_objects():
        for heading, number, line in misplaced_examples(getattr(obj, "__doc__", None)):
            bad.append(f"{name}: line {number} of the docstring, in {heading!r}: {line}")
    assert not bad, ("examples outside an 'Examples' section (add the heading):\n"
                     + "\n".join(bad))


def test_no_prose_after_the_last_parameter():
    """No public docstring has prose at the margin of a Parameters/Raises/... section (the
    reference would show it as a parameter named by its first words)."""
    bad = []
    for name, obj in documented_objects():
        for heading, number, line in prose_in_entries(getattr(obj, "__doc__", None)):
            bad.append(f"{name}: line {number} of the docstring, in {heading!r}: {line}")
    assert not bad, ("text in an entries section (give it a 'Notes' heading, or indent it "
                     "under its entry):\n" + "\n".join(bad))


if __name__ == "__main__":                            # pragma: no cover
    raise SystemExit(pytest.main([__file__, "-q"]))
