"""``tune.png``: per target depth, the bracket's seed-mean losses against the rate, the prior and the answer."""

from __future__ import annotations

import math


def bracket_plot(summary: dict):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    targets = summary["targets"]
    fig, axes = plt.subplots(1, len(targets), figsize=(4.2 * len(targets), 3.4), squeeze=False)
    for ax, t in zip(axes[0], targets):
        pts = [(r["lr"], r["loss_mean"], len(r["seeds"])) for r in t["rates"]]
        ok = [(a, b, n) for a, b, n in pts if b is not None]
        rungs = t.get("rungs") or []
        for j, h in enumerate(rungs[:-1]):  # the multi-fidelity search's shorter horizons, faint
            short = sorted((r["lr"], r["scores_by_horizon"][str(h)][0]) for r in t["rates"]
                           if str(h) in r.get("scores_by_horizon", {}) and r["scores_by_horizon"][str(h)][0] is not None)
            if short:
                ax.plot(*zip(*short), ".:", color="grey", alpha=0.4 + 0.3 * j, label=f"score at {h} steps")
        ax.plot([a for a, _, _ in ok], [b for _, b, _ in ok], "o-", color="C0", label="seed-mean loss")
        for a, b, n in ok:
            ax.annotate(str(n), (a, b), textcoords="offset points", xytext=(0, 5), fontsize=7, ha="center")
        bad = [r["lr"] for r in t["rates"] if r.get("scores") and any(v is None for v in r["scores"])]
        if bad and ok:
            ax.plot(bad, [max(b for _, b, _ in ok)] * len(bad), "x", color="C3", label="diverged")
        ax.axvline(t["prior"]["lr"], color="C2", ls="--", label=f"prior ({t['prior']['rule']})")
        if t["eta_star_train"] is not None:
            ax.axvline(t["eta_star_train"], color="C1", label="eta*_train")
            ci = t["eta_star_train_ci"]
            if ci:
                ax.axvspan(ci[0], ci[1], color="C1", alpha=0.15)
        chance = summary.get("chance_loss")
        if chance is not None and ok and max(b for _, b, _ in ok) > 0.5 * chance:
            ax.axhline(chance, color="grey", lw=0.8, ls=":", label="chance")
        ax.set_xscale("log")
        ax.set_xlabel("learning rate")
        ax.set_title(f"depth {t['depth']}: {t['stop']}, {t['runs']} runs")
        if math.isfinite(ax.get_ylim()[0]):
            ax.set_ylabel("mean training loss (seeds annotated)")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return fig
