"""The "Transformers" and "Learning-rate transfer" sections of ``report.md``."""

from __future__ import annotations

from amutheory.campaign.common import STATISTICS
from amutheory.campaign.formatting import _ci, _g, _pct
from amutheory.families import result_family
from amutheory.symbolic.transformer.coherent import effective_depth_of_blocks
from amutheory.transfer import RULES


def _transformer_message(res: dict) -> str:
    """The progress line of an analysed transformer config."""
    fit = res["effective_depth_fit"]["mean"]
    laws = ", ".join(f"{k}: {'n/a' if v.get('passed') is None else ('passed' if v['passed'] else 'FAILED')}"
                     f" ({_pct(v.get('max_rel_error'))})" for k, v in res["laws"].items())
    return (f"[{res['name']}] eta* vs effective depth: fitted exponent (L_eff, deepest 3 K) {_g(fit['exponent'])} "
            f"{_ci(fit['ci'])} "
            f"(-3/2 {'inside' if fit['paper_inside_ci'] else 'outside'}); laws {laws}")


def _law_cell(v: dict) -> str:
    if v.get("passed") is None:
        return "no closed-form law"
    tests = v.get("held_out_test", {})
    p = tests.get("mean", {}).get("p_value")
    return (f"{'passed' if v['passed'] else '**failed**'}: derived {v['derived_exponent']}, max err. "
            f"{_pct(v.get('max_rel_error'))}" + (f", joint p {p:.3g}" if p is not None else ""))


def _transformer_report_lines(summary: dict, configs: list) -> list:
    lines = ["## Transformers", "",
             "Pre-LN blocks (attention + MLP, two residual additions each), effective depth "
             "L_eff = 2K + 2.  Exponent = least-squares slope of ln eta* on ln L_eff over the deepest three K, "
             "95% seed-bootstrap CI.  Two laws are calibrated on K = 1..4 and checked at the held-out K: "
             "`coherent` (the residual coherent leading order for a pre-LN block; no closed form for init none) "
             "and `effective-depth` (the chain law in L_eff: the second paper's claim).", "",
             "| config | exponent vs L_eff, mean [95% CI] | geo [95% CI] | -3/2 inside (mean)? | coherent law | "
             "effective-depth law |", "|---|---|---|:---:|---|---|"]
    for c in configs:
        fm, fg = c["effective_depth_fit"]["mean"], c["effective_depth_fit"]["geo"]
        lines.append(f"| {c['name']} | {_g(fm['exponent'])} {_ci(fm['ci'])} | {_g(fg['exponent'])} {_ci(fg['ci'])} "
                     f"| {'yes' if fm['paper_inside_ci'] else '**no**'} | {_law_cell(c['laws']['coherent'])} | "
                     f"{_law_cell(c['laws']['effective-depth'])} |")
    lines.append("")
    for c in configs:
        lines += [f"### {c['name']}", "", "| K | L_eff | measured eta* (mean) [95% CI] | local slope d ln eta*/d ln K "
                  "| coherent pred. | effective-depth pred. |", "|---:|---:|---|---|---:|---:|"]
        slopes = {r["depth"]: r for r in c["local_slopes"]["mean"]}
        preds = {k: {r["depth"]: r.get("eta_pred") for r in v.get("per_depth", {}).get("mean", [])}
                 for k, v in c["laws"].items()}
        for r in c["per_depth"]["mean"]:
            d = r["depth"]
            sl = slopes.get(d, {})
            cal = " (cal)" if r["calibration"] else ""
            lines.append(f"| {d}{cal} | {effective_depth_of_blocks(d)} | {_g(r['eta_meas'], 5)} "
                         f"{_ci(r['eta_meas_ci'], 5)} | {_g(sl.get('slope'))} {_ci(sl.get('ci'))} | "
                         f"{_g(preds['coherent'].get(d), 5)} | {_g(preds['effective-depth'].get(d), 5)} |")
        for k, v in c["laws"].items():
            if v.get("reason"):
                lines.append(f"\n* {k}: {v['reason']}")
            for err in v.get("errors", []):
                lines.append(f"\n* {k} **error**: {err}")
        lines.append("")
    return lines


def _transfer_report_lines(summary: dict) -> list:
    tr = summary.get("transfer") or {}
    if not tr.get("tables"):
        return []
    lines = ["## Learning-rate transfer", "",
             "Reference: the measured eta* (mean over seeds) at the reference depth; every rule of "
             "`amutheory.transfer` predicts eta* at each deeper held-out depth from it.  Error = predicted / "
             "measured - 1; 'inside' = the predicted ratio eta*(L)/eta*(L_ref) lies in its 95% seed-bootstrap "
             "CI.  Depth for the rules: conv L layers, residual and transformer K blocks (effective depth and "
             "path sum from the traced graph).", "",
             "| family | rule | median abs. error | max abs. error | inside CI |", "|---|---|---:|---:|---:|"]
    for fam, rules in tr["summary"].items():
        for rule in RULES:
            r = rules[rule]
            best = " (best)" if tr["best"].get(fam) == rule else ""
            lines.append(f"| {fam} | {rule}{best} | {_pct(r['median_abs_error'])} | {_pct(r['max_abs_error'])} | "
                         f"{r['inside']}/{r['n']} |")
    lines.append("")
    for t in tr["tables"]:
        # residual nets and Transformers: depth = K blocks; conv chains: L layers
        sym = result_family(t).depth_symbol()
        lines += [f"### {t['name']} (reference depth {sym} = {t['reference_depth']})", "",
                  f"| {sym} | measured ratio eta*({sym})/eta*({sym}_ref) [95% CI] | " + " | ".join(RULES) + " |",
                  "|---:|---|" + "---:|" * len(RULES)]
        for row in t["rows"]:
            cells = [f"{_pct(row['rules'][k]['error'])}{'' if row['rules'][k]['inside'] else '*'}" for k in RULES]
            lines.append(f"| {row['depth']} | {_g(row['measured_ratio'])} {_ci(row['ci'])} | " + " | ".join(cells)
                         + " |")
        lines.append("")
    lines += ["(* = outside the measured CI)", ""]
    return lines
