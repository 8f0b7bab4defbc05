"""The "Learning-rate transfer across width" section of ``report.md``."""

from __future__ import annotations

from amutheory.campaign.formatting import _ci, _g, _pct
from amutheory.transfer import WIDTH_RULES


def _width_report_lines(summary: dict) -> list:
    wt = summary.get("width_transfer") or {}
    if not wt.get("sweeps"):
        return []
    lines = ["## Learning-rate transfer across width", "",
             "One net per family at a fixed depth, measured at every width.  Fitted exponent: least squares of "
             "ln(mean s_bar) on ln n times -1/2, 95% seed-bootstrap CI; derived: `amutheory.symbolic.primitives.width` "
             "(s ~ F^2 R: -1/2 for the standard `Var 1/n` readout, 0 for the muP `Var 1/n^2` one).  Transfer: "
             "from the measured eta* at the narrowest width, each width rule predicts eta*(n)/eta*(n_ref); "
             "'inside' = in the ratio's 95% CI (both seed sets resampled).  `derived` is the rule "
             "`amutheory.transfer` uses; `fan-in` (lr ~ 1/fan_in) is shown for comparison.", "",
             "| width rule | median abs. error | max abs. error | inside CI |", "|---|---:|---:|---:|"]
    for rule in WIDTH_RULES:
        r = wt["summary"][rule]
        lines.append(f"| {rule} | {_pct(r['median_abs_error'])} | {_pct(r['max_abs_error'])} | "
                     f"{r['inside']}/{r['n']} |")
    lines += ["", "| sweep | depth | widths | fitted exponent (mean) [95% CI] | (geo) [95% CI] | derived | "
                  "derived in CI (mean/geo) |", "|---|---:|---|---|---|---:|:---:|"]
    for r in wt["sweeps"]:
        if "error" in r:
            lines.append(f"| {r['name']} | | | **error**: {r['error']} | | | |")
            continue
        m, g = r["fit"]["mean"], r["fit"]["geo"]
        widths = ", ".join(str(x["width"]) for x in r["rows"])
        yes = lambda b: "yes" if b else "**no**"  # noqa: E731
        lines.append(f"| {r['name']} | {r['depth']} | {widths} | {_g(m['exponent'])} {_ci(m['ci'])} | "
                     f"{_g(g['exponent'])} {_ci(g['ci'])} | {_g(r['derived_exponent'])} | "
                     f"{yes(m['derived_inside'])}/{yes(g['derived_inside'])} |")
    lines.append("")
    for r in wt["sweeps"]:
        if "error" in r:
            continue
        lines += [f"### {r['name']} (reference width {r['reference_width']}, {r['seeds']} seeds)", "",
                  "| width | eta* (mean) [95% CI] | measured ratio [95% CI] | "
                  + " | ".join(f"{k} ratio (error)" for k in WIDTH_RULES) + " |",
                  "|---:|---|---|" + "---:|" * len(WIDTH_RULES)]
        by_width = {t["width"]: t for t in r["transfer"]}
        for row in r["rows"]:
            t = by_width.get(row["width"])
            if t is None:
                lines.append(f"| {row['width']} | {_g(row['eta_star'])} {_ci(row['eta_star_ci'])} | reference | "
                             + " | ".join("" for _ in WIDTH_RULES) + " |")
                continue
            cells = [f"{_g(t['rules'][k]['ratio'])} ({_pct(t['rules'][k]['error'])}"
                     f"{'' if t['rules'][k]['inside'] else '*'})" for k in WIDTH_RULES]
            lines.append(f"| {row['width']} | {_g(row['eta_star'])} {_ci(row['eta_star_ci'])} | "
                         f"{_g(t['measured_ratio'])} {_ci(t['ci'])} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["(* = outside the measured CI)", ""]
    return lines
