"""Study P of ``validate/plans/FINITE_WIDTH.md`` (addendum 13): how often ``measure``'s 95% intervals -- the
percentile bootstrap of the seed mean of ``s_bar`` and of its geometric mean -- cover the truth at narrow width.

    python validate/finite_width_coverage.py   # resumes per cell; writes docs/findings/finite_width/coverage_p.json

The mean's truth is the exact finite-width law; the geometric mean's is ``exp`` of the mean of ``ln s_bar`` over
every seed of the cell.  ``validate/finite_width_table.py report`` puts the result on the page.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "findings" / "finite_width" / "coverage_p.json"
REPLICATES, PER_REPLICATE, FIRST_SEED = 64, 256, 150000
LEVEL, UNDER = 0.95, 0.895   # undercovers below 95% less two binomial standard errors at 64 replicates
#: cell -> (ArchSpec keywords, depth, the exact law)
CELLS = {
    "linear MLP, width 16, L = 8": (dict(family="mlp", width=16, activation="linear", input_channels=16, batch=8), 8,
                                    "mlp-finite-width"),
    "linear MLP, width 16, L = 16": (dict(family="mlp", width=16, activation="linear", input_channels=16, batch=8), 16,
                                     "mlp-finite-width"),
    "linear circular 1-D chain, width 16, L = 16": (dict(dim=1, width=16, kernel=3, spatial=8, padding="circular",
                                                         activation="linear", input_channels=3, batch=8), 16,
                                                    "chain-finite-width"),
}


def measure() -> dict:
    import torch

    from amutheory import stats
    from amutheory.laws import REGISTRY
    from amutheory.measure.probe import probe
    from amutheory.spec import ArchSpec

    torch.set_num_threads(1)
    d = json.loads(OUT.read_text()) if OUT.exists() else {
        "plan": "validate/plans/FINITE_WIDTH.md study P (addendum 13)", "replicates": REPLICATES,
        "per_replicate": PER_REPLICATE, "first_seed": FIRST_SEED, "cells": {}}
    seeds = range(FIRST_SEED, FIRST_SEED + REPLICATES * PER_REPLICATE)
    for name, (kw, depth, law) in CELLS.items():
        if name in d["cells"]:
            continue
        t = time.perf_counter()
        spec = ArchSpec(depth=depth, **kw)
        s = np.asarray(probe(spec, list(seeds), chunk=256).s_bar, float).reshape(REPLICATES, PER_REPLICATE)
        mean_truth = float(REGISTRY[law].evaluate(spec, [depth]).s_bar[0])
        logs = np.log(s).ravel()
        geo_truth, geo_truth_rel_se = float(np.exp(logs.mean())), float(logs.std(ddof=1) / math.sqrt(logs.size))
        hits = {"mean": 0, "geo": 0}
        for rep in s:
            _, lo, hi = stats.arith_mean_ci(rep, level=LEVEL)
            hits["mean"] += lo <= mean_truth <= hi
            _, glo, ghi = stats.geo_mean_ci(rep, level=LEVEL)
            hits["geo"] += glo <= geo_truth <= ghi
        flat = s.ravel()
        d["cells"][name] = {
            "spec": repr(spec), "law": law, "mean_truth": mean_truth, "geo_truth": geo_truth,
            "geo_truth_rel_se": geo_truth_rel_se, "pooled_mean": float(flat.mean()),
            "pooled_mean_rel_se": float(flat.std(ddof=1) / math.sqrt(flat.size) / flat.mean()),
            "var_ln_s_bar": float(logs.var(ddof=1)),
            "largest_seed_share": float(np.max(s / s.sum(axis=1, keepdims=True), axis=1).mean()),
            "coverage": {k: v / REPLICATES for k, v in hits.items()},
            "undercovers": {k: v / REPLICATES < UNDER for k, v in hits.items()}}
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
        c = d["cells"][name]
        print(f"P {name}: coverage mean {c['coverage']['mean']:.3f}, geo {c['coverage']['geo']:.3f}; pooled mean / law "
              f"{c['pooled_mean'] / mean_truth:.3f} ({time.perf_counter() - t:.0f} s)", flush=True)
    return d


if __name__ == "__main__":
    measure()
