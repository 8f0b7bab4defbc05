"""The saved state of a run stopped part-way, so that a longer cell of the same run goes on from it.

A multi-fidelity search judges rates on short horizons first and trains only contenders further
(:mod:`amutheory.tuning.fidelity`).  A cell with ``stop = s`` (:class:`~amutheory.train.cell.Cell`) is
the first ``s`` steps of its run; where the cell names a ``checkpoints`` folder, the state after those
steps is written to ``checkpoints/RUN_KEY/MODE-s.pt`` (``RUN_KEY``: :meth:`Cell.run_key`, the whole
run's key; ``MODE``: the engine, ``loop`` or ``vectorised``, whose states differ in form), and a later
cell of the same run with a larger horizon starts from the latest such state below its horizon
(:func:`latest_step`).  The state is everything the next step depends on: weights and buffers, the
optimizer's state and step count, the losses so far (the divergence rule reads the first), and in the
loop engine the global generator (dropout masks).  The minibatches need no state: they are a fixed
function of the seed and the step.

A state is written to a temporary file and renamed into place, so a ``kill -9`` leaves either the
whole file or none; a missing or unreadable state only means the cell trains from step 0.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

LOOP, VECTORISED = "loop", "vectorised"


def _folder(cell) -> Path:
    return Path(cell.checkpoints) / cell.run_key()


def latest_step(cell, mode: str) -> int:
    """The largest saved step of ``cell``'s run strictly below its horizon (0: none, or no folder)."""
    if cell.checkpoints is None:
        return 0
    folder = _folder(cell)
    if not folder.is_dir():
        return 0
    best = 0
    for f in folder.glob(f"{mode}-*.pt"):
        try:
            s = int(f.stem.split("-", 1)[1])
        except ValueError:
            continue
        if best < s < cell.horizon:
            best = s
    return best


def load(cell, mode: str, step: int) -> dict:
    """The state saved after ``step`` steps of ``cell``'s run."""
    return torch.load(_folder(cell) / f"{mode}-{step}.pt", map_location=cell.device, weights_only=False)


def save(cell, mode: str, state: dict) -> None:
    """Write the state after ``cell.horizon`` steps (atomically: a temporary file renamed into place)."""
    folder = _folder(cell)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{mode}-{cell.horizon}.pt"
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    torch.save(state, tmp)
    os.replace(tmp, path)


def saves(cell) -> bool:
    """Whether ``cell`` leaves a state behind: it stops part-way and names a folder."""
    return cell.stop is not None and cell.checkpoints is not None
