"""Time the vectorised probe against the naive finite-step measurement of ``s_l``.

(a) probe:  ``amutheory.measure.probe.probe(spec, seeds)`` -- exact first-order change by
    forward-mode AD, ``vmap``-ed over chunks of seeds.
(b) naive:  for each seed, one at a time: draw the model and data, copy the model, take one
    real SGD step of size ``eta``, run the forward pass again and take
    ``s_l ~ mean((h_l(theta_1) - h_l(theta_0))^2) / eta^2`` per layer
    (``amutheory.measure.probe.sgd_step_change``).

Both include drawing the seeds' models and data.  Each is run once to warm up (the first
``vmap`` call traces; allocator warm-up), then ``--repeats`` times; the reported time is the
median (``time.perf_counter``).  The two estimates agree to O(eta): the reported disagreement
is ``max_{seed, l} |s_naive - s_probe| / s_probe``.

    python validate/benchmark_probe.py                      # conv1d, relu, L=16, n=128, N=16
    python validate/benchmark_probe.py --depth 8 --json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time

import numpy as np
import torch

from amutheory.measure.probe import draw_seed, probe, sgd_step_change
from amutheory.spec import ArchSpec, ProbeProtocol


def naive_s(spec: ArchSpec, seeds, protocol: ProbeProtocol, eta: float) -> np.ndarray:
    """``s_l`` from a real SGD step, one seed at a time: ``mean((h1 - h0)^2) / eta^2``."""
    rows = []
    for seed in seeds:
        model, x, r = draw_seed(spec, seed, protocol)
        change = sgd_step_change(model, x, r, eta)  # copies the model, steps, forwards again
        rows.append([(c.pow(2).mean() / eta**2).item() for c in change])
    return np.array(rows)


def _sync(device: str):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def time_it(fn, repeats: int, device: str):
    """``(median seconds, all times, last result)`` of ``repeats`` calls after one warm-up."""
    result = fn()
    _sync(device)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        _sync(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, result


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--depth", type=int, default=16, help="L (default 16)")
    ap.add_argument("--width", type=int, default=128, help="n (default 128)")
    ap.add_argument("--spatial", type=int, default=16, help="N (default 16)")
    ap.add_argument("--kernel", type=int, default=3, help="k (default 3)")
    ap.add_argument("--dim", type=int, default=1, choices=(1, 2), help="conv dimension (default 1)")
    ap.add_argument("--activation", default="relu", help="default relu")
    ap.add_argument("--init-c", type=float, default=2.0,
                    help="He constant c, Var[W] = c / fan_in (default 2.0, critical for ReLU)")
    ap.add_argument("--batch", type=int, default=8, help="B (default 8)")
    ap.add_argument("--seeds", type=int, default=32, help="number of seeds (default 32)")
    ap.add_argument("--chunk", type=int, default=16, help="seeds per vmap call (default 16)")
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats, median reported (default 3)")
    ap.add_argument("--eta", type=float, default=1e-6, help="naive SGD step size (default 1e-6)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    ap.add_argument("--dtype", default="float64", choices=("float64", "float32"))
    ap.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    spec = ArchSpec(dim=args.dim, depth=args.depth, width=args.width, kernel=args.kernel,
                    spatial=args.spatial, activation=args.activation, init_c=args.init_c,
                    batch=args.batch)
    protocol = ProbeProtocol(device=args.device, dtype=args.dtype)
    seeds = list(range(args.seeds))

    t_probe, probe_times, res = time_it(lambda: probe(spec, seeds, protocol, chunk=args.chunk).s,
                                        args.repeats, args.device)
    t_naive, naive_times, s_naive = time_it(lambda: naive_s(spec, seeds, protocol, args.eta),
                                            args.repeats, args.device)
    rel = np.abs(s_naive - res) / res
    out = {
        "spec": spec.to_dict(),
        "seeds": args.seeds,
        "chunk": args.chunk,
        "eta": args.eta,
        "device": args.device,
        "dtype": args.dtype,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "machine": platform.processor() or platform.machine(),
        "repeats": args.repeats,
        "probe_s": t_probe,
        "naive_s": t_naive,
        "probe_times_s": probe_times,
        "naive_times_s": naive_times,
        "ratio_naive_over_probe": t_naive / t_probe,
        "probe_ms_per_seed": 1e3 * t_probe / args.seeds,
        "naive_ms_per_seed": 1e3 * t_naive / args.seeds,
        "max_rel_disagreement": float(rel.max()),
        "median_rel_disagreement": float(np.median(rel)),
        "max_rel_disagreement_per_layer": rel.max(axis=0).tolist(),
        "s_bar_mean_probe": float(res.mean()),
    }
    if args.json:
        print(json.dumps(out))
        return out

    d = "conv1d" if args.dim == 1 else "conv2d"
    print(f"{d}, {args.activation}, L={args.depth}, n={args.width}, N={args.spatial}, "
          f"k={args.kernel}, B={args.batch}, {args.seeds} seeds, {args.dtype} on {args.device}, "
          f"{out['threads']} threads, torch {torch.__version__}")
    print(f"median of {args.repeats} repeats (after one warm-up)\n")
    print(f"{'method':<34}{'time [s]':>10}{'ms/seed':>10}")
    print(f"{'probe (jvp, vmap chunk=%d)' % args.chunk:<34}{t_probe:>10.3f}{out['probe_ms_per_seed']:>10.1f}")
    print(f"{'naive (SGD step, eta=%g)' % args.eta:<34}{t_naive:>10.3f}{out['naive_ms_per_seed']:>10.1f}")
    print(f"\nratio naive / probe            {out['ratio_naive_over_probe']:.2f}")
    print(f"max  |s_naive - s_probe|/s     {out['max_rel_disagreement']:.2e}")
    print(f"median |s_naive - s_probe|/s   {out['median_rel_disagreement']:.2e}")
    print("per layer max rel. disagreement:",
          " ".join(f"{v:.1e}" for v in out["max_rel_disagreement_per_layer"]))
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
