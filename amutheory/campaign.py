"""The validation campaign: measure conv chains over depths, calibrate, predict, compare.

``run_campaign(preset, out_dir)`` (behind ``amutheory validate``) does, for every config of the
preset:

1. **Measure.**  For each depth, the one-step probe (:func:`amutheory.measure.probe.probe`) on
   the config's seeds; the per-layer ``s_l`` go into ``out_dir/results.csv`` one
   ``(config, depth)`` block at a time, flushed and fsync'ed as soon as the block is done, so an
   interrupt never loses finished blocks.  Rerunning with ``resume=True`` (the default) skips
   complete blocks and drops partial ones.
2. **Calibrate** (:func:`amutheory.calibrate.calibrate`, lognormal model) on the calibration
   depths only: ``a, b, e`` of the typical value (geometric mean over seeds) and the seed spread
   ``sigma^2(L) = sigma2_0 + kappa L`` that turns it into the arithmetic mean.
3. **Predict** ``eta*(L) = sqrt(C / s_bar(L))`` at every depth from the derived law with those
   constants (:func:`amutheory.api.predict`, i.e. :func:`amutheory.api.law_values`).
4. **Compare** with the measured ``eta*`` and its 95% seed-bootstrap interval at every depth;
   only depths *not* used for calibration (held-out) count for ``passed`` and
   ``max_rel_error``.

Outputs in ``out_dir``: ``results.csv``, ``campaign.json`` (protocol and configs, checked on
resume), ``summary.json`` (the JSON contract), ``report.md`` and PNG figures.
"""

from __future__ import annotations

import csv
import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from amutheory import stats
from amutheory.api import Measurement, check_depths, predict
from amutheory.spec import ArchSpec, ProbeProtocol
from amutheory.symbolic.conv import conv_law, derived_constants

CSV_COLUMNS = ("config", "dim", "activation", "width", "kernel", "spatial", "depth", "seed", "layer", "s")
_SPEC_COLUMNS = ("dim", "activation", "width", "kernel", "spatial")
STATISTICS = ("mean", "geo")
LEVEL = 0.95
C_TARGET = 1.0


# --------------------------------------------------------------------------- configs
def _check_calibratable(cal_depths, width) -> None:
    """Fail early (before any measuring) when :func:`amutheory.calibrate.calibrate` cannot fit
    its constants to data at ``cal_depths``: it is tried once on synthetic profiles (all ones),
    so the check follows whatever the calibration needs (e.g. one depth per free constant)."""
    from amutheory.calibrate import calibrate

    fake = {d: np.ones((2, d)) for d in cal_depths}
    try:
        calibrate(fake, 0.01, width, "mean", n_boot=0)
    except ValueError as exc:
        if "need at least" in str(exc):
            raise ValueError(f"calibration_depths {list(cal_depths)} cannot calibrate the constants: {exc}") from None


@dataclass(frozen=True)
class CampaignConfig:
    """One line of a campaign: a base spec (its ``depth`` is replaced), the depths measured,
    the subset used for calibration and the seeds (a count ``n`` means ``0 .. n-1``)."""

    name: str
    spec: ArchSpec
    depths: tuple
    calibration_depths: tuple
    seeds: int | tuple = 32

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name or any(c in self.name for c in ",\n\r\"/\\"):
            raise ValueError(f"name must be a non-empty string without , / \\ quotes or newlines, got {self.name!r}")
        if not isinstance(self.spec, ArchSpec):
            raise TypeError(f"spec must be an ArchSpec, got {type(self.spec).__name__}")
        depths = tuple(check_depths(self.depths))
        cal = tuple(check_depths(self.calibration_depths))
        missing = sorted(set(cal) - set(depths))
        if missing:
            raise ValueError(f"calibration_depths {missing} are not among depths {list(depths)}")
        _check_calibratable(cal, self.spec.width)
        if isinstance(self.seeds, bool):
            raise TypeError("seeds must be a count or a list of integers")
        if isinstance(self.seeds, (int, np.integer)):
            if self.seeds < 2:
                raise ValueError(f"seeds must be >= 2 (a CI needs two), got {self.seeds}")
            seeds = int(self.seeds)
        else:
            seeds = tuple(int(s) for s in self.seeds)
            if len(seeds) < 2 or len(set(seeds)) != len(seeds):
                raise ValueError(f"seeds must hold at least 2 distinct integers, got {list(seeds)}")
        object.__setattr__(self, "depths", depths)
        object.__setattr__(self, "calibration_depths", cal)
        object.__setattr__(self, "seeds", seeds)

    @property
    def seed_list(self) -> list[int]:
        return list(range(self.seeds)) if isinstance(self.seeds, int) else list(self.seeds)

    @property
    def held_out_depths(self) -> list[int]:
        return [d for d in self.depths if d not in self.calibration_depths]

    def to_dict(self) -> dict:
        return {"name": self.name, "spec": self.spec.to_dict(), "depths": list(self.depths),
                "calibration_depths": list(self.calibration_depths), "seeds": self.seed_list}


def _conv(name, dim, activation, width, spatial, depths, cal, seeds):
    spec = ArchSpec(dim=dim, depth=max(depths), width=width, kernel=3, spatial=spatial,
                    padding="circular", activation=activation)
    return CampaignConfig(name, spec, tuple(depths), tuple(cal), seeds)


_Q1 = [2, 3, 4, 6, 8, 12, 16, 24, 32]
_Q2 = [2, 3, 4, 6, 8, 12, 16]
_P = [2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]

#: Width is fixed per config (8 x the deepest depth), so the law is compared at fixed width.
PRESETS = {
    "quick": [
        _conv("conv1d-relu", 1, "relu", 256, 16, _Q1, [2, 4, 8, 16], 32),
        _conv("conv1d-linear", 1, "linear", 256, 16, _Q1, [2, 4, 8, 16], 32),
        # calibrate() fits a, b, e to s_bar at the calibration depths (>= 3 of them); the deepest
        # calibration depth is half the deepest depth, so the held-out check is an extrapolation
        _conv("conv2d-relu", 2, "relu", 128, 8, _Q2, [2, 4, 6, 8], 32),
        _conv("conv2d-linear", 2, "linear", 128, 8, _Q2, [2, 4, 6, 8], 32),
    ],
    # meant for a GPU: pass protocol=ProbeProtocol(device="cuda")
    "paper": [
        _conv("conv1d-relu", 1, "relu", 512, 32, _P, [2, 4, 8, 16], 64),
        _conv("conv1d-linear", 1, "linear", 512, 32, _P, [2, 4, 8, 16], 64),
        _conv("conv2d-relu", 2, "relu", 512, 32, _P, [2, 4, 8, 16], 64),
        _conv("conv2d-linear", 2, "linear", 512, 32, _P, [2, 4, 8, 16], 64),
    ],
}


def resolve_preset(preset, only=None) -> tuple[str, list[CampaignConfig]]:
    """``(preset name, configs)`` for a preset name or a list of :class:`CampaignConfig`,
    keeping only the names in ``only`` (a name or a list of names) when given."""
    if isinstance(preset, str):
        if preset not in PRESETS:
            raise ValueError(f"preset must be one of {', '.join(PRESETS)} or a list of CampaignConfig, got {preset!r}")
        name, configs = preset, list(PRESETS[preset])
    else:
        try:
            configs = list(preset)
        except TypeError:
            raise TypeError(f"preset must be a name or a list of CampaignConfig, got {preset!r}") from None
        if not configs or not all(isinstance(c, CampaignConfig) for c in configs):
            raise TypeError("preset must be a non-empty list of CampaignConfig")
        name = "custom"
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        raise ValueError(f"config names must be distinct, got {names}")
    if only is not None:
        wanted = [only] if isinstance(only, str) else list(only)
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            raise ValueError(f"only names unknown configs {unknown}; known: {names}")
        configs = [c for c in configs if c.name in wanted]
    return name, configs


# --------------------------------------------------------------------------- results.csv
def _fsync(f):
    f.flush()
    os.fsync(f.fileno())


def read_results(path) -> tuple[dict, int]:
    """Parse ``results.csv`` into ``{(config, depth): {(seed, layer): (row_dict, s)}}``.

    Rows that do not parse (a line cut off by an interrupt) are skipped; their number is
    returned as the second element.  Duplicated ``(seed, layer)`` keys keep the last row."""
    path = Path(path)
    blocks, bad = {}, 0
    if not path.exists() or path.stat().st_size == 0:
        return blocks, 0
    with open(path, newline="") as f:
        text = f.read()
    lines = text.splitlines()
    if not lines:
        return blocks, 0
    header = next(csv.reader([lines[0]]))
    if tuple(header) != CSV_COLUMNS:
        raise ValueError(f"{path} has header {header}, expected {list(CSV_COLUMNS)}; "
                         "use another out_dir or resume=False")
    complete_last = text.endswith("\n")
    for i, row in enumerate(csv.reader(lines[1:])):
        if i == len(lines) - 2 and not complete_last:
            bad += 1  # the last line was cut off mid-write
            continue
        if len(row) != len(CSV_COLUMNS):
            bad += 1
            continue
        try:
            rec = dict(zip(CSV_COLUMNS, row))
            depth, seed, layer = int(rec["depth"]), int(rec["seed"]), int(rec["layer"])
            s = float(rec["s"])
        except ValueError:
            bad += 1
            continue
        blocks.setdefault((rec["config"], depth), {})[(seed, layer)] = (row, s)
    return blocks, bad


def _block_complete(cfg: CampaignConfig, depth: int, block: dict) -> bool:
    expected = {(s, l) for s in cfg.seed_list for l in range(1, depth + 1)}
    if set(block) != expected:
        return False
    spec = cfg.spec
    want = [str(spec.dim), spec.activation, str(spec.width), str(spec.kernel), str(spec.spatial)]
    for row, s in block.values():
        if [row[CSV_COLUMNS.index(k)] for k in _SPEC_COLUMNS] != want or not math.isfinite(s):
            return False
    return True


def _block_rows(cfg: CampaignConfig, depth: int, seeds: list, s: np.ndarray) -> list:
    sp = cfg.spec
    return [[cfg.name, sp.dim, sp.activation, sp.width, sp.kernel, sp.spatial, depth, seed, l + 1,
             repr(float(s[i, l]))] for i, seed in enumerate(seeds) for l in range(depth)]


def _prepare_csv(path: Path, configs: list, resume: bool, say) -> set:
    """Make ``path`` hold only complete blocks (rewritten atomically when something is dropped)
    and return the set of ``(config, depth)`` blocks already done for ``configs``."""
    if not resume or not path.exists() or path.stat().st_size == 0:
        with open(path, "w", newline="") as f:
            csv.writer(f).writerow(CSV_COLUMNS)
            _fsync(f)
        return set()
    blocks, bad = read_results(path)
    by_name = {c.name: c for c in configs}
    keep, done, dropped = [], set(), []
    for (name, depth), block in sorted(blocks.items()):
        cfg = by_name.get(name)
        if cfg is None:
            # a config not in this run: keep it as long as it is rectangular
            seeds = {s for s, _ in block}
            if set(block) == {(s, l) for s in seeds for l in range(1, depth + 1)}:
                keep.append((name, depth, block))
            else:
                dropped.append((name, depth, len(block)))
            continue
        if _block_complete(cfg, depth, block):
            keep.append((name, depth, block))
            if depth in cfg.depths:
                done.add((name, depth))
        else:
            dropped.append((name, depth, len(block)))
    if dropped or bad:
        for name, depth, n in dropped:
            say(f"[{name}] depth {depth}: dropping a partial block of {n} rows from results.csv")
        if bad:
            say(f"results.csv: dropping {bad} unreadable row(s) (cut off by an interrupt)")
        tmp = path.with_suffix(".csv.tmp")
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(CSV_COLUMNS)
            for name, depth, block in keep:
                for key in sorted(block):
                    w.writerow(block[key][0])
            _fsync(f)
        os.replace(tmp, path)
    return done


def load_measurement(path, cfg: CampaignConfig, C: float = C_TARGET, level: float = LEVEL) -> Measurement:
    """The :class:`Measurement` of ``cfg`` rebuilt from the rows stored in ``results.csv``."""
    blocks, _ = read_results(path)
    seeds = cfg.seed_list
    profiles = {}
    for d in cfg.depths:
        block = blocks.get((cfg.name, d))
        if block is None or not _block_complete(cfg, d, block):
            raise ValueError(f"results.csv has no complete block for [{cfg.name}] depth {d}")
        profiles[d] = np.array([[block[(s, l)][1] for l in range(1, d + 1)] for s in seeds], float)
    return Measurement(cfg.spec.with_(depth=max(cfg.depths)), list(cfg.depths), seeds, profiles, C, level)


# --------------------------------------------------------------------------- campaign meta
def _protocol_dict(protocol: ProbeProtocol) -> dict:
    return {"input_var": protocol.input_var, "dtype": protocol.dtype, "device": protocol.device}


def _check_meta(path: Path, configs: list, protocol: ProbeProtocol, resume: bool) -> dict:
    """Refuse to resume into results measured under another protocol or spec; return the
    updated ``campaign.json`` content."""
    meta = {"protocol": _protocol_dict(protocol), "configs": {}}
    if resume and path.exists():
        old = json.loads(path.read_text())
        op = old.get("protocol", {})
        for k in ("input_var", "dtype"):
            if k in op and op[k] != meta["protocol"][k]:
                raise ValueError(f"{path.parent} holds results measured with protocol {k}={op[k]!r}, "
                                 f"this run uses {meta['protocol'][k]!r}; use another out_dir or resume=False")
        meta["configs"] = dict(old.get("configs", {}))
        for cfg in configs:
            prev = meta["configs"].get(cfg.name)
            if prev is not None and prev.get("spec") != cfg.spec.to_dict():
                raise ValueError(f"{path.parent} holds results of config {cfg.name!r} with another spec "
                                 f"({prev.get('spec')}); use another out_dir or resume=False")
    for cfg in configs:
        meta["configs"][cfg.name] = cfg.to_dict()
    return meta


# --------------------------------------------------------------------------- analysis
def _f(x):
    """A JSON-safe float (None for NaN/inf)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _json_safe(obj):
    """``obj`` with every non-finite float replaced by None and numpy scalars made plain."""
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return _f(obj)
    return obj


def _eta(s):
    return math.sqrt(C_TARGET / s) if s > 0 else float("nan")


def _ls_slope(depths, values) -> float:
    lx, ly = np.log(np.asarray(depths, float)), np.log(np.asarray(values, float))
    dx = lx - lx.mean()
    return float((ly - ly.mean()) @ dx / (dx @ dx))


def analyse_config(cfg: CampaignConfig, meas: Measurement, protocol: ProbeProtocol = ProbeProtocol()) -> dict:
    """Calibrate on ``cfg.calibration_depths`` (mean and geo), predict every depth and compare."""
    spec = cfg.spec.with_(depth=max(cfg.depths))
    law = conv_law(spec)
    derived = derived_constants(spec, protocol.input_var)
    held = cfg.held_out_depths
    out = {
        "name": cfg.name,
        "spec": spec.to_dict(),
        "depths": list(cfg.depths),
        "calibration_depths": list(cfg.calibration_depths),
        "held_out_depths": held,
        "seeds": len(cfg.seed_list),
        "law": law.name,
        "derived_exponent": str(law.exponent),
        "derived_exponent_value": float(law.exponent),
        "derived_constants": {k: c.to_dict() for k, c in derived.items()},
        "assumptions": list(law.assumptions),
        "per_depth": {},
        "calibration": {},
        "constants": {},
        "mlp_limit_comparison": {},
        "fitted_exponents": {},
        "errors": [],
        "notes": [],
    }
    cal_meas = Measurement(spec, list(cfg.calibration_depths), meas.seeds,
                           {d: meas.profiles[d] for d in cfg.calibration_depths}, meas.C, meas.level)
    ci_fn = {"mean": stats.arith_mean_ci, "geo": stats.geo_mean_ci}
    passed_stats, rel_errs, joint_ok = {}, {}, {}
    out["held_out_test"] = {}
    dense = np.unique(np.round(np.geomspace(min(cfg.depths), max(cfg.depths), 40)).astype(int)).tolist()
    curve = {"depths": dense}
    for stat in STATISTICS:
        rows = []
        try:
            # one call for the measured depths and the dense curve (law_values is not cheap)
            pred = predict(spec, sorted(set(cfg.depths) | set(dense)), constants="calibrate", statistic=stat,
                           protocol=protocol, C=meas.C, calibration_measurement=cal_meas)
            eta_all = dict(zip(pred.depths, pred.eta_star))
            curve[f"eta_{stat}"] = [_f(eta_all[d]) for d in dense]
            eta_pred = {d: eta_all[d] for d in cfg.depths}
            s_pred = {d: v for d, v in zip(pred.depths, pred.s_bar) if d in cfg.depths}
            cal = pred.calibration
            out["calibration"][stat] = cal.to_dict()
            out["constants"][stat] = {k: c.to_dict() for k, c in pred.constants.items()}
            a_, b_ = cal.constants["a"], cal.constants["b"]
            ratio = b_.value / a_.value
            rel = math.sqrt((a_.error / a_.value) ** 2 + (b_.error / b_.value) ** 2) if a_.value and b_.value else float("nan")
            v = derived["v_mlp"]
            out["mlp_limit_comparison"][stat] = {
                "b_over_a": _f(ratio), "b_over_a_error": _f(abs(ratio) * rel),
                "v_mlp": _f(v.value), "v_mlp_source": v.source,
                "ratio_to_mlp_limit": _f(ratio / v.value) if v.value else None,
            }
            out["predicted_effective_exponent_" + stat] = _f(_ls_slope(cfg.depths, [eta_pred[d] for d in cfg.depths]))
            out["predicted_effective_exponent_held_out_" + stat] = (
                _f(_ls_slope(held, [eta_pred[d] for d in held])) if len(held) >= 2 else None)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            out["errors"].append(f"{stat}: calibration/prediction failed: {exc}")
            eta_pred, s_pred = {}, {}
            curve[f"eta_{stat}"] = None
        for d in cfg.depths:
            m, lo, hi = ci_fn[stat](meas.s_bar(d), level=meas.level)
            e_m, e_lo, e_hi = _eta(m), _eta(hi), _eta(lo)
            p = eta_pred.get(d)
            ok = p is not None and math.isfinite(p)
            rows.append({
                "depth": d,
                "calibration": d in cfg.calibration_depths,
                "s_pred": _f(s_pred.get(d)),
                "s_meas": _f(m), "s_meas_ci": [_f(lo), _f(hi)],
                "eta_pred": _f(p) if ok else None,
                "eta_meas": _f(e_m), "eta_meas_ci": [_f(e_lo), _f(e_hi)],
                "rel_error": _f(p / e_m - 1.0) if ok else None,
                "inside_ci": bool(ok and e_lo <= p <= e_hi),
            })
        out["per_depth"][stat] = rows
        held_rows = [r for r in rows if not r["calibration"]]
        passed_stats[stat] = bool(held_rows) and all(r["inside_ci"] for r in held_rows)
        errs = [abs(r["rel_error"]) for r in held_rows if r["rel_error"] is not None]
        rel_errs[stat] = max(errs) if errs and len(errs) == len(held_rows) else None
        out["outside_ci_depths_" + stat] = [r["depth"] for r in held_rows if not r["inside_ci"]]
        if held_rows and all(r["s_pred"] for r in held_rows):
            # eta* = sqrt(C / s_bar) is monotone in s_bar: a check on s_bar is the same check on eta*
            test = stats.held_out_test([r["s_pred"] for r in held_rows],
                                       [meas.s_bar(r["depth"]) for r in held_rows], stat, level=meas.level)
            out["held_out_test"][stat] = test.to_dict()
            joint_ok[stat] = bool(test.p_value >= 1.0 - meas.level and all(test.bonferroni_inside))
        else:
            joint_ok[stat] = False
        out["outside_ci_calibration_depths_" + stat] = [r["depth"] for r in rows
                                                        if r["calibration"] and not r["inside_ci"]]
        fits = {}
        for key, ds in (("all", list(cfg.depths)), ("held_out", held)):
            if len(ds) >= 2:
                e, ci = meas.fitted_exponent(stat, ds)
                fits[key] = {"depths": ds, "exponent": _f(e), "ci": [_f(ci[0]), _f(ci[1])],
                             "derived_inside_ci": bool(ci[0] <= float(law.exponent) <= ci[1])}
            else:
                fits[key] = None
        out["fitted_exponents"][stat] = fits
    if not held:
        out["notes"].append("no held-out depths: nothing independent to check, passed is false")
    out["prediction_curve"] = curve
    out["passed_mean"] = passed_stats["mean"]
    out["passed_geo"] = passed_stats["geo"]
    out["passed"] = bool(passed_stats["mean"] and passed_stats["geo"])
    # joint check: chi-square p >= 0.05 and every held-out depth inside its Bonferroni interval
    out["passed_joint"] = bool(joint_ok["mean"] and joint_ok["geo"])
    out["max_rel_error"] = _f(rel_errs["mean"])
    out["max_rel_error_geo"] = _f(rel_errs["geo"])
    all_fit = out["fitted_exponents"]["mean"]["all"]
    out["fitted_exponent"] = all_fit["exponent"] if all_fit else None
    out["fitted_exponent_ci"] = all_fit["ci"] if all_fit else None
    return out


# --------------------------------------------------------------------------- figures & report
def _figure_names(name: str) -> dict:
    return {"eta_star": f"eta_star_{name}.png", "layer_profiles": f"layer_profiles_{name}.png"}


def _profile_depths(cfg: CampaignConfig) -> list[int]:
    held = cfg.held_out_depths or list(cfg.depths)
    picks = [held[0], held[len(held) // 2], held[-1]]
    return sorted(set(picks))


def make_figures(out_dir: Path, cfg: CampaignConfig, meas: Measurement, result: dict) -> dict:
    """Write the config's PNGs into ``out_dir``; return ``{kind: file name}`` of those written."""
    from amutheory import plots
    from amutheory.calibrate import per_layer_statistic
    from amutheory.constants import Constant

    names, written = _figure_names(cfg.name), {}
    fig = plots.plot_eta_star(result)
    fig.savefig(out_dir / names["eta_star"], dpi=110)
    written["eta_star"] = names["eta_star"]
    consts = result["constants"].get("mean")
    if consts:
        constants = {k: Constant(k, v["value"], v["source"], v.get("error", 0.0)) for k, v in consts.items()}
        prof = {d: per_layer_statistic(meas.profiles[d], "mean") for d in _profile_depths(cfg)}
        fig = plots.plot_layer_profiles(cfg.spec, prof, constants,
                                        title=f"{cfg.name}: measured s_l (mean over seeds) vs the per-layer law "
                                              "with the calibrated constants (mean statistic)")
        fig.savefig(out_dir / names["layer_profiles"], dpi=110)
        written["layer_profiles"] = names["layer_profiles"]
    return written


def _g(x, digits=4):
    if x is None:
        return "n/a"
    return f"{x:.{digits}g}"


def _pct(x):
    return "n/a" if x is None else f"{100 * x:+.1f}%"


def _ci(ci, digits=4):
    if ci is None or ci[0] is None or ci[1] is None:
        return "n/a"
    return f"[{ci[0]:.{digits}g}, {ci[1]:.{digits}g}]"


def write_report(path: Path, summary: dict) -> None:
    """``report.md``: what was run, per-config tables, exponents, constants, pass/fail, figures."""
    pr = summary["protocol"]
    lines = [f"# amutheory validation campaign: preset `{summary['preset']}`", ""]
    n_pass = sum(c["passed"] for c in summary["configs"])
    n_joint = sum(c.get("passed_joint", False) for c in summary["configs"])
    lines += [
        f"{n_pass} of {len(summary['configs'])} configs passed "
        "(predicted eta* inside the measured 95% CI at every held-out depth, for both the arithmetic "
        f"and the geometric mean over seeds); {n_joint} of {len(summary['configs'])} pass the joint "
        "held-out test (chi-square p >= 0.05 and every depth inside its Bonferroni interval).", "",
        "## What was run", "",
        f"* probe: one SGD step from the init, first order in eta, `s_l` = mean square of "
        f"`J_theta h_l grad`; dtype {pr['dtype']}, device {pr['device']}, input variance "
        f"{pr['input_var']}; every parameter (head included) takes the SGD step.",
        f"* eta* = sqrt(C / s_bar) with C = {summary['C']} (a convention; it cancels in every ratio).",
        f"* 95% intervals: percentile bootstrap over seeds (2000 replicates).",
        "* calibration (lognormal model, `amutheory.calibrate.calibrate`): the arithmetic mean over "
        "seeds of s_bar(L) follows the derived infinite-width law (the expansion is an expectation) "
        "with `a, b, e` fitted on the calibration depths only; the typical value (geometric mean) is "
        "the law times exp(-sigma^2(L)/2), with the seed variance of ln s_bar fitted as a straight "
        "line `sigma2_0 + kappa L` on the same depths; `epsilon` exact, `gamma = 0`.  Held-out depths "
        "are the independent check.",
        "* joint check: each held-out depth is a separate set of nets, so a right prediction misses "
        "its own 95% interval with probability 5% at every depth.  The joint test sums the squared "
        "z-scores of ln(predicted / measured) (bootstrap standard errors) into a chi-square with one "
        "degree of freedom per held-out depth, and asks every depth to lie inside its Bonferroni "
        "interval (level 1 - 0.05/k).",
        f"* measuring time this run: {summary['timing']['measure_s']:.1f} s "
        f"({summary['timing']['blocks_computed']} blocks computed, "
        f"{summary['timing']['blocks_resumed']} taken from an earlier run); analysis "
        f"{summary['timing']['analysis_s']:.1f} s.", "",
        "| config | dim | activation | width | kernel | spatial | batch | seeds | depths | calibration depths |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in summary["configs"]:
        s = c["spec"]
        lines.append(f"| {c['name']} | {s['dim']} | {s['activation']} | {s['width']} | {s['kernel']} | "
                     f"{s['spatial']}{'x' + str(s['spatial']) if s['dim'] == 2 else ''} | {s['batch']} | "
                     f"{c['seeds']} | {c['depths']} | {c['calibration_depths']} |")
    lines.append("")
    for c in summary["configs"]:
        lines += [f"## {c['name']}: {'PASSED' if c['passed'] else 'FAILED'}", ""]
        for err in c["errors"]:
            lines.append(f"* **error**: {err}")
        for note in c["notes"]:
            lines.append(f"* note: {note}")
        lines += [
            f"* law `{c['law']}`, derived asymptotic exponent of eta*: **{c['derived_exponent']}**",
            f"* max relative error of eta* over held-out depths: {_pct(c['max_rel_error'])} (mean), "
            f"{_pct(c['max_rel_error_geo'])} (geo)",
            *[f"* joint held-out test ({st}): chi2 = {t['chi2']:.2f} on {t['dof']} dof, p = {t['p_value']:.3f}; "
              f"z = {', '.join(f'{z:+.2f}' for z in t['z'])}; inside Bonferroni "
              f"{100 * t['bonferroni_level']:.2f}% intervals: {'all' if all(t['bonferroni_inside']) else 'NOT all'}"
              for st, t in c.get("held_out_test", {}).items()],
            f"* held-out depths outside the CI: mean {c['outside_ci_depths_mean'] or 'none'}, "
            f"geo {c['outside_ci_depths_geo'] or 'none'}; calibration depths outside the CI: "
            f"mean {c['outside_ci_calibration_depths_mean'] or 'none'}, "
            f"geo {c['outside_ci_calibration_depths_geo'] or 'none'}", "",
        ]
        for stat, title in (("mean", "arithmetic mean over seeds"), ("geo", "geometric mean over seeds")):
            lines += [f"### eta*, {title}", "",
                      "| depth | cal? | predicted eta* | measured eta* [95% CI] | rel. error | inside |",
                      "|---:|:---:|---:|---|---:|:---:|"]
            for r in c["per_depth"][stat]:
                lines.append(f"| {r['depth']} | {'cal' if r['calibration'] else ''} | {_g(r['eta_pred'], 5)} | "
                             f"{_g(r['eta_meas'], 5)} {_ci(r['eta_meas_ci'], 5)} | {_pct(r['rel_error'])} | "
                             f"{'yes' if r['inside_ci'] else '**no**'} |")
            lines.append("")
        lines += ["### Fitted exponents of eta*(L)", "",
                  "Least-squares slope of ln eta* on ln L, 95% seed-bootstrap CI; compared with the derived "
                  f"asymptotic exponent {c['derived_exponent']} and with the calibrated law's own "
                  "least-squares slope over the same depths (finite-depth corrections make the two differ).", "",
                  "| statistic | depths | fitted exponent | 95% CI | derived in CI? | law's slope, same depths |",
                  "|---|---|---:|---|:---:|---:|"]
        for stat in STATISTICS:
            for key in ("all", "held_out"):
                fit = c["fitted_exponents"][stat][key]
                law_slope = c.get(f"predicted_effective_exponent_{stat}" if key == "all"
                                  else f"predicted_effective_exponent_held_out_{stat}")
                if fit is None:
                    lines.append(f"| {stat} | {key} | n/a | n/a | n/a | n/a |")
                    continue
                lines.append(f"| {stat} | {key} {fit['depths']} | {fit['exponent']:.4f} | {_ci(fit['ci'])} | "
                             f"{'yes' if fit['derived_inside_ci'] else 'no'} | {_g(law_slope)} |")
        lines += ["", "### Constants", "",
                  "| constant | statistic | value | error | source |", "|---|---|---:|---:|---|"]
        for stat in STATISTICS:
            for k, v in c["constants"].get(stat, {}).items():
                if k in ("a", "b", "e", "gamma", "epsilon", "sigma2_0", "kappa"):
                    lines.append(f"| {k} | {stat} | {_g(v['value'], 5)} | {_g(v['error'], 3)} | {v['source']} |")
        for k, v in c["derived_constants"].items():
            lines.append(f"| {k} | derived | {_g(v['value'], 5)} | {_g(v['error'], 3)} | {v['source']} |")
        lines += ["", "MLP-limit comparison: the derivation gives b/a = v_mlp only in the MLP limit "
                  "(k = 1, one position, one sample); a conv chain is not expected to sit there.", "",
                  "| statistic | calibrated b/a | error | derived v_mlp | ratio |", "|---|---:|---:|---:|---:|"]
        for stat in STATISTICS:
            m = c["mlp_limit_comparison"].get(stat)
            if m:
                lines.append(f"| {stat} | {_g(m['b_over_a'])} | {_g(m['b_over_a_error'], 3)} | {_g(m['v_mlp'])} | "
                             f"{_g(m['ratio_to_mlp_limit'])} |")
        lines.append("")
        for stat in STATISTICS:
            cal = c["calibration"].get(stat)
            if cal:
                how = cal["constants"].get("a", {}).get("note", "")
                extra = "; ".join(cal.get("notes", []))
                lines.append(f"* calibration ({stat}): {how}" + (f"; {extra}" if extra else "")
                             + f"; rms log residual {cal['residual_rms_log']:.3g}")
        lines.append("")
        for kind, fname in c.get("figures", {}).items():
            lines += [f"![{c['name']} {kind}]({fname})", ""]
    Path(path).write_text("\n".join(lines) + "\n")


# --------------------------------------------------------------------------- driver
def measure_campaign(preset, out_dir, protocol: ProbeProtocol = ProbeProtocol(), resume: bool = True,
                     progress=print, only=None, chunk: int = 16) -> dict:
    """The measuring half of :func:`run_campaign`: fill ``out_dir/results.csv`` block by block
    (resuming from complete blocks when ``resume``); returns timing counts."""
    from amutheory.measure.probe import probe

    if not isinstance(protocol, ProbeProtocol):
        raise TypeError(f"protocol must be a ProbeProtocol, got {type(protocol).__name__}")
    say = progress if progress is not None else (lambda msg: None)
    _, configs = resolve_preset(preset, only)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / "results.csv"
    meta_path = out / "campaign.json"
    meta = _check_meta(meta_path, configs, protocol, resume)
    done = _prepare_csv(csv_path, configs, resume, say)
    meta_path.write_text(json.dumps(_json_safe(meta), indent=1))

    t_measure = time.perf_counter()
    computed = resumed = 0
    current = None
    try:
        for cfg in configs:
            n = len(cfg.depths)
            for i, d in enumerate(cfg.depths, 1):
                current = (cfg.name, d, i, n)
                if (cfg.name, d) in done:
                    resumed += 1
                    say(f"[{cfg.name}] depth {d} ({i}/{n}) complete in results.csv, skipped")
                    continue
                t0 = time.perf_counter()
                seeds = cfg.seed_list
                s = probe(cfg.spec.with_(depth=d), seeds, protocol, chunk=chunk).s
                with open(csv_path, "a", newline="") as f:
                    csv.writer(f).writerows(_block_rows(cfg, d, seeds, s))
                    _fsync(f)
                computed += 1
                current = None  # this block is safe on disk
                say(f"[{cfg.name}] depth {d} ({i}/{n}) {len(seeds)} seeds  {time.perf_counter() - t0:.1f} s")
    except KeyboardInterrupt:
        where = (f"at [{current[0]}] depth {current[1]} ({current[2]}/{current[3]})" if current
                 else "between blocks")
        say(f"interrupted {where}; {computed} block(s) measured in this run and every earlier finished "
            f"block are saved in {csv_path}. Rerun the same command (resume=True) to continue from there.")
        raise
    return {"measure_s": time.perf_counter() - t_measure, "blocks_computed": computed,
            "blocks_resumed": resumed}


def analyse_campaign(preset, out_dir, protocol: ProbeProtocol = ProbeProtocol(), progress=print,
                     only=None, figures: bool = True, timing: dict | None = None) -> dict:
    """The analysing half of :func:`run_campaign`: calibrate, predict and compare every config
    from the rows in ``out_dir/results.csv``; write ``summary.json``, ``report.md`` and figures."""
    say = progress if progress is not None else (lambda msg: None)
    preset_name, configs = resolve_preset(preset, only)
    out = Path(out_dir)
    csv_path = out / "results.csv"
    t_an = time.perf_counter()
    results = []
    for cfg in configs:
        say(f"[{cfg.name}] calibrating on depths {list(cfg.calibration_depths)} and comparing")
        meas = load_measurement(csv_path, cfg)
        res = analyse_config(cfg, meas, protocol)
        if figures:
            try:
                res["figures"] = make_figures(out, cfg, meas, res)
            except Exception as exc:  # a figure must not lose the numbers
                res["errors"].append(f"figures failed: {type(exc).__name__}: {exc}")
                res["figures"] = {}
        results.append(res)
        say(f"[{cfg.name}] {'passed' if res['passed'] else 'FAILED'}: max rel. error (held-out, mean) "
            f"{_pct(res['max_rel_error'])}, fitted exponent {_g(res['fitted_exponent'])} "
            f"{_ci(res['fitted_exponent_ci'])} vs derived {res['derived_exponent']}")
    timing = dict(timing or {"measure_s": 0.0, "blocks_computed": 0, "blocks_resumed": 0})
    timing["analysis_s"] = time.perf_counter() - t_an
    summary = {
        "preset": preset_name,
        "out_dir": str(out),
        "configs": results,
        "passed": all(r["passed"] for r in results),
        "protocol": _protocol_dict(protocol),
        "C": C_TARGET,
        "level": LEVEL,
        "timing": timing,
    }
    summary = _json_safe(summary)
    (out / "summary.json").write_text(json.dumps(summary, indent=1, allow_nan=False))
    write_report(out / "report.md", summary)
    say(f"wrote {out / 'summary.json'}, {out / 'report.md'}")
    return summary


def run_campaign(preset, out_dir, protocol: ProbeProtocol = ProbeProtocol(), resume: bool = True,
                 progress=print, only=None, chunk: int = 16, figures: bool = True,
                 analyse: bool = True) -> dict:
    """Run (or resume) a campaign and write ``results.csv``, ``summary.json``, ``report.md`` and
    figures into ``out_dir``; returns the summary dict.

    ``preset``: a name of :data:`PRESETS` or a list of :class:`CampaignConfig`.  ``only``: a
    config name or list of names to restrict the run to.  ``progress``: called with one string
    per event (``None`` silences it).  ``chunk``: seeds vectorised at once by the probe.
    ``resume``: keep complete ``(config, depth)`` blocks of an earlier run in ``out_dir`` (partial
    ones are dropped); ``False`` starts ``results.csv`` afresh.  ``analyse=False`` only measures
    and returns the timing counts."""
    timing = measure_campaign(preset, out_dir, protocol, resume, progress, only, chunk)
    if not analyse:
        return timing
    return analyse_campaign(preset, out_dir, protocol, progress, only, figures, timing)
