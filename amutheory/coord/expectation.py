"""What the theory expects a coord check to show across depth, per kind of network.

AM-muP chooses the rate ``eta*(L)`` so that the *layer-averaged* one-step update of the pre-activations
stays fixed as the depth grows.  A coord check trains at one *fixed* rate at every depth, so the same
average then moves as ``eta / eta*(L)``: since ``eta*(L)`` falls with depth for every net the theory
covers, the update of the repeated layers is expected to *grow* with depth.  Per kind (a qualitative
expectation -- a sign, not a fitted exponent):

* **chain** (no residual additions): layer ``l``'s output changes by the sum of the changes of the ``l``
  layers below it, so the block layers' update and the readout's grow with depth: sign ``+``.
* **residual with identity skips** (residual additions, no attention): every branch adds its change to
  the stream that all later blocks read; under a fixed rate the blocks' and the readout's updates grow
  with the number of blocks: ``+``.
* **Transformer** (attention modules): the same accumulation on the residual stream, but each block reads
  it through a normalisation that divides by the stream's own growing size, which can cancel part or all
  of the growth: ``+`` or ``0`` (growing or flat), never shrinking.

Only the repeated groups (a name with a ``*``) and the readout carry an expectation: a single stem layer
near the input sees no accumulation and has none stated.  A network whose kind cannot be read (its
graph does not trace) has none either.
"""

from __future__ import annotations

CHAIN, RESIDUAL, TRANSFORMER, UNKNOWN = "chain", "residual", "transformer", "unknown"

#: kind -> (the trends the theory allows for a repeated group under a fixed rate, in words)
EXPECTED = {
    CHAIN: (("growing",), "a chain accumulates every lower layer's change: under a fixed rate the block layers' "
                          "and the readout's updates grow with depth (AM-muP's eta*(L) falls with L to hold the "
                          "layer average fixed)"),
    RESIDUAL: (("growing",), "identity skips add every branch's change to the stream: under a fixed rate the "
                             "blocks' and the readout's updates grow with the number of blocks"),
    TRANSFORMER: (("growing", "flat"), "the residual stream accumulates every block's change, but each block reads "
                                       "it through a normalisation that divides by its growing size: growing or "
                                       "flat under a fixed rate, not shrinking (qualitative)"),
    UNKNOWN: ((), "the network's kind could not be read from its traced graph: no expectation stated"),
}


def network_kind(model, input_shape, input_kind: str) -> str:
    """``transformer`` when the model has an attention module, else ``residual`` or ``chain`` from the
    residual additions of its traced graph (:func:`amutheory.graph.effective_depth`); ``unknown`` when
    the graph cannot be traced (token inputs included: the tracer runs the model on float zeros)."""
    from torch import nn

    if any(isinstance(m, nn.MultiheadAttention) or "Attention" in type(m).__name__ for m in model.modules()):
        return TRANSFORMER
    if input_kind != "float":
        return UNKNOWN
    try:
        from amutheory.graph import effective_depth

        report = effective_depth(model, tuple(input_shape))
    except Exception:  # noqa: BLE001 - the user's model may not trace: then no expectation is stated
        return UNKNOWN
    return RESIDUAL if report.residual_additions > 0 else CHAIN


def expected_trends(kind: str, group: str, readout: str) -> tuple:
    """The depth trends the theory allows for ``group`` (empty: no expectation)."""
    if "*" not in group and group != readout:
        return ()
    return EXPECTED[kind][0]


def expectation_text(kind: str) -> str:
    return EXPECTED[kind][1]
