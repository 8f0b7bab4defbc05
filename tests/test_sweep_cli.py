"""Tests of ``amutheory sweep``: one-line refusals of bad input, the ``--json`` contract and the
figures, resuming after ``kill -9``, and the engines (a local process pool, a Dask cluster made
by the test or by the library) writing the same rows as the in-process run.

Fast cases call :func:`amutheory.cli.main` in this process; the kill test runs
``python -m amutheory`` in a subprocess."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from amutheory.cli import main
from amutheory.train import store as S

CONTRACT = ("lrs", "loss_mean", "loss_ci", "diverged", "eta_star_train", "eta_star_train_ci", "eta_star_grid")
REPO = Path(__file__).resolve().parent.parent
#: a tiny synthetic sweep: 1-D conv chains of width 8, 20 steps of batch 16
TINY = ["sweep", "--dataset", "synthetic", "--dim", "1", "--width", "8", "--kernel", "3", "--steps", "20",
        "--batch-size", "16", "--seeds", "2", "--threads", "1", "--quiet"]
DIGITS = ["sweep", "--dataset", "digits", "--depths", "2", "--width", "8", "--seeds", "2", "--steps", "10",
          "--batch-size", "16", "--workers", "1", "--quiet", "--no-figures"]


@pytest.fixture(autouse=True)
def _one_thread():
    # nothing here is timed; the engines run on one thread each
    torch.set_num_threads(1)
    yield


def _rows(out) -> dict:
    """``{key: record minus timing}`` of ``out``'s table; fails on a key written twice."""
    rows = {}
    for line in (Path(out) / S.TABLE).read_text().splitlines():
        rec = json.loads(line)
        assert rec["key"] not in rows, f"key {rec['key']} written twice"
        rec.pop("timing")
        rows[rec["key"]] = rec
    return rows


def _first_difference(a: dict, b: dict) -> str:
    """Where two tables of rows differ first: the key and the fields (for a failure message)."""
    if set(a) != set(b):
        return f"keys differ: {sorted(set(a) ^ set(b))[:4]}"
    for k in sorted(a):
        if a[k] != b[k]:
            fields = [f for f in a[k] if a[k][f] != b[k].get(f)]
            detail = {f: (a[k][f], b[k].get(f)) for f in fields if f not in ("curve", "cell")}
            return f"row {k} ({a[k]['cell']['lr']}, seed {a[k]['cell']['seed']}): {fields} {detail}"
    return "equal"


def _strict_json(text: str) -> dict:
    def refuse(c):
        raise AssertionError(f"non-JSON constant {c} in the output")

    return json.loads(text, parse_constant=refuse)


# ----------------------------------------------------------------------------- 13. bad input

_BAD = {  # name: (flags, a word the one line must hold: the error is the one meant)
    "lrs-zero": (["--lrs", "0"], "lrs"),
    "lrs-negative": (["--lrs", "-1"], "lrs"),
    "lrs-nan": (["--lrs", "nan"], "nan"),
    "lrs-inf": (["--lrs", "0.1,inf"], "inf"),
    "lrs-repeated": (["--lrs", "0.1,0.1"], "repeated"),
    "steps-zero": (["--lrs", "0.1,0.2,0.4", "--steps", "0"], "--steps"),
    "batch-too-big": (["--lrs", "0.1,0.2,0.4", "--batch-size", "100000"], "1440"),
    "unknown-dataset": (["--lrs", "0.1,0.2,0.4", "--dataset", "nope"], "nope"),
    "mnist-missing-dir": (["--lrs", "0.1,0.2,0.4", "--dataset", "mnist", "--data-dir", "/nonexistent"], "/nonexistent"),
    "cifar-no-dir": (["--lrs", "0.1,0.2,0.4", "--dataset", "cifar10"], "--data-dir"),
    "probe-batch": (["--lrs", "0.1,0.2,0.4", "--batch", "4"], "--batch-size"),
    "probe-input-var": (["--lrs", "0.1,0.2,0.4", "--input-var", "2"], "--input-var"),
    "spatial-from-dataset": (["--lrs", "0.1,0.2,0.4", "--spatial", "16"], "--spatial"),
    "both-rate-flags": (["--lrs", "0.1,0.2,0.4", "--lr-range", "0.01,1"], "not both"),
    "no-rates": ([], "--lrs"),
    "range-reversed": (["--lr-range", "1,0.1"], "low < high"),
    "range-one-number": (["--lr-range", "0.1"], "two numbers"),
    "points-two": (["--lr-range", "0.01,1", "--points", "2"], "points"),
    "points-with-lrs": (["--lrs", "0.1,0.2,0.4", "--points", "5"], "--points"),
    "one-seed": (["--lrs", "0.1,0.2,0.4", "--seeds", "1"], "--seeds"),
    "workers-zero": (["--lrs", "0.1,0.2,0.4", "--workers", "0"], "--workers"),
    "refine-negative": (["--lrs", "0.1,0.2,0.4", "--refine", "-1"], "--refine"),
    "adam-momentum": (["--lrs", "0.1,0.2,0.4", "--optimizer", "adam", "--momentum", "0.9"], "momentum"),
    "transformer-batchnorm": (["--lrs", "0.1,0.2,0.4", "--family", "transformer", "--norm", "batch"], "norm"),
}


def _fails_with_one_line(capsys, argv) -> str:
    rc = main(argv)
    cap = capsys.readouterr()
    assert rc == 2, (rc, cap.err)
    lines = cap.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(("error:", "amutheory: error:")), cap.err
    assert "Traceback" not in cap.err and cap.out == ""
    return lines[0]


@pytest.mark.parametrize("name", list(_BAD))
def test_bad_input_one_line_exit_2_nothing_written(name, tmp_path, capsys):
    out = tmp_path / "out"
    flags, word = _BAD[name]
    assert word in _fails_with_one_line(capsys, DIGITS + ["--out", str(out)] + flags)
    assert not out.exists()


def test_out_is_a_file(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_bytes(b"not a folder")
    line = _fails_with_one_line(capsys, DIGITS + ["--lrs", "0.1,0.2,0.4", "--out", str(f)])
    assert "not a folder" in line and f.read_bytes() == b"not a folder"


def test_out_holding_another_sweep_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(DIGITS + ["--lrs", "0.01,0.1,1", "--out", str(out)]) == 0
    capsys.readouterr()
    table, meta = (out / S.TABLE).read_bytes(), (out / S.META).read_bytes()
    assert len(table.splitlines()) == 6
    line = _fails_with_one_line(capsys, DIGITS + ["--lrs", "0.01,0.1,1", "--out", str(out), "--optimizer", "adam"])
    assert "optimizer" in line
    line = _fails_with_one_line(capsys, DIGITS + ["--lrs", "0.01,0.1,1", "--out", str(out), "--steps", "11"])
    assert "steps" in line
    assert (out / S.TABLE).read_bytes() == table and (out / S.META).read_bytes() == meta


# ----------------------------------------------------------------------------- 14. --json and figures


def test_json_contract_and_figures(tmp_path, capsys):
    out = tmp_path / "two"
    rates = "0.01,0.1,1,10000"
    assert main(TINY + ["--depths", "2,3", "--lrs", rates, "--out", str(out), "--workers", "1", "--json"]) == 0
    d = _strict_json(capsys.readouterr().out)
    assert [(r["depth"], r["width"]) for r in d["runs"]] == [(2, 8), (3, 8)]
    for r in d["runs"]:
        assert set(CONTRACT) <= set(r)
        assert r["lrs"] == [0.01, 0.1, 1.0, 1e4] and r["diverged"][-1] == 1.0 and r["loss_mean"][-1] is None
    assert "depth_fit" in d and d["this_run"]["cells_run"] == 16
    assert d == _strict_json((out / "summary.json").read_text())  # what was printed is what was written
    for png in ("transfer.png", "eta_star_depth.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png
    assert (out / "report.md").read_text().startswith("# Learning-rate sweep")

    one = tmp_path / "one"
    assert main(TINY + ["--depths", "2", "--lrs", rates, "--out", str(one), "--workers", "1", "--json",
                        "--no-figures"]) == 0
    d1 = _strict_json(capsys.readouterr().out)
    for k in CONTRACT:
        assert d1[k] == d1["runs"][0][k], k
    assert d1["runs"][0] == d["runs"][0]  # the same cells, computed again in another folder
    assert not list(one.glob("*.png"))

    # the text output: a table with one row per search
    assert main(TINY + ["--depths", "2", "--lrs", rates, "--out", str(one), "--workers", "1", "--no-figures"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"wrote {one}/summary.json") and "eta*_train" in text


# ----------------------------------------------------------------------------- 15. kill -9 and resume

#: 4 depths x 3 seeds = 12 groups of 4 rates, 60 steps each: ~0.3-0.5 s per group on one thread
KILL = TINY + ["--depths", "2,3,4,5", "--seeds", "3", "--steps", "60", "--batch-size", "32",
               "--lrs", "0.01,0.03,0.1,0.3", "--workers", "1", "--json", "--no-figures"]


def _kill_at_first_row(proc: subprocess.Popen, table: Path, result: dict) -> None:
    """Poll ``table`` every 10 ms; SIGKILL ``proc`` as soon as it holds a byte (a finished group)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            result["ended_first"] = proc.returncode
            return
        if table.exists() and table.stat().st_size > 0:
            result["still_running"] = proc.poll() is None
            os.kill(proc.pid, signal.SIGKILL)
            return
        time.sleep(0.01)
    result["timeout"] = True


def test_kill_9_then_resume_equals_an_uninterrupted_run(tmp_path, capsys):
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    proc = subprocess.Popen([sys.executable, "-m", "amutheory"] + KILL + ["--out", str(killed)], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    result: dict = {}
    # the watcher kills the sweep at its first written group, while this thread computes the
    # uninterrupted reference in process (the subprocess spends its first seconds importing torch)
    watcher = threading.Thread(target=_kill_at_first_row, args=(proc, killed / S.TABLE, result))
    watcher.start()
    try:
        assert main(KILL + ["--out", str(whole)]) == 0
        capsys.readouterr()
        watcher.join(timeout=150)
    finally:
        proc.kill()  # a no-op once killed; never leave the sweep running
        proc.wait()
    stderr = proc.stderr.read().decode()
    assert result == {"still_running": True}, (result, stderr)
    assert proc.returncode == -signal.SIGKILL
    interrupted = S.read_table(killed)
    assert 1 <= len(interrupted) < 48 and not (killed / "summary.json").exists()

    # rerun the same command to completion (in this process: the subprocess startup is the slow part)
    assert main(KILL + ["--out", str(killed)]) == 0
    summary = _strict_json(capsys.readouterr().out)
    # one group in flight at a time: the rows hold every finished group and at most part of one more,
    # and only the unfinished groups run again
    assert summary["this_run"]["cells_run"] == 48 - 4 * (len(interrupted) // 4)
    assert summary["cells"] == 48
    a, b = _rows(killed), _rows(whole)
    assert len(b) == 48 and set(a) == set(b)
    assert a == b, _first_difference(a, b)


# ----------------------------------------------------------------------------- 16-17. engines

ENGINE = TINY + ["--depths", "2,3", "--lrs", "0.01,0.1,1,10000", "--no-figures", "--json"]


@pytest.fixture(scope="module")
def in_process_rows(tmp_path_factory):
    """The engines' reference: the tiny sweep run in this process (``--workers 1``)."""
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("engines") / "local1"
    assert main(ENGINE + ["--out", str(out), "--workers", "1"]) == 0
    rows = _rows(out)
    assert len(rows) == 16
    return rows


def _run_quiet(capsys, argv) -> dict:
    rc = main(argv)
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    return _strict_json(cap.out)


def test_process_pool_writes_the_same_rows(in_process_rows, tmp_path, capsys):
    out = tmp_path / "pool"
    d = _run_quiet(capsys, ENGINE + ["--out", str(out), "--workers", "2"])
    assert d["this_run"]["cells_run"] == 16
    rows = _rows(out)
    assert rows == in_process_rows, _first_difference(rows, in_process_rows)


def test_dask_scheduler_writes_the_same_rows(in_process_rows, tmp_path, capsys):
    pytest.importorskip("distributed")
    from dask.distributed import LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    try:
        out = tmp_path / "scheduler"
        d = _run_quiet(capsys, ENGINE + ["--out", str(out), "--scheduler", cluster.scheduler_address])
        assert d["this_run"]["cells_run"] == 16
        rows = _rows(out)
        assert rows == in_process_rows, _first_difference(rows, in_process_rows)
    finally:
        cluster.close()


def test_dask_local_cluster_writes_the_same_rows(in_process_rows, tmp_path, capsys):
    pytest.importorskip("distributed")
    out = tmp_path / "dask-local"
    d = _run_quiet(capsys, ENGINE + ["--out", str(out), "--engine", "dask", "--workers", "2"])
    assert d["this_run"]["cells_run"] == 16
    rows = _rows(out)
    assert rows == in_process_rows, _first_difference(rows, in_process_rows)


def test_sigterm_ends_with_one_line_and_keeps_finished_groups(tmp_path):
    out = tmp_path / "termed"
    proc = subprocess.Popen([sys.executable, "-m", "amutheory"] + KILL + ["--out", str(out), "--quiet"], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        # a finished group is one whose records are written: wait for a whole line (the table exists from the
        # moment its first append opens it, a moment before the line is written)
        while time.monotonic() < deadline and not S.read_table(out) and proc.poll() is None:
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    finally:
        proc.kill()
        proc.wait()
    err = proc.stderr.read().decode().strip().splitlines()
    assert proc.returncode == 143, err
    assert err == ["amutheory: terminated by SIGTERM (finished results are kept; rerun to resume)"]
    assert len(S.read_table(out)) >= 1


# ----------------------------------------------------------------------------- a user's model (issue 39, part 5)
DIGITS_MLP = '''
from torch import nn


def mlp(depth, width):
    layers = [nn.Flatten(), nn.Linear(64, width)]
    for _ in range(depth - 1):
        layers += [nn.ReLU(), nn.Linear(width, width)]
    return nn.Sequential(*layers, nn.ReLU(), nn.Linear(width, 10))
'''
MODEL_SWEEP = ["sweep", "--dataset", "digits", "--dim", "1", "--width", "16", "--seeds", "2", "--steps", "80",
               "--batch-size", "16", "--momentum", "0.5", "--weight-decay", "0.0001", "--workers", "1", "--quiet"]


def test_model_sweep_names_the_model_and_optimizer_flags_learning_and_scores_the_rules(tmp_path, capsys):
    (tmp_path / "net.py").write_text(DIGITS_MLP)
    model = f"{tmp_path / 'net.py'}:mlp"
    out = tmp_path / "learns"
    assert main(MODEL_SWEEP + ["--model", model, "--depths", "2,3", "--lrs", "0.1,0.3,1", "--out", str(out),
                               "--transfer-from", "2:0.3", "--json"]) == 0
    d = _strict_json(capsys.readouterr().out)
    report = (out / "report.md").read_text()
    assert f"user's module {model}" in report and "conv net" not in report
    assert "optimizer sgd (momentum 0.5, weight decay 0.0001)" in report
    assert d["chance_loss"] == pytest.approx(2.302585, abs=1e-6) and "Chance level" in report
    for r in d["runs"]:  # learns: the final loss at the optimum is below half the chance loss
        assert r["learns"] is True and r["final_loss_at_optimum"] <= 0.5 * r["chance_loss"]
    o = d["transfer_from"]
    assert (o["from_depth"], o["lr"]) == (2, 0.3) and [(r["depth"], r["width"]) for r in o["rows"]] == [(2, 16),
                                                                                                      (3, 16)]
    from amutheory.transfer import RULES

    assert set(o["rules"]) == set(RULES)
    for r in o["rows"]:
        for rule, x in r["rules"].items():
            assert x["on_grid"] == (0.1 <= x["lr"] <= 1.0), rule
            if x["penalty"] is not None:
                assert x["penalty"] == pytest.approx(x["loss"] - r["best_loss"]) and x["penalty"] >= -1e-12
    assert o["rows"][0]["rules"]["power"]["lr"] == pytest.approx(0.3)  # no depth change at the tuned depth
    assert "Transfer rules from lr 0.3 at depth 2" in report and "| am-mup |" in report
    assert (out / "transfer.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    tiny = tmp_path / "tiny"  # rates far too small: nothing is learned
    assert main(MODEL_SWEEP + ["--model", model, "--depths", "2", "--lrs", "1e-6,2e-6,4e-6", "--out", str(tiny),
                               "--no-figures"]) == 0
    text = capsys.readouterr().out
    s = _strict_json((tiny / "summary.json").read_text())
    assert s["runs"][0]["learns"] is False and s["learns"] is False
    assert "does not learn" in text and "**Does not learn**" in (tiny / "report.md").read_text()


def test_transfer_from_is_checked_before_any_work(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(TINY + ["--depths", "2", "--lrs", "0.01,0.1,1", "--out", str(out), "--transfer-from", "2"]) == 2
    err = capsys.readouterr().err
    assert "--transfer-from takes DEPTH:RATE" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
