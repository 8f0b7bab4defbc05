"""The :class:`Prediction` record and what every family's prediction shares: the lognormal
model's mean-over-typical factor and the values, errors and calibration of a law on block counts."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace

import numpy as np

from amutheory.constants import Constant

from amutheory.api.checks import check_depths
from amutheory.api.measurement import measure
from amutheory.calibrate import Calibration
from amutheory.spec import ArchSpec
from amutheory.stats import eta_slope_between


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
    #: the default's choice of law (:meth:`amutheory.laws.Choice.to_dict`); ``None`` where the caller named it
    law_choice: dict | None = None

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
        if self.law_choice is not None:
            d["law_registry"] = self.law_choice["law"]
            d["law_reason"] = self.law_choice["reason"]
            d["law_choice"] = self.law_choice
        return d


@functools.lru_cache(maxsize=None)
def _lognormal_fns():
    """Lambdified mean-over-typical factor and its local-slope shift (derived in SymPy)."""
    import sympy as sp

    from amutheory.symbolic.primitives.expansion import lognormal_mean_factor, lognormal_slope_shift
    from amutheory.symbolic.primitives.symbols import L, kappa, p, sigma2_0

    args = (L, sigma2_0, kappa, p)
    return (sp.lambdify(args, lognormal_mean_factor(), "numpy"),
            sp.lambdify(args, lognormal_slope_shift(), "numpy"))


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
