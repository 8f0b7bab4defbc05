"""The residual conv net: a stem conv, ``depth`` = K residual blocks ``x <- x + branch(x)`` of type
``branch`` (``conv``, ``conv-mlp``, ``preact``) under the init convention ``init``, GAP and a linear
head (:class:`amutheory.measure.resnet.ResidualConvNet`); its theory is :mod:`amutheory.symbolic.resnet`.
Both are registered by their layers (:mod:`amutheory.measure.family_models`,
:mod:`amutheory.symbolic.family_theory`)."""

from __future__ import annotations

from amutheory.families.base import Family
from amutheory.families.conv import check_kernel

#: modules of one branch besides the skip: the branch's convolutions
_BRANCH_LAYERS = {"conv": 1, "conv-mlp": 2, "preact": 2}
#: tensors per block a sample's forward pass keeps (stream and the branch's tensors), per position and channel
_BRANCH_TENSORS = {"conv": 3, "conv-mlp": 4, "preact": 5}


def preactivations_per_block(branch: str) -> int:
    """1 (``conv``, ``conv-mlp``: the first layer's output) or 2 (``preact``: the stream too)."""
    return 2 if branch == "preact" else 1


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
        """The mean-field recursion of the stream (:func:`amutheory.symbolic.resnet.coherent.is_forward_stable`,
        registered by the symbolic layer)."""
        return bool(self.provided("forward_stable")(spec))

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
        return preactivations_per_block(spec.branch) * int(depth)

    def hidden_fan_in(self, spec) -> float:
        return float(spec.width * spec.kernel**spec.dim)

    def branch_multiplier(self, spec) -> float:
        """``alpha`` of the init convention at ``K`` blocks (:mod:`amutheory.symbolic.resnet.init`,
        registered by the symbolic layer)."""
        return float(self.provided("branch_multiplier")(spec))

    def sweep_defaults(self) -> dict:
        """A sweep's synthetic data when the flags leave them out: 8 positions of 3 channels, 10 classes
        (small enough that a first sweep runs in seconds per cell)."""
        return {"spatial": 8, "input_channels": 3, "outputs": 10}


FAMILY = ResidualFamily()
