"""The page of the tuning-cost benchmark: ``docs/findings/tuning_cost.md`` and its Pareto figure, from
``benchmark.json`` (written by ``python validate/tune_benchmark.py run``; the page's own copy is kept in
``docs/findings/tuning/`` so that the page regenerates without the run's cells)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np

ORDER = ("guided", "keep", "rule:am-mup", "rule:power", "rule:chen", "rule:depth-mup", "rule:completep",
         "rule:per-layer-mup", "range-test:steepest", "range-test:valley", "range-test:min/10", "halving", "optuna")


def _fmt(v, f=".3g"):
    return "n/a" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, f)


def _median(vals):
    vals = [v for v in vals if v is not None and math.isfinite(v)]
    return float(np.median(vals)) if vals else None


def summarise(rows: list) -> list[dict]:
    """One line per method over the held-out (net, depth) pairs whose reference resolves an optimum."""
    out = []
    for m in [m for m in ORDER if any(r["method"] == m for r in rows)]:
        rs = [r for r in rows if r["method"] == m and r["ref_resolved"]]
        out.append({"method": m, "pairs": len(rs), "lands": sum(r["lands"] for r in rs),
                    "in_ci": sum(r["in_ci"] for r in rs),
                    "median_distance": _median([r["distance"] for r in rs]),
                    "median_regret_over_noise": _median([r["regret"] / r["noise"] for r in rs
                                                         if r["regret"] is not None and r["noise"]]),
                    "off_grid_or_diverged": sum(r["regret"] is None for r in rs),
                    "runs": _median([r["cost"]["cells"] for r in rs]),
                    "max_runs": max((r["cost"]["cells"] for r in rs), default=None),
                    "steps": _median([r["cost"]["steps"] for r in rs]),
                    "forward_passes": _median([r["cost"]["forward_passes"] for r in rs]),
                    "core_seconds": _median([r["cost"]["core_seconds"] for r in rs])})
    return out


def pareto(summary: list, reference_cost: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    floor = 0.3
    for i, s in enumerate(summary):
        x = max(s["core_seconds"] or 0.0, floor)
        y = s["median_regret_over_noise"]
        if y is None:
            continue
        ax.plot(x, max(y, 1e-2), "o", color=f"C{i % 10}", ms=8)
        ax.annotate(f"{s['method']} ({s['lands']}/{s['pairs']})", (x, max(y, 1e-2)), textcoords="offset points",
                    xytext=(5, 3), fontsize=7)
    ax.axvline(reference_cost, color="grey", ls="--", lw=0.8)
    ax.annotate("reference grid (108 runs)", (reference_cost, 1e-2), fontsize=7, rotation=90, va="bottom")
    ax.axhline(1.0, color="grey", ls=":", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"core-seconds per target depth (median; free methods drawn at {floor})")
    ax.set_ylabel("median regret / reference seed noise")
    ax.set_title("Cost against outcome (landed / pairs in brackets)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_page(source: Path, page: Path, figures: Path) -> None:
    figures.mkdir(parents=True, exist_ok=True)
    kept = figures / "benchmark.json"
    if Path(source).is_file() and Path(source).resolve() != kept.resolve():
        shutil.copyfile(source, kept)
    data = json.loads(kept.read_text())
    rows, pilot = data["rows"], data["pilot"]
    summary = summarise(rows)
    ref_cost = _median(data.get("reference_core_seconds", [])) or 0.0
    pareto(summary, ref_cost or 1.0, figures / "pareto.png")
    guided = next((s for s in summary if s["method"] == "guided"), None)
    lines = ["# What it costs to land at the optimum at a new depth", "",
             "The plan, written before any cell ran: [TUNE_BENCHMARK.md](../../validate/plans/TUNE_BENCHMARK.md). "
             "Written by `python validate/tune_benchmark.py report` from `docs/findings/tuning/benchmark.json` "
             "(`python validate/tune_benchmark.py pilot` and `run` made it).", "",
             "A rate is tuned at depth 2 (a 12-rate sweep on seeds 100-102, not charged); each method then picks "
             "a rate at deeper depths. The reference is a dense grid of 36 rates over 3.5 decades x 3 seeds "
             "(108 runs) on seeds 0-2, disjoint from every search's. A method *lands* when its rate lies inside "
             "the reference's 95% CI of eta*_train or its regret (the reference's seed-mean loss at that rate minus "
             "its best) is at most the reference's seed noise (the half-width of its loss CI at the best rate).", "",
             "## The nets and their references", "",
             "| net | depth | reference eta*_train | 95% CI | flags | final loss at optimum | learns |",
             "|---|---|---|---|---|---|---|"]
    seen = set()
    for r in rows:
        k = (r["net"], r["depth"])
        if k in seen:
            continue
        seen.add(k)
        ci = r["ref_ci"]
        fl = r["ref_final_loss"]
        lines.append(f"| {r['net']} | {r['depth']} | {r['eta_star_ref']:.4g} | "
                     f"{'n/a' if not ci else f'[{ci[0]:.4g}, {ci[1]:.4g}]'} | {', '.join(r['ref_flags']) or '-'} | "
                     f"{_fmt(fl)} | {'n/a' if fl is None else ('yes' if fl <= 0.5 * math.log(10) else 'no')} |")
    lines += ["", "Sizes (pilot, seeds 900-902): " + "; ".join(
        f"{net}: depths {p['depths']}, reference range [{p['range'][0]:.3g}, {p['range'][1]:.3g}]"
        for net, p in pilot.items()) + ".", "",
        "## Every method", "",
        "Medians over the held-out (net, depth) pairs whose reference resolves an optimum. Cost is what the "
        "method's decision needed, per target depth (successive halving and Optuna: the steps their rungs read; "
        "the engine trained their runs to the end, see `cost_run` in the JSON).", "",
        "| method | landed | in CI | median \\|ln\\| distance | median regret / noise | off grid or diverged | "
        "runs (median, max) | steps | forward passes | core-s |",
        "|---|---|---|---|---|---|---|---|---|---|"]
    for s in summary:
        lines.append(f"| {s['method']} | {s['lands']}/{s['pairs']} | {s['in_ci']}/{s['pairs']} | "
                     f"{_fmt(s['median_distance'])} | {_fmt(s['median_regret_over_noise'])} | "
                     f"{s['off_grid_or_diverged']} | {_fmt(s['runs'], 'g')}, {_fmt(s['max_runs'], 'g')} | "
                     f"{_fmt(s['steps'], 'g')} | {_fmt(s['forward_passes'], 'g')} | {_fmt(s['core_seconds'])} |")
    lines += ["", "![cost against regret](tuning/pareto.png)", "", "## Per held-out depth", "",
              "| net | depth | " + " | ".join(s["method"] for s in summary) + " |",
              "|---|---|" + "---|" * len(summary)]
    for net, L in sorted(seen, key=lambda k: (k[0], k[1])):
        cells = []
        for s in summary:
            r = next((r for r in rows if r["net"] == net and r["depth"] == L and r["method"] == s["method"]), None)
            cells.append("-" if r is None else (("**Y**" if r["lands"] else "n") + f" {_fmt(r['distance'], '.2f')}"))
        lines.append(f"| {net} | {L} | " + " | ".join(cells) + " |")
    lines += ["", "Each cell: landed (Y/n) and the |ln| distance to the reference eta*_train.", "",
              "## Reading", ""]
    if guided is not None:
        ok = guided["pairs"] and guided["lands"] / guided["pairs"] >= 0.8 and (guided["max_runs"] or 0) <= 20
        lines.append(f"* **guided** lands at {guided['lands']} of {guided['pairs']} held-out depths "
                     f"({100 * guided['lands'] / max(guided['pairs'], 1):.0f}%) with at most {guided['max_runs']} "
                     f"runs per target (median {_fmt(guided['runs'], 'g')}; the reference: 108): the issue's bar "
                     f"(80%, at most 20 runs) is {'met' if ok else 'NOT met'}.")
        for s in summary:
            if s["method"] == "guided" or not s["pairs"]:
                continue
            cheaper = (s["core_seconds"] or 0.0) < (guided["core_seconds"] or 0.0)
            if cheaper and s["lands"] >= guided["lands"]:
                lines.append(f"* **{s['method']}** is as good for less: it lands at {s['lands']}/{s['pairs']} "
                             f"for a median {_fmt(s['core_seconds'])} core-s against guided's "
                             f"{_fmt(guided['core_seconds'])}.")
    page.write_text("\n".join(lines) + "\n")
