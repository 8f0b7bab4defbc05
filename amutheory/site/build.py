"""Build the site: index, course, findings and docs pages, the latest validation report, CLI and
API reference; one CSS file, no JavaScript, nothing fetched at build or view time.

Every page sits at the top of ``out`` (so links between pages are plain file names); figures of the
course are in ``out/course/``, images and files the markdown pages link to are copied into
``out/assets/``.  ``build_site`` raises :class:`BuildError` naming the first failed script unless
``keep_going``; with it, the rest is built and the failures are returned (and shown in the index).
"""

from __future__ import annotations

import html
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from amutheory.site import course
from amutheory.site.markdown import markdown_to_html, rewrite_links, title_of

#: the repository (a source checkout: the course and the docs are not installed with the package)
ROOT = Path(__file__).resolve().parents[2]
#: the default validation report
DEFAULT_REPORT = "results/quick"
#: the default seconds one course script may run
DEFAULT_TIMEOUT = 900.0

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


class _Site:
    def __init__(self, out: Path, root: Path):
        self.out, self.root = out, root
        self.md_pages: dict[Path, str] = {}  # resolved markdown source -> page file name
        self.assets: dict[Path, str] = {}

    def asset(self, path: Path) -> str:
        path = path.resolve()
        if path not in self.assets:
            name = _slug(path, self.root) + path.suffix
            (self.out / "assets").mkdir(exist_ok=True)
            shutil.copyfile(path, self.out / "assets" / name)
            self.assets[path] = "assets/" + name
        return self.assets[path]

    def resolver(self, source_dir: Path):
        def resolve(url: str):
            if not url or re.match(r"^[a-z][a-z0-9+.-]*:", url, re.I) or url.startswith("#"):
                return url
            path, _, frag = url.partition("#")
            target = (source_dir / path).resolve()
            frag = "#" + frag if frag else ""
            if target in self.md_pages:
                return self.md_pages[target] + frag
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


def doc_sources(docs: Path, root: Path) -> list[Path]:
    """The markdown pages: ``docs/findings/*.md``, ``docs/*.md``, ARCHITECTURE.md, validate/README.md."""
    found = sorted(Path(docs, "findings").glob("*.md")) + sorted(Path(docs).glob("*.md"))
    found += [p for p in (root / "ARCHITECTURE.md", root / "validate" / "README.md") if p.is_file()]
    return found


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

    sources = doc_sources(docs, root)
    for src in sources:
        site.md_pages[src.resolve()] = _slug(src, root) + ".html"
    report_md = Path(report) / "report.md" if report is not None else None
    if report_md is not None:
        site.md_pages[report_md.resolve()] = "report.html"

    groups: dict[str, list[str]] = {"Course": [], "Findings and notes": [], "Validation report": [],
                                    "Reference": []}
    for script in course.select(derivations, only):
        say(f"course: {script.name}")
        run = course.run_script(script, out / "course", timeout, cwd=derivations.parent)
        title, body = course.render(run, result.math_errors, site.resolver(derivations))
        name = f"course-{script.stem}.html"
        (out / name).write_text(page(title, body))
        result.pages[name] = title
        groups["Course"].append(name)
        if run.failed:
            result.failures[script.name] = course.error_line(run)
            if not keep_going:
                raise BuildError(f"docs: {derivations.name}/{script.name} failed: {course.error_line(run)}")
    for src in sources:
        _markdown_page(site, src, result)
        groups["Findings and notes"].append(site.md_pages[src.resolve()])
    if report_md is not None:
        _markdown_page(site, report_md, result, title=f"Validation report ({Path(report).name})")
        groups["Validation report"].append("report.html")
    from amutheory.site.reference import api_reference, cli_reference

    references = ([("cli.html", cli_reference(cli_parser))] if cli_parser is not None else []) + [
        ("api.html", api_reference())]
    for name, (title, body) in references:
        (out / name).write_text(page(title, body))
        result.pages[name] = title
        groups["Reference"].append(name)
    (out / "index.html").write_text(page("amutheory", _index_body(groups, result, report_md is not None)))
    result.pages["index.html"] = "amutheory"
    return result


def _index_body(groups: dict, result: SiteResult, has_report: bool) -> str:
    parts = ["<p>How the maximal-update learning rate scales with depth: the course (each derivation "
             "script run at build time), the findings, the latest validation report and the reference.</p>"]
    if result.failures:
        items = "".join(f"<li><code>{html.escape(k)}</code>: {html.escape(v)}</li>" for k, v in result.failures.items())
        parts.append(f'<div class="failure"><strong>Scripts that failed:</strong><ul>{items}</ul></div>')
    for group, names in groups.items():
        parts.append(f"<h2>{html.escape(group)}</h2>")
        if group == "Validation report" and not has_report:
            parts.append("<p>No validation report yet: run <code>amutheory validate --preset quick</code> "
                         "(writes <code>results/quick/report.md</code>), then rebuild with "
                         "<code>amutheory docs --out DIR</code> (or pass <code>--report FOLDER</code>).</p>")
            continue
        if not names:
            parts.append("<p>(none built)</p>")
            continue
        items = "".join(f'<li><a href="{html.escape(n)}">{html.escape(result.pages[n])}</a></li>' for n in names)
        parts.append(f"<ul>{items}</ul>")
    return "\n".join(parts)
