"""Tests of amutheory.bootstrap: the seed draws are numpy's reference draws (so the package's
registered intervals keep their values), pairing by seed index, the percentile interval, and its
agreement with scipy.stats.bootstrap's percentile method."""

import numpy as np
import pytest
from scipy import stats as sst
from scipy.special import ndtri

from amutheory.bootstrap import percentile_interval, resample, seed_draws
from amutheory.campaign.bootstrap import ratio_bootstrap
from amutheory.stats import arith_mean_ci, bootstrap_ci, fit_loglog_slope


@pytest.mark.parametrize("n_seeds, n_boot, columns", [(7, 50, None), (3, None, None), (5, 20, 4), (1, 10, None)])
def test_seed_draws_are_numpys_reference_draws(n_seeds, n_boot, columns):
    size = tuple(s for s in (n_boot, n_seeds, columns) if s is not None)
    expected = np.random.default_rng(11).integers(0, n_seeds, size)
    assert np.array_equal(seed_draws(n_seeds, n_boot, 11, columns=columns), expected)
    assert seed_draws(n_seeds, n_boot, 11, columns=columns).shape == size


def test_seed_draws_continue_a_generators_stream():
    # two calls on one Generator are the Generator's two successive draws (the order callers rely on)
    ref = np.random.default_rng(3)
    a, b = ref.integers(0, 6, (40, 6)), ref.integers(0, 9, (40, 9))
    rng = np.random.default_rng(3)
    assert np.array_equal(seed_draws(6, 40, rng), a)
    assert np.array_equal(seed_draws(9, 40, rng), b)


def test_bootstrap_ci_is_the_percentile_interval_of_the_reference_draws():
    # an explicit numpy reference computation of the package's interval, draw for draw
    x = np.random.default_rng(2).lognormal(size=25)
    idx = np.random.default_rng(5).integers(0, x.size, (400, x.size))
    alpha = 1 - 0.9
    expected = np.quantile(x[idx].mean(axis=1), [alpha / 2, 1 - alpha / 2])
    assert bootstrap_ci(x, np.mean, level=0.9, n_boot=400, seed=5) == tuple(expected)


def test_resample_pairs_arrays_by_seed_index():
    draws = seed_draws(4, 30, 0)
    a = np.arange(4.0)
    b = np.arange(4.0)[:, None] * np.ones((4, 3))  # [seeds, depths]
    ra, rb = resample(draws, a, b)
    assert ra.shape == (30, 4) and rb.shape == (30, 4, 3)
    assert np.array_equal(rb[..., 2], ra)          # the same seed at every depth and in both arrays
    scores = b.T                                    # [depths, seeds]: the seed axis is 1
    assert np.array_equal(resample(draws, scores, axis=1), np.transpose(rb, (2, 0, 1)))


def test_percentile_interval_along_an_axis():
    reps = np.random.default_rng(0).normal(size=(1000, 3))
    got = percentile_interval(reps, 0.8)
    assert got.shape == (2, 3)
    alpha = 1 - 0.8
    assert np.array_equal(got, np.quantile(reps, [alpha / 2, 1 - alpha / 2], axis=0))
    assert np.allclose(got, np.quantile(reps, [0.1, 0.9], axis=0), rtol=0, atol=1e-9)
    assert np.all(got[0] < 0) and np.all(got[1] > 0)


@pytest.mark.parametrize("kwargs, exc, name", [
    ({"n_seeds": 0, "n_boot": 5}, ValueError, "n_seeds"),
    ({"n_seeds": 2.0, "n_boot": 5}, TypeError, "n_seeds"),
    ({"n_seeds": 3, "n_boot": -1}, ValueError, "n_boot"),
    ({"n_seeds": 3, "n_boot": True}, TypeError, "n_boot"),
    ({"n_seeds": 3, "n_boot": 5, "columns": 0}, ValueError, "columns"),
    ({"n_seeds": 3, "columns": 2}, ValueError, "columns"),
])
def test_seed_draws_bad_input(kwargs, exc, name):
    with pytest.raises(exc, match=name):
        seed_draws(**kwargs)


# ------------------------------------------------------------------ agreement with scipy

#: replicates on each side of the comparison
B = 20_000


def _endpoint_tolerance(boot_sd: float, level: float) -> float:
    """Four Monte Carlo standard errors of the difference of two independent percentile endpoints.

    The ``p``-quantile of ``B`` replicates has standard error ``sqrt(p (1 - p) / B) / f(q_p)``
    (``f`` the replicates' density there); the bootstrap distribution of a mean of 30 values is
    close to normal with sd ``boot_sd``, so ``f(q_p) = phi(z_p) / boot_sd``.  The two intervals
    use independent draws: the difference has ``sqrt(2)`` times that error.  Four of them make a
    chance failure improbable (~1e-4 per endpoint) while a wrong level (0.90 for 0.95 moves an
    endpoint by ~0.3 boot_sd, about 11 such errors) still fails."""
    p = (1 - level) / 2
    z = ndtri(p)
    density = np.exp(-z * z / 2) / np.sqrt(2 * np.pi) / boot_sd
    return 4 * np.sqrt(2) * np.sqrt(p * (1 - p) / B) / density


def test_percentile_interval_agrees_with_scipy_bootstrap():
    x = np.random.default_rng(8).lognormal(0.0, 0.6, 30)
    _, lo, hi = arith_mean_ci(x, level=0.95, n_boot=B, seed=1)
    ref = sst.bootstrap((x,), np.mean, n_resamples=B, confidence_level=0.95, method="percentile",
                        rng=np.random.default_rng(2)).confidence_interval
    tol = _endpoint_tolerance(x.std() / np.sqrt(x.size), 0.95)
    assert abs(lo - ref.low) < tol and abs(hi - ref.high) < tol
    # and the check has teeth: the 90% interval lies outside that tolerance
    _, lo90, hi90 = arith_mean_ci(x, level=0.90, n_boot=B, seed=1)
    assert abs(lo90 - ref.low) > tol and abs(hi90 - ref.high) > tol


def test_paired_ratio_interval_agrees_with_scipy_paired_bootstrap():
    rs = np.random.default_rng(9)
    zero = rs.lognormal(0.0, 0.4, (30, 1))
    circular = zero * rs.lognormal(0.1, 0.1, (30, 1))  # strongly correlated with zero: pairing matters
    ratio, reps = ratio_bootstrap(zero, circular, "mean", n_boot=B, seed=3, paired=True)
    lo, hi = percentile_interval(reps[:, 0], 0.95)

    def stat(z, c, axis=-1):
        return z.mean(axis=axis) / c.mean(axis=axis)

    ref = sst.bootstrap((zero[:, 0], circular[:, 0]), stat, paired=True, vectorized=True, n_resamples=B,
                        confidence_level=0.95, method="percentile", rng=np.random.default_rng(4)).confidence_interval
    tol = _endpoint_tolerance(float(np.std(reps[:, 0])), 0.95)
    assert abs(lo - ref.low) < tol and abs(hi - ref.high) < tol
    # unpaired resampling of correlated sets over-states the spread, far beyond that tolerance
    ulo, uhi = percentile_interval(ratio_bootstrap(zero, circular, "mean", n_boot=B, seed=3, paired=False)[1][:, 0])
    assert uhi - ulo > (hi - lo) + 2 * tol


def test_slope_interval_pairs_depths_by_seed():
    # one seed's values share a factor across depths: resampling whole rows keeps it, so the slope's
    # interval is narrower than with every depth resampled on its own
    rs = np.random.default_rng(4)
    depths = np.array([2.0, 4, 8, 16])
    vals = rs.lognormal(0, 0.5, (12, 1)) * depths ** -1.0 * rs.lognormal(0, 0.02, (12, 4))
    paired = fit_loglog_slope(depths, vals, seed=0, resample="seeds")
    indep = fit_loglog_slope(depths, vals, seed=0, resample="independent")
    assert paired.ci[1] - paired.ci[0] < 0.5 * (indep.ci[1] - indep.ci[0])
