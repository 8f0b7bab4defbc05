"""Datasets for training runs, read from local files or generated; nothing is downloaded.

:func:`load_dataset` returns a :class:`Dataset` of float32 inputs and int64 labels:

* ``synthetic``: Gaussian inputs ``N(0, 1)`` of shape ``(C, S)`` (``dim=1``) or ``(C, S, S)``
  (``dim=2``), labelled by the argmax of a random teacher: the project's own conv chain
  (:func:`amutheory.measure.models.build_model`, depth 2, width 32, ReLU, seed ``seed + 1000003``),
  each class's logit standardised with its mean and std over a fixed reference batch of 1024
  Gaussian inputs (seed ``seed + 2000006``) so that the classes come out roughly balanced.
  The first ``n_train`` samples are the train split, the next ``n_test`` the test split.
  Same arguments, identical tensors.
* ``digits``: scikit-learn's bundled 8x8 digits (1797 images, 1 channel, 10 classes), split
  without shuffling: the first 1440 images train, the remaining 357 test.
* ``digits-positions``: the same images, split and standardised pixels as ``digits``, laid out as
  a sequence ``(N, 16, 8)`` of 8 tokens (channels first, like synthetic ``dim=1``): token ``r`` is
  image row ``r``, its features are that row's 8 standardised pixels (``x[:, c, r] =
  digits[:, 0, r, c]``) followed by a fixed one-hot position code ``sqrt(8) e_r`` (``x[:, 8 + j, r]
  = sqrt(8) [j == r]``: each code channel has mean square 1 over the tokens, like a pixel).  The
  code is the same for every sample and is added after standardising; a linear embedding of
  ``[pixels; code]`` is a token embedding plus a learned absolute positional embedding, so an
  order-blind model (the pre-LN Transformer) can tell the rows apart.
* ``mnist``: the four IDX files ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
  ``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte`` in ``data_dir`` (each may end in
  ``.gz``).  An IDX file is a big-endian header - magic ``0x00000803`` (unsigned bytes, 3 dims)
  and uint32 ``count, rows, cols`` for images, magic ``0x00000801`` and ``count`` for labels -
  followed by the raw bytes.  Images become ``(N, 1, rows, cols)`` pixels / 255.
* ``cifar10`` / ``cifar100``: the "python version" layout, the folder ``cifar-10-batches-py``
  (``data_batch_1`` .. ``data_batch_5``, ``test_batch``) or ``cifar-100-python`` (``train``,
  ``test``) inside ``data_dir``, or ``data_dir`` itself.  Each file is a pickled dict with
  ``data`` (uint8, ``(n, 3072)``, each row a row-major 3x32x32 image) and ``labels``
  (CIFAR-10) or ``fine_labels`` (CIFAR-100); keys may be bytes (Python-2 pickles) or str.
  Images become ``(N, 3, 32, 32)`` pixels / 255.

Inputs of every dataset are standardised with the TRAIN split's global mean and std (one
scalar each, computed over all train pixels), and the same two numbers are applied to the
test split (a std of 0 is replaced by 1); ``digits-positions`` appends its position code after.
The keyword arguments ``dim``, ``input_channels``, ``spatial``, ``classes``, ``n_train``,
``n_test`` and ``seed`` shape the synthetic data only; they are validated but ignored for the
real datasets, whose sizes are fixed by their files.

Safety of the CIFAR reader: pickles are read by :class:`RestrictedUnpickler`, whose
``find_class`` admits only the few numpy globals an array needs (``_reconstruct``,
``ndarray``, ``dtype``, ``scalar``) and ``_codecs.encode`` (how protocol-2 pickles written by
Python 3 store bytes).  Any other global - ``os.system``, ``builtins.eval``, ... - raises
:class:`pickle.UnpicklingError` before it is looked up, so a tampered file cannot run code:
only arrays, lists, dicts, strings, bytes and numbers come out, and their types and shapes are
checked afterwards.  Protocol-5 pickles of arrays (``numpy._core.numeric._frombuffer``) are
refused too; write fixtures with protocol 2 to 4.

Every problem with a name, a folder or a file raises ``ValueError`` with one readable line
(a bad argument type raises ``TypeError``), never a raw traceback from pickle, numpy or gzip.
:func:`write_cifar_fixture` and :func:`write_mnist_fixture` write tiny valid files of each
format, for tests and for trying the loaders without the real data.
"""

from __future__ import annotations

import gzip
import os
import pickle
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from amutheory.spec import check_int as _check_int
from amutheory.names import DATASETS


MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
               "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
IDX_IMAGE_MAGIC = 0x00000803
IDX_LABEL_MAGIC = 0x00000801
#: per kind: folder name, train files, test files, label key, classes, layout description
CIFAR_LAYOUTS = {
    "cifar10": ("cifar-10-batches-py", tuple(f"data_batch_{i}" for i in range(1, 6)), ("test_batch",),
                "labels", 10, "data_batch_1..5, test_batch"),
    "cifar100": ("cifar-100-python", ("train",), ("test",), "fine_labels", 100, "train, test"),
}
CIFAR_ROW = 3 * 32 * 32
DIGITS_TRAIN = 1440
#: digits-positions: tokens (image rows) and the value of the one-hot position code
#: (``sqrt(tokens)``: each code channel's mean square over the tokens is 1)
DIGITS_TOKENS = 8
POSITION_CODE = DIGITS_TOKENS ** 0.5
TEACHER_SEED_OFFSET = 1_000_003
#: inputs of the reference batch that calibrates the synthetic teacher's logits
TEACHER_REFERENCE = 1024


@dataclass(frozen=True, eq=False)
class Dataset:
    """Train (and optionally test) split of one dataset, inputs standardised (see the module doc).

    ``x_train``: float32 ``(N, C, H, W)`` for images; synthetic ``(N, C, S)`` (dim 1) or
    ``(N, C, S, S)`` (dim 2); ``digits-positions`` ``(N, 16, 8)`` (a sequence: features x tokens).
    ``y_train``: int64 ``(N,)``.  ``x_test``/``y_test``: the same for the test split, or None
    when there is none.  ``source``: one line saying where the data came from.
    """

    name: str
    x_train: torch.Tensor = field(repr=False)
    y_train: torch.Tensor = field(repr=False)
    x_test: torch.Tensor | None = field(repr=False)
    y_test: torch.Tensor | None = field(repr=False)
    classes: int
    source: str

    @property
    def input_shape(self) -> tuple[int, ...]:
        """Shape of one input, ``x_train.shape[1:]``."""
        return tuple(self.x_train.shape[1:])


# ----------------------------------------------------------------------------- public API


def load_dataset(name: str, data_dir: str | os.PathLike | None = None, *, dim: int = 2, input_channels: int = 3,
                 spatial: int = 8, classes: int = 10, n_train: int = 2048, n_test: int = 512,
                 seed: int = 0) -> Dataset:
    """The dataset ``name`` (one of :data:`DATASETS`), read from ``data_dir`` (mnist, cifar10,
    cifar100; ignored by synthetic, digits and digits-positions) or generated (synthetic).

    Inputs are standardised with the train split's global mean and std (one float32 scalar
    each), the same numbers applied to the test split.  ``dim``, ``input_channels``,
    ``spatial``, ``classes``, ``n_train``, ``n_test`` and ``seed`` shape the synthetic data;
    they are validated but ignored for the real datasets.  Synthetic data with ``n_test=0``
    has ``x_test = y_test = None``.  Problems raise ``ValueError`` with one line.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__} {name!r}")
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}")
    _check_int("dim", dim, 0)
    if dim not in (0, 1, 2):
        raise ValueError(f"dim must be 0 (feature vectors), 1 or 2, got {dim}")
    for arg, value, minimum in (("input_channels", input_channels, 1), ("spatial", spatial, 1),
                                ("classes", classes, 2), ("n_train", n_train, 1), ("n_test", n_test, 0),
                                ("seed", seed, 0)):
        _check_int(arg, value, minimum)
    if name == "synthetic":
        return _load_synthetic(dim, int(input_channels), int(spatial), int(classes), int(n_train),
                               int(n_test), int(seed))
    if name == "digits":
        return _load_digits()
    if name == "digits-positions":
        return _load_digits_positions()
    folder = _data_folder(name, data_dir)
    if name == "mnist":
        return _load_mnist(folder)
    return _load_cifar(name, folder)


def as_model_input(x: torch.Tensor, dim: int) -> torch.Tensor:
    """``x`` as the input of a ``dim``-dimensional model.

    Images ``(N, C, H, W)``: unchanged for ``dim=2``; for ``dim=1`` reshaped to
    ``(N, C*H, W)``, each image column one position with ``C*H`` features; for ``dim=0`` (a model
    of feature vectors, e.g. an MLP) flattened to ``(N, C*H*W)``.  A 3-D ``x`` ``(N, C, S)`` is
    returned unchanged for ``dim=1`` and a 2-D ``(N, F)`` for ``dim=0``.  Anything else raises
    ``ValueError``.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    _check_int("dim", dim, 0)
    if dim not in (0, 1, 2):
        raise ValueError(f"dim must be 0, 1 or 2, got {dim}")
    if dim == 0:
        if x.ndim >= 2:
            return x.reshape(x.shape[0], -1)
        raise ValueError(f"x must have a sample axis and features, got shape {tuple(x.shape)}")
    if x.ndim == 4:
        return x if dim == 2 else x.reshape(x.shape[0], x.shape[1] * x.shape[2], x.shape[3])
    if x.ndim == 3 and dim == 1:
        return x
    raise ValueError(f"x must be images (N, C, H, W), or (N, C, S) when dim == 1; got shape "
                     f"{tuple(x.shape)} with dim={dim}")


# ----------------------------------------------------------------------------- helpers


def _one_line(err: BaseException) -> str:
    """``Type: message`` of an exception, squeezed onto one line."""
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _standardise(x_train: torch.Tensor, x_test: torch.Tensor | None):
    """Both splits standardised with the train split's global mean and std (float32, in place
    where possible); returns ``(x_train, x_test, mean, std)``."""
    flat = x_train.reshape(-1)
    total, chunk = 0.0, 1 << 22
    for i in range(0, flat.numel(), chunk):
        total += float(flat[i:i + chunk].sum(dtype=torch.float64))
    mean = total / flat.numel()
    sq = 0.0
    for i in range(0, flat.numel(), chunk):
        sq += float(((flat[i:i + chunk].double() - mean) ** 2).sum())
    std = (sq / flat.numel()) ** 0.5
    if not std > 0 or not np.isfinite(std):
        std = 1.0
    m, s = np.float32(mean), np.float32(std)
    x_train = x_train.to(torch.float32).sub_(float(m)).div_(float(s))
    if x_test is not None:
        x_test = x_test.to(torch.float32).sub_(float(m)).div_(float(s))
    return x_train, x_test, float(m), float(s)


def _make(name: str, x_train, y_train, x_test, y_test, classes: int, source: str) -> Dataset:
    x_train, x_test, mean, std = _standardise(x_train, x_test)
    source = f"{source}; standardised with train mean {mean:.6g}, std {std:.6g}"
    y_test = None if y_test is None else y_test.to(torch.int64)
    return Dataset(name, x_train.contiguous(), y_train.to(torch.int64), x_test, y_test, classes, source)


def _data_folder(name: str, data_dir) -> Path:
    if data_dir is None:
        need = (f"the IDX files {', '.join(MNIST_FILES)} (each optionally .gz)" if name == "mnist" else
                f"the folder {CIFAR_LAYOUTS[name][0]} (python-pickle layout: {CIFAR_LAYOUTS[name][5]})")
        raise ValueError(f"{name} needs --data-dir: a folder with {need}")
    if not isinstance(data_dir, (str, os.PathLike)):
        raise TypeError(f"data_dir must be a path (str or os.PathLike), got {type(data_dir).__name__}")
    folder = Path(data_dir)
    if not folder.is_dir():
        raise ValueError(f"{name}: data dir {folder} is not an existing folder")
    return folder


# ----------------------------------------------------------------------------- synthetic and digits


def _teacher_labels(x: torch.Tensor, spec, seed: int) -> torch.Tensor:
    """Argmax of the teacher's logits, each class's logit first standardised with its mean and
    std over a fixed reference batch (without that, the ReLU features' positive mean pooled
    into the head makes one class win nearly every input)."""
    from amutheory.measure.models import build_model

    teacher = build_model(spec, seed=seed + TEACHER_SEED_OFFSET, dtype=torch.float64)
    ref_gen = torch.Generator().manual_seed(seed + 2 * TEACHER_SEED_OFFSET)
    ref = torch.randn((TEACHER_REFERENCE,) + tuple(x.shape[1:]), generator=ref_gen, dtype=torch.float64)
    with torch.no_grad():
        ref_logits = teacher(ref)
        mean, std = ref_logits.mean(0), ref_logits.std(0).clamp_min(1e-12)
        logits = torch.cat([teacher(x[i:i + 4096]) for i in range(0, len(x), 4096)])
    return ((logits - mean) / std).argmax(-1)


def _load_synthetic(dim: int, channels: int, spatial: int, classes: int, n_train: int, n_test: int,
                    seed: int) -> Dataset:
    from amutheory.spec import ArchSpec

    kernel = min(3, spatial if spatial % 2 else spatial - 1)
    if dim == 0:  # feature vectors: the teacher is an MLP of the same depth and width
        spatial, kernel = 1, 1
        spec = ArchSpec(family="mlp", depth=2, width=32, activation="relu", input_channels=channels, outputs=classes)
    else:
        spec = ArchSpec(family="conv", dim=dim, depth=2, width=32, kernel=kernel, spatial=spatial,
                        activation="relu", input_channels=channels, outputs=classes)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn((n_train + n_test, channels) + (spatial,) * dim, generator=gen, dtype=torch.float64)
    y = _teacher_labels(x, spec, seed)
    x = x.to(torch.float32)
    has_test = n_test > 0
    source = (f"synthetic: N(0,1) inputs {tuple(x.shape[1:])} from torch generator seed {seed}, labels = argmax "
              f"of a random relu {'MLP' if dim == 0 else 'conv'} teacher's logits standardised per class (depth 2, "
              f"width 32, kernel {kernel}, "
              f"seed {seed + TEACHER_SEED_OFFSET}; reference batch seed {seed + 2 * TEACHER_SEED_OFFSET})")
    return _make("synthetic", x[:n_train], y[:n_train], x[n_train:] if has_test else None,
                 y[n_train:] if has_test else None, classes, source)


def _load_digits() -> Dataset:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = torch.from_numpy(np.asarray(bunch.images, dtype=np.float32)).unsqueeze(1)
    y = torch.from_numpy(np.asarray(bunch.target, dtype=np.int64))
    source = (f"digits: sklearn.datasets.load_digits (bundled), first {DIGITS_TRAIN} train, "
              f"remaining {len(y) - DIGITS_TRAIN} test, no shuffling")
    return _make("digits", x[:DIGITS_TRAIN], y[:DIGITS_TRAIN], x[DIGITS_TRAIN:], y[DIGITS_TRAIN:], 10, source)


def position_code(tokens: int = DIGITS_TOKENS) -> torch.Tensor:
    """The fixed position code of ``digits-positions``: ``(tokens, tokens)`` float32, column ``r``
    (token ``r``) is ``POSITION_CODE`` times the one-hot ``e_r``."""
    return torch.eye(tokens, dtype=torch.float32) * np.float32(POSITION_CODE)


def _with_positions(images: torch.Tensor) -> torch.Tensor:
    """``(N, 1, R, C)`` standardised images as ``(N, C + R, R)`` sequences: token ``r`` = row ``r``'s
    ``C`` pixels, then the one-hot code of ``r``."""
    rows = images[:, 0].transpose(1, 2)  # (N, C, R): x[n, c, r] = image[n, r, c]
    code = position_code(images.shape[2]).expand(images.shape[0], -1, -1)
    return torch.cat([rows, code], dim=1).contiguous()


def _load_digits_positions() -> Dataset:
    digits = _load_digits()
    source = (f"{digits.source}; as {DIGITS_TOKENS} tokens (the image rows) of 8 pixels + a one-hot position "
              f"code x {POSITION_CODE:.6g} (added after standardising)")
    return Dataset("digits-positions", _with_positions(digits.x_train), digits.y_train,
                   _with_positions(digits.x_test), digits.y_test, digits.classes, source)


# ----------------------------------------------------------------------------- MNIST (IDX)


def _idx_path(folder: Path, stem: str) -> Path:
    for path in (folder / stem, folder / f"{stem}.gz"):
        if path.is_file():
            return path
    raise ValueError(f"mnist: no file {stem} (or {stem}.gz) in {folder} (expected the IDX files "
                     f"{', '.join(MNIST_FILES)})")


def _read_bytes(path: Path) -> bytes:
    try:
        raw = path.read_bytes()
        return gzip.decompress(raw) if path.suffix == ".gz" else raw
    except (OSError, EOFError, zlib.error) as err:
        raise ValueError(f"mnist: {path}: cannot read ({_one_line(err)})") from None


def _read_idx(path: Path, magic: int) -> np.ndarray:
    """The array of one IDX file of unsigned bytes, its header checked against ``magic``."""
    raw = _read_bytes(path)
    what = "an IDX image file" if magic == IDX_IMAGE_MAGIC else "an IDX label file"
    ndim = magic & 0xFF
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"mnist: {path}: truncated header ({len(raw)} bytes; expected {what})")
    found = int.from_bytes(raw[:4], "big")
    if found != magic:
        raise ValueError(f"mnist: {path}: bad magic number 0x{found:08x} (expected 0x{magic:08x}, {what})")
    dims = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    size = int(np.prod(dims, dtype=np.int64))
    if len(raw) - header != size:
        raise ValueError(f"mnist: {path}: {len(raw) - header} data bytes but the header {dims} needs {size} "
                         f"(truncated or corrupt)")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def _mnist_split(folder: Path, prefix: str):
    image_path = _idx_path(folder, f"{prefix}-images-idx3-ubyte")
    label_path = _idx_path(folder, f"{prefix}-labels-idx1-ubyte")
    images = _read_idx(image_path, IDX_IMAGE_MAGIC)
    labels = _read_idx(label_path, IDX_LABEL_MAGIC)
    if len(images) != len(labels):
        raise ValueError(f"mnist: {image_path} holds {len(images)} images but {label_path} {len(labels)} labels")
    if len(labels) and labels.max() > 9:
        raise ValueError(f"mnist: {label_path}: label {int(labels.max())} out of range 0..9")
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
    return x, torch.from_numpy(labels.astype(np.int64)), image_path


def _load_mnist(folder: Path) -> Dataset:
    x_train, y_train, train_path = _mnist_split(folder, "train")
    x_test, y_test, test_path = _mnist_split(folder, "t10k")
    if len(y_train) == 0:
        raise ValueError(f"mnist: {train_path} holds no images")
    source = f"mnist: IDX files in {folder} ({train_path.name}, {test_path.name}, ...)"
    return _make("mnist", x_train, y_train, x_test, y_test, 10, source)


# ----------------------------------------------------------------------------- CIFAR (restricted pickles)


def _safe_globals() -> dict:
    import _codecs

    try:
        from numpy._core import multiarray
    except ImportError:  # numpy < 2
        from numpy.core import multiarray

    reconstruct, scalar = multiarray._reconstruct, multiarray.scalar
    return {("numpy.core.multiarray", "_reconstruct"): reconstruct,
            ("numpy._core.multiarray", "_reconstruct"): reconstruct,
            ("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype,
            ("numpy.core.multiarray", "scalar"): scalar, ("numpy._core.multiarray", "scalar"): scalar,
            ("_codecs", "encode"): _codecs.encode}


class ForbiddenGlobal(pickle.UnpicklingError):
    """A pickle asked for a global outside :class:`RestrictedUnpickler`'s allow-list."""


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that resolves only the globals numpy arrays need (see the module doc);
    any other global raises :class:`ForbiddenGlobal` (a :class:`pickle.UnpicklingError`).
    The numpy names are mapped to objects directly, so ``numpy.core`` is never imported."""

    _allowed = None

    def find_class(self, module: str, name: str):
        if RestrictedUnpickler._allowed is None:
            RestrictedUnpickler._allowed = _safe_globals()
        obj = RestrictedUnpickler._allowed.get((module, name))
        if obj is None:
            raise ForbiddenGlobal(f"forbidden global {module}.{name}")
        return obj


def _load_pickle(path: Path, kind: str):
    try:
        with open(path, "rb") as f:
            return RestrictedUnpickler(f, encoding="bytes").load()
    except ForbiddenGlobal as err:
        raise ValueError(f"{kind}: {path} is not a safe pickle: {' '.join(str(err).split())}") from None
    except Exception as err:  # noqa: BLE001 - a corrupt pickle can raise nearly anything
        raise ValueError(f"{kind}: {path} is not a readable pickle, truncated or corrupt ({_one_line(err)})") from None


def _get(batch: dict, key: str):
    for k in (key.encode(), key):
        if k in batch:
            return batch[k]
    return None


def _check_labels(labels, n: int, classes: int, where: str) -> np.ndarray:
    if isinstance(labels, np.ndarray):
        if labels.ndim != 1 or labels.dtype.kind not in "iu":
            raise ValueError(f"{where}: labels must be a 1-D integer array, got {labels.dtype} {labels.shape}")
        out = labels.astype(np.int64)
    elif isinstance(labels, list):
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in labels):
            raise ValueError(f"{where}: labels must be a list of integers")
        out = np.asarray(labels, dtype=np.int64).reshape(-1)
    else:
        raise ValueError(f"{where}: labels must be a list or a 1-D integer array, got {type(labels).__name__}")
    if len(out) != n:
        raise ValueError(f"{where}: {len(out)} labels for {n} images")
    if n and (out.min() < 0 or out.max() >= classes):
        raise ValueError(f"{where}: label out of range 0..{classes - 1} (found {int(out.min())}..{int(out.max())})")
    return out


def _read_cifar_file(path: Path, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Images ``(n, 3072)`` uint8 and labels ``(n,)`` int64 of one CIFAR pickle, types checked."""
    label_key, classes = CIFAR_LAYOUTS[kind][3], CIFAR_LAYOUTS[kind][4]
    batch = _load_pickle(path, kind)
    where = f"{kind}: {path}"
    if not isinstance(batch, dict):
        raise ValueError(f"{where}: expected a pickled dict, got {type(batch).__name__}")
    data, labels = _get(batch, "data"), _get(batch, label_key)
    if data is None or labels is None:
        raise ValueError(f"{where}: expected the keys 'data' and '{label_key}'")
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != CIFAR_ROW:
        desc = f"{data.dtype} {data.shape}" if isinstance(data, np.ndarray) else type(data).__name__
        raise ValueError(f"{where}: 'data' must be a uint8 array of shape (n, {CIFAR_ROW}), got {desc}")
    return data, _check_labels(labels, data.shape[0], classes, where)


def _cifar_dir(kind: str, folder: Path) -> Path:
    sub, train, test, _, _, layout = CIFAR_LAYOUTS[kind]
    if (folder / sub).is_dir():
        return folder / sub
    if folder.name == sub or all((folder / f).is_file() for f in train + test):
        return folder
    raise ValueError(f"{kind}: no folder {sub} in {folder} (expected the python-pickle layout: {layout})")


def _cifar_split(kind: str, root: Path, files: tuple[str, ...]):
    parts, labels = [], []
    for fname in files:
        path = root / fname
        if not path.is_file():
            raise ValueError(f"{kind}: missing file {path} (expected the python-pickle layout: "
                             f"{CIFAR_LAYOUTS[kind][5]})")
        data, lab = _read_cifar_file(path, kind)
        parts.append(data)
        labels.append(lab)
    data = np.concatenate(parts)
    x = torch.from_numpy(data).reshape(-1, 3, 32, 32).to(torch.float32).div_(255.0)
    return x, torch.from_numpy(np.concatenate(labels))


def _load_cifar(kind: str, folder: Path) -> Dataset:
    root = _cifar_dir(kind, folder)
    _, train, test, _, classes, _ = CIFAR_LAYOUTS[kind]
    x_train, y_train = _cifar_split(kind, root, train)
    if len(y_train) == 0:
        raise ValueError(f"{kind}: the train files in {root} hold no images")
    x_test, y_test = _cifar_split(kind, root, test)
    source = f"{kind}: python-pickle batches in {root}"
    return _make(kind, x_train, y_train, x_test, y_test, classes, source)


# ----------------------------------------------------------------------------- fixture writers


def write_cifar_fixture(folder: str | os.PathLike, n_per_batch: int = 8, kind: str = "cifar10",
                        seed: int = 0, protocol: int = 2) -> Path:
    """Write a tiny valid CIFAR layout (random uint8 images and labels) under ``folder`` and
    return the layout folder (``folder/cifar-10-batches-py`` or ``folder/cifar-100-python``).

    CIFAR-10: ``data_batch_1..5`` and ``test_batch`` with ``n_per_batch`` images each;
    CIFAR-100: ``train`` with ``5 * n_per_batch`` images and ``test`` with ``n_per_batch``.
    Keys are bytes, as in the real (Python-2) files; ``protocol`` 2 to 4.
    """
    if kind not in CIFAR_LAYOUTS:
        raise ValueError(f"kind must be one of {', '.join(CIFAR_LAYOUTS)}; got {kind!r}")
    _check_int("n_per_batch", n_per_batch, 1)
    sub, train, test, label_key, classes, _ = CIFAR_LAYOUTS[kind]
    root = Path(folder) / sub
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for fname in train + test:
        n = n_per_batch * (5 if kind == "cifar100" and fname == "train" else 1)
        batch = {b"batch_label": fname.encode(),
                 b"data": rng.integers(0, 256, size=(n, CIFAR_ROW), dtype=np.uint8),
                 label_key.encode(): [int(v) for v in rng.integers(0, classes, size=n)]}
        if kind == "cifar100":
            batch[b"coarse_labels"] = [int(v) for v in rng.integers(0, 20, size=n)]
        with open(root / fname, "wb") as f:
            pickle.dump(batch, f, protocol=protocol)
    return root


def _idx_bytes(array: np.ndarray, magic: int) -> bytes:
    header = magic.to_bytes(4, "big") + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    return header + np.ascontiguousarray(array, dtype=np.uint8).tobytes()


def write_mnist_fixture(folder: str | os.PathLike, n_train: int = 32, n_test: int = 16, gz: bool = False,
                        seed: int = 0, size: int = 28) -> Path:
    """Write the four MNIST IDX files (random ``size x size`` uint8 images, labels 0..9) into
    ``folder``, gzip-compressed with a ``.gz`` suffix when ``gz``; returns ``folder``."""
    _check_int("n_train", n_train, 1)
    _check_int("n_test", n_test, 0)
    _check_int("size", size, 1)
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        images = rng.integers(0, 256, size=(n, size, size), dtype=np.uint8)
        labels = rng.integers(0, 10, size=n, dtype=np.uint8)
        for stem, blob in ((f"{prefix}-images-idx3-ubyte", _idx_bytes(images, IDX_IMAGE_MAGIC)),
                           (f"{prefix}-labels-idx1-ubyte", _idx_bytes(labels, IDX_LABEL_MAGIC))):
            (root / (stem + ".gz" if gz else stem)).write_bytes(gzip.compress(blob) if gz else blob)
    return root
