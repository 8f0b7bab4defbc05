"""The laws of conv chains: spectral and operator (exact, linear), kernel (Monte Carlo, ReLU),
the closed-form coherent law with calibrated constants, and the MLP-limit constants."""

from __future__ import annotations

import numpy as np

from amutheory.calibrate import Calibration
from amutheory.checks import DEFAULT_CALIBRATION_DEPTHS
import amutheory.laws.costs as costs
from amutheory.laws.chain_finite import ChainFiniteWidth, ChainKernelFinite, ChainKernelFiniteBackward
from amutheory.laws.blocks import held_in_notes, input_var_constant, target_constant
from amutheory.laws.chain_values import (chain_calibration, kernel_mean, law_values, mlp_limit_constants,
                                         operator_mean, predicted_layer_profile, spectral_mean)
from amutheory.laws.contract import Coverage, Cost, Law, LawValues
from amutheory.spec import ProbeProtocol


class _ChainExact(Law):
    """An exact law of the mean of a conv chain: its values from its symbolic module (:attr:`mean_of`)."""

    family = "conv"
    mean_of = None

    def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None, C=1.0):
        coverage = self.covers(spec)
        if not coverage:
            raise ValueError(coverage.reason)
        depths = list(depths)
        s_bar, slope, const, label, note = self._mean(spec, depths, protocol.input_var, progress)
        const = dict(const)
        const["input_var"] = input_var_constant(protocol.input_var)
        const["C"] = target_constant(C)
        s_bar = np.asarray(s_bar, float)
        s_l = {d: self.layer_moments(spec.with_(depth=d), const, protocol.input_var) for d in depths}
        return LawValues(self.name, depths, s_bar, self.standard_error(const, s_bar), const, self.exactness,
                         None if any(v is None for v in s_l.values()) else s_l, [note],
                         local_slope=np.asarray(slope, float), label=label)

    def _mean(self, spec, depths, input_var, progress):
        raise NotImplementedError

    def standard_error(self, constants, s_bar):
        return np.zeros_like(s_bar)

    def layer_moments(self, spec, constants, input_var):
        return None


class ChainSpectral(_ChainExact):
    name, exactness = "chain-spectral", "exact"
    summary = "linear circular conv chain: every Fourier mode propagated on its own, summed exactly"
    leaves_out = "finite-width terms of relative order l/n"
    source = "amutheory.symbolic.chain.spectral"

    def _mean(self, spec, depths, input_var, progress):
        return spectral_mean(spec, depths, input_var)

    def _covers(self, spec):
        from amutheory.symbolic.chain.spectral import check_spectral_spec

        check_spectral_spec(spec)
        return Coverage(True, "linear chain, circular padding, critical c = 1")

    def cost(self, spec, depths, **_):
        return Cost(costs.FINITE_SUM_SECONDS, "finite-sum", "a sum over the N^d Fourier modes per depth")

    def layer_moments(self, spec, constants, input_var):
        from amutheory.symbolic.chain.spectral import spectral_layer_moments

        return spectral_layer_moments(spec, np.arange(1, spec.depth + 1), input_var)


class ChainOperator(_ChainExact):
    name, exactness = "chain-operator", "exact"
    summary = "linear zero-padded conv chain: the pair operator over the positions, input average exact"
    leaves_out = "finite-width terms of relative order l/n"
    source = "amutheory.symbolic.chain.operator_law"

    def _mean(self, spec, depths, input_var, progress):
        return operator_mean(spec, depths, input_var)

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


class ChainKernel(_ChainExact):
    name, exactness = "chain-kernel", "monte-carlo"
    summary = "ReLU conv chain, either padding: exact given the input (orthant kernels), inputs averaged by Monte Carlo"
    leaves_out = "finite-width terms that grow with L/n and are large for ReLU"
    source = "amutheory.symbolic.chain.kernel_law"

    def _mean(self, spec, depths, input_var, progress):
        return kernel_mean(spec, depths, input_var, progress)
    default_candidate = False
    not_default_because = ("its left-out finite-width terms grow with L/n and are large for ReLU chains at the widths "
                           "the probe runs (measured by validate/studies/finite_width_mean.py, reported in "
                           "docs/findings/conv_chains.md); the default for ReLU chains is "
                           "chain-kernel-finite-backward (its forward kernels at width n and a backward factor; runs I "
                           "and Q of docs/findings/finite_width.md for circular padding, R2 for zero padding) up to "
                           "width 64 where its cost fits, else the calibrated law (run W); ask for this one with "
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

    def standard_error(self, constants, s_bar):
        rel = constants["s_bar_mc_rel_se"].value  # the worst over the depths asked: a bound at each
        return s_bar * rel


class _ChainClosedForm(Law):
    """The closed-form coherent law ``s_l = a l^2 + b(...) l^3 + e`` with constants from :meth:`_constants`."""

    family = "conv"

    def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None, statistic="mean",
                 C=1.0, calibration_depths=DEFAULT_CALIBRATION_DEPTHS, calibration_seeds=32):
        from amutheory.symbolic.chain.conv import conv_law, derived_constants

        coverage = self.covers(spec)
        if not coverage:
            raise ValueError(coverage.reason)
        depths = list(depths)
        calib, const, notes = self._constants(spec, depths, protocol, calibration, progress, statistic, C,
                                              calibration_depths, calibration_seeds)
        derived = derived_constants(spec, protocol.input_var)
        for k in ("c", "chi", "v_mlp", "kappa_fwd"):
            const.setdefault(k, derived[k])
        const["C"] = target_constant(C)
        s_bar, _, slope = law_values(spec, depths, const, C, "mean")
        s_l = {d: self.layer_moments(spec.with_(depth=d), const, protocol.input_var) for d in depths}
        label = conv_law(spec, finite_width=abs(const["gamma"].value) > 0).name
        values = LawValues(self.name, depths, np.asarray(s_bar, float), np.zeros(len(depths)), const,
                           self.exactness, None if any(v is None for v in s_l.values()) else s_l, notes,
                           local_slope=np.asarray(slope, float), label=label, calibration=calib)
        if calib is None:  # no spread model in the MLP limit: its typical value is its mean
            values.log_gap, values.log_gap_slope = np.zeros(len(depths)), np.zeros(len(depths))
        return values

    def layer_moments(self, spec, constants, input_var):
        return None


class ChainCoherent(_ChainClosedForm):
    name, exactness = "chain-coherent", "calibrated"
    summary = ("the closed-form coherent law s_l = a l^2 + b(...) l^3 + e with a, b, e, gamma calibrated on probe "
               "measurements at other depths (zero padding: circular constants times the exact boundary ratio)")
    leaves_out = "nothing at the calibration depths; its extrapolation error grows with the distance to them"
    source = "amutheory.symbolic.chain.conv"

    def _constants(self, spec, depths, protocol, calibration, progress, statistic, C, calibration_depths,
                   calibration_seeds):
        """The calibrated constants: ``calibration`` itself if a Calibration, else the fit on the
        Measurement ``calibration`` of circular-padding nets (measured here when ``None``)."""
        fitted = calibration if isinstance(calibration, Calibration) else "calibrate"
        measured = None if isinstance(calibration, Calibration) else calibration
        calib, notes = chain_calibration(spec, fitted, calibration_depths, calibration_seeds, statistic, protocol, C,
                                         progress, measured)
        return calib, dict(calib.constants), notes + held_in_notes(depths, calib.depths)

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
        return predicted_layer_profile(spec, constants)["total"]


class ChainMlpLimit(_ChainClosedForm):
    name, exactness = "chain-mlp-limit", "exact"
    summary = "the coherent law with the MLP limit's derived constants (a = 1: s and eta* in units of a)"
    leaves_out = "everything that makes a conv chain differ from an MLP; the absolute scale"
    source = "amutheory.symbolic.chain.conv"

    def _constants(self, spec, depths, protocol, calibration, progress, statistic, C, calibration_depths,
                   calibration_seeds):
        calib, notes = chain_calibration(spec, "mlp-limit", calibration_depths, calibration_seeds, statistic,
                                         protocol, C, progress, None)
        return None, mlp_limit_constants(spec, protocol.input_var), notes
    default_candidate = False
    not_default_because = "it predicts s in units of a (no absolute scale) and is exact only for the MLP limit"

    def _covers(self, spec):
        return Coverage(True, "any conv chain (in units of a)")

    def cost(self, spec, depths, **_):
        return Cost(costs.FINITE_SUM_SECONDS, "closed-form", "a lambdified closed form")


LAWS = (ChainFiniteWidth(), ChainSpectral(), ChainOperator(), ChainKernel(), ChainKernelFiniteBackward(), ChainKernelFinite(), ChainCoherent(),
        ChainMlpLimit())
