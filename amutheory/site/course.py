"""The course pages: every ``derivations/NN_*.py`` run in a subprocess, cell by cell.

A jupytext percent script is split at its ``# %%`` markers (``# %% [markdown]`` cells are
comment-markdown); a script without markers is one code cell.  The child
(:mod:`amutheory.site._exec`) runs with ``MPLBACKEND=Agg``, ``AMUTHEORY_FAST=1`` and one torch
thread under a timeout; each cell's printed output (``$$...$$`` lines typeset) and figures (PNG)
go on the page, and a failure is shown where it happened.
"""

from __future__ import annotations

import fnmatch
import html
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from amutheory.site import math as sitemath
from amutheory.site.markdown import markdown_to_html, rewrite_links

_MARKER = re.compile(r"^# %%(?P<rest>.*)$")


@dataclass
class Cell:
    kind: str  # "code" or "markdown"
    source: str


@dataclass
class ScriptRun:
    """One script's run: its cells, each code cell's result (in order) and the failure, if any."""

    script: Path
    cells: list[Cell]
    results: list[dict] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return self.error is not None


def parse_cells(text: str) -> list[Cell]:
    """The cells of a jupytext percent script (one code cell when it has no ``# %%`` marker)."""
    lines = text.splitlines()
    if not any(_MARKER.match(line) for line in lines):
        return [Cell("code", text)] if text.strip() else []
    cells, kind, body = [], "code", []

    def close():
        if kind == "markdown":
            md = [re.sub(r"^# ?", "", line) if line.startswith("#") else line for line in body]
            source = "\n".join(md).strip("\n")
        else:
            source = "\n".join(body).strip("\n")
        if source.strip():
            cells.append(Cell(kind, source))

    for line in lines:
        m = _MARKER.match(line)
        if m:
            close()
            kind, body = ("markdown" if "[markdown]" in m.group("rest") else "code"), []
        else:
            body.append(line)
    close()
    return cells


def select(derivations: Path, only: str | None = None) -> list[Path]:
    """The course scripts ``NN_*.py`` in order; ``only``: those whose file name matches the glob
    (a pattern without ``*?[`` matches as a prefix: ``01_``, ``0``)."""
    scripts = sorted(p for p in Path(derivations).glob("*.py") if re.match(r"\d+_", p.name))
    if only is None:
        return scripts
    pattern = only if any(c in only for c in "*?[") else only + "*"
    return [p for p in scripts if fnmatch.fnmatchcase(p.name, pattern)]


def run_script(script: Path, fig_dir: Path, timeout: float, cwd: Path | None = None) -> ScriptRun:
    """Run ``script``'s code cells in a child process; figures are written into ``fig_dir``."""
    import time

    run = ScriptRun(script, parse_cells(script.read_text()))
    code = [c.source for c in run.cells if c.kind == "code"]
    env = dict(os.environ, MPLBACKEND="Agg", AMUTHEORY_FAST="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONHASHSEED="0")
    with tempfile.TemporaryDirectory(prefix="amutheory-docs-") as tmp:
        cells_file, result_file = Path(tmp, "cells.json"), Path(tmp, "result.jsonl")
        cells_file.write_text(json.dumps(code))
        cmd = [sys.executable, "-m", "amutheory.site._exec", str(script.resolve()), str(cells_file),
               str(result_file), str(fig_dir.resolve()), script.stem]
        start = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=cwd or script.parent.parent, env=env, capture_output=True, text=True,
                                  timeout=timeout)
            if proc.returncode != 0:
                run.error = f"exit status {proc.returncode}"
                tail = (proc.stderr or "").strip()
                if tail and not result_file.exists():
                    run.error += "\n" + tail[-4000:]
        except subprocess.TimeoutExpired:
            run.error = f"timed out after {timeout:g} s"
        run.seconds = time.perf_counter() - start
        if result_file.exists():
            run.results = [json.loads(line) for line in result_file.read_text().splitlines() if line.strip()]
    for r in run.results:
        if r["error"]:
            run.error = r["error"]
    return run


def error_line(run: ScriptRun) -> str:
    """The failure of ``run`` in one line: the last line of its traceback."""
    lines = [line for line in (run.error or "").strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "failed"


def render(run: ScriptRun, errors: list, resolve=None) -> tuple[str, str]:
    """The page's title and HTML body; ``errors`` collects formulas that could not be typeset;
    ``resolve`` rewrites the links of markdown cells (see :func:`~amutheory.site.markdown.rewrite_links`)."""
    title, titled = run.script.stem, None
    for cell in run.cells:
        if cell.kind == "markdown":
            m = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if m:
                title, titled = m.group(1).replace("`", "").strip(), cell
            break
    parts = []
    if run.failed:
        parts.append(f'<div class="failure"><strong>This script failed:</strong> {html.escape(error_line(run))} '
                     f'(the traceback is below, where it happened)</div>')
    results = iter(run.results)
    for cell in run.cells:
        if cell.kind == "markdown":
            body = markdown_to_html(cell.source, errors)
            if cell is titled:  # the page prints the title once
                body = re.sub(r"<h1[^>]*>.*?</h1>", "", body, count=1, flags=re.S)
            parts.append(f'<section class="md-cell">{rewrite_links(body, resolve) if resolve else body}</section>')
            continue
        parts.append(f'<pre class="code"><code>{html.escape(cell.source)}</code></pre>')
        result = next(results, None)
        if result is None:
            parts.append('<p class="not-run">(not run: an earlier cell failed or the script timed out)</p>')
            continue
        out = sitemath.printed_output(result["stdout"], errors)
        if out:
            parts.append(f'<div class="cell-output">{out}</div>')
        if result["stderr"].strip():
            parts.append(f'<pre class="stderr">{html.escape(result["stderr"].strip())}</pre>')
        for name in result["figures"]:
            parts.append(f'<figure><img src="course/{html.escape(name)}" alt="figure of {html.escape(title)}">'
                         f'</figure>')
        if result["error"]:
            parts.append(f'<pre class="error">{html.escape(result["error"].strip())}</pre>')
    if run.failed and not run.results:
        parts.append(f'<pre class="error">{html.escape(run.error)}</pre>')
    elif run.failed and run.results and not run.results[-1]["error"]:
        parts.append(f'<pre class="error">{html.escape(run.error)}</pre>')  # a timeout, a crash
    parts.append(f'<p class="meta">Source: <code>derivations/{html.escape(run.script.name)}</code>; '
                 f'ran in {run.seconds:.1f} s at build time.</p>')
    return title, "\n".join(parts)
