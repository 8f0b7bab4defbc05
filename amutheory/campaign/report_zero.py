"""The "Zero padding" section of ``report.md``: is the boundary effect constant-level, did the
boundary law's prediction pass, and one table per zero config."""

from __future__ import annotations

from amutheory.campaign.common import STATISTICS
from amutheory.campaign.formatting import _ci, _figure_lines, _g, _pct


def _geometry(c: dict) -> str:
    s = c["spec"]
    return f"N={s['spatial']}, k={s['kernel']}, {s['dim']}D {s['activation']}"


def _span(values, fmt="{:.3g}") -> str:
    lo, hi = min(values), max(values)
    return fmt.format(lo) if lo == hi else f"{fmt.format(lo)} .. {fmt.format(hi)}"


def _level_clause(rows: list, key: str, flag: str) -> str:
    """``holds at L = 2, 4 (...); fails at L = 8 (...)`` for one config."""
    parts = []
    for verdict, picked in (("holds", [r for r in rows if r[flag]]), ("fails", [r for r in rows if not r[flag]])):
        if picked:
            parts.append(f"{verdict} at L = {', '.join(str(r['depth']) for r in picked)} "
                         f"(L k^2/N^2 {_span([r['regime_parameter'] for r in picked])}, "
                         f"slope shift {_span([r[key] for r in picked], '{:+.3f}')})")
    return "; ".join(parts) or "no data"


def _threshold_sentence(rows: list, flag: str) -> str:
    holds = [r["regime_parameter"] for r in rows if r[flag]]
    fails = [r["regime_parameter"] for r in rows if not r[flag]]
    text = f"holds at {len(holds)} of {len(rows)} (config, depth) points, fails at {len(fails)}"
    if holds and fails:
        if max(holds) < min(fails):
            return text + (f"; the split is clean in L k^2/N^2: it holds up to {max(holds):.3g} and fails from "
                           f"{min(fails):.3g} on")
        return text + (f"; no clean threshold in L k^2/N^2 (holds up to {max(holds):.3g}, fails already at "
                       f"{min(fails):.3g})")
    return text


def _constant_level_lines(zero: list) -> list:
    from amutheory.symbolic.chain.boundary import SLOPE_TOLERANCE

    model = [(c, [r for r in c["regime"] if "slope_shift" in r]) for c in zero]
    meas = [(c, [r for r in c["regime"] if r.get("slope_shift_meas") is not None]) for c in zero]
    lines = ["### Is the boundary effect constant-level?", "",
             "The paper treats the zero-padding boundary as a constant-level factor (no change of the "
             f"depth exponent).  Criterion: the boundary's shift of the local slope d ln eta*/d ln L is at most "
             f"{SLOPE_TOLERANCE} in size.  *Model*: the exact infinite-width boundary ratio "
             "(`boundary.exact_regime`: operator law for linear chains, kernel law for ReLU chains; unit-step "
             "derivative at L; the position-local model of `boundary.regime` for other activations).  *Measured*: local slope of the measured zero/circular mean ratio over "
             "the measured depths, times -1/2 (a derivative over the coarse depth grid; point estimate, its "
             "95% CI in the tables).", ""]
    for c, rows in model:
        lines.append(f"* {c['name']} ({_geometry(c)}): model {_level_clause(rows, 'slope_shift', 'constant_level')}")
    mrows = [r for _, rows in model for r in rows]
    if mrows:
        lines += ["", f"Model, all zero configs: the claim {_threshold_sentence(mrows, 'constant_level')}.", ""]
    for c, rows in meas:
        if rows:
            lines.append(f"* {c['name']} ({_geometry(c)}): measured "
                         f"{_level_clause(rows, 'slope_shift_meas', 'constant_level_meas')}")
    mm = [r for _, rows in meas for r in rows]
    if mm:
        agree = sum(r["constant_level_meas"] == r["constant_level"] for r in mm if "constant_level" in r)
        decided = sum(r.get("constant_level_meas_decided", False) for r in mm)
        lines += ["", f"Measured, all zero configs: the claim {_threshold_sentence(mm, 'constant_level_meas')} "
                      f"(point estimates; the 95% CI decides the verdict -- wholly inside or wholly outside "
                      f"+-{SLOPE_TOLERANCE} -- at {decided} of {len(mm)} points); model and measurement give the "
                      f"same verdict at {agree} of {len(mm)} points.", ""]
    return lines


def _prediction_lines(zero: list) -> list:
    lines = ["### Did the boundary law's prediction pass?", ""]
    methods = sorted({r.get("method", "local-model") for c in zero for r in c["regime"]})
    lines.append("* predicted ratio from: " + ", ".join(
        f"{m} ({', '.join(c['name'] for c in zero if any(r.get('method') == m for r in c['regime']))})"
        for m in methods) + ".  The law is that of the *mean* over seeds; the geometric-mean rows assume the "
        "seed spread of the circular reference for both paddings (not derived).")
    for stat, title in (("mean", "arithmetic mean"), ("geo", "geometric mean")):
        rows = [r for c in zero for r in c["ratio"][stat]]
        inside = sum(r["inside_ci"] for r in rows)
        errs = [abs(r["rel_error"]) for r in rows if r["rel_error"] is not None]
        lines.append(f"* zero/circular ratio ({title}): predicted inside the measured 95% CI at {inside} of "
                     f"{len(rows)} (config, depth) points; |predicted / measured - 1| up to "
                     f"{_pct(max(errs)) if errs else 'n/a'}.")
    for key, what in (("passed_ratio", "ratio check (every depth, both statistics)"),
                      ("passed", "eta* check (every zero depth held out, both statistics)"),
                      ("passed_joint", "joint held-out eta* test")):
        ok = [c["name"] for c in zero if c.get(key)]
        bad = [c["name"] for c in zero if not c.get(key)]
        lines.append(f"* {what}: passed by {len(ok)} of {len(zero)}"
                     + (f" ({', '.join(ok)})" if ok else "") + (f"; failed by {', '.join(bad)}" if bad else "") + ".")
    judged = [r for c in zero for r in c["ratio"]["mean"]
              if r["ratio_pred"] is not None and None not in r["ratio_meas_ci"]]
    under = [r for r in judged if r["ratio_pred"] > r["ratio_meas_ci"][1]]
    over = [r for r in judged if r["ratio_pred"] < r["ratio_meas_ci"][0]]
    lines.append(f"* where it misses (mean): the prediction has too little boundary loss (ratio above the CI) at "
                 f"{len(under)} points and too much (below the CI) at {len(over)}; by activation:")
    for act in sorted({c["spec"]["activation"] for c in zero}):
        rows = [r for c in zero if c["spec"]["activation"] == act for r in c["ratio"]["mean"]]
        errs = [abs(r["rel_error"]) for r in rows if r["rel_error"] is not None]
        lines.append(f"  * {act}: inside at {sum(r['inside_ci'] for r in rows)} of {len(rows)} points, "
                     f"|predicted / measured - 1| up to {_pct(max(errs)) if errs else 'n/a'}")
    unp = [r for c in zero for s in STATISTICS for r in c["ratio"][s]]
    n_unp, n_in = sum(r["inside_ci_unpaired"] for r in unp), sum(r["inside_ci"] for r in unp)
    lines += [f"* with the two seed sets resampled separately (unpaired, ignoring that seed i is the same net "
              f"under both paddings) the predicted ratio would lie inside at {n_unp} of {len(unp)} "
              f"(config, depth, statistic) points instead of {n_in}; "
              f"the per-seed correlation of ln s_bar between the paddings is "
              f"{_span([r['seed_correlation_log'] for r in unp], '{:.3f}')}.", ""]
    return lines


def _law_line(c: dict) -> str:
    """Where the predicted ratio comes from, with its Monte-Carlo error where there is one."""
    rows = c.get("regime", [])
    method = rows[0].get("method", "local-model") if rows else "local-model"
    what = {"operator": "the operator law (exact at infinite width; input average exact)",
            "kernel": "the kernel law (exact at infinite width given the input; Monte Carlo over inputs)",
            "local-model": "the position-local model (no exact law here)"}.get(method, method)
    ses = [r["s_bar_ratio_se"] / r["s_bar_ratio"] for r in rows if r.get("s_bar_ratio_se")]
    tail = f", relative Monte-Carlo error <= {100 * max(ses):.2f}%" if ses else ""
    return f"* predicted ratio: {what}{tail}"


def _zero_config_lines(c: dict) -> list:
    reg = {r["depth"]: r for r in c["regime"]}
    lines = [f"### {c['name']}: eta* {'PASSED' if c['passed'] else 'FAILED'}, "
             f"zero/circular ratio {'PASSED' if c['passed_ratio'] else 'FAILED'}", ""]
    lines += [f"* **error**: {e}" for e in c["errors"]] + [f"* note: {n}" for n in c["notes"]]
    lines += [
        f"* {_geometry(c)}, width {c['spec']['width']}, {c['seeds']} seeds (the same seeds, hence the same "
        f"weights and inputs, for both paddings); zero-padded depths {c['depths']} (all held out), circular "
        f"references at {c['calibration_depths']} (calibration).",
        _law_line(c),
        f"* max relative error of eta*: {_pct(c['max_rel_error'])} (mean), {_pct(c['max_rel_error_geo'])} (geo); "
        f"of the ratio: {_pct(c['max_rel_error_ratio_mean'])} (mean), {_pct(c['max_rel_error_ratio_geo'])} (geo)",
        *[f"* joint held-out test ({st}): chi2 = {t['chi2']:.2f} on {t['dof']} dof, p = {t['p_value']:.3g}"
          for st, t in c.get("held_out_test", {}).items()], "",
        "| stat | depth | L k^2/N^2 | predicted eta* | measured eta* [95% CI] | inside | predicted ratio | "
        "measured ratio [95% CI] | inside | slope shift: model / model on grid / measured [95% CI] | "
        "constant-level? model / measured |",
        "|---|---:|---:|---:|---|:---:|---:|---|:---:|---|:---:|",
    ]
    yn = lambda v: "n/a" if v is None else ("yes" if v else "**no**")  # noqa: E731
    for stat in STATISTICS:
        ratio = {r["depth"]: r for r in c["ratio"][stat]}
        for r in c["per_depth"][stat]:
            d, q, g = r["depth"], ratio.get(r["depth"], {}), reg.get(r["depth"], {})
            shift = (f"{_g(g.get('slope_shift'), 3)} / {_g(g.get('slope_shift_model_grid'), 3)} / "
                     f"{_g(g.get('slope_shift_meas'), 3)} {_ci(g.get('slope_shift_meas_ci'), 3)}"
                     if stat == "mean" else "")
            level = f"{yn(g.get('constant_level'))} / {yn(g.get('constant_level_meas'))}" if stat == "mean" else ""
            lines.append(f"| {stat} | {d} | {_g(g.get('regime_parameter'), 3)} | {_g(r['eta_pred'], 5)} | "
                         f"{_g(r['eta_meas'], 5)} {_ci(r['eta_meas_ci'], 5)} | {yn(r['inside_ci'])} | "
                         f"{_g(q.get('ratio_pred'))} | {_g(q.get('ratio_meas'))} {_ci(q.get('ratio_meas_ci'))} | "
                         f"{yn(q.get('inside_ci')) if q else 'n/a'} | {shift} | {level} |")
    lines.append("")
    return lines + _figure_lines(c)


def _zero_report_lines(summary: dict, zero: list) -> list:
    """The report's "Zero padding" section."""
    lines = [
        "## Zero padding", "",
        "* each config is a pair of the same geometry and the same seeds: zero-padded nets at its depths "
        "and circular-padding nets at its calibration depths.  `a, b, e` and the seed spread are calibrated "
        "on the circular nets only; the zero-padding prediction is that law times the exact infinite-width "
        "zero/circular ratio (`api.zero_padding_factor`: the operator law of linear chains, input average "
        "exact; the kernel law of ReLU chains, Monte Carlo over inputs with the error in summary.json's "
        "`regime[].s_bar_ratio_se`; nothing in the ratio is fitted), so every zero-padded depth is held out.",
        "* ratio = s_bar(zero) / s_bar(circular) of the mean (or geometric mean) over seeds; eta* ratio = "
        "ratio^(-1/2).  95% CI: percentile bootstrap, 2000 replicates, fixed seed, the seeds resampled "
        "*paired* (seed i has the same weights and inputs under both paddings, so the two sets are not "
        "independent; `ratio_meas_ci_unpaired` in summary.json is the interval with the two sets resampled "
        "separately, for comparison).",
        "* regime parameter L k^2/N^2 (per axis in 2D); constant-level: |slope shift| <= 0.05.", "",
    ]
    fig = summary.get("figures", {}).get("boundary_collapse")
    if fig:
        lines += [f"![boundary collapse]({fig})", "",
                  f"Boundary collapse ({', '.join(summary.get('collapse_configs', []))}): measured ratio "
                  "(mean, 95% CI) against L k^2/N^2 (left) and sqrt(L) k/N (right), lines the exact law; if the "
                  "regime parameter is right the series fall on one curve.  sqrt(L) k/N is the square root of "
                  "L k^2/N^2, so the right panel is the same collapse on a stretched axis.", ""]
    lines += _constant_level_lines(zero) + _prediction_lines(zero)
    for c in zero:
        lines += _zero_config_lines(c)
    return lines
