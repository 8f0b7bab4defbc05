"""``amutheory docs``: the static site builds offline and every page, link, equation and image holds.

A tiny fake course (two percent-format scripts, one failing script) and fake docs are built into
tmp_path; one test builds the real site with the first course script only; a headless-browser check
renders pages with Debian's chromium where it is installed and skips cleanly where not.
"""

from __future__ import annotations

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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([1, 2])
    fig.savefig(root / "docs" / "figures" / "plot.png")
    plt.close(fig)
    return root


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
            "cli.html", "api.html"} <= set(pages)
    index = pages["index.html"]
    for name in pages:
        if name != "index.html":
            assert f'href="{name}"' in index, name
    assert "amutheory validate" in index  # no report: the index says how to make one
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
