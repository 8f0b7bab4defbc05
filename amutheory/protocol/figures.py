"""Figures of a protocol run, drawn from its summary:

* ``transfer_rules.png``: eta*_train (with CIs) and the probe's eta*_onestep (scaled by the ratio
  calibrated at the shallow depths) against depth on log-log axes, each rule's zero-shot
  prediction as a line, the calibration depths shaded;
* ``bridge.png``: eta*_train / eta*_onestep against depth, one line per training horizon, and the
  fitted exponent of eta*_train against the horizon beside the one-step exponent;
* ``claims.png``: every exponent claim's fitted exponent with its CI against the claimed value.

(Each study's loss-vs-lr figure with the optima marked is in its own folder, ``transfer.png``.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from amutheory.train.figures import _plt


def _axes(ax, xlabel: str, ylabel: str, title: str, logy: bool = False, legend=None) -> None:
    ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(**(legend or {"fontsize": 8}))
    ax.grid(alpha=0.3, which="both")


def transfer_rules_plot(t: dict, rows: list):
    """``rows``: the transfer study's rows (eta*_train and its CI at every depth)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.2, 4.8))
    cal = t["calibration"]
    ax.axvspan(min(cal) * 0.95, max(cal) * 1.05, color="0.9", label="calibration depths")
    cmap = plt.get_cmap("tab10")
    for i, (name, r) in enumerate(t["rules"].items()):
        ax.plot([row["depth"] for row in r["rows"]], [row["predicted"] for row in r["rows"]], "-",
                color=cmap(i % 10), lw=1.4, label=f"{name} ({r['verdict']})")
    ok = [r for r in rows if r["eta_star_train"] is not None]
    y = np.array([r["eta_star_train"] for r in ok])
    err = np.array([[v - (r["eta_star_train_ci"] or [v, v])[0], (r["eta_star_train_ci"] or [v, v])[1] - v]
                    for r, v in zip(ok, y)]).T
    ax.errorbar([r["depth"] for r in ok], y, yerr=err, fmt="ko", ms=4, capsize=2, zorder=5,
                label="eta*_train, fresh sweeps (95% CI)")
    _axes(ax, "depth L", "learning rate", "zero-shot transfer across depth: predictions vs fresh sweeps", logy=True,
          legend=dict(fontsize=7, ncol=2))
    depths = sorted({r["depth"] for r in rows})
    ax.set_xticks(depths, [str(d) if i % max(1, len(depths) // 8) == 0 else "" for i, d in enumerate(depths)])
    ax.minorticks_off()
    fig.tight_layout()
    return fig


def bridge_plot(t: dict):
    plt = _plt()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4.2))
    b = t["bridge"]["onestep-mean"]
    cmap = plt.get_cmap("viridis")
    horizons = sorted(b, key=int)
    for i, T in enumerate(horizons):
        row = b[T]
        y = np.array([np.nan if v is None else v for v in row["ratio"]], float)
        a1.plot(row["depths"], y, "o-", ms=3, color=cmap(i / max(1, len(horizons) - 1)), label=f"T = {T} steps")
    _axes(a1, "depth L", "eta*_train / eta*_onestep (probe, seed mean)", "the bridge against depth", logy=True)
    exps = t["bridge_exponents"]
    fits = [(int(T), f) for T, f in sorted(exps["train"].items(), key=lambda kv: int(kv[0])) if f]
    e = np.array([f["exponent"] for _, f in fits])
    ci = np.array([f["exponent_ci"] or [np.nan, np.nan] for _, f in fits])
    a2.errorbar([T for T, _ in fits], e, yerr=[e - ci[:, 0], ci[:, 1] - e], fmt="o-", capsize=3,
                label="eta*_train (95% CI)")
    for stat, style in (("onestep-mean", "--"), ("onestep-typical", ":")):
        if exps.get(stat):
            a2.axhline(exps[stat]["exponent"], ls=style, color="C1" if stat.endswith("mean") else "C2",
                       label=f"one-step probe, {stat.split('-')[1]}")
    a2.axhline(-1.5, color="0.5", lw=0.8, label="-3/2")
    _axes(a2, "training horizon T (steps)", "fitted depth exponent", "the depth exponent against the horizon")
    fig.tight_layout()
    return fig


def claims_plot(summary: dict):
    plt = _plt()
    rows = [c for c in summary["claims"] if c["kind"] == "exponent" and c.get("fit")]
    fig, ax = plt.subplots(figsize=(7.2, 0.5 * len(rows) + 1.4))
    for i, c in enumerate(rows):
        f = c["fit"]
        ci = f["exponent_ci"] or [f["exponent"]] * 2
        ax.plot(ci, [i, i], "-", color="C0", lw=2)
        ax.plot([f["exponent"]], [i], "o", color="C0")
        ax.plot([c["expected"]], [i], "|", color="C3", ms=14, mew=2)
    ax.set_yticks(range(len(rows)), [f"{c['name']} ({c['verdict']})" for c in rows], fontsize=8)
    ax.set_xlabel("fitted exponent of eta*_train (95% CI); red bar: the claimed value")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def write_figures(folder: Path, summary: dict) -> list[str]:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    t = summary["transfer"]
    names = []
    for name, draw in (("transfer_rules.png", lambda: transfer_rules_plot(t, summary["studies"][t["study"]]["rows"])),
                       ("bridge.png", (lambda: bridge_plot(t)) if "bridge" in t else None),
                       ("claims.png", lambda: claims_plot(summary))):
        if draw is None:
            continue
        fig = draw()
        fig.savefig(folder / name, dpi=110)
        names.append(name)
        import matplotlib.pyplot as plt

        plt.close(fig)
    return names
