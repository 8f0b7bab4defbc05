"""The CLI and API reference, generated from the code: every subcommand of
:func:`amutheory.cli.build_parser` (description, usage, flags), the docstrings of
:data:`amutheory.api.__all__` and :mod:`amutheory.laws`, and each registered law's ``describe()``."""

from __future__ import annotations

import argparse
import html
import inspect


def _esc(text) -> str:
    return html.escape(str(text))


def _subcommands(parser: argparse.ArgumentParser) -> dict:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return {}


def _flag_row(action) -> str:
    names = ", ".join(action.option_strings) or action.dest
    if action.nargs == 0:
        takes = ""
    elif action.choices:
        takes = "{" + ",".join(map(str, action.choices)) + "}"
    else:
        takes = action.metavar or action.dest.upper()
    required = " (required)" if action.required and action.option_strings else ""
    default = "" if action.default in (None, False, argparse.SUPPRESS) or action.nargs == 0 else repr(action.default)
    return (f"<tr><td><code>{_esc(names)}</code>{required}</td><td><code>{_esc(takes)}</code></td>"
            f"<td>{_esc(default)}</td><td>{_esc(action.help or '')}</td></tr>")


def cli_reference(parser: argparse.ArgumentParser) -> tuple[str, str]:
    """(title, HTML body) of the CLI reference of ``parser`` (``amutheory docs`` passes its own: the
    command line sits on top of the site, which never imports it)."""
    commands = _subcommands(parser)
    parts = [f"<p>{_esc(parser.description)}</p>", "<ul>"]
    parts += [f'<li><a href="#cmd-{name}"><code>amutheory {name}</code></a></li>' for name in commands]
    parts.append("</ul>")
    for name, sub in commands.items():
        parts.append(f'<h2 id="cmd-{name}"><code>amutheory {name}</code></h2>')
        if sub.description:
            parts.append(f"<p>{_esc(sub.description)}</p>")
        parts.append(f'<pre class="usage">{_esc(sub.format_usage().strip())}</pre>')
        rows = [_flag_row(a) for a in sub._actions
                if not isinstance(a, argparse._HelpAction) and a.help != argparse.SUPPRESS]
        parts.append("<table><thead><tr><th>flag</th><th>takes</th><th>default</th><th>what</th></tr></thead>"
                     "<tbody>" + "".join(rows) + "</tbody></table>")
    return "CLI reference", "\n".join(parts)


def _doc_block(name: str, obj) -> str:
    doc = inspect.getdoc(obj) or "(no docstring)"
    kind = "class" if inspect.isclass(obj) else ("function" if callable(obj) else "value")
    sig = ""
    if callable(obj):
        try:
            sig = str(inspect.signature(obj))
        except (TypeError, ValueError):
            sig = ""
    if kind == "value":
        shown = repr(obj)
        doc = shown if len(shown) <= 400 else shown[:400] + " ..."
    return (f'<h3 id="api-{_esc(name)}"><code>{_esc(name)}{_esc(sig)}</code> <small>{kind}</small></h3>'
            f'<pre class="doc">{_esc(doc)}</pre>')


def api_reference() -> tuple[str, str]:
    """(title, HTML body) of the API reference."""
    import amutheory.api as api
    import amutheory.laws as laws
    from amutheory.laws import REGISTRY

    parts = ["<h2>amutheory.api</h2>", f'<pre class="doc">{_esc(inspect.getdoc(api) or "")}</pre>']
    parts += [_doc_block(name, getattr(api, name)) for name in api.__all__ if not name.startswith("_")]
    parts += ["<h2>amutheory.laws</h2>", f'<pre class="doc">{_esc(inspect.getdoc(laws) or "")}</pre>']
    parts += [_doc_block(name, getattr(laws, name)) for name in getattr(laws, "__all__", ())
              if name != "REGISTRY"]
    parts.append('<h2 id="registry">The registered laws</h2>')
    for name, law in REGISTRY.items():
        d = law.describe()
        rows = "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in d.items())
        parts.append(f'<h3 id="law-{_esc(name)}"><code>{_esc(name)}</code></h3><table>{rows}</table>')
    return "API reference", "\n".join(parts)
