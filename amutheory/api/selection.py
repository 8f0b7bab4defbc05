"""``predict``: the best law for a spec by default (:func:`amutheory.laws.best_law`), or the law the
caller names, routed to its family's prediction."""

from __future__ import annotations

from amutheory.api.chain import _predict_chain
from amutheory.api.checks import DEFAULT_CALIBRATION_DEPTHS, _check_C, _check_spec, check_depths
from amutheory.api.derivation import _check_law
from amutheory.api.measurement import Measurement
from amutheory.api.prediction import Prediction
from amutheory.api.resnet import _predict_resnet
from amutheory.api.transformer import _predict_transformer
from amutheory.spec import ArchSpec, ProbeProtocol

#: ``predict(constants=...)`` values besides a Calibration (``auto``: the law's own)
CONSTANTS_CHOICES = ("auto", "calibrate", "derive", "mlp-limit")
#: the default of ``law`` and ``constants``: the best law (:func:`amutheory.laws.best_law`)
AUTO = "auto"


def predict(spec: ArchSpec, depths, constants="auto", calibration_depths=DEFAULT_CALIBRATION_DEPTHS,
            calibration_seeds=32, statistic: str = "mean", protocol: ProbeProtocol = ProbeProtocol(),
            C: float = 1.0, progress=None, calibration_measurement: Measurement | None = None,
            law: str = "auto", budget_s: float | None = None) -> Prediction:
    """Predict ``eta*(L)`` of ``spec`` at ``depths``.

    By default (``law="auto"``, ``constants="auto"``) the most exact registered law that covers
    ``spec`` within ``budget_s`` seconds of estimated cost (default
    :data:`amutheory.laws.DEFAULT_BUDGET_S`) is used: an exact law where one covers the net, then a
    Monte Carlo law, then a calibrated one; ``Prediction.law_choice`` says which, why, and what it
    passed over.  ``law`` may instead name a registered law (``amutheory.laws.REGISTRY``, e.g.
    ``"chain-kernel"``) or one of the family's older law names (:data:`amutheory.api.LAWS`:
    ``coherent``, ``effective-depth``, ``dense-shape``, ``selected``, ``limit-shape``).

    ``constants``: ``"calibrate"`` (measure nets at ``calibration_depths`` and fit the law's
    constants), ``"derive"`` (the exact infinite-width law of the mean that covers the net, nothing
    fitted: :func:`derived_mean` for chains, :func:`exact_resnet_law` for residual nets),
    ``"mlp-limit"`` (derived constants only, ``s`` in units of ``a``), a
    :class:`~amutheory.calibrate.Calibration`, or ``"auto"`` (the chosen law's own).  Naming
    ``constants`` other than ``"auto"`` with ``law="auto"`` keeps the family's first law
    (``coherent``), as before the choice existed.  ``statistic`` picks what is predicted: the
    arithmetic mean over seeds (``mean``) or the typical value (``geo``).  ``progress``: called as
    ``progress(i, total, depth)`` after each measured depth and as ``progress(line)`` with one line
    of text by the Monte Carlo laws."""
    from amutheory.laws import DEFAULT_BUDGET_S, REGISTRY, best_law, get_law

    _check_spec(spec)
    depths = check_depths(depths)
    budget_s = DEFAULT_BUDGET_S if budget_s is None else budget_s
    choice = None
    if law == AUTO and _is_auto(constants):
        cal_depths = calibration_measurement.depths if calibration_measurement else calibration_depths
        choice = best_law(spec, depths, budget_s, calibration_depths=tuple(check_depths(cal_depths)),
                          calibration_seeds=calibration_seeds)
        constants, law = choice.law.legacy
    elif law != AUTO and not isinstance(law, str):
        raise TypeError(f"law must be a string, got {type(law).__name__}")
    elif law in REGISTRY:
        registered = get_law(law)
        coverage = registered.covers(spec)
        if not coverage:
            raise ValueError(f"law: {law} does not cover this net ({coverage.reason})")
        if not _is_auto(constants):
            raise ValueError(f"constants: law={law!r} sets its own constants ({registered.legacy[0]}); "
                             f"leave constants='auto'")
        constants, law = registered.legacy
    else:
        law = "coherent" if law == AUTO else law
        constants = "calibrate" if _is_auto(constants) else constants
    pred = predict_with(spec, depths, constants, law, calibration_depths, calibration_seeds, statistic, protocol, C,
                        progress, calibration_measurement)
    if choice is not None:
        pred.law_choice = choice.to_dict()
        pred.notes.insert(0, f"law chosen: {choice.reason}")
    return pred


def _is_auto(constants) -> bool:
    return isinstance(constants, str) and constants == AUTO


def predict_with(spec: ArchSpec, depths, constants, law: str, calibration_depths=DEFAULT_CALIBRATION_DEPTHS,
                 calibration_seeds=32, statistic: str = "mean", protocol: ProbeProtocol = ProbeProtocol(),
                 C: float = 1.0, progress=None, calibration_measurement: Measurement | None = None) -> Prediction:
    """The prediction of the family law ``law`` (:data:`amutheory.api.LAWS`) with ``constants``
    (``calibrate``, ``derive``, ``mlp-limit`` or a Calibration): what :func:`predict` runs once the
    law is chosen."""
    _check_spec(spec)
    _check_law(spec, law)
    depths = check_depths(depths)
    C = _check_C(C)
    if statistic not in ("mean", "geo"):
        raise ValueError(f"statistic must be 'mean' or 'geo', got {statistic!r}")
    args = (spec, depths, constants, calibration_depths, calibration_seeds, statistic, protocol, C, progress,
            calibration_measurement)
    if spec.family == "resnet":
        return _predict_resnet(*args, law)
    if spec.family == "transformer":
        return _predict_transformer(*args, law)
    return _predict_chain(*args)
