"""Cost models of the laws: seconds on one core, from the shapes of the work.

Each unit below is **calibrated**: timed on this project's 2-core AMD EPYC CPU machine (one torch
thread, other work running beside it, so the estimates err on the long side) by
``python validate/benchmark_law_costs.py``, which prints every estimate next to the time it measures.
An estimate is meant to tell a one-minute job from a one-hour job, not to be accurate to 10%.
"""

from __future__ import annotations

import numpy as np

from amutheory.spec import ArchSpec

#: seconds per (block x input draw) of the residual law over the points, at ``P = B N^d`` points
#: (calibrated: ReLU conv-mlp, P = 16, 64, 128, by ``validate/benchmark_law_costs.py --fit-points``; each depth
#: the law reads is its own pass over its blocks, because the branch multiplier depends on the depth, so the
#: cost grows with the sum of the depths read: :func:`points_blocks`).  Between and beyond the points the cost
#: is interpolated log-log and extrapolated with the last slope.
POINTS_UNIT = {16: 0.001, 64: 0.0135, 128: 0.12}
#: the law over the points' fixed start-up (its SymPy block law), seconds
POINTS_FIXED = 2.0
#: seconds of the kernel law per unit of ``B^2 P^3`` and layer (calibrated: ReLU, zero padding, N = 8..32,
#: B = 8), plus its fixed start-up
KERNEL_UNIT, KERNEL_FIXED = 1.5e-7, 2.0
#: seconds of the finite-width kernel law per input draw: per layer drawn, ``KERNEL_FINITE_UNIT_N`` per unit of
#: ``n (B P)^2`` (the drawn rows' Gram and mask kernels), ``KERNEL_FINITE_UNIT_EIGH`` per unit of ``(B P)^3`` where
#: the rows are drawn through a matrix square root (``kernel_law_finite.weights_cheaper`` false; the layer's own
#: weights' product is within the Gram's term otherwise), ``KERNEL_FINITE_UNIT_CUT`` per unit of ``B^2 P^3`` (the
#: cut's forward weights, once per layer: the adjoint form of ``kernel_law.layer_moments_at_depths``) and
#: ``KERNEL_FINITE_LAYER``; per layer below each depth evaluated ``KERNEL_FINITE_UNIT_PAIR`` per unit of ``B P^3``
#: (that depth's backward kernel contracted with the cut); plus a fixed start-up.  Calibrated 2026-11-29 after the
#: adjoint form: least-squares fits to timings of ReLU chains at B P = 16..512 (1-D and 2-D), widths 32-128, depths to
#: 17, and ReLU MLPs, 128 draws (``python validate/benchmark_law_costs.py --fit`` reruns it), each unit the fit
#: rounded up by half (the fit is within a factor 0.56-1.32 of every timing), except the square root's, whose code
#: did not change and which this grid times at only a few sizes: it keeps the 2026-11-28 fit over both samplers.
#: Refitted the same day once the cuts of grids from ``kernel_law.CUT_SINGLE_FROM`` entries (the 2-D chains here) were
#: formed in single precision, with two more terms: ``KERNEL_FINITE_UNIT_KERNEL`` per unit of ``(B P)^2`` and layer
#: (the kernels' maps that do not depend on the width: ``T``, the correlations' arcsines, the masks' products) and
#: ``KERNEL_FINITE_PAIR`` per layer below each depth (that contraction's fixed part).  Without them the fit put the
#: 2-D chains' width-independent time on the width's term and was 0.7-1.6 times their timings; with them it is
#: 0.94-1.20 times the 2-D ones and 0.59-1.38 times every timing (the cut's own unit fitted to 0: its single-precision
#: products went to the kernels' term)
KERNEL_FINITE_UNIT_N, KERNEL_FINITE_UNIT_EIGH, KERNEL_FINITE_UNIT_CUT = 4.6e-10, 1.3e-9, 0.0
KERNEL_FINITE_UNIT_PAIR, KERNEL_FINITE_LAYER, KERNEL_FINITE_FIXED = 5.0e-10, 1.44e-5, 1.0
KERNEL_FINITE_UNIT_KERNEL, KERNEL_FINITE_PAIR = 4.7e-8, 1.06e-6
#: seconds of the probe per ``width^2 x N^d x B`` and measured layer of one seed (calibrated: conv chains
#: at width 256, N = 16, and residual nets at width 64, N = 8, batch 8, in float64), plus a fixed start-up
PROBE_UNIT, PROBE_FIXED = 6e-9, 2.0
#: seconds of a closed form or a finite sum over modes or positions, most of it the SymPy derivation and
#: lambdify on a law's first use in a process (the sums themselves take under a second at the sizes covered)
FINITE_SUM_SECONDS = 8.0


def kernel_finite_seconds(spec: ArchSpec, depths, draws: int) -> float:
    """Seconds of the finite-width kernel law at ``depths`` (evaluated on one set of draws): ``draws x (deepest
    + 1)`` layers of a width-``n`` forward chain over the ``B P`` points and their cuts' forward weights, and one
    contraction per layer below each depth."""
    from amutheory.symbolic.chain.kernel_law_finite import weights_cheaper

    depths = sorted({int(d) for d in depths})
    bp = spec.batch * spec.positions
    per_layer = KERNEL_FINITE_UNIT_N * spec.width * bp**2 + KERNEL_FINITE_LAYER
    if not weights_cheaper(spec, spec.width):
        per_layer += KERNEL_FINITE_UNIT_EIGH * bp**3
    per_layer += KERNEL_FINITE_UNIT_CUT * spec.batch**2 * spec.positions**3 + KERNEL_FINITE_UNIT_KERNEL * bp**2
    pairs = (KERNEL_FINITE_UNIT_PAIR * spec.batch * spec.positions**3 + KERNEL_FINITE_PAIR) * sum(depths)
    return float(KERNEL_FINITE_FIXED + draws * ((depths[-1] + 1) * per_layer + pairs))


#: the fewest draws a Monte Carlo law over the budget may take instead of its full count (:func:`draws_within`): a
#: quarter of the finite-width kernel law's 512, which at most doubles its Monte Carlo standard error (it goes as one
#: over the root of the draws; the law reports it as ``s_bar_mc_rel_se``, and run U of validate/plans/FINITE_WIDTH.md
#: checked the scaled law against the calibrated fallback); below it the law is skipped for cost
DRAWS_FLOOR = 128
#: the budget-scaled draws are a multiple of this (a readable count; the law draws in batches of up to 64)
DRAWS_STEP = 16


def draws_within(seconds_at, full: int, budget_s: float | None, floor: int = DRAWS_FLOOR,
                 step: int = DRAWS_STEP) -> int | None:
    """The draws a Monte Carlo law takes within ``budget_s`` seconds: ``full`` where its estimate
    ``seconds_at(full)`` fits (or no budget is set), else the most draws (a multiple of ``step``, at least
    ``floor``; by default :data:`DRAWS_STEP` and :data:`DRAWS_FLOOR`, the finite-width kernel laws') whose
    estimate fits -- ``seconds_at`` is affine in the draws --, else ``None`` (not even the floor fits: the law
    is skipped for cost)."""
    if budget_s is None or seconds_at(full) <= budget_s:
        return full
    fixed = seconds_at(0)
    per_draw = (seconds_at(full) - fixed) / full
    if per_draw <= 0:             # the fixed part alone is over the budget: fewer draws do not help
        return None
    fits = int((budget_s - fixed) / per_draw) // step * step
    return fits if fits >= min(floor, full) else None


#: seconds of the smooth-activation kernel law (GELU, tanh MLPs at infinite width) per pair of samples,
#: quadrature node and layer of one input draw, assuming the 128 x 128 grid (calibrated on one timing: GELU,
#: B = 3, L = 6, 256 draws, 28 s; validate/benchmark_law_costs.py times the case), and the draws it may take
PAIR_UNIT, PAIR_GRID, PAIR_DRAWS = 1.1e-7, 128**2, 256


def pair_kernel_seconds(spec: ArchSpec, deepest: int) -> float:
    """Seconds of the kernel law of a smooth activation on one position: ``B^2`` pairs x the quadrature
    grid per layer up to the deepest depth + 1, for as many input draws as it may take."""
    return float(KERNEL_FIXED + PAIR_UNIT * PAIR_GRID * spec.batch**2 * (deepest + 1) * PAIR_DRAWS)


#: seconds of the drawn law's four-point loops (GELU, tanh) per draw: ``DRAWN_LOOP_UNIT`` per unit of ``n B^2 P^3``
#: and layer drawn (the loop formed from the layer's ``n`` drawn rows at its cut) and ``DRAWN_PAIR_UNIT`` per unit of
#: ``B^2 P^3`` and layer below each depth (the loop, times the forward kernels, contracted with that depth's backward
#: kernel).  Calibrated 2026-11-29 after the loops took the adjoint form: a least-squares fit in seconds (the large
#: cases weigh most: the small ones' loops are within the forward chain's estimate) to GELU 1-D circular chains at
#: B P = 64 and 128, widths 32-128, and a 2-D chain (8 x 8, B = 8) at widths 32 and 64 (``python
#: validate/benchmark_law_costs.py --fit-loops``; within 4% of the 2-D timings, up to 2.3 times over the 1-D ones
#: at B P = 128 and more over the smaller), each unit the fit rounded up by half.  Refitted the same way once the
#: loops of grids from ``kernel_law.CUT_SINGLE_FROM`` entries were formed and contracted in single precision and the
#: forward chain's units below were refitted (fit 3.1e-12 and 1.02e-9: within 4% of the 2-D timings, 0.5-3.5 times
#: the 1-D ones, whose loops take a second or less)
DRAWN_LOOP_UNIT, DRAWN_PAIR_UNIT = 4.6e-12, 1.6e-9


def drawn_loop_seconds(spec: ArchSpec, depths, draws: int) -> float:
    """Seconds of the drawn law's loops over (sample, position) triples: per draw, one loop per layer drawn (up to
    the deepest depth + 1) from the layer's rows, and one contraction per layer below each depth."""
    b2p3 = spec.batch**2 * spec.positions**3
    return float(draws * b2p3 * (DRAWN_LOOP_UNIT * spec.width * (max(depths) + 1)
                                 + DRAWN_PAIR_UNIT * sum(int(d) for d in set(depths))))


def points_blocks(depths, neighbours: bool = True) -> int:
    """Blocks the residual law over the points runs per input draw for ``depths``, each depth its own pass: the
    depths and their neighbours ``K - 1, K + 1`` (the local slope reads them), or, with ``neighbours=False``, the
    depths alone; :func:`neighbour_blocks` is the difference."""
    asked = {int(d) for d in depths}
    need = asked | ({k for d in asked for k in (max(d - 1, 1), d + 1)} if neighbours else set())
    return int(sum(need))


def neighbour_blocks(depths) -> int:
    """Blocks per input draw of the neighbours ``K - 1, K + 1`` of ``depths`` that are not depths themselves."""
    return points_blocks(depths) - points_blocks(depths, neighbours=False)


def points_seconds(spec: ArchSpec, blocks: int, draws: int, paddings: int = 1) -> float:
    """Seconds of the residual law over the points: ``draws x blocks x unit(P)`` (``blocks`` per draw:
    :func:`points_blocks`), times ``paddings`` (zero and circular on the same draws: 2)."""
    p = spec.batch * spec.positions
    xs = np.log(list(POINTS_UNIT))
    ys = np.log(list(POINTS_UNIT.values()))
    lx = np.log(p)
    if lx <= xs[0]:
        unit = ys[0] + (lx - xs[0]) * (ys[1] - ys[0]) / (xs[1] - xs[0])
    elif lx >= xs[-1]:
        unit = ys[-1] + (lx - xs[-1]) * (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
    else:
        unit = np.interp(lx, xs, ys)
    return float(POINTS_FIXED + draws * blocks * np.exp(unit) * paddings)


def kernel_seconds(spec: ArchSpec, deepest: int) -> float:
    """Seconds of the kernel law's input average: ``B^2 P^3`` per layer up to the deepest depth + 1."""
    return KERNEL_FIXED + KERNEL_UNIT * spec.batch**2 * spec.positions**3 * (deepest + 1)


def layers_of(spec: ArchSpec, depth: int) -> int:
    """Pre-activations the probe measures in a net of ``depth`` (blocks for residual nets and Transformers)."""
    return spec.family_object.probe_layers(spec, depth)


def probe_seconds(spec: ArchSpec, depths, seeds: int) -> float:
    """Seconds of measuring ``seeds`` nets at each of ``depths`` with the probe."""
    per_layer = PROBE_UNIT * spec.width**2 * spec.positions * spec.batch
    return PROBE_FIXED + seeds * per_layer * sum(layers_of(spec, int(d)) for d in depths)
