"""Time the mode-by-mode law of a linear spatial residual net against the naive ways of getting it.

For a linear residual net (default: conv-mlp/k-last, n = 128, k = 3, N = 8, B = 8, m = 10):

(a) law:        ``amutheory.symbolic.resnet.spectral.s_bar`` at every depth of ``--depths``:
                the infinite-width mean of ``s_bar``, nothing fitted, no sampling error.
(b) probe:      the same mean measured on real nets, ``--seeds`` seeds at each depth (the
                one-step probe, ``vmap``-ed): what one would do without the law, with its
                standard error and its ratio to (a) (the ``O(1/n)`` excess at this width).
(c) seed law:   the typical value's ``gap`` at every depth from one table of ``--draws`` joint
                draws of inputs and loss directions (``seed_table`` once, then one product per
                depth), against the naive way: a fresh table per depth.  The two agree within
                their Monte Carlo errors; the shared table also makes ``gap(K)`` smooth in K.

Each timing is the median of ``--repeats`` runs after a warm-up (the probe: one run).

    python validate/benchmark_resnet_modes.py --threads 2
    python validate/benchmark_resnet_modes.py --depths 4,16,64 --seeds 64 --json
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from amutheory.measure.probe import probe
from amutheory.spec import ArchSpec
from amutheory.symbolic.resnet import spectral as rs
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _blocks import OneLineParser, positive_ints, spec_or_error, timed, use_threads  # noqa: E402


def parse(argv=None):
    p = OneLineParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--depths", type=positive_ints, default=[2, 8, 32, 128], help="K values (default 2,8,32,128)")
    p.add_argument("--width", type=int, default=128, help="n (default 128)")
    p.add_argument("--branch", default="conv-mlp", help="conv, conv-mlp or preact (default conv-mlp)")
    p.add_argument("--init", default="k-last", help="default k-last")
    p.add_argument("--seeds", type=int, default=32, help="seeds per depth in (b) (default 32)")
    p.add_argument("--draws", type=int, default=20000, help="joint draws per table in (c) (default 20000)")
    p.add_argument("--repeats", type=int, default=3, help="timed repeats of (a) and (c), median (default 3)")
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    if args.seeds < 2 or args.draws < 2 or args.repeats < 1 or args.width < 1:
        p.error("--seeds and --draws must be >= 2, --repeats and --width >= 1")
    if any(k < 1 for k in args.depths):
        p.error("--depths must be positive block counts")
    spec_or_error(p, lambda: rs.layer_moments(ArchSpec(family="resnet", branch=args.branch, init=args.init,
                                                       activation="linear")))
    return args


def main(argv=None) -> int:
    args = parse(argv)
    use_threads(args.threads)
    spec = ArchSpec(family="resnet", dim=1, depth=max(args.depths), width=args.width, kernel=3, spatial=8, batch=8,
                    activation="linear", branch=args.branch, init=args.init)
    law, t_law = timed(lambda: rs.s_bar(spec, args.depths), args.repeats)
    t0 = time.perf_counter()
    measured = [probe(spec.with_(depth=k), range(args.seeds)).s_bar for k in args.depths]
    t_probe = time.perf_counter() - t0
    ratio = [float(m.mean() / v) for m, v in zip(measured, law)]
    ratio_se = [float(m.std(ddof=1) / np.sqrt(len(m)) / v) for m, v in zip(measured, law)]

    def shared():
        table = rs.seed_table(spec, args.draws, 0)
        return [rs.seed_law(spec.with_(depth=k), table) for k in args.depths]

    def fresh():
        return [rs.seed_law(spec.with_(depth=k), rs.seed_table(spec, args.draws, i))
                for i, k in enumerate(args.depths)]

    laws_shared, t_shared = timed(shared, args.repeats)
    laws_fresh, t_fresh = timed(fresh, args.repeats)
    z = [abs(a["gap"] - b["gap"]) / np.hypot(a["gap_se"], b["gap_se"]) for a, b in zip(laws_shared, laws_fresh)]
    out = {"spec": spec.to_dict(), "depths": args.depths, "law_s": t_law, "probe_s": t_probe, "seeds": args.seeds,
           "measured_over_law": ratio, "measured_over_law_se": ratio_se, "seed_law_shared_s": t_shared,
           "seed_law_fresh_s": t_fresh, "gap_shared": [a["gap"] for a in laws_shared],
           "gap_fresh": [b["gap"] for b in laws_fresh], "gap_z": [float(v) for v in z]}
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"{args.branch}/{args.init}, linear, n = {args.width}, k = 3, N = 8, B = 8; K = {args.depths}")
    print(f"(a) law, every K:              {t_law * 1e3:8.1f} ms  (nothing fitted, no sampling error)")
    print(f"(b) probe, {args.seeds} seeds per K:     {t_probe:8.2f} s   ({t_probe / t_law:,.0f}x (a)); "
          "measured / law: " + ", ".join(f"{r:.3f} +- {e:.3f}" for r, e in zip(ratio, ratio_se)))
    print(f"(c) seed law, one table:       {t_shared:8.2f} s;  a fresh table per K: {t_fresh:.2f} s "
          f"({t_fresh / t_shared:.1f}x); gaps agree within {max(z):.1f} standard errors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
