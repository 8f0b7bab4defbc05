"""Markdown pages to HTML (Python-Markdown), math typeset at build time, links and images rewritten
so they work inside the site (a page links to its page, a file is copied into ``assets/``)."""

from __future__ import annotations

import html
import re

from amutheory.site import math as sitemath

EXTENSIONS = ["tables", "fenced_code", "sane_lists", "toc"]
_ATTR = re.compile(r'(?P<tag><(?:a|img)\b[^>]*?\s)(?P<attr>href|src)="(?P<url>[^"]*)"')
_UNLINK = re.compile(r'<a href="amutheory-unlinked:[^"]*">(.*?)</a>', re.S)
_NO_IMAGE = re.compile(r'<img\b[^>]*?src="amutheory-unlinked:(?P<url>[^"]*)"[^>]*>')


def markdown_to_html(text: str, errors: list) -> str:
    """Markdown with ``$...$`` / ``$$...$$`` math to an HTML fragment (``errors`` collects formulas
    that could not be typeset)."""
    import markdown

    text, pieces = sitemath.extract(text, errors)
    body = markdown.markdown(text, extensions=EXTENSIONS, output_format="html")
    return sitemath.restore(body, pieces)


def rewrite_links(fragment: str, resolve) -> str:
    """Every ``href``/``src`` through ``resolve(url) -> url or None``; a link resolved to None is
    kept as its text (a link to a folder or to a file that does not exist has no place in the site)."""

    def one(m: re.Match) -> str:
        url = html.unescape(m.group("url"))
        new = resolve(url)
        if new is None:
            new = "amutheory-unlinked:" + url
        return f'{m.group("tag")}{m.group("attr")}="{html.escape(new, quote=True)}"'

    out = _ATTR.sub(one, fragment)
    out = _NO_IMAGE.sub(lambda m: f'<span class="unlinked">[image not found: {m.group("url")}]</span>', out)
    return _UNLINK.sub(r'<span class="unlinked">\1</span>', out)


def title_of(text: str, fallback: str) -> str:
    """The first ``# heading`` of a markdown text."""
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].replace("`", "").strip()
    return fallback
