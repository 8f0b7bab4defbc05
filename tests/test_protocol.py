"""The training protocol (issue 31): registration, decision rules, zero-shot transfer, and a tiny
protocol run end to end (summary contract, resume, refusal of another protocol's folder, CLI)."""

import dataclasses
import json
import math
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from amutheory.protocol import PRESETS, Claim, Protocol, Study, TransferPlan, fingerprint, for_device, run_protocol
from amutheory.protocol import verdicts as V
from amutheory.protocol.presets import PROTOCOL, PROTOCOL_2026_11_27, PROTOCOL_PAPER_CPU
from amutheory.protocol.zero_shot import ALL_RULES, zero_shot_table
from amutheory.spec import ArchSpec
from amutheory.train.search import LrSearch, _vertex, _vertices

ROOT = pathlib.Path(__file__).parent.parent


# ----------------------------------------------------------------------------- registration
def test_registration_names_the_preset_it_registered():
    text = (ROOT / "validate" / "plans" / "REGISTRATION_PROTOCOL.md").read_text()
    assert f"**`{fingerprint(PROTOCOL)}`**" in text, "the protocol preset changed without its registration"
    for s in PROTOCOL.studies:
        assert f"| {s.name} |" in text


def test_the_2026_11_27_registration_names_its_preset_and_protocol_runs_it():
    text = (ROOT / "validate" / "plans" / "REGISTRATION_PROTOCOL_2026_11_27.md").read_text()
    assert f"**`{fingerprint(PROTOCOL_2026_11_27)}`**" in text, "the protocol preset changed without its registration"
    for s in PROTOCOL_2026_11_27.studies:
        assert f"| {s.name} |" in text
    assert PRESETS["protocol-2026-11-27"] is PROTOCOL_2026_11_27  # still runnable by its date
    assert fingerprint(PROTOCOL_2026_11_27) == "ee8f31fcb73b26c5"  # unchanged by the fields added since
    assert fingerprint(PRESETS["protocol-2026-11"]) == "3ec19a75a6d0b7fb"  # the earlier registration, unchanged
    assert PROTOCOL_2026_11_27.interval == "jackknife" and PROTOCOL_2026_11_27.requires_learning


def test_fingerprint_moves_with_any_field():
    changed = Protocol(PROTOCOL.name, PROTOCOL.description, PROTOCOL.studies, PROTOCOL.claims,
                       TransferPlan("chain1d", (3, 4), tuple(range(5, 17)), PROTOCOL.transfer.segments, tolerance=1.4))
    assert fingerprint(changed) != fingerprint(PROTOCOL)


def test_paper_preset_shrinks_off_a_gpu_and_says_so():
    assert for_device("protocol-paper", "cuda") is PRESETS["protocol-paper"]
    cpu = for_device("protocol-paper", "cpu")
    assert cpu is PROTOCOL_PAPER_CPU and "CPU size" in cpu.size_note
    assert max(cpu.studies[0].depths) < max(PRESETS["protocol-paper"].studies[0].depths)
    with pytest.raises(ValueError, match="preset must be one of"):
        for_device("nope", "cpu")


def test_a_claim_on_an_unknown_study_is_refused():
    with pytest.raises(ValueError, match="unknown studies"):
        Protocol("x", "", PROTOCOL.studies, (Claim("c", "s", "exponent", ("nope",)),), PROTOCOL.transfer)


# ----------------------------------------------------------------------------- the vectorised vertex
@given(st.integers(3, 9), st.integers(0, 2**31 - 1))
def test_vectorised_vertex_is_the_pointwise_one(rates, seed):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.normal(size=rates)) + np.arange(rates)  # strictly increasing
    y = rng.normal(size=(20, rates))
    y[rng.random(y.shape) < 0.25] = np.inf
    got = _vertices(x, y)
    want = np.array([_vertex(x, row)[0] for row in y])
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=0, atol=1e-9)


# ----------------------------------------------------------------------------- decision rules
def _fit(e, lo, hi):
    return {"exponent": e, "exponent_ci": [lo, hi], "slope_draws": np.linspace(lo, hi, 100)}


def test_exponent_verdicts():
    assert V.exponent_verdict(_fit(-1.6, -1.9, -1.3), -1.5, {}, None)["verdict"] == "holds"
    assert V.exponent_verdict(_fit(-1.6, -2.4, -0.8), -1.5, {}, None)["verdict"] == "inconclusive"
    assert V.exponent_verdict(_fit(-0.9, -1.1, -0.7), -1.5, {}, None)["verdict"] == "fails"
    by_horizon = V.exponent_verdict(_fit(-0.9, -1.1, -0.7), -1.5, {100: _fit(-1.4, -1.7, -1.2)}, None)
    assert by_horizon["verdict"] == "conditional" and "T = 100" in by_horizon["condition"]
    corrected = V.exponent_verdict(_fit(-1.8, -1.95, -1.7), -1.5, {}, -1.85)
    assert corrected["verdict"] == "conditional" and "corrections" in corrected["condition"]
    assert V.exponent_verdict(None, -1.5, {}, None)["verdict"] == "inconclusive"


def test_same_exponent_and_steeper_verdicts():
    same = {"exponent_difference": 0.05, "exponent_difference_ci": [-0.2, 0.3]}
    moved = {"exponent_difference": 0.6, "exponent_difference_ci": [0.3, 0.9]}
    ratio_away, ratio_one = {"ratio": 2.0, "ratio_ci": [1.5, 2.6]}, {"ratio": 1.1, "ratio_ci": [0.8, 1.4]}
    assert V.same_exponent_verdict(same, ratio_away, True)["verdict"] == "holds"
    assert V.same_exponent_verdict(same, ratio_one, True)["verdict"] == "conditional"
    assert V.same_exponent_verdict(same, ratio_one, False)["verdict"] == "holds"
    assert V.same_exponent_verdict(moved, ratio_away, True)["verdict"] == "fails"
    below = {"exponent_difference": -0.3, "exponent_difference_ci": [-0.5, -0.1]}
    assert V.steeper_verdict(below, below)["verdict"] == "holds"
    assert V.steeper_verdict(below, same)["verdict"] == "conditional"
    assert V.steeper_verdict(same, same)["verdict"] == "fails"


def test_transfer_status_and_rule_verdict():
    assert V.transfer_status(1.3, [1.1, 1.6], 1.5) == "transfers"
    assert V.transfer_status(2.0, [1.7, 2.4], 1.5) == "misses"
    assert V.transfer_status(2.0, [1.2, 2.4], 1.5) == "uncertain"
    assert V.transfer_status(0.5, [0.4, 0.6], 1.5) == "misses"
    assert V.rule_verdict([5, 6], ["transfers", "transfers"])["verdict"] == "holds"
    cond = V.rule_verdict([5, 6, 7], ["transfers", "transfers", "misses"])
    assert cond["verdict"] == "conditional" and "up to L = 6" in cond["reason"]
    assert V.rule_verdict([5, 6], ["misses", "transfers"])["verdict"] == "fails"
    assert V.rule_verdict([5, 6], ["transfers", "uncertain"])["verdict"] == "inconclusive"


# ----------------------------------------------------------------------------- zero-shot with a known answer
def _searches_with_optima(eta: dict, seeds: int = 4, noise: float = 0.01, seed: int = 0) -> dict:
    """LrSearches whose loss is a parabola in ln lr around ``eta[L]`` (plus seed noise)."""
    rng = np.random.default_rng(seed)
    lrs = np.geomspace(1e-4, 10, 21)
    out = {}
    for L, e in eta.items():
        base = 1 + 0.3 * (np.log(lrs) - math.log(e)) ** 2
        out[L] = LrSearch(lrs, list(range(seeds)), base[:, None] + noise * rng.normal(size=(len(lrs), seeds)), depth=L)
    return out


def test_the_true_law_transfers_and_keeping_the_rate_does_not():
    depths = list(range(2, 11))
    searches = _searches_with_optima({L: 0.5 * L**-1.5 for L in depths})
    curves = {"power": np.array(depths, float) ** -1.5, "keep": np.ones(len(depths)),
              "too-steep": np.array(depths, float) ** -3.0}
    draws = {k: np.broadcast_to(v, (2000, len(v))) for k, v in curves.items()}
    table = zero_shot_table(searches, curves, draws, (2, 3), tuple(range(4, 11)), 1.5)
    assert table["power"]["verdict"] == "holds"
    assert all(abs(r["relative_error"]) < 0.1 for r in table["power"]["rows"])
    assert all(r["relative_error_ci"][0] < 0.1 and r["relative_error_ci"][1] > -0.1 for r in table["power"]["rows"])
    # keep: k = mean(eta(2), eta(3)) is 2.18 x eta(4) already, beyond the factor 1.5 and its CI
    assert table["keep"]["verdict"] == "fails" and table["keep"]["rows"][0]["status"] == "misses"
    assert table["too-steep"]["verdict"] in ("fails", "conditional")
    assert table["too-steep"]["rows"][-1]["status"] == "misses"
    # regret: linear interpolation of 1 + 0.3 t^2 between rates h = ln(10^5)/20 apart errs by at most
    # 0.3 (h/2)^2 = 0.025 (plus the 1% seed noise); keep at L = 10 is ln(8.6) off: 0.3 * 2.16^2 = 1.4
    assert all(r["regret"] < 0.025 + 0.02 for r in table["power"]["rows"])
    assert table["keep"]["rows"][-1]["regret"] == pytest.approx(0.3 * math.log(table["keep"]["rows"][-1]["relative_error"]
                                                                             + 1) ** 2, rel=0.1)


def test_every_rule_of_the_protocol_is_named():
    assert {"am-mup", "power", "chen", "depth-mup", "completep", "per-layer-mup", "keep", "onestep-mean",
            "onestep-typical"} == set(ALL_RULES)


# ----------------------------------------------------------------------------- a tiny protocol, end to end
CHAIN = ArchSpec(family="conv", dim=1, depth=2, width=8, kernel=3, activation="relu")
COMMON = dict(dataset="synthetic", depths=(2, 3, 4), seeds=3, steps=20, points=5, refine=1, synthetic_shape=(3, 8),
              lr_range=(0.01, 3.0))
TINY = Protocol(
    "tiny", "a tiny protocol for the tests",
    studies=(Study("chain", "1D chain", CHAIN, onestep=True, probe_seeds=4, **COMMON),
             Study("bn", "with BatchNorm", CHAIN, norm="batch", **COMMON),
             Study("gelu-he", "GELU at c = 2", CHAIN.with_(activation="gelu", init_c=2.0), **COMMON),
             Study("gelu-crit", "GELU critical", CHAIN.with_(activation="gelu"), **COMMON),
             Study("res", "ResNet", ArchSpec(family="resnet", dim=1, depth=2, width=8, kernel=3), **COMMON),
             Study("width", "widths", CHAIN, dataset="synthetic", depths=(2,), widths=(4, 8), seeds=3, steps=20,
                   points=5, synthetic_shape=(3, 8), lr_range=(0.01, 3.0))),
    claims=(Claim("chain", "eta* ~ L^(-3/2)", "exponent", ("chain",)),
            Claim("res", "eta* ~ L_eff^(-3/2)", "exponent", ("res",), axis="effective-depth"),
            Claim("bn", "BatchNorm: prefactor, not exponent", "same-exponent", ("bn", "chain"), prefactor_changes=True),
            Claim("gelu", "GELU steeper", "steeper", ("gelu-he", "gelu-crit", "chain")),
            Claim("width", "width rule", "width", ("width",), axis="width", expected=None,
                  expected_rules=("derived", "fan-in"))),
    transfer=TransferPlan("chain", calibration=(2,), targets=(3, 4), segments=(((2, 3), (4,)),)),
    horizons=(10,), conditional_horizons=(10,))


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("protocol") / "tiny"
    summary = run_protocol(TINY, out, workers=1, say=lambda m: None)
    return out, summary


def test_summary_holds_a_verdict_per_claim_and_an_error_per_rule(tiny_run):
    out, s = tiny_run
    assert s["fingerprint"] == fingerprint(TINY) and json.loads((out / "protocol.json").read_text())["fingerprint"] \
        == fingerprint(TINY)
    assert set(s["verdicts"]) == {c.name for c in TINY.claims}
    for c in s["claims"]:
        assert c["verdict"] in V.VERDICTS and c["reason"]
    chain = next(c for c in s["claims"] if c["name"] == "chain")
    assert chain["fit"]["exponent_ci"][0] <= chain["fit"]["exponent"] <= chain["fit"]["exponent_ci"][1]
    res = next(c for c in s["claims"] if c["name"] == "res")
    assert res["fit"]["x"] == [4.0, 5.0, 6.0]  # effective depth of K = 2, 3, 4 blocks, read off the graph
    t = s["transfer"]
    assert set(t["rules"]) == set(ALL_RULES)
    for r in t["rules"].values():
        assert [row["depth"] for row in r["rows"]] == [3, 4]
        assert all(row["relative_error_ci"] is None or row["relative_error_ci"][0] <= row["relative_error_ci"][1]
                   for row in r["rows"])
    assert set(t["bridge"]) == {"onestep-mean", "onestep-typical"}
    assert set(s["bridges"]) == {"chain"} and s["bridges"]["chain"]["width"] == 16  # the study's width (widths)
    assert s["bridges"]["chain"]["onestep-mean"] == t["bridge"]["onestep-mean"]
    assert set(t["bridge"]["onestep-mean"]) == {10, 20}
    c = t["cost"]
    rates = {r["depth"]: len(r["lrs"]) for r in json.loads((out / "chain" / "summary.json").read_text())["runs"]}
    assert c["grid_search"]["cells"] == 3 * (rates[3] + rates[4]) and c["one_step_route"]["cells"] == 3 * rates[2]
    assert c["core_seconds_ratio"] == pytest.approx(c["one_step_route"]["core_seconds"] / c["grid_search"]["core_seconds"])
    for f in ("report.md", "summary.json", "figures/transfer_rules.png", "figures/bridge.png", "figures/claims.png",
              "chain/transfer.png", "chain/onestep.json"):
        assert (out / f).is_file(), f
    json.loads((out / "summary.json").read_text())  # strict JSON: no NaN/Infinity
    assert "Infinity" not in (out / "summary.json").read_text() and "NaN" not in (out / "summary.json").read_text()


def test_rerun_trains_nothing_and_a_cut_table_resumes_exactly(tiny_run):
    out, first = tiny_run
    again = run_protocol(TINY, out, workers=1, say=lambda m: None, figures=False)
    assert again["this_run"]["cells_run"] == 0
    assert again["claims"] == first["claims"] and again["transfer"] == first["transfer"]
    table = out / "bn" / "cells.jsonl"
    lines = table.read_text().splitlines(keepends=True)
    table.write_text("".join(lines[: len(lines) // 2]))
    resumed = run_protocol(TINY, out, workers=1, say=lambda m: None, figures=False)
    assert resumed["this_run"]["cells_run"] > 0
    assert resumed["claims"] == first["claims"] and resumed["transfer"] == first["transfer"]


def test_another_protocol_in_the_folder_is_refused(tiny_run):
    out, _ = tiny_run
    other = Protocol("tiny", "changed", TINY.studies, TINY.claims, TINY.transfer, horizons=(10,),
                     conditional_horizons=())
    before = (out / "summary.json").read_text()
    with pytest.raises(ValueError, match="holds protocol"):
        run_protocol(other, out, workers=1, say=lambda m: None)
    assert (out / "summary.json").read_text() == before


@pytest.mark.parametrize("argv, message", [
    (["--preset", "protocol", "--chunk", "3"], "--chunk is an option of the one-step presets"),
    (["--preset", "quick", "--workers", "2"], "--workers is an option of the training presets"),
    (["--preset", "protocol", "--workers", "0"], "--workers must be >= 1"),
    (["--preset", "protocol-paper", "--data-dir", "/nonexistent/cifar"], "not an existing folder"),
])
def test_cli_refuses_bad_input_in_one_line(argv, message, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "amutheory", "validate", *argv, "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "o" / "summary.json").exists()


def test_cli_refuses_a_file_as_out_before_any_work(tmp_path):
    target = tmp_path / "a-file"
    target.write_text("x")
    proc = subprocess.run([sys.executable, "-m", "amutheory", "validate", "--preset", "protocol", "--out",
                           str(target)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "not a folder" in proc.stderr and target.read_text() == "x"


def test_the_paper_protocol_runs_on_cifar_files(tmp_path):
    """protocol-paper's path (CIFAR-10 python-pickle files, 2D nets, SGD and Adam, the probe on a
    2D spec) at a toy size (batch 8 instead of 128), on tiny CIFAR files the test writes."""
    from amutheory.protocol.presets import _paper
    from amutheory.train.data import write_cifar_fixture

    write_cifar_fixture(tmp_path / "cifar", n_per_batch=32)
    toy = _paper((3, 4, 5), 4, 4, 3, 2, "toy size")
    toy = Protocol(toy.name, toy.description,
                   tuple(dataclasses.replace(s, probe_seeds=2, batch_size=8) for s in toy.studies),
                   toy.claims, toy.transfer, horizons=(), conditional_horizons=(), size_note=toy.size_note)
    said = []
    s = run_protocol(toy, tmp_path / "out", workers=1, data_dir=str(tmp_path / "cifar"), say=said.append,
                     figures=False)
    assert said[0] == "protocol-paper: toy size"
    assert set(s["verdicts"]) == {"conv2d", "adam"}
    assert s["studies"]["cifar-sgd"]["dataset"] == "cifar10" and s["studies"]["cifar-adam"]["optimizer"] == "adam"
    assert s["transfer"]["calibration"] == [3, 4] and s["transfer"]["targets"] == [5]
    assert s["this_run"]["cells_run"] > 0


# ----------------------------------------------------------------------------- learning nets, registrations
def test_the_2026_11_registration_keeps_its_fingerprint_under_its_own_name():
    from amutheory.protocol.presets import PRESETS

    assert fingerprint(PRESETS["protocol-2026-11"]) == "3ec19a75a6d0b7fb"  # registered in REGISTRATION_PROTOCOL.md
    flagged = dataclasses.replace(PRESETS["protocol-2026-11"], requires_learning=True)
    assert fingerprint(flagged) != "3ec19a75a6d0b7fb"  # the learning rule is part of what a registration names


def test_a_claim_on_nets_that_do_not_learn_is_untestable():
    claim = {"verdict": "holds", "reason": "-1.5 is inside the CI"}
    assert V.learning_verdict(claim, {"chain": {2: True, 4: True}}) is None
    out = V.learning_verdict(claim, {"chain": {2: True, 4: False}, "bn": {2: None}})
    assert out["verdict"] == "untestable" and out["verdict_if_tested"] == "holds"
    assert "chain at 4" in out["reason"] and "bn at 2" in out["reason"]
    assert "untestable" in V.VERDICTS


def test_every_claim_says_which_of_its_points_learn(tiny_run):
    from amutheory.train.learning import learns, row_learns

    _, s = tiny_run
    for c in s["claims"]:
        assert set(c["learns"]) == set(c["studies"]) and set(c["largest_size"]) == set(c["studies"])
        for study, pts in c["learns"].items():
            rows = {str(r[s["studies"][study]["axis"]]): r for r in s["studies"][study]["rows"]}
            for p, ok in pts.items():
                assert ok == learns(rows[p]["final_loss_at_optimum"], 10)
                assert row_learns(rows[p]) == ok  # the stored row says the same on its own chance loss
            assert c["learning_points"][study] == [int(p) for p, ok in pts.items() if ok]
        assert c["verdict"] != "untestable"  # TINY is not registered with requires_learning


def test_a_replicate_on_disjoint_seeds_trains_other_seeds_under_its_own_fingerprint(tmp_path):
    one = Protocol("one", "one study", studies=(Study("chain", "1D chain", CHAIN, depths=(2, 3), seeds=2, steps=10,
                                                      points=3, dataset="synthetic", synthetic_shape=(3, 8),
                                                      lr_range=(0.05, 0.5), refine=0),),
                   claims=(Claim("chain", "eta* ~ L^(-3/2)", "exponent", ("chain",)),),
                   transfer=TransferPlan("chain", calibration=(2,), targets=(3,)), horizons=(), conditional_horizons=())
    s = run_protocol(one, tmp_path / "rep", workers=1, say=lambda m: None, figures=False, first_seed=500)
    assert s["fingerprint"] != fingerprint(one)
    seeds = {json.loads(line)["cell"]["seed"] for line in (tmp_path / "rep" / "chain" / "cells.jsonl").read_text()
             .splitlines()}
    assert seeds == {500, 501}
    assert one.studies[0].seed_list == [0, 1]
    assert dataclasses.replace(one.studies[0], first_seed=500).seed_list == [500, 501]
    assert "first_seed" not in json.dumps(one.to_dict())  # at 0: not part of any fingerprint


def test_a_protocol_runs_in_pieces_with_only(tmp_path):
    two = Protocol("two", "two studies", studies=(
        Study("chain", "1D chain", CHAIN, depths=(2, 3), seeds=2, steps=10, points=3, dataset="synthetic",
              synthetic_shape=(3, 8), lr_range=(0.05, 0.5), refine=0),
        Study("bn", "with BatchNorm", CHAIN, depths=(2, 3), seeds=2, steps=10, points=3, dataset="synthetic",
              synthetic_shape=(3, 8), lr_range=(0.05, 0.5), refine=0, norm="batch")),
        claims=(Claim("bn", "BatchNorm: prefactor, not exponent", "same-exponent", ("bn", "chain")),),
        transfer=TransferPlan("chain", calibration=(2,), targets=(3,)), horizons=(), conditional_horizons=())
    out = tmp_path / "pieces"
    with pytest.raises(ValueError, match="--only nope: not a study of two"):
        run_protocol(two, out, workers=1, say=lambda m: None, only=["nope"])
    first = run_protocol(two, out, workers=1, say=lambda m: None, figures=False, only=["chain"])
    assert first["complete"] is False and first["studies_missing"] == ["bn"] and "claims" not in first
    assert not (out / "summary.json").exists() and not (out / "bn" / "cells.jsonl").exists()
    second = run_protocol(two, out, workers=1, say=lambda m: None, figures=False, only=["bn"])
    assert second["complete"] is True and set(second["verdicts"]) == {"bn"}
    assert second["this_run"]["only"] == ["bn"]
    whole = run_protocol(two, tmp_path / "whole", workers=1, say=lambda m: None, figures=False)
    assert whole["claims"][0]["difference"] == second["claims"][0]["difference"]  # the same cells, the same claim


def test_cli_refuses_an_unknown_study_for_only(capsys):
    from amutheory.cli import main as cli_main

    code = cli_main(["validate", "--preset", "protocol-pilot", "--only", "nope", "--out", "/tmp/amutheory-never"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--only nope: not a study of protocol-pilot" in err[0]


def test_jackknife_interval_by_hand():
    reps = np.array([-1.4, -1.6, -1.5, -1.7])
    n = 4
    se = math.sqrt((n - 1) / n * ((reps - reps.mean()) ** 2).sum())
    from scipy import stats

    lo, hi = V.jackknife_ci(-1.55, reps)
    assert lo == pytest.approx(-1.55 - stats.t.ppf(0.975, 3) * se) and hi == pytest.approx(-1.55 + stats.t.ppf(0.975, 3) * se)
    assert V.jackknife_ci(-1.5, [-1.4, -1.6]) is None  # fewer than three replicates: no interval


def test_a_search_keeps_its_leave_one_seed_out_optima():
    lrs = np.geomspace(0.01, 1, 7)
    scores = np.array([[(np.log(lr) - np.log(0.1) - 0.1 * s) ** 2 + 1 for s in range(4)] for lr in lrs])
    s = LrSearch(lrs, list(range(4)), scores)
    assert s.jack.shape == (4,)
    for j in range(4):  # row j: the vertex of the seed-mean without seed j
        alone = LrSearch(lrs, [k for k in range(4) if k != j], np.delete(scores, j, axis=1))
        assert s.jack[j] == pytest.approx(alone.eta_star_train, rel=1e-12)


def test_a_protocol_with_jackknife_intervals(tmp_path):
    one = Protocol("jk", "one study, jackknife", studies=(
        Study("chain", "1D chain", CHAIN, depths=(2, 3, 4), seeds=3, steps=10, points=4, dataset="synthetic",
              synthetic_shape=(3, 8), lr_range=(0.05, 0.5), refine=0),),
        claims=(Claim("chain", "eta* ~ L^(-3/2)", "exponent", ("chain",)),),
        transfer=TransferPlan("chain", calibration=(2,), targets=(3, 4)), horizons=(), conditional_horizons=(),
        interval="jackknife")
    assert fingerprint(one) != fingerprint(dataclasses.replace(one, interval="bootstrap"))
    assert "interval" not in json.dumps(dataclasses.replace(one, interval="bootstrap").to_dict())
    s = run_protocol(one, tmp_path / "jk", workers=1, say=lambda m: None, figures=False)
    fit = s["claims"][0]["fit"]
    assert fit["interval"] == "jackknife" and (fit["exponent_ci"] is None or
                                               fit["exponent_ci"][0] <= fit["exponent"] <= fit["exponent_ci"][1])
    with pytest.raises(ValueError, match="interval"):
        dataclasses.replace(one, interval="nope")


def test_the_registered_depths_are_the_pilots_rule_1_output():
    from amutheory.protocol.presets import PILOT_CUT

    cut = json.loads((ROOT / "docs" / "findings" / "protocol_pilot" / "cut.json").read_text())["depths"]
    assert {k: tuple(v) for k, v in cut.items()} == PILOT_CUT
    assert {s.name: s.depths for s in PROTOCOL_2026_11_27.studies} == PILOT_CUT


def _claims(*estimates):
    return {"claims": [{"name": f"c{i}", "verdict": "holds", "fit": {"exponent": e, "exponent_ci": ci}}
                       for i, (e, ci) in enumerate(estimates)]}


def test_replicate_rows_read_each_estimate_against_the_others_ci():
    from amutheory.protocol.replicate import replicate_rows

    first = _claims((-1.5, [-1.8, -1.2]), (-1.0, [-1.1, -0.9]), (0.2, None))
    second = _claims((-1.3, [-1.4, -1.2]), (-1.4, [-1.9, -0.95]), (0.1, [0.0, 0.3]))
    rows = replicate_rows(first, second)
    assert [r["second_inside_first"] for r in rows] == [True, False, None]
    # a claim without a CI still has its estimate, read against the other run's CI (there is none to read the
    # other's estimate against)
    assert [r["first_inside_second"] for r in rows] == [False, True, True]
    assert [r["agree"] for r in rows] == [False, False, None]
    with pytest.raises(ValueError, match="different claims"):
        replicate_rows(first, _claims((-1.5, [-2, -1])))
    with pytest.raises(TypeError, match="summary.json"):
        replicate_rows(first, None)


def test_the_findings_page_sets_the_replicate_beside_each_verdict_and_the_sizes_beside_the_papers(tiny_run, tmp_path):
    sys.path.insert(0, str(ROOT / "validate"))
    import protocol_findings

    out, summary = tiny_run
    rep = run_protocol(TINY, tmp_path / "rep", workers=1, say=lambda m: None, figures=False, first_seed=900)
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n\n{protocol_findings.BEGIN}\nOLD-BLOCK-TEXT\n{protocol_findings.END}\n\nrest\n")
    page = tmp_path / "findings" / "protocol.md"
    page.parent.mkdir()
    # the documented command, run as a user runs it
    proc = subprocess.run([sys.executable, str(ROOT / "validate" / "protocol_findings.py"), "--run", str(out),
                           "--replicate", str(tmp_path / "rep"), "--out", str(page), "--readme", str(readme)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = page.read_text()
    assert "replicate on disjoint seeds (95% CI)" in text and "## The replicate on disjoint seeds" in text
    assert "| **the papers** | CIFAR-10" in text and "| chain | synthetic" in text
    from amutheory.protocol.replicate import replicate_rows

    rows = replicate_rows(summary, rep)
    n_in = sum(r["second_inside_first"] is True for r in rows)
    assert f"**{n_in} of {sum(r['second_inside_first'] is not None for r in rows)}**" in text
    new = readme.read_text()
    assert new.startswith("intro\n") and new.endswith("\nrest\n") and "OLD-BLOCK-TEXT" not in new
    assert new.count("| claim, under training |") == 1
    kept = page.parent / "protocol"
    assert {p.name for p in kept.iterdir()} == {"summary.json", "protocol.json", "replicate_summary.json",
                                                "replicate_protocol.json", "runs.json"}
    # regenerated from the kept summaries alone: the same page
    assert protocol_findings.main(["--out", str(page)]) == 0 and page.read_text() == text
    # a "replicate" of another design is refused in one line before anything is copied
    other = tmp_path / "other"
    shutil.copytree(tmp_path / "rep", other)
    meta = json.loads((other / "protocol.json").read_text())
    meta["protocol"]["studies"][0]["steps"] += 1
    (other / "protocol.json").write_text(json.dumps(meta))
    kept = {p.name: p.read_bytes() for p in (page.parent / "protocol").iterdir()}
    assert protocol_findings.main(["--run", str(out), "--replicate", str(other), "--out", str(page)]) == 2
    assert {p.name: p.read_bytes() for p in (page.parent / "protocol").iterdir()} == kept
    # one study again in another folder: its records equal the run's bit for bit, and the page says so (kept)
    run_protocol(TINY, tmp_path / "again", workers=1, say=lambda m: None, figures=False, only=["chain"])
    n = len((out / "chain" / "cells.jsonl").read_text().splitlines())
    assert protocol_findings.main(["--run", str(out), "--recheck", str(tmp_path / "again"), "--out", str(page)]) == 0
    assert f"of chain: {n} of {n} records equal bit for bit" in page.read_text()
    assert protocol_findings.main(["--out", str(page)]) == 0 and "## Reproduced" in page.read_text()
