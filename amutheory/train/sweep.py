"""A learning-rate sweep: cells over depths x widths x rates x seeds, run where they are missing,
written as they finish, read back into one search per (depth, width).

:func:`run_sweep` is the whole pipeline behind ``amutheory sweep``:

1. check the output folder, the sweep's fixed fields (:mod:`amutheory.train.store`) and the
   data (loaded once here, so a missing folder or a batch larger than the data fails before
   any work);
2. group the cells: one group per (depth, width, seed), all its rates side by side (the
   vectorised engine); the group's composition depends only on the sweep, so a resumed group
   computes exactly what an uninterrupted one does, and a sweep with 4 seeds runs the same groups
   as the first 4 seeds of one with 8;
3. run the groups with a missing cell on the engine (:mod:`amutheory.train.engine`), appending
   each group's missing records as it finishes;
4. with ``refine = r``: per (depth, width), ``r`` more rates log-spaced strictly between the
   grid neighbours of the seed-mean argmin, run the same way;
5. one :class:`~amutheory.train.search.LrSearch` per (depth, width), the power laws of
   ``eta*_train`` in depth (per width) and in width (per depth), the same at shorter training
   horizons (:func:`horizon_study`), ``summary.json``, ``report.md`` and the figures.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np

from amutheory.train.cell import Cell
from amutheory.names import DIVERGED_SCORES
from amutheory.train.lock import holds_folder
from amutheory.train.search import SCORES, LrSearch, fit_power
from amutheory.train.store import append_records, check_meta, check_out_dir, read_table

def spec_for_data(spec, dataset: str, data_dir=None):
    """``spec`` with ``input_channels``, ``spatial`` and ``outputs`` those of ``dataset``'s images
    ``C x N x N`` as loaded, laid out as the family reads them (:meth:`Family.data_layout`: a 1-D model
    or a transformer reads ``N`` positions of ``C N`` features, an MLP ``C N^2`` features).  A dataset
    of sequences ``C x T`` (``digits-positions``) is read as ``T`` tokens of ``C`` features by a 1-D
    model or a transformer and as ``C T`` features by an MLP (:meth:`Family.sequence_layout`; a 2-D
    model is refused).  ``synthetic`` data takes the spec's own shape."""
    if dataset == "synthetic":
        return spec
    from amutheory.train.run import load_data

    data = load_data(dataset, data_dir)
    if len(data.input_shape) == 2:  # a sequence: C features at each of T tokens
        c, t = data.input_shape
        try:
            layout = spec.family_object.sequence_layout(spec, c, t)
        except ValueError as err:
            raise ValueError(f"dataset {dataset} is {t} tokens of {c} features: {err}") from None
        return spec.with_(**layout, outputs=data.classes)
    c, h, n = data.input_shape
    if h != n:
        raise ValueError(f"dataset {dataset} has {h}x{n} images; the models take square ones")
    classes = data.classes
    return spec.with_(**spec.family_object.data_layout(spec, c, n), outputs=classes)


def grid(lo: float, hi: float, points: int) -> list[float]:
    """``points`` rates log-spaced from ``lo`` to ``hi``."""
    for name, v in (("lr range low", lo), ("lr range high", hi)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a finite rate > 0, got {v}")
    if not hi > lo:
        raise ValueError(f"lr range must have low < high, got {lo:g}, {hi:g}")
    if isinstance(points, bool) or not isinstance(points, int) or points < 3:
        raise ValueError(f"points must be an integer >= 3, got {points!r}")
    return np.geomspace(lo, hi, points).tolist()


def _check_list(name: str, values, kind=int, minimum=1) -> list:
    if not isinstance(values, (list, tuple)) or not values:
        raise ValueError(f"{name} must be a non-empty list")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float) if kind is float else int):
            raise TypeError(f"{name} must hold {kind.__name__}s, got {v!r}")
        if not math.isfinite(v) or (v <= 0 if kind is float else v < minimum):
            raise ValueError(f"{name} must hold values {'> 0' if kind is float else f'>= {minimum}'}, got {v!r}")
        out.append(kind(v))
    if len(set(out)) != len(out):
        raise ValueError(f"{name} has a repeated value: {out}")
    return out


def check_run_options(engine, workers, threads, scheduler) -> None:
    from amutheory.train.engine import ENGINES

    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}; got {engine!r}")
    for name, v in (("workers", workers), ("threads", threads)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    if scheduler is not None and (not isinstance(scheduler, str) or "://" not in scheduler):
        raise ValueError(f"scheduler must be an address like tcp://HOST:8786, got {scheduler!r}")


def plan(template: Cell, depths, widths, lrs, seeds) -> list[list[Cell]]:
    """One group per (depth, width, seed): the cells at every rate."""
    return [[template.with_(spec=template.spec.with_(depth=L, width=n), lr=lr, seed=s) for lr in lrs]
            for L in depths for n in widths for s in seeds]


def fixed_fields(template: Cell) -> dict:
    d = template.identity()
    for k in ("lr", "seed"):
        d.pop(k)
    d["spec"] = {k: v for k, v in d["spec"].items() if k not in ("depth", "width")}
    return d


def progress_bar(total: int, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="cell", desc="sweep", dynamic_ncols=True, leave=True)


def run_missing(groups, out: Path, table: dict, run_opts: dict, bar=None) -> tuple[int, float]:
    """Run the groups with a missing cell; write their missing records; ``(cells run, seconds)``."""
    from amutheory.train.engine import run_groups

    todo = [g for g in groups if any(c.key() not in table for c in g)]
    if bar is not None:
        bar.update(sum(len(g) for g in groups) - sum(len(g) for g in todo))
    start, done = time.perf_counter(), 0
    for _, records in run_groups(todo, **run_opts):
        fresh = [r for r in records if r["key"] not in table]
        append_records(out, fresh)
        for r in fresh:
            table[r["key"]] = r
        done += len(records)
        if bar is not None:
            bar.update(len(records))
    return done, time.perf_counter() - start


def _score(rec: dict, score: str, cap: float | None = None) -> float:
    """A record's score; a diverged run scores ``+inf``, or ``cap`` where one is given (the chance loss:
    a run that diverged counts as one that learned nothing, so the seed mean stays finite)."""
    v = rec["score"] if score == "mean" else rec["final_loss"]
    if v is None:
        return math.inf if cap is None else cap
    return float(v)


def _score_at(rec: dict, horizon: int, cap: float | None = None) -> float:
    """The score (mean training loss) a run of ``horizon`` steps gets: its prefix's running mean
    (``+inf``, or ``cap``, where it diverged within them)."""
    dead = math.inf if cap is None else cap
    if rec["diverged"] and rec["diverged_step"] <= horizon - 1:
        return dead
    curve = rec["curve"]
    v = curve["mean_to"][curve["step"].index(horizon - 1)]
    return dead if v is None else float(v)


def _diverged_at(rec: dict, horizon: int | None) -> bool:
    if not rec["diverged"]:
        return False
    return horizon is None or rec["diverged_step"] <= horizon - 1


def _refined_rates(search: LrSearch, points: int) -> list[float]:
    """``points`` rates strictly between the neighbours of the grid argmin (log-spaced)."""
    lrs = search.lrs
    finite = np.isfinite(search.loss_mean)
    if not finite.any():
        return []
    i = int(np.argmin(np.where(finite, search.loss_mean, np.inf)))
    lo, hi = lrs[max(i - 1, 0)], lrs[min(i + 1, len(lrs) - 1)]
    new = np.geomspace(lo, hi, points + 2)[1:-1]
    return [float(v) for v in new if not np.isclose(v, lrs, rtol=1e-9).any()]


def _search(template, table, L, n, lrs, seeds, score, horizon: int | None = None, window: float | None = None,
            interval: str = "bootstrap", cap: float | None = None, per_seed: bool = False) -> LrSearch:
    scores, dead = np.empty((len(lrs), len(seeds))), np.zeros((len(lrs), len(seeds)), bool)
    for i, lr in enumerate(lrs):
        for j, s in enumerate(seeds):
            rec = table[template.with_(spec=template.spec.with_(depth=L, width=n), lr=lr, seed=s).key()]
            scores[i, j] = _score(rec, score, cap) if horizon is None else _score_at(rec, horizon, cap)
            dead[i, j] = _diverged_at(rec, horizon)
    return LrSearch(np.array(lrs), list(seeds), scores, depth=L, width=n, window=window, interval=interval,
                    diverged_runs=dead if cap is not None else None, per_seed=per_seed)


def diverged_cap(template, diverged: str) -> float | None:
    """What a diverged run scores: ``None`` (``+inf``, ``diverged="inf"``) or the chance loss
    ``ln(outputs)`` (``diverged="chance"``)."""
    if diverged not in DIVERGED_SCORES:
        raise ValueError(f"diverged must be one of {', '.join(DIVERGED_SCORES)}, got {diverged!r}")
    return None if diverged == "inf" else math.log(template.spec.outputs)


def refined_plan(template, table, depths, widths, lrs, seeds, score: str = "mean", refine: int = 0,
                 cap: float | None = None):
    """``(rates, groups)``: per (depth, width) the grid plus ``refine`` rates between the grid
    neighbours of its seed-mean argmin (read from ``table``; a diverged run scoring ``cap`` where one is
    given), and the groups that run them."""
    rates, extra = {(L, n): list(lrs) for L in depths for n in widths}, []
    if refine:
        for (L, n), rs in rates.items():
            new = _refined_rates(_search(template, table, L, n, rs, seeds, score, cap=cap), refine)
            rates[(L, n)] = rs + new
            if new:
                extra += plan(template, [L], [n], new, seeds)
    return rates, extra


def searches_at(template, table, rates: dict, seeds, score: str = "mean", horizon: int | None = None,
                window: float | None = None, interval: str = "bootstrap", cap: float | None = None,
                per_seed: bool = False) -> dict:
    """``{(depth, width): LrSearch}`` over ``rates[(depth, width)]``, scored over the whole run or
    (``horizon = T``) over its first T steps; ``window`` and ``interval`` as in
    :class:`~amutheory.train.search.LrSearch` (the smooth optimum and the jackknife CI)."""
    return {(L, n): _search(template, table, L, n, rs, seeds, score, horizon, window, interval, cap, per_seed)
            for (L, n), rs in rates.items()}


def horizon_study(template, table, rates, seeds, depths, widths) -> list[dict]:
    """Per training horizon T (:data:`~amutheory.train.run.HORIZONS` below the run's steps, and the
    steps): eta*_train of every (depth, width) scored by the mean loss over the first T steps, and
    the depth law's fit.  Exact, not re-run: the first T steps of a run are a T-step run."""
    from amutheory.train.run import HORIZONS

    out = []
    for T in [h for h in HORIZONS if h < template.steps] + [template.steps]:
        searches = [_search(template, table, L, n, rates[(L, n)], seeds, "mean", T) for L in depths for n in widths]
        row = {"steps": T, "runs": [{k: v for k, v in s.to_dict().items()
                                     if k in ("depth", "width", "eta_star_train", "eta_star_train_ci", "flags")}
                                    for s in searches]}
        if len(depths) > 1:
            row["depth_fit"] = [{"width": n, **(fit_power(depths, [s for s in searches if s.width == n]) or {})}
                                for n in widths]
        out.append(row)
    return out


@holds_folder("out", "sweep")
def run_sweep(template: Cell, depths, widths, lrs, seeds, out, *, score: str = "mean", refine: int = 0,
              engine: str = "local", workers: int = 1, threads: int = 1, vectorise: bool = True,
              scheduler: str | None = None, progress: bool = False, figures: bool = True,
              transfer_from: tuple | None = None) -> dict:
    """Run (or resume) the sweep in ``out``; its summary (the JSON contract of ``amutheory sweep``).
    ``transfer_from = (L, lr)``: every transfer rule's rate from ``lr`` tuned at depth ``L``, scored
    on the sweep (:mod:`amutheory.train.transfer_overlay`; summary key ``transfer_from``)."""
    if not isinstance(template, Cell):
        raise TypeError(f"template must be a Cell, got {type(template).__name__}")
    if transfer_from is not None:
        from amutheory.train.transfer_overlay import parse

        transfer_from = parse(transfer_from if isinstance(transfer_from, str) else ":".join(map(str, transfer_from)))
    depths, widths = _check_list("depths", depths), _check_list("widths", widths)
    lrs, seeds = _check_list("lrs", lrs, float), _check_list("seeds", seeds, int, 0)
    if score not in SCORES:
        raise ValueError(f"score must be one of {', '.join(SCORES)}; got {score!r}")
    if isinstance(refine, bool) or not isinstance(refine, int) or refine < 0:
        raise ValueError(f"refine must be an integer >= 0, got {refine!r}")
    check_run_options(engine, workers, threads, scheduler)
    from amutheory.train.run import cell_data

    for L in depths:  # every spec valid and the data loadable before any work
        for n in widths:
            cell_data(template.with_(spec=template.spec.with_(depth=L, width=n)))
    if transfer_from is not None:  # every rule's rate defined at every swept net, before any cell
        from amutheory.train.transfer_overlay import check_rates

        check_rates(template, depths, widths, *transfer_from)
    out = check_out_dir(out)
    check_meta(out, fixed_fields(template))
    table = read_table(out)
    run_opts = dict(engine=engine, workers=workers, threads=threads, vectorise=vectorise, scheduler=scheduler)
    groups = plan(template, depths, widths, lrs, seeds)
    bar = progress_bar(sum(len(g) for g in groups), progress)
    ran, seconds = run_missing(groups, out, table, run_opts, bar)
    rates, extra = refined_plan(template, table, depths, widths, lrs, seeds, score, refine)
    if extra:
        if bar is not None:
            bar.total += sum(len(g) for g in extra)
        more, secs = run_missing(extra, out, table, run_opts, bar)
        ran, seconds = ran + more, seconds + secs
    if bar is not None:
        bar.close()
    searches = [_search(template, table, L, n, rates[(L, n)], seeds, score) for L in depths for n in widths]
    summary = summarise(template, searches, depths, widths, score, table, rates, seeds)
    if score == "mean":
        summary["horizons"] = horizon_study(template, table, rates, seeds, depths, widths)
    if transfer_from is not None:
        from amutheory.train.transfer_overlay import overlay

        summary["transfer_from"] = overlay(template, searches, *transfer_from)
    summary["this_run"] = {"cells_run": ran, "seconds": seconds}
    write_outputs(out, summary, searches, figures)
    return summary


def summarise(template, searches, depths, widths, score, table, rates, seeds) -> dict:
    """The JSON contract: ``runs`` (one search per depth and width) and, for a single one, its keys
    at the top level too; the power laws of ``eta*_train`` in depth and width; the cost."""
    from amutheory.train.learning import DOES_NOT_LEARN, chance_loss, learns

    runs = [s.to_dict() for s in searches]
    chance = chance_loss(template.spec.outputs)
    for run, s in zip(runs, searches):  # does the net learn? held-out accuracy at the grid optimum
        recs = [] if not np.isfinite(s.eta_star_grid) else [
            table[template.with_(spec=template.spec.with_(depth=s.depth, width=s.width), lr=float(s.eta_star_grid),
                                 seed=seed).key()] for seed in seeds]
        accs = [r["test_accuracy"] for r in recs if r["test_accuracy"] is not None]
        finals = [r["final_loss"] for r in recs if r.get("final_loss") is not None]
        run["test_accuracy_at_grid_optimum"] = float(np.mean(accs)) if accs else None
        run["final_loss_at_optimum"] = float(np.mean(finals)) if finals else None
        run["chance_loss"] = chance
        run["learns"] = learns(run["final_loss_at_optimum"], template.spec.outputs)
    keys = [template.with_(spec=template.spec.with_(depth=L, width=n), lr=lr, seed=s).key()
            for (L, n), rs in rates.items() for lr in rs for s in seeds]
    recs = [table[k] for k in keys]
    from amutheory.train.described import model_description, summary_template

    summary = {"template": summary_template(fixed_fields(template)), "score": score, "chance_loss": chance,
               "does_not_learn_threshold": DOES_NOT_LEARN, "depths": list(depths),
               "widths": list(widths), "seeds": list(seeds), "runs": runs,
               "cells": len(keys), "forward_passes": sum(r["forward_passes"] for r in recs),
               "backward_passes": sum(r["backward_passes"] for r in recs),
               "train_seconds": sum(r["timing"]["wall_s"] for r in recs),
               "peak_rss_mb": max((r["timing"].get("peak_rss_mb", 0.0) for r in recs), default=0.0)}
    if template.model is not None:  # a user's factory: described as the model it is
        summary["model"] = model_description(template, depths, widths, "eta*_train: the rate that minimises the "
                                             f"{'mean training loss over the run' if score == 'mean' else 'score'}"
                                             ", per depth and width, on a log grid of rates and seeds")
    if len(runs) == 1:
        summary.update({k: v for k, v in runs[0].items() if k not in ("depth", "width")})
    if len(depths) > 1:
        summary["depth_fit"] = [{"width": n, **(fit_power(depths, [s for s in searches if s.width == n]) or {})}
                                for n in widths]
    if len(widths) > 1:
        summary["width_fit"] = [{"depth": L, **(fit_power(widths, [s for s in searches if s.depth == L]) or {})}
                                for L in depths]
    return summary


def _save(fig, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_outputs(out: Path, summary: dict, searches, figures: bool) -> None:
    """``summary.json``, ``report.md`` and (with ``figures``) ``transfer.png``, ``eta_star_depth.png``."""
    from amutheory.train.report import markdown

    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    names = []
    if figures:
        from amutheory.train.figures import eta_star_plot, transfer_plot

        by = "depth" if len(summary["depths"]) > 1 or len(summary["widths"]) == 1 else "width"
        _save(transfer_plot(searches, by=by, score=summary["score"], chance=summary.get("chance_loss"),
                            learns={(r["depth"], r["width"]): r.get("learns") for r in summary["runs"]},
                            overlay=summary.get("transfer_from")), out / "transfer.png")
        names.append("transfer.png")
        for axis, fits in (("depth", summary.get("depth_fit")), ("width", summary.get("width_fit"))):
            if fits:
                _save(eta_star_plot(searches, fits, axis), out / f"eta_star_{axis}.png")
                names.append(f"eta_star_{axis}.png")
    (out / "report.md").write_text(markdown(summary, names))
