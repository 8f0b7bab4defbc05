"""Why a coord check reads what it reads: a short hint for a row whose depth trend is not the one the
theory expects (:mod:`amutheory.coord.expectation`), or that has no expectation and still reads a trend.

The hints come from facts read off the model before it trains (:func:`model_facts`, on the first model
the check builds):

* **near-zero gains**: parameters with one axis of more than one entry (or none), not a bias, every entry
  of magnitude at most :data:`NEAR_ZERO` -- a layer scale (ConvNeXt's ``gamma = 1e-6``), a zero-initialised
  norm weight at the end of a branch (``zero_init_residual``).  At step 0 the branch they scale adds
  nothing to the stream, and nothing to the gradient below it, so there is nothing for depth to
  accumulate until the gains have grown: flat is what such a stack reads in its first steps;
* **the init**: the median ``Var[W] fan_in`` of the hidden weights against the activation's critical
  constant (:func:`amutheory.transfer_interval.hidden_init`, the number ``transfer``'s ``init`` mismatch
  uses): an init below critical shrinks the signal and the gradient layer after layer, so a deeper net
  moves less per step.

Then a few readings that need no fact: a stem under Adam (its step's size does not follow the
gradient's; the sign pattern and Adam's ``eps`` still move it a little), a resolved but small slope
(``|slope| <`` :data:`SMALL_SLOPE`, said as a factor per doubling of depth), a flat reading (no trend
resolved at these seeds), and a row with no expectation (its reason,
:func:`amutheory.coord.expectation.expected_why`).

Torch is imported only inside :func:`model_facts`.
"""

from __future__ import annotations

#: a gain every entry of which is at most this in magnitude counts as near zero
NEAR_ZERO = 1e-3
#: a resolved depth slope smaller than this in magnitude is called small in the hint
SMALL_SLOPE = 0.1


def model_facts(model, input_shape=None, input_kind: str = "float") -> dict:
    """``{"near_zero_gains": {"parameters": [...], "max_abs": x} | None, "init": {...} | None}`` of
    ``model`` as built (before any step)."""
    from amutheory.coord.records import group_of

    facts: dict = {"near_zero_gains": None, "init": None}
    names, largest = [], 0.0
    for name, p in model.named_parameters():
        if name.split(".")[-1] == "bias" or not p.is_floating_point():
            continue
        if sum(1 for size in p.shape if size > 1) > 1 or p.numel() == 0:
            continue  # a weight matrix, a kernel or an embedding: not a gain
        biggest = float(p.detach().abs().max())
        if biggest <= NEAR_ZERO:
            group = group_of(name)
            if group not in names:
                names.append(group)
            largest = max(largest, biggest)
    if names:
        facts["near_zero_gains"] = {"parameters": names, "max_abs": largest}
    try:
        from amutheory.transfer_interval import hidden_init, model_traits

        facts["init"] = hidden_init(model, model_traits(model),
                                    tuple(input_shape) if input_kind == "float" and input_shape else None)
    except Exception:  # noqa: BLE001 - a hint is optional: a model whose weights cannot be read has none
        facts["init"] = None
    return facts


def _per_doubling(slope: float) -> str:
    return f"x{2 ** slope:.3g} per doubling of depth"


def hint(row: dict, role: str, why: str, facts: dict | None, optimizer: str = "sgd") -> str | None:
    """A short reason for ``row`` (a reading row of a group of ``role``, trained with ``optimizer``) when
    its depth trend is not the expected one, or when it has no expectation and reads a trend; ``None``
    when the reading is as expected (or not read)."""
    trend, allowed, slope = row.get("depth_trend"), row.get("expected_depth_trend"), row.get("depth_slope")
    if trend is None or (allowed and trend in allowed) or (not allowed and trend == "flat"):
        return None
    facts = facts or {}
    gains, init = facts.get("near_zero_gains"), facts.get("init")
    found = []  # the model's own reasons
    adam_stem = optimizer != "sgd" and role == "stem"  # Adam's step does not follow the gradient's size
    if gains and trend in ("flat", "shrinking") and allowed and "growing" in allowed:
        shown = ", ".join(gains["parameters"][:3]) + (", ..." if len(gains["parameters"]) > 3 else "")
        found.append(f"gains near zero ({shown}: |value| <= {gains['max_abs']:.1g}): at step 0 the branches they "
                     "scale add nothing to the stream nor to the gradient below them, so nothing accumulates "
                     "with depth until the gains grow: flat is what such a stack reads in its first steps")
    if init and trend == "shrinking" and init["ratio"] < 1 / init["tolerance"] and not adam_stem:
        found.append(f"the init is below critical (median Var[W] fan_in {init['var_fan_in']:.3g} against "
                     f"c* = {init['critical']:.3g}, {init['activation']}): signal and gradient shrink layer after "
                     "layer, so a deeper net moves less per step (a critical He init: nn.init.kaiming_normal_)")
    if init and trend == "growing" and allowed == ["flat"] and init["ratio"] > init["tolerance"] and not adam_stem:
        found.append(f"the init is above critical (median Var[W] fan_in {init['var_fan_in']:.3g} against "
                     f"c* = {init['critical']:.3g}, {init['activation']}): the gradient grows layer after layer")
    if adam_stem and allowed:
        found.append("under Adam the stem's step is lr times the sign of its gradient, so its size does not follow "
                     "the gradient's; how the signs line up over the batch (and Adam's eps against tiny gradients) "
                     "can still move it a little")
    if not found and allowed:  # no reason in the model: what the reading itself says
        if trend == "flat":
            ci = row.get("depth_slope_ci")
            found.append("flat means no trend resolved at these seeds"
                         + (f" (interval [{ci[0]:.3g}, {ci[1]:.3g}])" if ci else "")
                         + ": more seeds or a wider depth range resolve a weak one")
        elif trend == "shrinking":
            found.append("deeper nets move these layers less per step (vanishing updates): look at the init and "
                         "at a normalisation that divides out the branch")
        elif role == "stem":
            found.append("the gradient that reaches the stem grows with depth here (skips that add their branches' "
                         "gradients, or an init above critical)")
    parts = ([] if allowed else [f"no expectation: {why}"]) + found
    if trend in ("growing", "shrinking") and slope is not None and abs(slope) < SMALL_SLOPE:
        parts.append(f"a small trend: {_per_doubling(slope)}")
    return "; ".join(parts) or None
