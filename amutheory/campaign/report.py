"""``report.md``: what was run, per-config tables, exponents, constants, pass/fail, figures.

The circular-padding sections are written here; the zero-padding and residual-network sections
by :mod:`amutheory.campaign.report_zero` and :mod:`amutheory.campaign.report_resnet`.
"""

from __future__ import annotations

from pathlib import Path

from amutheory.campaign.common import STATISTICS
from amutheory.campaign.draws import effective_of, groups_of
from amutheory.campaign.formatting import _ci, _figure_lines, _g, _pct
from amutheory.campaign.presets import CHAIN_ANALYSIS, RESIDUAL_ANALYSIS, TRANSFORMER_ANALYSIS, analysed_by
from amutheory.campaign.report_resnet import _resnet_report_lines
from amutheory.campaign.report_transformer import _transfer_report_lines, _transformer_report_lines
from amutheory.campaign.report_width import _width_report_lines
from amutheory.campaign.report_zero import _zero_report_lines


def write_report(path: Path, summary: dict) -> None:
    """``report.md``: what was run, per-config tables, exponents, constants, pass/fail, figures."""
    pr = summary["protocol"]
    lines = [f"# amutheory validation campaign: preset `{summary['preset']}`", ""]
    resnets = [c for c in summary["configs"] if analysed_by(c, RESIDUAL_ANALYSIS)]
    transformers = [c for c in summary["configs"] if analysed_by(c, TRANSFORMER_ANALYSIS)]
    circ = [c for c in summary["configs"]
            if c.get("padding", "circular") != "zero" and analysed_by(c, CHAIN_ANALYSIS)]
    zero = [c for c in summary["configs"] if c.get("padding") == "zero" and c not in resnets]
    lines += _headline_lines(summary, circ, zero, resnets)
    lines += _what_was_run_lines(summary, pr)
    lines += _config_table_lines(summary["configs"])
    for c in circ:
        lines += _circular_config_lines(c)
    if zero:
        lines += _zero_report_lines(summary, zero)
    if resnets:
        lines += _resnet_report_lines(summary, resnets)
    if transformers:
        lines += _transformer_report_lines(summary, transformers)
    lines += _transfer_report_lines(summary)
    lines += _width_report_lines(summary)
    lines += _draw_group_lines(summary)
    Path(path).write_text("\n".join(lines) + "\n")


def _headline_lines(summary: dict, circ: list, zero: list, resnets: list) -> list:
    """The report's opening paragraphs: how many circular, zero-padding and residual configs passed."""
    lines = []
    n_pass = sum(c["passed"] for c in circ)
    n_joint = sum(c.get("passed_joint", False) for c in circ)
    if circ:
        lines += [
            f"{n_pass} of {len(circ)} {'circular-padding ' if zero else ''}configs passed "
            "(predicted eta* inside the measured 95% CI at every held-out depth, for both the arithmetic "
            f"and the geometric mean over seeds); {n_joint} of {len(circ)} pass the joint "
            "held-out test (chi-square p >= 0.05 and every depth inside its Bonferroni interval)."
            + _independence_note(summary, [c["name"] for c in circ]) + _null_note(summary, "circular"), ""]
    if zero:
        lines += [
            f"Zero padding: {sum(c['passed'] for c in zero)} of {len(zero)} configs pass the eta* check and "
            f"{sum(c['passed_ratio'] for c in zero)} of {len(zero)} the zero/circular ratio check "
            "(predicted inside the measured 95% CI at every depth, both statistics); see "
            "[Zero padding](#zero-padding).", ""]
    if resnets:
        stable = [c for c in resnets if c["forward_stable"]]
        lines += [
            f"Residual networks: {len(stable)} of {len(resnets)} configs are forward-stable; "
            f"{sum(bool(c['passed']) for c in stable)} of those pass the held-out eta* check and -3/2 lies in "
            f"the fitted CI over the deepest K for {sum(c['claim_minus_three_halves'] for c in resnets)}; see "
            "[Residual networks](#residual-networks)." + _independence_note(summary, [c["name"] for c in stable])
            + _null_note(summary, "resnet"), ""]
    return lines


def _what_was_run_lines(summary: dict, pr: dict) -> list:
    """The report's "What was run" section: probe, protocol ``pr``, calibration, joint check, timing."""
    return [
        "## What was run", "",
        f"* probe: one SGD step from the init, first order in eta, `s_l` = mean square of "
        f"`J_theta h_l grad`; dtype {pr['dtype']}, device {pr['device']}, input variance "
        f"{pr['input_var']}; every parameter (head included) takes the SGD step.",
        f"* eta* = sqrt(C / s_bar) with C = {summary['C']} (a convention; it cancels in every ratio).",
        f"* 95% intervals: percentile bootstrap over seeds (2000 replicates).",
        "* calibration (lognormal model, `amutheory.calibrate.calibrate`): the arithmetic mean over "
        "seeds of s_bar(L) follows the derived infinite-width law (the expansion is an expectation) "
        "with `a, b, e` fitted on the calibration depths only; the typical value (geometric mean) is "
        "the law times exp(-sigma^2(L)/2), with the seed variance of ln s_bar fitted as a straight "
        "line `sigma2_0 + kappa L` on the same depths; `epsilon` exact, `gamma = 0`.  Held-out depths "
        "are the independent check.",
        "* linear circular chains are not calibrated: their mean is the spectral law "
        "(`amutheory.symbolic.chain.spectral`), derived mode by mode in the Fourier basis and exact at infinite "
        "width, with every constant computed from the spec and the probe (input statistics, batch, head); "
        "only the seed-spread line of the typical value is fitted on the calibration depths.  The finite-width "
        "excess of the mean (relative order l/n) is not in it.",
        "* joint check: each held-out depth is a separate set of nets, so a right prediction misses "
        "its own 95% interval with probability 5% at every depth.  The joint test (`stats.held_out_test`) turns "
        "each depth's lognormal t-statistic of ln(predicted / measured) (Cox's method for the mean) into "
        "a z-score, sums the squares into a chi-square with one degree of freedom per held-out depth, "
        "and asks every depth to lie inside its Bonferroni interval (level 1 - 0.05/k).",
        f"* measuring time this run: {summary['timing']['measure_s']:.1f} s "
        f"({summary['timing']['blocks_computed']} blocks computed, "
        f"{summary['timing']['blocks_resumed']} taken from an earlier run); analysis "
        f"{summary['timing']['analysis_s']:.1f} s.", "",
    ]


def _config_table_lines(configs: list) -> list:
    """The table of every config's spec, seeds and depths (a blank line after it)."""
    lines = ["| config | padding | dim | activation | width | kernel | spatial | batch | seeds | depths "
             "| calibration depths |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in configs:
        s = c["spec"]
        cal = f"{c['calibration_depths']} (circular nets)" if c.get("padding") == "zero" else c["calibration_depths"]
        lines.append(f"| {c['name']} | {s.get('padding', '-')} | {s.get('dim', 1)} | {s['activation']} | "
                     f"{s['width']} | {s.get('kernel', '-')} | "
                     f"{s.get('spatial', '-')}{'x' + str(s['spatial']) if s.get('dim') == 2 else ''} | {s['batch']} | "
                     f"{c['seeds']} | {c['depths']} | {cal} |")
    lines.append("")
    return lines


def _independence_note(summary: dict, names: list) -> str:
    """" These N configs are G groups ..." for configs that share their seeds' draws, else ""."""
    draws = summary.get("draw_groups")
    if not draws or len(names) < 2:
        return ""
    groups = groups_of(draws, names)
    if len(groups) == len(names):
        return ""
    return (f" These {len(names)} configs are {len(groups)} groups sharing their seeds' draws (effective number "
            f"of independent configs {effective_of(draws, names):.1f}; [Shared draws](#shared-draws)), so their "
            "verdicts are not independent outcomes.")


def _null_note(summary: dict, key: str) -> str:
    """" An exact law would pass E of N ..." (``summary.json``'s ``held_out_null``), else ""."""
    null = (summary.get("held_out_null") or {}).get(key)
    if not null:
        return ""
    return (f" On these seeds an exact law would pass {null['expected']:.1f} of {null['configs']} on average (5th "
            f"percentile {null['percentile_5']}; the {null['rows']} held-out rows are {null['effective_rows']:.1f} "
            f"effective independent ones; `amutheory.campaign.draws.pass_count_null`): P(count <= {null['passed']}) "
            f"= {null['p_value']:.3f} under an exact law.")


def _draw_group_lines(summary: dict) -> list:
    """The report's "Shared draws" section: which configs' seeds draw the same normals."""
    draws = summary.get("draw_groups")
    if not draws or not draws["groups"]:
        return []
    lines = ["## Shared draws", "",
             "Nets of one architecture under different inits or activations draw the same normals from a seed "
             "(weights by shape, then inputs and loss directions), so their sampling errors at a depth move "
             "together: one unlucky draw fails a whole group.  Correlation: of the per-seed ln s_bar, mean over "
             f"the depths both configs measured; groups join configs at >= {draws['threshold']} (single linkage; "
             f"`amutheory.campaign.draws`).  Effective number of independent configs (participation ratio of the "
             f"correlation matrix): {draws['effective_configs']:.1f} of {sum(len(g) for g in draws['groups'])}.", "",
             "| group | configs | lowest correlation inside |", "|---|---|---|"]
    for i, group in enumerate(draws["groups"], 1):
        within = [draws["correlation"][a][b] for j, a in enumerate(group) for b in group[:j]]
        within = [r for r in within if r is not None]
        low = f"{min(within):.2f}" if within else "-"
        lines.append(f"| {i} | {', '.join(group)} | {low} |")
    return lines + [""]


def _circular_config_lines(c: dict) -> list:
    """The section of one circular-padding config: verdict, tables of eta*, exponents, constants."""
    return (_circular_verdict_lines(c) + _eta_table_lines(c) + _exponent_table_lines(c) + _constant_table_lines(c)
            + _mlp_limit_lines(c) + _calibration_note_lines(c) + _figure_lines(c))


def _circular_verdict_lines(c: dict) -> list:
    """A circular config's heading, errors, notes, law and held-out verdicts."""
    lines = [f"## {c['name']}: {'PASSED' if c['passed'] else 'FAILED'}", ""]
    for err in c["errors"]:
        lines.append(f"* **error**: {err}")
    for note in c["notes"]:
        lines.append(f"* note: {note}")
    return lines + [
        f"* law `{c['law']}`, derived asymptotic exponent of eta*: **{c['derived_exponent']}**; constants: "
        f"{c.get('constants_from', 'calibrated (lognormal model)')}",
        f"* max relative error of eta* over held-out depths: {_pct(c['max_rel_error'])} (mean), "
        f"{_pct(c['max_rel_error_geo'])} (geo)",
        *[f"* joint held-out test ({st}): chi2 = {t['chi2']:.2f} on {t['dof']} dof, p = {t['p_value']:.3f}; "
          f"z = {', '.join(f'{z:+.2f}' for z in t['z'])}; inside Bonferroni "
          f"{100 * t['bonferroni_level']:.2f}% intervals: {'all' if all(t['bonferroni_inside']) else 'NOT all'}"
          for st, t in c.get("held_out_test", {}).items()],
        f"* held-out depths outside the CI: mean {c['outside_ci_depths_mean'] or 'none'}, "
        f"geo {c['outside_ci_depths_geo'] or 'none'}; calibration depths outside the CI: "
        f"mean {c['outside_ci_calibration_depths_mean'] or 'none'}, "
        f"geo {c['outside_ci_calibration_depths_geo'] or 'none'}", "",
    ]


def _eta_table_lines(c: dict) -> list:
    """A circular config's tables of predicted and measured eta* per depth, one per statistic."""
    lines = []
    for stat, title in (("mean", "arithmetic mean over seeds"), ("geo", "geometric mean over seeds")):
        lines += [f"### eta*, {title}", "",
                  "| depth | cal? | predicted eta* | measured eta* [95% CI] | rel. error | inside |",
                  "|---:|:---:|---:|---|---:|:---:|"]
        for r in c["per_depth"][stat]:
            lines.append(f"| {r['depth']} | {'cal' if r['calibration'] else ''} | {_g(r['eta_pred'], 5)} | "
                         f"{_g(r['eta_meas'], 5)} {_ci(r['eta_meas_ci'], 5)} | {_pct(r['rel_error'])} | "
                         f"{'yes' if r['inside_ci'] else '**no**'} |")
        lines.append("")
    return lines


def _exponent_table_lines(c: dict) -> list:
    """A circular config's table of fitted eta*(L) exponents against the derived one and the law's slope."""
    lines = ["### Fitted exponents of eta*(L)", "",
             "Least-squares slope of ln eta* on ln L, 95% seed-bootstrap CI; compared with the derived "
             f"asymptotic exponent {c['derived_exponent']} and with the calibrated law's own "
             "least-squares slope over the same depths (finite-depth corrections make the two differ).", "",
             "| statistic | depths | fitted exponent | 95% CI | derived in CI? | law's slope, same depths |",
             "|---|---|---:|---|:---:|---:|"]
    for stat in STATISTICS:
        for key in ("all", "held_out"):
            fit = c["fitted_exponents"][stat][key]
            law_slope = c.get(f"predicted_effective_exponent_{stat}" if key == "all"
                              else f"predicted_effective_exponent_held_out_{stat}")
            if fit is None:
                lines.append(f"| {stat} | {key} | n/a | n/a | n/a | n/a |")
                continue
            lines.append(f"| {stat} | {key} {fit['depths']} | {fit['exponent']:.4f} | {_ci(fit['ci'])} | "
                         f"{'yes' if fit['derived_inside_ci'] else 'no'} | {_g(law_slope)} |")
    return lines


def _constant_table_lines(c: dict) -> list:
    """A circular config's table of calibrated (per statistic) and derived constants."""
    lines = ["", "### Constants", "",
             "| constant | statistic | value | error | source |", "|---|---|---:|---:|---|"]
    for stat in STATISTICS:
        for k, v in c["constants"].get(stat, {}).items():
            if k in ("a", "b", "e", "gamma", "epsilon", "sigma2_0", "kappa", "r_1"):
                lines.append(f"| {k} | {stat} | {_g(v['value'], 5)} | {_g(v['error'], 3)} | {v['source']} |")
    for k, v in c["derived_constants"].items():
        lines.append(f"| {k} | derived | {_g(v['value'], 5)} | {_g(v['error'], 3)} | {v['source']} |")
    return lines


def _mlp_limit_lines(c: dict) -> list:
    """A circular config's comparison of b/a with the derived MLP-limit v_mlp."""
    lines = ["", "MLP-limit comparison: the derivation gives b/a = v_mlp only in the MLP limit "
             "(k = 1, one position, one sample); a conv chain is not expected to sit there.", "",
             "| statistic | b/a (calibrated; derived for linear chains) | error | derived v_mlp | ratio |",
             "|---|---:|---:|---:|---:|"]
    for stat in STATISTICS:
        m = c["mlp_limit_comparison"].get(stat)
        if m:
            lines.append(f"| {stat} | {_g(m['b_over_a'])} | {_g(m['b_over_a_error'], 3)} | {_g(m['v_mlp'])} | "
                         f"{_g(m['ratio_to_mlp_limit'])} |")
    return lines + [""]


def _calibration_note_lines(c: dict) -> list:
    """A circular config's line per statistic on how it was calibrated (method, notes, residual)."""
    lines = []
    for stat in STATISTICS:
        cal = c["calibration"].get(stat)
        if cal:
            fitted_law = "a" in cal["constants"]  # else only the seed-spread line (spectral law)
            how = cal["constants"].get("a" if fitted_law else "kappa", {}).get("note", "")
            extra = "; ".join(cal.get("notes", []))
            lines.append(f"* calibration ({stat}): {how}" + (f"; {extra}" if extra else "")
                         + (f"; rms log residual {cal['residual_rms_log']:.3g}" if fitted_law else ""))
    return lines + [""]
