"""Seed-bootstrap helpers of the analysis: per-seed statistics, percentile intervals and the
paired zero/circular ratio bootstrap (:func:`ratio_bootstrap`), on the draws of
:mod:`amutheory.bootstrap`."""

from __future__ import annotations

import numpy as np

from amutheory.bootstrap import percentile_interval, resample, seed_draws
from amutheory.campaign.common import LEVEL, N_BOOT


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
    iz = seed_draws(z.shape[0], n_boot, rng)
    ic = iz if paired else seed_draws(c.shape[0], n_boot, rng)
    ratio = _seed_stat(z, statistic, 0) / _seed_stat(c, statistic, 0)
    return ratio, _seed_stat(resample(iz, z), statistic, 1) / _seed_stat(resample(ic, c), statistic, 1)


def _quantile_ci(reps: np.ndarray, level: float = LEVEL) -> np.ndarray:
    """Percentile interval along the first axis: ``[2, ...]``."""
    return percentile_interval(reps, level, axis=0)
