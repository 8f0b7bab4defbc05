"""The tuning benchmark rerun of ``validate/plans/TUNE_BENCHMARK_2.md`` (issue 49), one stage at a time.

    python validate/tune_benchmark_2.py pilot     # sizes the held-out nets (seeds 900, 901)
    python validate/tune_benchmark_2.py references  # the source sweeps and reference grids only
    python validate/tune_benchmark_2.py run       # references, source rates, every method
    python validate/tune_benchmark_2.py seed-spread  # one seed's reference optimum against the three seeds'
    python validate/tune_benchmark_2.py report    # docs/findings/tuning_cost_2.md and its figure

Every stage resumes from ``results/tune-benchmark-2/`` (one cell store per net); rows are written after
every target depth.  ``--workers 2 --threads 1`` by default.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import tune_benchmark as tb  # noqa: E402

OUT = ROOT / "results" / "tune-benchmark-2"
PAGE = ROOT / "docs" / "findings" / "tuning_cost_2.md"
FIGURES = ROOT / "docs" / "findings" / "tuning2"
OLD_SIZES = ROOT / "docs" / "findings" / "tuning" / "benchmark.json"
OLD_NETS, NEW_NETS = ("chain", "resnet", "user"), ("resnet-bn", "transformer", "user-wrn")
CANDIDATES = {"resnet-bn": ((3, 6, 12), (3, 4, 6)), "transformer": ((3, 4, 6), (3, 4, 5)),
              "user-wrn": ((3, 4, 6), (3, 4, 5))}
PILOT_SEEDS = [900, 901]
REF_POINTS = {"old": 36, "new": 24}
LR_FREE, LR_FREE_SEEDS = ("prodigy", "dog"), [100, 101, 102]
WRN = "validate/user_models/practitioner_zoo.py:wrn"


def template(net: str):
    from amutheory.spec import ArchSpec
    from amutheory.train import Cell, spec_for_data

    if net in OLD_NETS:
        return tb.template(net)
    spec, data, extra = {
        "resnet-bn": (ArchSpec(family="resnet", branch="conv-mlp", init="k-last", dim=1, width=16, depth=2),
                      "digits", {"norm": "batch"}),
        "transformer": (ArchSpec(family="transformer", depth=2, width=32, heads=2, mlp_ratio=2, init="none"),
                        "digits-positions", {}),
        "user-wrn": (ArchSpec(family="conv", dim=2, width=8, depth=2), "digits", {"model": WRN}),
    }[net]
    return Cell(spec=spec_for_data(spec, data), lr=1.0, optimizer="sgd", dataset=data, steps=tb.STEPS,
                batch_size=tb.BATCH, **extra)


def store(net: str, run_opts: dict, prefix: str = ""):
    tpl = template(net)
    st = tb.Store(prefix + net, tpl, run_opts, root=OUT)
    return st


def say(*a):
    print(*a, flush=True)


# --------------------------------------------------------------------------- pilot (held-out nets)
def pilot(run_opts) -> dict:
    from amutheory.train import grid

    path = OUT / "pilot.json"
    lrs = grid(*tb.PILOT_GRID)
    result = json.loads(path.read_text()) if path.exists() else {}
    for net in NEW_NETS:
        if net in result:
            continue
        st = store(net, run_opts, "pilot-")
        w = st.tpl.width
        rows = {tb.SOURCE_DEPTH: _pilot_row(st, _grid(st, tb.SOURCE_DEPTH, lrs, PILOT_SEEDS))}
        chosen = None
        for cand in CANDIDATES[net]:
            deep = cand[-1]
            if deep not in rows:
                rows[deep] = _pilot_row(st, _grid(st, deep, lrs, PILOT_SEEDS))
            say(f"pilot {net} depth {deep} (width {w}): {rows[deep]}")
            if rows[deep]["learns"]:
                chosen = cand
                break
        entry = {"rows": {str(k): v for k, v in rows.items()}}
        if chosen is None:
            entry["dropped"] = "does not learn at the deepest depth of any candidate set"
        else:
            c = math.sqrt(rows[tb.SOURCE_DEPTH]["eta_star_grid"] * rows[chosen[-1]]["eta_star_grid"])
            entry.update(depths=list(chosen), range=[c * 10 ** (-tb.REF_DECADES / 2), c * 10 ** (tb.REF_DECADES / 2)])
        result[net] = entry
        path.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return result


def _grid(st, depth, lrs, seeds, refine: int = 0):
    """``Store.grid`` at the net's own width."""
    from amutheory.train.sweep import plan, refined_plan, run_missing, searches_at

    w = st.tpl.width
    run_missing(plan(st.tpl, [depth], [w], lrs, seeds), st.out, st.table, st.run_opts)
    rates, extra = refined_plan(st.tpl, st.table, [depth], [w], lrs, seeds, "mean", refine)
    if extra:
        run_missing(extra, st.out, st.table, st.run_opts)
    return searches_at(st.tpl, st.table, rates, seeds)[(depth, w)]


def _pilot_row(st, s) -> dict:
    from amutheory.train.learning import learns

    final = st.final_at_optimum(s)
    return {"eta_star_grid": float(s.eta_star_grid), "eta_star_train": float(s.eta_star_train),
            "flags": s.flags, "final_loss_at_optimum": final, "learns": learns(final, 10)}


# --------------------------------------------------------------------------- references first
def references(run_opts) -> None:
    """The source sweeps and reference grids of every net (what ``run`` reads first; no method runs)."""
    from amutheory.train import grid

    for net, z in sizes().items():
        st = store(net, run_opts)
        lo, hi = z["range"]
        _grid(st, tb.SOURCE_DEPTH, grid(lo, hi, tb.SOURCE_POINTS), tb.SOURCE_SEEDS, refine=tb.SOURCE_REFINE)
        for L in z["depths"]:
            ref = _grid(st, L, grid(lo, hi, z["points"]), tb.REF_SEEDS)
            say(f"{net} L={L}: reference eta* {ref.eta_star_train:.4g} CI {ref.eta_star_train_ci} flags {ref.flags}")


# --------------------------------------------------------------------------- run
def sizes() -> dict:
    old = json.loads(OLD_SIZES.read_text())["pilot"]
    new = json.loads((OUT / "pilot.json").read_text())
    out = {net: {"depths": old[net]["depths"], "range": old[net]["range"], "points": REF_POINTS["old"],
                 "held_out": False} for net in OLD_NETS}
    for net in NEW_NETS:
        if "depths" in new.get(net, {}):
            out[net] = {"depths": new[net]["depths"], "range": new[net]["range"], "points": REF_POINTS["new"],
                        "held_out": True}
    return out


def _tune_row(st, L, from_lr, from_ci, **opts) -> tuple:
    from amutheory.tuning.pipeline import tune

    g = tune(st.tpl, [L], from_depth=tb.SOURCE_DEPTH, from_lr=from_lr, from_lr_ci=from_ci, out=st.out, seeds=5,
             seed_start=100, workers=st.run_opts["workers"], threads=st.run_opts["threads"], figures=False, **opts)
    st.table.update(tb._reread(st))
    t = g["targets"][0]
    keep = ("cells", "steps", "forward_passes", "core_seconds")
    return t["eta_star_train"], {k: t["cost"][k] for k in keep}, {
        "rule": t["prior"]["rule"], "prior": t["prior"]["lr"], "prior_interval": t["prior"]["lr_interval"],
        "stop": t["stop"], "flags": t["flags"], "answer": t.get("answer"), "reason": t.get("reason"),
        "ci": t["eta_star_train_ci"], "runs": t["runs"]}


def run(run_opts) -> list:
    from amutheory.train import grid
    from amutheory.train.search import loss_at
    from amutheory.tuning.cost import total
    from amutheory.tuning.fidelity import Fidelity
    from amutheory.tuning.halving import successive_halving
    from amutheory.tuning.lrfree import lr_free
    from amutheory.tuning.prior import prior

    size = sizes()
    path = OUT / "benchmark.json"
    rows = json.loads(path.read_text())["rows"] if path.exists() else []
    done = {(r["net"], r["depth"]) for r in rows}
    for net in OLD_NETS + NEW_NETS:
        if net not in size:
            say(f"{net}: dropped by the pilot")
            continue
        z = size[net]
        depths, (lo, hi), w = z["depths"], z["range"], template(net).width
        if all((net, L) in done for L in depths):
            continue
        st = store(net, run_opts)
        tpl = st.tpl
        t0 = time.perf_counter()
        src = _grid(st, tb.SOURCE_DEPTH, grid(lo, hi, tb.SOURCE_POINTS), tb.SOURCE_SEEDS, refine=tb.SOURCE_REFINE)
        from_lr, from_ci = float(src.eta_star_train), src.eta_star_train_ci
        if from_ci is not None and not from_ci[0] <= from_lr <= from_ci[1]:
            from_ci = None
        say(f"{net}: source depth {tb.SOURCE_DEPTH}: eta* {from_lr:.4g} CI {from_ci} flags {src.flags}")
        for L in depths:
            if (net, L) in done:
                continue
            ref = _grid(st, L, grid(lo, hi, z["points"]), tb.REF_SEEDS)
            best_i = int(np.nanargmin(np.where(np.isfinite(ref.loss_mean), ref.loss_mean, np.nan)))
            best = float(ref.loss_mean[best_i])
            noise = (ref.loss_ci[best_i][1] - ref.loss_ci[best_i][0]) / 2 if ref.loss_ci[best_i] else None
            ref_keys = [tpl.with_(spec=tpl.spec.with_(depth=L), lr=lr, seed=sd).key()
                        for lr in ref.lrs.tolist() for sd in tb.REF_SEEDS]
            ref_cost = total([st.table[k] for k in ref_keys], run_opts["threads"]).to_dict()
            ref_final = st.final_at_optimum(ref)
            say(f"{net} L={L}: reference eta* {ref.eta_star_train:.4g} CI {ref.eta_star_train_ci} flags {ref.flags}")
            zero = {"cells": 0, "steps": 0, "forward_passes": 0, "core_seconds": 0.0}
            chosen = {"guided": _tune_row(st, L, from_lr, from_ci),
                      "guided+ci": _tune_row(st, L, from_lr, from_ci, fidelity=Fidelity(confirm_seeds=2))}
            if not z["held_out"]:
                chosen["bracket"] = _tune_row(st, L, from_lr, from_ci, method="bracket")
            chosen["keep"] = (from_lr, zero, {})
            for rule, rate in prior(tpl, tb.SOURCE_DEPTH, from_lr, L, w, rule="am-mup", probe=False)["rules"].items():
                chosen[f"rule:{rule}"] = (rate, zero, {})
            sh = successive_halving(tpl, L, w, grid(lo, hi, tb.HALVING_RATES), tb.HALVING_SEEDS, 3, out=st.out,
                                    table=st.table, run_opts=run_opts)
            chosen["halving"] = (sh["lr"], sh["cost"], {"cost_run": sh["cost_run"]})
            free = {}
            for opt in LR_FREE:
                lf = lr_free(tpl, L, w, opt, LR_FREE_SEEDS, out=st.out, table=st.table, run_opts=run_opts)
                free[f"lr-free:{opt}"] = lf
            ci = ref.eta_star_train_ci
            common = {"net": net, "depth": L, "held_out": z["held_out"], "eta_star_ref": float(ref.eta_star_train),
                      "ref_ci": ci, "ref_flags": ref.flags, "ref_resolved": ref.resolved, "ref_final_loss": ref_final,
                      "noise": noise, "ref_cost": ref_cost, "ref_points": z["points"]}
            for method, (lr, cost, extra) in chosen.items():
                at = None if lr is None else loss_at(ref, lr)
                regret = None if at is None or not math.isfinite(at) else at - best
                in_ci = bool(lr is not None and ci is not None and ci[0] <= lr <= ci[1])
                rows.append({**common, "method": method, "lr": lr,
                             "distance": None if lr is None else abs(math.log(lr / ref.eta_star_train)),
                             "in_ci": in_ci, "regret": regret, "diverges": at is not None and not math.isfinite(at),
                             "lands": bool(in_ci or (regret is not None and noise is not None and regret <= noise)),
                             "cost": cost, **extra})
            for method, lf in free.items():
                regret = None if lf["score_mean"] is None else lf["score_mean"] - best
                rows.append({**common, "method": method, "lr": None, "distance": None, "in_ci": False,
                             "regret": regret, "diverges": regret is None,
                             "lands": bool(regret is not None and noise is not None and regret <= noise),
                             "cost": lf["cost"], "diverged_runs": lf["diverged"]})
            say(f"{net} L={L}: " + ", ".join(f"{r['method']} {'Y' if r['lands'] else 'n'}"
                                             for r in rows if r["net"] == net and r["depth"] == L))
            path.write_text(json.dumps({"rows": rows, "sizes": size, "workers": run_opts["workers"],
                                        "threads": run_opts["threads"]}, indent=1, default=tb._plain) + "\n")
        say(f"{net}: {time.perf_counter() - t0:.0f} s")
    return rows


def seed_spread(run_opts) -> dict:
    """How far one seed's reference optimum lies from the three seeds' (|ln|, per net, depth and seed): the
    floor under a one-seed search's distance.  Read from the reference cells (trains nothing); written to
    ``seed_spread.json`` beside ``benchmark.json`` and kept with the page."""
    from amutheory.train import grid
    from amutheory.train.store import read_table
    from amutheory.train.sweep import searches_at

    rows = []
    for net, z in sizes().items():
        tpl, w = template(net), template(net).width
        table = read_table(OUT / net)
        for L in z["depths"]:
            rates = {(L, w): list(grid(*z["range"], z["points"]))}
            mean = searches_at(tpl, table, rates, tb.REF_SEEDS)[(L, w)].eta_star_train
            for s in tb.REF_SEEDS:
                one = searches_at(tpl, table, rates, [s])[(L, w)].eta_star_train
                rows.append({"net": net, "depth": L, "seed": s, "distance": abs(math.log(one / mean))})
    out = {"rows": rows, "median": float(np.median([r["distance"] for r in rows])),
           "quartiles": [float(q) for q in np.percentile([r["distance"] for r in rows], [25, 75])]}
    (OUT / "seed_spread.json").write_text(json.dumps(out, indent=1) + "\n")
    say(f"one seed's reference optimum vs the three seeds': median |ln| {out['median']:.3f}")
    return out


def _report(run_opts) -> None:
    from tune_report_2 import write_page

    write_page(OUT / "benchmark.json", PAGE, FIGURES)


def main(argv=None) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    return tb.stage_cli(__doc__.splitlines()[0], {"pilot": pilot, "references": references, "run": run,
                                                  "seed-spread": seed_spread, "report": _report}, argv)


if __name__ == "__main__":
    sys.exit(main())
