"""The newer commands' bad inputs, each refused up front in one line (issue 38, part 7), and no
process outliving a killed command.

Every case here was once a traceback, a silent change or a late failure: it must now end with exit
status 2 and one line on stderr naming what is wrong, before any work (a case that started work
would run for seconds, not the fraction of a second these take), or, for the signals, end quickly
without leaving a worker behind.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from amutheory.cli import main

NO_HEAD = """
from torch import nn

def narrow(depth, width):
    # a head of 2 outputs for a dataset of 10 classes
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 8, 2))

def empty(depth, width):
    return nn.Sequential(nn.Flatten(), nn.Identity())
"""
SWEEP = ["sweep", "--depths", "2", "--width", "4", "--lrs", "0.1,0.2,0.4", "--steps", "2", "--seeds", "2",
         "--workers", "1", "--batch-size", "4", "--no-figures", "--quiet"]


def _refused(argv, capsys, *needles) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err[-2000:]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("argv, needles", [
    (["predict", "--depths", "4", "--input-var", "1e300", "--constants", "mlp-limit"], ("--input-var", "1e+75")),
    (["predict", "--depths", "4", "--init-c", "1e300", "--constants", "mlp-limit"], ("--init-c", "1e+75")),
    (["predict", "--depths", "4", "--input-var", "1e-300", "--constants", "mlp-limit"], ("--input-var",)),
    (["measure", "--depths", "2", "--input-var", "1e300", "--seeds", "2"], ("--input-var",)),
    (["transfer", "--lr", "5e-324", "--from-depth", "2", "--to-depth", "4"], ("--lr", "normal")),
    (["laws", "--calibration-depths", "2,3"], ("--calibration-depths", "at least 3")),
    (["predict", "--depths", "4", "--calibration-depths", "2,3"], ("--calibration-depths", "at least 3")),
    (["measure", "--depths", "2", "--width", "4", "--spatial", "4", "--batch", "2", "--seeds", "2", "--spread"],
     ("--seeds", ">= 3")),
])
def test_refused_up_front(argv, needles, capsys):
    start = time.perf_counter()
    _refused(argv, capsys, *needles)
    assert time.perf_counter() - start < 5  # refused, not measured


def test_the_largest_scale_still_predicts(capsys):
    """The bound is not too tight: its edge values run (and give finite numbers)."""
    for flag in ("--input-var", "--init-c"):
        for value in ("1e75", "1e-75"):
            code = main(["predict", "--depths", "2,4", "--constants", "mlp-limit", flag, value, "--json", "--quiet"])
            out = capsys.readouterr().out
            assert code == 0
            json.loads(out, parse_constant=_no_constant)


def _no_constant(name):
    raise AssertionError(f"not strict JSON: {name}")


def test_transfer_overflow_refused_not_infinity(capsys):
    argv = ["transfer", "--lr", "1e308", "--from-depth", "2", "--to-depth", "8", "--to-width", "1", "--width", "64"]
    line = _refused(argv + ["--json"], capsys, "overflows")
    assert "inf" not in line.split("gives")[0]
    code = main(["transfer", "--lr", "0.1", "--from-depth", "2", "--to-depth", "8", "--to-width", "1", "--json"])
    assert code == 0
    json.loads(capsys.readouterr().out, parse_constant=_no_constant)


@pytest.mark.parametrize("extra, needles", [
    (["--lrs", "0.1"], ("--lrs", "at least 3")),
    (["--lrs", "0.1,0.2"], ("--lrs", "at least 3")),
    (["--lrs", "0.1,0.1,0.2"], ("--lrs", "repeated")),
    (["--steps", "1"], ("--steps",)),
    (["--data-dir", "."], ("--data-dir", "synthetic")),
    (["--dataset", "digits", "--data-dir", "."], ("--data-dir", "digits")),
    (["--device", "cuda"], ("--device",)),
    (["--dataset", "digits", "--spatial", "16"], ("--spatial", "8")),
])
def test_sweep_refused_up_front(extra, needles, tmp_path, capsys):
    if "--device" in extra:
        torch = pytest.importorskip("torch")
        if torch.cuda.is_available():
            pytest.skip("this machine has CUDA")
    out = tmp_path / "s"
    argv = list(SWEEP)
    for flag in extra[::2]:
        if flag in argv:
            i = argv.index(flag)
            del argv[i:i + 2]
    _refused(argv + extra + ["--out", str(out)], capsys, *needles)
    assert not out.exists()  # refused before any file was written


def test_sweep_spatial_equal_to_the_dataset_is_accepted(tmp_path, capsys):
    code = main(SWEEP + ["--dataset", "digits", "--spatial", "8", "--out", str(tmp_path / "s")])
    assert code == 0, capsys.readouterr().err


def test_sweep_says_how_a_1d_model_reads_images(tmp_path, capsys):
    argv = [a for a in SWEEP if a != "--quiet"] + ["--dataset", "digits", "--out", str(tmp_path / "s")]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "8 positions of 8 features" in err and "--dim 2" in err


@pytest.mark.parametrize("factory, needles", [("narrow", ("--model", "2 outputs", "10 classes")),
                                              ("empty", ("--model", "no trainable parameters"))])
def test_sweep_model_checked_before_the_sweep(factory, needles, tmp_path, capsys):
    (tmp_path / "m.py").write_text(NO_HEAD)
    out = tmp_path / "s"
    argv = SWEEP + ["--model", f"{tmp_path / 'm.py'}:{factory}", "--spatial", "8", "--out", str(out)]
    _refused(argv, capsys, *needles)
    assert not (out / "cells.jsonl").exists()


def test_unresolved_optimum_is_said(tmp_path, capsys):
    """A grid whose best rate is at its edge: the text says the optimum is not resolved, the JSON
    says ``resolved: false``."""
    argv = SWEEP + ["--lrs", "1e-6,2e-6,4e-6", "--out", str(tmp_path / "s")]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "NOT resolved" in text
    assert main(argv + ["--json"]) == 0
    run = json.loads(capsys.readouterr().out, parse_constant=_no_constant)["runs"][0]
    assert run["resolved"] is False and run["flags"]
    assert "NOT resolved" in (tmp_path / "s" / "report.md").read_text()


@pytest.mark.parametrize("command", ["sweep", "validate"])
def test_output_folder_needs_its_parent(command, tmp_path, capsys):
    out = tmp_path / "missing" / "run"
    argv = (SWEEP if command == "sweep" else ["validate", "--quiet"]) + ["--out", str(out)]
    _refused(argv, capsys, "--out", "does not exist")
    assert not (tmp_path / "missing").exists()


def test_compare_widths_out_needs_its_folder(tmp_path, capsys):
    _refused(["compare-widths", str(tmp_path), str(tmp_path), "--out", str(tmp_path / "missing" / "t.md")], capsys,
             "--out", "does not exist")


# --------------------------------------------------------------------------- signals and workers
def _children(pid: int) -> list[int]:
    """Pids of the pool workers started by ``pid`` (spawned interpreters; not the resource tracker)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid and "spawn_main" in cmd:
            out.append(int(entry.name))
    return out


def _threads(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by init) counts as gone
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _start_sweep(tmp_path) -> tuple[subprocess.Popen, list[int]]:
    """A sweep of two groups on two workers that would run for minutes; its process and workers
    once both workers have started."""
    argv = [sys.executable, "-m", "amutheory", "sweep", "--depths", "2,3", "--width", "4", "--lrs", "0.1,0.2,0.4",
            "--steps", "200000", "--seeds", "2", "--workers", "2", "--batch-size", "4", "--no-figures", "--quiet",
            "--out", str(tmp_path / "s")]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    deadline = time.monotonic() + 120
    workers: list[int] = []
    while time.monotonic() < deadline and proc.poll() is None:
        workers = _children(proc.pid)
        if len(workers) == 2 and all(_threads(w) >= 2 for w in workers):
            return proc, workers  # both past their start (torch imported, the watch on their parent running)
        time.sleep(0.2)
    proc.kill()
    pytest.fail(f"the sweep did not start two workers (exit {proc.poll()}): {proc.communicate()[1][-2000:]}")


def _gone_within(pids, seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [p for p in pids if _alive(p)]
        if not left:
            return []
        time.sleep(0.2)
    return [p for p in pids if _alive(p)]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_kill_9_of_a_sweep_leaves_no_worker(tmp_path):
    proc, workers = _start_sweep(tmp_path)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    left = _gone_within(workers, 10)
    for pid in left:  # do not leave them to the next test
        os.kill(pid, signal.SIGKILL)
    assert not left, f"workers {left} outlived their killed sweep"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_sigterm_of_a_sweep_ends_it_quickly_in_one_line(tmp_path):
    proc, workers = _start_sweep(tmp_path)
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the sweep took more than 20 s to end after SIGTERM")
    assert time.monotonic() - start < 15
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert proc.returncode == 143 and len(lines) == 1 and "SIGTERM" in lines[0], err[-2000:]
    assert "InvalidStateError" not in err and "Traceback" not in err
    assert not _gone_within(workers, 10)


def test_preflight_flags_and_site_never_import_the_cli():
    """The CLI sits on top: what it uses (preflight, flags, the site) imports nothing of it, at any
    level of a module (so no cli <-> preflight <-> site cycle)."""
    import ast

    import amutheory

    root = Path(amutheory.__file__).parent
    files = [root / "preflight.py", root / "flags.py", *sorted((root / "site").glob("*.py"))]
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom) else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            assert not any(n == "amutheory.cli" or n.startswith("amutheory.cli.") for n in names), path


# --------------------------------------------------------------------------- issue 46, part 6
TUNE = ["tune", "--depth", "3", "--from-depth", "2", "--from-lr", "0.1", "--width", "4", "--spatial", "4",
        "--steps", "2", "--seeds", "2", "--method", "bracket", "--bracket", "3", "--max-runs", "6", "--batch-size", "4", "--workers", "1",
        "--no-figures", "--quiet"]


def _errors_file(tmp_path, value) -> Path:
    """A held-out error file like the package's, every rule's error replaced by ``value`` (a JSON text)."""
    from amutheory.transfer_interval import ERRORS_FILE

    runs = json.loads(ERRORS_FILE.read_text())["runs"]
    fp = sorted(runs)[0]
    text = json.dumps({"runs": {fp: dict(runs[fp], rules={"am-mup": "VALUE", "power": 0.25})}})
    path = tmp_path / "errors.json"
    path.write_text(text.replace('"VALUE"', value))
    return path


@pytest.mark.parametrize("value, needles", [("NaN", ("is nan",)), ("Infinity", ("is inf",)),
                                            ("1e300", ("1e+300",)), ("-0.5", ("-0.5",)),
                                            ('"0.3"', ("'0.3'",))])
@pytest.mark.parametrize("command", ["transfer", "tune"])
def test_errors_file_numbers_refused_naming_file_and_key(command, value, needles, tmp_path, capsys):
    path = _errors_file(tmp_path, value)
    argv = (["transfer", "--lr", "0.1", "--from-depth", "2", "--to-depth", "8", "--json"] if command == "transfer"
            else TUNE + ["--out", str(tmp_path / "t")])
    line = _refused(argv + ["--errors", str(path)], capsys, "--errors", str(path), ".rules.am-mup", *needles)
    assert "a median |ln error| is a finite number in [0," in line
    if command == "tune":
        assert not (tmp_path / "t").exists()  # refused before the folder was made


@pytest.mark.parametrize("text, needles", [('{"runs": {"x": 3}}', ("runs.x", "not a record")),
                                           ('{"runs": {"x": {"rules": [1]}}}', ("runs.x.rules",)),
                                           ('{"runs": {"x": {"targets": "5"}}}', ("runs.x.targets",)),
                                           ("[1, 2", ("not readable JSON",))])
def test_malformed_errors_file_refused_before_tune_starts(text, needles, tmp_path, capsys):
    path = tmp_path / "errors.json"
    path.write_text(text)
    _refused(TUNE + ["--out", str(tmp_path / "t"), "--errors", str(path)], capsys, "--errors", *needles)
    assert not (tmp_path / "t").exists()


def test_transfer_interval_that_leaves_the_floats_is_refused():
    from amutheory.transfer_interval import interval

    assert interval(0.1, 0.2, None, 1.0)[1] == pytest.approx(0.2 * math.e)
    with pytest.raises(ValueError, match="leaves the floats"):
        interval(0.1, 1e300, None, 100.0)


MLP_FACTORY = """
from torch import nn

def mlp(depth, width=4):
    layers = [nn.Flatten(), nn.Linear(12, width)]
    for _ in range(depth):
        layers += [nn.ReLU(), nn.Linear(width, width)]
    return nn.Sequential(*layers, nn.ReLU(), nn.Linear(width, 10))
"""


@pytest.fixture
def mlp_file(tmp_path):
    path = tmp_path / "mlp.py"
    path.write_text(MLP_FACTORY)
    return f"{path}:mlp"


@pytest.mark.parametrize("lr, needles", [("1e308", ("--lr", "float32", "3.4e+38")), ("1e-300", ("--lr", "float32"))])
def test_coord_check_rate_outside_the_models_dtype_refused(lr, needles, mlp_file, tmp_path, capsys):
    out = tmp_path / "c"
    _refused(["coord-check", "--model", mlp_file, "--input-shape", "2,3,4", "--depths", "1,2", "--steps", "1",
              "--seeds", "2", "--lr", lr, "--out", str(out), "--quiet"], capsys, *needles)
    assert not out.exists()


def test_coord_check_api_rate_outside_the_dtype_refused():
    import amutheory.coord.check as cc
    from torch import nn

    def factory(depth, width):
        return nn.Sequential(nn.Flatten(), *[nn.Linear(12 if i == 0 else width, width) for i in range(depth)])

    with pytest.raises(ValueError, match="lr 1e\\+308: the model's float32"):
        cc.coord_check(factory, (2, 3, 4), [1, 2], widths=[4], steps=1, lr=1e308, seeds=2)


def test_coord_check_that_diverges_still_writes_its_figure(mlp_file, tmp_path, capsys):
    """A rate the dtype holds but the training does not: the records say it, the figure is drawn (no
    'Data cannot be log-scaled')."""
    out = tmp_path / "c"
    code = main(["coord-check", "--model", mlp_file, "--input-shape", "2,3,4", "--depths", "1,2", "--steps", "3",
                 "--seeds", "2", "--lr", "1e30", "--out", str(out), "--quiet"])
    assert code == 0, capsys.readouterr().err
    assert (out / "coord.png").read_bytes()[:4] == b"\x89PNG"


BROKEN_LAW = '''
import numpy as np

from amutheory.laws import Coverage, Cost, Law, LawValues


class Broken(Law):
    name, family, exactness = "broken-toy", "conv", "exact"
    summary = "a law whose METHOD has a bug"
    priority = 5

    def _covers(self, spec):
        if "METHOD" == "covers":
            raise RuntimeError("boom in covers")
        return Coverage(True, "every conv net")

    def cost(self, spec, depths, **_):
        if "METHOD" == "cost":
            raise KeyError("boom in cost")
        return Cost(0.1, "closed-form", "a closed form")

    def evaluate(self, spec, depths, protocol=None, calibration=None, progress=None):
        if "METHOD" == "evaluate":
            raise ZeroDivisionError("boom in evaluate")
        return LawValues(self.name, list(depths), np.ones(len(depths)), np.zeros(len(depths)), {}, "exact")
'''


@pytest.mark.parametrize("method", ["covers", "cost", "evaluate"])
@pytest.mark.parametrize("command", ["predict", "laws"])
def test_a_plugin_law_that_raises_is_named_in_one_line(command, method, tmp_path, capsys):
    path = tmp_path / f"broken_{method}.py"
    path.write_text(BROKEN_LAW.replace("METHOD", method))
    arch = ["--depths", "4,8", "--width", "8", "--spatial", "4", "--batch", "2"]
    if command == "laws" and method == "evaluate":
        assert main(["laws", "--plugin", str(path), "--json", *arch]) == 0  # laws does not evaluate
        return
    line = _refused([command, "--plugin", str(path), *arch], capsys, "broken-toy", str(path), method, "boom")
    assert "Error" in line  # the plugin's own exception class is said


def test_a_plugin_law_answering_the_wrong_type_is_named(tmp_path, capsys):
    path = tmp_path / "wrong.py"
    path.write_text(BROKEN_LAW.replace("METHOD", "none").replace('return Coverage(True, "every conv net")',
                                                                   "return True"))
    _refused(["predict", "--plugin", str(path), "--depths", "4", "--width", "8", "--spatial", "4"], capsys,
             "broken-toy", "covers must return a Coverage", "bool")


@pytest.mark.parametrize("extra, needles", [
    (["--width", "1048576"], ("width 1048576", "GiB", "--width")),
    (["--depth", "3000", "--width", "64", "--spatial", "16", "--batch-size", "32"], ("depth 3000", "GiB", "--depth")),
])
def test_tune_too_large_is_refused_before_any_cell(extra, needles, tmp_path, capsys, monkeypatch):
    """As sweep: the deepest, widest net on every worker and rate at once must fit (here in 8 GiB, the
    free memory fixed so that the answer does not depend on the machine); refused in a second, no folder."""
    from amutheory import limits

    monkeypatch.setattr(limits, "available_bytes", lambda device="cpu": 8 * 2**30)
    argv = TUNE[:]
    for flag in extra[::2]:
        if flag in argv:
            i = argv.index(flag)
            del argv[i:i + 2]
    out = tmp_path / "t"
    start = time.perf_counter()
    _refused(argv + extra + ["--workers", "2", "--out", str(out)], capsys, *needles)
    assert time.perf_counter() - start < 10 and not out.exists()


@pytest.mark.parametrize("argv, needles", [
    (["validate", "--first-seed", str(2**63 - 1)], ("--first-seed", "past 2^63 - 1", "give at most")),
    (["validate", "--preset", "protocol", "--first-seed", str(2**63 - 2)], ("--first-seed", "past 2^63 - 1")),
    (["validate", "--first-seed", str(2**63)], ("--first-seed", "63-bit")),
    (SWEEP + ["--seed-start", str(2**63 - 1)], ("--seed-start", "2^63")),
    (TUNE + ["--seed-start", str(2**63 - 1)], ("--seed-start", "2^63")),
    (["measure", "--depths", "2", "--seeds", "2", "--seed-start", str(2**63 - 1)], ("--seed-start", "2^63")),
])
def test_seeds_near_the_integer_limit_refused(argv, needles, tmp_path, capsys):
    out = tmp_path / "o"
    start = time.perf_counter()
    _refused(argv + (["--out", str(out)] if argv[0] != "measure" else []), capsys, *needles)
    assert time.perf_counter() - start < 10 and not out.exists()


def test_seed_span_edge_and_a_cell_past_it():
    from amutheory.limits import SEED_LIMIT
    from amutheory.preflight import check_seed_span
    from amutheory.spec import ArchSpec
    from amutheory.train import Cell

    check_seed_span(SEED_LIMIT - 32, 32, "--first-seed")  # the last seed is 2^63 - 1: accepted
    with pytest.raises(ValueError, match="at most 9223372036854775776"):
        check_seed_span(SEED_LIMIT - 31, 32, "--first-seed")
    spec = ArchSpec(dim=1, depth=2, width=4, kernel=3, spatial=4)
    assert Cell(spec=spec, lr=0.1, seed=SEED_LIMIT - 1).seed == SEED_LIMIT - 1
    with pytest.raises(ValueError, match="seed must be <= 9223372036854775807"):
        Cell(spec=spec, lr=0.1, seed=SEED_LIMIT)


@pytest.mark.parametrize("value, needles", [("1000000000:0.1", ("--transfer-from", "<= 100000")),
                                            ("2:5e-324", ("--transfer-from", "rate", "normal")),
                                            ("20:1e308", ("--transfer-from", "depth 2", "overflows"))])
def test_sweep_transfer_from_refused_before_any_cell(value, needles, tmp_path, capsys):
    out = tmp_path / "s"
    argv = [a if a != "2" or i != 2 else "2,3" for i, a in enumerate(SWEEP)]
    _refused(argv + ["--transfer-from", value, "--out", str(out)], capsys, *needles)
    assert not (out / "cells.jsonl").exists()


def _two_at_once(argv, out: Path) -> None:
    """Start two identical runs into ``out`` together: one holds the folder, the other is refused at once
    in one line naming the folder and the holder's PID; the holder then ends (SIGTERM) with no cell twice."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-m", "amutheory", *argv, "--out", str(out)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and all(p.poll() is None for p in procs):
            time.sleep(0.1)
        done = [p for p in procs if p.poll() is not None]
        assert done, "neither run ended: the second was not refused"
        refused, holder = done[0], next(p for p in procs if p is not done[0])
        err = refused.communicate()[1]
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert refused.returncode == 2 and len(lines) == 1, err[-2000:]
        assert str(out) in lines[0] and f"PID {holder.pid}" in lines[0] and "in use" in lines[0], lines[0]
        assert holder.poll() is None  # the holder goes on
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
    table = out / "cells.jsonl"
    keys = [json.loads(ln)["key"] for ln in table.read_text().splitlines()] if table.exists() else []
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("command", ["tune", "sweep"])
def test_two_runs_into_one_folder_the_second_is_refused(command, tmp_path):
    long = ["--steps", "100000"]
    argv = (TUNE if command == "tune" else SWEEP) + long
    for i in [i for i, a in enumerate(argv) if a == "--steps"][:-1]:  # the long run's steps win
        argv = argv[:i] + ["--steps", "100000"] + argv[i + 2:]
    _two_at_once(argv, tmp_path / "run")


@contextlib.contextmanager
def _held_elsewhere(folder, what: str):
    """Another process holds ``folder``'s lock (as run ``what``) for the block; its PID; killed with -9 after."""
    code = (f"import time; from amutheory.train.lock import folder_lock\n"
            f"with folder_lock({str(folder)!r}, {what!r}):\n    print('held', flush=True); time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    """kill -9 of the holder: the operating system drops the lock; the next run takes it."""
    from amutheory.train.lock import folder_lock

    folder = tmp_path / "f"
    folder.mkdir()
    with _held_elsewhere(folder, "holder") as pid:  # killed with -9 on leaving
        with pytest.raises(ValueError, match=f"--out {folder} is in use by another run \\(PID {pid}, holder\\)"):
            with folder_lock(folder):
                pass
    with folder_lock(folder, "next"):  # taken at once
        with folder_lock(folder):  # the same process may enter again
            assert (folder / ".amutheory.lock").read_text().split() == [str(os.getpid()), "next"]


def test_training_validate_into_a_folder_in_use_is_refused(tmp_path, capsys):
    folder = tmp_path / "p"
    folder.mkdir()
    with _held_elsewhere(folder, "validate") as pid:
        _refused(["validate", "--preset", "protocol", "--quiet", "--out", str(folder)], capsys,
                 str(folder), f"PID {pid}", "in use")
    assert sorted(p.name for p in folder.iterdir()) == [".amutheory.lock"]  # nothing was written


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_dask_engine_leaves_no_process_when_its_client_fails(monkeypatch):
    """A real local Dask cluster whose client cannot be made (an error other than OSError): the cluster's
    nanny and worker processes end with the call (they outlived it: only OSError closed the cluster)."""
    distributed = pytest.importorskip("dask.distributed")
    import multiprocessing

    from amutheory.train import engine

    before = {p.pid for p in multiprocessing.active_children()}
    started = []

    def failing_client(*args, **kwargs):  # the cluster is up when its client is asked for
        started.extend(p.pid for p in multiprocessing.active_children() if p.pid not in before)
        raise RuntimeError("the client failed")

    monkeypatch.setattr(distributed, "Client", failing_client)
    with pytest.raises(RuntimeError, match="the client failed"):
        list(engine.run_groups([[object()]], engine="dask", workers=1))
    assert started, "the local cluster started no process: nothing was checked"
    left = _gone_within(started, 10)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"processes {left} of the local cluster outlived the call"
