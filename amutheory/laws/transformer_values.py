"""The numbers of the pre-LN Transformer laws (coherent, effective depth), calibrated on block counts."""

from __future__ import annotations

from amutheory.laws.blocks import (_block_calibration, _block_law_values, block_law_log_sd, held_in_notes,
                                   target_constant)
from amutheory.laws.resnet_values import RESNET_CONSTANTS
# TRANSFORMER_LAWS: the Transformer laws by their older names: the coherent order, or the chain law in
# the effective depth
from amutheory.names import TRANSFORMER_LAWS
from amutheory.spec import ArchSpec


def transformer_derivation(spec: ArchSpec, law: str = "coherent"):
    """The symbolic law ``law`` of the Transformer ``spec`` (:data:`TRANSFORMER_LAWS`; ``ValueError``
    for another name, and for ``init="none"`` with the coherent law)."""
    from amutheory.symbolic.transformer.coherent import effective_depth_law, transformer_law

    if law not in TRANSFORMER_LAWS:
        raise ValueError(f"law: family 'transformer' has the laws {', '.join(TRANSFORMER_LAWS)}; got {law!r}")
    return effective_depth_law(spec) if law == "effective-depth" else transformer_law(spec)


def transformer_predictor(spec: ArchSpec, law: str = "coherent"):
    """``(s_bar_fn(depths, *constants), constant names)`` of a transformer law (lambdified)."""
    from amutheory.symbolic.resnet.coherent import law_predictor

    derived = transformer_derivation(spec, law)
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


def transformer_values(spec, depths, law, calibration, calibration_depths, calibration_seeds, statistic, protocol, C,
                       progress) -> dict:
    """The values of the Transformer law ``law`` calibrated on ``calibration`` (a Measurement, measured
    here when ``None``, or a fitted Calibration): ``s_bar`` and ``local_slope`` of the mean, ``log_sd``
    the refits' sd of ``ln s_bar`` (of ``statistic``)."""
    from amutheory.calibrate import Calibration

    derived = transformer_derivation(spec, law)  # raises for init none with the coherent law
    fn, names = transformer_predictor(spec, law)
    fitted = calibration if isinstance(calibration, Calibration) else "calibrate"
    measured = None if isinstance(calibration, Calibration) else calibration
    calib = _block_calibration(spec, fitted, fn, names, calibration_depths, calibration_seeds, statistic,
                               protocol, C, progress, measured, f"transformer law {derived.name}", "transformers")
    notes = [f"law {derived.name}: eta* ~ K^({derived.exponent})"]
    notes += held_in_notes(depths, calib.depths)
    const = dict(calib.constants)
    const["C"] = target_constant(C)
    s_bar, _, slope = transformer_law_values(spec, depths, const, C, "mean", law)
    log_sd = block_law_log_sd(fn, names, depths, const, calib, statistic)
    return {"s_bar": s_bar, "local_slope": slope, "constants": const, "label": derived.name, "notes": notes,
            "calibration": calib, "log_sd": log_sd}
