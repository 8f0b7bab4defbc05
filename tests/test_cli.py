"""The CLI contract: JSON keys, one-line errors with exit status 2, --help for every command."""

import json
import subprocess
import sys

import pytest

from amutheory.cli import main


def run(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_derive_json_contract(capsys):
    code, out, _ = run(["derive", "--family", "conv", "--dim", "1", "--padding", "circular",
                        "--activation", "relu", "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    for key in ("exponent", "eta_star", "eta_star_latex", "corrections", "assumptions"):
        assert key in d
    assert d["exponent"] == "-3/2"
    assert len(d["corrections"]) == 3


@pytest.mark.parametrize("dim", [1, 2])
@pytest.mark.parametrize("act", ["linear", "relu"])
def test_derive_exponent_all_four_cases(dim, act, capsys):
    code, out, _ = run(["derive", "--dim", str(dim), "--activation", act, "--json"], capsys)
    assert code == 0 and json.loads(out)["exponent"] == "-3/2"


def test_predict_and_measure_json_contract(capsys):
    common = ["--dim", "1", "--activation", "relu", "--width", "8", "--kernel", "3", "--spatial", "5",
              "--batch", "2", "--json"]
    code, out, _ = run(["predict", *common, "--depths", "5,6", "--calibration-depths", "1,2,3,4",
                        "--calibration-seeds", "4"], capsys)
    assert code == 0
    d = json.loads(out)
    assert d["depths"] == [5, 6] and len(d["eta_star"]) == 2 and len(d["local_slope"]) == 2
    assert d["constants"]["a"]["source"] == "calibrated" and d["constants"]["epsilon"]["source"] == "exact"
    code, out, _ = run(["measure", *common, "--depths", "2,3", "--seeds", "4"], capsys)
    assert code == 0
    d = json.loads(out)
    for key in ("depths", "seeds", "s_bar_mean", "s_bar_mean_ci", "s_bar_geo", "eta_star_mean",
                "eta_star_geo", "per_layer_mean"):
        assert key in d
    assert [len(r) for r in d["per_layer_mean"]] == [2, 3]
    assert all(lo <= m <= hi for m, (lo, hi) in zip(d["s_bar_mean"], d["s_bar_mean_ci"]))


@pytest.mark.parametrize("args, needle", [
    (["predict", "--width", "0", "--depths", "4"], "width"),
    (["predict", "--kernel", "4", "--depths", "4"], "kernel"),
    (["predict", "--kernel", "9", "--spatial", "5", "--depths", "4"], "kernel"),
    (["measure", "--depths", "4,x"], "--depths"),
    (["measure", "--depths", "0,4"], "depths"),
    (["measure", "--depths", "4", "--seeds", "1"], "seeds"),
    (["derive", "--activation", "foo"], "activation"),
    (["derive", "--dim", "3"], "dim"),
    (["derive", "--order", "0"], "order"),
    (["derive", "--init-c", "-1"], "init_c"),
    (["measure", "--depths", "2", "--device", "cuda:7"], "device"),
    (["validate", "--preset", "nope"], "preset"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_input_one_line_exit_2(args, needle, capsys):
    code, out, err = run(args, capsys)
    assert code == 2
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in err


@pytest.mark.parametrize("cmd", ["derive", "predict", "measure", "validate"])
def test_help_documents_every_flag(cmd):
    res = subprocess.run([sys.executable, "-m", "amutheory", cmd, "--help"], capture_output=True, text=True)
    assert res.returncode == 0
    from amutheory.cli import build_parser

    sub = build_parser()._subparsers._group_actions[0].choices[cmd]
    for action in sub._actions:
        if action.help == "==SUPPRESS==":
            continue
        for flag in action.option_strings:
            assert flag in res.stdout, flag
        assert action.help, action.option_strings


def test_derive_finite_width_keeps_contract_and_adds_correction(capsys):
    code, out, _ = run(["derive", "--finite-width", "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    assert d["exponent"] == "-3/2" and d["finite_width_first_order_leading"] == "4/5"
    assert "lambda" in d["s_bar_finite_width"]
