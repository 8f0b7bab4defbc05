"""The :class:`Prediction` record and what every family's prediction shares: the lognormal
model's mean-over-typical factor and the values, errors and calibration of a law on block counts."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from amutheory.calibrate import Calibration
from amutheory.laws.blocks import (_block_calibration, _block_law_values, _lognormal_fns, block_law_log_sd,
                                   block_law_s_bar, held_in_notes, input_var_constant, mean_over_typical,
                                   target_constant)
from amutheory.spec import ArchSpec


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
    #: the registry name of the law that made the prediction (``law`` is that law's name for this net)
    law_registry: str | None = None

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
        d["law_registry"] = self.law_registry
        if self.law_choice is not None:
            d["law_reason"] = self.law_choice["reason"]
            d["law_choice"] = self.law_choice
        return d
