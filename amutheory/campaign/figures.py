"""The campaign's PNG figures: per config (:func:`make_figures`) and summary-level (the boundary
collapse of zero configs, the resnet eta* panels).  The drawing is in :mod:`amutheory.plots`;
this module picks the results, names the files and keeps a failed figure from losing the numbers.
"""

from __future__ import annotations

from pathlib import Path

from amutheory.api import Measurement
from amutheory.campaign.common import _json_safe
from amutheory.campaign.presets import RESIDUAL_ANALYSIS, CampaignConfig, analysed_by

COLLAPSE_FIGURE = "boundary_collapse.png"
RESNET_FIGURE = "resnet_eta_star.png"


def _figure_names(name: str) -> dict:
    return {"eta_star": f"eta_star_{name}.png", "layer_profiles": f"layer_profiles_{name}.png",
            "eta_star_exact": f"eta_star_{name}-exact.png"}


def _profile_depths(cfg: CampaignConfig) -> list[int]:
    held = cfg.held_out_depths or list(cfg.depths)
    picks = [held[0], held[len(held) // 2], held[-1]]
    return sorted(set(picks))


def make_figures(out_dir: Path, cfg: CampaignConfig, meas: Measurement, result: dict) -> dict:
    """Write the config's PNGs into ``out_dir``; return ``{kind: file name}`` of those written."""
    from amutheory import plots
    from amutheory.calibrate import per_layer_statistic
    from amutheory.constants import Constant

    names, written = _figure_names(cfg.name), {}
    if cfg.is_resnet and not result["forward_stable"]:
        return written  # no prediction: the measured eta* is in the resnet figure
    fig = plots.plot_eta_star(result)
    fig.savefig(out_dir / names["eta_star"], dpi=110)
    written["eta_star"] = names["eta_star"]
    exact = result.get("exact_law") or {}
    if cfg.is_resnet and exact.get("covered"):  # the exact law of the mean (nothing fitted), its own figure
        fig = plots.plot_eta_star({**exact, "family": result.get("family"),
                                   "name": f"{cfg.name}, exact law (mean: nothing fitted)"})
        fig.savefig(out_dir / names["eta_star_exact"], dpi=110)
        written["eta_star_exact"] = names["eta_star_exact"]
    consts = result["constants"].get("mean")
    # the per-layer law is the circular chain's, drawn where the constants a, b, e are known (not for a
    # Monte Carlo law of s_bar alone)
    if consts and {"a", "b", "e"} <= set(consts) and not cfg.is_zero and not cfg.is_resnet:
        constants = {k: Constant(k, v["value"], v["source"], v.get("error", 0.0)) for k, v in consts.items()}
        prof = {d: per_layer_statistic(meas.profiles[d], "mean") for d in _profile_depths(cfg)}
        chain = cfg.spec.family_object.chain_spec(cfg.spec)  # the conv chain it is (an MLP's: kernel 1, one position)
        fig = plots.plot_layer_profiles(chain, prof, constants,
                                        title=f"{cfg.name}: measured s_l (mean over seeds) vs the per-layer law "
                                              "with the calibrated constants (mean statistic)")
        fig.savefig(out_dir / names["layer_profiles"], dpi=110)
        written["layer_profiles"] = names["layer_profiles"]
    return written


def _collapse_configs(results: list) -> list:
    """The zero configs drawn in the collapse figure: the 1D ReLU ones (else every zero config)."""
    zero = [r for r in results if r["padding"] == "zero" and r.get("ratio", {}).get("mean")]
    relu1d = [r for r in zero if r["spec"]["dim"] == 1 and r["spec"]["activation"] == "relu"]
    return relu1d or zero


def _collapse_figure(out_dir: Path, results: list) -> dict:
    """Write ``boundary_collapse.png`` when there are zero configs; returns the summary keys
    ``figures`` (and ``errors`` when drawing failed)."""
    from amutheory import plots

    chosen = _collapse_configs(results)
    if not chosen:
        return {}
    keys = _save_summary_figure(out_dir, lambda: plots.plot_boundary_collapse(_json_safe(chosen)),
                                COLLAPSE_FIGURE, "boundary_collapse", "boundary collapse")
    if "errors" not in keys:
        keys["collapse_configs"] = [r["name"] for r in chosen]
    return keys


def _save_summary_figure(out_dir: Path, draw, fname: str, kind: str, what: str) -> dict:
    """Save the figure ``draw()`` returns as ``out_dir/fname``; returns the summary keys
    ``figures`` (``{kind: fname}``, empty with ``errors`` when drawing failed)."""
    try:
        fig = draw()
        fig.savefig(out_dir / fname, dpi=110)
    except Exception as exc:  # a figure must not lose the numbers
        return {"figures": {}, "errors": [f"{what} figure failed: {type(exc).__name__}: {exc}"]}
    return {"figures": {kind: fname}}


def _merge_figure_keys(*parts: dict) -> dict:
    """Summary keys of several summary-level figures: ``figures`` and ``errors`` joined."""
    out = {}
    for part in parts:
        for k, v in part.items():
            if k == "figures":
                out.setdefault("figures", {}).update(v)
            elif k == "errors":
                out.setdefault("errors", []).extend(v)
            else:
                out[k] = v
    return out


def _resnet_figure(out_dir: Path, results: list) -> dict:
    """Write ``resnet_eta_star.png`` when there are ReLU resnet configs; returns summary keys."""
    from amutheory import plots

    chosen = [r for r in results if analysed_by(r, RESIDUAL_ANALYSIS) and r["spec"]["activation"] == "relu"]
    if not chosen:
        return {}
    return _save_summary_figure(out_dir, lambda: plots.plot_resnet_eta_star(_json_safe(chosen)), RESNET_FIGURE,
                                "resnet_eta_star", "resnet")
