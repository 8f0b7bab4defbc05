"""The coord check (issue 39, part 2; acceptance 3): ``amutheory coord-check`` and
``amutheory.coord_check`` on models written here, not in the package -- a pre-LN Transformer over 16
tokens and a deep linear MLP -- the CSV/JSON contract, and bad input."""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import amutheory
from amutheory.cli import main
from amutheory.coord import RECORD_KEYS
from amutheory.coord.reading import fit_slopes, trend

TRANSFORMER = '''
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width, heads=2):
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.fc2(torch.relu(self.fc1(self.ln2(x))))


class Net(nn.Module):
    def __init__(self, depth, width=16, vocab=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.layers = nn.ModuleList(Block(width) for _ in range(depth))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.layers:
            x = block(x)
        return self.head(self.norm(x))


def factory(depth, width=16):
    return Net(depth, width)
'''


class LinearMLP(nn.Module):
    """A plain deep linear MLP at the critical init Var[W] = 1/fan_in: each hidden layer's output
    changes by the sum of the changes of the layers below it, so under a fixed rate the hidden layers'
    update grows with depth."""

    def __init__(self, depth, width=32, inputs=8, classes=4):
        super().__init__()
        self.inp = nn.Linear(inputs, width, bias=False)
        self.hidden = nn.ModuleList(nn.Linear(width, width, bias=False) for _ in range(depth))
        self.head = nn.Linear(width, classes, bias=False)
        for layer in self.modules():
            if isinstance(layer, nn.Linear):
                nn.init.normal_(layer.weight, std=layer.in_features ** -0.5)

    def forward(self, x):
        x = self.inp(x)
        for layer in self.hidden:
            x = layer(x)
        return self.head(x)


def linear_mlp(depth, width=32):
    return LinearMLP(depth, width)


@pytest.fixture(scope="module")
def transformer_file(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("coord") / "my_transformer.py"
    path.write_text(TRANSFORMER)
    return f"{path}:factory"


def test_transformer_cli_table_figure_reading(transformer_file, tmp_path):
    """Acceptance 3: three depths of a user's pre-LN Transformer, one core; the wall time is printed,
    not asserted (the machine is shared)."""
    out = tmp_path / "coord"
    argv = [sys.executable, "-m", "amutheory", "coord-check", "--model", transformer_file, "--input-shape", "8,16",
            "--depths", "2,4,8", "--input-kind", "tokens", "--vocab", "16", "--steps", "3", "--seeds", "3",
            "--lr", "0.05", "--out", str(out), "--threads", "1"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env)
    wall = time.perf_counter() - start
    print(f"coord-check on the Transformer at depths 2,4,8 (one core): {wall:.1f} s wall")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "coord check depth 8 (3/3)" in proc.stderr  # progress lines on stderr
    for name in ("coord.csv", "coord.json", "coord.png"):
        assert (out / name).stat().st_size > 0
    assert (out / "coord.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(out / "coord.csv") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == RECORD_KEYS
    # 3 depths x 3 seeds x 4 steps x (3 modules per block x depth + the readout)
    assert len(rows) == 3 * 4 * sum(3 * L + 1 for L in (2, 4, 8))
    data = json.loads((out / "coord.json").read_text())
    groups = {r["group"] for r in data["reading"]["groups"]}
    assert groups == {"layers.*.attn", "layers.*.fc1", "layers.*.fc2", "readout"}
    assert data["reading"]["kind"] == "transformer"
    for row in data["reading"]["groups"]:
        assert row["depth_trend"] in ("flat", "growing", "shrinking")
        assert row["expected_depth_trend"] == ["growing", "flat"]
        lo, hi = row["depth_slope_ci"]
        assert lo <= row["depth_slope"] <= hi
    assert "layers.*.fc1" in proc.stdout and "wrote" in proc.stdout


def test_deep_linear_mlp_reads_growing_hidden_updates():
    """A check that can fail: under a fixed rate the hidden layers of a deep linear chain accumulate the
    changes of every layer below, so their layer-averaged update must read 'growing' at every step."""
    res = amutheory.coord_check(linear_mlp, (16, 8), [2, 4, 8, 16], widths=[32], steps=2, lr=0.02, seeds=4)
    reading = res["reading"]
    assert reading["kind"] == "chain"
    hidden = [r for r in reading["groups"] if r["group"] == "hidden.*"]
    assert [r["step"] for r in hidden] == [1, 2]
    for row in hidden:
        assert row["depth_trend"] == "growing" and row["depth_slope_ci"][0] > 0, row
        assert row["agrees"] is True
    # the stem (the input layer) sees no accumulation from below: its first update is the gradient that reaches
    # it, carried back at one size by the critical init -- flat, as the guide says; from step 2 on nothing is
    # stated (training has moved the gradient, faster in the deeper net), and the row says why
    inp = {r["step"]: r for r in reading["groups"] if r["group"] == "inp"}
    assert inp[1]["role"] == "stem" and inp[1]["expected_depth_trend"] == ["flat"]
    assert inp[1]["depth_trend"] == "flat" and inp[1]["agrees"] is True and inp[1]["hint"] is None
    assert inp[2]["expected_depth_trend"] is None and inp[2]["agrees"] is None
    assert "first step" in inp[2]["expected_why"]
    assert inp[2]["hint"] is None or inp[2]["hint"].startswith("no expectation: ")
    assert "critical init" in reading["stem_expectation"]


def test_records_contract_and_step_zero(tmp_path):
    res = amutheory.coord_check(linear_mlp, (4, 8), [1, 2], widths=[8, 16], steps=2, optimizer="adam", lr=1e-3,
                                seeds=[0, 5], out=tmp_path / "c")
    records = res["records"]
    assert isinstance(records, list) and all(tuple(r) == RECORD_KEYS for r in records)
    sizes = {(r["depth"], r["width"]) for r in records}
    assert sizes == {(1, 8), (1, 16), (2, 8), (2, 16)}
    assert {r["seed"] for r in records} == {0, 5} and {r["step"] for r in records} == {0, 1, 2}
    assert all(r["update_rms"] == 0.0 and r["activation_rms"] > 0 for r in records if r["step"] == 0)
    assert all(r["update_rms"] > 0 for r in records if r["step"] > 0)
    assert {r["group"] for r in records} == {"inp", "hidden.*", "readout"}
    # two widths: the width slope is fitted too
    row = res["reading"]["groups"][0]
    assert set(row) >= {"group", "step", "depth_slope", "depth_slope_ci", "depth_trend", "width_slope",
                        "width_slope_ci", "width_trend", "expected_depth_trend", "agrees"}
    assert row["width_slope"] is not None
    data = json.loads((tmp_path / "c" / "coord.json").read_text())
    assert set(data) >= {"records", "reading", "model", "depths", "widths", "steps", "optimizer", "lr", "seeds"}
    assert set(data["reading"]) >= {"rule", "kind", "expectation", "groups"}
    # the same seeds give the same table
    again = amutheory.coord_check(linear_mlp, (4, 8), [1, 2], widths=[8, 16], steps=2, optimizer="adam", lr=1e-3,
                                  seeds=[0, 5])
    assert again["records"] == records


def test_slope_fit_and_rule():
    """The fit recovers a known power of depth; the rule reads the interval's side of 0."""
    rng = np.random.default_rng(1)
    seeds = list(range(6))
    values = {(L, None, s): 0.1 * L ** 1.5 * math.exp(0.05 * rng.standard_normal())
              for L in (2, 4, 8) for s in seeds}
    fit = fit_slopes(values, seeds)
    assert abs(fit["depth_slope"] - 1.5) < 0.1 and fit["width_slope"] is None
    assert trend(fit["depth_slope_ci"]) == "growing"
    assert trend([-0.3, -0.1]) == "shrinking" and trend([-0.1, 0.2]) == "flat"
    flat = {(L, None, s): math.exp(0.05 * rng.standard_normal()) for L in (2, 4, 8) for s in seeds}
    assert trend(fit_slopes(flat, seeds)["depth_slope_ci"]) == "flat"


def test_bad_input(transformer_file, tmp_path, capsys):
    base = ["coord-check", "--model", transformer_file, "--input-shape", "8,16", "--depths", "2,4",
            "--out", str(tmp_path / "c"), "--quiet"]
    for extra, needle in ((["--input-kind", "tokens"], "--vocab"),  # tokens without a vocabulary
                          ([], "--input-shape"),  # float inputs into an Embedding: the model does not run
                          (["--input-kind", "tokens", "--vocab", "16", "--layers", "Conv9d"], "layers"),
                          (["--input-kind", "tokens", "--vocab", "16", "--seeds", "1"], "--seeds")):
        assert main(base + extra) == 2
        lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert len(lines) == 1 and needle in lines[0] and "Traceback" not in lines[0], lines
    assert not (tmp_path / "c").exists()  # refused before any work
    with pytest.raises(ValueError, match="depths"):
        amutheory.coord_check(linear_mlp, (4, 8), [0, 2])
    with pytest.raises(TypeError, match="factory"):
        amutheory.coord_check(3, (4, 8), [1, 2])
    with pytest.raises(ValueError, match="optimizer"):
        amutheory.coord_check(linear_mlp, (4, 8), [1, 2], optimizer="lion")


def test_json_is_strict(transformer_file, tmp_path, capsys):
    argv = ["coord-check", "--model", transformer_file, "--input-shape", "4,16", "--depths", "1,2", "--input-kind",
            "tokens", "--vocab", "16", "--steps", "1", "--seeds", "2", "--out", str(tmp_path / "c"), "--json"]
    assert main(argv) == 0
    out = capsys.readouterr().out

    def refuse(name):
        raise ValueError(name)

    data = json.loads(out, parse_constant=refuse)
    assert data["reading"]["groups"] and data["records"]


def test_help_documents_every_flag():
    res = subprocess.run([sys.executable, "-m", "amutheory", "coord-check", "--help"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(Path(amutheory.__file__).resolve().parents[1])})
    assert res.returncode == 0
    from amutheory.cli import build_parser

    sub = build_parser()._subparsers._group_actions[0].choices["coord-check"]
    for action in sub._actions:
        for flag in action.option_strings:
            assert flag in res.stdout, flag
        assert action.help, action.option_strings


class ResidualMLP(nn.Module):
    def __init__(self, depth, width=8):
        super().__init__()
        self.inp, self.head = nn.Linear(8, width), nn.Linear(width, 3)
        self.blocks = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def forward(self, x):
        x = self.inp(x)
        for block in self.blocks:
            x = x + torch.relu(block(x))
        return self.head(x)


def test_own_batch_and_residual_kind():
    """A user's (inputs, targets) batch replaces the random one; identity skips read as residual."""
    gen = torch.Generator().manual_seed(3)
    batch = (torch.randn(6, 8, generator=gen), torch.randint(0, 3, (6,), generator=gen))
    res = amutheory.coord_check(ResidualMLP, (6, 8), [1, 3], steps=1, lr=0.1, seeds=2, dataset=batch)
    assert res["reading"]["kind"] == "residual" and res["dataset"] is True
    assert {r["group"] for r in res["records"]} == {"inp", "blocks.*", "readout"}
    assert all(r["width"] is None for r in res["records"])  # no widths: the factory's own
    with pytest.raises(TypeError, match="dataset"):
        amutheory.coord_check(ResidualMLP, (6, 8), [1, 3], dataset=batch[0])


def test_groups_of_a_sequential_name_their_module_type():
    from amutheory.coord.records import group_of

    assert group_of("blocks.3.fc1", "Linear") == "blocks.*.fc1"
    assert group_of("3", "Linear") == "Linear *" and group_of("0.2", "Conv2d") == "Conv2d *.*"
