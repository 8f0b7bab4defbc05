"""Run (or resume) a protocol: every study's sweep, the one-step probe, then the analysis.

:func:`run_protocol` is what ``amutheory validate --preset protocol`` runs:

1. refuse a folder that holds another protocol (``protocol.json`` names its fingerprint), check
   every study's data and sizes, and the studies' folders, before any work;
2. the grid cells of every study in one pool (each study's records appended to its own
   ``<out>/<study>/cells.jsonl`` as its groups finish), then every study's refinement cells in
   a second pool: a rerun after an interruption runs only what is missing;
   then, for the studies with ``eta_max_rounds > 0``, the bisection of the largest stable rate
   (:mod:`amutheory.train.stability`), one pool per round over all of them (its rates recomputed
   from the tables, so a resumed run trains no cell twice);
3. the probe (eta*_onestep) at every depth of the studies that ask for it, one depth at a time,
   saved as it goes (``<out>/<study>/onestep.json``);
4. per study the sweep's own outputs (:func:`amutheory.train.run_sweep`, nothing left to train),
   then the claims, the zero-shot transfer, the bridge, the cost table
   (:mod:`amutheory.protocol.analysis`), ``summary.json``, ``report.md`` and the figures; the
   bisection's eta_max per study and point (:func:`study_eta_max`) in ``summary["eta_max_raw"]``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from amutheory.protocol.presets import Protocol, Study, fingerprint, for_device
from amutheory.train.cell import Cell
from amutheory.train.lock import holds_folder


def study_template(study: Study, data_dir=None, device: str = "cpu") -> Cell:
    """The study's cell at its first depth and width (rate 1, seed 0), shapes from its data."""
    from amutheory.train.sweep import spec_for_data

    spec = study.spec
    if study.dataset == "synthetic":
        channels, spatial = study.synthetic_shape
        spec = spec.with_(input_channels=channels, spatial=spatial)
    else:
        spec = spec_for_data(spec, study.dataset, data_dir)
    spec = spec.with_(batch=study.batch_size, depth=study.depths[0], width=study.widths[0])
    return Cell(spec=spec, lr=1.0, optimizer=study.optimizer, dataset=study.dataset, steps=study.steps,
                batch_size=study.batch_size, norm=study.norm, dropout=study.dropout, data_dir=data_dir, device=device)


def study_rates(study: Study) -> list[float]:
    from amutheory.train.sweep import grid

    return grid(*study.lr_range, study.points)


def _check_folder(out: Path, protocol: Protocol) -> None:
    """Refuse a file, or a folder holding another protocol (nothing is written here)."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a folder")
    meta = out / "protocol.json"
    if meta.exists():
        try:
            old = json.loads(meta.read_text()).get("fingerprint")
        except (OSError, ValueError):
            raise ValueError(f"{meta} is unreadable; use another --out") from None
        if old != fingerprint(protocol):
            raise ValueError(f"{out} holds protocol {old}, not {protocol.name} {fingerprint(protocol)}; "
                             "use another --out")


def _prepare(protocol: Protocol, out: Path, data_dir, device) -> dict:
    """Every spec built and every dataset loaded (before anything is written); then per study its
    template, folder and table, and ``protocol.json``."""
    from amutheory.train.run import cell_data
    from amutheory.train.store import check_meta, check_out_dir, read_table
    from amutheory.train.sweep import fixed_fields

    templates = {}
    for st in protocol.studies:
        tpl = templates[st.name] = study_template(st, data_dir, device)
        for L in st.depths:
            for n in st.widths:
                cell_data(tpl.with_(spec=tpl.spec.with_(depth=L, width=n)))
    check_out_dir(out)
    prepared = {}
    for st in protocol.studies:
        folder = check_out_dir(out / st.name)
        check_meta(folder, fixed_fields(templates[st.name]))
        prepared[st.name] = {"template": templates[st.name], "folder": folder, "table": read_table(folder)}
    meta = out / "protocol.json"
    if not meta.exists():
        meta.write_text(json.dumps({"fingerprint": fingerprint(protocol), "protocol": protocol.to_dict()}, indent=1)
                        + "\n")
    return prepared


def _cost_estimate(group) -> float:
    """A rough relative cost of a group (longest first keeps both workers busy to the end; the
    records do not depend on the order): layers x positions x width x steps, dropout runs one
    rate at a time (the loop engine), a transformer block is an attention and an MLP."""
    c = group[0]
    sp = c.spec
    per_rate = 4.0 * len(group) if c.dropout else 1.0 + 0.1 * len(group)
    block = sp.family_object.block_cost
    return sp.depth * block * sp.positions * sp.width * c.steps * per_rate


def _run_all(jobs: list, run_opts: dict, bar) -> int:
    """Run ``(study_state, group)`` jobs with a missing cell in one pool; append as they finish."""
    from amutheory.train.engine import run_groups
    from amutheory.train.store import append_records

    todo = sorted([(p, g) for p, g in jobs if any(c.key() not in p["table"] for c in g)],
                  key=lambda job: -_cost_estimate(job[1]))
    if bar is not None:
        bar.total += sum(len(g) for _, g in jobs)
        bar.update(sum(len(g) for _, g in jobs) - sum(len(g) for _, g in todo))
    owner = {id(g): p for p, g in todo}
    done = 0
    for g, records in run_groups([g for _, g in todo], **run_opts):
        p = owner[id(g)]
        fresh = [r for r in records if r["key"] not in p["table"]]
        append_records(p["folder"], fresh)
        p["table"].update({r["key"]: r for r in fresh})
        done += len(records)
        if bar is not None:
            bar.update(len(records))
    return done


def _probe(study: Study, state: dict, threads: int, say) -> dict:
    """eta*_onestep per depth (probe seeds 0..S-1), resumed depth by depth from ``onestep.json``."""
    import torch

    from amutheory.api import measure
    from amutheory.spec import ProbeProtocol

    path = state["folder"] / "onestep.json"
    spec = state["template"].spec
    saved = json.loads(path.read_text()) if path.exists() else {}
    if saved.get("spec") != spec.to_dict() or saved.get("seeds") != study.probe_seeds:
        saved = {"spec": spec.to_dict(), "seeds": study.probe_seeds, "depths": {}}
    dtype = "float64" if state["template"].device == "cpu" else "float32"
    protocol = ProbeProtocol(dtype=dtype, device=state["template"].device)
    torch.set_num_threads(threads)
    for L in study.depths:
        if str(L) in saved["depths"]:
            continue
        start = time.perf_counter()
        s_bar = measure(spec, [L], study.probe_seeds, protocol).s_bar(L)
        saved["depths"][str(L)] = {"s_bar": s_bar.tolist(), "seconds": time.perf_counter() - start}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(saved) + "\n")
        tmp.replace(path)
        say(f"probe {study.name} L={L}: {saved['depths'][str(L)]['seconds']:.1f} s")
    return saved


def _append_run(out: Path, run: dict) -> list:
    """Append this invocation to ``runs.jsonl`` (a resumed or re-rendered run keeps the history of
    what trained the cells and how long it took); every invocation so far."""
    path = out / "runs.jsonl"
    with path.open("a") as f:
        f.write(json.dumps(run) + "\n")
    runs = []
    for line in path.read_text().splitlines():
        try:
            runs.append(json.loads(line))
        except ValueError:  # a line cut by a kill: skipped
            continue
    return runs


def chosen_studies(protocol: Protocol, only) -> list:
    """The studies ``only`` names (every study without it); an unknown name is refused."""
    if not only:
        return list(protocol.studies)
    names = [st.name for st in protocol.studies]
    bad = [n for n in only if n not in names]
    if bad:
        raise ValueError(f"--only {bad[0]}: not a study of {protocol.name} (its studies: {', '.join(names)})")
    return [st for st in protocol.studies if st.name in only]


def eta_max_rounds(study: Study) -> int:
    """The study's rounds of eta_max bisection (0: none)."""
    return getattr(study, "eta_max_rounds", 0) or 0


def _bisection_cells(study: Study, state: dict) -> list:
    """The groups of the study's next bisection round (``[]``: done, or the study does not bisect)."""
    from amutheory.train.stability import next_cells

    if eta_max_rounds(study) <= 0:
        return []
    return next_cells(state["table"], state["template"], list(study.depths), list(study.widths), study.seed_list,
                      study_rates(study), eta_max_rounds(study))


def _run_bisection(studies: list, prepared: dict, run_opts: dict, bar) -> int:
    """The bisection rounds of ``studies`` (those with ``eta_max_rounds > 0``): one pool per round
    over all of them; the cells run.  Each round's cells are recomputed from the tables, so a resumed
    run starts at the first round with a missing record."""
    bisecting = [st for st in studies if eta_max_rounds(st) > 0]
    ran = 0
    for _ in range(max((eta_max_rounds(st) for st in bisecting), default=0)):
        jobs = [(prepared[st.name], g) for st in bisecting for g in _bisection_cells(st, prepared[st.name])]
        if not jobs:
            break
        ran += _run_all(jobs, run_opts, bar)
    return ran


def study_eta_max(study: Study, state: dict) -> dict:
    """``{point: eta_max dict}`` (:func:`amutheory.train.stability.eta_max`) at each point of the
    study's axis (a depth, or a width); ``{}`` for a study that does not bisect."""
    from amutheory.train.stability import eta_max

    rounds = eta_max_rounds(study)
    if rounds <= 0:
        return {}
    out = {}
    for p in (study.widths if study.axis == "width" else study.depths):
        L, n = (study.depths[0], p) if study.axis == "width" else (p, study.widths[0])
        out[p] = eta_max(state["table"], state["template"], L, n, study.seed_list, study_rates(study), rounds)
    return out


def _cap(protocol, state: dict):
    """What a diverged run scores in ``protocol`` (``None``: ``+inf``; else the chance loss)."""
    from amutheory.train.sweep import diverged_cap

    return diverged_cap(state["template"], protocol.diverged)


def _complete(study: Study, state: dict, cap=None) -> bool:
    """Every grid, refined and bisection cell of ``study`` is in its table (and its probe saved,
    where it probes)."""
    from amutheory.train.sweep import plan, refined_plan

    grid = [c for g in plan(state["template"], study.depths, study.widths, study_rates(study), study.seed_list)
            for c in g]
    if any(c.key() not in state["table"] for c in grid):
        return False
    _, extra = refined_plan(state["template"], state["table"], study.depths, study.widths, study_rates(study),
                            study.seed_list, "mean", study.refine, cap)
    if any(c.key() not in state["table"] for g in extra for c in g):
        return False
    if _bisection_cells(study, state):
        return False
    if study.onestep:
        saved = state["folder"] / "onestep.json"
        if not saved.is_file():
            return False
        done = json.loads(saved.read_text()).get("depths", {})
        return all(str(L) in done for L in study.depths)
    return True


@holds_folder("out", "validate")
def run_protocol(preset, out, *, workers: int = 2, threads: int = 1, engine: str = "local",
                 scheduler: str | None = None, data_dir=None, device: str = "cpu", progress: bool = False,
                 figures: bool = True, say=print, first_seed: int = 0, only=None) -> dict:
    """Run or resume ``preset`` (a name of :data:`~amutheory.protocol.presets.PRESETS` or a
    :class:`~amutheory.protocol.presets.Protocol`) in ``out``; the summary (also ``summary.json``).
    ``first_seed``: every study trained on seeds ``first_seed ..`` instead of ``0 ..`` (a replicate on
    disjoint seeds; its fingerprint differs from the preset's and the summary names it).  ``only``: train
    only these studies (a long protocol run in pieces); the claims are read once every study is complete,
    until then the summary says which studies are done and which are still to run."""
    from amutheory.protocol.analysis import analyse
    from amutheory.train.sweep import check_run_options, progress_bar, plan, refined_plan, run_sweep

    protocol = preset if isinstance(preset, Protocol) else for_device(preset, device)
    if first_seed:
        import dataclasses

        protocol = dataclasses.replace(protocol, studies=tuple(dataclasses.replace(st, first_seed=first_seed)
                                                               for st in protocol.studies))
    check_run_options(engine, workers, threads, scheduler)
    chosen = chosen_studies(protocol, only)
    out = Path(out)
    _check_folder(out, protocol)
    prepared = _prepare(protocol, out, data_dir, device)
    if protocol.size_note:
        say(f"{protocol.name}: {protocol.size_note}")
    run_opts = dict(engine=engine, workers=workers, threads=threads, scheduler=scheduler)
    bar = progress_bar(0, progress)
    start = time.perf_counter()
    grid_jobs = [(prepared[st.name], g) for st in chosen
                 for g in plan(prepared[st.name]["template"], st.depths, st.widths, study_rates(st), st.seed_list)]
    ran = _run_all(grid_jobs, run_opts, bar)
    rates, refine_jobs = {}, []
    for st in chosen:
        p = prepared[st.name]
        rates[st.name], extra = refined_plan(p["template"], p["table"], st.depths, st.widths, study_rates(st),
                                             st.seed_list, "mean", st.refine, _cap(protocol, p))
        refine_jobs += [(p, g) for g in extra]
    ran += _run_all(refine_jobs, run_opts, bar)
    ran += _run_bisection(chosen, prepared, run_opts, bar)
    if bar is not None:
        bar.close()
    train_seconds = time.perf_counter() - start
    for st in chosen:
        if st.onestep:
            _probe(st, prepared[st.name], threads, say)
    for st in chosen:  # each study's own sweep outputs; nothing is left to train
        p = prepared[st.name]
        run_sweep(p["template"], list(st.depths), list(st.widths), study_rates(st), st.seed_list, p["folder"],
                  refine=st.refine, figures=figures)
    missing = [st.name for st in protocol.studies if st not in chosen and not _complete(st, prepared[st.name],
                                                                                         _cap(protocol, prepared[st.name]))]
    this_run = {"cells_run": ran, "train_wall_s": train_seconds, "wall_s": time.perf_counter() - start,
                "workers": workers, "threads": threads, "engine": engine, "device": device,
                "finished": time.strftime("%Y-%m-%d %H:%M:%S"), "only": [st.name for st in chosen] if only else None}
    if missing:
        runs = _append_run(out, this_run)
        say(f"{protocol.name}: studies still to run before the claims are read: {', '.join(missing)}")
        return {"protocol": protocol.name, "fingerprint": fingerprint(protocol), "complete": False,
                "studies_done": [st.name for st in protocol.studies if st.name not in missing],
                "studies_missing": missing, "this_run": this_run, "runs": runs}
    for st in protocol.studies:
        if st not in chosen:
            p = prepared[st.name]
            rates[st.name] = refined_plan(p["template"], p["table"], st.depths, st.widths, study_rates(st),
                                          st.seed_list, "mean", st.refine, _cap(protocol, p))[0]
    onestep = {st.name: _probe(st, prepared[st.name], threads, say) for st in protocol.studies if st.onestep}
    eta_max = {st.name: study_eta_max(st, prepared[st.name]) for st in protocol.studies if eta_max_rounds(st) > 0}
    summary = analyse(protocol, prepared, rates, onestep, eta_max=eta_max)
    if eta_max:
        summary["eta_max_raw"] = {name: {str(p): d for p, d in by_point.items()} for name, by_point in eta_max.items()}
    summary["complete"] = True
    summary["this_run"] = this_run
    summary["runs"] = _append_run(out, summary["this_run"])
    from amutheory.protocol.report import write_outputs

    write_outputs(out, summary, figures)
    return summary

