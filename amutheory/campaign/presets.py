"""Campaign configs and presets.

A :class:`CampaignConfig` is one line of a campaign (a base spec, its depths, calibration depths
and seeds); :data:`PRESETS` holds the named campaigns (``quick``: a few minutes on a CPU,
``full-cpu``: the whole CPU campaign, ``paper`` for a GPU)
built from the small builders below, and :func:`resolve_preset` turns a name or a list of configs
into the configs to run.  A :class:`WidthSweep` is one net measured at several widths (fixed depth);
:data:`WIDTH_SWEEPS` holds the ones a preset runs after its configs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from amutheory.checks import MIN_CALIBRATION_DEPTHS, check_depths
from amutheory.names import CAMPAIGN_PRESETS
from amutheory.spec import BRANCHES, INITS, ArchSpec

#: the campaign modules that analyse chains, residual nets and Transformers (a family names its own
#: as ``campaign_module``; the report groups results by it)
CHAIN_ANALYSIS = "amutheory.campaign.analysis"
RESIDUAL_ANALYSIS = "amutheory.campaign.analysis_resnet"
TRANSFORMER_ANALYSIS = "amutheory.campaign.analysis_transformer"


def analysed_by(record: dict, module: str) -> bool:
    """Whether a stored config result (its ``"family"``) was analysed by the campaign module ``module``."""
    from amutheory.families import result_family

    return result_family(record).campaign_module == module

#: seeds (the first of a config's) whose residual stream is measured
STREAM_SEEDS = 4


def _check_calibratable(cal_depths) -> None:
    """Fail early (before any measuring) when :func:`amutheory.calibrate.calibrate` cannot fit its
    constants to data at ``cal_depths``: it needs one distinct depth per constant it fits
    (:data:`amutheory.checks.MIN_CALIBRATION_DEPTHS`; a count, so that describing a preset costs
    no fit).  A single depth is a reference, not a calibration (a zero-padding config whose exact law
    fits nothing measures its circular reference there), as it was when this check ran a trial fit."""
    if 1 < len(set(cal_depths)) < MIN_CALIBRATION_DEPTHS:
        raise ValueError(f"calibration_depths {list(cal_depths)} cannot calibrate the constants: need at least "
                         f"{MIN_CALIBRATION_DEPTHS} distinct depths (one per fitted constant a, b, e), "
                         f"got {len(set(cal_depths))}")


@dataclass(frozen=True)
class CampaignConfig:
    """One line of a campaign: a base spec (its ``depth`` is replaced), the depths measured,
    the subset used for calibration and the seeds (a count ``n`` means ``0 .. n-1``).

    With ``spec.padding == "zero"`` the config is a pair: zero-padded nets at ``depths`` (every
    one held out) and circular-padding reference nets of the same geometry at
    ``calibration_depths`` (every one used for calibration; not necessarily among ``depths``,
    but the zero/circular ratio is only measured at the depths both hold)."""

    name: str
    spec: ArchSpec
    depths: tuple
    calibration_depths: tuple
    seeds: int | tuple = 32

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name or any(c in self.name for c in ",\n\r\"/\\"):
            raise ValueError(f"name must be a non-empty string without , / \\ quotes or newlines, got {self.name!r}")
        if not isinstance(self.spec, ArchSpec):
            raise TypeError(f"spec must be an ArchSpec, got {type(self.spec).__name__}")
        depths = tuple(check_depths(self.depths))
        cal = tuple(check_depths(self.calibration_depths))
        missing = sorted(set(cal) - set(depths))
        if missing and self.spec.padding != "zero":
            raise ValueError(f"calibration_depths {missing} are not among depths {list(depths)}")
        _check_calibratable(cal)
        if isinstance(self.seeds, bool):
            raise TypeError("seeds must be a count or a list of integers")
        if isinstance(self.seeds, (int, np.integer)):
            if self.seeds < 2:
                raise ValueError(f"seeds must be >= 2 (a CI needs two), got {self.seeds}")
            seeds = int(self.seeds)
        else:
            seeds = tuple(int(s) for s in self.seeds)
            if len(seeds) < 2 or len(set(seeds)) != len(seeds):
                raise ValueError(f"seeds must hold at least 2 distinct integers, got {list(seeds)}")
        object.__setattr__(self, "depths", depths)
        object.__setattr__(self, "calibration_depths", cal)
        object.__setattr__(self, "seeds", seeds)

    @property
    def seed_list(self) -> list[int]:
        return list(range(self.seeds)) if isinstance(self.seeds, int) else list(self.seeds)

    def with_seed_offset(self, offset: int) -> "CampaignConfig":
        """The same config on the seeds ``offset + s`` (``s`` its seeds): an independent replicate
        of it for ``offset`` past its largest seed."""
        offset = check_seed_offset(offset)
        return self if offset == 0 else replace(self, seeds=tuple(offset + s for s in self.seed_list))

    @property
    def is_zero(self) -> bool:
        return self.spec.padding == "zero"

    @property
    def family(self):
        """The config's :class:`~amutheory.families.Family` (its analysis, stream, figures)."""
        return self.spec.family_object

    def analysed_by(self, module: str) -> bool:
        """Whether the campaign module ``module`` analyses this config (its family's ``campaign_module``)."""
        return self.family.campaign_module == module

    @property
    def is_resnet(self) -> bool:
        """Analysed as a residual net (:mod:`amutheory.campaign.analysis_resnet`)."""
        return self.analysed_by(RESIDUAL_ANALYSIS)

    @property
    def is_transformer(self) -> bool:
        """Analysed as a Transformer (:mod:`amutheory.campaign.analysis_transformer`)."""
        return self.analysed_by(TRANSFORMER_ANALYSIS)

    @property
    def stream_seeds(self) -> list[int]:
        return self.seed_list[:STREAM_SEEDS]

    @property
    def held_out_depths(self) -> list[int]:
        if self.is_zero:
            return list(self.depths)
        return [d for d in self.depths if d not in self.calibration_depths]

    @property
    def blocks(self) -> list[tuple[str, int]]:
        """The ``(padding, depth)`` blocks measured: circular references first for zero configs."""
        if self.is_zero:
            return [("circular", d) for d in self.calibration_depths] + [("zero", d) for d in self.depths]
        return [(self.spec.padding, d) for d in self.depths]

    def depths_of(self, padding: str) -> list[int]:
        return [d for p, d in self.blocks if p == padding]

    def to_dict(self) -> dict:
        return {"name": self.name, "spec": self.spec.to_dict(), "depths": list(self.depths),
                "calibration_depths": list(self.calibration_depths), "seeds": self.seed_list,
                "padding": self.spec.padding}


@dataclass(frozen=True)
class WidthSweep:
    """``spec`` (its ``width`` is replaced) measured at ``widths``; rules transfer from ``reference_width``."""

    name: str
    spec: ArchSpec
    widths: tuple
    reference_width: int
    seeds: int = 32
    first_seed: int = 0

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name or any(c in self.name for c in ",\n\r\"/\\"):
            raise ValueError(f"name must be a non-empty string without , / \\ quotes or newlines, got {self.name!r}")
        if not isinstance(self.spec, ArchSpec):
            raise TypeError(f"spec must be an ArchSpec, got {type(self.spec).__name__}")
        object.__setattr__(self, "first_seed", check_seed_offset(self.first_seed, "first_seed"))
        try:
            raw = list(self.widths)
        except TypeError:
            raise TypeError(f"widths must be a list of integers, got {self.widths!r}") from None
        if any(isinstance(w, bool) or not isinstance(w, (int, np.integer)) for w in raw):
            raise TypeError(f"widths must be integers, got {raw}")
        widths = tuple(sorted({int(w) for w in raw}))
        if len(widths) < 2 or widths[0] < 1:
            raise ValueError(f"widths must hold at least 2 distinct positive widths, got {list(self.widths)}")
        if self.reference_width not in widths:
            raise ValueError(f"reference_width {self.reference_width} is not among widths {list(widths)}")
        for w in widths:
            self.spec.with_(width=w)  # every width must make a valid spec (e.g. heads | width)
        if isinstance(self.seeds, bool) or not isinstance(self.seeds, (int, np.integer)) or self.seeds < 2:
            raise ValueError(f"seeds must be an integer >= 2, got {self.seeds!r}")
        object.__setattr__(self, "widths", widths)

    @property
    def seed_list(self) -> list[int]:
        return list(range(self.first_seed, self.first_seed + int(self.seeds)))

    def with_seed_offset(self, offset: int) -> "WidthSweep":
        """The same sweep on the seeds ``offset + s`` (``s`` its seeds)."""
        offset = check_seed_offset(offset)
        return self if offset == 0 else replace(self, first_seed=self.first_seed + offset)

    def to_dict(self) -> dict:
        return {"name": self.name, "spec": self.spec.to_dict(), "widths": list(self.widths),
                "reference_width": self.reference_width, "seeds": self.seed_list}


def check_seed_offset(offset, name: str = "seed_offset") -> int:
    """``offset`` as an int (``TypeError`` unless an integer, ``ValueError`` if negative)."""
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {offset!r}")
    if offset < 0:
        raise ValueError(f"{name} must be >= 0, got {offset}")
    return int(offset)


def n_preacts(spec: ArchSpec, depth: int) -> int:
    """Pre-activation tensors (probe layers) of ``spec`` at ``depth``: ``depth`` for conv chains
    and for ``conv``/``conv-mlp`` resnets (one per block), ``2 depth`` for ``preact`` resnets."""
    return spec.family_object.probe_layers(spec, depth)


def _conv(name, dim, activation, width, spatial, depths, cal, seeds):
    spec = ArchSpec(dim=dim, depth=max(depths), width=width, kernel=3, spatial=spatial,
                    padding="circular", activation=activation)
    return CampaignConfig(name, spec, tuple(depths), tuple(cal), seeds)


def _zero(dim, activation, width, spatial, kernel, depths, seeds):
    """Zero-padded nets and their circular references at the same depths (all of them calibrate)."""
    spec = ArchSpec(dim=dim, depth=max(depths), width=width, kernel=kernel, spatial=spatial,
                    padding="zero", activation=activation)
    return CampaignConfig(f"zero{dim}d-{activation}-N{spatial}-k{kernel}", spec, tuple(depths), tuple(depths), seeds)


def _resnet(branch, init, activation, width, spatial, depths, seeds, calibration=(2, 4, 8)):
    """A 1D residual net (``depth`` = K blocks), circular padding, kernel 3, calibrated on ``calibration``."""
    spec = ArchSpec(family="resnet", dim=1, depth=max(depths), width=width, kernel=3, spatial=spatial,
                    padding="circular", activation=activation, branch=branch, init=init)
    return CampaignConfig(f"resnet-{branch}-{init}-{activation}", spec, tuple(depths), tuple(calibration), seeds)


def _resnets(width, spatial, depths, seeds, calibration, stable_depths=(), stable_calibration=None):
    """Every (branch, init) pair with ReLU, and the three branches with ``k-last`` and a linear
    activation; forward-stable conventions (mean-field recursion,
    :func:`amutheory.symbolic.resnet.coherent.is_forward_stable`) also get ``stable_depths`` and are
    calibrated on ``stable_calibration`` (default ``calibration``)."""
    from amutheory.symbolic.resnet.coherent import is_forward_stable

    pairs = [(b, i, "relu") for i in INITS for b in BRANCHES] + [(b, "k-last", "linear") for b in BRANCHES]
    configs = []
    for b, i, act in pairs:
        cfg = _resnet(b, i, act, width, spatial, depths, seeds, calibration)
        if stable_depths and is_forward_stable(cfg.spec):
            cfg = _resnet(b, i, act, width, spatial, sorted(set(depths) | set(stable_depths)), seeds,
                          stable_calibration or calibration)
        configs.append(cfg)
    return configs


def _stable_resnets(width, spatial, depths, seeds, calibration, stable_depths, stable_calibration):
    """The forward-stable configs of :func:`_resnets` alone."""
    from amutheory.symbolic.resnet.coherent import is_forward_stable

    return [cfg for cfg in _resnets(width, spatial, depths, seeds, calibration, stable_depths, stable_calibration)
            if is_forward_stable(cfg.spec)]


def _mlp(activation, width, input_dim, depths, cal, seeds):
    """An MLP (``depth`` = L layers) of ``input_dim`` Gaussian features, calibrated on ``cal``."""
    spec = ArchSpec(family="mlp", depth=max(depths), width=width, activation=activation, input_channels=input_dim)
    return CampaignConfig(f"mlp-{activation}", spec, tuple(depths), tuple(cal), seeds)


def _transformer(init, activation, width, seq_len, depths, seeds):
    """A pre-LN transformer (``depth`` = K blocks), 2 heads, MLP ratio 2, calibrated on K = 1..4."""
    spec = ArchSpec(family="transformer", depth=max(depths), width=width, spatial=seq_len, activation=activation,
                    init=init, heads=2, mlp_ratio=2)
    return CampaignConfig(f"transformer-{init}-{activation}", spec, tuple(depths), (1, 2, 3, 4), seeds)


_T = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]
_Q1 = [2, 3, 4, 6, 8, 12, 16, 24, 32]
_Q2 = [2, 3, 4, 6, 8, 12, 16]
_P = [2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]
_PZ = [2, 4, 8, 16, 32, 64]

#: Width is fixed per config (circular configs: 8 x the deepest depth), so the law is compared at
#: fixed width.  Zero-padding configs are named ``zero<dim>d-<activation>-N<spatial>-k<kernel>``.
_BUILDERS = {
    # a first look, ~2 min on 2 CPU cores (tests/test_campaign.py bounds its probe cost): the derived
    # laws checked on real nets at held-out depths (the deepest twice the deepest calibration depth) on
    # a calibrated ReLU chain (-3/2), the exact spectral law of a linear chain, one zero-padding config,
    # one forward-stable residual net and one forward-unstable one (the report shows both).  Narrower,
    # shallower, fewer seeds and configs than full-cpu, the whole CPU campaign
    "quick": lambda: [
        _conv("conv1d-relu", 1, "relu", 128, 8, [2, 3, 4, 6, 8, 12, 16], [2, 4, 8], 32),
        _conv("conv1d-linear", 1, "linear", 128, 8, [2, 3, 4, 6, 8, 12, 16], [2, 4, 8], 32),
        _zero(1, "relu", 128, 8, 3, [2, 4, 8], 32),
        # calibrated on K <= 64 and held out at K = 128, as full-cpu's (which also holds out 256)
        _resnet("conv-mlp", "k-last", "relu", 64, 8, [2, 4, 8, 16, 32, 64, 128], 32, (2, 4, 8, 16, 32, 64)),
        _resnet("conv-mlp", "none", "relu", 64, 8, [2, 4, 8, 16, 32, 64], 32, (2, 4, 8, 16)),
    ],
    # the whole CPU campaign (~32 min on 2 cores; the quick preset before issue 33): chains, zero
    # padding over N and k, every residual convention
    "full-cpu": lambda: [
        _conv("conv1d-relu", 1, "relu", 256, 16, _Q1, [2, 4, 8, 16], 32),
        _conv("conv1d-linear", 1, "linear", 256, 16, _Q1, [2, 4, 8, 16], 32),
        # calibrate() fits a, b, e to s_bar at the calibration depths (>= 3 of them); the deepest
        # calibration depth is half the deepest depth, so the held-out check is an extrapolation
        _conv("conv2d-relu", 2, "relu", 128, 8, _Q2, [2, 4, 6, 8], 32),
        _conv("conv2d-linear", 2, "linear", 128, 8, _Q2, [2, 4, 6, 8], 32),
        # zero padding: the boundary regime L k^2 / N^2 spans ~0.002 .. 6 over N and k
        *[_zero(1, "relu", 128, n, k, [2, 4, 8, 16], 32) for n in (8, 16, 32, 64) for k in (3, 5)],
        _zero(1, "linear", 128, 8, 3, [2, 4, 8, 16], 32),
        _zero(2, "relu", 64, 8, 3, [2, 4, 8], 32),
        # residual nets: K blocks, K = 2..64 for every convention and on to 256 for the forward-stable
        # ones: their local slopes still move between K = 32 and 64 (the law's 1/K terms; the
        # campaign's report.md lists them), so the asymptotic exponent is tested over K = 64, 128, 256.  Calibrated (A, B, e0 and the
        # spread line) on K = 2..64, held out 128 and 256: as for the chains, the deepest calibration
        # depth is a quarter of the deepest depth.  Unstable conventions have no law (K <= 64).
        # s_bar of a residual net is heavy-tailed over seeds (single seeds at several times the mean),
        # so 96 seeds: one such seed then moves the mean a third as much as at 32, inside the CI it
        # widens
        *_resnets(64, 8, [2, 4, 8, 16, 32, 64], 96, (2, 4, 8, 16), stable_depths=(128, 256),
                  stable_calibration=(2, 4, 8, 16, 32, 64)),
    ],
    # issue 5: transformers against effective depth, and every transfer rule at held-out depths of
    # one conv, two residual and three transformer families (CPU, a few minutes)
    "transfer": lambda: [
        _conv("conv1d-relu", 1, "relu", 128, 16, _Q1, [2, 4, 8, 16], 32),
        _resnet("conv-mlp", "k-last", "relu", 64, 8, [2, 4, 8, 16, 32], 32),
        _resnet("conv-mlp", "sqrt-multiplier", "relu", 64, 8, [2, 4, 8, 16, 32], 32),
        *[_transformer(init, "relu", 32, 8, _T, 32) for init in ("none", "k-last", "sqrt-multiplier")],
    ],
    # the forward-stable residual nets of full-cpu at twice its width (n = 128, same depths, calibration
    # and seeds; CPU, its time and memory in README "Residual networks"): K / n <= 2, so that full-cpu's
    # exponent and held-out checks can be told apart from finite width (campaign.width_compare sets
    # the two side by side)
    "resnet-wide": lambda: _stable_resnets(128, 8, [2, 4, 8, 16, 32, 64], 96, (2, 4, 8, 16), stable_depths=(128, 256),
                                   stable_calibration=(2, 4, 8, 16, 32, 64)),
    # the same at n = 256 (K / n <= 1): a third width for compare-widths' 1/n line.  Several times the
    # CPU time of resnet-wide per config (README "Residual networks" times one config), so on a CPU
    # run it with --only; on a GPU, all of it
    "resnet-wider": lambda: _stable_resnets(256, 8, [2, 4, 8, 16, 32, 64], 96, (2, 4, 8, 16), stable_depths=(128, 256),
                                    stable_calibration=(2, 4, 8, 16, 32, 64)),
    # issue 38: the MLP family (the chain with kernel 1 on one position), ReLU and linear, calibrated on
    # L = 2..6 and held out at 8, 12, 16 (small: seconds on a CPU)
    "mlp": lambda: [_mlp(activation, 64, 16, [2, 3, 4, 6, 8, 12, 16], [2, 3, 4, 6], 32) for activation in ("relu", "linear")],
    # meant for a GPU: pass protocol=ProbeProtocol(device="cuda")
    "paper": lambda: [
        _conv("conv1d-relu", 1, "relu", 512, 32, _P, [2, 4, 8, 16], 64),
        _conv("conv1d-linear", 1, "linear", 512, 32, _P, [2, 4, 8, 16], 64),
        _conv("conv2d-relu", 2, "relu", 512, 32, _P, [2, 4, 8, 16], 64),
        _conv("conv2d-linear", 2, "linear", 512, 32, _P, [2, 4, 8, 16], 64),
        *[_zero(dim, "relu", 512, n, k, _PZ, 64) for dim in (1, 2) for n in (8, 16, 32, 64) for k in (3, 5)],
        *[_zero(dim, "linear", 512, 8, 3, _PZ, 64) for dim in (1, 2)],
        *_resnets(256, 16, [2, 4, 8, 16, 32, 64], 64, (2, 4, 8, 16), stable_depths=(128, 256),
                  stable_calibration=(2, 4, 8, 16, 32, 64)),
        *[_transformer(init, "relu", 256, 32, _T + [48, 64], 64) for init in ("none", "k-last", "sqrt-multiplier")],
    ],
}


class _Presets(Mapping):
    """The presets by name, each built (and its configs checked) the first time it is looked up:
    naming them costs nothing, so ``amutheory --help`` and a command that uses no preset never
    build the others."""

    def __init__(self, builders: dict):
        self._builders, self._built = builders, {}

    def __getitem__(self, name):
        if name not in self._built:
            self._built[name] = self._builders[name]()
        return self._built[name]

    def __iter__(self):
        return iter(self._builders)

    def __len__(self):
        return len(self._builders)


#: the named campaigns (their names, light for the CLI, are :data:`amutheory.names.CAMPAIGN_PRESETS`)
PRESETS = _Presets(_BUILDERS)
assert tuple(PRESETS) == CAMPAIGN_PRESETS, "amutheory.names.CAMPAIGN_PRESETS must list the presets built here"


def _width(name, spec, widths, seeds):
    """A width sweep transferring from the narrowest width."""
    return WidthSweep(name, spec, tuple(widths), min(widths), seeds)


#: width sweeps run with a preset (``amutheory.campaign.width_sweep``): one net per family at a
#: fixed depth, every width; the depth is kept small so that even the narrowest width has L/n <= 1/8
WIDTH_SWEEPS = {
    "quick": [],
    "full-cpu": [],
    "transfer": [
        _width("width-conv1d-relu", ArchSpec(dim=1, depth=4, width=32, kernel=3, spatial=16, activation="relu"),
               (32, 64, 128, 256), 64),
        _width("width-resnet-conv-mlp-k-last", ArchSpec(family="resnet", dim=1, depth=4, width=32, kernel=3,
                                                        spatial=8, activation="relu", branch="conv-mlp",
                                                        init="k-last"), (32, 64, 128, 256), 64),
        _width("width-transformer-k-last", ArchSpec(family="transformer", depth=2, width=32, spatial=8,
                                                    activation="relu", init="k-last", heads=2, mlp_ratio=2),
               (32, 64, 128, 256), 64),
        # muP attention logits (q.k / d_h): removes the extra width growth of the q.k / sqrt(d_h) logits
        _width("width-transformer-k-last-mup-attn", ArchSpec(family="transformer", depth=2, width=32, spatial=8,
                                                             activation="relu", init="k-last", heads=2, mlp_ratio=2,
                                                             attn_scale="mup"), (32, 64, 128, 256), 64),
    ],
    "paper": [
        _width("width-conv1d-relu", ArchSpec(dim=1, depth=8, width=64, kernel=3, spatial=32, activation="relu"),
               (64, 128, 256, 512, 1024), 64),
        _width("width-resnet-conv-mlp-k-last", ArchSpec(family="resnet", dim=1, depth=8, width=64, kernel=3,
                                                        spatial=16, activation="relu", branch="conv-mlp",
                                                        init="k-last"), (64, 128, 256, 512, 1024), 64),
        _width("width-transformer-k-last", ArchSpec(family="transformer", depth=4, width=64, spatial=32,
                                                    activation="relu", init="k-last", heads=2, mlp_ratio=2),
               (64, 128, 256, 512, 1024), 64),
    ],
}


def resolve_width_sweeps(preset, only=None) -> list:
    """The width sweeps of a preset name (none for a list of configs), filtered by ``only``."""
    sweeps = list(WIDTH_SWEEPS.get(preset, [])) if isinstance(preset, str) else []
    if only is not None:
        wanted = [only] if isinstance(only, str) else list(only)
        sweeps = [s for s in sweeps if s.name in wanted]
    return sweeps


def split_only(preset, only):
    """``only`` without the names of the preset's width sweeps (which :func:`resolve_preset` does not know)."""
    if only is None:
        return None
    wanted = [only] if isinstance(only, str) else list(only)
    names = {s.name for s in resolve_width_sweeps(preset)}
    return [w for w in wanted if w not in names]


def resolve_preset(preset, only=None) -> tuple[str, list[CampaignConfig]]:
    """``(preset name, configs)`` for a preset name or a list of :class:`CampaignConfig`,
    keeping only the names in ``only`` (a name or a list of names) when given."""
    if isinstance(preset, str):
        if preset not in PRESETS:
            raise ValueError(f"preset must be one of {', '.join(PRESETS)} or a list of CampaignConfig, got {preset!r}")
        name, configs = preset, list(PRESETS[preset])
    else:
        try:
            configs = list(preset)
        except TypeError:
            raise TypeError(f"preset must be a name or a list of CampaignConfig, got {preset!r}") from None
        if not configs or not all(isinstance(c, CampaignConfig) for c in configs):
            raise TypeError("preset must be a non-empty list of CampaignConfig")
        name = "custom"
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        raise ValueError(f"config names must be distinct, got {names}")
    if only is not None:
        wanted = [only] if isinstance(only, str) else list(only)
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            raise ValueError(f"only names unknown configs {unknown}; known: {names}")
        configs = [c for c in configs if c.name in wanted]
    return name, configs
