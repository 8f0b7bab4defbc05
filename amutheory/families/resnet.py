"""The residual conv net: a stem conv, ``depth`` = K residual blocks ``x <- x + branch(x)`` of type
``branch`` (``conv``, ``conv-mlp``, ``preact``) under the init convention ``init``, GAP and a linear
head (:class:`amutheory.measure.resnet.ResidualConvNet`); its theory is :mod:`amutheory.symbolic.resnet`."""

from __future__ import annotations

from amutheory.families.base import Family
from amutheory.families.conv import check_kernel

#: modules of one branch besides the skip: the branch's convolutions
_BRANCH_LAYERS = {"conv": 1, "conv-mlp": 2, "preact": 2}
#: tensors per block a sample's forward pass keeps (stream and the branch's tensors), per position and channel
_BRANCH_TENSORS = {"conv": 3, "conv-mlp": 4, "preact": 5}


class ResidualFamily(Family):
    name = "resnet"
    title = "residual net"
    summary = "residual conv net: a stem conv, K blocks x + branch(x), GAP and a linear head"
    counts_blocks = True
    unused_fields = ("heads", "mlp_ratio", "attn_scale")
    model_module = "amutheory.measure.resnet"
    theory_module = "amutheory.symbolic.resnet"
    campaign_module = "amutheory.campaign.analysis_resnet"
    measures_stream = True

    def check(self, spec) -> None:
        check_kernel(spec)

    def forward_stable(self, spec) -> bool:
        """The mean-field recursion of the stream (:func:`amutheory.symbolic.resnet.coherent.is_forward_stable`)."""
        from amutheory.symbolic.resnet.coherent import is_forward_stable

        return bool(is_forward_stable(spec))

    def build_model(self, spec, generator=None, dtype=None, device="cpu", norm="none", dropout=0.0):
        import torch

        from amutheory.measure.resnet import ResidualConvNet

        return ResidualConvNet(spec, generator=generator, dtype=dtype or torch.float64, norm=norm,
                               dropout=dropout).to(device)

    def parameter_count(self, spec) -> int:
        n, taps = spec.width, spec.kernel**spec.dim
        second = {"conv": 0, "conv-mlp": n * n, "preact": n * n * taps}[spec.branch]
        skip = n * n if spec.shortcut == "projection" else 0
        return spec.input_channels * n * taps + spec.depth * (n * n * taps + second + skip) + n * spec.outputs

    def modules_per_block(self, spec) -> int:
        """The branch's convolutions, one more for a projection skip."""
        return _BRANCH_LAYERS[spec.branch] + (1 if spec.shortcut == "projection" else 0)

    def activation_elements(self, spec) -> int:
        """Per block the stream, the branch's tensors and the skip."""
        per_block = spec.width * spec.positions * (_BRANCH_TENSORS[spec.branch]
                                                   + (1 if spec.shortcut == "projection" else 0))
        return spec.input_channels * spec.positions + spec.depth * per_block

    def probe_layers(self, spec, depth: int) -> int:
        from amutheory.symbolic.resnet.coherent import preactivations_per_block

        return preactivations_per_block(spec.branch) * int(depth)

    def hidden_fan_in(self, spec) -> float:
        return float(spec.width * spec.kernel**spec.dim)

    def branch_multiplier(self, spec) -> float:
        from amutheory.symbolic.resnet.init import branch_multiplier, numeric

        return float(numeric(branch_multiplier(spec.init), spec.depth))

    def derive(self, spec, finite_width: bool = False, law: str = "coherent"):
        from amutheory.symbolic.resnet.coherent import resnet_law

        if finite_width:
            raise ValueError("finite_width is available for the conv family only")
        return resnet_law(spec)

    def sweep_defaults(self) -> dict:
        """A sweep's synthetic data when the flags leave them out: 8 positions of 3 channels, 10 classes
        (small enough that a first sweep runs in seconds per cell)."""
        return {"spatial": 8, "input_channels": 3, "outputs": 10}


FAMILY = ResidualFamily()
