"""Do a residual campaign's held-out predictions hold on seeds the campaign never drew?

The campaign measures every depth on the same seeds ``0 .. S-1``, and a seed draws the same
standard normals for the stem and the first blocks at every K and every init (only their scale
differs), and the same inputs and loss directions for every init at one K.  So the configs of a
preset are not independent evidence: one unlucky draw of the seed set at a held-out K moves all
of them the same way.  This script re-measures the held-out depths of a finished campaign
(``--campaign DIR``, its ``summary.json``) on a disjoint block of seeds (``--first-seed``, default
1000) and checks the campaign's own predictions (the coherent law and, where they cover the
config, the dense-shape law and the exact law; calibrated on the campaign's seeds, not
refitted) against the fresh seeds' 95% CI, for the mean and the geometric mean, and against the
pooled seeds (old and new: twice the seeds, an interval ~0.7 times as wide).  It also refits the campaign's deepest-K
exponent with the held-out K taken from the fresh seeds (the other K from the campaign's), so
that one draw of the seed set at a held-out K no longer tilts the slope of every config alike.

Every (config, depth) is one block of seeds appended to ``--out`` (CSV; default
``DIR/held_out_reseed.csv``) as soon as it is done; a rerun resumes after the blocks already
there, and a file of another campaign is refused.  Bad input prints one line and exits 2.

    python validate/studies/resnet_held_out_reseed.py --campaign results/resnet-wide --only resnet-preact-k-all-relu
    python validate/studies/resnet_held_out_reseed.py --campaign results/quick --seeds 48 --json
    python validate/studies/resnet_held_out_reseed.py --campaign results/resnet-wider --chunk 6   # n = 256: ~14 GB
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from amutheory import stats
from amutheory.campaign.analysis_resnet import LAW_ROWS, selected_law
from amutheory.measure.probe import probe
from amutheory.spec import ArchSpec, ProbeProtocol

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # validate/, for _blocks.py
from _blocks import (RESEED_FILE, OneLineParser, add_block_options, append_rows, check_seeds,  # noqa: E402
                     read_rows, seed_s_bar)

COLUMNS = ("campaign", "config", "depth", "seed", "s_bar")
CI = {"mean": stats.arith_mean_ci, "geo": stats.geo_mean_ci}


def parse(argv=None):
    p = OneLineParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--campaign", required=True, help="a finished campaign's output folder (summary.json)")
    p.add_argument("--only", action="append", default=None, help="config name (repeatable; default: every "
                   "forward-stable residual config of the campaign)")
    add_block_options(p, 96, 1000, None, "(config, depth)")
    p.add_argument("--chunk", type=int, default=16, help="seeds vectorised at once by the probe (default 16; "
                   "lower it to save memory, the values do not depend on it)")
    args = p.parse_args(argv)
    check_seeds(p, args)
    return args


def _verdicts(cfg: dict, fresh: dict, pooled: dict, level: float) -> list:
    """Per law, statistic and held-out depth: the campaign's prediction of ``s_bar`` against the
    CI of the campaign's seeds (as the campaign reported it), of the fresh seeds and of both."""
    rows = []
    for law, rows_of in LAW_ROWS.items():
        per_depth = rows_of(cfg)
        if not per_depth:
            continue
        for stat, ci_fn in CI.items():
            for r in per_depth[stat]:
                d = r["depth"]
                if r["calibration"] or d not in fresh or r.get("s_pred") is None:
                    continue
                row = {"config": cfg["name"], "law": law, "statistic": stat, "depth": d, "s_pred": r["s_pred"],
                       "campaign_inside": bool(r["inside_ci"]), "campaign_error": r["rel_error"]}
                for name, values in (("fresh", fresh[d]), ("pooled", pooled[d])):
                    m, lo, hi = ci_fn(np.asarray(values), level=level)
                    # eta* = sqrt(C / s): the relative error of eta and the CI test through s
                    row[f"{name}_error"] = math.sqrt(m / r["s_pred"]) - 1
                    row[f"{name}_inside"] = bool(lo <= r["s_pred"] <= hi)
                rows.append(row)
    return rows


def _calibration_rms(cfg: dict, law: str):
    """The rms log residual of ``law``'s calibration of the mean (``None`` where it has none: the exact
    law fits nothing for the mean)."""
    res = cfg if law == "coherent" else (cfg.get({"dense-shape": "dense_shape", "exact": "exact_law"}[law]) or {})
    return ((res.get("calibration") or {}).get("mean") or {}).get("residual_rms_log")


def _per_config(configs: list, verdicts: list) -> dict:
    """Per config: whether each law has every held-out row (both statistics, every held-out K)
    inside the CI of the campaign's, the fresh and the pooled seeds, and the law a user would have
    picked from the calibration alone (:func:`amutheory.campaign.analysis_resnet.selected_law`: the
    lower residual standard error of the mean's fit; recomputed here for summaries written before
    the campaign recorded it)."""
    out = {}
    for cfg in configs:
        rows = [r for r in verdicts if r["config"] == cfg["name"]]
        laws = {law: {k: all(r[f"{k}_inside"] for r in rows if r["law"] == law)
                      for k in ("campaign", "fresh", "pooled")}
                for law in LAW_ROWS if any(r["law"] == law for r in rows)}
        rms = {law: _calibration_rms(cfg, law) for law in laws}
        sel = selected_law(cfg) or {}
        out[cfg["name"]] = {"laws": laws, "calibration_rms": rms, "residual_se_log": sel.get("residual_se_log"),
                            "selected_law": sel.get("law")}
    return out


def _fresh_exponent(cfg: dict, fresh: dict, old: dict, level: float) -> dict | None:
    """The campaign's deepest-K exponent fit of the mean (``fitted_exponents.mean.deepest``) redone
    with every held-out K on the fresh seeds and the other K on the campaign's: the slope of
    ``ln eta*`` on ``ln K`` (``-1/2`` that of the mean ``s_bar``, :func:`amutheory.stats.fit_loglog_slope`)
    with its CI from resampling each K's seeds on their own (the two seed sets are disjoint, so the
    K are independent; ``resample="independent"``).  Whether the derived exponent lies inside,
    next to the campaign's own fit; ``None`` where the campaign has no such fit or the seed
    counts differ."""
    deep = ((cfg.get("fitted_exponents") or {}).get("mean") or {}).get("deepest")
    if not deep or cfg.get("derived_exponent_value") is None:
        return None
    columns = [fresh[d] if d in fresh else list(old.get((cfg["name"], d), {}).values()) for d in deep["depths"]]
    if len({len(c) for c in columns}) != 1 or len(columns[0]) < 2:
        return None
    fit = stats.fit_loglog_slope(deep["depths"], np.array(columns).T, level=level, resample="independent")
    lo, hi = -fit.ci[1] / 2, -fit.ci[0] / 2
    derived = cfg["derived_exponent_value"]
    return {"depths": deep["depths"], "fresh_depths": [d for d in deep["depths"] if d in fresh],
            "exponent": -fit.slope / 2, "ci": [lo, hi], "derived": derived, "derived_inside": bool(lo <= derived <= hi),
            "campaign_exponent": deep["exponent"], "campaign_ci": deep["ci"],
            "campaign_derived_inside": bool(deep["derived_inside_ci"])}


def main(argv=None) -> int:
    args = parse(argv)
    folder = Path(args.campaign)
    try:
        summary = json.loads((folder / "summary.json").read_text())
        configs = [c for c in summary["configs"] if c.get("family") == "resnet" and c.get("forward_stable")]
        protocol = ProbeProtocol(**summary.get("protocol", {}))
        old = seed_s_bar(folder)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"error: --campaign {folder}: not a finished campaign folder ({exc})", file=sys.stderr)
        return 2
    names = [c["name"] for c in configs]
    unknown = sorted(set(args.only or []) - set(names))
    if unknown:
        print(f"error: --only {unknown[0]!r} is not a forward-stable residual config of {folder} "
              f"(there: {', '.join(names) or 'none'})", file=sys.stderr)
        return 2
    configs = [c for c in configs if not args.only or c["name"] in args.only]
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    used = {s for c in configs for d in c["held_out_depths"] for s in old.get((c["name"], d), {})}
    if used & set(seeds):
        print(f"error: --first-seed {args.first_seed}: the seeds overlap the campaign's {min(used)}..{max(used)}",
              file=sys.stderr)
        return 2
    path = Path(args.out or folder / RESEED_FILE)
    path.parent.mkdir(parents=True, exist_ok=True)
    tag = str(folder.resolve())
    done: dict = {}
    for row in read_rows(path, lambda r: r["campaign"], tag):
        done.setdefault((row["config"], int(row["depth"])), {})[int(row["seed"])] = float(row["s_bar"])
    verdicts, exponents = [], {}
    for cfg in configs:
        fresh, pooled = {}, {}
        for d in cfg["held_out_depths"]:
            have = done.get((cfg["name"], d), {})
            if all(s in have for s in seeds):
                print(f"[{cfg['name']} K={d}] complete in {path}, skipped", file=sys.stderr)
                values = [have[s] for s in seeds]
            else:
                t0 = time.perf_counter()
                spec = ArchSpec(**cfg["spec"]).with_(depth=d)
                values = list(probe(spec, seeds, protocol, chunk=args.chunk).s_bar)
                append_rows(path, COLUMNS, [(tag, cfg["name"], d, s, v) for s, v in zip(seeds, values)])
                print(f"[{cfg['name']} K={d}] {len(seeds)} seeds in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            fresh[d] = values
            pooled[d] = values + list(old.get((cfg["name"], d), {}).values())
        verdicts += _verdicts(cfg, fresh, pooled, 0.95)
        exponents[cfg["name"]] = _fresh_exponent(cfg, fresh, old, 0.95)
    per_config = _per_config(configs, verdicts)
    for name, fit in exponents.items():
        per_config[name]["exponent"] = fit
    kinds = ("campaign", "fresh", "pooled")
    out = {"campaign": str(folder), "seeds": seeds[0:1] + seeds[-1:], "rows": verdicts,
           "counts": {law: {key: sum(r[key] for r in verdicts if r["law"] == law)
                            for key in ("campaign_inside", "fresh_inside", "pooled_inside")}
                      | {"of": sum(r["law"] == law for r in verdicts)} for law in LAW_ROWS},
           "configs": per_config, "configs_passed": {}}
    for law in (*LAW_ROWS, "selected"):  # "selected": the law picked from the calibration alone, per config
        verdicts_of = [c["laws"].get(c["selected_law"] if law == "selected" else law) for c in per_config.values()]
        out["configs_passed"][law] = {k: sum(bool(v and v[k]) for v in verdicts_of) for k in kinds}
        out["configs_passed"][law]["of"] = sum(v is not None for v in verdicts_of)
    fits = [c["exponent"] for c in per_config.values() if c["exponent"]]
    out["exponents_inside"] = {"campaign": sum(bool(f["campaign_derived_inside"]) for f in fits),
                               "fresh": sum(bool(f["derived_inside"]) for f in fits), "of": len(fits)}
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"held-out predictions of {folder} on seeds {seeds[0]}..{seeds[-1]} (error of predicted eta*; "
          f"'!' outside the 95% CI)")
    print(f"{'config':44s} {'law':12s} {'stat':5s} {'K':>4s} {'campaign seeds':>15s} {'fresh seeds':>12s} "
          f"{'pooled':>9s}")
    for r in verdicts:
        cells = [f"{r[k + '_error']:+.1%}{'' if r[k + '_inside'] else '!'}" for k in ("campaign", "fresh", "pooled")]
        print(f"{r['config']:44s} {r['law']:12s} {r['statistic']:5s} {r['depth']:>4d} {cells[0]:>15s} "
              f"{cells[1]:>12s} {cells[2]:>9s}")
    for law, c in out["counts"].items():
        print(f"{law}: inside the CI at {c['campaign_inside']} (campaign seeds), {c['fresh_inside']} (fresh), "
              f"{c['pooled_inside']} (pooled) of {c['of']} held-out (config, statistic, depth)")
    for name, c in per_config.items():
        f = c["exponent"]
        if f:
            print(f"{name}: exponent over K = {', '.join(map(str, f['depths']))} (held-out K on fresh seeds) "
                  f"{f['exponent']:+.3f} [{f['ci'][0]:+.3f}, {f['ci'][1]:+.3f}], derived {f['derived']:+.3f} "
                  f"{'inside' if f['derived_inside'] else 'OUTSIDE'} (campaign seeds: {f['campaign_exponent']:+.3f}, "
                  f"{'inside' if f['campaign_derived_inside'] else 'outside'})")
    e = out["exponents_inside"]
    print(f"derived exponent inside the deepest-K CI: {e['campaign']} (campaign seeds), {e['fresh']} (held-out K on "
          f"fresh seeds) of {e['of']}")
    for law, c in out["configs_passed"].items():
        what = "the law picked per config from its calibration (residual se)" if law == "selected" else law
        print(f"configs with every held-out row inside, {what}: {c['campaign']} (campaign seeds), {c['fresh']} "
              f"(fresh), {c['pooled']} (pooled) of {c['of']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
