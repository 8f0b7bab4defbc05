"""The three operations of amutheory as a small Python API.

* :func:`derive`  -- spec in, :class:`~amutheory.symbolic.primitives.law.ScalingLaw` out (SymPy only);
* :func:`measure` -- spec and depths in, :class:`Measurement` out (runs the torch probe);
* :func:`predict` -- spec and depths in, :class:`Prediction` out (derived law, with constants
  derived or calibrated on a measurement at other depths).

``eta*`` is always ``sqrt(C / s_bar)``: AM-muP fixes the layer-averaged one-step second moment
``eta^2 s_bar`` to ``C`` (default 1, a convention); measured and predicted ``eta*`` use the same
``C``, so their ratio does not depend on it.
"""

from __future__ import annotations

import functools
import numbers
from dataclasses import dataclass, field, replace

import numpy as np

from amutheory.calibrate import Calibration, calibrate, layer_prediction, per_layer_statistic
from amutheory.constants import Constant
from amutheory.spec import ArchSpec, ProbeProtocol
from amutheory.stats import central_eta_slope, eta_slope_between, integer_neighbours
from amutheory.symbolic.chain.conv import conv_law, derived_constants

DEFAULT_CALIBRATION_DEPTHS = (2, 3, 4, 6)


def _check_spec(spec):
    if not isinstance(spec, ArchSpec):
        raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")


def check_depths(depths) -> list[int]:
    """``depths`` as a sorted list of distinct positive integers (ValueError otherwise)."""
    if isinstance(depths, (str, bytes)) or not hasattr(depths, "__iter__"):
        raise TypeError(f"depths must be a list of integers, got {depths!r}")
    out = []
    for d in depths:
        if isinstance(d, bool) or not isinstance(d, (numbers.Integral, np.integer)):
            raise TypeError(f"depths must be integers, got {d!r}")
        if d < 1:
            raise ValueError(f"depths must be >= 1, got {d}")
        out.append(int(d))
    if not out:
        raise ValueError("depths must not be empty")
    if len(set(out)) != len(out):
        raise ValueError(f"depths must be distinct, got {out}")
    return sorted(out)


def _check_C(C):
    if isinstance(C, bool) or not isinstance(C, numbers.Real) or not np.isfinite(C) or C <= 0:
        raise ValueError(f"C must be a positive number, got {C!r}")
    return float(C)


TRANSFORMER_LAWS = ("coherent", "effective-depth")
#: residual-net laws of :func:`predict`: the coherent order (``A, B, e0`` calibrated) or the dense
#: shape (the exact dense law's stream and own parts, each times a calibrated ``rho``,
#: :func:`amutheory.symbolic.resnet.dense.shape_predictor`)
RESNET_LAWS = ("coherent", "dense-shape")
#: what :func:`predict` takes as a residual net's ``law``: either law, or ``"selected"`` (both
#: calibrated on the same nets, the one that fits the calibration K better kept: :func:`pick_resnet_law`)
RESNET_LAW_CHOICES = RESNET_LAWS + ("selected", "limit-shape")
#: the residual laws that are calibrated predictors, not closed forms (``derive`` refuses them)
CALIBRATED_RESNET_LAWS = ("dense-shape", "selected", "limit-shape")
#: every law name :func:`predict` knows, in the order the CLI lists them (``limit-shape``: the exact
#: infinite-width law of the net times one calibrated amplitude, :func:`limit_shape_predictor`; not a
#: candidate of ``selected``)
LAWS = ("coherent", "effective-depth", "dense-shape", "selected", "limit-shape")
#: the criterion :func:`pick_resnet_law` applies (the words every selection record carries)
SELECTION_CRITERION = ("the lower residual standard error of the calibration's fit of ln s_bar "
                       "(sqrt(RSS / dof); made before any held-out depth is seen)")


def derive(spec: ArchSpec | None = None, finite_width: bool = False, law: str = "coherent"):
    """The derived depth law of ``spec``'s family (symbolic; no torch).  Residual nets: the law of
    :func:`amutheory.symbolic.resnet.coherent.resnet_law` (ValueError when the forward pass is unstable).
    Transformers: ``law="coherent"`` (:func:`amutheory.symbolic.transformer.coherent.transformer_law`) or
    ``"effective-depth"`` (the chain law in ``2K + 2``, the second paper's claim)."""
    if spec is not None:
        _check_spec(spec)
    if law not in LAWS:
        raise ValueError(f"law must be one of {', '.join(LAWS)}; got {law!r}")
    if law in CALIBRATED_RESNET_LAWS and (spec is None or spec.family != "resnet"):
        raise ValueError(f"law: {law!r} is a residual-net law (family resnet)")
    if spec is not None and spec.family == "transformer":
        from amutheory.symbolic.transformer.coherent import effective_depth_law, transformer_law

        if finite_width:
            raise ValueError("finite_width is available for the conv family only")
        return effective_depth_law(spec) if law == "effective-depth" else transformer_law(spec)
    if spec is not None and spec.family == "resnet":
        from amutheory.symbolic.resnet.coherent import resnet_law

        if finite_width:
            raise ValueError("finite_width is available for the conv family only")
        if law in CALIBRATED_RESNET_LAWS:
            raise ValueError(f"law: {law!r} is a calibrated predictor, not a closed form (predict with "
                             f"law={law!r}); derive gives the coherent law, whose exponent it shares")
        return resnet_law(spec)
    return conv_law(spec, finite_width=finite_width)


# --------------------------------------------------------------------------- measurement
@dataclass
class Measurement:
    """Probe results of one spec over depths: ``profiles[L][i, l-1] = s_l`` of seed ``seeds[i]``."""

    spec: ArchSpec
    depths: list
    seeds: list
    profiles: dict
    C: float = 1.0
    level: float = 0.95

    def s_bar(self, depth: int) -> np.ndarray:
        """Per-seed ``s_bar = (1/L) sum_l s_l`` at ``depth``."""
        return self.profiles[depth].mean(axis=1)

    def summary(self) -> dict:
        from amutheory import stats

        rows = {k: [] for k in ("s_bar_mean", "s_bar_mean_ci", "s_bar_geo", "s_bar_geo_ci")}
        for d in self.depths:
            m, lo, hi = stats.arith_mean_ci(self.s_bar(d), level=self.level)
            g, glo, ghi = stats.geo_mean_ci(self.s_bar(d), level=self.level)
            rows["s_bar_mean"].append(m)
            rows["s_bar_mean_ci"].append([lo, hi])
            rows["s_bar_geo"].append(g)
            rows["s_bar_geo_ci"].append([glo, ghi])
        eta = lambda s: float(np.sqrt(self.C / s))  # noqa: E731
        out = dict(rows)
        out["eta_star_mean"] = [eta(s) for s in rows["s_bar_mean"]]
        out["eta_star_mean_ci"] = [[eta(hi), eta(lo)] for lo, hi in rows["s_bar_mean_ci"]]
        out["eta_star_geo"] = [eta(s) for s in rows["s_bar_geo"]]
        out["eta_star_geo_ci"] = [[eta(hi), eta(lo)] for lo, hi in rows["s_bar_geo_ci"]]
        out["per_layer_mean"] = [per_layer_statistic(self.profiles[d], "mean").tolist() for d in self.depths]
        out["per_layer_geo"] = [per_layer_statistic(self.profiles[d], "geo").tolist() for d in self.depths]
        if len(self.depths) >= 2:
            for stat in ("mean", "geo"):
                fit = self.fitted_exponent(stat)
                out[f"fitted_exponent_{stat}"] = fit[0]
                out[f"fitted_exponent_{stat}_ci"] = list(fit[1])
        return out

    def fitted_exponent(self, statistic: str = "mean", depths=None) -> tuple[float, tuple]:
        """Least-squares slope of ``ln eta*`` on ``ln L`` (``= -slope(ln s_bar)/2``), seed-bootstrap CI."""
        from amutheory import stats

        depths = self.depths if depths is None else depths
        values = np.stack([self.s_bar(d) for d in depths], axis=1)
        fit = stats.fit_loglog_slope(depths, values, level=self.level, statistic=statistic)
        lo, hi = fit.ci
        return -fit.slope / 2, (-hi / 2, -lo / 2)

    def to_dict(self) -> dict:
        d = {"spec": self.spec.to_dict(), "depths": list(self.depths), "seeds": list(self.seeds), "C": self.C}
        d.update(self.summary())
        return d


def measure(spec: ArchSpec, depths, seeds, protocol: ProbeProtocol = ProbeProtocol(), C: float = 1.0,
            progress=None, chunk: int = 16) -> Measurement:
    """Run the probe on ``spec`` at every depth (``spec.depth`` is replaced) for every seed."""
    from amutheory.measure.probe import probe

    _check_spec(spec)
    depths = check_depths(depths)
    C = _check_C(C)
    seeds = _check_seeds(seeds)
    if not isinstance(protocol, ProbeProtocol):
        raise TypeError(f"protocol must be a ProbeProtocol, got {type(protocol).__name__}")
    profiles = {}
    for i, d in enumerate(depths):
        profiles[d] = probe(spec.with_(depth=d), seeds, protocol, chunk=chunk).s
        if progress is not None:
            progress(i + 1, len(depths), d)
    return Measurement(spec, depths, seeds, profiles, C)


def _check_seeds(seeds) -> list[int]:
    if isinstance(seeds, numbers.Integral) and not isinstance(seeds, bool):
        if seeds < 2:
            raise ValueError(f"seeds must be >= 2 (a CI needs two), got {seeds}")
        return list(range(int(seeds)))
    try:
        out = [int(s) for s in seeds]
    except (TypeError, ValueError):
        raise TypeError(f"seeds must be an integer count or a list of integers, got {seeds!r}") from None
    if len(out) < 2:
        raise ValueError(f"seeds must hold at least 2 seeds, got {len(out)}")
    return out


# --------------------------------------------------------------------------- prediction
@dataclass
class Prediction:
    """Predicted ``s_bar``, ``eta*`` and local slope at each depth, with the constants used."""

    spec: ArchSpec
    depths: list
    s_bar: list
    eta_star: list
    local_slope: list
    constants: dict
    law: str
    statistic: str
    C: float = 1.0
    calibration: Calibration | None = None
    notes: list = field(default_factory=list)
    #: sd of ``ln s_bar`` over the calibration's seed-bootstrap refits at each depth (the
    #: prediction's own sampling error; ``None`` where the calibration keeps no refits)
    s_bar_log_sd: list | None = None
    #: ``law="selected"``: which residual law was kept and why (:func:`pick_resnet_law`); else ``None``
    selection: dict | None = None

    def to_dict(self) -> dict:
        d = {"spec": self.spec.to_dict(), "depths": list(self.depths), "eta_star": list(self.eta_star),
             "s_bar": list(self.s_bar), "local_slope": list(self.local_slope),
             "constants": {k: c.to_dict() for k, c in self.constants.items()},
             "law": self.law, "statistic": self.statistic, "C": self.C, "notes": list(self.notes),
             "s_bar_log_sd": None if self.s_bar_log_sd is None else list(self.s_bar_log_sd)}
        if self.calibration is not None:
            d["calibration"] = self.calibration.to_dict()
        if self.selection is not None:
            d["law_selection"] = self.selection
        return d


def mlp_limit_constants(spec: ArchSpec, input_var: float = 1.0) -> dict[str, Constant]:
    """Constants from the derivation alone: ``a = 1`` (unit of ``s``), ``b = v``, ``e = 0``,
    ``gamma = 0``, ``epsilon`` exact.  Exact for the MLP limit; a conv chain needs calibration."""
    der = derived_constants(spec, input_var)
    v = der["v_mlp"]
    return {
        "a": Constant("a", 1.0, "convention", note="unit of s: the coherent constant"),
        "b": Constant("b", v.value, v.source, v.error, note="b = v a, MLP limit"),
        "e": Constant("e", 0.0, "exact", note="no local part in the MLP limit"),
        "epsilon": der["epsilon"],
        "gamma": Constant("gamma", 0.0, "convention", note="infinite width"),
    }


@functools.lru_cache(maxsize=None)
def _law_predictors(finite_width: bool):
    """The lambdified ``s_bar``, ``eta*`` and local slope of the conv law (made once per process:
    the expressions do not depend on the spec's numbers, only on ``finite_width``)."""
    law = conv_law(None, finite_width=finite_width)
    return tuple(law.predictor(q) for q in ("s_bar", "eta_star", "local_slope"))


@functools.lru_cache(maxsize=None)
def _lognormal_fns():
    """Lambdified mean-over-typical factor and its local-slope shift (derived in SymPy)."""
    import sympy as sp

    from amutheory.symbolic.primitives.expansion import lognormal_mean_factor, lognormal_slope_shift
    from amutheory.symbolic.primitives.symbols import L, kappa, p, sigma2_0

    args = (L, sigma2_0, kappa, p)
    return (sp.lambdify(args, lognormal_mean_factor(), "numpy"),
            sp.lambdify(args, lognormal_slope_shift(), "numpy"))


def mean_over_typical(constants: dict, depths):
    """``(factor, slope shift)`` at ``depths``: ``factor = mean / typical = exp(sigma^2(L)/2)`` of a
    lognormal-model calibration and what it adds to the mean's local slope relative to the
    typical value's; ``(1, 0)`` when the constants carry no spread (``kappa``).  The spread's power
    of L is the constant ``spread_power`` (1 when absent: chains)."""
    depths = np.asarray(depths, dtype=float)
    if "kappa" not in constants:
        return np.ones_like(depths), np.zeros_like(depths)
    factor_fn, shift_fn = _lognormal_fns()
    s0, k = constants["sigma2_0"].value, constants["kappa"].value
    pw = constants["spread_power"].value if "spread_power" in constants else 1.0
    return (factor_fn(depths, s0, k, pw) * np.ones_like(depths),
            shift_fn(depths, s0, k, pw) * np.ones_like(depths))


def law_values(spec: ArchSpec, depths, constants: dict, C: float = 1.0, statistic: str = "mean"):
    """``(s_bar, eta*, local slope)`` at ``depths`` from the derived law and ``constants``.

    The law is the law of the *mean* over seeds (the expansion is an expectation).  With
    ``statistic="geo"`` and a lognormal-model calibration (constants ``sigma2_0``, ``kappa``) the
    typical value is returned: ``s_bar * exp(-sigma^2(L)/2)``, ``eta* * exp(sigma^2(L)/4)``."""
    if statistic not in ("mean", "geo"):
        raise ValueError(f"statistic must be 'mean' or 'geo', got {statistic!r}")
    vals = {k: constants[k].value for k in ("a", "b", "e", "epsilon")}
    gamma = constants["gamma"].value
    depths = np.asarray(depths, dtype=float)
    finite_width = abs(gamma) / spec.width >= 1e-12
    if finite_width:
        vals["lambda"] = 1.0 + gamma / spec.width
    s_bar_fn, eta_fn, slope_fn = _law_predictors(finite_width)
    s_bar, eta, slope = s_bar_fn(depths, **vals), eta_fn(depths, C=C, **vals), slope_fn(depths, **vals)
    s_bar, eta, slope = (np.asarray(v, dtype=float) * np.ones_like(depths) for v in (s_bar, eta, slope))
    if spec.padding == "zero":
        ratio, shift_b = zero_padding_factor(spec, depths, constants)
        s_bar, eta, slope = s_bar * ratio, eta / np.sqrt(ratio), slope + shift_b
    if statistic == "geo":
        factor, shift = mean_over_typical(constants, depths)
        return s_bar / factor, eta * np.sqrt(factor), slope - shift
    return s_bar, eta, slope


def zero_padding_factor(spec: ArchSpec, depths, constants: dict):
    """``(ratio, slope shift)`` at ``depths``: ``s_bar_zero / s_bar_circular`` and what it adds to
    ``d ln eta*/d ln L`` (``-(1/2) d ln ratio / d ln L``, central differences on integer depths).

    Linear and ReLU chains: the exact infinite-width ratio
    (:func:`amutheory.symbolic.chain.boundary.exact_ratio_and_shift`; ``constants`` are not used -- the
    ratio has none).  Other activations: the position-local boundary model
    (:func:`amutheory.symbolic.chain.boundary.boundary_ratio`) with ``constants``' ``a, b, e, epsilon``."""
    from amutheory.symbolic.chain.boundary import boundary_ratio, exact_ratio_and_shift
    from amutheory.symbolic.chain.kernel_law import boundary_law_method

    depths = np.asarray(depths, dtype=float)
    if np.any(depths != np.round(depths)):
        raise ValueError("zero padding: depths must be integers (the boundary factor is a finite sum)")
    if boundary_law_method(spec) is not None:
        input_var = constants["input_var"].value if "input_var" in constants else 1.0
        got = exact_ratio_and_shift(spec, [int(d) for d in depths], input_var)
        return got["ratio"], got["slope_shift"]
    vals = [constants[k].value for k in ("a", "b", "e", "epsilon")]
    ints = [int(d) for d in depths]
    grid = sorted(set(ints).union(*integer_neighbours(ints)))
    table = dict(zip(grid, boundary_ratio(*vals, spec.spatial, spec.kernel, grid, spec.dim)))
    return np.array([table[d] for d in ints]), central_eta_slope(table, ints)


def _check_law(spec: ArchSpec, law) -> None:
    """``law`` must be one the family has: ``ValueError`` naming it otherwise."""
    allowed = {"transformer": TRANSFORMER_LAWS, "resnet": RESNET_LAW_CHOICES}.get(spec.family, ("coherent",))
    if law not in allowed:
        raise ValueError(f"law: family {spec.family!r} has the laws {', '.join(allowed)}; got {law!r}")


def predict(spec: ArchSpec, depths, constants="calibrate", calibration_depths=DEFAULT_CALIBRATION_DEPTHS,
            calibration_seeds=32, statistic: str = "mean", protocol: ProbeProtocol = ProbeProtocol(),
            C: float = 1.0, progress=None, calibration_measurement: Measurement | None = None,
            law: str = "coherent") -> Prediction:
    """Predict ``eta*(L)`` of ``spec`` at ``depths``.

    ``constants``: ``"calibrate"`` (measure nets at ``calibration_depths`` and fit ``a, b, e,
    gamma``; the default), ``"derive"`` (linear and ReLU conv chains, either padding: the exact
    infinite-width law of the mean, nothing fitted; :func:`derived_mean`; residual nets: the exact
    law that covers them, :func:`exact_resnet_law`), ``"mlp-limit"`` (derived constants only, ``s`` in units of ``a``), or
    a :class:`~amutheory.calibrate.Calibration`.  ``statistic`` picks what is predicted: the
    arithmetic mean over seeds (``mean``, the expectation) or the typical value (``geo``).
    ``law`` picks the transformer law (:data:`TRANSFORMER_LAWS`) or the residual-net law
    (:data:`RESNET_LAW_CHOICES`; ``"selected"`` calibrates both residual laws on the same nets and
    keeps the one :func:`pick_resnet_law` picks, recorded in ``Prediction.selection``); conv chains
    have one (``"coherent"``).
    ``progress``: called as ``progress(i, total, depth)`` after each measured depth and, for the
    kernel law's input average, as ``progress(line)`` with one line of text."""
    _check_spec(spec)
    _check_law(spec, law)
    depths = check_depths(depths)
    C = _check_C(C)
    if statistic not in ("mean", "geo"):
        raise ValueError(f"statistic must be 'mean' or 'geo', got {statistic!r}")
    if spec.family == "resnet":
        return _predict_resnet(spec, depths, constants, calibration_depths, calibration_seeds, statistic,
                               protocol, C, progress, calibration_measurement, law)
    if spec.family == "transformer":
        return _predict_transformer(spec, depths, constants, calibration_depths, calibration_seeds, statistic,
                                    protocol, C, progress, calibration_measurement, law)
    notes, calib = [], None
    if isinstance(constants, Calibration):
        calib = constants
    elif constants == "calibrate":
        # zero padding: a, b, e are those of the same geometry with circular padding; the boundary
        # ratio (amutheory.symbolic.chain.boundary.exact_ratio_and_shift) carries them over, so zero-padded nets stay
        # held out
        cal_spec = spec.with_(padding="circular")
        if spec.padding == "zero":
            notes.append("zero padding: constants calibrated on circular-padding nets of the same geometry; "
                         "the zero/circular ratio is derived (exact infinite-width law for linear and ReLU "
                         "chains; the position-local model for other activations)")
        if calibration_measurement is None:
            cal_depths = check_depths(calibration_depths)
            calibration_measurement = measure(cal_spec, cal_depths, calibration_seeds, protocol, C, progress)
        elif calibration_measurement.spec.padding != "circular":
            raise ValueError("calibration_measurement must be of circular-padding nets (the constants of the "
                             f"law), got padding {calibration_measurement.spec.padding!r}")
        calib = calibrate(calibration_measurement.profiles,
                          derived_constants(spec, protocol.input_var)["epsilon"].value,
                          spec.width, statistic)
    elif constants == "derive":
        return _predict_spectral(spec, depths, statistic, protocol, C, calibration_depths, calibration_seeds,
                                 progress, calibration_measurement)
    elif constants == "mlp-limit":
        notes.append("constants from the MLP-limit derivation only: s and eta* are in units of a "
                     "(absolute scale not predicted); conv chains deviate from this limit")
    else:
        raise ValueError(f"constants must be 'calibrate', 'derive', 'mlp-limit' or a Calibration, got {constants!r}")
    if calib is not None:
        const = dict(calib.constants)
        held_in = sorted(set(depths) & set(calib.depths))
        if held_in:
            notes.append(f"depths {held_in} were used for calibration: not an independent check there")
    else:
        const = mlp_limit_constants(spec, protocol.input_var)
    derived = derived_constants(spec, protocol.input_var)
    for k in ("c", "chi", "v_mlp", "kappa_fwd"):
        const.setdefault(k, derived[k])
    const["C"] = Constant("C", C, "convention", note="target one-step second moment")
    s_bar, eta, slope = law_values(spec, depths, const, C, statistic)
    law = conv_law(spec, finite_width=abs(const["gamma"].value) > 0)
    return Prediction(spec, depths, s_bar.tolist(), eta.tolist(), slope.tolist(), const, law.name, statistic,
                      C, calib, notes)


def predicted_layer_profile(spec: ArchSpec, constants: dict, statistic: str = "mean") -> dict[str, np.ndarray]:
    """Per-layer ``s_l`` of ``spec`` and its coherent (l^2), fluctuation (l^3) and local parts,
    for the mean over seeds (the law) or the typical value (``statistic="geo"``).  Constants of
    the spectral law (they hold ``modes``) give the exact profile: the zero mode is the coherent
    and fluctuation parts, the other modes the local part."""
    if statistic not in ("mean", "geo"):
        raise ValueError(f"statistic must be 'mean' or 'geo', got {statistic!r}")
    layers = np.arange(1, spec.depth + 1)
    v = {k: constants[k].value for k in ("a", "b", "e", "epsilon", "gamma")}
    scale = 1.0 if statistic == "mean" else 1.0 / float(mean_over_typical(constants, [spec.depth])[0][0])
    if "modes" in constants:
        from amutheory.symbolic.chain.spectral import spectral_layer_moments

        v["e"] = 0.0  # the zero mode's cubic below; the other modes are the exact remainder
        total = scale * spectral_layer_moments(spec, layers, constants["input_var"].value)
    else:
        total = scale * layer_prediction(layers, v["a"], v["b"], v["e"], v["epsilon"], v["gamma"], spec.width)
    coherent = scale * layer_prediction(layers, v["a"], 0.0, 0.0, v["epsilon"], v["gamma"], spec.width)
    fluct = scale * layer_prediction(layers, 0.0, v["b"], 0.0, v["epsilon"], v["gamma"], spec.width)
    return {"layer": layers, "total": total, "coherent": coherent, "fluctuation": fluct,
            "local": total - coherent - fluct}


def derived_mean(spec: ArchSpec, depths: list, input_var: float, progress=None) -> tuple:
    """``(s_bar, local slope, constants, law name, note)`` of the exact infinite-width mean of a
    conv chain: the spectral law (linear, circular), the operator law (linear, zero padding) or
    the kernel law (ReLU, either padding; Monte Carlo over inputs).  ``ValueError`` naming the
    field for anything else."""
    from amutheory.symbolic.chain.kernel_law import boundary_law_method, kernel_s_bar
    from amutheory.symbolic.chain.operator_law import operator_s_bar, operator_slope
    from amutheory.symbolic.chain.spectral import spectral_applies, spectral_constants, spectral_s_bar, spectral_slope

    tail = "; a finite width adds terms of relative order l/n that are not included"
    if spectral_applies(spec):
        return (spectral_s_bar(spec, depths, input_var), spectral_slope(spec, depths, input_var),
                spectral_constants(spec, input_var), f"conv{spec.dim}d-linear-circular-spectral",
                "spectral law (exact at infinite width): nothing fitted for the mean" + tail)
    method = boundary_law_method(spec)
    if method == "operator":
        return (operator_s_bar(spec, depths, input_var), operator_slope(spec, depths, input_var), {},
                f"conv{spec.dim}d-linear-{spec.padding}-operator",
                "operator law (exact at infinite width, input average exact): nothing fitted for the mean" + tail)
    if method == "kernel":
        grid = sorted(set(depths).union(*integer_neighbours(depths)))
        got = kernel_s_bar(spec, grid, input_var, progress=progress)
        at = dict(zip(grid, got["s_bar"]))
        rel = dict(zip(grid, got["se"] / got["s_bar"]))
        s_bar = np.array([at[d] for d in depths])
        slope = central_eta_slope(at, depths)
        worst = max(rel[d] for d in depths)
        const = {"s_bar_mc_rel_se": Constant("s_bar_mc_rel_se", worst, "monte-carlo",
                                             note=f"worst relative standard error of the kernel law's input average "
                                                  f"over the depths asked, {got['draws']} input draws")}
        return (s_bar, slope, const, f"conv{spec.dim}d-relu-{spec.padding}-kernel",
                "kernel law (exact at infinite width given the input; input average by Monte Carlo, "
                f"{got['draws']} draws, relative error <= {100 * worst:.1f}%; masks averaged independently of the "
                "weights): nothing fitted for the mean" + tail + " (for ReLU they are large: measured mean/law 1.0-1.1 "
                "at L/n <= 1/16, 1.4-2.2 at L/n = 1/8)")
    if spec.activation == "relu":
        from amutheory.symbolic.chain.kernel_law import check_kernel_spec

        check_kernel_spec(spec)  # raises: the grid is too large for the kernel law
    if spec.activation not in ("linear", "relu"):
        raise ValueError(f"activation: constants='derive' has an exact law for linear and relu conv chains only, "
                         f"got {spec.activation!r}")
    raise ValueError(f"c: constants='derive' has an exact law for linear chains at the critical c = 1 only, "
                     f"got {spec.c}")


def _predict_spectral(spec, depths, statistic, protocol, C, calibration_depths, calibration_seeds, progress,
                      calibration_measurement) -> Prediction:
    """``constants="derive"``: the exact infinite-width law of the mean over seeds, nothing fitted
    (:func:`derived_mean`: the spectral, operator or kernel law).  The typical value
    (``statistic="geo"``) also needs the seed spread ``sigma^2(L)``, which is not derived: its line
    ``sigma2_0 + kappa L`` is fitted on ``calibration_measurement`` (measured at
    ``calibration_depths`` when not given) and labelled calibrated."""
    from amutheory.calibrate import _bootstrap_sd, _variance_line

    s_bar, slope, const, name, note = derived_mean(spec, depths, protocol.input_var, progress)
    const = dict(const)
    const["input_var"] = Constant("input_var", protocol.input_var, "convention", note="probe input variance")
    const["C"] = Constant("C", C, "convention", note="target one-step second moment")
    notes = [note]
    calib = None
    if statistic == "geo":
        if calibration_measurement is None:
            calibration_measurement = measure(spec, check_depths(calibration_depths), calibration_seeds, protocol, C,
                                              progress)
        profiles = calibration_measurement.profiles
        line = _variance_line(profiles)
        (se,) = _bootstrap_sd(profiles, lambda resampled: (_variance_line(resampled),), (2,), 100, 0)
        cal_depths = sorted(profiles)
        lnote = (f"Var[ln s_bar] over seeds, straight line in L, depths {cal_depths}; error = sd over 100 "
                 "seed-bootstrap refits")
        const["sigma2_0"] = Constant("sigma2_0", float(line[0]), "calibrated", float(se[0]), note=lnote)
        const["kappa"] = Constant("kappa", float(line[1]), "calibrated", float(se[1]), note=lnote)
        calib = Calibration({k: const[k] for k in ("sigma2_0", "kappa")}, cal_depths, "geo", spec.width, 0.0,
                            [f"{name}: law of the mean (derived) times exp(-sigma^2(L)/2) with sigma^2 calibrated"])
        held_in = sorted(set(depths) & set(cal_depths))
        if held_in:
            notes.append(f"depths {held_in} were used for the seed-spread line: not an independent check there")
        factor, shift = mean_over_typical(const, depths)
        s_bar, slope = s_bar / factor, slope - shift
    eta = np.sqrt(C / s_bar)
    return Prediction(spec, depths, s_bar.tolist(), eta.tolist(), slope.tolist(), const, name, statistic, C, calib,
                      notes)


# --------------------------------------------------------------------------- residual nets
RESNET_CONSTANTS = ("A", "B", "e0")
RESNET_SIGNED = ("e0",)


DENSE_SHAPE_CONSTANTS = ("rho_stream", "rho_own")
#: the limit-shape law's one constant: the amplitude of the exact infinite-width law
LIMIT_SHAPE_CONSTANTS = ("rho",)


def resnet_predictor(spec: ArchSpec, law: str = "coherent", input_var: float = 1.0, progress=None):
    """``(s_bar_fn(depths, *constants), constant names, signed names)`` of a residual law:
    ``coherent`` (:func:`amutheory.symbolic.resnet.coherent.weighted_predictor`, ``A, B, e0``) or
    ``dense-shape`` (:func:`amutheory.symbolic.resnet.dense.shape_predictor`, ``rho_stream, rho_own``) or
    ``limit-shape`` (:func:`limit_shape_predictor`, ``rho``; ``progress(line)`` after each input draw of
    its Monte Carlo)."""
    if law == "limit-shape":
        return limit_shape_predictor(spec, input_var, progress=progress), LIMIT_SHAPE_CONSTANTS, ()
    if law == "dense-shape":
        from amutheory.symbolic.resnet.dense import shape_predictor

        return shape_predictor(spec, input_var), DENSE_SHAPE_CONSTANTS, ()
    if law != "coherent":
        raise ValueError(f"law: residual nets have the laws {', '.join(RESNET_LAWS)}; got {law!r}")
    from amutheory.symbolic.resnet.coherent import weighted_predictor

    return weighted_predictor(spec, input_var), RESNET_CONSTANTS, RESNET_SIGNED


def resnet_law_name(spec: ArchSpec, law: str = "coherent") -> str:
    """The name a residual prediction carries: the coherent law's (``derive(spec).name``) or
    ``resnet-dense-shape-<branch>-<init>-<activation>`` (``resnet-limit-shape-...`` likewise)."""
    if law in ("dense-shape", "limit-shape"):
        return f"resnet-{law}-{spec.branch}-{spec.init}-{spec.activation}"
    return derive(spec).name


def resnet_law_values(spec: ArchSpec, depths, constants: dict, C: float = 1.0, statistic: str = "mean",
                      input_var: float = 1.0, law: str = "coherent"):
    """``(s_bar, eta*, local slope)`` of a residual ``spec`` at ``depths`` (K values) by ``law``
    (:data:`RESNET_LAWS`); ``input_var`` sets the mean-field stream profile (it matters for
    activations that are not homogeneous)."""
    fn, names, _ = resnet_predictor(spec, law, input_var)
    return _block_law_values(fn, [constants[k].value for k in names], depths, constants, C, statistic)


def block_law_s_bar(fn, vals, depths, constants: dict, statistic: str) -> np.ndarray:
    """``s_bar`` of a law ``fn(depths, *vals)`` defined on block counts at ``depths``; ``geo`` turns the
    law of the mean into the typical value (the lognormal model's ``exp(-sigma^2/2)``,
    :func:`mean_over_typical`).  No neighbouring depth is evaluated."""
    depths = np.asarray(depths, dtype=float)
    s_bar = np.asarray(fn(depths, *vals), float)
    return s_bar / mean_over_typical(constants, depths)[0] if statistic == "geo" else s_bar


def _block_law_values(fn, vals, depths, constants: dict, C: float, statistic: str):
    """``(s_bar, eta*, local slope)`` of a law ``fn(depths, *vals)`` defined on block counts
    (:func:`block_law_s_bar`): the local slope from the integer neighbours ``K - 1, K + 1``
    (one-sided where ``s_bar(K - 1) = 0``, e.g. K = 2 with A = e0 = 0: the first block has no update
    to read), shifted for ``geo`` by the lognormal model's spread."""
    depths = np.asarray(depths, dtype=float)
    s_bar = block_law_s_bar(fn, vals, depths, constants, statistic)
    lo = np.maximum(depths - 1, 1)
    lo = np.where(np.asarray(fn(lo, *vals), float) > 0, lo, depths)
    hi = depths + 1
    slope = eta_slope_between(fn(lo, *vals), fn(hi, *vals), lo, hi)
    if statistic == "geo":
        slope = slope - mean_over_typical(constants, depths)[1]
    return s_bar, np.sqrt(C / s_bar), slope


def block_law_log_sd(fn, names, depths, constants: dict, calib: Calibration, statistic: str):
    """sd of ``ln s_bar`` at ``depths`` over the predictions made with each seed-bootstrap refit
    of ``calib`` (:attr:`~amutheory.calibrate.Calibration.draws`; :func:`block_law_s_bar`, so only
    ``depths`` are evaluated); ``None`` with fewer than two."""
    logs = []
    for draw in calib.draws:
        const = {k: replace(c, value=draw[k]) if k in draw else c for k, c in constants.items()}
        with np.errstate(all="ignore"):
            s = block_law_s_bar(fn, [draw[k] for k in names], depths, const, statistic)
        if np.all(np.isfinite(s)) and np.all(s > 0):
            logs.append(np.log(s))
    return np.std(logs, axis=0, ddof=1).tolist() if len(logs) >= 2 else None


def _block_calibration(spec, constants, fn, names, calibration_depths, calibration_seeds, statistic, protocol, C,
                       progress, calibration_measurement, note: str, family_words: str,
                       signed: tuple = (), spread: str = "linear") -> Calibration:
    """``constants`` if a Calibration, else the lognormal-model fit of ``fn`` (a law on block
    counts) to ``calibration_measurement`` (measured here at ``calibration_depths`` when absent)."""
    from amutheory.calibrate import calibrate_law

    if isinstance(constants, Calibration):
        return constants
    if constants != "calibrate":
        raise ValueError(f"constants must be 'calibrate' or a Calibration for {family_words}, got {constants!r}")
    if calibration_measurement is None:
        calibration_measurement = measure(spec, check_depths(calibration_depths), calibration_seeds, protocol, C,
                                          progress)
    return calibrate_law(calibration_measurement.profiles, fn, names, statistic, note=note, signed=signed,
                         spread=spread)


def _predict_resnet(spec, depths, constants, calibration_depths, calibration_seeds, statistic, protocol, C,
                    progress, calibration_measurement, law_name: str = "coherent") -> Prediction:
    from amutheory.symbolic.resnet.coherent import forward_analysis

    law = derive(spec)  # raises for forward-unstable conventions: no power law to predict
    if law_name == "selected":
        return _predict_resnet_selected(spec, depths, constants, calibration_depths, calibration_seeds, statistic,
                                        protocol, C, progress, calibration_measurement)
    notes = [forward_analysis(spec, protocol.input_var)["mechanism"]]
    if isinstance(constants, str) and constants == "derive":
        if law_name != "coherent":
            raise ValueError(f"law: constants='derive' is the exact dense law itself; law={law_name!r} is "
                             "calibrated (use constants='calibrate')")
        return _predict_resnet_exact(spec, depths, statistic, protocol, C, notes, progress)
    fn, names, signed = resnet_predictor(spec, law_name, protocol.input_var, progress)
    name = resnet_law_name(spec, law_name)
    if law_name == "dense-shape":
        notes.append("dense-shape law: the stream and own parts of the exact infinite-width law of the dense "
                     "single-sample twin (kernel = spatial = batch = 1; symbolic.resnet.dense), each times a "
                     "calibrated rho: their K-dependence is derived for the dense net, the position and batch "
                     "sums are the two constants (taken the same at every block: not derived); O(1/n) left out")
    if law_name == "limit-shape":
        notes.append("limit-shape law: the exact infinite-width law of this net (every K-dependence derived, nothing "
                     "fitted in it) times one calibrated amplitude rho, the finite width's excess 1 + c/n taken "
                     "depth-independent (measured so for small ReLU conv-mlp nets up to K/n = 4; at the campaign "
                     "geometry, ReLU conv-mlp/k-all, up to K/n = 4 at n = 32 and 2 at n = 64; README); " + fn.how)
    calib = _block_calibration(spec, constants, fn, names, calibration_depths, calibration_seeds, statistic,
                               protocol, C, progress, calibration_measurement, f"resnet law {name}",
                               "residual nets", signed=signed, spread="bounded")
    missing = [k for k in names if k not in calib.constants]
    if missing:
        raise ValueError(f"constants: a Calibration for law {law_name!r} must hold {', '.join(names)}; "
                         f"missing {', '.join(missing)}")
    held_in = sorted(set(depths) & set(calib.depths))
    if held_in:
        notes.append(f"depths {held_in} were used for calibration: not an independent check there")
    const = dict(calib.constants)
    const["C"] = Constant("C", C, "convention", note="target one-step second moment")
    if law_name == "dense-shape":
        notes += _dropped_parts(fn, const, calib.depths)
    s_bar, eta, slope = resnet_law_values(spec, depths, const, C, statistic, protocol.input_var, law_name)
    log_sd = block_law_log_sd(fn, names, depths, const, calib, statistic)
    return Prediction(spec, depths, s_bar.tolist(), eta.tolist(), slope.tolist(), const, name, statistic,
                      C, calib, notes, log_sd)


def pick_resnet_law(calibrations: dict) -> tuple:
    """The residual law to trust for one net, picked from its calibration alone (before any
    held-out depth is seen): of ``{law: Calibration.to_dict() or None}`` (laws of
    :data:`RESNET_LAWS`), the one whose fit of ``ln s_bar`` at the calibration K has the lower
    residual standard error ``sqrt(RSS / dof)`` (:data:`SELECTION_CRITERION`).  Not the rms over the
    calibration depths: the coherent law fits three constants and the dense-shape law two, and an rms
    favours the law with more.  Calibration dicts written before ``residual_se_log`` existed get it
    from their rms, depths and the law's number of constants.  Returns ``(law or None, {law: se})``;
    ties go to the first law of :data:`RESNET_LAWS`; ``None`` where a law's fit has no residual
    degrees of freedom (as many calibration K as constants)."""
    from amutheory.calibrate import residual_se

    n_constants = {"coherent": len(RESNET_CONSTANTS), "dense-shape": len(DENSE_SHAPE_CONSTANTS)}
    ses = {}
    for law in RESNET_LAWS:
        cal = calibrations.get(law)
        if not cal:
            continue
        se = cal.get("residual_se_log")
        if se is None and cal.get("residual_rms_log") is not None:
            depths = len(cal.get("depths") or [])
            se = residual_se(cal["residual_rms_log"], depths, depths - n_constants[law])
        if se is None:  # a fit with no residual degrees of freedom says nothing of how well its law fits
            return None, ses
        ses[law] = float(se)
    picked = min(ses, key=lambda law: (ses[law], RESNET_LAWS.index(law))) if ses else None
    return picked, ses


def _predict_resnet_selected(spec, depths, constants, calibration_depths, calibration_seeds, statistic, protocol,
                             C, progress, calibration_measurement) -> Prediction:
    """``law="selected"``: both residual laws calibrated on the same measured nets; the prediction of
    the one :func:`pick_resnet_law` picks, with ``selection`` saying which, why, and what the other
    would have predicted.  The dense-shape law's refusal (a config it does not cover) leaves the
    coherent law, with a note."""
    if not (isinstance(constants, str) and constants == "calibrate"):
        raise ValueError("constants: law='selected' calibrates both residual laws on the same nets and keeps one; "
                         f"it takes constants='calibrate' only, got {constants!r}")
    cal_depths = check_depths(calibration_measurement.depths if calibration_measurement else calibration_depths)
    if len(set(cal_depths)) <= len(RESNET_CONSTANTS):
        raise ValueError(f"calibration_depths: law='selected' compares the laws' fits, which needs more calibration "
                         f"depths than the coherent law's {len(RESNET_CONSTANTS)} constants; got {sorted(cal_depths)}")
    if calibration_measurement is None:
        calibration_measurement = measure(spec, cal_depths, calibration_seeds, protocol, C, progress)
    preds, not_covered = {}, {}
    for law in RESNET_LAWS:
        try:
            preds[law] = _predict_resnet(spec, depths, "calibrate", calibration_depths, calibration_seeds, statistic,
                                         protocol, C, None, calibration_measurement, law)
        except ValueError as exc:
            if law == RESNET_LAWS[0]:
                raise
            not_covered[law] = str(exc)
    picked, ses = pick_resnet_law({law: p.calibration.to_dict() for law, p in preds.items()})
    pred = preds[picked]
    pred.selection = {"law": picked, "criterion": SELECTION_CRITERION, "residual_se_log": ses,
                      "not_covered": not_covered,
                      "eta_star_by_law": {law: list(p.eta_star) for law, p in preds.items()}}
    words = ", ".join(f"{law} {se:.3g}" for law, se in ses.items())
    pred.notes.append(f"law selected: {picked}, by {SELECTION_CRITERION}: {words}"
                      + "".join(f"; {law} not available ({why})" for law, why in not_covered.items()))
    return pred


def _dropped_parts(fn, const: dict, depths) -> list:
    """A note for each part of the dense-shape law that the calibration all but dropped (under 1% of
    the fit at every calibration depth ``depths``): the fit then rests on one part's K-dependence
    alone.  (A part that is large at the calibration K and small only at the depths asked, as the own
    part of a deep net, is not dropped.)"""
    rho_s, rho_o = const["rho_stream"].value, const["rho_own"].value
    stream, own = np.asarray(fn(depths, rho_s, 0.0), float), np.asarray(fn(depths, 0.0, rho_o), float)
    notes = []
    for name, part in (("stream", stream), ("own", own)):
        if np.all(part < 0.01 * (stream + own)):
            notes.append(f"dense-shape law: the calibration dropped the {name} part (under 1% of s_bar at every "
                         "calibration depth): a degenerate fit, resting on the other part's K-dependence alone")
    return notes


#: joint draws of inputs and loss directions behind the law of a linear zero-padded residual net (its
#: ratio to the circular net's exact law; :func:`amutheory.symbolic.resnet.operator.zero_padding_law`)
ZERO_PADDING_DRAWS = 32
#: joint draws of inputs and loss directions behind the law of a spatial ReLU conv-mlp residual net
#: (:func:`amutheory.symbolic.resnet.operator.point_law`; no exact control variate)
POINT_DRAWS = 32
#: joint draws of inputs and loss directions behind the limit-shape law's K-dependence (:func:`limit_shape`)
#: where the infinite-width law averages its inputs by Monte Carlo.  Few suffice: the draws are common to
#: every K, and a draw's own ``s_bar(K) / s_bar(K')`` is nearly the same for every draw (campaign geometry,
#: ReLU conv-mlp/k-all, K = 16, 64, 128: per-draw ratios with a 0.8-1.0% sd while the level varies by 35%),
#: so 8 draws fix the shape to ~0.3%; the level's larger error is the calibrated ``rho``'s to absorb
LIMIT_SHAPE_DRAWS = 8


def _monte_carlo_law(spec: ArchSpec) -> bool:
    """Whether the exact law of a (covered) residual ``spec`` averages its inputs by Monte Carlo: the
    law over the points (zero padding, or ReLU, of a spatial or batched net)."""
    dense = spec.kernel == spec.spatial == spec.batch == 1
    return not dense and (spec.padding == "zero" or spec.activation != "linear")


def limit_shape(spec: ArchSpec, depths, draws: int = LIMIT_SHAPE_DRAWS, seed: int = 0, input_var: float = 1.0,
                progress=None) -> dict:
    """The exact infinite-width law of the mean of the residual ``spec`` at each K in ``depths``, for
    its K-dependence: closed form for dense nets and linear circular nets (:func:`exact_resnet_law`);
    for the laws over the points (zero padding, spatial ReLU conv-mlp) the mean over ``draws`` joint
    draws of inputs and loss directions *common to every K*
    (:func:`amutheory.symbolic.resnet.operator.s_bar_draws`, numpy ``default_rng(seed)``).  Returns
    ``s_bar`` (array over ``depths``), ``log_shape_se`` (the standard error of ``ln s_bar(K)`` up to a
    common constant: each draw's influence centred over the K, zero where exact), ``draws`` (0 where
    exact), ``name`` and ``how``.  ``ValueError`` naming the field where no exact law covers ``spec``."""
    from amutheory.symbolic.resnet import operator as resnet_operator
    _check_spec(spec)
    ks = check_depths(depths)
    fn, name, how = exact_resnet_law(spec, monte_carlo=True)
    if not _monte_carlo_law(spec):
        s = np.asarray(fn(np.asarray(ks, float), float(input_var)), float)
        return {"s_bar": s, "log_shape_se": np.zeros(len(ks)), "draws": 0, "name": name, "how": how}
    table = resnet_operator.s_bar_draws(spec, ks, draws, seed, input_var, progress, directions=True)
    mean = table.mean(axis=0)
    influence = table / mean - 1.0  # each draw's share of ln mean(K), to first order
    centred = influence - influence.mean(axis=1, keepdims=True)
    return {"s_bar": mean, "log_shape_se": centred.std(axis=0, ddof=1) / np.sqrt(len(table)), "draws": len(table),
            "name": name, "how": _points_how(spec, draws)}


def _points_how(spec: ArchSpec, draws: int) -> str:
    """One line: what :func:`limit_shape` computes for a net whose law is over its points."""
    masks = " with its masks" if spec.activation != "linear" else ""
    return (f"of the {spec.activation} {spec.padding}-padded net over its points{masks} (symbolic.resnet.operator"
            f".s_bar_draws): the mean over {draws} joint draws of inputs and loss directions, common to every K")


def limit_shape_predictor(spec: ArchSpec, input_var: float = 1.0, draws: int = LIMIT_SHAPE_DRAWS, seed: int = 0,
                          table: dict | None = None, progress=None):
    """``s_bar(K; rho) = rho * law(K)``: the *limit-shape law* of the residual ``spec``.  ``law`` is the
    exact infinite-width law of the mean (:func:`limit_shape`), so every K-dependence is derived;
    ``rho`` is calibrated and stands for what the infinite-width law leaves out, taken not to depend on
    K: the finite width's ``1 + c/n`` (measured depth-independent for small ReLU conv-mlp nets up to
    ``K/n = 4``, ``validate/resnet_width_law.py``, and at the campaign geometry for k-all up to
    ``K/n = 4`` at ``n = 32`` and ``2`` at ``n = 64``) and, where the law is a Monte Carlo, the draws'
    error of its level.
    ``law(K)`` is computed once per K and kept (``table``: ``{K: law(K)}`` already known, e.g. computed
    by a script that saves its draws).  The function carries ``how`` (one line).  ``progress(line)``
    is called after each input draw of a Monte Carlo law.  ``ValueError`` naming the field where no
    exact law covers ``spec``."""
    _check_spec(spec)
    _, _, how = exact_resnet_law(spec, monte_carlo=True)  # raises for what no exact law covers
    if _monte_carlo_law(spec):
        how = _points_how(spec, draws)
    known = {int(k): float(v) for k, v in (table or {}).items()}
    iv = float(input_var)

    def predict(depths, rho):
        ks = np.ravel(np.asarray(depths, float))
        if np.any(ks != np.round(ks)) or np.any(ks < 1):
            raise ValueError(f"depths must be positive integers (block counts), got {depths!r}")
        missing = sorted({int(k) for k in ks} - set(known))
        if missing:
            tick = None if progress is None else (lambda done, total: progress(
                f"[limit-shape law] K = {missing[0]}..{missing[-1]} ({len(missing)} depths): input draw {done}/{total}"))
            known.update(zip(missing, map(float, limit_shape(spec, missing, draws, seed, iv, tick)["s_bar"])))
        return (rho * np.array([known[int(k)] for k in ks])).reshape(np.shape(depths))

    predict.how = how
    return predict


def exact_resnet_law(spec: ArchSpec, monte_carlo: bool = True) -> tuple:
    """``(s_bar_fn(depths, input_var), name, how)`` of the exact infinite-width law of the mean that
    covers the residual ``spec``, nothing fitted: the dense law (``kernel = spatial = batch = 1``;
    :mod:`amutheory.symbolic.resnet.dense`, and for ``preact`` with ReLU the coordinate law of
    :mod:`amutheory.symbolic.resnet.preact`) or, for linear nets with circular padding, the
    mode-by-mode law (:mod:`amutheory.symbolic.resnet.spectral`), and with zero padding the law over
    the points (:mod:`amutheory.symbolic.resnet.operator`: the circular mean times the paddings'
    ratio, Monte Carlo over :data:`ZERO_PADDING_DRAWS` input draws), and for spatial ReLU ``conv-mlp``
    nets the same law over the points with masks (plain Monte Carlo over :data:`POINT_DRAWS` joint
    draws).  ``ValueError`` naming the field where none covers it, and, with ``monte_carlo=False``,
    for the two laws whose input average is a Monte Carlo (the campaign's choice: they cost ``O(P^4)``
    per block and draw; ``validate/resnet_point_law.py`` puts them against a campaign seed by seed)."""
    from amutheory.symbolic.resnet import dense as resnet_dense
    from amutheory.symbolic.resnet import spectral as resnet_spectral
    _check_spec(spec)
    tag = f"{spec.branch}-{spec.init}-{spec.activation}"
    if spec.kernel == spec.spatial == spec.batch == 1:
        resnet_dense.layer_moments(spec.with_(depth=1))  # raises for what the dense law does not cover
        how = ("one stream coordinate with its persistent masks (symbolic.resnet.preact)"
               if spec.branch == "preact" and spec.activation != "linear" else
               "the stream Jacobian's spread (free probability; symbolic.resnet.dense)")
        return (lambda ks, iv: resnet_dense.s_bar(spec, ks, iv)), f"resnet-dense-{tag}", f"of the dense net, {how}"
    from amutheory.symbolic.resnet import operator as resnet_operator
    if spec.activation != "linear" and not (spec.activation == "relu" and spec.branch == "conv-mlp"):
        field = next(f for f in ("kernel", "spatial", "batch") if getattr(spec, f) != 1)
        why = (resnet_operator.RELU_REFUSED[spec.branch] if spec.activation == "relu" else
               f"a spatial or batched {spec.activation} net's masks have no closed-form multi-point functions")
        raise ValueError(f"{field}: the exact residual laws cover dense nets (kernel = spatial = batch = 1), "
                         f"linear nets and ReLU conv-mlp nets; got {field}={getattr(spec, field)} with "
                         f"{spec.branch}/{spec.activation} ({why}: not derived)")
    if spec.padding == "zero" or spec.activation == "relu":
        resnet_operator.draw_layer_moments(spec.with_(depth=1), np.zeros((spec.batch, spec.input_channels)
                                                                         + (spec.spatial,) * spec.dim))  # checks
        if not monte_carlo:
            raise ValueError("monte_carlo: the law over the points of this net averages its inputs by Monte Carlo "
                             "(O(P^4) per block and draw); validate/resnet_point_law.py compares it seed by seed")
        if spec.activation == "relu":
            return ((lambda ks, iv: resnet_operator.point_law(spec, ks, POINT_DRAWS, 0, iv)["mean"]),
                    f"resnet-points-{tag}", f"of the ReLU net over its points with its masks (symbolic.resnet.operator; "
                    f"the input average a Monte Carlo over {POINT_DRAWS} draws)")
        return ((lambda ks, iv: resnet_operator.zero_padding_law(spec, ks, ZERO_PADDING_DRAWS, 0, iv)["mean"]),
                f"resnet-points-{tag}", f"of the linear zero-padded net over its points (symbolic.resnet.operator; "
                f"the input average a Monte Carlo over {ZERO_PADDING_DRAWS} draws, against the circular net's exact law)")
    resnet_spectral.layer_moments(spec.with_(depth=1))  # raises for padding, shortcut, init
    return ((lambda ks, iv: resnet_spectral.s_bar(spec, ks, iv)), f"resnet-modes-{tag}",
            "of the linear circular net, mode by mode (symbolic.resnet.spectral)")


def resnet_boundary(spec: ArchSpec, depths, draws: int = ZERO_PADDING_DRAWS, seed: int = 0,
                    input_var: float = 1.0, tolerance: float = 0.05, progress=None) -> list[dict]:
    """The zero-padding boundary of a linear (or ReLU conv-mlp) residual net at each K in ``depths``, by the exact law
    over the points (:func:`amutheory.symbolic.resnet.operator.boundary_ratio`; Monte Carlo over
    ``draws`` input draws, the same for both paddings): per depth ``s_bar_ratio`` (zero / circular)
    with ``s_bar_ratio_se``, ``eta_ratio`` (its inverse square root), ``slope_shift`` (the boundary's
    shift of the local slope of eta*, from the neighbours ``K - 1, K + 1``) and ``constant_level``
    (``|slope_shift| <= tolerance``, the chains' criterion).  ``ValueError`` naming the field outside
    the law's scope."""
    from amutheory.symbolic.resnet import operator as resnet_operator
    _check_spec(spec)
    if not tolerance > 0:
        raise ValueError(f"tolerance must be > 0, got {tolerance!r}")
    ks = check_depths(depths)
    need = sorted({k for d in ks for k in (max(d - 1, 1), d, d + 1)})
    law = resnet_operator.boundary_ratio(spec, need, draws, seed, input_var, progress)
    at = {k: j for j, k in enumerate(need)}
    rows = []
    for d in ks:
        lo, hi = max(d - 1, 1), d + 1
        shift = -0.5 * np.log(law["ratio"][at[hi]] / law["ratio"][at[lo]]) / np.log(hi / lo)
        r, se = float(law["ratio"][at[d]]), float(law["se"][at[d]])
        rows.append({"depth": d, "s_bar_ratio": r, "s_bar_ratio_se": se, "eta_ratio": r**-0.5,
                     "slope_shift": float(shift), "constant_level": bool(abs(shift) <= tolerance)})
    return rows


#: joint draws of inputs and loss directions behind the typical value of a linear spatial residual net
SEED_DRAWS = 20000


def _predict_resnet_exact(spec, depths, statistic, protocol, C, notes, progress=None) -> Prediction:
    """``constants="derive"`` for residual nets: the exact infinite-width law of the mean
    (:func:`exact_resnet_law`: the dense net, with the stream Jacobian's spread, or a linear
    circular net mode by mode), nothing fitted.  The typical value (``statistic="geo"``) is the
    mean times ``exp(gap)``, ``gap = E ln s_bar - ln E s_bar`` at infinite width, nothing fitted
    either: for a dense net in closed form (:func:`amutheory.symbolic.primitives.spread.dense_spread`: the
    loss directions' chi-square and the stem's, the same at every K), for a linear spatial net by
    Monte Carlo over :data:`SEED_DRAWS` joint draws of the inputs and the loss directions, common
    to every K (:func:`amutheory.symbolic.resnet.spectral.seed_law`)."""
    from amutheory.symbolic.resnet import dense as resnet_dense
    from amutheory.symbolic.resnet import spectral as resnet_spectral
    from amutheory.symbolic.primitives import spread
    fn, name, how = exact_resnet_law(spec)
    dense = spec.kernel == spec.spatial == spec.batch == 1
    iv = protocol.input_var
    if _monte_carlo_law(spec):
        return _predict_resnet_points(spec, depths, statistic, protocol, C, notes, name, how, progress)
    const = {"C": Constant("C", C, "convention", note="target one-step second moment"),
             "G_K": Constant("G_K", spec.outputs * spec.readout_variance, "exact", expr="outputs * readout_variance",
                             note="stream gradient per coordinate at the head")}
    if dense:
        const["q0_moment"] = Constant("q0_moment", resnet_dense.stem_moment(spec), "exact", expr="1 + 2/(c_in k^d)",
                                      note="E[q_0^2]/input_var^2 of the stem's chi-square stream variance")
    else:
        const["input_var"] = Constant("input_var", iv, "convention", note="probe input variance")
    notes = notes + [f"exact infinite-width law {how}: nothing fitted; O(1/n) terms left out"]
    if statistic == "mean":
        s_bar, eta, slope = _block_law_values(lambda ks: fn(ks, iv), [], depths, const, C, "mean")
    elif dense:
        var, gap = spread.dense_spread(spec.outputs, resnet_dense.stem_fan_in(spec))
        exprs = spread.dense_spread_expressions()
        const["spread_var"] = Constant("spread_var", var, "exact", expr=str(exprs["var_log"]),
                                       note="Var[ln s_bar] over seeds: loss directions chi^2_m, stem chi^2_f "
                                            "(f = c_in)")
        const["typical_gap"] = Constant("typical_gap", gap, "exact", expr=str(exprs["gap_log"]),
                                        note="E[ln s_bar] - ln E[s_bar]: the typical value is the mean times exp(gap)")
        notes.append("typical value: the mean times exp(typical_gap), the dense net's exact seed spread at infinite "
                     "width (symbolic.primitives.spread.dense_spread); K-independent, so the slope is the mean's")
        s_bar, eta, slope = _block_law_values(lambda ks: fn(ks, iv) * np.exp(gap), [], depths, const, C, "mean")
    else:
        table = resnet_spectral.seed_table(spec, SEED_DRAWS, 0, iv)

        def typical(ks):
            laws = [resnet_spectral.seed_law(spec.with_(depth=int(k)), table, iv) for k in np.ravel(ks)]
            return np.reshape([law["mean"] * np.exp(law["gap"]) for law in laws], np.shape(ks))

        deepest = resnet_spectral.seed_law(spec.with_(depth=max(depths)), table, iv)
        mc = (f"at K = {max(depths)}; Monte Carlo over {SEED_DRAWS} joint draws of the inputs and the loss "
              "directions (symbolic.resnet.spectral.seed_law); error = its standard error")
        const["typical_gap"] = Constant("typical_gap", deepest["gap"], "monte-carlo", deepest["gap_se"],
                                        note=f"E[ln s_bar] - ln E[s_bar] {mc}")
        const["spread_var"] = Constant("spread_var", deepest["var"], "monte-carlo", deepest["var_se"],
                                       note=f"Var[ln s_bar] over seeds {mc}")
        notes.append("typical value: the mean times exp(gap(K)), the seed law of the linear spatial net at infinite "
                     "width (inputs and loss directions; the same draws at every K), nothing fitted; finite width "
                     "adds spread (measured: Var[ln s_bar] ~0.15 above it at n = 64, ~0.08 at n = 128)")
        s_bar, eta, slope = _block_law_values(typical, [], depths, const, C, "mean")
    return Prediction(spec, depths, s_bar.tolist(), eta.tolist(), slope.tolist(), const, name, statistic, C, None,
                      notes)


def _predict_resnet_points(spec, depths, statistic, protocol, C, notes, name, how, progress=None) -> Prediction:
    """``constants="derive"`` for the laws over the points, computed once at every K the local slope
    needs: a linear zero-padded residual net is the circular net's exact law times the two paddings'
    ratio over :data:`ZERO_PADDING_DRAWS` joint draws of inputs and loss directions
    (:func:`amutheory.symbolic.resnet.operator.zero_padding_law`); a ReLU conv-mlp net a plain Monte
    Carlo over :data:`POINT_DRAWS` draws (:func:`~amutheory.symbolic.resnet.operator.point_law`).  The
    typical value adds the law's gap, Monte Carlo likewise."""
    from amutheory.symbolic.resnet import operator as resnet_operator
    ks = np.asarray(depths, dtype=float)
    need = sorted({int(k) for k in np.concatenate([ks, np.maximum(ks - 1, 1), ks + 1])})
    relu = spec.activation == "relu"
    tick = None if progress is None else (lambda done, total: progress(
        f"[law over the points] input draw {done}/{total}" + ("" if relu else " (zero, then circular)")))
    if relu:
        law = resnet_operator.point_law(spec, need, POINT_DRAWS, 0, protocol.input_var, progress=tick)
    else:
        law = resnet_operator.zero_padding_law(spec, need, ZERO_PADDING_DRAWS, 0, protocol.input_var,
                                               progress=tick)
    at = {k: j for j, k in enumerate(need)}
    stat = "mean" if statistic == "mean" else "typical"
    values = law["mean"] * (1.0 if stat == "mean" else np.exp(law["gap"]))

    def fn(kk):
        return np.reshape([values[at[int(k)]] for k in np.ravel(kk)], np.shape(kk))

    deep = at[int(max(depths))]
    mc = (f"at K = {int(max(depths))}; Monte Carlo over {law['draws']} joint draws of the inputs and the loss "
          + ("directions (symbolic.resnet.operator.point_law)" if relu else
             "directions, both paddings on the same draws (symbolic.resnet.operator.zero_padding_law)")
          + "; error = its standard error")
    const = {"C": Constant("C", C, "convention", note="target one-step second moment"),
             "input_var": Constant("input_var", protocol.input_var, "convention", note="probe input variance")}
    if relu:
        const["s_bar_mean"] = Constant("s_bar_mean", float(law["mean"][deep]), "monte-carlo",
                                       float(law["mean_se"][deep]), note=f"E[s_bar] {mc}")
    else:
        const["boundary_ratio"] = Constant("boundary_ratio", float(law["ratio"][deep]), "monte-carlo",
                                           float(law["ratio_se"][deep]),
                                           note=f"E[s_bar] zero / circular {mc}; the circular mean is exact (mode law)")
    notes = notes + [f"exact infinite-width law {how}: nothing fitted; O(1/n) terms left out"]
    if stat == "typical":
        const["typical_gap"] = Constant("typical_gap", float(law["gap"][deep]), "monte-carlo",
                                        float(law["gap_se"][deep]), note=f"E[ln s_bar] - ln E[s_bar] {mc}")
        notes.append("typical value: the mean times exp(gap(K)), gap over the same draws" +
                     ("" if relu else " (the circular seed law's plus the paddings' difference)") + "; nothing fitted")
    s_bar, eta, slope = _block_law_values(lambda kk: fn(kk), [], depths, const, C, "mean")
    return Prediction(spec, depths, s_bar.tolist(), eta.tolist(), slope.tolist(), const, name, statistic, C, None,
                      notes)


# --------------------------------------------------------------------------- transformers
def transformer_predictor(spec: ArchSpec, law: str = "coherent"):
    """``(s_bar_fn(depths, *constants), constant names)`` of a transformer law (lambdified)."""
    from amutheory.symbolic.resnet.coherent import law_predictor

    derived = derive(spec, law=law)
    if law == "coherent":
        return law_predictor("conv-mlp", spec.init), RESNET_CONSTANTS
    fn = derived.predictor("s_bar")
    names = tuple(fn.constants)
    return (lambda depths, *vals: fn(depths, **dict(zip(names, vals)))), names


def transformer_law_values(spec: ArchSpec, depths, constants: dict, C: float = 1.0, statistic: str = "mean",
                           law: str = "coherent"):
    """``(s_bar, eta*, local slope)`` of a transformer law at ``depths`` (K values)."""
    fn, names = transformer_predictor(spec, law)
    return _block_law_values(fn, [constants[k].value for k in names], depths, constants, C, statistic)


def _predict_transformer(spec, depths, constants, calibration_depths, calibration_seeds, statistic, protocol, C,
                         progress, calibration_measurement, law) -> Prediction:
    derived = derive(spec, law=law)  # raises for init none with the coherent law
    fn, names = transformer_predictor(spec, law)
    calib = _block_calibration(spec, constants, fn, names, calibration_depths, calibration_seeds, statistic,
                               protocol, C, progress, calibration_measurement, f"transformer law {derived.name}",
                               "transformers")
    notes = [f"law {derived.name}: eta* ~ K^({derived.exponent})"]
    held_in = sorted(set(depths) & set(calib.depths))
    if held_in:
        notes.append(f"depths {held_in} were used for calibration: not an independent check there")
    const = dict(calib.constants)
    const["C"] = Constant("C", C, "convention", note="target one-step second moment")
    s_bar, eta, slope = transformer_law_values(spec, depths, const, C, statistic, law)
    log_sd = block_law_log_sd(fn, names, depths, const, calib, statistic)
    return Prediction(spec, depths, s_bar.tolist(), eta.tolist(), slope.tolist(), const, derived.name, statistic,
                      C, calib, notes, log_sd)
