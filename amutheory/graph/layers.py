"""Which tensors of a user's ``nn.Module`` count as pre-activations (the probe's ``h_l``, the coord
check's module groups), found by running the model once with forward hooks.

Default: the output of every ``nn.Conv1d/2d/3d`` and ``nn.Linear`` module, in execution order, except
the model's last ``nn.Linear`` in execution order (the readout), and the output of every
``nn.MultiheadAttention`` (its projections are not called as modules: the attention output stands for
them).  ``layers`` chooses others: a list of module type names (``"Linear"``, ``"Conv2d"``,
``"LayerNorm"``, ...) or ``fnmatch`` patterns on qualified module names (``"blocks.*.fc1"``); a name
that matches neither a type nor a module is an error naming it.  A module called more than once in a
forward pass counts once per call (weight tying: each call is its own pre-activation).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

import torch
from torch import nn

#: module types whose outputs are pre-activations by default
DEFAULT_TYPES = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear, nn.MultiheadAttention)


@dataclass(frozen=True)
class LayerCall:
    """One counted call: the module's qualified name, its type name, and the call's index among all
    module calls of the forward pass (execution order)."""

    name: str
    kind: str
    order: int


def execution_order(model: nn.Module, example_input) -> list[LayerCall]:
    """Every call of a leaf-like module (one with parameters of its own, or a MultiheadAttention) in
    one forward pass on ``example_input``, in execution order."""
    names = {m: n for n, m in model.named_modules()}
    calls: list[LayerCall] = []
    hooks = []

    def record(module, _inputs, _output):
        calls.append(LayerCall(names[module], type(module).__name__, len(calls)))

    for module in names:
        own = any(True for _ in module.parameters(recurse=False))
        if module is not model and (own or isinstance(module, nn.MultiheadAttention)):
            hooks.append(module.register_forward_hook(record))
    try:
        with torch.no_grad():
            model(example_input)
    finally:
        for h in hooks:
            h.remove()
    return calls


def select_layers(model: nn.Module, example_input, layers=None) -> list[LayerCall]:
    """The calls whose outputs count (module docstring); ``ValueError`` naming ``layers`` when an entry
    matches nothing or when nothing is selected."""
    calls = execution_order(model, example_input)
    if layers is None:
        linear = [c for c in calls if c.kind in ("Linear", "NonDynamicallyQuantizableLinear")]
        readout = linear[-1].order if linear else None
        inside_attention = _attention_children(model)
        chosen = [c for c in calls if isinstance(model.get_submodule(c.name), DEFAULT_TYPES)
                  and c.order != readout and c.name not in inside_attention]
    else:
        if isinstance(layers, str) or not all(isinstance(x, str) for x in layers):
            raise TypeError(f"layers must be a list of module type names or name patterns, got {layers!r}")
        all_names = [n for n, _ in model.named_modules()]
        for entry in layers:
            if not any(c.kind == entry for c in calls) and not fnmatch.filter(all_names, entry):
                raise ValueError(f"layers: {entry!r} names no module type called in the forward pass and matches "
                                 f"no module name")
        chosen = [c for c in calls if any(c.kind == e or fnmatch.fnmatchcase(c.name, e) for e in layers)]
    if not chosen:
        raise ValueError("layers: no pre-activation found (the model calls no Conv or Linear module besides its "
                         "readout); name them with layers=[...]")
    return chosen


def _attention_children(model: nn.Module) -> set:
    """Names of the modules inside a MultiheadAttention (its out_proj: not called as a module)."""
    inside = set()
    for name, module in model.named_modules():
        if isinstance(module, nn.MultiheadAttention):
            inside |= {f"{name}.{child}" if name else child for child, _ in module.named_modules() if child}
    return inside
