"""The laws of residual nets: the exact infinite-width laws (dense, mode by mode, over the points)
and the calibrated ones (coherent, dense-shape, limit-shape, and the selection between the first two)."""

from __future__ import annotations

import functools

import numpy as np

from amutheory.checks import DEFAULT_CALIBRATION_DEPTHS, check_depths
import amutheory.laws.costs as costs
from amutheory.laws.blocks import statistic_values
from amutheory.laws.contract import Coverage, Cost, Law, LawValues, ProbeCalibratedLaw
from amutheory.laws.resnet_exact import exact_values, exact_kind
from amutheory.laws.resnet_values import (RESNET_CONSTANTS, RESNET_LAWS, SELECTION_CRITERION, calibrated_values,
                                          pick_resnet_law)
from amutheory.spec import ProbeProtocol


@functools.lru_cache(maxsize=256)
def _exact_kind(spec) -> str:
    """``dense``, ``modes`` or ``points``: which exact law covers the residual ``spec`` (ValueError
    naming the field where none does, or where the convention has no depth law)."""
    from amutheory.symbolic.resnet.coherent import resnet_law

    resnet_law(spec)  # raises for forward-unstable conventions: no power law
    return exact_kind(spec)


class _ResnetExact(Law):
    family = "resnet"
    leaves_out = ("finite-width terms of relative order 1/n, flat in K under a forward-stable init (derived for the "
                  "dense linear stream's norm moments: symbolic.resnet.finite_width; the one-step s at finite width is "
                  "not derived)")
    kind = ""

    def _covers(self, spec):
        kind = _exact_kind(spec)
        if kind != self.kind:
            return Coverage(False, f"the {self.name} law does not cover this net: the exact law that does is "
                                   f"resnet-{kind}")
        return Coverage(True, self.summary)

    def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None, statistic="mean",
                 C=1.0):
        """The exact law of the mean, nothing fitted; with ``statistic="geo"`` also its own seed spread
        (:attr:`LawValues.log_gap`)."""
        return self._exact(spec, depths, protocol, progress, statistic, C)

    def _exact(self, spec, depths, protocol, progress, statistic, C, draws=None) -> LawValues:
        from amutheory.symbolic.resnet.coherent import forward_analysis

        coverage = self.covers(spec)
        if not coverage:
            raise ValueError(coverage.reason)
        depths = list(depths)
        got = exact_values(spec, depths, statistic, protocol, C, [forward_analysis(spec, protocol.input_var)[
            "mechanism"]], progress, draws=draws)
        s_bar = np.asarray(got["s_bar"], float)
        const = got["constants"]
        s_l = {d: self.layer_moments(spec.with_(depth=d), const, protocol.input_var) for d in depths}
        return LawValues(self.name, depths, s_bar, self.standard_error(const, s_bar), const, self.exactness,
                         None if any(v is None for v in s_l.values()) else s_l, got["notes"],
                         local_slope=np.asarray(got["local_slope"], float), label=got["label"],
                         log_gap=got.get("log_gap"), log_gap_slope=got.get("log_gap_slope"))

    def standard_error(self, constants, s_bar):
        return np.zeros_like(s_bar)

    def layer_moments(self, spec, constants, input_var):
        return None


class ResnetDense(_ResnetExact):
    name, exactness, kind = "resnet-dense", "exact", "dense"
    summary = "dense residual net (kernel = spatial = batch = 1): the stream Jacobian's spread by free probability"
    source = "amutheory.symbolic.resnet.dense"

    def cost(self, spec, depths, **_):
        return Cost(costs.FINITE_SUM_SECONDS, "finite-sum", "a recursion over the blocks")

    def layer_moments(self, spec, constants, input_var):
        from amutheory.symbolic.resnet.dense import layer_moments

        return layer_moments(spec, input_var)


class ResnetModes(_ResnetExact):
    name, exactness, kind = "resnet-modes", "exact", "modes"
    summary = "linear circular residual net: the dense recursion at each Fourier mode"
    source = "amutheory.symbolic.resnet.spectral"

    def cost(self, spec, depths, **_):
        return Cost(costs.FINITE_SUM_SECONDS, "finite-sum", "a recursion over the blocks at each of N^d modes")

    def layer_moments(self, spec, constants, input_var):
        from amutheory.symbolic.resnet.spectral import layer_moments

        return layer_moments(spec, input_var)


#: the most points (``batch x N^d``) at which the law over the points is the default for ReLU conv-mlp residual nets:
#: runs Y and Y2 (64 points, widths 16-128) found it no worse than the calibrated law, run Y3 (128 points, widths 32
#: and 64) did not (validate/plans/FINITE_WIDTH.md addenda 30-32; docs/findings/finite_width.md)
RELU_DEFAULT_MAX_POINTS = 64


class ResnetPoints(_ResnetExact):
    name, exactness, kind = "resnet-points", "monte-carlo", "points"
    summary = ("zero-padded linear or spatial ReLU conv-mlp residual net: the block recursion over its B N^d points, "
               "the inputs averaged by Monte Carlo (with ReLU the loss directions exactly)")
    source = "amutheory.symbolic.resnet.operator"

    def cost(self, spec, depths, budget_s=None, draws=None, **_):
        """Its input draws x the blocks of every depth read (:func:`~amutheory.laws.costs.points_blocks`; with ReLU
        the local slope's neighbours on ``POINT_SLOPE_DRAWS`` draws); where its full draws do not fit ``budget_s``,
        the draws that do, down to its floor (the ReLU law's mean averages the loss directions exactly, so its error
        is the inputs' alone: ``POINT_DRAWS_FLOOR``'s comment)."""
        from amutheory.laws.chain_finite import check_draws
        from amutheory.laws.resnet_exact import (POINT_DRAWS, POINT_DRAWS_FLOOR, POINT_DRAWS_STEP, POINT_SLOPE_DRAWS,
                                                 ZERO_PADDING_DRAWS)

        relu = spec.activation == "relu"
        full = POINT_DRAWS if relu else ZERO_PADDING_DRAWS
        blocks = costs.points_blocks(depths, neighbours=not relu)
        # with ReLU the local slope's neighbours run on POINT_SLOPE_DRAWS draws whatever the draws (a fixed part)
        slope_part = (costs.points_seconds(spec, costs.neighbour_blocks(depths), POINT_SLOPE_DRAWS)
                      - costs.POINTS_FIXED) if relu else 0.0

        def seconds_at(d):
            return costs.points_seconds(spec, blocks, d, paddings=1 if relu else 2) + slope_part

        draws = check_draws(draws)
        if draws is None:
            draws = costs.draws_within(seconds_at, full, budget_s, POINT_DRAWS_FLOOR, POINT_DRAWS_STEP) or full
        how = (f"{draws} draws x {blocks} blocks (each depth asked" + (", its neighbours on "
               f"{POINT_SLOPE_DRAWS} draws" if relu else " and its neighbours") + f") x O(P^4) at P = B N^d = "
               f"{spec.batch * spec.positions}")
        if draws < full:
            how += f" (fewer than its {full}: what fits the budget)"
        return Cost(seconds_at(draws), "monte-carlo", how, draws=draws, full_draws=full)

    def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None, statistic="mean",
                 C=1.0, draws=None):
        """:meth:`_ResnetExact.evaluate` on ``draws`` input draws (``None``: the law's own count)."""
        from amutheory.laws.chain_finite import check_draws

        return self._exact(spec, depths, protocol, progress, statistic, C, check_draws(draws))

    def not_default_for(self, spec):
        points = spec.batch * spec.positions
        if spec.activation == "linear":
            return ("its planned check on linear zero-padded residual nets (run Y5 of validate/plans/FINITE_WIDTH.md; "
                    "docs/findings/finite_width.md) kept the calibrated law as their default; ask for it with "
                    "law='resnet-points'")
        if spec.activation == "relu" and points > RELU_DEFAULT_MAX_POINTS:
            return (f"the default for ReLU conv-mlp residual nets up to {RELU_DEFAULT_MAX_POINTS} points (batch x "
                    f"N^d), where its planned checks found it no worse than the calibrated law (runs Y and Y2 of "
                    f"validate/plans/FINITE_WIDTH.md); at 128 points run Y3 did not (docs/findings/finite_width.md), got "
                    f"{spec.batch} x {spec.positions}; ask for it with law='resnet-points'")
        return None

    def standard_error(self, constants, s_bar):
        c = constants.get("s_bar_mean") or constants.get("boundary_ratio")
        return s_bar * (c.error / c.value)  # the relative error at the deepest K, taken at every K


class _ResnetCalibrated(ProbeCalibratedLaw):
    family = "resnet"
    #: the law's name among the residual laws of :mod:`amutheory.laws.resnet_values`
    shape = "coherent"

    def _covers(self, spec):
        from amutheory.symbolic.resnet.coherent import resnet_law

        resnet_law(spec)
        return Coverage(True, "a forward-stable residual net (constants calibrated)")

    def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None, statistic="mean",
                 C=1.0, calibration_depths=DEFAULT_CALIBRATION_DEPTHS, calibration_seeds=32):
        """The law of the mean with its constants calibrated on ``calibration`` (a Measurement, measured
        here at ``calibration_depths`` when ``None``, or a fitted Calibration); ``s_bar_se``: the
        seed-bootstrap refits' spread of ``ln s_bar`` (of ``statistic``) times ``s_bar``."""
        coverage = self.covers(spec)
        if not coverage:
            raise ValueError(coverage.reason)
        return self._values(spec, list(depths), self.shape, protocol, calibration, progress, statistic, C,
                            calibration_depths, calibration_seeds)

    def _values(self, spec, depths, shape, protocol, calibration, progress, statistic, C, calibration_depths,
                calibration_seeds) -> LawValues:
        got = calibrated_values(spec, depths, shape, calibration, calibration_depths, calibration_seeds, statistic,
                                protocol, C, progress)
        s_bar = np.asarray(got["s_bar"], float)
        se = np.zeros_like(s_bar) if got["log_sd"] is None else s_bar * np.asarray(got["log_sd"], float)
        return LawValues(self.name, depths, s_bar, se, got["constants"], self.exactness, None, got["notes"],
                         local_slope=np.asarray(got["local_slope"], float), label=got["label"],
                         calibration=got["calibration"])


class ResnetCoherent(_ResnetCalibrated):
    name = "resnet-coherent"
    summary = "the coherent leading order with A, B, e0 calibrated on probe measurements at other K"
    leaves_out = "nothing at the calibration K; its extrapolation error grows with the distance to them"
    source = "amutheory.symbolic.resnet.coherent"


class ResnetDenseShape(_ResnetCalibrated):
    name, shape = "resnet-dense-shape", "dense-shape"
    summary = "the exact dense law's stream and own parts, each times a calibrated rho"
    leaves_out = "the position and batch sums' K-dependence (taken constant)"
    source = "amutheory.symbolic.resnet.dense"
    default_candidate = False
    not_default_because = "an alternative calibrated law; law='resnet-selected' picks between it and the coherent law"

    def _covers(self, spec):
        from amutheory.symbolic.resnet.dense import shape_predictor

        super()._covers(spec)
        shape_predictor(spec)
        return Coverage(True, "a forward-stable residual net whose dense twin the dense law covers")


class ResnetLimitShape(_ResnetCalibrated):
    name, shape = "resnet-limit-shape", "limit-shape"
    summary = "the exact infinite-width law of this net times one calibrated amplitude rho"
    leaves_out = "a K-dependence of the finite width's excess (rho taken depth-independent)"
    source = "amutheory.laws.resnet_exact"
    default_candidate = False
    not_default_because = "a calibrated law; the default takes the exact law itself where one covers the net"

    def _covers(self, spec):
        return Coverage(True, f"covered by the exact law resnet-{_exact_kind(spec)}")

    def cost(self, spec, depths, **kw):
        probe = super().cost(spec, depths, **kw)
        if _exact_kind(spec) != "points":
            return probe
        from amutheory.laws.resnet_exact import LIMIT_SHAPE_DRAWS

        blocks = costs.points_blocks(sorted(set(depths) | set(kw.get("calibration_depths", (2, 3, 4, 6)))))
        return Cost(probe.seconds + costs.points_seconds(spec, blocks, LIMIT_SHAPE_DRAWS), "monte-carlo",
                    probe.how + f"; the law over the points on {LIMIT_SHAPE_DRAWS} draws")


class ResnetSelected(_ResnetCalibrated):
    name = "resnet-selected"
    summary = "coherent and dense-shape calibrated on the same nets; the better fit of the calibration K kept"
    leaves_out = "as the law it keeps"
    source = "amutheory.laws.resnet_values"
    default_candidate = False
    not_default_because = "needs more calibration K than the coherent law's three constants"

    def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None, statistic="mean",
                 C=1.0, calibration_depths=DEFAULT_CALIBRATION_DEPTHS, calibration_seeds=32):
        """Both residual laws (:data:`RESNET_LAWS`) calibrated on the same measured nets; the values of
        the one :func:`pick_resnet_law` picks, with ``selection`` saying which, why, and what the other
        predicts.  The dense-shape law's refusal (a config it does not cover) leaves the coherent law."""
        from amutheory.calibrate import Calibration
        from amutheory.measure.measurement import measure

        coverage = self.covers(spec)
        if not coverage:
            raise ValueError(coverage.reason)
        if isinstance(calibration, Calibration):
            raise ValueError("constants: law='selected' calibrates both residual laws on the same nets and keeps "
                             "one; it takes constants='calibrate' only, got a Calibration")
        cal_depths = check_depths(calibration.depths if calibration else calibration_depths)
        if len(set(cal_depths)) <= len(RESNET_CONSTANTS):
            raise ValueError(f"calibration_depths: law='selected' compares the laws' fits, which needs more "
                             f"calibration depths than the coherent law's {len(RESNET_CONSTANTS)} constants; got "
                             f"{sorted(cal_depths)}")
        if calibration is None:
            calibration = measure(spec, cal_depths, calibration_seeds, protocol, C, progress)
        depths = list(depths)
        got, not_covered = {}, {}
        for shape in RESNET_LAWS:
            try:
                got[shape] = self._values(spec, depths, shape, protocol, calibration, None, statistic, C,
                                          calibration_depths, calibration_seeds)
            except ValueError as exc:
                if shape == RESNET_LAWS[0]:
                    raise
                not_covered[shape] = str(exc)
        picked, ses = pick_resnet_law({shape: v.calibration.to_dict() for shape, v in got.items()})
        values = got[picked]
        values.selection = {"law": picked, "criterion": SELECTION_CRITERION, "residual_se_log": ses,
                            "not_covered": not_covered,
                            "eta_star_by_law": {shape: np.sqrt(C / statistic_values(v, statistic)[0]).tolist()
                                                for shape, v in got.items()}}
        words = ", ".join(f"{shape} {se:.3g}" for shape, se in ses.items())
        values.notes.append(f"law selected: {picked}, by {SELECTION_CRITERION}: {words}"
                            + "".join(f"; {shape} not available ({why})" for shape, why in not_covered.items()))
        return values


LAWS = (ResnetDense(), ResnetModes(), ResnetPoints(), ResnetCoherent(), ResnetDenseShape(), ResnetLimitShape(),
        ResnetSelected())
