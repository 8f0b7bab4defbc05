"""The transformer / transfer part of a campaign, end to end on tiny nets (real probe, real
analysis, report written, resume)."""

from amutheory.campaign import run_campaign
from amutheory.campaign.presets import PRESETS, CampaignConfig
from amutheory.spec import ArchSpec
from amutheory.transfer import RULES


def _tiny():
    spec = ArchSpec(family="transformer", depth=6, width=8, spatial=4, heads=2, mlp_ratio=2, init="k-last",
                    batch=4)
    return [CampaignConfig("tf-tiny", spec, (1, 2, 3, 4, 6, 8), (1, 2, 3, 4), 6)]


def test_transformer_campaign_writes_fits_laws_and_transfer_table(tmp_path):
    summary = run_campaign(_tiny(), tmp_path, progress=None)
    (c,) = summary["configs"]
    fit = c["effective_depth_fit"]["mean"]
    assert fit["effective_depths"] == [10, 14, 18]  # 2K + 2 over the deepest three K
    assert fit["ci"][0] <= fit["exponent"] <= fit["ci"][1]
    assert set(c["laws"]) == {"coherent", "effective-depth"}
    assert c["laws"]["coherent"]["derived_exponent"] == "-1"
    (table,) = summary["transfer"]["tables"]
    assert table["reference_depth"] == 4 and [r["depth"] for r in table["rows"]] == [6, 8]
    for row in table["rows"]:
        assert set(row["rules"]) == set(RULES)
        lo, hi = row["ci"]
        assert lo <= row["measured_ratio"] <= hi
    report = (tmp_path / "report.md").read_text()
    assert "## Transformers" in report and "## Learning-rate transfer" in report
    again = run_campaign(_tiny(), tmp_path, progress=None)
    assert again["timing"]["blocks_computed"] == 0 and again["timing"]["blocks_resumed"] == 6


def test_transfer_preset_covers_three_families():
    fams = {c.spec.family for c in PRESETS["transfer"]}
    assert fams == {"conv", "resnet", "transformer"}
