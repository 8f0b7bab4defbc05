"""Tests of amutheory.train.data: synthetic and digits data, local MNIST/CIFAR readers, the
restricted unpickler and the one-line errors."""

import gzip
import os
import pickle

import numpy as np
import pytest
import torch

from amutheory.train import data as D
from amutheory.train.data import (DATASETS, RestrictedUnpickler, as_model_input, load_dataset,
                                  write_cifar_fixture, write_mnist_fixture)

SMALL = dict(spatial=5, input_channels=2, n_train=96, n_test=32)


def _one_line_error(fn, *args, match=None, **kwargs) -> str:
    with pytest.raises(ValueError) as info:
        fn(*args, **kwargs)
    msg = str(info.value)
    assert "\n" not in msg and msg
    if match is not None:
        assert match in msg, msg
    return msg


def _standardised(raw: np.ndarray, train_raw: np.ndarray) -> np.ndarray:
    scaled = train_raw.astype(np.float64) / 255.0
    return (raw.astype(np.float64) / 255.0 - scaled.mean()) / scaled.std()


# ----------------------------------------------------------------------------- synthetic


@pytest.mark.parametrize("dim", [1, 2])
def test_synthetic_shapes_and_determinism(dim):
    a = load_dataset("synthetic", dim=dim, seed=3, **SMALL)
    b = load_dataset("synthetic", dim=dim, seed=3, **SMALL)
    shape = (2,) + (5,) * dim
    assert a.input_shape == shape and a.name == "synthetic" and a.classes == 10
    assert a.x_train.shape == (96,) + shape and a.x_test.shape == (32,) + shape
    assert a.x_train.dtype == torch.float32 and a.y_train.dtype == torch.int64 and a.y_test.dtype == torch.int64
    for t, u in ((a.x_train, b.x_train), (a.y_train, b.y_train), (a.x_test, b.x_test), (a.y_test, b.y_test)):
        assert torch.equal(t, u)
    assert len(torch.unique(a.y_train)) >= 5  # labels spread over several classes
    assert int(a.y_train.max()) < 10 and int(a.y_train.min()) >= 0
    assert "seed 3" in a.source and "\n" not in a.source
    c = load_dataset("synthetic", dim=dim, seed=4, **SMALL)
    assert not torch.equal(a.x_train, c.x_train)


def test_synthetic_default_labels_are_balanced():
    d = load_dataset("synthetic", dim=1, n_train=512, n_test=0)
    counts = torch.bincount(d.y_train, minlength=10)
    assert d.x_test is None and d.y_test is None
    assert counts.max() < 0.3 * 512 and (counts > 0).sum() >= 8


def test_synthetic_train_split_is_a_prefix_and_standardised():
    d = load_dataset("synthetic", dim=2, classes=3, **SMALL)
    assert set(torch.unique(d.y_train).tolist()) <= {0, 1, 2} and d.classes == 3
    assert abs(float(d.x_train.mean())) < 1e-5 and abs(float(d.x_train.std(unbiased=False)) - 1) < 1e-4
    bigger = load_dataset("synthetic", dim=2, classes=3, **{**SMALL, "n_test": 64})
    assert torch.equal(bigger.y_train, d.y_train)


def test_synthetic_tiny_spatial_kernel():
    for spatial in (1, 2, 4):
        d = load_dataset("synthetic", dim=2, spatial=spatial, n_train=8, n_test=2)
        assert d.input_shape == (3, spatial, spatial)


# ----------------------------------------------------------------------------- digits


def test_digits_split_and_standardisation(tmp_path):
    d = load_dataset("digits", tmp_path / "ignored")
    assert d.x_train.shape == (1440, 1, 8, 8) and d.x_test.shape == (357, 1, 8, 8)
    assert d.y_train.shape == (1440,) and d.y_test.shape == (357,) and d.classes == 10
    assert abs(float(d.x_train.mean())) < 1e-5 and abs(float(d.x_train.std()) - 1) < 1e-3
    assert set(d.y_train.tolist()) == set(range(10))
    from sklearn.datasets import load_digits

    assert torch.equal(d.y_test, torch.from_numpy(load_digits().target[1440:]).long())


# ----------------------------------------------------------------------------- CIFAR


def _raw_cifar(root, files, label_key):
    data, labels = [], []
    for f in files:
        with open(root / f, "rb") as fh:
            batch = pickle.load(fh)  # written by this test: trusted
        data.append(batch[b"data"])
        labels += batch[label_key]
    return np.concatenate(data), np.asarray(labels)


@pytest.mark.parametrize("kind", ["cifar10", "cifar100"])
@pytest.mark.parametrize("point_at_layout", [False, True])
def test_cifar_fixture_round_trip(tmp_path, kind, point_at_layout):
    root = write_cifar_fixture(tmp_path, n_per_batch=6, kind=kind, seed=1)
    if kind == "cifar10":
        train_files, test_files, key, classes = [f"data_batch_{i}" for i in range(1, 6)], ["test_batch"], b"labels", 10
    else:
        train_files, test_files, key, classes = ["train"], ["test"], b"fine_labels", 100
    d = load_dataset(kind, root if point_at_layout else str(tmp_path))
    x_raw, y_raw = _raw_cifar(root, train_files, key)
    xt_raw, yt_raw = _raw_cifar(root, test_files, key)
    assert d.classes == classes and d.x_train.shape == (30, 3, 32, 32) and d.x_test.shape == (6, 3, 32, 32)
    np.testing.assert_allclose(d.x_train.numpy(), _standardised(x_raw, x_raw).reshape(-1, 3, 32, 32), atol=1e-5)
    np.testing.assert_allclose(d.x_test.numpy(), _standardised(xt_raw, x_raw).reshape(-1, 3, 32, 32), atol=1e-5)
    assert d.y_train.tolist() == y_raw.tolist() and d.y_test.tolist() == yt_raw.tolist()
    assert d.y_train.dtype == torch.int64 and str(root) in d.source


def test_cifar_str_keys_and_array_labels(tmp_path):
    root = write_cifar_fixture(tmp_path, n_per_batch=3, kind="cifar10")
    with open(root / "test_batch", "rb") as fh:
        batch = pickle.load(fh)
    new = {"data": batch[b"data"], "labels": np.asarray(batch[b"labels"], dtype=np.int64)}
    with open(root / "test_batch", "wb") as fh:
        pickle.dump(new, fh, protocol=4)
    d = load_dataset("cifar10", tmp_path)
    assert d.y_test.tolist() == batch[b"labels"]


@pytest.mark.parametrize("protocol", [2, 4])
def test_restricted_unpickler_loads_numpy_arrays(tmp_path, protocol):
    obj = {b"data": np.arange(24, dtype=np.uint8).reshape(2, 12), "f": np.linspace(0, 1, 5),
           "s": np.int64(7), "l": [1, 2, "x", b"y"]}
    path = tmp_path / "a.pkl"
    path.write_bytes(pickle.dumps(obj, protocol=protocol))
    with open(path, "rb") as fh:
        out = RestrictedUnpickler(fh, encoding="bytes").load()
    np.testing.assert_array_equal(out[b"data"], obj[b"data"])
    np.testing.assert_array_equal(out["f"], obj["f"])
    assert out["s"] == 7 and out["l"] == [1, 2, "x", b"y"]


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"echo pwned > {self.marker}",))


class _Sneaky:
    def __reduce__(self):
        return (os.getcwd, ())


@pytest.mark.parametrize("payload", ["system", "getcwd"])
def test_tampered_pickle_is_refused(tmp_path, payload):
    root = write_cifar_fixture(tmp_path, n_per_batch=2)
    marker = tmp_path / "MARKER"
    evil = _Evil(marker) if payload == "system" else _Sneaky()
    (root / "data_batch_1").write_bytes(pickle.dumps({b"data": evil, b"labels": [0]}, protocol=2))
    msg = _one_line_error(load_dataset, "cifar10", tmp_path, match="forbidden")
    assert "not a safe pickle" in msg and "data_batch_1" in msg
    assert ("system" in msg) if payload == "system" else ("getcwd" in msg)
    assert not marker.exists()


def test_truncated_and_garbage_pickles(tmp_path):
    root = write_cifar_fixture(tmp_path, n_per_batch=2)
    blob = (root / "data_batch_2").read_bytes()
    (root / "data_batch_2").write_bytes(blob[: len(blob) // 2])
    msg = _one_line_error(load_dataset, "cifar10", tmp_path, match="data_batch_2")
    assert "truncated or corrupt" in msg
    (root / "data_batch_2").write_bytes(b"\x00garbage\xff" * 7)
    _one_line_error(load_dataset, "cifar10", tmp_path, match="data_batch_2")


def test_cifar_wrong_contents(tmp_path):
    root = write_cifar_fixture(tmp_path, n_per_batch=2)
    bad = {b"data": np.zeros((2, 100), dtype=np.uint8), b"labels": [0, 1]}
    (root / "test_batch").write_bytes(pickle.dumps(bad, protocol=2))
    _one_line_error(load_dataset, "cifar10", tmp_path, match="(n, 3072)")
    bad = {b"data": np.zeros((2, 3072), dtype=np.uint8), b"labels": [0, 10]}
    (root / "test_batch").write_bytes(pickle.dumps(bad, protocol=2))
    _one_line_error(load_dataset, "cifar10", tmp_path, match="out of range")
    (root / "test_batch").write_bytes(pickle.dumps([1, 2], protocol=2))
    _one_line_error(load_dataset, "cifar10", tmp_path, match="dict")
    (root / "test_batch").unlink()
    _one_line_error(load_dataset, "cifar10", tmp_path, match="missing file")


def test_cifar_missing_folder(tmp_path):
    msg = _one_line_error(load_dataset, "cifar10", tmp_path, match="no folder cifar-10-batches-py")
    assert "data_batch_1..5, test_batch" in msg
    _one_line_error(load_dataset, "cifar100", tmp_path, match="no folder cifar-100-python")
    _one_line_error(load_dataset, "cifar10", tmp_path / "nope", match="not an existing folder")


# ----------------------------------------------------------------------------- MNIST


@pytest.mark.parametrize("gz", [False, True])
def test_mnist_fixture_round_trip(tmp_path, gz):
    write_mnist_fixture(tmp_path, n_train=20, n_test=7, gz=gz, seed=2, size=6)
    suffix = ".gz" if gz else ""
    read = (lambda p: gzip.decompress(p.read_bytes())) if gz else (lambda p: p.read_bytes())
    images = np.frombuffer(read(tmp_path / f"train-images-idx3-ubyte{suffix}"), np.uint8, offset=16).reshape(20, 6, 6)
    labels = np.frombuffer(read(tmp_path / f"t10k-labels-idx1-ubyte{suffix}"), np.uint8, offset=8)
    d = load_dataset("mnist", tmp_path)
    assert d.x_train.shape == (20, 1, 6, 6) and d.x_test.shape == (7, 1, 6, 6) and d.classes == 10
    np.testing.assert_allclose(d.x_train.numpy()[:, 0], _standardised(images, images), atol=1e-5)
    assert d.y_test.tolist() == labels.tolist() and d.y_test.dtype == torch.int64


def test_mnist_bad_files(tmp_path):
    write_mnist_fixture(tmp_path, n_train=5, n_test=3, size=4)
    path = tmp_path / "train-images-idx3-ubyte"
    blob = path.read_bytes()
    path.write_bytes(blob[:-3])
    _one_line_error(load_dataset, "mnist", tmp_path, match="truncated")
    path.write_bytes(blob[:10])
    _one_line_error(load_dataset, "mnist", tmp_path, match="truncated header")
    path.write_bytes((0x00000801).to_bytes(4, "big") + blob[4:])
    _one_line_error(load_dataset, "mnist", tmp_path, match="bad magic number 0x00000801 (expected 0x00000803")
    path.write_bytes(blob)
    gz = tmp_path / "t10k-labels-idx1-ubyte"
    gz.unlink()
    (tmp_path / "t10k-labels-idx1-ubyte.gz").write_bytes(b"not gzip at all")
    _one_line_error(load_dataset, "mnist", tmp_path, match="t10k-labels-idx1-ubyte.gz")
    (tmp_path / "t10k-labels-idx1-ubyte.gz").unlink()
    _one_line_error(load_dataset, "mnist", tmp_path, match="no file t10k-labels-idx1-ubyte")


def test_mnist_count_mismatch_and_label_range(tmp_path):
    write_mnist_fixture(tmp_path, n_train=5, n_test=3, size=4)
    lab = tmp_path / "train-labels-idx1-ubyte"
    lab.write_bytes(D._idx_bytes(np.zeros(4, np.uint8), D.IDX_LABEL_MAGIC))
    _one_line_error(load_dataset, "mnist", tmp_path, match="5 images")
    lab.write_bytes(D._idx_bytes(np.full(5, 12, np.uint8), D.IDX_LABEL_MAGIC))
    _one_line_error(load_dataset, "mnist", tmp_path, match="out of range")


# ----------------------------------------------------------------------------- arguments


def test_missing_data_dir_and_unknown_name():
    _one_line_error(load_dataset, "mnist", match="mnist needs --data-dir")
    _one_line_error(load_dataset, "cifar10", None, match="cifar10 needs --data-dir")
    msg = _one_line_error(load_dataset, "foo", match="unknown dataset 'foo'")
    assert ", ".join(DATASETS) in msg


@pytest.mark.parametrize("kwargs, arg", [(dict(n_train=0), "n_train"), (dict(n_test=-1), "n_test"),
                                         (dict(classes=1), "classes"), (dict(spatial=0), "spatial"),
                                         (dict(input_channels=0), "input_channels"), (dict(dim=3), "dim")])
def test_bad_int_arguments(kwargs, arg):
    _one_line_error(load_dataset, "synthetic", match=arg, **kwargs)


def test_type_errors():
    with pytest.raises(TypeError, match="name"):
        load_dataset(3)
    with pytest.raises(TypeError, match="n_train"):
        load_dataset("synthetic", n_train=2.0)
    with pytest.raises(TypeError, match="data_dir"):
        load_dataset("mnist", 5)
    with pytest.raises(TypeError, match="x"):
        as_model_input([1, 2], 1)


def test_as_model_input_shapes():
    images = torch.arange(2 * 3 * 4 * 5, dtype=torch.float32).reshape(2, 3, 4, 5)
    assert as_model_input(images, 2) is images
    flat = as_model_input(images, 1)
    assert flat.shape == (2, 12, 5)
    assert torch.equal(flat[:, :, 2], images[:, :, :, 2].reshape(2, 12))  # one column = one position
    seq = torch.zeros(2, 3, 7)
    assert as_model_input(seq, 1) is seq
    with pytest.raises(ValueError, match="x must be"):
        as_model_input(seq, 2)
    with pytest.raises(ValueError, match="x must be"):
        as_model_input(torch.zeros(2, 3), 1)
    with pytest.raises(ValueError, match="dim"):
        as_model_input(images, 3)
    assert as_model_input(load_dataset("synthetic", dim=1, **SMALL).x_train, 1).shape == (96, 2, 5)
