"""Outputs a newcomer reads at first sight (issue 46, item 5), on models written here: every exponent of
``measure --model`` labelled with its axis and the law's axis named; ``coord-check``'s expectation for a
stem as the guide states it, and a hint where a reading differs (a layer scale near zero, an init below
critical, a Transformer's stem); a user model's ``summary.json`` describing the model it is; ``predict``
and ``measure`` printing the family's depth symbol; no private name in ``amutheory.api.__all__``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import amutheory
from amutheory.cli import main
from amutheory.coord.expectation import expected_trends, expected_why, group_roles
from amutheory.coord.hints import hint, model_facts

MODELS = '''
import torch
from torch import nn


class Block(nn.Module):
    """x + gamma * fc2(relu(fc1(norm(x)))): a residual branch with a layer scale gamma"""

    def __init__(self, width, scale):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1, self.fc2 = nn.Linear(width, 2 * width), nn.Linear(2 * width, width)
        self.gamma = nn.Parameter(scale * torch.ones(width))

    def forward(self, x):
        return x + self.gamma * self.fc2(torch.relu(self.fc1(self.norm(x))))


class Net(nn.Module):
    def __init__(self, depth, width, scale, inputs=8, classes=4):
        super().__init__()
        self.stem = nn.Linear(inputs, width)
        self.blocks = nn.Sequential(*[Block(width, scale) for _ in range(depth)])
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x.flatten(1))))


def layer_scale(depth=2, width=16):
    """ConvNeXt's convention: every branch scaled by gamma = 1e-6 at init"""
    return Net(depth, width, 1e-6)


def residual(depth=2, width=16):
    return Net(depth, width, 1.0)


def digits(depth=2, width=16):
    """a residual MLP for 8x8 digits (1 x 8 x 8 images, 10 classes)"""
    return Net(depth, width, 1.0, inputs=64, classes=10)
'''


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    path = tmp_path_factory.mktemp("first_sight") / "my_models.py"
    path.write_text(MODELS)
    sys.path.insert(0, str(path.parent))
    try:
        import my_models
    finally:
        sys.path.remove(str(path.parent))
    return str(path), my_models


def _run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    assert code == 0, out.err[-2000:]
    return out.out


# ------------------------------------------------------------------ measure --model: the two axes
def test_measure_model_labels_each_exponent_with_its_axis(models, capsys):
    path, _ = models
    argv = ["measure", "--model", f"{path}:residual", "--input-shape", "4,8", "--depths", "1,2,4", "--seeds", "3",
            "--quiet"]
    text = _run(argv, capsys)
    for needle in ("fitted exponent in depth L (mean)", "fitted exponent in effective depth L_eff (mean)",
                   "L: the factory's depth= argument", "L_eff: the shortest input -> output path",
                   "the -3/2 law is eta* ~ L_eff^(-3/2), stated in the effective depth",
                   "compare -1.5 with the exponent in L_eff"):
        assert needle in text, text
    effective_lines = [line for line in text.splitlines() if line.startswith("fitted exponent in effective depth")]
    assert len(effective_lines) == 2 and all("-1.5 inside the CI" in line or "-1.5 outside the CI" in line
                                              for line in effective_lines)
    d = json.loads(_run(argv + ["--json", "--compact"], capsys))
    assert d["law_axis"] == "effective_depth" and d["law_exponent"] == -1.5
    assert d["depth_axis"].startswith("depth L: the factory's depth= argument")
    assert d["effective_depth_axis"].startswith("effective depth L_eff")
    # the keys of before are all still there
    for key in ("fitted_exponent_mean", "fitted_exponent_effective_mean", "effective_depths", "layers_counted"):
        assert d[key] is not None


def test_measure_model_without_two_effective_depths_says_so(models, capsys):
    path, _ = models
    text = _run(["measure", "--model", f"{path}:residual", "--input-shape", "4,8", "--depths", "3", "--seeds", "2",
                 "--quiet"], capsys)
    assert "no exponent in L_eff here" in text and "compare -1.5" not in text


# ------------------------------------------------------------------ the family's depth symbol
def test_predict_and_measure_print_the_family_depth_symbol(capsys):
    resnet = ["--family", "resnet", "--branch", "conv-mlp", "--init", "k-last", "--kernel", "1", "--spatial", "1",
              "--batch", "1", "--width", "16"]
    text = _run(["predict", *resnet, "--depths", "4,16", "--constants", "derive", "--statistic", "geo"], capsys)
    header = next(line for line in text.splitlines() if "eta*" in line and "s_bar" in line)
    assert header.split()[0] == "K" and "dln eta*/dln K" in header, text
    conv = ["--dim", "1", "--width", "8", "--kernel", "3", "--spatial", "5", "--batch", "2"]
    text = _run(["predict", *conv, "--depths", "4,8", "--constants", "mlp-limit"], capsys)
    header = next(line for line in text.splitlines() if "eta*" in line and "s_bar" in line)
    assert header.split()[0] == "L" and "dln eta*/dln L" in header, text
    text = _run(["measure", "--family", "resnet", "--width", "4", "--spatial", "4", "--batch", "2", "--depths", "2,3",
                 "--seeds", "2", "--quiet"], capsys)
    assert text.splitlines()[1].split()[0] == "K" and "fitted exponent in K (mean)" in text, text


# ------------------------------------------------------------------ amutheory.api.__all__
def test_api_all_has_no_private_name():
    import amutheory.api as api

    assert not [n for n in api.__all__ if n.startswith("_")]
    from amutheory.api import _dropped_parts  # still importable  # noqa: F401


# ------------------------------------------------------------------ coord-check: expectations
def test_group_roles_and_the_stem_expectation_per_kind_and_optimizer():
    roles = group_roles(["stem", "blocks.*.fc1", "neck", "readout"], "readout")
    assert roles == {"stem": "stem", "blocks.*.fc1": "repeated", "neck": "repeated", "readout": "readout"}
    assert group_roles(["inp", "out", "readout"], "readout") == {"inp": "single", "out": "single",
                                                                 "readout": "readout"}
    # the guide (docs/your_model.md, 4): the stem's first step
    assert expected_trends("chain", "stem", "readout", "stem", "sgd") == ("flat",)
    assert expected_trends("residual", "stem", "readout", "stem", "sgd") == ("growing",)
    assert expected_trends("transformer", "patch_embed", "readout", "stem", "sgd") == ()
    for kind in ("chain", "residual", "transformer"):
        assert expected_trends(kind, "stem", "readout", "stem", "adam") == ("flat",)
        assert expected_trends(kind, "stem", "readout", "stem", "sgd", step=2) == ()
        assert "first step" in expected_why(kind, "stem", "sgd", step=2)
    assert "final normalisation" in expected_why("transformer", "stem", "sgd")
    # the repeated groups and the readout as before
    assert expected_trends("residual", "blocks.*.fc1", "readout") == ("growing",)
    assert expected_trends("transformer", "readout", "readout") == ("growing", "flat")
    assert expected_trends("chain", "inp", "readout") == ()


def _row(trend, allowed, slope=0.0, ci=(-0.1, 0.1), step=1):
    return {"depth_trend": trend, "expected_depth_trend": allowed, "depth_slope": slope,
            "depth_slope_ci": list(ci), "step": step}


def test_hints_say_why_a_reading_differs():
    gains = {"near_zero_gains": {"parameters": ["blocks.*.gamma"], "max_abs": 1e-6}, "init": None}
    below = {"near_zero_gains": None, "init": {"var_fan_in": 1 / 3, "critical": 2.0, "ratio": 1 / 6,
                                               "tolerance": 2.0, "activation": "relu"}}
    why = expected_why("residual", "repeated")
    h = hint(_row("flat", ["growing"]), "repeated", why, gains)
    assert h.startswith("gains near zero (blocks.*.gamma") and "nothing accumulates with depth" in h
    h = hint(_row("shrinking", ["growing"], -0.9, (-1.0, -0.8)), "repeated", why, below)
    assert "init is below critical" in h and "0.333" in h
    h = hint(_row("flat", ["growing"], 0.02, (-0.01, 0.05)), "repeated", why, {})
    assert h.startswith("flat means no trend resolved at these seeds (interval [-0.01, 0.05])")
    h = hint(_row("shrinking", ["flat"], -0.06, (-0.07, -0.05)), "stem", expected_why("transformer", "stem", "adam"),
             below, "adam")
    assert "init" not in h and "under Adam the stem's step" in h and "x0.959 per doubling of depth" in h
    why = expected_why("transformer", "stem")
    h = hint(_row("shrinking", None, -0.3, (-0.4, -0.2)), "stem", why, {})
    assert h.startswith("no expectation: ") and "final normalisation" in h
    # as expected, or nothing to say: no hint
    assert hint(_row("growing", ["growing"], 1.0, (0.8, 1.2)), "repeated", why, gains) is None
    assert hint(_row("flat", None), "stem", why, gains) is None
    assert hint(_row(None, ["growing"]), "repeated", why, gains) is None


def test_model_facts_find_a_layer_scale_and_the_default_init(models):
    _, mod = models
    facts = model_facts(mod.layer_scale(depth=3), (4, 8))
    assert facts["near_zero_gains"]["parameters"] == ["blocks.*.gamma"]
    assert 0 < facts["near_zero_gains"]["max_abs"] <= 1e-6
    assert facts["init"]["critical"] == pytest.approx(2.0) and facts["init"]["ratio"] < 0.5  # PyTorch's 1/3
    facts = model_facts(mod.residual(depth=3), (4, 8))  # gains of 1, zero biases: no near-zero gain
    assert facts["near_zero_gains"] is None


def test_coord_check_explains_a_layer_scale_stack(models, tmp_path):
    """A check that can fail: with every branch scaled by 1e-6 the gradient reaches the stem through the skips
    alone and nothing accumulates with depth at step 1, so the stem (expected growing, a residual net under
    SGD) and the readout read flat -- and each says why."""
    path, _ = models
    res = amutheory.coord_check(f"{path}:layer_scale", (16, 8), [1, 2, 4, 8], steps=1, lr=0.01, seeds=4)
    reading = res["reading"]
    assert reading["kind"] == "residual" and reading["facts"]["near_zero_gains"]["parameters"] == ["blocks.*.gamma"]
    assert "identity skip" in reading["stem_expectation"]
    rows = {r["group"]: r for r in reading["groups"]}
    assert rows["stem"]["role"] == "stem" and rows["stem"]["expected_depth_trend"] == ["growing"]
    for group in ("stem", "readout"):
        assert rows[group]["depth_trend"] == "flat" and rows[group]["agrees"] is False, rows[group]
        assert rows[group]["hint"].startswith("gains near zero (blocks.*.gamma")
    for row in reading["groups"]:
        assert set(row) >= {"role", "expected_why", "hint"}
        assert (row["hint"] is None) == (row["agrees"] is not False and (row["expected_depth_trend"] is not None
                                                                         or row["depth_trend"] in (None, "flat")))


def test_coord_check_cli_prints_the_stem_expectation_and_the_hints(models, tmp_path):
    path, _ = models
    out = tmp_path / "coord"
    proc = subprocess.run([sys.executable, "-m", "amutheory", "coord-check", "--model", f"{path}:layer_scale",
                           "--input-shape", "16,8", "--depths", "1,2,4,8", "--steps", "2", "--seeds", "4", "--lr",
                           "0.01", "--out", str(out), "--threads", "1"], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert any(line.startswith("expected of the stem (the layers before the first repeated group): ")
               for line in lines)
    hints = [line.strip() for line in lines if line.strip().startswith("hint: ")]
    assert hints and hints[0].startswith("hint: gains near zero (blocks.*.gamma")
    assert all(h.startswith("hint: gains near zero") or h.startswith("hint: as for ") or
               h.startswith("hint: no expectation: ") or h.startswith("hint: flat means") for h in hints), hints
    data = json.loads((out / "coord.json").read_text())
    assert [r["hint"] for r in data["reading"]["groups"] if r["hint"]]


# ------------------------------------------------------------------ a user model's summary.json
def test_sweep_summary_describes_a_user_model_as_the_model_it_is(models, tmp_path):
    path, _ = models
    out = tmp_path / "sweep"
    proc = subprocess.run([sys.executable, "-m", "amutheory", "sweep", "--model", f"{path}:digits", "--dataset",
                           "digits", "--dim", "2", "--depths", "1,2", "--width", "8", "--lr-range", "0.01,1",
                           "--points", "3", "--seeds", "2", "--steps", "4", "--workers", "1", "--no-figures",
                           "--out", str(out), "--threads", "1"], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    spec = summary["template"]["spec"]
    assert spec["family"] == "module" and summary["template"]["model"] == f"{path}:digits"
    for field in ("kernel", "padding", "activation", "readout"):  # conv-chain defaults the factory never reads
        assert field in spec and spec[field] is None
    assert spec["input_channels"] == 1 and spec["spatial"] == 8 and spec["outputs"] == 10
    m = summary["model"]
    assert m["factory"] == f"{path}:digits" and m["kind"] == "residual" and "residual addition" in m["kind_because"]
    assert m["input_shape"] == [1, 8, 8] and set(m["effective_depths"]) == {"1", "2"}
    assert m["effective_depths"]["2"] > m["effective_depths"]["1"] and "eta*_train" in m["measured"]
    assert "(L: the factory's depth= argument)" in proc.stdout and "traced as residual" in proc.stdout
    assert "user's module" in (out / "report.md").read_text()
    # the cells' keys are untouched: the same sweep resumes into the folder without training a cell
    again = subprocess.run(proc.args, capture_output=True, text=True, timeout=600,
                           env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads((out / "summary.json").read_text())["this_run"]["cells_run"] == 0


def test_a_builtin_summary_template_is_unchanged():
    from amutheory.train.described import summary_template

    fixed = {"spec": {"family": "conv", "kernel": 3}, "model": None, "optimizer": "sgd"}
    assert summary_template(fixed) is fixed
    shown = summary_template({**fixed, "model": "net.py:make"})
    assert shown["spec"] == {"family": "module", "kernel": None} and fixed["spec"]["family"] == "conv"

