"""Train cells: one at a time (the loop engine) or many learning rates at once (vectorised).

:func:`train_cell` runs one :class:`~amutheory.train.cell.Cell` with its ``torch.optim``
optimizer on the real ``nn.Module``.  :func:`train_group` runs cells that differ only in their
learning rate side by side: one set of initial weights, stacked once per rate, the same
minibatches, and ``torch.func.vmap`` of ``grad`` of ``functional_call`` on the same module, so
each member is the loop's run to float rounding; a member that diverges is dropped from the
stack on its own and the others go on.  Cells with dropout run through the loop (their masks are
drawn per run from the global generator, which a vmap cannot split the same way), and so do cells
on a rate schedule (the loop sets each step's rate, :meth:`Cell.rate_at`, on its param groups).

Both return the same record (:func:`record`): the papers' score (``score``: the mean training
loss over the run), ``final_loss`` (the mean over the last tenth of the steps), the thinned loss
curve, held-out loss and accuracy on the dataset's test split, the divergence verdict (rule:
:func:`divergence`), passes and wall time.  On a CPU the same cell in the same engine gives the
same record bit for bit, ``timing`` aside.
"""

from __future__ import annotations

import functools
import math
import time

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

import amutheory.measure  # noqa: F401  (registers the built-in families' models, which a cell builds)
import amutheory.train.checkpoint as checkpoint
from amutheory.train.cell import DATA_SEED_OFFSET, DIVERGENCE_FACTOR, DROPOUT_SEED_OFFSET, Cell
from amutheory.train.optim import StackedOptimizer, torch_optimizer

#: the loss curve of a record keeps about this many evenly spaced steps ...
CURVE_POINTS = 200
#: ... and the last step of each of these horizons, with the running mean of the loss up to it:
#: the first T steps of a run are a run of T steps (same init, same minibatches), so its
#: ``mean_to`` there is exactly the score a T-step run would get
HORIZONS = (10, 30, 100, 300, 1000, 3000, 10000, 30000, 100000)
#: test samples evaluated per forward pass
EVAL_BATCH = 1024
_DTYPES = {"float32": torch.float32, "float64": torch.float64}


# --------------------------------------------------------------------------- data and model
@functools.lru_cache(maxsize=4)
def load_data(name: str, data_dir=None, synthetic_shape: tuple | None = None):
    """The dataset, loaded once per process.  ``synthetic_shape`` = ``(dim, channels, spatial,
    classes)`` shapes synthetic data only (a real dataset's shape is its files'), so it is not
    part of a real dataset's cache key."""
    from amutheory.train.data import load_dataset

    if name != "synthetic":
        return load_dataset(name, data_dir)
    dim, channels, spatial, classes = synthetic_shape
    return load_dataset(name, data_dir, dim=dim, input_channels=channels, spatial=spatial, classes=classes)


def _dataset(name: str, data_dir, dim: int, channels: int, spatial: int, classes: int):
    from amutheory.train.data import as_model_input

    data = load_data(name, data_dir, (dim, channels, spatial, classes) if name == "synthetic" else None)
    x_test = None if data.x_test is None else as_model_input(data.x_test, dim)
    return as_model_input(data.x_train, dim), data.y_train, x_test, data.y_test, data.classes


def cell_data(cell: Cell):
    """``(x_train, y_train, x_test, y_test)`` in the model's layout (cached per process)."""
    sp = cell.spec
    family = cell.family_object
    dim = family.data_dim(sp)  # 0: feature vectors (an MLP)
    x, y, xt, yt, classes = _dataset(cell.dataset, cell.data_dir, dim, sp.input_channels, sp.spatial, sp.outputs)
    want = tuple(family.input_shape(sp, batch=1))[1:]
    if family.has_spec and tuple(x.shape[1:]) != want:  # a user's module reads what it reads
        raise ValueError(f"dataset {cell.dataset} gives inputs of shape {tuple(x.shape[1:])}, the model expects "
                         f"{want} (input_channels, spatial): build the spec with spec_for_data")
    if classes != sp.outputs:
        raise ValueError(f"dataset {cell.dataset} has {classes} classes, the model {sp.outputs} outputs")
    if cell.batch_size > x.shape[0]:
        raise ValueError(f"batch_size {cell.batch_size} is larger than the {x.shape[0]} training samples of "
                         f"{cell.dataset}")
    dtype = _DTYPES[cell.dtype]
    return (x.to(cell.device, dtype), y.to(cell.device),
            None if xt is None else xt.to(cell.device, dtype), None if yt is None else yt.to(cell.device))


def build_network(cell: Cell) -> nn.Module:
    """The cell's network at its init: its family's model from ``seed`` (the spec's model, or a user's
    factory under ``manual_seed(seed)``)."""
    return cell.family_object.build_seeded(cell.spec, cell.seed, dtype=_DTYPES[cell.dtype], device=cell.device,
                                           norm=cell.norm, dropout=cell.dropout)


def batch_indices(n: int, cell: Cell) -> torch.Tensor:
    """``(steps, batch_size)`` sample indices: epochs of a seeded permutation, the last partial
    batch of each epoch dropped (every sample once per epoch)."""
    per_epoch = n // cell.batch_size
    epochs = math.ceil(cell.steps / per_epoch)
    g = torch.Generator().manual_seed(cell.seed + DATA_SEED_OFFSET)
    perms = [torch.randperm(n, generator=g)[: per_epoch * cell.batch_size] for _ in range(epochs)]
    return torch.cat(perms).view(-1, cell.batch_size)[: cell.steps]


# --------------------------------------------------------------------------- the record
def divergence(loss: float, first: float) -> str | None:
    """Why a run has diverged at a step with this loss (``None`` if it has not): the loss is not
    finite, or it is above ``DIVERGENCE_FACTOR`` times the first step's loss."""
    if not math.isfinite(loss):
        return "non-finite loss"
    if loss > DIVERGENCE_FACTOR * first:
        return f"loss {loss:.4g} > {DIVERGENCE_FACTOR:g} x first loss {first:.4g}"
    return None


def _finite(v: float | None) -> float | None:
    return None if v is None or not math.isfinite(v) else float(v)


def init_label(cell: Cell) -> dict:
    """The init constant a run used and which it is: ``critical`` (the activation's variance-
    preserving ``c*``, the default), ``He`` (``c = 2``) or ``custom``.  For ReLU ``c* = 2``: both."""
    c = cell.spec.c
    from amutheory.activations import get_activation

    critical = get_activation(cell.spec.activation).critical_c()
    names = [n for n, hit in (("critical", math.isclose(c, critical, rel_tol=1e-9)),
                              ("He", math.isclose(c, 2.0, rel_tol=1e-12))) if hit]
    return {"c": c, "label": " = ".join(names) or "custom"}


def curve_steps(steps: int) -> np.ndarray:
    """The steps (0-based, sorted) a record's curve keeps of a run of ``steps`` steps: about
    :data:`CURVE_POINTS` evenly spaced ones (every step when ``steps <= CURVE_POINTS``) and the
    last step of each horizon in :data:`HORIZONS` the run reaches."""
    marks = [T - 1 for T in HORIZONS if T <= steps]
    return np.unique(np.concatenate([np.linspace(0, steps - 1, min(steps, CURVE_POINTS)).round(), marks]).astype(int))


def record(cell: Cell, losses: list[float], why: str | None, test: tuple, mode: str, wall: float,
           eval_passes: int, resumed_from: int = 0) -> dict:
    """The record of one run (JSON-ready: a non-finite number is ``null``; ``score`` and
    ``final_loss`` are ``null`` exactly when the run diverged, meaning +inf).  ``losses`` are the
    run's from step 0; ``resumed_from``: the step a saved state was loaded at (this call trained the
    steps after it: ``trained_steps``; ``timing`` is this call's)."""
    steps = len(losses)
    keep = curve_steps(steps)
    running = np.cumsum(losses) / np.arange(1, steps + 1)
    tail = losses[-max(1, math.ceil(cell.horizon / 10)):]
    diverged = why is not None
    return {
        "key": cell.key(), "cell": cell.to_dict(),
        "init": init_label(cell) if cell.family_object.has_spec else None,
        "score": None if diverged else float(np.mean(losses)),
        "final_loss": None if diverged else float(np.mean(tail)),
        "test_loss": _finite(test[0]), "test_accuracy": _finite(test[1]),
        "diverged": diverged, "diverged_step": steps - 1 if diverged else None, "diverged_reason": why,
        "curve": {"step": keep.tolist(), "loss": [_finite(losses[i]) for i in keep],
                  "mean_to": [_finite(running[i]) for i in keep]},
        "forward_passes": steps + eval_passes, "backward_passes": steps, "eval_passes": eval_passes,
        "resumed_from": resumed_from, "trained_steps": steps - resumed_from,
        "mode": mode, "timing": {"wall_s": wall},
    }


@torch.no_grad()
def _evaluate(forward, x: torch.Tensor | None, y: torch.Tensor | None) -> tuple:
    """``((loss, accuracy) per member, passes)``; ``forward(x_chunk)`` gives ``(M, b, classes)``."""
    if x is None:
        return None, 0
    loss, correct, passes = 0.0, 0.0, 0
    for i in range(0, x.shape[0], EVAL_BATCH):
        out = forward(x[i:i + EVAL_BATCH]).to(torch.float64)
        yb = y[i:i + EVAL_BATCH]
        loss = loss + F.cross_entropy(out.transpose(1, 2), yb.expand(out.shape[0], -1), reduction="none").sum(1)
        correct = correct + (out.argmax(-1) == yb).sum(1).to(torch.float64)
        passes += 1
    n = x.shape[0]
    return list(zip((loss / n).tolist(), (correct / n).tolist())), passes


# --------------------------------------------------------------------------- the loop engine
def _resume_point(cell: Cell, mode: str) -> tuple[int, dict | None]:
    """``(step, state)`` to start ``cell`` from: its run's latest saved state below its horizon, or
    ``(0, None)`` (none saved, or one that cannot be read: then the run starts over)."""
    s0 = checkpoint.latest_step(cell, mode)
    if not s0:
        return 0, None
    try:
        return s0, checkpoint.load(cell, mode, s0)
    except Exception:  # a damaged state: train from step 0 (the record is the same run)
        return 0, None


def train_cell(cell: Cell) -> dict:
    """Train one cell with ``torch.optim`` on its ``nn.Module``; its record."""
    start = time.perf_counter()
    x, y, xt, yt = cell_data(cell)
    net = build_network(cell).train()
    opt = torch_optimizer(cell, net.parameters())
    idx = batch_indices(x.shape[0], cell).to(x.device)
    s0, state = _resume_point(cell, checkpoint.LOOP)
    if state is None:
        torch.manual_seed(cell.seed + DROPOUT_SEED_OFFSET)
        losses = []
    else:
        net.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])
        torch.set_rng_state(state["rng"])
        losses = list(state["losses"])
    why = None
    scheduled = cell.schedule is not None
    for t in range(s0, cell.horizon):
        if scheduled:
            for group in opt.param_groups:
                group["lr"] = cell.rate_at(t)
        loss = F.cross_entropy(net(x[idx[t]]), y[idx[t]])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        losses.append(float(loss.detach()))
        why = divergence(losses[-1], losses[0])
        if why:
            break
        opt.step()
    test, passes = (None, None), 0
    if why is None and checkpoint.saves(cell):
        checkpoint.save(cell, checkpoint.LOOP, {"model": net.state_dict(), "optim": opt.state_dict(),
                                                "rng": torch.get_rng_state(), "losses": losses})
    if why is None and cell.stop is None:
        net.eval()
        res, passes = _evaluate(lambda xb: net(xb)[None], xt, yt)
        test = res[0] if res else (None, None)
    return record(cell, losses, why, test, "loop", time.perf_counter() - start, passes, s0)


# --------------------------------------------------------------------------- the vectorised engine
def _same_but_lr(cells: list[Cell]) -> None:
    if not cells:
        raise ValueError("cells must not be empty")
    keys = {c.group_key() for c in cells}
    if len(keys) != 1:
        raise ValueError("train_group needs cells that differ only in lr")


def train_group(cells: list[Cell]) -> list[dict]:
    """Train cells that differ only in ``lr`` side by side (vmap); their records, in order.  Cells
    whose runs have saved states at different steps train as separate stacks, each from its step."""
    _same_but_lr(cells)
    base = cells[0]
    if base.dropout or base.optimizer not in StackedOptimizer.KINDS or any(c.schedule is not None for c in cells):
        return [train_cell(c) for c in cells]
    parts: dict[int, list[tuple[int, dict | None]]] = {}
    for i, c in enumerate(cells):
        s0, state = _resume_point(c, checkpoint.VECTORISED)
        parts.setdefault(s0, []).append((i, state))
    out: list[dict | None] = [None] * len(cells)
    for s0, part in parts.items():
        records = _train_stack([cells[i] for i, _ in part], s0, [st for _, st in part])
        for (i, _), r in zip(part, records):
            out[i] = r
    return out


def _stacked(states: list[dict], field: str) -> dict:
    return {k: torch.stack([st[field][k] for st in states]) for k in states[0][field]}


def _train_stack(cells: list[Cell], s0: int, states: list) -> list[dict]:
    """The vectorised run of ``cells`` (one stack) from step ``s0`` (``states``: each member's saved
    state there; ignored at ``s0 = 0``)."""
    base = cells[0]
    start = time.perf_counter()
    x, y, xt, yt = cell_data(base)
    net = build_network(base).train()
    m = len(cells)
    opt = StackedOptimizer(base, torch.tensor([c.lr for c in cells], dtype=_DTYPES[base.dtype], device=x.device))
    if s0:
        params, buffers = _stacked(states, "params"), _stacked(states, "buffers")
        opt.t = s0
        opt.state = {k: [torch.stack([st["state"][k][j] for st in states]) for j in range(len(v))]
                     for k, v in states[0]["state"].items()}
        losses: list[list[float]] = [list(st["losses"]) for st in states]
    else:
        params = {k: v.detach().expand(m, *v.shape).clone() for k, v in net.named_parameters()}
        buffers = {k: v.detach().expand(m, *v.shape).clone() for k, v in net.named_buffers()}
        losses = [[] for _ in cells]

    def loss_fn(p, b, xb, yb):
        return F.cross_entropy(torch.func.functional_call(net, (p, b), (xb,)), yb)

    grad_and_loss = torch.func.vmap(torch.func.grad_and_value(loss_fn), in_dims=(0, 0, None, None))
    idx = batch_indices(x.shape[0], base).to(x.device)
    alive = list(range(m))
    why: list[str | None] = [None] * m
    for t in range(s0, base.horizon):
        grads, loss = grad_and_loss(params, buffers, x[idx[t]], y[idx[t]])
        for j, (member, value) in enumerate(zip(alive, loss.tolist())):
            losses[member].append(value)
            why[member] = divergence(value, losses[member][0])
        params = opt.step(params, grads)
        keep = [j for j, member in enumerate(alive) if why[member] is None]
        if len(keep) < len(alive):
            index = torch.tensor(keep, dtype=torch.long, device=x.device)
            params = {k: v[index] for k, v in params.items()}
            buffers = {k: v[index] for k, v in buffers.items()}
            opt.keep(index)
            alive = [alive[j] for j in keep]
        if not alive:
            break
    if checkpoint.saves(base):
        for j, member in enumerate(alive):
            checkpoint.save(cells[member], checkpoint.VECTORISED, {
                "params": {k: v[j].clone() for k, v in params.items()},
                "buffers": {k: v[j].clone() for k, v in buffers.items()},
                "state": {k: [s[j].clone() for s in v] for k, v in opt.state.items()}, "losses": losses[member]})
    tests, passes = {}, 0
    if alive and base.stop is None:
        net.eval()
        forward = torch.func.vmap(lambda p, b, xb: torch.func.functional_call(net, (p, b), (xb,)),
                                  in_dims=(0, 0, None))
        res, passes = _evaluate(lambda xb: forward(params, buffers, xb), xt, yt)
        tests = dict(zip(alive, res)) if res else {}
    wall = (time.perf_counter() - start) / m
    return [record(c, losses[i], why[i], tests.get(i, (None, None)), "vectorised", wall,
                   passes if i in tests else 0, s0) for i, c in enumerate(cells)]


def train(cells: list[Cell], vectorise: bool = True) -> list[dict]:
    """Records of ``cells`` (cells differing only in lr), vectorised or one by one."""
    return train_group(cells) if vectorise else [train_cell(c) for c in cells]
