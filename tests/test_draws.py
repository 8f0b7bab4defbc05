"""Shared draws between a campaign's configs (amutheory.campaign.draws), on real nets."""

import math

import numpy as np
import pytest

from amutheory.api import Measurement
from amutheory.campaign.draws import GROUP_CORRELATION, draw_groups, effective_count, effective_of, groups_of, \
    pass_count_null, row_influence
from amutheory.campaign.report import write_report
from amutheory.measure.probe import probe
from amutheory.spec import ArchSpec

BASE = ArchSpec(family="resnet", dim=1, width=8, kernel=3, spatial=4, activation="relu", batch=2,
                branch="conv-mlp", init="k-last", depth=3)
SEEDS = list(range(32))
DEPTHS = [2, 3]


def _measure(spec, seeds=SEEDS):
    return Measurement(spec, DEPTHS, list(seeds), {d: probe(spec.with_(depth=d), seeds).s for d in DEPTHS})


@pytest.fixture(scope="module")
def nets():
    # k-last and k-all: the same normals scaled differently; width 12: other weight shapes, so the
    # inputs and loss directions come from other places of the generator's stream
    return {"k-last": _measure(BASE), "k-all": _measure(BASE.with_(init="k-all")),
            "width-12": _measure(BASE.with_(width=12)),
            "other-seeds": _measure(BASE.with_(init="k-all"), range(100, 132))}


def test_configs_drawing_the_same_normals_form_one_group(nets):
    d = draw_groups(nets)
    corr = d["correlation"]
    # measured: 0.95 between the two inits at width 16 (48 seeds); with 32 seeds the standard error of a
    # correlation near 0 is 0.18, so 0.5 separates shared from independent draws by ~3 standard errors
    assert corr["k-last"]["k-all"] >= GROUP_CORRELATION
    assert abs(corr["k-last"]["width-12"]) < GROUP_CORRELATION
    assert abs(corr["k-all"]["width-12"]) < GROUP_CORRELATION
    assert corr["k-all"]["other-seeds"] is None  # different seeds: nothing paired
    assert corr["k-all"]["k-last"] == corr["k-last"]["k-all"]
    assert sorted(map(sorted, d["groups"])) == [["k-all", "k-last"], ["other-seeds"], ["width-12"]]
    # the pair counts as ~1 config, the others as one each
    assert 2.5 < d["effective_configs"] < 3.5
    assert effective_of(d, ["k-last", "k-all"]) == pytest.approx(effective_count(
        np.array([[1, corr["k-last"]["k-all"]], [corr["k-last"]["k-all"], 1]])))
    assert sorted(groups_of(d, ["k-last", "width-12"])) == [["k-last"], ["width-12"]]
    # the correlation is the mean over depths of the per-seed ln s_bar correlation
    expect = np.mean([np.corrcoef(np.log(nets["k-last"].s_bar(k)), np.log(nets["k-all"].s_bar(k)))[0, 1]
                      for k in DEPTHS])
    assert corr["k-last"]["k-all"] == pytest.approx(expect, rel=1e-12)


def test_effective_count_of_extreme_correlation_matrices():
    assert effective_count(np.eye(4)) == pytest.approx(4.0)
    assert effective_count(np.ones((4, 4))) == pytest.approx(1.0)
    # two identical pairs, independent of each other: 2
    block = np.kron(np.eye(2), np.ones((2, 2)))
    assert effective_count(block) == pytest.approx(2.0)


def test_bad_input_names_the_argument(nets):
    with pytest.raises(TypeError, match="measurements"):
        draw_groups([nets["k-last"]])
    with pytest.raises(ValueError, match="threshold"):
        draw_groups(nets, threshold=1.5)


def test_report_names_the_groups(nets, tmp_path):
    d = draw_groups(nets)
    summary = {"preset": "t", "configs": [], "protocol": {"dtype": "float64", "device": "cpu", "input_var": 1.0},
               "C": 1.0, "timing": {"measure_s": 0.0, "blocks_computed": 0, "blocks_resumed": 0, "analysis_s": 0.0},
               "transfer": {"tables": [], "summary": {}, "best": {}}, "draw_groups": d}
    write_report(tmp_path / "report.md", summary)
    text = (tmp_path / "report.md").read_text()
    assert "## Shared draws" in text
    row = next(line for line in text.splitlines() if "k-last" in line and line.startswith("|"))
    assert "k-all" in row and f"{d['correlation']['k-last']['k-all']:.2f}" in row


def _orthonormal_rows(count: int, seeds: int, seed: int = 0) -> np.ndarray:
    """``count`` centred vectors over ``seeds`` with exactly zero correlation (so the null's ``R`` is I)."""
    a = np.random.default_rng(seed).standard_normal((seeds, count + 1))
    a[:, 0] = 1.0
    q, _ = np.linalg.qr(a)
    return q[:, 1:].T


def test_pass_count_null_at_independent_and_identical_rows():
    """Independent rows: a config of r rows passes with probability level^r, the count is binomial;
    identical rows: every config passes or fails together.  20 000 draws: the expected count's Monte Carlo
    sd is <= sqrt(12 * 0.25 / 20000) = 0.012, so 0.05 is four of them."""
    rows = _orthonormal_rows(48, 96)
    null = pass_count_null({f"c{i}": list(rows[4 * i:4 * i + 4]) for i in range(12)})
    p = 0.95**4
    assert null["expected"] == pytest.approx(12 * p, abs=0.05)
    assert null["effective_rows"] == pytest.approx(48.0)
    binom = [math.comb(12, j) * p**j * (1 - p) ** (12 - j) for j in range(13)]
    np.testing.assert_allclose(null["distribution"], binom, atol=0.01)  # sd of a frequency <= 0.0035
    assert null["p_at_most"][-1] == pytest.approx(1.0) and null["percentile_5"] == 7  # binomial: P(N < 7) = 0.008
    one = rows[0]
    same = pass_count_null({f"c{i}": [one, 2 * one] for i in range(12)})  # scale does not matter: correlation 1
    assert same["expected"] == pytest.approx(12 * 0.95, abs=0.05)
    assert same["distribution"][0] + same["distribution"][12] == pytest.approx(1.0)
    assert same["effective_rows"] == pytest.approx(1.0)
    assert same["p_at_most"][0] == pytest.approx(0.05, abs=0.005)
    # percentile_5: the largest j with P(count < j) <= 0.05 -- 12 or 0 here, as the draws fall either side of 0.05
    for null_ in (null, same):
        below = [0.0, *null_["p_at_most"][:-1]]
        j = null_["percentile_5"]
        assert below[j] <= 0.05 and all(b > 0.05 for b in below[j + 1:])


def test_pass_count_null_matches_the_campaign_intervals_it_stands_for():
    """The null replaces the campaign's percentile-bootstrap intervals by normal ones.  Against those
    intervals themselves, on lognormal per-seed values (sigma = 0.5, the campaigns' spread) of two configs
    correlated at 0.8 and measured at two K that are independent, with the prediction at the true mean
    and the true geometric mean: 400 replications of 96 seeds.  The observed mean count's sd is
    sqrt(var / 400) <= 0.04; the bootstrap's undercoverage at 96 seeds is O(1/seeds) per row (~0.01-0.02
    for a lognormal mean), ~0.05 over the 8 rows: so the null may exceed the observed by up to
    0.05 + 3 x 0.04 and fall below it by at most 3 x 0.04 (measured: null 1.75, observed 1.74 of 2)."""
    from amutheory import stats

    rng = np.random.default_rng(3)
    sigma, rho, seeds, reps = 0.5, 0.8, 96, 400
    cov = sigma**2 * np.array([[1, rho], [rho, 1]])
    truth = {"mean": math.exp(sigma**2 / 2), "geo": 1.0}
    counts, example = [], None
    for rep in range(reps):
        ks = [np.exp(rng.multivariate_normal([0, 0], cov, size=seeds)) for _ in range(2)]  # two K
        passed = []
        for c in range(2):
            ok = True
            for x in ks:
                for stat, ci in (("mean", stats.arith_mean_ci), ("geo", stats.geo_mean_ci)):
                    _m, lo, hi = ci(x[:, c], n_boot=500, seed=rep)
                    ok &= lo <= truth[stat] <= hi
            passed.append(ok)
        counts.append(sum(passed))
        example = example or {f"c{c}": [row_influence(x[:, c], s) for x in ks for s in ("mean", "geo")]
                              for c in range(2)}
    null = pass_count_null(example)
    observed = float(np.mean(counts))
    assert -0.12 <= null["expected"] - observed <= 0.17, (null["expected"], observed)
    assert 1.5 < null["effective_rows"] < 4  # 8 rows: mean ~ geo, c0 ~ c1, the two K independent


def test_pass_count_null_refuses_bad_input():
    v = np.arange(1.0, 7.0) - 3.5
    with pytest.raises(TypeError, match="configs"):
        pass_count_null([v])
    with pytest.raises(ValueError, match="level"):
        pass_count_null({"a": [v]}, level=1.5)
    with pytest.raises(ValueError, match="draws"):
        pass_count_null({"a": [v]}, draws=10)
    with pytest.raises(ValueError, match="same seeds"):
        pass_count_null({"a": [v], "b": [v[:4]]})
    with pytest.raises(ValueError, match="constant"):
        pass_count_null({"a": [v, np.zeros(6)]})
    with pytest.raises(ValueError, match="no rows"):
        pass_count_null({"a": []})
    with pytest.raises(ValueError, match="statistic"):
        row_influence([1.0, 2.0, 3.0], "median")
    with pytest.raises(ValueError, match="positive"):
        row_influence([1.0, -2.0, 3.0], "geo")


def test_pass_count_null_with_the_predictions_own_error():
    """A calibrated prediction's error, shared by a config's rows, makes misses likelier: with independent
    rows and a prediction sd equal to the measurement's (ratio 1), a row's z has variance 2 within a config
    and the rows of a config correlate at 1/2.  Then P(config passes) = P(all r rows |z| <= 1.96) =
    E_u[prod P(|e + u| <= 1.96)], computed here by quadrature; the Monte Carlo (20 000 draws: sd of the
    expected count <= 0.012) must match it to 0.05.  Ratio 0 gives back the strict null draw for draw."""
    from scipy import integrate, stats as sps

    rows = _orthonormal_rows(24, 96, seed=2)
    configs = {f"c{i}": list(rows[4 * i:4 * i + 4]) for i in range(6)}
    strict = pass_count_null(configs)
    zero = pass_count_null(configs, prediction_sd={n: [0.0] * 4 for n in configs})
    assert zero["distribution"] == strict["distribution"] and zero["with_prediction_error"]
    one = pass_count_null(configs, prediction_sd={n: [1.0] * 4 for n in configs})
    c = sps.norm.ppf(0.975)
    p_row = lambda u: sps.norm.cdf(c - u) - sps.norm.cdf(-c - u)  # noqa: E731
    p_config = integrate.quad(lambda u: sps.norm.pdf(u) * p_row(u) ** 4, -10, 10)[0]
    assert one["expected"] == pytest.approx(6 * p_config, abs=0.05)
    assert one["expected"] < strict["expected"] - 0.5  # 6 x (0.81 - ~0.62): a real drop, not noise
    with pytest.raises(ValueError, match="prediction_sd"):
        pass_count_null(configs, prediction_sd={n: [1.0] * 3 for n in configs})
