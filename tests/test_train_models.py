"""Every architecture trains as a cell: conv chains, residual nets, transformers, a model factory,
the training layers; and the GPU path against the CPU (skipped without CUDA)."""

import math

import pytest
import torch

from amutheory.spec import ArchSpec
from amutheory.train import Cell, run_sweep, spec_for_data
from amutheory.train.run import build_network, init_label, train_cell, train_group

FACTORY = '''
import torch
from torch import nn

def mlp(depth, width):
    layers = [nn.Flatten()]
    fan_in = 8 * 8
    for _ in range(depth):
        layers += [nn.Linear(fan_in, width), nn.ReLU()]
        fan_in = width
    return nn.Sequential(*layers, nn.Linear(fan_in, 10))

def broken(depth, width):
    raise RuntimeError("no such net")
'''


def _cells(spec, dataset="digits", lrs=(0.01, 0.1), **kw):
    return [Cell(spec=spec_for_data(spec, dataset), lr=lr, dataset=dataset, steps=8, batch_size=16, **kw) for lr in lrs]


@pytest.mark.parametrize("spec", [
    ArchSpec(family="conv", dim=1, depth=2, width=8),
    ArchSpec(family="resnet", dim=2, depth=2, width=8, branch="conv-mlp", init="k-last"),
    ArchSpec(family="resnet", dim=1, depth=2, width=8, branch="preact", init="sqrt-multiplier"),
    ArchSpec(family="transformer", depth=2, width=8, heads=2),
], ids=["conv1d", "resnet2d-conv-mlp", "resnet1d-preact", "transformer"])
def test_every_family_trains_and_the_engines_agree(spec):
    # float64: the two engines differ by rounding only (~1e-15 per step over 8 steps)
    cells = _cells(spec, dtype="float64")
    loop, vec = [train_cell(c) for c in cells], train_group(cells)
    for a, b in zip(loop, vec):
        assert a["key"] == b["key"] and not a["diverged"]
        assert math.isclose(a["score"], b["score"], rel_tol=1e-9)
        assert math.isclose(a["test_loss"], b["test_loss"], rel_tol=1e-9)
        assert 0.0 <= a["test_accuracy"] <= 1.0


def test_norm_layers_train_in_residual_nets():
    cells = _cells(ArchSpec(family="resnet", dim=2, depth=2, width=8, branch="conv"), norm="batch", dtype="float64")
    net = build_network(cells[0])
    assert any(isinstance(m, torch.nn.BatchNorm2d) for m in net.modules())
    for a, b in zip([train_cell(c) for c in cells], train_group(cells)):
        assert math.isclose(a["score"], b["score"], rel_tol=1e-9)


def test_gelu_cell_records_the_init_constant_used():
    crit = Cell(spec=spec_for_data(ArchSpec(dim=2, depth=2, width=8, activation="gelu"), "digits"), lr=0.1,
                dataset="digits")
    he = crit.with_(spec=crit.spec.with_(init_c=2.0))
    assert crit.to_dict()["spec"]["init_c"] is None and he.to_dict()["spec"]["init_c"] == 2.0
    assert crit.key() != he.key()
    assert abs(crit.spec.c - 2.0) > 1e-3  # GELU's critical constant is not He's 2
    assert init_label(crit)["label"] == "critical" and init_label(he) == {"c": 2.0, "label": "He"}
    relu = crit.with_(spec=crit.spec.with_(activation="relu"))
    assert init_label(relu)["label"] == "critical = He"
    assert train_cell(he.with_(steps=2))["init"]["label"] == "He"


def test_model_factory_sweep(tmp_path):
    path = tmp_path / "nets.py"
    path.write_text(FACTORY)
    spec = spec_for_data(ArchSpec(dim=2, depth=1, width=8), "digits")
    template = Cell(spec=spec, lr=1.0, dataset="digits", steps=10, batch_size=16, model=f"{path}:mlp")
    out = run_sweep(template, [1, 3], [8], [0.01, 0.1, 1.0], [0, 1], tmp_path / "out", figures=False)
    assert [r["depth"] for r in out["runs"]] == [1, 3]
    # the factory's depth really changes the net: 1 + depth linear layers
    net = build_network(template.with_(spec=spec.with_(depth=3)))
    assert sum(isinstance(m, torch.nn.Linear) for m in net.modules()) == 4
    with pytest.raises(ValueError, match="no such net"):
        build_network(template.with_(model=f"{path}:broken"))
    with pytest.raises(ValueError, match="factory builds its own layers"):
        template.with_(norm="batch")


@pytest.mark.gpu
def test_cuda_cells_match_cpu():
    # float64 on both devices: cuDNN and CPU kernels round differently, ~1e-12 over 8 steps
    cells = _cells(ArchSpec(dim=2, depth=3, width=16), dtype="float64")
    cpu = train_group(cells)
    gpu = train_group([c.with_(device="cuda") for c in cells])
    for a, b in zip(cpu, gpu):
        assert a["key"] == b["key"]
        assert math.isclose(a["score"], b["score"], rel_tol=1e-8)


def test_spec_for_data_reads_the_shape_from_the_files(tmp_path):
    # a 12x12 MNIST-format fixture: the spec takes the files' shape, not MNIST's usual 28
    from amutheory.train.data import write_mnist_fixture

    write_mnist_fixture(tmp_path, n_train=32, n_test=8, size=12)
    spec = spec_for_data(ArchSpec(dim=2, depth=2, width=8), "mnist", tmp_path)
    assert (spec.input_channels, spec.spatial, spec.outputs) == (1, 12, 10)
    one_d = spec_for_data(ArchSpec(dim=1, depth=2, width=8), "mnist", tmp_path)
    assert (one_d.input_channels, one_d.spatial) == (12, 12)
    rec = train_cell(Cell(spec=spec, lr=0.1, dataset="mnist", data_dir=str(tmp_path), steps=3, batch_size=8))
    assert rec["test_accuracy"] is not None
