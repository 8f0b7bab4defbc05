"""The campaign driver: :func:`run_campaign` (behind ``amutheory validate``) measures every
config of a preset (:func:`measure_campaign`) and analyses it (:func:`analyse_campaign`).

Outputs in ``out_dir``: ``results.csv``, ``stream.csv`` (resnets), ``campaign.json`` (protocol and
configs, checked on resume), ``summary.json`` (the JSON contract), ``report.md`` and PNG figures.
"""

from __future__ import annotations

import csv
import importlib
import json
import time
from pathlib import Path

from amutheory.campaign.transfer_table import best_rules, rule_summary, transfer_rows
from amutheory.campaign.width_sweep import (WIDTH_FILE, analyse_width_sweep, measure_width_sweeps,
                                            read_width_results, width_rule_summary)
from amutheory.campaign.common import C_TARGET, LEVEL, _json_safe
from amutheory.campaign.draws import draw_groups, held_out_null
from amutheory.campaign.figures import _collapse_figure, _merge_figure_keys, _resnet_figure, make_figures
from amutheory.campaign.formatting import _ci, _g
from amutheory.campaign.presets import (CHAIN_ANALYSIS, RESIDUAL_ANALYSIS, CampaignConfig, analysed_by,
                                       resolve_preset, resolve_width_sweeps, split_only)
from amutheory.campaign.report import write_report
from amutheory.campaign.results import (STREAM_FILE, _block_rows, _check_meta, _fsync, _measure_stream,
                                        _prepare_csv, _prepare_stream, _protocol_dict, load_measurement,
                                        read_results, read_stream)
from amutheory.spec import ProbeProtocol


def _block_tag(cfg: CampaignConfig, padding: str, depth: int, i: int, n: int) -> str:
    """``[name] depth 4 (2/9)``; zero configs name the padding: ``[name] zero depth 4 (6/8)``."""
    pad = f" {padding}" if cfg.is_zero else ""
    return f"[{cfg.name}]{pad} depth {depth} ({i}/{n})"


def measure_campaign(preset, out_dir, protocol: ProbeProtocol = ProbeProtocol(), resume: bool = True,
                     progress=print, only=None, chunk: int = 16, width_sweeps=None, seed_offset: int = 0) -> dict:
    """The measuring half of :func:`run_campaign`: fill ``out_dir/results.csv`` block by block
    (resuming from complete blocks when ``resume``); returns timing counts."""
    from amutheory.measure.probe import probe

    if not isinstance(protocol, ProbeProtocol):
        raise TypeError(f"protocol must be a ProbeProtocol, got {type(protocol).__name__}")
    say = progress if progress is not None else (lambda msg: None)
    _, configs, sweeps = _resolve(preset, only, width_sweeps, seed_offset)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / "results.csv"
    meta_path = out / "campaign.json"
    meta = _check_meta(meta_path, configs, protocol, resume, sweeps)
    done = _prepare_csv(csv_path, configs, resume, say)
    resnets = [c for c in configs if c.family.measures_stream]
    stream_path = out / STREAM_FILE
    stream_done = _prepare_stream(stream_path, resnets, resume) if resnets else set()
    meta_path.write_text(json.dumps(_json_safe(meta), indent=1))

    t_measure = time.perf_counter()
    computed = resumed = 0
    current = None
    try:
        for cfg in configs:
            n = len(cfg.blocks)
            for i, (pad, d) in enumerate(cfg.blocks, 1):
                current = _block_tag(cfg, pad, d, i, n)
                if cfg.family.measures_stream and (cfg.name, d) not in stream_done:
                    _measure_stream(stream_path, cfg, d, protocol)  # a forward pass per seed: cheap
                if (cfg.name, pad, d) in done:
                    resumed += 1
                    say(f"{current} complete in results.csv, skipped")
                    continue
                t0 = time.perf_counter()
                seeds = cfg.seed_list
                s = probe(cfg.spec.with_(depth=d, padding=pad), seeds, protocol, chunk=chunk).s
                with open(csv_path, "a", newline="") as f:
                    csv.writer(f).writerows(_block_rows(cfg, pad, d, seeds, s))
                    _fsync(f)
                computed += 1
                tag, current = current, None  # this block is safe on disk
                say(f"{tag} {len(seeds)} seeds  {time.perf_counter() - t0:.1f} s")
    except KeyboardInterrupt:
        where = f"at {current}" if current else "between blocks"
        say(f"interrupted {where}; {computed} block(s) measured in this run and every earlier finished "
            f"block are saved in {csv_path}. Rerun the same command (resume=True) to continue from there.")
        raise
    widths = measure_width_sweeps(sweeps, out, protocol, resume, say, chunk) if sweeps else {}
    return {"measure_s": time.perf_counter() - t_measure, "blocks_computed": computed,
            "blocks_resumed": resumed, **widths}


def analyse_campaign(preset, out_dir, protocol: ProbeProtocol = ProbeProtocol(), progress=print,
                     only=None, figures: bool = True, timing: dict | None = None, width_sweeps=None,
                     seed_offset: int = 0) -> dict:
    """The analysing half of :func:`run_campaign`: calibrate, predict and compare every config
    from the rows in ``out_dir/results.csv``; write ``summary.json``, ``report.md`` and figures."""
    say = progress if progress is not None else (lambda msg: None)
    preset_name, configs, sweeps = _resolve(preset, only, width_sweeps, seed_offset)
    out = Path(out_dir)
    t_an = time.perf_counter()
    results, transfer_tables, measured = _analyse_configs(configs, out, protocol, figures, say)
    width_results = _analyse_width_sweeps(sweeps, out, say)
    extra = _merge_figure_keys(_collapse_figure(out, results), _resnet_figure(out, results)) if figures else {}
    timing = dict(timing or {"measure_s": 0.0, "blocks_computed": 0, "blocks_resumed": 0})
    timing["analysis_s"] = time.perf_counter() - t_an
    summary = _campaign_summary(preset_name, seed_offset, out, results, transfer_tables, measured,
                                width_results if sweeps else None, protocol, timing, extra)
    summary = _json_safe(summary)
    (out / "summary.json").write_text(json.dumps(summary, indent=1, allow_nan=False))
    write_report(out / "report.md", summary)
    say(f"wrote {out / 'summary.json'}, {out / 'report.md'}")
    return summary


def _analyse_configs(configs: list, out: Path, protocol: ProbeProtocol, figures: bool, say) -> tuple:
    """``(results, transfer tables, {name: measurement})`` of every config, from ``out/results.csv``."""
    csv_path = out / "results.csv"
    results, transfer_tables, measured = [], [], {}
    blocks, _ = read_results(csv_path)
    stream = read_stream(out / STREAM_FILE)
    for cfg in configs:
        where = " (circular references)" if cfg.is_zero else ""
        say(f"[{cfg.name}] calibrating on depths {list(cfg.calibration_depths)}{where} and comparing")
        meas = load_measurement(csv_path, cfg, blocks=blocks)
        measured[cfg.name] = meas
        res = _analyse_one_config(cfg, meas, protocol, csv_path, blocks, stream)
        if not cfg.family.forward_stable(cfg.spec):
            res.setdefault("notes", []).append("no transfer table: the forward pass is not stable, so there is no "
                                               "depth law for a transfer rule to carry")
        elif not cfg.is_zero:
            try:
                transfer_tables.append(transfer_rows(cfg, meas))
            except (ValueError, ArithmeticError) as exc:
                res["errors"].append(f"transfer table failed: {type(exc).__name__}: {exc}")
        if figures and cfg.family.campaign_figures:
            _add_figures(res, out, cfg, meas)
        results.append(res)
        say(_config_message(cfg, res))
    return results, transfer_tables, measured


def _analyse_one_config(cfg: CampaignConfig, meas, protocol: ProbeProtocol, csv_path: Path, blocks, stream) -> dict:
    """The result of one config, by its family's campaign module (zero configs with their circular references)."""
    return _campaign_module(cfg).analyse_campaign_config(
        cfg, meas, protocol, stream=stream,
        reference=lambda: load_measurement(csv_path, cfg, padding="circular", blocks=blocks))


def _campaign_module(cfg: CampaignConfig):
    """The module that analyses ``cfg`` (its family's ``campaign_module``)."""
    if not cfg.family.campaign_module:
        raise ValueError(f"family: the {cfg.family.title} family names no campaign module")
    return importlib.import_module(cfg.family.campaign_module)


def _add_figures(res: dict, out: Path, cfg: CampaignConfig, meas) -> None:
    """Draw a config's figures into ``out`` and name them in ``res["figures"]`` (a failure becomes an error)."""
    try:
        res["figures"] = make_figures(out, cfg, meas, res)
    except Exception as exc:  # a figure must not lose the numbers
        res["errors"].append(f"figures failed: {type(exc).__name__}: {exc}")
        res["figures"] = {}


def _config_message(cfg: CampaignConfig, res: dict) -> str:
    """The progress line of one analysed config: its verdict and headline numbers."""
    return _campaign_module(cfg).campaign_message(cfg, res)


def _campaign_summary(preset_name: str, seed_offset: int, out: Path, results: list, transfer_tables: list,
                      measured: dict, width_results: list | None, protocol: ProbeProtocol, timing: dict,
                      extra: dict) -> dict:
    """The summary dict of a campaign (before :func:`_json_safe`); ``width_results`` ``None``: no width sweeps."""
    conv = [r for r in results if analysed_by(r, CHAIN_ANALYSIS)]
    resnets = [r for r in results if analysed_by(r, RESIDUAL_ANALYSIS)]
    return {
        "preset": preset_name,
        "seed_offset": int(seed_offset),  # every config's seeds shifted by this (0: the preset's)
        "out_dir": str(out),
        "configs": results,
        # forward-unstable resnets (passed None) have no law to check
        "passed": all(r["passed"] for r in results if r["passed"] is not None),
        "passed_circular": all(r["passed"] for r in conv if r["padding"] != "zero"),
        "passed_zero": all(r["passed"] and r["passed_ratio"] for r in conv if r["padding"] == "zero"),
        **({"passed_resnet": all(r["passed"] for r in resnets if r["passed"] is not None),
            # the law picked per config from its calibration alone (analysis_resnet.selected_law)
            "passed_resnet_selected": all(r["selected_law"]["passed"] for r in resnets if r.get("selected_law"))}
           if resnets else {}),
        "transfer": {"tables": transfer_tables, "summary": rule_summary(transfer_tables),
                     "best": best_rules(rule_summary(transfer_tables))},
        **({"width_transfer": {"sweeps": width_results, "summary": width_rule_summary(
            [r for r in width_results if "error" not in r])}} if width_results is not None else {}),
        # configs whose seeds draw the same normals: their verdicts are not independent outcomes
        "draw_groups": draw_groups(measured),
        # the held-out pass counts against what an exact law would pass on the same seeds
        "held_out_null": {key: held_out_null(measured, group) for key, group in (
            ("circular", [r for r in conv if r["padding"] != "zero"]),
            ("resnet", [r for r in resnets if r.get("forward_stable")]))},
        "protocol": _protocol_dict(protocol),
        "C": C_TARGET,
        "level": LEVEL,
        "timing": timing,
        **extra,
    }


def _resolve(preset, only, width_sweeps, seed_offset: int) -> tuple[str, list, list]:
    """``(preset name, configs, width sweeps)`` of a run, each on its seeds shifted by ``seed_offset``."""
    name, configs = resolve_preset(preset, split_only(preset, only))
    sweeps = _sweeps(preset, only, width_sweeps)
    return name, [c.with_seed_offset(seed_offset) for c in configs], [s.with_seed_offset(seed_offset) for s in sweeps]


def _sweeps(preset, only, width_sweeps) -> list:
    """The preset's width sweeps (filtered by ``only``), or ``width_sweeps`` when given."""
    from amutheory.campaign.presets import WidthSweep

    if width_sweeps is None:
        return resolve_width_sweeps(preset, only)
    sweeps = list(width_sweeps)
    if not all(isinstance(s, WidthSweep) for s in sweeps):
        raise TypeError("width_sweeps must be a list of WidthSweep")
    if len({s.name for s in sweeps}) != len(sweeps):
        raise ValueError(f"width sweep names must be distinct, got {[s.name for s in sweeps]}")
    return sweeps


def _analyse_width_sweeps(sweeps: list, out: Path, say) -> list:
    """Every width sweep's analysis (an ``{"name", "error"}`` entry where one fails)."""
    if not sweeps:
        return []
    table = read_width_results(out / WIDTH_FILE)
    results = []
    for sw in sweeps:
        try:
            r = analyse_width_sweep(sw, table)
        except (ValueError, ArithmeticError) as exc:
            results.append({"name": sw.name, "family": sw.spec.family, "error": f"{type(exc).__name__}: {exc}"})
            say(f"[{sw.name}] width analysis failed: {exc}")
            continue
        fit = r["fit"]["mean"]
        say(f"[{sw.name}] eta* ~ n^{_g(fit['exponent'])} {_ci(fit['ci'])} (derived {_g(r['derived_exponent'])})")
        results.append(r)
    return results


def run_campaign(preset, out_dir, protocol: ProbeProtocol = ProbeProtocol(), resume: bool = True,
                 progress=print, only=None, chunk: int = 16, figures: bool = True,
                 analyse: bool = True, width_sweeps=None, seed_offset: int = 0) -> dict:
    """Run (or resume) a campaign and write ``results.csv``, ``summary.json``, ``report.md`` and
    figures into ``out_dir``; returns the summary dict.

    ``preset``: a name of :data:`PRESETS` or a list of :class:`CampaignConfig`.  ``only``: a
    config name or list of names to restrict the run to.  ``progress``: called with one string
    per event (``None`` silences it).  ``chunk``: seeds vectorised at once by the probe.
    ``resume``: keep complete ``(config, padding, depth)`` blocks of an earlier run in ``out_dir``
    (partial ones are dropped; an old ``results.csv`` without the ``padding`` column is read as
    circular and rewritten); ``False`` starts ``results.csv`` afresh.  ``analyse=False`` only
    measures and returns the timing counts.  ``width_sweeps``: a list of
    :class:`~amutheory.campaign.presets.WidthSweep` measured and analysed after the configs (default:
    the preset's, :data:`~amutheory.campaign.presets.WIDTH_SWEEPS`; none for a list of configs); their
    per-seed ``s_bar`` goes to ``width.csv`` and resumes the same way.  ``seed_offset``: measure every
    config and sweep on its seeds plus this (a replicate of the campaign on independent seeds when it
    is past every seed of the preset; 0 keeps the preset's)."""
    timing = measure_campaign(preset, out_dir, protocol, resume, progress, only, chunk, width_sweeps, seed_offset)
    if not analyse:
        return timing
    return analyse_campaign(preset, out_dir, protocol, progress, only, figures, timing, width_sweeps, seed_offset)
