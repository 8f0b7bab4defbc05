"""Build the site: index, course, findings and docs pages, the latest validation report, CLI and
API reference; one CSS file, no JavaScript, nothing fetched at build or view time.

Every page sits at the top of ``out`` (so links between pages are plain file names); figures of the
course are in ``out/course/``, images and files the markdown pages link to are copied into
``out/assets/``.  A link to a repository file the site renders (README.md, docs/*.md,
docs/findings/*.md, ARCHITECTURE.md, the course and its README, validate/README.md,
validate/plans/*.md) opens its page, anchor kept; a ``.md``/``.py`` file it does not render, and a
web address, is shown as a code reference, not a link: a browser would open raw text, and the site
refers to nothing on the network.  ``build_site`` raises :class:`BuildError` naming the first failed
script unless ``keep_going``; with it, the rest is built and the failures are returned (and shown in the index).
"""

from __future__ import annotations

import html
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from amutheory.site import course
from amutheory.site import index
from amutheory.site.markdown import EXTERNAL, SOURCE, markdown_to_html, rewrite_links, title_of

#: the default validation report, and the default seconds one course script may run
from amutheory.names import SITE_REPORT as DEFAULT_REPORT  # noqa: I001 (the defaults, light for the CLI)
from amutheory.names import SITE_TIMEOUT as DEFAULT_TIMEOUT

#: the repository (a source checkout: the course and the docs are not installed with the package)
ROOT = Path(__file__).resolve().parents[2]

CSS = """
body { font-family: Georgia, 'DejaVu Serif', serif; max-width: 60rem; margin: 0 auto; padding: 1rem 2rem;
       line-height: 1.5; color: #222; background: #fff; }
header { border-bottom: 1px solid #ccc; margin-bottom: 1rem; padding-bottom: .5rem; }
header a { margin-right: 1rem; }
pre, code { font-family: 'DejaVu Sans Mono', Menlo, monospace; font-size: .88em; }
pre { background: #f6f6f6; padding: .6rem; overflow-x: auto; border-radius: 3px; }
pre.code { border-left: 3px solid #4a7bb7; }
pre.output { background: #fbfbf0; border-left: 3px solid #b7a84a; }
pre.stderr { background: #f4f4f4; color: #777; font-size: .8em; }
pre.error, .failure { background: #fbeaea; border-left: 3px solid #c33; }
.failure { padding: .6rem; margin: 1rem 0; }
.math { overflow-x: auto; margin: .4rem 0; }
.printed-math { background: #fbfbf0; border-left: 3px solid #b7a84a; padding: .2rem .6rem; }
.math-label { font-family: monospace; font-size: .85em; color: #555; }
.math-error { color: #c33; }
figure { margin: 1rem 0; } img { max-width: 100%; }
table { border-collapse: collapse; margin: .8rem 0; font-size: .9em; }
td, th { border: 1px solid #ddd; padding: .25rem .5rem; vertical-align: top; text-align: left; }
.meta, .unlinked { color: #666; }
.pitch { font-size: 1.05em; }
ol.start li { margin: .3rem 0; }
ul.pages li { margin: .2rem 0; }
.about { color: #555; }
.source-ref code { color: #555; }
"""


class BuildError(ValueError):
    """A course script failed (one line naming it)."""


@dataclass
class SiteResult:
    out: Path
    pages: dict[str, str] = field(default_factory=dict)  # file name -> title
    failures: dict[str, str] = field(default_factory=dict)  # script name -> its error line
    math_errors: list[str] = field(default_factory=list)


def page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f'<title>{html.escape(title)} - amutheory</title>\n<link rel="stylesheet" href="style.css">\n</head>\n'
            f'<body>\n<header><a href="index.html">amutheory</a> <a href="cli.html">CLI</a> '
            f'<a href="api.html">API</a></header>\n<main>\n<h1>{html.escape(title)}</h1>\n{body}\n</main>\n'
            f'</body>\n</html>\n')


def _slug(path: Path, root: Path) -> str:
    try:
        rel = path.resolve().relative_to(root.resolve())
    except ValueError:
        rel = Path(path.name)
    return re.sub(r"[^A-Za-z0-9._-]+", "-", "-".join(rel.with_suffix("").parts)).strip("-")


#: repository files that a browser would show as raw text: linked only when the site renders them
SOURCE_SUFFIXES = (".md", ".py", ".ipynb")


class _Site:
    def __init__(self, out: Path, root: Path):
        self.out, self.root = out, root
        self.md_pages: dict[Path, str] = {}  # resolved markdown source -> page file name
        self.course_pages: dict[Path, str] = {}  # resolved course script -> page file name
        self.folder_pages: dict[Path, str] = {}  # resolved folder -> the page that stands for it
        self.assets: dict[Path, str] = {}

    def asset(self, path: Path) -> str:
        path = path.resolve()
        if path not in self.assets:
            name = _slug(path, self.root) + path.suffix
            (self.out / "assets").mkdir(exist_ok=True)
            shutil.copyfile(path, self.out / "assets" / name)
            self.assets[path] = "assets/" + name
        return self.assets[path]

    def repo_path(self, path: Path) -> str:
        try:
            return path.relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return path.name

    def resolver(self, source_dir: Path):
        """``resolve(url)`` for links written in a file of ``source_dir``: a rendered markdown file or
        course script -> its page (anchor kept); a folder -> the page standing for it, if any; a
        ``.md``/``.py`` file the site does not render -> a code reference (never a raw link), and so
        is a web address (the site refers to nothing on the network); any
        other file -> a copy in ``assets/``; a missing target -> None (the link's text only)."""
        def resolve(url: str):
            if re.match(r"^(https?:)?//", url, re.I):
                return EXTERNAL + url
            if not url or re.match(r"^[a-z][a-z0-9+.-]*:", url, re.I) or url.startswith("#"):
                return url
            path, _, frag = url.partition("#")
            target = (source_dir / path).resolve()
            frag = "#" + frag if frag else ""
            for pages in (self.md_pages, self.course_pages):
                if target in pages:
                    return pages[target] + frag
            if target.is_dir():
                return self.folder_pages.get(target)
            if target.suffix.lower() in SOURCE_SUFFIXES:
                return SOURCE + self.repo_path(target) if target.is_file() else None
            if target.is_file():
                return self.asset(target) + frag
            return None
        return resolve


def _markdown_page(site: _Site, source: Path, result: SiteResult, title: str | None = None) -> None:
    text = source.read_text()
    body = rewrite_links(markdown_to_html(text, result.math_errors), site.resolver(source.parent))
    name = site.md_pages[source.resolve()]
    title = title or title_of(text, source.name)
    text_body = re.sub(r"^\s*<h1[^>]*>.*?</h1>", "", body, count=1, flags=re.S)  # the page prints the title
    (site.out / name).write_text(page(title, text_body))
    result.pages[name] = title


def doc_sources(docs: Path, root: Path, derivations: Path | None = None) -> list[Path]:
    """The markdown pages: ``docs/findings/*.md``, ``docs/*.md``, README.md, ARCHITECTURE.md, the
    course's README, validate/README.md and ``validate/plans/*.md`` (the plans the findings cite)."""
    derivations = derivations if derivations is not None else root / "derivations"
    found = sorted(Path(docs, "findings").glob("*.md")) + sorted(Path(docs).glob("*.md"))
    found += [p for p in (root / "README.md", root / "ARCHITECTURE.md", Path(derivations) / "README.md",
                          root / "validate" / "README.md") if p.is_file()]
    return found + sorted((root / "validate" / "plans").glob("*.md"))


def build_site(out, *, derivations=None, docs=None, root=None, report=None, only: str | None = None,
               keep_going: bool = False, timeout: float = DEFAULT_TIMEOUT, progress=None,
               cli_parser=None) -> SiteResult:
    """Build the site into ``out`` (made if missing).  ``derivations``, ``docs``: the course and docs
    folders (default: the checkout's); ``report``: a campaign folder with ``report.md`` (default
    ``results/quick`` when it has one); ``only``: the course scripts whose file name matches;
    ``cli_parser``: the command line's ``argparse`` parser, whose reference is ``cli.html`` (``amutheory
    docs`` passes :func:`amutheory.cli.build_parser`'s; without it the site has no CLI page)."""
    root = Path(root) if root is not None else ROOT
    derivations = Path(derivations) if derivations is not None else root / "derivations"
    docs = Path(docs) if docs is not None else root / "docs"
    if report is None and (root / DEFAULT_REPORT / "report.md").is_file():
        report = root / DEFAULT_REPORT
    say = progress or (lambda msg: None)
    out = Path(out)
    (out / "course").mkdir(parents=True, exist_ok=True)
    (out / "style.css").write_text(CSS.lstrip())
    result, site = SiteResult(out), _Site(out, root)

    sources = doc_sources(docs, root, derivations)
    for src in sources:
        site.md_pages[src.resolve()] = _slug(src, root) + ".html"
    report_md = Path(report) / "report.md" if report is not None else None
    if report_md is not None:
        site.md_pages[report_md.resolve()] = "report.html"
    scripts = course.select(derivations, only)
    for script in scripts:
        site.course_pages[script.resolve()] = f"course-{script.stem}.html"
    site.folder_pages = _folder_pages(site, root, docs, derivations)

    groups: dict[str, list[str]] = {"Course": [], "Findings": [], "Notes": [], "Validation report": [],
                                    "Reference": []}
    descriptions: dict[str, str] = {}
    course_readme = Path(derivations) / "README.md"
    taught = index.course_descriptions(course_readme.read_text()) if course_readme.is_file() else {}
    for script in scripts:
        say(f"course: {script.name}")
        run = course.run_script(script, out / "course", timeout, cwd=derivations.parent)
        title, body = course.render(run, result.math_errors, site.resolver(derivations))
        name = site.course_pages[script.resolve()]
        (out / name).write_text(page(title, body))
        result.pages[name] = title
        groups["Course"].append(name)
        descriptions[name] = taught.get(script.name) or _course_description(run)
        if run.failed:
            result.failures[script.name] = course.error_line(run)
            if not keep_going:
                raise BuildError(f"docs: {derivations.name}/{script.name} failed: {course.error_line(run)}")
    findings = Path(docs, "findings").resolve()
    for src in sources:
        _markdown_page(site, src, result, title="README" if src.resolve() == (root / "README.md").resolve() else None)
        name = site.md_pages[src.resolve()]
        groups["Findings" if src.resolve().parent == findings else "Notes"].append(name)
        descriptions[name] = index.describe(src.read_text())
    if report_md is not None:
        _markdown_page(site, report_md, result, title=f"Validation report ({Path(report).name})")
        groups["Validation report"].append("report.html")
        descriptions["report.html"] = "the latest validation campaign: its verdicts, tables and figures."
    from amutheory.site.reference import api_reference, cli_reference

    references = ([("cli.html", cli_reference(cli_parser), "every command and flag of the command line.")]
                  if cli_parser is not None else []) + [
        ("api.html", api_reference(), "the Python API and every registered law.")]
    for name, (title, body), about in references:
        (out / name).write_text(page(title, body))
        result.pages[name] = title
        groups["Reference"].append(name)
        descriptions[name] = about
    readme = root / "README.md"
    body = _index_body(site, groups, result, report_md is not None, descriptions,
                       readme.read_text() if readme.is_file() else None)
    (out / "index.html").write_text(page("amutheory", body))
    result.pages["index.html"] = "amutheory"
    return result


#: the index's sections that stand for repository folders (``index.html#findings`` for docs/findings/)
GROUP_IDS = {"Course": "course", "Findings": "findings", "Notes": "notes", "Validation report": "report",
             "Reference": "reference"}


def _folder_pages(site: _Site, root: Path, docs: Path, derivations: Path) -> dict[Path, str]:
    """The page a link to a folder opens: the folder's own README page, else its index section."""
    folders = {Path(docs).resolve(): "index.html#notes", Path(docs, "findings").resolve(): "index.html#findings",
               Path(derivations).resolve(): "index.html#course"}
    for src, name in site.md_pages.items():
        if src.name == "README.md":
            folders[src.parent] = name
    folders[root.resolve()] = "index.html"
    return folders


def _course_description(run) -> str:
    """A course part's line when the course README has none: its first markdown cell's first sentence."""
    for cell in run.cells:
        if cell.kind == "markdown":
            return index.describe(cell.source)
    return ""


def _index_body(site: _Site, groups: dict, result: SiteResult, has_report: bool, descriptions: dict,
                readme: str | None) -> str:
    """The pitch (the README's opening), "Start here", the README's verdict table, failures, then every
    page by group with its line of description."""
    render = (lambda md: rewrite_links(markdown_to_html(md, result.math_errors), site.resolver(site.root)))
    sections = index.sections(readme) if readme is not None else {}
    parts = []
    pitch = index.opening(readme) if readme is not None else ""
    parts.append(f'<div class="pitch">{render(pitch)}</div>' if pitch else
                 "<p>How the maximal-update learning rate scales with depth: the course (each derivation "
                 "script run at build time), the findings, the latest validation report and the reference.</p>")
    if result.failures:
        items = "".join(f"<li><code>{html.escape(k)}</code>: {html.escape(v)}</li>" for k, v in result.failures.items())
        parts.append(f'<div class="failure"><strong>Scripts that failed:</strong><ul>{items}</ul></div>')
    parts.append(_start_here(groups, result, sections, render))
    verdicts = sections.get(index.VERDICT_HEADING)
    if verdicts:
        parts.append(f'<section class="verdicts">{render(verdicts)}</section>')
    parts.append('<h2 id="all-pages">Every page</h2>')
    for group, names in groups.items():
        parts.append(f'<h3 id="{GROUP_IDS[group]}">{html.escape(group)}</h3>')
        if group == "Validation report" and not has_report:
            parts.append("<p>No validation report yet: run <code>amutheory validate --preset quick</code> "
                         "(writes <code>results/quick/report.md</code>), then rebuild with "
                         "<code>amutheory docs --out DIR</code> (or pass <code>--report FOLDER</code>).</p>")
            continue
        if not names:
            parts.append("<p>(none built)</p>")
            continue
        items = []
        for n in names:
            about = descriptions.get(n, "")
            about = f' <span class="about">&mdash; {index.inline(about)}</span>' if about else ""
            items.append(f'<li><a href="{html.escape(n)}">{html.escape(result.pages[n])}</a>{about}</li>')
        parts.append(f'<ul class="pages">{"".join(items)}</ul>')
    return "\n".join(parts)


def _start_here(groups: dict, result: SiteResult, sections: dict, render) -> str:
    """Set-up and the quick campaign (the README's set-up block), the commands, the course's first
    part, the findings, the reference: each a link into the site."""
    def link(name, text=None):
        return f'<a href="{html.escape(name)}">{html.escape(text or result.pages[name])}</a>'

    items = []
    readme = "README.html" if "README.html" in result.pages else None
    setup = sections.get(index.SETUP_HEADING, "")
    block = re.search(r"^```[^\n]*\n.*?^```", setup, re.S | re.M)
    if readme:
        where = link(f"{readme}#{index.heading_id(index.SETUP_HEADING)}", "set-up")
        items.append(f"<li><strong>Install and run the quick campaign</strong> (the README's {where}; the last "
                     f"line writes a validation report){render(block.group(0)) if block else ''}</li>")
        items.append(f"<li><strong>The commands</strong>, one line each, and a first look: "
                     f"{link(readme + '#' + index.heading_id(index.COMMANDS_HEADING), 'the README list')}; "
                     f"{link(readme, 'the whole README')}.</li>")
    guide = _slug(Path(index.YOUR_MODEL_GUIDE), Path(".")) + ".html"
    if guide in result.pages:
        items.append(f"<li><strong>Your own model</strong>: {link(guide, index.YOUR_MODEL_GUIDE)} (a factory, the "
                     "probe, a coord check, a tuned rate's transfer with its interval, the init and "
                     "per-parameter rates).</li>")
    if groups["Course"]:
        first = groups["Course"][0]
        items.append(f"<li><strong>The course</strong>, from its first part: {link(first)}.</li>")
    elif "derivations-README.html" in result.pages:
        items.append(f"<li><strong>The course</strong>: {link('derivations-README.html')}.</li>")
    verdicts = f' and <a href="#{index.heading_id(index.VERDICT_HEADING)}">the verdict table</a> below' \
        if index.VERDICT_HEADING in sections else ""
    items.append(f'<li><strong>What holds and what fails</strong>: <a href="#findings">the findings pages</a>'
                 f'{verdicts}.</li>')
    refs = [link(n) for n in groups["Reference"]]
    if refs:
        items.append(f"<li><strong>The reference</strong>: {', '.join(refs)}.</li>")
    return f'<h2 id="start-here">Start here</h2>\n<ol class="start">{"".join(items)}</ol>'
