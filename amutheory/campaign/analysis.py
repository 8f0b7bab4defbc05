"""Analysis of a circular-padding or zero-padding config: calibrate, predict, compare.

For every config, from its measured ``s_l`` (:mod:`amutheory.campaign.results`):

1. **Calibrate** (:func:`amutheory.calibrate.calibrate`, lognormal model) on the calibration
   depths only: ``a, b, e`` of the typical value (geometric mean over seeds) and the seed spread
   ``sigma^2(L) = sigma2_0 + kappa L`` that turns it into the arithmetic mean.
2. **Predict** ``eta*(L) = sqrt(C / s_bar(L))`` at every depth from the derived law with those
   constants (:func:`amutheory.api.predict`, i.e. :func:`amutheory.api.law_values`).
3. **Compare** with the measured ``eta*`` and its 95% seed-bootstrap interval at every depth;
   only depths *not* used for calibration (held-out) count for ``passed`` and
   ``max_rel_error``.

The per-depth rows, held-out checks, exponent fits and verdict helpers here serve the residual
analysis too (:mod:`amutheory.campaign.analysis_resnet`); the zero-padding tables are in
:mod:`amutheory.campaign.analysis_zero`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from amutheory import stats
from amutheory.api import Measurement, predict
from amutheory.laws import REGISTRY, best_law, resolve_law
from amutheory.campaign.analysis_zero import _add_zero_padding_tables
from amutheory.campaign.common import C_TARGET, STATISTICS, _f
from amutheory.campaign.presets import CampaignConfig
from amutheory.families import result_family
from amutheory.spec import ArchSpec, ProbeProtocol
from amutheory.symbolic.chain.conv import derived_constants
from amutheory.symbolic.chain.spectral import spectral_applies


def _eta(s):
    return math.sqrt(C_TARGET / s) if s > 0 else float("nan")


def _ls_slope(depths, values) -> float:
    lx, ly = np.log(np.asarray(depths, float)), np.log(np.asarray(values, float))
    dx = lx - lx.mean()
    return float((ly - ly.mean()) @ dx / (dx @ dx))


def _dense_depths(depths, count: int = 40) -> list[int]:
    """About ``count`` log-spaced integer depths spanning ``depths`` (the predicted curve)."""
    return np.unique(np.round(np.geomspace(min(depths), max(depths), count)).astype(int)).tolist()


#: points of the predicted curve of a zero-padding config: each depth of the exact boundary law
#: costs a backward pass of the kernel law per input draw, so the curve is coarser there
ZERO_CURVE_POINTS = 12


def _record_prediction(out: dict, cfg: CampaignConfig, pred, stat: str, curve: dict, dense: list):
    """Put a :class:`~amutheory.api.Prediction` (made at ``cfg.depths`` and ``dense``) into the
    result ``out``: curve, calibration, constants, the law's own slopes; returns the predicted
    ``(eta*, s_bar)`` at ``cfg.depths`` as dicts."""
    eta_all = dict(zip(pred.depths, pred.eta_star))
    curve[f"eta_{stat}"] = [_f(eta_all[d]) for d in dense]
    eta_pred = {d: eta_all[d] for d in cfg.depths}
    s_pred = {d: v for d, v in zip(pred.depths, pred.s_bar) if d in cfg.depths}
    out["calibration"][stat] = pred.calibration.to_dict() if pred.calibration is not None else None
    out["constants"][stat] = {k: c.to_dict() for k, c in pred.constants.items()}
    held = cfg.held_out_depths
    out["predicted_effective_exponent_" + stat] = _f(_ls_slope(cfg.depths, [eta_pred[d] for d in cfg.depths]))
    out["predicted_effective_exponent_held_out_" + stat] = (
        _f(_ls_slope(held, [eta_pred[d] for d in held])) if len(held) >= 2 else None)
    return eta_pred, s_pred


def _derived_default(spec, theory) -> bool:
    """Whether the mean is predicted with nothing fitted: a linear circular chain (the spectral law),
    or a net whose default law (``predict``'s choice) is not calibrated (the finite-width laws of MLPs)."""
    if spectral_applies(theory):
        return True
    try:
        return best_law(spec, [spec.depth]).law.exactness != "calibrated"
    except ValueError:
        return False


def _derived_law(spec) -> str | None:
    """The registry name of the law a derived config predicts its mean with: ``predict``'s default where
    that is derived (exact, Monte Carlo or approximate: nothing fitted), else the first derived law that
    covers the net (``resolve_law``'s ``derive``); ``None`` where none does."""
    try:
        law = best_law(spec, [spec.depth]).law
        if law.exactness != "calibrated":
            return law.name
    except ValueError:
        pass
    try:
        return resolve_law(spec.family, "coherent", "derive", spec)
    except ValueError:  # no derived law covers the net (a GELU chain): its configs calibrate
        return None


def _derived_law_words(spec) -> str:
    """How a report names the derived law of a config: the spectral law, the finite-width law where
    one covers the net (exact at its width), or the law's name and exactness."""
    name = _derived_law(spec) or ""
    if name in ("chain-finite-width", "mlp-finite-width"):
        return "finite-width law, exact at the net's width"
    if name in ("chain-spectral", "mlp-spectral"):
        return "spectral law"
    return f"{name} ({REGISTRY[name].exactness}, nothing fitted)" if name in REGISTRY else "derived law"


def _mlp_limit_row(constants: dict, v) -> dict:
    """``b/a`` of the prediction's constants (calibrated, or derived by the spectral law) against
    the derived MLP-limit ``v``."""
    a_, b_ = constants["a"], constants["b"]
    ratio = b_.value / a_.value
    rel = math.sqrt((a_.error / a_.value) ** 2 + (b_.error / b_.value) ** 2) if a_.value and b_.value else float("nan")
    return {"b_over_a": _f(ratio), "b_over_a_error": _f(abs(ratio) * rel),
            "v_mlp": _f(v.value), "v_mlp_source": v.source,
            "ratio_to_mlp_limit": _f(ratio / v.value) if v.value else None}


def _eta_rows(cfg: CampaignConfig, meas: Measurement, stat: str, eta_pred: dict, s_pred: dict,
              cal_set: set) -> list:
    """Per depth: measured ``eta*`` of statistic ``stat`` with its seed-bootstrap CI, the
    prediction (``None`` where there is none) and whether it lies inside the CI."""
    ci_fn = {"mean": stats.arith_mean_ci, "geo": stats.geo_mean_ci}[stat]
    rows = []
    for d in cfg.depths:
        m, lo, hi = ci_fn(meas.s_bar(d), level=meas.level)
        e_m, e_lo, e_hi = _eta(m), _eta(hi), _eta(lo)
        p = eta_pred.get(d)
        ok = p is not None and math.isfinite(p)
        rows.append({
            "depth": d,
            "calibration": d in cal_set,
            "s_pred": _f(s_pred.get(d)),
            "s_meas": _f(m), "s_meas_ci": [_f(lo), _f(hi)],
            "eta_pred": _f(p) if ok else None,
            "eta_meas": _f(e_m), "eta_meas_ci": [_f(e_lo), _f(e_hi)],
            "rel_error": _f(p / e_m - 1.0) if ok else None,
            "inside_ci": bool(ok and e_lo <= p <= e_hi),
        })
    return rows


def _held_out_checks(out: dict, meas: Measurement, stat: str, rows: list) -> tuple:
    """``(passed, max |rel. error|, joint test passed)`` of statistic ``stat`` over the held-out
    rows; adds the outside-CI depth lists and ``held_out_test[stat]`` to ``out``."""
    held_rows = [r for r in rows if not r["calibration"]]
    passed = bool(held_rows) and all(r["inside_ci"] for r in held_rows)
    errs = [abs(r["rel_error"]) for r in held_rows if r["rel_error"] is not None]
    rel_err = max(errs) if errs and len(errs) == len(held_rows) else None
    out["outside_ci_depths_" + stat] = [r["depth"] for r in held_rows if not r["inside_ci"]]
    joint = False
    if held_rows and all(r["s_pred"] for r in held_rows):
        # eta* = sqrt(C / s_bar) is monotone in s_bar: a check on s_bar is the same check on eta*
        test = stats.held_out_test([r["s_pred"] for r in held_rows],
                                   [meas.s_bar(r["depth"]) for r in held_rows], stat, level=meas.level)
        out["held_out_test"][stat] = test.to_dict()
        joint = bool(test.p_value >= 1.0 - meas.level and all(test.bonferroni_inside))
    out["outside_ci_calibration_depths_" + stat] = [r["depth"] for r in rows
                                                    if r["calibration"] and not r["inside_ci"]]
    return passed, rel_err, joint


def _held_out_with_calibration(out: dict, meas: Measurement, stat: str, rows: list, pred) -> bool | None:
    """The joint held-out test of :func:`_held_out_checks` with the prediction's own sampling error
    put in (``pred.s_bar_log_sd``, from the calibration's bootstrap refits): stored as
    ``held_out_test_with_calibration[stat]``, each held-out row gains ``s_pred_log_sd``; returns
    whether it passes (``None`` where the prediction carries no error)."""
    held_rows = [r for r in rows if not r["calibration"]]
    sd = dict(zip(pred.depths, pred.s_bar_log_sd)) if pred is not None and pred.s_bar_log_sd is not None else {}
    out.setdefault("held_out_test_with_calibration", {})[stat] = None
    if not held_rows or not all(r["s_pred"] for r in held_rows) or not all(r["depth"] in sd for r in held_rows):
        return None
    for r in held_rows:
        r["s_pred_log_sd"] = _f(sd[r["depth"]])
    test = stats.held_out_test([r["s_pred"] for r in held_rows], [meas.s_bar(r["depth"]) for r in held_rows], stat,
                               level=meas.level, prediction_log_sd=[sd[r["depth"]] for r in held_rows])
    out["held_out_test_with_calibration"][stat] = test.to_dict()
    return bool(test.p_value >= 1.0 - meas.level and all(test.bonferroni_inside))


def _exponent_fits(meas: Measurement, stat: str, depth_sets: dict, derived: float | None) -> dict:
    """``{key: fit}`` of the slope of ln eta* on ln L over each set of depths (``None`` for
    fewer than two), with whether ``derived`` lies inside the 95% seed-bootstrap CI."""
    fits = {}
    for key, ds in depth_sets.items():
        if len(ds) >= 2:
            e, ci = meas.fitted_exponent(stat, ds)
            fits[key] = {"depths": list(ds), "exponent": _f(e), "ci": [_f(ci[0]), _f(ci[1])],
                         "derived_inside_ci": None if derived is None else bool(ci[0] <= derived <= ci[1])}
        else:
            fits[key] = None
    return fits


def _record_verdict(out: dict, passed_stats: dict, rel_errs: dict, joint_ok: dict) -> None:
    """The pass/fail keys of a config result (both statistics must pass) and its headline fit."""
    out["passed_mean"] = passed_stats["mean"]
    out["passed_geo"] = passed_stats["geo"]
    out["passed"] = bool(passed_stats["mean"] and passed_stats["geo"])
    # joint check: chi-square p >= 0.05 and every held-out depth inside its Bonferroni interval
    out["passed_joint"] = bool(joint_ok["mean"] and joint_ok["geo"])
    out["max_rel_error"] = _f(rel_errs["mean"])
    out["max_rel_error_geo"] = _f(rel_errs["geo"])
    all_fit = out["fitted_exponents"]["mean"]["all"]
    out["fitted_exponent"] = all_fit["exponent"] if all_fit else None
    out["fitted_exponent_ci"] = all_fit["ci"] if all_fit else None
    # what fitted_exponent is fitted over (the progress and summary lines name it)
    out["fitted_exponent_over"] = "all K" if result_family(out).counts_blocks else "all depths"


def analyse_config(cfg: CampaignConfig, meas: Measurement, protocol: ProbeProtocol = ProbeProtocol(),
                   reference: Measurement | None = None) -> dict:
    """Calibrate on ``cfg.calibration_depths`` (mean and geo), predict every depth and compare.

    Zero configs: ``meas`` holds the zero-padded nets and ``reference`` the circular ones (at
    ``cfg.calibration_depths``), which calibrate the constants; the zero/circular ratio and the
    boundary regime are added (:func:`_add_zero_padding_tables`)."""
    spec = cfg.spec.with_(depth=max(cfg.depths))
    theory = spec.family_object.chain_spec(spec)  # the conv chain this net is (itself, or an MLP's)
    law = spec.family_object.derive(spec)
    derived = derived_constants(theory, protocol.input_var)
    held = cfg.held_out_depths
    out = _config_result(cfg, spec, law, derived, held)
    cal_meas, cal_set = _calibration_measurement(out, cfg, spec, meas, reference)
    # a linear circular chain has a derived law (amutheory.symbolic.chain.spectral): nothing is fitted for
    # the mean, and only the seed-spread line of the typical value uses the calibration depths
    how = "derive" if not cfg.is_zero and _derived_default(spec, theory) else "calibrate"
    out["constants_from"] = {"derive": f"{_derived_law_words(spec)} (derived; sigma^2 line of geo calibrated)",
                             "calibrate": "calibrated (lognormal model)"}[how]
    plan = _Plan(cfg, spec, meas, protocol, how, cal_meas, derived)
    used_constants = {}
    passed_stats, rel_errs, joint_ok = {}, {}, {}
    out["held_out_test"] = {}
    dense = _dense_depths(cfg.depths, ZERO_CURVE_POINTS if cfg.is_zero else 40)
    curve = {"depths": dense}
    for stat in STATISTICS:
        eta_pred, s_pred = _predict_statistic(out, plan, stat, curve, dense, used_constants)
        rows = _eta_rows(cfg, meas, stat, eta_pred, s_pred, cal_set)
        out["per_depth"][stat] = rows
        passed_stats[stat], rel_errs[stat], joint_ok[stat] = _held_out_checks(out, meas, stat, rows)
        out["fitted_exponents"][stat] = _exponent_fits(meas, stat, {"all": list(cfg.depths), "held_out": held},
                                                       float(law.exponent))
    _add_closing_notes(out, how, held)
    out["prediction_curve"] = curve
    _record_verdict(out, passed_stats, rel_errs, joint_ok)
    if cfg.is_zero:
        _add_zero_padding_tables(out, cfg, spec, meas, reference, used_constants, dense)
    return out


def _config_result(cfg: CampaignConfig, spec, law, derived: dict, held: list) -> dict:
    """A config result's identifying keys (spec, depths, law, derived constants) and its empty tables."""
    return {
        "name": cfg.name,
        "padding": spec.padding,
        "spec": spec.to_dict(),
        "depths": list(cfg.depths),
        "calibration_depths": list(cfg.calibration_depths),
        "held_out_depths": held,
        "seeds": len(cfg.seed_list),
        "law": law.name,
        "derived_exponent": str(law.exponent),
        "derived_exponent_value": float(law.exponent),
        "derived_constants": {k: c.to_dict() for k, c in derived.items()},
        "assumptions": list(law.assumptions),
        "per_depth": {},
        "calibration": {},
        "constants": {},
        "mlp_limit_comparison": {},
        "fitted_exponents": {},
        "errors": [],
        "notes": [],
    }


def _calibration_measurement(out: dict, cfg: CampaignConfig, spec, meas: Measurement,
                             reference: Measurement | None) -> tuple:
    """``(measurement to calibrate on, set of calibration depths)``: the circular ``reference`` for a
    zero config (every depth held out; noted in ``out``), else ``meas`` at the calibration depths."""
    if cfg.is_zero:
        if reference is None:
            raise ValueError(f"[{cfg.name}] a zero-padding config needs the circular reference measurement")
        out["notes"].append(f"zero padding: constants calibrated on circular-padding nets of the same geometry at "
                            f"depths {list(cfg.calibration_depths)}; every zero-padded depth is held out")
        return reference, set()
    return Measurement(spec, list(cfg.calibration_depths), meas.seeds,
                       {d: meas.profiles[d] for d in cfg.calibration_depths},
                       meas.C, meas.level), set(cfg.calibration_depths)


class _Plan(NamedTuple):
    """What :func:`analyse_config` predicts with: the config, its spec, measurement and calibration."""

    cfg: CampaignConfig
    spec: ArchSpec
    meas: Measurement
    protocol: ProbeProtocol
    how: str  # "derive" (spectral law) or "calibrate"
    cal_meas: Measurement
    derived: dict  # the derived constants (v_mlp: the MLP limit)


def _predict_statistic(out: dict, plan: _Plan, stat: str, curve: dict, dense: list, used_constants: dict) -> tuple:
    """Predict statistic ``stat`` at the measured depths and ``dense``, recorded into ``out`` and
    ``curve``; returns ``(eta_pred, s_pred)``, both ``{}`` where calibration or prediction fails."""
    try:
        # one call for the measured depths and the dense curve (law_values is not cheap)
        law = (_derived_law(plan.spec) if plan.how == "derive" else
               resolve_law(plan.spec.family, "coherent", plan.how, plan.spec))  # the registry's name
        pred = predict(plan.spec, sorted(set(plan.cfg.depths) | set(dense)), law=law, statistic=stat,
                       protocol=plan.protocol, C=plan.meas.C, calibration_measurement=plan.cal_meas)
        eta_pred, s_pred = _record_prediction(out, plan.cfg, pred, stat, curve, dense)
        used_constants[stat] = pred.constants
        out["law"] = pred.law if plan.how == "derive" else out["law"]
        if {"a", "b"} <= set(pred.constants):
            out["mlp_limit_comparison"][stat] = _mlp_limit_row(pred.constants, plan.derived["v_mlp"])
    except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
        out["errors"].append(f"{stat}: calibration/prediction failed: {exc}")
        eta_pred, s_pred = {}, {}
        curve[f"eta_{stat}"] = None
    return eta_pred, s_pred


def _add_closing_notes(out: dict, how: str, held: list) -> None:
    """The notes on a spectral-law mean (every depth a check) and on a config without held-out depths."""
    if how == "derive":
        rows = out["per_depth"]["mean"]
        out["inside_ci_every_depth_mean"] = bool(rows and all(r["inside_ci"] for r in rows))
        out["notes"].append(f"mean: {out['law']}, nothing fitted, so every depth (calibration depths included) is an "
                            "independent check: inside the CI at "
                            f"{sum(r['inside_ci'] for r in rows)} of {len(rows)} depths")
    if not held:
        out["notes"].append("no held-out depths: nothing independent to check, passed is false")


# --------------------------------------------------------------------------- the campaign's entry points
# (the chain families name this module as their ``campaign_module``; amutheory.campaign.run calls them)
def analyse_campaign_config(cfg: CampaignConfig, meas: Measurement, protocol: ProbeProtocol,
                            stream: dict | None = None, reference=None) -> dict:
    """A chain config's result; ``reference()`` loads the circular references of a zero-padded config."""
    return analyse_config(cfg, meas, protocol, reference=reference() if cfg.is_zero and reference else None)


def campaign_message(cfg: CampaignConfig, res: dict) -> str:
    """The progress line of one analysed chain config: its verdict and headline numbers."""
    from amutheory.campaign.formatting import _ci, _g, _pct

    return (f"[{cfg.name}] {'passed' if res['passed'] else 'FAILED'}: max rel. error (held-out, mean) "
            f"{_pct(res['max_rel_error'])}, fitted exponent (all depths) {_g(res['fitted_exponent'])} "
            f"{_ci(res['fitted_exponent_ci'])} vs derived {res['derived_exponent']}"
            + (f"; zero/circular ratio {'passed' if res['passed_ratio'] else 'FAILED'}" if cfg.is_zero else ""))
