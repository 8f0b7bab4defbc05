"""The coord check's table: train a user's model a few real optimizer steps and record, per counted
module, the size of its output and of the output's change since step 0 (mup's ``get_coord_data``
idea, here across depth as well as width).

One *size* is a depth ``L`` and a width ``n``; for each size and seed:

* ``torch.manual_seed(seed)``, then ``model = FACTORY(depth=L, width=n)`` (``FACTORY(depth=L)`` when no
  widths are given: the factory's own width);
* one fixed batch, drawn from ``torch.Generator().manual_seed(seed)`` so that every size sees the same
  batch for the same seed: Gaussian inputs of ``input_shape`` (or integer tokens in ``[0, vocab)``),
  uniformly random class labels over the model's outputs (its last axis), the cross-entropy loss; or
  the user's own ``(inputs, targets)`` batch;
* ``steps`` steps of ``torch.optim.SGD`` (plain) or ``torch.optim.Adam`` at the rate ``lr`` on that batch;
* before the first step and after each, one forward pass on the batch records every counted call's
  output ``h``: ``activation_rms = sqrt(mean h^2)`` and ``update_rms = sqrt(mean (h - h_0)^2)``.

The recording pass changes nothing: dropout is off in it and buffers (BatchNorm's running statistics)
are restored after it; the training steps run the model as the user trains it (``train()`` mode).

Counted calls: :func:`amutheory.graph.layers.select_layers` (default: every Conv/Linear output but the
readout, and every MultiheadAttention output; ``layers`` chooses others) plus the readout (the last
``nn.Linear`` in execution order).  A call's *group* is its module name with every block index
replaced by ``*`` (``layers.3.fc1`` -> ``layers.*.fc1``); the readout's group is ``readout``.
"""

from __future__ import annotations

import math

#: the keys of one record, in the CSV's column order
RECORD_KEYS = ("depth", "width", "module", "group", "step", "seed", "activation_rms", "update_rms")
#: the group of the readout (the last nn.Linear in execution order)
READOUT = "readout"
OPTIMIZERS = ("sgd", "adam")
INPUT_KINDS = ("float", "tokens")


def group_of(name: str, kind: str = "") -> str:
    """``name`` with every all-digit component replaced by ``*``: the blocks of one kind share a group.  A name
    with no other component (the layers of an ``nn.Sequential``: ``0``, ``2``, ...) is prefixed by the module's
    type, so that ``Linear *`` and ``Conv2d *`` stay apart and the legend says what the group is."""
    pattern = ".".join("*" if part.isdigit() else part for part in name.split("."))
    return f"{kind} {pattern}" if kind and set(pattern) <= {"*", "."} else pattern


def _first_tensor(output):
    import torch

    if isinstance(output, torch.Tensor):
        return output
    if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
        return output[0]  # nn.MultiheadAttention: (attention output, weights)
    raise TypeError(f"model: an output (of the model or of a recorded module) is a {type(output).__name__}, not a "
                    f"tensor or a tuple starting with one")


def counted_calls(model, inputs, layers=None) -> list[tuple[str, str, int]]:
    """``(module label, group, call order)`` of every recorded call: the selected pre-activations and the
    readout.  A module called more than once is labelled ``name#k`` from its second call on."""
    from amutheory.graph.layers import execution_order, select_layers

    chosen = select_layers(model, inputs, layers)
    calls = execution_order(model, inputs)
    linear = [c for c in calls if c.kind in ("Linear", "NonDynamicallyQuantizableLinear")]
    readout = linear[-1] if linear else None
    seen: dict[str, int] = {}
    out = []
    for c in sorted(set(chosen) | ({readout} if readout is not None else set()), key=lambda c: c.order):
        k = seen.get(c.name, 0)
        seen[c.name] = k + 1
        label = c.name if k == 0 else f"{c.name}#{k}"
        out.append((label, READOUT if readout is not None and c.order == readout.order else group_of(c.name, c.kind),
                    c.order))
    return out


class _Recorder:
    """Forward hooks that keep the outputs of the counted calls (by their index in execution order)."""

    def __init__(self, model, orders):
        self.model, self.orders, self.outputs, self._count, self._hooks = model, set(orders), {}, 0, []

    def __enter__(self):
        from torch import nn

        def hook(module, _inputs, output):
            if self._count in self.orders:
                self.outputs[self._count] = _first_tensor(output).detach().clone()
            self._count += 1

        for module in self.model.modules():
            own = any(True for _ in module.parameters(recurse=False))
            if module is not self.model and (own or isinstance(module, nn.MultiheadAttention)):
                self._hooks.append(module.register_forward_hook(hook))
        return self

    def __exit__(self, *exc):
        for h in self._hooks:
            h.remove()


def record_outputs(model, inputs, orders) -> dict:
    """The outputs of the calls ``orders`` in one forward pass that changes nothing (no dropout, buffers
    restored, no gradient)."""
    import torch
    from torch import nn

    dropouts = [m for m in model.modules() if isinstance(m, nn.modules.dropout._DropoutNd) and m.training]
    buffers = {k: v.detach().clone() for k, v in model.named_buffers()}
    for m in dropouts:
        m.eval()
    try:
        with torch.no_grad(), _Recorder(model, orders) as rec:
            model(inputs)
    finally:
        for m in dropouts:
            m.train()
        with torch.no_grad():
            for k, v in model.named_buffers():
                v.copy_(buffers[k])
    missing = set(orders) - set(rec.outputs)
    if missing:
        raise ValueError("model: its forward pass changed between calls (a counted module was not called)")
    return rec.outputs


def _rms(t) -> float:
    return float(t.double().pow(2).mean().sqrt()) if t.numel() else math.nan


def make_batch(model, input_shape, seed: int, input_kind: str, vocab, dataset=None):
    """``(inputs, targets)``: the user's batch, or drawn from a generator seeded by ``seed``."""
    import torch

    if dataset is not None:
        return dataset
    gen = torch.Generator().manual_seed(int(seed))
    if input_kind == "tokens":
        inputs = torch.randint(0, int(vocab), tuple(input_shape), generator=gen)
    else:
        dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.get_default_dtype())
        inputs = torch.randn(tuple(input_shape), generator=gen, dtype=dtype)
    with torch.no_grad():
        out = _first_tensor(model(inputs))
    if out.dim() < 1 or out.shape[-1] < 1:
        raise ValueError(f"model: its output has shape {tuple(out.shape)}; the coord check needs class scores "
                         f"on the last axis")
    targets = torch.randint(0, out.shape[-1], tuple(out.shape[:-1]), generator=gen)
    return inputs, targets


def _loss(model, inputs, targets):
    import torch.nn.functional as F

    out = _first_tensor(model(inputs))
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), targets.reshape(-1))


def optimizer_for(name: str, params, lr: float):
    import torch

    if name == "sgd":
        return torch.optim.SGD(params, lr=lr)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr)
    raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {name!r}")


def size_records(model, depth: int, width, seed: int, batch, steps: int, optimizer: str, lr: float,
                 layers=None) -> list[dict]:
    """The records of one size and seed (module docstring): ``(steps + 1) x modules`` dicts."""
    inputs, targets = batch
    calls = counted_calls(model, inputs, layers)
    orders = [o for _, _, o in calls]
    model.train()
    first = record_outputs(model, inputs, orders)
    opt = optimizer_for(optimizer, model.parameters(), lr)
    records = []
    for step in range(steps + 1):
        now = first if step == 0 else record_outputs(model, inputs, orders)
        for label, group, order in calls:
            records.append({"depth": depth, "width": width, "module": label, "group": group, "step": step,
                            "seed": seed, "activation_rms": _rms(now[order]),
                            "update_rms": _rms(now[order] - first[order])})
        if step < steps:
            opt.zero_grad(set_to_none=True)
            _loss(model, inputs, targets).backward()
            opt.step()
    return records
