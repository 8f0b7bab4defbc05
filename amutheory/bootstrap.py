"""The seed bootstrap: resampled seed indices and their percentile intervals.

Every seed-bootstrap interval of the package (:mod:`amutheory.stats`, the campaign, the training
protocol, the learning-rate search, the calibration's refits) is built from the two pieces here,
so that each analysis draws its resamples the same way:

* :func:`seed_draws` -- indices ``i*[b, k]`` drawn uniformly with replacement from ``0 .. S-1``
  (``S`` seeds), one row per replicate ``b``, by numpy's ``Generator.integers(0, S, size)``.
  One call is one block of the generator's stream: a caller that draws several blocks (one per
  array, per depth or per slice of replicates) passes the same ``Generator`` to each call, in
  a fixed order, so the result stays a deterministic function of the inputs and the seed.
* :func:`resample` -- the same rows applied to several arrays: *paired by seed index*.  Seed ``i``
  of every array (every depth, both paddings, every learning rate) moves together, which keeps
  whatever correlation the shared seed induces (the same weights, the same inputs); arrays of
  independent seeds are resampled with a draw each.
* :func:`percentile_interval` -- ``[q_{alpha/2}, q_{1 - alpha/2}]`` of the replicates,
  ``alpha = 1 - level`` (the percentile method).

And the delete-one jackknife, for statistics that are smooth functions of seed means (the training
protocol's registered method from 2026-11-27b on):

* :func:`leave_one_out` -- the ``n`` means of ``n - 1`` seeds (row ``j`` leaves seed ``j`` out);
* :func:`jackknife_interval` -- ``estimate +- t_{n-1} se``, ``se^2 = (n-1)/n sum (r_j - mean r)^2``;
* :func:`combined_jackknife_interval` -- the same with the variances of independent seed sets added
  (training seeds and the probe's seeds), ``t`` at the smallest set's ``n - 1`` degrees of freedom.

Pure numpy (no torch).
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["generator", "seed_draws", "resample", "percentile_interval", "leave_one_out", "jackknife_interval",
           "combined_jackknife_interval"]


def generator(rng) -> np.random.Generator:
    """``numpy.random.default_rng(rng)``: a ``Generator`` is returned as it is (drawn from in
    place), a seed gives a fresh one."""
    return np.random.default_rng(rng)


def _count(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def seed_draws(n_seeds: int, n_boot: int | None = None, rng=0, columns: int | None = None) -> np.ndarray:
    """Seed indices drawn with replacement: ``rng.integers(0, n_seeds, size)``.

    ``size`` is ``(n_boot, n_seeds)`` -- one resample of the seeds per row --, ``(n_seeds,)`` for
    ``n_boot=None`` (one resample), and ``(n_boot, n_seeds, columns)`` with ``columns`` given
    (every column, e.g. every depth, resampled on its own).  ``rng``: a ``numpy.random.Generator``
    (drawn from in place: successive calls continue its stream) or a seed of a fresh one."""
    n_seeds = _count("n_seeds", n_seeds, 1)
    size: tuple = (n_seeds,)
    if n_boot is not None:
        size = (_count("n_boot", n_boot, 0),) + size
    if columns is not None:
        if n_boot is None:
            raise ValueError("columns needs n_boot")
        size = size + (_count("columns", columns, 1),)
    return generator(rng).integers(0, n_seeds, size)


def resample(draws: np.ndarray, *arrays, axis: int = 0):
    """Each array with its seed axis ``axis`` indexed by the same ``draws`` (paired by seed
    index): ``np.take(a, draws, axis)``, whose shape puts ``draws.shape`` in place of that axis.
    One array gives one result, several give a tuple."""
    out = tuple(np.take(np.asarray(a), draws, axis=axis) for a in arrays)
    return out[0] if len(out) == 1 else out


def percentile_interval(replicates, level: float = 0.95, axis: int | None = 0) -> np.ndarray:
    """``[lo, hi]`` along ``axis``: the empirical quantiles ``alpha/2`` and ``1 - alpha/2``
    (``alpha = 1 - level``, numpy's default linear interpolation) of the bootstrap replicates;
    shape ``[2, ...]`` (the other axes kept)."""
    alpha = 1.0 - level
    return np.quantile(replicates, [alpha / 2.0, 1.0 - alpha / 2.0], axis=axis)


def leave_one_out(values: np.ndarray, axis: int = 0) -> np.ndarray:
    """The ``n`` leave-one-out means along ``axis`` (``n`` seeds): row ``j`` is the mean without seed
    ``j``; the seed axis is replaced by the replicate axis, put first."""
    v = np.moveaxis(np.asarray(values, float), axis, 0)
    n = v.shape[0]
    if n < 2:
        raise ValueError(f"values: leave-one-out needs at least two seeds, got {n}")
    with np.errstate(invalid="ignore"):  # an infinite seed (a diverged run) gives nan replicates, not a warning
        return (v.sum(0)[None] - v) / (n - 1)


def _jackknife_se(replicates) -> tuple[float, int] | None:
    r = np.asarray(replicates, float)
    r = r[np.isfinite(r)]
    n = r.size
    if n < 3:
        return None
    return float(np.sqrt((n - 1) / n * ((r - r.mean()) ** 2).sum())), n


def jackknife_interval(estimate: float, replicates, level: float = 0.95) -> list[float] | None:
    """``estimate +- t_{n-1} * se`` from the ``n`` leave-one-out ``replicates`` (non-finite ones left
    out); ``None`` with fewer than three finite replicates or a non-finite estimate."""
    return combined_jackknife_interval(estimate, [replicates], level)


def combined_jackknife_interval(estimate: float, replicate_sets, level: float = 0.95) -> list[float] | None:
    """``estimate +- t * sqrt(sum se_i^2)`` over independent seed sets (one array of leave-one-out
    replicates each, the others held at their estimate), ``t`` the ``1 - (1 - level)/2`` quantile of
    Student's t with the smallest set's ``n - 1`` degrees of freedom; ``None`` if a set has fewer than
    three finite replicates or the estimate is not finite."""
    from scipy import stats

    if not np.isfinite(estimate):
        return None
    got = [_jackknife_se(r) for r in replicate_sets]
    if not got or any(g is None for g in got):
        return None
    se = float(np.sqrt(sum(g[0] ** 2 for g in got)))
    t = float(stats.t.ppf(1 - (1 - level) / 2, min(g[1] for g in got) - 1))
    return [float(estimate - t * se), float(estimate + t * se)]
