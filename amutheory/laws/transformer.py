"""The laws of pre-LN Transformers: the coherent law and the chain law in the effective depth
``2K + 2`` (the second paper's claim), both calibrated."""

from __future__ import annotations

import numpy as np

from amutheory.checks import DEFAULT_CALIBRATION_DEPTHS
from amutheory.laws.contract import Coverage, LawValues, ProbeCalibratedLaw
from amutheory.laws.transformer_values import transformer_derivation, transformer_values
from amutheory.spec import ProbeProtocol


class _TransformerLaw(ProbeCalibratedLaw):
    family = "transformer"
    source = "amutheory.symbolic.transformer.coherent"
    #: the law's older name (:data:`~amutheory.laws.transformer_values.TRANSFORMER_LAWS`)
    shape = "coherent"

    def _covers(self, spec):
        transformer_derivation(spec, self.shape)
        return Coverage(True, "a pre-LN Transformer (constants calibrated)")

    def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None, statistic="mean",
                 C=1.0, calibration_depths=DEFAULT_CALIBRATION_DEPTHS, calibration_seeds=32):
        """The law of the mean with its constants calibrated on ``calibration`` (a Measurement, measured
        here at ``calibration_depths`` when ``None``, or a fitted Calibration)."""
        coverage = self.covers(spec)
        if not coverage:
            raise ValueError(coverage.reason)
        depths = list(depths)
        got = transformer_values(spec, depths, self.shape, calibration, calibration_depths, calibration_seeds,
                                 statistic, protocol, C, progress)
        s_bar = np.asarray(got["s_bar"], float)
        se = np.zeros_like(s_bar) if got["log_sd"] is None else s_bar * np.asarray(got["log_sd"], float)
        return LawValues(self.name, depths, s_bar, se, got["constants"], self.exactness, None, got["notes"],
                         local_slope=np.asarray(got["local_slope"], float), label=got["label"],
                         calibration=got["calibration"])


class TransformerCoherent(_TransformerLaw):
    name = "transformer-coherent"
    summary = "the coherent leading order of the blocks, constants calibrated"
    leaves_out = "nothing at the calibration K; its extrapolation error grows with the distance to them"


class TransformerEffectiveDepth(_TransformerLaw):
    name, shape = "transformer-effective-depth", "effective-depth"
    summary = "the conv-chain law in the effective depth 2K + 2 (the claim under test), constants calibrated"
    leaves_out = "the difference between a block and two chain layers"
    default_candidate = False
    not_default_because = "it is the claim under test, not a derived law of the Transformer"


LAWS = (TransformerCoherent(), TransformerEffectiveDepth())
