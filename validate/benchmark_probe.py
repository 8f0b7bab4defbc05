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

Choice of ``eta`` (default 1e-7, float64): the disagreement is the O(eta) truncation of the
finite step, ~1e-5 at L=16 for eta=1e-7 and falling 10x per decade down to eta ~ 1e-8, below
which float64 roundoff of ``h1 - h0`` takes over.  At eta >= 1e-6 a few of the ~2.5e5 ReLU
pre-activations of the default net lie within one step of their kink and cross it; the
disagreement then jumps (~6e-4 at 1e-6, ~2e-3 at 1e-5) -- a property of the finite step,
not of the probe.  Over 32 seeds a crossing or two happen even at 1e-7, so the script also
counts crossings (an extra, untimed pass) and reports the disagreement over the seeds
without any.  The time spent drawing models and data (included in both) is reported too.

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


def kink_crossings(spec: ArchSpec, seeds, protocol: ProbeProtocol, eta: float) -> np.ndarray:
    """Per seed, the number of ReLU pre-activations (layers 1..L-1, which feed a later layer)
    that change sign in the SGD step -- where the finite step leaves first order.  Untimed."""
    counts = []
    for seed in seeds:
        model, x, r = draw_seed(spec, seed, protocol)
        with torch.no_grad():
            h0 = model.preactivations(x)[0]
        change = sgd_step_change(model, x, r, eta)
        counts.append(sum(int(((h + c).sign() != h.sign()).sum())
                          for h, c in zip(h0[:-1], change[:-1])))
    return np.array(counts)


def draw_all(spec: ArchSpec, seeds, protocol: ProbeProtocol):
    """Only the drawing of every seed's model, inputs and directions (both methods do this)."""
    return [draw_seed(spec, seed, protocol) for seed in seeds]


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
    ap.add_argument("--eta", type=float, default=1e-7, help="naive SGD step size (default 1e-7)")
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
    t_draw, _, _ = time_it(lambda: draw_all(spec, seeds, protocol), args.repeats, args.device)
    rel = np.abs(s_naive - res) / res
    if args.activation == "relu":
        crossings = kink_crossings(spec, seeds, protocol, args.eta)
        clean = crossings == 0
    else:
        crossings, clean = np.zeros(len(seeds), dtype=int), np.ones(len(seeds), dtype=bool)
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
        "draw_s": t_draw,
        "ratio_naive_over_probe": t_naive / t_probe,
        "ratio_excluding_draw": (t_naive - t_draw) / (t_probe - t_draw),
        "probe_ms_per_seed": 1e3 * t_probe / args.seeds,
        "naive_ms_per_seed": 1e3 * t_naive / args.seeds,
        "max_rel_disagreement": float(rel.max()),
        "median_rel_disagreement": float(np.median(rel)),
        "max_rel_disagreement_per_layer": rel.max(axis=0).tolist(),
        "seeds_with_kink_crossings": int((~clean).sum()),
        "kink_crossings_total": int(crossings.sum()),
        "max_rel_disagreement_without_crossings": float(rel[clean].max()) if clean.any() else None,
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
    print(f"{'(both include: drawing the seeds)':<34}{t_draw:>10.3f}{1e3 * t_draw / args.seeds:>10.1f}")
    print(f"\nratio naive / probe            {out['ratio_naive_over_probe']:.2f}"
          f"   (excluding the draws: {out['ratio_excluding_draw']:.2f})")
    print(f"max  |s_naive - s_probe|/s     {out['max_rel_disagreement']:.2e}")
    print(f"median |s_naive - s_probe|/s   {out['median_rel_disagreement']:.2e}")
    print("per layer max rel. disagreement:",
          " ".join(f"{v:.1e}" for v in out["max_rel_disagreement_per_layer"]))
    if args.activation == "relu":
        clean_max = out["max_rel_disagreement_without_crossings"]
        print(f"ReLU kinks crossed by the finite step: {out['kink_crossings_total']} unit(s) in "
              f"{out['seeds_with_kink_crossings']} of {args.seeds} seeds; max rel. disagreement "
              f"over the other seeds: " + (f"{clean_max:.2e}" if clean_max is not None else "n/a"))
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
