"""The guided learning-rate search: its fit, its decision rule, and ``tune`` on real tiny nets
(the JSON contract, resume without retraining, after ``kill -9``, and the same answer on Dask)."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from amutheory.spec import ArchSpec
from amutheory.train import Cell
from amutheory.tuning.fit import fitted_loss, vertex, vertex_interval
from amutheory.tuning.guided import STOPS, Bracket, pooled_sd, search

SPEC = ArchSpec(dim=1, depth=2, width=8, kernel=3, spatial=8, input_channels=3, outputs=10)
TEMPLATE = Cell(spec=SPEC, lr=0.1, steps=20, batch_size=16)


# --------------------------------------------------------------------------- the fit
@pytest.mark.parametrize("x0,a", [(0.3, 1.0), (-1.1, 0.2), (0.05, 5.0)])
def test_vertex_of_a_parabola(x0, a):
    x = np.log(0.5) + np.arange(7) * 0.35
    y = a * (x - (np.log(0.5) + 1.05 + x0)) ** 2 + 2.0
    v, flags = vertex(x, y)
    if flags:  # the vertex beyond the window: the best point is kept and said
        assert "outside" in flags or "edge" in flags
    else:
        assert v == pytest.approx(np.log(0.5) + 1.05 + x0, abs=1e-9)
        assert fitted_loss(x, y, v) == pytest.approx(2.0, abs=1e-9)


def test_vertex_flags():
    x = np.arange(5.0)
    assert vertex(x, np.full(5, np.inf))[1] == ["all-diverged"]
    assert "edge" in vertex(x, np.array([1.0, 2, 3, 4, 5]))[1]
    v, flags = vertex(x, np.array([5.0, 2.0, 1.0, 2.0, np.inf]))
    assert flags == [] and v == pytest.approx(2.0, abs=1e-9)  # a diverged point is left out of the fit
    assert "no-curvature" in vertex(x, np.array([1.0, 1.5, 0.9, 1.4, 0.95]))[1]


def test_vertex_interval_needs_two_seeds_and_covers_a_noisy_truth():
    x = np.log(0.1) + np.arange(5) * math.log(math.sqrt(2))
    truth = x[2] + 0.1
    rng = np.random.default_rng(0)
    per = [list(0.5 * (xi - truth) ** 2 + 1 + 0.01 * rng.standard_normal(6)) for xi in x]
    assert vertex_interval(x, [p[:1] for p in per]) is None  # no rate with two seeds: no spread
    lo, hi = vertex_interval(x, per)
    assert lo < truth < hi and hi - lo < 0.3


# --------------------------------------------------------------------------- the decision rule
def _loss(lr: float, seed: int, opt: float, noise: float = 0.01) -> float:
    """A seeded smooth loss in ln(lr) with its minimum at ``opt`` that diverges past 8 opt (a stand-in
    for training, to test the decisions alone; real runs are tested below)."""
    if lr > 8 * opt:
        return math.inf
    r = np.random.default_rng([seed, int(round(math.log(lr) * 1e6)) % 2**31])
    return 0.3 * math.log(lr / opt) ** 2 + 1.0 + noise * float(r.standard_normal())


def _run_fn(opt, log, noise=0.01):
    def run(requests):
        log.append(list(requests))
        return [{"score": None if not math.isfinite(v := _loss(lr, s, opt, noise)) else v} for lr, s in requests]
    return run


def test_search_moves_the_bracket_and_lands_on_the_optimum():
    log: list = []
    res = search(0.01, Bracket(), list(range(5)), _run_fn(0.2, log))  # the prior 20x too low
    assert res["eta_star_train"] == pytest.approx(0.2, rel=0.25)
    assert res["runs"] <= Bracket().max_runs
    lo, hi = res["eta_star_train_ci"]
    assert lo <= res["eta_star_train"] <= hi
    moves = log[1:4]  # two new rates on one seed each, galloping: 1 and 2 steps, then 2 and 4, then 4 and 8
    assert [len(req) for req in moves] == [2, 2, 2] and all(s == 0 for req in moves for _, s in req)
    steps = [round(math.log(lr / 0.01) / math.log(math.sqrt(2))) for req in moves for lr, _ in req]
    assert steps == [3, 4, 6, 8, 12, 16]


def test_search_stops_converged_when_the_noise_is_small_and_is_replayable():
    log1: list = []
    res = search(0.15, Bracket(), list(range(5)), _run_fn(0.2, log1, noise=0.001))
    assert res["stop"] == "converged", res
    assert abs(math.log(res["eta_star_train"] / 0.2)) < 0.1
    log2: list = []
    again = search(0.15, Bracket(), list(range(5)), _run_fn(0.2, log2, noise=0.001))
    assert log1 == log2 and again["eta_star_train"] == res["eta_star_train"]  # the same cells, the same answer


def test_search_never_passes_its_budget_and_says_so():
    res = search(0.2, Bracket(max_runs=12), list(range(5)), _run_fn(0.2, [], noise=0.2))
    assert res["runs"] <= 12 and res["stop"] in STOPS
    far = search(0.001, Bracket(max_runs=12), list(range(5)), _run_fn(0.2, []))  # no room to reach the optimum
    assert far["runs"] <= 12 and far["stop"] == "budget" and "unbracketed" in far["flags"]


def test_seeds_are_added_only_where_two_rates_are_too_close_to_call():
    log: list = []
    search(0.2, Bracket(), list(range(5)), _run_fn(0.2, log, noise=0.001))
    added = [r for req in log[1:] for r in req]
    assert added and all(s >= 2 for _, s in added)  # later rounds add seeds, not rates
    assert len({lr for lr, _ in added}) < 5  # never the whole bracket again


def test_pooled_sd():
    assert pooled_sd([[1.0], [2.0]]) is None
    assert pooled_sd([[1.0, 3.0], [0.0, 2.0], [math.inf, 1.0]]) == pytest.approx(math.sqrt(2.0))


@pytest.mark.parametrize("kw,match", [({"points": 2}, "points"), ({"factor": 1.0}, "factor"),
                                      ({"factor": 50.0}, "factor"), ({"tolerance": 0.0}, "tolerance"),
                                      ({"max_runs": 9}, "max_runs"), ({"min_seeds": 1}, "min_seeds")])
def test_bracket_refuses_bad_settings(kw, match):
    with pytest.raises(ValueError, match=match):
        Bracket(**kw)


# --------------------------------------------------------------------------- tune on real nets
CONTRACT = ("eta_star_train", "eta_star_train_ci", "targets", "trials", "cost", "stop", "prior", "from")


@pytest.mark.parametrize("method", ["fidelity", "bracket"])
def test_tune_json_contract_and_resume(tmp_path, method):
    from amutheory.tuning.pipeline import tune

    opts = dict(from_depth=2, from_lr=0.3, out=tmp_path, seeds=3, bracket=Bracket(max_runs=12), figures=False,
                method=method)
    s = tune(TEMPLATE, 3, **opts)
    assert set(CONTRACT) <= set(s) and s["search"] == method
    assert isinstance(s["eta_star_train"], float) and len(s["targets"]) == 1
    assert set(s["cost"]) >= {"cells", "steps", "forward_passes", "core_seconds", "prior", "confirmation"}
    assert s["cost"]["prior"]["cells"] == 0 and s["cost"]["cells"] == len(s["trials"]) == s["targets"][0]["runs"]
    table = [json.loads(line) for line in (tmp_path / "cells.jsonl").read_text().splitlines()]
    assert sorted(t["key"] for t in s["trials"]) == sorted(r["key"] for r in table)  # every cell trained, once
    assert s["cost"]["steps"] == sum(r["trained_steps"] for r in table)
    # no step of a run trained twice: the rungs of one run cover its steps once
    runs: dict = {}
    for r in table:
        runs.setdefault(Cell.from_dict(r["cell"]).run_key(), []).append(r)
    for recs in runs.values():
        assert sum(r["trained_steps"] for r in recs) == max(r["backward_passes"] for r in recs)
    if method == "fidelity":
        assert any(r["resumed_from"] > 0 for r in table) and s["eta_star_train_ci"] is None and s["ci_reason"]
    again = tune(TEMPLATE, 3, **opts)
    assert again["this_run"]["cells_trained"] == 0
    assert again["eta_star_train"] == s["eta_star_train"] and again["trials"] == s["trials"]
    assert (tmp_path / "tune.json").is_file() and (tmp_path / "tune.md").is_file()


def test_tune_several_depths_gives_targets(tmp_path):
    from amutheory.tuning.pipeline import tune

    s = tune(TEMPLATE, [3, 4], from_depth=2, from_lr=0.3, out=tmp_path, seeds=2, bracket=Bracket(max_runs=10),
             figures=True)
    assert [t["depth"] for t in s["targets"]] == [3, 4] and "eta_star_train" not in s
    assert (tmp_path / "tune.png").is_file()
    assert s["cost"]["cells"] == sum(t["cost"]["cells"] for t in s["targets"])


def test_tune_refuses_bad_input(tmp_path):
    from amutheory.tuning.pipeline import tune

    for kw, match in (({"from_lr": -1.0}, "from_lr"), ({"from_lr_ci": (0.5, 0.6)}, "lr_ci"),
                      ({"rule": "nope"}, "rule"), ({"seeds": 1}, "seeds")):
        args = dict(from_depth=2, from_lr=0.3, out=tmp_path, figures=False) | kw
        with pytest.raises(ValueError, match=match):
            tune(TEMPLATE, 3, **args)
    with pytest.raises(TypeError, match="template"):
        tune("conv", 3, from_depth=2, from_lr=0.3, out=tmp_path)


ARGS = ["tune", "--dim", "1", "--width", "8", "--spatial", "8", "--input-channels", "3", "--steps", "20",
        "--batch-size", "16", "--from-depth", "2", "--from-lr", "0.3", "--depths", "3,4", "--seeds", "3",
        "--workers", "1", "--no-figures", "--json", "--quiet"]


def _cli(out, *extra):
    return subprocess.run([sys.executable, "-m", "amutheory", *ARGS, "--out", str(out), *extra],
                          capture_output=True, text=True, timeout=600)


def _answer(summary: dict) -> list:
    return [(t["depth"], t["eta_star_train"], t["eta_star_train_ci"], t["runs"]) for t in summary["targets"]]


@pytest.mark.slow
def test_tune_resumes_after_kill_9_without_training_a_cell_twice(tmp_path):
    ref = _cli(tmp_path / "ref")
    assert ref.returncode == 0, ref.stderr[-2000:]
    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "amutheory", *ARGS, "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    table = out / "cells.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline and (not table.exists() or len(table.read_text().splitlines()) < 10):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = len(table.read_text().splitlines())
    assert 0 < done_before < 24
    res = _cli(out)
    assert res.returncode == 0, res.stderr[-2000:]
    s = json.loads(res.stdout)
    keys = [json.loads(line)["key"] for line in table.read_text().splitlines() if line.strip()]
    assert len(keys) == len(set(keys))  # no cell trained twice
    assert s["this_run"]["cells_trained"] == s["cost"]["cells"] - done_before
    assert _answer(s) == _answer(json.loads(ref.stdout))


@pytest.mark.slow
def test_tune_gives_the_same_answer_on_a_local_dask_cluster(tmp_path):
    pytest.importorskip("dask.distributed")
    ref = _cli(tmp_path / "local")
    dask = _cli(tmp_path / "dask", "--engine", "dask", "--workers", "2")
    assert ref.returncode == 0 and dask.returncode == 0, dask.stderr[-2000:]
    assert _answer(json.loads(dask.stdout)) == _answer(json.loads(ref.stdout))


USER_MODEL = '''
from torch import nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm, self.lin = nn.LayerNorm(width), nn.Linear(width, width)

    def forward(self, x):
        return x + self.lin(self.norm(x)).relu()


def make(depth, width=8):
    return nn.Sequential(nn.Flatten(), nn.Linear(24, width), *[Block(width) for _ in range(depth)],
                         nn.Linear(width, 10))
'''


def test_tune_on_a_users_model_from_the_command_line(tmp_path, capsys):
    from amutheory.cli import main

    (tmp_path / "models.py").write_text(USER_MODEL)
    code = main(["tune", "--model", f"{tmp_path / 'models.py'}:make", "--width", "8", "--spatial", "8",
                 "--input-channels", "3", "--steps", "20", "--batch-size", "16", "--from-depth", "1",
                 "--from-lr", "0.2", "--depth", "3", "--seeds", "3", "--max-runs", "12", "--workers", "1",
                 "--out", str(tmp_path / "t"), "--no-figures", "--json", "--quiet", "--method", "bracket"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["prior"]["confidence"]["resolved_as"] == "residual"  # read off the user's traced graph
    assert out["template"]["model"].endswith("models.py:make") and out["runs"] <= 12
    assert isinstance(out["eta_star_train"], float)
    # described as the model it is, not with the conv chain's defaults
    assert out["template"]["spec"]["family"] == "module" and out["template"]["spec"]["padding"] is None
    assert out["model"]["kind"] == "residual" and out["model"]["factory"].endswith("models.py:make")
    assert set(out["model"]["effective_depths"]) == {"3"} and out["model"]["input_shape"][0] == 3


def test_tune_refuses_a_setting_of_the_other_search(tmp_path, capsys):
    from amutheory.cli import main

    base = ["tune", "--dim", "1", "--width", "8", "--spatial", "8", "--input-channels", "3", "--steps", "20",
            "--batch-size", "16", "--from-depth", "2", "--from-lr", "0.3", "--depth", "3", "--workers", "1"]
    for extra, said in ((["--max-runs", "12"], "--method bracket"), (["--bracket", "7"], "--method bracket"),
                        (["--method", "bracket", "--confirm-seeds", "2"], "--confirm-seeds"),
                        (["--confirm-seeds", "0"], "confirm_seeds"), (["--confirm-seeds", "6"], "confirm_seeds")):
        out = tmp_path / f"t{len(extra)}{extra[-1]}"
        assert main([*base, "--out", str(out), *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and said in err[0]
        assert not out.exists()  # refused before any work


def test_tune_with_a_seed_interval_from_the_command_line(tmp_path):
    """The documented recipe ``amutheory tune ... --confirm-seeds 2``, run as a user runs it: the best rate
    at the final horizon and its two neighbours get a second seed, and the answer has its 95% CI."""
    res = subprocess.run([sys.executable, "-m", "amutheory", "tune", "--dim", "1", "--width", "16", "--dataset",
                          "digits", "--steps", "200", "--batch-size", "32", "--from-depth", "2", "--from-lr", "0.3",
                          "--depth", "3", "--confirm-seeds", "2", "--workers", "1", "--no-figures", "--json",
                          "--quiet", "--out", str(tmp_path / "t")], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    s = json.loads(res.stdout)
    assert s["search"] == "fidelity" and s["answer"] == "fit" and s["learns"] is True
    lo, hi = s["eta_star_train_ci"]
    assert lo <= s["eta_star_train"] <= hi and s["ci_reason"] is None
    second = [t for t in s["trials"] if t["seed"] == s["seeds"][1]]
    assert len(second) == 3 and all(t["horizon"] == 200 for t in second)
