"""The protocol's analysis, fixed before any run (``validate/plans/REGISTRATION_PROTOCOL.md``): per study
the optima and their fits, per claim a verdict, the zero-shot transfer of every rule, the bridge
eta*_train / eta*_onestep against depth and horizon, and the cost of each route.

Every fit is least squares of ``ln eta*_train`` on the log of the claim's axis: the depth ``L``
(conv chains), the effective depth read off the traced graph (ResNets, Transformers:
:func:`amutheory.transfer.depth_measures`), the number of blocks ``K``, or the width.  CIs come from
the studies' seed bootstraps (:mod:`amutheory.protocol.verdicts`).
"""

from __future__ import annotations

import math

import numpy as np

import amutheory.protocol.verdicts as V
from amutheory.protocol.zero_shot import bridge, onestep_draws, rule_curves, zero_shot_table
from amutheory.train.search import BOOTSTRAP

#: seed of the probe's bootstrap (fixed: the same probe gives the same CIs)
PROBE_BOOTSTRAP_SEED = 20_261_125


def _spec_at(template, axis_value, axis: str):
    field = "width" if axis == "width" else "depth"
    return template.spec.with_(**{field: int(axis_value)})


def axis_values(study, template, axis: str) -> dict:
    """``{sweep point: x}``: the sweep's depths (or widths) read on the claim's axis."""
    from amutheory.transfer import depth_measures

    points = study.widths if study.axis == "width" else study.depths
    if axis in ("depth", "blocks", "width"):
        return {p: float(p) for p in points}
    return {p: float(depth_measures(_spec_at(template, p, "depth")).effective_depth) for p in points}


#: the optimum's window half-width in grid steps, per optimum method (the vertex has none)
WINDOW_STEPS = {"smooth": 2, "per-seed": 1}


class StudyResult:
    """One study's searches (at the registered horizon and the shorter ones) and its fits."""

    def __init__(self, study, template, table, rates: dict, horizons, interval: str = "bootstrap",
                 optimum: str = "vertex", diverged: str = "inf"):
        from amutheory.train.sweep import diverged_cap, searches_at

        self.study, self.template, self.table, self.rates = study, template, table, rates
        self.interval = interval
        seeds = study.seed_list
        key = (lambda p: (p, study.widths[0])) if study.axis == "depth" else (lambda p: (study.depths[0], p))
        self.points = list(study.widths if study.axis == "width" else study.depths)
        # the optimum's window on each side of the argmin, in steps of the study's log grid: two for the smooth
        # optimum of the seed mean (2026-11-27b), one for each seed's own (2026-11-28)
        steps = WINDOW_STEPS.get(optimum)
        self.window = steps * math.log(study.lr_range[1] / study.lr_range[0]) / (study.points - 1) \
            if steps else None
        opts = dict(window=self.window, interval=interval, cap=diverged_cap(template, diverged),
                    per_seed=optimum == "per-seed")
        at = {None: searches_at(template, table, rates, seeds, **opts)}
        at.update({T: searches_at(template, table, rates, seeds, horizon=T, **opts) for T in horizons
                   if T < study.steps})
        self.by_horizon = {T: {p: s[key(p)] for p in self.points} for T, s in at.items()}
        self.searches = self.by_horizon[None]
        self._x = {}

    def x(self, axis: str) -> dict:
        if axis not in self._x:
            self._x[axis] = axis_values(self.study, self.template, axis)
        return self._x[axis]

    def fit(self, axis: str, points=None, horizon=None) -> dict | None:
        points = self.points if points is None else [p for p in self.points if p in points]
        s = self.by_horizon[horizon]
        eta = [s[p].eta_star_train for p in points]
        if self.interval == "jackknife":  # the leave-one-seed-out replicates, paired by seed index
            n = self.study.seeds
            draws = np.stack([s[p].jack if s[p].jack is not None else np.full(n, np.nan) for p in points], 1)
        else:
            draws = np.stack([s[p].boot if s[p].boot is not None else np.full(BOOTSTRAP, np.nan) for p in points], 1)
        return V.loglog_fit([self.x(axis)[p] for p in points], eta, draws, self.interval)

    def _at_grid_optimum(self, p, field: str):
        """The seed mean of a record field at the grid optimum of point ``p`` (``None`` if none)."""
        s = self.searches[p]
        if not np.isfinite(s.eta_star_grid):
            return None
        L, n = (p, self.study.widths[0]) if self.study.axis == "depth" else (self.study.depths[0], p)
        spec = self.template.spec.with_(depth=L, width=n)
        vals = [self.table[self.template.with_(spec=spec, lr=float(s.eta_star_grid), seed=k).key()].get(field)
                for k in self.study.seed_list]
        vals = [v for v in vals if v is not None]
        return float(np.mean(vals)) if vals else None

    def rows(self) -> list:
        out = []
        for p in self.points:
            s = self.searches[p]
            finite = np.isfinite(s.loss_mean)
            out.append({self.study.axis: p, "eta_star_train": _num(s.eta_star_train),
                        "eta_star_train_ci": s.eta_star_train_ci, "interval": self.interval, "flags": list(s.flags),
                        "best_loss": _num(s.loss_mean[finite].min()) if finite.any() else None,
                        "final_loss_at_optimum": self._at_grid_optimum(p, "final_loss"),
                        "test_accuracy_at_optimum": self._at_grid_optimum(p, "test_accuracy"),
                        "chance_loss": math.log(self.template.spec.outputs)})
            if s.seed_optima is not None:  # the per-seed optimum: each seed's own
                out[-1]["seed_optima"] = [_num(v) for v in s.seed_optima]
        return out

    def cost(self, points) -> dict:
        """Cells, passes and core-seconds of the records at ``points`` (every rate and seed)."""
        seeds = self.study.seed_list
        recs = []
        for p in points:
            L, n = (p, self.study.widths[0]) if self.study.axis == "depth" else (self.study.depths[0], p)
            spec = self.template.spec.with_(depth=L, width=n)
            recs += [self.table[self.template.with_(spec=spec, lr=lr, seed=s).key()]
                     for lr in self.rates[(L, n)] for s in seeds]
        return {"cells": len(recs), "forward_passes": sum(r["forward_passes"] for r in recs),
                "backward_passes": sum(r["backward_passes"] for r in recs),
                "core_seconds": sum(r["timing"]["wall_s"] for r in recs)}


def _num(v):
    return float(v) if v is not None and np.isfinite(v) else None


def _strip(fit: dict | None) -> dict | None:
    return None if fit is None else {k: v for k, v in fit.items() if k != "slope_draws"}


def _prefactor_ratio(a: StudyResult, b: StudyResult, points, ha=None, hb=None) -> dict | None:
    """Geometric mean over ``points`` of eta*_a / eta*_b (read at horizons ``ha`` and ``hb``), with its
    paired CI: the seed bootstrap, or the delete-one-seed jackknife on its log (seed ``j`` left out of both)."""
    sa, sb = a.by_horizon[ha], b.by_horizon[hb]
    ea = np.array([sa[p].eta_star_train for p in points])
    eb = np.array([sb[p].eta_star_train for p in points])
    jack = a.interval == "jackknife"
    if not (np.isfinite(ea).all() and np.isfinite(eb).all()) or (sa[points[0]].jack if jack else sa[points[0]].boot) \
            is None:
        return None
    pick = (lambda s: s.jack) if jack else (lambda s: s.boot)
    da = np.stack([pick(sa[p]) for p in points], 1)
    db = np.stack([pick(sb[p]) for p in points], 1)
    ratio = float(np.exp(np.log(ea / eb).mean()))
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = np.exp(np.log(da / db).mean(1))
    if jack:
        from amutheory.protocol.zero_shot import log_ratio_interval

        rci = log_ratio_interval(ratio, [draws])
    else:
        rci = V.ci(draws)
    return {"ratio": ratio, "ratio_ci": rci, "interval": a.interval, "depths": list(points)}


def _corrected_slope(result: StudyResult, axis: str) -> float | None:
    """The slope of the AM-muP law (with its finite-depth corrections) over the study's points."""
    if axis == "width" or result.study.axis == "width":
        return None
    curve = rule_curves(lambda L: _spec_at(result.template, L, "depth"), result.points)["am-mup"]
    xs = np.log([result.x(axis)[p] for p in result.points])
    return float(np.polyfit(xs, np.log(curve), 1)[0])


def _exponent_claim(claim, r: StudyResult, protocol) -> dict:
    fit = r.fit(claim.axis)
    at = {T: r.fit(claim.axis, horizon=T) for T in protocol.conditional_horizons if T < r.study.steps}
    corrected = _corrected_slope(r, claim.axis) if claim.expected != 0 else None
    out = {"expected": claim.expected, "fit": _strip(fit), "corrected_slope": corrected,
           "at_horizons": {str(T): _strip(f) for T, f in at.items()}}
    out.update(V.exponent_verdict(fit, claim.expected, at, corrected, protocol.margin))
    return out


def _horizons(a: StudyResult, b: StudyResult) -> tuple:
    """The keys of ``by_horizon`` at which two studies are compared: the shorter one's registered horizon
    (a study trained longer is read at that step, where it keeps the reading)."""
    T = min(a.study.steps, b.study.steps)
    key = lambda r: None if r.study.steps == T or T not in r.by_horizon else T  # noqa: E731
    return key(a), key(b)


def _pair(claim_axis: str, a: StudyResult, b: StudyResult):
    common = [p for p in a.points if p in b.points]
    ha, hb = _horizons(a, b)
    return common, V.paired_difference(a.fit(claim_axis, common, ha), b.fit(claim_axis, common, hb))


def _claim(claim, results: dict, protocol, eta_max_fits: dict | None = None) -> dict:
    eta_max_fits = eta_max_fits or {}
    base = {"name": claim.name, "statement": claim.statement, "kind": claim.kind, "studies": list(claim.studies),
            "axis": claim.axis}
    if claim.untestable:
        return {**base, "verdict": "untestable", "reason": claim.untestable, "not_run": True}
    rs = [results[s] for s in claim.studies]
    if claim.kind == "exponent":
        return {**base, **_exponent_claim(claim, rs[0], protocol)}
    if claim.kind == "eta-max":
        fit = eta_max_fits.get(claim.studies[0])
        return {**base, "expected": claim.expected, "fit": fit,
                **V.exponent_verdict(fit, claim.expected, {}, None, protocol.margin)}
    if claim.kind == "same-exponent":
        common, diff = _pair(claim.axis, rs[0], rs[1])
        ha, hb = _horizons(rs[0], rs[1])
        ratio = _prefactor_ratio(rs[0], rs[1], common, ha, hb)
        fits = {s: _strip(r.fit(claim.axis, common, h)) for s, r, h in zip(claim.studies, rs, (ha, hb))}
        return {**base, "depths": common, "fits": fits, "prefactor_ratio": ratio, "horizons": _steps(rs, (ha, hb)),
                "difference": None if diff is None else {k: v for k, v in diff.items() if k != "difference_draws"},
                **V.same_exponent_verdict(diff, ratio, claim.prefactor_changes, protocol.margin)}
    if claim.kind == "steeper":
        common, he = _pair(claim.axis, rs[0], rs[2])
        _, crit = _pair(claim.axis, rs[1], rs[2])
        hs = (_horizons(rs[0], rs[2])[0], _horizons(rs[1], rs[2])[0], _horizons(rs[0], rs[2])[1])
        fits = {s: _strip(r.fit(claim.axis, common, h)) for s, r, h in zip(claim.studies, rs, hs)}
        strip = lambda d: None if d is None else {k: v for k, v in d.items() if k != "difference_draws"}  # noqa: E731
        return {**base, "depths": common, "fits": fits, "difference_he": strip(he), "difference_critical": strip(crit),
                "horizons": _steps(rs, hs), **V.steeper_verdict(he, crit, protocol.margin)}
    return {**base, **_width_claim(claim, rs[0], protocol.margin)}


#: flags under which a point's optimum has no CI (the smooth optimum: the vertex beyond the window, or no fit)
NO_CI_FLAGS = ("outside", "few-points", "no-curvature", "all-diverged")


def _name_unresolved(claim: dict, results: dict) -> None:
    """An inconclusive claim without a CI names the points whose optimum has none, and why
    (``unresolved``: ``{study: {point: flags}}``); the verdict is unchanged."""
    if claim.get("not_run") or claim["kind"] == "eta-max" or claim["verdict"] != "inconclusive":
        return
    points = claim.get("depths")
    found = {}
    for name in claim["studies"]:
        r = results[name]
        T = claim.get("horizons", {}).get(name)
        at = r.by_horizon[None if T in (None, r.study.steps) else T]
        bad = {p: list(at[p].flags) for p in (points or r.points) if p in at and set(at[p].flags) & set(NO_CI_FLAGS)}
        if bad:
            found[name] = bad
    if not found:
        return
    claim["unresolved"] = {k: {str(p): f for p, f in v.items()} for k, v in found.items()}
    where = "; ".join(f"{k} at {', '.join(map(str, v))}" for k, v in found.items())
    claim["reason"] += (f"; optima without a CI: {where} (flag outside: the seed-mean loss still falls at the last "
                        "rate below divergence, so the optimum lies at the divergence edge, not inside the rates tried)")


def _steps(rs, keys) -> dict:
    """``{study: the step its fit is read at}``."""
    return {r.study.name: r.study.steps if k is None else k for r, k in zip(rs, keys)}


def _width_claim(claim, r: StudyResult, margin: float | None = None) -> dict:
    from amutheory.transfer import transfer_lr

    fit = r.fit("width")
    n0, n1 = r.points[0], r.points[-1]
    widths = transfer_lr(1.0, _spec_at(r.template, n0, "width"), _spec_at(r.template, n1, "width")).width_rules
    rules = {}
    for name in claim.expected_rules:
        e = math.log(widths[name]) / math.log(n1 / n0)
        rules[name] = {"exponent": e, **V.exponent_verdict(fit, e, {}, None, margin)}
    lead = rules[claim.expected_rules[0]]
    return {"fit": _strip(fit), "rules": rules, "verdict": lead["verdict"],
            "reason": f"{claim.expected_rules[0]} rule: {lead['reason']}"}


def _onestep_jack(saved: dict, depths) -> dict:
    from amutheory.protocol.zero_shot import onestep_jackknife

    return onestep_jackknife(np.array([saved["depths"][str(L)]["s_bar"] for L in depths]).T)


def _bridge_opts(protocol, probe_jack: dict | None, stat: str) -> dict:
    if protocol.interval != "jackknife":
        return {}
    return {"method": "jackknife", "probe_jack": None if probe_jack is None else probe_jack[stat],
            "margin": protocol.margin}


def _probe_fit(depths, curve: tuple, jack, method: str) -> dict | None:
    """The one-step curve's power law in depth: its CI from the probe's bootstrap draws, or from its
    leave-one-probe-seed-out replicates (jackknife)."""
    if method == "jackknife":
        return _strip(V.loglog_fit(depths, curve[0], jack, "jackknife"))
    return _strip(V.loglog_fit(depths, curve[0], curve[1]))


def _onestep_curves(saved: dict, depths) -> dict:
    s_bar = np.array([saved["depths"][str(L)]["s_bar"] for L in depths]).T  # seeds x depths
    return onestep_draws(s_bar, BOOTSTRAP, PROBE_BOOTSTRAP_SEED)


def _transfer(protocol, results: dict, onestep: dict) -> dict:
    plan = protocol.transfer
    r = results[plan.study]
    depths = r.points
    curves = rule_curves(lambda L: _spec_at(r.template, L, "depth"), depths)
    draws = {k: np.broadcast_to(v, (BOOTSTRAP, len(v))) for k, v in curves.items()}
    one = _onestep_curves(onestep[plan.study], depths) if plan.study in onestep else {}
    for k, (point, d) in one.items():
        curves[k], draws[k] = point, d
    opts = dict(method=protocol.interval, margin_rule=protocol.margin is not None,
                probe_jack=_onestep_jack(onestep[plan.study], depths) if plan.study in onestep else None)
    out = {"study": plan.study, "calibration": list(plan.calibration), "targets": list(plan.targets),
           "tolerance": plan.tolerance, "depths": depths, "interval": protocol.interval,
           "curves": {k: np.asarray(v).tolist() for k, v in curves.items()},
           "rules": zero_shot_table(r.searches, curves, draws, plan.calibration, plan.targets, plan.tolerance, **opts),
           "segments": [{"calibration": list(c), "targets": list(t),
                         "rules": zero_shot_table(r.searches, curves, draws, c, t, plan.tolerance, **opts)}
                        for c, t in plan.segments]}
    if one:
        horizons = {(r.study.steps if T is None else T): s for T, s in r.by_horizon.items()}
        out["bridge"] = {stat: bridge(horizons, one[stat], depths, **_bridge_opts(protocol, opts["probe_jack"], stat))
                         for stat in one}
        out["bridge_exponents"] = {
            "train": {str(T if T is not None else r.study.steps): _strip(r.fit("depth", horizon=T))
                      for T in r.by_horizon},
            **{stat: _probe_fit(depths, one[stat], opts["probe_jack"][stat], protocol.interval) for stat in one}}
        out["cost"] = _cost(protocol, r, onestep[plan.study], out["rules"])
    return out


def _cost(protocol, r: StudyResult, saved: dict, rules: dict) -> dict:
    plan = protocol.transfer
    grid = r.cost(plan.targets)
    shallow = r.cost(plan.calibration)
    probe_s = sum(saved["depths"][str(L)]["seconds"] for L in plan.calibration + plan.targets)
    route = {"cells": shallow["cells"], "forward_passes": shallow["forward_passes"],
             "backward_passes": shallow["backward_passes"], "core_seconds": shallow["core_seconds"] + probe_s,
             "probe_seconds": probe_s, "probe_seeds": r.study.probe_seeds}
    half = []
    for L in plan.targets:
        s = r.searches[L]
        if s.eta_star_train_ci is not None and np.isfinite(s.eta_star_train):
            half.append(max(abs(math.log(c / s.eta_star_train)) for c in s.eta_star_train_ci))
    errors = {k: rules[k]["median_abs_log_error"] for k in ("onestep-mean", "onestep-typical") if k in rules}
    return {"grid_search": {**grid, "depths": list(plan.targets),
                            "median_abs_log_ci_half_width": float(np.median(half)) if half else None},
            "one_step_route": {**route, "depths": list(plan.calibration), "median_abs_log_error": errors},
            "core_seconds_ratio": route["core_seconds"] / grid["core_seconds"] if grid["core_seconds"] else None,
            "cells_ratio": route["cells"] / grid["cells"] if grid["cells"] else None}


def _learning(claim: dict, results: dict) -> dict:
    """``{study: {point: learns}}`` over the points the claim's fits use (a ``same-exponent`` or
    ``steeper`` claim: the studies' common points), and the largest size tried with its loss."""
    from amutheory.train.learning import learns

    out = {}
    for name in claim["studies"]:
        r = results[name]
        points = claim.get("depths") or r.points
        rows = {row[r.study.axis]: row for row in r.rows()}
        out[name] = {p: learns(rows[p]["final_loss_at_optimum"], r.template.spec.outputs) for p in points if p in rows}
    return out


def _largest(claim: dict, results: dict) -> dict:
    """The deepest (or widest) net each study of the claim tried and the final loss it reached."""
    out = {}
    for name in claim["studies"]:
        r = results[name]
        row = r.rows()[-1]
        out[name] = {r.study.axis: row[r.study.axis], "width": r.study.widths[-1],
                     "final_loss_at_optimum": row["final_loss_at_optimum"], "chance_loss": row["chance_loss"]}
    return out


def _eta_max(study, per_point: dict, interval: str) -> dict:
    """The largest stable rate of one study: per point the bisection's estimate, its CI and flags, and
    its power law on the study's axis (the delete-one-seed jackknife over the per-seed edges)."""
    points = sorted(per_point)
    rows = []
    censored = {p for p in points if {"below-range", "above-range"} & set(per_point[p].get("flags", []))}
    for p in points:
        d = per_point[p]
        reps = d.get("replicates")
        # a censored seed counts at the range's end: a bound, not an estimate -- no CI, and out of the fit
        c = None if reps is None or p in censored else V.interval(math.log(d["eta_max"]), np.log(reps), interval)
        rows.append({study.axis: p, "eta_max": d["eta_max"], "eta_max_ci": None if c is None else
                     [math.exp(c[0]), math.exp(c[1])], "interval": interval, "flags": list(d.get("flags", [])),
                     "resolution": d.get("resolution"), "in_fit": p not in censored})
    n = study.seeds
    draws = np.stack([np.asarray(per_point[p].get("replicates") or np.full(n, np.nan), float) for p in points], 1)
    eta = [math.nan if p in censored else per_point[p]["eta_max"] for p in points]
    fit = V.loglog_fit([float(p) for p in points], eta, draws, interval)
    return {"rows": rows, "fit": _strip(fit), "rounds": study.eta_max_rounds, "censored": sorted(censored)}


def analyse(protocol, prepared: dict, rates: dict, onestep: dict, eta_max: dict | None = None) -> dict:
    """The protocol's summary (the JSON contract of ``validate --preset protocol``); ``eta_max``:
    ``{study: {point: amutheory.train.stability.eta_max(...)}}`` for the studies that bisect."""
    from amutheory.protocol.presets import fingerprint

    results = {st.name: StudyResult(st, prepared[st.name]["template"], prepared[st.name]["table"],
                                    rates[st.name], protocol.horizons, protocol.interval, protocol.optimum,
                                    protocol.diverged)
               for st in protocol.studies}
    eta_max = eta_max or {}
    eta_max_studies = {name: _eta_max(results[name].study, pts, protocol.interval) for name, pts in eta_max.items()}
    eta_max_section = {"eta_max": eta_max_studies} if eta_max_studies else {}
    studies = {}
    for name, r in results.items():
        axis = r.study.axis
        studies[name] = {"what": r.study.what, "axis": axis, "rows": r.rows(), "fit": _strip(r.fit(axis)),
                         "horizon_fits": {str(T): _strip(r.fit(axis, horizon=T)) for T in r.by_horizon
                                          if T is not None},
                         "family": r.study.spec.family,
                         "steps": r.study.steps, "seeds": r.study.seeds, "optimizer": r.study.optimizer,
                         "dataset": r.study.dataset, "cost": r.cost(r.points)}
    claims = [_claim(c, results, protocol, {k: v["fit"] for k, v in eta_max_studies.items()})
              for c in protocol.claims]
    for c in claims:  # say which optima have no CI where that leaves a claim without one
        _name_unresolved(c, results)
    for c in claims:  # which nets the verdict rests on learn; untestable where one does not (new registrations)
        if c.get("not_run") or c["kind"] == "eta-max":  # the divergence edge is measured whether or not a net learns
            continue
        learning = _learning(c, results)
        c["learns"] = {study: {str(p): ok for p, ok in pts.items()} for study, pts in learning.items()}
        c["learning_points"] = {study: [p for p, ok in pts.items() if ok] for study, pts in learning.items()}
        c["largest_size"] = _largest(c, results)
        if protocol.requires_learning:
            c.update(V.learning_verdict(c, learning) or {})
    return {"protocol": protocol.name, "fingerprint": fingerprint(protocol), "description": protocol.description,
            "size_note": protocol.size_note, "registered_horizon": "each study's steps",
            "interval": protocol.interval, "optimum": protocol.optimum, "margin": protocol.margin,
            "diverged": protocol.diverged,
            "verdicts": {c["name"]: c["verdict"] for c in claims}, "claims": claims,
            "transfer": _transfer(protocol, results, onestep), "studies": studies,
            "bridges": _bridges(results, onestep, protocol), **eta_max_section}


def _bridges(results: dict, onestep: dict, protocol) -> dict:
    """eta*_train / eta*_onestep against depth and horizon for every study that probed (the transfer study's
    is also under ``transfer.bridge``): ``{study: {"width": n, statistic: bridge}}``."""
    out = {}
    for name, saved in onestep.items():
        r = results[name]
        one = _onestep_curves(saved, r.points)
        jack = _onestep_jack(saved, r.points)
        horizons = {(r.study.steps if T is None else T): s for T, s in r.by_horizon.items()}
        out[name] = {"width": r.study.widths[0], **{stat: bridge(horizons, one[stat], r.points,
                                                                 **_bridge_opts(protocol, jack, stat))
                                                    for stat in one}}
    return out
