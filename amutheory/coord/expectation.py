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

The repeated groups (a name with a ``*``), any single layer after the first of them and the readout carry
that expectation.  The **stem** (the single layers that run before the first repeated group) sees no
accumulation from below: its update is its own weight change, ``|x|^2`` times the gradient that reaches it,
so its expectation is the depth trend of that gradient (:data:`STEM_EXPECTED`):

* under SGD in a **chain**: a critical init carries the gradient back through every layer at one size:
  ``flat`` (an init below critical shrinks it: vanishing gradients);
* under SGD in a **residual** net: every identity skip adds its branch's backward term to the gradient
  below it, as it adds the branch's change to the stream above: ``growing``;
* under SGD in a **Transformer**: the branches add to the gradient while the final normalisation divides
  it by the stream's growing size: no sign is stated;
* under **Adam** (any kind): the first step moves every weight by ``lr`` times the sign of its gradient,
  whatever the gradient's size: ``flat``.

That is the first step's statement: after it the gradient reaching the stem has moved with training, which
a deeper net does faster at one rate, so from step 2 on the stem has no expectation (:data:`STEM_LATER`).

A network whose kind cannot be read (its graph does not trace) has no expectation, and neither has a
group that is not repeated when the model has no repeated group at all (no stem can be told apart).
Every row also gets the reason for its expectation (:func:`expected_why`), said where it is read.
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


#: kind -> (the trends the theory allows for the stem under SGD, why); under Adam see :data:`STEM_ADAM`
STEM_EXPECTED = {
    CHAIN: (("flat",), "the stem's update is the gradient that reaches it, and a critical init carries the gradient "
                       "back through a chain at one size: flat (an init below critical shrinks it)"),
    RESIDUAL: (("growing",), "the stem's update is the gradient that reaches it, and every identity skip adds its "
                             "branch's backward term to that gradient: growing with the number of blocks"),
    TRANSFORMER: ((), "the stem's update is the gradient that reaches it: the branches add to it while the final "
                      "normalisation divides it by the stream's growing size, so no sign is stated"),
    UNKNOWN: ((), "the network's kind could not be read from its traced graph: no expectation stated"),
}
#: the stem under Adam, whatever the kind
STEM_ADAM = (("flat",), "under Adam the first step moves every weight by lr times the sign of its gradient, "
                        "whatever the gradient's size, and nothing below the stem changes: flat")
#: the stem after the first step
STEM_LATER = ((), "after the first step the gradient reaching the stem has moved with training, which a deeper net "
                  "does faster at one rate: the theory states the stem's first step only")
#: a single layer when the model has no repeated group (no stem can be told apart)
SINGLE = ((), "a single layer in a model with no repeated group (no block index in any name): no expectation stated")

#: a group's role: ``stem`` (single, before the first repeated group), ``repeated`` (a ``*`` in its name, or a
#: single layer after the first repeated group), ``readout``, or ``single`` (no repeated group in the model)
ROLES = ("stem", "repeated", "readout", "single")


def group_roles(groups, readout: str) -> dict:
    """``{group: role}`` for ``groups`` in execution order (:data:`ROLES`)."""
    groups = list(groups)
    repeated = any("*" in g for g in groups)
    roles, seen_repeated = {}, False
    for g in groups:
        seen_repeated = seen_repeated or "*" in g
        roles[g] = ("readout" if g == readout else "repeated" if seen_repeated else "stem" if repeated
                    else "single")
    return roles


def _expected(kind: str, role: str, optimizer: str, step: int = 1) -> tuple:
    if kind == UNKNOWN:
        return EXPECTED[UNKNOWN]
    if role == "stem":
        return STEM_LATER if step > 1 else STEM_ADAM if optimizer != "sgd" else STEM_EXPECTED[kind]
    if role == "single":
        return SINGLE
    return EXPECTED[kind]


def expected_trends(kind: str, group: str, readout: str, role: str | None = None, optimizer: str = "sgd",
                    step: int = 1) -> tuple:
    """The depth trends the theory allows for ``group`` at ``step`` (empty: no expectation).  ``role``
    (:func:`group_roles`); without it, the repeated groups and the readout only."""
    if role is None:
        role = "readout" if group == readout else "repeated" if "*" in group else "single"
    return _expected(kind, role, optimizer, step)[0]


def expected_why(kind: str, role: str, optimizer: str = "sgd", step: int = 1) -> str:
    """Why the theory expects what it does of a group of ``role`` at ``step`` (one sentence)."""
    return _expected(kind, role, optimizer, step)[1]


def expectation_text(kind: str) -> str:
    return EXPECTED[kind][1]
