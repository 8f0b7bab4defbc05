"""Where the seed spread of ``ln s_bar`` comes from: the loss directions, or the net.

The probe's ``s_bar`` is a quadratic form in its Gaussian loss directions ``r``
(:mod:`amutheory.measure.loss_form`).  For every seed this script measures the form ``M`` (``B m``
probe evaluations, one per loss direction) and splits the spread over seeds by the law of total
variance (:func:`amutheory.measure.loss_form.spread_decomposition`):

    Var[ln s_bar]          = var_r  + var_net     (loss directions given the net | the net itself)
    E[ln s_bar] - ln E[s_bar] = gap_r + gap_net   (typical value below the mean, in logs)

``var_r`` and ``gap_r`` are *derived* from each seed's spectrum of ``M``
(:mod:`amutheory.symbolic.primitives.spread`); the left sides are measured from the probe's own ``r``.
At infinite width ``M = C (x) I_m``, so the loss directions spread ``ln s_bar`` by between
``psi'(B m / 2)`` (samples uncoupled) and ``psi'(m / 2)`` (all coupled) whatever the width (a
range checked on random couplings, not proved): the script prints both.  A part that does not fall with the width is not a finite-width effect.

Every (width, depth) is one block of seeds appended to ``--out`` as soon as it is done; a rerun
with the same arguments skips finished blocks (resume), and a file of another set-up is refused.

    python validate/studies/spread_decomposition.py                       # conv-mlp/k-squared/ReLU resnet
    python validate/studies/spread_decomposition.py --branch conv-mlp --init k-last --activation linear
    python validate/studies/spread_decomposition.py --family conv --depths 4,8,16 --widths 32,64,128
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from amutheory.measure.loss_form import DECOMPOSITION_KEYS, PER_SEED_KEYS, measure_loss_form, spread_decomposition
from amutheory.spec import ArchSpec, BRANCHES, INITS
from amutheory.symbolic.primitives.spread import chi_square_var

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # validate/, for _blocks.py
from _blocks import OneLineParser, add_block_options, append_rows, check_seeds, positive_ints, read_rows  # noqa: E402

SETUP = ("family", "branch", "init", "activation", "kernel", "spatial", "batch", "outputs")
VALUES = PER_SEED_KEYS
COLUMNS = SETUP + ("width", "depth", "seed") + VALUES


def parse(argv=None):
    p = OneLineParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--family", default="resnet", choices=("resnet", "conv"), help="default resnet")
    p.add_argument("--branch", default="conv-mlp", choices=BRANCHES, help="default conv-mlp")
    p.add_argument("--init", default="k-squared", choices=INITS, help="default k-squared")
    p.add_argument("--activation", default="relu", choices=("linear", "relu"), help="default relu")
    p.add_argument("--depths", type=positive_ints, default=[2, 8, 32], help="K (resnet) or L (conv); default 2,8,32")
    p.add_argument("--widths", type=positive_ints, default=[32, 64, 128], help="default 32,64,128")
    p.add_argument("--kernel", type=int, default=3, help="default 3")
    p.add_argument("--spatial", type=int, default=8, help="default 8")
    p.add_argument("--batch", type=int, default=8, help="default 8")
    p.add_argument("--outputs", type=int, default=10, help="default 10")
    p.add_argument("--chunk", type=int, default=20, help="loss directions vectorised at once (memory only; default 20)")
    add_block_options(p, 48, 0, "results/spread_decomposition.csv", "(width, depth)")
    args = p.parse_args(argv)
    check_seeds(p, args, minimum=3)
    return args


def _spec(args, width: int, depth: int) -> ArchSpec:
    extra = dict(branch=args.branch, init=args.init) if args.family == "resnet" else {}
    return ArchSpec(family=args.family, activation=args.activation, width=width, depth=depth, kernel=args.kernel,
                    spatial=args.spatial, batch=args.batch, outputs=args.outputs, **extra)


def _key(args) -> tuple:
    return tuple(str(getattr(args, c)) for c in SETUP)


def main(argv=None) -> int:
    args = parse(argv)
    try:
        for n in args.widths:
            for d in args.depths:
                _spec(args, n, d)
    except ValueError as exc:  # a bad size: one line, exit 2
        print(f"error: {exc}", file=sys.stderr)
        return 2
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    done: dict = {}
    for row in read_rows(path, lambda r: tuple(r[c] for c in SETUP), _key(args)):
        done.setdefault((int(row["width"]), int(row["depth"])), {})[int(row["seed"])] = row
    results = []
    for n in args.widths:
        for d in args.depths:
            have = done.get((n, d), {})
            if all(sd in have for sd in seeds):
                per = {v: np.array([float(have[sd][v]) for sd in seeds]) for v in VALUES}
                print(f"[n={n} depth={d}] complete in {path}, skipped", file=sys.stderr)
            else:
                t0 = time.perf_counter()
                per = measure_loss_form(_spec(args, n, d), seeds, chunk=args.chunk).per_seed()
                append_rows(path, COLUMNS, [_key(args) + (n, d, sd) + tuple(float(per[v][i]) for v in VALUES)
                                            for i, sd in enumerate(seeds)])
                print(f"[n={n} depth={d}] {len(seeds)} seeds in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            results.append({"width": n, "depth": d, **spread_decomposition(per)})
    out = {"setup": dict(zip(SETUP, _key(args))), "seeds": args.seeds, "first_seed": args.first_seed,
           "var_r_all_coupled": chi_square_var(args.outputs), "var_r_uncoupled": chi_square_var(args.batch * args.outputs),
           "rows": results}
    if args.json:
        print(json.dumps(out))
        return 0
    what = (f"resnet {args.branch}/{args.init}" if args.family == "resnet" else "conv chain") + f"/{args.activation}"
    print(f"{what}, k = {args.kernel}, N = {args.spatial}, B = {args.batch}, m = {args.outputs}; "
          f"{args.seeds} seeds per row, 95% seed-bootstrap CIs")
    print(f"loss directions alone at infinite width: Var_r between psi'(Bm/2) = {out['var_r_uncoupled']:.3f} "
          f"(samples uncoupled) and psi'(m/2) = {out['var_r_all_coupled']:.3f} (all coupled)")
    head = f"{'n':>5} {'depth':>5} " + " ".join(f"{k:>20}" for k in DECOMPOSITION_KEYS)
    print(head)
    for r in results:
        print(f"{r['width']:>5} {r['depth']:>5} " + " ".join(
            f"{r[k]['value']:>7.3f} [{r[k]['ci'][0]:.2f},{r[k]['ci'][1]:.2f}]" for k in DECOMPOSITION_KEYS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
