"""The numbers of the conv-chain laws: the closed-form law with derived or calibrated constants, the
zero-padding factor, and the exact infinite-width laws of the mean (spectral, operator, kernel)."""

from __future__ import annotations

import functools

import numpy as np

from amutheory.calibrate import Calibration, calibrate, layer_prediction
from amutheory.checks import check_depths
from amutheory.constants import Constant
from amutheory.laws.blocks import mean_over_typical
from amutheory.measure.measurement import measure
from amutheory.spec import ArchSpec
from amutheory.stats import central_eta_slope, integer_neighbours
from amutheory.symbolic.chain.conv import conv_law, derived_constants


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


TAIL = "; a finite width adds terms of relative order l/n that are not included"


def spectral_mean(spec: ArchSpec, depths: list, input_var: float) -> tuple:
    """``(s_bar, local slope, constants, name, note)`` of the spectral law (linear, circular)."""
    from amutheory.symbolic.chain.spectral import check_spectral_spec, spectral_constants, spectral_s_bar, \
        spectral_slope

    check_spectral_spec(spec)
    return (spectral_s_bar(spec, depths, input_var), spectral_slope(spec, depths, input_var),
            spectral_constants(spec, input_var), f"conv{spec.dim}d-linear-circular-spectral",
            "spectral law (exact at infinite width): nothing fitted for the mean" + TAIL)


def operator_mean(spec: ArchSpec, depths: list, input_var: float) -> tuple:
    """``(s_bar, local slope, constants, name, note)`` of the operator law (linear, zero padding)."""
    from amutheory.symbolic.chain.operator_law import check_operator_spec, operator_s_bar, operator_slope

    check_operator_spec(spec)
    return (operator_s_bar(spec, depths, input_var), operator_slope(spec, depths, input_var), {},
            f"conv{spec.dim}d-linear-{spec.padding}-operator",
            "operator law (exact at infinite width, input average exact): nothing fitted for the mean" + TAIL)


def kernel_mean(spec: ArchSpec, depths: list, input_var: float, progress=None) -> tuple:
    """``(s_bar, local slope, constants, name, note)`` of the kernel law (ReLU, either padding; Monte
    Carlo over inputs, its worst relative standard error over ``depths`` the constant ``s_bar_mc_rel_se``)."""
    from amutheory.symbolic.chain.kernel_law import check_kernel_spec, kernel_s_bar

    check_kernel_spec(spec)
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
            "weights): nothing fitted for the mean" + TAIL + " (for ReLU they grow with L/n and are large: measured by "
            "validate/studies/finite_width_mean.py, reported in docs/findings/conv_chains.md)")


def derived_mean(spec: ArchSpec, depths: list, input_var: float, progress=None) -> tuple:
    """``(s_bar, local slope, constants, law name, note)`` of the exact infinite-width mean of a
    conv chain: the spectral law (linear, circular), the operator law (linear, zero padding) or
    the kernel law (ReLU, either padding; Monte Carlo over inputs).  ``ValueError`` naming the
    field for anything else."""
    from amutheory.symbolic.chain.kernel_law import boundary_law_method
    from amutheory.symbolic.chain.spectral import spectral_applies

    if spectral_applies(spec):
        return spectral_mean(spec, depths, input_var)
    method = boundary_law_method(spec)
    if method == "operator":
        return operator_mean(spec, depths, input_var)
    if method == "kernel":
        return kernel_mean(spec, depths, input_var, progress)
    if spec.activation == "relu":
        from amutheory.symbolic.chain.kernel_law import check_kernel_spec

        check_kernel_spec(spec)  # raises: the grid is too large for the kernel law
    if spec.activation not in ("linear", "relu"):
        raise ValueError(f"activation: constants='derive' has an exact law for linear and relu conv chains only, "
                         f"got {spec.activation!r}")
    raise ValueError(f"c: constants='derive' has an exact law for linear chains at the critical c = 1 only, "
                     f"got {spec.c}")


def chain_calibration(spec, constants, calibration_depths, calibration_seeds, statistic, protocol, C, progress,
                       calibration_measurement) -> tuple:
    """``(Calibration or None, notes)`` of a conv chain: ``constants`` itself if a Calibration, the fit
    of circular-padding nets for ``"calibrate"`` (zero padding: a, b, e are those of the same geometry
    with circular padding; the boundary ratio carries them over, so zero-padded nets stay held out),
    ``None`` for ``"mlp-limit"``."""
    if isinstance(constants, Calibration):
        return constants, []
    if constants == "mlp-limit":
        return None, ["constants from the MLP-limit derivation only: s and eta* are in units of a "
                      "(absolute scale not predicted); conv chains deviate from this limit"]
    if constants != "calibrate":
        raise ValueError(f"constants must be 'calibrate', 'derive', 'mlp-limit' or a Calibration, got {constants!r}")
    notes = []
    if spec.padding == "zero":
        notes.append("zero padding: constants calibrated on circular-padding nets of the same geometry; "
                     "the zero/circular ratio is derived (exact infinite-width law for linear and ReLU "
                     "chains; the position-local model for other activations)")
    if calibration_measurement is None:
        calibration_measurement = measure(spec.with_(padding="circular"), check_depths(calibration_depths),
                                          calibration_seeds, protocol, C, progress)
    elif calibration_measurement.spec.padding != "circular":
        raise ValueError("calibration_measurement must be of circular-padding nets (the constants of the "
                         f"law), got padding {calibration_measurement.spec.padding!r}")
    calib = calibrate(calibration_measurement.profiles, derived_constants(spec, protocol.input_var)["epsilon"].value,
                      spec.width, statistic)
    return calib, notes


def chain_depth_factor(chain_r: ArchSpec, chain_t: ArchSpec, notes: list) -> float:
    """The ``am-mup`` transfer rule's depth factor ``lr_t / lr_r`` between two conv chains:
    ``sqrt(s_bar(L_r) / s_bar(L_t))`` of the derived conv-chain law with MLP-limit constants (finite-depth
    corrections included).  Registered with the families (``chain_depth_factor``): a family's
    :meth:`~amutheory.families.base.Family.am_mup_depth_factor` finds it there."""
    s_r = law_values(chain_r, [chain_r.depth], mlp_limit_constants(chain_r))[0][0]
    s_t = law_values(chain_t, [chain_t.depth], mlp_limit_constants(chain_t))[0][0]
    notes.append("am-mup: derived conv law with MLP-limit constants (finite-depth corrections included)")
    return float(np.sqrt(s_r / s_t))
