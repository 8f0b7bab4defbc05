"""Number and figure formatting shared by ``report.md`` and the progress lines."""

from __future__ import annotations


def _g(x, digits=4):
    if x is None:
        return "n/a"
    return f"{x:.{digits}g}"


def _pct(x):
    return "n/a" if x is None else f"{100 * x:+.1f}%"


def _ci(ci, digits=4):
    if ci is None or ci[0] is None or ci[1] is None:
        return "n/a"
    return f"[{ci[0]:.{digits}g}, {ci[1]:.{digits}g}]"



def _figure_lines(c: dict) -> list:
    """The Markdown image lines of a config result's figures (``c["figures"]``: ``{kind: file name}``)."""
    lines = []
    for kind, fname in c.get("figures", {}).items():
        lines += [f"![{c['name']} {kind}]({fname})", ""]
    return lines
