"""The optimum of a bracket of rates: a quadratic in ``ln(rate)`` through its points, and its seed CI.

The training score (mean loss over the run) near its best rate is smooth in ``x = ln(rate)``; a
least-squares parabola through the seed-mean scores of the bracket's finite points around the best
one (up to :data:`WINDOW` on each side) gives the optimum ``x* = -b / 2a`` (:func:`vertex`).  Unlike
the sweep's three-point vertex, the fit uses every point of the window, and the optimum is not
clipped to the best rate's neighbours: a vertex outside the window's rates, or a parabola that
does not open upward, is flagged and the best rate is kept instead.

Its uncertainty (:func:`vertex_interval`) comes from the seeds: each replicate resamples, at every
rate, that rate's own seed scores with replacement (rates may have different seeds: a search adds
seeds only where needed), and refits; the 2.5 and 97.5 percentiles of the replicates' ``x*`` are the
95% CI.  Replicates whose best point moves to the window's edge keep that point (so an optimum that
could sit elsewhere widens the CI rather than vanishing from it).
"""

from __future__ import annotations

import math

import numpy as np

from amutheory.bootstrap import generator, percentile_interval

#: points on each side of the best rate that enter the fit
WINDOW = 2
#: bootstrap replicates of the vertex, and their fixed seed
BOOTSTRAP = 1000
BOOTSTRAP_SEED = 20_261_127


def _window(x: np.ndarray, y: np.ndarray) -> tuple[int, np.ndarray]:
    """``(best index, indices of the finite points within WINDOW of it)``."""
    finite = np.isfinite(y)
    i = int(np.argmin(np.where(finite, y, np.inf)))
    idx = np.arange(max(0, i - WINDOW), min(len(x), i + WINDOW + 1))
    return i, idx[finite[idx]]


def vertex(x, y) -> tuple[float, list[str]]:
    """``(x*, flags)`` from seed-mean scores ``y`` at sorted ``x = ln(rate)`` (``+inf``: diverged).

    Flags: ``all-diverged`` (no finite point; ``x*`` nan), ``edge`` (the best point is the lowest or
    highest rate tried, or next to a diverged one on its only side), ``few-points`` (under three finite
    points in the window), ``no-curvature`` (the parabola does not open upward) or ``outside`` (its
    vertex lies beyond the window's rates); with any of them ``x*`` is the best point's ``x``."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if not np.isfinite(y).any():
        return math.nan, ["all-diverged"]
    i, idx = _window(x, y)
    flags = []
    if i == 0 or i == len(x) - 1:
        flags.append("edge")
    if len(idx) < 3:
        return float(x[i]), flags + ["few-points"]
    xs = x[idx] - x[i]
    a, b, _ = np.polyfit(xs, y[idx], 2)
    if not a > 0:
        return float(x[i]), flags + ["no-curvature"]
    v = -b / (2 * a)
    if not xs[0] <= v <= xs[-1]:
        return float(x[i]), flags + ["outside"]
    return float(x[i] + v), flags


def vertex_interval(x, seed_scores: list, level: float = 0.95) -> list[float] | None:
    """The bootstrap CI of :func:`vertex`'s ``x*`` (module docstring); ``seed_scores[j]`` holds rate
    ``j``'s per-seed scores (``inf`` diverged).  A rate with a single seed is held at its score (it has
    no spread to resample); ``None`` when no rate has two seeds."""
    x = np.asarray(x, float)
    if all(len(s) < 2 for s in seed_scores):
        return None
    rng = generator(BOOTSTRAP_SEED)
    means = np.empty((BOOTSTRAP, len(x)))
    for j, s in enumerate(seed_scores):  # every rate resampled on its own seeds, in a fixed order
        s = np.asarray(s, float)
        means[:, j] = s[rng.integers(0, len(s), (BOOTSTRAP, len(s)))].mean(1)
    reps = np.array([vertex(x, m)[0] for m in means])
    reps = reps[np.isfinite(reps)]
    if len(reps) < BOOTSTRAP // 2:
        return None
    lo, hi = percentile_interval(reps, level)
    return [float(lo), float(hi)]


def fitted_loss(x, y, at: float) -> float | None:
    """The window's parabola at ``at`` (``None`` without a fit that opens upward)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if not np.isfinite(y).any():
        return None
    i, idx = _window(x, y)
    if len(idx) < 3:
        return None
    a, b, c = np.polyfit(x[idx] - x[i], y[idx], 2)
    return float(a * (at - x[i]) ** 2 + b * (at - x[i]) + c) if a > 0 else None
