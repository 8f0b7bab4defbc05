"""Run M of ``validate/plans/FINITE_WIDTH.md`` (addendum 10): the backward factor for GELU and tanh.

The drawn law (``mlp-kernel-finite``, ``chain-kernel-finite``: the backward side at infinite width) against the
same law times the linear net's exact backward factor at the width of equal backward-step variance
(``mlp-kernel-finite-backward``, ``chain-kernel-finite-backward``), on fresh probe seeds, and run G's planned
rule per activation (and padding, for chains).

    python validate/finite_width_backward_m.py --part M1   # MLPs on run G's four geometries (resumes per net)
    python validate/finite_width_backward_m.py --part M2   # 1-D chains, run K's geometry, both paddings (resumes)

Both write ``docs/findings/finite_width/smooth_m.json`` after every net; ``validate/finite_width_table.py
report`` puts the result on the page.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling scripts (finite_width_smooth)
OUT = ROOT / "docs" / "findings" / "finite_width" / "smooth_m.json"
ACTIVATIONS = ("gelu", "tanh")
#: M1: run G's geometries (width, input features, batch), depths, seeds, and the laws' draws
M1_NETS = ((20, 16, 8), (32, 10, 5), (40, 16, 8), (80, 16, 8))
M1_DEPTHS = (6, 10, 14, 20)
M1_SEEDS = range(110000, 112048)
M1_DRAWS = 8192
#: M2: run K's geometry, both paddings, the deciding widths, held-out depths, seeds
M2_PADDINGS = ("circular", "zero")
M2_WIDTHS = (32, 64)
M2_DEPTHS = (8, 12, 16)
M2_SEEDS = range(120000, 121024)
MAX_ABS_Z, MAX_POOLED = 3.0, 2.0


def _row(L: int, s_bar, laws: dict) -> dict:
    """The probe's seed mean and its se at one depth, and each law's error and z (both standard errors combined);
    ``laws``: name -> (value, its Monte Carlo se)."""
    s = np.asarray(s_bar, float)
    mean, se = float(s.mean()), float(s.std(ddof=1) / math.sqrt(len(s)))
    row = {"depth": L, "probe_mean": mean, "probe_se": se}
    for name, (value, vse) in laws.items():
        row[name] = {"s_bar": float(value), "se": float(vse), "error": float(value / mean - 1),
                     "z": float((value - mean) / math.hypot(vse, se))}
    return row


def _save(d: dict) -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")


def measure_m1(d: dict) -> dict:
    """M1: GELU and tanh MLPs at the critical c, both laws at 8192 draws (as run G)."""
    from amutheory.laws.mlp import chain_of
    from amutheory.measure.probe import probe
    from amutheory.spec import ArchSpec
    from amutheory.symbolic.chain.backward_width import backward_factor, equal_variance_width
    from amutheory.symbolic.chain.kernel_law_finite import finite_width_kernel_s_bar

    m1 = d.setdefault("m1", {"nets": {}})
    for activation in ACTIVATIONS:
        for width, c0, batch in M1_NETS:
            key = f"{activation}-n{width}-C{c0}-B{batch}"
            if key in m1["nets"]:
                continue
            t = time.perf_counter()
            spec = ArchSpec(family="mlp", depth=max(M1_DEPTHS), width=width, activation=activation, input_channels=c0,
                            batch=batch)
            kf = finite_width_kernel_s_bar(chain_of(spec), list(M1_DEPTHS), draws=M1_DRAWS)
            n_b = equal_variance_width(width, activation)
            factor = backward_factor(spec.with_(activation="linear", init_c=None), list(M1_DEPTHS), n_b)
            rows = []
            for i, L in enumerate(M1_DEPTHS):
                s = probe(spec.with_(depth=L), list(M1_SEEDS), chunk=64).s_bar
                rows.append(_row(L, s, {"mlp-kernel-finite": (kf["s_bar"][i], kf["se"][i]),
                                        "mlp-kernel-finite-backward": (kf["s_bar"][i] * factor[i], kf["se"][i] * factor[i])}))
                rows[-1]["factor"] = float(factor[i])
            m1["nets"][key] = {"activation": activation, "width": width, "input_channels": c0, "batch": batch,
                               "c": spec.c, "backward_width": n_b, "seeds": [M1_SEEDS[0], M1_SEEDS[-1]],
                               "draws": M1_DRAWS, "rows": rows}
            _save(d)
            _print(f"M1 {key}", rows, ("mlp-kernel-finite", "mlp-kernel-finite-backward"), t)
    m1["decision"] = {a: decide([net for net in m1["nets"].values() if net["activation"] == a],
                                "mlp-kernel-finite-backward", "mlp-kernel-finite") for a in ACTIVATIONS}
    _save(d)
    return m1


def measure_m2(d: dict) -> dict:
    """M2: GELU and tanh 1-D chains at the critical c, both paddings, both laws as ``predict`` runs them (512
    draws; the backward law's values at the depths asked are the drawn law's times the factor, as
    ``ChainKernelFiniteBackward.evaluate`` computes them)."""
    import itertools

    from amutheory.laws import REGISTRY
    from amutheory.measure.probe import probe
    from finite_width_smooth import chain_spec_of  # run K's geometry

    m2 = d.setdefault("m2", {"nets": {}})
    for activation, padding, width in itertools.product(ACTIVATIONS, M2_PADDINGS, M2_WIDTHS):
        key = f"{activation}-{padding}-n{width}"
        if key in m2["nets"]:
            continue
        t = time.perf_counter()
        spec = chain_spec_of(activation, padding, width, max(M2_DEPTHS))
        laws = {name: REGISTRY[name].evaluate(spec, list(M2_DEPTHS))
                for name in ("chain-kernel-finite", "chain-kernel-finite-backward")}
        rows = []
        for i, L in enumerate(M2_DEPTHS):
            s = probe(spec.with_(depth=L), list(M2_SEEDS), chunk=64).s_bar
            rows.append(_row(L, s, {name: (v.s_bar[i], v.s_bar_se[i]) for name, v in laws.items()}))
        m2["nets"][key] = {"activation": activation, "padding": padding, "width": width, "c": spec.c,
                           "spec": repr(spec), "seeds": [M2_SEEDS[0], M2_SEEDS[-1]],
                           "backward_width": laws["chain-kernel-finite-backward"].constants["backward_width"].value,
                           "rows": rows}
        _save(d)
        _print(f"M2 {key}", rows, tuple(laws), t)
    m2["decision"] = {f"{a}-{p}": decide([net for net in m2["nets"].values()
                                          if net["activation"] == a and net["padding"] == p],
                                         "chain-kernel-finite-backward", "chain-kernel-finite")
                      for a in ACTIVATIONS for p in M2_PADDINGS}
    _save(d)
    return m2


def decide(nets: list, new: str, old: str) -> dict:
    """Run G's rule over the cells of ``nets``: every |z| of ``new`` <= 3, its pooled z within +-2, its sum of z^2
    below ``old``'s."""
    z = {name: [r[name]["z"] for net in nets for r in net["rows"]] for name in (new, old)}
    pooled = {k: sum(v) / math.sqrt(len(v)) for k, v in z.items()}
    ss = {k: sum(x * x for x in v) for k, v in z.items()}
    cond = {"every |z| <= 3": max(abs(x) for x in z[new]) <= MAX_ABS_Z,
            f"sum z^2 below {old}'s": ss[new] < ss[old],
            "pooled z within +-2": abs(pooled[new]) <= MAX_POOLED}
    return {"cells": len(z[new]), "max_abs_z": {k: max(abs(x) for x in v) for k, v in z.items()}, "pooled_z": pooled,
            "sum_z2": ss, "conditions": cond, "default_changes": all(cond.values())}


def _print(tag: str, rows: list, laws, started: float) -> None:
    print(f"{tag}: " + "; ".join(f"{name} errors {[round(100 * r[name]['error'], 1) for r in rows]} "
                                 f"z {[round(r[name]['z'], 2) for r in rows]}" for name in laws)
          + f" ({time.perf_counter() - started:.0f} s)", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("M1", "M2"), required=True)
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    d = json.loads(OUT.read_text()) if OUT.exists() else {"plan": "validate/plans/FINITE_WIDTH.md run M (addendum 10)"}
    got = measure_m1(d) if args.part == "M1" else measure_m2(d)
    print(json.dumps(got["decision"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
