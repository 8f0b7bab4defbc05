"""The finite-width law of linear circular conv chains (``chain-finite-width``): every Fourier mode at
the net's own width ``n``, exact in the mean over seeds (:mod:`amutheory.symbolic.chain.finite_width_modes`);
its ``n -> oo`` limit is ``chain-spectral``."""

from __future__ import annotations

import numpy as np

from amutheory.constants import Constant
import amutheory.laws.costs as costs
from amutheory.laws.blocks import input_var_constant, target_constant
from amutheory.laws.contract import Coverage, Cost, Law, LawValues
from amutheory.spec import ProbeProtocol


def finite_width_mean(spec, depths, input_var) -> tuple:
    """``(s_bar, local slope, constants, name, note)`` of the finite-width law (the spectral law's
    constants kept, for the infinite-width reading, with the finite-width excess beside them)."""
    from amutheory.symbolic.chain.finite_width_modes import check_finite_width_modes_spec, finite_width_chain_s_bar
    from amutheory.symbolic.chain.spectral import spectral_constants, spectral_s_bar

    check_finite_width_modes_spec(spec)
    depths = [int(d) for d in depths]
    s_bar = finite_width_chain_s_bar(spec, depths, input_var)
    # the local slope d ln eta*/d ln L from the exact sums at the integer neighbours (central secant)
    S = lambda ds: np.asarray(ds, float) * finite_width_chain_s_bar(spec, ds, input_var)  # noqa: E731
    lo = [max(d - 1, 1) for d in depths]
    hi = [d + 1 for d in depths]
    dlnS = np.log(S(hi) / S(lo)) / np.log(np.asarray(hi, float) / np.asarray(lo, float))
    slope = -0.5 * (dlnS - 1.0)
    const = dict(spectral_constants(spec, input_var))
    excess = s_bar / spectral_s_bar(spec, depths, input_var)
    const["width_excess"] = Constant("width_excess", float(excess[-1]), "exact",
                                     note=f"E[s_bar] at width {spec.width} over its infinite-width value at "
                                          f"L = {depths[-1]}")
    note = (f"finite-width law of the linear circular chain at width {spec.width} (exact in the mean over seeds): "
            f"nothing fitted; infinite-width law x {', '.join(f'{x:.3f}' for x in excess)} at L = {depths}")
    return s_bar, slope, const, f"conv{spec.dim}d-linear-circular-finite-width", note


class ChainFiniteWidth(Law):
    """The exact law of the mean at width ``n`` (evaluated like :class:`amutheory.laws.chain.ChainSpectral`;
    kept apart from :mod:`amutheory.laws.chain`, which lists it first in its ``LAWS``)."""

    family = "conv"
    name, exactness = "chain-finite-width", "exact"
    summary = ("linear circular conv chain at its width n: every Fourier mode's Wick transfer maps (forward cross-mode "
               "Gram, backward pair moments) summed exactly (the n -> oo limit is chain-spectral)")
    leaves_out = "nothing in the mean over seeds (the typical value's seed-spread line is calibrated)"
    source = "amutheory.symbolic.chain.finite_width_modes"

    def evaluate(self, spec, depths, protocol=ProbeProtocol(), calibration=None, progress=None, C=1.0):
        coverage = self.covers(spec)
        if not coverage:
            raise ValueError(coverage.reason)
        depths = [int(d) for d in depths]
        s_bar, slope, const, label, note = finite_width_mean(spec, depths, protocol.input_var)
        const["input_var"] = input_var_constant(protocol.input_var)
        const["C"] = target_constant(C)
        s_l = {d: self.layer_moments(spec.with_(depth=d), const, protocol.input_var) for d in depths}
        return LawValues(self.name, depths, np.asarray(s_bar, float), np.zeros(len(depths)), const, self.exactness,
                         s_l, [note], local_slope=np.asarray(slope, float), label=label)

    def _covers(self, spec):
        from amutheory.symbolic.chain.finite_width_modes import check_finite_width_modes_spec

        check_finite_width_modes_spec(spec)
        return Coverage(True, "linear chain, circular padding, critical c = 1, any width")

    def cost(self, spec, depths, **_):
        return Cost(costs.FINITE_SUM_SECONDS, "finite-sum",
                    "3 x 3 and 2 x 2 transfer maps and convolutions up to the deepest depth, per Fourier mode")

    def layer_moments(self, spec, constants, input_var):
        from amutheory.symbolic.chain.finite_width_modes import finite_width_chain_layer_moments

        return finite_width_chain_layer_moments(spec, np.arange(1, spec.depth + 1), input_var)
