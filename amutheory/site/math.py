"""LaTeX to MathML at build time (``latex2mathml``): display ``$$...$$`` and inline ``$...$``.

Math in markdown is cut out before markdown sees it (so ``a_1 * b_2`` is never emphasis), replaced
by placeholders, and put back as MathML after.  Code spans and fenced blocks are left alone.
"""

from __future__ import annotations

import html
import re

#: a printed line that is display math: optional text, then ``$$ ... $$`` to the end of the line
DISPLAY_LINE = re.compile(r"^(?P<prefix>.*?)\$\$(?P<tex>.+?)\$\$\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
# inline code, display math, inline math (pandoc's rule: no space after the opening $, none before
# the closing one, and no digit right after it, so "$5 and $6" is not math)
_TOKEN = re.compile(r"(?P<code>`+)(?:.+?)(?P=code)|\$\$(?P<display>.+?)\$\$|"
                    r"(?<![\\$\w])\$(?P<inline>[^\s$](?:[^$\n]*?[^\s$\\])?)\$(?![\d$])", re.S)


class MathError(ValueError):
    """LaTeX that latex2mathml could not convert."""


def to_mathml(tex: str, display: bool = False) -> str:
    """One formula as a ``<math>`` element (``display="block"`` for display math)."""
    from latex2mathml.converter import convert

    try:
        out = convert(tex.strip(), display="block" if display else "inline")
    except Exception as exc:  # the converter raises its own exception types and plain ones
        raise MathError(f"cannot typeset {tex.strip()!r}: {exc}") from None
    return out


def _math_html(tex: str, display: bool, errors: list) -> str:
    try:
        m = to_mathml(tex, display)
    except MathError as exc:
        errors.append(str(exc))
        return f'<code class="math-error">{html.escape(tex)}</code>'
    return f'<div class="math">{m}</div>' if display else m


def extract(text: str, errors: list) -> tuple[str, dict[str, str]]:
    """``text`` with every formula outside code replaced by a placeholder, and the placeholders'
    MathML (``errors`` collects formulas that could not be typeset: those stay as code)."""
    pieces: dict[str, str] = {}

    def stash(markup: str) -> str:
        key = f"MATHPLACEHOLDER{len(pieces):05d}X"
        pieces[key] = markup
        return key

    def replace(m: re.Match) -> str:
        if m.group("code"):
            return m.group(0)
        if m.group("display") is not None:
            return "\n\n" + stash(_math_html(m.group("display"), True, errors)) + "\n\n"
        return stash(_math_html(m.group("inline"), False, errors))

    out, block, fenced = [], [], False
    for line in text.split("\n"):
        if _FENCE.match(line):
            if not fenced:
                out.append(_TOKEN.sub(replace, "\n".join(block)))
                block = []
            fenced = not fenced
            out.append(line)
        elif fenced:
            out.append(line)
        else:
            block.append(line)
    out.append(_TOKEN.sub(replace, "\n".join(block)))
    return "\n".join(s for s in out if s is not None), pieces


def restore(markup: str, pieces: dict[str, str]) -> str:
    """Put the MathML back (a display placeholder markdown wrapped in ``<p>`` loses the wrapper)."""
    for key, value in pieces.items():
        markup = markup.replace(f"<p>{key}</p>", value).replace(key, value)
    return markup


def printed_output(text: str, errors: list) -> str:
    """A cell's printed output as HTML: plain lines in ``<pre>``, each ``$$...$$`` line as display MathML."""
    parts, plain = [], []

    def flush():
        if plain:
            parts.append(f'<pre class="output">{html.escape(chr(10).join(plain))}</pre>')
            plain.clear()

    for line in text.rstrip("\n").split("\n") if text.strip() else []:
        m = DISPLAY_LINE.match(line)
        if m is None:
            plain.append(line)
            continue
        flush()
        prefix = m.group("prefix").strip()
        label = f'<span class="math-label">{html.escape(prefix)}</span>' if prefix else ""
        parts.append(f'<div class="printed-math">{label}{_math_html(m.group("tex"), True, errors)}</div>')
    flush()
    return "\n".join(parts)
