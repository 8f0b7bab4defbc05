"""The laws of residual nets: the exact infinite-width laws (dense, mode by mode, over the points)
and the calibrated ones (coherent, dense-shape, limit-shape, and the selection between the first two)."""

from __future__ import annotations

import functools

from amutheory.laws import costs
from amutheory.laws.contract import Coverage, Cost, PredictedLaw, ProbeCalibratedLaw


@functools.lru_cache(maxsize=256)
def _exact_kind(spec) -> str:
    """``dense``, ``modes`` or ``points``: which exact law covers the residual ``spec`` (ValueError
    naming the field where none does, or where the convention has no depth law)."""
    from amutheory.api.derivation import derive
    from amutheory.api.resnet_exact import exact_resnet_law

    derive(spec)  # raises for forward-unstable conventions: no power law
    return exact_resnet_law(spec, monte_carlo=True)[1].split("-")[1]


class _ResnetExact(PredictedLaw):
    family = "resnet"
    legacy = ("derive", "coherent")
    leaves_out = "finite-width terms of relative order 1/n"
    kind = ""

    def _covers(self, spec):
        kind = _exact_kind(spec)
        if kind != self.kind:
            return Coverage(False, f"the {self.name} law does not cover this net: the exact law that does is "
                                   f"resnet-{kind}")
        return Coverage(True, self.summary)


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


class ResnetPoints(_ResnetExact):
    name, exactness, kind = "resnet-points", "monte-carlo", "points"
    summary = ("zero-padded linear or spatial ReLU conv-mlp residual net: the block recursion over its B N^d points, "
               "inputs and loss directions averaged by Monte Carlo")
    source = "amutheory.symbolic.resnet.operator"

    def cost(self, spec, depths, **_):
        from amutheory.api.resnet_exact import POINT_DRAWS, ZERO_PADDING_DRAWS

        relu = spec.activation == "relu"
        draws = POINT_DRAWS if relu else ZERO_PADDING_DRAWS
        seconds = costs.points_seconds(spec, max(depths), draws, paddings=1 if relu else 2)
        return Cost(seconds, "monte-carlo", f"{draws} draws x (deepest K + 1) blocks x O(P^4) at P = B N^d = "
                                            f"{spec.batch * spec.positions}")

    def standard_error(self, pred, s_bar):
        c = pred.constants.get("s_bar_mean") or pred.constants.get("boundary_ratio")
        return s_bar * (c.error / c.value)  # the relative error at the deepest K, taken at every K


class _ResnetCalibrated(ProbeCalibratedLaw):
    family = "resnet"

    def _covers(self, spec):
        from amutheory.api.derivation import derive

        derive(spec)
        return Coverage(True, "a forward-stable residual net (constants calibrated)")


class ResnetCoherent(_ResnetCalibrated):
    name = "resnet-coherent"
    summary = "the coherent leading order with A, B, e0 calibrated on probe measurements at other K"
    leaves_out = "nothing at the calibration K; its extrapolation error grows with the distance to them"
    source = "amutheory.symbolic.resnet.coherent"
    legacy = ("calibrate", "coherent")


class ResnetDenseShape(_ResnetCalibrated):
    name = "resnet-dense-shape"
    summary = "the exact dense law's stream and own parts, each times a calibrated rho"
    leaves_out = "the position and batch sums' K-dependence (taken constant)"
    source = "amutheory.symbolic.resnet.dense"
    legacy = ("calibrate", "dense-shape")
    default_candidate = False
    not_default_because = "an alternative calibrated law; law='resnet-selected' picks between it and the coherent law"

    def _covers(self, spec):
        from amutheory.symbolic.resnet.dense import shape_predictor

        super()._covers(spec)
        shape_predictor(spec)
        return Coverage(True, "a forward-stable residual net whose dense twin the dense law covers")


class ResnetLimitShape(_ResnetCalibrated):
    name = "resnet-limit-shape"
    summary = "the exact infinite-width law of this net times one calibrated amplitude rho"
    leaves_out = "a K-dependence of the finite width's excess (rho taken depth-independent)"
    source = "amutheory.api.resnet_exact"
    legacy = ("calibrate", "limit-shape")
    default_candidate = False
    not_default_because = "a calibrated law; the default takes the exact law itself where one covers the net"

    def _covers(self, spec):
        return Coverage(True, f"covered by the exact law resnet-{_exact_kind(spec)}")

    def cost(self, spec, depths, **kw):
        probe = super().cost(spec, depths, **kw)
        if _exact_kind(spec) != "points":
            return probe
        from amutheory.api.resnet_exact import LIMIT_SHAPE_DRAWS

        deepest = max(max(depths), max(kw.get("calibration_depths", (6,))))
        return Cost(probe.seconds + costs.points_seconds(spec, deepest, LIMIT_SHAPE_DRAWS), "monte-carlo",
                    probe.how + f"; the law over the points on {LIMIT_SHAPE_DRAWS} draws")


class ResnetSelected(_ResnetCalibrated):
    name = "resnet-selected"
    summary = "coherent and dense-shape calibrated on the same nets; the better fit of the calibration K kept"
    leaves_out = "as the law it keeps"
    source = "amutheory.api.resnet"
    legacy = ("calibrate", "selected")
    default_candidate = False
    not_default_because = "needs more calibration K than the coherent law's three constants"


LAWS = (ResnetDense(), ResnetModes(), ResnetPoints(), ResnetCoherent(), ResnetDenseShape(), ResnetLimitShape(),
        ResnetSelected())
