"""Calibration recovers known constants from data the derived law generates."""

import numpy as np
import pytest

from amutheory.calibrate import calibrate, layer_prediction

TRUE = dict(a_=3.0, b_=5.0, e_=0.2, eps_=0.01, gamma_=8.0)
WIDTH = 128


def synthetic_profiles(depths, seeds, noise, rng):
    """Per-seed s_l = law * lognormal noise with mean 1 (so the seed mean is unbiased)."""
    out = {}
    for d in depths:
        s = layer_prediction(np.arange(1, d + 1), width=WIDTH, **TRUE)
        z = rng.normal(size=(seeds, d))
        out[d] = s * np.exp(noise * z - noise**2 / 2)
    return out


@pytest.mark.parametrize("target", ["s_bar", "layers"])
def test_exact_data_recover_constants(target):
    profiles = synthetic_profiles([2, 4, 8, 16, 24], 3, 0.0, np.random.default_rng(0))
    cal = calibrate(profiles, TRUE["eps_"], WIDTH, "mean", target=target, n_boot=0)
    got = cal.values()
    for k in ("a", "b", "e", "gamma"):
        assert got[k] == pytest.approx(TRUE[k + "_"], rel=1e-4), k
    assert all(c.source == "calibrated" for k, c in cal.constants.items() if k != "epsilon")
    assert cal.constants["epsilon"].source == "exact"


def test_noisy_data_recover_within_bootstrap_error():
    """64 seeds, 30 % lognormal noise: each constant within 4 bootstrap standard errors."""
    rng = np.random.default_rng(1)
    profiles = synthetic_profiles([2, 3, 4, 6, 8, 12, 16], 64, 0.3, rng)
    cal = calibrate(profiles, TRUE["eps_"], WIDTH, "mean", n_boot=60, seed=2)
    for k in ("a", "b", "gamma"):
        c = cal.constants[k]
        assert np.isfinite(c.error) and c.error > 0
        assert abs(c.value - TRUE[k + "_"]) < 4 * c.error, (k, c.value, c.error)


def test_too_few_depths_is_a_clear_error():
    profiles = synthetic_profiles([2, 4, 8], 3, 0.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="at least 4 distinct depths"):
        calibrate(profiles, 0.01, WIDTH, "mean")


@pytest.mark.parametrize("bad, match", [({}, "non-empty"), ({3: np.ones((4, 2))}, "shape")])
def test_bad_profiles(bad, match):
    with pytest.raises(ValueError, match=match):
        calibrate(bad, 0.01, WIDTH)
