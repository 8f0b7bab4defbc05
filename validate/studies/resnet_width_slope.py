"""Does the measured exponent of a residual net move to the derived one as the width grows?

At fixed width ``n`` the campaign fits ``ln eta*`` on ``ln K`` up to K = 256, i.e. up to
``K / n = 4`` at the full-cpu preset's n = 64.  The derived exponent
(:func:`amutheory.api.derive`, the infinite-width coherent law) is a statement about
``K -> oo`` after ``n -> oo``.  This script measures the slope of ``ln eta*`` (``= -1/2`` the
slope of ``ln s_bar``, ``s_bar`` the arithmetic mean over seeds) between the same depths at
several widths, with a seed-bootstrap 95% CI (:func:`amutheory.stats.fit_loglog_slope`), and
says whether the derived exponent lies inside it.  A slope that moves toward the derived
exponent as ``n`` grows, at fixed K, is a finite-width effect; one that does not is not.

This script is the quick check of one convention between a few K with fresh seeds; the campaign
counterpart is the ``resnet-wide`` preset (every forward-stable convention of ``full-cpu`` at n = 128,
all K) with ``amutheory compare-widths results/quick results/resnet-wide`` (``results/quick``: a
``full-cpu`` run, the preset's name before issue 33), which also extrapolates
the exponent to ``n -> oo``.

Every (width, depth) is one block of seeds appended to ``--out`` (CSV, one line per seed;
default ``results/resnet_width_slope_<branch>_<init>_<activation>.csv``) as soon as it is
done; a rerun with the same arguments skips the blocks already there (resume), and a run with
another set-up into the same file is refused.  Bad input prints one line and exits 2.

    python validate/studies/resnet_width_slope.py                                    # conv-mlp, k-squared
    python validate/studies/resnet_width_slope.py --init k-all --widths 64,128 --depths 64,256 --json
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from amutheory import stats
from amutheory.api import derive
from amutheory.measure.probe import probe
from amutheory.spec import BRANCHES, INITS, ArchSpec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # validate/, for _blocks.py
from _blocks import OneLineParser, add_block_options, append_rows, check_seeds, positive_ints, read_rows  # noqa: E402

COLUMNS = ("branch", "init", "activation", "spatial", "width", "depth", "seed", "s_bar")


def parse(argv=None):
    p = OneLineParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--branch", default="conv-mlp", choices=BRANCHES, help="default conv-mlp")
    p.add_argument("--init", default="k-squared", choices=INITS, help="default k-squared")
    p.add_argument("--activation", default="relu", choices=("relu", "linear"), help="default relu")
    p.add_argument("--spatial", type=int, default=8, help="N (default 8, as the full-cpu preset)")
    p.add_argument("--widths", type=positive_ints, default=[64, 128], help="default 64,128")
    p.add_argument("--depths", type=positive_ints, default=[64, 256], help="K values, >= 2 of them (default 64,256)")
    add_block_options(p, 96, 3000, None, "(width, depth)")
    args = p.parse_args(argv)
    if args.out is None:  # one file per set-up, so conventions run one after another do not collide
        args.out = f"results/resnet_width_slope_{args.branch}_{args.init}_{args.activation}.csv"
    check_seeds(p, args)
    args.widths, args.depths = sorted(set(args.widths)), sorted(set(args.depths))
    if len(args.depths) < 2:
        p.error("--depths needs at least two values")
    return args


def _read(path: Path, key: tuple) -> dict:
    """``{(width, depth): {seed: s_bar}}`` of ``path`` (same set-up only)."""
    blocks: dict = {}
    for row in read_rows(path, lambda r: (r["branch"], r["init"], r["activation"], int(r["spatial"])), key):
        blocks.setdefault((int(row["width"]), int(row["depth"])), {})[int(row["seed"])] = float(row["s_bar"])
    return blocks


def main(argv=None) -> int:
    args = parse(argv)
    try:  # a bad size, or a forward-unstable convention (no power law to compare with)
        spec0 = ArchSpec(family="resnet", dim=1, kernel=3, padding="circular", spatial=args.spatial,
                         activation=args.activation, branch=args.branch, init=args.init, depth=max(args.depths),
                         width=min(args.widths))
        derived = derive(spec0).exponent
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    key = (args.branch, args.init, args.activation, args.spatial)
    done = _read(path, key)
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    rows = []
    for n in args.widths:
        columns = []
        for d in args.depths:
            have = done.get((n, d), {})
            if all(sd in have for sd in seeds):
                print(f"[n={n} K={d}] complete in {path}, skipped", file=sys.stderr)
                columns.append([have[sd] for sd in seeds])
                continue
            t0 = time.perf_counter()
            s = probe(spec0.with_(width=n, depth=d), seeds).s_bar
            append_rows(path, COLUMNS, [(*key, n, d, sd, v) for sd, v in zip(seeds, s)])
            print(f"[n={n} K={d}] {len(seeds)} seeds in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            columns.append(list(s))
        fit = stats.fit_loglog_slope(args.depths, np.array(columns).T)
        slope, ci = -fit.slope / 2, [-fit.ci[1] / 2, -fit.ci[0] / 2]
        rows.append({"width": n, "K_over_n": [d / n for d in args.depths], "exponent": slope, "ci": ci,
                     "derived_inside_ci": bool(ci[0] <= float(derived) <= ci[1])})
    out = {"branch": args.branch, "init": args.init, "activation": args.activation, "spatial": args.spatial,
           "depths": args.depths, "seeds": args.seeds, "derived_exponent": str(derived), "rows": rows}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"resnet {args.branch}/{args.init} ({args.activation}), N = {args.spatial}, K = "
              f"{', '.join(map(str, args.depths))}, {args.seeds} seeds; derived exponent {derived}")
        print(f"{'n':>5} {'K/n':>12} {'slope of ln eta* [95% CI]':>30} {'derived inside':>15}")
        for r in rows:
            kn = f"{r['K_over_n'][0]:g}..{r['K_over_n'][-1]:g}"
            print(f"{r['width']:>5} {kn:>12} {r['exponent']:>+10.3f} [{r['ci'][0]:+.3f}, {r['ci'][1]:+.3f}]"
                  f"{'yes' if r['derived_inside_ci'] else 'no':>15}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
