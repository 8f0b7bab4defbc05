"""The laws of conv chains: spectral and operator (exact, linear), kernel (Monte Carlo, ReLU),
the closed-form coherent law with calibrated constants, and the MLP-limit constants."""

from __future__ import annotations

import numpy as np

from amutheory.laws import costs
from amutheory.laws.contract import Coverage, Cost, PredictedLaw


class ChainSpectral(PredictedLaw):
    name, family, exactness = "chain-spectral", "conv", "exact"
    summary = "linear circular conv chain: every Fourier mode propagated on its own, summed exactly"
    leaves_out = "finite-width terms of relative order l/n"
    source = "amutheory.symbolic.chain.spectral"
    legacy = ("derive", "coherent")

    def _covers(self, spec):
        from amutheory.symbolic.chain.spectral import check_spectral_spec

        check_spectral_spec(spec)
        return Coverage(True, "linear chain, circular padding, critical c = 1")

    def cost(self, spec, depths, **_):
        return Cost(costs.FINITE_SUM_SECONDS, "finite-sum", "a sum over the N^d Fourier modes per depth")

    def layer_moments(self, spec, constants, input_var):
        from amutheory.symbolic.chain.spectral import spectral_layer_moments

        return spectral_layer_moments(spec, np.arange(1, spec.depth + 1), input_var)


class ChainOperator(PredictedLaw):
    name, family, exactness = "chain-operator", "conv", "exact"
    summary = "linear zero-padded conv chain: the pair operator over the positions, input average exact"
    leaves_out = "finite-width terms of relative order l/n"
    source = "amutheory.symbolic.chain.operator_law"
    legacy = ("derive", "coherent")

    def _covers(self, spec):
        from amutheory.symbolic.chain.operator_law import check_operator_spec

        check_operator_spec(spec)
        if spec.padding != "zero":
            return Coverage(False, "padding: with circular padding the operator law is the spectral law "
                                   "(chain-spectral); this entry is for zero padding")
        return Coverage(True, "linear chain, zero padding, critical c = 1")

    def cost(self, spec, depths, **_):
        return Cost(costs.FINITE_SUM_SECONDS, "finite-sum", "products of N^d x N^d pair operators per layer")

    def layer_moments(self, spec, constants, input_var):
        from amutheory.symbolic.chain.operator_law import operator_layer_moments

        return operator_layer_moments(spec, spec.depth, input_var)


class ChainKernel(PredictedLaw):
    name, family, exactness = "chain-kernel", "conv", "monte-carlo"
    summary = "ReLU conv chain, either padding: exact given the input (orthant kernels), inputs averaged by Monte Carlo"
    leaves_out = "finite-width terms that grow with L/n and are large for ReLU"
    source = "amutheory.symbolic.chain.kernel_law"
    legacy = ("derive", "coherent")
    default_candidate = False
    not_default_because = ("its left-out finite-width terms grow with L/n and are large for ReLU chains at the widths "
                           "the probe runs (measured by validate/studies/finite_width_mean.py, reported in "
                           "docs/findings/conv_chains.md), so the default calibrates ReLU chains; ask for it with "
                           "law='chain-kernel' (--law chain-kernel) or constants='derive'")

    def _covers(self, spec):
        from amutheory.symbolic.chain.kernel_law import check_kernel_spec

        if spec.activation != "relu":
            return Coverage(False, f"activation: the kernel law entry is for ReLU chains (linear chains have the "
                                   f"exact spectral and operator laws), got {spec.activation!r}")
        check_kernel_spec(spec)
        return Coverage(True, "ReLU chain with B N^d within the kernel law's size")

    def cost(self, spec, depths, **_):
        return Cost(costs.kernel_seconds(spec, max(depths)), "monte-carlo",
                    "B^2 P^3 per layer and input draw, up to the deepest depth + 1")

    def standard_error(self, pred, s_bar):
        rel = pred.constants["s_bar_mc_rel_se"].value  # the worst over the depths asked: a bound at each
        return s_bar * rel


class ChainCoherent(PredictedLaw):
    name, family, exactness = "chain-coherent", "conv", "calibrated"
    summary = ("the closed-form coherent law s_l = a l^2 + b(...) l^3 + e with a, b, e, gamma calibrated on probe "
               "measurements at other depths (zero padding: circular constants times the exact boundary ratio)")
    leaves_out = "nothing at the calibration depths; its extrapolation error grows with the distance to them"
    source = "amutheory.symbolic.chain.conv"
    legacy = ("calibrate", "coherent")

    def _covers(self, spec):
        return Coverage(True, "any conv chain (constants calibrated)")

    def cost(self, spec, depths, calibration_depths=(2, 3, 4, 6), calibration_seeds=32, **_):
        seconds = costs.probe_seconds(spec.with_(padding="circular"), calibration_depths, calibration_seeds)
        if spec.padding == "zero" and spec.activation == "relu":
            seconds += costs.kernel_seconds(spec, max(depths))
        return Cost(seconds, "probe", f"{calibration_seeds} seeds at depths {list(calibration_depths)}")

    def layer_moments(self, spec, constants, input_var):
        if spec.padding == "zero":
            return None  # the boundary ratio is a ratio of s_bar, not of each layer
        from amutheory.api.chain import predicted_layer_profile

        return predicted_layer_profile(spec, constants)["total"]


class ChainMlpLimit(PredictedLaw):
    name, family, exactness = "chain-mlp-limit", "conv", "exact"
    summary = "the coherent law with the MLP limit's derived constants (a = 1: s and eta* in units of a)"
    leaves_out = "everything that makes a conv chain differ from an MLP; the absolute scale"
    source = "amutheory.symbolic.chain.conv"
    legacy = ("mlp-limit", "coherent")
    default_candidate = False
    not_default_because = "it predicts s in units of a (no absolute scale) and is exact only for the MLP limit"

    def _covers(self, spec):
        return Coverage(True, "any conv chain (in units of a)")

    def cost(self, spec, depths, **_):
        return Cost(costs.FINITE_SUM_SECONDS, "closed-form", "a lambdified closed form")


LAWS = (ChainSpectral(), ChainOperator(), ChainKernel(), ChainCoherent(), ChainMlpLimit())
