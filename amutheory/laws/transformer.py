"""The laws of pre-LN Transformers: the coherent law and the chain law in the effective depth
``2K + 2`` (the second paper's claim), both calibrated."""

from __future__ import annotations

from amutheory.laws.contract import Coverage, ProbeCalibratedLaw


class _TransformerLaw(ProbeCalibratedLaw):
    family = "transformer"
    source = "amutheory.symbolic.transformer.coherent"

    def _covers(self, spec):
        from amutheory.api.derivation import derive

        derive(spec, law=self.legacy[1])
        return Coverage(True, "a pre-LN Transformer (constants calibrated)")


class TransformerCoherent(_TransformerLaw):
    name = "transformer-coherent"
    summary = "the coherent leading order of the blocks, constants calibrated"
    leaves_out = "nothing at the calibration K; its extrapolation error grows with the distance to them"
    legacy = ("calibrate", "coherent")


class TransformerEffectiveDepth(_TransformerLaw):
    name = "transformer-effective-depth"
    summary = "the conv-chain law in the effective depth 2K + 2 (the claim under test), constants calibrated"
    leaves_out = "the difference between a block and two chain layers"
    legacy = ("calibrate", "effective-depth")
    default_candidate = False
    not_default_because = "it is the claim under test, not a derived law of the Transformer"


LAWS = (TransformerCoherent(), TransformerEffectiveDepth())
