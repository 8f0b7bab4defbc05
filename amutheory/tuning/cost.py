"""What a search spends: cells, optimizer steps, forward passes and core-seconds.

A search is charged for the work its decision needed, not for what the engine happened to run:

* a cell trained to its end is charged its record as is (``steps``, ``forward_passes`` =
  training steps + held-out evaluation passes, ``core_seconds`` = its wall time x the torch
  threads it ran on);
* a cell of which only the first ``t`` steps were read (a successive-halving rung, a pruned
  Optuna trial: with a constant rate the first ``t`` steps of a run *are* a ``t``-step run) is
  charged ``t`` steps, ``t`` forward passes and ``t / steps`` of its core-seconds;
* a cell that went on from the saved state of a shorter cell of its run (a multi-fidelity rung,
  :mod:`amutheory.train.checkpoint`) is charged only the steps after that state;
* a probe used for a prior is charged its forward passes and seconds (:meth:`Cost.add`).

A :class:`Cost` adds up; ``to_dict`` is the JSON ``cost`` record (``cells``, ``steps``,
``forward_passes``, ``core_seconds``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Cost:
    cells: int = 0
    steps: int = 0
    forward_passes: int = 0
    core_seconds: float = 0.0

    def add(self, other: "Cost") -> "Cost":
        return Cost(self.cells + other.cells, self.steps + other.steps,
                    self.forward_passes + other.forward_passes, self.core_seconds + other.core_seconds)

    __add__ = add

    def to_dict(self) -> dict:
        return {"cells": self.cells, "steps": self.steps, "forward_passes": self.forward_passes,
                "core_seconds": float(self.core_seconds)}


def steps_run(record: dict) -> int:
    """The optimizer steps a record's run took (fewer than the cell's where it diverged), from step 0."""
    return int(record["backward_passes"])


def charge(record: dict, steps: int | None = None, threads: int = 1) -> Cost:
    """The cost of one record, read to its end (``steps=None``) or only to its first ``steps``
    steps (a prefix: no held-out evaluation is charged).  A record resumed from a saved state
    (``resumed_from = s``: a longer cell of a run stopped at step ``s``) is charged only the steps it
    trained after ``s``: the steps before were charged to the stopped cell."""
    ran = steps_run(record)
    s0 = int(record.get("resumed_from") or 0)
    wall = float(record["timing"]["wall_s"]) * threads
    if steps is None or steps >= ran:
        return Cost(1, ran - s0, int(record["forward_passes"]) - s0, wall)
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    read = max(0, steps - s0)
    return Cost(1, read, read, wall * read / max(ran - s0, 1))


def total(records, threads: int = 1) -> Cost:
    """The cost of ``records``, each read to its end."""
    out = Cost()
    for r in records:
        out = out + charge(r, threads=threads)
    return out
