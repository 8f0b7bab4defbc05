"""``amutheory tune``: the guided search at every target depth, through the sweep's store and engines.

:func:`tune` checks everything before any work (the template, the depths, the source rate and its CI,
the rule, the seeds, the data at every depth, the output folder: a folder a sweep of the same fixed
fields wrote is shared, cell for cell), then per target depth takes the prior
(:mod:`amutheory.tuning.prior`) and runs the search: by default the multi-fidelity search
(:mod:`amutheory.tuning.fidelity`; its rungs' states kept in ``out/checkpoints``), or with
``method="bracket"`` the bracket of issue 40 (:mod:`amutheory.tuning.guided`), training
the cells it asks for where the table lacks them (:mod:`amutheory.tuning.runner`).  It writes
``tune.json`` (the JSON contract), ``tune.md`` and ``tune.png`` beside ``cells.jsonl``.

Cost (:mod:`amutheory.tuning.cost`): ``prior`` (the rule: nothing, except ``probe-run``'s short runs;
the source depth's tuned rate is the user's and is not charged) and ``confirmation`` (every cell the search read), summed in ``cost``;
``this_run`` says what this call trained (a resumed call trains only what was missing).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

from amutheory.train.cell import Cell
from amutheory.train.lock import holds_folder
from amutheory.tuning.cost import Cost, total
from amutheory.tuning.fidelity import Fidelity
from amutheory.tuning.fidelity import search as fidelity_search
from amutheory.tuning.guided import Bracket, search

OUT = "tune.json"
#: the searches of ``tune``: the multi-fidelity search (the default) and the bracket of issue 40
METHODS = ("fidelity", "bracket")
#: the folder (inside ``out``) where the multi-fidelity rungs keep their runs' states
CHECKPOINTS = "checkpoints"


def _check(template, depths, from_depth, from_lr, from_lr_ci, rule, seeds, seed_start) -> tuple:
    from amutheory.spec import check_int
    from amutheory.train.sweep import _check_list
    from amutheory.names import RULE_CHOICES as RULES
    from amutheory.transfer_interval import check_lr_ci

    if not isinstance(template, Cell):
        raise TypeError(f"template must be a Cell, got {type(template).__name__}")
    if isinstance(depths, int) and not isinstance(depths, bool):
        depths = [depths]
    depths = _check_list("depths", depths)
    from_depth = check_int("from_depth", from_depth, 1)
    if isinstance(from_lr, bool) or not isinstance(from_lr, (int, float)) or not math.isfinite(from_lr) \
            or from_lr <= 0:
        raise ValueError(f"from_lr must be a finite rate > 0, got {from_lr!r}")
    ci = check_lr_ci(from_lr_ci, float(from_lr))
    if rule is not None and rule not in RULES:
        raise ValueError(f"rule must be one of {', '.join(RULES)}; got {rule!r}")
    seeds = check_int("seeds", seeds, 2)
    seed_start = check_int("seed_start", seed_start, 0)
    return depths, from_depth, float(from_lr), ci, list(range(seed_start, seed_start + seeds))


def _trial(depth: int, width: int, t: dict, steps: int) -> dict:
    rec = t["record"]
    return {"depth": depth, "width": width, "lr": t["lr"], "seed": t["seed"], "round": t["round"],
            "horizon": t.get("horizon") or steps, "trained_steps": rec.get("trained_steps", rec["backward_passes"]),
            "phase": "confirmation", "key": rec["key"], "score": rec["score"], "final_loss": rec["final_loss"],
            "diverged": rec["diverged"], "test_accuracy": rec["test_accuracy"]}


@holds_folder("out", "tune")
def tune(template: Cell, depths, *, from_depth: int, from_lr: float, from_lr_ci=None, rule: str | None = None,
         out, seeds: int = 5, seed_start: int = 100, bracket: Bracket | None = None, method: str = "fidelity",
         fidelity: Fidelity | None = None, engine: str = "local",
         workers: int = 1, threads: int = 1, vectorise: bool = True, scheduler: str | None = None,
         progress: bool = False, figures: bool = True, errors=None, probe: bool = True, probe_seeds=None,
         probe_budget=None, bridge_file=None) -> dict:
    """Tune the learning rate of ``template``'s net at each of ``depths`` (module docstring); the
    JSON contract of ``amutheory tune``.  ``method``: ``"fidelity"`` (default; settings ``fidelity``, a
    :class:`~amutheory.tuning.fidelity.Fidelity`) or ``"bracket"`` (settings ``bracket``, a
    :class:`~amutheory.tuning.guided.Bracket`).  ``seeds`` is the cap (seeds ``seed_start ..``).  ``probe``,
    ``probe_seeds``, ``probe_budget``, ``bridge_file``: the prior's probe rule
    (:func:`amutheory.tuning.prior.prior`)."""
    from amutheory.train.learning import DOES_NOT_LEARN, chance_loss, learns
    from amutheory.train.run import cell_data
    from amutheory.train.store import check_meta, check_out_dir, read_table
    from amutheory.train.sweep import check_run_options, fixed_fields, progress_bar
    from amutheory.tuning.prior import prior as prior_at
    from amutheory.tuning.runner import ensure

    depths, from_depth, from_lr, ci, seed_list = _check(template, depths, from_depth, from_lr, from_lr_ci, rule,
                                                        seeds, seed_start)
    from amutheory.transfer_probe import check_budget, check_seeds

    if probe_seeds is not None:
        check_seeds(probe_seeds)
    if probe_budget is not None:
        check_budget(probe_budget)
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    bracket = Bracket() if bracket is None else bracket
    if not isinstance(bracket, Bracket):
        raise TypeError(f"bracket must be a Bracket, got {type(bracket).__name__}")
    fidelity = Fidelity() if fidelity is None else fidelity
    if not isinstance(fidelity, Fidelity):
        raise TypeError(f"fidelity must be a Fidelity, got {type(fidelity).__name__}")
    if method == "bracket" and len(seed_list) < bracket.min_seeds:
        raise ValueError(f"seeds ({len(seed_list)}) must be at least the bracket's min_seeds ({bracket.min_seeds})")
    if method == "fidelity":
        if len(seed_list) < fidelity.confirm_seeds:
            raise ValueError(f"seeds ({len(seed_list)}) must be at least fidelity.confirm_seeds "
                             f"({fidelity.confirm_seeds})")
        fidelity.rungs(template.steps)
    check_run_options(engine, workers, threads, scheduler)
    width = template.width
    for L in sorted(set(depths) | {from_depth}):  # every net valid and the data loadable before any work
        cell_data(template.with_(spec=template.spec.with_(depth=L)))
    out = check_out_dir(out)
    check_meta(out, fixed_fields(template))
    table = read_table(out)
    run_opts = dict(engine=engine, workers=workers, threads=threads, vectorise=vectorise, scheduler=scheduler)
    steps = template.steps
    if method == "fidelity":  # a rung's state is kept beside the table, so a contender goes on from it
        template = template.with_(checkpoints=str(out / CHECKPOINTS))
    per_depth = bracket.max_runs if method == "bracket" else \
        fidelity.points + fidelity.survivors + fidelity.max_final + 3 * (fidelity.confirm_seeds - 1)
    bar = progress_bar(per_depth * len(depths), progress)
    trained, start = 0, time.perf_counter()
    targets, trials = [], []
    for L in depths:
        prior_records = []

        def run_prior(cells):
            """The prior's own cells (``probe-run``'s short runs): stored, and charged to the prior."""
            nonlocal trained
            before = len(table)
            recs = ensure(cells, out, table, run_opts)
            trained += len(table) - before
            prior_records.extend(recs)
            return recs

        pr = prior_at(template, from_depth, from_lr, L, width, rule=rule, from_lr_ci=ci, errors=errors, probe=probe,
                      probe_seeds=probe_seeds, probe_budget=probe_budget, bridge_file=bridge_file,
                      run_executor=run_prior)

        def run(requests, L=L):
            nonlocal trained
            cells = [template.with_(spec=template.spec.with_(depth=L), lr=q[0], seed=q[1],
                                    stop=q[2] if len(q) > 2 else None) for q in requests]
            before = len(table)
            recs = ensure(cells, out, table, run_opts)
            trained += len(table) - before
            if bar is not None:
                bar.update(len(cells))
            return recs

        if method == "bracket":
            res = search(pr["lr"], bracket, seed_list, run)
        else:
            res = fidelity_search(pr["lr"], fidelity, seed_list, steps, template.spec.outputs, run,
                                  interval=pr["lr_interval"])
        raw = res.pop("trials")
        recs = [t["record"] for t in raw]
        rows = [_trial(L, width, t, steps) for t in raw]
        trials += rows
        cost = total(prior_records, threads)  # the prior: a rule, no cell (probe-run: its short runs)
        conf = total(recs, threads)
        best = min((r for r in res["rates"] if r["loss_mean"] is not None), key=lambda r: r["loss_mean"],
                   default=None)
        finals = [] if best is None else [t["final_loss"] for t in rows if t["lr"] == best["lr"]
                                          and t["horizon"] == steps and t["final_loss"] is not None]
        final = sum(finals) / len(finals) if finals else None
        targets.append({"depth": L, "width": width, **res, "prior": pr,
                        "final_loss_at_optimum": final, "learns": learns(final, template.spec.outputs),
                        "cost": {**(cost + conf).to_dict(), "prior": cost.to_dict(), "confirmation": conf.to_dict()}})
    if bar is not None:
        bar.close()
    prior_cost = Cost()
    conf_cost = Cost()
    for t in targets:
        prior_cost = prior_cost + Cost(**t["cost"]["prior"])
        conf_cost = conf_cost + Cost(**t["cost"]["confirmation"])
    from amutheory.train.described import model_description, summary_template

    summary = {"method": "guided", "search": method, "template": summary_template(fixed_fields(template)), "depths": depths,
               "width": width,
               "from": {"depth": from_depth, "lr": from_lr, "lr_ci": None if ci is None else list(ci)},
               "rule": rule, "bracket": bracket.to_dict(), "fidelity": fidelity.to_dict(), "seeds": seed_list,
               "chance_loss": chance_loss(template.spec.outputs), "does_not_learn_threshold": DOES_NOT_LEARN,
               "targets": targets, "trials": trials,
               "cost": {**(prior_cost + conf_cost).to_dict(), "prior": prior_cost.to_dict(),
                        "confirmation": conf_cost.to_dict(),
                        "charged": "prior: the rule (no cell; the source depth's tuned rate is the user's; rule "
                                   "probe-run: its short runs at both depths, charged to each target that read them); "
                                   "confirmation: every cell the search read, to its end (a rung that went on from a "
                                   "shorter rung's saved state: only the steps after it)"},
               "this_run": {"cells_trained": trained, "seconds": time.perf_counter() - start}}
    if template.model is not None:  # a user's factory: described as the model it is
        summary["model"] = model_description(template, depths, [width], "eta*_train at each target depth: the "
                                             "rate that minimises the training score, found by a guided search "
                                             "started at the rule's transferred rate")
    if len(targets) == 1:
        summary.update({k: v for k, v in targets[0].items() if k not in ("depth", "width", "cost")})
    _write(out, summary, figures)
    return summary


def _write(out: Path, summary: dict, figures: bool) -> None:
    from amutheory.train.store import _json_ready
    from amutheory.tuning.report import markdown

    (out / OUT).write_text(json.dumps(_json_ready(summary), indent=1, sort_keys=True) + "\n")
    names = []
    if figures:
        from amutheory.tuning.figures import bracket_plot

        fig = bracket_plot(summary)
        fig.savefig(out / "tune.png", dpi=120, bbox_inches="tight")
        import matplotlib.pyplot as plt

        plt.close(fig)
        names.append("tune.png")
    (out / "tune.md").write_text(markdown(summary, names))
