"""Zero-padding tables of a config result: the zero/circular ratio and the boundary regime.

Zero-padding configs (``spec.padding == "zero"``) are pairs of the same geometry: circular-padding
reference nets at ``calibration_depths`` (all of them calibrate ``a, b, e`` and the seed spread)
and zero-padded nets at ``depths`` (all held out: the law times the exact boundary ratio,
:func:`amutheory.api.zero_padding_factor`, is predicted for them).  Besides the eta* comparison
their summary holds the zero/circular ratio of ``s_bar`` (measured with a bootstrap CI vs
predicted) and the boundary regime per depth (:func:`amutheory.symbolic.chain.boundary.regime`).
"""

from __future__ import annotations

import math

import numpy as np

from amutheory import stats
from amutheory.api import Measurement
from amutheory.campaign.bootstrap import _quantile_ci, ratio_bootstrap
from amutheory.campaign.common import STATISTICS, _f
from amutheory.campaign.presets import CampaignConfig
from amutheory.spec import ArchSpec


def _ratio_rows(spec: ArchSpec, depths: list, z: np.ndarray, c: np.ndarray, constants: dict | None,
                statistic: str, level: float) -> tuple[list, np.ndarray]:
    """Rows of measured vs predicted zero/circular ratio of ``s_bar`` and the paired replicates."""
    from amutheory.api import zero_padding_factor

    ratio, reps = ratio_bootstrap(z, c, statistic)
    lo, hi = _quantile_ci(reps, level)
    ulo, uhi = _quantile_ci(ratio_bootstrap(z, c, statistic, paired=False)[1], level)
    pred = zero_padding_factor(spec, depths, constants)[0] if constants else [None] * len(depths)
    rows = []
    for i, d in enumerate(depths):
        p = _f(pred[i])
        rows.append({
            "depth": d,
            "ratio_pred": p,
            "ratio_meas": _f(ratio[i]), "ratio_meas_ci": [_f(lo[i]), _f(hi[i])],
            "ratio_meas_ci_unpaired": [_f(ulo[i]), _f(uhi[i])],
            "eta_ratio_pred": _f(p ** -0.5) if p else None,
            "eta_ratio_meas": _f(ratio[i] ** -0.5),
            "rel_error": _f(p / ratio[i] - 1.0) if p else None,
            "inside_ci": bool(p is not None and lo[i] <= p <= hi[i]),
            "inside_ci_unpaired": bool(p is not None and ulo[i] <= p <= uhi[i]),
            "seed_correlation_log": _f(np.corrcoef(np.log(z[:, i]), np.log(c[:, i]))[0, 1]),
        })
    return rows, reps


def _measured_slope_shifts(depths: list, ratio_rows: list, reps: np.ndarray, level: float) -> dict:
    """``{depth: row keys}``: the measured slope shift of eta*, ``-(1/2) d ln ratio / d ln L``
    (local slope of the measured mean ratio over the measured depths, paired-bootstrap CI), and
    the model's on the same depth grid (the model's own ``slope_shift`` is a unit-step derivative)."""
    from amutheory.symbolic.chain.boundary import SLOPE_TOLERANCE

    if len(depths) < 2:
        return {}
    meas = -0.5 * stats.local_slopes(depths, [r["ratio_meas"] for r in ratio_rows])
    lo, hi = _quantile_ci(-0.5 * stats.local_slopes(depths, reps), level)
    pred = [r["ratio_pred"] for r in ratio_rows]
    model = -0.5 * stats.local_slopes(depths, pred) if all(pred) else [None] * len(depths)
    tol = SLOPE_TOLERANCE
    # decided: the CI lies inside [-tol, tol] (holds) or wholly outside it (fails)
    decided = (np.abs(lo) <= tol) & (np.abs(hi) <= tol) | (lo > tol) | (hi < -tol)
    return {d: {"slope_shift_meas": _f(meas[i]), "slope_shift_meas_ci": [_f(lo[i]), _f(hi[i])],
                "constant_level_meas": bool(abs(meas[i]) <= tol), "constant_level_meas_decided": bool(decided[i]),
                "slope_shift_model_grid": _f(model[i])} for i, d in enumerate(depths)}


def _regime_rows(cfg: CampaignConfig, constants: dict | None, measured: dict) -> list:
    """Per zero depth: the boundary regime of the model (:func:`amutheory.symbolic.chain.boundary.regime`
    with the calibrated ``a, b, e, epsilon``) and the measured slope shift where there is one."""
    from amutheory.symbolic.chain.boundary import exact_regime, regime
    from amutheory.symbolic.chain.kernel_law import boundary_law_method

    sp_ = cfg.spec
    vals = tuple(constants[k].value for k in ("a", "b", "e", "epsilon")) if constants else None
    exact = {r["depth"]: r for r in exact_regime(sp_, list(cfg.depths))} if boundary_law_method(sp_) else {}
    keys = ("regime_exponent", "top_eigenvalue", "s_bar_ratio", "eta_ratio", "slope_shift", "constant_level")
    rows = []
    for d in cfg.depths:
        row = {"depth": d, "regime_parameter": d * sp_.kernel**2 / sp_.spatial**2,
               "sqrt_regime_parameter": math.sqrt(d) * sp_.kernel / sp_.spatial}
        if d in exact:
            row.update({k: exact[d][k] for k in keys + ("s_bar_ratio_se", "s_bar_ratio_local_model", "method")})
        elif vals is not None:
            reg = regime(d, sp_.kernel, sp_.spatial, sp_.dim, constants=vals)
            row.update({k: reg[k] for k in keys})
            row["method"] = "local-model"
        row.update(measured.get(d, {}))
        rows.append(row)
    return rows


def _add_zero_padding_tables(out: dict, cfg: CampaignConfig, spec: ArchSpec, meas: Measurement,
                             reference: Measurement, constants: dict, dense: list) -> None:
    """Add a zero config's own keys to its result ``out``: ``ratio`` (per statistic, at the depths
    measured with both paddings), ``regime``, ``ratio_curve`` (the model's mean ratio on ``dense``
    depths) and ``passed_ratio`` (every ratio inside its CI, both statistics)."""
    from amutheory.api import zero_padding_factor

    depths = [d for d in cfg.depths if d in reference.profiles]
    out["ratio_depths"], out["ratio"] = depths, {}
    if not depths:
        out["notes"].append("no depth measured with both paddings: no zero/circular ratio")
    z = np.stack([meas.s_bar(d) for d in depths], axis=1) if depths else None
    c = np.stack([reference.s_bar(d) for d in depths], axis=1) if depths else None
    measured = {}
    for stat in STATISTICS:
        rows, reps = _ratio_rows(spec, depths, z, c, constants.get(stat), stat, meas.level) if depths else ([], None)
        out["ratio"][stat] = rows
        out[f"passed_ratio_{stat}"] = bool(rows) and all(r["inside_ci"] for r in rows)
        errs = [abs(r["rel_error"]) for r in rows if r["rel_error"] is not None]
        out[f"max_rel_error_ratio_{stat}"] = _f(max(errs)) if errs and len(errs) == len(rows) else None
        if stat == "mean" and rows:
            measured = _measured_slope_shifts(depths, rows, reps, meas.level)
    out["passed_ratio"] = bool(out["passed_ratio_mean"] and out["passed_ratio_geo"])
    out["regime"] = _regime_rows(cfg, constants.get("mean"), measured)
    mean_consts = constants.get("mean")
    curve = zero_padding_factor(spec, dense, mean_consts)[0] if mean_consts else None
    out["ratio_curve"] = {"depths": dense, "ratio_mean": None if curve is None else [_f(v) for v in curve]}
