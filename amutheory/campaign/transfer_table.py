"""Learning-rate transfer checked against measurement: every rule, every family, held-out depths.

For a config with measured nets at depths ``L_0 < L_1 < ...``: the reference learning rate is the
measured ``eta*(L_ref)`` (arithmetic mean over seeds, :data:`REFERENCE_DEPTH` or the shallowest
depth), every rule of :mod:`amutheory.transfer` predicts ``eta*(L)`` at each deeper held-out
depth from it, and the error is ``predicted / measured - 1``.  The measured value carries a 95%
seed-bootstrap CI of the *ratio* ``eta*(L) / eta*(L_ref)`` (the reference's own noise included),
so a rule is "inside" when its predicted ratio lies in that interval.
"""

from __future__ import annotations

import numpy as np

from amutheory.api import Measurement
from amutheory.bootstrap import percentile_interval, resample, seed_draws
from amutheory.campaign.common import LEVEL, N_BOOT, _f
from amutheory.transfer import RULES, depth_factors, depth_measures

REFERENCE_DEPTH = 4


def ratio_ci(ref: np.ndarray, tgt: np.ndarray, rng) -> tuple[float, float, float]:
    """``eta*(L)/eta*(L_ref)`` of seed means and its percentile CI (independent resampling)."""
    point = np.sqrt(ref.mean() / tgt.mean())
    r = resample(seed_draws(len(ref), N_BOOT, rng), ref).mean(1)
    t = resample(seed_draws(len(tgt), N_BOOT, rng), tgt).mean(1)
    lo, hi = percentile_interval(np.sqrt(r / t), LEVEL)
    return float(point), float(lo), float(hi)


def rule_entries(factors: dict, ratio: float, lo: float, hi: float) -> dict:
    """``{rule: {ratio, error, inside}}``: each predicted ratio against the measured one and its CI."""
    return {k: {"ratio": _f(f), "error": _f(f / ratio - 1), "inside": bool(lo <= f <= hi)} for k, f in factors.items()}


def error_summary(entries: list) -> dict:
    """Median and max |error| of :func:`rule_entries` entries and how many lie inside their CI."""
    errs = np.array([abs(x["error"]) for x in entries if x["error"] is not None])
    return {"median_abs_error": _f(np.median(errs)) if errs.size else None,
            "max_abs_error": _f(errs.max()) if errs.size else None,
            "inside": int(sum(x["inside"] for x in entries)), "n": len(entries)}


def transfer_rows(cfg, meas: Measurement) -> dict:
    """``{"reference_depth", "rows": [{depth, measured_ratio, ci, rules: {rule: {ratio, error,
    inside}}}]}`` for one config (any family without zero padding)."""
    depths = list(cfg.depths)
    ref_depth = REFERENCE_DEPTH if REFERENCE_DEPTH in depths else depths[0]
    held = [d for d in cfg.held_out_depths if d > ref_depth]
    spec = cfg.spec
    ref_spec = spec.with_(depth=ref_depth)
    ref_m = depth_measures(ref_spec)
    rng = np.random.default_rng(0)
    rows = []
    for d in held:
        tgt_spec = spec.with_(depth=d)
        notes: list[str] = []
        factors = depth_factors(ref_m, depth_measures(tgt_spec), ref_spec, tgt_spec, notes)
        ratio, lo, hi = ratio_ci(meas.s_bar(ref_depth), meas.s_bar(d), rng)
        rules = rule_entries(factors, ratio, lo, hi)
        rows.append({"depth": d, "measured_ratio": _f(ratio), "ci": [_f(lo), _f(hi)], "rules": rules,
                     "notes": notes})
    return {"name": cfg.name, "family": spec.family, "reference_depth": ref_depth, "rows": rows}


def rule_summary(tables: list) -> dict:
    """Per family and rule: median and max |error| and how many held-out depths fell inside the CI."""
    out = {}
    for fam in sorted({t["family"] for t in tables}):
        rows = [r for t in tables if t["family"] == fam for r in t["rows"]]
        out[fam] = {}
        for rule in RULES:
            out[fam][rule] = error_summary([r["rules"][rule] for r in rows])
    return out


def best_rules(summary: dict) -> dict:
    """Per family, the rule with the smallest median |error| (the evidence docs/findings/transformers_and_transfer.md cites)."""
    return {fam: min(rules, key=lambda k: rules[k]["median_abs_error"] if rules[k]["median_abs_error"] is not None
                     else np.inf) for fam, rules in summary.items()}
