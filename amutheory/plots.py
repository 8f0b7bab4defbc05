"""Figures of the validation campaign.

Every function takes result tables (the dicts :mod:`amutheory.campaign` writes into
``summary.json``) and RETURNS a :class:`matplotlib.figure.Figure`; saving is the caller's job
(``fig.savefig(path)``).  Figures are built with :class:`matplotlib.figure.Figure` directly, not
through ``pyplot``: no backend is selected, no global figure registry grows, and the module is
safe to import in headless processes (``savefig`` renders with the Agg canvas).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

_COLORS = {"mean": "tab:blue", "geo": "tab:orange"}
_LABELS = {"mean": "arithmetic mean", "geo": "geometric mean"}


def _integer_ticks(ax, values):
    """Log x axis labelled at the given integers (plain numbers, no 10^x)."""
    ticks = sorted({int(v) for v in values})
    if len(ticks) > 10:
        # a log-spaced subset: 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, ... and the last value
        nice = {m * 2**k for k in range(0, 20) for m in (1, 3)} | {1}
        ticks = sorted({v for v in ticks if v in nice} | {ticks[-1]})
        if len(ticks) > 2 and ticks[-1] / ticks[-2] < 1.2:
            ticks.pop(-2)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_locator(NullLocator())


def _positive(y):
    y = np.asarray(y, float)
    return np.where(y > 0, y, np.nan)


def _rows(config_result: dict, statistic: str) -> list:
    rows = config_result.get("per_depth", {}).get(statistic)
    if rows is None:
        raise ValueError(f"config_result has no per_depth table for statistic {statistic!r}")
    return rows


def plot_eta_star(config_result: dict) -> Figure:
    """Predicted vs measured ``eta*(L)`` of one campaign config, log-log.

    Left: measured ``eta*`` (markers, 95% bootstrap CI as error bars and a shaded band) and the
    calibrated law's prediction (line) for the arithmetic and the geometric mean over seeds.
    Calibration depths are drawn with open markers and grey vertical lines; held-out depths
    with filled markers.  Right: ``predicted / measured`` with the measured CI mapped to the
    same ratio, so a point whose band straddles 1 is inside the CI.

    ``config_result`` is one entry of ``summary.json["configs"]``: it needs ``name`` and
    ``per_depth[stat]`` rows with ``depth``, ``calibration``, ``eta_pred``, ``eta_meas`` and
    ``eta_meas_ci``; ``prediction_curve`` (dense ``depths`` and ``eta_<stat>``) is used for
    the predicted line when present.
    """
    fig = Figure(figsize=(11, 4.4), layout="constrained")
    ax, axr = fig.subplots(1, 2)
    curve = config_result.get("prediction_curve") or {}
    cal_marked = False
    for k, stat in enumerate(("mean", "geo")):
        try:
            rows = _rows(config_result, stat)
        except ValueError:
            continue
        if not rows:
            continue
        eta = _eta_columns(rows)
        # slight horizontal offset so the two statistics' error bars do not overlap
        shift = 1.0 + (0.02 if k else -0.02)
        _plot_eta_panel(ax, stat, eta, shift, curve)
        _plot_ratio_panel(axr, stat, eta, shift)
        if not cal_marked:
            _mark_calibration_depths(ax, axr, eta.d[eta.cal])
            cal_marked = True
    _finish_eta_axes(ax, axr, config_result)
    return fig


class _EtaColumns(NamedTuple):
    """The per-depth rows of one statistic as arrays (``pred`` NaN where there is no prediction)."""

    d: np.ndarray
    cal: np.ndarray
    meas: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    pred: np.ndarray


def _eta_columns(rows: list) -> _EtaColumns:
    """Depths, calibration flags, measured eta* with its CI and predicted eta* of ``per_depth`` rows."""
    return _EtaColumns(
        d=np.array([r["depth"] for r in rows], float),
        cal=np.array([bool(r["calibration"]) for r in rows]),
        meas=np.array([r["eta_meas"] for r in rows], float),
        lo=np.array([r["eta_meas_ci"][0] for r in rows], float),
        hi=np.array([r["eta_meas_ci"][1] for r in rows], float),
        pred=np.array([np.nan if r["eta_pred"] is None else r["eta_pred"] for r in rows], float))


def _plot_eta_panel(ax, stat: str, eta: _EtaColumns, shift: float, curve: dict) -> None:
    """Left panel, one statistic: measured eta* (band, error bars; open at calibration depths) and the prediction."""
    col = _COLORS[stat]
    ax.fill_between(eta.d, eta.lo, eta.hi, color=col, alpha=0.15, lw=0)
    for mask, filled in ((~eta.cal, True), (eta.cal, False)):
        if mask.any():
            ax.errorbar(eta.d[mask] * shift, eta.meas[mask],
                        yerr=[eta.meas[mask] - eta.lo[mask], eta.hi[mask] - eta.meas[mask]],
                        fmt="o", ms=5, color=col, mfc=col if filled else "white", capsize=2, lw=1,
                        label=f"measured, {_LABELS[stat]}" + ("" if filled else " (calibration)"))
    if curve.get(f"eta_{stat}") is not None:
        ax.plot(curve["depths"], curve[f"eta_{stat}"], "-", color=col, lw=1.5,
                label=f"predicted, {_LABELS[stat]}")
    elif np.isfinite(eta.pred).any():
        ax.plot(eta.d, eta.pred, "-", color=col, lw=1.5, label=f"predicted, {_LABELS[stat]}")


def _plot_ratio_panel(axr, stat: str, eta: _EtaColumns, shift: float) -> None:
    """Right panel, one statistic: predicted / measured, with the measured CI mapped to the same ratio."""
    col = _COLORS[stat]
    axr.fill_between(eta.d, eta.pred / eta.hi, eta.pred / eta.lo, color=col, alpha=0.15, lw=0)
    for mask, filled in ((~eta.cal, True), (eta.cal, False)):
        if mask.any():
            axr.plot(eta.d[mask] * shift, eta.pred[mask] / eta.meas[mask], "o", ms=5, color=col,
                     mfc=col if filled else "white")
    axr.plot(eta.d, eta.pred / eta.meas, "-", color=col, lw=0.8, label=_LABELS[stat])


def _mark_calibration_depths(ax, axr, depths) -> None:
    """A grey vertical line at each calibration depth, on both panels."""
    for dc in depths:
        ax.axvline(dc, color="0.8", lw=0.8, zorder=0)
        axr.axvline(dc, color="0.8", lw=0.8, zorder=0)


def _finish_eta_axes(ax, axr, config_result: dict) -> None:
    """Log axes with integer depth ticks, labels, titles and legends of :func:`plot_eta_star`'s panels."""
    depths_all = [r["depth"] for stat in ("mean", "geo") for r in config_result.get("per_depth", {}).get(stat, [])]
    from amutheory.families import result_family

    blocks = result_family(config_result).counts_blocks  # depth = K blocks
    sym = "K" if blocks else "L"
    for a in (ax, axr):
        a.set_xscale("log")
        a.set_xlabel("blocks K" if blocks else "depth L")
        if depths_all:
            _integer_ticks(a, depths_all)
    ax.set_yscale("log")
    ax.set_ylabel(r"$\eta^\star = \sqrt{C/\bar s}$")
    exp = config_result.get("derived_exponent", "")
    ax.set_title(f"{config_result.get('name', '')}: eta*({sym}), derived exponent {exp}")
    ax.legend(fontsize=7, loc="best")
    axr.axhline(1.0, color="k", lw=0.8)
    axr.set_ylabel("predicted / measured  (band: measured 95% CI)")
    axr.set_title(f"open markers / grey lines: calibration {sym}")
    axr.legend(fontsize=7, loc="best")


def plot_layer_profiles(spec, profiles_mean: dict, constants: dict, title: str | None = None) -> Figure:
    """Per-layer measured ``s_l`` vs the calibrated law, one panel per depth.

    ``profiles_mean`` maps ``depth -> s_l`` (per-layer statistic over seeds, length ``depth``);
    pass 2-3 depths.  ``constants`` are :class:`~amutheory.constants.Constant` objects with at
    least ``a, b, e, epsilon, gamma`` (a calibration's).  Each panel shows the measured values,
    the predicted total and its coherent (``a``, ~l^2) and accumulated-fluctuation (``b``, ~l^3)
    parts from :func:`amutheory.api.predicted_layer_profile` (and the local part when > 0).
    ``title``: optional figure title.
    """
    from amutheory.api import predicted_layer_profile

    depths = sorted(int(d) for d in profiles_mean)
    if not depths:
        raise ValueError("profiles_mean must hold at least one depth")
    fig = Figure(figsize=(4.2 * len(depths), 4.0), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(depths), squeeze=False)[0])
    for ax, d in zip(axes, depths):
        meas = np.asarray(profiles_mean[d], float)
        if meas.shape != (d,):
            raise ValueError(f"profiles_mean[{d}] must have length {d}, got shape {meas.shape}")
        parts = predicted_layer_profile(spec.with_(depth=d), constants)
        layers = parts["layer"]
        ax.plot(layers, meas, "ko", ms=4, label="measured")
        ax.plot(layers, parts["total"], "-", color="tab:red", lw=1.5, label="predicted total")
        ax.plot(layers, _positive(parts["coherent"]), "--", color="tab:blue", lw=1, label="coherent (a, ~l^2)")
        ax.plot(layers, _positive(parts["fluctuation"]), ":", color="tab:green", lw=1.5,
                label="fluctuation (b, ~l^3)")
        if np.any(parts["local"] > 0):
            ax.plot(layers, _positive(parts["local"]), "-.", color="0.5", lw=1, label="local (e)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        top = np.nanmax(np.concatenate([meas, _positive(parts["total"])]))
        bottom = np.nanmin(np.concatenate([meas[meas > 0], _positive(parts["total"])]))
        ax.set_ylim(bottom / 1e3, top * 3)  # parts far below the total are cut off
        _integer_ticks(ax, layers)
        ax.set_xlabel("layer l")
        ax.set_title(f"L = {d}")
    axes[0].set_ylabel("s_l")
    if title:
        fig.suptitle(title, fontsize=10)
    axes[0].legend(fontsize=7, loc="best")
    return fig


_MARKERS = ("o", "s", "^", "D", "v", "P")
_DASHES = ("-", "--", ":", "-.")


def plot_boundary_collapse(zero_results: list) -> Figure:
    """Measured zero/circular ratio of ``s_bar`` (arithmetic mean over seeds, 95% CI error bars)
    against the boundary regime parameter, one series per ``(N, k)``, with the predicted ratio
    (lines: the exact infinite-width law, :func:`amutheory.api.zero_padding_factor`).  Left: against ``L k^2 / N^2``; right: against
    ``sqrt(L) k / N`` (its square root: the same ordering, the early ``k sqrt(L) / N`` deficit
    scale on the axis).  If the regime parameter is the right one, the series collapse onto one
    curve.

    ``zero_results``: zero-padding entries of ``summary.json["configs"]``; each needs ``spec``
    (``kernel``, ``spatial``), ``ratio["mean"]`` rows with ``depth``, ``ratio_meas``,
    ``ratio_meas_ci`` and ``ratio_pred``, and optionally ``ratio_curve`` (dense ``depths`` and
    ``ratio_mean``) for the predicted line.
    """
    if not zero_results:
        raise ValueError("zero_results must hold at least one zero-padding config result")
    fig = Figure(figsize=(11, 4.6), layout="constrained")
    axes = fig.subplots(1, 2)
    spatials = sorted({r["spec"]["spatial"] for r in zero_results})
    kernels = sorted({r["spec"]["kernel"] for r in zero_results})
    xfns = (lambda L, k, n: L * k**2 / n**2, lambda L, k, n: np.sqrt(L) * k / n)
    for res in zero_results:
        n, k = res["spec"]["spatial"], res["spec"]["kernel"]
        col = f"C{spatials.index(n) % 10}"
        mk, ls = _MARKERS[kernels.index(k) % len(_MARKERS)], _DASHES[kernels.index(k) % len(_DASHES)]
        rows = res.get("ratio", {}).get("mean") or []
        d = np.array([r["depth"] for r in rows], float)
        meas = np.array([r["ratio_meas"] for r in rows], float)
        lo = np.array([r["ratio_meas_ci"][0] for r in rows], float)
        hi = np.array([r["ratio_meas_ci"][1] for r in rows], float)
        curve = res.get("ratio_curve") or {}
        if curve.get("ratio_mean") is not None:
            cd = np.asarray(curve["depths"], float)
            cr = _positive([np.nan if v is None else v for v in curve["ratio_mean"]])
        else:
            cd = d
            cr = _positive([np.nan if r["ratio_pred"] is None else r["ratio_pred"] for r in rows])
        label = f"N={n}, k={k}"
        for ax, fx in zip(axes, xfns):
            ax.errorbar(fx(d, k, n), meas, yerr=[meas - lo, hi - meas], fmt=mk, ms=5, color=col,
                        mfc="white" if kernels.index(k) else col, capsize=2, lw=1, label=f"measured, {label}")
            ax.plot(fx(cd, k, n), cr, ls, color=col, lw=1.2, label=f"predicted, {label}")
    for ax, xl in zip(axes, (r"regime parameter $L k^2 / N^2$", r"$\sqrt{L}\, k / N$")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xlabel(xl)
        ax.set_ylabel(r"$\bar s_{zero} / \bar s_{circular}$ (mean over seeds)")
    axes[0].set_title("zero / circular s_bar: markers measured (95% CI), lines exact law")
    axes[1].set_title("same data against sqrt(L) k / N")
    axes[1].legend(fontsize=6, loc="best", ncol=2)
    return fig


_BRANCH_STYLE = {"conv": ("tab:blue", "o"), "conv-mlp": ("tab:green", "s"), "preact": ("tab:red", "^")}


def plot_resnet_eta_star(resnet_results: list) -> Figure:
    """Measured ``eta*(K)`` of residual configs, one panel per init convention, one series per
    branch, log-log.

    Markers: the arithmetic mean over seeds with its 95% CI as error bars; filled for
    forward-stable configs, with the calibrated derived law as a line (``prediction_curve``) and,
    where the dense law covers the config, the calibrated dense-shape law dashed
    (``dense_shape["prediction_curve"]``); open for forward-unstable ones (no law), labelled
    "unstable".

    ``resnet_results``: resnet entries of ``summary.json["configs"]``; each needs ``init``,
    ``branch``, ``forward_stable``, ``per_depth["mean"]`` rows (``depth``, ``eta_meas``,
    ``eta_meas_ci``) and optionally ``prediction_curve`` (dense ``depths``, ``eta_mean``).
    """
    if not resnet_results:
        raise ValueError("resnet_results must hold at least one resnet config result")
    inits = list(dict.fromkeys(r["init"] for r in resnet_results))
    fig = Figure(figsize=(3.6 * len(inits), 4.2), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(inits), squeeze=False)[0])
    depths_all = []
    for ax, init in zip(axes, inits):
        for res in (r for r in resnet_results if r["init"] == init):
            col, mk = _BRANCH_STYLE.get(res["branch"], ("0.3", "D"))
            rows = _rows(res, "mean")
            d = np.array([r["depth"] for r in rows], float)
            meas = np.array([r["eta_meas"] for r in rows], float)
            lo = np.array([r["eta_meas_ci"][0] for r in rows], float)
            hi = np.array([r["eta_meas_ci"][1] for r in rows], float)
            depths_all += d.tolist()
            stable = bool(res.get("forward_stable"))
            label = res["branch"] + ("" if stable else " (unstable)")
            ax.errorbar(d, meas, yerr=[meas - lo, hi - meas], fmt=mk, ms=5, color=col,
                        mfc=col if stable else "white", capsize=2, lw=1, label=label)
            curve = res.get("prediction_curve") or {}
            if stable and curve.get("eta_mean") is not None:
                ax.plot(curve["depths"], _positive([np.nan if v is None else v for v in curve["eta_mean"]]),
                        "-", color=col, lw=1.2)
            shape = ((res.get("dense_shape") or {}).get("prediction_curve") or {})
            if stable and shape.get("eta_mean") is not None:
                ax.plot(shape["depths"], _positive([np.nan if v is None else v for v in shape["eta_mean"]]),
                        "--", color=col, lw=1.0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("blocks K")
        ax.set_title(f"init {init}", fontsize=10)
        ax.legend(fontsize=7, loc="best")
    for ax in axes:
        if depths_all:
            _integer_ticks(ax, depths_all)
    axes[0].set_ylabel(r"$\eta^\star$ (mean over seeds, 95% CI)")
    fig.suptitle("residual nets, measured eta*(K): filled = forward stable with the calibrated coherent law (line)\n"
                 "and dense-shape law (dashed), open = forward unstable (no law)", fontsize=9)
    return fig
