"""Architecture and probe specifications that validate themselves.

An :class:`ArchSpec` describes one network of a family (here: homogeneous conv chains),
a :class:`ProbeProtocol` the one-step measurement made on it.  Both are plain, frozen
dataclasses; every field is checked in ``__post_init__`` and a violation raises
``ValueError`` (wrong value) or ``TypeError`` (wrong type) naming the argument.  Sizes have upper
bounds with a reason (:mod:`amutheory.limits`: depth <= 100 000, every other size <= 2^20); the
command line's other numbers (seeds, chunk, ...) are checked by the helpers here too.

The symbolic side reads numbers from these objects; the torch side builds models from them.
"""

from __future__ import annotations

import dataclasses
import numbers
from dataclasses import dataclass

from amutheory.families import family_names, get_family
from amutheory.limits import MAX_DEPTH, MAX_SCALE, MAX_SIZE, MIN_SCALE, SEED_LIMIT

#: the built-in families' names (the registry, :mod:`amutheory.families`, is the live list)
FAMILIES = family_names(plugins=False)
#: residual branch types: ``conv`` = x + phi(W * x) (the AM-muP authors' block); ``conv-mlp`` =
#: x + W2 phi(W1 * x) with a 1x1 W2; ``preact`` = x + W2 * phi(W1 * phi(x))
BRANCHES = ("conv", "conv-mlp", "preact")
#: residual init conventions (amutheory.symbolic.resnet.coherent documents each formula)
INITS = ("k-last", "k-all", "k-squared", "sqrt-multiplier", "none")
SHORTCUTS = ("identity", "projection")
PADDINGS = ("circular", "zero")
#: accepted spellings of a padding, normalised to the names of :data:`PADDINGS`
PADDING_ALIASES = {"zeros": "zero", "circ": "circular"}
#: torch's ``padding_mode`` for each padding
TORCH_PADDING_MODE = {"circular": "circular", "zero": "zeros"}
ACTIVATIONS = ("linear", "relu", "gelu", "tanh")
#: readout (linear head) conventions: name -> rho of its weight variance ``1 / width^rho``
#: (``standard``: fan-in ``Var 1/width``; ``mup``: ``Var 1/width^2``, muP's readout)
READOUT_POWERS = {"standard": 1, "mup": 2}
#: attention logit scale of a transformer: ``sqrt`` = q.k / sqrt(d_h) (standard), ``mup`` = q.k / d_h
ATTN_SCALES = ("sqrt", "mup")
#: fields added after results were first written, with the value older results were measured with
FIELD_DEFAULTS_BEFORE = {"readout": "standard", "attn_scale": "sqrt"}
DIMS = (1, 2)
#: normalisation layers a training run may put before every activation (amutheory.measure.models)
NORMS = ("none", "batch", "layer")


def check_int(name: str, value, minimum: int, maximum: int | None = None, why: str = "") -> int:
    """``value`` as an ``int`` in ``[minimum, maximum]`` (TypeError for a non-integer, bools included);
    ``why`` (the reason for the upper bound) is said when ``maximum`` is exceeded."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}{f' ({why})' if why else ''}, got {value}")
    return int(value)


#: why a depth above :data:`MAX_DEPTH` is refused (:mod:`amutheory.limits`)
DEPTH_WHY = "every law and the probe loop over the layers"
#: why a size above :data:`MAX_SIZE` is refused
SIZE_WHY = "no machine holds a net that large"


def check_size(name: str, value) -> int:
    """A size (width, spatial side, batch, channels, ...) in ``[1, MAX_SIZE]``."""
    return check_int(name, value, 1, MAX_SIZE, SIZE_WHY)


def check_depth(name: str, value) -> int:
    """A depth (layers, or blocks) in ``[1, MAX_DEPTH]``."""
    return check_int(name, value, 1, MAX_DEPTH, DEPTH_WHY)


def check_depth_list(name: str, depths) -> list[int]:
    """Every depth of ``depths`` (an iterable of integers) in ``[1, MAX_DEPTH]``; the list."""
    return [check_depth(name, d) for d in depths]


def check_seed_range(start, count, start_name: str = "seed_start", count_name: str = "seeds",
                     minimum_count: int = 2) -> list[int]:
    """Seeds ``start .. start + count - 1``: ``start >= 0``, ``count`` in ``[minimum_count, MAX_SIZE]``
    (a CI needs two seeds) and every seed below :data:`amutheory.limits.SEED_LIMIT`."""
    check_int(start_name, start, 0, SEED_LIMIT - 1, "seeds are 63-bit")
    check_int(count_name, count, minimum_count, MAX_SIZE, SIZE_WHY)
    if start + count > SEED_LIMIT:
        raise ValueError(f"{start_name} + {count_name} must be <= 2^63 (seeds are 63-bit), got {start + count}")
    return list(range(start, start + count))


def check_number(name: str, value, *, positive: bool = False, minimum: float | None = None,
                 below: float | None = None) -> float:
    """``value`` as a finite ``float``, > 0 with ``positive``, in ``[minimum, below)`` when given."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{name} must be finite, got {value}")
    if positive and value <= 0:
        raise ValueError(f"{name} must be > 0, got {value:g}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum:g}, got {value:g}")
    if below is not None and value >= below:
        raise ValueError(f"{name} must be < {below:g}, got {value:g}")
    return value


def check_rate(name: str, value) -> float:
    """A learning rate: positive, finite and a normal float (at least ``sys.float_info.min``,
    about 2.2e-308): a subnormal rate has lost its precision and its products with the tiny
    factors of a transfer or an update underflow to 0, a rate this library refuses."""
    import sys

    value = check_number(name, value, positive=True)
    if value < sys.float_info.min:
        raise ValueError(f"{name} must be >= {sys.float_info.min:g} (a normal float; smaller rates underflow to 0), "
                         f"got {value:g}")
    return value


def check_scale(name: str, value) -> float:
    """A positive finite variance scale within ``[MIN_SCALE, MAX_SCALE]`` (:data:`amutheory.limits.MAX_SCALE`
    says why: the laws hold its fourth power)."""
    value = check_number(name, value, positive=True)
    if not (MIN_SCALE <= value <= MAX_SCALE):
        raise ValueError(f"{name} must be in [{MIN_SCALE:g}, {MAX_SCALE:g}] (the laws hold its fourth power, "
                         f"which float64 keeps finite only there), got {value:g}")
    return value


def check_device(device) -> str:
    """``cpu``, ``cuda`` or ``cuda:i`` (``i`` a device index); whether CUDA is there is asked later."""
    ok = isinstance(device, str) and (device in ("cpu", "cuda") or (device.startswith("cuda:")
                                                                   and device[5:].isdigit()))
    if not ok:
        raise ValueError(f"device must be 'cpu' or 'cuda[:i]', got {device!r}")
    return device


def check_choice(name: str, value, choices) -> str:
    """``value`` if it is one of ``choices`` (TypeError for a non-string)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__} {value!r}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return value


_check_int, _check_choice = check_int, check_choice


def _check_real(name: str, value, positive: bool = True) -> float:
    return check_number(name, value, positive=positive)


@dataclass(frozen=True)
class ArchSpec:
    """One network: ``depth`` conv layers ``h_l = W_l * x_{l-1}``, ``x_l = phi(h_l)`` (family
    ``conv``), or a stem conv, ``depth`` = K residual blocks ``x <- x + branch(x)`` and the same
    head (family ``resnet``).

    Attributes
    ----------
    family : "conv"            homogeneous convolutional chain (no biases).
    dim : 1 or 2               spatial dimension d.
    depth : L >= 1             number of conv layers = number of pre-activation tensors.
    width : n >= 1             channels of every hidden layer.
    kernel : k                 odd kernel size, k <= spatial.
    spatial : N                side length of the input (N^d positions).
    padding : circular|zero    boundary condition ("zeros" is accepted for "zero").
    activation : phi           one of linear, relu, gelu, tanh.
    init_c : c or None         He fan-in constant, Var[W] = c / fan_in; None = the activation's
                               critical constant at unit input variance (2 for ReLU).
    input_channels : c_in      channels of the Gaussian input.
    batch : B                  samples per SGD step.
    outputs : 10               outputs of the linear head.
    readout : standard|mup     the head's weight variance: ``1/width`` (standard, the default) or
                               ``1/width^2`` (muP); it sets how eta* scales with width
                               (:mod:`amutheory.symbolic.primitives.width`), not how it scales with depth.
    branch, init, shortcut     ResNets only (family "resnet", ``depth`` = K blocks): the branch
                               type (:data:`BRANCHES`), the init convention (:data:`INITS`) and
                               the skip path (identity, or a 1x1 projection in every block).
    heads, mlp_ratio           Transformers only (family "transformer", ``depth`` = K pre-LN
                               blocks, ``width`` = d_model, ``spatial`` = sequence length T,
                               ``init`` as for ResNets, applied to both branches): attention heads
                               (dividing ``width``) and the MLP hidden width ``mlp_ratio * width``;
    attn_scale : sqrt|mup      attention logits ``q.k / sqrt(d_h)`` (standard) or ``q.k / d_h`` (muP).
    """

    family: str = "conv"
    dim: int = 1
    depth: int = 4
    width: int = 64
    kernel: int = 3
    spatial: int = 16
    padding: str = "circular"
    activation: str = "relu"
    init_c: float | None = None
    input_channels: int = 3
    batch: int = 8
    outputs: int = 10
    readout: str = "standard"
    branch: str = "conv"
    init: str = "k-last"
    shortcut: str = "identity"
    heads: int = 2
    mlp_ratio: int = 4
    attn_scale: str = "sqrt"

    def __post_init__(self):
        if not isinstance(self.family, str):
            raise TypeError(f"family must be a string, got {type(self.family).__name__} {self.family!r}")
        family = get_family(self.family)
        if not family.has_spec:
            raise ValueError(f"family: {self.family!r} describes a user's module, not an ArchSpec")
        for name, value in family.normalise(self).items():
            object.__setattr__(self, name, value)
        if isinstance(self.dim, bool) or not isinstance(self.dim, numbers.Integral):
            raise TypeError(f"dim must be an integer, got {type(self.dim).__name__} {self.dim!r}")
        if self.dim not in DIMS:
            raise ValueError(f"dim must be 1 or 2, got {self.dim}")
        check_depth("depth", self.depth)
        for name in ("width", "kernel", "spatial", "input_channels", "batch", "outputs", "heads", "mlp_ratio"):
            check_size(name, getattr(self, name))
        if self.spatial**self.dim > MAX_SIZE:
            raise ValueError(f"spatial^dim (positions) must be <= {MAX_SIZE} ({SIZE_WHY}), got "
                             f"{self.spatial}^{self.dim}")
        if isinstance(self.padding, str) and self.padding in PADDING_ALIASES:
            object.__setattr__(self, "padding", PADDING_ALIASES[self.padding])
        _check_choice("padding", self.padding, PADDINGS)
        _check_choice("activation", self.activation, ACTIVATIONS)
        if self.init_c is not None:
            check_scale("init_c", self.init_c)
        _check_choice("readout", self.readout, tuple(READOUT_POWERS))
        _check_choice("branch", self.branch, BRANCHES)
        _check_choice("init", self.init, INITS)
        _check_choice("shortcut", self.shortcut, SHORTCUTS)
        _check_choice("attn_scale", self.attn_scale, ATTN_SCALES)
        family.check(self)

    @property
    def family_object(self):
        """The :class:`~amutheory.families.Family` of this spec (everything that is its family's)."""
        return get_family(self.family)

    @property
    def c(self) -> float:
        """The init constant actually used (the activation's critical one when unset)."""
        if self.init_c is not None:
            return float(self.init_c)
        from amutheory.activations import get_activation

        return float(get_activation(self.activation).critical_c())

    @property
    def readout_variance(self) -> float:
        """Variance of a head weight: ``1 / width^rho`` (:data:`READOUT_POWERS`)."""
        return float(self.width) ** -READOUT_POWERS[self.readout]

    @property
    def seq_len(self) -> int:
        """Sequence length T of a transformer (stored as ``spatial``)."""
        return self.spatial

    @property
    def positions(self) -> int:
        """Number of spatial positions N^d."""
        return self.spatial**self.dim

    def with_(self, **changes) -> "ArchSpec":
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        for k in self.family_object.unused_fields:  # fields this family does not read
            d.pop(k)
        return d


@dataclass(frozen=True)
class ProbeProtocol:
    """The canonical one-step probe (docs/theory.md section 3 and 9), overridable field by field.

    * inputs ``x_b ~ N(0, input_var)`` i.i.d. per channel and position (shape from the spec);
    * loss ``mean_b <r_b, f(x_b)>`` with fixed ``r_b ~ N(0, I)``;
    * one SGD step of size ``eta`` from the init (first order: ``eta`` drops out of ``s_l``);
    * ``s_l`` = mean over batch, channels and positions of ``(J_theta h_l . grad)^2``;
    * float64 on CPU unless ``dtype``/``device`` say otherwise.
    """

    input_var: float = 1.0
    dtype: str = "float64"
    device: str = "cpu"

    def __post_init__(self):
        check_scale("input_var", self.input_var)
        _check_choice("dtype", self.dtype, ("float64", "float32"))
        check_device(self.device)
