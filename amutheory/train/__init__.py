"""Training real networks: cells, engines, the learning-rate search and sweeps.

    from amutheory.train import Cell, train_cell, run_sweep

* :mod:`~amutheory.train.cell`: one run as a pure, seeded unit, and its key;
* :mod:`~amutheory.train.data`: datasets from local files or generated, never downloaded;
* :mod:`~amutheory.train.run`: the loop and the vectorised (vmap over rates) trainers;
* :mod:`~amutheory.train.optim`: their optimizers (``torch.optim`` and stacked);
* :mod:`~amutheory.train.store`: the append-only results table;
* :mod:`~amutheory.train.engine`: in process, a process pool or a Dask cluster;
* :mod:`~amutheory.train.search`: eta*_train, its bootstrap CI and the power laws;
* :mod:`~amutheory.train.sweep`: the pipeline behind ``amutheory sweep``;
* :mod:`~amutheory.train.figures`, :mod:`~amutheory.train.report`: its outputs.
"""

from amutheory.train.cell import Cell
from amutheory.train.search import LrSearch, fit_power
from amutheory.train.sweep import grid, run_sweep, spec_for_data


def train_cell(cell):
    """One cell's record (the loop engine); see :func:`amutheory.train.run.train_cell`."""
    from amutheory.train.run import train_cell as _train_cell

    return _train_cell(cell)


__all__ = ["Cell", "LrSearch", "fit_power", "grid", "run_sweep", "spec_for_data", "train_cell"]
