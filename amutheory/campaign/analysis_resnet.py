"""Analysis of a residual config.

Residual configs (the residual family, ``get_family("resnet")``, ``depth`` = K blocks): their analysis
(:func:`analyse_resnet_config`) asks the mean-field recursion first
(:func:`amutheory.symbolic.resnet.coherent.forward_analysis`): forward-unstable conventions get no law
(``passed`` is ``None``; measured eta*, its local slopes and the stream growth are reported);
stable ones are calibrated and compared as circular conv configs are
(:mod:`amutheory.campaign.analysis`), plus the fitted exponent over the deepest three K and
whether the paper's -3/2 lies in its CI.
"""

from __future__ import annotations

import numpy as np

from amutheory import stats
from amutheory.api import SELECTION_CRITERION, Measurement, pick_resnet_law, predict, resnet_law_name
from amutheory.bootstrap import resample, seed_draws
from amutheory.laws import resolve_law
from amutheory.campaign.analysis import (_dense_depths, _eta_rows, _exponent_fits, _held_out_checks,
                                         _held_out_with_calibration, _record_prediction, _record_verdict)
from amutheory.campaign.bootstrap import _quantile_ci, _seed_stat
from amutheory.campaign.common import N_BOOT, STATISTICS, _f
from amutheory.campaign.presets import CampaignConfig
from amutheory.campaign.results import _stream_complete
# PAPER_EXPONENT: the paper's claimed exponent of eta*(K) for residual nets
from amutheory.names import PAPER_EXPONENT
from amutheory.spec import ArchSpec, ProbeProtocol


def _stream_growth_rows(cfg: CampaignConfig, stream: dict, protocol: ProbeProtocol) -> list:
    """Per K: measured ``E[x_K^2] / E[x_0^2]`` of the residual stream (mean, min and max over
    :attr:`CampaignConfig.stream_seeds`; ``None`` where ``stream.csv`` lacks the nets) and the
    mean-field recursion's (:func:`amutheory.symbolic.resnet.coherent.forward_analysis`)."""
    from amutheory.symbolic.resnet.coherent import forward_analysis

    rows = []
    for d in cfg.depths:
        q = forward_analysis(cfg.spec.with_(depth=d), protocol.input_var)["q_stream"]
        row = {"depth": d, "mean_field": _f(q[-1] / q[0]), "ratio_meas": None, "ratio_meas_range": None,
               "seeds": 0}
        group = stream.get((cfg.name, d))
        if _stream_complete(cfg, d, group):
            ratios = np.array([group[(s, d)] / group[(s, 0)] for s in cfg.stream_seeds])
            row.update(ratio_meas=_f(ratios.mean()), ratio_meas_range=[_f(ratios.min()), _f(ratios.max())],
                       seeds=len(ratios))
        rows.append(row)
    return rows


def _local_slope_rows(meas: Measurement, depths: list, stat: str) -> list:
    """Local slope ``d ln eta* / d ln K`` of the measured statistic at every depth (central
    differences, :func:`amutheory.stats.local_slopes`) with a 95% CI from resampling the seeds
    (seed ``i`` at every depth together, as in :func:`ratio_bootstrap`)."""
    if len(depths) < 2:
        return []
    vals = np.stack([meas.s_bar(d) for d in depths], axis=1)
    idx = seed_draws(vals.shape[0], N_BOOT, 0)
    slope = -0.5 * stats.local_slopes(depths, _seed_stat(vals, stat, 0))
    lo, hi = _quantile_ci(-0.5 * stats.local_slopes(depths, _seed_stat(resample(idx, vals), stat, 1)), meas.level)
    return [{"depth": d, "slope": _f(slope[i]), "ci": [_f(lo[i]), _f(hi[i])]} for i, d in enumerate(depths)]


def _resnet_base(cfg: CampaignConfig, spec: ArchSpec, fwd: dict) -> dict:
    """The keys every resnet result has (the conv format plus the residual ones)."""
    return {
        "name": cfg.name, "family": "resnet", "branch": spec.branch, "init": spec.init,
        "padding": spec.padding, "spec": spec.to_dict(),
        "depths": list(cfg.depths), "calibration_depths": list(cfg.calibration_depths),
        "held_out_depths": cfg.held_out_depths, "seeds": len(cfg.seed_list),
        "forward_stable": bool(fwd["forward_stable"]), "growth": fwd["growth"], "mechanism": fwd["mechanism"],
        "status": "stable" if fwd["forward_stable"] else "unstable",
        "law": None, "derived_exponent": None, "derived_exponent_value": None, "assumptions": [],
        "per_depth": {}, "calibration": {}, "constants": {}, "fitted_exponents": {}, "held_out_test": {},
        "local_slopes": {}, "errors": [], "notes": [], "selected_law": None,
    }


def _mark_unstable(out: dict, cfg: CampaignConfig, meas: Measurement, reason: str) -> None:
    """No law: measured eta* only, every verdict ``None``, the paper's claim not borne out."""
    for stat in STATISTICS:
        out["per_depth"][stat] = _eta_rows(cfg, meas, stat, {}, {}, set(cfg.calibration_depths))
        out["fitted_exponents"][stat] = None
    out.update(passed=None, passed_mean=None, passed_geo=None, passed_joint=None, passed_joint_with_calibration=None,
               block_profile=None, max_rel_error=None,
               max_rel_error_geo=None, fitted_exponent=None, fitted_exponent_ci=None, fitted_exponent_over="all K",
               prediction_curve=None,
               claim_minus_three_halves=False, reason=reason)
    out["notes"].append(f"{reason}: no power law is fitted or predicted; eta*, its local slopes and the "
                        "stream growth are shown for information")


def analyse_resnet_config(cfg: CampaignConfig, meas: Measurement, protocol: ProbeProtocol = ProbeProtocol(),
                          stream: dict | None = None) -> dict:
    """A residual config: forward stability (mean field, :func:`amutheory.symbolic.resnet.coherent.forward_analysis`)
    and the measured stream growth first.  Forward-unstable conventions get no law (``passed``
    is ``None``, ``reason`` says why); stable ones are calibrated on ``cfg.calibration_depths``,
    predicted at every K and compared as conv configs are, plus the fitted exponent over the
    deepest three K and whether the paper's -3/2 lies in its CI (``claim_minus_three_halves``)."""
    from amutheory.api import derive
    from amutheory.symbolic.resnet.coherent import forward_analysis

    spec = cfg.spec.with_(depth=max(cfg.depths))
    out = _resnet_base(cfg, spec, forward_analysis(spec, protocol.input_var))
    out["stream_growth_measured"] = _stream_growth_rows(cfg, stream or {}, protocol)
    out["stream_growth_mean_field"] = [r["mean_field"] for r in out["stream_growth_measured"]]
    for stat in STATISTICS:
        out["local_slopes"][stat] = _local_slope_rows(meas, list(cfg.depths), stat)
    if not out["forward_stable"]:
        _mark_unstable(out, cfg, meas, f"unstable: forward pass not stable (stream {out['growth']})")
        return out
    try:
        law = derive(spec)
    except ValueError as exc:
        out["errors"].append(f"derive failed: {exc}")
        _mark_unstable(out, cfg, meas, "no law: derive(spec) failed")
        return out
    out.update(law=law.name, derived_exponent=str(law.exponent), derived_exponent_value=float(law.exponent),
               assumptions=list(law.assumptions))
    _compare_resnet(out, cfg, spec, meas, protocol, float(law.exponent))
    out["dense_shape"] = _dense_shape_comparison(cfg, spec, meas, protocol, float(law.exponent))
    out["exact_law"] = _exact_law_comparison(cfg, spec, meas, protocol, float(law.exponent))
    out["selected_law"] = selected_law(out)
    return out


#: the verdict keys a ``selected_law`` record takes over from the result of the law it picks
SELECTED_KEYS = ("passed", "passed_mean", "passed_geo", "passed_joint", "passed_joint_with_calibration",
                 "max_rel_error", "max_rel_error_geo")


#: where a residual config's summary keeps each law's per-depth rows (``{statistic: [row per depth]}``):
#: the coherent law's at the top, the dense-shape law's and the exact law's (nothing fitted for the mean)
#: under their own keys
LAW_ROWS = {"coherent": lambda res: res.get("per_depth"),
            "dense-shape": lambda res: (res.get("dense_shape") or {}).get("per_depth"),
            "exact": lambda res: (res.get("exact_law") or {}).get("per_depth")}


def selected_law(res: dict) -> dict | None:
    """The residual law a user would trust for this config from its calibration alone
    (:func:`amutheory.api.pick_resnet_law` over the coherent and, where it covers the config, the
    dense-shape calibration of the mean: the same fit for both statistics) and that law's held-out
    verdicts: ``law`` (``coherent`` / ``dense-shape``), ``name``, ``criterion``,
    ``residual_se_log`` per law and the keys of :data:`SELECTED_KEYS`; ``None`` for a config
    without a law.  The pick uses nothing of the held-out depths, so its verdicts are as
    independent a check as either law's.  The exact law (``exact_law``, nothing fitted for the mean)
    is not among the candidates: it is a separate check, reported beside this one."""
    if not res.get("law"):
        return None
    dense = res.get("dense_shape") or {}
    cals = {"coherent": (res.get("calibration") or {}).get("mean"),
            "dense-shape": (dense.get("calibration") or {}).get("mean") if dense.get("covered") else None}
    picked, ses = pick_resnet_law(cals)
    if picked is None:
        return None
    src = res if picked == "coherent" else dense
    return {"law": picked, "name": src.get("law"), "criterion": SELECTION_CRITERION, "residual_se_log": ses,
            **{k: src.get(k) for k in SELECTED_KEYS}}


#: the keys of a ``dense_shape`` result taken over from its calibrate-predict-compare run
DENSE_SHAPE_KEYS = ("law", "per_depth", "calibration", "constants", "fitted_exponents", "held_out_test",
                    "held_out_test_with_calibration", "passed", "passed_mean", "passed_geo", "passed_joint",
                    "passed_joint_with_calibration", "max_rel_error", "max_rel_error_geo", "outside_ci_depths_mean",
                    "outside_ci_depths_geo", "prediction_curve", "predicted_effective_exponent_mean",
                    "predicted_effective_exponent_geo", "errors", "notes")


def _dense_shape_comparison(cfg: CampaignConfig, spec: ArchSpec, meas: Measurement, protocol: ProbeProtocol,
                            derived: float) -> dict:
    """The calibrate-predict-compare of :func:`_compare_resnet` with the dense-shape law
    (:func:`amutheory.symbolic.resnet.dense.shape_predictor`: the exact dense law's stream and own
    parts, each times a calibrated ``rho``) on the same calibration depths and seeds: ``covered`` (bool), the
    verdict keys of :data:`DENSE_SHAPE_KEYS`, or ``reason`` where the dense law does not cover the
    config (an activation without exact moments, a projection shortcut)."""
    from amutheory.symbolic.resnet.coherent import forward_analysis
    from amutheory.symbolic.resnet.dense import shape_predictor

    try:
        shape_predictor(spec, protocol.input_var)
    except ValueError as exc:
        return {"covered": False, "reason": str(exc)}
    sub = _resnet_base(cfg, spec, forward_analysis(spec, protocol.input_var))
    _compare_resnet(sub, cfg, spec, meas, protocol, derived, law="dense-shape")
    out = {"covered": True, **{k: sub.get(k) for k in DENSE_SHAPE_KEYS}}
    out["law"] = resnet_law_name(spec, "dense-shape")
    return out


def _exact_law_comparison(cfg: CampaignConfig, spec: ArchSpec, meas: Measurement, protocol: ProbeProtocol,
                          derived: float) -> dict:
    """The predict-compare of :func:`_compare_resnet` with the exact infinite-width law
    (:func:`amutheory.api.exact_resnet_law`; the typical value from the infinite-width seed law,
    ``predict(constants="derive", statistic="geo")``): nothing is fitted, so every K is held out and
    ``passed`` covers every K.  ``covered`` (bool), the verdict keys of :data:`DENSE_SHAPE_KEYS`,
    ``inside_ci_every_depth_mean`` and ``depths_inside_mean`` (``[inside, of]``, the mean over every
    K; the same for ``geo``); or ``reason`` where no exact law covers the config."""
    from amutheory.api import exact_resnet_law
    from amutheory.symbolic.resnet.coherent import forward_analysis

    try:
        _, name, _ = exact_resnet_law(spec, monte_carlo=False)
    except ValueError as exc:
        return {"covered": False, "reason": str(exc)}
    sub = _resnet_base(cfg, spec, forward_analysis(spec, protocol.input_var))
    _compare_resnet(sub, cfg, spec, meas, protocol, derived, law="exact")
    out = {"covered": True, **{k: sub.get(k) for k in DENSE_SHAPE_KEYS}}
    out["law"] = name
    for stat in STATISTICS:
        rows = (sub.get("per_depth") or {}).get(stat) or []
        out[f"inside_ci_every_depth_{stat}"] = bool(rows) and all(r["inside_ci"] for r in rows)
        out[f"depths_inside_{stat}"] = [sum(bool(r["inside_ci"]) for r in rows), len(rows)]
    return out


#: positions ``i / K`` at which the per-block profile is reported
PROFILE_POINTS = (0.2, 0.4, 0.6, 0.8, 1.0)


def _block_profile(cfg: CampaignConfig, meas: Measurement, constants: dict, input_var: float) -> dict | None:
    """At the deepest K: ``s_i / s_K`` of the first branch layer's pre-activation (mean over seeds)
    at ``i / K`` in :data:`PROFILE_POINTS`, measured and by the calibrated coherent law
    (:func:`amutheory.symbolic.resnet.coherent.read_profile`), with the local power ``d ln s_i / d ln i``
    between the points; ``measured_by_depth``: the measured shape at each of the deepest three K.
    The exponent depends only on how the profile scales with K; its shape in ``i / K`` is what the
    law's finite-K terms stand on.  A block whose law term vanishes (a negative ``e0``) gives a
    ``None`` local power."""
    from amutheory.symbolic.resnet.coherent import preactivations_per_block, read_profile

    if not constants or any(k not in constants for k in ("A", "B", "e0")):
        return None
    depth = max(cfg.depths)
    per = preactivations_per_block(cfg.spec.branch)
    measured = meas.profiles[depth].mean(axis=0)[per - 1::per]  # preact: (stream, W1 phi(x)) per block
    law = read_profile(cfg.spec.with_(depth=depth), depth, constants["A"]["value"], constants["B"]["value"],
                       constants["e0"]["value"], input_var)
    x = np.asarray(PROFILE_POINTS)

    def at_points(p):
        """``s_i / s_K`` at ``i = round(x K)`` for every point ``x``."""
        return p[[max(int(round(v * len(p))) - 1, 0) for v in PROFILE_POINTS]] / p[-1]

    def shape(p):
        f = at_points(p)
        with np.errstate(divide="ignore", invalid="ignore"):
            power = np.log(f[1:] / f[:-1]) / np.log(x[1:] / x[:-1])
        return [_f(v) for v in f], [_f(v) for v in power]

    (m, m_pow), (lw, l_pow) = shape(measured), shape(law)
    # the same measured shape at the deepest three K: a profile that depends on i/K alone is what
    # makes the exponent a matter of power counting
    by_depth = {str(d): [_f(v) for v in at_points(meas.profiles[d].mean(axis=0)[per - 1::per])]
                for d in cfg.depths[-3:]}
    return {"depth": depth, "x": list(PROFILE_POINTS), "measured": m, "law": lw,
            "measured_local_power": m_pow, "law_local_power": l_pow, "measured_by_depth": by_depth}


def _add_law_slopes(fits: dict, rows: list) -> None:
    """Add to every fit over a set of depths the slope of the *predicted* ln eta* on ln K over the
    same depths (``law_exponent``: the derived law with its calibrated finite-K terms, the quantity
    the measured slope estimates at these K) and whether it lies inside the measured CI
    (``law_inside_ci``); ``None`` where a depth has no prediction.  The asymptotic exponent is
    ``derived_inside_ci``'s business."""
    pred = {r["depth"]: r["eta_pred"] for r in rows}
    for fit in fits.values():
        if fit is None:
            continue
        etas = [pred.get(d) for d in fit["depths"]]
        if any(e is None or not e > 0 for e in etas):
            fit.update(law_exponent=None, law_inside_ci=None)
            continue
        slope = float(stats._ls_line(np.log(np.asarray(fit["depths"], float)), np.log(etas))[0])  # as the measured fit
        ci = fit["ci"]
        fit.update(law_exponent=_f(slope), law_inside_ci=None if None in ci else bool(ci[0] <= slope <= ci[1]))


def _compare_resnet(out: dict, cfg: CampaignConfig, spec: ArchSpec, meas: Measurement, protocol: ProbeProtocol,
                    derived: float, law: str = "coherent") -> None:
    """Calibrate, predict and compare a forward-stable resnet config (both statistics); ``law``
    picks the transformer law (:data:`amutheory.api.TRANSFORMER_LAWS`) for transformer configs and
    the residual law (:data:`amutheory.api.RESNET_LAWS`, or ``"exact"``: ``predict(constants="derive")``,
    the exact law, nothing fitted, so that every depth is held out) for resnet configs."""
    held, cal = cfg.held_out_depths, list(cfg.calibration_depths)
    cal_meas = Measurement(spec, cal, meas.seeds, {d: meas.profiles[d] for d in cal}, meas.C, meas.level)
    depth_sets = {"all": list(cfg.depths), "held_out": held, "deepest": list(cfg.depths[-3:])}
    dense = _dense_depths(cfg.depths)
    curve = {"depths": dense}
    passed_stats, rel_errs, joint_ok, joint_cal = {}, {}, {}, {}
    for stat in STATISTICS:
        try:
            # the registry's name of the law: "exact" is the exact law that covers the net (constants="derive")
            registered = (resolve_law(spec.family, "coherent", "derive", spec) if law == "exact" else
                          resolve_law(spec.family, law, "calibrate", spec))
            pred = predict(spec, sorted(set(cfg.depths) | set(dense)), law=registered, statistic=stat,
                           protocol=protocol, C=meas.C, calibration_measurement=cal_meas)
            eta_pred, s_pred = _record_prediction(out, cfg, pred, stat, curve, dense)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            out["errors"].append(f"{stat}: calibration/prediction failed: {exc}")
            pred, eta_pred, s_pred = None, {}, {}
            curve[f"eta_{stat}"] = None
        rows = _eta_rows(cfg, meas, stat, eta_pred, s_pred, set() if law == "exact" else set(cal))
        out["per_depth"][stat] = rows
        passed_stats[stat], rel_errs[stat], joint_ok[stat] = _held_out_checks(out, meas, stat, rows)
        joint_cal[stat] = _held_out_with_calibration(out, meas, stat, rows, pred)
        out["fitted_exponents"][stat] = _exponent_fits(meas, stat, depth_sets, derived)
        _add_law_slopes(out["fitted_exponents"][stat], rows)
    if not held:
        out["notes"].append("no held-out depths: nothing independent to check, passed is false")
    out["prediction_curve"] = curve
    _record_verdict(out, passed_stats, rel_errs, joint_ok)
    if cfg.is_resnet and law == "coherent":  # the residual theory's block profile (not a Transformer's)
        out["block_profile"] = _block_profile(cfg, meas, out["constants"].get("mean"), protocol.input_var)
    # the same joint test with the calibrated constants' own sampling error added to each prediction:
    # does the law miss by more than the measurement *and* its calibration can account for?
    out["passed_joint_with_calibration"] = (None if None in joint_cal.values()
                                            else bool(all(joint_cal.values())))
    claims = {}
    for stat in STATISTICS:
        deep = out["fitted_exponents"][stat]["deepest"]
        claims[stat] = bool(deep and None not in deep["ci"] and deep["ci"][0] <= PAPER_EXPONENT <= deep["ci"][1])
    out["claim_minus_three_halves"] = claims["mean"]
    out["claim_minus_three_halves_by_statistic"] = claims


# --------------------------------------------------------------------------- the campaign's entry points
# (the residual family names this module as its ``campaign_module``; amutheory.campaign.run calls them)
def analyse_campaign_config(cfg: CampaignConfig, meas: Measurement, protocol: ProbeProtocol,
                            stream: dict | None = None, reference=None) -> dict:
    """A residual config's result (:func:`analyse_resnet_config`, with the measured forward stream)."""
    return analyse_resnet_config(cfg, meas, protocol, stream)


def campaign_message(cfg: CampaignConfig, res: dict) -> str:
    from amutheory.campaign.report_resnet import _resnet_message

    return _resnet_message(res)
