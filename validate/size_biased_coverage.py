"""Study SB of validate/plans/FINITE_WIDTH.md (addendum 40): how often the 95% interval ``mean +- 1.96 se`` of the
size-biased probe (:mod:`amutheory.measure.size_biased`) and of the plain probe covers an exact ``E[s_bar]``.

Nets at width 16, depths 8 and 16: the linear MLP (16 inputs, batch 8; ``mlp-finite-width``), the ReLU MLP at batch
1 (``mlp-one-sample``) and run C's linear circular chain (``chain-finite-width``; the pooled tilt).  200 replicates
of 64 seeds, seeds 450000..462799 (the same for both probes).  Writes
docs/findings/finite_width/size_biased_coverage.json as it goes (resumes per net and depth); prints a table.

    PYTHONPATH=. OMP_NUM_THREADS=1 python validate/size_biased_coverage.py
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from amutheory.measure.probe import probe
from amutheory.measure.size_biased import size_biased_probe
from amutheory.spec import ArchSpec
from amutheory.symbolic.chain.finite_width import finite_width_s_bar
from amutheory.symbolic.chain.finite_width_modes import finite_width_chain_s_bar
from amutheory.symbolic.chain.one_sample import one_sample_layer_moments

OUT = Path("docs/findings/finite_width/size_biased_coverage.json")
DEPTHS = (8, 16)
REPLICATES, PER = 200, 64
SEEDS = range(450000, 450000 + REPLICATES * PER)
Z95 = 1.959964

NETS = {
    "linear MLP, batch 8": (ArchSpec(family="mlp", depth=8, width=16, activation="linear", input_channels=16, batch=8),
                            lambda s: float(finite_width_s_bar(s, [s.depth])[0]), False),
    "relu MLP, batch 1": (ArchSpec(family="mlp", depth=8, width=16, activation="relu", input_channels=16, batch=1),
                          lambda s: float(one_sample_layer_moments(s).mean()), False),
    "linear circular chain (run C's)": (
        ArchSpec(family="conv", dim=1, depth=8, width=16, kernel=3, spatial=8, padding="circular",
                 activation="linear", input_channels=3, batch=8),
        lambda s: float(finite_width_chain_s_bar(s, [s.depth])[0]), True),
}


def _coverage(values: np.ndarray, truth: float) -> dict:
    reps = values.reshape(REPLICATES, PER)
    m = reps.mean(axis=1)
    se = reps.std(axis=1, ddof=1) / np.sqrt(PER)
    hit = np.abs(m - truth) <= Z95 * se
    return {"coverage": float(hit.mean()), "below": float(np.mean(m + Z95 * se < truth)),
            "above": float(np.mean(m - Z95 * se > truth)),
            # a ReLU seed with a layer of no active unit has s_bar = 0 (counted, left out of the log's spread)
            "var_ln": float(np.var(np.log(values[values > 0]), ddof=1)), "zeros": int(np.sum(values <= 0)),
            "mean_all": float(values.mean())}


def main() -> None:
    payload = json.loads(OUT.read_text()) if OUT.exists() else {
        "plan": "validate/plans/FINITE_WIDTH.md addendum 40 (study SB)", "seeds": [min(SEEDS), max(SEEDS)],
        "replicates": REPLICATES, "seeds_per_replicate": PER, "cells": {}}
    for name, (base, law, pooled) in NETS.items():
        for d in DEPTHS:
            key = f"{name} | {d}"
            if key in payload["cells"]:
                continue
            t = time.time()
            spec = base.with_(depth=d)
            truth = law(spec)
            plain = probe(spec, SEEDS, chunk=64).s_bar
            sized = size_biased_probe(spec, SEEDS, chunk=64, pooled=pooled).s_bar
            payload["cells"][key] = {"net": name, "depth": d, "spec": repr(spec), "law": truth,
                                     "plain": _coverage(plain, truth), "size_biased": _coverage(sized, truth)}
            OUT.parent.mkdir(parents=True, exist_ok=True)
            tmp = OUT.with_suffix(".tmp")
            tmp.write_text(json.dumps(payload, indent=1))
            tmp.replace(OUT)
            print(f"{key}: {time.time() - t:.0f} s", flush=True)
    print("\n| net | depth | plain: coverage (below, above) | Var ln | size-biased: coverage (below, above) | Var ln |")
    print("|---|---|---|---|---|---|")
    for cell in payload["cells"].values():
        p, s = cell["plain"], cell["size_biased"]
        print(f"| {cell['net']} | {cell['depth']} | {p['coverage']:.3f} ({p['below']:.3f}, {p['above']:.3f}) | "
              f"{p['var_ln']:.2f} | {s['coverage']:.3f} ({s['below']:.3f}, {s['above']:.3f}) | {s['var_ln']:.2f} |")


if __name__ == "__main__":
    main()
