"""The CLI contract: JSON keys, one-line errors with exit status 2, --help for every command."""

import json
import os
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
    # the calibrated law by name: a small ReLU circular chain's default is the approximate
    # chain-kernel-finite-backward (nothing calibrated), and this contract is the calibrated one's
    code, out, _ = run(["predict", *common, "--depths", "5,6", "--calibration-depths", "1,2,3,4",
                        "--calibration-seeds", "4", "--constants", "calibrate"], capsys)
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
    (["derive", "--init-c", "-1"], "--init-c"),
    (["measure", "--depths", "2", "--device", "cuda:7"], "device"),
    (["validate", "--preset", "nope"], "preset"),
    (["validate", "--preset", "resnet-wide", "--only", "nope", "--out", "/nonexistent/x"], "only"),
    (["validate", "--preset", "quick", "--chunk", "0", "--out", "/nonexistent/x"], "chunk"),
    (["validate", "--preset", "quick", "--first-seed", "-1", "--out", "/nonexistent/x"], "first-seed"),
    (["compare-widths", "/nonexistent/a", "/nonexistent/b"], "not a finished campaign folder"),
    (["frobnicate"], "invalid choice"),
    (["derive", "--padding", "reflect"], "padding"),
    (["boundary", "--depths", "4", "--kernel", "4"], "kernel"),
    (["boundary", "--depths", "4", "--kernel", "33", "--spatial", "32"], "kernel"),
    (["boundary", "--depths", "0,4"], "depths"),
    (["boundary", "--depths", "4", "--dim", "3"], "dim"),
    (["boundary", "--kernel", "3"], "depths"),
    (["boundary", "--depths", "4", "--tolerance", "0"], "tolerance"),
    # values that used to be changed or ignored silently
    (["transfer", "--lr", "0.1", "--from-depth", "0", "--to-depth", "4"], "depth must be"),
    (["transfer", "--lr", "0.1", "--from-depth", "2", "--to-depth", "4", "--to-width", "0"], "width must be"),
    (["predict", "--family", "transformer", "--depths", "2,4", "--padding", "zero"], "no meaning for a transformer"),
])
def test_bad_input_one_line_exit_2(args, needle, capsys):
    code, out, err = run(args, capsys)
    assert code == 2
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in err


@pytest.mark.parametrize("cmd", ["derive", "predict", "measure", "validate", "boundary", "depth", "compare-widths"])
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


def test_boundary_json_contract_and_regime(capsys):
    """The issue's command line: per-depth eta* ratio, regime parameter and the claim's verdict
    (linear chain: the exact operator law, fast; the ReLU kernel law below)."""
    code, out, _ = run(["boundary", "--dim", "1", "--kernel", "3", "--spatial", "32", "--depths", "4,8,16,32",
                        "--activation", "linear", "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    for key in ("depths", "eta_ratio", "s_bar_ratio", "regime_parameter", "slope_shift", "constant_level",
                "claim_holds", "top_eigenvalue", "top_eigenvalue_asymptotic", "per_depth", "method"):
        assert key in d, key
    assert d["depths"] == [4, 8, 16, 32] and d["method"] == "operator"
    assert d["regime_parameter"] == pytest.approx([L * 9 / 32**2 for L in (4, 8, 16, 32)])
    # zero padding loses update size at the edges: eta* ratio > 1 and growing with depth
    assert all(r > 1 for r in d["eta_ratio"]) and d["eta_ratio"] == sorted(d["eta_ratio"])
    assert d["constant_level"] == [abs(s) <= d["slope_tolerance"] for s in d["slope_shift"]]
    assert d["constant_level"][0] and not d["constant_level"][-1] and not d["claim_holds"]
    code, out, _ = run(["boundary", "--activation", "linear", "--spatial", "256", "--depths", "2", "--json"], capsys)
    assert json.loads(out)["claim_holds"] is True


def test_boundary_relu_uses_the_kernel_law(capsys, monkeypatch, tmp_path):
    """ReLU at N = 32: the exact kernel law (Monte Carlo over inputs, progress on stderr) shifts the
    slope by more than 0.05 already at L = 4, as measured in the campaign (+0.072)."""
    from amutheory.api.summaries import boundary_summary
    from amutheory.symbolic.chain import kernel_law

    # every cache this process or an earlier run may hold, emptied for this test: the law is computed
    monkeypatch.setenv("AMUTHEORY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(kernel_law, "_MC_CACHE", {})
    boundary_summary.cache_clear()
    code, out, err = run(["boundary", "--spatial", "32", "--depths", "4,8", "--json"], capsys)
    assert code == 0 and "input draws" in err
    d = json.loads(out)
    assert d["method"] == "kernel" and not any(d["constant_level"]) and not d["claim_holds"]
    assert all(r["s_bar_ratio_se"] < 0.01 * r["s_bar_ratio"] for r in d["per_depth"])
    # asked again in the same process (as another test on this worker may have done first): served
    # from the cache, and stderr says so rather than printing nothing
    code, out2, err = run(["boundary", "--spatial", "32", "--depths", "4,8", "--json"], capsys)
    assert code == 0 and "served from the cache" in err and json.loads(out2) == d


def test_derive_and_predict_zero_padding(capsys):
    code, out, _ = run(["derive", "--padding", "zeros", "--spatial", "16", "--depths", "8", "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    assert d["exponent"] == "-3/2" and "boundary" in d
    assert any("zero padding regime" in a for a in d["assumptions"])
    assert d["boundary"]["per_depth"][0]["regime_parameter"] == pytest.approx(8 * 9 / 256)
    common = ["--padding", "zero", "--spatial", "8", "--width", "16", "--json"]
    code, out, _ = run(["predict", *common, "--depths", "4,8", "--constants", "mlp-limit"], capsys)
    zero = json.loads(out)
    code, out, _ = run(["predict", *common[2:], "--depths", "4,8", "--constants", "mlp-limit"], capsys)
    circ = json.loads(out)
    assert all(z > c for z, c in zip(zero["eta_star"], circ["eta_star"]))


def test_closed_output_pipe_is_not_a_traceback():
    """``amutheory derive ... | head -c 1``: the reader is gone before the CLI writes (the parent
    closes its end at once, the child needs seconds to import), so the write meets EPIPE; the CLI
    exits 141 (128 + SIGPIPE) quietly instead of printing a BrokenPipeError traceback."""

    proc = subprocess.Popen([sys.executable, "-m", "amutheory", "derive", "--family", "resnet", "--branch",
                             "conv-mlp", "--init", "k-last", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert "Traceback" not in err and "BrokenPipe" not in err


# --------------------------------------------------------------------------- outputs and threads
TINY_MEASURE = ["measure", "--depths", "2", "--width", "4", "--spatial", "4", "--batch", "2", "--seeds", "2"]
#: a measurement that takes many seconds: a bad --out must be refused before it starts
LONG_MEASURE = ["measure", "--depths", "8,16,32", "--width", "64", "--seeds", "64"]


@pytest.mark.parametrize("kind, needle", [
    ("missing-folder", "does not exist"), ("folder", "is a folder"), ("file-as-parent", "is a file, not a folder"),
    ("unwritable", "cannot write"), ("empty", "empty path"),
])
def test_measure_refuses_a_bad_out_before_any_probe(kind, needle, tmp_path, capsys):
    """Every kind of bad --out ends in one line naming --out; no depth was measured (the progress
    line of the first depth would be a second line on stderr)."""
    (tmp_path / "a-file").write_text("x")
    out = {"missing-folder": tmp_path / "nope" / "m.json", "folder": tmp_path, "unwritable": "/proc/m.json",
           "file-as-parent": tmp_path / "a-file" / "m.json", "empty": ""}[kind]
    code, stdout, err = run([*LONG_MEASURE, "--out", str(out)], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "--out" in lines[0] and needle in lines[0], err
    assert stdout == "" and (tmp_path / "a-file").read_text() == "x"


def test_measure_overwrites_an_existing_out_file(tmp_path, capsys):
    target = tmp_path / "m.json"
    target.write_text("old")
    code, _, _ = run([*TINY_MEASURE, "--out", str(target), "--quiet"], capsys)
    assert code == 0 and json.loads(target.read_text())["depths"] == [2]
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]  # no temporary file left behind


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a device that is always full)")
def test_measure_keeps_the_result_when_the_final_write_fails(capsys):
    """--out passes the check (the device can be opened for writing) but every write fails (ENOSPC):
    the result still reaches stdout, one line says the write failed, and the device is not replaced."""
    code, stdout, err = run([*TINY_MEASURE, "--out", "/dev/full", "--json", "--compact"], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "could not write --out /dev/full" in lines[0]
    assert json.loads(stdout)["depths"] == [2]
    assert not os.path.isfile("/dev/full")


@pytest.mark.parametrize("flags, threads", [([], 1), (["--threads", "2"], 2)])
def test_threads_default_to_one_and_are_set_before_the_command(flags, threads, capsys):
    import torch

    torch.set_num_threads(3)  # anything else: the command must set its own
    code, _, _ = run([*TINY_MEASURE, "--quiet", *flags], capsys)
    assert code == 0 and torch.get_num_threads() == threads


def test_derive_imports_no_torch():
    """derive accepts --threads like every command but stays torch-free (it never needs torch)."""
    script = ("import sys; from amutheory.cli import main; code = main(['derive', '--json', '--threads', '2']); "
              "print('TORCH', 'torch' in sys.modules, code)")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert res.stdout.strip().splitlines()[-1] == "TORCH False 0", res.stderr[-2000:]


def test_measure_notes_where_the_seed_mean_interval_undercovers(capsys):
    """A linear MLP at width 8 and L = 16 (L/n = 2): the seeds' Var[ln s_bar] is well above 1 (about 2 L/n for a
    single layer's chi-square factors), so the text output says to read the geometric mean's interval; at L = 1 it
    is far below and nothing is noted."""
    common = ["measure", "--family", "mlp", "--activation", "linear", "--width", "8", "--input-channels", "8",
              "--seeds", "48", "--quiet"]
    code, out, _ = run([*common, "--depths", "1,16", "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    assert d["var_ln_s_bar"][0] < 1.0 <= d["var_ln_s_bar"][1]
    code, out, _ = run([*common, "--depths", "1,16"], capsys)
    assert code == 0 and "note: at L = 16 the seeds' Var[ln s_bar] is 1 or more" in out
    code, out, _ = run([*common, "--depths", "1,2"], capsys)
    assert code == 0 and "Var[ln s_bar]" not in out
