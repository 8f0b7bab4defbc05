"""Successive halving over a grid of rates: one bracket of Hyperband / ASHA (Optuna's
``HyperbandPruner`` and ``SuccessiveHalvingPruner`` idea), run on this project's engine.

With ``N`` rates, reduction factor ``eta`` and ``T`` steps (the template's), ``K = floor(log_eta N)``
and the rungs are ``r_k = T / eta^(K - k)`` steps, ``k = 0 .. K`` (27 rates, ``eta = 3``: ``T/27``,
``T/9``, ``T/3``, ``T``).  Rung ``k`` reads ``floor(N / eta^k)`` survivors (27, 9, 3, 1): each is
scored by its seed-mean mean training loss over its first steps, the best ``1/eta`` go on, and the
best at the last rung is the winner.

A rung's reading: the running mean ``mean_to`` of the record's curve at the largest kept step
index ``s`` with ``s + 1 <= r_k`` (:func:`~amutheory.train.run.curve_steps` of a ``T``-step run:
every step up to 200 steps, so then ``s + 1 = floor(r_k)``), which is exactly the score a
``(s + 1)``-step run gets (the first steps of a run *are* a shorter run: same init, same
minibatches, constant rate).  A run that diverged at or before ``s`` scores ``+inf``.

What is charged is what the decision read: each rate ``s + 1`` steps of its last rung reading
(:func:`~amutheory.tuning.cost.charge`, a prefix), per seed.  The engine itself trains every grid
cell to ``T`` (one vectorised group per seed: the same work as a sweep of the grid, which the
prefix readings make exact), and that is reported beside it as ``cost_run``.
"""

from __future__ import annotations

import math

import numpy as np

from amutheory.spec import check_int, check_number
from amutheory.train.cell import Cell
from amutheory.train.run import curve_steps
from amutheory.tuning.cost import Cost, charge, total
from amutheory.tuning.range_test import check_seeds
from amutheory.tuning.runner import ensure


def rung_count(n_rates: int, eta: int) -> int:
    """``K = floor(log_eta n_rates)`` (exact in integers): the largest ``K`` with ``eta^K <= n_rates``."""
    k = 0
    while eta ** (k + 1) <= n_rates:
        k += 1
    return k


def rungs(n_rates: int, steps: int, eta: int) -> list[dict]:
    """The bracket: per rung ``{"budget": r_k, "read": s, "survivors": n_k}`` (``s``: the curve
    step read, ``s + 1 <= r_k``; ``n_k = floor(n_rates / eta^k)`` rates read there)."""
    K = rung_count(n_rates, eta)
    kept = curve_steps(steps)
    out = []
    for k in range(K + 1):
        budget = steps / eta ** (K - k)
        below = kept[kept + 1 <= budget + 1e-9]
        if not len(below):
            raise ValueError(f"steps = {steps} is too few for {n_rates} rates at eta = {eta}: the first rung "
                             f"has {budget:.3g} < 1 steps (need steps >= eta^{K} = {eta ** K})")
        out.append({"budget": budget, "read": int(below[-1]), "survivors": n_rates // eta ** k})
    return out


def score_at(record: dict, s: int) -> float:
    """The mean training loss of ``record``'s first ``s + 1`` steps (``+inf`` if it diverged at or
    before step ``s``).  Where ``s`` is not a kept step of the record (a run longer than 200 steps
    that diverged later, its curve thinned over fewer steps), its largest kept step below ``s``."""
    if record["diverged"] and record["diverged_step"] <= s:
        return math.inf
    steps, means = record["curve"]["step"], record["curve"]["mean_to"]
    i = int(np.searchsorted(steps, s, side="right")) - 1
    v = means[i]
    return math.inf if v is None else float(v)


def halve(lrs: list[float], records: list[list[dict]], steps: int, eta: int = 3) -> dict:
    """Successive halving over ``records[i][j]`` (rate ``lrs[i]``, seed ``j``, runs of ``steps``
    steps): ``{"lr", "rungs": [{steps, rates, scores, kept}], "charged": [steps read per rate]}``.
    Ties rank by the rates' order in ``lrs``; ``lr`` is ``None`` when the winner's score is +inf."""
    alive = list(range(len(lrs)))
    charged = [0] * len(lrs)
    out = []
    plan = rungs(len(lrs), steps, eta)
    for k, rung in enumerate(plan):
        s = rung["read"]
        scores = {i: float(np.mean([score_at(r, s) for r in records[i]])) for i in alive}
        for i in alive:
            charged[i] = s + 1
        ranked = sorted(alive, key=lambda i: (scores[i], i))
        keep = ranked[:1] if k == len(plan) - 1 else ranked[:max(1, len(alive) // eta)]
        out.append({"steps": s + 1, "rates": [lrs[i] for i in alive],
                    "scores": [None if math.isinf(scores[i]) else scores[i] for i in alive],
                    "kept": [lrs[i] for i in sorted(keep)]})
        last_scores, alive = scores, sorted(keep)
    best = alive[0]
    return {"lr": None if math.isinf(last_scores[best]) else lrs[best], "rungs": out, "charged": charged}


def check_grid(lrs) -> list[float]:
    if isinstance(lrs, (str, bytes)) or not hasattr(lrs, "__iter__"):
        raise TypeError(f"lrs must be a list of rates, got {lrs!r}")
    lrs = [check_number("lrs", v, positive=True) for v in lrs]
    if len(lrs) < 2 or len(set(lrs)) != len(lrs):
        raise ValueError(f"lrs must hold at least 2 distinct rates, got {lrs}")
    return lrs


def successive_halving(template: Cell, depth: int, width: int, lrs, seeds, eta: int = 3, *,
                       out, table: dict, run_opts: dict) -> dict:
    """Successive halving of ``template`` at ``depth`` x ``width`` over the grid ``lrs`` (each rate
    run at every seed for ``template.steps`` steps, trained where ``table`` lacks it); the JSON-ready
    result (``method``, ``lr``, ``rungs``, ``trials``, ``cost`` charged, ``cost_run`` trained)."""
    if not isinstance(template, Cell):
        raise TypeError(f"template must be a Cell, got {type(template).__name__}")
    lrs, seeds = check_grid(lrs), check_seeds(seeds)
    eta = check_int("eta", eta, 2)
    steps = template.steps
    rungs(len(lrs), steps, eta)  # refuses a bracket too deep for the steps before any training
    base = template.with_(spec=template.spec.with_(depth=depth, width=width))
    cells = [[base.with_(lr=lr, seed=s) for s in seeds] for lr in lrs]
    flat = ensure([c for row in cells for c in row], out, table, run_opts)
    records = [flat[i * len(seeds):(i + 1) * len(seeds)] for i in range(len(lrs))]
    result = halve(lrs, records, steps, eta)
    threads = run_opts.get("threads", 1)
    cost = Cost()
    for row, t in zip(records, result["charged"]):
        for r in row:
            cost = cost + charge(r, steps=t, threads=threads)
    return {"method": "successive_halving", "depth": depth, "width": width, "eta": eta, "lr": result["lr"],
            "rungs": result["rungs"],
            "trials": [{"key": r["key"], "lr": lr, "seed": s, "steps_charged": min(t, int(r["backward_passes"]))}
                       for lr, row, t in zip(lrs, records, result["charged"]) for s, r in zip(seeds, row)],
            "cost": cost.to_dict(), "cost_run": total(flat, threads=threads).to_dict()}
