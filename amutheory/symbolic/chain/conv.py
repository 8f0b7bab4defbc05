"""The conv-chain family: the depth law of homogeneous conv nets (circular or zero padding).

``conv_law(spec)`` assembles the :class:`~amutheory.symbolic.primitives.law.ScalingLaw` from the derived
expansion; ``derived_constants(spec)`` gives the constants that have a derivation:

* ``epsilon`` (exact): the input layer's patch Gram relative to a hidden layer's,
  ``epsilon = c_in E[x_0^2] / (n E[phi(h)^2])`` (the ``k^d`` of both patches cancels);
* ``v`` (exact for linear/ReLU, quadrature otherwise): ``b / a`` in the MLP limit
  (k = 1, N = 1, B = 1, n -> oo), ``v = 1 + v_D`` -- 1 for linear, 2 for ReLU at c = 2;
* ``chi`` and ``c``: the backward multiplier at the init constant, and the constant itself;
* ``kappa_fwd``: per-layer fourth-moment excess of the forward pass (finite-width reference).

``a``, ``b``, ``e`` and ``gamma`` of a real conv chain (weight sharing, batch cross terms and
spatial mixing move them off the MLP limit) are calibrated: :mod:`amutheory.calibrate`.
"""

from __future__ import annotations

from amutheory.activations import get_activation
from amutheory.constants import Constant
from amutheory.spec import ArchSpec
from amutheory.symbolic.primitives.expansion import layer_moment, mean_moment
from amutheory.symbolic.primitives.law import ScalingLaw
from amutheory.symbolic.primitives.symbols import a, b, e, epsilon, lambda_

ASSUMPTIONS = [
    "homogeneous chain: every hidden layer has the same width, kernel and activation",
    "circular padding: every position is statistically identical",
    "one SGD step from the init, first order in eta (the probe of docs/theory.md section 3)",
    "mean-field pair kernel w_j w_j' (a + b (l - max(j, j'))): tau(R R^T) = 1 needs chi = c E[phi'^2] = 1",
    "infinite width: every layer's fourth-moment excess gamma/n -> 0 (else see finite_width)",
]
ZERO_PADDING_ASSUMPTIONS = [
    "zero padding: the law above is the N -> oo limit; at finite N it is multiplied by the exact "
    "infinite-width zero/circular ratio (linear chains: the operator law of "
    "amutheory.symbolic.chain.operator_law, input average exact; ReLU chains: the kernel law of "
    "amutheory.symbolic.chain.kernel_law, Monte Carlo over inputs, masks averaged independently of the "
    "weights); other activations: the position-local model of amutheory.symbolic.chain.boundary, which "
    "leaves out cross-position correlations",
    "zero padding regime: the boundary factor is constant-level only while L k^2 / N^2 << 1 (its "
    "deficit grows like k sqrt(L)/N, then like lambda_max^(2L), lambda_max = 1 - pi^2 (k^2-1)/(24 N^2)); "
    "at fixed N the decay in L is eventually exponential, not a power law",
]
FINITE_WIDTH_ASSUMPTIONS = [
    "finite width: layer l carries lambda^l, lambda = 1 + gamma/n; a power law in L only while "
    "gamma L / n << 1 (at fixed n the law turns exponential)",
]


def conv_law(spec: ArchSpec | None = None, finite_width: bool = False) -> ScalingLaw:
    """The derived law of a conv chain; ``spec`` only names it and adds its regime notes."""
    name = "conv"
    assumptions = list(ASSUMPTIONS)
    if spec is not None:
        if not isinstance(spec, ArchSpec):
            raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")
        name = f"conv{spec.dim}d-{spec.activation}-{spec.padding}"
        if spec.padding == "zero":
            assumptions = [a_ for a_ in assumptions if not a_.startswith("circular padding")]
            assumptions[1:1] = ZERO_PADDING_ASSUMPTIONS
        act = get_activation(spec.activation)
        chi = act.chi(spec.c)
        if abs(chi - 1.0) > 1e-9:
            assumptions.append(
                f"NOT critical: chi = c E[phi'^2] = {chi:.4f} != 1 at c = {spec.c:.4g}; the forward "
                f"variance drifts, so a fitted exponent mixes signal growth/collapse with depth scaling")
    if finite_width:
        assumptions = [a_ for a_ in assumptions if not a_.startswith("infinite width")] + FINITE_WIDTH_ASSUMPTIONS
        return ScalingLaw(mean_moment(True), (a, b, e, epsilon, lambda_), assumptions, name + "-finite-width",
                          layer_moment(True), high_precision=True)
    return ScalingLaw(mean_moment(False), (a, b, e, epsilon), assumptions, name, layer_moment(False))


def derived_constants(spec: ArchSpec, input_var: float = 1.0) -> dict[str, Constant]:
    """The constants of ``spec`` that the theory derives (see module docstring)."""
    if not isinstance(spec, ArchSpec):
        raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")
    act = get_activation(spec.activation)
    c = spec.c
    q1 = c * input_var  # variance of h_1: fan-in c / fan_in times input variance
    phi2 = act.moment("phi2", q1)
    eps = spec.input_channels * input_var / (spec.width * phi2.value)
    src = "exact" if phi2.source == "exact" else "quadrature"
    out = {
        "c": Constant("c", c, "convention" if spec.init_c is not None else src,
                      note="He fan-in constant Var[W] = c / fan_in"),
        "epsilon": Constant("epsilon", eps, src, eps * phi2.error / phi2.value,
                            expr="c_in * input_var / (n * E[phi(h_1)^2])"),
        "chi": Constant("chi", act.chi(c, q1), src, note="c E[phi'(h)^2]; 1 = critical"),
    }
    vd = act.spectral_variance(c, q1)
    out["v_mlp"] = Constant("v_mlp", 1.0 + vd.value, vd.source, vd.error,
                            expr="1 + c^2 E[phi'^4] / (c E[phi'^2])^2 - 1",
                            note="b/a in the MLP limit (k=1, N=1, B=1, n -> oo)")
    kf = act.forward_kurtosis_excess(q1)
    out["kappa_fwd"] = Constant("kappa_fwd", kf.value, kf.source, kf.error,
                                expr="E[phi^4]/E[phi^2]^2 - 1",
                                note="forward part of the finite-width excess gamma")
    return out
