"""Markdown pages to HTML (Python-Markdown), math typeset at build time, links and images rewritten
so they work inside the site (a page links to its page, a file is copied into ``assets/``)."""

from __future__ import annotations

import html
import re

from amutheory.site import math as sitemath

EXTENSIONS = ["tables", "fenced_code", "sane_lists", "toc"]
_ATTR = re.compile(r'(?P<tag><(?:a|img)\b[^>]*?\s)(?P<attr>href|src)="(?P<url>[^"]*)"')
_UNLINK = re.compile(r'<a href="amutheory-unlinked:[^"]*">(.*?)</a>', re.S)
_NO_IMAGE = re.compile(r'<img\b[^>]*?src="amutheory-(?:unlinked|source|external):(?P<url>[^"]*)"[^>]*>')
#: what a resolver returns for a repository file the site does not render (``SOURCE + "path/in/repo.py"``)
SOURCE = "amutheory-source:"
#: what a resolver returns for a web address (the site refers to nothing on the network; the address is shown)
EXTERNAL = "amutheory-external:"
_SOURCE = re.compile(r'<a href="amutheory-(?P<kind>source|external):(?P<path>[^"]*)"[^>]*>(?P<text>.*?)</a>', re.S)


def markdown_to_html(text: str, errors: list) -> str:
    """Markdown with ``$...$`` / ``$$...$$`` math to an HTML fragment (``errors`` collects formulas
    that could not be typeset)."""
    import markdown

    text, pieces = sitemath.extract(text, errors)
    body = markdown.markdown(text, extensions=EXTENSIONS, output_format="html")
    return sitemath.restore(body, pieces)


def rewrite_links(fragment: str, resolve) -> str:
    """Every ``href``/``src`` through ``resolve(url) -> url or None``; a link resolved to None is
    kept as its text (a link to a folder or to a file that does not exist has no place in the site);
    one resolved to ``SOURCE + path`` (a source file the site does not render) or ``EXTERNAL + url``
    becomes a code reference: its text, with the path or address beside it unless the text already
    names it."""

    def one(m: re.Match) -> str:
        url = html.unescape(m.group("url"))
        new = resolve(url)
        if new is None:
            new = "amutheory-unlinked:" + url
        return f'{m.group("tag")}{m.group("attr")}="{html.escape(new, quote=True)}"'

    out = _ATTR.sub(one, fragment)
    out = _NO_IMAGE.sub(lambda m: f'<span class="unlinked">[image not in the site: {m.group("url")}]</span>', out)
    out = _SOURCE.sub(_source_reference, out)
    return _UNLINK.sub(r'<span class="unlinked">\1</span>', out)


def _source_reference(m: re.Match) -> str:
    path, text = html.unescape(m.group("path")), m.group("text")
    shown = html.unescape(re.sub(r"<[^>]+>", "", text))
    where = "in the repository" if m.group("kind") == "source" else "on the web"
    if (path.rstrip("/").rsplit("/", 1)[-1] if m.group("kind") == "source" else path) in shown:
        return f'<span class="source-ref" title="{html.escape(path)} {where}">{text}</span>'
    return f'<span class="source-ref">{text} (<code>{html.escape(path)}</code>)</span>'


def title_of(text: str, fallback: str) -> str:
    """The first ``# heading`` of a markdown text."""
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].replace("`", "").strip()
    return fallback
