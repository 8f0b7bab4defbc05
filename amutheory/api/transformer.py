"""Predictions for pre-LN Transformers by the coherent or the effective-depth law (calibrated)."""

from __future__ import annotations

from amutheory.api.derivation import derive
from amutheory.api.prediction import (Prediction, _block_calibration, _block_law_values, block_law_log_sd,
                                     held_in_notes, target_constant)
from amutheory.api.resnet import RESNET_CONSTANTS
from amutheory.spec import ArchSpec


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
    notes += held_in_notes(depths, calib.depths)
    const = dict(calib.constants)
    const["C"] = target_constant(C)
    s_bar, eta, slope = transformer_law_values(spec, depths, const, C, statistic, law)
    log_sd = block_law_log_sd(fn, names, depths, const, calib, statistic)
    return Prediction(spec, depths, s_bar.tolist(), eta.tolist(), slope.tolist(), const, derived.name, statistic,
                      C, calib, notes, log_sd)
