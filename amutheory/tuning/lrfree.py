"""Learning-rate-free optimizers as a baseline beside the searches: run one, choose no rate.

Prodigy (``prodigyopt.Prodigy``, Mishchenko & Defazio: Adam whose step size is estimated during the
run) and DoG (``dog.DoG``, Ivgi et al.: SGD whose step size is the distance travelled over the root
sum of squared gradient norms) pick their own step size, so the "search" is one run per seed: the
template's net at ``depth`` x ``width``, the template's data, steps, batch and weight decay, the
learning-rate-free optimizer at the packages' default multiplier (the cell's ``lr = 1.0``), on the
same engine and store as the other searches (:func:`~amutheory.tuning.runner.ensure`: trained where
the table lacks it, else read back; the loop engine, which is the one that runs these optimizers).

Its result has no ``lr``: there is no rate to carry, so it is compared with the searches by regret,
its seed-mean score (``score_mean``, the papers' mean training loss, the same number the other
searches are ranked by) against the best rate's of a sweep of the same cells.  Its cost is every
step it ran (:func:`~amutheory.tuning.cost.total`).  DoG's step is in the units of an SGD rate, but
the record does not carry it (the package keeps it on the optimizer, not in the loss curve the store
keeps), so none is reported: no "effective rate" is made up here.

Needs the optional extra ``lrfree`` (``pip install -e ".[lrfree]"``); a cell of either refuses to be
built without it.
"""

from __future__ import annotations

import math

import numpy as np

from amutheory.names import LR_FREE_OPTIMIZERS
from amutheory.spec import check_choice, check_int
from amutheory.train.cell import Cell
from amutheory.tuning.cost import total
from amutheory.tuning.range_test import check_seeds
from amutheory.tuning.runner import ensure

#: the cell's ``lr`` for a learning-rate-free optimizer: the packages' default multiplier
MULTIPLIER = 1.0


def _mean(values: list) -> float | None:
    """The mean of ``values``, ``None`` where any is ``None`` (a diverged run: +inf)."""
    if any(v is None for v in values):
        return None
    m = float(np.mean(values))
    return m if math.isfinite(m) else None


def lr_free(template: Cell, depth: int, width: int, optimizer: str, seeds, *, out, table: dict,
            run_opts: dict) -> dict:
    """One run of the learning-rate-free ``optimizer`` (``prodigy`` or ``dog``) per seed of ``seeds``,
    ``template`` at ``depth`` x ``width`` with ``lr = 1.0`` (the multiplier; the template's rate,
    optimizer and momentum are not used: a template with momentum or a schedule is refused), trained
    where ``table`` lacks it (stored in ``out``); the JSON-ready result: ``method``
    (``"lr-free:" + optimizer``), ``depth``, ``width``, ``optimizer``, ``seeds``, ``score_mean`` and
    ``final_loss_mean`` (seed means; ``None`` where any seed diverged), ``diverged`` (how many seeds),
    ``trials`` (per seed: ``key``, ``seed``, ``score``, ``final_loss``, ``diverged``) and ``cost``
    (every step run)."""
    if not isinstance(template, Cell):
        raise TypeError(f"template must be a Cell, got {type(template).__name__}")
    depth, width = check_int("depth", depth, 1), check_int("width", width, 1)
    optimizer = check_choice("optimizer", optimizer, LR_FREE_OPTIMIZERS)
    seeds = check_seeds(seeds)
    if template.momentum:
        raise ValueError(f"template has momentum = {template.momentum}: {optimizer} takes none (set it to 0)")
    if template.schedule is not None:
        raise ValueError(f"template has the schedule {template.schedule!r}: a learning-rate-free run has none")
    if out is None:
        raise TypeError("out must be the store's folder (a path), got None")
    if not isinstance(table, dict):
        raise TypeError(f"table must be a dict (the store's table), got {type(table).__name__}")
    if not isinstance(run_opts, dict):
        raise TypeError(f"run_opts must be a dict, got {type(run_opts).__name__}")
    base = template.with_(spec=template.spec.with_(depth=depth, width=width), optimizer=optimizer, lr=MULTIPLIER)
    records = ensure([base.with_(seed=s) for s in seeds], out, table, run_opts)
    trials = [{"key": r["key"], "seed": s, "score": r["score"], "final_loss": r["final_loss"],
               "diverged": bool(r["diverged"])} for s, r in zip(seeds, records)]
    return {"method": f"lr-free:{optimizer}", "depth": depth, "width": width, "optimizer": optimizer,
            "seeds": seeds, "score_mean": _mean([t["score"] for t in trials]),
            "final_loss_mean": _mean([t["final_loss"] for t in trials]),
            "diverged": sum(t["diverged"] for t in trials), "trials": trials,
            "cost": total(records, threads=run_opts.get("threads", 1)).to_dict()}
