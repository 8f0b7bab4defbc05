"""How far the mean over seeds of a finite-width conv chain sits from its infinite-width law.

The exact laws (``amutheory.api.derived_mean``: the spectral law of linear circular chains, the
operator law of linear zero-padded ones, the kernel law of ReLU chains) give the expectation of
``s_bar`` at infinite width, with nothing fitted (the kernel law by a Monte-Carlo input average,
its relative error at most 1% here).  This script measures, at one depth and several widths, the
ratio ``mean_seeds(s_bar) / law`` (arithmetic mean, percentile-bootstrap 95% CI) and the same for
the geometric mean, whose drop below the law is the seed spread ``exp(-Var[ln s_bar]/2)``.  It is
the measured answer to "how big is the finite-width factor of the mean" for these chains.

Every width is one block of seeds appended to ``--out`` (CSV, one line per seed) as soon as it
is done; a rerun with the same arguments skips the widths already there (resume), and a run
with other arguments into the same file is refused.

    python validate/studies/finite_width_mean.py                          # L = 8, n = 32..256, 256 seeds
    python validate/studies/finite_width_mean.py --depth 16 --widths 64,128,256 --seeds 128 --json
    python validate/studies/finite_width_mean.py --activation relu --spatial 8 --depth 16 --widths 32,64,128,256
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from amutheory import stats
from amutheory.api import derived_mean
from amutheory.measure.probe import probe
from amutheory.spec import ArchSpec
from amutheory.symbolic.chain import kernel_law
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # validate/, for _blocks.py
from _blocks import OneLineParser, add_block_options, append_rows, check_seeds, positive_ints, read_rows  # noqa: E402

COLUMNS = ("depth", "width", "spatial", "kernel", "dim", "batch", "seed", "s_bar", "activation", "padding")
#: relative Monte-Carlo error of the kernel law's mean here (the measured CIs are +-5..25%)
LAW_TARGET = 0.01


def parse(argv=None):
    p = OneLineParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--depth", type=int, default=8, help="depth L (default 8)")
    p.add_argument("--widths", type=positive_ints, default=[32, 64, 128, 256], help="default 32,64,128,256")
    p.add_argument("--spatial", type=int, default=16, help="N (default 16)")
    p.add_argument("--kernel", type=int, default=3, help="k (default 3)")
    p.add_argument("--dim", type=int, default=1, choices=(1, 2), help="default 1")
    p.add_argument("--batch", type=int, default=8, help="default 8")
    p.add_argument("--activation", default="linear", choices=("linear", "relu"), help="default linear")
    p.add_argument("--padding", default="circular", choices=("circular", "zero"), help="default circular")
    add_block_options(p, 256, 2000, "results/finite_width_mean.csv", "width")
    args = p.parse_args(argv)
    check_seeds(p, args)
    return args


def _setup(row: dict) -> tuple:
    setup = tuple(int(row[c]) for c in COLUMNS[2:6]) + (int(row["depth"]),)
    # files written before the activation/padding columns are linear circular
    return setup + (row.get("activation") or "linear", row.get("padding") or "circular")


def _read(path: Path, key: tuple) -> dict:
    """``{width: [s_bar per seed]}`` of complete blocks in ``path`` (same set-up only)."""
    blocks: dict = {}
    for row in read_rows(path, _setup, key):
        blocks.setdefault(int(row["width"]), []).append(float(row["s_bar"]))
    return blocks


def _spec(args, width: int) -> ArchSpec:
    return ArchSpec(family="conv", dim=args.dim, activation=args.activation, padding=args.padding, width=width,
                    kernel=args.kernel, spatial=args.spatial, batch=args.batch, depth=args.depth)


def main(argv=None) -> int:
    args = parse(argv)
    try:
        _spec(args, min(args.widths))
    except ValueError as exc:  # a bad size: one line, exit 2
        print(f"error: {exc}", file=sys.stderr)
        return 2
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    key = (args.spatial, args.kernel, args.dim, args.batch, args.depth, args.activation, args.padding)
    done = _read(path, key)
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    rows = []
    for n in args.widths:
        spec = _spec(args, n)
        if len(done.get(n, [])) == len(seeds):
            s = np.array(done[n])
            print(f"[n={n}] complete in {path}, skipped", file=sys.stderr)
        else:
            t0 = time.perf_counter()
            s = probe(spec, seeds).s_bar
            append_rows(path, COLUMNS, [(args.depth, n, args.spatial, args.kernel, args.dim, args.batch, sd, v,
                                         args.activation, args.padding) for sd, v in zip(seeds, s)])
            print(f"[n={n}] {len(seeds)} seeds in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        if args.activation == "relu":
            law = float(kernel_law.kernel_s_bar(spec, [args.depth], target=LAW_TARGET)["s_bar"][0])
        else:
            law = float(derived_mean(spec, [args.depth], 1.0)[0][0])
        m, lo, hi = stats.arith_mean_ci(s)
        g, glo, ghi = stats.geo_mean_ci(s)
        rows.append({"width": n, "L_over_n": args.depth / n, "law": law, "mean_over_law": m / law,
                     "mean_over_law_ci": [lo / law, hi / law], "geo_over_law": g / law,
                     "geo_over_law_ci": [glo / law, ghi / law], "var_ln_s_bar": float(np.var(np.log(s), ddof=1)),
                     "law_inside_mean_ci": bool(lo <= law <= hi)})
    out = {"depth": args.depth, "spatial": args.spatial, "kernel": args.kernel, "dim": args.dim,
           "batch": args.batch, "activation": args.activation, "padding": args.padding, "seeds": args.seeds,
           "rows": rows}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{args.activation} {args.padding} conv{args.dim}d, L = {args.depth}, N = {args.spatial}, "
              f"k = {args.kernel}, B = {args.batch}, {args.seeds} seeds per width; law = exact at infinite width, "
              "nothing fitted")
        print(f"{'n':>5} {'L/n':>7} {'mean/law [95% CI]':>26} {'geo/law [95% CI]':>26} {'Var ln s':>9}")
        for r in rows:
            print(f"{r['width']:>5} {r['L_over_n']:>7.3f} {r['mean_over_law']:>8.3f} "
                  f"[{r['mean_over_law_ci'][0]:.3f}, {r['mean_over_law_ci'][1]:.3f}]   {r['geo_over_law']:>8.3f} "
                  f"[{r['geo_over_law_ci'][0]:.3f}, {r['geo_over_law_ci'][1]:.3f}] {r['var_ln_s_bar']:>9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
