"""Diagnostic Z of ``validate/plans/FINITE_WIDTH.md`` (addendum 23): one sample's backward excess.

ReLU MLPs with a batch of one sample, where every pair of the law is the sample with itself, so one sample's
masked Wick transfer is the whole independent-mask model of the backward moments.  Against the probe's seed mean:
the forward-only ``mlp-kernel-finite``, times the equal-variance factor ``b(L; n, 2n/5)``
(``mlp-kernel-finite-backward``), and times the masked factor
(:func:`amutheory.symbolic.chain.backward_width.masked_backward_factor` at ``p = 1/2``).  It decides nothing.

    python validate/finite_width_one_sample.py      # resumes per net; docs/findings/finite_width/one_sample_z.json

``validate/finite_width_table.py report`` puts the result on the page.
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
OUT = ROOT / "docs" / "findings" / "finite_width" / "one_sample_z.json"
WIDTHS = (16, 32, 64)
DEPTHS = (4, 8, 12, 16)
INPUTS, BATCH = 16, 1
SEEDS = range(250000, 254096)
DRAWS = 8192
LAWS = ("mlp-kernel-finite", "equal-variance factor", "masked factor")
MAX_POOLED = 2.0


def _spec(width: int, depth: int):
    from amutheory.spec import ArchSpec

    return ArchSpec(family="mlp", depth=depth, width=width, activation="relu", input_channels=INPUTS, batch=BATCH)


def measure() -> dict:
    import torch

    from amutheory.laws.mlp import chain_of
    from amutheory.measure.probe import probe
    from amutheory.symbolic.chain.backward_width import (ON_PROBABILITY, backward_factor, equal_variance_width,
                                                         masked_backward_factor)
    from amutheory.symbolic.chain.kernel_law_finite import finite_width_kernel_s_bar

    torch.set_num_threads(1)
    d = json.loads(OUT.read_text()) if OUT.exists() else {"nets": {}}
    for width in WIDTHS:
        key = f"n{width}-C{INPUTS}-B{BATCH}"
        if key in d["nets"]:
            continue
        t = time.perf_counter()
        spec = _spec(width, max(DEPTHS))
        linear = spec.with_(activation="linear", init_c=None)
        kf = finite_width_kernel_s_bar(chain_of(spec), list(DEPTHS), draws=DRAWS)
        factors = {"equal-variance factor": backward_factor(linear, list(DEPTHS), equal_variance_width(width, "relu")),
                   "masked factor": masked_backward_factor(linear, list(DEPTHS), float(ON_PROBABILITY["relu"]))}
        rows = []
        for i, L in enumerate(DEPTHS):
            s = np.asarray(probe(spec.with_(depth=L), list(SEEDS), chunk=256).s_bar)
            mean, se = float(s.mean()), float(s.std(ddof=1) / math.sqrt(len(s)))
            row = {"depth": L, "probe_mean": mean, "probe_se": se}
            for name in LAWS:
                f = 1.0 if name == "mlp-kernel-finite" else float(factors[name][i])
                value, vse = kf["s_bar"][i] * f, kf["se"][i] * f
                row[name] = {"factor": f, "s_bar": float(value), "se": float(vse), "error": float(value / mean - 1),
                             "z": float((value - mean) / math.hypot(vse, se))}
            rows.append(row)
        d["nets"][key] = {"width": width, "input_channels": INPUTS, "batch": BATCH, "seeds": [SEEDS[0], SEEDS[-1]],
                          "draws": DRAWS, "rows": rows}
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
        print(f"Z {key}: " + "; ".join(f"{name} z {[round(r[name]['z'], 2) for r in rows]}" for name in LAWS)
              + f" ({time.perf_counter() - t:.0f} s)", flush=True)
    d["reading"] = read(d)
    OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
    return d


def read(d: dict) -> dict:
    """Pooled and max |z| per law, and the reading fixed in addendum 23 (on the masked factor's pooled z)."""
    z = {name: [r[name]["z"] for net in d["nets"].values() for r in net["rows"]] for name in LAWS}
    pooled = {k: sum(v) / math.sqrt(len(v)) for k, v in z.items()}
    p = pooled["masked factor"]
    reading = ("the independent-mask moments account for one sample's excess" if abs(p) <= MAX_POOLED else
               "the coupling adds" if p < -MAX_POOLED else "the independent-mask moments overshoot")
    return {"points": len(z["masked factor"]), "pooled_z": pooled,
            "max_abs_z": {k: max(abs(x) for x in v) for k, v in z.items()}, "reading": reading}


if __name__ == "__main__":
    print(json.dumps(measure()["reading"], indent=1))
