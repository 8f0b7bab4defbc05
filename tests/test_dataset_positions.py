"""The ``digits-positions`` dataset: the digits as 8 tokens (image rows) with a one-hot position code."""

import math

import pytest
import torch

from amutheory.names import DATASETS
from amutheory.spec import ArchSpec
from amutheory.train import Cell, spec_for_data
from amutheory.train.data import POSITION_CODE, as_model_input, load_dataset, position_code
from amutheory.train.run import cell_data, train_cell, train_group

NAME = "digits-positions"
SPEC = ArchSpec(family="transformer", dim=1, depth=2, width=16, heads=2, mlp_ratio=2, init="none")


@pytest.fixture(scope="module")
def both():
    return load_dataset(NAME), load_dataset("digits")


def test_registered():
    assert NAME in DATASETS
    assert DATASETS[:5] == ("synthetic", "digits", "mnist", "cifar10", "cifar100")


def test_shapes(both):
    d, plain = both
    assert d.name == NAME and d.classes == 10
    assert d.input_shape == (16, 8)
    assert d.x_train.shape == (1440, 16, 8) and d.x_test.shape == (357, 16, 8)
    assert d.x_train.dtype == torch.float32 and d.y_train.dtype == torch.int64
    assert d.x_train.is_contiguous() and "position code" in d.source


def test_position_code_present_and_shared(both):
    d, _ = both
    code = position_code()
    assert torch.equal(code, torch.eye(8) * torch.tensor(POSITION_CODE, dtype=torch.float32))
    assert math.isclose(POSITION_CODE, math.sqrt(8))
    for x in (d.x_train, d.x_test):
        assert torch.equal(x[:, 8:], code.expand(len(x), -1, -1))  # every sample, the same code
    # each token carries its own position: the codes of the 8 tokens are distinct, one-hot
    assert torch.equal((d.x_train[0, 8:] != 0).sum(0), torch.ones(8, dtype=torch.int64))
    assert torch.equal(d.x_train[0, 8:].argmax(0), torch.arange(8))


def test_pixels_and_labels_are_the_digits(both):
    d, plain = both
    assert torch.equal(d.y_train, plain.y_train) and torch.equal(d.y_test, plain.y_test)
    # token r = image row r: x[n, c, r] = digits[n, 0, r, c]
    assert torch.equal(d.x_train[:, :8], plain.x_train[:, 0].transpose(1, 2))
    assert torch.equal(d.x_test[:, :8], plain.x_test[:, 0].transpose(1, 2))
    assert d.x_train[5, 3, 6] == plain.x_train[5, 0, 6, 3]


def test_plain_digits_unchanged(both):
    _, plain = both
    assert plain.name == "digits" and plain.input_shape == (1, 8, 8)
    assert abs(float(plain.x_train.mean())) < 1e-5 and abs(float(plain.x_train.std()) - 1) < 1e-3


def test_deterministic(both):
    d, _ = both
    again = load_dataset(NAME, seed=7, spatial=4)  # synthetic-only keywords are ignored
    for a, b in ((d.x_train, again.x_train), (d.x_test, again.x_test), (d.y_train, again.y_train),
                 (d.y_test, again.y_test)):
        assert torch.equal(a, b)
    assert d.source == again.source


def test_layout_per_family():
    tr = spec_for_data(SPEC, NAME)
    assert (tr.input_channels, tr.spatial, tr.outputs) == (16, 8, 10)
    mlp = spec_for_data(ArchSpec(family="mlp", depth=2, width=16), NAME)
    assert (mlp.input_channels, mlp.spatial, mlp.outputs) == (128, 1, 10)
    chain = spec_for_data(ArchSpec(family="conv", dim=1, depth=2, width=16), NAME)
    assert (chain.input_channels, chain.spatial) == (16, 8)
    with pytest.raises(ValueError, match=r"digits-positions is 8 tokens of 16 features: .*1-D") as err:
        spec_for_data(ArchSpec(family="conv", dim=2, depth=2, width=16), NAME)
    assert "\n" not in str(err.value)
    x = load_dataset(NAME).x_train[:3]
    assert as_model_input(x, 1) is x and as_model_input(x, 0).shape == (3, 128)


@pytest.fixture
def one_thread():
    """One torch thread for a tiny model (two threads on two busy cores are many times slower)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_transformer_trains_on_it(one_thread):
    """A real short run through the cell, the loop and the vectorised engine: finite, the loss falls,
    and the two engines agree."""
    spec = spec_for_data(SPEC, NAME).with_(batch=32)
    cell = Cell(spec=spec, lr=0.2, optimizer="sgd", dataset=NAME, steps=30, batch_size=32)
    x, y, xt, yt = cell_data(cell)
    assert x.shape == (1440, 16, 8) and xt.shape == (357, 16, 8)
    rec = train_cell(cell)
    group = train_group([cell.with_(lr=0.1), cell])
    assert rec["diverged"] is False and rec["init"] is not None
    assert math.isfinite(rec["final_loss"]) and rec["final_loss"] < math.log(10)
    losses = rec["curve"]["loss"]
    assert losses[-1] < losses[0]
    assert rec["test_accuracy"] is not None and rec["test_accuracy"] > 0.1
    assert math.isclose(group[1]["final_loss"], rec["final_loss"], rel_tol=1e-3)
