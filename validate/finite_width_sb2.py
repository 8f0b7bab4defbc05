"""Diagnostic SB2 of validate/plans/FINITE_WIDTH.md (addendum 42; reports only): run A's ReLU MLPs (16 inputs, batch
8) at widths 16-128, their held-out means measured with the size-biased probe (:mod:`amutheory.measure.size_biased`)
on fresh seeds, against the default ``mlp-kernel-finite``, ``mlp-kernel-finite-backward`` and the calibrated
``mlp-coherent`` as ``predict`` runs them.  (The chains' part: ``finite_width_relu_chain.py --run Q2``.)

Writes docs/findings/finite_width/sb2_mlp.json as it goes (resumes per width); prints a table.

    PYTHONPATH=. OMP_NUM_THREADS=1 python validate/finite_width_sb2.py --part mlp
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

OUT = Path("docs/findings/finite_width/sb2_mlp.json")
SEEDS = range(520000, 524096)
WIDTHS = (16, 32, 64, 128)
HELD_OUT = (8, 12, 16)
CALIBRATION = (2, 3, 4, 6)
LAWS = ("mlp-kernel-finite", "mlp-kernel-finite-backward", "mlp-coherent")


def spec_of(width: int, depth: int):
    from amutheory.spec import ArchSpec

    return ArchSpec(family="mlp", depth=depth, width=width, activation="relu", input_channels=16)


def run_mlp() -> dict:
    import torch

    from amutheory.laws import REGISTRY
    from amutheory.measure.size_biased import size_biased_probe

    torch.set_num_threads(1)
    d = json.loads(OUT.read_text()) if OUT.exists() else {
        "plan": "validate/plans/FINITE_WIDTH.md addendum 42 (diagnostic SB2)", "seeds": [SEEDS[0], SEEDS[-1]],
        "held_out": list(HELD_OUT), "widths": {}}
    for n in WIDTHS:
        if str(n) in d["widths"]:
            continue
        t0 = time.time()
        values = {L: size_biased_probe(spec_of(n, L), SEEDS, chunk=64).s_bar for L in HELD_OUT}
        mean = np.array([values[L].mean() for L in HELD_OUT])
        se = np.array([values[L].std(ddof=1) / np.sqrt(len(SEEDS)) for L in HELD_OUT])
        row = {"mean": mean.tolist(), "se": se.tolist(),
               "var_ln": [float(np.var(np.log(values[L][values[L] > 0]), ddof=1)) for L in HELD_OUT], "laws": {}}
        spec = spec_of(n, max(HELD_OUT))
        for name in LAWS:
            law = np.asarray(REGISTRY[name].evaluate(spec, list(HELD_OUT), calibration_depths=CALIBRATION,
                                                     calibration_seeds=32).s_bar, float)
            row["laws"][name] = {"s_bar": law.tolist(), "error": (law / mean - 1).tolist(),
                                 "z": ((law - mean) / se).tolist()}
        d["widths"][str(n)] = row
        OUT.write_text(json.dumps(d, indent=1))
        print(f"width {n}: " + "; ".join(f"{k} {', '.join(f'{e:+.1%}' for e in v['error'])}"
                                         for k, v in row["laws"].items()) + f" ({time.time() - t0:.0f} s)", flush=True)
    return d


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("mlp",), required=True)
    ap.parse_args()
    run_mlp()
