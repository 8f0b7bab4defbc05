"""Diagnostic S2 of ``validate/plans/FINITE_WIDTH.md`` (addendum 38; decides nothing): the linear MLP's seed spread of
``ln s_bar`` split into its infinite-width part, derived (``Var ln tr(K R K)`` over the inputs and loss directions,
:func:`amutheory.symbolic.primitives.spread.linear_mlp_spread`, the same at every depth), and the width's part, on run
A's recorded probes (``docs/findings/finite_width/probes.json``; no new probe).

    python validate/finite_width_spread.py     # docs/findings/finite_width/spread_s2.json (about 10 s)

``validate/finite_width_table.py report`` puts the result on the page.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PROBES = ROOT / "docs" / "findings" / "finite_width" / "probes.json"
OUT = ROOT / "docs" / "findings" / "finite_width" / "spread_s2.json"
C0, BATCH, OUTPUTS = 16, 8, 10          # run A's MLPs: 16 input features, batch 8, 10 outputs
RESAMPLES, BOOT_SEED = 2000, 0
COLLAPSE_WIDTHS, COLLAPSE_DEPTHS, COLLAPSE_FACTOR = (32, 64, 128), (4, 6, 8, 12, 16), 1.5


def bootstrap_var_se(y: np.ndarray, rng: np.random.Generator) -> float:
    """The seeds' variance's bootstrap standard error (:data:`RESAMPLES` resamples of the seeds)."""
    from amutheory.bootstrap import resample, seed_draws

    return float(np.std(np.var(resample(seed_draws(len(y), RESAMPLES, rng), y), axis=1, ddof=1), ddof=1))


def measure() -> dict:
    from amutheory.symbolic.primitives.spread import linear_mlp_spread

    oo = linear_mlp_spread(BATCH, C0, OUTPUTS)
    probes = json.loads(PROBES.read_text())
    rng = np.random.default_rng(BOOT_SEED)
    cells = []
    for key in sorted((k for k in probes if k.startswith("linear-")),
                      key=lambda k: (probes[k]["width"], probes[k]["depth"])):
        p = probes[key]
        y = np.log(np.asarray(p["s_bar"], dtype=float))
        var, se = float(np.var(y, ddof=1)), bootstrap_var_se(y, rng)
        n, L = int(p["width"]), int(p["depth"])
        width_part = var - oo["var_log"]
        cells.append({"width": n, "depth": L, "seeds": len(y), "var_ln_s_bar": var, "se": se,
                      "width_part": width_part, "width_part_n_over_L": width_part * n / L,
                      "z_against_infinite_width": (var - oo["var_log"]) / np.hypot(se, oo["var_log_se"])})
    return {"plan": "validate/plans/FINITE_WIDTH.md addendum 38", "infinite_width": oo, "cells": cells,
            "reading": reading(cells, oo)}


def reading(cells: list, oo: dict) -> dict:
    """The two readings fixed in addendum 38."""
    wide = next((c for c in cells if c["width"] == 128 and c["depth"] == 2), None)
    confirmed = wide is not None and abs(wide["z_against_infinite_width"]) <= 3
    ratios = [c["width_part_n_over_L"] for c in cells
              if c["width"] in COLLAPSE_WIDTHS and c["depth"] in COLLAPSE_DEPTHS]
    median = float(np.median(ratios)) if ratios else None
    collapse = bool(ratios) and median > 0 and all(median / COLLAPSE_FACTOR <= r <= median * COLLAPSE_FACTOR
                                                   for r in ratios)
    return {"infinite_width_part_confirmed": bool(confirmed),
            "width_128_depth_2_z": None if wide is None else wide["z_against_infinite_width"],
            "collapse": collapse, "median_width_part_n_over_L": median,
            "range_width_part_n_over_L": [min(ratios), max(ratios)] if ratios else None}


if __name__ == "__main__":
    d = measure()
    OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
    print(f"V_oo = {d['infinite_width']['var_log']:.4f} +- {d['infinite_width']['var_log_se']:.4f}")
    for c in d["cells"]:
        print(f"n={c['width']:4d} L={c['depth']:3d}  Var ln s_bar {c['var_ln_s_bar']:.3f} +- {c['se']:.3f}  "
              f"W {c['width_part']:+.3f}  W n/L {c['width_part_n_over_L']:+.2f}  z {c['z_against_infinite_width']:+.1f}")
    print(json.dumps(d["reading"], indent=1))
