"""Zero padding in residual nets: the zero / circular ratio of ``s_bar`` against K, measured and by law.

For conv *chains* the boundary keeps eating the one-step update as L grows (README, "Zero padding":
the local slope of eta* shifts by ~``0.4 sqrt(L) k / N``, so the paper's "constant-level boundary
effects" fail at practical sizes).  A residual net with a forward-stable init moves its stream by
``O(1/K)`` per block, so the boundary's reach stays bounded as K grows and the ratio should settle
to a constant: constant-level in K, though not close to 1 at small N.  This script measures that
on real nets and, for linear nets, compares it with the exact law over the points
(:func:`amutheory.symbolic.resnet.operator.draw_layer_moments`, given each seed's inputs and loss
directions, nothing fitted); the law covers linear nets and ReLU ``conv-mlp``, other ReLU branches are
measured only.

Both paddings use the same seeds, i.e. the same weights, inputs and loss directions (the probe
draws them from the seed alone), so the ratio's 95% CI is a paired seed bootstrap.  Per depth:
the ratio of the seed means, measured [CI] and by law on the same seeds; measured / law for each
padding; and between consecutive depths the boundary's shift of the local slope of eta*,
``-1/2 d ln ratio / d ln K`` (the ``boundary`` command's criterion: constant-level when at most 0.05).

Every (depth, padding) is one block of seeds appended to ``--out`` (CSV, one line per seed; default
``results/resnet_zero_padding_<branch>_<init>_<activation>.csv``) as soon as it is done; a rerun with
the same arguments skips the blocks already there (resume), and a run with another set-up into the
same file is refused.  Bad input prints one line and exits 2.

    python validate/studies/resnet_zero_padding.py                                  # conv-mlp k-last linear
    python validate/studies/resnet_zero_padding.py --activation relu --depths 2,8,32 --json
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from amutheory.campaign.bootstrap import _quantile_ci, ratio_bootstrap
from amutheory.measure.probe import law_given_seeds, probe
from amutheory.spec import BRANCHES, INITS, ArchSpec
from amutheory.symbolic.resnet import operator as resnet_operator
from amutheory.symbolic.resnet.coherent import is_forward_stable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # validate/, for _blocks.py
from _blocks import OneLineParser, add_block_options, append_rows, check_seeds, positive_ints, read_rows  # noqa: E402

COLUMNS = ("branch", "init", "activation", "spatial", "batch", "width", "depth", "padding", "seed", "s_bar", "law")
#: largest shift of the local slope of eta* that still counts as constant-level (the boundary command's)
CONSTANT_LEVEL = 0.05


def parse(argv=None):
    p = OneLineParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--branch", default="conv-mlp", choices=BRANCHES, help="default conv-mlp")
    p.add_argument("--init", default="k-last", choices=INITS, help="default k-last")
    p.add_argument("--activation", default="linear", choices=("linear", "relu"),
                   help="default linear (the law covers linear nets and ReLU conv-mlp; other ReLU nets are measured only)")
    p.add_argument("--width", type=int, default=128, help="n (default 128)")
    p.add_argument("--spatial", type=int, default=8, help="N (default 8, as the campaign)")
    p.add_argument("--batch", type=int, default=8, help="B (default 8, as the campaign)")
    p.add_argument("--depths", type=positive_ints, default=[2, 4, 8, 16, 32, 64], help="K values (default 2..64)")
    add_block_options(p, 64, 0, None, "(depth, padding)")
    args = p.parse_args(argv)
    if args.out is None:
        args.out = f"results/resnet_zero_padding_{args.branch}_{args.init}_{args.activation}.csv"
    check_seeds(p, args)
    if args.width < 1:
        p.error("--width must be >= 1")
    args.depths = sorted(set(args.depths))
    return args


def _read(path: Path, key: tuple) -> dict:
    """``{(depth, padding): {seed: (s_bar, law)}}`` of ``path`` (same set-up only)."""
    blocks: dict = {}
    setup = lambda r: (r["branch"], r["init"], r["activation"], int(r["spatial"]), int(r["batch"]),  # noqa: E731
                       int(r["width"]))
    for row in read_rows(path, setup, key):
        law = float(row["law"]) if row["law"] not in ("", "nan") else math.nan
        blocks.setdefault((int(row["depth"]), row["padding"]), {})[int(row["seed"])] = (float(row["s_bar"]), law)
    return blocks


def summarise(depths, measured: dict, law: dict | None) -> list[dict]:
    """Per depth: the ratio zero / circular of the seed means [95% paired bootstrap CI], the law's on
    the same seeds, and measured / law per padding; between consecutive depths the slope shift."""
    z = np.array([measured[(d, "zero")] for d in depths]).T
    c = np.array([measured[(d, "circular")] for d in depths]).T
    ratio, reps = ratio_bootstrap(z, c)
    lo, hi = _quantile_ci(reps)
    rows = []
    for j, d in enumerate(depths):
        row = {"depth": d, "ratio": float(ratio[j]), "ci": [float(lo[j]), float(hi[j])]}
        if law is not None:
            lz, lc = np.mean(law[(d, "zero")]), np.mean(law[(d, "circular")])
            row.update(law_ratio=float(lz / lc), law_inside_ci=bool(lo[j] <= lz / lc <= hi[j]),
                       measured_over_law={"zero": float(z[:, j].mean() / lz), "circular": float(c[:, j].mean() / lc)})
        if j:
            step = np.log(depths[j] / depths[j - 1])
            shift = -0.5 * np.log(reps[:, j] / reps[:, j - 1]) / step
            row["slope_shift"] = float(-0.5 * np.log(ratio[j] / ratio[j - 1]) / step)
            row["slope_shift_ci"] = [float(v) for v in np.quantile(shift, [0.025, 0.975])]
            if law is not None:
                prev = np.mean(law[(depths[j - 1], "zero")]) / np.mean(law[(depths[j - 1], "circular")])
                row["law_slope_shift"] = float(-0.5 * np.log(row["law_ratio"] / prev) / step)
        rows.append(row)
    return rows


def main(argv=None) -> int:
    args = parse(argv)
    try:
        spec0 = ArchSpec(family="resnet", dim=1, kernel=3, spatial=args.spatial, batch=args.batch, width=args.width,
                         activation=args.activation, branch=args.branch, init=args.init, depth=max(args.depths))
        if not is_forward_stable(spec0):
            raise ValueError(f"init: {args.branch}/{args.init} ({args.activation}) is not forward-stable; "
                             "its eta* is no power law to compare paddings on")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    covered = resnet_operator.covers(spec0.with_(padding="zero"))  # linear nets and ReLU conv-mlp; others measured only
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    key = (args.branch, args.init, args.activation, args.spatial, args.batch, args.width)
    done = _read(path, key)
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    measured, law = {}, ({} if covered else None)
    total, step = 2 * len(args.depths), 0
    for d in args.depths:
        for pad in ("zero", "circular"):
            step += 1
            have = done.get((d, pad), {})
            if all(sd in have for sd in seeds):
                vals = [have[sd] for sd in seeds]
                if law is not None and any(math.isnan(w) for _, w in vals):  # measured before the law covered it
                    t0 = time.perf_counter()
                    laws = law_given_seeds(spec0.with_(depth=d, padding=pad), seeds)
                    vals = [(v, w) for (v, _), w in zip(vals, laws)]
                    append_rows(path, COLUMNS, [(*key[:5], args.width, d, pad, sd, v, w)
                                                for sd, (v, w) in zip(seeds, vals)])
                    print(f"[{step}/{total}] K={d} {pad}: measured in {path}; the law added in "
                          f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)
                else:
                    print(f"[{step}/{total}] K={d} {pad}: complete in {path}, skipped", file=sys.stderr)
            else:
                t0 = time.perf_counter()
                spec = spec0.with_(depth=d, padding=pad)
                s = probe(spec, seeds).s_bar
                laws = law_given_seeds(spec, seeds) if law is not None else [math.nan] * len(seeds)
                append_rows(path, COLUMNS, [(*key[:5], args.width, d, pad, sd, v, w)
                                            for sd, v, w in zip(seeds, s, laws)])
                print(f"[{step}/{total}] K={d} {pad}: {len(seeds)} seeds in {time.perf_counter() - t0:.1f} s",
                      file=sys.stderr)
                vals = list(zip(s, laws))
            measured[(d, pad)] = [v for v, _ in vals]
            if law is not None:
                law[(d, pad)] = [w for _, w in vals]
    rows = summarise(args.depths, measured, law)
    deepest = rows[-1].get("slope_shift")
    out = {"branch": args.branch, "init": args.init, "activation": args.activation, "width": args.width,
           "spatial": args.spatial, "batch": args.batch, "seeds": args.seeds, "rows": rows,
           "constant_level_at_deepest": None if deepest is None else bool(abs(deepest) <= CONSTANT_LEVEL)}
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"resnet {args.branch}/{args.init} ({args.activation}), n = {args.width}, N = {args.spatial}, "
          f"B = {args.batch}, {args.seeds} seeds: E[s_bar] zero / circular")
    head = f"{'K':>5} {'measured [95% CI]':>26}" + (f" {'law':>7} {'in':>4} {'meas/law zero, circ':>21}"
                                                    if law is not None else "")
    print(head + f" {'slope shift [95% CI]':>26}" + (f" {'law':>7}" if law is not None else ""))
    for r in rows:
        line = f"{r['depth']:>5} {r['ratio']:>8.4f} [{r['ci'][0]:.4f}, {r['ci'][1]:.4f}]"
        if law is not None:
            mol = r["measured_over_law"]
            line += f" {r['law_ratio']:>7.4f} {'yes' if r['law_inside_ci'] else 'no':>4} " \
                    f"{mol['zero']:>10.3f} {mol['circular']:>10.3f}"
        if "slope_shift" in r:
            ci = r["slope_shift_ci"]
            line += f" {r['slope_shift']:>+8.4f} [{ci[0]:+.4f}, {ci[1]:+.4f}]"
            if law is not None:
                line += f" {r['law_slope_shift']:>+7.4f}"
        print(line)
    if deepest is not None:
        verdict = "constant-level" if out["constant_level_at_deepest"] else "not constant-level"
        print(f"boundary at the deepest step: slope shift {deepest:+.4f} -> {verdict} (criterion |shift| <= "
              f"{CONSTANT_LEVEL})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
