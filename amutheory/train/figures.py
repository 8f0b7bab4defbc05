"""Figures of a sweep, each returning a matplotlib Figure (saving is the caller's).

* :func:`transfer_plot`: the score against the learning rate on log axes, one curve per depth
  (or width), a band of +-1.96 standard errors over seeds, the sub-grid optimum ``eta*_train``
  marked with a star, and rates where a seed diverged drawn as crosses along the top.
* :func:`eta_star_plot`: ``eta*_train`` against depth (or width) on log-log axes, the bootstrap
  CI as error bars and the fitted power law with its exponent and CI in the legend.
"""

from __future__ import annotations

import numpy as np


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


_RULE_MARKERS = "v^<>dPXhs"


def transfer_plot(searches, by: str = "depth", score: str = "mean", chance: float | None = None,
                  learns: dict | None = None, overlay: dict | None = None):
    """``chance``: the chance loss ln(classes), drawn as a dashed line; ``learns[(depth, width)]``
    false marks a curve "does not learn" in the legend; ``overlay`` (``summary["transfer_from"]``):
    each rule's transferred rate on each curve, one marker per rule."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    cmap = plt.get_cmap("viridis")
    finite_all = np.concatenate([s.loss_mean[np.isfinite(s.loss_mean)] for s in searches] or [np.array([1.0])])
    top = float(finite_all.max()) if finite_all.size else 1.0
    for i, s in enumerate(searches):
        color = cmap(i / max(1, len(searches) - 1))
        label = f"{by} {s.depth if by == 'depth' else s.width}"
        if learns is not None and learns.get((s.depth, s.width)) is False:
            label += " (does not learn)"
        ok = np.isfinite(s.loss_mean)
        ax.plot(s.lrs[ok], s.loss_mean[ok], "o-", ms=3, color=color, label=label)
        band = [(c is not None) for c in s.loss_ci]
        if any(band):
            lo = np.array([c[0] if c else np.nan for c in s.loss_ci])
            hi = np.array([c[1] if c else np.nan for c in s.loss_ci])
            ax.fill_between(s.lrs, lo, hi, color=color, alpha=0.2, lw=0)
        div = s.diverged > 0
        if div.any():
            ax.plot(s.lrs[div], np.full(div.sum(), top * 1.05), "x", color=color, ms=6)
        if np.isfinite(s.eta_star_train):
            y = np.interp(np.log(s.eta_star_train), np.log(s.lrs[ok]), s.loss_mean[ok])
            ax.plot([s.eta_star_train], [y], "*", color=color, ms=14, mec="black", mew=0.6)
    if chance is not None:
        ax.axhline(chance, ls="--", lw=1, color="0.4", label="chance ln(classes)")
    if overlay:
        _draw_overlay(ax, searches, overlay, cmap)
    ax.set_xscale("log")
    ax.set_xlabel("learning rate")
    ax.set_ylabel("mean training loss over the run" if score == "mean" else "final training loss (last tenth)")
    ax.set_title("loss vs learning rate (star: eta*_train; x: a seed diverged)"
                 + (f"\nmarkers: each rule's rate from lr {overlay['lr']:g} at depth {overlay['from_depth']}"
                    if overlay else ""), fontsize=9 if overlay else None)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig


def _draw_overlay(ax, searches, overlay: dict, cmap) -> None:
    """Each rule's transferred rate on its run's curve (on the grid: at its interpolated loss)."""
    rows = {(r["depth"], r["width"]): r for r in overlay["rows"]}
    rules = list(overlay["rules"])
    for i, s in enumerate(searches):
        color = cmap(i / max(1, len(searches) - 1))
        row = rows.get((s.depth, s.width))
        for j, rule in enumerate(rules if row else ()):
            r = row["rules"][rule]
            if r["loss"] is not None:
                ax.plot([r["lr"]], [r["loss"]], _RULE_MARKERS[j % len(_RULE_MARKERS)], color=color, ms=6,
                        mec="black", mew=0.5)
    for j, rule in enumerate(rules):
        ax.plot([], [], _RULE_MARKERS[j % len(_RULE_MARKERS)], color="white", mec="black", label=rule)


def eta_star_plot(searches, fits, axis: str = "depth"):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.6, 4.2))
    other = "width" if axis == "depth" else "depth"
    for fit in fits:
        sel = [s for s in searches if getattr(s, other) == fit[other]]
        xs = np.array([getattr(s, axis) for s in sel], float)
        eta = np.array([s.eta_star_train for s in sel])
        ci = [s.eta_star_train_ci for s in sel]
        lo = np.array([eta[i] - c[0] if c else 0 for i, c in enumerate(ci)])
        hi = np.array([c[1] - eta[i] if c else 0 for i, c in enumerate(ci)])
        bars = ax.errorbar(xs, eta, yerr=[np.maximum(lo, 0), np.maximum(hi, 0)], fmt="o", capsize=3,
                           label=f"{other} {fit[other]}: eta*_train (95% CI)")
        if "exponent" in fit:
            grid = np.geomspace(xs.min(), xs.max(), 50)
            ci_text = "" if not fit.get("exponent_ci") else \
                f" [{fit['exponent_ci'][0]:.2f}, {fit['exponent_ci'][1]:.2f}]"
            ax.plot(grid, fit["prefactor"] * grid ** fit["exponent"], "-", color=bars[0].get_color(),
                    label=f"fit: exponent {fit['exponent']:.2f}{ci_text}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    ticks = sorted({getattr(s, axis) for s in searches})
    ax.set_xticks(ticks)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(axis)
    ax.set_ylabel("eta*_train")
    ax.set_title(f"best learning rate of training against {axis}")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig
