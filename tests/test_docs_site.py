"""``amutheory docs``: the static site builds offline and every page, link, equation and image holds.

A tiny fake course (two percent-format scripts, one failing script) and fake docs are built into
tmp_path; one test builds the real site with the first course script only; a headless-browser check
renders pages with Debian's chromium where it is installed and skips cleanly where not.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlparse

import pytest

pytest.importorskip("markdown")
pytest.importorskip("latex2mathml")

from amutheory.cli import build_parser, main  # noqa: E402
from amutheory.site.build import BuildError, build_site  # noqa: E402
from amutheory.site.course import parse_cells  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FIGURE_SCRIPT = '''# %% [markdown]
# # A figure and a formula
# The update is $\\Delta h$ and see [the note](../docs/findings/note.md).

# %%
import matplotlib.pyplot as plt
print("plain line")
print("$$ x^2 $$")

# %%
fig, ax = plt.subplots()
ax.plot([0, 1, 2], [0, 1, 4])
print("all derivation checks passed")
'''
MARKDOWN_SCRIPT = '''# %% [markdown]
# # Inline math
# The first weight $a_1$ and a display
# $$ \\eta^* \\propto L^{-3/2} $$

# %%
print("value:", 1 + 1)
'''
FAILING_SCRIPT = '''print("before")
raise RuntimeError("deliberate failure")
'''
README = """# toolkit

A toolkit that **checks a depth law** against `real nets`, with honest statistics.

It checks the papers.  The verdicts are in [the table](#what-holds-and-what-fails); the evidence in
[docs/findings/](docs/findings/); the course starts at [part 01](derivations/01_figure.py).

**Who it is for**

* anyone; see [the plan](validate/plans/PLAN.md), [a script](validate/tool.py) and [notes](tests/NOTES.md#x).

## Set-up (fresh machine)

```bash
pip install -e .
amutheory validate --preset quick --out results/quick
```

## What holds and what fails

Verdicts only.

| claim | verdict | evidence |
|---|---|---|
| the law `L^(-3/2)` | **holds** | [note.md](docs/findings/note.md) |
| the boundary claim | **fails** at practical sizes | [note](docs/findings/note.md#a-note), [theory](docs/theory.md) |

## Limitations

* Nothing else.
"""
PLAN = "# A plan\n\nWritten before it ran; back to the [README](../../README.md#set-up-fresh-machine).\n"
NOTE = """# A note

![a figure](../figures/plot.png)

Back to [the theory](../theory.md#top), and $\\bar s = C$.
"""


class _Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links, self.images, self.stack = [], [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "a" and "href" in attrs:
            self.links.append(attrs["href"])
        if tag in ("img", "link") and ("src" in attrs or "href" in attrs):
            (self.images if tag == "img" else self.links).append(attrs.get("src") or attrs.get("href"))


def _fake_repo(root: Path, failing: bool = False) -> Path:
    (root / "derivations").mkdir(parents=True)
    (root / "derivations" / "01_figure.py").write_text(FIGURE_SCRIPT)
    (root / "derivations" / "02_markdown.py").write_text(MARKDOWN_SCRIPT)
    if failing:
        (root / "derivations" / "03_failing.py").write_text(FAILING_SCRIPT)
    (root / "docs" / "findings").mkdir(parents=True)
    (root / "docs" / "figures").mkdir()
    (root / "docs" / "findings" / "note.md").write_text(NOTE)
    (root / "docs" / "theory.md").write_text("# Theory\n\nNothing here.\n")
    (root / "docs" / "your_model.md").write_text("# Your own model\n\nA guide.\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([1, 2])
    fig.savefig(root / "docs" / "figures" / "plot.png")
    plt.close(fig)
    (root / "README.md").write_text(README)
    (root / "validate" / "plans").mkdir(parents=True)
    (root / "validate" / "plans" / "PLAN.md").write_text(PLAN)
    (root / "validate" / "tool.py").write_text("print('a tool')\n")
    (root / "tests").mkdir()
    (root / "tests" / "NOTES.md").write_text("# Notes the site does not render\n")
    return root


def _plain(markdown_text: str) -> str:
    """Markdown inline text as a reader sees it: links to their text, no emphasis or code marks."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown_text)
    pieces = text.split("`")  # odd pieces are code spans: their stars are not emphasis
    for i in range(0, len(pieces), 2):
        pieces[i] = re.sub(r"(?<![\w*])\*(\S[^*]*?)\*(?![\w*])", r"\1", pieces[i].replace("**", ""))
    return " ".join("".join(pieces).split())


def _text(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def readme_pitch(readme: str) -> str:
    """The README's first paragraph under its title, as plain text."""
    body = readme.split("\n# ", 1)[-1] if not readme.startswith("# ") else readme[2:]
    return _plain(body.split("\n\n")[1])


def readme_verdict_rows(readme: str) -> list[list[str]]:
    """The rows of the README's "What holds and what fails" tables (the one-step table and the generated one under
    training; each table's header and rule left out)."""
    section = readme.split("\n## What holds and what fails\n", 1)[1].split("\n## ", 1)[0]
    lines = section.splitlines()
    rows = [line for i, line in enumerate(lines) if line.startswith("|")
            and not (i + 1 < len(lines) and lines[i + 1].startswith("|---")) and not line.startswith("|---")]
    return [[_plain(cell) for cell in row.strip().strip("|").split("|")] for row in rows]


def check_index(pages: dict, readme: str) -> None:
    """The index opens with the README's pitch, has "Start here" and the README's verdict table (the
    same rows), and README.html is a page."""
    index = pages["index.html"]
    assert "README.html" in pages
    pitch = re.search(r'<div class="pitch">(.*?)</div>', index, re.S)
    assert pitch and readme_pitch(readme) in _text(pitch.group(1))
    assert index.index('class="pitch"') < index.index('id="start-here"') < index.index('class="verdicts"')
    start = re.search(r'<h2 id="start-here">Start here</h2>\s*<ol class="start">(.*?)</ol>', index, re.S)
    assert start and 'href="cli.html"' in start.group(1) and "validate --preset quick" in _text(start.group(1))
    if "docs-your_model.html" in pages:
        assert 'href="docs-your_model.html"' in start.group(1) and "Your own model" in _text(start.group(1))
    section = re.search(r'<section class="verdicts">(.*?)</section>', index, re.S)
    bodies = re.findall(r"<tbody>(.*?)</tbody>", section.group(1), re.S) if section else []
    assert bodies, "no verdict table on the index"
    rows = [[_text(c) for c in re.findall(r"<td>(.*?)</td>", tr, re.S)]
            for body in bodies for tr in re.findall(r"<tr>(.*?)</tr>", body, re.S)]
    assert rows == readme_verdict_rows(readme)


def check_site(out: Path) -> dict:
    """Every page parses, every internal link and image resolves to a file in the site, images are PNG,
    and no raw ``$`` math is left outside code.  Returns {page: its text}."""
    pages = {p.name: p.read_text() for p in out.glob("*.html")}
    assert "index.html" in pages
    for name, text in pages.items():
        parser = _Page()
        parser.feed(text)
        parser.close()
        assert text.lstrip().startswith("<!DOCTYPE html>"), name
        for url in parser.links + parser.images:
            parsed = urlparse(url)
            if parsed.scheme or not parsed.path:
                assert parsed.scheme in ("", "http", "https", "mailto"), (name, url)
                continue
            target = out / parsed.path
            assert target.is_file(), f"{name}: broken link {url}"
            assert not parsed.path.lower().endswith((".md", ".py")), f"{name}: raw source link {url}"
            if parsed.fragment and target.suffix == ".html":
                pass  # anchors of generated headings are not checked
        for url in parser.images:
            assert (out / url).read_bytes()[:8] == PNG_MAGIC, f"{name}: {url} is not a PNG"
        prose = re.sub(r"<pre\b.*?</pre>|<code\b.*?</code>", "", text, flags=re.S)
        assert "$$" not in prose, f"{name}: raw display math left"
        assert not re.search(r"\$[^\s$][^$<]*\$", prose), f"{name}: raw inline math left"
        assert "math-error" not in text, name
        assert "<script" not in text.lower(), name
        assert not re.search(r'(src|href)="(https?:)?//', text), f"{name}: refers to the network"
    return pages


def test_parse_cells_percent_and_plain():
    cells = parse_cells(MARKDOWN_SCRIPT)
    assert [c.kind for c in cells] == ["markdown", "code"]
    assert cells[0].source.startswith("# Inline math") and "$a_1$" in cells[0].source
    assert [c.kind for c in parse_cells(FAILING_SCRIPT)] == ["code"]


def test_fake_course_site(tmp_path):
    root = _fake_repo(tmp_path / "repo")
    out = tmp_path / "site"
    result = build_site(out, derivations=root / "derivations", docs=root / "docs", root=root, timeout=120,
                        cli_parser=build_parser())
    assert not result.failures and not result.math_errors
    pages = check_site(out)
    assert {"course-01_figure.html", "course-02_markdown.html", "docs-findings-note.html", "docs-theory.html",
            "docs-your_model.html", "cli.html", "api.html"} <= set(pages)
    index = pages["index.html"]
    for name in pages:
        if name != "index.html":
            assert f'href="{name}"' in index, name
    assert "amutheory validate" in index  # no report: the index says how to make one
    check_index(pages, README)
    assert 'href="#what-holds-and-what-fails"' in index and 'id="what-holds-and-what-fails"' in index
    assert 'href="index.html#findings"' in index and 'id="findings"' in index  # a folder link
    assert 'href="course-01_figure.html"' in index.split('class="verdicts"')[0]  # the course's first part
    assert index.count('href="docs-findings-note.html#a-note"') == 1  # the table's links open site pages
    readme = pages["README.html"]
    assert 'href="validate-plans-PLAN.html"' in readme and 'href="docs-findings-note.html"' in readme
    assert re.search(r'class="source-ref"[^>]*>a script \(<code>validate/tool.py</code>\)', readme)
    assert re.search(r'class="source-ref"[^>]*>notes \(<code>tests/NOTES.md</code>\)', readme)
    assert 'href="README.html#set-up-fresh-machine"' in pages["validate-plans-PLAN.html"]
    figure = pages["course-01_figure.html"]
    assert figure.count("<math") == 2 and "<msup>" in figure  # $\Delta h$ and $$ x^2 $$
    assert "plain line" in figure and 'href="docs-findings-note.html"' in figure
    imgs = re.findall(r'<img src="([^"]+)"', figure)
    assert len(imgs) == 1 and imgs[0].startswith("course/")
    markdown = pages["course-02_markdown.html"]
    assert markdown.count("<math") == 2 and "<msub>" in markdown and "value: 2" in markdown
    note = pages["docs-findings-note.html"]
    assert 'href="docs-theory.html#top"' in note and re.search(r'<img[^>]+src="assets/', note)
    assert "<math" in note
    cli = pages["cli.html"]
    assert "amutheory docs" in cli and "--keep-going" in cli and "amutheory measure" in cli
    api = pages["api.html"]
    assert "predict" in api and "chain-spectral" in api


def test_report_page(tmp_path):
    root = _fake_repo(tmp_path / "repo")
    report = tmp_path / "campaign"
    (report / "figures").mkdir(parents=True)
    shutil.copy(root / "docs" / "figures" / "plot.png", report / "figures" / "eta.png")
    (report / "report.md").write_text("# Quick campaign\n\n| config | verdict |\n|---|---|\n| a | PASS |\n\n"
                                      "![eta](figures/eta.png)\n")
    out = tmp_path / "site"
    build_site(out, derivations=root / "derivations", docs=root / "docs", root=root, report=report,
               only="02_", timeout=120, cli_parser=build_parser())
    pages = check_site(out)
    assert "course-01_figure.html" not in pages
    assert "<table>" in pages["report.html"] and "PASS" in pages["report.html"]
    assert 'href="report.html"' in pages["index.html"]


def test_failing_script_is_reported(tmp_path):
    root = _fake_repo(tmp_path / "repo", failing=True)
    with pytest.raises(BuildError, match="03_failing.py.*deliberate failure"):
        build_site(tmp_path / "stop", derivations=root / "derivations", docs=root / "docs", root=root,
                   timeout=120)
    out = tmp_path / "site"
    result = build_site(out, derivations=root / "derivations", docs=root / "docs", root=root, keep_going=True,
                        timeout=120, cli_parser=build_parser())
    assert list(result.failures) == ["03_failing.py"]
    pages = check_site(out)
    failed = pages["course-03_failing.html"]
    assert "This script failed" in failed and "deliberate failure" in failed and "before" in failed
    assert "03_failing.py" in pages["index.html"]


def test_cli_refuses_before_any_work(tmp_path, capsys):
    (tmp_path / "a-file").write_text("x")
    for argv, needle in ((["--out", str(tmp_path / "a-file")], "--out"),
                         (["--out", str(tmp_path / "s"), "--report", str(tmp_path / "none")], "--report"),
                         (["--out", str(tmp_path / "s"), "--report", str(tmp_path)], "report.md"),
                         (["--out", str(tmp_path / "s"), "--only", "zzz"], "--only"),
                         (["--out", str(tmp_path / "s"), "--timeout", "0"], "--timeout")):
        assert main(["docs", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and needle in err, err
    assert not (tmp_path / "s").exists()


def test_real_site_first_script(tmp_path, capsys):
    out = tmp_path / "site"
    assert main(["docs", "--out", str(out), "--only", "01_"]) == 0
    pages = check_site(out)
    course = [name for name in pages if name.startswith("course-")]
    assert len(course) == 1 and course[0].startswith("course-01_")
    assert "This script failed" not in pages[course[0]]
    assert {"cli.html", "api.html", "ARCHITECTURE.html", "validate-README.html"} <= set(pages)
    assert any(name.startswith("docs-findings-") for name in pages)
    assert "wrote" in capsys.readouterr().out
    check_index(pages, (Path(__file__).resolve().parents[1] / "README.md").read_text())
    findings = re.search(r'<h3 id="findings">.*?</ul>', pages["index.html"], re.S).group(0)
    assert all(f'href="{name}"' in findings for name in pages if name.startswith("docs-findings-"))


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(_chromium() is None, reason="no chromium or chromium-browser on PATH (Debian's chromium)")
def test_headless_browser_renders(tmp_path):
    root = _fake_repo(tmp_path / "repo")
    out = tmp_path / "site"
    build_site(out, derivations=root / "derivations", docs=root / "docs", root=root, timeout=120,
               cli_parser=build_parser())
    for name in ("index.html", "course-01_figure.html"):
        shot = tmp_path / f"{name}.png"
        subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1000,1400",
                        f"--screenshot={shot}", (out / name).as_uri()],
                       capture_output=True, timeout=120, check=False)
        data = shot.read_bytes()
        assert data[:8] == PNG_MAGIC and len(data) > 5000, name
