"""The pre-LN Transformer encoder: an embedding, ``depth`` = K pre-LN blocks (attention and MLP
branches, both under the init convention ``init``), a final LayerNorm, the token mean and a linear
head (:class:`amutheory.measure.transformer.PreLNTransformer`); ``width`` is d_model and ``spatial``
the sequence length T.  Its theory is :mod:`amutheory.symbolic.transformer`.  Both are registered by
their layers (:mod:`amutheory.measure.family_models`, :mod:`amutheory.symbolic.family_theory`)."""

from __future__ import annotations

from amutheory.families.base import Family


class TransformerFamily(Family):
    name = "transformer"
    title = "pre-LN Transformer"
    summary = "pre-LN Transformer encoder: K blocks of attention and MLP, token mean and a linear head"
    counts_blocks = True
    unused_fields = ("branch", "shortcut", "kernel", "padding", "dim")
    takes_norm = False
    no_norm_because = "its blocks are pre-LN already"
    block_cost = 3.0  # an attention and an MLP per block
    model_module = "amutheory.measure.transformer"
    theory_module = "amutheory.symbolic.transformer"
    campaign_module = "amutheory.campaign.analysis_transformer"
    campaign_figures = False

    def check(self, spec) -> None:
        if spec.dim != 1:
            raise ValueError(f"dim must be 1 for a transformer (a sequence of spatial = T tokens), got {spec.dim}")
        if spec.width % spec.heads:
            raise ValueError(f"heads must divide width ({spec.width}) for a transformer, got {spec.heads}")

    def data_dim(self, spec) -> int:
        return 1

    def parameter_count(self, spec) -> int:
        n = spec.width
        return spec.input_channels * n + spec.depth * (4 + 2 * spec.mlp_ratio) * n * n + n * spec.outputs

    def modules_per_block(self, spec) -> int:
        """LayerNorms, q, k, v, o and the MLP."""
        return 7

    def activation_elements(self, spec) -> int:
        """Per block the stream, LayerNorm, q, k, v, attention output, the ``heads x T x T`` attention
        weights and the MLP's two hidden tensors."""
        n, p = spec.width, spec.positions
        per_block = 8 * n * p + 2 * spec.mlp_ratio * n * p + 2 * spec.heads * p * p
        return spec.input_channels * p + spec.depth * per_block

    def branch_multiplier(self, spec) -> float:
        """``alpha`` of the init convention at ``K`` blocks (:mod:`amutheory.symbolic.resnet.init`,
        registered by the symbolic layer)."""
        return float(self.provided("branch_multiplier")(spec))

    def sweep_defaults(self) -> dict:
        """A sweep's synthetic data when the flags leave them out: 8 positions of 3 channels, 10 classes
        (small enough that a first sweep runs in seconds per cell)."""
        return {"spatial": 8, "input_channels": 3, "outputs": 10}


FAMILY = TransformerFamily()
