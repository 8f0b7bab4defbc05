"""Run E of ``validate/plans/FINITE_WIDTH.md``: ReLU conv chains at widths 32 and 64, the finite-width
kernel law (forward kernels drawn at width n, not a registered law for chains) against the probe, the
infinite-width ``chain-kernel`` and the calibrated default ``chain-coherent``.

    python validate/finite_width_relu_chain.py           # run E: writes docs/findings/finite_width/relu_chain.json
    python validate/finite_width_relu_chain.py --run I   # run I (plan addendum 6): fresh seeds, the approximate law,
                                                         # the planned decision: .../relu_chain_i.json
    python validate/finite_width_relu_chain.py --run L   # run L (plan addendum 9): zero padding, fresh seeds, the
                                                         # planned decision: .../relu_chain_l.json (resumes per width)
    python validate/finite_width_relu_chain.py --run O   # diagnostic O (plan addendum 12): widths 32-256 at depths
                                                         # 4, 8: .../relu_chain_o.json (resumes per width)
    python validate/finite_width_relu_chain.py --run Q   # run Q (plan addendum 14): spatial 16, both paddings, fresh
                                                         # seeds, the planned decision: .../relu_chain_q.json
    python validate/finite_width_relu_chain.py --run R   # run R (plan addendum 15): spatial 16, zero padding, fresh
                                                         # seeds, the planned decision: .../relu_chain_r.json
    python validate/finite_width_relu_chain.py --run R2  # run R2 (plan addendum 41): run R's nets measured with the
                                                         # size-biased probe, 4096 fresh seeds: .../relu_chain_r2.json
    python validate/finite_width_relu_chain.py --run L2  # report L2 (addendum 41): run L's nets (spatial 8) the same
                                                         # way, reports only: .../relu_chain_l2.json
    python validate/finite_width_relu_chain.py --run Q2  # diagnostic SB2 (addendum 42): run Q's circular nets the same
                                                         # way, reports only: .../relu_chain_q2.json

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


def spec_of(width: int, depth: int, padding: str = "circular", spatial: int = 8):
    from amutheory.spec import ArchSpec

    return ArchSpec(family="conv", dim=1, depth=depth, width=width, kernel=3, spatial=spatial, padding=padding,
                    activation="relu", input_channels=3)


RUN_I = {"out": ROOT / "docs" / "findings" / "finite_width" / "relu_chain_i.json", "seeds": range(40000, 41024)}
#: run L (addendum 9): run I's geometry with zero padding, fresh seeds
RUN_L = {"out": ROOT / "docs" / "findings" / "finite_width" / "relu_chain_l.json", "seeds": range(100000, 101024)}
#: run Q (addendum 14): ArchSpec's default chain (spatial 16), both paddings, fresh seeds
RUN_Q = {"out": ROOT / "docs" / "findings" / "finite_width" / "relu_chain_q.json", "seeds": range(170000, 171024),
         "spatial": 16, "paddings": ("circular", "zero"), "decides": "circular"}
#: run R (addendum 15): run Q's zero-padded geometry on fresh seeds, a confirmatory check deciding zero padding
RUN_R = {"out": ROOT / "docs" / "findings" / "finite_width" / "relu_chain_r.json", "seeds": range(180000, 181024),
         "spatial": 16, "paddings": ("zero",), "decides": "zero"}
#: diagnostic SB2 (addendum 42): run Q's circular nets measured with the size-biased probe, reports only
RUN_Q2 = {"out": ROOT / "docs" / "findings" / "finite_width" / "relu_chain_q2.json", "seeds": range(530000, 534096),
          "spatial": 16, "paddings": ("circular",), "decides": "circular", "estimator": "size_biased"}
#: report L2 (addendum 41): run L's nets (spatial 8) measured the same way, reports only
RUN_L2 = {"out": ROOT / "docs" / "findings" / "finite_width" / "relu_chain_l2.json", "seeds": range(500000, 504096),
          "spatial": 8, "paddings": ("zero",), "decides": "zero", "estimator": "size_biased"}
#: run R2 (addendum 41): run R's nets measured with the size-biased probe on 4096 fresh seeds
RUN_R2 = {"out": ROOT / "docs" / "findings" / "finite_width" / "relu_chain_r2.json", "seeds": range(480000, 484096),
          "spatial": 16, "paddings": ("zero",), "decides": "zero", "estimator": "size_biased"}


def _values(spec, REGISTRY, finite_width_kernel_s_bar, with_backward: bool) -> dict:
    values = {"kernel-finite (n)": np.asarray(finite_width_kernel_s_bar(spec, list(HELD_OUT))["s_bar"], float),
              "chain-kernel (n = oo)": np.asarray(REGISTRY["chain-kernel"].evaluate(spec, list(HELD_OUT)).s_bar),
              "chain-coherent (calibrated)": np.asarray(REGISTRY["chain-coherent"].evaluate(
                  spec, list(HELD_OUT), calibration_depths=CALIBRATION, calibration_seeds=32).s_bar)}
    if with_backward:
        values["chain-kernel-finite-backward"] = np.asarray(
            REGISTRY["chain-kernel-finite-backward"].evaluate(spec, list(HELD_OUT)).s_bar)
    return values


def decide(rows: list, padding: str = "circular") -> dict:
    """Run I's planned rule (run D's): the new law no worse than the calibrated default in max |error| and
    max |z| at both widths."""
    out = {}
    for n in WIDTHS:
        by = {r["law"]: r for r in rows if r["width"] == n and r.get("padding", "circular") == padding}
        new, old = by["chain-kernel-finite-backward"], by["chain-coherent (calibrated)"]
        e_new, e_old = max(abs(x) for x in new["error"]), max(abs(x) for x in old["error"])
        z_new, z_old = max(abs(x) for x in new["z"]), max(abs(x) for x in old["z"])
        out[str(n)] = {"max_abs_error": [e_new, e_old], "max_abs_z": [z_new, z_old],
                       "no_worse": e_new <= e_old and z_new <= z_old}
    out["default_changes"] = all(v["no_worse"] for v in out.values())
    return out


#: diagnostic O (addendum 12): widths, depths, fresh seeds
RUN_O = {"out": ROOT / "docs" / "findings" / "finite_width" / "relu_chain_o.json", "seeds": range(140000, 141024),
         "widths": (32, 64, 128, 256), "depths": (4, 8)}


def diagnostic_o() -> dict:
    """Diagnostic O: the probe's mean against the infinite-width, the forward-only and the backward laws across
    widths at fixed depths, and the reading fixed in the plan."""
    import math

    import torch

    from amutheory.laws import REGISTRY
    from amutheory.measure.probe import probe
    from amutheory.symbolic.chain.kernel_law_finite import finite_width_kernel_s_bar

    torch.set_num_threads(1)
    out, seeds, depths = RUN_O["out"], RUN_O["seeds"], list(RUN_O["depths"])
    d = json.loads(out.read_text()) if out.exists() else {"plan": "validate/plans/FINITE_WIDTH.md diagnostic O",
                                                          "seeds": [seeds[0], seeds[-1]], "widths": {}}
    for n in RUN_O["widths"]:
        if str(n) in d["widths"]:
            continue
        t0 = time.time()
        spec = spec_of(n, max(depths))
        kf = finite_width_kernel_s_bar(spec, depths)
        laws = {"chain-kernel (n = oo)": REGISTRY["chain-kernel"].evaluate(spec, depths),
                "chain-kernel-finite-backward": REGISTRY["chain-kernel-finite-backward"].evaluate(spec, depths)}
        values = {"kernel-finite (n)": (np.asarray(kf["s_bar"]), np.asarray(kf["se"]))}
        values.update({k: (np.asarray(v.s_bar), np.asarray(v.s_bar_se)) for k, v in laws.items()})
        rows = []
        for i, L in enumerate(depths):
            s = np.asarray(probe(spec_of(n, L), seeds, chunk=64).s_bar, float)
            mean, se = float(s.mean()), float(s.std(ddof=1) / math.sqrt(len(s)))
            row = {"depth": L, "probe_mean": mean, "probe_se": se}
            for k, (v, vse) in values.items():
                row[k] = {"s_bar": float(v[i]), "error": float(v[i] / mean - 1),
                          "z": float((v[i] - mean) / math.hypot(se, vse[i]))}
            rows.append(row)
        d["widths"][str(n)] = rows
        out.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
        print(f"O n={n}: " + "; ".join(f"{k} {[round(100 * r[k]['error'], 1) for r in rows]}" for k in values)
              + f" ({time.time() - t0:.0f} s)", flush=True)
    d["reading"] = read_o(d)
    out.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
    return d


def read_o(d: dict) -> str:
    """The reading fixed in plan addendum 12."""
    wide = d["widths"][str(max(RUN_O["widths"]))]
    inf = "chain-kernel (n = oo)"
    if any(abs(r[inf]["error"]) >= 0.20 for r in wide):
        return "structural"
    at8 = [abs(next(r for r in d["widths"][str(n)] if r["depth"] == 8)["kernel-finite (n)"]["error"]) * n
           for n in RUN_O["widths"]]
    closes = max(at8) <= 2 * min(at8)
    near = all(abs(r[inf]["error"]) < 0.10 or abs(r[inf]["z"]) <= 3 for r in wide)
    return "finite width" if near and closes else "between the planned readings"


def run_q(run: dict = RUN_Q, name: str = "Q") -> dict:
    """Run Q (addendum 14): run I's comparison at spatial 16 for both paddings, resuming per (padding, width);
    the planned decision for circular padding.  Run R (addendum 15, ``run=RUN_R``): the same for zero padding
    on fresh seeds, deciding it."""
    import torch

    from amutheory.laws import REGISTRY
    from amutheory.measure.probe import probe
    from amutheory.measure.size_biased import resolve_tilt, size_biased_probe
    from amutheory.symbolic.chain.kernel_law_finite import finite_width_kernel_s_bar

    torch.set_num_threads(1)
    out, seeds, N = run["out"], run["seeds"], run["spatial"]
    d = json.loads(out.read_text()) if out.exists() else {"plan": f"validate/plans/FINITE_WIDTH.md run {name}",
                                                          "seeds": len(seeds), "first_seed": seeds[0], "rows": []}
    for padding in run["paddings"]:
        for n in WIDTHS:
            if any(r["width"] == n and r["padding"] == padding for r in d["rows"]):
                print(f"{padding} width {n}: already in {out.name}", flush=True)
                continue
            t0 = time.time()
            if run.get("estimator") == "size_biased":
                s_bar = {L: size_biased_probe(spec_of(n, L, padding, N), seeds, chunk=64,
                                              pooled=resolve_tilt(spec_of(n, L, padding, N), "auto")).s_bar
                         for L in HELD_OUT}
            else:
                s_bar = {L: probe(spec_of(n, L, padding, N), seeds).s.mean(axis=1) for L in HELD_OUT}
            mean = np.array([s_bar[L].mean() for L in HELD_OUT])
            se = np.array([s_bar[L].std(ddof=1) / np.sqrt(len(seeds)) for L in HELD_OUT])
            var_ln = [float(np.var(np.log(s_bar[L][s_bar[L] > 0]), ddof=1)) for L in HELD_OUT]
            spec = spec_of(n, max(HELD_OUT), padding, N)
            for name, law in _values(spec, REGISTRY, finite_width_kernel_s_bar, True).items():
                d["rows"].append({"width": n, "padding": padding, "law": name, "held_out": list(HELD_OUT),
                                  "error": (law / mean - 1).tolist(), "z": ((law - mean) / se).tolist(),
                                  "measured_rel_se": (se / mean).tolist(), "spec": str(spec), "var_ln": var_ln})
                print(f"{padding} n={n} {name}: {', '.join(f'{e:+.1%}' for e in law / mean - 1)}", flush=True)
            out.write_text(json.dumps(d, indent=1))
            print(f"{padding} width {n}: {time.time() - t0:.0f} s", flush=True)
    d["decision"] = decide(d["rows"], run["decides"])
    d["decides"] = run["decides"]
    if "zero" in run["paddings"] and run["decides"] != "zero":
        d["zero_padding_reported"] = decide(d["rows"], "zero")
    out.write_text(json.dumps(d, indent=1))
    return d


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", choices=("E", "I", "L", "O", "Q", "R", "R2", "L2", "Q2"), default="E",
                    help="E: the plan's run E; I: addendum 6 (fresh seeds); L: addendum 9 (zero padding, fresh seeds); "
                         "O: addendum 12 (a diagnostic across widths); Q: addendum 14 (spatial 16, both paddings); R: addendum "
                         "15 (spatial 16, zero padding, fresh seeds); R2: addendum 41 (R's nets, the size-biased probe); L2: addendum 41's report (L's nets, the same probe); Q2: addendum 42 (Q's circular nets, the same probe)")
    args = ap.parse_args(argv)
    if args.run == "O":
        print(diagnostic_o()["reading"])
        return 0
    if args.run in ("Q", "R", "R2", "L2", "Q2"):
        run = {"Q": RUN_Q, "R": RUN_R, "R2": RUN_R2, "L2": RUN_L2, "Q2": RUN_Q2}[args.run]
        print(json.dumps(run_q(run, args.run).get("decision"), indent=1))
        return 0
    from amutheory.laws import REGISTRY
    from amutheory.measure.probe import probe
    from amutheory.symbolic.chain.kernel_law_finite import finite_width_kernel_s_bar

    run_i = args.run in ("I", "L")  # a registered check: fresh seeds, held-out depths, the planned decision
    padding = "zero" if args.run == "L" else "circular"
    out, seeds = ({"I": (RUN_I["out"], RUN_I["seeds"]), "L": (RUN_L["out"], RUN_L["seeds"])}
                  .get(args.run, (OUT, range(SEEDS))))
    depths = HELD_OUT if run_i else DEPTHS
    rows = []
    if args.run == "L" and out.exists():  # resume: keep the widths already measured
        rows = [r for r in json.loads(out.read_text())["rows"]]
    for n in WIDTHS:
        if any(r["width"] == n for r in rows):
            print(f"width {n}: already in {out.name}", flush=True)
            continue
        t0 = time.time()
        profiles = {d: probe(spec_of(n, d, padding), seeds).s for d in depths}
        s_bar = {d: profiles[d].mean(axis=1) for d in depths}
        mean = np.array([s_bar[d].mean() for d in HELD_OUT])
        se = np.array([s_bar[d].std(ddof=1) / np.sqrt(len(seeds)) for d in HELD_OUT])
        spec = spec_of(n, max(HELD_OUT), padding)
        for name, law in _values(spec, REGISTRY, finite_width_kernel_s_bar, run_i).items():
            rows.append({"width": n, "law": name, "held_out": list(HELD_OUT), "error": (law / mean - 1).tolist(),
                         "z": ((law - mean) / se).tolist(), "measured_rel_se": (se / mean).tolist()})
            print(f"n={n} {name}: {', '.join(f'{e:+.1%}' for e in law / mean - 1)}", flush=True)
        record = {"plan": f"validate/plans/FINITE_WIDTH.md run {args.run}", "seeds": len(seeds),
                  "first_seed": seeds[0], "spec": str(spec_of(n, max(HELD_OUT), padding)), "rows": rows}
        if run_i and len({r["width"] for r in rows}) == len(WIDTHS):
            record["decision"] = decide(rows)
        out.write_text(json.dumps(record, indent=1))
        print(f"width {n}: {time.time() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
