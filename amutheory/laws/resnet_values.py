"""The numbers of the calibrated residual laws (coherent, dense-shape, limit-shape) and the
criterion that selects between the first two."""

from __future__ import annotations

import numpy as np

from amutheory.laws.blocks import (_block_calibration, _block_law_values, block_law_log_sd, held_in_notes,
                                   target_constant)
from amutheory.laws.resnet_exact import limit_shape_predictor
# RESNET_LAWS: residual-net laws of :func:`predict`: the coherent order (``A, B, e0`` calibrated) or the
# dense shape (the exact dense law's stream and own parts, each times a calibrated ``rho``,
# :func:`amutheory.symbolic.resnet.dense.shape_predictor`)
from amutheory.names import RESNET_LAWS
from amutheory.spec import ArchSpec

#: the criterion :func:`pick_resnet_law` applies (the words every selection record carries)
SELECTION_CRITERION = ("the lower residual standard error of the calibration's fit of ln s_bar "
                       "(sqrt(RSS / dof); made before any held-out depth is seen)")
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
    from amutheory.symbolic.resnet.coherent import resnet_law

    return resnet_law(spec).name


def resnet_law_values(spec: ArchSpec, depths, constants: dict, C: float = 1.0, statistic: str = "mean",
                      input_var: float = 1.0, law: str = "coherent"):
    """``(s_bar, eta*, local slope)`` of a residual ``spec`` at ``depths`` (K values) by ``law``
    (:data:`RESNET_LAWS`); ``input_var`` sets the mean-field stream profile (it matters for
    activations that are not homogeneous)."""
    fn, names, _ = resnet_predictor(spec, law, input_var)
    return _block_law_values(fn, [constants[k].value for k in names], depths, constants, C, statistic)


def calibrated_values(spec, depths, law_name, calibration, calibration_depths, calibration_seeds, statistic, protocol,
                      C, progress) -> dict:
    """The values of the calibrated residual law ``law_name`` (``coherent``, ``dense-shape`` or
    ``limit-shape``): ``calibration`` a fitted Calibration, or the Measurement to fit on (measured here
    at ``calibration_depths`` when ``None``).  ``s_bar`` and ``local_slope`` of the mean; ``log_sd``
    the sd of ``ln s_bar`` (of ``statistic``) over the calibration's seed-bootstrap refits."""
    from amutheory.calibrate import Calibration
    from amutheory.symbolic.resnet.coherent import forward_analysis, resnet_law

    resnet_law(spec)  # raises for forward-unstable conventions: no power law to predict
    notes = [forward_analysis(spec, protocol.input_var)["mechanism"]]
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
                     "depth-independent (how far that holds is measured by validate/studies/resnet_width_law.py and "
                     "resnet_limit_shape.py, reported in docs/findings/residual_networks.md); " + fn.how)
    fitted = calibration if isinstance(calibration, Calibration) else "calibrate"
    measured = None if isinstance(calibration, Calibration) else calibration
    calib = _block_calibration(spec, fitted, fn, names, calibration_depths, calibration_seeds, statistic,
                               protocol, C, progress, measured, f"resnet law {name}",
                               "residual nets", signed=signed, spread="bounded")
    missing = [k for k in names if k not in calib.constants]
    if missing:
        raise ValueError(f"constants: a Calibration for law {law_name!r} must hold {', '.join(names)}; "
                         f"missing {', '.join(missing)}")
    notes += held_in_notes(depths, calib.depths)
    const = dict(calib.constants)
    const["C"] = target_constant(C)
    if law_name == "dense-shape":
        notes += _dropped_parts(fn, const, calib.depths)
    s_bar, _, slope = resnet_law_values(spec, depths, const, C, "mean", protocol.input_var, law_name)
    log_sd = block_law_log_sd(fn, names, depths, const, calib, statistic)
    return {"s_bar": s_bar, "local_slope": slope, "constants": const, "label": name, "notes": notes,
            "calibration": calib, "log_sd": log_sd}


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
