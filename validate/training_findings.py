"""Write ``docs/findings/training.md`` from the training runs' own outputs (never typed by hand).

Reads the digits sweep's ``summary.json`` (``amutheory sweep ... --out results/digits-sweep``, the
command in ``validate/plans/PLAN_DIGITS_SWEEP.md``) and the benchmark's JSON
(``python validate/benchmark_training.py --json > results/benchmark_training.json``), copies the
sweep's figures to ``docs/figures/`` and writes the page.

    python validate/training_findings.py
    python validate/training_findings.py --sweep results/digits-sweep --benchmark results/benchmark_training.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SWEEP_COMMAND = ("amutheory sweep --family conv --dim 2 --padding zero --activation relu --width 16 --kernel 3 "
                 "--dataset digits --depths 2,4,8,16 --lr-range 0.003,3 --points 13 --refine 2 --seeds 3 "
                 "--steps 500 --batch-size 32 --optimizer sgd --out results/digits-sweep")


def _ci(c, fmt=".3g") -> str:
    return "n/a" if not c else f"[{c[0]:{fmt}}, {c[1]:{fmt}}]"


def benchmark_section(bench: dict) -> list[str]:
    lines = ["## The vectorised trainer against the loop", "",
             "`python validate/benchmark_training.py --json`: the same rates trained one run at a time and all at "
             "once, each mode in its own process on one torch thread.", "",
             "| net | loop (s/run) | vectorised (s/run) | ratio | peak MB loop / vectorised | max rel. score diff |",
             "|---|---|---|---|---|---|"]
    for r in bench["rows"]:
        lines.append(f"| {r['dim']}D width {r['width']} | {r['loop_s_per_run']:.3f} | {r['vectorised_s_per_run']:.3f} "
                     f"| {r['ratio']:.2f}x | {r['loop_peak_mb']:.0f} / {r['vectorised_peak_mb']:.0f} | "
                     f"{r['max_rel_score_diff']:.0e} |")
    lines += ["", "Where one run keeps the core busy with arithmetic (2D nets, wide 1D nets) the stacked "
              "convolutions do the same arithmetic at about the same rate, so the ratio is near 1; the gain is "
              "where per-operation overhead dominates. Score differences are float32 rounding compounding over "
              "the steps (largest near divergence); in float64 the engines agree to rounding (the tests check "
              "1e-9).", ""]
    return lines


def sweep_section(s: dict) -> list[str]:
    t = s["template"]
    lines = ["## A depth sweep on digits", "",
             f"Planned in `validate/plans/PLAN_DIGITS_SWEEP.md` before it ran. Command: `{SWEEP_COMMAND}`.", "",
             f"{s['cells']} cells of {t['steps']} steps, {s['forward_passes']} forward passes, "
             f"{s['train_seconds']:.0f} s of training over the workers, peak resident memory "
             f"{s['peak_rss_mb']:.0f} MB.", "",
             "| depth | eta*_train | 95% CI | eta*_grid | test accuracy there | flags |", "|---|---|---|---|---|---|"]
    for r in s["runs"]:
        acc = r.get("test_accuracy_at_grid_optimum")
        lines.append(f"| {r['depth']} | {r['eta_star_train']:.3g} | {_ci(r['eta_star_train_ci'])} | "
                     f"{r['eta_star_grid']:.3g} | {'n/a' if acc is None else f'{acc:.3f}'} | "
                     f"{', '.join(r['flags']) or '-'} |")
    for fit in s.get("depth_fit") or []:
        lines += ["", f"Exponent of eta*_train in depth (width {fit['width']}, every depth): **{fit['exponent']:.2f}**, "
                  f"95% CI {_ci(fit['exponent_ci'], '.2f')}."]
    lines += ["", "The same runs scored over their first T steps (exact: a run's first T steps are a T-step run):", "",
              "| T (steps) | exponent | 95% CI |", "|---|---|---|"]
    for h in s.get("horizons") or []:
        for fit in h.get("depth_fit") or []:
            if "exponent" in fit:
                lines.append(f"| {h['steps']} | {fit['exponent']:.2f} | {_ci(fit['exponent_ci'], '.2f')} |")
    lines += ["", "![loss against learning rate per depth](../figures/digits_sweep_transfer.png)",
              "![eta*_train against depth](../figures/digits_sweep_eta_star_depth.png)", ""]
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sweep", default="results/digits-sweep")
    p.add_argument("--benchmark", default="results/benchmark_training.json")
    p.add_argument("--out", default=str(ROOT / "docs" / "findings" / "training.md"))
    a = p.parse_args(argv)
    sweep, bench = Path(a.sweep), Path(a.benchmark)
    for path in (sweep / "summary.json", bench):
        if not path.is_file():
            print(f"training_findings: error: {path} not found (run the command in this script's docstring)",
                  file=sys.stderr)
            return 2
    figures = ROOT / "docs" / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    for name in ("transfer.png", "eta_star_depth.png"):
        shutil.copyfile(sweep / name, figures / f"digits_sweep_{name}")
    lines = ["# Training: measured findings", "",
             "Generated by `python validate/training_findings.py` from the runs' own outputs; do not edit.", ""]
    lines += benchmark_section(json.loads(bench.read_text()))
    lines += sweep_section(json.loads((sweep / "summary.json").read_text()))
    Path(a.out).write_text("\n".join(lines))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
