"""Each law's cost estimate (:meth:`amutheory.laws.Law.cost`) next to the time its evaluation takes.

The estimates decide whether ``predict``'s default may take a more exact law within its budget
(:data:`amutheory.laws.DEFAULT_BUDGET_S`); their units (:mod:`amutheory.laws.costs`) were calibrated
with these timings.  One torch thread; the ratio measured / estimated is printed per case, and a
case whose estimate is over ``--limit`` seconds is reported without being run.

    python validate/benchmark_law_costs.py            # a few minutes on 2 cores
    python validate/benchmark_law_costs.py --fit      # the finite-width kernel law's units, refitted (15 minutes)
    python validate/benchmark_law_costs.py --fit-loops  # only the drawn loops' units (GELU chains)
    python validate/benchmark_law_costs.py --samplers # the drawn law with either sampler, timed in one run
    python validate/benchmark_law_costs.py --adjoint  # the drawn law's recursion against the naive sums, one run
    python validate/benchmark_law_costs.py --precision  # its single-precision cuts against double throughout, one run
    python validate/benchmark_law_costs.py --choices  # predict's budget-scaled defaults near the edge: estimate, time
    python validate/benchmark_law_costs.py --fit-points  # the residual law over the points: seconds per block, and
                                                         # what averaging the loss directions exactly saves
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from amutheory import ArchSpec
from amutheory.laws import get_law

CASES = [  # (law, spec, depths)
    ("chain-spectral", ArchSpec(dim=1, width=64, spatial=16, activation="linear"), [4, 8, 16, 32]),
    ("chain-operator", ArchSpec(dim=1, width=64, spatial=16, activation="linear", padding="zero"), [4, 8, 16, 32]),
    ("chain-kernel", ArchSpec(dim=1, width=64, spatial=8, activation="relu", padding="zero"), [2, 4, 8]),
    ("chain-kernel", ArchSpec(dim=1, width=64, spatial=16, activation="relu", padding="zero"), [2, 4, 8]),
    ("resnet-dense", ArchSpec(family="resnet", width=64, kernel=1, spatial=1, batch=1, branch="conv-mlp"), [4, 16, 64]),
    ("resnet-modes", ArchSpec(family="resnet", width=64, spatial=8, branch="conv", activation="linear"), [4, 16, 64]),
    ("resnet-points", ArchSpec(family="resnet", width=64, spatial=4, batch=2, branch="conv-mlp"), [2, 4, 8]),
    ("resnet-points", ArchSpec(family="resnet", width=64, spatial=8, batch=2, branch="conv-mlp"), [2, 4]),
    ("resnet-points", ArchSpec(family="resnet", width=64, spatial=8, batch=8, branch="conv-mlp"), [2]),
    ("chain-kernel-finite-backward", ArchSpec(dim=1, width=32, spatial=8, input_channels=3, activation="relu"), [8, 12, 16]),
    ("chain-kernel-finite-backward", ArchSpec(dim=1, width=128, spatial=8, input_channels=3, activation="relu"), [8, 12, 16]),
    ("chain-kernel-finite-backward", ArchSpec(dim=1, width=32, spatial=16, activation="relu"), [4, 8, 16]),
    ("chain-kernel-finite-backward", ArchSpec(dim=1, width=64, spatial=16, activation="relu", padding="zero"), [8, 16, 32]),
    ("mlp-kernel-finite", ArchSpec(family="mlp", width=32, activation="relu", input_channels=16), [8, 12, 16]),
    ("mlp-kernel-finite", ArchSpec(family="mlp", width=128, activation="relu", input_channels=16), [8, 12, 16]),
    ("mlp-kernel", ArchSpec(family="mlp", width=64, activation="gelu", input_channels=8, batch=3), [3, 6]),
    ("mlp-kernel-finite", ArchSpec(family="mlp", width=64, activation="gelu", input_channels=16), [8, 12, 16]),
    ("chain-kernel-finite", ArchSpec(dim=1, width=32, spatial=8, input_channels=3, activation="gelu"), [8, 12, 16]),
    ("chain-coherent", ArchSpec(dim=1, width=64, spatial=16, activation="relu"), [8, 16]),
    ("resnet-coherent", ArchSpec(family="resnet", width=64, spatial=8, branch="conv-mlp"), [8, 16]),
]


#: the timing grid of ``--fit``: (dim, batch, spatial, kernel) x widths x depth sets, ReLU, 128 draws each
FIT_GEOMETRIES = [(1, 8, 8, 3), (1, 8, 16, 3), (1, 4, 32, 3), (1, 2, 8, 3), (1, 8, 1, 1), (1, 16, 1, 1), (2, 8, 8, 3)]
FIT_WIDTHS, FIT_DEPTHS, FIT_DRAWS = (32, 64, 128), ([4, 8], [7, 8, 9, 15, 16, 17]), 128


def fit_kernel_finite() -> None:
    """Time the finite-width kernel law (its sampler as it chooses) on :data:`FIT_GEOMETRIES` and fit the units of
    :func:`amutheory.laws.costs.kernel_finite_seconds` by non-negative least squares on relative error; prints
    each timing, the fit's ratio to it, and the fitted units next to the ones in use (those are the fit rounded
    up by half)."""
    import numpy as np
    from scipy.optimize import nnls

    from amutheory.laws import costs
    from amutheory.symbolic.chain.kernel_law_finite import finite_width_kernel_s_bar, weights_cheaper

    finite_width_kernel_s_bar(ArchSpec(dim=1, width=32, spatial=8, activation="relu"), [2], draws=8)  # warm up
    rows, shapes = [], []
    for (d, B, N, k), n, depths in ((g, n, d) for g in FIT_GEOMETRIES for n in FIT_WIDTHS for d in FIT_DEPTHS):
        spec = ArchSpec(dim=d, width=n, spatial=N, batch=B, kernel=k, activation="relu", input_channels=3)
        start = time.perf_counter()
        finite_width_kernel_s_bar(spec, depths, draws=FIT_DRAWS)
        took = time.perf_counter() - start
        P = spec.positions
        bp, layers = B * P, max(depths) + 1
        eigh = 0 if weights_cheaper(spec, n) else bp**3
        terms = np.array([layers * n * bp**2, layers * eigh, layers * B * B * P**3, sum(depths) * B * P**3,
                          layers, layers * bp**2, sum(depths)]) * FIT_DRAWS
        rows.append(terms / took)
        shapes.append((f"n={n} {'x'.join([str(N)] * d)} B={B} k={k} depths to {max(depths)}", took))
        print(f"{shapes[-1][0]:44} measured {took:6.2f} s", flush=True)
    units, _ = nnls(np.array(rows), np.ones(len(rows)))
    for (shape, took), fit in zip(shapes, np.array(rows) @ units):
        print(f"{shape:44} measured {took:6.2f} s  fit / measured {fit:5.2f}")
    names = ("KERNEL_FINITE_UNIT_N", "KERNEL_FINITE_UNIT_EIGH", "KERNEL_FINITE_UNIT_CUT", "KERNEL_FINITE_UNIT_PAIR",
             "KERNEL_FINITE_LAYER", "KERNEL_FINITE_UNIT_KERNEL", "KERNEL_FINITE_PAIR")
    for name, unit in zip(names, units):
        print(f"{name:24} fitted {unit:.3g}   in use {getattr(costs, name):.3g}")


#: ``--adjoint``: (dim, width, spatial, batch, padding, activation) of chains, depths 8, 12, 16 and their neighbours
ADJOINT_CASES = [(1, 32, 16, 8, "circular", "relu"), (1, 64, 16, 8, "zero", "relu"), (1, 32, 32, 8, "circular", "relu"),
                 (2, 32, 8, 8, "circular", "relu"), (2, 64, 8, 8, "zero", "relu"), (1, 32, 16, 8, "circular", "gelu"),
                 (1, 32, 16, 4, "zero", "tanh"), (2, 32, 4, 8, "circular", "gelu")]


def compare_adjoint(draws: int = 64) -> None:
    """The finite-width kernel law's recursion as the toolkit runs it (the cuts in adjoint form, a few draws held
    at a time, GELU and tanh loops formed at their cut: :func:`amutheory.symbolic.chain.kernel_law.layer_moments_at_depths`)
    against the naive way of the same sums (every depth's backward kernels contracted with every cut, every layer's
    loop held, the whole batch at once: :func:`~amutheory.symbolic.chain.kernel_law.layer_moments_by_depth`), on the
    same draws in one run: seconds, their ratio, and the largest relative difference of the per-draw ``s_bar``."""
    import numpy as np

    from amutheory.laws.chain_finite import slope_depths
    from amutheory.symbolic.chain import kernel_law as K
    from amutheory.symbolic.chain.kernel_law_finite import SEED, _BatchNormals, batch_size, \
        finite_width_kernel_s_bar, sampled_forward

    depths = slope_depths([8, 12, 16])
    print(f"{'net':34} {'draws':>5} {'naive s':>8} {'toolkit s':>9} {'naive / toolkit':>15} {'max rel diff':>12}")
    for d, n, N, B, padding, activation in ADJOINT_CASES:
        spec = ArchSpec(dim=d, width=n, spatial=N, batch=B, padding=padding, activation=activation)
        start = time.perf_counter()
        got = finite_width_kernel_s_bar(spec, depths, draws=draws)["per_draw"]
        toolkit = time.perf_counter() - start
        rng, batch, parts = np.random.default_rng(SEED), batch_size(spec, depths, draws), []   # the same stream
        start = time.perf_counter()
        for count in [batch] * (draws // batch) + ([draws % batch] if draws % batch else []):
            x = K._draw_inputs(spec, rng, count, 1.0)
            forward = sampled_forward(_BatchNormals(rng, spec, count, max(depths), "auto"))
            per = K.layer_moments_by_depth(spec, x, depths, forward=forward)         # each batch whole
            parts.append(np.stack([per[L].mean(axis=1) for L in depths], axis=1))
        naive_rows = np.concatenate(parts)
        naive = time.perf_counter() - start
        diff = float(np.max(np.abs(got - naive_rows) / np.abs(naive_rows)))
        name = f"{activation} {'x'.join([str(N)] * d)} n={n} B={B} {padding}"
        print(f"{name:34} {draws:5d} {naive:8.1f} {toolkit:9.1f} {naive / toolkit:15.2f} {diff:12.1e}", flush=True)


#: ``--precision``: (dim, width, spatial, batch, padding, activation, draws) of chains whose cuts are formed in single
#: precision (``kernel_law.cut_dtype``), depths 8, 12, 16 and their neighbours (ReLU) or 8, 12, 16 (GELU, tanh)
PRECISION_CASES = [(2, 32, 8, 8, "circular", "relu", 32), (2, 64, 8, 8, "circular", "relu", 32),
                   (2, 64, 8, 8, "zero", "relu", 32), (1, 64, 32, 8, "circular", "relu", 32),
                   (2, 32, 8, 8, "circular", "gelu", 4), (2, 32, 8, 8, "circular", "tanh", 4)]


def compare_precision() -> None:
    """The finite-width kernel law as the toolkit runs it (each cut's forward weights and four-point loops formed and
    contracted in single precision where they hold ``kernel_law.CUT_SINGLE_FROM`` entries or more) against the same
    law in double precision throughout, on the same draws in one run: seconds, their ratio, and the largest relative
    difference of the per-draw ``s_bar``."""
    import numpy as np

    from amutheory.laws.chain_finite import slope_depths
    from amutheory.symbolic.chain import kernel_law as K
    from amutheory.symbolic.chain.kernel_law_finite import finite_width_kernel_s_bar

    single_from = K.CUT_SINGLE_FROM
    print(f"{'net':34} {'draws':>5} {'double s':>8} {'toolkit s':>9} {'double / toolkit':>16} {'max rel diff':>12}")
    for d, n, N, B, padding, activation, draws in PRECISION_CASES:
        spec = ArchSpec(dim=d, width=n, spatial=N, batch=B, padding=padding, activation=activation)
        depths = slope_depths([8, 12, 16]) if activation == "relu" else [8, 12, 16]
        took, rows = {}, {}
        for name, bound in (("toolkit", single_from), ("double", float("inf"))):
            K.CUT_SINGLE_FROM = bound
            try:
                start = time.perf_counter()
                rows[name] = finite_width_kernel_s_bar(spec, depths, draws=draws)["per_draw"]
                took[name] = time.perf_counter() - start
            finally:
                K.CUT_SINGLE_FROM = single_from
        diff = float(np.max(np.abs(rows["toolkit"] - rows["double"]) / np.abs(rows["double"])))
        name = f"{activation} {'x'.join([str(N)] * d)} n={n} B={B} {padding}"
        print(f"{name:34} {draws:5d} {took['double']:8.1f} {took['toolkit']:9.1f} "
              f"{took['double'] / took['toolkit']:16.2f} {diff:12.1e}", flush=True)


#: ``--choices``: (dim, spatial, activation, padding, width, batch, depths) of conv chains whose default within the 60 s
#: budget is a Monte Carlo law at budget-scaled draws, near the budget's edge
CHOICE_CASES = [(2, 8, "relu", "circular", 48, 8, (8, 12, 16)), (2, 8, "relu", "zero", 32, 8, (8, 12, 16)),
                (2, 6, "gelu", "circular", 64, 8, (8, 12, 16)), (2, 8, "gelu", "circular", 128, 4, (8, 12, 16)),
                (1, 32, "tanh", "zero", 128, 8, (8, 12, 16)), (1, 32, "gelu", "circular", 64, 8, (16, 24, 32))]


def time_choices() -> None:
    """``predict``'s default within its budget (:data:`amutheory.laws.DEFAULT_BUDGET_S`) on :data:`CHOICE_CASES`: the
    law and draws chosen, the estimate the choice compared with the budget, and the time the law then takes."""
    from amutheory.laws import DEFAULT_BUDGET_S, best_law
    from amutheory.laws.registry import law_cost

    print(f"{'net':44} {'law':30} {'draws':>5} {'estimate':>9} {'measured':>9}")
    for d, N, activation, padding, n, B, depths in CHOICE_CASES:
        spec = ArchSpec(dim=d, spatial=N, activation=activation, padding=padding, width=n, batch=B, depth=max(depths))
        choice = best_law(spec, list(depths))
        estimate = law_cost(choice.law, spec, list(depths), DEFAULT_BUDGET_S).seconds
        start = time.perf_counter()
        choice.law.evaluate(spec, list(depths), draws=choice.draws)
        took = time.perf_counter() - start
        name = f"{activation} {'x'.join([str(N)] * d)} n={n} B={B} {padding} L={','.join(map(str, depths))}"
        print(f"{name:44} {choice.law.name:30} {choice.draws or '-':>5} {estimate:9.1f} {took:9.1f}", flush=True)


#: ``--samplers``: (width, spatial, batch) of ReLU 1-D circular chains, depths 4, 8, 16 and their neighbours
SAMPLER_CASES = [(32, 8, 8), (64, 8, 8), (32, 16, 8), (64, 16, 8), (128, 16, 8), (32, 32, 8)]


def compare_samplers() -> None:
    """The finite-width kernel law (512 draws, the depths and neighbours ``chain-kernel-finite-backward`` draws)
    with the rows drawn by the layer's weights and by the matrix square root, in one run: seconds and their
    ratio, beside what ``"auto"`` takes."""
    from amutheory.laws.chain_finite import slope_depths
    from amutheory.symbolic.chain.kernel_law_finite import finite_width_kernel_s_bar, weights_cheaper

    depths = slope_depths([4, 8, 16])
    print(f"{'n':>4} {'N':>3} {'B':>2} {'weights s':>10} {'eigh s':>8} {'eigh / weights':>15}  auto")
    for n, N, B in SAMPLER_CASES:
        spec = ArchSpec(dim=1, width=n, spatial=N, batch=B, activation="relu")
        took = {}
        for sampler in ("weights", "eigh"):
            start = time.perf_counter()
            finite_width_kernel_s_bar(spec, depths, sampler=sampler)
            took[sampler] = time.perf_counter() - start
        auto = "weights" if weights_cheaper(spec, n) else "eigh"
        print(f"{n:4d} {N:3d} {B:2d} {took['weights']:10.1f} {took['eigh']:8.1f} "
              f"{took['eigh'] / took['weights']:15.2f}  {auto}", flush=True)


#: the drawn loops' timing grid of ``--fit``: GELU chains (dim, batch, spatial, draws) x widths, depths 8, 12, 16
FIT_LOOP_GEOMETRIES = [(1, 8, 8, FIT_DRAWS), (1, 8, 16, FIT_DRAWS), (1, 4, 16, FIT_DRAWS), (2, 8, 8, 8)]
FIT_LOOP_WIDTHS = (32, 64, 128)


def fit_drawn_loops() -> None:
    """Time ``chain-kernel-finite`` on GELU chains and fit the units of :func:`amutheory.laws.costs.drawn_loop_seconds`
    by non-negative least squares in seconds to the time the finite-width forward chain's own estimate leaves (its
    estimate over the half it is rounded up by): the large cases, where the loops are most of the time, weigh most;
    prints each case and the fitted units beside the ones in use (those are the fit rounded up by half).  The 2-D
    chain runs 8 draws (minutes each at 128) and only to width 64."""
    import numpy as np
    from scipy.optimize import nnls

    from amutheory.laws import costs
    from amutheory.symbolic.chain.kernel_law_finite import finite_width_kernel_s_bar

    depths, rows, cases = [8, 12, 16], [], []
    for (d, B, N, draws), n in ((g, n) for g in FIT_LOOP_GEOMETRIES for n in FIT_LOOP_WIDTHS):
        if d == 2 and n > 64:
            continue
        spec = ArchSpec(dim=d, width=n, spatial=N, batch=B, activation="gelu", input_channels=3)
        start = time.perf_counter()
        finite_width_kernel_s_bar(spec, depths, draws=draws)
        took = time.perf_counter() - start
        rest = max(took - costs.kernel_finite_seconds(spec, depths, draws) / 1.5, 0.1 * took)
        b2p3 = B * B * spec.positions**3
        rows.append(np.array([draws * b2p3 * n * (max(depths) + 1), draws * b2p3 * sum(depths)]))
        cases.append((f"GELU n={n} {'x'.join([str(N)] * d)} B={B} depths 8, 12, 16, {draws} draws", took, rest))
        print(f"{cases[-1][0]:52} measured {took:7.2f} s (loops {rest:7.2f} s)", flush=True)
    units, _ = nnls(np.array(rows), np.array([rest for _, _, rest in cases]))
    for (name, took, rest), fit in zip(cases, np.array(rows) @ units):
        print(f"{name:52} loops {rest:7.2f} s  fit / measured {fit / rest:5.2f}")
    for name, unit in zip(("DRAWN_LOOP_UNIT", "DRAWN_PAIR_UNIT"), units):
        print(f"{name:24} fitted {unit:.3g}   in use {getattr(costs, name):.3g}")


#: ``--fit-points``: (spatial, batch) of ReLU conv-mlp/k-last residual nets at the points ``POINTS_UNIT`` keys
FIT_POINT_GEOMETRIES = [(4, 4), (8, 8), (16, 8)]
FIT_POINT_DEPTH, FIT_POINT_DRAWS = 8, 16


def fit_points() -> None:
    """Seconds per block and input draw of the residual law over the points (:func:`head_couplings` of one draw at
    depth :data:`FIT_POINT_DEPTH`, median of three) at each point count of :data:`amutheory.laws.costs.POINTS_UNIT`,
    beside the unit in use; and, over :data:`FIT_POINT_DRAWS` draws, the relative spread of one draw's ``s_bar``
    given its inputs (the loss directions averaged exactly, as ``point_law``'s mean takes it) against given its
    inputs and one loss direction (the plain Monte Carlo of both): their squared ratio is how many times fewer
    draws the exact average needs for the same standard error."""
    import numpy as np

    from amutheory.laws import costs
    from amutheory.symbolic.resnet import operator as ro

    print(f"{'P':>4} {'s / block':>10} {'in use':>8} {'rel sd given x':>15} {'given x, r':>11} {'draws saved':>12}")
    for N, B in FIT_POINT_GEOMETRIES:
        spec = ArchSpec(family="resnet", branch="conv-mlp", activation="relu", spatial=N, batch=B,
                        depth=FIT_POINT_DEPTH)
        x = np.random.default_rng(0).normal(size=(B, spec.input_channels, N))
        ro.head_couplings(spec.with_(depth=1), x)  # warm up (the SymPy block law)
        times = []
        for _ in range(3):
            start = time.perf_counter()
            ro.head_couplings(spec, x)
            times.append(time.perf_counter() - start)
        unit = float(np.median(times)) / FIT_POINT_DEPTH
        couplings = ro.coupling_draws(spec, [FIT_POINT_DEPTH], FIT_POINT_DRAWS, 0)
        given_x = ro.s_given(spec, couplings)[:, 0]
        given_xr = ro.s_given(spec, couplings, ro.loss_directions(spec, FIT_POINT_DRAWS, 0))[:, 0]
        sd_x, sd_xr = given_x.std(ddof=1) / given_x.mean(), given_xr.std(ddof=1) / given_xr.mean()
        P = spec.batch * spec.positions
        print(f"{P:4d} {unit:10.4f} {costs.POINTS_UNIT.get(P, float('nan')):8.4f} {sd_x:15.3f} {sd_xr:11.3f} "
              f"{(sd_xr / sd_x) ** 2:12.1f}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=float, default=300.0, help="skip cases estimated above this (seconds)")
    ap.add_argument("--fit", action="store_true", help="refit the finite-width kernel law's cost units instead")
    ap.add_argument("--samplers", action="store_true", help="time the drawn law with either sampler instead")
    ap.add_argument("--adjoint", action="store_true", help="time the drawn law's recursion against the naive sums")
    ap.add_argument("--choices", action="store_true",
                    help="time predict's budget-scaled Monte Carlo defaults near the budget's edge against their estimates")
    ap.add_argument("--precision", action="store_true",
                    help="time the drawn law with its single-precision cuts against double precision throughout")
    ap.add_argument("--fit-loops", action="store_true", help="refit only the drawn law's loop units (GELU chains)")
    ap.add_argument("--fit-points", action="store_true", help="time the residual law over the points per block instead")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if args.fit_points:
        fit_points()
        return 0
    if args.fit or args.fit_loops:
        if args.fit:
            fit_kernel_finite()
        fit_drawn_loops()
        return 0
    if args.samplers:
        compare_samplers()
        return 0
    if args.adjoint:
        compare_adjoint()
        return 0
    if args.precision:
        compare_precision()
        return 0
    if args.choices:
        time_choices()
        return 0
    print(f"{'law':16} {'spec':42} {'depths':14} {'estimate':>9} {'measured':>9} {'ratio':>6}")
    for name, spec, depths in CASES:
        law = get_law(name)
        estimate = law.cost(spec, depths).seconds
        shape = f"n={spec.width} N={spec.spatial} B={spec.batch} {spec.activation} {spec.padding}"
        if estimate > args.limit:
            print(f"{name:16} {shape:42} {str(depths):14} {estimate:9.1f} {'(skipped)':>9}")
            continue
        start = time.perf_counter()
        law.evaluate(spec, depths)
        took = time.perf_counter() - start
        print(f"{name:16} {shape:42} {str(depths):14} {estimate:9.1f} {took:9.1f} {took / estimate:6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
