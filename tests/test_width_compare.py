"""Width extrapolation of a log-log slope (stats) and the campaign comparison across widths."""

import json

import numpy as np
import pytest

from amutheory import stats
from amutheory.campaign import CampaignConfig, run_campaign
from amutheory.campaign.width_compare import compare_widths, markdown, pooled_offsets
from amutheory.cli import main
from amutheory.spec import ArchSpec

DEPTHS = np.array([64.0, 128.0, 256.0])


def _power_law_seeds(rng, width, limit, coeff, sigma, seeds=96):
    """Per-seed values ``L^(limit + coeff / n)`` times lognormal noise of log-sd ``sigma``."""
    return np.exp(rng.normal(0.0, sigma, (seeds, DEPTHS.size))) * DEPTHS ** (limit + coeff / width)


def test_noiseless_power_laws_extrapolate_exactly():
    rng = np.random.default_rng(0)
    widths = [32, 64, 128]
    ext = stats.extrapolate_in_width(widths, DEPTHS, [_power_law_seeds(rng, n, -1.0, 8.0, 0.0) for n in widths])
    assert ext.limit == pytest.approx(-1.0, abs=1e-12) and ext.coefficient == pytest.approx(8.0, abs=1e-10)
    assert ext.limit_ci == pytest.approx((-1.0, -1.0), abs=1e-12)
    assert ext.slopes == pytest.approx([-1 + 8 / n for n in widths], abs=1e-12)


def test_two_widths_is_richardson():
    rng = np.random.default_rng(1)
    vals = [_power_law_seeds(rng, n, 0.5, -3.0, 0.4) for n in (64, 128)]
    ext = stats.extrapolate_in_width([64, 128], DEPTHS, vals)
    p64, p128 = (stats.fit_loglog_slope(DEPTHS, v).slope for v in vals)
    assert ext.slopes == pytest.approx([p64, p128], abs=1e-14)
    assert ext.limit == pytest.approx(2 * p128 - p64, abs=1e-12)
    # the extrapolation multiplies the noise: its interval is wider than either width's
    width = ext.limit_ci[1] - ext.limit_ci[0]
    assert all(width > hi - lo for lo, hi in ext.slope_cis)


def test_limit_interval_covers_the_true_limit():
    # 200 independent data sets at two widths, 96 lognormal seeds (log-sd 0.5, about the spread of a
    # residual net's s_bar): the percentile interval of the limit should cover the true -1 about 95% of
    # the time.  Percentile bootstraps of a mean under-cover slightly at this n (0.93 in a 300-set run
    # with another seed), and 200 sets give a binomial sd of 0.016, so [0.88, 0.99] is 3 sd either side
    # of 0.93/0.95 -- a wrong interval (e.g. one width's, or a limit off by its 1/n term) covers far less
    rng = np.random.default_rng(7)
    hits = 0
    for rep in range(200):
        vals = [_power_law_seeds(rng, n, -1.0, 6.0, 0.5) for n in (64, 128)]
        lo, hi = stats.extrapolate_in_width([64, 128], DEPTHS, vals, n_boot=400, seed=rep).limit_ci
        hits += lo <= -1.0 <= hi
    assert 0.88 <= hits / 200 <= 0.99


@pytest.mark.parametrize("kwargs, match", [
    ({"widths": [64, 64]}, "distinct"),
    ({"widths": [64]}, "widths"),
    ({"widths": [64, -128]}, "widths"),
    ({"widths": [64, 128, 256]}, "one per width"),
])
def test_extrapolation_input_errors(kwargs, match):
    rng = np.random.default_rng(2)
    vals = [_power_law_seeds(rng, n, -1.0, 0.0, 0.1) for n in (64, 128)]
    with pytest.raises(ValueError, match=match):
        stats.extrapolate_in_width(kwargs["widths"], DEPTHS, vals)


def test_pooling_pairs_the_seeds():
    """Configs that share seeds are correlated (the same normals, rescaled): pooling must resample
    them together.  Two configs with identical per-seed values pool to exactly one config's CI;
    two independent ones pool to a CI about sqrt(2) narrower (0.6-0.85 of it, for bootstrap noise)."""
    rng = np.random.default_rng(5)

    def entry(vals):
        ext = stats.extrapolate_in_width([64, 128], DEPTHS, vals, n_boot=1000)
        row = {"derived_exponent_value": 0.5, "extrapolated": {"exponent": -ext.limit / 2},
               "per_width": [{"exponent": -p / 2} for p in ext.slopes]}
        return row, (ext, ((0,), (0,)))

    a = [_power_law_seeds(rng, n, -1.0, 0.0, 0.5) for n in (64, 128)]
    b = [_power_law_seeds(rng, n, -1.0, 0.0, 0.5) for n in (64, 128)]
    (ra, ea), (rb, eb) = entry(a), entry(b)
    width = lambda p: p["extrapolated"]["ci"][1] - p["extrapolated"]["ci"][0]  # noqa: E731
    alone = pooled_offsets([ra], [ea])
    same = pooled_offsets([ra, ra], [ea, ea])
    assert same["extrapolated"]["ci"] == pytest.approx(alone["extrapolated"]["ci"], abs=1e-12)
    independent = pooled_offsets([ra, rb], [ea, eb])
    assert 0.6 < width(independent) / width(alone) < 0.85
    assert pooled_offsets([{"extrapolated": None}], [None]) is None


# --------------------------------------------------------------------------- two tiny campaigns
SPEC = ArchSpec(family="resnet", dim=1, kernel=3, spatial=5, activation="relu", batch=2, branch="conv-mlp",
                init="k-last")
RDEPTHS, RCAL, RSEEDS = (1, 2, 3, 4), (1, 2, 3), 4


@pytest.fixture(scope="module")
def two_widths(tmp_path_factory):
    folders = []
    for n in (8, 16):
        out = tmp_path_factory.mktemp(f"w{n}")
        cfgs = [CampaignConfig("res", SPEC.with_(width=n, depth=4), RDEPTHS, RCAL, RSEEDS),
                CampaignConfig("res-none", SPEC.with_(width=n, depth=4, init="none"), RDEPTHS, RCAL, RSEEDS)]
        run_campaign(cfgs, out, progress=None, figures=False)
        folders.append(out)
    return folders


def test_comparison_reads_both_campaigns(two_widths):
    comp = compare_widths(two_widths)
    (res,) = [c for c in comp["configs"] if c["name"] == "res"]
    summaries = [{c["name"]: c for c in json.loads((f / "summary.json").read_text())["configs"]} for f in two_widths]
    assert [r["width"] for r in res["per_width"]] == [8, 16]
    for row, summ in zip(res["per_width"], summaries):
        deep = summ["res"]["fitted_exponents"]["mean"]["deepest"]
        assert row["exponent"] == pytest.approx(deep["exponent"], abs=1e-12) and row["ci"] == deep["ci"]
        assert row["passed"] == summ["res"]["passed"]
    e8, e16 = (r["exponent"] for r in res["per_width"])
    ext = res["extrapolated"]
    assert ext["exponent"] == pytest.approx(2 * e16 - e8, abs=1e-10)  # Richardson with n2 = 2 n1
    assert ext["derived_inside_ci"] == (ext["ci"][0] <= res["derived_exponent_value"] <= ext["ci"][1])
    assert res["derived_exponent"] == "-1"
    # "none" has no law: listed as skipped with the reason, not extrapolated
    assert any(s["name"] == "res-none" and "unstable" in s["reason"] for s in comp["skipped"])
    assert comp["counts"]["configs"] == 1
    pooled = comp["pooled"]  # one config: the offsets are its own exponents minus the derived one
    assert pooled["configs"] == 1
    for row, r in zip(pooled["per_width"], res["per_width"]):
        assert row["width"] == r["width"] and row["offset"] == pytest.approx(r["exponent"] + 1, abs=1e-12)
    assert pooled["extrapolated"]["offset"] == pytest.approx(ext["exponent"] + 1, abs=1e-12)
    assert pooled["extrapolated"]["ci"] == pytest.approx([c + 1 for c in ext["ci"]], abs=1e-12)
    text = markdown(comp)
    assert "| res | -1 |" in text and "n = 8" in text and "n = 16" in text and "skipped res-none" in text


def test_comparison_errors(two_widths, tmp_path):
    with pytest.raises(ValueError, match="at least two"):
        compare_widths([two_widths[0]])
    with pytest.raises(ValueError, match="no summary.json|no campaign.json"):
        compare_widths([two_widths[0], tmp_path])
    with pytest.raises(ValueError, match="statistic"):
        compare_widths(two_widths, statistic="median")
    # the same folder twice: every config at one width, nothing to compare
    with pytest.raises(ValueError, match="share no config"):
        compare_widths([two_widths[0], two_widths[0]])


def test_cli_compare_widths(two_widths, tmp_path, capsys):
    out = tmp_path / "cmp.md"
    assert main(["compare-widths", *map(str, two_widths), "--json", "--out", str(out)]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert set(obj) >= {"runs", "statistic", "configs", "counts", "skipped"}
    assert out.read_text().startswith("Exponent of eta*(K)")
    assert main(["compare-widths", str(two_widths[0]), str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a finished campaign folder" in err[0]
