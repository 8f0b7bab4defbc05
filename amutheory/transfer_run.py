"""The ``probe-run`` rule: the model's own optimum over a short run, at both depths, carried to the full run.

The one-step probe (:mod:`amutheory.transfer_probe`) reads the net at initialisation; a net with
normalisation leaves that state within a few steps (its one-step ratio fell up to 40x further with depth
than the trained optimum did on the issue-47 models).  This rule trains instead, briefly:

**Short-run ratio.**  At the reference depth and at the target depth the user's net (a training
:class:`~amutheory.train.cell.Cell`: model, data, optimizer, batch) is trained for the first
``h = round(fraction * steps)`` of its ``steps`` (``Cell.stop``: the run is the full run cut short, so a
schedule keeps its shape) on a grid of rates ``centre * 10^(k * spacing)``, ``k = -half..half``, ``seeds``
seeds each.  A rate's score is the seed mean of the mean training loss over those ``h`` steps (a smooth
statistic; a diverged seed scores ``2 ln(classes)``).  Where the best rate sits at the grid's end the grid
grows by ``half`` rates on that side (at most :data:`MAX_EXTENSIONS` times).  A depth's short optimum is
the vertex of the least-squares parabola in ``ln(rate)`` through the best rate and two neighbours each
side (clamped to them); the ratio is

    r_h = eta*_h(target) / eta*_h(reference).

The reference grid is centred on the tuned rate; the target's on the reference's short optimum times a
guess (a fixed rule's factor), so a good guess costs no extension.

**Bridge.**  How ``eta*_train / eta*_h`` moves with effective depth is measured on recorded models (the
issue-47 plan's models, package data ``data/transfer_bridge_run.json`` keyed by its run's fingerprint and
valid for the recorded settings only): ``beta_j = [ln(eta*_train ratio) - ln r_h] / ln rho`` with ``rho``
the effective-depth ratio, and the rule is

    lr_t = lr * r_h * rho^beta,   interval = [lo * r_h * rho^beta * exp(-e |ln rho|), hi * ... * exp(+e |ln rho|)]

with ``beta`` the median of the recorded ``beta_j`` and ``e`` the largest leave-one-model-out error
(:func:`amutheory.transfer_probe.bridge_from`; the recorded models' short ratios came from the same seeds
and grid, so ``e`` carries the rule's seed noise: no separate seed CI is stacked on it).

**Cost.**  Every run is charged: ``seeds * rates * h`` steps per depth (:attr:`RunRatio.steps`), stated
beside the rule, in units of one full run (``steps``).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

#: environment variable naming another short-run bridge file, and the package's
BRIDGE_ENV = "AMUTHEORY_TRANSFER_BRIDGE_RUN"
BRIDGE_FILE = Path(__file__).parent / "data" / "transfer_bridge_run.json"
#: the grid may grow this many times on one depth
MAX_EXTENSIONS = 3


@dataclass(frozen=True)
class ShortRun:
    """The short-run probe's settings (module docstring); the recorded bridge holds for these only."""

    fraction: float = 0.2
    seeds: int = 2
    half: int = 4
    spacing: float = 0.25

    def __post_init__(self):
        for name, v, lo, hi in (("fraction", self.fraction, 0.0, 1.0), ("spacing", self.spacing, 0.0, 2.0)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (lo < v <= hi):
                raise ValueError(f"{name} must be in ({lo:g}, {hi:g}], got {v!r}")
        for name, v, lo, hi in (("seeds", self.seeds, 1, 64), ("half", self.half, 2, 20)):
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise ValueError(f"{name} must be an integer in [{lo}, {hi}], got {v!r}")

    def horizon(self, steps: int) -> int:
        """The short run's steps ``h`` of a ``steps``-step run (at least 2)."""
        return min(steps, max(2, round(self.fraction * steps)))

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class ShortOptimum:
    """One depth's short-run optimum, the grid it read and what it cost."""

    depth: int
    eta: float
    rates: list
    scores: list
    flags: list = field(default_factory=list)
    steps: int = 0


@dataclass
class RunRatio:
    """``r_h`` with both depths' short optima, its settings, and its cost."""

    ratio: float
    reference: ShortOptimum
    target: ShortOptimum
    settings: dict
    horizon: int
    steps: int
    full_runs: float
    seconds: float

    def to_dict(self) -> dict:
        return asdict(self)


def _score(rec: dict, classes: int) -> float:
    s = rec.get("score")
    return 2 * math.log(classes) if s is None or not math.isfinite(s) else float(s)


def vertex(rates, scores) -> tuple[float, list]:
    """The parabola vertex in ``ln(rate)`` through the best rate and two neighbours each side (clamped to
    them) and its flags (``no curvature``: the best rate itself; ``edge``: fewer than five rates)."""
    x, y = np.log(np.asarray(rates, float)), np.asarray(scores, float)
    i = int(np.argmin(y))
    w = slice(max(0, i - 2), min(len(x), i + 3))
    flags = [] if w.stop - w.start == 5 else ["edge"]
    a, b, _ = np.polyfit(x[w], y[w], 2)
    if a <= 0:
        return float(rates[i]), flags + ["no curvature"]
    return float(math.exp(min(max(-b / (2 * a), x[w][0]), x[w][-1]))), flags


def short_optimum(template, depth: int, centre: float, settings: ShortRun, seed_start: int = 0,
                  run=None) -> ShortOptimum:
    """The short-run optimum of ``template``'s net at ``depth`` on the grid around ``centre``."""
    from amutheory.train.cell import group_cells
    from amutheory.train.run import train

    if run is None:
        def run(cells):
            """In this process, the cells that differ only in rate trained together."""
            return [r for g in group_cells(cells) for r in train(g)]
    h = settings.horizon(template.steps)
    cell = template.with_(spec=template.spec.with_(depth=depth))
    classes = template.spec.outputs
    ks, scores, finite = list(range(-settings.half, settings.half + 1)), {}, set()

    def train_at(new):
        cells = [cell.with_(lr=centre * 10 ** (k * settings.spacing), seed=seed_start + s, stop=h)
                 for k in new for s in range(settings.seeds)]
        by_key = {r["key"]: r for r in run(cells)}  # an engine may return the records in another order
        for k in new:
            mine = [by_key[c.key()] for c in cells if c.lr == centre * 10 ** (k * settings.spacing)]
            scores[k] = float(np.mean([_score(r, classes) for r in mine]))
            if any(r.get("score") is not None and math.isfinite(r["score"]) for r in mine):
                finite.add(k)

    train_at(ks)
    flags = []
    for _ in range(MAX_EXTENSIONS):
        best = min(scores, key=scores.get)
        lo, hi = min(scores), max(scores)
        if best == lo:
            train_at(list(range(lo - settings.half, lo)))
        elif best == hi:
            train_at(list(range(hi + 1, hi + settings.half + 1)))
        else:
            break
    else:
        best = min(scores, key=scores.get)
        if best in (min(scores), max(scores)):
            flags.append("at the grid's end after every extension")
    if not finite:
        raise ValueError(f"the short runs diverged at every rate tried at depth {depth} "
                         f"({len(scores)} rates from {centre * 10 ** (min(scores) * settings.spacing):.3g} to "
                         f"{centre * 10 ** (max(scores) * settings.spacing):.3g}): no short-run optimum")
    order = sorted(scores)
    rates = [centre * 10 ** (k * settings.spacing) for k in order]
    eta, vflags = vertex(rates, [scores[k] for k in order])
    return ShortOptimum(depth, eta, rates, [scores[k] for k in order], flags + vflags,
                        len(scores) * settings.seeds * h)


def run_ratio(template, from_depth: int, to_depth: int, from_lr: float, guess: float = 1.0,
              settings: ShortRun | None = None, seed_start: int = 0, run=None) -> RunRatio:
    """``r_h`` of ``template``'s net from ``from_depth`` to ``to_depth`` (module docstring)."""
    from amutheory.spec import check_int, check_number
    from amutheory.train.cell import Cell

    if not isinstance(template, Cell):
        raise TypeError(f"template must be a training Cell, got {type(template).__name__}")
    settings = ShortRun() if settings is None else settings
    if not isinstance(settings, ShortRun):
        raise TypeError(f"settings must be a ShortRun, got {type(settings).__name__}")
    from_depth, to_depth = check_int("from_depth", from_depth, 1), check_int("to_depth", to_depth, 1)
    from_lr, guess = check_number("from_lr", from_lr, positive=True), check_number("guess", guess, positive=True)
    t0 = time.perf_counter()
    ref = short_optimum(template, from_depth, from_lr, settings, seed_start, run)
    tgt = short_optimum(template, to_depth, ref.eta * guess, settings, seed_start, run)
    steps = ref.steps + tgt.steps
    return RunRatio(tgt.eta / ref.eta, ref, tgt, settings.to_dict(), settings.horizon(template.steps), steps,
                    steps / template.steps, time.perf_counter() - t0)


# --------------------------------------------------------------------------- the bridge
def bridge_path(path=None) -> Path:
    from amutheory.transfer_interval import record_path

    return record_path(path, BRIDGE_ENV, BRIDGE_FILE)


def bridge(kind: str, settings: ShortRun, path=None, exclude=()):
    """The :class:`amutheory.transfer_probe.Bridge` of the short-run rule for ``kind`` from the recorded run
    with the most models whose settings are ``settings`` (None: none recorded for them)."""
    from amutheory.transfer_probe import bridge_of_runs, load_bridge

    runs = {fp: rec for fp, rec in load_bridge(bridge_path(path)).items()
            if rec.get("settings") == settings.to_dict()}
    return bridge_of_runs(runs, kind, exclude)


def setup_differences(template, fingerprint: str, path=None) -> list[str]:
    """How ``template``'s run differs from the setup the bridge ``fingerprint`` was recorded with (data,
    optimizer, momentum, steps): the interval does not cover those differences."""
    from amutheory.transfer_probe import load_bridge

    rec = load_bridge(bridge_path(path)).get(fingerprint, {})
    out = []
    for field_, mine in (("dataset", template.dataset), ("optimizer", template.optimizer), ("steps", template.steps)):
        theirs = rec.get(field_)
        if theirs is not None and theirs != mine:
            out.append(f"{field_} {mine} (recorded: {theirs})")
    if template.momentum:
        out.append(f"momentum {template.momentum:g} (recorded: plain SGD)")
    return out


def run_factor(r: RunRatio, b, rho: float) -> dict:
    """The rule's factor ``r_h rho^beta`` and its interval factors (without the tuned rate's CI)."""
    if not (rho > 0 and math.isfinite(rho)):
        raise ValueError(f"the effective-depth ratio must be positive, got {rho!r}")
    carry = rho**b.beta
    spread = math.exp(b.error * abs(math.log(rho)))
    return {"factor": r.ratio * carry, "low": r.ratio * carry / spread, "high": r.ratio * carry * spread,
            "short_ratio": r.ratio, "rho": rho, "bridge_factor": carry, "bridge_spread": spread}
