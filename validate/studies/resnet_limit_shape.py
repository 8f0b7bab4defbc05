"""A residual campaign's held-out depths against the limit-shape law: the exact infinite-width law, one amplitude.

The campaign's calibrated laws (coherent, dense-shape) fit their finite-K terms; at n = 64 they miss the
held-out K = 128, 256 of several configs by 5-11% after fitting K <= 64 to a few percent.  Where an exact
infinite-width law of the net exists (linear nets, mode by mode; spatial ReLU conv-mlp nets, over their
points with the masks), it has every K-dependence with nothing fitted, and what it leaves out at finite
width is measured to be a depth-independent ``1 + c/n`` (``validate/studies/resnet_width_law.py``).  The
limit-shape law (:func:`amutheory.api.limit_shape_predictor`) is that law times one amplitude ``rho``,
calibrated on the campaign's calibration depths with the campaign's lognormal model (the typical value
is the law times ``exp(-sigma^2/2)``, ``sigma^2 = sigma2_0 + kappa / K``); every other K is held out.

For each campaign of ``--campaign`` (repeatable; ``campaign.json`` and ``results.csv``, nothing
re-measured) and each config the law covers: the law at every campaign depth (:func:`amutheory.api.limit_shape`:
``--draws`` joint draws of inputs and loss directions common to every K where it is a Monte Carlo),
written to ``--out`` (CSV; default ``<campaign>/limit_shape.csv``) a config at a time as soon as it is
done, so a rerun resumes; then per statistic the calibration, the prediction at every depth against the
measured 95% CI (the campaign's own CIs and joint test), the test with the calibration's own error put in,
and, where the campaign has ``held_out_reseed.csv`` (``validate/studies/resnet_held_out_reseed.py``; ``--fresh-file``
names another seed set's file), the held-out K against the CI of those fresh seeds and of both seed sets
pooled.

With fresh seeds it also checks the rule "limit-shape where an exact law covers the net, the campaign's
``selected`` law elsewhere" (the uncovered configs' predictions read from ``summary.json``, not refitted)
over every forward-stable residual config of the campaigns given, per width, and puts the number of
configs passing against what an exact law would pass on those seeds
(:func:`amutheory.campaign.draws.pass_count_null`: the rows' sampling errors correlated as the fresh
seeds' per-seed values say).  ``validate/plans/PREREGISTERED.md`` is the check this was written for.  Bad input
prints one line and exits 2.

    python validate/studies/resnet_limit_shape.py --campaign results/quick --campaign results/resnet-wide
    python validate/studies/resnet_limit_shape.py --campaign results/quick --configs resnet-conv-mlp-k-all-relu --json
    python validate/studies/resnet_limit_shape.py --campaign results/quick --campaign results/quick-preact \
        --fresh-file held_out_reseed_2000.csv
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from amutheory import stats
from amutheory.api import LIMIT_SHAPE_CONSTANTS, LIMIT_SHAPE_DRAWS, block_law_log_sd, block_law_s_bar, \
    limit_shape, limit_shape_predictor
from amutheory.calibrate import calibrate_law
from amutheory.campaign.analysis import _eta_rows, _held_out_checks, _held_out_with_calibration
from amutheory.campaign.analysis_resnet import LAW_ROWS, selected_law
from amutheory.campaign.common import STATISTICS
from amutheory.campaign.draws import draw_groups, pass_count_null, row_influence, row_log_se
from amutheory.campaign.presets import CampaignConfig
from amutheory.campaign.results import load_measurement, read_results
from amutheory.spec import ArchSpec, ProbeProtocol

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # validate/, for _blocks.py
from _blocks import RESEED_FILE, OneLineParser, append_rows, read_rows, seed_s_bar  # noqa: E402

COLUMNS = ("config", "width", "draws", "depth", "law", "log_shape_se")
CI = {"mean": stats.arith_mean_ci, "geo": stats.geo_mean_ci}


def parse(argv=None):
    p = OneLineParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--campaign", action="append", required=True, help="a campaign folder (repeatable)")
    p.add_argument("--configs", default=None, help="comma-separated config names (default: every covered one)")
    p.add_argument("--draws", type=int, default=LIMIT_SHAPE_DRAWS,
                   help=f"joint input draws of the Monte Carlo laws, common to every K (default {LIMIT_SHAPE_DRAWS})")
    p.add_argument("--out", default=None, help="CSV of the law (default <campaign>/limit_shape.csv; one campaign only)")
    p.add_argument("--fresh-file", action="append", default=None,
                   help=f"the file in each campaign folder with its held-out K on fresh seeds "
                        f"(resnet_held_out_reseed.py --out; default {RESEED_FILE}); repeatable: the seed sets "
                        f"are merged")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    args.fresh_file = args.fresh_file or [RESEED_FILE]
    for name in args.fresh_file:
        if Path(name).name != name:
            p.error(f"--fresh-file names a file inside each campaign folder, got the path {name!r}")
    if args.draws < 2:
        p.error("--draws must be >= 2")
    if args.out and len(args.campaign) > 1:
        p.error("--out names one file: give one --campaign with it")
    for folder in map(Path, args.campaign):
        if not (folder / "campaign.json").exists() or not (folder / "results.csv").exists():
            p.error(f"--campaign: {folder} has no campaign.json and results.csv")
    return args


def covered_configs(meta: dict, names: list | None, uncovered: dict | None = None) -> dict:
    """``{name: CampaignConfig}`` of the campaign's forward-stable residual configs an exact law covers
    (``ValueError`` for a name the campaign does not hold); the forward-stable ones it does not cover
    go into ``uncovered`` when given."""
    from amutheory.api import derive

    configs = meta["configs"]
    unknown = [n for n in names or [] if n not in configs]
    if unknown:
        raise ValueError(f"--configs: {', '.join(unknown)} not in the campaign")
    out = {}
    for name in names or list(configs):
        c = configs[name]
        spec = ArchSpec(**c["spec"])
        if spec.family != "resnet":
            continue
        cfg = CampaignConfig(name, spec, tuple(c["depths"]), tuple(c["calibration_depths"]), tuple(c["seeds"]))
        try:
            derive(spec)  # forward-stable
        except ValueError:
            continue
        try:
            limit_shape_predictor(spec)
        except ValueError:
            if uncovered is not None:
                uncovered[name] = cfg
            continue
        out[name] = cfg
    return out


def law_table(path: Path, cfg: CampaignConfig, draws: int, input_var: float, say) -> tuple[dict, dict]:
    """``({K: law}, {K: log_shape_se})`` at every depth of ``cfg``: read from ``path`` or computed and
    appended to it (a config at a time)."""
    rows = [r for r in read_rows(path, lambda r: True, True) if r["config"] == cfg.name]
    rows = [r for r in rows if int(r["width"]) == cfg.spec.width and int(r["draws"]) in (0, draws)]
    have = {int(r["depth"]): (float(r["law"]), float(r["log_shape_se"])) for r in rows}
    if not all(d in have for d in cfg.depths):
        t0 = time.perf_counter()
        tick = lambda done, total: say(f"  {cfg.name}: law, draw {done}/{total}")  # noqa: E731
        law = limit_shape(cfg.spec, list(cfg.depths), draws, 0, input_var, tick)
        have = {d: (float(s), float(e)) for d, s, e in zip(cfg.depths, law["s_bar"], law["log_shape_se"])}
        append_rows(path, COLUMNS, [(cfg.name, cfg.spec.width, law["draws"], d, *have[d]) for d in cfg.depths])
        say(f"  {cfg.name}: law at K = {list(cfg.depths)} in {time.perf_counter() - t0:.1f} s")
    return {d: have[d][0] for d in cfg.depths}, {d: have[d][1] for d in cfg.depths}


def fresh_check(name: str, rows: list, fresh: dict, meas, stat: str) -> list:
    """The held-out rows of a prediction (``rows``: ``depth``, ``calibration``, ``s_pred``) against the
    ``stat`` CI of the fresh seeds (``fresh[(name, K)]``) and of the fresh and the campaign's pooled."""
    out = []
    for r in rows:
        values = fresh.get((name, r["depth"]))
        if r["calibration"] or not values:
            continue
        row = {"depth": r["depth"], "seeds": len(values), "s_pred_log_sd": r.get("s_pred_log_sd")}
        for key, sample in (("", values), ("pooled_", np.concatenate([values, meas.s_bar(r["depth"])]))):
            m, lo, hi = CI[stat](np.asarray(sample), level=meas.level)
            row[f"{key}error"], row[f"{key}inside"] = math.sqrt(m / r["s_pred"]) - 1, bool(lo <= r["s_pred"] <= hi)
        out.append(row)
    return out


def selected_check(res: dict, meas, fresh: dict) -> dict | None:
    """For a config no exact law covers: the campaign's ``selected`` law (picked from its calibration,
    ``summary.json``'s rows, not refitted) at the held-out K on the fresh seeds, both statistics
    (``None`` without a selected law or fresh seeds)."""
    sel = res.get("selected_law") or selected_law(res)
    rows_of = LAW_ROWS.get((sel or {}).get("law"))
    per_depth = rows_of(res) if rows_of else None
    if not per_depth:
        return None
    checked = {stat: fresh_check(res["name"], per_depth[stat], fresh, meas, stat) for stat in STATISTICS}
    if not all(checked.values()):
        return None
    return {"config": res["name"], "law": sel["law"], "fresh": checked,
            "fresh_passed": all(r["inside"] for rows in checked.values() for r in rows)}


def rule_by_width(entries: list) -> dict:
    """The rule "limit-shape where covered, ``selected`` elsewhere" per width: the configs with every
    held-out row inside the fresh seeds' CI, and the null distribution of that count for an exact law
    (:func:`pass_count_null` over the rows' per-seed influence on the fresh seeds), with the one-sided
    p-value ``P(count <= observed)``: ``null`` takes the predictions as exact (the registered test),
    ``null_with_calibration`` adds each prediction's own error (``s_pred_log_sd``, the calibration's
    seed-bootstrap refits) where every row has it.  The null needs every row on the same seeds; without
    that it is ``None``.  ``entries``: ``(width, config, law, fresh_passed, {(stat, K): fresh values},
    {(stat, K): s_pred_log_sd}, {K: fresh seeds})``."""
    out = {}
    for width in sorted({e[0] for e in entries}):
        mine = [e for e in entries if e[0] == width]
        passed = sum(bool(e[3]) for e in mine)
        keys = {e[1]: sorted(e[4]) for e in mine}
        influence = {e[1]: [row_influence(e[4][k], k[0]) for k in keys[e[1]]] for e in mine}
        same_seeds = len({ids for e in mine for ids in e[6].values()}) == 1
        null = pass_count_null(influence) if same_seeds else None
        with_cal = None
        if null and all(e[5].get(k) is not None for e in mine for k in keys[e[1]]):
            ratio = {e[1]: [e[5][k] / row_log_se(e[4][k], k[0]) for k in keys[e[1]]] for e in mine}
            with_cal = pass_count_null(influence, prediction_sd=ratio)
        out[str(width)] = {"configs": [{"config": e[1], "law": e[2], "fresh_passed": e[3]} for e in mine],
                           "fresh_passed": [passed, len(mine)], "null": null,
                           "p_value": null["p_at_most"][passed] if null else None,
                           "null_with_calibration": with_cal,
                           "p_value_with_calibration": with_cal["p_at_most"][passed] if with_cal else None}
    return out


def compare(cfg: CampaignConfig, meas, table: dict, shape_se: dict, fresh: dict, protocol: ProbeProtocol) -> dict:
    """Calibrate ``rho`` on ``cfg``'s calibration depths and check every depth (both statistics):
    the campaign's per-depth rows and held-out verdicts, the joint test with the calibration's error
    (and the law's Monte Carlo shape error) put in, and the held-out K on fresh seeds."""
    fn = limit_shape_predictor(cfg.spec, protocol.input_var, table=table)
    cal = list(cfg.calibration_depths)
    depths = np.array(cfg.depths, float)
    out = {"config": cfg.name, "width": cfg.spec.width, "held_out_test": {}, "statistics": {}}
    for stat in STATISTICS:
        calib = calibrate_law({d: meas.profiles[d] for d in cal}, fn, LIMIT_SHAPE_CONSTANTS, stat,
                              note="limit-shape law", spread="bounded")
        const = calib.constants
        s_pred = dict(zip(cfg.depths, map(float, block_law_s_bar(fn, [const["rho"].value], depths, const, stat))))
        eta_pred = {d: math.sqrt(meas.C / s) for d, s in s_pred.items()}
        rows = _eta_rows(cfg, meas, stat, eta_pred, s_pred, set(cal))
        passed, max_err, joint = _held_out_checks(out, meas, stat, rows)
        # the prediction's own error: the calibration's seed-bootstrap refits, and the law's Monte Carlo shape
        refits = block_law_log_sd(fn, LIMIT_SHAPE_CONSTANTS, depths, const, calib, stat)
        log_sd = None if refits is None else np.hypot(refits, [shape_se[d] for d in cfg.depths]).tolist()
        with_cal = _held_out_with_calibration(out, meas, stat, rows,
                                              SimpleNamespace(depths=list(cfg.depths), s_bar_log_sd=log_sd))
        fresh_rows = fresh_check(cfg.name, rows, fresh, meas, stat)
        out["statistics"][stat] = {
            "rho": const["rho"].value, "rho_se": const["rho"].error, "residual_rms_log": calib.residual_rms,
            "per_depth": rows, "passed": passed, "max_rel_error": max_err, "passed_joint": joint,
            "passed_joint_with_calibration": with_cal, "fresh": fresh_rows,
            "fresh_passed": all(r["inside"] for r in fresh_rows) if fresh_rows else None,
            "pooled_passed": all(r["pooled_inside"] for r in fresh_rows) if fresh_rows else None}
    both = [out["statistics"][s] for s in STATISTICS]
    out["passed"] = all(s["passed"] for s in both)
    for key in ("fresh_passed", "pooled_passed"):
        out[key] = all(s[key] for s in both) if all(s[key] is not None for s in both) else None
    return out


def main(argv=None) -> int:
    args = parse(argv)
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    result = {"draws": args.draws, "fresh_file": args.fresh_file, "campaigns": []}
    rule = []  # rule_by_width's entries, a config at a time
    for folder in map(Path, args.campaign):
        meta = json.loads((folder / "campaign.json").read_text())
        protocol = ProbeProtocol(**meta.get("protocol", {}))
        uncovered: dict = {}
        try:
            configs = covered_configs(meta, args.configs.split(",") if args.configs else None, uncovered)
        except ValueError as exc:
            print(f"error: {exc} ({folder / 'campaign.json'})", file=sys.stderr)
            return 2
        if not configs and not uncovered:
            print(f"error: {folder} has no forward-stable residual config", file=sys.stderr)
            return 2
        path = Path(args.out) if args.out else folder / "limit_shape.csv"
        blocks, _ = read_results(folder / "results.csv")
        fresh, fresh_ids = _fresh_seeds(folder, args.fresh_file)
        say(f"{folder}: {len(configs)} configs")
        rows, measured = [], {}
        for j, (name, cfg) in enumerate(configs.items(), 1):
            say(f"[{j}/{len(configs)}] {name}")
            try:
                meas = load_measurement(folder / "results.csv", cfg, blocks=blocks)
            except ValueError as exc:
                say(f"  skipped: {exc}")
                continue
            measured[name] = meas
            table, shape_se = law_table(path, cfg, args.draws, protocol.input_var, say)
            rows.append(compare(cfg, meas, table, shape_se, fresh, protocol))
            if rows[-1]["fresh_passed"] is not None:
                rule.append((cfg.spec.width, name, "limit-shape", rows[-1]["fresh_passed"], _fresh_values(cfg, fresh),
                             _prediction_sd(rows[-1]["statistics"]), _held_out(cfg, fresh_ids)))
        summary = _summary(folder) if uncovered and fresh else {}
        for name, cfg in uncovered.items():
            res = summary.get(name)
            if res is None:
                continue
            check = selected_check(res, load_measurement(folder / "results.csv", cfg, blocks=blocks), fresh)
            if check is not None:
                say(f"  {name}: no exact law; the campaign's selected law ({check['law']}) on the fresh seeds")
                rule.append((cfg.spec.width, name, check["law"], check["fresh_passed"], _fresh_values(cfg, fresh),
                             _prediction_sd({stat: {"fresh": rows} for stat, rows in check["fresh"].items()}),
                             _held_out(cfg, fresh_ids)))
        draws = draw_groups(measured)  # configs drawing the same normals fail or pass together
        result["campaigns"].append({"campaign": str(folder), "configs": rows,
                                    "draw_groups": draws["groups"], "effective_configs": draws["effective_configs"],
                                    "passed": [sum(r["passed"] for r in rows), len(rows)],
                                    **{key: [sum(bool(r[key]) for r in rows), sum(r[key] is not None for r in rows)]
                                       for key in ("fresh_passed", "pooled_passed")}})
    result["rule"] = rule_by_width(rule)
    if args.json:
        print(json.dumps(result))
        return 0
    for camp in result["campaigns"]:
        if not camp["configs"]:
            print(f"{camp['campaign']}: no config an exact law covers")
            continue
        print(f"{camp['campaign']}: the limit-shape law (exact infinite-width law x rho, rho calibrated), held out "
              f"at every K but the calibration's")
        print(f"{'config':>36} {'stat':>4} {'rho':>13} {'held-out eta* error (K)':>34} {'in CI':>6} {'fresh seeds':>22}")
        for r in camp["configs"]:
            for stat, s in r["statistics"].items():
                held = [x for x in s["per_depth"] if not x["calibration"]]
                errs = ", ".join(f"{x['rel_error']:+.1%}{'' if x['inside_ci'] else '!'}" for x in held)
                fr = ", ".join(f"{x['error']:+.1%}{'' if x['inside'] else '!'}" for x in s["fresh"]) or "-"
                print(f"{r['config']:>36} {stat:>4} {s['rho']:>7.3f}+-{s['rho_se']:.3f} {errs:>34} "
                      f"{'yes' if s['passed'] else 'no':>6} {fr:>22}")
        print(f"every held-out row inside the CI: {camp['passed'][0]} of {camp['passed'][1]} configs "
              f"(fresh seeds: {camp['fresh_passed'][0]} of {camp['fresh_passed'][1]}; campaign and fresh seeds pooled: "
              f"{camp['pooled_passed'][0]} of {camp['pooled_passed'][1]}); the configs are "
              f"{len(camp['draw_groups'])} groups sharing their seeds' draws (effective number of independent configs "
              f"{camp['effective_configs']:.1f}): " + "; ".join(", ".join(g) for g in camp["draw_groups"]))
    for width, w in result["rule"].items():
        null = w["null"]
        got, of = w["fresh_passed"]
        verdicts = ", ".join(f"{c['config']} [{c['law']}] {'pass' if c['fresh_passed'] else 'FAIL'}" for c in w["configs"])
        print(f"n = {width}, limit-shape where covered and the campaign's selected law elsewhere, on the fresh "
              f"seeds ({', '.join(args.fresh_file)}): every held-out row inside in {got} of {of} configs ({verdicts})")
        if null:
            print(f"  an exact law would pass {null['expected']:.1f} of {null['configs']} on these seeds (5th "
                  f"percentile {null['percentile_5']}; its {null['rows']} rows are {null['effective_rows']:.1f} "
                  f"effective independent ones); P(count <= {got}) = {w['p_value']:.3f}")
        cal = w["null_with_calibration"]
        if cal:
            print(f"  with each prediction's own calibration error: {cal['expected']:.1f} of {cal['configs']} on "
                  f"average (5th percentile {cal['percentile_5']}); P(count <= {w['fresh_passed'][0]}) = "
                  f"{w['p_value_with_calibration']:.3f}")
    return 0


def _fresh_seeds(folder: Path, names: list) -> tuple[dict, dict]:
    """``({(config, K): per-seed s_bar in seed order}, {(config, K): the seeds})`` of the fresh-seed files
    ``names`` of ``folder``, merged (``SystemExit`` with one line where two files hold the same seed of a
    (config, K))."""
    merged: dict = {}
    for name in names:
        for key, per_seed in seed_s_bar(folder, name).items():
            have = merged.setdefault(key, {})
            if set(have) & set(per_seed):
                raise SystemExit(f"error: --fresh-file {name}: seeds of {key[0]} K={key[1]} already in another file")
            have.update(per_seed)
    return ({key: [v[seed] for seed in sorted(v)] for key, v in merged.items()},
            {key: tuple(sorted(v)) for key, v in merged.items()})


def _summary(folder: Path) -> dict:
    """``{name: result}`` of a campaign's ``summary.json`` (empty without one)."""
    path = folder / "summary.json"
    if not path.exists():
        return {}
    return {c["name"]: c for c in json.loads(path.read_text()).get("configs", [])}


def _prediction_sd(statistics: dict) -> dict:
    """``{(statistic, K): s_pred_log_sd}`` of the fresh rows of ``{statistic: {"fresh": rows}}``."""
    return {(stat, r["depth"]): r.get("s_pred_log_sd") for stat, s in statistics.items() for r in s["fresh"]}


def _held_out(cfg: CampaignConfig, table: dict) -> dict:
    """``{K: table[(cfg, K)]}`` at ``cfg``'s held-out depths that ``table`` has (fresh seeds, or their values)."""
    return {d: table[(cfg.name, d)] for d in cfg.depths if d not in cfg.calibration_depths and (cfg.name, d) in table}


def _fresh_values(cfg: CampaignConfig, fresh: dict) -> dict:
    """``{(statistic, K): fresh per-seed s_bar}`` of ``cfg``'s held-out depths (one row per statistic)."""
    return {(stat, d): values for d, values in _held_out(cfg, fresh).items() for stat in STATISTICS}


if __name__ == "__main__":
    sys.exit(main())
