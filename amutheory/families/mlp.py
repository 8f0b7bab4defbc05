"""The plain fully connected net (the papers' muP baseline): ``depth`` = L bias-free linear layers
``h_1 = W_1 x``, ``h_l = W_l phi(h_(l-1))``, He fan-in init ``Var[W] = c / fan_in``, and a bias-free
linear readout of ``phi(h_L)`` with variance ``spec.readout_variance``
(:class:`amutheory.measure.mlp.MLP`).  ``input_channels`` is the input dimension.

At criticality it *is* the conv chain with kernel 1 on one position (a 1x1 convolution of a single
position is a matrix product, global average pooling over one position is the identity), so its
theory is the chain's (:mod:`amutheory.symbolic.chain`) applied to :meth:`MlpFamily.chain_spec`,
and its laws (:mod:`amutheory.laws.mlp`) evaluate the chain's symbolic modules on that spec.  Its
model and its derivation are registered by their layers (:mod:`amutheory.measure.family_models`,
:mod:`amutheory.symbolic.family_theory`).
"""

from __future__ import annotations

from amutheory.families.base import Family

#: why the chain's law is the MLP's (the first assumption of the MLP's derived law)
EQUIVALENCE = ("an MLP is the conv chain with kernel 1 on one position (a 1x1 convolution of one position is a "
               "matrix product; pooling one position is the identity): the chain law applies as derived")

#: the fields an MLP does not read; :meth:`MlpFamily.normalise` fixes the first four to the values
#: under which the conv chain is this MLP, and ``to_dict`` drops them all
_FIXED = {"dim": 1, "kernel": 1, "spatial": 1, "padding": "circular"}


class MlpFamily(Family):
    name = "mlp"
    title = "MLP"
    summary = "fully connected net: L bias-free linear layers, an activation after each and a linear readout"
    counts_blocks = False
    plain_chain = True
    unused_fields = tuple(_FIXED) + ("branch", "init", "shortcut", "heads", "mlp_ratio", "attn_scale")
    model_module = "amutheory.measure.mlp"
    campaign_module = "amutheory.campaign.analysis"  # analysed as the chain it is
    theory_module = "amutheory.symbolic.chain"

    # ------------------------------------------------------------------ spec
    def normalise(self, spec) -> dict:
        """``dim = kernel = spatial = 1`` and circular padding: an MLP is the chain with kernel 1 on one
        position, whatever the flags that do not apply to it say."""
        return dict(_FIXED)

    def data_dim(self, spec) -> int:
        """0: an MLP reads feature vectors ``(B, input_channels)``, no spatial axis."""
        return 0

    def data_layout(self, spec, channels: int, side: int) -> dict:
        """An image dataset ``channels x side x side`` is read flattened: ``channels * side^2`` features."""
        return {"input_channels": channels * side * side, "spatial": 1}

    def chain_spec(self, spec):
        """The conv chain that is this MLP (kernel 1, one position, circular padding)."""
        return spec.with_(family="conv", **_FIXED)

    # ------------------------------------------------------------------ sizes
    def parameter_count(self, spec) -> int:
        n = spec.width
        return spec.input_channels * n + (spec.depth - 1) * n * n + n * spec.outputs

    def activation_elements(self, spec) -> int:
        """The input, and per layer the pre-activation and the activation."""
        return spec.input_channels + spec.depth * 2 * spec.width


FAMILY = MlpFamily()
