"""The registered interval on the smooth optimum covers: synthetic sweeps with a known optimum
(:mod:`amutheory.protocol.coverage`), analysed as the protocol analyses real ones (issue 48).

200 simulated studies of 4 depths at 6 seeds: 800 per-depth CIs and 200 exponent CIs.  The bound
0.93 is the issue's; at a true coverage of 0.95 the binomial standard error of 200 replicates is
0.015, so a method at its nominal level passes with probability about 0.93, and a method at 0.90
(the bootstrap-on-argmin's level in the pilot) fails with probability about 0.98."""

import math

import numpy as np
import pytest

from amutheory.protocol.coverage import NOISY, REALISTIC, simulate
from amutheory.train.search import LrSearch


def test_jackknife_on_the_smooth_optimum_covers():
    got = simulate(REALISTIC, reps=200)
    assert got["optimum_cis"] == 800 and got["interval"] == "jackknife"
    assert got["optimum_coverage"] >= 0.93, got
    assert got["exponent_coverage"] >= 0.93, got


def test_noisier_seeds_are_reported_not_hidden():
    """Twice the recorded seed spread: the method undercovers, as the findings page says (72.5% of 800
    CIs there).  At 40 studies (160 CIs) the binomial standard error at 0.725 is 0.035, so the bound
    0.9 sits five of them above: the limit the page quotes is real, not an artefact of its seeds."""
    got = simulate(NOISY, reps=40)
    assert 0 <= got["optimum_coverage"] < 0.9 and math.isfinite(got["median_optimum_ci_width_ln"])


def _sweep(rng, seeds=6):
    x = np.sort(np.r_[np.linspace(math.log(0.003), math.log(3.0), 9), -1.4, -0.9])
    scores = 0.4 + 0.15 * (x[:, None] + 1.1 - rng.normal(0, 0.35, seeds)) ** 2 + rng.normal(0, 0.01, (11, seeds))
    return x, scores


def test_the_smooth_optimum_moves_smoothly_with_the_scores():
    """A small change of one seed's scores moves the smooth optimum by a small amount (a smooth
    statistic), while the jackknife replicates are the optimum of the other seeds' mean."""
    rng = np.random.default_rng(3)
    x, scores = _sweep(rng)
    step = (math.log(3.0) - math.log(0.003)) / 8
    a = LrSearch(np.exp(x), list(range(6)), scores, window=2 * step, interval="jackknife")
    for eps in (1e-3, 1e-4):
        bumped = scores.copy()
        bumped[:, 2] += eps * rng.normal(size=len(x))
        b = LrSearch(np.exp(x), list(range(6)), bumped, window=2 * step, interval="jackknife")
        assert abs(math.log(b.eta_star_train / a.eta_star_train)) < 50 * eps
    alone = LrSearch(np.exp(x), list(range(5)), np.delete(scores, 1, axis=1), window=2 * step)
    # the replicate keeps the full sample's window, so it equals the smaller sample's fit on that window
    assert a.window_rates == alone.window_rates
    assert a.jack[1] == pytest.approx(alone.eta_star_train, rel=1e-9)
    lo, hi = a.eta_star_train_ci
    assert lo < a.eta_star_train < hi


def test_smooth_optimum_flags_and_refusals():
    rng = np.random.default_rng(4)
    x, scores = _sweep(rng)
    scores[x > -0.9] = np.inf   # diverged above the optimum's neighbour
    s = LrSearch(np.exp(x), list(range(6)), scores, window=1.7, interval="jackknife")
    assert "next-to-divergence" in s.flags or "edge" in s.flags
    with pytest.raises(ValueError, match="window"):
        LrSearch(np.exp(x), list(range(6)), scores, window=-1.0)
    dead = LrSearch(np.exp(x), list(range(6)), np.full_like(scores, np.inf), window=1.7, interval="jackknife")
    assert dead.flags == ["all-diverged"] and dead.eta_star_train_ci is None
