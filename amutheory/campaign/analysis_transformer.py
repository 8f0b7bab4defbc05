"""Analysis of a pre-LN Transformer config (the Transformer family, ``depth`` = K blocks).

Per statistic: measured eta* per K, its log-log slope against the **effective depth**
``L_eff = 2K + 2`` over the deepest three K (seed-bootstrap 95% CI) and whether the paper's -3/2
lies inside; then both candidate laws (:mod:`amutheory.symbolic.transformer.coherent`) are calibrated on
``cfg.calibration_depths`` and checked at the held-out K exactly as residual configs are
(:func:`amutheory.campaign.analysis_resnet._compare_resnet`): ``laws["coherent"]`` (absent for
``init="none"``, which has no closed-form law) and ``laws["effective-depth"]``.
"""

from __future__ import annotations

import copy

import numpy as np

from amutheory import stats
from amutheory.api import Measurement
from amutheory.campaign.analysis import _eta_rows
from amutheory.campaign.analysis_resnet import PAPER_EXPONENT, _compare_resnet, _local_slope_rows
from amutheory.campaign.common import N_BOOT, STATISTICS, _f
from amutheory.campaign.presets import CampaignConfig
from amutheory.spec import ProbeProtocol
from amutheory.symbolic.transformer.coherent import effective_depth_of_blocks


def effective_depth_fit(meas: Measurement, depths: list, stat: str) -> dict:
    """Slope of ``ln eta*`` on ``ln L_eff`` over ``depths`` (K values), 95% seed-bootstrap CI."""
    values = np.stack([meas.s_bar(d) for d in depths], axis=1)
    eff = [effective_depth_of_blocks(d) for d in depths]
    fit = stats.fit_loglog_slope(eff, values, level=meas.level, n_boot=N_BOOT, statistic=stat)
    slope, ci = -fit.slope / 2, (-fit.ci[1] / 2, -fit.ci[0] / 2)
    return {"depths": list(depths), "effective_depths": eff, "exponent": _f(slope), "ci": [_f(ci[0]), _f(ci[1])],
            "paper_inside_ci": bool(ci[0] <= PAPER_EXPONENT <= ci[1])}


def _law_result(cfg, spec, meas, protocol, law_name: str) -> dict:
    from amutheory.api import derive

    out = {"law": None, "derived_exponent": None, "per_depth": {}, "calibration": {}, "constants": {},
           "fitted_exponents": {}, "held_out_test": {}, "errors": [], "notes": []}
    try:
        law = derive(spec, law=law_name)
    except ValueError as exc:
        out.update(passed=None, reason=" ".join(str(exc).split()))
        return out
    out.update(law=law.name, derived_exponent=str(law.exponent), assumptions=list(law.assumptions))
    _compare_resnet(out, cfg, spec, meas, protocol, float(law.exponent), law=law_name)
    return out


def analyse_transformer_config(cfg: CampaignConfig, meas: Measurement,
                               protocol: ProbeProtocol = ProbeProtocol()) -> dict:
    """The result dict of a transformer config (see the module docstring)."""
    spec = cfg.spec.with_(depth=max(cfg.depths))
    out = {"name": cfg.name, "family": "transformer", "init": spec.init, "padding": spec.padding,
           "spec": spec.to_dict(), "depths": list(cfg.depths), "calibration_depths": list(cfg.calibration_depths),
           "held_out_depths": cfg.held_out_depths, "seeds": len(cfg.seed_list), "per_depth": {},
           "effective_depth_fit": {}, "local_slopes": {}, "laws": {}, "errors": [], "notes": []}
    deepest = list(cfg.depths[-3:])
    for stat in STATISTICS:
        out["per_depth"][stat] = _eta_rows(cfg, meas, stat, {}, {}, set(cfg.calibration_depths))
        out["effective_depth_fit"][stat] = effective_depth_fit(meas, deepest, stat)
        out["local_slopes"][stat] = _local_slope_rows(meas, list(cfg.depths), stat)
    for law_name in ("coherent", "effective-depth"):
        res = _law_result(cfg, spec, meas, protocol, law_name)
        out["laws"][law_name] = copy.deepcopy(res)
    fit = out["effective_depth_fit"]["mean"]
    out["fitted_exponent"], out["fitted_exponent_ci"] = fit["exponent"], fit["ci"]
    out["fitted_exponent_over"] = "L_eff, deepest 3 K"  # ln eta* on ln L_eff over the deepest three K
    out["claim_minus_three_halves"] = fit["paper_inside_ci"]
    verdicts = [r.get("passed") for r in out["laws"].values() if r.get("passed") is not None]
    out["passed"] = any(verdicts) if verdicts else None
    out["max_rel_error"] = _f(min((r["max_rel_error"] for r in out["laws"].values()
                                   if r.get("max_rel_error") is not None), default=None))
    return out


# --------------------------------------------------------------------------- the campaign's entry points
# (the Transformer family names this module as its ``campaign_module``; amutheory.campaign.run calls them)
def analyse_campaign_config(cfg: CampaignConfig, meas: Measurement, protocol: ProbeProtocol,
                            stream: dict | None = None, reference=None) -> dict:
    """A Transformer config's result (:func:`analyse_transformer_config`)."""
    return analyse_transformer_config(cfg, meas, protocol)


def campaign_message(cfg: CampaignConfig, res: dict) -> str:
    from amutheory.campaign.report_transformer import _transformer_message

    return _transformer_message(res)
