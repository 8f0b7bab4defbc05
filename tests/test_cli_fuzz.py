"""Fuzz the command line: every subcommand and every flag of it (read from ``build_parser()``, so a new
flag is covered without editing this file) is given bad values (0, -1, 10^12, nan, inf, 'x', '', and
for path flags a missing folder, a folder, a file, a file as a parent, a place nothing can be written).
Each must end with exit status 2, exactly one line on stderr that names the flag, no traceback, and
no hang (an alarm fails a case that runs past :data:`HANG_S`).  Values a flag legitimately takes
are listed in :data:`VALID` and skipped; anything else that is accepted is a silently used bad value.

Cases run in-process through ``main([...])`` (fast); a few run ``python -m amutheory`` in a
subprocess, so the real entry point is covered too.  The context of each command (its required
flags) is tiny, so a value wrongly accepted finishes in seconds instead of running a long job.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys

import pytest

from amutheory.cli import build_parser, main

HUGE = str(10**12)
#: values tried on a flag without choices (an int, a float, a list or a string)
BAD_VALUES = ("0", "-1", HUGE, "nan", "inf", "x", "")
#: values tried on a flag with choices
BAD_CHOICES = ("x", "")
#: the seconds a case may run before it counts as a hang
HANG_S = 30
#: (command, flag): values among BAD_VALUES that flag legitimately takes (skipped); command "*" is any
VALID = {
    ("*", "--seed-start"): {"0", HUGE}, ("*", "--first-seed"): {"0", HUGE}, ("*", "--refine"): {"0"},
    ("*", "--momentum"): {"0"}, ("*", "--weight-decay"): {"0", HUGE}, ("*", "--dropout"): {"0"},
    ("*", "--norm-weight"): {"0", HUGE}, ("*", "--residual-weight"): {"0", HUGE}, ("*", "--layer-weight"): {HUGE},
    # real numbers without an upper bound: a variance, a target moment, an init constant, a rate, a budget
    ("*", "--input-var"): {HUGE}, ("*", "--C"): {HUGE}, ("*", "--init-c"): {HUGE}, ("*", "--lr"): {HUGE}, ("*", "--from-lr"): {HUGE},
    ("*", "--lrs"): {HUGE}, ("*", "--tolerance"): {HUGE}, ("*", "--budget"): {HUGE},
    ("depth", "--leaf"): {"0"},  # the first submodule of the context's nn.Sequential
    ("docs", "--only"): {"0"},  # a prefix of the course scripts 01_ .. 09_
}
#: (command, flag) -> kind of path: "file" (a file the command writes; its folder must exist), "dir" (a
#: folder it writes into, made if missing; its parent must exist) or "input-dir" (a folder it reads)
PATH_FLAGS = {("measure", "--out"): "file", ("depth", "--plot"): "file", ("compare-widths", "--out"): "file",
              ("validate", "--out"): "dir", ("sweep", "--out"): "dir", ("tune", "--out"): "dir", ("*", "--data-dir"): "input-dir",
              ("docs", "--out"): "dir", ("docs", "--report"): "input-dir", ("coord-check", "--out"): "dir"}
#: the word a refusal uses for a flag when it is not the flag's own name
ALIASES = {"--seq-len": ("spatial",), "--from-depth": ("depth",), "--to-depth": ("depth",),
           "--to-width": ("width",), "model": ("model", "factory", "depth:"), "folders": ("campaign folder",),
           "--leaf": ("leaf",), "--from": ("--from", "transfer:"), "--to": ("--to", "transfer:"),
           "--input-dim": ("input_channels",)}  # an alias of --input-channels (the same field)
MODEL = """
from torch import nn

def make():
    return nn.Sequential(nn.Conv1d(3, 4, 3, padding=1), nn.ReLU(), nn.Conv1d(4, 2, 3, padding=1))


class Deep(nn.Module):  # coord-check: a factory of depth and width (named modules, no "0" among them)
    def __init__(self, depth, width):
        super().__init__()
        self.inp, self.head = nn.Linear(3, width), nn.Linear(width, 2)
        self.hidden = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def forward(self, x):
        x = self.inp(x)
        for layer in self.hidden:
            x = layer(x)
        return self.head(x)


def make_deep(depth, width=4):
    return Deep(depth, width)
"""


def _subparsers() -> dict:
    return build_parser()._subparsers._group_actions[0].choices


def _flag(action) -> str:
    return action.option_strings[-1] if action.option_strings else action.dest


def _actions(command: str) -> list:
    return [a for a in _subparsers()[command]._actions if not isinstance(a, argparse._HelpAction)]


CASES = [pytest.param(cmd, _flag(a), id=f"{cmd} {_flag(a)}") for cmd in _subparsers() for a in _actions(cmd)]


@pytest.fixture(scope="module")
def places(tmp_path_factory) -> dict:
    """Paths the cases use: a file, a folder, a file as a parent, a tiny model, an unwritable place."""
    root = tmp_path_factory.mktemp("fuzz")
    (root / "a-file").write_text("keep")
    (root / "a-folder").mkdir()
    (root / "model.py").write_text(MODEL)
    return {"root": root, "file": str(root / "a-file"), "folder": str(root / "a-folder"),
            "file_parent": str(root / "a-file" / "out.json"), "missing": str(root / "missing" / "out.json"),
            "unwritable": "/proc/amutheory-fuzz.json", "model": f"{root / 'model.py'}:make",
            "factory": f"{root / 'model.py'}:make_deep"}


def _context(command: str, flag: str, places: dict) -> list[str]:
    """Required flags and small sizes, so the command would run in seconds if it accepted the value."""
    root = places["root"]
    tiny = ["--depths", "2", "--width", "4", "--spatial", "4", "--batch", "2"]
    return {
        "derive": [],
        "predict": tiny + ["--constants", "mlp-limit"],
        "measure": tiny + ["--seeds", "2"],
        "boundary": ["--depths", "2", "--spatial", "8", "--activation", "linear"],
        "validate": ["--out", str(root / "v")] + (
            ["--preset", "protocol"] if flag in ("--workers", "--scheduler", "--data-dir", "--engine") else []),
        "compare-widths": [str(root / "no-campaign-a"), str(root / "no-campaign-b")],
        "depth": [places["model"], "--input-shape", "1,3,8"],
        "transfer": ["--lr", "0.1", "--from-depth", "2", "--to-depth", "4", "--width", "4", "--spatial", "4"],
        "sweep": ["--depths", "2", "--width", "4", "--lrs", "0.1,0.2,0.4", "--out", str(root / "s"), "--steps", "2",
                  "--seeds", "2", "--workers", "1", "--batch-size", "4", "--no-figures"],
        "tune": ["--depth", "3", "--from-depth", "2", "--from-lr", "0.1", "--width", "4", "--spatial", "4",
                 "--out", str(root / "t"), "--steps", "2", "--seeds", "2", "--workers", "1", "--batch-size", "4",
                 "--no-figures"],
        "docs": ["--out", str(root / "site")],
        "coord-check": ["--model", places["factory"], "--input-shape", "2,3", "--depths", "1,2", "--seeds", "2",
                        "--steps", "1", "--out", str(root / "coord")],
    }.get(command, [])


def _bad_values(command: str, action, places: dict) -> list[str]:
    flag = _flag(action)
    kind = PATH_FLAGS.get((command, flag)) or PATH_FLAGS.get(("*", flag))
    if kind is None and action.dest in ("out", "plot", "data_dir"):
        pytest.fail(f"{command} {flag} looks like a path: add it to PATH_FLAGS")
    if kind is not None:
        values = {"": 1, places["file_parent"]: 1, places["unwritable"]: 1}
        values.update({places["folder"]: 1} if kind.startswith("file") else {places["file"]: 1})
        values[places["missing"]] = 1  # a missing folder: never made, whatever the kind
        return list(values)
    if action.nargs == 0:
        return ["=x"]
    if action.choices:
        return list(BAD_CHOICES)
    valid = VALID.get((command, flag), set()) | VALID.get(("*", flag), set())
    return [v for v in BAD_VALUES if v not in valid]


def _replace(argv: list[str], flag: str, value: str, positional: bool) -> list[str]:
    """``argv`` with ``flag`` set to ``value`` (its context value dropped); positionals are replaced
    in place (the first of them)."""
    if value == "=x":
        return argv + [flag + value]
    if positional:
        return argv  # positionals: handled by _positional_argv
    out = list(argv)
    if flag in out:
        i = out.index(flag)
        del out[i:i + 2]
    return out + [flag, value]


class _Hang(BaseException):
    """Raised by the alarm: a case ran past HANG_S (a BaseException, so main() does not catch it)."""


def _alarm(signum, frame):
    raise _Hang()


def _run_in_process(argv: list[str], capsys) -> tuple[int, str, str]:
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_S)
    try:
        code = main(argv)
    except _Hang:
        pytest.fail(f"hang: {argv} ran past {HANG_S} s")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    out = capsys.readouterr()
    return code, out.out, out.err


def _no_constant(name):
    raise ValueError(f"not strict JSON: {name}")


def _strict_json_or_nothing(out: str) -> bool:
    """``--json`` output is one strict JSON object (no NaN/Infinity) or nothing (a refusal)."""
    if not out.strip():
        return True
    try:
        json.loads(out, parse_constant=_no_constant)
    except ValueError:
        return False
    return True


def _names_flag(line: str, flag: str) -> bool:
    words = ALIASES.get(flag, ()) + (flag, flag.lstrip("-"), flag.lstrip("-").replace("-", "_"))
    return any(w.lower() in line.lower() for w in words)


def _positional_argv(command: str, action, value: str, places: dict) -> list[str]:
    context = _context(command, "", places)
    if command == "depth":
        return [command, value] + context[1:]
    if command == "compare-widths":
        return [command, value, context[1]]
    pytest.fail(f"{command} has a positional {action.dest}: add its context to _positional_argv")


@pytest.mark.parametrize("command, flag", CASES)
def test_bad_value_exits_2_with_one_line(command, flag, places, capsys):
    action = next(a for a in _actions(command) if _flag(a) == flag)
    failures = []
    for value in _bad_values(command, action, places):
        tail = ["--quiet"] + (["--json"] if flag not in ("--json", "--compact") else [])
        if action.option_strings:
            argv = [command] + _replace(_context(command, flag, places), flag, value, False) + tail
        else:
            argv = _positional_argv(command, action, value, places) + tail
        code, out, err = _run_in_process(argv, capsys)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        ok = (code == 2 and len(lines) == 1 and "Traceback" not in err and _names_flag(lines[0], flag)
              and _strict_json_or_nothing(out))
        if not ok:
            failures.append(f"{value!r}: exit {code}, stderr {err.strip()[-300:]!r}")
    assert not failures, f"{command} {flag}:\n" + "\n".join(failures)
    assert open(places["file"]).read() == "keep"  # a file given as a folder is never touched


@pytest.mark.parametrize("argv, needle", [
    (["measure", "--depths", "2", "--width", "200000", "--seeds", "2"], "needs ~"),
    (["boundary", "--depths", "100000", "--activation", "linear"], "needs ~"),
    (["derive", "--spatial", HUGE], "spatial must be <="),
    (["measure", "--depths", HUGE, "--seeds", "2"], "--depths must be <="),
])
def test_entry_point_refuses_huge_sizes_in_one_line(argv, needle):
    """``python -m amutheory``: the refusal from the memory estimate or the bound, never an allocator
    traceback and never a hang (the subprocess has a timeout)."""
    proc = subprocess.run([sys.executable, "-m", "amutheory", *argv], capture_output=True, text=True, timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and needle in lines[0], proc.stderr[-2000:]


def _valid_runs(places) -> dict:
    """One tiny valid run of every command that finishes in about a second (validate and docs run
    for minutes: their refusals above are what this file covers of them)."""
    root = places["root"]
    tiny = ["--width", "4", "--spatial", "4", "--batch", "2"]
    return {
        "derive": ["--depths", "2,4"],
        "predict": ["--depths", "2,4", "--constants", "mlp-limit"],
        "laws": ["--depths", "2,4"] + tiny,
        "measure": ["--depths", "2"] + tiny + ["--seeds", "3"],
        "boundary": ["--depths", "2", "--spatial", "8", "--activation", "linear"],
        "depth": [places["model"], "--input-shape", "1,3,8"],
        "transfer": ["--lr", "0.1", "--from-depth", "2", "--to-depth", "4", "--to-width", "1"],
        "sweep": ["--depths", "2", "--width", "4", "--lrs", "0.1,0.2,0.4", "--out", str(root / "ok-sweep"),
                  "--steps", "2", "--seeds", "2", "--workers", "1", "--batch-size", "4", "--no-figures"],
        "tune": ["--depth", "3", "--from-depth", "2", "--from-lr", "0.1", "--width", "4", "--spatial", "4",
                 "--out", str(root / "ok-tune"), "--steps", "2", "--seeds", "2", "--workers", "1", "--batch-size", "4",
                 "--no-figures"],
    }


@pytest.mark.parametrize("command", ["derive", "predict", "laws", "measure", "boundary", "depth", "transfer",
                                     "sweep", "tune"])
def test_json_is_strict(command, places, capsys):
    """A run that succeeds prints one strict JSON object with --json (no NaN, Infinity)."""
    code, out, err = _run_in_process([command] + _valid_runs(places)[command] + ["--json", "--quiet"], capsys)
    assert code == 0, err[-2000:]
    assert _strict_json_or_nothing(out) and out.strip(), out[-500:]
