"""Time the vectorised trainer (all learning rates of a seed at once) against the loop.

(a) loop:        ``amutheory.train.run.train_cell`` for each rate, one after another: the real
                 ``nn.Module`` and ``torch.optim``, one run at a time;
(b) vectorised:  ``amutheory.train.run.train_group`` on the same cells: one ``vmap`` over the
                 stacked parameter sets, each member diverging on its own.

Both train the same cells (digits, plain SGD, the rates log-spaced over ``--lr-range``, seed 0)
and run in their own fresh process (``spawn``) on one torch thread, so each peak resident memory
(``ru_maxrss``) is its own; each process first trains a short warm-up group.  The table gives
the time per run, the ratio loop/vectorised, both peaks, and the largest relative difference of
the records' scores (float32: rounding compounds over the steps, most near divergence).

    python validate/benchmark_training.py                   # the table of docs/findings/training.md
    python validate/benchmark_training.py --widths 8,16 --dims 1 --steps 20 --json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import platform
import resource
import sys
import time

import numpy as np


def _cells(dim: int, width: int, depth: int, steps: int, lrs):
    from amutheory.spec import ArchSpec
    from amutheory.train import Cell, spec_for_data

    spec = spec_for_data(ArchSpec(dim=dim, width=width, depth=depth, padding="zero"), "digits")
    return [Cell(spec=spec, lr=lr, dataset="digits", steps=steps, batch_size=32) for lr in lrs]


def _child(mode: str, args: tuple, queue) -> None:
    import torch

    from amutheory.train.run import train_cell, train_group

    torch.set_num_threads(1)
    cells = _cells(*args)
    run = (lambda cs: [train_cell(c) for c in cs]) if mode == "loop" else train_group
    run([c.with_(steps=3) for c in cells[:2]])  # warm-up: data, allocator, first vmap trace
    start = time.perf_counter()
    records = run(cells)
    seconds = time.perf_counter() - start
    queue.put((seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
               [r["score"] for r in records]))


def _timed(mode: str, args: tuple):
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(mode, args, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def _rel_diff(a, b) -> float:
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    return max((abs(x - y) / abs(x) for x, y in pairs), default=0.0)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", default="1,2")
    p.add_argument("--widths", default="8,16,32,64")
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--rates", type=int, default=12)
    p.add_argument("--lr-range", default="0.01,3")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    lo, hi = (float(v) for v in a.lr_range.split(","))
    lrs = np.geomspace(lo, hi, a.rates).tolist()
    rows = []
    for dim in (int(v) for v in a.dims.split(",")):
        for width in (int(v) for v in a.widths.split(",")):
            args = (dim, width, a.depth, a.steps, lrs)
            t_loop, mem_loop, s_loop = _timed("loop", args)
            t_vec, mem_vec, s_vec = _timed("vectorised", args)
            rows.append({"dim": dim, "width": width, "depth": a.depth, "steps": a.steps, "rates": a.rates,
                         "loop_s_per_run": t_loop / a.rates, "vectorised_s_per_run": t_vec / a.rates,
                         "ratio": t_loop / t_vec, "loop_peak_mb": mem_loop, "vectorised_peak_mb": mem_vec,
                         "max_rel_score_diff": _rel_diff(s_loop, s_vec),
                         "diverged": sum(s is None for s in s_loop)})
            if not a.json:
                r = rows[-1]
                print(f"{dim}D width {width:>3}: loop {r['loop_s_per_run']:.3f} s/run, vectorised "
                      f"{r['vectorised_s_per_run']:.3f} s/run, ratio {r['ratio']:.2f}x, peak "
                      f"{r['loop_peak_mb']:.0f} / {r['vectorised_peak_mb']:.0f} MB, max rel score diff "
                      f"{r['max_rel_score_diff']:.1e}", flush=True)
    if a.json:
        print(json.dumps({"machine": platform.processor() or platform.machine(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
