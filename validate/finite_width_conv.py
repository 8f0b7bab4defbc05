"""Run C of validate/plans/FINITE_WIDTH.md: the linear circular conv chain at width 16.

1-D, kernel 3, spatial 8, batch 8, 3 input channels; depths 2, 3, 4, 6, 8, 12, 16, 24, 32; probe
seeds 0..511 at every depth.  Criterion (fixed by the plan): the predicted ratio ``eta*(L) / eta*(2)``
of the finite-width law (:mod:`amutheory.symbolic.chain.finite_width_modes`, nothing fitted) inside the
measured ratio's seed-bootstrap 95% interval at every depth (a ratio of means over the same seeds,
resampled jointly), and the z of ``ln`` of the ``s_bar`` ratio (bootstrap standard error) <= 3.

Writes docs/findings/finite_width/conv_width16.json as it goes; prints a markdown table.

    PYTHONPATH=. OMP_NUM_THREADS=1 python validate/finite_width_conv.py

Run C2 (plan addendum 40): the same net with the size-biased probe (:mod:`amutheory.measure.size_biased`, the
pooled tilt), fresh seeds 430000..446383 at every depth, z of ``ln`` of the ratio of means (delta method, the
seeds' paired covariance); resumes per depth from docs/findings/finite_width/conv_width16_c2.json.

    PYTHONPATH=. OMP_NUM_THREADS=1 python validate/finite_width_conv.py --run C2
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from amutheory.bootstrap import seed_draws
from amutheory.stats import lognormal_mean_coverage
from amutheory.measure.probe import probe
from amutheory.spec import ArchSpec
from amutheory.symbolic.chain.finite_width_modes import finite_width_chain_s_bar
from amutheory.symbolic.chain.spectral import spectral_s_bar

DEPTHS = (2, 3, 4, 6, 8, 12, 16, 24, 32)
SEEDS = range(512)
N_BOOT = 4000
OUT = Path("docs/findings/finite_width/conv_width16.json")
SPEC = ArchSpec(family="conv", dim=1, depth=max(DEPTHS), width=16, kernel=3, spatial=8, padding="circular",
                activation="linear", input_channels=3, batch=8)


def _write(payload: dict, out: Path = OUT) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, indent=1))
    tmp.replace(out)


def main() -> None:
    assert SPEC.c == 1.0, SPEC.c
    payload = {"plan": "validate/plans/FINITE_WIDTH.md run C", "spec": repr(SPEC), "depths": list(DEPTHS),
               "seeds": [min(SEEDS), max(SEEDS)], "n_boot": N_BOOT, "measured": {}}
    _write(payload)
    per_seed = {}
    for d in DEPTHS:
        t = time.time()
        res = probe(SPEC.with_(depth=d), SEEDS, chunk=64)
        per_seed[d] = res.s_bar
        payload["measured"][str(d)] = {"s_bar_per_seed": res.s_bar.tolist(), "mean": float(res.s_bar.mean()),
                                       "se": float(res.s_bar.std(ddof=1) / np.sqrt(len(res.s_bar)))}
        _write(payload)
        print(f"depth {d}: mean s_bar {res.s_bar.mean():.5g} ({time.time() - t:.1f} s)", flush=True)

    fw = finite_width_chain_s_bar(SPEC, DEPTHS)
    inf = spectral_s_bar(SPEC, DEPTHS)
    ratio = lambda s: np.sqrt(s[0] / s)  # noqa: E731  eta*(L) / eta*(2)
    cols = np.stack([per_seed[d] for d in DEPTHS], axis=1)  # seeds x depths, paired by seed index
    means = cols.mean(axis=0)
    draws = seed_draws(cols.shape[0], N_BOOT, 0)
    boot = cols[draws].mean(axis=1)  # n_boot x depths
    boot_ratio = np.sqrt(boot[:, :1] / boot)
    lo, hi = np.quantile(boot_ratio, [0.025, 0.975], axis=0)
    log_ratio_boot = np.log(boot / boot[:, :1])
    log_se = log_ratio_boot.std(axis=0, ddof=1)
    rows = []
    for i, d in enumerate(DEPTHS):
        meas, pred, pinf = ratio(means)[i], ratio(fw)[i], ratio(inf)[i]
        z = (np.log(means[i] / means[0]) - np.log(fw[i] / fw[0])) / log_se[i] if i else 0.0
        rows.append({"depth": d, "measured_ratio": float(meas), "ci": [float(lo[i]), float(hi[i])],
                     "spectral_ratio": float(pinf), "finite_width_ratio": float(pred),
                     "inside": bool(lo[i] <= pred <= hi[i]), "z_log_s_bar_ratio": float(z),
                     "law_s_bar": float(fw[i]), "spectral_s_bar": float(inf[i]), "measured_s_bar": float(means[i])})
    payload["table"] = rows
    payload["verdict"] = {"all_inside": all(r["inside"] for r in rows),
                          "max_abs_z": max(abs(r["z_log_s_bar_ratio"]) for r in rows)}
    _write(payload)
    print("\n| depth | measured eta*(L)/eta*(2) [95% CI] | spectral (n = oo) | finite width | inside? | z (ln s_bar ratio) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['depth']} | {r['measured_ratio']:.4f} [{r['ci'][0]:.4f}, {r['ci'][1]:.4f}] | "
              f"{r['spectral_ratio']:.4f} | {r['finite_width_ratio']:.4f} | {'yes' if r['inside'] else 'NO'} | "
              f"{r['z_log_s_bar_ratio']:+.2f} |")
    print(f"\nall inside: {payload['verdict']['all_inside']}; max |z| = {payload['verdict']['max_abs_z']:.2f}")


C2_SEEDS = range(430000, 446384)
C2_OUT = Path("docs/findings/finite_width/conv_width16_c2.json")
C2_COVERAGE_SAMPLES = 2000


def run_c2() -> None:
    from amutheory.measure.size_biased import size_biased_probe

    payload = json.loads(C2_OUT.read_text()) if C2_OUT.exists() else {
        "plan": "validate/plans/FINITE_WIDTH.md addendum 40 (run C2)", "spec": repr(SPEC), "depths": list(DEPTHS),
        "seeds": [min(C2_SEEDS), max(C2_SEEDS)], "estimator": "size_biased_probe(pooled=True)", "measured": {}}
    for d in DEPTHS:
        if str(d) in payload["measured"]:
            continue
        t = time.time()
        res = size_biased_probe(SPEC.with_(depth=d), C2_SEEDS, chunk=64, pooled=True)
        v = res.s_bar
        payload["measured"][str(d)] = {"s_bar_w_per_seed": [float(f"{x:.7g}") for x in v], "mean": float(v.mean()),
                                       "se": float(v.std(ddof=1) / np.sqrt(len(v))),
                                       "var_ln": float(np.var(np.log(v), ddof=1))}
        _write(payload, C2_OUT)
        print(f"depth {d}: size-biased mean {v.mean():.5g} ({time.time() - t:.1f} s)", flush=True)

    fw = finite_width_chain_s_bar(SPEC, DEPTHS)
    cols = np.stack([np.asarray(payload["measured"][str(d)]["s_bar_w_per_seed"]) for d in DEPTHS], axis=1)
    n = cols.shape[0]
    means = cols.mean(axis=0)
    cov = np.cov(cols, rowvar=False) / n
    half = n // 2
    rows = []
    for i, d in enumerate(DEPTHS):
        var_log_ratio = cov[i, i] / means[i] ** 2 + cov[0, 0] / means[0] ** 2 - 2 * cov[i, 0] / (means[i] * means[0])
        z_ratio = ((np.log(fw[i] / fw[0]) - np.log(means[i] / means[0])) / np.sqrt(var_log_ratio)) if i else 0.0
        se = np.sqrt(cov[i, i])
        a, b = cols[:half, i], cols[half:, i]
        se_diff = np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
        var_ln = payload["measured"][str(d)]["var_ln"]
        rows.append({"depth": d, "law_s_bar": float(fw[i]), "mean": float(means[i]), "se": float(se),
                     "z_mean": float((fw[i] - means[i]) / se), "measured_ratio": float(np.sqrt(means[0] / means[i])),
                     "law_ratio": float(np.sqrt(fw[0] / fw[i])), "z_log_ratio": float(z_ratio),
                     "halves": [float(a.mean()), float(b.mean())], "z_halves": float((a.mean() - b.mean()) / se_diff),
                     "var_ln": var_ln,
                     "lognormal_coverage_3se": lognormal_mean_coverage(var_ln, n, 3.0, C2_COVERAGE_SAMPLES, 40 + i)})
    payload["table"] = rows
    payload["verdict"] = {"max_abs_z_log_ratio": max(abs(r["z_log_ratio"]) for r in rows)}
    payload["verdict"]["met"] = payload["verdict"]["max_abs_z_log_ratio"] <= 3
    _write(payload, C2_OUT)
    print("\n| depth | law ratio | measured ratio | z (ln ratio) | mean: error (z) | halves: z | Var ln (s_bar w) | "
          "log-normal coverage of 3 se |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['depth']} | {r['law_ratio']:.4f} | {r['measured_ratio']:.4f} | {r['z_log_ratio']:+.2f} | "
              f"{r['law_s_bar'] / r['mean'] - 1:+.1%} ({r['z_mean']:+.2f}) | {r['z_halves']:+.2f} | {r['var_ln']:.2f} | "
              f"{r['lognormal_coverage_3se']:.3f} |")
    print(f"\nmax |z| of the ln ratio {payload['verdict']['max_abs_z_log_ratio']:.2f}: rule "
          f"{'met' if payload['verdict']['met'] else 'not met'}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", default="C", choices=("C", "C2"))
    if ap.parse_args().run == "C2":
        run_c2()
    else:
        main()
