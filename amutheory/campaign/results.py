"""The campaign's files on disk: ``results.csv``, ``stream.csv`` and ``campaign.json``.

**Measure.**  For each depth, the one-step probe (:func:`amutheory.measure.probe.probe`) on
the config's seeds; the per-layer ``s_l`` go into ``out_dir/results.csv`` one
``(config, padding, depth)`` block at a time, flushed and fsync'ed as soon as the block is done, so an
interrupt never loses finished blocks.  Rerunning with ``resume=True`` (the default) skips
complete blocks and drops partial ones.

Residual configs (a family whose ``measures_stream`` is set; ``depth`` = K blocks) write one
results.csv row per pre-activation (``layer`` 1 .. K, or 1 .. 2K for ``preact`` branches: :func:`n_preacts`) and the
residual stream's second moment after the stem and every block of their first
:data:`STREAM_SEEDS` seeds' nets into ``stream.csv``.  ``campaign.json`` holds the protocol and
the configs, checked on resume.

This module reads, writes, checks and resumes those files and rebuilds a config's
:class:`~amutheory.api.Measurement` from them.
"""

from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path

import numpy as np

from amutheory.api import Measurement
from amutheory.campaign.common import C_TARGET, LEVEL
from amutheory.campaign.presets import CampaignConfig, n_preacts
from amutheory.spec import FIELD_DEFAULTS_BEFORE, PADDINGS, ArchSpec, ProbeProtocol

CSV_COLUMNS = ("config", "dim", "activation", "width", "kernel", "spatial", "depth", "seed", "layer", "s",
               "padding")
#: the header of results.csv files written before zero padding: every row is circular
_OLD_CSV_COLUMNS = CSV_COLUMNS[:-1]
_SPEC_COLUMNS = ("dim", "activation", "width", "kernel", "spatial", "padding")
#: the residual stream's second moment after the stem and after every block, per resnet net
STREAM_FILE = "stream.csv"
STREAM_COLUMNS = ("config", "depth", "seed", "block", "q")


# --------------------------------------------------------------------------- results.csv
def _fsync(f):
    f.flush()
    os.fsync(f.fileno())


def _header(path: Path):
    """The header row of ``path`` (``None`` for a missing or empty file)."""
    if not path.exists() or path.stat().st_size == 0:
        return None
    with open(path, newline="") as f:
        return tuple(next(csv.reader([f.readline()]), []))


def read_results(path) -> tuple[dict, int]:
    """Parse ``results.csv`` into ``{(config, padding, depth): {(seed, layer): (row, s)}}``.

    ``row`` is the list of :data:`CSV_COLUMNS` values; files of the old layout (no ``padding``
    column) are read as circular.  Rows that do not parse (a line cut off by an interrupt) are
    skipped; their number is returned as the second element.  Duplicated ``(seed, layer)`` keys
    keep the last row."""
    path = Path(path)
    blocks, bad = {}, 0
    if not path.exists() or path.stat().st_size == 0:
        return blocks, 0
    with open(path, newline="") as f:
        text = f.read()
    lines = text.splitlines()
    if not lines:
        return blocks, 0
    header = tuple(next(csv.reader([lines[0]])))
    if header not in (CSV_COLUMNS, _OLD_CSV_COLUMNS):
        raise ValueError(f"{path} has header {list(header)}, expected {list(CSV_COLUMNS)}; "
                         "use another out_dir or resume=False")
    complete_last = text.endswith("\n")
    for i, row in enumerate(csv.reader(lines[1:])):
        if i == len(lines) - 2 and not complete_last:
            bad += 1  # the last line was cut off mid-write
            continue
        if len(row) != len(header):
            bad += 1
            continue
        if header == _OLD_CSV_COLUMNS:
            row = row + ["circular"]
        try:
            rec = dict(zip(CSV_COLUMNS, row))
            depth, seed, layer = int(rec["depth"]), int(rec["seed"]), int(rec["layer"])
            s = float(rec["s"])
        except ValueError:
            bad += 1
            continue
        if rec["padding"] not in PADDINGS:
            bad += 1
            continue
        blocks.setdefault((rec["config"], rec["padding"], depth), {})[(seed, layer)] = (row, s)
    return blocks, bad


def _block_complete(cfg: CampaignConfig, padding: str, depth: int, block: dict) -> bool:
    expected = {(s, l) for s in cfg.seed_list for l in range(1, n_preacts(cfg.spec, depth) + 1)}
    if set(block) != expected:
        return False
    spec = cfg.spec
    want = [str(spec.dim), spec.activation, str(spec.width), str(spec.kernel), str(spec.spatial), padding]
    for row, s in block.values():
        if [row[CSV_COLUMNS.index(k)] for k in _SPEC_COLUMNS] != want or not math.isfinite(s):
            return False
    return True


def _block_rows(cfg: CampaignConfig, padding: str, depth: int, seeds: list, s: np.ndarray) -> list:
    sp = cfg.spec
    return [[cfg.name, sp.dim, sp.activation, sp.width, sp.kernel, sp.spatial, depth, seed, l + 1,
             repr(float(s[i, l])), padding] for i, seed in enumerate(seeds) for l in range(s.shape[1])]


def _rectangular(depth: int, block: dict) -> bool:
    """Every seed has layers ``1 .. n``, ``n`` = ``depth`` or (preact resnets) ``2 depth``."""
    seeds = {s for s, _ in block}
    n = max(l for _, l in block)
    return n in (depth, 2 * depth) and set(block) == {(s, l) for s in seeds for l in range(1, n + 1)}


def _prepare_csv(path: Path, configs: list, resume: bool, say) -> set:
    """Make ``path`` hold only complete blocks in the current layout (rewritten atomically when
    something is dropped or the file has the old header) and return the set of
    ``(config, padding, depth)`` blocks already done for ``configs``."""
    if not resume or not path.exists() or path.stat().st_size == 0:
        with open(path, "w", newline="") as f:
            csv.writer(f).writerow(CSV_COLUMNS)
            _fsync(f)
        return set()
    old_layout = _header(path) == _OLD_CSV_COLUMNS
    blocks, bad = read_results(path)
    by_name = {c.name: c for c in configs}
    keep, done, dropped = [], set(), []
    for key, block in sorted(blocks.items()):
        name, padding, depth = key
        cfg = by_name.get(name)
        # a config not in this run: keep its blocks as long as they are rectangular
        ok = _rectangular(depth, block) if cfg is None else _block_complete(cfg, padding, depth, block)
        if not ok:
            dropped.append((key, len(block)))
            continue
        keep.append(block)
        if cfg is not None and (padding, depth) in cfg.blocks:
            done.add(key)
    if dropped or bad or old_layout:
        for (name, padding, depth), n in dropped:
            say(f"[{name}] {'' if padding == 'circular' else padding + ' '}depth {depth}: "
                f"dropping a partial block of {n} rows from results.csv")
        if bad:
            say(f"results.csv: dropping {bad} unreadable row(s) (cut off by an interrupt)")
        if old_layout:
            say("results.csv: rewritten with a padding column (the old rows are circular)")
        tmp = path.with_suffix(".csv.tmp")
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(CSV_COLUMNS)
            for block in keep:
                for k in sorted(block):
                    w.writerow(block[k][0])
            _fsync(f)
        os.replace(tmp, path)
    return done


def load_measurement(path, cfg: CampaignConfig, C: float = C_TARGET, level: float = LEVEL,
                     padding: str | None = None, blocks: dict | None = None) -> Measurement:
    """The :class:`Measurement` of ``cfg``'s nets of ``padding`` (default the spec's; a zero
    config's circular references with ``padding="circular"``) rebuilt from ``results.csv``
    (or from ``blocks``, :func:`read_results`' first element, when given)."""
    padding = cfg.spec.padding if padding is None else padding
    depths = cfg.depths_of(padding)
    if not depths:
        raise ValueError(f"[{cfg.name}] measures no {padding}-padding nets")
    if blocks is None:
        blocks, _ = read_results(path)
    seeds = cfg.seed_list
    profiles = {}
    for d in depths:
        block = blocks.get((cfg.name, padding, d))
        if block is None or not _block_complete(cfg, padding, d, block):
            raise ValueError(f"results.csv has no complete block for [{cfg.name}] {padding} depth {d}")
        layers = range(1, n_preacts(cfg.spec, d) + 1)
        profiles[d] = np.array([[block[(s, l)][1] for l in layers] for s in seeds], float)
    spec = cfg.spec.with_(depth=max(depths), padding=padding)
    return Measurement(spec, depths, seeds, profiles, C, level)


# --------------------------------------------------------------------------- stream.csv (resnets)
def stream_moments(spec: ArchSpec, seeds: list, protocol: ProbeProtocol = ProbeProtocol()) -> np.ndarray:
    """``q[i, k] = E[x_k^2]`` of the residual stream of seed ``seeds[i]``'s net (the probe's
    weights and inputs) after the stem (``k = 0``) and after every block: ``[S, K + 1]``."""
    from amutheory.measure.probe import draw_seed

    rows = []
    for seed in seeds:
        model, x, _ = draw_seed(spec, seed, protocol)
        rows.append(model.stream_second_moments(x))
    return np.array(rows, float)


def read_stream(path) -> dict:
    """``stream.csv`` as ``{(config, depth): {(seed, block): q}}``; unreadable rows are skipped."""
    path = Path(path)
    groups = {}
    if not path.exists():
        return groups
    text = path.read_text()
    lines = text.splitlines()
    if not text.endswith("\n") and lines:
        lines = lines[:-1]  # cut off by an interrupt
    if not lines or tuple(next(csv.reader([lines[0]]), [])) != STREAM_COLUMNS:
        return groups
    for row in csv.reader(lines[1:]):
        try:
            name, depth, seed, block, q = row[0], int(row[1]), int(row[2]), int(row[3]), float(row[4])
        except (ValueError, IndexError):
            continue
        if len(row) == len(STREAM_COLUMNS):
            groups.setdefault((name, depth), {})[(seed, block)] = q
    return groups


def _stream_complete(cfg: CampaignConfig, depth: int, group: dict | None) -> bool:
    return group is not None and set(group) == {(s, k) for s in cfg.stream_seeds for k in range(depth + 1)}


def _prepare_stream(path: Path, configs: list, resume: bool) -> set:
    """Rewrite ``stream.csv`` with its readable rows (complete groups only for ``configs``; a
    fresh file when not ``resume``) and return the ``(config, depth)`` groups already done."""
    groups = read_stream(path) if resume else {}
    by_name = {c.name: c for c in configs}
    done = set()
    tmp = path.with_suffix(".csv.tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(STREAM_COLUMNS)
        for (name, depth), group in sorted(groups.items()):
            cfg = by_name.get(name)
            if cfg is not None:
                if not _stream_complete(cfg, depth, group):
                    continue
                done.add((name, depth))
            w.writerows([name, depth, s, k, repr(q)] for (s, k), q in sorted(group.items()))
        _fsync(f)
    os.replace(tmp, path)
    return done


def _measure_stream(path: Path, cfg: CampaignConfig, depth: int, protocol: ProbeProtocol) -> None:
    q = stream_moments(cfg.spec.with_(depth=depth), cfg.stream_seeds, protocol)
    with open(path, "a", newline="") as f:
        csv.writer(f).writerows([cfg.name, depth, s, k, repr(float(q[i, k]))]
                                for i, s in enumerate(cfg.stream_seeds) for k in range(depth + 1))
        _fsync(f)


# --------------------------------------------------------------------------- campaign meta
def _protocol_dict(protocol: ProbeProtocol) -> dict:
    return {"input_var": protocol.input_var, "dtype": protocol.dtype, "device": protocol.device}


def _without_depth(spec: dict) -> dict:
    return {k: v for k, v in spec.items() if k != "depth"}


def _check_meta(path: Path, configs: list, protocol: ProbeProtocol, resume: bool, sweeps: tuple = ()) -> dict:
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
        meta["width_sweeps"] = dict(old.get("width_sweeps", {}))
        for sw in sweeps:
            prev = meta["width_sweeps"].get(sw.name)
            if prev is not None and prev != sw.to_dict():
                raise ValueError(f"{path.parent} holds results of width sweep {sw.name!r} with another set-up "
                                 f"({prev}); use another out_dir or resume=False")
        for cfg in configs:
            prev = meta["configs"].get(cfg.name)
            # results written before a spec field existed were measured with its old value
            cur = cfg.spec.to_dict()
            old_defaults = {k: v for k, v in FIELD_DEFAULTS_BEFORE.items() if k in cur}
            # the spec's depth is the deepest depth: every block carries its own, so a config that
            # gains depths resumes (and one that gains seeds re-measures the blocks it lacks)
            if prev is not None and _without_depth({**old_defaults, **prev.get("spec", {})}) != _without_depth(cur):
                raise ValueError(f"{path.parent} holds results of config {cfg.name!r} with another spec "
                                 f"({prev.get('spec')}); use another out_dir or resume=False")
    for cfg in configs:
        meta["configs"][cfg.name] = cfg.to_dict()
    if sweeps:
        meta.setdefault("width_sweeps", {}).update({sw.name: sw.to_dict() for sw in sweeps})
    return meta
