"""The tuning-cost benchmark of ``validate/plans/TUNE_BENCHMARK.md`` (issue 40), one stage at a time.

    python validate/tune_benchmark.py pilot            # sizes each net (seeds 900..902)
    python validate/tune_benchmark.py run              # references, source rates, every method
    python validate/tune_benchmark.py report           # docs/findings/tuning_cost.md and its figure

Every stage resumes from ``results/tune-benchmark/`` (one cell store per net); ``--workers 2 --threads 1``
by default.  ``run`` writes ``results/tune-benchmark/benchmark.json`` (one row per method and held-out
depth); ``report`` reads only that file and ``pilot.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

OUT = ROOT / "results" / "tune-benchmark"
PAGE = ROOT / "docs" / "findings" / "tuning_cost.md"
FIGURES = ROOT / "docs" / "findings" / "tuning"
NETS = ("chain", "resnet", "user")
WIDTH, STEPS, BATCH = 32, 300, 32
SOURCE_DEPTH = 2
CANDIDATES = ((4, 8, 16), (3, 6, 12), (3, 5, 8))
PILOT_SEEDS, PILOT_GRID = [900, 901, 902], (1e-3, 10.0, 9)
REF_SEEDS, REF_POINTS, REF_DECADES = [0, 1, 2], 36, 3.5
SOURCE_SEEDS, SOURCE_POINTS, SOURCE_REFINE = [100, 101, 102], 12, 2
RANGE_SEEDS, RANGE_STEPS = [100, 101, 102], 100
HALVING_RATES, HALVING_SEEDS = 27, [100]
OPTUNA_TRIALS, OPTUNA_SEEDS = 27, (100,)
USER_MODEL = "validate/user_models/tune_models.py:resmlp"


def template(net: str):
    from amutheory.spec import ArchSpec
    from amutheory.train import Cell, spec_for_data

    spec = {"chain": ArchSpec(family="conv", dim=1, width=WIDTH, depth=SOURCE_DEPTH),
            "resnet": ArchSpec(family="resnet", branch="conv-mlp", init="k-last", dim=1, width=WIDTH,
                               depth=SOURCE_DEPTH),
            "user": ArchSpec(family="conv", dim=2, width=WIDTH, depth=SOURCE_DEPTH)}[net]
    return Cell(spec=spec_for_data(spec, "digits"), lr=1.0, optimizer="sgd", dataset="digits", steps=STEPS,
                batch_size=BATCH, model=USER_MODEL if net == "user" else None)


class Store:
    """One net's cell table (``results/tune-benchmark/NAME``) and the engine options."""

    def __init__(self, name: str, tpl, run_opts: dict, root: Path = OUT):
        from amutheory.train.store import check_meta, check_out_dir, read_table
        from amutheory.train.sweep import fixed_fields

        root.mkdir(parents=True, exist_ok=True)
        self.out = check_out_dir(root / name)
        check_meta(self.out, fixed_fields(tpl))
        self.table, self.tpl, self.run_opts = read_table(self.out), tpl, run_opts

    def grid(self, depth: int, lrs, seeds, refine: int = 0):
        """The sweep's search at ``depth`` over ``lrs`` x ``seeds`` (trained where missing)."""
        from amutheory.train.sweep import plan, refined_plan, run_missing, searches_at

        run_missing(plan(self.tpl, [depth], [WIDTH], lrs, seeds), self.out, self.table, self.run_opts)
        rates, extra = refined_plan(self.tpl, self.table, [depth], [WIDTH], lrs, seeds, "mean", refine)
        if extra:
            run_missing(extra, self.out, self.table, self.run_opts)
        return searches_at(self.tpl, self.table, rates, seeds)[(depth, WIDTH)]

    def final_at_optimum(self, search) -> float | None:
        recs = [self.table[self.tpl.with_(spec=self.tpl.spec.with_(depth=search.depth), lr=float(search.eta_star_grid),
                                          seed=s).key()] for s in search.seeds] if math.isfinite(
            search.eta_star_grid) else []
        finals = [r["final_loss"] for r in recs if r["final_loss"] is not None]
        return float(np.mean(finals)) if len(finals) == len(recs) and recs else None


def say(*a):
    print(*a, flush=True)


# --------------------------------------------------------------------------- pilot
def pilot(run_opts) -> dict:
    from amutheory.train import grid

    path = OUT / "pilot.json"
    lrs = grid(*PILOT_GRID)
    result = json.loads(path.read_text()) if path.exists() else {}
    for net in NETS:
        if net in result:
            continue
        st = Store(f"pilot-{net}", template(net), run_opts)
        rows = {}
        shallow = st.grid(SOURCE_DEPTH, lrs, PILOT_SEEDS)
        rows[SOURCE_DEPTH] = _pilot_row(st, shallow)
        chosen = None
        for cand in CANDIDATES:
            deep = cand[-1]
            if deep not in rows:
                rows[deep] = _pilot_row(st, st.grid(deep, lrs, PILOT_SEEDS))
            say(f"pilot {net} depth {deep}: {rows[deep]}")
            if rows[deep]["learns"]:
                chosen = cand
                break
        if chosen is None:
            raise SystemExit(f"pilot: {net} does not learn at any candidate depth set; the plan has no size for it")
        c = math.sqrt(rows[SOURCE_DEPTH]["eta_star_grid"] * rows[chosen[-1]]["eta_star_grid"])
        result[net] = {"depths": list(chosen), "rows": {str(k): v for k, v in rows.items()},
                       "range": [c * 10 ** (-REF_DECADES / 2), c * 10 ** (REF_DECADES / 2)]}
        path.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return result


def _pilot_row(st, s) -> dict:
    from amutheory.train.learning import learns

    final = st.final_at_optimum(s)
    return {"eta_star_grid": float(s.eta_star_grid), "eta_star_train": float(s.eta_star_train),
            "flags": s.flags, "final_loss_at_optimum": final, "learns": learns(final, 10)}


# --------------------------------------------------------------------------- run
def run(run_opts) -> list:
    from amutheory.train import grid
    from amutheory.train.search import loss_at
    from amutheory.tuning.cost import total
    from amutheory.tuning.halving import successive_halving
    from amutheory.tuning.pipeline import tune
    from amutheory.tuning.prior import prior
    from amutheory.tuning.range_test import range_test

    sizes = json.loads((OUT / "pilot.json").read_text())
    rows = []
    for net in NETS:
        tpl, depths, (lo, hi) = template(net), sizes[net]["depths"], sizes[net]["range"]
        st = Store(net, tpl, run_opts)
        t0 = time.perf_counter()
        src = st.grid(SOURCE_DEPTH, grid(lo, hi, SOURCE_POINTS), SOURCE_SEEDS, refine=SOURCE_REFINE)
        from_lr, from_ci = float(src.eta_star_train), src.eta_star_train_ci
        if from_ci is not None and not from_ci[0] <= from_lr <= from_ci[1]:
            from_ci = None
        say(f"{net}: source depth {SOURCE_DEPTH}: eta* {from_lr:.4g} CI {from_ci} flags {src.flags}")
        for L in depths:
            ref = st.grid(L, grid(lo, hi, REF_POINTS), REF_SEEDS)
            best_i = int(np.nanargmin(np.where(np.isfinite(ref.loss_mean), ref.loss_mean, np.nan)))
            best = float(ref.loss_mean[best_i])
            noise = (ref.loss_ci[best_i][1] - ref.loss_ci[best_i][0]) / 2 if ref.loss_ci[best_i] else None
            ref_keys = [tpl.with_(spec=tpl.spec.with_(depth=L), lr=lr, seed=sd).key()
                        for lr in ref.lrs.tolist() for sd in REF_SEEDS]
            ref_cost = total([st.table[k] for k in ref_keys], run_opts["threads"]).to_dict()
            say(f"{net} L={L}: reference eta* {ref.eta_star_train:.4g} CI {ref.eta_star_train_ci} flags {ref.flags}")
            chosen = {}  # method -> (lr, cost dict)
            zero = {"cells": 0, "steps": 0, "forward_passes": 0, "core_seconds": 0.0}
            g = tune(tpl, [L], from_depth=SOURCE_DEPTH, from_lr=from_lr, from_lr_ci=from_ci, out=st.out,
                     seeds=5, seed_start=100, workers=run_opts["workers"], threads=run_opts["threads"],
                     figures=True)
            t = g["targets"][0]
            chosen["guided"] = (t["eta_star_train"], {k: t["cost"][k] for k in zero}, {
                "rule": t["prior"]["rule"], "prior": t["prior"]["lr"], "stop": t["stop"], "flags": t["flags"]})
            st.table.update(_reread(st))
            chosen["keep"] = (from_lr, zero, {})
            for rule, rate in prior(tpl, SOURCE_DEPTH, from_lr, L, WIDTH, rule="am-mup")["rules"].items():
                chosen[f"rule:{rule}"] = (rate, zero, {})
            rt = range_test(tpl, L, WIDTH, lo, hi, RANGE_SEEDS, RANGE_STEPS, out=st.out, table=st.table,
                            run_opts=run_opts)
            for name, s in rt["suggestions"].items():
                chosen[f"range-test:{name}"] = (s["lr"], rt["cost"], {"per_seed": s["per_seed"]})
            sh = successive_halving(tpl, L, WIDTH, grid(lo, hi, HALVING_RATES), HALVING_SEEDS, 3, out=st.out,
                                    table=st.table, run_opts=run_opts)
            chosen["halving"] = (sh["lr"], sh["cost"], {"cost_run": sh["cost_run"]})
            try:
                from amutheory.tuning.optuna_search import optuna_search

                op = optuna_search(tpl, L, WIDTH, lo, hi, seeds=OPTUNA_SEEDS, n_trials=OPTUNA_TRIALS, batch=2,
                                   sampler_seed=0, out=st.out, table=st.table, run_opts=run_opts)
                chosen["optuna"] = (op["lr"], op["cost"], {"cost_run": op["cost_run"]})
            except ValueError as exc:
                say(f"optuna skipped: {exc}")
            for method, (lr, cost, extra) in chosen.items():
                at = None if lr is None else loss_at(ref, lr)
                regret = None if at is None or not math.isfinite(at) else at - best
                ci = ref.eta_star_train_ci
                in_ci = bool(lr is not None and ci is not None and ci[0] <= lr <= ci[1])
                rows.append({"net": net, "depth": L, "method": method, "lr": lr,
                             "eta_star_ref": float(ref.eta_star_train), "ref_ci": ci, "ref_flags": ref.flags,
                             "ref_resolved": ref.resolved, "ref_final_loss": st.final_at_optimum(ref),
                             "distance": None if lr is None else abs(math.log(lr / ref.eta_star_train)),
                             "in_ci": in_ci, "regret": regret, "noise": noise,
                             "diverges": at is not None and not math.isfinite(at),
                             "lands": bool(in_ci or (regret is not None and noise is not None and regret <= noise)),
                             "cost": cost, "ref_cost": ref_cost, **extra})
            say(f"{net} L={L}: " + ", ".join(f"{r['method']} {'Y' if r['lands'] else 'n'}"
                                             for r in rows if r["net"] == net and r["depth"] == L))
        say(f"{net}: {time.perf_counter() - t0:.0f} s")
        (OUT / "benchmark.json").write_text(json.dumps(
            {"rows": rows, "pilot": sizes, "workers": run_opts["workers"], "threads": run_opts["threads"],
             "reference_core_seconds": sorted({(r["net"], r["depth"]): r["ref_cost"]["core_seconds"]
                                               for r in rows}.values())}, indent=1, default=_plain) + "\n")
    return rows


def _plain(obj):
    """numpy scalars as Python numbers (json's default hook)."""
    if hasattr(obj, "item"):
        return obj.item()
    raise TypeError(f"not JSON: {type(obj).__name__}")


def _reread(st) -> dict:
    from amutheory.train.store import read_table

    return read_table(st.out)


def stage_cli(description: str, stages: dict, argv=None) -> int:
    """``SCRIPT STAGE [--workers N --threads T]``: run ``stages[STAGE](run_opts)`` (a benchmark script's main)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("stage", choices=tuple(stages))
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args(argv)
    stages[a.stage](dict(engine="local", workers=a.workers, threads=a.threads, vectorise=True, scheduler=None))
    return 0


def _report(run_opts) -> None:
    from tune_report import write_page

    write_page(OUT / "benchmark.json", PAGE, FIGURES)


def main(argv=None) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    return stage_cli(__doc__.splitlines()[0], {"pilot": pilot, "run": run, "report": _report}, argv)


if __name__ == "__main__":
    sys.exit(main())
