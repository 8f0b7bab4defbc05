"""Exact infinite-width law of the *linear* circular conv chain, derived mode by mode.

A linear convolution with circular padding is diagonal in the spatial Fourier basis: mode ``q``
of every channel vector sees the ``n x n`` matrix ``W_hat(q) = sum_t e^{i w_q . t} W_t``, and
the zero mode sees ``M = W_hat(0) = sum_t W_t``.  For the probe (``mean_b <r_b, f(x_b)>`` after
global average pooling) the output gradient is the same at every position, so every backward
signal lives in the zero mode, ``g_j(b) = M_{j+1}^T ... M_L^T V^T r_b / (B P)``, and the SGD
update of every tap of layer ``j`` is the same rank-``B`` matrix.  Its first-order effect on
``h_l`` at mode ``q`` is

    dh_l(b', q) = sum_{j <= l} sum_b sigma_j(b, b', q) F_lj(q) F_lj(0)^T u_b,

``F_lj(q) = W_hat_l(q) ... W_hat_{j+1}(q)``, ``u_b`` the backward signal at ``l`` and
``sigma_j = D_q <x_hat_{j-1}(b, 0), x_hat_{j-1}(b', q)>`` the Gram of the layer's inputs
(``D_q = sum_t e^{i w_q . t}``, the Dirichlet kernel of the taps).  At infinite width three
facts, each exact in expectation or in the planar (leading) order, give every term:

* ``E[M^T W_hat(q)] = rho_q I`` per layer, ``rho_q = c D_q / k^d``, so the input Gram carries
  ``rho_q^(j-1)`` into layer ``j`` (``sigma_j = D_q (n / C_0) rho_q^(j-1) Gamma`` for ``j >= 2``,
  ``D_q Gamma`` for ``j = 1``: the weight ``epsilon = C_0 / n`` of the first layer);
* ``E[R_0 R_q^*] = rho_q^(j'-j) I`` for the layers between two updated layers ``j < j'``;
* ``f_m(q) = tau(P_0 P_q^* P_q P_0^T)`` over ``m`` layers obeys ``f_m = f_(m-1) + r^m``,
  ``f_0 = 1``, ``r = rho_q^2`` (two planar Wick pairings per layer).

So the pair ``(j, j')`` with ``max(j, j') = m`` contributes ``w_j w_j' r^(m-1) f_(l-m)(r)`` and

    s_l = sum_q weight_q Q_l(r_q),     Q_l(r) = sum_m P(m) r^(m-1) f_(l-m)(r),

``P(m)`` the Gram weights of the pairs with that maximum.  The zero mode (``r = 1``) is the
pair kernel ``a + b (l - m)`` of :mod:`amutheory.symbolic.primitives.expansion` with ``a = b = weight_0``:
it alone grows like ``l^3``, so the exponent is -3/2.  Every other mode has ``r < 1`` and
saturates at ``Q_oo(r)``: together they are the local part ``e``, reached exponentially
(``r_1^l``, ``r_1 = (D_1 / k^d)^2``), which is why a cubic fitted on shallow nets overshoots
deep ones.  The input statistics enter only through ``E|Gamma(b, b', q)|^2`` (Gaussian inputs:
exact, :func:`mode_weights`).  Everything here is the mean over seeds at infinite width; a
finite width adds terms of relative order ``l / n`` (not derived here).
"""

from __future__ import annotations

import functools

import mpmath
import numpy as np
import sympy as sp

from amutheory.constants import Constant
from amutheory.spec import ArchSpec
from amutheory.symbolic.cache import compile_lambda, derivation, lambda_source
from amutheory.symbolic.primitives.expansion import layer_moment_core, pairs_with_max
from amutheory.symbolic.primitives.symbols import L, a, b, e, epsilon, l, m

r = sp.Symbol("r", nonnegative=True)
"""``rho_q^2``: the per-layer decay of a mode's coupling to the zero mode."""
i = sp.Symbol("i", integer=True, nonnegative=True)

NEAR_ONE = 1e-2
NEAR_ZERO = 1e-3
"""Modes with ``|1 - r| < NEAR_ONE`` (other than ``r = 1`` itself) or ``r < NEAR_ZERO`` are
evaluated in 50-digit arithmetic: the closed forms divide by ``(1 - r)^4`` and by ``r``."""


def backward_moment(rate=r) -> sp.Expr:
    """``f_i(r)``, solved from the recursion ``f_i = f_(i-1) + r^i``, ``f_0 = 1`` (``rsolve``):
    ``(1 - r^(i+1)) / (1 - r)``, and ``i + 1`` at ``r = 1`` (Marchenko-Pastur ``m + 1``)."""
    f = sp.Function("f")
    return sp.simplify(sp.rsolve(f(i) - f(i - 1) - rate**i, f(i), {f(0): 1}))


def _branch(expr: sp.Expr, convergent: bool = False) -> sp.Expr:
    """One branch of a sum SymPy split into cases: the ``otherwise`` branch (``r != 1``; the zero
    mode is summed apart) or, with ``convergent``, the ``r < 1`` branch of an infinite sum."""
    expr = sp.piecewise_fold(expr)
    while isinstance(expr, sp.Piecewise):
        expr = next(piece for piece, cond in expr.args if (cond != True) == convergent)  # noqa: E712
    return expr


def _mode_sum(rate) -> sp.Expr:
    fb = backward_moment(rate)
    first = epsilon**2 * fb.subs(i, l - 1)
    rest = sp.summation(sp.expand(pairs_with_max(m) * rate ** (m - 1) * fb.subs(i, l - m)), (m, 2, l))
    return sp.expand(_branch(first + rest))


@derivation
def mode_layer_moment(zero_mode: bool = False) -> sp.Expr:
    """``Q_l(r) = sum_{m<=l} P(m) r^(m-1) f_(l-m)(r)``, summed symbolically: the ``r != 1``
    closed form, or (``zero_mode=True``) the ``r = 1`` one, a cubic in ``l``."""
    return _mode_sum(sp.Integer(1)) if zero_mode else sp.factor(_mode_sum(r))


@derivation
def mode_depth_sum(zero_mode: bool = False) -> sp.Expr:
    """``sum_{l=1}^{L} Q_l(r)`` in closed form (``L s_bar`` of one mode of unit weight)."""
    q = _mode_sum(sp.Integer(1) if zero_mode else r)
    total = _branch(sp.summation(sp.expand(q), (l, 1, L)))
    return sp.expand(total) if zero_mode else sp.factor(total)


@derivation
def saturated_mode_moment() -> sp.Expr:
    """``Q_oo(r) = lim_{l -> oo} Q_l(r)`` for ``0 <= r < 1``: ``sum_m P(m) r^(m-1) / (1 - r)``."""
    total = _branch(sp.summation(sp.expand(pairs_with_max(m) * r ** (m - 1)), (m, 2, sp.oo)), convergent=True)
    return sp.factor((epsilon**2 + total) / (1 - r))


def zero_mode_is_pair_kernel() -> bool:
    """``Q_l(1) == sum_{j, j' <= l} (a + b (l - max))`` with ``a = b = 1`` (the conv law's core)."""
    return sp.simplify(mode_layer_moment(True) - layer_moment_core().subs({a: 1, b: 1})) == 0


# --------------------------------------------------------------------------- numbers of a spec
def check_spectral_spec(spec: ArchSpec) -> None:
    """The law is derived for linear, circular-padding conv chains at the critical ``c = 1``."""
    from amutheory.symbolic.chain.operator_law import check_linear_chain

    check_linear_chain(spec, "spectral law", " (modes do not mix)")
    if spec.padding != "circular":
        raise ValueError(f"padding: the spectral law needs circular padding (a Fourier-diagonal conv), "
                         f"got {spec.padding!r}")


def spectral_applies(spec: ArchSpec) -> bool:
    """Whether the spectral law is derived for ``spec`` (:func:`check_spectral_spec` passes)."""
    from amutheory.symbolic.chain.operator_law import passes

    return passes(check_spectral_spec, spec)


def dirichlet(spec: ArchSpec) -> np.ndarray:
    """``D_q = sum_t e^{i w_q . t}`` over the taps, for every mode ``q`` of the ``N^d`` grid
    (real: the taps are symmetric).  Mode 0 first."""
    omega = 2 * np.pi * np.arange(spec.spatial) / spec.spatial
    taps = np.arange(spec.kernel) - spec.kernel // 2
    d1 = np.cos(np.outer(omega, taps)).sum(axis=1)
    d = d1
    for _ in range(spec.dim - 1):
        d = np.multiply.outer(d, d1)
    return d.ravel()


def input_gram_moments(spec: ArchSpec, input_var: float = 1.0) -> np.ndarray:
    """``sum_{b, b'} E|Gamma(b, b', q)|^2`` per mode (order of :func:`dirichlet`), ``Gamma(b, b', q) =
    x_hat(b, 0)^T x_hat(b', q)`` the raw inputs' cross-mode Gram: for Gaussian inputs of variance
    ``s^2``, ``s^4 P^2 C_0 (B (C_0 + 2) + B (B - 1))`` at ``q = 0`` (a chi-square fourth moment on the
    diagonal) and ``s^4 P^2 C_0 B^2`` elsewhere (independent modes)."""
    B, C0, P = spec.batch, spec.input_channels, spec.spatial**spec.dim
    gram = np.full(P, input_var**2 * P**2 * C0 * B**2, dtype=float)
    gram[0] = input_var**2 * P**2 * C0 * (B * (C0 + 2) + B * (B - 1))
    return gram


def mode_weights(spec: ArchSpec, input_var: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """``(r_q, weight_q)`` for every mode with a non-zero weight.

    ``weight_q = K D_q^2 sum_{b, b'} E|Gamma(b, b', q)|^2`` (:func:`input_gram_moments`) with ``K =
    outputs n^2 v_r / (B^3 P^4 C_0^2)`` (``P = N^d`` positions, ``v_r`` the head variance)."""
    check_spectral_spec(spec)
    d = dirichlet(spec)
    rho = d / spec.kernel**spec.dim
    B, C0, P, n = spec.batch, spec.input_channels, spec.spatial**spec.dim, spec.width
    gram = input_gram_moments(spec, input_var)
    K = spec.outputs * n**2 * spec.readout_variance / (B**3 * P**4 * C0**2)
    weight = K * d**2 * gram
    keep = weight > 0
    return rho[keep] ** 2, weight[keep]


@derivation
def _predictor_sources() -> dict:
    """The printed sources of :func:`_predictors` (:func:`amutheory.symbolic.cache.lambda_source`), kept
    as a derivation: printing the closed forms takes longer than deriving them is read back."""
    exprs = {"layer": (l, mode_layer_moment(False), mode_layer_moment(True)),
             "total": (L, mode_depth_sum(False), mode_depth_sum(True)),
             "grad": (L, sp.diff(mode_depth_sum(False), L), sp.diff(mode_depth_sum(True), L))}
    return {name: (lambda_source((var, r, epsilon), generic, "numpy"), lambda_source((var, epsilon), zero, "numpy"),
                   lambda_source((var, r, epsilon), generic, "mpmath"))
            for name, (var, generic, zero) in exprs.items()}


@functools.lru_cache(maxsize=None)
def _predictors() -> dict:
    """Lambdified forms, by name: ``layer`` (``Q_l``), ``total`` (``sum_l Q_l``) and ``grad``
    (its ``d/dL``), each as ``(generic r != 1 in numpy, zero mode in numpy, generic in mpmath)``."""
    return {name: (compile_lambda(generic, "numpy"), compile_lambda(zero, "numpy"), compile_lambda(mp, "mpmath"))
            for name, (generic, zero, mp) in _predictor_sources().items()}


def _sum_modes(depths, rates, weights, eps, fns, continuous: bool = False) -> np.ndarray:
    """``sum_q weight_q fn(depth, r_q)``, the zero mode by its own form and modes near ``r = 1``
    or ``r = 0`` in 50-digit arithmetic (``continuous``: ``depths`` need not be integers)."""
    fn, fn_zero, fn_mp = fns
    depths = np.asarray(depths, dtype=float)
    cast = (lambda x: mpmath.mpf(float(x))) if continuous else (lambda x: int(x))  # noqa: E731
    out = np.zeros_like(depths)
    for rate, w in zip(rates, weights):
        if rate == 1.0:
            out += w * fn_zero(depths, eps)
        elif abs(1.0 - rate) < NEAR_ONE or rate < NEAR_ZERO:
            with mpmath.workdps(50):
                out += w * np.array([float(fn_mp(cast(x), mpmath.mpf(rate), mpmath.mpf(eps))) for x in depths])
        else:
            out += w * fn(depths, rate, eps)
    return out


#: the input channels ``C_0`` and the width ``n`` of :func:`epsilon_expression`
C_0, n_width = sp.symbols("C_0 n", positive=True, integer=True)


def epsilon_expression() -> sp.Expr:
    """``epsilon = C_0 / n``: the first layer's Gram weight against a hidden layer's (module
    docstring)."""
    return C_0 / n_width


def _epsilon(spec: ArchSpec) -> float:
    return float(epsilon_expression().subs({C_0: spec.input_channels, n_width: spec.width}))


def spectral_layer_moments(spec: ArchSpec, layers, input_var: float = 1.0) -> np.ndarray:
    """``E[s_l]`` at infinite width for ``layers`` (any ``l >= 1``; independent of the net's depth)."""
    rates, weights = mode_weights(spec, input_var)
    return _sum_modes(layers, rates, weights, _epsilon(spec), _predictors()["layer"])


def spectral_s_bar(spec: ArchSpec, depths, input_var: float = 1.0) -> np.ndarray:
    """``E[s_bar(L)] = (1/L) sum_{l<=L} E[s_l]`` at infinite width, from the closed depth sums."""
    rates, weights = mode_weights(spec, input_var)
    depths = np.asarray(depths, dtype=float)
    return _sum_modes(depths, rates, weights, _epsilon(spec), _predictors()["total"]) / depths


def spectral_slope(spec: ArchSpec, depths, input_var: float = 1.0) -> np.ndarray:
    """Local slope ``d ln eta*/d ln L = -(1/2) (L S'(L) / S(L) - 1)`` of the mean, ``S = L s_bar``
    (``S'`` from ``sp.diff`` of the closed depth sums)."""
    rates, weights = mode_weights(spec, input_var)
    fns = _predictors()
    depths = np.asarray(depths, dtype=float)
    eps = _epsilon(spec)
    total = _sum_modes(depths, rates, weights, eps, fns["total"])
    grad = _sum_modes(depths, rates, weights, eps, fns["grad"], continuous=True)
    return -0.5 * (depths * grad / total - 1.0)


@derivation
def _saturated_source() -> str:
    """The printed source of :func:`_saturated_predictor` (kept as a derivation)."""
    return lambda_source((r, epsilon), saturated_mode_moment(), "numpy")


@functools.lru_cache(maxsize=None)
def _saturated_predictor():
    """``Q_oo(r, epsilon)`` lambdified (:func:`saturated_mode_moment`)."""
    return compile_lambda(_saturated_source(), "numpy")


def spectral_constants(spec: ArchSpec, input_var: float = 1.0) -> dict[str, Constant]:
    """The conv law's ``a, b, e, epsilon`` as the deep-net limit of the spectral law (exact):
    ``a = b = weight_0`` (the zero mode) and ``e = sum_{q != 0} weight_q Q_oo(r_q)`` (the saturated
    modes), plus the slowest decay ``r_1`` (how fast ``e(l)`` reaches ``e``) and the mode count."""
    rates, weights = mode_weights(spec, input_var)
    eps = _epsilon(spec)
    sat = _saturated_predictor()
    zero = rates == 1.0
    w0 = float(weights[zero].sum())
    e_inf = float(sum(w * sat(x, eps) for x, w in zip(rates[~zero], weights[~zero])))
    r1 = float(rates[~zero].max()) if np.any(~zero) else 0.0
    note = "spectral law of the linear circular chain (amutheory.symbolic.chain.spectral), infinite width"
    return {
        "a": Constant("a", w0, "exact", note=note + ": zero-mode weight"),
        "b": Constant("b", w0, "exact", note=note + ": b = a, the zero mode's Marchenko-Pastur growth"),
        "e": Constant("e", e_inf, "exact", note=note + ": saturated non-zero modes, l -> oo"),
        "epsilon": Constant("epsilon", eps, "exact", expr=sp.sstr(epsilon_expression()),
                            note="the input layer's Gram weight"),
        "gamma": Constant("gamma", 0.0, "convention", note="infinite width"),
        "r_1": Constant("r_1", r1, "exact", note="slowest non-zero mode: e(l) - e ~ r_1^l"),
        "modes": Constant("modes", float(len(rates)), "exact", note="modes with a non-zero weight"),
    }


def brute_force_spectral_layer(spec: ArchSpec, layer: int, input_var: float = 1.0) -> float:
    """``E[s_l]`` by the un-summed triple sum over modes, pairs ``(j, j')`` and backward layers
    (the check of the symbolic sums)."""
    rates, weights = mode_weights(spec, input_var)
    eps = _epsilon(spec)
    w = lambda x: eps if x == 1 else 1.0  # noqa: E731
    total = 0.0
    for rate, wt in zip(rates, weights):
        rho2 = float(rate)
        for j1 in range(1, layer + 1):
            for j2 in range(1, layer + 1):
                top = max(j1, j2)
                fb = sum(rho2**k for k in range(layer - top + 1))
                total += wt * w(j1) * w(j2) * rho2 ** (top - 1) * fb
    return total
