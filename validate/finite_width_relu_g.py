"""Run G of ``validate/plans/FINITE_WIDTH.md`` (addendum 4): the approximate ReLU law
``mlp-kernel-finite-backward`` against ``mlp-kernel-finite`` on ReLU MLPs never probed before, and the
planned decision on the default.

    python validate/finite_width_relu_g.py                # resumes; writes docs/findings/finite_width/relu_g.json after every net
    python validate/finite_width_relu_g.py linear-check   # run H (addendum 5): the exact linear law at the widths 2n/5

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
OUT = ROOT / "docs" / "findings" / "finite_width" / "relu_g.json"
NETS = ((20, 16, 8), (40, 16, 8), (80, 16, 8), (32, 10, 5))   # (width, input features, batch)
DEPTHS = (6, 10, 14, 20)
SEEDS = range(30000, 32048)
DRAWS = 8192
MAX_ABS_Z, MAX_POOLED = 3.0, 2.0


def _spec(width, c0, batch, depth):
    from amutheory.spec import ArchSpec

    return ArchSpec(family="mlp", depth=depth, width=width, activation="relu", input_channels=c0, batch=batch)


def measure() -> dict:
    import torch

    from amutheory.laws.mlp import chain_of
    from amutheory.measure.probe import probe
    from amutheory.symbolic.chain.backward_width import backward_factor, equal_variance_width
    from amutheory.symbolic.chain.kernel_law_finite import finite_width_kernel_s_bar

    torch.set_num_threads(1)
    d = json.loads(OUT.read_text()) if OUT.exists() else {"nets": {}}
    for width, c0, batch in NETS:
        key = f"n{width}-C{c0}-B{batch}"
        if key in d["nets"]:
            continue
        t = time.perf_counter()
        spec = _spec(width, c0, batch, max(DEPTHS))
        kf = finite_width_kernel_s_bar(chain_of(spec), list(DEPTHS), draws=DRAWS)
        n_b = equal_variance_width(width, "relu")
        factor = backward_factor(spec.with_(activation="linear"), list(DEPTHS), n_b)
        rows = []
        for i, L in enumerate(DEPTHS):
            s = np.asarray(probe(spec.with_(depth=L), list(SEEDS), chunk=64).s_bar)
            mean, se = float(s.mean()), float(s.std(ddof=1) / math.sqrt(len(s)))
            row = {"depth": L, "probe_mean": mean, "probe_se": se, "factor": float(factor[i])}
            for name, value, vse in (("mlp-kernel-finite", kf["s_bar"][i], kf["se"][i]),
                                     ("mlp-kernel-finite-backward", kf["s_bar"][i] * factor[i], kf["se"][i] * factor[i])):
                row[name] = {"s_bar": float(value), "se": float(vse), "error": float(value / mean - 1),
                             "z": float((value - mean) / math.hypot(vse, se))}
            rows.append(row)
        d["nets"][key] = {"width": width, "input_channels": c0, "batch": batch, "backward_width": n_b,
                          "seeds": [SEEDS[0], SEEDS[-1]], "draws": DRAWS, "rows": rows}
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
        print(f"G {key}: z kernel-finite {[round(r['mlp-kernel-finite']['z'], 2) for r in rows]}, "
              f"backward {[round(r['mlp-kernel-finite-backward']['z'], 2) for r in rows]} "
              f"({time.perf_counter() - t:.0f} s)", flush=True)
    d["decision"] = decide(d)
    OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
    return d


def decide(d: dict) -> dict:
    """The plan's three conditions and the decision they make."""
    z = {name: [r[name]["z"] for net in d["nets"].values() for r in net["rows"]]
         for name in ("mlp-kernel-finite", "mlp-kernel-finite-backward")}
    new, old = z["mlp-kernel-finite-backward"], z["mlp-kernel-finite"]
    pooled = {k: sum(v) / math.sqrt(len(v)) for k, v in z.items()}
    ss = {k: sum(x * x for x in v) for k, v in z.items()}
    cond = {"every |z| <= 3": max(abs(x) for x in new) <= MAX_ABS_Z,
            "sum z^2 below mlp-kernel-finite's": ss["mlp-kernel-finite-backward"] < ss["mlp-kernel-finite"],
            "pooled z within +-2": abs(pooled["mlp-kernel-finite-backward"]) <= MAX_POOLED}
    return {"points": len(new), "max_abs_z": {k: max(abs(x) for x in v) for k, v in z.items()}, "pooled_z": pooled,
            "sum_z2": ss, "conditions": cond, "default_changes": all(cond.values())}


def linear_check() -> dict:
    """Run H: the exact ``mlp-finite-width`` against 2048-seed means of linear MLPs at the widths ``2n/5``
    of run G's nets (same ``C_0``, batch, depths, seeds): how far a known-exact law's pooled z goes."""
    import torch

    from amutheory.measure.probe import probe
    from amutheory.spec import ArchSpec
    from amutheory.symbolic.chain.backward_width import equal_variance_width
    from amutheory.symbolic.chain.finite_width import finite_width_s_bar

    torch.set_num_threads(1)
    d = json.loads(OUT.read_text())
    h = d.setdefault("linear_check", {"nets": {}})
    for width, c0, batch in NETS:
        m = round(equal_variance_width(width, "relu"))
        key = f"n{m}-C{c0}-B{batch}"
        if key in h["nets"]:
            continue
        spec = ArchSpec(family="mlp", depth=max(DEPTHS), width=m, activation="linear", input_channels=c0, batch=batch)
        law = finite_width_s_bar(spec, list(DEPTHS))
        rows = []
        for i, L in enumerate(DEPTHS):
            s = np.asarray(probe(spec.with_(depth=L), list(SEEDS), chunk=64).s_bar)
            mean, se = float(s.mean()), float(s.std(ddof=1) / math.sqrt(len(s)))
            rows.append({"depth": L, "probe_mean": mean, "probe_se": se, "law": float(law[i]),
                         "error": float(law[i] / mean - 1), "z": float((law[i] - mean) / se)})
        h["nets"][key] = {"width": m, "for_relu_width": width, "input_channels": c0, "batch": batch, "rows": rows}
        OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
        print(f"H {key}: z {[round(r['z'], 2) for r in rows]}", flush=True)
    z = [r["z"] for net in h["nets"].values() for r in net["rows"]]
    h["pooled_z"] = sum(z) / math.sqrt(len(z))
    h["reading"] = ("the heavy-tail reading can account for run G's pooled z" if h["pooled_z"] >= 1.5 else
                    "the heavy-tail reading cannot account for it" if abs(h["pooled_z"]) <= 1.0 else
                    "between the planned readings")
    OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
    return h


if __name__ == "__main__":
    if sys.argv[1:] == ["linear-check"]:
        got = linear_check()
        print(json.dumps({k: got[k] for k in ("pooled_z", "reading")}, indent=1))
    else:
        print(json.dumps(measure()["decision"], indent=1))
