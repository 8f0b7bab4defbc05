"""A residual campaign's measured nets against the exact law over their points, seed by seed.

The law over the points (:func:`amutheory.symbolic.resnet.operator.draw_layer_moments`) is exact at
infinite width *given* a seed's inputs and loss directions, for linear residual nets and for ReLU
``conv-mlp`` nets, either padding.  Its mean over input draws is a Monte Carlo, too noisy at a
useful cost to put beside a 96-seed campaign; but the campaign's seeds fix their own inputs and
directions, so the law given each of them is exact, and the measured / law ratio over the same
seeds removes the draws' spread: what remains is the weights' randomness at finite width and
whatever the law leaves out.

For each config of ``--campaign`` that the law covers (default: all of them) and each K of
``--depths``, the first ``--seeds`` seeds of the campaign's measured ``s_bar`` (``results.csv``,
nothing re-measured) are set against the law given each seed's inputs and directions (drawn as
the probe draws them).  Per (config, K): the ratio of the seed means, measured / law, with its
95% paired seed-bootstrap CI, and whether 1 lies inside; the eta* the law predicts for those seeds
against the measured CI of eta* (``sqrt(C / mean s_bar)``, the campaign's mean statistic).

Every (config, K) is one block of seeds appended to ``--out`` (CSV; default
``<campaign>/point_law.csv``) as soon as it is done; a rerun resumes after the blocks already
there.  Bad input prints one line and exits 2.

    python validate/studies/resnet_point_law.py --campaign results/resnet-wide
    python validate/studies/resnet_point_law.py --campaign results/quick --depths 4,16 --seeds 16 --json
    python validate/studies/resnet_point_law.py --campaign results/quick --depths 128 --fresh   # held_out_reseed.csv's seeds
    python validate/studies/resnet_point_law.py --campaign results/quick --depths 128 --fresh held_out_reseed_2000.csv
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from amutheory.measure.probe import law_given_seeds
from amutheory.spec import ArchSpec, ProbeProtocol
from amutheory.symbolic.resnet import operator as resnet_operator
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # validate/, for _blocks.py
from _blocks import RESEED_FILE, OneLineParser, append_rows, positive_ints, read_rows, seed_s_bar  # noqa: E402

COLUMNS = ("config", "padding", "depth", "seed", "s_bar", "law")
N_BOOT = 2000


def parse(argv=None):
    p = OneLineParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--campaign", required=True, help="a campaign folder (campaign.json, results.csv)")
    p.add_argument("--configs", default=None, help="comma-separated config names (default: every covered one)")
    p.add_argument("--depths", type=positive_ints, default=[4, 16, 64], help="K values (default 4,16,64)")
    p.add_argument("--seeds", type=int, default=32, help="the campaign's first seeds to use (default 32)")
    p.add_argument("--fresh", nargs="?", const=RESEED_FILE, default=None, metavar="FILE",
                   help=f"the fresh seeds of <campaign>/FILE (default {RESEED_FILE}; "
                        "validate/studies/resnet_held_out_reseed.py --out; the held-out K) instead of the campaign's own")
    p.add_argument("--out", default=None, help="CSV written as it goes (default <campaign>/point_law.csv; with "
                   "--fresh point_law_fresh.csv, or point_law_<FILE stem>.csv for another FILE)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    if args.seeds < 2:
        p.error("--seeds must be >= 2")
    folder = Path(args.campaign)
    if not (folder / "campaign.json").exists() or not (folder / "results.csv").exists():
        p.error(f"--campaign: {folder} has no campaign.json and results.csv")
    if args.fresh and Path(args.fresh).name != args.fresh:
        p.error(f"--fresh names a file inside the campaign folder, got the path {args.fresh!r}")
    if args.fresh and not (folder / args.fresh).exists():
        p.error(f"--fresh: {folder} has no {args.fresh} (validate/studies/resnet_held_out_reseed.py writes it)")
    return args


def summarise(meas: np.ndarray, law: np.ndarray, C: float = 1.0, seed: int = 0) -> dict:
    """Measured / law of the seed means with its 95% paired bootstrap CI, and the law's eta* against
    the measured eta*'s CI (both from the same resamples)."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(meas), (N_BOOT, len(meas)))
    ratio = meas.mean() / law.mean()
    reps = meas[idx].mean(axis=1) / law[idx].mean(axis=1)
    lo, hi = np.quantile(reps, [0.025, 0.975])
    eta_ci = np.sqrt(C / np.quantile(meas[idx].mean(axis=1), [0.975, 0.025]))
    eta_law = float(np.sqrt(C / law.mean()))
    return {"ratio": float(ratio), "ci": [float(lo), float(hi)], "law_inside": bool(lo <= 1 <= hi),
            "eta_law": eta_law, "eta_measured_ci": [float(v) for v in eta_ci],
            "eta_inside": bool(eta_ci[0] <= eta_law <= eta_ci[1]),
            "eta_error": float(eta_law / np.sqrt(C / meas.mean()) - 1)}


def main(argv=None) -> int:
    args = parse(argv)
    folder = Path(args.campaign)
    campaign = json.loads((folder / "campaign.json").read_text())
    protocol = ProbeProtocol(**campaign.get("protocol", {}))
    names = args.configs.split(",") if args.configs else list(campaign["configs"])
    unknown = [n for n in names if n not in campaign["configs"]]
    if unknown:
        print(f"error: --configs: {', '.join(unknown)} not in {folder / 'campaign.json'}", file=sys.stderr)
        return 2
    specs = {n: ArchSpec(**campaign["configs"][n]["spec"]) for n in names}
    specs = {n: s for n, s in specs.items() if s.family == "resnet" and resnet_operator.covers(s)}
    if not specs:
        print("error: no config of the campaign is covered by the law over the points", file=sys.stderr)
        return 2
    measured = seed_s_bar(folder, args.fresh or False)
    default = ("point_law.csv" if not args.fresh else "point_law_fresh.csv" if args.fresh == RESEED_FILE
               else f"point_law_{Path(args.fresh).stem}.csv")
    path = Path(args.out) if args.out else folder / default
    done: dict = {}
    for row in read_rows(path, lambda r: True, True):
        done.setdefault((row["config"], int(row["depth"])), {})[int(row["seed"])] = (float(row["s_bar"]),
                                                                                   float(row["law"]))
    out, total, step = [], len(specs) * len(args.depths), 0
    for name, spec0 in specs.items():
        for K in args.depths:
            step += 1
            per_seed = measured.get((name, K), {})
            seeds = sorted(per_seed)[:args.seeds] if args.fresh else list(range(args.seeds))
            missing = [sd for sd in seeds if sd not in per_seed]
            if missing or len(seeds) < args.seeds:
                why = f"not measured for seeds {missing[:3]}..." if missing else f"only {len(seeds)} seeds measured"
                print(f"[{step}/{total}] {name} K={K}: {why}, skipped", file=sys.stderr)
                continue
            have = done.get((name, K), {})
            if all(sd in have for sd in seeds):
                print(f"[{step}/{total}] {name} K={K}: complete in {path}, skipped", file=sys.stderr)
                vals = [have[sd] for sd in seeds]
            else:
                t0 = time.perf_counter()
                spec = spec0.with_(depth=K)
                vals = [(per_seed[sd], law)
                        for sd, law in zip(seeds, law_given_seeds(spec, seeds, protocol))]
                append_rows(path, COLUMNS, [(name, spec.padding, K, sd, m, w) for sd, (m, w) in zip(seeds, vals)])
                print(f"[{step}/{total}] {name} K={K}: law for {len(seeds)} seeds in {time.perf_counter() - t0:.1f} s",
                      file=sys.stderr)
            meas, law = np.array([v[0] for v in vals]), np.array([v[1] for v in vals])
            out.append({"config": name, "depth": K, "seeds": len(seeds), **summarise(meas, law)})
    result = {"campaign": str(folder), "seeds": "fresh" if args.fresh else "campaign", "fresh_file": args.fresh,
              "rows": out}
    if args.json:
        print(json.dumps(result))
        return 0
    which = f"the first {{}} fresh seeds of {args.fresh}" if args.fresh else "the campaign's first {} seeds"
    print(f"{folder}: measured / law over the points, {which.format(args.seeds)}, nothing fitted")
    print(f"{'config':>40} {'K':>4} {'measured/law [95% CI]':>28} {'eta* error':>11} {'in CI':>6}")
    for r in out:
        print(f"{r['config']:>40} {r['depth']:>4} {r['ratio']:>9.3f} [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]"
              f"{r['eta_error']:>+11.1%} {'yes' if r['eta_inside'] else 'no':>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
