"""Residual nets at several widths against the exact law over their points, seed by seed: is the law
the infinite-width limit of these nets, and how large is their finite-width excess?

The law over the points (:func:`amutheory.symbolic.resnet.operator.draw_layer_moments`) is derived at
infinite width *given* a seed's inputs and loss directions (linear residual nets, either padding;
ReLU ``conv-mlp``).  At finite width ``n`` the measured mean sits above it by terms the law leaves
out.  If the law is the limit, the measured / law ratio goes to 1 as ``n`` grows, like ``1 + c/n``
for the one-step update's ``O(1/n)`` terms; if the law misses something at infinite width, the ratio
goes to a value other than 1.  This script measures real nets (the one-step probe) at each K of
``--depths`` and each width of ``--widths``, computes the law given every seed's own inputs and
directions (paired: the inputs' spread cancels), and reports per (K, width) the ratio of the seed
means with its 95% paired seed-bootstrap CI, then per K the weighted least-squares line
``ratio = a + c / n`` through the widths with a bootstrap CI of ``a`` (the limit) and ``c`` (the
excess coefficient): the seeds of each width are resampled on their own (different widths draw
different weights).  ``a``'s CI holding 1 is the evidence that the law is the limit; its width is
what the seeds allow.

Every ``--chunk`` of seeds of a (K, width) is appended to ``--out`` (CSV) as soon as it is done; a
rerun with the same set-up measures only the seeds not yet there (so more ``--seeds`` adds to the
blocks), a different set-up into the same file is refused.  Bad input prints one line and exits 2.

    python validate/studies/resnet_width_law.py                      # ReLU conv-mlp/k-last, N = 4, B = 1, K = 4
    python validate/studies/resnet_width_law.py --depths 16 --spatial 8 --batch 8 --widths 128,256,512 --seeds 128
    python validate/studies/resnet_width_law.py --activation linear --padding zero --json
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import scipy.stats

from amutheory.measure.probe import law_given_seeds, probe
from amutheory.spec import ArchSpec
from amutheory.symbolic.resnet import operator as resnet_operator
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # validate/, for _blocks.py
sys.path.insert(0, str(Path(__file__).resolve().parent))  # validate/studies/, for resnet_point_law.py
from _blocks import OneLineParser, add_block_options, append_rows, check_seeds, positive_ints, read_rows, spec_or_error  # noqa: E402,E501
from resnet_point_law import summarise  # noqa: E402

SETUP = ("branch", "init", "activation", "padding", "kernel", "spatial", "dim", "batch", "input_channels")
COLUMNS = SETUP + ("depth", "width", "seed", "s_bar", "law")
N_BOOT = 2000


def parse(argv=None):
    p = OneLineParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--branch", default="conv-mlp", choices=resnet_operator.BRANCHES, help="default conv-mlp")
    p.add_argument("--init", default="k-last", help="init convention (default k-last)")
    p.add_argument("--activation", default="relu", choices=("linear", "relu"), help="default relu")
    p.add_argument("--padding", default="circular", choices=("circular", "zero"), help="default circular")
    p.add_argument("--depths", type=positive_ints, default=[4], help="K values (default 4)")
    p.add_argument("--widths", type=positive_ints, default=[128, 256, 512, 1024], help="default 128,256,512,1024")
    p.add_argument("--spatial", type=int, default=4, help="N (default 4)")
    p.add_argument("--kernel", type=int, default=3, help="k (default 3)")
    p.add_argument("--dim", type=int, default=1, choices=(1, 2), help="default 1")
    p.add_argument("--batch", type=int, default=1, help="B (default 1)")
    p.add_argument("--input-channels", type=int, default=3, help="c_in (default 3, as the campaigns)")
    add_block_options(p, 256, 0, "results/resnet_width_law.csv", "(K, width)")
    p.add_argument("--chunk", type=int, default=16,
                   help="seeds measured at a time and written together (default 16; lower it for wide deep nets: "
                        "n = 512, K = 64, N = B = 8 peaks at 10 GB with 4 and ran out of 24 GB with 16)")
    args = p.parse_args(argv)
    check_seeds(p, args)
    if len(args.widths) < 2:
        p.error("--widths needs at least two widths for the 1/n line")
    for n in args.widths:  # every width must make a valid net the law covers (one-line error otherwise)
        spec_or_error(p, lambda: _spec(args, max(args.depths), n))
    return args


def _spec(args, depth: int, width: int) -> ArchSpec:
    spec = ArchSpec(family="resnet", branch=args.branch, init=args.init, activation=args.activation,
                    padding=args.padding, kernel=args.kernel, spatial=args.spatial, dim=args.dim, batch=args.batch,
                    input_channels=args.input_channels, depth=depth, width=width)
    resnet_operator.check_spec(spec)
    return spec


def _setup(row: dict) -> tuple:
    return tuple(row[c] for c in SETUP)


def limit_line(blocks: dict, seed: int = 0) -> dict:
    """``ratio = a + c / n`` through ``{width: (measured, law)}`` (seed arrays), weighted by each
    width's bootstrap variance of its ratio of means; ``a`` and ``c`` with 95% bootstrap CIs, each
    width's seeds resampled on their own, and the line's chi-square with ``widths - 2`` degrees of
    freedom and its p-value (``None`` for two widths): a small p says the ratios do not lie on a
    ``1/n`` line, so its limit is not to be read as the infinite-width value."""
    rng = np.random.default_rng(seed)
    widths = sorted(blocks)
    x = 1.0 / np.array(widths, dtype=float)

    def ratios(idx):
        return np.array([blocks[n][0][i].mean() / blocks[n][1][i].mean() for n, i in zip(widths, idx)])

    reps = np.array([ratios([rng.integers(0, len(blocks[n][0]), len(blocks[n][0])) for n in widths])
                     for _ in range(N_BOOT)])
    w = 1.0 / np.maximum(reps.var(axis=0, ddof=1), 1e-300)

    def fit(y):
        X = np.stack([np.ones_like(x), x], axis=1) * np.sqrt(w)[:, None]
        return np.linalg.lstsq(X, y * np.sqrt(w), rcond=None)[0]

    y = ratios([np.arange(len(blocks[n][0])) for n in widths])
    a, c = fit(y)
    boot = np.array([fit(r) for r in reps])
    (alo, clo), (ahi, chi) = np.quantile(boot, [0.025, 0.975], axis=0)
    dof = len(widths) - 2
    chi2 = float(np.sum(w * (y - a - c * x) ** 2))
    return {"limit": float(a), "limit_ci": [float(alo), float(ahi)], "limit_inside": bool(alo <= 1 <= ahi),
            "excess_coefficient": float(c), "excess_coefficient_ci": [float(clo), float(chi)],
            "line_chi2": chi2, "line_dof": dof,
            "line_p": float(scipy.stats.chi2.sf(chi2, dof)) if dof else None}


def main(argv=None) -> int:
    args = parse(argv)
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    key = tuple(str(getattr(args, c)) for c in SETUP)
    done: dict = {}
    for row in read_rows(path, _setup, key):
        done.setdefault((int(row["depth"]), int(row["width"])), {})[int(row["seed"])] = (float(row["s_bar"]),
                                                                                       float(row["law"]))
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    total, step, per_depth = len(args.depths) * len(args.widths), 0, []
    for K in args.depths:
        blocks, rows = {}, []
        for n in args.widths:
            step += 1
            have = done.get((K, n), {})
            missing = [sd for sd in seeds if sd not in have]
            if not missing:
                print(f"[{step}/{total}] K={K} n={n}: complete in {path}, skipped", file=sys.stderr)
            else:  # only the seeds not yet in the file, a chunk at a time: an interruption loses one chunk
                spec = _spec(args, K, n)
                t_probe = t_law = 0.0
                for start in range(0, len(missing), args.chunk):
                    part = missing[start:start + args.chunk]
                    t0 = time.perf_counter()
                    measured = probe(spec, part, chunk=args.chunk).s_bar
                    t1 = time.perf_counter()
                    law = law_given_seeds(spec, part)
                    t_probe, t_law = t_probe + t1 - t0, t_law + time.perf_counter() - t1
                    new = dict(zip(part, zip(measured.tolist(), law)))
                    append_rows(path, COLUMNS, [key + (K, n, sd, m, w) for sd, (m, w) in new.items()])
                    have = {**have, **new}
                print(f"[{step}/{total}] K={K} n={n}: {len(missing)} seeds measured in {t_probe:.1f} s, "
                      f"law in {t_law:.1f} s", file=sys.stderr)
            vals = [have[sd] for sd in seeds]
            meas, law = np.array([v[0] for v in vals]), np.array([v[1] for v in vals])
            blocks[n] = (meas, law)
            s = summarise(meas, law)
            rows.append({"width": n, "K_over_n": K / n, "ratio": s["ratio"], "ci": s["ci"],
                         "law_inside": s["law_inside"], "excess_times_n": (s["ratio"] - 1) * n})
        per_depth.append({"depth": K, "rows": rows, **limit_line(blocks)})
    result = {**{c: getattr(args, c) for c in SETUP}, "seeds": args.seeds, "first_seed": args.first_seed,
              "depths": per_depth}
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"{args.activation} {args.branch}/{args.init}, {args.padding} padding, N = {args.spatial}, k = {args.kernel}, "
          f"{args.dim}D, B = {args.batch}, c_in = {args.input_channels}, {args.seeds} seeds per (K, width): measured / "
          "law given each seed (nothing fitted), 95% paired bootstrap CI")
    for d in per_depth:
        print(f"K = {d['depth']}:")
        print(f"{'n':>6} {'K/n':>7} {'measured/law [95% CI]':>28} {'(ratio-1) n':>12}")
        for r in d["rows"]:
            print(f"{r['width']:>6} {r['K_over_n']:>7.3f} {r['ratio']:>9.4f} [{r['ci'][0]:.4f}, {r['ci'][1]:.4f}]"
                  f" {r['excess_times_n']:>12.2f}")
        print(f"  line a + c/n: limit a = {d['limit']:.4f} [{d['limit_ci'][0]:.4f}, {d['limit_ci'][1]:.4f}] "
              f"({'holds' if d['limit_inside'] else 'excludes'} 1), c = {d['excess_coefficient']:.2f} "
              f"[{d['excess_coefficient_ci'][0]:.2f}, {d['excess_coefficient_ci'][1]:.2f}]"
              + (f"; fit chi2 = {d['line_chi2']:.2f} on {d['line_dof']} dof, p = {d['line_p']:.3f}" if d["line_dof"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
