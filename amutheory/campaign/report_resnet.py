"""The "Residual networks" section of ``report.md`` and the progress line of a resnet config."""

from __future__ import annotations

from amutheory.campaign.common import STATISTICS
from amutheory.campaign.formatting import _ci, _figure_lines, _g, _pct
from amutheory.campaign.presets import STREAM_SEEDS
from amutheory.spec import INITS


def _resnet_message(res: dict) -> str:
    """The progress line of an analysed resnet config."""
    if not res["forward_stable"]:
        return f"[{res['name']}] forward unstable (stream {res['growth']}): no law fitted"
    deep = (res["fitted_exponents"].get("mean") or {}).get("deepest")
    verdict = "no law" if res["passed"] is None else ("passed" if res["passed"] else "FAILED")
    return (f"[{res['name']}] {verdict}: max rel. error (held-out, mean) {_pct(res['max_rel_error'])}, fitted "
            f"exponent (deepest 3 K) {_g(deep and deep['exponent'])} {_ci(deep and deep['ci'])}, "
            f"(all K) {_g(res['fitted_exponent'])} {_ci(res['fitted_exponent_ci'])} vs derived "
            f"{res['derived_exponent']}")


def _fit_cell(fit: dict | None) -> str:
    return "n/a" if not fit else f"{fit['exponent']:.3f} {_ci(fit['ci'], 3)}"


def _law_slope_cell(fit: dict | None) -> str:
    if not fit or fit.get("law_exponent") is None:
        return "n/a"
    return f"{fit['law_exponent']:.3f} ({'yes' if fit['law_inside_ci'] else '**no**'})"


def _resnet_verdict(c: dict) -> str:
    if c["passed"] is None:
        return "n/a (forward unstable)" if not c["forward_stable"] else "n/a (no law)"
    tests = c.get("held_out_test", {})
    ps = [f"{tests[s]['p_value']:.3g} ({s})" for s in STATISTICS if s in tests]
    joint = f"; joint p = {', '.join(ps)}" if ps else ""
    cal = c.get("passed_joint_with_calibration")
    with_cal = "" if cal is None else f"; with the calibration's error: {'consistent' if cal else '**inconsistent**'}"
    return (f"{'passed' if c['passed'] else '**failed**'} (max err. {_pct(c['max_rel_error'])} (mean){joint})"
            f"{with_cal}")


def _resnet_table_lines(resnets: list) -> list:
    lines = ["| convention | branch | activation | derived exponent | measured exponent, all K [95% CI] | "
             "measured exponent, deepest 3 K [95% CI] | derived in CI (all / deepest) | "
             "law's slope over the deepest 3 K (in CI?) | forward stable? | "
             "paper's -3/2 holds? | held-out check (both statistics) |",
             "|---|---|---|---:|---|---|:---:|---|:---:|:---:|---|"]
    order = {i: k for k, i in enumerate(INITS)}
    for c in sorted(resnets, key=lambda c: (order.get(c["init"], 99), c["spec"]["activation"] != "relu")):
        fits = c["fitted_exponents"].get("mean") or {}
        inside = " / ".join("n/a" if not fits.get(k) else ("yes" if fits[k]["derived_inside_ci"] else "no")
                            for k in ("all", "deepest"))
        claim = ("yes" if c["claim_minus_three_halves"] else "no") if c["forward_stable"] else "no (no power law)"
        lines.append(f"| {c['init']} | {c['branch']} | {c['spec']['activation']} | "
                     f"{c['derived_exponent'] or 'none (unstable)'} | {_fit_cell(fits.get('all'))} | "
                     f"{_fit_cell(fits.get('deepest'))} | {inside} | {_law_slope_cell(fits.get('deepest'))} | "
                     f"{'yes' if c['forward_stable'] else '**no**'} | {claim} | {_resnet_verdict(c)} |")
    return lines


def _held_out_cell(res: dict, stat: str) -> str:
    """``-4.4% / -4.4%`` over the held-out K, ``!`` where outside the measured 95% CI."""
    rows = [r for r in (res.get("per_depth") or {}).get(stat, []) if not r["calibration"]]
    return " / ".join("n/a" if r["rel_error"] is None else f"{_pct(r['rel_error'])}{'' if r['inside_ci'] else '!'}"
                      for r in rows) or "n/a"


def _rms_cell(res: dict) -> str:
    """The rms log residual of a result's calibration of the mean."""
    return _g(((res.get("calibration") or {}).get("mean") or {}).get("residual_rms_log"), 3)


def _selected_cell(c: dict) -> str:
    """The law picked from the calibration alone, with each law's residual standard error."""
    sel = c.get("selected_law")
    if not sel:
        return "n/a"
    ses = ", ".join(f"{law} {se:.3g}" for law, se in sel["residual_se_log"].items())
    return f"{sel['law']} ({ses})"


def _dense_shape_lines(resnets: list) -> list:
    """Both residual laws side by side at the held-out K: the coherent order (``A, B, e0``) and the
    dense shape (the exact dense law's two parts, ``rho_stream, rho_own``), and the one picked per
    config from its calibration alone (``selected_law``)."""
    rows = [c for c in resnets if c["forward_stable"] and c.get("dense_shape")]
    if not rows:
        return []
    lines = ["### The two calibrated laws at the held-out K", "",
             "`coherent`: the coherent order, `A, B, e0` calibrated; `dense-shape`: the stream and own parts of "
             "the exact dense law (`amutheory.symbolic.resnet.dense.shape_predictor`), each times a calibrated "
             "constant (`predict --law dense-shape`); same calibration K, seeds and spread model.  Errors of "
             "predicted eta* at the held-out K (`!`: outside the measured 95% CI); \"calibration rms\": the rms "
             "log residual of the fit at the calibration K.  \"picked\": the law with the lower residual "
             "standard error of that fit (sqrt(RSS / dof): 3 constants against 2), chosen before the held-out "
             "K are seen (`predict --law selected`).", "",
             "| convention | branch | activation | coherent: mean (geo) | coherent: passes / with calibration "
             "error | coherent: calibration rms | dense-shape: mean (geo) | dense-shape: passes / with "
             "calibration error | dense-shape: calibration rms | picked (residual se) |",
             "|---|---|---|---|---|---:|---|---|---:|---|"]
    yes = {True: "yes", False: "**no**", None: "n/a"}
    for c in rows:
        d = c["dense_shape"]
        if d.get("covered"):
            dcells = (f"{_held_out_cell(d, 'mean')} ({_held_out_cell(d, 'geo')}) | {yes[d['passed']]} / "
                      f"{yes[d['passed_joint_with_calibration']]} | {_rms_cell(d)}")
        else:
            dcells = "not covered | | "
        lines.append(f"| {c['init']} | {c['branch']} | {c['spec']['activation']} | {_held_out_cell(c, 'mean')} "
                     f"({_held_out_cell(c, 'geo')}) | {yes[c['passed']]} / {yes[c['passed_joint_with_calibration']]}"
                     f" | {_rms_cell(c)} | {dcells} | {_selected_cell(c)} |")
    covered = [c for c in rows if c["dense_shape"].get("covered")]
    picked = [c["selected_law"] for c in rows if c.get("selected_law")]
    lines += ["", f"* covered by the dense law: {len(covered)} of {len(rows)} stable configs; held-out passes "
              f"(both statistics): coherent {sum(bool(c['passed']) for c in covered)}, "
              f"dense-shape {sum(bool(c['dense_shape']['passed']) for c in covered)}; consistent with the "
              f"calibration's error: coherent {sum(bool(c['passed_joint_with_calibration']) for c in covered)}, "
              f"dense-shape {sum(bool(c['dense_shape']['passed_joint_with_calibration']) for c in covered)}.",
              f"* the law picked from the calibration, over all {len(rows)} stable configs ({len(picked)} picked: "
              f"{sum(p['law'] == 'dense-shape' for p in picked)} dense-shape): held-out passes "
              f"{sum(bool(p['passed']) for p in picked)}, consistent with the calibration's error "
              f"{sum(bool(p['passed_joint_with_calibration']) for p in picked)}.", ""]
    return lines


def _exact_law_lines(resnets: list) -> list:
    """The exact law (nothing fitted) where it covers a config: inside the measured CI at how many K
    (every K is held out), for the mean and the typical value, the errors at the campaign's held-out
    K and its slope against the measured deepest-K fit."""
    rows = [c for c in resnets if c["forward_stable"] and (c.get("exact_law") or {}).get("covered")]
    if not rows:
        return []
    lines = ["### The exact law (nothing fitted)", "",
             "`amutheory.api.exact_resnet_law`: the dense law, or for linear nets with circular padding the "
             "mode-by-mode law (`amutheory.symbolic.resnet.spectral`), at infinite width; `predict --constants "
             "derive`.  The typical value is the mean times `exp(gap)` of the infinite-width seed law (inputs "
             "and loss directions; Monte Carlo for spatial nets).  Nothing is fitted, so every K is held out.  "
             "Errors of predicted eta* at the calibrated laws' held-out K (`!`: outside the measured 95% CI).", "",
             "| convention | branch | activation | inside the CI, every K: mean / geo | at the held-out K: mean "
             "(geo) | passes (every K) | deepest-K slope [95% CI] | law's slope |",
             "|---|---|---|---:|---|---|---|---:|"]
    yes = {True: "yes", False: "**no**", None: "n/a"}
    for c in rows:
        e = c["exact_law"]
        deep = ((e.get("fitted_exponents") or {}).get("mean") or {}).get("deepest") or {}
        ci = deep.get("ci") or [None, None]
        slope = "n/a" if deep.get("exponent") is None else f"{deep['exponent']:+.3f} [{ci[0]:+.3f}, {ci[1]:+.3f}]"
        law_slope = "n/a" if deep.get("law_exponent") is None else f"{deep['law_exponent']:+.3f}"
        im, ig = e.get("depths_inside_mean") or [0, 0], e.get("depths_inside_geo") or [0, 0]
        held = {"per_depth": {st: [{**r, "calibration": r["depth"] not in c["held_out_depths"]}
                                   for r in (e.get("per_depth") or {}).get(st, [])] for st in ("mean", "geo")}}
        lines.append(f"| {c['init']} | {c['branch']} | {c['spec']['activation']} | {im[0]} / {ig[0]} of {im[1]} | "
                     f"{_held_out_cell(held, 'mean')} ({_held_out_cell(held, 'geo')}) | {yes[e['passed']]} | {slope} | "
                     f"{law_slope} |")
    total = {st: [sum((c["exact_law"].get(f"depths_inside_{st}") or [0, 0])[i] for c in rows) for i in (0, 1)]
             for st in ("mean", "geo")}
    lines += ["", f"* covered: {len(rows)} stable configs; inside the CI at {total['mean'][0]} (mean) and "
              f"{total['geo'][0]} (geo) of {total['mean'][1]} (config, K); every K inside for both statistics: "
              f"{sum(bool(c['exact_law']['passed']) for c in rows)} of {len(rows)}.", ""]
    return lines


def _resnet_config_lines(c: dict) -> list:
    head = "FORWARD UNSTABLE" if not c["forward_stable"] else ("PASSED" if c["passed"] else "FAILED")
    lines = [f"### {c['name']}: {head}", "", f"* mechanism: {c['mechanism']}", f"* stream growth: {c['growth']}"]
    lines += [f"* **error**: {e}" for e in c["errors"]] + [f"* note: {n}" for n in c["notes"]]
    for st, t in c.get("held_out_test", {}).items():
        lines.append(f"* joint held-out test ({st}): chi2 = {t['chi2']:.2f} on {t['dof']} dof, p = {t['p_value']:.3g}")
        tc = (c.get("held_out_test_with_calibration") or {}).get(st)
        if tc:
            lines.append(f"* the same with the calibrated constants' sampling error in each prediction ({st}): "
                         f"chi2 = {tc['chi2']:.2f}, p = {tc['p_value']:.3g}")
    bp = c.get("block_profile")
    if bp:
        fmt = lambda v: ", ".join("n/a" if x is None else f"{x:.3g}" for x in v)  # noqa: E731
        lines.append(f"* per-block profile at K = {bp['depth']}: s_i / s_K of the first branch layer at i/K = "
                     f"{fmt(bp['x'])}: measured {fmt(bp['measured'])} (local powers {fmt(bp['measured_local_power'])}); "
                     f"calibrated law {fmt(bp['law'])} (local powers {fmt(bp['law_local_power'])}); measured "
                     + "; ".join(f"K = {k}: {fmt(v)}" for k, v in bp.get("measured_by_depth", {}).items()))
    lines += ["", "| K | E[x_K^2]/E[x_0^2] measured (range) | mean field | predicted eta* (mean) | "
              "measured eta* (mean) [95% CI] | inside | local slope of eta* (mean) [95% CI] |",
              "|---:|---|---:|---:|---|:---:|---|"]
    slopes = {r["depth"]: r for r in c["local_slopes"].get("mean", [])}
    for r, q in zip(c["per_depth"]["mean"], c["stream_growth_measured"]):
        s = slopes.get(r["depth"], {})
        inside = "" if r["eta_pred"] is None else ("yes" if r["inside_ci"] else "**no**")
        lines.append(f"| {r['depth']}{' (cal)' if r['calibration'] and c['forward_stable'] else ''} | "
                     f"{_g(q['ratio_meas'])} {_ci(q['ratio_meas_range'])} | {_g(q['mean_field'])} | "
                     f"{_g(r['eta_pred'], 5)} | {_g(r['eta_meas'], 5)} {_ci(r['eta_meas_ci'], 5)} | {inside} | "
                     f"{_g(s.get('slope'), 3)} {_ci(s.get('ci'), 3)} |")
    lines.append("")
    return lines + _figure_lines(c)


def _resnet_report_lines(summary: dict, resnets: list) -> list:
    """The report's "Residual networks" section."""
    stable = [c for c in resnets if c["forward_stable"]]
    lines = [
        "## Residual networks", "",
        "* nets: a stem conv, K residual blocks `x <- x + alpha branch(x)` and the GAP + linear head "
        "(`amutheory.measure.resnet`); depth = K blocks.  Branches: `conv` = phi(W * x), `conv-mlp` = "
        "W2 phi(W1 * x) (W2 1x1), `preact` = W2 * phi(W1 * phi(x)); init conventions as in "
        "`amutheory.symbolic.resnet.init`.  s_bar is the mean over every tensor entering an activation: "
        "K per net (`conv`, `conv-mlp`) or 2K (`preact`, the stream too).",
        "* forward stability, growth and mechanism: the mean-field recursion of the stream "
        "(`amutheory.symbolic.resnet.coherent.forward_analysis`); measured growth E[x_K^2]/E[x_0^2]: mean over the first "
        f"{STREAM_SEEDS} seeds' nets (the probe's weights and inputs), range over them in brackets.",
        "* forward-unstable conventions have no power law: nothing is fitted or predicted for them; their "
        "measured eta*, its local slopes (central differences in ln K, seed-bootstrap CI) and the stream "
        "growth are shown for information.",
        "* stable conventions: the derived law (`api.derive`) with `A, B, e0` and the seed spread calibrated "
        "on the calibration K (lognormal model, as for conv chains), every other K held out; fitted exponent = "
        "least-squares slope of ln eta* on ln K (arithmetic mean over seeds) with its 95% seed-bootstrap CI, "
        "over all K and over the deepest three.  The paper's -3/2 \"holds\" where it lies inside the "
        "deepest-three CI.  The law's slope is that of the predicted eta* over the same K: the derived "
        "exponent plus the finite-K terms (e0, fitted with either sign: the effective first correction of "
        "relative order 1/K, `amutheory.symbolic.resnet.coherent`), which is what a fit over finite K measures; "
        "the derived exponent is the K -> infinity limit.  \"with the calibration's error\": the joint "
        "held-out test (chi-square and Bonferroni) with each prediction's own sampling error (sd of ln s_bar "
        "over the calibration's seed-bootstrap refits) added to the measurement's: a law that misses by more "
        "than both together is inconsistent.",
        f"* {len(stable)} of {len(resnets)} configs are forward-stable; "
        f"{sum(bool(c['passed']) for c in stable)} of those pass the held-out eta* check (both statistics).", "",
    ]
    fig = summary.get("figures", {}).get("resnet_eta_star")
    if fig:
        lines += [f"![resnet eta*]({fig})", "",
                  "Measured eta* (arithmetic mean over seeds, 95% CI) against K, one panel per init convention, "
                  "ReLU; lines: the calibrated derived law where the forward pass is stable (dashed: the dense-shape "
                  "law); open markers: forward-unstable configs (no law).", ""]
    lines += _resnet_table_lines(resnets) + [""]
    lines += _dense_shape_lines(resnets)
    lines += _exact_law_lines(resnets)
    lines += [f"* {c['init']} / {c['branch']} ({c['spec']['activation']}): {c['mechanism']}" for c in resnets]
    lines.append("")
    for c in resnets:
        lines += _resnet_config_lines(c)
    return lines
