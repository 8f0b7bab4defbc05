"""Shared draws between a campaign's configs (amutheory.campaign.draws), on real nets."""

import numpy as np
import pytest

from amutheory.api import Measurement
from amutheory.campaign.draws import GROUP_CORRELATION, draw_groups, effective_count, effective_of, groups_of
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
