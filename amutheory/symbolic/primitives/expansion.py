"""Jacobian-product expansion of the one-step update of a homogeneous chain.

One SGD step changes every pre-activation to first order by (docs/theory.md section 4)

    J_theta h_l grad = sum_{j <= l} J_{l<-j} K_{j-1} J_{l<-j}^T g_l,

with ``J_{l<-j} = dh_l/dh_j``, ``g_l = dloss/dh_l`` and ``K_{j-1}`` the Gram matrix of the
inputs of layer ``j`` (for a convolution: of its patches).  Squaring gives a double sum over
pairs ``(j, jp)`` of updated layers.  Write ``m = max(j, jp)`` and ``J_{l<-min} = P R`` with
``P = J_{l<-m}``.  Under the mean-field (free-probability) treatment of wide random layers,

    E[g^T J_j K J_j^T J_jp K J_jp^T g] / norm = w_j w_jp tau(R R^T) tau((P^T P)^2)
                                             = w_j w_jp (a + b (l - m)),

because ``tau(R R^T) = 1`` at criticality and the normalised variance of ``P^T P`` grows by
``v`` per layer of ``P`` (Marchenko-Pastur 1 per weight matrix plus ``v_D`` per activation
derivative, :meth:`amutheory.activations.Activation.spectral_variance`).  In the MLP limit
(k = 1, one position, one sample) ``a = 1``, ``b = v``; convolutions, batches and positions
move ``a`` and ``b`` and add a local part ``e`` that does not accumulate.  The Gram weights are
``w_1 = epsilon`` (the input layer's Gram relative to a hidden layer's) and ``w_j = 1`` else.
A finite width multiplies layer ``l`` by ``lambda^l`` with ``lambda = 1 + gamma / n``: every
layer a signal passes twice adds a fourth-moment excess ``gamma / n``.

The functions below *derive* ``s_l`` and ``s_bar(L)`` from this pair kernel by symbolic
summation (SymPy), and evaluate the same double sum by brute force for the checks.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from amutheory.symbolic.cache import derivation
from amutheory.symbolic.primitives.symbols import L, a, b, e, epsilon, j, jp, kappa, l, lambda_, m, p, sigma2_0


def gram_weight(index) -> sp.Expr:
    """``w_j``: ``epsilon`` for the input layer ``j = 1``, 1 for hidden layers."""
    return sp.Piecewise((epsilon, sp.Eq(index, 1)), (sp.Integer(1), True))


def pair_kernel(layer=l, first=j, second=jp) -> sp.Expr:
    """``kappa(l; j, jp) = w_j w_jp (a + b (l - max(j, jp)))`` (infinite width)."""
    return gram_weight(first) * gram_weight(second) * (a + b * (layer - sp.Max(first, second)))


def pairs_with_max(index=m) -> sp.Expr:
    """``sum of w_j w_jp over pairs with max(j, jp) = m``: ``W(m)^2 - W(m-1)^2``,
    ``W(m) = sum_{j <= m} w_j = epsilon + m - 1`` (for m >= 2; ``epsilon^2`` at m = 1)."""
    cumulative = lambda k: epsilon + k - 1  # noqa: E731 - W(k) for k >= 1
    return sp.expand(cumulative(index) ** 2 - cumulative(index - 1) ** 2)


@derivation
def layer_moment_core() -> sp.Expr:
    """``sum_{j, jp <= l} kappa(l; j, jp)`` in closed form, derived by summing over ``m``.

    With ``epsilon = 0`` this is ``a (l-1)^2 + b T_{l-1}``, ``T_k = k (k-1) (2k-1) / 6``."""
    first = epsilon**2 * (a + b * (l - 1))
    rest = sp.summation(sp.expand(pairs_with_max(m) * (a + b * (l - m))), (m, 2, l))
    return sp.expand(first + rest)


@functools.lru_cache(maxsize=None)
def layer_moment(finite_width: bool = False) -> sp.Expr:
    """``s_l`` (per unit of the overall scale): ``lambda^l (e + core(l))``; ``lambda = 1``
    at infinite width."""
    core = e + layer_moment_core()
    return lambda_**l * core if finite_width else core


def layer_moment_parts() -> dict[str, sp.Expr]:
    """``s_l`` split into its coherent (``a``, the ``l^2`` part), accumulated-fluctuation
    (``b``, the ``l^3`` part) and local (``e``) parts, at infinite width."""
    s = layer_moment(False)
    return {"coherent": sp.expand(a * sp.diff(s, a)), "fluctuation": sp.expand(b * sp.diff(s, b)),
            "local": sp.expand(e * sp.diff(s, e))}


@functools.lru_cache(maxsize=None)
def mean_moment(finite_width: bool = False) -> sp.Expr:
    """``s_bar(L) = (1/L) sum_{l=1}^{L} s_l``, derived by symbolic summation.

    At infinite width a cubic in ``L``; at finite width a closed form in ``lambda^L``
    (the ``lambda != 1`` branch of SymPy's geometric-polynomial sum)."""
    s = sp.expand(layer_moment(finite_width))
    total = sp.summation(s, (l, 1, L))
    if finite_width and isinstance(total, sp.Piecewise):
        total = next(expr for expr, cond in total.args if cond is sp.true or cond == True)  # noqa: E712
    return sp.expand(total / L) if not finite_width else total / L


def brute_force_layer_moment(layer: int, values: dict, finite_width: bool = False) -> float:
    """The double sum ``sum_{j, jp <= l} kappa`` (+ local part) evaluated term by term."""
    av, bv, ev, epsv = (float(values[k]) for k in ("a", "b", "e", "epsilon"))
    w = lambda i: epsv if i == 1 else 1.0  # noqa: E731
    total = ev
    for i in range(1, layer + 1):
        for k in range(1, layer + 1):
            total += w(i) * w(k) * (av + bv * (layer - max(i, k)))
    if finite_width:
        total *= float(values["lambda"]) ** layer
    return total


def brute_force_mean_moment(depth: int, values: dict, finite_width: bool = False) -> float:
    """``(1/L) sum_l`` of :func:`brute_force_layer_moment`."""
    return float(np.mean([brute_force_layer_moment(i, values, finite_width) for i in range(1, depth + 1)]))


@functools.lru_cache(maxsize=None)
def finite_width_relative_correction() -> sp.Expr:
    """First order of the finite-width factor: ``s_bar_fw / s_bar = 1 + (lambda - 1) R(L) + ...``
    with ``R(L) = sum_l l s_l / sum_l s_l`` (derived: d/d lambda at lambda = 1).  Its leading
    term is ``4 L / 5``, so the correction is small only while ``gamma L / n << 1``."""
    s = layer_moment(False)
    return sp.cancel(sp.summation(sp.expand(l * s), (l, 1, L)) / sp.summation(s, (l, 1, L)))


def log_spread(power=p) -> sp.Expr:
    """``sigma^2(L) = Var[ln s_bar] = sigma2_0 + kappa L^p``, the seed spread of the lognormal model
    (docs/theory.md section 8): ``p = 1`` for chains, ``p = -1`` for forward-stable residual nets
    (:data:`amutheory.symbolic.primitives.symbols` ``p``); ``power`` puts a number in for ``p``."""
    return sigma2_0 + kappa * L ** sp.nsimplify(power)


def lognormal_mean_factor(power=p) -> sp.Expr:
    """``E[s_bar] / typical(s_bar) = exp(sigma^2(L) / 2)`` for lognormal seeds with the spread
    ``sigma^2(L)`` of :func:`log_spread`."""
    return sp.exp(log_spread(power) / 2)


def lognormal_slope_shift() -> sp.Expr:
    """What the factor adds to ``d ln eta*/d ln L``: ``-(L/2) d ln(factor)/dL`` = ``-p kappa L^p/4``
    (``-kappa L/4`` for chains)."""
    return sp.simplify(sp.expand(-L / 2 * sp.diff(sp.log(lognormal_mean_factor()), L)))
