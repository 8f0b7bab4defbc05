"""The exact infinite-width laws of residual nets (dense, mode by mode, over the points), the
limit-shape law built on them, the residual zero-padding boundary, and the values of the exact laws."""

from __future__ import annotations

import numpy as np
import sympy as sp

from amutheory.checks import _check_spec, check_depths
from amutheory.constants import Constant
from amutheory.laws.blocks import _block_law_values, input_var_constant, target_constant
from amutheory.spec import ArchSpec

#: joint draws of inputs and loss directions behind the law of a linear zero-padded residual net (its
#: ratio to the circular net's exact law; :func:`amutheory.symbolic.resnet.operator.zero_padding_law`)
ZERO_PADDING_DRAWS = 32
#: input draws behind the law of a spatial ReLU conv-mlp residual net (:func:`amutheory.symbolic.resnet.operator.point_law`;
#: no exact control variate; the loss directions' mean is exact, so only the inputs spread its draws)
POINT_DRAWS = 32
#: the fewest draws the law over the points takes where its full draws do not fit ``predict``'s budget
#: (:func:`amutheory.laws.costs.draws_within`), and their step.  A quarter of its full count: the standard error goes
#: as one over the root of the draws, so it at most doubles; the law reports it (``s_bar_mean``'s error), and what
#: it moves is the level of ``s_bar``, common to every K (one draw's ``s_bar(K) / s_bar(K')`` varies far less over
#: the draws than its level; ``head_couplings`` gives each draw's value for every loss direction at once)
POINT_DRAWS_FLOOR, POINT_DRAWS_STEP = 8, 4
#: joint draws of inputs and loss directions behind the limit-shape law's K-dependence (:func:`limit_shape`)
#: where the infinite-width law averages its inputs by Monte Carlo.  Few suffice: the draws are common to
#: every K, and a draw's own ``s_bar(K) / s_bar(K')`` varies far less over draws than its level (the spread
#: of the per-draw ratios is measured by validate/studies/resnet_limit_shape.py; :func:`limit_shape` returns
#: the shape's standard error, ``log_shape_se``); the level's larger error is the calibrated ``rho``'s to absorb
LIMIT_SHAPE_DRAWS = 8
#: the stream gradient per coordinate at the head: the head's outputs times its weight variance
G_K_EXPRESSION = sp.Symbol("outputs", positive=True) * sp.Symbol("readout_variance", positive=True)


def _monte_carlo_law(spec: ArchSpec) -> bool:
    """Whether the exact law of a (covered) residual ``spec`` averages its inputs by Monte Carlo: the
    law over the points (zero padding, or ReLU, of a spatial or batched net)."""
    dense = spec.kernel == spec.spatial == spec.batch == 1
    return not dense and (spec.padding == "zero" or spec.activation != "linear")


def limit_shape(spec: ArchSpec, depths, draws: int = LIMIT_SHAPE_DRAWS, seed: int = 0, input_var: float = 1.0,
                progress=None) -> dict:
    """The exact infinite-width law of the mean of the residual ``spec`` at each K in ``depths``, for
    its K-dependence: closed form for dense nets and linear circular nets (:func:`exact_resnet_law`);
    for the laws over the points (zero padding, spatial ReLU conv-mlp) the mean over ``draws`` joint
    draws of inputs and loss directions *common to every K*
    (:func:`amutheory.symbolic.resnet.operator.s_bar_draws`, numpy ``default_rng(seed)``).  Returns
    ``s_bar`` (array over ``depths``), ``log_shape_se`` (the standard error of ``ln s_bar(K)`` up to a
    common constant: each draw's influence centred over the K, zero where exact), ``draws`` (0 where
    exact), ``name`` and ``how``.  ``ValueError`` naming the field where no exact law covers ``spec``."""
    from amutheory.symbolic.resnet import operator as resnet_operator
    _check_spec(spec)
    ks = check_depths(depths)
    fn, name, how = exact_resnet_law(spec, monte_carlo=True)
    if not _monte_carlo_law(spec):
        s = np.asarray(fn(np.asarray(ks, float), float(input_var)), float)
        return {"s_bar": s, "log_shape_se": np.zeros(len(ks)), "draws": 0, "name": name, "how": how}
    table = resnet_operator.s_bar_draws(spec, ks, draws, seed, input_var, progress, directions=True)
    mean = table.mean(axis=0)
    influence = table / mean - 1.0  # each draw's share of ln mean(K), to first order
    centred = influence - influence.mean(axis=1, keepdims=True)
    return {"s_bar": mean, "log_shape_se": centred.std(axis=0, ddof=1) / np.sqrt(len(table)), "draws": len(table),
            "name": name, "how": _points_how(spec, draws)}


def _points_how(spec: ArchSpec, draws: int) -> str:
    """One line: what :func:`limit_shape` computes for a net whose law is over its points."""
    masks = " with its masks" if spec.activation != "linear" else ""
    return (f"of the {spec.activation} {spec.padding}-padded net over its points{masks} (symbolic.resnet.operator"
            f".s_bar_draws): the mean over {draws} joint draws of inputs and loss directions, common to every K")


def limit_shape_predictor(spec: ArchSpec, input_var: float = 1.0, draws: int = LIMIT_SHAPE_DRAWS, seed: int = 0,
                          table: dict | None = None, progress=None):
    """``s_bar(K; rho) = rho * law(K)``: the *limit-shape law* of the residual ``spec``.  ``law`` is the
    exact infinite-width law of the mean (:func:`limit_shape`), so every K-dependence is derived;
    ``rho`` is calibrated and stands for what the infinite-width law leaves out, taken not to depend on
    K: the finite width's ``1 + c/n`` (how far it is depth-independent is measured by
    ``validate/studies/resnet_width_law.py`` and ``validate/studies/resnet_limit_shape.py``) and, where
    the law is a Monte Carlo, the draws' error of its level.
    ``law(K)`` is computed once per K and kept (``table``: ``{K: law(K)}`` already known, e.g. computed
    by a script that saves its draws).  The function carries ``how`` (one line).  ``progress(line)``
    is called after each input draw of a Monte Carlo law.  ``ValueError`` naming the field where no
    exact law covers ``spec``."""
    _check_spec(spec)
    _, _, how = exact_resnet_law(spec, monte_carlo=True)  # raises for what no exact law covers
    if _monte_carlo_law(spec):
        how = _points_how(spec, draws)
    known = {int(k): float(v) for k, v in (table or {}).items()}
    iv = float(input_var)

    def predict(depths, rho):
        ks = np.ravel(np.asarray(depths, float))
        if np.any(ks != np.round(ks)) or np.any(ks < 1):
            raise ValueError(f"depths must be positive integers (block counts), got {depths!r}")
        missing = sorted({int(k) for k in ks} - set(known))
        if missing:
            tick = None if progress is None else (lambda done, total: progress(
                f"[limit-shape law] K = {missing[0]}..{missing[-1]} ({len(missing)} depths): input draw {done}/{total}"))
            known.update(zip(missing, map(float, limit_shape(spec, missing, draws, seed, iv, tick)["s_bar"])))
        return (rho * np.array([known[int(k)] for k in ks])).reshape(np.shape(depths))

    predict.how = how
    return predict


def exact_resnet_law(spec: ArchSpec, monte_carlo: bool = True) -> tuple:
    """``(s_bar_fn(depths, input_var), name, how)`` of the exact infinite-width law of the mean that
    covers the residual ``spec``, nothing fitted: the dense law (``kernel = spatial = batch = 1``;
    :mod:`amutheory.symbolic.resnet.dense`, and for ``preact`` with ReLU the coordinate law of
    :mod:`amutheory.symbolic.resnet.preact`) or, for linear nets with circular padding, the
    mode-by-mode law (:mod:`amutheory.symbolic.resnet.spectral`), and with zero padding the law over
    the points (:mod:`amutheory.symbolic.resnet.operator`: the circular mean times the paddings'
    ratio, Monte Carlo over :data:`ZERO_PADDING_DRAWS` input draws), and for spatial ReLU ``conv-mlp``
    nets the same law over the points with masks (plain Monte Carlo over :data:`POINT_DRAWS` joint
    draws).  ``ValueError`` naming the field where none covers it, and, with ``monte_carlo=False``,
    for the two laws whose input average is a Monte Carlo (the campaign's choice: they cost ``O(P^4)``
    per block and draw; ``validate/studies/resnet_point_law.py`` puts them against a campaign seed by seed)."""
    from amutheory.symbolic.resnet import dense as resnet_dense
    from amutheory.symbolic.resnet import spectral as resnet_spectral
    _check_spec(spec)
    tag = f"{spec.branch}-{spec.init}-{spec.activation}"
    if spec.kernel == spec.spatial == spec.batch == 1:
        resnet_dense.layer_moments(spec.with_(depth=1))  # raises for what the dense law does not cover
        how = ("one stream coordinate with its persistent masks (symbolic.resnet.preact)"
               if spec.branch == "preact" and spec.activation != "linear" else
               "the stream Jacobian's spread (free probability; symbolic.resnet.dense)")
        return (lambda ks, iv: resnet_dense.s_bar(spec, ks, iv)), f"resnet-dense-{tag}", f"of the dense net, {how}"
    from amutheory.symbolic.resnet import operator as resnet_operator
    if spec.activation != "linear" and not (spec.activation == "relu" and spec.branch == "conv-mlp"):
        field = next(f for f in ("kernel", "spatial", "batch") if getattr(spec, f) != 1)
        why = (resnet_operator.RELU_REFUSED[spec.branch] if spec.activation == "relu" else
               f"a spatial or batched {spec.activation} net's masks have no closed-form multi-point functions")
        raise ValueError(f"{field}: the exact residual laws cover dense nets (kernel = spatial = batch = 1), "
                         f"linear nets and ReLU conv-mlp nets; got {field}={getattr(spec, field)} with "
                         f"{spec.branch}/{spec.activation} ({why}: not derived)")
    if spec.padding == "zero" or spec.activation == "relu":
        resnet_operator.check_spec(spec.with_(depth=1))  # raises for what the law over the points does not cover
        if not monte_carlo:
            raise ValueError("monte_carlo: the law over the points of this net averages its inputs by Monte Carlo "
                             "(O(P^4) per block and draw); validate/studies/resnet_point_law.py compares it seed by seed")
        if spec.activation == "relu":
            return ((lambda ks, iv: resnet_operator.point_law(spec, ks, POINT_DRAWS, 0, iv)["mean"]),
                    f"resnet-points-{tag}", f"of the ReLU net over its points with its masks (symbolic.resnet.operator; "
                    f"the inputs averaged by Monte Carlo, {POINT_DRAWS} draws unless fewer fit the budget; the loss "
                    f"directions exactly)")
        return ((lambda ks, iv: resnet_operator.zero_padding_law(spec, ks, ZERO_PADDING_DRAWS, 0, iv)["mean"]),
                f"resnet-points-{tag}", f"of the linear zero-padded net over its points (symbolic.resnet.operator; "
                f"the input average a Monte Carlo over {ZERO_PADDING_DRAWS} draws unless fewer fit the budget, against "
                f"the circular net's exact law)")
    resnet_spectral.layer_moments(spec.with_(depth=1))  # raises for padding, shortcut, init
    return ((lambda ks, iv: resnet_spectral.s_bar(spec, ks, iv)), f"resnet-modes-{tag}",
            "of the linear circular net, mode by mode (symbolic.resnet.spectral)")


def exact_kind(spec: ArchSpec) -> str:
    """``dense``, ``modes`` or ``points``: which exact law covers the residual ``spec``
    (:func:`exact_resnet_law`'s ``ValueError`` naming the field where none does)."""
    exact_resnet_law(spec, monte_carlo=True)
    if spec.kernel == spec.spatial == spec.batch == 1:
        return "dense"
    return "points" if _monte_carlo_law(spec) else "modes"


def resnet_boundary(spec: ArchSpec, depths, draws: int = ZERO_PADDING_DRAWS, seed: int = 0,
                    input_var: float = 1.0, tolerance: float = 0.05, progress=None) -> list[dict]:
    """The zero-padding boundary of a linear (or ReLU conv-mlp) residual net at each K in ``depths``, by the exact law
    over the points (:func:`amutheory.symbolic.resnet.operator.boundary_ratio`; Monte Carlo over
    ``draws`` input draws, the same for both paddings): per depth ``s_bar_ratio`` (zero / circular)
    with ``s_bar_ratio_se``, ``eta_ratio`` (its inverse square root), ``slope_shift`` (the boundary's
    shift of the local slope of eta*, from the neighbours ``K - 1, K + 1``) and ``constant_level``
    (``|slope_shift| <= tolerance``, the chains' criterion).  ``ValueError`` naming the field outside
    the law's scope."""
    from amutheory.symbolic.resnet import operator as resnet_operator
    _check_spec(spec)
    if not tolerance > 0:
        raise ValueError(f"tolerance must be > 0, got {tolerance!r}")
    ks = check_depths(depths)
    need = sorted({k for d in ks for k in (max(d - 1, 1), d, d + 1)})
    law = resnet_operator.boundary_ratio(spec, need, draws, seed, input_var, progress)
    at = {k: j for j, k in enumerate(need)}
    rows = []
    for d in ks:
        lo, hi = max(d - 1, 1), d + 1
        shift = -0.5 * np.log(law["ratio"][at[hi]] / law["ratio"][at[lo]]) / np.log(hi / lo)
        r, se = float(law["ratio"][at[d]]), float(law["se"][at[d]])
        rows.append({"depth": d, "s_bar_ratio": r, "s_bar_ratio_se": se, "eta_ratio": r**-0.5,
                     "slope_shift": float(shift), "constant_level": bool(abs(shift) <= tolerance)})
    return rows


#: joint draws of inputs and loss directions behind the typical value of a linear spatial residual net
SEED_DRAWS = 20000


def exact_values(spec, depths, statistic, protocol, C, notes, progress=None, draws=None) -> dict:
    """The values of the exact infinite-width law of the mean (``s_bar``, ``local_slope``, ``constants``,
    ``label``, ``notes``; for ``statistic="geo"`` also ``log_gap``, ``ln(typical / mean)``, and
    ``log_gap_slope``, what it adds to the local slope): the exact infinite-width law of the mean
    (:func:`exact_resnet_law`: the dense net, with the stream Jacobian's spread, or a linear
    circular net mode by mode), nothing fitted.  The typical value (``statistic="geo"``) is the
    mean times ``exp(gap)``, ``gap = E ln s_bar - ln E s_bar`` at infinite width, nothing fitted
    either: for a dense net in closed form (:func:`amutheory.symbolic.primitives.spread.dense_spread`: the
    loss directions' chi-square and the stem's, the same at every K), for a linear spatial net by
    Monte Carlo over :data:`SEED_DRAWS` joint draws of the inputs and the loss directions, common
    to every K (:func:`amutheory.symbolic.resnet.spectral.seed_law`)."""
    from amutheory.symbolic.primitives import spread
    from amutheory.symbolic.resnet import dense as resnet_dense
    from amutheory.symbolic.resnet import spectral as resnet_spectral
    fn, name, how = exact_resnet_law(spec)
    dense = spec.kernel == spec.spatial == spec.batch == 1
    iv = protocol.input_var
    if _monte_carlo_law(spec):
        return _points_values(spec, depths, statistic, protocol, C, notes, name, how, progress, draws)
    const = {"C": target_constant(C),
             "G_K": Constant("G_K", spec.outputs * spec.readout_variance, "exact", expr=sp.sstr(G_K_EXPRESSION),
                             note="stream gradient per coordinate at the head")}
    if dense:
        const["q0_moment"] = Constant("q0_moment", resnet_dense.stem_moment(spec), "exact",
                                      expr=sp.sstr(resnet_dense.stem_moment_expression()),
                                      note="E[q_0^2]/input_var^2 of the stem's chi-square stream variance")
    else:
        const["input_var"] = input_var_constant(iv)
    notes = notes + [f"exact infinite-width law {how}: nothing fitted; O(1/n) terms left out"]
    s_bar, _, slope = _block_law_values(lambda ks: fn(ks, iv), [], depths, const, C, "mean")
    out = {"s_bar": s_bar, "local_slope": slope, "constants": const, "label": name, "notes": notes}
    if statistic == "mean":
        return out
    if dense:
        var, gap = spread.dense_spread(spec.outputs, resnet_dense.stem_fan_in(spec))
        exprs = spread.dense_spread_expressions()
        const["spread_var"] = Constant("spread_var", var, "exact", expr=str(exprs["var_log"]),
                                       note="Var[ln s_bar] over seeds: loss directions chi^2_m, stem chi^2_f "
                                            "(f = c_in)")
        const["typical_gap"] = Constant("typical_gap", gap, "exact", expr=str(exprs["gap_log"]),
                                        note="E[ln s_bar] - ln E[s_bar]: the typical value is the mean times exp(gap)")
        notes.append("typical value: the mean times exp(typical_gap), the dense net's exact seed spread at infinite "
                     "width (symbolic.primitives.spread.dense_spread); K-independent, so the slope is the mean's")
        out["log_gap"], out["log_gap_slope"] = np.full(len(depths), gap), np.zeros(len(depths))
    else:
        table = resnet_spectral.seed_table(spec, SEED_DRAWS, 0, iv)

        def typical(ks):
            laws = [resnet_spectral.seed_law(spec.with_(depth=int(k)), table, iv) for k in np.ravel(ks)]
            return np.reshape([law["mean"] * np.exp(law["gap"]) for law in laws], np.shape(ks))

        deepest = resnet_spectral.seed_law(spec.with_(depth=max(depths)), table, iv)
        mc = (f"at K = {max(depths)}; Monte Carlo over {SEED_DRAWS} joint draws of the inputs and the loss "
              "directions (symbolic.resnet.spectral.seed_law); error = its standard error")
        const["typical_gap"] = Constant("typical_gap", deepest["gap"], "monte-carlo", deepest["gap_se"],
                                        note=f"E[ln s_bar] - ln E[s_bar] {mc}")
        const["spread_var"] = Constant("spread_var", deepest["var"], "monte-carlo", deepest["var_se"],
                                       note=f"Var[ln s_bar] over seeds {mc}")
        notes.append("typical value: the mean times exp(gap(K)), the seed law of the linear spatial net at infinite "
                     "width (inputs and loss directions; the same draws at every K), nothing fitted; finite width "
                     "adds spread (measured by validate/studies/spread_decomposition.py; docs/findings/seed_spread.md)")
        gaps = np.array([resnet_spectral.seed_law(spec.with_(depth=int(k)), table, iv)["gap"] for k in depths])
        typ, _, typ_slope = _block_law_values(typical, [], depths, const, C, "mean")
        out["log_gap"], out["log_gap_slope"] = gaps, typ_slope - slope
    return out


def _points_values(spec, depths, statistic, protocol, C, notes, name, how, progress=None, draws=None) -> dict:
    """``constants="derive"`` for the laws over the points, computed once at every K the local slope
    needs: a linear zero-padded residual net is the circular net's exact law times the two paddings'
    ratio over :data:`ZERO_PADDING_DRAWS` joint draws of inputs and loss directions
    (:func:`amutheory.symbolic.resnet.operator.zero_padding_law`); a ReLU conv-mlp net a plain Monte
    Carlo over :data:`POINT_DRAWS` draws (:func:`~amutheory.symbolic.resnet.operator.point_law`), or over
    ``draws`` where given (what fits ``predict``'s budget).  The typical value adds the law's gap, Monte Carlo
    likewise."""
    from amutheory.symbolic.resnet import operator as resnet_operator
    ks = np.asarray(depths, dtype=float)
    relu = spec.activation == "relu"
    if relu:  # the depths asked on every draw, the local slope's neighbours on a few (_relu_point_laws)
        need = sorted({int(k) for k in ks})
        law, slope_law = _relu_point_laws(spec, need, draws or POINT_DRAWS, protocol.input_var, progress)
    else:  # the depths asked and their neighbours, on every draw
        need = sorted({int(k) for k in np.concatenate([ks, np.maximum(ks - 1, 1), ks + 1])})
        tick = None if progress is None else (lambda done, total: progress(
            f"[law over the points] input draw {done}/{total} (zero, then circular)"))
        law = resnet_operator.zero_padding_law(spec, need, draws or ZERO_PADDING_DRAWS, 0, protocol.input_var,
                                               progress=tick)
    at = {k: j for j, k in enumerate(need)}
    stat = "mean" if statistic == "mean" else "typical"

    def at_depths(values):
        return lambda kk: np.reshape([values[at[int(k)]] for k in np.ravel(kk)], np.shape(kk))

    deep = at[int(max(depths))]
    mc = (f"at K = {int(max(depths))}; Monte Carlo over {law['draws']} "
          + ("input draws, the loss directions averaged exactly (symbolic.resnet.operator.point_law)" if relu else
             "joint draws of the inputs and the loss "
             "directions, both paddings on the same draws (symbolic.resnet.operator.zero_padding_law)")
          + "; error = its standard error")
    const = {"C": target_constant(C), "input_var": input_var_constant(protocol.input_var)}
    if relu:
        const["s_bar_mean"] = Constant("s_bar_mean", float(law["mean"][deep]), "monte-carlo",
                                       float(law["mean_se"][deep]), note=f"E[s_bar] {mc}")
    else:
        const["boundary_ratio"] = Constant("boundary_ratio", float(law["ratio"][deep]), "monte-carlo",
                                           float(law["ratio_se"][deep]),
                                           note=f"E[s_bar] zero / circular {mc}; the circular mean is exact (mode law)")
    notes = notes + [f"exact infinite-width law {how}: nothing fitted; O(1/n) terms left out"]
    if stat == "typical":
        const["typical_gap"] = Constant("typical_gap", float(law["gap"][deep]), "monte-carlo",
                                        float(law["gap_se"][deep]), note=f"E[ln s_bar] - ln E[s_bar] {mc}")
        if relu:
            const["spread_var"] = Constant("spread_var", float(law["var"][deep]), "monte-carlo",
                                           float(law["var_se"][deep]), note=f"Var[ln s_bar] over seeds {mc}")
        notes.append("typical value: the mean times exp(gap(K)), gap over the same draws" +
                     (" (given each input draw, the loss directions' part exact: the Mellin moments of its quadratic "
                      "form, symbolic.primitives.spread)" if relu else
                      " (the circular seed law's plus the paddings' difference)") + "; nothing fitted")
    if relu:  # the level from the depths asked; the slope from the neighbours' table, on its own few draws
        slope_at = {k: j for j, k in enumerate(slope_law["depths"])}

        def slope_table(values):
            return lambda kk: np.reshape([values[slope_at[int(k)]] for k in np.ravel(kk)], np.shape(kk))

        s_bar = np.array([law["mean"][at[int(k)]] for k in depths])
        _, _, slope = _block_law_values(slope_table(slope_law["mean"]), [], depths, const, C, "mean")
        const["local_slope_mc_se"] = slope_law["slope_se_constant"]
    else:
        s_bar, _, slope = _block_law_values(at_depths(law["mean"]), [], depths, const, C, "mean")
    out = {"s_bar": s_bar, "local_slope": slope, "constants": const, "label": name, "notes": notes}
    if stat == "typical":
        typical = (slope_table(slope_law["mean"] * np.exp(slope_law["gap"])) if relu else
                   at_depths(law["mean"] * np.exp(law["gap"])))
        _, _, typ_slope = _block_law_values(typical, [], depths, const, C, "mean")
        out["log_gap"] = np.array([law["gap"][at[int(k)]] for k in depths])
        out["log_gap_slope"] = typ_slope - slope
    return out


#: input draws behind the local slope of the law over the points with ReLU: its neighbours ``K - 1, K + 1`` are
#: read on the first this many of the law's draws (a ratio of two depths on the same draws, whose draw-to-draw
#: spread is a small fraction of the level's; the law reports its Monte Carlo error as ``local_slope_mc_se``), so
#: that two thirds of its blocks cost what two draws do (plan addendum 32 of validate/plans/FINITE_WIDTH.md)
POINT_SLOPE_DRAWS = 2


def _relu_point_laws(spec, held: list, draws: int, input_var: float, progress=None) -> tuple:
    """``(law at the depths asked over draws, law at every depth the local slope reads over the first``
    :data:`POINT_SLOPE_DRAWS` ``draws)``: the second with ``depths`` and ``slope_se_constant`` (the slope's Monte
    Carlo error, delta method over its draws, as a :class:`Constant`).  ``progress(line)`` after each draw."""
    from amutheory.laws.chain_finite import secant_slope_se
    from amutheory.symbolic.resnet import operator as resnet_operator

    few = min(draws, POINT_SLOPE_DRAWS)
    others = sorted({n for k in held for n in (max(k - 1, 1), k + 1)} - set(held))

    def tick(what):
        return None if progress is None else (lambda done, total: progress(
            f"[law over the points] {what}: input draw {done}/{total}"))

    held_couplings = resnet_operator.coupling_draws(spec, held, draws, 0, input_var, tick("the depths asked"))
    law = resnet_operator.point_law_of(spec, held_couplings)
    couplings = {k: held_couplings[:few, j] for j, k in enumerate(held)}
    if others:
        extra = resnet_operator.coupling_draws(spec, others, few, 0, input_var, tick("the local slope's neighbours"))
        couplings.update({k: extra[:, j] for j, k in enumerate(others)})
    every = sorted(couplings)
    slope_law = resnet_operator.point_law_of(spec, np.stack([couplings[k] for k in every], axis=1))
    per_draw = {k: slope_law["per_draw"][:, j] for j, k in enumerate(every)}
    lo, hi = [max(k - 1, 1) for k in held], [k + 1 for k in held]
    slope_se = secant_slope_se(per_draw, lo, hi)
    slope_law.update(depths=every, slope_se_constant=Constant(
        "local_slope_mc_se", float(np.max(slope_se)), "monte-carlo",
        note=f"worst Monte Carlo standard error of the local slope over the depths asked, its neighbours on the first "
             f"{few} of the {draws} input draws (" + ", ".join(f"{v:.3f} at K = {k}" for k, v in zip(held, slope_se))
             + "; delta method over the draws)"))
    return law, slope_law
