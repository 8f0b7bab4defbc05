"""``predict``: choose a law (the best covering law within the budget, or the one the caller names),
call that law's ``evaluate`` once, and build one :class:`Prediction` from its values."""

from __future__ import annotations

import inspect

from dataclasses import replace

import numpy as np

from amutheory.api.prediction import Prediction
from amutheory.calibrate import Calibration
from amutheory.checks import DEFAULT_CALIBRATION_DEPTHS, _check_C, _check_spec, check_depths
from amutheory.constants import Constant
from amutheory.laws import DEFAULT_BUDGET_S, LawValues, best_law, call_evaluate, get_law, resolve_law
from amutheory.laws.contract import call_law
from amutheory.laws.blocks import held_in_notes, statistic_values, target_constant
from amutheory.laws.resolve import AUTO, CONSTANTS_CHOICES
from amutheory.measure.measurement import Measurement, measure
from amutheory.spec import ArchSpec, ProbeProtocol

__all__ = ["AUTO", "CONSTANTS_CHOICES", "predict", "predict_with", "prediction_of"]


def predict(spec: ArchSpec, depths, constants="auto", calibration_depths=DEFAULT_CALIBRATION_DEPTHS,
            calibration_seeds=32, statistic: str = "mean", protocol: ProbeProtocol = ProbeProtocol(),
            C: float = 1.0, progress=None, calibration_measurement: Measurement | None = None,
            law: str = "auto", budget_s: float | None = None, draws: int | None = None) -> Prediction:
    """Predict ``eta*(L)`` of ``spec`` at ``depths``.

    By default (``law="auto"``, ``constants="auto"``) the most exact registered law that covers
    ``spec`` within ``budget_s`` seconds of estimated cost (default
    :data:`amutheory.laws.DEFAULT_BUDGET_S`) is used: an exact law where one covers the net, then a
    Monte Carlo law, then a calibrated one; ``Prediction.law_choice`` says which, why, and what it
    passed over.  ``law`` may instead name a registered law (``amutheory.laws.REGISTRY``, e.g.
    ``"chain-kernel"``, a law added with :func:`amutheory.laws.register` included).  The older
    ``law`` names (:data:`amutheory.api.LAWS`) and ``constants`` values (``"calibrate"``,
    ``"derive"``, ``"mlp-limit"``, a :class:`~amutheory.calibrate.Calibration`) keep working: one
    table, :func:`amutheory.laws.resolve_law`, maps them to a registered law.

    The chosen law's ``evaluate`` is called once, with the options its signature takes
    (:func:`amutheory.laws.call_evaluate`); ``calibration_measurement`` (or the Calibration given as
    ``constants``) is its ``calibration``.  ``statistic`` picks what is predicted: the arithmetic mean
    over seeds (``mean``: the law's values) or the typical value (``geo``), converted here from the
    law's seed spread (:func:`prediction_of`).  ``progress``: called as ``progress(i, total, depth)``
    after each measured depth and as ``progress(line)`` with one line of text by the Monte Carlo laws.

    ``draws``: a Monte Carlo law's draws (``None``: its own count, or, for the default's choice, the draws its
    cost model fits into ``budget_s`` where the full count does not -- no fewer than
    :data:`amutheory.laws.costs.DRAWS_FLOOR`; the law reports its Monte Carlo error either way).  A law without
    draws ignores it."""
    from amutheory.laws.chain_finite import check_draws

    _check_spec(spec)
    depths = check_depths(depths)
    draws = asked_draws = check_draws(draws)
    budget_s = DEFAULT_BUDGET_S if budget_s is None else budget_s
    name = resolve_law(spec.family, law, constants, spec)
    choice = None
    if name is None:
        cal_depths = calibration_measurement.depths if calibration_measurement else calibration_depths
        choice = best_law(spec, depths, budget_s, calibration_depths=tuple(check_depths(cal_depths)),
                          calibration_seeds=calibration_seeds, draws=draws)
        chosen = choice.law
        draws = choice.draws if draws is None else draws
    else:
        chosen = get_law(name)
        coverage = call_law(chosen, "covers", spec)
        if not coverage:
            raise ValueError(f"law: {name} does not cover this net ({coverage.reason})")
    C = _check_C(C)
    if statistic not in ("mean", "geo"):
        raise ValueError(f"statistic must be 'mean' or 'geo', got {statistic!r}")
    calibration = constants if isinstance(constants, Calibration) else calibration_measurement
    values = call_evaluate(chosen, spec, depths, protocol, calibration, progress, statistic=statistic, C=C,
                           calibration_depths=calibration_depths, calibration_seeds=calibration_seeds,
                           **({} if draws is None else {"draws": draws}))
    pred = prediction_of(values, spec, depths, statistic, C, protocol, calibration_depths, calibration_seeds,
                         progress, calibration_measurement)
    pred.law_registry = chosen.name
    if asked_draws is not None and "draws" not in inspect.signature(chosen.evaluate).parameters:
        pred.notes.append(f"draws={asked_draws} not used: {chosen.name} takes no Monte Carlo draws")
    if calibration_measurement is not None and chosen.exactness != "calibrated" and statistic == "mean":
        pred.notes.append(f"calibration_measurement not used: {chosen.name} ({chosen.exactness}) fits nothing to "
                          "probes; constants='calibrate' asks for the calibrated law")
    if choice is not None:
        pred.law_choice = choice.to_dict()
        pred.notes.insert(0, f"law chosen: {choice.reason}")
    return pred


def prediction_of(values: LawValues, spec: ArchSpec, depths, statistic: str = "mean", C: float = 1.0,
                  protocol: ProbeProtocol = ProbeProtocol(), calibration_depths=DEFAULT_CALIBRATION_DEPTHS,
                  calibration_seeds=32, progress=None, calibration_measurement: Measurement | None = None
                  ) -> Prediction:
    """The :class:`Prediction` of one law's values: ``eta* = sqrt(C / s_bar)``, the local slope (the
    law's, else a secant through the depths asked), the typical value for ``statistic="geo"`` (the
    law's own seed spread, :attr:`LawValues.log_gap`; else the lognormal factor of its constants'
    spread line; a law with neither gets that line fitted on ``calibration_measurement``, measured at
    ``calibration_depths`` when absent), ``s_bar_log_sd`` from a calibrated law's ``s_bar_se``."""
    const, notes, calib = dict(values.constants), list(values.notes), values.calibration
    label = values.label or values.law
    if "C" not in const:
        const["C"] = target_constant(C)
    slope = values.local_slope
    if slope is None:
        slope = _secant_slope(values.depths, values.s_bar)
        notes.append("local slope: secant of ln eta* through the depths asked (the law gives none)")
    if statistic == "geo" and values.log_gap is None and "kappa" not in const:
        line, calib = _spread_line(spec, label, calibration_depths, calibration_seeds, protocol, C, progress,
                                   calibration_measurement)
        const.update(line)
        notes += held_in_notes(depths, calib.depths, "the seed-spread line")
    s_bar, slope = statistic_values(replace(values, constants=const, local_slope=slope), statistic)
    eta = np.sqrt(C / s_bar)
    se = np.asarray(values.s_bar_se, float)
    log_sd = (se / np.asarray(values.s_bar, float)).tolist() if values.exactness == "calibrated" and np.any(se) \
        else None
    return Prediction(spec, list(depths), s_bar.tolist(), eta.tolist(), np.asarray(slope, float).tolist(), const,
                      label, statistic, C, calib, notes, log_sd, values.selection, law_registry=values.law)


def _secant_slope(depths, s_bar) -> np.ndarray:
    """``d ln eta*/d ln L`` read off ``s_bar`` at ``depths`` (central secants, one-sided at the ends;
    ``nan`` for a single depth)."""
    depths, s_bar = np.asarray(depths, float), np.asarray(s_bar, float)
    if len(depths) < 2:
        return np.full(len(depths), np.nan)
    return -0.5 * np.gradient(np.log(s_bar), np.log(depths))


def _spread_line(spec, label, calibration_depths, calibration_seeds, protocol, C, progress, calibration_measurement):
    """The lognormal model's seed-spread line ``sigma^2(L) = sigma2_0 + kappa L`` (constants) and its
    Calibration record, fitted on ``calibration_measurement`` (measured here when ``None``): what turns
    a law of the mean that says nothing of the seed spread into the typical value."""
    from amutheory.calibrate import _bootstrap_sd, _variance_line

    if calibration_measurement is None:
        calibration_measurement = measure(spec, check_depths(calibration_depths), calibration_seeds, protocol, C,
                                          progress)
    profiles = calibration_measurement.profiles
    line = _variance_line(profiles)
    (se,) = _bootstrap_sd(profiles, lambda resampled: (_variance_line(resampled),), (2,), 100, 0)
    cal_depths = sorted(profiles)
    lnote = (f"Var[ln s_bar] over seeds, straight line in L, depths {cal_depths}; error = sd over 100 "
             "seed-bootstrap refits")
    const = {"sigma2_0": Constant("sigma2_0", float(line[0]), "calibrated", float(se[0]), note=lnote),
             "kappa": Constant("kappa", float(line[1]), "calibrated", float(se[1]), note=lnote)}
    calib = Calibration(dict(const), cal_depths, "geo", spec.width, 0.0,
                        [f"{label}: law of the mean (derived) times exp(-sigma^2(L)/2) with sigma^2 calibrated"])
    return const, calib


def predict_with(spec: ArchSpec, depths, constants, law: str, calibration_depths=DEFAULT_CALIBRATION_DEPTHS,
                 calibration_seeds=32, statistic: str = "mean", protocol: ProbeProtocol = ProbeProtocol(),
                 C: float = 1.0, progress=None, calibration_measurement: Measurement | None = None) -> Prediction:
    """The older entry point: :func:`predict` with the older ``(constants, law)`` pair (resolved to a
    registered law by :func:`amutheory.laws.resolve_law`)."""
    return predict(spec, depths, constants, calibration_depths, calibration_seeds, statistic, protocol, C, progress,
                   calibration_measurement, law)



