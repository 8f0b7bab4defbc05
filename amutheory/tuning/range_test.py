"""The learning-rate range test, the search most practitioners run first (torch-lr-finder's
``range_test``, fastai's ``lr_find``, Lightning's ``Tuner.lr_find``), written here from their
documented behaviour on this project's engine.

One run per seed whose rate rises exponentially from ``lo`` at step 0 to ``hi`` at the last step
(a cell on the ``exp-ramp:hi`` schedule, :meth:`~amutheory.train.cell.Cell.rate_at`); a run stops
where the project's divergence rule fires (:func:`~amutheory.train.run.divergence`: a non-finite
loss, or one above ten times the first).  From each run's per-step training loss, paired with the
rate of that step (the loss of a step is the minibatch loss before that step's update, the pairing
the three tools record), smoothed by a debiased exponential moving average (constant
:data:`SMOOTHING`, fastai's: ``a_t = b a_{t-1} + (1 - b) loss_t``, smoothed ``a_t / (1 - b^(t+1))``),
three suggestions:

* ``steepest``: the rate where the smoothed loss falls fastest in ``ln(rate)`` (the most negative
  ``d loss / d ln rate``; none where it never falls);
* ``valley``: fastai's valley idea: the longest stretch of consecutive points where the smoothed
  loss decreases, and the point :data:`VALLEY_AT` (2/3) of the way down it (fastai takes the
  longest decreasing subsequence of the loss and a point inside it; a contiguous stretch of the
  smoothed loss is the same idea on a curve without noise);
* ``min/10``: the rate at the smoothed loss minimum, divided by 10.

``steepest`` and ``min/10`` leave out the first tenth of the planned points and the last
:data:`SKIP_END` points (where the average is still warming up and where the loss shoots up), as
fastai's suggestions and torch-lr-finder's plot do; where that leaves fewer than 3 points, all are
used.  A run stopped by the divergence rule keeps its last, diverging step where its loss is finite
(it lifts only the smoothed tail, which the trimming leaves out).  Per suggestion: each seed's rate
(``None`` where the run gives none) and the geometric mean of those given.

The curve: a run of at most :data:`~amutheory.train.run.CURVE_POINTS` (200) steps keeps every step,
so the suggestions read every step.  A longer ramp's record keeps about 200 evenly spaced steps
(plus the horizon marks of :data:`~amutheory.train.run.HORIZONS`, which are dropped here so the
points stay evenly spaced in ``ln(rate)``): the suggestions then read those ~200 points, a rate
resolution of ``ln(hi/lo) / 199`` instead of ``ln(hi/lo) / (steps - 1)``, and the moving average
runs over points, not steps (its window, ~1/(1-b) points, covers more steps).
"""

from __future__ import annotations

import math

import numpy as np

from amutheory.spec import check_int, check_number
from amutheory.train.cell import Cell
from amutheory.train.run import CURVE_POINTS
from amutheory.tuning.cost import total
from amutheory.tuning.runner import ensure

#: the moving average's constant b (fastai's ``beta``)
SMOOTHING = 0.98
#: the valley suggestion's point: this fraction of the way down the longest decreasing stretch
VALLEY_AT = 2 / 3
#: steepest and min/10 leave out this fraction of the planned points at the start ...
SKIP_START = 0.1
#: ... and this many points at the end
SKIP_END = 5
SUGGESTIONS = ("steepest", "valley", "min/10")


def ramp_cell(template: Cell, depth: int, width: int, lo: float, hi: float, seed: int, steps: int) -> Cell:
    """The range test's run of ``seed``: ``template`` at ``depth`` x ``width``, ``steps`` steps whose
    rate rises exponentially from ``lo`` to ``hi``."""
    return template.with_(spec=template.spec.with_(depth=depth, width=width), lr=float(lo), seed=seed,
                          steps=steps, schedule=f"exp-ramp:{float(hi)!r}")


def smooth(losses, beta: float = SMOOTHING) -> np.ndarray:
    """The debiased exponential moving average of ``losses`` (its first value is ``losses[0]``)."""
    out, avg = np.empty(len(losses)), 0.0
    for t, v in enumerate(losses):
        avg = beta * avg + (1 - beta) * v
        out[t] = avg / (1 - beta ** (t + 1))
    return out


def ramp_points(record: dict) -> tuple[np.ndarray, np.ndarray]:
    """``(rates, losses)`` of a range-test record: each kept step's rate and loss, the non-finite
    losses (a diverging last step) left out; for a run longer than ``CURVE_POINTS`` steps only the
    evenly spaced kept steps."""
    cell = Cell.from_dict(record["cell"])
    curve = record["curve"]
    ran = int(record["backward_passes"])
    even = set(np.linspace(0, ran - 1, min(ran, CURVE_POINTS)).round().astype(int).tolist())
    pts = [(cell.rate_at(s), v) for s, v in zip(curve["step"], curve["loss"]) if v is not None and s in even]
    if not pts:
        return np.empty(0), np.empty(0)
    rates, losses = map(np.asarray, zip(*pts))
    return rates.astype(float), losses.astype(float)


def _trimmed(n: int, planned: int) -> slice:
    start, stop = int(min(planned, CURVE_POINTS) * SKIP_START), n - SKIP_END
    return slice(start, stop) if stop - start >= 3 else slice(0, n)


def steepest(rates: np.ndarray, smoothed: np.ndarray) -> float | None:
    """The rate where ``smoothed`` falls fastest in ``ln(rate)`` (``None``: fewer than 3 points, or
    it never falls)."""
    if len(rates) < 3:
        return None
    slope = np.gradient(smoothed, np.log(rates))
    i = int(np.argmin(slope))
    return float(rates[i]) if slope[i] < 0 else None


def valley(rates: np.ndarray, smoothed: np.ndarray) -> float | None:
    """The rate :data:`VALLEY_AT` of the way down the longest stretch of consecutive points where
    ``smoothed`` decreases (the first such stretch on a tie; ``None`` if it never decreases)."""
    best, start = (0, 0), 0
    for i in range(1, len(smoothed) + 1):
        if i == len(smoothed) or not smoothed[i] < smoothed[i - 1]:
            if i - 1 - start > best[1] - best[0]:
                best = (start, i - 1)
            start = i
    a, b = best
    if b == a:
        return None
    return float(rates[a + round(VALLEY_AT * (b - a))])


def min_over_10(rates: np.ndarray, smoothed: np.ndarray) -> float | None:
    """The rate at the minimum of ``smoothed``, divided by 10 (``None`` without points)."""
    if len(rates) == 0:
        return None
    return float(rates[int(np.argmin(smoothed))]) / 10


def suggest(record: dict, planned: int) -> dict:
    """``{suggestion: rate or None}`` of one range-test record (a ramp of ``planned`` steps)."""
    rates, losses = ramp_points(record)
    smoothed = smooth(losses)
    cut = _trimmed(len(rates), planned)
    return {"steepest": steepest(rates[cut], smoothed[cut]), "valley": valley(rates, smoothed),
            "min/10": min_over_10(rates[cut], smoothed[cut])}


def geo_mean(values) -> float | None:
    """The geometric mean of the values that are not ``None`` (``None`` if there are none)."""
    vals = [v for v in values if v is not None]
    return float(math.exp(np.mean(np.log(vals)))) if vals else None


def check_ramp(lo, hi, steps) -> tuple[float, float, int]:
    lo = check_number("lo", lo, positive=True)
    hi = check_number("hi", hi, positive=True)
    if not hi > lo:
        raise ValueError(f"hi must be above lo, got lo = {lo:g}, hi = {hi:g}")
    return lo, hi, check_int("steps", steps, 3)


def check_seeds(seeds) -> list[int]:
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"seeds must be a list of integers, got {seeds!r}")
    seeds = [check_int("seeds", s, 0) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be a non-empty list of distinct integers, got {seeds}")
    return seeds


def range_test(template: Cell, depth: int, width: int, lo: float, hi: float, seeds, steps: int = 100, *,
               out, table: dict, run_opts: dict) -> dict:
    """The LR range test of ``template`` at ``depth`` x ``width``: one ``lo -> hi`` ramp of ``steps``
    steps per seed (trained where ``table`` lacks it, stored in ``out``); the JSON-ready result
    (``method``, ``suggestions`` ``{name: {"lr": geometric mean, "per_seed": [...]}}``, ``trials``,
    ``cost``)."""
    if not isinstance(template, Cell):
        raise TypeError(f"template must be a Cell, got {type(template).__name__}")
    lo, hi, steps = check_ramp(lo, hi, steps)
    seeds = check_seeds(seeds)
    cells = [ramp_cell(template, depth, width, lo, hi, s, steps) for s in seeds]
    records = ensure(cells, out, table, run_opts)
    per_seed = [suggest(r, steps) for r in records]
    return {
        "method": "range_test", "depth": depth, "width": width, "lo": lo, "hi": hi, "steps": steps,
        "smoothing": SMOOTHING, "skip": {"start_fraction": SKIP_START, "end_points": SKIP_END},
        "suggestions": {name: {"lr": geo_mean(p[name] for p in per_seed), "per_seed": [p[name] for p in per_seed]}
                        for name in SUGGESTIONS},
        "trials": [{"key": r["key"], "lr": c.lr, "seed": c.seed, "schedule": c.schedule,
                    "steps_run": int(r["backward_passes"]), "diverged": r["diverged"]}
                   for c, r in zip(cells, records)],
        "cost": total(records, threads=run_opts.get("threads", 1)).to_dict(),
    }
