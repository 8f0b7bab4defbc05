"""Run E of ``validate/plans/FINITE_WIDTH.md``: ReLU conv chains at widths 32 and 64, the finite-width
kernel law (forward kernels drawn at width n, not a registered law for chains) against the probe, the
infinite-width ``chain-kernel`` and the calibrated default ``chain-coherent``.

    python validate/finite_width_relu_chain.py     # writes docs/findings/finite_width/relu_chain.json

The page (``validate/finite_width_table.py report``) reads the JSON.  Measurement only: the default law
of ReLU chains is not changed by it.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "findings" / "finite_width" / "relu_chain.json"
WIDTHS = (32, 64)
DEPTHS = (2, 3, 4, 6, 8, 12, 16)
HELD_OUT = (8, 12, 16)
CALIBRATION = (2, 3, 4, 6)
SEEDS = 256


def spec_of(width: int, depth: int):
    from amutheory.spec import ArchSpec

    return ArchSpec(family="conv", dim=1, depth=depth, width=width, kernel=3, spatial=8, padding="circular",
                    activation="relu", input_channels=3)


def main() -> int:
    from amutheory.laws import REGISTRY
    from amutheory.measure.probe import probe
    from amutheory.symbolic.chain.kernel_law_finite import finite_width_kernel_s_bar

    rows = []
    for n in WIDTHS:
        t0 = time.time()
        profiles = {d: probe(spec_of(n, d), range(SEEDS)).s for d in DEPTHS}
        s_bar = {d: profiles[d].mean(axis=1) for d in DEPTHS}
        mean = np.array([s_bar[d].mean() for d in HELD_OUT])
        se = np.array([s_bar[d].std(ddof=1) / np.sqrt(SEEDS) for d in HELD_OUT])
        spec = spec_of(n, max(HELD_OUT))
        values = {"kernel-finite (n)": np.asarray(finite_width_kernel_s_bar(spec, list(HELD_OUT))["s_bar"], float),
                  "chain-kernel (n = oo)": np.asarray(REGISTRY["chain-kernel"].evaluate(spec, list(HELD_OUT)).s_bar),
                  "chain-coherent (calibrated)": np.asarray(REGISTRY["chain-coherent"].evaluate(
                      spec, list(HELD_OUT), calibration_depths=CALIBRATION, calibration_seeds=32).s_bar)}
        for name, law in values.items():
            rows.append({"width": n, "law": name, "held_out": list(HELD_OUT), "error": (law / mean - 1).tolist(),
                         "z": ((law - mean) / se).tolist(), "measured_rel_se": (se / mean).tolist()})
            print(f"n={n} {name}: {', '.join(f'{e:+.1%}' for e in law / mean - 1)}", flush=True)
        OUT.write_text(json.dumps({"plan": "validate/plans/FINITE_WIDTH.md run E", "seeds": SEEDS,
                                   "spec": str(spec_of(n, max(HELD_OUT))), "rows": rows}, indent=1))
        print(f"width {n}: {time.time() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
