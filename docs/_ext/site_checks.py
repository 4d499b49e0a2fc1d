"""Checks of the built site that need nothing but the standard library.

``docs/conf.py`` runs them when a build finishes; ``tests/test_docs.py`` tests them on small
pages of its own, without Sphinx.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

#: Tags whose ``src``, ``href`` or ``data`` the browser loads with the page.
RESOURCE_TAGS = {"script", "link", "img", "iframe", "source", "video", "audio", "embed",
                 "object", "track", "input"}
_ATTRIBUTES = {"src", "href", "data", "srcset", "poster"}
_NETWORK = re.compile(r"^\s*(?:https?:)?//", re.IGNORECASE)
_CSS_URL = re.compile(r"""(?:url\(\s*|@import\s+)['"]?((?:https?:)?//[^'")\s]+)""",
                      re.IGNORECASE)


class _Resources(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        if tag not in RESOURCE_TAGS:
            return
        for name, value in attrs:
            if name in _ATTRIBUTES and value:
                for part in value.split(",") if name == "srcset" else [value]:
                    if _NETWORK.match(part):
                        self.found.append((tag, part.strip().split()[0]))

    handle_startendtag = handle_starttag


def network_references(html: str) -> list[tuple[str, str]]:
    """``(tag, address)`` of every resource a page would fetch from the network.

    A resource is the ``src``, ``href``, ``data``, ``srcset`` or ``poster`` of a tag the
    browser loads with the page (a script, a stylesheet or other ``<link>``, an image, a
    frame, media); an address is remote when it starts with ``http://``, ``https://`` or
    ``//``.  A hyperlink (``<a href>``) is not a resource: following it is the reader's choice.

    >>> network_references('<script src="https://cdn.example/x.js"></script><a href="https://x">')
    [('script', 'https://cdn.example/x.js')]
    >>> network_references('<link rel="stylesheet" href="_static/furo.css"><img src="a.png">')
    []
    """
    parser = _Resources()
    parser.feed(html)
    parser.close()
    return parser.found


def offline_problems(outdir: str | Path) -> list[str]:
    """``page: tag address`` for each remote resource of the site in ``outdir``.

    Every HTML page is read, and every stylesheet for ``url(...)`` and ``@import``.
    """
    root = Path(outdir)
    problems = []
    for page in sorted(root.rglob("*.html")):
        for tag, address in network_references(page.read_text(encoding="utf-8",
                                                              errors="replace")):
            problems.append(f"{page.relative_to(root).as_posix()}: <{tag}> {address}")
    for sheet in sorted(root.rglob("*.css")):
        for address in _CSS_URL.findall(sheet.read_text(encoding="utf-8", errors="replace")):
            problems.append(f"{sheet.relative_to(root).as_posix()}: url {address}")
    return problems
