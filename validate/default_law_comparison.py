"""The default law of ``predict`` against the old default, on the same measured nets.

Question: on every config of the ``full-cpu`` preset (the whole CPU campaign; it was called ``quick``
before issue 33, when this comparison was run: today's few-minute ``quick`` preset is a different,
smaller set of configs), is the prediction of ``predict``'s default (the
most exact registered law that covers the net within the cost budget, :func:`amutheory.laws.best_law`)
at the held-out depths no worse than the old default's (the family's coherent law, calibrated)?

Where both defaults choose the same law the two predictions are the same computation, identical by
construction; the script says so from :func:`best_law` alone (no measurement needed).  Where they
differ, both are made from the campaign's own measurements (its calibration nets for the calibrated
law), and each is compared with the measured seed mean at the held-out depths.

    amutheory validate --preset full-cpu --only conv1d-linear --only conv2d-linear --only zero1d-linear-N8-k3 \
        --only resnet-conv-k-last-linear --only resnet-conv-mlp-k-last-linear --only resnet-preact-k-last-linear \
        --out results/full-cpu-linear
    python validate/default_law_comparison.py results/full-cpu-linear --out docs/findings/default_law.md

The folder is a ``validate --preset full-cpu`` run (the preset's own seeds; any subset of its configs, here the
ones whose default is not the calibrated law); configs whose laws differ but that the folder does not hold are
listed as not measured.  First run for issue 32 (on ``results/quick-linear``, the same configs measured under the
preset's old name ``quick``); rerun for issue 50 once the linear circular chains' default became
``chain-finite-width`` (plan: ``validate/plans/FINITE_WIDTH.md``, addendum 22).  The ReLU chains of this preset are
at widths 128 and 256, where the default is still the calibrated law; the comparison at widths 32-64 is runs I, Q,
L and R of ``docs/findings/finite_width.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from amutheory import predict
from amutheory.api import Measurement
from amutheory.campaign.presets import PRESETS
from amutheory.campaign.results import load_measurement, read_results
from amutheory.laws import best_law, resolve_law


def calibration_measurement(folder: Path, cfg, blocks) -> Measurement:
    """The nets the calibrated law is fitted on: a zero config's circular references, else the
    config's own nets at its calibration depths."""
    if cfg.is_zero:
        return load_measurement(folder / "results.csv", cfg, padding="circular", blocks=blocks)
    meas = load_measurement(folder / "results.csv", cfg, blocks=blocks)
    cal = list(cfg.calibration_depths)
    return Measurement(meas.spec, cal, meas.seeds, {d: meas.profiles[d] for d in cal}, meas.C)


def compare(folder: Path, cfg, blocks) -> dict:
    """Both defaults' predictions at the held-out depths of ``cfg`` against its measured means."""
    held = cfg.held_out_depths
    meas = load_measurement(folder / "results.csv", cfg, blocks=blocks)
    cal = calibration_measurement(folder, cfg, blocks)
    spec = cfg.spec.with_(depth=max(held))
    old = predict(spec, held, constants="calibrate", law="coherent", calibration_measurement=cal)
    new = predict(spec, held, calibration_measurement=cal)
    means = np.array([meas.s_bar(d).mean() for d in held])
    ses = np.array([meas.s_bar(d).std(ddof=1) / np.sqrt(len(meas.seeds)) for d in held])
    old_err, new_err = np.array(old.s_bar) / means - 1, np.array(new.s_bar) / means - 1
    z_old, z_new = old_err * means / ses, new_err * means / ses  # errors in standard errors of the measured mean
    return {"config": cfg.name, "held_out": held, "law_new": new.law_choice["law"], "law_old": "coherent (calibrated)",
            "measured_rel_se": (ses / means).tolist(), "rel_error_old": old_err.tolist(),
            "rel_error_new": new_err.tolist(), "max_abs_old": float(np.max(np.abs(old_err))),
            "max_abs_new": float(np.max(np.abs(new_err))),
            "no_worse": bool(np.max(np.abs(new_err)) <= np.max(np.abs(old_err))),
            "max_abs_z_old": float(np.max(np.abs(z_old))), "max_abs_z_new": float(np.max(np.abs(z_new))),
            "no_worse_z": bool(np.max(np.abs(z_new)) <= np.max(np.abs(z_old)))}


def old_law_name(family: str) -> str:
    """The registered law the old default ran for ``family``: its coherent law, calibrated."""
    return resolve_law(family, "coherent", "calibrate")


def run(folder: Path) -> list[dict]:
    blocks, _ = read_results(folder / "results.csv") if (folder / "results.csv").exists() else ({}, 0)
    rows = []
    for cfg in PRESETS["full-cpu"]:
        held = cfg.held_out_depths
        try:
            choice = best_law(cfg.spec, held, calibration_depths=cfg.calibration_depths, calibration_seeds=32)
        except ValueError as exc:  # e.g. forward-unstable residual nets: neither default has a law
            rows.append({"config": cfg.name, "status": "no law", "why": str(exc)[:160]})
            continue
        if choice.law.name == old_law_name(cfg.spec.family):
            rows.append({"config": cfg.name, "status": "same law", "law_new": choice.law.name,
                         "passed_over": [d["law"] for d in choice.skipped + choice.not_default]})
            continue
        try:
            rows.append({"status": "compared", **compare(folder, cfg, blocks)})
        except ValueError as exc:
            rows.append({"config": cfg.name, "status": "not measured", "law_new": choice.law.name, "why": str(exc)})
    return rows


def markdown(rows: list[dict], command: str) -> str:
    pct = lambda x: f"{100 * x:+.1f}%"  # noqa: E731
    out = ["# The default law against the old default (full-cpu preset, formerly quick)", "",
           f"Generated by `{command}`.", "",
           "Held-out error: the prediction over the measured seed mean, minus one, at each held-out depth "
           "(the measured mean's own relative standard error beside it).  Two criteria: the largest |error| "
           "(planned first), and the largest |error| in standard errors of the measured mean, |z| (added after "
           "the first run showed per-depth standard errors of 7-27%: it weighs each depth by its noise).  The "
           "measured folder is an `amutheory validate --preset full-cpu` run on the preset's own seeds (this script's "
           "docstring has the command); ReLU chains at widths 32-64, where `predict`'s default needs no probe, are "
           "compared in [finite_width.md](finite_width.md) (runs I, Q, L, R).", "",
           "| config | default law | held-out depths | old default (coherent, calibrated) | new default | measured se | "
           "max abs error old / new | no worse | max abs z old / new | no worse (z) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["status"] == "compared":
            out.append(f"| {r['config']} | {r['law_new']} | {r['held_out']} | "
                       f"{', '.join(pct(e) for e in r['rel_error_old'])} | {', '.join(pct(e) for e in r['rel_error_new'])}"
                       f" | {', '.join(f'{100 * s:.1f}%' for s in r['measured_rel_se'])} | "
                       f"{100 * r['max_abs_old']:.1f}% / {100 * r['max_abs_new']:.1f}% | "
                       f"{'yes' if r['no_worse'] else '**no**'} | {r['max_abs_z_old']:.2f} / {r['max_abs_z_new']:.2f} | "
                       f"{'yes' if r['no_worse_z'] else '**no**'} |")
    out += ["", "Configs where both defaults take the same law (the same computation, identical predictions):", ""]
    out += [f"* {r['config']}: {r['law_new']}" + (f" (passed over: {', '.join(r['passed_over'])})"
                                                   if r["passed_over"] else "") for r in rows if r["status"] == "same law"]
    rest = [r for r in rows if r["status"] in ("no law", "not measured")]
    if rest:
        out += ["", "Not compared:", ""] + [f"* {r['config']}: {r['status']} ({r['why']})" for r in rest]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="a validate --preset full-cpu folder (results.csv)")
    ap.add_argument("--out", type=Path, default=None, help="write the markdown table here")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args(argv)
    if args.out is not None and not args.out.parent.is_dir():
        ap.error(f"--out: folder {args.out.parent} does not exist")
    rows = run(args.folder)
    text = markdown(rows, "python validate/default_law_comparison.py " + " ".join(argv or sys.argv[1:]))
    if args.out is not None:
        args.out.write_text(text)
    print(json.dumps(rows, indent=1) if args.json else text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
