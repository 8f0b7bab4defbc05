"""Benchmark: the size-biased probe against the plain probe, the same seeds in the same run.

For each net (narrow and deep, where the seed mean's tail is heavy) both probes run on seeds 470000..470511; the
table gives each one's wall time, its values' relative variance ``Var(v) / mean(v)^2`` per seed and ``Var ln v``,
and the gain: how many plain seeds one size-biased seed is worth (the ratio of relative variances) divided by the
ratio of costs.  Relative variances of heavy-tailed values are themselves noisy (and low where the tail is not
sampled), so the gains are rough; ``Var ln`` is the steadier reading.  Writes
docs/findings/finite_width/benchmark_size_biased.json; prints a markdown table.

    PYTHONPATH=. OMP_NUM_THREADS=1 python validate/benchmark_size_biased.py
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import torch

from amutheory.measure.probe import probe
from amutheory.measure.size_biased import resolve_tilt, size_biased_probe
from amutheory.spec import ArchSpec

OUT = Path("docs/findings/finite_width/benchmark_size_biased.json")
SEEDS = range(470000, 470512)
CHAIN = dict(family="conv", dim=1, kernel=3, spatial=8, input_channels=3, batch=8)
NETS = [
    ArchSpec(depth=16, width=16, padding="circular", activation="linear", **CHAIN),
    ArchSpec(depth=32, width=16, padding="circular", activation="linear", **CHAIN),
    ArchSpec(depth=16, width=32, padding="circular", activation="relu", **CHAIN),
    ArchSpec(depth=16, width=32, padding="zero", activation="relu", **CHAIN),
    ArchSpec(family="mlp", depth=16, width=16, activation="linear", input_channels=16, batch=8),
    ArchSpec(family="mlp", depth=16, width=16, activation="relu", input_channels=16, batch=8),
    ArchSpec(family="mlp", depth=16, width=16, activation="relu", input_channels=16, batch=1),
]


def _stats(v: np.ndarray) -> dict:
    return {"mean": float(v.mean()), "rel_var": float(v.var(ddof=1) / v.mean() ** 2),
            "var_ln": float(np.var(np.log(v), ddof=1))}


def main() -> None:
    torch.set_num_threads(1)
    rows = []
    for spec in NETS:
        t = time.perf_counter()
        plain = probe(spec, SEEDS, chunk=64).s_bar
        t_plain = time.perf_counter() - t
        t = time.perf_counter()
        sized = size_biased_probe(spec, SEEDS, chunk=64, pooled=resolve_tilt(spec, "auto")).s_bar
        t_sized = time.perf_counter() - t
        p, s = _stats(plain), _stats(sized)
        rows.append({"spec": repr(spec), "net": f"{spec.activation} {spec.family}"
                     + (f" {spec.padding}" if spec.family == "conv" else f" batch {spec.batch}")
                     + f", width {spec.width}, depth {spec.depth}", "plain": p, "size_biased": s,
                     "seconds_plain": t_plain, "seconds_size_biased": t_sized,
                     "gain": (p["rel_var"] / s["rel_var"]) / (t_sized / t_plain)})
        print(f"{rows[-1]['net']}: gain {rows[-1]['gain']:.2f}", flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"seeds": [min(SEEDS), max(SEEDS)], "rows": rows}, indent=1))
    print("\n| net | plain: s, rel. var, Var ln | size-biased: s, rel. var, Var ln | cost ratio | gain |")
    print("|---|---|---|---|---|")
    for r in rows:
        p, s = r["plain"], r["size_biased"]
        print(f"| {r['net']} | {r['seconds_plain']:.1f}, {p['rel_var']:.2f}, {p['var_ln']:.2f} | "
              f"{r['seconds_size_biased']:.1f}, {s['rel_var']:.2f}, {s['var_ln']:.2f} | "
              f"{r['seconds_size_biased'] / r['seconds_plain']:.2f} | {r['gain']:.1f} |")


if __name__ == "__main__":
    main()
