"""An Optuna study over the learning rate, as a practitioner sets one up: a seeded TPE sampler over a
log-uniform rate in ``[lo, hi]`` and a Hyperband pruner (``min_resource`` about ``T/27``,
``max_resource = T``, reduction factor 3), run on this project's engine.  Needs the ``[tune]`` extra
(``pip install 'amutheory[tune]'``: Optuna).

Trials are asked ``batch`` at a time (``study.ask()``; ``batch`` defaults to the engine's workers,
as parallel workers would ask), their cells trained at once through the store (every trial's cell
trains to ``T`` steps; the cells of one seed form one vectorised group), then told back.  Each
trial reports its seed-mean running mean training loss (``mean_to``) at the rung points
``min_resource * 3^j`` below ``T`` and at ``T``, read at the largest stored step ``s`` with
``s + 1 <= r`` (every step up to 200 steps, so ``s + 1 = r``; the same score a ``r``-step run
gets), the reports of a batch interleaved rung by rung as parallel workers' would be.  After each
report the pruner is asked; a pruned trial is charged ``r`` steps per seed (a prefix, what it would
have run), a completed one its whole records.  A run that diverged at or before ``r`` reports
``+inf`` there and ends (it stopped training): pruned if the pruner says so, else completed with
``+inf``, charged the steps it ran.  The study's name is fixed, so Hyperband's bracket of each trial
(a hash of the name and trial number) and the whole search replay the same from the same table.
"""

from __future__ import annotations

import math

import numpy as np

from amutheory.spec import check_int
from amutheory.train.cell import Cell
from amutheory.tuning.cost import Cost, charge, total
from amutheory.tuning.halving import score_at
from amutheory.tuning.range_test import check_ramp, check_seeds
from amutheory.tuning.runner import ensure

#: the study's name (Hyperband assigns brackets by a hash of it and the trial number)
STUDY_NAME = "amutheory-tune"
REDUCTION = 3


def _optuna():
    try:
        import optuna
    except ImportError:
        raise ValueError("needs optuna: pip install 'amutheory[tune]'") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def report_points(steps: int, min_resource: int, reduction: int = REDUCTION) -> list[int]:
    """The steps a trial reports at: ``min_resource * reduction^j`` below ``steps``, then ``steps``."""
    out, r = [], min_resource
    while r < steps:
        out.append(r)
        r *= reduction
    return out + [steps]


def optuna_search(template: Cell, depth: int, width: int, lo: float, hi: float, seeds=(0,), n_trials: int = 27,
                  batch: int | None = None, sampler_seed: int = 0, min_resource: int | None = None, *,
                  out, table: dict, run_opts: dict) -> dict:
    """A TPE + Hyperband study of ``n_trials`` over ``lr`` in ``[lo, hi]`` (log-uniform) for
    ``template`` at ``depth`` x ``width``; the JSON-ready result (``method``, ``lr`` = best completed
    trial's, ``trials``, ``cost`` charged, ``cost_run`` trained)."""
    optuna = _optuna()
    if not isinstance(template, Cell):
        raise TypeError(f"template must be a Cell, got {type(template).__name__}")
    lo, hi, _ = check_ramp(lo, hi, 3)
    seeds = check_seeds(seeds)
    n_trials = check_int("n_trials", n_trials, 1)
    batch = check_int("batch", run_opts.get("workers", 1) if batch is None else batch, 1)
    sampler_seed = check_int("sampler_seed", sampler_seed, 0)
    steps = template.steps
    min_resource = check_int("min_resource", max(1, steps // 27) if min_resource is None else min_resource, 1,
                             steps, "the most steps a trial runs")
    points = report_points(steps, min_resource)
    study = optuna.create_study(
        study_name=STUDY_NAME, direction="minimize", sampler=optuna.samplers.TPESampler(seed=sampler_seed),
        pruner=optuna.pruners.HyperbandPruner(min_resource=min_resource, max_resource=steps,
                                              reduction_factor=REDUCTION))
    base = template.with_(spec=template.spec.with_(depth=depth, width=width))
    threads = run_opts.get("threads", 1)
    trials, cost, ran = [], Cost(), {}
    while len(trials) < n_trials:
        asked = [study.ask() for _ in range(min(batch, n_trials - len(trials)))]
        lrs = [t.suggest_float("lr", lo, hi, log=True) for t in asked]
        cells = [[base.with_(lr=lr, seed=s) for s in seeds] for lr in lrs]
        records = ensure([c for row in cells for c in row], out, table, run_opts)
        rows = [records[i * len(seeds):(i + 1) * len(seeds)] for i in range(len(asked))]
        for row in rows:
            ran.update((r["key"], r) for r in row)
        ended = [None] * len(asked)  # (state, steps charged or None for the whole run, value)
        for r in points:
            for i, (trial, row) in enumerate(zip(asked, rows)):
                if ended[i] is not None:
                    continue
                gone = any(rec["diverged"] and rec["diverged_step"] <= r - 1 for rec in row)
                value = float(np.mean([score_at(rec, r - 1) for rec in row]))
                trial.report(value, r)
                if trial.should_prune():
                    ended[i] = ("pruned", r, value)
                elif gone or r == steps:
                    ended[i] = ("complete", None, value)
        for trial, lr, row, (state, upto, value) in zip(asked, lrs, rows, ended):
            if state == "pruned":
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            else:
                study.tell(trial, value)
            for rec in row:
                cost = cost + charge(rec, steps=upto, threads=threads)
            trials.append({"number": trial.number, "lr": lr, "state": state,
                           "value": None if math.isinf(value) else value,
                           "steps_charged": [min(upto or steps, int(rec["backward_passes"])) for rec in row],
                           "keys": [rec["key"] for rec in row]})
    done = [t for t in trials if t["state"] == "complete" and t["value"] is not None]
    best = min(done, key=lambda t: (t["value"], t["number"])) if done else None
    return {"method": "optuna", "depth": depth, "width": width, "lo": lo, "hi": hi, "seeds": seeds,
            "sampler": f"TPESampler(seed={sampler_seed})",
            "pruner": f"HyperbandPruner(min_resource={min_resource}, max_resource={steps}, "
                      f"reduction_factor={REDUCTION})",
            "report_steps": points, "lr": best["lr"] if best else None, "trials": trials,
            "cost": cost.to_dict(), "cost_run": total(ran.values(), threads=threads).to_dict()}
