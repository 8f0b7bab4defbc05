"""The conv-chain family: the depth law of homogeneous conv nets (circular or zero padding).

``conv_law(spec)`` assembles the :class:`~amutheory.symbolic.primitives.law.ScalingLaw` from the derived
expansion; ``derived_constants(spec)`` gives the constants that have a derivation:

* ``epsilon`` (exact): the input layer's patch Gram relative to a hidden layer's,
  ``epsilon = c_in E[x_0^2] / (n E[phi(h)^2])`` (the ``k^d`` of both patches cancels);
* ``v`` (exact for linear/ReLU, quadrature otherwise): ``b / a`` in the MLP limit
  (k = 1, N = 1, B = 1, n -> oo), ``v = 1 + v_D`` -- 1 for linear, 2 for ReLU at c = 2;
* ``chi`` and ``c``: the backward multiplier at the init constant, and the constant itself;
* ``kappa_fwd``: per-layer fourth-moment excess of the forward pass (finite-width reference).

Each is a SymPy expression in the activation's Gaussian moments at the first layer's pre-activation
(:func:`derived_expressions`); ``derived_constants`` evaluates it and carries its ``sstr`` as the
constant's ``expr``, so the formula a user reads is the one that made the number.

``a``, ``b``, ``e`` and ``gamma`` of a real conv chain (weight sharing, batch cross terms and
spatial mixing move them off the MLP limit) are calibrated: :mod:`amutheory.calibrate`.
"""

from __future__ import annotations

import functools

import sympy as sp

from amutheory.activations import get_activation
from amutheory.constants import Constant
from amutheory.spec import ArchSpec
from amutheory.symbolic.primitives.expansion import layer_moment, mean_moment
from amutheory.symbolic.primitives.law import ScalingLaw
from amutheory.symbolic.primitives.symbols import a, b, e, epsilon, lambda_, n

#: the input channels, the input variance and the He constant of :func:`derived_expressions`
c_in, input_var_sym, c_he = sp.symbols("c_in input_var c", positive=True)
#: the activation's Gaussian moments at the first layer's pre-activation ``h_1 ~ N(0, c input_var)``
E_phi2, E_phi4 = sp.Symbol("E[phi^2]", positive=True), sp.Symbol("E[phi^4]", positive=True)
E_dphi2, E_dphi4 = sp.Symbol("E[phi'^2]", positive=True), sp.Symbol("E[phi'^4]", positive=True)

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


@functools.lru_cache(maxsize=None)
def derived_expressions() -> dict[str, sp.Expr]:
    """The derived constants of a conv chain as SymPy expressions in ``c_in``, ``input_var``, ``n``,
    ``c`` and the activation's Gaussian moments at the first layer's pre-activation (``E[phi^2]``,
    ``E[phi^4]``, ``E[phi'^2]``, ``E[phi'^4]``; module docstring):

    * ``epsilon = c_in input_var / (n E[phi^2])``: the input layer's patch Gram over a hidden layer's;
    * ``chi = c E[phi'^2]``: the backward multiplier (1 = critical);
    * ``v_mlp = 1 + v_D``, ``v_D = c^2 E[phi'^4] / (c E[phi'^2])^2 - 1`` the normalised variance of
      the diagonal factor ``c phi'(h)^2`` (:meth:`amutheory.activations.Activation.spectral_variance`);
    * ``kappa_fwd = E[phi^4] / E[phi^2]^2 - 1`` (:meth:`~amutheory.activations.Activation.forward_kurtosis_excess`)."""
    v_d = c_he**2 * E_dphi4 / (c_he * E_dphi2) ** 2 - 1
    return {"epsilon": c_in * input_var_sym / (n * E_phi2), "chi": c_he * E_dphi2, "v_mlp": 1 + v_d,
            "kappa_fwd": E_phi4 / E_phi2**2 - 1}


@functools.lru_cache(maxsize=None)
def _derived_fns() -> dict:
    args = (c_in, input_var_sym, n, c_he, E_phi2, E_phi4, E_dphi2, E_dphi4)
    return {k: sp.lambdify(args, v, "math") for k, v in derived_expressions().items()}


def derived_constants(spec: ArchSpec, input_var: float = 1.0) -> dict[str, Constant]:
    """The constants of ``spec`` that the theory derives: :func:`derived_expressions` evaluated at
    ``spec`` and the activation's moments at ``h_1 ~ N(0, c input_var)``, each with its expression
    (``expr``) and, from the moments, its source and error."""
    if not isinstance(spec, ArchSpec):
        raise TypeError(f"spec must be an ArchSpec, got {type(spec).__name__}")
    act = get_activation(spec.activation)
    c = spec.c
    q1 = c * input_var  # variance of h_1: fan-in c / fan_in times input variance
    phi2 = act.moment("phi2", q1)
    src = "exact" if phi2.source == "exact" else "quadrature"
    moments = [act.moment(kind, q1).value for kind in ("phi2", "phi4", "dphi2", "dphi4")]
    values = {k: float(fn(spec.input_channels, input_var, spec.width, c, *moments))
              for k, fn in _derived_fns().items()}
    exprs = {k: sp.sstr(v) for k, v in derived_expressions().items()}
    eps = values["epsilon"]
    vd, kf = act.spectral_variance(c, q1), act.forward_kurtosis_excess(q1)  # their errors
    return {
        "c": Constant("c", c, "convention" if spec.init_c is not None else src,
                      note="He fan-in constant Var[W] = c / fan_in"),
        "epsilon": Constant("epsilon", eps, src, eps * phi2.error / phi2.value, expr=exprs["epsilon"]),
        "chi": Constant("chi", values["chi"], src, expr=exprs["chi"], note="1 = critical"),
        "v_mlp": Constant("v_mlp", values["v_mlp"], vd.source, vd.error, expr=exprs["v_mlp"],
                          note="b/a in the MLP limit (k=1, N=1, B=1, n -> oo)"),
        "kappa_fwd": Constant("kappa_fwd", values["kappa_fwd"], kf.source, kf.error, expr=exprs["kappa_fwd"],
                              note="forward part of the finite-width excess gamma"),
    }
