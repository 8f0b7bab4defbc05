"""The validation campaign: measure conv chains over depths, calibrate, predict, compare.

``run_campaign(preset, out_dir)`` (behind ``amutheory validate``) does, for every config of the
preset:

1. **Measure.**  For each depth, the one-step probe (:func:`amutheory.measure.probe.probe`) on
   the config's seeds; the per-layer ``s_l`` go into ``out_dir/results.csv`` one
   ``(config, padding, depth)`` block at a time, flushed and fsync'ed as soon as the block is done, so an
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

Zero-padding configs (``spec.padding == "zero"``) are pairs of the same geometry: circular-padding
reference nets at ``calibration_depths`` (all of them calibrate ``a, b, e`` and the seed spread)
and zero-padded nets at ``depths`` (all held out: the law times the boundary model's factor,
:func:`amutheory.api.zero_padding_factor`, is predicted for them).  Besides the eta* comparison
their summary holds the zero/circular ratio of ``s_bar`` (measured with a bootstrap CI vs
predicted) and the boundary regime per depth (:func:`amutheory.symbolic.boundary.regime`).

Residual configs (``spec.family == "resnet"``, ``depth`` = K blocks) write one results.csv row per
pre-activation (``layer`` 1 .. K, or 1 .. 2K for ``preact`` branches: :func:`n_preacts`) and the
residual stream's second moment after the stem and every block of their first
:data:`STREAM_SEEDS` seeds' nets into ``stream.csv``.  Their analysis
(:func:`analyse_resnet_config`) asks the mean-field recursion first
(:func:`amutheory.symbolic.resnet.forward_analysis`): forward-unstable conventions get no law
(``passed`` is ``None``; measured eta*, its local slopes and the stream growth are reported);
stable ones are calibrated and compared as above, plus the fitted exponent over the deepest
three K and whether the paper's -3/2 lies in its CI.

Outputs in ``out_dir``: ``results.csv``, ``stream.csv`` (resnets), ``campaign.json`` (protocol and
configs, checked on resume), ``summary.json`` (the JSON contract), ``report.md`` and PNG figures.
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
from amutheory.spec import BRANCHES, INITS, PADDINGS, ArchSpec, ProbeProtocol
from amutheory.symbolic.conv import conv_law, derived_constants

CSV_COLUMNS = ("config", "dim", "activation", "width", "kernel", "spatial", "depth", "seed", "layer", "s",
               "padding")
#: the header of results.csv files written before zero padding: every row is circular
_OLD_CSV_COLUMNS = CSV_COLUMNS[:-1]
_SPEC_COLUMNS = ("dim", "activation", "width", "kernel", "spatial", "padding")
STATISTICS = ("mean", "geo")
LEVEL = 0.95
C_TARGET = 1.0
N_BOOT = 2000
COLLAPSE_FIGURE = "boundary_collapse.png"
RESNET_FIGURE = "resnet_eta_star.png"
#: the residual stream's second moment after the stem and after every block, per resnet net
STREAM_FILE = "stream.csv"
STREAM_COLUMNS = ("config", "depth", "seed", "block", "q")
#: seeds (the first of a config's) whose residual stream is measured
STREAM_SEEDS = 4
#: the paper's claimed exponent of eta*(K) for residual nets
PAPER_EXPONENT = -1.5


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
    the subset used for calibration and the seeds (a count ``n`` means ``0 .. n-1``).

    With ``spec.padding == "zero"`` the config is a pair: zero-padded nets at ``depths`` (every
    one held out) and circular-padding reference nets of the same geometry at
    ``calibration_depths`` (every one used for calibration; not necessarily among ``depths``,
    but the zero/circular ratio is only measured at the depths both hold)."""

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
        if missing and self.spec.padding != "zero":
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
    def is_zero(self) -> bool:
        return self.spec.padding == "zero"

    @property
    def is_resnet(self) -> bool:
        return self.spec.family == "resnet"

    @property
    def stream_seeds(self) -> list[int]:
        return self.seed_list[:STREAM_SEEDS]

    @property
    def held_out_depths(self) -> list[int]:
        if self.is_zero:
            return list(self.depths)
        return [d for d in self.depths if d not in self.calibration_depths]

    @property
    def blocks(self) -> list[tuple[str, int]]:
        """The ``(padding, depth)`` blocks measured: circular references first for zero configs."""
        if self.is_zero:
            return [("circular", d) for d in self.calibration_depths] + [("zero", d) for d in self.depths]
        return [(self.spec.padding, d) for d in self.depths]

    def depths_of(self, padding: str) -> list[int]:
        return [d for p, d in self.blocks if p == padding]

    def to_dict(self) -> dict:
        return {"name": self.name, "spec": self.spec.to_dict(), "depths": list(self.depths),
                "calibration_depths": list(self.calibration_depths), "seeds": self.seed_list,
                "padding": self.spec.padding}


def n_preacts(spec: ArchSpec, depth: int) -> int:
    """Pre-activation tensors (probe layers) of ``spec`` at ``depth``: ``depth`` for conv chains
    and for ``conv``/``conv-mlp`` resnets (one per block), ``2 depth`` for ``preact`` resnets."""
    return 2 * depth if spec.family == "resnet" and spec.branch == "preact" else depth


def _conv(name, dim, activation, width, spatial, depths, cal, seeds):
    spec = ArchSpec(dim=dim, depth=max(depths), width=width, kernel=3, spatial=spatial,
                    padding="circular", activation=activation)
    return CampaignConfig(name, spec, tuple(depths), tuple(cal), seeds)


def _zero(dim, activation, width, spatial, kernel, depths, seeds):
    """Zero-padded nets and their circular references at the same depths (all of them calibrate)."""
    spec = ArchSpec(dim=dim, depth=max(depths), width=width, kernel=kernel, spatial=spatial,
                    padding="zero", activation=activation)
    return CampaignConfig(f"zero{dim}d-{activation}-N{spatial}-k{kernel}", spec, tuple(depths), tuple(depths), seeds)


def _resnet(branch, init, activation, width, spatial, depths, seeds):
    """A 1D residual net (``depth`` = K blocks), circular padding, kernel 3, calibrated on K = 2, 4, 8."""
    spec = ArchSpec(family="resnet", dim=1, depth=max(depths), width=width, kernel=3, spatial=spatial,
                    padding="circular", activation=activation, branch=branch, init=init)
    return CampaignConfig(f"resnet-{branch}-{init}-{activation}", spec, tuple(depths), (2, 4, 8), seeds)


def _resnets(width, spatial, depths, seeds):
    """Every (branch, init) pair with ReLU, and the three branches with ``k-last`` and a linear activation."""
    relu = [_resnet(b, i, "relu", width, spatial, depths, seeds) for i in INITS for b in BRANCHES]
    return relu + [_resnet(b, "k-last", "linear", width, spatial, depths, seeds) for b in BRANCHES]


_Q1 = [2, 3, 4, 6, 8, 12, 16, 24, 32]
_Q2 = [2, 3, 4, 6, 8, 12, 16]
_P = [2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]
_PZ = [2, 4, 8, 16, 32, 64]

#: Width is fixed per config (circular configs: 8 x the deepest depth), so the law is compared at
#: fixed width.  Zero-padding configs are named ``zero<dim>d-<activation>-N<spatial>-k<kernel>``.
PRESETS = {
    "quick": [
        _conv("conv1d-relu", 1, "relu", 256, 16, _Q1, [2, 4, 8, 16], 32),
        _conv("conv1d-linear", 1, "linear", 256, 16, _Q1, [2, 4, 8, 16], 32),
        # calibrate() fits a, b, e to s_bar at the calibration depths (>= 3 of them); the deepest
        # calibration depth is half the deepest depth, so the held-out check is an extrapolation
        _conv("conv2d-relu", 2, "relu", 128, 8, _Q2, [2, 4, 6, 8], 32),
        _conv("conv2d-linear", 2, "linear", 128, 8, _Q2, [2, 4, 6, 8], 32),
        # zero padding: the boundary regime L k^2 / N^2 spans ~0.002 .. 6 over N and k
        *[_zero(1, "relu", 128, n, k, [2, 4, 8, 16], 32) for n in (8, 16, 32, 64) for k in (3, 5)],
        _zero(1, "linear", 128, 8, 3, [2, 4, 8, 16], 32),
        _zero(2, "relu", 64, 8, 3, [2, 4, 8], 32),
        # residual nets: K blocks; calibrated on K = 2, 4, 8, held out 16 and 32
        *_resnets(64, 8, [2, 4, 8, 16, 32], 32),
    ],
    # meant for a GPU: pass protocol=ProbeProtocol(device="cuda")
    "paper": [
        _conv("conv1d-relu", 1, "relu", 512, 32, _P, [2, 4, 8, 16], 64),
        _conv("conv1d-linear", 1, "linear", 512, 32, _P, [2, 4, 8, 16], 64),
        _conv("conv2d-relu", 2, "relu", 512, 32, _P, [2, 4, 8, 16], 64),
        _conv("conv2d-linear", 2, "linear", 512, 32, _P, [2, 4, 8, 16], 64),
        *[_zero(dim, "relu", 512, n, k, _PZ, 64) for dim in (1, 2) for n in (8, 16, 32, 64) for k in (3, 5)],
        *[_zero(dim, "linear", 512, 8, 3, _PZ, 64) for dim in (1, 2)],
        *_resnets(256, 16, [2, 4, 8, 16, 32, 64], 64),
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


def _dense_depths(depths) -> list[int]:
    """About 40 log-spaced integer depths spanning ``depths`` (the predicted curve)."""
    return np.unique(np.round(np.geomspace(min(depths), max(depths), 40)).astype(int)).tolist()


def _record_prediction(out: dict, cfg: CampaignConfig, pred, stat: str, curve: dict, dense: list):
    """Put a :class:`~amutheory.api.Prediction` (made at ``cfg.depths`` and ``dense``) into the
    result ``out``: curve, calibration, constants, the law's own slopes; returns the predicted
    ``(eta*, s_bar)`` at ``cfg.depths`` as dicts."""
    eta_all = dict(zip(pred.depths, pred.eta_star))
    curve[f"eta_{stat}"] = [_f(eta_all[d]) for d in dense]
    eta_pred = {d: eta_all[d] for d in cfg.depths}
    s_pred = {d: v for d, v in zip(pred.depths, pred.s_bar) if d in cfg.depths}
    out["calibration"][stat] = pred.calibration.to_dict()
    out["constants"][stat] = {k: c.to_dict() for k, c in pred.constants.items()}
    held = cfg.held_out_depths
    out["predicted_effective_exponent_" + stat] = _f(_ls_slope(cfg.depths, [eta_pred[d] for d in cfg.depths]))
    out["predicted_effective_exponent_held_out_" + stat] = (
        _f(_ls_slope(held, [eta_pred[d] for d in held])) if len(held) >= 2 else None)
    return eta_pred, s_pred


def _mlp_limit_row(cal, v) -> dict:
    """Calibrated ``b/a`` against the derived MLP-limit ``v``."""
    a_, b_ = cal.constants["a"], cal.constants["b"]
    ratio = b_.value / a_.value
    rel = math.sqrt((a_.error / a_.value) ** 2 + (b_.error / b_.value) ** 2) if a_.value and b_.value else float("nan")
    return {"b_over_a": _f(ratio), "b_over_a_error": _f(abs(ratio) * rel),
            "v_mlp": _f(v.value), "v_mlp_source": v.source,
            "ratio_to_mlp_limit": _f(ratio / v.value) if v.value else None}


def _eta_rows(cfg: CampaignConfig, meas: Measurement, stat: str, eta_pred: dict, s_pred: dict,
              cal_set: set) -> list:
    """Per depth: measured ``eta*`` of statistic ``stat`` with its seed-bootstrap CI, the
    prediction (``None`` where there is none) and whether it lies inside the CI."""
    ci_fn = {"mean": stats.arith_mean_ci, "geo": stats.geo_mean_ci}[stat]
    rows = []
    for d in cfg.depths:
        m, lo, hi = ci_fn(meas.s_bar(d), level=meas.level)
        e_m, e_lo, e_hi = _eta(m), _eta(hi), _eta(lo)
        p = eta_pred.get(d)
        ok = p is not None and math.isfinite(p)
        rows.append({
            "depth": d,
            "calibration": d in cal_set,
            "s_pred": _f(s_pred.get(d)),
            "s_meas": _f(m), "s_meas_ci": [_f(lo), _f(hi)],
            "eta_pred": _f(p) if ok else None,
            "eta_meas": _f(e_m), "eta_meas_ci": [_f(e_lo), _f(e_hi)],
            "rel_error": _f(p / e_m - 1.0) if ok else None,
            "inside_ci": bool(ok and e_lo <= p <= e_hi),
        })
    return rows


def _held_out_checks(out: dict, meas: Measurement, stat: str, rows: list) -> tuple:
    """``(passed, max |rel. error|, joint test passed)`` of statistic ``stat`` over the held-out
    rows; adds the outside-CI depth lists and ``held_out_test[stat]`` to ``out``."""
    held_rows = [r for r in rows if not r["calibration"]]
    passed = bool(held_rows) and all(r["inside_ci"] for r in held_rows)
    errs = [abs(r["rel_error"]) for r in held_rows if r["rel_error"] is not None]
    rel_err = max(errs) if errs and len(errs) == len(held_rows) else None
    out["outside_ci_depths_" + stat] = [r["depth"] for r in held_rows if not r["inside_ci"]]
    joint = False
    if held_rows and all(r["s_pred"] for r in held_rows):
        # eta* = sqrt(C / s_bar) is monotone in s_bar: a check on s_bar is the same check on eta*
        test = stats.held_out_test([r["s_pred"] for r in held_rows],
                                   [meas.s_bar(r["depth"]) for r in held_rows], stat, level=meas.level)
        out["held_out_test"][stat] = test.to_dict()
        joint = bool(test.p_value >= 1.0 - meas.level and all(test.bonferroni_inside))
    out["outside_ci_calibration_depths_" + stat] = [r["depth"] for r in rows
                                                    if r["calibration"] and not r["inside_ci"]]
    return passed, rel_err, joint


def _exponent_fits(meas: Measurement, stat: str, depth_sets: dict, derived: float | None) -> dict:
    """``{key: fit}`` of the slope of ln eta* on ln L over each set of depths (``None`` for
    fewer than two), with whether ``derived`` lies inside the 95% seed-bootstrap CI."""
    fits = {}
    for key, ds in depth_sets.items():
        if len(ds) >= 2:
            e, ci = meas.fitted_exponent(stat, ds)
            fits[key] = {"depths": list(ds), "exponent": _f(e), "ci": [_f(ci[0]), _f(ci[1])],
                         "derived_inside_ci": None if derived is None else bool(ci[0] <= derived <= ci[1])}
        else:
            fits[key] = None
    return fits


def _record_verdict(out: dict, passed_stats: dict, rel_errs: dict, joint_ok: dict) -> None:
    """The pass/fail keys of a config result (both statistics must pass) and its headline fit."""
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


def analyse_config(cfg: CampaignConfig, meas: Measurement, protocol: ProbeProtocol = ProbeProtocol(),
                   reference: Measurement | None = None) -> dict:
    """Calibrate on ``cfg.calibration_depths`` (mean and geo), predict every depth and compare.

    Zero configs: ``meas`` holds the zero-padded nets and ``reference`` the circular ones (at
    ``cfg.calibration_depths``), which calibrate the constants; the zero/circular ratio and the
    boundary regime are added (:func:`_add_zero_padding_tables`)."""
    spec = cfg.spec.with_(depth=max(cfg.depths))
    law = conv_law(spec)
    derived = derived_constants(spec, protocol.input_var)
    held = cfg.held_out_depths
    out = {
        "name": cfg.name,
        "padding": spec.padding,
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
    if cfg.is_zero:
        if reference is None:
            raise ValueError(f"[{cfg.name}] a zero-padding config needs the circular reference measurement")
        cal_meas, cal_set = reference, set()
        out["notes"].append(f"zero padding: constants calibrated on circular-padding nets of the same geometry at "
                            f"depths {list(cfg.calibration_depths)}; every zero-padded depth is held out")
    else:
        cal_meas, cal_set = Measurement(spec, list(cfg.calibration_depths), meas.seeds,
                                        {d: meas.profiles[d] for d in cfg.calibration_depths},
                                        meas.C, meas.level), set(cfg.calibration_depths)
    used_constants = {}
    passed_stats, rel_errs, joint_ok = {}, {}, {}
    out["held_out_test"] = {}
    dense = _dense_depths(cfg.depths)
    curve = {"depths": dense}
    for stat in STATISTICS:
        try:
            # one call for the measured depths and the dense curve (law_values is not cheap)
            pred = predict(spec, sorted(set(cfg.depths) | set(dense)), constants="calibrate", statistic=stat,
                           protocol=protocol, C=meas.C, calibration_measurement=cal_meas)
            eta_pred, s_pred = _record_prediction(out, cfg, pred, stat, curve, dense)
            used_constants[stat] = pred.constants
            out["mlp_limit_comparison"][stat] = _mlp_limit_row(pred.calibration, derived["v_mlp"])
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            out["errors"].append(f"{stat}: calibration/prediction failed: {exc}")
            eta_pred, s_pred = {}, {}
            curve[f"eta_{stat}"] = None
        rows = _eta_rows(cfg, meas, stat, eta_pred, s_pred, cal_set)
        out["per_depth"][stat] = rows
        passed_stats[stat], rel_errs[stat], joint_ok[stat] = _held_out_checks(out, meas, stat, rows)
        out["fitted_exponents"][stat] = _exponent_fits(meas, stat, {"all": list(cfg.depths), "held_out": held},
                                                       float(law.exponent))
    if not held:
        out["notes"].append("no held-out depths: nothing independent to check, passed is false")
    out["prediction_curve"] = curve
    _record_verdict(out, passed_stats, rel_errs, joint_ok)
    if cfg.is_zero:
        _add_zero_padding_tables(out, cfg, spec, meas, reference, used_constants, dense)
    return out


# --------------------------------------------------------------------------- residual nets
def _stream_growth_rows(cfg: CampaignConfig, stream: dict, protocol: ProbeProtocol) -> list:
    """Per K: measured ``E[x_K^2] / E[x_0^2]`` of the residual stream (mean, min and max over
    :attr:`CampaignConfig.stream_seeds`; ``None`` where ``stream.csv`` lacks the nets) and the
    mean-field recursion's (:func:`amutheory.symbolic.resnet.forward_analysis`)."""
    from amutheory.symbolic.resnet import forward_analysis

    rows = []
    for d in cfg.depths:
        q = forward_analysis(cfg.spec.with_(depth=d), protocol.input_var)["q_stream"]
        row = {"depth": d, "mean_field": _f(q[-1] / q[0]), "ratio_meas": None, "ratio_meas_range": None,
               "seeds": 0}
        group = stream.get((cfg.name, d))
        if _stream_complete(cfg, d, group):
            ratios = np.array([group[(s, d)] / group[(s, 0)] for s in cfg.stream_seeds])
            row.update(ratio_meas=_f(ratios.mean()), ratio_meas_range=[_f(ratios.min()), _f(ratios.max())],
                       seeds=len(ratios))
        rows.append(row)
    return rows


def _local_slope_rows(meas: Measurement, depths: list, stat: str) -> list:
    """Local slope ``d ln eta* / d ln K`` of the measured statistic at every depth (central
    differences, :func:`amutheory.stats.local_slopes`) with a 95% CI from resampling the seeds
    (seed ``i`` at every depth together, as in :func:`ratio_bootstrap`)."""
    if len(depths) < 2:
        return []
    vals = np.stack([meas.s_bar(d) for d in depths], axis=1)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, vals.shape[0], (N_BOOT, vals.shape[0]))
    slope = -0.5 * stats.local_slopes(depths, _seed_stat(vals, stat, 0))
    lo, hi = _quantile_ci(-0.5 * stats.local_slopes(depths, _seed_stat(vals[idx], stat, 1)), meas.level)
    return [{"depth": d, "slope": _f(slope[i]), "ci": [_f(lo[i]), _f(hi[i])]} for i, d in enumerate(depths)]


def _resnet_base(cfg: CampaignConfig, spec: ArchSpec, fwd: dict) -> dict:
    """The keys every resnet result has (the conv format plus the residual ones)."""
    return {
        "name": cfg.name, "family": "resnet", "branch": spec.branch, "init": spec.init,
        "padding": spec.padding, "spec": spec.to_dict(),
        "depths": list(cfg.depths), "calibration_depths": list(cfg.calibration_depths),
        "held_out_depths": cfg.held_out_depths, "seeds": len(cfg.seed_list),
        "forward_stable": bool(fwd["forward_stable"]), "growth": fwd["growth"], "mechanism": fwd["mechanism"],
        "status": "stable" if fwd["forward_stable"] else "unstable",
        "law": None, "derived_exponent": None, "derived_exponent_value": None, "assumptions": [],
        "per_depth": {}, "calibration": {}, "constants": {}, "fitted_exponents": {}, "held_out_test": {},
        "local_slopes": {}, "errors": [], "notes": [],
    }


def _mark_unstable(out: dict, cfg: CampaignConfig, meas: Measurement, reason: str) -> None:
    """No law: measured eta* only, every verdict ``None``, the paper's claim not borne out."""
    for stat in STATISTICS:
        out["per_depth"][stat] = _eta_rows(cfg, meas, stat, {}, {}, set(cfg.calibration_depths))
        out["fitted_exponents"][stat] = None
    out.update(passed=None, passed_mean=None, passed_geo=None, passed_joint=None, max_rel_error=None,
               max_rel_error_geo=None, fitted_exponent=None, fitted_exponent_ci=None, prediction_curve=None,
               claim_minus_three_halves=False, reason=reason)
    out["notes"].append(f"{reason}: no power law is fitted or predicted; eta*, its local slopes and the "
                        "stream growth are shown for information")


def analyse_resnet_config(cfg: CampaignConfig, meas: Measurement, protocol: ProbeProtocol = ProbeProtocol(),
                          stream: dict | None = None) -> dict:
    """A residual config: forward stability (mean field, :func:`amutheory.symbolic.resnet.forward_analysis`)
    and the measured stream growth first.  Forward-unstable conventions get no law (``passed``
    is ``None``, ``reason`` says why); stable ones are calibrated on ``cfg.calibration_depths``,
    predicted at every K and compared as conv configs are, plus the fitted exponent over the
    deepest three K and whether the paper's -3/2 lies in its CI (``claim_minus_three_halves``)."""
    from amutheory.api import derive
    from amutheory.symbolic.resnet import forward_analysis

    spec = cfg.spec.with_(depth=max(cfg.depths))
    out = _resnet_base(cfg, spec, forward_analysis(spec, protocol.input_var))
    out["stream_growth_measured"] = _stream_growth_rows(cfg, stream or {}, protocol)
    out["stream_growth_mean_field"] = [r["mean_field"] for r in out["stream_growth_measured"]]
    for stat in STATISTICS:
        out["local_slopes"][stat] = _local_slope_rows(meas, list(cfg.depths), stat)
    if not out["forward_stable"]:
        _mark_unstable(out, cfg, meas, f"unstable: forward pass not stable (stream {out['growth']})")
        return out
    try:
        law = derive(spec)
    except ValueError as exc:
        out["errors"].append(f"derive failed: {exc}")
        _mark_unstable(out, cfg, meas, "no law: derive(spec) failed")
        return out
    out.update(law=law.name, derived_exponent=str(law.exponent), derived_exponent_value=float(law.exponent),
               assumptions=list(law.assumptions))
    _compare_resnet(out, cfg, spec, meas, protocol, float(law.exponent))
    return out


def _compare_resnet(out: dict, cfg: CampaignConfig, spec: ArchSpec, meas: Measurement, protocol: ProbeProtocol,
                    derived: float) -> None:
    """Calibrate, predict and compare a forward-stable resnet config (both statistics)."""
    held, cal = cfg.held_out_depths, list(cfg.calibration_depths)
    cal_meas = Measurement(spec, cal, meas.seeds, {d: meas.profiles[d] for d in cal}, meas.C, meas.level)
    depth_sets = {"all": list(cfg.depths), "held_out": held, "deepest": list(cfg.depths[-3:])}
    dense = _dense_depths(cfg.depths)
    curve = {"depths": dense}
    passed_stats, rel_errs, joint_ok = {}, {}, {}
    for stat in STATISTICS:
        try:
            pred = predict(spec, sorted(set(cfg.depths) | set(dense)), constants="calibrate", statistic=stat,
                           protocol=protocol, C=meas.C, calibration_measurement=cal_meas)
            eta_pred, s_pred = _record_prediction(out, cfg, pred, stat, curve, dense)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            out["errors"].append(f"{stat}: calibration/prediction failed: {exc}")
            eta_pred, s_pred = {}, {}
            curve[f"eta_{stat}"] = None
        rows = _eta_rows(cfg, meas, stat, eta_pred, s_pred, set(cal))
        out["per_depth"][stat] = rows
        passed_stats[stat], rel_errs[stat], joint_ok[stat] = _held_out_checks(out, meas, stat, rows)
        out["fitted_exponents"][stat] = _exponent_fits(meas, stat, depth_sets, derived)
    if not held:
        out["notes"].append("no held-out depths: nothing independent to check, passed is false")
    out["prediction_curve"] = curve
    _record_verdict(out, passed_stats, rel_errs, joint_ok)
    claims = {}
    for stat in STATISTICS:
        deep = out["fitted_exponents"][stat]["deepest"]
        claims[stat] = bool(deep and None not in deep["ci"] and deep["ci"][0] <= PAPER_EXPONENT <= deep["ci"][1])
    out["claim_minus_three_halves"] = claims["mean"]
    out["claim_minus_three_halves_by_statistic"] = claims


# --------------------------------------------------------------------------- zero padding
def _seed_stat(values: np.ndarray, statistic: str, axis: int) -> np.ndarray:
    if statistic == "geo":
        return np.exp(np.mean(np.log(values), axis=axis))
    return np.mean(values, axis=axis)


def ratio_bootstrap(zero: np.ndarray, circular: np.ndarray, statistic: str = "mean", n_boot: int = N_BOOT,
                    seed: int = 0, paired: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``(ratio, replicates)`` of ``T(zero) / T(circular)`` per depth, ``T`` the arithmetic or
    geometric mean over seeds; ``zero`` and ``circular`` are per-seed ``s_bar`` arrays ``[S, D]``.

    ``paired=True``: row ``i`` of both is the same seed, i.e. the same weights and inputs (the
    probe draws them from the seed alone; only the padding differs), so the rows are resampled
    together -- one seed draw per replicate shared by both paddings and every depth, which keeps
    their correlation.  ``paired=False`` resamples the two seed sets separately (right only for
    independent sets; with correlated pairs it over-states the spread).  Replicates ``[n_boot, D]``."""
    z, c = np.asarray(zero, float), np.asarray(circular, float)
    rng = np.random.default_rng(seed)
    iz = rng.integers(0, z.shape[0], (n_boot, z.shape[0]))
    ic = iz if paired else rng.integers(0, c.shape[0], (n_boot, c.shape[0]))
    ratio = _seed_stat(z, statistic, 0) / _seed_stat(c, statistic, 0)
    return ratio, _seed_stat(z[iz], statistic, 1) / _seed_stat(c[ic], statistic, 1)


def _quantile_ci(reps: np.ndarray, level: float = LEVEL) -> np.ndarray:
    """Percentile interval along the first axis: ``[2, ...]``."""
    alpha = 1.0 - level
    return np.quantile(reps, [alpha / 2, 1 - alpha / 2], axis=0)


def _ratio_rows(spec: ArchSpec, depths: list, z: np.ndarray, c: np.ndarray, constants: dict | None,
                statistic: str, level: float) -> tuple[list, np.ndarray]:
    """Rows of measured vs predicted zero/circular ratio of ``s_bar`` and the paired replicates."""
    from amutheory.api import zero_padding_factor

    ratio, reps = ratio_bootstrap(z, c, statistic)
    lo, hi = _quantile_ci(reps, level)
    ulo, uhi = _quantile_ci(ratio_bootstrap(z, c, statistic, paired=False)[1], level)
    pred = zero_padding_factor(spec, depths, constants)[0] if constants else [None] * len(depths)
    rows = []
    for i, d in enumerate(depths):
        p = _f(pred[i])
        rows.append({
            "depth": d,
            "ratio_pred": p,
            "ratio_meas": _f(ratio[i]), "ratio_meas_ci": [_f(lo[i]), _f(hi[i])],
            "ratio_meas_ci_unpaired": [_f(ulo[i]), _f(uhi[i])],
            "eta_ratio_pred": _f(p ** -0.5) if p else None,
            "eta_ratio_meas": _f(ratio[i] ** -0.5),
            "rel_error": _f(p / ratio[i] - 1.0) if p else None,
            "inside_ci": bool(p is not None and lo[i] <= p <= hi[i]),
            "inside_ci_unpaired": bool(p is not None and ulo[i] <= p <= uhi[i]),
            "seed_correlation_log": _f(np.corrcoef(np.log(z[:, i]), np.log(c[:, i]))[0, 1]),
        })
    return rows, reps


def _measured_slope_shifts(depths: list, ratio_rows: list, reps: np.ndarray, level: float) -> dict:
    """``{depth: row keys}``: the measured slope shift of eta*, ``-(1/2) d ln ratio / d ln L``
    (local slope of the measured mean ratio over the measured depths, paired-bootstrap CI), and
    the model's on the same depth grid (the model's own ``slope_shift`` is a unit-step derivative)."""
    from amutheory.symbolic.boundary import SLOPE_TOLERANCE

    if len(depths) < 2:
        return {}
    meas = -0.5 * stats.local_slopes(depths, [r["ratio_meas"] for r in ratio_rows])
    lo, hi = _quantile_ci(-0.5 * stats.local_slopes(depths, reps), level)
    pred = [r["ratio_pred"] for r in ratio_rows]
    model = -0.5 * stats.local_slopes(depths, pred) if all(pred) else [None] * len(depths)
    tol = SLOPE_TOLERANCE
    # decided: the CI lies inside [-tol, tol] (holds) or wholly outside it (fails)
    decided = (np.abs(lo) <= tol) & (np.abs(hi) <= tol) | (lo > tol) | (hi < -tol)
    return {d: {"slope_shift_meas": _f(meas[i]), "slope_shift_meas_ci": [_f(lo[i]), _f(hi[i])],
                "constant_level_meas": bool(abs(meas[i]) <= tol), "constant_level_meas_decided": bool(decided[i]),
                "slope_shift_model_grid": _f(model[i])} for i, d in enumerate(depths)}


def _regime_rows(cfg: CampaignConfig, constants: dict | None, measured: dict) -> list:
    """Per zero depth: the boundary regime of the model (:func:`amutheory.symbolic.boundary.regime`
    with the calibrated ``a, b, e, epsilon``) and the measured slope shift where there is one."""
    from amutheory.symbolic.boundary import regime

    sp_ = cfg.spec
    vals = tuple(constants[k].value for k in ("a", "b", "e", "epsilon")) if constants else None
    rows = []
    for d in cfg.depths:
        row = {"depth": d, "regime_parameter": d * sp_.kernel**2 / sp_.spatial**2,
               "sqrt_regime_parameter": math.sqrt(d) * sp_.kernel / sp_.spatial}
        if vals is not None:
            reg = regime(d, sp_.kernel, sp_.spatial, sp_.dim, constants=vals)
            row.update({k: reg[k] for k in ("regime_exponent", "top_eigenvalue", "s_bar_ratio", "eta_ratio",
                                            "slope_shift", "constant_level")})
        row.update(measured.get(d, {}))
        rows.append(row)
    return rows


def _add_zero_padding_tables(out: dict, cfg: CampaignConfig, spec: ArchSpec, meas: Measurement,
                             reference: Measurement, constants: dict, dense: list) -> None:
    """Add a zero config's own keys to its result ``out``: ``ratio`` (per statistic, at the depths
    measured with both paddings), ``regime``, ``ratio_curve`` (the model's mean ratio on ``dense``
    depths) and ``passed_ratio`` (every ratio inside its CI, both statistics)."""
    from amutheory.api import zero_padding_factor

    depths = [d for d in cfg.depths if d in reference.profiles]
    out["ratio_depths"], out["ratio"] = depths, {}
    if not depths:
        out["notes"].append("no depth measured with both paddings: no zero/circular ratio")
    z = np.stack([meas.s_bar(d) for d in depths], axis=1) if depths else None
    c = np.stack([reference.s_bar(d) for d in depths], axis=1) if depths else None
    measured = {}
    for stat in STATISTICS:
        rows, reps = _ratio_rows(spec, depths, z, c, constants.get(stat), stat, meas.level) if depths else ([], None)
        out["ratio"][stat] = rows
        out[f"passed_ratio_{stat}"] = bool(rows) and all(r["inside_ci"] for r in rows)
        errs = [abs(r["rel_error"]) for r in rows if r["rel_error"] is not None]
        out[f"max_rel_error_ratio_{stat}"] = _f(max(errs)) if errs and len(errs) == len(rows) else None
        if stat == "mean" and rows:
            measured = _measured_slope_shifts(depths, rows, reps, meas.level)
    out["passed_ratio"] = bool(out["passed_ratio_mean"] and out["passed_ratio_geo"])
    out["regime"] = _regime_rows(cfg, constants.get("mean"), measured)
    mean_consts = constants.get("mean")
    curve = zero_padding_factor(spec, dense, mean_consts)[0] if mean_consts else None
    out["ratio_curve"] = {"depths": dense, "ratio_mean": None if curve is None else [_f(v) for v in curve]}

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
    if cfg.is_resnet and not result["forward_stable"]:
        return written  # no prediction: the measured eta* is in the resnet figure
    fig = plots.plot_eta_star(result)
    fig.savefig(out_dir / names["eta_star"], dpi=110)
    written["eta_star"] = names["eta_star"]
    consts = result["constants"].get("mean")
    if consts and not cfg.is_zero and not cfg.is_resnet:  # the per-layer law is the circular chain's
        constants = {k: Constant(k, v["value"], v["source"], v.get("error", 0.0)) for k, v in consts.items()}
        prof = {d: per_layer_statistic(meas.profiles[d], "mean") for d in _profile_depths(cfg)}
        fig = plots.plot_layer_profiles(cfg.spec, prof, constants,
                                        title=f"{cfg.name}: measured s_l (mean over seeds) vs the per-layer law "
                                              "with the calibrated constants (mean statistic)")
        fig.savefig(out_dir / names["layer_profiles"], dpi=110)
        written["layer_profiles"] = names["layer_profiles"]
    return written


def _collapse_configs(results: list) -> list:
    """The zero configs drawn in the collapse figure: the 1D ReLU ones (else every zero config)."""
    zero = [r for r in results if r["padding"] == "zero" and r.get("ratio", {}).get("mean")]
    relu1d = [r for r in zero if r["spec"]["dim"] == 1 and r["spec"]["activation"] == "relu"]
    return relu1d or zero


def _collapse_figure(out_dir: Path, results: list) -> dict:
    """Write ``boundary_collapse.png`` when there are zero configs; returns the summary keys
    ``figures`` (and ``errors`` when drawing failed)."""
    from amutheory import plots

    chosen = _collapse_configs(results)
    if not chosen:
        return {}
    try:
        fig = plots.plot_boundary_collapse(_json_safe(chosen))
        fig.savefig(out_dir / COLLAPSE_FIGURE, dpi=110)
    except Exception as exc:  # a figure must not lose the numbers
        return {"figures": {}, "errors": [f"boundary collapse figure failed: {type(exc).__name__}: {exc}"]}
    return {"figures": {"boundary_collapse": COLLAPSE_FIGURE}, "collapse_configs": [r["name"] for r in chosen]}


def _merge_figure_keys(*parts: dict) -> dict:
    """Summary keys of several summary-level figures: ``figures`` and ``errors`` joined."""
    out = {}
    for part in parts:
        for k, v in part.items():
            if k == "figures":
                out.setdefault("figures", {}).update(v)
            elif k == "errors":
                out.setdefault("errors", []).extend(v)
            else:
                out[k] = v
    return out


def _resnet_figure(out_dir: Path, results: list) -> dict:
    """Write ``resnet_eta_star.png`` when there are ReLU resnet configs; returns summary keys."""
    from amutheory import plots

    chosen = [r for r in results if r.get("family") == "resnet" and r["spec"]["activation"] == "relu"]
    if not chosen:
        return {}
    try:
        fig = plots.plot_resnet_eta_star(_json_safe(chosen))
        fig.savefig(out_dir / RESNET_FIGURE, dpi=110)
    except Exception as exc:  # a figure must not lose the numbers
        return {"figures": {}, "errors": [f"resnet figure failed: {type(exc).__name__}: {exc}"]}
    return {"figures": {"resnet_eta_star": RESNET_FIGURE}}


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


def _geometry(c: dict) -> str:
    s = c["spec"]
    return f"N={s['spatial']}, k={s['kernel']}, {s['dim']}D {s['activation']}"


def _span(values, fmt="{:.3g}") -> str:
    lo, hi = min(values), max(values)
    return fmt.format(lo) if lo == hi else f"{fmt.format(lo)} .. {fmt.format(hi)}"


def _level_clause(rows: list, key: str, flag: str) -> str:
    """``holds at L = 2, 4 (...); fails at L = 8 (...)`` for one config."""
    parts = []
    for verdict, picked in (("holds", [r for r in rows if r[flag]]), ("fails", [r for r in rows if not r[flag]])):
        if picked:
            parts.append(f"{verdict} at L = {', '.join(str(r['depth']) for r in picked)} "
                         f"(L k^2/N^2 {_span([r['regime_parameter'] for r in picked])}, "
                         f"slope shift {_span([r[key] for r in picked], '{:+.3f}')})")
    return "; ".join(parts) or "no data"


def _threshold_sentence(rows: list, flag: str) -> str:
    holds = [r["regime_parameter"] for r in rows if r[flag]]
    fails = [r["regime_parameter"] for r in rows if not r[flag]]
    text = f"holds at {len(holds)} of {len(rows)} (config, depth) points, fails at {len(fails)}"
    if holds and fails:
        if max(holds) < min(fails):
            return text + (f"; the split is clean in L k^2/N^2: it holds up to {max(holds):.3g} and fails from "
                           f"{min(fails):.3g} on")
        return text + (f"; no clean threshold in L k^2/N^2 (holds up to {max(holds):.3g}, fails already at "
                       f"{min(fails):.3g})")
    return text


def _constant_level_lines(zero: list) -> list:
    from amutheory.symbolic.boundary import SLOPE_TOLERANCE

    model = [(c, [r for r in c["regime"] if "slope_shift" in r]) for c in zero]
    meas = [(c, [r for r in c["regime"] if r.get("slope_shift_meas") is not None]) for c in zero]
    lines = ["### Is the boundary effect constant-level?", "",
             "The paper treats the zero-padding boundary as a constant-level factor (no change of the "
             f"depth exponent).  Criterion: the boundary's shift of the local slope d ln eta*/d ln L is at most "
             f"{SLOPE_TOLERANCE} in size.  *Model*: `boundary.regime` with each config's calibrated constants "
             "(unit-step derivative at L).  *Measured*: local slope of the measured zero/circular mean ratio over "
             "the measured depths, times -1/2 (a derivative over the coarse depth grid; point estimate, its "
             "95% CI in the tables).", ""]
    for c, rows in model:
        lines.append(f"* {c['name']} ({_geometry(c)}): model {_level_clause(rows, 'slope_shift', 'constant_level')}")
    mrows = [r for _, rows in model for r in rows]
    if mrows:
        lines += ["", f"Model, all zero configs: the claim {_threshold_sentence(mrows, 'constant_level')}.", ""]
    for c, rows in meas:
        if rows:
            lines.append(f"* {c['name']} ({_geometry(c)}): measured "
                         f"{_level_clause(rows, 'slope_shift_meas', 'constant_level_meas')}")
    mm = [r for _, rows in meas for r in rows]
    if mm:
        agree = sum(r["constant_level_meas"] == r["constant_level"] for r in mm if "constant_level" in r)
        decided = sum(r.get("constant_level_meas_decided", False) for r in mm)
        lines += ["", f"Measured, all zero configs: the claim {_threshold_sentence(mm, 'constant_level_meas')} "
                      f"(point estimates; the 95% CI decides the verdict -- wholly inside or wholly outside "
                      f"+-{SLOPE_TOLERANCE} -- at {decided} of {len(mm)} points); model and measurement give the "
                      f"same verdict at {agree} of {len(mm)} points.", ""]
    return lines


def _prediction_lines(zero: list) -> list:
    lines = ["### Did the boundary model's prediction pass?", ""]
    for stat, title in (("mean", "arithmetic mean"), ("geo", "geometric mean")):
        rows = [r for c in zero for r in c["ratio"][stat]]
        inside = sum(r["inside_ci"] for r in rows)
        errs = [abs(r["rel_error"]) for r in rows if r["rel_error"] is not None]
        lines.append(f"* zero/circular ratio ({title}): predicted inside the measured 95% CI at {inside} of "
                     f"{len(rows)} (config, depth) points; |predicted / measured - 1| up to "
                     f"{_pct(max(errs)) if errs else 'n/a'}.")
    for key, what in (("passed_ratio", "ratio check (every depth, both statistics)"),
                      ("passed", "eta* check (every zero depth held out, both statistics)"),
                      ("passed_joint", "joint held-out eta* test")):
        ok = [c["name"] for c in zero if c.get(key)]
        bad = [c["name"] for c in zero if not c.get(key)]
        lines.append(f"* {what}: passed by {len(ok)} of {len(zero)}"
                     + (f" ({', '.join(ok)})" if ok else "") + (f"; failed by {', '.join(bad)}" if bad else "") + ".")
    judged = [r for c in zero for r in c["ratio"]["mean"]
              if r["ratio_pred"] is not None and None not in r["ratio_meas_ci"]]
    under = [r for r in judged if r["ratio_pred"] > r["ratio_meas_ci"][1]]
    over = [r for r in judged if r["ratio_pred"] < r["ratio_meas_ci"][0]]
    lines.append(f"* where it misses (mean): the model predicts too little boundary loss (ratio above the CI) at "
                 f"{len(under)} points and too much (below the CI) at {len(over)}.  The model is the position-local "
                 "mean field and leaves out cross-position correlations (e.g. the spatially coherent mode that "
                 "ReLU's non-zero mean feeds); by activation:")
    for act in sorted({c["spec"]["activation"] for c in zero}):
        rows = [r for c in zero if c["spec"]["activation"] == act for r in c["ratio"]["mean"]]
        errs = [abs(r["rel_error"]) for r in rows if r["rel_error"] is not None]
        lines.append(f"  * {act}: inside at {sum(r['inside_ci'] for r in rows)} of {len(rows)} points, "
                     f"|predicted / measured - 1| up to {_pct(max(errs)) if errs else 'n/a'}")
    unp = [r for c in zero for s in STATISTICS for r in c["ratio"][s]]
    n_unp, n_in = sum(r["inside_ci_unpaired"] for r in unp), sum(r["inside_ci"] for r in unp)
    lines += [f"* with the two seed sets resampled separately (unpaired, ignoring that seed i is the same net "
              f"under both paddings) the predicted ratio would lie inside at {n_unp} of {len(unp)} "
              f"(config, depth, statistic) points instead of {n_in}; "
              f"the per-seed correlation of ln s_bar between the paddings is "
              f"{_span([r['seed_correlation_log'] for r in unp], '{:.3f}')}.", ""]
    return lines


def _zero_config_lines(c: dict) -> list:
    reg = {r["depth"]: r for r in c["regime"]}
    lines = [f"### {c['name']}: eta* {'PASSED' if c['passed'] else 'FAILED'}, "
             f"zero/circular ratio {'PASSED' if c['passed_ratio'] else 'FAILED'}", ""]
    lines += [f"* **error**: {e}" for e in c["errors"]] + [f"* note: {n}" for n in c["notes"]]
    lines += [
        f"* {_geometry(c)}, width {c['spec']['width']}, {c['seeds']} seeds (the same seeds, hence the same "
        f"weights and inputs, for both paddings); zero-padded depths {c['depths']} (all held out), circular "
        f"references at {c['calibration_depths']} (calibration).",
        f"* max relative error of eta*: {_pct(c['max_rel_error'])} (mean), {_pct(c['max_rel_error_geo'])} (geo); "
        f"of the ratio: {_pct(c['max_rel_error_ratio_mean'])} (mean), {_pct(c['max_rel_error_ratio_geo'])} (geo)",
        *[f"* joint held-out test ({st}): chi2 = {t['chi2']:.2f} on {t['dof']} dof, p = {t['p_value']:.3g}"
          for st, t in c.get("held_out_test", {}).items()], "",
        "| stat | depth | L k^2/N^2 | predicted eta* | measured eta* [95% CI] | inside | predicted ratio | "
        "measured ratio [95% CI] | inside | slope shift: model / model on grid / measured [95% CI] | "
        "constant-level? model / measured |",
        "|---|---:|---:|---:|---|:---:|---:|---|:---:|---|:---:|",
    ]
    yn = lambda v: "n/a" if v is None else ("yes" if v else "**no**")  # noqa: E731
    for stat in STATISTICS:
        ratio = {r["depth"]: r for r in c["ratio"][stat]}
        for r in c["per_depth"][stat]:
            d, q, g = r["depth"], ratio.get(r["depth"], {}), reg.get(r["depth"], {})
            shift = (f"{_g(g.get('slope_shift'), 3)} / {_g(g.get('slope_shift_model_grid'), 3)} / "
                     f"{_g(g.get('slope_shift_meas'), 3)} {_ci(g.get('slope_shift_meas_ci'), 3)}"
                     if stat == "mean" else "")
            level = f"{yn(g.get('constant_level'))} / {yn(g.get('constant_level_meas'))}" if stat == "mean" else ""
            lines.append(f"| {stat} | {d} | {_g(g.get('regime_parameter'), 3)} | {_g(r['eta_pred'], 5)} | "
                         f"{_g(r['eta_meas'], 5)} {_ci(r['eta_meas_ci'], 5)} | {yn(r['inside_ci'])} | "
                         f"{_g(q.get('ratio_pred'))} | {_g(q.get('ratio_meas'))} {_ci(q.get('ratio_meas_ci'))} | "
                         f"{yn(q.get('inside_ci')) if q else 'n/a'} | {shift} | {level} |")
    lines.append("")
    for kind, fname in c.get("figures", {}).items():
        lines += [f"![{c['name']} {kind}]({fname})", ""]
    return lines


def _zero_report_lines(summary: dict, zero: list) -> list:
    """The report's "Zero padding" section."""
    lines = [
        "## Zero padding", "",
        "* each config is a pair of the same geometry and the same seeds: zero-padded nets at its depths "
        "and circular-padding nets at its calibration depths.  `a, b, e` and the seed spread are calibrated "
        "on the circular nets only; the zero-padding prediction is the law times the boundary model's "
        "factor (`amutheory.symbolic.boundary`: position-local mean field, `api.zero_padding_factor`), so "
        "every zero-padded depth is held out.",
        "* ratio = s_bar(zero) / s_bar(circular) of the mean (or geometric mean) over seeds; eta* ratio = "
        "ratio^(-1/2).  95% CI: percentile bootstrap, 2000 replicates, fixed seed, the seeds resampled "
        "*paired* (seed i has the same weights and inputs under both paddings, so the two sets are not "
        "independent; `ratio_meas_ci_unpaired` in summary.json is the interval with the two sets resampled "
        "separately, for comparison).",
        "* regime parameter L k^2/N^2 (per axis in 2D); constant-level: |slope shift| <= 0.05.", "",
    ]
    fig = summary.get("figures", {}).get("boundary_collapse")
    if fig:
        lines += [f"![boundary collapse]({fig})", "",
                  f"Boundary collapse ({', '.join(summary.get('collapse_configs', []))}): measured ratio "
                  "(mean, 95% CI) against L k^2/N^2 (left) and sqrt(L) k/N (right), lines the model; if the "
                  "regime parameter is right the series fall on one curve.  sqrt(L) k/N is the square root of "
                  "L k^2/N^2, so the right panel is the same collapse on a stretched axis.", ""]
    lines += _constant_level_lines(zero) + _prediction_lines(zero)
    for c in zero:
        lines += _zero_config_lines(c)
    return lines


def _resnet_message(res: dict) -> str:
    """The progress line of an analysed resnet config."""
    if not res["forward_stable"]:
        return f"[{res['name']}] forward unstable (stream {res['growth']}): no law fitted"
    deep = (res["fitted_exponents"].get("mean") or {}).get("deepest")
    verdict = "no law" if res["passed"] is None else ("passed" if res["passed"] else "FAILED")
    return (f"[{res['name']}] {verdict}: max rel. error (held-out, mean) {_pct(res['max_rel_error'])}, fitted "
            f"exponent (deepest K) {_g(deep and deep['exponent'])} {_ci(deep and deep['ci'])} vs derived "
            f"{res['derived_exponent']}")


def _fit_cell(fit: dict | None) -> str:
    return "n/a" if not fit else f"{fit['exponent']:.3f} {_ci(fit['ci'], 3)}"


def _resnet_verdict(c: dict) -> str:
    if c["passed"] is None:
        return "n/a (forward unstable)" if not c["forward_stable"] else "n/a (no law)"
    tests = c.get("held_out_test", {})
    ps = [f"{tests[s]['p_value']:.3g} ({s})" for s in STATISTICS if s in tests]
    joint = f"; joint p = {', '.join(ps)}" if ps else ""
    return f"{'passed' if c['passed'] else '**failed**'} (max err. {_pct(c['max_rel_error'])} (mean){joint})"


def _resnet_table_lines(resnets: list) -> list:
    lines = ["| convention | branch | activation | derived exponent | measured exponent, all K [95% CI] | "
             "measured exponent, deepest 3 K [95% CI] | derived in CI (all / deepest) | forward stable? | "
             "paper's -3/2 holds? | held-out check (both statistics) |",
             "|---|---|---|---:|---|---|:---:|:---:|:---:|---|"]
    order = {i: k for k, i in enumerate(INITS)}
    for c in sorted(resnets, key=lambda c: (order.get(c["init"], 99), c["spec"]["activation"] != "relu")):
        fits = c["fitted_exponents"].get("mean") or {}
        inside = " / ".join("n/a" if not fits.get(k) else ("yes" if fits[k]["derived_inside_ci"] else "no")
                            for k in ("all", "deepest"))
        claim = ("yes" if c["claim_minus_three_halves"] else "no") if c["forward_stable"] else "no (no power law)"
        lines.append(f"| {c['init']} | {c['branch']} | {c['spec']['activation']} | "
                     f"{c['derived_exponent'] or 'none (unstable)'} | {_fit_cell(fits.get('all'))} | "
                     f"{_fit_cell(fits.get('deepest'))} | {inside} | "
                     f"{'yes' if c['forward_stable'] else '**no**'} | {claim} | {_resnet_verdict(c)} |")
    return lines


def _resnet_config_lines(c: dict) -> list:
    head = "FORWARD UNSTABLE" if not c["forward_stable"] else ("PASSED" if c["passed"] else "FAILED")
    lines = [f"### {c['name']}: {head}", "", f"* mechanism: {c['mechanism']}", f"* stream growth: {c['growth']}"]
    lines += [f"* **error**: {e}" for e in c["errors"]] + [f"* note: {n}" for n in c["notes"]]
    for st, t in c.get("held_out_test", {}).items():
        lines.append(f"* joint held-out test ({st}): chi2 = {t['chi2']:.2f} on {t['dof']} dof, p = {t['p_value']:.3g}")
    lines += ["", "| K | E[x_K^2]/E[x_0^2] measured (range) | mean field | predicted eta* (mean) | "
              "measured eta* (mean) [95% CI] | inside | local slope of eta* (mean) [95% CI] |",
              "|---:|---|---:|---:|---|:---:|---|"]
    slopes = {r["depth"]: r for r in c["local_slopes"].get("mean", [])}
    for r, q in zip(c["per_depth"]["mean"], c["stream_growth_measured"]):
        s = slopes.get(r["depth"], {})
        inside = "" if r["eta_pred"] is None else ("yes" if r["inside_ci"] else "**no**")
        lines.append(f"| {r['depth']}{' (cal)' if r['calibration'] and c['forward_stable'] else ''} | "
                     f"{_g(q['ratio_meas'])} {_ci(q['ratio_meas_range'])} | {_g(q['mean_field'])} | "
                     f"{_g(r['eta_pred'], 5)} | {_g(r['eta_meas'], 5)} {_ci(r['eta_meas_ci'], 5)} | {inside} | "
                     f"{_g(s.get('slope'), 3)} {_ci(s.get('ci'), 3)} |")
    lines.append("")
    for kind, fname in c.get("figures", {}).items():
        lines += [f"![{c['name']} {kind}]({fname})", ""]
    return lines


def _resnet_report_lines(summary: dict, resnets: list) -> list:
    """The report's "Residual networks" section."""
    stable = [c for c in resnets if c["forward_stable"]]
    lines = [
        "## Residual networks", "",
        "* nets: a stem conv, K residual blocks `x <- x + alpha branch(x)` and the GAP + linear head "
        "(`amutheory.measure.resnet`); depth = K blocks.  Branches: `conv` = phi(W * x), `conv-mlp` = "
        "W2 phi(W1 * x) (W2 1x1), `preact` = W2 * phi(W1 * phi(x)); init conventions as in "
        "`amutheory.symbolic.resnet_init`.  s_bar is the mean over every tensor entering an activation: "
        "K per net (`conv`, `conv-mlp`) or 2K (`preact`, the stream too).",
        "* forward stability, growth and mechanism: the mean-field recursion of the stream "
        "(`amutheory.symbolic.resnet.forward_analysis`); measured growth E[x_K^2]/E[x_0^2]: mean over the first "
        f"{STREAM_SEEDS} seeds' nets (the probe's weights and inputs), range over them in brackets.",
        "* forward-unstable conventions have no power law: nothing is fitted or predicted for them; their "
        "measured eta*, its local slopes (central differences in ln K, seed-bootstrap CI) and the stream "
        "growth are shown for information.",
        "* stable conventions: the derived law (`api.derive`) with `A, B, e0` and the seed spread calibrated "
        "on the calibration K (lognormal model, as for conv chains), every other K held out; fitted exponent = "
        "least-squares slope of ln eta* on ln K (arithmetic mean over seeds) with its 95% seed-bootstrap CI, "
        "over all K and over the deepest three.  The paper's -3/2 \"holds\" where it lies inside the "
        "deepest-three CI.",
        f"* {len(stable)} of {len(resnets)} configs are forward-stable; "
        f"{sum(bool(c['passed']) for c in stable)} of those pass the held-out eta* check (both statistics).", "",
    ]
    fig = summary.get("figures", {}).get("resnet_eta_star")
    if fig:
        lines += [f"![resnet eta*]({fig})", "",
                  "Measured eta* (arithmetic mean over seeds, 95% CI) against K, one panel per init convention, "
                  "ReLU; lines: the calibrated derived law where the forward pass is stable; open markers: "
                  "forward-unstable configs (no law).", ""]
    lines += _resnet_table_lines(resnets) + [""]
    lines += [f"* {c['init']} / {c['branch']} ({c['spec']['activation']}): {c['mechanism']}" for c in resnets]
    lines.append("")
    for c in resnets:
        lines += _resnet_config_lines(c)
    return lines


def write_report(path: Path, summary: dict) -> None:
    """``report.md``: what was run, per-config tables, exponents, constants, pass/fail, figures."""
    pr = summary["protocol"]
    lines = [f"# amutheory validation campaign: preset `{summary['preset']}`", ""]
    resnets = [c for c in summary["configs"] if c.get("family") == "resnet"]
    circ = [c for c in summary["configs"] if c.get("padding", "circular") != "zero" and c not in resnets]
    zero = [c for c in summary["configs"] if c.get("padding") == "zero" and c not in resnets]
    n_pass = sum(c["passed"] for c in circ)
    n_joint = sum(c.get("passed_joint", False) for c in circ)
    if circ:
        lines += [
            f"{n_pass} of {len(circ)} {'circular-padding ' if zero else ''}configs passed "
            "(predicted eta* inside the measured 95% CI at every held-out depth, for both the arithmetic "
            f"and the geometric mean over seeds); {n_joint} of {len(circ)} pass the joint "
            "held-out test (chi-square p >= 0.05 and every depth inside its Bonferroni interval).", ""]
    if zero:
        lines += [
            f"Zero padding: {sum(c['passed'] for c in zero)} of {len(zero)} configs pass the eta* check and "
            f"{sum(c['passed_ratio'] for c in zero)} of {len(zero)} the zero/circular ratio check "
            "(predicted inside the measured 95% CI at every depth, both statistics); see "
            "[Zero padding](#zero-padding).", ""]
    if resnets:
        stable = [c for c in resnets if c["forward_stable"]]
        lines += [
            f"Residual networks: {len(stable)} of {len(resnets)} configs are forward-stable; "
            f"{sum(bool(c['passed']) for c in stable)} of those pass the held-out eta* check and -3/2 lies in "
            f"the fitted CI over the deepest K for {sum(c['claim_minus_three_halves'] for c in resnets)}; see "
            "[Residual networks](#residual-networks).", ""]
    lines += [
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
        "its own 95% interval with probability 5% at every depth.  The joint test (`stats.held_out_test`) turns "
        "each depth's lognormal t-statistic of ln(predicted / measured) (Cox's method for the mean) into "
        "a z-score, sums the squares into a chi-square with one degree of freedom per held-out depth, "
        "and asks every depth to lie inside its Bonferroni interval (level 1 - 0.05/k).",
        f"* measuring time this run: {summary['timing']['measure_s']:.1f} s "
        f"({summary['timing']['blocks_computed']} blocks computed, "
        f"{summary['timing']['blocks_resumed']} taken from an earlier run); analysis "
        f"{summary['timing']['analysis_s']:.1f} s.", "",
        "| config | padding | dim | activation | width | kernel | spatial | batch | seeds | depths "
        "| calibration depths |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in summary["configs"]:
        s = c["spec"]
        cal = f"{c['calibration_depths']} (circular nets)" if c.get("padding") == "zero" else c["calibration_depths"]
        lines.append(f"| {c['name']} | {s['padding']} | {s['dim']} | {s['activation']} | {s['width']} | "
                     f"{s['kernel']} | "
                     f"{s['spatial']}{'x' + str(s['spatial']) if s['dim'] == 2 else ''} | {s['batch']} | "
                     f"{c['seeds']} | {c['depths']} | {cal} |")
    lines.append("")
    for c in circ:
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
    if zero:
        lines += _zero_report_lines(summary, zero)
    if resnets:
        lines += _resnet_report_lines(summary, resnets)
    Path(path).write_text("\n".join(lines) + "\n")


# --------------------------------------------------------------------------- driver
def _block_tag(cfg: CampaignConfig, padding: str, depth: int, i: int, n: int) -> str:
    """``[name] depth 4 (2/9)``; zero configs name the padding: ``[name] zero depth 4 (6/8)``."""
    pad = f" {padding}" if cfg.is_zero else ""
    return f"[{cfg.name}]{pad} depth {depth} ({i}/{n})"


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
    resnets = [c for c in configs if c.is_resnet]
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
                if cfg.is_resnet and (cfg.name, d) not in stream_done:
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
    blocks, _ = read_results(csv_path)
    stream = read_stream(out / STREAM_FILE)
    for cfg in configs:
        where = " (circular references)" if cfg.is_zero else ""
        say(f"[{cfg.name}] calibrating on depths {list(cfg.calibration_depths)}{where} and comparing")
        meas = load_measurement(csv_path, cfg, blocks=blocks)
        if cfg.is_resnet:
            res = analyse_resnet_config(cfg, meas, protocol, stream)
        else:
            ref = load_measurement(csv_path, cfg, padding="circular", blocks=blocks) if cfg.is_zero else None
            res = analyse_config(cfg, meas, protocol, reference=ref)
        if figures:
            try:
                res["figures"] = make_figures(out, cfg, meas, res)
            except Exception as exc:  # a figure must not lose the numbers
                res["errors"].append(f"figures failed: {type(exc).__name__}: {exc}")
                res["figures"] = {}
        results.append(res)
        if cfg.is_resnet:
            say(_resnet_message(res))
            continue
        say(f"[{cfg.name}] {'passed' if res['passed'] else 'FAILED'}: max rel. error (held-out, mean) "
            f"{_pct(res['max_rel_error'])}, fitted exponent {_g(res['fitted_exponent'])} "
            f"{_ci(res['fitted_exponent_ci'])} vs derived {res['derived_exponent']}"
            + (f"; zero/circular ratio {'passed' if res['passed_ratio'] else 'FAILED'}" if cfg.is_zero else ""))
    extra = _merge_figure_keys(_collapse_figure(out, results), _resnet_figure(out, results)) if figures else {}
    timing = dict(timing or {"measure_s": 0.0, "blocks_computed": 0, "blocks_resumed": 0})
    timing["analysis_s"] = time.perf_counter() - t_an
    conv = [r for r in results if r.get("family", "conv") != "resnet"]
    resnets = [r for r in results if r.get("family") == "resnet"]
    summary = {
        "preset": preset_name,
        "out_dir": str(out),
        "configs": results,
        # forward-unstable resnets (passed None) have no law to check
        "passed": all(r["passed"] for r in results if r["passed"] is not None),
        "passed_circular": all(r["passed"] for r in conv if r["padding"] != "zero"),
        "passed_zero": all(r["passed"] and r["passed_ratio"] for r in conv if r["padding"] == "zero"),
        **({"passed_resnet": all(r["passed"] for r in resnets if r["passed"] is not None)} if resnets else {}),
        "protocol": _protocol_dict(protocol),
        "C": C_TARGET,
        "level": LEVEL,
        "timing": timing,
        **extra,
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
    ``resume``: keep complete ``(config, padding, depth)`` blocks of an earlier run in ``out_dir``
    (partial ones are dropped; an old ``results.csv`` without the ``padding`` column is read as
    circular and rewritten); ``False`` starts ``results.csv`` afresh.  ``analyse=False`` only
    measures and returns the timing counts."""
    timing = measure_campaign(preset, out_dir, protocol, resume, progress, only, chunk)
    if not analyse:
        return timing
    return analyse_campaign(preset, out_dir, protocol, progress, only, figures, timing)
