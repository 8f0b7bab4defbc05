"""Tests of the practitioners' learning-rate searches (amutheory.tuning's baselines) and the rate
schedule they need on a cell:

1. ``Cell.schedule`` (``exp-ramp:HI``): validation, the keys of unscheduled cells unchanged, and
   the rates a scheduled run's steps really use (against a hand-written float64 SGD loop);
2. the LR range test: its smoothing and three suggestions on made-up curves, then real ramps;
3. successive halving: the rungs, the ranking and the charging on hand-made records (a table the
   runner finds them in, so nothing trains), then a real tiny grid;
4. the Optuna study (skipped without optuna): a real tiny study, its charging and its replay.

Every real run is the built-in conv net at depth 2, width 4 on 8-position synthetic data, a few
dozen steps on one thread."""

import json
import math

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from amutheory.spec import ArchSpec
from amutheory.train import run as R
from amutheory.train.cell import Cell
from amutheory.train.store import TABLE, read_table
from amutheory.tuning import halving as H
from amutheory.tuning import range_test as RT

SPEC = ArchSpec(family="conv", dim=1, depth=2, width=4, kernel=3, spatial=8, input_channels=3, outputs=10)
RUN = dict(engine="local", workers=1, threads=1, vectorise=True, scheduler=None)


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)
    yield


def _cell(**kw) -> Cell:
    d = dict(spec=SPEC, lr=0.1, dataset="synthetic", steps=20, batch_size=16)
    d.update(kw)
    return Cell(**d)


def _lines(out) -> int:
    path = out / TABLE
    return len(path.read_text().splitlines()) if path.exists() else 0


# ----------------------------------------------------------------------------- 1. Cell.schedule


def test_keys_of_cells_without_a_schedule_are_unchanged():
    """Computed with the code from before ``schedule`` existed (commit 6d3a958) and hard-coded: a
    results table written before the field keeps resolving."""
    spec8 = ArchSpec(dim=1, depth=2, width=8, kernel=3, spatial=8, input_channels=3, outputs=10)
    assert _cell().key() == "ef293acbc286d2fb"
    assert _cell(lr=0.05, seed=3, optimizer="adam", steps=30, batch_size=8).key() == "1b934ef65a606ee7"
    assert _cell().group_key() == "44ae783f36205c0e"
    assert Cell(spec=spec8, lr=0.1, dataset="synthetic", steps=20, batch_size=16).key() == "21653d9ac56200d4"
    assert Cell(spec=spec8, lr=0.3, momentum=0.9, weight_decay=1e-4, steps=20, batch_size=16,
                dropout=0.1).key() == "b08f2ec26544ea66"
    assert "schedule" not in _cell().identity() and "schedule" not in _cell().to_dict()


def test_a_schedule_is_part_of_the_key_and_round_trips():
    c = _cell(schedule="exp-ramp:10.0")
    assert c.key() != _cell().key() and c.group_key() != _cell().group_key()
    assert c.identity()["schedule"] == "exp-ramp:10.0"
    assert _cell(schedule="exp-ramp:10.0").key() == c.key() != _cell(schedule="exp-ramp:20.0").key()
    assert Cell.from_dict(json.loads(json.dumps(c.to_dict()))) == c
    assert Cell.from_dict(_cell().to_dict()).schedule is None


@pytest.mark.parametrize("schedule", ["exp-ramp", "exp-ramp:", "linear:1.0", "cosine", "exp-ramp:abc",
                                      "exp-ramp:inf", "exp-ramp:nan", "exp-ramp:0.1", "exp-ramp:0.05",
                                      "exp-ramp:-3", "EXP-RAMP:1.0"])
def test_bad_schedules_are_refused_naming_schedule(schedule):
    with pytest.raises(ValueError, match="schedule"):
        _cell(lr=0.1, schedule=schedule)


def test_a_ramp_needs_two_steps_and_a_string():
    with pytest.raises(ValueError, match="schedule.*steps >= 2"):
        _cell(steps=1, schedule="exp-ramp:1.0")
    with pytest.raises(TypeError, match="schedule"):
        _cell(schedule=1.0)


def test_rate_at_ramps_exponentially_from_lr_to_hi():
    c = _cell(lr=1e-3, steps=11, schedule="exp-ramp:10.0")
    rates = [c.rate_at(t) for t in range(11)]
    assert rates[0] == pytest.approx(1e-3, rel=1e-12) and rates[-1] == pytest.approx(10.0, rel=1e-12)
    assert np.allclose(np.diff(np.log(rates)), math.log(1e4) / 10, rtol=1e-12)  # equal steps in ln(rate)
    assert [_cell().rate_at(t) for t in (0, 7, 19)] == [0.1, 0.1, 0.1]


def _manual_ramp_losses(cell: Cell) -> list[float]:
    """The cell's run written out by hand: same init, same minibatches, ``p <- p - lr_t grad`` with
    ``lr_t = lr (HI/lr)^(t/(steps-1))`` computed here, not by the cell."""
    hi = float(cell.schedule.split(":")[1])
    x, y, _, _ = R.cell_data(cell)
    net = R.build_network(cell).train()
    idx = R.batch_indices(x.shape[0], cell)
    losses = []
    for t in range(cell.steps):
        loss = F.cross_entropy(net(x[idx[t]]), y[idx[t]])
        grads = torch.autograd.grad(loss, list(net.parameters()))
        losses.append(float(loss.detach()))
        with torch.no_grad():
            for p, g in zip(net.parameters(), grads):
                p -= cell.lr * (hi / cell.lr) ** (t / (cell.steps - 1)) * g
    return losses


def test_a_scheduled_run_uses_the_ramped_rate_at_every_step():
    cell = _cell(lr=0.01, steps=12, dtype="float64", schedule="exp-ramp:3.0")
    rec = R.train_cell(cell)
    want = _manual_ramp_losses(cell)
    assert not rec["diverged"] and rec["curve"]["step"] == list(range(12))
    assert np.allclose(rec["curve"]["loss"], want, rtol=1e-12, atol=0)
    # the check can fail: the constant-rate run, and the ramp one step late, give other losses
    flat = R.train_cell(cell.with_(schedule=None))["curve"]["loss"]
    assert not np.allclose(flat[2:], want[2:], rtol=1e-6)
    late = _manual_ramp_losses(cell.with_(lr=0.01 * (3.0 / 0.01) ** (1 / 11)))
    assert not np.allclose(late[2:], want[2:], rtol=1e-6)


def test_train_group_runs_scheduled_cells_in_the_loop():
    cells = [_cell(lr=lr, steps=8, schedule="exp-ramp:5.0") for lr in (0.01, 0.1)]
    recs = R.train_group(cells)
    assert [r["mode"] for r in recs] == ["loop", "loop"]
    for c, r in zip(cells, recs):
        assert r["cell"]["schedule"] == "exp-ramp:5.0"
        assert r["curve"]["loss"] == R.train_cell(c)["curve"]["loss"]


# ----------------------------------------------------------------------------- 2. the range test


def test_smooth_is_the_debiased_moving_average():
    losses = np.array([3.0, 1.0, 2.0, 5.0])
    got = RT.smooth(losses, beta=0.9)
    avg, want = 0.0, []
    for t, v in enumerate(losses):
        avg = 0.9 * avg + 0.1 * v
        want.append(avg / (1 - 0.9 ** (t + 1)))
    assert np.allclose(got, want, rtol=1e-14) and got[0] == 3.0
    assert np.allclose(RT.smooth(np.full(50, 2.5)), 2.5, rtol=1e-12)  # unbiased from the first point
    assert RT.SMOOTHING == 0.98


def test_suggestions_on_made_up_curves():
    rates = np.geomspace(1e-4, 10, 101)
    x = np.log(rates)
    # a sigmoid drop centred at ln(1e-2): falls fastest there; minimum at the last point
    drop = 2 - np.tanh(2 * (x - math.log(1e-2)))
    assert RT.steepest(rates, drop) == pytest.approx(1e-2, rel=1e-9)
    assert RT.min_over_10(rates, drop) == pytest.approx(1.0)
    assert RT.steepest(rates, np.exp(x)) is None  # never falls
    # a short dip at points 0-3, the long one at 10-40 (then up): 2/3 of the way is point 30
    curve = np.concatenate([[5, 4, 3, 2, 6, 6, 6, 6, 6, 6], np.linspace(6, 1, 31), np.linspace(1.5, 9, 60)])
    assert RT.valley(rates, curve) == rates[30]
    assert RT.min_over_10(rates, curve) == pytest.approx(rates[40] / 10)
    assert RT.valley(rates, np.linspace(1, 2, 101)) is None


def test_long_ramps_read_the_evenly_spaced_kept_steps():
    cell = _cell(lr=1e-3, steps=1000, schedule="exp-ramp:1.0")
    steps = R.curve_steps(1000).tolist()
    assert 9 in steps and 29 in steps and len(steps) > 200  # the horizon marks are kept ...
    rec = {"cell": cell.to_dict(), "backward_passes": 1000,
           "curve": {"step": steps, "loss": [2.0 - s / 1000 for s in steps]}}
    rates, losses = RT.ramp_points(rec)
    assert len(rates) == 200  # ... but not read: the points stay evenly spaced in ln(rate)
    gaps = np.diff(np.log(rates)) / (math.log(1e3) / 999)
    assert set(np.round(gaps, 9).tolist()) == {5.0, 6.0}  # 999 steps / 199 gaps: 5 or 6 steps each
    assert rates[0] == pytest.approx(1e-3) and rates[-1] == pytest.approx(1.0)


@pytest.mark.parametrize("lo, hi, steps, error", [(0.0, 1.0, 50, ValueError), (-1, 1.0, 50, ValueError),
                                                  (1.0, 1.0, 50, ValueError), (1.0, 0.1, 50, ValueError),
                                                  (1e-3, math.inf, 50, ValueError), (1e-3, 1.0, 2, ValueError),
                                                  (1e-3, 1.0, 50.5, TypeError)])
def test_range_test_refuses_bad_ramps(tmp_path, lo, hi, steps, error):
    with pytest.raises(error, match="lo|hi|steps"):
        RT.range_test(_cell(), 2, 4, lo, hi, [0], steps, out=tmp_path, table={}, run_opts=RUN)
    assert _lines(tmp_path) == 0


def test_range_test_runs_one_ramp_per_seed_and_resumes(tmp_path):
    res = RT.range_test(_cell(), 2, 4, 1e-3, 1e4, [0, 1], steps=60, out=tmp_path, table={}, run_opts=RUN)
    assert res["method"] == "range_test" and set(res["suggestions"]) == {"steepest", "valley", "min/10"}
    table = read_table(tmp_path)
    assert len(table) == 2 and _lines(tmp_path) == 2
    for trial, seed in zip(res["trials"], (0, 1)):
        rec = table[trial["key"]]
        assert trial["seed"] == seed and trial["lr"] == 1e-3 and trial["schedule"] == "exp-ramp:10000.0"
        assert rec["cell"]["schedule"] == "exp-ramp:10000.0" and rec["cell"]["spec"]["width"] == 4
        assert trial["steps_run"] == rec["backward_passes"] <= 60
    # a ramp to 1e4 blows this net up before its end: the project's divergence rule stops it
    assert any(t["diverged"] and t["steps_run"] < 60 for t in res["trials"])
    for name, s in res["suggestions"].items():
        vals = [v for v in s["per_seed"] if v is not None]
        assert len(s["per_seed"]) == 2 and vals
        assert s["lr"] == pytest.approx(math.exp(np.mean(np.log(vals))))
        assert all(1e-4 <= v <= 1e4 for v in vals)
    assert res["cost"]["cells"] == 2
    assert res["cost"]["steps"] == sum(t["steps_run"] for t in res["trials"])
    json.dumps(res)
    again = RT.range_test(_cell(), 2, 4, 1e-3, 1e4, [0, 1], steps=60, out=tmp_path, table=table, run_opts=RUN)
    assert _lines(tmp_path) == 2 and again["suggestions"] == res["suggestions"]


def test_suggest_reads_the_rates_of_the_steps(tmp_path):
    """One real ramp: the suggestions are rates the ramp visited, recomputed from its curve."""
    cell = RT.ramp_cell(_cell(), 2, 4, 1e-3, 10.0, 0, 40)
    rec = R.train_cell(cell)
    rates, losses = RT.ramp_points(rec)
    assert np.allclose(rates, [cell.rate_at(t) for t in range(len(rates))], rtol=1e-12)
    got = RT.suggest(rec, 40)
    sm = RT.smooth(losses)
    cut = slice(4, len(rates) - 5)
    assert got["min/10"] == pytest.approx(rates[cut][np.argmin(sm[cut])] / 10)
    for v in got.values():
        assert v is None or np.isclose(v, rates).any() or np.isclose(v * 10, rates).any()


# ----------------------------------------------------------------------------- 3. successive halving


def test_rungs_of_27_rates():
    plan = H.rungs(27, 270, 3)
    assert [r["budget"] for r in plan] == [10, 30, 90, 270]
    assert [r["read"] for r in plan] == [9, 29, 89, 269]
    assert [r["survivors"] for r in plan] == [27, 9, 3, 1]
    assert [r["read"] for r in H.rungs(27, 100, 3)] == [2, 10, 32, 99]  # s + 1 <= 100/27, 100/9, 100/3
    assert H.rung_count(26, 3) == 2 and H.rung_count(27, 3) == 3 and H.rung_count(8, 2) == 3
    with pytest.raises(ValueError, match="steps = 20 is too few"):
        H.rungs(27, 20, 3)


def _fake(lr: float, seed: int, means: list[float], diverged_at: int | None = None, steps: int = 9) -> dict:
    """A record shaped like the engine's, of a run whose running mean loss is ``means``."""
    ran = steps if diverged_at is None else diverged_at + 1
    return {"key": f"{lr}-{seed}", "diverged": diverged_at is not None, "diverged_step": diverged_at,
            "curve": {"step": list(range(ran)), "mean_to": means[:ran]},
            "backward_passes": ran, "forward_passes": ran + (0 if diverged_at is not None else 1),
            "timing": {"wall_s": 0.9 * ran}}


#: nine rates, T = 9 steps, eta = 3: rungs at 1, 3, 9 steps, 9 -> 3 -> 1 survivors.  Made so that
#: each rung's ranking differs from the final scores' (a reading at the wrong step is caught).
CURVES = {  # rate: (mean_to at steps 0..8, seed 0), seed 1 is it + 0.1; divergence step
    0.001: ([5.0] * 9, None),
    0.003: ([4.0, 4.0, 4.0, 3.9, 3.9, 3.9, 3.9, 3.9, 3.9], None),
    0.01: ([3.0, 3.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 0.5], None),
    0.03: ([2.0, 2.0, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 0.1], None),
    0.1: ([1.0, 1.0, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5], None),
    0.3: ([0.5, 0.5, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 0.05], None),
    1.0: ([0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 9.0, 9.0, 9.0], 6),  # best until it diverges at step 6
    3.0: ([0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2], 1),  # diverges at step 1
    10.0: ([9.0] * 9, 0),
}


def _fake_grid(seeds=(0, 1)):
    lrs = list(CURVES)
    records = [[_fake(lr, s, [v + 0.1 * s for v in CURVES[lr][0]], CURVES[lr][1]) for s in seeds] for lr in lrs]
    return lrs, records


def test_halve_ranks_each_rung_by_its_prefix_and_charges_what_it_read():
    lrs, records = _fake_grid()
    res = H.halve(lrs, records, steps=9, eta=3)
    r0, r1, r2 = res["rungs"]
    assert [r["steps"] for r in res["rungs"]] == [1, 3, 9]
    # rung 0 reads step 0 (3.0 diverged at step 1 > 0, so it still reads): 1.0, 3.0, 0.3 lead
    assert r0["rates"] == lrs and r0["scores"][lrs.index(3.0)] == pytest.approx(0.25)
    assert r0["scores"][lrs.index(10.0)] is None  # diverged at step 0: +inf
    assert r0["kept"] == [0.3, 1.0, 3.0]
    # rung 1 reads step 2: 3.0 has diverged (inf); 1.0 leads, then 0.3 (3.05) ... kept: 1.0 only
    assert r1["rates"] == [0.3, 1.0, 3.0] and r1["scores"] == [pytest.approx(3.05), pytest.approx(0.15), None]
    assert r1["kept"] == [1.0]
    # the last rung reads step 8: 1.0 diverged at 6 -> inf; it is the only survivor, so no winner
    assert r2["rates"] == [1.0] and r2["scores"] == [None] and res["lr"] is None
    charged = dict(zip(lrs, res["charged"]))
    assert charged == {0.001: 1, 0.003: 1, 0.01: 1, 0.03: 1, 0.1: 1, 0.3: 3, 1.0: 9, 3.0: 3, 10.0: 1}


def test_halve_picks_the_best_survivor_and_breaks_ties_by_order():
    lrs = [0.1, 0.2, 0.3, 0.4]  # K = 1 at eta = 3: rungs 3 and 9 steps, 4 -> 1 survivor
    means = {0.1: [1.0] * 9, 0.2: [2.0, 2.0, 0.5] + [0.7] * 6, 0.3: [2.0, 2.0, 0.5] + [0.2] * 6, 0.4: [0.9] * 9}
    records = [[_fake(lr, 0, means[lr])] for lr in lrs]
    res = H.halve(lrs, records, steps=9, eta=3)
    assert res["rungs"][0]["kept"] == [0.2]  # 0.2 and 0.3 tie at 0.5: the first in lrs goes on
    assert res["lr"] == 0.2 and res["charged"] == [3, 9, 3, 3]


def test_successive_halving_charges_prefixes_of_the_table_it_finds(tmp_path):
    """The records are put in the table under the cells' keys: the runner trains nothing, and the
    cost is exactly the hand-computed prefix charge."""
    template = _cell(steps=9)
    lrs, records = _fake_grid()
    table = {}
    for lr, row in zip(lrs, records):
        for s, rec in enumerate(row):
            rec["key"] = template.with_(lr=lr, seed=s).key()
            table[rec["key"]] = rec
    res = H.successive_halving(template, 2, 4, lrs, [0, 1], out=tmp_path, table=table, run_opts=RUN)
    assert _lines(tmp_path) == 0 and res["lr"] is None and res["method"] == "successive_halving"
    steps = {0.001: 1, 0.003: 1, 0.01: 1, 0.03: 1, 0.1: 1, 0.3: 3, 1.0: 7, 3.0: 2, 10.0: 1}  # capped at what ran
    assert [t["steps_charged"] for t in res["trials"]] == [steps[lr] for lr in lrs for _ in (0, 1)]
    assert res["cost"]["steps"] == 2 * sum(steps.values()) == res["cost"]["forward_passes"]
    assert res["cost"]["cells"] == 18
    # prefix core-seconds: wall x t / ran, i.e. 0.9 per step read; a run read to its end is charged whole
    assert res["cost"]["core_seconds"] == pytest.approx(0.9 * res["cost"]["steps"])
    ran = sum(r["backward_passes"] for row in records for r in row)
    assert res["cost_run"]["steps"] == ran and res["cost_run"]["forward_passes"] == ran + 2 * 6
    json.dumps(res)


def test_successive_halving_refuses_bad_input(tmp_path):
    with pytest.raises(ValueError, match="too few"):
        H.successive_halving(_cell(steps=20), 2, 4, list(np.geomspace(1e-3, 1, 27)), [0], out=tmp_path,
                             table={}, run_opts=RUN)
    with pytest.raises(ValueError, match="lrs"):
        H.successive_halving(_cell(), 2, 4, [0.1], [0], out=tmp_path, table={}, run_opts=RUN)
    with pytest.raises(ValueError, match="eta"):
        H.successive_halving(_cell(), 2, 4, [0.1, 0.2], [0], eta=1, out=tmp_path, table={}, run_opts=RUN)
    with pytest.raises(ValueError, match="seeds"):
        H.successive_halving(_cell(), 2, 4, [0.1, 0.2], [], out=tmp_path, table={}, run_opts=RUN)
    assert _lines(tmp_path) == 0


def test_successive_halving_on_a_real_grid(tmp_path):
    template = _cell(steps=27)
    lrs = np.geomspace(1e-3, 30, 9).tolist()
    res = H.successive_halving(template, 2, 4, lrs, [0, 1], out=tmp_path, table={}, run_opts=RUN)
    table = read_table(tmp_path)
    assert len(table) == 18
    assert {table[t["key"]]["mode"] for t in res["trials"]} == {"vectorised"}
    assert [len(r["rates"]) for r in res["rungs"]] == [9, 3, 1] and [r["steps"] for r in res["rungs"]] == [3, 9, 27]
    assert res["lr"] == res["rungs"][-1]["kept"][0] and res["lr"] in res["rungs"][1]["kept"]
    # each rung's scores are the seed-mean running means at its step, read straight off the records
    for rung in res["rungs"]:
        for lr, score in zip(rung["rates"], rung["scores"]):
            recs = [table[template.with_(lr=lr, seed=s).key()] for s in (0, 1)]
            vals = [H.score_at(r, rung["steps"] - 1) for r in recs]
            assert (score is None and math.inf in vals) or score == pytest.approx(np.mean(vals))
        by_score = sorted(rung["rates"], key=lambda lr: (rung["scores"][rung["rates"].index(lr)] or math.inf))
        assert sorted(rung["kept"]) == sorted(by_score[:len(rung["kept"])])
    assert res["cost"]["steps"] == sum(t["steps_charged"] for t in res["trials"]) < res["cost_run"]["steps"]
    assert res["cost_run"]["steps"] == sum(r["backward_passes"] for r in table.values())


# ----------------------------------------------------------------------------- 4. Optuna


def test_optuna_search_says_how_to_install_it(tmp_path, monkeypatch):
    import sys

    from amutheory.tuning import optuna_search as O

    monkeypatch.setitem(sys.modules, "optuna", None)  # import optuna -> ImportError, as when missing
    with pytest.raises(ValueError, match=r"needs optuna: pip install 'amutheory\[tune\]'"):
        O.optuna_search(_cell(), 2, 4, 1e-3, 1.0, out=tmp_path, table={}, run_opts=RUN)


def test_report_points():
    from amutheory.tuning.optuna_search import report_points

    assert report_points(100, 3) == [3, 9, 27, 81, 100]
    assert report_points(27, 1) == [1, 3, 9, 27]
    assert report_points(5, 5) == [5]


def test_optuna_study_on_a_real_net(tmp_path):
    pytest.importorskip("optuna")
    from amutheory.tuning.optuna_search import optuna_search

    template = _cell(steps=27)
    kw = dict(n_trials=12, batch=4, min_resource=3, out=tmp_path, run_opts=RUN)
    res = optuna_search(template, 2, 4, 1e-3, 30.0, table={}, **kw)
    table = read_table(tmp_path)
    trials = res["trials"]
    assert res["method"] == "optuna" and len(trials) == 12 and res["report_steps"] == [3, 9, 27]
    assert all(1e-3 <= t["lr"] <= 30.0 for t in trials)
    assert {t["state"] for t in trials} <= {"complete", "pruned"} and any(t["state"] == "pruned" for t in trials)
    done = [t for t in trials if t["state"] == "complete" and t["value"] is not None]
    assert res["lr"] == min(done, key=lambda t: t["value"])["lr"]
    for t in trials:
        rec = table[t["keys"][0]]
        if t["state"] == "complete" and not rec["diverged"]:
            assert t["steps_charged"] == [27] and t["value"] == pytest.approx(rec["score"])
        else:
            assert t["steps_charged"][0] in (3, 9, 27) or rec["diverged"]
    assert res["cost"]["steps"] == sum(s for t in trials for s in t["steps_charged"])
    assert res["cost"]["steps"] < res["cost_run"]["steps"] == sum(r["backward_passes"] for r in table.values())
    json.dumps(res)
    # the same study from the same table: the same decisions, nothing trained again
    lines = _lines(tmp_path)
    again = optuna_search(template, 2, 4, 1e-3, 30.0, table=table, **kw)
    assert _lines(tmp_path) == lines and again["trials"] == trials and again["lr"] == res["lr"]
