"""The coord check's figure: a panel per training step, a line per module group, the layer-averaged
update size against depth on log axes (the seed geometric mean; one line per width when several)."""

from __future__ import annotations

import math

from amutheory.coord.reading import group_updates


def plot_coord(records, path) -> None:
    """Write the figure to ``path`` (matplotlib's Agg backend: no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from matplotlib.ticker import NullFormatter, ScalarFormatter

    steps = sorted({r["step"] for r in records if r["step"] > 0})
    all_depths = sorted({r["depth"] for r in records})
    widths = sorted({r["width"] for r in records}, key=lambda w: -1 if w is None else w)
    fig, axes = plt.subplots(1, max(1, len(steps)), figsize=(4.2 * max(1, len(steps)), 3.6), squeeze=False)
    for ax, step in zip(axes[0], steps):
        plotted = False  # a finite positive size: what a log axis can show (a diverged run has none)
        for group, values in sorted(group_updates(records, step).items()):
            for width in widths:
                depths = sorted({L for L, n, _ in values if n == width})
                ys = []
                for L in depths:
                    logs = [math.log(u) for (d, n, _), u in values.items()
                            if d == L and n == width and 0 < u < math.inf]
                    ys.append(math.exp(sum(logs) / len(logs)) if logs else math.nan)
                plotted = plotted or any(0 < y < math.inf for y in ys)
                label = group if len(widths) == 1 else f"{group} (width {width})"
                ax.plot(depths, ys, marker="o", label=label)
        ax.set_xscale("log")
        if plotted:
            ax.set_yscale("log")
        else:
            ax.text(0.5, 0.5, "no finite update size\n(the training diverged)", ha="center", va="center",
                    transform=ax.transAxes)
        ax.set_xticks(all_depths)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("depth L")
        ax.set_title(f"step {step}")
    axes[0][0].set_ylabel("update size (RMS change of the output)")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
