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
(training seeds, and the probe's seeds for the one-step route), and the *regret*: the seed-mean
training loss at the predicted rate (interpolated in ``ln lr`` on the sweep) over the sweep's
best, minus 1 (``None`` where the prediction falls outside the grid).
"""

from __future__ import annotations

import math

import numpy as np

from amutheory.bootstrap import resample, seed_draws
from amutheory.protocol.verdicts import ci, rule_verdict, transfer_status
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


def zero_shot_table(searches: dict, curves: dict, curve_draws: dict, calibration, targets, tolerance: float) -> dict:
    """Per rule: the prediction, error (with CI), regret and status at each target depth, and the
    rule's verdict.  ``searches[L]``: the :class:`~amutheory.train.search.LrSearch` at depth ``L``;
    ``curves[rule]``: ``f`` at ``depths = sorted(searches)``; ``curve_draws[rule]``: its draws
    (``B x depths``; deterministic rules repeat ``f``)."""
    depths = sorted(searches)
    cal_idx = [depths.index(d) for d in calibration]
    tgt_idx = [depths.index(d) for d in targets]
    eta = np.array([searches[d].eta_star_train for d in depths])
    boot = np.stack([searches[d].boot for d in depths], axis=1)
    out = {}
    for rule, curve in curves.items():
        point, draws = predict(curve, curve_draws[rule], eta[cal_idx], boot[:, cal_idx], cal_idx, tgt_idx)
        rows, statuses = [], []
        for j, L in enumerate(targets):
            true = eta[tgt_idx[j]]
            ratio = point[j] / true if true > 0 else math.nan
            rci = ci(draws[:, j] / boot[:, tgt_idx[j]])
            status = transfer_status(ratio, rci, tolerance)
            statuses.append(status)
            rows.append({"depth": L, "predicted": float(point[j]), "eta_star_train": float(true),
                         "relative_error": float(ratio - 1),
                         "relative_error_ci": None if rci is None else [rci[0] - 1, rci[1] - 1],
                         "regret": regret(searches[L], float(point[j])), "status": status})
        errs = np.array([abs(math.log(r["relative_error"] + 1)) for r in rows if r["relative_error"] > -1])
        out[rule] = {"rows": rows, **rule_verdict(list(targets), statuses),
                     "median_abs_log_error": float(np.median(errs)) if errs.size else None,
                     "worst_relative_error": max((r["relative_error"] for r in rows), key=abs, default=None)}
    return out


def bridge(searches_by_horizon: dict, onestep: tuple, depths) -> dict:
    """eta*_train / eta*_onestep at each depth and horizon (with CI), and per horizon the slope of
    its log on ``ln L`` with CI: the ratio is constant in depth where that CI holds 0."""
    from amutheory.protocol.verdicts import loglog_fit

    point, draws = onestep
    out = {}
    for T, searches in sorted(searches_by_horizon.items()):
        eta = np.array([searches[d].eta_star_train for d in depths])
        boot = np.stack([searches[d].boot for d in depths], axis=1)
        ratio, rdraws = eta / point, boot / draws
        fit = loglog_fit(depths, ratio, rdraws)
        out[T] = {"depths": list(depths), "ratio": ratio.tolist(),
                  "ratio_ci": [ci(rdraws[:, i]) for i in range(len(depths))],
                  "slope": None if fit is None else fit["exponent"],
                  "slope_ci": None if fit is None else fit["exponent_ci"],
                  "constant_in_depth": None if fit is None or fit["exponent_ci"] is None
                  else bool(fit["exponent_ci"][0] <= 0 <= fit["exponent_ci"][1])}
    return out
