"""The optimum of a bracket of rates: a quadratic in ``ln(rate)`` through its points, and its seed CI.

The training score (mean loss over the run) near its best rate is smooth in ``x = ln(rate)``; a
least-squares parabola through the seed-mean scores of the bracket's finite points around the best
one (up to :data:`WINDOW` on each side) gives the optimum ``x* = -b / 2a`` (:func:`vertex`).

The optimum never leaves the **half-steps** around the best rate tried: the interval from the midpoint
(in ``x``) between the best rate and its lower tried neighbour to the midpoint between it and its upper
one (at the lowest or highest rate tried, that rate itself: nothing is extrapolated), so ``x*`` is
always closer to the best rate tried than to any other rate tried, diverged ones included.  Where the
window's parabola puts its vertex beyond them and both neighbours are finite, the rise at the points
around the best disagrees with the curve the window draws: typically a **cliff**, a neighbour far above
the rest (runs close to instability), whose weight pulls the least-squares parabola away.  The fit then
falls back to the parabola through the three points best +-1 alone (flag ``cliff``): with the middle
point lowest its vertex always lies within the half-steps (its slope at each half-step is the slope of
the chord on that side, so it changes sign between them), whatever the spacing.  A diverged neighbour
is a cliff too: it is left out of the fit and flagged ``cliff``.  Without a finite neighbour on each
side (an edge, a diverged neighbour), a vertex beyond the half-steps is flagged ``outside`` and the best
rate is kept, as is a parabola that does not open upward (``no-curvature``).  On a smooth loss sampled
on any grid the window's vertex is inside (the best rate tried is the one nearest the vertex), so the
fit is exact there.

Its uncertainty (:func:`vertex_interval`) comes from the seeds: each replicate resamples, at every
rate, that rate's own seed scores with replacement (rates may have different seeds: a search adds
seeds only where needed), and refits through the same :func:`vertex` (so every replicate obeys the
half-steps and the cliff fallback of its own best rate); the 2.5 and 97.5 percentiles of the
replicates' ``x*`` are the 95% CI.  Replicates whose best point moves to the window's edge keep that
point (so an optimum that could sit elsewhere widens the CI rather than vanishing from it).
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


def half_steps(x, i: int) -> tuple[float, float]:
    """The half-steps around ``x[i]`` (sorted ``x``): the midpoints to its two tried neighbours, or
    ``x[i]`` itself on a side without one."""
    x = np.asarray(x, float)
    lo = (x[i - 1] + x[i]) / 2 if i > 0 else x[i]
    hi = (x[i] + x[i + 1]) / 2 if i < len(x) - 1 else x[i]
    return float(lo), float(hi)


def _fit(x: np.ndarray, y: np.ndarray):
    """``(x*, flags, parabola)``: :func:`vertex`'s answer and the parabola it read (coefficients in
    ``x - x[best]``, highest power first; ``None`` without one that opens upward)."""
    if not np.isfinite(y).any():
        return math.nan, ["all-diverged"], None, None
    i, idx = _window(x, y)
    flags = []
    if i == 0 or i == len(x) - 1:
        flags.append("edge")
    nb = [j for j in (i - 1, i + 1) if 0 <= j < len(x)]
    if any(not np.isfinite(y[j]) for j in nb):
        flags.append("cliff")  # a diverged neighbour: out of the fit, and said
    if len(idx) < 3:
        return float(x[i]), flags + ["few-points"], None, i
    coef = np.polyfit(x[idx] - x[i], y[idx], 2)
    if not coef[0] > 0:
        return float(x[i]), flags + ["no-curvature"], None, i
    lo, hi = half_steps(x, i)
    v = float(x[i] - coef[1] / (2 * coef[0]))
    three = len(nb) == 2 and all(np.isfinite(y[j]) for j in nb)
    if lo <= v <= hi:
        return v, flags, coef, i
    if three:
        if len(idx) == 3:  # the window is best +-1 already: beyond the half-steps only by rounding
            return min(max(v, lo), hi), flags, coef, i
        coef3 = np.polyfit(x[i - 1:i + 2] - x[i], y[i - 1:i + 2], 2)
        if not coef3[0] > 0:  # three equal scores: nothing to choose between them
            return float(x[i]), flags + ["cliff", "no-curvature"], None, i
        v3 = float(x[i] - coef3[1] / (2 * coef3[0]))
        return min(max(v3, lo), hi), flags + ["cliff"], coef3, i
    return float(x[i]), flags + ["outside"], coef, i


def vertex(x, y) -> tuple[float, list[str]]:
    """``(x*, flags)`` from seed-mean scores ``y`` at sorted ``x = ln(rate)`` (``+inf``: diverged).

    ``x*`` always lies within the half-steps around the best point (:func:`half_steps`; module
    docstring).  Flags: ``all-diverged`` (no finite point; ``x*`` nan), ``edge`` (the best point is the
    lowest or highest rate tried), ``cliff`` (a neighbour of the best point diverged and is left out of
    the fit, or the window's parabola put its vertex beyond the half-steps and the parabola through the
    best point and its two neighbours alone gives ``x*``), ``few-points`` (under three finite points
    in the window), ``no-curvature`` (the parabola does not open upward) or ``outside`` (its vertex lies
    beyond the half-steps and the best point lacks a finite neighbour on a side); with
    ``few-points``, ``no-curvature`` or ``outside`` ``x*`` is the best point's ``x``."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    v, flags, _, _ = _fit(x, y)
    return v, flags


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
    """The parabola :func:`vertex` read (the window's, or best +-1's under ``cliff``) at ``at``
    (``None`` without a fit that opens upward)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    _, _, coef, i = _fit(x, y)
    if coef is None:
        return None
    a, b, c = coef
    return float(a * (at - x[i]) ** 2 + b * (at - x[i]) + c)
