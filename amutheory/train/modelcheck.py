"""A sweep's network checked once, before any cell runs: a user's ``--model FILE.py:FACTORY`` is
built at the sweep's smallest depth and width and run on a few training samples, so that a factory
whose head is narrower than the dataset's classes, or which has no parameters to train, is refused
in one line up front (instead of an indexing error or a ``vmap`` error from inside the first cell,
after the sweep started)."""

from __future__ import annotations

import dataclasses

#: samples of the forward pass that checks the network (enough to see its output's shape)
CHECK_SAMPLES = 2


def check_network(template, depths, widths) -> None:
    """``ValueError`` naming ``--model`` when ``template``'s network (the factory's, at the smallest
    of ``depths`` and ``widths``, on the CPU) has no trainable parameter, fails on the dataset's
    inputs, or gives fewer outputs than the dataset has classes."""
    import torch

    from amutheory.train.run import build_network, cell_data

    cell = dataclasses.replace(template, spec=template.spec.with_(depth=min(depths), width=min(widths)),
                               device="cpu")
    who = f"--model {cell.model}" if cell.model is not None else "the network"
    net = build_network(cell)
    if not any(p.requires_grad for p in net.parameters()):
        raise ValueError(f"{who}: the network at depth {cell.depth}, width {cell.width} has no trainable "
                         "parameters (nothing for a learning rate to act on)")
    x, y, _, _ = cell_data(cell)
    classes = int(cell.spec.outputs)
    try:
        with torch.no_grad():
            out = net(x[:CHECK_SAMPLES])
    except Exception as exc:  # noqa: BLE001 - the user's code: one line saying what failed
        raise ValueError(f"{who}: the network at depth {cell.depth}, width {cell.width} fails on the dataset's "
                         f"inputs of shape {tuple(x.shape[1:])}: {type(exc).__name__}: "
                         f"{' '.join(str(exc).split())}") from None
    if not isinstance(out, torch.Tensor) or out.dim() != 2 or out.shape[0] != min(CHECK_SAMPLES, x.shape[0]):
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(f"{who}: the network must return (batch, classes) logits, got {shape}")
    if out.shape[1] < classes:
        raise ValueError(f"{who}: the network's head has {out.shape[1]} outputs but the dataset {cell.dataset} "
                         f"has {classes} classes; give the head at least {classes} outputs")
