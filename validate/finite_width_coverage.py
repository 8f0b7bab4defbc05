"""Study P of ``validate/plans/FINITE_WIDTH.md`` (addendum 13): how often ``measure``'s 95% intervals -- the
percentile bootstrap of the seed mean of ``s_bar`` and of its geometric mean -- cover the truth at narrow width;
and study P2 (addendum 24): four intervals of the mean (:data:`amutheory.stats.MEAN_CI_METHODS`) on the same
cells, with more replicates.

    python validate/finite_width_coverage.py               # P: resumes per cell; docs/findings/finite_width/coverage_p.json
    python validate/finite_width_coverage.py --study P2    # P2: resumes per cell; .../coverage_p2.json

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


def replicates_of(name: str, first_seed: int, replicates: int) -> tuple:
    """``(spec, s_bar [replicate, seed], the exact law's mean)`` of a cell: ``replicates`` blocks of
    :data:`PER_REPLICATE` consecutive seeds from ``first_seed``."""
    from amutheory.laws import REGISTRY
    from amutheory.measure.probe import probe
    from amutheory.spec import ArchSpec

    kw, depth, law = CELLS[name]
    spec = ArchSpec(depth=depth, **kw)
    seeds = range(first_seed, first_seed + replicates * PER_REPLICATE)
    s = np.asarray(probe(spec, list(seeds), chunk=256).s_bar, float).reshape(replicates, PER_REPLICATE)
    return spec, s, float(REGISTRY[law].evaluate(spec, [depth]).s_bar[0])


def measure() -> dict:
    import torch

    from amutheory import stats

    torch.set_num_threads(1)
    d = json.loads(OUT.read_text()) if OUT.exists() else {
        "plan": "validate/plans/FINITE_WIDTH.md study P (addendum 13)", "replicates": REPLICATES,
        "per_replicate": PER_REPLICATE, "first_seed": FIRST_SEED, "cells": {}}
    for name in CELLS:
        if name in d["cells"]:
            continue
        t = time.perf_counter()
        spec, s, mean_truth = replicates_of(name, FIRST_SEED, REPLICATES)
        law = CELLS[name][2]
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


P2_OUT = OUT.with_name("coverage_p2.json")
P2_REPLICATES, P2_FIRST_SEED = 256, 260000
P2_COVERS = 0.923   # 95% less two binomial standard errors at 256 replicates


def measure_p2() -> dict:
    """Study P2: each replicate's 95% interval of the mean by every method of ``stats.MEAN_CI_METHODS``, against the
    exact law; per method and cell the coverage, the misses below and above, and the median width over the mean."""
    import torch

    from amutheory import stats

    torch.set_num_threads(1)
    d = json.loads(P2_OUT.read_text()) if P2_OUT.exists() else {
        "plan": "validate/plans/FINITE_WIDTH.md study P2 (addendum 24)", "replicates": P2_REPLICATES,
        "per_replicate": PER_REPLICATE, "first_seed": P2_FIRST_SEED, "level": LEVEL, "covers_at": P2_COVERS,
        "cells": {}}
    for name in CELLS:
        if name in d["cells"]:
            continue
        t = time.perf_counter()
        spec, s, truth = replicates_of(name, P2_FIRST_SEED, P2_REPLICATES)
        law = CELLS[name][2]
        methods = {}
        for method in stats.MEAN_CI_METHODS:
            ci = np.array([stats.arith_mean_ci(rep, level=LEVEL, method=method) for rep in s])
            below, above = int(np.sum(ci[:, 2] < truth)), int(np.sum(ci[:, 1] > truth))
            coverage = 1.0 - (below + above) / P2_REPLICATES
            methods[method] = {"coverage": coverage, "misses_below": below, "misses_above": above,
                               "median_width_over_mean": float(np.median((ci[:, 2] - ci[:, 1]) / ci[:, 0])),
                               "covers": coverage >= P2_COVERS}
        flat = s.ravel()
        d["cells"][name] = {"spec": repr(spec), "law": law, "mean_truth": truth,
                            "pooled_mean": float(flat.mean()),
                            "pooled_mean_rel_se": float(flat.std(ddof=1) / math.sqrt(flat.size) / flat.mean()),
                            "var_ln_s_bar": float(np.log(flat).var(ddof=1)), "methods": methods}
        P2_OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
        print(f"P2 {name}: " + ", ".join(f"{m} {v['coverage']:.3f}" for m, v in methods.items())
              + f"; pooled mean / law {flat.mean() / truth:.3f} ({time.perf_counter() - t:.0f} s)", flush=True)
    d["decision"] = decide_p2(d)
    P2_OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
    return d


def decide_p2(d: dict) -> dict:
    """Addendum 24's decision: the new methods that cover every cell, and among them the narrowest (median width
    over the mean, the largest over the cells); ``None`` when none covers every cell."""
    new = [m for m in ("bca", "studentized", "cox")
           if all(c["methods"][m]["covers"] for c in d["cells"].values())]
    widest = {m: max(c["methods"][m]["median_width_over_mean"] for c in d["cells"].values()) for m in new}
    return {"covering_every_cell": new, "chosen": min(new, key=widest.get) if new else None}


if __name__ == "__main__":
    if sys.argv[1:] == ["--study", "P2"]:
        print(json.dumps(measure_p2()["decision"], indent=1))
    elif sys.argv[1:]:
        print("usage: python validate/finite_width_coverage.py [--study P2]", file=sys.stderr)
        sys.exit(2)
    else:
        measure()
