"""One training run as a pure, seeded unit: a :class:`Cell` maps to one record, bit for bit.

A cell is everything a run depends on: the architecture (an :class:`~amutheory.spec.ArchSpec`,
whose ``depth`` and ``width`` are the run's, or a ``FILE.py:FACTORY`` model called as
``FACTORY(depth=L, width=n)``), the optimizer and its learning rate, the seed, the dataset, the
number of steps and the batch size, and the training layers (``norm``, ``dropout``).  Its
:meth:`Cell.key` is a hash of exactly those fields, so a results table keyed by it resumes
without ever running a finished cell twice.  Where the data lives (``data_dir``) and on which
device it runs are not part of the key: the same cell on another machine is the same cell.

``schedule`` (``None``: the rate is ``lr`` at every step) makes the rate move during the run;
the one form is ``"exp-ramp:HI"``, an exponential ramp from ``lr`` at step 0 to ``HI`` at the last
step (:meth:`Cell.rate_at`), the learning-rate range test's run.  A cell without a schedule has
the key it had before the field existed (:meth:`Cell.identity` leaves ``schedule`` out when it is
``None``).

``stop`` (``None``: the whole run) trains only the first ``stop`` steps of the ``steps``-step run
(a rung of a multi-fidelity search): the same init, minibatches and rates as the whole run, so its
record is that run's prefix.  With ``checkpoints`` (a folder; where the state is kept, not part of
the key) a stopped cell saves its state there, and a longer cell of the same run (a larger ``stop``,
or none) starts from the latest saved state below it instead of step 0
(:mod:`amutheory.train.checkpoint`): no step of a run is trained twice.  ``stop == steps`` is the
whole run (the same key as ``stop=None``).

The seed fixes the init (the model's generator), the order of the minibatches (a second
generator, :data:`DATA_SEED_OFFSET` away) and the dropout masks (the global generator, seeded
:data:`DROPOUT_SEED_OFFSET` away, in the loop engine).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import math
from dataclasses import dataclass

from amutheory.limits import SEED_LIMIT
from amutheory.spec import NORMS, ArchSpec
from amutheory.spec import check_choice as _check_choice
from amutheory.spec import check_int as _check_count
from amutheory.spec import check_number as _check_number
from amutheory.names import LR_FREE_OPTIMIZERS
from amutheory.names import TRAIN_OPTIMIZERS as OPTIMIZERS

DTYPES = ("float32", "float64")
#: the minibatch order of seed s is drawn from a generator seeded s + DATA_SEED_OFFSET
DATA_SEED_OFFSET = 7_919
#: the dropout masks of seed s come from the global generator seeded s + DROPOUT_SEED_OFFSET
DROPOUT_SEED_OFFSET = 104_729
#: divergence rule: a loss that is not finite, or above this many times the first step's loss
DIVERGENCE_FACTOR = 10.0
#: Adam's constants (torch's defaults), named so the record can say them
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8
#: the learning-rate schedules a cell can follow (``exp-ramp:HI``: lr -> HI exponentially)
SCHEDULES = ("exp-ramp",)
#: fields of a cell that are not part of its identity (where it runs, not what it computes)
_NOT_KEYED = ("data_dir", "device", "checkpoints")


@dataclass(frozen=True)
class Cell:
    """One training run: ``steps`` minibatch steps of ``optimizer`` at learning rate ``lr`` on
    ``dataset``, cross-entropy loss, from the init of ``seed``.

    ``spec`` carries the architecture, its depth and width; its ``input_channels``, ``spatial``
    and ``outputs`` must match the dataset (:func:`amutheory.train.sweep.spec_for_data` sets them).
    ``model`` (``FILE.py:FACTORY``) replaces the spec's network by the factory's, built under
    ``torch.manual_seed(seed)``; the spec then only says depth, width and the input layout (dim).
    A learning-rate-free ``optimizer`` (``prodigy``, ``dog``: :data:`~amutheory.names.LR_FREE_OPTIMIZERS`,
    the optional extra ``lrfree``) chooses its own step size; ``lr`` is then the multiplier on it
    (1.0, the packages' default, leaves it as chosen).
    """

    spec: ArchSpec
    lr: float
    seed: int = 0
    optimizer: str = "sgd"
    momentum: float = 0.0
    weight_decay: float = 0.0
    dataset: str = "synthetic"
    steps: int = 100
    batch_size: int = 32
    norm: str = "none"
    dropout: float = 0.0
    model: str | None = None
    dtype: str = "float32"
    schedule: str | None = None
    stop: int | None = None
    data_dir: str | None = None
    device: str = "cpu"
    checkpoints: str | None = None

    def __post_init__(self):
        if not isinstance(self.spec, ArchSpec):
            raise TypeError(f"spec must be an ArchSpec, got {type(self.spec).__name__}")
        object.__setattr__(self, "lr", _check_number("lr", self.lr, positive=True))
        object.__setattr__(self, "seed", _check_count("seed", self.seed, 0, SEED_LIMIT - 1, "seeds are 63-bit"))
        _check_choice("optimizer", self.optimizer, OPTIMIZERS)
        object.__setattr__(self, "momentum", _check_number("momentum", self.momentum, minimum=0.0, below=1.0))
        object.__setattr__(self, "weight_decay", _check_number("weight_decay", self.weight_decay, minimum=0.0))
        if self.optimizer in LR_FREE_OPTIMIZERS:
            if self.momentum:
                raise ValueError(f"momentum is an SGD option; {self.optimizer} (learning-rate free) takes none "
                                 f"(prodigy has its own betas {ADAM_BETAS}, dog steps plain SGD)")
            _check_installed(self.optimizer)
        elif self.optimizer != "sgd" and self.momentum:
            raise ValueError(f"momentum is an SGD option; {self.optimizer} has its own betas {ADAM_BETAS}")
        if not isinstance(self.dataset, str) or not self.dataset:
            raise TypeError(f"dataset must be a non-empty string, got {self.dataset!r}")
        object.__setattr__(self, "steps", _check_count("steps", self.steps, 1))
        object.__setattr__(self, "batch_size", _check_count("batch_size", self.batch_size, 1))
        _check_choice("norm", self.norm, NORMS)
        object.__setattr__(self, "dropout", _check_number("dropout", self.dropout, minimum=0.0, below=1.0))
        _check_choice("dtype", self.dtype, DTYPES)
        self.family_object.check_training_options(self.spec, self.norm, self.dropout)
        if self.schedule is not None:
            _ramp_end(self.schedule, self.lr, self.steps)
        if self.stop is not None:
            object.__setattr__(self, "stop", _check_count("stop", self.stop, 1, self.steps,
                                                          f"a cell trains at most its steps = {self.steps}"))
            if self.stop == self.steps:
                object.__setattr__(self, "stop", None)  # the whole run: one key for one computation
        if self.checkpoints is not None and (not isinstance(self.checkpoints, str) or not self.checkpoints):
            raise TypeError(f"checkpoints must be a folder path (str) or None, got {self.checkpoints!r}")
        if not isinstance(self.device, str) or not (self.device == "cpu" or self.device.startswith("cuda")):
            raise ValueError(f"device must be 'cpu' or 'cuda[:i]', got {self.device!r}")

    @property
    def family_object(self):
        """The family whose model this cell trains: the user's module of ``model``
        (:class:`amutheory.families.user.ModuleFamily`), else the spec's family.  Not part of the
        key: a ``model`` cell is stored as before (its spec says depth, width and input layout)."""
        if self.model is not None:
            from amutheory.families import module_family

            return module_family(self.model)
        return self.spec.family_object

    @property
    def depth(self) -> int:
        return self.spec.depth

    @property
    def width(self) -> int:
        return self.spec.width

    @property
    def horizon(self) -> int:
        """The steps this cell trains: ``stop``, else ``steps``."""
        return self.steps if self.stop is None else self.stop

    def run_key(self) -> str:
        """The key of the whole run this cell is a prefix of (``stop`` left out): its checkpoints' name."""
        return self.with_(stop=None).key()

    def rate_at(self, t: int) -> float:
        """The learning rate of step ``t`` (0-based): ``lr``, or on an ``exp-ramp:HI`` schedule
        ``lr * (HI / lr) ** (t / (steps - 1))`` (``lr`` at step 0, ``HI`` at the last step)."""
        if self.schedule is None:
            return self.lr
        hi = _ramp_end(self.schedule, self.lr, self.steps)
        return self.lr * (hi / self.lr) ** (t / (self.steps - 1))

    def identity(self) -> dict:
        """The fields the record depends on (everything but :data:`_NOT_KEYED`), JSON-ready;
        ``schedule`` and ``stop`` only when set, so the keys of cells without them are those of before
        they existed."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in _NOT_KEYED}
        for name in ("schedule", "stop"):
            if d[name] is None:
                del d[name]
        d["spec"] = self.spec.to_dict()
        d["lr"] = repr(self.lr)  # the exact float, not a rounded print
        return d

    def key(self) -> str:
        """A 16-hex-digit hash of :meth:`identity` (the results table's row key)."""
        text = json.dumps(self.identity(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def group_key(self) -> str:
        """The key of the cell with ``lr`` left out: cells sharing it train side by side."""
        d = self.identity()
        d.pop("lr")
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]

    def to_dict(self) -> dict:
        d = self.identity()
        d["lr"] = self.lr
        return d

    def with_(self, **changes) -> "Cell":
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_dict(cls, d: dict, **extra) -> "Cell":
        d = dict(d)
        d["spec"] = ArchSpec(**d["spec"])
        d["lr"] = float(d["lr"])
        return cls(**d, **extra)


#: the module and class of each learning-rate-free optimizer (the optional extra ``lrfree``)
LR_FREE_CLASSES = {"prodigy": ("prodigyopt", "Prodigy"), "dog": ("dog", "DoG")}
#: what to run where one is missing
LR_FREE_INSTALL = 'pip install -e ".[lrfree]"'


class MissingExtraError(ImportError, ValueError):
    """An optional package a cell needs is not installed (an ImportError, and a ValueError so that the
    command line refuses it in one line like any bad option)."""


def _check_installed(optimizer: str) -> None:
    """Refuse a learning-rate-free ``optimizer`` whose package is not installed (a
    :class:`MissingExtraError` saying how to install it), without importing it (a cell is checked
    before any work)."""
    module, name = LR_FREE_CLASSES[optimizer]
    if importlib.util.find_spec(module) is None:
        raise MissingExtraError(f"optimizer {optimizer!r} needs the package {module!r} ({module}.{name}), which is "
                          f"not installed: {LR_FREE_INSTALL}")


def _ramp_end(schedule, lr: float, steps: int) -> float:
    """The end rate ``HI`` of ``schedule = "exp-ramp:HI"``, checked (a ValueError naming ``schedule``)."""
    if not isinstance(schedule, str):
        raise TypeError(f"schedule must be a string like 'exp-ramp:1.0' or None, got {type(schedule).__name__}")
    form, sep, arg = schedule.partition(":")
    if form not in SCHEDULES or not sep:
        raise ValueError(f"schedule must be 'exp-ramp:HI' (HI: the rate at the last step), got {schedule!r}")
    try:
        hi = float(arg)
    except ValueError:
        raise ValueError(f"schedule {schedule!r}: HI must be a number, got {arg!r}") from None
    if not math.isfinite(hi) or hi <= lr:
        raise ValueError(f"schedule {schedule!r}: HI must be finite and above lr = {lr!r}, got {arg!r}")
    if steps < 2:
        raise ValueError(f"schedule {schedule!r} needs steps >= 2 (a ramp has a first and a last step), got {steps}")
    return hi


def group_cells(cells: list["Cell"]) -> list[list["Cell"]]:
    """``cells`` grouped by :meth:`Cell.group_key` (first-seen order; a repeated cell once): the cells of
    one group differ only in their rate and train side by side."""
    out: dict[str, list[Cell]] = {}
    seen = set()
    for c in cells:
        k = c.key()
        if k in seen:
            continue
        seen.add(k)
        out.setdefault(c.group_key(), []).append(c)
    return list(out.values())
