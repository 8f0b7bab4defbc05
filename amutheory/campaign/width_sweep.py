"""Learning-rate transfer across width, checked against measurement.

A :class:`WidthSweep` is one net at a fixed depth measured at several widths.  The probe's
``s_bar`` of every seed at every width goes to ``width.csv`` (columns :data:`WIDTH_COLUMNS`),
appended one ``(sweep, width)`` block at a time and fsync-ed, so an interrupted run keeps every
finished block and a rerun resumes from them (a partial block is dropped and measured again).

The analysis (:func:`analyse_width_sweep`) gives, per sweep,

* ``eta*(n)`` (arithmetic mean over seeds, 95% seed-bootstrap CI) at every width;
* the fitted exponent ``d ln eta* / d ln n``: least squares of ``ln mean s_bar`` on ``ln n``
  (:func:`amutheory.stats.fit_loglog_slope`, seeds resampled), times ``-1/2``; compared with the
  exponent derived in :mod:`amutheory.symbolic.primitives.width` for the sweep's readout (``-1/2`` for the
  standard ``Var 1/n`` head, ``0`` for a muP ``Var 1/n^2`` head);
* per width rule of :func:`amutheory.transfer.width_factors` (``derived``, ``fan-in``) the
  predicted ``eta*(n) / eta*(n_ref)`` against the measured ratio and its CI (both seed sets
  resampled, :func:`amutheory.campaign.transfer_table.ratio_ci`).
"""

from __future__ import annotations

import csv
import math
import time
from pathlib import Path

import numpy as np

from amutheory.campaign.common import C_TARGET, LEVEL, _f
from amutheory.campaign.results import _fsync
from amutheory.campaign.transfer_table import error_summary, ratio_ci, rule_entries
from amutheory.campaign.presets import WidthSweep
from amutheory.spec import ProbeProtocol
from amutheory.stats import arith_mean_ci, fit_loglog_slope

WIDTH_FILE = "width.csv"
WIDTH_COLUMNS = ("sweep", "family", "width", "depth", "seed", "s_bar")


# --------------------------------------------------------------------------- width.csv
def read_width_results(path) -> dict:
    """``{(sweep, family, width, depth): {seed: s_bar}}`` from ``width.csv``; rows that do not
    parse (a line cut off by an interrupt) are skipped."""
    path = Path(path)
    out: dict = {}
    if not path.exists() or path.stat().st_size == 0:
        return out
    text = path.read_text()
    lines = text.splitlines()
    if tuple(next(csv.reader(lines[:1]), [])) != WIDTH_COLUMNS:
        raise ValueError(f"{path} does not have the header {list(WIDTH_COLUMNS)}; use another out_dir or resume=False")
    for i, row in enumerate(csv.reader(lines[1:])):
        if (i == len(lines) - 2 and not text.endswith("\n")) or len(row) != len(WIDTH_COLUMNS):
            continue
        try:
            width, depth, seed, s = int(row[2]), int(row[3]), int(row[4]), float(row[5])
        except ValueError:
            continue
        if math.isfinite(s):
            out.setdefault((row[0], row[1], width, depth), {})[seed] = s
    return out


def _key(sweep: WidthSweep, width: int) -> tuple:
    return (sweep.name, sweep.spec.family, int(width), int(sweep.spec.depth))


def _complete(sweep: WidthSweep, width: int, table: dict) -> bool:
    return set(table.get(_key(sweep, width), {})) >= set(sweep.seed_list)


def _rewrite(path: Path, table: dict) -> None:
    """Rewrite ``path`` atomically with the rows of ``table`` (drops partial and cut-off rows)."""
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(WIDTH_COLUMNS)
        for (name, fam, width, depth), seeds in table.items():
            w.writerows([name, fam, width, depth, s, repr(v)] for s, v in sorted(seeds.items()))
        _fsync(f)
    tmp.replace(path)


def measure_width_sweeps(sweeps: list, out_dir, protocol: ProbeProtocol = ProbeProtocol(), resume: bool = True,
                         progress=print, chunk: int = 16) -> dict:
    """Measure every ``(sweep, width)`` block not already complete in ``out_dir/width.csv``."""
    from amutheory.measure.probe import probe

    say = progress if progress is not None else (lambda msg: None)
    path = Path(out_dir) / WIDTH_FILE
    table = read_width_results(path) if resume else {}
    partial = {_key(sw, w) for sw in sweeps for w in sw.widths if not _complete(sw, w, table)}
    keep = {k: v for k, v in table.items() if k not in partial}  # other sweeps' blocks are kept as they are
    if not resume or keep != table or not path.exists():
        _rewrite(path, keep)  # drops partial blocks (measured again below); a fresh header otherwise
    computed = resumed = 0
    current = None
    try:
        for sw in sweeps:
            for i, w in enumerate(sw.widths, 1):
                current = f"[{sw.name}] width {w} ({i}/{len(sw.widths)})"
                if _complete(sw, w, keep):
                    resumed += 1
                    say(f"{current} complete in {WIDTH_FILE}, skipped")
                    continue
                t0 = time.perf_counter()
                s = probe(sw.spec.with_(width=w), sw.seed_list, protocol, chunk=chunk).s
                with open(path, "a", newline="") as f:
                    csv.writer(f).writerows([sw.name, sw.spec.family, w, sw.spec.depth, seed, repr(float(v))]
                                            for seed, v in zip(sw.seed_list, s.mean(axis=1)))
                    _fsync(f)
                computed += 1
                tag, current = current, None
                say(f"{tag} {len(sw.seed_list)} seeds  {time.perf_counter() - t0:.1f} s")
    except KeyboardInterrupt:
        say(f"interrupted {'at ' + current if current else 'between blocks'}; every finished width block is "
            f"saved in {path}. Rerun the same command to continue from there.")
        raise
    return {"width_blocks_computed": computed, "width_blocks_resumed": resumed}


# --------------------------------------------------------------------------- analysis
def analyse_width_sweep(sweep: WidthSweep, table: dict) -> dict:
    """Measured ``eta*(n)``, fitted width exponent and every width rule's transfer error (module docstring)."""
    from amutheory.symbolic.primitives.width import eta_width_exponent
    from amutheory.transfer import depth_measures, width_factors

    missing = [w for w in sweep.widths if not _complete(sweep, w, table)]
    if missing:
        raise ValueError(f"width sweep {sweep.name!r}: widths {missing} are not measured (all seeds)")
    widths = list(sweep.widths)
    s = np.array([[table[_key(sweep, w)][seed] for w in widths] for seed in sweep.seed_list])  # [S, W]
    rows = []
    for j, w in enumerate(widths):
        mean, lo, hi = arith_mean_ci(s[:, j], level=LEVEL, seed=0)
        rows.append({"width": w, "s_bar": _f(mean), "eta_star": _f(math.sqrt(C_TARGET / mean)),
                     "eta_star_ci": [_f(math.sqrt(C_TARGET / hi)), _f(math.sqrt(C_TARGET / lo))]})
    fits = {}
    for stat in ("mean", "geo"):
        fit = fit_loglog_slope(widths, s, level=LEVEL, statistic=stat, seed=0)
        fits[stat] = {"exponent": _f(-fit.slope / 2), "ci": [_f(-fit.ci[1] / 2), _f(-fit.ci[0] / 2)]}
    derived = float(eta_width_exponent(sweep.spec.readout))
    for fit in fits.values():
        fit["derived_inside"] = bool(fit["ci"][0] <= derived <= fit["ci"][1])
    ref_w = sweep.reference_width
    ref_spec = sweep.spec.with_(width=ref_w)
    ref_m = depth_measures(ref_spec)
    rng = np.random.default_rng(0)
    transfer = []
    for j, w in enumerate(widths):
        if w == ref_w:
            continue
        tgt_spec = sweep.spec.with_(width=w)
        factors = width_factors(ref_m, depth_measures(tgt_spec), ref_spec, tgt_spec)
        ratio, lo, hi = ratio_ci(s[:, widths.index(ref_w)], s[:, j], rng)
        transfer.append({"width": w, "measured_ratio": _f(ratio), "ci": [_f(lo), _f(hi)],
                         "rules": rule_entries(factors, ratio, lo, hi)})
    return {"name": sweep.name, "family": sweep.spec.family, "spec": sweep.spec.to_dict(), "depth": sweep.spec.depth,
            "reference_width": ref_w, "seeds": len(sweep.seed_list), "rows": rows, "fit": fits,
            "derived_exponent": derived, "transfer": transfer}


def width_rule_summary(results: list) -> dict:
    """Per width rule, over every sweep and target width: median and max |error|, how many inside the CI."""
    from amutheory.transfer import WIDTH_RULES

    return {rule: error_summary([t["rules"][rule] for r in results for t in r["transfer"]]) for rule in WIDTH_RULES}
