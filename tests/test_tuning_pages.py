"""The tuning-benchmark pages regenerate, word for word, from the JSON each keeps beside it (no cell needed)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "validate"))


@pytest.mark.parametrize("module,page,kept", [
    ("tune_report", "tuning_cost.md", "tuning/benchmark.json"),
    ("tune_report_2", "tuning_cost_2.md", "tuning2/benchmark.json"),
])
def test_page_regenerates_from_its_kept_json(tmp_path, module, page, kept):
    mod = __import__(module)
    findings = ROOT / "docs" / "findings"
    out = tmp_path / page
    mod.write_page(findings / kept, out, tmp_path / "figures")
    assert out.read_text() == (findings / page).read_text()
    assert (tmp_path / "figures" / "pareto.png").stat().st_size > 10_000


def test_the_rerun_page_states_every_bar_of_the_issue():
    import tune_report_2 as R

    text = (ROOT / "docs" / "findings" / "tuning_cost_2.md").read_text()
    table = text.split("## Acceptance (issue 49)")[1].split("##")[0]
    assert table.count("| yes |") + table.count("| **no** |") == 5
    import json

    rows = json.loads((ROOT / "docs" / "findings" / "tuning2" / "benchmark.json").read_text())["rows"]
    assert {r["method"] for r in rows} <= set(R.order())
    assert {r["held_out"] for r in rows} == {True, False}
