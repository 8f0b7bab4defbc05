"""Run F of ``validate/plans/FINITE_WIDTH.md`` (addendum 3): the ReLU MLP's left-out backward terms.

A development measurement: no law changes whatever it shows.

* **F1** ReLU MLPs (``C_0 = 16``, batch 8), widths 32, 64, 128, depths 8, 12, 16: the probe's seed mean
  on fresh seeds 10000..12047 against ``mlp-kernel-finite`` at 8192 draws (its registered seed);
* **F2** the linear MLP at the same sizes: the forward-only finite-width kernel law (8192 draws) against
  the exact ``mlp-finite-width``: the backward side's share of the finite-width excess, known exactly;
* **F3** the lead: a backward step's relative variance, ``2/n`` (linear) against ``5/n`` (ReLU), derived
  here in SymPy; the ReLU excess beside the linear backward excess at width ``round(2n/5)``;
* **F4** ``predict``'s default laws at three other geometries (fresh seeds 20000..20511).

    python validate/finite_width_relu_bias.py measure [--part F1 ...]   # one process; resumes; JSON after every net
    python validate/finite_width_relu_bias.py report                         # prints the tables

Results: ``docs/findings/finite_width/relu_bias.json``; ``validate/finite_width_table.py report`` puts them
on the page.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import sympy as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "findings" / "finite_width" / "relu_bias.json"
WIDTHS = (32, 64, 128)
DEPTHS = (8, 12, 16)
C0, BATCH = 16, 8
PROBE_SEEDS = range(10000, 12048)
DRAWS = 8192
#: F4: (activation, width, input features, batch), depths, seeds
GEOMETRIES = (("relu", 48, 8, 4), ("relu", 24, 12, 6), ("linear", 24, 12, 6))
GEOMETRY_DEPTHS = (3, 6, 10, 14)
GEOMETRY_SEEDS = range(20000, 20512)
#: F3's criterion: consistent within this many combined standard errors, at this many nets of 9
CONSISTENT_SE, CONSISTENT_NETS = 2.0, 8


def backward_step_variance() -> dict:
    """One backward step's relative variance, :func:`amutheory.symbolic.chain.backward_width.backward_step_variance`
    (derived there with SymPy): ``(3 - p) / (n p)``; linear (``p = 1``) ``2/n``, ReLU (``p = 1/2``) ``5/n``."""
    from amutheory.symbolic.chain.backward_width import backward_step_variance as derived, p_on
    from amutheory.symbolic.chain.finite_width import n

    rel = derived()
    linear, relu = sp.simplify(rel.subs(p_on, 1)), sp.simplify(rel.subs(p_on, sp.Rational(1, 2)))
    assert linear == 2 / n and relu == 5 / n, (linear, relu)
    return {"relative_variance": str(rel), "linear": str(linear), "relu": str(relu), "ratio": float(relu / linear)}


def _spec(activation, width, depth, c0=C0, batch=BATCH):
    from amutheory.spec import ArchSpec

    return ArchSpec(family="mlp", depth=depth, width=width, activation=activation, input_channels=c0, batch=batch)


def _load() -> dict:
    return json.loads(OUT.read_text()) if OUT.exists() else {}


def _save(d: dict) -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")


def _probe_mean(spec, seeds) -> tuple[float, float]:
    import torch

    from amutheory.measure.probe import probe

    torch.set_num_threads(1)
    s = np.asarray(probe(spec, list(seeds), chunk=64).s_bar)
    return float(s.mean()), float(s.std(ddof=1) / math.sqrt(len(s)))


def _kernel_finite(activation, width) -> dict:
    from amutheory.laws.mlp import chain_of
    from amutheory.symbolic.chain.kernel_law_finite import finite_width_kernel_s_bar

    g = finite_width_kernel_s_bar(chain_of(_spec(activation, width, max(DEPTHS))), list(DEPTHS), draws=DRAWS)
    return {"s_bar": [float(v) for v in g["s_bar"]], "se": [float(v) for v in g["se"]], "draws": g["draws"],
            "seed": g["seed"]}


def _ratio(a, sa, b, sb) -> tuple[float, float]:
    """``a / b - 1`` and its standard error (independent errors, delta method)."""
    r = a / b
    return r - 1.0, r * math.hypot(sa / a, sb / b)


def f1(d: dict) -> None:
    rows = d.setdefault("F1", {})
    for n in WIDTHS:
        law = rows.get(f"law-n{n}") or _kernel_finite("relu", n)
        rows[f"law-n{n}"] = law
        for i, L in enumerate(DEPTHS):
            key = f"n{n}-L{L}"
            if key in rows:
                continue
            t = time.perf_counter()
            mean, se = _probe_mean(_spec("relu", n, L), PROBE_SEEDS)
            deficit, err = _ratio(law["s_bar"][i], law["se"][i], mean, se)
            rows[key] = {"width": n, "depth": L, "probe_mean": mean, "probe_se": se, "seeds": len(PROBE_SEEDS),
                         "law": law["s_bar"][i], "law_se": law["se"][i], "deficit": deficit, "deficit_se": err,
                         "excess": _ratio(mean, se, law["s_bar"][i], law["se"][i])[0],
                         "excess_se": _ratio(mean, se, law["s_bar"][i], law["se"][i])[1]}
            _save(d)
            print(f"F1 relu n={n} L={L}: law/mean - 1 = {deficit:+.3f} +- {err:.3f} ({time.perf_counter() - t:.0f} s)",
                  flush=True)


def _linear_excess(n: int) -> dict:
    """The exact law over the forward-only finite-width kernel law, minus one, at width ``n``."""
    from amutheory.symbolic.chain.finite_width import finite_width_s_bar

    law = _kernel_finite("linear", n)
    exact = [float(v) for v in finite_width_s_bar(_spec("linear", n, max(DEPTHS)), list(DEPTHS))]
    out = []
    for i, L in enumerate(DEPTHS):
        r = exact[i] / law["s_bar"][i]
        out.append({"depth": L, "exact": exact[i], "forward_only": law["s_bar"][i], "forward_only_se": law["se"][i],
                    "backward_excess": r - 1.0, "backward_excess_se": r * law["se"][i] / law["s_bar"][i]})
    return {"width": n, "rows": out, "draws": law["draws"]}


def f2(d: dict) -> None:
    rows = d.setdefault("F2", {})
    for n in WIDTHS:
        if f"n{n}" not in rows:
            rows[f"n{n}"] = _linear_excess(n)
            _save(d)
            print(f"F2 linear n={n}: backward excess {[round(r['backward_excess'], 3) for r in rows[f'n{n}']['rows']]}",
                  flush=True)


def f3(d: dict) -> None:
    rows = d.setdefault("F3", {})
    rows["step_variance"] = backward_step_variance()
    for n in WIDTHS:
        m = round(2 * n / 5)
        if f"n{m}" not in rows:
            rows[f"n{m}"] = _linear_excess(m)
            _save(d)
            print(f"F3 linear n={m}: backward excess {[round(r['backward_excess'], 3) for r in rows[f'n{m}']['rows']]}",
                  flush=True)
    _save(d)


def f4(d: dict) -> None:
    from amutheory.api.selection import predict

    rows = d.setdefault("F4", {})
    for act, n, c0, b in GEOMETRIES:
        key = f"{act}-n{n}-C{c0}-B{b}"
        if key in rows:
            continue
        spec = _spec(act, n, max(GEOMETRY_DEPTHS), c0, b)
        pred = predict(spec, list(GEOMETRY_DEPTHS))
        out = []
        for L, s in zip(GEOMETRY_DEPTHS, pred.s_bar):
            mean, se = _probe_mean(spec.with_(depth=L), GEOMETRY_SEEDS)
            out.append({"depth": L, "law": float(s), "probe_mean": mean, "probe_se": se, "error": float(s) / mean - 1,
                        "z": (float(s) - mean) / se})
        rows[key] = {"activation": act, "width": n, "input_channels": c0, "batch": b, "law": pred.law_registry,
                     "seeds": [GEOMETRY_SEEDS[0], GEOMETRY_SEEDS[-1]], "rows": out}
        _save(d)
        print(f"F4 {key} ({pred.law_registry}): z {[round(r['z'], 2) for r in out]}", flush=True)


def summary(d: dict) -> dict:
    """F1's pooled z, F3's verdict per net and overall (the plan's criterion)."""
    out = {}
    f1_rows = [r for k, r in d.get("F1", {}).items() if not k.startswith("law")]
    if f1_rows:
        zs = [r["deficit"] / r["deficit_se"] for r in f1_rows]
        out["F1"] = {"nets": len(zs), "below": sum(z < 0 for z in zs), "pooled_z": sum(zs) / math.sqrt(len(zs))}
    f3 = d.get("F3", {})
    if f1_rows and all(f"n{round(2 * n / 5)}" in f3 for n in WIDTHS):
        verdicts = []
        for r in f1_rows:
            lin = next(x for x in f3[f"n{round(2 * r['width'] / 5)}"]["rows"] if x["depth"] == r["depth"])
            diff = r["excess"] - lin["backward_excess"]
            se = math.hypot(r["excess_se"], lin["backward_excess_se"])
            verdicts.append({"width": r["width"], "depth": r["depth"], "relu_excess": r["excess"],
                             "relu_excess_se": r["excess_se"], "linear_at": round(2 * r["width"] / 5),
                             "linear_backward_excess": lin["backward_excess"],
                             "linear_backward_excess_se": lin["backward_excess_se"], "z": diff / se,
                             "consistent": abs(diff) <= CONSISTENT_SE * se})
        k = sum(v["consistent"] for v in verdicts)
        out["F3"] = {"nets": verdicts, "consistent": k, "of": len(verdicts),
                     "lead_holds": k >= CONSISTENT_NETS, "criterion": f"|difference| <= {CONSISTENT_SE:g} combined "
                     f"SE at >= {CONSISTENT_NETS} of 9 nets"}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stage", choices=("measure", "report"))
    ap.add_argument("--part", choices=("F1", "F2", "F3", "F4"), action="append")
    args = ap.parse_args(argv)
    d = _load()
    if args.stage == "measure":
        for part in args.part or ("F1", "F2", "F3", "F4"):
            {"F1": f1, "F2": f2, "F3": f3, "F4": f4}[part](d)
            _save(d)
    d["summary"] = summary(d)
    _save(d)
    print(json.dumps(d["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
