"""The documentation ships what the repository cites.

Every Markdown document a file of the repository names (``docs/math.md``, ``proofs/README.md``,
in a docstring, a comment, a notebook or a page) must be a file of the repository, and a
``#section`` after it must be a heading of that document; every relative link of a Markdown page
(``[text](path#anchor)``) must point to an existing file (and heading).  The site's own build
(``python -m sphinx -W -c docs . OUT``, run by ``.ci/run``) checks the same links again, with
the API reference and the executed notebooks.

Anchors are GitHub's (and MyST's, ``myst_heading_anchors``): the heading's text in lower case,
spaces to hyphens, everything but letters, digits, ``_`` and ``-`` dropped.
"""

from __future__ import annotations

import json
import re
import subprocess
from functools import lru_cache
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[1]

# A Markdown document named in text, with an optional "#anchor" after it.
CITED = re.compile(r"(?<![\w./-])((?:\.\./|\./)*[\w./-]*[\w-]+\.md)(?:#([\w-]+))?")
# A Markdown link or image: [text](target) or ![alt](target).
LINK = re.compile(r"\]\(([^()\s]+)\)")
LINK_TEXT = re.compile(r"\[[^\[\]]*\]\(")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LABEL = re.compile(r"^\((?P<label>[\w-]+)\)=\s*$")


@lru_cache(maxsize=1)
def repository_files() -> frozenset[str]:
    """Tracked files, and new files not ignored (so the test sees work before a commit)."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return frozenset(line for line in out.splitlines() if (ROOT / line).is_file())


def slug(text: str) -> str:
    """The anchor of a heading: GitHub's rule, which MyST's heading anchors follow."""
    text = re.sub(r"`([^`]*)`", r"\1", text)                     # inline code: its text
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)         # a link: its text
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def markdown_lines(path: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of a Markdown file, or of a notebook's Markdown cells."""
    text = (ROOT / path).read_text(encoding="utf-8")
    if path.endswith(".ipynb"):
        cells = json.loads(text)["cells"]
        return [(0, line) for cell in cells if cell["cell_type"] == "markdown"
                for line in "".join(cell["source"]).splitlines()]
    return list(enumerate(text.splitlines(), start=1))


@lru_cache(maxsize=None)
def anchors(path: str) -> frozenset[str]:
    """The anchors of a Markdown document's headings (outside code fences) and labels."""
    found, fenced = set(), False
    for _, line in markdown_lines(path):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        if m := HEADING.match(line):
            found.add(slug(m.group(2)))
        elif m := LABEL.match(line):
            found.add(m.group("label"))
    return frozenset(found)


def resolve(source: str, target: str, *, from_root: bool = True) -> str | None:
    """The repository file ``target`` names, from the root or from ``source``'s folder.

    A link (``from_root=False``) is relative to its page's folder only; a name in text may
    also be a path from the repository root (``docs/math.md`` in a docstring).
    """
    files = repository_files()
    bases = [PurePosixPath(source).parent]
    if from_root:
        bases.insert(0, PurePosixPath())
    for base in bases:
        parts: list[str] = []
        for part in (base / target).parts:
            if part == "..":
                if not parts:
                    break
                parts.pop()
            elif part != ".":
                parts.append(part)
        else:
            candidate = "/".join(parts)
            if candidate in files:
                return candidate
    return None


def text_files() -> list[str]:
    return sorted(f for f in repository_files()
                  if f.endswith((".py", ".md", ".ipynb", ".txt", ".toml", ".json", ".cfg"))
                  or f.startswith(".ci/"))


@lru_cache(maxsize=1)
def cited_documents() -> tuple[tuple[str, int, str, str | None], ...]:
    """Every ``(file, line, document, anchor)`` where a file names a Markdown document."""
    found = []
    for path in text_files():
        if path == "tests/test_docs.py":        # names missing documents on purpose
            continue
        text = (ROOT / path).read_text(encoding="utf-8", errors="replace")
        if ".md" not in text:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if ".md" not in line:
                continue
            line = LINK_TEXT.sub("](", line)      # a link's text ([math.md](../math.md))
            for m in CITED.finditer(line):
                found.append((path, number, m.group(1), m.group(2)))
    return tuple(found)


def markdown_pages() -> list[str]:
    return sorted(f for f in repository_files() if f.endswith(".md"))


def test_the_scan_finds_the_citations_it_checks():
    """The scan is not vacuous: it sees the known citations and resolves them."""
    cited = {(doc, anchor) for _, _, doc, anchor in cited_documents()}
    assert ("docs/tree_format.md", None) in cited
    assert any(doc == "docs/math.md" and anchor for doc, anchor in cited)
    assert "the-optimum" in anchors("docs/math.md")
    assert resolve("proofs/README.md", "../docs/math.md") == "docs/math.md"
    assert resolve("exactspec/verify.py", "docs/json.md") == "docs/json.md"
    assert resolve("docs/guide/verify.md", "../math.md") == "docs/math.md"
    assert resolve("docs/guide/verify.md", "../../../math.md") is None
    assert resolve("README.md", "docs/no_such_page" + ".md") is None
    assert resolve("docs/guide/verify.md", "docs/math.md", from_root=False) is None
    assert slug("RRS and the tight ratio") == "rrs-and-the-tight-ratio"
    assert slug("The bound rho_k") == "the-bound-rho_k"
    assert slug("`verify --tokens`") == "verify---tokens"
    assert slug("Khisti et al.") == "khisti-et-al"


def test_every_cited_document_ships():
    """No file cites a Markdown document that is not in the repository, or a missing section."""
    missing = []
    for path, number, doc, anchor in cited_documents():
        target = resolve(path, doc)
        if target is None:
            missing.append(f"{path}:{number}: {doc} is not a file of the repository")
        elif anchor and anchor not in anchors(target):
            missing.append(f"{path}:{number}: {doc} has no section #{anchor}")
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize("page", markdown_pages())
def test_relative_links_resolve(page):
    """Every relative link of a Markdown page points to a file (and heading) that exists."""
    broken, fenced = [], False
    for number, line in markdown_lines(page):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):      # https:, mailto:, ...
                continue
            file_part, _, anchor = target.partition("#")
            resolved = resolve(page, file_part, from_root=False) if file_part else page
            if resolved is None or (file_part and not (ROOT / resolved).is_file()):
                broken.append(f"{page}:{number}: {target} (no such file)")
            elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                broken.append(f"{page}:{number}: {target} (no such section)")
    assert not broken, "\n".join(broken)


def test_the_site_has_its_pages():
    """The pages the README and the code point readers to are in the site's sources."""
    for page in ("docs/index.md", "docs/getting-started.md", "docs/math.md", "docs/methods.md",
                 "docs/json.md", "docs/notebooks.md", "docs/api/index.md", "docs/key.md",
                 "docs/tree_format.md", "docs/sweep_format.md", "docs/conf.py"):
        assert page in repository_files(), page
    notebooks = (ROOT / "docs" / "notebooks.md").read_text(encoding="utf-8")
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert f"../notebooks/{notebook.stem}\n" in notebooks, notebook.name


# -- the site builds from the docs extra alone, and reads offline -----------------------------

import ast  # noqa: E402
import doctest  # noqa: E402
import importlib.util  # noqa: E402
import sys  # noqa: E402
import tomllib  # noqa: E402


def _requirement_names(requirements) -> set[str]:
    """Distribution names of requirement strings, normalised (``dask[distributed]>=1`` ->
    ``dask``, ``myst_nb`` -> ``myst-nb``)."""
    return {re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0].strip().lower().replace("_", "-")
            for r in requirements}


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _module_level_imports(path: Path) -> set[str]:
    """Top-level package names a module imports when it is imported (module-level ``import``
    and ``from`` statements, outside ``try`` blocks; relative imports left out)."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_the_docs_extra_installs_what_the_build_imports():
    """``pip install '.[docs]'`` alone builds the site: every package that importing an
    exactspec module needs (autodoc imports them all) and every Sphinx extension of
    ``docs/conf.py`` is a dependency of exactspec or a requirement of the docs extra."""
    project = _project()
    available = (_requirement_names(project["dependencies"])
                 | _requirement_names(project["optional-dependencies"]["docs"])
                 | {"exactspec"})
    missing = []
    for path in sorted((ROOT / "exactspec").rglob("*.py")):
        for name in sorted(_module_level_imports(path)):
            if name in sys.stdlib_module_names or name == "__future__":
                continue
            if name.lower().replace("_", "-") not in available:
                missing.append(f"{path.relative_to(ROOT)}: import {name}")
    conf = ast.parse((ROOT / "docs" / "conf.py").read_text(encoding="utf-8"))
    extensions = next(ast.literal_eval(node.value) for node in conf.body
                      if isinstance(node, ast.Assign)
                      and any(getattr(t, "id", None) == "extensions" for t in node.targets))
    assert "sphinx-mathjax-offline" in extensions
    for extension in extensions:
        top = extension.split(".")[0].lower().replace("_", "-")
        if top not in available:
            missing.append(f"docs/conf.py: extension {extension}")
    assert not missing, "not installed by the docs extra:\n" + "\n".join(missing)
    assert "pytest" in _requirement_names(project["optional-dependencies"]["docs"])


def _site_checks():
    spec = importlib.util.spec_from_file_location(
        "site_checks", ROOT / "docs" / "_ext" / "site_checks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_site_checks_examples():
    """The offline check's own examples (``docs/`` is outside the doctest run)."""
    module = _site_checks()
    failed, tried = doctest.testmod(module, verbose=False)
    assert tried and not failed


def test_offline_check_finds_every_network_resource(tmp_path):
    """A page that loads a script, stylesheet, image or frame from the network is named;
    local resources, data URIs and plain hyperlinks are not."""
    checks = _site_checks()
    site = tmp_path / "html"
    (site / "docs").mkdir(parents=True)
    (site / "_static").mkdir()
    (site / "docs" / "good.html").write_text(
        '<html><head><script src="../_static/mathjax/tex-chtml.js"></script>'
        '<link rel="stylesheet" href="../_static/furo.css"></head><body>'
        '<img src="data:image/png;base64,AAAA"><a href="https://example.org/paper">a paper</a>'
        '<script type="application/json">{"url": "https://example.org"}</script>'
        '</body></html>', encoding="utf-8")
    (site / "docs" / "bad.html").write_text(
        '<html><head>'
        '<script defer src="https://cdn.example.net/mathjax/tex-chtml.js"></script>'
        "<link rel='stylesheet' href='http://fonts.example.net/font.css'/>"
        '<script src="//cdn.example.net/require.min.js"></script></head><body>'
        '<IMG SRC="HTTPS://img.example.net/a.png"><iframe src="https://video.example.net/x">'
        '</iframe><img srcset="a.png 1x, https://img.example.net/b.png 2x">'
        '</body></html>', encoding="utf-8")
    (site / "_static" / "theme.css").write_text(
        "@import url('https://fonts.example.net/css');\n"
        "body { background: url(../_static/local.png); }\n", encoding="utf-8")
    problems = checks.offline_problems(site)
    assert problems == [
        "docs/bad.html: <script> https://cdn.example.net/mathjax/tex-chtml.js",
        "docs/bad.html: <link> http://fonts.example.net/font.css",
        "docs/bad.html: <script> //cdn.example.net/require.min.js",
        "docs/bad.html: <img> HTTPS://img.example.net/a.png",
        "docs/bad.html: <iframe> https://video.example.net/x",
        "docs/bad.html: <img> https://img.example.net/b.png",
        "_static/theme.css: url https://fonts.example.net/css",
    ], problems


def test_the_build_runs_the_offline_check():
    """``docs/conf.py`` fails a build whose pages would load a network resource, serves MathJax
    from the site, and loads no widget script from a CDN."""
    conf = (ROOT / "docs" / "conf.py").read_text(encoding="utf-8")
    assert 'app.connect("build-finished", check_offline)' in conf
    assert "site_checks.offline_problems(app.outdir)" in conf
    assert '"sphinx-mathjax-offline"' in conf
    assert "nb_ipywidgets_js: dict = {}" in conf
    assert "mathjax_path" not in re.sub(r"#.*", "", conf)   # the extension's, not a CDN's
