"""Zero-shot transfer across depth: every rule's predicted eta* at held-out depths from the optima
at shallow calibration depths, its error against a fresh sweep, and the bridge ratio.

A rule is a depth curve ``f(L)`` (:func:`rule_curves`): the rules of :mod:`amutheory.transfer`
(its ``am-mup`` law with finite-depth corrections, the pure ``power`` law, ``chen``'s path sum,
``depth-mup``, ``completep``, ``per-layer-mup``), ``keep`` (the same rate at every depth, standard
practice), and the one-step route ``onestep-mean`` / ``onestep-typical`` (the probe's eta*(L) from
the seed mean or the geometric mean of ``s_bar``).  Calibration is the papers' own:
``k = mean over calibration depths of eta*_train(L_c) / f(L_c)``, prediction ``k f(L)``.  For the
one-step route ``k`` is the ratio eta*_train / eta*_onestep calibrated on the shallow depths.

Errors are ``prediction / eta*_train - 1`` with the CI of the ratio over the bootstrap draws
(training seeds, and the probe's seeds for the one-step route) -- or, for the registrations with the
jackknife (2026-11-27b on), the delete-one-seed jackknife on the log ratio: the training seeds' leave-one-out
replicates and, for the one-step route, the probe seeds' (independent seeds: their variances add,
:func:`amutheory.bootstrap.combined_jackknife_interval`) -- and the *regret*: the seed-mean
training loss at the predicted rate (interpolated in ``ln lr`` on the sweep) over the sweep's
best, minus 1 (``None`` where the prediction falls outside the grid).
"""

from __future__ import annotations

import math

import numpy as np

from amutheory.bootstrap import combined_jackknife_interval, leave_one_out, resample, seed_draws
from amutheory.protocol.verdicts import LEVEL, ci, rule_verdict, transfer_status
from amutheory.train.search import loss_at as _loss_at
from amutheory.transfer import RULES, transfer_lr

ONESTEP_RULES = ("onestep-mean", "onestep-typical")
ALL_RULES = RULES + ("keep",) + ONESTEP_RULES


def rule_curves(spec_at, depths) -> dict:
    """``{rule: f(L) at depths, relative to depths[0]}`` for the graph rules and ``keep``;
    ``spec_at(L)`` is the spec at depth ``L`` (the rules read its traced graph)."""
    ref = spec_at(depths[0])
    factors = [transfer_lr(1.0, ref, spec_at(L)).depth_factors for L in depths]
    out = {r: np.array([f[r] for f in factors], float) for r in RULES}
    out["keep"] = np.ones(len(depths))
    return out


def onestep_draws(s_bar: np.ndarray, draws: int, seed: int) -> dict:
    """eta*_onestep (up to the constant ``sqrt C``, which calibration removes) from the probe's
    per-seed ``s_bar`` (``seeds x depths``): point values and seed-bootstrap draws, for the mean
    and the geometric mean."""
    s = np.asarray(s_bar, float)
    boot = resample(seed_draws(s.shape[0], draws, seed), s)  # draws x seeds x depths
    return {"onestep-mean": (s.mean(0) ** -0.5, boot.mean(1) ** -0.5),
            "onestep-typical": (np.exp(-0.5 * np.log(s).mean(0)), np.exp(-0.5 * np.log(boot).mean(1)))}


def onestep_jackknife(s_bar: np.ndarray) -> dict:
    """The probe's leave-one-probe-seed-out replicates (``seeds x depths``) of the two one-step curves."""
    s = np.asarray(s_bar, float)
    return {"onestep-mean": leave_one_out(s) ** -0.5, "onestep-typical": np.exp(-0.5 * leave_one_out(np.log(s)))}


def log_ratio_interval(ratio: float, replicate_sets) -> list | None:
    """The jackknife CI of a positive ratio, made on its log (independent replicate sets combined)."""
    if not (np.isfinite(ratio) and ratio > 0):
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        c = combined_jackknife_interval(math.log(ratio), [np.log(r) for r in replicate_sets], LEVEL)
    return None if c is None else [math.exp(c[0]), math.exp(c[1])]


def regret(search, lr: float) -> float | None:
    """Loss at ``lr`` over the grid's best seed-mean loss, minus 1."""
    best = np.nanmin(np.where(np.isfinite(search.loss_mean), search.loss_mean, np.nan))
    at = _loss_at(search, lr)
    if at is None or not np.isfinite(best):
        return None
    return float(at / best - 1) if math.isfinite(at) else math.inf


def predict(curve, curve_draws, eta_cal, eta_cal_draws, cal_idx, tgt_idx):
    """Point prediction and draws at ``tgt_idx`` from the optima at ``cal_idx`` (papers' mean ``k``)."""
    k = np.mean(eta_cal / curve[cal_idx])
    kd = np.mean(eta_cal_draws / curve_draws[:, cal_idx], axis=1)
    return k * curve[tgt_idx], kd[:, None] * curve_draws[:, tgt_idx]


def zero_shot_table(searches: dict, curves: dict, curve_draws: dict, calibration, targets, tolerance: float,
                    method: str = "bootstrap", probe_jack: dict | None = None, margin_rule: bool = False) -> dict:
    """Per rule: the prediction, error (with CI), regret and status at each target depth, and the
    rule's verdict.  ``searches[L]``: the :class:`~amutheory.train.search.LrSearch` at depth ``L``;
    ``curves[rule]``: ``f`` at ``depths = sorted(searches)``; ``curve_draws[rule]``: its draws
    (``B x depths``; deterministic rules repeat ``f``).  ``method="jackknife"``: the CIs from the
    searches' leave-one-seed-out replicates and, for a rule in ``probe_jack`` (``{rule: probe seeds x
    depths}``), the probe's own; ``margin_rule``: :func:`~amutheory.protocol.verdicts.transfer_status`'s."""
    depths = sorted(searches)
    cal_idx = [depths.index(d) for d in calibration]
    tgt_idx = [depths.index(d) for d in targets]
    eta = np.array([searches[d].eta_star_train for d in depths])
    jack = method == "jackknife"
    n = len(searches[depths[0]].seeds)
    boot = np.stack([(searches[d].jack if searches[d].jack is not None else np.full(n, np.nan)) if jack
                     else searches[d].boot for d in depths], axis=1)
    out = {}
    for rule, curve in curves.items():
        if jack:
            point, draws = predict(curve, np.broadcast_to(curve, boot.shape), eta[cal_idx], boot[:, cal_idx], cal_idx,
                                   tgt_idx)
            probe = None
            if probe_jack and rule in probe_jack:
                pj = probe_jack[rule]
                probe = predict(curve, pj, eta[cal_idx], np.broadcast_to(eta[cal_idx], (len(pj), len(cal_idx))),
                                cal_idx, tgt_idx)[1]
        else:
            point, draws = predict(curve, curve_draws[rule], eta[cal_idx], boot[:, cal_idx], cal_idx, tgt_idx)
        rows, statuses = [], []
        for j, L in enumerate(targets):
            true = eta[tgt_idx[j]]
            ratio = point[j] / true if true > 0 else math.nan
            if jack:
                sets = [draws[:, j] / boot[:, tgt_idx[j]]] + ([] if probe is None else [probe[:, j] / true])
                rci = log_ratio_interval(ratio, sets)
            else:
                rci = ci(draws[:, j] / boot[:, tgt_idx[j]])
            status = transfer_status(ratio, rci, tolerance, margin_rule)
            statuses.append(status)
            rows.append({"depth": L, "predicted": float(point[j]), "eta_star_train": float(true),
                         "relative_error": float(ratio - 1),
                         "relative_error_ci": None if rci is None else [rci[0] - 1, rci[1] - 1], "interval": method,
                         "regret": regret(searches[L], float(point[j])), "status": status})
        errs = np.array([abs(math.log(r["relative_error"] + 1)) for r in rows if r["relative_error"] > -1])
        out[rule] = {"rows": rows, **rule_verdict(list(targets), statuses),
                     "median_abs_log_error": float(np.median(errs)) if errs.size else None,
                     "worst_relative_error": max((r["relative_error"] for r in rows), key=abs, default=None)}
    return out


def _slope(depths, ratios: np.ndarray) -> np.ndarray:
    """Least-squares slope of ``ln ratio`` on ``ln L`` for every row of ``ratios`` (``nan`` rows stay ``nan``)."""
    lx = np.log(np.asarray(depths, float))
    with np.errstate(invalid="ignore", divide="ignore"):
        ly = np.log(np.atleast_2d(ratios))
    out = np.full(len(ly), np.nan)
    good = np.isfinite(ly).all(1)
    if good.any():
        out[good] = np.polyfit(lx, ly[good].T, 1)[0]
    return out


def bridge(searches_by_horizon: dict, onestep: tuple, depths, method: str = "bootstrap",
           probe_jack: np.ndarray | None = None, margin: float | None = None) -> dict:
    """eta*_train / eta*_onestep at each depth and horizon (with CI), and per horizon the slope of
    its log on ``ln L`` with CI: the ratio is constant in depth where that CI holds 0 (with ``margin``:
    where it lies inside ``0 +- margin``, the margin rule).  ``method="jackknife"``: the CIs from the
    searches' leave-one-seed-out replicates and the probe's (``probe_jack``, probe seeds x depths), combined."""
    from amutheory.protocol.verdicts import loglog_fit, margin_status

    point, draws = onestep
    out = {}
    for T, searches in sorted(searches_by_horizon.items()):
        eta = np.array([searches[d].eta_star_train for d in depths])
        ratio = eta / point
        if method == "jackknife":
            n = len(searches[depths[0]].seeds)
            jack = np.stack([searches[d].jack if searches[d].jack is not None else np.full(n, np.nan)
                             for d in depths], axis=1)
            sets = [jack / point] + ([] if probe_jack is None else [eta / probe_jack])
            ratio_ci = [log_ratio_interval(ratio[i], [r[:, i] for r in sets]) for i in range(len(depths))]
            slope = float(_slope(depths, ratio)[0]) if np.isfinite(ratio).all() and (ratio > 0).all() else None
            slope_ci = None if slope is None else combined_jackknife_interval(
                slope, [_slope(depths, r) for r in sets], LEVEL)
        else:
            boot = np.stack([searches[d].boot for d in depths], axis=1)
            rdraws = boot / draws
            fit = loglog_fit(depths, ratio, rdraws)
            ratio_ci = [ci(rdraws[:, i]) for i in range(len(depths))]
            slope = None if fit is None else fit["exponent"]
            slope_ci = None if fit is None else fit["exponent_ci"]
        if slope_ci is None:
            constant = None
        elif margin is not None:
            constant = {"holds": True, "fails": False}.get(margin_status(slope_ci, 0.0, margin))
        else:
            constant = bool(slope_ci[0] <= 0 <= slope_ci[1])
        out[T] = {"depths": list(depths), "ratio": ratio.tolist(), "ratio_ci": ratio_ci, "slope": slope,
                  "slope_ci": slope_ci, "interval": method, "constant_in_depth": constant}
    return out
