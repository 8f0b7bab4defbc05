"""What the laws share: the constants every prediction carries (``C``, the input variance), the
held-in note, the lognormal model's mean-over-typical factor, and the values, errors and calibration
of a law defined on block counts (residual nets, Transformers)."""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np

from amutheory.calibrate import Calibration
from amutheory.checks import check_depths
from amutheory.constants import Constant
from amutheory.measure.measurement import measure
from amutheory.stats import eta_slope_between


@functools.lru_cache(maxsize=None)
def _lognormal_fns():
    """Lambdified mean-over-typical factor and its local-slope shift (derived in SymPy)."""
    from amutheory.symbolic.cache import lambdified
    from amutheory.symbolic.primitives.expansion import lognormal_mean_factor, lognormal_slope_shift
    from amutheory.symbolic.primitives.symbols import L, kappa, p, sigma2_0

    args = (L, sigma2_0, kappa, p)
    return (lambdified(args, lognormal_mean_factor(), "numpy"), lambdified(args, lognormal_slope_shift(), "numpy"))


def target_constant(C: float) -> Constant:
    """``C``, the target one-step second moment (a convention): every prediction carries it."""
    return Constant("C", C, "convention", note="target one-step second moment")


def input_var_constant(input_var: float) -> Constant:
    """The probe's input variance (a convention), for the laws whose values depend on it."""
    return Constant("input_var", input_var, "convention", note="probe input variance")


def held_in_notes(depths, calibration_depths, what: str = "calibration") -> list[str]:
    """A note naming the predicted depths that were also used for ``what`` (no independent check there)."""
    held_in = sorted(set(depths) & set(calibration_depths))
    return [f"depths {held_in} were used for {what}: not an independent check there"] if held_in else []


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


def statistic_values(values, statistic: str):
    """``(s_bar, local slope)`` of a law's :class:`~amutheory.laws.LawValues` for ``statistic``: the
    mean as the law gives it, or the typical value (``geo``): the mean times ``exp(log_gap)`` where the
    law gives its own seed spread, else the lognormal model's factor of its constants' spread line
    (:func:`mean_over_typical`; ``(1, 0)`` without one).  The one conversion from the law of the mean to
    the typical value (``predict``'s; a law that picks between laws reads it too)."""
    s_bar = np.asarray(values.s_bar, float)
    slope = None if values.local_slope is None else np.asarray(values.local_slope, float)
    if statistic == "mean":
        return s_bar, slope
    if values.log_gap is not None:
        shift = 0.0 if values.log_gap_slope is None else np.asarray(values.log_gap_slope, float)
        return s_bar * np.exp(np.asarray(values.log_gap, float)), None if slope is None else slope + shift
    factor, shift = mean_over_typical(values.constants, values.depths)
    return s_bar / factor, None if slope is None else slope - shift
