"""The registration of 2026-11-28 (issue 48): each seed's own smooth optimum, averaged in ln over seeds, so
that every per-point and exponent CI is the delete-one-seed jackknife of a mean (the t interval); its coverage
checked by simulation, its flags, and the preset as registered."""

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amutheory.bootstrap import jackknife_interval
from amutheory.protocol import PRESETS, fingerprint, run_protocol
from amutheory.protocol.coverage import AT_EDGE, NEAR_EDGE, NOISY, REALISTIC, simulate
from amutheory.protocol.presets import PROTOCOL_2026_11_27B, PROTOCOL_2026_11_28
from amutheory.train.search import LrSearch, seed_optimum

ROOT = Path(__file__).resolve().parent.parent
STEP = math.log(1000.0) / 8  # one step of the protocol's 9-rate grid over three decades


def test_the_registration_names_its_preset():
    text = (ROOT / "validate" / "plans" / "REGISTRATION_PROTOCOL_2026_11_28.md").read_text()
    assert f"**`{fingerprint(PROTOCOL_2026_11_28)}`**" in text, "the preset changed without its registration"
    p = PROTOCOL_2026_11_28
    assert PRESETS["protocol-2026-11-28"] is p is PRESETS["protocol"] and p.optimum == "per-seed"
    from amutheory.protocol.analysis import WINDOW_STEPS

    assert WINDOW_STEPS["per-seed"] == 1 and "within **one grid step**" in text  # the registered window
    assert (p.interval, p.margin, p.requires_learning) == ("jackknife", 0.25, True)
    assert [s.name for s in p.studies] == [s.name for s in PROTOCOL_2026_11_27B.studies if s.name != "bridge-w64"]
    assert fingerprint(PROTOCOL_2026_11_27B) == "7d1a17779f5bea8f"  # the earlier registration unchanged
    assert "--first-seed 20000" in text and "--first-seed 30000" in text


# ----------------------------------------------------------------------------- one seed's optimum
@settings(max_examples=40, deadline=None)
@given(st.floats(-2.0, 2.0), st.floats(0.05, 1.0), st.floats(-0.3, 0.3))
def test_a_seed_parabola_is_found_exactly(centre, a, offset):
    """On an exact parabola with the protocol's window, a seed's optimum is its vertex wherever that lies
    inside the window's rates."""
    x = np.arange(-4.0, 4.01, STEP) + offset
    y = 0.3 + a * (x - centre) ** 2
    v, flag = seed_optimum(x, y, STEP)
    assert flag is None and v == pytest.approx(centre, abs=1e-9)


def test_seed_flags():
    x = np.arange(0.0, 9.0)
    falling = 5.0 - x + 0.01 * x ** 2
    # still falling at its own divergence: held at the last finite rate, flagged
    y = falling.copy()
    y[6:] = np.inf
    assert seed_optimum(x, y, 2.0) == (5.0, "seed-at-divergence")
    assert seed_optimum(x, falling, 2.0) == (8.0, "seed-at-edge")  # the grid's end
    assert seed_optimum(x, y, 1.0) == (5.0, "seed-few-points")  # the window holds 4 and 5 only
    assert seed_optimum(x, np.where(x == 3, 0.0, 1.0) + 0 * x, 1.0)[1] is None  # a dip: an interior vertex
    assert math.isnan(seed_optimum(x, np.full(9, np.inf), 1.0)[0])
    y = np.full(9, np.inf)
    y[4] = 1.0
    assert seed_optimum(x, y, 1.0) == (4.0, "seed-few-points")


def test_the_point_is_the_mean_of_the_seeds_and_its_ci_the_t_interval():
    rng = np.random.default_rng(11)
    x = np.sort(np.r_[np.linspace(math.log(0.003), math.log(3.0), 9), -1.3, -0.8])
    u = rng.normal(0, 0.35, 6)
    scores = 0.4 + 0.15 * (x[:, None] + 1.1 - u) ** 2 + rng.normal(0, 0.01, (len(x), 6))
    scores[-1, 2] = np.inf  # one seed diverged at the top rate: the point keeps its estimate
    s = LrSearch(np.exp(x), list(range(6)), scores, window=STEP, interval="jackknife", per_seed=True)
    own = np.log(s.seed_optima)
    assert s.eta_star_train == pytest.approx(math.exp(own.mean()))
    lo, hi = s.eta_star_train_ci
    t = jackknife_interval(own.mean(), [np.delete(own, j).mean() for j in range(6)])
    assert (math.log(lo), math.log(hi)) == pytest.approx(tuple(t))
    # the jackknife of a mean is the t interval: mean +- t_5 sd / sqrt(n)
    from scipy import stats
    half = stats.t.ppf(0.975, 5) * own.std(ddof=1) / math.sqrt(6)
    assert math.log(hi) - own.mean() == pytest.approx(half, rel=1e-9)
    assert s.flags == [] and np.isfinite(s.loss_mean[:-1]).all() and not np.isfinite(s.loss_mean[-1])


def test_a_capped_score_keeps_each_seeds_own_divergence():
    """Where a diverged run is scored finite (the chance loss) the runs' own record of divergence still ends
    that seed's window."""
    x = np.arange(0.0, 7.0)
    scores = np.stack([5.0 - x + 0.01 * x ** 2] * 3, 1)
    dead = np.zeros_like(scores, bool)
    dead[5:, 0] = True
    scores[5:, 0] = math.log(10)
    s = LrSearch(np.exp(x), [0, 1, 2], scores, window=2.0, per_seed=True, diverged_runs=dead)
    assert s.seed_optima[0] == pytest.approx(math.exp(4.0))
    assert "seed-at-divergence: 1 of 3 seeds" in s.flags and s.diverged[5] == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="window"):
        LrSearch(np.exp(x), [0, 1, 2], scores, per_seed=True)


# ----------------------------------------------------------------------------- coverage (issue 48)
@pytest.mark.parametrize("scenario", [REALISTIC, NEAR_EDGE, NOISY],
                         ids=["recorded-spread", "divergence-near-the-optimum", "twice-the-spread"])
def test_the_per_seed_optimum_covers(scenario):
    """200 simulated studies (800 per-point CIs, 200 exponent CIs) per scenario, analysed as the registration of
    2026-11-28 does.  At a true level of 0.95 the binomial standard error of 200 is 0.015, so the issue's bound
    0.93 sits 1.3 of them below; a method at 0.90 fails it with probability about 0.98.  The three scenarios are
    the recorded seed spread, divergence 0.6 (in ln rate) above each seed's optimum (as in the 2026-11-27b runs,
    where one seed's divergence ended the seed mean's curve), and twice the recorded spread."""
    got = simulate(scenario, reps=200, optimum="per-seed")
    assert got["optimum_cis"] == 800 and got["optimum"] == "per-seed"
    assert got["optimum_coverage"] >= 0.93, got
    assert got["exponent_coverage"] >= 0.93, got


def test_divergence_at_the_optimum_is_a_stated_limit():
    """Divergence within 0.3 (in ln rate) of each seed's optimum: the seeds' optima are held at their divergence
    and the per-point CI undercovers, as the registration says (88% of 800 CIs there).  At 40 studies (160 CIs)
    the binomial standard error at 0.88 is 0.026, so the bound 0.93 sits two of them above."""
    got = simulate(AT_EDGE, reps=40, optimum="per-seed")
    assert 0 <= got["optimum_coverage"] < 0.93


# ----------------------------------------------------------------------------- a tiny run of the design
def test_a_tiny_per_seed_run_names_its_method_and_resumes(tmp_path):
    from test_protocol_replicable import TINY, _every_ci

    tiny = dataclasses.replace(TINY, optimum="per-seed")
    assert fingerprint(tiny) != fingerprint(TINY)
    s = run_protocol(tiny, tmp_path / "p", workers=1, say=lambda m: None, figures=False)
    assert (s["interval"], s["optimum"]) == ("jackknife", "per-seed")
    written = json.loads((tmp_path / "p" / "summary.json").read_text())  # as a reader gets it
    found = list(_every_ci({k: v for k, v in written.items() if k != "eta_max_raw"}))
    assert found and all(d.get("interval") == "jackknife" for _, d in found)
    again = run_protocol(tiny, tmp_path / "p", workers=1, say=lambda m: None, figures=False)
    assert again["this_run"]["cells_run"] == 0 and again["verdicts"] == s["verdicts"]
    json.dumps(s, allow_nan=False)
