"""Diagnostic Z of ``validate/plans/FINITE_WIDTH.md`` (addendum 23): one sample's backward excess.

ReLU MLPs with a batch of one sample, where every pair of the law is the sample with itself, so one sample's
masked Wick transfer is the whole independent-mask model of the backward moments.  Against the probe's seed mean:
the forward-only ``mlp-kernel-finite``, times the equal-variance factor ``b(L; n, 2n/5)``
(``mlp-kernel-finite-backward``), and times the masked factor
(:func:`amutheory.symbolic.chain.backward_width.masked_backward_factor` at ``p = 1/2``).  It decides nothing.

    python validate/finite_width_one_sample.py      # resumes per net; docs/findings/finite_width/one_sample_z.json
    python validate/finite_width_one_sample.py --activation gelu   # Z2 (addendum 26): the drawn law, GELU or tanh
    python validate/finite_width_one_sample.py --run Z3   # Z3 (addendum 39): the exact one-sample law, fresh seeds

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


def _spec(width: int, depth: int, activation: str = "relu"):
    from amutheory.spec import ArchSpec

    return ArchSpec(family="mlp", depth=depth, width=width, activation=activation, input_channels=INPUTS, batch=BATCH)


def law_and_probe(spec, seeds) -> tuple:
    """The drawn forward-only law ``mlp-kernel-finite`` at :data:`DRAWS` draws (``{"s_bar", "se"}`` at
    :data:`DEPTHS`) and the probe's seed mean and its standard error at each depth over ``seeds``."""
    from amutheory.laws.mlp import chain_of
    from amutheory.measure.probe import probe
    from amutheory.symbolic.chain.kernel_law_finite import finite_width_kernel_s_bar

    kf = finite_width_kernel_s_bar(chain_of(spec), list(DEPTHS), draws=DRAWS)
    probes = []
    for L in DEPTHS:
        s = np.asarray(probe(spec.with_(depth=L), list(seeds), chunk=256).s_bar)
        probes.append((float(s.mean()), float(s.std(ddof=1) / math.sqrt(len(s)))))
    return kf, probes


def _resume_nets(out: Path, label: str, seeds, laws, values_at) -> dict:
    """Probe every width's net at :data:`DEPTHS` on ``seeds`` beside the laws, resuming per net into ``out``:
    ``values_at(spec, kf)`` gives ``{law: (s_bar, se, factor or None)}`` at the depths from the drawn law ``kf``."""
    import torch

    torch.set_num_threads(1)
    d = json.loads(out.read_text()) if out.exists() else {"nets": {}}
    for width in WIDTHS:
        key = f"n{width}-C{INPUTS}-B{BATCH}"
        if key in d["nets"]:
            continue
        t = time.perf_counter()
        spec = _spec(width, max(DEPTHS))
        kf, probes = law_and_probe(spec, seeds)
        values = values_at(spec, kf)
        rows = []
        for i, (L, (mean, se)) in enumerate(zip(DEPTHS, probes)):
            row = {"depth": L, "probe_mean": mean, "probe_se": se}
            for name in laws:
                s_bar, s_se, factor = values[name]
                value, vse = float(s_bar[i]), float(s_se[i])
                row[name] = {"s_bar": value, "se": vse, "error": value / mean - 1,
                             "z": (value - mean) / math.hypot(vse, se)}
                if factor is not None:
                    row[name]["factor"] = float(factor[i])
            rows.append(row)
        d["nets"][key] = {"width": width, "input_channels": INPUTS, "batch": BATCH, "seeds": [seeds[0], seeds[-1]],
                          "draws": DRAWS, "rows": rows}
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
        print(f"{label} {key}: " + "; ".join(f"{name} z {[round(r[name]['z'], 2) for r in rows]}" for name in laws)
              + f" ({time.perf_counter() - t:.0f} s)", flush=True)
    return d


def measure() -> dict:
    from amutheory.symbolic.chain.backward_width import (ON_PROBABILITY, backward_factor, equal_variance_width,
                                                         masked_backward_factor)

    def values_at(spec, kf):
        linear = spec.with_(activation="linear", init_c=None)
        factors = {"mlp-kernel-finite": np.ones(len(DEPTHS)),
                   "equal-variance factor": backward_factor(linear, list(DEPTHS),
                                                            equal_variance_width(spec.width, "relu")),
                   "masked factor": masked_backward_factor(linear, list(DEPTHS), float(ON_PROBABILITY["relu"]))}
        return {k: (np.asarray(kf["s_bar"]) * f, np.asarray(kf["se"]) * f, f) for k, f in factors.items()}

    d = _resume_nets(OUT, "Z", SEEDS, LAWS, values_at)
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


Z2_OUT = OUT.with_name("one_sample_z2.json")
Z2_SEEDS, Z2_ACTIVATIONS = range(280000, 284096), ("gelu", "tanh")


def measure_z2(activation: str) -> dict:
    """Diagnostic Z2 (addendum 26): the drawn law ``mlp-kernel-finite`` against one-sample GELU or tanh MLPs (critical
    c), resuming per net; the reading fixed in the plan, per activation."""
    import torch

    torch.set_num_threads(1)
    d = json.loads(Z2_OUT.read_text()) if Z2_OUT.exists() else {"nets": {}}
    for width in WIDTHS:
        key = f"{activation}-n{width}-C{INPUTS}-B{BATCH}"
        if key in d["nets"]:
            continue
        t = time.perf_counter()
        spec = _spec(width, max(DEPTHS), activation)
        kf, probes = law_and_probe(spec, Z2_SEEDS)
        rows = []
        for i, (L, (mean, se)) in enumerate(zip(DEPTHS, probes)):
            value, vse = float(kf["s_bar"][i]), float(kf["se"][i])
            rows.append({"depth": L, "probe_mean": mean, "probe_se": se, "s_bar": value, "se": vse,
                         "error": value / mean - 1, "z": (value - mean) / math.hypot(vse, se)})
        d["nets"][key] = {"activation": activation, "c": spec.c, "width": width, "input_channels": INPUTS,
                          "batch": BATCH, "seeds": [Z2_SEEDS[0], Z2_SEEDS[-1]], "draws": DRAWS, "rows": rows}
        Z2_OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
        print(f"Z2 {key}: errors {[round(100 * r['error'], 1) for r in rows]} z {[round(r['z'], 2) for r in rows]} "
              f"({time.perf_counter() - t:.0f} s)", flush=True)
    z = [r["z"] for net in d["nets"].values() if net["activation"] == activation for r in net["rows"]]
    pooled = sum(z) / math.sqrt(len(z))
    d.setdefault("readings", {})[activation] = {
        "points": len(z), "pooled_z": pooled, "max_abs_z": max(abs(x) for x in z),
        "reading": ("the drawn law holds at one sample" if abs(pooled) <= MAX_POOLED else
                    "it reads low at one sample too" if pooled < -MAX_POOLED else "it reads high at one sample")}
    Z2_OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
    return d["readings"][activation]


Z3_OUT = OUT.with_name("one_sample_z3.json")
Z3_SEEDS = range(420000, 424096)
Z3_LAWS = ("mlp-one-sample", "mlp-kernel-finite", "equal-variance factor")
MAX_ABS = 3.0


def one_sample_on_recorded() -> dict:
    """Addendum 39's report: the exact one-sample law against diagnostic Z's recorded probes (no new probe)."""
    from amutheory.symbolic.chain.one_sample import one_sample_s_bar

    d, rows = json.loads(OUT.read_text()), []
    for net in d["nets"].values():
        law = one_sample_s_bar(_spec(net["width"], max(DEPTHS)), [r["depth"] for r in net["rows"]])
        for r, value in zip(net["rows"], law):
            rows.append({"width": net["width"], "depth": r["depth"], "s_bar": float(value),
                         "error": float(value / r["probe_mean"] - 1),
                         "z": float((value - r["probe_mean"]) / r["probe_se"])})
    z = [r["z"] for r in rows]
    return {"rows": rows, "pooled_z": sum(z) / math.sqrt(len(z)), "max_abs_z": max(abs(x) for x in z)}


def measure_z3() -> dict:
    """Run Z3 (addendum 39): the exact one-sample law ``mlp-one-sample`` (no standard error: exact) against fresh
    probe seeds, beside ``mlp-kernel-finite`` and its equal-variance factor; resumes per net; the planned rule."""
    from amutheory.symbolic.chain.backward_width import backward_factor, equal_variance_width
    from amutheory.symbolic.chain.one_sample import one_sample_s_bar

    def values_at(spec, kf):
        factor = backward_factor(spec.with_(activation="linear", init_c=None), list(DEPTHS),
                                 equal_variance_width(spec.width, "relu"))
        s_bar, se = np.asarray(kf["s_bar"]), np.asarray(kf["se"])
        return {"mlp-one-sample": (one_sample_s_bar(spec, list(DEPTHS)), np.zeros(len(DEPTHS)), None),
                "mlp-kernel-finite": (s_bar, se, None), "equal-variance factor": (s_bar * factor, se * factor, None)}

    d = _resume_nets(Z3_OUT, "Z3", Z3_SEEDS, Z3_LAWS, values_at)
    z = {name: [r[name]["z"] for net in d["nets"].values() for r in net["rows"]] for name in Z3_LAWS}
    pooled = {k: sum(v) / math.sqrt(len(v)) for k, v in z.items()}
    worst = {k: max(abs(x) for x in v) for k, v in z.items()}
    met = abs(pooled["mlp-one-sample"]) <= MAX_POOLED and worst["mlp-one-sample"] <= MAX_ABS
    d["reading"] = {"points": len(z["mlp-one-sample"]), "pooled_z": pooled, "max_abs_z": worst, "met": met,
                    "decision": ("mlp-one-sample becomes predict's default for ReLU MLPs at batch 1" if met else
                                 "mlp-one-sample stays a law on request")}
    d["recorded_z"] = one_sample_on_recorded()
    Z3_OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
    return d["reading"]


if __name__ == "__main__":
    if sys.argv[1:] == ["--run", "Z3"]:
        print(json.dumps(measure_z3(), indent=1))
    elif sys.argv[1:2] == ["--activation"] and len(sys.argv) == 3 and sys.argv[2] in Z2_ACTIVATIONS:
        print(json.dumps(measure_z2(sys.argv[2]), indent=1))
    elif sys.argv[1:]:
        print(f"usage: python validate/finite_width_one_sample.py [--activation {{{','.join(Z2_ACTIVATIONS)}}} | --run Z3]",
              file=sys.stderr)
        sys.exit(2)
    else:
        print(json.dumps(measure()["reading"], indent=1))
