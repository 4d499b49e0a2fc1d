"""Sphinx configuration of the exactspec documentation site.

Build from the repository root (the site's sources are ``docs/`` and ``notebooks/``)::

    python -m sphinx -W --keep-going -c docs -b html . OUTDIR

Nothing is downloaded while building: no intersphinx inventories, no web fonts, and the
notebooks run in a local kernel (``nb_execution_mode = "force"``).  Nothing is downloaded
while reading either: the built pages load no script, stylesheet or image from the network
(MathJax is served from the site; ``check_offline`` below fails a build that would).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))                    # autodoc imports this checkout's exactspec
# the notebooks' kernels import this checkout's exactspec too
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")

import exactspec  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))
import site_checks  # noqa: E402  (docs/_ext/site_checks.py)

project = "exactspec"
author = "the exactspec authors"
release = exactspec.__version__
version = release

root_doc = "docs/index"
include_patterns = ["docs/**", "notebooks/*.ipynb"]
exclude_patterns = ["docs/_*", "**/.ipynb_checkpoints",
                    # not searched for sources (CI keeps its environment in .venv here)
                    ".git", ".venv", "venv", "build", "dist", "_site"]

extensions = [
    "myst_nb",                      # Markdown pages (MyST) and executed notebooks
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",          # numpydoc sections
    "sphinx.ext.mathjax",
    # MathJax served from the site itself (_static/mathjax/), not from a CDN: offline, a page
    # with math shows it typeset rather than raw LaTeX.  See "Math offline" below.
    "sphinx-mathjax-offline",
]

# MyST: GitHub-style anchors for headings, so ``docs/math.md#the-optimum`` works both on the
# code host and in the site.
myst_heading_anchors = 3
myst_enable_extensions = ["dollarmath", "colon_fence"]
# tree_format.md titles itself with "##" (its sections are "###"): heading levels are style, not
# a broken reference, so they do not fail the build.
suppress_warnings = ["myst.header"]

# Math offline.  The pages with math (the notebooks' formulas, through MyST's dollarmath) are
# typeset by MathJax in the reader's browser; sphinx.ext.mathjax loads it from a CDN, so a site
# read offline showed raw LaTeX.  sphinx-mathjax-offline (a PyPI package, in the docs extra)
# ships MathJax 3's files, copies them into the built site's _static/mathjax/ and points
# mathjax_path there: the pages stay as they were, typeset in the browser, with pip the only
# installer.  Not sphinx.ext.imgmath, which renders images at build time but needs LaTeX and
# dvipng, system packages that pip cannot install (some hundreds of MB of TeX Live in CI), nor
# sphinxcontrib-katex, which ships KaTeX's script but takes its stylesheet and fonts from a CDN
# and prerenders only through Node.js.  The cost: some 24 MB of MathJax files in the site.
#
# Widgets: myst-nb would load RequireJS and the ipywidgets embedder from CDNs for a page with
# widget state (notebook 02's slider).  A static page has no kernel behind its controls anyway,
# so no widget script is loaded and a widget shows its plain-text form; the notebook's static
# plots show its settings.
nb_ipywidgets_js: dict = {}
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]

# Notebooks: executed at every build, in their own directory, failing the build on an error.
nb_execution_mode = "force"
nb_execution_timeout = 600
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True



def _poll_kernel_replies_in_short_steps() -> None:
    """Make nbclient wait for a cell's reply in polls of at most half a second.

    A cell that opens widget comms (notebook 02's slider) sometimes gets its execute reply only
    when the poll on the shell channel times out, with the reply already waiting
    (jupyter/nbclient#312), so the build would sit idle for the whole cell timeout.
    ``tests/test_notebooks.py`` polls the same way; the overall timeout is unchanged.
    """
    import queue
    import time

    import nbclient.client

    cls = nbclient.client.NotebookClient
    if getattr(cls, "_exactspec_short_polls", False):
        return
    start = cls.async_start_new_kernel_client

    async def start_with_short_polls(self):
        client = await start(self)
        get_msg = client.shell_channel.get_msg

        async def stepped(timeout=None):
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                wait = 0.5 if deadline is None else max(0.0, min(0.5, deadline - time.monotonic()))
                try:
                    return await get_msg(timeout=wait)
                except queue.Empty:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise

        client.shell_channel.get_msg = stepped
        return client

    cls.async_start_new_kernel_client = start_with_short_polls
    cls._exactspec_short_polls = True


_poll_kernel_replies_in_short_steps()

# API reference from the numpydoc docstrings.
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": False}

html_theme = "furo"
html_title = f"exactspec {release}"
html_static_path: list[str] = []
# The site's pages live under docs/ (the sources' own paths); its root index leads there.
html_extra_path = ["_root"]                 # relative to this folder


# -- The API reference: one directive documents every public module of a package ----------------

import pkgutil  # noqa: E402
import re  # noqa: E402

from docutils import nodes  # noqa: E402
from docutils.parsers.rst import directives  # noqa: E402
from docutils.statemachine import StringList  # noqa: E402
from sphinx.util.docutils import SphinxDirective  # noqa: E402

_API_DIRECTIVE = re.compile(r"^```\{exactspec-modules\}\s+(\S+)", re.MULTILINE)


def public_modules(package: str, *, recursive: bool = True) -> list[str]:
    """The public modules of ``package`` (itself first), names starting with ``_`` left out."""
    module = __import__(package, fromlist=["__path__"])
    names = [package]
    if not hasattr(module, "__path__"):
        return names
    walk = pkgutil.walk_packages if recursive else pkgutil.iter_modules
    for info in walk(module.__path__, package + "."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


class ExactspecModules(SphinxDirective):
    """``{exactspec-modules} PACKAGE``: a section with ``automodule`` for each public module.

    Options: ``:shallow:`` documents only the package's direct modules that are not packages
    themselves (the top level of ``exactspec``); ``:others:`` documents every subpackage of
    ``PACKAGE`` that no other page of the same folder documents, so a new subpackage is in
    the reference without editing a page.
    """

    required_arguments = 1
    option_spec = {"shallow": directives.flag, "others": directives.flag}

    def run(self):
        package = self.arguments[0]
        if "others" in self.options:
            here = Path(self.env.doc2path(self.env.docname))
            covered = {m for page in here.parent.glob("*.md") if page != here
                       for m in _API_DIRECTIVE.findall(page.read_text(encoding="utf-8"))}
            module = __import__(package, fromlist=["__path__"])
            names = []
            for info in pkgutil.iter_modules(module.__path__, package + "."):
                if info.ispkg and not info.name.rsplit(".", 1)[1].startswith("_") \
                        and info.name not in covered:
                    names.extend(public_modules(info.name))
        elif "shallow" in self.options:
            module = __import__(package, fromlist=["__path__"])
            names = sorted(info.name for info in pkgutil.iter_modules(module.__path__,
                                                                      package + ".")
                           if not info.ispkg and not info.name.rsplit(".", 1)[1][0] == "_"
                           and info.name not in ("exactspec.cli",))
        else:
            names = public_modules(package)
        if not names:
            return [nodes.paragraph(text="None: every package has its own page.")]
        result = []
        for name in names:
            section = nodes.section(ids=[nodes.make_id("module-" + name)])
            section += nodes.title(text=name)
            # The pages are MyST, and autodoc writes reStructuredText: wrapped in eval-rst.
            # A package documents only what it defines itself: what it re-exports is
            # documented (and linked to) in the module that defines it.
            module = __import__(name, fromlist=["__path__"])
            options = ["   :members:"] + (["   :ignore-module-all:"]
                                          if hasattr(module, "__path__") else [])
            body = StringList(["```{eval-rst}", f".. automodule:: {name}", *options,
                               "```", ""], source=self.env.docname)
            container = nodes.Element()
            self.state.nested_parse(body, self.content_offset, container)
            section.extend(container.children)
            result.append(section)
        return result


def check_notebook_plots(app, exception) -> None:
    """Fail the build if a notebook page of the site shows no plot.

    Every notebook draws at least one figure; a page without an image means the notebook was
    rendered without its outputs.  The count per page goes to the build log.
    """
    if exception is not None or app.builder.format != "html" \
            or app.config.nb_execution_mode == "off":       # a quick build without outputs
        return
    from sphinx.errors import ExtensionError
    from sphinx.util import logging

    counts = {}
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        page = Path(app.outdir) / "notebooks" / f"{notebook.stem}.html"
        html = page.read_text(encoding="utf-8") if page.is_file() else ""
        images = re.findall(r'<img[^>]*\bsrc="([^"]+)"', html)
        counts[notebook.name] = sum(
            1 for src in images
            if src.startswith("data:image/png") or (src.endswith(".png")
                                                   and (page.parent / src).is_file()))
    logging.getLogger(__name__).info(
        "notebook plots in the site: " + ", ".join(f"{k} {v}" for k, v in counts.items())
        + f"; {sum(counts.values())} in all")
    empty = [name for name, count in counts.items() if count == 0]
    if empty:
        raise ExtensionError("notebook pages without a plot: " + ", ".join(empty))


def check_api_pages(app, exception) -> None:
    """Fail the build if a page of the API reference documents no Python object."""
    if exception is not None or app.builder.format != "html":
        return
    from sphinx.errors import ExtensionError

    bare = []
    for source in sorted((ROOT / "docs" / "api").glob("*.md")):
        page = Path(app.outdir) / "docs" / "api" / f"{source.stem}.html"
        html = page.read_text(encoding="utf-8") if page.is_file() else ""
        if source.stem != "others" and '<dl class="py ' not in html:
            bare.append(source.name)
    if bare:
        raise ExtensionError("API pages that document nothing: " + ", ".join(bare))


def check_offline(app, exception) -> None:
    """Fail the build if a page of the site loads a resource from the network.

    A ``<script>``, ``<link>``, ``<img>`` (or other loaded tag) whose address starts with
    ``http://``, ``https://`` or ``//``, or a stylesheet's remote ``url(...)``: the site is
    read offline as it is online (``docs/_ext/site_checks.py``).
    """
    if exception is not None or app.builder.format != "html":
        return
    from sphinx.errors import ExtensionError

    problems = site_checks.offline_problems(app.outdir)
    if problems:
        raise ExtensionError("pages that load a network resource:\n" + "\n".join(problems))


_LITERAL = re.compile(r"(``.*?``)")


def escape_vocabulary_size(app, what, name, obj, options, lines) -> None:
    """Docstrings write the vocabulary's size as ``|V|``, which reStructuredText would read as
    a substitution: outside inline literals it is escaped to stand for itself."""
    for i, line in enumerate(lines):
        if "|V|" in line:
            parts = _LITERAL.split(line)
            lines[i] = "".join(part if part.startswith("``") else part.replace("|V|", r"\|V\|")
                               for part in parts)


def setup(app):
    app.connect("autodoc-process-docstring", escape_vocabulary_size)
    app.add_directive("exactspec-modules", ExactspecModules)
    app.connect("build-finished", check_notebook_plots)
    app.connect("build-finished", check_api_pages)
    app.connect("build-finished", check_offline)
    return {"parallel_read_safe": True}
