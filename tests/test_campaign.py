"""Tests of the validation campaign driver (:mod:`amutheory.campaign`) on a tiny real preset.

One real campaign (conv1d ReLU, width 16, spatial 8, batch 2, depths 2, 3, 4, 5, 6, 8,
calibration depths 2, 3, 4, 6 -- one per free constant -- held-out 5 and 8, 4 seeds) runs once per module; the
tests check its files against the contract, and that resuming after an interrupt recomputes
only the unfinished blocks and ends with the same rows as the uninterrupted run.
"""

import csv
import json
import re
import shutil

import pytest
import torch

from amutheory.campaign import (CSV_COLUMNS, PRESETS, CampaignConfig, read_results, resolve_preset,
                                run_campaign)
from amutheory.spec import ArchSpec

SPEC = ArchSpec(dim=1, width=16, kernel=3, spatial=8, activation="relu", batch=2)
DEPTHS = (2, 3, 4, 5, 6, 8)
CAL = (2, 3, 4, 6)
SEEDS = 4
TINY = [CampaignConfig("tiny", SPEC, DEPTHS, CAL, SEEDS)]
COMPUTED = re.compile(r"^\[tiny\] depth (\d+) \(\d+/\d+\) \d+ seeds +[\d.]+ s$")


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    torch.set_num_threads(2)
    out = tmp_path_factory.mktemp("campaign")
    msgs = []
    summary = run_campaign(TINY, out, progress=msgs.append)
    return out, summary, msgs


def test_outputs_follow_the_contract(full_run):
    out, summary, msgs = full_run
    rows = _rows(out / "results.csv")
    assert tuple(rows[0]) == CSV_COLUMNS
    assert len(rows) - 1 == SEEDS * sum(DEPTHS)  # one row per depth x seed x layer
    assert {(int(r[6]), int(r[7]), int(r[8])) for r in rows[1:]} == {
        (d, s, l) for d in DEPTHS for s in range(SEEDS) for l in range(1, d + 1)}
    assert all(float(r[9]) > 0 for r in rows[1:])
    assert sum(bool(COMPUTED.match(m)) for m in msgs) == len(DEPTHS)

    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk == summary
    assert {"configs", "out_dir", "preset"} <= set(on_disk)
    assert on_disk["preset"] == "custom" and on_disk["out_dir"] == str(out)
    (cfg,) = on_disk["configs"]
    for key in ("name", "max_rel_error", "fitted_exponent", "fitted_exponent_ci", "passed"):
        assert key in cfg
    assert cfg["name"] == "tiny"
    assert isinstance(cfg["passed"], bool)
    assert cfg["derived_exponent"] == "-3/2"
    assert len(cfg["fitted_exponent_ci"]) == 2
    lo, hi = cfg["fitted_exponent_ci"]
    assert lo <= cfg["fitted_exponent"] <= hi
    for stat in ("mean", "geo"):
        table = cfg["per_depth"][stat]
        assert [r["depth"] for r in table] == list(DEPTHS)
        assert [r["calibration"] for r in table] == [d in CAL for d in DEPTHS]
        for r in table:
            assert r["eta_meas_ci"][0] <= r["eta_meas"] <= r["eta_meas_ci"][1]
            assert r["inside_ci"] == (r["eta_meas_ci"][0] <= r["eta_pred"] <= r["eta_meas_ci"][1])
        assert cfg["calibration"][stat]["depths"] == list(CAL)
        assert {"a", "b", "e", "gamma", "epsilon"} <= set(cfg["constants"][stat])
        assert cfg["constants"][stat]["a"]["source"] == "calibrated"
    held = [r for r in cfg["per_depth"]["mean"] if not r["calibration"]]
    assert cfg["max_rel_error"] == pytest.approx(max(abs(r["rel_error"]) for r in held))
    assert cfg["passed"] == all(r["inside_ci"] for s in ("mean", "geo")
                                for r in cfg["per_depth"][s] if not r["calibration"])

    report = (out / "report.md").read_text()
    assert "| depth | cal? | predicted eta* | measured eta* [95% CI] | rel. error | inside |" in report
    assert ("PASSED" if cfg["passed"] else "FAILED") in report
    for name in cfg["figures"].values():
        assert f"]({name})" in report
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert set(cfg["figures"]) == {"eta_star", "layer_profiles"}


def test_resume_recomputes_only_unfinished_blocks(full_run, tmp_path):
    out, _, _ = full_run
    reference = _rows(out / "results.csv")
    for name in ("results.csv", "campaign.json"):
        shutil.copy(out / name, tmp_path / name)
    # simulate an interrupt in the middle of writing the depth-6 block: keep the blocks of depths
    # 2 to 5, 5 whole rows of depth 6 and half of the next row (no newline)
    text = (tmp_path / "results.csv").read_text().splitlines(keepends=True)
    n_done = 1 + SEEDS * (2 + 3 + 4 + 5)
    cut = "".join(text[:n_done + 5]) + text[n_done + 5][:12]
    (tmp_path / "results.csv").write_text(cut)

    msgs = []
    run_campaign(TINY, tmp_path, progress=msgs.append, analyse=False)
    computed = [int(COMPUTED.match(m).group(1)) for m in msgs if COMPUTED.match(m)]
    assert computed == [6, 8]  # depths 2 to 5 were not recomputed
    assert sum("skipped" in m for m in msgs) == 4
    assert any("partial block of 5 rows" in m and "depth 6" in m for m in msgs)
    assert any("unreadable" in m for m in msgs)
    assert sorted(_rows(tmp_path / "results.csv")) == sorted(reference)

    # everything complete now: a rerun computes nothing
    msgs.clear()
    run_campaign(TINY, tmp_path, progress=msgs.append, analyse=False)
    assert not any(COMPUTED.match(m) for m in msgs)
    assert len(_rows(tmp_path / "results.csv")) == len(reference)


def test_keyboard_interrupt_keeps_finished_blocks(tmp_path):
    cfg = [CampaignConfig("tiny", SPEC.with_(width=4), (2, 3, 4, 5), (2, 3, 4, 5), 2)]
    msgs = []

    def progress(msg):
        msgs.append(msg)
        if len(msgs) == 1:
            raise KeyboardInterrupt  # arrives right after the first block was written

    with pytest.raises(KeyboardInterrupt):
        run_campaign(cfg, tmp_path, progress=progress)
    assert "interrupted" in msgs[-1] and "Rerun" in msgs[-1]
    blocks, bad = read_results(tmp_path / "results.csv")
    assert bad == 0 and set(blocks) == {("tiny", 2)} and len(blocks[("tiny", 2)]) == 2 * 2


def test_resume_refuses_results_of_another_spec(full_run, tmp_path):
    out, _, _ = full_run
    for name in ("results.csv", "campaign.json"):
        shutil.copy(out / name, tmp_path / name)
    other = [CampaignConfig("tiny", SPEC.with_(width=8), DEPTHS, CAL, SEEDS)]
    with pytest.raises(ValueError, match="another spec"):
        run_campaign(other, tmp_path, progress=None)


def test_configs_and_presets():
    with pytest.raises(ValueError, match="not among depths"):
        CampaignConfig("x", SPEC, (2, 3, 4, 6), (2, 3, 4, 8), 4)
    with pytest.raises(ValueError, match="cannot calibrate"):  # 4 constants, 2 depths
        CampaignConfig("x", SPEC, (2, 3, 6), (2, 3), 4)
    with pytest.raises(ValueError, match="seeds"):
        CampaignConfig("x", SPEC, (2, 3, 4, 6), (2, 3, 4, 6), 1)
    with pytest.raises(ValueError, match="preset"):
        resolve_preset("nope")
    assert resolve_preset("quick", only="conv2d-relu")[1][0].name == "conv2d-relu"

    quick = {c.name: c for c in PRESETS["quick"]}
    assert list(quick) == ["conv1d-relu", "conv1d-linear", "conv2d-relu", "conv2d-linear"]
    for c in PRESETS["quick"] + PRESETS["paper"]:
        assert c.spec.width == 8 * max(c.depths)  # fixed width per config
        assert c.spec.padding == "circular" and c.spec.kernel == 3
    assert quick["conv1d-relu"].depths == (2, 3, 4, 6, 8, 12, 16, 24, 32)
    assert quick["conv1d-relu"].calibration_depths == (2, 4, 8, 16)
    assert quick["conv2d-relu"].calibration_depths == (2, 4, 6, 8)
    assert quick["conv2d-linear"].depths == (2, 3, 4, 6, 8, 12, 16)
    assert quick["conv2d-linear"].spec.spatial == 8 and quick["conv2d-linear"].seeds == 32
    assert all(c.seeds == 64 and c.spec.spatial == 32 for c in PRESETS["paper"])
