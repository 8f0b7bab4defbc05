"""Time the law of a residual net over its points (zero padding) against the naive ways of getting it.

For a zero-padded residual net (default: linear conv-mlp/k-last, n = 128, k = 3, N = 8, B = 8, m = 10;
``--activation relu`` for the ReLU law, whose channel loops hold up to three masks at distinct points):

(a) law:    ``amutheory.symbolic.resnet.operator.draw_layer_moments`` for each of ``--seeds`` seeds'
            inputs and loss directions at every depth of ``--depths`` (``method="outer"``: a product
            ``A E_c B`` with a point projector is the outer product ``A[:, c] B[c, :]``);
(b) stack:  the same law with the ``P`` point projectors as a stack of ``P x P`` matrices, every
            product a stack of matrix products (``method="stack"``, the naive evaluation; its mask
            loops contract as (a)'s), on the first seed only, scaled to all of them; it must give the
            same numbers (checked to 1e-10);
(b2) einsum: with ReLU, (a) with every three-mask loop's middle that is still contracted over a
             stack as one plain ``einsum`` (the naive contraction; (a) folds the single kernel into the
             3-point function and multiplies stacks of matrices), on the first seed only, scaled; the
             same numbers again.  Since the loops around the point projectors are held as rows and
             formed in ``P^3``, no such loop is left in these blocks, so (b2) times as (a);
(c) probe:  the same seeds' ``s_bar`` measured on real nets (the one-step probe, ``vmap``-ed): what one
            would do without the law, with its ratio to (a) (the ``O(1/n)`` excess at this width).

Each timing of (a) and (b) is the median of ``--repeats`` runs after a warm-up (the probe: one run).

    python validate/benchmark_resnet_points.py --threads 2
    python validate/benchmark_resnet_points.py --threads 2 --activation relu --seeds 8
    python validate/benchmark_resnet_points.py --depths 4,16 --seeds 16 --json
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from amutheory.measure.probe import draw_seed, probe
from amutheory.spec import BRANCHES, ArchSpec
from amutheory.symbolic.primitives import operator_planar
from amutheory.symbolic.resnet import operator as ro
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _blocks import OneLineParser, positive_ints, spec_or_error, timed, use_threads  # noqa: E402


def parse(argv=None):
    p = OneLineParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--depths", type=positive_ints, default=[2, 8, 32], help="K values (default 2,8,32)")
    p.add_argument("--width", type=int, default=128, help="n (default 128)")
    p.add_argument("--branch", default="conv-mlp", choices=BRANCHES, help="default conv-mlp")
    p.add_argument("--init", default="k-last", help="default k-last")
    p.add_argument("--activation", default="linear", choices=("linear", "relu"),
                   help="default linear (relu: conv-mlp only, the law's ReLU scope)")
    p.add_argument("--seeds", type=int, default=32, help="seeds (law and probe) per depth (default 32)")
    p.add_argument("--repeats", type=int, default=3, help="timed repeats of (a) and (b), median (default 3)")
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    if args.seeds < 2 or args.repeats < 1 or args.width < 1:
        p.error("--seeds must be >= 2, --repeats and --width >= 1")
    spec_or_error(p, lambda: ro.check_spec(ArchSpec(family="resnet", branch=args.branch, init=args.init,
                                                    activation=args.activation, padding="zero", kernel=3,
                                                    spatial=8, batch=8)))
    return args


def main(argv=None) -> int:
    args = parse(argv)
    use_threads(args.threads)
    spec = ArchSpec(family="resnet", dim=1, depth=max(args.depths), width=args.width, kernel=3, spatial=8, batch=8,
                    activation=args.activation, branch=args.branch, init=args.init, padding="zero")
    nets = {k: spec.with_(depth=k) for k in args.depths}
    draws = {k: [[v.numpy() for v in draw_seed(net, sd)[1:]] for sd in range(args.seeds)] for k, net in nets.items()}

    def law(method, seeds):
        return [[float(ro.draw_layer_moments(net, x, r, method).mean()) for x, r in draws[k][:seeds]]
                for k, net in nets.items()]

    outer, t_outer = timed(lambda: law("outer", args.seeds), args.repeats)
    stack, t_stack_one = timed(lambda: law("stack", 1), args.repeats)
    t_stack = t_stack_one * args.seeds
    agree = max(abs(a[0] / b[0] - 1) for a, b in zip(outer, stack))
    t_einsum = None
    if args.activation == "relu":
        folded = operator_planar._three_point
        operator_planar._three_point = operator_planar.three_point_einsum
        try:
            plain, t_einsum_one = timed(lambda: law("outer", 1), args.repeats)
        finally:
            operator_planar._three_point = folded
        t_einsum = t_einsum_one * args.seeds
        agree = max(agree, max(abs(a[0] / b[0] - 1) for a, b in zip(outer, plain)))
    t0 = time.perf_counter()
    measured = [probe(net, range(args.seeds)).s_bar for net in nets.values()]
    t_probe = time.perf_counter() - t0
    ratio = [float(m.mean() / np.mean(v)) for m, v in zip(measured, outer)]
    ratio_se = [float(np.std(m / np.asarray(v), ddof=1) / np.sqrt(len(m))) for m, v in zip(measured, outer)]
    out = {"spec": spec.to_dict(), "depths": args.depths, "seeds": args.seeds, "law_s": t_outer,
           "stack_s": t_stack, "einsum_s": t_einsum, "stack_agreement": agree, "probe_s": t_probe, "measured_over_law": ratio,
           "measured_over_law_se": ratio_se}
    if args.json:
        print(json.dumps(out))
        return 0
    if agree > 1e-10:
        print(f"warning: the two evaluations differ by {agree:.2e}", file=sys.stderr)
    print(f"{args.branch}/{args.init}, {args.activation}, zero padding, n = {args.width}, k = 3, N = 8, B = 8 (P = 64 points); "
          f"K = {args.depths}; {args.seeds} seeds' inputs and loss directions")
    print(f"(a) law over the points, outer products: {t_outer:8.2f} s  (nothing fitted, no sampling error given "
          "the seeds)")
    print(f"(b) the same with the projector stack:   {t_stack:8.2f} s  ({t_stack / t_outer:.1f}x (a); one seed "
          f"timed, scaled; agree to {agree:.1e})")
    if t_einsum is not None:
        print(f"(b2) (a) with plain einsum loops:       {t_einsum:8.2f} s  ({t_einsum / t_outer:.1f}x (a); one seed "
              "timed, scaled)")
    print(f"(c) probe, the same seeds:               {t_probe:8.2f} s  ({t_probe / t_outer:.1f}x (a)); measured / law: "
          + ", ".join(f"{r:.3f} +- {e:.3f}" for r, e in zip(ratio, ratio_se)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
