"""Run the cells a search asks for, through the sweep's store and engines.

A search asks for cells a few at a time (a bracket, one more seed, a rung); :func:`ensure` runs the
ones the table lacks (grouped as the sweep groups them: the cells of one group differ only in their
rate and train side by side), appends each group's records as it finishes (``kill -9`` loses at
most the group in flight), and returns the records in the order asked.  A cell already in the table
is never trained again: a resumed search replays its decisions from the table and trains only what
the interrupted one had not finished.
"""

from __future__ import annotations

from pathlib import Path

from amutheory.train.cell import Cell
from amutheory.train.cell import group_cells as groups_of  # noqa: F401  (the name the searches use)


def ensure(cells: list[Cell], out: Path, table: dict, run_opts: dict, bar=None) -> list[dict]:
    """The records of ``cells`` (in order), training those missing from ``table`` (which grows)."""
    from amutheory.train.sweep import run_missing

    missing = [c for c in cells if c.key() not in table]
    if missing:
        run_missing(groups_of(missing), Path(out), table, run_opts, bar)
    return [table[c.key()] for c in cells]
