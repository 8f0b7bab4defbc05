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

import numpy as np
import pytest
import torch

from amutheory.campaign import (CSV_COLUMNS, PRESETS, STREAM_COLUMNS, CampaignConfig, load_measurement,
                                ratio_bootstrap, read_results, read_stream, resolve_preset, run_campaign)
from amutheory.spec import ArchSpec

#: a GELU chain on 256 positions: its default law is calibrated (a small ReLU circular chain's is the approximate
#: chain-kernel-finite-backward, a GELU chain within B^2 N^3 <= 2^24 the drawn chain-kernel-finite, nothing
#: fitted in either), and these tests are of the calibrated pipeline
SPEC = ArchSpec(dim=1, width=16, kernel=3, spatial=256, activation="gelu", batch=2)
DEPTHS = (2, 3, 4, 5, 6, 8)
CAL = (2, 3, 4, 6)
SEEDS = 4
TINY = [CampaignConfig("tiny", SPEC, DEPTHS, CAL, SEEDS)]
COMPUTED = re.compile(r"^\[tiny\] depth (\d+) \(\d+/\d+\) \d+ seeds +[\d.]+ s$")


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def _run_once(tmp_path_factory, folder, configs):
    """``(out_dir, summary, progress messages)`` of one full campaign of ``configs`` in a fresh folder."""
    torch.set_num_threads(2)
    out = tmp_path_factory.mktemp(folder)
    msgs = []
    summary = run_campaign(configs, out, progress=msgs.append)
    return out, summary, msgs


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    return _run_once(tmp_path_factory, "campaign", TINY)


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
    assert summary["preset"] == "custom" and summary["seed_offset"] == 0  # the preset's own seeds
    assert {"configs", "out_dir", "preset"} <= set(on_disk)
    assert on_disk["preset"] == "custom" and on_disk["out_dir"] == str(out)
    (cfg,) = on_disk["configs"]
    for key in ("name", "max_rel_error", "fitted_exponent", "fitted_exponent_ci", "passed"):
        assert key in cfg
    assert cfg["name"] == "tiny"
    assert isinstance(cfg["passed"], bool)
    assert cfg["derived_exponent"] == "-3/2"
    assert len(cfg["fitted_exponent_ci"]) == 2
    # the progress line and the CLI's summary line name what fitted_exponent is fitted over (issue 33)
    assert cfg["fitted_exponent_over"] == "all depths"
    assert any(m.startswith("[tiny] ") and "fitted exponent (all depths)" in m for m in msgs)
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
    assert bad == 0 and set(blocks) == {("tiny", "circular", 2)} and len(blocks[("tiny", "circular", 2)]) == 2 * 2


def test_seed_offset_replicates_the_campaign_on_shifted_seeds(full_run, tmp_path):
    """``seed_offset`` measures every config on its seeds plus the offset: row for row what the same
    config given those seeds explicitly measures, and not the preset's seeds' values."""
    cfg = [CampaignConfig("tiny", SPEC, (2, 3, 4), (2, 3, 4), 3)]
    shifted = tmp_path / "shifted"
    explicit = tmp_path / "explicit"
    run_campaign(cfg, shifted, progress=None, analyse=False, seed_offset=100)
    run_campaign([CampaignConfig("tiny", SPEC, (2, 3, 4), (2, 3, 4), (100, 101, 102))], explicit, progress=None,
                 analyse=False)
    assert _rows(shifted / "results.csv") == _rows(explicit / "results.csv")
    blocks, _ = read_results(shifted / "results.csv")
    assert {seed for (seed, _layer) in blocks[("tiny", "circular", 2)]} == {100, 101, 102}
    unshifted, _ = read_results(full_run[0] / "results.csv")
    s_new = np.array([blocks[("tiny", "circular", 2)][(seed, 1)][1] for seed in (100, 101, 102)])
    s_old = np.array([unshifted[("tiny", "circular", 2)][(seed, 1)][1] for seed in (0, 1, 2)])
    assert not np.allclose(s_new, s_old)  # independent draws
    assert json.loads((shifted / "campaign.json").read_text())["configs"]["tiny"]["seeds"] == [100, 101, 102]
    # an explicit seed list shifts element by element; the offset is checked
    assert CampaignConfig("t", SPEC, (2, 3, 4), (2, 3, 4), (3, 7)).with_seed_offset(10).seed_list == [13, 17]
    with pytest.raises(ValueError, match="seed_offset"):
        run_campaign(cfg, tmp_path / "bad", progress=None, seed_offset=-1)
    with pytest.raises(TypeError, match="seed_offset"):
        run_campaign(cfg, tmp_path / "bad", progress=None, seed_offset=1.5)


def test_resume_refuses_results_of_another_spec(full_run, tmp_path):
    out, _, _ = full_run
    for name in ("results.csv", "campaign.json"):
        shutil.copy(out / name, tmp_path / name)
    other = [CampaignConfig("tiny", SPEC.with_(width=8), DEPTHS, CAL, SEEDS)]
    with pytest.raises(ValueError, match="another spec"):
        run_campaign(other, tmp_path, progress=None)


def test_resume_after_adding_a_depth_measures_only_the_new_depth(full_run, tmp_path):
    """A config that gains a deeper depth (so its spec's ``depth`` grows) resumes: the finished
    blocks are kept row for row and only the new depth is measured."""
    out, _, _ = full_run
    for name in ("results.csv", "campaign.json"):
        shutil.copy(out / name, tmp_path / name)
    deeper = [CampaignConfig("tiny", SPEC.with_(depth=10), DEPTHS + (10,), CAL, SEEDS)]
    msgs = []
    run_campaign(deeper, tmp_path, progress=msgs.append, analyse=False)
    assert [int(m.group(1)) for m in map(COMPUTED.match, msgs) if m] == [10]
    old, new = read_results(out / "results.csv")[0], read_results(tmp_path / "results.csv")[0]
    assert set(new) == set(old) | {("tiny", "circular", 10)}
    assert all(new[k] == old[k] for k in old)


def test_configs_and_presets():
    with pytest.raises(ValueError, match="not among depths"):
        CampaignConfig("x", SPEC, (2, 3, 4, 6), (2, 3, 4, 8), 4)
    with pytest.raises(ValueError, match="cannot calibrate"):  # 4 constants, 2 depths
        CampaignConfig("x", SPEC, (2, 3, 6), (2, 3), 4)
    with pytest.raises(ValueError, match="seeds"):
        CampaignConfig("x", SPEC, (2, 3, 4, 6), (2, 3, 4, 6), 1)
    with pytest.raises(ValueError, match="preset"):
        resolve_preset("nope")
    assert resolve_preset("full-cpu", only="conv2d-relu")[1][0].name == "conv2d-relu"

    quick = {c.name: c for c in PRESETS["full-cpu"] if not c.is_zero and not c.is_resnet}
    assert list(quick) == ["conv1d-relu", "conv1d-linear", "conv2d-relu", "conv2d-linear"]
    for c in PRESETS["quick"] + PRESETS["full-cpu"] + PRESETS["paper"]:
        if c.is_zero or c.spec.family != "conv":  # the fixed-width rule is the conv chains'
            continue
        assert c.spec.width == 8 * max(c.depths)  # fixed width per config
        assert c.spec.padding == "circular" and c.spec.kernel == 3
    assert quick["conv1d-relu"].depths == (2, 3, 4, 6, 8, 12, 16, 24, 32)
    assert quick["conv1d-relu"].calibration_depths == (2, 4, 8, 16)
    assert quick["conv2d-relu"].calibration_depths == (2, 4, 6, 8)
    assert quick["conv2d-linear"].depths == (2, 3, 4, 6, 8, 12, 16)
    assert quick["conv2d-linear"].spec.spatial == 8 and quick["conv2d-linear"].seeds == 32
    assert all(c.seeds == 64 and c.spec.spatial == 32 for c in PRESETS["paper"] if not c.is_zero and not c.is_resnet)


def test_quick_preset_is_quick_and_shows_each_kind():
    """The quick preset is the newcomer's first command: a few minutes on 2 cores (measured 1.5-2 min
    wall-clock, issue 33).  Its probe cost (the calibrated cost model, which errs long) is bounded so
    that it cannot silently grow back into full-cpu; and it still holds a calibrated ReLU chain, the
    exact linear chain, zero padding and a forward-stable and an unstable residual net, each with
    held-out depths deeper than its calibration ones."""
    from amutheory.laws.costs import probe_seconds
    from amutheory.symbolic.resnet.coherent import is_forward_stable

    quick = PRESETS["quick"]
    cost = sum(probe_seconds(c.spec, [d for _, d in c.blocks], len(c.seed_list)) for c in quick)
    full = sum(probe_seconds(c.spec, [d for _, d in c.blocks], len(c.seed_list)) for c in PRESETS["full-cpu"])
    assert cost <= 60 and cost <= full / 30, (cost, full)
    from amutheory.campaign.presets import WIDTH_SWEEPS

    assert WIDTH_SWEEPS["quick"] == [] and not any(c.is_transformer for c in quick)
    chains = {c.spec.activation for c in quick if c.spec.family == "conv" and not c.is_zero}
    assert chains == {"relu", "linear"} and any(c.is_zero for c in quick)
    resnets = [c for c in quick if c.is_resnet]
    assert sorted(is_forward_stable(c.spec) for c in resnets) == [False, True]
    for c in quick:  # the deepest held-out depth is at least twice the deepest calibration depth
        if not c.is_zero:
            assert c.held_out_depths and max(c.held_out_depths) >= 2 * max(c.calibration_depths)


# --------------------------------------------------------------------------- zero padding
ZSPEC = ArchSpec(dim=1, width=8, kernel=3, spatial=8, activation="relu", batch=2, padding="zero")
ZDEPTHS = (2, 3, 4)
ZERO = [CampaignConfig("tinyzero", ZSPEC, ZDEPTHS, ZDEPTHS, 4)]
ZCOMPUTED = re.compile(r"^\[tinyzero\] (circular|zero) depth (\d+) \(\d+/\d+\) \d+ seeds +[\d.]+ s$")


@pytest.fixture(scope="module")
def zero_run(tmp_path_factory):
    return _run_once(tmp_path_factory, "zero", ZERO)


def test_zero_padding_config_blocks_and_presets():
    cfg = ZERO[0]
    assert cfg.is_zero and cfg.held_out_depths == list(ZDEPTHS)
    assert cfg.blocks == [("circular", d) for d in ZDEPTHS] + [("zero", d) for d in ZDEPTHS]
    # circular references need not be among the zero depths
    other = CampaignConfig("z", ZSPEC, (2, 8), (2, 3, 4), 4)
    assert other.depths_of("circular") == [2, 3, 4] and other.depths_of("zero") == [2, 8]
    zq = [c for c in PRESETS["full-cpu"] if c.is_zero]
    assert {(c.spec.spatial, c.spec.kernel) for c in zq if c.spec.dim == 1 and c.spec.activation == "relu"} == {
        (n, k) for n in (8, 16, 32, 64) for k in (3, 5)}
    assert all(c.calibration_depths == c.depths for c in zq)
    assert "zero1d-relu-N8-k3" in {c.name for c in PRESETS["paper"]}


def test_zero_padding_outputs(zero_run):
    out, summary, msgs = zero_run
    rows = _rows(out / "results.csv")
    assert tuple(rows[0]) == CSV_COLUMNS and CSV_COLUMNS[-1] == "padding"
    got = {(r[10], int(r[6])) for r in rows[1:]}
    assert got == {(p, d) for p in ("circular", "zero") for d in ZDEPTHS}
    assert len(rows) - 1 == 2 * 4 * sum(ZDEPTHS)
    assert sorted((m.group(1), int(m.group(2))) for m in map(ZCOMPUTED.match, msgs) if m) == sorted(got)

    (cfg,) = summary["configs"]
    assert cfg["padding"] == "zero" and cfg["spec"]["padding"] == "zero"
    # everything of the circular format ...
    for key in ("per_depth", "held_out_test", "passed", "passed_joint", "max_rel_error", "fitted_exponent",
                "constants", "calibration", "prediction_curve"):
        assert key in cfg
    assert all(not r["calibration"] for r in cfg["per_depth"]["mean"])  # every zero depth is held out
    assert cfg["calibration"]["mean"]["depths"] == list(ZDEPTHS)
    # ... and the zero keys
    assert isinstance(cfg["passed_ratio"], bool)
    for stat in ("mean", "geo"):
        table = cfg["ratio"][stat]
        assert [r["depth"] for r in table] == list(ZDEPTHS)
        for r in table:
            lo, hi = r["ratio_meas_ci"]
            assert lo <= r["ratio_meas"] <= hi
            assert r["inside_ci"] == (lo <= r["ratio_pred"] <= hi)
    assert cfg["passed_ratio"] == all(r["inside_ci"] for s in ("mean", "geo") for r in cfg["ratio"][s])
    reg = cfg["regime"]
    assert [r["depth"] for r in reg] == list(ZDEPTHS)
    for r in reg:
        assert r["regime_parameter"] == pytest.approx(r["depth"] * 9 / 64)
        assert r["constant_level"] == (abs(r["slope_shift"]) <= 0.05)
        assert "slope_shift_meas" in r
    assert summary["figures"] == {"boundary_collapse": "boundary_collapse.png"}
    assert (out / "boundary_collapse.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert set(cfg["figures"]) == {"eta_star"}
    report = (out / "report.md").read_text()
    assert "## Zero padding" in report and "](boundary_collapse.png)" in report
    assert "Is the boundary effect constant-level?" in report
    assert json.loads((out / "summary.json").read_text()) == summary


def test_zero_padding_predicted_ratio_is_the_boundary_factor(zero_run):
    from amutheory.api import zero_padding_factor
    from amutheory.constants import Constant

    _, summary, _ = zero_run
    (cfg,) = summary["configs"]
    consts = {k: Constant(k, v["value"], v["source"]) for k, v in cfg["constants"]["mean"].items()}
    pred = zero_padding_factor(ZSPEC, list(ZDEPTHS), consts)[0]
    assert [r["ratio_pred"] for r in cfg["ratio"]["mean"]] == pytest.approx(pred.tolist())


def test_zero_padding_resume_computes_nothing(zero_run, tmp_path):
    out, summary, _ = zero_run
    for name in ("results.csv", "campaign.json"):
        shutil.copy(out / name, tmp_path / name)
    msgs = []
    again = run_campaign(ZERO, tmp_path, progress=msgs.append, figures=False)
    assert not any(ZCOMPUTED.match(m) for m in msgs)
    assert sum("skipped" in m for m in msgs) == 2 * len(ZDEPTHS)
    assert again["configs"][0]["ratio"] == summary["configs"][0]["ratio"]

    # drop the zero block of depth 4: only that block is measured again
    text = (tmp_path / "results.csv").read_text().splitlines(keepends=True)
    kept = [line for line in text if not (line.rstrip().endswith(",zero") and line.split(",")[6] == "4")]
    (tmp_path / "results.csv").write_text("".join(kept))
    msgs.clear()
    run_campaign(ZERO, tmp_path, progress=msgs.append, analyse=False)
    assert [(m.group(1), int(m.group(2))) for m in map(ZCOMPUTED.match, msgs) if m] == [("zero", 4)]


def test_old_results_without_padding_column_still_load(full_run, tmp_path):
    out, _, _ = full_run
    rows = _rows(out / "results.csv")
    with open(tmp_path / "results.csv", "w", newline="") as f:
        csv.writer(f).writerows([r[:-1] for r in rows])  # the layout before zero padding
    shutil.copy(out / "campaign.json", tmp_path / "campaign.json")
    blocks, bad = read_results(tmp_path / "results.csv")
    assert bad == 0 and {p for _, p, _ in blocks} == {"circular"}
    meas = load_measurement(tmp_path / "results.csv", TINY[0])
    assert meas.depths == list(DEPTHS) and meas.profiles[8].shape == (SEEDS, 8)

    msgs = []
    run_campaign(TINY, tmp_path, progress=msgs.append, analyse=False)
    assert not any(COMPUTED.match(m) for m in msgs)  # resumed from the old file
    assert any("padding column" in m for m in msgs)
    new = _rows(tmp_path / "results.csv")
    assert tuple(new[0]) == CSV_COLUMNS and sorted(new[1:]) == sorted(rows[1:])


def test_ratio_bootstrap_pairs_the_seeds():
    rng = np.random.default_rng(1)
    c = np.exp(rng.normal(0.0, 1.0, (32, 2)))
    z = 0.5 * c * np.exp(rng.normal(0.0, 0.01, (32, 2)))  # same seeds: strongly correlated
    ratio, reps = ratio_bootstrap(z, c, "geo")
    assert reps.shape == (2000, 2) and ratio == pytest.approx([0.5, 0.5], rel=0.02)
    paired = np.quantile(reps, [0.025, 0.975], axis=0)
    unpaired = np.quantile(ratio_bootstrap(z, c, "geo", paired=False)[1], [0.025, 0.975], axis=0)
    assert np.all(paired[1] - paired[0] < 0.1 * (unpaired[1] - unpaired[0]))
    again = ratio_bootstrap(z, c, "geo")[1]
    assert np.array_equal(reps, again)  # fixed seed


# --------------------------------------------------------------------------- residual nets
RSPEC = ArchSpec(family="resnet", dim=1, width=8, kernel=3, spatial=5, activation="relu", batch=2,
                 branch="preact", init="k-last")
RDEPTHS = (1, 2, 3, 4)
RSEEDS = 3
RESNETS = [CampaignConfig("res-preact", RSPEC, RDEPTHS, (1, 2, 3), RSEEDS),
           # "none": every block adds O(1) variance, the stream grows like 2^K (a conv branch: K layers)
           CampaignConfig("res-none", RSPEC.with_(branch="conv", init="none"), RDEPTHS, (1, 2, 3), RSEEDS)]
RCOMPUTED = re.compile(r"^\[res-(preact|none)\] depth (\d+) \(\d+/\d+\) \d+ seeds +[\d.]+ s$")
RESNET_KEYS = ("family", "branch", "init", "forward_stable", "growth", "mechanism", "stream_growth_measured",
               "stream_growth_mean_field", "derived_exponent", "claim_minus_three_halves", "per_depth",
               "fitted_exponents", "held_out_test", "passed", "max_rel_error", "fitted_exponent",
               "fitted_exponent_ci", "local_slopes", "errors", "notes")


@pytest.fixture(scope="module")
def resnet_run(tmp_path_factory):
    return _run_once(tmp_path_factory, "resnet", RESNETS)


def test_resnet_results_hold_every_preactivation(resnet_run):
    out, _, msgs = resnet_run
    rows = _rows(out / "results.csv")
    assert tuple(rows[0]) == CSV_COLUMNS
    layers = {"res-preact": lambda k: 2 * k, "res-none": lambda k: k}  # preact: the stream enters phi too
    got = {(r[0], int(r[6]), int(r[7]), int(r[8])) for r in rows[1:]}
    assert got == {(n, k, s, l) for n, f in layers.items() for k in RDEPTHS for s in range(RSEEDS)
                   for l in range(1, f(k) + 1)}
    assert len(rows) - 1 == len(got)
    assert sorted((m.group(1), int(m.group(2))) for m in map(RCOMPUTED.match, msgs) if m) == sorted(
        (n, k) for n in ("preact", "none") for k in RDEPTHS)
    meas = load_measurement(out / "results.csv", RESNETS[0])
    assert meas.profiles[4].shape == (RSEEDS, 8)
    # the stream after the stem and after every block, for every (stream) seed
    stream = read_stream(out / "stream.csv")
    assert _rows(out / "stream.csv")[0] == list(STREAM_COLUMNS)
    for cfg in RESNETS:
        for k in RDEPTHS:
            assert set(stream[(cfg.name, k)]) == {(s, b) for s in range(RSEEDS) for b in range(k + 1)}


def test_resnet_summary_follows_the_contract(resnet_run):
    from amutheory.api import derive
    from amutheory.symbolic.resnet.coherent import forward_analysis

    out, summary, _ = resnet_run
    assert json.loads((out / "summary.json").read_text()) == summary
    res = {c["name"]: c for c in summary["configs"]}
    for cfg in RESNETS:
        c = res[cfg.name]
        for key in RESNET_KEYS:
            assert key in c, key
        spec = cfg.spec.with_(depth=max(RDEPTHS))
        fwd = forward_analysis(spec)
        assert (c["family"], c["branch"], c["init"]) == ("resnet", spec.branch, spec.init)
        assert c["forward_stable"] == fwd["forward_stable"] and c["growth"] == fwd["growth"]
        assert [r["depth"] for r in c["stream_growth_measured"]] == list(RDEPTHS)
        for r, k in zip(c["stream_growth_measured"], RDEPTHS):
            q = forward_analysis(cfg.spec.with_(depth=k))["q_stream"]
            assert r["mean_field"] == pytest.approx(q[-1] / q[0])
            lo, hi = r["ratio_meas_range"]
            assert lo <= r["ratio_meas"] <= hi and r["seeds"] == RSEEDS
        assert [r["depth"] for r in c["local_slopes"]["mean"]] == list(RDEPTHS)

    stable = res["res-preact"]
    assert stable["forward_stable"] and stable["status"] == "stable"
    assert all(c["fitted_exponent_over"] == "all K" for c in res.values())
    assert stable["derived_exponent"] == str(derive(RSPEC).exponent)
    assert isinstance(stable["passed"], bool) and isinstance(stable["claim_minus_three_halves"], bool)
    for stat in ("mean", "geo"):
        fits = stable["fitted_exponents"][stat]
        assert fits["all"]["depths"] == list(RDEPTHS) and fits["deepest"]["depths"] == [2, 3, 4]
        assert fits["held_out"] is None  # one held-out K: no slope
        lo, hi = fits["deepest"]["ci"]
        assert fits["deepest"]["derived_inside_ci"] == (lo <= stable["derived_exponent_value"] <= hi)
        assert stable["claim_minus_three_halves_by_statistic"][stat] == (lo <= -1.5 <= hi)
        table = stable["per_depth"][stat]
        # the law's slope: least squares of the predicted ln eta* on ln K over the same depths
        pred = {r["depth"]: r["eta_pred"] for r in table}
        for fit in (fits["all"], fits["deepest"]):
            expect = np.polyfit(np.log(fit["depths"]), np.log([pred[d] for d in fit["depths"]]), 1)[0]
            assert fit["law_exponent"] == pytest.approx(expect, abs=1e-12)
            assert fit["law_inside_ci"] == (fit["ci"][0] <= fit["law_exponent"] <= fit["ci"][1])
        assert [r["calibration"] for r in table] == [True, True, True, False]
        for r in table:
            assert r["eta_pred"] is not None
            assert r["inside_ci"] == (r["eta_meas_ci"][0] <= r["eta_pred"] <= r["eta_meas_ci"][1])
    assert stable["passed"] == all(r["inside_ci"] for s in ("mean", "geo")
                                   for r in stable["per_depth"][s] if not r["calibration"])
    # the joint test again with the calibration's own error in each prediction: the same depths, every
    # |z| smaller (a larger standard error), and its verdict in passed_joint_with_calibration
    verdicts = []
    for stat in ("mean", "geo"):
        plain, with_cal = stable["held_out_test"][stat], stable["held_out_test_with_calibration"][stat]
        held = [r for r in stable["per_depth"][stat] if not r["calibration"]]
        assert all(r["s_pred_log_sd"] > 0 for r in held) and with_cal["dof"] == plain["dof"] == len(held)
        assert all(abs(w) < abs(p) for w, p in zip(with_cal["z"], plain["z"]))
        verdicts.append(with_cal["p_value"] >= 0.05 and all(with_cal["bonferroni_inside"]))
    assert stable["passed_joint_with_calibration"] == all(verdicts)
    assert res["res-none"]["passed_joint_with_calibration"] is None
    # the per-block profile at the deepest K: measured from results.csv (preact: the W1 phi(x)
    # pre-activation, every second one) and the calibrated law's (symbolic.resnet.coherent.read_profile)
    from amutheory.campaign import load_measurement
    from amutheory.symbolic.resnet.coherent import read_profile

    bp = stable["block_profile"]
    depth = max(RDEPTHS)
    meas = load_measurement(out / "results.csv", RESNETS[0]).profiles[depth].mean(axis=0)[1::2]
    const = {k: stable["constants"]["mean"][k]["value"] for k in ("A", "B", "e0")}
    law = read_profile(RSPEC.with_(depth=depth), depth, const["A"], const["B"], const["e0"])
    idx = [max(int(round(x * depth)) - 1, 0) for x in bp["x"]]
    assert bp["depth"] == depth and bp["measured"][-1] == bp["law"][-1] == 1.0
    assert bp["measured"] == pytest.approx(list(meas[idx] / meas[-1]), rel=1e-12)
    assert bp["law"] == pytest.approx(list(law[idx] / law[-1]), rel=1e-12)
    assert bp["measured_by_depth"][str(depth)] == bp["measured"] and list(bp["measured_by_depth"]) == ["2", "3", "4"]
    assert res["res-none"]["block_profile"] is None
    assert set(stable["figures"]) == {"eta_star"}

    assert summary["figures"]["resnet_eta_star"] == "resnet_eta_star.png"
    assert (out / "resnet_eta_star.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = (out / "report.md").read_text()
    assert "## Residual networks" in report and "](resnet_eta_star.png)" in report
    assert "| convention | branch | activation | derived exponent |" in report
    assert summary["passed_resnet"] == stable["passed"]
    # which configs share their seeds' draws (campaign.draws): every config in exactly one group
    draws = summary["draw_groups"]
    assert sorted(n for g in draws["groups"] for n in g) == sorted(c.name for c in RESNETS)
    assert set(draws["correlation"]) == {c.name for c in RESNETS} and 1 <= draws["effective_configs"] <= len(RESNETS)
    assert "## Shared draws" in report


def test_resnet_unstable_config_is_reported_not_fitted(resnet_run):
    from amutheory.api import derive

    out, summary, msgs = resnet_run
    with pytest.raises(ValueError):
        derive(RESNETS[1].spec)
    c = {c["name"]: c for c in summary["configs"]}["res-none"]
    assert not c["forward_stable"] and c["status"] == "unstable" and "unstable" in c["reason"]
    assert c["passed"] is None and c["passed_joint"] is None and c["claim_minus_three_halves"] is False
    assert c["derived_exponent"] is None and c["prediction_curve"] is None and c["held_out_test"] == {}
    assert c["fitted_exponents"] == {"mean": None, "geo": None} and c["fitted_exponent"] is None
    assert all(r["eta_pred"] is None and r["eta_meas"] > 0 for s in ("mean", "geo") for r in c["per_depth"][s])
    assert all(r["slope"] is not None for r in c["local_slopes"]["mean"])
    # the measured stream grows with K
    growth = [r["ratio_meas"] for r in c["stream_growth_measured"]]
    assert growth[-1] > growth[0]
    assert c["figures"] == {}
    assert any(m.startswith("[res-none] forward unstable") for m in msgs)
    assert "### res-none: FORWARD UNSTABLE" in (out / "report.md").read_text()


def test_resnet_resume_computes_nothing(resnet_run, tmp_path):
    out, _, _ = resnet_run
    for name in ("results.csv", "campaign.json", "stream.csv"):
        shutil.copy(out / name, tmp_path / name)
    reference = _rows(out / "results.csv")
    msgs = []
    run_campaign(RESNETS, tmp_path, progress=msgs.append, analyse=False)
    assert not any(RCOMPUTED.match(m) for m in msgs)
    assert sum("skipped" in m for m in msgs) == 2 * len(RDEPTHS)
    assert sorted(_rows(tmp_path / "results.csv")) == sorted(reference)
    assert sorted(_rows(tmp_path / "stream.csv")) == sorted(_rows(out / "stream.csv"))

    # a lost stream.csv is measured again (no probe block), with the same values
    (tmp_path / "stream.csv").unlink()
    msgs.clear()
    run_campaign(RESNETS, tmp_path, progress=msgs.append, analyse=False)
    assert not any(RCOMPUTED.match(m) for m in msgs)
    assert read_stream(tmp_path / "stream.csv") == read_stream(out / "stream.csv")

    # running one config keeps the other's blocks (2K layers per preact net are a whole block)
    run_campaign(RESNETS, tmp_path, progress=None, analyse=False, only="res-none")
    assert sorted(_rows(tmp_path / "results.csv")) == sorted(reference)


def test_resnet_presets():
    from amutheory.spec import BRANCHES, INITS

    from amutheory.symbolic.resnet.coherent import forward_analysis

    # K up to 64 (the issue) for every convention; forward-stable ones on to K = 256, calibrated on
    # K <= 64 and held out at 128 and 256; unstable ones (no law) keep K <= 64
    for preset, width, spatial, depths, seeds in (("full-cpu", 64, 8, (2, 4, 8, 16, 32, 64), 96),
                                                  ("paper", 256, 16, (2, 4, 8, 16, 32, 64), 64)):
        res = [c for c in PRESETS[preset] if c.is_resnet]
        relu = {(c.spec.branch, c.spec.init) for c in res if c.spec.activation == "relu"}
        linear = {(c.spec.branch, c.spec.init) for c in res if c.spec.activation == "linear"}
        assert len(res) == 18 and relu == {(b, i) for b in BRANCHES for i in INITS}
        assert linear == {(b, "k-last") for b in BRANCHES}
        for c in res:
            sp = c.spec
            assert (sp.dim, sp.padding, sp.kernel, sp.width, sp.spatial) == (1, "circular", 3, width, spatial)
            assert c.seeds == seeds
            if forward_analysis(sp)["forward_stable"]:
                assert c.depths == depths + (128, 256) and c.calibration_depths == depths
                assert c.held_out_depths == [128, 256] and sp.depth == 256
            else:
                assert c.depths == depths and c.calibration_depths == (2, 4, 8, 16)
            assert c.name == f"resnet-{sp.branch}-{sp.init}-{sp.activation}"


@pytest.mark.parametrize("preset, width", [("resnet-wide", 128), ("resnet-wider", 256)])
def test_resnet_wide_presets_are_full_cpu_at_a_larger_width(preset, width):
    from amutheory.symbolic.resnet.coherent import is_forward_stable

    # the forward-stable residual configs of full-cpu and nothing else, at n = 128 or 256: same names,
    # depths, calibration and seeds, so compare-widths can set the campaigns side by side
    quick = {c.name: c for c in PRESETS["full-cpu"] if c.is_resnet and is_forward_stable(c.spec)}
    wide = {c.name: c for c in PRESETS[preset]}
    assert set(wide) == set(quick) and len(wide) == 12
    for name, c in wide.items():
        q = quick[name]
        assert c.spec == q.spec.with_(width=width) and q.spec.width == 64
        assert (c.depths, c.calibration_depths, c.seed_list) == (q.depths, q.calibration_depths, q.seed_list)
