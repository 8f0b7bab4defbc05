"""The conv chain: ``depth`` = L bias-free convolutions ``h_l = W_l * x_{l-1}``, ``x_l = phi(h_l)``,
global average pooling and a linear head (:class:`amutheory.measure.models.ConvChain`); its theory is
:mod:`amutheory.symbolic.chain`.  Both are registered by their layers
(:mod:`amutheory.measure.family_models`, :mod:`amutheory.symbolic.family_theory`)."""

from __future__ import annotations

from amutheory.families.base import Family

_RESNET_FIELDS = ("branch", "init", "shortcut")
_TRANSFORMER_FIELDS = ("heads", "mlp_ratio", "attn_scale")


class ConvChainFamily(Family):
    name = "conv"
    title = "conv chain"
    summary = "homogeneous conv chain: L bias-free convolutions, GAP and a linear head"
    counts_blocks = False
    plain_chain = True
    unused_fields = _RESNET_FIELDS + _TRANSFORMER_FIELDS
    model_module = "amutheory.measure.models"
    theory_module = "amutheory.symbolic.chain"
    campaign_module = "amutheory.campaign.analysis"

    def check(self, spec) -> None:
        check_kernel(spec)

    def parameter_count(self, spec) -> int:
        n, taps = spec.width, spec.kernel**spec.dim
        return spec.input_channels * n * taps + (spec.depth - 1) * n * n * taps + n * spec.outputs

    def activation_elements(self, spec) -> int:
        """Per layer the pre-activation and the activation."""
        return spec.input_channels * spec.positions + spec.depth * 2 * spec.width * spec.positions

    def hidden_fan_in(self, spec) -> float:
        return float(spec.width * spec.kernel**spec.dim)

    def chain_spec(self, spec):
        return spec

    def sweep_defaults(self) -> dict:
        """A sweep's synthetic data when the flags leave them out: 8 positions of 3 channels, 10 classes
        (small enough that a first sweep runs in seconds per cell)."""
        return {"spatial": 8, "input_channels": 3, "outputs": 10}


def check_kernel(spec) -> None:
    """An odd kernel no wider than the input (the conv families' check)."""
    if spec.kernel % 2 == 0:
        raise ValueError(f"kernel must be odd, got {spec.kernel}")
    if spec.kernel > spec.spatial:
        raise ValueError(f"kernel must be <= spatial ({spec.spatial}), got {spec.kernel}")


FAMILY = ConvChainFamily()
