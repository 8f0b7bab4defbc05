"""Which tensors of a user's ``nn.Module`` count as pre-activations (the probe's ``h_l``, the coord
check's module groups), found by running the model once with forward hooks.

Default: the output of every ``nn.Conv1d/2d/3d`` and ``nn.Linear`` module, in execution order, except
the model's last ``nn.Linear`` in execution order (the readout), and the output of every
``nn.MultiheadAttention`` (its projections are not called as modules: the attention output stands for
them).  ``layers`` chooses others: a list of module type names (``"Linear"``, ``"Conv2d"``,
``"LayerNorm"``, ...) or ``fnmatch`` patterns on qualified module names (``"blocks.*.fc1"``); a name
that matches neither a type nor a module is an error naming it.  A module called more than once in a
forward pass counts once per call (weight tying: each call is its own pre-activation).

Presets (``layers="resnet"``, ``"transformer"`` or ``"activations"``, one rule under three names):
every tensor that enters an activation function (``F.relu``, ``nn.GELU``, ``torch.tanh``, ``x.relu()``,
... :data:`ACTIVATION_FUNCTIONS`), in call order.  That is the built-in residual nets' convention
(:mod:`amutheory.measure.resnet`: the branch pre-activations ``W*x``, and the stream ``x`` itself
where a pre-activation block applies ``phi`` to it; neither the stem, nor the branch's last conv,
nor a projection) and the built-in Transformer's (:mod:`amutheory.measure.transformer`: the MLP's
``LN(x) W_1`` in each block; neither attention, whose logits enter a softmax, nor ``W_2``).  On a
user's BasicBlock the ReLU inputs are ``BN(conv1 x)`` and ``BN(conv2 ...) + skip``.  A net whose
activation is no function call (a linear net) has nothing to count under a preset.  Activation
calls are seen by a :class:`torch.overrides.TorchFunctionMode` (:func:`capture`), so they are named
``MODULE:function`` after the innermost module running.
"""

from __future__ import annotations

import contextlib
import fnmatch
from dataclasses import dataclass

import torch
from torch import nn

from amutheory.graph.forward import forward_with_hooks

#: module types whose outputs are pre-activations by default
DEFAULT_TYPES = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear, nn.MultiheadAttention)


#: the ``layers`` presets (the same rule: activation inputs; module docstring)
PRESETS = ("activations", "resnet", "transformer")


@dataclass(frozen=True)
class LayerCall:
    """One counted call: the module's qualified name, its type name, and the call's index among all
    module calls of the forward pass (execution order); for a preset (``source="activation"``), the
    activation function's name and the index among activation calls."""

    name: str
    kind: str
    order: int
    source: str = "module"


def _counted_modules(model: nn.Module) -> list[nn.Module]:
    """The modules whose calls :func:`execution_order` numbers: those with parameters of their own,
    and every MultiheadAttention (the same list, in the same order, wherever it is asked)."""
    return [m for m in model.modules() if m is not model and (any(True for _ in m.parameters(recurse=False))
                                                             or isinstance(m, nn.MultiheadAttention))]


def execution_order(model: nn.Module, example_input) -> list[LayerCall]:
    """Every call of a leaf-like module (one with parameters of its own, or a MultiheadAttention) in
    one forward pass on ``example_input``, in execution order."""
    names = {m: n for n, m in model.named_modules()}
    calls: list[LayerCall] = []

    def record(module, _inputs, _output):
        calls.append(LayerCall(names[module], type(module).__name__, len(calls)))

    forward_with_hooks(model, example_input, list(_counted_modules(model)), record)
    return calls


def select_layers(model: nn.Module, example_input, layers=None) -> list[LayerCall]:
    """The calls whose outputs count (module docstring); ``ValueError`` naming ``layers`` when an entry
    matches nothing or when nothing is selected."""
    if isinstance(layers, str) and layers in PRESETS:
        return _nonempty(activation_calls(model, example_input), layers)
    calls = execution_order(model, example_input)
    if layers is None:
        linear = [c for c in calls if c.kind in ("Linear", "NonDynamicallyQuantizableLinear")]
        readout = linear[-1].order if linear else None
        inside_attention = _attention_children(model)
        chosen = [c for c in calls if isinstance(model.get_submodule(c.name), DEFAULT_TYPES)
                  and c.order != readout and c.name not in inside_attention]
    else:
        if isinstance(layers, str) or not all(isinstance(x, str) for x in layers):
            raise TypeError(f"layers must be a list of module type names or name patterns, or one of "
                            f"{', '.join(PRESETS)}; got {layers!r}")
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


def _nonempty(calls: list, preset: str) -> list:
    if not calls:
        raise ValueError(f"layers: {preset!r} counts the inputs of activation functions, and the forward pass "
                         "calls none (a linear net?); name the layers with layers=[...]")
    return calls


def _activation_functions() -> dict:
    """The activation functions a preset counts, each with the name it is reported under."""
    from torch.nn import functional as F

    out = {}
    for name in ("relu", "relu6", "gelu", "silu", "tanh", "sigmoid", "elu", "selu", "celu", "leaky_relu",
                 "softplus", "mish", "hardtanh", "hardswish", "hardsigmoid"):
        for owner in (F, torch, torch.Tensor):
            for attr in (name, name + "_"):
                fn = getattr(owner, attr, None)
                if fn is not None:
                    out[fn] = name
    return out


#: function -> name, for the activation calls a preset counts (a Tensor method too: ``x.relu()``)
ACTIVATION_FUNCTIONS = _activation_functions()
_DROPOUTS = ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")


class _CallWatch(torch.overrides.TorchFunctionMode):
    """Sees every torch function call of a forward pass: records the inputs of activation functions
    (``record``: a list, or None), and with ``no_dropout`` makes every functional dropout the identity
    and passes ``dropout_p=0`` to ``scaled_dot_product_attention``."""

    def __init__(self, record=None, no_dropout: bool = False):
        super().__init__()
        self.record, self.no_dropout = record, no_dropout
        from torch.nn import functional as F

        self._dropouts = {getattr(F, n) for n in _DROPOUTS if hasattr(F, n)}
        self._sdpa = F.scaled_dot_product_attention

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.no_dropout and func in self._dropouts:
            return args[0] if args else kwargs["input"]
        if self.no_dropout and func is self._sdpa and kwargs.get("dropout_p", 0.0):
            kwargs = {**kwargs, "dropout_p": 0.0}
        if self.record is not None and func in ACTIVATION_FUNCTIONS:
            x = args[0] if args else kwargs.get("input")
            in_place = kwargs.get("inplace", False) or getattr(func, "__name__", "").endswith("_")
            self.record.append((ACTIVATION_FUNCTIONS[func], x.clone() if in_place else x))
        return func(*args, **kwargs)


def activation_calls(model: nn.Module, example_input) -> list[LayerCall]:
    """Every activation-function call of one forward pass on ``example_input`` (the presets' counted
    tensors), named ``MODULE:function`` after the innermost module running at the call."""
    names = {m: n for n, m in model.named_modules()}
    stack, found, hooks = [], [], []
    record = _NamedRecord(stack, found)

    def enter(module, _inputs):
        stack.append(names[module])

    def leave(_module, _inputs, _output):
        stack.pop()

    for module in names:
        hooks.append(module.register_forward_pre_hook(enter))
        hooks.append(module.register_forward_hook(leave))
    try:
        with torch.no_grad(), _CallWatch(record):
            model(example_input)
    finally:
        for h in hooks:
            h.remove()
    return [LayerCall(f"{where or '(model)'}:{fn}", fn, i, "activation") for i, (fn, where) in enumerate(found)]


class _NamedRecord(list):
    """A record that keeps, for each activation call, its function and the innermost running module."""

    def __init__(self, stack, found):
        super().__init__()
        self.stack, self.found = stack, found

    def append(self, item):
        self.found.append((item[0], self.stack[-1] if self.stack else ""))


@contextlib.contextmanager
def capture(model: nn.Module, calls: list[LayerCall], out: list, no_dropout: bool = True):
    """While open, every forward pass of ``model`` (also under ``functional_call``, ``jvp`` and ``vmap``)
    appends the output of each of ``calls`` to ``out``, in call order; functional dropout is off
    (``no_dropout``).  The calls are matched by their index in the pass (:func:`select_layers`'s
    ``order``), so the forward pass must make the same calls as when they were selected."""
    chosen = {c.order for c in calls}
    activation = bool(calls) and calls[0].source == "activation"
    hooks, seen = [], []
    record = None
    if activation:
        record = _Chosen(chosen, out)
    else:
        def keep(_module, _inputs, output):
            if len(seen) in chosen:
                out.append(output[0] if isinstance(output, tuple) else output)
            seen.append(None)

        hooks = [m.register_forward_hook(keep) for m in _counted_modules(model)]
    try:
        with _CallWatch(record, no_dropout):
            yield out
    finally:
        for h in hooks:
            h.remove()


class _Chosen(list):
    """A record that keeps the tensors of the chosen activation calls only."""

    def __init__(self, chosen, out):
        super().__init__()
        self.chosen, self.out, self.count = chosen, out, 0

    def append(self, item):
        if self.count in self.chosen:
            self.out.append(item[1])
        self.count += 1


def _attention_children(model: nn.Module) -> set:
    """Names of the modules inside a MultiheadAttention (its out_proj: not called as a module)."""
    inside = set()
    for name, module in model.named_modules():
        if isinstance(module, nn.MultiheadAttention):
            inside |= {f"{name}.{child}" if name else child for child, _ in module.named_modules() if child}
    return inside
