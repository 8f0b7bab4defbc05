"""Time the loss-direction form ``M`` and its spread law against the naive ways of getting them.

For one seed of a residual net (default: conv-mlp/k-squared/ReLU, K = 16, n = 64, k = 3, N = 8,
B = 8, m = 10):

(a) form:       ``amutheory.measure.loss_form.loss_form`` -- the ``B m`` columns of ``M``, probe
                evaluations ``vmap``-ed ``--chunk`` at a time; then ``Var_r[ln s_bar]`` by the
                derived quadrature (``amutheory.symbolic.primitives.spread.log_moments_of_spectrum``).
(b) loop:       the same columns one at a time (``first_order_change`` per basis direction), the
                way one would write it without ``vmap``; must equal (a) to rounding.
(c) Monte Carlo: ``--draws`` fresh loss directions, one probe evaluation each, and the sample
                variance of ``ln s_bar`` -- the naive estimate of the same ``Var_r``, with its
                sampling error (``sd * sqrt(2 / draws)`` for a near-normal ``ln s_bar``).

Each is run once to warm up, then ``--repeats`` times; the median time is reported.

    python validate/benchmark_loss_form.py --threads 2
    python validate/benchmark_loss_form.py --depth 32 --json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch

from amutheory.measure.loss_form import loss_form, psd_spectrum
from amutheory.measure.probe import draw_seed, first_order_change
from amutheory.spec import ArchSpec
from amutheory.symbolic.primitives.spread import log_moments_of_spectrum

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _blocks import OneLineParser, timed  # noqa: E402


def parse(argv=None):
    p = OneLineParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--depth", type=int, default=16, help="K (default 16)")
    p.add_argument("--width", type=int, default=64, help="n (default 64)")
    p.add_argument("--branch", default="conv-mlp", help="default conv-mlp")
    p.add_argument("--init", default="k-squared", help="default k-squared")
    p.add_argument("--chunk", type=int, default=40, help="directions per vmap call in (a) (default 40)")
    p.add_argument("--draws", type=int, default=80, help="loss directions drawn in (c) (default 80, as many as "
                                                         "(a) evaluates)")
    p.add_argument("--repeats", type=int, default=3, help="timed repeats, median reported (default 3)")
    p.add_argument("--seed", type=int, default=0, help="default 0")
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    for name in ("chunk", "repeats"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be >= 1")
    if args.draws < 3:
        p.error("--draws must be >= 3")
    return args


def main(argv=None) -> int:
    args = parse(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        spec = ArchSpec(family="resnet", branch=args.branch, init=args.init, depth=args.depth, width=args.width,
                        kernel=3, spatial=8, batch=8, outputs=10)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    model, x, _ = draw_seed(spec, args.seed)
    size = spec.batch * spec.outputs

    def vectorised():
        form = loss_form(model, x, spec.outputs, chunk=args.chunk)
        return form, log_moments_of_spectrum(psd_spectrum(form))[1]

    def looped():
        cols = []
        for i in range(size):
            e = torch.zeros(size, dtype=x.dtype)
            e[i] = 1.0
            dh = first_order_change(model, x, e.reshape(spec.batch, spec.outputs))
            cols.append(torch.cat([d.reshape(-1) / d.numel() ** 0.5 for d in dh]).detach())
        a = torch.stack(cols)
        return (a @ a.T / len(dh)).numpy()

    gen = torch.Generator().manual_seed(12345)

    def monte_carlo():
        logs = []
        for _ in range(args.draws):
            r = torch.randn((spec.batch, spec.outputs), generator=gen, dtype=x.dtype)
            dh = first_order_change(model, x, r)
            logs.append(float(torch.log(torch.stack([d.pow(2).mean() for d in dh]).mean())))
        return float(np.var(logs, ddof=1))

    (form, var_r), t_form = timed(vectorised, args.repeats)
    form_loop, t_loop = timed(looped, args.repeats)
    var_mc, t_mc = timed(monte_carlo, args.repeats)
    out = {"spec": f"resnet {args.branch}/{args.init}/relu K={args.depth} n={args.width} k=3 N=8 B=8 m=10",
           "threads": torch.get_num_threads(), "directions": size,
           "seconds": {"form_vmap": t_form, "form_loop": t_loop, "monte_carlo": t_mc},
           "speedup_vmap_over_loop": t_loop / t_form,
           "max_rel_diff_vmap_vs_loop": float(np.max(np.abs(form - form_loop)) / np.max(np.abs(form_loop))),
           "var_r_derived": var_r, "var_r_monte_carlo": var_mc,
           "monte_carlo_se": var_mc * (2.0 / (args.draws - 1)) ** 0.5, "draws": args.draws}
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"{out['spec']}, one seed, {size} loss directions, {out['threads']} threads, median of {args.repeats}")
    print(f"(a) form, vmap (chunk {args.chunk}) + quadrature : {t_form:8.2f} s   Var_r = {var_r:.4f} (derived)")
    print(f"(b) form, one direction at a time      : {t_loop:8.2f} s   max |a - b| / max|b| = "
          f"{out['max_rel_diff_vmap_vs_loop']:.1e}   (a) is {out['speedup_vmap_over_loop']:.2f}x faster")
    print(f"(c) Monte Carlo over {args.draws} directions      : {t_mc:8.2f} s   Var_r = {var_mc:.4f} "
          f"+- {out['monte_carlo_se']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
